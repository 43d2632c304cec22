//! Fixed-`p` samples, shared by the CPU and GPU batches: the per-sample record and the exact
//! counter layout of the lattices, so that both backends generate the same lattice for the same
//! `(seed, index, p)`.
//!
//! # Counter layout
//! Philox 4×32-10 (`rand_philox::philox4x32_10`), key = `[seed mod 2³², seed >> 32]` (the seed
//! verbatim), counter = `[b, index mod 2³², index >> 32, t mod 2³²]` where `index` is the
//! sample's number, `t = floor(p · 2³²)` the occupation threshold (`2³²` for `p = 1`) and `b` the
//! block number. Site `i = y · w + x` (row-major, `w` the width) is occupied when word `i mod 4`
//! of block `b = i / 4` is below `t`. The threshold in the counter makes samples at different
//! `p` independent, so that the binomial errors of the points of a curve are independent too.

use crate::{Boundary, Connectivity, Error, Result};
use ndarray::Array2;
use rand_philox::Philox;

/// The largest lattice a batch takes (sites; sizes and counts are `u32`).
pub const MAX_BATCH_SITES: usize = 1 << 30;

/// A batch of fixed-`p` samples: the lattice, `p`, and which samples of the seed's stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchSpec {
    /// 4 or 8.
    pub connectivity: Connectivity,
    /// Open, cylinder or torus.
    pub boundary: Boundary,
    /// `L`, columns.
    pub width: usize,
    /// `M`, rows.
    pub height: usize,
    /// Occupation probability.
    pub p: f64,
    /// The seed (the Philox key).
    pub seed: u64,
    /// The first sample index.
    pub first: u64,
    /// Samples in the batch.
    pub count: u64,
    /// Whether to accumulate the `n_s` histogram of the clusters that do not percolate.
    pub histogram: bool,
}

impl BatchSpec {
    /// A checked batch without histogram.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero extent, more than [`MAX_BATCH_SITES`] sites, `p`
    /// outside `[0, 1]` or an index range past `2⁶⁴`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        connectivity: Connectivity,
        boundary: Boundary,
        width: usize,
        height: usize,
        p: f64,
        seed: u64,
        first: u64,
        count: u64,
    ) -> Result<BatchSpec> {
        let s = BatchSpec {
            connectivity,
            boundary,
            width,
            height,
            p,
            seed,
            first,
            count,
            histogram: false,
        };
        s.check()?;
        Ok(s)
    }

    /// Checks the batch.
    ///
    /// # Errors
    /// As [`BatchSpec::new`].
    pub fn check(&self) -> Result<()> {
        check_shape(self.width, self.height)?;
        if !(0.0..=1.0).contains(&self.p) {
            return Err(Error::InvalidArgument(format!(
                "p must be in [0, 1], not {}",
                self.p
            )));
        }
        if self.first.checked_add(self.count).is_none() {
            return Err(Error::InvalidArgument(
                "sample indices past 2^64".to_string(),
            ));
        }
        Ok(())
    }

    /// Sites per lattice.
    pub fn sites(&self) -> usize {
        self.width * self.height
    }

    /// The lattice of sample `index` (1 = occupied), as both backends generate it.
    pub fn lattice(&self, index: u64) -> Array2<u8> {
        let mut a = Array2::zeros((self.height, self.width));
        fill_sites(
            self.seed,
            index,
            threshold(self.p),
            a.as_slice_mut().expect("standard layout"),
        );
        a
    }
}

pub(crate) fn check_shape(width: usize, height: usize) -> Result<()> {
    if width == 0 || height == 0 || width.saturating_mul(height) > MAX_BATCH_SITES {
        return Err(Error::InvalidArgument(format!(
            "a batch lattice needs 1 to {MAX_BATCH_SITES} sites, not {width} × {height}"
        )));
    }
    Ok(())
}

/// The statistics of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchStats {
    /// Per sample, in index order.
    pub samples: Vec<SampleStats>,
    /// `ns[s]`: clusters of `s` sites that do not percolate, summed over the batch (`sites + 1`
    /// bins; empty when the histogram was not asked for).
    pub ns: Vec<u64>,
}

/// One fixed-`p` sample reduced to its statistics (the layout the GPU kernel writes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleStats {
    /// [`SampleStats::X`], [`SampleStats::Y`], [`SampleStats::BOTH`] bits.
    pub flags: u32,
    /// Occupied sites.
    pub occupied: u32,
    /// Size of the largest cluster (0 when none).
    pub largest: u32,
    /// Sites in clusters that percolate (wrap along a periodic axis or span an open one).
    pub percolating: u32,
    /// `Σ′ s²` over the clusters that do not percolate.
    pub finite_s2: u64,
}

impl SampleStats {
    /// Some cluster percolates along `x` (`R^(h)`).
    pub const X: u32 = 1;
    /// Some cluster percolates along `y` (`R^(v)`).
    pub const Y: u32 = 2;
    /// One cluster percolates along both axes (`R^(b)`).
    pub const BOTH: u32 = 4;

    /// Whether some cluster percolates along `x`.
    pub fn along_x(&self) -> bool {
        self.flags & Self::X != 0
    }
    /// Whether some cluster percolates along `y`.
    pub fn along_y(&self) -> bool {
        self.flags & Self::Y != 0
    }
    /// Whether one cluster percolates along both axes.
    pub fn both(&self) -> bool {
        self.flags & Self::BOTH != 0
    }
}

/// `floor(p · 2³²)`: a site is occupied when its word is below it (exact for `p` = 0 and 1).
pub fn threshold(p: f64) -> u64 {
    if p <= 0.0 {
        0
    } else if p >= 1.0 {
        1 << 32
    } else {
        (p * 4_294_967_296.0) as u64
    }
}

/// Fills `out` (the `w · h` sites of one lattice, row-major) with sample `index` of `seed` at
/// threshold `t` (1 = occupied).
pub(crate) fn fill_sites(seed: u64, index: u64, t: u64, out: &mut [u8]) {
    let counter = u128::from(index) << 32 | u128::from(t as u32) << 96;
    let mut rng = Philox::new([seed as u32, (seed >> 32) as u32], counter);
    let mut words = [0u32; 1024];
    for chunk in out.chunks_mut(words.len()) {
        // Whole blocks only: the stream stays block-aligned from chunk to chunk.
        let fill = chunk.len().next_multiple_of(4);
        rng.fill_u32(&mut words[..fill]);
        for (o, &w) in chunk.iter_mut().zip(&words) {
            *o = u8::from(u64::from(w) < t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_philox::philox4x32_10;

    /// The stream fill gives each site the word the documented counter names.
    #[test]
    fn sites_follow_the_documented_counter() {
        let (seed, index) = (0x1234_5678_9abc_def0u64, (5u64 << 32) | 77);
        let t = threshold(0.4);
        let mut out = vec![0u8; 2500];
        fill_sites(seed, index, t, &mut out);
        for (i, &o) in out.iter().enumerate() {
            let b = philox4x32_10(
                [(i / 4) as u32, 77, 5, t as u32],
                [0x9abc_def0, 0x1234_5678],
            );
            assert_eq!(o, u8::from(u64::from(b[i % 4]) < t), "site {i}");
        }
        let mut all = vec![0u8; 10];
        fill_sites(1, 2, threshold(1.0), &mut all);
        assert!(all.iter().all(|&o| o == 1));
        fill_sites(1, 2, threshold(0.0), &mut all);
        assert!(all.iter().all(|&o| o == 0));
    }
}
