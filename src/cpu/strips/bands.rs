//! Bands of two rows: the strip labeler's rows for 8-connected occupancy lattices.
//!
//! With 8-connectivity any two occupied sites of a two-row band in the same or neighbouring
//! columns are neighbours, so a band's clusters, as far as the band alone goes, are the runs of
//! its two rows' OR: one union-find node for what were up to two rows of runs (BBDT's 2 × 2
//! blocks, as runs). At density 0.8 a band has about an eighth of the runs of its two rows, at
//! the 4-connected threshold a third, at 0.3 about half, and the rows to merge are halved. Only
//! the band's last row touches the next band's first: [`JoinRule::link_bits`] is given those
//! two rows' occupancy (`Row::top`, `Row::bottom`). The labels are written lattice row by
//! lattice row from the band's runs.
//!
//! Numbering stays scipy's: a cluster's first site in raster order is in its first band, in the
//! band's top row where the cluster has a site there, else in its bottom row; `label_strip`
//! makes a band's new nodes in that order, so the smallest node of a
//! cluster is still the one of its first site.

use crate::core::rule::{occupancy_links, occupied_pairs, pack_row, JoinRule};
use crate::SiteValue;
use ndarray::ArrayView2;

/// An occupancy lattice seen as `⌈h / 2⌉` bands of two rows (the last one row when `h` is odd),
/// 8-connected. Row `y` of the rule is the band of lattice rows `2y` and `2y + 1`.
pub(crate) struct Bands<'a, T> {
    pub lattice: ArrayView2<'a, T>,
}

impl<T: SiteValue> Bands<'_, T> {
    /// The band's first lattice row.
    #[inline]
    fn top(&self, y: usize) -> usize {
        2 * y
    }

    /// The band's last lattice row.
    #[inline]
    fn bottom(&self, y: usize) -> usize {
        (2 * y + 1).min(self.lattice.nrows() - 1)
    }

    #[inline]
    fn site(&self, y: usize, x: usize) -> bool {
        self.lattice[[y, x]].is_occupied()
    }
}

impl<T: SiteValue> JoinRule for Bands<'_, T> {
    const BAND_ROWS: usize = 2;

    fn dim(&self) -> (usize, usize) {
        let (h, w) = self.lattice.dim();
        (h.div_ceil(2), w)
    }

    /// Whether the band has a site in column `x`.
    #[inline]
    fn occupied(&self, y: usize, x: usize) -> bool {
        self.site(self.top(y), x) || self.site(self.bottom(y), x)
    }

    /// In one band: both columns occupied (neighbouring columns of a band, wrapping or not, are
    /// joined wherever both hold a site). In two bands: `b`'s band comes before `a`'s (wrapping
    /// on a torus), and the sites are `a`'s band's first row and `b`'s band's last.
    #[inline]
    fn joined(&self, a: (usize, usize), b: (usize, usize)) -> bool {
        if a.0 == b.0 {
            self.occupied(a.0, a.1) && self.occupied(b.0, b.1)
        } else {
            self.site(self.top(a.0), a.1) && self.site(self.bottom(b.0), b.1)
        }
    }

    fn row_bits(&self, y: usize, occ: &mut [u64], left: &mut [u64]) {
        // `left` holds the second row until the OR is taken.
        pack_row(self.lattice, self.top(y), occ);
        pack_row(self.lattice, self.bottom(y), left);
        for (o, &l) in occ.iter_mut().zip(left.iter()) {
            *o |= l;
        }
        occupied_pairs(occ, left);
    }

    fn band_bits(
        &self,
        y: usize,
        occ: &mut [u64],
        left: &mut [u64],
        top: &mut [u64],
        bottom: &mut [u64],
    ) {
        pack_row(self.lattice, self.top(y), top);
        pack_row(self.lattice, self.bottom(y), bottom);
        for ((o, &t), &b) in occ.iter_mut().zip(top.iter()).zip(bottom.iter()) {
            *o = t | b;
        }
        occupied_pairs(occ, left);
    }

    /// `occ` and `occ_p` are the rows in contact: this band's first and the band before's last.
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

/// The most runs `rows` bands of `w` columns can have (⌈w/2⌉ a band): the room a reused
/// labeler makes on its first call on a shape, since a band's runs and nodes follow the lattice
/// (a checkerboard, the most runs a lattice of rows can have, is one run a band).
pub(in crate::cpu) fn most_band_runs(rows: usize, w: usize) -> usize {
    rows * w.div_ceil(2)
}
