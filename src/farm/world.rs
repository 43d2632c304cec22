//! The MPI side of a farm (feature `mpi`, rsmpi): joining the job, the study protocol (rank 0
//! broadcasts each batch's sample range, every rank computes its share, the others send their
//! packed sums back) and the Monte Carlo protocol (rank 0 sends each rank its chains' starting
//! states; after every block each rank sends back its chains' samples and spins).
//!
//! Messages are `u64` words; MPI keeps the order of messages between two ranks, so no tags are
//! needed. A rank that fails returns its error; the binary then aborts the whole job
//! ([`Farm::abort`]), so that no rank waits forever for a message that will not come.

use super::{split, Parcel, Words};
use crate::cpu::pool::CpuPool;
use crate::device::Device;
use crate::mc::run_file::{next_block, parallelism_for, run_to_file_with, BlockRunner};
use crate::mc::{Chain, MemorySink, Progress as McProgress, RunConfig, Sample};
use crate::percolation::runner::{BatchRunner, Local};
use crate::percolation::{
    BatchSampler, FixedSums, Geometry, MicroSums, Model, Progress, Study, MAX_UNITS,
};
use crate::{Backend, Boundary, Connectivity, Error, Options, Result};
use mpi::environment::Universe;
use mpi::topology::{Rank, SimpleCommunicator};
use mpi::traits::{Communicator, Destination, Root, Source};
use ndarray::Array2;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

/// Environment variables that MPI launchers set in the processes they start: Open MPI's
/// `mpirun`, MPICH/Hydra and Slurm's `srun --mpi=pmi2` (PMI), PMIx (`srun --mpi=pmix`, Open MPI 5).
const LAUNCHER_VARS: [&str; 4] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"];

/// An MPI job this process is a rank of. Dropping it finalises MPI.
pub struct Farm {
    // Held for its Drop (MPI_Finalize), after every communication.
    _universe: Universe,
    world: SimpleCommunicator,
    rank: usize,
    ranks: usize,
}

impl std::fmt::Debug for Farm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Farm {{ rank: {}, ranks: {} }}", self.rank, self.ranks)
    }
}

impl Farm {
    /// Joins the MPI job when this process was started by an MPI launcher (`mpirun`, `mpiexec`,
    /// `srun`; recognised by the variables they set) and `CLUSTERLAB_MPI` is not `0`; `None`
    /// otherwise, so that a binary built with the feature runs as a single process without one
    /// (MPI is then never initialised).
    ///
    /// # Errors
    /// [`Error::Farm`] when MPI cannot be initialised.
    pub fn from_env() -> Result<Option<Farm>> {
        if std::env::var("CLUSTERLAB_MPI").is_ok_and(|v| v == "0") {
            return Ok(None);
        }
        if !LAUNCHER_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
            return Ok(None);
        }
        let universe =
            mpi::initialize().ok_or_else(|| Error::Farm("MPI was already initialised".into()))?;
        let world = universe.world();
        let (rank, ranks) = (world.rank() as usize, world.size() as usize);
        Ok(Some(Farm {
            _universe: universe,
            world,
            rank,
            ranks,
        }))
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Whether this is rank 0, which writes the files and prints.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// The CPU threads a rank should use by default: Slurm's `--cpus-per-task`, else this
    /// node's cores shared among its ranks (Open MPI's and Hydra's local rank count), else
    /// `None` (all cores). Results do not depend on it.
    pub fn default_threads(&self) -> Option<usize> {
        let var = |k: &str| std::env::var(k).ok()?.parse::<usize>().ok();
        if let Some(n) = var("SLURM_CPUS_PER_TASK") {
            return Some(n.max(1));
        }
        let local = var("OMPI_COMM_WORLD_LOCAL_SIZE").or_else(|| var("MPI_LOCALNRANKS"))?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Some((cores / local.max(1)).max(1))
    }

