//! The measuring pass: one sweep over the label rows of a strip, accumulating per-cluster moments
//! (run by run), perimeter counts (site by site, at the sites outside a cluster), the sizes of the
//! complement's regions and, where needed, the region adjacency graph's edges.

use super::accum::{Merge, Sink, Spill};
use crate::rule::{shl1, shr1};
use std::ops::Range;

/// Sums over a cluster's (or piece's) sites, in lattice coordinates: one 64-byte cache line (the
/// pass updates these at random-ish labels, so their size matters). The sums of squares are
/// exact 96-bit integers (`hi · 2⁶⁴ + lo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Moments {
    pub sx: u64,
    pub sy: u64,
    sxx_lo: u64,
    syy_lo: u64,
    pub size: u32,
    pub x_min: u32,
    pub x_max: u32,
    pub y_min: u32,
    pub y_max: u32,
    sxx_hi: u32,
    syy_hi: u32,
}

/// `(lo, hi) += v`, 96-bit.
#[inline]
fn add96(lo: &mut u64, hi: &mut u32, v: u128) {
    let (l, carry) = lo.overflowing_add(v as u64);
    *lo = l;
    *hi = hi.wrapping_add((v >> 64) as u32 + u32::from(carry));
}

impl Merge for Moments {
    const EMPTY: Self = Moments {
        sx: 0,
        sy: 0,
        sxx_lo: 0,
        syy_lo: 0,
        size: 0,
        x_min: u32::MAX,
        x_max: 0,
        y_min: u32::MAX,
        y_max: 0,
        sxx_hi: 0,
        syy_hi: 0,
    };
    #[inline]
    fn merge(&mut self, o: &Self) {
        self.size += o.size;
        self.sx += o.sx;
        self.sy += o.sy;
        add96(&mut self.sxx_lo, &mut self.sxx_hi, o.sxx());
        add96(&mut self.syy_lo, &mut self.syy_hi, o.syy());
        self.x_min = self.x_min.min(o.x_min);
        self.x_max = self.x_max.max(o.x_max);
        self.y_min = self.y_min.min(o.y_min);
        self.y_max = self.y_max.max(o.y_max);
    }
}

/// `Σ_{i=0}^{n-1} i²` for a run of `n` sites, without 128-bit division on the common path.
#[inline]
fn squares_below(n: u64) -> u128 {
    if n < 1 << 20 {
        u128::from((n.saturating_sub(1)) * n * (2 * n).saturating_sub(1) / 6)
    } else {
        let n = u128::from(n);
        (n - 1) * n * (2 * n - 1) / 6
    }
}

impl Moments {
    /// Moments from their parts (the GPU's exact 64-bit sums).
    #[cfg(feature = "cuda")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        size: u32,
        (x_min, x_max, y_min, y_max): (u32, u32, u32, u32),
        sx: u64,
        sy: u64,
        sxx: u64,
        syy: u64,
    ) -> Moments {
        Moments {
            sx,
            sy,
            sxx_lo: sxx,
            syy_lo: syy,
            size,
            x_min,
            x_max,
            y_min,
            y_max,
            sxx_hi: 0,
            syy_hi: 0,
        }
    }

    /// `Σ x²`.
    pub(crate) fn sxx(&self) -> u128 {
        (u128::from(self.sxx_hi) << 64) | u128::from(self.sxx_lo)
    }

    /// `Σ y²`.
    pub(crate) fn syy(&self) -> u128 {
        (u128::from(self.syy_hi) << 64) | u128::from(self.syy_lo)
    }

    /// Adds the run of sites `x0..=x1` of row `y`.
    #[inline]
    fn add_run(&mut self, y: u32, x0: u32, x1: u32) {
        let n = u64::from(x1 - x0 + 1);
        self.size += n as u32;
        // (x0 + x1) and n have opposite parities: the product is even.
        self.sx += (u64::from(x0) + u64::from(x1)) * n / 2;
        // Σ (x0 + i)² over i < n = n x0² + 2 x0 Σ i + Σ i².
        let x0w = u64::from(x0);
        let yw = u64::from(y);
        self.sy += n * yw;
        if x1 < 1 << 20 && y < 1 << 20 {
            // Both terms are below 2⁶¹: 64-bit arithmetic, a carry into the high word.
            let sxx = n * x0w * x0w + x0w * n * (n - 1) + (n - 1) * n * (2 * n - 1) / 6;
            let (l, c) = self.sxx_lo.overflowing_add(sxx);
            self.sxx_lo = l;
            self.sxx_hi += u32::from(c);
            let (l, c) = self.syy_lo.overflowing_add(n * yw * yw);
            self.syy_lo = l;
            self.syy_hi += u32::from(c);
        } else {
            let sxx = u128::from(n) * u128::from(x0w * x0w)
                + 2 * u128::from(x0w) * u128::from(n * (n - 1) / 2)
                + squares_below(n);
            add96(&mut self.sxx_lo, &mut self.sxx_hi, sxx);
            add96(
                &mut self.syy_lo,
                &mut self.syy_hi,
                u128::from(n) * u128::from(yw * yw),
            );
        }
        self.x_min = self.x_min.min(x0);
        self.x_max = self.x_max.max(x1);
        self.y_min = self.y_min.min(y);
        self.y_max = self.y_max.max(y);
    }
}

