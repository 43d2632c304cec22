//! Bond configurations ([`PackedBonds`]) and the [`Bonds`] join rule, so that the CPU labelers
//! (BFS, Hoshen–Kopelman, strips) label bond clusters unchanged.
//!
//! A configuration has two masks of the lattice's shape (CONVENTIONS.md, "Bonds"): `right[y, x]`
//! joins `(y, x)` and `(y, x + 1)`, `down[y, x]` joins `(y, x)` and `(y + 1, x)`. On an axis that
//! wraps, the last column's `right` and the last row's `down` bonds wrap; on an open axis they are
//! ignored. Every site belongs to a cluster (isolated sites are clusters of size 1).

use super::bits::{shl1, words, WORD};
use super::lattice::{check_size, Boundary};
use super::rule::JoinRule;
use crate::{Error, Result};
use ndarray::ArrayView2;

/// A bond configuration, bit-packed: one bit per bond, each row of `right` and of `down` padded
/// to whole 64-bit words (bit `j` of word `i` of a row is column `64 i + j`; padding bits are
/// ignored). The layout a GPU kernel reads as 32-bit words too (little-endian halves).
///
/// ```
/// use clusterlab::PackedBonds;
/// let mut bonds = PackedBonds::new(2, 3)?;
/// bonds.set_right(0, 1, true);
/// assert!(bonds.right(0, 1) && !bonds.down(0, 1));
/// # Ok::<(), clusterlab::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackedBonds {
    h: usize,
    w: usize,
    right: Vec<u64>,
    down: Vec<u64>,
}

impl PackedBonds {
    /// An empty (no bonds) configuration of `h` rows and `w` columns.
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES) sites.
    pub fn new(h: usize, w: usize) -> Result<Self> {
        let mut b = PackedBonds::default();
        b.reset(h, w)?;
        Ok(b)
    }

    /// Reshapes to `h × w` with no bonds, keeping the allocation when it is large enough.
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES) sites.
    pub fn reset(&mut self, h: usize, w: usize) -> Result<()> {
        check_size(h, w)?;
        self.h = h;
        self.w = w;
        let n = h * words(w);
        self.right.clear();
        self.right.resize(n, 0);
        self.down.clear();
        self.down.resize(n, 0);
        Ok(())
    }

    /// Packs two `u8` masks (nonzero = bond), reusing this value's buffers.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the masks differ in shape, [`Error::TooManySites`] beyond
    /// [`MAX_SITES`](crate::MAX_SITES) sites.
    pub fn pack(&mut self, right: ArrayView2<'_, u8>, down: ArrayView2<'_, u8>) -> Result<()> {
        if right.dim() != down.dim() {
            return Err(Error::ShapeMismatch {
                expected: [right.nrows(), right.ncols()],
                found: [down.nrows(), down.ncols()],
            });
        }
        let (h, w) = right.dim();
        self.reset(h, w)?;
        let nw = words(w);
        for (mask, dst) in [(right, &mut self.right), (down, &mut self.down)] {
            for (y, row) in mask.outer_iter().enumerate() {
                let out = &mut dst[y * nw..(y + 1) * nw];
                for (x, &v) in row.iter().enumerate() {
                    out[x / WORD] |= ((v != 0) as u64) << (x % WORD);
                }
            }
        }
        Ok(())
    }

    /// Packs two `u8` masks into a new value.
    ///
    /// # Errors
    /// As [`PackedBonds::pack`].
    pub fn from_masks(right: ArrayView2<'_, u8>, down: ArrayView2<'_, u8>) -> Result<Self> {
        let mut b = PackedBonds::default();
        b.pack(right, down)?;
        Ok(b)
    }

    /// Wraps already packed masks: `right` and `down` hold `h` rows of
    /// [`PackedBonds::words_per_row`]`(w)` words each.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a buffer has the wrong length, [`Error::TooManySites`]
    /// beyond [`MAX_SITES`](crate::MAX_SITES) sites.
    pub fn from_words(h: usize, w: usize, right: Vec<u64>, down: Vec<u64>) -> Result<Self> {
        check_size(h, w)?;
        let n = h * words(w);
        if right.len() != n || down.len() != n {
            return Err(Error::InvalidArgument(format!(
                "packed bonds of {h}×{w} need {n} words per mask, got {} and {}",
                right.len(),
                down.len()
            )));
        }
        Ok(PackedBonds { h, w, right, down })
    }

    /// Words per packed row for `w` columns: `ceil(w / 64)`.
    pub fn words_per_row(w: usize) -> usize {
        words(w)
    }

    /// `(height, width)`.
    pub fn dim(&self) -> (usize, usize) {
        (self.h, self.w)
    }

    /// The `right` words, row after row.
    pub fn right_words(&self) -> &[u64] {
        &self.right
    }
    /// The `down` words, row after row.
    pub fn down_words(&self) -> &[u64] {
        &self.down
    }
    /// Both masks' words, mutable, for writing bonds a row at a time (`(right, down)`).
    pub fn words_mut(&mut self) -> (&mut [u64], &mut [u64]) {
        (&mut self.right, &mut self.down)
    }

    #[inline]
    fn bit(v: &[u64], nw: usize, y: usize, x: usize) -> bool {
        (v[y * nw + x / WORD] >> (x % WORD)) & 1 == 1
    }
    #[inline]
    fn set(v: &mut [u64], nw: usize, y: usize, x: usize, on: bool) {
        let m = 1u64 << (x % WORD);
        let w = &mut v[y * nw + x / WORD];
        *w = if on { *w | m } else { *w & !m };
    }

    /// Whether the bond from `(y, x)` to `(y, x + 1)` (wrapping) is set. Panics out of bounds.
    pub fn right(&self, y: usize, x: usize) -> bool {
        assert!(y < self.h && x < self.w, "bond ({y}, {x}) out of bounds");
        Self::bit(&self.right, words(self.w), y, x)
    }
    /// Whether the bond from `(y, x)` to `(y + 1, x)` (wrapping) is set. Panics out of bounds.
    pub fn down(&self, y: usize, x: usize) -> bool {
        assert!(y < self.h && x < self.w, "bond ({y}, {x}) out of bounds");
        Self::bit(&self.down, words(self.w), y, x)
    }
    /// Sets the bond from `(y, x)` to `(y, x + 1)`. Panics out of bounds.
    pub fn set_right(&mut self, y: usize, x: usize, on: bool) {
        assert!(y < self.h && x < self.w, "bond ({y}, {x}) out of bounds");
        Self::set(&mut self.right, words(self.w), y, x, on)
    }
    /// Sets the bond from `(y, x)` to `(y + 1, x)`. Panics out of bounds.
    pub fn set_down(&mut self, y: usize, x: usize, on: bool) {
        assert!(y < self.h && x < self.w, "bond ({y}, {x}) out of bounds");
        Self::set(&mut self.down, words(self.w), y, x, on)
    }
}

