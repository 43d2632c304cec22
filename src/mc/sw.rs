//! The Swendsen–Wang update on all cores: bonds between equal neighbours from Philox (one block
//! per site), clusters by a fused union-find that yields each cluster's smallest site index (its
//! root) directly ([`super::sw_label`]), and each cluster's new spin from the block of its root
//! — so a sweep's result depends on (seed, stream, sweep) alone, not on thread count or backend.

use super::measure::{tally, Sample};
use super::model::Model;
use super::rng::{threshold, SweepKey, TAG_SW};
use super::sw_label::{finish_strip, join_seams, label_strip, Params, Scratch, Sizes};
use crate::cpu::pool::CpuPool;
use crate::{Error, Options, Result};
use ndarray::Array2;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// One strip of the labeling pass: its index, its roots, its new spins and its scratch.
type Strip<'a> = (usize, ((&'a mut [u32], &'a mut [u8]), &'a mut Scratch));

/// Swendsen–Wang state reused across sweeps: the roots, the new spin drawn at every site (used
/// where the site is its cluster's root), cluster sizes and the per-strip scratch.
pub struct SwendsenWang {
    pool: CpuPool,
    parallel: bool,
    roots: Array2<u32>,
    fresh: Vec<u8>,
    /// Sites per root during a measured sweep (shared by several strips, or `plain` for one);
    /// all zero between sweeps.
    sizes: Vec<AtomicU32>,
    plain: Vec<u32>,
    scratch: Vec<Scratch>,
    touched: Vec<u32>,
    histogram: Option<Vec<u64>>,
}

impl SwendsenWang {
    /// A Swendsen–Wang updater for `model` with the CPU threads of `options` (its connectivity,
    /// boundary and algorithm do not matter: bonds are 4-neighbour, on the model's boundary).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a model with a field (the cluster updates need h = 0), a
    /// thread count of 0, or a lattice of 2³² sites or more.
    pub fn new(model: &Model, options: Options) -> Result<Self> {
        super::check_cluster_model(model)?;
        options.parallelism.check()?;
        let (h, w) = model.dim();
        if u32::try_from(h * w).is_err() {
            return Err(Error::InvalidArgument(format!(
                "a {h}×{w} lattice has too many sites for 32-bit roots"
            )));
        }
        Ok(SwendsenWang {
            pool: CpuPool::new(options.parallelism),
            parallel: options.parallelism != crate::Parallelism::Sequential,
            roots: Array2::zeros((h, w)),
            fresh: vec![0; h * w],
            sizes: Vec::new(),
            plain: Vec::new(),
            scratch: Vec::new(),
            touched: Vec::new(),
            histogram: None,
        })
    }

