//! The fast CPU labeler: run-based union-find over horizontal strips, in parallel, with a border merge.
//!
//! Each row is turned into bit masks (occupancy and "joined to the left neighbour"), so runs of
//! joined sites are found 64 columns at a time, and each run, not each site, is one union-find node.
//! Two rows are merged with one union per *maximal* stretch of vertical links (a stretch lies
//! inside one run of each row), and, for 8-connectivity, with a diagonal union only where no
//! vertical link already joins the two runs. Strips are labeled in parallel with local union-find
//! forests; their forests are concatenated, the seams (and, on a torus, the wrapping edges) are
//! merged, the roots are numbered in raster order in parallel, and a last parallel pass writes each
//! site's label from its run's number.
//!
//! Where most runs repeat the run above them (a spiral's one-site-wide legs, stripes:
//! `copies_pay`), labeling copies the node of the run above instead of making one per run
//! (`label_strip` with `copy`), so that millions of single-site runs share a few nodes and the
//! numbering costs next to nothing; a word of many runs that repeat those above is handed over
//! in one copy either way, and a label word that repeats the row above is copied from it.
//!
//! With 8-connectivity an occupancy lattice is scanned in bands of two rows ([`Bands`]): within
//! a band, the runs of its two rows' OR are its clusters, so a band has one node where its rows
//! had up to two rows of runs (an eighth of them at density 0.8), half the rows are merged, and
//! the labels are written lattice row by lattice row from the band's runs.
//!
//! Bytes moved: the input is read once and the labels written once; the runs' union-find arrays
//! (a few indices per run) are the only other traffic. Label images of 64 MiB and more are made
//! row by row in a cached staging row and streamed out word by word
//! ([`crate::core::stream`]), so that writing them does not read them from memory first; a word
//! that repeats the row above is then already in the staging row, and so is a word of zeros.
//!
//! Generic over the forest's index type `I` ([`Index`]: `u32`, or `u64` for lattices with more
//! runs than `u32` numbers) and the label type `L` (`u32` or `u64`): one algorithm, each width paid
//! only where it is needed.

use super::union_find::{find_readonly, number_roots, union, Index};
use crate::core::bits::{shl1, shr1, words, WORD};
use crate::lattice::{Boundary, Connectivity};
use crate::rule::JoinRule;
use ndarray::{ArrayViewMut2, Axis};
use rayon::prelude::*;

mod bands;
mod scan;
mod write;
use crate::core::stream::{stream_fence, Streamer, STREAM_BYTES};
pub(super) use bands::most_band_runs;
pub(crate) use bands::Bands;
use scan::{copies_pay, label_strip, merge_rows};
use write::{copy_forests, number_parallel, write_row, Above};

/// Per-row scratch masks, `words(w)` long each.
#[derive(Default)]
struct RowTemps<I = u32> {
    left_c: Vec<u64>,
    left_p: Vec<u64>,
    up: Vec<u64>,
    diag: Vec<u64>,
    a: Vec<u64>,
    b: Vec<u64>,
    cum_c: Vec<I>,
    cum_p: Vec<I>,
}

impl<I: Index> RowTemps<I> {
    fn resize(&mut self, nw: usize) {
        for v in [
            &mut self.left_c,
            &mut self.left_p,
            &mut self.up,
            &mut self.diag,
            &mut self.a,
            &mut self.b,
        ] {
            v.resize(nw, 0);
        }
        self.cum_c.resize(nw, I::default());
        self.cum_p.resize(nw, I::default());
    }
}

