//! Integrated autocorrelation time with Sokal's automatic windowing, and the error bar of a
//! time-series mean from it (CONVENTIONS.md: c = 6, stderr = sqrt(2 τ_int var / n)).

/// The mean of a time series with its error bar and integrated autocorrelation time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// The mean.
    pub mean: f64,
    /// Its standard error, sqrt(2 τ_int var / n).
    pub stderr: f64,
    /// τ_int = 1/2 + Σ_{t=1}^{W} ρ(t), with the window W of Sokal's rule.
    pub tau_int: f64,
}

/// Sokal's window constant.
pub const SOKAL_C: f64 = 6.0;

/// τ_int of `x` with Sokal's automatic window: the smallest W with W ≥ c τ_int(W). The
/// autocovariances are summed directly, one lag at a time, so the cost is n · W. A constant
/// series has τ_int = 1/2 (no correlation to measure); a series too short for the window
/// (W ≥ n / 2 before the rule is met) returns the last τ_int reached.
pub fn tau_int(x: &[f64], c: f64) -> f64 {
    let n = x.len();
    if n < 2 {
        return 0.5;
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let d: Vec<f64> = x.iter().map(|v| v - mean).collect();
    let c0 = d.iter().map(|v| v * v).sum::<f64>() / n as f64;
    if c0 <= 0.0 || !c0.is_finite() {
        return 0.5;
    }
    let mut tau = 0.5;
    for t in 1..n / 2 {
        let ct = d[..n - t]
            .iter()
            .zip(&d[t..])
            .map(|(a, b)| a * b)
            .sum::<f64>()
            / n as f64;
        tau += ct / c0;
        if t as f64 >= c * tau {
            break;
        }
    }
    tau.max(0.5)
}

/// Mean, error bar and τ_int of a time series.
pub fn estimate(x: &[f64]) -> Estimate {
    let n = x.len();
    if n == 0 {
        return Estimate {
            mean: f64::NAN,
            stderr: f64::NAN,
            tau_int: f64::NAN,
        };
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
    let tau = tau_int(x, SOKAL_C);
    Estimate {
        mean,
        stderr: (2.0 * tau * var / n as f64).sqrt(),
        tau_int: tau,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An AR(1) process x_t = a x_{t−1} + noise has τ_int = (1 + a) / (2 (1 − a)).
    #[test]
    fn ar1_tau_matches_the_formula() {
        let a: f64 = 0.8;
        let mut rng = rand_philox::Philox::from_u64_seed(7);
        let gauss = |r: &mut rand_philox::Philox| {
            // Sum of 12 uniforms − 6: unit variance, good enough for a τ check.
            (0..12)
                .map(|_| rand_philox::u32_to_unit_f64(r.next_u32()))
                .sum::<f64>()
                - 6.0
        };
        let mut x = vec![0.0; 200_000];
        for t in 1..x.len() {
            x[t] = a * x[t - 1] + gauss(&mut rng);
        }
        let want = (1.0 + a) / (2.0 * (1.0 - a));
        let got = tau_int(&x, SOKAL_C);
        // Relative σ of τ_int ≈ sqrt(2 (2W + 1) / n) ≈ 0.04 here; 3σ ≈ 12 %.
        assert!((got - want).abs() < 0.12 * want, "{got} vs {want}");
        assert_eq!(tau_int(&[1.0; 100], SOKAL_C), 0.5);
    }
}
