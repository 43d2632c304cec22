//! `clusterlab`: label, analyze, generate and plot 2-D lattices from the command line. One file
//! per subcommand; what they share is in `args.rs`.

mod analyze;
mod analyze_frames;
mod args;
mod generate;
mod label;
#[cfg(feature = "hdf5")]
mod mc;
mod ns;
#[cfg(feature = "hdf5")]
mod percolation;
#[cfg(feature = "plot")]
mod plot;
#[cfg(feature = "plot")]
mod plot_data;
mod stack;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Find the clusters of 2-D lattices: percolation samples, cellular-automaton states, segmented
/// images.
///
/// Lattices are 2-D arrays indexed [y, x] in .npy or HDF5 (.h5, .hdf5) files; nonzero sites are
/// occupied. Clusters are numbered 1..=n in raster order of their first site (as
/// scipy.ndimage.label does); 0 marks empty sites.
#[derive(Debug, Parser)]
#[command(name = "clusterlab", version, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Label the clusters of a lattice file and write the label image.
    Label(label::LabelArgs),
    /// Generate a site-percolation lattice (0/1 as uint8) from MT19937.
    Generate(generate::GenerateArgs),
    /// Measure every cluster of a lattice file: size, bounding box, centroid, gyration radius,
    /// site/bond/hull perimeters, filled area, wrapping and spanning; print a summary (clusters,
    /// largest, mean cluster size S, P∞, wrapping) and optionally write the table.
    Analyze(analyze::AnalyzeArgs),
    /// Draw a PNG: the cluster-size distribution n_s on log-log axes (--kind sizes), averaged
    /// over lattice files or generated percolation samples, or a lattice's clusters in colour
    /// (--kind labels). Prints a one-line summary.
    #[cfg(feature = "plot")]
    Plot(plot::PlotArgs),
    /// Ising and q-state Potts Monte Carlo (Swendsen–Wang, Wolff, Metropolis) into HDF5 run
    /// files, and their reports.
    #[cfg(feature = "hdf5")]
    #[command(subcommand)]
    Mc(mc::McCommand),
    /// Percolation-threshold studies: Newman–Ziff sweeps of several sizes into a resumable HDF5
    /// study file, and the estimates (p_c, wrapping probabilities, τ) with errors, merges and
    /// figures.
    #[cfg(feature = "hdf5")]
    Percolation(percolation::PercolationArgs),
}

/// On SIGINT or SIGTERM (Ctrl-C, a batch scheduler's stop): remove the output being written
/// and exit with 128 + the signal (130, 143), so that nothing is left behind.
fn clean_up_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            clusterlab::io::remove_pending_temporaries();
            let name = if signal == SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            eprintln!(
                "error: stopped by {name}; the file being written was removed (completed outputs and checkpoints are kept)"
            );
            std::process::exit(128 + signal);
        }
    });
}

fn main() -> ExitCode {
    clean_up_on_signals();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: print them in full.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // No subcommand: the overview, on stderr.
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {}", clap_one_line(&e));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Label(args) => label::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Analyze(args) => analyze::run(args),
        #[cfg(feature = "plot")]
        Command::Plot(args) => plot::run(args),
        #[cfg(feature = "hdf5")]
        Command::Mc(command) => mc::run(command),
        #[cfg(feature = "hdf5")]
        Command::Percolation(args) => percolation::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// A clap error on one line: its message and hints, without the usage block.
fn clap_one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("Usage:") || line.starts_with("For more information")
        {
            continue;
        }
        parts.push(line.strip_prefix("error:").unwrap_or(line).trim());
    }
    let mut msg = parts.join(" ");
    msg.push_str(" (see --help)");
    msg
}

/// An error and its causes on one line, `outer: cause: cause`, leaving out a cause that the
/// message before it already quotes (the library's errors include their source's text).
fn error_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = one_line(&cause.to_string());
        if !msg.contains(&text) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&text);
        }
    }
    msg
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
