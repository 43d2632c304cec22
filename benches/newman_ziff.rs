//! Newman–Ziff throughput: site additions per second per core, site percolation (4-connected) on
//! L × L tori, L = 128…2048, with 1 and 2 threads:
//!
//! - `clusterlab`: [`Sweeper::run_many`] (what a study runs on each thread), which after every
//!   addition records the largest cluster, the percolating sites, `Σ′ s²` and the four wrapping
//!   events into exact per-`n` sums (what a study stores);
//! - `reference`: the published algorithm written plainly here (Newman & Ziff 2001: `ptr[]` with
//!   negative sizes at roots, recursive `findroot` with path compression, a precomputed neighbour
//!   table, union by size), with the displacement vectors for wrapping and the largest cluster
//!   accumulated per `n` in an `f64` array — less bookkeeping per addition than ours.
//!
//! `cargo bench --bench newman_ziff [-- --max-l 1024]`; one variant for a profiler:
//! `-- --only ours|ref|order --l 256 --samples 4` (`order`: the shuffle alone).

use clusterlab::percolation::{sample_order, Geometry, MicroSums, Model, Sweeper};
use clusterlab::{Boundary, Connectivity};
use rand_philox::Philox;
use std::time::Instant;

/// The reference: plain arrays, the published algorithm.
struct Reference {
    l: usize,
    ptr: Vec<i64>,
    dx: Vec<i32>,
    dy: Vec<i32>,
    nn: Vec<[usize; 4]>,
    order: Vec<u32>,
    largest_sum: Vec<f64>,
    wrapped_at: u64,
}

const EMPTY: i64 = i64::MIN;

impl Reference {
    fn new(l: usize) -> Reference {
        let n = l * l;
        let nn = (0..n)
            .map(|i| {
                let (y, x) = (i / l, i % l);
                [
                    y * l + (x + 1) % l,
                    y * l + (x + l - 1) % l,
                    ((y + 1) % l) * l + x,
                    ((y + l - 1) % l) * l + x,
                ]
            })
            .collect();
        Reference {
            l,
            ptr: vec![EMPTY; n],
            dx: vec![0; n],
            dy: vec![0; n],
            nn,
            order: Vec::new(),
            largest_sum: vec![0.0; n + 1],
            wrapped_at: 0,
        }
    }

    /// Root of `i` and displacement to it, compressing the path (recursive, as published).
    fn findroot(&mut self, i: usize) -> (usize, i32, i32) {
        if self.ptr[i] < 0 {
            return (i, 0, 0);
        }
        let p = self.ptr[i] as usize;
        let (r, rx, ry) = self.findroot(p);
        self.dx[i] += rx;
        self.dy[i] += ry;
        self.ptr[i] = r as i64;
        (r, self.dx[i], self.dy[i])
    }

    /// The random order, drawn plainly (Fisher–Yates, one bounded draw then one swap per
    /// step): the same order as the crate's `sample_order`, without its batching.
    fn shuffle(&mut self, seed: u64, index: u64, n: usize) {
        self.order.clear();
        self.order.extend(0..n as u32);
        let mut rng = Philox::from_u64_seed_stream(seed, index);
        for i in (1..n).rev() {
            let j = rng.bounded(i as u32 + 1) as usize;
            self.order.swap(i, j);
        }
    }

