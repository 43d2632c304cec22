//! Bit runs' sizes: shared memory of the tile kernels, the tiles, and the scratch layout (the
//! root masks, counts, chunk ranks, per-word root counts and the 64-bit build's local roots).

use super::{COUNT_CHUNK, TILE_W};
use crate::cuda::engine::{Buffers, FamilyScratch, Job};
use crate::cuda::family::{LabelWidth, ModuleKey};
use crate::cuda::Numbering;
use crate::Result;

/// Rows per tile (`TH`): 32, or 16 for segments (whose rows can hold twice as many runs) and
/// for short tiles ([`short_tiles`]).
pub(crate) fn tile_h(segments: bool, short_tiles: bool) -> usize {
    if segments || short_tiles {
        16
    } else {
        32
    }
}

/// Whether a labeling of occupancy into 32-bit labels works in short tiles (`SHORT_TILES`, 16
/// rows): 4-connected ones, at every size. A tile is one CTA whose time is mostly latency (its
/// passes run row after row, between barriers). Short tiles' 8192 nodes take 42 KB of shared
/// memory, so that four share a multiprocessor (in 32 registers a thread) where tall rows' 84
/// KB allow two: at 16384² raw labels took 2.17 ms against 2.28 on an H200; and a lattice of
/// one tall tile per multiprocessor (2048²) took as long as one tile, which short tiles halve.
/// 8-connected ones keep tall tiles, whose bands ([`bands`]) take 52 KB, four a multiprocessor
/// too, and were faster at every size from 2048² (0.103 → 0.091 ms, 16384² 2.22 → 1.82 ms).
pub(crate) fn short_tiles(conn8: bool) -> bool {
    !conn8
}

/// Whether the module's tile pass works in two-row bands (`BANDS` in `bit_runs.cu`):
/// 8-connected occupancy into 32-bit labels, in tall tiles.
pub(crate) fn bands(key: &ModuleKey) -> bool {
    key.conn8 && !key.segments && key.labels == LabelWidth::U32 && !key.short_tiles
}

/// Worst-case union-find nodes of a tile of `th` rows (`MAXN`): every site of segments, half
/// the sites of occupancy rows (a checkerboard), a quarter of bands' sites (a band of 1024
/// columns has at most 512 runs).
pub(crate) fn max_nodes(segments: bool, th: usize, bands: bool) -> usize {
    let sites = th * TILE_W;
    if segments {
        sites
    } else if bands {
        sites / 4
    } else {
        sites / 2
    }
}

/// Dynamic shared memory of `br_local` in bytes (`BR_SMEM_WORDS` words) for tiles of `th` rows,
/// in bands or not ([`bands`]). Bands and short occupancy tiles take 52 and 42 KB where tall
/// rows take 84: four tiles fit a multiprocessor of 228 KB instead of two.
pub(crate) fn shared_bytes(segments: bool, th: usize, bands: bool) -> usize {
    let planes = if segments { 5 } else { 2 };
    // Nodes, mask planes, run ranks, row bases, the two root masks.
    let words = max_nodes(segments, th, bands) + planes * th * 32 + th * 32 + 64 + 2 * th * 32;
    words * 4
}

/// Shared memory a block of `br_local_ana` is given at most: two blocks fit a multiprocessor of
/// 228 KB (H100, H200) with room to spare; three of bands (`ANA_MINB` in `bit_runs.cu`), whose
/// node array is half the rows'.
pub(super) const ANA_SHARED_TARGET: usize = 110 * 1024;
pub(super) const ANA_SHARED_TARGET_BANDS: usize = 75 * 1024;
/// Bytes per shared-memory accumulator of `br_local_ana` (`ACC_FIELDS` words).
pub(super) const ANA_SLOT_BYTES: usize = 36;
/// Fewest accumulators worth running `br_local_ana` with (below, block union-find analyses).
pub(super) const ANA_MIN_SLOTS: usize = 64;

/// Accumulators of `br_local_ana` in bands or not on a device whose blocks may opt in to
/// `max_optin` bytes of shared memory, or `None` when too few fit: as many as two blocks per
/// multiprocessor allow, three in bands (a tile with more multi-run components sums them in
/// rounds).
pub(crate) fn ana_slots(max_optin: usize, bands: bool) -> Option<u32> {
    let fixed = ana_shared_bytes(0, bands);
    let target = if bands {
        ANA_SHARED_TARGET_BANDS
    } else {
        ANA_SHARED_TARGET
    };
    let slots = max_optin.min(target).saturating_sub(fixed) / ANA_SLOT_BYTES;
    (slots >= ANA_MIN_SLOTS).then_some(slots as u32)
}

