//! The GPU's 64-bit labels (bit runs' `LABEL64` build): equal to the GPU's own 32-bit labels
//! widened and to the CPU's, in both numberings, on many shapes, densities, both connectivities,
//! all boundaries and segments; typed errors for what it does not do; and a lattice of
//! 70000 × 70000 sites (4.9·10^9, beyond 2^32) checked against the band oracle.
//!
//! The band oracle: a lattice made of full-width bands, each a copy of one random band lattice
//! whose last row is empty. Clusters never cross bands (nor wrap between them: the lattice's last
//! row is empty too) and every cluster of band k precedes those of band k + 1 in raster order, so
//! the labels of band k are the band lattice's own labels (32-bit, CPU, same connectivity and
//! boundary) plus k × its cluster count (canonical) or plus k × its sites (raw: the smallest
//! site index + 1).
//!
//! Every test needs a GPU and is `#[ignore = "needs a CUDA device"]`. Run them on the GPU machine
//! with `cargo test --release --test labels64_gpu -- --ignored --test-threads=1` (one at a time:
//! the 70000² test holds 55 GB of the device and 44 GB of host memory; libnvrtc on
//! LD_LIBRARY_PATH). `CLUSTERLAB_BIG_SHAPE=HxW` (e.g. `65536x65600`) labels another size there.

#![cfg(feature = "cuda")]

mod common;

use clusterlab::cuda::cudarc::driver::DeviceRepr;
use clusterlab::cuda::{CudaLabeler, Numbering};
use clusterlab::{Algorithm, Boundary, Connectivity, Error, Labeler, SiteValue};
use common::battery::{raw_from_canonical, BOUNDARIES, CONNECTIVITIES};
use ndarray::{s, Array2, ArrayView2};
use rand::rngs::StdRng;
use rayon::prelude::*;

/// Shapes around the tile (32 × 1024; 16 rows for segments) and vector-store boundaries, thin,
/// tall and odd ones.
const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (1, 2),
    (2, 1),
    (1, 5),
    (5, 1),
    (3, 3),
    (1, 1500),
    (1500, 1),
    (2, 2049),
    (7, 63),
    (17, 65),
    (16, 1024),
    (31, 1023),
    (32, 1024),
    (33, 1025),
    (31, 1025),
    (33, 1023),
    (64, 2048),
    (65, 2049),
    (97, 3001),
    (300, 301),
    (515, 130),
];

const DENSITIES: &[f64] = &[0.0, 0.1, 0.3, 0.5, 0.593, 0.7, 0.9, 1.0];

fn widen(a: &Array2<u32>) -> Array2<u64> {
    a.mapv(u64::from)
}

/// Labels `lattice` in both numberings with 32-bit and 64-bit labels on the GPU, host path and
/// device-resident, and checks all of them against the CPU's labels widened.
fn check_one<T: SiteValue + DeviceRepr>(
    lattice: ArrayView2<'_, T>,
    c: Connectivity,
    b: Boundary,
    segments: bool,
    gpus: &mut [CudaLabeler; 2],
    what: &str,
) {
    let (h, w) = lattice.dim();
    let cpu = Labeler::new(c, b)
        .segments(segments)
        .label(lattice)
        .unwrap();
    let canon = widen(cpu.array());
    let raw = widen(&raw_from_canonical(cpu.array(), cpu.count()));
    for (gpu, want) in gpus.iter_mut().zip([&canon, &raw]) {
        let mut narrow = Array2::<u32>::zeros((h, w));
        let n32 = gpu.label_host_into(lattice, narrow.view_mut()).unwrap();
        assert_eq!(n32, cpu.count(), "{what}: 32-bit count");
        assert_eq!(&widen(&narrow), want, "{what}: 32-bit GPU labels");
        let mut wide = Array2::<u64>::from_elem((h, w), u64::MAX);
        let n64 = gpu.label_host64_into(lattice, wide.view_mut()).unwrap();
        assert_eq!(n64, cpu.count(), "{what}: 64-bit count");
        assert_eq!(&wide, want, "{what}: 64-bit labels (host path)");
        // Device-resident, into a buffer holding stale labels.
        let stream = gpu.stream().clone();
        let input = stream
            .clone_htod(lattice.as_standard_layout().as_slice().unwrap())
            .unwrap();
        let mut out = stream.clone_htod(&vec![u64::MAX; h * w]).unwrap();
        gpu.label_device64(&input, h, w, &mut out).unwrap();
        assert_eq!(gpu.count().unwrap(), cpu.count(), "{what}: device count");
        let got = stream.clone_dtoh(&out).unwrap();
        assert_eq!(
            got.as_slice(),
            want.as_slice().unwrap(),
            "{what}: 64-bit labels (device)"
        );
    }
}

