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
//!
//! Bond percolation (CONVENTIONS.md, "Bonds": `right[y, x]` joins `(y, x)` and `(y, x + 1)`,
//! `down[y, x]` joins `(y, x)` and `(y + 1, x)`) reads the words of the same key and counter
//! words 1..=3 from block [`BOND_BLOCKS`] on: bond word `j = 2 i + d` of site `i` (`d` = 0 for
//! `right`, 1 for `down`) is word `j mod 4` of block `2³¹ + j / 4`, and the bond is open when it
//! is below `t`. Every site has both words, also where an open axis ignores the bond, so the
//! configuration does not depend on the boundary. Site blocks stay below `2²⁸` (at most `2³⁰`
//! sites), so a site lattice and a bond configuration of the same `(seed, index, p)` share no
//! random number.

use crate::core::bits::words;
use crate::core::bonds::PackedBonds;
use crate::core::size_counts::SizeCounts;
use crate::{Boundary, Connectivity, Error, Result};
use ndarray::Array2;
use rand_philox::Philox;

/// Counter word 0 of the first block of bond words (bit 31 set: disjoint from the site blocks).
pub const BOND_BLOCKS: u32 = 1 << 31;

/// The largest lattice a batch takes (sites; sizes and counts are `u32`).
pub const MAX_BATCH_SITES: usize = 1 << 30;

/// A batch of fixed-`p` samples: the model, the lattice, `p`, and which samples of the seed's
/// stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchSpec {
    /// Bond percolation (every site present, each `right`/`down` bond open with probability
    /// `p`; 4-connectivity) instead of site percolation.
    pub bonds: bool,
    /// 4 or 8 (site percolation); 4 for bonds.
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
    /// Whether to accumulate the `n_s` histogram of the clusters that do not percolate
    /// (isolated sites count as clusters of size 1 in bond percolation).
    pub histogram: bool,
}

impl BatchSpec {
    /// A checked batch of site percolation without histogram.
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
            bonds: false,
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

