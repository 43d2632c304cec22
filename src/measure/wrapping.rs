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

/// Wraps in `x`.
pub(crate) const WRAP_X: u8 = 1;
/// Wraps in `y`.
pub(crate) const WRAP_Y: u8 = 2;

/// Pieces joined into periodic clusters.
#[derive(Default)]
pub(crate) struct Joined {
    /// `map[piece]`: the cluster (numbered `1..=count` by smallest piece); `map[0] = 0`.
    pub map: Vec<u32>,
    /// `shift[piece]`: `[sx, sy]`, the piece's copy relative to its cluster's first site, in
    /// lattice periods (a site's unwrapped position is its position plus `shift * (w, h)`).
    pub shift: Vec<[i32; 2]>,
    /// `wraps[cluster]`: [`WRAP_X`] | [`WRAP_Y`] bits; index 0 unused.
    pub wraps: Vec<u8>,
    /// The number of clusters.
    pub count: usize,
    /// The pieces that are not their cluster's root (joined to a smaller piece across an edge
    /// or a seam), in increasing order: the only pieces that do not start a cluster.
    pub merged: Vec<u32>,
    /// Number the pieces with rayon's threads (callers that run in their own pool and may
    /// allocate; the per-timestep counts join serially and allocate nothing once warm).
    pub parallel: bool,
    parent: Vec<u32>,
    offset: Vec<[i32; 2]>,
    flags: Vec<u8>,
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
        let (ra, oa) = self.find(a);
        let (rb, ob) = self.find(b);
        if ra == rb {
            let dx = ob[0] - oa[0] - k[0];
            let dy = ob[1] - oa[1] - k[1];
            let f = &mut self.flags[ra as usize];
            if dx != 0 {
                *f |= WRAP_X;
            }
            if dy != 0 {
                *f |= WRAP_Y;
            }
            return;
        }
        // shift(rb) - shift(ra)
        let rel = [k[0] - ob[0] + oa[0], k[1] - ob[1] + oa[1]];
        if ra < rb {
            self.parent[rb as usize] = ra;
            self.offset[rb as usize] = rel;
            self.flags[ra as usize] |= self.flags[rb as usize];
        } else {
            self.parent[ra as usize] = rb;
            self.offset[ra as usize] = [-rel[0], -rel[1]];
            self.flags[rb as usize] |= self.flags[ra as usize];
        }
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
    /// sites: `piece_at(site)` is called for sites on the wrapped edges only (0 = empty).
    // Only the GPU analyzer has pieces known at the edges alone.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn join_edges(
        &mut self,
        (h, w): (usize, usize),
        npieces: usize,
        connectivity: Connectivity,
        boundary: Boundary,
        piece_at: impl Fn((usize, usize)) -> u32,
    ) {
        self.join_by(h, w, npieces, connectivity, boundary, |s, t, _| {
            let (a, b) = (piece_at(s), piece_at(t));
            (a != 0 && b != 0).then_some((a, b))
        });
    }

    /// Whether piece `p` is its cluster's union-find root: its smallest piece, whose first site
    /// is the cluster's and whose shift is zero.
    pub(crate) fn is_root(&self, p: u32) -> bool {
        self.parent[p as usize] == p
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
        self.parent.clear();
        self.parent.extend(0..=npieces as u32);
        self.offset.clear();
        self.offset.resize(npieces + 1, [0, 0]);
        self.flags.clear();
        self.flags.resize(npieces + 1, 0);
        for &(a, b) in seams {
            self.link(a, b, [0, 0]);
        }
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
        // Number the roots in increasing order (= raster order of their first sites).
        self.map.clear();
        self.map.resize(npieces + 1, 0);
        self.shift.clear();
        self.shift.resize(npieces + 1, [0, 0]);
        self.wraps.clear();
        self.wraps.push(0);
        self.merged.clear();
        if self.parallel && npieces >= 1 << 16 {
            self.number_parallel(npieces);
            return;
        }
        let mut n = 0u32;
        for p in 1..=npieces as u32 {
            let (r, o) = self.find(p);
            if r == p {
                n += 1;
                self.map[p as usize] = n;
                self.wraps.push(self.flags[p as usize]);
            } else {
                self.map[p as usize] = self.map[r as usize];
                self.merged.push(p);
            }
            self.shift[p as usize] = o;
        }
        self.count = n as usize;
    }

    /// The numbering of [`Joined::join_with_seams`] in parallel: a root is its set's smallest
    /// piece, so the roots are numbered by their rank among the roots (counted per chunk, then
    /// offset), and only the few other pieces (joined across an edge or a seam) need a find.
    fn number_parallel(&mut self, npieces: usize) {
        use rayon::prelude::*;
        const CHUNK: usize = 1 << 16;
        let parent = &self.parent;
        let is_root = |p: usize| parent[p] as usize == p;
        let counts: Vec<u32> = (1..npieces + 1)
            .into_par_iter()
            .step_by(CHUNK)
            .map(|a| {
                (a..(a + CHUNK).min(npieces + 1))
                    .filter(|&p| is_root(p))
                    .count() as u32
            })
            .collect();
        let mut start = Vec::with_capacity(counts.len());
        let mut n = 0u32;
        for c in counts {
            start.push(n);
            n += c;
        }
        self.map[1..]
            .par_chunks_mut(CHUNK)
            .zip(start)
            .enumerate()
            .for_each(|(k, (map, mut c))| {
                let base = k * CHUNK + 1;
                for (i, m) in map.iter_mut().enumerate() {
                    if is_root(base + i) {
                        c += 1;
                        *m = c;
                    }
                }
            });
        let flags = &self.flags;
        let roots_flags: Vec<u8> = (1..npieces + 1)
            .into_par_iter()
            .filter(|&p| is_root(p))
            .map(|p| flags[p])
            .collect();
        self.wraps.extend(roots_flags);
        self.merged = (1..npieces as u32 + 1)
            .into_par_iter()
            .filter(|&p| !is_root(p as usize))
            .collect();
        for i in 0..self.merged.len() {
            let p = self.merged[i];
            let (r, o) = self.find(p);
            self.map[p as usize] = self.map[r as usize];
            self.shift[p as usize] = o;
        }
        self.count = n as usize;
    }
}

