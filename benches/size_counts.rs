//! Per-timestep observables on the CPU: `Labeler::size_counts_into` (cluster count, `n_s`,
//! largest, `S`, `P∞`, wrapping flags, no label image) beside `Labeler::label_into` on the same
//! lattices — 512² and 4096² at each connectivity's site threshold, on a torus, 1 and 2 threads.
//! The target is a ratio of at most 1.3.
//!
//! ```text
//! cargo bench --bench size_counts
//! ```
//! Criterion's groups are `size_counts <n>² <c>-conn`, with `label_into-<t>` and
//! `size_counts_into-<t>` for `t` threads. At the end a table gives the median of interleaved
//! calls of both (`label_into` and `size_counts_into` alternating, so that load from other
//! processes hits both alike) and their ratio.

use clusterlab::generate::percolation;
use clusterlab::{Boundary, Connectivity, Labeler, Parallelism, SizeCounts};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::Array2;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Site percolation thresholds of the square lattice.
const P_C4: f64 = 0.592746;
const P_C8: f64 = 0.407254;

const SIZES: [usize; 2] = [512, 4096];
const THREADS: [usize; 2] = [1, 2];

fn parallelism(threads: usize) -> Parallelism {
    if threads == 1 {
        Parallelism::Sequential
    } else {
        Parallelism::Threads(threads)
    }
}

fn threshold(c: Connectivity) -> f64 {
    match c {
        Connectivity::Four => P_C4,
        Connectivity::Eight => P_C8,
    }
}

/// A labeler warmed up on a checkerboard (as many runs as a lattice can have), so that neither
/// call allocates in the timed loop.
fn warm(c: Connectivity, threads: usize, n: usize) -> Labeler {
    let mut labeler = Labeler::new(c, Boundary::Periodic).parallelism(parallelism(threads));
    let board = Array2::from_shape_fn((n, n), |(y, x)| ((x + y) % 2) as u8);
    let mut out = Array2::<u32>::zeros((n, n));
    labeler.label_into(board.view(), out.view_mut()).unwrap();
    labeler
        .size_counts_into(board.view(), &mut SizeCounts::new())
        .unwrap();
    labeler
}

fn size_counts(c: &mut Criterion) {
    for n in SIZES {
        for conn in [Connectivity::Four, Connectivity::Eight] {
            let lattice = percolation(n, n, threshold(conn), 1, 1);
            let mut out = Array2::<u32>::zeros((n, n));
            let mut counts = SizeCounts::new();
            let mut group = c.benchmark_group(format!("size_counts {n}² {conn}-conn"));
            group.throughput(Throughput::Elements((n * n) as u64));
            for threads in THREADS {
                let mut labeler = warm(conn, threads, n);
                group.bench_function(BenchmarkId::new("label_into", threads), |b| {
                    b.iter(|| {
                        labeler
                            .label_into(black_box(lattice.view()), out.view_mut())
                            .unwrap()
                    })
                });
                group.bench_function(BenchmarkId::new("size_counts_into", threads), |b| {
                    b.iter(|| {
                        labeler
                            .size_counts_into(black_box(lattice.view()), &mut counts)
                            .unwrap()
                    })
                });
            }
            group.finish();
        }
    }
    summary();
}

/// Medians of interleaved calls, and the ratio.
fn summary() {
    println!();
    println!("size      conn  threads  label_into ms  size_counts_into ms  ratio");
    for n in SIZES {
        let reps = if n <= 512 { 201 } else { 21 };
        for conn in [Connectivity::Four, Connectivity::Eight] {
            let lattice = percolation(n, n, threshold(conn), 1, 1);
            let mut out = Array2::<u32>::zeros((n, n));
            let mut counts = SizeCounts::new();
            for threads in THREADS {
                let mut labeler = warm(conn, threads, n);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for _ in 0..reps {
                    let t = Instant::now();
                    labeler.label_into(lattice.view(), out.view_mut()).unwrap();
                    a.push(t.elapsed());
                    let t = Instant::now();
                    labeler
                        .size_counts_into(lattice.view(), &mut counts)
                        .unwrap();
                    b.push(t.elapsed());
                }
                let (la, lb) = (median(&mut a), median(&mut b));
                println!(
                    "{n:>4}²    {:>2}    {threads:>5}  {:>13.3}  {:>19.3}  {:>5.2}",
                    conn.neighbours(),
                    la.as_secs_f64() * 1e3,
                    lb.as_secs_f64() * 1e3,
                    lb.as_secs_f64() / la.as_secs_f64()
                );
                black_box(counts.largest());
            }
        }
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = size_counts
}
criterion_main!(benches);
