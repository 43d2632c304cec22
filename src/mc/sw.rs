//! The Swendsen–Wang update on all cores: bonds between equal neighbours from Philox (one block
//! per site), clusters by bond-masked labeling in root numbering, and each cluster's new spin
//! from the block of its smallest site — so a sweep's result depends on (seed, stream, sweep)
//! alone, not on thread count or backend.

use super::measure::{tally, Sample};
use super::model::Model;
use super::rng::{below, threshold, SweepKey, TAG_SW};
use crate::cpu::pool::CpuPool;
use crate::{Boundary, Connectivity, Labeler, Options, PackedBonds, Result};
use ndarray::{Array2, ArrayViewMut2, Axis};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Rows per parallel task of the bond and spin passes.
const ROWS_PER_TASK: usize = 16;

/// One parallel task of the bond pass: its index, its rows of `right` and `down` words, of new
/// spins, and its Philox buffer.
type Task<'a> = (
    usize,
    (
        (&'a mut [u64], &'a mut [u64]),
        (&'a mut [u8], &'a mut Vec<u32>),
    ),
);

/// Swendsen–Wang state reused across sweeps: the labeler, the bonds, the roots, the new spin
/// drawn at every site (used where the site is its cluster's root) and cluster sizes.
pub struct SwendsenWang {
    labeler: Labeler,
    pool: CpuPool,
    parallel: bool,
    bonds: PackedBonds,
    roots: Array2<u32>,
    fresh: Vec<u8>,
    sizes: Vec<AtomicU32>,
    words: Vec<Vec<u32>>,
}

impl SwendsenWang {
    /// A Swendsen–Wang updater for `model` with the CPU threads of `options` (its connectivity,
    /// boundary and algorithm are set here: 4-neighbour bonds, the model's boundary).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a model with a field (the
    /// cluster updates need h = 0) or a thread count of 0.
    pub fn new(model: &Model, options: Options) -> Result<Self> {
        super::check_cluster_model(model)?;
        options.parallelism.check()?;
        // This is the CPU path (a GPU chain is `mc::Chain`'s business): the labeler stays here.
        let options = Options::new(Connectivity::Four, model.boundary())
            .parallelism(options.parallelism)
            .backend(crate::Backend::Cpu);
        let (h, w) = model.dim();
        Ok(SwendsenWang {
            labeler: Labeler::with_options(options)?,
            pool: CpuPool::new(options.parallelism),
            parallel: options.parallelism != crate::Parallelism::Sequential,
            bonds: PackedBonds::new(h, w)?,
            roots: Array2::zeros((h, w)),
            fresh: vec![0; h * w],
            sizes: Vec::new(),
            words: Vec::new(),
        })
    }

    /// One sweep of `spins` (sweep number `sweep` of chain `stream`); with `measure`, the sample
    /// of the new configuration with the improved estimator Σ_c |c|² / N².
    ///
    /// # Errors
    /// As [`Labeler::bond_roots_into`].
    pub fn sweep(
        &mut self,
        model: &Model,
        spins: &mut Array2<u8>,
        seed: u64,
        stream: u64,
        sweep: u64,
        measure: bool,
    ) -> Result<Option<Sample>> {
        let key = SweepKey::new(seed, stream, sweep, TAG_SW);
        // The passes here run on the threads asked for (the labeler has its own pool of as many).
        let pool = self.pool.clone();
        pool.install(|_| {
            self.activate(model, spins, &key);
            self.labeler
                .bond_roots_into(&self.bonds, self.roots.view_mut())?;
            self.assign(spins.view_mut());
            if !measure {
                return Ok(None);
            }
            let mut sample = tally(model, spins.view(), self.parallel).sample(model);
            let sites = model.sites() as f64;
            sample.cluster_num = self.sum_sizes_squared() as f64 / (sites * sites);
            sample.cluster_den = 1.0;
            Ok(Some(sample))
        })?
    }

    /// The roots of the last sweep's clusters (each site: its cluster's smallest site index).
    pub fn roots(&self) -> &Array2<u32> {
        &self.roots
    }

