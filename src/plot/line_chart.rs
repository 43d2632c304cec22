//! One line chart (curves, or markers with error bars, plus dashed guide lines) shared by the
//! figures of percolation studies and Monte Carlo runs.

use super::encode::{encode_png, write_bytes};
use super::font::{register_font, FONT_FAMILY};
use super::plot_error;
use crate::io::write_atomically;
use crate::Result;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (900, 650);

/// One series: `(x, y, stderr of y)` points, drawn as a line (curves) or as markers with error
/// bars (estimates).
pub(crate) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    pub markers: bool,
}

/// A horizontal or vertical guide line.
pub(crate) enum Guide {
    /// y = value.
    H(f64, String),
    /// y = intercept + slope · x.
    Line(f64, f64, String),
    /// x = value (e.g. a critical temperature).
    V(f64, String),
}

fn colour(k: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 90, 180),
        RGBColor(214, 96, 20),
        RGBColor(44, 150, 60),
        RGBColor(200, 30, 40),
        RGBColor(130, 80, 180),
        RGBColor(120, 80, 60),
        RGBColor(220, 100, 170),
        RGBColor(90, 90, 90),
    ];
    C[k % C.len()]
}

pub(crate) fn chart(
    path: &Path,
    title: &str,
    (xdesc, ydesc): (&str, &str),
    series: &[Series],
    guides: &[Guide],
) -> Result<()> {
    register_font()?;
    let (w, h) = SIZE;
    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    {
        let font = |size: f64| (FONT_FAMILY, size).into_font();
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let finite = |v: &f64| v.is_finite();
        let xs = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(guides.iter().filter_map(|g| match g {
                Guide::V(x, _) => Some(*x),
                _ => None,
            }))
            .filter(finite);
        let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let ys = series
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .flat_map(|p| [p.1 - p.2.max(0.0), p.1 + p.2.max(0.0)])
            })
            .chain(guides.iter().filter_map(|g| match g {
                Guide::H(y, _) => Some(*y),
                Guide::Line(..) | Guide::V(..) => None,
            }))
            .filter(finite);
        let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(y), b.max(y))
        });
        let (x0, x1) = if x0 < x1 {
            (x0, x1)
        } else {
            (x0 - 1.0, x0 + 1.0)
        };
        let (y0, y1) = if y0 < y1 {
            (y0, y1)
        } else {
            (y0 - 1.0, y0 + 1.0)
        };
        let (mx, my) = (0.03 * (x1 - x0), 0.06 * (y1 - y0));
        // Extra room at the top for the legend (upper left), so it hides no point.
        let (x0, x1, y0, y1) = if x0.is_finite() && y0.is_finite() {
            (x0 - mx, x1 + mx, y0 - my, y1 + 4.0 * my)
        } else {
            (0.0, 1.0, 0.0, 1.0)
        };
        let mut c = ChartBuilder::on(&root)
            .margin(16)
            .caption(title, font(20.0))
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(plot_error)?;
        c.configure_mesh()
            .x_desc(xdesc)
            .y_desc(ydesc)
            .label_style(font(14.0))
            .axis_desc_style(font(16.0))
            .bold_line_style(RGBColor(210, 210, 210))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(plot_error)?;
        for (k, s) in series.iter().enumerate() {
            let col = colour(k);
            let pts: Vec<(f64, f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            if s.markers {
                c.draw_series(pts.iter().map(|&(x, y, e)| {
                    PathElement::new(
                        vec![(x, y - e.max(0.0)), (x, y + e.max(0.0))],
                        col.stroke_width(1),
                    )
                }))
                .map_err(plot_error)?;
                c.draw_series(
                    pts.iter()
                        .map(|&(x, y, _)| Circle::new((x, y), 4, col.filled())),
                )
                .map_err(plot_error)?
                .label(s.name.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, col.filled()));
            } else {
                c.draw_series(LineSeries::new(
                    pts.iter().map(|&(x, y, _)| (x, y)),
                    col.stroke_width(2),
                ))
                .map_err(plot_error)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2))
                });
            }
        }
        for (k, g) in guides.iter().enumerate() {
            let col = RGBColor(60, 60, 60);
            let (pts, name) = match g {
                Guide::H(y, name) => (vec![(x0, *y), (x1, *y)], name),
                Guide::Line(c0, slope, name) => {
                    (vec![(x0, c0 + slope * x0), (x1, c0 + slope * x1)], name)
                }
                Guide::V(x, name) => (vec![(*x, y0), (*x, y1)], name),
            };
            let style = ShapeStyle::from(&col).stroke_width(1 + (k % 2) as u32);
            c.draw_series(DashedLineSeries::new(pts, 8, 5, style))
                .map_err(plot_error)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(font(14.0))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    let png = encode_png(w, h, png::ColorType::Rgb, &rgb, None)?;
    write_atomically(path, |tmp| write_bytes(tmp, &png))
}
