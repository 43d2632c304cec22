//! Long Monte Carlo validation against exact results; exits non-zero on a miss.
//!
//! - Ferdinand & Fisher (1969), 2-D Ising torus at T_c: e(32) = −1.43365846615,
//!   e(64) = −1.42393838983, c(32) = 1.84676759004 — Swendsen–Wang, Wolff and Metropolis,
//!   each within 3σ (σ from τ_int for e, jackknife for c).
//! - Binder cumulants of L = 32, 64, 128 (Swendsen–Wang) at T_c agree within 3σ with each other
//!   and with U₄ → 0.6107 (Salas & Sokal), and the curves cross: at T_c (1 ∓ 1 %) U₄ grows
//!   (shrinks) with L.
//! - q = 3 Potts, T_c = 1/ln(1+√3): the same crossing test for L = 32, 64, 128.
//!
//! `cargo run --release --example mc_validation [-- --scale F]` (F multiplies every run length;
//! default 1 takes minutes on two cores).

use clusterlab::mc::{
    potts_tc, run_chains, summarize, Chain, MemorySink, Model, NullSink, Summary, Update, ISING_TC,
};
use clusterlab::{Options, Parallelism};
use std::process::ExitCode;
use std::time::Instant;

struct Job {
    name: String,
    model: Model,
    update: Update,
    thermalize: u64,
    sweeps: u64,
}

fn job(name: &str, model: Model, update: Update, thermalize: u64, sweeps: u64) -> Job {
    Job {
        name: name.into(),
        model,
        update,
        thermalize,
        sweeps,
    }
}

/// Runs all jobs in parallel (one thread each) and returns their summaries.
fn run(jobs: &[Job], seed: u64) -> Vec<Summary> {
    let opts = Options::default().parallelism(Parallelism::Sequential);
    let mut chains: Vec<(Chain, MemorySink)> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let mut c = Chain::new(j.model, j.update, seed, i as u64, opts).unwrap();
            c.run(j.thermalize, 1, &mut NullSink).unwrap();
            (c, MemorySink::default())
        })
        .collect();
    // Chains of one call run the same number of sweeps; group by length.
    let mut lens: Vec<u64> = jobs.iter().map(|j| j.sweeps).collect();
    lens.sort();
    lens.dedup();
    for len in lens {
        let mut group: Vec<(Chain, MemorySink)> = Vec::new();
        let mut idx = Vec::new();
        for (i, j) in jobs.iter().enumerate() {
            if j.sweeps == len {
                let c = std::mem::replace(
                    &mut chains[i],
                    (
                        Chain::new(j.model, j.update, seed, 1 << 20, opts).unwrap(),
                        MemorySink::default(),
                    ),
                );
                group.push(c);
                idx.push(i);
            }
        }
        run_chains(&mut group, len, 1).unwrap();
        for (i, c) in idx.into_iter().zip(group) {
            chains[i] = c;
        }
    }
    chains
        .iter()
        .zip(jobs)
        .map(|((_, s), j)| summarize(&s.values(), j.model.beta(), j.model.sites()))
        .collect()
}

/// Long Monte Carlo validation against exact results.
#[derive(Debug, clap::Parser)]
#[command(max_term_width = 100)]
struct Args {
    /// Multiplies every run length, above 0 and at most 1000.
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    scale: f64,
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1000.0 => Ok(f),
        _ => Err(format!(
            "expected a factor above 0 and at most 1000, not {s:?}"
        )),
    }
}