/// Perimeter counts of one cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Perimeter {
    /// Distinct sites outside the cluster that neighbour it.
    pub site: u64,
    /// (cluster site, outside neighbour) pairs, per direction.
    pub bond: u64,
    /// Perimeter sites on the outside (see the module docs of `analysis`).
    pub hull: u64,
}

impl Merge for Perimeter {
    const EMPTY: Self = Perimeter {
        site: 0,
        bond: 0,
        hull: 0,
    };
    /// Wrapping: the occupancy pass adds bonds and subtracts repeats in any order, so partial
    /// sums may be "negative"; the totals are exact.
    #[inline]
    fn merge(&mut self, o: &Self) {
        self.site = self.site.wrapping_add(o.site);
        self.bond = self.bond.wrapping_add(o.bond);
        self.hull = self.hull.wrapping_add(o.hull);
    }
}

/// The lattice as the pass sees it.
pub(crate) struct Grid<'a> {
    pub h: usize,
    pub w: usize,
    pub wraps_x: bool,
    pub wraps_y: bool,
    /// The clusters' connectivity is 8 (else 4); the complement's is the other one.
    pub eight: bool,
    /// Same-value segments: a site of another cluster counts as outside a cluster.
    pub segments: bool,
    /// Final cluster labels, row-major.
    pub labels: &'a [u32],
    /// Final labels of the complement's regions (0 on clusters), when measured.
    pub empties: Option<&'a [u32]>,
    /// The number of clusters: the complement's region `e` is graph node `clusters + e - 1`.
    pub clusters: u32,
}

impl Grid<'_> {
    fn above(&self, y: usize) -> Option<usize> {
        if y > 0 {
            Some(y - 1)
        } else if self.wraps_y {
            Some(self.h - 1)
        } else {
            None
        }
    }
    fn below(&self, y: usize) -> Option<usize> {
        if y + 1 < self.h {
            Some(y + 1)
        } else if self.wraps_y {
            Some(0)
        } else {
            None
        }
    }
}

/// Copies row `y` of `src` into `dst` with one padding column each side: the wrapped-around
/// column on a periodic `x` axis, else 0. A missing row (beyond an open edge) is all 0.
fn load_row(src: &[u32], w: usize, y: Option<usize>, wraps_x: bool, dst: &mut Vec<u32>) {
    dst.resize(w + 2, 0);
    match y {
        None => dst.fill(0),
        Some(y) => {
            let row = &src[y * w..(y + 1) * w];
            dst[1..=w].copy_from_slice(row);
            dst[0] = if wraps_x { row[w - 1] } else { 0 };
            dst[w + 1] = if wraps_x { row[0] } else { 0 };
        }
    }
}

/// Three padded rows (above, current, below) of labels and of the complement's labels.
#[derive(Default)]
pub(crate) struct Window {
    lu: Vec<u32>,
    lc: Vec<u32>,
    ld: Vec<u32>,
    ec: Vec<u32>,
    ed: Vec<u32>,
}

