//! GPU labels against the CPU's, bit for bit.
//!
//! Every test that needs a GPU is `#[ignore = "needs a CUDA device"]`: CI lists them as ignored.
//! Run them on a machine with a GPU with `cargo test --test gpu -- --ignored --test-threads=1`
//! (libnvrtc must be on LD_LIBRARY_PATH). The one test that runs everywhere checks that a missing
//! driver is an error, not a panic.

#![cfg(feature = "cuda")]

use clusterlab::cuda::{cuda_available, CudaLabeler, Numbering};
use clusterlab::generate::{percolation, spiral};
use clusterlab::{Algorithm, Boundary, Connectivity, Error, Labeler, SiteValue};
use ndarray::{Array2, ArrayView2};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNECTIVITIES: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

/// Raw labels from canonical ones: each cluster's smallest site index + 1.
fn raw_from_canonical(canon: &Array2<u32>, count: usize) -> Array2<u32> {
    let mut first = vec![u32::MAX; count + 1];
    for (i, &l) in canon.iter().enumerate() {
        if l != 0 && first[l as usize] == u32::MAX {
            first[l as usize] = i as u32 + 1;
        }
    }
    canon.mapv(|l| if l == 0 { 0 } else { first[l as usize] })
}

/// One lattice under every connectivity and boundary (or the ones given), checked on the GPU.
struct Checker {
    algorithm: Algorithm,
    /// Labelers by (connectivity, boundary, segments, raw numbering), created once.
    labelers: Vec<((Connectivity, Boundary, bool, bool), CudaLabeler)>,
    cases: usize,
}

impl Checker {
    fn new(algorithm: Algorithm) -> Checker {
        Checker {
            algorithm,
            labelers: Vec::new(),
            cases: 0,
        }
    }

    fn labeler(&mut self, c: Connectivity, b: Boundary, seg: bool, raw: bool) -> &mut CudaLabeler {
        let key = (c, b, seg, raw);
        if let Some(i) = self.labelers.iter().position(|(k, _)| *k == key) {
            return &mut self.labelers[i].1;
        }
        let l = CudaLabeler::new(0, c, b)
            .expect("a CUDA device")
            .segments(seg)
            .algorithm(self.algorithm)
            .numbering(if raw {
                Numbering::Raw
            } else {
                Numbering::Canonical
            });
        self.labelers.push((key, l));
        &mut self.labelers.last_mut().unwrap().1
    }

    /// Checks one lattice for one connectivity and boundary, canonical and raw.
    fn check_one<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        c: Connectivity,
        b: Boundary,
        seg: bool,
        what: &str,
    ) {
        let cpu = Labeler::new(c, b)
            .segments(seg)
            .algorithm(Algorithm::Strips)
            .label(lattice)
            .unwrap();
        let alg = self.algorithm;
        let dim = lattice.dim();
        let got = self
            .labeler(c, b, seg, false)
            .label_host(lattice)
            .unwrap_or_else(|e| panic!("{alg:?} {what} {dim:?} {c} {b} seg={seg}: {e}"));
        if got != cpu {
            let diff = got
                .array()
                .indexed_iter()
                .find(|(i, &v)| cpu.array()[*i] != v)
                .map(|(i, &v)| {
                    format!("first difference at {i:?}: gpu {v}, cpu {}", cpu.array()[i])
                });
            panic!(
                "{alg:?} canonical {what} {dim:?} {c} {b} seg={seg}: gpu count {} cpu count {}; {}",
                got.count(),
                cpu.count(),
                diff.unwrap_or_default()
            );
        }
        let mut raw = Array2::from_elem(dim, 0xdead_beefu32);
        let n = self
            .labeler(c, b, seg, true)
            .label_host_into(lattice, raw.view_mut())
            .unwrap();
        let want = raw_from_canonical(cpu.array(), cpu.count());
        assert_eq!(
            n,
            cpu.count(),
            "{alg:?} raw count {what} {dim:?} {c} {b} seg={seg}"
        );
        if raw != want {
            let diff = raw
                .indexed_iter()
                .find(|(i, &v)| want[*i] != v)
                .map(|(i, &v)| format!("at {i:?}: gpu {v}, want {}", want[i]));
            panic!(
                "{alg:?} raw {what} {dim:?} {c} {b} seg={seg}: {}",
                diff.unwrap_or_default()
            );
        }
        self.cases += 1;
    }

    /// Checks a lattice under both connectivities and all boundaries.
    fn check_all<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>, seg: bool, what: &str) {
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                self.check_one(lattice, c, b, seg, what);
            }
        }
    }
}

