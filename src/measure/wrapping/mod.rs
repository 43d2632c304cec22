//! Wrapping by winding: displacement-tracking union-find (Machta; Newman–Ziff) over open pieces.
//!
//! The lattice is first labeled with open boundaries; its clusters ("pieces") are joined across
//! the wrapping edges here. Inside a piece every step stays in the same copy of the lattice, so
//! each piece has one *shift* — the number of times (per axis) a walk from the cluster's root piece
//! crosses the periodic edges to reach it — and the union-find stores, for each piece, its shift
//! relative to its parent. A wrapping link whose two ends are already in one set closes a loop; if
//! the shifts disagree the loop has a nonzero net displacement along that axis and the cluster
//! wraps (winds around the torus) in it. Only the `O(h + w)` links across the edges are visited.
//!
//! The root of a set is its smallest piece label, whose first site is the cluster's first site,
//! so shifts are relative to the copy that holds the first site.

use crate::{Boundary, Connectivity};
use ndarray::ArrayView2;
use rayon::prelude::*;

/// Wraps in `x`.
pub(crate) const WRAP_X: u8 = 1;
/// Wraps in `y`.
pub(crate) const WRAP_Y: u8 = 2;

/// Pieces joined into periodic clusters.
#[derive(Default, Clone)]
pub(crate) struct Joined {
    /// `map[piece]`: the cluster (numbered `1..=count` by smallest piece); `map[0] = 0`. Empty
    /// after a join without dense maps ([`Joined::join_edges`]) until [`Joined::fill_map`].
    pub map: Vec<u32>,
    /// `shift[piece]`: `[sx, sy]`, the piece's copy relative to its cluster's first site, in
    /// lattice periods (a site's unwrapped position is its position plus `shift * (w, h)`).
    /// Empty after a join without dense maps (`merged_shift` holds the nonzero ones).
    pub shift: Vec<[i32; 2]>,
    /// `wraps[cluster]`: [`WRAP_X`] | [`WRAP_Y`] bits; index 0 unused.
    pub wraps: Vec<u8>,
    /// The number of clusters.
    pub count: usize,
    /// The pieces that are not their cluster's root (joined to a smaller piece across an edge
    /// or a seam), in increasing order: the only pieces that do not start a cluster.
    pub merged: Vec<u32>,
    /// `merged_map[i]` and `merged_shift[i]`: the cluster and the shift of `merged[i]`, filled
    /// by every join (a join without dense maps fills only these; a root's shift is zero).
    pub merged_map: Vec<u32>,
    pub merged_shift: Vec<[i32; 2]>,
    /// Number the pieces with rayon's threads (callers that run in their own pool and may
    /// allocate; the per-timestep counts join serially and allocate nothing once warm).
    pub parallel: bool,
    /// The pieces of the last join.
    pieces: usize,
    /// The union-find over the pieces a join links: `parent`, `offset` and `flags` of piece `p`
    /// hold this join's values only where `stamp[p] == stamp_now` (else `p` is a root of its
    /// own, with no offset and no flags), so that a join touches the pieces on the edges and
    /// not every piece of the lattice.
    parent: Vec<u32>,
    offset: Vec<[i32; 2]>,
    flags: Vec<u8>,
    stamp: Vec<u32>,
    stamp_now: u32,
    /// `join_edges`' scratch: the pieces of columns 0 and w − 1.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    lines: Vec<u32>,
    /// The pieces `link` put under another root, and the roots whose flags it set (each at most
    /// once: both at most `npieces`, so that `reserve` makes room for every join).
    losers: Vec<u32>,
    touched: Vec<u32>,
}

/// Pieces from which a parallel join fills its dense per-piece maps (`map`, `shift`) with
/// rayon's threads. On the 16-core GPU machine, when a join still set up every piece's arrays
/// too, that of a 16384² 4-connected torus's 7.4 M pieces took 25–32 ms with one thread and
/// 5.3–6.4 ms with rayon's, but that of 166 K pieces (8-connected) 0.46–0.72 ms against
/// 0.86–1.10 ms: waking the threads costs more than the work.
const PAR_PIECES: usize = 1 << 19;

/// Makes `v` `n` copies of `value`, written by rayon's threads when `par`.
fn refill<T: Copy + Send + Sync>(v: &mut Vec<T>, n: usize, value: T, par: bool) {
    v.clear();
    if par {
        v.par_extend(rayon::iter::repeat_n(value, n));
    } else {
        v.resize(n, value);
    }
}

