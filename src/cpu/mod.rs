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
    /// The largest 64-bit labeling scratch (bytes) found to fit: smaller ones are not checked
    /// again, so that a reused labeler neither reads `/proc/meminfo` nor allocates per call.
    checked64: usize,
}

/// Whether the CPU's size counts ([`size_counts`]) can count an `h × w` lattice, and the fewest
/// strips they must cut it into. Up to [`MAX_SITES`](crate::MAX_SITES) sites, always, in any
/// number of strips. Beyond, the counts keep `u32` run indices and per-strip `u32` sums, so
/// they need a shape whose runs `u32` numbers (occupancy lattices up to about 8.6·10⁹ sites;
/// in segment mode, where every site can be a run, no more than `MAX_SITES` sites) and strips
/// of at most `MAX_SITES` sites each (rows of at most `MAX_SITES` sites); cluster sizes and
/// the histogram are `u64` throughout. The scratch must fit in the memory available too.
///
/// # Errors
/// [`Error::InvalidArgument`] naming what is missing, [`Error::OutOfMemory`] with the estimate.
pub(crate) fn size_counts_strips(
    h: usize,
    w: usize,
    segments: bool,
    threads: usize,
) -> Result<usize> {
    let sites = h.saturating_mul(w);
    if sites <= crate::MAX_SITES {
        return Ok(1);
    }
    if strips::max_runs(h, w, segments) > <u32 as Index>::MAX_NODES {
        return Err(Error::InvalidArgument(format!(
            "size counts of {h} × {w} sites{}: the shape can have more runs than 32-bit \
             indices number (the CPU's size counts beyond 2^32 sites take occupancy lattices of \
             up to about 8.6e9 sites); label with u64 labels instead",
            if segments { " in segment mode" } else { "" }
        )));
    }
    // Strips have at least 16 rows (`strips::strip_rows`).
    if w > crate::MAX_SITES / 16 {
        return Err(Error::InvalidArgument(format!(
            "size counts of {h} × {w} sites: beyond 2^32 sites, rows of more than {} sites are \
             not counted",
            crate::MAX_SITES / 16
        )));
    }
    // The labeling's forest and masks, and per run the counts' own: each strip's run sizes and
    // the run → node map (`u32` each).
    let runs = strips::max_runs(h, w, segments);
    let scratch = label64_scratch_bytes(h, w, segments, threads).saturating_add(runs * 8);
    check_available(
        scratch,
        scratch,
        &format!(
            "size counts of {h} × {w} sites on the CPU (scratch {})",
            human_bytes(scratch as u64)
        ),
    )?;
    Ok(fewest_strips(h, w))
}

