//! GPU cluster analysis timings at 16384² site percolation at p_c (or `--size N`): raw labeling
//! (the reference), the shape table without labels (device part by CUDA events, and the host
//! part that downloads the pieces and builds the table), the same with the label image, `n_s` +
//! wrapping flags only, and the full table (`Measures::All`: every column on the device for open
//! boundaries, device and host parts apart; and through the `Analyzer`, host lattice in), for
//! 4- and 8-connectivity, torus and open. Medians of `--reps` (20) runs after warm-up.
//!
//! `cargo bench --bench gpu_analysis -- [--size N] [--reps R] [--check] [--table-only] [--all-only]
//! [--conn C] [--boundary B]`
//! (`--check` compares each GPU table, and `n_s` with the flags, with the CPU's once; `--table-only` leaves out the
//! label-image and `Measures::All` columns, the slow ones, printed as `-`; `--all-only` times
//! raw labeling and the device's `Measures::All` only, the other medians printed as NaN).

mod common;

use clusterlab::cuda::{cuda_available, CudaAnalyzer, CudaLabeler, Numbering};
use clusterlab::generate::percolation;
use clusterlab::{Analyzer, Backend, Boundary, Connectivity, Labeler, Measures};
use common::gpu::EventTimer;
use common::{bandwidth, floor_ms, median, Args, BenchResult};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str =
    "usage: cargo bench --bench gpu_analysis -- [--size N] [--reps R] [--check] [--table-only] [--all-only]
  --size N       lattice side (default 16384)
  --reps R       timed runs per measurement (default 20)
  --check        compare each GPU table and n_s with the CPU's once
  --table-only   skip the label-image and Measures::All columns (printed as -)
  --all-only     time raw labeling and the device's Measures::All only (others NaN)
  --conn C       one connectivity only (4 or 8; default both)
  --boundary B   one boundary only (open or periodic; default both)";

fn main() -> ExitCode {
    common::report("gpu_analysis", run())
}

