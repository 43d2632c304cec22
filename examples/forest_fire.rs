//! A simulation code calling clusterlab every timestep: the Drossel–Schwabl forest-fire cellular
//! automaton on an L × L torus, its tree clusters measured after every step — count, largest,
//! mean size S, P∞, wrapping flags and the accumulated n_s — with no label image and no cluster
//! table, written as time series.
//!
//! Rules per step (synchronous, 4 neighbours, periodic): a burning site becomes empty; a tree
//! catches fire when a neighbour burns, or by lightning with probability `f`; an empty site grows
//! a tree with probability `p`. Random numbers come from a counter-based hash of (seed, step,
//! site), so the CPU and the GPU automaton give the same forest.
//!
//! - `--backend cpu`: the automaton on the CPU, the clusters by `Labeler::size_counts_into`.
//! - `--backend cuda`: the automaton as a CUDA kernel and the clusters by
//!   `CudaAnalyzer::queue_size_counts` on the same device buffer: the forest never leaves the GPU;
//!   only the statistics come back.
//! - `--check`: every step, the other path recomputes the step (the CPU automaton beside the
//!   GPU's, and the full cluster table of `analyze` beside the counts) and the run exits non-zero
//!   at the first difference.
//!
//! ```sh
//! cargo run --release --example forest_fire -- --size 512 --steps 2000 --output fire.h5
//! cargo run --release --example forest_fire -- --size 4096 --steps 1000 --backend cuda --check
//! ```
//!
//! The series go to `/series/<column>` of an HDF5 file (or a CSV), and n_s to `/ns`; the file is
//! rewritten atomically every `--flush-every` steps, so a killed run keeps what it had written.

use clap::Parser;
use clusterlab::io::{write_column_groups, write_columns, SummaryColumn, SummaryValues};
use clusterlab::{Boundary, Connectivity, Labeler, Parallelism, SizeCounts, SizeDistribution};
use ndarray::Array2;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "Forest-fire automaton with per-step cluster statistics")]
struct Args {
    /// Lattice side L (L × L torus).
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(2..=32768))]
    size: u32,
    /// Steps to run.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    steps: u64,
    /// Growth probability p.
    #[arg(long, default_value_t = 0.02)]
    p: f64,
    /// Lightning probability f.
    #[arg(long, default_value_t = 1e-5)]
    f: f64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// cpu, cuda or auto (the GPU when one opens).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Recompute every step by an independent path and stop at the first difference.
    #[arg(long)]
    check: bool,
    /// Where to write the series (.h5 or .csv); none: print a summary only.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Rewrite the output every N steps.
    #[arg(long, default_value_t = 200)]
    flush_every: u64,
}

const EMPTY: u8 = 0;
const TREE: u8 = 1;
const FIRE: u8 = 2;

