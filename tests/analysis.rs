//! The cluster table against a naive oracle (`analysis_common`), hand-made cases, a physics check
//! of the wrapping probabilities, outputs and the `analyze` command.

mod analysis_common;

use analysis_common::{Oracle, Row};
use clusterlab::analysis::{columns, ColumnType, COLUMNS, CSV_HEADER, CSV_HEADER_SHAPE};
use clusterlab::generate::percolation;
use clusterlab::{
    analyze, label, Analyzer, Boundary, ClusterTable, Connectivity, Measures, Parallelism,
    Percolating,
};
use ndarray::{array, Array2};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::path::Path;
use std::process::Command;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNS: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// Compares every column of `t` with the oracle's rows.
fn compare(t: &ClusterTable, want: &[Row], what: &str) {
    assert_eq!(t.count(), want.len(), "{what}: cluster count");
    for (i, r) in want.iter().enumerate() {
        let got = t.row(i as u32 + 1).unwrap();
        let ctx = || format!("{what}: cluster {}\n got  {got:?}\n want {r:?}", i + 1);
        assert_eq!(got.size, r.size, "size {}", ctx());
        assert_eq!(
            (got.x_min, got.x_max, got.y_min, got.y_max),
            (r.x_min, r.x_max, r.y_min, r.y_max),
            "bbox {}",
            ctx()
        );
        assert!(close(got.centroid_x, r.centroid_x), "centroid_x {}", ctx());
        assert!(close(got.centroid_y, r.centroid_y), "centroid_y {}", ctx());
        assert!(
            close(got.gyration_radius, r.gyration_radius),
            "gyration {}",
            ctx()
        );
        assert_eq!(
            (got.wraps_x, got.wraps_y, got.spans_x, got.spans_y),
            (r.wraps_x, r.wraps_y, r.spans_x, r.spans_y),
            "flags {}",
            ctx()
        );
        if t.measures == Measures::All {
            assert_eq!(got.site_perimeter, Some(r.site_perimeter), "site {}", ctx());
            assert_eq!(got.bond_perimeter, Some(r.bond_perimeter), "bond {}", ctx());
            assert_eq!(got.hull_perimeter, Some(r.hull_perimeter), "hull {}", ctx());
            assert_eq!(got.filled_area, Some(r.filled_area), "filled {}", ctx());
        }
    }
}

/// Runs the analyzer (in `threads` threads) on `values` and checks it against the oracle.
fn check(values: &Array2<u32>, c: Connectivity, b: Boundary, segments: bool, threads: usize) {
    let want = Oracle::new(values.view(), c, b, segments).table();
    let what = format!(
        "{}x{} {c:?} {b:?} segments={segments} threads={threads}\n{values:?}",
        values.nrows(),
        values.ncols()
    );
    let mut an = Analyzer::new(c, b)
        .segments(segments)
        .parallelism(Parallelism::Threads(threads));
    let (table, labels) = if segments {
        an.analyze_labeled(values.view()).unwrap()
    } else {
        an.analyze_labeled(values.mapv(|v| u8::from(v != 0)).view())
            .unwrap()
    };
    compare(&table, &want, &what);
    let (oracle_labels, _) = Oracle::new(values.view(), c, b, segments).labels();
    assert_eq!(labels.array(), &oracle_labels, "labels {what}");
    // The shape-only table agrees on its columns.
    let mut shape = Analyzer::new(c, b)
        .segments(segments)
        .measures(Measures::Shape)
        .parallelism(Parallelism::Sequential);
    let t2 = shape.analyze(values.view()).unwrap();
    compare(&t2, &want, &format!("shape-only {what}"));
}

fn random(h: usize, w: usize, p: f64, k: u32, rng: &mut StdRng) -> Array2<u32> {
    Array2::from_shape_fn((h, w), |_| {
        if rng.random::<f64>() < p {
            rng.random_range(1..=k)
        } else {
            0
        }
    })
}

