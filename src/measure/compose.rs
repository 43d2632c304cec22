//! Tables composed from pieces (clusters labeled with open boundaries, joined across periodic
//! edges): the per-cluster sums, the rows computed from them in parallel, and the builders both
//! backends use ([`compose`], [`Builder`]).

use super::moments::{Moments, Perimeter};
pub(crate) use super::shape_columns::Columns;
use super::shape_columns::{Geometry, Row, ShapeColumns};
use super::table::ClusterTable;
use super::wrapping::{Joined, WRAP_X, WRAP_Y};
use super::Measures;
use crate::{Boundary, Connectivity};
use ndarray::Array1;
use rayon::prelude::*;

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

impl Sums {
    /// Adds a piece with moments `m`, shifted by `shift` periods of the `(h, w)` lattice
    /// (ignored along the axes in `wraps`, [`WRAP_X`] | [`WRAP_Y`]).
    fn add(&mut self, m: &Moments, shift: [i32; 2], wraps: u8, (h, w): (usize, usize)) {
        if m.size == 0 {
            return;
        }
        let dx = if wraps & WRAP_X != 0 {
            0
        } else {
            i64::from(shift[0]) * w as i64
        };
        let dy = if wraps & WRAP_Y != 0 {
            0
        } else {
            i64::from(shift[1]) * h as i64
        };
        if dx == 0 && dy == 0 {
            self.size += u64::from(m.size);
            self.sx += m.sx as i128;
            self.sy += m.sy as i128;
            self.sxx += m.sxx() as i128;
            self.syy += m.syy() as i128;
            self.x_min = self.x_min.min(i64::from(m.x_min));
            self.x_max = self.x_max.max(i64::from(m.x_max));
            self.y_min = self.y_min.min(i64::from(m.y_min));
            self.y_max = self.y_max.max(i64::from(m.y_max));
            return;
        }
        let n = i128::from(m.size);
        let (sx, sy) = (m.sx as i128, m.sy as i128);
        let (dxw, dyw) = (dx as i128, dy as i128);
        self.size += u64::from(m.size);
        self.sx += sx + n * dxw;
        self.sy += sy + n * dyw;
        self.sxx += m.sxx() as i128 + 2 * dxw * sx + n * dxw * dxw;
        self.syy += m.syy() as i128 + 2 * dyw * sy + n * dyw * dyw;
        self.x_min = self.x_min.min(i64::from(m.x_min) + dx);
        self.x_max = self.x_max.max(i64::from(m.x_max) + dx);
        self.y_min = self.y_min.min(i64::from(m.y_min) + dy);
        self.y_max = self.y_max.max(i64::from(m.y_max) + dy);
    }

    /// The cluster's row of the shape columns; `wraps` its wrapping bits.
    fn row(&self, wraps: u8, g: &Geometry) -> Row {
        let (mx, vx) = mean_var(self.size, self.sx, self.sxx);
        let (my, vy) = mean_var(self.size, self.sy, self.syy);
        Row {
            size: self.size,
            bbox: [self.x_min, self.x_max, self.y_min, self.y_max],
            centre: [mx, my, (vx + vy).sqrt()],
            flags: [
                wraps & WRAP_X != 0,
                wraps & WRAP_Y != 0,
                g.open_x && self.x_min == 0 && self.x_max == g.w - 1,
                g.open_y && self.y_min == 0 && self.y_max == g.h - 1,
            ],
        }
    }
}

/// The row of a cluster of one piece, unshifted: [`Sums::row`] of that piece alone, without the
/// 128-bit sums (bit-identical: the same exact integers, the same roundings). Always inline: a
/// table's one streaming fill calls it once a cluster (7.4 M at 16384² p_c), and where the
/// compiler left it out of line, the fill's speed followed unrelated changes of the crate.
#[inline(always)]
fn piece_row(m: &Moments, wraps: u8, g: &Geometry) -> Row {
    if m.size == 0 {
        return NO_SUMS.row(wraps, g);
    }
    let n = u64::from(m.size);
    let (mx, vx) = mean_var_u(n, m.sx, m.sxx());
    let (my, vy) = mean_var_u(n, m.sy, m.syy());
    let [x0, x1, y0, y1] = [m.x_min, m.x_max, m.y_min, m.y_max].map(i64::from);
    Row {
        size: n,
        bbox: [x0, x1, y0, y1],
        centre: [mx, my, (vx + vy).sqrt()],
        flags: [
            wraps & WRAP_X != 0,
            wraps & WRAP_Y != 0,
            g.open_x && x0 == 0 && x1 == g.w - 1,
            g.open_y && y0 == 0 && y1 == g.h - 1,
        ],
    }
}

