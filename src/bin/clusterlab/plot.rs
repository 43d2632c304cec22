//! `clusterlab plot`: n_s on log-log axes or a label image, as PNG.

use crate::args::{
    check_not_input, check_output_folder, lattice_size, parse_probability, print_stdout,
    LatticeArgs, Stage,
};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use clusterlab::io::{self, Lattice};
use clusterlab::plot::{
    plot_labels, plot_size_distribution, Background, LabelImageOptions, SizePlotOptions,
};
use clusterlab::{Analyzer, Labeler, Measures, Parallelism, SizeDistribution};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlotKind {
    /// The cluster-size distribution n_s on log-log axes.
    Sizes,
    /// The clusters in colour.
    Labels,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackgroundArg {
    /// Empty sites black.
    Black,
    /// Empty sites white.
    White,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  clusterlab plot --size 512 --p 0.592746 --samples 100 --boundary periodic --exclude-percolating
  clusterlab plot pc.npy --kind labels --output clusters.png
  clusterlab plot samples/*.npy --kind sizes --connectivity 8 --output ns.png")]
pub struct PlotArgs {
    /// Lattice files (.npy, .h5, .hdf5; nonzero = occupied). --kind sizes averages n_s over all
    /// of them; --kind labels draws one. Leave out to generate percolation samples instead (--size
    /// and --p).
    #[arg(value_name = "INPUT", required_unless_present = "size")]
    inputs: Vec<PathBuf>,

    /// What to draw: sizes (n_s against s on log-log axes, log-binned, with the s^-187/91 guide of
    /// 2-D percolation) or labels (each cluster in a colour hashed from its label).
    #[arg(short, long, value_enum, default_value_t = PlotKind::Sizes)]
    kind: PlotKind,

    /// Where to write the PNG (replaced atomically). Default: sizes.png or labels.png in the
    /// current folder.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,

    #[command(flatten)]
    lattice: LatticeArgs,

    /// Generate L x L (or H x W) site-percolation samples instead of reading files (MT19937, as
    /// `clusterlab generate` does).
    #[arg(long, value_name = "HxW|L", value_parser = |s: &str| lattice_size(s, 9), requires = "p", conflicts_with_all = ["inputs", "dataset"])]
    size: Option<(usize, usize)>,

    /// Occupation probability of the generated samples, from 0 to 1 (p_c = 0.592746 for site
    /// percolation with 4-connectivity, 0.407254 with 8).
    #[arg(short, long = "p", value_name = "P", value_parser = parse_probability, requires = "size", allow_negative_numbers = true)]
    p: Option<f64>,

    /// Number of generated samples, from 1 to 1000000000 (n_s is averaged over them; --kind
    /// labels draws the first).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1, value_parser = parse_samples, requires = "size")]
    samples: u32,

    /// Seed of the first generated sample; sample i uses seed S + i.
    #[arg(long, value_name = "S", default_value_t = 1, requires = "size")]
    seed: u32,

    /// sizes: leave out the clusters that wrap (periodic axes) or span (open axes), as the
    /// mean cluster size S does.
    #[arg(short = 'x', long)]
    exclude_percolating: bool,

    /// sizes: logarithmic bins per decade of s, from 0 to 100; 0 plots every size that occurs.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=100))]
    bins_per_decade: u32,

    /// sizes: leave out the guide line n_s ∝ s^-τ, τ = 187/91.
    #[arg(long)]
    no_guide: bool,

    /// sizes: the exponent τ of the guide line, above 0 and at most 10.
    #[arg(long, value_name = "TAU", default_value_t = clusterlab::plot::TAU_2D, hide_default_value = true, conflicts_with = "no_guide", value_parser = parse_tau, allow_negative_numbers = true)]
    tau: f64,

    /// sizes: the chart's size in pixels, WxH, each side from 16 to 16384.
    #[arg(long, value_name = "WxH", default_value = "800x600", value_parser = parse_pixels)]
    chart: (u32, u32),

    /// sizes: the caption above the chart, at most 200 characters (default: what was plotted).
    #[arg(long, value_name = "TEXT", value_parser = parse_title)]
    title: Option<String>,

    /// labels: the colour of empty sites.
    #[arg(long, value_enum, default_value_t = BackgroundArg::Black)]
    background: BackgroundArg,

    /// labels: downscale lattices with a side longer than this many pixels (blocks of f x f
    /// sites become one pixel, drawn as their most common cluster when at least half occupied);
    /// from 1 to 16384.
    #[arg(long, value_name = "PIXELS", default_value_t = 2048, value_parser = parse_pixel_count)]
    max_side: u32,

    /// labels: pixels per site (or block) along each axis, to enlarge small lattices; from 1 to
    /// 16384.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = parse_pixel_count)]
    scale: u32,

    /// Also write the numbers behind the chart (replaced atomically; .csv, or .h5 with the
    /// columns under /plot). sizes: one row per plotted point, columns chart (sizes), s_min,
    /// s_max, s (where the point is drawn), count, n_s and guide (the dashed line A s^-τ at s;
    /// empty without it). labels: one row per cluster, columns chart (labels), label, size, r, g,
    /// b (its colour in the image).
    #[arg(long, value_name = "FILE")]
    data: Option<PathBuf>,

    /// Print the summary as one JSON object. Keys: command, kind, output, data, source,
    /// connectivity, boundary, segments; sizes adds samples, sites, clusters, excluded, largest,
    /// points, bins_per_decade, guide_tau and guide_amplitude (null without a guide); labels adds
    /// height, width, clusters, image_width, image_height, block and scale.
    #[arg(long)]
    json: bool,

    /// Print nothing but errors.
    #[arg(short, long, conflicts_with = "json")]
    quiet: bool,
}

fn parse_samples(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=1_000_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a sample count from 1 to 1000000000, not {s:?}"
        )),
    }
}

fn parse_pixel_count(s: &str) -> Result<u32, String> {
    let max = clusterlab::plot::MAX_IMAGE_SIDE;
    match s.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number from 1 to {max}, not {s:?}"
        )),
    }
}

fn parse_pixels(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "expected WxH in pixels, each from 16 to {}, not {s:?}",
            clusterlab::plot::MAX_IMAGE_SIDE
        )
    };
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let dim = |t: &str| {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (16..=clusterlab::plot::MAX_IMAGE_SIDE).contains(n))
            .ok_or_else(bad)
    };
    Ok((dim(w)?, dim(h)?))
}

fn parse_tau(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t > 0.0 && t <= 10.0 => Ok(t),
        _ => Err(format!(
            "expected an exponent above 0 and at most 10, not {s:?}"
        )),
    }
}

fn parse_title(s: &str) -> Result<String, String> {
    match s.chars().count() {
        0..=200 => Ok(s.to_string()),
        n => Err(format!("expected at most 200 characters, not {n}")),
    }
}

/// `clusterlab plot`: n_s on log-log axes or a label image, as PNG.
pub fn run(args: PlotArgs) -> Result<()> {
    // Refuse unusable arguments before any work.
    let output = args.output.clone().unwrap_or_else(|| {
        PathBuf::from(match args.kind {
            PlotKind::Sizes => "sizes.png",
            PlotKind::Labels => "labels.png",
        })
    });
    let ext = output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if ext.as_deref() != Some("png") {
        bail!(
            "{}: unsupported output extension: plots are written as .png",
            output.display()
        );
    }
    check_output_folder(&output)?;
    let inputs: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    check_not_input(&output, &inputs, "an input lattice")?;
    if let Some(data) = &args.data {
        crate::plot_data::check(data, &output)?;
        check_not_input(data, &inputs, "an input lattice")?;
    }
    if args.kind == PlotKind::Labels {
        if args.inputs.len() > 1 {
            bail!(
                "--kind labels draws one lattice: give one input file, not {}",
                args.inputs.len()
            );
        }
        if args.samples > 1 {
            bail!(
                "--kind labels draws one lattice: --samples must be 1, not {}",
                args.samples
            );
        }
    }
    if !(args.tau.is_finite() && args.tau > 0.0) {
        bail!("--tau {}: expected a positive exponent", args.tau);
    }

    let (connectivity, boundary, segments) = (
        args.lattice.connectivity,
        args.lattice.boundary,
        args.lattice.segments,
    );
    let pool = match args.lattice.threads {
        Some(n) => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .with_context(|| format!("cannot start {n} threads"))?,
        ),
        None => None,
    };
    let in_pool = |f: &(dyn Fn() -> Result<SizeDistribution> + Sync)| match &pool {
        Some(p) => p.install(f),
        None => f(),
    };
    let generated = args.size.zip(args.p);
    let what = match generated {
        Some(((h, w), p)) => {
            let n = args.samples;
            format!(
                "{n} sample{} of {h}x{w} site percolation at p = {p}",
                if n == 1 { "" } else { "s" }
            )
        }
        None if args.inputs.len() == 1 => args.inputs[0].display().to_string(),
        None => format!("{} lattice files", args.inputs.len()),
    };
    let setting = format!(
        "{}-connectivity, {} boundary{}",
        connectivity.neighbours(),
        boundary,
        if segments { ", segments" } else { "" }
    );

    let stage = Stage::new(args.quiet || args.json);
    let json = |kind: &str, mut extra: serde_json::Value| {
        let mut doc = serde_json::json!({
            "command": "plot",
            "kind": kind,
            "output": output.display().to_string(),
            "data": args.data.as_ref().map(|d| d.display().to_string()),
            "source": what.clone(),
            "connectivity": connectivity.neighbours(),
            "boundary": boundary.name(),
            "segments": segments,
        });
        if let (Some(doc), Some(extra)) = (doc.as_object_mut(), extra.as_object_mut()) {
            doc.append(extra);
        }
        crate::args::print_json(&doc);
    };
    match args.kind {
        PlotKind::Sizes => {
            let exclude = args.exclude_percolating;
            let analyzer = |parallelism| {
                Analyzer::new(connectivity, boundary)
                    .segments(segments)
                    .measures(Measures::Shape)
                    .parallelism(parallelism)
            };
            let distribution = match generated {
                Some(((h, w), p)) => {
                    stage.set(format!("analyzing {what}"));
                    let seed = args.seed;
                    in_pool(&|| {
                        // Many samples: one per thread; one sample: all threads on it.
                        let inner = if args.samples > 1 {
                            Parallelism::Sequential
                        } else {
                            Parallelism::Rayon
                        };
                        (0..args.samples)
                            .into_par_iter()
                            .map_init(
                                || analyzer(inner),
                                |an, i| -> Result<SizeDistribution> {
                                    let lattice = clusterlab::generate::percolation(
                                        h,
                                        w,
                                        p,
                                        1,
                                        seed.wrapping_add(i),
                                    );
                                    let mut d = SizeDistribution::new();
                                    d.add_table(&an.analyze(lattice.view())?, exclude);
                                    Ok(d)
                                },
                            )
                            .try_reduce(SizeDistribution::new, |mut a, b| {
                                a.merge(&b);
                                Ok(a)
                            })
                    })?
                }
                None => in_pool(&|| {
                    let mut an = analyzer(Parallelism::Rayon);
                    let mut d = SizeDistribution::new();
                    for input in &args.inputs {
                        let dataset = args.lattice.dataset.as_deref();
                        crate::label::refuse_beyond_u32(input, dataset, "the size distribution")?;
                        stage.set(format!("reading {}", input.display()));
                        let lattice = io::read_lattice(input, dataset)?;
                        let (h, w) = lattice.dim();
                        stage.set(format!("analyzing {} ({h}x{w})", input.display()));
                        let table = match &lattice {
                            Lattice::U8(a) => an.analyze(a.view()),
                            Lattice::U16(a) => an.analyze(a.view()),
                            Lattice::U32(a) => an.analyze(a.view()),
                        }
                        .with_context(|| input.display().to_string())?;
                        d.add_table(&table, exclude);
                    }
                    Ok(d)
                })?,
            };
            let mut options = SizePlotOptions::default();
            options.width = args.chart.0;
            options.height = args.chart.1;
            options.bins_per_decade = args.bins_per_decade;
            options.guide = (!args.no_guide).then_some(args.tau);
            options.title = args.title.clone().unwrap_or_else(|| {
                let finite = if exclude { ", finite clusters" } else { "" };
                let source = match generated {
                    Some(((h, w), p)) => format!(
                        "{} sample{} {h}×{w}, p = {p}",
                        args.samples,
                        if args.samples == 1 { "" } else { "s" }
                    ),
                    None => what.clone(),
                };
                format!(
                    "nₛ: {source}, {boundary}, {}-conn.{finite}",
                    connectivity.neighbours()
                )
            });
            stage.set(format!("drawing {}", output.display()));
            plot_size_distribution(&output, &distribution, &options)?;
            let bins = distribution.log_binned(args.bins_per_decade);
            let guide = options.guide.and_then(|tau| {
                clusterlab::plot::guide_amplitude(&bins, tau, distribution.largest())
                    .map(|a| (tau, a))
            });
            if let Some(data) = &args.data {
                stage.set(format!("writing {}", data.display()));
                crate::plot_data::write_sizes(data, &bins, guide)?;
            }
            drop(stage);
            if args.json {
                json(
                    "sizes",
                    serde_json::json!({
                        "samples": distribution.samples(),
                        "sites": distribution.sites(),
                        "clusters": distribution.clusters(),
                        "excluded": distribution.excluded(),
                        "largest": distribution.largest(),
                        "points": bins.len(),
                        "bins_per_decade": args.bins_per_decade,
                        "guide_tau": guide.map(|g| g.0),
                        "guide_amplitude": guide.map(|g| g.1),
                    }),
                );
            } else if !args.quiet {
                let bins = distribution.log_binned(args.bins_per_decade).len();
                let left_out = if exclude {
                    format!(
                        " ({} wrapping or spanning left out)",
                        distribution.excluded()
                    )
                } else {
                    String::new()
                };
                print_stdout(&format!(
                    "{}: n_s of {} clusters{left_out} in {what}, {setting}; {bins} points, s up to {}\n",
                    output.display(),
                    distribution.clusters(),
                    distribution.largest(),
                ));
            }
        }
        PlotKind::Labels => {
            let lattice = match generated {
                Some(((h, w), p)) => {
                    stage.set(format!("generating {h}x{w} lattice"));
                    Lattice::U8(clusterlab::generate::percolation(h, w, p, 1, args.seed))
                }
                None => {
                    let input = &args.inputs[0];
                    let dataset = args.lattice.dataset.as_deref();
                    crate::label::refuse_beyond_u32(input, dataset, "a label image plot")?;
                    stage.set(format!("reading {}", input.display()));
                    io::read_lattice(input, dataset)?
                }
            };
            let (h, w) = lattice.dim();
            stage.set(format!("labeling {h}x{w} lattice"));
            let parallelism = args.lattice.parallelism();
            let mut labeler = Labeler::new(connectivity, boundary)
                .segments(segments)
                .parallelism(parallelism);
            let labels = lattice.label_with(&mut labeler)?;
            let mut options = LabelImageOptions::default();
            options.background = match args.background {
                BackgroundArg::Black => Background::Black,
                BackgroundArg::White => Background::White,
            };
            options.max_side = Some(args.max_side);
            options.scale = args.scale;
            stage.set(format!("drawing {}", output.display()));
            let image = plot_labels(&output, labels.array().view(), &options)?;
            if let Some(data) = &args.data {
                stage.set(format!("writing {}", data.display()));
                crate::plot_data::write_labels(data, &labels, options.background)?;
            }
            drop(stage);
            if args.json {
                json(
                    "labels",
                    serde_json::json!({
                        "height": h,
                        "width": w,
                        "clusters": labels.count(),
                        "image_width": image.width,
                        "image_height": image.height,
                        "block": image.block,
                        "scale": image.scale,
                    }),
                );
            } else if !args.quiet {
                let mut pixels = format!("image {}x{} (WxH)", image.width, image.height);
                if image.block > 1 {
                    pixels.push_str(&format!(", {0}x{0} sites per pixel", image.block));
                }
                if image.scale > 1 {
                    pixels.push_str(&format!(", {0}x{0} pixels per site", image.scale));
                }
                let source = match generated {
                    Some((_, p)) => format!(
                        "a {h}x{w} site-percolation sample (p = {p}, seed {})",
                        args.seed
                    ),
                    None => format!("{} ({h}x{w})", args.inputs[0].display()),
                };
                print_stdout(&format!(
                    "{}: {} clusters of {source}, {setting}; {pixels}\n",
                    output.display(),
                    labels.count(),
                ));
            }
        }
    }
    Ok(())
}