#[test]
fn random_lattices_match_the_oracle() {
    let mut rng = StdRng::seed_from_u64(2024);
    let shapes = [
        (1, 1),
        (1, 9),
        (9, 1),
        (2, 2),
        (2, 5),
        (3, 3),
        (5, 7),
        (8, 8),
        (13, 11),
        (17, 32),
        (33, 21),
    ];
    for &(h, w) in &shapes {
        for p in [0.2, 0.5, 0.6, 0.85] {
            let v = random(h, w, p, 1, &mut rng);
            for c in CONNS {
                for b in BOUNDARIES {
                    check(&v, c, b, false, 3);
                }
            }
        }
    }
}

#[test]
fn wider_lattices_and_many_strips() {
    let mut rng = StdRng::seed_from_u64(7);
    for &(h, w, p) in &[(40, 64, 0.59), (64, 31, 0.41), (48, 65, 0.7)] {
        let v = random(h, w, p, 1, &mut rng);
        for c in CONNS {
            for b in BOUNDARIES {
                check(&v, c, b, false, 5);
            }
        }
    }
}

#[test]
fn segments_match_the_oracle() {
    let mut rng = StdRng::seed_from_u64(99);
    for &(h, w) in &[(1, 1), (1, 7), (6, 1), (2, 3), (7, 9), (16, 16), (25, 19)] {
        for (p, k) in [(0.6, 2), (0.9, 3), (1.0, 2)] {
            let v = random(h, w, p, k, &mut rng);
            for c in CONNS {
                for b in BOUNDARIES {
                    check(&v, c, b, true, 2);
                }
            }
        }
    }
}

#[test]
fn thread_counts_agree() {
    let lattice = percolation(97, 70, 0.6, 1, 3);
    for c in CONNS {
        for b in BOUNDARIES {
            let run = |p| {
                Analyzer::new(c, b)
                    .parallelism(p)
                    .analyze(lattice.view())
                    .unwrap()
            };
            let one = run(Parallelism::Sequential);
            assert_eq!(one, run(Parallelism::Threads(7)), "{c:?} {b:?}");
            assert_eq!(one, run(Parallelism::Rayon), "{c:?} {b:?}");
        }
    }
}

fn u32s(a: &Array2<u8>) -> Array2<u32> {
    a.mapv(u32::from)
}