impl Joined {
    /// An empty join that numbers its pieces with rayon's threads.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn parallel() -> Joined {
        Joined {
            parallel: true,
            ..Joined::default()
        }
    }

    /// Makes piece `x` a set of its own in this join if the join has not seen it yet.
    #[inline]
    fn meet(&mut self, x: u32) {
        let i = x as usize;
        if self.stamp[i] != self.stamp_now {
            self.stamp[i] = self.stamp_now;
            self.parent[i] = x;
            self.offset[i] = [0, 0];
            self.flags[i] = 0;
        }
    }

    /// The root of `x` and `x`'s shift relative to it; `x` must have been met (a parent is
    /// always a piece met before it).
    fn find(&mut self, x: u32) -> (u32, [i32; 2]) {
        let mut r = x;
        let mut acc = [0i32; 2];
        while self.parent[r as usize] != r {
            let o = self.offset[r as usize];
            acc = [acc[0] + o[0], acc[1] + o[1]];
            r = self.parent[r as usize];
        }
        // Path compression, keeping each node's offset to the root.
        let mut cur = x;
        let mut rem = acc;
        while self.parent[cur as usize] != cur {
            let next = self.parent[cur as usize];
            let o = self.offset[cur as usize];
            self.parent[cur as usize] = r;
            self.offset[cur as usize] = rem;
            rem = [rem[0] - o[0], rem[1] - o[1]];
            cur = next;
        }
        (r, acc)
    }

    /// Records the link "the shift of `b` minus the shift of `a` is `k`".
    fn link(&mut self, a: u32, b: u32, k: [i32; 2]) {
        self.meet(a);
        self.meet(b);
        let (ra, oa) = self.find(a);
        let (rb, ob) = self.find(b);
        if ra == rb {
            let dx = ob[0] - oa[0] - k[0];
            let dy = ob[1] - oa[1] - k[1];
            let f = (u8::from(dx != 0) * WRAP_X) | (u8::from(dy != 0) * WRAP_Y);
            self.add_flags(ra, f);
            return;
        }
        // shift(rb) - shift(ra)
        let rel = [k[0] - ob[0] + oa[0], k[1] - ob[1] + oa[1]];
        let (root, child, off) = if ra < rb {
            (ra, rb, rel)
        } else {
            (rb, ra, [-rel[0], -rel[1]])
        };
        self.parent[child as usize] = root;
        self.offset[child as usize] = off;
        self.losers.push(child);
        self.add_flags(root, self.flags[child as usize]);
    }

    /// ORs `f` into root `r`'s flags, noting `r` the first time they become nonzero (at most
    /// once per piece: flags only grow, and a root that is merged never becomes one again).
    fn add_flags(&mut self, r: u32, f: u8) {
        let old = self.flags[r as usize];
        if old == 0 && f != 0 {
            self.touched.push(r);
        }
        self.flags[r as usize] = old | f;
    }

    /// Joins the `pieces` (`1..=npieces`, open-boundary labels) across the edges that `boundary`
    /// wraps, with the literal neighbourhood of `connectivity`; `joined(a, b)` says whether two
    /// neighbouring sites `(y, x)` are joined.
    pub(crate) fn join(
        &mut self,
        pieces: ArrayView2<'_, u32>,
        npieces: usize,
        connectivity: Connectivity,
        boundary: Boundary,
        joined: impl Fn((usize, usize), (usize, usize)) -> bool,
    ) {
        let (h, w) = pieces.dim();
        self.join_by(h, w, npieces, connectivity, boundary, |s, t, _| {
            let (a, b) = (pieces[s], pieces[t]);
            (a != 0 && b != 0 && joined(s, t)).then_some((a, b))
        });
    }

    /// As [`Joined::join`], for occupancy lattices whose pieces are known only at the edge
    /// sites: `edge` holds the piece of every edge site (0 = empty) in [`edge_index`] order.
    /// The same join as [`Joined::join_by`], links in the same order, read straight from the
    /// edge lines (the per-link closure and site arithmetic cost several times the union-find).
    ///
    /// With `dense` the join fills `map` and `shift` for every piece; without, it fills
    /// only `merged_map` and `merged_shift` (and leaves `map` and `shift` empty until
    /// [`Joined::fill_map`]), so that it costs the edges' pieces and not every piece.
    ///
    /// # Panics
    /// When `edge` holds fewer than `2 (h + w)` entries (callers size it so).
    // Only the GPU analyzer has pieces known at the edges alone.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn join_edges(
        &mut self,
        (h, w): (usize, usize),
        npieces: usize,
        connectivity: Connectivity,
        boundary: Boundary,
        edge: &[u32],
        dense: bool,
    ) {
        self.begin(npieces, &[]);
        let (wy, wx) = (boundary.wraps_y(), boundary.wraps_x());
        if h > 0 && w > 0 && (wx || wy) {
            // Columns 0 and w − 1 (their ends are in the rows' part of `edge`).
            let mut cols = std::mem::take(&mut self.lines);
            cols.clear();
            cols.extend((0..h).map(|y| edge[edge_index((h, w), (y, 0))]));
            cols.extend((0..h).map(|y| edge[edge_index((h, w), (y, w - 1))]));
            let (left, right) = cols.split_at(h);
            let top = &edge[..w];
            let bottom = if h > 1 { &edge[w..2 * w] } else { top };
            // The links of for_each_wrap_link, in its order (so that the shifts come out the
            // same), line by line.
            let eight = connectivity == Connectivity::Eight;
            if wx {
                self.scan(right, left, [1, 0]);
                if eight {
                    self.scan(&right[..h - 1], &left[1..], [1, 0]);
                    if wy {
                        self.scan(&right[h - 1..], &left[..1], [1, 1]);
                    }
                    self.scan(&left[..h - 1], &right[1..], [-1, 0]);
                    if wy {
                        self.scan(&left[h - 1..], &right[..1], [-1, 1]);
                    }
                }
            }
            if wy {
                self.scan(bottom, top, [0, 1]);
                if eight {
                    // (From the last column, a diagonal crosses the x edge too: above, or no
                    // link.)
                    self.scan(&bottom[..w - 1], &top[1..], [0, 1]);
                    self.scan(&bottom[1..], &top[..w - 1], [0, 1]);
                }
            }
            self.lines = cols;
        }
        self.number(npieces, dense);
    }

    /// Links `a[i]` to `b[i]` with shift `k` where both are pieces (not 0). A link equal to
    /// the one before adds nothing, and along an edge most links repeat the last one; the test
    /// is one branch, taken at a new pair only, where tests of each end would mispredict on
    /// the random empty sites.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn scan(&mut self, a: &[u32], b: &[u32], k: [i32; 2]) {
        let mut last = 0u64;
        for (&x, &y) in a.iter().zip(b) {
            // An empty end keeps the last pair (a select, not a branch).
            let pair = (u64::from(x) << 32) | u64::from(y);
            let key = if (x != 0) & (y != 0) { pair } else { last };
            if key != last {
                self.link(x, y, k);
                last = key;
            }
        }
    }

    /// Whether piece `p` is its cluster's union-find root: its smallest piece, whose first site
    /// is the cluster's and whose shift is zero.
    pub(crate) fn is_root(&self, p: u32) -> bool {
        let i = p as usize;
        self.stamp[i] != self.stamp_now || self.parent[i] == p
    }

    /// Makes room for `npieces` pieces, so that joins of as many allocate nothing.
    pub(crate) fn reserve(&mut self, npieces: usize) {
        fn room<T>(v: &mut Vec<T>, n: usize) {
            v.reserve(n.saturating_sub(v.len()));
        }
        let n = npieces + 1;
        room(&mut self.map, n);
        room(&mut self.shift, n);
        room(&mut self.wraps, n);
        room(&mut self.parent, n);
        room(&mut self.offset, n);
        room(&mut self.flags, n);
        room(&mut self.merged, n);
        room(&mut self.merged_map, n);
        room(&mut self.merged_shift, n);
        room(&mut self.stamp, n);
        room(&mut self.losers, n);
        room(&mut self.touched, n);
    }

    /// The join, with `link(site, neighbour, k)` giving the two pieces of a joined wrap link
    /// (pieces `1..=npieces`), or `None` when the link does not join them; `k` is the number of
    /// periods crossed, as in [`for_each_wrap_link`] (which tells a bond from its twin on a
    /// torus 1 or 2 sites wide).
    pub(crate) fn join_by(
        &mut self,
        h: usize,
        w: usize,
        npieces: usize,
        connectivity: Connectivity,
        boundary: Boundary,
        link: impl Fn((usize, usize), (usize, usize), [i32; 2]) -> Option<(u32, u32)>,
    ) {
        self.join_with_seams(h, w, npieces, connectivity, boundary, &[], link);
    }

    /// As [`Joined::join_by`], with `seams`: pairs of pieces joined inside the lattice, without
    /// crossing a period (pieces labeled apart, such as the strips of a lattice on several GPUs,
    /// that touch across the rows between them).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn join_with_seams(
        &mut self,
        h: usize,
        w: usize,
        npieces: usize,
        connectivity: Connectivity,
        boundary: Boundary,
        seams: &[(u32, u32)],
        link: impl Fn((usize, usize), (usize, usize), [i32; 2]) -> Option<(u32, u32)>,
    ) {
        self.begin(npieces, seams);
        let (wy, wx) = (boundary.wraps_y(), boundary.wraps_x());
        if h > 0 && w > 0 && (wx || wy) {
            // A link equal to the one before adds nothing (the pieces are joined with that
            // shift already), and along an edge most links repeat the last one.
            let mut last = None;
            for_each_wrap_link(h, w, connectivity, wx, wy, |s, t, k| {
                if let Some((a, b)) = link(s, t, k) {
                    if last != Some((a, b, k)) {
                        self.link(a, b, k);
                        last = Some((a, b, k));
                    }
                }
            });
        }
        self.number(npieces, true);
    }

    /// Every piece its own set (by a new stamp: nothing is written per piece, except where the
    /// arrays grow), then the `seams` linked.
    fn begin(&mut self, npieces: usize, seams: &[(u32, u32)]) {
        let n = npieces + 1;
        if self.stamp.len() < n {
            // Entries stamped 0 were never met: the stamps in use start at 1. Zeroed by the
            // system, so that only the pages of the pieces met are ever touched.
            use crate::core::alloc::grow_zeroed;
            grow_zeroed(&mut self.stamp, n);
            grow_zeroed(&mut self.parent, n);
            grow_zeroed(&mut self.offset, n);
            grow_zeroed(&mut self.flags, n);
        }
        self.stamp_now = self.stamp_now.wrapping_add(1);
        if self.stamp_now == 0 {
            self.stamp.fill(0);
            self.stamp_now = 1;
        }
        self.losers.clear();
        self.touched.clear();
        for &(a, b) in seams {
            self.link(a, b, [0, 0]);
        }
    }

    /// Numbers the sets' roots and fills `merged`, `merged_map`, `merged_shift`, `wraps` and
    /// `count`, and with `dense` `map` and `shift`.
    ///
    /// A root is its set's smallest piece, so the roots are numbered by their rank among the
    /// roots: piece `p` is root number `p − (pieces below p that are not roots)`. The pieces that
    /// are not roots are the few that `link` put under another (`losers`), so the numbering is
    /// one streaming fill, and only those pieces and the roots `link` saw need more.
    fn number(&mut self, npieces: usize, dense: bool) {
        self.pieces = npieces;
        self.merged.clear();
        self.merged.extend_from_slice(&self.losers);
        self.merged.sort_unstable();
        self.count = npieces - self.merged.len();
        self.merged_map.clear();
        self.merged_shift.clear();
        for i in 0..self.merged.len() {
            let (r, o) = self.find(self.merged[i]);
            let c = self.root_number(r);
            self.merged_map.push(c);
            self.merged_shift.push(o);
        }
        self.wraps.clear();
        self.wraps.resize(self.count + 1, 0);
        for i in 0..self.touched.len() {
            let r = self.touched[i];
            if self.parent[r as usize] == r {
                let c = self.root_number(r);
                self.wraps[c as usize] = self.flags[r as usize];
            }
        }
        if dense {
            self.fill_map();
            let par = self.parallel && npieces >= PAR_PIECES;
            refill(&mut self.shift, npieces + 1, [0, 0], par);
            for (&p, &o) in self.merged.iter().zip(&self.merged_shift) {
                self.shift[p as usize] = o;
            }
        } else {
            self.map.clear();
            self.shift.clear();
        }
    }

    /// The cluster of root `r`: its rank among the roots.
    fn root_number(&self, r: u32) -> u32 {
        r - self.merged.partition_point(|&m| m < r) as u32
    }

    /// Fills `map` for every piece of the last join (which a join without dense maps leaves
    /// empty): a label image of pieces needs it, a table only `merged_map`.
    pub(crate) fn fill_map(&mut self) {
        let npieces = self.pieces;
        let par = self.parallel && npieces >= PAR_PIECES;
        refill(&mut self.map, npieces + 1, 0, par);
        let merged = &self.merged;
        // Roots: rank among the roots; the merged pieces are overwritten below.
        let fill = |first: usize, map: &mut [u32]| {
            let mut below = merged.partition_point(|&m| (m as usize) < first);
            for (p, m) in (first..).zip(map.iter_mut()) {
                if below < merged.len() && merged[below] as usize == p {
                    below += 1;
                } else {
                    *m = (p - below) as u32;
                }
            }
        };
        const CHUNK: usize = PAR_PIECES / 4;
        if par {
            (self.map[1..].par_chunks_mut(CHUNK).enumerate())
                .for_each(|(k, c)| fill(1 + k * CHUNK, c));
        } else {
            fill(1, &mut self.map[1..]);
        }
        for (&p, &c) in self.merged.iter().zip(&self.merged_map) {
            self.map[p as usize] = c;
        }
    }
}

