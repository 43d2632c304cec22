//! One cluster's shape row and the columns rows fill ([`ShapeColumns`]): what
//! [`super::compose`] writes into, in parallel, row by row.

use super::table::ClusterTable;
use super::Measures;
use crate::{Boundary, Connectivity};
use ndarray::Array1;
use rayon::prelude::*;

/// What a row needs of the lattice: its size and which axes are open.
pub(super) struct Geometry {
    pub(super) h: i64,
    pub(super) w: i64,
    pub(super) open_x: bool,
    pub(super) open_y: bool,
}

impl Geometry {
    pub(super) fn new((h, w): (usize, usize), boundary: Boundary) -> Geometry {
        Geometry {
            h: h as i64,
            w: w as i64,
            open_x: !boundary.wraps_x(),
            open_y: !boundary.wraps_y(),
        }
    }
}

/// One cluster's shape columns.
pub(super) struct Row {
    pub(super) size: u64,
    /// `x_min, x_max, y_min, y_max`.
    pub(super) bbox: [i64; 4],
    /// Centroid `x, y` and radius of gyration.
    pub(super) centre: [f64; 3],
    /// `wraps_x, wraps_y, spans_x, spans_y`.
    pub(super) flags: [bool; 4],
}

/// Mutable references to one row of [`ShapeColumns`], in field order.
type RowRefs<'a> = (
    &'a mut u64,
    &'a mut i64,
    &'a mut i64,
    &'a mut i64,
    &'a mut i64,
    &'a mut f64,
    &'a mut f64,
    &'a mut f64,
    &'a mut bool,
    &'a mut bool,
    &'a mut bool,
    &'a mut bool,
);

/// The shape columns of a table, filled row by row. [`Columns::new`] makes them ahead of the
/// rows.
pub(crate) struct ShapeColumns {
    size: Vec<u64>,
    bbox: [Vec<i64>; 4],
    centre: [Vec<f64>; 3],
    flags: [Vec<bool>; 4],
}

/// The columns of a table of `n` rows, allocated and their pages faulted in (in parallel when
/// asked for), so that a caller can pay for that while the pieces are still on their way (the
/// GPU's download); [`compose`](super::compose::compose) fills them.
pub(crate) type Columns = ShapeColumns;

impl ShapeColumns {
    // Only the GPU analyzer has anything to do while its pieces are on their way.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    /// Columns for `n` rows, their pages touched.
    pub(crate) fn new(n: usize, parallel: bool) -> ShapeColumns {
        let mut c = ShapeColumns::zeroed(n);
        // One store per page (volatile: the allocator's pages are known to be zero, and a plain
        // store of zero could be dropped).
        fn touch<T: Copy + Send + Sync>(v: &mut [T], zero: T, parallel: bool) {
            let step = (4096 / std::mem::size_of::<T>()).max(1);
            let f = |c: &mut [T]| {
                // SAFETY: `c` is a nonempty chunk of `v`.
                unsafe { std::ptr::write_volatile(c.as_mut_ptr(), zero) }
            };
            if parallel {
                v.par_chunks_mut(step).with_min_len(16).for_each(f);
            } else {
                v.chunks_mut(step).for_each(f);
            }
        }
        touch(&mut c.size, 0, parallel);
        c.bbox.iter_mut().for_each(|v| touch(v, 0, parallel));
        c.centre.iter_mut().for_each(|v| touch(v, 0.0, parallel));
        c.flags.iter_mut().for_each(|v| touch(v, false, parallel));
        c
    }

