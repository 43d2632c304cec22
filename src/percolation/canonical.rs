//! Canonical (fixed-`p`) curves from microcanonical sums by the binomial convolution
//! `Q(p) = Σ_n B(N, n, p) Q_n`.
//!
//! Errors: the wrapping probabilities are sample means of `T(n*) = Σ_{n ≥ n*} B(N, n, p)`, `n*`
//! the sample's first-wrapping `n`, so their standard error is the exact standard error of that
//! mean over samples. For `P∞`, the largest cluster and `S` the sums hold only per-`n` moments;
//! their error is the convolved microcanonical variance `σ²(p) ≈ Σ_n B(n) σ²_n / samples`,
//! which neglects the spread of `Q_n` across the binomial window — a good approximation because
//! the window (`σ_n ∝ √N`) is narrow against the curves' own scale once `N` is large.

use super::binomial::BinomialWeights;
use super::sums::{MicroSums, NEVER};
use crate::{Error, Result};

/// A value with its standard error and the number of samples behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Its standard error.
    pub stderr: f64,
    /// Samples behind it.
    pub samples: u64,
}

/// Which wrapping (spanning) probability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wrapping {
    /// `R^(h)`: some cluster wraps (spans) along `x`.
    H,
    /// `R^(v)`: along `y`.
    V,
    /// `R^(e)`: along either.
    E,
    /// `R^(b)`: one cluster along both.
    B,
    /// `R^(1) = R^(h) − R^(b)`: along `x` but not along `y`.
    One,
    /// `(R^(h) + R^(v)) / 2`: on a square lattice both estimate the same probability, and their
    /// average has the smaller variance.
    HV,
}

impl Wrapping {
    /// Every kind, in the order of study files and reports.
    pub const ALL: [Wrapping; 6] = [
        Wrapping::H,
        Wrapping::V,
        Wrapping::E,
        Wrapping::B,
        Wrapping::One,
        Wrapping::HV,
    ];

    /// `"R_h"`, `"R_v"`, `"R_e"`, `"R_b"`, `"R_1"`, `"R_hv"`.
    pub fn name(self) -> &'static str {
        match self {
            Wrapping::H => "R_h",
            Wrapping::V => "R_v",
            Wrapping::E => "R_e",
            Wrapping::B => "R_b",
            Wrapping::One => "R_1",
            Wrapping::HV => "R_hv",
        }
    }

    /// The exact `L → ∞` value at `p_c` on the square torus (Pinson 1994; Newman & Ziff 2001),
    /// the same for site and bond percolation.
    pub fn torus_limit(self) -> f64 {
        match self {
            Wrapping::H | Wrapping::V | Wrapping::HV => 0.521_058_289_2,
            Wrapping::E => 0.690_473_724_6,
            Wrapping::B => 0.351_642_853_9,
            Wrapping::One => 0.169_415_435_3,
        }
    }

    /// The per-sample value from the tails at the four first-event `n`s (h, v, b, e).
    #[inline]
    fn of(self, t: [f64; 4]) -> f64 {
        match self {
            Wrapping::H => t[0],
            Wrapping::V => t[1],
            Wrapping::B => t[2],
            Wrapping::E => t[3],
            Wrapping::One => t[0] - t[2],
            Wrapping::HV => 0.5 * (t[0] + t[1]),
        }
    }
}

/// The convolution at one `p`, reusable for every observable at that `p`.
pub struct AtP {
    weights: BinomialWeights,
    tails: Vec<f64>,
    p: f64,
}

impl AtP {
    /// The weights for `N` units at `p`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `p` outside `[0, 1]`.
    pub fn new(units: usize, p: f64) -> Result<AtP> {
        let weights = BinomialWeights::new(units as u64, p)?;
        let tails = weights.upper_tails();
        Ok(AtP { weights, tails, p })
    }

    /// The probability that an event first happening at `n*` has happened.
    #[inline]
    fn tail(&self, first: u64) -> f64 {
        if first == NEVER || first as usize > self.weights.end() {
            0.0
        } else if (first as usize) < self.weights.start {
            1.0
        } else {
            self.tails[first as usize - self.weights.start]
        }
    }

    /// `R(p)` with its exact standard error over samples.
    pub fn wrapping(&self, sums: &MicroSums, kind: Wrapping) -> Estimate {
        let (mut s1, mut s2) = (0.0, 0.0);
        for r in &sums.records {
            let t = r.first.map(|f| self.tail(f));
            let x = kind.of(t);
            s1 += x;
            s2 += x * x;
        }
        mean_and_error(s1, s2, sums.records.len() as u64)
    }

    /// `Σ_n B(n) ⟨q⟩_n / scale` with the convolved variance, for a sum and its square.
    fn moment(&self, sum: &[u128], sq: &[u128], samples: u64, scale: f64) -> Estimate {
        if samples == 0 {
            return nan_estimate(0);
        }
        let m = samples as f64;
        let mut var = 0.0;
        let value = self.weights.convolve(|n| {
            let mean = sum[n] as f64 / m;
            var_add(&mut var, self.weights_at(n), sq[n] as f64 / m - mean * mean);
            mean
        });
        Estimate {
            value: value / scale,
            stderr: (var.max(0.0) / m).sqrt() / scale,
            samples,
        }
    }