fn run() -> BenchResult<()> {
    let mut size = 16384usize;
    let mut reps = 20usize;
    let mut check = false;
    let mut table_only = false;
    let mut all_only = false;
    let mut conns = vec![Connectivity::Four, Connectivity::Eight];
    let mut boundaries = vec![Boundary::Periodic, Boundary::Open];
    let mut args = Args::from_env(USAGE);
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--size" => size = args.value("--size"),
            "--reps" => reps = args.value("--reps"),
            "--check" => check = true,
            "--table-only" => table_only = true,
            "--all-only" => all_only = true,
            "--conn" => {
                conns = match args.value::<u32>("--conn") {
                    4 => vec![Connectivity::Four],
                    8 => vec![Connectivity::Eight],
                    c => return Err(format!("--conn takes 4 or 8, not {c}").into()),
                }
            }
            "--boundary" => {
                boundaries = match args.value::<String>("--boundary").as_str() {
                    "open" => vec![Boundary::Open],
                    "periodic" => vec![Boundary::Periodic],
                    b => return Err(format!("--boundary takes open or periodic, not {b}").into()),
                }
            }
            other => args.unknown(other),
        }
    }
    let info = cuda_available()?;
    println!("device: {} ({} SMs)", info.name, info.multiprocessors);
    let (bw, note) = bandwidth(&info.name);
    if let Some(note) = note {
        println!("{note}");
    }
    let p = 0.592746;
    let lattice = percolation(size, size, p, 1, 2024);
    let n = size * size;
    println!("lattice: {size}x{size}, p = {p}; medians of {reps} runs, ms");
    println!(
        "{:<4} {:<8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "conn",
        "boundary",
        "raw lab",
        "tab dev",
        "tab host",
        "tab wall",
        "cols pcie",
        "tab+lab",
        "ns dev",
        "ns host",
        "ns wall",
        "clusters",
        "floor",
        "All dev",
        "All host",
        "All wall",
        "tab kept"
    );
    for &c in &conns {
        for &b in &boundaries {
            let mut gpu = CudaAnalyzer::new(0, c, b)?;
            let stream = gpu.stream().clone();
            let input = stream.clone_htod(lattice.as_slice().unwrap())?;
            let mut labels = stream.alloc_zeros::<u32>(n)?;
            let timer = EventTimer::new(&stream)?;
            // Raw labeling, the reference.
            let mut raw = CudaLabeler::with_stream(stream.clone(), c, b)?.numbering(Numbering::Raw);
            raw.prepare::<u8>(size, size)?;
            let mut times = Vec::new();
            for i in 0..reps + 3 {
                let t = timer.time(|| raw.label_device(&input, size, size, &mut labels))?;
                if i >= 3 {
                    times.push(t);
                }
            }
            let raw_ms = median(times);
            // Shape table: device part, then host part.
            let (mut dev, mut host) = (Vec::new(), Vec::new());
            let mut pieces = 0;
            // (--all-only: no runs, NaN medians.)
            let other = if all_only { 0 } else { reps + 2 };
            for i in 0..other {
                let t = timer.time(|| gpu.queue_table::<u8, _>(&input, size, size))?;
                let w = Instant::now();
                let table = gpu.finish_table()?;
                let h = w.elapsed().as_secs_f64() * 1e3;
                if i >= 2 {
                    dev.push(t);
                    host.push(h);
                }
                pieces = table.count();
                if i == 0 && check {
                    let want = Analyzer::new(c, b)
                        .measures(Measures::Shape)
                        .analyze(lattice.view())?;
                    println!("check {c} {b}: table equal to the CPU's: {}", table == want);
                }
            }
            let (tab_dev, tab_host) = (median(dev), median(host));
            // The table as `analyze` makes it, from a device-resident lattice: queued and
            // collected without a wait between (the host's work before the count overlaps the
            // device's).
            let mut walls = Vec::new();
            for i in 0..other {
                let w = Instant::now();
                gpu.queue_table::<u8, _>(&input, size, size)?;
                let table = gpu.finish_table()?;
                let t = w.elapsed().as_secs_f64() * 1e3;
                std::hint::black_box(table);
                if i >= 2 {
                    walls.push(t);
                }
            }
            let tab_wall = median(walls);
            // The same into one table kept across runs (`finish_table_into`), as a loop over
            // timesteps would: its columns' memory is reused, no page faults.
            let mut kept_walls = Vec::new();
            let mut kept = None;
            for i in 0..other {
                let w = Instant::now();
                gpu.queue_table::<u8, _>(&input, size, size)?;
                match kept.as_mut() {
                    Some(t) => gpu.finish_table_into(t)?,
                    None => kept = Some(gpu.finish_table()?),
                }
                let t = w.elapsed().as_secs_f64() * 1e3;
                if i >= 2 {
                    kept_walls.push(t);
                }
            }
            drop(kept);
            let tab_kept = median(kept_walls);
            // The peer of the host part: copying the table's columns (8 eight-byte and 4 one-byte
            // values a cluster) from the device into a new host vector, as a user's download of
            // a device-built table would (pageable memory, fresh each time: wall).
            let cols = stream.alloc_zeros::<u8>(pieces * 68)?;
            let mut copy = Vec::new();
            for i in 0..other {
                let w = Instant::now();
                let v = stream.clone_dtoh(&cols)?;
                let t = w.elapsed().as_secs_f64() * 1e3;
                std::hint::black_box(v);
                if i >= 2 {
                    copy.push(t);
                }
            }
            drop(cols);
            let pcie = median(copy);
            // With the label image (host arrays in and out: wall time).
            let mut lab = Vec::new();
            for i in 0..if table_only || all_only {
                0
            } else {
                (reps / 4).max(3) + 1
            } {
                let w = Instant::now();
                let _ = gpu.analyze_labeled(lattice.view())?;
                if i >= 1 {
                    lab.push(w.elapsed().as_secs_f64() * 1e3);
                }
            }
            // n_s + flags.
            let (mut dev, mut host, mut wall) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..other {
                let w0 = Instant::now();
                let t = timer.time(|| gpu.queue_size_counts::<u8, _>(&input, size, size))?;
                let w = Instant::now();
                let counts = gpu.finish_size_counts()?;
                let h = w.elapsed().as_secs_f64() * 1e3;
                let all = w0.elapsed().as_secs_f64() * 1e3;
                if i >= 2 {
                    dev.push(t);
                    host.push(h);
                    wall.push(all);
                }
                if i == 0 && check {
                    let mut want = clusterlab::SizeCounts::new();
                    Labeler::new(c, b).size_counts_into(lattice.view(), &mut want)?;
                    println!(
                        "check {c} {b}: n_s and flags equal to the CPU's: {}",
                        counts == want
                    );
                }
                if i == 0 {
                    println!(
                        "  {c} {b}: {} clusters, largest {}, wraps x/y {}/{}, spans x/y {}/{}",
                        counts.clusters(),
                        counts.largest(),
                        counts.wraps_x(),
                        counts.wraps_y(),
                        counts.spans_x(),
                        counts.spans_y()
                    );
                }
            }
            // Measures::All on the device (open boundaries): device part (events, one wait for
            // the piece counts inside), host part (downloads and table build, wall).
            let (mut all_dev, mut all_host) = (Vec::new(), Vec::new());
            let all_reps = if b == Boundary::Open && !table_only {
                (reps / 2).max(3) + 1
            } else {
                0
            };
            for i in 0..all_reps {
                let t = timer.time(|| gpu.queue_all::<u8, _>(&input, size, size))?;
                let w = Instant::now();
                let table = gpu.finish_all()?;
                let h = w.elapsed().as_secs_f64() * 1e3;
                if i >= 1 {
                    all_dev.push(t);
                    all_host.push(h);
                }
                if i == 0 && check {
                    let want = Analyzer::new(c, b).analyze(lattice.view())?;
                    println!(
                        "check {c} {b}: Measures::All table equal to the CPU's: {}",
                        table == want
                    );
                }
            }
            // Measures::All through the Analyzer, host lattice in (open: all on the GPU;
            // periodic: GPU labels, CPU perimeters): 3 runs.
            let mut all = Vec::new();
            let mut an = Analyzer::new(c, b).backend(Backend::Cuda { device: 0 })?;
            for i in 0..if table_only || all_only { 0 } else { 4 } {
                let w = Instant::now();
                let _ = an.analyze(lattice.view())?;
                if i >= 1 {
                    all.push(w.elapsed().as_secs_f64() * 1e3);
                }
            }
            // Bytes the table path must move at least: read the lattice, the forest reads of
            // the run starts aside, and write each piece's 64-byte row of accumulators once.
            let floor = floor_ms(n as f64 + 64.0 * pieces as f64, bw);
            let (lab, all) = if table_only {
                ("-".to_string(), "-".to_string())
            } else {
                (format!("{:.3}", median(lab)), format!("{:.1}", median(all)))
            };
            let (all_dev, all_host) = if all_dev.is_empty() {
                ("-".to_string(), "-".to_string())
            } else {
                (
                    format!("{:.3}", median(all_dev)),
                    format!("{:.1}", median(all_host)),
                )
            };
            println!(
                "{:<4} {:<8} {:>8.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9} {:>9.3} {:>9.3} {:>9.3} {:>9} {:>9.3} {:>9} {:>9} {:>9} {:>9.3}",
                c.to_string(),
                b.to_string(),
                raw_ms,
                tab_dev,
                tab_host,
                tab_wall,
                pcie,
                lab,
                median(dev),
                median(host),
                median(wall),
                pieces,
                floor,
                all_dev,
                all_host,
                all,
                tab_kept
            );
        }
    }
    println!(
        "\nraw lab: raw labeling (CudaLabeler, events). tab dev: forest + ranking + accumulators \
         (events); tab host: downloads + seam join + table build (wall), after the device's part; tab \
         wall: both as `analyze` runs them, queued and collected without a wait between, from a \
         device-resident lattice (wall); cols pcie: the table's \
         column bytes copied from the device into a new host vector (wall). tab+lab: host lattice in, \
         table and labels out (wall). ns dev / ns host / ns wall: n_s + flags, device part \
         (events), host part, both (wall). All dev / All host: Measures::All on the device (open \
         boundaries only): both analyses, perimeters, hulls and filled areas (events, one wait \
         for the counts inside) / downloads and table build (wall). All wall: Analyzer with \
         Measures::All on the CUDA backend, host lattice in (open: every column on the GPU; \
         periodic: GPU labels, CPU perimeters). tab kept: as tab wall, into one table kept across \
         runs (finish_table_into: the columns' memory reused)."
    );
    Ok(())
}
