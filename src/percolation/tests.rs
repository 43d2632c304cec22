//! Unit tests: the winding forest against hand-made tori and against `Analyzer` (an independent
//! labeling with its own displacement union-find) after every added unit, the binomial weights
//! against exact values, thread-count independence, and Newman–Ziff curves against fixed-p
//! estimates.

use super::forest::Forest;
use super::newman_ziff::{run_samples, sample_order, Sweeper};
use super::oracle::{oracle_order, oracle_run};
use super::winding::Observables;
use super::*;
use crate::cpu::pool::CpuPool;
use crate::{Analyzer, Boundary, Connectivity, Measures, Parallelism};
use ndarray::Array2;
use std::ops::Range;

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Periodic,
    Boundary::Open,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];

fn geometry(model: Model, w: usize, h: usize, b: Boundary) -> Geometry {
    Geometry::new(model, w, h, b).unwrap()
}

/// Observables of a labeled table, as the forest should have them, from per-cluster sizes.
fn observables_of(sizes: &[u64], along: &[(bool, bool)]) -> Observables {
    let mut o = Observables::default();
    for (&s, &(x, y)) in sizes.iter().zip(along) {
        o.largest = o.largest.max(s);
        if x || y {
            o.percolating_sites += s;
        } else {
            o.finite_s2 += s * s;
        }
        o.any_x |= x;
        o.any_y |= y;
        o.any_both |= x && y;
    }
    o
}

/// The oracle: `Analyzer` on the occupied sites (site model), or on the bond lattice refined by
/// 2 (sites at even-even positions, bonds between them), counting only the original sites.
fn oracle(g: &Geometry, units: &[u32]) -> Observables {
    match g.model {
        Model::Site(c) => {
            let mut lattice = Array2::<u8>::zeros((g.height, g.width));
            for &u in units {
                lattice[(u as usize / g.width, u as usize % g.width)] = 1;
            }
            let mut a = Analyzer::new(c, g.boundary).measures(Measures::Shape);
            let (t, _) = a.analyze_labeled(lattice.view()).unwrap();
            let along: Vec<(bool, bool)> = (0..t.count())
                .map(|i| (t.wraps_x[i] || t.spans_x[i], t.wraps_y[i] || t.spans_y[i]))
                .collect();
            observables_of(&t.size.to_vec(), &along)
        }
        Model::Bond => {
            let rw = if g.boundary.wraps_x() {
                2 * g.width
            } else {
                2 * g.width - 1
            };
            let rh = if g.boundary.wraps_y() {
                2 * g.height
            } else {
                2 * g.height - 1
            };
            let mut lattice = Array2::<u8>::zeros((rh, rw));
            for y in 0..g.height {
                for x in 0..g.width {
                    lattice[(2 * y, 2 * x)] = 1;
                }
            }
            for &u in units {
                let (from, to, sx, _) = g.bond(u as usize);
                let (y, x) = (from / g.width, from % g.width);
                let _ = to;
                if sx == 1 {
                    lattice[(2 * y, 2 * x + 1)] = 1;
                } else {
                    lattice[(2 * y + 1, 2 * x)] = 1;
                }
            }
            let mut a = Analyzer::new(Connectivity::Four, g.boundary).measures(Measures::Shape);
            let (t, labels) = a.analyze_labeled(lattice.view()).unwrap();
            let mut sizes = vec![0u64; t.count()];
            for y in 0..g.height {
                for x in 0..g.width {
                    sizes[labels.array()[(2 * y, 2 * x)] as usize - 1] += 1;
                }
            }
            let along: Vec<(bool, bool)> = (0..t.count())
                .map(|i| (t.wraps_x[i] || t.spans_x[i], t.wraps_y[i] || t.spans_y[i]))
                .collect();
            observables_of(&sizes, &along)
        }
    }
}

fn start(forest: &mut Forest, _: &Geometry) {
    forest.start();
}

fn add(forest: &mut Forest, g: &Geometry, u: usize) {
    match g.model {
        Model::Site(_) => forest.add_site(u),
        Model::Bond => forest.add_bond(u),
    }
}

