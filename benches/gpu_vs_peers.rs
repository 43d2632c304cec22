//! The GPU benchmark (issue 4): every CUDA algorithm of clusterlab against
//! `cupyx.scipy.ndimage.label` and OpenCV on all cores, on the same lattices, in one run.
//!
//! ```text
//! cargo bench --bench gpu_vs_peers            # on a machine with a GPU, CuPy and OpenCV
//! ```
//!
//! Lattices (MT19937, `clusterlab::generate`): site percolation at p = 0.592746 (the 4-connected
//! threshold; the same lattice is labeled with both connectivities) at 2048², 8192² and 16384²;
//! densities 0.3 and 0.8 at 8192²; HA4's density × granularity grid at 2048² (d = 0, 0.1, …, 1,
//! g = 1, 2, 4, 8, 16: g×g blocks of equal sites, as in Hennequin et al.), 4-connectivity; the
//! 4096² spiral. Each lattice is written as `.npy` to `CLUSTERLAB_BENCH_DIR` (default
//! `/tmp/clusterlab-gpu-bench`) for the peers.
//!
//! Ours: device-resident (the lattice and the labels stay on the GPU), each labeling timed with
//! CUDA events around `CudaLabeler::label_device`, 3 warm-up calls, median of
//! `CLUSTERLAB_BENCH_REPS` (default 20) — raw and canonical numbering. For the 16384² lattice also
//! host-to-host (`label_host_into`: upload, label, download through pinned buffers), wall clock.
//! Peers: `benches/peers_gpu.py` (cupyx device-resident with CUDA events, the same warm-up and
//! repetitions; OpenCV's `connectedComponents` with `cv2.setNumThreads(cpu count)`).
//!
//! Prints one table and writes `bench-out/gpu.json`. Cluster counts are compared with cupyx's and
//! OpenCV's; a mismatch fails the run. Set `CLUSTERLAB_BENCH_QUICK=1` to skip the 2048² grid.

mod common;

use clusterlab::cuda::{cuda_available, CudaLabeler, Numbering};
use clusterlab::generate::{percolation, spiral};
use clusterlab::{Algorithm, Boundary, Connectivity};
use common::gpu::EventTimer;
use common::{bandwidth, env_usize, floor_ms, Args, Samples};
use ndarray::Array2;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "usage: cargo bench --bench gpu_vs_peers
environment: CLUSTERLAB_BENCH_REPS (20), CLUSTERLAB_BENCH_QUICK=1 (no 2048² grid),
CLUSTERLAB_BENCH_DIR (/tmp/clusterlab-gpu-bench), PYTHON (python3)";
const P_C: f64 = 0.592746;
const ALGORITHMS: [Algorithm; 5] = [
    Algorithm::BitRuns,
    Algorithm::BlockUnionFind,
    Algorithm::Ha4,
    Algorithm::TileMerge,
    Algorithm::LabelEquivalence,
];

struct Case {
    group: &'static str,
    file: String,
    lattice: Array2<u8>,
    conns: Vec<Connectivity>,
    numberings: Vec<Numbering>,
    host: bool,
}

fn cases(quick: bool) -> Vec<Case> {
    let both = vec![Connectivity::Four, Connectivity::Eight];
    let all_numberings = vec![Numbering::Raw, Numbering::Canonical];
    let mut v = Vec::new();
    for (n, seed) in [(2048usize, 11u32), (8192, 12), (16384, 13)] {
        v.push(Case {
            group: "p_c",
            file: format!("pc_{n}.npy"),
            lattice: percolation(n, n, P_C, 1, seed),
            conns: both.clone(),
            numberings: all_numberings.clone(),
            host: n == 16384,
        });
    }
    for (d, seed) in [(0.3, 21u32), (0.8, 22)] {
        v.push(Case {
            group: "density",
            file: format!("d{d}_8192.npy"),
            lattice: percolation(8192, 8192, d, 1, seed),
            conns: both.clone(),
            numberings: all_numberings.clone(),
            host: false,
        });
    }
    v.push(Case {
        group: "spiral",
        file: "spiral_4096.npy".into(),
        lattice: spiral(4096, 4096),
        conns: both.clone(),
        numberings: all_numberings.clone(),
        host: false,
    });
    if !quick {
        for g in [1usize, 2, 4, 8, 16] {
            for i in 0..=10 {
                let d = i as f64 / 10.0;
                v.push(Case {
                    group: "grid",
                    file: format!("grid_d{i:02}_g{g:02}.npy"),
                    lattice: percolation(2048, 2048, d, g, 100 + (g * 11 + i) as u32),
                    conns: vec![Connectivity::Four],
                    numberings: vec![Numbering::Canonical],
                    host: false,
                });
            }
        }
    }
    v
}

