//! Fixed-`p` studies: per lattice size and grid point `p`, exact integer sums over samples of the
//! batch statistics ([`SampleStats`]), and the curves `R(p)`, `P∞(p)`, `S(p)` with binomial
//! standard errors, `R` at the reference `p_c`, and the crossing of `R_hv(p)` with its `L → ∞`
//! value from a weighted line through the grid points around it.
//!
//! Samples at different `p` are independent (the threshold is part of the Philox counter), so
//! the points of a curve have independent errors and the crossing's line fit is honest.

use super::canonical::{mean_and_error, Curves, Estimate, Wrapping};
use super::estimate::{weighted_line, Crossing};
use super::model::Geometry;
use crate::measure::fixed_p::BatchStats;
use crate::{Error, Result};

/// Event counts per grid point, in this order: `R^(h)`, `R^(v)`, `R^(b)`, `R^(e)`, and samples
/// with both `h` and `v` (for the variance of `R_hv`).
pub const COUNT_NAMES: [&str; 5] = ["n_h", "n_v", "n_b", "n_e", "n_hv"];

/// Sums per grid point (exact, `u128`), in this order.
pub const MOMENT_NAMES: [&str; 7] = [
    "percolating",
    "percolating_sq",
    "largest",
    "largest_sq",
    "finite_s2",
    "finite_s2_sq",
    "occupied",
];

/// The fixed-`p` sums of one lattice size.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedSums {
    /// Site model, extents and boundary.
    pub geometry: Geometry,
    /// The grid.
    pub p: Vec<f64>,
    /// Samples done at every grid point (indices `0..samples` of the seed's stream).
    pub samples: u64,
    /// Per grid point, [`COUNT_NAMES`].
    pub counts: Vec<[u64; 5]>,
    /// Per grid point, [`MOMENT_NAMES`].
    pub moments: Vec<[u128; 7]>,
    /// The grid point of the `n_s` histogram (the one nearest the reference `p_c`).
    pub ns_at: usize,
    /// `ns[s]`: clusters of `s` sites that do not percolate at `p[ns_at]`, summed over samples.
    pub ns: Vec<u64>,
}

impl FixedSums {
    /// Empty sums on the grid `p`, with the histogram at the point nearest `p_ref`.
    pub fn new(geometry: Geometry, p: &[f64], p_ref: f64) -> FixedSums {
        let ns_at = p
            .iter()
            .enumerate()
            .min_by(|a, b| (a.1 - p_ref).abs().total_cmp(&(b.1 - p_ref).abs()))
            .map_or(0, |(i, _)| i);
        FixedSums {
            geometry,
            p: p.to_vec(),
            samples: 0,
            counts: vec![[0; 5]; p.len()],
            moments: vec![[0; 7]; p.len()],
            ns_at,
            ns: vec![0; geometry.sites() + 1],
        }
    }

