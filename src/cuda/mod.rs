//! The NVIDIA GPU backend (feature `cuda`): cluster labeling with CUDA kernels compiled at run
//! time by NVRTC for the device's own architecture.
//!
//! The crate builds without a CUDA toolkit: the driver (`libcuda`) and NVRTC (`libnvrtc`) are
//! loaded when first needed, and their absence is an [`Error::CudaUnavailable`], never a panic.
//!
//! - [`cuda_available`] / [`device_info`]: is there a usable GPU, and which.
//! - Kernels are compiled once per machine: NVRTC's binaries are kept in an on-disk cache
//!   (`$XDG_CACHE_HOME/clusterlab/kernels` or `~/.cache/clusterlab/kernels`; another folder with
//!   `CLUSTERLAB_KERNEL_CACHE=DIR`, none with `CLUSTERLAB_KERNEL_CACHE=off`), keyed by the
//!   sources, the device architecture and the NVRTC version, safe under concurrent processes;
//!   [`compile_stats`] says what compiling cost this process.
//! - [`CudaLabeler`]: labels lattices that already live on the GPU ([`CudaLabeler::label_device`],
//!   no host synchronisation and no allocation per call) or host arrays
//!   ([`CudaLabeler::label_host`]).
//! - Bond-masked labeling ([`crate::Labeler::label_packed_bonds_into`] and
//!   [`crate::Labeler::bond_roots_into`] with [`crate::Backend::Cuda`]) and
//!   [`CudaSwendsenWang`], the device-resident Swendsen–Wang sweep that
//!   [`crate::mc::Chain`] runs on a GPU.
//!
//! Algorithms: [`Algorithm::BitRuns`] (run-based union-find on bit-packed rows in shared-memory
//! tiles of 32 × 1024 sites, each tile labeled once and written whole, then elementwise passes
//! for the clusters that cross tile seams; what [`Algorithm::Auto`] picks),
//! [`Algorithm::BlockUnionFind`] (union-find on 2×2 blocks for 8-connectivity, 2×1 blocks for
//! 4-connectivity, per-site union-find for segments; `Auto` on devices of compute capability
//! 7.5, whose blocks get too little shared memory for bit runs),
//! [`Algorithm::Ha4`] (Hennequin et al.'s run-based labeling with warp intrinsics,
//! two sites per thread, and its 8-connected variant), [`Algorithm::TileMerge`] (Šťava & Beneš's
//! shared-memory tiles merged hierarchically) and [`Algorithm::LabelEquivalence`] (Kalentev et
//! al.'s iterative scanning and analysis). All support both connectivities, segments of
//! `u8`/`u16`/`u32` sites and all four boundaries, and give labels bit-identical to the CPU's.
//!
//! ```no_run
//! use clusterlab::cuda::{CudaLabeler, Numbering};
//! use clusterlab::{Boundary, Connectivity};
//! use ndarray::Array2;
//!
//! let mut gpu = CudaLabeler::new(0, Connectivity::Four, Boundary::Periodic)?;
//! let lattice = Array2::<u8>::ones((512, 512));
//! let labels = gpu.label_host(lattice.view())?;
//! assert_eq!(labels.count(), 1);
//!
//! // Device-resident: the lattice and the labels stay on the GPU.
//! let stream = gpu.stream().clone();
//! let input = stream.clone_htod(lattice.as_slice().unwrap()).unwrap();
//! let mut output = stream.alloc_zeros::<u32>(512 * 512).unwrap();
//! let mut gpu = gpu.numbering(Numbering::Raw);
//! gpu.label_device(&input, 512, 512, &mut output)?;
//! assert_eq!(gpu.count()?, 1);
//! # Ok::<(), clusterlab::Error>(())
//! ```

pub(crate) mod analysis;
mod analyzer;
mod bit_runs;
mod block_union_find;
mod canonical;
mod engine;
mod family;
mod ha4;
mod label_equivalence;
mod percolation_batch;
mod regions;
mod rows;
mod runtime;
mod size_counts;
mod sw_chain;
mod swendsen_wang;
mod tile_merge;

pub use analyzer::CudaAnalyzer;
pub use cudarc;
pub(crate) use percolation_batch::PercolationBatch;
pub use regions::CudaRegionGrower;
pub use runtime::{compile_stats, CompileStats};
pub use size_counts::{PercolatingCluster, SizeCounts};
pub use sw_chain::CudaSwendsenWang;

use crate::core::backend::LabelBackend;
use crate::core::lattice::Input;
use crate::core::options::Spec;
use crate::lattice::{Boundary, Connectivity, SiteValue};
use crate::Algorithm;
use crate::{Error, Labels, Result};
use cudarc::driver::{result as dres, CudaContext, CudaStream, DevicePtr, DevicePtrMut};
use engine::{family_of, Engine, Job};
use family::SiteType;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use rows::{copy_rows, fill_rows};
use runtime::{cuda_err, DevBuf, Gpu, PinnedBuf};
use std::sync::Arc;

