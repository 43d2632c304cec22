//! Cluster analysis on the CPU: the lattice's pieces (labeled with open boundaries) joined
//! across periodic edges by winding, the complement labeled with the dual connectivity, one
//! parallel pass over the label rows for the per-piece sums ([`scan`], [`accum`]), the pieces
//! composed into clusters, and the filled areas from the region graph ([`filled`]). The
//! definitions are the front end's (`crate::analysis`).

pub(crate) mod accum;
pub(crate) mod filled;
pub(crate) mod scan;

use crate::core::backend::LabelBackend;
use crate::core::lattice::{check_size, Input};
use crate::core::options::Spec;
use crate::measure::compose::{compose, Columns};
use crate::measure::moments::{Merge, Moments, Perimeter};
use crate::measure::wrapping::Joined;
use crate::measure::Measures;
use crate::{Algorithm, Boundary, ClusterTable, Connectivity, Labels, Options, Result, SiteValue};
use accum::{run_jobs, scan_labels, split_owned, strip_rows, Sink};
use filled::Dominance;
use ndarray::{Array2, ArrayView2, Zip};
use rayon::prelude::*;
use scan::{Grid, HullRule, StripScratch, StripSinks};

/// The CPU analysis's buffers, kept between calls.
#[derive(Default)]
pub(crate) struct CpuAnalysis {
    /// Final labels of the last call.
    labels: Array2<u32>,
    pub(super) count: usize,
    /// Open-boundary pieces (periodic lattices).
    pieces: Array2<u32>,
    /// The complement (1 where the lattice is zero) and its labels.
    complement: Array2<u8>,
    empties: Array2<u32>,
    empty_pieces: Array2<u32>,
    joined: Joined,
    joined_empties: Joined,
    strips: Vec<StripScratch>,
    dominance: Dominance,
    buffers: Buffers,
}

/// Per-label arrays, kept between calls.
#[derive(Default)]
struct Buffers {
    first_p: Vec<u32>,
    first_c: Vec<u32>,
    first_e: Vec<u32>,
    edge_e: Vec<bool>,
    parent_e: Vec<u32>,
    moments: Vec<Moments>,
    perimeter: Vec<Perimeter>,
    empty_sizes: Vec<u64>,
    hull: Vec<u64>,
}

