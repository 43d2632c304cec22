//! What to compute and where: the algorithm, the backend, the CPU threads, and [`Options`], the
//! one value that front ends (`Labeler`, `Analyzer`, `RegionGrower`) carry.

use super::lattice::{Boundary, Connectivity};
use crate::{Error, Result};

/// Which labeling algorithm to run. Each backend implements some of them; asking a backend for
/// one it lacks is an [`Error::InvalidArgument`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// The fastest the backend has ([`Algorithm::Strips`] on the CPU).
    #[default]
    Auto,
    /// Breadth-first flood fill: the slow, obviously correct reference (CPU).
    Bfs,
    /// The classic Hoshen–Kopelman raster scan with a label-of-labels array (CPU).
    HoshenKopelman,
    /// Run-based union-find over horizontal strips labeled in parallel, then a border merge (CPU).
    Strips,
    /// HA4 (Hennequin et al. 2018): one warp per row segment with bitmask run detection, union-find
    /// at segment starts, a horizontal border merge and relabeling (GPU, 4-connectivity).
    Ha4,
    /// Label equivalence (Kalentev et al. 2011): iterated scanning and analysis until a done flag
    /// stays clear (GPU).
    LabelEquivalence,
    /// Tile merge (Šťava & Beneš 2010): shared-memory tiles labeled locally, then hierarchical
    /// border merging and a final flatten (GPU).
    TileMerge,
    /// Block-based union-find on 2×2 blocks for 8-connectivity, 2×1 for 4-connectivity (GPU; what
    /// `Auto` picks on devices of compute capability 7.5).
    BlockUnionFind,
    /// Run-based union-find on bit-packed rows in shared-memory tiles of 32 × 1024 sites, each
    /// labeled once and written whole, then elementwise passes for the clusters that cross tile
    /// seams (GPU; the fastest, what `Auto` picks).
    BitRuns,
}

/// Where labeling runs.
///
/// Defaults: the library's is [`Backend::Cpu`] — a `Labeler`, `Analyzer` or `Options` made
/// without naming a backend never opens a GPU driver, so that a program's behaviour does not
/// change with the machine it runs on. The `clusterlab` command line's is `auto` for every
/// subcommand (`label`, `analyze`, `percolation`): a user at a terminal gets the GPU when there
/// is one and the CPU otherwise, and the summary says which. [`Backend::Auto`] never fails for
/// want of a GPU: it resolves to the CPU, and a GPU-only algorithm then to the CPU's fastest
/// ([`Algorithm::Auto`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// The CPU (the library's default: no device is touched).
    #[default]
    Cpu,
    /// An NVIDIA GPU, by device ordinal (feature `cuda`).
    Cuda {
        /// The CUDA device ordinal (0 for the first GPU).
        device: usize,
    },
    /// The first GPU when a CUDA driver and device are usable and the algorithm runs there, the
    /// CPU otherwise; [`Labeler::backend_name`](crate::Labeler::backend_name) says which was chosen.
    Auto,
}

impl std::str::FromStr for Backend {
    type Err = Error;
    /// `cpu`, `cuda` (or its alias `gpu`), `cuda:N` or `auto`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Backend::Cpu),
            "cuda" | "gpu" => Ok(Backend::Cuda { device: 0 }),
            "auto" => Ok(Backend::Auto),
            _ => match s.strip_prefix("cuda:").map(str::parse) {
                Some(Ok(device)) => Ok(Backend::Cuda { device }),
                _ => Err(Error::InvalidArgument(format!(
                    "backend must be cpu, cuda, cuda:N or auto, not {s:?}"
                ))),
            },
        }
    }
}

impl Algorithm {
    /// Every algorithm, in the order of the enum.
    pub const ALL: [Algorithm; 9] = [
        Algorithm::Auto,
        Algorithm::Bfs,
        Algorithm::HoshenKopelman,
        Algorithm::Strips,
        Algorithm::Ha4,
        Algorithm::LabelEquivalence,
        Algorithm::TileMerge,
        Algorithm::BlockUnionFind,
        Algorithm::BitRuns,
    ];

    /// The name used on the command line and in files: `auto`, `bfs`, `hoshen-kopelman`,
    /// `strips`, `ha4`, `label-equivalence`, `tile-merge`, `block-union-find`, `bit-runs`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Auto => "auto",
            Algorithm::Bfs => "bfs",
            Algorithm::HoshenKopelman => "hoshen-kopelman",
            Algorithm::Strips => "strips",
            Algorithm::Ha4 => "ha4",
            Algorithm::LabelEquivalence => "label-equivalence",
            Algorithm::TileMerge => "tile-merge",
            Algorithm::BlockUnionFind => "block-union-find",
            Algorithm::BitRuns => "bit-runs",
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = Error;
    /// A name of [`Algorithm::name`] (also with `_` for `-`).
    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.replace('_', "-");
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                Error::InvalidArgument(format!(
                    "algorithm must be one of {}, not {s:?}",
                    names.join(", ")
                ))
            })
    }
}