fn bernoulli(rng: &mut StdRng, h: usize, w: usize, p: f64) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |_| u8::from(rng.random::<f64>() < p))
}

/// Same-value segments: values from a small palette (so that neighbours often agree), 0 with
/// probability `p0`.
fn segments<T: SiteValue>(
    rng: &mut StdRng,
    h: usize,
    w: usize,
    p0: f64,
    palette: &[T],
    grain: usize,
) -> Array2<T> {
    let g = grain.max(1);
    let (bh, bw) = (h.div_ceil(g), w.div_ceil(g));
    let blocks: Vec<T> = (0..bh * bw)
        .map(|_| {
            if rng.random::<f64>() < p0 {
                T::ZERO
            } else {
                palette[rng.random_range(0..palette.len())]
            }
        })
        .collect();
    Array2::from_shape_fn((h, w), |(y, x)| blocks[(y / g) * bw + x / g])
}

const DENSITIES: [f64; 12] = [
    0.0, 0.05, 0.3, 0.407254, 0.5, 0.55, 0.592746, 0.62, 0.7, 0.8, 0.95, 1.0,
];

/// A random shape: mostly small, with widths around warp and block multiples.
fn shape(rng: &mut StdRng) -> (usize, usize) {
    const EDGES: [usize; 12] = [1, 2, 3, 31, 32, 33, 63, 64, 65, 127, 128, 129];
    match rng.random_range(0..10) {
        0..=3 => (rng.random_range(1..=40), rng.random_range(1..=40)),
        4..=5 => (
            rng.random_range(1..=80),
            EDGES[rng.random_range(0..EDGES.len())],
        ),
        6 => (
            EDGES[rng.random_range(0..EDGES.len())],
            rng.random_range(1..=80),
        ),
        7 => (1, rng.random_range(1..=3000)),
        8 => (rng.random_range(1..=3000), 1),
        _ => (rng.random_range(60..=300), rng.random_range(60..=300)),
    }
}

