//! A Markov chain: a model, an update, the spins and the sweep counter, with the `run` loop that
//! feeds a [`Sink`].

use super::measure::Sample;
use super::metropolis::Metropolis;
use super::model::Model;
use super::rng::MAX_STREAMS;
use super::sw::SwendsenWang;
use super::sw_gpu::GpuSw;
use super::wolff::Wolff;
use crate::{Error, Options, Result};
use ndarray::Array2;
use std::fmt;
use std::str::FromStr;

/// Which update a chain runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Update {
    /// Swendsen–Wang on all cores, or device-resident on a GPU.
    SwendsenWang,
    /// Wolff single-cluster updates, sequential.
    Wolff,
    /// Checkerboard Metropolis.
    Metropolis,
}

impl Update {
    /// `sw`, `wolff` or `metropolis`, as on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Update::SwendsenWang => "sw",
            Update::Wolff => "wolff",
            Update::Metropolis => "metropolis",
        }
    }
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Update {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "sw" | "swendsen-wang" => Ok(Update::SwendsenWang),
            "wolff" => Ok(Update::Wolff),
            "metropolis" => Ok(Update::Metropolis),
            _ => Err(Error::InvalidArgument(format!(
                "algorithm must be sw, wolff or metropolis, not {s:?}"
            ))),
        }
    }
}

/// Where a chain's measurements go.
pub trait Sink {
    /// Records the sample measured after sweep number `sweep` (counted from 1).
    ///
    /// # Errors
    /// Whatever storing it can fail with.
    fn record(&mut self, sweep: u64, sample: &Sample) -> Result<()>;
    /// Called after every sweep (for checkpoints); the default does nothing. A chain on a GPU
    /// calls it once at the end of each [`Chain::run`], when its spins are back on the host.
    ///
    /// # Errors
    /// Whatever a checkpoint can fail with.
    fn sweep_done(&mut self, _chain: &Chain) -> Result<()> {
        Ok(())
    }
}

/// Keeps every sample in memory.
#[derive(Debug, Clone, Default)]
pub struct MemorySink {
    /// `(sweep, sample)` in order.
    pub samples: Vec<(u64, Sample)>,
}

impl MemorySink {
    /// The samples without their sweep numbers.
    pub fn values(&self) -> Vec<Sample> {
        self.samples.iter().map(|&(_, s)| s).collect()
    }
}

impl Sink for MemorySink {
    fn record(&mut self, sweep: u64, sample: &Sample) -> Result<()> {
        self.samples.push((sweep, *sample));
        Ok(())
    }
}

/// Discards every sample (thermalisation).
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn record(&mut self, _sweep: u64, _sample: &Sample) -> Result<()> {
        Ok(())
    }
}

enum Engine {
    Sw(Box<SwendsenWang>),
    SwGpu(Box<GpuSw>),
    Wolff(Wolff),
    Metropolis(Box<Metropolis>),
}

/// A Markov chain. Its random numbers are keyed by (seed, stream, sweep, site) — see
/// [`crate::mc`] — so its state is the spins and the sweep counter alone: a chain restored from
/// them ([`Chain::restore`]) continues bit-identically.
///
/// ```
/// use clusterlab::mc::{Chain, MemorySink, Model, Update, ISING_TC};
/// use clusterlab::Options;
///
/// let model = Model::ising(8, 8, ISING_TC)?;
/// let mut chain = Chain::new(model, Update::SwendsenWang, 1, 0, Options::default())?;
/// let mut sink = MemorySink::default();
/// chain.run(100, 1, &mut sink)?;
/// assert_eq!((chain.sweeps(), sink.samples.len()), (100, 100));
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub struct Chain {
    model: Model,
    update: Update,
    seed: u64,
    stream: u64,
    sweep: u64,
    spins: Array2<u8>,
    engine: Engine,
}

impl Chain {
    /// A chain of `model` with `update`, keyed by `seed` and `stream` (the chain's number, e.g.
    /// its temperature's index), starting from the ordered state (all spins 0). `options`
    /// gives the CPU threads and the backend: Swendsen–Wang runs device-resident on a GPU for
    /// [`Backend::Cuda`](crate::Backend::Cuda), and for [`Backend::Auto`](crate::Backend::Auto)
    /// when GPU 0 opens; Wolff and Metropolis run on the CPU.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of [`MAX_STREAMS`] or more, a field with a
    /// cluster update, odd periodic sides with Metropolis, or Wolff or Metropolis with
    /// [`Backend::Cuda`](crate::Backend::Cuda); those of [`Model::check`];
    /// [`Error::CudaUnavailable`] when [`Backend::Cuda`](crate::Backend::Cuda) finds no GPU, and
    /// the device's errors (memory, kernels, driver).
    pub fn new(
        model: Model,
        update: Update,
        seed: u64,
        stream: u64,
        options: Options,
    ) -> Result<Self> {
        let model = model.check()?;
        if stream >= MAX_STREAMS {
            return Err(Error::InvalidArgument(format!(
                "stream {stream} is beyond the limit {MAX_STREAMS}"
            )));
        }
        if update != Update::SwendsenWang && matches!(options.backend, crate::Backend::Cuda { .. })
        {
            return Err(Error::InvalidArgument(format!(
                "{update} runs on the CPU only: use --backend cpu (Swendsen–Wang runs on the GPU)"
            )));
        }
        let engine = match update {
            Update::SwendsenWang => {
                super::check_cluster_model(&model)?;
                match GpuSw::open(&model, seed, stream, options)? {
                    Some(gpu) => Engine::SwGpu(Box::new(gpu)),
                    None => Engine::Sw(Box::new(SwendsenWang::new(&model, options)?)),
                }
            }
            Update::Wolff => Engine::Wolff(Wolff::new(&model, seed, stream)?),
            Update::Metropolis => Engine::Metropolis(Box::new(Metropolis::new(&model, options)?)),
        };
        Ok(Chain {
            model,
            update,
            seed,
            stream,
            sweep: 0,
            spins: Array2::zeros(model.dim()),
            engine,
        })
    }

