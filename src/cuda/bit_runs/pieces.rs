//! The cluster analysis's pieces on bit runs ([`run_pieces`]): the tile pass's component
//! records and what the passes after it add for the analysis.

use super::{queue, Extra, TILE_W};
use crate::cuda::engine::{Buffers, Job};
use crate::cuda::runtime::{Gpu, Module};
use crate::cuda::Numbering;
use crate::Result;

/// The cluster analysis's component records (`struct BrRec` in `bit_runs.cu`): one per local
/// component of a tile, interior ones from the front, edge ones from the back.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Records {
    pub root: u64,
    pub a: u64,
    pub b: u64,
    pub boxes: u64,
    /// Two words: interior and edge records written.
    pub count: u64,
    /// The size counts' histogram (`HIST_CAP + 1` words), or 0: when given, interior
    /// components of at most `HIST_CAP` sites are counted into it instead of recorded, and
    /// `slots` must leave room for the tile's histogram after the accumulators
    /// ([`direct_hist_slots`]).
    pub hist: u64,
    pub cap: u32,
    pub slots: u32,
    /// 0: sizes and boxes only, the coordinate sums of multi-run components left 0.
    pub moments: u32,
}

/// Bytes of a record (root site, two packed u64 sums, the packed bounding box).
pub(crate) const RECORD_BYTES: usize = 24;

/// Records a job can need at most: every tile row holds at most ceil(columns / 2) runs, and every
/// local component at least one run.
pub(crate) fn record_capacity(job: &Job) -> usize {
    let full = job.width / TILE_W;
    let rest = job.width % TILE_W;
    job.height * (full * TILE_W / 2 + rest.div_ceil(2))
}

/// Queues the pieces of the cluster analysis (`job`: canonical numbering, no segments): the
/// tiles' records into `rec`, then the seams, the flatten and the ranking, after which every
/// local root's slot holds `FLAG | label - 1`. No label is written; [`final_pass`] writes them.
///
/// With `forest_only` (no [`final_pass`] will follow) the tile pass writes only what the later
/// passes read: the labels of tile-edge sites (the seams and the lattice's edges) and the local
/// roots' slots, not the interior sites' (at p_c three quarters of the label array's bytes).
pub(crate) fn run_pieces(
    gpu: &Gpu,
    module: &Module,
    job: &Job,
    bufs: &Buffers,
    pieces: &Pieces<'_>,
) -> Result<()> {
    debug_assert!(job.numbering == Numbering::Canonical && !job.segments);
    queue(gpu, module, job, bufs, Extra::Pieces(pieces))
}

/// What the cluster analysis adds to a labeling ([`run_pieces`]).
pub(crate) struct Pieces<'a> {
    /// The tiles' records.
    pub rec: &'a Records,
    /// No labels will be written from this forest.
    pub forest_only: bool,
    /// The pieces' accumulator rows, whose edge pieces' rows `br_publish` sets empty (the
    /// interior pieces' rows are stored whole by `ana_records`).
    pub rows: u64,
    /// Whether the rows' sums of coordinates are used.
    pub moments: bool,
}
