//! The result of labeling: a label image and its cluster count, in `u32` or `u64` labels.

use super::backend::LabelBackend;
use super::lattice::Input;
use super::options::Spec;
use crate::Result;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use std::fmt;
use std::hash::Hash;

/// A label buffer of each type, for outputs whose rows are not contiguous.
#[derive(Default)]
pub(crate) struct Staging {
    u32: Array2<u32>,
    u64: Array2<u64>,
}

/// A label image of either type, for writers that store each as itself.
pub(crate) enum LabelArray<'a> {
    U32(&'a Array2<u32>),
    U64(&'a Array2<u64>),
}

pub(crate) mod sealed {
    use super::{Array2, ArrayViewMut2, Input, LabelArray, LabelBackend, Result, Spec, Staging};

    /// Seals [`LabelValue`](super::LabelValue) and routes each label type to its backend call.
    #[allow(private_interfaces, private_bounds)]
    pub trait Sealed:
        Sized
        + crate::core::alloc::Recyclable
        + ndarray_npy::WritableElement
        + ndarray_npy::ViewElement
        + ndarray_npy::ViewMutElement
    {
        fn label(
            backend: &mut (dyn LabelBackend + Send),
            input: Input<'_>,
            spec: &Spec,
            out: ArrayViewMut2<'_, Self>,
        ) -> Result<usize>;
        /// This type's buffer in `staging`.
        fn staging(staging: &mut Staging) -> &mut Array2<Self>;
        /// The image, typed.
        fn array(a: &Array2<Self>) -> LabelArray<'_>;
    }

    #[allow(private_interfaces)]
    impl Sealed for u32 {
        fn label(
            backend: &mut (dyn LabelBackend + Send),
            input: Input<'_>,
            spec: &Spec,
            out: ArrayViewMut2<'_, Self>,
        ) -> Result<usize> {
            backend.label(input, spec, out)
        }
        fn staging(staging: &mut Staging) -> &mut Array2<Self> {
            &mut staging.u32
        }
        fn array(a: &Array2<Self>) -> LabelArray<'_> {
            LabelArray::U32(a)
        }
    }

    #[allow(private_interfaces)]
    impl Sealed for u64 {
        fn label(
            backend: &mut (dyn LabelBackend + Send),
            input: Input<'_>,
            spec: &Spec,
            out: ArrayViewMut2<'_, Self>,
        ) -> Result<usize> {
            backend.label64(input, spec, out)
        }
        fn staging(staging: &mut Staging) -> &mut Array2<Self> {
            &mut staging.u64
        }
        fn array(a: &Array2<Self>) -> LabelArray<'_> {
            LabelArray::U64(a)
        }
    }
}

/// A label type: `u32` (the default: every lattice of up to [`MAX_SITES`](crate::MAX_SITES)
/// sites) or `u64` (any lattice up to [`MAX_SITES_64`](crate::MAX_SITES_64) sites, at twice the
/// label image's bytes).
///
/// Sealed: each backend has a path for each of these types. Labels are generic over this
/// trait rather than a separate 64-bit API so that one [`Labeler::label_into`](crate::Labeler::label_into)
/// serves both widths, and the label type of a call is that of the output array it is given;
/// [`Labels`] defaults to `u32`, so code written before 64-bit labels compiles unchanged.
pub trait LabelValue:
    sealed::Sealed
    + Copy
    + Eq
    + Ord
    + Hash
    + Default
    + Send
    + Sync
    + fmt::Debug
    + fmt::Display
    + Into<u64>
    + 'static
{
    /// The NumPy name of the type: `"uint32"` or `"uint64"`.
    const DTYPE: &'static str;
    /// The most sites a lattice labeled with this type may have.
    const MAX_SITES: usize;
}

impl LabelValue for u32 {
    const DTYPE: &'static str = "uint32";
    const MAX_SITES: usize = crate::core::lattice::MAX_SITES;
}

impl LabelValue for u64 {
    const DTYPE: &'static str = "uint64";
    const MAX_SITES: usize = crate::core::lattice::MAX_SITES_64;
}

