//! `analyze --frames`: measure every cluster of each frame of a (T, H, W) stack, one frame in
//! memory at a time, with one analyzer.

use crate::analyze::{table_format, AnalyzeArgs};
use crate::args::{check_not_input, check_output_folder, mode, print_json, print_stdout, Stage};
use crate::ns::Ns;
use crate::stack::label_meta;
use anyhow::Result;
use clusterlab::io::SummaryValues;
use clusterlab::io::{self, FrameReader, FrameSelection, LabelSink, Lattice, SummaryColumn};
use clusterlab::{Analyzer, ClusterTable, LatticeStats};
use std::io::Write as _;
use std::ops::Range;
use std::path::Path;
use std::time::Instant;

/// One frame's summary.
struct Row {
    frame: usize,
    stats: LatticeStats,
    time_ms: f64,
}

/// Where each frame's table goes.
enum Out<'a> {
    None,
    Csv(&'a mut dyn std::io::Write, &'a Path),
    Hdf5(&'a mut LabelSink, bool),
}

fn io_error(path: &Path, source: std::io::Error) -> clusterlab::Error {
    clusterlab::Error::Io {
        path: path.to_owned(),
        source,
    }
}

fn analyze_frames(
    reader: &mut FrameReader,
    frames: Range<usize>,
    analyzer: &mut Analyzer,
    mut out: Out<'_>,
    mut ns: Option<&mut Ns>,
    stage: &Stage,
) -> clusterlab::Result<Vec<Row>> {
    let mut rows = Vec::with_capacity(frames.len());
    let n = frames.len();
    // The last frame's table, whose columns' memory the next one reuses (analyze_into).
    let mut kept: Option<ClusterTable> = None;
    for (i, t) in frames.enumerate() {
        stage.set(format!("frame {t} ({} of {n})", i + 1));
        let lattice = reader.read(t)?;
        let labeled = matches!(out, Out::Hdf5(_, true));
        let start = Instant::now();
        let mut labels = None;
        let table: &ClusterTable = match (&lattice, labeled, kept.as_mut()) {
            (Lattice::U8(a), false, Some(k)) => analyzer.analyze_into(a.view(), k).map(|_| k)?,
            (Lattice::U16(a), false, Some(k)) => analyzer.analyze_into(a.view(), k).map(|_| k)?,
            (Lattice::U32(a), false, Some(k)) => analyzer.analyze_into(a.view(), k).map(|_| k)?,
            (Lattice::U8(a), false, None) => kept.insert(analyzer.analyze(a.view())?),
            (Lattice::U16(a), false, None) => kept.insert(analyzer.analyze(a.view())?),
            (Lattice::U32(a), false, None) => kept.insert(analyzer.analyze(a.view())?),
            (lattice, true, _) => {
                let (table, l) = match lattice {
                    Lattice::U8(a) => analyzer.analyze_labeled(a.view())?,
                    Lattice::U16(a) => analyzer.analyze_labeled(a.view())?,
                    Lattice::U32(a) => analyzer.analyze_labeled(a.view())?,
                };
                labels = Some(l);
                kept.insert(table)
            }
        };
        let time_ms = start.elapsed().as_secs_f64() * 1e3;
        match &mut out {
            Out::None => {}
            Out::Csv(w, path) => {
                let csv = table.to_csv();
                let mut lines = csv.lines();
                let header = lines.next().unwrap_or_default();
                if i == 0 {
                    writeln!(w, "frame,{header}").map_err(|e| io_error(path, e))?;
                }
                for line in lines {
                    writeln!(w, "{t},{line}").map_err(|e| io_error(path, e))?;
                }
            }
            Out::Hdf5(sink, _) => {
                if let Some(labels) = &labels {
                    sink.push(labels)?;
                }
                sink.push_table(t, table)?;
            }
        }
        if let Some(ns) = ns.as_deref_mut() {
            ns.add(table);
        }
        rows.push(Row {
            frame: t,
            stats: table.stats(),
            time_ms,
        });
    }
    Ok(rows)
}

fn columns(rows: &[Row]) -> Vec<SummaryColumn> {
    let u = |f: &dyn Fn(&Row) -> u64| SummaryValues::U64(rows.iter().map(f).collect());
    let f = |f: &dyn Fn(&Row) -> f64| SummaryValues::F64(rows.iter().map(f).collect());
    let b = |f: &dyn Fn(&LatticeStats) -> bool| {
        SummaryValues::Flag(rows.iter().map(|r| f(&r.stats)).collect())
    };
    vec![
        SummaryColumn::new("frame", u(&|r| r.frame as u64)),
        SummaryColumn::new("clusters", u(&|r| r.stats.clusters as u64)),
        SummaryColumn::new("largest", u(&|r| r.stats.largest)),
        SummaryColumn::new("occupied", u(&|r| r.stats.occupied)),
        SummaryColumn::new("mean_size", f(&|r| r.stats.mean_size)),
        SummaryColumn::new("p_infinity", f(&|r| r.stats.p_infinity)),
        SummaryColumn::new("percolating", u(&|r| r.stats.percolating as u64)),
        SummaryColumn::new("wraps_x", b(&|s| s.wraps_x)),
        SummaryColumn::new("wraps_y", b(&|s| s.wraps_y)),
        SummaryColumn::new("wraps_both", b(&|s| s.wraps_both)),
        SummaryColumn::new("wraps_either", b(&|s| s.wraps_either)),
        SummaryColumn::new("spans_x", b(&|s| s.spans_x)),
        SummaryColumn::new("spans_y", b(&|s| s.spans_y)),
        SummaryColumn::new("time_ms", f(&|r| r.time_ms)),
    ]
}

