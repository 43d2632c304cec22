//! MPI sample farms: `clusterlab percolation run` and `clusterlab mc run` under `mpirun` or
//! `srun` split their samples (percolation) or temperatures (Monte Carlo) over the ranks, and
//! rank 0 merges what the ranks computed into the one study or run file it alone writes.
//!
//! The result is the file one process writes with the same seed, bit for bit, on any number of
//! ranks, because every random number is keyed by the sample's or chain's own index
//! (CONVENTIONS.md, "Random numbers"), never by who computes it:
//! - a study batch is a range of sample indices; [`split`] cuts it into one contiguous range per
//!   rank, each rank computes the exact integer sums of its range, and rank 0 adds them in rank
//!   order — which is index order, so the per-sample records come out in the order one process
//!   writes them, and the sums (integers) are the same in any grouping;
//! - a Monte Carlo run's chains (one per temperature, stream = index) are split by [`split`]
//!   too; after every block each rank sends its chains' samples and spins to rank 0, which
//!   appends the samples and writes the checkpoint as one process does.
//!
//! Checkpoints and `--resume` stay as they are: rank 0 checkpoints the whole study (run) after
//! every batch (block), and a resumed farm — with any number of ranks, or none — continues from
//! the file, since no rank keeps state of its own between batches beyond its chains, whose
//! states rank 0 sends at the start.
//!
//! This module holds the parts that need no MPI (the split and the packing of sums into `u64`
//! words); the MPI glue (`Farm`, in `world.rs`) comes with the `mpi` feature.

use crate::percolation::{FixedSums, MicroSums, SampleRecord};
use crate::{Error, Result};
use std::ops::Range;

#[cfg(feature = "mpi")]
mod world;
#[cfg(feature = "mpi")]
pub use world::Farm;

/// Rank `rank`'s share of `range` among `ranks`: contiguous, disjoint, in rank order, their
/// lengths differing by at most one, together exactly `range`.
///
/// ```
/// use clusterlab::farm::split;
/// assert_eq!(split(10..20, 0, 3), 10..13);
/// assert_eq!(split(10..20, 1, 3), 13..16);
/// assert_eq!(split(10..20, 2, 3), 16..20);
/// ```
pub fn split(range: Range<u64>, rank: usize, ranks: usize) -> Range<u64> {
    let ranks = ranks.max(1) as u128;
    let rank = (rank as u128).min(ranks);
    let count = u128::from(range.end.saturating_sub(range.start));
    // In u128: count · rank cannot overflow.
    let at = |r: u128| range.start + (count * r / ranks) as u64;
    at(rank)..at((rank + 1).min(ranks))
}

/// Words read from a message, front to back; running out is an [`Error::Farm`].
#[derive(Debug)]
pub struct Words<'a>(&'a [u64]);