/// The random word of (seed, step, site): SplitMix64's finaliser over a linear mix; the CUDA
/// kernel below computes the same.
fn word(seed: u64, step: u64, site: u64) -> u64 {
    let mut z = seed
        .wrapping_add(step.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(site.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `floor(p · 2³²)`: an event of probability p happens when a 32-bit word is below it.
fn threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 4_294_967_296.0) as u64
}

/// One step of the automaton on the CPU: `state` → `next`, `trees` the occupancy of the trees.
fn step_cpu(state: &Array2<u8>, next: &mut Array2<u8>, trees: &mut Array2<u8>, k: &Knobs, t: u64) {
    let (h, w) = state.dim();
    for y in 0..h {
        for x in 0..w {
            let i = (y * w + x) as u64;
            let r = word(k.seed, t, i);
            let (a, b) = (r >> 32, r & 0xFFFF_FFFF);
            let s = state[[y, x]];
            let burning = [
                ((y + h - 1) % h, x),
                ((y + 1) % h, x),
                (y, (x + w - 1) % w),
                (y, (x + 1) % w),
            ]
            .iter()
            .any(|&(yy, xx)| state[[yy, xx]] == FIRE);
            let n = match s {
                FIRE => EMPTY,
                TREE if burning || b < k.lightning => FIRE,
                TREE => TREE,
                _ if a < k.growth => TREE,
                _ => EMPTY,
            };
            next[[y, x]] = n;
            trees[[y, x]] = u8::from(n == TREE);
        }
    }
}

struct Knobs {
    seed: u64,
    growth: u64,
    lightning: u64,
}

/// The statistics of one step, as written.
#[derive(Default)]
struct Series {
    step: Vec<u64>,
    trees: Vec<u64>,
    clusters: Vec<u64>,
    largest: Vec<u64>,
    mean_size: Vec<f64>,
    p_inf: Vec<f64>,
    wraps_x: Vec<bool>,
    wraps_y: Vec<bool>,
}

impl Series {
    fn push(&mut self, t: u64, c: &SizeCounts) {
        self.step.push(t);
        self.trees.push(c.occupied());
        self.clusters.push(c.clusters() as u64);
        self.largest.push(c.largest());
        self.mean_size.push(c.mean_size());
        self.p_inf.push(c.p_infinity());
        self.wraps_x.push(c.wraps_x());
        self.wraps_y.push(c.wraps_y());
    }

    fn columns(&self) -> Vec<SummaryColumn> {
        use SummaryValues::*;
        vec![
            SummaryColumn::new("step", U64(self.step.clone())),
            SummaryColumn::new("trees", U64(self.trees.clone())),
            SummaryColumn::new("clusters", U64(self.clusters.clone())),
            SummaryColumn::new("largest", U64(self.largest.clone())),
            SummaryColumn::new("mean_size", F64(self.mean_size.clone())),
            SummaryColumn::new("p_inf", F64(self.p_inf.clone())),
            SummaryColumn::new("wraps_x", Flag(self.wraps_x.clone())),
            SummaryColumn::new("wraps_y", Flag(self.wraps_y.clone())),
        ]
    }
}

fn write(path: &Path, series: &Series, ns: &SizeDistribution) -> clusterlab::Result<()> {
    let bins = ns.ns();
    let ns_cols = vec![
        SummaryColumn::new("s", SummaryValues::U64(bins.iter().map(|b| b.0).collect())),
        SummaryColumn::new(
            "n_s",
            SummaryValues::F64(bins.iter().map(|b| b.1).collect()),
        ),
    ];
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        write_columns(path, "series", &series.columns())
    } else {
        write_column_groups(path, &[("series", &series.columns()), ("ns", &ns_cols)])
    }
}

/// Compares counts with the full table of the same lattice (an independent path).
fn check_counts(trees: &Array2<u8>, c: &SizeCounts) -> Result<(), String> {
    let table = clusterlab::analyze(trees.view(), Connectivity::Four, Boundary::Periodic)
        .map_err(|e| e.to_string())?;
    let largest = table.size.iter().copied().max().unwrap_or(0);
    if table.count() != c.clusters() || largest != c.largest() {
        return Err(format!(
            "counts {} clusters / largest {} but the table has {} / {}",
            c.clusters(),
            c.largest(),
            table.count(),
            largest
        ));
    }
    Ok(())
}

