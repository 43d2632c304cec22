//! ns per spin update (sweep time / L²) of the device-resident Swendsen–Wang at T_c of the
//! Ising model on GPU 0: batches of unmeasured sweeps timed with CUDA events (no host
//! synchronisation inside a batch), medians of 7 batches after a warm-up from a random start;
//! measured sweeps as `mc run --every 1` runs them ([`Chain::run`] with every = 1: wall clock,
//! the tallies read back every 256 sweeps and the spins once per batch), medians of 3 batches;
//! then each kernel's median time over 20 sweeps, unmeasured and measured side by side, and the
//! bytes a sweep must move against the card's memory bandwidth (H100 3.0 TB/s, H200 4.2 TB/s as
//! quoted in the issue). `cargo bench --bench swendsen_wang_gpu [-- L...]` (default L = 1024
//! 4096 8192 16384).

use clusterlab::cuda::{cuda_available, cudarc::driver::sys, CudaSwendsenWang};
use clusterlab::mc::{run_chains, Chain, Model, NullSink, Update, ISING_TC};
use clusterlab::{Backend, Boundary, Options};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let info = match cuda_available() {
        Ok(i) => i,
        Err(e) => {
            println!("no GPU: {e}");
            return;
        }
    };
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1024, 4096, 8192, 16384]
    } else {
        sizes
    };
    let peak = if info.name.contains("H200") {
        4.2e12
    } else if info.name.contains("H100") {
        3.0e12
    } else {
        f64::NAN
    };
    println!("device: {} ({} SMs)", info.name, info.multiprocessors);
    println!(
        "{:>6} {:>8} {:>14} {:>12} {:>10} {:>9} {:>8} {:>17}",
        "L",
        "sweeps",
        "ns/spin update",
        "updates/ns",
        "GB/s",
        "of floor",
        "sweeps",
        "measured ns/spin"
    );
    let mut kernels = Vec::new();
    for &l in &sizes {
        let p = Model::ising(l, l, ISING_TC).unwrap().bond_probability();
        let mut sw = CudaSwendsenWang::new(0, l, l, 2, Boundary::Periodic, p, 1, 0).unwrap();
        // A random start (splitmix64 bits), then a warm-up.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let spins: Vec<u8> = (0..l * l)
            .map(|_| {
                x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                ((z ^ (z >> 31)) & 1) as u8
            })
            .collect();
        sw.upload_spins(&spins).unwrap();
        let mut sweep = 0u64;
        sw.queue_sweeps(sweep, 50).unwrap();
        sweep += 50;
        let batch = ((1u64 << 31) / (l * l) as u64).clamp(5, 500);
        let stream = sw.stream().clone();
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let times: Vec<f64> = (0..7)
            .map(|_| {
                let e0 = stream.record_event(flags).unwrap();
                sw.queue_sweeps(sweep, batch).unwrap();
                sweep += batch;
                let e1 = stream.record_event(flags).unwrap();
                let ms = f64::from(e0.elapsed_ms(&e1).unwrap());
                ms * 1e6 / (batch as f64 * (l * l) as f64)
            })
            .collect();
        let ns = median(times);
        let gbs = sw.bytes_per_sweep(false) / (ns * (l * l) as f64);
        // Measured sweeps as `mc run --every 1` runs them.
        let model = Model::ising(l, l, ISING_TC).unwrap();
        let gpu = Options::default().backend(Backend::Cuda { device: 0 });
        let mut chain = Chain::new(model, Update::SwendsenWang, 1, 0, gpu).unwrap();
        chain.run(50, 1 << 40, &mut NullSink).unwrap();
        let mbatch = ((1u64 << 33) / (l * l) as u64).clamp(32, 1024);
        let measured = median(
            (0..3)
                .map(|_| {
                    let t0 = Instant::now();
                    chain.run(mbatch, 1, &mut NullSink).unwrap();
                    t0.elapsed().as_secs_f64() * 1e9 / (mbatch as f64 * (l * l) as f64)
                })
                .collect(),
        );
        drop(chain);
        println!(
            "{l:>6} {batch:>8} {ns:>14.4} {:>12.1} {:>10.0} {:>8.0}% {mbatch:>8} {measured:>17.4}",
            1.0 / ns,
            gbs,
            100.0 * gbs * 1e9 / peak
        );
        let mut both = Vec::new();
        for measure in [false, true] {
            both.push(sw.kernel_times(sweep, 20, measure).unwrap());
            sweep += 20;
        }
        kernels.push((l, both, sw.bytes_per_sweep(false)));
    }
    println!("\nper kernel (median ms over 20 sweeps; sum = one sweep), unmeasured | measured:");
    for (l, both, bytes) in kernels {
        let rows = both.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..rows {
            let cell = |t: &Vec<(&str, f64)>| match t.get(i) {
                Some((n, ms)) => format!("{n:>16} {ms:>7.3}"),
                None => format!("{:>16} {:>7}", "", ""),
            };
            println!("L={l:>5} {} | {}", cell(&both[0]), cell(&both[1]));
        }
        let totals: Vec<String> = both
            .iter()
            .map(|t| {
                let total: f64 = t.iter().map(|(_, ms)| ms).sum();
                format!(
                    "{:>16} {total:>7.3} = {:.4} ns/spin, {:.1}% of floor",
                    "total",
                    total * 1e6 / (l * l) as f64,
                    100.0 * bytes / (total * 1e-3) / peak
                )
            })
            .collect();
        println!("L={l:>5} {} | {}", totals[0], totals[1]);
    }
    // A temperature list on one GPU: chains on their own streams, queued from rayon's threads
    // (run_chains, as `mc run --temperature a,b,...` does), measured every sweep.
    let l = sizes[0];
    println!("\ntemperature list at L={l} (T from 0.95 to 1.05 T_c), measured every sweep:");
    for n in [1usize, 4, 8] {
        let mut jobs: Vec<(Chain, NullSink)> = (0..n)
            .map(|i| {
                let t = ISING_TC * (0.95 + 0.1 * i as f64 / n as f64);
                let model = Model::ising(l, l, t).unwrap();
                let gpu = Options::default().backend(Backend::Cuda { device: 0 });
                let chain = Chain::new(model, Update::SwendsenWang, 1, i as u64, gpu).unwrap();
                (chain, NullSink)
            })
            .collect();
        run_chains(&mut jobs, 20, 1).unwrap();
        let sweeps = ((1u64 << 31) / (l * l) as u64).clamp(32, 512);
        let t0 = Instant::now();
        run_chains(&mut jobs, sweeps, 1).unwrap();
        let ns = t0.elapsed().as_secs_f64() * 1e9 / (sweeps as f64 * (n * l * l) as f64);
        println!("{n:>2} chains: {ns:.4} ns per spin update (all chains' updates / wall clock)");
    }
}
