//! [`CudaLabeler`]: the public GPU labeling plan over the crate-internal CUDA backend.

use super::*;

/// A GPU labeling plan: connectivity, boundary, site rule, algorithm and numbering, with its own
/// stream, compiled kernels and device buffers.
///
/// [`CudaLabeler::label_device`] labels a lattice that is already on the GPU into a label array
/// on the GPU: it only queues kernels on the labeler's stream (no host synchronisation) and,
/// after the first call for a lattice of that size or larger (or [`CudaLabeler::prepare`]),
/// allocates nothing. The cluster count stays on the device until [`CudaLabeler::count`] asks
/// for it. Extra device memory besides the input and the labels: 64 bytes, 1 byte per 1024 sites
/// for canonical numbering; for bit runs 1 bit a site of root masks (2 for canonical numbering)
/// and, on lattices of at least two 32-row tiles per multiprocessor (where each label is written
/// once), 1 byte a site for the runs' roots (2 for segments); for block union-find, its forest
/// (a `u32` per block: per 2×2 block with 8-connectivity, 1 byte per site; per 2×1 block with
/// 4-connectivity, 2 bytes per site; none for segments, whose forest is the label array) and the
/// cells of the 32×32-block tiles' edges (a `u32` per 8 blocks). Label equivalence and tile merge use the label array as
/// their forest.
///
/// **64-bit labels**, for lattices of any size (beyond [`MAX_SITES`](crate::MAX_SITES) sites,
/// e.g. 70000 × 70000 on an 80 GB GPU): [`CudaLabeler::label_device64`] and
/// [`CudaLabeler::label_host64_into`] run bit runs' 64-bit build (`Algorithm::Auto` or
/// `BitRuns`; other algorithms are an [`Error::InvalidArgument`] naming it), both numberings,
/// labels identical to the 32-bit ones widened where both apply. Device memory: the lattice,
/// 8 bytes a site of labels and 2 bytes a site (plus 1 bit, 2 for canonical numbering) of
/// scratch.
pub struct CudaLabeler {
    pub(super) backend: CudaBackend,
    spec: Spec,
    numbering: Numbering,
}

impl CudaLabeler {
    /// A labeler on device `device` with a stream of its own, for occupancy lattices, with
    /// [`Algorithm::Auto`] and canonical numbering.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when the driver, NVRTC or the device is missing (never a
    /// panic), [`Error::Cuda`] when the driver fails.
    pub fn new(device: usize, connectivity: Connectivity, boundary: Boundary) -> Result<Self> {
        Ok(CudaLabeler::from_backend(
            CudaBackend::new(device)?,
            connectivity,
            boundary,
        ))
    }

