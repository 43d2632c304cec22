//! [`MultiGpuLabeler`]: one lattice labeled in horizontal strips on several GPUs of one host, or
//! in several strips on one GPU (the loopback transport), with exactly one device's labels; and
//! [`MultiGpuAnalyzer`]: its cluster table and `n_s` the same way.
//! Files: [`layout`] (the strips), [`strip`] (one strip on its device), [`seam`] (the host's
//! union-find over the border rows), [`numbering`] (the values the strip kernels write),
//! [`analysis`] (the strips' pieces joined by winding).

pub(crate) mod analysis;
pub(crate) mod layout;
pub(crate) mod numbering;
pub(crate) mod seam;
pub(crate) mod strip;
#[cfg(test)]
mod tests;

pub use analysis::{AnalysisTimings, MultiGpuAnalyzer};

use super::family::SiteType;
use super::runtime::driver::{check_libraries, no_panic};
use super::Numbering;
use crate::lattice::{Boundary, Connectivity, SiteValue};
use crate::{Algorithm, Error, Labels, Result};
use cudarc::driver::result as dres;
use layout::{Split, MAX_STRIP_SITES};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use std::time::Instant;
use strip::{Kind, StripGpu};

/// The number of CUDA devices this process sees.
///
/// # Errors
/// [`Error::CudaUnavailable`] when the driver or NVRTC cannot be loaded or initialised.
pub fn device_count() -> Result<usize> {
    check_libraries()?;
    no_panic("counting the CUDA devices", || {
        dres::init().map_err(|e| Error::CudaUnavailable(format!("cuInit failed: {e:?}")))?;
        dres::device::get_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| Error::CudaUnavailable(format!("cannot count CUDA devices: {e:?}")))
    })
}

/// Checks a device list for multi-GPU `what`: not empty, every ordinal one the driver lists.
fn check_devices(devices: &[usize], what: &str) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "multi-GPU {what} needs at least one device"
        )));
    }
    let count = device_count()?;
    if let Some(&d) = devices.iter().find(|&&d| d >= count) {
        return Err(Error::InvalidArgument(format!(
            "CUDA device {d} asked for; this process sees {count}"
        )));
    }
    Ok(())
}

/// Every device the process sees, or [`Error::CudaUnavailable`] when there is none.
fn all_devices() -> Result<Vec<usize>> {
    let n = device_count()?;
    if n == 0 {
        return Err(Error::CudaUnavailable("no CUDA device is present".into()));
    }
    Ok((0..n).collect())
}

/// Where the time of the last [`MultiGpuLabeler::label`] went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StripTimings {
    /// Wall time of the whole labeling, from the first launch to the last strip's end.
    pub total_ms: f64,
    /// Device time (CUDA events) of the slowest strip's own labeling.
    pub strips_ms: f64,
    /// The seam exchange: the border rows' copies to the host (device time, slowest strip) and
    /// the host's union-find over them (wall time).
    pub exchange_ms: f64,
    /// Wall time of the relabeling: the join's answer uploaded, (canonical numbering: the
    /// strips' root counts and ranks, and their round trip to the host) and the elementwise pass.
    pub relabel_ms: f64,
}

/// Where one strip lies and which device labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripInfo {
    /// The strip's first row.
    pub y0: usize,
    /// Its rows.
    pub rows: usize,
    /// The CUDA device that labels it.
    pub device: usize,
}

