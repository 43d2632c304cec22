//! Bit runs: run-based union-find on bit-packed rows in shared-memory tiles, each tile labeled
//! once — the GPU fast path.
//!
//! A tile is 32 rows × 1024 columns (16 rows for segments and for 4-connected labelings:
//! [`short_tiles`]); one thread block of 512
//! threads holds it as 32-bit row masks, one word per lane, so run starts, the contacts between
//! rows and the ranks of runs cost a few bit operations and popcounts per 32 sites. The union-find nodes
//! are the tile's horizontal runs, in shared memory; vertical unions happen only where a contact
//! between two runs begins. The tile then writes every site's label as its local root + 1,
//! coalesced: components that stay inside a tile are finished, and the label array itself is the
//! global forest in which the others meet (only local roots' slots are linked).
//!
//! - `br_local` labels each tile and writes every site, and the mask of the tiles' edge
//!   components' local roots (canonical numbering: also of their interior roots).
//! - `br_merge` unites the sites facing each other across tile seams and the periodic edges
//!   (atomicMin linking, finds starting at local roots). A contact that repeats one another
//!   thread unites is skipped from the lattice alone (sites joined within a tile are of one local
//!   component), so only the contacts left load labels; a thread takes two columns of a large
//!   4-connected lattice's row seams ([`merge_cols`]).
//! - `br_flatten` points every edge component's local root straight at its global root
//!   (canonical: and adds that root to the mask).
//! - Canonical only: `br_count` and `canon_scan` count and scan the mask's roots per (row, tile
//!   column) in raster order; `br_publish` writes `FLAG | rank` into every root, `br_spread` into
//!   the edge components' other local roots (write once: `br_rank_edges` does both at once for
//!   the edge components, see below).
//! - `br_final`, elementwise: a site whose local root points at another root takes that root's
//!   label (raw), or every site takes its rank + 1 (canonical).
//!
//! **Write once** ([`write_once`]: 32-bit labelings of lattices of at least three tall tiles
//! per multiprocessor). The tile pass writes only the forest (the labels of tile-edge
//! sites and edge components' local roots' slots) and, per tile, `RT`: its rows' first run and
//! each run's local root as a tile position (a `u16` a run); raw numbering counts the interior
//! components there. After the seams, the flatten (raw: which leaves only the global roots in the
//! edge-root mask, counted by `br_count_roots`) and the counts, `br_rank_edges` (canonical) gives
//! each edge component's local root `FLAG |` its global root's rank, read from the masks as any
//! root's rank can be (the roots before it: the chunk's, the (row, tile column)'s, the word's and
//! those below it in its word). A thread reads and writes only its own mask word's slots: no
//! scattered store of each root's rank and no second pass copying it into the other local roots
//! (`br_publish` and `br_spread` took 206 µs at 16384², 4-connected, `br_rank_edges` takes 157).
//! Then `br_write` takes a warp per tile row: the row's runs from the lattice, their roots from
//! `RT`, their labels from the roots' slots or the masks (in shared memory), then every site
//! written once, coalesced. It replaces the tile pass's full write of the labels and
//! `br_final`'s read and rewrite of them.
//!
//! **Bands** (8-connected occupancy in 32-row tiles, 32-bit labels: labelings of tall tiles and the
//! cluster analysis; `BANDS` in `bit_runs.cu`): any two occupied sites of a two-row band in the
//! same or neighbouring columns are 8-neighbours, so the nodes are the runs of each band's two rows
//! ORed (BBDT's 2 × 2 blocks, done with runs, as the CPU strips' `src/cpu/strips/bands.rs` does),
//! half as many as the rows' at 8-connected p_c, a third at p = 0.5927, an eighth at density 0.8,
//! and only a band's second row meets the next band's first. A node's own fields are its first
//! site, found for the runs that have one in the band's first row by one 1024-bit add across the
//! warp; after the unions a local root takes the least of its band's nodes', so the local roots
//! (and the labels) are those of the rows' union-find. `br_write` then takes a warp per band, and
//! the analysis's records count a band run's sites in each of its rows (the column sums by
//! popcounts against the bit-index patterns). 8-connected labelings take bands in tall tiles at
//! every size: in short tiles (8 bands to 16 warps) they were 3–6 µs slower at 2048², whose
//! tiles' time is their latency.
//!
//! **Four tiles a multiprocessor.** A tile's node array is most of its shared memory. Bands
//! and short tiles need 8192 nodes at most (a quarter and a half of their sites), so their tile
//! takes 52 and 42 KB where tall rows take 84, and `br_local` is compiled for four blocks a
//! multiprocessor (32 registers) instead of two: the tiles' latency, which the tile pass is
//! bound by, is hidden by twice as many tiles (16384² on an H200: 8-connected 2.22 → 1.82 ms raw,
//! 4-connected in short tiles 2.28 → 2.17). The analysis's band tiles take 75 KB with their
//! accumulators, three a multiprocessor (`ANA_MINB`).
//!
//! For the cluster analysis ([`run_pieces`]) the tile pass is `br_local_ana`: once the tile's
//! runs point at their local roots it sums each multi-run component's size, coordinate sums and
//! extremes in shared memory (runs of one component side by side in a warp are reduced by
//! shuffles first) and writes one [`Records`] entry per local component; `br_final` is skipped
//! unless labels are wanted, and `ana_records` (`kernels/analysis.cu`) adds the records into the
//! pieces' accumulators once the roots are ranked. Without labels the tile pass writes only the
//! forest (`forest_only`: the labels of tile-edge sites and edge components' local roots' slots),
//! `br_publish` ranks edge components' roots only, `br_spread` is skipped, and `ana_records`
//! ranks interior roots from the masks (`br_count`'s per-word counts, [`rank_masks`]).
//!
//! Without write-once the lattice is read once; the labels are written by the tiles and then read
//! and, where a component crosses a tile seam (raw) or everywhere (canonical), written again. The
//! scratch is one bit per site (two for canonical numbering, plus a count per (row, tile column)),
//! and a byte per site for `RT` when writing once.
//!
//! **64-bit labels** ([`LabelWidth::U64`], `LABEL64` in `bit_runs.cu`) label lattices of any
//! size (beyond [`MAX_SITES`](crate::MAX_SITES)) with 64-bit site indices, label slots,
//! `atomicMin`s, `FLAG` (bit 63), ranks (`br_scan` scans the 64-bit chunk ranks) and count; the
//! tiles' shared-memory union-find, the root masks and the per-(row, tile column) counts stay
//! 32-bit. One change of plan saves bytes: the tile pass does not write every site's label
//! (8 bytes) but its local root's position in the tile + 1 as a `u16` (`LL`, 2 bytes a site, in
//! the scratch), and into the label array only each local root's own slot (`r + 1`). The
//! forest's passes (`br_merge`, `br_flatten`, ranking) read and write local roots' slots only, so
//! they run as before, with `br_merge` finding a seam site's local root from `LL`; the last pass
//! reads `LL` and the local root's slot and writes every site's 8-byte label once. The 32-bit
//! build compiles to the same PTX as before the 64-bit one existed. Limits of the 64-bit build:
//! fewer than 2^31 rows and columns, and at most 2^32 − 1 words of root mask (32 per row and tile
//! column: about 1.4·10^11 sites), each a typed error.
//!
//! Bytes per site each pass moves (u8 lattice; f = the fraction of occupied sites in components
//! that cross a tile seam, p the occupied fraction; masks are 1 bit a site; roots, ≈ 0.03–0.07 a
//! site at p_c, cost a scattered slot each, not counted):
//!
//! | pass | 32-bit: reads / writes | 64-bit: reads / writes |
//! | --- | --- | --- |
//! | `br_local` | 1 lattice / 4 labels + 1/8 ER [+ 1/8 RB] | 1 lattice / 2 `LL` + 1/8 ER [+ 1/8 RB] + 8 per local root |
//! | `br_merge` | seam sites only (≈ 1/32 + 1/1024 of them) | the same, `LL` instead of labels |
//! | `br_flatten` | 1/8 ER (up to 8 threads a word on small lattices) + a find per edge root | the same |
//! | `br_count`, `br_publish`, `br_spread` (canonical) | 3/8 (RB twice, ER) / 4 per root | 3/8 / 8 per root |
//! | `br_final` | 4 labels (+ local roots, cached) / raw 4f, canonical 4p | 2 `LL` (+ local roots' slots, cached) / 8 |
//! | in all, at least | raw 9.25 + 4f, canonical 9.75 + 4p | raw 13.25, canonical 13.75 |
//!
//! Write once (32-bit, tall tiles): `br_local` reads 1 and writes `RT` (2 bytes a run: ≈ 0.5 a
//! site at p_c, at most 1) and the tile edges' labels; `br_write` reads 1 lattice + `RT` + the
//! roots' slots (cached) and writes 4 labels: in all about 7 + 1/4 bytes a site against 9.25 + 4f
//! (f ≈ 0.46 at p_c in 32 × 1024 tiles).
//!
//! (Widening the 32-bit plan as it is would move 17.25 + 8f and 17.75 + 8p.) The
//! instruction-bound part of `br_local`, the tile's union-find, is the same in both builds.

