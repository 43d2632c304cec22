//! CPU labeling, clusterlab against OpenCV's `connectedComponents` and `scipy.ndimage.label`, on
//! the same lattices in the same run.
//!
//! ```text
//! cargo bench --bench cpu_vs_peers                            # full sizes (a few minutes)
//! CLUSTERLAB_BENCH_QUICK=1 cargo bench --bench cpu_vs_peers   # small smoke run
//! cargo bench --bench cpu_vs_peers -- --quick                 # the same
//! ```
//! `scripts/bench-cpu.sh` sets up Python's packages and runs this.
//!
//! The bench generates every lattice, writes it as `.npy` into a temporary folder, runs
//! `benches/peers_cpu.py` once to time OpenCV (at each thread count) and scipy (single-threaded)
//! on them, then times clusterlab's [`Labeler::label_into`] into a preallocated output: 1 thread
//! is [`Parallelism::Sequential`], "all" is [`Parallelism::Threads`] with
//! `std::thread::available_parallelism()` threads (OpenCV gets `cv2.setNumThreads` of the same).
//! The one-shot columns time both as users call them, each call allocating its label image:
//! [`clusterlab::label`] on a rayon pool of that many threads, and OpenCV's
//! `connectedComponents` without a `labels=` output.
//! Every timing is a median: warm-up calls, then timed calls until at least the repeat count and at
//! least the minimum time. Cluster counts must agree between the three libraries (a `MISMATCH`
//! line is printed, and the bench exits non-zero, where they do not). The table is printed as
//! markdown and written as JSON to `bench-out/cpu.json`.
//!
//! Environment:
//! - `CLUSTERLAB_BENCH_QUICK=1`: small lattices, 1 warm-up, 2 repeats (so checks can run it).
//! - `CLUSTERLAB_BENCH_THREADS=n`: the "all threads" count (default: available parallelism).
//! - `CLUSTERLAB_PYTHON`: the Python interpreter (default `python3`).
//! - `CLUSTERLAB_BENCH_PIN=cpu` (or `off`): the CPU that every one-thread timing runs on —
//!   clusterlab's thread, its one-shot pool's and the peers' (default: the last CPU the bench may
//!   use), so that one-thread rows compare libraries on the same core.
//!
//! The lattices come from [`clusterlab::generate`]: site percolation from MT19937 with fixed seeds
//! (granular images are `g × g` blocks occupied with probability 0.5), and a square spiral.

mod common;

use clusterlab::generate::{percolation, spiral};
use clusterlab::{label, Boundary, Connectivity, Labeler, Parallelism};
use common::{affinity, json_num, json_opt, json_str, load_average, Args, Timing};
use ndarray::Array2;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::Instant;

const USAGE: &str = "usage: cargo bench --bench cpu_vs_peers -- [--quick]
  --quick   small lattices, 1 warm-up, 2 repeats (as CLUSTERLAB_BENCH_QUICK=1)
environment: CLUSTERLAB_BENCH_QUICK, CLUSTERLAB_BENCH_THREADS, CLUSTERLAB_PYTHON,
  CLUSTERLAB_BENCH_PIN";

/// Site percolation threshold of the square lattice, 4-connectivity (nearest neighbours).
const P_C4: f64 = 0.592746;
/// Site percolation threshold of the square lattice with 8-connectivity (matching lattice).
const P_C8: f64 = 0.407254;

// ---------------------------------------------------------------------------------------------
// Lattices
// ---------------------------------------------------------------------------------------------

/// One benchmark lattice.
struct Case {
    /// Name in the table.
    name: String,
    /// `.npy` file name.
    file: String,
    /// How it was made, for the JSON.
    kind: &'static str,
    p: Option<f64>,
    grain: Option<usize>,
    seed: Option<u32>,
    conns: Vec<Connectivity>,
    lattice: Array2<u8>,
}