/// What [`cuda_available`] and [`device_info`] report about a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device ordinal.
    pub ordinal: usize,
    /// The device's name, e.g. `"NVIDIA H200"`.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// Multiprocessors.
    pub multiprocessors: u32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Free device memory in bytes, when asked.
    pub free_memory: usize,
}

/// Whether the CUDA backend can run here: the driver and NVRTC load and device 0 opens.
///
/// # Errors
/// [`Error::CudaUnavailable`] with the reason (no driver library, no NVRTC, no device, a device
/// older than compute capability 7.0); never panics.
pub fn cuda_available() -> Result<DeviceInfo> {
    device_info(0)
}

/// Describes GPU `ordinal`.
///
/// # Errors
/// As [`cuda_available`], also when `ordinal` is not a device.
pub fn device_info(ordinal: usize) -> Result<DeviceInfo> {
    let gpu = Gpu::with_stream(runtime::open_context(ordinal)?.default_stream())?;
    let ctx = &gpu.ctx;
    let name = ctx
        .name()
        .map_err(|e| cuda_err("reading the device name", e))?;
    let total_memory = ctx
        .total_mem()
        .map_err(|e| cuda_err("reading the device memory", e))?;
    let (free_memory, _) = gpu.mem_info()?;
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: (gpu.cc.0 as u32, gpu.cc.1 as u32),
        multiprocessors: gpu.sms,
        total_memory,
        free_memory,
    })
}

/// A GPU that opened, as [`Device`](crate::device::Device) resolves it once for the front ends,
/// which build their CUDA backends on it.
#[derive(Clone)]
pub(crate) struct CudaDevice {
    ordinal: usize,
}

impl CudaDevice {
    /// Opens GPU `ordinal`: the driver and NVRTC load and the device opens.
    ///
    /// # Errors
    /// As [`device_info`].
    pub(crate) fn open(ordinal: usize) -> Result<CudaDevice> {
        Gpu::new(ordinal)?;
        Ok(CudaDevice { ordinal })
    }

    /// `"cuda:N"`.
    pub(crate) fn name(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    /// The device ordinal.
    pub(crate) fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// A labeling backend with a stream of its own on this GPU.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the stream cannot be made.
    pub(crate) fn label_backend(&self) -> Result<Box<dyn LabelBackend + Send>> {
        Ok(Box::new(CudaBackend::new(self.ordinal)?))
    }
}

/// How clusters are numbered on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Numbering {
    /// 1..=n in raster order of each cluster's first site (scipy's numbering, identical to the
    /// CPU's). Needs fewer than 2^31 sites.
    #[default]
    Canonical,
    /// Root-index labels: each cluster is labeled with the site index + 1 of its smallest site
    /// (`y * width + x + 1`), 0 = empty. Cheaper: no numbering passes.
    Raw,
}

/// Device and pinned host buffers for labeling host arrays, reused and grown only.
struct HostStaging {
    dev_in: DevBuf,
    dev_out: DevBuf,
    pin_in: PinnedBuf,
    pin_out: PinnedBuf,
}

/// The CUDA backend behind [`crate::Labeler`]: host arrays in and out through pinned staging
/// buffers, device buffers reused across calls and grown only when a bigger lattice comes.
pub(crate) struct CudaBackend {
    engine: Engine,
    staging: HostStaging,
    ordinal: usize,
}

impl CudaBackend {
    /// A backend on device `device`, with a stream of its own. Never panics without a GPU.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when the driver, NVRTC or the device is missing.
    pub(crate) fn new(device: usize) -> Result<CudaBackend> {
        Ok(CudaBackend::from_gpu(Gpu::new(device)?, device))
    }

    fn from_gpu(gpu: Gpu, ordinal: usize) -> CudaBackend {
        let staging = HostStaging {
            dev_in: DevBuf::new(&gpu),
            dev_out: DevBuf::new(&gpu),
            pin_in: PinnedBuf::new(&gpu.ctx),
            pin_out: PinnedBuf::new(&gpu.ctx),
        };
        CudaBackend {
            engine: Engine::new(gpu),
            staging,
            ordinal,
        }
    }

