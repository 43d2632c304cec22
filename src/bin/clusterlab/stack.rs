//! `label` of a (T, H, W) stack, frame by frame (`--frames`), to a new file or added to the
//! input HDF5 file (`--append`); what `label` and `analyze` share about stacks.

use crate::args::{check_not_input, check_output_folder, mode, print_json, print_stdout, Stage};
use crate::label::LabelArgs;
use anyhow::{bail, Result};
use clusterlab::io::{
    self, Format, FrameReader, FrameSelection, LabelLayout, LabelMeta, LabelSink, SummaryColumn,
    SummaryValues,
};
use clusterlab::Labeler;
use std::ops::Range;
use std::path::Path;
use std::time::Instant;

pub fn parse_frames(s: &str) -> Result<FrameSelection, String> {
    s.parse().map_err(|e: clusterlab::Error| match e {
        clusterlab::Error::InvalidArgument(m) => m,
        e => e.to_string(),
    })
}

/// Whether the input is a stack to read frame by frame: `Some(frames)` for a 3-D array with
/// `--frames`; `None` for anything else (read as a lattice). A 3-D array without `--frames`, and
/// `--frames` on an array that is not 3-D, are refused here, before any work.
pub fn selection(
    input: &Path,
    dataset: Option<&str>,
    frames: Option<FrameSelection>,
) -> Result<Option<FrameSelection>> {
    let shape = io::array_shape(input, dataset)?;
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    match (shape.len(), frames) {
        (3, Some(f)) => Ok(Some(f)),
        (3, None) => bail!(
            "{}: a 3-D array of shape ({}) is a stack of frames (T, H, W): choose the frames with \
             --frames all|K|A:B",
            input.display(),
            dims.join(", ")
        ),
        (_, Some(f)) => bail!(
            "{}: --frames {f} needs a 3-D (T, H, W) stack, not an array of shape ({})",
            input.display(),
            dims.join(", ")
        ),
        (_, None) => Ok(None),
    }
}

/// `--append` writes into the input: it must be HDF5, and the labels must not replace the
/// lattice being read.
pub fn check_append(args: &LabelArgs) -> Result<()> {
    let input = &args.input;
    if Format::from_path(input)? != Format::Hdf5 {
        bail!(
            "{}: --append adds the labels to an HDF5 input (.h5, .hdf5); for .npy give --output",
            input.display()
        );
    }
    let norm = |n: &str| format!("/{}", n.trim_matches('/'));
    let target = norm(args.labels_dataset.as_deref().unwrap_or(io::LABELS_DATASET));
    let lattice = norm(
        args.lattice
            .dataset
            .as_deref()
            .unwrap_or(io::LATTICE_DATASET),
    );
    if target == lattice {
        bail!(
            "{}: --labels-dataset {target} would replace the lattice being read; choose another name",
            input.display()
        );
    }
    Ok(())
}

pub fn label_meta(l: &crate::args::LatticeArgs) -> LabelMeta {
    LabelMeta {
        connectivity: l.connectivity,
        boundary: l.boundary,
        segments: l.segments,
    }
}

/// What the summary names as the output: the file, or `FILE:/labels` for `--append`.
pub fn output_name(args: &LabelArgs) -> Option<String> {
    if args.append {
        let name = args.labels_dataset.as_deref().unwrap_or(io::LABELS_DATASET);
        Some(format!(
            "{}:/{}",
            args.input.display(),
            name.trim_start_matches('/')
        ))
    } else {
        args.output.as_ref().map(|o| o.display().to_string())
    }
}

/// One frame's summary.
struct Row {
    frame: usize,
    clusters: usize,
    largest: u64,
    occupied: u64,
    time_ms: f64,
}

fn columns(rows: &[Row]) -> Vec<SummaryColumn> {
    let u = |f: &dyn Fn(&Row) -> u64| SummaryValues::U64(rows.iter().map(f).collect());
    vec![
        SummaryColumn::new("frame", u(&|r| r.frame as u64)),
        SummaryColumn::new("clusters", u(&|r| r.clusters as u64)),
        SummaryColumn::new("largest", u(&|r| r.largest)),
        SummaryColumn::new("occupied", u(&|r| r.occupied)),
        SummaryColumn::new(
            "time_ms",
            SummaryValues::F64(rows.iter().map(|r| r.time_ms).collect()),
        ),
    ]
}

/// Labels `frames` one at a time with one labeler (on a GPU its buffers stay on the device),
/// each written to `sink` as it is done.
fn label_frames(
    reader: &mut FrameReader,
    frames: Range<usize>,
    labeler: &mut Labeler,
    mut sink: Option<&mut LabelSink>,
    stage: &Stage,
) -> clusterlab::Result<Vec<Row>> {
    let mut rows = Vec::with_capacity(frames.len());
    let n = frames.len();
    for (i, t) in frames.enumerate() {
        stage.set(format!("frame {t} ({} of {n})", i + 1));
        let lattice = reader.read(t)?;
        let start = Instant::now();
        let labels = lattice.label_with(labeler)?;
        let time_ms = start.elapsed().as_secs_f64() * 1e3;
        if let Some(sink) = sink.as_deref_mut() {
            sink.push(&labels)?;
        }
        let sizes = labels.sizes();
        rows.push(Row {
            frame: t,
            clusters: labels.count(),
            largest: sizes.iter().skip(1).copied().max().unwrap_or(0),
            occupied: sizes.iter().skip(1).sum(),
            time_ms,
        });
    }
    Ok(rows)
}

