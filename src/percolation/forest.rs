//! The union-find forest of a Newman–Ziff sweep: union by size, path compression, and for each
//! site the unwrapped displacement to its parent, so that a link closing a loop with a nonzero
//! net displacement (winding) marks its cluster as wrapping (Machta et al. 1996; Newman & Ziff
//! 2001, §II.D). Along open axes the forest records which edges a cluster touches instead
//! (spanning). It also keeps, incrementally, the per-lattice observables a study records after
//! every added unit.

use super::model::Geometry;

/// No parent: an empty site.
const EMPTY: u32 = u32::MAX;

// Root flags. Touch flags are only set along open axes (a periodic axis has no edge).
const LEFT: u8 = 1;
const RIGHT: u8 = 2;
const TOP: u8 = 4;
const BOTTOM: u8 = 8;
const WRAP_X: u8 = 16;
const WRAP_Y: u8 = 32;

/// Whether a cluster with these flags percolates along `x`: wraps (periodic) or spans (open).
#[inline]
fn along_x(f: u8) -> bool {
    f & WRAP_X != 0 || f & (LEFT | RIGHT) == LEFT | RIGHT
}

#[inline]
fn along_y(f: u8) -> bool {
    f & WRAP_Y != 0 || f & (TOP | BOTTOM) == TOP | BOTTOM
}

#[inline]
fn percolates(f: u8) -> bool {
    along_x(f) || along_y(f)
}

/// The per-lattice observables after the latest added unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Observables {
    /// Size of the largest cluster.
    pub largest: u64,
    /// Sites in clusters that wrap (or span) along either axis.
    pub percolating_sites: u64,
    /// `Σ′ s²` over the clusters that do not percolate.
    pub finite_s2: u64,
    /// Some cluster percolates along `x` (`R^(h)`).
    pub any_x: bool,
    /// Some cluster percolates along `y` (`R^(v)`).
    pub any_y: bool,
    /// One cluster percolates along both axes (`R^(b)`).
    pub any_both: bool,
}

/// The forest, reused from sample to sample (it owns its buffers).
pub(crate) struct Forest {
    geometry: Geometry,
    parent: Vec<u32>,
    /// Unwrapped displacement from a site to its parent (`x`, `y`).
    disp: Vec<(i32, i32)>,
    /// Cluster size, valid at roots.
    size: Vec<u32>,
    /// Flags, valid at roots.
    flags: Vec<u8>,
    obs: Observables,
}

impl Forest {
    pub(crate) fn new(geometry: Geometry) -> Forest {
        let n = geometry.sites();
        Forest {
            geometry,
            parent: vec![EMPTY; n],
            disp: vec![(0, 0); n],
            size: vec![0; n],
            flags: vec![0; n],
            obs: Observables::default(),
        }
    }

    pub(crate) fn observables(&self) -> Observables {
        self.obs
    }

    /// Empties every site (site percolation's start).
    pub(crate) fn clear(&mut self) {
        self.parent.fill(EMPTY);
        self.obs = Observables::default();
    }

    /// Occupies every site as its own cluster (bond percolation's start).
    pub(crate) fn fill_isolated(&mut self) {
        self.clear();
        for i in 0..self.parent.len() {
            self.occupy(i);
        }
    }

    #[inline]
    pub(crate) fn is_occupied(&self, i: usize) -> bool {
        self.parent[i] != EMPTY
    }

    /// The touch flags of site `i` along the open axes.
    #[inline]
    fn touch_flags(&self, i: usize) -> u8 {
        let g = &self.geometry;
        let (y, x) = (i / g.width, i % g.width);
        let mut f = 0;
        if !g.boundary.wraps_x() {
            f |= if x == 0 { LEFT } else { 0 } | if x + 1 == g.width { RIGHT } else { 0 };
        }
        if !g.boundary.wraps_y() {
            f |= if y == 0 { TOP } else { 0 } | if y + 1 == g.height { BOTTOM } else { 0 };
        }
        f
    }

    /// Adds (`sign` = +1) or removes (−1) a cluster's share of the observables' sums.
    #[inline]
    fn account(&mut self, size: u32, flags: u8, add: bool) {
        let s = u64::from(size);
        let (p, q) = if percolates(flags) {
            (s, 0)
        } else {
            (0, s * s)
        };
        if add {
            self.obs.percolating_sites += p;
            self.obs.finite_s2 += q;
            self.obs.largest = self.obs.largest.max(s);
            self.obs.any_x |= along_x(flags);
            self.obs.any_y |= along_y(flags);
            self.obs.any_both |= along_x(flags) && along_y(flags);
        } else {
            self.obs.percolating_sites -= p;
            self.obs.finite_s2 -= q;
        }
    }

    /// Occupies site `i` as a new cluster of one site (no links yet).
    #[inline]
    pub(crate) fn occupy(&mut self, i: usize) {
        self.parent[i] = i as u32;
        self.disp[i] = (0, 0);
        self.size[i] = 1;
        let f = self.touch_flags(i);
        self.flags[i] = f;
        self.account(1, f, true);
    }

