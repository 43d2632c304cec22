//! Binomial weights `B(N, n, p) = C(N, n) pⁿ (1 − p)^(N − n)` for the microcanonical → canonical
//! convolution, in log space so that `N` up to 2³² neither overflows nor underflows.
//!
//! The mode's weight comes from statrs's log-binomial coefficient; the others from the
//! log-ratio recurrence `ln B(n ± 1) − ln B(n)`, which, unlike a difference of two log-gammas of
//! size `N ln N`, keeps full relative precision at large `N`. Weights below `e^-745` (zero in
//! `f64`) are left out: the window is `N p ± (40 σ + 10)`.

use crate::{Error, Result};
use statrs::function::factorial::ln_binomial;

/// The nonzero weights of `B(N, ·, p)`: `weights[k]` is the weight of `n = start + k`.
#[derive(Debug, Clone, PartialEq)]
pub struct BinomialWeights {
    /// The first `n` with a weight.
    pub start: usize,
    /// The weights, summing to 1.
    pub weights: Vec<f64>,
}

impl BinomialWeights {
    /// `B(N, n, p)` for every `n` in a window around `N p` (exactly `δ_{n,0}` at `p = 0` and
    /// `δ_{n,N}` at `p = 1`), normalised to sum 1.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `p` is not in `[0, 1]`.
    pub fn new(total: u64, p: f64) -> Result<BinomialWeights> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::InvalidArgument(format!(
                "p must be in [0, 1], not {p}"
            )));
        }
        let n_total = total as usize;
        if p == 0.0 || p == 1.0 || total == 0 {
            let start = if p == 1.0 { n_total } else { 0 };
            return Ok(BinomialWeights {
                start,
                weights: vec![1.0],
            });
        }
        let nf = total as f64;
        let mode = (((nf + 1.0) * p).floor() as usize).min(n_total);
        let sigma = (nf * p * (1.0 - p)).sqrt();
        let half = (40.0 * sigma + 10.0).ceil() as usize;
        let lo = mode.saturating_sub(half);
        let hi = (mode + half).min(n_total);
        let (lp, lq) = (p.ln(), (-p).ln_1p());
        let ln_mode = ln_binomial(total, mode as u64) + mode as f64 * lp + (nf - mode as f64) * lq;
        let ln_odds = lp - lq;
        let mut logs = vec![0.0; hi - lo + 1];
        logs[mode - lo] = ln_mode;
        // Upwards: B(n+1)/B(n) = (N − n)/(n + 1) · p/(1 − p).
        for n in mode..hi {
            let k = n - lo;
            logs[k + 1] = logs[k] + ((nf - n as f64) / (n as f64 + 1.0)).ln() + ln_odds;
        }
        // Downwards: B(n−1)/B(n) = n/(N − n + 1) · (1 − p)/p.
        for n in (lo + 1..=mode).rev() {
            let k = n - lo;
            logs[k - 1] = logs[k] + (n as f64 / (nf - n as f64 + 1.0)).ln() - ln_odds;
        }
        let mut weights: Vec<f64> = logs.iter().map(|l| l.exp()).collect();
        let sum: f64 = weights.iter().sum();
        for w in &mut weights {
            *w /= sum;
        }
        Ok(BinomialWeights { start: lo, weights })
    }

    /// The last `n` with a weight.
    pub fn end(&self) -> usize {
        self.start + self.weights.len() - 1
    }

    /// `Σ_n B(n) f(n)` over the window.
    pub fn convolve(&self, mut f: impl FnMut(usize) -> f64) -> f64 {
        self.weights
            .iter()
            .enumerate()
            .map(|(k, w)| w * f(self.start + k))
            .sum()
    }

    /// Upper tails: `tails[k] = Σ_{n ≥ start + k} B(n)`, for the probability that an event first
    /// happening at `n*` has happened at this `p`.
    pub fn upper_tails(&self) -> Vec<f64> {
        let mut tails = vec![0.0; self.weights.len()];
        let mut acc = 0.0;
        for k in (0..self.weights.len()).rev() {
            acc += self.weights[k];
            tails[k] = acc;
        }
        tails
    }
}
