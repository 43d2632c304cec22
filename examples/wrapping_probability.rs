//! Physics check of the wrapping detection: the probability that site percolation on an L × L
//! torus at the threshold has a wrapping cluster.
//!
//! ```text
//! cargo run --release --example wrapping_probability                 # L = 256, 2000 samples
//! cargo run --release --example wrapping_probability -- 128 5000 7  # L, samples, first seed
//! cargo run --release --example wrapping_probability -- --help
//! ```
//!
//! At p_c = 0.5927460508 (square lattice, site percolation, 4-connectivity) the probabilities
//! that a cluster wraps horizontally, R^(h), and that one wraps in either direction, R^(e), tend
//! to 0.5210583 and 0.6904737 as L → ∞ (Pinson 1994; Newman & Ziff 2001, who also give
//! R^(b) = 0.3516429 for one cluster wrapping both ways). Their finite-size corrections are tiny
//! (of order L⁻² or smaller), so at L = 256 the estimates from 2000 lattices must agree with the
//! limits within 3 standard errors. The standard error is that of a binomial proportion at the
//! reference value, `sqrt(R (1 − R) / n)`; z = (estimate − R) / SE.
//!
//! Lattices come from [`clusterlab::generate::percolation`] (MT19937; sample `i` uses seed
//! `first_seed + i`), and each is analyzed on a torus with [`Measures::Shape`] (wrapping is found
//! by winding, with the displacement-tracking union-find). The program exits with status 1 when
//! R^(h) or R^(e) misses by 3 standard errors or more, and with status 2 for bad arguments.

use clusterlab::generate::percolation;
use clusterlab::{Analyzer, Boundary, Connectivity, Measures, Parallelism};
use rayon::prelude::*;
use std::process::ExitCode;
use std::time::Instant;

const P_C: f64 = 0.592_746_050_8;
const R_H: f64 = 0.521_058_3;
const R_E: f64 = 0.690_473_7;
const R_B: f64 = 0.351_642_9;

/// The wrapping probabilities at p_c on an L × L torus against their limits.
#[derive(Debug, clap::Parser)]
#[command(max_term_width = 100)]
struct Args {
    /// The side L of the torus, from 1 to 16384.
    #[arg(default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=16384))]
    l: u32,
    /// The number of lattices, from 1 to 10^9.
    #[arg(default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    samples: u32,
    /// The seed of the first lattice; lattice i uses FIRST_SEED + i.
    #[arg(default_value_t = 1)]
    first_seed: u32,
}

fn main() -> ExitCode {
    // --help and bad arguments: clap prints them and exits (0, or 2 for errors).
    let args = <Args as clap::Parser>::parse();
    let (l, n, first_seed) = (args.l as usize, args.samples, args.first_seed);
    let start = Instant::now();
    // Per sample: wraps in x, in y, either, one cluster both.
    let counts = (0..n)
        .into_par_iter()
        .map_init(
            || {
                Analyzer::new(Connectivity::Four, Boundary::Periodic)
                    .measures(Measures::Shape)
                    .parallelism(Parallelism::Sequential)
            },
            |an, i| {
                let lattice = percolation(l, l, P_C, 1, first_seed.wrapping_add(i));
                let s = an
                    .analyze(lattice.view())
                    .expect("a lattice this small is always analyzed")
                    .stats();
                [s.wraps_x, s.wraps_y, s.wraps_either, s.wraps_both].map(u32::from)
            },
        )
        .reduce(
            || [0; 4],
            |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]],
        );
    let secs = start.elapsed().as_secs_f64();

    println!(
        "site percolation on {l}x{l} tori at p_c = {P_C}, 4-connectivity: {n} samples \
         (seeds {first_seed}..), {secs:.2} s\n"
    );
    println!("| quantity | count | estimate | reference (L → ∞) | SE | z |");
    println!("|---|---|---|---|---|---|");
    let mut ok = true;
    for (name, k, reference, checked) in [
        ("R^(h): wraps horizontally", counts[0], R_H, true),
        ("R^(v): wraps vertically", counts[1], R_H, false),
        ("R^(e): wraps either way", counts[2], R_E, true),
        ("R^(b): one cluster wraps both ways", counts[3], R_B, false),
    ] {
        let est = f64::from(k) / f64::from(n);
        let se = (reference * (1.0 - reference) / f64::from(n)).sqrt();
        let z = (est - reference) / se;
        println!("| {name} | {k} | {est:.4} | {reference} | {se:.4} | {z:+.2} |");
        if checked && z.abs() >= 3.0 {
            ok = false;
        }
    }
    println!();
    if ok {
        println!("R^(h) and R^(e) agree with the limits within 3 standard errors.");
        ExitCode::SUCCESS
    } else {
        println!("FAILED: R^(h) or R^(e) is 3 or more standard errors from its limit.");
        ExitCode::FAILURE
    }
}