    /// One sweep of `spins` (sweep number `sweep` of chain `stream`); with `measure`, the sample
    /// of the new configuration with the improved estimator Σ_c |c|² / N² (and, when recording,
    /// the sweep's clusters added to [`SwendsenWang::cluster_sizes`]).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for spins of another shape than the model's; those of the
    /// thread pool.
    pub fn sweep(
        &mut self,
        model: &Model,
        spins: &mut Array2<u8>,
        seed: u64,
        stream: u64,
        sweep: u64,
        measure: bool,
    ) -> Result<Option<Sample>> {
        let (h, w) = model.dim();
        if spins.dim() != (h, w) || self.roots.dim() != (h, w) {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [spins.nrows(), spins.ncols()],
            });
        }
        if spins.as_slice().is_none() {
            // The passes read rows as slices: give a non-standard layout one.
            let mut owned = spins.as_standard_layout().into_owned();
            let r = self.sweep(model, &mut owned, seed, stream, sweep, measure);
            spins.assign(&owned);
            return r;
        }
        let thr = threshold(model.bond_probability());
        let params = Params {
            h,
            w,
            key: SweepKey::new(seed, stream, sweep, TAG_SW),
            tm1: thr.saturating_sub(1) as u32,
            on: thr > 0,
            q: u32::from(model.q()),
            wraps_x: model.boundary().wraps_x(),
            wraps_y: model.boundary().wraps_y(),
        };
        // The passes run on the threads asked for.
        let pool = self.pool.clone();
        pool.install(|threads| {
            let spins = spins
                .as_slice_mut()
                .expect("standard layout, checked above");
            self.clusters(&params, spins, threads, measure);
            if !measure {
                return None;
            }
            let spins =
                ndarray::ArrayView2::from_shape((h, w), &*spins).expect("the model's shape");
            let mut sample = tally(model, spins, self.parallel).sample(model);
            let sites = model.sites() as f64;
            sample.cluster_num = self.sum_sizes_squared() as f64 / (sites * sites);
            sample.cluster_den = 1.0;
            Some(sample)
        })
    }

    /// The roots of the last sweep's clusters (each site: its cluster's smallest site index).
    pub fn roots(&self) -> &Array2<u32> {
        &self.roots
    }

    /// Starts (`true`) or stops accumulating the histogram of cluster sizes over the measured
    /// sweeps; starting clears it. Off by default (it costs a pass over the sizes per sweep).
    pub fn record_cluster_sizes(&mut self, on: bool) {
        self.histogram = on.then(Vec::new);
    }

    /// The accumulated cluster-size histogram when recording: entry `s` is the number of
    /// clusters of `s` sites over the measured sweeps since recording started (entry 0 is 0; the
    /// vector ends at the largest size seen).
    pub fn cluster_sizes(&self) -> Option<&[u64]> {
        self.histogram.as_deref()
    }

    /// Bonds, labels, roots and new spins: the strips in parallel, their seams in between.
    fn clusters(&mut self, pr: &Params, spins: &mut [u8], threads: usize, measure: bool) {
        let (h, w) = (pr.h, pr.w);
        let strips = if self.parallel {
            threads.clamp(1, h)
        } else {
            1
        };
        let rows = h.div_ceil(strips);
        let strips = h.div_ceil(rows);
        self.scratch.resize_with(strips, Scratch::default);
        let p = self.roots.as_slice_mut().expect("owned, standard layout");
        let read: &[u8] = spins;
        let label = |(k, ((p, fresh), sc)): Strip<'_>| {
            label_strip(pr, k * rows..((k + 1) * rows).min(h), read, p, fresh, sc);
        };
        let parts = p
            .chunks_mut(rows * w)
            .zip(self.fresh.chunks_mut(rows * w))
            .zip(self.scratch.iter_mut())
            .enumerate();
        if self.parallel && strips > 1 {
            parts.par_bridge().for_each(label);
        } else {
            // On the caller's thread (a sequential chain may run inside rayon jobs).
            parts.for_each(label);
        }
        let seams: Vec<(usize, &[u64])> = self
            .scratch
            .iter()
            .enumerate()
            .map(|(k, sc)| (((k + 1) * rows).min(h), sc.seam.as_slice()))
            .collect();
        join_seams(p, w, h, &seams, &mut self.touched);
        let (plain, shared) = match (measure, strips) {
            (false, _) => (None, None),
            (true, 1) => {
                self.plain.resize(h * w, 0);
                (Some(self.plain.as_mut_slice()), None)
            }
            (true, _) => {
                if self.sizes.len() != h * w {
                    self.sizes = (0..h * w).map(|_| AtomicU32::new(0)).collect();
                }
                (None, Some(self.sizes.as_slice()))
            }
        };
        let fresh = &self.fresh;
        let finish = |(k, (p, s)): (usize, (&mut [u32], &mut [u8]))| {
            finish_strip(p, k * rows * w, s, fresh, shared.map(Sizes::Shared));
        };
        let parts = p
            .chunks_mut(rows * w)
            .zip(spins.chunks_mut(rows * w))
            .enumerate();
        if let Some(plain) = plain {
            finish_strip(p, 0, spins, fresh, Some(Sizes::Plain(plain)));
        } else if self.parallel && strips > 1 {
            parts.par_bridge().for_each(finish);
        } else {
            parts.for_each(finish);
        }
    }

    /// Σ_c |c|² from the sizes counted at the roots (resetting them for the next sweep: both
    /// arrays stay zero between sweeps, so both are read), and the histogram when recording.
    fn sum_sizes_squared(&mut self) -> u64 {
        let take = |s: &AtomicU32| {
            let v = u64::from(s.load(Relaxed));
            s.store(0, Relaxed);
            v
        };
        let take_plain = |s: &mut u32| u64::from(std::mem::take(s));
        if let Some(hist) = &mut self.histogram {
            let mut sum = 0;
            let shared = self.sizes.iter().map(take);
            for v in self.plain.iter_mut().map(take_plain).chain(shared) {
                if v > 0 {
                    if hist.len() <= v as usize {
                        hist.resize(v as usize + 1, 0);
                    }
                    hist[v as usize] += 1;
                    sum += v * v;
                }
            }
            sum
        } else if self.parallel {
            let shared: u64 = self
                .sizes
                .par_chunks(1 << 16)
                .map(|c| c.iter().map(|s| take(s).pow(2)).sum::<u64>())
                .sum();
            let plain: u64 = self
                .plain
                .par_chunks_mut(1 << 16)
                .map(|c| c.iter_mut().map(|s| take_plain(s).pow(2)).sum::<u64>())
                .sum();
            shared + plain
        } else {
            let shared: u64 = self.sizes.iter().map(|s| take(s).pow(2)).sum();
            shared
                + self
                    .plain
                    .iter_mut()
                    .map(|s| take_plain(s).pow(2))
                    .sum::<u64>()
        }
    }
}

#[cfg(test)]
#[path = "sw_oracle.rs"]
mod oracle;
