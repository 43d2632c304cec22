//! `clusterlab analyze`: measure every cluster of a lattice file, print the summary, write the
//! table.

use crate::args::{
    check_not_input, check_output_folder, mode, parse_backend, print_json, print_stdout,
    rayon_threads, LatticeArgs, OutputArgs, Stage,
};
use anyhow::{bail, Result};
use clap::Args;
use clusterlab::io::{self, Lattice};
use clusterlab::{Analyzer, Backend, Boundary, LatticeStats, Measures};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The lattice: a 2-D array of booleans or non-negative integers in a .npy, .h5 or .hdf5 file,
    /// or a 3-D (T, H, W) stack of them with --frames.
    pub input: PathBuf,

    /// Where to write the cluster table (replaced atomically). .csv: one row per cluster (header
    /// label,size,x_min,...,spans_y; flags 0/1). .h5/.hdf5: datasets /clusters/<column> with
    /// attributes shape, connectivity, boundary, count and segments, plus /labels and /lattice.
    /// Without it, only the summary is printed. A stack (--frames): .csv gets a leading column
    /// frame; .h5 gets /clusters/<column> of every frame one after another plus /clusters/frame,
    /// /labels (T', H, W) unless --no-labels, and /frames/<column> (one row per frame: frame,
    /// clusters, largest, occupied, mean_size, p_infinity, percolating, wraps_x, wraps_y,
    /// wraps_both, wraps_either, spans_x, spans_y, time_ms); no /lattice.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub lattice: LatticeArgs,

    /// Analyze a 3-D (T, H, W) stack frame by frame, each with the same settings: all, K or A:B
    /// (A up to but not including B). Frames are read one at a time.
    #[arg(long, value_name = "all|K|A:B", value_parser = crate::stack::parse_frames,
          allow_negative_numbers = true)]
    pub frames: Option<clusterlab::io::FrameSelection>,

    /// Write the cluster-size distribution n_s (clusters of s sites per lattice site, over all
    /// frames) as numbers. .csv: one table, columns binning,s_min,s_max,s,count,n_s,stderr; rows
    /// with binning "none" are the sizes that occur (s_min = s_max = s), rows with "log" the
    /// log bins of --bins-per-decade (s the geometric mean of the bin's edges, n_s averaged over
    /// the bin's sizes). .h5: groups /ns (s, count, n_s, stderr) and /ns_log (s_min, s_max, s,
    /// count, n_s, stderr). stderr: the standard error of the mean over frames; empty in CSV,
    /// NaN in HDF5, for a single lattice.
    #[arg(long, value_name = "FILE")]
    pub ns: Option<PathBuf>,

    /// --ns: logarithmic bins per decade of s, from 0 to 100 (0: every size its own bin).
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub bins_per_decade: u32,

    /// --ns: leave out the clusters that wrap (periodic axes) or span (open axes).
    #[arg(short = 'x', long, requires = "ns")]
    pub exclude_percolating: bool,

    /// Make no label image: HDF5 output holds only the cluster table (no /labels, no
    /// /lattice), and a GPU computing --shape tables writes no labels at all.
    #[arg(long)]
    pub no_labels: bool,

    /// Only the shape columns (size, bounding box, centroid, gyration, wrapping, spanning): no
    /// perimeters, no filled area. On a GPU backend these are computed entirely on the device.
    #[arg(long)]
    pub shape: bool,

    /// Where to run: auto (the default of every subcommand: the CPU for a lattice read from a
    /// file, where uploads and GPU start-up cost more than they save; the summary names the
    /// choice), cpu, cuda (GPU 0; gpu is an alias) or cuda:N. On a GPU, --shape tables, and
    /// full tables with --boundary open (without --segments), are computed on the device; other
    /// full tables label there and measure the perimeters on the CPU. Tables are identical on
    /// every backend.
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,

    #[command(flatten)]
    pub out: OutputArgs,

    /// Print the summary as one JSON object (keys: command, input, dtype, height, width,
    /// connectivity, boundary, segments, clusters, largest, largest_fraction, mean_size,
    /// p_infinity, percolating, wraps_x, wraps_y, wraps_both, wraps_either, spans_x, spans_y,
    /// time_ms, threads, backend, output, ns). A stack gives one document with those keys for
    /// the run (time_ms the total; no per-lattice statistics) plus frames_in_file, frame_start,
    /// frame_end and frames: a list of one object per frame (frame, clusters, largest,
    /// largest_fraction, occupied, mean_size, p_infinity, percolating, wraps_x, wraps_y,
    /// wraps_both, wraps_either, spans_x, spans_y, time_ms).
    #[arg(long)]
    pub json: bool,
}

