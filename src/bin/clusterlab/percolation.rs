//! `clusterlab percolation run|report|merge|plot`: percolation-threshold studies.

use crate::args::{library, parse_threads, with_farm, Farm};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use clusterlab::percolation::{
    merge_files, read_study, write_study, Method, Model, Progress, Study, StudyConfig,
    StudyResults, Wrapping, MAX_SAMPLES,
};
use clusterlab::{Backend, Boundary, Connectivity, Options, Parallelism};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The largest lattice side: `2 L²` bonds stay within the sweep's limit of 2³⁰ units.
const MAX_SIDE: usize = 23_170;
/// The most points of a `--p` grid.
const MAX_GRID: usize = 100_000;

#[derive(Debug, Args)]
pub struct PercolationArgs {
    #[command(subcommand)]
    pub command: PercolationCommand,
}

#[derive(Debug, Subcommand)]
pub enum PercolationCommand {
    /// Run (or resume) a study: Newman–Ziff sweeps (CPU) or fixed-p batches (GPU or CPU) of every
    /// size, written to an HDF5 study file after every batch of samples (a killed run keeps every
    /// completed batch).
    Run(RunArgs),
    /// Print the estimates of a study file: p_c with its error, and per size the wrapping
    /// probabilities at the reference p_c, the crossing p_L and τ.
    Report(ReportArgs),
    /// Merge two studies of the same method, model, boundary and sizes with disjoint samples
    /// (different seeds, or for newman-ziff disjoint ranges of one seed's stream; fixed-p studies
    /// need distinct seeds and the same --p grid).
    Merge(MergeArgs),
    /// Draw the figures of a study as PNGs: R(p) per size with the exact R∞ and the crossings,
    /// P∞(p) and S(p), n_s at p_c with the fitted τ, and p_c(L) against L^(−1−1/ν).
    #[cfg(feature = "plot")]
    Plot(PlotArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Site or bond percolation.
    #[arg(long, value_parser = ["site", "bond"])]
    pub model: String,

    /// Site percolation's neighbourhood: 4 or 8 (bond percolation: 4).
    #[arg(short, long, default_value = "4", value_parser = library::<Connectivity>(&["4", "8"]))]
    pub connectivity: Connectivity,

    /// periodic (torus: wrapping probabilities), open (spanning), periodic-x or periodic-y
    /// (cylinders).
    #[arg(short, long, default_value = "periodic",
          value_parser = library::<Boundary>(&["periodic", "open", "periodic-x", "periodic-y"]))]
    pub boundary: Boundary,

    /// Lattice sizes, comma-separated: L (an L × L lattice) or LxM (L columns, M rows); each
    /// side from 1 to 23170.
    #[arg(long, value_delimiter = ',', value_parser = parse_side_pair, required = true)]
    pub sizes: Vec<(usize, usize)>,

    /// Samples per size (fixed-p: per size and grid point), from 1 to 2^40. With --resume: the
    /// total wanted (at least the file's).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_SAMPLES))]
    pub samples: u64,

    /// newman-ziff (microcanonical sweeps on the CPU, every p at once) or fixed-p (independent
    /// site-percolation lattices at each p of the grid, batched on the GPU or the CPU).
    #[arg(long, default_value = "newman-ziff", value_parser = library::<Method>(&["newman-ziff", "fixed-p"]))]
    pub method: Method,

    /// The grid of p for the canonical curves (fixed-p: the points sampled), A:B:STEP with
    /// 0 ≤ A ≤ B ≤ 1, STEP > 0, at most 100000 points. Default: the reference p_c ± 0.05 in steps
    /// of 0.001 (fixed-p: ± 0.01 in steps of 0.002).
    #[arg(long, value_name = "A:B:STEP", value_parser = parse_grid)]
    pub p: Option<Grid>,

    /// Seed (any u64): sample i of every size draws from Philox4x32-10 stream i of it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// auto, cpu or cuda. Newman–Ziff sweeps run on the CPU (cuda is refused); fixed-p batches
    /// run on the GPU with auto when one opens, else on the CPU.
    #[arg(long, default_value = "auto", value_parser = crate::args::parse_backend)]
    pub backend: Backend,

    /// Worker threads, from 1 to 4096 (default: all cores). Results do not depend on it.
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,

    /// The study file (HDF5).
    #[arg(short, long)]
    pub output: PathBuf,

    /// Continue the study in --output (same model, boundary, sizes and seed) up to --samples.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,

    /// Replace an existing --output (at the first checkpoint, atomically).
    #[arg(long)]
    pub force: bool,

    /// Seconds between checkpoints, from 0 to 3600.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub checkpoint_every: u64,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The study file.
    pub study: PathBuf,
    /// One JSON object on stdout (keys p_c, p_c_stderr, samples, sizes: [{L, M, samples, R_h,
    /// R_h_stderr, …, R_1_stderr, p_cross, p_cross_stderr, tau, tau_stderr}]).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The first study (its grid, seed and command are kept).
    pub a: PathBuf,
    /// The second study.
    pub b: PathBuf,
    /// The merged study file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Replace an existing --output.
    #[arg(long)]
    pub force: bool,
}

