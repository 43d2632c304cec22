//! `plot --data FILE`: the numbers behind the chart, one row per point (sizes) or per cluster
//! (labels), with a `chart` column naming the chart.

use anyhow::{bail, Result};
use clusterlab::io::{self, SummaryColumn, SummaryValues};
use clusterlab::plot::{label_colour, Background, SizeBin};
use clusterlab::Labels;
use std::path::Path;

/// Refuses a `--data` path that is not CSV or HDF5, or is the chart itself, before any work.
pub fn check(data: &Path, chart: &Path) -> Result<()> {
    let ext = data
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("csv") | Some("h5") | Some("hdf5")) {
        bail!(
            "{}: unsupported --data extension: the chart's numbers are written as .csv, .h5 or .hdf5",
            data.display()
        );
    }
    if data == chart {
        bail!("{}: --data would replace the chart", data.display());
    }
    crate::args::check_output_folder(data)
}

fn chart(name: &str, rows: usize) -> SummaryColumn {
    SummaryColumn::new("chart", SummaryValues::Text(vec![name.to_owned(); rows]))
}

/// The points of the n_s chart, and the guide `A s^-τ` at each (`guide` = `(τ, A)`).
pub fn write_sizes(path: &Path, bins: &[SizeBin], guide: Option<(f64, f64)>) -> Result<()> {
    let u = |f: fn(&SizeBin) -> u64| SummaryValues::U64(bins.iter().map(f).collect());
    let f = |f: &dyn Fn(&SizeBin) -> f64| SummaryValues::F64(bins.iter().map(f).collect());
    let columns = [
        chart("sizes", bins.len()),
        SummaryColumn::new("s_min", u(|b| b.s_min)),
        SummaryColumn::new("s_max", u(|b| b.s_max)),
        SummaryColumn::new("s", f(&|b| b.s)),
        SummaryColumn::new("count", u(|b| b.clusters)),
        SummaryColumn::new("n_s", f(&|b| b.ns)),
        SummaryColumn::new(
            "guide",
            f(&|b| guide.map_or(f64::NAN, |(tau, a)| a * b.s.powf(-tau))),
        ),
    ];
    io::write_columns(path, "plot", &columns)?;
    Ok(())
}

/// One row per cluster of the label image: its size and its colour.
pub fn write_labels(path: &Path, labels: &Labels, background: Background) -> Result<()> {
    let sizes = labels.sizes();
    let n = labels.count();
    let colours: Vec<[u8; 3]> = (1..=n as u32)
        .map(|l| label_colour(l, background))
        .collect();
    let channel = |k: usize| SummaryValues::U64(colours.iter().map(|c| u64::from(c[k])).collect());
    let columns = [
        chart("labels", n),
        SummaryColumn::new("label", SummaryValues::U64((1..=n as u64).collect())),
        SummaryColumn::new("size", SummaryValues::U64(sizes[1..].to_vec())),
        SummaryColumn::new("r", channel(0)),
        SummaryColumn::new("g", channel(1)),
        SummaryColumn::new("b", channel(2)),
    ];
    io::write_columns(path, "plot", &columns)?;
    Ok(())
}
