//! The figures of a Monte Carlo run: [`plot_run`].

use super::line_chart::{chart, Guide, Series};
use crate::mc::{summarize, Estimate, Sample, Summary};
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Points drawn per time series: longer series are thinned to every k-th sample.
const SERIES_POINTS: usize = 2000;
/// Bins of the histograms.
const BINS: usize = 60;

/// One chain of a run, as [`plot_run`] draws it.
#[derive(Debug, Clone, Copy)]
pub struct ChainPlot<'a> {
    /// Its temperature.
    pub temperature: f64,
    /// The sweep number of each sample.
    pub sweeps: &'a [u64],
    /// The samples.
    pub samples: &'a [Sample],
}

/// One observable of a sample, by name.
type Observable = (&'static str, &'static str, fn(&Sample) -> f64);
const OBSERVABLES: [Observable; 2] = [
    ("energy", "energy per site e", |s| s.energy),
    ("abs_m", "|m|", |s| s.abs_m),
];

/// One summary estimate against T, by name.
type Derived = (&'static str, &'static str, fn(&Summary) -> Estimate);
const DERIVED: [Derived; 4] = [
    ("binder", "Binder cumulant U4", |s| s.binder),
    ("susceptibility", "susceptibility chi", |s| s.susceptibility),
    ("specific_heat", "specific heat c", |s| s.specific_heat),
    ("energy_vs_t", "energy per site e", |s| s.energy),
];

/// The histogram's first edge and bin width for `values`. Energies and magnetisations of a
/// finite lattice are discrete (steps of 4/N for the Ising energy): bins that are a whole number
/// of steps wide, centred on the values, keep the histogram free of the comb that equal-width
/// bins would draw.
fn binning(values: &[f64]) -> (f64, f64) {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let (Some(&lo), Some(&hi)) = (v.first(), v.last()) else {
        return (0.0, 1.0);
    };
    if hi <= lo {
        return (lo - 0.5, 1.0);
    }
    let range = hi - lo;
    let step = v
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&d| d > range * 1e-9)
        .fold(f64::INFINITY, f64::min);
    if range / step > 1e6 {
        return (lo, range / BINS as f64 * (1.0 + 1e-12));
    }
    let width = step * (range / step / BINS as f64).ceil().max(1.0);
    (lo - step / 2.0, width)
}

