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
//! waits per sweep (the chain itself: `sw_chain.rs`).
//!
//! Bytes each sweep moves, per site: the tile pass reads the spin (1) and writes the forest slot
//! (4), the local-root mask (1/8) and the leaving bonds (1/16); the border pass reads those
//! (1/16) and touches the slots of the tiles' edges; the flip reads the mask (1/8) and the slot
//! (4) and writes the spin (1): about 10.4 bytes. A measured sweep's flip tallies the
//! observables from what it holds (the new spins of its tile in shared memory, its local roots'
//! sizes counted by runs), so only the sizes of clusters crossing tiles add traffic, a few bytes
//! per tile. The tile pass is bound by instruction issue (a Philox block per site and the
//! shared-memory unions), not by memory (Nsight Compute on an H200 at L = 8192: issue slots 80 %
//! busy, DRAM 3 %; the flips 68–74 %), so a sweep runs at about 7 % of that memory floor.

use super::canonical::{self, Geo};
use super::engine::{Buffers, FamilyScratch, Job};
use super::family::{Family, LabelWidth, ModuleKey, SiteType};
use super::runtime::{cuda_err, kernel_args, Gpu, Module};
use super::{copy_rows, CudaBackend, Numbering};
use crate::core::bonds::PackedBonds;
use crate::core::options::Spec;
use crate::{Connectivity, Result};
use cudarc::driver::{result as dres, sys};
use ndarray::ArrayViewMut2;

/// The family's kernel file.
pub(crate) const FILE: &str = "swendsen_wang.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &[
    "bl_local",
    "bl_final_raw",
    "sw_local",
    "sw_border",
    "sw_flip",
    "sw_flip_measure",
    "sw_sumsq",
];

/// Tile width and height (`TW`, `TH` in the kernel file).
pub(super) const TW: usize = 32;
pub(super) const TH: usize = 32;
/// Threads of the grid-stride kernels' CTAs.
pub(super) const THREADS: u32 = 256;

pub(super) const KEY: ModuleKey = ModuleKey {
    family: Family::SwendsenWang,
    site: SiteType::U8,
    conn8: false,
    segments: false,
    labels: LabelWidth::U32,
    short_tiles: false,
};

/// Bytes of the saved leaving bonds: a byte per site of each tile's last column and last row.
pub(super) fn border_bytes(h: usize, w: usize) -> usize {
    w.div_ceil(TW) * h + h.div_ceil(TH) * w
}

/// The forest of 1×1 blocks for an `h × w` lattice.
pub(super) fn geo(h: usize, w: usize) -> Geo {
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
pub(super) fn tile_grid(h: usize, w: usize) -> (u32, u32, u32) {
    (w.div_ceil(TW) as u32, h.div_ceil(TH).min(65535) as u32, 1)
}

/// The measured flip's grid: each CTA loops over several tiles down (up to 16, keeping about
/// 32 CTAs per multiprocessor), so that its tallies' atomics stay few.
pub(super) fn measure_grid(gpu: &Gpu, h: usize, w: usize) -> (u32, u32, u32) {
    let (tx, ty) = (w.div_ceil(TW), h.div_ceil(TH));
    let per = (tx * ty / (gpu.sms as usize * 32).max(1)).clamp(1, 16);
    (tx as u32, ty.div_ceil(per).min(65535) as u32, 1)
}

/// A grid-stride grid over `items`, a few CTAs per multiprocessor at most.
pub(super) fn stride_grid(gpu: &Gpu, items: usize) -> (u32, u32, u32) {
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
            labels: LabelWidth::U32,
            short_tiles: false,
            write_once: false,
        };
        self.engine.check(&job)?;
        let n = h * w;
        if n == 0 {
            return Ok(0);
        }
        let words = bonds.right_words().len();
        let (in_bytes, out_bytes) = (2 * words * 8, n * 4);
        self.reserve(&job, in_bytes, out_bytes)?;
        let st = &mut self.staging;
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