    fn weights_at(&self, n: usize) -> f64 {
        self.weights.weights[n - self.weights.start]
    }

    /// `P∞(p)`: the fraction of all sites in percolating clusters.
    pub fn p_infinity(&self, sums: &MicroSums) -> Estimate {
        let sites = sums.geometry.sites() as f64;
        self.moment(&sums.percolating, &sums.percolating_sq, sums.samples, sites)
    }

    /// The largest cluster's size as a fraction of all sites.
    pub fn largest_fraction(&self, sums: &MicroSums) -> Estimate {
        let sites = sums.geometry.sites() as f64;
        self.moment(&sums.largest, &sums.largest_sq, sums.samples, sites)
    }

    /// Mean cluster size `S(p) = Σ_n B(n) ⟨Σ′ s²⟩_n / ⟨Σ′ s⟩_n` (the primes leaving out the
    /// percolating clusters; `Σ′ s` = occupied sites − percolating sites). Values of `n` without
    /// finite clusters are left out and the weights renormalised; NaN when none is left.
    pub fn mean_size(&self, sums: &MicroSums) -> Estimate {
        if sums.samples == 0 {
            return nan_estimate(0);
        }
        let m = sums.samples as f64;
        let (mut value, mut var, mut wsum) = (0.0, 0.0, 0.0);
        for (k, &w) in self.weights.weights.iter().enumerate() {
            let n = self.weights.start + k;
            let finite = sums.geometry.occupied_sites(n) as f64 - sums.percolating[n] as f64 / m;
            if finite <= 0.0 || w == 0.0 {
                continue;
            }
            let mean = sums.finite_s2[n] as f64 / m;
            let v = sums.finite_s2_sq[n] as f64 / m - mean * mean;
            value += w * mean / finite;
            var += w * v / (finite * finite);
            wsum += w;
        }
        if wsum == 0.0 {
            return nan_estimate(sums.samples);
        }
        Estimate {
            value: value / wsum,
            stderr: (var.max(0.0) / wsum / m).sqrt(),
            samples: sums.samples,
        }
    }

    /// The `p` of these weights.
    pub fn p(&self) -> f64 {
        self.p
    }
}

#[inline]
fn var_add(var: &mut f64, w: f64, v: f64) {
    *var += w * v;
}

fn nan_estimate(samples: u64) -> Estimate {
    Estimate {
        value: f64::NAN,
        stderr: f64::NAN,
        samples,
    }
}

/// Mean and standard error of the mean from `Σx`, `Σx²` over `n` samples (unbiased variance).
pub(crate) fn mean_and_error(s1: f64, s2: f64, n: u64) -> Estimate {
    if n == 0 {
        return nan_estimate(0);
    }
    let m = n as f64;
    let mean = s1 / m;
    let var = if n > 1 {
        ((s2 - s1 * mean) / (m - 1.0)).max(0.0)
    } else {
        f64::NAN
    };
    Estimate {
        value: mean,
        stderr: (var / m).sqrt(),
        samples: n,
    }
}

/// The canonical curves of one lattice size on a grid of `p`.
#[derive(Debug, Clone, PartialEq)]
pub struct Curves {
    /// The grid.
    pub p: Vec<f64>,
    /// Per [`Wrapping::ALL`] kind, the estimates along the grid.
    pub wrapping: Vec<Vec<Estimate>>,
    /// `P∞` along the grid.
    pub p_infinity: Vec<Estimate>,
    /// Largest cluster / sites along the grid.
    pub largest: Vec<Estimate>,
    /// Mean cluster size `S` along the grid.
    pub mean_size: Vec<Estimate>,
}

impl Curves {
    /// Evaluates every curve of `sums` on the grid `p`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `p` outside `[0, 1]` or no samples.
    pub fn new(sums: &MicroSums, p: &[f64]) -> Result<Curves> {
        if sums.samples == 0 {
            return Err(Error::InvalidArgument("no samples to evaluate".into()));
        }
        let mut c = Curves {
            p: p.to_vec(),
            wrapping: vec![Vec::with_capacity(p.len()); Wrapping::ALL.len()],
            p_infinity: Vec::with_capacity(p.len()),
            largest: Vec::with_capacity(p.len()),
            mean_size: Vec::with_capacity(p.len()),
        };
        for &pi in p {
            let at = AtP::new(sums.units(), pi)?;
            for (k, kind) in Wrapping::ALL.iter().enumerate() {
                c.wrapping[k].push(at.wrapping(sums, *kind));
            }
            c.p_infinity.push(at.p_infinity(sums));
            c.largest.push(at.largest_fraction(sums));
            c.mean_size.push(at.mean_size(sums));
        }
        Ok(c)
    }
}
