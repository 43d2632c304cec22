//! `clusterlab label`: label a lattice file and write the label image.

use crate::args::{
    check_not_input, check_output_folder, library, mode, parse_backend, print_json, print_stdout,
    LatticeArgs, OutputArgs, Stage,
};
use crate::timings::Timings;
use anyhow::Result;
use clap::Args;
use clusterlab::io::{self, Format, LabelMeta};
use clusterlab::{Algorithm, Backend, Labeler};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The lattice: a 2-D array of booleans or non-negative integers in a .npy, .h5 or .hdf5 file,
    /// or a 3-D (T, H, W) stack of them with --frames. Signed and 64-bit integers are converted
    /// to the narrowest of uint8/uint16/uint32 that holds every value.
    pub input: PathBuf,

    /// Where to write the labels (replaced atomically). .npy: the uint32 label image. .h5/.hdf5:
    /// dataset /labels with attributes connectivity, boundary, count and segments, plus the input
    /// as /lattice. Without it, only the summary is printed. A stack (--frames) gives a
    /// (T', H, W) label array: .npy the array, .h5 /labels (one frame per chunk, attributes
    /// connectivity, boundary, segments, frame_start) and /frames/<column> (one row per frame:
    /// frame, clusters, largest, occupied, time_ms); no /lattice.
    #[arg(short, long, value_name = "PATH", conflicts_with = "append")]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub lattice: LatticeArgs,

    /// Label a 3-D (T, H, W) stack frame by frame, each with the same settings: all, K (one
    /// frame) or A:B (frames A up to but not including B, as a Python slice; A: or :B). Frames
    /// are read one at a time (.npy in C order, or an HDF5 dataset), so memory stays about one
    /// frame in and one out whatever T.
    #[arg(long, value_name = "all|K|A:B", value_parser = crate::stack::parse_frames,
          allow_negative_numbers = true)]
    pub frames: Option<clusterlab::io::FrameSelection>,

    /// Add the labels to the input HDF5 file itself, as /labels (or --labels-dataset), instead
    /// of writing --output. The file's other datasets are never written to: the labels go to a
    /// new temporary dataset, flushed, then renamed; a run stopped by any signal, SIGKILL
    /// included, leaves the original datasets intact, and the next --append on the file removes
    /// the temporary it left.
    #[arg(long)]
    pub append: bool,

    /// With --append: the name of the labels dataset (default /labels); its group must exist.
    #[arg(long, value_name = "NAME", requires = "append")]
    pub labels_dataset: Option<String>,

    /// With --append: replace a dataset already at that name.
    #[arg(long, requires = "append")]
    pub force: bool,

    /// The labeling algorithm; all give the same labels. auto picks the fastest of the backend
    /// (strips on the CPU, bit-runs on a GPU); bfs, hoshen-kopelman and strips run on the CPU,
    /// the others on a GPU.
    #[arg(short, long, default_value = "auto", value_parser = library::<Algorithm>(&[
        "auto", "bfs", "hoshen-kopelman", "strips", "bit-runs", "block-union-find", "ha4",
        "tile-merge", "label-equivalence",
    ]))]
    pub algorithm: Algorithm,

    /// Where to label: auto (the default of every subcommand: a usable NVIDIA GPU for a GPU-only
    /// --algorithm, else the CPU, which labels a lattice read from a file faster than uploads and
    /// GPU start-up allow; the summary names the choice), cpu, cuda (GPU 0; gpu is an alias) or
    /// cuda:N (GPU N). cuda without a usable GPU is an error.
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,

    #[command(flatten)]
    pub out: OutputArgs,

    /// Print the summary as one JSON object (keys: command, input, dtype, height, width,
    /// connectivity, boundary, segments, algorithm, backend, clusters, largest,
    /// largest_fraction, occupied, occupied_fraction, time_ms, output). A stack gives one
    /// document with those keys for the run (time_ms the total; no clusters, largest, occupied)
    /// plus frames_in_file, frame_start, frame_end, appended and frames: a list of one object per
    /// frame (frame, clusters, largest, largest_fraction, occupied, occupied_fraction, time_ms).
    #[arg(long)]
    pub json: bool,

    /// Print where the time went to stderr (and, with --json, under "timings"): read, open (the
    /// backend), label — on a GPU split into compile (kernels: compiled or read from the on-disk
    /// cache), staging (host copies into and out of pinned memory), upload, kernels, download —
    /// write and total, in milliseconds. 2-D lattices only.
    #[arg(long, conflicts_with = "frames")]
    pub timings: bool,
}

