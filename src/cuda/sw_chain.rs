//! [`CudaSwendsenWang`]: a Swendsen–Wang chain whose spins live on the GPU, driving the
//! `sw_*` kernels of [`super::swendsen_wang`] (where the bytes each sweep moves are counted).

use super::runtime::{cuda_err, kernel_args, DevBuf, Gpu, PinnedBuf};
use super::swendsen_wang::{
    border_bytes, geo, measure_grid, stride_grid, tile_grid, KEY, THREADS, TW,
};
use super::CudaDevice;
use crate::core::sweep::{threshold, SwParams, SwTally};
use crate::{Boundary, Error, Result};
use cudarc::driver::{result as dres, sys, CudaStream};
use std::sync::Arc;

/// Measured sweeps whose tallies the device holds before the host reads them.
pub(crate) const TALLY_SLOTS: usize = 256;

/// The Philox key and fixed counter words of one sweep, the threshold and q (`struct SwKey` in
/// the kernel file).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct SwKey {
    k0: u32,
    k1: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    q: u32,
    thr: u64,
}

/// Update tag of Swendsen–Wang in the counter's top word (`crate::mc`'s layout).
const TAG_SW: u32 = 1;

/// A Swendsen–Wang chain whose spins live on the GPU: each sweep is four kernels queued on the
/// chain's stream (bond activation fused into the tile labeling, the tiles' borders, the new
/// spins, and for measured sweeps the observables' tallies), with no host synchronisation; the
/// random numbers follow [`crate::mc`]'s layout exactly, so its spins equal the CPU's
/// Swendsen–Wang's for the same seed, stream and sweep. [`crate::mc::Chain`] runs it for
/// [`Backend::Cuda`](crate::Backend::Cuda); this type is for timing the device path alone.
///
/// Device memory per site: the spin (1 byte), the forest (4), the cluster-size slots and the
/// list of cross-tile roots (4 + 4) and a mark (1), about 14 bytes.
pub struct CudaSwendsenWang {
    gpu: Gpu,
    params: SwParams,
    spins: DevBuf,
    forest: DevBuf,
    border: DevBuf,
    root_mask: DevBuf,
    marks: DevBuf,
    sizes: DevBuf,
    list: DevBuf,
    /// [`TALLY_SLOTS`] slots of `q + 2` u64 (satisfied, Σ|c|², counts), then the list length.
    tallies: DevBuf,
    host: PinnedBuf,
    /// The sweep numbers of the measured sweeps whose tallies wait on the device.
    pending: Vec<u64>,
}

