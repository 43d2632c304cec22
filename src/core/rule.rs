//! "Are these two neighbouring sites joined?" — the one question every labeling algorithm asks.
//!
//! The union-find cores in [`crate::cpu`] are generic over [`JoinRule`], so occupancy lattices,
//! same-value segments and (later) bond-masked Swendsen–Wang configurations share one implementation.
//! A rule answers per site pair ([`JoinRule::joined`], used by the oracle and the classic
//! Hoshen–Kopelman scan) and per row as bit masks ([`JoinRule::row_bits`], [`JoinRule::link_bits`],
//! used by the fast strip labeler); the two must agree, and the tests check that they do.

use crate::core::bits::{pack_nonzero, shl1, shr1, WORD};
use crate::SiteValue;
use ndarray::ArrayView2;

/// The rule that decides which neighbouring sites are joined.
pub(crate) trait JoinRule: Sync {
    /// `(height, width)`.
    fn dim(&self) -> (usize, usize);
    /// Whether site `(y, x)` is occupied.
    fn occupied(&self, y: usize, x: usize) -> bool;
    /// Whether the two neighbouring sites `a` and `b` (as `(y, x)`) are joined. False when either is empty.
    fn joined(&self, a: (usize, usize), b: (usize, usize)) -> bool;
    /// Row `y` as bits: `occ` (occupied) and `left` (bit `x` set when `(y, x)` is joined to
    /// `(y, x − 1)`; bit 0 is never set: wrapping is the caller's business).
    fn row_bits(&self, y: usize, occ: &mut [u64], left: &mut [u64]);
    /// Lattice rows per row of this rule: 1, or 2 for a rule whose rows are bands of two
    /// lattice rows (the strip labeler's `Bands`).
    const BAND_ROWS: usize = 1;
    /// [`JoinRule::row_bits`], and for bands of lattice rows the occupancy of the band's first
    /// and last lattice rows (`top`, `bottom`: the rows that touch the bands before and after
    /// it), which [`JoinRule::link_bits`] is then given; `top` and `bottom` are left alone
    /// where a row is one lattice row.
    fn band_bits(
        &self,
        y: usize,
        occ: &mut [u64],
        left: &mut [u64],
        _top: &mut [u64],
        _bottom: &mut [u64],
    ) {
        self.row_bits(y, occ, left);
    }
    /// Bit `x` of `out` is set when `(y, x)` is joined to `(yp, x + dx)`, for `dx` in −1, 0, 1 and
    /// `x + dx` inside the row (no wrapping). `occ` and `occ_p` are the two rows' occupancy bits.
    fn link_bits(
        &self,
        y: usize,
        yp: usize,
        dx: isize,
        occ: &[u64],
        occ_p: &[u64],
        out: &mut [u64],
    );
}

/// Bits of the links `(y, x)`–`(yp, x + dx)` given both rows' occupancy, for rules where any two
/// occupied neighbours are joined.
#[inline]
pub(crate) fn occupancy_links(dx: isize, occ: &[u64], occ_p: &[u64], out: &mut [u64]) {
    match dx {
        0 => {
            for ((o, &a), &b) in out.iter_mut().zip(occ).zip(occ_p) {
                *o = a & b;
            }
        }
        -1 => {
            shl1(occ_p, out);
            for (o, &a) in out.iter_mut().zip(occ) {
                *o &= a;
            }
        }
        _ => {
            shr1(occ_p, out);
            for (o, &a) in out.iter_mut().zip(occ) {
                *o &= a;
            }
        }
    }
}

/// Row `y` of `lattice` as occupancy bits.
pub(crate) fn pack_row<T: SiteValue>(lattice: ArrayView2<'_, T>, y: usize, out: &mut [u64]) {
    let row = lattice.row(y);
    match row.as_slice() {
        Some(r) => pack_nonzero(r, out),
        None => pack_nonzero(&row.to_vec(), out),
    }
}

/// `left`: the sites of `occ` whose left neighbour is occupied too (joined to it where any two
/// occupied neighbours are).
pub(crate) fn occupied_pairs(occ: &[u64], left: &mut [u64]) {
    shl1(occ, left);
    for (l, &o) in left.iter_mut().zip(occ) {
        *l &= o;
    }
}

/// Occupancy: any two occupied neighbours are joined.
pub(crate) struct Occupancy<'a, T> {
    pub lattice: ArrayView2<'a, T>,
}

impl<T: SiteValue> JoinRule for Occupancy<'_, T> {
    fn dim(&self) -> (usize, usize) {
        self.lattice.dim()
    }
    #[inline]
    fn occupied(&self, y: usize, x: usize) -> bool {
        self.lattice[[y, x]].is_occupied()
    }
    #[inline]
    fn joined(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        self.occupied(a.0, a.1) && self.occupied(b.0, b.1)
    }
    fn row_bits(&self, y: usize, occ: &mut [u64], left: &mut [u64]) {
        pack_row(self.lattice, y, occ);
        occupied_pairs(occ, left);
    }
    fn link_bits(
        &self,
        _y: usize,
        _yp: usize,
        dx: isize,
        occ: &[u64],
        occ_p: &[u64],
        out: &mut [u64],
    ) {
        occupancy_links(dx, occ, occ_p, out);
    }
}

/// Segments: neighbours join only when they hold the same nonzero value.
pub(crate) struct Segments<'a, T> {
    pub lattice: ArrayView2<'a, T>,
}

impl<T: SiteValue> Segments<'_, T> {
    /// Bits where `a[x] == b[x + dx]` and `a[x]` is nonzero, `x + dx` inside the row.
    fn equal_bits(a: &[T], b: &[T], dx: isize, out: &mut [u64]) {
        let w = a.len();
        out.fill(0);
        let (lo, hi) = match dx {
            -1 => (1.min(w), w),
            1 => (0, w.saturating_sub(1)),
            _ => (0, w),
        };
        for x in lo..hi {
            let v = a[x];
            let same = v.is_occupied() && v == b[(x as isize + dx) as usize];
            out[x / WORD] |= (same as u64) << (x % WORD);
        }
    }
}

impl<T: SiteValue> JoinRule for Segments<'_, T> {
    fn dim(&self) -> (usize, usize) {
        self.lattice.dim()
    }
    #[inline]
    fn occupied(&self, y: usize, x: usize) -> bool {
        self.lattice[[y, x]].is_occupied()
    }
    #[inline]
    fn joined(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        let va = self.lattice[[a.0, a.1]];
        va.is_occupied() && va == self.lattice[[b.0, b.1]]
    }
    fn row_bits(&self, y: usize, occ: &mut [u64], left: &mut [u64]) {
        let row = self.lattice.row(y);
        let owned;
        let r = match row.as_slice() {
            Some(r) => r,
            None => {
                owned = row.to_vec();
                &owned
            }
        };
        pack_nonzero(r, occ);
        Self::equal_bits(r, r, -1, left);
    }
    fn link_bits(
        &self,
        y: usize,
        yp: usize,
        dx: isize,
        _occ: &[u64],
        _occ_p: &[u64],
        out: &mut [u64],
    ) {
        let (a, b) = (self.lattice.row(y), self.lattice.row(yp));
        match (a.as_slice(), b.as_slice()) {
            (Some(a), Some(b)) => Self::equal_bits(a, b, dx, out),
            _ => Self::equal_bits(&a.to_vec(), &b.to_vec(), dx, out),
        }
    }
}
