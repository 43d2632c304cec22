//! Multi-GPU labeling in horizontal strips (`clusterlab::cuda::MultiGpuLabeler`): the loopback
//! transport (several strips on device 0) against the single device and the BFS oracle, on every
//! connectivity and boundary, strips of one row and uneven heights, segments and site types; the
//! device-resident path; all visible devices when there are two or more; bad input. The
//! analysis across strips (`MultiGpuAnalyzer`): its tables and `n_s` against the CPU's.
//!
//! GPU tests are `#[ignore = "needs a CUDA device"]`: run them on a GPU machine with
//! `cargo test --release --test multi_gpu -- --ignored --test-threads=1` (libnvrtc on
//! LD_LIBRARY_PATH). The test of every device prints why it skips on a machine of one GPU.

#![cfg(feature = "cuda")]

mod common;

use clusterlab::cuda::{device_count, CudaLabeler, MultiGpuAnalyzer, MultiGpuLabeler, Numbering};
use clusterlab::{Analyzer, Boundary, Connectivity, Error, Measures, SiteValue};
use common::battery::{raw_from_canonical, BOUNDARIES, CONNECTIVITIES};
use common::{granular_lattice, oracle_of, random_lattice, rng, segment_lattice, spiral, stripes};
use ndarray::{Array2, ArrayView2};
use rand::rngs::StdRng;
use rand::RngExt;

/// Checks `gpus` on `lattice` against the oracle (canonical and raw, with counts) and against
/// one device's labels.
fn check<T: SiteValue + Into<u32>>(
    gpus: MultiGpuLabeler,
    lattice: ArrayView2<'_, T>,
    c: Connectivity,
    b: Boundary,
    segments: bool,
    what: &str,
) -> MultiGpuLabeler {
    let (want, count) = oracle_of(lattice, c, b, segments);
    let mut one = CudaLabeler::new(0, c, b).unwrap().segments(segments);
    let single = one.label_host(lattice).unwrap();
    assert_eq!(single.array(), &want, "single device, {what}");
    let mut gpus = gpus.numbering(Numbering::Canonical);
    let mut out = Array2::<u32>::zeros(lattice.dim());
    let n = gpus.label_host_into(lattice, out.view_mut()).unwrap();
    assert_eq!(n, count, "count, {what}");
    assert_eq!(out, want, "canonical, {what}");
    let mut gpus = gpus.numbering(Numbering::Raw);
    let n = gpus.label_host_into(lattice, out.view_mut()).unwrap();
    assert_eq!(n, count, "raw count, {what}");
    assert_eq!(out, raw_from_canonical(&want, count), "raw, {what}");
    gpus
}

/// Random heights adding up to `h`, at most `s` strips, some of one row.
fn uneven(h: usize, s: usize, rng: &mut StdRng) -> Vec<usize> {
    let mut rows = Vec::new();
    let mut left = h;
    while left > 0 {
        let r = if rows.len() + 1 == s {
            left
        } else {
            1 + rng.random_range(0..left.min(1 + h / s.max(1)))
        };
        rows.push(r);
        left -= r;
    }
    rows
}

/// Loopback with 2, 3 and 5 even strips and with uneven heights (strips of one row included),
/// on random lattices of many shapes and densities, every connectivity and boundary.
#[test]
#[ignore = "needs a CUDA device"]
fn loopback_equals_one_device_and_the_oracle() {
    let mut r = rng(15);
    let widths = [1usize, 2, 3, 31, 32, 33, 63, 64, 65, 100, 1023, 1025];
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            for (i, &w) in widths.iter().enumerate() {
                let strips = [2usize, 3, 5][i % 3];
                let h = strips + r.random_range(0..120);
                let p = [0.2, 0.45, 0.5927, 0.7, 0.95][r.random_range(0..5)];
                let lattice = random_lattice(h, w, p, &mut r);
                let what = format!("{h}×{w} p={p} {strips} strips {c} {b}");
                let gpus = MultiGpuLabeler::loopback(0, strips, c, b).unwrap();
                let gpus = check(gpus, lattice.view(), c, b, false, &what);
                assert_eq!(gpus.layout().len(), strips);
                let rows = uneven(h, 5, &mut r);
                let what = format!("{h}×{w} p={p} rows {rows:?} {c} {b}");
                let gpus = MultiGpuLabeler::new(&[0], c, b).unwrap().strip_rows(&rows);
                check(gpus, lattice.view(), c, b, false, &what);
            }
            // Every row its own strip; clusters that wind through all of them.
            let lattice = granular_lattice(7, 40, 3, 0.6, &mut r);
            let gpus = MultiGpuLabeler::loopback(0, 7, c, b).unwrap();
            check(
                gpus,
                lattice.view(),
                c,
                b,
                false,
                &format!("7 one-row strips {c} {b}"),
            );
        }
    }
}