use super::canonical::Geo;
use super::engine::{Buffers, Job};
use super::family::LabelWidth;
use super::runtime::{kernel_args, Gpu, Module};
use super::Numbering;
use crate::lattice::Connectivity;
use crate::Result;

// The size counts' forest (n_s and the flags).
mod counts;
mod layout;
// The cluster analysis's records.
mod pieces;
pub(crate) use counts::{run_counts, Counts};
pub(crate) use layout::{
    ana_launch_bytes, ana_slots, bands, check_wide, direct_hist_slots, kernel_shared_bytes,
    local_bytes, rank_masks, scratch, shared_bytes, short_tiles, tile_h, write_once,
};
use layout::{local_roots_word, run_roots_word, tiles};
pub(crate) use pieces::{record_capacity, run_pieces, Pieces, Records, RECORD_BYTES};

/// The family's kernel file.
pub(crate) const FILE: &str = "bit_runs.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &[
    "br_local",
    "br_local_ana",
    "br_merge",
    "br_flatten",
    "br_count",
    "br_publish",
    "br_spread",
    "br_rank_edges",
    "br_final",
    "br_write",
    "br_count_roots",
    "ana_records",
    "ana_border",
    "ana_hist",
    "ana_hist_records",
    "br_local_counts",
    "ns_edges",
    "ns_hist",
    "ns_border",
    "ns_seam_nodes",
    "ns_seam_link",
    "ns_seam_sum",
    "ns_seam_count",
];

