//! GPU cluster tables, labels and size counts against the CPU's (which tests/analysis.rs checks
//! against an independent oracle).
//!
//! Every test that needs a GPU is `#[ignore = "needs a CUDA device"]`; run them with
//! `cargo test --test gpu_analysis -- --ignored --test-threads=1` (libnvrtc on LD_LIBRARY_PATH).

#![cfg(feature = "cuda")]

mod common;

use clusterlab::cuda::{CudaAnalyzer, SizeCounts};
use clusterlab::{Analyzer, Backend, Boundary, ClusterTable, Connectivity, Measures};
use common::{checkerboard, random_lattice, rng, spiral, stripes};
use ndarray::{array, Array2};

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNECTIVITIES: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];
/// Random lattices' shapes: tiny, around a warp's and a tile's width, long and thin.
const SHAPES: [(usize, usize); 21] = [
    (1, 1),
    (1, 2),
    (2, 1),
    (1, 37),
    (37, 1),
    (2, 2),
    (3, 3),
    (5, 7),
    (31, 31),
    (32, 32),
    (33, 33),
    (63, 65),
    (64, 64),
    (65, 63),
    (17, 200),
    (200, 17),
    (100, 129),
    (257, 255),
    (33, 1023),
    (40, 1025),
    (65, 2049),
];
const DENSITIES: [f64; 7] = [0.0, 0.2, 0.45, 0.5927, 0.7, 0.9, 1.0];

/// GPU analyzers by (connectivity, boundary), created once.
struct Gpus(Vec<((Connectivity, Boundary), CudaAnalyzer)>);

impl Gpus {
    fn get(&mut self, c: Connectivity, b: Boundary) -> &mut CudaAnalyzer {
        if let Some(i) = self.0.iter().position(|(k, _)| *k == (c, b)) {
            return &mut self.0[i].1;
        }
        let a = CudaAnalyzer::new(0, c, b).expect("a CUDA device");
        self.0.push(((c, b), a));
        &mut self.0.last_mut().unwrap().1
    }
}

/// Which column differs first (for a readable failure).
fn first_difference(a: &ClusterTable, b: &ClusterTable) -> String {
    macro_rules! col {
        ($f:ident) => {
            if a.$f != b.$f {
                let i = a.$f.iter().zip(b.$f.iter()).position(|(x, y)| x != y);
                return format!("column {} differs at row {:?}", stringify!($f), i);
            }
        };
    }
    if a.count() != b.count() {
        return format!("{} vs {} clusters", a.count(), b.count());
    }
    col!(size);
    col!(x_min);
    col!(x_max);
    col!(y_min);
    col!(y_max);
    col!(centroid_x);
    col!(centroid_y);
    col!(gyration_radius);
    col!(wraps_x);
    col!(wraps_y);
    col!(spans_x);
    col!(spans_y);
    macro_rules! opt {
        ($f:ident) => {
            match (&a.$f, &b.$f) {
                (Some(x), Some(y)) if x != y => {
                    let i = x.iter().zip(y.iter()).position(|(p, q)| p != q);
                    let v = i.map(|i| (x[i], y[i]));
                    return format!("column {} differs at row {i:?}: {v:?}", stringify!($f));
                }
                (x, y) if x.is_some() != y.is_some() => {
                    return format!("column {} present on one side only", stringify!($f));
                }
                _ => {}
            }
        };
    }
    opt!(site_perimeter);
    opt!(bond_perimeter);
    opt!(hull_perimeter);
    opt!(filled_area);
    "metadata".into()
}

/// The GPU's shape table, labels and size counts equal the CPU's for this lattice.
fn check(gpus: &mut Gpus, lattice: &Array2<u8>, c: Connectivity, b: Boundary) {
    let what = format!("{:?} {c:?} {b:?}", lattice.dim());
    let mut cpu = Analyzer::new(c, b).measures(Measures::Shape);
    let (want, want_labels) = cpu.analyze_labeled(lattice.view()).unwrap();
    let g = gpus.get(c, b);
    let got = g.analyze(lattice.view()).unwrap();
    assert!(got == want, "{what}: {}", first_difference(&got, &want));
    let (got, labels) = g.analyze_labeled(lattice.view()).unwrap();
    assert!(
        got == want,
        "{what} (labeled): {}",
        first_difference(&got, &want)
    );
    assert_eq!(labels.count(), want_labels.count(), "{what}");
    assert_eq!(labels.array(), want_labels.array(), "{what}: labels");
    let counts: SizeCounts = g.size_counts(lattice.view()).unwrap();
    for exclude in [false, true] {
        assert_eq!(
            counts.size_distribution(exclude),
            want.size_distribution(exclude),
            "{what}: n_s (exclude percolating: {exclude})"
        );
    }
    let stats = want.stats();
    assert_eq!(counts.clusters(), stats.clusters, "{what}");
    assert_eq!(counts.occupied(), stats.occupied, "{what}");
    assert_eq!(counts.largest(), stats.largest, "{what}");
    assert_eq!(counts.wraps_x(), stats.wraps_x, "{what}: wraps_x");
    assert_eq!(counts.wraps_y(), stats.wraps_y, "{what}: wraps_y");
    assert_eq!(counts.wraps_both(), stats.wraps_both, "{what}: wraps_both");
    assert_eq!(counts.spans_x(), stats.spans_x, "{what}: spans_x");
    assert_eq!(counts.spans_y(), stats.spans_y, "{what}: spans_y");
    let close = |a: f64, b: f64| (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(counts.p_infinity(), stats.p_infinity), "{what}: P∞");
    assert!(close(counts.mean_size(), stats.mean_size), "{what}: S");
}