fn labelers(c: Connectivity, b: Boundary, segments: bool) -> [CudaLabeler; 2] {
    let canon = CudaLabeler::new(0, c, b).unwrap().segments(segments);
    let stream = canon.stream().clone();
    let raw = CudaLabeler::with_stream(stream, c, b)
        .unwrap()
        .segments(segments)
        .numbering(Numbering::Raw);
    [canon, raw]
}

/// 64-bit labels == the GPU's 32-bit labels widened == the CPU's widened, both numberings, every
/// shape × density × connectivity × boundary, occupancy lattices of `u8`.
#[test]
#[ignore = "needs a CUDA device"]
fn occupancy_labels_equal_the_32_bit_ones_widened() {
    let mut rng = common::rng(64);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let mut gpus = labelers(c, b, false);
            for &(h, w) in SHAPES {
                for &p in DENSITIES {
                    let lat = common::random_lattice(h, w, p, &mut rng);
                    let what = format!("{h}×{w} p={p} {c} {b}");
                    check_one(lat.view(), c, b, false, &mut gpus, &what);
                }
            }
            // Granular lattices: large clusters across many tile seams.
            for &(h, w) in &[(200, 3000), (1100, 700)] {
                for g in [3, 40] {
                    let lat = common::granular_lattice(h, w, g, 0.55, &mut rng);
                    let what = format!("granular {h}×{w} g={g} {c} {b}");
                    check_one(lat.view(), c, b, false, &mut gpus, &what);
                }
            }
            let spiral = common::spiral(301);
            check_one(
                spiral.view(),
                c,
                b,
                false,
                &mut gpus,
                &format!("spiral {c} {b}"),
            );
        }
    }
}

/// Segments (`u16` and `u32` sites): the same, with neighbours joined only on equal values.
#[test]
#[ignore = "needs a CUDA device"]
fn segment_labels_equal_the_32_bit_ones_widened() {
    let mut rng = common::rng(65);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let mut gpus = labelers(c, b, true);
            for &(h, w) in SHAPES {
                for &(p, k) in &[(0.5, 2), (0.9, 3), (1.0, 2), (0.7, 1000)] {
                    let lat = common::segment_lattice(h, w, p, k, &mut rng);
                    let what = format!("segments u32 {h}×{w} p={p} k={k} {c} {b}");
                    check_one(lat.view(), c, b, true, &mut gpus, &what);
                    let lat16 = lat.mapv(|v| v as u16);
                    check_one(
                        lat16.view(),
                        c,
                        b,
                        true,
                        &mut gpus,
                        &format!("{what} (u16)"),
                    );
                }
            }
        }
    }
}

/// Input that is not standard layout (a transposed view) and an output with a row stride of its
/// own go through the 64-bit host path's bands row by row.
#[test]
#[ignore = "needs a CUDA device"]
fn strided_input_and_output() {
    let mut rng = common::rng(66);
    let lat = common::random_lattice(1500, 900, 0.6, &mut rng);
    let view = lat.t();
    let cpu = Labeler::new(Connectivity::Eight, Boundary::Periodic)
        .label(view)
        .unwrap();
    let mut gpu = CudaLabeler::new(0, Connectivity::Eight, Boundary::Periodic).unwrap();
    let mut big = Array2::<u64>::zeros((900, 1600));
    let count = gpu
        .label_host64_into(view, big.slice_mut(s![.., 100..1600]))
        .unwrap();
    assert_eq!(count, cpu.count());
    assert_eq!(big.slice(s![.., 100..1600]), widen(cpu.array()));
    assert!(big.slice(s![.., ..100]).iter().all(|&v| v == 0));
}