/// A labeled lattice: 0 = empty, clusters numbered `1..=count()` in raster order of each cluster's
/// first site (scipy.ndimage.label's numbering, identical on every backend and algorithm), in
/// `u32` labels (the default) or `u64` ([`label64`](crate::label64),
/// [`Labeler::label64`](crate::Labeler::label64)).
///
/// When a `Labels` of a MiB or more is dropped, its image is kept (the last two per label type,
/// within a quarter of the memory available) and handed to the next one-shot call of the same
/// size, which overwrites it: a fresh image's pages would each be faulted in on first write, a
/// third of a one-shot call's time at 4096². [`free_cached_memory`](crate::free_cached_memory)
/// gives them back to the system; [`Labels::into_array`] takes the image out of this cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels<L: LabelValue = u32> {
    pub(crate) array: Array2<L>,
    pub(crate) count: usize,
}

impl<L: LabelValue> Drop for Labels<L> {
    fn drop(&mut self) {
        let (v, offset) = std::mem::take(&mut self.array).into_raw_vec_and_offset();
        if offset.unwrap_or(0) == 0 {
            crate::core::alloc::recycle(v);
        }
    }
}

impl<L: LabelValue> Labels<L> {
    /// The number of clusters.
    pub fn count(&self) -> usize {
        self.count
    }
    /// The label image, `[y, x]` like the lattice.
    pub fn array(&self) -> &Array2<L> {
        &self.array
    }
    /// The label image, by value.
    pub fn into_array(mut self) -> Array2<L> {
        std::mem::take(&mut self.array)
    }
    /// Sites per label: element 0 counts the empty sites, element `i` the sites of cluster `i`.
    pub fn sizes(&self) -> Vec<u64> {
        // Every label of a `Labels` is at most its count (the labelers' contract).
        sizes_of(self.array.view(), self.count).unwrap_or_default()
    }
}

/// Sites per label of an image labeled `0..=count`; `None` when a label exceeds `count`.
///
/// Large images are counted in parallel: each task keeps a small direct-mapped cache of
/// (label, sites) and adds an entry to the shared atomic counter only when it is evicted, so the
/// giant cluster's counter is not fought over site by site, and a small cluster (its sites close
/// together in raster order) costs about one atomic addition. One pass, no per-thread histogram.
pub(crate) fn sizes_of<L: LabelValue>(image: ArrayView2<'_, L>, count: usize) -> Option<Vec<u64>> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    const PARALLEL_FROM: usize = 1 << 20;
    const CHUNK: usize = 1 << 20;
    const SLOTS: usize = 1024;
    let max = count as u64;
    let flat = image
        .as_slice()
        .filter(|_| image.len() >= PARALLEL_FROM && rayon::current_num_threads() > 1);
    let Some(flat) = flat else {
        let mut sizes = vec![0u64; count + 1];
        for &l in image.iter() {
            *sizes.get_mut(l.into() as usize)? += 1;
        }
        return Some(sizes);
    };
    let shared: Vec<AtomicU64> = (0..=count).map(|_| AtomicU64::new(0)).collect();
    let bad = AtomicBool::new(false);
    flat.par_chunks(CHUNK).for_each(|chunk| {
        // Slot `l % SLOTS` holds label `keys[slot]` with `counts[slot]` sites not yet added.
        let mut keys = [u64::MAX; SLOTS];
        let mut counts = [0u64; SLOTS];
        for &l in chunk {
            let l: u64 = l.into();
            if l > max {
                bad.store(true, Relaxed);
                continue;
            }
            let slot = l as usize % SLOTS;
            if keys[slot] != l {
                if counts[slot] > 0 {
                    shared[keys[slot] as usize].fetch_add(counts[slot], Relaxed);
                }
                keys[slot] = l;
                counts[slot] = 0;
            }
            counts[slot] += 1;
        }
        for (k, c) in keys.iter().zip(&counts) {
            if *c > 0 {
                shared[*k as usize].fetch_add(*c, Relaxed);
            }
        }
    });
    if bad.into_inner() {
        return None;
    }
    Some(shared.into_iter().map(AtomicU64::into_inner).collect())
}
