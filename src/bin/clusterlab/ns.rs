//! `analyze --ns FILE`: the cluster-size distribution n_s as numbers, unbinned and log-binned,
//! with standard errors over frames.

use anyhow::{bail, Result};
use clusterlab::io::{self, SummaryColumn, SummaryValues};
use clusterlab::{ClusterTable, SizeDistribution};
use std::collections::BTreeMap;
use std::path::Path;

/// Refuses an `--ns` path that is neither CSV nor HDF5, before any work.
pub fn check(path: &Path) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("csv") | Some("h5") | Some("hdf5") => crate::args::check_output_folder(path),
        _ => bail!(
            "{}: unsupported --ns extension: n_s is written as .csv, .h5 or .hdf5",
            path.display()
        ),
    }
}

/// Sums over frames of one n_s value and of its square, for the standard error.
#[derive(Default, Clone, Copy)]
struct Moments {
    sum: f64,
    sum_sq: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        self.sum += x;
        self.sum_sq += x * x;
    }

    /// The standard error of the mean over `n` frames (frames without the size count as 0);
    /// NaN for fewer than two.
    fn stderr(&self, n: usize) -> f64 {
        if n < 2 {
            return f64::NAN;
        }
        let n = n as f64;
        let mean = self.sum / n;
        let var = ((self.sum_sq - n * mean * mean) / (n - 1.0)).max(0.0);
        (var / n).sqrt()
    }
}

/// n_s over the frames (or the one lattice) analyzed: the total as a [`SizeDistribution`] plus,
/// per size and per log bin, the moments of the frames' own n_s.
pub struct Ns {
    total: SizeDistribution,
    bins_per_decade: u32,
    exclude: bool,
    sizes: BTreeMap<u64, Moments>,
    bins: BTreeMap<u64, Moments>,
}

impl Ns {
    pub fn new(bins_per_decade: u32, exclude_percolating: bool) -> Ns {
        Ns {
            total: SizeDistribution::new(),
            bins_per_decade,
            exclude: exclude_percolating,
            sizes: BTreeMap::new(),
            bins: BTreeMap::new(),
        }
    }

    /// Adds one frame's clusters.
    pub fn add(&mut self, table: &ClusterTable) {
        let frame = SizeDistribution::from_table(table, self.exclude);
        for (s, ns) in frame.ns() {
            self.sizes.entry(s).or_default().add(ns);
        }
        // Log bins have the same edges in every frame (they depend on s alone).
        for b in frame.log_binned(self.bins_per_decade) {
            self.bins.entry(b.s_min).or_default().add(b.ns);
        }
        self.total.merge(&frame);
    }

    /// Writes the file: CSV, one table with a `binning` column (`none`: one row per size that
    /// occurs; `log`: one row per log bin); HDF5, the groups `/ns` and `/ns_log`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let n = self.total.samples();
        let sizes: Vec<(u64, u64)> = self.total.counts().collect();
        let ns: Vec<f64> = self.total.ns().into_iter().map(|(_, v)| v).collect();
        let se: Vec<f64> = sizes
            .iter()
            .map(|(s, _)| self.sizes.get(s).map_or(f64::NAN, |m| m.stderr(n)))
            .collect();
        let bins = self.total.log_binned(self.bins_per_decade);
        let bin_se: Vec<f64> = bins
            .iter()
            .map(|b| self.bins.get(&b.s_min).map_or(f64::NAN, |m| m.stderr(n)))
            .collect();
        let csv = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        if csv {
            let text = |v: &str, k: usize| vec![v.to_owned(); k];
            let mut binning = text("none", sizes.len());
            binning.extend(text("log", bins.len()));
            let cat_u = |a: Vec<u64>, b: Vec<u64>| SummaryValues::U64([a, b].concat());
            let cat_f = |a: Vec<f64>, b: Vec<f64>| SummaryValues::F64([a, b].concat());
            let s: Vec<u64> = sizes.iter().map(|p| p.0).collect();
            let columns = vec![
                SummaryColumn::new("binning", SummaryValues::Text(binning)),
                SummaryColumn::new(
                    "s_min",
                    cat_u(s.clone(), bins.iter().map(|b| b.s_min).collect()),
                ),
                SummaryColumn::new(
                    "s_max",
                    cat_u(s.clone(), bins.iter().map(|b| b.s_max).collect()),
                ),
                SummaryColumn::new(
                    "s",
                    cat_f(
                        s.iter().map(|&v| v as f64).collect(),
                        bins.iter().map(|b| b.s).collect(),
                    ),
                ),
                SummaryColumn::new(
                    "count",
                    cat_u(
                        sizes.iter().map(|p| p.1).collect(),
                        bins.iter().map(|b| b.clusters).collect(),
                    ),
                ),
                SummaryColumn::new(
                    "n_s",
                    cat_f(ns.clone(), bins.iter().map(|b| b.ns).collect()),
                ),
                SummaryColumn::new("stderr", cat_f(se.clone(), bin_se.clone())),
            ];
            io::write_columns(path, "ns", &columns)?;
        } else {
            let plain = [
                SummaryColumn::new("s", SummaryValues::U64(sizes.iter().map(|p| p.0).collect())),
                SummaryColumn::new(
                    "count",
                    SummaryValues::U64(sizes.iter().map(|p| p.1).collect()),
                ),
                SummaryColumn::new("n_s", SummaryValues::F64(ns)),
                SummaryColumn::new("stderr", SummaryValues::F64(se)),
            ];
            let binned = [
                SummaryColumn::new(
                    "s_min",
                    SummaryValues::U64(bins.iter().map(|b| b.s_min).collect()),
                ),
                SummaryColumn::new(
                    "s_max",
                    SummaryValues::U64(bins.iter().map(|b| b.s_max).collect()),
                ),
                SummaryColumn::new("s", SummaryValues::F64(bins.iter().map(|b| b.s).collect())),
                SummaryColumn::new(
                    "count",
                    SummaryValues::U64(bins.iter().map(|b| b.clusters).collect()),
                ),
                SummaryColumn::new(
                    "n_s",
                    SummaryValues::F64(bins.iter().map(|b| b.ns).collect()),
                ),
                SummaryColumn::new("stderr", SummaryValues::F64(bin_se)),
            ];
            io::write_column_groups(path, &[("ns", &plain), ("ns_log", &binned)])?;
        }
        Ok(())
    }
}
