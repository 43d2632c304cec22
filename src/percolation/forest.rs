//! The forest of a Newman–Ziff sweep: the winding union-find of `winding.rs` on a lattice (which
//! sites neighbour which, which bond joins which sites, which edges a site touches) and the loop
//! that adds a sweep's units one by one, recording the observables after each.
//!
//! The loop keeps everything it touches per unit as locals (the node slice, the observables, the
//! lattice's constants), takes coordinates from a multiply rather than a division, and on large
//! lattices prefetches the nodes of the unit a few steps ahead and, half as far ahead, their
//! parents, so that the random accesses of consecutive units overlap instead of waiting on memory
//! one after the other. None of this changes a result (`oracle.rs` keeps the plain sweep that the
//! tests compare with).

use super::model::{Geometry, Model};
use super::sums::{Line, NEVER};
#[cfg(test)]
use super::winding::Observables;
use super::winding::{
    count_finite_sizes, occupy, Node, Obs, Rooted, Step, BOTTOM, EMPTY, EMPTY_NODE, EVENT_BOTH,
    EVENT_X, EVENT_Y, LEFT, RIGHT, TOP,
};
use crate::core::bits::{prefetch, Divisor};
use crate::Connectivity;

/// Units ahead of the one being added whose nodes a prefetching sweep asks for.
const AHEAD: usize = 12;

/// The lattice as the loop needs it (copied into registers).
#[derive(Debug, Clone, Copy)]
struct Shape {
    w: usize,
    h: usize,
    wraps_x: bool,
    wraps_y: bool,
    eight: bool,
    /// Site index → `(y, x)`.
    by_width: Divisor,
    /// Bond numbering (as `Geometry::bond`): right bonds per row, and the number of right bonds.
    by_row_bonds: Divisor,
    right_bonds: usize,
}

impl Shape {
    /// `(y, x)` of site `i`.
    #[inline(always)]
    fn coords(self, i: usize) -> (usize, usize) {
        let (y, x) = self.by_width.div_rem(i as u32);
        (y as usize, x as usize)
    }

    /// The touch flags of site `(y, x)` along the open axes.
    #[inline(always)]
    fn touch_flags(self, y: usize, x: usize) -> u32 {
        let mut f = 0;
        if !self.wraps_x {
            f |= (u32::from(x == 0) * LEFT) | (u32::from(x + 1 == self.w) * RIGHT);
        }
        if !self.wraps_y {
            f |= (u32::from(y == 0) * TOP) | (u32::from(y + 1 == self.h) * BOTTOM);
        }
        f
    }

    /// Bond `b` as `(from, to, dx, dy)`, numbered as `Geometry::bond` numbers them (right bonds
    /// first, row by row, then down bonds), by multiplies.
    #[inline(always)]
    fn bond(self, b: usize) -> (usize, usize, i32, i32) {
        let w = self.w;
        if b < self.right_bonds {
            let (y, x) = self.by_row_bonds.div_rem(b as u32);
            let (y, x) = (y as usize, x as usize);
            let to = y * w + if x + 1 == w { 0 } else { x + 1 };
            (y * w + x, to, 1, 0)
        } else {
            let (y, x) = self.by_width.div_rem((b - self.right_bonds) as u32);
            let (y, x) = (y as usize, x as usize);
            let ty = if y + 1 == self.h { 0 } else { y + 1 };
            (y * w + x, ty * w + x, 0, 1)
        }
    }

    /// The four diagonal neighbours of 8-connectivity, wrapped where the axes wrap, with the
    /// unwrapped steps to them (`None` past an open edge).
    fn diagonals(self, y: usize, x: usize) -> [Option<(usize, i32, i32)>; 4] {
        let (w, h) = (self.w as isize, self.h as isize);
        [(-1isize, -1isize), (-1, 1), (1, -1), (1, 1)].map(|(dy, dx)| {
            let (mut ny, mut nx) = (y as isize + dy, x as isize + dx);
            if nx < 0 || nx >= w {
                if !self.wraps_x {
                    return None;
                }
                nx = nx.rem_euclid(w);
            }
            if ny < 0 || ny >= h {
                if !self.wraps_y {
                    return None;
                }
                ny = ny.rem_euclid(h);
            }
            Some(((ny * w + nx) as usize, dx as i32, dy as i32))
        })
    }

