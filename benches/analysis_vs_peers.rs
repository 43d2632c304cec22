//! The cluster table, clusterlab against OpenCV's `connectedComponentsWithStats`, on the same
//! lattices in the same run.
//!
//! ```text
//! cargo bench --bench analysis_vs_peers                            # 2048² and 4096² (minutes)
//! CLUSTERLAB_BENCH_QUICK=1 cargo bench --bench analysis_vs_peers   # small smoke run
//! cargo bench --bench analysis_vs_peers -- --quick                 # the same
//! ```
//! `scripts/bench-analysis.sh` sets up Python's packages and runs this.
//!
//! Lattices: site percolation from [`clusterlab::generate::percolation`] (MT19937) at the
//! threshold of each connectivity (p_c(4) = 0.592746 with 4-connectivity, p_c(8) = 0.407254 with
//! 8-connectivity), 2048² and 4096², open boundary. Each is written as `.npy` into a temporary
//! folder and `benches/peers_stats.py` times `cv2.connectedComponentsWithStats` on it (labels,
//! area, bounding box, centroid) with `cv2.setNumThreads(t)`. clusterlab is timed on the same
//! lattice at the same thread counts (1 = [`Parallelism::Sequential`], all =
//! [`Parallelism::Threads`]):
//!
//! - *shape table* ([`Measures::Shape`]): labels, size, bounding box, centroid, radius of
//!   gyration, spanning — the apples-to-apples comparison with OpenCV;
//! - *full table* ([`Measures::All`]): adds site, bond and hull perimeters and the filled area
//!   (a second labeling, of the complement, and the region tree);
//! - *labels only* ([`Labeler::label_into`]), for reference.
//!
//! Every timing is a median: warm-up calls, then timed calls until at least the repeat count and
//! the minimum time. The shape table is checked against OpenCV's stats (component count, sums of
//! areas, of the bounding boxes' edges and of the centroids); a mismatch is printed and the bench
//! exits non-zero. The table is printed as markdown and written as JSON to
//! `bench-out/analysis.json`.
//!
//! Environment: `CLUSTERLAB_BENCH_QUICK=1` (256² and 512², 1 warm-up, 2 repeats),
//! `CLUSTERLAB_BENCH_THREADS=n` (the "all threads" count; default: available parallelism),
//! `CLUSTERLAB_PYTHON` (default `python3`), `CLUSTERLAB_BENCH_NO_PEERS=1` (clusterlab only).

mod common;

use clusterlab::generate::percolation;
use clusterlab::{Analyzer, Boundary, ClusterTable, Connectivity, Labeler, Measures, Parallelism};
use common::{json_num, json_str, Args, Timing};
use ndarray::Array2;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo bench --bench analysis_vs_peers -- [--quick]
  --quick   256² and 512², 1 warm-up, 2 repeats (as CLUSTERLAB_BENCH_QUICK=1)
environment: CLUSTERLAB_BENCH_QUICK, CLUSTERLAB_BENCH_THREADS, CLUSTERLAB_PYTHON,
CLUSTERLAB_BENCH_NO_PEERS";

const P_C4: f64 = 0.592746;
const P_C8: f64 = 0.407254;

struct Settings {
    quick: bool,
    warmup: usize,
    repeats: usize,
    min_time: f64,
    threads_all: usize,
    sizes: [usize; 2],
    python: String,
    peers: bool,
}

impl Settings {
    /// The settings from the environment; `quick` is the `--quick` flag.
    fn from_env(quick: bool) -> Settings {
        let flag = common::env_flag;
        let quick = quick || flag("CLUSTERLAB_BENCH_QUICK");
        let threads_all = common::threads_all();
        Settings {
            quick,
            warmup: if quick { 1 } else { 2 },
            repeats: if quick { 2 } else { 7 },
            min_time: if quick { 0.0 } else { 1.0 },
            threads_all,
            sizes: if quick { [256, 512] } else { [2048, 4096] },
            python: std::env::var("CLUSTERLAB_PYTHON").unwrap_or_else(|_| "python3".into()),
            peers: !flag("CLUSTERLAB_BENCH_NO_PEERS"),
        }
    }

