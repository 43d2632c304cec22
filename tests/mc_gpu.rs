//! Swendsen–Wang on the GPU against the CPU's: the same seed gives identical spins and
//! identical per-sweep samples (the random numbers are counter-based and the observables are
//! computed from the same integer tallies), on every boundary, for q = 2 and 3 and sizes that
//! are not multiples of the 32 × 32 tiles; and the exact finite-torus energies at T_c
//! (Ferdinand & Fisher 1969) for L = 16 and 32 within 3σ (σ from τ_int).
//!
//! Run on a machine with a GPU: `cargo test --test mc_gpu -- --ignored --test-threads=1`.

#![cfg(feature = "cuda")]

use clusterlab::mc::{potts_tc, summarize, Chain, MemorySink, Model, NullSink, Update, ISING_TC};
use clusterlab::{Backend, Boundary, Options, Parallelism};

const BOUNDARIES: [Boundary; 4] = [
    Boundary::Periodic,
    Boundary::Open,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];

fn cpu() -> Options {
    Options::default().backend(Backend::Cpu)
}

fn gpu() -> Options {
    Options::default().backend(Backend::Cuda { device: 0 })
}

#[test]
#[ignore = "needs a CUDA device"]
fn gpu_spins_and_samples_equal_the_cpu_after_100_sweeps() {
    let shapes = [(32, 32), (70, 130), (100, 33), (257, 511), (2, 3)];
    for b in BOUNDARIES {
        for &(h, w) in &shapes {
            for model in [
                Model::ising(h, w, ISING_TC).unwrap(),
                Model::potts(3, h, w, potts_tc(3)).unwrap(),
                Model::ising(h, w, 1.5).unwrap(),
            ] {
                let model = model.with_boundary(b).unwrap();
                let what = format!("{b:?} {h}x{w} q={} T={}", model.q(), model.temperature());
                let mut c = Chain::new(model, Update::SwendsenWang, 17, 3, cpu()).unwrap();
                let mut g = Chain::new(model, Update::SwendsenWang, 17, 3, gpu()).unwrap();
                assert!(g.on_gpu() && !c.on_gpu());
                let (mut cs, mut gs) = (MemorySink::default(), MemorySink::default());
                c.run(100, 1, &mut cs).unwrap();
                g.run(100, 1, &mut gs).unwrap();
                assert_eq!(c.spins(), g.spins(), "spins {what}");
                assert_eq!(cs.samples, gs.samples, "samples {what}");
                // Single sweeps (a wait each) and a thinned run continue identically.
                for _ in 0..3 {
                    assert_eq!(c.sweep(true).unwrap(), g.sweep(true).unwrap(), "{what}");
                }
                let (mut cs, mut gs) = (MemorySink::default(), MemorySink::default());
                c.run(37, 5, &mut cs).unwrap();
                g.run(37, 5, &mut gs).unwrap();
                assert_eq!(c.spins(), g.spins(), "spins {what}");
                assert_eq!(cs.samples, gs.samples, "thinned samples {what}");
            }
        }
    }
}

/// More measured sweeps than the device holds tallies for (they come back in batches), and a
/// restored chain.
#[test]
#[ignore = "needs a CUDA device"]
fn long_runs_and_restores_match_the_cpu() {
    let model = Model::potts(3, 48, 80, 0.9).unwrap();
    let mut c = Chain::new(model, Update::SwendsenWang, 5, 1, cpu()).unwrap();
    let mut g = Chain::new(model, Update::SwendsenWang, 5, 1, gpu()).unwrap();
    let (mut cs, mut gs) = (MemorySink::default(), MemorySink::default());
    c.run(700, 1, &mut cs).unwrap();
    g.run(700, 1, &mut gs).unwrap();
    assert_eq!(cs.samples, gs.samples);
    assert_eq!(c.spins(), g.spins());
    let mut r = Chain::new(model, Update::SwendsenWang, 5, 1, gpu()).unwrap();
    r.restore(c.spins().clone(), c.sweeps()).unwrap();
    let (mut cs, mut rs) = (MemorySink::default(), MemorySink::default());
    c.run(50, 2, &mut cs).unwrap();
    r.run(50, 2, &mut rs).unwrap();
    assert_eq!(cs.samples, rs.samples);
    assert_eq!(c.spins(), r.spins());
}

/// Ferdinand & Fisher (1969): e(L = 16) = −1.45306485281 and e(L = 32) = −1.43365846615 on the
/// torus at T_c, reproduced within 3σ (σ from τ_int) by the GPU chain.
#[test]
#[ignore = "needs a CUDA device"]
fn gpu_reproduces_the_exact_energy_at_tc() {
    for (l, exact, seed) in [(16, -1.45306485281, 3), (32, -1.43365846615, 4)] {
        let model = Model::ising(l, l, ISING_TC).unwrap();
        let opts = gpu().parallelism(Parallelism::Sequential);
        let mut chain = Chain::new(model, Update::SwendsenWang, seed, 0, opts).unwrap();
        chain.run(1000, 1, &mut NullSink).unwrap();
        let mut sink = MemorySink::default();
        chain.run(60_000, 1, &mut sink).unwrap();
        let s = summarize(&sink.values(), model.beta(), model.sites());
        assert!(
            (s.energy.mean - exact).abs() < 3.0 * s.energy.stderr,
            "L={l}: e = {} ± {} (τ {}) vs {exact}",
            s.energy.mean,
            s.energy.stderr,
            s.energy.tau_int
        );
        eprintln!(
            "L={l}: e = {:.6} ± {:.6} (τ_int {:.2}), exact {exact}",
            s.energy.mean, s.energy.stderr, s.energy.tau_int
        );
    }
}
