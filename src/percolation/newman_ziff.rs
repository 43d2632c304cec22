//! The Newman–Ziff microcanonical sweep (Newman & Ziff, Phys. Rev. E 64, 016706, 2001): occupy
//! the units (sites or bonds) one at a time in a random order and record the observables after
//! each, so that one sweep gives every `n = 0..=N`. Samples run in parallel; each draws its order
//! from its own Philox 4×32-10 stream keyed by `(seed, sample index)`, so a fixed seed gives the
//! same sums on any number of threads.

use super::forest::{Forest, Out};
use super::model::Geometry;
use super::sums::{MicroSums, Partial, SampleRecord};
use crate::core::bits::prefetch;
use crate::cpu::pool::CpuPool;
use crate::Result;
use rand_philox::Philox;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Mutex;

/// Sweeps of lattices with more sites than this (2 MiB of nodes: beyond a core's L2 cache)
/// prefetch the nodes of the units ahead; with more than [`PREFETCH_PARENTS`] (8 MiB: a good
/// part of a shared L3) also their parents. Below, the hints cost more than they save (measured
/// on the 2-core EPYC: without them 10 % faster at L = 256, with the parents 10 % slower at
/// L = 512 and 15 % faster at L = 1024).
const PREFETCH_SITES: usize = 1 << 17;
const PREFETCH_PARENTS: usize = 1 << 19;

/// Orders longer than this (4 bytes a unit: beyond the core's L2 cache) prefetch their swaps.
const PREFETCH_ORDER: usize = 1 << 18;

/// A Philox stream read word by word from a buffer filled many blocks at a time (the same
/// words, in the same order, as [`Philox::next_u32`]).
struct Words {
    rng: Philox,
    buf: [u32; 256],
    at: usize,
}

impl Words {
    fn new(rng: Philox) -> Words {
        Words {
            rng,
            buf: [0; 256],
            at: 256,
        }
    }

    #[inline]
    fn next(&mut self) -> u32 {
        if self.at == self.buf.len() {
            self.rng.fill_u32(&mut self.buf);
            self.at = 0;
        }
        let w = self.buf[self.at];
        self.at += 1;
        w
    }

    /// [`Philox::bounded`]: Lemire's unbiased draw in `0..n`, word for word.
    #[inline]
    fn bounded(&mut self, n: u32) -> u32 {
        let n64 = u64::from(n);
        let mut m = u64::from(self.next()) * n64;
        if (m as u32) < n {
            let t = (1u64 << 32).wrapping_rem(n64) as u32;
            while (m as u32) < t {
                m = u64::from(self.next()) * n64;
            }
        }
        (m >> 32) as u32
    }
}

/// One sample's random order: Fisher–Yates over `0..N` with unbiased bounded draws (Lemire's
/// method) from Philox stream `index` of `seed`. Exposed so that tests and other backends can
/// reproduce a sample.
pub fn sample_order(seed: u64, index: u64, order: &mut Vec<u32>, units: usize) {
    order.clear();
    order.extend(0..units as u32);
    let mut words = Words::new(Philox::from_u64_seed_stream(seed, index));
    if units <= PREFETCH_ORDER {
        for i in (1..units).rev() {
            let j = words.bounded(i as u32 + 1) as usize;
            order.swap(i, j);
        }
        return;
    }
    // The swap partners of a few steps are drawn first and their lines prefetched, so that the
    // swaps of a large order do not wait on memory one after the other.
    let mut partners = [0u32; 32];
    let mut i = units - 1;
    while i >= 1 {
        let batch = i.min(partners.len());
        for (k, j) in partners[..batch].iter_mut().enumerate() {
            *j = words.bounded((i - k) as u32 + 1);
            prefetch(order, *j as usize);
        }
        for (k, &j) in partners[..batch].iter().enumerate() {
            order.swap(i - k, j as usize);
        }
        i -= batch;
    }
}

/// A reusable Newman–Ziff sweeper for one geometry: the forest, the order buffer and the
/// per-`n` partial sums.
pub struct Sweeper {
    geometry: Geometry,
    forest: Forest,
    order: Vec<u32>,
    partial: Partial,
}