/// Labels one lattice in horizontal strips over several GPUs (or several strips on one GPU),
/// giving exactly the labels of [`CudaLabeler`](super::CudaLabeler) on one device
/// (`src/cuda/multi/`):
///
/// 1. Each strip is labeled alone by the crate's kernels ([`Algorithm::Auto`]: bit runs) with
///    raw numbering, open in `y` and with the lattice's `x` boundary, on its own stream
///    (`strip.rs`). Its labels are strip-local roots + 1; the strip's first site index makes
///    them global ids.
/// 2. The two border rows of every strip (labels, and values for segments) are copied to the
///    host. They hold O(width × strips) labels, so the exchange is staged through the host
///    rather than NCCL or peer copies, and the seams' equivalences (8-connectivity: diagonals
///    across seams; the periodic `y` seam between the last and the first strip) are resolved
///    by one union-find over global ids that keeps the smallest id as root (`seam.rs`).
/// 3. Each strip gets the (local root → value) pairs of its *demoted* roots, written into their
///    own slots by a tiny kernel, and one elementwise pass gives every site the value of its
///    root's slot (`numbering.rs`, `kernels/strips.cu`). Raw numbering: the global root + 1, the
///    single device's raw labels. Canonical (scipy) numbering: the strips count and rank their
///    remaining roots, the host scans the counts over strips, and every cluster is numbered by
///    the rank of its smallest site in raster order, the single device's canonical labels.
///
/// Limits: a strip holds fewer than 2^31 sites (more strips are made automatically), canonical
/// labels number fewer than 2^31 clusters, raw labels across strips need fewer than 2^31 sites.
///
/// Device-resident use: [`MultiGpuLabeler::upload`] places the strips on their devices once,
/// [`MultiGpuLabeler::label`] labels them there (the labels stay on the devices), and
/// [`MultiGpuLabeler::download_into`] copies the labels out. [`MultiGpuLabeler::label_host`]
/// does all three.
///
/// ```no_run
/// use clusterlab::cuda::MultiGpuLabeler;
/// use clusterlab::{Boundary, Connectivity};
/// let lattice = ndarray::Array2::<u8>::ones((4096, 4096));
/// // Every visible GPU, one strip each (or, on one GPU, MultiGpuLabeler::loopback(0, 3, ..)).
/// let mut gpus = MultiGpuLabeler::all_devices(Connectivity::Four, Boundary::Periodic)?;
/// let labels = gpus.label_host(lattice.view())?;
/// assert_eq!(labels.count(), 1);
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub struct MultiGpuLabeler {
    devices: Vec<usize>,
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
    algorithm: Algorithm,
    numbering: Numbering,
    split: Split,
    strips: Vec<StripGpu>,
    /// The uploaded lattice: height, width, site type.
    shape: Option<(usize, usize, SiteType)>,
    timings: StripTimings,
}

impl MultiGpuLabeler {
    /// A labeler over `devices` (CUDA ordinals; by default one strip each, in this order top to
    /// bottom). A device may be named more than once: each entry is one strip's device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty list or a device the driver does not list,
    /// [`Error::CudaUnavailable`] when the driver or NVRTC is missing.
    pub fn new(devices: &[usize], connectivity: Connectivity, boundary: Boundary) -> Result<Self> {
        check_devices(devices, "labeling")?;
        Ok(MultiGpuLabeler {
            devices: devices.to_vec(),
            connectivity,
            boundary,
            segments: false,
            algorithm: Algorithm::Auto,
            numbering: Numbering::Canonical,
            split: Split::Auto,
            strips: Vec::new(),
            shape: None,
            timings: StripTimings::default(),
        })
    }

    /// Every device the process sees, one strip each.
    ///
    /// # Errors
    /// As [`MultiGpuLabeler::new`]; [`Error::CudaUnavailable`] when there is no device.
    pub fn all_devices(connectivity: Connectivity, boundary: Boundary) -> Result<Self> {
        Self::new(&all_devices()?, connectivity, boundary)
    }

    /// The loopback transport: `strips` strips, all on device `device`, joined exactly as
    /// strips on several devices are (what the one-GPU tests run).
    ///
    /// # Errors
    /// As [`MultiGpuLabeler::new`]. `strips` is checked against the lattice when labeling.
    pub fn loopback(
        device: usize,
        strips: usize,
        connectivity: Connectivity,
        boundary: Boundary,
    ) -> Result<Self> {
        Ok(Self::new(&[device], connectivity, boundary)?.strips(strips))
    }

    /// `n` strips of (nearly) equal heights, spread over the devices in contiguous blocks
    /// (default: one per device, more when a strip would hold 2^31 sites or more). Checked when
    /// a lattice is uploaded: 0, or more strips than rows, is an [`Error::InvalidArgument`].
    pub fn strips(mut self, n: usize) -> Self {
        self.split = Split::Count(n);
        self
    }

    /// Strips of exactly these heights, top to bottom (they must add up to the lattice's
    /// height, each at least 1, checked when a lattice is uploaded).
    pub fn strip_rows(mut self, rows: &[usize]) -> Self {
        self.split = Split::Rows(rows.to_vec());
        self
    }

    /// Same-value segments: neighbours join only when they hold the same nonzero value.
    pub fn segments(mut self, segments: bool) -> Self {
        self.segments = segments;
        self
    }

    /// The algorithm that labels each strip (as [`CudaLabeler::algorithm`](super::CudaLabeler::algorithm)).
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// The numbering of [`MultiGpuLabeler::label`] and [`MultiGpuLabeler::label_host_into`]
    /// (default [`Numbering::Canonical`]).
    pub fn numbering(mut self, numbering: Numbering) -> Self {
        self.numbering = numbering;
        self
    }