/// Segments of every site type, and lattices taller than the strips' tiles.
#[test]
#[ignore = "needs a CUDA device"]
fn loopback_segments_and_site_types() {
    let mut r = rng(16);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let seg = segment_lattice(90, 70, 0.8, 3, &mut r);
            let gpus = MultiGpuLabeler::loopback(0, 3, c, b)
                .unwrap()
                .segments(true);
            check(
                gpus,
                seg.view(),
                c,
                b,
                true,
                &format!("u32 segments {c} {b}"),
            );
            let seg16 = seg.mapv(|v| v as u16);
            let gpus = MultiGpuLabeler::loopback(0, 5, c, b)
                .unwrap()
                .segments(true);
            check(
                gpus,
                seg16.view(),
                c,
                b,
                true,
                &format!("u16 segments {c} {b}"),
            );
            let big = random_lattice(300, 2100, 0.5927, &mut r);
            let gpus = MultiGpuLabeler::loopback(0, 3, c, b).unwrap();
            check(gpus, big.view(), c, b, false, &format!("300×2100 {c} {b}"));
        }
    }
}

/// Device-resident: upload once, label twice, download; a transposed (non-contiguous) view.
#[test]
#[ignore = "needs a CUDA device"]
fn device_resident_and_views() {
    let mut r = rng(17);
    let (c, b) = (Connectivity::Eight, Boundary::Periodic);
    let lattice = random_lattice(257, 190, 0.45, &mut r);
    let (want, count) = oracle_of(lattice.view(), c, b, false);
    let mut gpus = MultiGpuLabeler::loopback(0, 4, c, b).unwrap();
    gpus.upload(lattice.view()).unwrap();
    assert_eq!(gpus.label().unwrap(), count);
    assert_eq!(gpus.label().unwrap(), count);
    let t = gpus.timings();
    assert!(t.total_ms > 0.0 && t.strips_ms > 0.0 && t.total_ms >= t.relabel_ms);
    let mut out = Array2::<u32>::zeros(lattice.dim());
    gpus.download_into(out.view_mut()).unwrap();
    assert_eq!(out, want);
    let mut out_t = Array2::<u32>::zeros((190, 257));
    let mut into_t = out_t.view_mut().reversed_axes();
    gpus.download_into(into_t.view_mut()).unwrap();
    assert_eq!(out_t.t(), want);
    let labels = gpus.label_host(lattice.t()).unwrap();
    let (want_t, count_t) = oracle_of(lattice.t(), c, b, false);
    assert_eq!((labels.array(), labels.count()), (&want_t, count_t));
    // An empty lattice: no strips, no clusters.
    let empty = Array2::<u8>::zeros((0, 5));
    assert_eq!(gpus.label_host(empty.view()).unwrap().count(), 0);
}