impl Window {
    /// Loads the rows around `y`; when `next` is true, `y − 1` was the previous call's row and
    /// the rows are shifted rather than copied again.
    fn load(&mut self, g: &Grid<'_>, y: usize, next: bool, with_empties: bool) {
        if next && g.h > 2 {
            std::mem::swap(&mut self.lu, &mut self.lc);
            std::mem::swap(&mut self.lc, &mut self.ld);
            load_row(g.labels, g.w, g.below(y), g.wraps_x, &mut self.ld);
            if with_empties {
                std::mem::swap(&mut self.ec, &mut self.ed);
            }
        } else {
            load_row(g.labels, g.w, g.above(y), g.wraps_x, &mut self.lu);
            load_row(g.labels, g.w, Some(y), g.wraps_x, &mut self.lc);
            load_row(g.labels, g.w, g.below(y), g.wraps_x, &mut self.ld);
            if with_empties {
                load_row(
                    g.empties.unwrap_or(&[]),
                    g.w,
                    Some(y),
                    g.wraps_x,
                    &mut self.ec,
                );
            }
        }
        if with_empties {
            load_row(
                g.empties.unwrap_or(&[]),
                g.w,
                g.below(y),
                g.wraps_x,
                &mut self.ed,
            );
        }
    }
}

/// For each site of the current row that is outside some neighbouring cluster, calls
/// `f(i, own, labels, mults)`: `i` is the padded column (`x + 1`), `own` the site's label (0 when
/// empty), `labels[..]` the distinct neighbouring clusters it is outside of, `mults[j]` how many
/// of the site's neighbour slots hold `labels[j]`.
#[inline(always)]
fn incidences(g: &Grid<'_>, win: &Window, mut f: impl FnMut(usize, u32, &[u32], &[u32])) {
    let (lu, lc, ld) = (&win.lu[..], &win.lc[..], &win.ld[..]);
    let mut nb = [0u32; 8];
    let mut ls = [0u32; 8];
    let mut ms = [0u32; 8];
    for i in 1..=g.w {
        let own = lc[i];
        if own != 0 && !g.segments {
            continue;
        }
        nb[0] = lu[i];
        nb[1] = lc[i - 1];
        nb[2] = lc[i + 1];
        nb[3] = ld[i];
        let k = if g.eight {
            nb[4] = lu[i - 1];
            nb[5] = lu[i + 1];
            nb[6] = ld[i - 1];
            nb[7] = ld[i + 1];
            8
        } else {
            4
        };
        let nb = &nb[..k];
        if own == 0 {
            if nb.iter().fold(0, |a, &v| a | v) == 0 {
                continue;
            }
        } else if nb.iter().all(|&v| v == 0 || v == own) {
            continue;
        }
        let mut nd = 0;
        for &v in nb {
            if v == 0 || v == own {
                continue;
            }
            match ls[..nd].iter().position(|&l| l == v) {
                Some(j) => ms[j] += 1,
                None => {
                    ls[nd] = v;
                    ms[nd] = 1;
                    nd += 1;
                }
            }
        }
        f(i, own, &ls[..nd], &ms[..nd]);
    }
}

/// `HullRule::Tree`'s parent of the regions that touch the edge.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// How the main pass decides whether a perimeter site is on a cluster's hull.
#[derive(Clone, Copy)]
pub(crate) enum HullRule<'a> {
    /// Not now (later, by [`hull_strip`], or not at all).
    Later,
    /// Open boundary, occupancy: `parent[e]` is the cluster that encloses the complement's
    /// region `e` ([`NO_PARENT`] for regions on the edge); a perimeter site of cluster `c` in
    /// region `e` is off the hull exactly when `parent[e] == c`.
    Tree { parent: &'a [u32] },
}

/// What one strip accumulates.
pub(crate) struct StripSinks<'a> {
    pub moments: Sink<'a, Moments>,
    pub perimeter: Option<Sink<'a, Perimeter>>,
    pub empty_sizes: Option<Sink<'a, u64>>,
}

/// A strip's spill maps (labels the strip does not own).
#[derive(Default)]
pub(crate) struct Spills {
    pub moments: Spill<Moments>,
    pub perimeter: Spill<Perimeter>,
    pub sizes: Spill<u64>,
    pub hull: Spill<u64>,
}

/// A strip's working buffers.
#[derive(Default)]
pub(crate) struct Work {
    /// Region graph edges found by the main pass.
    pub edges: Vec<u64>,
    window: Window,
    seen: Vec<u64>,
    bits: Bits,
}

/// Bit rows over the padded columns `0..w + 2` (bit `i` = padded column `i`).
#[derive(Default)]
struct Bits {
    occ_u: Vec<u64>,
    occ_c: Vec<u64>,
    occ_d: Vec<u64>,
    emp_u: Vec<u64>,
    emp_c: Vec<u64>,
    emp_d: Vec<u64>,
    real: Vec<u64>,
    a: Vec<u64>,
    b: Vec<u64>,
    starts: Vec<u64>,
    ends: Vec<u64>,
    cand: Vec<u64>,
}

