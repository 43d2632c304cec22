//! PNG figures (feature `plot`, on by default): the cluster-size distribution `n_s` on log–log
//! axes, and label images with one colour per cluster.
//!
//! - [`SizeDistribution`] accumulates cluster sizes over one or many lattices (optionally leaving
//!   out the clusters that wrap or span) and gives `n_s`, raw or [log-binned](SizeDistribution::log_binned).
//! - [`plot_size_distribution`] draws it on log–log axes with [plotters](https://docs.rs/plotters),
//!   with an optional guide line `n_s ∝ s^−τ` (by default τ = 187/91, [`TAU_2D`], the exponent of
//!   2-D percolation).
//! - [`plot_labels`] draws a label image: clusters in colours picked from a 255-colour palette by
//!   a hash of the label ([`label_colour`]), empty sites black or white, big lattices downscaled.
//!
//! Both write the PNG atomically (a temporary file in the same folder, renamed into place; see
//! [`write_atomically`]): a failure leaves nothing behind and never a half-written file. The text
//! of the charts uses a subset of DejaVu Sans compiled into the crate (`assets/fonts/`), so
//! nothing is needed from the system: no fonts, no fontconfig.
//!
//! ```
//! use clusterlab::plot::{plot_labels, plot_size_distribution, LabelImageOptions, SizeDistribution,
//!     SizePlotOptions};
//! use clusterlab::{analyze, generate::percolation, Boundary, Connectivity};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let mut ns = SizeDistribution::new();
//! for seed in 1..=4 {
//!     let lattice = percolation(128, 128, 0.592746, 1, seed);
//!     let table = analyze(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
//!     ns.add_table(&table, true); // leave out the wrapping clusters
//! }
//! plot_size_distribution(&dir.path().join("ns.png"), &ns, &SizePlotOptions::default())?;
//!
//! let lattice = percolation(128, 128, 0.592746, 1, 1);
//! let labels = clusterlab::label(lattice.view(), Connectivity::Four, Boundary::Periodic)?;
//! let image = plot_labels(&dir.path().join("labels.png"), labels.array().view(),
//!     &LabelImageOptions::default())?;
//! assert_eq!((image.width, image.height), (128, 128));
//! # Ok::<(), clusterlab::Error>(())
//! ```

use crate::io::write_atomically;
use crate::{ClusterTable, Error, Labels, Result};
use ndarray::ArrayView2;
use plotters::prelude::*;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

/// The cluster-size exponent τ = 187/91 of 2-D percolation (site or bond, 4- or
/// 8-connectivity: it is universal): at the threshold `n_s ∝ s^−τ` for `1 ≪ s ≪ L^D`.
pub const TAU_2D: f64 = 187.0 / 91.0;

/// The largest width or height of a PNG written here, in pixels: beyond it a chart or label
/// image is refused (it would take gigabytes) rather than attempted.
pub const MAX_IMAGE_SIDE: u32 = 16384;

/// The chart font: DejaVu Sans, cut down to the characters the charts need (`assets/fonts/`).
const FONT_BYTES: &[u8] = include_bytes!("../assets/fonts/DejaVuSans-subset.ttf");
/// Our own family name, so that a program registering its own "sans-serif" with plotters is not
/// overridden (and does not override ours).
const FONT_FAMILY: &str = "clusterlab-sans";

/// Registers the embedded font with plotters once per process.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Plot(
            "the embedded chart font could not be loaded".into(),
        ))
    }
}

/// Cluster sizes accumulated over one or more lattices: the data of an `n_s` plot.
///
/// `n_s` is the number of clusters of `s` sites per lattice site, averaged over the lattices
/// added: the total count of such clusters divided by the total number of sites. (For lattices of
/// one size that is the mean over samples of each lattice's `n_s`, as
/// [`ClusterTable::size_distribution`] defines it.)
///
/// ```
/// use clusterlab::plot::SizeDistribution;
///
/// let mut ns = SizeDistribution::new();
/// ns.add_sizes([1, 1, 2], 10); // a lattice of 10 sites with clusters of 1, 1 and 2 sites
/// ns.add_sizes([3], 10);
/// assert_eq!(ns.ns(), vec![(1, 2.0 / 20.0), (2, 1.0 / 20.0), (3, 1.0 / 20.0)]);
/// assert_eq!((ns.samples(), ns.clusters(), ns.largest()), (2, 4, 3));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SizeDistribution {
    counts: BTreeMap<u64, u64>,
    sites: u64,
    samples: usize,
    excluded: u64,
}