/// Every visible device, one strip each and two each, when there are two or more devices.
#[test]
#[ignore = "needs a CUDA device"]
fn all_devices() {
    let n = device_count().unwrap();
    if n < 2 {
        println!("all_devices: skipped, this machine has {n} CUDA device(s); it needs 2 or more");
        return;
    }
    let mut r = rng(18);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let lattice = random_lattice(700, 900, 0.5927, &mut r);
            let gpus = MultiGpuLabeler::all_devices(c, b).unwrap();
            let gpus = check(
                gpus,
                lattice.view(),
                c,
                b,
                false,
                &format!("{n} GPUs {c} {b}"),
            );
            let devices: Vec<usize> = gpus.layout().iter().map(|s| s.device).collect();
            assert_eq!(devices, (0..n).collect::<Vec<_>>());
            let gpus = MultiGpuLabeler::all_devices(c, b)
                .unwrap()
                .strips(2 * n + 1);
            check(
                gpus,
                lattice.view(),
                c,
                b,
                false,
                &format!("{n} GPUs, {} strips {c} {b}", 2 * n + 1),
            );
        }
    }
    // A lattice of more than 2^31 sites (canonical only), checked against the CPU's count.
    if std::env::var("CLUSTERLAB_BIG_MULTI").is_ok() {
        let lattice = clusterlab::generate::percolation(49152, 49152, 0.5927, 1, 1);
        let cpu = clusterlab::Labeler::new(Connectivity::Four, Boundary::Periodic)
            .label(lattice.view())
            .unwrap();
        let mut gpus =
            MultiGpuLabeler::all_devices(Connectivity::Four, Boundary::Periodic).unwrap();
        let labels = gpus.label_host(lattice.view()).unwrap();
        assert_eq!(labels.count(), cpu.count());
        assert!(labels.array() == cpu.array());
    }
}

/// Bad input is a typed error: no devices, a device the driver does not list, 0 strips, more
/// strips than rows, heights that do not add up, raw labels of 2^31 sites, label before upload.
#[test]
#[ignore = "needs a CUDA device"]
fn bad_input_is_an_error() {
    let (c, b) = (Connectivity::Four, Boundary::Open);
    let n = device_count().unwrap();
    assert!(matches!(
        MultiGpuLabeler::new(&[0, n], c, b),
        Err(Error::InvalidArgument(_))
    ));
    let lattice = Array2::<u8>::ones((4, 6));
    for gpus in [
        MultiGpuLabeler::loopback(0, 0, c, b).unwrap(),
        MultiGpuLabeler::loopback(0, 5, c, b).unwrap(),
        MultiGpuLabeler::new(&[0], c, b)
            .unwrap()
            .strip_rows(&[1, 2]),
        MultiGpuLabeler::new(&[0], c, b)
            .unwrap()
            .strip_rows(&[2, 0, 2]),
    ] {
        let mut gpus = gpus;
        assert!(matches!(
            gpus.label_host(lattice.view()),
            Err(Error::InvalidArgument(_))
        ));
    }
    let mut gpus = MultiGpuLabeler::loopback(0, 2, c, b).unwrap();
    assert!(matches!(gpus.label(), Err(Error::InvalidArgument(_))));
    let mut out = Array2::<u32>::zeros((4, 5));
    assert!(matches!(
        gpus.label_host_into(lattice.view(), out.view_mut()),
        Err(Error::ShapeMismatch { .. })
    ));
}

/// Without a device list there is nothing to label, with or without a GPU.
#[test]
fn no_devices_is_an_error() {
    assert!(matches!(
        MultiGpuLabeler::new(&[], Connectivity::Four, Boundary::Open),
        Err(Error::InvalidArgument(_))
    ));
    // Without a driver (as on CI) a device list is CudaUnavailable, never a panic.
    match MultiGpuLabeler::new(&[usize::MAX], Connectivity::Four, Boundary::Open) {
        Err(Error::InvalidArgument(_) | Error::CudaUnavailable(_)) => {}
        other => panic!("{:?}", other.err()),
    }
}

