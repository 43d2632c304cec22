//! Times seeded regions on the CPU and the GPU against scikit-image's `flood` (one call per
//! seed), OpenCV's `floodFill` (`FLOODFILL_FIXED_RANGE | FLOODFILL_MASK_ONLY`, one call per seed
//! into one mask) and a CuPy label-based region (`|f − r| ≤ t`, `cupyx.scipy.ndimage.label`,
//! keep the seeds' labels), on the same fields.
//!
//! ```text
//! cargo bench --bench regions -- [--size N] [--reps R] [--no-gpu] [--no-peers]
//!     [--python python3] [--script benches/peers_regions.py] [--dir DIR]
//! ```
//!
//! Fields (N × N, default 4096): `image`, a smooth synthetic image (sum of sinusoids plus noise,
//! u8 and f32, tolerance 30) grown from 1 and 4 seeds; `uniform`, one value everywhere (the
//! region is the field: PARAFILL's "Square"), 1 seed; `image` with absorption (peers: their
//! flood, then `scipy.ndimage.binary_fill_holes` with the dual structure). CPU: median wall time
//! of ≥ R runs (default 20) after 2 warm-up runs, per method. GPU: device-resident
//! (`CudaRegionGrower::grow_device`, the field and mask on the device), CUDA events, median of
//! R after 3 warm-ups, with the floor of reading the field and writing the mask once at the
//! card's copy bandwidth (`common::bandwidth`); and the host path (`RegionGrower` on `Backend::Cuda`, copies included), wall time.
//! Every mask's site count is printed; the peers' counts must agree.

mod common;

use clusterlab::regions::{Criterion, Method, RegionGrower};
#[cfg(feature = "cuda")]
use clusterlab::regions::{Field, Sample};
use clusterlab::{Connectivity, Parallelism};
use common::{Args, BenchResult, Timing};
use ndarray::Array2;
#[cfg(feature = "cuda")]
use ndarray::ArrayView2;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const USAGE: &str = "usage: cargo bench --bench regions -- [--size N] [--reps R] [--no-gpu] \
[--no-peers] [--python python3] [--script benches/peers_regions.py] [--dir DIR]
  --size N      field side (default 4096)
  --reps R      timed runs per method (default 20)
  --no-gpu      skip the CUDA runs
  --no-peers    skip scikit-image, OpenCV and CuPy
  --python P    the interpreter for the peers (default python3)
  --script S    the peers script (default benches/peers_regions.py)
  --dir DIR     where the fields are written for the peers";

struct Case {
    name: &'static str,
    f32: bool,
    uniform: bool,
    seeds: Vec<(usize, usize)>,
    tol: f32,
    conn: Connectivity,
    absorb: bool,
}

fn image(n: usize, uniform: bool) -> Array2<u8> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    Array2::from_shape_fn((n, n), |(y, x)| {
        if uniform {
            return 100;
        }
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let noise = (s % 21) as f64 - 10.0;
        let (fx, fy) = (x as f64, y as f64);
        let v = 128.0
            + 60.0 * (fx / 37.0).sin() * (fy / 53.0).cos()
            + 40.0 * ((fx + fy) / 97.0).sin()
            + noise;
        v.clamp(0.0, 255.0) as u8
    })
}

/// Median wall time in ms of `f` over `reps` runs after 2 warm-ups; and the last result.
fn time<R>(reps: usize, f: impl FnMut() -> R) -> (f64, R) {
    let (times, r) = Timing::fixed(2, reps).run(f);
    (times.upper_median(), r)
}

fn count(m: &Array2<u8>) -> usize {
    m.iter().filter(|&&v| v != 0).count()
}

struct Peers {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Peers {
    fn start(python: &str, script: Option<PathBuf>, dir: &Path, reps: usize) -> BenchResult<Peers> {
        let script = script.unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers_regions.py")
        });
        let mut child = Command::new(python)
            .arg(script)
            .arg("--dir")
            .arg(dir)
            .arg("--repeats")
            .arg(reps.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the peers script: {e}"))?;
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        out.read_line(&mut line)?;
        println!("peers: {}", line.trim());
        Ok(Peers { child, out })
    }

