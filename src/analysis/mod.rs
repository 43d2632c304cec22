//! Cluster analysis: everything a percolation or cellular-automaton study measures about the
//! clusters of a lattice, in one call.
//!
//! [`analyze`] (or a reusable [`Analyzer`]) labels the lattice and returns a [`ClusterTable`]:
//! per cluster its size, bounding box, centroid, radius of gyration, site / bond / hull
//! perimeters, filled area, and whether it wraps around a periodic axis or spans an open one.
//! [`ClusterTable::stats`] gives the per-lattice numbers ([`LatticeStats`]: cluster count, largest
//! cluster, mean cluster size `S`, `P∞`, wrapping flags) and [`ClusterTable::size_distribution`]
//! the `n_s`. Tables are written as CSV or HDF5 ([`ClusterTable::write_csv`],
//! [`ClusterTable::write_hdf5`]).
//!
//! # Definitions
//! Following `CONVENTIONS.md`; "outside a cluster" means every site not in it (in occupancy
//! mode those are exactly its empty neighbours).
//!
//! - **Site perimeter** `t`: the number of distinct sites outside the cluster that neighbour it
//!   (the cluster's connectivity, across periodic edges; a site counts once however many of the
//!   cluster's sites it touches).
//! - **Bond perimeter**: the number of (cluster site, outside neighbour) pairs, counted per
//!   direction (a site neighbouring the cluster on two sides counts twice). On a torus one or two
//!   sites wide the neighbourhood is literal: a site that is a neighbour twice counts twice.
//! - **Filled area**: the cluster plus every site it encloses — empty sites and other clusters
//!   alike: every site not reachable from the *outside* without crossing the cluster. Moves go
//!   between neighbours in the dual connectivity (8 for 4-connected clusters, 4 for 8-connected
//!   ones), and also along another cluster's own joins (this matters only in segment mode with
//!   8-connectivity, where two segments can cross diagonally: the other segment stays joined).
//!   The outside is: the sites on an open edge, and — along periodic axes, where the lattice has
//!   no edge — every region that wraps around the lattice (a cluster, or a region of the
//!   complement labeled with the dual connectivity). So on a torus a cluster encloses the
//!   contractible holes it surrounds, and a cluster that wraps belongs to every other cluster's
//!   outside. When a cluster is the only region that wraps (typical above the threshold, where no
//!   empty region wraps), its own outside is empty and its filled area is the whole lattice.
//!   On an open lattice this is scikit-image's `area_filled` (PARAFILL's absorption of the
//!   interior regions).
//! - **Hull perimeter**: the perimeter sites (as in `t`) that lie on the outside in the sense of
//!   the filled area, i.e. `t` minus the perimeter sites in the cluster's holes. The walk: start
//!   on the outside and step between sites not in the cluster along the dual connectivity (the
//!   moves of the filled area); the hull is every perimeter site this walk reaches. For
//!   4-connected clusters that is the Grossman–Aharony hull, which enters fjords through diagonal
//!   necks (the accessible perimeter, which does not, is not computed).
//! - **Wrapping** (periodic axes): by winding — a displacement-tracking union-find records, for
//!   each piece of a cluster, which copy of the lattice it lies in; a loop that comes back in
//!   another copy wraps. On a torus of width 1 every occupied site wraps in `x`. Never inferred
//!   from the bounding box.
//! - **Spanning** (open axes): touches column 0 and column `w − 1` (row 0 and `h − 1`).
//! - **Coordinates**: see [`ClusterTable`] (unwrapped along periodic axes from the cluster's first
//!   site; lattice coordinates along an axis the cluster wraps in).
//! - **Segment mode** ([`Analyzer::segments`]): clusters are same-value segments; every site not
//!   in a segment — empty or another segment — is outside it for the perimeters, and the
//!   complement used for the filled area's regions is the set of empty (zero) sites.
//!
//! # Worked example
//! A ring of 8 sites around a one-site hole, and a single site, 4-connectivity, open boundary:
//!
//! ```text
//!     x: 0 1 2 3 4 5
//! y=0    . . . . . .
//! y=1    . # # # . .
//! y=2    . # . # . #
//! y=3    . # # # . .
//! ```
//!
//! The ring's outside neighbours, as (y, x), are the 9 sites around it — (0,1) (0,2) (0,3) above,
//! (1,0) (2,0) (3,0) left, (1,4) (2,4) (3,4) right; row 3 is the last row — plus the hole (2,2):
//! `t = 10`.
//! Bonds: each of the 5 sites of the upper two rows has 2 outside neighbours, each of the 3 sites
//! of the bottom row 1: 13. The hole is enclosed, so the hull has 9 sites and the filled area is 9.
//! The single site at (2,5) has `t` = 3, 3 bonds, hull 3, filled area 1.
//!
//! ```
//! use clusterlab::{analyze, Boundary, Connectivity};
//! use ndarray::array;
//!
//! let lattice = array![
//!     [0u8, 0, 0, 0, 0, 0],
//!     [0, 1, 1, 1, 0, 0],
//!     [0, 1, 0, 1, 0, 1],
//!     [0, 1, 1, 1, 0, 0],
//! ];
//! let table = analyze(lattice.view(), Connectivity::Four, Boundary::Open)?;
//! let ring = table.row(1).unwrap();
//! assert_eq!((ring.size, ring.x_min, ring.x_max, ring.y_min, ring.y_max), (8, 1, 3, 1, 3));
//! assert_eq!((ring.centroid_x, ring.centroid_y), (2.0, 2.0));
//! assert_eq!(ring.gyration_radius, 1.5f64.sqrt()); // R² = (4·2 + 4·1) / 8
//! assert_eq!(ring.site_perimeter, Some(10));
//! assert_eq!(ring.bond_perimeter, Some(13));
//! assert_eq!(ring.hull_perimeter, Some(9));
//! assert_eq!(ring.filled_area, Some(9));
//! assert!(!ring.spans_x && !ring.spans_y);
//! # Ok::<(), clusterlab::Error>(())
//! ```
//!
//! # Speed
//! The lattice is labeled once with the crate's fast strip labeler (with open boundaries; the
//! pieces are joined across periodic edges by the displacement union-find, which only visits the
//! `O(h + w)` edge links), and for the perimeter columns its complement once more with the dual
//! connectivity. A cheap scan finds every label's first site. Then one parallel pass over the
//! label rows accumulates everything, with bit masks per row in occupancy mode: moments and bond
//! counts run by run (popcounts of the empty sites around a run), site perimeters as bonds less
//! the repeated neighbour slots of each empty site, hulls as site perimeters less the perimeter
//! sites in the cluster's holes, and the complement's region sizes run by run. Each strip of rows
//! writes the labels whose first site it holds straight into the shared per-label arrays (no
//! per-thread copies; the few others go through a small per-strip map). The filled areas then
//! come from the region graph: on an open lattice in occupancy mode it is a tree whose parent
//! links are read off the first sites (one backward sweep; the pass uses the same parents for the
//! hulls); otherwise (periodic axes, segments) a depth-first search for articulation points over
//! the region graph, and a second pass over the rows for the hulls. [`Measures::Shape`] skips
//! the complement and the perimeters (size, bounding box, centroid, gyration, wrapping and
//! spanning only): one labeling and one pass over the pieces' rows.
//!
//! Sums of coordinates and of their squares are exact integers (the squares in 96 bits); the
//! centroid and the radius of gyration are computed from them in `f64` at the end.

