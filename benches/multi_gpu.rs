//! Multi-GPU labeling in horizontal strips (`MultiGpuLabeler`), device-resident: strong scaling
//! (one lattice on 1..N GPUs), weak scaling (32768 rows × 32768 columns per GPU) and the loopback
//! transport (several strips on GPU 0), against one device's `CudaLabeler` where a lattice fits
//! it (fewer than 2^31 sites for canonical labels).
//!
//! ```text
//! cargo bench --bench multi_gpu -- [--sizes 32768,65536,98304] [--reps R] [--raw] [--check]
//! cargo bench --bench multi_gpu -- --analysis [--sizes 16384,32768] [--reps R]
//! ```
//!
//! `--analysis` times the cluster table instead (`MultiGpuAnalyzer::analyze` on 1..N GPUs and
//! in loopback against one device's `CudaAnalyzer::analyze`), as users call them: from a host
//! lattice to the table, wall time, median of R after one warm-up, with the multi-GPU split
//! (upload and queue, strips, host join and table); every table is compared with the single
//! device's.
//!
//! Site percolation at p_c, 4-connectivity, periodic boundary, canonical labels (`--raw`: raw).
//! The lattice is uploaded once per configuration and labeled in place; each labeling is timed
//! wall-clock around `label()` (which waits for every device) after one warm-up, median of R
//! (default 5), with the labeler's own split: the slowest strip's labeling (CUDA events), the
//! seam exchange (border rows to the host, CUDA events, and the host union-find) and the
//! relabeling. The single device is timed with CUDA events around `label_device`. The floor
//! reads the `u8` lattice once and writes the `u32` labels once at the card's copy bandwidth
//! (`common::bandwidth`) times the GPUs used; `floor` is the fraction of it reached. A
//! configuration that does not fit in device memory is reported and skipped. `--check` compares
//! every count with the first one of its lattice. Results also go to bench-out/multi_gpu.json.

mod common;

use clusterlab::cuda::{
    device_count, device_info, CudaAnalyzer, CudaLabeler, MultiGpuAnalyzer, MultiGpuLabeler,
    Numbering,
};
use clusterlab::{Boundary, Connectivity, Error};
use common::gpu::EventTimer;
use common::{bandwidth, floor_ms, json_str, tb_per_s, Args, BenchResult, Samples};
use ndarray::Array2;
use rayon::prelude::*;
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: cargo bench --bench multi_gpu -- [--sizes N,N,...] [--reps R] \
[--raw] [--check] [--analysis]
  --sizes   square lattice sides for strong scaling (default 32768,65536,98304)
  --reps R  timed labelings per configuration (default 5)
  --raw     raw (root-index) labels instead of canonical ones
  --check   compare every configuration's cluster count with the first of its lattice
  --analysis  time the cluster table (MultiGpuAnalyzer) instead of labeling";

const P_C: f64 = 0.592746;
const CONN: Connectivity = Connectivity::Four;
const BOUNDARY: Boundary = Boundary::Periodic;
/// Rows per GPU of the weak-scaling lattices (32768 columns wide).
const WEAK_ROWS: usize = 32768;

fn main() -> ExitCode {
    common::report("multi_gpu", run())
}

/// Site percolation from a counter-based hash of (seed, site), generated on every core (the
/// crate's MT19937 generator is sequential: minutes at 98304²).
fn lattice(h: usize, w: usize, seed: u64) -> Array2<u8> {
    let threshold = (P_C * 2f64.powi(32)) as u64;
    let mut v = vec![0u8; h * w];
    v.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (i, s) in chunk.iter_mut().enumerate() {
                let mut z = seed ^ ((c << 20) + i) as u64;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                *s = u8::from((z >> 32) < threshold);
            }
        });
    Array2::from_shape_vec((h, w), v).expect("h * w sites")
}

