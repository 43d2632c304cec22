//! The winding union-find of a Newman–Ziff sweep, node by node: union by size, path compression,
//! and for each site the unwrapped displacement to its parent, so that a link closing a loop with
//! a nonzero net displacement (winding) marks its cluster as wrapping (Machta et al. 1996; Newman
//! & Ziff 2001, §II.D). Along open axes a cluster records which edges it touches instead
//! (spanning). The per-lattice observables are kept incrementally.
//!
//! Laid out for speed (a sweep is a stream of random accesses): one 16-byte node per site holds
//! the parent, the displacement to it and, at a root, the size and the flags, so that a step of
//! `find` or a union touches one cache line per node; a new site's root is carried from link to
//! link instead of being found again ([`Rooted`]); a merge updates `Σ′ s²` by `2 s_a s_b` and
//! reads whether it percolates from a table of the 64 flag combinations; the rare paths (loops,
//! deep finds) are out of line and take the observables by value, so that the sweep's loop keeps
//! them in registers. The observables do not depend on the shape of the trees.

/// No parent: an empty site.
pub(crate) const EMPTY: u32 = u32::MAX;

// Root flags. Touch flags are only set along open axes (a periodic axis has no edge).
pub(crate) const LEFT: u32 = 1;
pub(crate) const RIGHT: u32 = 2;
pub(crate) const TOP: u32 = 4;
pub(crate) const BOTTOM: u32 = 8;
const WRAP_X: u32 = 16;
const WRAP_Y: u32 = 32;

/// Event bits: some cluster percolates along `x`, along `y`, one along both.
pub(crate) const EVENT_X: u8 = 1;
pub(crate) const EVENT_Y: u8 = 2;
pub(crate) const EVENT_BOTH: u8 = 4;

/// Whether a cluster with these flags percolates along `x`: wraps (periodic) or spans (open).
pub(crate) const fn along_x(f: u32) -> bool {
    f & WRAP_X != 0 || f & (LEFT | RIGHT) == LEFT | RIGHT
}

pub(crate) const fn along_y(f: u32) -> bool {
    f & WRAP_Y != 0 || f & (TOP | BOTTOM) == TOP | BOTTOM
}

/// The event bits of every combination of flags (0: the cluster does not percolate).
const EVENTS: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut f = 0;
    while f < 64 {
        let (x, y) = (along_x(f as u32), along_y(f as u32));
        t[f] = if x { EVENT_X } else { 0 }
            | if y { EVENT_Y } else { 0 }
            | if x && y { EVENT_BOTH } else { 0 };
        f += 1;
    }
    t
};

/// The event bits of a cluster with these flags (0 when it does not percolate).
#[inline(always)]
fn events(f: u32) -> u8 {
    EVENTS[(f & 63) as usize]
}

#[inline(always)]
pub(crate) fn percolates(f: u32) -> bool {
    events(f) != 0
}

/// The per-lattice observables after the latest added unit, as tests compare them.
#[cfg(test)]
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

/// The observables as the forest keeps them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Obs {
    /// Size of the largest cluster.
    pub largest: u64,
    /// Sites in percolating clusters.
    pub percolating: u64,
    /// `Σ′ s²` over the clusters that do not percolate.
    pub finite_s2: u64,
    /// [`EVENT_X`] | [`EVENT_Y`] | [`EVENT_BOTH`] of every cluster so far.
    pub events: u8,
}

impl Obs {
    #[cfg(test)]
    pub(crate) fn observables(self) -> Observables {
        Observables {
            largest: self.largest,
            percolating_sites: self.percolating,
            finite_s2: self.finite_s2,
            any_x: self.events & EVENT_X != 0,
            any_y: self.events & EVENT_Y != 0,
            any_both: self.events & EVENT_BOTH != 0,
        }
    }
}

/// One site of the forest: a step of `find` touches one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Node {
    /// The parent's index; [`EMPTY`] for an empty site.
    pub parent: u32,
    /// Cluster size, valid at roots.
    pub size: u32,
    /// Unwrapped displacement from the site to its parent (`x`, `y`). A root's displacement to
    /// itself is zero and never read: there `dx` holds the cluster's flags.
    pub dx: i32,
    pub dy: i32,
}

/// An empty site.
pub(crate) const EMPTY_NODE: Node = Node {
    parent: EMPTY,
    size: 0,
    dx: 0,
    dy: 0,
};

/// A site's root and the site's displacement to it.
#[derive(Clone, Copy)]
pub(crate) struct Rooted {
    pub root: u32,
    pub dx: i32,
    pub dy: i32,
}

/// The nodes and the observables of a forest, as locals for the work of one unit.
pub(crate) struct Step<'a> {
    pub nodes: &'a mut [Node],
    pub obs: Obs,
}