/// The index of edge site `(y, x)` in the edge arrays of [`Joined::join_edges`]: row 0, row
/// `h − 1`, then columns 0 and `w − 1` without their first and last sites (`2 (h + w)` entries,
/// some unused on lattices of one or two rows).
pub(crate) fn edge_index((h, w): (usize, usize), (y, x): (usize, usize)) -> usize {
    if y == 0 {
        x
    } else if y == h - 1 {
        w + x
    } else if x == 0 {
        2 * w + y
    } else {
        2 * w + h + y
    }
}

/// Calls `f(site, neighbour, k)` once for every link of the literal neighbourhood that crosses a
/// wrapping edge: `k` is the number of periods crossed per axis (`[kx, ky]`, each −1, 0 or 1), so
/// that the neighbour's unwrapped position is the site's plus the offset. A link is visited from
/// the end whose offset to the other is `(0, 1)`, `(1, 0)` or a diagonal downwards (a link and
/// its twin on a torus 1 or 2 sites wide are two links), offset by offset along each edge, so
/// that consecutive links mostly join the same two pieces.
pub(crate) fn for_each_wrap_link(
    h: usize,
    w: usize,
    connectivity: Connectivity,
    wraps_x: bool,
    wraps_y: bool,
    mut f: impl FnMut((usize, usize), (usize, usize), [i32; 2]),
) {
    if h == 0 || w == 0 {
        return;
    }
    let (hi, wi) = (h as isize, w as isize);
    let mut one = |y: usize, x: usize, dy: isize, dx: isize| {
        let (ty, tx) = (y as isize + dy, x as isize + dx);
        let ky = isize::from(ty >= hi);
        let kx = if tx >= wi {
            1
        } else if tx < 0 {
            -1
        } else {
            0
        };
        if (ky == 0 && kx == 0) || (ky != 0 && !wraps_y) || (kx != 0 && !wraps_x) {
            return;
        }
        let t = ((ty - ky * hi) as usize, (tx - kx * wi) as usize);
        f((y, x), t, [kx as i32, ky as i32]);
    };
    let eight = connectivity == Connectivity::Eight;
    // Across the x edge: from column w − 1 rightwards and down-right, from column 0 down-left
    // (the last row's links among them cross the y edge too).
    if wraps_x {
        (0..h).for_each(|y| one(y, w - 1, 0, 1));
        if eight {
            (0..h).for_each(|y| one(y, w - 1, 1, 1));
            (0..h).for_each(|y| one(y, 0, 1, -1));
        }
    }
    // Across the y edge: from row h − 1 downwards, and diagonally where not visited above.
    if wraps_y {
        (0..w).for_each(|x| one(h - 1, x, 1, 0));
        if eight {
            (0..w)
                .filter(|&x| !(wraps_x && x == w - 1))
                .for_each(|x| one(h - 1, x, 1, 1));
            (0..w)
                .filter(|&x| !(wraps_x && x == 0))
                .for_each(|x| one(h - 1, x, 1, -1));
        }
    }
}

#[cfg(test)]
mod tests;