    /// A labeler that queues its work on `stream` (a stream of the caller's, e.g. the one a
    /// simulation's kernels run on, so that no cross-stream synchronisation is needed).
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] for a device older than compute capability 7.0,
    /// [`Error::Cuda`] when the driver fails.
    pub fn with_stream(
        stream: Arc<CudaStream>,
        connectivity: Connectivity,
        boundary: Boundary,
    ) -> Result<Self> {
        let ordinal = stream.context().ordinal();
        let gpu = Gpu::with_stream(stream)?;
        Ok(CudaLabeler::from_backend(
            CudaBackend::from_gpu(gpu, ordinal),
            connectivity,
            boundary,
        ))
    }

    fn from_backend(backend: CudaBackend, connectivity: Connectivity, boundary: Boundary) -> Self {
        CudaLabeler {
            backend,
            spec: Spec {
                connectivity,
                boundary,
                segments: false,
                algorithm: Algorithm::Auto,
            },
            numbering: Numbering::Canonical,
        }
    }

    /// Same-value segments: neighbours join only when they hold the same nonzero value.
    pub fn segments(mut self, segments: bool) -> Self {
        self.spec.segments = segments;
        self
    }

    /// The algorithm: [`Algorithm::Auto`] (the fastest: [`Algorithm::BitRuns`], or
    /// [`Algorithm::BlockUnionFind`] on devices of compute capability 7.5), one of those two,
    /// [`Algorithm::Ha4`], [`Algorithm::TileMerge`] or [`Algorithm::LabelEquivalence`]; others
    /// are refused when labeling ([`Algorithm::BitRuns`] also on devices of compute
    /// capability 7.5).
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.spec.algorithm = algorithm;
        self
    }

    /// The numbering of [`CudaLabeler::label_device`] and [`CudaLabeler::label_host_into`]
    /// (default [`Numbering::Canonical`]).
    pub fn numbering(mut self, numbering: Numbering) -> Self {
        self.numbering = numbering;
        self
    }

    /// The stream the labeler queues its work on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.backend.engine.gpu.stream
    }

    /// The device context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.backend.engine.gpu.ctx
    }

    pub(super) fn job<T: SiteValue>(&self, height: usize, width: usize) -> Result<Job> {
        Ok(Job {
            site: SiteType::of::<T>(),
            height,
            width,
            connectivity: self.spec.connectivity,
            boundary: self.spec.boundary,
            segments: self.spec.segments,
            family: family_of(
                self.spec.algorithm,
                &self.backend.engine.gpu,
                self.spec.segments,
            )?,
            numbering: self.numbering,
            labels: LabelWidth::U32,
            short_tiles: false,
            write_once: false,
        }
        .tiles_for(&self.backend.engine.gpu))
    }

    /// The job of a `height × width` lattice of `T` into 64-bit labels.
    pub(super) fn job64<T: SiteValue>(&self, height: usize, width: usize) -> Result<Job> {
        Ok(Job {
            site: SiteType::of::<T>(),
            height,
            width,
            connectivity: self.spec.connectivity,
            boundary: self.spec.boundary,
            segments: self.spec.segments,
            family: family_of_wide(
                self.spec.algorithm,
                &self.backend.engine.gpu,
                self.spec.segments,
            )?,
            numbering: self.numbering,
            labels: LabelWidth::U64,
            short_tiles: false,
            write_once: false,
        })
    }

    /// Compiles the kernels for lattices of `T` and allocates the scratch for `height × width`
    /// sites, so that [`CudaLabeler::label_device`] allocates and compiles nothing. Optional:
    /// the first call does it otherwise.
    ///
    /// # Errors
    /// [`Error::KernelCompile`] with NVRTC's log, [`Error::OutOfDeviceMemory`],
    /// [`Error::InvalidArgument`] for a CPU algorithm or canonical numbering of 2^31 sites or
    /// more, [`Error::TooManySites`], [`Error::Cuda`].
    pub fn prepare<T: SiteValue>(&mut self, height: usize, width: usize) -> Result<()> {
        let job = self.job::<T>(height, width)?;
        self.backend.engine.prepare(&job)
    }

    /// [`CudaLabeler::prepare`] for 64-bit labels ([`CudaLabeler::label_device64`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an algorithm other than `Auto`/`BitRuns` or a lattice
    /// beyond the 64-bit kernels' indices (2^31 rows or columns), [`Error::KernelCompile`],
    /// [`Error::OutOfDeviceMemory`], [`Error::Cuda`].
    pub fn prepare64<T: SiteValue>(&mut self, height: usize, width: usize) -> Result<()> {
        let job = self.job64::<T>(height, width)?;
        self.backend.engine.prepare(&job)
    }

    /// [`CudaLabeler::label_device`] into 64-bit labels, for lattices of any size: queues the
    /// labeling of the `height × width` lattice `input` into `output` (`height * width` `u64`
    /// labels, numbered as [`CudaLabeler::numbering`] says: raw labels are the smallest site
    /// index + 1) and returns without waiting; [`CudaLabeler::count`] gives the number of
    /// clusters. Allocates nothing after the first call for a lattice that large (or
    /// [`CudaLabeler::prepare64`]). Device memory besides `input` and `output`: 2 bytes and
    /// 1 bit a site of scratch (2 bits for canonical numbering) and small counts.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a buffer's length is not `height * width` and the
    /// errors of [`CudaLabeler::prepare64`]; [`Error::Cuda`] when a launch fails.
    pub fn label_device64<T, I, O>(
        &mut self,
        input: &I,
        height: usize,
        width: usize,
        output: &mut O,
    ) -> Result<()>
    where
        T: SiteValue,
        I: DevicePtr<T>,
        O: DevicePtrMut<u64>,
    {
        let job = self.job64::<T>(height, width)?;
        self.run_device(job, input, output)
    }

    /// Labels a host lattice of any size on the GPU into 64-bit labels `out`, numbered as
    /// [`CudaLabeler::numbering`] says; returns the number of clusters. The lattice and the
    /// labels pass through pinned host bands of 64 MB, so the host needs no second copy.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` does not have the lattice's shape,
    /// [`Error::OutOfDeviceMemory`] (bytes needed and free) when the lattice, its labels and
    /// the scratch do not fit on the device, and the errors of [`CudaLabeler::prepare64`].
    pub fn label_host64_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        out: ArrayViewMut2<'_, u64>,
    ) -> Result<usize> {
        match self.numbering {
            // The backend's own entry point (what the front end calls), canonical.
            Numbering::Canonical => self.backend.label64(T::input(lattice), &self.spec, out),
            Numbering::Raw => {
                self.backend
                    .label_wide(T::input(lattice), &self.spec, Numbering::Raw, out)
            }
        }
    }

    /// Queues the labeling of the `height × width` lattice `input` (row-major, on this
    /// labeler's device) into `output` (`height * width` labels) on the labeler's stream, and
    /// returns without waiting. Buffers of other streams are ordered through cudarc's events.
    /// The labels follow [`CudaLabeler::numbering`]; [`CudaLabeler::count`] gives the number of
    /// clusters. Device memory: the input, the output and the labeler's small scratch.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a buffer's length is not `height * width` or for the
    /// cases of [`CudaLabeler::prepare`], whose errors the first call can also return;
    /// [`Error::Cuda`] when a launch fails.
    pub fn label_device<T, I, O>(
        &mut self,
        input: &I,
        height: usize,
        width: usize,
        output: &mut O,
    ) -> Result<()>
    where
        T: SiteValue,
        I: DevicePtr<T>,
        O: DevicePtrMut<u32>,
    {
        let job = self.job::<T>(height, width)?;
        self.run_device(job, input, output)
    }

    /// Checks `job` against the device and both buffers' lengths, then queues it: the common
    /// tail of [`CudaLabeler::label_device`] and [`CudaLabeler::label_device64`].
    fn run_device<T, L, I, O>(&mut self, job: Job, input: &I, output: &mut O) -> Result<()>
    where
        I: DevicePtr<T>,
        O: DevicePtrMut<L>,
    {
        self.backend.engine.check(&job)?;
        let (height, width) = (job.height, job.width);
        let n = job.sites();
        if input.len() != n || output.len() != n {
            return Err(Error::InvalidArgument(format!(
                "a {height}×{width} lattice needs {n} sites and {n} labels, got buffers of {} \
                 and {}",
                input.len(),
                output.len()
            )));
        }
        let stream = self.backend.engine.gpu.stream.clone();
        let (in_ptr, _read) = input.device_ptr(&stream);
        let (out_ptr, _write) = output.device_ptr_mut(&stream);
        self.backend.engine.run(&job, in_ptr, out_ptr)
    }

    /// Labels a lattice at raw device addresses — memory this crate did not allocate, such as a
    /// CuPy array, a PyTorch CUDA tensor or a simulation's own `cudaMalloc` buffer — and returns
    /// the number of clusters, for bindings that only hold a pointer (e.g. from
    /// `__cuda_array_interface__`).
    ///
    /// The labeling is ordered after the work already queued on `stream` (the caller's stream;
    /// null for the legacy default stream) by an event the labeler's own stream waits on, then
    /// labels into `output` with [`CudaLabeler::numbering`] and waits for its own stream (the
    /// count needs the host), so `output` is complete when this returns and work queued later on
    /// `stream` may read it. Nothing goes through the host but the count. Both pointers are
    /// checked to lie on this labeler's device.
    ///
    /// # Safety
    /// `input` must address `height * width` readable sites of `T` and `output` as many writable
    /// `u32`, both row-major and contiguous, in this labeler's device's primary context (what
    /// the CUDA runtime, CuPy and PyTorch use), not overlapping, and kept alive until this
    /// returns; `stream` must be null or a live stream of that context.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a pointer is not device memory of this labeler's device,
    /// and the errors of [`CudaLabeler::label_device`] and [`CudaLabeler::count`].
    pub unsafe fn label_device_ptr<T: SiteValue>(
        &mut self,
        input: sys::CUdeviceptr,
        height: usize,
        width: usize,
        output: sys::CUdeviceptr,
        stream: sys::CUstream,
    ) -> Result<usize> {
        let job = self.job::<T>(height, width)?;
        self.backend.engine.check(&job)?;
        let gpu = &self.backend.engine.gpu;
        gpu.bind()?;
        let ordinal = gpu.ctx.ordinal();
        if job.sites() > 0 {
            for (what, ptr) in [("input", input), ("output", output)] {
                let mut device: i32 = -1;
                // SAFETY: the attribute is an int written into `device`; a pointer the driver
                // does not know is an error code, not undefined behaviour.
                let found = unsafe {
                    sys::cuPointerGetAttribute(
                        (&mut device as *mut i32).cast(),
                        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                        ptr,
                    )
                }
                .result();
                if found.is_err() || device != ordinal as i32 {
                    return Err(Error::InvalidArgument(format!(
                        "the {what} pointer {ptr:#x} is not memory of CUDA device {ordinal}"
                    )));
                }
            }
        }
        let event = dres::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| cuda_err("creating an event", e))?;
        // SAFETY: `event` was just created; the caller vouches for `stream`.
        let ordered = unsafe {
            dres::event::record(event, stream).and_then(|()| {
                dres::stream::wait_event(
                    gpu.stream.cu_stream(),
                    event,
                    sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                )
            })
        };
        // SAFETY: destroying an event with pending waits is allowed (the driver releases it
        // once they complete).
        let destroyed = unsafe { dres::event::destroy(event) };
        ordered.map_err(|e| cuda_err("ordering after the caller's stream", e))?;
        destroyed.map_err(|e| cuda_err("destroying an event", e))?;
        self.backend.engine.run(&job, input, output)?;
        self.count()
    }

    /// Waits for the labeler's queued work and returns the number of clusters of the last
    /// labeling.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the kernels or the copy failed.
    pub fn count(&mut self) -> Result<usize> {
        self.backend.engine.count()
    }

    /// Labels a host lattice on the GPU with canonical numbering (whatever
    /// [`CudaLabeler::numbering`] says: [`Labels`] are numbered `1..=count`).
    ///
    /// # Errors
    /// [`Error::OutOfDeviceMemory`] when the lattice and its labels do not fit on the device,
    /// and the errors of [`CudaLabeler::prepare`].
    pub fn label_host<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<Labels> {
        crate::lattice::check_size(lattice.nrows(), lattice.ncols())?;
        let mut array = Array2::zeros(lattice.dim());
        let count = self.backend.label_numbered(
            T::input(lattice),
            &self.spec,
            Numbering::Canonical,
            array.view_mut(),
        )?;
        Ok(Labels { array, count })
    }

    /// Labels a host lattice on the GPU into `out`, numbered as [`CudaLabeler::numbering`]
    /// says; returns the number of clusters.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` does not have the lattice's shape, and the errors of
    /// [`CudaLabeler::label_host`].
    pub fn label_host_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        crate::lattice::check_size(lattice.nrows(), lattice.ncols())?;
        self.backend
            .label_numbered(T::input(lattice), &self.spec, self.numbering, out)
    }
}
