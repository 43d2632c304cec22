//! Regression bench of clusterlab's own CPU algorithms on a 1024² lattice at the 4-connectivity
//! site percolation threshold, with both connectivities:
//! BFS, Hoshen–Kopelman, strips on one thread and strips on all threads.
//!
//! ```text
//! cargo bench --bench algorithms
//! ```
//! Sample sizes are small so the whole bench takes a minute or two. For the comparison with OpenCV
//! and scipy see `benches/cpu_vs_peers.rs`.

use clusterlab::generate::percolation;
use clusterlab::{Algorithm, Boundary, Connectivity, Labeler, Parallelism};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::Array2;
use std::hint::black_box;
use std::time::Duration;

/// Site percolation threshold of the square lattice, 4-connectivity.
const P_C4: f64 = 0.592746;
const SIZE: usize = 1024;

fn algorithms(c: &mut Criterion) {
    let lattice = percolation(SIZE, SIZE, P_C4, 1, 1);
    let mut out = Array2::<u32>::zeros(lattice.dim());
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let variants = [
        ("bfs", Algorithm::Bfs, Parallelism::Sequential),
        (
            "hoshen-kopelman",
            Algorithm::HoshenKopelman,
            Parallelism::Sequential,
        ),
        ("strips-1", Algorithm::Strips, Parallelism::Sequential),
        ("strips-all", Algorithm::Strips, Parallelism::Threads(all)),
    ];
    for conn in [Connectivity::Four, Connectivity::Eight] {
        let mut group = c.benchmark_group(format!("p_c {SIZE}² {conn}-conn"));
        group.throughput(Throughput::Elements(lattice.len() as u64));
        for (name, algorithm, parallelism) in variants {
            let mut labeler = Labeler::new(conn, Boundary::Open)
                .algorithm(algorithm)
                .parallelism(parallelism);
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| {
                    labeler
                        .label_into(black_box(lattice.view()), out.view_mut())
                        .expect("labeling failed")
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = algorithms
}
criterion_main!(benches);
