//! The oracle of the Newman–Ziff sweep (tests only): the straightforward sweep the crate had
//! before the fast one in `forest.rs` and `newman_ziff.rs`, kept as it was. A union-find forest
//! with union by size, path compression, and for each site the unwrapped displacement to its
//! parent, so that a link closing a loop with a nonzero net displacement (winding) marks its
//! cluster as wrapping (Machta et al. 1996; Newman & Ziff 2001, §II.D); touch flags along open
//! axes; the observables kept incrementally and added to the `u128` sums after every unit.
//! The fast sweep must give exactly its sums and records.

use super::model::{Geometry, Model};
use super::sums::{MicroSums, SampleRecord, NEVER};
// The same observables as the forest reports, so that tests compare them directly.
use super::winding::Observables;
use rand_philox::Philox;

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

/// One site of the forest, packed so that a step of `find` touches one cache line.
#[derive(Debug, Clone, Copy)]
struct Node {
    parent: u32,
    /// Cluster size, valid at roots.
    size: u32,
    /// Unwrapped displacement from the site to its parent (`x`, `y`).
    dx: i32,
    dy: i32,
}

const EMPTY_NODE: Node = Node {
    parent: EMPTY,
    size: 0,
    dx: 0,
    dy: 0,
};

/// The forest, reused from sample to sample (it owns its buffers).
pub(crate) struct OracleForest {
    geometry: Geometry,
    nodes: Vec<Node>,
    /// Flags, valid at roots.
    flags: Vec<u8>,
    obs: Observables,
}

impl OracleForest {
    pub(crate) fn new(geometry: Geometry) -> OracleForest {
        let n = geometry.sites();
        OracleForest {
            geometry,
            nodes: vec![EMPTY_NODE; n],
            flags: vec![0; n],
            obs: Observables::default(),
        }
    }

    pub(crate) fn observables(&self) -> Observables {
        self.obs
    }

    /// Empties every site (site percolation's start).
    pub(crate) fn clear(&mut self) {
        self.nodes.fill(EMPTY_NODE);
        self.obs = Observables::default();
    }

    /// Occupies every site as its own cluster (bond percolation's start).
    pub(crate) fn fill_isolated(&mut self) {
        self.clear();
        for i in 0..self.nodes.len() {
            self.occupy(i);
        }
    }

    #[inline]
    pub(crate) fn is_occupied(&self, i: usize) -> bool {
        self.nodes[i].parent != EMPTY
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
        self.nodes[i] = Node {
            parent: i as u32,
            size: 1,
            dx: 0,
            dy: 0,
        };
        let f = self.touch_flags(i);
        self.flags[i] = f;
        self.account(1, f, true);
    }

    /// The root of `i` and the unwrapped displacement from `i` to it, compressing the path.
    #[inline]
    fn find(&mut self, i: usize) -> (usize, i32, i32) {
        let (mut r, mut dx, mut dy) = (i, 0i32, 0i32);
        loop {
            let node = self.nodes[r];
            if node.parent as usize == r {
                break;
            }
            dx += node.dx;
            dy += node.dy;
            r = node.parent as usize;
        }
        // Second pass: point every node of the path at the root with its total displacement.
        let (mut k, mut kx, mut ky) = (i, dx, dy);
        while k != r {
            let node = &mut self.nodes[k];
            let next = node.parent as usize;
            if next == r {
                break;
            }
            let (ex, ey) = (node.dx, node.dy);
            node.parent = r as u32;
            node.dx = kx;
            node.dy = ky;
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
                let size = self.nodes[ra].size;
                self.account(size, f, false);
                self.flags[ra] = g;
                self.account(size, g, true);
            }
            return;
        }
        let (sa, sb) = (self.nodes[ra].size, self.nodes[rb].size);
        let (fa, fb) = (self.flags[ra], self.flags[rb]);
        self.account(sa, fa, false);
        self.account(sb, fb, false);
        // Position of rb relative to ra: (a to ra) reversed, then the step, then b to rb.
        let (rx, ry) = (sx + bx - ax, sy + by - ay);
        let (root, child, cx, cy) = if sa >= sb {
            (ra, rb, -rx, -ry)
        } else {
            (rb, ra, rx, ry)
        };
        let c = &mut self.nodes[child];
        c.parent = root as u32;
        c.dx = cx;
        c.dy = cy;
        self.nodes[root].size = sa + sb;
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
        for (i, node) in self.nodes.iter().enumerate() {
            if node.parent as usize == i && !percolates(self.flags[i]) {
                hist[node.size as usize] += 1;
            }
        }
    }
}

/// The random order as it was drawn before: Fisher–Yates with `Philox::bounded`, one swap
/// after each draw.
pub(crate) fn oracle_order(seed: u64, index: u64, order: &mut Vec<u32>, units: usize) {
    order.clear();
    order.extend(0..units as u32);
    let mut rng = Philox::from_u64_seed_stream(seed, index);
    for i in (1..units).rev() {
        let j = rng.bounded(i as u32 + 1) as usize;
        order.swap(i, j);
    }
}

/// Sample `index` of `seed` added to `sums`, as the sweep did before the fast path.
pub(crate) fn oracle_run(geometry: Geometry, seed: u64, index: u64, sums: &mut MicroSums) {
    let mut forest = OracleForest::new(geometry);
    let mut order = Vec::new();
    let units = geometry.units();
    oracle_order(seed, index, &mut order, units);
    match geometry.model {
        Model::Site(_) => forest.clear(),
        Model::Bond => forest.fill_isolated(),
    }
    let mut first = [NEVER; 4];
    let mut next_ns = 0;
    let mut record = |forest: &OracleForest, n: usize, first: &mut [u64; 4]| {
        let o = forest.observables();
        let events = [o.any_x, o.any_y, o.any_both, o.any_x || o.any_y];
        for (f, e) in first.iter_mut().zip(events) {
            if e && *f == NEVER {
                *f = n as u64;
            }
        }
        let (l, p, s) = (
            u128::from(o.largest),
            u128::from(o.percolating_sites),
            u128::from(o.finite_s2),
        );
        sums.largest[n] += l;
        sums.largest_sq[n] += l * l;
        sums.percolating[n] += p;
        sums.percolating_sq[n] += p * p;
        sums.finite_s2[n] += s;
        sums.finite_s2_sq[n] = sums.finite_s2_sq[n].saturating_add(s * s);
        if next_ns < sums.ns_at.len() && sums.ns_at[next_ns] == n as u64 {
            forest.count_finite_sizes(&mut sums.ns_counts[next_ns]);
            next_ns += 1;
        }
    };
    record(&forest, 0, &mut first);
    let site = matches!(geometry.model, Model::Site(_));
    for (n, &u) in order.iter().enumerate() {
        let u = u as usize;
        if site {
            forest.add_site(u);
        } else {
            forest.add_bond(u);
        }
        record(&forest, n + 1, &mut first);
    }
    sums.samples += 1;
    sums.records.push(SampleRecord { seed, index, first });
}
