//! [`ClusterTable`]: one row per cluster, one `Array1` per measure.

use super::moments::{Merge, Moments, Perimeter};
use super::wrapping::{WRAP_X, WRAP_Y};
use super::Measures;
use crate::{Boundary, Connectivity};
use ndarray::{Array1, ArrayView1, Zip};
use rayon::prelude::*;

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

/// Accumulated sums of a cluster in unwrapped coordinates.
#[derive(Clone, Copy)]
pub(crate) struct Sums {
    size: u64,
    sx: i128,
    sy: i128,
    sxx: i128,
    syy: i128,
    x_min: i64,
    x_max: i64,
    y_min: i64,
    y_max: i64,
}

const NO_SUMS: Sums = Sums {
    size: 0,
    sx: 0,
    sy: 0,
    sxx: 0,
    syy: 0,
    x_min: i64::MAX,
    x_max: i64::MIN,
    y_min: i64::MAX,
    y_max: i64::MIN,
};

/// `x as f64`, without the 128-bit conversion routine when `x` fits 64 bits.
#[inline]
fn to_f64(x: i128) -> f64 {
    match i64::try_from(x) {
        Ok(v) => v as f64,
        Err(_) => x as f64,
    }
}

/// Mean and variance of one coordinate from its sums.
fn mean_var(n: u64, s: i128, ss: i128) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    let mean = to_f64(s) / nf;
    // n² var = n Σx² − (Σx)², exact in integers when it fits (always, unless the lattice has
    // billions of sites along one axis).
    const LIM: i128 = 1 << 62;
    let exact = if (n as i128) < LIM && s.abs() < LIM && ss < LIM {
        Some(n as i128 * ss - s * s)
    } else {
        (n as i128)
            .checked_mul(ss)
            .and_then(|a| s.checked_mul(s).map(|b| a - b))
    };
    let var = match exact {
        Some(d) => to_f64(d) / (nf * nf),
        None => to_f64(ss) / nf - mean * mean,
    };
    (mean, var.max(0.0))
}

/// Builds a table from per-piece moments.
pub(crate) struct Builder {
    shape: (usize, usize),
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
    measures: Measures,
    sums: Vec<Sums>,
    wraps: Vec<u8>,
}

impl Builder {
    pub(crate) fn new(
        shape: (usize, usize),
        connectivity: Connectivity,
        boundary: Boundary,
        segments: bool,
        measures: Measures,
        count: usize,
        mut sums: Vec<Sums>,
    ) -> Self {
        sums.clear();
        sums.resize(count, NO_SUMS);
        Builder {
            shape,
            connectivity,
            boundary,
            segments,
            measures,
            sums,
            wraps: vec![0; count],
        }
    }

    /// Sets the wrapping bits ([`WRAP_X`] | [`WRAP_Y`]) of cluster `c` (1-based).
    pub(crate) fn set_wraps(&mut self, c: u32, bits: u8) {
        self.wraps[c as usize - 1] = bits;
    }

    /// Adds a piece with moments `m` to cluster `c` (1-based), shifted by `shift` periods
    /// (ignored along the axes the cluster wraps in).
    pub(crate) fn add_piece(&mut self, c: u32, m: &Moments, shift: [i32; 2]) {
        if m.size == 0 {
            return;
        }
        let i = c as usize - 1;
        let bits = self.wraps[i];
        let (h, w) = self.shape;
        let dx = if bits & WRAP_X != 0 {
            0
        } else {
            i64::from(shift[0]) * w as i64
        };
        let dy = if bits & WRAP_Y != 0 {
            0
        } else {
            i64::from(shift[1]) * h as i64
        };
        let s = &mut self.sums[i];
        if dx == 0 && dy == 0 {
            s.size += u64::from(m.size);
            s.sx += m.sx as i128;
            s.sy += m.sy as i128;
            s.sxx += m.sxx() as i128;
            s.syy += m.syy() as i128;
            s.x_min = s.x_min.min(i64::from(m.x_min));
            s.x_max = s.x_max.max(i64::from(m.x_max));
            s.y_min = s.y_min.min(i64::from(m.y_min));
            s.y_max = s.y_max.max(i64::from(m.y_max));
            return;
        }
        let n = i128::from(m.size);
        let (sx, sy) = (m.sx as i128, m.sy as i128);
        let (dxw, dyw) = (dx as i128, dy as i128);
        s.size += u64::from(m.size);
        s.sx += sx + n * dxw;
        s.sy += sy + n * dyw;
        s.sxx += m.sxx() as i128 + 2 * dxw * sx + n * dxw * dxw;
        s.syy += m.syy() as i128 + 2 * dyw * sy + n * dyw * dyw;
        s.x_min = s.x_min.min(i64::from(m.x_min) + dx);
        s.x_max = s.x_max.max(i64::from(m.x_max) + dx);
        s.y_min = s.y_min.min(i64::from(m.y_min) + dy);
        s.y_max = s.y_max.max(i64::from(m.y_max) + dy);
    }