/// A strip's reusable scratch.
#[derive(Default)]
pub(crate) struct StripScratch {
    pub spills: Spills,
    pub work: Work,
}

impl StripScratch {
    pub(crate) fn clear(&mut self) {
        self.spills.moments.clear();
        self.spills.perimeter.clear();
        self.spills.sizes.clear();
        self.spills.hull.clear();
        self.work.edges.clear();
    }
}

/// The main pass over the rows of one strip.
///
/// `pieces` are the labels whose moments are summed (the final labels, or on a periodic lattice
/// the open-boundary pieces); `edges` asks for the region graph's edges (`work.edges`, packed
/// `(min << 32) | max` node pairs, with repeats). Occupancy lattices take the bit-mask path
/// ([`occupancy_strip`]); segments the site-by-site one.
pub(crate) fn main_strip(
    g: &Grid<'_>,
    pieces: &[u32],
    rows: Range<usize>,
    sinks: &mut StripSinks<'_>,
    hull: HullRule<'_>,
    edges: bool,
    work: &mut Work,
) {
    if g.segments {
        segment_strip(g, pieces, rows, sinks, edges, work);
    } else {
        occupancy_strip(g, pieces, rows, sinks, hull, edges, work);
    }
}

/// The site-by-site pass (segment mode): every site outside a neighbouring segment is visited.
fn segment_strip(
    g: &Grid<'_>,
    pieces: &[u32],
    rows: Range<usize>,
    sinks: &mut StripSinks<'_>,
    edges: bool,
    work: &mut Work,
) {
    let w = g.w;
    let full = sinks.perimeter.is_some();
    let with_empties = full && g.empties.is_some();
    let Work {
        window,
        edges: edge_list,
        seen,
        ..
    } = work;
    if edges {
        seen.clear();
        seen.resize(1024, u64::MAX);
    }
    for (k, y) in rows.clone().enumerate() {
        // Moments, run by run.
        let prow = &pieces[y * w..(y + 1) * w];
        let mut x = 0;
        while x < w {
            let v = prow[x];
            if v == 0 {
                x += 1;
                continue;
            }
            let x0 = x;
            x += 1;
            while x < w && prow[x] == v {
                x += 1;
            }
            sinks
                .moments
                .at(v)
                .add_run(y as u32, x0 as u32, (x - 1) as u32);
        }
        if !full {
            continue;
        }
        window.load(g, y, k > 0, with_empties);
        // Sizes of the complement's regions, run by run.
        if let (Some(sizes), Some(empties)) = (sinks.empty_sizes.as_mut(), g.empties) {
            let erow = &empties[y * w..(y + 1) * w];
            let mut x = 0;
            while x < w {
                let v = erow[x];
                if v == 0 {
                    x += 1;
                    continue;
                }
                let x0 = x;
                x += 1;
                while x < w && erow[x] == v {
                    x += 1;
                }
                *sizes.at(v) += (x - x0) as u64;
            }
        }
        // Perimeters (the hull comes from the hull pass).
        let perimeter = sinks.perimeter.as_mut().expect("full");
        incidences(g, window, |_, _, ls, ms| {
            for (&c, &m) in ls.iter().zip(ms) {
                let p = perimeter.at(c);
                p.site += 1;
                p.bond += u64::from(m);
            }
        });
        // Region graph edges between different regions that are neighbours in the complement's
        // connectivity (forward half of the neighbourhood; the padding is outside: node 0 − 1).
        if edges {
            let (lc, ld, ec, ed) = (&window.lc, &window.ld, &window.ec, &window.ed);
            let n = g.clusters;
            let node = |l: u32, e: u32| -> u32 {
                if l != 0 {
                    l - 1
                } else if e != 0 {
                    n + e - 1
                } else {
                    u32::MAX
                }
            };
            let mut push = |a: u32, b: u32| {
                if a == b || a == u32::MAX || b == u32::MAX {
                    return;
                }
                let key = (u64::from(a.min(b)) << 32) | u64::from(a.max(b));
                let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
                if seen[slot] != key {
                    seen[slot] = key;
                    edge_list.push(key);
                }
            };
            for i in 1..=w {
                let a = node(lc[i], ec[i]);
                push(a, node(lc[i + 1], ec[i + 1]));
                push(a, node(ld[i], ed[i]));
                if !g.eight {
                    // Complement is 8-connected.
                    push(a, node(ld[i - 1], ed[i - 1]));
                    push(a, node(ld[i + 1], ed[i + 1]));
                }
            }
        }
    }
}