/// One bin of a [log-binned](SizeDistribution::log_binned) size distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeBin {
    /// The smallest size in the bin.
    pub s_min: u64,
    /// The largest size in the bin.
    pub s_max: u64,
    /// Where the bin is plotted: the geometric mean `√(s_min · s_max)`.
    pub s: f64,
    /// Clusters in the bin.
    pub clusters: u64,
    /// `n_s` averaged over the sizes of the bin: clusters in the bin / (sizes in the bin ·
    /// sites).
    pub ns: f64,
}

impl SizeDistribution {
    /// An empty distribution.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the clusters of one lattice's table; with `exclude_percolating`, those that wrap or
    /// span along either axis are left out (counted in [`SizeDistribution::excluded`]), as the
    /// primed sums of [`LatticeStats`](crate::LatticeStats) leave them out. The lattice's sites
    /// count in full either way.
    pub fn add_table(&mut self, table: &ClusterTable, exclude_percolating: bool) {
        let (h, w) = table.shape;
        for (i, &s) in table.size.iter().enumerate() {
            if exclude_percolating && table.percolates_at(i) {
                self.excluded += 1;
            } else if s > 0 {
                *self.counts.entry(s).or_insert(0) += 1;
            }
        }
        self.sites += (h * w) as u64;
        self.samples += 1;
    }

    /// Adds the clusters of one labeled lattice (all of them: labels do not say which clusters
    /// wrap).
    pub fn add_labels(&mut self, labels: &Labels) {
        let (h, w) = labels.array().dim();
        let sizes = labels.sizes();
        self.add_sizes(sizes.into_iter().skip(1), (h * w) as u64);
    }

    /// Adds one lattice of `sites` sites whose clusters have the sizes `sizes` (zeros are
    /// ignored).
    pub fn add_sizes<I: IntoIterator<Item = u64>>(&mut self, sizes: I, sites: u64) {
        for s in sizes {
            if s > 0 {
                *self.counts.entry(s).or_insert(0) += 1;
            }
        }
        self.sites += sites;
        self.samples += 1;
    }

    /// Adds everything `other` holds (to combine distributions gathered in parallel).
    pub fn merge(&mut self, other: &SizeDistribution) {
        for (&s, &n) in &other.counts {
            *self.counts.entry(s).or_insert(0) += n;
        }
        self.sites += other.sites;
        self.samples += other.samples;
        self.excluded += other.excluded;
    }

    /// The number of lattices added.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The total number of sites of the lattices added.
    pub fn sites(&self) -> u64 {
        self.sites
    }