/// Writes the figures of a run into `dir` (which must exist) and returns their paths:
/// per observable (energy, |m|) the time series of every chain (`*_series.png`, thinned to
/// about 2000 points) and its normalised histogram (`*_hist.png`); against the temperature, the
/// Binder cumulant, the susceptibility, the specific heat and the energy with their error bars
/// (from τ_int), with `critical` (e.g. the exact T_c) as a dashed line. `sites` is the lattice's
/// site count (for the fluctuation observables), `title` names the run in every caption.
///
/// # Errors
/// [`Error::InvalidArgument`] when there is no chain or a chain has no samples,
/// [`Error::Plot`] when drawing fails, [`Error::Io`] when a file cannot be written.
pub fn plot_run(
    title: &str,
    chains: &[ChainPlot<'_>],
    sites: usize,
    critical: Option<f64>,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    if chains.is_empty() || chains.iter().any(|c| c.samples.is_empty()) {
        return Err(Error::InvalidArgument(
            "a run with no samples has nothing to plot".into(),
        ));
    }
    let name = |c: &ChainPlot<'_>| format!("T = {:.6}", c.temperature);
    let mut out = Vec::new();
    for (key, desc, f) in OBSERVABLES {
        let series: Vec<Series> = chains
            .iter()
            .map(|c| {
                let stride = c.samples.len().div_ceil(SERIES_POINTS).max(1);
                Series {
                    name: name(c),
                    points: c
                        .samples
                        .iter()
                        .zip(c.sweeps)
                        .step_by(stride)
                        .map(|(s, &t)| (t as f64, f(s), 0.0))
                        .collect(),
                    markers: false,
                }
            })
            .collect();
        let path = dir.join(format!("{key}_series.png"));
        chart(
            &path,
            &format!("{desc} per sweep, {title}"),
            ("sweep", desc),
            &series,
            &[],
        )?;
        out.push(path);

        // One binning for all chains, so that their histograms compare.
        let values: Vec<f64> = chains
            .iter()
            .flat_map(|c| c.samples.iter().map(f))
            .collect();
        let (lo, width) = binning(&values);
        let hi = values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(lo, f64::max);
        let bins = ((hi - lo) / width) as usize + 1;
        let series: Vec<Series> = chains
            .iter()
            .map(|c| {
                let mut counts = vec![0u64; bins];
                for v in c.samples.iter().map(f).filter(|v| v.is_finite()) {
                    let b = (((v - lo) / width) as usize).min(bins - 1);
                    counts[b] += 1;
                }
                let n = c.samples.len() as f64;
                Series {
                    name: name(c),
                    points: counts
                        .iter()
                        .enumerate()
                        .map(|(b, &k)| (lo + (b as f64 + 0.5) * width, k as f64 / (n * width), 0.0))
                        .collect(),
                    markers: false,
                }
            })
            .collect();
        let path = dir.join(format!("{key}_hist.png"));
        chart(
            &path,
            &format!("histogram of {desc}, {title}"),
            (desc, "density"),
            &series,
            &[],
        )?;
        out.push(path);
    }

    let summaries: Vec<(f64, Summary)> = chains
        .iter()
        .map(|c| {
            (
                c.temperature,
                summarize(c.samples, 1.0 / c.temperature, sites),
            )
        })
        .collect();
    let guides: Vec<Guide> = critical
        .map(|t| Guide::V(t, format!("T_c = {t:.6}")))
        .into_iter()
        .collect();
    for (key, desc, f) in DERIVED {
        let mut points: Vec<(f64, f64, f64)> = summaries
            .iter()
            .map(|(t, s)| {
                let e = f(s);
                (*t, e.mean, e.stderr)
            })
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let series = [Series {
            name: title.to_string(),
            points,
            markers: true,
        }];
        let path = dir.join(format!("{key}.png"));
        chart(
            &path,
            &format!("{desc} against T, {title}"),
            ("temperature T", desc),
            &series,
            &guides,
        )?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(e: f64, m: f64) -> Sample {
        Sample {
            energy: e,
            m,
            abs_m: m.abs(),
            m2: m * m,
            m4: m.powi(4),
            cluster_num: m * m,
            cluster_den: 1.0,
        }
    }

    #[test]
    fn bins_are_whole_steps_of_discrete_values() {
        // Ising energies of 16 × 16: steps of 4/256.
        let values: Vec<f64> = (0..300)
            .map(|k| -2.0 + 4.0 / 256.0 * (k % 90) as f64)
            .collect();
        let (lo, width) = binning(&values);
        let step = 4.0 / 256.0;
        assert!(
            (width / step - (width / step).round()).abs() < 1e-9,
            "{width}"
        );
        assert!((lo - (-2.0 - step / 2.0)).abs() < 1e-12);
        // Continuous values: BINS equal bins over the range.
        let values: Vec<f64> = (0..1000).map(|k| (k as f64 * 0.7).sin()).collect();
        let (lo, width) = binning(&values);
        assert!(lo >= -1.0 && (width * BINS as f64 - 2.0).abs() < 0.01);
        assert_eq!(binning(&[]), (0.0, 1.0));
        assert_eq!(binning(&[3.0, 3.0]), (2.5, 1.0));
    }

    #[test]
    fn writes_every_figure_and_refuses_empty_runs() {
        let dir = tempfile::tempdir().unwrap();
        let a: Vec<Sample> = (0..500)
            .map(|i| sample(-1.4 + 0.01 * (i % 7) as f64, 0.1 * (i % 5) as f64))
            .collect();
        let sweeps: Vec<u64> = (0..500).collect();
        let chains = [
            ChainPlot {
                temperature: 2.2,
                sweeps: &sweeps,
                samples: &a,
            },
            ChainPlot {
                temperature: 2.3,
                sweeps: &sweeps,
                samples: &a[..100],
            },
        ];
        let paths = plot_run("ising 16x16", &chains, 256, Some(2.269), dir.path()).unwrap();
        assert_eq!(paths.len(), 8);
        for p in &paths {
            let bytes = std::fs::read(p).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{}", p.display());
        }
        assert!(matches!(
            plot_run("x", &[], 256, None, dir.path()),
            Err(Error::InvalidArgument(_))
        ));
        let empty = [ChainPlot {
            temperature: 2.0,
            sweeps: &[],
            samples: &[],
        }];
        assert!(plot_run("x", &empty, 256, None, dir.path()).is_err());
    }
}
