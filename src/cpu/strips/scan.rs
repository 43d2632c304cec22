//! The strip labeler's scan: rows merged by their runs, a strip's local forest, and the choice
//! between a node per run and node copying.

use super::bands::most_band_runs;
use super::*;

/// Joins the runs of `cur` to those of `prev` (the row above `cur`, or the wrapping row):
/// `join(a, b, 0)` unions runs `a` and `b`. With `fresh` (the runs of `cur` not yet joined to
/// anything: the scan within a strip), a word whose vertical links are exactly the run starts of
/// both rows is handed over whole as `join(a, b, n)`: the `n` runs from `a` on are joined one to
/// one to the `n` runs from `b` on, which for fresh runs is a copy of `b`'s parents (what the
/// unions would write), one word instead of one union per run.
pub(super) fn merge_rows<R: JoinRule, I: Index>(
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
    rule.link_bits(cur.y, prev.y, 0, cur.top, prev.bottom, &mut t.up);
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
    rule.link_bits(cur.y, prev.y, -1, cur.top, prev.bottom, &mut t.diag);
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
    rule.link_bits(cur.y, prev.y, 1, cur.top, prev.bottom, &mut t.diag);
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

/// Sets bits `k..k + n` of `bits`, `n` ≤ 64 (they span at most two words).
#[inline(always)]
pub(super) fn set_bits(bits: &mut [u64], k: usize, n: usize) {
    let (i, o) = (k / 64, k % 64);
    let ones = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    bits[i] |= ones << o;
    if o + n > 64 {
        bits[i + 1] |= ones >> (64 - o);
    }
}

/// Whether bit `k` of `bits` is set.
#[inline(always)]
pub(super) fn bit(bits: &[u64], k: usize) -> bool {
    bits[k / 64] >> (k % 64) & 1 != 0
}

/// Phase 1: masks, runs and the local forest of one strip.
///
/// Without `copy`, every run is a node of the forest (`parent` over runs: what the size counts
/// read). With `copy`, a run joined to the row above takes the node of a run it touches
/// (`lab`), and only the runs that touch nothing above get a node of their own: a spiral's or
/// a dense lattice's strip has a few nodes where it has millions of runs, so the numbering and
/// the concatenation of the forests cost next to nothing. Nodes are made in raster order either
/// way (each row's after its joins, left to right), so the smallest node of a cluster is that
/// of its first run, and numbering the roots in order gives the raster numbering. Bands
/// ([`super::Bands`], always with `copy`) make a row's new nodes in the order of their first
/// sites instead ([`new_band_nodes`]), which is the raster order of the clusters they start.
pub(super) fn label_strip<R: JoinRule, I: Index>(
    rule: &R,
    eight: bool,
    copy: bool,
    s: &mut Strip<I>,
    nw: usize,
) {
    let rows = s.rows;
    let banded = R::BAND_ROWS > 1;
    debug_assert!(copy || !banded);
    for v in [&mut s.top, &mut s.bottom] {
        if banded {
            v.resize(rows * nw, 0);
        } else {
            v.clear();
        }
    }
    s.occ.resize(rows * nw, 0);
    s.starts.resize(rows * nw, 0);
    s.row_base.resize(rows, I::default());
    s.row_runs.resize(rows, I::default());
    // (A flag per lattice row: bands have two.)
    s.same.resize(rows * R::BAND_ROWS * nw, false);
    s.same[..nw].fill(false);
    s.parent.clear();
    if copy {
        s.assigned.resize(nw + 1, 0);
    }
    if banded {
        // Room for the strip's most runs, so that a reused labeler allocates nothing after its
        // first call on a shape.
        let w = rule.dim().1;
        let most = most_band_runs(rows, w);
        if s.lab.len() < most {
            crate::core::alloc::grow_zeroed(&mut s.lab, most);
        }
        s.parent.reserve(most);
        s.second.reserve(most_band_runs(1, w).div_ceil(64));
    }
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
            if banded {
                rule.band_bits(
                    y,
                    occ,
                    &mut s.temps.left_c,
                    &mut s.top[r * nw..(r + 1) * nw],
                    &mut s.bottom[r * nw..(r + 1) * nw],
                );
                // A word of a lattice row repeats the row above where their occupancy is the
                // same (any two occupied neighbours are joined): the band's first row the band
                // above's last, its second row its first.
                let (top, bottom) = (&s.top[r * nw..], &s.bottom[r * nw..]);
                let same = &mut s.same[2 * r * nw..(2 * r + 2) * nw];
                let (first, second) = same.split_at_mut(nw);
                for i in 0..nw {
                    let t = top[i];
                    first[i] = r > 0 && t != 0 && t == s.bottom[(r - 1) * nw + i];
                    second[i] = t != 0 && t == bottom[i];
                }
            } else {
                rule.row_bits(y, occ, &mut s.temps.left_c);
            }
            let starts = &mut s.starts[r * nw..(r + 1) * nw];
            // A row of `w` sites has at most `w` runs: the row's count is a usize.
            let mut n = 0usize;
            for ((st, &o), &l) in starts.iter_mut().zip(occ.iter()).zip(&s.temps.left_c) {
                *st = o & !l;
                n += st.count_ones() as usize;
            }
            total += n;
            if copy {
                // Entries are written before they are read (a run's first join or copy, or its
                // new node after the row's joins; `assigned` says which), so `lab` is not filled
                // row by row (a 4096² spiral's 8 million runs: a tenth of its labeling). Its
                // length only grows, by doubling, zeroed by the system.
                if s.lab.len() < total {
                    let n = total.max(2 * s.lab.len()).min(rows * nw * WORD);
                    crate::core::alloc::grow_zeroed(&mut s.lab, n);
                }
                s.assigned.fill(0);
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
                assigned,
                temps,
                same,
                top,
                bottom,
                y0,
                ..
            } = s;
            let row = |r: usize| {
                let occ = &occ[r * nw..(r + 1) * nw];
                let (t, b) = if banded {
                    (&top[r * nw..(r + 1) * nw], &bottom[r * nw..(r + 1) * nw])
                } else {
                    (occ, occ)
                };
                Row {
                    y: *y0 + r,
                    occ,
                    top: t,
                    bottom: b,
                    starts: &starts[r * nw..(r + 1) * nw],
                    base: row_base[r],
                    runs: row_runs[r],
                }
            };
            if copy {
                merge_rows(rule, eight, true, row(r), row(r - 1), temps, |a, b, n| {
                    let (a, b) = (a.usize(), b.usize());
                    if n > 0 {
                        lab.copy_within(b..b + n, a);
                        set_bits(assigned, a - base, n);
                        copied += n;
                        return;
                    }
                    // The run's first join copies, a later one joins the two nodes.
                    let lb = lab[b];
                    if !bit(assigned, a - base) {
                        lab[a] = lb;
                        set_bits(assigned, a - base, 1);
                        copied += 1;
                    } else if lab[a] != lb {
                        union(parent, lab[a], lb);
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
            if !banded {
                let (cur, prev) = (row(r), row(r - 1));
                for (i, f) in same[r * nw..(r + 1) * nw].iter_mut().enumerate() {
                    let o = cur.occ[i];
                    *f = o != 0 && o == prev.occ[i] && temps.up[i] == o;
                }
            }
        }
        if banded && copied < total - base {
            new_band_nodes(s, r, nw, total - base);
        } else if copy && copied < total - base {
            // The runs that touch nothing above: new nodes, left to right (their own roots).
            let parent = &mut s.parent;
            let (first, mut next) = (parent.len(), parent.len());
            let runs = total - base;
            for (i, &w) in s.assigned.iter().enumerate().take(runs.div_ceil(64)) {
                let valid = if 64 * (i + 1) <= runs {
                    u64::MAX
                } else {
                    (1u64 << (runs % 64)) - 1
                };
                let mut m = !w & valid;
                while m != 0 {
                    s.lab[base + 64 * i + m.trailing_zeros() as usize] = I::from_usize(next);
                    next += 1;
                    m &= m - 1;
                }
            }
            parent.extend((first..next).map(I::from_usize));
        }
    }
}

/// Band `r`'s runs that touch nothing above (of its `runs`; `assigned` says which do): new
/// nodes, their own roots, in the order of their first sites: first the runs with a site in the
/// band's first row, left to right (their first sites are in that row, in the runs' order),
/// then the others, left to right (theirs are in the second row).
fn new_band_nodes<I: Index>(s: &mut Strip<I>, r: usize, nw: usize, runs: usize) {
    let base = s.row_base[r].usize();
    second_row_runs(
        &s.occ[r * nw..(r + 1) * nw],
        &s.top[r * nw..(r + 1) * nw],
        &s.starts[r * nw..(r + 1) * nw],
        runs,
        &mut s.second,
    );
    let mut next = s.parent.len();
    let first = next;
    for second in [false, true] {
        for (j, (&a, &b)) in s.assigned.iter().zip(&s.second).enumerate() {
            let valid = if 64 * (j + 1) <= runs {
                u64::MAX
            } else {
                (1u64 << (runs % 64)) - 1
            };
            let mut m = !a & valid & if second { b } else { !b };
            while m != 0 {
                s.lab[base + 64 * j + m.trailing_zeros() as usize] = I::from_usize(next);
                next += 1;
                m &= m - 1;
            }
        }
    }
    s.parent.extend((first..next).map(I::from_usize));
}

/// Bit `k` of `out` (`runs` bits): whether the band's run `k` has no site in the band's first
/// row (`top`; `occ` the band's OR, `starts` its runs' starts). Word by word, with one add: a
/// run's start added to its sites outside the first row carries past the run's end only where
/// all its sites are outside it, and lands on the empty column after it.
fn second_row_runs(occ: &[u64], top: &[u64], starts: &[u64], runs: usize, out: &mut Vec<u64>) {
    out.clear();
    out.resize(runs.div_ceil(64), 0);
    let (mut carry, mut before) = (false, 0usize);
    for ((&o, &t), &st) in occ.iter().zip(top).zip(starts) {
        let (sum, c1) = (o & !t).overflowing_add(st);
        let (sum, c2) = sum.overflowing_add(u64::from(carry));
        carry = c1 | c2;
        // The columns after such runs: the run ending before column b is the row's run
        // `before + (starts below b) - 1`.
        let mut ends = sum & !o;
        while ends != 0 {
            let b = ends.trailing_zeros();
            let k = before + (st & ((1u64 << b) - 1)).count_ones() as usize - 1;
            out[k / 64] |= 1 << (k % 64);
            ends &= ends - 1;
        }
        before += st.count_ones() as usize;
    }
    // A run that ends with the last word's last column.
    if carry {
        out[(runs - 1) / 64] |= 1 << ((runs - 1) % 64);
    }
}

/// Whether to label with node copying ([`label_strip`] with `copy`): where most runs repeat the
/// run above them (same start, joined there) — a spiral's or a maze's one-site-wide legs,
/// vertical stripes — the runs outnumber the clusters' nodes by far, and numbering the runs
/// would cost more than the scan. Random lattices are scanned faster with a node per run (the
/// copy's extra branch per join is a coin toss there). Judged on 16 pairs of rows spread over
/// the lattice: copy where more than half of their runs start under a run start, joined to it,
/// in words whose joins are all such.
pub(super) fn copies_pay<R: JoinRule, I: Index>(
    rule: &R,
    h: usize,
    w: usize,
    t: &mut RowTemps<I>,
) -> bool {
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