#[test]
#[ignore = "needs a CUDA device"]
fn random_lattices_match_the_cpu() {
    let mut gpus = Gpus(Vec::new());
    let mut r = rng(5);
    let mut cases = 0;
    for &(h, w) in &SHAPES {
        for p in DENSITIES {
            let lattice = random_lattice(h, w, p, &mut r);
            for c in CONNECTIVITIES {
                for b in BOUNDARIES {
                    check(&mut gpus, &lattice, c, b);
                    cases += 1;
                }
            }
        }
    }
    eprintln!("{cases} random cases");
}

#[test]
#[ignore = "needs a CUDA device"]
fn large_lattices_match_the_cpu() {
    let mut gpus = Gpus(Vec::new());
    let mut r = rng(11);
    for &(h, w) in &[(1024, 1024), (1000, 1531), (2048, 333)] {
        for p in [0.4, 0.5927, 0.75] {
            let lattice = random_lattice(h, w, p, &mut r);
            for c in CONNECTIVITIES {
                for b in BOUNDARIES {
                    check(&mut gpus, &lattice, c, b);
                }
            }
        }
    }
}

/// Tiles with more multi-run components than the GPU's tile pass has accumulators for (it sums
/// them in rounds): vertical dimers in every other column, and sparse random sites.
#[test]
#[ignore = "needs a CUDA device"]
fn crowded_tiles_match_the_cpu() {
    let mut gpus = Gpus(Vec::new());
    let dimers = Array2::from_shape_fn((70, 2100), |(y, x)| u8::from(x % 2 == 0 && y % 3 != 2));
    let sparse = random_lattice(96, 2048, 0.25, &mut rng(13));
    for l in [&dimers, &sparse] {
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                check(&mut gpus, l, c, b);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn torus_cases_match_the_cpu() {
    let mut gpus = Gpus(Vec::new());
    // A straight strip that wraps in x; a diagonal that winds round both axes (8-conn); sites
    // touching both edges without wrapping; a spiral; stripes; a checkerboard.
    let strip = array![[0u8, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]];
    let diagonal = Array2::from_shape_fn((7, 7), |(y, x)| u8::from(x == y));
    let winding = Array2::from_shape_fn((6, 9), |(y, x)| {
        u8::from(x == (2 * y) % 9 || x == (2 * y + 1) % 9)
    });
    let touching = array![[1u8, 0, 0, 1], [1, 0, 0, 1], [0, 0, 0, 0]];
    let u_shape = array![[1u8, 0, 0, 1], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 1]];
    let mut lattices = vec![strip, diagonal, winding, touching, u_shape];
    lattices.push(spiral(41));
    lattices.push(stripes(33, 40, true));
    lattices.push(stripes(33, 40, false));
    lattices.push(checkerboard(32, 32));
    lattices.push(checkerboard(33, 31));
    for l in &lattices {
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                check(&mut gpus, l, c, b);
            }
        }
    }
}