fn run(args: &Args) -> Result<String, String> {
    let l = args.size as usize;
    let knobs = Knobs {
        seed: args.seed,
        growth: threshold(args.p),
        lightning: threshold(args.f),
    };
    // Start from a forest at density 1/2, the same on both paths.
    let mut state = Array2::from_shape_fn((l, l), |(y, x)| {
        u8::from(word(args.seed, u64::MAX, (y * l + x) as u64) >> 63 == 1)
    });
    let mut next = Array2::<u8>::zeros((l, l));
    let mut trees = Array2::<u8>::zeros((l, l));
    let mut counts = SizeCounts::new();
    let mut ns = SizeDistribution::new();
    let mut series = Series::default();
    let start = Instant::now();
    let mut gpu = match args.backend.as_str() {
        "cpu" => None,
        "cuda" => Some(gpu::Forest::new(&state).map_err(|e| e.to_string())?),
        "auto" => gpu::Forest::new(&state).ok(),
        other => {
            return Err(format!(
                "--backend must be cpu, cuda or auto, not {other:?}"
            ))
        }
    };
    let mut labeler =
        Labeler::new(Connectivity::Four, Boundary::Periodic).parallelism(Parallelism::Rayon);
    for t in 0..args.steps {
        match gpu.as_mut() {
            Some(g) => {
                g.step(&knobs, t, &mut counts).map_err(|e| e.to_string())?;
                if args.check {
                    step_cpu(&state, &mut next, &mut trees, &knobs, t);
                    std::mem::swap(&mut state, &mut next);
                    let (gs, gt) = g.download().map_err(|e| e.to_string())?;
                    if gs != state || gt != trees {
                        return Err(format!("step {t}: the GPU forest differs from the CPU's"));
                    }
                    check_counts(&trees, &counts).map_err(|e| format!("step {t}: {e}"))?;
                }
            }
            None => {
                step_cpu(&state, &mut next, &mut trees, &knobs, t);
                std::mem::swap(&mut state, &mut next);
                labeler
                    .size_counts_into(trees.view(), &mut counts)
                    .map_err(|e| e.to_string())?;
                if args.check {
                    check_counts(&trees, &counts).map_err(|e| format!("step {t}: {e}"))?;
                }
            }
        }
        series.push(t, &counts);
        ns.add_size_counts(&counts, true);
        if let Some(path) = &args.output {
            if (t + 1) % args.flush_every == 0 || t + 1 == args.steps {
                write(path, &series, &ns).map_err(|e| e.to_string())?;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let n = series.step.len();
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / n as f64;
    Ok(format!(
        "{} steps of a {l}×{l} forest on {} in {secs:.2} s ({:.3} ms per step, clusters measured \
         every step{}): mean trees {:.0}, mean clusters {:.0}, mean largest {:.0}, wrapping in {} \
         steps",
        n,
        if gpu.is_some() { "the GPU" } else { "the CPU" },
        secs * 1e3 / n as f64,
        if args.check { ", checked" } else { "" },
        mean(&series.trees),
        mean(&series.clusters),
        mean(&series.largest),
        series
            .wraps_x
            .iter()
            .zip(&series.wraps_y)
            .filter(|(a, b)| **a || **b)
            .count()
    ))
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !(0.0..=1.0).contains(&args.p) || !(0.0..=1.0).contains(&args.f) || args.flush_every == 0 {
        eprintln!("error: --p and --f must be in [0, 1] and --flush-every at least 1");
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The automaton on the GPU: state, next state and tree occupancy in device buffers, one kernel
/// per step, the clusters counted on the same buffers.
#[cfg(feature = "cuda")]
mod gpu {
    use super::Knobs;
    use clusterlab::cuda::cudarc::driver::{
        CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
    };
    use clusterlab::cuda::cudarc::nvrtc::compile_ptx;
    use clusterlab::cuda::CudaAnalyzer;
    use clusterlab::{Boundary, Connectivity, Error, Result, SizeCounts};
    use ndarray::Array2;
    use std::sync::Arc;

    const KERNEL: &str = r#"
__device__ unsigned long long word(unsigned long long seed, unsigned long long step,
                                   unsigned long long site) {
    unsigned long long z = seed + step * 0x9E3779B97F4A7C15ull + site * 0xD1B54A32D192ED03ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
extern "C" __global__ void forest_fire(const unsigned char* s, unsigned char* t,
        unsigned char* trees, int h, int w, unsigned long long seed, unsigned long long step,
        unsigned long long growth, unsigned long long lightning) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w) return;
    long long i = (long long)y * w + x;
    unsigned long long r = word(seed, step, (unsigned long long)i);
    unsigned long long a = r >> 32, b = r & 0xFFFFFFFFull;
    unsigned char c = s[i], n;
    bool burning = s[(long long)((y + h - 1) % h) * w + x] == 2 || s[(long long)((y + 1) % h) * w + x] == 2
        || s[(long long)y * w + (x + w - 1) % w] == 2 || s[(long long)y * w + (x + 1) % w] == 2;
    if (c == 2) n = 0;
    else if (c == 1) n = (burning || b < lightning) ? 2 : 1;
    else n = a < growth ? 1 : 0;
    t[i] = n;
    trees[i] = n == 1;
}
"#;

    fn cuda(e: impl std::fmt::Display) -> Error {
        Error::Cuda(e.to_string())
    }

    pub struct Forest {
        stream: Arc<CudaStream>,
        _module: Arc<CudaModule>,
        func: CudaFunction,
        state: CudaSlice<u8>,
        next: CudaSlice<u8>,
        trees: CudaSlice<u8>,
        analyzer: CudaAnalyzer,
        dim: (usize, usize),
    }

    impl Forest {
        pub fn new(state: &Array2<u8>) -> Result<Forest> {
            let analyzer = CudaAnalyzer::new(0, Connectivity::Four, Boundary::Periodic)?;
            let stream = analyzer.stream().clone();
            let ptx = compile_ptx(KERNEL).map_err(cuda)?;
            let module = stream.context().load_module(ptx).map_err(cuda)?;
            let func = module.load_function("forest_fire").map_err(cuda)?;
            let host = state.as_standard_layout();
            let n = state.len();
            Ok(Forest {
                state: stream
                    .clone_htod(host.as_slice().expect("standard layout"))
                    .map_err(cuda)?,
                next: stream.alloc_zeros(n).map_err(cuda)?,
                trees: stream.alloc_zeros(n).map_err(cuda)?,
                stream,
                _module: module,
                func,
                analyzer,
                dim: state.dim(),
            })
        }

        /// One step of the automaton and the counts of its trees, on the device.
        pub fn step(&mut self, k: &Knobs, t: u64, counts: &mut SizeCounts) -> Result<()> {
            let (h, w) = self.dim;
            let (hi, wi) = (h as i32, w as i32);
            let cfg = LaunchConfig {
                grid_dim: ((w as u32).div_ceil(256), h as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut launch = self.stream.launch_builder(&self.func);
            launch
                .arg(&self.state)
                .arg(&mut self.next)
                .arg(&mut self.trees)
                .arg(&hi)
                .arg(&wi)
                .arg(&k.seed)
                .arg(&t)
                .arg(&k.growth)
                .arg(&k.lightning);
            // SAFETY: the arguments match the kernel's signature; the buffers hold h · w sites.
            unsafe { launch.launch(cfg) }.map_err(cuda)?;
            std::mem::swap(&mut self.state, &mut self.next);
            self.analyzer.queue_size_counts(&self.trees, h, w)?;
            *counts = self.analyzer.finish_size_counts()?;
            Ok(())
        }

        /// The state and the tree occupancy, for `--check`.
        pub fn download(&self) -> Result<(Array2<u8>, Array2<u8>)> {
            let s = self.stream.clone_dtoh(&self.state).map_err(cuda)?;
            let t = self.stream.clone_dtoh(&self.trees).map_err(cuda)?;
            let shape = self.dim;
            Ok((
                Array2::from_shape_vec(shape, s).map_err(|e| Error::Cuda(e.to_string()))?,
                Array2::from_shape_vec(shape, t).map_err(|e| Error::Cuda(e.to_string()))?,
            ))
        }
    }
}

/// Without the `cuda` feature there is no GPU automaton.
#[cfg(not(feature = "cuda"))]
mod gpu {
    use super::Knobs;
    use clusterlab::{Error, Result, SizeCounts};
    use ndarray::Array2;

    pub struct Forest;

    impl Forest {
        pub fn new(_: &Array2<u8>) -> Result<Forest> {
            Err(Error::CudaUnavailable(
                "built without the cuda feature".into(),
            ))
        }
        pub fn step(&mut self, _: &Knobs, _: u64, _: &mut SizeCounts) -> Result<()> {
            unreachable!()
        }
        pub fn download(&self) -> Result<(Array2<u8>, Array2<u8>)> {
            unreachable!()
        }
    }
}
