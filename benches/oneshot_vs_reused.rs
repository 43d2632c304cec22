//! Issue 20 part 1's second half: is the reused path (`Labeler::label_into` into an image the
//! caller keeps) faster than the one-shot call (`clusterlab::label`, which allocates its output)?
//! `cpu_vs_peers` times the two one after the other, each for a second or more, so drift between
//! the windows shows up as a difference; here they alternate call by call in one window, so load
//! from other processes hits both alike.
//!
//! ```text
//! cargo bench --bench oneshot_vs_reused -- [--size N] [--reps R]
//! ```
//! Lattices: N² (default 4096²) at p_c = 0.592746 and at density 0.8, both connectivities, 1 and
//! 2 threads. Per row, three calls alternate: the reused labeler with its own pool (as
//! `cpu_vs_peers` times it: `Sequential` at one thread, `Threads(t)` at more), the reused labeler
//! in the caller's pool (`Rayon` inside `pool.install`, the pool the one-shot call runs in), and
//! the one-shot call, in an order that rotates from round to round; medians after 3 warm-up
//! rounds.

mod common;

use clusterlab::generate::percolation;
use clusterlab::{label, Boundary, Connectivity, Labeler, Parallelism};
use common::{Args, BenchResult, Samples};
use ndarray::Array2;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: cargo bench --bench oneshot_vs_reused -- [--size N] [--reps R]
  --size  lattice side (default 4096)
  --reps  timed rounds per row after 3 warm-up rounds (default 25)";

fn main() -> ExitCode {
    common::report("oneshot_vs_reused", run())
}

/// Wall time of `f` in ms and its result.
fn timed<R>(f: impl FnOnce() -> R) -> (f64, R) {
    let t0 = Instant::now();
    let r = f();
    (t0.elapsed().as_secs_f64() * 1e3, r)
}

fn run() -> BenchResult<()> {
    let mut args = Args::from_env(USAGE);
    let (mut size, mut reps) = (4096usize, 25usize);
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--size" => size = args.value("--size"),
            "--reps" => reps = args.value("--reps"),
            other => args.unknown(other),
        }
    }
    println!(
        "oneshot_vs_reused: {size}² lattices, {reps} alternated rounds after 3 warm-ups, medians in ms"
    );
    println!(
        "{:<12} {:>4} {:>3} {:>11} {:>12} {:>9} {:>16} {:>16}",
        "lattice",
        "conn",
        "thr",
        "reused own",
        "reused pool",
        "one-shot",
        "one-shot/own",
        "one-shot/pool"
    );
    for (name, p, seed) in [("p_c", 0.592746, 1u32), ("density 0.8", 0.8, 3)] {
        let lattice = percolation(size, size, p, 1, seed);
        for conn in [Connectivity::Four, Connectivity::Eight] {
            for t in [1usize, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
                let own_par = if t == 1 {
                    Parallelism::Sequential
                } else {
                    Parallelism::Threads(t)
                };
                let mut own = Labeler::new(conn, Boundary::Open).parallelism(own_par);
                let mut in_pool = Labeler::new(conn, Boundary::Open);
                let mut out = Array2::<u32>::zeros(lattice.dim());
                let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
                for round in 0..reps + 3 {
                    // The order rotates from round to round, so that no call always follows the
                    // same one (a call after another on the same thread finds warmer caches).
                    let mut t3 = [0.0; 3];
                    let mut n3 = [0usize; 3];
                    for k in 0..3 {
                        let which = (round + k) % 3;
                        let (t, n) = match which {
                            0 => timed(|| own.label_into(lattice.view(), out.view_mut())),
                            1 => timed(|| {
                                pool.install(|| in_pool.label_into(lattice.view(), out.view_mut()))
                            }),
                            _ => timed(|| {
                                pool.install(|| {
                                    label(lattice.view(), conn, Boundary::Open).map(|l| l.count())
                                })
                            }),
                        };
                        t3[which] = t;
                        n3[which] = n?;
                    }
                    if n3[0] != n3[1] || n3[1] != n3[2] {
                        return Err(format!("cluster counts differ: {n3:?}").into());
                    }
                    if round >= 3 {
                        a.push(t3[0]);
                        b.push(t3[1]);
                        c.push(t3[2]);
                    }
                }
                let (ma, mb, mc) = (
                    Samples::new(a).median(),
                    Samples::new(b).median(),
                    Samples::new(c).median(),
                );
                println!(
                    "{name:<12} {:>4} {t:>3} {ma:>11.2} {mb:>12.2} {mc:>9.2} {:>16.3} {:>16.3}",
                    conn.neighbours(),
                    mc / ma,
                    mc / mb
                );
            }
        }
    }
    Ok(())
}
