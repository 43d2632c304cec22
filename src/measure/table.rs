//! [`ClusterTable`]: one row per cluster, one `Array1` per measure.

use super::compose::Builder;
use super::moments::{Merge, Perimeter};
use super::Measures;
use crate::{Boundary, Connectivity};
use ndarray::Array1;

/// The measures of every cluster of a lattice, as columns: element `i` of each column belongs to
/// the cluster labeled `i + 1` (labels are numbered `1..=count` in raster order of each cluster's
/// first site, as [`label`](crate::label) numbers them; [`ClusterTable::label`] gives the label
/// column itself).
///
/// Coordinates: `x` is the column, `y` the row. On open axes they are the lattice's coordinates.
/// Along a periodic axis they are *unwrapped*: the cluster's first site (raster order) keeps its
/// lattice coordinates and every other site gets the coordinate reached by walking to it inside
/// the cluster, so a cluster that crosses the edge is not cut in two and coordinates may be
/// negative or exceed the lattice size. When the cluster wraps around that axis the walk is
/// ambiguous (going round once more changes the coordinate), so along an axis the cluster wraps
/// in, its sites keep their lattice coordinates `0..w` (or `0..h`). Along an axis it does not
/// wrap in, every closed walk has zero net displacement, so the unwrapped coordinate does not
/// depend on the walk.
///
/// See the [module documentation](crate::analysis) for the definitions of the perimeters and the
/// filled area, with a worked example.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClusterTable {
    /// The lattice's shape `(height, width)`.
    pub shape: (usize, usize),
    /// The neighbourhood the clusters were labeled with.
    pub connectivity: Connectivity,
    /// The boundary.
    pub boundary: Boundary,
    /// Whether clusters are same-value segments (rather than occupied sites).
    pub segments: bool,
    /// Which columns were computed.
    pub measures: Measures,
    /// Number of sites.
    pub size: Array1<u64>,
    /// Smallest `x` (column) of the cluster's sites (unwrapped on a periodic axis).
    pub x_min: Array1<i64>,
    /// Largest `x`.
    pub x_max: Array1<i64>,
    /// Smallest `y` (row).
    pub y_min: Array1<i64>,
    /// Largest `y`.
    pub y_max: Array1<i64>,
    /// Mean `x` of the sites.
    pub centroid_x: Array1<f64>,
    /// Mean `y` of the sites.
    pub centroid_y: Array1<f64>,
    /// Radius of gyration `R`, with `R²` the mean squared distance of the sites from the centroid.
    pub gyration_radius: Array1<f64>,
    /// Site perimeter `t`: distinct sites outside the cluster that neighbour it
    /// ([`Measures::All`] only).
    pub site_perimeter: Option<Array1<u64>>,
    /// Bond perimeter: (cluster site, outside neighbour) pairs, per direction
    /// ([`Measures::All`] only).
    pub bond_perimeter: Option<Array1<u64>>,
    /// Hull perimeter: the perimeter sites on the cluster's outside ([`Measures::All`] only).
    pub hull_perimeter: Option<Array1<u64>>,
    /// Filled area: the cluster plus everything it encloses ([`Measures::All`] only).
    pub filled_area: Option<Array1<u64>>,
    /// Wraps around a periodic `x` axis (by winding; always false on an open `x` axis).
    pub wraps_x: Array1<bool>,
    /// Wraps around a periodic `y` axis (always false on an open `y` axis).
    pub wraps_y: Array1<bool>,
    /// Touches column 0 and column `w − 1` of an open `x` axis (always false on a periodic one).
    pub spans_x: Array1<bool>,
    /// Touches row 0 and row `h − 1` of an open `y` axis (always false on a periodic one).
    pub spans_y: Array1<bool>,
}

/// One cluster's row of a [`ClusterTable`], by value (see the table's columns for the meanings).
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(missing_docs)]
pub struct ClusterRow {
    pub label: u32,
    pub size: u64,
    pub x_min: i64,
    pub x_max: i64,
    pub y_min: i64,
    pub y_max: i64,
    pub centroid_x: f64,
    pub centroid_y: f64,
    pub gyration_radius: f64,
    /// `None` unless [`Measures::All`].
    pub site_perimeter: Option<u64>,
    pub bond_perimeter: Option<u64>,
    pub hull_perimeter: Option<u64>,
    pub filled_area: Option<u64>,
    pub wraps_x: bool,
    pub wraps_y: bool,
    pub spans_x: bool,
    pub spans_y: bool,
}