/// Strips enough for at most [`MAX_SITES`](crate::MAX_SITES) sites each (`w` at most
/// `MAX_SITES / 16`): the strip labeler rounds the rows per strip up, hence one strip more.
fn fewest_strips(h: usize, w: usize) -> usize {
    let max_rows = crate::MAX_SITES / w.max(1);
    h.div_ceil(max_rows) + 1
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
            checked64: 0,
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

    /// The size counts of `lattice` with the strip labeler's forest, which `rule` makes (see
    /// [`size_counts::count`]), whatever `spec.algorithm` (the counts do not depend on it).
    fn count<R: JoinRule, L: JoinRule>(
        &mut self,
        rule: &R,
        lattice: &L,
        spec: &Spec,
        out: &mut SizeCounts,
    ) -> Result<()> {
        let (c, b) = (spec.connectivity, spec.boundary);
        let (h, w) = lattice.dim();
        let threads = self.pool.threads();
        let fewest = size_counts_strips(h, w, spec.segments, threads)?;
        let (forest, scratch) = (&mut self.strips, &mut self.counts);
        self.pool.install(|threads| {
            size_counts::count(
                rule,
                lattice,
                c,
                b,
                threads.max(fewest),
                forest,
                scratch,
                out,
            );
        })
    }

    fn count_values<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        spec: &Spec,
        out: &mut SizeCounts,
    ) -> Result<()> {
        if spec.segments {
            let rule = Segments { lattice };
            self.count(&rule, &rule, spec, out)
        } else if spec.connectivity == Connectivity::Eight && lattice.len() <= crate::MAX_SITES {
            // In bands of two rows, as the labeler scans them. (Beyond MAX_SITES sites a strip
            // must keep its sums in u32 with 16 rows; a strip of bands has at least 32.)
            self.count(
                &strips::Bands { lattice },
                &Occupancy { lattice },
                spec,
                out,
            )
        } else {
            let rule = Occupancy { lattice };
            self.count(&rule, &rule, spec, out)
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
        } else if spec.connectivity == Connectivity::Eight
            && matches!(spec.algorithm, Algorithm::Auto | Algorithm::Strips)
        {
            // The strip labeler on bands of two rows: a band's 8-connected runs are its rows'
            // OR's.
            self.run(&strips::Bands { lattice }, spec, wide, out)
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
        let threads = self.pool.threads();
        let scratch = label64_scratch_bytes(h, w, spec.segments, threads);
        // The input and the labels are already there: only the scratch is still to come.
        let labels = h.saturating_mul(w).saturating_mul(8);
        if scratch > self.checked64 {
            check_available(
                scratch,
                scratch.saturating_add(labels),
                &format!(
                    "64-bit labeling of {h} × {w} sites on the CPU (labels {}, scratch {})",
                    human_bytes(labels as u64),
                    human_bytes(scratch as u64)
                ),
            )?;
            self.checked64 = scratch;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_counts_beyond_max_sites_take_enough_strips_or_refuse() {
        assert_eq!(size_counts_strips(1000, 1000, true, 2).unwrap(), 1);
        // 70000² occupancy: strips of at most MAX_SITES sites.
        for (h, w) in [
            (70_000, 70_000),
            (65_536, 65_600),
            (4_000_000, 2_000),
            (17, 268_000_000),
        ] {
            let k = fewest_strips(h, w);
            let rows = strips_rows_for(h, k);
            assert!(rows * w <= crate::MAX_SITES, "{h} × {w}: {rows} rows");
        }
        // (Whether 70000² fits in memory depends on the machine: an OutOfMemory or the strips.)
        let (h, w) = (70_000, 70_000);
        match size_counts_strips(h, w, false, 2) {
            Ok(k) => assert_eq!(k, fewest_strips(h, w)),
            Err(Error::OutOfMemory { bytes, .. }) => assert!(bytes > 30 << 30, "{bytes}"),
            Err(e) => panic!("{e}"),
        }
        match size_counts_strips(h, w, true, 2) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("segment mode"), "{m}"),
            other => panic!("{other:?}"),
        }
        match size_counts_strips(2, crate::MAX_SITES, false, 2) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("rows of more than"), "{m}"),
            other => panic!("{other:?}"),
        }
        // More runs than u32 numbers even in occupancy: 10^10 sites.
        assert!(matches!(
            size_counts_strips(100_000, 100_000, false, 2),
            Err(Error::InvalidArgument(_))
        ));
    }

    /// The rows per strip the strip labeler makes for `k` strips.
    fn strips_rows_for(h: usize, k: usize) -> usize {
        h.div_ceil(k.clamp(1, h.div_ceil(16).max(1)))
    }

    /// The counts do not depend on the number of strips (what beyond `MAX_SITES` sites is
    /// raised to keep each strip's sums in `u32`): many strips of 16 rows equal one strip. With
    /// 8-connectivity, counting in bands of two rows (as `count_values` does) equals counting
    /// rows, odd heights (a last band of one row) included.
    #[test]
    fn size_counts_equal_for_any_strip_count() {
        fn counted<R: JoinRule, L: JoinRule>(
            forest: &R,
            lattice: &L,
            (c, b, strips): (Connectivity, Boundary, usize),
            out: &mut SizeCounts,
        ) {
            let (mut f, mut s) = Default::default();
            size_counts::count(forest, lattice, c, b, strips, &mut f, &mut s, out);
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for (h, w) in [
            (300, 77),
            (301, 77),
            (1, 50),
            (2, 65),
            (3, 64),
            (17, 1),
            (33, 129),
        ] {
            let lattice = ndarray::Array2::from_shape_fn((h, w), |_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                u8::from(seed % 1000 < 593)
            });
            let rule = Occupancy {
                lattice: lattice.view(),
            };
            let bands = strips::Bands {
                lattice: lattice.view(),
            };
            for c in [Connectivity::Four, Connectivity::Eight] {
                for b in Boundary::ALL {
                    let mut want = SizeCounts::new();
                    let run = |strips: usize, banded: bool, out: &mut SizeCounts| {
                        if banded {
                            counted(&bands, &rule, (c, b, strips), out);
                        } else {
                            counted(&rule, &rule, (c, b, strips), out);
                        }
                    };
                    run(1, false, &mut want);
                    for strips in [1, 2, 7, 19, 100] {
                        for banded in [false, true] {
                            if banded && c == Connectivity::Four {
                                continue;
                            }
                            let mut got = SizeCounts::new();
                            run(strips, banded, &mut got);
                            let case = format!("{h}x{w} {c} {b} {strips} strips, bands {banded}");
                            assert_eq!(got.counts, want.counts, "{case}");
                            assert_eq!(got.percolating, want.percolating, "{case}");
                        }
                    }
                    assert!(!want.counts.is_empty() || h * w < 4);
                }
            }
        }
    }
}
