//! Runs as users run them: a temperature list of independent chains (in parallel on the CPU)
//! written to an HDF5 run file (CONVENTIONS.md, "Study and run files"), with atomic checkpoints
//! and bit-identical `--resume`.
//!
//! File layout: root attributes `kind = "mc-run"`, `model`, `q`, `L` (width), `M` (height), `J`,
//! `h`, `boundary`, `algorithm`, `seed`, `backend`, `thermalize`, `sweeps`, `every`,
//! `temperatures`, `clusterlab_version`, `command`; one group `chain_NNN` per temperature (attribute
//! `T`, `stream`) with one chunked, extendible 1-D dataset per observable (`sweep` and the fields
//! of [`Sample`]: `energy`, `m`, `abs_m`, `m2`, `m4`, `cluster_num`, `cluster_den`), appended and
//! flushed once per block of `checkpoint_every` sweeps. The checkpoint (every chain's spins,
//! sweeps done and rows written) lives beside it in `<output>.checkpoint`, an HDF5 file replaced
//! atomically after each block: a killed run leaves a valid file of every completed block, and
//! `--resume` truncates the series to the checkpoint's rows and continues from its spins.

use super::chain::{run_chains, Chain, MemorySink, Update};
use super::measure::Sample;
use super::model::Model;
use crate::io::hdf5_fd;
use crate::io::write_atomically;
use crate::{Backend, Error, Options, Parallelism, Result};
use hdf5::types::VarLenUnicode;
use ndarray::{s, Array2};
use std::path::{Path, PathBuf};

/// Observables stored per measured sweep, in [`Sample`]'s order.
pub const SERIES: [&str; 7] = [
    "energy",
    "m",
    "abs_m",
    "m2",
    "m4",
    "cluster_num",
    "cluster_den",
];

/// A run: the model (its temperature is replaced by each of `temperatures`), the update, the
/// seed and the run lengths.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The model; its temperature is ignored.
    pub model: Model,
    /// One chain per temperature (stream = index).
    pub temperatures: Vec<f64>,
    /// The update.
    pub update: Update,
    /// The seed.
    pub seed: u64,
    /// Sweeps before measuring.
    pub thermalize: u64,
    /// Sweeps measured after thermalisation (every `every`-th recorded).
    pub sweeps: u64,
    /// Record every `every` sweeps.
    pub every: u64,
    /// Sweeps per block: series appended and checkpoint written after each.
    pub checkpoint_every: u64,
    /// The backend asked for.
    pub backend: Backend,
    /// The command line, stored in the file.
    pub command: String,
}

/// The most temperatures in one run.
pub const MAX_TEMPERATURES: usize = 4096;

