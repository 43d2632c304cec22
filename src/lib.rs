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
//! For labeling every timestep of a simulation, keep a [`Labeler`]: it owns its buffers, which
//! grow to the largest lattice and cluster count seen; after that it labels without allocating. Coming from scipy, cc3d, scikit-image or
//! OpenCV: [`docs::coming_from`] maps their calls onto these.
//!
//! ## Conventions
//! A lattice is indexed `[y, x]` (row, column); nonzero sites are occupied. Labels are `u32`:
//! 0 = empty, clusters `1..=n` in raster order of each cluster's first site on every backend and
//! algorithm.
//!
//! ## 64-bit labels
//! Lattices beyond [`MAX_SITES`] (2³² − 2) sites are labeled into `u64`: [`label64`],
//! [`Labeler::label64`], or [`Labeler::label_into`] with a `u64` output. The API is generic over
//! the sealed [`LabelValue`] (`u32`, `u64`) rather than a parallel `Labels64` family, so that one
//! `label_into` serves both widths (the type is the output's) and [`Labels`]`<L = u32>` keeps
//! every existing call unchanged; the `u32` path is the same code as before, monomorphized. The
//! numbering is the same in both: `u64` labels of a lattice that `u32` can number are its `u32`
//! labels, widened. `u64` labels go up to [`MAX_SITES_64`] sites; before allocating, a `u64`
//! labeling compares the bytes it needs (input, labels, the CPU's scratch:
//! [`Labeler::bytes_needed`]) with the memory available and refuses with
//! [`Error::OutOfMemory`] stating the estimate. On the CPU, [`Labeler::size_counts_into`] counts
//! occupancy lattices beyond `MAX_SITES` too (no label limits it); the cluster table
//! ([`Analyzer::analyze`]) stays within `MAX_SITES` ([`Error::TooManySites`]). In segment mode ([`label_segments`], [`Labeler::segments`]) neighbours join only when
//! they hold the same nonzero value.
//!
//! ## Feature flags
//! - `cuda` (default): the NVIDIA GPU backend through cudarc and NVRTC. It builds without a CUDA
//!   toolkit and loads the driver at run time; without a GPU nothing panics.
//! - `plot` (default): [`plot`], PNG charts of the cluster-size distribution `n_s` and coloured
//!   label images (plotters, with an embedded font: no system fonts or fontconfig needed), and
//!   the `clusterlab plot` command.
//! - `mpi` (off): [`farm`]'s MPI side, with which `clusterlab percolation run` and
//!   `clusterlab mc run` started by `mpirun`/`srun` split their samples or temperatures over the
//!   ranks (rsmpi; needs an MPI library and libclang at build time).

#![warn(missing_docs)]

// Layers, bottom up; each imports only from the layers before it:
// core (lattice, options, labels, error, bits, rule, region) ← measure (the cluster table and
// the host logic both backends share) ← backends (cpu, cuda) ← device (the one CPU/GPU seam)
// ← front ends (labeler, analysis, regions) ← I/O, generate ← physics (mc, percolation)
// ← farm (MPI) ← plot ← the binary.
mod core;
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
// Without the `cuda` feature, a stub with the same crate-internal names whose constructors say
// why there is no GPU: front ends need no `cfg` of their own.
#[cfg(not(feature = "cuda"))]
#[path = "cuda_off.rs"]
mod cuda;
mod device;
mod measure;

pub mod analysis;
mod labeler;
pub mod regions;

pub mod generate;
pub mod io;
pub mod mc;
pub mod percolation;
// MPI sample farms (rank split and sums sent between ranks; the MPI part with feature `mpi`).
pub mod farm;

// Guides (prose and doctests only), e.g. `docs::coming_from` for users of scipy, cc3d,
// scikit-image and OpenCV.
pub mod docs;
#[cfg(feature = "plot")]
pub mod plot;

// Transitional crate-internal paths for modules that still import `crate::lattice` etc.
use crate::core::{lattice, rule};

pub use crate::core::bonds::PackedBonds;
pub use crate::core::error::{Error, Result};
pub use crate::core::labels::{LabelValue, Labels};
pub use crate::core::lattice::{Boundary, Connectivity, SiteValue, MAX_SITES, MAX_SITES_64};
pub use crate::core::options::{Algorithm, Backend, Options, Parallelism, MAX_THREADS};
pub use analysis::{analyze, measure, Analyzer, PercolatingCluster, SizeCounts};
pub use labeler::Labeler;
pub use measure::size_distribution::SizeDistribution;
pub use measure::stats::{LatticeStats, Percolating};
pub use measure::table::{ClusterRow, ClusterTable};
pub use measure::Measures;
pub use regions::{region_from_seeds, Criterion, Reference, RegionGrower};