impl ClusterRow {
    /// Whether the cluster wraps or spans along either axis: the clusters that the primed sums of
    /// [`LatticeStats`](super::stats::LatticeStats) leave out.
    pub fn percolates(&self) -> bool {
        self.wraps_x || self.wraps_y || self.spans_x || self.spans_y
    }
}

impl ClusterTable {
    /// The table with its rows in `order` (row `k` of the result is row `order[k]` of this one),
    /// every column alike.
    pub(crate) fn select_rows(&self, order: &[usize]) -> ClusterTable {
        use ndarray::Axis;
        let pick = |a: &Array1<u64>| a.select(Axis(0), order);
        ClusterTable {
            shape: self.shape,
            connectivity: self.connectivity,
            boundary: self.boundary,
            segments: self.segments,
            measures: self.measures,
            size: pick(&self.size),
            x_min: self.x_min.select(Axis(0), order),
            x_max: self.x_max.select(Axis(0), order),
            y_min: self.y_min.select(Axis(0), order),
            y_max: self.y_max.select(Axis(0), order),
            centroid_x: self.centroid_x.select(Axis(0), order),
            centroid_y: self.centroid_y.select(Axis(0), order),
            gyration_radius: self.gyration_radius.select(Axis(0), order),
            site_perimeter: self.site_perimeter.as_ref().map(pick),
            bond_perimeter: self.bond_perimeter.as_ref().map(pick),
            hull_perimeter: self.hull_perimeter.as_ref().map(pick),
            filled_area: self.filled_area.as_ref().map(pick),
            wraps_x: self.wraps_x.select(Axis(0), order),
            wraps_y: self.wraps_y.select(Axis(0), order),
            spans_x: self.spans_x.select(Axis(0), order),
            spans_y: self.spans_y.select(Axis(0), order),
        }
    }
}

impl ClusterTable {
    /// The number of clusters (rows).
    pub fn count(&self) -> usize {
        self.size.len()
    }

    /// Whether there are no clusters.
    pub fn is_empty(&self) -> bool {
        self.size.is_empty()
    }

    /// The label column: `1..=count`.
    pub fn label(&self) -> Array1<u32> {
        Array1::from_iter(1..=self.count() as u32)
    }

    /// The row of the cluster labeled `label` (`1..=count`), or `None`.
    pub fn row(&self, label: u32) -> Option<ClusterRow> {
        let i = (label as usize).checked_sub(1)?;
        if i >= self.count() {
            return None;
        }
        let opt = |a: &Option<Array1<u64>>| a.as_ref().map(|a| a[i]);
        Some(ClusterRow {
            label,
            size: self.size[i],
            x_min: self.x_min[i],
            x_max: self.x_max[i],
            y_min: self.y_min[i],
            y_max: self.y_max[i],
            centroid_x: self.centroid_x[i],
            centroid_y: self.centroid_y[i],
            gyration_radius: self.gyration_radius[i],
            site_perimeter: opt(&self.site_perimeter),
            bond_perimeter: opt(&self.bond_perimeter),
            hull_perimeter: opt(&self.hull_perimeter),
            filled_area: opt(&self.filled_area),
            wraps_x: self.wraps_x[i],
            wraps_y: self.wraps_y[i],
            spans_x: self.spans_x[i],
            spans_y: self.spans_y[i],
        })
    }

    /// Every row, in label order.
    pub fn rows(&self) -> impl Iterator<Item = ClusterRow> + '_ {
        (1..=self.count() as u32).filter_map(|l| self.row(l))
    }

    /// Whether cluster `i` (0-based row) wraps or spans along either axis.
    pub(crate) fn percolates_at(&self, i: usize) -> bool {
        self.wraps_x[i] || self.wraps_y[i] || self.spans_x[i] || self.spans_y[i]
    }

    /// A table with no clusters.
    pub(crate) fn empty(
        shape: (usize, usize),
        connectivity: Connectivity,
        boundary: Boundary,
        segments: bool,
        measures: Measures,
    ) -> Self {
        let p = [Perimeter::EMPTY];
        let full = (measures == Measures::All).then_some((&p[..], &[0u64][..]));
        Builder::new(
            shape,
            connectivity,
            boundary,
            segments,
            measures,
            0,
            Vec::new(),
        )
        .finish(false, full, &mut Vec::new())
    }
}
