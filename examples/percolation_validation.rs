//! Validates the percolation studies against exact results; exits non-zero on a miss.
//!
//! - `p_c` (extrapolated from the crossings of `(R_h + R_v)/2` with its exact torus value) within
//!   3 σ of 0.59274605079 (site, 4), 0.40725394921 (site, 8) and 1/2 (bond);
//! - `R_h`, `R_v`, `R_e`, `R_b`, `R_1` at the exact `p_c` within 3 σ of their exact `L → ∞` values
//!   at every `L ≥ 128`;
//! - `τ` from the log-binned `n_s` at `p_c` of the largest size within 0.03 of 187/91.
//!
//! ```text
//! cargo run --release --example percolation_validation -- [--sizes 32,64,128] [--samples 4000]
//!     [--models site4,site8,bond] [--seed 1] [--threads N]
//! ```

use clusterlab::percolation::{Model, Study, StudyConfig, Wrapping, TAU};
use clusterlab::{Boundary, Connectivity, Options, Parallelism};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The model names of --models.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ModelArg {
    /// Site percolation, 4-connectivity.
    Site4,
    /// Site percolation, 8-connectivity.
    Site8,
    /// Bond percolation.
    Bond,
}

/// Validates the percolation studies against exact results.
#[derive(Debug, clap::Parser)]
#[command(max_term_width = 100)]
struct Args {
    /// The lattice sides L (L × L tori), comma-separated, each from 4 to 65536.
    #[arg(long, value_delimiter = ',', default_value = "32,64,128",
          value_parser = clap::value_parser!(u32).range(4..=65536))]
    sizes: Vec<u32>,
    /// Samples per size, from 1 to 10^9.
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    samples: u64,
    /// The models, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "site4,site8,bond"
    )]
    models: Vec<ModelArg>,
    /// The seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads, 1 to 4096 (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    threads: Option<u64>,
}

fn main() -> ExitCode {
    // --help and bad arguments: clap prints them and exits (0, or 2 for errors).
    let args = <Args as clap::Parser>::parse();
    let sizes: Vec<usize> = args.sizes.iter().map(|&l| l as usize).collect();
    let (samples, seed) = (args.samples, args.seed);
    let threads = args.threads.unwrap_or(0) as usize;
    let models: Vec<Model> = args
        .models
        .iter()
        .map(|m| match m {
            ModelArg::Site4 => Model::Site(Connectivity::Four),
            ModelArg::Site8 => Model::Site(Connectivity::Eight),
            ModelArg::Bond => Model::Bond,
        })
        .collect();
    let mut options = Options::default();
    if threads > 0 {
        options = options.parallelism(Parallelism::Threads(threads));
    }
    let mut misses = Vec::new();
    let all = Instant::now();
    for model in models {
        let started = Instant::now();
        let config = StudyConfig {
            model,
            boundary: Boundary::Periodic,
            sizes: sizes.iter().map(|&l| (l, l)).collect(),
            samples,
            seed,
            p_grid: StudyConfig::default_grid(model),
            command: "percolation_validation".into(),
            method: Default::default(),
        };
        let mut study = Study::new(config).expect("valid settings");
        study
            .run(&options, Duration::from_secs(30), |_, p| {
                eprint!("\r{model}: {}/{} samples", p.done, p.total);
                Ok(())
            })
            .expect("study runs");
        eprintln!();
        let r = study.results().expect("results");
        let secs = started.elapsed().as_secs_f64();
        println!("== {model} torus, sizes {sizes:?}, {samples} samples per size, {secs:.1} s wall");
        for s in &r.sizes {
            let c = s.crossing.expect("square torus has crossings");
            println!(
                "  L = {:4}: p_cross = {:.7} ± {:.7}   R_h {:.5}±{:.5} R_v {:.5}±{:.5} R_e {:.5}±{:.5} R_b {:.5}±{:.5} R_1 {:.5}±{:.5}",
                s.width, c.p.value, c.p.stderr,
                s.at_pc[0].value, s.at_pc[0].stderr, s.at_pc[1].value, s.at_pc[1].stderr,
                s.at_pc[2].value, s.at_pc[2].stderr, s.at_pc[3].value, s.at_pc[3].stderr,
                s.at_pc[4].value, s.at_pc[4].stderr,
            );
            if s.width >= 128 {
                for (k, kind) in Wrapping::ALL[..5].iter().enumerate() {
                    let e = s.at_pc[k];
                    let dev = (e.value - kind.torus_limit()) / e.stderr;
                    if dev.abs() > 3.0 {
                        misses.push(format!(
                            "{model} L = {}: {} = {} ± {} is {dev:.1} σ from {}",
                            s.width,
                            kind.name(),
                            e.value,
                            e.stderr,
                            kind.torus_limit()
                        ));
                    }
                }
            }
        }
        let fit = r.p_c.expect("p_c fit");
        let pc = fit.intercept;
        let dev = (pc.value - r.reference_pc) / pc.stderr;
        println!(
            "  p_c = {:.7} ± {:.7} (reference {:.11}, {dev:+.2} σ; a = {:.4} ± {:.4}, χ²/dof = {:.2}/{}), {} samples",
            pc.value, pc.stderr, r.reference_pc, fit.slope.value, fit.slope.stderr, fit.chi2, fit.dof, r.samples
        );
        if dev.abs() > 3.0 {
            misses.push(format!("{model}: p_c {dev:.1} σ from the reference"));
        }
        let largest = r.sizes.last().expect("a size");
        match &largest.tau {
            Some(t) => {
                println!(
                    "  tau (L = {}, s in [{}, {}]) = {:.4} ± {:.4} (187/91 = {:.4}; χ²/dof = {:.1}/{})",
                    largest.width, t.range.0, t.range.1, t.tau.value, t.tau.stderr, TAU, t.chi2, t.dof
                );
                if (t.tau.value - TAU).abs() > 0.03 {
                    misses.push(format!(
                        "{model}: tau {} more than 0.03 from 187/91",
                        t.tau.value
                    ));
                }
            }
            None => misses.push(format!("{model}: no tau fit (too few bins)")),
        }
    }
    println!("total wall time {:.1} s", all.elapsed().as_secs_f64());
    if misses.is_empty() {
        println!("all checks passed");
        ExitCode::SUCCESS
    } else {
        for m in &misses {
            println!("MISS: {m}");
        }
        ExitCode::FAILURE
    }
}