/// One table kept across lattices of growing and shrinking cluster counts, filled by
/// `analyze_into` and `finish_table_into`, equals the CPU's each time; so does one whose columns
/// were sliced or reversed in place (their memory is reused whatever their layout).
#[test]
#[ignore = "needs a CUDA device"]
fn tables_filled_into_a_kept_table_match_the_cpu() {
    use ndarray::s;
    let mut gpus = Gpus(Vec::new());
    let mut r = rng(11);
    let mut cases = 0;
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            let mut kept = Analyzer::new(c, b)
                .analyze(Array2::<u8>::ones((3, 3)).view())
                .unwrap();
            // (The empty lattice at an even index: filled by analyze_into, from the host.)
            for (i, &(h, w)) in [
                (65, 2049),
                (5, 7),
                (257, 255),
                (100, 129),
                (0, 3),
                (33, 1023),
            ]
            .iter()
            .enumerate()
            {
                for p in [0.5927, 0.2, 0.9] {
                    let lattice = random_lattice(h, w, p, &mut r);
                    let want = Analyzer::new(c, b)
                        .measures(Measures::Shape)
                        .analyze(lattice.view())
                        .unwrap();
                    if i % 2 == 1 && kept.size.len() > 2 {
                        kept.size.slice_collapse(s![1..]);
                        kept.x_min.invert_axis(ndarray::Axis(0));
                    }
                    let g = gpus.get(c, b);
                    let what = format!("{h}×{w} p = {p} {c:?} {b:?}");
                    if i % 2 == 0 {
                        g.analyze_into(lattice.view(), &mut kept).unwrap();
                    } else {
                        let input = g.stream().clone_htod(lattice.as_slice().unwrap()).unwrap();
                        g.queue_table::<u8, _>(&input, h, w).unwrap();
                        g.finish_table_into(&mut kept).unwrap();
                    }
                    assert!(kept == want, "{what}: {}", first_difference(&kept, &want));
                    cases += 1;
                }
            }
        }
    }
    eprintln!("{cases} cases");
}

#[test]
#[ignore = "needs a CUDA device"]
fn analyzer_backends_give_equal_tables() {
    let mut r = rng(3);
    for c in CONNECTIVITIES {
        for b in BOUNDARIES {
            for measures in [Measures::Shape, Measures::All] {
                let lattice = random_lattice(97, 130, 0.6, &mut r);
                let mut cpu = Analyzer::new(c, b).measures(measures);
                let mut gpu = Analyzer::new(c, b)
                    .measures(measures)
                    .backend(Backend::Cuda { device: 0 })
                    .unwrap();
                assert_eq!(gpu.backend_name(), "cuda:0");
                let (want, wl) = cpu.analyze_labeled(lattice.view()).unwrap();
                let (got, gl) = gpu.analyze_labeled(lattice.view()).unwrap();
                assert!(
                    got == want,
                    "{c:?} {b:?} {measures:?}: {}",
                    first_difference(&got, &want)
                );
                assert_eq!(gl.array(), wl.array());
                assert!(gpu.analyze(lattice.view()).unwrap() == want);
                // Into a kept table of another lattice.
                let mut kept = cpu
                    .analyze(lattice.slice(ndarray::s![..40, ..]).view())
                    .unwrap();
                gpu.analyze_into(lattice.view(), &mut kept).unwrap();
                assert!(kept == want, "{c:?} {b:?} {measures:?}: analyze_into");
                // Segments: GPU labels, CPU measures.
                let mut cpu = Analyzer::new(c, b).segments(true).measures(measures);
                let mut gpu = Analyzer::new(c, b)
                    .segments(true)
                    .measures(measures)
                    .backend(Backend::Cuda { device: 0 })
                    .unwrap();
                assert!(
                    cpu.analyze(lattice.view()).unwrap() == gpu.analyze(lattice.view()).unwrap()
                );
            }
        }
    }
}

/// Concentric square rings, alternately occupied and empty: a tree of holes `n / 4` deep.
fn rings(n: usize) -> Array2<u8> {
    Array2::from_shape_fn((n, n), |(y, x)| {
        u8::from(y.min(x).min(n - 1 - y).min(n - 1 - x) % 2 == 0)
    })
}