    /// The strips of the uploaded lattice (none before [`MultiGpuLabeler::upload`]).
    pub fn layout(&self) -> Vec<StripInfo> {
        self.strips
            .iter()
            .map(|s| StripInfo {
                y0: s.strip.y0,
                rows: s.strip.rows,
                device: s.ordinal,
            })
            .collect()
    }

    /// Where the time of the last [`MultiGpuLabeler::label`] went.
    pub fn timings(&self) -> StripTimings {
        self.timings
    }

    /// Cuts `lattice` into strips and copies each to its device (allocating what the strips
    /// need there, and compiling the kernels on first use), waiting for the copies.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad strip split (see [`MultiGpuLabeler::strips`]),
    /// [`Error::OutOfDeviceMemory`], [`Error::KernelCompile`], [`Error::Cuda`].
    pub fn upload<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<()> {
        let (h, w) = lattice.dim();
        self.shape = None;
        if h == 0 || w == 0 {
            self.strips.clear();
            self.shape = Some((h, w, SiteType::of::<T>()));
            return Ok(());
        }
        let plan = layout::plan(h, w, self.devices.len(), &self.split)?;
        let same = self.strips.len() == plan.len()
            && self.strips.iter().zip(&plan).all(|(s, p)| s.strip == *p);
        if !same {
            self.strips.clear();
            for p in plan {
                self.strips.push(StripGpu::new(p, self.devices[p.slot])?);
            }
        }
        let kind = Kind {
            site: SiteType::of::<T>(),
            width: w,
            connectivity: self.connectivity,
            boundary: self.boundary,
            segments: self.segments,
            algorithm: self.algorithm,
        };
        let mut staging: Vec<T> = Vec::new();
        for s in &mut self.strips {
            s.prepare(kind)?;
            let rows = lattice.slice(ndarray::s![s.strip.y0..s.strip.y0 + s.strip.rows, ..]);
            match rows.as_slice() {
                Some(contiguous) => s.upload(contiguous)?,
                None => {
                    staging.clear();
                    staging.extend(rows.iter().copied());
                    s.upload(&staging)?;
                }
            }
        }
        self.shape = Some((h, w, kind.site));
        Ok(())
    }

    /// Labels the uploaded lattice on the devices (the labels stay there) and returns the number
    /// of clusters. Waits for the devices; [`MultiGpuLabeler::timings`] says where the time went.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] before any upload, for raw numbering of 2^31 sites or more, or
    /// for canonical numbering of 2^31 clusters or more; [`Error::Cuda`] when a kernel fails.
    pub fn label(&mut self) -> Result<usize> {
        let (h, w, _) = self
            .shape
            .ok_or_else(|| Error::InvalidArgument("MultiGpuLabeler::label before upload".into()))?;
        self.timings = StripTimings::default();
        if self.strips.is_empty() {
            return Ok(0);
        }
        if self.numbering == Numbering::Raw && h * w > MAX_STRIP_SITES {
            return Err(Error::InvalidArgument(format!(
                "raw labels across strips need fewer than 2^31 sites (this lattice has {}); use \
                 Numbering::Canonical",
                h * w
            )));
        }
        let start = Instant::now();
        for s in &mut self.strips {
            s.queue_label()?;
        }
        let mut local = Vec::with_capacity(self.strips.len());
        let mut rows = Vec::with_capacity(self.strips.len());
        let mut copy_ms = 0f64;
        for s in &mut self.strips {
            let (count, r, label_ms, copy) = s.finish_label()?;
            local.push(count);
            rows.push(r);
            self.timings.strips_ms = self.timings.strips_ms.max(label_ms);
            copy_ms = copy_ms.max(copy);
        }
        let joined = Instant::now();
        let edges: Vec<seam::Edges<'_>> = self
            .strips
            .iter()
            .zip(&rows)
            .map(|(s, r)| seam::Edges {
                offset: s.strip.offset(w),
                top: &r.top,
                bottom: &r.bottom,
                top_values: &r.top_values,
                bottom_values: &r.bottom_values,
            })
            .collect();
        let rule = seam::Rule {
            eight: self.connectivity == Connectivity::Eight,
            wrap_x: self.boundary.wraps_x(),
            wrap_y: self.boundary.wraps_y(),
            segments: self.segments,
        };
        let demotions = seam::join(&edges, rule);
        let relabel = Instant::now();
        self.timings.exchange_ms = copy_ms + (relabel - joined).as_secs_f64() * 1e3;
        let count = match self.numbering {
            Numbering::Raw => self.relabel_raw(&demotions, &local, w)?,
            Numbering::Canonical => self.relabel_canonical(&demotions)?,
        };
        for s in &self.strips {
            s.sync()?;
        }
        let end = Instant::now();
        self.timings.relabel_ms = (end - relabel).as_secs_f64() * 1e3;
        self.timings.total_ms = (end - start).as_secs_f64() * 1e3;
        Ok(count)
    }