    /// Ends every rank of the job with `code` (after an error on one rank, which the others
    /// would otherwise wait for).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    fn root_process(&self) -> mpi::topology::Process<'_> {
        self.world.process_at_rank(0)
    }

    /// Sends `words` to `rank`: their count, then the words ([`Farm::receive_from`]).
    fn send_to(&self, rank: usize, words: &[u64]) {
        let to = self.world.process_at_rank(rank as Rank);
        to.send(&(words.len() as u64));
        to.send(words);
    }

    /// The words `rank` sent with [`Farm::send_to`]. The count comes first so that a garbled
    /// one is refused before it sizes an allocation.
    fn receive_from(&self, rank: usize) -> Result<Vec<u64>> {
        let from = self.world.process_at_rank(rank as Rank);
        let (n, _) = from.receive::<u64>();
        if n > MAX_MESSAGE {
            return Err(Error::Farm(format!(
                "rank {rank} announced {n} words, more than any message holds"
            )));
        }
        let mut words = vec![0u64; n as usize];
        from.receive_into(&mut words[..]);
        Ok(words)
    }

    /// Sends `words` from rank 0 to every rank (a length, then the words).
    fn broadcast(&self, words: &mut Vec<u64>) {
        let mut n = words.len() as u64;
        self.root_process().broadcast_into(&mut n);
        // No allocation from a received length beyond what one order can hold.
        words.resize(n.min(MAX_ORDER) as usize, 0);
        self.root_process().broadcast_into(&mut words[..]);
    }

    /// Rank 0's side of a percolation study: [`Study::run`] with every batch split over the
    /// ranks (each computing its share of the sample range) and their sums added here in rank
    /// order, the same sums as one process. The other ranks run [`Farm::serve_study`].
    ///
    /// # Errors
    /// As [`Study::run`]; [`Error::Farm`] for a garbled message.
    pub fn run_study(
        &self,
        study: &mut Study,
        options: &Options,
        checkpoint_every: Duration,
        checkpoint: impl FnMut(&Study, Progress) -> Result<()>,
    ) -> Result<()> {
        let result = study.run_with(options, checkpoint_every, &mut StudyFarm(self), checkpoint);
        if result.is_ok() {
            // The empty order: the other ranks return.
            self.broadcast(&mut Vec::new());
        }
        result
    }

    /// A rank other than 0 during a percolation study: computes its share of every batch rank 0
    /// orders, with `options`' threads and backend, until rank 0 says the study is done.
    ///
    /// # Errors
    /// Those of the samples; [`Error::Farm`] for a garbled order.
    pub fn serve_study(&self, options: &Options) -> Result<()> {
        let mut pool: Option<CpuPool> = None;
        let mut sampler: Option<BatchSampler> = None;
        loop {
            let mut order = Vec::new();
            self.broadcast(&mut order);
            if order.is_empty() {
                return Ok(());
            }
            let order = Order::read(&order)?;
            let mine = split(order.samples.clone(), self.rank, self.ranks);
            let mut out = Vec::new();
            if order.fixed {
                let sampler = match &mut sampler {
                    Some(s) => s,
                    None => sampler.insert(BatchSampler::new(options)?),
                };
                let p: Vec<f64> = order.extra.iter().map(|&b| f64::from_bits(b)).collect();
                Local
                    .fixed_p(order.geometry, &p, order.seed, mine, sampler)?
                    .pack(&mut out);
            } else {
                let pool = match &mut pool {
                    Some(p) => p,
                    None => pool.insert(cpu_pool(options)?),
                };
                Local
                    .newman_ziff(order.geometry, &order.extra, order.seed, mine, pool)?
                    .pack(&mut out);
            }
            self.send_to(0, &out);
        }
    }

    /// Rank 0's side of a Monte Carlo run: [`run_to_file`](crate::mc::run_to_file) with the
    /// chains split over the ranks. The other ranks run [`Farm::serve_chains`].
    ///
    /// # Errors
    /// As [`run_to_file`](crate::mc::run_to_file); [`Error::Farm`] for a garbled message.
    pub fn run_chains(
        &self,
        cfg: &RunConfig,
        output: &Path,
        resume: bool,
        force: bool,
        progress: McProgress<'_>,
    ) -> Result<()> {
        run_to_file_with(cfg, output, resume, force, progress, &mut ChainFarm(self))
    }

    /// A rank other than 0 during a Monte Carlo run: runs its chains block by block from the
    /// states rank 0 sends, sending back samples and spins after each block.
    ///
    /// # Errors
    /// Those of [`RunConfig::check`] and the chains; [`Error::Farm`] for a garbled message.
    pub fn serve_chains(&self, cfg: &RunConfig) -> Result<()> {
        cfg.check()?;
        let range = chain_split(cfg.temperatures.len(), self.rank, self.ranks);
        if range.is_empty() {
            return Ok(());
        }
        let mut jobs: Vec<(Chain, MemorySink)> = cfg
            .chain_range(range.clone(), parallelism_for(range.len()))?
            .into_iter()
            .map(|c| (c, MemorySink::default()))
            .collect();
        let start = self.receive_from(0)?;
        let mut words = Words::new(&start);
        for (chain, _) in &mut jobs {
            let sweeps = words.one()?;
            let spins = read_spins(&mut words, chain)?;
            chain.restore(spins, sweeps)?;
        }
        while let Some((sweeps, every)) = next_block(cfg, jobs[0].0.sweeps()) {
            crate::mc::run_chains(&mut jobs, sweeps, every)?;
            let mut out = Vec::new();
            for (chain, sink) in &mut jobs {
                out.push(chain.sweeps());
                out.push(sink.samples.len() as u64);
                for (sweep, s) in sink.samples.drain(..) {
                    out.push(sweep);
                    out.extend(sample_fields(&s).map(f64::to_bits));
                }
                pack_spins(chain, &mut out);
            }
            self.send_to(0, &out);
        }
        Ok(())
    }
}