fn cases(small: usize, big: usize) -> Vec<Case> {
    use Connectivity::{Eight, Four};
    let both = || vec![Four, Eight];
    let mut v = Vec::new();
    let perc = |name: String, file: String, n, p, grain, seed, conns| Case {
        name,
        file,
        kind: if grain == 1 {
            "percolation"
        } else {
            "granular"
        },
        p: Some(p),
        grain: Some(grain),
        seed: Some(seed),
        conns,
        lattice: percolation(n, n, p, grain, seed),
    };
    for (i, n) in [small, big].into_iter().enumerate() {
        let seed = 1 + i as u32;
        v.push(perc(
            format!("p_c(4)={P_C4} {n}²"),
            format!("pc4_{n}.npy"),
            n,
            P_C4,
            1,
            seed,
            both(),
        ));
        v.push(perc(
            format!("p_c(8)={P_C8} {n}²"),
            format!("pc8_{n}.npy"),
            n,
            P_C8,
            1,
            seed + 10,
            vec![Eight],
        ));
    }
    for (p, seed) in [(0.3, 21), (0.8, 22)] {
        v.push(perc(
            format!("p={p} {big}²"),
            format!("p{}_{big}.npy", (p * 10.0) as u32),
            big,
            p,
            1,
            seed,
            both(),
        ));
    }
    for (g, seed) in [(4, 31), (16, 32)] {
        v.push(perc(
            format!("granular g={g} p=0.5 {big}²"),
            format!("granular{g}_{big}.npy"),
            big,
            0.5,
            g,
            seed,
            both(),
        ));
    }
    v.push(Case {
        name: format!("spiral {big}²"),
        file: format!("spiral_{big}.npy"),
        kind: "spiral",
        p: None,
        grain: None,
        seed: None,
        conns: both(),
        lattice: spiral(big, big),
    });
    v
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

struct Settings {
    quick: bool,
    warmup: usize,
    repeats: usize,
    min_time: f64,
    max_repeats: usize,
    threads_all: usize,
    small: usize,
    big: usize,
    python: String,
    /// The CPU of the one-thread timings ([`affinity::pin_cpu`]), `None` unpinned.
    pin: Option<usize>,
}

impl Settings {
    /// The settings from the environment; `quick` is the `--quick` flag.
    fn from_env(quick: bool) -> Settings {
        let quick = quick || common::env_flag("CLUSTERLAB_BENCH_QUICK");
        let threads_all = common::threads_all();
        let python = std::env::var("CLUSTERLAB_PYTHON").unwrap_or_else(|_| "python3".into());
        let pin = affinity::pin_cpu();
        if quick {
            Settings {
                quick,
                warmup: 1,
                repeats: 2,
                min_time: 0.0,
                max_repeats: 2,
                threads_all,
                small: 256,
                big: 512,
                python,
                pin,
            }
        } else {
            Settings {
                quick,
                warmup: 2,
                repeats: 7,
                min_time: 1.0,
                max_repeats: 1000,
                threads_all,
                small: 2048,
                big: 4096,
                python,
                pin,
            }
        }
    }

    /// The thread counts to compare at: 1 and all (once if all is 1).
    fn thread_counts(&self) -> Vec<usize> {
        common::thread_counts(self.threads_all)
    }
}

/// Median wall time of `f` in ms after warm-up, the number of timed calls, and `f`'s result.
fn median_ms(s: &Settings, f: impl FnMut() -> usize) -> (f64, usize, usize) {
    let timing = Timing {
        warmup: s.warmup,
        repeats: s.repeats,
        min_seconds: s.min_time,
        max_repeats: s.max_repeats,
    };
    let (times, result) = timing.run(f);
    (times.median(), times.len(), result)
}

/// A peer's median for one lattice, connectivity and thread count.
#[derive(Clone, Copy)]
struct PeerTime {
    ms: f64,
    count: usize,
}

/// `benches/peers_cpu.py` in serve mode: started once, it times OpenCV or scipy on a lattice of
/// the temporary folder when asked, so that each peer is timed right before clusterlab on the same
/// lattice and both see the same load.
struct PeerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Library versions, from the script's first line.
    versions: Vec<(String, String)>,
}