    /// Asks for one case; returns the answer lines (`NAME ms count`), up to `done`.
    fn ask(&mut self, req: &str) -> BenchResult<Vec<(String, f64, usize)>> {
        let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
        writeln!(stdin, "{req}")?;
        stdin.flush()?;
        let mut v = Vec::new();
        loop {
            let mut line = String::new();
            if self.out.read_line(&mut line)? == 0 {
                return Err("the peers script ended".into());
            }
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["done"] => return Ok(v),
                [name, ms, n] => v.push((name.to_string(), ms.parse()?, n.parse()?)),
                _ => println!("  peers: {}", line.trim()),
            }
        }
    }
}

fn main() -> ExitCode {
    common::report("regions", run())
}

fn run() -> BenchResult<()> {
    let mut size = 4096usize;
    let mut reps = 20usize;
    let mut gpu = true;
    let mut peers = true;
    let mut python = "python3".to_string();
    let mut script = None;
    let mut dir = std::env::temp_dir().join("clusterlab-regions-bench");
    let mut args = Args::from_env(USAGE);
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--size" => size = args.value("--size"),
            "--reps" => reps = args.value("--reps"),
            "--no-gpu" => gpu = false,
            "--no-peers" => peers = false,
            "--python" => python = args.value("--python"),
            "--script" => script = Some(args.value::<PathBuf>("--script")),
            "--dir" => dir = args.value("--dir"),
            other => args.unknown(other),
        }
    }
    std::fs::create_dir_all(&dir)?;
    let n = size;
    let q = n / 4;
    let four = vec![(q, q), (q, 3 * q), (3 * q, q), (3 * q, 3 * q)];
    let one = vec![(n / 2, n / 2)];
    let case = |name, f32, uniform, seeds: &Vec<_>, absorb| Case {
        name,
        f32,
        uniform,
        seeds: seeds.clone(),
        tol: 30.0,
        conn: Connectivity::Four,
        absorb,
    };
    let cases = vec![
        case("image-u8-1seed", false, false, &one, false),
        case("image-u8-4seeds", false, false, &four, false),
        case("image-f32-1seed", true, false, &one, false),
        case("image-f32-4seeds", true, false, &four, false),
        case("uniform-u8-1seed", false, true, &one, false),
        case("image-u8-4seeds-absorb", false, false, &four, true),
    ];
    let img = image(n, false);
    let uni = image(n, true);
    let write = |name: &str, a: &Array2<u8>, f32: bool| -> BenchResult<PathBuf> {
        let p = dir.join(format!("{name}_{}.npy", if f32 { "f32" } else { "u8" }));
        if f32 {
            ndarray_npy::write_npy(&p, &a.mapv(f32::from))?;
        } else {
            ndarray_npy::write_npy(&p, a)?;
        }
        Ok(p)
    };
    let mut peer = if peers {
        for (name, a) in [("image", &img), ("uniform", &uni)] {
            write(name, a, false)?;
            write(name, a, true)?;
        }
        Some(Peers::start(&python, script, &dir, reps)?)
    } else {
        None
    };
    println!(
        "{size}x{size}, cores: {}, RAYON_NUM_THREADS={:?}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::var("RAYON_NUM_THREADS").ok()
    );
    println!(
        "{:<26} {:<28} {:>10} {:>10}",
        "case", "runner", "ms", "sites"
    );
    for c in &cases {
        let field = if c.uniform { &uni } else { &img };
        let fieldf = field.mapv(f32::from);
        let crit = Criterion::new(c.tol).connectivity(c.conn).absorb(c.absorb);
        let mut results: Vec<(String, f64, usize)> = Vec::new();
        let run_cpu =
            |results: &mut Vec<(String, f64, usize)>, label: &str, g: &mut RegionGrower| {
                let (ms, m) = if c.f32 {
                    time(reps, || g.grow(fieldf.view(), &c.seeds).unwrap())
                } else {
                    time(reps, || g.grow(field.view(), &c.seeds).unwrap())
                };
                results.push((label.to_string(), ms, count(&m)));
            };
        for (label, method, par) in [
            (
                "cpu scanline 1 thread",
                Method::Scanline,
                Parallelism::Sequential,
            ),
            (
                "cpu labeling all threads",
                Method::Labeling,
                Parallelism::Rayon,
            ),
        ] {
            let mut g = RegionGrower::new(crit.clone())
                .method(method)
                .parallelism(par);
            run_cpu(&mut results, label, &mut g);
        }
        if gpu {
            #[cfg(feature = "cuda")]
            {
                if c.f32 {
                    gpu_times(&mut results, fieldf.view(), &crit, &c.seeds, reps)?;
                } else {
                    gpu_times(&mut results, field.view(), &crit, &c.seeds, reps)?;
                }
            }
        }
        if let Some(p) = peer.as_mut() {
            let base = if c.uniform { "uniform" } else { "image" };
            let file = format!("{base}_{}.npy", if c.f32 { "f32" } else { "u8" });
            let seeds: Vec<String> = c.seeds.iter().map(|(y, x)| format!("{y},{x}")).collect();
            let conn = if c.conn == Connectivity::Four { 4 } else { 8 };
            let req = format!(
                "{file} {} {conn} {} {}",
                c.tol,
                c.absorb as u8,
                seeds.join(";")
            );
            results.extend(p.ask(&req)?);
        }
        let ours = results[0].2;
        for (label, ms, sites) in &results {
            let flag = if *sites == ours {
                ""
            } else {
                "  <- count differs"
            };
            println!(
                "{:<26} {:<28} {:>10.3} {:>10}{flag}",
                c.name, label, ms, sites
            );
        }
        // Ratios: each peer over our best CPU and GPU.
        let best = |p: &str| {
            results
                .iter()
                .filter(|r| r.0.starts_with(p))
                .map(|r| r.1)
                .fold(f64::INFINITY, f64::min)
        };
        let (cpu, gpu_ms) = (best("cpu"), best("gpu device"));
        for (label, ms, _) in results.iter().filter(|r| r.0.starts_with("peer")) {
            println!(
                "{:<26}   {label} / best cpu = {:.2}, / gpu device = {:.2}",
                "",
                ms / cpu,
                ms / gpu_ms
            );
        }
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn gpu_times<'a, T: Sample + clusterlab::cuda::cudarc::driver::DeviceRepr>(
    results: &mut Vec<(String, f64, usize)>,
    field: ArrayView2<'a, T>,
    crit: &Criterion,
    seeds: &[(usize, usize)],
    reps: usize,
) -> BenchResult<()>
where
    ArrayView2<'a, T>: Field<'a>,
{
    use clusterlab::cuda::{cuda_available, CudaRegionGrower};
    use clusterlab::Backend;
    use common::gpu::EventTimer;
    use common::{bandwidth, floor_ms, median, tb_per_s};
    let (h, w) = field.dim();
    let mut g = CudaRegionGrower::new(0, crit.clone())?;
    let stream = g.stream().clone();
    let dev = stream.clone_htod(field.as_slice().ok_or("the field is not contiguous")?)?;
    let mut out = stream.alloc_zeros::<u8>(h * w)?;
    for _ in 0..3 {
        g.grow_device(&dev, h, w, 1, seeds, &mut out)?;
    }
    let timer = EventTimer::new(&stream)?;
    let mut t = Vec::new();
    for _ in 0..reps.max(20) {
        t.push(timer.time(|| g.grow_device(&dev, h, w, 1, seeds, &mut out))?);
    }
    let mask = stream.clone_dtoh(&out)?;
    let sites = mask.iter().filter(|&&v| v != 0).count();
    let ms = median(t);
    let (bw, note) = bandwidth(&cuda_available()?.name);
    if let Some(note) = note {
        println!("  {note}");
    }
    let floor = floor_ms((h * w * (std::mem::size_of::<T>() + 1)) as f64, bw);
    results.push(("gpu device-resident".into(), ms, sites));
    println!(
        "  gpu floor (read field + write mask once at {} TB/s): {floor:.4} ms; median {ms:.3} ms = {:.1}x the floor",
        tb_per_s(bw),
        ms / floor
    );
    // The host path: the field up and the mask back on every call.
    let mut host = RegionGrower::new(crit.clone()).backend(Backend::Cuda { device: 0 })?;
    let (ms, m) = time(reps, || host.grow(field, seeds).unwrap());
    results.push(("gpu host path (copies incl.)".into(), ms, count(&m)));
    Ok(())
}
