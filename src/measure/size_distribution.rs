//! The cluster-size distribution `n_s` over one or many lattices: [`SizeDistribution`].
//!
//! The one `n_s` type of the crate, independent of the `plot` feature:
//! [`ClusterTable::size_distribution`] computes through it, the charts of [`crate::plot`] draw
//! it, and the GPU's size counts convert into it.

use super::table::ClusterTable;
use crate::core::size_counts::SizeCounts;
use crate::Labels;
use std::collections::BTreeMap;

/// Cluster sizes accumulated over one or more lattices: the data of an `n_s` plot.
///
/// `n_s` is the number of clusters of `s` sites per lattice site, averaged over the lattices
/// added: the total count of such clusters divided by the total number of sites. (For lattices of
/// one size that is the mean over samples of each lattice's `n_s`, as
/// [`ClusterTable::size_distribution`] defines it.)
///
/// ```
/// use clusterlab::SizeDistribution;
///
/// let mut ns = SizeDistribution::new();
/// ns.add_sizes([1, 1, 2], 10); // a lattice of 10 sites with clusters of 1, 1 and 2 sites
/// ns.add_sizes([3], 10);
/// assert_eq!(ns.ns(), vec![(1, 2.0 / 20.0), (2, 1.0 / 20.0), (3, 1.0 / 20.0)]);
/// assert_eq!((ns.samples(), ns.clusters(), ns.largest()), (2, 4, 3));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SizeDistribution {
    counts: BTreeMap<u64, u64>,
    sites: u64,
    samples: usize,
    excluded: u64,
}

/// One bin of a [log-binned](SizeDistribution::log_binned) size distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeBin {
    /// The smallest size in the bin.
    pub s_min: u64,
    /// The largest size in the bin.
    pub s_max: u64,
    /// Where the bin is plotted: the geometric mean `√(s_min · s_max)`.
    pub s: f64,
    /// Clusters in the bin.
    pub clusters: u64,
    /// `n_s` averaged over the sizes of the bin: clusters in the bin / (sizes in the bin ·
    /// sites).
    pub ns: f64,
}

impl SizeDistribution {
    /// An empty distribution.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the clusters of one lattice's table; with `exclude_percolating`, those that wrap or
    /// span along either axis are left out (counted in [`SizeDistribution::excluded`]), as the
    /// primed sums of [`LatticeStats`](crate::LatticeStats) leave them out. The lattice's sites
    /// count in full either way.
    pub fn add_table(&mut self, table: &ClusterTable, exclude_percolating: bool) {
        let (h, w) = table.shape;
        let mut sizes: Vec<u64> = Vec::with_capacity(table.count());
        for (i, &s) in table.size.iter().enumerate() {
            if exclude_percolating && table.percolates_at(i) {
                self.excluded += 1;
            } else {
                sizes.push(s);
            }
        }
        // Sorted, each size costs one map update however many clusters have it.
        sizes.sort_unstable();
        self.add_sorted(&sizes);
        self.sites += (h * w) as u64;
        self.samples += 1;
    }

    /// A distribution of one lattice's table (see [`SizeDistribution::add_table`]).
    pub fn from_table(table: &ClusterTable, exclude_percolating: bool) -> Self {
        let mut d = Self::new();
        d.add_table(table, exclude_percolating);
        d
    }

    /// Counts sorted sizes (zeros ignored).
    fn add_sorted(&mut self, sizes: &[u64]) {
        let mut i = 0;
        while i < sizes.len() {
            let s = sizes[i];
            let n = sizes[i..].iter().take_while(|&&t| t == s).count();
            if s > 0 {
                *self.counts.entry(s).or_insert(0) += n as u64;
            }
            i += n;
        }
    }

    /// Adds the clusters of one labeled lattice (all of them: labels do not say which clusters
    /// wrap).
    pub fn add_labels(&mut self, labels: &Labels) {
        let (h, w) = labels.array().dim();
        let sizes = labels.sizes();
        self.add_sizes(sizes.into_iter().skip(1), (h * w) as u64);
    }

