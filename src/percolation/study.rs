//! A percolation study: a model, a boundary, several lattice sizes and a number of samples per
//! size, run in batches with a checkpoint after each, and the estimates derived from its sums.

use super::batch::BatchSampler;
use super::canonical::{AtP, Curves, Estimate, Wrapping};
use super::estimate::{crossing, extrapolate, Crossing, LineFit};
use super::fixed::FixedSums;
use super::model::{Geometry, Model};
use super::runner::{BatchRunner, Local};
use super::sums::MicroSums;
use super::tau::{fit_tau, TauFit};
use crate::core::alloc::available_memory;
use crate::device::Device;
use crate::{Backend, Boundary, Error, Options, Result};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// How a study samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// Newman–Ziff microcanonical sweeps (CPU): every `p` at once by the binomial convolution.
    #[default]
    NewmanZiff,
    /// Independent lattices at each `p` of the grid, in batches (GPU or CPU).
    FixedP,
}

impl Method {
    /// `"newman-ziff"` or `"fixed-p"`, as on the command line and in study files.
    pub fn name(self) -> &'static str {
        match self {
            Method::NewmanZiff => "newman-ziff",
            Method::FixedP => "fixed-p",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method> {
        match s {
            "newman-ziff" => Ok(Method::NewmanZiff),
            "fixed-p" => Ok(Method::FixedP),
            _ => Err(Error::InvalidArgument(format!(
                "method must be newman-ziff or fixed-p, not {s:?}"
            ))),
        }
    }
}

/// The most samples per size a study may ask for.
pub const MAX_SAMPLES: u64 = 1 << 40;

/// What a study computes.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyConfig {
    /// Site (4/8) or bond percolation.
    pub model: Model,
    /// Open, cylinder or torus.
    pub boundary: Boundary,
    /// Lattice sizes as `(width, height)`.
    pub sizes: Vec<(usize, usize)>,
    /// Samples per size.
    pub samples: u64,
    /// The seed: sample `i` of every size draws from Philox stream `i` of this seed.
    pub seed: u64,
    /// The grid of `p` for the canonical curves.
    pub p_grid: Vec<f64>,
    /// The command line that made the study (recorded in its file).
    pub command: String,
    /// Newman–Ziff sweeps or fixed-`p` batches.
    pub method: Method,
}

impl StudyConfig {
    /// A grid of `p` around the model's reference threshold: `p_c ± 0.05` in steps of 0.001.
    pub fn default_grid(model: Model) -> Vec<f64> {
        let pc = model.reference_pc();
        (-50..=50).map(|k| pc + f64::from(k) * 1e-3).collect()
    }

    /// Checks every setting before any work starts.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no sizes, a zero or too large size, 0 or more than
    /// [`MAX_SAMPLES`] samples, an empty grid or a `p` outside `[0, 1]`.
    pub fn check(&self) -> Result<()> {
        if self.sizes.is_empty() {
            return Err(Error::InvalidArgument("at least one size is needed".into()));
        }
        for &(w, h) in &self.sizes {
            Geometry::new(self.model, w, h, self.boundary)?;
        }
        if self.samples == 0 || self.samples > MAX_SAMPLES {
            return Err(Error::InvalidArgument(format!(
                "samples must be in 1..={MAX_SAMPLES}, not {}",
                self.samples
            )));
        }
        if self.p_grid.is_empty() {
            return Err(Error::InvalidArgument("the p grid is empty".into()));
        }
        if let Some(p) = self.p_grid.iter().find(|p| !(0.0..=1.0).contains(*p)) {
            return Err(Error::InvalidArgument(format!(
                "p must be in [0, 1], not {p}"
            )));
        }
        Ok(())
    }

    /// The geometry of size `k`.
    pub fn geometry(&self, k: usize) -> Result<Geometry> {
        let (w, h) = self.sizes[k];
        Geometry::new(self.model, w, h, self.boundary)
    }
}

/// Where a running study stands, for progress reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Samples done, over all sizes.
    pub done: u64,
    /// Samples the study needs, over all sizes.
    pub total: u64,
    /// The size being run (index into the sizes).
    pub size: usize,
}

