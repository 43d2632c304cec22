//! Where the time of labeling host arrays on the GPU goes, for `clusterlab label --timings`:
//! copying into and out of the pinned staging buffers on the host, the upload, the kernels and
//! the download (CUDA events on the stream, read after the call's one synchronisation). Off
//! unless asked for, so that ordinary calls record no events.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CALLS: AtomicU64 = AtomicU64::new(0);
static STAGE_NS: AtomicU64 = AtomicU64::new(0);
static UPLOAD_NS: AtomicU64 = AtomicU64::new(0);
static KERNELS_NS: AtomicU64 = AtomicU64::new(0);
static DOWNLOAD_NS: AtomicU64 = AtomicU64::new(0);

/// Accumulated phases of the GPU labeling calls on host arrays made since timings were turned on
/// (see [`record_timings`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCallTimings {
    /// Calls timed.
    pub calls: u64,
    /// Host time copying the lattice into, and the labels out of, the pinned staging buffers.
    pub staging: Duration,
    /// The lattice's copy to the GPU (CUDA events).
    pub upload: Duration,
    /// The labeling kernels (CUDA events).
    pub kernels: Duration,
    /// The labels' copy back (CUDA events).
    pub download: Duration,
}

/// Turns the timing of GPU labeling calls on host arrays on or off (off by default: it records
/// four CUDA events per call).
pub fn record_timings(on: bool) {
    ENABLED.store(on, Relaxed);
}

/// What the timed calls have cost so far.
pub fn host_call_timings() -> HostCallTimings {
    let d = |a: &AtomicU64| Duration::from_nanos(a.load(Relaxed));
    HostCallTimings {
        calls: CALLS.load(Relaxed),
        staging: d(&STAGE_NS),
        upload: d(&UPLOAD_NS),
        kernels: d(&KERNELS_NS),
        download: d(&DOWNLOAD_NS),
    }
}

pub(crate) fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Adds one call's phases (milliseconds from CUDA events, the staging as a host duration).
pub(crate) fn add(staging: Duration, upload_ms: f32, kernels_ms: f32, download_ms: f32) {
    let ns = |ms: f32| (f64::from(ms.max(0.0)) * 1e6) as u64;
    CALLS.fetch_add(1, Relaxed);
    STAGE_NS.fetch_add(staging.as_nanos() as u64, Relaxed);
    UPLOAD_NS.fetch_add(ns(upload_ms), Relaxed);
    KERNELS_NS.fetch_add(ns(kernels_ms), Relaxed);
    DOWNLOAD_NS.fetch_add(ns(download_ms), Relaxed);
}
