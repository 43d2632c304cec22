//! Per-lattice statistics: cluster counts, the cluster-size distribution `n_s`, the mean cluster
//! size `S` and the percolation strength `P∞`.

use super::size_distribution::SizeDistribution;
use super::table::ClusterTable;

/// Which clusters count as "infinite" (percolating) for the primed sums of `n_s` and `S` and for
/// `P∞`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Percolating {
    /// Wraps (periodic axis) or spans (open axis) along `x` or along `y` (the default).
    #[default]
    Either,
    /// Wraps or spans along `x`.
    X,
    /// Wraps or spans along `y`.
    Y,
    /// Wraps or spans along both axes (one cluster doing both).
    Both,
}

impl Percolating {
    /// Whether a cluster with these flags counts as percolating.
    pub fn test(self, along_x: bool, along_y: bool) -> bool {
        match self {
            Percolating::Either => along_x || along_y,
            Percolating::X => along_x,
            Percolating::Y => along_y,
            Percolating::Both => along_x && along_y,
        }
    }
}

/// What a percolation study records about one lattice (see [`ClusterTable::stats`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LatticeStats {
    /// Sites in the lattice, `h · w`.
    pub sites: u64,
    /// Sites in clusters.
    pub occupied: u64,
    /// Number of clusters.
    pub clusters: usize,
    /// Size of the largest cluster (0 without clusters).
    pub largest: u64,
    /// Label of the largest cluster (the smallest such label on ties; 0 without clusters).
    pub largest_label: u32,
    /// Number of percolating clusters (by the rule the stats were computed with).
    pub percolating: usize,
    /// Mean cluster size `S = Σ′ s² n_s / Σ′ s n_s`, the sums over the clusters that do not
    /// percolate: the mean size of the cluster holding a site picked at random among their
    /// sites. NaN when every cluster percolates or there are none.
    pub mean_size: f64,
    /// `P∞`: the fraction of all sites (`h · w`) that belong to percolating clusters.
    pub p_infinity: f64,
    /// Some cluster wraps around the periodic `x` axis.
    pub wraps_x: bool,
    /// Some cluster wraps around the periodic `y` axis.
    pub wraps_y: bool,
    /// Some single cluster wraps around both axes (Newman–Ziff's `R^(b)` event on a torus).
    pub wraps_both: bool,
    /// Some cluster wraps around either axis (`R^(e)`).
    pub wraps_either: bool,
    /// Some cluster spans the open `x` axis (touches columns 0 and `w − 1`).
    pub spans_x: bool,
    /// Some cluster spans the open `y` axis.
    pub spans_y: bool,
}

impl ClusterTable {
    /// Statistics of the lattice with [`Percolating::Either`]: a cluster that wraps or spans
    /// along either axis is left out of `S` and counted in `P∞`.
    pub fn stats(&self) -> LatticeStats {
        self.stats_with(Percolating::Either)
    }

    /// Whether cluster row `i` percolates by `rule`.
    fn percolates_by(&self, i: usize, rule: Percolating) -> bool {
        rule.test(
            self.wraps_x[i] || self.spans_x[i],
            self.wraps_y[i] || self.spans_y[i],
        )
    }

    /// Statistics of the lattice, with `rule` deciding which clusters percolate.
    ///
    /// ```
    /// use clusterlab::{analyze, Boundary, Connectivity};
    /// use ndarray::array;
    ///
    /// let lattice = array![[1u8, 1, 1], [0, 0, 0], [1, 0, 1]];
    /// let stats = analyze(lattice.view(), Connectivity::Four, Boundary::Open)?.stats();
    /// assert_eq!((stats.clusters, stats.largest), (3, 3));
    /// // The top row spans x; the two single sites are the finite clusters: S = (1 + 1) / 2.
    /// assert!(stats.spans_x && !stats.spans_y);
    /// assert_eq!(stats.mean_size, 1.0);
    /// assert_eq!(stats.p_infinity, 3.0 / 9.0);
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    pub fn stats_with(&self, rule: Percolating) -> LatticeStats {
        let (h, w) = self.shape;
        let sites = (h * w) as u64;
        let mut occupied = 0u64;
        let mut largest = 0u64;
        let mut largest_label = 0u32;
        let mut percolating = 0usize;
        let mut infinite_sites = 0u64;
        let (mut s1, mut s2) = (0f64, 0f64);
        for (i, &s) in self.size.iter().enumerate() {
            occupied += s;
            if s > largest {
                largest = s;
                largest_label = i as u32 + 1;
            }
            if self.percolates_by(i, rule) {
                percolating += 1;
                infinite_sites += s;
            } else {
                s1 += s as f64;
                s2 += (s as f64) * (s as f64);
            }
        }
        let any = |a: &ndarray::Array1<bool>| a.iter().any(|&b| b);
        let wraps_both = self
            .wraps_x
            .iter()
            .zip(&self.wraps_y)
            .any(|(&x, &y)| x && y);
        LatticeStats {
            sites,
            occupied,
            clusters: self.count(),
            largest,
            largest_label,
            percolating,
            mean_size: if s1 > 0.0 { s2 / s1 } else { f64::NAN },
            p_infinity: if sites > 0 {
                infinite_sites as f64 / sites as f64
            } else {
                0.0
            },
            wraps_x: any(&self.wraps_x),
            wraps_y: any(&self.wraps_y),
            wraps_both,
            wraps_either: any(&self.wraps_x) || any(&self.wraps_y),
            spans_x: any(&self.spans_x),
            spans_y: any(&self.spans_y),
        }
    }

    /// The cluster-size distribution `n_s`: `(s, n_s)` pairs in increasing `s` for every size
    /// that occurs, `n_s` being the number of clusters of `s` sites per lattice site (`h · w`).
    /// With `exclude_percolating`, clusters that wrap or span along either axis are left out
    /// (as in `Σ′`). To average over many lattices, or for the counts and log bins, use a
    /// [`SizeDistribution`] (this is [`SizeDistribution::from_table`]'s `n_s`).
    ///
    /// ```
    /// use clusterlab::{analyze, Boundary, Connectivity};
    /// use ndarray::array;
    ///
    /// let lattice = array![[1u8, 0, 1, 1], [0, 0, 0, 0], [1, 0, 0, 1]];
    /// let table = analyze(lattice.view(), Connectivity::Four, Boundary::Open)?;
    /// assert_eq!(table.size_distribution(false), vec![(1, 3.0 / 12.0), (2, 1.0 / 12.0)]);
    /// # Ok::<(), clusterlab::Error>(())
    /// ```
    pub fn size_distribution(&self, exclude_percolating: bool) -> Vec<(u64, f64)> {
        SizeDistribution::from_table(self, exclude_percolating).ns()
    }
}
