//! `clusterlab mc run|report`: Ising and Potts Monte Carlo into an HDF5 run file, and its
//! summary (means, error bars from τ_int, specific heat, susceptibility, Binder cumulant).

use crate::args::{with_farm, Farm};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use clusterlab::mc::{read_run, run_to_file, summarize, Estimate, Model, RunConfig, Update};
use clusterlab::{Backend, MAX_SITES};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Instant;

/// Monte Carlo subcommands.
#[derive(Debug, Subcommand)]
pub enum McCommand {
    /// Simulate a temperature list (independent chains, in parallel) and write the time series
    /// of the observables to an HDF5 run file, with a checkpoint every block.
    Run(RunArgs),
    /// Summarise a run file: per chain, energy, |m|, specific heat, susceptibility and Binder
    /// cumulant with error bars (from τ_int, Sokal's window c = 6) — a table, or JSON.
    Report(ReportArgs),
    /// Draw a run file's figures: time series and histograms of e and |m| per chain; U4, χ, c
    /// and e against T with error bars and the exact T_c.
    #[cfg(feature = "plot")]
    Plot(PlotArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModelName {
    /// H = −J Σ s_i s_j, s = ±1 (T_c = 2.269185…).
    Ising,
    /// H = −J Σ δ(σ_i, σ_j), σ ∈ 0..q (T_c = 1/ln(1+√q)).
    Potts,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AlgorithmName {
    /// Swendsen–Wang on all cores.
    Sw,
    /// Wolff single-cluster updates.
    Wolff,
    /// Checkerboard Metropolis.
    Metropolis,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendName {
    /// Swendsen–Wang on GPU 0 when it opens, else (and Wolff, Metropolis always) the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// GPU 0, device-resident (Swendsen–Wang only).
    Cuda,
}

/// The most sweeps of one run: 10¹².
const MAX_SWEEPS: u64 = 1_000_000_000_000;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The model.
    #[arg(long)]
    pub model: ModelName,
    /// Number of Potts states, 2..=255 (Potts only).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=255))]
    pub q: u8,
    /// Lattice width L, 2..=65535 (and L × M at most 4294967294 sites).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=65535))]
    pub size: u64,
    /// Lattice height M, 2..=65535 (default: L).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=65535))]
    pub height: Option<u64>,
    /// Temperatures in units of J/k_B, comma-separated, each finite and > 0 (at most 4096).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_negative_numbers = true
    )]
    pub temperature: Vec<f64>,
    /// Measured sweeps after thermalisation, 1..=10^12.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_SWEEPS))]
    pub sweeps: u64,
    /// Thermalisation sweeps, 0..=10^12.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=MAX_SWEEPS))]
    pub thermalize: u64,
    /// The update.
    #[arg(long)]
    pub algorithm: AlgorithmName,
    /// The seed (any u64).
    #[arg(long)]
    pub seed: u64,
    /// Where to run.
    #[arg(long, default_value = "auto")]
    pub backend: BackendName,
    /// Record every N-th sweep, 1..=10^9.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub every: u64,
    /// Sweeps per block (series flushed and checkpoint written after each), 1..=10^9.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub checkpoint_every: u64,
    /// The run file (.h5).
    #[arg(long)]
    pub output: PathBuf,
    /// Continue the run in --output from its checkpoint (same parameters required).
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Replace an existing --output.
    #[arg(long)]
    pub force: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run file.
    pub run: PathBuf,
    /// Print one JSON object (`chains`: temperature, sweeps, energy, abs_magnetization,
    /// specific_heat, susceptibility, binder, each with mean, stderr, tau_int).
    #[arg(long)]
    pub json: bool,
}

#[cfg(feature = "plot")]
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The run file.
    pub run: PathBuf,
    /// The folder for the PNGs (created if missing).
    #[arg(long)]
    pub output_dir: PathBuf,
}

/// Runs an `mc` subcommand.
pub fn run(command: McCommand) -> Result<()> {
    match command {
        McCommand::Run(a) => run_chains(a),
        McCommand::Report(a) => report(a),
        #[cfg(feature = "plot")]
        McCommand::Plot(a) => plot(a),
    }
}

