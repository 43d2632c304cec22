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
//! Bytes moved: the input is read once and the labels written once; the runs' union-find arrays
//! (a few indices per run) are the only other traffic.
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
    /// When labeling: the local node of each run ([`label_strip`] with `copy`).
    lab: Vec<I>,
    /// `same[r × words(w) + i]`: word `i` of row `r > 0` holds the labels of the row above (each
    /// occupied site joined to the one above it, the same sites empty), so the write pass copies it.
    same: Vec<bool>,
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
    pub(super) starts: &'a [u64],
    /// Label of the row's first run.
    pub(super) base: I,
    pub(super) runs: I,
}

impl<I: Index> Strip<I> {
    /// Row `r` of the strip (run labels global once the strips' offsets are set).
    pub(super) fn row(&self, r: usize, nw: usize) -> Row<'_, I> {
        Row {
            base: self.offset + self.row_base[r],
            ..self.row_local(r, nw)
        }
    }

    /// Row `r` of the strip with strip-local run labels.
    fn row_local(&self, r: usize, nw: usize) -> Row<'_, I> {
        Row {
            y: self.y0 + r,
            occ: &self.occ[r * nw..(r + 1) * nw],
            starts: &self.starts[r * nw..(r + 1) * nw],
            base: self.row_base[r],
            runs: self.row_runs[r],
        }
    }

    /// The global node of the strip's local run `j`: the run itself, or its `lab` with `copy`.
    #[inline]
    fn node(&self, copy: bool, j: I) -> I {
        self.offset + if copy { self.lab[j.usize()] } else { j }
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

/// Joins the runs of `cur` to those of `prev` (the row above `cur`, or the wrapping row):
/// `join(a, b, 0)` unions runs `a` and `b`. With `fresh` (the runs of `cur` not yet joined to
/// anything: the scan within a strip), a word whose vertical links are exactly the run starts of
/// both rows is handed over whole as `join(a, b, n)`: the `n` runs from `a` on are joined one to
/// one to the `n` runs from `b` on, which for fresh runs is a copy of `b`'s parents (what the
/// unions would write), one word instead of one union per run.
fn merge_rows<R: JoinRule, I: Index>(
    rule: &R,
    eight: bool,
    fresh: bool,
    cur: Row<'_, I>,
    prev: Row<'_, I>,
    t: &mut RowTemps<I>,
    mut join: impl FnMut(I, I, usize),
) {
    let nw = cur.occ.len();
    t.resize(nw);
    prefix_counts(cur.starts, &mut t.cum_c);
    prefix_counts(prev.starts, &mut t.cum_p);
    for i in 0..nw {
        t.left_c[i] = cur.occ[i] & !cur.starts[i];
        t.left_p[i] = prev.occ[i] & !prev.starts[i];
    }
    rule.link_bits(cur.y, prev.y, 0, cur.occ, prev.occ, &mut t.up);
    // A vertical link continues the previous one when both rows' runs continue too: skip it.
    shl1(&t.up, &mut t.a);
    let t_ = &*t;
    for i in 0..nw {
        let mut m = t_.up[i] & !(t_.a[i] & t_.left_c[i] & t_.left_p[i]);
        // (Worth a call for a word of many short runs only.)
        if fresh && m.count_ones() >= 8 && m == cur.starts[i] && m == prev.starts[i] {
            let n = m.count_ones() as usize;
            join(cur.base + t_.cum_c[i], prev.base + t_.cum_p[i], n);
            continue;
        }
        while m != 0 {
            let x = i * WORD + m.trailing_zeros() as usize;
            join(run_at(&cur, &t_.cum_c, x), run_at(&prev, &t_.cum_p, x), 0);
            m &= m - 1;
        }
    }
    if !eight {
        return;
    }
    // (y, x)–(yp, x−1) is redundant when (y, x−1) or (yp, x) bridges it through vertical links.
    rule.link_bits(cur.y, prev.y, -1, cur.occ, prev.occ, &mut t.diag);
    let t_ = &*t;
    for_each_bit(
        nw,
        |i| t_.diag[i] & !((t_.left_c[i] & t_.a[i]) | (t_.up[i] & t_.left_p[i])),
        |x| {
            join(
                run_at(&cur, &t_.cum_c, x),
                run_at(&prev, &t_.cum_p, x - 1),
                0,
            )
        },
    );
    // (y, x)–(yp, x+1) is redundant when (y, x+1) or (yp, x) bridges it.
    rule.link_bits(cur.y, prev.y, 1, cur.occ, prev.occ, &mut t.diag);
    for i in 0..nw {
        t.b[i] = t.left_c[i] & t.up[i];
    }
    shr1(&t.b, &mut t.a);
    shr1(&t.left_p, &mut t.b);
    let t_ = &*t;
    for_each_bit(
        nw,
        |i| t_.diag[i] & !(t_.a[i] | (t_.up[i] & t_.b[i])),
        |x| {
            join(
                run_at(&cur, &t_.cum_c, x),
                run_at(&prev, &t_.cum_p, x + 1),
                0,
            )
        },
    );
}

/// "No node yet" in [`Strip::lab`].
#[inline(always)]
fn unset<I: Index>() -> I {
    I::from_usize(I::MAX_NODES + 1)
}

/// Phase 1: masks, runs and the local forest of one strip.
///
/// Without `copy`, every run is a node of the forest (`parent` over runs: what the size counts
/// read). With `copy`, a run joined to the row above takes the node of a run it touches
/// (`lab`), and only the runs that touch nothing above get a node of their own: a spiral's or
/// a dense lattice's strip has a few nodes where it has millions of runs, so the numbering and
/// the concatenation of the forests cost next to nothing. Nodes are made in raster order either
/// way (each row's after its joins, left to right), so the smallest node of a cluster is that
/// of its first run, and numbering the roots in order gives the raster numbering.
fn label_strip<R: JoinRule, I: Index>(
    rule: &R,
    eight: bool,
    copy: bool,
    s: &mut Strip<I>,
    nw: usize,
) {
    let rows = s.rows;
    s.occ.resize(rows * nw, 0);
    s.starts.resize(rows * nw, 0);
    s.row_base.resize(rows, I::default());
    s.row_runs.resize(rows, I::default());
    s.same.resize(rows * nw, false);
    s.same[..nw].fill(false);
    s.parent.clear();
    s.lab.clear();
    s.offset = I::default();
    s.temps.resize(nw);
    let mut total = 0usize;
    for r in 0..rows {
        let y = s.y0 + r;
        let base = total;
        // The row's runs given a node by a join (copy mode).
        let mut copied = 0usize;
        {
            let occ = &mut s.occ[r * nw..(r + 1) * nw];
            rule.row_bits(y, occ, &mut s.temps.left_c);
            let starts = &mut s.starts[r * nw..(r + 1) * nw];
            // A row of `w` sites has at most `w` runs: the row's count is a usize.
            let mut n = 0usize;
            for ((st, &o), &l) in starts.iter_mut().zip(occ.iter()).zip(&s.temps.left_c) {
                *st = o & !l;
                n += st.count_ones() as usize;
            }
            total += n;
            if copy {
                s.lab.resize(total, unset());
            } else {
                s.parent.extend((base..total).map(I::from_usize));
            }
            s.row_base[r] = I::from_usize(base);
            s.row_runs[r] = I::from_usize(n);
        }
        if r > 0 {
            let Strip {
                occ,
                starts,
                row_base,
                row_runs,
                parent,
                lab,
                temps,
                same,
                y0,
                ..
            } = s;
            let row = |r: usize| Row {
                y: *y0 + r,
                occ: &occ[r * nw..(r + 1) * nw],
                starts: &starts[r * nw..(r + 1) * nw],
                base: row_base[r],
                runs: row_runs[r],
            };
            if copy {
                merge_rows(rule, eight, true, row(r), row(r - 1), temps, |a, b, n| {
                    let (a, b) = (a.usize(), b.usize());
                    if n > 0 {
                        lab.copy_within(b..b + n, a);
                        copied += n;
                        return;
                    }
                    // The run's first join copies (no branch on it: near p_c it is a coin
                    // toss), a later one joins the two nodes.
                    let (la, lb) = (lab[a], lab[b]);
                    let first = la == unset();
                    lab[a] = if first { lb } else { la };
                    copied += usize::from(first);
                    if !first && la != lb {
                        union(parent, la, lb);
                    }
                });
            } else {
                merge_rows(rule, eight, true, row(r), row(r - 1), temps, |a, b, n| {
                    if n == 0 {
                        union(parent, a, b)
                    } else {
                        let b = b.usize();
                        parent.copy_within(b..b + n, a.usize());
                    }
                });
            }
            let (cur, prev) = (row(r), row(r - 1));
            for (i, f) in same[r * nw..(r + 1) * nw].iter_mut().enumerate() {
                let o = cur.occ[i];
                *f = o != 0 && o == prev.occ[i] && temps.up[i] == o;
            }
        }
        if copy && copied < total - base {
            // The runs that touch nothing above: new nodes, left to right (their own roots).
            let parent = &mut s.parent;
            let (first, mut next) = (parent.len(), parent.len());
            for l in &mut s.lab[base..total] {
                let new = *l == unset();
                *l = if new { I::from_usize(next) } else { *l };
                next += usize::from(new);
            }
            parent.extend((first..next).map(I::from_usize));
        }
    }
}

/// Whether to label with node copying ([`label_strip`] with `copy`): where most runs repeat the
/// run above them (same start, joined there) — a spiral's or a maze's one-site-wide legs,
/// vertical stripes — the runs outnumber the clusters' nodes by far, and numbering the runs
/// would cost more than the scan. Random lattices are scanned faster with a node per run (the
/// copy's extra branch per join is a coin toss there). Judged on 16 pairs of rows spread over
/// the lattice: copy where more than half of their runs start under a run start, joined to it,
/// in words whose joins are all such.
fn copies_pay<R: JoinRule, I: Index>(rule: &R, h: usize, w: usize, t: &mut RowTemps<I>) -> bool {
    if h < 2 || w == 0 {
        return false;
    }
    let nw = words(w);
    t.resize(nw);
    let (mut runs, mut repeated) = (0usize, 0usize);
    let pairs = 16.min(h - 1);
    for j in 0..pairs {
        let y = 1 + j * (h - 1) / pairs;
        let RowTemps {
            left_c,
            left_p,
            up,
            diag: occ_c,
            a: occ_p,
            b: tmp,
            ..
        } = t;
        rule.row_bits(y - 1, occ_p, left_p);
        rule.row_bits(y, occ_c, left_c);
        rule.link_bits(y, y - 1, 0, occ_c, occ_p, up);
        shl1(up, tmp);
        for i in 0..nw {
            let (sc, sp) = (occ_c[i] & !left_c[i], occ_p[i] & !left_p[i]);
            let m = up[i] & !(tmp[i] & left_c[i] & left_p[i]);
            let n = sc.count_ones() as usize;
            runs += n;
            if m == sc && m == sp {
                repeated += n;
            }
        }
    }
    2 * repeated > runs
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
    label_with(rule, connectivity, boundary, strips, None, scratch, out)
}

/// [`label`], with node copying as `copy` says (`None`: as [`copies_pay`] judges).
fn label_with<R: JoinRule, I: Index, L: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    strips: usize,
    copy: Option<bool>,
    scratch: &mut Scratch<I>,
    mut out: ArrayViewMut2<'_, L>,
) -> usize {
    let (h, w) = rule.dim();
    let copy = copy.unwrap_or_else(|| copies_pay(rule, h, w, &mut scratch.seam));
    let chunk = forest_of(
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

    // Number the roots in raster order.
    crate::core::alloc::grow_zeroed(number, n + 1);
    let count = if nstrips == 1 {
        let nums = I::plain(number);
        nums[0] = I::default();
        number_roots(parent, nums, 1)
    } else {
        number_parallel(strips, parent, number)
    };

    // Write each site's label from its run's number.
    out.axis_chunks_iter_mut(Axis(0), chunk)
        .into_par_iter()
        .zip(strips.par_iter())
        .for_each(|(mut rows, s)| {
            // Contiguous rows: words that repeat the row above are copied from it.
            if let Some(buf) = rows.as_slice_mut() {
                for r in 0..s.rows {
                    let (above, dst) = buf.split_at_mut(r * w);
                    let above = (r > 0).then(|| (&above[(r - 1) * w..], &s.same[r * nw..][..nw]));
                    write_row(s, copy, r, nw, number, &mut dst[..w], above);
                }
                return;
            }
            for (r, mut out_row) in rows.axis_iter_mut(Axis(0)).enumerate() {
                match out_row.as_slice_mut() {
                    Some(dst) => write_row(s, copy, r, nw, number, dst, None),
                    None => {
                        let mut tmp = vec![L::default(); w];
                        write_row(s, copy, r, nw, number, &mut tmp, None);
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
/// empty lattice. Call [`Scratch::restore`] when done with the forest.
pub(super) fn forest<R: JoinRule, X: Default + Send, I: Index>(
    rule: &R,
    connectivity: Connectivity,
    boundary: Boundary,
    strips: usize,
    scratch: &mut Scratch<I>,
    extras: &mut Vec<X>,
    per_strip: impl Fn(&mut Strip<I>, &mut X) + Sync,
) -> usize {
    forest_of(
        rule,
        connectivity,
        boundary,
        strips,
        false,
        scratch,
        extras,
        per_strip,
    )
}

/// [`forest`], over the runs or, with `copy`, over the nodes of [`label_strip`] (each strip's
/// `offset` then shifts its nodes, and `lab` maps its runs to them).
#[allow(clippy::too_many_arguments)]
fn forest_of<R: JoinRule, X: Default + Send, I: Index>(
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

/// Lattice row `y` of strips of `chunk` rows, with global run labels.
pub(super) fn row_at<I: Index>(
    strips: &[Strip<I>],
    chunk: usize,
    nw: usize,
    y: usize,
) -> Row<'_, I> {
    let (k, r) = locate(y, chunk);
    strips[k].row(r, nw)
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

/// Concatenates the strips' forests into `dst`, shifting labels by each strip's offset; splits
/// `dst` recursively so that no list of chunks is allocated.
fn copy_forests<I: Index>(strips: &[Strip<I>], dst: &mut [I]) {
    if let [s] = strips {
        for (d, &p) in dst.iter_mut().zip(&s.parent) {
            *d = p + s.offset;
        }
        return;
    }
    let mid = strips.len() / 2;
    let split = (strips[mid].offset - strips[0].offset).usize();
    let (lo, hi) = dst.split_at_mut(split);
    rayon::join(
        || copy_forests(&strips[..mid], lo),
        || copy_forests(&strips[mid..], hi),
    );
}

/// Numbers the roots of `parent` in raster order with one pass per strip in parallel: count the
/// strips' roots, give each strip its first number, number the roots, then map every other
/// label to its root's number (reading other strips' roots: hence the atomics).
///
/// The labels whose parent lies in an earlier strip (the strips' local roots that the seams
/// joined) are pointed straight at their roots first, strip by strip in order: the seams can
/// chain such roots through every strip (a spiral joins its rings at each seam), and each strip
/// climbing those chains on its own would cost as much as the whole numbering.
fn number_parallel<I: Index>(strips: &mut [Strip<I>], parent: &mut [I], number: &[I::Atomic]) -> I {
    let range = |s: &Strip<I>| s.offset.usize()..s.offset.usize() + s.parent.len();
    {
        let parent = &*parent;
        strips.par_iter_mut().for_each(|s| {
            let lo = s.offset;
            let mut roots = 0usize;
            s.outside.clear();
            for x in range(s) {
                let p = parent[x];
                roots += usize::from(p.usize() == x);
                if p < lo {
                    s.outside.push(I::from_usize(x));
                }
            }
            s.roots = I::from_usize(roots);
        });
    }
    // In order: a parent in an earlier strip leads, within that strip, to a root or to a label
    // of that strip's list, already pointed at its root.
    for s in strips.iter() {
        for &x in &s.outside {
            let r = find_readonly(parent, parent[x.usize()]);
            parent[x.usize()] = r;
        }
    }
    let parent = &*parent;
    let mut acc = I::default();
    for s in strips.iter_mut() {
        s.first_number = acc;
        acc = acc + s.roots;
    }
    I::store(&number[0], I::default());
    strips.par_iter().for_each(|s| {
        let mut k = s.first_number;
        for x in range(s) {
            if parent[x].usize() == x {
                k = k + I::ONE;
                I::store(&number[x + 1], k);
            }
        }
    });
    strips.par_iter().for_each(|s| {
        let lo = s.offset;
        for x in range(s) {
            let p = parent[x];
            if p.usize() != x {
                // Parents precede their children: a parent inside the strip is already numbered.
                let r = if p >= lo { p } else { find_readonly(parent, p) };
                I::store(&number[x + 1], I::load(&number[r.usize() + 1]));
            }
        }
    });
    acc
}

/// A cluster number as a label: the label type is at least as wide as the numbers it receives
/// (`u32` labels come only with `u32` indices), so this is a zero extension or nothing.
#[inline(always)]
fn widen<I: Index, L: Index>(v: I) -> L {
    L::from_usize(v.usize())
}

/// The one label of all the runs that a word's occupied sites `o` (run starts `st`) belong to,
/// if they share one; `k` is the row's run before the word's first start, `value` a run's label.
#[inline]
fn uniform<L: Index>(k: usize, o: u64, st: u64, value: impl Fn(usize) -> L) -> Option<L> {
    let continues = o & 1 != 0 && st & 1 == 0;
    let lo = if continues { k } else { k.wrapping_add(1) };
    let n = st.count_ones() as usize + usize::from(continues);
    let v = value(lo);
    (1..n).all(|j| value(lo.wrapping_add(j)) == v).then_some(v)
}

/// Writes row `r` of strip `s` (labeled with `copy`): each occupied site gets its run's node's
/// cluster number, empty sites 0.
///
/// A word with few pieces (stretches of occupied sites cut at run starts) is written with one
/// fill per piece; a fragmented one (random lattices near p_c) site by occupied site, each site's
/// run found by counting the run starts up to it. `above`: the row above and the words that
/// repeat it (`Strip::same`), copied from it.
#[inline]
fn write_row<I: Index, L: Index>(
    s: &Strip<I>,
    copy: bool,
    r: usize,
    nw: usize,
    number: &[I::Atomic],
    dst: &mut [L],
    above: Option<(&[L], &[bool])>,
) {
    let row = s.row_local(r, nw);
    // `number` of node `x` of the strip is at `offset + x + 1`; the nodes are the runs' `lab`
    // with `copy`, else the runs themselves.
    let number = &number[s.offset.usize() + 1..];
    if copy {
        let lab = &s.lab[row.base.usize()..][..row.runs.usize()];
        write_runs(
            &row,
            |k| widen(I::load(&number[lab[k].usize()])),
            dst,
            above,
        );
    } else {
        let number = &number[row.base.usize()..][..row.runs.usize()];
        write_runs(&row, |k| widen(I::load(&number[k])), dst, above);
    }
}

/// [`write_row`] with `value(k)`, the label of the row's run `k`.
#[inline(always)]
fn write_runs<I: Index, L: Index>(
    row: &Row<'_, I>,
    value: impl Fn(usize) -> L,
    dst: &mut [L],
    above: Option<(&[L], &[bool])>,
) {
    // `k` is the row's run of the current piece, counted from the run starts (wrapping: before
    // the row's first run it is -1, never read: the row's first piece starts a run).
    let mut k = usize::MAX;
    let w = dst.len();
    // Tries of `uniform` left: a miss costs a few lookups, so a row of many clusters (p_c,
    // 4-connected) stops trying after two misses more than hits.
    let mut credit = 2i32;
    for i in 0..row.occ.len() {
        let (o, st) = (row.occ[i], row.starts[i]);
        let x0 = i * WORD;
        let out = &mut dst[x0..(x0 + WORD).min(w)];
        let mut pieces = st | (o & !(o << 1));
        let few = pieces.count_ones() <= 4;
        // (A few fills are cheaper than reading the row above.)
        if let (Some((prev, same)), false) = (above, few) {
            if same[i] {
                out.copy_from_slice(&prev[i * WORD..][..out.len()]);
                k = k.wrapping_add(st.count_ones() as usize);
                continue;
            }
        }
        if o == 0 {
            out.fill(L::default());
            continue;
        }
        let len = out.len();
        if few {
            if o != u64::MAX {
                out.fill(L::default());
            }
            while pieces != 0 {
                let b = pieces.trailing_zeros() as usize;
                k = k.wrapping_add(((st >> b) & 1) as usize);
                pieces &= pieces - 1;
                let gap = !o & (u64::MAX << b);
                let end = pieces.trailing_zeros().min(gap.trailing_zeros()) as usize;
                out[b..end.min(len)].fill(value(k));
            }
        } else if let Some(v) = (credit > 0 && o.count_ones() >= 32)
            .then(|| {
                let v = uniform(k, o, st, &value);
                credit = if v.is_some() {
                    (credit + 1).min(4)
                } else {
                    credit - 1
                };
                v
            })
            .flatten()
        {
            // Fragmented, but dense and all of one cluster (a giant cluster's sites, tried where
            // at least half the word is occupied, while such words keep coming in the row):
            // masked stores.
            L::masked_fill(out, o, v);
            k = k.wrapping_add(st.count_ones() as usize);
        } else {
            // Occupied sites only: each one's run is the count of starts up to it.
            out.fill(L::default());
            let mut m = o;
            while m != 0 {
                let j = m.trailing_zeros() as usize;
                let run = k.wrapping_add((st & (u64::MAX >> (63 - j))).count_ones() as usize);
                out[j] = value(run);
                m &= m - 1;
            }
            k = k.wrapping_add(st.count_ones() as usize);
        }
    }
}

// The wide instantiations against the narrow one.
#[cfg(test)]
#[path = "strips_tests.rs"]
mod tests;
