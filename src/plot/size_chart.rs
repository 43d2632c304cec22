//! The `n_s` chart: [`plot_size_distribution`].

use super::axes::{log_ticks, tick_label};
use super::encode::{encode_png, write_bytes};
use super::font::{register_font, FONT_FAMILY};
use super::{check_image_size, plot_error, SizeBin, SizeDistribution, TAU_2D};
use crate::io::write_atomically;
use crate::{Error, Result};
use plotters::prelude::*;
use std::path::Path;

/// How [`plot_size_distribution`] draws.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SizePlotOptions {
    /// Image width in pixels (default 800).
    pub width: u32,
    /// Image height in pixels (default 600).
    pub height: u32,
    /// The caption above the chart (default "Cluster-size distribution"; empty: none).
    pub title: String,
    /// Logarithmic bins per decade of `s` (default 5); 0 plots every size that occurs.
    pub bins_per_decade: u32,
    /// The exponent τ of a guide line `n_s = A s^−τ` (default `Some(TAU_2D)`); `None`: no line.
    /// `A` is fitted to the points (see [`plot_size_distribution`]).
    pub guide: Option<f64>,
}

impl Default for SizePlotOptions {
    fn default() -> Self {
        SizePlotOptions {
            width: 800,
            height: 600,
            title: "Cluster-size distribution".into(),
            bins_per_decade: 5,
            guide: Some(TAU_2D),
        }
    }
}

/// The amplitude `A` of the guide `n_s = A s^−τ` that [`plot_size_distribution`] draws over
/// `bins` (the distribution's log bins; `largest` its largest size): the mean of
/// `log n_s + τ log s` over the bins clear of small-`s` corrections and of the finite-size
/// cutoff (`s_min ≥ 10`, `s_max ≤ largest / 10`); if fewer than two bins qualify, over those
/// with `s_min ≥ 2`, else all. `None` without bins.
///
/// ```
/// use clusterlab::plot::guide_amplitude;
/// use clusterlab::SizeDistribution;
///
/// let mut ns = SizeDistribution::new();
/// ns.add_sizes([1, 1, 1, 1, 2], 100);
/// let bins = ns.log_binned(0);
/// let a = guide_amplitude(&bins, 2.0, ns.largest()).unwrap();
/// assert!((a - 0.04).abs() < 1e-12); // the one bin with s ≥ 2: n_2 · 2² = 0.01 · 4
/// ```
pub fn guide_amplitude(bins: &[SizeBin], tau: f64, largest: u64) -> Option<f64> {
    let pick =
        |f: &dyn Fn(&SizeBin) -> bool| -> Vec<&SizeBin> { bins.iter().filter(|b| f(b)).collect() };
    let mut chosen = pick(&|b| b.s_min >= 10 && b.s_max.saturating_mul(10) <= largest);
    if chosen.len() < 2 {
        chosen = pick(&|b| b.s_min >= 2);
    }
    if chosen.is_empty() {
        chosen = bins.iter().collect();
    }
    if chosen.is_empty() {
        return None;
    }
    let mean = chosen
        .iter()
        .map(|b| b.ns.ln() + tau * b.s.ln())
        .sum::<f64>()
        / chosen.len() as f64;
    Some(mean.exp())
}

/// Draws `n_s` against `s` on log–log axes and writes the chart as a PNG (RGB) to `path`,
/// atomically.
///
/// The points are the [log-binned](SizeDistribution::log_binned) `n_s` with
/// `options.bins_per_decade`. With `options.guide = Some(τ)` a dashed line `n_s = A s^−τ` is
/// drawn for comparison; `A` is the mean of `log n_s + τ log s` over the bins clear of small-`s`
/// corrections and of the finite-size cutoff (`s_min ≥ 10` and `s_max ≤ s_largest / 10`; if
/// fewer than two bins qualify, those with `s_min ≥ 2`, else all). The axes span the points
/// (and at least one decade); a distribution without clusters gives empty axes with a note.
///
/// # Errors
/// [`Error::InvalidArgument`] when the width or height is 0 or above
/// [`MAX_IMAGE_SIDE`](super::MAX_IMAGE_SIDE), or τ is not a positive finite number; [`Error::Plot`]
/// if plotters fails to draw or the PNG encoder fails; [`Error::Io`] when the file cannot be
/// written (e.g. the folder does not exist). Nothing is left at `path` (or in its folder) on error;
/// a file already there is kept.
pub fn plot_size_distribution(
    path: &Path,
    distribution: &SizeDistribution,
    options: &SizePlotOptions,
) -> Result<()> {
    let (w, h) = (options.width, options.height);
    check_image_size(w, h, "a chart")?;
    if let Some(tau) = options.guide {
        if !(tau.is_finite() && tau > 0.0) {
            return Err(Error::InvalidArgument(format!(
                "guide exponent τ = {tau}: expected a positive number"
            )));
        }
    }
    register_font()?;
    let bins = distribution.log_binned(options.bins_per_decade);
    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    draw_sizes(&mut rgb, (w, h), distribution, &bins, options)?;
    let png = encode_png(w, h, png::ColorType::Rgb, &rgb, None)?;
    write_atomically(path, |tmp| write_bytes(tmp, &png))
}

