//! Property tests: every algorithm and thread count labels random lattices exactly as the
//! independent oracle in `tests/common` does, and labels obey the partition invariants.

mod common;

use clusterlab::{
    label, label_segments, Algorithm, Boundary, Connectivity, Labeler, Labels, Parallelism,
    SiteValue,
};
use common::{oracle_of, same_partition, transposed_boundary};
use ndarray::{s, Array2, ArrayView2};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// Every algorithm/parallelism combination that is checked against the oracle.
const RUNS: [(Algorithm, Parallelism); 10] = [
    (Algorithm::Bfs, Parallelism::Sequential),
    (Algorithm::HoshenKopelman, Parallelism::Sequential),
    (Algorithm::Strips, Parallelism::Sequential),
    (Algorithm::Strips, Parallelism::Threads(1)),
    (Algorithm::Strips, Parallelism::Threads(2)),
    (Algorithm::Strips, Parallelism::Threads(7)),
    (Algorithm::Strips, Parallelism::Rayon),
    (Algorithm::Auto, Parallelism::Sequential),
    (Algorithm::Auto, Parallelism::Threads(7)),
    (Algorithm::Auto, Parallelism::Rayon),
];

const CONNECTIVITIES: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];
const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];

/// Widths around the 64-bit word boundaries of the strip labeler's row masks.
const WORD_WIDTHS: [usize; 9] = [31, 32, 33, 63, 64, 65, 127, 128, 129];

/// `cases` per property, or `PROPTEST_CASES` from the environment for a longer hunt
/// (e.g. `PROPTEST_CASES=5000 cargo test --release --test oracle`).
fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Lattice shapes `(h, w)`: tiny, 1×N and N×1, word-boundary widths, tall (several strips of at
/// least 16 rows, uneven for odd thread counts), and up to about 300×300.
fn shape() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        3 => (1usize..=12, 1usize..=12),
        3 => (1usize..=90, prop::sample::select(WORD_WIDTHS.to_vec())),
        1 => (Just(1usize), 1usize..=300),
        1 => (1usize..=300, Just(1usize)),
        3 => (16usize..=300, 1usize..=70),
        2 => (1usize..=120, 1usize..=120),
        1 => (120usize..=300, 120usize..=300),
    ]
}

/// Occupation probabilities over all of 0..1, with weight near the site-percolation thresholds
/// (0.5927 for 4-connectivity, 0.4073 for 8-connectivity) and at the extremes.
fn density() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => 0.0f64..=1.0,
        2 => 0.5727f64..0.6127,
        2 => 0.3873f64..0.4273,
        1 => Just(0.0),
        1 => Just(1.0),
        1 => 0.9f64..=1.0,
    ]
}

fn connectivity() -> impl Strategy<Value = Connectivity> {
    prop::sample::select(CONNECTIVITIES.to_vec())
}

fn boundary() -> impl Strategy<Value = Boundary> {
    prop::sample::select(BOUNDARIES.to_vec())
}

/// Labels with every combination in [`RUNS`] and the free function, and compares each with the
/// oracle exactly (label arrays and counts).
fn check_all<T: SiteValue + Into<u32>>(
    lattice: ArrayView2<'_, T>,
    c: Connectivity,
    b: Boundary,
    segments: bool,
) -> Result<(), TestCaseError> {
    let (expected, count) = oracle_of(lattice, c, b, segments);
    let sizes = common::sizes(expected.view(), count);
    prop_assert_eq!(sizes.iter().sum::<u64>() as usize, lattice.len());
    for (alg, par) in RUNS {
        let got = Labeler::new(c, b)
            .segments(segments)
            .algorithm(alg)
            .parallelism(par)
            .label(lattice)
            .map_err(|e| TestCaseError::fail(format!("{alg:?} {par:?}: {e}")))?;
        prop_assert_eq!(
            got.count(),
            count,
            "count: {:?} {:?} {:?} {:?} segments={}",
            alg,
            par,
            c,
            b,
            segments
        );
        prop_assert_eq!(
            got.array(),
            &expected,
            "labels: {:?} {:?} {:?} {:?} segments={}",
            alg,
            par,
            c,
            b,
            segments
        );
        prop_assert_eq!(got.sizes(), sizes.clone());
    }
    let free = if segments {
        label_segments(lattice, c, b)
    } else {
        Labeler::new(c, b).label(lattice)
    }
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(free.count(), count);
    prop_assert_eq!(free.array(), &expected);
    Ok(())
}

/// How the sites of a random lattice are chosen.
#[derive(Debug, Clone, Copy)]
enum Generator {
    /// Each site independently.
    Sites,
    /// Whole `g × g` blocks.
    Granular(usize),
}

fn generator() -> impl Strategy<Value = Generator> {
    prop_oneof![
        4 => Just(Generator::Sites),
        1 => (2usize..=6).prop_map(Generator::Granular),
    ]
}