mod accum;
mod columns;
mod filled;
#[cfg(feature = "cuda")]
pub(crate) mod gpu;
mod output;
mod scan;
mod size_distribution;
mod stats;
mod table;
mod wrapping;

#[cfg(not(feature = "cuda"))]
use crate::cuda::CudaAnalyzer;
pub use columns::{columns, Column, ColumnType, COLUMNS, CSV_HEADER, CSV_HEADER_SHAPE};
#[cfg(feature = "cuda")]
pub use gpu::{CudaAnalyzer, PercolatingCluster, SizeCounts};
pub use size_distribution::{SizeBin, SizeDistribution};
pub use stats::{LatticeStats, Percolating};
pub use table::{ClusterRow, ClusterTable};

use crate::core::lattice::check_size;
use crate::cpu::pool::CpuPool;
use crate::device::Device;
use crate::{
    Backend, Boundary, Connectivity, Labeler, Labels, Options, Parallelism, Result, SiteValue,
};
use accum::{run_jobs, scan_labels, split_owned, strip_rows, Merge, Sink};
use filled::Dominance;
use ndarray::{Array2, ArrayView2, Zip};
use rayon::prelude::*;
use scan::{Grid, HullRule, Moments, Perimeter, StripScratch, StripSinks};
use table::Builder;
use wrapping::Joined;

/// Which columns to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Measures {
    /// Every column (the default).
    #[default]
    All,
    /// Size, bounding box, centroid, radius of gyration, wrapping and spanning: no perimeters,
    /// no filled area (the complement is not labeled). The columns OpenCV's
    /// `connectedComponentsWithStats` gives, and a bit more.
    Shape,
}