#[cfg(feature = "plot")]
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The study file.
    pub study: PathBuf,
    /// The folder for the PNGs (created if missing).
    #[arg(long)]
    pub output_dir: PathBuf,
}

fn parse_side(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_SIDE).contains(&n) => Ok(n),
        _ => Err(format!("expected a side from 1 to {MAX_SIDE}, not {s:?}")),
    }
}

fn parse_side_pair(s: &str) -> Result<(usize, usize), String> {
    match s.split_once('x') {
        Some((w, h)) => Ok((parse_side(w)?, parse_side(h)?)),
        None => parse_side(s).map(|l| (l, l)),
    }
}

/// A `--p` grid: one value to clap (a bare `Vec` would read as many `f64` values, which clap
/// cannot then downcast).
#[derive(Debug, Clone, PartialEq)]
pub struct Grid(pub Vec<f64>);

fn parse_grid(s: &str) -> Result<Grid, String> {
    let parts: Vec<f64> = s
        .split(':')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("expected A:B:STEP, not {s:?}"))?;
    let [a, b, step] = parts[..] else {
        return Err(format!("expected A:B:STEP, not {s:?}"));
    };
    if !((0.0..=1.0).contains(&a) && (0.0..=1.0).contains(&b) && a <= b) {
        return Err(format!("p range {a}:{b} must satisfy 0 ≤ A ≤ B ≤ 1"));
    }
    if !(step > 0.0 && step.is_finite()) {
        return Err(format!("STEP must be positive, not {step}"));
    }
    let points = ((b - a) / step + 1e-9).floor() + 1.0;
    if points > MAX_GRID as f64 {
        return Err(format!("{points} points: at most {MAX_GRID}"));
    }
    Ok(Grid(
        (0..points as usize)
            .map(|k| (a + k as f64 * step).min(b))
            .collect(),
    ))
}

pub fn run(args: PercolationArgs) -> Result<()> {
    match args.command {
        PercolationCommand::Run(a) => run_study(a),
        PercolationCommand::Report(a) => report(a),
        PercolationCommand::Merge(a) => merge(a),
        #[cfg(feature = "plot")]
        PercolationCommand::Plot(a) => plot(a),
    }
}

fn run_study(args: RunArgs) -> Result<()> {
    with_farm(|farm| run_study_on(args, farm))
}