impl CpuAnalysis {
    /// The labels of the last run.
    pub(crate) fn labels(&self) -> ArrayView2<'_, u32> {
        self.labels.view()
    }

    /// The labels of the last run, copied.
    pub(crate) fn labels_owned(&self) -> Labels {
        Labels {
            array: self.labels.clone(),
            count: self.count,
        }
    }

    /// Forgets the last run's labels (a run elsewhere made none).
    pub(crate) fn clear_labels(&mut self) {
        self.labels = Array2::zeros((0, 0));
        self.count = 0;
    }

    /// Keeps labels made elsewhere as the last run's.
    pub(crate) fn set_labels(&mut self, labels: &Labels) {
        self.labels = labels.array.clone();
        self.count = labels.count;
    }

    /// Analyzes `lattice` (rows contiguous) on the current rayon pool when `parallel`, else on
    /// this thread alone; `labeler` labels the lattice and its complement (it may be a GPU's).
    pub(crate) fn run<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        options: &Options,
        measures: Measures,
        parallel: bool,
        labeler: &mut dyn LabelBackend,
        reuse: Option<&mut ClusterTable>,
    ) -> Result<ClusterTable> {
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        let g = Run {
            h,
            w,
            connectivity: options.connectivity,
            boundary: options.boundary,
            segments: options.segments,
            measures,
            full: measures == Measures::All,
            periodic: options.boundary != Boundary::Open,
            parallel,
        };
        for a in [
            &mut self.labels,
            &mut self.pieces,
            &mut self.empties,
            &mut self.empty_pieces,
        ] {
            if a.dim() != (h, w) {
                *a = Array2::zeros((h, w));
            }
        }
        if h == 0 || w == 0 {
            self.count = 0;
            return Ok(ClusterTable::empty(
                (h, w),
                g.connectivity,
                g.boundary,
                g.segments,
                measures,
            ));
        }
        let (npieces, count) = self.clusters(lattice, &g, labeler)?;
        self.count = count;
        let nempty = if g.full {
            self.complement(lattice, &g, labeler)?
        } else {
            0
        };
        let n = Counts {
            npieces,
            count,
            nempty,
        };
        let strips = self.first_sites(&g, &n);
        self.pass(&g, &n, &strips);
        let table = self.compose(&g, &n, reuse);
        if !g.full {
            return Ok(table);
        }
        let sizes: Vec<u64> = std::iter::once(0)
            .chain(table.size.iter().copied())
            .collect();
        let filled_area = if strips.tree {
            self.tree_filled(&g, &sizes)
        } else {
            self.region_graph_filled(&g, &n, &strips, &sizes)
        };
        Ok(table.with_full(&self.buffers.perimeter, &filled_area, parallel))
    }

    /// 1. Clusters: pieces labeled with open boundaries, joined across periodic edges by
    ///    winding. Returns the piece and cluster counts.
    fn clusters<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        g: &Run,
        labeler: &mut dyn LabelBackend,
    ) -> Result<(usize, usize)> {
        let spec = g.open_spec();
        let npieces = labeler.label(T::input(lattice), &spec, self.pieces.view_mut())?;
        let count = if g.periodic {
            let segments = g.segments;
            let rule = |a: (usize, usize), b: (usize, usize)| {
                let (va, vb) = (lattice[a], lattice[b]);
                va.is_occupied() && vb.is_occupied() && (!segments || va == vb)
            };
            self.joined.parallel = g.parallel;
            self.joined.join(
                self.pieces.view(),
                npieces,
                g.connectivity,
                g.boundary,
                rule,
            );
            relabel(g.parallel, &self.pieces, &mut self.labels, &self.joined.map);
            self.joined.count
        } else {
            std::mem::swap(&mut self.pieces, &mut self.labels);
            npieces
        };
        Ok((npieces, count))
    }

    /// 2. The complement, labeled with the dual connectivity (and joined across periodic
    ///    edges). Returns the number of its regions.
    fn complement<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        g: &Run,
        labeler: &mut dyn LabelBackend,
    ) -> Result<usize> {
        if self.complement.dim() != (g.h, g.w) {
            self.complement = Array2::zeros((g.h, g.w));
        }
        let invert = |mut c: ndarray::ArrayViewMut1<'_, u8>, l: ndarray::ArrayView1<'_, T>| {
            c.iter_mut()
                .zip(l.iter())
                .for_each(|(c, &v)| *c = u8::from(!v.is_occupied()));
        };
        let zip = Zip::from(self.complement.rows_mut()).and(lattice.rows());
        if g.parallel {
            zip.par_for_each(invert);
        } else {
            zip.for_each(invert);
        }
        let dual_spec = Spec {
            connectivity: g.connectivity.dual(),
            segments: false,
            ..g.open_spec()
        };
        let np = labeler.label(
            Input::U8(self.complement.view()),
            &dual_spec,
            self.empty_pieces.view_mut(),
        )?;
        Ok(if g.periodic {
            let comp = &self.complement;
            let rule = |a: (usize, usize), b: (usize, usize)| comp[a] != 0 && comp[b] != 0;
            self.joined_empties.join(
                self.empty_pieces.view(),
                np,
                g.connectivity.dual(),
                g.boundary,
                rule,
            );
            relabel(
                g.parallel,
                &self.empty_pieces,
                &mut self.empties,
                &self.joined_empties.map,
            );
            self.joined_empties.count
        } else {
            std::mem::swap(&mut self.empty_pieces, &mut self.empties);
            np
        })
    }

    /// The labels the pass reads: clusters, pieces (the clusters on an open lattice), and the
    /// complement's regions when every column is measured.
    pub(super) fn label_slices(&self, g: &Run) -> (&[u32], &[u32], Option<&[u32]>) {
        label_slices(&self.labels, &self.pieces, &self.empties, g)
    }

    /// 3. The strips of rows, every label's first site (for the filled areas) and each strip's
    ///    largest label; on an open occupancy lattice, the tree of enclosing clusters.
    fn first_sites(&mut self, g: &Run, n: &Counts) -> Strips {
        let threads = if g.parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        let rows = strip_rows(g.h, threads);
        self.strips.resize_with(rows.len(), StripScratch::default);
        // (Fields apart: the label arrays are read while the buffers are written.)
        let CpuAnalysis {
            labels,
            pieces,
            empties,
            buffers: buf,
            ..
        } = self;
        let (labels, piece_labels, empties) = label_slices(labels, pieces, empties, g);
        let (w, parallel) = (g.w, g.parallel);
        // First sites are needed for the filled areas only, and each strip's largest label only
        // when there are several strips.
        let max_p = if g.full || rows.len() > 1 {
            scan_labels(
                parallel,
                piece_labels,
                w,
                &rows,
                n.npieces,
                &mut buf.first_p,
            )
        } else {
            vec![n.npieces as u32]
        };
        let max_c = if g.periodic && g.full {
            scan_labels(parallel, labels, w, &rows, n.count, &mut buf.first_c)
        } else {
            max_p.clone()
        };
        let max_e = match empties {
            Some(e) => scan_labels(parallel, e, w, &rows, n.nempty, &mut buf.first_e),
            None => vec![0; rows.len()],
        };
        let tree = g.full && !g.periodic && !g.segments;
        if tree {
            let e = empties.expect("full");
            let (edge_e, parent_e, first_e) = (&mut buf.edge_e, &mut buf.parent_e, &buf.first_e);
            edge_e.clear();
            edge_e.resize(n.nempty + 1, false);
            for_each_edge_site(g.h, w, true, true, |i| edge_e[e[i] as usize] = true);
            // The cluster above each region's first site encloses it.
            parent_e.clear();
            parent_e.extend((0..=n.nempty).map(|r| {
                if r == 0 || edge_e[r] {
                    scan::NO_PARENT
                } else {
                    labels[first_e[r] as usize - w]
                }
            }));
        }
        Strips {
            rows,
            max_p,
            max_c,
            max_e,
            tree,
        }
    }

    /// 4. The pass: each strip of rows adds its sites' moments, perimeters and the
    ///    complement's region sizes into the per-label arrays (and its spills), in parallel.
    fn pass(&mut self, g: &Run, n: &Counts, st: &Strips) {
        let CpuAnalysis {
            labels,
            pieces,
            empties,
            strips,
            buffers: buf,
            ..
        } = self;
        let (labels, piece_labels, empties) = label_slices(labels, pieces, empties, g);
        let grid = g.grid(labels, empties, n.count);
        let full = g.full;
        let moments = &mut buf.moments;
        moments.clear();
        moments.resize(n.npieces + 1, Moments::EMPTY);
        let perimeter = &mut buf.perimeter;
        perimeter.clear();
        perimeter.resize(if full { n.count + 1 } else { 0 }, Perimeter::EMPTY);
        let empty_sizes = &mut buf.empty_sizes;
        empty_sizes.clear();
        empty_sizes.resize(if full { n.nempty + 1 } else { 0 }, 0);
        let hull_rule = if st.tree {
            HullRule::Tree {
                parent: &buf.parent_e,
            }
        } else {
            HullRule::Later
        };
        let want_edges = full && !st.tree;
        {
            let parts_m = split_owned(moments, &st.max_p);
            let mut parts_p = if full {
                split_owned(perimeter, &st.max_c)
            } else {
                Vec::new()
            };
            let mut parts_e = if full {
                split_owned(empty_sizes, &st.max_e)
            } else {
                Vec::new()
            };
            let mut jobs = Vec::with_capacity(st.rows.len());
            let mut it_p = parts_p.drain(..);
            let mut it_e = parts_e.drain(..);
            for ((r, m), s) in st.rows.iter().zip(parts_m).zip(strips.iter_mut()) {
                jobs.push((r.clone(), m, it_p.next(), it_e.next(), s));
            }
            run_jobs(g.parallel, jobs, |(r, m, p, e, s)| {
                s.clear();
                let StripScratch { spills, work } = s;
                let mut sinks = StripSinks {
                    moments: Sink::new(m.0, m.1, &mut spills.moments),
                    perimeter: p.map(|(lo, sl)| Sink::new(lo, sl, &mut spills.perimeter)),
                    empty_sizes: e.map(|(lo, sl)| Sink::new(lo, sl, &mut spills.sizes)),
                };
                scan::main_strip(
                    &grid,
                    piece_labels,
                    r,
                    &mut sinks,
                    hull_rule,
                    want_edges,
                    work,
                );
            });
        }
        for s in strips.iter_mut() {
            s.spills.moments.drain_into(moments);
            if full {
                s.spills.perimeter.drain_into(perimeter);
                s.spills.sizes.drain_into(empty_sizes);
            }
        }
    }

    /// 5. The pieces composed into clusters (shifted by their winding on periodic lattices),
    ///    into the columns' memory of `reuse` when given.
    fn compose(&self, g: &Run, n: &Counts, reuse: Option<&mut ClusterTable>) -> ClusterTable {
        let mut table = compose(
            reuse.map(|t| Columns::reclaim(t, n.npieces)),
            (g.h, g.w),
            g.connectivity,
            g.boundary,
            g.segments,
            n.npieces,
            &self.buffers.moments[..],
            g.periodic.then_some(&self.joined),
            g.parallel,
        );
        table.measures = g.measures;
        table
    }
}