/// Accumulators' room that a tile's size histogram of `HIST_CAP + 1` words takes after them
/// when `br_local_ana` counts sizes (`Records::hist`).
const HIST_SLOTS: u32 = ((crate::cuda::analysis::HIST_CAP + 1) * 4).div_ceil(ANA_SLOT_BYTES) as u32;

/// The accumulators left to `br_local_ana` with `slots` when it also counts sizes
/// (`Records::hist`), or `None` when too few would remain (it then records every component).
pub(crate) fn direct_hist_slots(slots: u32) -> Option<u32> {
    slots
        .checked_sub(HIST_SLOTS)
        .filter(|&s| s as usize >= ANA_MIN_SLOTS)
}

/// Dynamic shared memory of a `br_local_ana` launch with `slots` accumulators, and the size
/// histogram after them when it counts sizes (`Records::hist`; the slots of
/// [`direct_hist_slots`], so that both take the module's allowance).
pub(crate) fn ana_launch_bytes(slots: u32, hist: bool, bands: bool) -> usize {
    ana_shared_bytes(slots + if hist { HIST_SLOTS } else { 0 }, bands)
}

/// Dynamic shared memory of `br_local_ana` (tall tiles, in bands or not) with `slots`
/// accumulators: `br_local`'s, the multi-run root mask, the scan scratch and the accumulators
/// (`OFF_ACC` in `bit_runs.cu`).
pub(crate) fn ana_shared_bytes(slots: u32, bands: bool) -> usize {
    let th = tile_h(false, false);
    shared_bytes(false, th, bands)
        + (max_nodes(false, th, bands) / 32 + 64) * 4
        + slots as usize * ANA_SLOT_BYTES
}

/// Dynamic shared memory of the module's `br_local` (its tiles' rows, in bands or not).
pub(crate) fn local_bytes(key: &ModuleKey) -> usize {
    shared_bytes(
        key.segments,
        tile_h(key.segments, key.short_tiles),
        bands(key),
    )
}

/// Dynamic shared memory a kernel of the module is given when loaded, or `None` for kernels
/// without (or, for `br_local_ana`, devices where it does not run).
pub(crate) fn kernel_shared_bytes(
    kernel: &str,
    key: &ModuleKey,
    max_optin: usize,
) -> Option<usize> {
    let bands = bands(key);
    match kernel {
        "br_local" | "br_local_counts" => Some(local_bytes(key)),
        "br_local_ana" if !key.segments => {
            ana_slots(max_optin, bands).map(|slots| ana_shared_bytes(slots, bands))
        }
        _ => None,
    }
}

/// Tiles across and down.
pub(super) fn tiles(job: &Job) -> (usize, usize) {
    (
        job.width.div_ceil(TILE_W),
        job.height.div_ceil(tile_h(job.segments, job.short_tiles)),
    )
}

/// Words of scratch: the mask of edge components' local roots (32 words per row and tile
/// column); canonical numbering adds the mask of interior roots, one count per (row, tile column)
/// and one per chunk of those.
/// The scratch bit runs needs: canonical numbering's root mask and counts.
pub(crate) fn scratch(job: &Job) -> FamilyScratch {
    FamilyScratch {
        aux: scratch_words(job),
        ..FamilyScratch::default()
    }
}

pub(crate) fn scratch_words(job: &Job) -> usize {
    match job.labels {
        LabelWidth::U32 if job.write_once => run_roots_word(job) + run_roots_words(job),
        LabelWidth::U32 => masks_words(job),
        LabelWidth::U64 => local_roots_word(job) + (2 * job.sites()).div_ceil(16) * 4,
    }
}

/// Words of the root masks and (canonical numbering) the counts, the chunk ranks and (32-bit
/// labels) the per-word root counts of the analysis ([`rank_masks`]).
pub(super) fn masks_words(job: &Job) -> usize {
    let entries = job.height * tiles(job).0;
    if job.numbering == Numbering::Raw {
        return 32 * entries;
    }
    pre_word(job) + pre_words(job)
}

/// Word offset of the roots before each mask word in its entry (`PRE`, a `u16` per word, canonical
/// 32-bit numbering): after the chunk ranks.
pub(super) fn pre_word(job: &Job) -> usize {
    chunk_word(job) + chunk_words(job)
}

/// Words of `PRE`: 32 `u16`s per (row, tile column) entry, for 32-bit labels only.
pub(super) fn pre_words(job: &Job) -> usize {
    match job.labels {
        LabelWidth::U32 => 16 * job.height * tiles(job).0,
        LabelWidth::U64 => 0,
    }
}

