//! The CPU backend: one file per algorithm, all generic over [`JoinRule`](crate::core::rule::JoinRule).
//!
//! - [`bfs`]: breadth-first flood fill, the test oracle.
//! - [`hoshen_kopelman`]: the classic raster scan with a label-of-labels array.
//! - [`strips`]: run-based union-find over parallel strips, the fast default.

pub(crate) mod analysis;
pub(crate) mod bfs;
pub(crate) mod hoshen_kopelman;
pub(crate) mod pool;
pub(crate) mod regions;
pub(crate) mod size_counts;
pub(crate) mod strips;
pub(crate) mod union_find;

use crate::core::alloc::{check_available, human_bytes};
use crate::core::backend::LabelBackend;
use crate::core::bonds::{Bonds, PackedBonds};
use crate::core::lattice::{Boundary, Connectivity, Input, SiteValue};
use crate::core::options::Spec;
use crate::core::rule::{JoinRule, Occupancy, Segments};
use crate::core::size_counts::SizeCounts;
use crate::{Algorithm, Error, Result};
use ndarray::{ArrayView2, ArrayViewMut2};
use pool::CpuPool;
use std::collections::VecDeque;
use union_find::Index;

/// The neighbours of `(y, x)` as `(y, x, reached_across_a_wrapping_edge)`, literally: on a torus
/// one or two sites wide a site may be its own neighbour, or the same neighbour twice.
pub(crate) fn neighbours(
    y: usize,
    x: usize,
    h: usize,
    w: usize,
    connectivity: Connectivity,
    boundary: Boundary,
) -> impl Iterator<Item = (usize, usize, bool)> {
    let offsets = connectivity.offsets();
    let wrap = |v: isize, n: usize, wraps: bool| -> Option<(usize, bool)> {
        if v >= 0 && (v as usize) < n {
            Some((v as usize, false))
        } else if wraps {
            Some((v.rem_euclid(n as isize) as usize, true))
        } else {
            None
        }
    };
    offsets.iter().filter_map(move |&(dy, dx)| {
        let (ny, wy) = wrap(y as isize + dy, h, boundary.wraps_y())?;
        let (nx, wx) = wrap(x as isize + dx, w, boundary.wraps_x())?;
        Some((ny, nx, wy || wx))
    })
}

/// CPU labeling state: each algorithm's scratch and the threads, reused across calls.
pub(crate) struct CpuBackend {
    pool: CpuPool,
    queue: VecDeque<(usize, usize)>,
    hk: hoshen_kopelman::Scratch,
    strips: strips::Scratch,
    /// The strip labeler's buffers with `u64` indices, for lattices with more runs than `u32`
    /// numbers (empty until one comes).
    strips_wide: strips::Scratch<u64>,
    counts: size_counts::Scratch,
}

/// The bytes of scratch that the CPU's 64-bit labeling of an `h × w` lattice may need beyond
/// its input and labels, for `threads` strips; `segments` when any site can be a run of its own.
///
/// The strip labeler's bit masks (occupancy and run starts, a bit each a site) and, per run, its
/// union-find forest: the strips' forests (counted twice for a growing `Vec`'s slack), their
/// concatenation and the numbering, `4 × 4` bytes per run with `u32` indices, `4 × 8` with
/// `u64` ones — at the most runs the shape can have, so that a labeling that starts also
/// finishes. Per-row temporaries (`threads` rows of `8 × ⌈w/64⌉` words) are counted too. The
/// oracle algorithms take less (a queue, or 8 + 8 bytes per provisional label).
pub(crate) fn label64_scratch_bytes(h: usize, w: usize, segments: bool, threads: usize) -> usize {
    let nw = crate::core::bits::words(w);
    let masks = h.saturating_mul(nw).saturating_mul(2 * 8);
    let runs = strips::max_runs(h, w, segments);
    let index = if runs > <u32 as Index>::MAX_NODES {
        8
    } else {
        4
    };
    let forest = runs.saturating_mul(4 * index);
    let temps = threads.saturating_mul(nw).saturating_mul(8 * 8);
    masks.saturating_add(forest).saturating_add(temps)
}

impl CpuBackend {
    pub(crate) fn new(pool: CpuPool) -> Self {
        CpuBackend {
            pool,
            queue: VecDeque::new(),
            hk: Default::default(),
            strips: Default::default(),
            strips_wide: Default::default(),
            counts: Default::default(),
        }
    }