/// One horizontal strip: its rows' masks and its local union-find forest.
#[derive(Default)]
pub(super) struct Strip<I = u32> {
    pub(super) y0: usize,
    pub(super) rows: usize,
    /// Occupancy bits, `rows × words(w)`.
    pub(super) occ: Vec<u64>,
    /// Run-start bits (occupied and not joined to the left neighbour).
    pub(super) starts: Vec<u64>,
    /// Local label of each row's first run, and the row's number of runs.
    pub(super) row_base: Vec<I>,
    pub(super) row_runs: Vec<I>,
    /// Local union-find forest over the strip's runs (or, when labeling, over its nodes).
    pub(super) parent: Vec<I>,
    /// When labeling: the local node of each run ([`label_strip`] with `copy`). Its length only
    /// grows (to the strip's most runs): each run's entry is written before it is read.
    lab: Vec<I>,
    /// Which runs of the row being scanned have a node in `lab` (bit k: the row's run k).
    assigned: Vec<u64>,
    /// `same[y × words(w) + i]`: word `i` of the strip's lattice row `y > 0` holds the labels of
    /// the row above (each occupied site joined to the one above it, the same sites empty), so the
    /// write pass copies it. (Bands: two lattice rows a row.)
    same: Vec<bool>,
    /// For bands: the occupancy of each band's first and last lattice rows (`rows × words(w)`),
    /// empty otherwise.
    top: Vec<u64>,
    bottom: Vec<u64>,
    /// For bands: the row's runs with no site in the band's first row (bit `k`: the row's run
    /// `k`), whose new nodes come after the others'.
    second: Vec<u64>,
    /// Global label of the strip's first run.
    pub(super) offset: I,
    /// Roots among the strip's runs, and the number before the strip's first root.
    roots: I,
    /// The strip's labels whose parent lies in an earlier strip (numbering scratch).
    outside: Vec<I>,
    first_number: I,
    temps: RowTemps<I>,
}

/// A row as the merge sees it.
#[derive(Clone, Copy)]
pub(super) struct Row<'a, I = u32> {
    pub(super) y: usize,
    pub(super) occ: &'a [u64],
    /// The occupancy of the lattice rows that touch the row before and the row after: `occ`
    /// itself, or a band's first and last lattice rows.
    pub(super) top: &'a [u64],
    pub(super) bottom: &'a [u64],
    pub(super) starts: &'a [u64],
    /// Label of the row's first run.
    pub(super) base: I,
    pub(super) runs: I,
}

impl<I: Index> Strip<I> {
    /// Row `r` of the strip with strip-local run labels.
    pub(super) fn row_local(&self, r: usize, nw: usize) -> Row<'_, I> {
        let occ = &self.occ[r * nw..(r + 1) * nw];
        let (top, bottom) = self.edges(r, nw).unwrap_or((occ, occ));
        Row {
            y: self.y0 + r,
            occ,
            top,
            bottom,
            starts: &self.starts[r * nw..(r + 1) * nw],
            base: self.row_base[r],
            runs: self.row_runs[r],
        }
    }

    /// Band `r`'s first and last lattice rows' occupancy, for bands.
    #[inline]
    fn edges(&self, r: usize, nw: usize) -> Option<(&[u64], &[u64])> {
        (!self.top.is_empty()).then(|| {
            (
                &self.top[r * nw..(r + 1) * nw],
                &self.bottom[r * nw..(r + 1) * nw],
            )
        })
    }

    /// The global node of the strip's local run `j`: the run itself, or its `lab` with `copy`.
    #[inline]
    pub(super) fn node(&self, copy: bool, j: I) -> I {
        self.offset + self.local_node(copy, j)
    }

    /// The strip-local node of the strip's local run `j` (as [`Strip::node`], before the
    /// strips' offsets are set or without them).
    #[inline]
    pub(super) fn local_node(&self, copy: bool, j: I) -> I {
        if copy {
            self.lab[j.usize()]
        } else {
            j
        }
    }
}

/// The strip labeler's buffers, kept between calls so that a reused labeler does not allocate.
pub(crate) struct Scratch<I: Index = u32> {
    pub(super) strips: Vec<Strip<I>>,
    /// Global union-find forest (the strips' forests, concatenated).
    pub(super) parent: Vec<I>,
    /// `number[1 + label]`: the final cluster number of each run; `number[0]` is 0.
    number: Vec<I::Atomic>,
    seam: RowTemps<I>,
}

// By hand: a derive would ask `I::Atomic: Default`.
impl<I: Index> Default for Scratch<I> {
    fn default() -> Self {
        Scratch {
            strips: Vec::new(),
            parent: Vec::new(),
            number: Vec::new(),
            seam: RowTemps::default(),
        }
    }
}