/// The kernels of the 64-bit build (no cluster analysis; `br_scan` scans the 64-bit ranks).
pub(crate) const KERNELS_64: &[&str] = &[
    "br_local",
    "br_merge",
    "br_flatten",
    "br_count",
    "br_publish",
    "br_spread",
    "br_final",
    "br_scan",
];

/// Columns per tile (`TW` in `bit_runs.cu`).
pub(crate) const TILE_W: usize = 1024;
/// Threads per tile (`BR_THREADS`).
const THREADS: u32 = 512;
/// Entries per chunk of `br_count` (`BR_CHUNK`).
const COUNT_CHUNK: usize = 256;

/// Thread blocks of the elementwise `br_final`: a few waves of a large GPU, grid-stride beyond.
const FINAL_BLOCKS: usize = 4096;

/// Queues the labeling of `job`.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    queue(gpu, module, job, bufs, Extra::None)?;
    final_pass(gpu, module, job, bufs)
}

/// What a run of the passes adds to a labeling.
#[derive(Clone, Copy)]
enum Extra<'a> {
    None,
    /// The cluster analysis's records ([`run_pieces`]).
    Pieces(&'a Pieces<'a>),
    /// The size counts ([`run_counts`]).
    Counts(&'a Counts),
}

/// Queues the last pass (after a kernel, whose end it may overlap: `Gpu::launch_after`): the
/// labels of the last [`run_pieces`] (or of a labeling's earlier stages), by `br_final`, or by
/// `br_write` for a write-once labeling.
pub(crate) fn final_pass(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let (labels, count) = (bufs.labels, bufs.count);
    if job.write_once && job.labels == LabelWidth::U32 {
        let geo = Geo::new(job);
        let tiles_x = tiles(job).0 as u32;
        let rt = bufs.aux + (run_roots_word(job) * 4) as u64;
        let canon = u32::from(job.numbering == Numbering::Canonical);
        let vec = load_store_bits(job, bufs.input, labels);
        // Canonical: interior roots are ranked from the masks (`BrRanks`).
        let ranks = if canon == 1 {
            rank_masks(job, bufs)
        } else {
            [0; 4]
        };
        // A warp a row, eight rows a block.
        let grid = (tiles_x, geo.h.div_ceil(8).min(65535), 1);
        // SAFETY: `input` and `labels` hold the job's sites, `rt` the run roots `br_local` wrote
        // (Engine::prepare sized the scratch for them); the arguments match `br_write`'s.
        return unsafe {
            gpu.launch_after(
                module.func("br_write"),
                grid,
                (256, 1, 1),
                &mut kernel_args![bufs.input, labels, rt, geo, tiles_x, vec, canon, ranks],
            )
        };
    }
    if job.labels == LabelWidth::U64 {
        let geo = Geo::new(job);
        let ll = bufs.aux + (local_roots_word(job) * 4) as u64;
        let canon = u32::from(job.numbering == Numbering::Canonical);
        // 4-byte loads of two local roots and 16-byte stores of two labels: even rows.
        let vec = u32::from(labels % 16 == 0 && job.width % 2 == 0);
        // About 4 rows a block (8 sites a thread), to keep loads in flight per thread.
        let grid = (geo.w.div_ceil(512), geo.h.div_ceil(4).min(65535), 1);
        // SAFETY: `labels` holds the job's sites, the local roots the job's `u16`s at `ll` in the
        // scratch and `count` one `u64` (Engine::prepare); the arguments match `br_final`'s.
        return unsafe {
            gpu.launch_after(
                module.func("br_final"),
                grid,
                (256, 1, 1),
                &mut kernel_args![labels, ll, geo, canon, vec, count],
            )
        };
    }
    let sites = job.sites() as u64;
    let canon = u32::from(job.numbering == Numbering::Canonical);
    let final_vec = u32::from(labels % 16 == 0);
    let final_blocks = (job.sites().div_ceil(4 * 256)).clamp(1, FINAL_BLOCKS) as u32;
    // SAFETY: `labels` holds the job's sites and `count` one word (Engine::prepare).
    unsafe {
        gpu.launch_after(
            module.func("br_final"),
            (final_blocks, 1, 1),
            (256, 1, 1),
            &mut kernel_args![labels, sites, canon, final_vec, count],
        )
    }
}