    /// Bonds between equal neighbours with the bond probability, and every site's candidate new
    /// spin; rows in parallel, each row's Philox blocks generated in one vectorised run.
    fn activate(&mut self, model: &Model, spins: &Array2<u8>, key: &SweepKey) {
        let (h, w) = model.dim();
        let nw = PackedBonds::words_per_row(w);
        let thr = threshold(model.bond_probability());
        let q = u32::from(model.q());
        let b: Boundary = model.boundary();
        let tasks = h.div_ceil(ROWS_PER_TASK);
        self.words.resize_with(tasks, Vec::new);
        let (right, down) = self.bonds.words_mut();
        let spins = spins.view();
        let body = |(k, ((rw, dw), (fresh, buf))): Task<'_>| {
            buf.resize(4 * w, 0);
            let y0 = k * ROWS_PER_TASK;
            for r in 0..rw.len() / nw {
                let y = y0 + r;
                key.stream_at((y * w) as u32).fill_u32(buf);
                let row = spins.row(y);
                let next = spins.row(if y + 1 < h { y + 1 } else { 0 });
                let wrap_y = y + 1 < h || b.wraps_y();
                let (ro, dout) = (&mut rw[r * nw..(r + 1) * nw], &mut dw[r * nw..(r + 1) * nw]);
                ro.fill(0);
                dout.fill(0);
                for x in 0..w {
                    let blk = &buf[4 * x..4 * x + 4];
                    let s = row[x];
                    let xr = if x + 1 < w { x + 1 } else { 0 };
                    let rb = (x + 1 < w || b.wraps_x()) && s == row[xr] && u64::from(blk[0]) < thr;
                    let db = wrap_y && s == next[x] && u64::from(blk[1]) < thr;
                    ro[x / 64] |= (rb as u64) << (x % 64);
                    dout[x / 64] |= (db as u64) << (x % 64);
                    fresh[r * w + x] = below(blk[2], q) as u8;
                }
            }
        };
        let chunks = right
            .chunks_mut(ROWS_PER_TASK * nw)
            .zip(down.chunks_mut(ROWS_PER_TASK * nw))
            .zip(
                self.fresh
                    .chunks_mut(ROWS_PER_TASK * w)
                    .zip(self.words.iter_mut()),
            );
        if self.parallel {
            chunks.enumerate().par_bridge().for_each(body);
        } else {
            chunks.enumerate().for_each(body);
        }
    }

    /// Every site takes the new spin drawn at its cluster's root.
    fn assign(&mut self, mut spins: ArrayViewMut2<'_, u8>) {
        let fresh = &self.fresh;
        let body = |(mut s, r): (ArrayViewMut2<'_, u8>, ndarray::ArrayView2<'_, u32>)| {
            s.zip_mut_with(&r, |v, &root| *v = fresh[root as usize]);
        };
        let it = spins
            .axis_chunks_iter_mut(Axis(0), ROWS_PER_TASK)
            .into_par_iter()
            .zip(self.roots.axis_chunks_iter(Axis(0), ROWS_PER_TASK));
        if self.parallel {
            it.for_each(body);
        } else {
            // Same work on the caller's thread (a sequential chain may run inside rayon jobs).
            spins
                .axis_chunks_iter_mut(Axis(0), ROWS_PER_TASK)
                .zip(self.roots.axis_chunks_iter(Axis(0), ROWS_PER_TASK))
                .for_each(body);
        }
    }

    /// Σ_c |c|² from the roots: sizes counted per root (a run of equal roots adds once).
    fn sum_sizes_squared(&mut self) -> u64 {
        let n = self.roots.len();
        if self.sizes.len() != n {
            self.sizes = (0..n).map(|_| AtomicU32::new(0)).collect();
        } else {
            self.sizes.par_iter().for_each(|s| s.store(0, Relaxed));
        }
        let sizes = &self.sizes;
        let roots = self.roots.as_slice().expect("owned, standard layout");
        let count = |chunk: &[u32]| {
            let mut i = 0;
            while i < chunk.len() {
                let r = chunk[i];
                let mut j = i + 1;
                while j < chunk.len() && chunk[j] == r {
                    j += 1;
                }
                sizes[r as usize].fetch_add((j - i) as u32, Relaxed);
                i = j;
            }
        };
        let sq = |s: &AtomicU32| {
            let v = u64::from(s.load(Relaxed));
            v * v
        };
        if self.parallel {
            roots.par_chunks(1 << 14).for_each(count);
            sizes.par_iter().map(sq).sum()
        } else {
            roots.chunks(1 << 14).for_each(count);
            sizes.iter().map(sq).sum()
        }
    }
}