/// A study: its settings and, per size, the sums of the samples done so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    /// The settings.
    pub config: StudyConfig,
    /// Per size (in the order of `config.sizes`), the Newman–Ziff sums so far (empty for a
    /// fixed-`p` study).
    pub sums: Vec<MicroSums>,
    /// Per size, the fixed-`p` sums so far (empty for a Newman–Ziff study).
    pub fixed: Vec<FixedSums>,
    /// Where the samples ran (`"cpu"` or `"cuda:N"`; recorded in the file).
    pub backend: String,
}

impl Study {
    /// A study with no samples yet. Cluster-size histograms are taken at
    /// `n = round(p_c · N)`, `p_c` the model's reference threshold.
    ///
    /// # Errors
    /// As [`StudyConfig::check`].
    pub fn new(config: StudyConfig) -> Result<Study> {
        config.check()?;
        if config.method == Method::FixedP {
            let fixed = (0..config.sizes.len())
                .map(|k| {
                    let g = config.geometry(k)?;
                    Ok(FixedSums::new(
                        g,
                        &config.p_grid,
                        config.model.reference_pc(),
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Study {
                config,
                sums: Vec::new(),
                fixed,
                backend: "cpu".into(),
            });
        }
        let sums = (0..config.sizes.len())
            .map(|k| {
                let g = config.geometry(k)?;
                let n_c = (config.model.reference_pc() * g.units() as f64).round() as u64;
                MicroSums::new(g, &[n_c])
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Study {
            config,
            sums,
            fixed: Vec::new(),
            backend: "cpu".into(),
        })
    }

    /// Samples still to run, over all sizes.
    pub fn remaining(&self) -> u64 {
        let fixed: u64 = self
            .fixed
            .iter()
            .map(|f| self.config.samples.saturating_sub(f.samples))
            .sum();
        fixed
            + self
                .sums
                .iter()
                .map(|s| {
                    self.config
                        .samples
                        .saturating_sub(s.next_index(self.config.seed))
                })
                .sum::<u64>()
    }

    /// Bytes a run needs per size at most: the sums of every thread and the total, and the
    /// forests.
    pub fn memory_needed(&self, threads: usize) -> u64 {
        let fixed = self
            .fixed
            .iter()
            .map(|f| 16 * f.geometry.sites() as u64 * (threads as u64 + 2))
            .max()
            .unwrap_or(0);
        fixed
            + self
                .sums
                .iter()
                .map(|s| {
                    let per_n = 6 * 16 * (s.units() as u64 + 1);
                    let ns = 8 * (s.geometry.sites() as u64 + 1);
                    let forest = 17 * s.geometry.sites() as u64 + 4 * s.units() as u64;
                    (threads as u64 + 1) * (per_n + ns) + threads as u64 * forest
                })
                .max()
                .unwrap_or(0)
    }

    /// Runs the samples still missing, size by size, in batches of about `checkpoint_every`
    /// wall time (at least one sample per thread), calling `checkpoint` after each batch with
    /// the study so far. The sums do not depend on the batches or the threads; a study resumed
    /// from any checkpoint ends with the same sums as one run without a break.
    ///
    /// `options` picks the backend and the CPU threads (its connectivity and boundary are not
    /// used: the model and the study's boundary decide). The sweep runs on the CPU; `Backend::Auto`
    /// runs it there.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for [`Backend::Cuda`] (no GPU path yet), a bad thread count, or
    /// more memory than the machine has; whatever `checkpoint` returns.
    pub fn run(
        &mut self,
        options: &Options,
        checkpoint_every: Duration,
        checkpoint: impl FnMut(&Study, Progress) -> Result<()>,
    ) -> Result<()> {
        self.run_with(options, checkpoint_every, &mut Local, checkpoint)
    }

    /// [`Study::run`] with the batches computed by `runner` (here, or split over a farm's ranks:
    /// the same sums either way, as integers added in sample order).
    pub(crate) fn run_with(
        &mut self,
        options: &Options,
        checkpoint_every: Duration,
        runner: &mut dyn BatchRunner,
        mut checkpoint: impl FnMut(&Study, Progress) -> Result<()>,
    ) -> Result<()> {
        if self.config.method == Method::FixedP {
            return self.run_fixed(options, checkpoint_every, runner, &mut checkpoint);
        }
        if matches!(options.backend, Backend::Cuda { .. }) {
            return Err(Error::InvalidArgument(
                "the Newman–Ziff sweep is not yet implemented on the cuda backend: use --backend cpu or auto, or --method fixed-p".into(),
            ));
        }
        // The sweep runs on the CPU's threads (Auto resolves there: there is no GPU sweep).
        let pool = match Device::resolve(&options.backend(Backend::Cpu))? {
            Device::Cpu(pool) => pool,
            Device::Cuda(_) => unreachable!("Backend::Cpu resolves to the CPU"),
        };
        let threads = pool.install(|t| t)?;
        if let Some(available) = available_memory() {
            let needed = self.memory_needed(threads);
            if needed > available {
                return Err(Error::InvalidArgument(format!(
                    "this study needs about {} MiB but {} MiB are available: use smaller sizes or fewer threads",
                    needed >> 20,
                    available >> 20
                )));
            }
        }
        let total = self.config.samples * self.sums.len() as u64;
        let seed = self.config.seed;
        // A round: one sample per thread of every rank (ranks are assumed alike).
        let round = threads as u64 * runner.ranks();
        for k in 0..self.sums.len() {
            let mut batch = round;
            loop {
                let next = self.sums[k].next_index(seed);
                if next >= self.config.samples {
                    break;
                }
                let end = (next + batch).min(self.config.samples);
                let started = Instant::now();
                let g = self.sums[k].geometry;
                let ns_at = self.sums[k].ns_at.clone();
                let part = runner.newman_ziff(g, &ns_at, seed, next..end, &pool)?;
                self.sums[k].add(&part);
                // Aim the next batch at the checkpoint interval, in whole rounds of threads.
                let took = started.elapsed().as_secs_f64().max(1e-6);
                let rate = (end - next) as f64 / took;
                let want = (rate * checkpoint_every.as_secs_f64()) as u64;
                batch = (want / round).max(1) * round;
                let done = total - self.remaining();
                checkpoint(
                    self,
                    Progress {
                        done,
                        total,
                        size: k,
                    },
                )?;
            }
        }
        Ok(())
    }

    /// The fixed-`p` batches still missing, size by size: every grid point gets the same sample
    /// indices, in batches aimed at `checkpoint_every`.
    fn run_fixed(
        &mut self,
        options: &Options,
        checkpoint_every: Duration,
        runner: &mut dyn BatchRunner,
        checkpoint: &mut impl FnMut(&Study, Progress) -> Result<()>,
    ) -> Result<()> {
        let mut sampler = BatchSampler::new(options)?;
        self.backend = sampler.backend_name();
        let total = self.config.samples * self.fixed.len() as u64;
        let c = self.config.clone();
        let ranks = runner.ranks();
        for k in 0..self.fixed.len() {
            let g = self.fixed[k].geometry;
            let mut batch = if sampler.is_gpu() { 4096 } else { 256 } * ranks;
            loop {
                let next = self.fixed[k].samples;
                if next >= c.samples {
                    break;
                }
                let end = (next + batch).min(c.samples);
                let started = Instant::now();
                let part = runner.fixed_p(g, &c.p_grid, c.seed, next..end, &mut sampler)?;
                // Adds the counts and sums and raises `samples` to `end`.
                self.fixed[k].merge(&part)?;
                let took = started.elapsed().as_secs_f64().max(1e-6);
                let want = ((end - next) as f64 / took * checkpoint_every.as_secs_f64()) as u64;
                batch = want.clamp(64 * ranks, (1 << 22) * ranks);
                let done = total - self.remaining();
                checkpoint(
                    self,
                    Progress {
                        done,
                        total,
                        size: k,
                    },
                )?;
            }
        }
        Ok(())
    }

    /// The estimates of a fixed-`p` study: curves on the grid, `R` at the reference `p_c` by
    /// interpolation, the crossings of `R_hv` with its `L → ∞` value, the extrapolated `p_c`,
    /// and `τ` from the histogram at the grid point nearest `p_c`.
    fn results_fixed(&self) -> Result<StudyResults> {
        let pc = self.config.model.reference_pc();
        let target = self.crossing_target();
        let mut sizes = Vec::new();
        for f in &self.fixed {
            let g = f.geometry;
            let crossing = target.and_then(|t| f.crossing(Wrapping::HV, t).ok());
            let l = g.width.min(g.height) as f64;
            let s_max = (l.powf(91.0 / 48.0) / 20.0) as u64;
            let tau = fit_tau(&f.ns, f.samples, g.sites(), 8, s_max).ok();
            sizes.push(SizeResult {
                width: g.width,
                height: g.height,
                samples: f.samples,
                curves: f.curves()?,
                at_pc: f.at(pc),
                crossing,
                tau,
            });
        }
        Ok(self.finish(pc, sizes))
    }

    /// The extrapolated `p_c` over the sizes' crossings, when every size has one.
    fn finish(&self, pc: f64, sizes: Vec<SizeResult>) -> StudyResults {
        let with: Vec<(usize, Estimate)> = sizes
            .iter()
            .filter_map(|s| s.crossing.map(|c| (s.width.min(s.height), c.p)))
            .collect();
        let p_c = if with.len() == sizes.len() && !with.is_empty() {
            let ls: Vec<usize> = with.iter().map(|w| w.0).collect();
            let cs: Vec<Estimate> = with.iter().map(|w| w.1).collect();
            extrapolate(&ls, &cs).ok()
        } else {
            None
        };
        StudyResults {
            reference_pc: pc,
            samples: sizes.iter().map(|s| s.samples).sum(),
            p_c,
            sizes,
        }
    }

    /// Every estimate: curves on the grid, wrapping probabilities at the reference `p_c`,
    /// crossings, the extrapolated `p_c`, and `τ` per size.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a size has no samples.
    pub fn results(&self) -> Result<StudyResults> {
        if self.config.method == Method::FixedP {
            return self.results_fixed();
        }
        let pc = self.config.model.reference_pc();
        let target = self.crossing_target();
        let mut sizes = Vec::new();
        for sums in &self.sums {
            let curves = Curves::new(sums, &self.config.p_grid)?;
            let at = AtP::new(sums.units(), pc)?;
            let at_pc = Wrapping::ALL.map(|k| at.wrapping(sums, k));
            let crossing = match target {
                Some(t) => crossing(sums, Wrapping::HV, t).ok(),
                None => None,
            };
            let tau = sums.ns_counts.first().and_then(|counts| {
                let g = sums.geometry;
                let l = g.width.min(g.height) as f64;
                // From s = 8 (the fit carries the leading correction to scaling) to a
                // twentieth of the largest clusters' L^D (D = 91/48), clear of the cutoff.
                let s_max = (l.powf(91.0 / 48.0) / 20.0) as u64;
                fit_tau(counts, sums.samples, g.sites(), 8, s_max).ok()
            });
            sizes.push(SizeResult {
                width: sums.geometry.width,
                height: sums.geometry.height,
                samples: sums.samples,
                curves,
                at_pc,
                crossing,
                tau,
            });
        }
        Ok(self.finish(pc, sizes))
    }

    /// The `L → ∞` value of `R_hv` the crossings aim at: the torus value on square tori, 1/2 on
    /// open squares (by symmetry of crossing and its dual); none on cylinders and rectangles.
    pub fn crossing_target(&self) -> Option<f64> {
        let square = self.config.sizes.iter().all(|&(w, h)| w == h);
        match self.config.boundary {
            Boundary::Periodic if square => Some(Wrapping::HV.torus_limit()),
            Boundary::Open if square => Some(0.5),
            _ => None,
        }
    }
}

/// The estimates of one size.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeResult {
    /// `L`.
    pub width: usize,
    /// `M`.
    pub height: usize,
    /// Samples.
    pub samples: u64,
    /// Canonical curves on the study's grid.
    pub curves: Curves,
    /// Per [`Wrapping::ALL`], the probability at the model's reference `p_c`.
    pub at_pc: [Estimate; 6],
    /// Where `R_hv` crosses its `L → ∞` value (none on cylinders or rectangles).
    pub crossing: Option<Crossing>,
    /// `τ` from `n_s` at `n = round(p_c N)` over `s ∈ [8, L^(91/48)/20]` with the leading
    /// correction to scaling (none when the range holds fewer than 4 bins).
    pub tau: Option<TauFit>,
}

/// The estimates of a study.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyResults {
    /// The model's reference threshold.
    pub reference_pc: f64,
    /// Samples over all sizes.
    pub samples: u64,
    /// The extrapolated threshold (`intercept`) and correction amplitude (`slope`), when every
    /// size has a crossing.
    pub p_c: Option<LineFit>,
    /// Per size.
    pub sizes: Vec<SizeResult>,
}