/// Cumulative popcounts of `starts` before each word.
#[inline]
fn prefix_counts<I: Index>(starts: &[u64], cum: &mut [I]) {
    let mut c = I::default();
    for (k, &s) in cum.iter_mut().zip(starts) {
        *k = c;
        c = c + I::from_u32(s.count_ones());
    }
}

/// Label of the run that contains column `x` of a row (which must be occupied).
#[inline]
fn run_at<I: Index>(row: &Row<'_, I>, cum: &[I], x: usize) -> I {
    let (i, j) = (x / WORD, x % WORD);
    let m = row.starts[i] & (u64::MAX >> (63 - j));
    row.base + cum[i] + I::from_u32(m.count_ones()) - I::ONE
}

/// Calls `f(x)` for each set bit `x` of the word sequence produced by `word(i)`.
#[inline]
fn for_each_bit(nw: usize, mut word: impl FnMut(usize) -> u64, mut f: impl FnMut(usize)) {
    for i in 0..nw {
        let mut m = word(i);
        while m != 0 {
            f(i * WORD + m.trailing_zeros() as usize);
            m &= m - 1;
        }
    }
}

/// The strip and row index holding lattice row `y`, for strips of `chunk` rows.
#[inline]
fn locate(y: usize, chunk: usize) -> (usize, usize) {
    (y / chunk, y % chunk)
}

/// The most runs `rule`'s lattice of `h × w` sites can have: runs are cut by empty sites
/// (`⌈w/2⌉` a row), and in segment mode (`any_site_a_run`) also between occupied sites.
pub(crate) fn max_runs(h: usize, w: usize, any_site_a_run: bool) -> usize {
    let per_row = if any_site_a_run { w } else { w.div_ceil(2) };
    h.saturating_mul(per_row)
}

/// Labels the lattice of `rule` into `out` (scipy numbering); returns the number of clusters.
/// Runs on the current rayon pool with up to `strips` strips. The lattice must have at most
/// `I::MAX_NODES` runs (see [`max_runs`]), and at most `L`'s count of clusters.
pub(crate) fn label<R: JoinRule, I: Index, L: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    strips: usize,
    scratch: &mut Scratch<I>,
    out: ArrayViewMut2<'_, L>,
) -> usize {
    label_with(
        rule,
        connectivity,
        boundary,
        strips,
        None,
        None,
        scratch,
        out,
    )
}