    /// The root of `i` and the unwrapped displacement from `i` to it, compressing the path.
    #[inline]
    fn find(&mut self, i: usize) -> (usize, i32, i32) {
        let (mut r, mut dx, mut dy) = (i, 0i32, 0i32);
        while self.parent[r] as usize != r {
            let (ex, ey) = self.disp[r];
            dx += ex;
            dy += ey;
            r = self.parent[r] as usize;
        }
        // Second pass: point every node of the path at the root with its total displacement.
        let (mut k, mut kx, mut ky) = (i, dx, dy);
        while self.parent[k] as usize != r {
            let next = self.parent[k] as usize;
            let (ex, ey) = self.disp[k];
            self.parent[k] = r as u32;
            self.disp[k] = (kx, ky);
            kx -= ex;
            ky -= ey;
            k = next;
        }
        (r, dx, dy)
    }

    /// Links occupied sites `a` and `b`, `(sx, sy)` being the unwrapped step from `a` to `b`
    /// (across a periodic edge the step is still ±1). Two clusters merge; a link inside one
    /// cluster closes a loop, which wraps when the loop's net displacement is nonzero.
    #[inline]
    pub(crate) fn link(&mut self, a: usize, b: usize, sx: i32, sy: i32) {
        let (ra, ax, ay) = self.find(a);
        let (rb, bx, by) = self.find(b);
        if ra == rb {
            // Around the loop a → b → root → a: step + (b to root) − (a to root).
            let (wx, wy) = (sx + bx - ax, sy + by - ay);
            let f = self.flags[ra];
            let g = f | if wx != 0 { WRAP_X } else { 0 } | if wy != 0 { WRAP_Y } else { 0 };
            if g != f {
                self.account(self.size[ra], f, false);
                self.flags[ra] = g;
                self.account(self.size[ra], g, true);
            }
            return;
        }
        let (sa, sb) = (self.size[ra], self.size[rb]);
        let (fa, fb) = (self.flags[ra], self.flags[rb]);
        self.account(sa, fa, false);
        self.account(sb, fb, false);
        // Position of rb relative to ra: (a to ra) reversed, then the step, then b to rb.
        let (rx, ry) = (sx + bx - ax, sy + by - ay);
        let root = if sa >= sb {
            self.parent[rb] = ra as u32;
            self.disp[rb] = (-rx, -ry);
            ra
        } else {
            self.parent[ra] = rb as u32;
            self.disp[ra] = (rx, ry);
            rb
        };
        self.size[root] = sa + sb;
        self.flags[root] = fa | fb;
        self.account(sa + sb, fa | fb, true);
    }

    /// Adds site `i` of a site-percolation sweep: occupies it and links it to its occupied
    /// neighbours (the literal neighbourhood: on a torus one site wide a site is its own
    /// neighbour, and that link wraps).
    #[inline]
    pub(crate) fn add_site(&mut self, i: usize) {
        self.occupy(i);
        let g = self.geometry;
        let (w, h) = (g.width as isize, g.height as isize);
        let (y, x) = ((i / g.width) as isize, (i % g.width) as isize);
        for &(dy, dx) in g.model.connectivity().offsets() {
            let (mut ny, mut nx) = (y + dy, x + dx);
            if nx < 0 || nx >= w {
                if !g.boundary.wraps_x() {
                    continue;
                }
                nx = nx.rem_euclid(w);
            }
            if ny < 0 || ny >= h {
                if !g.boundary.wraps_y() {
                    continue;
                }
                ny = ny.rem_euclid(h);
            }
            let j = (ny * w + nx) as usize;
            if self.is_occupied(j) {
                self.link(i, j, dx as i32, dy as i32);
            }
        }
    }

    /// Adds bond `b` of a bond-percolation sweep.
    #[inline]
    pub(crate) fn add_bond(&mut self, b: usize) {
        let (from, to, sx, sy) = self.geometry.bond(b);
        self.link(from, to, sx, sy);
    }

    /// Adds one to `hist[s]` for every cluster of `s` sites that does not percolate.
    pub(crate) fn count_finite_sizes(&self, hist: &mut [u64]) {
        for (i, &p) in self.parent.iter().enumerate() {
            if p as usize == i && !percolates(self.flags[i]) {
                hist[self.size[i] as usize] += 1;
            }
        }
    }

    /// Per root: `(size, wraps or spans along x, along y)`, for tests.
    #[cfg(test)]
    pub(crate) fn clusters(&self) -> Vec<(u32, bool, bool)> {
        (0..self.parent.len())
            .filter(|&i| self.parent[i] as usize == i)
            .map(|i| (self.size[i], along_x(self.flags[i]), along_y(self.flags[i])))
            .collect()
    }
}
