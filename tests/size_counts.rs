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