/// The most words of one study order (a `p` grid of 100 000 points and a few more).
const MAX_ORDER: u64 = 1 << 20;

/// The most words of one message between ranks (8 GiB): far beyond any study's sums or block of
/// samples, and a bound on what a garbled length can allocate.
const MAX_MESSAGE: u64 = 1 << 30;

/// Chains of rank `rank`.
fn chain_split(chains: usize, rank: usize, ranks: usize) -> Range<usize> {
    let r = split(0..chains as u64, rank, ranks);
    r.start as usize..r.end as usize
}

fn cpu_pool(options: &Options) -> Result<CpuPool> {
    match Device::resolve(&options.backend(Backend::Cpu))? {
        Device::Cpu(pool) => Ok(pool),
        Device::Cuda(_) => unreachable!("Backend::Cpu resolves to the CPU"),
    }
}

/// One batch of a study, as rank 0 broadcasts it: `[fixed, model, boundary, width, height,
/// seed, first, end, len, extra…]`, `extra` the `n_s` points (Newman–Ziff) or the `p` grid's
/// bits (fixed-`p`).
struct Order {
    fixed: bool,
    geometry: Geometry,
    seed: u64,
    samples: Range<u64>,
    extra: Vec<u64>,
}

const MODELS: [Model; 3] = [
    Model::Site(Connectivity::Four),
    Model::Site(Connectivity::Eight),
    Model::Bond,
];
const BOUNDARIES: [Boundary; 4] = [
    Boundary::Open,
    Boundary::Periodic,
    Boundary::PeriodicX,
    Boundary::PeriodicY,
];

impl Order {
    fn write(&self) -> Vec<u64> {
        let g = self.geometry;
        let code = |found: Option<usize>| found.expect("every variant is listed") as u64;
        let mut w = vec![
            u64::from(self.fixed),
            code(MODELS.iter().position(|&m| m == g.model)),
            code(BOUNDARIES.iter().position(|&b| b == g.boundary)),
            g.width as u64,
            g.height as u64,
            self.seed,
            self.samples.start,
            self.samples.end,
            self.extra.len() as u64,
        ];
        w.extend_from_slice(&self.extra);
        w
    }

    fn read(words: &[u64]) -> Result<Order> {
        let mut w = Words::new(words);
        let fixed = w.one()? == 1;
        let model = *MODELS
            .get(w.len(MODELS.len())?)
            .ok_or_else(|| Error::Farm("unknown model".into()))?;
        let boundary = *BOUNDARIES
            .get(w.len(BOUNDARIES.len())?)
            .ok_or_else(|| Error::Farm("unknown boundary".into()))?;
        let (width, height) = (w.len(MAX_UNITS)?, w.len(MAX_UNITS)?);
        let geometry = Geometry::new(model, width, height, boundary)?;
        let seed = w.one()?;
        let samples = w.one()?..w.one()?;
        let n = w.len(MAX_ORDER as usize)?;
        let extra = w.take(n)?.to_vec();
        Ok(Order {
            fixed,
            geometry,
            seed,
            samples,
            extra,
        })
    }
}

/// Rank 0's [`BatchRunner`]: broadcasts each batch, computes rank 0's share, adds the others'.
struct StudyFarm<'a>(&'a Farm);

impl StudyFarm<'_> {
    /// Adds the packed sums of ranks 1.. to `part` (rank 0's), in rank order.
    fn gather<P: Parcel>(&self, part: &mut P) -> Result<()> {
        for r in 1..self.0.ranks {
            let words = self.0.receive_from(r)?;
            let mut w = Words::new(&words);
            part.add_packed(&mut w)?;
            if !w.is_empty() {
                return Err(Error::Farm(format!("rank {r} sent more than its sums")));
            }
        }
        Ok(())
    }
}

