//! Seeded regions on the CPU: a scanline (span) flood fill, or labeling of the predicate mask
//! with the crate's strip labeler; absorption by labeling the complement with the dual
//! connectivity and keeping what touches no open edge.

use super::pool::CpuPool;
use super::CpuBackend;
use crate::core::backend::LabelBackend;
use crate::core::lattice::Input;
use crate::core::options::Spec;
use crate::core::region::{meets, Criterion, Method, Plan, Sample};
use crate::{Algorithm, Boundary, Connectivity, Parallelism, Result};
use ndarray::ArrayView2;
use rayon::prelude::*;

/// The CPU grower's labelers and buffers, kept between calls.
pub(crate) struct CpuRegions {
    connectivity: Connectivity,
    boundary: Boundary,
    absorb: bool,
    parallel: bool,
    /// The strip labeler and the specs of the region's and the complement's labeling.
    backend: CpuBackend,
    spec: Spec,
    dual: Spec,
    pred: Vec<u8>,
    labels: Vec<u32>,
    keep: Vec<bool>,
    /// Scanline: the pass that last visited each site (0 = none), so that a pass needs no
    /// clearing; `pass` counts the passes.
    visited: Vec<u32>,
    pass: u32,
    stack: Vec<(u32, u32, u32, bool)>,
}

impl CpuRegions {
    pub(crate) fn new(criterion: &Criterion, parallelism: Parallelism) -> Self {
        let spec = |connectivity| Spec {
            connectivity,
            boundary: criterion.lattice_boundary(),
            segments: false,
            algorithm: Algorithm::Auto,
        };
        CpuRegions {
            connectivity: criterion.neighbourhood(),
            boundary: criterion.lattice_boundary(),
            absorb: criterion.absorbs(),
            parallel: parallelism != Parallelism::Sequential,
            backend: CpuBackend::new(CpuPool::new(parallelism)),
            spec: spec(criterion.neighbourhood()),
            dual: spec(criterion.dual()),
            pred: Vec::new(),
            labels: Vec::new(),
            keep: Vec::new(),
            visited: Vec::new(),
            pass: 0,
            stack: Vec::new(),
        }
    }

    /// Grows `plan`'s groups in the row-major `field` into `out` (`h * w`, overwritten).
    pub(crate) fn grow<T: Sample>(
        &mut self,
        field: &[T],
        plan: &Plan,
        method: Method,
        out: &mut [u8],
    ) -> Result<()> {
        out.fill(0);
        let scanline = match method {
            Method::Scanline if self.boundary != Boundary::Open => {
                return Err(crate::Error::InvalidArgument(
                    "the scanline fill runs on open lattices only; use Method::Labeling or Auto"
                        .into(),
                ))
            }
            Method::Scanline => true,
            Method::Labeling => false,
            Method::Auto => self.boundary == Boundary::Open,
        };
        if plan.h * plan.w == 0 {
            return Ok(());
        }
        for g in &plan.groups {
            if scanline {
                self.fill(field, plan, &g.reference, &g.seeds, out);
            } else {
                self.label_group(field, plan, &g.reference, &g.seeds, out)?;
            }
        }
        if self.absorb && !plan.groups.is_empty() {
            self.absorb_holes(plan.h, plan.w, out)?;
        }
        Ok(())
    }

    /// Predicate mask, label it, keep the components holding a seed.
    fn label_group<T: Sample>(
        &mut self,
        field: &[T],
        plan: &Plan,
        reference: &[f32],
        seeds: &[u32],
        out: &mut [u8],
    ) -> Result<()> {
        let (h, w, c) = (plan.h, plan.w, plan.c);
        let t = &plan.tolerance[..];
        self.pred.resize(h * w, 0);
        self.labels.resize(h * w, 0);
        let eval = |(p, px): (&mut u8, &[T])| *p = meets(px, reference, t) as u8;
        if self.parallel && h * w >= 1 << 16 {
            self.pred
                .par_chunks_mut(w)
                .zip(field.par_chunks(w * c))
                .for_each(|(row, f)| row.iter_mut().zip(f.chunks_exact(c)).for_each(eval));
        } else {
            self.pred
                .iter_mut()
                .zip(field.chunks_exact(c))
                .for_each(eval);
        }
        let n = label(
            &mut self.backend,
            &self.spec,
            &self.pred,
            &mut self.labels,
            h,
            w,
        )?;
        self.keep.clear();
        self.keep.resize(n + 1, false);
        for &s in seeds {
            self.keep[self.labels[s as usize] as usize] = true;
        }
        self.keep[0] = false;
        let (keep, labels) = (&self.keep, &self.labels);
        let mark = |(o, &l): (&mut u8, &u32)| {
            if keep[l as usize] {
                *o = 1;
            }
        };
        if self.parallel && h * w >= 1 << 16 {
            out.par_chunks_mut(w)
                .zip(labels.par_chunks(w))
                .for_each(|(o, l)| o.iter_mut().zip(l).for_each(mark));
        } else {
            out.iter_mut().zip(labels).for_each(mark);
        }
        Ok(())
    }

    /// Span flood fill from `seeds` (open boundary): each popped site grows to its maximal run
    /// of unvisited matching sites, marks it, and pushes one site per run of matching,
    /// unvisited sites in the rows above and below (one column wider for 8-connectivity).
    fn fill<T: Sample>(
        &mut self,
        field: &[T],
        plan: &Plan,
        reference: &[f32],
        seeds: &[u32],
        out: &mut [u8],
    ) {
        let (c, t) = (plan.c, &plan.tolerance[..]);
        if c == 1 {
            // One channel: the common case, without the per-channel loop.
            let (r, t) = (reference[0], t[0]);
            self.fill_with(plan, seeds, out, |k| (field[k].to_f32() - r).abs() <= t);
        } else {
            self.fill_with(plan, seeds, out, |k| {
                meets(&field[k * c..k * c + c], reference, t)
            });
        }
    }