impl Sweeper {
    /// A sweeper for `geometry` (allocates its buffers once).
    pub fn new(geometry: Geometry) -> Sweeper {
        Sweeper {
            geometry,
            forest: Forest::new(geometry),
            order: Vec::with_capacity(geometry.units()),
            partial: Partial::new(geometry),
        }
    }

    /// The same sweeper flushing its partial sums every `samples` samples (tests).
    #[cfg(test)]
    pub(crate) fn flushing_every(mut self, samples: u64) -> Sweeper {
        self.partial.set_capacity(samples);
        self
    }

    /// Runs sample `index` of `seed` and adds it to `sums` (whose geometry must be this one's).
    pub fn run(&mut self, seed: u64, index: u64, sums: &mut MicroSums) {
        self.run_many(seed, index..index + 1, sums);
    }

    /// Runs samples `indices` of `seed` and adds them to `sums` in index order: the sums of as
    /// many [`Sweeper::run`] calls, with one pass over `sums` instead of one per sample.
    pub fn run_many(&mut self, seed: u64, indices: Range<u64>, sums: &mut MicroSums) {
        debug_assert_eq!(sums.geometry, self.geometry);
        let ns_at = sums.ns_at.clone();
        let records = self.run_range(seed, indices, &ns_at, |p| p.add_to(sums));
        sums.records.extend(records);
    }

    /// Runs `indices`, handing the partial sums to `flush` whenever they are full and at the
    /// end; returns the samples' records in index order.
    fn run_range(
        &mut self,
        seed: u64,
        indices: Range<u64>,
        ns_at: &[u64],
        mut flush: impl FnMut(&mut Partial),
    ) -> Vec<SampleRecord> {
        self.partial
            .histograms(ns_at.len(), self.geometry.sites() + 1);
        let mut records = Vec::with_capacity(indices.clone().count());
        for index in indices {
            if self.partial.full() {
                flush(&mut self.partial);
            }
            let first = self.sweep(seed, index, ns_at);
            self.partial.samples += 1;
            records.push(SampleRecord { seed, index, first });
        }
        flush(&mut self.partial);
        records
    }

    /// One sweep of sample `index` into the partial sums; returns the first `n` of each event.
    fn sweep(&mut self, seed: u64, index: u64, ns_at: &[u64]) -> [u64; 4] {
        let units = self.geometry.units();
        sample_order(seed, index, &mut self.order, units);
        self.forest.start();
        let out = Out {
            lines: &mut self.partial.lines[..=units],
            ns: &mut self.partial.ns,
            ns_at,
        };
        match self.geometry.sites() {
            n if n > PREFETCH_PARENTS => self.forest.run::<2>(&self.order, out),
            n if n > PREFETCH_SITES => self.forest.run::<1>(&self.order, out),
            _ => self.forest.run::<0>(&self.order, out),
        }
    }
}

/// Runs samples `indices` of `seed` on `pool`'s threads and returns their sums. The samples are
/// split into contiguous chunks, one sweeper each, whose partial sums are added to the total as
/// they fill; integer sums (in any grouping) and records concatenated in index order make the
/// result independent of the thread count.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad thread count or
/// histogram points beyond `N`.
pub(crate) fn run_samples(
    geometry: Geometry,
    ns_at: &[u64],
    seed: u64,
    indices: Range<u64>,
    pool: &CpuPool,
) -> Result<MicroSums> {
    let total = MicroSums::new(geometry, ns_at)?;
    let count = indices.end.saturating_sub(indices.start);
    if count == 0 {
        return Ok(total);
    }
    let ns_at = total.ns_at.clone();
    let shared = Mutex::new(total);
    let parts = pool.install(|threads| {
        let chunks = (threads as u64).min(count);
        (0..chunks)
            .into_par_iter()
            .map(|c| {
                let lo = indices.start + count * c / chunks;
                let hi = indices.start + count * (c + 1) / chunks;
                let mut sweeper = Sweeper::new(geometry);
                sweeper.run_range(seed, lo..hi, &ns_at, |p| {
                    p.add_to(&mut shared.lock().expect("no sweep panics holding the sums"));
                })
            })
            .collect::<Vec<_>>()
    })?;
    let mut total = shared
        .into_inner()
        .expect("no sweep panics holding the sums");
    for records in parts {
        total.records.extend(records);
    }
    Ok(total)
}
