//! 64-bit against 32-bit GPU labels, device-resident, on site percolation at p_c.
//!
//! ```text
//! cargo bench --bench labels64_gpu
//! ```
//!
//! For each size, connectivity and numbering the lattice and the labels stay on the GPU; each
//! labeling (bit runs, `label_device` / `label_device64`) is timed with CUDA events after 3
//! warm-ups, and the median of at least 10 is reported. Sizes where both widths fit (`u32`
//! labels need fewer than 2^32 sites, and canonical ones fewer than 2^31) time both, back to back
//! on the same lattice, and give the ratio of the 64-bit path's sites/s to the 32-bit one's;
//! larger sizes time 64-bit labels alone. Also printed: the device memory each configuration
//! took (measured: free memory before the lattice, labels and scratch were allocated, less after),
//! the bytes a site the passes move at least (the model in `src/cuda/bit_runs/mod.rs`), and the
//! bandwidth that is at the median with its fraction of the card's (H100 3.0 TB/s, H200
//! 4.2 TB/s). Ends with a markdown table.
//!
//! Environment: `CLUSTERLAB_L64_BOTH` (sides timed in both widths, default `16384,32768`),
//! `CLUSTERLAB_L64_WIDE` (sides timed in 64 bits only, default `65536,70000`; `HxW` for a
//! non-square one), `CLUSTERLAB_L64_REPS` (timed runs, default 10, at least 10),
//! `CLUSTERLAB_L64_CONN` (`4`, `8` or `4,8`, the default).

mod common;

use clusterlab::cuda::cudarc::driver::CudaSlice;
use clusterlab::cuda::{cuda_available, CudaLabeler, Numbering};
use clusterlab::{Boundary, Connectivity};
use common::gpu::EventTimer;
use common::{bandwidth, env_usize, tb_per_s, BenchResult, Samples};
use rayon::prelude::*;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const P_C: f64 = 0.592746;
const WARM: usize = 3;

fn main() -> ExitCode {
    common::report("labels64_gpu", run())
}

/// `a,b,HxW` → shapes.
fn shapes(var: &str, default: &str) -> Vec<(usize, usize)> {
    let s = std::env::var(var).unwrap_or_else(|_| default.to_string());
    s.split(',')
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            let t = t.trim();
            let parse = |v: &str| {
                v.parse::<usize>()
                    .unwrap_or_else(|_| panic!("{var}: {t} is not a side or HxW"))
            };
            match t.split_once('x') {
                Some((h, w)) => (parse(h), parse(w)),
                None => (parse(t), parse(t)),
            }
        })
        .collect()
}