/// Whether the table goes to CSV (else HDF5), refusing other extensions before any work.
pub fn table_format(out: &Path) -> Result<bool> {
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("csv") => Ok(true),
        Some("h5") | Some("hdf5") => Ok(false),
        _ => bail!(
            "{}: unsupported output extension: the cluster table is written as .csv, .h5 or .hdf5",
            out.display()
        ),
    }
}

/// The analyzer the arguments ask for (2-D lattices and frame stacks alike).
pub fn analyzer(args: &AnalyzeArgs) -> Result<Analyzer> {
    let l = &args.lattice;
    let measures = if args.shape {
        Measures::Shape
    } else {
        Measures::All
    };
    Ok(Analyzer::new(l.connectivity, l.boundary)
        .segments(l.segments)
        .parallelism(l.parallelism())
        .measures(measures)
        .backend(args.backend)?)
}

pub fn run(args: AnalyzeArgs) -> Result<()> {
    if let Some(ns) = &args.ns {
        crate::ns::check(ns)?;
    }
    if let Some(frames) =
        crate::stack::selection(&args.input, args.lattice.dataset.as_deref(), args.frames)?
    {
        return crate::analyze_frames::run(&args, frames);
    }
    let csv = match &args.output {
        None => false,
        Some(out) => {
            let csv = table_format(out)?;
            check_output_folder(out)?;
            check_not_input(out, &[&args.input], "the input lattice")?;
            csv
        }
    };

    crate::label::refuse_beyond_u32(
        &args.input,
        args.lattice.dataset.as_deref(),
        "the cluster table",
    )?;
    let stage = Stage::new(args.out.quiet || args.json);
    stage.set(format!("reading {}", args.input.display()));
    let l = &args.lattice;
    let lattice = io::read_lattice(&args.input, l.dataset.as_deref())?;
    let (h, w) = lattice.dim();
    let mut analyzer = analyzer(&args)?;
    stage.set(format!("analyzing {h}x{w} lattice"));
    let start = Instant::now();
    let (table, labels) = if args.no_labels {
        let table = match &lattice {
            Lattice::U8(a) => analyzer.analyze(a.view())?,
            Lattice::U16(a) => analyzer.analyze(a.view())?,
            Lattice::U32(a) => analyzer.analyze(a.view())?,
        };
        (table, None)
    } else {
        let (table, labels) = match &lattice {
            Lattice::U8(a) => analyzer.analyze_labeled(a.view())?,
            Lattice::U16(a) => analyzer.analyze_labeled(a.view())?,
            Lattice::U32(a) => analyzer.analyze_labeled(a.view())?,
        };
        (table, Some(labels))
    };
    let elapsed = start.elapsed();
    if let Some(path) = &args.ns {
        stage.set(format!("writing {}", path.display()));
        let mut ns = crate::ns::Ns::new(args.bins_per_decade, args.exclude_percolating);
        ns.add(&table);
        ns.write(path)?;
    }
    if let Some(out) = &args.output {
        stage.set(format!("writing {}", out.display()));
        if csv {
            table.write_csv(out)?;
        } else if let Some(labels) = &labels {
            table.write_hdf5_options(
                out,
                Some(labels),
                Some(&lattice),
                &args.out.write_options(),
            )?;
        } else {
            table.write_hdf5(out)?;
        }
    }
    drop(stage);

    let threads = l.threads.unwrap_or_else(rayon_threads);
    if args.json {
        let s = table.stats();
        let fraction = if s.sites > 0 {
            s.largest as f64 / s.sites as f64
        } else {
            0.0
        };
        let mut doc = serde_json::json!({
            "command": "analyze",
            "input": args.input.display().to_string(),
            "dtype": lattice.dtype(),
            "height": h,
            "width": w,
            "connectivity": l.connectivity.neighbours(),
            "boundary": l.boundary.name(),
            "segments": l.segments,
            "largest_fraction": fraction,
            "time_ms": elapsed.as_secs_f64() * 1e3,
            "threads": threads,
            "backend": analyzer.backend_name(),
            "output": args.output.as_ref().map(|o| o.display().to_string()),
            "ns": args.ns.as_ref().map(|o| o.display().to_string()),
        });
        with_stats(&mut doc, &s);
        print_json(&doc);
    } else if !args.out.quiet {
        let mut text = format!(
            "input      {} ({h}x{w} {})\n\
             analysis   {}-connectivity, {} boundary, {}\n",
            args.input.display(),
            lattice.dtype(),
            l.connectivity.neighbours(),
            l.boundary,
            mode(l.segments),
        );
        text.push_str(&summary(&table.stats(), l.boundary));
        text.push_str(&format!(
            "time       {:.3} ms ({} threads)\n",
            elapsed.as_secs_f64() * 1e3,
            threads
        ));
        if analyzer.backend_name() != "cpu" {
            text.push_str(&format!("backend    {}\n", analyzer.backend_name()));
        }
        if let Some(out) = &args.output {
            text.push_str(&format!("output     {}\n", out.display()));
        }
        if let Some(ns) = &args.ns {
            text.push_str(&format!("n_s        {}\n", ns.display()));
        }
        print_stdout(&text);
    }
    Ok(())
}

