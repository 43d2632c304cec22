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
//!   [`compile_stats`] says what compiling cost this process. For kernel development,
//!   `CLUSTERLAB_KERNEL_DIR=DIR` compiles the `kernels/` files found in `DIR` instead of the
//!   copies built into the crate, so that a kernel change needs no Rust rebuild.
//! - [`CudaLabeler`]: labels lattices that already live on the GPU ([`CudaLabeler::label_device`],
//!   no host synchronisation and no allocation per call) or host arrays
//!   ([`CudaLabeler::label_host`]); into `u64` labels for lattices of any size
//!   ([`CudaLabeler::label_device64`], [`CudaLabeler::label_host64_into`]; bit runs only).
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
mod labeler;
mod multi;
mod percolation_batch;
mod perimeters;
mod regions;
mod rows;
mod runtime;
mod sw_chain;
mod swendsen_wang;
mod tile_merge;

pub use crate::core::size_counts::{PercolatingCluster, SizeCounts};
pub use analyzer::CudaAnalyzer;
pub use cudarc;
pub use labeler::CudaLabeler;
pub use multi::{
    device_count, AnalysisTimings, MultiGpuAnalyzer, MultiGpuLabeler, StripInfo, StripTimings,
};
pub(crate) use percolation_batch::PercolationBatch;
pub use regions::CudaRegionGrower;
pub use runtime::{
    compile_stats, host_call_timings, record_timings, CompileStats, HostCallTimings,
};
pub use sw_chain::CudaSwendsenWang;

use crate::core::backend::LabelBackend;
use crate::core::lattice::Input;
use crate::core::options::Spec;
use crate::lattice::{Boundary, Connectivity, SiteValue};
use crate::Algorithm;
use crate::{Error, Labels, Result};
use cudarc::driver::{result as dres, sys, CudaContext, CudaStream, DevicePtr, DevicePtrMut};
use engine::{family_of, family_of_wide, Engine, Job};
use family::{LabelWidth, SiteType};
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
    /// CPU's). Needs fewer than 2^31 sites with `u32` labels; any size with `u64` labels
    /// ([`CudaLabeler::label_device64`]).
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
    /// The GPU analyzer behind [`LabelBackend::size_counts`], made on first use.
    analyzer: Option<CudaAnalyzer>,
}

impl CudaBackend {
    /// Grows the device and pinned staging buffers to `in_bytes` / `out_bytes` and the job's
    /// scratch, after checking that the device has the memory (buffers that grow free their old
    /// memory first), so that a lattice too large is a typed error before any allocation.
    ///
    /// # Errors
    /// [`Error::OutOfDeviceMemory`], or the driver's allocation errors.
    pub(super) fn reserve(&mut self, job: &Job, in_bytes: usize, out_bytes: usize) -> Result<()> {
        let st = &mut self.staging;
        self.engine.reserve(
            [(&mut st.dev_in, in_bytes), (&mut st.dev_out, out_bytes)],
            job,
        )?;
        st.pin_in.ensure(in_bytes)?;
        st.pin_out.ensure(out_bytes)?;
        Ok(())
    }

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
            analyzer: None,
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
            labels: LabelWidth::U32,
            short_tiles: false,
            write_once: false,
        }
        .tiles_for(&self.engine.gpu);
        self.engine.check(&job)?;
        let n = h * w;
        if n == 0 {
            return Ok(0);
        }
        let (in_bytes, out_bytes) = (n * site.size(), n * 4);
        self.reserve(&job, in_bytes, out_bytes)?;
        let st = &mut self.staging;
        let timed = runtime::timings::enabled();
        let staging = std::time::Instant::now();
        match input {
            Input::U8(a) => fill_rows(a, st.pin_in.slice_mut(n)),
            Input::U16(a) => fill_rows(a, st.pin_in.slice_mut(n)),
            Input::U32(a) => fill_rows(a, st.pin_in.slice_mut(n)),
        }
        let mut staged = staging.elapsed();
        let gpu_stream = self.engine.gpu.stream.clone();
        let event = |on: bool| -> Result<Option<cudarc::driver::CudaEvent>> {
            on.then(|| {
                gpu_stream
                    .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| cuda_err("recording a timing event", e))
            })
            .transpose()
        };
        let stream = gpu_stream.cu_stream();
        let e0 = event(timed)?;
        // SAFETY: the pinned buffers hold in_bytes / out_bytes and stay alive and untouched until
        // the synchronisation in `count` below; the device buffers are at least as large.
        unsafe {
            dres::memcpy_htod_async(st.dev_in.ptr, st.pin_in.slice_mut::<u8>(in_bytes), stream)
                .map_err(|e| cuda_err("copying the lattice to the GPU", e))?;
        }
        let e1 = event(timed)?;
        self.engine.run(&job, st.dev_in.ptr, st.dev_out.ptr)?;
        let e2 = event(timed)?;
        // SAFETY: as above.
        unsafe {
            dres::memcpy_dtoh_async(st.pin_out.slice_mut::<u32>(n), st.dev_out.ptr, stream)
                .map_err(|e| cuda_err("copying the labels from the GPU", e))?;
        }
        let e3 = event(timed)?;
        let count = self.engine.count()?;
        let staging = std::time::Instant::now();
        copy_rows(st.pin_out.slice_mut::<u32>(n), &mut out);
        staged += staging.elapsed();
        if let (Some(e0), Some(e1), Some(e2), Some(e3)) = (e0, e1, e2, e3) {
            let ms = |a: &cudarc::driver::CudaEvent, b| {
                a.elapsed_ms(b)
                    .map_err(|e| cuda_err("reading a timing event", e))
            };
            runtime::timings::add(staged, ms(&e0, &e1)?, ms(&e1, &e2)?, ms(&e2, &e3)?);
        }
        Ok(count)
    }
}