impl BatchRunner for StudyFarm<'_> {
    fn newman_ziff(
        &mut self,
        g: Geometry,
        ns_at: &[u64],
        seed: u64,
        samples: Range<u64>,
        pool: &CpuPool,
    ) -> Result<MicroSums> {
        let order = Order {
            fixed: false,
            geometry: g,
            seed,
            samples: samples.clone(),
            extra: ns_at.to_vec(),
        };
        self.0.broadcast(&mut order.write());
        let mine = split(samples, 0, self.0.ranks);
        let mut part = Local.newman_ziff(g, ns_at, seed, mine, pool)?;
        self.gather(&mut part)?;
        Ok(part)
    }

    fn fixed_p(
        &mut self,
        g: Geometry,
        p_grid: &[f64],
        seed: u64,
        samples: Range<u64>,
        sampler: &mut BatchSampler,
    ) -> Result<FixedSums> {
        let order = Order {
            fixed: true,
            geometry: g,
            seed,
            samples: samples.clone(),
            extra: p_grid.iter().map(|p| p.to_bits()).collect(),
        };
        self.0.broadcast(&mut order.write());
        let mine = split(samples, 0, self.0.ranks);
        let mut part = Local.fixed_p(g, p_grid, seed, mine, sampler)?;
        self.gather(&mut part)?;
        Ok(part)
    }

    fn ranks(&self) -> u64 {
        self.0.ranks as u64
    }
}

/// Rank 0's [`BlockRunner`]: runs its own chains, takes the others' from their ranks.
struct ChainFarm<'a>(&'a Farm);

impl BlockRunner for ChainFarm<'_> {
    fn mine(&self, chains: usize) -> Range<usize> {
        chain_split(chains, 0, self.0.ranks)
    }

    fn start(&mut self, jobs: &[(Chain, MemorySink)]) -> Result<()> {
        for r in 1..self.0.ranks {
            let range = chain_split(jobs.len(), r, self.0.ranks);
            if range.is_empty() {
                continue;
            }
            let mut out = Vec::new();
            for (chain, _) in &jobs[range] {
                out.push(chain.sweeps());
                pack_spins(chain, &mut out);
            }
            self.0.send_to(r, &out);
        }
        Ok(())
    }

    fn run_block(
        &mut self,
        jobs: &mut [(Chain, MemorySink)],
        sweeps: u64,
        every: u64,
    ) -> Result<()> {
        let n = jobs.len();
        crate::mc::run_chains(&mut jobs[chain_split(n, 0, self.0.ranks)], sweeps, every)?;
        for r in 1..self.0.ranks {
            let range = chain_split(n, r, self.0.ranks);
            if range.is_empty() {
                continue;
            }
            let words = self.0.receive_from(r)?;
            let mut w = Words::new(&words);
            for (chain, sink) in &mut jobs[range] {
                let done = w.one()?;
                let count = w.len(usize::try_from(sweeps).unwrap_or(usize::MAX))?;
                sink.samples.clear();
                for row in w.take(8 * count)?.chunks_exact(8) {
                    let f = |k: usize| f64::from_bits(row[1 + k]);
                    let sample = Sample {
                        energy: f(0),
                        m: f(1),
                        abs_m: f(2),
                        m2: f(3),
                        m4: f(4),
                        cluster_num: f(5),
                        cluster_den: f(6),
                    };
                    sink.samples.push((row[0], sample));
                }
                let spins = read_spins(&mut w, chain)?;
                chain.restore(spins, done)?;
            }
        }
        Ok(())
    }
}

fn sample_fields(s: &Sample) -> [f64; 7] {
    [
        s.energy,
        s.m,
        s.abs_m,
        s.m2,
        s.m4,
        s.cluster_num,
        s.cluster_den,
    ]
}

/// A chain's spins, eight to a word (little-endian), in raster order.
fn pack_spins(chain: &Chain, out: &mut Vec<u64>) {
    let spins = chain.spins();
    let mut bytes: Vec<u8> = spins.iter().copied().collect();
    bytes.resize(bytes.len().div_ceil(8) * 8, 0);
    out.extend(
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
    );
}

/// Spins of `chain`'s shape packed by [`pack_spins`].
fn read_spins(words: &mut Words<'_>, chain: &Chain) -> Result<Array2<u8>> {
    let (h, w) = chain.model().dim();
    let packed = words.take((h * w).div_ceil(8))?;
    let bytes: Vec<u8> = packed
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .take(h * w)
        .collect();
    Array2::from_shape_vec((h, w), bytes).map_err(|e| Error::Farm(format!("spins: {e}")))
}
