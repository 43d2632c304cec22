//! Bond-masked labeling and the device-resident Swendsen–Wang sweep (`kernels/swendsen_wang.cu`).
//!
//! Both label a bond configuration in tiles of 32 × 32 sites (one pass in shared memory, then
//! the bonds that leave the tiles united globally); roots are the smallest site of each cluster,
//! since every link goes to the smaller index. Bond labeling reads [`PackedBonds`]' words and
//! numbers the roots canonically (`canonical.cu`) or writes them raw. A Swendsen–Wang sweep
//! activates the bonds from the spins with Philox 4×32-10 in the tile pass itself (the spins are
//! read once), unites across tiles, and gives every site the new spin drawn at its cluster's
//! root; measured sweeps add the cluster sizes, the spin-count histogram and the satisfied
//! bonds to a slot of a device buffer that the host reads every few hundred sweeps, so nothing
//! waits per sweep.
//!
//! Bytes each unmeasured sweep moves, per site: the tile pass reads the spin (1) and writes the
//! forest slot (4), the local-root mask (1/8) and the leaving bonds (1/16); the border pass
//! reads those (1/16) and touches the slots of the tiles' edges; the flip reads the mask (1/8)
//! and the slot (4) and writes the spin (1): about 10.4 bytes. A measured sweep reads the spins
//! once more (1).

use super::canonical::{self, Geo};
use super::engine::{Buffers, FamilyScratch, Job};
use super::family::{Family, ModuleKey, SiteType};
use super::runtime::{cuda_err, kernel_args, DevBuf, Gpu, Module, PinnedBuf};
use super::{copy_rows, CudaBackend, CudaDevice, Numbering};
use crate::core::bonds::PackedBonds;
use crate::core::options::Spec;
use crate::core::sweep::{threshold, SwParams, SwTally};
use crate::{Boundary, Connectivity, Error, Result};
use cudarc::driver::{result as dres, sys, CudaStream};
use ndarray::ArrayViewMut2;
use std::sync::Arc;

/// The family's kernel file.
pub(crate) const FILE: &str = "swendsen_wang.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &[
    "bl_local",
    "bl_final_raw",
    "sw_local",
    "sw_border",
    "sw_flip",
    "sw_sumsq",
    "sw_measure",
];

/// Tile width and height (`TW`, `TH` in the kernel file).
const TW: usize = 32;
const TH: usize = 32;
/// Threads of the grid-stride kernels' CTAs.
const THREADS: u32 = 256;
/// Measured sweeps whose tallies the device holds before the host reads them.
pub(crate) const TALLY_SLOTS: usize = 256;

const KEY: ModuleKey = ModuleKey {
    family: Family::SwendsenWang,
    site: SiteType::U8,
    conn8: false,
    segments: false,
};

/// Bytes of the saved leaving bonds: a byte per site of each tile's last column and last row.
fn border_bytes(h: usize, w: usize) -> usize {
    w.div_ceil(TW) * h + h.div_ceil(TH) * w
}

/// The forest of 1×1 blocks for an `h × w` lattice.
fn geo(h: usize, w: usize) -> Geo {
    let w64 = w as u64;
    Geo {
        h: h as u32,
        w: w as u32,
        hb: h as u32,
        wb: w as u32,
        wdiv: if w64 <= 1 { 0 } else { u64::MAX / w64 + 1 },
    }
}

/// The tile grid: tiles across, tiles down (looping beyond 65535).
fn tile_grid(h: usize, w: usize) -> (u32, u32, u32) {
    (w.div_ceil(TW) as u32, h.div_ceil(TH).min(65535) as u32, 1)
}

/// A grid-stride grid over `items`, a few CTAs per multiprocessor at most.
fn stride_grid(gpu: &Gpu, items: usize) -> (u32, u32, u32) {
    let most = gpu.sms as usize * 16;
    (items.div_ceil(THREADS as usize).clamp(1, most) as u32, 1, 1)
}

/// The scratch bond labeling needs: the leaving bonds.
pub(crate) fn scratch(job: &Job) -> FamilyScratch {
    FamilyScratch {
        aux: border_bytes(job.height, job.width).div_ceil(4),
        ..FamilyScratch::default()
    }
}

/// Queues the labeling of the packed bonds at `bufs.input` (`right` rows, then `down` rows, each
/// row [`PackedBonds::words_per_row`] 64-bit words) into `bufs.labels`: raw numbering writes
/// root + 1 at every site (roots = smallest site index), canonical numbering scipy's labels.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let (h, w) = (job.height, job.width);
    let g = geo(h, w);
    let nw64 = PackedBonds::words_per_row(w);
    let nw32 = (2 * nw64) as u32;
    let right = bufs.input;
    let down = bufs.input + (h * nw64 * 8) as u64;
    let (labels, br) = (bufs.labels, bufs.aux);
    let bd = br + (w.div_ceil(TW) * h) as u64;
    let (wrap_x, wrap_y) = (job.boundary.wraps_x() as u32, job.boundary.wraps_y() as u32);
    let no_flags: sys::CUdeviceptr = 0;
    // SAFETY: the arguments match the kernels' parameters; the bonds hold h rows of nw64 words
    // per mask, the labels h * w slots and the scratch the leaving bonds (`scratch`).
    unsafe {
        gpu.launch(
            module.func("bl_local"),
            tile_grid(h, w),
            (TW as u32, 8, 1),
            &mut kernel_args![right, down, nw32, g, wrap_x, wrap_y, labels, br, bd],
        )?;
        gpu.launch(
            module.func("sw_border"),
            stride_grid(gpu, border_bytes(h, w)),
            (THREADS, 1, 1),
            &mut kernel_args![labels, g, br, bd, no_flags],
        )?;
        match job.numbering {
            Numbering::Raw => {
                gpu.memset_zero(bufs.count, 4)?;
                gpu.launch(
                    module.func("bl_final_raw"),
                    stride_grid(gpu, h * w),
                    (THREADS, 1, 1),
                    &mut kernel_args![labels, g, bufs.count],
                )?;
            }
            Numbering::Canonical => canonical::run(gpu, module, job, bufs)?,
        }
    }
    Ok(())
}

