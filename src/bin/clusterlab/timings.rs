//! `--timings`: where a run's time went, phase by phase, and on a GPU inside the labeling.

use std::time::{Duration, Instant};

/// A stopwatch of named phases; inert unless asked for.
pub struct Timings {
    on: bool,
    start: Instant,
    last: Instant,
    laps: Vec<(&'static str, Duration)>,
}

impl Timings {
    /// Starts the clock (and, on a GPU build, the timing of GPU calls) when `on`.
    pub fn start(on: bool) -> Timings {
        #[cfg(feature = "cuda")]
        if on {
            clusterlab::cuda::record_timings(true);
        }
        let now = Instant::now();
        Timings {
            on,
            start: now,
            last: now,
            laps: Vec::new(),
        }
    }

    /// Ends phase `name` now.
    pub fn lap(&mut self, name: &'static str) {
        if self.on {
            let now = Instant::now();
            self.laps.push((name, now - self.last));
            self.last = now;
        }
    }

    /// Prints the phases to stderr and returns them as JSON (milliseconds), or `None` when off.
    pub fn finish(self) -> Option<serde_json::Value> {
        if !self.on {
            return None;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut doc = serde_json::Map::new();
        let mut line = Vec::new();
        for (name, d) in &self.laps {
            doc.insert(format!("{name}_ms"), ms(*d).into());
            line.push(format!("{name} {:.1}", ms(*d)));
        }
        let total = ms(self.start.elapsed());
        doc.insert("total_ms".into(), total.into());
        line.push(format!("total {total:.1}"));
        eprintln!("timings (ms): {}", line.join(" | "));
        #[cfg(feature = "cuda")]
        {
            let c = clusterlab::cuda::compile_stats();
            let g = clusterlab::cuda::host_call_timings();
            if c.compiled + c.from_disk > 0 || g.calls > 0 {
                eprintln!(
                    "  on the GPU: compile {:.1} ({} compiled, {} from the disk cache) | staging {:.1} | upload {:.1} | kernels {:.1} | download {:.1}",
                    ms(c.time),
                    c.compiled,
                    c.from_disk,
                    ms(g.staging),
                    ms(g.upload),
                    ms(g.kernels),
                    ms(g.download)
                );
                for (k, v) in [
                    ("compile_ms", ms(c.time)),
                    ("staging_ms", ms(g.staging)),
                    ("upload_ms", ms(g.upload)),
                    ("kernels_ms", ms(g.kernels)),
                    ("download_ms", ms(g.download)),
                ] {
                    doc.insert(k.into(), v.into());
                }
                doc.insert("modules_compiled".into(), c.compiled.into());
                doc.insert("modules_from_disk".into(), c.from_disk.into());
            }
        }
        Some(serde_json::Value::Object(doc))
    }
}
