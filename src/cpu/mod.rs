//! The CPU backend: one file per algorithm, all generic over [`JoinRule`](crate::rule::JoinRule).
//!
//! - [`bfs`]: breadth-first flood fill, the test oracle.
//! - [`hoshen_kopelman`]: the classic raster scan with a label-of-labels array.
//! - [`strips`]: run-based union-find over parallel strips, the fast default.

pub(crate) mod bfs;
pub(crate) mod hoshen_kopelman;
pub(crate) mod strips;
pub(crate) mod union_find;

use crate::backend::{Input, LabelBackend, Spec};
use crate::labeler::{Algorithm, Parallelism};
use crate::lattice::{Boundary, Connectivity, SiteValue};
use crate::rule::{JoinRule, Occupancy, Segments};
use crate::{Error, Result};
use ndarray::{ArrayView2, ArrayViewMut2};
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

/// CPU labeling state: each algorithm's scratch and the thread pool, reused across calls.
pub(crate) struct CpuBackend {
    parallelism: Parallelism,
    pool: Option<rayon::ThreadPool>,
    queue: VecDeque<(usize, usize)>,
    hk: hoshen_kopelman::Scratch,
    strips: strips::Scratch,
}

impl CpuBackend {
    pub(crate) fn new(parallelism: Parallelism) -> Self {
        CpuBackend {
            parallelism,
            pool: None,
            queue: VecDeque::new(),
            hk: Default::default(),
            strips: Default::default(),
        }
    }

    fn run<R: JoinRule>(
        &mut self,
        rule: &R,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let (c, b) = (spec.connectivity, spec.boundary);
        Ok(match spec.algorithm {
            Algorithm::Bfs => bfs::label(rule, c, b, &mut self.queue, out),
            Algorithm::HoshenKopelman => hoshen_kopelman::label(rule, c, b, &mut self.hk, out),
            Algorithm::Auto | Algorithm::Strips => {
                let scratch = &mut self.strips;
                match (&self.parallelism, &self.pool) {
                    (Parallelism::Sequential, _) => strips::label(rule, c, b, 1, scratch, out),
                    (Parallelism::Threads(n), Some(pool)) => {
                        let n = *n;
                        pool.install(|| strips::label(rule, c, b, n, scratch, out))
                    }
                    _ => {
                        let n = rayon::current_num_threads();
                        strips::label(rule, c, b, n, scratch, out)
                    }
                }
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "algorithm {other:?} is not available on the CPU backend"
                )))
            }
        })
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
        if let Parallelism::Threads(0) = self.parallelism {
            return Err(Error::InvalidArgument(
                "thread count must be at least 1".into(),
            ));
        }
        if let (Parallelism::Threads(n), None) = (&self.parallelism, &self.pool) {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(*n)
                .build()
                .map_err(|e| Error::InvalidArgument(format!("cannot start {n} threads: {e}")))?;
            self.pool = Some(pool);
        }
        match input {
            Input::U8(a) => self.dispatch(a, spec, out),
            Input::U16(a) => self.dispatch(a, spec, out),
            Input::U32(a) => self.dispatch(a, spec, out),
        }
    }
}
