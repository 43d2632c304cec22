//! `clusterlab label`: label a lattice file and write the label image.

use crate::args::{
    check_not_input, check_output_folder, library, mode, parse_backend, print_json, print_stdout,
    LatticeArgs, OutputArgs, Stage,
};
use crate::timings::Timings;
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use clusterlab::io::{self, Format, LabelMeta, Lattice};
use clusterlab::{Algorithm, Backend, LabelValue, Labeler, Labels, MAX_SITES};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The label type of the output (`--label-dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LabelDtype {
    /// uint32 up to 4294967294 sites, uint64 beyond.
    Auto,
    /// 32-bit labels (lattices of up to 4294967294 sites).
    Uint32,
    /// 64-bit labels (any lattice that fits in memory).
    Uint64,
}

impl LabelDtype {
    /// Whether an `h × w` lattice gets `u64` labels.
    fn wide(self, h: usize, w: usize) -> bool {
        match self {
            LabelDtype::Auto => h.checked_mul(w).is_none_or(|n| n > MAX_SITES),
            LabelDtype::Uint32 => false,
            LabelDtype::Uint64 => true,
        }
    }
}

#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The lattice: a 2-D array of booleans or non-negative integers in a .npy, .h5 or .hdf5 file,
    /// or a 3-D (T, H, W) stack of them with --frames. Signed and 64-bit integers are converted
    /// to the narrowest of uint8/uint16/uint32 that holds every value.
    pub input: PathBuf,

    /// Where to write the labels (replaced atomically). .npy: the label image (uint32, or uint64
    /// as --label-dtype says). .h5/.hdf5: dataset /labels (of the same type) with attributes
    /// connectivity, boundary, count and segments, plus the input as /lattice. Without it, only the summary is printed. A stack (--frames) gives a
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
    /// largest_fraction, occupied, occupied_fraction, time_ms, output, label_dtype — uint32 or
    /// uint64). A stack gives one
    /// document with those keys for the run (time_ms the total; no clusters, largest, occupied)
    /// plus frames_in_file, frame_start, frame_end, appended and frames: a list of one object per
    /// frame (frame, clusters, largest, largest_fraction, occupied, occupied_fraction, time_ms).
    #[arg(long)]
    pub json: bool,

    /// Print where the time went to stderr (and, with --json, under "timings"): read, open (the
    /// backend), label — on a GPU split into compile (kernels: compiled or read from the on-disk
    /// cache), staging (host copies into and out of pinned memory), upload, kernels, download —
    /// write, summary (counting the cluster sizes for the summary) and total, in milliseconds.
    /// With a .npy output the labels are written straight into the output file's pages (mapped
    /// where the system can reserve its blocks): label includes that, and write is the flush to
    /// disk. 2-D lattices only.
    #[arg(long, conflicts_with = "frames")]
    pub timings: bool,

    /// The labels' type: auto (uint32 up to 4294967294 sites, uint64 beyond), uint32 or uint64
    /// (8 bytes a site: twice the memory and file size, the same labels). A uint64 labeling
    /// that does not fit in memory is refused before it starts, with the estimate of the bytes
    /// it needs. --frames and --append write uint32 labels only.
    #[arg(long, value_name = "DTYPE", value_enum, default_value = "auto")]
    pub label_dtype: LabelDtype,
}

pub fn run(args: LabelArgs) -> Result<()> {
    let l = &args.lattice;
    if let Some(frames) = crate::stack::selection(&args.input, l.dataset.as_deref(), args.frames)? {
        if args.label_dtype == LabelDtype::Uint64 {
            bail!("--frames writes uint32 labels only: leave out --label-dtype uint64");
        }
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

    // A lattice that will take u64 labels and does not fit in memory is refused from its
    // header, before it is read (on the CPU: a GPU's labeling checks once the lattice is read).
    if let [h, w] = io::array_shape(&args.input, l.dataset.as_deref())?[..] {
        let wide = args.label_dtype.wide(h, w);
        if wide && !matches!(args.backend, Backend::Cuda { .. }) {
            Labeler::new(l.connectivity, l.boundary)
                .segments(l.segments)
                .parallelism(l.parallelism())
                .check_memory64(h, w, 1)?;
        }
        if !wide && h.saturating_mul(w) > MAX_SITES {
            bail!(
                "{}: lattice of {h}x{w} sites is too large for uint32 labels (at most {MAX_SITES} \
                 sites): use --label-dtype uint64 (or auto)",
                args.input.display()
            );
        }
    }

    let stage = Stage::new(args.out.quiet || args.json);
    let mut clock = Timings::start(args.timings);
    stage.set(format!("reading {}", args.input.display()));
    let lattice = io::read_lattice(&args.input, l.dataset.as_deref())?;
    let (h, w) = lattice.dim();
    clock.lap("read");
    let wide = args.label_dtype.wide(h, w);
    if wide && args.append {
        bail!(
            "--append writes uint32 labels only, and this {h}x{w} lattice needs uint64 labels \
             (or --label-dtype uint64 was given): write them with --output instead"
        );
    }

    let mut labeler = Labeler::new(l.connectivity, l.boundary)
        .segments(l.segments)
        .algorithm(args.algorithm)
        .parallelism(l.parallelism())
        .backend(args.backend)?;
    clock.lap("open");
    stage.set(format!("labeling {h}x{w} lattice"));
    let done = if wide {
        label_and_write(
            &args,
            &lattice,
            &mut labeler,
            &mut clock,
            &stage,
            |lat, lab| lat.label64_with(lab),
        )?
    } else {
        label_and_write(
            &args,
            &lattice,
            &mut labeler,
            &mut clock,
            &stage,
            |lat, lab| lat.label_with(lab),
        )?
    };
    drop(stage);
    let timings = clock.finish();

    let Done {
        count,
        sizes,
        elapsed,
        label_dtype,
    } = done;
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
            "clusters": count,
            "largest": largest,
            "largest_fraction": fraction(largest),
            "occupied": occupied,
            "occupied_fraction": fraction(occupied),
            "time_ms": elapsed.as_secs_f64() * 1e3,
            "output": output,
            "label_dtype": label_dtype,
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
            count,
            fraction(largest),
            fraction(occupied),
            elapsed.as_secs_f64() * 1e3,
            labeler.backend_name(),
            match &output {
                Some(o) if wide => format!("{o} (uint64 labels)"),
                Some(o) => o.clone(),
                None => "none (summary only)".into(),
            },
        );
        print_stdout(&summary);
    }
    Ok(())
}

/// Refuses, from the file's header and before reading it, a lattice beyond `MAX_SITES` sites for
/// `what` (the cluster table and the plots number clusters in uint32; only `label` takes uint64
/// labels), so that a 4.9·10⁹-site file is not read only to be refused.
pub fn refuse_beyond_u32(path: &std::path::Path, dataset: Option<&str>, what: &str) -> Result<()> {
    if let [h, w] = io::array_shape(path, dataset)?[..] {
        if h.saturating_mul(w) > MAX_SITES {
            bail!(
                "{}: lattice of {h}x{w} sites is too large for {what} (at most {MAX_SITES} \
                 sites); `clusterlab label` labels it into uint64",
                path.display()
            );
        }
    }
    Ok(())
}

/// What the summary needs of a labeling.
struct Done {
    count: usize,
    sizes: Vec<u64>,
    elapsed: Duration,
    label_dtype: &'static str,
}

/// Labels with `label` (into `u32` or `u64` labels) and writes (or appends) the labels.
fn label_and_write<L: LabelValue>(
    args: &LabelArgs,
    lattice: &Lattice,
    labeler: &mut Labeler,
    clock: &mut Timings,
    stage: &Stage,
    label: impl FnOnce(&Lattice, &mut Labeler) -> clusterlab::Result<Labels<L>>,
) -> Result<Done> {
    if let (false, Some(out)) = (args.append, &args.output) {
        if Format::from_path(out)? == Format::Npy {
            return label_into_npy::<L>(out, lattice, labeler, clock, stage);
        }
    }
    let l = &args.lattice;
    let (h, w) = lattice.dim();
    let start = Instant::now();
    let labels = label(lattice, labeler)?;
    let elapsed = start.elapsed();
    clock.lap("label");

    if args.append {
        // Checked before labeling: --append comes with u32 labels only.
        let Some(labels) = (&labels as &dyn std::any::Any).downcast_ref::<Labels>() else {
            bail!("--append writes uint32 labels only");
        };
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
        sink.push(labels)?;
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
            Some(lattice),
            &args.out.write_options(),
        )?;
    }
    clock.lap("write");
    let sizes = labels.sizes();
    clock.lap("summary");
    Ok(Done {
        count: labels.count(),
        sizes,
        elapsed,
        label_dtype: L::DTYPE,
    })
}

/// Labels straight into a new `.npy` file (mapped into memory where the system can reserve its
/// blocks), so that no image is allocated and none copied into the file: `label` then includes
/// putting the labels in the file's pages, and `write` flushes them to disk.
fn label_into_npy<L: LabelValue>(
    out: &std::path::Path,
    lattice: &Lattice,
    labeler: &mut Labeler,
    clock: &mut Timings,
    stage: &Stage,
) -> Result<Done> {
    let mut file = io::NpyOutput::<L>::create(out, lattice.dim())?;
    let start = Instant::now();
    let count = lattice.label_into_with(labeler, file.view_mut())?;
    let elapsed = start.elapsed();
    clock.lap("label");
    // The summary's sizes are counted from the pages while they are mapped and not yet being
    // written back: writeback write-protects mapped pages one by one, which stalls the readers
    // (a background flush started here made the CLI slower on the H100 machine, 2026-11-27).
    let sizes = file.sizes(count)?;
    clock.lap("summary");
    stage.set(format!("writing {}", out.display()));
    file.finish()?;
    clock.lap("write");
    Ok(Done {
        count,
        sizes,
        elapsed,
        label_dtype: L::DTYPE,
    })
}