    /// Adds site `i` of a site-percolation sweep: occupies it and links it to its occupied
    /// neighbours (the literal neighbourhood: on a torus one site wide a site is its own
    /// neighbour, and that link wraps).
    #[inline(always)]
    fn add_site(self, nodes: &mut [Node], obs: &mut Obs, i: usize) {
        let (y, x) = self.coords(i);
        let (w, h) = (self.w, self.h);
        let mut step = Step { nodes, obs: *obs };
        occupy(step.nodes, &mut step.obs, i, self.touch_flags(y, x));
        let mut me = Rooted {
            root: i as u32,
            dx: 0,
            dy: 0,
        };
        let mut link = |j: usize, sx: i32, sy: i32| {
            if step.at(j).parent != EMPTY {
                step.join(&mut me, j, sx, sy);
            }
        };
        // The edge neighbours, wrapped where the axis wraps.
        if x > 0 {
            link(i - 1, -1, 0);
        } else if self.wraps_x {
            link(i + w - 1, -1, 0);
        }
        if x + 1 < w {
            link(i + 1, 1, 0);
        } else if self.wraps_x {
            link(i + 1 - w, 1, 0);
        }
        if y > 0 {
            link(i - w, 0, -1);
        } else if self.wraps_y {
            link(i + (h - 1) * w, 0, -1);
        }
        if y + 1 < h {
            link(i + w, 0, 1);
        } else if self.wraps_y {
            link(i - (h - 1) * w, 0, 1);
        }
        if self.eight {
            for (j, sx, sy) in self.diagonals(y, x).into_iter().flatten() {
                link(j, sx, sy);
            }
        }
        *obs = step.obs;
    }

    /// Adds bond `b` of a bond-percolation sweep.
    #[inline(always)]
    fn add_bond(self, nodes: &mut [Node], obs: &mut Obs, b: usize) {
        let (from, to, sx, sy) = self.bond(b);
        let mut step = Step { nodes, obs: *obs };
        let mut me = step.find(from as u32);
        step.join(&mut me, to, sx, sy);
        *obs = step.obs;
    }
}

/// Where a sweep's loop records: one [`Line`] per `n = 0..=N`, and the `n_s` histograms at the
/// points `ns_at` (sorted).
pub(crate) struct Out<'a> {
    pub lines: &'a mut [Line],
    pub ns: &'a mut [Vec<u64>],
    pub ns_at: &'a [u64],
}

/// The forest, reused from sample to sample (it owns its buffers).
pub(crate) struct Forest {
    geometry: Geometry,
    shape: Shape,
    nodes: Vec<Node>,
    obs: Obs,
}

impl Forest {
    pub(crate) fn new(geometry: Geometry) -> Forest {
        let (w, h) = (geometry.width, geometry.height);
        let wraps_x = geometry.boundary.wraps_x();
        let per_row = if wraps_x { w } else { w - 1 };
        Forest {
            geometry,
            shape: Shape {
                w,
                h,
                wraps_x,
                wraps_y: geometry.boundary.wraps_y(),
                eight: geometry.model.connectivity() == Connectivity::Eight,
                by_width: Divisor::new(w as u32),
                by_row_bonds: Divisor::new(per_row.max(1) as u32),
                right_bonds: h * per_row,
            },
            nodes: vec![EMPTY_NODE; geometry.sites()],
            obs: Obs::default(),
        }
    }

    #[cfg(test)]
    pub(crate) fn observables(&self) -> Observables {
        self.obs.observables()
    }

    /// Empties every site, or for bond percolation occupies every site as its own cluster: the
    /// state before a sweep's first unit.
    pub(crate) fn start(&mut self) {
        self.nodes.fill(EMPTY_NODE);
        self.obs = Obs::default();
        if self.geometry.model == Model::Bond {
            let s = self.shape;
            let mut i = 0;
            for y in 0..s.h {
                for x in 0..s.w {
                    occupy(&mut self.nodes, &mut self.obs, i, s.touch_flags(y, x));
                    i += 1;
                }
            }
        }
    }

    /// Adds site `i` (site percolation).
    #[cfg(test)]
    pub(crate) fn add_site(&mut self, i: usize) {
        self.shape.add_site(&mut self.nodes, &mut self.obs, i);
    }

    /// Adds bond `b` (bond percolation).
    #[cfg(test)]
    pub(crate) fn add_bond(&mut self, b: usize) {
        self.shape.add_bond(&mut self.nodes, &mut self.obs, b);
    }

    /// Per root: `(size, wraps or spans along x, along y)`, for tests.
    #[cfg(test)]
    pub(crate) fn clusters(&self) -> Vec<(u32, bool, bool)> {
        super::winding::clusters(&self.nodes)
    }

    /// Adds the units of `order` one by one from the state [`Forest::start`] left, adding the
    /// observables after each (and before the first) to `out`'s lines and the `n_s` histograms
    /// at its points; returns the first `n` at which some cluster percolated along `x`, along
    /// `y`, one along both, and some along either ([`NEVER`] when it did not happen).
    /// `PREFETCH` 1 (for lattices beyond the core's own cache) asks for the nodes of the unit
    /// [`AHEAD`] steps on; 2 (beyond the shared cache) also for the parents of those of the unit
    /// half as far.
    pub(crate) fn run<const PREFETCH: u8>(&mut self, order: &[u32], out: Out<'_>) -> [u64; 4] {
        match self.geometry.model {
            Model::Site(_) => self.run_with::<PREFETCH, false>(order, out),
            Model::Bond => self.run_with::<PREFETCH, true>(order, out),
        }
    }