    /// Adds one lattice of `sites` sites whose clusters have the sizes `sizes` (zeros are
    /// ignored).
    pub fn add_sizes<I: IntoIterator<Item = u64>>(&mut self, sizes: I, sites: u64) {
        for s in sizes {
            if s > 0 {
                *self.counts.entry(s).or_insert(0) += 1;
            }
        }
        self.sites += sites;
        self.samples += 1;
    }

    /// Adds everything `other` holds (to combine distributions gathered in parallel).
    pub fn merge(&mut self, other: &SizeDistribution) {
        for (&s, &n) in &other.counts {
            *self.counts.entry(s).or_insert(0) += n;
        }
        self.sites += other.sites;
        self.samples += other.samples;
        self.excluded += other.excluded;
    }

    /// `(s, number of clusters of s sites)` for every size that occurs, in increasing `s`.
    pub fn counts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().map(|(&s, &n)| (s, n))
    }

    /// Adds one lattice of `sites` sites from its counts: `(s, number of clusters of s sites)`
    /// pairs, and `excluded` clusters left out (recorded in [`SizeDistribution::excluded`]).
    pub fn add_counts<I: IntoIterator<Item = (u64, u64)>>(
        &mut self,
        counts: I,
        sites: u64,
        excluded: u64,
    ) {
        for (s, n) in counts {
            if s > 0 && n > 0 {
                *self.counts.entry(s).or_insert(0) += n;
            }
        }
        self.sites += sites;
        self.samples += 1;
        self.excluded += excluded;
    }

    /// Adds one lattice's [`SizeCounts`] (from any backend); with `exclude_percolating`, the
    /// clusters that wrap or span are left out, as [`SizeDistribution::add_table`] leaves them.
    pub fn add_size_counts(&mut self, counts: &SizeCounts, exclude_percolating: bool) {
        let mut excluded = 0;
        let kept = counts.counts.iter().map(|&(s, c)| {
            let out = if exclude_percolating {
                counts.percolating_of_size(s).min(c)
            } else {
                0
            };
            excluded += out;
            (s, c - out)
        });
        let (h, w) = counts.shape;
        let kept: Vec<(u64, u64)> = kept.collect();
        self.add_counts(kept, (h * w) as u64, excluded);
    }

    /// The number of lattices added.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The total number of sites of the lattices added.
    pub fn sites(&self) -> u64 {
        self.sites
    }

    /// The number of clusters counted.
    pub fn clusters(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The number of clusters left out because they wrap or span.
    pub fn excluded(&self) -> u64 {
        self.excluded
    }

    /// The largest size counted (0 without clusters).
    pub fn largest(&self) -> u64 {
        self.counts.keys().next_back().copied().unwrap_or(0)
    }

    /// `(s, n_s)` for every size that occurs, in increasing `s`.
    pub fn ns(&self) -> Vec<(u64, f64)> {
        let sites = self.sites.max(1) as f64;
        self.counts
            .iter()
            .map(|(&s, &n)| (s, n as f64 / sites))
            .collect()
    }

    /// `n_s` in logarithmic bins, `bins_per_decade` to a factor of 10, without the empty bins.
    ///
    /// The bin edges are the integers `⌈10^(k / bins_per_decade)⌉`, `k = 0, 1, …` (repeated
    /// edges merged, so every bin holds at least one size): a bin from `s_min` to `s_max` holds
    /// `s_max − s_min + 1` sizes, and its `n_s` is the mean over them, zeros included — the
    /// average that keeps a power law a power law at large `s`, where most sizes never occur.
    /// With `bins_per_decade` = 0 every size that occurs is its own bin.
    ///
    /// ```
    /// use clusterlab::SizeDistribution;
    ///
    /// let mut ns = SizeDistribution::new();
    /// ns.add_sizes([1, 2, 2, 9, 10, 11, 99], 100);
    /// let bins = ns.log_binned(1); // edges 1, 10, 100: bins 1..=9, 10..=99
    /// assert_eq!((bins[0].s_min, bins[0].s_max, bins[0].clusters), (1, 9, 4));
    /// assert_eq!(bins[0].ns, 4.0 / 9.0 / 100.0);
    /// assert_eq!((bins[1].s_min, bins[1].s_max, bins[1].clusters), (10, 99, 3));
    /// assert_eq!(bins.len(), 2);
    /// ```
    pub fn log_binned(&self, bins_per_decade: u32) -> Vec<SizeBin> {
        let sites = self.sites.max(1) as f64;
        if bins_per_decade == 0 {
            return self
                .counts
                .iter()
                .map(|(&s, &n)| SizeBin {
                    s_min: s,
                    s_max: s,
                    s: s as f64,
                    clusters: n,
                    ns: n as f64 / sites,
                })
                .collect();
        }
        let largest = self.largest();
        let mut out = Vec::new();
        let mut k = 0u32;
        let mut lo = 1u64;
        while lo <= largest {
            // The next edge above `lo`.
            let mut hi = lo;
            while hi <= lo {
                k += 1;
                hi = decade_edge(k, bins_per_decade);
            }
            let s_max = hi - 1;
            let clusters: u64 = self.counts.range(lo..=s_max).map(|(_, &n)| n).sum();
            if clusters > 0 {
                let width = (s_max - lo + 1) as f64;
                out.push(SizeBin {
                    s_min: lo,
                    s_max,
                    s: ((lo as f64) * (s_max as f64)).sqrt(),
                    clusters,
                    ns: clusters as f64 / width / sites,
                });
            }
            lo = hi;
        }
        out
    }
}