fn h5<T>(path: &Path, r: hdf5::Result<T>) -> Result<T> {
    r.map_err(|e| Error::Hdf5 {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn text(s: &str) -> hdf5::Result<VarLenUnicode> {
    s.parse().map_err(|e| hdf5::Error::from(format!("{e}")))
}

/// Where the checkpoint of `output` is kept.
pub fn checkpoint_path(output: &Path) -> PathBuf {
    let mut p = output.as_os_str().to_owned();
    p.push(".checkpoint");
    PathBuf::from(p)
}

impl RunConfig {
    /// Checks the run's parameters.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no or too many temperatures, `every` or
    /// `checkpoint_every` of 0, and those of [`Model::check`] at each temperature.
    pub fn check(&self) -> Result<()> {
        if self.temperatures.is_empty() || self.temperatures.len() > MAX_TEMPERATURES {
            return Err(Error::InvalidArgument(format!(
                "give 1 to {MAX_TEMPERATURES} temperatures, not {}",
                self.temperatures.len()
            )));
        }
        if self.every == 0 || self.checkpoint_every == 0 {
            return Err(Error::InvalidArgument(
                "--every and the checkpoint interval must be at least 1".into(),
            ));
        }
        for &t in &self.temperatures {
            self.model.with_temperature(t)?;
        }
        Ok(())
    }

    fn chains(&self, parallelism: Parallelism) -> Result<Vec<Chain>> {
        self.chain_range(0..self.temperatures.len(), parallelism)
    }

    /// Chains `range` of the run (stream = index), freshly made.
    pub(crate) fn chain_range(
        &self,
        range: std::ops::Range<usize>,
        parallelism: Parallelism,
    ) -> Result<Vec<Chain>> {
        let opts = Options::default()
            .parallelism(parallelism)
            .backend(self.backend);
        self.temperatures[range.clone()]
            .iter()
            .zip(range)
            .map(|(&t, i)| {
                Chain::new(
                    self.model.with_temperature(t)?,
                    self.update,
                    self.seed,
                    i as u64,
                    opts,
                )
            })
            .collect()
    }

    /// The root attributes that must match for `--resume`, as `(name, value)` text.
    fn identity(&self) -> Vec<(&'static str, String)> {
        let m = &self.model;
        vec![
            ("model", m.kind().name().into()),
            ("q", m.q().to_string()),
            ("L", m.dim().1.to_string()),
            ("M", m.dim().0.to_string()),
            ("J", m.coupling().to_string()),
            ("h", m.field().to_string()),
            ("boundary", m.boundary().name().into()),
            ("algorithm", self.update.name().into()),
            ("seed", self.seed.to_string()),
            ("thermalize", self.thermalize.to_string()),
            ("every", self.every.to_string()),
            (
                "temperatures",
                self.temperatures
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ]
    }
}

fn create_file(cfg: &RunConfig, path: &Path, backend_name: &str) -> Result<()> {
    h5(
        path,
        (|| {
            let f = hdf5_fd::create(path)?;
            f.new_attr::<VarLenUnicode>()
                .create("kind")?
                .write_scalar(&text("mc-run")?)?;
            for (k, v) in cfg.identity() {
                f.new_attr::<VarLenUnicode>()
                    .create(k)?
                    .write_scalar(&text(&v)?)?;
            }
            for (k, v) in [
                ("backend", backend_name),
                ("clusterlab_version", env!("CARGO_PKG_VERSION")),
                ("command", cfg.command.as_str()),
            ] {
                f.new_attr::<VarLenUnicode>()
                    .create(k)?
                    .write_scalar(&text(v)?)?;
            }
            f.new_attr::<u64>()
                .create("sweeps")?
                .write_scalar(&cfg.sweeps)?;
            for (i, &t) in cfg.temperatures.iter().enumerate() {
                let g = f.create_group(&format!("chain_{i:03}"))?;
                g.new_attr::<f64>().create("T")?.write_scalar(&t)?;
                g.new_attr::<u64>()
                    .create("stream")?
                    .write_scalar(&(i as u64))?;
                g.new_dataset::<u64>()
                    .chunk(4096)
                    .shape(0..)
                    .create("sweep")?;
                for name in SERIES {
                    g.new_dataset::<f64>().chunk(4096).shape(0..).create(name)?;
                }
            }
            f.flush()
        })(),
    )
}

/// Appends `samples` to chain `i`'s series (which hold `rows` rows) and returns the new count.
fn append(f: &hdf5::File, i: usize, rows: usize, samples: &[(u64, Sample)]) -> hdf5::Result<usize> {
    let g = f.group(&format!("chain_{i:03}"))?;
    let n = rows + samples.len();
    let sweeps: Vec<u64> = samples.iter().map(|s| s.0).collect();
    let ds = g.dataset("sweep")?;
    ds.resize(n)?;
    ds.write_slice(&sweeps, s![rows..n])?;
    for (k, name) in SERIES.iter().enumerate() {
        let v: Vec<f64> = samples.iter().map(|(_, s)| field(s, k)).collect();
        let ds = g.dataset(name)?;
        ds.resize(n)?;
        ds.write_slice(&v, s![rows..n])?;
    }
    Ok(n)
}

fn field(s: &Sample, k: usize) -> f64 {
    [
        s.energy,
        s.m,
        s.abs_m,
        s.m2,
        s.m4,
        s.cluster_num,
        s.cluster_den,
    ][k]
}

/// Progress of a run: sweeps done per chain out of the total (thermalisation included).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Runs `cfg` into `output`. Without `resume`, an existing `output` is an error unless `force`
/// (then it is replaced). With `resume`, the run continues from `<output>.checkpoint` and ends
/// with the same file an uninterrupted run writes (apart from the `command` attribute).
/// Chains run in parallel, each on one thread when there are several, on all cores when alone.
///
/// # Errors
/// Those of [`RunConfig::check`]; [`Error::InvalidArgument`] when `output` exists without
/// `force`/`resume`, when resuming with no checkpoint or with other parameters than the file's;
/// [`Error::Hdf5`] / [`Error::Io`] on file errors; those of [`Chain::new`].
pub fn run_to_file(
    cfg: &RunConfig,
    output: &Path,
    resume: bool,
    force: bool,
    progress: Progress<'_>,
) -> Result<()> {
    run_to_file_with(cfg, output, resume, force, progress, &mut Local)
}

/// Runs the blocks of a run's chains: [`Local`] here, `farm`'s runner over the ranks of an MPI
/// job (each rank the chains of [`BlockRunner::mine`], the others' states and samples sent to
/// this process, which writes the file).
pub(crate) trait BlockRunner {
    /// The chains this process runs, of `chains`.
    fn mine(&self, chains: usize) -> std::ops::Range<usize>;
    /// Called once before the first block with every chain in its starting state.
    ///
    /// # Errors
    /// Whatever sending the states fails with.
    fn start(&mut self, jobs: &[(Chain, MemorySink)]) -> Result<()>;
    /// Advances every chain `sweeps` sweeps, recording every `every`-th into its sink, and
    /// leaves each chain's state and samples in `jobs`.
    ///
    /// # Errors
    /// Those of the chains' updates.
    fn run_block(
        &mut self,
        jobs: &mut [(Chain, MemorySink)],
        sweeps: u64,
        every: u64,
    ) -> Result<()>;
}

/// Every chain in this process.
struct Local;

impl BlockRunner for Local {
    fn mine(&self, chains: usize) -> std::ops::Range<usize> {
        0..chains
    }
    fn start(&mut self, _: &[(Chain, MemorySink)]) -> Result<()> {
        Ok(())
    }
    fn run_block(
        &mut self,
        jobs: &mut [(Chain, MemorySink)],
        sweeps: u64,
        every: u64,
    ) -> Result<()> {
        run_chains(jobs, sweeps, every)
    }
}

/// The block after `done` sweeps of `total`: its sweeps and the recording interval
/// (`u64::MAX` while thermalising), or `None` when the run is complete. Blocks end at the end
/// of thermalisation and every `checkpoint_every` sweeps, so that every process of a farm
/// knows the schedule.
pub(crate) fn next_block(cfg: &RunConfig, done: u64) -> Option<(u64, u64)> {
    let total = cfg.thermalize + cfg.sweeps;
    if done >= total {
        return None;
    }
    Some(if done < cfg.thermalize {
        (
            cfg.thermalize.min(done + cfg.checkpoint_every) - done,
            u64::MAX,
        )
    } else {
        (total.min(done + cfg.checkpoint_every) - done, cfg.every)
    })
}

/// The parallelism of a process's chains: one thread each when it runs several, all cores
/// for one alone (the results do not depend on it).
pub(crate) fn parallelism_for(chains: usize) -> Parallelism {
    if chains > 1 {
        Parallelism::Sequential
    } else {
        Parallelism::Rayon
    }
}

/// [`run_to_file`] with the blocks run by `runner`.
pub(crate) fn run_to_file_with(
    cfg: &RunConfig,
    output: &Path,
    resume: bool,
    force: bool,
    progress: Progress<'_>,
    runner: &mut dyn BlockRunner,
) -> Result<()> {
    cfg.check()?;
    let mut chains = cfg.chains(parallelism_for(runner.mine(cfg.temperatures.len()).len()))?;
    let ckpt = checkpoint_path(output);
    let mut rows = vec![0usize; chains.len()];
    let file = if resume {
        let f = h5(output, hdf5_fd::open_rw(output))?;
        for (k, v) in cfg.identity() {
            let got: String = h5(
                output,
                f.attr(k).and_then(|a| a.read_scalar::<VarLenUnicode>()),
            )?
            .to_string();
            if got != v {
                return Err(Error::InvalidArgument(format!(
                    "cannot resume {}: its {k} is {got}, not {v}",
                    output.display()
                )));
            }
        }
        h5(
            output,
            f.attr("sweeps").and_then(|a| a.write_scalar(&cfg.sweeps)),
        )?;
        if !ckpt.exists() {
            return Err(Error::InvalidArgument(format!(
                "cannot resume {}: no checkpoint {}",
                output.display(),
                ckpt.display()
            )));
        }
        let c = h5(&ckpt, hdf5_fd::open(&ckpt))?;
        for (i, chain) in chains.iter_mut().enumerate() {
            let g = h5(&ckpt, c.group(&format!("chain_{i:03}")))?;
            let spins: Array2<u8> = h5(&ckpt, g.dataset("spins").and_then(|d| d.read_2d()))?;
            let sweeps: u64 = h5(&ckpt, g.attr("sweeps").and_then(|a| a.read_scalar()))?;
            let r: u64 = h5(&ckpt, g.attr("rows").and_then(|a| a.read_scalar()))?;
            chain.restore(spins, sweeps)?;
            rows[i] = r as usize;
            // Drop rows written after the checkpoint: they will be written again.
            h5(
                output,
                (|| {
                    let g = f.group(&format!("chain_{i:03}"))?;
                    g.dataset("sweep")?.resize(rows[i])?;
                    for name in SERIES {
                        g.dataset(name)?.resize(rows[i])?;
                    }
                    Ok(())
                })(),
            )?;
        }
        f
    } else {
        if output.exists() && !force {
            return Err(Error::InvalidArgument(format!(
                "{} exists: pass --force to replace it or --resume to continue it",
                output.display()
            )));
        }
        // Built under a temporary name and renamed, so a failure leaves no half-made file.
        // What the chains run on (auto resolves to one of these).
        let backend_name = if chains.iter().any(Chain::on_gpu) {
            "cuda"
        } else {
            "cpu"
        };
        write_atomically(output, |tmp| create_file(cfg, tmp, backend_name))?;
        let _ = std::fs::remove_file(&ckpt);
        h5(output, hdf5_fd::open_rw(output))?
    };

    let total = cfg.thermalize + cfg.sweeps;
    let mut jobs: Vec<(Chain, MemorySink)> = chains
        .into_iter()
        .map(|c| (c, MemorySink::default()))
        .collect();
    runner.start(&jobs)?;
    loop {
        let done = jobs[0].0.sweeps();
        progress(done, total);
        // Thermalisation records nothing (the sinks are emptied below).
        let Some((sweeps, every)) = next_block(cfg, done) else {
            break;
        };
        runner.run_block(&mut jobs, sweeps, every)?;
        for (i, (_, sink)) in jobs.iter_mut().enumerate() {
            if done >= cfg.thermalize {
                rows[i] = h5(output, append(&file, i, rows[i], &sink.samples))?;
            }
            sink.samples.clear();
        }
        h5(output, file.flush())?;
        let chains: Vec<&Chain> = jobs.iter().map(|(c, _)| c).collect();
        write_checkpoint_refs(&ckpt, &chains, &rows)?;
    }
    Ok(())
}

fn write_checkpoint_refs(path: &Path, chains: &[&Chain], rows: &[usize]) -> Result<()> {
    write_atomically(path, |tmp| {
        h5(
            tmp,
            (|| {
                let f = hdf5_fd::create(tmp)?;
                for (i, (c, &r)) in chains.iter().zip(rows).enumerate() {
                    let g = f.create_group(&format!("chain_{i:03}"))?;
                    g.new_dataset_builder()
                        .with_data(c.spins().view())
                        .create("spins")?;
                    g.new_attr::<u64>()
                        .create("sweeps")?
                        .write_scalar(&c.sweeps())?;
                    g.new_attr::<u64>()
                        .create("rows")?
                        .write_scalar(&(r as u64))?;
                }
                f.close()
            })(),
        )
    })
}

/// One chain of a run file.
#[derive(Debug, Clone)]
pub struct ChainSeries {
    /// Its temperature.
    pub temperature: f64,
    /// The sweep number of each sample.
    pub sweeps: Vec<u64>,
    /// The samples.
    pub samples: Vec<Sample>,
}

/// A run file, read back.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Root attributes as text (`kind`, `model`, `q`, `L`, `M`, …).
    pub attributes: Vec<(String, String)>,
    /// The chains, in stream order.
    pub chains: Vec<ChainSeries>,
}

impl RunData {
    /// A root attribute's text.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a run file.
///
/// # Errors
/// [`Error::Hdf5`] when it cannot be read, [`Error::BadInput`] when it is not an `mc-run` file.
pub fn read_run(path: &Path) -> Result<RunData> {
    let f = h5(path, hdf5_fd::open(path))?;
    let kind = f
        .attr("kind")
        .and_then(|a| a.read_scalar::<VarLenUnicode>());
    if kind.map(|k| k.to_string()).ok().as_deref() != Some("mc-run") {
        return Err(Error::BadInput {
            path: path.to_path_buf(),
            reason: "not a clusterlab mc-run file (attribute kind ≠ mc-run)".into(),
        });
    }
    let mut attributes = Vec::new();
    for name in h5(path, f.attr_names())? {
        if let Ok(v) = f.attr(&name).and_then(|a| a.read_scalar::<VarLenUnicode>()) {
            attributes.push((name, v.to_string()));
        }
    }
    let mut chains = Vec::new();
    for i in 0.. {
        let Ok(g) = f.group(&format!("chain_{i:03}")) else {
            break;
        };
        let c = h5(
            path,
            (|| {
                let temperature: f64 = g.attr("T")?.read_scalar()?;
                let sweeps = g.dataset("sweep")?.read_raw::<u64>()?;
                let cols: Vec<Vec<f64>> = SERIES
                    .iter()
                    .map(|n| g.dataset(n)?.read_raw::<f64>())
                    .collect::<hdf5::Result<_>>()?;
                let samples = (0..sweeps.len())
                    .map(|r| Sample {
                        energy: cols[0][r],
                        m: cols[1][r],
                        abs_m: cols[2][r],
                        m2: cols[3][r],
                        m4: cols[4][r],
                        cluster_num: cols[5][r],
                        cluster_den: cols[6][r],
                    })
                    .collect();
                Ok(ChainSeries {
                    temperature,
                    sweeps,
                    samples,
                })
            })(),
        )?;
        chains.push(c);
    }
    Ok(RunData { attributes, chains })
}
