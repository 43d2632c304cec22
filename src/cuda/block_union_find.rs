//! Block-based union-find (after Allegretti, Bolelli & Grana, 2019), with a shared-memory pass:
//! the GPU fast path.
//!
//! One union-find node per block of sites that are always connected to each other — 2×2 blocks
//! for 8-connectivity, 2×1 for 4-connectivity — so a quarter (half) as many nodes and unions as
//! per-site union-find, and no iteration. The forest is a compact array with one slot per block
//! holding its parent's key + 1, where a block's key is its first occupied site; links always go
//! to the smaller key, so roots are the smallest sites of their clusters.
//!
//! - `buf_local`: one thread block per 32×32-block tile reads the tile's sites once, links each
//!   row's runs of joined blocks to the run's first node (warp ballots, no unions), unites the
//!   rows in shared memory and writes every block's slot (its local root): this is the
//!   initialisation, and most unions never touch global memory.
//! - `buf_border`: the blocks on tile borders are united with their neighbours in other tiles
//!   (atomicMin linking, path halving).
//! - `buf_wrap`: the periodic edges, taken literally.
//! - `buf_flatten`: the local roots of blocks on tile edges are pointed at their global roots,
//!   so that every later find takes at most two steps.
//! - `buf_final_raw` (raw numbering: root + 1 at every site, roots counted) or canonical
//!   numbering writes the labels.
//!
//! In segment mode a 2×2 or 2×1 block may hold several values, so segments fall back to per-site
//! union-find (1×1 blocks) in the same kernels, with the label array itself as the forest.

use super::canonical::{self, block_grid, Geo, BLOCK_CTA};
use super::engine::{Buffers, FamilyScratch, Job};
use super::runtime::{kernel_args, Gpu, Module};
use super::Numbering;
use crate::Result;

/// The family's kernel file.
pub(crate) const FILE: &str = "block_union_find.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &[
    "buf_local",
    "buf_border",
    "buf_wrap",
    "buf_flatten",
    "buf_final_raw",
    "ana_zero",
    "ana_runs",
    "ana_border",
    "ana_hist",
];

/// Blocks per tile side (`TILE` in `block_union_find.cu`).
pub(crate) const TILE: u32 = 32;

/// Queues the labeling of `job`.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    build_forest(gpu, module, job, bufs)?;
    let geo = Geo::new(job);
    let (input, labels, forest, count) = (bufs.input, bufs.labels, bufs.forest, bufs.count);
    // SAFETY: as in `build_forest`.
    unsafe {
        match job.numbering {
            Numbering::Raw => {
                gpu.memset_zero(count, 4)?;
                gpu.launch(
                    module.func("buf_final_raw"),
                    block_grid(&geo),
                    BLOCK_CTA,
                    &mut kernel_args![input, labels, forest, geo, count],
                )?;
            }
            Numbering::Canonical => canonical::run(gpu, module, job, bufs)?,
        }
    }
    Ok(())
}

/// Queues the unions and the flatten: afterwards every block's slot points at its root in at
/// most two steps (the analysis starts from here).
pub(crate) fn build_forest(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let geo = Geo::new(job);
    let (input, forest) = (bufs.input, bufs.forest);
    let (rows, cols) = (bufs.border_rows, bufs.border_cols);
    let (wrap_x, wrap_y) = (job.boundary.wraps_x() as u32, job.boundary.wraps_y() as u32);
    let tiles_x = geo.wb.div_ceil(TILE);
    let tiles_y = geo.hb.div_ceil(TILE);
    // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold the job's
    // sites and `forest` one slot per block (Engine::prepare).
    unsafe {
        gpu.launch(
            module.func("buf_local"),
            (tiles_x, tiles_y.min(65535), 1),
            (TILE, 8, 1),
            &mut kernel_args![input, forest, geo, rows, cols],
        )?;
        if tiles_x > 1 || tiles_y > 1 {
            let mode = 0u32;
            gpu.launch(
                module.func("buf_border"),
                (geo.wb.div_ceil(256), tiles_y.min(65535), 1),
                (256, 1, 1),
                &mut kernel_args![forest, geo, rows, cols, mode],
            )?;
        }
        if tiles_x > 1 && geo.hb > 1 {
            let mode = 1u32;
            gpu.launch(
                module.func("buf_border"),
                (geo.hb.div_ceil(256), (2 * tiles_x).min(65535), 1),
                (256, 1, 1),
                &mut kernel_args![forest, geo, rows, cols, mode],
            )?;
        }
        if wrap_x != 0 || wrap_y != 0 {
            let items = job.height + job.width;
            gpu.launch(
                module.func("buf_wrap"),
                (items.div_ceil(256) as u32, 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, forest, geo, wrap_x, wrap_y],
            )?;
        }
        if tiles_x > 1 || tiles_y > 1 || wrap_x != 0 || wrap_y != 0 {
            // Local roots on tile edges straight to their global roots.
            let mode = 0u32;
            gpu.launch(
                module.func("buf_flatten"),
                (geo.wb.div_ceil(256), (2 * tiles_y).min(65535), 1),
                (256, 1, 1),
                &mut kernel_args![forest, geo, mode],
            )?;
            let mode = 1u32;
            gpu.launch(
                module.func("buf_flatten"),
                ((2 * tiles_x).div_ceil(32), geo.hb.div_ceil(8).min(65535), 1),
                (32, 8, 1),
                &mut kernel_args![forest, geo, mode],
            )?;
        }
    }
    Ok(())
}

/// The scratch block union-find needs: its forest (one word per block of more than one site)
/// and the tiles' saved border cells, rows then columns.
pub(crate) fn scratch(job: &Job) -> FamilyScratch {
    let key = job.key();
    let (bw, bh) = key.block_shape();
    let (hb, wb) = (
        job.height.div_ceil(bh as usize),
        job.width.div_ceil(bw as usize),
    );
    let tile = TILE as usize;
    FamilyScratch {
        forest: if key.compact_forest() {
            job.blocks()
        } else {
            0
        },
        border_rows: 2 * hb.div_ceil(tile) * wb,
        border_cols: 2 * wb.div_ceil(tile) * hb,
        aux: 0,
    }
}
