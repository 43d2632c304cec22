//! One labeling battery for every backend and algorithm (as RustFFT's `check_fft_algorithm` and
//! candle's `test_device!` run one body everywhere): tiny lattices of every shape up to 4×4,
//! random shapes around word, warp and tile widths at densities over 0..1, granular and segment
//! lattices of every site type, patterns (spirals, checkerboards, stripes), and medium and large
//! lattices — each checked, canonical and (where the subject has it) raw, against the
//! independent oracle of `tests/common` (or, above [`ORACLE_SITES`], the CPU strip labeler, which
//! the oracle checks on every smaller lattice).

use super::{oracle_of, rng};
use clusterlab::generate::{percolation, spiral};
use clusterlab::{Algorithm, Boundary, Connectivity, Labeler, Labels, Result, SiteValue};
use ndarray::{Array2, ArrayView2};
use rand::rngs::StdRng;
use rand::RngExt;
use std::time::Instant;

pub const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];
pub const CONNECTIVITIES: [Connectivity; 2] = [Connectivity::Four, Connectivity::Eight];

/// Lattices up to this many sites are checked against the oracle itself.
pub const ORACLE_SITES: usize = 250_000;

/// How much of the battery to run: all of it on a GPU machine (release build), a sample on CI
/// (debug build, every CPU algorithm).
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// Random lattices (each under one random connectivity and boundary).
    pub random: usize,
    /// Lattices of about 10^6 sites, under every connectivity and boundary.
    pub medium: bool,
    /// Lattices of about 1.7·10^7 sites, under a few configurations.
    pub large: bool,
}

impl Scale {
    /// The whole battery (at least 5,000 lattice cases).
    pub const FULL: Scale = Scale {
        random: 3600,
        medium: true,
        large: true,
    };
    /// What CI runs for each CPU algorithm.
    pub const CI: Scale = Scale {
        random: 400,
        medium: false,
        large: false,
    };
}

/// What a battery checks: canonical labels, and raw root-index labels where the subject numbers
/// that way (each cluster's smallest site index + 1).
pub trait Subject {
    /// Canonical labels of `lattice`.
    fn label<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        c: Connectivity,
        b: Boundary,
        segments: bool,
    ) -> Result<Labels>;
    /// Raw labels into `out` and the count; `None` when the subject has no raw numbering.
    fn label_raw<T: SiteValue>(
        &mut self,
        _lattice: ArrayView2<'_, T>,
        _c: Connectivity,
        _b: Boundary,
        _segments: bool,
        _out: &mut Array2<u32>,
    ) -> Option<Result<usize>> {
        None
    }
}

/// A `Labeler` per configuration, made by `make` and kept for reuse (so the battery also checks
/// that a labeler gives the same answers call after call, on lattices of changing shape).
pub struct Labelers<F: FnMut(Connectivity, Boundary, bool) -> Labeler> {
    make: F,
    cache: Vec<((Connectivity, Boundary, bool), Labeler)>,
}

impl<F: FnMut(Connectivity, Boundary, bool) -> Labeler> Labelers<F> {
    pub fn new(make: F) -> Self {
        Labelers {
            make,
            cache: Vec::new(),
        }
    }
}

impl<F: FnMut(Connectivity, Boundary, bool) -> Labeler> Subject for Labelers<F> {
    fn label<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        c: Connectivity,
        b: Boundary,
        segments: bool,
    ) -> Result<Labels> {
        let key = (c, b, segments);
        let i = match self.cache.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.cache.push((key, (self.make)(c, b, segments)));
                self.cache.len() - 1
            }
        };
        self.cache[i].1.label(lattice)
    }
}

/// Raw labels from canonical ones: each cluster's smallest site index + 1.
pub fn raw_from_canonical(canon: &Array2<u32>, count: usize) -> Array2<u32> {
    let mut first = vec![u32::MAX; count + 1];
    for (i, &l) in canon.iter().enumerate() {
        if l != 0 && first[l as usize] == u32::MAX {
            first[l as usize] = i as u32 + 1;
        }
    }
    canon.mapv(|l| if l == 0 { 0 } else { first[l as usize] })
}