    /// The number of clusters counted.
    pub fn clusters(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The number of clusters left out because they wrap or span.
    pub fn excluded(&self) -> u64 {
        self.excluded
    }

    /// The largest size counted (0 without clusters).
    pub fn largest(&self) -> u64 {
        self.counts.keys().next_back().copied().unwrap_or(0)
    }

    /// `(s, n_s)` for every size that occurs, in increasing `s`.
    pub fn ns(&self) -> Vec<(u64, f64)> {
        let sites = self.sites.max(1) as f64;
        self.counts
            .iter()
            .map(|(&s, &n)| (s, n as f64 / sites))
            .collect()
    }

    /// `n_s` in logarithmic bins, `bins_per_decade` to a factor of 10, without the empty bins.
    ///
    /// The bin edges are the integers `⌈10^(k / bins_per_decade)⌉`, `k = 0, 1, …` (repeated
    /// edges merged, so every bin holds at least one size): a bin from `s_min` to `s_max` holds
    /// `s_max − s_min + 1` sizes, and its `n_s` is the mean over them, zeros included — the
    /// average that keeps a power law a power law at large `s`, where most sizes never occur.
    /// With `bins_per_decade` = 0 every size that occurs is its own bin.
    ///
    /// ```
    /// use clusterlab::plot::SizeDistribution;
    ///
    /// let mut ns = SizeDistribution::new();
    /// ns.add_sizes([1, 2, 2, 9, 10, 11, 99], 100);
    /// let bins = ns.log_binned(1); // edges 1, 10, 100: bins 1..=9, 10..=99
    /// assert_eq!((bins[0].s_min, bins[0].s_max, bins[0].clusters), (1, 9, 4));
    /// assert_eq!(bins[0].ns, 4.0 / 9.0 / 100.0);
    /// assert_eq!((bins[1].s_min, bins[1].s_max, bins[1].clusters), (10, 99, 3));
    /// assert_eq!(bins.len(), 2);
    /// ```
    pub fn log_binned(&self, bins_per_decade: u32) -> Vec<SizeBin> {
        let sites = self.sites.max(1) as f64;
        if bins_per_decade == 0 {
            return self
                .counts
                .iter()
                .map(|(&s, &n)| SizeBin {
                    s_min: s,
                    s_max: s,
                    s: s as f64,
                    clusters: n,
                    ns: n as f64 / sites,
                })
                .collect();
        }
        let largest = self.largest();
        let mut out = Vec::new();
        let mut k = 0u32;
        let mut lo = 1u64;
        while lo <= largest {
            // The next edge above `lo`.
            let mut hi = lo;
            while hi <= lo {
                k += 1;
                hi = decade_edge(k, bins_per_decade);
            }
            let s_max = hi - 1;
            let clusters: u64 = self.counts.range(lo..=s_max).map(|(_, &n)| n).sum();
            if clusters > 0 {
                let width = (s_max - lo + 1) as f64;
                out.push(SizeBin {
                    s_min: lo,
                    s_max,
                    s: ((lo as f64) * (s_max as f64)).sqrt(),
                    clusters,
                    ns: clusters as f64 / width / sites,
                });
            }
            lo = hi;
        }
        out
    }
}

/// `⌈10^(k/b)⌉`, exact at the powers of ten (where `powf` may land a hair above).
fn decade_edge(k: u32, b: u32) -> u64 {
    let e = 10f64.powf(f64::from(k) / f64::from(b));
    let r = e.round();
    if (e - r).abs() <= 1e-9 * e {
        r as u64
    } else {
        e.ceil() as u64
    }
}

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

/// The amplitude `A` of the guide `n_s = A s^−τ`: the mean of `log n_s + τ log s` over the bins
/// clear of small-`s` corrections and of the finite-size cutoff (`s_min ≥ 10`, `s_max ≤
/// largest / 10`); if fewer than two bins qualify, over those with `s_min ≥ 2`, else all.
fn guide_amplitude(bins: &[SizeBin], tau: f64, largest: u64) -> Option<f64> {
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

/// `10ᵏ` with superscript digits.
fn power_of_ten(k: i32) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut s = String::from("10");
    if k < 0 {
        s.push('⁻');
    }
    for d in k.unsigned_abs().to_string().bytes() {
        s.push(SUP[usize::from(d - b'0')]);
    }
    s
}

/// Tick values for a log axis over `[lo, hi]`: the powers of ten inside (every second, third …
/// decade when there are many), and the multiples 2…9 of each decade for the light grid.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let k0 = lo.log10().ceil() as i32;
    let k1 = hi.log10().floor() as i32;
    let decades = (k1 - k0 + 1).max(1);
    let step = (decades + 7) / 8;
    let bold: Vec<f64> = (k0..=k1)
        .filter(|k| (k - k0) % step == 0)
        .map(|k| 10f64.powi(k))
        .collect();
    let mut light = Vec::new();
    if step == 1 {
        for k in (k0 - 1)..=k1 {
            for m in 2..=9 {
                let v = f64::from(m) * 10f64.powi(k);
                if v >= lo && v <= hi {
                    light.push(v);
                }
            }
        }
    }
    (bold, light)
}

/// The label of a tick at a power of ten.
fn tick_label(v: &f64) -> String {
    power_of_ten(v.log10().round() as i32)
}

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::Plot(e.to_string())
}

