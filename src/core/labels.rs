//! The result of labeling: a label image and its cluster count.

use ndarray::Array2;

/// A labeled lattice: 0 = empty, clusters numbered `1..=count()` in raster order of each cluster's
/// first site (scipy.ndimage.label's numbering, identical on every backend and algorithm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    pub(crate) array: Array2<u32>,
    pub(crate) count: usize,
}

impl Labels {
    /// The number of clusters.
    pub fn count(&self) -> usize {
        self.count
    }
    /// The label image, `[y, x]` like the lattice.
    pub fn array(&self) -> &Array2<u32> {
        &self.array
    }
    /// The label image, by value.
    pub fn into_array(self) -> Array2<u32> {
        self.array
    }
    /// Sites per label: element 0 counts the empty sites, element `i` the sites of cluster `i`.
    pub fn sizes(&self) -> Vec<u64> {
        let mut sizes = vec![0u64; self.count + 1];
        for &l in self.array.iter() {
            sizes[l as usize] += 1;
        }
        sizes
    }
}