    fn run(&mut self, seed: u64, index: u64) {
        let n = self.l * self.l;
        self.shuffle(seed, index, n);
        self.ptr.fill(EMPTY);
        let steps: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
        let mut big = 0i64;
        let mut wrapped = false;
        for k in 0..n {
            let s1 = self.order[k] as usize;
            self.ptr[s1] = -1;
            self.dx[s1] = 0;
            self.dy[s1] = 0;
            let neighbours = self.nn[s1];
            for (&s2, &(sx, sy)) in neighbours.iter().zip(&steps) {
                if self.ptr[s2] == EMPTY {
                    continue;
                }
                let (r1, x1, y1) = self.findroot(s1);
                let (r2, x2, y2) = self.findroot(s2);
                if r1 == r2 {
                    if sx + x2 - x1 != 0 || sy + y2 - y1 != 0 {
                        wrapped = true;
                    }
                    continue;
                }
                let (rx, ry) = (sx + x2 - x1, sy + y2 - y1);
                if self.ptr[r1] < self.ptr[r2] {
                    // r1 is bigger (sizes are negative).
                    self.ptr[r1] += self.ptr[r2];
                    self.ptr[r2] = r1 as i64;
                    self.dx[r2] = -rx;
                    self.dy[r2] = -ry;
                    big = big.max(-self.ptr[r1]);
                } else {
                    self.ptr[r2] += self.ptr[r1];
                    self.ptr[r1] = r2 as i64;
                    self.dx[r1] = rx;
                    self.dy[r1] = ry;
                    big = big.max(-self.ptr[r2]);
                }
            }
            big = big.max(1);
            if wrapped && self.wrapped_at == 0 {
                self.wrapped_at = k as u64 + 1;
            }
            self.largest_sum[k + 1] += big as f64;
        }
    }
}

/// Site additions per second over `threads` threads running `samples` samples each.
fn rate(threads: usize, samples: u64, l: usize, ours: bool) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            scope.spawn(move || {
                let g = Geometry::new(Model::Site(Connectivity::Four), l, l, Boundary::Periodic)
                    .unwrap();
                if ours {
                    let mut sweeper = Sweeper::new(g);
                    let mut sums = MicroSums::new(g, &[]).unwrap();
                    let first = t as u64 * samples;
                    sweeper.run_many(7, first..first + samples, &mut sums);
                    std::hint::black_box(&sums);
                } else {
                    let mut r = Reference::new(l);
                    for i in 0..samples {
                        r.run(7, t as u64 * samples + i);
                    }
                    std::hint::black_box(&r.largest_sum);
                }
            });
        }
    });
    (threads as u64 * samples * (l * l) as u64) as f64 / started.elapsed().as_secs_f64()
}

/// `--NAME VALUE` from the command line.
fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let max_l: usize = arg(&args, "--max-l").unwrap_or(2048);
    // Profiling runs (valgrind --tool=callgrind): one variant, one size, a fixed sample count.
    if let Some(only) = arg::<String>(&args, "--only") {
        let l: usize = arg(&args, "--l").unwrap_or(128);
        let samples: u64 = arg(&args, "--samples").unwrap_or(4);
        let r = match only.as_str() {
            "order" => {
                let mut order = Vec::new();
                let started = Instant::now();
                for i in 0..samples {
                    sample_order(7, i, &mut order, l * l);
                }
                std::hint::black_box(&order);
                (samples * (l * l) as u64) as f64 / started.elapsed().as_secs_f64()
            }
            v => rate(1, samples, l, v == "ours"),
        };
        println!("{only} L = {l}: {:.2} million additions / s", r / 1e6);
        return;
    }
    println!(
        "Newman–Ziff, site percolation 4-conn on L x L tori: million site additions / s / core"
    );
    println!(
        "{:>6} {:>8} | {:>12} {:>12} | {:>12} {:>12} | {:>8} {:>8}",
        "L", "samples", "ours 1T", "ref 1T", "ours 2T", "ref 2T", "x 1T", "scale 2T"
    );
    let mut l = 128;
    while l <= max_l {
        // About 2^25 additions per thread and measurement.
        let samples = ((1u64 << 25) / (l * l) as u64).max(2);
        let o1 = rate(1, samples, l, true) / 1e6;
        let r1 = rate(1, samples, l, false) / 1e6;
        let o2 = rate(2, samples, l, true) / 2e6;
        let r2 = rate(2, samples, l, false) / 2e6;
        println!(
            "{l:>6} {samples:>8} | {o1:>12.2} {r1:>12.2} | {o2:>12.2} {r2:>12.2} | {:>8.2} {:>8.2}",
            o1 / r1,
            o2 / o1
        );
        l *= 2;
    }
}