/// `clusterlab label --frames`.
pub fn label(args: &LabelArgs, frames: FrameSelection) -> Result<()> {
    let l = &args.lattice;
    let dataset = l.dataset.as_deref();
    if let Some(out) = &args.output {
        Format::from_path(out)?;
        check_output_folder(out)?;
        check_not_input(out, &[&args.input], "the input stack")?;
    }
    if args.append {
        check_append(args)?;
    }
    let meta = label_meta(l);
    let options = args.out.write_options();
    let mut labeler = Labeler::new(l.connectivity, l.boundary)
        .segments(l.segments)
        .algorithm(args.algorithm)
        .parallelism(l.parallelism())
        .backend(args.backend)?;
    let stage = Stage::new(args.out.quiet || args.json);
    let start = Instant::now();
    let (rows, total, dim, dtype, range) = if args.append {
        // The sink first: it opens the file for writing, the reader then shares it.
        let shape = io::array_shape(&args.input, dataset)?;
        let range = frames.resolve(shape[0])?;
        let dim = (shape[1], shape[2]);
        let name = args.labels_dataset.as_deref().unwrap_or(io::LABELS_DATASET);
        let mut sink = LabelSink::append(
            &args.input,
            name,
            args.force,
            LabelLayout::frames(range.clone(), dim),
            &meta,
            &options,
        )?;
        let mut reader = FrameReader::open(&args.input, dataset)?;
        let rows = label_frames(
            &mut reader,
            range.clone(),
            &mut labeler,
            Some(&mut sink),
            &stage,
        )?;
        stage.set(format!("renaming the labels to {name}"));
        sink.finish(&[])?;
        (rows, reader.len(), dim, reader.dtype(), range)
    } else {
        let mut reader = FrameReader::open(&args.input, dataset)?;
        let range = frames.resolve(reader.len())?;
        let dim = reader.dim();
        let rows = match &args.output {
            Some(out) => {
                let mut rows = Vec::new();
                io::write_atomically(out, |tmp| {
                    let mut sink = LabelSink::create(
                        tmp,
                        Format::from_path(out)?,
                        LabelLayout::frames(range.clone(), dim),
                        &meta,
                        &options,
                    )?;
                    rows = label_frames(
                        &mut reader,
                        range.clone(),
                        &mut labeler,
                        Some(&mut sink),
                        &stage,
                    )?;
                    sink.finish(&columns(&rows))
                })?;
                rows
            }
            None => label_frames(&mut reader, range.clone(), &mut labeler, None, &stage)?,
        };
        (rows, reader.len(), dim, reader.dtype(), range)
    };
    let elapsed = start.elapsed();
    drop(stage);

    let (h, w) = dim;
    let sites = (h * w) as f64;
    let fraction = |n: u64| if sites > 0.0 { n as f64 / sites } else { 0.0 };
    let output = output_name(args);
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "frame": r.frame,
                    "clusters": r.clusters,
                    "largest": r.largest,
                    "largest_fraction": fraction(r.largest),
                    "occupied": r.occupied,
                    "occupied_fraction": fraction(r.occupied),
                    "time_ms": r.time_ms,
                })
            })
            .collect();
        print_json(&serde_json::json!({
            "command": "label",
            "input": args.input.display().to_string(),
            "dtype": dtype,
            "height": h,
            "width": w,
            "frames_in_file": total,
            "frame_start": range.start,
            "frame_end": range.end,
            "connectivity": l.connectivity.neighbours(),
            "boundary": l.boundary.name(),
            "segments": l.segments,
            "algorithm": args.algorithm.name(),
            "backend": labeler.backend_name(),
            "time_ms": elapsed.as_secs_f64() * 1e3,
            "output": output,
            "appended": args.append,
            "frames": list,
        }));
    } else if !args.out.quiet {
        let mut text = format!(
            "input      {} ({total} frames of {h}x{w} {dtype}; frames {}..{})\n\
             labeling   {}-connectivity, {} boundary, {}\n\
             frame    clusters     largest    occupied\n",
            args.input.display(),
            range.start,
            range.end,
            l.connectivity.neighbours(),
            l.boundary,
            mode(l.segments),
        );
        for r in &rows {
            text.push_str(&format!(
                "{:>5} {:>11} {:>11} {:>11.4}\n",
                r.frame,
                r.clusters,
                r.largest,
                fraction(r.occupied)
            ));
        }
        text.push_str(&format!(
            "time       {:.3} ms for {} frames ({})\n\
             output     {}\n",
            elapsed.as_secs_f64() * 1e3,
            rows.len(),
            labeler.backend_name(),
            output.as_deref().unwrap_or("none (summary only)"),
        ));
        print_stdout(&text);
    }
    Ok(())
}