fn check_image_size(width: u32, height: u32, what: &str) -> Result<()> {
    if width == 0 || height == 0 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
        return Err(Error::InvalidArgument(format!(
            "{what} of {width}x{height} pixels: width and height must be from 1 to {MAX_IMAGE_SIDE}"
        )));
    }
    Ok(())
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
/// [`Error::InvalidArgument`] when the width or height is 0 or above [`MAX_IMAGE_SIDE`], or τ is
/// not a positive finite number; [`Error::Plot`] if plotters fails to draw or the PNG encoder
/// fails; [`Error::Io`] when the file cannot be written (e.g. the folder does not exist). Nothing
/// is left at `path` (or in its folder) on error; a file already there is kept.
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

/// The colour of empty sites in a label image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Background {
    /// Black, `#000000` (the default).
    #[default]
    Black,
    /// White, `#ffffff`.
    White,
}

impl Background {
    /// The colour as RGB.
    pub fn rgb(self) -> [u8; 3] {
        match self {
            Background::Black => [0, 0, 0],
            Background::White => [255, 255, 255],
        }
    }
}

/// How [`plot_labels`] draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LabelImageOptions {
    /// The colour of empty sites (label 0).
    pub background: Background,
    /// Downscale lattices larger than this (default `Some(2048)`): sites are grouped in `f × f`
    /// blocks, `f` the smallest whole factor that brings both sides to at most `max_side`, and
    /// each block becomes one pixel (see [`plot_labels`]). `None`: one pixel per site.
    pub max_side: Option<u32>,
    /// Pixels per site (or per block) along each axis, to enlarge small lattices (default 1).
    pub scale: u32,
}

impl Default for LabelImageOptions {
    fn default() -> Self {
        LabelImageOptions {
            background: Background::Black,
            max_side: Some(2048),
            scale: 1,
        }
    }
}

/// What [`plot_labels`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LabelImage {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Sites per block side: 1 unless the lattice was downscaled.
    pub block: usize,
    /// Pixels per block side.
    pub scale: u32,
}

/// Colours of the clusters: 255 entries, hues spread by the golden angle, saturation and value
/// varied in small cycles so that neighbouring entries differ in more than hue. Every entry has
/// a value ≥ 0.62 and a saturation ≥ 0.5, so none is near black or white (the backgrounds).
fn palette() -> &'static [[u8; 3]; 255] {
    static PALETTE: OnceLock<[[u8; 3]; 255]> = OnceLock::new();
    PALETTE.get_or_init(|| {
        let mut p = [[0u8; 3]; 255];
        for (i, c) in p.iter_mut().enumerate() {
            let i = i as u32;
            let hue = (f64::from(i) * 0.381_966_011_250_105).fract() * 6.0;
            let s = [0.95, 0.7, 0.5][(i % 3) as usize];
            let v = [0.98, 0.8, 0.62, 0.9][(i % 4) as usize];
            // HSV to RGB with plain arithmetic (identical on every platform).
            let sector = hue.floor();
            let f = hue - sector;
            let (pv, qv, tv) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
            let (r, g, b) = match sector as u32 {
                0 => (v, tv, pv),
                1 => (qv, v, pv),
                2 => (pv, v, tv),
                3 => (pv, qv, v),
                4 => (tv, pv, v),
                _ => (v, pv, qv),
            };
            let byte = |x: f64| (x * 255.0).round().clamp(0.0, 255.0) as u8;
            *c = [byte(r), byte(g), byte(b)];
        }
        p
    })
}

/// The palette entry (0..255) of cluster `label` ≥ 1: a 64-bit mix of the label (SplitMix64's
/// finalizer), so that clusters with neighbouring labels get unrelated colours, and the same
/// label the same colour in every image and on every platform.
fn palette_index(label: u32) -> usize {
    let mut z = u64::from(label).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % 255) as usize
}

/// The colour [`plot_labels`] gives cluster `label` (RGB); label 0, the empty sites, gets
/// `background`'s colour. Cluster colours come from a fixed palette of 255 colours, none of
/// them near black or white, chosen by a hash of the label: stable across images and platforms,
/// unrelated for neighbouring labels. Two clusters can share a colour (1 chance in 255 for
/// two given clusters).
pub fn label_colour(label: u32, background: Background) -> [u8; 3] {
    if label == 0 {
        background.rgb()
    } else {
        palette()[palette_index(label)]
    }
}