/// The tile kernels' `vec` bits 0 and 1: 16-byte loads of u8 rows (`input` 16-byte aligned,
/// rows a multiple of 16 sites), and stores of 4 labels a lane (16 bytes of u32 labels; 8 bytes
/// of the 64-bit build's u16 local roots, 16-byte aligned in the scratch) at `stores_at`, so rows
/// must start at a multiple of 4 sites.
fn load_store_bits(job: &Job, input: u64, stores_at: u64) -> u32 {
    u32::from(job.site.size() == 1 && input % 16 == 0 && job.width % 16 == 0)
        | (u32::from(stores_at % 16 == 0 && job.width % 4 == 0) << 1)
}

/// Columns a thread of `br_merge` takes along a row seam: two in 4-connected 32-bit labelings
/// whose row seams hold at least [`MERGE_PAIRS_PER_THREAD`] sites a resident thread of the
/// device's `sms` multiprocessors, one otherwise. A contact's first column is at most every
/// other one on occupancy, so a thread of two columns unites at most once, and a warp waits for
/// one union's chain of loads over half as many warps: on an H200, 16384² raw labels took 2.08–2.09
/// ms against 2.13–2.15 and 8192² 0.580–0.581 against 0.587–0.591, but 4096² (a million seam
/// sites) 0.178–0.182 against 0.176 and 2048² 0.073 against 0.067, where half the threads leave
/// the device idle.
fn merge_cols(job: &Job, row_seam_sites: u64, sms: u32) -> u32 {
    let narrow4 = job.connectivity == Connectivity::Four && job.labels == LabelWidth::U32;
    let busy = row_seam_sites >= MERGE_PAIRS_PER_THREAD * 2048 * u64::from(sms);
    if narrow4 && busy {
        2
    } else {
        1
    }
}

