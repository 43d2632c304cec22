//! Observables of one configuration: energy per site and the order parameter's moments, from one
//! parallel pass over the spins (the spin-count histogram and the number of satisfied bonds).

use super::model::{Model, ModelKind};
use ndarray::ArrayView2;
use rayon::prelude::*;

/// What one measured sweep records (all per site).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Energy per site, H / N.
    pub energy: f64,
    /// Magnetisation: Ising Σ s / N; Potts the length of the order-parameter vector (= |m|).
    pub m: f64,
    /// |m|.
    pub abs_m: f64,
    /// m² (Potts: (q Σ_a n_a² / N² − 1) / (q − 1), the squared length of the simplex-vector sum).
    pub m2: f64,
    /// m⁴.
    pub m4: f64,
    /// Numerator of the improved estimator of ⟨m²⟩: Σ_c |c|² / N² over the Swendsen–Wang
    /// clusters, Σ |C| / N over the sweep's Wolff clusters, m² for Metropolis.
    pub cluster_num: f64,
    /// Its denominator: 1, or the number of Wolff clusters in the sweep; ⟨m²⟩ is estimated by
    /// Σ cluster_num / Σ cluster_den over the run.
    pub cluster_den: f64,
}

/// Spin counts and satisfied (equal-spin) bonds, with the number of bonds, of one
/// configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub counts: Vec<u64>,
    pub satisfied: u64,
    pub bonds: u64,
}

/// Counts spins per value and equal neighbours (each bond once: right and down, wrapping where
/// the boundary wraps), rows in parallel.
pub(crate) fn tally(model: &Model, spins: ArrayView2<'_, u8>, parallel: bool) -> Tally {
    let (h, w) = spins.dim();
    let q = model.q() as usize;
    let b = model.boundary();
    let row = |y: usize| -> (Vec<u64>, u64) {
        let mut c = vec![0u64; q];
        let mut sat = 0u64;
        let r = spins.row(y);
        let below = if y + 1 < h {
            Some(spins.row(y + 1))
        } else if b.wraps_y() {
            Some(spins.row(0))
        } else {
            None
        };
        for x in 0..w {
            let s = r[x];
            c[s as usize] += 1;
            if x + 1 < w {
                sat += (s == r[x + 1]) as u64;
            } else if b.wraps_x() {
                sat += (s == r[0]) as u64;
            }
            if let Some(d) = &below {
                sat += (s == d[x]) as u64;
            }
        }
        (c, sat)
    };
    let merge = |(mut a, sa): (Vec<u64>, u64), (b, sb): (Vec<u64>, u64)| {
        a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
        (a, sa + sb)
    };
    let (counts, satisfied) = if parallel {
        (0..h)
            .into_par_iter()
            .map(row)
            .reduce(|| (vec![0; q], 0), merge)
    } else {
        (0..h).map(row).fold((vec![0; q], 0), merge)
    };
    Tally {
        counts,
        satisfied,
        bonds: bond_count(model),
    }
}

/// Neighbour pairs of the model's lattice, each once (wrapping ones where the boundary wraps).
pub(crate) fn bond_count(model: &Model) -> u64 {
    let (h, w) = model.dim();
    let b = model.boundary();
    (h * (w - usize::from(!b.wraps_x())) + w * (h - usize::from(!b.wraps_y()))) as u64
}

impl Tally {
    /// Energy per site.
    pub(crate) fn energy(&self, model: &Model) -> f64 {
        let n: u64 = self.counts.iter().sum();
        let n = n as f64;
        let (j, h) = (model.coupling(), model.field());
        match model.kind() {
            ModelKind::Ising => {
                let ss = 2.0 * self.satisfied as f64 - self.bonds as f64;
                let s = self.counts[0] as f64 - self.counts[1] as f64;
                (-j * ss - h * s) / n
            }
            ModelKind::Potts => (-j * self.satisfied as f64 - h * self.counts[0] as f64) / n,
        }
    }

    /// The sample of this configuration; the improved estimator is filled in by the update.
    pub(crate) fn sample(&self, model: &Model) -> Sample {
        let n: u64 = self.counts.iter().sum();
        let nf = n as f64;
        let q = f64::from(model.q());
        let sum_sq: f64 = self.counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
        let m2 = ((q * sum_sq / (nf * nf) - 1.0) / (q - 1.0)).max(0.0);
        let abs_m = m2.sqrt();
        let m = match model.kind() {
            ModelKind::Ising => (self.counts[0] as f64 - self.counts[1] as f64) / nf,
            ModelKind::Potts => abs_m,
        };
        Sample {
            energy: self.energy(model),
            m,
            abs_m,
            m2,
            m4: m2 * m2,
            cluster_num: m2,
            cluster_den: 1.0,
        }
    }
}
