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
//! For a simulation loop that wants only those per-lattice numbers every step,
//! [`Analyzer::size_counts_into`] (or `Labeler::size_counts_into`) fills a reused
//! [`SizeCounts`] without a table or a label image, in about the time of labeling.
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

pub use crate::core::size_counts::{PercolatingCluster, SizeCounts};
#[cfg(feature = "cuda")]
pub use crate::cuda::CudaAnalyzer;
mod measure;

pub use crate::measure::columns::{
    columns, Column, ColumnType, COLUMNS, CSV_HEADER, CSV_HEADER_SHAPE,
};
pub use crate::measure::size_distribution::{SizeBin, SizeDistribution};
pub use crate::measure::stats::{LatticeStats, Percolating};
pub use crate::measure::table::{ClusterRow, ClusterTable};
pub use crate::measure::Measures;
pub use measure::measure;

use crate::core::backend::LabelBackend;
use crate::core::lattice::check_size;
use crate::cpu::analysis::CpuAnalysis;
use crate::cpu::pool::CpuPool;
use crate::cuda::CudaAnalyzer as GpuAnalyzer;
use crate::device::Device;
use crate::{Backend, Boundary, Connectivity, Labels, Options, Parallelism, Result, SiteValue};
use ndarray::ArrayView2;

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
    /// The labeling backend of the lattice and its complement (open boundaries), built on
    /// first use from `options` and `device`, so that the builder methods may come in any order.
    labeler: Option<Box<dyn LabelBackend + Send>>,
    /// The CPU measuring passes and their buffers.
    cpu: CpuAnalysis,
    /// The GPU analyzer for [`Measures::Shape`] of occupancy lattices, on a GPU device.
    gpu: Option<GpuAnalyzer>,
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
            labeler: None,
            cpu: CpuAnalysis::default(),
            gpu: None,
        }
    }

    /// Where to run (default [`Backend::Auto`]: the CPU for calls on host arrays). On a GPU ([`Backend::Cuda`], feature `cuda`),
    /// [`Measures::Shape`] tables of occupancy lattices, and [`Measures::All`] tables of
    /// occupancy lattices with open boundaries, are computed entirely on the device (see
    /// `cuda::CudaAnalyzer`); otherwise (periodic [`Measures::All`], segments) the lattice and
    /// its complement are labeled on the GPU and the perimeters and filled areas measured on the
    /// CPU, which is also the way when the device cannot hold the two analyses of the first.
    /// Tables are identical on every backend. [`Backend::Auto`] analyzes host arrays on
    /// the CPU, as every front end's `Auto` does for one-shot calls on host arrays; name
    /// [`Backend::Cuda`] for the GPU.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) for a CUDA backend when no CUDA
    /// driver, NVRTC or device is usable, or without the `cuda` feature.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        self.options.backend = backend;
        let device = Device::resolve(&self.options)?;
        self.gpu = match &device {
            Device::Cuda(d) => match GpuAnalyzer::on(d, self.connectivity(), self.boundary()) {
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
        self.labeler = None;
        Ok(self)
    }

    /// `"cpu"` or `"cuda:N"`: where this analyzer runs.
    pub fn backend_name(&self) -> String {
        self.device.name()
    }

    /// The labeling backend, built for the current options on first use: the GPU's when the
    /// device is one, else the CPU's running inside this analyzer's threads.
    fn ensure_labeler(&mut self) -> Result<()> {
        if self.labeler.is_none() {
            let inner = match self.options.parallelism {
                Parallelism::Sequential => Parallelism::Sequential,
                _ => Parallelism::Rayon,
            };
            self.labeler = Some(
                self.device
                    .clone()
                    .with_parallelism(inner)
                    .label_backend()?,
            );
        }
        Ok(())
    }

    /// Same-value segments: neighbours join only when they hold the same nonzero value, and a
    /// site of another segment is outside a segment for the perimeters.
    pub fn segments(mut self, segments: bool) -> Self {
        self.options.segments = segments;
        self.labeler = None;
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
        self.labeler = None;
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
    pub fn labels(&self) -> ArrayView2<'_, u32> {
        self.cpu.labels()
    }

    /// The cluster table of `lattice` (nonzero = occupied, or segment values).
    ///
    /// # Errors
    /// [`Error::TooManySites`](crate::Error::TooManySites) beyond [`MAX_SITES`](crate::MAX_SITES) sites,
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a thread count of 0 or threads that cannot be started.
    pub fn analyze<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<ClusterTable> {
        self.analyze_reusing(lattice, None)
    }

    /// [`Analyzer::analyze`] into `table`, the last table of a loop over timesteps: the new
    /// table's shape columns reuse the memory of `table`'s (on the CPU and on the GPU), so that
    /// no page of them is faulted in afresh. `table` may be any earlier table, of any size; it
    /// keeps the memory of the largest table it held. On an error `table` may be left with empty
    /// columns.
    ///
    /// # Errors
    /// As [`Analyzer::analyze`].
    pub fn analyze_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        table: &mut ClusterTable,
    ) -> Result<()> {
        *table = self.analyze_reusing(lattice, Some(table))?;
        Ok(())
    }

    fn analyze_reusing<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        reuse: Option<&mut ClusterTable>,
    ) -> Result<ClusterTable> {
        if let Some(g) = self.gpu_shape() {
            let table = g.analyze_reusing(lattice, reuse)?;
            self.cpu.clear_labels();
            return Ok(table);
        }
        if let Some(g) = self.gpu_all() {
            match g.analyze_all(lattice) {
                Ok(table) => {
                    self.cpu.clear_labels();
                    return Ok(table);
                }
                // Two analyses on the device need about twice the memory of labeling the
                // lattice and its complement there and measuring on the CPU: do that instead.
                Err(crate::Error::OutOfDeviceMemory { .. }) => g.release_all(),
                Err(e) => return Err(e),
            }
        }
        // The backends take contiguous rows.
        let copy;
        let lattice = if lattice.ncols() <= 1 || lattice.strides()[1] == 1 {
            lattice
        } else {
            copy = lattice.as_standard_layout().into_owned();
            copy.view()
        };
        let pool = self.pool.clone();
        let parallel = pool.parallel();
        let (options, measures) = (self.options, self.measures);
        self.ensure_labeler()?;
        let labeler = self.labeler.as_deref_mut().expect("ensured above");
        let cpu = &mut self.cpu;
        pool.install(|_| cpu.run(lattice, &options, measures, parallel, labeler, reuse))?
    }

    /// The GPU analyzer when it computes the whole [`Measures::Shape`] table.
    fn gpu_shape(&mut self) -> Option<&mut GpuAnalyzer> {
        if self.measures == Measures::Shape && !self.options.segments {
            self.gpu.as_mut()
        } else {
            None
        }
    }

    /// The GPU analyzer when it computes the whole [`Measures::All`] table: occupancy lattices
    /// with open boundaries.
    fn gpu_all(&mut self) -> Option<&mut GpuAnalyzer> {
        if self.measures == Measures::All
            && !self.options.segments
            && self.options.boundary == Boundary::Open
        {
            self.gpu.as_mut()
        } else {
            None
        }
    }

    /// The size counts of `lattice` (nonzero = occupied, or segment values) into `counts`, as
    /// [`Labeler::size_counts_into`](crate::Labeler::size_counts_into) gives them, with this
    /// analyzer's connectivity, boundary, segments, threads and backend: the per-lattice numbers
    /// of [`ClusterTable::stats`] and `n_s` without the table, for a simulation step.
    ///
    /// ```
    /// use clusterlab::{Analyzer, Boundary, Connectivity, SizeCounts};
    /// use ndarray::array;
    ///
    /// let mut analyzer = Analyzer::new(Connectivity::Four, Boundary::Open);
    /// let mut counts = SizeCounts::new();
    /// let lattice = array![[1u8, 1, 1], [0, 0, 0], [1, 0, 1]];
    /// analyzer.size_counts_into(lattice.view(), &mut counts)?;
    /// let stats = analyzer.analyze(lattice.view())?.stats();
    /// assert_eq!((counts.clusters(), counts.largest()), (stats.clusters, stats.largest));
    /// assert_eq!((counts.spans_x(), counts.mean_size()), (stats.spans_x, stats.mean_size));
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Labeler::size_counts_into`](crate::Labeler::size_counts_into).
    pub fn size_counts_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        counts: &mut SizeCounts,
    ) -> Result<()> {
        // The CPU counts beyond MAX_SITES (and refuses what it cannot count itself).
        let (h, w) = lattice.dim();
        if self.device.is_gpu() {
            check_size(h, w)?;
        } else {
            crate::core::lattice::check_size_for(h, w, crate::MAX_SITES_64)?;
            // Refused before a copy of the input is made.
            let threads = self.pool.threads();
            crate::cpu::size_counts_strips(h, w, self.options.segments, threads)?;
        }
        // The backends take contiguous rows.
        let copy;
        let lattice = if lattice.ncols() <= 1 || lattice.strides()[1] == 1 {
            lattice
        } else {
            copy = lattice.as_standard_layout().into_owned();
            copy.view()
        };
        let spec = self.options.spec();
        let pool = self.pool.clone();
        self.ensure_labeler()?;
        let labeler = self.labeler.as_deref_mut().expect("ensured above");
        pool.install(|_| labeler.size_counts(T::input(lattice), &spec, counts))?
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
            self.cpu.set_labels(&labels);
            return Ok((table, labels));
        }
        if let Some(g) = self.gpu_all() {
            match g.analyze_all_labeled(lattice) {
                Ok((table, labels)) => {
                    self.cpu.set_labels(&labels);
                    return Ok((table, labels));
                }
                // As in `analyze`.
                Err(crate::Error::OutOfDeviceMemory { .. }) => g.release_all(),
                Err(e) => return Err(e),
            }
        }
        let table = self.analyze(lattice)?;
        Ok((table, self.cpu.labels_owned()))
    }
}