/// The expected canonical labels: the oracle's, or the CPU strip labeler's on large lattices.
fn reference<T: SiteValue + Into<u32>>(
    lattice: ArrayView2<'_, T>,
    c: Connectivity,
    b: Boundary,
    segments: bool,
) -> (Array2<u32>, usize) {
    if lattice.len() <= ORACLE_SITES {
        oracle_of(lattice, c, b, segments)
    } else {
        let l = Labeler::new(c, b)
            .segments(segments)
            .algorithm(Algorithm::Strips)
            .label(lattice)
            .expect("the CPU labels any lattice");
        (l.array().clone(), l.count())
    }
}

/// Runs the checks and counts the cases.
struct Checker<'s, S: Subject> {
    subject: &'s mut S,
    name: String,
    cases: usize,
}

impl<S: Subject> Checker<'_, S> {
    fn one<T: SiteValue + Into<u32>>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        c: Connectivity,
        b: Boundary,
        seg: bool,
        what: &str,
    ) {
        let (want, count) = reference(lattice, c, b, seg);
        let dim = lattice.dim();
        let ctx = format!("{} {what} {dim:?} {c} {b} seg={seg}", self.name);
        let got = self
            .subject
            .label(lattice, c, b, seg)
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        if got.count() != count || *got.array() != want {
            let diff = got
                .array()
                .indexed_iter()
                .find(|(i, &v)| want[*i] != v)
                .map(|(i, &v)| format!("first difference at {i:?}: got {v}, want {}", want[i]));
            panic!(
                "{ctx}: count {} want {count}; {}",
                got.count(),
                diff.unwrap_or_default()
            );
        }
        // Poisoned, so that an unwritten site shows.
        let mut raw = Array2::from_elem(dim, 0xdead_beefu32);
        if let Some(n) = self.subject.label_raw(lattice, c, b, seg, &mut raw) {
            let n = n.unwrap_or_else(|e| panic!("raw {ctx}: {e}"));
            assert_eq!(n, count, "raw count {ctx}");
            let want = raw_from_canonical(&want, count);
            if raw != want {
                let diff = raw
                    .indexed_iter()
                    .find(|(i, &v)| want[*i] != v)
                    .map(|(i, &v)| format!("at {i:?}: got {v}, want {}", want[i]));
                panic!("raw {ctx}: {}", diff.unwrap_or_default());
            }
        }
        self.cases += 1;
    }

    fn all<T: SiteValue + Into<u32>>(&mut self, lattice: ArrayView2<'_, T>, seg: bool, what: &str) {
        for c in CONNECTIVITIES {
            for b in BOUNDARIES {
                self.one(lattice, c, b, seg, what);
            }
        }
    }
}

fn bernoulli(rng: &mut StdRng, h: usize, w: usize, p: f64) -> Array2<u8> {
    Array2::from_shape_fn((h, w), |_| u8::from(rng.random::<f64>() < p))
}

/// Same-value segments: values from a small palette (so that neighbours often agree), 0 with
/// probability `p0`, constant over `grain × grain` blocks.
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

/// A random shape: mostly small, with widths around word, warp and block multiples.
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