/// Algorithms other than bit runs are refused for 64-bit labels with a typed error naming it;
/// wrong shapes and buffer lengths are typed errors; a lattice that does not fit the device is
/// `OutOfDeviceMemory` with the bytes needed and free, before anything is allocated.
#[test]
#[ignore = "needs a CUDA device"]
fn refusals_are_typed() {
    let lat = Array2::<u8>::ones((40, 40));
    for alg in [
        Algorithm::BlockUnionFind,
        Algorithm::Ha4,
        Algorithm::TileMerge,
        Algorithm::LabelEquivalence,
        Algorithm::Strips,
    ] {
        let mut gpu = CudaLabeler::new(0, Connectivity::Four, Boundary::Open)
            .unwrap()
            .algorithm(alg);
        let mut out = Array2::<u64>::zeros((40, 40));
        match gpu.label_host64_into(lat.view(), out.view_mut()) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("BitRuns"), "{alg:?}: {m}"),
            other => panic!("{alg:?}: {other:?}"),
        }
        assert!(matches!(
            gpu.prepare64::<u8>(40, 40),
            Err(Error::InvalidArgument(_))
        ));
    }
    let mut gpu = CudaLabeler::new(0, Connectivity::Four, Boundary::Open)
        .unwrap()
        .algorithm(Algorithm::BitRuns);
    let mut out = Array2::<u64>::zeros((40, 41));
    assert!(matches!(
        gpu.label_host64_into(lat.view(), out.view_mut()),
        Err(Error::ShapeMismatch { .. })
    ));
    let stream = gpu.stream().clone();
    let input = stream.alloc_zeros::<u8>(10).unwrap();
    let mut small = stream.alloc_zeros::<u64>(10).unwrap();
    assert!(matches!(
        gpu.label_device64(&input, 3, 4, &mut small),
        Err(Error::InvalidArgument(_))
    ));
    // Beyond the kernels' 32-bit grid and mask indices.
    assert!(matches!(
        gpu.label_device64(&input, 1, 1 << 31, &mut small),
        Err(Error::InvalidArgument(_))
    ));
    // Take nearly all free memory, then ask for more than is left.
    let (free, _) = gpu.context().mem_get_info().unwrap();
    let hog = stream
        .alloc_zeros::<u8>(free.saturating_sub(256 << 20))
        .unwrap();
    let big = Array2::<u8>::ones((8192, 8192));
    let mut out = Array2::<u64>::zeros((8192, 8192));
    match gpu.label_host64_into(big.view(), out.view_mut()) {
        Err(Error::OutOfDeviceMemory { needed, free }) => {
            assert!(
                needed > free && needed >= 8192 * 8192 * 9,
                "{needed} {free}"
            )
        }
        other => panic!("expected OutOfDeviceMemory, got {other:?}"),
    }
    drop(hog);
    stream.synchronize().unwrap();
    assert_eq!(
        gpu.label_host64_into(big.view(), out.view_mut()).unwrap(),
        1
    );
    assert!(out.iter().all(|&v| v == 1));
}

/// A band lattice: `rows - 1` random rows of width `w` and an empty last row.
fn band_lattice(rows: usize, w: usize, p: f64, rng: &mut StdRng) -> Array2<u8> {
    let mut band = common::random_lattice(rows, w, p, rng);
    band.row_mut(rows - 1).fill(0);
    band
}

/// The band lattice's expected labels in a numbering: its own labels and what band k adds.
struct BandTruth {
    labels: Vec<u64>,
    step: u64,
    count: usize,
}

fn band_truth(band: &Array2<u8>, c: Connectivity, b: Boundary, numbering: Numbering) -> BandTruth {
    let cpu = Labeler::new(c, b).label(band.view()).unwrap();
    let (labels, step) = match numbering {
        Numbering::Canonical => (cpu.array().clone(), cpu.count() as u64),
        Numbering::Raw => (
            raw_from_canonical(cpu.array(), cpu.count()),
            band.len() as u64,
        ),
    };
    BandTruth {
        labels: labels.iter().map(|&v| u64::from(v)).collect(),
        step,
        count: cpu.count(),
    }
}

/// Checks band k's labels `got` against the band lattice's `labels` plus `off` (in parallel),
/// naming the first difference.
fn check_band(got: &[u64], labels: &[u64], off: u64, k: usize, what: &str) {
    assert_eq!(got.len(), labels.len(), "{what}: band {k}");
    let want = |t: u64| if t == 0 { 0 } else { t + off };
    let ok = got
        .par_iter()
        .zip(labels.par_iter())
        .all(|(&g, &t)| g == want(t));
    if !ok {
        let i = (0..got.len()).find(|&i| got[i] != want(labels[i])).unwrap();
        panic!(
            "{what}: band {k}, site {i} of the band: got {}, want {} + {off}",
            got[i], labels[i]
        );
    }
}