/// Calls `f(site, neighbour, k)` for every link of the literal neighbourhood that crosses a
/// wrapping edge, from both ends: `k` is the number of periods crossed per axis (`[kx, ky]`, each
/// −1, 0 or 1), so that the neighbour's unwrapped position is the site's plus the offset.
pub(crate) fn for_each_wrap_link(
    h: usize,
    w: usize,
    connectivity: Connectivity,
    wraps_x: bool,
    wraps_y: bool,
    mut f: impl FnMut((usize, usize), (usize, usize), [i32; 2]),
) {
    let offsets = connectivity.offsets();
    let wrap = |v: isize, n: usize, wraps: bool| -> Option<(usize, i32)> {
        if v < 0 {
            wraps.then(|| ((v + n as isize) as usize, -1))
        } else if v as usize >= n {
            wraps.then(|| (v as usize - n, 1))
        } else {
            Some((v as usize, 0))
        }
    };
    let mut visit = |y: usize, x: usize| {
        for &(dy, dx) in offsets {
            let Some((ty, ky)) = wrap(y as isize + dy, h, wraps_y) else {
                continue;
            };
            let Some((tx, kx)) = wrap(x as isize + dx, w, wraps_x) else {
                continue;
            };
            if kx != 0 || ky != 0 {
                f((y, x), (ty, tx), [kx, ky]);
            }
        }
    };
    // The border sites, each once.
    for x in 0..w {
        visit(0, x);
        if h > 1 {
            visit(h - 1, x);
        }
    }
    for y in 1..h.saturating_sub(1) {
        visit(y, 0);
        if w > 1 {
            visit(y, w - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn run(pieces: ArrayView2<'_, u32>, c: Connectivity, b: Boundary) -> Joined {
        let n = pieces.iter().copied().max().unwrap_or(0) as usize;
        let mut j = Joined::default();
        j.join(pieces, n, c, b, |s, t| pieces[s] != 0 && pieces[t] != 0);
        j
    }

    #[test]
    fn straight_strip_wraps_in_x_only() {
        let p = array![[0, 0, 0], [1, 1, 1], [0, 0, 0]];
        let j = run(p.view(), Connectivity::Four, Boundary::Periodic);
        assert_eq!(j.count, 1);
        assert_eq!(j.wraps[1], WRAP_X);
    }

    #[test]
    fn two_pieces_joined_across_the_edge_get_a_shift() {
        // Pieces 1 (column 0) and 2 (column 2) meet across the x edge: no winding.
        let p = array![[1, 0, 2], [0, 0, 0]];
        let j = run(p.view(), Connectivity::Four, Boundary::Periodic);
        assert_eq!(j.count, 1);
        assert_eq!(j.wraps[1], 0);
        // Piece 2 is reached from piece 1 by stepping left across the edge: one period back.
        assert_eq!(j.shift[2], [-1, 0]);
    }

    #[test]
    fn diagonal_winding_wraps_both() {
        // One open piece (8-connected along the diagonal) that closes on itself across the corner.
        let p = array![[1, 0, 0], [0, 1, 0], [0, 0, 1]];
        let j = run(p.view(), Connectivity::Eight, Boundary::Periodic);
        assert_eq!(j.count, 1);
        assert_eq!(j.wraps[1], WRAP_X | WRAP_Y);
    }

    #[test]
    fn width_one_torus_wraps_in_x() {
        let p = array![[1], [0]];
        let j = run(p.view(), Connectivity::Four, Boundary::Periodic);
        assert_eq!(j.wraps[1], WRAP_X);
        let j = run(p.view(), Connectivity::Four, Boundary::PeriodicY);
        assert_eq!(j.wraps[1], 0);
    }
}