/// The value a block of labels is drawn as: its most common cluster (the smaller label on a tie)
/// when at least half of its sites are occupied, else 0.
fn block_label(values: &mut Vec<u32>) -> u32 {
    let total = values.len();
    values.retain(|&l| l != 0);
    if values.len() * 2 < total || values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    let (mut best, mut best_n) = (0u32, 0usize);
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j < values.len() && values[j] == values[i] {
            j += 1;
        }
        if j - i > best_n {
            (best, best_n) = (values[i], j - i);
        }
        i = j;
    }
    best
}

/// Draws a label image — 0 = empty, any other value a cluster — and writes it as a PNG to
/// `path`, atomically. Row `y` of `labels` is pixel row `y` (top to bottom), column `x` pixel
/// column `x`.
///
/// Each cluster gets [`label_colour`], empty sites `options.background`. The PNG is indexed
/// (palette entry 0 the background, entries 1–255 the cluster colours), 8 bits per pixel.
///
/// A lattice with a side above `options.max_side` is downscaled: sites are grouped in `f × f`
/// blocks (`f` the smallest factor that brings both sides within `max_side`; the last row and
/// column of blocks may be cut short) and a block is drawn in the colour of its most common
/// cluster (the smaller label on a tie) when at least half of its sites are occupied, else as
/// background. Then each block (or site) becomes `options.scale × options.scale` pixels.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lattice has no sites, `max_side` or `scale` is 0, or the
/// image would be wider or taller than [`MAX_IMAGE_SIDE`] (lower `scale` or set `max_side`);
/// [`Error::Plot`] if the PNG encoder fails; [`Error::Io`] when the file cannot be written.
/// Nothing is left at `path` (or in its folder) on error; a file already there is kept.
pub fn plot_labels(
    path: &Path,
    labels: ArrayView2<'_, u32>,
    options: &LabelImageOptions,
) -> Result<LabelImage> {
    let (h, w) = labels.dim();
    if h == 0 || w == 0 {
        return Err(Error::InvalidArgument(format!(
            "a {h}x{w} lattice has no sites to draw"
        )));
    }
    if options.scale == 0 {
        return Err(Error::InvalidArgument(
            "label image scale must be at least 1 pixel per site".into(),
        ));
    }
    let block = match options.max_side {
        Some(0) => {
            return Err(Error::InvalidArgument(
                "label image max_side must be at least 1 pixel".into(),
            ))
        }
        Some(m) => h.max(w).div_ceil(m as usize),
        None => 1,
    };
    let (bh, bw) = (h.div_ceil(block), w.div_ceil(block));
    let scale = options.scale as usize;
    let too_big = |n: usize| {
        n.checked_mul(scale)
            .is_none_or(|p| p > MAX_IMAGE_SIDE as usize)
    };
    if too_big(bh) || too_big(bw) {
        return Err(Error::InvalidArgument(format!(
            "a label image of {}x{} pixels ({h}x{w} sites, {block}x{block} sites per block, \
             scale {scale}) is larger than {MAX_IMAGE_SIDE} pixels a side: lower the scale or \
             the maximum side",
            bh.saturating_mul(scale),
            bw.saturating_mul(scale)
        )));
    }
    let (ph, pw) = (bh * scale, bw * scale);
    let mut pixels = vec![0u8; ph * pw];
    // One band of `scale` pixel rows per row of blocks, in parallel.
    pixels
        .par_chunks_mut(pw * scale)
        .enumerate()
        .for_each_init(Vec::new, |values, (by, band)| {
            let (row, rest) = band.split_at_mut(pw);
            for bx in 0..bw {
                let label = if block == 1 {
                    labels[[by, bx]]
                } else {
                    values.clear();
                    let ys = by * block..((by + 1) * block).min(h);
                    let xs = bx * block..((bx + 1) * block).min(w);
                    for y in ys {
                        values.extend(xs.clone().map(|x| labels[[y, x]]));
                    }
                    block_label(values)
                };
                let index = if label == 0 {
                    0
                } else {
                    palette_index(label) as u8 + 1
                };
                row[bx * scale..(bx + 1) * scale].fill(index);
            }
            for copy in rest.chunks_mut(pw) {
                copy.copy_from_slice(row);
            }
        });
    let mut plte = Vec::with_capacity(256 * 3);
    plte.extend_from_slice(&options.background.rgb());
    for c in palette() {
        plte.extend_from_slice(c);
    }
    let png = encode_png(
        pw as u32,
        ph as u32,
        png::ColorType::Indexed,
        &pixels,
        Some(plte),
    )?;
    write_atomically(path, |tmp| write_bytes(tmp, &png))?;
    Ok(LabelImage {
        width: pw as u32,
        height: ph as u32,
        block,
        scale: options.scale,
    })
}

