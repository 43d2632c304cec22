//! The measuring pass: one sweep over the label rows of a strip, accumulating per-cluster moments
//! (run by run), perimeter counts (site by site, at the sites outside a cluster), the sizes of the
//! complement's regions and, where needed, the region adjacency graph's edges.
//!
//! - [`moments`]: what is accumulated per cluster ([`Moments`], [`Perimeter`]);
//! - [`window`]: the lattice as the pass sees it ([`Grid`]) and its three-row window;
//! - [`occupancy`]: the bit-mask pass of occupancy lattices; [`segments`]: the site-by-site
//!   pass of segment mode; [`hull`]: the second pass for hulls the first could not decide.

mod hull;
mod occupancy;
mod segments;
mod window;

pub(crate) use hull::hull_strip;
pub(crate) use window::Grid;

use super::accum::{Sink, Spill};
pub(crate) use crate::measure::moments::{Moments, Perimeter};
use occupancy::{occupancy_strip, Bits};
use segments::segment_strip;
use std::ops::Range;
use window::Window;

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