/// Bond clusters as a join rule: every site occupied, neighbours joined by any bond between them
/// (on a torus 1 or 2 sites wide two sites can be joined by two bonds: either one joins them).
pub(crate) struct Bonds<'a> {
    pub bonds: &'a PackedBonds,
    pub boundary: Boundary,
}

impl Bonds<'_> {
    /// Whether a bond leaves `a` towards `b` along one axis: `b` is `a + 1` there (wrapping
    /// only where the axis wraps) and the other coordinate is equal.
    #[inline]
    fn one_way(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        let (h, w) = (self.bonds.h, self.bonds.w);
        let nw = words(w);
        let next = |v: usize, n: usize, wraps: bool| {
            if v + 1 < n {
                Some(v + 1)
            } else if wraps {
                Some(0)
            } else {
                None
            }
        };
        (a.0 == b.0
            && next(a.1, w, self.boundary.wraps_x()) == Some(b.1)
            && PackedBonds::bit(&self.bonds.right, nw, a.0, a.1))
            || (a.1 == b.1
                && next(a.0, h, self.boundary.wraps_y()) == Some(b.0)
                && PackedBonds::bit(&self.bonds.down, nw, a.0, a.1))
    }
}

impl JoinRule for Bonds<'_> {
    fn dim(&self) -> (usize, usize) {
        (self.bonds.h, self.bonds.w)
    }
    #[inline]
    fn occupied(&self, _y: usize, _x: usize) -> bool {
        true
    }
    #[inline]
    fn joined(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        self.one_way(a, b) || self.one_way(b, a)
    }
    fn row_bits(&self, y: usize, occ: &mut [u64], left: &mut [u64]) {
        let w = self.bonds.w;
        let nw = occ.len();
        occ.fill(u64::MAX);
        if w % WORD != 0 {
            occ[nw - 1] = (1u64 << (w % WORD)) - 1;
        }
        // (y, x) joins (y, x − 1) through right[y, x − 1]; the wrapping bond of the last column
        // is the caller's business (it asks `joined`), so the shift drops it past bit w − 1.
        shl1(&self.bonds.right[y * nw..(y + 1) * nw], left);
        for (l, &o) in left.iter_mut().zip(occ.iter()) {
            *l &= o;
        }
    }
    fn link_bits(
        &self,
        y: usize,
        yp: usize,
        dx: isize,
        occ: &[u64],
        _occ_p: &[u64],
        out: &mut [u64],
    ) {
        out.fill(0);
        if dx != 0 {
            return; // bonds join edge neighbours only
        }
        let (h, nw) = (self.bonds.h, out.len());
        let wraps = self.boundary.wraps_y();
        // down[yp] joins yp to y when y follows yp; down[y] joins them when yp follows y (both on
        // a torus two rows high).
        let follows =
            |a: usize, b: usize| (a + 1 < h && a + 1 == b) || (a + 1 == h && wraps && b == 0);
        if follows(yp, y) {
            for (o, &d) in out.iter_mut().zip(&self.bonds.down[yp * nw..(yp + 1) * nw]) {
                *o |= d;
            }
        }
        if follows(y, yp) {
            for (o, &d) in out.iter_mut().zip(&self.bonds.down[y * nw..(y + 1) * nw]) {
                *o |= d;
            }
        }
        for (o, &m) in out.iter_mut().zip(occ) {
            *o &= m;
        }
    }
}