    fn thread_counts(&self) -> Vec<usize> {
        common::thread_counts(self.threads_all)
    }
}

/// Median of `f`'s wall time in ms after warm-up, and the number of timed calls.
fn median_ms(s: &Settings, f: impl FnMut()) -> (f64, usize) {
    let timing = Timing {
        warmup: s.warmup,
        repeats: s.repeats,
        min_seconds: s.min_time,
        max_repeats: 1000,
    };
    let (times, ()) = timing.run(f);
    (times.upper_median(), times.len())
}

struct Case {
    name: String,
    file: String,
    p: f64,
    seed: u32,
    conn: Connectivity,
    lattice: Array2<u8>,
}

fn cases(s: &Settings) -> Vec<Case> {
    let mut v = Vec::new();
    for (i, &n) in s.sizes.iter().enumerate() {
        let seed = 1 + i as u32;
        for (p, conn, seed, tag) in [
            (P_C4, Connectivity::Four, seed, 4),
            (P_C8, Connectivity::Eight, seed + 10, 8),
        ] {
            v.push(Case {
                name: format!("p_c({tag})={p} {n}²"),
                file: format!("pc{tag}_{n}.npy"),
                p,
                seed,
                conn,
                lattice: percolation(n, n, p, 1, seed),
            });
        }
    }
    v
}

/// Checksums of a table: count, Σ area, Σ (left + top), Σ (right + bottom), Σ centroids.
type Checksums = (u64, u64, i64, i64, f64);

/// OpenCV's results, from `peers_stats.py`'s tab-separated output.
#[derive(Default)]
struct Peers {
    versions: Vec<String>,
    /// (file, conn, threads) → (ms, timed calls)
    times: HashMap<(String, u32, usize), (f64, usize)>,
    /// (file, conn) → checksums
    checks: HashMap<(String, u32), Checksums>,
}

fn run_peers(s: &Settings, dir: &Path, cases: &[Case]) -> Result<Peers, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers_stats.py");
    let out = dir.join("peers.tsv");
    let threads: Vec<String> = s.thread_counts().iter().map(|t| t.to_string()).collect();
    let mut cmd = Command::new(&s.python);
    cmd.arg(&script)
        .arg("--dir")
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .arg("--threads")
        .arg(threads.join(","))
        .arg("--repeats")
        .arg(s.repeats.to_string())
        .arg("--warmup")
        .arg(s.warmup.to_string())
        .arg("--min-time")
        .arg(s.min_time.to_string());
    for c in cases {
        cmd.arg(format!("{}:{}", c.file, c.conn.neighbours()));
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {}: {e}", s.python))?;
    if !status.success() {
        return Err(format!("{} exited with {status}", script.display()));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut peers = Peers::default();
    let bad = |line: &str| format!("unexpected line from peers_stats.py: {line:?}");
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
        match f.first() {
            Some(&"versions") => peers.versions = f[1..].iter().map(|v| v.to_string()).collect(),
            Some(&"time") if f.len() == 6 => {
                let key = (
                    f[1].to_string(),
                    f[2].parse().map_err(|_| bad(line))?,
                    f[3].parse().map_err(|_| bad(line))?,
                );
                let ms = num(4).ok_or_else(|| bad(line))?;
                let reps = num(5).ok_or_else(|| bad(line))? as usize;
                peers.times.insert(key, (ms, reps));
            }
            Some(&"check") if f.len() == 8 => {
                let int = |i: usize| f[i].parse::<i64>().map_err(|_| bad(line));
                peers.checks.insert(
                    (f[1].to_string(), f[2].parse().map_err(|_| bad(line))?),
                    (
                        int(3)? as u64,
                        int(4)? as u64,
                        int(5)?,
                        int(6)?,
                        num(7).ok_or_else(|| bad(line))?,
                    ),
                );
            }
            _ => return Err(bad(line)),
        }
    }
    Ok(peers)
}