impl CudaSwendsenWang {
    /// A chain of `height × width` spins with `q` states on GPU `device`, bonds between equal
    /// neighbours active with probability `bond_probability`, keyed by `seed` and `stream` as in
    /// [`crate::mc`]; the spins start at 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for q below 2, a side below 1, more than
    /// [`MAX_SITES`](crate::MAX_SITES) sites or a stream of 2²⁸ or more;
    /// [`Error::CudaUnavailable`], [`Error::OutOfDeviceMemory`], [`Error::KernelCompile`],
    /// [`Error::Cuda`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: usize,
        height: usize,
        width: usize,
        q: u8,
        boundary: Boundary,
        bond_probability: f64,
        seed: u64,
        stream: u64,
    ) -> Result<Self> {
        let params = SwParams {
            height,
            width,
            q,
            boundary,
            threshold: threshold(bond_probability),
            seed,
            stream,
        };
        Self::with_gpu(Gpu::new(device)?, params)
    }

    /// A chain on a device the front end resolved.
    pub(crate) fn on(device: &CudaDevice, params: SwParams) -> Result<Self> {
        Self::with_gpu(Gpu::new(device.ordinal())?, params)
    }

    fn with_gpu(mut gpu: Gpu, params: SwParams) -> Result<Self> {
        let (h, w, q) = (params.height, params.width, params.q as usize);
        crate::core::lattice::check_size(h, w)?;
        if q < 2 || h == 0 || w == 0 || params.stream >= 1 << 28 {
            return Err(Error::InvalidArgument(format!(
                "a Swendsen–Wang chain needs q ≥ 2, a non-empty lattice and a stream below 2^28 \
                 (got q = {q}, {h}×{w}, stream {})",
                params.stream
            )));
        }
        let n = h * w;
        let sizes = [
            n,
            4 * n,
            border_bytes(h, w),
            4 * h * w.div_ceil(TW),
            n,
            4 * n,
            4 * n,
            8 * (TALLY_SLOTS * (q + 2) + 1),
        ];
        let (free, _) = gpu.mem_info()?;
        let needed: usize = sizes.iter().sum();
        if needed > free {
            return Err(Error::OutOfDeviceMemory { needed, free });
        }
        gpu.bind()?;
        gpu.module(&KEY)?;
        let mut bufs: Vec<DevBuf> = Vec::with_capacity(sizes.len());
        for bytes in sizes {
            let mut b = DevBuf::new(&gpu);
            b.ensure(bytes)?;
            gpu.memset_zero(b.ptr, bytes)?;
            bufs.push(b);
        }
        let mut host = PinnedBuf::new(&gpu.ctx);
        host.ensure(8 * TALLY_SLOTS * (q + 2))?;
        let mut it = bufs.into_iter();
        let mut next = || it.next().expect("eight buffers");
        Ok(CudaSwendsenWang {
            spins: next(),
            forest: next(),
            border: next(),
            root_mask: next(),
            marks: next(),
            sizes: next(),
            list: next(),
            tallies: next(),
            host,
            pending: Vec::new(),
            params,
            gpu,
        })
    }

    /// The stream the sweeps are queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.gpu.stream
    }

    /// Copies `spins` (row-major, values below q) to the device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a slice of the wrong length, [`Error::Cuda`].
    pub fn upload_spins(&mut self, spins: &[u8]) -> Result<()> {
        self.check_len(spins.len())?;
        self.gpu.bind()?;
        // SAFETY: pageable memory is staged before the call returns; the buffer holds n bytes.
        unsafe { dres::memcpy_htod_async(self.spins.ptr, spins, self.gpu.stream.cu_stream()) }
            .map_err(|e| cuda_err("copying the spins to the GPU", e))?;
        self.gpu.sync()
    }

    /// Waits for the queued sweeps and copies the spins into `spins`.
    ///
    /// # Errors
    /// As [`CudaSwendsenWang::upload_spins`].
    pub fn download_spins(&mut self, spins: &mut [u8]) -> Result<()> {
        self.check_len(spins.len())?;
        self.gpu.bind()?;
        // SAFETY: the copy completes before the synchronisation below returns.
        unsafe { dres::memcpy_dtoh_async(spins, self.spins.ptr, self.gpu.stream.cu_stream()) }
            .map_err(|e| cuda_err("copying the spins from the GPU", e))?;
        self.gpu.sync()
    }

    fn check_len(&self, len: usize) -> Result<()> {
        let n = self.params.height * self.params.width;
        if len != n {
            return Err(Error::InvalidArgument(format!(
                "{len} spins for a lattice of {n} sites"
            )));
        }
        Ok(())
    }

    /// Queues `count` unmeasured sweeps numbered `first, first + 1, …` and returns at once.
    ///
    /// # Errors
    /// [`Error::Cuda`] when a launch fails.
    pub fn queue_sweeps(&mut self, first: u64, count: u64) -> Result<()> {
        self.gpu.bind()?;
        for k in first..first + count {
            self.sweep_kernels(k, None, &mut |_| Ok(()))?;
        }
        Ok(())
    }

    /// Whether the tally slots are full: [`CudaSwendsenWang::take_tallies`] must come before
    /// the next measured sweep.
    pub(crate) fn tallies_full(&self) -> bool {
        self.pending.len() >= TALLY_SLOTS
    }

    /// Queues sweep number `sweep` (0-based); with `measure`, its tallies go to the next slot.
    pub(crate) fn queue_sweep(&mut self, sweep: u64, measure: bool) -> Result<()> {
        self.gpu.bind()?;
        let slot = if measure {
            if self.tallies_full() {
                return Err(Error::InvalidArgument(
                    "the device's tally slots are full: take the tallies first".into(),
                ));
            }
            self.pending.push(sweep + 1);
            Some(self.pending.len() - 1)
        } else {
            None
        };
        self.sweep_kernels(sweep, slot, &mut |_| Ok(()))
    }

    /// Waits for the queued sweeps and returns the tallies of the measured ones, in order.
    pub(crate) fn take_tallies(&mut self) -> Result<Vec<SwTally>> {
        if self.pending.is_empty() {
            return Ok(Vec::new());
        }
        let q = self.params.q as usize;
        let words = self.pending.len() * (q + 2);
        self.gpu.bind()?;
        let host = self.host.slice_mut::<u64>(words);
        // SAFETY: the pinned buffer holds the slots and outlives the copy, which the sync
        // completes.
        unsafe { dres::memcpy_dtoh_async(host, self.tallies.ptr, self.gpu.stream.cu_stream()) }
            .map_err(|e| cuda_err("reading the tallies", e))?;
        self.gpu.sync()?;
        let host = self.host.slice_mut::<u64>(words);
        let out = self
            .pending
            .iter()
            .zip(host.chunks(q + 2))
            .map(|(&sweep, t)| SwTally {
                sweep,
                satisfied: t[0],
                sum_sq: t[1],
                counts: t[2..].to_vec(),
            })
            .collect();
        self.pending.clear();
        Ok(out)
    }

    /// Median milliseconds of each kernel over `count` sweeps from `first` (measured when
    /// `measure`), timed with CUDA events, after which the spins have advanced `count` sweeps.
    ///
    /// # Errors
    /// [`Error::Cuda`] when a launch or an event fails.
    pub fn kernel_times(
        &mut self,
        first: u64,
        count: u64,
        measure: bool,
    ) -> Result<Vec<(&'static str, f64)>> {
        self.gpu.bind()?;
        let mut names: Vec<&'static str> = Vec::new();
        let mut times: Vec<Vec<f64>> = Vec::new();
        let ctx = self.gpu.ctx.clone();
        let stream = self.gpu.stream.clone();
        let event = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| cuda_err("creating an event", e))
        };
        for k in first..first + count {
            let mut marks = vec![("start", event()?)];
            marks[0]
                .1
                .record(&stream)
                .map_err(|e| cuda_err("recording an event", e))?;
            let slot = measure.then_some(0);
            self.sweep_kernels(k, slot, &mut |name| {
                let e = event()?;
                e.record(&stream)
                    .map_err(|e| cuda_err("recording an event", e))?;
                marks.push((name, e));
                Ok(())
            })?;
            for (i, pair) in marks.windows(2).enumerate() {
                let ms = pair[0]
                    .1
                    .elapsed_ms(&pair[1].1)
                    .map_err(|e| cuda_err("timing a kernel", e))?;
                if times.len() <= i {
                    names.push(pair[1].0);
                    times.push(Vec::new());
                }
                times[i].push(f64::from(ms));
            }
        }
        Ok(names
            .into_iter()
            .zip(times)
            .map(|(n, mut t)| {
                t.sort_by(f64::total_cmp);
                (n, t[t.len() / 2])
            })
            .collect())
    }

    /// Bytes a sweep must move at the least (module docs), for the memory-floor fraction: the
    /// same for measured sweeps, whose flip tallies the observables from what it holds already
    /// (only the cross-tile clusters' sizes move, a few bytes per tile).
    pub fn bytes_per_sweep(&self, _measure: bool) -> f64 {
        let n = (self.params.height * self.params.width) as f64;
        n * (10.0 + 3.0 / 8.0)
    }

    /// Queues the kernels of sweep `sweep`, measured into tally slot `slot`; `after(name)` runs
    /// after each kernel (or group) is queued, for the timings.
    fn sweep_kernels(
        &mut self,
        sweep: u64,
        slot: Option<usize>,
        after: &mut dyn FnMut(&'static str) -> Result<()>,
    ) -> Result<()> {
        let p = &self.params;
        let (h, w, q) = (p.height, p.width, u32::from(p.q));
        let g = geo(h, w);
        let key = SwKey {
            k0: p.seed as u32,
            k1: (p.seed >> 32) as u32,
            c1: sweep as u32,
            c2: (sweep >> 32) as u32,
            c3: ((p.stream as u32) << 4) | TAG_SW,
            q,
            thr: p.threshold,
        };
        let (wrap_x, wrap_y) = (p.boundary.wraps_x() as u32, p.boundary.wraps_y() as u32);
        let (spins, forest, marks) = (self.spins.ptr, self.forest.ptr, self.marks.ptr);
        let (sizes, list, rm) = (self.sizes.ptr, self.list.ptr, self.root_mask.ptr);
        let br = self.border.ptr;
        let bd = br + (w.div_ceil(TW) * h) as u64;
        let slot_bytes = (q as usize + 2) * 8;
        let obs = self.tallies.ptr + (slot.unwrap_or(0) * slot_bytes) as u64;
        let list_n = self.tallies.ptr + (TALLY_SLOTS * slot_bytes) as u64;
        let gpu = &self.gpu;
        let module = gpu
            .get_module(&KEY)
            .ok_or_else(|| Error::Cuda("the Swendsen–Wang module is missing".into()))?;
        // SAFETY: the arguments match the kernels' parameters and every buffer has the size
        // `with_gpu` gave it for this lattice.
        unsafe {
            gpu.launch(
                module.func("sw_local"),
                tile_grid(h, w),
                (TW as u32, 8, 1),
                &mut kernel_args![spins, g, wrap_x, wrap_y, key, forest, br, bd, rm],
            )?;
            after("sw_local")?;
            // Roots that other tiles' clusters join are marked for the measured flip only.
            let marks: sys::CUdeviceptr = if slot.is_some() { marks } else { 0 };
            gpu.launch(
                module.func("sw_border"),
                stride_grid(gpu, border_bytes(h, w)),
                (THREADS, 1, 1),
                &mut kernel_args![forest, g, br, bd, marks],
            )?;
            after("sw_border")?;
            let mut args = kernel_args![
                spins, forest, g, wrap_x, wrap_y, key, rm, br, bd, marks, sizes, list, list_n, obs
            ];
            if slot.is_some() {
                gpu.memset_zero(obs, slot_bytes)?;
                gpu.memset_zero(list_n, 4)?;
                gpu.launch(
                    module.func("sw_flip_measure"),
                    measure_grid(gpu, h, w),
                    (TW as u32, 8, 1),
                    &mut args,
                )?;
                after("sw_flip_measure")?;
                gpu.launch(
                    module.func("sw_sumsq"),
                    (gpu.sms * 16, 1, 1),
                    (THREADS, 1, 1),
                    &mut kernel_args![sizes, list, list_n, obs],
                )?;
                after("sw_sumsq")?;
            } else {
                gpu.launch(
                    module.func("sw_flip"),
                    tile_grid(h, w),
                    (TW as u32, 8, 1),
                    &mut args,
                )?;
                after("sw_flip")?;
            }
        }
        Ok(())
    }
}
