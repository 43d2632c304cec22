//! 64-bit labels against 32-bit ones at equal size: `label64` / `label` one-shot (a new labeler
//! and a new label image each call) and a reused, warmed-up `Labeler::label_into` into a `u64`
//! or `u32` image, on site-percolation lattices at p_c (4-connectivity, open boundary), with the
//! bytes each needs (`Labeler::bytes_needed`: input, labels, the CPU's scratch). The target is
//! u64 at ≥ 90 % of u32's sites/s where both fit.
//!
//! ```text
//! cargo bench --bench labels64
//! CLUSTERLAB_BENCH_SIZES=32768 CLUSTERLAB_BENCH_U64_SIZES=65536,70000 \
//!   CLUSTERLAB_BENCH_THREADS=16 cargo bench --bench labels64
//! ```
//! - `CLUSTERLAB_BENCH_SIZES`: square sides run in both widths (default `4096,8192,16384`);
//! - `CLUSTERLAB_BENCH_U64_SIZES`: sides run in u64 only (beyond `MAX_SITES`; default none);
//! - `CLUSTERLAB_BENCH_THREADS`: CPU thread counts (default `1,2`);
//! - `CLUSTERLAB_BENCH_BACKEND`: `cpu` (default) or `cuda` (GPU 0 through `Labeler`: host
//!   arrays, so uploads and downloads are in the times).
//!
//! Calls of the two widths alternate (so that load from other processes hits both alike);
//! each figure is the median of the timed calls after one warm-up call of each. It prints a
//! markdown table.

use clusterlab::generate::percolation;
use clusterlab::{Backend, Boundary, Connectivity, Labeler, Parallelism};
use ndarray::Array2;
use std::hint::black_box;
use std::time::{Duration, Instant};

const P_C4: f64 = 0.592746;

fn list(var: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|s| s.trim().parse().unwrap_or_else(|_| panic!("{var}: {s:?}")))
            .collect(),
        Ok(_) => Vec::new(),
        Err(_) => default.to_vec(),
    }
}

fn median(v: &mut [Duration]) -> f64 {
    v.sort_unstable();
    v[v.len() / 2].as_secs_f64()
}

fn labeler(threads: usize, cuda: bool) -> Labeler {
    let l = Labeler::new(Connectivity::Four, Boundary::Open).parallelism(if threads == 1 {
        Parallelism::Sequential
    } else {
        Parallelism::Threads(threads)
    });
    if cuda {
        l.backend(Backend::Cuda { device: 0 }).expect("GPU 0")
    } else {
        l
    }
}

fn gib(bytes: usize) -> String {
    format!("{:.2}", bytes as f64 / (1u64 << 30) as f64)
}

/// Timed calls per configuration: enough for a median, few for large lattices.
fn reps(n: usize) -> usize {
    match n {
        0..=4096 => 15,
        4097..=8192 => 7,
        8193..=16384 => 5,
        _ => 3,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once, tiny.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (both, only64) = if smoke {
        (vec![256], vec![])
    } else {
        (
            list("CLUSTERLAB_BENCH_SIZES", &[4096, 8192, 16384]),
            list("CLUSTERLAB_BENCH_U64_SIZES", &[]),
        )
    };
    let threads = list("CLUSTERLAB_BENCH_THREADS", &[1, 2]);
    let cuda = std::env::var("CLUSTERLAB_BENCH_BACKEND").is_ok_and(|b| b == "cuda");
    let device = if cuda { "cuda:0" } else { "cpu" };

    println!();
    println!("| side | sites | backend | threads | mode | u32 ms | u64 ms | u32 Gsites/s | u64 Gsites/s | u64/u32 | u32 GiB | u64 GiB |");
    println!("|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for (n, with32) in both
        .iter()
        .map(|&n| (n, true))
        .chain(only64.iter().map(|&n| (n, false)))
    {
        let lattice = percolation(n, n, P_C4, 1, 1);
        let sites = (n * n) as f64;
        for &t in &threads {
            let probe = labeler(t, cuda);
            let bytes32 = probe.bytes_needed::<u32>(n, n, 1);
            let bytes64 = probe.bytes_needed::<u64>(n, n, 1);
            drop(probe);
            let r = if smoke { 1 } else { reps(n) };

            // Reused: warmed-up labelers into preallocated images.
            let mut a = labeler(t, cuda);
            let mut b = labeler(t, cuda);
            let mut out32 = with32.then(|| Array2::<u32>::zeros((n, n)));
            let mut out64 = Array2::<u64>::zeros((n, n));
            let (mut t32, mut t64) = (Vec::new(), Vec::new());
            for i in 0..=r {
                if let Some(out) = out32.as_mut() {
                    let s = Instant::now();
                    black_box(a.label_into(lattice.view(), out.view_mut()).unwrap());
                    if i > 0 {
                        t32.push(s.elapsed());
                    }
                }
                let s = Instant::now();
                black_box(b.label_into(lattice.view(), out64.view_mut()).unwrap());
                if i > 0 {
                    t64.push(s.elapsed());
                }
            }
            if let Some(out) = &out32 {
                assert!(out.iter().zip(out64.iter()).all(|(&x, &y)| x as u64 == y));
            }
            drop((a, b, out32, out64));
            row(
                n, sites, device, t, "reused", &mut t32, &mut t64, bytes32, bytes64,
            );

            // One-shot: a new labeler (as `label` / `label64` make) and label image per call.
            let (mut t32, mut t64) = (Vec::new(), Vec::new());
            for i in 0..=r {
                if with32 {
                    let s = Instant::now();
                    let l = labeler(t, cuda).label(lattice.view()).unwrap();
                    if i > 0 {
                        t32.push(s.elapsed());
                    }
                    drop(black_box(l));
                }
                let s = Instant::now();
                let l = labeler(t, cuda).label64(lattice.view()).unwrap();
                if i > 0 {
                    t64.push(s.elapsed());
                }
                drop(black_box(l));
            }
            row(
                n, sites, device, t, "one-shot", &mut t32, &mut t64, bytes32, bytes64,
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    n: usize,
    sites: f64,
    device: &str,
    threads: usize,
    mode: &str,
    t32: &mut [Duration],
    t64: &mut [Duration],
    bytes32: usize,
    bytes64: usize,
) {
    let m64 = median(t64);
    let (ms32, rate32, ratio, gib32) = if t32.is_empty() {
        (
            "—".to_string(),
            "—".to_string(),
            "—".to_string(),
            "—".to_string(),
        )
    } else {
        let m32 = median(t32);
        (
            format!("{:.1}", m32 * 1e3),
            format!("{:.3}", sites / m32 / 1e9),
            format!("{:.2}", m32 / m64),
            gib(bytes32),
        )
    };
    println!(
        "| {n} | {sites:.3e} | {device} | {threads} | {mode} | {ms32} | {:.1} | {rate32} | {:.3} | {ratio} | {gib32} | {} |",
        m64 * 1e3,
        sites / m64 / 1e9,
        gib(bytes64)
    );
}
