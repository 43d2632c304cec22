//! The figures of a percolation study: [`plot_study`].

use super::line_chart::{chart, Guide, Series};
use crate::percolation::{Study, StudyResults, Wrapping, NU};
use crate::Result;
use std::path::{Path, PathBuf};

/// Writes the figures of `study` into `dir` (which must exist) and returns their paths:
/// `R_h.png`, `R_e.png`, `R_b.png`, `R_1.png` (R(p) per size, the exact L → ∞ torus value, and
/// for `R_h` the crossings of `(R_h + R_v)/2` marked), `P_inf.png`, `S.png`, `ns.png`
/// (log10 n_s against log10 s at p_c per size, the fitted τ of the largest size) and
/// `pc_extrapolation.png` (p_L against L^(−1−1/ν) with the weighted fit).
///
/// # Errors
/// [`Error::Plot`](crate::Error::Plot) when drawing fails, [`Error::Io`](crate::Error::Io) when a
/// file cannot be written.
pub fn plot_study(study: &Study, results: &StudyResults, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let label = |w: usize, h: usize| {
        if w == h {
            format!("L = {w}")
        } else {
            format!("{w} x {h}")
        }
    };
    let curve = |values: &dyn Fn(usize) -> Vec<(f64, f64)>| -> Vec<Series> {
        results
            .sizes
            .iter()
            .enumerate()
            .map(|(i, s)| Series {
                name: label(s.width, s.height),
                points: s
                    .curves
                    .p
                    .iter()
                    .zip(values(i))
                    .map(|(&p, (v, e))| (p, v, e))
                    .collect(),
                markers: false,
            })
            .collect()
    };
    let model = study.config.model;
    let torus = study.config.boundary == crate::Boundary::Periodic;
    for kind in [Wrapping::H, Wrapping::E, Wrapping::B, Wrapping::One] {
        let k = Wrapping::ALL
            .iter()
            .position(|x| *x == kind)
            .expect("listed");
        let mut series = curve(&|i| {
            results.sizes[i].curves.wrapping[k]
                .iter()
                .map(|e| (e.value, e.stderr))
                .collect()
        });
        let mut guides = Vec::new();
        if torus {
            guides.push(Guide::H(
                kind.torus_limit(),
                format!("exact L -> inf: {}", kind.torus_limit()),
            ));
        }
        if kind == Wrapping::H {
            let pts: Vec<(f64, f64, f64)> = results
                .sizes
                .iter()
                .filter_map(|s| {
                    s.crossing
                        .map(|c| (c.p.value, Wrapping::HV.torus_limit(), 0.0))
                })
                .collect();
            if !pts.is_empty() {
                series.push(Series {
                    name: "crossings of (R_h+R_v)/2".into(),
                    points: pts,
                    markers: true,
                });
            }
        }
        let path = dir.join(format!("{}.png", kind.name()));
        chart(
            &path,
            &format!("{} (p), {model}", kind.name()),
            ("p", kind.name()),
            &series,
            &guides,
        )?;
        out.push(path);
    }
    let pinf = curve(&|i| {
        results.sizes[i]
            .curves
            .p_infinity
            .iter()
            .map(|e| (e.value, e.stderr))
            .collect()
    });
    let path = dir.join("P_inf.png");
    chart(
        &path,
        &format!("P_inf (p), {model}"),
        ("p", "P_inf"),
        &pinf,
        &[],
    )?;
    out.push(path);
    let s = curve(&|i| {
        results.sizes[i]
            .curves
            .mean_size
            .iter()
            .map(|e| (e.value, e.stderr))
            .collect()
    });
    let path = dir.join("S.png");
    chart(
        &path,
        &format!("mean cluster size S (p), {model}"),
        ("p", "S"),
        &s,
        &[],
    )?;
    out.push(path);

    let mut ns = Vec::new();
    let mut guides = Vec::new();
    // Newman–Ziff histograms at n = round(p_c N), or fixed-p ones at the grid point nearest p_c.
    let histograms: Vec<(&[u64], u64, usize)> = if study.sums.is_empty() {
        study
            .fixed
            .iter()
            .map(|f| (&f.ns[..], f.samples, f.geometry.sites()))
            .collect()
    } else {
        study
            .sums
            .iter()
            .filter_map(|s| {
                s.ns_counts
                    .first()
                    .map(|c| (&c[..], s.samples, s.geometry.sites()))
            })
            .collect()
    };
    for ((counts, samples, sites), r) in histograms.into_iter().zip(&results.sizes) {
        let norm = samples as f64 * sites as f64;
        // Log bins of 4 per factor 2, as in the fit.
        let mut pts = Vec::new();
        let mut a = 1u64;
        while (a as usize) < counts.len() {
            let b = ((a as f64 * 2f64.powf(0.25)).ceil() as u64)
                .max(a + 1)
                .min(counts.len() as u64);
            let c: u64 = (a..b).map(|s| counts[s as usize]).sum();
            if c > 0 {
                let x = ((a as f64) * (b as f64 - 1.0)).sqrt();
                let y = c as f64 / (b - a) as f64 / norm;
                pts.push((
                    x.log10(),
                    y.log10(),
                    1.0 / (c as f64).sqrt() / std::f64::consts::LN_10,
                ));
            }
            a = b;
        }
        ns.push(Series {
            name: label(r.width, r.height),
            points: pts,
            markers: true,
        });
    }
    if let Some(t) = results.sizes.last().and_then(|s| s.tau.as_ref()) {
        // The fitted line through the bins: log10 n_s = c − τ log10 s, c from the bins' mean.
        let c = t
            .bins
            .iter()
            .map(|&(s, n, _)| n.log10() + t.tau.value * s.log10())
            .sum::<f64>()
            / t.bins.len() as f64;
        guides.push(Guide::Line(
            c,
            -t.tau.value,
            format!(
                "tau = {:.3} +- {:.3} (s in [{}, {}])",
                t.tau.value, t.tau.stderr, t.range.0, t.range.1
            ),
        ));
    }
    let path = dir.join("ns.png");
    chart(
        &path,
        &format!("n_s at p_c, {model}"),
        ("log10 s", "log10 n_s"),
        &ns,
        &guides,
    )?;
    out.push(path);

    let pts: Vec<(f64, f64, f64)> = results
        .sizes
        .iter()
        .filter_map(|s| {
            s.crossing.map(|c| {
                (
                    (s.width.min(s.height) as f64).powf(-1.0 - 1.0 / NU),
                    c.p.value,
                    c.p.stderr,
                )
            })
        })
        .collect();
    let mut guides = vec![Guide::H(
        results.reference_pc,
        format!("reference p_c = {}", results.reference_pc),
    )];
    if let Some(f) = &results.p_c {
        if f.slope.value.is_finite() {
            guides.push(Guide::Line(
                f.intercept.value,
                f.slope.value,
                format!(
                    "fit: p_c = {:.6} +- {:.6}",
                    f.intercept.value, f.intercept.stderr
                ),
            ));
        }
    }
    let series = [Series {
        name: "p_L (crossing)".into(),
        points: pts,
        markers: true,
    }];
    let path = dir.join("pc_extrapolation.png");
    chart(
        &path,
        &format!("p_c(L), {model}"),
        ("L^(-1-1/nu)", "p_L"),
        &series,
        &guides,
    )?;
    out.push(path);
    Ok(out)
}
