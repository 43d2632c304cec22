//! `size_counts_into` (per-timestep observables without a table) against the cluster table of
//! `Analyzer`, which tests/analysis.rs checks against an independent oracle: the same `n_s`,
//! percolating clusters and statistics, exactly, on many shapes and densities, both
//! connectivities, every boundary, segments, and 1 to 4 strips. One test body runs on every
//! backend; the GPU's is `#[ignore = "needs a CUDA device"]` (run it with
//! `cargo test --test size_counts -- --ignored`).

mod common;

use clusterlab::{
    Analyzer, Backend, Boundary, ClusterTable, Connectivity, Labeler, Measures, Parallelism,
    PercolatingCluster, SizeCounts,
};
use common::{
    checkerboard, granular_lattice, random_lattice, rng, segment_lattice, spiral, stripes,
};
use ndarray::{s, Array2, ArrayView2};
use rand::rngs::StdRng;
use rand::RngExt;
use std::collections::BTreeMap;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
const CONNECTIVITIES: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

/// What the table says the counts must be.
fn expected(table: &ClusterTable) -> SizeCounts {
    let mut hist = BTreeMap::new();
    for &s in table.size.iter() {
        *hist.entry(s).or_insert(0u64) += 1;
    }
    let mut percolating: Vec<PercolatingCluster> = (0..table.count())
        .filter(|&i| table.wraps_x[i] || table.wraps_y[i] || table.spans_x[i] || table.spans_y[i])
        .map(|i| PercolatingCluster {
            size: table.size[i],
            wraps_x: table.wraps_x[i],
            wraps_y: table.wraps_y[i],
            spans_x: table.spans_x[i],
            spans_y: table.spans_y[i],
        })
        .collect();
    percolating.sort_unstable();
    SizeCounts {
        shape: table.shape,
        counts: hist.into_iter().collect(),
        percolating,
    }
}

/// The counts, and every statistic read off them, equal the table's.
fn check_against(table: &ClusterTable, got: &SizeCounts, what: &str) {
    assert_eq!(got, &expected(table), "{what}");
    let stats = table.stats();
    assert_eq!(got.clusters(), stats.clusters, "{what}");
    assert_eq!(got.occupied(), stats.occupied, "{what}");
    assert_eq!(got.largest(), stats.largest, "{what}");
    let (m, e) = (got.mean_size(), stats.mean_size);
    assert!(m == e || (m.is_nan() && e.is_nan()), "{what}: S {m} vs {e}");
    assert_eq!(got.p_infinity(), stats.p_infinity, "{what}");
    assert_eq!(
        (got.wraps_x(), got.wraps_y(), got.wraps_both()),
        (stats.wraps_x, stats.wraps_y, stats.wraps_both),
        "{what}"
    );
    assert_eq!(
        (got.spans_x(), got.spans_y()),
        (stats.spans_x, stats.spans_y),
        "{what}"
    );
    assert_eq!(
        got.size_distribution(true),
        table.size_distribution(true),
        "{what}"
    );
    assert_eq!(
        got.size_distribution(false),
        table.size_distribution(false),
        "{what}"
    );
}

/// Lattices of many shapes: random at several densities (fine and grainy), and the structured
/// cases (checkerboard, spiral, stripes, full, empty).
fn lattices() -> Vec<(String, Array2<u8>)> {
    let mut r = rng(22);
    let mut out = Vec::new();
    let shapes = [
        (1, 1),
        (1, 7),
        (9, 1),
        (2, 2),
        (3, 65),
        (64, 64),
        (17, 130),
        (100, 37),
        (129, 200),
    ];
    for (h, w) in shapes {
        for p in [0.1, 0.4, 0.5927, 0.7, 0.95] {
            out.push((format!("{h}x{w} p={p}"), random_lattice(h, w, p, &mut r)));
        }
        out.push((
            format!("{h}x{w} grains"),
            granular_lattice(h, w, 3, 0.55, &mut r),
        ));
        out.push((format!("{h}x{w} checkerboard"), checkerboard(h, w)));
        out.push((format!("{h}x{w} rows"), stripes(h, w, true)));
        out.push((format!("{h}x{w} columns"), stripes(h, w, false)));
        out.push((format!("{h}x{w} full"), Array2::ones((h, w))));
        out.push((format!("{h}x{w} empty"), Array2::zeros((h, w))));
    }
    out.push(("spiral 41".into(), spiral(41)));
    out.push(("0x5".into(), Array2::zeros((0, 5))));
    out.push(("tile-interior blobs".into(), tile_interior_blobs(&mut r)));
    out.push(("band-interior runs".into(), band_interior_runs()));
    out
}