/// Site percolation at `p`, generated in parallel (a hash of the seed and the site index per
/// site: 4.9·10^9 sites in seconds, where a sequential generator takes minutes).
fn lattice(h: usize, w: usize, p: f64, seed: u64) -> Vec<u8> {
    let cut = (p * 2f64.powi(64)) as u64;
    let mut v = vec![0u8; h * w];
    v.par_chunks_mut(w.max(1)).enumerate().for_each(|(y, row)| {
        for (x, s) in row.iter_mut().enumerate() {
            // splitmix64 of the site's index.
            let mut z =
                seed.wrapping_add(((y * w + x) as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            *s = u8::from(z < cut);
        }
    });
    v
}

/// Bytes a site the passes move at least (`src/cuda/bit_runs/mod.rs`): 32-bit raw 1.25 + 8,
/// canonical 1.75 + 4(2 + p); 64-bit raw 13.25, canonical 13.75 (the tile pass writes a 2-byte
/// local root a site, the last pass reads it and writes the 8-byte label). Seam merges, the
/// roots' slots and edge components' rewrites are not counted.
fn model_bytes(numbering: Numbering, bits: u32) -> f64 {
    match (numbering, bits) {
        (Numbering::Raw, 32) => 9.25,
        (Numbering::Canonical, 32) => 1.75 + 4.0 * (2.0 + P_C),
        (Numbering::Raw, _) => 13.25,
        (Numbering::Canonical, _) => 13.75,
    }
}

struct Row {
    shape: (usize, usize),
    conn: Connectivity,
    numbering: Numbering,
    bits: u32,
    median_ms: f64,
    gsites: f64,
    ratio: Option<f64>,
    device_gb: f64,
    bytes_per_site: f64,
    tb_s: f64,
    of_card: f64,
    clusters: usize,
}

/// Times one configuration: `label` queues one labeling; returns the median ms and the count.
fn time(
    timer: &EventTimer,
    reps: usize,
    gpu: &mut CudaLabeler,
    mut label: impl FnMut(&mut CudaLabeler) -> clusterlab::Result<()>,
) -> BenchResult<(f64, usize)> {
    for _ in 0..WARM {
        label(gpu)?;
    }
    let count = gpu.count()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        times.push(timer.time(|| label(gpu))?);
    }
    Ok((Samples::new(times).median(), count))
}

fn free_bytes(gpu: &CudaLabeler) -> BenchResult<usize> {
    Ok(gpu.context().mem_get_info()?.0)
}

#[allow(clippy::too_many_arguments)]
fn bench_shape(
    stream: &Arc<clusterlab::cuda::cudarc::driver::CudaStream>,
    timer: &EventTimer,
    (h, w): (usize, usize),
    both: bool,
    conns: &[Connectivity],
    reps: usize,
    bw: f64,
    rows: &mut Vec<Row>,
) -> BenchResult<()> {
    let n = h * w;
    let t = Instant::now();
    let host = lattice(h, w, P_C, 2024);
    println!(
        "\n{h}x{w} ({:.2e} sites): lattice generated in {:.1} s",
        n as f64,
        t.elapsed().as_secs_f64()
    );
    for &conn in conns {
        for numbering in [Numbering::Raw, Numbering::Canonical] {
            let u32_fits =
                n < (1usize << 32) - 1 && (numbering == Numbering::Raw || n < (1usize << 31) - 1);
            let mut widths = Vec::new();
            if both && u32_fits {
                widths.push(32u32);
            }
            widths.push(64u32);
            let mut sites_per_s_32 = None;
            for bits in widths {
                // Measure what this configuration holds on the device: lattice, labels, scratch.
                let probe = CudaLabeler::with_stream(stream.clone(), conn, Boundary::Open)?;
                stream.synchronize()?;
                let before = free_bytes(&probe)?;
                drop(probe);
                let input: CudaSlice<u8> = stream.clone_htod(&host)?;
                let mut gpu = CudaLabeler::with_stream(stream.clone(), conn, Boundary::Open)?
                    .numbering(numbering);
                let (median_ms, clusters, after) = if bits == 32 {
                    let mut out = stream.alloc_zeros::<u32>(n)?;
                    gpu.prepare::<u8>(h, w)?;
                    let after = free_bytes(&gpu)?;
                    let (m, c) = time(timer, reps, &mut gpu, |g| {
                        g.label_device(&input, h, w, &mut out)
                    })?;
                    (m, c, after)
                } else {
                    let mut out = stream.alloc_zeros::<u64>(n)?;
                    gpu.prepare64::<u8>(h, w)?;
                    let after = free_bytes(&gpu)?;
                    let (m, c) = time(timer, reps, &mut gpu, |g| {
                        g.label_device64(&input, h, w, &mut out)
                    })?;
                    (m, c, after)
                };
                drop(gpu);
                drop(input);
                stream.synchronize()?;
                let bytes_per_site = model_bytes(numbering, bits);
                let sites_per_s = n as f64 / (median_ms * 1e-3);
                let tb_s = bytes_per_site * sites_per_s / 1e12;
                let ratio = if bits == 64 {
                    sites_per_s_32.map(|s32: f64| sites_per_s / s32)
                } else {
                    sites_per_s_32 = Some(sites_per_s);
                    None
                };
                let row = Row {
                    shape: (h, w),
                    conn,
                    numbering,
                    bits,
                    median_ms,
                    gsites: sites_per_s / 1e9,
                    ratio,
                    device_gb: before.saturating_sub(after) as f64 / 1e9,
                    bytes_per_site,
                    tb_s,
                    of_card: tb_s * 1e12 / bw,
                    clusters,
                };
                println!(
                    "{h}x{w} {conn}-conn {:<9} u{bits}: {median_ms:.3} ms, {:.2} Gsites/s{}, \
                     {:.2} GB on the device, {bytes_per_site:.2} B/site -> {tb_s:.2} TB/s \
                     ({:.0}% of {} TB/s), {clusters} clusters",
                    format!("{numbering:?}"),
                    row.gsites,
                    ratio.map_or(String::new(), |r| format!(" ({:.0}% of u32)", 100.0 * r)),
                    row.device_gb,
                    100.0 * row.of_card,
                    tb_per_s(bw),
                );
                rows.push(row);
            }
        }
    }
    Ok(())
}

fn run() -> BenchResult<()> {
    let info = cuda_available()?;
    let both = shapes("CLUSTERLAB_L64_BOTH", "16384,32768");
    let wide = shapes("CLUSTERLAB_L64_WIDE", "65536,70000");
    let reps = env_usize("CLUSTERLAB_L64_REPS", 10).max(10);
    let conns: Vec<Connectivity> = std::env::var("CLUSTERLAB_L64_CONN")
        .unwrap_or_else(|_| "4,8".into())
        .split(',')
        .map(|c| match c.trim() {
            "8" => Connectivity::Eight,
            _ => Connectivity::Four,
        })
        .collect();
    let (bw, note) = bandwidth(&info.name);
    println!(
        "device: {} (sm_{}{}, {} SMs, {:.1} GiB); {reps} timed runs after {WARM} warm-ups, \
         medians; card bandwidth {} TB/s",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.multiprocessors,
        info.total_memory as f64 / (1u64 << 30) as f64,
        tb_per_s(bw)
    );
    if let Some(note) = note {
        println!("{note}");
    }
    let first = CudaLabeler::new(info.ordinal, Connectivity::Four, Boundary::Open)?;
    let stream = first.stream().clone();
    drop(first);
    let timer = EventTimer::new(&stream)?;
    let mut rows = Vec::new();
    for &shape in &both {
        bench_shape(&stream, &timer, shape, true, &conns, reps, bw, &mut rows)?;
    }
    for &shape in &wide {
        bench_shape(&stream, &timer, shape, false, &conns, reps, bw, &mut rows)?;
    }

    println!(
        "\nDevice: {}; bit runs, site percolation at p_c, open boundary, device-resident; CUDA \
         events, medians of {reps} after {WARM} warm-ups. B/site: the passes' least traffic \
         (model, src/cuda/bit_runs/mod.rs); TB/s and % of the card at the median.\n",
        info.name
    );
    println!(
        "| lattice | conn | numbering | labels | median ms | Gsites/s | u64 / u32 sites/s | \
         device GB | B/site | TB/s | % of card | clusters |"
    );
    println!("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in &rows {
        println!(
            "| {}×{} | {} | {:?} | u{} | {:.3} | {:.2} | {} | {:.2} | {:.2} | {:.2} | {:.0}% | {} |",
            r.shape.0,
            r.shape.1,
            if r.conn == Connectivity::Four { 4 } else { 8 },
            r.numbering,
            r.bits,
            r.median_ms,
            r.gsites,
            r.ratio
                .map_or("".to_string(), |x| format!("{:.0}%", 100.0 * x)),
            r.device_gb,
            r.bytes_per_site,
            r.tb_s,
            100.0 * r.of_card,
            r.clusters
        );
    }
    Ok(())
}
