//! Monte Carlo validation that runs in CI (seconds each): detailed balance on a 4×4 torus against
//! the exact Boltzmann distribution of the energy (by transfer-matrix enumeration), the exact
//! finite-torus energy at T_c for L = 16 (Ferdinand & Fisher), thread-count independence and
//! bit-identical restarts.

use clusterlab::mc::{estimate, summarize, Chain, MemorySink, Model, NullSink, Update, ISING_TC};
use clusterlab::{Boundary, Error, Options, Parallelism};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// g(S): the number of configurations of a q-state model on a 4×4 torus with S satisfied
/// (equal-spin) bonds, S = 0..=32, by a row transfer matrix (q⁴ row states).
fn density_of_states(q: usize) -> Vec<f64> {
    const W: usize = 4;
    const H: usize = 4;
    let states = q.pow(W as u32);
    let row = |r: usize| -> [usize; W] {
        let mut v = [0; W];
        let mut r = r;
        for s in v.iter_mut() {
            *s = r % q;
            r /= q;
        }
        v
    };
    let horiz = |r: usize| {
        let v = row(r);
        (0..W).filter(|&x| v[x] == v[(x + 1) % W]).count()
    };
    let vert = |a: usize, b: usize| {
        let (u, v) = (row(a), row(b));
        (0..W).filter(|&x| u[x] == v[x]).count()
    };
    let nb = 2 * W * H;
    let mut g = vec![0u64; nb + 1];
    for r0 in 0..states {
        let mut v = vec![vec![0u64; nb + 1]; states];
        v[r0][horiz(r0)] = 1;
        for _ in 1..H {
            let mut next = vec![vec![0u64; nb + 1]; states];
            for (r, poly) in v.iter().enumerate() {
                if poly.iter().all(|&c| c == 0) {
                    continue;
                }
                for (r1, out) in next.iter_mut().enumerate() {
                    let k = vert(r, r1) + horiz(r1);
                    for s in 0..=nb - k {
                        out[s + k] += poly[s];
                    }
                }
            }
            v = next;
        }
        for (r, poly) in v.iter().enumerate() {
            let k = vert(r, r0);
            for s in 0..=nb - k {
                g[s + k] += poly[s];
            }
        }
    }
    assert_eq!(g.iter().sum::<u64>(), (q as u64).pow((W * H) as u32));
    g.iter().map(|&c| c as f64).collect()
}

/// Satisfied bonds of a 4×4 torus configuration from its energy per site.
fn satisfied(model: &Model, e: f64) -> usize {
    let n = 16.0;
    let s = match model.kind() {
        // e = −(2S − 32) / 16
        clusterlab::mc::ModelKind::Ising => (32.0 - e * n) / 2.0,
        clusterlab::mc::ModelKind::Potts => -e * n,
    };
    s.round() as usize
}

/// χ² test of the energy histogram of `update` against exact Boltzmann weights g(S) e^{K S}.
/// Samples are thinned by `thin` sweeps; the χ² is divided by 2 τ_int of the thinned energies
/// (≥ 1) so that left-over correlation cannot fail it. Bins expected below 5 are pooled. The
/// bound is the χ² quantile at p = 0.0027 (3σ).
fn detailed_balance(model: Model, update: Update, sweeps: u64, thin: u64, k: f64) {
    let q = model.q() as usize;
    let g = density_of_states(q);
    let w: Vec<f64> = g
        .iter()
        .enumerate()
        .map(|(s, &c)| c.ln() + k * s as f64)
        .collect();
    let max = w
        .iter()
        .cloned()
        .filter(|v| v.is_finite())
        .fold(f64::MIN, f64::max);
    let p: Vec<f64> = w.iter().map(|v| (v - max).exp()).collect();
    let z: f64 = p.iter().sum();
    let p: Vec<f64> = p.iter().map(|v| v / z).collect();

    let opts = Options::default().parallelism(Parallelism::Sequential);
    let mut chain = Chain::new(model, update, 11, 0, opts).unwrap();
    chain.run(1000, 1, &mut NullSink).unwrap();
    let mut sink = MemorySink::default();
    chain.run(sweeps * thin, thin, &mut sink).unwrap();
    let e: Vec<f64> = sink.values().iter().map(|s| s.energy).collect();
    let n = e.len() as f64;
    let mut obs = vec![0f64; g.len()];
    for &v in &e {
        obs[satisfied(&model, v)] += 1.0;
    }
    // Pool bins in order until each expects at least 5.
    let (mut chi2, mut dof) = (0.0, 0usize);
    let (mut o, mut x) = (0.0, 0.0);
    for s in 0..g.len() {
        o += obs[s];
        x += p[s] * n;
        if x >= 5.0 {
            chi2 += (o - x) * (o - x) / x;
            dof += 1;
            o = 0.0;
            x = 0.0;
        }
    }
    if x > 0.0 {
        // The pooled tail: a bin of its own.
        chi2 += (o - x) * (o - x) / x;
        dof += 1;
    }
    let tau = estimate(&e).tau_int;
    let chi2_eff = chi2 / (2.0 * tau).max(1.0);
    let dof = dof.saturating_sub(1).max(1); // bins − 1: the counts sum to n
    let bound = ChiSquared::new(dof as f64)
        .unwrap()
        .inverse_cdf(1.0 - 0.0027);
    assert!(
        chi2_eff < bound,
        "{update:?} q={q}: χ² = {chi2:.1} (÷ 2τ = {:.2}: {chi2_eff:.1}) over {dof} dof, bound {bound:.1}",
        2.0 * tau
    );
    // And the mean energy against the exact one, 3σ (σ from τ_int).
    let exact: f64 = p
        .iter()
        .enumerate()
        .map(|(s, &ps)| {
            ps * match model.kind() {
                clusterlab::mc::ModelKind::Ising => -(2.0 * s as f64 - 32.0) / 16.0,
                clusterlab::mc::ModelKind::Potts => -(s as f64) / 16.0,
            }
        })
        .sum();
    let est = estimate(&e);
    assert!(
        (est.mean - exact).abs() < 3.0 * est.stderr,
        "{update:?} q={q}: ⟨e⟩ = {} ± {} vs exact {exact}",
        est.mean,
        est.stderr
    );
}