/// Bit `i` of `out` = `row[i] != 0`.
fn pack_nonzero(row: &[u32], out: &mut [u64]) {
    for (o, chunk) in out.iter_mut().zip(row.chunks(64)) {
        #[cfg(target_arch = "x86_64")]
        if chunk.len() == 64 {
            use std::arch::x86_64::*;
            let p = chunk.as_ptr();
            // SAFETY: 64 u32 from p are in bounds; SSE2 is part of x86-64.
            *o = unsafe {
                let zero = _mm_setzero_si128();
                let mut m = 0u64;
                for k in 0..4 {
                    let q = p.add(16 * k);
                    let a = _mm_cmpeq_epi32(_mm_loadu_si128(q.cast()), zero);
                    let b = _mm_cmpeq_epi32(_mm_loadu_si128(q.add(4).cast()), zero);
                    let c = _mm_cmpeq_epi32(_mm_loadu_si128(q.add(8).cast()), zero);
                    let d = _mm_cmpeq_epi32(_mm_loadu_si128(q.add(12).cast()), zero);
                    let ab = _mm_packs_epi32(a, b);
                    let cd = _mm_packs_epi32(c, d);
                    let z = _mm_movemask_epi8(_mm_packs_epi16(ab, cd)) as u32 as u64;
                    m |= (!z & 0xffff) << (16 * k);
                }
                m
            };
            continue;
        }
        let mut m = 0u64;
        for (j, &v) in chunk.iter().enumerate() {
            m |= u64::from(v != 0) << j;
        }
        *o = m;
    }
}

/// Number of set bits of `bits` at positions `lo..=hi`.
#[inline]
fn pop_range(bits: &[u64], lo: usize, hi: usize) -> u32 {
    let (wl, wh) = (lo / 64, hi / 64);
    let low_mask = u64::MAX << (lo % 64);
    let high_mask = u64::MAX >> (63 - hi % 64);
    if wl == wh {
        return (bits[wl] & low_mask & high_mask).count_ones();
    }
    let mut n = (bits[wl] & low_mask).count_ones() + (bits[wh] & high_mask).count_ones();
    for &b in &bits[wl + 1..wh] {
        n += b.count_ones();
    }
    n
}

#[inline]
fn bit(bits: &[u64], i: usize) -> u32 {
    ((bits[i / 64] >> (i % 64)) & 1) as u32
}

/// Set bits in increasing order.
struct Ones<'a> {
    bits: &'a [u64],
    word: usize,
    cur: u64,
}

impl<'a> Ones<'a> {
    fn new(bits: &'a [u64]) -> Self {
        Ones {
            bits,
            word: 0,
            cur: bits.first().copied().unwrap_or(0),
        }
    }
}

impl Iterator for Ones<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.cur == 0 {
            self.word += 1;
            if self.word >= self.bits.len() {
                return None;
            }
            self.cur = self.bits[self.word];
        }
        let t = self.cur.trailing_zeros() as usize;
        self.cur &= self.cur - 1;
        Some(self.word * 64 + t)
    }
}

/// Bit `j` set when slot `j` holds a cluster (nonzero) that an earlier slot holds too.
#[inline(always)]
fn repeats<const K: usize>(s: &[u32; 8]) -> u32 {
    let mut rep = 0u32;
    for j in 1..K {
        let v = s[j];
        let mut r = false;
        for &u in &s[..j] {
            r |= u == v;
        }
        rep |= u32::from(r & (v != 0)) << j;
    }
    rep
}

/// Starts and ends of the runs of set bits of `x` (no run continues across the ends of `x`).
fn run_bounds(x: &[u64], tmp: &mut [u64], starts: &mut [u64], ends: &mut [u64]) {
    shl1(x, tmp);
    for ((s, &v), &t) in starts.iter_mut().zip(x).zip(tmp.iter()) {
        *s = v & !t;
    }
    shr1(x, tmp);
    for ((e, &v), &t) in ends.iter_mut().zip(x).zip(tmp.iter()) {
        *e = v & !t;
    }
}