impl CudaBackend {
    /// Labels a host bond configuration into `out`: canonical labels, or (raw numbering) each
    /// site's root, the smallest site index of its cluster. Returns the number of clusters.
    pub(super) fn label_host_bonds(
        &mut self,
        bonds: &PackedBonds,
        spec: &Spec,
        numbering: Numbering,
        mut out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let (h, w) = bonds.dim();
        let job = Job {
            site: SiteType::U8,
            height: h,
            width: w,
            connectivity: Connectivity::Four,
            boundary: spec.boundary,
            segments: false,
            family: Family::SwendsenWang,
            numbering,
        };
        self.engine.check(&job)?;
        let n = h * w;
        if n == 0 {
            return Ok(0);
        }
        let words = bonds.right_words().len();
        let (in_bytes, out_bytes) = (2 * words * 8, n * 4);
        let st = &mut self.staging;
        let need = st.dev_in.shortfall(in_bytes)
            + st.dev_out.shortfall(out_bytes)
            + self.engine.scratch_shortfall(&job);
        if need > 0 {
            let (free, _) = self.engine.gpu.mem_info()?;
            let reclaim = st.dev_in.bytes + st.dev_out.bytes;
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
        let staged = st.pin_in.slice_mut::<u64>(2 * words);
        staged[..words].copy_from_slice(bonds.right_words());
        staged[words..].copy_from_slice(bonds.down_words());
        let stream = self.engine.gpu.stream.cu_stream();
        // SAFETY: the pinned buffers hold in_bytes / out_bytes and stay untouched until the
        // synchronisation in `count` below; the device buffers are at least as large.
        unsafe {
            dres::memcpy_htod_async(st.dev_in.ptr, st.pin_in.slice_mut::<u8>(in_bytes), stream)
                .map_err(|e| cuda_err("copying the bonds to the GPU", e))?;
        }
        self.engine.run(&job, st.dev_in.ptr, st.dev_out.ptr)?;
        // SAFETY: as above.
        unsafe {
            dres::memcpy_dtoh_async(st.pin_out.slice_mut::<u32>(n), st.dev_out.ptr, stream)
                .map_err(|e| cuda_err("copying the labels from the GPU", e))?;
        }
        let count = self.engine.count()?;
        let labels = st.pin_out.slice_mut::<u32>(n);
        if numbering == Numbering::Raw {
            // Raw labels are root + 1; the roots themselves are asked for.
            labels.iter_mut().for_each(|l| *l -= 1);
        }
        copy_rows(labels, &mut out);
        Ok(count)
    }
}

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

    /// Bytes a sweep must move at the least (module docs), for the memory-floor fraction.
    pub fn bytes_per_sweep(&self, measure: bool) -> f64 {
        let n = (self.params.height * self.params.width) as f64;
        n * (10.0 + 3.0 / 8.0 + if measure { 1.0 } else { 0.0 })
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
        let measure = u32::from(slot.is_some());
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
            gpu.launch(
                module.func("sw_border"),
                stride_grid(gpu, border_bytes(h, w)),
                (THREADS, 1, 1),
                &mut kernel_args![forest, g, br, bd, marks],
            )?;
            after("sw_border")?;
            if slot.is_some() {
                gpu.memset_zero(obs, slot_bytes)?;
                gpu.memset_zero(list_n, 4)?;
            }
            gpu.launch(
                module.func("sw_flip"),
                tile_grid(h, w),
                (TW as u32, 8, 1),
                &mut kernel_args![
                    spins, forest, g, key, rm, marks, sizes, list, list_n, obs, measure
                ],
            )?;
            after("sw_flip")?;
            if slot.is_some() {
                gpu.launch(
                    module.func("sw_sumsq"),
                    (gpu.sms * 2, 1, 1),
                    (THREADS, 1, 1),
                    &mut kernel_args![sizes, list, list_n, obs],
                )?;
                after("sw_sumsq")?;
                gpu.launch(
                    module.func("sw_measure"),
                    stride_grid(gpu, h * w),
                    (THREADS, 1, 1),
                    &mut kernel_args![spins, g, wrap_x, wrap_y, q, obs],
                )?;
                after("sw_measure")?;
            }
        }
        Ok(())
    }
}