/// `⌈10^(k/b)⌉`, exact at the powers of ten (where `powf` may land a hair above).
fn decade_edge(k: u32, b: u32) -> u64 {
    let e = 10f64.powf(f64::from(k) / f64::from(b));
    let r = e.round();
    if (e - r).abs() <= 1e-9 * e {
        r as u64
    } else {
        e.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decade_edges_are_exact_at_powers_of_ten() {
        for b in 1..=20 {
            for m in 0..12 {
                assert_eq!(decade_edge(m * b, b), 10u64.pow(m), "b = {b}, 10^{m}");
            }
        }
    }

    #[test]
    fn log_bins_cover_every_size_once() {
        // Against a direct count: every size 1..=largest falls in exactly one bin, and the
        // bins' clusters add up.
        for b in [1u32, 2, 3, 5, 7, 10, 20] {
            let mut ns = SizeDistribution::new();
            let sizes: Vec<u64> = (1..=5000u64).filter(|s| s % 7 != 3).collect();
            ns.add_sizes(sizes.iter().copied(), 1_000_000);
            let bins = ns.log_binned(b);
            let mut next = 1;
            for bin in &bins {
                assert!(bin.s_min <= bin.s_max);
                // Empty bins are skipped, but none are empty here except where all sizes ≡ 3.
                assert!(bin.s_min >= next);
                next = bin.s_max + 1;
                let want = sizes
                    .iter()
                    .filter(|&&s| s >= bin.s_min && s <= bin.s_max)
                    .count() as u64;
                assert_eq!(bin.clusters, want);
                let width = (bin.s_max - bin.s_min + 1) as f64;
                assert_eq!(bin.ns, want as f64 / width / 1e6);
            }
            assert_eq!(
                bins.iter().map(|b| b.clusters).sum::<u64>(),
                sizes.len() as u64
            );
        }
    }

    #[test]
    fn table_counts_and_merges_agree() {
        let mut a = SizeDistribution::new();
        a.add_sizes([3, 1, 3, 0, 2, 3], 50);
        let mut b = SizeDistribution::new();
        b.add_counts([(1, 1), (2, 1), (3, 3), (4, 0)], 50, 0);
        assert_eq!(a, b);
        assert_eq!(a.counts().collect::<Vec<_>>(), vec![(1, 1), (2, 1), (3, 3)]);
        let mut c = a.clone();
        c.merge(&b);
        assert_eq!((c.samples(), c.sites(), c.clusters()), (2, 100, 10));
        assert_eq!(c.ns()[2], (3, 6.0 / 100.0));
    }

    #[test]
    fn size_counts_convert() {
        use crate::core::size_counts::PercolatingCluster;
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
        assert_eq!(counts.mean_size(), 1.0);
        assert_eq!(counts.p_infinity(), 6.0 / 20.0);
    }
}