fn main() -> ExitCode {
    // --help and bad arguments: clap prints them and exits (0, or 2 for errors).
    let scale = <Args as clap::Parser>::parse().scale;
    let n = |k: f64| (k * scale) as u64;
    let misses = std::cell::Cell::new(0);
    let check = |what: &str, got: f64, err: f64, want: f64, extra: &str| {
        let ok = (got - want).abs() <= 3.0 * err;
        println!(
            "{} {what}: {got:.6} ± {err:.6} vs {want:.6} ({:+.2}σ) {extra}",
            if ok { "ok  " } else { "MISS" },
            (got - want) / err
        );
        if !ok {
            misses.set(misses.get() + 1);
        }
    };
    let t0 = Instant::now();

    // Ferdinand–Fisher.
    let i32m = Model::ising(32, 32, ISING_TC).unwrap();
    let i64m = Model::ising(64, 64, ISING_TC).unwrap();
    let jobs = vec![
        job("SW L=32", i32m, Update::SwendsenWang, 1000, n(100_000.0)),
        job("Wolff L=32", i32m, Update::Wolff, 1000, n(100_000.0)),
        job(
            "Metropolis L=32",
            i32m,
            Update::Metropolis,
            5000,
            n(400_000.0),
        ),
        job("SW L=64", i64m, Update::SwendsenWang, 1000, n(50_000.0)),
        job("Wolff L=64", i64m, Update::Wolff, 1000, n(50_000.0)),
        job(
            "Metropolis L=64",
            i64m,
            Update::Metropolis,
            10_000,
            n(200_000.0),
        ),
    ];
    let res = run(&jobs, 1);
    for (j, s) in jobs.iter().zip(&res) {
        let tau = format!("(τ_e {:.1}, {} sweeps)", s.energy.tau_int, s.samples);
        let l = j.model.dim().0;
        let e_exact = if l == 32 {
            -1.43365846615
        } else {
            -1.42393838983
        };
        check(
            &format!("{} e", j.name),
            s.energy.mean,
            s.energy.stderr,
            e_exact,
            &tau,
        );
        if l == 32 {
            let c = s.specific_heat;
            check(
                &format!("{} c", j.name),
                c.mean,
                c.stderr,
                1.84676759004,
                "",
            );
        }
    }
    println!("[{:.0} s]", t0.elapsed().as_secs_f64());

    // Binder crossings: Ising (U₄ → 0.6107 at T_c) and q = 3 Potts.
    for (label, tc, q) in [("Ising", ISING_TC, 2u8), ("Potts q=3", potts_tc(3), 3)] {
        let sizes = [32usize, 64, 128];
        let temps = [tc * 0.99, tc, tc * 1.01];
        let mut jobs = Vec::new();
        for &l in &sizes {
            for &t in &temps {
                let m = if q == 2 {
                    Model::ising(l, l, t)
                } else {
                    Model::potts(q, l, l, t)
                };
                let sweeps = n(40_000.0 * (32.0 / l as f64).max(0.25));
                jobs.push(job(
                    &format!("{label} L={l} T={t:.5}"),
                    m.unwrap(),
                    Update::SwendsenWang,
                    1000,
                    sweeps,
                ));
            }
        }
        let res = run(&jobs, 2);
        for (j, s) in jobs.iter().zip(&res) {
            println!(
                "     {}: U4 = {:.4} ± {:.4} (τ_m² {:.1})",
                j.name, s.binder.mean, s.binder.stderr, s.binder.tau_int
            );
        }
        let u = |li: usize, ti: usize| res[li * 3 + ti].binder;
        // At T_c: every pair of sizes agrees within 3σ (combined).
        for a in 0..3 {
            for b in a + 1..3 {
                let (x, y) = (u(a, 1), u(b, 1));
                let err = (x.stderr.powi(2) + y.stderr.powi(2)).sqrt();
                check(
                    &format!("{label} U4(L={}) − U4(L={}) at T_c", sizes[a], sizes[b]),
                    x.mean - y.mean,
                    err,
                    0.0,
                    "",
                );
            }
        }
        if q == 2 {
            let x = u(2, 1);
            check(
                "Ising U4(L=128) at T_c vs Salas–Sokal",
                x.mean,
                x.stderr,
                0.6107,
                "",
            );
        }
        // The crossing: below T_c U₄(128) > U₄(32), above it U₄(128) < U₄(32), each by > 3σ.
        for (ti, sign, side) in [(0usize, 1.0, "below"), (2, -1.0, "above")] {
            let (x, y) = (u(2, ti), u(0, ti));
            let err = (x.stderr.powi(2) + y.stderr.powi(2)).sqrt();
            let d = sign * (x.mean - y.mean);
            let ok = d > 3.0 * err;
            println!(
                "{} {label} crossing {side} T_c: U4(128) − U4(32) = {:+.4} ± {err:.4}",
                if ok { "ok  " } else { "MISS" },
                x.mean - y.mean
            );
            if !ok {
                misses.set(misses.get() + 1);
            }
        }
        println!("[{:.0} s]", t0.elapsed().as_secs_f64());
    }
    if misses.get() > 0 {
        println!("{} miss(es)", misses.get());
        ExitCode::FAILURE
    } else {
        println!("all checks passed");
        ExitCode::SUCCESS
    }
}