    /// Raw numbering's relabeling; the count is the strips' local clusters less the demoted.
    fn relabel_raw(
        &mut self,
        demotions: &[Vec<seam::Demotion>],
        local: &[usize],
        w: usize,
    ) -> Result<usize> {
        for (s, d) in self.strips.iter_mut().zip(demotions) {
            let flagged = numbering::raw_pairs(d, true);
            let plain = numbering::raw_pairs(d, false);
            s.queue_raw(&flagged, &plain, s.strip.offset(w) as u32)?;
        }
        let demoted: usize = demotions.iter().map(Vec::len).sum();
        Ok(local.iter().sum::<usize>() - demoted)
    }

    /// Canonical numbering's relabeling: ranks per strip, the scan over strips, the numbers.
    fn relabel_canonical(&mut self, demotions: &[Vec<seam::Demotion>]) -> Result<usize> {
        let targets = numbering::targets(demotions);
        for (i, s) in self.strips.iter_mut().enumerate() {
            let marks: Vec<[u32; 2]> = demotions[i]
                .iter()
                .map(|d| [d.local, numbering::FLAG])
                .collect();
            s.queue_rank(&marks, &targets[i])?;
        }
        let mut counts = Vec::with_capacity(self.strips.len());
        let mut gathered = Vec::with_capacity(self.strips.len());
        for (i, s) in self.strips.iter_mut().enumerate() {
            let (c, g) = s.finish_rank(targets[i].len())?;
            counts.push(c);
            gathered.push(g);
        }
        let (first, total) = numbering::exclusive_scan(&counts)?;
        for (i, s) in self.strips.iter_mut().enumerate() {
            let pairs = numbering::canonical_pairs(i, &demotions[i], &targets, &gathered, &first);
            s.queue_final(&pairs, first[i] as u32)?;
        }
        Ok(total as usize)
    }

    /// Copies the labels of the last [`MultiGpuLabeler::label`] into `out`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` does not have the uploaded lattice's shape,
    /// [`Error::InvalidArgument`] before any upload, [`Error::Cuda`].
    pub fn download_into(&mut self, mut out: ArrayViewMut2<'_, u32>) -> Result<()> {
        let (h, w, _) = self.shape.ok_or_else(|| {
            Error::InvalidArgument("MultiGpuLabeler::download_into before upload".into())
        })?;
        if out.dim() != (h, w) {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [out.nrows(), out.ncols()],
            });
        }
        let mut staging: Vec<u32> = Vec::new();
        for s in &mut self.strips {
            let (y0, rows) = (s.strip.y0, s.strip.rows);
            let mut part = out.slice_mut(ndarray::s![y0..y0 + rows, ..]);
            match part.as_slice_mut() {
                Some(contiguous) => s.download(contiguous)?,
                None => {
                    staging.resize(rows * w, 0);
                    s.download(&mut staging)?;
                    part.iter_mut().zip(&staging).for_each(|(d, &v)| *d = v);
                }
            }
        }
        Ok(())
    }

    /// Labels a host lattice: upload, label and download, numbered as
    /// [`MultiGpuLabeler::numbering`] says; returns the number of clusters.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` does not have the lattice's shape, and the errors of
    /// [`MultiGpuLabeler::upload`] and [`MultiGpuLabeler::label`].
    pub fn label_host_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        out: ArrayViewMut2<'_, u32>,
    ) -> Result<usize> {
        if out.dim() != lattice.dim() {
            return Err(Error::ShapeMismatch {
                expected: [lattice.nrows(), lattice.ncols()],
                found: [out.nrows(), out.ncols()],
            });
        }
        self.upload(lattice)?;
        let count = self.label()?;
        self.download_into(out)?;
        Ok(count)
    }

    /// Labels a host lattice with canonical numbering (whatever [`MultiGpuLabeler::numbering`]
    /// says: [`Labels`] are numbered `1..=count`).
    ///
    /// # Errors
    /// As [`MultiGpuLabeler::label_host_into`].
    pub fn label_host<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<Labels> {
        let numbering = std::mem::replace(&mut self.numbering, Numbering::Canonical);
        let mut array = Array2::zeros(lattice.dim());
        let count = self.label_host_into(lattice, array.view_mut());
        self.numbering = numbering;
        Ok(Labels {
            array,
            count: count?,
        })
    }
}
