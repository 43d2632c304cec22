//! Fixed-p batch throughput: lattice sites and samples per second for site percolation
//! (4-connected, torus, p = p_c; L = 2048 too, beyond a block, through the full-lattice
//! analyzer) and bond percolation (torus, p = 1/2) at L = 64, 256, 1024, on the GPU (one thread
//! block per lattice,
//! generation + labeling + reduction on the device, 24 bytes per sample back) and on the CPU with
//! all cores (the same batch API, rayon over samples), and `cupyx.scipy.ndimage.label` per sample
//! (device-resident, labeling only, via `benches/peers_gpu.py`) when python3 with CuPy is there.
//!
//! Each figure is the median of 3 timed runs after one untimed warm-up run.
//!
//! `cargo bench --features cuda --bench fixed_p [-- --quick]`

use clusterlab::percolation::{BatchSampler, BatchSpec};
use clusterlab::{Backend, Boundary, Connectivity, Options};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const PC: f64 = 0.592_746_050_79;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds per batch of `count` samples (median of 3 after a warm-up): site percolation at
/// p_c, or bond percolation at 1/2.
fn time(sampler: &mut BatchSampler, l: usize, count: u64, bonds: bool) -> f64 {
    let spec = if bonds {
        BatchSpec::bond(Boundary::Periodic, l, l, 0.5, 1, 0, count)
    } else {
        BatchSpec::new(
            Connectivity::Four,
            Boundary::Periodic,
            l,
            l,
            PC,
            1,
            0,
            count,
        )
    }
    .expect("valid batch");
    sampler.sample(&spec).expect("warm-up");
    median(
        (0..3)
            .map(|r| {
                let s = BatchSpec {
                    first: (r + 1) * count,
                    ..spec
                };
                let t = Instant::now();
                let out = sampler.sample(&s).expect("batch");
                assert_eq!(out.samples.len() as u64, count);
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// cupyx label time per sample in ms (4-connected), from benches/peers_gpu.py.
fn cupyx_ms(l: usize) -> Option<f64> {
    let dir = std::env::temp_dir().join("clusterlab-fixed-p-bench");
    std::fs::create_dir_all(&dir).ok()?;
    let spec = BatchSpec::new(Connectivity::Four, Boundary::Periodic, l, l, PC, 1, 0, 1).ok()?;
    let name = format!("fixed_p_{l}.npy");
    let lattice = clusterlab::io::Lattice::U8(spec.lattice(0));
    clusterlab::io::write_lattice(&dir.join(&name), &lattice).ok()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers_gpu.py");
    let out = dir.join(format!("peers_{l}.json"));
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let status = Command::new(python)
        .arg(script)
        .args([
            "--dir",
            dir.to_str()?,
            "--out",
            out.to_str()?,
            "--repeats",
            "50",
        ])
        .arg(format!("{name}:4"))
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out).ok()?).ok()?;
    json["cases"][0]["cupyx_ms"].as_f64()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut gpu = BatchSampler::new(&Options::default().backend(Backend::Cuda { device: 0 })).ok();
    let mut cpu = BatchSampler::new(&Options::default().backend(Backend::Cpu)).expect("cpu");
    let device = clusterlab::cuda::cuda_available().map_or_else(|e| e.to_string(), |d| d.name);
    println!("fixed-p batches, site percolation 4-connected, torus, p = p_c; GPU: {device}; CPU: {cores} threads");
    println!(
        "{:>5} {:>9} {:>12} {:>12} {:>9} {:>12} {:>12} {:>10} {:>11} {:>9}",
        "L",
        "K gpu",
        "gpu Gsite/s",
        "gpu smp/s",
        "K cpu",
        "cpu Gsite/s",
        "cpu smp/s",
        "gpu/cpu",
        "cupyx ms",
        "vs cupyx"
    );
    for (l, k_gpu, k_cpu) in [
        (64usize, 400_000u64, 20_000u64),
        (256, 40_000, 1_000),
        (1024, 2_000, 60),
        // Beyond a block's shared memory (h + w > 3054): the full-lattice analyzer, one
        // lattice at a time.
        (2048, 400, 16),
    ] {
        let (k_gpu, k_cpu) = if quick {
            (k_gpu / 10, (k_cpu / 10).max(2))
        } else {
            (k_gpu, k_cpu)
        };
        let sites = (l * l) as f64;
        let g = gpu.as_mut().map(|s| time(s, l, k_gpu, false));
        let c = time(&mut cpu, l, k_cpu, false);
        let gpu_rate = g.map(|t| k_gpu as f64 / t);
        let cpu_rate = k_cpu as f64 / c;
        let cupyx = if gpu.is_some() { cupyx_ms(l) } else { None };
        println!(
            "{:>5} {:>9} {:>12} {:>12} {:>9} {:>12.3} {:>12.0} {:>10} {:>11} {:>9}",
            l,
            k_gpu,
            gpu_rate.map_or("-".into(), |r| format!("{:.2}", r * sites / 1e9)),
            gpu_rate.map_or("-".into(), |r| format!("{r:.0}")),
            k_cpu,
            cpu_rate * sites / 1e9,
            cpu_rate,
            gpu_rate.map_or("-".into(), |r| format!("{:.1}x", r / cpu_rate)),
            cupyx.map_or("-".into(), |m| format!("{m:.4}")),
            match (cupyx, gpu_rate) {
                (Some(m), Some(r)) => format!("{:.0}x", m * 1e-3 * r),
                _ => "-".into(),
            },
        );
        if let Some(r) = gpu_rate.filter(|_| l <= 1024) {
            // What must cross the memory bus: the 24-byte record per sample (L ≤ 256 stays in
            // shared memory); for L > 256 also the forest and bitmaps in global scratch, about
            // 4.25 bytes per site written and read twice (mostly served by L2).
            let per_sample = if l * l <= 1 << 16 {
                24.0
            } else {
                24.0 + sites * 4.25 * 4.0
            };
            println!(
                "      bytes the kernel must move: {:.0} per sample, {:.2} GB/s; a label image \
                 written and read once (5 bytes per site) would be {:.0} GB/s",
                per_sample,
                r * per_sample / 1e9,
                r * sites * 5.0 / 1e9
            );
        }
    }
    println!("fixed-p batches, bond percolation, torus, p = 1/2");
    println!(
        "{:>5} {:>9} {:>12} {:>12} {:>9} {:>12} {:>12} {:>10}",
        "L", "K gpu", "gpu Gsite/s", "gpu smp/s", "K cpu", "cpu Gsite/s", "cpu smp/s", "gpu/cpu"
    );
    for (l, k_gpu, k_cpu) in [
        (64usize, 200_000u64, 10_000u64),
        (256, 20_000, 500),
        (1024, 1_000, 30),
    ] {
        let (k_gpu, k_cpu) = if quick {
            (k_gpu / 10, k_cpu / 10)
        } else {
            (k_gpu, k_cpu)
        };
        let sites = (l * l) as f64;
        let gpu_rate = gpu.as_mut().map(|s| k_gpu as f64 / time(s, l, k_gpu, true));
        let cpu_rate = k_cpu as f64 / time(&mut cpu, l, k_cpu, true);
        println!(
            "{:>5} {:>9} {:>12} {:>12} {:>9} {:>12.3} {:>12.0} {:>10}",
            l,
            k_gpu,
            gpu_rate.map_or("-".into(), |r| format!("{:.2}", r * sites / 1e9)),
            gpu_rate.map_or("-".into(), |r| format!("{r:.0}")),
            k_cpu,
            cpu_rate * sites / 1e9,
            cpu_rate,
            gpu_rate.map_or("-".into(), |r| format!("{:.1}x", r / cpu_rate)),
        );
    }
}