    /// Labels a host lattice into `out` with the given numbering; returns the cluster count.
    fn label_numbered(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        numbering: Numbering,
        mut out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let dim = input.dim();
        let site = match input {
            Input::U8(_) => SiteType::U8,
            Input::U16(_) => SiteType::U16,
            Input::U32(_) => SiteType::U32,
        };
        let (h, w) = dim;
        if out.dim() != dim {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [out.nrows(), out.ncols()],
            });
        }
        let job = Job {
            site,
            height: h,
            width: w,
            connectivity: spec.connectivity,
            boundary: spec.boundary,
            segments: spec.segments,
            family: family_of(spec.algorithm, &self.engine.gpu, spec.segments)?,
            numbering,
        };
        self.engine.check(&job)?;
        let n = h * w;
        if n == 0 {
            return Ok(0);
        }
        let (in_bytes, out_bytes) = (n * site.size(), n * 4);
        let st = &mut self.staging;
        let need = st.dev_in.shortfall(in_bytes)
            + st.dev_out.shortfall(out_bytes)
            + self.engine.scratch_shortfall(&job);
        if need > 0 {
            // Buffers that grow free their old memory first.
            let reclaim = [(&st.dev_in, in_bytes), (&st.dev_out, out_bytes)]
                .iter()
                .filter(|(b, want)| b.shortfall(*want) > 0)
                .map(|(b, _)| b.bytes)
                .sum::<usize>();
            let (free, _) = self.engine.gpu.mem_info()?;
            if need > free + reclaim {
                return Err(Error::OutOfDeviceMemory {
                    needed: need,
                    free: free + reclaim,
                });
            }
        }
        st.dev_in.ensure(in_bytes)?;
        st.dev_out.ensure(out_bytes)?;
        self.engine.prepare(&job)?;
        st.pin_in.ensure(in_bytes)?;
        st.pin_out.ensure(out_bytes)?;
        match input {
            Input::U8(a) => fill_rows(a, st.pin_in.slice_mut(n)),
            Input::U16(a) => fill_rows(a, st.pin_in.slice_mut(n)),
            Input::U32(a) => fill_rows(a, st.pin_in.slice_mut(n)),
        }
        let stream = self.engine.gpu.stream.cu_stream();
        // SAFETY: the pinned buffers hold in_bytes / out_bytes and stay alive and untouched until
        // the synchronisation in `count` below; the device buffers are at least as large.
        unsafe {
            dres::memcpy_htod_async(st.dev_in.ptr, st.pin_in.slice_mut::<u8>(in_bytes), stream)
                .map_err(|e| cuda_err("copying the lattice to the GPU", e))?;
        }
        self.engine.run(&job, st.dev_in.ptr, st.dev_out.ptr)?;
        // SAFETY: as above.
        unsafe {
            dres::memcpy_dtoh_async(st.pin_out.slice_mut::<u32>(n), st.dev_out.ptr, stream)
                .map_err(|e| cuda_err("copying the labels from the GPU", e))?;
        }
        let count = self.engine.count()?;
        copy_rows(st.pin_out.slice_mut::<u32>(n), &mut out);
        Ok(count)
    }
}

impl LabelBackend for CudaBackend {
    fn name(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    fn label(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        self.label_numbered(input, spec, Numbering::Canonical, out)
    }

    fn label_bonds(
        &mut self,
        bonds: &crate::PackedBonds,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        self.label_host_bonds(bonds, spec, Numbering::Canonical, out)
    }

    fn bond_roots(
        &mut self,
        bonds: &crate::PackedBonds,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<Option<usize>> {
        self.label_host_bonds(bonds, spec, Numbering::Raw, out)
            .map(Some)
    }
}

/// A GPU labeling plan: connectivity, boundary, site rule, algorithm and numbering, with its own
/// stream, compiled kernels and device buffers.
///
/// [`CudaLabeler::label_device`] labels a lattice that is already on the GPU into a label array
/// on the GPU: it only queues kernels on the labeler's stream (no host synchronisation) and,
/// after the first call for a lattice of that size or larger (or [`CudaLabeler::prepare`]),
/// allocates nothing. The cluster count stays on the device until [`CudaLabeler::count`] asks
/// for it. Extra device memory besides the input and the labels: 64 bytes, 1 byte per 1024 sites
/// for canonical numbering and, for block union-find, its forest (a `u32` per block: per 2×2
/// block with 8-connectivity, 1 byte per site; per 2×1 block with 4-connectivity, 2 bytes per
/// site; none for segments, whose forest is the label array) and the cells of the 32×32-block
/// tiles' edges (a `u32` per 8 blocks). Label equivalence and tile merge use the label array as
/// their forest.
pub struct CudaLabeler {
    backend: CudaBackend,
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

    fn job<T: SiteValue>(&self, height: usize, width: usize) -> Result<Job> {
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
        self.backend.engine.check(&job)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a driver (as on CI), construction reports an error instead of panicking; with
    /// one, it succeeds or reports why not.
    #[test]
    fn construction_never_panics() {
        match CudaBackend::new(0) {
            Ok(b) => assert_eq!(b.name(), "cuda:0"),
            Err(e) => assert!(matches!(e, Error::CudaUnavailable(_)), "{e}"),
        }
        let _ = cuda_available();
    }
}