impl Step<'_> {
    /// Node `i`.
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// Node `i`, to change.
    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut Node {
        &mut self.nodes[i]
    }

    /// The root of `i` and the unwrapped displacement from `i` to it. Roots, children of roots
    /// (most sites, after compression) and grandchildren return without a loop.
    #[inline(always)]
    pub(crate) fn find(&mut self, i: u32) -> Rooted {
        let n = *self.at(i as usize);
        if n.parent == i {
            return Rooted {
                root: i,
                dx: 0,
                dy: 0,
            };
        }
        let p = *self.at(n.parent as usize);
        if p.parent == n.parent {
            return Rooted {
                root: n.parent,
                dx: n.dx,
                dy: n.dy,
            };
        }
        // Two steps (a child of a root that has since joined a larger cluster): point the
        // site at the root, as compression would.
        if self.at(p.parent as usize).parent == p.parent {
            let (dx, dy) = (n.dx + p.dx, n.dy + p.dy);
            *self.at_mut(i as usize) = Node {
                parent: p.parent,
                size: 0,
                dx,
                dy,
            };
            return Rooted {
                root: p.parent,
                dx,
                dy,
            };
        }
        find_deep(self.nodes, i)
    }

    /// Links the cluster of a site (`me`: its root and its displacement to it) with occupied
    /// site `j`, `(sx, sy)` being the unwrapped step from the site to `j`; `me` follows the
    /// site's root. Two clusters merge; a link inside one cluster closes a loop, which wraps
    /// when the loop's net displacement is nonzero.
    #[inline(always)]
    pub(crate) fn join(&mut self, me: &mut Rooted, j: usize, sx: i32, sy: i32) {
        let other = self.find(j as u32);
        // Position of j's root relative to the site's root.
        let (rx, ry) = (sx + other.dx - me.dx, sy + other.dy - me.dy);
        let (ra, rb) = (me.root as usize, other.root as usize);
        if ra == rb {
            if rx != 0 || ry != 0 {
                self.obs = wrap(self.nodes, self.obs, ra, rx != 0, ry != 0);
            }
            return;
        }
        let (a, b) = (*self.at(ra), *self.at(rb));
        let (sa, sb) = (a.size, b.size);
        let (fa, fb) = (a.dx as u32, b.dx as u32);
        let f = fa | fb;
        let ev = events(f);
        let o = &mut self.obs;
        if ev == 0 {
            // (s_a + s_b)² − s_a² − s_b².
            o.finite_s2 += 2 * u64::from(sa) * u64::from(sb);
        } else {
            // Into a percolating cluster (above p_c, most merges): the parts that did not
            // percolate leave Σ′ s² and join the percolating sites.
            for (s, f) in [(sa, fa), (sb, fb)] {
                if !percolates(f) {
                    let s = u64::from(s);
                    o.finite_s2 -= s * s;
                    o.percolating += s;
                }
            }
            o.events |= ev;
        }
        let s = sa + sb;
        o.largest = o.largest.max(u64::from(s));
        let (root, child, cx, cy) = if sa >= sb {
            (ra, rb, -rx, -ry)
        } else {
            *me = Rooted {
                root: rb as u32,
                dx: me.dx + rx,
                dy: me.dy + ry,
            };
            (rb, ra, rx, ry)
        };
        *self.at_mut(child) = Node {
            parent: root as u32,
            size: 0,
            dx: cx,
            dy: cy,
        };
        self.at_mut(root).size = s;
        self.at_mut(root).dx = f as i32;
    }
}

/// `find` along a path of two or more steps: a first pass sums the displacement, a second points
/// every node of the path at the root with its total displacement.
#[inline(never)]
fn find_deep(nodes: &mut [Node], i: u32) -> Rooted {
    let (mut r, mut dx, mut dy) = (i as usize, 0i32, 0i32);
    loop {
        let node = nodes[r];
        if node.parent as usize == r {
            break;
        }
        dx += node.dx;
        dy += node.dy;
        r = node.parent as usize;
    }
    let (mut k, mut kx, mut ky) = (i as usize, dx, dy);
    while k != r {
        let node = &mut nodes[k];
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
    Rooted {
        root: r as u32,
        dx,
        dy,
    }
}

/// A loop with a nonzero net displacement closed in the cluster of root `r`: the observables
/// after it (taken and returned by value, so that the common path keeps them in registers).
#[cold]
#[inline(never)]
fn wrap(nodes: &mut [Node], mut obs: Obs, r: usize, x: bool, y: bool) -> Obs {
    let f = nodes[r].dx as u32;
    let g = f | (u32::from(x) * WRAP_X) | (u32::from(y) * WRAP_Y);
    if g == f {
        return obs;
    }
    let s = u64::from(nodes[r].size);
    if !percolates(f) {
        obs.finite_s2 -= s * s;
        obs.percolating += s;
    }
    obs.events |= events(g);
    nodes[r].dx = g as i32;
    obs
}

/// Occupies site `i` as a new cluster of one site with touch flags `f` (no links yet).
#[inline(always)]
pub(crate) fn occupy(nodes: &mut [Node], obs: &mut Obs, i: usize, f: u32) {
    nodes[i] = Node {
        parent: i as u32,
        size: 1,
        dx: f as i32,
        dy: 0,
    };
    obs.largest = obs.largest.max(1);
    let ev = events(f);
    if ev != 0 {
        // A site on an open axis one site wide spans it.
        obs.percolating += 1;
        obs.events |= ev;
    } else {
        obs.finite_s2 += 1;
    }
}

/// Adds one to `hist[s]` for every cluster of `s` sites that does not percolate.
pub(crate) fn count_finite_sizes(nodes: &[Node], hist: &mut [u64]) {
    for (i, node) in nodes.iter().enumerate() {
        if node.parent as usize == i && !percolates(node.dx as u32) {
            hist[node.size as usize] += 1;
        }
    }
}

/// Per root: `(size, wraps or spans along x, along y)`, for tests.
#[cfg(test)]
pub(crate) fn clusters(nodes: &[Node]) -> Vec<(u32, bool, bool)> {
    (0..nodes.len())
        .filter(|&i| nodes[i].parent as usize == i)
        .map(|i| {
            let f = nodes[i].dx as u32;
            (nodes[i].size, along_x(f), along_y(f))
        })
        .collect()
}
