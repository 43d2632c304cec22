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
    counts: size_counts::Scratch,
}

impl CpuBackend {
    pub(crate) fn new(pool: CpuPool) -> Self {
        CpuBackend {
            pool,
            queue: VecDeque::new(),
            hk: Default::default(),
            strips: Default::default(),
            counts: Default::default(),
        }
    }

    fn run<R: JoinRule>(
        &mut self,
        rule: &R,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let (c, b) = (spec.connectivity, spec.boundary);
        match spec.algorithm {
            Algorithm::Bfs => Ok(bfs::label(rule, c, b, &mut self.queue, out)),
            Algorithm::HoshenKopelman => Ok(hoshen_kopelman::label(rule, c, b, &mut self.hk, out)),
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

    fn dispatch<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        if spec.segments {
            self.run(&Segments { lattice }, spec, out)
        } else {
            self.run(&Occupancy { lattice }, spec, out)
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
            Input::U8(a) => self.dispatch(a, spec, out),
            Input::U16(a) => self.dispatch(a, spec, out),
            Input::U32(a) => self.dispatch(a, spec, out),
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
        self.run(&rule, spec, out)
    }
}