/// Clusters inside one tile that are a single run of a two-row band (the 8-connected GPU tile
/// pass's nodes): of 1200, 1024 and 1026 sites (one band run beyond the histogram's range, whose
/// size is the sum of its two rows'), one whose first row holds two sites only, and a block
/// across two bands. With 4-connectivity each is two or more runs.
fn band_interior_runs() -> Array2<u8> {
    let mut a = Array2::<u8>::zeros((40, 1100));
    a.slice_mut(s![4..6, 200..800]).fill(1);
    a.slice_mut(s![8..10, 100..612]).fill(1);
    a.slice_mut(s![12..14, 100..613]).fill(1);
    a.slice_mut(s![17..18, 50..900]).fill(1);
    a[[16, 60]] = 1;
    a[[16, 700]] = 1;
    a.slice_mut(s![21..23, 300..900]).fill(1);
    a
}

/// Clusters that lie inside one GPU tile (32 rows × 1024 columns) without touching its edges,
/// of sizes on both sides of the GPU histogram's exact range (1024): the bit-runs tile pass
/// counts such clusters itself up to 1024 sites and records the larger ones. Two tile columns,
/// sparse random sites in the third tile row.
fn tile_interior_blobs(r: &mut StdRng) -> Array2<u8> {
    let mut a = Array2::<u8>::zeros((70, 1100));
    // 26×41 = 1066, 16×64 = 1024 and 25×41 = 1025 sites; a run of 700; a ring (many runs, 92
    // sites); 11×93 = 1023 below them; 29×61 = 1769 in the second tile column.
    a.slice_mut(s![2..28, 10..51]).fill(1);
    a.slice_mut(s![2..18, 100..164]).fill(1);
    a.slice_mut(s![2..27, 200..241]).fill(1);
    a.slice_mut(s![29..30, 300..1000]).fill(1);
    a.slice_mut(s![1..25, 400..424]).fill(1);
    a.slice_mut(s![2..24, 401..423]).fill(0);
    a.slice_mut(s![40..51, 500..593]).fill(1);
    a.slice_mut(s![34..63, 1030..1091]).fill(1);
    for v in a.slice_mut(s![65.., ..]).iter_mut() {
        *v = u8::from(r.random::<f64>() < 0.3);
    }
    a
}

/// Compares `counts` (made by `count` with a connectivity and boundary) against the CPU table on
/// every lattice, boundary and connectivity.
fn every_case(
    mut count: impl FnMut(Connectivity, Boundary, ArrayView2<'_, u8>, &mut SizeCounts),
    what: &str,
) {
    // One buffer for every call: it must come out right whatever it held.
    let mut counts = SizeCounts::new();
    for (name, lattice) in lattices() {
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                let table = Analyzer::new(c, b)
                    .measures(Measures::Shape)
                    .analyze(lattice.view())
                    .unwrap();
                count(c, b, lattice.view(), &mut counts);
                check_against(&table, &counts, &format!("{what} {name} {c:?} {b:?}"));
            }
        }
    }
}

