//! The sums the pass accumulates per cluster (or per piece): moments and perimeter counts.

/// A per-label accumulator: an empty value and a way to combine two partial results.
pub(crate) trait Merge: Copy + Send + Sync {
    /// The value of a label that no site has touched.
    const EMPTY: Self;
    /// Adds `other`'s partial result to `self`.
    fn merge(&mut self, other: &Self);
}

impl Merge for u64 {
    const EMPTY: Self = 0;
    #[inline]
    fn merge(&mut self, other: &Self) {
        *self += *other;
    }
}

/// Sums over a cluster's (or piece's) sites, in lattice coordinates: one 64-byte cache line (the
/// pass updates these at random-ish labels, so their size matters). The sums of squares are
/// exact 96-bit integers (`hi · 2⁶⁴ + lo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Moments {
    pub sx: u64,
    pub sy: u64,
    sxx_lo: u64,
    syy_lo: u64,
    pub size: u32,
    pub x_min: u32,
    pub x_max: u32,
    pub y_min: u32,
    pub y_max: u32,
    sxx_hi: u32,
    syy_hi: u32,
}

/// `(lo, hi) += v`, 96-bit.
#[inline]
fn add96(lo: &mut u64, hi: &mut u32, v: u128) {
    let (l, carry) = lo.overflowing_add(v as u64);
    *lo = l;
    *hi = hi.wrapping_add((v >> 64) as u32 + u32::from(carry));
}

impl Merge for Moments {
    const EMPTY: Self = Moments {
        sx: 0,
        sy: 0,
        sxx_lo: 0,
        syy_lo: 0,
        size: 0,
        x_min: u32::MAX,
        x_max: 0,
        y_min: u32::MAX,
        y_max: 0,
        sxx_hi: 0,
        syy_hi: 0,
    };
    #[inline]
    fn merge(&mut self, o: &Self) {
        self.size += o.size;
        self.sx += o.sx;
        self.sy += o.sy;
        add96(&mut self.sxx_lo, &mut self.sxx_hi, o.sxx());
        add96(&mut self.syy_lo, &mut self.syy_hi, o.syy());
        self.x_min = self.x_min.min(o.x_min);
        self.x_max = self.x_max.max(o.x_max);
        self.y_min = self.y_min.min(o.y_min);
        self.y_max = self.y_max.max(o.y_max);
    }
}

/// `Σ_{i=0}^{n-1} i²` for a run of `n` sites, without 128-bit division on the common path.
#[inline]
fn squares_below(n: u64) -> u128 {
    if n < 1 << 20 {
        u128::from((n.saturating_sub(1)) * n * (2 * n).saturating_sub(1) / 6)
    } else {
        let n = u128::from(n);
        (n - 1) * n * (2 * n - 1) / 6
    }
}

