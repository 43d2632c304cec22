//! [`Labeler`]: a reusable labeling plan that owns its buffers.

use crate::backend::{LabelBackend, Spec};
use crate::cpu::CpuBackend;
use crate::lattice::{check_size, Boundary, Connectivity, SiteValue};
use crate::{Error, Labels, Result};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Backend {
    /// The CPU (the default: no device is touched).
    #[default]
    Cpu,
    /// An NVIDIA GPU, by device ordinal (feature `cuda`).
    Cuda {
        /// The CUDA device ordinal (0 for the first GPU).
        device: usize,
    },
    /// The first GPU when a CUDA driver and device are usable and the algorithm runs there, the
    /// CPU otherwise; [`Labeler::backend_name`] says which was chosen.
    Auto,
}

impl std::str::FromStr for Backend {
    type Err = Error;
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

/// A labeling plan for lattice after lattice: connectivity, boundary, site rule and algorithm,
/// with the buffers it needs. After the first call on a given shape, [`Labeler::label_into`]
/// allocates nothing (for inputs with contiguous rows), so simulation codes can call it every
/// timestep.
///
/// ```
/// use clusterlab::{Boundary, Connectivity, Labeler};
/// use ndarray::{array, Array2};
///
/// let mut labeler = Labeler::new(Connectivity::Four, Boundary::Periodic);
/// let mut labels = Array2::<u32>::zeros((3, 4));
/// let lattice = array![[1u8, 0, 0, 1], [0, 0, 0, 0], [1, 1, 0, 0]];
/// let n = labeler.label_into(lattice.view(), labels.view_mut())?;
/// // On the torus, (0, 0), (0, 3) and (2, 0) are one cluster.
/// assert_eq!(n, 1);
/// assert_eq!(labels[[2, 1]], 1);
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub struct Labeler {
    spec: Spec,
    parallelism: Parallelism,
    on_gpu: bool,
    backend: Box<dyn LabelBackend + Send>,
    /// Label buffer for outputs whose rows are not contiguous.
    staging: Array2<u32>,
}

impl Labeler {
    /// A CPU labeler for occupancy lattices (nonzero = occupied) with the fastest algorithm and
    /// rayon's global thread pool.
    pub fn new(connectivity: Connectivity, boundary: Boundary) -> Self {
        Labeler {
            spec: Spec {
                connectivity,
                boundary,
                segments: false,
                algorithm: Algorithm::Auto,
            },
            parallelism: Parallelism::Rayon,
            on_gpu: false,
            backend: Box::new(CpuBackend::new(Parallelism::Rayon)),
            staging: Array2::zeros((0, 0)),
        }
    }

    /// Same-value segments: neighbours join only when they hold the same nonzero value.
    pub fn segments(mut self, segments: bool) -> Self {
        self.spec.segments = segments;
        self
    }

    /// The algorithm to run (default [`Algorithm::Auto`]).
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.spec.algorithm = algorithm;
        self
    }

    /// The CPU thread count (default [`Parallelism::Rayon`]).
    pub fn parallelism(mut self, parallelism: Parallelism) -> Self {
        self.parallelism = parallelism;
        if !self.on_gpu {
            self.backend = Box::new(CpuBackend::new(parallelism));
        }
        self
    }

    /// Where to label (default [`Backend::Cpu`]). A GPU backend compiles its kernels on first
    /// use and keeps its device buffers between calls.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] for [`Backend::Cuda`] when no CUDA driver, NVRTC or device is
    /// usable (or the crate was built without the `cuda` feature); [`Backend::Auto`] falls back to
    /// the CPU instead.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        let gpu = match backend {
            Backend::Cpu => None,
            Backend::Cuda { device } => Some(cuda_backend(device)?),
            Backend::Auto if self.spec.algorithm.runs_on_gpu() => cuda_backend(0).ok(),
            Backend::Auto => None,
        };
        self.on_gpu = gpu.is_some();
        self.backend = gpu.unwrap_or_else(|| Box::new(CpuBackend::new(self.parallelism)));
        Ok(self)
    }

    /// The neighbourhood.
    pub fn connectivity(&self) -> Connectivity {
        self.spec.connectivity
    }

    /// The boundary.
    pub fn boundary(&self) -> Boundary {
        self.spec.boundary
    }

    /// The backend that runs the labeling, e.g. `"cpu"` or `"cuda:0 (NVIDIA H200)"`.
    pub fn backend_name(&self) -> String {
        self.backend.name()
    }

    /// Labels `lattice` into `out` and returns the number of clusters.
    ///
    /// Any view is accepted: strided, transposed and sliced lattices give the labels of the
    /// lattice they show (rows that are not contiguous are copied first).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` does not have the lattice's shape,
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES) sites,
    /// [`Error::InvalidArgument`] for an algorithm the backend lacks or a thread count of 0.
    pub fn label_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        mut out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let (h, w) = lattice.dim();
        if out.dim() != (h, w) {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [out.nrows(), out.ncols()],
            });
        }
        check_size(h, w)?;
        let copy;
        let lattice = if rows_contiguous(lattice.strides(), w) {
            lattice
        } else {
            copy = lattice.as_standard_layout().into_owned();
            copy.view()
        };
        let input = T::input(lattice);
        if rows_contiguous(out.strides(), w) {
            self.backend.label(input, &self.spec, out)
        } else {
            if self.staging.dim() != (h, w) {
                self.staging = Array2::zeros((h, w));
            }
            let n = self
                .backend
                .label(input, &self.spec, self.staging.view_mut())?;
            out.assign(&self.staging);
            Ok(n)
        }
    }

    /// Labels `lattice` into a new label array.
    ///
    /// # Errors
    /// As [`Labeler::label_into`].
    pub fn label<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<Labels> {
        check_size(lattice.nrows(), lattice.ncols())?;
        let mut array = Array2::zeros(lattice.dim());
        let count = self.label_into(lattice, array.view_mut())?;
        Ok(Labels { array, count })
    }
}

/// Whether each row is contiguous in memory (stride 1 along `x`, or at most one column).
fn rows_contiguous(strides: &[isize], w: usize) -> bool {
    w <= 1 || strides[1] == 1
}

/// The CUDA backend on `device`, or why there is none.
fn cuda_backend(device: usize) -> Result<Box<dyn LabelBackend + Send>> {
    #[cfg(feature = "cuda")]
    {
        Ok(Box::new(crate::cuda::CudaBackend::new(device)?))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        Err(Error::CudaUnavailable(
            "clusterlab was built without the `cuda` feature".into(),
        ))
    }
}