impl<'a> Words<'a> {
    /// Reads `words` from the front.
    pub fn new(words: &'a [u64]) -> Words<'a> {
        Words(words)
    }

    /// The next `n` words.
    ///
    /// # Errors
    /// [`Error::Farm`] when fewer are left.
    pub fn take(&mut self, n: usize) -> Result<&'a [u64]> {
        if n > self.0.len() {
            return Err(Error::Farm(format!(
                "a message ended {} words early",
                n - self.0.len()
            )));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    /// The next word.
    ///
    /// # Errors
    /// [`Error::Farm`] when none is left.
    pub fn one(&mut self) -> Result<u64> {
        Ok(self.take(1)?[0])
    }

    /// The next word as a length of at most `max`.
    ///
    /// # Errors
    /// [`Error::Farm`] when none is left or it exceeds `max` (a length from a garbled message
    /// must not size an allocation).
    pub fn len(&mut self, max: usize) -> Result<usize> {
        let n = self.one()?;
        if n > max as u64 {
            return Err(Error::Farm(format!(
                "a length of {n} where at most {max} fit"
            )));
        }
        Ok(n as usize)
    }

    /// Whether every word was read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Sums that travel between ranks as `u64` words and add into sums of the same shape: the
/// receiver adds the packed sums of each rank, in rank order, into its own.
pub trait Parcel {
    /// Appends these sums to `out`.
    fn pack(&self, out: &mut Vec<u64>);
    /// Adds sums packed by [`Parcel::pack`] (from sums of this shape) to these.
    ///
    /// # Errors
    /// [`Error::Farm`] when the words do not hold sums of this shape.
    fn add_packed(&mut self, words: &mut Words<'_>) -> Result<()>;
}

fn pack_u128(out: &mut Vec<u64>, v: u128) {
    out.extend([v as u64, (v >> 64) as u64]);
}

fn u128_at(w: &[u64], i: usize) -> u128 {
    u128::from(w[2 * i]) | (u128::from(w[2 * i + 1]) << 64)
}

fn shape_error(what: &str) -> Error {
    Error::Farm(format!(
        "{what} of another shape arrived (ranks running different studies?)"
    ))
}

impl Parcel for MicroSums {
    /// `samples`, the six per-`n` columns (two words per `u128`), the `n_s` histograms, the
    /// record count and six words per record.
    fn pack(&self, out: &mut Vec<u64>) {
        out.push(self.samples);
        for (_, column) in self.columns() {
            out.push(column.len() as u64);
            column.iter().for_each(|&v| pack_u128(out, v));
        }
        for h in &self.ns_counts {
            out.push(h.len() as u64);
            out.extend_from_slice(h);
        }
        out.push(self.records.len() as u64);
        for r in &self.records {
            out.extend([r.seed, r.index]);
            out.extend_from_slice(&r.first);
        }
    }

    fn add_packed(&mut self, words: &mut Words<'_>) -> Result<()> {
        let samples = words.one()?;
        for column in self.columns_mut() {
            let n = words.len(column.len())?;
            if n != column.len() {
                return Err(shape_error("Newman–Ziff sums"));
            }
            let w = words.take(2 * n)?;
            for (i, a) in column.iter_mut().enumerate() {
                *a += u128_at(w, i);
            }
        }
        for h in &mut self.ns_counts {
            let n = words.len(h.len())?;
            if n != h.len() {
                return Err(shape_error("an n_s histogram"));
            }
            for (a, b) in h.iter_mut().zip(words.take(n)?) {
                *a += b;
            }
        }
        // At most one record per sample: no more than the samples the message claims.
        let records = words.len(usize::try_from(samples).unwrap_or(usize::MAX))?;
        let w = words.take(6 * records)?;
        self.records.extend(w.chunks_exact(6).map(|r| SampleRecord {
            seed: r[0],
            index: r[1],
            first: [r[2], r[3], r[4], r[5]],
        }));
        self.samples += samples;
        Ok(())
    }
}

impl Parcel for FixedSums {
    /// `samples`, the grid's length, five counts and seven two-word moments per grid point, and
    /// the `n_s` histogram.
    fn pack(&self, out: &mut Vec<u64>) {
        out.push(self.samples);
        out.push(self.p.len() as u64);
        for (c, m) in self.counts.iter().zip(&self.moments) {
            out.extend_from_slice(c);
            m.iter().for_each(|&v| pack_u128(out, v));
        }
        out.push(self.ns.len() as u64);
        out.extend_from_slice(&self.ns);
    }

    fn add_packed(&mut self, words: &mut Words<'_>) -> Result<()> {
        let samples = words.one()?;
        if words.len(self.p.len())? != self.p.len() {
            return Err(shape_error("fixed-p sums"));
        }
        for (c, m) in self.counts.iter_mut().zip(&mut self.moments) {
            let w = words.take(5 + 14)?;
            c.iter_mut().zip(&w[..5]).for_each(|(a, b)| *a += b);
            for (i, a) in m.iter_mut().enumerate() {
                *a += u128_at(&w[5..], i);
            }
        }
        if words.len(self.ns.len())? != self.ns.len() {
            return Err(shape_error("an n_s histogram"));
        }
        let w = words.take(self.ns.len())?;
        self.ns.iter_mut().zip(w).for_each(|(a, b)| *a += b);
        self.samples += samples;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