/// The labels the pass reads: clusters, pieces (the clusters themselves on an open lattice),
/// and the complement's regions when every column is measured.
fn label_slices<'a>(
    labels: &'a Array2<u32>,
    pieces: &'a Array2<u32>,
    empties: &'a Array2<u32>,
    g: &Run,
) -> (&'a [u32], &'a [u32], Option<&'a [u32]>) {
    let labels = labels.as_slice().expect("standard layout");
    let pieces = if g.periodic {
        pieces.as_slice().expect("standard layout")
    } else {
        labels
    };
    let empties = g.full.then(|| empties.as_slice().expect("standard layout"));
    (labels, pieces, empties)
}

/// What one run computes, for its stages.
pub(super) struct Run {
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) connectivity: Connectivity,
    pub(super) boundary: Boundary,
    pub(super) segments: bool,
    pub(super) measures: Measures,
    /// Every column (else the shape columns only).
    pub(super) full: bool,
    /// Some axis wraps.
    pub(super) periodic: bool,
    /// On the current rayon pool (else on this thread).
    pub(super) parallel: bool,
}

impl Run {
    /// The lattice's labeling: pieces with open boundaries.
    fn open_spec(&self) -> Spec {
        Spec {
            connectivity: self.connectivity,
            boundary: Boundary::Open,
            segments: self.segments,
            algorithm: Algorithm::Auto,
        }
    }