/// A study in this process, or under `mpirun`/`srun` (feature `mpi`) on every rank of a farm:
/// rank 0 reads and writes the study file and prints, the others compute their shares of its
/// batches (`clusterlab::farm`).
fn run_study_on(args: RunArgs, farm: Option<&Farm>) -> Result<()> {
    if args.method == Method::NewmanZiff && matches!(args.backend, Backend::Cuda { .. }) {
        bail!("Newman–Ziff sweeps run on the CPU: use --backend cpu or auto, or --method fixed-p");
    }
    let model = Model::from_parts(&args.model, args.connectivity)?;
    let parallelism = args
        .threads
        .or_else(|| farm.and_then(Farm::default_threads))
        .map_or(Parallelism::Rayon, Parallelism::Threads);
    let options = Options::default()
        .parallelism(parallelism)
        .backend(args.backend);
    #[cfg(feature = "mpi")]
    if let Some(farm) = farm.filter(|f| !f.is_root()) {
        return Ok(farm.serve_study(&options)?);
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut study = if args.resume {
        let study = read_study(&args.output)
            .with_context(|| format!("cannot resume {}", args.output.display()))?;
        let c = &study.config;
        if c.model != model
            || c.method != args.method
            || c.boundary != args.boundary
            || c.sizes != args.sizes
            || c.seed != args.seed
        {
            bail!(
                "{} is a study of {} {} sizes {:?} seed {}, not {} {} sizes {:?} seed {}",
                args.output.display(),
                c.model,
                c.boundary,
                c.sizes,
                c.seed,
                model,
                args.boundary,
                args.sizes,
                args.seed
            );
        }
        if args.samples < c.samples {
            bail!(
                "--samples {} is below the study's {}",
                args.samples,
                c.samples
            );
        }
        let fixed_grid = (c.method == Method::FixedP).then(|| c.p_grid.clone());
        let mut study = study;
        study.config.samples = args.samples;
        if let Some(Grid(p)) = args.p {
            if fixed_grid.is_some_and(|g| g != p) {
                bail!("a fixed-p study keeps its grid: resume without --p or with the same one");
            }
            study.config.p_grid = p;
        }
        study
    } else {
        if args.output.exists() && !args.force {
            bail!(
                "{} exists: pass --resume to continue it or --force to replace it",
                args.output.display()
            );
        }
        Study::new(StudyConfig {
            model,
            boundary: args.boundary,
            sizes: args.sizes.clone(),
            samples: args.samples,
            seed: args.seed,
            p_grid: args.p.map(|g| g.0).unwrap_or_else(|| match args.method {
                Method::NewmanZiff => StudyConfig::default_grid(model),
                Method::FixedP => (-5..=5)
                    .map(|k| model.reference_pc() + f64::from(k) * 2e-3)
                    .collect(),
            }),
            command,
            method: args.method,
        })?
    };
    study.config.check()?;
    let total = study.config.samples * study.config.sizes.len() as u64;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} samples ({per_sec}, ETA {eta}) {msg}",
        )
        .expect("a valid template"),
    );
    bar.set_position(total - study.remaining());
    bar.reset_eta();
    let started = Instant::now();
    let output = args.output.clone();
    let every = Duration::from_secs(args.checkpoint_every);
    let checkpoint = |s: &Study, progress: Progress| {
        let (w, h) = s.config.sizes[progress.size];
        bar.set_message(format!("L = {w}x{h}"));
        bar.set_position(progress.done);
        write_study(&output, s, None)
    };
    match farm {
        #[cfg(feature = "mpi")]
        Some(farm) => farm.run_study(&mut study, &options, every, checkpoint)?,
        _ => study.run(&options, every, checkpoint)?,
    }
    bar.finish_and_clear();
    let results = study.results()?;
    write_study(&args.output, &study, Some(&results))?;
    let points = match study.config.method {
        Method::NewmanZiff => 1,
        Method::FixedP => study.config.p_grid.len() as u64,
    };
    let ranks = farm.map_or(String::new(), |f| format!(" × {} MPI ranks", f.ranks()));
    eprintln!(
        "{} samples ({} lattices) on {}{ranks} in {:.1} s; study written to {}",
        results.samples,
        results.samples * points,
        study.backend,
        started.elapsed().as_secs_f64(),
        args.output.display()
    );
    print_table(&study, &results);
    Ok(())
}