/// [`mean_var`] of nonnegative sums (`n > 0`): `n Σx² − (Σx)²` in unsigned 128-bit integers,
/// exact where `mean_var`'s signed products are (both below 2¹²⁷), else its fallback.
#[inline(always)]
fn mean_var_u(n: u64, s: u64, ss: u128) -> (f64, f64) {
    let nf = n as f64;
    let mean = s as f64 / nf;
    // Nearly every piece's products fit 64 bits: the same integers without 128-bit multiplies.
    if let Ok(ss) = u64::try_from(ss) {
        if let (Some(a), Some(b)) = (n.checked_mul(ss), s.checked_mul(s)) {
            let var = a.checked_sub(b).map_or(0.0, |d| d as f64 / (nf * nf));
            return (mean, var.max(0.0));
        }
    }
    const LIM: u128 = 1 << 127;
    let a = u128::from(n).checked_mul(ss).filter(|&a| a < LIM);
    let b = u128::from(s) * u128::from(s);
    let var = match a {
        // n Σx² ≥ (Σx)² (Cauchy–Schwarz); a negative difference would give a variance of 0,
        // as in mean_var.
        Some(a) if b < LIM => match a.checked_sub(b) {
            Some(d) => {
                let df = match u64::try_from(d) {
                    Ok(v) => v as f64,
                    Err(_) => d as f64,
                };
                df / (nf * nf)
            }
            None => 0.0,
        },
        _ => to_f64(ss as i128) / nf - mean * mean,
    };
    (mean, var.max(0.0))
}

/// The pieces a table is composed of (clusters labeled with open boundaries).
pub(crate) trait Pieces: Sync {
    /// Piece `p`'s moments, `p` in `1..=npieces`.
    fn moments(&self, p: usize) -> Moments;
}

/// Pieces by label: element `p` is piece `p`'s (element 0 unused).
impl Pieces for [Moments] {
    fn moments(&self, p: usize) -> Moments {
        self[p]
    }
}

/// The [`Measures::Shape`] table of the clusters that `npieces` pieces form: each piece its own
/// cluster (`joined` = `None`, open lattices), or joined across periodic edges by `joined`;
/// written into `columns` when they were made ahead ([`Columns::new`] with at least as many rows
/// as the table has clusters, such as `npieces`; fewer, or `None`, are made afresh).
///
/// A cluster of one piece, nearly every cluster, gets its row straight from the piece's moments
/// (in parallel, no per-cluster sums), since a cluster is numbered after its smallest piece and
/// that piece is its union-find root; only the few clusters with pieces on the edges are summed
/// piece by piece (with their shifts) and their rows rewritten.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compose<P: Pieces + ?Sized>(
    columns: Option<Columns>,
    shape: (usize, usize),
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
    npieces: usize,
    pieces: &P,
    joined: Option<&Joined>,
    parallel: bool,
) -> ClusterTable {
    let g = Geometry::new(shape, boundary);
    let one = |p: usize, wraps: u8| piece_row(&pieces.moments(p), wraps, &g);
    let Some(j) = joined else {
        let c = ShapeColumns::fill_into(columns, npieces, parallel, |i| one(i + 1, 0));
        return c.into_table(shape, connectivity, boundary, segments, Measures::Shape);
    };
    let c = compose_joined(columns, shape, &g, npieces, pieces, j, parallel);
    c.into_table(shape, connectivity, boundary, segments, Measures::Shape)
}

/// [`compose`]'s columns for pieces joined by `j` (periodic lattices), apart from the open
/// lattices' one streaming fill.
fn compose_joined<P: Pieces + ?Sized>(
    columns: Option<Columns>,
    shape: (usize, usize),
    g: &Geometry,
    npieces: usize,
    pieces: &P,
    j: &Joined,
    parallel: bool,
) -> ShapeColumns {
    let one = |p: usize, wraps: u8| piece_row(&pieces.moments(p), wraps, g);
    // The roots are the pieces that were not merged into another (`j.merged`, sorted): the
    // ranges between those, one streaming pass (a filter over every piece cost more, in
    // parallel, than the rows it gives).
    let mut roots: Vec<u32> = Vec::with_capacity(j.count);
    let mut next = 1;
    for &m in &j.merged {
        roots.extend(next..m);
        next = m + 1;
    }
    roots.extend(next..npieces as u32 + 1);
    debug_assert_eq!(roots.len(), j.count);
    debug_assert!(roots.iter().all(|&p| j.is_root(p)));
    let mut c = ShapeColumns::fill_into(columns, roots.len(), parallel, |i| {
        one(roots[i] as usize, j.wraps[i + 1])
    });
    // Clusters of several pieces: every piece that is not a root, grouped by cluster.
    // (Indices into `j.merged`, whose clusters and shifts `j.merged_map` and `j.merged_shift`
    // hold: a join may leave the per-piece maps unfilled.)
    let mut extra: Vec<(u32, u32)> = (j.merged_map.iter().enumerate())
        .map(|(i, &c)| (c, i as u32))
        .collect();
    extra.sort_unstable();
    for group in extra.chunk_by(|a, b| a.0 == b.0) {
        let cl = group[0].0 as usize;
        let wraps = j.wraps[cl];
        let mut s = NO_SUMS;
        let root = roots[cl - 1] as usize;
        // A root's shift is zero: shifts are relative to the root.
        s.add(&pieces.moments(root), [0, 0], wraps, shape);
        for &(_, i) in group {
            let i = i as usize;
            s.add(
                &pieces.moments(j.merged[i] as usize),
                j.merged_shift[i],
                wraps,
                shape,
            );
        }
        c.set(cl - 1, s.row(wraps, g));
    }
    c
}

