//! Seeded regions on the GPU, label-based: per distinct reference, a predicate kernel, the
//! crate's labeler with root-index labels (no numbering passes), a kernel that marks the roots
//! of the seeds in the predicate mask, and a mask kernel; absorption labels the complement with
//! the dual connectivity and absorbs the components whose roots no open edge marks.
//!
//! Bytes moved per reference on an `n`-site field of `b`-byte values with `c` channels: the
//! predicate reads `n·c·b` and writes `n`; the labeling reads the mask and writes `4n` labels
//! (plus its forest); the mask kernel reads `4n` labels and writes `n` (and reads the roots'
//! mask bytes, cached). Absorption adds `2n` (complement), a labeling, and `5n` more.

use super::family::{Family, LabelWidth, ModuleKey, SiteType};
use super::runtime::{cuda_err, kernel_args, DevBuf, PinnedBuf};
use super::{CudaLabeler, Numbering};
use crate::core::region::{check, group, Criterion, Plan, Sample};
use crate::{Error, Result};
use cudarc::driver::{result as dres, sys, CudaStream, DevicePtr, DevicePtrMut};
use std::sync::Arc;

/// The family's kernel file.
pub(crate) const FILE: &str = "regions.cu";
/// The kernels of `regions.cu`.
pub(crate) const KERNELS: &[&str] = &[
    "rg_pred_u8",
    "rg_pred_f32",
    "rg_mark",
    "rg_mask",
    "rg_complement",
    "rg_edges",
    "rg_absorb",
    "rg_gather_u8",
    "rg_gather_f32",
];

const KEY: ModuleKey = ModuleKey {
    family: Family::Regions,
    site: SiteType::U8,
    conn8: false,
    segments: false,
    labels: LabelWidth::U32,
    short_tiles: false,
};

const THREADS: u32 = 256;

/// Seeded regions on one GPU (see [`crate::regions`] for the definitions): host fields through
/// [`crate::regions::RegionGrower`] with [`crate::Backend::Cuda`], device fields through
/// [`CudaRegionGrower::grow_device`]. Owns two raw-numbering [`CudaLabeler`]s on one stream (the
/// region's connectivity and, for absorption, the dual one) and device buffers that only grow:
/// a mask byte and a `u32` label per site, besides the labelers' scratch.
pub struct CudaRegionGrower {
    criterion: Criterion,
    labeler: CudaLabeler,
    dual: CudaLabeler,
    ordinal: usize,
    field: DevBuf,
    pred: DevBuf,
    labels: DevBuf,
    out: DevBuf,
    params: DevBuf,
    values: PinnedBuf,
}

impl CudaRegionGrower {
    /// A grower on device `device` with a stream of its own.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when the driver, NVRTC or the device is missing,
    /// [`Error::Cuda`] when the driver fails.
    pub fn new(device: usize, criterion: Criterion) -> Result<Self> {
        let labeler = CudaLabeler::new(
            device,
            criterion.neighbourhood(),
            criterion.lattice_boundary(),
        )?;
        Self::from_labeler(labeler, device, criterion)
    }

    /// A grower on a device the front end resolved.
    pub(crate) fn on(device: &super::CudaDevice, criterion: Criterion) -> Result<Self> {
        Self::new(device.ordinal(), criterion)
    }

    /// A grower that queues its work on `stream`.
    ///
    /// # Errors
    /// As [`CudaLabeler::with_stream`].
    pub fn with_stream(stream: Arc<CudaStream>, criterion: Criterion) -> Result<Self> {
        let ordinal = stream.context().ordinal();
        let labeler = CudaLabeler::with_stream(
            stream,
            criterion.neighbourhood(),
            criterion.lattice_boundary(),
        )?;
        Self::from_labeler(labeler, ordinal, criterion)
    }

    fn from_labeler(labeler: CudaLabeler, ordinal: usize, criterion: Criterion) -> Result<Self> {
        let labeler = labeler.numbering(Numbering::Raw);
        let dual = CudaLabeler::with_stream(
            labeler.stream().clone(),
            criterion.dual(),
            criterion.lattice_boundary(),
        )?
        .numbering(Numbering::Raw);
        let gpu = &labeler.backend.engine.gpu;
        Ok(CudaRegionGrower {
            field: DevBuf::new(gpu),
            pred: DevBuf::new(gpu),
            labels: DevBuf::new(gpu),
            out: DevBuf::new(gpu),
            params: DevBuf::new(gpu),
            values: PinnedBuf::new(&gpu.ctx),
            criterion,
            labeler,
            dual,
            ordinal,
        })
    }