#[test]
fn forest_matches_analyzer_after_every_unit() {
    let models = [
        Model::Site(Connectivity::Four),
        Model::Site(Connectivity::Eight),
        Model::Bond,
    ];
    let mut order = Vec::new();
    let mut case = 0u64;
    for model in models {
        for b in BOUNDARIES {
            for &(w, h) in &[(1, 1), (1, 3), (2, 2), (3, 2), (2, 5), (5, 5), (7, 4)] {
                let g = geometry(model, w, h, b);
                let mut forest = Forest::new(g);
                for _ in 0..3 {
                    case += 1;
                    sample_order(99, case, &mut order, g.units());
                    start(&mut forest, &g);
                    assert_eq!(forest.observables(), oracle(&g, &[]), "{g:?} n = 0");
                    for n in 0..order.len() {
                        add(&mut forest, &g, order[n] as usize);
                        assert_eq!(
                            forest.observables(),
                            oracle(&g, &order[..=n]),
                            "{g:?} order {order:?} n = {}",
                            n + 1
                        );
                    }
                }
            }
        }
    }
}

/// Sites given as (y, x), added in this order.
fn sites(g: &Geometry, list: &[(usize, usize)]) -> Forest {
    let mut f = Forest::new(*g);
    f.start();
    for &(y, x) in list {
        f.add_site(y * g.width + x);
    }
    f
}

#[test]
fn eight_connected_cluster_wrapping_only_across_the_corner() {
    // The diagonal of a 4 × 4 torus closes through the corner step (3,3) → (0,0): winding (1, 1).
    let diag = [(0, 0), (1, 1), (2, 2), (3, 3)];
    let g8 = geometry(Model::Site(Connectivity::Eight), 4, 4, Boundary::Periodic);
    assert_eq!(sites(&g8, &diag).clusters(), vec![(4, true, true)]);
    // Without the corner site the chain does not close.
    let g = geometry(Model::Site(Connectivity::Eight), 4, 4, Boundary::Periodic);
    assert_eq!(sites(&g, &diag[..3]).clusters(), vec![(3, false, false)]);
    // With 4-connectivity the diagonal is four single sites.
    let g4 = geometry(Model::Site(Connectivity::Four), 4, 4, Boundary::Periodic);
    assert_eq!(sites(&g4, &diag).clusters().len(), 4);
    // On an open lattice the diagonal spans both ways (touches all four edges).
    let open = geometry(Model::Site(Connectivity::Eight), 4, 4, Boundary::Open);
    assert_eq!(sites(&open, &diag).clusters(), vec![(4, true, true)]);
}

#[test]
fn helix_wrapping_twice_around_x() {
    // Bonds R R R D repeated 4 times on a 6 × 4 torus: one loop with winding (2, 1), no
    // shorter loop (the bonds are exactly the path).
    let g = geometry(Model::Bond, 6, 4, Boundary::Periodic);
    let (w, h) = (6usize, 4usize);
    let right = |y: usize, x: usize| y * w + x;
    let down = |y: usize, x: usize| h * w + y * w + x;
    let mut f = Forest::new(g);
    f.start();
    let (mut y, mut x) = (0, 0);
    let mut bonds = Vec::new();
    for _ in 0..4 {
        for _ in 0..3 {
            bonds.push(right(y, x));
            x = (x + 1) % w;
        }
        bonds.push(down(y, x));
        y = (y + 1) % h;
    }
    assert_eq!((y, x), (0, 0));
    let (last, path) = bonds.split_last().unwrap();
    for &b in path {
        f.add_bond(b);
    }
    assert!(
        !f.observables().any_x && !f.observables().any_y,
        "open helix"
    );
    f.add_bond(*last);
    let o = f.observables();
    assert!(o.any_x && o.any_y && o.any_both);
    assert_eq!(o.percolating_sites, 16);
    assert_eq!(o.finite_s2, 8); // the 8 sites off the helix
}

