//! Helpers shared by the bench programs (`mod common;` in each): argument parsing, medians and
//! timing after warm-up, CUDA-event timing, the memory-bandwidth floor, machine facts and a few
//! JSON writers. Each bench uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::str::FromStr;
use std::time::Instant;

/// The error type of the bench programs: any error, reported as text (no `anyhow` here: it is
/// an optional dependency of the binary, not a dev-dependency).
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

/// The command line of a bench program: `--bench` (which `cargo bench` appends) is dropped,
/// `--help` prints the usage and exits 0, and a bad argument prints the usage and exits 2.
pub struct Args {
    usage: &'static str,
    rest: std::vec::IntoIter<String>,
}

impl Args {
    /// The process's arguments, without the program name and `--bench`.
    pub fn from_env(usage: &'static str) -> Args {
        let rest: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| a != "--bench")
            .collect();
        Args {
            usage,
            rest: rest.into_iter(),
        }
    }

    /// The next flag; on `--help` or `-h` prints the usage and exits.
    pub fn next_flag(&mut self) -> Option<String> {
        let a = self.rest.next()?;
        if a == "--help" || a == "-h" {
            println!("{}", self.usage);
            std::process::exit(0);
        }
        Some(a)
    }

    /// The value that follows `flag`, parsed; exits 2 when it is missing or malformed.
    pub fn value<T: FromStr>(&mut self, flag: &str) -> T {
        match self.rest.next() {
            Some(v) => match v.parse() {
                Ok(x) => x,
                Err(_) => self.fail(&format!("{flag}: cannot parse {v:?}")),
            },
            None => self.fail(&format!("{flag} needs a value")),
        }
    }

    /// Reports an unknown argument and exits 2.
    pub fn unknown(&self, arg: &str) -> ! {
        self.fail(&format!("unknown argument {arg:?}"))
    }

    fn fail(&self, why: &str) -> ! {
        eprintln!("error: {why}\n\n{}", self.usage);
        std::process::exit(2);
    }
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

/// Timings in ms, sorted.
pub struct Samples(Vec<f64>);

impl Samples {
    /// Sorts `times`.
    pub fn new(mut times: Vec<f64>) -> Samples {
        times.sort_by(f64::total_cmp);
        Samples(times)
    }
    /// The upper median (the middle one, or the higher of the middle two); NaN if empty.
    pub fn upper_median(&self) -> f64 {
        self.0.get(self.0.len() / 2).copied().unwrap_or(f64::NAN)
    }
    /// The median (the mean of the middle two for an even count); NaN if empty.
    pub fn median(&self) -> f64 {
        let n = self.0.len();
        match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => self.0[n / 2],
            _ => (self.0[n / 2 - 1] + self.0[n / 2]) / 2.0,
        }
    }
    /// The fastest; NaN if empty.
    pub fn min(&self) -> f64 {
        self.0.first().copied().unwrap_or(f64::NAN)
    }
    /// The slowest; NaN if empty.
    pub fn max(&self) -> f64 {
        self.0.last().copied().unwrap_or(f64::NAN)
    }
    /// The number of timings.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The upper median of `times` (see [`Samples::upper_median`]).
pub fn median(times: Vec<f64>) -> f64 {
    Samples::new(times).upper_median()
}

/// How to time a closure on the host: warm-up calls, then timed calls until at least `repeats`
/// calls and `min_seconds`, but never more than `max_repeats`.
#[derive(Clone, Copy)]
pub struct Timing {
    pub warmup: usize,
    pub repeats: usize,
    pub min_seconds: f64,
    pub max_repeats: usize,
}

impl Timing {
    /// `warmup` calls, then exactly `repeats` timed ones.
    pub fn fixed(warmup: usize, repeats: usize) -> Timing {
        Timing {
            warmup,
            repeats,
            min_seconds: 0.0,
            max_repeats: repeats,
        }
    }

    /// Times `f` by the wall clock; returns the timings in ms and the last call's result.
    pub fn run<R>(&self, mut f: impl FnMut() -> R) -> (Samples, R) {
        for _ in 0..self.warmup {
            std::hint::black_box(f());
        }
        let mut times = Vec::new();
        let start = Instant::now();
        let result = loop {
            let t0 = Instant::now();
            let result = f();
            times.push(t0.elapsed().as_secs_f64() * 1e3);
            let done =
                times.len() >= self.repeats && start.elapsed().as_secs_f64() >= self.min_seconds;
            if done || times.len() >= self.max_repeats.max(1) {
                break result;
            }
        };
        (Samples::new(times), result)
    }
}

/// CUDA-event timing of work queued on one stream.
#[cfg(feature = "cuda")]
pub mod gpu {
    use super::BenchResult;
    use clusterlab::cuda::cudarc::driver::sys::CUevent_flags;
    use clusterlab::cuda::cudarc::driver::{CudaEvent, CudaStream};
    use std::sync::Arc;

