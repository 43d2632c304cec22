//! [`Labeler`]: a reusable labeling plan that owns its buffers.

use crate::core::backend::LabelBackend;
use crate::core::lattice::check_size;
use crate::core::options::Spec;
use crate::cpu::{pool::CpuPool, CpuBackend};
use crate::device::Device;
use crate::{
    Algorithm, Backend, Boundary, Connectivity, Error, Labels, Options, Parallelism, Result,
    SiteValue, SizeCounts,
};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

// Bond-masked labeling (`label_bonds*`, `bond_roots_into`): its own file.
mod bonds;

/// A labeling plan for lattice after lattice: connectivity, boundary, site rule and algorithm,
/// with the buffers it needs, which grow to the largest lattice and cluster count seen and are
/// then reused: once a call has seen the shape and as many clusters, [`Labeler::label_into`]
/// allocates nothing (for inputs with contiguous rows), so simulation codes can call it every
/// timestep. To allocate nothing from the first timestep on, warm it up on a lattice of the
/// shape with more clusters than the simulation will have — a checkerboard, the most a lattice
/// can hold with 4-connectivity (`tests/allocations.rs` counts with a global allocator: 0
/// allocations over 200 timesteps at p_c after such a warm-up).
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
    options: Options,
    device: Device,
    backend: Box<dyn LabelBackend + Send>,
    /// Label buffer for outputs whose rows are not contiguous.
    staging: Array2<u32>,
    /// Buffers of bond-masked labeling, kept between calls.
    bond_scratch: bonds::Scratch,
}

impl Labeler {
    /// A CPU labeler for occupancy lattices (nonzero = occupied) with the fastest algorithm and
    /// rayon's global thread pool.
    pub fn new(connectivity: Connectivity, boundary: Boundary) -> Self {
        let pool = CpuPool::new(Parallelism::Rayon);
        Labeler {
            options: Options::new(connectivity, boundary),
            backend: Box::new(CpuBackend::new(pool.clone())),
            device: Device::Cpu(pool),
            staging: Array2::zeros((0, 0)),
            bond_scratch: Default::default(),
        }
    }

    /// A labeler for `options`, its backend resolved at once.
    ///
    /// # Errors
    /// As [`Labeler::backend`].
    pub fn with_options(options: Options) -> Result<Self> {
        let device = Device::resolve(&options)?;
        Ok(Labeler {
            options,
            backend: device.label_backend()?,
            device,
            staging: Array2::zeros((0, 0)),
            bond_scratch: Default::default(),
        })
    }

    /// Same-value segments: neighbours join only when they hold the same nonzero value.
    pub fn segments(mut self, segments: bool) -> Self {
        self.options.segments = segments;
        self
    }

