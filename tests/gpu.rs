//! The GPU's own entry points: device-resident labeling, limits, lattices beyond 2^31 sites, bit
//! runs' write-once labeling of lattices of many tiles, and a missing driver. (Every GPU algorithm's labels are checked against the oracle by the battery
//! that every backend runs, `tests/labeling.rs`.)
//!
//! Every test that needs a GPU is `#[ignore = "needs a CUDA device"]`: CI lists them as ignored.
//! Run them on a machine with a GPU with `cargo test --test gpu -- --ignored --test-threads=1`
//! (libnvrtc must be on LD_LIBRARY_PATH). The one test that runs everywhere checks that a missing
//! driver is an error, not a panic.

#![cfg(feature = "cuda")]

mod common;

use clusterlab::cuda::{cuda_available, CudaLabeler, Numbering};
use clusterlab::{Algorithm, Boundary, Connectivity, Error, Labeler};
use common::battery::{raw_from_canonical, BOUNDARIES, CONNECTIVITIES};
use ndarray::Array2;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn bernoulli(rng: &mut StdRng, h: usize, w: usize, p: f64) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |_| u8::from(rng.random::<f64>() < p))
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

/// Bit runs writes each label once (`br_write`) on lattices of at least three 32-row tiles per
/// multiprocessor, which the battery's small lattices are not (they take `br_final`): lattices
/// of 4 tile rows × 129 or 130 tile columns (at least 516 tiles, three per multiprocessor on any
/// device of up to 172; 4-connected occupancy in 16-row tiles, twice as many), with partial last
/// tiles across and down, odd and 16-aligned widths, occupancy at three densities and segments,
/// every connectivity, boundary and numbering, match the CPU bit for bit.
#[test]
#[ignore = "needs a CUDA device"]
fn write_once_labels_match_the_cpu() {
    let mut rng = StdRng::seed_from_u64(7);
    // (117 rows: the last tile's 21 rows end in a one-row band.)
    for (h, w) in [
        (97, 128 * 1024 + 37),
        (128, 128 * 1024 + 16),
        (117, 129 * 1024 + 5),
    ] {
        for c in CONNECTIVITIES {
            let pc = if c == Connectivity::Four {
                0.5927
            } else {
                0.4073
            };
            let mut lattices: Vec<(Array2<u8>, bool)> = [0.3, pc, 0.8]
                .iter()
                .map(|&p| (bernoulli(&mut rng, h, w, p), false))
                .collect();
            // Segments: runs of equal values that touch without joining.
            let seg = Array2::from_shape_fn((h, w), |_| [0u8, 1, 2, 2][rng.random_range(0..4)]);
            lattices.push((seg, true));
            // Rows of one parity dense, the others sparse: 8-connected bands whose runs span
            // many words with their first site of the band's first row far along them (or none),
            // and components whose first band has runs of the second row only left of the first
            // row's.
            for dense in [0, 1] {
                let rows = Array2::from_shape_fn((h, w), |(y, _)| {
                    let p = if y % 2 == dense { 0.97 } else { 0.01 };
                    u8::from(rng.random_bool(p))
                });
                lattices.push((rows, false));
            }
            for b in BOUNDARIES {
                for (lat, segments) in &lattices {
                    let cpu = Labeler::new(c, b)
                        .segments(*segments)
                        .label(lat.view())
                        .unwrap();
                    let want_raw = raw_from_canonical(cpu.array(), cpu.count());
                    for numbering in [Numbering::Raw, Numbering::Canonical] {
                        let mut gpu = CudaLabeler::new(0, c, b)
                            .unwrap()
                            .segments(*segments)
                            .numbering(numbering);
                        let mut out = Array2::<u32>::zeros((h, w));
                        let count = gpu.label_host_into(lat.view(), out.view_mut()).unwrap();
                        let what = format!("{h}×{w} {c} {b} segments {segments} {numbering:?}");
                        assert_eq!(count, cpu.count(), "{what}");
                        let want = match numbering {
                            Numbering::Raw => &want_raw,
                            _ => cpu.array(),
                        };
                        assert!(out == *want, "{what}");
                    }
                }
            }
        }
    }
}
