//! HA4 (Hennequin, Lacassagne, Cabaret & Meunier, 2018): run-based direct labeling with warp
//! intrinsics, two sites per thread, plus its 8-connected ("HA8") and segment variants.
//!
//! Only the starts of horizontal runs are union-find nodes, so unions and finds happen once per
//! run rather than once per site, and the forest is the label array itself (keys = site
//! indices, roots = smallest sites, as in `common.cuh`).
//!
//! - `ha4_strip`: one warp per row of a strip of [`ROWS`] rows walks the row 64 sites at a time
//!   (two ballots give a 64-bit mask), initialises the run starts as roots and unites the runs of
//!   consecutive rows of the strip, only at run starts.
//! - `ha4_border`: one warp per 64-site chunk of each row pair across strip borders (and the
//!   periodic y edge).
//! - `ha4_wrap`: the periodic x edge of every row, and the diagonals across it.
//! - `ha4_relabel`: one warp per chunk column, looping over rows (a 2-D grid: no division per
//!   chunk); the chunk's nodes are ranked and each lane walks one of them to its root, so a warp
//!   waits for its longest chain rather than a lane's two or three in a row; every site is written
//!   once and roots are counted (raw numbering), once per CTA.
//!
//! The run that enters a chunk from the left is entered at the previous chunk's last site, which
//! the strip pass marks with its run start: a node like any start, so no kernel reads the marker
//! before walking. Against the reference implementation (YACCLAB's HA4/HA8), the strip pass fills
//! every warp slot of a multiprocessor and walks a lane's two 4-connected unions in lockstep.
//!
//! Canonical numbering relabels raw first, which leaves every occupied site pointing straight at
//! its root, and then runs the shared canonical kernels on the label array.
//!
//! Memory: the input and the label array, plus the engine's header and canonical segment counts.

use super::canonical::{self, Geo};
use super::engine::{Buffers, Job};
use super::runtime::{kernel_args, Gpu, Module};
use super::Numbering;
use crate::Result;

/// The family's kernel file.
pub(crate) const FILE: &str = "ha4.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &["ha4_strip", "ha4_border", "ha4_wrap", "ha4_relabel"];

/// Rows per strip (`HA_ROWS` in `ha4.cu`), one warp each.
pub(crate) const ROWS: u32 = 4;

/// Warps per CTA of the chunk-parallel kernels.
const CHUNK_WARPS: u32 = 8;

/// Queues the labeling of `job`.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let geo = Geo::new(job);
    let (input, labels, count) = (bufs.input, bufs.labels, bufs.count);
    let wrap_x = job.boundary.wraps_x() as u32;
    let wrap_y = job.boundary.wraps_y() as u32;
    let chunks = geo.w.div_ceil(64);
    let pairs = (geo.h - 1) / ROWS;
    // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold the job's
    // sites (Engine::prepare checked the sizes).
    unsafe {
        gpu.launch(
            module.func("ha4_strip"),
            (geo.h.div_ceil(ROWS), 1, 1),
            (32, ROWS, 1),
            &mut kernel_args![input, labels, geo],
        )?;
        if pairs + wrap_y > 0 {
            gpu.launch(
                module.func("ha4_border"),
                (chunks.div_ceil(CHUNK_WARPS), (pairs + wrap_y).min(65535), 1),
                (32, CHUNK_WARPS, 1),
                &mut kernel_args![input, labels, geo, pairs, wrap_y],
            )?;
        }
        if wrap_x != 0 {
            gpu.launch(
                module.func("ha4_wrap"),
                (geo.h.div_ceil(256), 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, labels, geo, wrap_y],
            )?;
        }
        gpu.memset_zero(count, 4)?;
        // Each CTA adds its roots to the one counter once, and a warp covers several rows when
        // the lattice is tall: one atomic per warp and row meant millions of same-address
        // atomics on 4-connected lattices with millions of clusters (serialised in L2: 1.5 ms
        // of 3.4 at 16384², H100). 256 CTAs per multiprocessor keep enough chains in flight.
        let ctas_x = chunks.div_ceil(CHUNK_WARPS);
        let relabel_rows = (gpu.sms * 256).div_ceil(ctas_x).clamp(1, geo.h.min(65535));
        gpu.launch(
            module.func("ha4_relabel"),
            (ctas_x, relabel_rows, 1),
            (32, CHUNK_WARPS, 1),
            &mut kernel_args![input, labels, geo, count],
        )?;
        if job.numbering == Numbering::Canonical {
            canonical::run(gpu, module, job, bufs)?;
        }
    }
    Ok(())
}