/// The same checksums as `peers_stats.py` computes from OpenCV's stats.
fn checksums(t: &ClusterTable) -> Checksums {
    (
        t.count() as u64,
        t.size.sum(),
        t.x_min.sum() + t.y_min.sum(),
        t.x_max.sum() + t.y_max.sum(),
        t.centroid_x.sum() + t.centroid_y.sum(),
    )
}

struct Row {
    case: usize,
    threads: usize,
    clusters: usize,
    labels_ms: f64,
    shape_ms: f64,
    full_ms: f64,
    opencv_ms: Option<f64>,
    reps: [usize; 3],
}

fn ratio(a: Option<f64>, b: f64) -> Option<f64> {
    a.map(|a| a / b)
}

fn fmt_opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "–".into(), |v| format!("{v:.prec$}"))
}

fn cpu_model() -> String {
    common::cpu_model().unwrap_or_else(|| "unknown".into())
}

fn main() -> ExitCode {
    let mut quick = false;
    let mut args = Args::from_env(USAGE);
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--quick" => quick = true,
            other => args.unknown(other),
        }
    }
    let s = Settings::from_env(quick);
    let cases = cases(&s);
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cannot create a temporary folder: {e}");
            return ExitCode::FAILURE;
        }
    };
    for c in &cases {
        if let Err(e) = ndarray_npy::write_npy(dir.path().join(&c.file), &c.lattice) {
            eprintln!("cannot write {}: {e}", c.file);
            return ExitCode::FAILURE;
        }
    }
    let peers = if s.peers {
        eprintln!("timing OpenCV (benches/peers_stats.py) ...");
        match run_peers(&s, dir.path(), &cases) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("peers unavailable: {e}");
                None
            }
        }
    } else {
        None
    };

    let mut rows = Vec::new();
    let mut mismatch = false;
    for (ci, c) in cases.iter().enumerate() {
        for &t in &s.thread_counts() {
            let par = if t == 1 {
                Parallelism::Sequential
            } else {
                Parallelism::Threads(t)
            };
            let mut labeler = Labeler::new(c.conn, Boundary::Open).parallelism(par);
            let mut out = Array2::<u32>::zeros(c.lattice.dim());
            let (labels_ms, r0) = median_ms(&s, || {
                labeler
                    .label_into(c.lattice.view(), out.view_mut())
                    .unwrap();
            });
            let mut shape = Analyzer::new(c.conn, Boundary::Open)
                .measures(Measures::Shape)
                .parallelism(par);
            let table = shape.analyze(c.lattice.view()).unwrap();
            let (shape_ms, r1) = median_ms(&s, || {
                shape.analyze(c.lattice.view()).unwrap();
            });
            let mut full = Analyzer::new(c.conn, Boundary::Open).parallelism(par);
            let (full_ms, r2) = median_ms(&s, || {
                full.analyze(c.lattice.view()).unwrap();
            });
            let key = (c.file.clone(), c.conn.neighbours() as u32);
            let opencv_ms = peers
                .as_ref()
                .and_then(|p| p.times.get(&(key.0.clone(), key.1, t)).map(|v| v.0));
            if let Some(check) = peers.as_ref().and_then(|p| p.checks.get(&key)) {
                let mine = checksums(&table);
                let same = mine.0 == check.0
                    && mine.1 == check.1
                    && mine.2 == check.2
                    && mine.3 == check.3
                    && (mine.4 - check.4).abs() <= 1e-6 * check.4.abs().max(1.0);
                if !same {
                    mismatch = true;
                    println!(
                        "MISMATCH {} {:?}: clusterlab {mine:?}, OpenCV {check:?}",
                        c.name, c.conn
                    );
                }
            }
            eprintln!(
                "  {} {}-conn t={t}: labels {labels_ms:.2} ms, shape table {shape_ms:.2} ms, \
                 full table {full_ms:.2} ms, OpenCV withStats {}",
                c.name,
                c.conn.neighbours(),
                fmt_opt(opencv_ms, 2)
            );
            rows.push(Row {
                case: ci,
                threads: t,
                clusters: table.count(),
                labels_ms,
                shape_ms,
                full_ms,
                opencv_ms,
                reps: [r0, r1, r2],
            });
        }
    }

    // Markdown table.
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\nCluster table vs OpenCV connectedComponentsWithStats ({}, median ms; ratio = OpenCV / \
         clusterlab, > 1: clusterlab faster)\n",
        cpu_model()
    );
    let _ = writeln!(
        md,
        "| lattice | conn | threads | clusters | OpenCV withStats | shape table | ratio | full table | ratio | labels only |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let c = &cases[r.case];
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.2} | {} | {:.2} | {} | {:.2} |",
            c.name,
            c.conn.neighbours(),
            r.threads,
            r.clusters,
            fmt_opt(r.opencv_ms, 2),
            r.shape_ms,
            fmt_opt(ratio(r.opencv_ms, r.shape_ms), 2),
            r.full_ms,
            fmt_opt(ratio(r.opencv_ms, r.full_ms), 2),
            r.labels_ms
        );
    }
    println!("{md}");

    // JSON.
    let mut j = String::new();
    let _ = writeln!(j, "{{\n  \"bench\": \"analysis_vs_peers\",");
    let _ = writeln!(j, "  \"quick\": {},", s.quick);
    let _ = writeln!(j, "  \"cpu\": {},", json_str(&cpu_model()));
    let _ = writeln!(j, "  \"threads_all\": {},", s.threads_all);
    let _ = writeln!(
        j,
        "  \"timing\": {{\"warmup\": {}, \"min_repeats\": {}, \"min_seconds\": {}, \"statistic\": \"median\"}},",
        s.warmup, s.repeats, s.min_time
    );
    let versions = peers
        .as_ref()
        .map(|p| p.versions.clone())
        .unwrap_or_default();
    let v = |i: usize| {
        versions
            .get(i)
            .map_or("null".to_string(), |v| format!("\"{v}\""))
    };
    let _ = writeln!(
        j,
        "  \"peers\": {{\"opencv\": {}, \"numpy\": {}, \"python\": {}}},",
        v(0),
        v(1),
        v(2)
    );
    let _ = writeln!(j, "  \"rows\": [");
    for (i, r) in rows.iter().enumerate() {
        let c = &cases[r.case];
        let (h, w) = c.lattice.dim();
        let _ = writeln!(
            j,
            "    {{\"lattice\": \"{}\", \"file\": \"{}\", \"height\": {h}, \"width\": {w}, \"p\": {}, \
             \"seed\": {}, \"conn\": {}, \"threads\": {}, \"clusters\": {}, \"opencv_stats_ms\": {}, \
             \"shape_table_ms\": {}, \"full_table_ms\": {}, \"labels_ms\": {}, \
             \"opencv_over_shape\": {}, \"opencv_over_full\": {}, \"reps\": [{}, {}, {}]}}{}",
            c.name,
            c.file,
            c.p,
            c.seed,
            c.conn.neighbours(),
            r.threads,
            r.clusters,
            json_num(r.opencv_ms),
            json_num(Some(r.shape_ms)),
            json_num(Some(r.full_ms)),
            json_num(Some(r.labels_ms)),
            json_num(ratio(r.opencv_ms, r.shape_ms)),
            json_num(ratio(r.opencv_ms, r.full_ms)),
            r.reps[0],
            r.reps[1],
            r.reps[2],
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    let _ = writeln!(j, "  ],\n  \"checks_match\": {}\n}}", !mismatch);
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-out");
    let path = out_dir.join("analysis.json");
    let written = std::fs::create_dir_all(&out_dir)
        .map_err(|e| e.to_string())
        .and_then(|_| {
            clusterlab::io::write_atomically(&path, |tmp| {
                std::fs::write(tmp, &j).map_err(|source| clusterlab::Error::Io {
                    path: tmp.to_owned(),
                    source,
                })
            })
            .map_err(|e| e.to_string())
        });
    match written {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if mismatch {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