    #[inline(always)]
    fn run_with<const PREFETCH: u8, const BOND: bool>(
        &mut self,
        order: &[u32],
        out: Out<'_>,
    ) -> [u64; 4] {
        let s = self.shape;
        let nodes = &mut self.nodes[..];
        let mut obs = self.obs;
        let Out { lines, ns, ns_at } = out;
        let mut rec = Recorder {
            first: [NEVER; 4],
            seen: 0,
            next_ns: 0,
            ns_n: ns_at.first().copied().unwrap_or(u64::MAX),
            ns,
            ns_at,
        };
        let (line0, rest) = lines.split_first_mut().expect("N + 1 lines");
        rec.after(nodes, &obs, 0, line0);
        for (n, (&u, line)) in order.iter().zip(rest.iter_mut()).enumerate() {
            if PREFETCH >= 1 {
                if let Some(&ahead) = order.get(n + AHEAD) {
                    prefetch_unit::<BOND>(s, nodes, ahead as usize);
                }
            }
            if PREFETCH >= 2 {
                if let Some(&ahead) = order.get(n + AHEAD / 2) {
                    prefetch_parents::<BOND>(s, nodes, ahead as usize);
                }
            }
            if BOND {
                s.add_bond(nodes, &mut obs, u as usize);
            } else {
                s.add_site(nodes, &mut obs, u as usize);
            }
            rec.after(nodes, &obs, n + 1, line);
        }
        self.obs = obs;
        rec.first
    }
}

/// What the loop records besides the lines: the first `n` of each event, and the histograms.
struct Recorder<'a> {
    first: [u64; 4],
    seen: u8,
    next_ns: usize,
    /// The `n` of the next histogram (`u64::MAX` when none is left).
    ns_n: u64,
    ns: &'a mut [Vec<u64>],
    ns_at: &'a [u64],
}

impl Recorder<'_> {
    /// Records the observables after `n` units.
    #[inline(always)]
    fn after(&mut self, nodes: &[Node], obs: &Obs, n: usize, line: &mut Line) {
        line.add(obs.largest, obs.percolating, obs.finite_s2);
        if obs.events != self.seen {
            mark_events(&mut self.first, self.seen, obs.events, n as u64);
            self.seen = obs.events;
        }
        if n as u64 == self.ns_n {
            count_finite_sizes(nodes, &mut self.ns[self.next_ns]);
            self.next_ns += 1;
            self.ns_n = self.ns_at.get(self.next_ns).copied().unwrap_or(u64::MAX);
        }
    }
}

/// Asks for the nodes unit `u` will touch: the site and the rows above and below it, or the two
/// ends of a bond.
#[inline(always)]
fn prefetch_unit<const BOND: bool>(s: Shape, nodes: &[Node], u: usize) {
    if BOND {
        let (from, to, _, _) = s.bond(u);
        prefetch(nodes, from);
        prefetch(nodes, to);
    } else {
        prefetch(nodes, u);
        prefetch(nodes, u.wrapping_sub(s.w));
        prefetch(nodes, u + s.w);
    }
}

/// Asks for the parents of the nodes unit `u` will touch (once [`prefetch_unit`] brought those
/// in): mostly the roots its links will find.
#[inline(always)]
fn prefetch_parents<const BOND: bool>(s: Shape, nodes: &[Node], u: usize) {
    let parent = |j: usize| nodes.get(j).map_or(EMPTY, |n| n.parent) as usize;
    if BOND {
        let (from, to, _, _) = s.bond(u);
        prefetch(nodes, parent(from));
        prefetch(nodes, parent(to));
    } else {
        for j in [u.wrapping_sub(1), u + 1, u.wrapping_sub(s.w), u + s.w] {
            prefetch(nodes, parent(j));
        }
    }
}

/// Records `n` as the first occurrence of each event that `now` has and `before` had not:
/// `first` = [`x`, `y`, both, either].
#[cold]
fn mark_events(first: &mut [u64; 4], before: u8, now: u8, n: u64) {
    let new = now & !before;
    for (k, bit) in [EVENT_X, EVENT_Y, EVENT_BOTH].into_iter().enumerate() {
        if new & bit != 0 {
            first[k] = n;
        }
    }
    if before & (EVENT_X | EVENT_Y) == 0 && now & (EVENT_X | EVENT_Y) != 0 {
        first[3] = n;
    }
}