/// Analyzes the clusters of an occupancy lattice (nonzero = occupied) with every measure.
///
/// For repeated calls, or for segments, thread counts and the labels, use an [`Analyzer`].
///
/// ```
/// use clusterlab::{analyze, Boundary, Connectivity};
/// use ndarray::array;
///
/// // A horizontal strip on a torus wraps in x.
/// let lattice = array![[0u8, 0, 0], [1, 1, 1], [0, 1, 0]];
/// let table = analyze(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
/// assert_eq!(table.count(), 1);
/// assert!(table.wraps_x[0] && !table.wraps_y[0]);
/// # Ok::<(), clusterlab::Error>(())
/// ```
///
/// # Errors
/// [`Error::TooManySites`](crate::Error::TooManySites) beyond [`MAX_SITES`](crate::MAX_SITES) sites.
pub fn analyze(
    lattice: ArrayView2<'_, u8>,
    connectivity: Connectivity,
    boundary: Boundary,
) -> Result<ClusterTable> {
    Analyzer::new(connectivity, boundary).analyze(lattice)
}

/// A reusable cluster-analysis plan: connectivity, boundary, site rule, measures and thread
/// count, with every buffer it needs, kept between calls.
///
/// ```
/// use clusterlab::{Analyzer, Boundary, Connectivity, Measures};
/// use ndarray::array;
///
/// let mut analyzer = Analyzer::new(Connectivity::Four, Boundary::Open).measures(Measures::Shape);
/// let lattice = array![[1u8, 1, 0], [0, 0, 0], [0, 1, 1]];
/// let (table, labels) = analyzer.analyze_labeled(lattice.view())?;
/// assert_eq!(labels.array(), &array![[1, 1, 0], [0, 0, 0], [0, 2, 2]]);
/// assert_eq!(table.centroid_x.to_vec(), vec![0.5, 1.5]);
/// assert!(table.site_perimeter.is_none());
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub struct Analyzer {
    /// Connectivity, boundary, segments, threads and backend.
    options: Options,
    measures: Measures,
    /// Where it runs, resolved by [`Analyzer::backend`].
    device: Device,
    /// The threads of the CPU passes (also with a GPU device).
    pool: CpuPool,
    /// The lattice's and the complement's labelers (open boundaries), built on first use from
    /// `options` and `device`, so that the builder methods may come in any order.
    labelers: Option<(Labeler, Labeler)>,
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
    /// The GPU analyzer for [`Measures::Shape`] of occupancy lattices, on a GPU device.
    gpu: Option<CudaAnalyzer>,
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
    sums: Vec<table::Sums>,
}

impl Analyzer {
    /// An analyzer for occupancy lattices (nonzero = occupied) computing every measure on rayon's
    /// global thread pool.
    pub fn new(connectivity: Connectivity, boundary: Boundary) -> Self {
        Analyzer {
            options: Options::new(connectivity, boundary),
            measures: Measures::All,
            device: Device::Cpu(CpuPool::new(Parallelism::Rayon)),
            pool: CpuPool::new(Parallelism::Rayon),
            labelers: None,
            labels: Array2::zeros((0, 0)),
            count: 0,
            pieces: Array2::zeros((0, 0)),
            complement: Array2::zeros((0, 0)),
            empties: Array2::zeros((0, 0)),
            empty_pieces: Array2::zeros((0, 0)),
            joined: Joined::default(),
            joined_empties: Joined::default(),
            strips: Vec::new(),
            dominance: Dominance::default(),
            buffers: Buffers::default(),
            gpu: None,
        }
    }