    /// Adds the sums of another study of the same geometry and grid (drawn from another seed,
    /// which the caller checks): counts, moments, `n_s` and samples add.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the geometry, the grid or
    /// the histogram's point differ.
    pub fn merge(&mut self, other: &FixedSums) -> crate::Result<()> {
        if self.geometry != other.geometry
            || self.p != other.p
            || self.ns_at != other.ns_at
            || self.ns.len() != other.ns.len()
        {
            return Err(crate::Error::InvalidArgument(format!(
                "cannot merge fixed-p sums of {:?} on a grid of {} points with sums of {:?} on a \
                 grid of {} points: geometry and p grid must agree",
                self.geometry,
                self.p.len(),
                other.geometry,
                other.p.len()
            )));
        }
        self.samples += other.samples;
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        }
        for (a, b) in self.moments.iter_mut().zip(&other.moments) {
            a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        }
        self.ns.iter_mut().zip(&other.ns).for_each(|(a, b)| *a += b);
        Ok(())
    }

    /// Adds a batch of samples at grid point `i` (the caller adds the same indices at every
    /// point, then raises `samples`).
    pub fn add(&mut self, i: usize, batch: &BatchStats) {
        let c = &mut self.counts[i];
        let m = &mut self.moments[i];
        for s in &batch.samples {
            let (x, y) = (s.along_x(), s.along_y());
            c[0] += u64::from(x);
            c[1] += u64::from(y);
            c[2] += u64::from(s.both());
            c[3] += u64::from(x || y);
            c[4] += u64::from(x && y);
            let (pc, l, f) = (
                u128::from(s.percolating),
                u128::from(s.largest),
                u128::from(s.finite_s2),
            );
            m[0] += pc;
            m[1] += pc * pc;
            m[2] += l;
            m[3] += l * l;
            m[4] += f;
            m[5] += f * f;
            m[6] += u128::from(s.occupied);
        }
        if i == self.ns_at && batch.ns.len() == self.ns.len() {
            for (a, b) in self.ns.iter_mut().zip(&batch.ns) {
                *a += b;
            }
        }
    }

    /// `R` of `kind` at grid point `i` with its binomial standard error.
    pub fn wrapping(&self, i: usize, kind: Wrapping) -> Estimate {
        let c = self.counts[i];
        let n = self.samples;
        let (s1, s2) = match kind {
            Wrapping::H => (c[0] as f64, c[0] as f64),
            Wrapping::V => (c[1] as f64, c[1] as f64),
            Wrapping::B => (c[2] as f64, c[2] as f64),
            Wrapping::E => (c[3] as f64, c[3] as f64),
            // b implies h: the indicator h − b is 0 or 1.
            Wrapping::One => ((c[0] - c[2]) as f64, (c[0] - c[2]) as f64),
            Wrapping::HV => (
                0.5 * (c[0] + c[1]) as f64,
                0.25 * (c[0] + c[1] + 2 * c[4]) as f64,
            ),
        };
        mean_and_error(s1, s2, n)
    }

    /// Mean and error of moment `k` (and `k + 1`, its square) over the samples, divided by
    /// `scale`.
    fn moment(&self, i: usize, k: usize, scale: f64) -> Estimate {
        let m = self.moments[i];
        let e = mean_and_error(m[k] as f64, m[k + 1] as f64, self.samples);
        Estimate {
            value: e.value / scale,
            stderr: e.stderr / scale,
            samples: e.samples,
        }
    }

    /// The curves on the grid.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without samples.
    pub fn curves(&self) -> Result<Curves> {
        if self.samples == 0 {
            return Err(Error::InvalidArgument("no samples to evaluate".into()));
        }
        let sites = self.geometry.sites() as f64;
        let n = self.p.len();
        let mut c = Curves {
            p: self.p.clone(),
            wrapping: vec![Vec::with_capacity(n); Wrapping::ALL.len()],
            p_infinity: Vec::with_capacity(n),
            largest: Vec::with_capacity(n),
            mean_size: Vec::with_capacity(n),
        };
        for i in 0..n {
            for (k, kind) in Wrapping::ALL.iter().enumerate() {
                c.wrapping[k].push(self.wrapping(i, *kind));
            }
            c.p_infinity.push(self.moment(i, 0, sites));
            c.largest.push(self.moment(i, 2, sites));
            // S = ⟨Σ′ s²⟩ / ⟨Σ′ s⟩, Σ′ s = occupied − percolating sites.
            let m = self.moments[i];
            let finite = (m[6] as f64 - m[0] as f64) / self.samples as f64;
            c.mean_size.push(if finite > 0.0 {
                self.moment(i, 4, finite)
            } else {
                Estimate {
                    value: f64::NAN,
                    stderr: f64::NAN,
                    samples: self.samples,
                }
            });
        }
        Ok(c)
    }

    /// `R` of every kind at `p` by linear interpolation between the grid points around it
    /// (NaN outside the grid).
    pub fn at(&self, p: f64) -> [Estimate; 6] {
        let nan = Estimate {
            value: f64::NAN,
            stderr: f64::NAN,
            samples: self.samples,
        };
        let Some(i) = (1..self.p.len()).find(|&i| self.p[i - 1] <= p && p <= self.p[i]) else {
            return match self.p.iter().position(|&q| q == p) {
                Some(i) => Wrapping::ALL.map(|k| self.wrapping(i, k)),
                None => [nan; 6],
            };
        };
        let (a, b) = (self.p[i - 1], self.p[i]);
        let f = if b > a { (p - a) / (b - a) } else { 0.0 };
        Wrapping::ALL.map(|k| {
            let (x, y) = (self.wrapping(i - 1, k), self.wrapping(i, k));
            Estimate {
                value: x.value + f * (y.value - x.value),
                // The errors of independent points combine in quadrature.
                stderr: ((1.0 - f).powi(2) * x.stderr.powi(2) + f * f * y.stderr.powi(2)).sqrt(),
                samples: self.samples,
            }
        })
    }

    /// Where `R_kind(p)` crosses `target`: a weighted straight line through the (up to) four grid
    /// points around the first bracket, `p_x = (target − c) / a`, its error from the fit's
    /// covariance (delta method). Points with `R` at 0 or 1 get the error of one event in the
    /// samples, so that they never carry infinite weight.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without samples, without a bracket on the grid, or for a line
    /// that does not rise.
    pub fn crossing(&self, kind: Wrapping, target: f64) -> Result<Crossing> {
        if self.samples < 2 {
            return Err(Error::InvalidArgument(
                "a crossing needs at least 2 samples".into(),
            ));
        }
        let r: Vec<Estimate> = (0..self.p.len()).map(|i| self.wrapping(i, kind)).collect();
        let Some(i) = (1..r.len()).find(|&i| r[i - 1].value <= target && r[i].value >= target)
        else {
            return Err(Error::InvalidArgument(format!(
                "{} does not cross {target} on the grid",
                kind.name()
            )));
        };
        let lo = i.saturating_sub(2);
        let hi = (i + 2).min(r.len());
        let floor = (1.0 / self.samples as f64) * 0.5;
        // Centred on the bracket, so that the normal matrix stays well conditioned.
        let mid = 0.5 * (self.p[i - 1] + self.p[i]);
        let x: Vec<f64> = self.p[lo..hi].iter().map(|p| p - mid).collect();
        let y: Vec<f64> = r[lo..hi].iter().map(|e| e.value).collect();
        let s: Vec<f64> = r[lo..hi].iter().map(|e| e.stderr.max(floor)).collect();
        let fit = weighted_line(&x, &y, &s, self.samples)?;
        let (c, a) = (fit.intercept.value, fit.slope.value);
        if a.is_nan() || a <= 0.0 {
            return Err(Error::InvalidArgument(format!(
                "{} does not rise around {target}",
                kind.name()
            )));
        }
        let dx = (target - c) / a;
        let px = mid + dx;
        let var = fit.intercept.stderr.powi(2)
            + dx * dx * fit.slope.stderr.powi(2)
            + 2.0 * dx * fit.covariance;
        Ok(Crossing {
            p: Estimate {
                value: px,
                stderr: var.max(0.0).sqrt() / a,
                samples: self.samples,
            },
            slope: a,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::percolation::Model;
    use crate::{Boundary, Connectivity};

    /// Collinear points give the line's own crossing, with an error from the binomial errors;
    /// `at` interpolates between grid points.
    #[test]
    fn crossing_of_a_straight_line() {
        let g = Geometry::new(Model::Site(Connectivity::Four), 8, 8, Boundary::Periodic).unwrap();
        let p = [0.4, 0.5, 0.6, 0.7];
        let mut f = FixedSums::new(g, &p, 0.55);
        f.samples = 1000;
        for (i, r) in [200u64, 400, 600, 800].into_iter().enumerate() {
            f.counts[i] = [r, r, r / 2, r, r];
        }
        let c = f.crossing(Wrapping::HV, 0.5).unwrap();
        assert!((c.p.value - 0.55).abs() < 1e-12, "{c:?}");
        assert!((c.slope - 2.0).abs() < 1e-9);
        // σ_R ≈ sqrt(0.25/1000) at the crossing, averaged over the fitted points: a few 1e-3 in p.
        assert!(c.p.stderr > 1e-3 && c.p.stderr < 1e-2, "{c:?}");
        let at = f.at(0.55);
        assert!((at[5].value - 0.5).abs() < 1e-12);
        assert!(f.at(0.9)[0].value.is_nan());
        assert!(f.crossing(Wrapping::HV, 0.95).is_err());
    }
}