/// One timing of ours.
struct Ours {
    algorithm: Algorithm,
    numbering: Numbering,
    median_ms: f64,
    min_ms: f64,
    count: usize,
}

fn time_ours(case: &Case, c: Connectivity, reps: usize) -> Result<Vec<Ours>, String> {
    let (h, w) = case.lattice.dim();
    let err = |e: clusterlab::Error| e.to_string();
    let first = CudaLabeler::new(0, c, Boundary::Open).map_err(err)?;
    let stream = first.stream().clone();
    let timer = EventTimer::new(&stream).map_err(|e| e.to_string())?;
    let input = stream
        .clone_htod(case.lattice.as_slice().expect("standard layout"))
        .map_err(|e| e.to_string())?;
    let mut output = stream
        .alloc_zeros::<u32>(h * w)
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for alg in ALGORITHMS {
        for &num in &case.numberings {
            let mut gpu = CudaLabeler::with_stream(stream.clone(), c, Boundary::Open)
                .map_err(err)?
                .algorithm(alg)
                .numbering(num);
            // Algorithms without this connectivity are skipped (reported as n/a).
            if gpu.prepare::<u8>(h, w).is_err() {
                continue;
            }
            for _ in 0..3 {
                gpu.label_device(&input, h, w, &mut output).map_err(err)?;
            }
            let count = gpu.count().map_err(err)?;
            let mut times = Vec::with_capacity(reps);
            for _ in 0..reps {
                let t = timer
                    .time(|| gpu.label_device(&input, h, w, &mut output))
                    .map_err(|e| e.to_string())?;
                times.push(t);
            }
            let times = Samples::new(times);
            rows.push(Ours {
                algorithm: alg,
                numbering: num,
                median_ms: times.upper_median(),
                min_ms: times.min(),
                count,
            });
        }
    }
    Ok(rows)
}

/// Host-to-host: upload, label (canonical, `Algorithm::Auto`), download; wall clock, median of 5.
fn time_host(case: &Case, c: Connectivity) -> Result<f64, String> {
    let err = |e: clusterlab::Error| e.to_string();
    let mut gpu = CudaLabeler::new(0, c, Boundary::Open).map_err(err)?;
    let mut out = Array2::<u32>::zeros(case.lattice.dim());
    gpu.label_host_into(case.lattice.view(), out.view_mut())
        .map_err(err)?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        gpu.label_host_into(case.lattice.view(), out.view_mut())
            .map_err(err)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[2])
}