    /// Where to run (default [`Backend::Cpu`]). On a GPU ([`Backend::Cuda`], feature `cuda`),
    /// [`Measures::Shape`] tables of occupancy lattices are computed entirely on the device (see
    /// `cuda::CudaAnalyzer`); with [`Measures::All`] or segments the lattice and its complement
    /// are labeled on the GPU and the perimeters and filled areas measured on the CPU. Tables
    /// are identical on every backend. [`Backend::Auto`] takes GPU 0 when it is usable, the CPU
    /// otherwise.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) for a CUDA backend when no CUDA
    /// driver, NVRTC or device is usable, or without the `cuda` feature.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        self.options.backend = backend;
        let device = Device::resolve(&self.options)?;
        self.gpu = match &device {
            Device::Cuda(d) => match CudaAnalyzer::on(d, self.connectivity(), self.boundary()) {
                Ok(g) => Some(g),
                Err(e) if backend != Backend::Auto => return Err(e),
                Err(_) => None,
            },
            Device::Cpu(_) => None,
        };
        self.device = if self.gpu.is_some() {
            device
        } else {
            Device::Cpu(CpuPool::new(self.options.parallelism))
        };
        self.labelers = None;
        Ok(self)
    }

    /// `"cpu"` or `"cuda:N"`: where this analyzer runs.
    pub fn backend_name(&self) -> String {
        self.device.name()
    }

    /// The lattice's and the complement's labelers, built for the current options on first use:
    /// on the GPU when the device is one, on this analyzer's threads otherwise.
    fn ensure_labelers(&mut self) -> Result<()> {
        if self.labelers.is_none() {
            let open = Options {
                boundary: Boundary::Open,
                // The labelers run inside this analyzer's threads.
                parallelism: match self.options.parallelism {
                    Parallelism::Sequential => Parallelism::Sequential,
                    _ => Parallelism::Rayon,
                },
                ..self.options
            };
            let dual = Options {
                connectivity: dual(self.options.connectivity),
                segments: false,
                ..open
            };
            let make = |options: Options| -> Result<Labeler> {
                let labeler = Labeler::new(options.connectivity, options.boundary)
                    .segments(options.segments)
                    .parallelism(options.parallelism);
                match &self.device {
                    Device::Cuda(d) => labeler.backend(Backend::Cuda {
                        device: d.ordinal(),
                    }),
                    Device::Cpu(_) => Ok(labeler),
                }
            };
            self.labelers = Some((make(open)?, make(dual)?));
        }
        Ok(())
    }

    /// Same-value segments: neighbours join only when they hold the same nonzero value, and a
    /// site of another segment is outside a segment for the perimeters.
    pub fn segments(mut self, segments: bool) -> Self {
        self.options.segments = segments;
        self.labelers = None;
        self
    }

    /// Which columns to compute (default [`Measures::All`]).
    pub fn measures(mut self, measures: Measures) -> Self {
        self.measures = measures;
        self
    }

    /// The CPU thread count (default [`Parallelism::Rayon`]). [`Parallelism::Sequential`] runs
    /// on the caller's thread without touching rayon: use it for one analyzer per job inside
    /// your own rayon jobs (many small lattices in parallel), as `examples/wrapping_probability.rs`
    /// does.
    pub fn parallelism(mut self, parallelism: Parallelism) -> Self {
        self.options.parallelism = parallelism;
        self.device = self.device.with_parallelism(parallelism);
        self.pool = CpuPool::new(parallelism);
        self.labelers = None;
        self
    }

    /// The neighbourhood.
    pub fn connectivity(&self) -> Connectivity {
        self.options.connectivity
    }

    /// The boundary.
    pub fn boundary(&self) -> Boundary {
        self.options.boundary
    }

    /// The labels of the last analyzed lattice (clusters `1..=n` in raster order of their first
    /// site, as [`label`](crate::label) gives them; empty before the first call, and after a
    /// GPU [`Measures::Shape`] [`Analyzer::analyze`], which writes no label image: use
    /// [`Analyzer::analyze_labeled`] there).
    pub fn labels(&self) -> ndarray::ArrayView2<'_, u32> {
        self.labels.view()
    }

    /// The cluster table of `lattice` (nonzero = occupied, or segment values).
    ///
    /// # Errors
    /// [`Error::TooManySites`](crate::Error::TooManySites) beyond [`MAX_SITES`](crate::MAX_SITES) sites,
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a thread count of 0 or threads that cannot be started.
    pub fn analyze<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<ClusterTable> {
        if let Some(g) = self.gpu_shape() {
            let table = g.analyze(lattice)?;
            self.labels = Array2::zeros((0, 0));
            self.count = 0;
            return Ok(table);
        }
        let pool = self.pool.clone();
        let parallel = pool.parallel();
        pool.install(|_| self.run(lattice, parallel))?
    }

    /// The GPU analyzer when it computes the whole table.
    fn gpu_shape(&mut self) -> Option<&mut CudaAnalyzer> {
        if self.measures == Measures::Shape && !self.options.segments {
            self.gpu.as_mut()
        } else {
            None
        }
    }

    /// The cluster table and the labels of `lattice`.
    ///
    /// # Errors
    /// As [`Analyzer::analyze`].
    pub fn analyze_labeled<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
    ) -> Result<(ClusterTable, Labels)> {
        if let Some(g) = self.gpu_shape() {
            let (table, labels) = g.analyze_labeled(lattice)?;
            self.labels = labels.array.clone();
            self.count = labels.count;
            return Ok((table, labels));
        }
        let table = self.analyze(lattice)?;
        let labels = Labels {
            array: self.labels.clone(),
            count: self.count,
        };
        Ok((table, labels))
    }

    /// Analyzes on the current rayon pool when `parallel`, else on this thread alone.
    fn run<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        parallel: bool,
    ) -> Result<ClusterTable> {
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        let Options {
            connectivity,
            boundary,
            segments,
            ..
        } = self.options;
        let measures = self.measures;
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
        self.ensure_labelers()?;
        let (labeler, dual_labeler) = self.labelers.as_mut().expect("ensured above");
        let npieces = labeler.label_into(lattice, self.pieces.view_mut())?;
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
            let np =
                dual_labeler.label_into(self.complement.view(), self.empty_pieces.view_mut())?;
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