/// Bytes of labels staged through pinned host memory at a time by the 64-bit host path: the
/// lattice and its labels go up and down in bands of whole rows, so a lattice of billions of
/// sites needs no pinned copy of itself (4.9·10^9 sites: 39 GB of labels).
const WIDE_STAGE_BYTES: usize = 64 << 20;

impl CudaBackend {
    /// Labels a host lattice into 64-bit labels `out` with the given numbering (bit runs' 64-bit
    /// build), staging it through pinned bands of at most [`WIDE_STAGE_BYTES`]; returns the
    /// cluster count. The device holds the lattice, the labels (8 bytes a site) and bit runs'
    /// scratch (2 bytes and 1 bit a site raw, 2 bits canonical, plus small counts), checked
    /// before allocating.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`], [`Error::InvalidArgument`] for an algorithm other than
    /// `BitRuns`/`Auto` or a lattice beyond the kernels' indices, [`Error::OutOfDeviceMemory`]
    /// with the bytes needed and free, [`Error::Cuda`].
    pub(crate) fn label_wide(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        numbering: Numbering,
        mut out: ArrayViewMut2<'_, u64>,
    ) -> Result<usize> {
        let dim = input.dim();
        let (h, w) = dim;
        if out.dim() != dim {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [out.nrows(), out.ncols()],
            });
        }
        let site = match input {
            Input::U8(_) => SiteType::U8,
            Input::U16(_) => SiteType::U16,
            Input::U32(_) => SiteType::U32,
        };
        let job = Job {
            site,
            height: h,
            width: w,
            connectivity: spec.connectivity,
            boundary: spec.boundary,
            segments: spec.segments,
            family: family_of_wide(spec.algorithm, &self.engine.gpu, spec.segments)?,
            numbering,
            labels: LabelWidth::U64,
            short_tiles: false,
            write_once: false,
        };
        self.engine.check(&job)?;
        let n = job.sites();
        if n == 0 {
            return Ok(0);
        }
        // (check_wide bounds the sites far below an overflow of either product.)
        let (in_bytes, out_bytes) = (n * site.size(), n * 8);
        let st = &mut self.staging;
        self.engine.reserve(
            [(&mut st.dev_in, in_bytes), (&mut st.dev_out, out_bytes)],
            &job,
        )?;
        let band = (WIDE_STAGE_BYTES / (w * 8)).clamp(1, h);
        st.pin_in.ensure(band * w * site.size())?;
        st.pin_out.ensure(band * w * 8)?;
        let stream = self.engine.gpu.stream.cu_stream();
        for y0 in (0..h).step_by(band) {
            let rows = band.min(h - y0);
            let (m, at) = (rows * w, (y0 * w * site.size()) as u64);
            let rows_of = ndarray::s![y0..y0 + rows, ..];
            match input {
                Input::U8(a) => fill_rows(a.slice(rows_of), st.pin_in.slice_mut(m)),
                Input::U16(a) => fill_rows(a.slice(rows_of), st.pin_in.slice_mut(m)),
                Input::U32(a) => fill_rows(a.slice(rows_of), st.pin_in.slice_mut(m)),
            }
            let src = st.pin_in.slice_mut::<u8>(m * site.size());
            // SAFETY: the pinned band holds the bytes copied and is not touched again before the
            // sync below; the device buffer holds the whole lattice (reserved above).
            unsafe { dres::memcpy_htod_async(st.dev_in.ptr + at, src, stream) }
                .map_err(|e| cuda_err("copying the lattice to the GPU", e))?;
            // (The band is refilled next: its copy must be done.)
            self.engine.gpu.sync()?;
        }
        self.engine.run(&job, st.dev_in.ptr, st.dev_out.ptr)?;
        let count = self.engine.count()?;
        for y0 in (0..h).step_by(band) {
            let rows = band.min(h - y0);
            let (m, at) = (rows * w, (y0 * w * 8) as u64);
            let dst = st.pin_out.slice_mut::<u64>(m);
            // SAFETY: as above, for the labels' band.
            unsafe { dres::memcpy_dtoh_async(dst, st.dev_out.ptr + at, stream) }
                .map_err(|e| cuda_err("copying the labels from the GPU", e))?;
            self.engine.gpu.sync()?;
            let mut rows_out = out.slice_mut(ndarray::s![y0..y0 + rows, ..]);
            copy_rows(st.pin_out.slice_mut::<u64>(m), &mut rows_out);
        }
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

    fn label64(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u64>,
    ) -> Result<usize> {
        self.label_wide(input, spec, Numbering::Canonical, out)
    }

    fn size_counts(&mut self, input: Input<'_>, spec: &Spec, out: &mut SizeCounts) -> Result<()> {
        analyzer::size_counts_into(&mut self.analyzer, self.ordinal, input, spec, out)
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
