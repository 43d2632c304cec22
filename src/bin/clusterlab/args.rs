//! What the subcommands share: the lattice options (flattened into each), value parsers that
//! take the library's own names (`FromStr`), and the small helpers of every run (a progress
//! spinner, output checks, printing).

use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use clusterlab::{Backend, Boundary, Connectivity, Parallelism};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// How a lattice is read and which sites join: the options of every subcommand that takes one.
#[derive(Debug, Args)]
pub struct LatticeArgs {
    /// Which neighbours join a cluster: 4 (edges) or 8 (edges and diagonals).
    #[arg(short, long, default_value = "4", value_parser = library::<Connectivity>(&["4", "8"]))]
    pub connectivity: Connectivity,

    /// What lies beyond the edges: open, periodic (a torus: both axes wrap), periodic-x (columns
    /// wrap) or periodic-y (rows wrap).
    #[arg(short, long, default_value = "open",
          value_parser = library::<Boundary>(&["open", "periodic", "periodic-x", "periodic-y"]))]
    pub boundary: Boundary,

    /// Same-value segments: neighbours join only when they hold the same nonzero value (for
    /// segmented images and multi-state automata; the perimeters of a segment count every site
    /// not in it as outside). Without it, any two occupied neighbours join.
    #[arg(short, long)]
    pub segments: bool,

    /// The HDF5 dataset holding the lattice (default /lattice). Ignored for .npy input.
    #[arg(short, long, value_name = "NAME")]
    pub dataset: Option<String>,

    /// Worker threads, from 1 to 4096. Default: all cores (rayon's pool, which follows
    /// RAYON_NUM_THREADS).
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
}

impl LatticeArgs {
    /// The CPU threads asked for.
    pub fn parallelism(&self) -> Parallelism {
        match self.threads {
            Some(n) => Parallelism::Threads(n),
            None => Parallelism::Rayon,
        }
    }
}

/// A parser for one of the library's enums, by its `FromStr`, offering `values` in `--help` and
/// in the error for anything else.
pub fn library<T>(values: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err = clusterlab::Error> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(values).try_map(|s| s.parse::<T>())
}

pub fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse().map_err(|e: clusterlab::Error| e.to_string())
}

pub fn parse_threads(s: &str) -> Result<usize, String> {
    let max = clusterlab::MAX_THREADS;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Err(format!(
                "expected a thread count from 1 to {max} (this machine has {cores} cores), not {s:?}"
            ))
        }
    }
}

/// The machine's memory in bytes (`/proc/meminfo`), where the system says.
pub fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A lattice size that needs `bytes_per_site` bytes a site: at most MAX_SITES sites, and
/// refused (with the bytes in the message) when that is more memory than the machine has.
pub fn lattice_size(s: &str, bytes_per_site: u64) -> Result<(usize, usize), String> {
    let (h, w) = parse_size(s)?;
    let need = (h * w) as u64 * bytes_per_site;
    match machine_memory() {
        Some(have) if need > have => Err(format!(
            "{h}x{w} needs {need} bytes of memory; this machine has {have}"
        )),
        _ => Ok((h, w)),
    }
}

pub fn parse_size(s: &str) -> Result<(usize, usize), String> {
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

pub fn parse_probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("expected a probability from 0 to 1, not {s:?}")),
    }
}

/// A spinner on stderr naming the current stage; indicatif hides it when stderr is not a
/// terminal. Cleared when dropped, so that error messages start on a clean line.
pub struct Stage(ProgressBar);

impl Stage {
    pub fn new(quiet: bool) -> Stage {
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

    pub fn set(&self, msg: String) {
        self.0.set_message(msg);
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// The output's folder must exist (checked up front so that no work is wasted).
pub fn check_output_folder(output: &Path) -> Result<()> {
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

/// Refuses an output that is one of the inputs.
pub fn check_not_input(output: &Path, inputs: &[&Path], what: &str) -> Result<()> {
    for input in inputs {
        if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize()) {
            if a == b {
                bail!(
                    "{}: the output would replace {what}; choose another --output",
                    output.display()
                );
            }
        }
    }
    Ok(())
}

/// The size of rayon's global pool.
pub fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Prints to stdout, ignoring a closed pipe (`clusterlab ... | head`) rather than panicking.
pub fn print_stdout(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

/// Prints one JSON document (`--json`) on stdout.
pub fn print_json(value: &serde_json::Value) {
    print_stdout(&format!("{value:#}\n"));
}

/// "same-value segments" or "occupied sites".
pub fn mode(segments: bool) -> &'static str {
    if segments {
        "same-value segments"
    } else {
        "occupied sites"
    }
}

/// How a subcommand that writes a lattice file reports and stores it: `--compress [LEVEL]` and
/// `--quiet` (which `--json`, each subcommand's own, excludes).
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// HDF5 output: compress the lattice and label images (shuffle + deflate, the gzip every
    /// HDF5 reader opens) at LEVEL 0 to 9 (default 4), in chunks of whole rows of about 1 MiB.
    #[arg(long, value_name = "LEVEL", num_args = 0..=1, default_missing_value = "4",
          value_parser = clap::value_parser!(u8).range(0..=9))]
    pub compress: Option<u8>,

    /// Print nothing but errors (no summary, no progress).
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
}

impl OutputArgs {
    /// The output options `--compress` asks for.
    pub fn write_options(&self) -> clusterlab::io::WriteOptions {
        match self.compress {
            Some(level) => clusterlab::io::WriteOptions::default().compress(level),
            None => clusterlab::io::WriteOptions::default(),
        }
    }
}

/// The MPI job this process is a rank of (`percolation run` and `mc run` under `mpirun` or
/// `srun`, feature `mpi`).
#[cfg(feature = "mpi")]
pub use clusterlab::farm::Farm;

/// Without the `mpi` feature there is never a farm: an uninhabited stand-in, so that the
/// subcommands' code needs no `cfg` of its own.
#[cfg(not(feature = "mpi"))]
#[derive(Debug)]
pub enum Farm {}

#[cfg(not(feature = "mpi"))]
impl Farm {
    pub fn ranks(&self) -> usize {
        match *self {}
    }
    pub fn default_threads(&self) -> Option<usize> {
        match *self {}
    }
    pub fn abort(&self, _code: i32) -> ! {
        match *self {}
    }
}

/// Joins the MPI job when launched by `mpirun`/`srun` with the `mpi` feature; `None` otherwise.
pub fn join_farm() -> Result<Option<Farm>> {
    #[cfg(feature = "mpi")]
    return Ok(Farm::from_env()?);
    #[cfg(not(feature = "mpi"))]
    Ok(None)
}

/// Runs `body` with the farm, if any; an error on any rank of a farm of several aborts the whole
/// job (after printing it), since the other ranks would wait for it forever.
pub fn with_farm(body: impl FnOnce(Option<&Farm>) -> Result<()>) -> Result<()> {
    let farm = join_farm()?;
    let result = body(farm.as_ref());
    if let (Err(e), Some(farm)) = (&result, &farm) {
        if farm.ranks() > 1 {
            eprintln!("error: {e:#} (ending every rank of the MPI job)");
            farm.abort(1);
        }
    }
    result
}