/// Adds a lattice's statistics to the JSON object `doc` under the keys `--json` documents
/// (clusters, largest, mean_size, p_infinity, percolating, wraps_*, spans_*): the 2-D summary
/// and every frame of a stack share them.
pub fn with_stats(doc: &mut serde_json::Value, s: &LatticeStats) {
    if let serde_json::Value::Object(m) = doc {
        for (k, v) in [
            ("clusters", serde_json::json!(s.clusters)),
            ("largest", s.largest.into()),
            ("mean_size", s.mean_size.into()),
            ("p_infinity", s.p_infinity.into()),
            ("percolating", s.percolating.into()),
            ("wraps_x", s.wraps_x.into()),
            ("wraps_y", s.wraps_y.into()),
            ("wraps_both", s.wraps_both.into()),
            ("wraps_either", s.wraps_either.into()),
            ("spans_x", s.spans_x.into()),
            ("spans_y", s.spans_y.into()),
        ] {
            m.insert(k.into(), v);
        }
    }
}

/// The lattice's statistics as summary lines: clusters, largest, S, P∞, wrapping, spanning.
pub fn summary(s: &LatticeStats, boundary: Boundary) -> String {
    let yes = |b: bool| if b { "yes" } else { "no" };
    let fraction = |n: u64| {
        if s.sites > 0 {
            n as f64 / s.sites as f64
        } else {
            0.0
        }
    };
    let mut text = format!(
        "clusters   {}\n\
         largest    {} sites ({:.4} of the lattice)\n\
         mean size  S = {:.4} (clusters that neither wrap nor span)\n\
         P∞         {:.6} ({} percolating cluster{})\n",
        s.clusters,
        s.largest,
        fraction(s.largest),
        s.mean_size,
        s.p_infinity,
        s.percolating,
        if s.percolating == 1 { "" } else { "s" },
    );
    if boundary != Boundary::Open {
        text.push_str(&format!(
            "wrapping   x: {}, y: {}, both (one cluster): {}, either: {}\n",
            yes(s.wraps_x),
            yes(s.wraps_y),
            yes(s.wraps_both),
            yes(s.wraps_either)
        ));
    }
    if !(boundary.wraps_x() && boundary.wraps_y()) {
        let axis = |wraps: bool, spans: bool| if wraps { "-" } else { yes(spans) };
        text.push_str(&format!(
            "spanning   x: {}, y: {}\n",
            axis(boundary.wraps_x(), s.spans_x),
            axis(boundary.wraps_y(), s.spans_y),
        ));
    }
    text
}