/// The whole battery for one algorithm: at least 5,000 lattice cases (each under one
/// connectivity and boundary, canonical and raw numbering).
fn battery(algorithm: Algorithm) {
    let start = Instant::now();
    let mut ck = Checker::new(algorithm);
    let mut rng = StdRng::seed_from_u64(0x5eed ^ algorithm as u64);

    // Tiny lattices exhaustively-ish: every shape up to 4×4 with random contents.
    for h in 1..=4 {
        for w in 1..=4 {
            for _ in 0..6 {
                let p = rng.random::<f64>();
                let lat = bernoulli(&mut rng, h, w, p);
                ck.check_all(lat.view(), false, "tiny");
                let seg = segments(&mut rng, h, w, 0.2, &[1u8, 2], 1);
                ck.check_all(seg.view(), true, "tiny segments");
            }
        }
    }
    // Random shapes and densities, one random connectivity and boundary each.
    for i in 0..3600 {
        let (h, w) = shape(&mut rng);
        let c = CONNECTIVITIES[rng.random_range(0..2)];
        let b = BOUNDARIES[rng.random_range(0..4)];
        match i % 6 {
            0..=2 => {
                let p = DENSITIES[rng.random_range(0..DENSITIES.len())];
                let lat = bernoulli(&mut rng, h, w, p);
                ck.check_one(lat.view(), c, b, false, "bernoulli");
            }
            3 => {
                let p = DENSITIES[rng.random_range(0..DENSITIES.len())];
                let grain = [2, 3, 4, 7][rng.random_range(0..4)];
                let lat = percolation(h, w, p, grain, rng.random());
                ck.check_one(lat.view(), c, b, false, "granular");
            }
            4 => {
                let p0 = [0.0, 0.1, 0.3][rng.random_range(0..3)];
                let grain = [1, 1, 2, 3][rng.random_range(0..4)];
                match rng.random_range(0..3) {
                    0 => {
                        let lat = segments(&mut rng, h, w, p0, &[1u8, 2, 255], grain);
                        ck.check_one(lat.view(), c, b, true, "segments u8");
                    }
                    1 => {
                        let lat = segments(&mut rng, h, w, p0, &[1u16, 300, 65535], grain);
                        ck.check_one(lat.view(), c, b, true, "segments u16");
                    }
                    _ => {
                        let lat = segments(&mut rng, h, w, p0, &[1u32, 70000, u32::MAX], grain);
                        ck.check_one(lat.view(), c, b, true, "segments u32");
                    }
                }
            }
            _ => {
                // Occupancy of u16/u32 lattices (any nonzero value is occupied).
                let p = DENSITIES[rng.random_range(0..DENSITIES.len())];
                if rng.random::<bool>() {
                    let lat = bernoulli(&mut rng, h, w, p).mapv(|v| v as u16 * 513);
                    ck.check_one(lat.view(), c, b, false, "occupancy u16");
                } else {
                    let lat = bernoulli(&mut rng, h, w, p).mapv(|v| v as u32 * 0x1_0001);
                    ck.check_one(lat.view(), c, b, false, "occupancy u32");
                }
            }
        }
    }
    // Patterns: spirals (one long cluster), checkerboards (diagonal links only), stripes.
    for &(h, w) in &[
        (5, 5),
        (33, 64),
        (64, 33),
        (101, 97),
        (256, 255),
        (1, 50),
        (50, 1),
    ] {
        let s = spiral(h, w);
        ck.check_all(s.view(), false, "spiral");
        let board = Array2::from_shape_fn((h, w), |(y, x)| ((x + y) % 2) as u8);
        ck.check_all(board.view(), false, "checkerboard");
        let stripes = Array2::from_shape_fn((h, w), |(y, x)| ((x / 2 + y) % 3) as u16);
        ck.check_all(stripes.view(), true, "stripes");
    }
    // Medium and large lattices.
    for &(h, w, p) in &[
        (1000, 1000, 0.592746),
        (1023, 1025, 0.407254),
        (2048, 2049, 0.6),
        (3000, 17, 0.7),
    ] {
        let lat = percolation(h, w, p, 1, 7);
        ck.check_all(lat.view(), false, "medium");
    }
    let big = percolation(4099, 4097, 0.592746, 1, 11);
    for b in [Boundary::Open, Boundary::Periodic] {
        ck.check_one(big.view(), Connectivity::Four, b, false, "large");
        ck.check_one(big.view(), Connectivity::Eight, b, false, "large");
    }
    let big8 = percolation(4097, 4099, 0.407254, 1, 12);
    ck.check_one(
        big8.view(),
        Connectivity::Eight,
        Boundary::PeriodicX,
        false,
        "large",
    );
    let big_seg = segments(&mut rng, 4099, 4097, 0.2, &[1u16, 2, 3], 3);
    ck.check_one(
        big_seg.view(),
        Connectivity::Eight,
        Boundary::Periodic,
        true,
        "large seg",
    );
    let big_spiral = spiral(4099, 4097);
    ck.check_one(
        big_spiral.view(),
        Connectivity::Four,
        Boundary::Open,
        false,
        "large spiral",
    );
    ck.check_one(
        big_spiral.view(),
        Connectivity::Eight,
        Boundary::Periodic,
        false,
        "large spiral",
    );

    eprintln!(
        "{algorithm:?}: {} lattice cases (canonical and raw) identical to the CPU in {:.1} s",
        ck.cases,
        start.elapsed().as_secs_f64()
    );
    assert!(ck.cases >= 4000);
}

#[test]
#[ignore = "needs a CUDA device"]
fn block_union_find_matches_cpu() {
    battery(Algorithm::BlockUnionFind);
}

