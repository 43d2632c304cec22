//! What cluster analysis produces — the cluster table and its columns, the per-lattice
//! statistics, `n_s` — and the host-side pieces both backends share to make it: the per-piece
//! sums ([`moments`]), the winding union-find that joins pieces across periodic edges
//! ([`wrapping`]), and the composition of pieces into clusters ([`compose`]).
//!
//! It sits below the backends: `cpu::analysis` and `cuda::analyzer` fill it, the front end
//! `crate::analysis` re-exports its public types.

pub(crate) mod columns;
pub(crate) mod compose;
pub(crate) mod fixed_p;
pub(crate) mod moments;
pub(crate) mod shape_columns;
pub(crate) mod size_distribution;
pub(crate) mod stats;
pub(crate) mod table;
pub(crate) mod wrapping;

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