/// One timed configuration.
struct Row {
    lattice: String,
    mode: String,
    gpus: usize,
    strips: usize,
    median: f64,
    strips_ms: f64,
    exchange_ms: f64,
    relabel_ms: f64,
    floor: f64,
    clusters: usize,
}

fn print_header() {
    println!(
        "\n{:<14} {:<10} {:>4} {:>6} {:>10} {:>9} {:>9} {:>9} {:>7} {:>11}",
        "lattice",
        "mode",
        "gpus",
        "strips",
        "median ms",
        "strip ms",
        "seam ms",
        "relabel",
        "floor",
        "clusters"
    );
}

fn print_row(r: &Row) {
    println!(
        "{:<14} {:<10} {:>4} {:>6} {:>10.2} {:>9.2} {:>9.2} {:>9.2} {:>6.0}% {:>11}",
        r.lattice,
        r.mode,
        r.gpus,
        r.strips,
        r.median,
        r.strips_ms,
        r.exchange_ms,
        r.relabel_ms,
        100.0 * r.floor,
        r.clusters
    );
}

/// Times `MultiGpuLabeler` over `devices` (or `strips` strips on them) on `lat`.
fn time_multi(
    lat: &Array2<u8>,
    devices: &[usize],
    strips: Option<usize>,
    numbering: Numbering,
    reps: usize,
    floor: f64,
    mode: &str,
) -> BenchResult<Option<Row>> {
    if numbering == Numbering::Raw && lat.len() >= (1 << 31) - 1 {
        // Raw labels across strips are global site indices below the slots' flag bit.
        return Ok(None);
    }
    let mut gpus = MultiGpuLabeler::new(devices, CONN, BOUNDARY)?.numbering(numbering);
    if let Some(s) = strips {
        gpus = gpus.strips(s);
    }
    match gpus.upload(lat.view()) {
        Err(Error::OutOfDeviceMemory { needed, free }) => {
            println!(
                "{:<14} {mode:<10} {:>4}: does not fit ({needed} bytes needed, {free} free)",
                format!("{}x{}", lat.nrows(), lat.ncols()),
                devices.len()
            );
            return Ok(None);
        }
        r => r?,
    }
    let clusters = gpus.label()?;
    let mut runs = Vec::new();
    for _ in 0..reps {
        let c = gpus.label()?;
        if c != clusters {
            return Err(format!("{mode}: {c} clusters, then {clusters}").into());
        }
        runs.push(gpus.timings());
    }
    let med = |f: fn(&clusterlab::cuda::StripTimings) -> f64| {
        Samples::new(runs.iter().map(f).collect()).median()
    };
    let median = med(|t| t.total_ms);
    Ok(Some(Row {
        lattice: format!("{}x{}", lat.nrows(), lat.ncols()),
        mode: mode.into(),
        gpus: devices.len(),
        strips: gpus.layout().len(),
        median,
        strips_ms: med(|t| t.strips_ms),
        exchange_ms: med(|t| t.exchange_ms),
        relabel_ms: med(|t| t.relabel_ms),
        floor: floor / median,
        clusters,
    }))
}

/// Times one device's `CudaLabeler` on `lat` (CUDA events), when the lattice fits its limits.
fn time_single(
    lat: &Array2<u8>,
    numbering: Numbering,
    reps: usize,
    floor: f64,
) -> BenchResult<Option<Row>> {
    let (h, w) = lat.dim();
    if h * w >= (1 << 31) - 1 {
        return Ok(None);
    }
    let mut gpu = CudaLabeler::new(0, CONN, BOUNDARY)?.numbering(numbering);
    let stream = gpu.stream().clone();
    let timer = EventTimer::new(&stream)?;
    let input = stream.clone_htod(lat.as_slice().ok_or("a standard-layout lattice")?)?;
    let mut output = stream.alloc_zeros::<u32>(h * w)?;
    gpu.label_device(&input, h, w, &mut output)?;
    let clusters = gpu.count()?;
    let mut times = Vec::new();
    for _ in 0..reps {
        times.push(timer.time(|| gpu.label_device(&input, h, w, &mut output))?);
    }
    let median = Samples::new(times).median();
    Ok(Some(Row {
        lattice: format!("{h}x{w}"),
        mode: "one device".into(),
        gpus: 1,
        strips: 1,
        median,
        strips_ms: median,
        exchange_ms: 0.0,
        relabel_ms: 0.0,
        floor: floor / median,
        clusters,
    }))
}

