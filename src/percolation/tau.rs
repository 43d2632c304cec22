//! The Fisher exponent `τ` from the cluster-size distribution at `p_c`, with the leading
//! correction to scaling: `n_s = A s^(−τ) (1 + B s^(−Ω))`, `Ω = 72/91` (Ziff 2011). Without the
//! correction, fits over the sizes a lattice of a few hundred sites across can reach
//! (`s` ≲ 10³) give effective exponents near 1.99 instead of 187/91 = 2.055.

use super::canonical::Estimate;
use super::estimate::least_squares;
use crate::{Error, Result};
use nalgebra::DMatrix;

/// The leading correction-to-scaling exponent of 2-D percolation, `72/91`.
pub const OMEGA: f64 = 72.0 / 91.0;

/// A fit of `n_s = A s^(−τ) + C s^(−τ−Ω)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TauFit {
    /// `τ` with its standard error (from the curvature of `χ²(τ)`: `σ² = 2 / χ²″`) and the
    /// samples behind it.
    pub tau: Estimate,
    /// The fitted range `[s_min, s_max]`.
    pub range: (u64, u64),
    /// The bins: `(representative s, n_s averaged over the bin, its Poisson stderr)`; the
    /// representative `s` is where `s^(−τ)` equals its average over the bin's integers.
    pub bins: Vec<(f64, f64, f64)>,
    /// The amplitudes `A` and `C`.
    pub amplitudes: (f64, f64),
    /// `χ²` of the fit.
    pub chi2: f64,
    /// Degrees of freedom (bins − 3).
    pub dof: usize,
}

struct Bins {
    /// `(first s, one past the last s, clusters)`.
    raw: Vec<(u64, u64, u64)>,
    y: Vec<f64>,
    sigma: Vec<f64>,
}

impl Bins {
    /// `χ²`, `(A, C)` of the linear fit at fixed `τ`.
    fn chi2(&self, tau: f64) -> Option<(f64, f64, f64)> {
        let mean = |a: u64, b: u64, e: f64| {
            (a..b).map(|s| (s as f64).powf(-e)).sum::<f64>() / (b - a) as f64
        };
        let design = DMatrix::from_fn(self.raw.len(), 2, |i, j| {
            let (a, b, _) = self.raw[i];
            mean(a, b, if j == 0 { tau } else { tau + OMEGA })
        });
        let (beta, _, chi2) = least_squares(&design, &self.y, &self.sigma)?;
        Some((chi2, beta[0], beta[1]))
    }
}

/// Fits `τ` to a cluster-size histogram (`counts[s]` = clusters of `s` sites, summed over
/// `samples` lattices of `sites` sites) over `[s_min, s_max]` in logarithmic bins (4 per factor
/// 2): `n_s = A s^(−τ) + C s^(−τ−Ω)` averaged over each bin's integers, weighted by the bin's
/// Poisson count; `τ` minimises `χ²` (golden section on `[1.5, 2.5]`; `A`, `C` by linear least
/// squares at each `τ`).
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty range or fewer than 4 nonempty bins.
pub fn fit_tau(
    counts: &[u64],
    samples: u64,
    sites: usize,
    s_min: u64,
    s_max: u64,
) -> Result<TauFit> {
    let s_max = s_max.min(counts.len().saturating_sub(1) as u64);
    if s_min < 1 || s_min >= s_max {
        return Err(Error::InvalidArgument(format!(
            "bad n_s fit range [{s_min}, {s_max}]"
        )));
    }
    let mut edges = vec![s_min];
    for k in 1.. {
        let e = (s_min as f64 * 2f64.powf(f64::from(k) / 4.0)).round() as u64;
        if e > s_max + 1 {
            break;
        }
        if e > *edges.last().expect("nonempty") {
            edges.push(e);
        }
    }
    let norm = samples as f64 * sites as f64;
    let raw: Vec<(u64, u64, u64)> = edges
        .windows(2)
        .map(|w| (w[0], w[1], (w[0]..w[1]).map(|s| counts[s as usize]).sum()))
        .filter(|&(_, _, c)| c > 0)
        .collect();
    if raw.len() < 4 {
        return Err(Error::InvalidArgument(
            "fewer than 4 nonempty n_s bins in the fit range".into(),
        ));
    }
    let y: Vec<f64> = raw
        .iter()
        .map(|&(a, b, c)| c as f64 / (b - a) as f64 / norm)
        .collect();
    let sigma: Vec<f64> = raw
        .iter()
        .zip(&y)
        .map(|(&(_, _, c), y)| y / (c as f64).sqrt())
        .collect();
    let bins = Bins { raw, y, sigma };
    let f = |t: f64| bins.chi2(t).map_or(f64::INFINITY, |c| c.0);
    // Golden-section search for the minimum of χ²(τ).
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut lo, mut hi) = (1.5, 2.5);
    let (mut x1, mut x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut f1, mut f2) = (f(x1), f(x2));
    while hi - lo > 1e-7 {
        if f1 < f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = f(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = f(x2);
        }
    }
    let tau = 0.5 * (lo + hi);
    let (chi2, a, c) = bins
        .chi2(tau)
        .ok_or_else(|| Error::InvalidArgument("singular n_s fit".into()))?;
    let h = 1e-3;
    let curvature = (f(tau + h) - 2.0 * chi2 + f(tau - h)) / (h * h);
    let stderr = if curvature > 0.0 {
        (2.0 / curvature).sqrt()
    } else {
        f64::NAN
    };
    Ok(TauFit {
        tau: Estimate {
            value: tau,
            stderr,
            samples,
        },
        range: (s_min, s_max),
        bins: bins
            .raw
            .iter()
            .zip(bins.y.iter().zip(&bins.sigma))
            .map(|(&(lo, hi, _), (&y, &e))| {
                let m = (lo..hi).map(|s| (s as f64).powf(-tau)).sum::<f64>() / (hi - lo) as f64;
                (m.powf(-1.0 / tau), y, e)
            })
            .collect(),
        amplitudes: (a, c),
        chi2,
        dof: bins.raw.len() - 3,
    })
}
