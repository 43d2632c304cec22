//! [`measure`]: the cluster table of labels you already have.

use super::Analyzer;
use crate::{Boundary, ClusterTable, Connectivity, Error, Measures, Result};
use ndarray::ArrayView2;

/// Measures the clusters of a label image made elsewhere — `scipy.ndimage.label`,
/// `cc3d.connected_components`, `skimage.measure.label`, a simulation's own cluster code — as
/// `cc3d.statistics` and `skimage.measure.regionprops_table` do: every column of
/// [`ClusterTable`], with row `i` for label `i + 1`.
///
/// The labels must be numbered `1..=n` without gaps (0 = background), as those libraries
/// number them, and each label's sites must be connected under `connectivity` and `boundary`
/// (as they are when the same settings made them). The perimeters count every site outside a
/// label as outside it, as in segment mode.
///
/// ```
/// use clusterlab::{measure, Boundary, Connectivity};
/// use ndarray::array;
///
/// // Labels numbered by another program: 2 comes first in raster order.
/// let labels = array![[2u32, 2, 0], [0, 0, 1], [0, 1, 1]];
/// let table = measure(labels.view(), Connectivity::Four, Boundary::Open)?;
/// assert_eq!(table.size.to_vec(), vec![3, 2]); // label 1 has 3 sites, label 2 has 2
/// assert_eq!(table.centroid_y[1], 0.0);
/// # Ok::<(), clusterlab::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when a label's sites are not connected (naming the label) or the
/// labels are not `1..=n` without gaps; [`Error::TooManySites`] beyond
/// [`MAX_SITES`](crate::MAX_SITES) sites.
pub fn measure(
    labels: ArrayView2<'_, u32>,
    connectivity: Connectivity,
    boundary: Boundary,
) -> Result<ClusterTable> {
    Analyzer::new(connectivity, boundary)
        .measures(Measures::All)
        .measure(labels)
}

impl Analyzer {
    /// As [`measure`], with this analyzer's connectivity, boundary, measures, threads and
    /// backend (segment mode is implied).
    ///
    /// # Errors
    /// As [`measure`].
    pub fn measure(&mut self, labels: ArrayView2<'_, u32>) -> Result<ClusterTable> {
        let segments = self.options.segments;
        self.options.segments = true;
        self.labeler = None;
        let result = self.analyze_labeled(labels);
        self.options.segments = segments;
        self.labeler = None;
        let (table, segs) = result?;
        // The given label of each segment (segments are numbered in raster order of their
        // first site).
        let n = segs.count();
        let mut given = vec![0u32; n + 1];
        for (&s, &l) in segs.array().iter().zip(labels.iter()) {
            if s != 0 && given[s as usize] == 0 {
                given[s as usize] = l;
            }
        }
        // Row of each given label; a label met twice is in two pieces.
        let mut row_of = vec![usize::MAX; n + 1];
        for (seg, &l) in given.iter().enumerate().skip(1) {
            let l = l as usize;
            if l > n {
                return Err(Error::InvalidArgument(format!(
                    "labels must be numbered 1..=n without gaps: label {l} with {n} clusters \
                     (renumber with clusterlab::label, or skimage.segmentation.relabel_sequential)"
                )));
            }
            if row_of[l] != usize::MAX {
                let pieces = given.iter().filter(|&&g| g as usize == l).count();
                return Err(Error::InvalidArgument(format!(
                    "label {l} is not connected: it has {pieces} pieces under {}-connectivity \
                     with a {} boundary",
                    connectivity_of(&table),
                    table.boundary
                )));
            }
            row_of[l] = seg - 1;
        }
        Ok(table.select_rows(&row_of[1..]))
    }
}

fn connectivity_of(table: &ClusterTable) -> usize {
    table.connectivity.neighbours()
}