pub fn run(args: LabelArgs) -> Result<()> {
    let l = &args.lattice;
    if let Some(frames) = crate::stack::selection(&args.input, l.dataset.as_deref(), args.frames)? {
        return crate::stack::label(&args, frames);
    }
    if args.append {
        crate::stack::check_append(&args)?;
    }
    // Refuse an unusable output before any work.
    if let Some(out) = &args.output {
        Format::from_path(out)?;
        check_output_folder(out)?;
        check_not_input(out, &[&args.input], "the input lattice")?;
    }

    let stage = Stage::new(args.out.quiet || args.json);
    let mut clock = Timings::start(args.timings);
    stage.set(format!("reading {}", args.input.display()));
    let lattice = io::read_lattice(&args.input, l.dataset.as_deref())?;
    let (h, w) = lattice.dim();
    clock.lap("read");

    let mut labeler = Labeler::new(l.connectivity, l.boundary)
        .segments(l.segments)
        .algorithm(args.algorithm)
        .parallelism(l.parallelism())
        .backend(args.backend)?;
    clock.lap("open");
    stage.set(format!("labeling {h}x{w} lattice"));
    let start = Instant::now();
    let labels = lattice.label_with(&mut labeler)?;
    let elapsed = start.elapsed();
    clock.lap("label");

    if args.append {
        stage.set(format!("adding the labels to {}", args.input.display()));
        let meta = crate::stack::label_meta(l);
        let mut sink = io::LabelSink::append(
            &args.input,
            args.labels_dataset.as_deref().unwrap_or(io::LABELS_DATASET),
            args.force,
            io::LabelLayout::image((h, w)),
            &meta,
            &args.out.write_options(),
        )?;
        sink.push(&labels)?;
        sink.finish(&[])?;
    } else if let Some(out) = &args.output {
        stage.set(format!("writing {}", out.display()));
        let meta = LabelMeta {
            connectivity: l.connectivity,
            boundary: l.boundary,
            segments: l.segments,
        };
        io::write_labels_with(
            out,
            &labels,
            &meta,
            Some(&lattice),
            &args.out.write_options(),
        )?;
    }
    clock.lap("write");
    drop(stage);
    let timings = clock.finish();

    let sizes = labels.sizes();
    let sites = (h * w) as f64;
    let largest = sizes.iter().skip(1).copied().max().unwrap_or(0);
    let occupied = (h * w) as u64 - sizes[0];
    let fraction = |n: u64| if sites > 0.0 { n as f64 / sites } else { 0.0 };
    let output = crate::stack::output_name(&args);
    if args.json {
        let mut doc = serde_json::json!({
            "command": "label",
            "input": args.input.display().to_string(),
            "dtype": lattice.dtype(),
            "height": h,
            "width": w,
            "connectivity": l.connectivity.neighbours(),
            "boundary": l.boundary.name(),
            "segments": l.segments,
            "algorithm": args.algorithm.name(),
            "backend": labeler.backend_name(),
            "clusters": labels.count(),
            "largest": largest,
            "largest_fraction": fraction(largest),
            "occupied": occupied,
            "occupied_fraction": fraction(occupied),
            "time_ms": elapsed.as_secs_f64() * 1e3,
            "output": output,
        });
        if let Some(t) = timings {
            doc["timings"] = t;
        }
        print_json(&doc);
    } else if !args.out.quiet {
        let summary = format!(
            "input      {} ({h}x{w} {})\n\
             labeling   {}-connectivity, {} boundary, {}\n\
             clusters   {}\n\
             largest    {largest} sites ({:.4} of the lattice)\n\
             occupied   {:.4} ({occupied} sites)\n\
             time       {:.3} ms labeling ({})\n\
             output     {}\n",
            args.input.display(),
            lattice.dtype(),
            l.connectivity.neighbours(),
            l.boundary,
            mode(l.segments),
            labels.count(),
            fraction(largest),
            fraction(occupied),
            elapsed.as_secs_f64() * 1e3,
            labeler.backend_name(),
            output.as_deref().unwrap_or("none (summary only)"),
        );
        print_stdout(&summary);
    }
    Ok(())
}
