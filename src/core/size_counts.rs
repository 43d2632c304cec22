//! What a simulation step needs of its clusters without a table or a label image: the number
//! of clusters of each size and the clusters that wrap or span ([`SizeCounts`]). Every backend
//! fills the same struct (`Labeler::size_counts_into`, `Analyzer::size_counts_into`, the GPU's
//! `CudaAnalyzer::size_counts`), so it sits in the bottom layer beside the backend interface.

/// A cluster that wraps (periodic axis) or spans (open axis), from [`SizeCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PercolatingCluster {
    /// Sites.
    pub size: u64,
    /// Wraps around the periodic `x` axis (by winding).
    pub wraps_x: bool,
    /// Wraps around the periodic `y` axis.
    pub wraps_y: bool,
    /// Touches columns 0 and `w − 1` of an open `x` axis.
    pub spans_x: bool,
    /// Touches rows 0 and `h − 1` of an open `y` axis.
    pub spans_y: bool,
}

/// Cluster-size counts and percolation flags of one lattice, without a table.
///
/// Filled by [`Labeler::size_counts_into`](crate::Labeler::size_counts_into) and
/// [`Analyzer::size_counts_into`](crate::Analyzer::size_counts_into) (CPU or GPU, the same
/// numbers) and by the GPU's `CudaAnalyzer::size_counts`. The vectors are the caller's: a struct
/// kept from step to step is cleared and refilled in place, so that after a first call on the
/// shape (with as many runs of joined sites, see `Labeler::size_counts_into`) the CPU allocates
/// nothing.
/// Every method below reads the fields without allocating, except
/// [`SizeCounts::size_distribution`].
///
/// The definitions are [`ClusterTable`](crate::ClusterTable)'s and
/// [`LatticeStats`](crate::LatticeStats)'s: a cluster *percolates* when it wraps (by winding)
/// or spans along either axis, and [`SizeCounts::mean_size`] and [`SizeCounts::p_infinity`]
/// equal [`ClusterTable::stats`](crate::ClusterTable::stats)'s `mean_size` and `p_infinity`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SizeCounts {
    /// The lattice's shape `(height, width)`.
    pub shape: (usize, usize),
    /// `(s, number of clusters of s sites)` in increasing `s`, every cluster counted.
    pub counts: Vec<(u64, u64)>,
    /// The clusters that wrap or span along either axis, in increasing order (by size, then
    /// flags).
    pub percolating: Vec<PercolatingCluster>,
}

impl SizeCounts {
    /// Empty counts (for a buffer that a call fills).
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the counts for a lattice of `shape`, keeping the vectors' capacity.
    pub(crate) fn reset(&mut self, shape: (usize, usize)) {
        self.shape = shape;
        self.counts.clear();
        self.percolating.clear();
    }

    /// Appends to `counts`, in increasing `s`, a dense histogram's counts (`hist[s]` clusters of
    /// `s` sites, index 0 unused) and then the sizes listed one by one in `tail`, all above the
    /// histogram's (sorted here, so that a few thousand cost less than an ordered map).
    pub(crate) fn push_counts(&mut self, hist: &[u64], tail: &mut [u64]) {
        debug_assert!(tail.iter().all(|&s| s as usize >= hist.len()));
        for (s, &c) in hist.iter().enumerate().skip(1) {
            if c > 0 {
                self.counts.push((s as u64, c));
            }
        }
        tail.sort_unstable();
        for &s in tail.iter() {
            match self.counts.last_mut() {
                Some((last, c)) if *last == s => *c += 1,
                _ => self.counts.push((s, 1)),
            }
        }
    }

    /// The number of clusters.
    pub fn clusters(&self) -> usize {
        self.counts.iter().map(|&(_, c)| c as usize).sum()
    }

    /// Sites in clusters.
    pub fn occupied(&self) -> u64 {
        self.counts.iter().map(|&(s, c)| s * c).sum()
    }

    /// The largest cluster's size (0 without clusters).
    pub fn largest(&self) -> u64 {
        self.counts.last().map_or(0, |&(s, _)| s)
    }

    /// Some cluster wraps around `x`.
    pub fn wraps_x(&self) -> bool {
        self.percolating.iter().any(|p| p.wraps_x)
    }

    /// Some cluster wraps around `y`.
    pub fn wraps_y(&self) -> bool {
        self.percolating.iter().any(|p| p.wraps_y)
    }

    /// Some single cluster wraps around both axes.
    pub fn wraps_both(&self) -> bool {
        self.percolating.iter().any(|p| p.wraps_x && p.wraps_y)
    }

    /// Some cluster spans the open `x` axis.
    pub fn spans_x(&self) -> bool {
        self.percolating.iter().any(|p| p.spans_x)
    }

    /// Some cluster spans the open `y` axis.
    pub fn spans_y(&self) -> bool {
        self.percolating.iter().any(|p| p.spans_y)
    }

    /// `n_s` as [`ClusterTable::size_distribution`](crate::ClusterTable::size_distribution)
    /// gives it: `(s, n_s)` pairs, `n_s` per lattice site; with `exclude_percolating`, clusters
    /// that wrap or span along either axis are left out.
    pub fn size_distribution(&self, exclude_percolating: bool) -> Vec<(u64, f64)> {
        let sites = (self.shape.0 * self.shape.1).max(1) as f64;
        self.counts
            .iter()
            .filter_map(|&(s, c)| {
                let left = if exclude_percolating {
                    c - self.percolating_of_size(s)
                } else {
                    c
                };
                (left > 0).then(|| (s, left as f64 / sites))
            })
            .collect()
    }

    /// The number of percolating clusters of `s` sites.
    pub(crate) fn percolating_of_size(&self, s: u64) -> u64 {
        self.percolating.iter().filter(|p| p.size == s).count() as u64
    }

    /// Mean cluster size `S = Σ′ s² n_s / Σ′ s n_s` over the clusters that do not percolate
    /// (NaN when none is left), as [`LatticeStats::mean_size`](crate::LatticeStats::mean_size).
    pub fn mean_size(&self) -> f64 {
        // Exact integer sums (`n_s`'s common factor 1 / sites cancels).
        let (mut s1, mut s2) = (0u128, 0u128);
        for &(s, c) in &self.counts {
            s1 += u128::from(s) * u128::from(c);
            s2 += u128::from(s) * u128::from(s) * u128::from(c);
        }
        for p in &self.percolating {
            s1 -= u128::from(p.size);
            s2 -= u128::from(p.size) * u128::from(p.size);
        }
        if s1 == 0 {
            f64::NAN
        } else {
            s2 as f64 / s1 as f64
        }
    }

    /// `P∞`: the fraction of all sites in percolating clusters.
    pub fn p_infinity(&self) -> f64 {
        let sites = (self.shape.0 * self.shape.1).max(1) as f64;
        self.percolating.iter().map(|p| p.size).sum::<u64>() as f64 / sites
    }
}
