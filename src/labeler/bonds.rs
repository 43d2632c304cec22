//! Bond-masked labeling on a [`Labeler`]: the clusters of a bond configuration
//! ([`PackedBonds`], or two `u8` masks), numbered like site labels (canonical raster order) or
//! by their roots (each site gets the smallest site index of its cluster, the numbering
//! Swendsen–Wang keys its new spins by).

use super::{rows_contiguous, Labeler};
use crate::core::bonds::PackedBonds;
use crate::core::lattice::check_size;
use crate::core::options::Spec;
use crate::device::Device;
use crate::{Connectivity, Error, Labels, Result};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// Reused buffers: the packed copy of `u8` masks, and the roots pass's per-strip records.
#[derive(Default)]
pub(super) struct Scratch {
    packed: PackedBonds,
    records: Vec<Vec<(u32, u32)>>,
    first: Vec<u32>,
}

impl Labeler {
    /// Checks that this labeler can label bonds and that `out` fits them.
    fn bond_spec(&self, dim: (usize, usize), out: (usize, usize)) -> Result<Spec> {
        if self.options.connectivity != Connectivity::Four {
            return Err(Error::InvalidArgument(
                "bond-masked labeling joins edge neighbours only: use 4-connectivity".into(),
            ));
        }
        if self.options.segments {
            return Err(Error::InvalidArgument(
                "bond-masked labeling has no segment mode".into(),
            ));
        }
        if out != dim {
            return Err(Error::ShapeMismatch {
                expected: [dim.0, dim.1],
                found: [out.0, out.1],
            });
        }
        check_size(dim.0, dim.1)?;
        Ok(Spec {
            algorithm: self.device.algorithm(&self.options),
            ..self.options.spec()
        })
    }

    /// Labels the clusters of a bit-packed bond configuration into `out` (canonical numbering:
    /// clusters `1..=n` in raster order of their first site, every site labeled, isolated sites
    /// included) and returns `n`. Bonds follow the labeler's boundary: wrapping bonds count on
    /// wrapping axes and are ignored on open ones.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for 8-connectivity, segment mode, a CPU
    /// algorithm without bond labeling or a thread count of 0; on the GPU those of its backend;
    /// [`Error::ShapeMismatch`] when `out` does not have the bonds' shape.
    pub fn label_packed_bonds_into(
        &mut self,
        bonds: &PackedBonds,
        mut out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let spec = self.bond_spec(bonds.dim(), out.dim())?;
        if rows_contiguous(out.strides(), bonds.dim().1) {
            self.backend.label_bonds(bonds, &spec, out)
        } else {
            let mut tmp = Array2::zeros(bonds.dim());
            let n = self.backend.label_bonds(bonds, &spec, tmp.view_mut())?;
            out.assign(&tmp);
            Ok(n)
        }
    }

