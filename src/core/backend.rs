//! The internal interface that every labeling backend (CPU, CUDA) implements.

use super::lattice::Input;
use super::options::Spec;
use crate::Result;
use ndarray::ArrayViewMut2;

/// A labeling backend. `out` has the lattice's shape and contiguous rows; the backend writes
/// scipy-numbered labels into it and returns the number of clusters.
pub(crate) trait LabelBackend {
    /// A short name for messages ("cpu", "cuda:0 (NVIDIA H200)").
    fn name(&self) -> String;
    fn label(
        &mut self,
        input: Input<'_>,
        spec: &Spec,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize>;
}