#[test]
fn conventions_cases() {
    // A horizontal strip on a torus wraps in x only.
    let g = geometry(Model::Site(Connectivity::Four), 3, 3, Boundary::Periodic);
    assert_eq!(
        sites(&g, &[(1, 0), (1, 1), (1, 2)]).clusters()[0],
        (3, true, false)
    );
    // Full bounding-box width without a closed loop: no wrap.
    let g = geometry(Model::Site(Connectivity::Four), 4, 4, Boundary::Periodic);
    let stair = [(0, 0), (0, 1), (1, 1), (1, 2), (2, 2), (2, 3)];
    assert_eq!(sites(&g, &stair).clusters(), vec![(6, false, false)]);
    // On a torus of width 1 an occupied site wraps in x (it is its own neighbour).
    let g = geometry(Model::Site(Connectivity::Four), 1, 3, Boundary::Periodic);
    assert_eq!(sites(&g, &[(1, 0)]).clusters(), vec![(1, true, false)]);
    // On a cylinder wrapping in x only, a vertical line spans y and does not wrap.
    let g = geometry(Model::Site(Connectivity::Four), 3, 3, Boundary::PeriodicX);
    assert_eq!(
        sites(&g, &[(0, 1), (1, 1), (2, 1)]).clusters(),
        vec![(3, false, true)]
    );
}

#[test]
fn binomial_weights_sum_to_one_and_match_exact_values() {
    // N = 10, p = 1/4: B(n) = C(10, n) 3^(10−n) / 4^10 exactly.
    let w = BinomialWeights::new(10, 0.25).unwrap();
    assert_eq!((w.start, w.end()), (0, 10));
    let mut c = 1u64;
    for n in 0..=10u64 {
        let exact = c as f64 * 3f64.powi(10 - n as i32) / 4f64.powi(10);
        let got = w.weights[n as usize];
        assert!(
            (got - exact).abs() <= 1e-14 * exact.max(1e-300),
            "n = {n}: {got} vs {exact}"
        );
        c = c * (10 - n) / (n + 1);
    }
    for &(n, p) in &[
        (1u64, 0.5),
        (1000, 0.001),
        (65536, 0.5927),
        (4_294_967_295, 0.3),
    ] {
        let w = BinomialWeights::new(n, p).unwrap();
        let sum: f64 = w.weights.iter().sum();
        assert!((sum - 1.0).abs() < 1e-12, "N = {n}: sum {sum}");
        let mean = w.convolve(|k| k as f64);
        let var = w.convolve(|k| (k as f64 - mean).powi(2));
        let nf = n as f64;
        assert!(
            (mean - nf * p).abs() < 1e-9 * nf.max(1.0),
            "N = {n}: mean {mean}"
        );
        assert!(
            (var / (nf * p * (1.0 - p)) - 1.0).abs() < 1e-6,
            "N = {n}: var {var}"
        );
    }
    assert_eq!(BinomialWeights::new(7, 1.0).unwrap().start, 7);
    assert!(BinomialWeights::new(7, 1.5).is_err());
    assert!(BinomialWeights::new(7, f64::NAN).is_err());
}

/// The fast sweep gives exactly the sums, histograms and records of the oracle (the plain sweep
/// the crate had before it): every model and boundary, shapes from 1 × 1 up, histograms at the
/// ends and in between, one sample at a time, many per call, flushed between samples, and on
/// threads; and on lattices large enough for the prefetching loop.
#[test]
fn fast_sweep_equals_the_oracle_sweep() {
    let models = [
        Model::Site(Connectivity::Four),
        Model::Site(Connectivity::Eight),
        Model::Bond,
    ];
    let check = |g: Geometry, samples: Range<u64>, all_ways: bool| {
        let n = g.units() as u64;
        let ns_at = [0, n / 3, n / 2, n];
        let mut want = MicroSums::new(g, &ns_at).unwrap();
        for i in samples.clone() {
            oracle_run(g, 21, i, &mut want);
        }
        let mut many = MicroSums::new(g, &ns_at).unwrap();
        Sweeper::new(g).run_many(21, samples.clone(), &mut many);
        assert_eq!(many, want, "{g:?}");
        if all_ways {
            let mut one = MicroSums::new(g, &ns_at).unwrap();
            let mut sweeper = Sweeper::new(g);
            for i in samples.clone() {
                sweeper.run(21, i, &mut one);
            }
            assert_eq!(one, want, "{g:?} one by one");
            let mut flushed = MicroSums::new(g, &ns_at).unwrap();
            Sweeper::new(g)
                .flushing_every(2)
                .run_many(21, samples.clone(), &mut flushed);
            assert_eq!(flushed, want, "{g:?} flushed every 2");
            let pool = CpuPool::new(Parallelism::Threads(2));
            let threads = run_samples(g, &ns_at, 21, samples.clone(), &pool).unwrap();
            assert_eq!(threads, want, "{g:?} on 2 threads");
        }
    };
    for model in models {
        for b in BOUNDARIES {
            for (w, h) in [(1, 1), (1, 5), (6, 1), (2, 2), (3, 7), (16, 16), (33, 9)] {
                check(geometry(model, w, h, b), 5..10, true);
            }
            check(geometry(model, 190, 230, b), 0..2, false);
        }
    }
}

