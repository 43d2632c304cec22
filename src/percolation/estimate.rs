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
    let (beta, cov, chi2) = least_squares(&design, y, sigma)
        .ok_or_else(|| Error::InvalidArgument("the fit's x values coincide".into()))?;
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

/// Weighted least squares `y ≈ X β` with errors `σ`: `(β, (XᵀWX)⁻¹, χ²)`, by nalgebra's
/// Cholesky factorisation; `None` when the normal matrix is (nearly) singular.
pub(crate) fn least_squares(
    design: &DMatrix<f64>,
    y: &[f64],
    sigma: &[f64],
) -> Option<(DVector<f64>, DMatrix<f64>, f64)> {
    let n = y.len();
    let w = DVector::from_iterator(n, sigma.iter().map(|s| 1.0 / (s * s)));
    let yv = DVector::from_column_slice(y);
    let xtw = design.transpose() * DMatrix::from_diagonal(&w);
    let normal = &xtw * design;
    // Cholesky alone may accept a zero pivot: compare the determinant with the diagonal.
    let det = normal.determinant();
    let scale: f64 = normal.diagonal().iter().product();
    if det.is_nan() || det <= 1e-12 * scale {
        return None;
    }
    let cov = normal.cholesky()?.inverse();
    let beta = &cov * (&xtw * &yv);
    let resid = &yv - design * &beta;
    let chi2 = resid.iter().zip(w.iter()).map(|(r, w)| r * r * w).sum();
    Some((beta, cov, chi2))
}