/// Checks every band of the labels `all` (the big lattice's, row-major) against the truths.
fn check_bands(
    all: impl Iterator<Item = (usize, Vec<u64>)>,
    truth: &BandTruth,
    tail: &BandTruth,
    bands: usize,
    what: &str,
) {
    for (k, got) in all {
        let off = k as u64 * truth.step;
        let labels = if k + 1 < bands {
            &truth.labels
        } else {
            &tail.labels
        };
        check_band(&got, labels, off, k, what);
    }
}

/// The big lattice: `bands` copies of `band` (the last one cut to `h` rows).
fn banded(band: &Array2<u8>, h: usize) -> Array2<u8> {
    let w = band.ncols();
    let mut lat = Array2::<u8>::zeros((h, w));
    let src = band.as_slice().unwrap();
    lat.as_slice_mut()
        .unwrap()
        .par_chunks_mut(src.len())
        .for_each(|chunk| chunk.copy_from_slice(&src[..chunk.len()]));
    lat
}

/// The big shape: 70000 × 70000 unless `CLUSTERLAB_BIG_SHAPE=HxW` says otherwise.
fn big_shape() -> (usize, usize) {
    std::env::var("CLUSTERLAB_BIG_SHAPE")
        .ok()
        .and_then(|s| {
            let (h, w) = s.split_once('x')?;
            Some((h.trim().parse().ok()?, w.trim().parse().ok()?))
        })
        .unwrap_or((70000, 70000))
}

/// Rows per band of the big lattice: 112 divides 70000 and is 3.5 tiles, so the bands start at
/// every offset within a tile.
const BAND_ROWS: usize = 112;

/// The band oracle itself, on the CPU's 32-bit labels of a whole banded lattice (runs
/// everywhere): every band, a cut last band, both numberings, every connectivity and boundary.
#[test]
fn band_oracle_holds_on_the_cpu() {
    let mut rng = common::rng(69);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let band = band_lattice(BAND_ROWS, 300, 0.6, &mut rng);
            let h = 4 * BAND_ROWS + 45;
            let mut lat = banded(&band, h);
            lat.row_mut(h - 1).fill(0);
            let mut tail = band.slice(s![..45, ..]).to_owned();
            tail.row_mut(44).fill(0);
            let cpu = Labeler::new(c, b).label(lat.view()).unwrap();
            for numbering in [Numbering::Canonical, Numbering::Raw] {
                let truth = band_truth(&band, c, b, numbering);
                let tail_truth = band_truth(&tail, c, b, numbering);
                assert_eq!(cpu.count(), 4 * truth.count + tail_truth.count);
                let labels = match numbering {
                    Numbering::Canonical => widen(cpu.array()),
                    Numbering::Raw => widen(&raw_from_canonical(cpu.array(), cpu.count())),
                };
                let all = labels.as_slice().unwrap();
                let down = all.chunks(band.len()).map(<[u64]>::to_vec).enumerate();
                check_bands(
                    down,
                    &truth,
                    &tail_truth,
                    5,
                    &format!("{c} {b} {numbering:?}"),
                );
            }
        }
    }
}

/// The band oracle on a small lattice (runs in a moment): the oracle's own logic, and seams
/// between bands at every tile offset, in both numberings.
#[test]
#[ignore = "needs a CUDA device"]
fn band_oracle_small() {
    let mut rng = common::rng(67);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let band = band_lattice(BAND_ROWS, 2100, 0.6, &mut rng);
            let lat = banded(&band, 9 * BAND_ROWS);
            for numbering in [Numbering::Canonical, Numbering::Raw] {
                let truth = band_truth(&band, c, b, numbering);
                let mut gpu = CudaLabeler::new(0, c, b).unwrap().numbering(numbering);
                let mut out = Array2::<u64>::zeros(lat.dim());
                let count = gpu.label_host64_into(lat.view(), out.view_mut()).unwrap();
                assert_eq!(count, 9 * truth.count, "{c} {b} {numbering:?}");
                for (k, got) in out.as_slice().unwrap().chunks(band.len()).enumerate() {
                    let off = k as u64 * truth.step;
                    check_band(
                        got,
                        &truth.labels,
                        off,
                        k,
                        &format!("{c} {b} {numbering:?}"),
                    );
                }
            }
        }
    }
}