#[test]
fn detailed_balance_ising_4x4() {
    let t = 2.5;
    let model = Model::ising(4, 4, t).unwrap();
    let k = 2.0 / t;
    detailed_balance(model, Update::SwendsenWang, 40_000, 2, k);
    detailed_balance(model, Update::Wolff, 40_000, 2, k);
    detailed_balance(model, Update::Metropolis, 40_000, 4, k);
}

#[test]
fn detailed_balance_potts3_4x4() {
    let t = 1.0;
    let model = Model::potts(3, 4, 4, t).unwrap();
    let k = 1.0 / t;
    detailed_balance(model, Update::SwendsenWang, 40_000, 2, k);
    detailed_balance(model, Update::Wolff, 40_000, 2, k);
    detailed_balance(model, Update::Metropolis, 40_000, 4, k);
}

/// Ferdinand & Fisher (1969): e(L = 16) at T_c on the torus = −1.45306485281.
#[test]
fn swendsen_wang_reproduces_the_exact_energy_at_tc_l16() {
    let model = Model::ising(16, 16, ISING_TC).unwrap();
    let opts = Options::default().parallelism(Parallelism::Sequential);
    let mut chain = Chain::new(model, Update::SwendsenWang, 3, 0, opts).unwrap();
    chain.run(500, 1, &mut NullSink).unwrap();
    let mut sink = MemorySink::default();
    chain.run(30_000, 1, &mut sink).unwrap();
    let s = summarize(&sink.values(), model.beta(), model.sites());
    let exact = -1.45306485281;
    assert!(
        (s.energy.mean - exact).abs() < 3.0 * s.energy.stderr,
        "e = {} ± {} (τ {}) vs {exact}",
        s.energy.mean,
        s.energy.stderr,
        s.energy.tau_int
    );
    assert!(s.energy.stderr < 5e-3, "{}", s.energy.stderr);
}

/// The same seed gives the same spins on 1 and 3 threads (counter-based random numbers).
#[test]
fn results_do_not_depend_on_thread_count() {
    for (update, b) in [
        (Update::SwendsenWang, Boundary::Periodic),
        (Update::SwendsenWang, Boundary::Open),
        (Update::SwendsenWang, Boundary::PeriodicX),
        (Update::Metropolis, Boundary::Periodic),
        (Update::Metropolis, Boundary::PeriodicY),
    ] {
        let model = Model::potts(3, 70, 130, 1.0)
            .unwrap()
            .with_boundary(b)
            .unwrap();
        let run = |p: Parallelism| {
            let mut c = Chain::new(model, update, 9, 2, Options::default().parallelism(p)).unwrap();
            c.run(30, 1, &mut NullSink).unwrap();
            c.spins().clone()
        };
        let one = run(Parallelism::Threads(1));
        assert_eq!(one, run(Parallelism::Threads(3)), "{update:?} {b:?}");
        assert_eq!(one, run(Parallelism::Sequential), "{update:?} {b:?}");
    }
}

/// The Swendsen–Wang cluster-size histogram covers the measured sweeps exactly: its sites add up
/// to N per measured sweep and its Σ s² to the improved estimator's numerators; other updates
/// refuse to record one.
#[test]
fn cluster_size_histogram_counts_the_measured_sweeps() {
    let model = Model::ising(24, 20, ISING_TC).unwrap();
    let opts = Options::default().backend(clusterlab::Backend::Cpu);
    let mut chain = Chain::new(model, Update::SwendsenWang, 4, 0, opts).unwrap();
    assert_eq!(chain.cluster_sizes(), None);
    chain.run(10, 1, &mut NullSink).unwrap();
    chain.record_cluster_sizes(true).unwrap();
    assert_eq!(chain.cluster_sizes(), Some(&[][..]));
    let mut sink = MemorySink::default();
    chain.run(40, 4, &mut sink).unwrap();
    let hist = chain.cluster_sizes().unwrap();
    let n = model.sites() as u64;
    let sites: u64 = hist.iter().enumerate().map(|(s, &c)| s as u64 * c).sum();
    assert_eq!(sites, n * sink.samples.len() as u64);
    let sq: u64 = hist
        .iter()
        .enumerate()
        .map(|(s, &c)| (s * s) as u64 * c)
        .sum();
    let num: f64 = sink.samples.iter().map(|(_, s)| s.cluster_num).sum();
    assert!((sq as f64 / (n * n) as f64 - num).abs() < 1e-9);
    assert!(hist[1] > 0 && *hist.last().unwrap() > 0);
    chain.record_cluster_sizes(false).unwrap();
    assert_eq!(chain.cluster_sizes(), None);
    let mut wolff = Chain::new(model, Update::Wolff, 4, 0, opts).unwrap();
    assert!(matches!(
        wolff.record_cluster_sizes(true),
        Err(Error::InvalidArgument(_))
    ));
}

