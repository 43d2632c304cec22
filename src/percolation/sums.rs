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

/// The per-`n` sums of one sweep's observables over a few samples, one 64-byte line per `n`:
/// the sums of values of at most `sites²` in `u64` (exact for [`Partial::capacity`] samples),
/// `Σ′ s²`'s square in `u128`. A sweep writes one line per added unit, which keeps the stream
/// of the sums to one cache line per step; [`Partial::add_to`] moves them into the `u128`
/// columns of [`MicroSums`] (the same integers in any grouping, so the same sums).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct Line {
    largest: u64,
    largest_sq: u64,
    percolating: u64,
    percolating_sq: u64,
    finite_s2: u64,
    finite_s2_sq: u128,
}

impl Line {
    /// Adds one sample's largest cluster, percolating sites and `Σ′ s²`.
    #[inline]
    pub(crate) fn add(&mut self, largest: u64, percolating: u64, finite_s2: u64) {
        self.largest += largest;
        self.largest_sq += largest * largest;
        self.percolating += percolating;
        self.percolating_sq += percolating * percolating;
        self.finite_s2 += finite_s2;
        self.finite_s2_sq += u128::from(finite_s2) * u128::from(finite_s2);
    }
}

/// Sums of up to [`Partial::capacity`] sweeps, and their `n_s` histograms.
#[derive(Debug, Clone)]
pub(crate) struct Partial {
    /// One line per `n = 0..=N`.
    pub lines: Vec<Line>,
    /// Per histogram point, `counts[s]`.
    pub ns: Vec<Vec<u64>>,
    /// Samples in the lines.
    pub samples: u64,
    capacity: u64,
}

impl Partial {
    /// Empty sums for `geometry`.
    pub(crate) fn new(geometry: Geometry) -> Partial {
        // Every per-sample value summed in u64 is at most sites² (Σ′ s² ≤ (Σ s)²): this many
        // samples cannot overflow; with at most 2²⁹ sites it is at least 64.
        let sq = (geometry.sites() as u64).pow(2).max(1);
        Partial {
            lines: vec![Line::default(); geometry.units() + 1],
            ns: Vec::new(),
            samples: 0,
            capacity: u64::MAX / sq,
        }
    }

    /// A smaller capacity, so that tests reach the flush between samples.
    #[cfg(test)]
    pub(crate) fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity.min(self.capacity);
    }

    /// Whether another sample could overflow the `u64` sums.
    pub(crate) fn full(&self) -> bool {
        self.samples >= self.capacity
    }

    /// Makes `histograms` zeroed `n_s` histograms of `bins` bins.
    pub(crate) fn histograms(&mut self, histograms: usize, bins: usize) {
        self.ns.resize_with(histograms, Vec::new);
        for h in &mut self.ns {
            h.clear();
            h.resize(bins, 0);
        }
    }

    /// Adds these sums to `sums` (whose geometry and histogram points are this one's) and
    /// empties them. Records are the caller's.
    pub(crate) fn add_to(&mut self, sums: &mut MicroSums) {
        if self.samples == 0 {
            return;
        }
        let [largest, largest_sq, percolating, percolating_sq, finite_s2, finite_s2_sq] =
            sums.columns_mut();
        for (n, line) in self.lines.iter_mut().enumerate() {
            largest[n] += u128::from(line.largest);
            largest_sq[n] += u128::from(line.largest_sq);
            percolating[n] += u128::from(line.percolating);
            percolating_sq[n] += u128::from(line.percolating_sq);
            finite_s2[n] += u128::from(line.finite_s2);
            finite_s2_sq[n] = finite_s2_sq[n].saturating_add(line.finite_s2_sq);
            *line = Line::default();
        }
        for (mine, theirs) in self.ns.iter_mut().zip(&mut sums.ns_counts) {
            for (a, b) in theirs.iter_mut().zip(mine.iter_mut()) {
                *a += *b;
                *b = 0;
            }
        }
        sums.samples += self.samples;
        self.samples = 0;
    }
}
