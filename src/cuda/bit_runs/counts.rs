//! The size counts' forest ([`run_counts`]). It keeps the labeling's tiles (short for
//! 4-connectivity, bands for 8) and its raw forest, written as without labels.
//! `br_local_counts` turns each local root's parent field into its component's size once the
//! tile's forest is stored (every run adds its sites, a warp's runs of one component summed
//! first), counts the interior components into the histogram and keeps each edge component's
//! size at its local root; `br_flatten` adds the other edge local roots' sizes into their
//! global roots (a thread's and a warp's of one cluster summed first) and leaves only the
//! global roots in the edge-root mask. No ranking and no records, which served the table.

use super::{queue, Extra};
use crate::cuda::engine::{Buffers, Job};
use crate::cuda::family::LabelWidth;
use crate::cuda::runtime::{Gpu, Module};
use crate::cuda::Numbering;
use crate::Result;

/// What the size counts add to a forest (`struct BrCounts` in `bit_runs.cu`; [`run_counts`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    /// Eight bytes a site, of which only the edge components' local roots' are written: the
    /// component's size, then (global roots) the cluster's size and the lattice edges it
    /// touches (`ns_edges`).
    pub sf: u64,
    /// The histogram: `HIST_CAP + 1` words, then the count of listed clusters.
    pub hist: u64,
    /// The listed clusters' `(size, span bits)` pairs.
    pub tail: u64,
    /// Pairs `tail` holds.
    pub tail_cap: u32,
}

/// Queues the size counts' forest (`job`: raw numbering, occupancy, 32-bit labels, the
/// labeling's tiles): `br_local_counts` writes the forest as an analysis without labels does,
/// counts the tiles' interior components into `counts.hist` and keeps each edge component's
/// size at its local root in `counts.sf`; after the seams, `br_flatten` adds those sizes into
/// the global roots and leaves only the global roots in the edge-root mask. No ranking, no
/// records: `ns_edges`, `ns_hist` and `ns_border` (`kernels/analysis.cu`) finish the counts.
pub(crate) fn run_counts(
    gpu: &Gpu,
    module: &Module,
    job: &Job,
    bufs: &Buffers,
    counts: &Counts,
) -> Result<()> {
    debug_assert!(
        job.numbering == Numbering::Raw && !job.segments && job.labels == LabelWidth::U32
    );
    queue(gpu, module, job, bufs, Extra::Counts(counts))
}
