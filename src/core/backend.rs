//! The internal interface that every labeling backend (CPU, CUDA) implements.

use super::bonds::PackedBonds;
use super::lattice::Input;
use super::options::Spec;
use super::size_counts::SizeCounts;
use crate::{Error, Result};
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
    /// Labels the clusters of a bond configuration (every site a cluster; `spec.connectivity` is
    /// 4), scipy-numbered like [`LabelBackend::label`]. Backends without it say so.
    fn label_bonds(
        &mut self,
        _bonds: &PackedBonds,
        _spec: &Spec,
        _out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        Err(Error::InvalidArgument(format!(
            "bond-masked labeling is not yet on the {} backend",
            self.name()
        )))
    }
    /// Root numbering of a bond configuration (each site: the smallest site index of its
    /// cluster) when the backend produces it directly; `None` leaves it to the caller, which
    /// converts canonical labels.
    fn bond_roots(
        &mut self,
        _bonds: &PackedBonds,
        _spec: &Spec,
        _out: ArrayViewMut2<'_, u32>,
    ) -> Result<Option<usize>> {
        Ok(None)
    }

    /// Counts the clusters of `input` by size into `out` (cleared first), with the clusters
    /// that wrap or span, without writing labels. Backends without it say so.
    fn size_counts(
        &mut self,
        _input: Input<'_>,
        _spec: &Spec,
        _out: &mut SizeCounts,
    ) -> Result<()> {
        Err(Error::InvalidArgument(format!(
            "size counts are not on the {} backend",
            self.name()
        )))
    }

    /// Labels like [`LabelBackend::label`] into 64-bit labels, for lattices of any size
    /// (beyond [`MAX_SITES`](crate::MAX_SITES) too); backends without it say so.
    fn label64(
        &mut self,
        _input: Input<'_>,
        _spec: &Spec,
        _out: ArrayViewMut2<'_, u64>,
    ) -> Result<usize> {
        Err(Error::InvalidArgument(format!(
            "64-bit labels are not on the {} backend",
            self.name()
        )))
    }
}