    /// A checked batch of bond percolation (4-connectivity) without histogram.
    ///
    /// ```
    /// use clusterlab::percolation::BatchSpec;
    /// use clusterlab::Boundary;
    ///
    /// let spec = BatchSpec::bond(Boundary::Periodic, 8, 6, 0.5, 1, 0, 10)?;
    /// let (right, down) = spec.bond_masks(3);
    /// assert_eq!(right.dim(), (6, 8));
    /// assert!(down.iter().all(|&b| b <= 1));
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`BatchSpec::new`].
    pub fn bond(
        boundary: Boundary,
        width: usize,
        height: usize,
        p: f64,
        seed: u64,
        first: u64,
        count: u64,
    ) -> Result<BatchSpec> {
        let s = BatchSpec {
            bonds: true,
            ..BatchSpec::new(
                Connectivity::Four,
                boundary,
                width,
                height,
                p,
                seed,
                first,
                count,
            )?
        };
        s.check()?;
        Ok(s)
    }

    /// Checks the batch.
    ///
    /// # Errors
    /// As [`BatchSpec::new`]; [`Error::InvalidArgument`] for bonds with 8-connectivity.
    pub fn check(&self) -> Result<()> {
        check_shape(self.width, self.height)?;
        if self.bonds && self.connectivity != Connectivity::Four {
            return Err(Error::InvalidArgument(
                "bond percolation is defined on the 4-neighbour square lattice: use 4-connectivity"
                    .into(),
            ));
        }
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

    /// The lattice of sample `index` (1 = occupied) of site percolation, as both backends
    /// generate it.
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

    /// The bond configuration of sample `index` of bond percolation, as both backends generate
    /// it: the `right` and `down` masks (1 = open), every bond drawn (an open axis ignores its
    /// last column's `right` or last row's `down` bonds when labeling).
    pub fn bond_masks(&self, index: u64) -> (Array2<u8>, Array2<u8>) {
        let mut b = PackedBonds::default();
        self.fill_bonds(index, &mut b);
        let (h, w) = (self.height, self.width);
        (
            Array2::from_shape_fn((h, w), |(y, x)| u8::from(b.right(y, x))),
            Array2::from_shape_fn((h, w), |(y, x)| u8::from(b.down(y, x))),
        )
    }

    /// Writes the bond configuration of sample `index` into `bonds` (reshaped to the batch's
    /// lattice).
    pub(crate) fn fill_bonds(&self, index: u64, bonds: &mut PackedBonds) {
        bonds
            .reset(self.height, self.width)
            .expect("checked: at most MAX_BATCH_SITES sites");
        let (right, down) = bonds.words_mut();
        fill_bonds(self.seed, index, threshold(self.p), self.width, right, down);
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

    /// The statistics of one lattice from its cluster-size counts (how the GPU serves lattices
    /// whose edge tables do not fit in a block's shared memory); adds the clusters that do not
    /// percolate to `ns` when given (`sites + 1` bins).
    pub(crate) fn from_size_counts(c: &SizeCounts, ns: Option<&mut [u64]>) -> SampleStats {
        let mut s = SampleStats {
            occupied: c.occupied() as u32,
            largest: c.largest() as u32,
            ..SampleStats::default()
        };
        let mut s2: u64 = c.counts.iter().map(|&(k, m)| k * k * m).sum();
        for p in &c.percolating {
            let (x, y) = (p.wraps_x || p.spans_x, p.wraps_y || p.spans_y);
            s.percolating += p.size as u32;
            s2 -= p.size * p.size;
            s.flags |= (u32::from(x) * Self::X) | (u32::from(y) * Self::Y);
            s.flags |= u32::from(x && y) * Self::BOTH;
        }
        s.finite_s2 = s2;
        if let Some(ns) = ns {
            for &(k, m) in &c.counts {
                ns[k as usize] += m;
            }
            for p in &c.percolating {
                ns[p.size as usize] -= 1;
            }
        }
        s
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

/// Fills the packed `right` and `down` rows (zeroed, [`words`]`(w)` words per row) with the
/// bonds of sample `index` of `seed` at threshold `t`: bond word `2 i + d` of the stream that
/// starts at block [`BOND_BLOCKS`].
pub(crate) fn fill_bonds(
    seed: u64,
    index: u64,
    t: u64,
    w: usize,
    right: &mut [u64],
    down: &mut [u64],
) {
    let counter = u128::from(BOND_BLOCKS) | u128::from(index) << 32 | u128::from(t as u32) << 96;
    let mut rng = Philox::new([seed as u32, (seed >> 32) as u32], counter);
    let nw = words(w);
    let sites = right.len() / nw.max(1) * w;
    // 512 sites (1024 words, whole blocks) at a time.
    let mut buf = [0u32; 1024];
    let (mut y, mut x) = (0usize, 0usize);
    let mut done = 0;
    while done < sites {
        let n = (sites - done).min(buf.len() / 2);
        let fill = (2 * n).next_multiple_of(4);
        rng.fill_u32(&mut buf[..fill]);
        for pair in buf[..2 * n].chunks_exact(2) {
            let (word, bit) = (y * nw + x / 64, x % 64);
            right[word] |= u64::from(u64::from(pair[0]) < t) << bit;
            down[word] |= u64::from(u64::from(pair[1]) < t) << bit;
            x += 1;
            if x == w {
                x = 0;
                y += 1;
            }
        }
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_philox::philox4x32_10;

    /// Bond word `2 i + d` is word `(2 i + d) mod 4` of block `2³¹ + (2 i + d) / 4`.
    #[test]
    fn bonds_follow_the_documented_counter() {
        let (seed, index) = (0x0fed_cba9_8765_4321u64, (3u64 << 32) | 11);
        for (w, h) in [(1, 1), (3, 5), (70, 9), (64, 2)] {
            let spec = BatchSpec::bond(Boundary::Open, w, h, 0.45, seed, 0, 1).unwrap();
            let t = threshold(0.45);
            let (right, down) = spec.bond_masks(index);
            for y in 0..h {
                for x in 0..w {
                    for (d, mask) in [&right, &down].into_iter().enumerate() {
                        let j = 2 * (y * w + x) + d;
                        let b = philox4x32_10(
                            [BOND_BLOCKS + (j / 4) as u32, 11, 3, t as u32],
                            [0x8765_4321, 0x0fed_cba9],
                        );
                        assert_eq!(
                            mask[(y, x)],
                            u8::from(u64::from(b[j % 4]) < t),
                            "{w}x{h} ({y}, {x}) {d}"
                        );
                    }
                }
            }
        }
        let spec = BatchSpec::bond(Boundary::Periodic, 5, 4, 1.0, 1, 0, 1).unwrap();
        let (r, d) = spec.bond_masks(0);
        assert!(r.iter().chain(d.iter()).all(|&b| b == 1));
        assert!(BatchSpec {
            connectivity: Connectivity::Eight,
            ..spec
        }
        .check()
        .is_err());
    }

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