/// The strips' analysis equals the CPU's [`Measures::Shape`] table (which tests/analysis.rs
/// checks against an oracle) and its `n_s` and flags.
fn check_analysis(
    gpus: &mut MultiGpuAnalyzer,
    lattice: ArrayView2<'_, u8>,
    (c, b): (Connectivity, Boundary),
    what: &str,
) {
    let mut cpu = Analyzer::new(c, b).measures(Measures::Shape);
    let want = cpu.analyze(lattice).unwrap();
    let got = gpus.analyze(lattice).unwrap();
    assert_eq!(got.count(), want.count(), "{what}: clusters");
    assert!(got == want, "{what}: tables differ");
    let counts = gpus.size_counts(lattice).unwrap();
    for exclude in [false, true] {
        assert_eq!(
            counts.size_distribution(exclude),
            want.size_distribution(exclude),
            "{what}: n_s (exclude percolating: {exclude})"
        );
    }
    let stats = want.stats();
    assert_eq!(counts.wraps_x(), stats.wraps_x, "{what}: wraps_x");
    assert_eq!(counts.wraps_y(), stats.wraps_y, "{what}: wraps_y");
    assert_eq!(counts.wraps_both(), stats.wraps_both, "{what}: wraps_both");
    assert_eq!(counts.spans_x(), stats.spans_x, "{what}: spans_x");
    assert_eq!(counts.spans_y(), stats.spans_y, "{what}: spans_y");
    assert_eq!(counts.largest(), stats.largest, "{what}: largest");
}

/// Loopback analysis with 2, 3 and 5 strips and uneven heights (strips of one row included),
/// random lattices of many shapes and densities and lattices whose clusters cross every strip
/// and wrap (a spiral, stripes both ways), every connectivity and boundary.
#[test]
#[ignore = "needs a CUDA device"]
fn analysis_loopback_equals_the_cpu() {
    let mut r = rng(25);
    let widths = [1usize, 2, 3, 31, 33, 64, 65, 100, 1023, 1025];
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            for (i, &w) in widths.iter().enumerate() {
                let strips = [2usize, 3, 5][i % 3];
                let h = strips + r.random_range(0..120);
                let p = [0.2, 0.45, 0.5927, 0.7, 0.95][r.random_range(0..5)];
                let lattice = random_lattice(h, w, p, &mut r);
                let what = format!("{h}×{w} p={p} {strips} strips {c} {b} ");
                let mut gpus = MultiGpuAnalyzer::loopback(0, strips, c, b).unwrap();
                check_analysis(&mut gpus, lattice.view(), (c, b), &what);
                let rows = uneven(h, 4, &mut r);
                let mut gpus = MultiGpuAnalyzer::loopback(0, 1, c, b)
                    .unwrap()
                    .strip_rows(&rows);
                check_analysis(
                    &mut gpus,
                    lattice.view(),
                    (c, b),
                    &format!("{what}rows {rows:?}"),
                );
            }
            for (name, lattice) in [
                ("spiral", spiral(97)),
                ("horizontal stripes", stripes(64, 90, true)),
                ("vertical stripes", stripes(64, 90, false)),
                ("full", Array2::<u8>::ones((40, 50))),
            ] {
                for strips in [2usize, 7] {
                    let what = format!("{name} {strips} strips {c} {b} ");
                    let mut gpus = MultiGpuAnalyzer::loopback(0, strips, c, b).unwrap();
                    check_analysis(&mut gpus, lattice.view(), (c, b), &what);
                }
            }
        }
    }
}

/// Analysis on every device when there are two or more (one strip each, then more strips than
/// devices), and one lattice larger than the tests above.
#[test]
#[ignore = "needs a CUDA device"]
fn analysis_on_all_devices() {
    let n = device_count().unwrap();
    let mut r = rng(26);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let lattice = random_lattice(1500, 1700, 0.5927, &mut r);
            let mut gpus = MultiGpuAnalyzer::all_devices(c, b).unwrap();
            check_analysis(
                &mut gpus,
                lattice.view(),
                (c, b),
                &format!("{n} GPUs {c} {b}"),
            );
            let devices: Vec<usize> = gpus.layout().iter().map(|s| s.device).collect();
            assert_eq!(devices, (0..n).collect::<Vec<_>>());
            let mut gpus = MultiGpuAnalyzer::all_devices(c, b)
                .unwrap()
                .strips(2 * n + 1);
            check_analysis(
                &mut gpus,
                lattice.view(),
                (c, b),
                &format!("{n} GPUs, {} strips {c} {b}", 2 * n + 1),
            );
        }
    }
}