    fn fill_with(
        &mut self,
        plan: &Plan,
        seeds: &[u32],
        out: &mut [u8],
        ok: impl Fn(usize) -> bool,
    ) {
        let (h, w) = (plan.h, plan.w);
        if self.visited.len() != h * w || self.pass == u32::MAX {
            self.visited.clear();
            self.visited.resize(h * w, 0);
            self.pass = 0;
        }
        self.pass += 1;
        let pass = self.pass;
        let visited = &mut self.visited[..];
        let e = (self.connectivity == Connectivity::Eight) as usize;
        // The maximal run of unvisited matching sites through (y, x), marked; (x0, x1).
        let run = |visited: &mut [u32], out: &mut [u8], y: usize, x: usize| {
            let row = y * w;
            let (mut x0, mut x1) = (x, x);
            while x0 > 0 && visited[row + x0 - 1] != pass && ok(row + x0 - 1) {
                x0 -= 1;
            }
            while x1 + 1 < w && visited[row + x1 + 1] != pass && ok(row + x1 + 1) {
                x1 += 1;
            }
            visited[row + x0..=row + x1].fill(pass);
            out[row + x0..=row + x1].fill(1);
            (x0, x1)
        };
        // Items (y, x0, x1, down): scan row y for the neighbours of the filled, maximal run
        // [x0, x1] of the row above (down) or below it.
        let stack = &mut self.stack;
        stack.clear();
        let push = |stack: &mut Vec<(u32, u32, u32, bool)>, y: usize, x0, x1, down: bool| {
            if (down && y + 1 < h) || (!down && y > 0) {
                let ny = if down { y + 1 } else { y - 1 };
                stack.push((ny as u32, x0 as u32, x1 as u32, down));
            }
        };
        for &s in seeds {
            let (y, x) = (s as usize / w, s as usize % w);
            // Seeds meet the criterion; one inside an earlier seed's run is done.
            if visited[s as usize] == pass {
                continue;
            }
            let (x0, x1) = run(visited, out, y, x);
            push(stack, y, x0, x1, false);
            push(stack, y, x0, x1, true);
        }
        while let Some((y, sx0, sx1, down)) = stack.pop() {
            let (y, sx0, sx1) = (y as usize, sx0 as usize, sx1 as usize);
            let row = y * w;
            let (lo, hi) = (sx0.saturating_sub(e), (sx1 + e).min(w - 1));
            let mut x = lo;
            while x <= hi {
                if visited[row + x] == pass || !ok(row + x) {
                    x += 1;
                    continue;
                }
                let (x0, x1) = run(visited, out, y, x);
                push(stack, y, x0, x1, down);
                // Back towards the source row: only where this run overhangs the source run
                // and its blocked ends ([sx0 - 1, sx1 + 1] is covered).
                if x0 + 1 < sx0 + e || x1 + e > sx1 + 1 {
                    push(stack, y, x0, x1, !down);
                }
                x = x1 + 2;
            }
        }
    }

    /// Adds to `out` every complement site that no open edge reaches through the complement
    /// with the dual connectivity.
    fn absorb_holes(&mut self, h: usize, w: usize, out: &mut [u8]) -> Result<()> {
        self.pred.resize(h * w, 0);
        self.labels.resize(h * w, 0);
        for (p, &o) in self.pred.iter_mut().zip(out.iter()) {
            *p = (o == 0) as u8;
        }
        let n = label(
            &mut self.backend,
            &self.dual,
            &self.pred,
            &mut self.labels,
            h,
            w,
        )?;
        // keep[l]: component l reaches the outside.
        self.keep.clear();
        self.keep.resize(n + 1, false);
        let labels = &self.labels;
        let keep = &mut self.keep;
        if !self.boundary.wraps_y() {
            for x in 0..w {
                keep[labels[x] as usize] = true;
                keep[labels[(h - 1) * w + x] as usize] = true;
            }
        }
        if !self.boundary.wraps_x() {
            for y in 0..h {
                keep[labels[y * w] as usize] = true;
                keep[labels[y * w + w - 1] as usize] = true;
            }
        }
        keep[0] = true;
        let keep = &self.keep;
        let fill = |(o, &l): (&mut u8, &u32)| {
            if !keep[l as usize] {
                *o = 1;
            }
        };
        if self.parallel && h * w >= 1 << 16 {
            out.par_chunks_mut(w)
                .zip(labels.par_chunks(w))
                .for_each(|(o, l)| o.iter_mut().zip(l).for_each(fill));
        } else {
            out.iter_mut().zip(labels.iter()).for_each(fill);
        }
        Ok(())
    }
}

/// Labels the row-major `h × w` mask into `labels`; returns the number of components.
fn label(
    backend: &mut CpuBackend,
    spec: &Spec,
    mask: &[u8],
    labels: &mut [u32],
    h: usize,
    w: usize,
) -> Result<usize> {
    let mask = ArrayView2::from_shape((h, w), mask).expect("h * w sites");
    let labels = ndarray::ArrayViewMut2::from_shape((h, w), labels).expect("h * w labels");
    backend.label(Input::U8(mask), spec, labels)
}
