//! The bottom layer, which imports nothing else of the crate: what a lattice is
//! ([`lattice`]), what to compute and where ([`options`]), labels, the error type, the join rule
//! every labeling algorithm asks, and the internal backend interface. Backends (`cpu`, `cuda`)
//! build on it, front ends (`Labeler`, `analysis`, `regions`) on the backends, and I/O, plots and
//! the command line on the front ends.

pub(crate) mod alloc;
pub(crate) mod backend;
pub(crate) mod bits;
pub(crate) mod bonds;
pub(crate) mod error;
// Only the GPU analyzer and the multi-GPU seam join key maps by ids.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) mod id_hash;
pub(crate) mod labels;
pub(crate) mod lattice;
pub(crate) mod options;
pub(crate) mod region;
pub(crate) mod rule;
pub(crate) mod size_counts;
pub(crate) mod stream;
pub(crate) mod sweep;