#[test]
fn cpu_counts_equal_the_table() {
    for parallelism in [
        Parallelism::Sequential,
        Parallelism::Threads(2),
        Parallelism::Threads(5),
    ] {
        every_case(
            |c, b, lattice, counts| {
                Labeler::new(c, b)
                    .parallelism(parallelism)
                    .size_counts_into(lattice, counts)
                    .unwrap()
            },
            &format!("cpu {parallelism:?}"),
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_counts_equal_the_table() {
    let mut labelers: BTreeMap<String, Labeler> = BTreeMap::new();
    every_case(
        |c, b, lattice, counts| {
            labelers
                .entry(format!("{c:?}{b:?}"))
                .or_insert_with(|| {
                    Labeler::new(c, b)
                        .backend(Backend::Cuda { device: 0 })
                        .expect("a CUDA device")
                })
                .size_counts_into(lattice, counts)
                .unwrap()
        },
        "cuda",
    );
}

/// Segments (same-value clusters), u8 to u32 sites, against the table in segment mode.
#[test]
fn cpu_counts_of_segments_equal_the_table() {
    let mut r = rng(7);
    let mut counts = SizeCounts::new();
    for (h, w) in [(1, 9), (13, 1), (40, 70), (150, 90)] {
        for k in [1, 2, 5] {
            let lattice = segment_lattice(h, w, 0.8, k, &mut r);
            for c in CONNECTIVITIES {
                for b in BOUNDARIES {
                    let table = Analyzer::new(c, b)
                        .segments(true)
                        .measures(Measures::Shape)
                        .analyze(lattice.view())
                        .unwrap();
                    for parallelism in [Parallelism::Sequential, Parallelism::Threads(3)] {
                        let what = format!("{h}x{w} k={k} {c:?} {b:?} {parallelism:?}");
                        let mut labeler =
                            Labeler::new(c, b).segments(true).parallelism(parallelism);
                        labeler
                            .size_counts_into(lattice.view(), &mut counts)
                            .unwrap();
                        check_against(&table, &counts, &what);
                        let small = lattice.mapv(|v| v as u16);
                        labeler.size_counts_into(small.view(), &mut counts).unwrap();
                        check_against(&table, &counts, &what);
                    }
                }
            }
        }
    }
}

/// Views that are not contiguous (transposed, strided) count the lattice they show, and the
/// `Analyzer` front end gives what the `Labeler` gives.
#[test]
fn views_and_the_analyzer_front_end() {
    let mut r = rng(3);
    let lattice = random_lattice(90, 70, 0.6, &mut r);
    for b in BOUNDARIES {
        let mut counts = SizeCounts::new();
        let mut direct = SizeCounts::new();
        let t = lattice.t();
        Labeler::new(Connectivity::Four, b)
            .size_counts_into(t, &mut counts)
            .unwrap();
        Labeler::new(Connectivity::Four, b)
            .size_counts_into(t.as_standard_layout().view(), &mut direct)
            .unwrap();
        assert_eq!(counts, direct, "{b:?}");
        let mut via_analyzer = SizeCounts::new();
        Analyzer::new(Connectivity::Four, b)
            .size_counts_into(t, &mut via_analyzer)
            .unwrap();
        assert_eq!(via_analyzer, direct, "{b:?}");
    }
}

/// A seeded sweep of many random lattices at p_c on the torus, larger than the shapes above
/// (several strips with real seams), against the table.
#[test]
fn seeded_sweep_at_the_threshold() {
    let mut counts = SizeCounts::new();
    for seed in 0..12u32 {
        let (h, w) = (200 + 13 * seed as usize, 300 - 7 * seed as usize);
        let lattice = clusterlab::generate::percolation(h, w, 0.5927, 1, seed);
        for c in CONNECTIVITIES {
            let b = BOUNDARIES[seed as usize % 4];
            let table = Analyzer::new(c, b).analyze(lattice.view()).unwrap();
            let threads = Parallelism::Threads(1 + seed as usize % 4);
            Labeler::new(c, b)
                .parallelism(threads)
                .size_counts_into(lattice.view(), &mut counts)
                .unwrap();
            check_against(&table, &counts, &format!("seed {seed} {c:?} {b:?}"));
        }
    }
}

/// Wrapping by winding, not by extent: a spiral that reaches far across the lattice.
#[test]
fn winding_not_extent() {
    let lattice = spiral(31);
    let mut counts = SizeCounts::new();
    Labeler::new(Connectivity::Four, Boundary::Periodic)
        .size_counts_into(lattice.view(), &mut counts)
        .unwrap();
    let table = Analyzer::new(Connectivity::Four, Boundary::Periodic)
        .analyze(lattice.view())
        .unwrap();
    check_against(&table, &counts, "spiral");
}

/// The bound that lets the GPU's seam join skip its fallback data below 32768 sites a side
/// (`seams_cannot_overflow`, src/cuda/analysis/counts.rs): joining a torus's edge pieces by a
/// union-find with shifts, links taken in random order, no node's shift relative to its root
/// ever exceeds h periods in x or w in y. A model of that join, not the kernel: the pieces are
/// the open lattice's clusters, the links the wrap neighbours, as `Joined::join_edges` takes
/// them. Random lattices around p_c and winding stripes (the shifts' worst case), both
/// connectivities.
#[test]
fn seam_join_shifts_are_bounded_by_the_side() {
    let mut r = rng(20261207);
    let mut cases: Vec<Array2<u8>> = Vec::new();
    for (h, w) in [(1, 7), (7, 1), (2, 2), (5, 9), (16, 16), (40, 23)] {
        for p in [0.3, 0.5927, 0.7, 0.9, 1.0] {
            for _ in 0..4 {
                cases.push(random_lattice(h, w, p, &mut r));
            }
        }
    }
    for (h, w) in [(40, 40), (64, 20), (20, 64)] {
        for k in 1..6 {
            for width in 1..3 {
                cases.push(Array2::from_shape_fn((h, w), |(y, x)| {
                    u8::from((x + k * (h - y)) % (2 * width + 1) < width)
                }));
            }
        }
    }
    let mut reached = (0f64, 0f64);
    for c in CONNECTIVITIES {
        for l in &cases {
            let (h, w) = l.dim();
            let labels = Labeler::new(c, Boundary::Open).label(l.view()).unwrap();
            let lab = labels.array();
            // (y, x) of a wrap link's two ends and the period it crosses.
            let mut links = Vec::new();
            for y in 0..h {
                links.push(((y, w - 1), (y, 0), (1i64, 0i64)));
                if c == Connectivity::Eight {
                    links.push(((y, w - 1), ((y + 1) % h, 0), (1, i64::from(y + 1 == h))));
                    links.push(((y, 0), ((y + 1) % h, w - 1), (-1, i64::from(y + 1 == h))));
                }
            }
            for x in 0..w {
                links.push(((h - 1, x), (0, x), (0, 1)));
                if c == Connectivity::Eight && x + 1 < w {
                    links.push(((h - 1, x), (0, x + 1), (0, 1)));
                    links.push(((h - 1, x + 1), (0, x), (0, 1)));
                }
            }
            for i in (1..links.len()).rev() {
                links.swap(i, r.random_range(0..=i));
            }
            // Node = piece label; word = (parent, shift relative to the parent).
            let mut parent: Vec<(usize, i64, i64)> =
                (0..=labels.count()).map(|i| (i, 0, 0)).collect();
            let mut most = (0i64, 0i64);
            let mut find = |parent: &mut Vec<(usize, i64, i64)>, a: usize| {
                let (mut n, mut sx, mut sy) = (a, 0, 0);
                while parent[n].0 != n {
                    sx += parent[n].1;
                    sy += parent[n].2;
                    n = parent[n].0;
                    most = (most.0.max(sx.abs()), most.1.max(sy.abs()));
                }
                parent[a] = (n, sx, sy);
                (n, sx, sy)
            };
            // A loop whose shifts do not cancel makes its cluster wrap (by piece, then root).
            let mut wraps = vec![(false, false); parent.len()];
            for (a, b, (kx, ky)) in links {
                let (la, lb) = (lab[a] as usize, lab[b] as usize);
                if la == 0 || lb == 0 {
                    continue;
                }
                let (ra, ax, ay) = find(&mut parent, la);
                let (rb, bx, by) = find(&mut parent, lb);
                // b's piece sits one period (kx, ky) beyond a's: rb relative to ra.
                let (dx, dy) = (ax + kx - bx, ay + ky - by);
                if ra == rb {
                    wraps[ra].0 |= dx != 0;
                    wraps[ra].1 |= dy != 0;
                } else if rb > ra {
                    parent[rb] = (ra, dx, dy);
                } else {
                    parent[ra] = (rb, -dx, -dy);
                }
            }
            // The model is a seam join: its clusters' sizes and wrap flags are the CPU's.
            let mut joined = vec![(0u64, false, false); parent.len()];
            for v in lab.iter().filter(|&&v| v != 0) {
                let (root, _, _) = find(&mut parent, *v as usize);
                joined[root].0 += 1;
            }
            for (n, &(wx, wy)) in wraps.iter().enumerate().skip(1) {
                let (root, _, _) = find(&mut parent, n);
                joined[root].1 |= wx;
                joined[root].2 |= wy;
            }
            let mut got: Vec<(u64, bool, bool)> = joined
                .into_iter()
                .filter(|&(s, x, y)| s > 0 && (x || y))
                .collect();
            got.sort_unstable();
            let mut want = SizeCounts::new();
            Labeler::new(c, Boundary::Periodic)
                .size_counts_into(l.view(), &mut want)
                .unwrap();
            let mut want: Vec<(u64, bool, bool)> = want
                .percolating
                .iter()
                .filter(|p| p.wraps_x || p.wraps_y)
                .map(|p| (p.size, p.wraps_x, p.wraps_y))
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "{h}×{w} {c}: the model's wrapping clusters");
            assert!(
                most.0 <= h as i64 && most.1 <= w as i64,
                "{h}×{w} {c}: {most:?}"
            );
            reached.0 = reached.0.max(most.0 as f64 / h as f64);
            reached.1 = reached.1.max(most.1 as f64 / w as f64);
        }
    }
    // The bound is not vacuous: some lattice's shifts come close to it.
    assert!(reached.0 >= 0.5 && reached.1 >= 0.5, "{reached:?}");
    eprintln!("largest |x shift| / h, |y shift| / w: {reached:?}");
}