fn run() -> BenchResult<()> {
    let mut sizes = vec![32768usize, 65536, 98304];
    let mut reps = 5usize;
    let mut numbering = Numbering::Canonical;
    let mut check = false;
    let mut analysis = false;
    let mut args = Args::from_env(USAGE);
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--sizes" => {
                let s: String = args.value("--sizes");
                sizes = s
                    .split(',')
                    .map(|v| v.trim().parse())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--sizes {s}: {e}"))?;
            }
            "--reps" => reps = args.value("--reps"),
            "--raw" => numbering = Numbering::Raw,
            "--check" => check = true,
            "--analysis" => analysis = true,
            other => args.unknown(other),
        }
    }
    let n = device_count()?;
    if n == 0 {
        return Err("no CUDA device".into());
    }
    if analysis {
        return run_analysis(&sizes, reps, n);
    }
    let info = device_info(0)?;
    let (bw, note) = bandwidth(&info.name);
    println!(
        "devices: {n} x {} ({:.1} GiB); floor: 1 B read + 4 B written per site at {} TB/s per GPU",
        info.name,
        info.total_memory as f64 / (1u64 << 30) as f64,
        tb_per_s(bw)
    );
    if let Some(note) = note {
        println!("{note}");
    }
    println!(
        "site percolation p = {P_C}, {CONN}, {BOUNDARY}, {numbering:?} labels, median of {reps}"
    );
    let mut rows = Vec::new();
    let mut emit = |r: Option<Row>, first: &mut Option<usize>| -> BenchResult<()> {
        if let Some(r) = r {
            print_row(&r);
            if check && *first.get_or_insert(r.clusters) != r.clusters {
                return Err(format!(
                    "{} {}: {} clusters, expected {first:?}",
                    r.lattice, r.mode, r.clusters
                )
                .into());
            }
            rows.push(r);
        }
        Ok(())
    };
    let all: Vec<usize> = (0..n).collect();
    print_header();
    for &size in &sizes {
        let t = Instant::now();
        let lat = lattice(size, size, 1);
        eprintln!(
            "{size}x{size}: generated in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let bytes = (size * size) as f64 * 5.0;
        let mut first = None;
        emit(
            time_single(&lat, numbering, reps, floor_ms(bytes, bw))?,
            &mut first,
        )?;
        for k in 1..=n {
            let floor = floor_ms(bytes, bw * k as f64);
            emit(
                time_multi(&lat, &all[..k], None, numbering, reps, floor, "strong")?,
                &mut first,
            )?;
        }
        // Loopback: twice the automatic strips, all on GPU 0.
        let auto = (size * size).div_ceil((1 << 31) - 1).max(1);
        let floor = floor_ms(bytes, bw);
        emit(
            time_multi(
                &lat,
                &[0],
                Some(2 * auto),
                numbering,
                reps,
                floor,
                "loopback",
            )?,
            &mut first,
        )?;
    }
    // Weak scaling: WEAK_ROWS rows of 32768 columns per GPU.
    for k in 1..=n {
        let lat = lattice(WEAK_ROWS * k, 32768, 2);
        let bytes = lat.len() as f64 * 5.0;
        let mut first = None;
        let floor = floor_ms(bytes, bw * k as f64);
        emit(
            time_multi(&lat, &all[..k], None, numbering, reps, floor, "weak")?,
            &mut first,
        )?;
    }
    std::fs::create_dir_all("bench-out")?;
    let mut f = std::fs::File::create("bench-out/multi_gpu.json")?;
    for r in &rows {
        writeln!(
            f,
            "{{\"lattice\":{},\"mode\":{},\"gpus\":{},\"strips\":{},\"device\":{},\"numbering\":{},\
             \"median_ms\":{:.4},\"strip_ms\":{:.4},\"seam_ms\":{:.4},\"relabel_ms\":{:.4},\
             \"floor_fraction\":{:.4},\"clusters\":{}}}",
            json_str(&r.lattice),
            json_str(&r.mode),
            r.gpus,
            r.strips,
            json_str(&info.name),
            json_str(&format!("{numbering:?}")),
            r.median,
            r.strips_ms,
            r.exchange_ms,
            r.relabel_ms,
            r.floor,
            r.clusters
        )?;
    }
    Ok(())
}

