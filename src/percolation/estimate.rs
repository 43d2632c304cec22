//! Threshold and exponent estimators: the crossing of `R_L(p)` with its exact `L → ∞` value,
//! the finite-size extrapolation `p_c(L) = p_c + a · L^(−1−1/ν)` by weighted least squares, and
//! the Fisher exponent `τ` from a log-binned fit of `n_s ∝ s^(−τ)`.

use super::canonical::{AtP, Estimate, Wrapping};
use super::sums::MicroSums;
use crate::{Error, Result};
use nalgebra::{DMatrix, DVector};

/// The correlation-length exponent of 2-D percolation.
pub const NU: f64 = 4.0 / 3.0;

/// The Fisher exponent of 2-D percolation, `187/91`.
pub const TAU: f64 = 187.0 / 91.0;

/// Where `R_L(p)` crosses a target value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crossing {
    /// The crossing `p_L`, its standard error and samples.
    pub p: Estimate,
    /// The slope `dR/dp` there.
    pub slope: f64,
}

/// Solves `R(p) = target` by bisection (`R` rises with `p`: each sample's `T(n*)` does) and
/// propagates the standard error of `R` at the root through the slope: `σ_p = σ_R / R′(p)`.
///
/// # Errors
/// [`Error::InvalidArgument`] without samples or when `R` does not cross `target` in `(0, 1)`.
pub fn crossing(sums: &MicroSums, kind: Wrapping, target: f64) -> Result<Crossing> {
    if sums.samples < 2 {
        return Err(Error::InvalidArgument(
            "a crossing needs at least 2 samples".into(),
        ));
    }
    let units = sums.units();
    let r = |p: f64| -> Result<Estimate> { Ok(AtP::new(units, p)?.wrapping(sums, kind)) };
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    if r(lo)?.value > target || r(hi)?.value < target {
        return Err(Error::InvalidArgument(format!(
            "{} does not cross {target} for p in [0, 1]",
            kind.name()
        )));
    }
    for _ in 0..64 {
        let mid = 0.5 * (lo + hi);
        if r(mid)?.value < target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-13 {
            break;
        }
    }
    let p = 0.5 * (lo + hi);
    let at = r(p)?;
    // The curve is smooth on the scale of the binomial width √(p(1−p)/N); a step well inside it.
    let h = 0.05 * (p * (1.0 - p) / units as f64).sqrt().max(1e-9);
    let slope = (r((p + h).min(1.0))?.value - r((p - h).max(0.0))?.value)
        / ((p + h).min(1.0) - (p - h).max(0.0));
    Ok(Crossing {
        p: Estimate {
            value: p,
            stderr: at.stderr / slope,
            samples: sums.samples,
        },
        slope,
    })
}

/// A straight-line fit `y = c + a x` by weighted least squares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFit {
    /// The intercept, its standard error (from the fit's covariance) and the samples behind it.
    pub intercept: Estimate,
    /// The slope and its standard error.
    pub slope: Estimate,
    /// Covariance of (intercept, slope).
    pub covariance: f64,
    /// `χ²` of the fit.
    pub chi2: f64,
    /// Degrees of freedom (points − 2).
    pub dof: usize,
}

/// Weighted least squares of `y = c + a x` with `σ` per point: `β = (XᵀWX)⁻¹ XᵀWy`,
/// covariance `(XᵀWX)⁻¹`, by nalgebra's Cholesky factorisation.
///
/// # Errors
/// [`Error::InvalidArgument`] for fewer than 2 points, a nonpositive or non-finite `σ`, or
/// coincident `x`.
pub fn weighted_line(x: &[f64], y: &[f64], sigma: &[f64], samples: u64) -> Result<LineFit> {
    let n = x.len();
    if n < 2 || y.len() != n || sigma.len() != n {
        return Err(Error::InvalidArgument(
            "a line fit needs at least 2 points".into(),
        ));
    }
    if sigma.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(Error::InvalidArgument(format!(
            "fit errors must be positive and finite: {sigma:?}"
        )));
    }
    let design = DMatrix::from_fn(n, 2, |i, j| if j == 0 { 1.0 } else { x[i] });
    let w = DVector::from_iterator(n, sigma.iter().map(|s| 1.0 / (s * s)));
    let yv = DVector::from_column_slice(y);
    let xtw = design.transpose() * DMatrix::from_diagonal(&w);
    let normal = &xtw * &design;
    // A (near-)singular normal matrix: all x equal. Cholesky alone may accept a zero pivot.
    let det = normal.determinant();
    if det.is_nan() || det <= 1e-12 * normal[(0, 0)] * normal[(1, 1)] {
        return Err(Error::InvalidArgument("the fit's x values coincide".into()));
    }
    let chol = normal
        .cholesky()
        .ok_or_else(|| Error::InvalidArgument("the fit's x values coincide".into()))?;
    let cov = chol.inverse();
    let beta = &cov * (&xtw * &yv);
    let resid = &yv - &design * &beta;
    let chi2 = resid
        .iter()
        .zip(w.iter())
        .map(|(r, w)| r * r * w)
        .sum::<f64>();
    Ok(LineFit {
        intercept: Estimate {
            value: beta[0],
            stderr: cov[(0, 0)].sqrt(),
            samples,
        },
        slope: Estimate {
            value: beta[1],
            stderr: cov[(1, 1)].sqrt(),
            samples,
        },
        covariance: cov[(0, 1)],
        chi2,
        dof: n - 2,
    })
}

