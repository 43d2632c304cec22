//! Microcanonical sums: per number `n` of occupied units, the sums over samples of the observables
//! and of their squares, as exact integers, so that batches, resumed runs and merged studies add
//! up to the same numbers in any order and on any number of threads; and per sample the `n` at
//! which each wrapping (spanning) event first happened, from which the canonical wrapping
//! probabilities and their exact sample variance follow.

use super::model::Geometry;
use crate::{Error, Result};

/// Sentinel in [`SampleRecord::first`]: the event never happened (only possible on lattices
/// where it cannot, e.g. `R^(b)` on a cylinder).
pub const NEVER: u64 = u64::MAX;

/// What one Newman–Ziff sample leaves besides the per-`n` sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRecord {
    /// The study seed of the sample's random stream.
    pub seed: u64,
    /// The sample's index in that seed's stream (its Philox stream number).
    pub index: u64,
    /// The number of occupied units at which, for the first time, some cluster percolated along
    /// `x` (`R^(h)`), along `y` (`R^(v)`), one cluster along both (`R^(b)`), and some cluster
    /// along either (`R^(e)`); [`NEVER`] when it did not happen.
    pub first: [u64; 4],
}

/// Columns of [`SampleRecord::first`].
pub const EVENT_NAMES: [&str; 4] = ["h", "v", "b", "e"];

/// The sums of one lattice size over its samples. Index `n` = `0..=N` is the number of occupied
/// units (sites or bonds).
#[derive(Debug, Clone, PartialEq)]
pub struct MicroSums {
    /// Model, extents and boundary.
    pub geometry: Geometry,
    /// Samples summed.
    pub samples: u64,
    /// `Σ` largest-cluster size.
    pub largest: Vec<u128>,
    /// `Σ` largest².
    pub largest_sq: Vec<u128>,
    /// `Σ` sites in percolating (wrapping or spanning) clusters.
    pub percolating: Vec<u128>,
    /// `Σ` of its square.
    pub percolating_sq: Vec<u128>,
    /// `Σ` over samples of `Σ′ s²` (clusters that do not percolate).
    pub finite_s2: Vec<u128>,
    /// `Σ` of its square.
    pub finite_s2_sq: Vec<u128>,
    /// The `n` at which cluster-size histograms are taken (sorted, distinct).
    pub ns_at: Vec<u64>,
    /// Per entry of `ns_at`: `counts[s]` = clusters of `s` sites that do not percolate, summed
    /// over samples (`s = 0..=sites`; entry 0 stays 0).
    pub ns_counts: Vec<Vec<u64>>,
    /// One record per sample, in the order they were added.
    pub records: Vec<SampleRecord>,
}

impl MicroSums {
    /// Empty sums for `geometry`, with histograms at `ns_at`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when an entry of `ns_at` exceeds the number of units `N`.
    pub fn new(geometry: Geometry, ns_at: &[u64]) -> Result<MicroSums> {
        let n = geometry.units() + 1;
        let mut at = ns_at.to_vec();
        at.sort_unstable();
        at.dedup();
        if let Some(&bad) = at.iter().find(|&&a| a as usize >= n) {
            return Err(Error::InvalidArgument(format!(
                "n_s histogram at n = {bad} beyond the {} units of the lattice",
                n - 1
            )));
        }
        let zeros = || vec![0u128; n];
        Ok(MicroSums {
            geometry,
            samples: 0,
            largest: zeros(),
            largest_sq: zeros(),
            percolating: zeros(),
            percolating_sq: zeros(),
            finite_s2: zeros(),
            finite_s2_sq: zeros(),
            ns_counts: vec![vec![0; geometry.sites() + 1]; at.len()],
            ns_at: at,
            records: Vec::new(),
        })
    }

    /// `N`: units that a sweep occupies.
    pub fn units(&self) -> usize {
        self.largest.len() - 1
    }

    /// The six per-`n` sums with their names in study files.
    pub fn columns(&self) -> [(&'static str, &Vec<u128>); 6] {
        [
            ("largest", &self.largest),
            ("largest_sq", &self.largest_sq),
            ("percolating", &self.percolating),
            ("percolating_sq", &self.percolating_sq),
            ("finite_s2", &self.finite_s2),
            ("finite_s2_sq", &self.finite_s2_sq),
        ]
    }

    pub(crate) fn columns_mut(&mut self) -> [&mut Vec<u128>; 6] {
        [
            &mut self.largest,
            &mut self.largest_sq,
            &mut self.percolating,
            &mut self.percolating_sq,
            &mut self.finite_s2,
            &mut self.finite_s2_sq,
        ]
    }

    /// Adds `other`'s samples to these. Integer sums: the result does not depend on the order.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the geometry or the histogram points differ, or when a
    /// sample (seed, index) is in both.
    pub fn merge(&mut self, other: &MicroSums) -> Result<()> {
        if self.geometry != other.geometry || self.ns_at != other.ns_at {
            return Err(Error::InvalidArgument(format!(
                "cannot merge sums of {:?} (n_s at {:?}) with sums of {:?} (n_s at {:?})",
                self.geometry, self.ns_at, other.geometry, other.ns_at
            )));
        }
        let mut ids: std::collections::HashSet<(u64, u64)> =
            self.records.iter().map(|r| (r.seed, r.index)).collect();
        for r in &other.records {
            if !ids.insert((r.seed, r.index)) {
                return Err(Error::InvalidArgument(format!(
                    "sample {} of seed {} is in both studies: their seed ranges overlap",
                    r.index, r.seed
                )));
            }
        }
        self.add(other);
        Ok(())
    }

    /// Adds without the checks (the batch runner's own chunks are disjoint by construction).
    pub(crate) fn add(&mut self, other: &MicroSums) {
        self.samples += other.samples;
        let theirs = other.columns();
        for (mine, (_, theirs)) in self.columns_mut().into_iter().zip(theirs) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        for (mine, theirs) in self.ns_counts.iter_mut().zip(&other.ns_counts) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        self.records.extend_from_slice(&other.records);
    }

    /// The next sample index of `seed`'s stream not yet in these sums (0 when none is).
    pub fn next_index(&self, seed: u64) -> u64 {
        self.records
            .iter()
            .filter(|r| r.seed == seed)
            .map(|r| r.index + 1)
            .max()
            .unwrap_or(0)
    }
}