use ndarray::ArrayView2;

/// Labels the clusters of an occupancy lattice (nonzero = occupied) on the CPU with the fastest
/// algorithm. Repeated calls on one thread reuse a labeler kept for the configuration (its
/// scratch) and the image of the last dropped [`Labels`] of the same size;
/// [`free_cached_memory`] gives both back. A [`Labeler`] and an image of your own
/// ([`Labeler::label_into`]) allocate nothing at all.
///
/// # Errors
/// [`Error::TooManySites`] beyond [`MAX_SITES`] sites.
pub fn label(
    lattice: ArrayView2<'_, u8>,
    connectivity: Connectivity,
    boundary: Boundary,
) -> Result<Labels> {
    with_kept_labeler(connectivity, boundary, false, |l| l.label(lattice))
}

/// Gives back to the system what the free functions keep between calls: the label images that
/// dropped [`Labels`] left for the next one-shot call of the same size (at most two per label
/// type, within a quarter of the memory available when each was kept; see [`Labels`]) and the
/// labelers (with their scratch) that [`label`], [`label64`] and [`label_segments`] keep on the
/// calling thread. Call it when a program is done labeling but goes on running.
///
/// ```
/// use clusterlab::{label, free_cached_memory, Boundary, Connectivity};
/// use ndarray::Array2;
///
/// let lattice = Array2::<u8>::ones((1024, 1024));
/// drop(label(lattice.view(), Connectivity::Four, Boundary::Open)?); // its 4 MiB image is kept
/// free_cached_memory();
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub fn free_cached_memory() {
    crate::core::alloc::free_kept_images();
    KEPT_LABELERS.with(|k| k.borrow_mut().clear());
}

type LabelerKey = (Connectivity, Boundary, bool);

thread_local! {
    /// The free functions' labelers, by (connectivity, boundary, segments), on this thread: a
    /// one-shot call otherwise grows a new labeler's run forest from nothing (reallocations and
    /// page faults: 11 of 35 ms for a 4096² spiral on one thread).
    static KEPT_LABELERS: std::cell::RefCell<Vec<(LabelerKey, Labeler)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's kept labeler for the configuration (a new one the first time),
/// taken out of the cache while `f` runs, so that `f` may call the free functions itself.
fn with_kept_labeler<R>(
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
    f: impl FnOnce(&mut Labeler) -> R,
) -> R {
    let key = (connectivity, boundary, segments);
    let kept = KEPT_LABELERS.with(|k| {
        let mut k = k.borrow_mut();
        let i = k.iter().position(|(kk, _)| *kk == key)?;
        Some(k.swap_remove(i).1)
    });
    let mut labeler =
        kept.unwrap_or_else(|| Labeler::new(connectivity, boundary).segments(segments));
    let r = f(&mut labeler);
    KEPT_LABELERS.with(|k| k.borrow_mut().push((key, labeler)));
    r
}

/// Labels the clusters of a lattice (nonzero = occupied) into `u64` labels on the CPU with the
/// fastest algorithm: for lattices beyond [`MAX_SITES`] sites (up to [`MAX_SITES_64`], as memory
/// allows), with [`label`]'s numbering. The same strip labeler as `u32` labels, writing 8-byte
/// labels; the bytes it needs are checked against the memory available before anything is
/// allocated ([`Labeler::label64`]). For segments, other backends or repeated calls, use a
/// [`Labeler`]; for a caller's own `u64` array, [`Labeler::label_into`].
///
/// ```
/// use clusterlab::{label64, Boundary, Connectivity};
/// use ndarray::array;
///
/// let lattice = array![[1u8, 0, 1], [0, 0, 1]];
/// let labels = label64(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
/// assert_eq!(labels.array(), &array![[1u64, 0, 1], [0, 0, 1]]);
/// # Ok::<(), clusterlab::Error>(())
/// ```
///
/// # Errors
/// [`Error::TooManySites`] beyond [`MAX_SITES_64`] sites, [`Error::OutOfMemory`] (with the
/// estimate of the bytes needed) when the labeling does not fit in the memory available.
pub fn label64<T: SiteValue>(
    lattice: ArrayView2<'_, T>,
    connectivity: Connectivity,
    boundary: Boundary,
) -> Result<Labels<u64>> {
    with_kept_labeler(connectivity, boundary, false, |l| l.label64(lattice))
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
    with_kept_labeler(connectivity, boundary, true, |l| l.label(lattice))
}
