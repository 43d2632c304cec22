//! A chain's summary: means with error bars of the time series, and the derived specific heat,
//! susceptibility and Binder cumulant with jackknife error bars over blocks.

use super::autocorr::{estimate, tau_int, Estimate, SOKAL_C};
use super::measure::Sample;

/// Number of jackknife blocks of the derived quantities.
pub const JACKKNIFE_BLOCKS: usize = 32;

/// The summary of one chain's measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// Measurements summarised.
    pub samples: usize,
    /// Energy per site.
    pub energy: Estimate,
    /// |m|.
    pub abs_magnetization: Estimate,
    /// m².
    pub m2: Estimate,
    /// Specific heat per site, c = β² N (⟨e²⟩ − ⟨e⟩²); τ_int is that of (e − ē)².
    pub specific_heat: Estimate,
    /// Susceptibility per site, χ = β N ⟨m²⟩ (Ising: the usual χ at h = 0 on a finite lattice,
    /// where ⟨m⟩ = 0), from the update's improved estimator Σ cluster_num / Σ cluster_den (the
    /// cluster estimator ⟨Σ_c |c|²⟩ / N² for Swendsen–Wang and Wolff); τ_int is that of
    /// cluster_num.
    pub susceptibility: Estimate,
    /// Binder cumulant U₄ = 1 − ⟨m⁴⟩ / (3 ⟨m²⟩²); τ_int is that of m².
    pub binder: Estimate,
}

/// Jackknife over `blocks` equal blocks of a statistic computed from block-summed columns.
fn jackknife<const K: usize>(
    cols: [&[f64]; K],
    blocks: usize,
    f: impl Fn([f64; K]) -> f64,
) -> (f64, f64) {
    let n = cols[0].len();
    let blocks = blocks.min(n).max(1);
    let len = n / blocks;
    let mut sums = vec![[0.0; K]; blocks];
    let mut total = [0.0; K];
    for (b, s) in sums.iter_mut().enumerate() {
        for (k, c) in cols.iter().enumerate() {
            s[k] = c[b * len..(b + 1) * len].iter().sum();
            total[k] += s[k];
        }
    }
    let used = (blocks * len) as f64;
    let full = f(total.map(|t| t / used));
    if blocks < 2 {
        return (full, f64::NAN);
    }
    let leave: Vec<f64> = sums
        .iter()
        .map(|s| {
            let mut m = [0.0; K];
            for k in 0..K {
                m[k] = (total[k] - s[k]) / (used - len as f64);
            }
            f(m)
        })
        .collect();
    let mean = leave.iter().sum::<f64>() / blocks as f64;
    let var = leave.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() * (blocks - 1) as f64
        / blocks as f64;
    (full, var.sqrt())
}

/// Summarises `samples` of a chain of `sites` sites at inverse temperature `beta`.
pub fn summarize(samples: &[Sample], beta: f64, sites: usize) -> Summary {
    let col = |f: fn(&Sample) -> f64| samples.iter().map(f).collect::<Vec<_>>();
    let e = col(|s| s.energy);
    let e2: Vec<f64> = e.iter().map(|v| v * v).collect();
    let m2 = col(|s| s.m2);
    let m4 = col(|s| s.m4);
    let num = col(|s| s.cluster_num);
    let den = col(|s| s.cluster_den);
    let n = sites as f64;
    let energy = estimate(&e);
    let derived = |value: (f64, f64), tau: f64| Estimate {
        mean: value.0,
        stderr: value.1,
        tau_int: tau,
    };
    let dev2: Vec<f64> = e.iter().map(|v| (v - energy.mean).powi(2)).collect();
    let c = jackknife([&e, &e2], JACKKNIFE_BLOCKS, |[a, b]| {
        beta * beta * n * (b - a * a)
    });
    let chi = jackknife([&num, &den], JACKKNIFE_BLOCKS, |[a, b]| beta * n * a / b);
    let u4 = jackknife([&m2, &m4], JACKKNIFE_BLOCKS, |[a, b]| {
        1.0 - b / (3.0 * a * a)
    });
    Summary {
        samples: samples.len(),
        energy,
        abs_magnetization: estimate(&col(|s| s.abs_m)),
        m2: estimate(&m2),
        specific_heat: derived(c, tau_int(&dev2, SOKAL_C)),
        susceptibility: derived(chi, tau_int(&num, SOKAL_C)),
        binder: derived(u4, tau_int(&m2, SOKAL_C)),
    }
}