impl Moments {
    /// Moments from their parts (the GPU's exact 64-bit sums).
    #[cfg(feature = "cuda")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        size: u32,
        (x_min, x_max, y_min, y_max): (u32, u32, u32, u32),
        sx: u64,
        sy: u64,
        sxx: u64,
        syy: u64,
    ) -> Moments {
        Moments {
            sx,
            sy,
            sxx_lo: sxx,
            syy_lo: syy,
            size,
            x_min,
            x_max,
            y_min,
            y_max,
            sxx_hi: 0,
            syy_hi: 0,
        }
    }

    /// The same sites moved `dy` rows down (a strip's pieces into the whole lattice's
    /// coordinates); exact, as the sums are.
    #[cfg(feature = "cuda")]
    pub(crate) fn translated_y(&self, dy: u32) -> Moments {
        if self.size == 0 || dy == 0 {
            return *self;
        }
        let (n, d) = (u128::from(self.size), u128::from(dy));
        let sy = u128::from(self.sy);
        let mut m = *self;
        m.sy = self.sy + u64::from(self.size) * u64::from(dy);
        let syy = self.syy() + 2 * d * sy + n * d * d;
        m.syy_lo = syy as u64;
        m.syy_hi = (syy >> 64) as u32;
        m.y_min = self.y_min + dy;
        m.y_max = self.y_max + dy;
        m
    }

    /// `Σ x²`.
    pub(crate) fn sxx(&self) -> u128 {
        (u128::from(self.sxx_hi) << 64) | u128::from(self.sxx_lo)
    }

    /// `Σ y²`.
    pub(crate) fn syy(&self) -> u128 {
        (u128::from(self.syy_hi) << 64) | u128::from(self.syy_lo)
    }

    /// Adds the run of sites `x0..=x1` of row `y`.
    #[inline]
    pub(crate) fn add_run(&mut self, y: u32, x0: u32, x1: u32) {
        let n = u64::from(x1 - x0 + 1);
        self.size += n as u32;
        // (x0 + x1) and n have opposite parities: the product is even.
        self.sx += (u64::from(x0) + u64::from(x1)) * n / 2;
        // Σ (x0 + i)² over i < n = n x0² + 2 x0 Σ i + Σ i².
        let x0w = u64::from(x0);
        let yw = u64::from(y);
        self.sy += n * yw;
        if x1 < 1 << 20 && y < 1 << 20 {
            // Both terms are below 2⁶¹: 64-bit arithmetic, a carry into the high word.
            let sxx = n * x0w * x0w + x0w * n * (n - 1) + (n - 1) * n * (2 * n - 1) / 6;
            let (l, c) = self.sxx_lo.overflowing_add(sxx);
            self.sxx_lo = l;
            self.sxx_hi += u32::from(c);
            let (l, c) = self.syy_lo.overflowing_add(n * yw * yw);
            self.syy_lo = l;
            self.syy_hi += u32::from(c);
        } else {
            let sxx = u128::from(n) * u128::from(x0w * x0w)
                + 2 * u128::from(x0w) * u128::from(n * (n - 1) / 2)
                + squares_below(n);
            add96(&mut self.sxx_lo, &mut self.sxx_hi, sxx);
            add96(
                &mut self.syy_lo,
                &mut self.syy_hi,
                u128::from(n) * u128::from(yw * yw),
            );
        }
        self.x_min = self.x_min.min(x0);
        self.x_max = self.x_max.max(x1);
        self.y_min = self.y_min.min(y);
        self.y_max = self.y_max.max(y);
    }
}

/// Perimeter counts of one cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Perimeter {
    /// Distinct sites outside the cluster that neighbour it.
    pub site: u64,
    /// (cluster site, outside neighbour) pairs, per direction.
    pub bond: u64,
    /// Perimeter sites on the outside (see the module docs of `analysis`).
    pub hull: u64,
}

impl Merge for Perimeter {
    const EMPTY: Self = Perimeter {
        site: 0,
        bond: 0,
        hull: 0,
    };
    /// Wrapping: the occupancy pass adds bonds and subtracts repeats in any order, so partial
    /// sums may be "negative"; the totals are exact.
    #[inline]
    fn merge(&mut self, o: &Self) {
        self.site = self.site.wrapping_add(o.site);
        self.bond = self.bond.wrapping_add(o.bond);
        self.hull = self.hull.wrapping_add(o.hull);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_sums_of_squares_are_exact_past_64_bits() {
        let mut m = Moments::EMPTY;
        // Runs far out on a very wide row: Σ x² exceeds 2^64.
        let x0 = u32::MAX - 1_000_000;
        for _ in 0..3 {
            m.add_run(7, x0, x0 + 999_999);
        }
        let want: u128 = 3
            * (u128::from(x0)..u128::from(x0) + 1_000_000)
                .map(|x| x * x)
                .sum::<u128>();
        assert!(want > u128::from(u64::MAX));
        assert_eq!(m.sxx(), want);
        assert_eq!(m.syy(), 3 * 1_000_000 * 49);
        let mut a = Moments::EMPTY;
        a.add_run(1, x0, x0 + 999_999);
        let mut b = a;
        b.merge(&a);
        b.merge(&a);
        assert_eq!(b.sxx(), want);
        assert_eq!(std::mem::size_of::<Moments>(), 64);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn moments_translated_down_equal_the_runs_added_lower() {
        let runs = [(0u32, 3u32, 9u32), (1, 0, 0), (4, 2, 30), (9, 5, 6)];
        for dy in [0u32, 1, 17, 1 << 20, 3_000_000_000] {
            let (mut local, mut global) = (Moments::EMPTY, Moments::EMPTY);
            for &(y, x0, x1) in &runs {
                local.add_run(y, x0, x1);
                global.add_run(y + dy, x0, x1);
            }
            assert_eq!(local.translated_y(dy), global, "dy = {dy}");
        }
        assert_eq!(Moments::EMPTY.translated_y(5), Moments::EMPTY);
    }
}