    /// The algorithm to run (default [`Algorithm::Auto`]). With [`Backend::Auto`], a GPU-only
    /// algorithm where no GPU is usable runs as the CPU's [`Algorithm::Auto`] (and
    /// [`Labeler::backend_name`] says `cpu`); with [`Backend::Cpu`] it is an error at the first
    /// call.
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.options.algorithm = algorithm;
        if self.options.backend == Backend::Auto {
            // Auto never fails: it falls back to the CPU.
            let device = Device::resolve(&self.options)
                .unwrap_or_else(|_| Device::Cpu(CpuPool::new(self.options.parallelism)));
            self.set_device(device);
        }
        self
    }

    /// The CPU thread count (default [`Parallelism::Rayon`]). A thread count of 0 or above
    /// [`MAX_THREADS`](crate::MAX_THREADS) is an error at the first call.
    pub fn parallelism(mut self, parallelism: Parallelism) -> Self {
        self.options.parallelism = parallelism;
        if !self.device.is_gpu() {
            self.set_device(Device::Cpu(CpuPool::new(parallelism)));
        }
        self
    }

    /// Where to label (default [`Backend::Auto`]: the CPU unless a GPU-only algorithm is named). A GPU backend compiles its kernels on first
    /// use and keeps its device buffers between calls.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] for [`Backend::Cuda`] when no CUDA driver, NVRTC or device is
    /// usable (or the crate was built without the `cuda` feature); [`Backend::Auto`] falls back to
    /// the CPU instead.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        self.options.backend = backend;
        let device = Device::resolve(&self.options)?;
        self.backend = device.label_backend()?;
        self.device = device;
        Ok(self)
    }

    /// Replaces the device and its backend; a GPU whose stream cannot be made leaves the CPU.
    fn set_device(&mut self, device: Device) {
        match device.label_backend() {
            Ok(backend) => {
                self.backend = backend;
                self.device = device;
            }
            Err(_) => {
                let pool = CpuPool::new(self.options.parallelism);
                self.backend = Box::new(CpuBackend::new(pool.clone()));
                self.device = Device::Cpu(pool);
            }
        }
    }

    /// The options this labeler runs with.
    pub fn options(&self) -> Options {
        self.options
    }

    /// The neighbourhood.
    pub fn connectivity(&self) -> Connectivity {
        self.options.connectivity
    }

    /// The boundary.
    pub fn boundary(&self) -> Boundary {
        self.options.boundary
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
        let spec = Spec {
            algorithm: self.device.algorithm(&self.options),
            ..self.options.spec()
        };
        if rows_contiguous(out.strides(), w) {
            self.backend.label(input, &spec, out)
        } else {
            if self.staging.dim() != (h, w) {
                self.staging = Array2::zeros((h, w));
            }
            let n = self.backend.label(input, &spec, self.staging.view_mut())?;
            out.assign(&self.staging);
            Ok(n)
        }
    }

    /// Counts the clusters of `lattice` by size into `counts`, with the clusters that wrap (by
    /// winding, on periodic axes) or span (open axes) — what a simulation step needs, without a
    /// label image or a [`ClusterTable`](crate::ClusterTable): the number of clusters, occupied
    /// sites, `n_s`, the largest cluster, `S`, `P∞` and the wrapping flags are
    /// [`SizeCounts`]' methods, equal to the table's [`stats`](crate::ClusterTable::stats).
    ///
    /// `counts` is cleared and refilled; keep it from step to step. On the CPU this takes about
    /// [`Labeler::label_into`]'s time or less (the strip labeler's forest, with the sizes summed
    /// over its runs; no label is written: `benches/size_counts.rs`), whatever the algorithm
    /// set, and segments are counted too. It allocates nothing once a call has seen the shape and at least as many
    /// runs of joined sites (warm up as for `label_into`, with a checkerboard;
    /// `tests/allocations.rs` counts it: 0 allocations over 240 timesteps on one thread; a
    /// pool of threads adds rayon's own bookkeeping, about one allocation per 60 calls). On a GPU ([`Backend::Cuda`]) it runs the GPU
    /// analyzer's `size_counts` (occupancy lattices only).
    ///
    /// ```
    /// use clusterlab::{Boundary, Connectivity, Labeler, SizeCounts};
    /// use ndarray::array;
    ///
    /// let mut labeler = Labeler::new(Connectivity::Four, Boundary::Periodic);
    /// let mut counts = SizeCounts::new();
    /// let lattice = array![[1u8, 1, 1], [0, 0, 0], [0, 1, 0], [0, 0, 0]];
    /// labeler.size_counts_into(lattice.view(), &mut counts)?;
    /// assert_eq!(counts.counts, vec![(1, 1), (3, 1)]); // one single site, one row of 3
    /// assert!(counts.wraps_x() && !counts.wraps_y()); // the row winds around x
    /// assert_eq!((counts.clusters(), counts.largest(), counts.mean_size()), (2, 3, 1.0));
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES) sites,
    /// [`Error::InvalidArgument`] for a thread count of 0 or, on a GPU, segments; on a GPU the
    /// errors of its analyzer ([`Error::OutOfDeviceMemory`], [`Error::Cuda`], …).
    pub fn size_counts_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        counts: &mut SizeCounts,
    ) -> Result<()> {
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        let copy;
        let lattice = if rows_contiguous(lattice.strides(), w) {
            lattice
        } else {
            copy = lattice.as_standard_layout().into_owned();
            copy.view()
        };
        let spec = Spec {
            algorithm: self.device.algorithm(&self.options),
            ..self.options.spec()
        };
        self.backend.size_counts(T::input(lattice), &spec, counts)
    }

    /// Labels `lattice` into a new label array.
    ///
    /// # Errors
    /// As [`Labeler::label_into`], and [`Error::OutOfMemory`] (with the bytes) when the label
    /// image cannot be allocated.
    pub fn label<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<Labels> {
        check_size(lattice.nrows(), lattice.ncols())?;
        let (h, w) = lattice.dim();
        let mut array = crate::core::alloc::zeros(h, w, "the label image")?;
        let count = self.label_into(lattice, array.view_mut())?;
        Ok(Labels { array, count })
    }
}

/// Whether each row is contiguous in memory (stride 1 along `x`, or at most one column).
fn rows_contiguous(strides: &[isize], w: usize) -> bool {
    w <= 1 || strides[1] == 1
}

impl crate::core::lattice::Lattice {
    /// Labels the lattice with `labeler`, whatever its site type.
    ///
    /// # Errors
    /// As [`Labeler::label`].
    pub fn label_with(&self, labeler: &mut Labeler) -> Result<Labels> {
        match self {
            Self::U8(a) => labeler.label(a.view()),
            Self::U16(a) => labeler.label(a.view()),
            Self::U32(a) => labeler.label(a.view()),
        }
    }
}