/// The batched, prefetching shuffle draws the plain shuffle's order, word for word.
#[test]
fn sample_order_equals_the_plain_shuffle() {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for units in [0, 1, 2, 3, 31, 32, 33, 34, 64, 65, 1000, 70_001] {
        for index in [0, 7, u64::MAX] {
            sample_order(3, index, &mut a, units);
            oracle_order(3, index, &mut b, units);
            assert_eq!(a, b, "{units} units, sample {index}");
        }
    }
}

#[test]
fn sums_do_not_depend_on_threads() {
    let g = geometry(Model::Site(Connectivity::Four), 12, 10, Boundary::Periodic);
    let one = run_samples(g, &[70], 5, 3..40, &CpuPool::new(Parallelism::Sequential)).unwrap();
    let three = run_samples(g, &[70], 5, 3..40, &CpuPool::new(Parallelism::Threads(3))).unwrap();
    let seven = run_samples(g, &[70], 5, 3..40, &CpuPool::new(Parallelism::Threads(7))).unwrap();
    assert_eq!(one.samples, 37);
    assert_eq!(one, three);
    assert_eq!(one, seven);
    // And a sample is a pure function of (seed, index).
    let mut a = MicroSums::new(g, &[70]).unwrap();
    Sweeper::new(g).run(5, 3, &mut a);
    assert_eq!(a.records[0], one.records[0]);
}

/// Newman–Ziff R^(h), R^(e) and P∞ at fixed p against independent fixed-p samples labeled by
/// `Analyzer` (MT19937 lattices), on a 16 × 16 torus: agreement within 3.5 σ of the difference.
#[test]
fn newman_ziff_agrees_with_fixed_p_sampling() {
    let (l, samples) = (16usize, 3000u64);
    let g = geometry(Model::Site(Connectivity::Four), l, l, Boundary::Periodic);
    let sums = run_samples(g, &[], 11, 0..samples, &CpuPool::new(Parallelism::Rayon)).unwrap();
    let mut analyzer = Analyzer::new(Connectivity::Four, Boundary::Periodic)
        .measures(Measures::Shape)
        .parallelism(Parallelism::Sequential);
    for (k, &p) in [0.55, 0.5927, 0.64].iter().enumerate() {
        let at = AtP::new(g.units(), p).unwrap();
        let nz = [
            at.wrapping(&sums, Wrapping::H),
            at.wrapping(&sums, Wrapping::E),
            at.p_infinity(&sums),
        ];
        let (mut h, mut e, mut pi, mut pi2) = (0.0, 0.0, 0.0, 0.0);
        for s in 0..samples {
            let lattice =
                crate::generate::percolation(l, l, p, 1, 1_000_000 * (k as u32 + 1) + s as u32);
            let st = analyzer.analyze(lattice.view()).unwrap().stats();
            h += f64::from(u8::from(st.wraps_x));
            e += f64::from(u8::from(st.wraps_either));
            pi += st.p_infinity;
            pi2 += st.p_infinity * st.p_infinity;
        }
        let m = samples as f64;
        let fixed = [
            canonical::mean_and_error(h, h, samples),
            canonical::mean_and_error(e, e, samples),
            canonical::mean_and_error(pi, pi2, samples),
        ];
        for (name, (a, b)) in ["R_h", "R_e", "P_inf"].iter().zip(nz.iter().zip(&fixed)) {
            let sigma = (a.stderr.powi(2) + b.stderr.powi(2)).sqrt();
            assert!(
                (a.value - b.value).abs() <= 3.5 * sigma,
                "{name} at p = {p}: Newman–Ziff {} ± {}, fixed p {} ± {} ({m} samples)",
                a.value,
                a.stderr,
                b.value,
                b.stderr
            );
        }
    }
}

