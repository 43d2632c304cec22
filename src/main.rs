//! `clusterlab`: label the clusters of a 2-D lattice file, or generate a test lattice.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use clusterlab::io::{self, Format, LabelMeta, Lattice};
use clusterlab::{Algorithm, Backend, Boundary, Connectivity, Labeler, Parallelism};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

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
    Label(LabelArgs),
    /// Generate a site-percolation lattice (0/1 as uint8) from MT19937.
    Generate(GenerateArgs),
    /// Measure every cluster of a lattice file: size, bounding box, centroid, gyration radius,
    /// site/bond/hull perimeters, filled area, wrapping and spanning; print a summary (clusters,
    /// largest, mean cluster size S, P∞, wrapping) and optionally write the table.
    Analyze(AnalyzeArgs),
    /// Draw a PNG: the cluster-size distribution n_s on log-log axes (--kind sizes), averaged
    /// over lattice files or generated percolation samples, or a lattice's clusters in colour
    /// (--kind labels). Prints a one-line summary.
    #[cfg(feature = "plot")]
    Plot(PlotArgs),
}

#[cfg(feature = "plot")]
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  clusterlab plot --size 512 --p 0.592746 --samples 100 --boundary periodic --exclude-percolating
  clusterlab plot pc.npy --kind labels --output clusters.png
  clusterlab plot samples/*.npy --kind sizes --connectivity 8 --output ns.png")]
struct PlotArgs {
    /// Lattice files (.npy, .h5, .hdf5; nonzero = occupied). --kind sizes averages n_s over all
    /// of them; --kind labels draws one. Leave out to generate percolation samples instead (--size
    /// and --p).
    #[arg(value_name = "INPUT", required_unless_present = "size")]
    inputs: Vec<PathBuf>,

    /// What to draw: sizes (n_s against s on log-log axes, log-binned, with the s^-187/91 guide of
    /// 2-D percolation) or labels (each cluster in a colour hashed from its label).
    #[arg(short, long, value_enum, default_value_t = PlotKind::Sizes)]
    kind: PlotKind,

    /// Where to write the PNG (replaced atomically). Default: sizes.png or labels.png in the
    /// current folder.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,

    /// Which neighbours join a cluster: 4 (edges) or 8 (edges and diagonals).
    #[arg(short, long, value_enum, default_value_t = ConnectivityArg::Four)]
    connectivity: ConnectivityArg,

    /// What lies beyond the edges: open, periodic (a torus: both axes wrap), periodic-x (columns
    /// wrap) or periodic-y (rows wrap).
    #[arg(short, long, value_enum, default_value_t = BoundaryArg::Open)]
    boundary: BoundaryArg,

    /// Same-value segments: neighbours join only when they hold the same nonzero value.
    #[arg(short, long)]
    segments: bool,

    /// The HDF5 dataset holding the lattice (default /lattice). Ignored for .npy input.
    #[arg(short, long, value_name = "NAME", conflicts_with = "size")]
    dataset: Option<String>,

    /// Generate L x L (or H x W) site-percolation samples instead of reading files (MT19937, as
    /// `clusterlab generate` does).
    #[arg(long, value_name = "HxW|L", value_parser = parse_size, requires = "p", conflicts_with = "inputs")]
    size: Option<(usize, usize)>,

    /// Occupation probability of the generated samples, from 0 to 1 (p_c = 0.592746 for site
    /// percolation with 4-connectivity, 0.407254 with 8).
    #[arg(short, long = "p", value_name = "P", value_parser = parse_probability, requires = "size")]
    p: Option<f64>,

    /// Number of generated samples (n_s is averaged over them; --kind labels draws the first).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1, value_parser = parse_samples, requires = "size")]
    samples: u32,

    /// Seed of the first generated sample; sample i uses seed S + i.
    #[arg(long, value_name = "S", default_value_t = 1, requires = "size")]
    seed: u32,

    /// sizes: leave out the clusters that wrap (periodic axes) or span (open axes), as the
    /// mean cluster size S does.
    #[arg(short = 'x', long)]
    exclude_percolating: bool,

    /// sizes: logarithmic bins per decade of s; 0 plots every size that occurs.
    #[arg(long, value_name = "N", default_value_t = 5)]
    bins_per_decade: u32,

    /// sizes: leave out the guide line n_s ∝ s^-τ, τ = 187/91.
    #[arg(long)]
    no_guide: bool,

    /// sizes: the exponent τ of the guide line.
    #[arg(long, value_name = "TAU", default_value_t = clusterlab::plot::TAU_2D, hide_default_value = true, conflicts_with = "no_guide")]
    tau: f64,

    /// sizes: the chart's size in pixels, WxH.
    #[arg(long, value_name = "WxH", default_value = "800x600", value_parser = parse_pixels)]
    chart: (u32, u32),

    /// sizes: the caption above the chart (default: what was plotted).
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,

    /// labels: the colour of empty sites.
    #[arg(long, value_enum, default_value_t = BackgroundArg::Black)]
    background: BackgroundArg,

    /// labels: downscale lattices with a side longer than this many pixels (blocks of f x f
    /// sites become one pixel, drawn as their most common cluster when at least half occupied).
    #[arg(long, value_name = "PIXELS", default_value_t = 2048, value_parser = parse_pixel_count)]
    max_side: u32,

    /// labels: pixels per site (or block) along each axis, to enlarge small lattices.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = parse_pixel_count)]
    scale: u32,

    /// Worker threads (at least 1). Default: all cores (rayon's pool, which follows
    /// RAYON_NUM_THREADS).
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

#[cfg(feature = "plot")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlotKind {
    /// The cluster-size distribution n_s on log-log axes.
    Sizes,
    /// The clusters in colour.
    Labels,
}

#[cfg(feature = "plot")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackgroundArg {
    /// Empty sites black.
    Black,
    /// Empty sites white.
    White,
}

#[derive(Debug, Args)]
struct AnalyzeArgs {
    /// The lattice: a 2-D array of booleans or non-negative integers in a .npy, .h5 or .hdf5 file.
    input: PathBuf,

    /// Where to write the cluster table (replaced atomically). .csv: one row per cluster (header
    /// label,size,x_min,...,spans_y; flags 0/1). .h5/.hdf5: datasets /clusters/<column> with
    /// attributes shape, connectivity, boundary, count and segments, plus /labels and /lattice.
    /// Without it, only the summary is printed.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,

    /// Which neighbours join a cluster: 4 (edges) or 8 (edges and diagonals).
    #[arg(short, long, value_enum, default_value_t = ConnectivityArg::Four)]
    connectivity: ConnectivityArg,

    /// What lies beyond the edges: open, periodic (a torus: both axes wrap), periodic-x (columns
    /// wrap) or periodic-y (rows wrap).
    #[arg(short, long, value_enum, default_value_t = BoundaryArg::Open)]
    boundary: BoundaryArg,

    /// Same-value segments: neighbours join only when they hold the same nonzero value, and
    /// every site not in a segment counts as outside it for the perimeters.
    #[arg(short, long)]
    segments: bool,

    /// The HDF5 dataset holding the lattice (default /lattice). Ignored for .npy input.
    #[arg(short, long, value_name = "NAME")]
    dataset: Option<String>,

    /// Make no label image: HDF5 output holds only the cluster table (no /labels, no
    /// /lattice), and a GPU computing --shape tables writes no labels at all.
    #[arg(long)]
    no_labels: bool,

    /// Only the shape columns (size, bounding box, centroid, gyration, wrapping, spanning): no
    /// perimeters, no filled area. On a GPU backend these are computed entirely on the device.
    #[arg(long)]
    shape: bool,

    /// Where to run: cpu, cuda (GPU 0), cuda:N or auto (the GPU when one is usable). On a GPU,
    /// --shape tables are computed on the device; full tables label there and measure the
    /// perimeters on the CPU. Tables are identical on every backend.
    #[arg(long, value_name = "BACKEND", default_value = "cpu", value_parser = parse_backend)]
    backend: Backend,

    /// Worker threads (at least 1). Default: all cores (rayon's pool, which follows
    /// RAYON_NUM_THREADS).
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct LabelArgs {
    /// The lattice: a 2-D array of booleans or non-negative integers in a .npy, .h5 or .hdf5 file.
    /// Signed and 64-bit integers are converted to the narrowest of uint8/uint16/uint32 that holds
    /// every value.
    input: PathBuf,

    /// Where to write the labels (replaced atomically). .npy: the uint32 label image. .h5/.hdf5:
    /// dataset /labels with attributes connectivity, boundary, count and segments, plus the input
    /// as /lattice.
    #[arg(short, long, value_name = "PATH")]
    output: PathBuf,

    /// Which neighbours join a cluster: 4 (edges) or 8 (edges and diagonals).
    #[arg(short, long, value_enum, default_value_t = ConnectivityArg::Four)]
    connectivity: ConnectivityArg,

    /// What lies beyond the edges: open, periodic (a torus: both axes wrap), periodic-x (columns
    /// wrap) or periodic-y (rows wrap).
    #[arg(short, long, value_enum, default_value_t = BoundaryArg::Open)]
    boundary: BoundaryArg,

    /// Label same-value segments: neighbours join only when they hold the same nonzero value
    /// (for segmented images and multi-state automata). Without it, any two occupied neighbours
    /// join.
    #[arg(short, long)]
    segments: bool,

    /// The HDF5 dataset holding the lattice (default /lattice). Ignored for .npy input.
    #[arg(short, long, value_name = "NAME")]
    dataset: Option<String>,

    /// The labeling algorithm; all give the same labels. auto picks the fastest (strips).
    #[arg(short, long, value_enum, default_value_t = AlgorithmArg::Auto)]
    algorithm: AlgorithmArg,

    /// Worker threads (at least 1). Default: all cores (rayon's pool, which follows
    /// RAYON_NUM_THREADS).
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_threads)]
    threads: Option<usize>,

    /// Where to label: cpu, cuda (GPU 0), cuda:N (GPU N) or auto (a usable NVIDIA GPU, else
    /// the CPU; the summary names the choice). cuda without a usable GPU is an error.
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = parse_backend)]
    backend: Backend,

    /// Print nothing but errors (no summary, no progress).
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct GenerateArgs {
    /// Lattice size: HxW (height x width, e.g. 512x1024) or L for a square L x L lattice.
    #[arg(long, value_name = "HxW|L", value_parser = parse_size)]
    size: (usize, usize),

    /// Occupation probability of each site (or block), from 0 to 1.
    #[arg(short, long = "p", value_name = "P", value_parser = parse_probability)]
    p: f64,

    /// Granularity: occupy whole GxG blocks, each with probability P (density x granularity
    /// benchmark of Hennequin et al.). 1 = independent sites.
    #[arg(short, long, value_name = "G", default_value_t = 1, value_parser = parse_grain)]
    grain: usize,

    /// Seed of the MT19937 generator (one next_u32() draw per site or block, in raster order;
    /// occupied when u / 2^32 < P).
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u32,

    /// Where to write the lattice (.npy, or dataset /lattice in .h5/.hdf5), replaced atomically.
    #[arg(short, long, value_name = "PATH")]
    output: PathBuf,

    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ConnectivityArg {
    /// The four edge neighbours.
    #[value(name = "4")]
    Four,
    /// The edge neighbours and the four diagonals.
    #[value(name = "8")]
    Eight,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BoundaryArg {
    /// Nothing beyond the edges.
    Open,
    /// A torus: both axes wrap.
    Periodic,
    /// A cylinder: column 0 neighbours the last column.
    PeriodicX,
    /// A cylinder: row 0 neighbours the last row.
    PeriodicY,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AlgorithmArg {
    /// The fastest available (strips).
    Auto,
    /// Breadth-first flood fill: slow, obviously correct reference.
    Bfs,
    /// Classic Hoshen-Kopelman raster scan.
    HoshenKopelman,
    /// Run-based union-find over strips labeled in parallel.
    Strips,
}

impl From<ConnectivityArg> for Connectivity {
    fn from(c: ConnectivityArg) -> Self {
        match c {
            ConnectivityArg::Four => Connectivity::Four,
            ConnectivityArg::Eight => Connectivity::Eight,
        }
    }
}

impl From<BoundaryArg> for Boundary {
    fn from(b: BoundaryArg) -> Self {
        match b {
            BoundaryArg::Open => Boundary::Open,
            BoundaryArg::Periodic => Boundary::Periodic,
            BoundaryArg::PeriodicX => Boundary::PeriodicX,
            BoundaryArg::PeriodicY => Boundary::PeriodicY,
        }
    }
}

impl From<AlgorithmArg> for Algorithm {
    fn from(a: AlgorithmArg) -> Self {
        match a {
            AlgorithmArg::Auto => Algorithm::Auto,
            AlgorithmArg::Bfs => Algorithm::Bfs,
            AlgorithmArg::HoshenKopelman => Algorithm::HoshenKopelman,
            AlgorithmArg::Strips => Algorithm::Strips,
        }
    }
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse().map_err(|e: clusterlab::Error| e.to_string())
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("expected a thread count of at least 1, not {s:?}")),
    }
}

fn parse_size(s: &str) -> Result<(usize, usize), String> {
    let dim = |t: &str| -> Result<usize, String> {
        t.trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("expected HxW or L with positive whole numbers, not {s:?}"))
    };
    let (h, w) = match s.split_once(['x', 'X']) {
        Some((h, w)) => (dim(h)?, dim(w)?),
        None => {
            let l = dim(s)?;
            (l, l)
        }
    };
    match h.checked_mul(w) {
        Some(n) if n <= clusterlab::MAX_SITES => Ok((h, w)),
        _ => Err(format!(
            "{h}x{w} is too large: at most {} sites",
            clusterlab::MAX_SITES
        )),
    }
}

fn parse_probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("expected a probability from 0 to 1, not {s:?}")),
    }
}

#[cfg(feature = "plot")]
fn parse_samples(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("expected a sample count of at least 1, not {s:?}")),
    }
}

#[cfg(feature = "plot")]
fn parse_pixel_count(s: &str) -> Result<u32, String> {
    let max = clusterlab::plot::MAX_IMAGE_SIDE;
    match s.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number from 1 to {max}, not {s:?}"
        )),
    }
}

#[cfg(feature = "plot")]
fn parse_pixels(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "expected WxH in pixels, each from 16 to {}, not {s:?}",
            clusterlab::plot::MAX_IMAGE_SIDE
        )
    };
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let dim = |t: &str| {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (16..=clusterlab::plot::MAX_IMAGE_SIDE).contains(n))
            .ok_or_else(bad)
    };
    Ok((dim(w)?, dim(h)?))
}

fn parse_grain(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(g) if g >= 1 => Ok(g),
        _ => Err(format!("expected a block size of at least 1, not {s:?}")),
    }
}

fn main() -> ExitCode {
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
        Command::Label(args) => label(args),
        Command::Generate(args) => generate(args),
        Command::Analyze(args) => analyze(args),
        #[cfg(feature = "plot")]
        Command::Plot(args) => plot(args),
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

/// A spinner on stderr naming the current stage; indicatif hides it when stderr is not a
/// terminal. Cleared when dropped, so that error messages start on a clean line.
struct Stage(ProgressBar);

impl Stage {
    fn new(quiet: bool) -> Stage {
        if quiet {
            return Stage(ProgressBar::hidden());
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(100));
        Stage(bar)
    }

    fn set(&self, msg: String) {
        self.0.set_message(msg);
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

fn label(args: LabelArgs) -> Result<()> {
    // Refuse an unusable output before any work.
    Format::from_path(&args.output)?;
    check_output_folder(&args.output)?;
    if let (Ok(a), Ok(b)) = (args.input.canonicalize(), args.output.canonicalize()) {
        if a == b {
            bail!(
                "{}: the output would replace the input lattice; choose another --output",
                args.output.display()
            );
        }
    }

    let stage = Stage::new(args.quiet);
    stage.set(format!("reading {}", args.input.display()));
    let lattice = io::read_lattice(&args.input, args.dataset.as_deref())?;
    let (h, w) = lattice.dim();

    let connectivity = Connectivity::from(args.connectivity);
    let boundary = Boundary::from(args.boundary);
    let parallelism = match args.threads {
        Some(n) => Parallelism::Threads(n),
        None => Parallelism::Rayon,
    };
    let mut labeler = Labeler::new(connectivity, boundary)
        .segments(args.segments)
        .algorithm(args.algorithm.into())
        .parallelism(parallelism)
        .backend(args.backend)?;
    stage.set(format!("labeling {h}x{w} lattice"));
    let start = Instant::now();
    let labels = lattice.label_with(&mut labeler)?;
    let elapsed = start.elapsed();

    stage.set(format!("writing {}", args.output.display()));
    let meta = LabelMeta {
        connectivity,
        boundary,
        segments: args.segments,
    };
    io::write_labels(&args.output, &labels, &meta, Some(&lattice))?;
    drop(stage);

    if !args.quiet {
        let sizes = labels.sizes();
        let sites = (h * w) as f64;
        let largest = sizes.iter().skip(1).copied().max().unwrap_or(0);
        let occupied = (h * w) as u64 - sizes[0];
        let mode = if args.segments {
            "same-value segments"
        } else {
            "occupied sites"
        };
        let fraction = |n: u64| if sites > 0.0 { n as f64 / sites } else { 0.0 };
        let summary = format!(
            "input      {} ({h}x{w} {})\n\
             labeling   {}-connectivity, {} boundary, {mode}\n\
             clusters   {}\n\
             largest    {largest} sites ({:.4} of the lattice)\n\
             occupied   {:.4} ({occupied} sites)\n\
             time       {:.3} ms labeling ({})\n\
             output     {}\n",
            args.input.display(),
            lattice.dtype(),
            connectivity.neighbours(),
            boundary,
            labels.count(),
            fraction(largest),
            fraction(occupied),
            elapsed.as_secs_f64() * 1e3,
            labeler.backend_name(),
            args.output.display(),
        );
        print_stdout(&summary);
    }
    Ok(())
}

fn generate(args: GenerateArgs) -> Result<()> {
    Format::from_path(&args.output)?;
    check_output_folder(&args.output)?;
    let (h, w) = args.size;

    let stage = Stage::new(args.quiet);
    stage.set(format!("generating {h}x{w} lattice"));
    let array = clusterlab::generate::percolation(h, w, args.p, args.grain, args.seed);
    let lattice = Lattice::U8(array);
    stage.set(format!("writing {}", args.output.display()));
    io::write_lattice(&args.output, &lattice)?;
    drop(stage);

    if !args.quiet {
        let occupied = lattice.occupied();
        print_stdout(&format!(
            "generated  {h}x{w} site percolation, p = {}, grain {}, seed {}\n\
             occupied   {:.4} ({occupied} sites)\n\
             output     {}\n",
            args.p,
            args.grain,
            args.seed,
            occupied as f64 / (h * w) as f64,
            args.output.display(),
        ));
    }
    Ok(())
}

fn analyze(args: AnalyzeArgs) -> Result<()> {
    // Refuse an unusable output before any work.
    let csv = match &args.output {
        None => false,
        Some(out) => {
            let ext = out
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            let csv = match ext.as_deref() {
                Some("csv") => true,
                Some("h5") | Some("hdf5") => false,
                _ => bail!(
                    "{}: unsupported output extension: the cluster table is written as .csv, \
                     .h5 or .hdf5",
                    out.display()
                ),
            };
            check_output_folder(out)?;
            if let (Ok(a), Ok(b)) = (args.input.canonicalize(), out.canonicalize()) {
                if a == b {
                    bail!(
                        "{}: the output would replace the input lattice; choose another --output",
                        out.display()
                    );
                }
            }
            csv
        }
    };

    let stage = Stage::new(args.quiet);
    stage.set(format!("reading {}", args.input.display()));
    let lattice = io::read_lattice(&args.input, args.dataset.as_deref())?;
    let (h, w) = lattice.dim();
    let connectivity = Connectivity::from(args.connectivity);
    let boundary = Boundary::from(args.boundary);
    let parallelism = match args.threads {
        Some(n) => Parallelism::Threads(n),
        None => Parallelism::Rayon,
    };
    let measures = if args.shape {
        clusterlab::Measures::Shape
    } else {
        clusterlab::Measures::All
    };
    let mut analyzer = clusterlab::Analyzer::new(connectivity, boundary)
        .segments(args.segments)
        .parallelism(parallelism)
        .measures(measures)
        .backend(args.backend)?;
    stage.set(format!("analyzing {h}x{w} lattice"));
    let start = Instant::now();
    let (table, labels) = if args.no_labels {
        let table = match &lattice {
            Lattice::U8(a) => analyzer.analyze(a.view())?,
            Lattice::U16(a) => analyzer.analyze(a.view())?,
            Lattice::U32(a) => analyzer.analyze(a.view())?,
        };
        (table, None)
    } else {
        let (table, labels) = match &lattice {
            Lattice::U8(a) => analyzer.analyze_labeled(a.view())?,
            Lattice::U16(a) => analyzer.analyze_labeled(a.view())?,
            Lattice::U32(a) => analyzer.analyze_labeled(a.view())?,
        };
        (table, Some(labels))
    };
    let elapsed = start.elapsed();
    if let Some(out) = &args.output {
        stage.set(format!("writing {}", out.display()));
        if csv {
            table.write_csv(out)?;
        } else if let Some(labels) = &labels {
            table.write_hdf5_with(out, Some(labels), Some(&lattice))?;
        } else {
            table.write_hdf5(out)?;
        }
    }
    drop(stage);

    if !args.quiet {
        let s = table.stats();
        let yes = |b: bool| if b { "yes" } else { "no" };
        let fraction = |n: u64| {
            if s.sites > 0 {
                n as f64 / s.sites as f64
            } else {
                0.0
            }
        };
        let mode = if args.segments {
            "same-value segments"
        } else {
            "occupied sites"
        };
        let mut text = format!(
            "input      {} ({h}x{w} {})\n\
             analysis   {}-connectivity, {} boundary, {mode}\n\
             clusters   {}\n\
             largest    {} sites ({:.4} of the lattice)\n\
             mean size  S = {:.4} (clusters that neither wrap nor span)\n\
             P∞         {:.6} ({} percolating cluster{})\n",
            args.input.display(),
            lattice.dtype(),
            connectivity.neighbours(),
            boundary,
            s.clusters,
            s.largest,
            fraction(s.largest),
            s.mean_size,
            s.p_infinity,
            s.percolating,
            if s.percolating == 1 { "" } else { "s" },
        );
        if boundary != Boundary::Open {
            text.push_str(&format!(
                "wrapping   x: {}, y: {}, both (one cluster): {}, either: {}\n",
                yes(s.wraps_x),
                yes(s.wraps_y),
                yes(s.wraps_both),
                yes(s.wraps_either)
            ));
        }
        if !(boundary.wraps_x() && boundary.wraps_y()) {
            text.push_str(&format!(
                "spanning   x: {}, y: {}\n",
                if boundary.wraps_x() {
                    "-"
                } else {
                    yes(s.spans_x)
                },
                if boundary.wraps_y() {
                    "-"
                } else {
                    yes(s.spans_y)
                },
            ));
        }
        text.push_str(&format!(
            "time       {:.3} ms ({} threads)\n",
            elapsed.as_secs_f64() * 1e3,
            match args.threads {
                Some(n) => n,
                None => rayon_threads(),
            }
        ));
        if analyzer.backend_name() != "cpu" {
            text.push_str(&format!("backend    {}\n", analyzer.backend_name()));
        }
        if let Some(out) = &args.output {
            text.push_str(&format!("output     {}\n", out.display()));
        }
        print_stdout(&text);
    }
    Ok(())
}

/// The size of rayon's global pool.
fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The output's folder must exist (checked up front so that no work is wasted).
fn check_output_folder(output: &Path) -> Result<()> {
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => return Ok(()),
    };
    let meta =
        std::fs::metadata(dir).with_context(|| format!("{}: output folder", dir.display()))?;
    if !meta.is_dir() {
        bail!("{}: not a folder (the output's parent)", dir.display());
    }
    Ok(())
}

/// Prints to stdout, ignoring a closed pipe (`clusterlab ... | head`) rather than panicking.
fn print_stdout(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

/// `clusterlab plot`: n_s on log-log axes or a label image, as PNG.
#[cfg(feature = "plot")]
fn plot(args: PlotArgs) -> Result<()> {
    use clusterlab::plot::{
        plot_labels, plot_size_distribution, Background, LabelImageOptions, SizeDistribution,
        SizePlotOptions,
    };
    use clusterlab::{Analyzer, Measures};
    use rayon::prelude::*;

    // Refuse unusable arguments before any work.
    let output = args.output.clone().unwrap_or_else(|| {
        PathBuf::from(match args.kind {
            PlotKind::Sizes => "sizes.png",
            PlotKind::Labels => "labels.png",
        })
    });
    let ext = output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if ext.as_deref() != Some("png") {
        bail!(
            "{}: unsupported output extension: plots are written as .png",
            output.display()
        );
    }
    check_output_folder(&output)?;
    for input in &args.inputs {
        if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize()) {
            if a == b {
                bail!(
                    "{}: the output would replace an input lattice; choose another --output",
                    output.display()
                );
            }
        }
    }
    if args.kind == PlotKind::Labels {
        if args.inputs.len() > 1 {
            bail!(
                "--kind labels draws one lattice: give one input file, not {}",
                args.inputs.len()
            );
        }
        if args.samples > 1 {
            bail!(
                "--kind labels draws one lattice: --samples must be 1, not {}",
                args.samples
            );
        }
    }
    if !(args.tau.is_finite() && args.tau > 0.0) {
        bail!("--tau {}: expected a positive exponent", args.tau);
    }

    let connectivity = Connectivity::from(args.connectivity);
    let boundary = Boundary::from(args.boundary);
    let pool = match args.threads {
        Some(n) => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .with_context(|| format!("cannot start {n} threads"))?,
        ),
        None => None,
    };
    let in_pool = |f: &(dyn Fn() -> Result<SizeDistribution> + Sync)| match &pool {
        Some(p) => p.install(f),
        None => f(),
    };
    let generated = args.size.zip(args.p);
    let what = match generated {
        Some(((h, w), p)) => {
            let n = args.samples;
            format!(
                "{n} sample{} of {h}x{w} site percolation at p = {p}",
                if n == 1 { "" } else { "s" }
            )
        }
        None if args.inputs.len() == 1 => args.inputs[0].display().to_string(),
        None => format!("{} lattice files", args.inputs.len()),
    };
    let setting = format!(
        "{}-connectivity, {} boundary{}",
        connectivity.neighbours(),
        boundary,
        if args.segments { ", segments" } else { "" }
    );

    let stage = Stage::new(args.quiet);
    match args.kind {
        PlotKind::Sizes => {
            let exclude = args.exclude_percolating;
            let analyzer = |parallelism| {
                Analyzer::new(connectivity, boundary)
                    .segments(args.segments)
                    .measures(Measures::Shape)
                    .parallelism(parallelism)
            };
            let distribution = match generated {
                Some(((h, w), p)) => {
                    stage.set(format!("analyzing {what}"));
                    let seed = args.seed;
                    in_pool(&|| {
                        // Many samples: one per thread; one sample: all threads on it.
                        let inner = if args.samples > 1 {
                            Parallelism::Sequential
                        } else {
                            Parallelism::Rayon
                        };
                        (0..args.samples)
                            .into_par_iter()
                            .map_init(
                                || analyzer(inner),
                                |an, i| -> Result<SizeDistribution> {
                                    let lattice = clusterlab::generate::percolation(
                                        h,
                                        w,
                                        p,
                                        1,
                                        seed.wrapping_add(i),
                                    );
                                    let mut d = SizeDistribution::new();
                                    d.add_table(&an.analyze(lattice.view())?, exclude);
                                    Ok(d)
                                },
                            )
                            .try_reduce(SizeDistribution::new, |mut a, b| {
                                a.merge(&b);
                                Ok(a)
                            })
                    })?
                }
                None => in_pool(&|| {
                    let mut an = analyzer(Parallelism::Rayon);
                    let mut d = SizeDistribution::new();
                    for input in &args.inputs {
                        stage.set(format!("reading {}", input.display()));
                        let lattice = io::read_lattice(input, args.dataset.as_deref())?;
                        let (h, w) = lattice.dim();
                        stage.set(format!("analyzing {} ({h}x{w})", input.display()));
                        let table = match &lattice {
                            Lattice::U8(a) => an.analyze(a.view()),
                            Lattice::U16(a) => an.analyze(a.view()),
                            Lattice::U32(a) => an.analyze(a.view()),
                        }
                        .with_context(|| input.display().to_string())?;
                        d.add_table(&table, exclude);
                    }
                    Ok(d)
                })?,
            };
            let mut options = SizePlotOptions::default();
            options.width = args.chart.0;
            options.height = args.chart.1;
            options.bins_per_decade = args.bins_per_decade;
            options.guide = (!args.no_guide).then_some(args.tau);
            options.title = args.title.clone().unwrap_or_else(|| {
                let finite = if exclude { ", finite clusters" } else { "" };
                let source = match generated {
                    Some(((h, w), p)) => format!(
                        "{} sample{} {h}×{w}, p = {p}",
                        args.samples,
                        if args.samples == 1 { "" } else { "s" }
                    ),
                    None => what.clone(),
                };
                format!(
                    "nₛ: {source}, {boundary}, {}-conn.{finite}",
                    connectivity.neighbours()
                )
            });
            stage.set(format!("drawing {}", output.display()));
            plot_size_distribution(&output, &distribution, &options)?;
            drop(stage);
            if !args.quiet {
                let bins = distribution.log_binned(args.bins_per_decade).len();
                let left_out = if exclude {
                    format!(
                        " ({} wrapping or spanning left out)",
                        distribution.excluded()
                    )
                } else {
                    String::new()
                };
                print_stdout(&format!(
                    "{}: n_s of {} clusters{left_out} in {what}, {setting}; {bins} points, s up to {}\n",
                    output.display(),
                    distribution.clusters(),
                    distribution.largest(),
                ));
            }
        }
        PlotKind::Labels => {
            let lattice = match generated {
                Some(((h, w), p)) => {
                    stage.set(format!("generating {h}x{w} lattice"));
                    Lattice::U8(clusterlab::generate::percolation(h, w, p, 1, args.seed))
                }
                None => {
                    let input = &args.inputs[0];
                    stage.set(format!("reading {}", input.display()));
                    io::read_lattice(input, args.dataset.as_deref())?
                }
            };
            let (h, w) = lattice.dim();
            stage.set(format!("labeling {h}x{w} lattice"));
            let parallelism = match args.threads {
                Some(n) => Parallelism::Threads(n),
                None => Parallelism::Rayon,
            };
            let mut labeler = Labeler::new(connectivity, boundary)
                .segments(args.segments)
                .parallelism(parallelism);
            let labels = lattice.label_with(&mut labeler)?;
            let mut options = LabelImageOptions::default();
            options.background = match args.background {
                BackgroundArg::Black => Background::Black,
                BackgroundArg::White => Background::White,
            };
            options.max_side = Some(args.max_side);
            options.scale = args.scale;
            stage.set(format!("drawing {}", output.display()));
            let image = plot_labels(&output, labels.array().view(), &options)?;
            drop(stage);
            if !args.quiet {
                let mut pixels = format!("image {}x{} (WxH)", image.width, image.height);
                if image.block > 1 {
                    pixels.push_str(&format!(", {0}x{0} sites per pixel", image.block));
                }
                if image.scale > 1 {
                    pixels.push_str(&format!(", {0}x{0} pixels per site", image.scale));
                }
                let source = match generated {
                    Some((_, p)) => format!(
                        "a {h}x{w} site-percolation sample (p = {p}, seed {})",
                        args.seed
                    ),
                    None => format!("{} ({h}x{w})", args.inputs[0].display()),
                };
                print_stdout(&format!(
                    "{}: {} clusters of {source}, {setting}; {pixels}\n",
                    output.display(),
                    labels.count(),
                ));
            }
        }
    }
    Ok(())
}