/// Device addresses of what ranks an interior root without its slot in the label array (a
/// forest-only [`run_pieces`]): the interior-and-global root mask, the counts per entry, the
/// scanned chunk ranks and the roots before each mask word (`ana_records` takes them).
pub(crate) fn rank_masks(job: &Job, bufs: &Buffers) -> [u64; 4] {
    let entries = (job.height * tiles(job).0) as u64;
    let mask = bufs.aux + 32 * entries * 4;
    let counts = mask + 32 * entries * 4;
    [
        mask,
        counts,
        bufs.aux + (chunk_word(job) * 4) as u64,
        bufs.aux + (pre_word(job) * 4) as u64,
    ]
}

/// Whether a labeling into 32-bit labels writes each label once: `br_local` keeps each run's
/// local root (`RT`, a `u16` a run) and writes only the forest, and `br_write` writes every
/// site's final label after the seams are merged, in place of `br_local` writing every site and
/// `br_final` reading them all and writing those of components that cross a seam. Not for
/// occupancy lattices of fewer than three tall tiles per multiprocessor, whose time is latency:
/// there `br_write`'s chain of dependent loads (the lattice, the row's first run, its runs'
/// roots, their slots) made 2048² 3–15 % slower on an H200 and 2816² (264 tall tiles) 4–8 %,
/// while 8192² and 16384² got 3–9 % faster.
pub(crate) fn write_once(segments: bool, h: usize, w: usize, sms: u32) -> bool {
    let tall = h.div_ceil(32).saturating_mul(w.div_ceil(TILE_W));
    segments || tall >= 3 * sms as usize
}

/// Word offset of the write-once labeling's run roots (`RT`) in the scratch: after the masks and
/// counts, 16-byte aligned.
pub(super) fn run_roots_word(job: &Job) -> usize {
    masks_words(job).next_multiple_of(4)
}

/// Words of `RT`: `RT_TILE` `u16`s a tile: its rows' first nodes, then as many nodes as a tile
/// can hold (half its sites for occupancy, all of them for segments).
pub(super) fn run_roots_words(job: &Job) -> usize {
    let (tx, ty) = tiles(job);
    let th = tile_h(job.segments, job.short_tiles);
    let nodes = if job.segments {
        th * TILE_W
    } else {
        th * TILE_W / 2
    };
    (tx * ty * (th + nodes)).div_ceil(2).next_multiple_of(4)
}

/// Word offset of the 64-bit build's local roots (`LL`, a `u16` a site) in the scratch: after
/// the masks and counts, 16-byte aligned.
pub(super) fn local_roots_word(job: &Job) -> usize {
    masks_words(job).next_multiple_of(4)
}

/// Word offset of the chunk ranks in the scratch (canonical numbering): after the two masks and
/// the counts, 8-byte aligned for 64-bit ranks.
pub(super) fn chunk_word(job: &Job) -> usize {
    let entries = job.height * tiles(job).0;
    let at = 65 * entries;
    match job.labels {
        LabelWidth::U32 => at,
        LabelWidth::U64 => at.next_multiple_of(2),
    }
}

/// Words of the chunk ranks: one label per chunk of [`COUNT_CHUNK`] entries.
pub(super) fn chunk_words(job: &Job) -> usize {
    let chunks = (job.height * tiles(job).0).div_ceil(COUNT_CHUNK);
    (chunks * job.labels.bytes() / 4).next_multiple_of(4)
}

/// Checks that a job of 64-bit labels fits the kernels' 32-bit grid and mask indices: fewer than
/// 2^31 rows and columns (the lattice geometry and tile origins are 32-bit), fewer than 2^31
/// tiles (the grid) and at most 2^32 − 1 root-mask words (32 per row and tile column).
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the limit.
pub(crate) fn check_wide(job: &Job) -> Result<()> {
    const SIDE: usize = 1 << 31;
    let (h, w) = (job.height, job.width);
    let (tx, ty) = tiles(job);
    let words = h.checked_mul(tx).and_then(|e| e.checked_mul(32));
    let fits = h < SIDE
        && w < SIDE
        && tx * ty < SIDE
        && words.is_some_and(|words| words <= u32::MAX as usize);
    if fits {
        Ok(())
    } else {
        Err(crate::Error::InvalidArgument(format!(
            "a {h}×{w} lattice is beyond the GPU's 64-bit labeling: it takes fewer than 2^31 \
             rows and columns and at most 2^32 − 1 words of root mask (32 per row and \
             1024-column tile, here {})",
            words.map_or("more than 2^64".to_string(), |w| w.to_string())
        )))
    }
}