/// `bits.cand` = the empty sites of the current row (real columns) with an occupied neighbour.
fn candidate_mask(bits: &mut Bits, eight: bool) {
    let Bits {
        occ_u,
        occ_c,
        occ_d,
        emp_c,
        real,
        a,
        b,
        cand,
        ..
    } = bits;
    for ((c, &u), &d) in cand.iter_mut().zip(occ_u.iter()).zip(occ_d.iter()) {
        *c = u | d;
    }
    let mut or_shifted = |src: &[u64], cand: &mut [u64]| {
        shl1(src, a);
        shr1(src, b);
        for ((c, &x), &y) in cand.iter_mut().zip(a.iter()).zip(b.iter()) {
            *c |= x | y;
        }
    };
    or_shifted(occ_c, cand);
    if eight {
        or_shifted(occ_u, cand);
        or_shifted(occ_d, cand);
    }
    for ((c, &e), &r) in cand.iter_mut().zip(emp_c.iter()).zip(real.iter()) {
        *c &= e & r;
    }
}

/// Sizes the bit rows for `w` columns and returns the mask of the padded columns that exist.
fn setup_bits(bits: &mut Bits, w: usize, wraps_x: bool) -> Vec<u64> {
    let nw = (w + 2).div_ceil(64);
    for v in [
        &mut bits.occ_u,
        &mut bits.occ_c,
        &mut bits.occ_d,
        &mut bits.emp_u,
        &mut bits.emp_c,
        &mut bits.emp_d,
        &mut bits.real,
        &mut bits.a,
        &mut bits.b,
        &mut bits.starts,
        &mut bits.ends,
        &mut bits.cand,
    ] {
        v.clear();
        v.resize(nw, 0);
    }
    // Real columns 1..=w, and the padding columns when they exist.
    for i in 1..=w {
        bits.real[i / 64] |= 1 << (i % 64);
    }
    let mut exists = bits.real.clone();
    if wraps_x {
        exists[0] |= 1;
        exists[(w + 1) / 64] |= 1 << ((w + 1) % 64);
    }
    exists
}

/// Occupancy and existing-empty bits of the window's three rows (row `y`).
fn window_bits(g: &Grid<'_>, y: usize, win: &Window, bits: &mut Bits, exists: &[u64]) {
    pack_nonzero(&win.lu, &mut bits.occ_u);
    pack_nonzero(&win.lc, &mut bits.occ_c);
    pack_nonzero(&win.ld, &mut bits.occ_d);
    // Empty sites that exist (a missing row or padding column is no site at all).
    let up = u64::from(g.above(y).is_some()).wrapping_neg();
    let down = u64::from(g.below(y).is_some()).wrapping_neg();
    for (i, &e) in exists.iter().enumerate() {
        bits.emp_c[i] = e & !bits.occ_c[i];
        bits.emp_u[i] = up & e & !bits.occ_u[i];
        bits.emp_d[i] = down & e & !bits.occ_d[i];
    }
}

/// The neighbour slots of padded column `i` (4 or 8 of them).
#[inline(always)]
fn neighbour_slots(win: &Window, i: usize, eight: bool, slots: &mut [u32; 8]) -> usize {
    slots[0] = win.lu[i];
    slots[1] = win.lc[i - 1];
    slots[2] = win.lc[i + 1];
    slots[3] = win.ld[i];
    if eight {
        slots[4] = win.lu[i - 1];
        slots[5] = win.lu[i + 1];
        slots[6] = win.ld[i - 1];
        slots[7] = win.ld[i + 1];
        8
    } else {
        4
    }
}

/// Bits of the slots that hold a cluster no earlier slot holds (each neighbouring cluster once).
#[inline(always)]
fn first_slots(slots: &[u32; 8], k: usize, rep: u32) -> u32 {
    let mut nonzero = 0u32;
    for (j, &v) in slots[..k].iter().enumerate() {
        nonzero |= u32::from(v != 0) << j;
    }
    nonzero & !rep
}

