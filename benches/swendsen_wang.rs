//! ns per spin update (sweep time / L²) at T_c of the Ising model for Swendsen–Wang, Wolff and
//! checkerboard Metropolis on the CPU, one thread and all threads: medians of timed batches after
//! a warm-up. `cargo bench --bench swendsen_wang [-- L...]` (default L = 256 1024). The GPU's
//! device-resident Swendsen–Wang: `benches/swendsen_wang_gpu.rs`.

use clusterlab::mc::{Chain, Model, NullSink, Update, ISING_TC};
use clusterlab::{Backend, Options, Parallelism};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![256, 1024]
    } else {
        sizes
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{:>6} {:>11} {:>8} {:>14}",
        "L", "update", "threads", "ns/spin update"
    );
    for &l in &sizes {
        let model = Model::ising(l, l, ISING_TC).unwrap();
        for update in [Update::SwendsenWang, Update::Wolff, Update::Metropolis] {
            let threads: &[usize] = if update == Update::Wolff {
                &[1]
            } else {
                &[1, cores]
            };
            for &t in threads {
                let opts = Options::default()
                    .backend(Backend::Cpu)
                    .parallelism(Parallelism::Threads(t));
                let mut chain = Chain::new(model, update, 1, 0, opts).unwrap();
                chain.run(20, 1, &mut NullSink).unwrap();
                let batch = (4_000_000 / (l * l)).max(2) as u64;
                let times: Vec<f64> = (0..7)
                    .map(|_| {
                        let t0 = Instant::now();
                        chain.run(batch, u64::MAX, &mut NullSink).unwrap();
                        t0.elapsed().as_secs_f64() * 1e9 / (batch as f64 * (l * l) as f64)
                    })
                    .collect();
                println!(
                    "{l:>6} {:>11} {t:>8} {:>14.2}",
                    update.name(),
                    median(times)
                );
            }
        }
    }
}