    /// The size of cluster `c` (1-based) so far.
    pub(crate) fn size_of(&self, c: u32) -> u64 {
        self.sums[c as usize - 1].size
    }

    /// The table, with the perimeter columns when given (`site`, `bond`, `hull`, `filled`).
    /// `sums` gets the builder's buffer back for reuse.
    pub(crate) fn finish(
        self,
        parallel: bool,
        full: Option<(&[Perimeter], &[u64])>,
        sums: &mut Vec<Sums>,
    ) -> ClusterTable {
        let (h, w) = self.shape;
        let n = self.sums.len();
        let open_x = !self.boundary.wraps_x();
        let open_y = !self.boundary.wraps_y();
        let mut size = Array1::zeros(n);
        let mut x_min = Array1::zeros(n);
        let mut x_max = Array1::zeros(n);
        let mut y_min = Array1::zeros(n);
        let mut y_max = Array1::zeros(n);
        let mut centroid_x = Array1::zeros(n);
        let mut centroid_y = Array1::zeros(n);
        let mut gyration_radius = Array1::zeros(n);
        let mut wraps_x = Array1::from_elem(n, false);
        let mut wraps_y = Array1::from_elem(n, false);
        let mut spans_x = Array1::from_elem(n, false);
        let mut spans_y = Array1::from_elem(n, false);
        let all = ArrayView1::from(&self.sums[..]);
        let bits = ArrayView1::from(&self.wraps[..]);
        let bbox = |n: &mut u64, a: &mut i64, b: &mut i64, c: &mut i64, d: &mut i64, s: &Sums| {
            (*n, *a, *b, *c, *d) = (s.size, s.x_min, s.x_max, s.y_min, s.y_max);
        };
        let zip = Zip::from(&mut size)
            .and(&mut x_min)
            .and(&mut x_max)
            .and(&mut y_min)
            .and(&mut y_max)
            .and(&all);
        if parallel {
            zip.par_for_each(bbox);
        } else {
            zip.for_each(bbox);
        }
        let centre = |cx: &mut f64, cy: &mut f64, r: &mut f64, s: &Sums| {
            let (mx, vx) = mean_var(s.size, s.sx, s.sxx);
            let (my, vy) = mean_var(s.size, s.sy, s.syy);
            (*cx, *cy, *r) = (mx, my, (vx + vy).sqrt());
        };
        let zip = Zip::from(&mut centroid_x)
            .and(&mut centroid_y)
            .and(&mut gyration_radius)
            .and(&all);
        if parallel {
            zip.par_for_each(centre);
        } else {
            zip.for_each(centre);
        }
        let flags =
            |wx: &mut bool, wy: &mut bool, sx: &mut bool, sy: &mut bool, s: &Sums, b: &u8| {
                *wx = b & WRAP_X != 0;
                *wy = b & WRAP_Y != 0;
                *sx = open_x && s.x_min == 0 && s.x_max == w as i64 - 1;
                *sy = open_y && s.y_min == 0 && s.y_max == h as i64 - 1;
            };
        let zip = Zip::from(&mut wraps_x)
            .and(&mut wraps_y)
            .and(&mut spans_x)
            .and(&mut spans_y)
            .and(&all)
            .and(&bits);
        if parallel {
            zip.par_for_each(flags);
        } else {
            zip.for_each(flags);
        }
        let column = |f: fn(&Perimeter) -> u64, p: &[Perimeter]| {
            Array1::from_vec(if parallel {
                p[1..].par_iter().map(f).collect()
            } else {
                p[1..].iter().map(f).collect()
            })
        };
        let (site_perimeter, bond_perimeter, hull_perimeter, filled_area) = match full {
            Some((p, filled)) => (
                Some(column(|p| p.site, p)),
                Some(column(|p| p.bond, p)),
                Some(column(|p| p.hull, p)),
                Some(Array1::from_vec(filled[1..].to_vec())),
            ),
            None => (None, None, None, None),
        };
        *sums = self.sums;
        ClusterTable {
            shape: self.shape,
            connectivity: self.connectivity,
            boundary: self.boundary,
            segments: self.segments,
            measures: self.measures,
            size,
            x_min,
            x_max,
            y_min,
            y_max,
            centroid_x,
            centroid_y,
            gyration_radius,
            site_perimeter,
            bond_perimeter,
            hull_perimeter,
            filled_area,
            wraps_x,
            wraps_y,
            spans_x,
            spans_y,
        }
    }
}