#[test]
fn straight_wrapping_strip() {
    let mut a = Array2::<u8>::zeros((5, 6));
    a.row_mut(2).fill(1);
    let t = analyze(a.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    let r = t.row(1).unwrap();
    assert!(r.wraps_x && !r.wraps_y);
    assert_eq!((r.x_min, r.x_max), (0, 5), "lattice coordinates along x");
    assert_eq!((r.site_perimeter, r.bond_perimeter), (Some(12), Some(12)));
    // The empty band wraps in x too: it is outside, nothing is enclosed.
    assert_eq!((r.hull_perimeter, r.filled_area), (Some(12), Some(6)));
    let s = t.stats();
    assert!(s.wraps_x && !s.wraps_y && s.wraps_either && !s.wraps_both);
    assert_eq!(s.p_infinity, 6.0 / 30.0);
    assert!(s.mean_size.is_nan());
    // A cylinder open in x: the same row spans instead.
    let t = analyze(a.view(), Connectivity::Four, Boundary::PeriodicY).unwrap();
    let r = t.row(1).unwrap();
    assert!(r.spans_x && !r.wraps_x && !r.wraps_y);
    for c in CONNS {
        for b in BOUNDARIES {
            check(&u32s(&a), c, b, false, 2);
        }
    }
}

#[test]
fn diagonal_winding_wraps_both() {
    // A staircase that closes on itself across both edges.
    let mut a = Array2::<u8>::zeros((4, 4));
    for y in 0..4 {
        a[[y, y]] = 1;
        a[[y, (y + 1) % 4]] = 1;
    }
    let t = analyze(a.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(t.count(), 1);
    assert!(t.wraps_x[0] && t.wraps_y[0]);
    assert!(t.stats().wraps_both);
    // Pure diagonal with 8-connectivity: winds (1, 1) only.
    let d = Array2::from_shape_fn((5, 5), |(y, x)| u8::from(x == y));
    let t = analyze(d.view(), Connectivity::Eight, Boundary::Periodic).unwrap();
    assert!(t.wraps_x[0] && t.wraps_y[0]);
    // With 4-connectivity its sites are separate and nothing wraps.
    let t = analyze(d.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(t.count(), 5);
    assert!(!t.stats().wraps_either);
    for c in CONNS {
        for b in BOUNDARIES {
            check(&u32s(&a), c, b, false, 1);
            check(&u32s(&d), c, b, false, 1);
        }
    }
}

#[test]
fn touching_both_edges_is_not_wrapping() {
    let u = array![
        [0u8, 0, 0, 0, 1, 1],
        [0, 0, 0, 0, 1, 0],
        [1, 0, 0, 0, 1, 0],
        [1, 1, 1, 1, 1, 0],
        [0, 0, 0, 0, 0, 0],
    ];
    let t = analyze(u.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(t.count(), 1);
    let r = t.row(1).unwrap();
    assert!(!r.wraps_x && !r.wraps_y, "{r:?}");
    // Full width in lattice coordinates, yet no loop winds.
    assert_eq!((r.x_min, r.x_max), (0, 5));
    let t = analyze(u.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert!(t.spans_x[0] && !t.spans_y[0]);
    for c in CONNS {
        for b in BOUNDARIES {
            check(&u32s(&u), c, b, false, 1);
        }
    }
}

#[test]
fn unwrapped_coordinates_cross_the_edge() {
    // A cluster split by the x edge: its first site is (0, 0), the rest is to its left.
    let a = array![[1u8, 0, 0, 1], [0, 0, 0, 1]];
    let t = analyze(a.view(), Connectivity::Four, Boundary::PeriodicX).unwrap();
    let r = t.row(1).unwrap();
    assert_eq!((r.x_min, r.x_max, r.y_min, r.y_max), (-1, 0, 0, 1));
    assert_eq!((r.centroid_x, r.centroid_y), (-2.0 / 3.0, 1.0 / 3.0));
    check(&u32s(&a), Connectivity::Four, Boundary::PeriodicX, false, 1);
}

#[test]
fn ring_around_a_hole_and_nested_rings() {
    let ring = |n: usize, a: &mut Array2<u8>, o: usize| {
        for i in 0..n {
            a[[o, o + i]] = 1;
            a[[o + n - 1, o + i]] = 1;
            a[[o + i, o]] = 1;
            a[[o + i, o + n - 1]] = 1;
        }
    };
    let mut a = Array2::<u8>::zeros((11, 11));
    ring(9, &mut a, 1); // outer ring, 9x9 box
    ring(5, &mut a, 3); // inner ring, 5x5 box
    a[[5, 5]] = 1; // a single site in the inner hole
    let t = analyze(a.view(), Connectivity::Four, Boundary::Open).unwrap();
    assert_eq!(t.count(), 3);
    let fa = t.filled_area.as_ref().unwrap();
    assert_eq!(fa.to_vec(), vec![81, 25, 1]);
    let hull = t.hull_perimeter.as_ref().unwrap();
    let site = t.site_perimeter.as_ref().unwrap();
    // Outer ring: 36 sites outside it, 24 inside; inner ring: 20 outside, 8 inside.
    assert_eq!(hull.to_vec(), vec![36, 20, 4]);
    assert_eq!(site.to_vec(), vec![36 + 24, 20 + 8, 4]);
    // On a torus the outer ring still encloses its inside (the empty frame wraps).
    let t = analyze(a.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(t.filled_area.as_ref().unwrap().to_vec(), vec![81, 25, 1]);
    for c in CONNS {
        for b in BOUNDARIES {
            check(&u32s(&a), c, b, false, 2);
        }
    }
}

#[test]
fn width_one_torus() {
    let a = array![[1u8], [1], [0], [1], [0]];
    let t = analyze(a.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert_eq!(t.count(), 2);
    assert!(t.wraps_x.iter().all(|&w| w));
    assert!(!t.wraps_y.iter().any(|&w| w));
    // A full column wraps in y as well.
    let full = Array2::<u8>::ones((3, 1));
    let t = analyze(full.view(), Connectivity::Four, Boundary::Periodic).unwrap();
    assert!(t.wraps_x[0] && t.wraps_y[0]);
    for c in CONNS {
        for b in BOUNDARIES {
            check(&u32s(&a), c, b, false, 1);
            check(&u32s(&a.t().to_owned()), c, b, false, 1);
        }
    }
}

#[test]
fn empty_and_full_lattices() {
    for (h, w) in [(0, 0), (0, 5), (4, 0)] {
        let a = Array2::<u8>::zeros((h, w));
        let t = analyze(a.view(), Connectivity::Four, Boundary::Periodic).unwrap();
        assert_eq!(t.count(), 0);
        assert!(t.to_csv().starts_with(CSV_HEADER));
    }
    for c in CONNS {
        for b in BOUNDARIES {
            check(&Array2::zeros((4, 5)), c, b, false, 1);
            check(&Array2::ones((4, 5)), c, b, false, 1);
        }
    }
}

#[test]
fn strided_views_and_site_types() {
    let a = percolation(30, 40, 0.55, 1, 5);
    let t = a.t();
    let expected = analyze(
        t.as_standard_layout().view(),
        Connectivity::Four,
        Boundary::Periodic,
    )
    .unwrap();
    assert_eq!(
        analyze(t, Connectivity::Four, Boundary::Periodic).unwrap(),
        expected
    );
    let wide = a.mapv(|v| u16::from(v) * 300);
    let mut an = Analyzer::new(Connectivity::Four, Boundary::Open);
    assert_eq!(
        an.analyze(wide.view()).unwrap(),
        an.analyze(a.view()).unwrap()
    );
    // The labels the analyzer returns are the labeler's.
    let (_, labels) = an.analyze_labeled(a.view()).unwrap();
    assert_eq!(
        labels,
        label(a.view(), Connectivity::Four, Boundary::Open).unwrap()
    );
    assert_eq!(an.labels(), labels.array().view());
}

#[test]
fn stats_and_size_distribution() {
    let a = percolation(50, 50, 0.55, 1, 11);
    let t = analyze(a.view(), Connectivity::Four, Boundary::Open).unwrap();
    let s = t.stats();
    let sizes = t.size.to_vec();
    assert_eq!(s.clusters, sizes.len());
    assert_eq!(s.largest, *sizes.iter().max().unwrap());
    assert_eq!(s.occupied, a.iter().filter(|&&v| v != 0).count() as u64);
    let finite: Vec<u64> = (0..t.count())
        .filter(|&i| !t.row(i as u32 + 1).unwrap().percolates())
        .map(|i| sizes[i])
        .collect();
    let s1: u64 = finite.iter().sum();
    let s2: u64 = finite.iter().map(|s| s * s).sum();
    assert!(close(s.mean_size, s2 as f64 / s1 as f64));
    // S from n_s, with the percolating clusters left out.
    let ns = t.size_distribution(true);
    let num: f64 = ns.iter().map(|&(s, n)| (s * s) as f64 * n).sum();
    let den: f64 = ns.iter().map(|&(s, n)| s as f64 * n).sum();
    assert!(close(num / den, s.mean_size));
    let total: f64 = t
        .size_distribution(false)
        .iter()
        .map(|&(s, n)| s as f64 * n)
        .sum();
    assert!(close(total, s.occupied as f64 / 2500.0));
    let x_only = t.stats_with(Percolating::X);
    assert!(x_only.percolating <= s.percolating);
}

#[test]
fn csv_and_hdf5_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let a = percolation(20, 30, 0.6, 1, 4);
    let mut an = Analyzer::new(Connectivity::Eight, Boundary::Periodic);
    let (t, labels) = an.analyze_labeled(a.view()).unwrap();
    let csv = dir.path().join("t.csv");
    t.write_csv(&csv).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(CSV_HEADER));
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    let r = t.row(1).unwrap();
    assert_eq!(first[0], "1");
    assert_eq!(first[1], r.size.to_string());
    assert_eq!(first[6].parse::<f64>().unwrap(), r.centroid_x);
    assert_eq!(first[13], if r.wraps_x { "1" } else { "0" });
    assert_eq!(text.lines().count(), t.count() + 1);

    let h5 = dir.path().join("t.h5");
    let _guard = hdf5_in_process();
    let lattice = clusterlab::io::Lattice::U8(a.clone());
    t.write_hdf5_with(&h5, Some(&labels), Some(&lattice))
        .unwrap();
    let f = hdf5::File::open(&h5).unwrap_or_else(|e| panic!("open {}: {e}", h5.display()));
    let g = f.group("clusters").unwrap();
    let size: Vec<u64> = g.dataset("size").unwrap().read_raw().unwrap();
    assert_eq!(size, t.size.to_vec());
    let fa: Vec<u64> = g.dataset("filled_area").unwrap().read_raw().unwrap();
    assert_eq!(fa, t.filled_area.as_ref().unwrap().to_vec());
    let wx: Vec<u8> = g.dataset("wraps_x").unwrap().read_raw().unwrap();
    assert_eq!(wx, t.wraps_x.mapv(u8::from).to_vec());
    let count: u64 = g.attr("count").unwrap().read_scalar().unwrap();
    assert_eq!(count as usize, t.count());
    let shape: Vec<u64> = g.attr("shape").unwrap().read_raw().unwrap();
    assert_eq!(shape, vec![20, 30]);
    let conn: u32 = g.attr("connectivity").unwrap().read_scalar().unwrap();
    assert_eq!(conn, 8);
    let l: Array2<u32> = f.dataset("labels").unwrap().read_2d().unwrap();
    assert_eq!(&l, labels.array());
    let back: Array2<u8> = f.dataset("lattice").unwrap().read_2d().unwrap();
    assert_eq!(back, a);
    drop(f);

    // Shape-only tables leave the perimeter columns out.
    let shape_only = Analyzer::new(Connectivity::Four, Boundary::Open)
        .measures(Measures::Shape)
        .analyze(a.view())
        .unwrap();
    assert!(shape_only.to_csv().starts_with(CSV_HEADER_SHAPE));
    // A failed write leaves nothing behind.
    let missing = dir.path().join("no/such/folder/t.csv");
    assert!(t.write_csv(&missing).is_err());
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 2);
}

/// Every output column, found by its registry name, against the oracle: the CSV cells of every
/// row and the HDF5 datasets (their presence, type and length), for both kinds of table.
#[test]
fn outputs_follow_the_column_registry() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(17);
    let values = random(9, 11, 0.55, 1, &mut rng);
    let occ = values.mapv(|v| u8::from(v != 0));
    for b in BOUNDARIES {
        let want = Oracle::new(values.view(), Connectivity::Four, b, false).table();
        for m in [Measures::All, Measures::Shape] {
            let t = Analyzer::new(Connectivity::Four, b)
                .measures(m)
                .analyze(occ.view())
                .unwrap();
            let csv = t.to_csv();
            let mut lines = csv.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            let names: Vec<&str> = columns(m).map(|c| c.name).collect();
            assert_eq!(header, names, "{b:?} {m:?}");
            for (i, line) in lines.enumerate() {
                let cells: Vec<&str> = line.split(',').collect();
                assert_eq!(cells.len(), names.len());
                for (name, cell) in names.iter().zip(cells) {
                    let got: f64 = cell.parse().unwrap();
                    let w = want[i].column(name, i as u32 + 1).unwrap();
                    assert!(close(got, w), "{b:?} {m:?} row {i} {name}: {got} vs {w}");
                }
            }
            let h5 = dir.path().join("t.h5");
            let _guard = hdf5_in_process();
            t.write_hdf5(&h5).unwrap();
            let f = hdf5::File::open(&h5).unwrap();
            let g = f.group("clusters").unwrap();
            assert_eq!(g.member_names().unwrap().len(), names.len());
            for c in COLUMNS {
                let ds = g.dataset(c.name);
                assert_eq!(ds.is_ok(), c.in_table(m), "{} in a {m:?} table", c.name);
                let Ok(ds) = ds else { continue };
                assert_eq!(ds.size(), t.count(), "{}", c.name);
                let size = ds.dtype().unwrap().size();
                let want_size = match c.dtype {
                    ColumnType::U32 => 4,
                    ColumnType::Flag => 1,
                    _ => 8,
                };
                assert_eq!(size, want_size, "{}", c.name);
            }
        }
    }
}

#[test]
fn errors_are_typed() {
    let a = Array2::<u8>::zeros((3, 3));
    let err = Analyzer::new(Connectivity::Four, Boundary::Open)
        .parallelism(Parallelism::Threads(0))
        .analyze(a.view())
        .unwrap_err();
    assert!(
        matches!(err, clusterlab::Error::InvalidArgument(_)),
        "{err}"
    );
}

/// Newman & Ziff (2001), Pinson (1994): at p_c on the square lattice (site, 4-connectivity),
/// a torus has a cluster wrapping horizontally with probability 0.5210583 and one wrapping either
/// way with probability 0.6904737 (L → ∞). At L = 64 the finite-size corrections are far below
/// the statistical error of 400 samples (their corrections fall off as L^-2 or faster; at L = 64
/// they are of order 1e-3, against a standard error of about 0.025), so each estimate must fall
/// within 4 standard errors of the limit. The seeds are fixed: the check is deterministic, but
/// its bounds are those of the statistics (a broken wrapping test, e.g. one that reads the
/// bounding box or misses windings, misses these by many standard errors).
#[test]
fn wrapping_probabilities_at_pc() {
    const PC: f64 = 0.592_746_050_8;
    const R_H: f64 = 0.521_058_3;
    const R_E: f64 = 0.690_473_7;
    let (l, n) = (64, 400);
    let mut an = Analyzer::new(Connectivity::Four, Boundary::Periodic).measures(Measures::Shape);
    let (mut h, mut e) = (0u32, 0u32);
    for seed in 0..n {
        let lattice = percolation(l, l, PC, 1, 1000 + seed);
        let s = an.analyze(lattice.view()).unwrap().stats();
        h += u32::from(s.wraps_x);
        e += u32::from(s.wraps_either);
    }
    for (name, k, want) in [("horizontal", h, R_H), ("either", e, R_E)] {
        let est = f64::from(k) / f64::from(n);
        let se = (want * (1.0 - want) / f64::from(n)).sqrt();
        let z = (est - want) / se;
        assert!(
            z.abs() < 4.0,
            "{name}: {est:.4} vs {want} (SE {se:.4}, z = {z:.2})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The command line

/// Children are spawned while no test of this binary has an HDF5 file open in-process. The
/// crate marks its HDF5 descriptors close-on-exec (`io::hdf5_fd`), but HDF5 takes its lock some
/// 50–170 µs before returning the file; a child forked in that window keeps the lock until it
/// exits, and the test's reopen fails with EAGAIN (about one run in 25 without this guard).
static FORK_GUARD: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Holds off spawning for as long as the guard lives (see [`FORK_GUARD`]).
fn hdf5_in_process() -> std::sync::RwLockReadGuard<'static, ()> {
    FORK_GUARD.read().unwrap_or_else(|e| e.into_inner())
}

fn clusterlab(args: &[&str]) -> std::process::Output {
    let _no_hdf5_open = FORK_GUARD.write().unwrap_or_else(|e| e.into_inner());
    Command::new(env!("CARGO_BIN_EXE_clusterlab"))
        .args(args)
        .output()
        .expect("run clusterlab")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn cli_analyze_writes_csv_and_hdf5() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    let lattice = percolation(40, 50, 0.6, 1, 8);
    ndarray_npy::write_npy(&input, &lattice).unwrap();
    let expected = Analyzer::new(Connectivity::Four, Boundary::Periodic)
        .analyze(lattice.view())
        .unwrap();

    let csv = dir.path().join("clusters.csv");
    let out = clusterlab(&[
        "analyze",
        s(&input),
        "--output",
        s(&csv),
        "--boundary",
        "periodic",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("clusters   {}", expected.count())),
        "{text}"
    );
    assert!(text.contains("P∞"), "{text}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), expected.to_csv());

    let h5 = dir.path().join("clusters.h5");
    let out = clusterlab(&[
        "analyze",
        s(&input),
        "-o",
        s(&h5),
        "--connectivity",
        "8",
        "--boundary",
        "periodic-x",
        "--quiet",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());
    let f = hdf5::File::open(&h5).unwrap();
    let size: Vec<u64> = f.dataset("clusters/size").unwrap().read_raw().unwrap();
    let want = Analyzer::new(Connectivity::Eight, Boundary::PeriodicX)
        .analyze(lattice.view())
        .unwrap();
    assert_eq!(size, want.size.to_vec());
    assert!(f.dataset("labels").is_ok() && f.dataset("lattice").is_ok());
    drop(f);

    let bare = dir.path().join("bare.h5");
    let out = clusterlab(&["analyze", s(&input), "-o", s(&bare), "--no-labels", "-q"]);
    assert!(out.status.success(), "{out:?}");
    let f = hdf5::File::open(&bare).unwrap();
    assert!(f.dataset("labels").is_err());
    assert!(f.dataset("clusters/hull_perimeter").is_ok());
}

#[test]
fn cli_analyze_segments_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("seg.npy");
    let image = array![[1u16, 1, 2], [0, 2, 2], [3, 0, 2]];
    ndarray_npy::write_npy(&input, &image).unwrap();
    let out = clusterlab(&["analyze", s(&input), "--segments"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("clusters   3"));

    // Unsupported output extension: refused before any work, nothing written.
    let bad = dir.path().join("t.txt");
    let out = clusterlab(&["analyze", s(&input), "-o", s(&bad)]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error:"));
    assert!(!bad.exists());
    // Missing input.
    let out = clusterlab(&["analyze", s(&dir.path().join("nope.npy"))]);
    assert!(!out.status.success());
}

/// `measure` on labels made elsewhere: on an occupancy lattice's own labels it gives the table
/// of `analyze` (clusters of different labels never touch there, so segment mode's "outside" is
/// the empty sites); renumbering the labels permutes the rows; a label in two pieces, or labels
/// with a gap, are refused by name.
#[test]
fn measure_takes_labels_made_elsewhere() {
    use clusterlab::{label, measure, Error};
    let mut rng = StdRng::seed_from_u64(77);
    for (c, b) in [
        (Connectivity::Four, Boundary::Open),
        (Connectivity::Eight, Boundary::Periodic),
        (Connectivity::Four, Boundary::PeriodicX),
    ] {
        let lattice = Array2::from_shape_fn((41, 37), |_| u8::from(rng.random::<f64>() < 0.55));
        let want = analyze(lattice.view(), c, b).unwrap();
        let labels = label(lattice.view(), c, b).unwrap();
        let mut got = measure(labels.array().view(), c, b).unwrap();
        assert!(got.segments);
        got.segments = false;
        assert_eq!(got, want, "{c:?} {b:?}");

        // Labels renumbered in reverse: row i of the table is label i + 1.
        let n = labels.count() as u32;
        let reversed = labels.array().mapv(|l| if l == 0 { 0 } else { n + 1 - l });
        let table = measure(reversed.view(), c, b).unwrap();
        for i in 0..n as usize {
            assert_eq!(table.size[i], want.size[n as usize - 1 - i]);
            assert_eq!(table.x_min[i], want.x_min[n as usize - 1 - i]);
            assert_eq!(
                table.filled_area.as_ref().unwrap()[i],
                want.filled_area.as_ref().unwrap()[n as usize - 1 - i]
            );
        }
    }
    let split = ndarray::array![[1u32, 0, 1], [0, 0, 0], [2, 2, 0]];
    let e = measure(split.view(), Connectivity::Four, Boundary::Open).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_))
            && e.to_string().contains("label 1 is not connected"),
        "{e}"
    );
    let gap = ndarray::array![[1u32, 0, 3]];
    let e = measure(gap.view(), Connectivity::Four, Boundary::Open).unwrap_err();
    assert!(e.to_string().contains("without gaps"), "{e}");
}

/// Tori with more than 2^16 pieces: the parallel numbering of the joined pieces (threads) gives
/// the table and labels of the serial one (one thread), every boundary and connectivity.
#[test]
fn many_pieces_on_a_torus_number_alike_in_parallel() {
    let lattice = percolation(1700, 1600, 0.5, 1, 17);
    for conn in [Connectivity::Four, Connectivity::Eight] {
        for boundary in [Boundary::Periodic, Boundary::PeriodicX, Boundary::PeriodicY] {
            let run = |p: Parallelism| {
                Analyzer::new(conn, boundary)
                    .measures(Measures::Shape)
                    .parallelism(p)
                    .analyze_labeled(lattice.view())
                    .unwrap()
            };
            let (t1, l1) = run(Parallelism::Sequential);
            let (t3, l3) = run(Parallelism::Threads(3));
            assert!(
                t1.count() > 1 << 16 || conn == Connectivity::Eight,
                "{}",
                t1.count()
            );
            assert_eq!(t1, t3, "{conn} {boundary}");
            assert_eq!(l1.array(), l3.array(), "{conn} {boundary}");
        }
    }
}

/// One table kept across lattices of growing and shrinking cluster counts and passed back to
/// `analyze_into` each time equals the oracle's table, for both measure sets, segments and
/// threads; so does one whose columns were sliced or reversed in place in between.
#[test]
fn tables_analyzed_into_a_kept_table_match_the_oracle() {
    use ndarray::{s, Axis};
    let mut rng = StdRng::seed_from_u64(41);
    let shapes = [
        (13, 17),
        (1, 40),
        (33, 31),
        (0, 5),
        (40, 3),
        (5, 5),
        (33, 31),
    ];
    for c in [Connectivity::Four, Connectivity::Eight] {
        for b in [
            Boundary::Open,
            Boundary::Periodic,
            Boundary::PeriodicX,
            Boundary::PeriodicY,
        ] {
            for measures in [Measures::Shape, Measures::All] {
                for segments in [false, true] {
                    let mut an = Analyzer::new(c, b)
                        .segments(segments)
                        .measures(measures)
                        .parallelism(Parallelism::Threads(2));
                    let mut kept = an.analyze(Array2::<u32>::ones((2, 2)).view()).unwrap();
                    for (i, &(h, w)) in shapes.iter().enumerate() {
                        let values = random(h, w, 0.6, if segments { 3 } else { 1 }, &mut rng);
                        if i % 3 == 1 && kept.size.len() > 1 {
                            kept.size.slice_collapse(s![1..]);
                            kept.centroid_y.invert_axis(Axis(0));
                        }
                        an.analyze_into(values.view(), &mut kept).unwrap();
                        let want = Oracle::new(values.view(), c, b, segments).table();
                        let what = format!("{h}x{w} {c:?} {b:?} {measures:?} segments={segments}");
                        compare(&kept, &want, &what);
                        assert_eq!(kept.measures, measures, "{what}");
                        assert!(kept == an.analyze(values.view()).unwrap(), "{what}");
                    }
                }
            }
        }
    }
}
