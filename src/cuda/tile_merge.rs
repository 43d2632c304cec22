//! Tile merge (Šťava & Beneš, "Connected Component Labeling in CUDA", GPU Computing Gems, 2010):
//! tiles labeled in shared memory, their borders merged hierarchically, then a final update.
//!
//! Per-site union-find with the label array as the forest (a slot holds its parent's site
//! index plus one; roots are the smallest sites of their clusters), so it needs no memory besides
//! the input and the labels, and canonical numbering runs on it directly.
//!
//! - `tm_local` (the paper's kernel 1): one thread block per 32×32-site tile reads the tile once,
//!   links each row's runs with warp ballots, unites the rows in shared memory and writes every
//!   site's local root + 1 (0 where empty).
//! - `tm_merge` (kernel 2), once per level `l = 0, 1, …` while `2^l` is below the tiles across or
//!   down: the seams inside every group of 2×2 sub-tiles of `32·2^l` sites — the tile columns
//!   and rows `k·32` with `k` an odd multiple of `2^l` — are merged with union on the global
//!   forest, so every tile edge is merged exactly once, at the level where its two sides first
//!   fall in one group. Unlike the paper's kernel 2 (a loop per group until nothing changes),
//!   the lock-free union (atomicMin, retried when a race is lost) needs one pass.
//! - `tm_wrap`: the periodic edges.
//! - `tm_final` (kernel 4): every site gets its root + 1, each tile resolving the roots of its
//!   local roots once in shared memory; roots are counted for raw numbering. The paper's kernel 3
//!   (flattening tile borders between levels) is left out: `tm_final` reads each local root's
//!   chain once per tile instead of once per site.
//!
//! Any size (the paper needed powers of two): partial tiles are padded with empty cells and
//! seams beyond the lattice do not exist.

use super::canonical::{self, Geo};
use super::engine::{Buffers, Job};
use super::runtime::{kernel_args, Gpu, Module};
use super::Numbering;
use crate::Result;

/// The family's kernel file.
pub(crate) const FILE: &str = "tile_merge.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &["tm_local", "tm_merge", "tm_wrap", "tm_final"];

/// Sites per tile side (`TILE` in `tile_merge.cu`).
pub(crate) const TILE: u32 = 32;
/// Threads per tile of `tm_local`: `TILE` lanes × `TILE / PER` rows (`PER` = 4 in
/// `tile_merge.cu`).
const TILE_CTA: (u32, u32, u32) = (TILE, TILE / 4, 1);
/// Threads per tile of `tm_final` (`FPER` = 8 rows per thread).
const FINAL_CTA: (u32, u32, u32) = (TILE, TILE / 8, 1);

/// Seams of a level among `tiles` tiles: the edges `k` in `1..tiles` that are odd multiples of
/// `2^level`.
fn seams(tiles: u32, level: u32) -> u32 {
    ((tiles - 1) >> level).div_ceil(2)
}

/// Queues the labeling of `job`.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let geo = Geo::new(job);
    let (input, labels, count) = (bufs.input, bufs.labels, bufs.count);
    let (wrap_x, wrap_y) = (job.boundary.wraps_x() as u32, job.boundary.wraps_y() as u32);
    let tiles_x = geo.w.div_ceil(TILE);
    let tiles_y = geo.h.div_ceil(TILE);
    let tile_grid = (tiles_x, tiles_y.min(65535), 1);
    // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold the job's
    // sites and `count` one word (Engine::prepare).
    unsafe {
        gpu.launch(
            module.func("tm_local"),
            tile_grid,
            TILE_CTA,
            &mut kernel_args![input, labels, geo],
        )?;
        let mut level = 0u32;
        while level < 32 && (1u32 << level) < tiles_x.max(tiles_y) {
            let (nv, nh) = (seams(tiles_x, level), seams(tiles_y, level));
            let items = nv as u64 * geo.h as u64 + nh as u64 * geo.w as u64;
            if items > 0 {
                gpu.launch(
                    module.func("tm_merge"),
                    (items.div_ceil(256) as u32, 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![input, labels, geo, level, nv, nh],
                )?;
            }
            level += 1;
        }
        if wrap_x != 0 || wrap_y != 0 {
            let items = job.height + job.width;
            gpu.launch(
                module.func("tm_wrap"),
                (items.div_ceil(256) as u32, 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, labels, geo, wrap_x, wrap_y],
            )?;
        }
        let counting = u32::from(job.numbering == Numbering::Raw);
        if counting != 0 {
            gpu.memset_zero(count, 4)?;
        }
        gpu.launch(
            module.func("tm_final"),
            tile_grid,
            FINAL_CTA,
            &mut kernel_args![labels, geo, count, counting],
        )?;
    }
    if job.numbering == Numbering::Canonical {
        canonical::run(gpu, module, job, bufs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::seams;

    /// Every tile edge `1..tiles` is merged at exactly one level.
    #[test]
    fn every_seam_once() {
        for tiles in 1..300u32 {
            let total: u32 = (0..10).map(|l| seams(tiles, l)).sum();
            assert_eq!(total, tiles - 1, "{tiles} tiles");
        }
    }
}
