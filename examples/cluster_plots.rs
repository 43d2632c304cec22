//! The paper's figures: the cluster-size distribution n_s of site percolation at the threshold on
//! a 512 × 512 torus, and one sample's clusters in colour.
//!
//! ```text
//! cargo run --release --example cluster_plots -- paper/figures            # 100 samples
//! cargo run --release --example cluster_plots -- out 1000 7               # folder, samples, first seed
//! ```
//!
//! Writes `ns.png` (n_s on log–log axes, 5 logarithmic bins per decade, the clusters that wrap
//! around the torus left out, with the guide n_s ∝ s^−τ, τ = 187/91) and `labels.png` (sample
//! one's clusters, 4-connectivity on the torus, empty sites black) into the folder, which must
//! exist. Sample `i` is `clusterlab::generate::percolation(512, 512, p_c, 1, first_seed + i)`
//! with p_c = 0.5927460508, so the figures are the same on every machine. It also prints the
//! slope of log n_s against log s over the bins from s = 10 to 1000, which should be close to
//! −τ ≈ −2.055 (finite-size corrections at L = 512 move it by a few hundredths).

use clusterlab::generate::percolation;
use clusterlab::plot::{
    plot_labels, plot_size_distribution, LabelImageOptions, SizeDistribution, SizePlotOptions,
    TAU_2D,
};
use clusterlab::{label, Analyzer, Boundary, Connectivity, Measures, Parallelism};
use rayon::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

const P_C: f64 = 0.592_746_050_8;
const L: usize = 512;

/// The paper's n_s and label figures.
#[derive(Debug, clap::Parser)]
#[command(max_term_width = 100)]
struct Args {
    /// The folder to write ns.png and labels.png into (it must exist).
    folder: PathBuf,
    /// The number of samples, from 1 to 10^9.
    #[arg(default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    samples: u32,
    /// The seed of the first sample; sample i uses FIRST_SEED + i.
    #[arg(default_value_t = 1)]
    first_seed: u32,
}

fn main() -> ExitCode {
    // --help and bad arguments: clap prints them and exits (0, or 2 for errors).
    let Args {
        folder,
        samples,
        first_seed,
    } = <Args as clap::Parser>::parse();
    match run(&folder, samples, first_seed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(folder: &std::path::Path, samples: u32, first_seed: u32) -> clusterlab::Result<()> {
    // One analyzer per thread, one sample per job.
    let ns = (0..samples)
        .into_par_iter()
        .map_init(
            || {
                Analyzer::new(Connectivity::Four, Boundary::Periodic)
                    .measures(Measures::Shape)
                    .parallelism(Parallelism::Sequential)
            },
            |an, i| -> clusterlab::Result<SizeDistribution> {
                let lattice = percolation(L, L, P_C, 1, first_seed.wrapping_add(i));
                let mut d = SizeDistribution::new();
                d.add_table(&an.analyze(lattice.view())?, true);
                Ok(d)
            },
        )
        .try_reduce(SizeDistribution::new, |mut a, b| {
            a.merge(&b);
            Ok(a)
        })?;

    let mut options = SizePlotOptions::default();
    options.title =
        format!("nₛ at p_c: {samples} samples {L}×{L}, torus, 4-conn., finite clusters");
    let ns_path = folder.join("ns.png");
    plot_size_distribution(&ns_path, &ns, &options)?;

    let lattice = percolation(L, L, P_C, 1, first_seed);
    let labels = label(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
    let labels_path = folder.join("labels.png");
    plot_labels(
        &labels_path,
        labels.array().view(),
        &LabelImageOptions::default(),
    )?;

    // Least-squares slope of log n_s against log s over the bins inside 10..=1000.
    let points: Vec<(f64, f64)> = ns
        .log_binned(options.bins_per_decade)
        .iter()
        .filter(|b| b.s_min >= 10 && b.s_max <= 1000)
        .map(|b| (b.s.ln(), b.ns.ln()))
        .collect();
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    println!(
        "{}: n_s of {} clusters in {samples} samples of {L}x{L} at p_c (seeds {first_seed}..), \
         {} wrapping clusters left out; slope over s = 10..1000: {:.3} (-τ = {:.3})",
        ns_path.display(),
        ns.clusters(),
        ns.excluded(),
        sxy / sxx,
        -TAU_2D
    );
    println!(
        "{}: {} clusters of sample {first_seed}",
        labels_path.display(),
        labels.count()
    );
    Ok(())
}