/// The battery: every case of `scale` for `subject`, named `name` in messages. Returns the
/// number of lattice cases checked.
pub fn battery<S: Subject>(subject: &mut S, name: &str, seed: u64, scale: Scale) -> usize {
    let start = Instant::now();
    let mut ck = Checker {
        subject,
        name: name.to_string(),
        cases: 0,
    };
    let mut rng = rng(0x5eed ^ seed);

    // Tiny lattices: every shape up to 4×4 with random contents.
    for h in 1..=4 {
        for w in 1..=4 {
            for _ in 0..6 {
                let p = rng.random::<f64>();
                let lat = bernoulli(&mut rng, h, w, p);
                ck.all(lat.view(), false, "tiny");
                let seg = segments(&mut rng, h, w, 0.2, &[1u8, 2], 1);
                ck.all(seg.view(), true, "tiny segments");
            }
        }
    }
    // Random shapes and densities, one random connectivity and boundary each.
    for i in 0..scale.random {
        let (h, w) = shape(&mut rng);
        let c = CONNECTIVITIES[rng.random_range(0..2)];
        let b = BOUNDARIES[rng.random_range(0..4)];
        let p = DENSITIES[rng.random_range(0..DENSITIES.len())];
        match i % 6 {
            0..=2 => {
                let lat = bernoulli(&mut rng, h, w, p);
                ck.one(lat.view(), c, b, false, "bernoulli");
            }
            3 => {
                let grain = [2, 3, 4, 7][rng.random_range(0..4)];
                let lat = percolation(h, w, p, grain, rng.random());
                ck.one(lat.view(), c, b, false, "granular");
            }
            4 => {
                let p0 = [0.0, 0.1, 0.3][rng.random_range(0..3)];
                let grain = [1, 1, 2, 3][rng.random_range(0..4)];
                match rng.random_range(0..3) {
                    0 => {
                        let lat = segments(&mut rng, h, w, p0, &[1u8, 2, 255], grain);
                        ck.one(lat.view(), c, b, true, "segments u8");
                    }
                    1 => {
                        let lat = segments(&mut rng, h, w, p0, &[1u16, 300, 65535], grain);
                        ck.one(lat.view(), c, b, true, "segments u16");
                    }
                    _ => {
                        let lat = segments(&mut rng, h, w, p0, &[1u32, 70000, u32::MAX], grain);
                        ck.one(lat.view(), c, b, true, "segments u32");
                    }
                }
            }
            _ => {
                // Occupancy of u16/u32 lattices (any nonzero value is occupied).
                let lat = bernoulli(&mut rng, h, w, p);
                if rng.random::<bool>() {
                    let lat = lat.mapv(|v| v as u16 * 513);
                    ck.one(lat.view(), c, b, false, "occupancy u16");
                } else {
                    let lat = lat.mapv(|v| v as u32 * 0x1_0001);
                    ck.one(lat.view(), c, b, false, "occupancy u32");
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
        ck.all(s.view(), false, "spiral");
        let board = Array2::from_shape_fn((h, w), |(y, x)| ((x + y) % 2) as u8);
        ck.all(board.view(), false, "checkerboard");
        let stripes = Array2::from_shape_fn((h, w), |(y, x)| ((x / 2 + y) % 3) as u16);
        ck.all(stripes.view(), true, "stripes");
    }
    if scale.medium {
        for &(h, w, p) in &[
            (1000, 1000, 0.592746),
            (1023, 1025, 0.407254),
            (2048, 2049, 0.6),
            (3000, 17, 0.7),
        ] {
            let lat = percolation(h, w, p, 1, 7);
            ck.all(lat.view(), false, "medium");
        }
    }
    if scale.large {
        let big = percolation(4099, 4097, 0.592746, 1, 11);
        for b in [Boundary::Open, Boundary::Periodic] {
            ck.one(big.view(), Connectivity::Four, b, false, "large");
            ck.one(big.view(), Connectivity::Eight, b, false, "large");
        }
        let big8 = percolation(4097, 4099, 0.407254, 1, 12);
        let (c8, px) = (Connectivity::Eight, Boundary::PeriodicX);
        ck.one(big8.view(), c8, px, false, "large");
        let big_seg = segments(&mut rng, 4099, 4097, 0.2, &[1u16, 2, 3], 3);
        ck.one(big_seg.view(), c8, Boundary::Periodic, true, "large seg");
        let big_spiral = spiral(4099, 4097);
        let c4 = Connectivity::Four;
        ck.one(big_spiral.view(), c4, Boundary::Open, false, "large spiral");
        ck.one(
            big_spiral.view(),
            c8,
            Boundary::Periodic,
            false,
            "large spiral",
        );
    }
    eprintln!(
        "{name}: {} lattice cases identical to the reference in {:.1} s",
        ck.cases,
        start.elapsed().as_secs_f64()
    );
    ck.cases
}
