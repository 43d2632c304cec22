//! The Wolff single-cluster update (Wolff 1989), sequential: grow one cluster from a random seed
//! site, adding equal neighbours with the bond probability, and give it a new spin (Ising: the
//! other one; Potts: uniformly one of the q − 1 others).
//!
//! A "sweep" is a fixed number of clusters, about N / ⟨|C|⟩ so that sweeps of the three updates
//! compare. It must not depend on the chain's state (stopping when N sites have flipped would
//! measure at state-dependent times, which biases the averages: the detailed-balance test
//! caught exactly that), so it is calibrated once, when the updater is made, by a throwaway run
//! from the ordered state with its own random numbers (tag 4): a function of (model, seed,
//! stream) alone, which a restored chain recomputes identically.

use super::measure::{tally, Sample};
use super::model::Model;
use super::rng::{below, below64, threshold, SweepKey, TAG_WOLFF, TAG_WOLFF_CALIBRATION};
use crate::Result;
use ndarray::Array2;
use rand_philox::Philox;

/// Calibration rounds: the first half is thermalisation.
const CALIBRATION_ROUNDS: u64 = 20;

/// Wolff state reused across sweeps: the cluster stack and the clusters per sweep.
pub struct Wolff {
    stack: Vec<u32>,
    clusters_per_sweep: u64,
}

impl Wolff {
    /// A Wolff updater for `model`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a model with a field.
    pub fn new(model: &Model, seed: u64, stream: u64) -> Result<Self> {
        super::check_cluster_model(model)?;
        let mut wolff = Wolff {
            stack: Vec::new(),
            clusters_per_sweep: 1,
        };
        // Rounds of clusters until N sites flipped; the second half's mean count is the sweep.
        let mut spins = ndarray::Array2::zeros(model.dim());
        let n = model.sites();
        let mut counted = 0u64;
        for round in 0..CALIBRATION_ROUNDS {
            let key = SweepKey::new(seed, stream, round, TAG_WOLFF_CALIBRATION);
            let mut rng = key.stream_at(0);
            let mut flipped = 0;
            while flipped < n {
                flipped += wolff.cluster(model, &mut spins, &mut rng);
                if round >= CALIBRATION_ROUNDS / 2 {
                    counted += 1;
                }
            }
        }
        let half = CALIBRATION_ROUNDS - CALIBRATION_ROUNDS / 2;
        wolff.clusters_per_sweep = counted.div_ceil(half).max(1);
        Ok(wolff)
    }

    /// Clusters per sweep (calibrated when made).
    pub fn clusters_per_sweep(&self) -> u64 {
        self.clusters_per_sweep
    }

    /// One sweep ([`Wolff::clusters_per_sweep`] clusters); with `measure`, the sample of the new
    /// configuration, whose improved estimator is Σ |C| / N over the sweep's clusters (and the
    /// cluster count as its denominator).
    ///
    /// # Errors
    /// None today; the `Result` keeps the signature of the other updates.
    pub fn sweep(
        &mut self,
        model: &Model,
        spins: &mut Array2<u8>,
        seed: u64,
        stream: u64,
        sweep: u64,
        measure: bool,
    ) -> Result<Option<Sample>> {
        let key = SweepKey::new(seed, stream, sweep, TAG_WOLFF);
        let mut rng = key.stream_at(0);
        let n = model.sites();
        let clusters = self.clusters_per_sweep;
        let mut flipped = 0usize;
        for _ in 0..clusters {
            flipped += self.cluster(model, spins, &mut rng);
        }
        if !measure {
            return Ok(None);
        }
        let mut sample = tally(model, spins.view(), false).sample(model);
        sample.cluster_num = flipped as f64 / n as f64;
        sample.cluster_den = clusters as f64;
        Ok(Some(sample))
    }

    /// Grows and flips one cluster; returns its size. Draws, in order: two words for the seed
    /// site, one for the new spin, then one per bond tested.
    fn cluster(&mut self, model: &Model, spins: &mut Array2<u8>, rng: &mut Philox) -> usize {
        let (h, w) = model.dim();
        let b = model.boundary();
        let thr = threshold(model.bond_probability());
        let q = u32::from(model.q());
        let (hi, lo) = (rng.next_u32(), rng.next_u32());
        let seed = below64(hi, lo, (h * w) as u64) as usize;
        let s = spins.as_slice_mut().expect("owned, standard layout");
        let old = s[seed];
        let new = ((u32::from(old) + 1 + below(rng.next_u32(), q - 1)) % q) as u8;
        s[seed] = new;
        self.stack.clear();
        self.stack.push(seed as u32);
        let mut size = 1;
        while let Some(i) = self.stack.pop() {
            let i = i as usize;
            let (y, x) = (i / w, i % w);
            let mut nb = [usize::MAX; 4];
            if x > 0 {
                nb[0] = i - 1;
            } else if b.wraps_x() {
                nb[0] = i + w - 1;
            }
            if x + 1 < w {
                nb[1] = i + 1;
            } else if b.wraps_x() {
                nb[1] = i + 1 - w;
            }
            if y > 0 {
                nb[2] = i - w;
            } else if b.wraps_y() {
                nb[2] = i + (h - 1) * w;
            }
            if y + 1 < h {
                nb[3] = i + w;
            } else if b.wraps_y() {
                nb[3] = x;
            }
            for &j in &nb {
                if j != usize::MAX && s[j] == old && u64::from(rng.next_u32()) < thr {
                    s[j] = new;
                    self.stack.push(j as u32);
                    size += 1;
                }
            }
        }
        size
    }
}