/// [`label`], with node copying as `copy` says (`None`: as [`copies_pay`] judges; bands always
/// copy, which is how their new nodes come in the order of their clusters' first sites), and
/// the label image streamed out as `stream` says (`None`: from [`STREAM_BYTES`] up).
#[allow(clippy::too_many_arguments)]
fn label_with<R: JoinRule, I: Index, L: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    strips: usize,
    copy: Option<bool>,
    stream: Option<bool>,
    scratch: &mut Scratch<I>,
    mut out: ArrayViewMut2<'_, L>,
) -> usize {
    let (h, w) = rule.dim();
    let banded = R::BAND_ROWS > 1;
    let copy = banded || copy.unwrap_or_else(|| copies_pay(rule, h, w, &mut scratch.seam));
    let chunk = forest(
        rule,
        connectivity,
        boundary,
        strips,
        copy,
        scratch,
        &mut Vec::<()>::new(),
        |_, _| {},
    );
    if chunk == 0 {
        return 0;
    }
    let nw = words(w);
    let n = scratch.parent.len();
    let nstrips = scratch.strips.len();
    let Scratch {
        strips,
        parent,
        number,
        ..
    } = scratch;

    // Number the roots in raster order. (Bands: room for the most nodes of the shape, as
    // `label_strip` makes room for the strips' runs.)
    let most = bands::most_band_runs(h, w);
    if banded && number.capacity() < most + 1 {
        crate::core::alloc::grow_zeroed(number, most + 1);
    }
    crate::core::alloc::grow_zeroed(number, n + 1);
    let count = if nstrips == 1 {
        let nums = I::plain(number);
        nums[0] = I::default();
        number_roots(parent, nums, 1)
    } else {
        number_parallel(strips, parent, number)
    };

    // Write each site's label from its run's number: lattice row `y` of the strip is row
    // `y / band` of its rule, and writes the sites of its `y % band`th lattice row.
    let band = R::BAND_ROWS;
    let stream = stream.unwrap_or(out.len() * std::mem::size_of::<L>() >= STREAM_BYTES);
    out.axis_chunks_iter_mut(Axis(0), chunk * band)
        .into_par_iter()
        .zip(strips.par_iter())
        .for_each(|(mut rows, s)| {
            let n = rows.nrows();
            // Contiguous rows: words that repeat the row above are copied from it.
            if let Some(buf) = rows.as_slice_mut() {
                if stream {
                    // Each row made in one cached staging row, which still holds the row above
                    // where a word repeats it, and streamed out word by word as it is made.
                    let mut stage = vec![L::default(); w];
                    let mut zero = vec![true; nw];
                    for (y, dst) in buf.chunks_exact_mut(w).enumerate() {
                        let (r, half) = (y / band, y % band);
                        let above = Some(Above::InPlace {
                            same: (y > 0).then(|| &s.same[y * nw..][..nw]),
                            zero: &mut zero,
                        });
                        let mut sink = Streamer::new(dst);
                        write_row(
                            s,
                            copy,
                            r,
                            half,
                            nw,
                            number,
                            &mut stage,
                            above,
                            Some(&mut sink),
                        );
                        sink.finish(&stage);
                    }
                    stream_fence();
                    return;
                }
                for y in 0..n {
                    let (r, half) = (y / band, y % band);
                    let (above, dst) = buf.split_at_mut(y * w);
                    let above = (y > 0)
                        .then(|| Above::Copy(&above[(y - 1) * w..], &s.same[y * nw..][..nw]));
                    write_row(s, copy, r, half, nw, number, &mut dst[..w], above, None);
                }
                return;
            }
            for (y, mut out_row) in rows.axis_iter_mut(Axis(0)).enumerate() {
                let (r, half) = (y / band, y % band);
                match out_row.as_slice_mut() {
                    Some(dst) => write_row(s, copy, r, half, nw, number, dst, None, None),
                    None => {
                        let mut tmp = vec![L::default(); w];
                        write_row(s, copy, r, half, nw, number, &mut tmp, None, None);
                        out_row.iter_mut().zip(&tmp).for_each(|(d, &v)| *d = v);
                    }
                }
            }
        });
    scratch.restore();
    count.usize()
}

/// The rows per strip for `strips` strips of an `h`-row lattice (strips of at least 16 rows:
/// thinner ones cost more in seams than they gain).
fn strip_rows(h: usize, strips: usize) -> usize {
    h.div_ceil(strips.clamp(1, h.div_ceil(16).max(1)))
}

