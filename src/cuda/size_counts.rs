//! What the GPU gives a simulation step without a table: cluster-size counts and the clusters
//! that wrap or span ([`CudaAnalyzer::size_counts`](super::CudaAnalyzer::size_counts)), and
//! their `n_s` through the crate's one [`SizeDistribution`].

use crate::measure::size_distribution::SizeDistribution;
use std::collections::BTreeMap;

/// A cluster that wraps (periodic axis) or spans (open axis), from [`SizeCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// Cluster-size counts and percolation flags without a table ([`CudaAnalyzer::size_counts`](super::CudaAnalyzer::size_counts)).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SizeCounts {
    /// The lattice's shape `(height, width)`.
    pub shape: (usize, usize),
    /// `(s, number of clusters of s sites)` in increasing `s`, every cluster counted.
    pub counts: Vec<(u64, u64)>,
    /// The clusters that wrap or span along either axis.
    pub percolating: Vec<PercolatingCluster>,
}

impl SizeCounts {
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

    /// `n_s` as [`ClusterTable::size_distribution`](crate::ClusterTable::size_distribution) gives it: `(s, n_s)` pairs, `n_s` per lattice
    /// site; with `exclude_percolating`, clusters that wrap or span along either axis are left
    /// out.
    pub fn size_distribution(&self, exclude_percolating: bool) -> Vec<(u64, f64)> {
        let sites = (self.shape.0 * self.shape.1).max(1) as f64;
        let mut counts: BTreeMap<u64, u64> = self.counts.iter().copied().collect();
        if exclude_percolating {
            for p in &self.percolating {
                if let Some(c) = counts.get_mut(&p.size) {
                    *c -= 1;
                }
            }
        }
        counts
            .into_iter()
            .filter(|&(_, c)| c > 0)
            .map(|(s, c)| (s, c as f64 / sites))
            .collect()
    }

    /// Mean cluster size `S = Σ′ s² n_s / Σ′ s n_s` over the clusters that do not percolate
    /// (NaN when none is left), as [`crate::LatticeStats::mean_size`].
    pub fn mean_size(&self) -> f64 {
        let (mut s1, mut s2) = (0f64, 0f64);
        for (s, n) in self.size_distribution(true) {
            let s = s as f64;
            s1 += s * n;
            s2 += s * s * n;
        }
        s2 / s1
    }

    /// `P∞`: the fraction of all sites in percolating clusters.
    pub fn p_infinity(&self) -> f64 {
        let sites = (self.shape.0 * self.shape.1).max(1) as f64;
        self.percolating.iter().map(|p| p.size as f64).sum::<f64>() / sites
    }
}

impl SizeDistribution {
    /// Adds one lattice's GPU size counts (feature `cuda`); with `exclude_percolating`, the
    /// clusters that wrap or span are left out, as [`SizeDistribution::add_table`] leaves them.
    pub fn add_size_counts(&mut self, counts: &SizeCounts, exclude_percolating: bool) {
        let mut c: BTreeMap<u64, u64> = counts.counts.iter().copied().collect();
        let mut excluded = 0;
        if exclude_percolating {
            for p in &counts.percolating {
                if let Some(n) = c.get_mut(&p.size).filter(|n| **n > 0) {
                    *n -= 1;
                    excluded += 1;
                }
            }
        }
        let (h, w) = counts.shape;
        self.add_counts(c, (h * w) as u64, excluded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_size_counts_convert() {
        let counts = SizeCounts {
            shape: (4, 5),
            counts: vec![(1, 3), (6, 1)],
            percolating: vec![PercolatingCluster {
                size: 6,
                spans_x: true,
                ..PercolatingCluster::default()
            }],
        };
        for exclude in [false, true] {
            let mut d = SizeDistribution::new();
            d.add_size_counts(&counts, exclude);
            assert_eq!(d.ns(), counts.size_distribution(exclude), "{exclude}");
            assert_eq!(d.excluded(), u64::from(exclude));
        }
    }
}