/// The PNG file of an 8-bit image, in memory (so that every write error surfaces when the file
/// is written, rather than in a buffered writer's drop).
fn encode_png(
    width: u32,
    height: u32,
    color: png::ColorType,
    data: &[u8],
    palette: Option<Vec<u8>>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(color);
        encoder.set_depth(png::BitDepth::Eight);
        if let Some(p) = palette {
            encoder.set_palette(p);
        }
        let mut writer = encoder.write_header().map_err(png_error)?;
        writer.write_image_data(data).map_err(png_error)?;
        writer.finish().map_err(png_error)?;
    }
    Ok(out)
}

fn png_error(e: png::EncodingError) -> Error {
    Error::Plot(format!("PNG encoder: {e}"))
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decade_edges_are_exact_at_powers_of_ten() {
        for b in 1..=20 {
            for m in 0..12 {
                assert_eq!(decade_edge(m * b, b), 10u64.pow(m), "b = {b}, 10^{m}");
            }
        }
    }

    #[test]
    fn log_bins_cover_every_size_once() {
        // Against a direct count: every size 1..=largest falls in exactly one bin, and the
        // bins' clusters add up.
        for b in [1u32, 2, 3, 5, 7, 10, 20] {
            let mut ns = SizeDistribution::new();
            let sizes: Vec<u64> = (1..=5000u64).filter(|s| s % 7 != 3).collect();
            ns.add_sizes(sizes.iter().copied(), 1_000_000);
            let bins = ns.log_binned(b);
            let mut next = 1;
            for bin in &bins {
                assert!(bin.s_min <= bin.s_max);
                // Empty bins are skipped, but none are empty here except where all sizes ≡ 3.
                assert!(bin.s_min >= next);
                next = bin.s_max + 1;
                let want = sizes
                    .iter()
                    .filter(|&&s| s >= bin.s_min && s <= bin.s_max)
                    .count() as u64;
                assert_eq!(bin.clusters, want);
                let width = (bin.s_max - bin.s_min + 1) as f64;
                assert_eq!(bin.ns, want as f64 / width / 1e6);
            }
            assert_eq!(
                bins.iter().map(|b| b.clusters).sum::<u64>(),
                sizes.len() as u64
            );
        }
    }

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

    #[test]
    fn block_label_is_majority_of_the_occupied() {
        assert_eq!(block_label(&mut vec![0, 0, 0, 5]), 0);
        assert_eq!(block_label(&mut vec![0, 0, 5, 5]), 5);
        assert_eq!(block_label(&mut vec![0, 7, 5, 7]), 7);
        assert_eq!(block_label(&mut vec![9, 7, 9, 7]), 7);
        assert_eq!(block_label(&mut vec![3]), 3);
        assert_eq!(block_label(&mut vec![0]), 0);
    }

    #[test]
    fn palette_avoids_the_backgrounds() {
        for c in palette() {
            let max = *c.iter().max().unwrap();
            let min = *c.iter().min().unwrap();
            assert!(max >= 150, "{c:?} is near black");
            assert!(min <= max / 2 + 1, "{c:?} is near white or grey");
        }
    }

    #[test]
    fn superscript_powers() {
        assert_eq!(power_of_ten(0), "10⁰");
        assert_eq!(power_of_ten(3), "10³");
        assert_eq!(power_of_ten(-12), "10⁻¹²");
    }
}