/// A chain restored from (spins, sweeps) continues bit-identically, measurements included.
#[test]
fn restored_chain_continues_identically() {
    for update in [Update::SwendsenWang, Update::Wolff, Update::Metropolis] {
        let model = Model::ising(12, 10, 2.4).unwrap();
        let mk = || Chain::new(model, update, 5, 1, Options::default()).unwrap();
        let mut straight = mk();
        let mut all = MemorySink::default();
        straight.run(60, 3, &mut all).unwrap();
        let mut first = mk();
        let mut part = MemorySink::default();
        first.run(25, 3, &mut part).unwrap();
        let mut second = mk();
        second
            .restore(first.spins().clone(), first.sweeps())
            .unwrap();
        second.run(35, 3, &mut part).unwrap();
        assert_eq!(straight.spins(), second.spins(), "{update:?}");
        assert_eq!(all.samples, part.samples, "{update:?}");
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let bad = |r: Result<Model, Error>| assert!(matches!(r, Err(Error::InvalidArgument(_))));
    bad(Model::ising(8, 8, 0.0));
    bad(Model::ising(8, 8, f64::NAN));
    bad(Model::potts(1, 8, 8, 1.0));
    bad(Model::potts(3, 1, 8, 1.0));
    bad(Model::ising(8, 8, 1.0).unwrap().with_coupling(-1.0));
    let field = Model::ising(8, 8, 2.0).unwrap().with_field(0.1).unwrap();
    let e = Chain::new(field, Update::SwendsenWang, 1, 0, Options::default())
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let odd = Model::ising(8, 9, 2.0).unwrap();
    let e = Chain::new(odd, Update::Metropolis, 1, 0, Options::default())
        .err()
        .unwrap();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let m = Model::ising(8, 8, 2.0).unwrap();
    let cuda = Options::default().backend(clusterlab::Backend::Cuda { device: 0 });
    // Swendsen–Wang runs on a GPU when there is one, and says why not when there is none.
    match Chain::new(m, Update::SwendsenWang, 1, 0, cuda) {
        Ok(c) => assert!(c.on_gpu()),
        Err(e) => assert!(matches!(e, Error::CudaUnavailable(_)), "{e}"),
    }
    let e = Chain::new(m, Update::Wolff, 1, 0, cuda).err().unwrap();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let mut c = Chain::new(m, Update::Wolff, 1, 0, Options::default()).unwrap();
    assert!(c.run(1, 0, &mut NullSink).is_err());
    assert!(c.restore(ndarray::Array2::from_elem((8, 8), 2), 0).is_err());
}

/// With a field, Metropolis on a 4×4 Ising torus reproduces the exact ⟨m⟩ (enumeration of all
/// 2¹⁶ states), 3σ.
#[test]
fn metropolis_with_a_field_matches_enumeration() {
    let (t, h) = (3.0, 0.3);
    let model = Model::ising(4, 4, t).unwrap().with_field(h).unwrap();
    let (mut z, mut zm) = (0.0, 0.0);
    for c in 0u32..1 << 16 {
        let s = |y: usize, x: usize| {
            if c >> ((y % 4) * 4 + x % 4) & 1 == 0 {
                1.0
            } else {
                -1.0
            }
        };
        let (mut e, mut m) = (0.0, 0.0);
        for y in 0..4 {
            for x in 0..4 {
                e -= s(y, x) * (s(y, x + 1) + s(y + 1, x));
                m += s(y, x);
            }
        }
        e -= h * m;
        let wgt = (-e / t).exp();
        z += wgt;
        zm += wgt * m / 16.0;
    }
    let exact = zm / z;
    let mut chain = Chain::new(model, Update::Metropolis, 2, 0, Options::default()).unwrap();
    chain.run(500, 1, &mut NullSink).unwrap();
    let mut sink = MemorySink::default();
    chain.run(40_000, 1, &mut sink).unwrap();
    let m: Vec<f64> = sink.values().iter().map(|s| s.m).collect();
    let est = estimate(&m);
    assert!(
        (est.mean - exact).abs() < 3.0 * est.stderr,
        "{} ± {} vs {exact}",
        est.mean,
        est.stderr
    );
}