/// Row-seam sites a resident thread (2048 a multiprocessor) from which `br_merge` takes two
/// columns a thread ([`merge_cols`]): between 4096² (about 4) and 8192² (16) on 132
/// multiprocessors.
const MERGE_PAIRS_PER_THREAD: u64 = 8;

/// `br_merge`'s mode, split, columns a row-seam thread and grid (CTAs of 256) for a lattice of
/// `w` × `h` sites in `tx` × `ty` tiles on `sms` multiprocessors: row seams (mode 0,
/// [`merge_cols`] columns a thread) and column seams (mode 1, a thread a row), or both in one
/// launch (mode 2: the rows' seams in the first `split` y blocks, the columns' in the rest, so
/// that no block is left without a seam).
fn merge_grid(
    job: &Job,
    w: u32,
    h: u32,
    tx: u32,
    ty: u32,
    sms: u32,
) -> (u32, u32, u32, (u32, u32, u32)) {
    let wrap_x = u32::from(job.boundary.wraps_x());
    let wrap_y = u32::from(job.boundary.wraps_y());
    let (row_seams, col_seams) = (ty - 1 + wrap_y, tx - 1 + wrap_x);
    let cols = merge_cols(job, u64::from(row_seams) * u64::from(w), sms);
    let row_x = w.div_ceil(256 * cols);
    let col_x = h.div_ceil(256);
    let (mode, split, grid) = match (row_seams > 0, col_seams > 0) {
        (true, true) => {
            let (row_blocks, col_blocks) = (row_seams.min(32768), col_seams.min(32767));
            (
                2,
                row_blocks,
                (row_x.max(col_x), row_blocks + col_blocks, 1),
            )
        }
        (true, false) => (0, 0, (row_x, row_seams.min(65535), 1)),
        (false, true) => (1, 0, (col_x, col_seams.min(65535), 1)),
        (false, false) => (0, 0, (0, 0, 0)),
    };
    (mode, split, cols, grid)
}

/// Threads per root-mask word of `br_flatten`, as a shift: enough for about 2^20 threads in all
/// (a small lattice's few words hold many roots each), at most 8 a word.
fn flatten_split(entries: u32) -> u32 {
    let words = 32 * u64::from(entries);
    (0..3).find(|&s| words << s >= 1 << 20).unwrap_or(3)
}

/// `br_flatten`'s CTAs: a thread a word (or 2^split threads), or with the size counts up to 16
/// stretches of 256 threads' words a CTA, keeping 1024 or more CTAs: each CTA sums its roots'
/// sizes in a shared table first, so fewer CTAs send fewer atomics into the largest cluster's
/// root (at p_c it holds a quarter of the edge local roots).
fn flatten_ctas(entries: u32, split: u32, sizes: bool) -> u32 {
    let ctas = ((32 * entries) << split).div_ceil(256);
    if sizes {
        ctas.div_ceil((ctas / 1024).clamp(1, 16))
    } else {
        ctas
    }
}