impl ClusterTable {
    /// The table with the [`Measures::All`] columns added: per cluster `c`, `perimeter[c]` and
    /// `filled[c]` (index 0 unused).
    pub(crate) fn with_full(self, perimeter: &[Perimeter], filled: &[u64], parallel: bool) -> Self {
        let column = |f: fn(&Perimeter) -> u64| {
            Array1::from_vec(if parallel {
                perimeter[1..].par_iter().map(f).collect()
            } else {
                perimeter[1..].iter().map(f).collect()
            })
        };
        let (site, bond, hull) = (column(|p| p.site), column(|p| p.bond), column(|p| p.hull));
        self.with_columns(site, bond, hull, Array1::from_vec(filled[1..].to_vec()))
    }

    /// The table with the [`Measures::All`] columns given whole (cluster `l` at index `l − 1`).
    pub(crate) fn with_columns(
        mut self,
        site: Array1<u64>,
        bond: Array1<u64>,
        hull: Array1<u64>,
        filled: Array1<u64>,
    ) -> Self {
        self.site_perimeter = Some(site);
        self.bond_perimeter = Some(bond);
        self.hull_perimeter = Some(hull);
        self.filled_area = Some(filled);
        self.measures = Measures::All;
        self
    }
}

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

    // Only the multi-GPU analyzer composes pieces one by one.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    /// Sets the wrapping bits ([`WRAP_X`] | [`WRAP_Y`]) of cluster `c` (1-based).
    pub(crate) fn set_wraps(&mut self, c: u32, bits: u8) {
        self.wraps[c as usize - 1] = bits;
    }

    // Only the multi-GPU analyzer composes pieces one by one.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    /// Adds a piece with moments `m` to cluster `c` (1-based), shifted by `shift` periods
    /// (ignored along the axes the cluster wraps in).
    pub(crate) fn add_piece(&mut self, c: u32, m: &Moments, shift: [i32; 2]) {
        let i = c as usize - 1;
        self.sums[i].add(m, shift, self.wraps[i], self.shape);
    }

    /// The table, with the perimeter columns when given (`site`, `bond`, `hull`, `filled`).
    /// `sums` gets the builder's buffer back for reuse.
    pub(crate) fn finish(
        self,
        parallel: bool,
        full: Option<(&[Perimeter], &[u64])>,
        sums: &mut Vec<Sums>,
    ) -> ClusterTable {
        let g = Geometry::new(self.shape, self.boundary);
        let (all, bits) = (&self.sums, &self.wraps);
        let c = ShapeColumns::fill(all.len(), parallel, |i| all[i].row(bits[i], &g));
        let table = c.into_table(
            self.shape,
            self.connectivity,
            self.boundary,
            self.segments,
            self.measures,
        );
        *sums = self.sums;
        match full {
            Some((p, filled)) => table.with_full(p, filled, parallel),
            None => table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unsigned fast path gives `mean_var`'s bits, exact and fallback cases alike.
    #[test]
    fn mean_var_u_is_mean_var() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..200_000 {
            let n = match i % 3 {
                0 => next() % 1000 + 1,
                1 => next() % (1 << 32) + 1,
                _ => u64::from(u32::MAX),
            };
            let s = next() >> (next() % 64);
            let ss = if i % 5 == 0 {
                u128::from(next()) << (next() % 33)
            } else {
                // Consistent sums: Σx² ≥ (Σx)² / n.
                (u128::from(s) * u128::from(s)) / u128::from(n) + u128::from(next() >> 20)
            };
            let (a, b) = (mean_var_u(n, s, ss), mean_var(n, s as i128, ss as i128));
            assert_eq!(
                (a.0.to_bits(), a.1.to_bits()),
                (b.0.to_bits(), b.1.to_bits())
            );
        }
    }
}