/// `--analysis`: the table of one lattice on one device, on 1..=n GPUs in strips, and in
/// loopback (4 strips on GPU 0), host lattice to table.
fn run_analysis(sizes: &[usize], reps: usize, n: usize) -> BenchResult<()> {
    let info = device_info(0)?;
    println!(
        "devices: {n} x {}; cluster table (Measures::Shape), site percolation p = {P_C}, \
         {CONN}, {BOUNDARY}, host lattice to table, wall time, median of {reps}",
        info.name
    );
    println!(
        "| lattice | mode | GPUs | strips | median ms | upload+queue ms | strips ms | join+table ms | vs one device | clusters |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let median = |v: Vec<f64>| Samples::new(v).median();
    let mut out = std::fs::File::create({
        std::fs::create_dir_all("bench-out")?;
        "bench-out/multi_gpu_analysis.json"
    })?;
    for &size in sizes {
        let lat = lattice(size, size, 3);
        let name = format!("{size}x{size}");
        let mut one = CudaAnalyzer::new(0, CONN, BOUNDARY)?;
        let want = one.analyze(lat.view())?;
        let mut times = Vec::new();
        for _ in 0..reps {
            let t = Instant::now();
            let table = one.analyze(lat.view())?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            if table.count() != want.count() {
                return Err("the single device's tables differ between runs".into());
            }
        }
        let single = median(times);
        println!(
            "| {name} | one device | 1 | 1 | {single:.1} | | | | 1.00 | {} |",
            want.count()
        );
        drop(one);
        let mut configs: Vec<(String, Vec<usize>, Option<usize>)> = (1..=n)
            .map(|k| ("strips".to_string(), (0..k).collect(), None))
            .collect();
        configs.push(("loopback".into(), vec![0], Some(4)));
        for (mode, devices, strips) in configs {
            let mut gpus = MultiGpuAnalyzer::new(&devices, CONN, BOUNDARY)?;
            if let Some(s) = strips {
                gpus = gpus.strips(s);
            }
            let got = gpus.analyze(lat.view())?;
            if got != want {
                return Err(format!("{name} {mode} on {devices:?}: the table differs").into());
            }
            let mut runs = Vec::new();
            for _ in 0..reps {
                gpus.analyze(lat.view())?;
                runs.push(gpus.timings());
            }
            let med = |f: fn(&clusterlab::cuda::AnalysisTimings) -> f64| {
                median(runs.iter().map(f).collect())
            };
            let total = med(|t| t.total_ms);
            println!(
                "| {name} | {mode} | {} | {} | {total:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {} |",
                devices.len(),
                gpus.layout().len(),
                med(|t| t.upload_ms),
                med(|t| t.strips_ms),
                med(|t| t.join_ms),
                single / total,
                got.count()
            );
            writeln!(
                out,
                "{{\"lattice\":{},\"mode\":{},\"gpus\":{},\"strips\":{},\"device\":{},\
                 \"median_ms\":{total:.3},\"one_device_ms\":{single:.3},\"clusters\":{}}}",
                json_str(&name),
                json_str(&mode),
                devices.len(),
                gpus.layout().len(),
                json_str(&info.name),
                got.count()
            )?;
        }
    }
    Ok(())
}
