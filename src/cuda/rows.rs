//! Host lattices into and out of contiguous staging buffers, row by row.

use crate::lattice::SiteValue;
use ndarray::{ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// Rows of `src` into the contiguous `dst` (in parallel for large lattices).
pub(super) fn fill_rows<T: SiteValue>(src: ArrayView2<'_, T>, dst: &mut [T]) {
    let w = src.ncols();
    let row = |(d, s): (&mut [T], ndarray::ArrayView1<'_, T>)| match s.as_slice() {
        Some(s) => d.copy_from_slice(s),
        None => d.iter_mut().zip(s.iter()).for_each(|(d, &s)| *d = s),
    };
    if dst.len() >= 1 << 20 {
        dst.par_chunks_mut(w)
            .zip(src.axis_iter(Axis(0)).into_par_iter())
            .for_each(row);
    } else {
        dst.chunks_mut(w).zip(src.axis_iter(Axis(0))).for_each(row);
    }
}

/// The contiguous `src` into the rows of `dst` (in parallel for large lattices).
pub(super) fn copy_rows<T: Copy + Send + Sync>(src: &[T], dst: &mut ArrayViewMut2<'_, T>) {
    let w = dst.ncols();
    let row = |(s, mut d): (&[T], ndarray::ArrayViewMut1<'_, T>)| match d.as_slice_mut() {
        Some(d) => d.copy_from_slice(s),
        None => d.iter_mut().zip(s).for_each(|(d, &s)| *d = s),
    };
    if src.len() >= 1 << 20 {
        src.par_chunks(w)
            .zip(dst.axis_iter_mut(Axis(0)).into_par_iter())
            .for_each(row);
    } else {
        src.chunks(w).zip(dst.axis_iter_mut(Axis(0))).for_each(row);
    }
}