    /// A pair of events on a stream.
    pub struct EventTimer {
        stream: Arc<CudaStream>,
        start: CudaEvent,
        end: CudaEvent,
    }

    impl EventTimer {
        /// Two events in `stream`'s context.
        pub fn new(stream: &Arc<CudaStream>) -> BenchResult<EventTimer> {
            let ctx = stream.context();
            let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
            Ok(EventTimer {
                stream: stream.clone(),
                start: event()?,
                end: event()?,
            })
        }

        /// The device time in ms of what `f` queues on the stream (waits for it to finish).
        pub fn time<E: Into<Box<dyn std::error::Error>>>(
            &self,
            f: impl FnOnce() -> Result<(), E>,
        ) -> BenchResult<f64> {
            self.start.record(&self.stream)?;
            f().map_err(Into::into)?;
            self.end.record(&self.stream)?;
            Ok(self.start.elapsed_ms(&self.end)? as f64)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The memory floor
// ---------------------------------------------------------------------------------------------

/// The copy bandwidth (bytes per second) the floors assume for a card, from its name: H200
/// 4.2 TB/s, H100 3.0 TB/s (their measured device-to-device copy rates); any other card gets
/// 4.2 TB/s and a note saying so.
pub fn bandwidth(device_name: &str) -> (f64, Option<String>) {
    if device_name.contains("H200") {
        (4.2e12, None)
    } else if device_name.contains("H100") {
        (3.0e12, None)
    } else {
        (
            4.2e12,
            Some(format!(
                "note: no bandwidth known for {device_name}; the floor assumes the H200's 4.2 TB/s"
            )),
        )
    }
}

/// The time in ms to move `bytes` at `bandwidth` bytes per second.
pub fn floor_ms(bytes: f64, bandwidth: f64) -> f64 {
    bytes / bandwidth * 1e3
}

/// `bandwidth` in TB/s for messages, e.g. `4.2`.
pub fn tb_per_s(bandwidth: f64) -> String {
    format!("{:.1}", bandwidth / 1e12)
}

// ---------------------------------------------------------------------------------------------
// The machine
// ---------------------------------------------------------------------------------------------

/// The CPU's model name from `/proc/cpuinfo` (Linux), if there is one.
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|m| m.trim().to_string())
}

/// The 1-, 5- and 15-minute load averages (Linux), to judge how busy the machine was.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

/// Thread affinity (Linux), so that one-thread timings of clusterlab and of its peers run on
/// the same CPU. On a shared multi-core machine (the GPU machine's 16-core VM) one thread's
/// speed varied by ±25 % with the CPU it landed on, the same code timed interleaved on two
/// threads, so unpinned one-thread rows compared CPUs, not libraries.
pub mod affinity {
    /// The CPUs the calling thread may run on, in order.
    pub fn allowed() -> Vec<usize> {
        // SAFETY: `set` is a plain bit set that sched_getaffinity fills for the calling thread
        // (pid 0); its size is passed.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) != 0 {
                return Vec::new();
            }
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// Lets the calling thread run on `cpus` only; whether the system agreed.
    pub fn set(cpus: &[usize]) -> bool {
        // SAFETY: as in `allowed`; CPU_SET is given indices below CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                libc::CPU_SET(c, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
        }
    }

    /// The CPU for pinned one-thread timings: `CLUSTERLAB_BENCH_PIN` (a CPU number, or `off`
    /// for none), by default the last CPU the process may use.
    pub fn pin_cpu() -> Option<usize> {
        match std::env::var("CLUSTERLAB_BENCH_PIN") {
            Ok(v) if v == "off" => None,
            Ok(v) => v.parse().ok(),
            Err(_) => allowed().last().copied(),
        }
    }
}

/// `n` from the environment variable `name`, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whether the environment variable `name` is set to something other than empty or `0`.
pub fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The thread count of "all threads": `CLUSTERLAB_BENCH_THREADS`, else available parallelism.
pub fn threads_all() -> usize {
    std::env::var("CLUSTERLAB_BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The thread counts to compare at: 1 and `all` (once if `all` is 1).
pub fn thread_counts(all: usize) -> Vec<usize> {
    if all > 1 {
        vec![1, all]
    } else {
        vec![1]
    }
}

// ---------------------------------------------------------------------------------------------
// JSON, written by hand where a bench builds its report line by line
// ---------------------------------------------------------------------------------------------

/// `s` as a JSON string, quoted and escaped.
pub fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number with 6 decimals, or `null` when absent or not finite.
pub fn json_num(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.6}"),
        _ => "null".into(),
    }
}

/// `x` as written by `ToString`, or `null`.
pub fn json_opt<T: ToString>(x: Option<T>) -> String {
    x.map_or_else(|| "null".into(), |v| v.to_string())
}

/// The exit status of a bench's `run`: 0, or 1 with the error on stderr.
pub fn report(name: &str, result: BenchResult<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
