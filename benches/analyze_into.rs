//! A table made every timestep, fresh (`Analyzer::analyze`) against into the last one
//! (`Analyzer::analyze_into`, which reuses its columns' memory): site percolation at each
//! connectivity's threshold, open and periodic, the shape columns, all threads.
//!
//! ```text
//! cargo bench --bench analyze_into -- [--size N[,N...]] [--reps R]
//! ```
//! Calls of both alternate (so that load from other processes hits both alike); medians and
//! minima of `R` calls each (default 6) after one warm-up, and their ratio.

use clusterlab::generate::percolation;
use clusterlab::{Analyzer, Boundary, Connectivity, Measures};
use std::hint::black_box;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut sizes = vec![4096usize, 8192];
    let mut reps = 6usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--size" => {
                let v = args.next().expect("--size N[,N...]");
                sizes = v.split(',').map(|s| s.parse().expect("a size")).collect();
            }
            "--reps" => reps = args.next().and_then(|s| s.parse().ok()).expect("--reps R"),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    let reps = reps.max(1);
    println!(
        "{:>6} {:>4} {:<8} {:>9} {:>12} {:>12} {:>10} {:>10} {:>7}",
        "side", "conn", "boundary", "clusters", "analyze ms", "into ms", "min", "min into", "ratio"
    );
    for &n in &sizes {
        for c in [Connectivity::Four, Connectivity::Eight] {
            let p = if c == Connectivity::Four {
                0.592746
            } else {
                0.407254
            };
            let lattice = percolation(n, n, p, 1, 7);
            for b in [Boundary::Open, Boundary::Periodic] {
                let mut an = Analyzer::new(c, b).measures(Measures::Shape);
                let mut kept = an.analyze(lattice.view()).expect("analyze");
                let (mut fresh, mut into) = (Vec::new(), Vec::new());
                for _ in 0..reps {
                    let t = Instant::now();
                    let table = an.analyze(lattice.view()).expect("analyze");
                    black_box(&table);
                    drop(table);
                    fresh.push(t.elapsed().as_secs_f64() * 1e3);
                    let t = Instant::now();
                    an.analyze_into(lattice.view(), &mut kept)
                        .expect("analyze_into");
                    black_box(&kept);
                    into.push(t.elapsed().as_secs_f64() * 1e3);
                }
                let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
                let (fmin, imin) = (min(&fresh), min(&into));
                let (f, i) = (median(fresh), median(into));
                println!(
                    "{n:>6} {:>4} {:<8} {:>9} {f:>12.1} {i:>12.1} {fmin:>10.1} {imin:>10.1} {:>7.2}",
                    c.to_string(),
                    b.to_string(),
                    kept.count(),
                    i / f
                );
            }
        }
    }
}
