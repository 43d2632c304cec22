//! # clusterlab
//!
//! Finds and measures the clusters of 2-D lattices — percolation samples, cellular-automaton
//! states, Swendsen–Wang configurations, segmented images — with 4- or 8-connectivity and open or
//! periodic (torus) boundaries.
//!
//! ```
//! use clusterlab::{label, Boundary, Connectivity};
//! use ndarray::array;
//!
//! let lattice = array![
//!     [1u8, 1, 0, 0],
//!     [0, 0, 0, 1],
//!     [1, 0, 1, 1],
//! ];
//! let labels = label(lattice.view(), Connectivity::Four, Boundary::Open)?;
//! assert_eq!(labels.count(), 3);
//! // Clusters are numbered in raster order of their first site, as scipy.ndimage.label does.
//! assert_eq!(labels.array(), &array![[1, 1, 0, 0], [0, 0, 0, 2], [3, 0, 2, 2]]);
//! # Ok::<(), clusterlab::Error>(())
//! ```
//!
//! For labeling every timestep of a simulation, keep a [`Labeler`]: it owns its buffers and,
//! after the first call, labels without allocating.
//!
//! ## Conventions
//! A lattice is indexed `[y, x]` (row, column); nonzero sites are occupied. Labels are `u32`:
//! 0 = empty, clusters `1..=n` in raster order of each cluster's first site on every backend and
//! algorithm. In segment mode ([`label_segments`], [`Labeler::segments`]) neighbours join only when
//! they hold the same nonzero value.
//!
//! ## Feature flags
//! - `cuda` (default): the NVIDIA GPU backend through cudarc and NVRTC. It builds without a CUDA
//!   toolkit and loads the driver at run time; without a GPU nothing panics.
//! - `plot` (default): [`plot`], PNG charts of the cluster-size distribution `n_s` and coloured
//!   label images (plotters, with an embedded font: no system fonts or fontconfig needed), and
//!   the `clusterlab plot` command.

#![warn(missing_docs)]

pub mod analysis;
mod backend;
pub(crate) mod bits;
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod error;
pub mod generate;
pub mod io;
mod labeler;
mod labels;
mod lattice;
#[cfg(feature = "plot")]
pub mod plot;
pub mod regions;
mod rule;

pub use analysis::{
    analyze, Analyzer, ClusterRow, ClusterTable, LatticeStats, Measures, Percolating,
    SizeDistribution,
};
pub use error::{Error, Result};
pub use labeler::{Algorithm, Backend, Labeler, Parallelism};
pub use labels::Labels;
pub use lattice::{Boundary, Connectivity, SiteValue, MAX_SITES};
pub use regions::{region_from_seeds, Criterion, Reference, RegionGrower};

use ndarray::ArrayView2;

/// Labels the clusters of an occupancy lattice (nonzero = occupied) on the CPU with the fastest
/// algorithm. For repeated calls, a [`Labeler`] avoids re-allocating.
///
/// # Errors
/// [`Error::TooManySites`] beyond [`MAX_SITES`] sites.
pub fn label(
    lattice: ArrayView2<'_, u8>,
    connectivity: Connectivity,
    boundary: Boundary,
) -> Result<Labels> {
    Labeler::new(connectivity, boundary).label(lattice)
}

/// Labels same-value segments: neighbours join only when they hold the same nonzero value.
///
/// ```
/// use clusterlab::{label_segments, Boundary, Connectivity};
/// use ndarray::array;
///
/// let image = array![[3u16, 3, 5], [0, 5, 5]];
/// let labels = label_segments(image.view(), Connectivity::Four, Boundary::Open)?;
/// assert_eq!(labels.array(), &array![[1, 1, 2], [0, 2, 2]]);
/// # Ok::<(), clusterlab::Error>(())
/// ```
///
/// # Errors
/// [`Error::TooManySites`] beyond [`MAX_SITES`] sites.
pub fn label_segments<T: SiteValue>(
    lattice: ArrayView2<'_, T>,
    connectivity: Connectivity,
    boundary: Boundary,
) -> Result<Labels> {
    Labeler::new(connectivity, boundary)
        .segments(true)
        .label(lattice)
}