/// `clusterlab analyze --frames`.
pub fn run(args: &AnalyzeArgs, frames: FrameSelection) -> Result<()> {
    let l = &args.lattice;
    let csv = match &args.output {
        None => false,
        Some(out) => {
            let csv = table_format(out)?;
            check_output_folder(out)?;
            check_not_input(out, &[&args.input], "the input stack")?;
            csv
        }
    };
    let mut analyzer = crate::analyze::analyzer(args)?;
    let mut reader = FrameReader::open(&args.input, l.dataset.as_deref())?;
    let range = frames.resolve(reader.len())?;
    let dim = reader.dim();
    let mut ns = args
        .ns
        .as_ref()
        .map(|_| Ns::new(args.bins_per_decade, args.exclude_percolating));
    let stage = Stage::new(args.out.quiet || args.json);
    let start = Instant::now();
    let rows = match &args.output {
        None => analyze_frames(
            &mut reader,
            range.clone(),
            &mut analyzer,
            Out::None,
            ns.as_mut(),
            &stage,
        )?,
        Some(out) => {
            let mut rows = Vec::new();
            io::write_atomically(out, |tmp| {
                if csv {
                    let file = std::fs::File::create(tmp).map_err(|e| io_error(tmp, e))?;
                    let mut w = std::io::BufWriter::new(file);
                    rows = analyze_frames(
                        &mut reader,
                        range.clone(),
                        &mut analyzer,
                        Out::Csv(&mut w, tmp),
                        ns.as_mut(),
                        &stage,
                    )?;
                    w.flush().map_err(|e| io_error(tmp, e))
                } else {
                    let meta = label_meta(l);
                    let mut sink = if args.no_labels {
                        LabelSink::create_tables_only(tmp, &meta)?
                    } else {
                        LabelSink::create(
                            tmp,
                            io::Format::Hdf5,
                            io::LabelLayout::frames(range.clone(), dim),
                            &meta,
                            &args.out.write_options(),
                        )?
                    };
                    rows = analyze_frames(
                        &mut reader,
                        range.clone(),
                        &mut analyzer,
                        Out::Hdf5(&mut sink, !args.no_labels),
                        ns.as_mut(),
                        &stage,
                    )?;
                    sink.finish(&columns(&rows))
                }
            })?;
            rows
        }
    };
    if let (Some(path), Some(ns)) = (&args.ns, &ns) {
        stage.set(format!("writing {}", path.display()));
        ns.write(path)?;
    }
    let elapsed = start.elapsed();
    drop(stage);

    let (h, w) = dim;
    let sites = (h * w) as f64;
    let fraction = |n: u64| if sites > 0.0 { n as f64 / sites } else { 0.0 };
    let threads = l.threads.unwrap_or_else(crate::args::rayon_threads);
    let path_text = |p: &Option<std::path::PathBuf>| p.as_ref().map(|o| o.display().to_string());
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let s = &r.stats;
                let mut row = serde_json::json!({
                    "frame": r.frame,
                    "largest_fraction": fraction(s.largest),
                    "occupied": s.occupied,
                    "time_ms": r.time_ms,
                });
                crate::analyze::with_stats(&mut row, s);
                row
            })
            .collect();
        print_json(&serde_json::json!({
            "command": "analyze",
            "input": args.input.display().to_string(),
            "dtype": reader.dtype(),
            "height": h,
            "width": w,
            "frames_in_file": reader.len(),
            "frame_start": range.start,
            "frame_end": range.end,
            "connectivity": l.connectivity.neighbours(),
            "boundary": l.boundary.name(),
            "segments": l.segments,
            "time_ms": elapsed.as_secs_f64() * 1e3,
            "threads": threads,
            "backend": analyzer.backend_name(),
            "output": path_text(&args.output),
            "ns": path_text(&args.ns),
            "frames": list,
        }));
    } else if !args.out.quiet {
        let mut text = format!(
            "input      {} ({} frames of {h}x{w} {}; frames {}..{})\n\
             analysis   {}-connectivity, {} boundary, {}\n\
             frame    clusters     largest    mean size S          P∞  wraps  spans\n",
            args.input.display(),
            reader.len(),
            reader.dtype(),
            range.start,
            range.end,
            l.connectivity.neighbours(),
            l.boundary,
            mode(l.segments),
        );
        let yn = |x: bool, y: bool| {
            format!("{}{}", if x { "x" } else { "-" }, if y { "y" } else { "-" })
        };
        for r in &rows {
            let s = &r.stats;
            text.push_str(&format!(
                "{:>5} {:>11} {:>11} {:>14.4} {:>11.6} {:>6} {:>6}\n",
                r.frame,
                s.clusters,
                s.largest,
                s.mean_size,
                s.p_infinity,
                yn(s.wraps_x, s.wraps_y),
                yn(s.spans_x, s.spans_y),
            ));
        }
        text.push_str(&format!(
            "time       {:.3} ms for {} frames ({} threads, {})\n",
            elapsed.as_secs_f64() * 1e3,
            rows.len(),
            threads,
            analyzer.backend_name()
        ));
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