#[test]
#[ignore = "needs a CUDA device"]
fn label_equivalence_matches_cpu() {
    battery(Algorithm::LabelEquivalence);
}

#[test]
#[ignore = "needs a CUDA device"]
fn tile_merge_matches_cpu() {
    battery(Algorithm::TileMerge);
}

#[test]
#[ignore = "needs a CUDA device"]
fn ha4_matches_cpu() {
    battery(Algorithm::Ha4);
}

#[test]
#[ignore = "needs a CUDA device"]
fn bit_runs_matches_cpu() {
    battery(Algorithm::BitRuns);
}

/// The device-resident path: input on the GPU, labels on the GPU, count on request.
#[test]
#[ignore = "needs a CUDA device"]
fn device_resident_labels_match() {
    let mut rng = StdRng::seed_from_u64(99);
    for alg in [
        Algorithm::BitRuns,
        Algorithm::BlockUnionFind,
        Algorithm::LabelEquivalence,
        Algorithm::TileMerge,
        Algorithm::Ha4,
    ] {
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                let mut raw_gpu = CudaLabeler::new(0, c, b)
                    .unwrap()
                    .algorithm(alg)
                    .numbering(Numbering::Raw);
                let stream = raw_gpu.stream().clone();
                let mut canon_gpu = CudaLabeler::with_stream(stream.clone(), c, b)
                    .unwrap()
                    .algorithm(alg);
                raw_gpu.prepare::<u8>(300, 301).unwrap();
                for _ in 0..8 {
                    let (h, w) = (rng.random_range(1..300), rng.random_range(1..301));
                    let lat = bernoulli(&mut rng, h, w, 0.6);
                    let cpu = Labeler::new(c, b).label(lat.view()).unwrap();
                    let input = stream.clone_htod(lat.as_slice().unwrap()).unwrap();
                    let mut out = stream.alloc_zeros::<u32>(h * w).unwrap();
                    raw_gpu.label_device(&input, h, w, &mut out).unwrap();
                    assert_eq!(raw_gpu.count().unwrap(), cpu.count());
                    let raw = stream.clone_dtoh(&out).unwrap();
                    let want = raw_from_canonical(cpu.array(), cpu.count());
                    assert_eq!(raw.as_slice(), want.as_slice().unwrap(), "{alg:?} {c} {b}");
                    canon_gpu
                        .label_device(&input.as_view(), h, w, &mut out)
                        .unwrap();
                    assert_eq!(canon_gpu.count().unwrap(), cpu.count());
                    let canon = stream.clone_dtoh(&out).unwrap();
                    assert_eq!(canon.as_slice(), cpu.array().as_slice().unwrap());
                }
                // Wrong buffer lengths are errors.
                let input = stream.alloc_zeros::<u8>(10).unwrap();
                let mut out = stream.alloc_zeros::<u32>(10).unwrap();
                assert!(matches!(
                    raw_gpu.label_device(&input, 3, 4, &mut out),
                    Err(Error::InvalidArgument(_))
                ));
            }
        }
    }
}

/// Lattices that do not fit are an error, as are canonical labels of 2^31 sites and algorithms
/// the GPU lacks.
#[test]
#[ignore = "needs a CUDA device"]
fn limits_are_errors() {
    let mut gpu = CudaLabeler::new(0, Connectivity::Four, Boundary::Open).unwrap();
    let stream = gpu.stream().clone();
    let input = stream.alloc_zeros::<u8>(16).unwrap();
    let mut out = stream.alloc_zeros::<u32>(16).unwrap();
    assert!(matches!(
        gpu.label_device(&input, 1 << 16, 1 << 15, &mut out),
        Err(Error::InvalidArgument(_))
    ));
    let mut cpu_only = CudaLabeler::new(0, Connectivity::Four, Boundary::Open)
        .unwrap()
        .algorithm(Algorithm::Strips);
    assert!(matches!(
        cpu_only.label_host(Array2::<u8>::ones((4, 4)).view()),
        Err(Error::InvalidArgument(_))
    ));
    // Take nearly all free memory, then ask for more than is left.
    let (free, _) = gpu.context().mem_get_info().unwrap();
    let hog = stream
        .alloc_zeros::<u8>(free.saturating_sub(256 << 20))
        .unwrap();
    let lat = Array2::<u8>::ones((8192, 8192));
    match gpu.label_host(lat.view()) {
        Err(Error::OutOfDeviceMemory { needed, free }) => assert!(needed > free),
        other => panic!("expected OutOfDeviceMemory, got {other:?}"),
    }
    drop(hog);
    stream.synchronize().unwrap();
    assert_eq!(gpu.label_host(lat.view()).unwrap().count(), 1);
}