    /// Labels with `spec.algorithm` into `u32` or `u64` labels. The strip labeler's forest takes
    /// `u32` indices unless the lattice can have more runs than they number (`wide`): a `u64`
    /// labeling then differs from a `u32` one only in the labels it writes.
    fn run<R: JoinRule, L: Index>(
        &mut self,
        rule: &R,
        spec: &Spec,
        wide: bool,
        out: ArrayViewMut2<'_, L>,
    ) -> Result<usize> {
        let (c, b) = (spec.connectivity, spec.boundary);
        match spec.algorithm {
            Algorithm::Bfs => Ok(bfs::label(rule, c, b, &mut self.queue, out)),
            Algorithm::HoshenKopelman => Ok(hoshen_kopelman::label(rule, c, b, &mut self.hk, out)),
            Algorithm::Auto | Algorithm::Strips if wide => {
                let scratch = &mut self.strips_wide;
                self.pool
                    .install(|threads| strips::label(rule, c, b, threads, scratch, out))
            }
            Algorithm::Auto | Algorithm::Strips => {
                let scratch = &mut self.strips;
                self.pool
                    .install(|threads| strips::label(rule, c, b, threads, scratch, out))
            }
            other => Err(Error::InvalidArgument(format!(
                "algorithm {other:?} is not available on the CPU backend"
            ))),
        }
    }

    /// Size counts with the strip labeler's forest, whatever `spec.algorithm` (the counts do not
    /// depend on it).
    fn count<R: JoinRule>(&mut self, rule: &R, spec: &Spec, out: &mut SizeCounts) -> Result<()> {
        let (c, b) = (spec.connectivity, spec.boundary);
        let (forest, scratch) = (&mut self.strips, &mut self.counts);
        self.pool.install(|threads| {
            size_counts::count(rule, c, b, threads, forest, scratch, out);
        })
    }

    fn count_values<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        spec: &Spec,
        out: &mut SizeCounts,
    ) -> Result<()> {
        if spec.segments {
            self.count(&Segments { lattice }, spec, out)
        } else {
            self.count(&Occupancy { lattice }, spec, out)
        }
    }

    fn dispatch<T: SiteValue, L: Index>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        spec: &Spec,
        wide: bool,
        out: ArrayViewMut2<'_, L>,
    ) -> Result<usize> {
        if spec.segments {
            self.run(&Segments { lattice }, spec, wide, out)
        } else {
            self.run(&Occupancy { lattice }, spec, wide, out)
        }
    }
}

impl LabelBackend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn label(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        self.pool.parallelism().check()?;
        match input {
            Input::U8(a) => self.dispatch(a, spec, false, out),
            Input::U16(a) => self.dispatch(a, spec, false, out),
            Input::U32(a) => self.dispatch(a, spec, false, out),
        }
    }

    fn label64(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u64>,
    ) -> Result<usize> {
        self.pool.parallelism().check()?;
        let (h, w) = input.dim();
        let threads = self.pool.install(|t| t)?;
        let scratch = label64_scratch_bytes(h, w, spec.segments, threads);
        // The input and the labels are already there: only the scratch is still to come.
        let labels = h.saturating_mul(w).saturating_mul(8);
        check_available(
            scratch,
            scratch.saturating_add(labels),
            &format!(
                "64-bit labeling of {h} × {w} sites on the CPU (labels {}, scratch {})",
                human_bytes(labels as u64),
                human_bytes(scratch as u64)
            ),
        )?;
        let wide = strips::max_runs(h, w, spec.segments) > <u32 as Index>::MAX_NODES;
        match input {
            Input::U8(a) => self.dispatch(a, spec, wide, out),
            Input::U16(a) => self.dispatch(a, spec, wide, out),
            Input::U32(a) => self.dispatch(a, spec, wide, out),
        }
    }

    fn size_counts(&mut self, input: Input<'_>, spec: &Spec, out: &mut SizeCounts) -> Result<()> {
        self.pool.parallelism().check()?;
        match input {
            Input::U8(a) => self.count_values(a, spec, out),
            Input::U16(a) => self.count_values(a, spec, out),
            Input::U32(a) => self.count_values(a, spec, out),
        }
    }

    fn label_bonds(
        &mut self,
        bonds: &PackedBonds,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        self.pool.parallelism().check()?;
        let rule = Bonds {
            bonds,
            boundary: spec.boundary,
        };
        self.run(&rule, spec, false, out)
    }
}