#[cfg(feature = "plot")]
fn plot(a: PlotArgs) -> Result<()> {
    use clusterlab::mc::{potts_tc, ISING_TC};
    use clusterlab::plot::{plot_run, ChainPlot};
    let data = read_run(&a.run)?;
    let attr = |k: &str| data.attribute(k).unwrap_or("?").to_string();
    let sites = attr("L").parse::<usize>().unwrap_or(0) * attr("M").parse::<usize>().unwrap_or(0);
    // The exact T_c of the model on the square lattice (J = 1), drawn as a guide.
    let critical = match (attr("model").as_str(), attr("q").parse::<u8>()) {
        ("ising", _) => Some(ISING_TC),
        ("potts", Ok(q)) if q >= 2 => Some(potts_tc(q)),
        _ => None,
    };
    let title = format!(
        "{} q={} {}x{} {}",
        attr("model"),
        attr("q"),
        attr("L"),
        attr("M"),
        attr("algorithm")
    );
    let chains: Vec<ChainPlot<'_>> = data
        .chains
        .iter()
        .map(|c| ChainPlot {
            temperature: c.temperature,
            sweeps: &c.sweeps,
            samples: &c.samples,
        })
        .collect();
    std::fs::create_dir_all(&a.output_dir)
        .with_context(|| format!("cannot create {}", a.output_dir.display()))?;
    for p in plot_run(&title, &chains, sites, critical, &a.output_dir)? {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

fn run_chains(a: RunArgs) -> Result<()> {
    with_farm(|farm| run_chains_on(a, farm))
}

/// A run in this process, or under `mpirun`/`srun` (feature `mpi`) with its temperatures split
/// over the ranks of a farm: rank 0 writes the run file and checkpoint and shows progress.
fn run_chains_on(a: RunArgs, farm: Option<&Farm>) -> Result<()> {
    let (w, h) = (a.size as usize, a.height.unwrap_or(a.size) as usize);
    if (w as u128) * (h as u128) > MAX_SITES as u128 {
        bail!("{w}×{h} is more than {MAX_SITES} sites");
    }
    let t0 = *a
        .temperature
        .first()
        .context("give at least one temperature")?;
    let model = match a.model {
        ModelName::Ising => Model::ising(h, w, t0.abs().max(1.0)),
        ModelName::Potts => Model::potts(a.q, h, w, t0.abs().max(1.0)),
    }?;
    let backend = match a.backend {
        BackendName::Auto => Backend::Auto,
        BackendName::Cpu => Backend::Cpu,
        BackendName::Cuda => Backend::Cuda { device: 0 },
    };
    let update = match a.algorithm {
        AlgorithmName::Sw => Update::SwendsenWang,
        AlgorithmName::Wolff => Update::Wolff,
        AlgorithmName::Metropolis => Update::Metropolis,
    };
    let cfg = RunConfig {
        model,
        temperatures: a.temperature.clone(),
        update,
        seed: a.seed,
        thermalize: a.thermalize,
        sweeps: a.sweeps,
        every: a.every,
        checkpoint_every: a.checkpoint_every,
        backend,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    cfg.check()?;
    #[cfg(feature = "mpi")]
    if let Some(farm) = farm.filter(|f| !f.is_root()) {
        return Ok(farm.serve_chains(&cfg)?);
    }
    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new(a.thermalize + a.sweeps);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {pos}/{len} sweeps {msg} ({elapsed}, eta {eta})")
        {
            bar.set_style(style);
        }
        bar
    };
    let updates = (w * h * cfg.temperatures.len()) as f64;
    let start = Instant::now();
    let mut first: Option<u64> = None;
    let mut progress = |done: u64, total: u64| {
        let from = *first.get_or_insert(done);
        bar.set_length(total);
        bar.set_position(done);
        let secs = start.elapsed().as_secs_f64();
        if done > from && secs > 0.0 {
            let rate = (done - from) as f64 / secs;
            bar.set_message(format!(
                "{rate:.1} sweeps/s, {:.2} ns/spin update",
                1e9 / (rate * updates)
            ));
        }
    };
    match farm {
        #[cfg(feature = "mpi")]
        Some(farm) => farm.run_chains(&cfg, &a.output, a.resume, a.force, &mut progress)?,
        _ => run_to_file(&cfg, &a.output, a.resume, a.force, &mut progress)?,
    }
    bar.finish_and_clear();
    eprintln!(
        "wrote {} ({} chain(s), {} sweeps each) in {:.1} s",
        a.output.display(),
        cfg.temperatures.len(),
        cfg.thermalize + cfg.sweeps,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn json_number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn json_estimate(e: &Estimate) -> String {
    format!(
        "{{\"mean\": {}, \"stderr\": {}, \"tau_int\": {}}}",
        json_number(e.mean),
        json_number(e.stderr),
        json_number(e.tau_int)
    )
}

fn report(a: ReportArgs) -> Result<()> {
    let data = read_run(&a.run)?;
    let attr = |k: &str| data.attribute(k).unwrap_or("?").to_string();
    let sites: usize =
        attr("L").parse::<usize>().unwrap_or(0) * attr("M").parse::<usize>().unwrap_or(0);
    let rows: Vec<_> = data
        .chains
        .iter()
        .map(|c| {
            (
                c.temperature,
                c.samples.len(),
                summarize(&c.samples, 1.0 / c.temperature, sites),
            )
        })
        .collect();
    if a.json {
        let chains: Vec<String> = rows
            .iter()
            .map(|(t, n, s)| {
                format!(
                    "{{\"temperature\": {}, \"sweeps\": {n}, \"energy\": {}, \"abs_magnetization\": {}, \"specific_heat\": {}, \"susceptibility\": {}, \"binder\": {}}}",
                    json_number(*t),
                    json_estimate(&s.energy),
                    json_estimate(&s.abs_magnetization),
                    json_estimate(&s.specific_heat),
                    json_estimate(&s.susceptibility),
                    json_estimate(&s.binder)
                )
            })
            .collect();
        println!(
            "{{\"model\": \"{}\", \"q\": {}, \"L\": {}, \"M\": {}, \"algorithm\": \"{}\", \"seed\": {}, \"chains\": [{}]}}",
            attr("model"),
            attr("q"),
            attr("L"),
            attr("M"),
            attr("algorithm"),
            attr("seed"),
            chains.join(", ")
        );
        return Ok(());
    }
    println!(
        "{} q={} {}×{} {} seed {}",
        attr("model"),
        attr("q"),
        attr("L"),
        attr("M"),
        attr("algorithm"),
        attr("seed")
    );
    println!(
        "{:>10} {:>8} {:>24} {:>22} {:>20} {:>22} {:>20}",
        "T", "samples", "e (τ)", "|m| (τ)", "c", "χ", "U4"
    );
    let pm = |e: &Estimate| format!("{:.6}±{:.6}", e.mean, e.stderr);
    for (t, n, s) in &rows {
        println!(
            "{t:>10.6} {n:>8} {:>17} ({:>4.1}) {:>15} ({:>4.1}) {:>20} {:>22} {:>20}",
            pm(&s.energy),
            s.energy.tau_int,
            pm(&s.abs_magnetization),
            s.abs_magnetization.tau_int,
            pm(&s.specific_heat),
            pm(&s.susceptibility),
            pm(&s.binder)
        );
    }
    Ok(())
}