/// Raw labels of a lattice of more than 2^31 sites (index arithmetic near 2^32): rows 4k and
/// 4k + 2 full, row 4k + 1 holding one site in the last column that joins them, other rows empty.
#[test]
#[ignore = "needs a CUDA device"]
fn raw_labels_beyond_2_31_sites() {
    let (h, w) = (32769usize, 65536usize);
    let n = h * w;
    assert!(n > 1 << 31);
    let lattice = Array2::from_shape_fn((h, w), |(y, x)| {
        u8::from(y % 2 == 0 || (y % 4 == 1 && x == w - 1))
    });
    let gpu0 = CudaLabeler::new(0, Connectivity::Four, Boundary::Open).unwrap();
    let stream = gpu0.stream().clone();
    let input = stream.clone_htod(lattice.as_slice().unwrap()).unwrap();
    drop(lattice);
    let mut out = stream.alloc_zeros::<u32>(n).unwrap();
    for alg in [
        Algorithm::BitRuns,
        Algorithm::BlockUnionFind,
        Algorithm::LabelEquivalence,
        Algorithm::TileMerge,
        Algorithm::Ha4,
    ] {
        for c in CONNECTIVITIES {
            for b in [Boundary::Open, Boundary::PeriodicY] {
                let mut gpu = CudaLabeler::with_stream(stream.clone(), c, b)
                    .unwrap()
                    .algorithm(alg)
                    .numbering(Numbering::Raw);
                gpu.label_device(&input, h, w, &mut out).unwrap();
                let count = gpu.count().unwrap();
                let wraps = b == Boundary::PeriodicY;
                assert_eq!(count, if wraps { 8192 } else { 8193 }, "{alg:?} {c} {b}");
                for y in [
                    0, 1, 2, 3, 4, 5, 17, 16384, 32764, 32765, 32766, 32767, 32768,
                ] {
                    let row = stream.clone_dtoh(&out.slice(y * w..(y + 1) * w)).unwrap();
                    let cluster = y / 4;
                    let first = if wraps && cluster == 8192 {
                        0
                    } else {
                        cluster * 4 * w
                    };
                    let want = |x: usize| -> u32 {
                        let occupied = y % 2 == 0 || (y % 4 == 1 && x == w - 1);
                        if occupied {
                            first as u32 + 1
                        } else {
                            0
                        }
                    };
                    for (x, &v) in row.iter().enumerate() {
                        assert_eq!(v, want(x), "{alg:?} {c} {b} at ({y}, {x})");
                    }
                }
            }
        }
    }
}

/// Without a driver (as on CI) every entry point reports CudaUnavailable instead of panicking.
/// Runs everywhere.
#[test]
fn missing_driver_is_an_error_not_a_panic() {
    match cuda_available() {
        Ok(info) => {
            eprintln!("GPU present: {info:?}");
            assert!(info.total_memory > 0);
        }
        Err(e) => {
            assert!(matches!(e, Error::CudaUnavailable(_)), "{e}");
            let r = CudaLabeler::new(0, Connectivity::Four, Boundary::Open);
            assert!(matches!(r, Err(Error::CudaUnavailable(_))));
        }
    }
    assert!(matches!(
        CudaLabeler::new(1000, Connectivity::Eight, Boundary::Periodic),
        Err(Error::CudaUnavailable(_))
    ));
}