    /// The stream the grower queues its work on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.labeler.stream()
    }

    pub(crate) fn name(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    /// Grows the region of `seeds` (`(y, x)` each) in the `height × width × channels` field
    /// `field` (row-major, channels innermost, on this grower's device) into `out`
    /// (`height * width` bytes, 1 in the region), queued on the grower's stream. The seeds'
    /// values are read back first (one small copy and a wait on the stream), since the seeds
    /// are checked and grouped by value on the host.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a buffer's length does not fit the geometry, and the
    /// errors of [`crate::regions::region_from_seeds`]; [`Error::OutOfDeviceMemory`],
    /// [`Error::KernelCompile`], [`Error::Cuda`].
    #[allow(clippy::too_many_arguments)]
    pub fn grow_device<T, I, O>(
        &mut self,
        field: &I,
        height: usize,
        width: usize,
        channels: usize,
        seeds: &[(usize, usize)],
        out: &mut O,
    ) -> Result<()>
    where
        T: Sample,
        I: DevicePtr<T>,
        O: DevicePtrMut<u8>,
    {
        let (tolerance, reference) = check(&self.criterion, (height, width, channels), seeds)?;
        let n = height * width;
        if field.len() != n * channels || out.len() != n {
            return Err(Error::InvalidArgument(format!(
                "a {height}×{width}×{channels} field needs {} values and {n} mask bytes, got \
                 buffers of {} and {}",
                n * channels,
                field.len(),
                out.len()
            )));
        }
        let stream = self.labeler.stream().clone();
        let (field_ptr, _read) = field.device_ptr(&stream);
        let (out_ptr, _write) = out.device_ptr_mut(&stream);
        // Seeds that do not meet the criterion are dropped, so their values are needed for
        // either reference.
        let values = self.gather::<T>(field_ptr, width, channels, seeds)?;
        let groups = group(width, seeds, &tolerance, reference.as_deref(), |i| {
            values[i * channels..(i + 1) * channels].to_vec()
        });
        let plan = Plan {
            h: height,
            w: width,
            c: channels,
            tolerance,
            groups,
        };
        self.run(field_ptr, T::IS_F32, &plan, out_ptr)
    }

    /// The seeds' channel values, read from the device field.
    fn gather<T: Sample>(
        &mut self,
        field: sys::CUdeviceptr,
        w: usize,
        c: usize,
        seeds: &[(usize, usize)],
    ) -> Result<Vec<f32>> {
        let k = seeds.len();
        let idx: Vec<u32> = seeds.iter().map(|&(y, x)| (y * w + x) as u32).collect();
        let gpu = &mut self.labeler.backend.engine.gpu;
        gpu.bind()?;
        gpu.module(&KEY)?;
        self.params.ensure(k * 4 + k * c * 4)?;
        self.values.ensure(k * c * 4)?;
        let stream = gpu.stream.cu_stream();
        let (seeds_ptr, vals_ptr) = (self.params.ptr, self.params.ptr + (k * 4) as u64);
        let (k32, c32) = (k as u32, c as u32);
        let module = gpu.get_module(&KEY).ok_or_else(missing)?;
        let name = if T::IS_F32 {
            "rg_gather_f32"
        } else {
            "rg_gather_u8"
        };
        // SAFETY: `idx` is pageable host memory, staged before the call returns; the kernel's
        // arguments match its parameters and the buffers hold k seeds and k * c values; the
        // pinned buffer outlives the copy, which the sync completes.
        unsafe {
            dres::memcpy_htod_async(seeds_ptr, &idx, stream)
                .map_err(|e| cuda_err("copying the seeds to the GPU", e))?;
            gpu.launch(
                module.func(name),
                (((k * c) as u32).div_ceil(THREADS), 1, 1),
                (THREADS, 1, 1),
                &mut kernel_args![field, seeds_ptr, k32, c32, vals_ptr],
            )?;
            dres::memcpy_dtoh_async(self.values.slice_mut::<f32>(k * c), vals_ptr, stream)
                .map_err(|e| cuda_err("reading the seeds' values", e))?;
        }
        gpu.sync()?;
        Ok(self.values.slice_mut::<f32>(k * c).to_vec())
    }

    /// Grows `plan` in the host field `values` (row-major, channels innermost) into `out`.
    pub(crate) fn grow_host<T: Sample>(
        &mut self,
        values: &[T],
        plan: &Plan,
        out: &mut [u8],
    ) -> Result<()> {
        let n = plan.h * plan.w;
        if n == 0 {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(values);
        self.field.ensure(bytes)?;
        self.out.ensure(n)?;
        self.labeler.backend.engine.gpu.bind()?;
        let stream = self.labeler.stream().cu_stream();
        // SAFETY: pageable memory is staged before the call returns; the buffer holds `bytes`.
        unsafe { dres::memcpy_htod_async(self.field.ptr, values, stream) }
            .map_err(|e| cuda_err("copying the field to the GPU", e))?;
        self.run(self.field.ptr, T::IS_F32, plan, self.out.ptr)?;
        // SAFETY: a copy to pageable memory returns when complete; `out` holds n bytes.
        unsafe { dres::memcpy_dtoh_async(out, self.out.ptr, stream) }
            .map_err(|e| cuda_err("copying the mask from the GPU", e))?;
        self.labeler.backend.engine.gpu.sync()
    }

    /// Queues the groups of `plan` on the field at `field` into the mask at `out`.
    fn run(
        &mut self,
        field: sys::CUdeviceptr,
        f32_field: bool,
        plan: &Plan,
        out: sys::CUdeviceptr,
    ) -> Result<()> {
        let (h, w, c) = (plan.h, plan.w, plan.c);
        let n = h * w;
        if n == 0 {
            return Ok(());
        }
        // Parameters: the tolerance, each group's reference, then every group's seeds.
        let mut params: Vec<u32> = plan.tolerance.iter().map(|t| t.to_bits()).collect();
        for g in &plan.groups {
            params.extend(g.reference.iter().map(|r| r.to_bits()));
        }
        let seeds_word = params.len();
        for g in &plan.groups {
            params.extend_from_slice(&g.seeds);
        }
        self.pred.ensure(n)?;
        self.labels.ensure(n * 4)?;
        self.params.ensure(params.len() * 4)?;
        let job = self.labeler.job::<u8>(h, w)?;
        let engine = &mut self.labeler.backend.engine;
        engine.gpu.bind()?;
        engine.gpu.module(&KEY)?;
        let (pred, labels, base) = (self.pred.ptr, self.labels.ptr, self.params.ptr);
        let (n32, c32) = (n as u32, c as u32);
        let grid = (
            n.div_ceil(THREADS as usize)
                .min(engine.gpu.sms as usize * 16) as u32,
            1,
            1,
        );
        let block = (THREADS, 1, 1);
        // SAFETY (every launch below): the arguments match the kernels' parameters; `field`
        // holds n * c values, `pred` and `out` n bytes, `labels` n labels, `params` the words
        // written here (pageable, staged before the copy call returns).
        unsafe {
            dres::memcpy_htod_async(base, &params, engine.gpu.stream.cu_stream())
                .map_err(|e| cuda_err("copying the seeds to the GPU", e))?;
        }
        if plan.groups.is_empty() {
            return engine.gpu.memset_zero(out, n);
        }
        let tol = base;
        let mut seed_word = seeds_word;
        for (g, grp) in plan.groups.iter().enumerate() {
            let reference = base + ((c + g * c) * 4) as u64;
            let module = engine.gpu.get_module(&KEY).ok_or_else(missing)?;
            let pred_kernel = module.func(if f32_field {
                "rg_pred_f32"
            } else {
                "rg_pred_u8"
            });
            unsafe {
                engine.gpu.launch(
                    pred_kernel,
                    grid,
                    block,
                    &mut kernel_args![field, n32, c32, reference, tol, pred],
                )?;
            }
            engine.run(&job, pred, labels)?;
            let module = engine.gpu.get_module(&KEY).ok_or_else(missing)?;
            let (seeds, k) = (base + (seed_word * 4) as u64, grp.seeds.len() as u32);
            seed_word += grp.seeds.len();
            let first = (g == 0) as u32;
            unsafe {
                engine.gpu.launch(
                    module.func("rg_mark"),
                    (k.div_ceil(THREADS), 1, 1),
                    block,
                    &mut kernel_args![labels, seeds, k, pred],
                )?;
                engine.gpu.launch(
                    module.func("rg_mask"),
                    grid,
                    block,
                    &mut kernel_args![labels, pred, out, n32, first],
                )?;
            }
        }
        if !self.criterion.absorbs() {
            return Ok(());
        }
        let boundary = self.criterion.lattice_boundary();
        let (h32, w32) = (h as u32, w as u32);
        let (wrap_x, wrap_y) = (boundary.wraps_x() as u32, boundary.wraps_y() as u32);
        let dual_job = self.dual.job::<u8>(h, w)?;
        {
            let module = engine.gpu.get_module(&KEY).ok_or_else(missing)?;
            unsafe {
                engine.gpu.launch(
                    module.func("rg_complement"),
                    grid,
                    block,
                    &mut kernel_args![out, pred, n32],
                )?;
            }
        }
        self.dual.backend.engine.run(&dual_job, pred, labels)?;
        let gpu = &self.labeler.backend.engine.gpu;
        let module = gpu.get_module(&KEY).ok_or_else(missing)?;
        unsafe {
            gpu.launch(
                module.func("rg_edges"),
                ((h32 + w32).div_ceil(THREADS), 1, 1),
                block,
                &mut kernel_args![labels, pred, h32, w32, wrap_x, wrap_y],
            )?;
            gpu.launch(
                module.func("rg_absorb"),
                grid,
                block,
                &mut kernel_args![labels, pred, out, n32],
            )?;
        }
        Ok(())
    }
}

fn missing() -> Error {
    Error::Cuda("the regions kernels are missing after compilation".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regions kernels compile with NVRTC (no GPU needed). Skipped without NVRTC.
    #[test]
    fn regions_kernels_compile() {
        // SAFETY: only tries to dlopen libnvrtc.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return;
        }
        use crate::cuda::runtime::ModuleSpec;
        let src = KEY.source();
        for arch in ["--gpu-architecture=sm_75", "--gpu-architecture=sm_90"] {
            let cubin =
                super::super::runtime::nvrtc::compile_cubin(&KEY.name(), &src, KEY.headers(), arch)
                    .unwrap_or_else(|e| panic!("{e}"));
            assert!(!cubin.is_empty());
        }
    }
}