    /// Labels the clusters of the bond masks `right` and `down` (nonzero = bond; see
    /// [`PackedBonds`] for which sites a bond joins) into `out`; returns the number of clusters.
    ///
    /// ```
    /// use clusterlab::{Boundary, Connectivity, Labeler};
    /// use ndarray::{array, Array2};
    ///
    /// let right = array![[1u8, 0, 0], [0, 0, 1]];
    /// let down = array![[0u8, 0, 1], [0, 0, 0]];
    /// let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open);
    /// let mut labels = Array2::zeros((2, 3));
    /// // (1, 2)'s right bond wraps: ignored on an open boundary.
    /// assert_eq!(labeler.label_bonds_into(right.view(), down.view(), labels.view_mut())?, 4);
    /// assert_eq!(labels, array![[1, 1, 2], [3, 4, 2]]);
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Labeler::label_packed_bonds_into`]; [`Error::ShapeMismatch`] when the masks differ
    /// in shape.
    pub fn label_bonds_into(
        &mut self,
        right: ArrayView2<'_, u8>,
        down: ArrayView2<'_, u8>,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        // Check before packing, so that a wrong output costs no work.
        self.bond_spec(right.dim(), out.dim())?;
        let mut packed = std::mem::take(&mut self.bond_scratch.packed);
        let r = packed
            .pack(right, down)
            .and_then(|()| self.label_packed_bonds_into(&packed, out));
        self.bond_scratch.packed = packed;
        r
    }

    /// Labels the clusters of the bond masks `right` and `down` into a new label array.
    ///
    /// # Errors
    /// As [`Labeler::label_bonds_into`].
    pub fn label_bonds(
        &mut self,
        right: ArrayView2<'_, u8>,
        down: ArrayView2<'_, u8>,
    ) -> Result<Labels> {
        check_size(right.nrows(), right.ncols())?;
        let (h, w) = right.dim();
        // Every site is labeled (all are occupied): a kept image of a dropped `Labels` will do.
        let mut array = crate::core::alloc::label_image(h, w, "the label image")?;
        let count = self.label_bonds_into(right, down, array.view_mut())?;
        Ok(Labels { array, count })
    }

    /// Root numbering of a bond configuration: writes into each site of `out` the smallest site
    /// index (`y · w + x`) of its cluster, and returns the number of clusters. This numbering does
    /// not depend on the algorithm, backend or thread count (a union-find that links to the
    /// smaller index produces it directly), which is what Swendsen–Wang keys each cluster's new
    /// spin by.
    ///
    /// # Errors
    /// As [`Labeler::label_packed_bonds_into`].
    pub fn bond_roots_into(
        &mut self,
        bonds: &PackedBonds,
        mut out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        let spec = self.bond_spec(bonds.dim(), out.dim())?;
        // The GPU's union-find links to the smaller index: it writes the roots directly.
        if self.device.is_gpu() {
            let direct = if rows_contiguous(out.strides(), bonds.dim().1) {
                self.backend.bond_roots(bonds, &spec, out.view_mut())?
            } else {
                let mut tmp = Array2::zeros(bonds.dim());
                let n = self.backend.bond_roots(bonds, &spec, tmp.view_mut())?;
                out.assign(&tmp);
                n
            };
            if let Some(n) = direct {
                return Ok(n);
            }
        }
        let n = self.label_packed_bonds_into(bonds, out.view_mut())?;
        let pool = match &self.device {
            Device::Cpu(pool) => pool.clone(),
            Device::Cuda(_) => {
                return Err(crate::Error::Cuda(
                    "the GPU backend writes bond roots directly".into(),
                ))
            }
        };
        let Scratch { records, first, .. } = &mut self.bond_scratch;
        pool.install(|threads| canonical_to_roots(out.view_mut(), n, threads, records, first))?;
        Ok(n)
    }
}

/// Turns canonical labels into roots: each label becomes the index of its first site.
///
/// Canonical labels first appear in increasing order, so a label's first site is where it
/// exceeds every label before it. Each strip of rows lists its records (labels above all earlier
/// ones in the strip) in parallel; a record is a label's first site exactly when it also exceeds
/// the largest label of the strips above, which one short sequential pass over the records knows.
fn canonical_to_roots(
    mut out: ArrayViewMut2<'_, u32>,
    n: usize,
    threads: usize,
    records: &mut Vec<Vec<(u32, u32)>>,
    first: &mut Vec<u32>,
) {
    let (h, w) = out.dim();
    if h == 0 || w == 0 {
        return;
    }
    let chunk = h.div_ceil(threads.max(1)).max(1);
    let strips = h.div_ceil(chunk);
    records.resize_with(strips, Vec::new);
    out.axis_chunks_iter(Axis(0), chunk)
        .into_par_iter()
        .zip(records.par_iter_mut())
        .enumerate()
        .for_each(|(k, (rows, rec))| {
            rec.clear();
            let mut hi = 0u32;
            let base = k * chunk * w;
            for (i, &l) in rows.iter().enumerate() {
                if l > hi {
                    hi = l;
                    rec.push((l, (base + i) as u32));
                }
            }
        });
    first.clear();
    first.resize(n + 1, 0);
    let mut hi = 0u32;
    for rec in records.iter() {
        for &(l, site) in rec {
            if l > hi {
                first[l as usize] = site;
                hi = l;
            }
        }
    }
    let first = &*first;
    out.axis_chunks_iter_mut(Axis(0), chunk)
        .into_par_iter()
        .for_each(|mut rows| rows.mapv_inplace(|l| first[l as usize]));
}
