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
use crate::measure::moments::{Merge, Moments, Perimeter};
use crate::measure::table::{Builder, Sums};
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
    count: usize,
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
    sums: Vec<Sums>,
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
    ) -> Result<ClusterTable> {
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        let Options {
            connectivity,
            boundary,
            segments,
            ..
        } = *options;
        let full = measures == Measures::All;
        let periodic = boundary != Boundary::Open;
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
                connectivity,
                boundary,
                segments,
                measures,
            ));
        }

        // 1. Clusters: pieces with open boundaries, joined across periodic edges by winding.
        let spec = Spec {
            connectivity,
            boundary: Boundary::Open,
            segments,
            algorithm: Algorithm::Auto,
        };
        let npieces = labeler.label(T::input(lattice), &spec, self.pieces.view_mut())?;
        let count = if periodic {
            let rule = |a: (usize, usize), b: (usize, usize)| {
                let (va, vb) = (lattice[a], lattice[b]);
                va.is_occupied() && vb.is_occupied() && (!segments || va == vb)
            };
            self.joined
                .join(self.pieces.view(), npieces, connectivity, boundary, rule);
            relabel(parallel, &self.pieces, &mut self.labels, &self.joined.map);
            self.joined.count
        } else {
            std::mem::swap(&mut self.pieces, &mut self.labels);
            npieces
        };
        self.count = count;

        // 2. The complement, labeled with the dual connectivity.
        let mut nempty = 0;
        if full {
            if self.complement.dim() != (h, w) {
                self.complement = Array2::zeros((h, w));
            }
            let invert = |mut c: ndarray::ArrayViewMut1<'_, u8>, l: ndarray::ArrayView1<'_, T>| {
                c.iter_mut()
                    .zip(l.iter())
                    .for_each(|(c, &v)| *c = u8::from(!v.is_occupied()));
            };
            let zip = Zip::from(self.complement.rows_mut()).and(lattice.rows());
            if parallel {
                zip.par_for_each(invert);
            } else {
                zip.for_each(invert);
            }
            let dual_spec = Spec {
                connectivity: dual(connectivity),
                segments: false,
                ..spec
            };
            let np = labeler.label(
                Input::U8(self.complement.view()),
                &dual_spec,
                self.empty_pieces.view_mut(),
            )?;
            nempty = if periodic {
                let comp = &self.complement;
                let rule = |a: (usize, usize), b: (usize, usize)| comp[a] != 0 && comp[b] != 0;
                self.joined_empties.join(
                    self.empty_pieces.view(),
                    np,
                    dual(connectivity),
                    boundary,
                    rule,
                );
                relabel(
                    parallel,
                    &self.empty_pieces,
                    &mut self.empties,
                    &self.joined_empties.map,
                );
                self.joined_empties.count
            } else {
                std::mem::swap(&mut self.empty_pieces, &mut self.empties);
                np
            };
        }

        // 3. Strips, first sites and each strip's largest label.
        let threads = if parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        let rows = strip_rows(h, threads);
        self.strips.resize_with(rows.len(), StripScratch::default);
        let labels = self.labels.as_slice().expect("standard layout");
        let piece_labels = if periodic {
            self.pieces.as_slice().expect("standard layout")
        } else {
            labels
        };
        let buf = &mut self.buffers;
        // First sites are needed for the filled areas only, and each strip's largest label only
        // when there are several strips.
        let max_p = if full || rows.len() > 1 {
            scan_labels(parallel, piece_labels, w, &rows, npieces, &mut buf.first_p)
        } else {
            vec![npieces as u32]
        };
        let max_c = if periodic && full {
            scan_labels(parallel, labels, w, &rows, count, &mut buf.first_c)
        } else {
            max_p.clone()
        };
        let first_c: &[u32] = if periodic { &buf.first_c } else { &buf.first_p };
        let empties = full.then(|| self.empties.as_slice().expect("standard layout"));
        let max_e = match empties {
            Some(e) => scan_labels(parallel, e, w, &rows, nempty, &mut buf.first_e),
            None => vec![0; rows.len()],
        };
        let first_e = &buf.first_e;
        let tree = full && !periodic && !segments;
        let (edge_e, parent_e) = (&mut buf.edge_e, &mut buf.parent_e);
        if tree {
            let e = empties.expect("full");
            edge_e.clear();
            edge_e.resize(nempty + 1, false);
            for_each_edge_site(h, w, true, true, |i| edge_e[e[i] as usize] = true);
            // The cluster above each region's first site encloses it.
            parent_e.clear();
            parent_e.extend((0..=nempty).map(|r| {
                if r == 0 || edge_e[r] {
                    scan::NO_PARENT
                } else {
                    labels[first_e[r] as usize - w]
                }
            }));
        }

        // 4. The pass.
        let grid = Grid {
            h,
            w,
            wraps_x: boundary.wraps_x(),
            wraps_y: boundary.wraps_y(),
            eight: connectivity == Connectivity::Eight,
            segments,
            labels,
            empties,
            clusters: count as u32,
        };
        let moments = &mut buf.moments;
        moments.clear();
        moments.resize(npieces + 1, Moments::EMPTY);
        let perimeter = &mut buf.perimeter;
        perimeter.clear();
        perimeter.resize(if full { count + 1 } else { 0 }, Perimeter::EMPTY);
        let empty_sizes = &mut buf.empty_sizes;
        empty_sizes.clear();
        empty_sizes.resize(if full { nempty + 1 } else { 0 }, 0);
        let hull_rule = if tree {
            HullRule::Tree { parent: parent_e }
        } else {
            HullRule::Later
        };
        let want_edges = full && !tree;
        {
            let parts_m = split_owned(moments, &max_p);
            let mut parts_p = if full {
                split_owned(perimeter, &max_c)
            } else {
                Vec::new()
            };
            let mut parts_e = if full {
                split_owned(empty_sizes, &max_e)
            } else {
                Vec::new()
            };
            let mut jobs = Vec::with_capacity(rows.len());
            let mut it_p = parts_p.drain(..);
            let mut it_e = parts_e.drain(..);
            for ((r, m), s) in rows.iter().zip(parts_m).zip(self.strips.iter_mut()) {
                jobs.push((r.clone(), m, it_p.next(), it_e.next(), s));
            }
            run_jobs(parallel, jobs, |(r, m, p, e, s)| {
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
        for s in &mut self.strips {
            s.spills.moments.drain_into(moments);
            if full {
                s.spills.perimeter.drain_into(perimeter);
                s.spills.sizes.drain_into(empty_sizes);
            }
        }

        // 5. Compose the pieces into clusters.
        let mut builder = Builder::new(
            (h, w),
            connectivity,
            boundary,
            segments,
            measures,
            count,
            std::mem::take(&mut buf.sums),
        );
        if periodic {
            for c in 1..=count {
                builder.set_wraps(c as u32, self.joined.wraps[c]);
            }
            for (p, m) in moments.iter().enumerate().skip(1) {
                builder.add_piece(self.joined.map[p], m, self.joined.shift[p]);
            }
        } else {
            for (p, m) in moments.iter().enumerate().skip(1) {
                builder.add_piece(p as u32, m, [0, 0]);
            }
        }
        if !full {
            return Ok(builder.finish(parallel, None, &mut buf.sums));
        }
        let sizes: Vec<u64> = std::iter::once(0)
            .chain((1..=count).map(|c| builder.size_of(c as u32)))
            .collect();

        // 6. Filled areas (and hulls, where the pass could not decide them).
        let filled_area = if tree {
            filled::tree_filled(
                w,
                labels,
                empties.expect("full"),
                first_c,
                first_e,
                edge_e,
                &sizes,
                empty_sizes,
            )
        } else {
            let e = empties.expect("full");
            let nodes = count + nempty + 1;
            let node_of = |i: usize| -> u32 {
                if labels[i] != 0 {
                    labels[i] - 1
                } else {
                    count as u32 + e[i] - 1
                }
            };
            // Seeds: regions on an open edge, and regions that wrap.
            let mut seed = vec![false; nodes];
            for_each_edge_site(h, w, !boundary.wraps_x(), !boundary.wraps_y(), |i| {
                seed[node_of(i) as usize] = true;
            });
            if periodic {
                for c in 1..=count {
                    if self.joined.wraps[c] != 0 {
                        seed[c - 1] = true;
                    }
                }
                for r in 1..=nempty {
                    if self.joined_empties.wraps[r] != 0 {
                        seed[count + r - 1] = true;
                    }
                }
            }
            let seeds: Vec<u32> = (0..nodes as u32).filter(|&v| seed[v as usize]).collect();
            let mut node_sites = Vec::with_capacity(nodes);
            node_sites.extend_from_slice(&sizes[1..]);
            node_sites.extend_from_slice(&empty_sizes[1..]);
            node_sites.push(0);
            let mut edges: Vec<u64> = Vec::new();
            for s in &mut self.strips {
                edges.append(&mut s.work.edges);
            }
            // Repeated edges are fine for the search; sorting them away would cost more.
            let dom = &mut self.dominance;
            dom.solve(nodes, &edges, &seeds, &node_sites);
            let filled: Vec<u64> = std::iter::once(0)
                .chain((0..count).map(|c| {
                    if dom.reached(c as u32) {
                        sizes[c + 1] + dom.cut_off[c] + dom.unreachable
                    } else {
                        dom.unreachable
                    }
                }))
                .collect();
            // Hulls: a second pass over the rows.
            let hull = &mut buf.hull;
            hull.clear();
            hull.resize(count + 1, 0);
            {
                let dom = &self.dominance;
                let outside = |x: u32, c: u32| dom.outside(x, c - 1);
                let parts = split_owned(hull, &max_c);
                let jobs: Vec<_> = rows.iter().zip(parts).zip(self.strips.iter_mut()).collect();
                run_jobs(parallel, jobs, |((r, (lo, sl)), s)| {
                    let StripScratch { spills, work } = s;
                    spills.hull.clear();
                    let mut sink = Sink::new(lo, sl, &mut spills.hull);
                    scan::hull_strip(&grid, r.clone(), &mut sink, &outside, work);
                });
            }
            for s in &mut self.strips {
                s.spills.hull.drain_into(hull);
            }
            for (p, h) in perimeter.iter_mut().zip(hull.iter()) {
                p.hull = *h;
            }
            filled
        };
        Ok(builder.finish(parallel, Some((perimeter, &filled_area)), &mut buf.sums))
    }
}

/// The dual connectivity: the complement of 4-connected clusters is 8-connected, and back.
fn dual(connectivity: Connectivity) -> Connectivity {
    match connectivity {
        Connectivity::Four => Connectivity::Eight,
        Connectivity::Eight => Connectivity::Four,
    }
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
fn for_each_edge_site(h: usize, w: usize, x_open: bool, y_open: bool, mut f: impl FnMut(usize)) {
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