fn print_table(study: &Study, r: &StudyResults) {
    let c = &study.config;
    println!(
        "{} percolation ({}), {}-connected, {} boundary, seed {}, {} samples",
        c.model.name(),
        c.method,
        c.model.connectivity(),
        c.boundary,
        c.seed,
        r.samples
    );
    match &r.p_c {
        Some(f) => println!(
            "p_c = {:.8} ± {:.8}  (reference {}; fit p_L = p_c + a L^-7/4: a = {:.4} ± {:.4}, chi2/dof = {:.2}/{})",
            f.intercept.value, f.intercept.stderr, r.reference_pc, f.slope.value, f.slope.stderr, f.chi2, f.dof
        ),
        None => println!("p_c: no crossing estimate (needs square lattices, torus or open)"),
    }
    println!(
        "{:>11} {:>9} {:>22} {:>17} {:>17} {:>17} {:>17} {:>17} {:>15}",
        "L x M", "samples", "p_cross", "R_h(p_ref)", "R_v", "R_e", "R_b", "R_1", "tau"
    );
    for s in &r.sizes {
        let cross = s
            .crossing
            .map(|x| format!("{:.7} ± {:.7}", x.p.value, x.p.stderr))
            .unwrap_or_else(|| "-".into());
        let rs: Vec<String> = s.at_pc[..5]
            .iter()
            .map(|e| format!("{:.5} ± {:.5}", e.value, e.stderr))
            .collect();
        let tau = s
            .tau
            .as_ref()
            .map(|t| format!("{:.3} ± {:.3}", t.tau.value, t.tau.stderr))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:>11} {:>9} {:>22} {:>17} {:>17} {:>17} {:>17} {:>17} {:>15}",
            format!("{}x{}", s.width, s.height),
            s.samples,
            cross,
            rs[0],
            rs[1],
            rs[2],
            rs[3],
            rs[4],
            tau
        );
    }
    if c.boundary == Boundary::Periodic {
        let exact: Vec<String> = Wrapping::ALL[..5]
            .iter()
            .map(|k| format!("{} = {}", k.name(), k.torus_limit()))
            .collect();
        println!("exact L → ∞ (square torus): {}", exact.join(", "));
    }
}

fn report(args: ReportArgs) -> Result<()> {
    let study = read_study(&args.study)?;
    let r = study.results()?;
    if !args.json {
        print_table(&study, &r);
        return Ok(());
    }
    use serde_json::{json, Map, Value};
    let sizes: Vec<Value> = r
        .sizes
        .iter()
        .map(|s| {
            let mut o = Map::new();
            o.insert("L".into(), json!(s.width));
            o.insert("M".into(), json!(s.height));
            o.insert("samples".into(), json!(s.samples));
            for (k, kind) in Wrapping::ALL[..5].iter().enumerate() {
                o.insert(kind.name().into(), json!(s.at_pc[k].value));
                o.insert(format!("{}_stderr", kind.name()), json!(s.at_pc[k].stderr));
            }
            o.insert("p_cross".into(), json!(s.crossing.map(|c| c.p.value)));
            o.insert(
                "p_cross_stderr".into(),
                json!(s.crossing.map(|c| c.p.stderr)),
            );
            o.insert("tau".into(), json!(s.tau.as_ref().map(|t| t.tau.value)));
            o.insert(
                "tau_stderr".into(),
                json!(s.tau.as_ref().map(|t| t.tau.stderr)),
            );
            Value::Object(o)
        })
        .collect();
    let c = &study.config;
    let out = json!({
        "model": c.model.name(),
        "method": c.method.name(),
        "connectivity": c.model.connectivity().neighbours(),
        "boundary": c.boundary.name(),
        "seed": c.seed,
        "reference_pc": r.reference_pc,
        "p_c": r.p_c.map(|f| f.intercept.value),
        "p_c_stderr": r.p_c.map(|f| f.intercept.stderr),
        "chi2": r.p_c.map(|f| f.chi2),
        "dof": r.p_c.map(|f| f.dof),
        "samples": r.samples,
        "sizes": sizes,
    });
    println!("{out}");
    Ok(())
}

fn merge(args: MergeArgs) -> Result<()> {
    if args.output.exists() && !args.force {
        bail!(
            "{} exists: pass --force to replace it",
            args.output.display()
        );
    }
    let study = merge_files(&args.a, &args.b, &args.output)?;
    eprintln!(
        "merged {} and {} into {} ({} samples)",
        args.a.display(),
        args.b.display(),
        args.output.display(),
        study.sums.iter().map(|s| s.samples).sum::<u64>()
    );
    Ok(())
}

#[cfg(feature = "plot")]
fn plot(args: PlotArgs) -> Result<()> {
    let study = read_study(&args.study)?;
    let results = study.results()?;
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("cannot create {}", args.output_dir.display()))?;
    let written = clusterlab::plot::plot_study(&study, &results, &args.output_dir)?;
    for p in written {
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}