/// `p_c` from crossings `p_L` at sizes `L`: `p_L = p_c + a · L^(−1−1/ν)` fitted by weighted least
/// squares (ν = 4/3). With one size, `p_c` is that size's crossing (and the slope is NaN).
///
/// # Errors
/// As [`weighted_line`]; [`Error::InvalidArgument`] without sizes.
pub fn extrapolate(sizes: &[usize], crossings: &[Estimate]) -> Result<LineFit> {
    let samples = crossings.iter().map(|c| c.samples).sum();
    match crossings {
        [] => Err(Error::InvalidArgument("no sizes to extrapolate".into())),
        [only] => Ok(LineFit {
            intercept: *only,
            slope: Estimate {
                value: f64::NAN,
                stderr: f64::NAN,
                samples,
            },
            covariance: f64::NAN,
            chi2: 0.0,
            dof: 0,
        }),
        _ => {
            let x: Vec<f64> = sizes
                .iter()
                .map(|&l| (l as f64).powf(-1.0 - 1.0 / NU))
                .collect();
            let y: Vec<f64> = crossings.iter().map(|c| c.value).collect();
            let s: Vec<f64> = crossings.iter().map(|c| c.stderr).collect();
            weighted_line(&x, &y, &s, samples)
        }
    }
}

/// A fit of `n_s ∝ s^(−τ)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TauFit {
    /// `τ` with its standard error (from the fit's covariance) and the samples behind it.
    pub tau: Estimate,
    /// The fitted range `[s_min, s_max]`.
    pub range: (u64, u64),
    /// The bins: `(representative s, n_s averaged over the bin, its Poisson stderr)`.
    pub bins: Vec<(f64, f64, f64)>,
    /// `χ²` and degrees of freedom of the fit.
    pub chi2: f64,
    /// Degrees of freedom.
    pub dof: usize,
}

/// Fits `τ` to a cluster-size histogram (`counts[s]` = clusters of `s` sites, summed over
/// `samples` lattices of `sites` sites) over `[s_min, s_max]` in logarithmic bins (4 per
/// factor 2). Each bin's point is placed at the `s` where `s^(−τ)` equals its average over the
/// bin's integers (iterated with the fitted `τ`), so integer binning does not bias the slope;
/// `log n_s` is weighted by the bin's Poisson count.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty range or fewer than 3 nonempty bins.
pub fn fit_tau(
    counts: &[u64],
    samples: u64,
    sites: usize,
    s_min: u64,
    s_max: u64,
) -> Result<TauFit> {
    let s_max = s_max.min(counts.len() as u64 - 1);
    if s_min < 1 || s_min >= s_max {
        return Err(Error::InvalidArgument(format!(
            "bad n_s fit range [{s_min}, {s_max}]"
        )));
    }
    // Bin edges: s_min · 2^(k/4), rounded, distinct.
    let mut edges = vec![s_min];
    let mut k = 1;
    loop {
        let e = (s_min as f64 * 2f64.powf(k as f64 / 4.0)).round() as u64;
        k += 1;
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
    if raw.len() < 3 {
        return Err(Error::InvalidArgument(
            "fewer than 3 nonempty n_s bins in the fit range".into(),
        ));
    }
    let mut tau = TAU;
    let mut fit = None;
    for _ in 0..5 {
        let x: Vec<f64> = raw
            .iter()
            .map(|&(a, b, _)| {
                let mean = (a..b).map(|s| (s as f64).powf(-tau)).sum::<f64>() / (b - a) as f64;
                mean.ln() / -tau
            })
            .collect();
        let y: Vec<f64> = raw
            .iter()
            .map(|&(a, b, c)| (c as f64 / (b - a) as f64 / norm).ln())
            .collect();
        let sig: Vec<f64> = raw
            .iter()
            .map(|&(_, _, c)| 1.0 / (c as f64).sqrt())
            .collect();
        let f = weighted_line(&x, &y, &sig, samples)?;
        tau = -f.slope.value;
        fit = Some((f, x));
    }
    let (f, x) = fit.expect("ran");
    Ok(TauFit {
        tau: Estimate {
            value: -f.slope.value,
            stderr: f.slope.stderr,
            samples,
        },
        range: (s_min, s_max),
        bins: raw
            .iter()
            .zip(&x)
            .map(|(&(a, b, c), &lx)| {
                let ns = c as f64 / (b - a) as f64 / norm;
                (lx.exp(), ns, ns / (c as f64).sqrt())
            })
            .collect(),
        chi2: f.chi2,
        dof: f.dof,
    })
}