/// The GPU's `Measures::All` table (open boundaries) and labels equal the CPU's.
fn check_all(gpus: &mut Gpus, lattice: &Array2<u8>, c: Connectivity) {
    let b = Boundary::Open;
    let what = format!("{:?} {c:?}", lattice.dim());
    let mut cpu = Analyzer::new(c, b);
    let (want, want_labels) = cpu.analyze_labeled(lattice.view()).unwrap();
    assert!(want.filled_area.is_some());
    let g = gpus.get(c, b);
    let got = g.analyze_all(lattice.view()).unwrap();
    assert!(got == want, "{what}: {}", first_difference(&got, &want));
    let (got, labels) = g.analyze_all_labeled(lattice.view()).unwrap();
    assert!(
        got == want,
        "{what} (labeled): {}",
        first_difference(&got, &want)
    );
    assert_eq!(labels.array(), want_labels.array(), "{what}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn all_measures_match_the_cpu() {
    let mut gpus = Gpus(Vec::new());
    let mut r = rng(17);
    let mut cases = 0;
    for &(h, w) in &SHAPES {
        for p in DENSITIES {
            let lattice = random_lattice(h, w, p, &mut r);
            for c in CONNECTIVITIES {
                check_all(&mut gpus, &lattice, c);
                cases += 1;
            }
        }
    }
    // Deep trees of holes, shapes with holes in holes, tiles crowded with components, and
    // lattices large enough for many tiles and warps' strips.
    let mut lattices = vec![rings(1), rings(2), rings(9), rings(64), rings(301)];
    lattices.push(spiral(41));
    lattices.push(stripes(33, 40, true));
    lattices.push(checkerboard(32, 32));
    lattices.push(checkerboard(33, 31));
    lattices.push(Array2::from_shape_fn((70, 2100), |(y, x)| {
        u8::from(x % 2 == 0 && y % 3 != 2)
    }));
    for &(h, w) in &[(1024, 1024), (1000, 1531), (2048, 333)] {
        for p in [0.4, 0.5927, 0.75] {
            lattices.push(random_lattice(h, w, p, &mut r));
        }
    }
    for l in &lattices {
        for c in CONNECTIVITIES {
            check_all(&mut gpus, l, c);
            cases += 1;
        }
    }
    eprintln!("{cases} cases");
    // Wider site types; a periodic analyzer refuses (the front end measures those on the CPU).
    let l16 = random_lattice(300, 301, 0.6, &mut r).mapv(|v| u16::from(v) * 300);
    let want = Analyzer::new(Connectivity::Four, Boundary::Open)
        .analyze(l16.view())
        .unwrap();
    let got = gpus
        .get(Connectivity::Four, Boundary::Open)
        .analyze_all(l16.view())
        .unwrap();
    assert!(got == want, "u16: {}", first_difference(&got, &want));
    let err = gpus
        .get(Connectivity::Four, Boundary::Periodic)
        .analyze_all(l16.view())
        .unwrap_err();
    assert!(
        matches!(err, clusterlab::Error::InvalidArgument(_)),
        "{err}"
    );
}

/// When the device cannot hold the two analyses of a `Measures::All` table, `CudaAnalyzer` says
/// so with a typed error and `Analyzer` labels on the GPU and measures on the CPU instead (the
/// way that needs less device memory): the same table.
#[test]
#[ignore = "needs a CUDA device"]
fn all_measures_fall_back_when_the_device_is_full() {
    use clusterlab::cuda::cudarc::driver::CudaContext;
    let (c, b) = (Connectivity::Four, Boundary::Open);
    let lattice = random_lattice(8192, 8192, 0.5927, &mut rng(23));
    let want = Analyzer::new(c, b).analyze(lattice.view()).unwrap();
    let mut gpu = Analyzer::new(c, b)
        .backend(Backend::Cuda { device: 0 })
        .unwrap();
    // All of the device but 4.8 GB taken: the two analyses need about 49 bytes a site each
    // (6.8 GB here), the fallback the first one's buffers and a labeler's (about 4 GB).
    let ctx = CudaContext::new(0).unwrap();
    let (free, _) = ctx.mem_get_info().unwrap();
    let hog = ctx
        .default_stream()
        .alloc_zeros::<u8>(free.saturating_sub(4_800_000_000))
        .unwrap();
    let mut direct = CudaAnalyzer::new(0, c, b).unwrap();
    let err = direct.analyze_all(lattice.view()).unwrap_err();
    assert!(
        matches!(err, clusterlab::Error::OutOfDeviceMemory { .. }),
        "{err}"
    );
    drop(direct);
    let got = gpu.analyze(lattice.view()).unwrap();
    assert!(got == want, "fallback: {}", first_difference(&got, &want));
    // With the memory back, the device path again.
    drop(hog);
    let got = gpu.analyze(lattice.view()).unwrap();
    assert!(got == want, "device: {}", first_difference(&got, &want));
}

/// Without a device, the CUDA backend is an error and Auto falls back to the CPU.
#[test]
fn no_device_is_an_error_or_a_fallback() {
    let lattice = array![[1u8, 0], [1, 1]];
    match Analyzer::new(Connectivity::Four, Boundary::Open).backend(Backend::Cuda { device: 0 }) {
        Ok(mut a) => assert_eq!(a.analyze(lattice.view()).unwrap().count(), 1),
        Err(e) => assert!(matches!(e, clusterlab::Error::CudaUnavailable(_)), "{e}"),
    }
    let mut a = Analyzer::new(Connectivity::Four, Boundary::Open)
        .backend(Backend::Auto)
        .unwrap();
    let t = a.analyze(lattice.view()).unwrap();
    assert_eq!(t.size.to_vec(), vec![3]);
}