fn occupancy(h: usize, w: usize, p: f64, g: Generator, seed: u64) -> Array2<u8> {
    let mut rng = common::rng(seed);
    match g {
        Generator::Sites => common::random_lattice(h, w, p, &mut rng),
        Generator::Granular(g) => common::granular_lattice(h, w, g, p, &mut rng),
    }
}

/// The site type of a segment lattice.
#[derive(Debug, Clone, Copy)]
enum Width {
    U8,
    U16,
    U32,
}

proptest! {
    #![proptest_config(config(250))]

    /// Occupancy lattices of `u8` sites.
    #[test]
    fn occupancy_matches_oracle(
        (h, w) in shape(),
        p in density(),
        g in generator(),
        c in connectivity(),
        b in boundary(),
        seed in any::<u64>(),
    ) {
        let lattice = occupancy(h, w, p, g, seed);
        check_all(lattice.view(), c, b, false)?;
    }
}

proptest! {
    #![proptest_config(config(160))]

    /// Segment lattices with 1 to 4 distinct values, as `u8`, `u16` and `u32`. The wider types
    /// use values that share their low byte (or low half) so that a truncating comparison would
    /// join sites it must not; the occupancy reading of the same lattices (nonzero = occupied,
    /// including values whose low byte is 0) is checked too.
    #[test]
    fn segments_match_oracle(
        (h, w) in shape(),
        p in density(),
        k in 1u32..=4,
        width in prop::sample::select(vec![Width::U8, Width::U16, Width::U32]),
        c in connectivity(),
        b in boundary(),
        seed in any::<u64>(),
    ) {
        let base = common::segment_lattice(h, w, p, k, &mut common::rng(seed));
        match width {
            Width::U8 => {
                // Values 1..=k and 255 for the last one.
                let lat = base.mapv(|v| if v == k && k > 1 { 255u8 } else { v as u8 });
                check_all(lat.view(), c, b, true)?;
            }
            Width::U16 => {
                // 256, 512, 1, 257: equal low bytes, and occupied sites whose low byte is 0.
                let vals = [0u16, 256, 512, 1, 257];
                let lat = base.mapv(|v| vals[v as usize]);
                check_all(lat.view(), c, b, true)?;
                check_all(lat.view(), c, b, false)?;
            }
            Width::U32 => {
                let vals = [0u32, 1 << 16, 1 << 24, 1 | (1 << 16), u32::MAX];
                let lat = base.mapv(|v| vals[v as usize]);
                check_all(lat.view(), c, b, true)?;
                check_all(lat.view(), c, b, false)?;
            }
        }
    }
}

/// The labels of `lattice` from the default labeler.
fn labels(lattice: ArrayView2<'_, u8>, c: Connectivity, b: Boundary) -> Labels {
    label(lattice, c, b).expect("labeling failed")
}

proptest! {
    #![proptest_config(config(150))]

    /// Sizes add up to the occupied sites; transposing or flipping the lattice (with the
    /// boundary transposed to match) gives the same partition of the sites.
    #[test]
    fn symmetries_keep_the_partition(
        (h, w) in shape(),
        p in density(),
        c in connectivity(),
        b in boundary(),
        seed in any::<u64>(),
    ) {
        let lattice = occupancy(h, w, p, Generator::Sites, seed);
        let l = labels(lattice.view(), c, b);
        let sizes = l.sizes();
        let occupied = lattice.iter().filter(|&&v| v != 0).count() as u64;
        prop_assert_eq!(sizes.len(), l.count() + 1);
        prop_assert_eq!(sizes[1..].iter().sum::<u64>(), occupied);
        prop_assert!(sizes[1..].iter().all(|&s| s > 0));
        // Labels are dense and appear in raster order of their first site.
        let mut next = 1u32;
        for &v in l.array() {
            prop_assert!(v <= next, "label {} before {}", v, next);
            if v == next {
                next += 1;
            }
        }
        prop_assert_eq!(next as usize, l.count() + 1);

        let tl = lattice.t().as_standard_layout().into_owned();
        let t = labels(tl.view(), c, transposed_boundary(b));
        prop_assert_eq!(t.count(), l.count());
        prop_assert!(same_partition(t.array().t(), l.array().view()), "transpose");

        for (name, flipped) in [
            ("flip y", s![..;-1, ..]),
            ("flip x", s![.., ..;-1]),
            ("flip both", s![..;-1, ..;-1]),
        ] {
            let fl = lattice.slice(flipped).as_standard_layout().into_owned();
            let f = labels(fl.view(), c, b);
            prop_assert_eq!(f.count(), l.count(), "{}", name);
            prop_assert!(
                same_partition(f.array().slice(flipped), l.array().view()),
                "{}",
                name
            );
        }
    }
}