/// 70000 × 70000 sites (4.9·10^9 > 2^32) on one GPU against the band oracle: device-resident in
/// both numberings and connectivities (a boundary each: 4 labelings, the labels compared band by
/// band as they come down, no host copy of all of them), then once through the host path (whose
/// labels the host holds: 39 GB). Device memory: 4.9 GB lattice + 39.2 GB labels + 11.1 GB
/// scratch (9.8 GB of it the 2-byte local roots); host: 4.9 GB lattice + 39.2 GB labels (the host
/// path) + a band.
#[test]
#[ignore = "needs a CUDA device"]
fn band_oracle_70000_squared() {
    let (h, w) = big_shape();
    let n = h * w;
    eprintln!("{h}×{w}: {n} sites");
    let mut rng = common::rng(68);
    let band = band_lattice(BAND_ROWS, w, 0.5927, &mut rng);
    let t = std::time::Instant::now();
    let mut lat = banded(&band, h);
    let bands = h.div_ceil(BAND_ROWS);
    // The last band may be cut short: its truth is that of the cut band lattice, whose last row
    // is emptied too (so that no cluster wraps from it to band 0 on a periodic y axis).
    let tail_rows = h - (bands - 1) * BAND_ROWS;
    let mut tail = band.slice(s![..tail_rows, ..]).to_owned();
    tail.row_mut(tail_rows - 1).fill(0);
    lat.row_mut(h - 1).fill(0);
    eprintln!("lattice built in {:.1?}", t.elapsed());

    let gpu = CudaLabeler::new(0, Connectivity::Four, Boundary::Open).unwrap();
    let stream = gpu.stream().clone();
    let input = stream.clone_htod(lat.as_slice().unwrap()).unwrap();
    let mut out = stream.alloc_zeros::<u64>(n).unwrap();
    for (c, b, numbering) in [
        (Connectivity::Four, Boundary::Open, Numbering::Canonical),
        (Connectivity::Four, Boundary::PeriodicX, Numbering::Raw),
        (
            Connectivity::Eight,
            Boundary::Periodic,
            Numbering::Canonical,
        ),
        (Connectivity::Eight, Boundary::PeriodicY, Numbering::Raw),
    ] {
        let what = format!("{h}×{w} {c} {b} {numbering:?}");
        let truth = band_truth(&band, c, b, numbering);
        let tail_truth = band_truth(&tail, c, b, numbering);
        let mut g = CudaLabeler::with_stream(stream.clone(), c, b)
            .unwrap()
            .numbering(numbering);
        let t = std::time::Instant::now();
        g.label_device64(&input, h, w, &mut out).unwrap();
        let count = g.count().unwrap();
        eprintln!("{what}: labeled in {:.1?}", t.elapsed());
        assert_eq!(
            count,
            (bands - 1) * truth.count + tail_truth.count,
            "{what}: count"
        );
        let t = std::time::Instant::now();
        let down = (0..bands).map(|k| {
            let (lo, hi) = (k * band.len(), ((k + 1) * band.len()).min(n));
            let mut got = vec![0u64; hi - lo];
            stream.memcpy_dtoh(&out.slice(lo..hi), &mut got).unwrap();
            (k, got)
        });
        check_bands(down, &truth, &tail_truth, bands, &what);
        eprintln!("{what}: checked in {:.1?}", t.elapsed());
    }
    drop(input);
    drop(out);
    drop(gpu);
    stream.synchronize().unwrap();

    // The host path: the lattice up and the labels down in pinned bands.
    let (c, b) = (Connectivity::Eight, Boundary::Open);
    let truth = band_truth(&band, c, b, Numbering::Canonical);
    let tail_truth = band_truth(&tail, c, b, Numbering::Canonical);
    let mut gpu = CudaLabeler::new(0, c, b).unwrap();
    let mut labels = Array2::<u64>::zeros((h, w));
    let t = std::time::Instant::now();
    let count = gpu
        .label_host64_into(lat.view(), labels.view_mut())
        .unwrap();
    eprintln!("host path: {:.1?}", t.elapsed());
    assert_eq!(count, (bands - 1) * truth.count + tail_truth.count);
    let what = format!("{h}×{w} {c} {b} host path");
    let all = labels.as_slice().unwrap();
    for (k, got) in all.chunks(band.len()).enumerate() {
        let tail_or_band = if k + 1 < bands { &truth } else { &tail_truth };
        check_band(got, &tail_or_band.labels, k as u64 * truth.step, k, &what);
    }
}
