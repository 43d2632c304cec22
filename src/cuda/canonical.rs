//! Canonical (scipy) numbering on the GPU, run after any family's union-find forest is built.
//!
//! The forest's roots are the smallest sites of their clusters, so numbering the roots in raster
//! order gives scipy's labels, and a root is recognised by its own slot (it points at itself):
//! counting and ranking roots needs no find. The sites are cut into segments of
//! [`SEGMENT_SITES`] consecutive sites, one thread block each: `canon_count` counts each
//! segment's roots, `canon_scan` (one block) turns the counts into each segment's first number
//! and the total, and `canon_rank` ranks the roots within their segment and writes
//! `FLAG | label - 1` into each root's slot. `canon_final` then writes every site's label from its
//! block key's root. When the forest is the label array itself (1×1 blocks), `canon_count` also
//! points every site straight at its root; a root's slot then holds `FLAG | label - 1` until its
//! own thread writes the label, and readers accept both, so no second label array is needed.
//! Extra memory: one `u32` per segment.

use super::engine::{Buffers, Job};
use super::runtime::{kernel_args, Gpu, Module};
use crate::Result;

/// Kernels of `canonical.cu`, present in every module.
pub(crate) const KERNELS: &[&str] = &["canon_count", "canon_scan", "canon_rank", "canon_final"];

/// Sites per segment (`SEG_THREADS * SEG_ITEMS` in `canonical.cu`).
pub(crate) const SEGMENT_SITES: usize = 4096;

/// Segments of a lattice of `sites` sites.
pub(crate) fn segments(sites: usize) -> usize {
    sites.div_ceil(SEGMENT_SITES)
}

/// The lattice geometry as the kernels take it (`struct Geo` in `common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geo {
    pub h: u32,
    pub w: u32,
    pub hb: u32,
    pub wb: u32,
    /// `ceil(2^64 / w)`, 0 when `w == 1`: exact division of site indices by `w`.
    pub wdiv: u64,
}

impl Geo {
    pub(crate) fn new(job: &Job) -> Geo {
        let (bw, bh) = job.key().block_shape();
        let w = job.width as u64;
        Geo {
            h: job.height as u32,
            w: job.width as u32,
            hb: job.height.div_ceil(bh as usize) as u32,
            wb: job.width.div_ceil(bw as usize) as u32,
            wdiv: if w <= 1 { 0 } else { u64::MAX / w + 1 },
        }
    }
}

/// The 2-D grid of the per-block kernels: x over block columns (32 threads per CTA row), y over
/// block rows (8 per CTA, looping beyond 65535 CTA rows).
pub(crate) fn block_grid(geo: &Geo) -> (u32, u32, u32) {
    (geo.wb.div_ceil(32), geo.hb.div_ceil(8).min(65535), 1)
}

/// Threads of a per-block kernel's CTA.
pub(crate) const BLOCK_CTA: (u32, u32, u32) = (32, 8, 1);

/// Queues canonical numbering of the forest `bufs.forest` into `bufs.labels`; the count goes to
/// `bufs.count`.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    rank(gpu, module, job, bufs)?;
    let geo = Geo::new(job);
    let (input, labels, forest) = (bufs.input, bufs.labels, bufs.forest);
    // SAFETY: as in `rank`; `labels` holds the job's sites.
    unsafe {
        gpu.launch(
            module.func("canon_final"),
            block_grid(&geo),
            BLOCK_CTA,
            &mut kernel_args![input, labels, forest, geo],
        )
    }
}

/// Queues the ranking of the roots: each root's slot gets `FLAG | label - 1`, the count goes to
/// `bufs.count`; no label is written.
pub(crate) fn rank(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let geo = Geo::new(job);
    let nseg = segments(job.sites());
    let (input, forest) = (bufs.input, bufs.forest);
    let (counts, count) = (bufs.counts, bufs.count);
    let nseg32 = nseg as u32;
    // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold the job's
    // sites, `forest` one slot per block and `counts` one word per segment (Engine::prepare).
    unsafe {
        gpu.launch(
            module.func("canon_count"),
            (nseg32, 1, 1),
            (256, 1, 1),
            &mut kernel_args![input, forest, geo, counts],
        )?;
        gpu.launch(
            module.func("canon_scan"),
            (1, 1, 1),
            (1024, 1, 1),
            &mut kernel_args![counts, nseg32, count],
        )?;
        gpu.launch(
            module.func("canon_rank"),
            (nseg32, 1, 1),
            (256, 1, 1),
            &mut kernel_args![input, forest, geo, counts],
        )?;
    }
    Ok(())
}