fn run_peers(dir: &Path, cases: &[Case], reps: usize) -> Result<Value, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers_gpu.py");
    let out = dir.join("peers.json");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let host: Vec<&str> = cases
        .iter()
        .filter(|c| c.host)
        .map(|c| c.file.as_str())
        .collect();
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .arg("--dir")
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .arg("--repeats")
        .arg(reps.to_string())
        .arg("--host")
        .arg(host.join(","));
    for c in cases {
        let conns: Vec<String> = c
            .conns
            .iter()
            .map(|c| if *c == Connectivity::Four { "4" } else { "8" }.to_string())
            .collect();
        cmd.arg(format!("{}:{}", c.file, conns.join(",")));
    }
    let status = cmd
        .status()
        .map_err(|e| format!("starting the peers: {e}"))?;
    if !status.success() {
        return Err(format!("the peers failed: {status}"));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn conn_num(c: Connectivity) -> u64 {
    if c == Connectivity::Four {
        4
    } else {
        8
    }
}

fn run() -> Result<bool, String> {
    let info = cuda_available().map_err(|e| e.to_string())?;
    let (bw, note) = bandwidth(&info.name);
    let reps = env_usize("CLUSTERLAB_BENCH_REPS", 20);
    let quick = std::env::var("CLUSTERLAB_BENCH_QUICK").is_ok_and(|v| v == "1");
    let dir = PathBuf::from(
        std::env::var("CLUSTERLAB_BENCH_DIR")
            .unwrap_or_else(|_| "/tmp/clusterlab-gpu-bench".into()),
    );
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    println!(
        "device: {} (sm_{}{}, {} SMs); {reps} timed runs after 3 warm-ups, medians",
        info.name, info.compute_capability.0, info.compute_capability.1, info.multiprocessors
    );
    let t = Instant::now();
    let cases = cases(quick);
    for c in &cases {
        ndarray_npy::write_npy(dir.join(&c.file), &c.lattice).map_err(|e| e.to_string())?;
    }
    println!(
        "{} lattices generated and written in {:.1} s",
        cases.len(),
        t.elapsed().as_secs_f64()
    );
    if let Some(note) = note {
        println!("{note}");
    }

    let mut ours = Vec::new();
    for case in &cases {
        for &c in &case.conns {
            let rows = time_ours(case, c, reps)?;
            let host = if case.host {
                Some(time_host(case, c)?)
            } else {
                None
            };
            ours.push((case, c, rows, host));
        }
    }
    let peers = run_peers(&dir, &cases, reps)?;
    let peer_rows = peers["cases"].as_array().cloned().unwrap_or_default();

    let mut ok = true;
    let mut out_rows = Vec::new();
    println!(
        "\n{:<22} {:>4} {:<17} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8}",
        "lattice",
        "conn",
        "algorithm",
        "raw ms",
        "canon ms",
        "cupyx ms",
        "OpenCV ms",
        "vs cupyx",
        "floor"
    );
    for (case, c, rows, host) in &ours {
        let (h, w) = case.lattice.dim();
        let floor_ms = floor_ms((h * w) as f64 * 5.0, bw);
        let peer = peer_rows
            .iter()
            .find(|r| r["file"] == case.file.as_str() && r["conn"] == conn_num(*c))
            .cloned()
            .unwrap_or(Value::Null);
        let cupyx = peer["cupyx_ms"].as_f64().unwrap_or(f64::NAN);
        let opencv = peer["opencv_ms"].as_f64().unwrap_or(f64::NAN);
        for r in rows {
            for key in ["cupyx_count", "opencv_count"] {
                if let Some(n) = peer[key].as_u64() {
                    if n as usize != r.count {
                        println!(
                            "COUNT MISMATCH {} {c}: {:?} {:?} finds {}, {key} {n}",
                            case.file, r.algorithm, r.numbering, r.count
                        );
                        ok = false;
                    }
                }
            }
        }
        for alg in ALGORITHMS {
            let get = |num: Numbering| {
                rows.iter()
                    .find(|r| r.algorithm == alg && r.numbering == num)
                    .map(|r| r.median_ms)
            };
            let (raw, canon) = (get(Numbering::Raw), get(Numbering::Canonical));
            if raw.is_none() && canon.is_none() {
                continue;
            }
            let fmt = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.3}"));
            let best = raw.into_iter().chain(canon).fold(f64::INFINITY, f64::min);
            println!(
                "{:<22} {:>4} {:<17} {:>9} {:>9} {:>9.3} {:>9.3} {:>9.2}x {:>7.0}%",
                case.file.trim_end_matches(".npy"),
                conn_num(*c),
                format!("{alg:?}"),
                fmt(raw),
                fmt(canon),
                cupyx,
                opencv,
                canon.map_or(f64::NAN, |v| cupyx / v),
                100.0 * floor_ms / best
            );
        }
        if let Some(hms) = host {
            println!(
                "{:<22} {:>4} host-to-host: clusterlab (Auto, canonical) {hms:.2} ms, cupyx {:.2} ms",
                case.file.trim_end_matches(".npy"),
                conn_num(*c),
                peer["cupyx_host_ms"].as_f64().unwrap_or(f64::NAN)
            );
        }
        out_rows.push(json!({
            "group": case.group,
            "file": case.file,
            "height": h,
            "width": w,
            "conn": conn_num(*c),
            "floor_ms": floor_ms,
            "ours": rows.iter().map(|r| json!({
                "algorithm": format!("{:?}", r.algorithm),
                "numbering": format!("{:?}", r.numbering),
                "median_ms": r.median_ms,
                "min_ms": r.min_ms,
                "count": r.count,
            })).collect::<Vec<_>>(),
            "host_to_host_ms": host,
            "peers": peer,
        }));
    }
    let report = json!({
        "device": info.name,
        "reps": reps,
        "bandwidth_bytes_per_s": bw,
        "peer_versions": peers["versions"],
        "cases": out_rows,
    });
    std::fs::create_dir_all("bench-out").map_err(|e| e.to_string())?;
    let tmp = "bench-out/gpu.json.tmp";
    std::fs::write(tmp, serde_json::to_string_pretty(&report).unwrap())
        .map_err(|e| e.to_string())?;
    std::fs::rename(tmp, "bench-out/gpu.json").map_err(|e| e.to_string())?;
    println!("\nwrote bench-out/gpu.json");
    Ok(ok)
}

fn main() -> ExitCode {
    let mut args = Args::from_env(USAGE);
    if let Some(a) = args.next_flag() {
        args.unknown(&a);
    }
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("gpu_vs_peers: cluster counts disagree (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("gpu_vs_peers: {e}");
            ExitCode::FAILURE
        }
    }
}