fn draw_sizes(
    rgb: &mut [u8],
    (w, h): (u32, u32),
    distribution: &SizeDistribution,
    bins: &[SizeBin],
    options: &SizePlotOptions,
) -> Result<()> {
    let font = |size: f64| (FONT_FAMILY, size).into_font();
    // Text sizes follow the image so that small and large charts look alike.
    let unit = f64::from(w.min(h)) / 600.0;
    let root = BitMapBackend::with_buffer(rgb, (w, h)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;

    // Axis ranges: the points with a margin, at least a decade each.
    let (mut x0, mut x1) = (1.0f64, 10.0f64);
    let (mut y0, mut y1) = (1e-6f64, 1.0f64);
    if !bins.is_empty() {
        x0 = bins
            .iter()
            .map(|b| b.s_min as f64)
            .fold(f64::INFINITY, f64::min);
        x1 = bins.iter().map(|b| b.s_max as f64).fold(0.0, f64::max);
        y0 = bins.iter().map(|b| b.ns).fold(f64::INFINITY, f64::min);
        y1 = bins.iter().map(|b| b.ns).fold(0.0, f64::max);
        x0 = (x0 / 1.5).max(0.5);
        x1 = (x1 * 1.5).max(x0 * 10.0);
        y0 /= 3.0;
        y1 = (y1 * 3.0).max(y0 * 10.0);
    }
    let (xb, xl) = log_ticks(x0, x1);
    let (yb, yl) = log_ticks(y0, y1);

    let mut builder = ChartBuilder::on(&root);
    builder
        .margin((16.0 * unit) as u32)
        .x_label_area_size((56.0 * unit) as u32)
        .y_label_area_size((80.0 * unit) as u32);
    if !options.title.is_empty() {
        builder.caption(&options.title, font(20.0 * unit));
    }
    let mut chart = builder
        .build_cartesian_2d(
            (x0..x1)
                .log_scale()
                .with_key_points(xb)
                .with_light_points(xl),
            (y0..y1)
                .log_scale()
                .with_key_points(yb)
                .with_light_points(yl),
        )
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("s (cluster size, sites)")
        .y_desc("nₛ (clusters per site)")
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .label_style(font(15.0 * unit))
        .axis_desc_style(font(17.0 * unit))
        .bold_line_style(RGBColor(200, 200, 200))
        .light_line_style(RGBColor(236, 236, 236))
        .draw()
        .map_err(plot_error)?;

    if bins.is_empty() {
        let style = font(20.0 * unit).color(&RGBColor(120, 120, 120));
        let text = if distribution.excluded() > 0 {
            "no clusters (all of them wrap or span)"
        } else {
            "no clusters"
        };
        let at = ((w as f64 * 0.35) as i32, (h as f64 * 0.45) as i32);
        root.draw(&Text::new(text, at, style)).map_err(plot_error)?;
        root.present().map_err(plot_error)?;
        return Ok(());
    }

    let blue = RGBColor(31, 90, 180);
    let marker = (3.5 * unit).max(2.0) as i32;
    let points_label = if options.bins_per_decade == 0 {
        "nₛ, every size".to_string()
    } else {
        format!("nₛ, {} log bins per decade", options.bins_per_decade)
    };
    chart
        .draw_series(
            bins.iter()
                .map(|b| Circle::new((b.s, b.ns), marker, blue.filled())),
        )
        .map_err(plot_error)?
        .label(points_label)
        .legend(move |(x, y)| Circle::new((x + 10, y), marker, blue.filled()));

    if let Some(tau) = options.guide {
        if let Some(a) = guide_amplitude(bins, tau, distribution.largest()) {
            // The part of A s^−τ inside the y range: s from (A / y1)^(1/τ) to (A / y0)^(1/τ).
            let s_lo = x0.max((a / y1).powf(1.0 / tau));
            let s_hi = x1.min((a / y0).powf(1.0 / tau));
            if s_lo < s_hi {
                let red = RGBColor(200, 40, 40);
                let n = 64;
                let line = (0..=n).map(|i| {
                    let s = s_lo * (s_hi / s_lo).powf(f64::from(i) / f64::from(n));
                    (s, a * s.powf(-tau))
                });
                let label = if (tau - TAU_2D).abs() < 1e-12 {
                    "∝ s^−τ, τ = 187/91 (2-D percolation)".to_string()
                } else {
                    format!("∝ s^−τ, τ = {tau}")
                };
                let width = (1.5 * unit).max(1.0) as u32;
                let style = red.stroke_width(width);
                chart
                    .draw_series(DashedLineSeries::new(
                        line,
                        (8.0 * unit) as i32,
                        (5.0 * unit) as i32,
                        style,
                    ))
                    .map_err(plot_error)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
        }
    }

    chart
        .configure_series_labels()
        .label_font(font(15.0 * unit))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(plot_error)?;
    root.present().map_err(plot_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guide_amplitude_recovers_a_power_law() {
        // Exact n_s = 0.02 s^-τ on 1..=10^5 (counts scaled so that they are whole numbers).
        let tau = TAU_2D;
        let sites = 1e15;
        let bins: Vec<SizeBin> = (0..25)
            .map(|k| {
                let s = 10f64.powf(f64::from(k) / 5.0);
                SizeBin {
                    s_min: s.ceil() as u64,
                    s_max: s.ceil() as u64,
                    s,
                    clusters: (0.02 * s.powf(-tau) * sites) as u64,
                    ns: 0.02 * s.powf(-tau),
                }
            })
            .collect();
        let a = guide_amplitude(&bins, tau, 100_000).unwrap();
        assert!((a / 0.02 - 1.0).abs() < 1e-9, "{a}");
    }
}