impl Algorithm {
    /// Whether the CPU backend implements this algorithm.
    pub fn runs_on_cpu(self) -> bool {
        matches!(
            self,
            Algorithm::Auto | Algorithm::Bfs | Algorithm::HoshenKopelman | Algorithm::Strips
        )
    }
    /// Whether the CUDA backend implements this algorithm.
    pub fn runs_on_gpu(self) -> bool {
        !matches!(
            self,
            Algorithm::Bfs | Algorithm::HoshenKopelman | Algorithm::Strips
        )
    }
}

/// How many threads the CPU backend uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Parallelism {
    /// One thread, the caller's.
    Sequential,
    /// Rayon's global pool, whose size follows `RAYON_NUM_THREADS` (default: all cores).
    #[default]
    Rayon,
    /// A pool of exactly this many threads, owned by the labeler.
    Threads(usize),
}

/// The most threads [`Parallelism::Threads`] may ask for: beyond it the request is refused before
/// any thread starts (a typo such as `-j 100000` must not fork-bomb the machine).
pub const MAX_THREADS: usize = 4096;

impl Parallelism {
    /// Checks the thread count: at least 1 and at most [`MAX_THREADS`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `Threads(0)` or more than [`MAX_THREADS`] threads.
    pub fn check(self) -> Result<()> {
        match self {
            Parallelism::Threads(0) => Err(Error::InvalidArgument(
                "thread count must be at least 1".into(),
            )),
            Parallelism::Threads(n) if n > MAX_THREADS => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                Err(Error::InvalidArgument(format!(
                    "thread count {n} is above the limit of {MAX_THREADS} (this machine has {cores} cores)"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Everything that decides how a lattice is labeled, in one `Copy` value: the neighbourhood, the
/// boundary, the site rule, the algorithm, the CPU threads and the backend. `Labeler`,
/// `Analyzer` and `RegionGrower` each hold one; their builder methods set its fields, in any
/// order.
///
/// ```
/// use clusterlab::{Backend, Boundary, Connectivity, Labeler, Options, Parallelism};
///
/// let options = Options::new(Connectivity::Eight, Boundary::Periodic)
///     .parallelism(Parallelism::Sequential);
/// let labeler = Labeler::with_options(options)?;
/// assert_eq!(labeler.backend_name(), "cpu");
/// # Ok::<(), clusterlab::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Options {
    /// Which neighbours join.
    pub connectivity: Connectivity,
    /// What lies beyond the edges.
    pub boundary: Boundary,
    /// Same-value segments instead of occupancy.
    pub segments: bool,
    /// The labeling algorithm.
    pub algorithm: Algorithm,
    /// The CPU threads.
    pub parallelism: Parallelism,
    /// Where to run.
    pub backend: Backend,
}

impl Options {
    /// Occupancy labeling with the fastest algorithm on the CPU, on rayon's global pool.
    pub fn new(connectivity: Connectivity, boundary: Boundary) -> Self {
        Options {
            connectivity,
            boundary,
            segments: false,
            algorithm: Algorithm::Auto,
            parallelism: Parallelism::Rayon,
            backend: Backend::Cpu,
        }
    }
    /// Same-value segments (see [`Options::segments`](#structfield.segments)).
    pub fn segments(mut self, segments: bool) -> Self {
        self.segments = segments;
        self
    }
    /// The algorithm.
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }
    /// The CPU threads.
    pub fn parallelism(mut self, parallelism: Parallelism) -> Self {
        self.parallelism = parallelism;
        self
    }
    /// The backend.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }
    /// The part a labeling backend needs.
    pub(crate) fn spec(&self) -> Spec {
        Spec {
            connectivity: self.connectivity,
            boundary: self.boundary,
            segments: self.segments,
            algorithm: self.algorithm,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::new(Connectivity::Four, Boundary::Open)
    }
}

/// What a labeling backend computes: [`Options`] less the threads and the backend, which the
/// backend itself embodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spec {
    pub connectivity: Connectivity,
    pub boundary: Boundary,
    /// Same-value segments instead of occupancy.
    pub segments: bool,
    pub algorithm: Algorithm,
}
