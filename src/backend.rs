//! The internal interface that every backend (CPU, CUDA) implements.

use crate::labeler::Algorithm;
use crate::lattice::{Boundary, Connectivity};
use crate::Result;
use ndarray::{ArrayView2, ArrayViewMut2};

/// A lattice of any supported site type, borrowed.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    U8(ArrayView2<'a, u8>),
    U16(ArrayView2<'a, u16>),
    U32(ArrayView2<'a, u32>),
}

/// What to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spec {
    pub connectivity: Connectivity,
    pub boundary: Boundary,
    /// Same-value segments instead of occupancy.
    pub segments: bool,
    pub algorithm: Algorithm,
}

/// A labeling backend. `out` has the lattice's shape and contiguous rows; the backend writes
/// scipy-numbered labels into it and returns the number of clusters.
pub(crate) trait LabelBackend {
    /// A short name for messages ("cpu", "cuda:0").
    fn name(&self) -> String;
    fn label(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize>;
}