    /// Restores the state of a chain with the same model, update, seed and stream: the spins
    /// after `sweeps` sweeps.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for spins of another shape, [`Error::InvalidArgument`] for a spin
    /// outside `0..q`.
    pub fn restore(&mut self, spins: Array2<u8>, sweeps: u64) -> Result<()> {
        if spins.dim() != self.model.dim() {
            let (h, w) = self.model.dim();
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [spins.nrows(), spins.ncols()],
            });
        }
        if let Some(&bad) = spins.iter().find(|&&s| s >= self.model.q()) {
            return Err(Error::InvalidArgument(format!(
                "spin {bad} outside 0..{}",
                self.model.q()
            )));
        }
        self.spins = spins.as_standard_layout().into_owned();
        self.sweep = sweeps;
        if let Engine::SwGpu(g) = &mut self.engine {
            g.spins_changed();
        }
        Ok(())
    }

    /// Performs one sweep; with `measure`, returns the sample of the new configuration. On a GPU
    /// each call waits for its sweep and copies the spins back: [`Chain::run`] is the fast path.
    ///
    /// # Errors
    /// As the update's `sweep`.
    pub fn sweep(&mut self, measure: bool) -> Result<Option<Sample>> {
        let (m, s, seed, stream, k) = (
            &self.model,
            &mut self.spins,
            self.seed,
            self.stream,
            self.sweep,
        );
        let sample = match &mut self.engine {
            Engine::Sw(u) => u.sweep(m, s, seed, stream, k, measure)?,
            Engine::SwGpu(g) => {
                let mut one = MemorySink::default();
                let every = if measure { 1 } else { u64::MAX };
                g.run(m, s, k, 1, every, &mut one)?;
                one.samples.pop().map(|(_, sample)| sample)
            }
            Engine::Wolff(u) => u.sweep(m, s, seed, stream, k, measure)?,
            Engine::Metropolis(u) => u.sweep(m, s, seed, stream, k, measure)?,
        };
        self.sweep += 1;
        Ok(sample)
    }

    /// Runs `sweeps` sweeps, measuring after every sweep whose number (counted from 1, over the
    /// chain's whole life, so that a resumed run measures the same sweeps) is a multiple of
    /// `every`, and handing each sample to `sink`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `every` = 0; those of the update and the sink.
    pub fn run(&mut self, sweeps: u64, every: u64, sink: &mut dyn Sink) -> Result<()> {
        if every == 0 {
            return Err(Error::InvalidArgument("--every must be at least 1".into()));
        }
        if let Engine::SwGpu(g) = &mut self.engine {
            // Device-resident: no wait per sweep, the samples come back in batches.
            g.run(
                &self.model,
                &mut self.spins,
                self.sweep,
                sweeps,
                every,
                sink,
            )?;
            self.sweep += sweeps;
            return sink.sweep_done(self);
        }
        for _ in 0..sweeps {
            let measure = (self.sweep + 1) % every == 0;
            if let Some(sample) = self.sweep(measure)? {
                sink.record(self.sweep, &sample)?;
            }
            sink.sweep_done(self)?;
        }
        Ok(())
    }

    /// Starts (`true`, clearing it) or stops recording the histogram of Swendsen–Wang cluster
    /// sizes over the measured sweeps (those [`Chain::run`] hands to its sink, or
    /// [`Chain::sweep`] with `measure`); read it with [`Chain::cluster_sizes`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a Wolff or Metropolis chain, or a Swendsen–Wang chain on a
    /// GPU (the histogram is the CPU path's).
    pub fn record_cluster_sizes(&mut self, on: bool) -> Result<()> {
        match &mut self.engine {
            Engine::Sw(u) => {
                u.record_cluster_sizes(on);
                Ok(())
            }
            _ => Err(Error::InvalidArgument(
                "the cluster-size histogram is recorded by Swendsen–Wang on the CPU only".into(),
            )),
        }
    }

    /// The recorded cluster-size histogram: entry `s` counts the clusters of `s` sites over the
    /// measured sweeps since recording started; `None` when not recording.
    pub fn cluster_sizes(&self) -> Option<&[u64]> {
        match &self.engine {
            Engine::Sw(u) => u.cluster_sizes(),
            _ => None,
        }
    }

    /// The spins (`0..q`; Ising: 0 is s = +1).
    pub fn spins(&self) -> &Array2<u8> {
        &self.spins
    }
    /// Sweeps done.
    pub fn sweeps(&self) -> u64 {
        self.sweep
    }
    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }
    /// Whether the chain runs on a GPU.
    pub fn on_gpu(&self) -> bool {
        matches!(self.engine, Engine::SwGpu(_))
    }
    /// The update.
    pub fn update(&self) -> Update {
        self.update
    }
    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The stream.
    pub fn stream(&self) -> u64 {
        self.stream
    }
}

/// Runs independent chains (e.g. a temperature list) in parallel on rayon's pool, each with its
/// sink: `sweeps` sweeps, measuring every `every`. Give each chain
/// [`Parallelism::Sequential`](crate::Parallelism::Sequential) so that the chains, not their
/// sweeps, share the cores.
///
/// # Errors
/// The first error of any chain (the others run to their end).
pub fn run_chains<S: Sink + Send>(jobs: &mut [(Chain, S)], sweeps: u64, every: u64) -> Result<()> {
    use rayon::prelude::*;
    jobs.par_iter_mut()
        .map(|(chain, sink)| chain.run(sweeps, every, sink))
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}