/// Queues everything before `br_final`; with pieces, the tile pass writes the analysis records,
/// with counts the sizes.
fn queue(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers, extra: Extra<'_>) -> Result<()> {
    let pieces = match extra {
        Extra::Pieces(p) => Some(p),
        _ => None,
    };
    let sized = match extra {
        Extra::Counts(c) => Some(c),
        _ => None,
    };
    let geo = Geo::new(job);
    let (tiles_x, tiles_y) = tiles(job);
    let ntiles = (tiles_x * tiles_y) as u32;
    let (tx, ty) = (tiles_x as u32, tiles_y as u32);
    let (input, labels, count) = (bufs.input, bufs.labels, bufs.count);
    let (wrap_x, wrap_y) = (job.boundary.wraps_x() as u32, job.boundary.wraps_y() as u32);
    let wide = job.labels == LabelWidth::U64;
    let ll = bufs.aux + (local_roots_word(job) * 4) as u64;
    let stores_at = if wide { ll } else { labels };
    // Bit 2: the analysis's forest only (`run_pieces`); bit 3: a write-once labeling's forest
    // and run roots (`br_write` writes the labels).
    let forest_only = (pieces.is_some_and(|p| p.forest_only) || sized.is_some()) && !wide;
    let write_once = job.write_once && matches!(extra, Extra::None) && !wide;
    let rt = if write_once {
        bufs.aux + (run_roots_word(job) * 4) as u64
    } else {
        0
    };
    let vec = load_store_bits(job, input, stores_at)
        | (u32::from(forest_only) << 2)
        | (u32::from(write_once) << 3);
    // A raw write-once labeling counts its clusters in the tile pass (interior components) and
    // in br_count_roots (the edge components' global roots, which br_flatten leaves alone in
    // the edge-root mask); `br_final` counts them otherwise.
    let canonical = job.numbering == Numbering::Canonical;
    let tile_count = if write_once && !canonical { count } else { 0 };
    // (The size counts' histogram pass reads the global roots from the mask too.)
    let globals = u32::from(tile_count != 0 || sized.is_some());
    let sizes = sized.map_or(0, |c| c.sf);
    let key = job.key();
    let (tile_bands, smem) = (bands(&key), local_bytes(&key) as u32);
    let entries = job.height * tiles_x;
    let chunks = entries.div_ceil(COUNT_CHUNK);
    // Scratch at `bufs.aux`: the edge-root mask, then (canonical) the root mask, the counts and
    // the chunk counts.
    let edge_roots = bufs.aux;
    let (mask, counts, chunk_counts, pre) = if canonical {
        let [mask, counts, chunks, pre] = rank_masks(job, bufs);
        (mask, counts, chunks, pre)
    } else {
        (0, 0, 0, 0)
    };
    // Forest only and write once: interior roots are ranked from the masks (PRE), only edge
    // roots published.
    let ranked_by_masks = forest_only || write_once;
    let pre = if ranked_by_masks { pre } else { 0 };
    // The analysis: br_publish sets the edge pieces' rows empty (ER marks their roots).
    let (er, rows, moments) = match pieces {
        Some(p) => (edge_roots, p.rows, u32::from(p.moments)),
        None if write_once => (edge_roots, 0, 0),
        None => (0, 0, 0),
    };
    let edge_only = u32::from(ranked_by_masks);
    let (entries, chunks) = (entries as u32, chunks as u32);
    if !canonical {
        // Before the passes that count (the tile pass and br_count_roots of a write-once
        // labeling, else br_final).
        gpu.memset_zero(count, job.labels.bytes())?;
    }
    // SAFETY (`launch_after`: every kernel after the tile pass waits for the one before it,
    // `pdl_wait`, before it reads or writes what that one wrote; br_merge and br_write read
    // the lattice first): the arguments match the kernels' parameters; `input` and `labels`
    // hold the job's sites, the scratch words of `scratch_words` lie at `bufs.aux`
    // (Engine::prepare), the records (when given) hold `rec.cap` entries and two counts, and the
    // tile kernels' dynamic shared memory limits were raised when the module was loaded.
    unsafe {
        match pieces {
            None if wide => gpu.launch_shared(
                module.func("br_local"),
                (ntiles, 1, 1),
                (THREADS, 1, 1),
                smem,
                &mut kernel_args![input, labels, ll, geo, tx, vec, mask, edge_roots],
            )?,
            None => match sized {
                Some(c) => {
                    let c = *c;
                    gpu.launch_shared(
                        module.func("br_local_counts"),
                        (ntiles, 1, 1),
                        (THREADS, 1, 1),
                        smem,
                        &mut kernel_args![input, labels, geo, tx, vec, edge_roots, c],
                    )?
                }
                None => gpu.launch_shared(
                    module.func("br_local"),
                    (ntiles, 1, 1),
                    (THREADS, 1, 1),
                    smem,
                    &mut kernel_args![
                        input, labels, geo, tx, vec, mask, edge_roots, rt, tile_count
                    ],
                )?,
            },
            Some(p) => {
                let rec = *p.rec;
                gpu.memset_zero(rec.count, 8)?;
                gpu.launch_shared(
                    module.func("br_local_ana"),
                    (ntiles, 1, 1),
                    (THREADS, 1, 1),
                    ana_launch_bytes(rec.slots, rec.hist != 0, tile_bands) as u32,
                    &mut kernel_args![input, labels, geo, tx, vec, mask, edge_roots, rec],
                )?
            }
        }
        let (mode, row_blocks, cols, grid) = merge_grid(job, geo.w, geo.h, tx, ty, gpu.sms);
        if grid.0 > 0 && wide {
            gpu.launch_after(
                module.func("br_merge"),
                grid,
                (256, 1, 1),
                &mut kernel_args![input, labels, ll, geo, tx, ty, wrap_x, wrap_y, mode, row_blocks],
            )?;
        } else if grid.0 > 0 {
            gpu.launch_after(
                module.func("br_merge"),
                grid,
                (256, 1, 1),
                &mut kernel_args![
                    input, labels, geo, tx, ty, wrap_x, wrap_y, mode, row_blocks, cols
                ],
            )?;
        }
        let split = flatten_split(entries);
        gpu.launch_after(
            module.func("br_flatten"),
            (flatten_ctas(entries, split, sizes != 0), 1, 1),
            (256, 1, 1),
            &mut kernel_args![labels, geo, edge_roots, mask, tx, entries, split, globals, sizes],
        )?;
        if tile_count != 0 {
            let words = 32 * entries;
            gpu.launch_after(
                module.func("br_count_roots"),
                (words.div_ceil(256 * 16).clamp(1, 4096), 1, 1),
                (256, 1, 1),
                &mut kernel_args![edge_roots, words, count],
            )?;
        }
        if canonical {
            gpu.launch_after(
                module.func("br_count"),
                (chunks, 1, 1),
                (256, 1, 1),
                &mut kernel_args![mask, entries, counts, chunk_counts, pre],
            )?;
            let scan = match job.labels {
                LabelWidth::U32 => "canon_scan",
                LabelWidth::U64 => "br_scan",
            };
            gpu.launch_after(
                module.func(scan),
                (1, 1, 1),
                (1024, 1, 1),
                &mut kernel_args![chunk_counts, chunks, count],
            )?;
            if write_once {
                // Every edge component's local root takes its global root's rank from the
                // masks (those above: write once ranks by the masks, so `pre` is kept);
                // br_write ranks the interior roots the same way.
                let ranks = [mask, counts, chunk_counts, pre];
                gpu.launch_after(
                    module.func("br_rank_edges"),
                    ((32 * entries).div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![labels, geo, edge_roots, tx, entries, ranks],
                )?;
                return Ok(());
            }
            gpu.launch_after(
                module.func("br_publish"),
                (entries.div_ceil(8), 1, 1),
                (256, 1, 1),
                &mut kernel_args![
                    labels,
                    geo,
                    mask,
                    counts,
                    chunk_counts,
                    tx,
                    entries,
                    er,
                    edge_only,
                    rows,
                    moments
                ],
            )?;
            // Forest only: the analysis reads an edge component's rank through its global
            // root (analysis.cu: root_piece), and no label pass needs it in every local root.
            if !forest_only {
                gpu.launch_after(
                    module.func("br_spread"),
                    ((32 * entries).div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![labels, geo, edge_roots, tx, entries],
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