    fn zeroed(n: usize) -> ShapeColumns {
        ShapeColumns {
            size: vec![0; n],
            bbox: std::array::from_fn(|_| vec![0; n]),
            centre: std::array::from_fn(|_| vec![0.0; n]),
            flags: std::array::from_fn(|_| vec![false; n]),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.size.len()
    }

    /// The columns of table `t` taken for reuse (`t` is left with empty columns), at least `n`
    /// rows long: each column's memory is kept, whatever its layout (every row is rewritten; its
    /// pages are touched already, so a table made every timestep into the last one's memory pays
    /// no page faults), and keeps its capacity; rows beyond its length are added as zeros. A
    /// column too small for `n` rows is made afresh rather than grown (a copy of rows that are
    /// rewritten anyway).
    pub(crate) fn reclaim(t: &mut ClusterTable, n: usize) -> ShapeColumns {
        fn take<T: Clone + Default>(a: &mut Array1<T>, n: usize) -> Vec<T> {
            // Every element is rewritten, so the allocation serves whatever the array's layout.
            let (mut v, _) = std::mem::take(a).into_raw_vec_and_offset();
            if v.capacity() < n {
                return vec![T::default(); n];
            }
            v.resize(n.max(v.len()), T::default());
            v
        }
        ShapeColumns {
            size: take(&mut t.size, n),
            bbox: [
                take(&mut t.x_min, n),
                take(&mut t.x_max, n),
                take(&mut t.y_min, n),
                take(&mut t.y_max, n),
            ],
            centre: [
                take(&mut t.centroid_x, n),
                take(&mut t.centroid_y, n),
                take(&mut t.gyration_radius, n),
            ],
            flags: [
                take(&mut t.wraps_x, n),
                take(&mut t.wraps_y, n),
                take(&mut t.spans_x, n),
                take(&mut t.spans_y, n),
            ],
        }
    }

    /// Keeps the first `n` rows (the allocations stay: a table of a few rows fewer than made
    /// ahead keeps their bytes rather than being copied).
    fn truncate(&mut self, n: usize) {
        self.size.truncate(n);
        self.bbox.iter_mut().for_each(|v| v.truncate(n));
        self.centre.iter_mut().for_each(|v| v.truncate(n));
        self.flags.iter_mut().for_each(|v| v.truncate(n));
    }

    /// `n` rows, row `i` given by `row(i)`, computed in parallel when asked for.
    pub(super) fn fill(
        n: usize,
        parallel: bool,
        row: impl Fn(usize) -> Row + Sync,
    ) -> ShapeColumns {
        Self::fill_into(None, n, parallel, row)
    }

    /// As [`ShapeColumns::fill`], into the first `n` rows of `c` when it has as many.
    pub(super) fn fill_into(
        c: Option<ShapeColumns>,
        n: usize,
        parallel: bool,
        row: impl Fn(usize) -> Row + Sync,
    ) -> ShapeColumns {
        let mut c = match c {
            Some(mut c) if c.len() >= n => {
                c.truncate(n);
                c
            }
            _ => ShapeColumns::zeroed(n),
        };
        let [x0, x1, y0, y1] = &mut c.bbox;
        let [cx, cy, r] = &mut c.centre;
        let [wx, wy, sx, sy] = &mut c.flags;
        let set = |(i, (n, a, b, d, e, f, g, h, j, k, l, m)): (usize, RowRefs<'_>)| {
            let v = row(i);
            *n = v.size;
            [*a, *b, *d, *e] = v.bbox;
            [*f, *g, *h] = v.centre;
            [*j, *k, *l, *m] = v.flags;
        };
        if parallel {
            (
                &mut c.size[..],
                &mut x0[..],
                &mut x1[..],
                &mut y0[..],
                &mut y1[..],
                &mut cx[..],
                &mut cy[..],
                &mut r[..],
                &mut wx[..],
                &mut wy[..],
                &mut sx[..],
                &mut sy[..],
            )
                .into_par_iter()
                .with_min_len(4096)
                .enumerate()
                .for_each(set);
        } else {
            for i in 0..n {
                set((
                    i,
                    (
                        &mut c.size[i],
                        &mut x0[i],
                        &mut x1[i],
                        &mut y0[i],
                        &mut y1[i],
                        &mut cx[i],
                        &mut cy[i],
                        &mut r[i],
                        &mut wx[i],
                        &mut wy[i],
                        &mut sx[i],
                        &mut sy[i],
                    ),
                ));
            }
        }
        c
    }

    /// Overwrites row `i`.
    pub(super) fn set(&mut self, i: usize, v: Row) {
        self.size[i] = v.size;
        for (col, x) in self.bbox.iter_mut().zip(v.bbox) {
            col[i] = x;
        }
        for (col, x) in self.centre.iter_mut().zip(v.centre) {
            col[i] = x;
        }
        for (col, x) in self.flags.iter_mut().zip(v.flags) {
            col[i] = x;
        }
    }

    pub(super) fn into_table(
        self,
        shape: (usize, usize),
        connectivity: Connectivity,
        boundary: Boundary,
        segments: bool,
        measures: Measures,
    ) -> ClusterTable {
        let ShapeColumns {
            size,
            bbox: [x_min, x_max, y_min, y_max],
            centre: [centroid_x, centroid_y, gyration_radius],
            flags: [wraps_x, wraps_y, spans_x, spans_y],
        } = self;
        ClusterTable {
            shape,
            connectivity,
            boundary,
            segments,
            measures,
            size: Array1::from_vec(size),
            x_min: Array1::from_vec(x_min),
            x_max: Array1::from_vec(x_max),
            y_min: Array1::from_vec(y_min),
            y_max: Array1::from_vec(y_max),
            centroid_x: Array1::from_vec(centroid_x),
            centroid_y: Array1::from_vec(centroid_y),
            gyration_radius: Array1::from_vec(gyration_radius),
            site_perimeter: None,
            bond_perimeter: None,
            hull_perimeter: None,
            filled_area: None,
            wraps_x: Array1::from_vec(wraps_x),
            wraps_y: Array1::from_vec(wraps_y),
            spans_x: Array1::from_vec(spans_x),
            spans_y: Array1::from_vec(spans_y),
        }
    }
}
