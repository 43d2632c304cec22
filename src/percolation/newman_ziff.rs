//! The Newman–Ziff microcanonical sweep (Newman & Ziff, Phys. Rev. E 64, 016706, 2001): occupy
//! the units (sites or bonds) one at a time in a random order and record the observables after
//! each, so that one sweep gives every `n = 0..=N`. Samples run in parallel; each draws its order
//! from its own Philox 4×32-10 stream keyed by `(seed, sample index)`, so a fixed seed gives the
//! same sums on any number of threads.

use super::forest::Forest;
use super::model::{Geometry, Model};
use super::sums::{MicroSums, SampleRecord, NEVER};
use crate::cpu::pool::CpuPool;
use crate::Result;
use rand_philox::Philox;
use rayon::prelude::*;
use std::ops::Range;

/// One sample's random order: Fisher–Yates over `0..N` with unbiased bounded draws (Lemire's
/// method) from Philox stream `index` of `seed`. Exposed so that tests and other backends can
/// reproduce a sample.
pub fn sample_order(seed: u64, index: u64, order: &mut Vec<u32>, units: usize) {
    order.clear();
    order.extend(0..units as u32);
    let mut rng = Philox::from_u64_seed_stream(seed, index);
    for i in (1..units).rev() {
        let j = rng.bounded(i as u32 + 1) as usize;
        order.swap(i, j);
    }
}

/// A reusable Newman–Ziff sweeper for one geometry: the forest and the order buffer.
pub struct Sweeper {
    geometry: Geometry,
    forest: Forest,
    order: Vec<u32>,
}

impl Sweeper {
    /// A sweeper for `geometry` (allocates its buffers once).
    pub fn new(geometry: Geometry) -> Sweeper {
        Sweeper {
            geometry,
            forest: Forest::new(geometry),
            order: Vec::with_capacity(geometry.units()),
        }
    }

    /// Runs sample `index` of `seed` and adds it to `sums` (whose geometry must be this one's).
    pub fn run(&mut self, seed: u64, index: u64, sums: &mut MicroSums) {
        debug_assert_eq!(sums.geometry, self.geometry);
        let units = self.geometry.units();
        sample_order(seed, index, &mut self.order, units);
        match self.geometry.model {
            Model::Site(_) => self.forest.clear(),
            Model::Bond => self.forest.fill_isolated(),
        }
        let mut first = [NEVER; 4];
        let mut next_ns = 0;
        let mut record = |forest: &Forest, n: usize, first: &mut [u64; 4]| {
            let o = forest.observables();
            let events = [o.any_x, o.any_y, o.any_both, o.any_x || o.any_y];
            for (f, e) in first.iter_mut().zip(events) {
                if e && *f == NEVER {
                    *f = n as u64;
                }
            }
            let (l, p, s) = (
                u128::from(o.largest),
                u128::from(o.percolating_sites),
                u128::from(o.finite_s2),
            );
            sums.largest[n] += l;
            sums.largest_sq[n] += l * l;
            sums.percolating[n] += p;
            sums.percolating_sq[n] += p * p;
            sums.finite_s2[n] += s;
            sums.finite_s2_sq[n] = sums.finite_s2_sq[n].saturating_add(s * s);
            if next_ns < sums.ns_at.len() && sums.ns_at[next_ns] == n as u64 {
                forest.count_finite_sizes(&mut sums.ns_counts[next_ns]);
                next_ns += 1;
            }
        };
        record(&self.forest, 0, &mut first);
        let site = matches!(self.geometry.model, Model::Site(_));
        for n in 0..units {
            let u = self.order[n] as usize;
            if site {
                self.forest.add_site(u);
            } else {
                self.forest.add_bond(u);
            }
            record(&self.forest, n + 1, &mut first);
        }
        sums.samples += 1;
        sums.records.push(SampleRecord { seed, index, first });
    }
}

/// Runs samples `indices` of `seed` on `pool`'s threads and returns their sums. The samples are
/// split into contiguous chunks, one sweeper each; integer sums and records concatenated in
/// index order make the result independent of the thread count.
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
    let mut total = MicroSums::new(geometry, ns_at)?;
    let count = indices.end.saturating_sub(indices.start);
    if count == 0 {
        return Ok(total);
    }
    let parts = pool.install(|threads| {
        let chunks = (threads as u64).min(count);
        (0..chunks)
            .into_par_iter()
            .map(|c| {
                let lo = indices.start + count * c / chunks;
                let hi = indices.start + count * (c + 1) / chunks;
                let mut sums = MicroSums::new(geometry, ns_at).expect("checked above");
                let mut sweeper = Sweeper::new(geometry);
                for i in lo..hi {
                    sweeper.run(seed, i, &mut sums);
                }
                sums
            })
            .collect::<Vec<_>>()
    })?;
    for p in &parts {
        total.add(p);
    }
    Ok(total)
}