/// The occupancy pass over one strip, row by row with bit masks:
///
/// - moments and bond perimeters per run of occupied sites (a run's bonds are the empty sites at
///   its two ends and, by popcount, the empty sites above and below it: 1 or 3 per site);
/// - the site perimeter is the bond count less, for each empty site, the neighbour slots that
///   repeat an earlier slot's cluster (each empty site then counts once per distinct cluster);
/// - in tree mode the hull is the site perimeter less the perimeter sites in the cluster's holes:
///   the empty sites whose region's parent is among their neighbours;
/// - the complement's region sizes per run of empty sites (a run of empty sites is one region).
fn occupancy_strip(
    g: &Grid<'_>,
    pieces: &[u32],
    rows: Range<usize>,
    sinks: &mut StripSinks<'_>,
    hull: HullRule<'_>,
    edges: bool,
    work: &mut Work,
) {
    let w = g.w;
    let full = sinks.perimeter.is_some();
    let n = g.clusters;
    let Work {
        window,
        edges: edge_list,
        seen,
        bits,
    } = work;
    let exists = setup_bits(bits, w, g.wraps_x);
    if edges {
        seen.clear();
        seen.resize(1024, u64::MAX);
    }
    let eight = g.eight;
    if !full {
        // Moments only: runs straight from the pieces' rows.
        let nwu = w.div_ceil(64);
        let (a, tmp) = (&mut bits.a[..nwu], &mut bits.b[..nwu]);
        let (starts, ends) = (&mut bits.starts[..nwu], &mut bits.ends[..nwu]);
        for y in rows {
            let prow = &pieces[y * w..(y + 1) * w];
            pack_nonzero(prow, a);
            run_bounds(a, tmp, starts, ends);
            let mut run_ends = Ones::new(ends);
            for x0 in Ones::new(starts) {
                let x1 = run_ends.next().unwrap_or(x0);
                sinks
                    .moments
                    .at(prow[x0])
                    .add_run(y as u32, x0 as u32, x1 as u32);
            }
        }
        return;
    }
    for (k, y) in rows.enumerate() {
        window.load(g, y, k > 0, g.empties.is_some());
        let lc = &window.lc;
        window_bits(g, y, window, bits, &exists);
        // Runs of occupied sites in the real columns.
        for ((a, &o), &r) in bits.a.iter_mut().zip(&bits.occ_c).zip(&bits.real) {
            *a = o & r;
        }
        run_bounds(&bits.a, &mut bits.b, &mut bits.starts, &mut bits.ends);
        let prow = &pieces[y * w..(y + 1) * w];
        let perimeter = &mut sinks.perimeter;
        let mut ends = Ones::new(&bits.ends);
        for a in Ones::new(&bits.starts) {
            let b = ends.next().unwrap_or(a);
            sinks
                .moments
                .at(prow[a - 1])
                .add_run(y as u32, (a - 1) as u32, (b - 1) as u32);
            if let Some(perimeter) = perimeter.as_mut() {
                let (eu, ec, ed) = (&bits.emp_u, &bits.emp_c, &bits.emp_d);
                let mut bonds = bit(ec, a - 1) + bit(ec, b + 1);
                bonds += pop_range(eu, a, b) + pop_range(ed, a, b);
                if eight {
                    bonds += pop_range(eu, a - 1, b - 1) + pop_range(eu, a + 1, b + 1);
                    bonds += pop_range(ed, a - 1, b - 1) + pop_range(ed, a + 1, b + 1);
                }
                let p = perimeter.at(lc[a]);
                let bonds = u64::from(bonds);
                p.bond = p.bond.wrapping_add(bonds);
                p.site = p.site.wrapping_add(bonds);
                p.hull = p.hull.wrapping_add(bonds);
            }
        }
        let Some(perimeter) = perimeter.as_mut() else {
            continue;
        };
        // Sizes of the complement's regions, per run of empty sites.
        if let Some(sizes) = sinks.empty_sizes.as_mut() {
            for ((a, &e), &r) in bits.a.iter_mut().zip(&bits.emp_c).zip(&bits.real) {
                *a = e & r;
            }
            run_bounds(&bits.a, &mut bits.b, &mut bits.starts, &mut bits.ends);
            let mut ends = Ones::new(&bits.ends);
            for a in Ones::new(&bits.starts) {
                let b = ends.next().unwrap_or(a);
                *sizes.at(window.ec[a]) += (b + 1 - a) as u64;
            }
        }
        candidate_mask(bits, eight);
        let ec = &window.ec;
        let mut slots = [0u32; 8];
        for i in Ones::new(&bits.cand) {
            let k = neighbour_slots(window, i, eight, &mut slots);
            let s = &slots[..k];
            // Slots repeating an earlier slot's cluster (counted as bonds, not as sites), and
            // whether the region's parent is a neighbour (the site is in one of its holes):
            // computed without branches, then applied where any.
            let rep = if eight {
                repeats::<8>(&slots)
            } else {
                repeats::<4>(&slots)
            };
            let q = match hull {
                HullRule::Tree { parent } => parent[ec[i] as usize],
                HullRule::Later => NO_PARENT,
            };
            let hole = s.iter().fold(false, |h, &v| h | (v == q));
            if rep != 0 || hole {
                let mut r = rep;
                while r != 0 {
                    let j = r.trailing_zeros() as usize;
                    r &= r - 1;
                    let p = perimeter.at(s[j]);
                    p.site = p.site.wrapping_sub(1);
                    p.hull = p.hull.wrapping_sub(1);
                }
                if hole {
                    let p = perimeter.at(q);
                    p.hull = p.hull.wrapping_sub(1);
                }
            }
            if edges {
                let region = n + ec[i] - 1;
                let mut first = first_slots(&slots, k, rep);
                while first != 0 {
                    let v = s[first.trailing_zeros() as usize];
                    first &= first - 1;
                    let key = (u64::from(v - 1) << 32) | u64::from(region);
                    let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
                    if seen[slot] != key {
                        seen[slot] = key;
                        edge_list.push(key);
                    }
                }
            }
        }
    }
}