impl PeerProcess {
    fn start(s: &Settings, dir: &Path) -> Result<PeerProcess, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers_cpu.py");
        let mut child = Command::new(&s.python)
            .arg(&script)
            .arg("--serve")
            .arg("--dir")
            .arg(dir)
            .arg("--repeats")
            .arg(s.repeats.to_string())
            .arg("--warmup")
            .arg(s.warmup.to_string())
            .arg("--min-time")
            .arg(s.min_time.to_string())
            .arg("--max-repeats")
            .arg(s.max_repeats.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {} {}: {e}", s.python, script.display()))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut peers = PeerProcess {
            child,
            stdin,
            stdout,
            versions: Vec::new(),
        };
        let first = peers.read().map_err(|e| {
            format!(
                "{e}; are numpy, scipy and opencv-python-headless installed for {}? \
                 (scripts/bench-cpu.sh installs them)",
                s.python
            )
        })?;
        for key in ["opencv", "scipy", "numpy", "python"] {
            if let Some(v) = first.get(key).and_then(Value::as_str) {
                peers.versions.push((key.to_string(), v.to_string()));
            }
        }
        Ok(peers)
    }

    fn read(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("peers_cpu.py ended early".into()),
            Ok(_) => {
                serde_json::from_str(&line).map_err(|e| format!("peers_cpu.py sent {line:?}: {e}"))
            }
            Err(e) => Err(format!("reading from peers_cpu.py: {e}")),
        }
    }

    /// Sends one request line; its reply, or the error it reports.
    fn request(&mut self, request: &str) -> Result<Value, String> {
        let stdin = self.stdin.as_mut().ok_or("peers_cpu.py is closed")?;
        writeln!(stdin, "{request}")
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("writing to peers_cpu.py: {e}"))?;
        let reply = self.read()?;
        if let Some(e) = reply.get("error").and_then(Value::as_str) {
            return Err(format!("peers_cpu.py, {request:?}: {e}"));
        }
        Ok(reply)
    }

    /// Pins the script's timing thread to `cpu`, or (`None`) lets it run where it could at start.
    fn pin(&mut self, cpu: Option<usize>) -> Result<(), String> {
        self.request(&cpu.map_or_else(|| "unpin".to_string(), |c| format!("pin {c}")))
            .map(|_| ())
    }

    /// Sends one request (`scipy FILE CONN` or `opencv FILE CONN THREADS`) and reads the median.
    fn ask(&mut self, request: &str) -> Result<PeerTime, String> {
        let reply = self.request(request)?;
        let field = |k: &str| reply.get(k).and_then(Value::as_f64);
        match (field("ms"), field("count")) {
            (Some(ms), Some(count)) => Ok(PeerTime {
                ms,
                count: count as usize,
            }),
            _ => Err(format!(
                "peers_cpu.py, {request:?}: no ms or count in the reply"
            )),
        }
    }

    /// Closes the script's input, so that it ends, and waits for it.
    fn finish(&mut self) {
        self.stdin = None;
        let _ = self.child.wait();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

/// One line of the table.
struct Row {
    case: usize,
    conn: usize,
    threads: usize,
    ms: f64,
    reps: usize,
    count: usize,
    opencv: Option<PeerTime>,
    scipy: Option<PeerTime>,
    /// `clusterlab::label`, allocating its image each call.
    oneshot_ms: f64,
    /// OpenCV allocating its image each call.
    opencv_oneshot: Option<PeerTime>,
    matches: bool,
}

/// The CPU's model name, else the architecture.
fn cpu_model() -> String {
    common::cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn write_json(
    path: &Path,
    s: &Settings,
    cases: &[Case],
    versions: &[(String, String)],
    rows: &[Row],
    load: [Option<String>; 2],
) -> std::io::Result<()> {
    let mut j = String::from("{\n");
    let _ = writeln!(j, "  \"bench\": \"cpu_vs_peers\",");
    let _ = writeln!(j, "  \"quick\": {},", s.quick);
    let [load_start, load_end] = load.map(|l| l.map_or_else(|| "null".into(), |l| json_str(&l)));
    let _ = writeln!(j, "  \"load_average_start\": {load_start},");
    let _ = writeln!(j, "  \"load_average_end\": {load_end},");
    let _ = writeln!(j, "  \"cpu\": {},", json_str(&cpu_model()));
    let _ = writeln!(j, "  \"threads_all\": {},", s.threads_all);
    let _ = writeln!(j, "  \"pinned_cpu\": {},", json_opt(s.pin));
    let _ = writeln!(
        j,
        "  \"timing\": {{\"warmup\": {}, \"min_repeats\": {}, \"min_seconds\": {}, \"statistic\": \"median\"}},",
        s.warmup, s.repeats, s.min_time
    );
    let versions: Vec<String> = versions
        .iter()
        .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
        .collect();
    let _ = writeln!(j, "  \"peers\": {{{}}},", versions.join(", "));
    j.push_str("  \"rows\": [\n");
    for (i, r) in rows.iter().enumerate() {
        let c = &cases[r.case];
        let ratio = |p: Option<PeerTime>| p.map(|p| p.ms / r.ms);
        let _ = write!(
            j,
            "    {{\"lattice\": {}, \"file\": {}, \"kind\": {}, \"height\": {}, \"width\": {}, \
             \"p\": {}, \"grain\": {}, \"seed\": {}, \"density\": {}, \"conn\": {}, \"threads\": {}, \
             \"clusterlab_ms\": {}, \"clusterlab_reps\": {}, \"opencv_ms\": {}, \"scipy_ms\": {}, \
             \"opencv_over_clusterlab\": {}, \"scipy_over_clusterlab\": {}, \
             \"clusterlab_oneshot_ms\": {}, \"opencv_oneshot_ms\": {}, \
             \"opencv_oneshot_over_clusterlab_oneshot\": {}, \
             \"clusters\": {}, \"opencv_clusters\": {}, \"scipy_clusters\": {}, \"counts_match\": {}}}",
            json_str(&c.name),
            json_str(&c.file),
            json_str(c.kind),
            c.lattice.nrows(),
            c.lattice.ncols(),
            json_num(c.p),
            json_opt(c.grain),
            json_opt(c.seed),
            json_num(Some(
                c.lattice.iter().filter(|&&v| v != 0).count() as f64 / c.lattice.len() as f64
            )),
            r.conn,
            r.threads,
            json_num(Some(r.ms)),
            r.reps,
            json_num(r.opencv.map(|p| p.ms)),
            json_num(r.scipy.map(|p| p.ms)),
            json_num(ratio(r.opencv)),
            json_num(ratio(r.scipy)),
            json_num(Some(r.oneshot_ms)),
            json_num(r.opencv_oneshot.map(|p| p.ms)),
            json_num(r.opencv_oneshot.map(|p| p.ms / r.oneshot_ms)),
            r.count,
            json_opt(r.opencv.map(|p| p.count)),
            json_opt(r.scipy.map(|p| p.count)),
            r.matches,
        );
        j.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    j.push_str("  ]\n}\n");
    std::fs::write(path, j)
}

fn print_table(cases: &[Case], rows: &[Row]) {
    let ms = |p: Option<PeerTime>| p.map_or_else(|| "–".into(), |p| format!("{:.2}", p.ms));
    let ratio = |p: Option<PeerTime>, r: &Row| {
        p.map_or_else(|| "–".into(), |p| format!("{:.2}", p.ms / r.ms))
    };
    let header = [
        "lattice",
        "conn",
        "threads",
        "clusterlab ms",
        "OpenCV ms",
        "scipy ms",
        "OpenCV/clusterlab",
        "scipy/clusterlab",
        "one-shot ms",
        "OpenCV one-shot ms",
        "OpenCV/clusterlab one-shot",
    ]
    .map(String::from);
    let mut table = vec![header];
    for r in rows {
        table.push([
            cases[r.case].name.clone(),
            r.conn.to_string(),
            r.threads.to_string(),
            format!("{:.2}", r.ms),
            ms(r.opencv),
            ms(r.scipy),
            ratio(r.opencv, r),
            ratio(r.scipy, r),
            format!("{:.2}", r.oneshot_ms),
            ms(r.opencv_oneshot),
            r.opencv_oneshot
                .map_or_else(|| "–".into(), |p| format!("{:.2}", p.ms / r.oneshot_ms)),
        ]);
    }
    let mut widths = [0usize; 11];
    for line in &table {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let fmt = |line: &[String; 11]| {
        let cells: Vec<String> = line
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| {
                let pad = " ".repeat(w - c.chars().count());
                if i == 0 {
                    format!("{c}{pad}")
                } else {
                    format!("{pad}{c}")
                }
            })
            .collect();
        format!("| {} |", cells.join(" | "))
    };
    println!("{}", fmt(&table[0]));
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if i == 0 {
                "-".repeat(w)
            } else {
                format!("{}:", "-".repeat(w - 1))
            }
        })
        .collect();
    println!("| {} |", rule.join(" | "));
    for line in &table[1..] {
        println!("{}", fmt(line));
    }
}

// ---------------------------------------------------------------------------------------------

/// Generates the lattices, times the three libraries case by case, prints the table and writes
/// the JSON. Returns the number of cluster-count mismatches.
fn run(s: &Settings, dir: &Path) -> Result<usize, String> {
    let threads = s.thread_counts();
    let load_start = load_average();
    let t0 = Instant::now();
    let cases = cases(s.small, s.big);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for c in &cases {
        let path = dir.join(&c.file);
        ndarray_npy::write_npy(&path, &c.lattice)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    eprintln!(
        "generated {} lattices in {:.1} s",
        cases.len(),
        t0.elapsed().as_secs_f64()
    );

    let mut peers = PeerProcess::start(s, dir)?;
    // The one-shot calls' pools, one per thread count (as a user's RAYON_NUM_THREADS would be).
    let mut pools = std::collections::HashMap::<usize, rayon::ThreadPool>::new();
    let mut rows = Vec::new();
    let mut mismatches = 0;
    // One-thread timings (scipy's too) on one CPU, for clusterlab and the peers alike.
    let (pin, cpus) = (s.pin, affinity::allowed());
    let pin_all = |peers: &mut PeerProcess, cpu: Option<usize>| -> Result<(), String> {
        if pin.is_some() {
            let ours = cpu.map_or(cpus.clone(), |c| vec![c]);
            if !affinity::set(&ours) {
                return Err(format!("cannot pin the bench's thread to CPUs {ours:?}"));
            }
            peers.pin(cpu)?;
        }
        Ok(())
    };
    for (ci, c) in cases.iter().enumerate() {
        let mut out = Array2::<u32>::zeros(c.lattice.dim());
        for &conn in &c.conns {
            let k = conn.neighbours();
            pin_all(&mut peers, pin)?;
            let scipy = peers.ask(&format!("scipy {} {k}", c.file))?;
            for &t in &threads {
                if t > 1 {
                    pin_all(&mut peers, None)?;
                }
                let opencv = peers.ask(&format!("opencv {} {k} {t}", c.file))?;
                let parallelism = if t == 1 {
                    Parallelism::Sequential
                } else {
                    Parallelism::Threads(t)
                };
                let mut labeler = Labeler::new(conn, Boundary::Open).parallelism(parallelism);
                let mut error = None;
                let (ms, reps, count) = median_ms(s, || {
                    match labeler.label_into(c.lattice.view(), out.view_mut()) {
                        Ok(n) => n,
                        Err(e) => {
                            error = Some(e);
                            0
                        }
                    }
                });
                if let Some(e) = error {
                    return Err(format!("clusterlab on {} {k}-conn: {e}", c.name));
                }
                let opencv_oneshot = peers.ask(&format!("opencv_alloc {} {k} {t}", c.file))?;
                let pool = pools.entry(t).or_insert_with(|| {
                    // Built unpinned or (one thread) on the pinned CPU, which its thread keeps.
                    let one = (t == 1).then_some(pin).flatten();
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(t)
                        .start_handler(move |_| {
                            if let Some(c) = one {
                                affinity::set(&[c]);
                            }
                        })
                        .build()
                        .expect("a rayon pool")
                });
                let mut oneshot_count = 0;
                let (oneshot_ms, _, _) = median_ms(s, || {
                    pool.install(|| match label(c.lattice.view(), conn, Boundary::Open) {
                        Ok(l) => {
                            oneshot_count = l.count();
                            oneshot_count
                        }
                        Err(e) => {
                            error = Some(e);
                            0
                        }
                    })
                });
                if let Some(e) = error {
                    return Err(format!("clusterlab::label on {} {k}-conn: {e}", c.name));
                }
                let matches = opencv.count == count
                    && scipy.count == count
                    && oneshot_count == count
                    && opencv_oneshot.count == count;
                if !matches {
                    mismatches += 1;
                    let line = format!(
                        "!!!!!!!! MISMATCH: {} {k}-conn {t} thread(s): clusterlab {count} \
                         clusters, OpenCV {}, scipy {} !!!!!!!!",
                        c.name, opencv.count, scipy.count
                    );
                    println!("{line}");
                    eprintln!("{line}");
                }
                eprintln!(
                    "  {} {k}-conn {t} thread(s): clusterlab {ms:.2} ms ({reps} runs), OpenCV \
                     {:.2} ms, scipy {:.2} ms; one-shot: clusterlab {oneshot_ms:.2} ms, OpenCV \
                     {:.2} ms; {count} clusters",
                    c.name, opencv.ms, scipy.ms, opencv_oneshot.ms
                );
                rows.push(Row {
                    case: ci,
                    conn: k,
                    threads: t,
                    ms,
                    reps,
                    count,
                    opencv: Some(opencv),
                    scipy: Some(scipy),
                    oneshot_ms,
                    opencv_oneshot: Some(opencv_oneshot),
                    matches,
                });
            }
        }
    }
    peers.finish();

    let load_end = load_average();
    println!();
    let versions: Vec<String> = peers
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!(
        "CPU {}; {}; times are medians in ms; ratios > 1 mean clusterlab is faster. \
         scipy is single-threaded: its one time is shown at every thread count.",
        cpu_model(),
        versions.join(", ")
    );
    println!();
    print_table(&cases, &rows);
    println!();
    if let (Some(a), Some(b)) = (&load_start, &load_end) {
        println!(
            "load average (1, 5, 15 min) {a} at the start, {b} at the end: other work on the \
             machine skews the times"
        );
    }

    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-out");
    let json = out_dir.join("cpu.json");
    std::fs::create_dir_all(&out_dir)
        .and_then(|_| {
            write_json(
                &json,
                s,
                &cases,
                &peers.versions,
                &rows,
                [load_start, load_end],
            )
        })
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    println!("wrote {}", json.display());
    Ok(mismatches)
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
    println!(
        "cpu_vs_peers: {} run, CPU {}, thread counts {:?}, median of >= {} runs and >= {} s \
         after {} warm-up; each peer is timed right before clusterlab on the same lattice",
        if s.quick { "QUICK" } else { "full" },
        cpu_model(),
        s.thread_counts(),
        s.repeats,
        s.min_time,
        s.warmup
    );
    let dir = std::env::temp_dir().join(format!("clusterlab-cpu-bench-{}", std::process::id()));
    let result = run(&s, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(0) => ExitCode::SUCCESS,
        Ok(n) => {
            println!("!!!!!!!! {n} MISMATCH(ES) in cluster counts: see above !!!!!!!!");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
