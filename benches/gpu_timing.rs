//! Times the CUDA labelers device-resident on site percolation at p_c.
//!
//! ```text
//! cargo bench --bench gpu_timing -- [--size N] [--density P] [--reps R] [--check] [--once]
//!     [--only ALG]
//! ```
//!
//! For each algorithm, connectivity and numbering: the lattice and the label array stay on the
//! GPU; each labeling is timed with CUDA events around `label_device` after three warm-up runs,
//! and the median of `R` (default 20) is printed with the fraction of the memory floor it
//! reaches (reading the `u8` lattice once and writing the `u32` labels once at the card's copy
//! bandwidth, `common::bandwidth`: 0.32 ms at 16384² on an H200). `--density` labels site
//! percolation at another occupation probability (the peers table's densities 0.3 and 0.8).
//! `--check` compares the GPU's canonical labels with the CPU's; `--once` runs each
//! configuration once (for profilers); `--only Ha4,BlockUnionFind` times those algorithms only.

mod common;

use clusterlab::cuda::{cuda_available, CudaLabeler, Numbering};
use clusterlab::generate::percolation;
use clusterlab::{Algorithm, Boundary, Connectivity, Labeler};
use common::gpu::EventTimer;
use common::{bandwidth, floor_ms, tb_per_s, Args, BenchResult, Samples};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: cargo bench --bench gpu_timing -- [--size N] [--density P] [--reps R] \
[--check] [--once] [--only ALG[,ALG...]]
  --size N   lattice side (default 16384)
  --density P  occupation probability (default p_c = 0.592746)
  --reps R   timed runs per configuration (default 20)
  --check    compare the GPU's counts and canonical labels with the CPU's
  --once     one run per configuration (for profilers)
  --only     time these algorithms only, e.g. Ha4,BlockUnionFind";

fn main() -> ExitCode {
    common::report("gpu_timing", run())
}

fn run() -> BenchResult<()> {
    let mut size = 16384usize;
    let mut reps = 20usize;
    let mut check = false;
    let mut once = false;
    let mut only: Option<String> = None;
    let mut p = 0.592746;
    let mut args = Args::from_env(USAGE);
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--size" => size = args.value("--size"),
            "--density" => p = args.value("--density"),
            "--reps" => reps = args.value("--reps"),
            "--check" => check = true,
            "--once" => once = true,
            "--only" => only = Some(args.value("--only")),
            other => args.unknown(other),
        }
    }
    let info = cuda_available()?;
    println!(
        "device: {} (sm_{}{}, {} SMs, {:.1} GiB)",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.multiprocessors,
        info.total_memory as f64 / (1u64 << 30) as f64
    );
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("--density {p}: not a probability").into());
    }
    let t = Instant::now();
    let lattice = percolation(size, size, p, 1, 2024);
    let n = size * size;
    println!(
        "lattice: {size}x{size} site percolation, p = {p}, generated in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let (bw, note) = bandwidth(&info.name);
    if let Some(note) = note {
        println!("{note}");
    }
    let floor_ms = floor_ms(n as f64 * 5.0, bw);
    println!(
        "floor (read u8 + write u32 at {} TB/s): {floor_ms:.3} ms",
        tb_per_s(bw)
    );

    // One stream for everything: no cross-stream events.
    let first = CudaLabeler::new(0, Connectivity::Four, Boundary::Open)?;
    let stream = first.stream().clone();
    drop(first);
    let timer = EventTimer::new(&stream)?;
    let input = stream.clone_htod(lattice.as_slice().unwrap())?;
    let mut output = stream.alloc_zeros::<u32>(n)?;

    let cpu = if check {
        let t = Instant::now();
        let four = Labeler::new(Connectivity::Four, Boundary::Open).label(lattice.view())?;
        let eight = Labeler::new(Connectivity::Eight, Boundary::Open).label(lattice.view())?;
        println!(
            "cpu labels: {} (4) and {} (8) clusters in {:.2} s",
            four.count(),
            eight.count(),
            t.elapsed().as_secs_f64()
        );
        Some((four, eight))
    } else {
        None
    };

    println!(
        "\n{:<18} {:>4} {:<9} {:<8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10}",
        "algorithm",
        "conn",
        "numbering",
        "boundary",
        "median ms",
        "min ms",
        "max ms",
        "piped ms",
        "floor",
        "clusters"
    );
    let configs: Vec<(Algorithm, Connectivity, Numbering, Boundary)> = {
        let mut v = Vec::new();
        for alg in [
            Algorithm::BitRuns,
            Algorithm::BlockUnionFind,
            Algorithm::TileMerge,
            Algorithm::Ha4,
            Algorithm::LabelEquivalence,
        ] {
            for c in [Connectivity::Four, Connectivity::Eight] {
                for num in [Numbering::Raw, Numbering::Canonical] {
                    v.push((alg, c, num, Boundary::Open));
                }
            }
        }
        for c in [Connectivity::Four, Connectivity::Eight] {
            for num in [Numbering::Raw, Numbering::Canonical] {
                for alg in [
                    Algorithm::BitRuns,
                    Algorithm::BlockUnionFind,
                    Algorithm::Ha4,
                    Algorithm::TileMerge,
                ] {
                    v.push((alg, c, num, Boundary::Periodic));
                }
            }
        }
        v.retain(|(alg, ..)| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|a| a == format!("{alg:?}")))
        });
        v
    };
    let mut failures = 0;
    for (alg, c, num, b) in configs {
        let mut gpu = CudaLabeler::with_stream(stream.clone(), c, b)?
            .algorithm(alg)
            .numbering(num);
        gpu.prepare::<u8>(size, size)?;
        let warm = if once { 1 } else { 3 };
        for _ in 0..warm {
            gpu.label_device(&input, size, size, &mut output)?;
        }
        let count = gpu.count()?;
        let mut times = Vec::new();
        if !once {
            let wall = Instant::now();
            for _ in 0..reps {
                times.push(timer.time(|| gpu.label_device(&input, size, size, &mut output))?);
                if wall.elapsed().as_secs() > 20 {
                    break;
                }
            }
        }
        let times = Samples::new(times);
        // Back to back, no host wait in between: the mean per labeling.
        let mut piped = f64::NAN;
        if !once && !times.is_empty() {
            let k = times.len();
            piped = timer.time(|| {
                (0..k).try_for_each(|_| gpu.label_device(&input, size, size, &mut output))
            })? / k as f64;
        }
        let median = times.upper_median();
        println!(
            "{:<18} {:>4} {:<9} {:<8} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>6.0}% {:>10}",
            format!("{alg:?}"),
            c.to_string(),
            format!("{num:?}"),
            b.to_string(),
            median,
            times.min(),
            times.max(),
            piped,
            100.0 * floor_ms / median,
            count
        );
        if let (Some((four, eight)), Boundary::Open) = (&cpu, b) {
            let want = if c == Connectivity::Four { four } else { eight };
            if count != want.count() {
                println!(
                    "CHECK FAILED: {alg:?} {c}: {count} clusters, the CPU finds {}",
                    want.count()
                );
                failures += 1;
            }
            if num == Numbering::Canonical {
                let got = stream.clone_dtoh(&output)?;
                if got.as_slice() != want.array().as_slice().unwrap() {
                    println!("CHECK FAILED: {alg:?} {c}: canonical labels differ from the CPU's");
                    failures += 1;
                }
            }
        }
    }
    if failures > 0 {
        return Err(format!("{failures} checks failed").into());
    }
    if cpu.is_some() {
        println!("\ncheck: GPU counts (and canonical labels) identical to the CPU's");
    }
    Ok(())
}