/// The union-find forest of the lattice's runs, the labeling's first phases: the strips' masks,
/// runs and local forests in parallel — each strip then handed, in the same task and with its
/// run labels still strip-local, to `per_strip` with its own `extras` entry — then the forests
/// concatenated into `scratch.parent` (strip `k`'s runs shifted by its `offset`), the seams
/// merged, and the wrapping edges that `boundary` asks for. Returns the rows per strip, 0 for an
/// empty lattice. Call [`Scratch::restore`] when done with the forest. The forest's nodes are
/// the runs, or with `copy` the nodes of [`label_strip`] (each strip's `offset` then shifts its
/// nodes, and `lab` maps its runs to them).
#[allow(clippy::too_many_arguments)]
pub(super) fn forest<R: JoinRule, X: Default + Send, I: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    strips: usize,
    copy: bool,
    scratch: &mut Scratch<I>,
    extras: &mut Vec<X>,
    per_strip: impl Fn(&mut Strip<I>, &mut X) + Sync,
) -> usize {
    let (h, w) = rule.dim();
    if h == 0 || w == 0 {
        return 0;
    }
    let eight = connectivity == Connectivity::Eight;
    let nw = words(w);
    let chunk = strip_rows(h, strips);
    let nstrips = h.div_ceil(chunk);
    scratch.strips.resize_with(nstrips, Strip::default);
    for (k, s) in scratch.strips.iter_mut().enumerate() {
        s.y0 = k * chunk;
        s.rows = chunk.min(h - s.y0);
    }
    extras.resize_with(nstrips, X::default);

    // Phase 1: strips in parallel.
    scratch
        .strips
        .par_iter_mut()
        .zip(extras.par_iter_mut())
        .for_each(|(s, x)| {
            label_strip(rule, eight, copy, s, nw);
            per_strip(s, x);
        });

    // Concatenate the forests, shifting each strip's labels by its offset.
    let mut total = 0usize;
    for s in scratch.strips.iter_mut() {
        s.offset = I::from_usize(total);
        total += s.parent.len();
    }
    let n = total;
    let Scratch {
        strips,
        parent,
        seam,
        ..
    } = scratch;
    if nstrips == 1 {
        std::mem::swap(parent, &mut strips[0].parent);
    } else {
        let most = bands::most_band_runs(h, w);
        if R::BAND_ROWS > 1 && parent.capacity() < most {
            crate::core::alloc::grow_zeroed(parent, most);
        }
        crate::core::alloc::grow_zeroed(parent, n);
        copy_forests(strips, parent);
    }

    // Seams between strips, then the wrapping edges: rows with strip-local run labels, joined
    // through their strips' nodes.
    let strips = &*strips;
    let row_of = |y: usize| {
        let (k, r) = locate(y, chunk);
        (k, strips[k].row_local(r, nw))
    };
    let mut seam_rows = |cur: usize, prev: usize, parent: &mut Vec<I>| {
        let ((kc, rc), (kp, rp)) = (row_of(cur), row_of(prev));
        let (sc, sp) = (&strips[kc], &strips[kp]);
        merge_rows(rule, eight, false, rc, rp, seam, |a, b, _| {
            union(parent, sc.node(copy, a), sp.node(copy, b))
        });
    };
    for s in &strips[1..] {
        seam_rows(s.y0, s.y0 - 1, parent);
    }
    if boundary.wraps_y() {
        seam_rows(0, h - 1, parent);
    }
    if boundary.wraps_x() {
        let first = |(k, r): (usize, Row<'_, I>)| strips[k].node(copy, r.base);
        let last = |(k, r): (usize, Row<'_, I>)| strips[k].node(copy, r.base + r.runs - I::ONE);
        for y in 0..h {
            let cur = row_of(y);
            if rule.joined((y, 0), (y, w - 1)) {
                union(parent, first(cur), last(cur));
            }
            let yp = match (y, boundary.wraps_y()) {
                (0, false) => continue,
                (0, true) => h - 1,
                _ => y - 1,
            };
            if eight {
                let prev = row_of(yp);
                if rule.joined((y, 0), (yp, w - 1)) {
                    union(parent, first(cur), last(prev));
                }
                if rule.joined((y, w - 1), (yp, 0)) {
                    union(parent, last(cur), first(prev));
                }
            }
        }
    }
    chunk
}

/// Row `y` of the rule (a band, for bands) of strips of `chunk` rows: its strip, and the row
/// with strip-local run labels (a run's node: [`Strip::node`]).
pub(super) fn row_local_at<I: Index>(
    strips: &[Strip<I>],
    chunk: usize,
    nw: usize,
    y: usize,
) -> (&Strip<I>, Row<'_, I>) {
    let (k, r) = locate(y, chunk);
    (&strips[k], strips[k].row_local(r, nw))
}

impl<I: Index> Scratch<I> {
    /// Gives the single strip back its forest after [`forest`] (which lent it to `parent`), so
    /// that both buffers keep their capacity from call to call.
    pub(super) fn restore(&mut self) {
        if let [s] = &mut self.strips[..] {
            std::mem::swap(&mut self.parent, &mut s.parent);
        }
    }
}

// The wide instantiations against the narrow one.
#[cfg(test)]
mod tests;