/// The hull pass over one strip, for lattices whose region graph needed the general solver:
/// `outside(region_node, cluster)` says whether a perimeter site in that region is on the
/// outside of the cluster.
pub(crate) fn hull_strip(
    g: &Grid<'_>,
    rows: Range<usize>,
    hull: &mut Sink<'_, u64>,
    outside: &(impl Fn(u32, u32) -> bool + Sync),
    work: &mut Work,
) {
    let w = g.w;
    let n = g.clusters;
    let empties = g.empties.unwrap_or(&[]);
    if !g.segments {
        // Occupancy: the empty sites with an occupied neighbour, by bit masks.
        let Work { window, bits, .. } = work;
        let exists = setup_bits(bits, w, g.wraps_x);
        let mut slots = [0u32; 8];
        for (k, y) in rows.enumerate() {
            window.load(g, y, k > 0, true);
            window_bits(g, y, window, bits, &exists);
            candidate_mask(bits, g.eight);
            for i in Ones::new(&bits.cand) {
                let kk = neighbour_slots(window, i, g.eight, &mut slots);
                let rep = if g.eight {
                    repeats::<8>(&slots)
                } else {
                    repeats::<4>(&slots)
                };
                let region = n + window.ec[i] - 1;
                let mut first = first_slots(&slots, kk, rep);
                while first != 0 {
                    let c = slots[first.trailing_zeros() as usize];
                    first &= first - 1;
                    if outside(region, c) {
                        *hull.at(c) += 1;
                    }
                }
            }
        }
        return;
    }
    for (k, y) in rows.enumerate() {
        work.window.load(g, y, k > 0, false);
        let erow = &empties[y * w..(y + 1) * w];
        incidences(g, &work.window, |i, own, ls, _| {
            let region = if own != 0 {
                own - 1
            } else {
                n + erow[i - 1] - 1
            };
            for &c in ls {
                if outside(region, c) {
                    *hull.at(c) += 1;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_nonzero_matches_scalar() {
        let mut x = 12345u32;
        for len in [1usize, 63, 64, 65, 128, 200] {
            let row: Vec<u32> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    if (x >> 16) % 3 == 0 {
                        0
                    } else {
                        x
                    }
                })
                .collect();
            let mut bits = vec![0u64; len.div_ceil(64)];
            pack_nonzero(&row, &mut bits);
            for (i, &v) in row.iter().enumerate() {
                assert_eq!(bit(&bits, i) == 1, v != 0, "len {len} bit {i}");
            }
        }
    }

    #[test]
    fn moments_sums_of_squares_are_exact_past_64_bits() {
        let mut m = Moments::EMPTY;
        // Runs far out on a very wide row: Σ x² exceeds 2^64.
        let x0 = u32::MAX - 1_000_000;
        for _ in 0..3 {
            m.add_run(7, x0, x0 + 999_999);
        }
        let want: u128 = 3
            * (u128::from(x0)..u128::from(x0) + 1_000_000)
                .map(|x| x * x)
                .sum::<u128>();
        assert!(want > u128::from(u64::MAX));
        assert_eq!(m.sxx(), want);
        assert_eq!(m.syy(), 3 * 1_000_000 * 49);
        let mut a = Moments::EMPTY;
        a.add_run(1, x0, x0 + 999_999);
        let mut b = a;
        b.merge(&a);
        b.merge(&a);
        assert_eq!(b.sxx(), want);
        assert_eq!(std::mem::size_of::<Moments>(), 64);
    }
}