    /// The pass's view of the labels.
    pub(super) fn grid<'a>(
        &self,
        labels: &'a [u32],
        empties: Option<&'a [u32]>,
        count: usize,
    ) -> Grid<'a> {
        Grid {
            h: self.h,
            w: self.w,
            wraps_x: self.boundary.wraps_x(),
            wraps_y: self.boundary.wraps_y(),
            eight: self.connectivity == Connectivity::Eight,
            segments: self.segments,
            labels,
            empties,
            clusters: count as u32,
        }
    }
}

/// Pieces, clusters and complement regions of one run.
pub(super) struct Counts {
    pub(super) npieces: usize,
    pub(super) count: usize,
    pub(super) nempty: usize,
}

/// The strips of rows and each strip's largest piece, cluster and region label.
pub(super) struct Strips {
    pub(super) rows: Vec<std::ops::Range<usize>>,
    pub(super) max_p: Vec<u32>,
    pub(super) max_c: Vec<u32>,
    pub(super) max_e: Vec<u32>,
    /// The filled areas come from the tree of enclosing clusters.
    pub(super) tree: bool,
}

/// `dst = map[src]`, row by row (in parallel when `parallel`).
fn relabel(parallel: bool, src: &Array2<u32>, dst: &mut Array2<u32>, map: &[u32]) {
    let w = src.ncols().max(1);
    let s = src.as_slice().expect("standard layout");
    let d = dst.as_slice_mut().expect("standard layout");
    let row = |(d, s): (&mut [u32], &[u32])| {
        for (d, &s) in d.iter_mut().zip(s) {
            *d = map[s as usize];
        }
    };
    if parallel {
        d.par_chunks_mut(w).zip(s.par_chunks(w)).for_each(row);
    } else {
        d.chunks_mut(w).zip(s.chunks(w)).for_each(row);
    }
}

/// Calls `f(raster index)` for every site on the edges of the open axes: columns 0 and `w − 1`
/// when `x_open`, rows 0 and `h − 1` when `y_open` (corner sites may come twice).
pub(super) fn for_each_edge_site(
    h: usize,
    w: usize,
    x_open: bool,
    y_open: bool,
    mut f: impl FnMut(usize),
) {
    if y_open {
        for x in 0..w {
            f(x);
            f((h - 1) * w + x);
        }
    }
    if x_open {
        for y in 0..h {
            f(y * w);
            f(y * w + w - 1);
        }
    }
}