#[test]
fn line_fit_recovers_a_line_and_its_covariance() {
    let x = [0.0, 1.0, 2.0, 3.0];
    let y = [1.0, 3.0, 5.0, 7.0];
    let s = [0.5, 0.5, 0.5, 0.5];
    let f = weighted_line(&x, &y, &s, 4).unwrap();
    assert!((f.intercept.value - 1.0).abs() < 1e-12 && (f.slope.value - 2.0).abs() < 1e-12);
    // Var(a) for equal σ: σ² / Σ(x − x̄)² = 0.25 / 5.
    assert!((f.slope.stderr - (0.25f64 / 5.0).sqrt()).abs() < 1e-12);
    assert!(f.chi2 < 1e-20 && f.dof == 2);
    assert!(weighted_line(&[1.0, 1.0], &[0.0, 1.0], &[1.0, 1.0], 1).is_err());
    assert!(weighted_line(&x, &y, &[0.0; 4], 1).is_err());
}

#[test]
fn tau_fit_recovers_an_exact_power_law() {
    // counts[s] ∝ s^(−2.05) exactly: the bin placement makes the fit exact.
    let counts: Vec<u64> = (0..5000u64)
        .map(|s| {
            if s == 0 {
                0
            } else {
                (1e15 * (s as f64).powf(-2.05)).round() as u64
            }
        })
        .collect();
    let f = fit_tau(&counts, 1, 1, 16, 4000).unwrap();
    assert!((f.tau.value - 2.05).abs() < 1e-3, "{}", f.tau.value);
}

/// The GPU serves lattices too large for a block through the full-lattice analyzer's size
/// counts, and the CPU's site batches reduce `Labeler::size_counts_into` the same way: one
/// lattice at a time, that reduction gives exactly the batch's samples (in index order, over the
/// batch's chunks) and its summed `n_s`, for every boundary, both connectivities and odd shapes.
/// (That the reduction is right is `tests/percolation_batch.rs`'s check against `Analyzer`.)
#[test]
fn size_counts_reduce_to_the_batch_statistics() {
    use crate::measure::fixed_p::SampleStats;
    use crate::{Backend, Labeler, Options, SizeCounts};
    let mut sampler =
        BatchSampler::new(&Options::default().backend(Backend::Cpu)).expect("the CPU");
    let mut counts = SizeCounts::new();
    for (w, h) in [(1, 1), (1, 7), (9, 1), (2, 3), (17, 13), (40, 33)] {
        for c in [Connectivity::Four, Connectivity::Eight] {
            for b in BOUNDARIES {
                for p in [0.3, 0.5927, 0.8] {
                    let mut spec = BatchSpec::new(c, b, w, h, p, 5, 3, 6).unwrap();
                    spec.histogram = true;
                    let batch = sampler.sample(&spec).unwrap();
                    let mut labeler = Labeler::new(c, b);
                    let mut ns = vec![0u64; w * h + 1];
                    for k in 0..6 {
                        let lattice = spec.lattice(spec.first + k);
                        labeler
                            .size_counts_into(lattice.view(), &mut counts)
                            .unwrap();
                        let got = SampleStats::from_size_counts(&counts, Some(&mut ns));
                        assert_eq!(got, batch.samples[k as usize], "{w}x{h} {c:?} {b:?} {p}");
                    }
                    assert_eq!(ns, batch.ns, "{w}x{h} {c:?} {b:?} {p}");
                }
            }
        }
    }
}
