//! [`Labeler`]: a reusable labeling plan that owns its buffers.

use crate::core::alloc::{check_available, human_bytes};
use crate::core::backend::LabelBackend;
use crate::core::labels::{LabelValue, Staging};
use crate::core::lattice::{check_size, check_size_for};
use crate::core::options::Spec;
use crate::cpu::{pool::CpuPool, CpuBackend};
use crate::device::Device;
use crate::{
    Algorithm, Backend, Boundary, Connectivity, Error, Labels, Options, Parallelism, Result,
    SiteValue, SizeCounts, MAX_SITES_64,
};
use ndarray::{ArrayView2, ArrayViewMut2};

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
    /// Label buffers for outputs whose rows are not contiguous.
    staging: Staging,
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
            staging: Staging::default(),
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
            staging: Staging::default(),
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
    /// The labels are `u32` or `u64`, as `out` is ([`LabelValue`]): `u32` labels number up to
    /// [`MAX_SITES`](crate::MAX_SITES) sites, `u64` ones any lattice that fits in memory (up to
    /// [`MAX_SITES_64`](crate::MAX_SITES_64)), with the same numbering — a `u64` labeling of a
    /// lattice that `u32` labels can number gives the `u32` labels, widened.
    ///
    /// Any view is accepted: strided, transposed and sliced lattices give the labels of the
    /// lattice they show (rows that are not contiguous are copied first).
    ///
    /// ```
    /// use clusterlab::{Boundary, Connectivity, Labeler};
    /// use ndarray::{array, Array2};
    ///
    /// let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open);
    /// let lattice = array![[1u8, 0, 1], [1, 0, 1]];
    /// let mut labels = Array2::<u64>::zeros((2, 3));
    /// assert_eq!(labeler.label_into(lattice.view(), labels.view_mut())?, 2);
    /// assert_eq!(labels, array![[1u64, 0, 2], [1, 0, 2]]);
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` does not have the lattice's shape,
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES) sites with `u32` labels
    /// (or [`MAX_SITES_64`](crate::MAX_SITES_64) with `u64` ones),
    /// [`Error::InvalidArgument`] for an algorithm the backend lacks (or a backend without
    /// 64-bit labels) or a thread count of 0; with `u64` labels, [`Error::OutOfMemory`] when the
    /// backend's scratch would not fit in what the machine has free (with the estimate), or the
    /// GPU's errors ([`Error::OutOfDeviceMemory`], …).
    pub fn label_into<T: SiteValue, L: LabelValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        mut out: ArrayViewMut2<'_, L>,
    ) -> Result<usize> {
        let (h, w) = lattice.dim();
        if out.dim() != (h, w) {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [out.nrows(), out.ncols()],
            });
        }
        check_size_for(h, w, L::MAX_SITES)?;
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
            return L::label(self.backend.as_mut(), input, &spec, out);
        }
        // Through a buffer with contiguous rows, of the label type.
        let staging = L::staging(&mut self.staging);
        if staging.dim() != (h, w) {
            *staging = crate::core::alloc::zeros(h, w, "the label staging buffer")?;
        }
        let n = L::label(self.backend.as_mut(), input, &spec, staging.view_mut())?;
        out.assign(staging);
        Ok(n)
    }

    /// Counts the clusters of `lattice` by size into `counts`, with the clusters that wrap (by
    /// winding, on periodic axes) or span (open axes) — what a simulation step needs, without a
    /// label image or a [`ClusterTable`](crate::ClusterTable): the number of clusters, occupied
    /// sites, `n_s`, the largest cluster, `S`, `P∞` and the wrapping flags are
    /// [`SizeCounts`]' methods, equal to the table's [`stats`](crate::ClusterTable::stats).
    ///
    /// `counts` is cleared and refilled; keep it from step to step. On the CPU this takes less
    /// than [`Labeler::label_into`]'s time (0.6–0.9× on the 2-core development machine: the
    /// strip labeler's forest, in two-row bands for 8-connected occupancy, with the sizes
    /// summed over its runs; no label is written: `benches/size_counts.rs`), whatever the
    /// algorithm set, and segments are counted too. It allocates nothing once a call has seen
    /// the shape and at least as many runs of joined sites (warm up as for `label_into`, with
    /// a checkerboard; `tests/allocations.rs` counts it: 0 allocations over 240 timesteps on
    /// one thread; a pool of threads adds rayon's own bookkeeping, about one allocation per 60
    /// calls). On a GPU ([`Backend::Cuda`]) it runs the GPU analyzer's `size_counts`
    /// (occupancy lattices only).
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
    /// On the CPU, lattices beyond [`MAX_SITES`](crate::MAX_SITES) sites are counted too (no
    /// label is written, so no label type limits them): occupancy lattices up to about
    /// 8.6·10⁹ sites (while the shape's runs fit 32-bit indices), as memory allows.
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES) sites on a GPU;
    /// [`Error::InvalidArgument`] for a thread count of 0, on a GPU segments, and on the CPU
    /// beyond `MAX_SITES` sites a shape whose runs 32-bit indices cannot number (segment mode,
    /// or more than about 8.6·10⁹ sites); [`Error::OutOfMemory`] when the CPU's scratch would
    /// not fit, with the estimate; on a GPU the errors of its analyzer
    /// ([`Error::OutOfDeviceMemory`], [`Error::Cuda`], …).
    pub fn size_counts_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        counts: &mut SizeCounts,
    ) -> Result<()> {
        let (h, w) = lattice.dim();
        // The CPU counts beyond MAX_SITES (and refuses what it cannot count itself).
        match &self.device {
            Device::Cpu(pool) => {
                check_size_for(h, w, MAX_SITES_64)?;
                // Refused before a copy of the input is made.
                let threads = pool.threads();
                crate::cpu::size_counts_strips(h, w, self.options.segments, threads)?;
            }
            _ => check_size(h, w)?,
        }
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
        // label_into writes every site, so a kept image of a dropped `Labels` will do.
        let mut array = crate::core::alloc::label_image(h, w, "the label image")?;
        let count = self.label_into(lattice, array.view_mut())?;
        Ok(Labels { array, count })
    }

    /// An estimate of the bytes that labeling an `h × w` lattice of `site_bytes`-byte sites into
    /// `L` labels takes at its peak on this labeler's backend: the input, the label image and,
    /// on the CPU, the algorithm's scratch at the most runs the shape can have (what
    /// [`Labeler::label64`] checks against the memory available). A GPU's own memory is not
    /// counted.
    ///
    /// ```
    /// use clusterlab::{Boundary, Connectivity, Labeler, Parallelism};
    ///
    /// let labeler = Labeler::new(Connectivity::Four, Boundary::Open).parallelism(Parallelism::Threads(2));
    /// let (n32, n64) = (
    ///     labeler.bytes_needed::<u32>(1000, 1000, 1),
    ///     labeler.bytes_needed::<u64>(1000, 1000, 1),
    /// );
    /// assert_eq!(n64 - n32, 4_000_000); // the labels' extra 4 bytes a site
    /// ```
    pub fn bytes_needed<L: LabelValue>(&self, h: usize, w: usize, site_bytes: usize) -> usize {
        let sites = h.saturating_mul(w);
        let scratch = match &self.device {
            Device::Cpu(pool) => {
                crate::cpu::label64_scratch_bytes(h, w, self.options.segments, pool.threads())
            }
            _ => 0,
        };
        sites
            .saturating_mul(site_bytes + std::mem::size_of::<L>())
            .saturating_add(scratch)
    }

    /// Checks, without allocating anything, that [`Labeler::label64`] of an `h × w` lattice of
    /// `site_bytes`-byte sites (already in memory) fits in the memory available: the label
    /// image and, on the CPU, the algorithm's scratch. For callers that can refuse before they
    /// even read the lattice (the command line does, from a file's header).
    ///
    /// ```
    /// use clusterlab::{Boundary, Connectivity, Error, Labeler};
    ///
    /// let labeler = Labeler::new(Connectivity::Four, Boundary::Open);
    /// assert!(labeler.check_memory64(1000, 1000, 1).is_ok());
    /// // 10^12 sites need 8 TB of labels alone.
    /// let refused = labeler.check_memory64(1_000_000, 1_000_000, 1);
    /// assert!(matches!(refused, Err(Error::OutOfMemory { .. })));
    /// ```
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond [`MAX_SITES_64`](crate::MAX_SITES_64) sites,
    /// [`Error::OutOfMemory`] with the estimate of the bytes when they do not fit.
    pub fn check_memory64(&self, h: usize, w: usize, site_bytes: usize) -> Result<()> {
        self.check_memory(h, w, site_bytes, true, false)
    }

    /// The memory check of a 64-bit labeling: the label image (when `labels` are to be
    /// allocated), a contiguous copy of the input (`copy`) and the CPU's scratch, against the
    /// memory available; the input's own bytes go into the message's total.
    fn check_memory(
        &self,
        h: usize,
        w: usize,
        site_bytes: usize,
        labels: bool,
        copy: bool,
    ) -> Result<()> {
        check_size_for(h, w, MAX_SITES_64)?;
        let sites = h * w;
        let input = sites.saturating_mul(site_bytes);
        let copy = if copy { input } else { 0 };
        let labels = if labels { sites.saturating_mul(8) } else { 0 };
        // The CPU's scratch comes from the same memory; a GPU checks its own.
        let scratch = match &self.device {
            Device::Cpu(pool) => {
                crate::cpu::label64_scratch_bytes(h, w, self.options.segments, pool.threads())
            }
            _ => 0,
        };
        let new = labels.saturating_add(copy).saturating_add(scratch);
        check_available(
            new,
            new.saturating_add(input),
            &format!(
                "64-bit labeling of {h} × {w} sites on {} (input {}, labels {}, scratch {})",
                self.backend.name(),
                human_bytes(input.saturating_add(copy) as u64),
                human_bytes(labels as u64),
                human_bytes(scratch as u64)
            ),
        )
    }

    /// Labels `lattice` into a new image of `u64` labels: for lattices beyond
    /// [`MAX_SITES`](crate::MAX_SITES) sites, or wherever 64-bit labels are wanted (the numbering
    /// is [`Labeler::label`]'s). On the CPU this is the same strip labeler, writing 8-byte labels
    /// (its union-find indices stay `u32` while the lattice's runs fit them).
    ///
    /// Before allocating, the bytes the labeling needs — the label image (8 a site), a copy of
    /// an input whose rows are not contiguous, and on the CPU the algorithm's scratch — are
    /// compared with what the machine has available (`MemAvailable`); what does not fit is
    /// refused with the estimate, instead of failing half-way.
    ///
    /// ```
    /// use clusterlab::{Boundary, Connectivity, Labeler};
    /// use ndarray::array;
    ///
    /// let mut labeler = Labeler::new(Connectivity::Eight, Boundary::Open);
    /// let labels = labeler.label64(array![[1u8, 0, 0], [0, 1, 0], [0, 0, 0]].view())?;
    /// assert_eq!((labels.count(), labels.array()[[1, 1]]), (1, 1u64));
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Labeler::label_into`] with `u64` labels, and [`Error::OutOfMemory`] (with the
    /// estimate of the bytes) when the labeling does not fit in the memory available.
    pub fn label64<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<Labels<u64>> {
        let (h, w) = lattice.dim();
        let copy = !rows_contiguous(lattice.strides(), w);
        self.check_memory(h, w, std::mem::size_of::<T>(), true, copy)?;
        let mut array = crate::core::alloc::label_image(h, w, "the 64-bit label image")?;
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

    /// Labels the lattice with `labeler` into `out` (its shape), whatever its site type, and
    /// returns the number of clusters (see [`Labeler::label_into`]).
    ///
    /// # Errors
    /// As [`Labeler::label_into`].
    pub fn label_into_with<L: LabelValue>(
        &self,
        labeler: &mut Labeler,
        out: ArrayViewMut2<'_, L>,
    ) -> Result<usize> {
        match self {
            Self::U8(a) => labeler.label_into(a.view(), out),
            Self::U16(a) => labeler.label_into(a.view(), out),
            Self::U32(a) => labeler.label_into(a.view(), out),
        }
    }

    /// Labels the lattice with `labeler` into `u64` labels, whatever its site type.
    ///
    /// # Errors
    /// As [`Labeler::label64`].
    pub fn label64_with(&self, labeler: &mut Labeler) -> Result<Labels<u64>> {
        match self {
            Self::U8(a) => labeler.label64(a.view()),
            Self::U16(a) => labeler.label64(a.view()),
            Self::U32(a) => labeler.label64(a.view()),
        }
    }
}
