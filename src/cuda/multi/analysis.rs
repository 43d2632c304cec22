//! [`MultiGpuAnalyzer`]: the cluster table and `n_s` of one lattice analysed in horizontal
//! strips on several GPUs (or several strips on one GPU), identical to one device's and the CPU's.

use super::layout::{self, Split, Strip};
use super::{all_devices, check_devices, StripInfo};
use crate::core::lattice::check_size;
use crate::core::size_counts::{PercolatingCluster, SizeCounts};
use crate::cuda::analysis::HIST_CAP;
use crate::cuda::analyzer::{edge_index, merge_counts, CudaAnalyzer};
use crate::measure::compose::{Builder, Sums};
use crate::measure::moments::Moments;
use crate::measure::wrapping::Joined;
use crate::measure::Measures;
use crate::{Boundary, ClusterTable, Connectivity, Error, Result, SiteValue};
use ndarray::{s, ArrayView2};
use std::time::Instant;

/// One strip's pieces: their moments (piece `i + 1` at `i`) and the piece of each edge site.
type StripPieces = (Vec<Moments>, Vec<u32>);

/// Where the time of the last [`MultiGpuAnalyzer::analyze`] went, in milliseconds (wall time).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AnalysisTimings {
    /// The whole call.
    pub total_ms: f64,
    /// Uploading the strips and queueing their analyses, one host thread per strip (the
    /// slowest).
    pub upload_ms: f64,
    /// Then waiting for the strips and downloading their pieces and edge sites.
    pub strips_ms: f64,
    /// The host's join of the pieces across the seams and the periodic edges, and the table.
    pub join_ms: f64,
}

/// Analyses one lattice in horizontal strips over several GPUs (or several strips on one GPU,
/// the loopback used by the one-GPU tests), giving exactly the [`Measures::Shape`] table of
/// [`CudaAnalyzer`] and of the CPU's [`crate::Analyzer`] (occupancy lattices).
///
/// Each strip is analysed alone by a [`CudaAnalyzer`] with open boundaries: its pieces'
/// exact integer moments and the pieces of its edge sites come back to the host. The pieces are
/// then joined by the same displacement-tracking union-find that joins one device's pieces
/// across the periodic edges, fed with two kinds of links: the seams between strips (a strip's
/// last row against the next strip's first, no period crossed) and the lattice's periodic edges
/// (each strip's first and last columns; the last strip's last row against the first strip's
/// first). So clusters that cross strips, wrap by winding, or both, get the single device's
/// numbering, unwrapped coordinates and flags. Only `O((h + w) · strips)` edge labels and the
/// pieces' moments cross to the host; no label image is written.
///
/// ```no_run
/// use clusterlab::cuda::MultiGpuAnalyzer;
/// use clusterlab::{Boundary, Connectivity};
/// let lattice = ndarray::Array2::<u8>::ones((4096, 4096));
/// let mut gpus = MultiGpuAnalyzer::all_devices(Connectivity::Four, Boundary::Periodic)?;
/// let table = gpus.analyze(lattice.view())?;
/// assert!(table.wraps_x[0] && table.wraps_y[0]);
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub struct MultiGpuAnalyzer {
    devices: Vec<usize>,
    connectivity: Connectivity,
    boundary: Boundary,
    split: Split,
    strips: Vec<(Strip, CudaAnalyzer)>,
    joined: Joined,
    sums: Vec<Sums>,
    timings: AnalysisTimings,
}

impl MultiGpuAnalyzer {
    /// An analyzer over `devices` (CUDA ordinals, one strip each by default, top to bottom; a
    /// device may be named more than once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty list or a device the driver does not list,
    /// [`Error::CudaUnavailable`] when the driver or NVRTC is missing.
    pub fn new(devices: &[usize], connectivity: Connectivity, boundary: Boundary) -> Result<Self> {
        check_devices(devices, "analysis")?;
        Ok(MultiGpuAnalyzer {
            devices: devices.to_vec(),
            connectivity,
            boundary,
            split: Split::Auto,
            strips: Vec::new(),
            joined: Joined::default(),
            sums: Vec::new(),
            timings: AnalysisTimings::default(),
        })
    }

    /// Every device the process sees, one strip each.
    ///
    /// # Errors
    /// As [`MultiGpuAnalyzer::new`]; [`Error::CudaUnavailable`] when there is no device.
    pub fn all_devices(connectivity: Connectivity, boundary: Boundary) -> Result<Self> {
        Self::new(&all_devices()?, connectivity, boundary)
    }

    /// The loopback: `strips` strips, all on device `device`, joined exactly as strips on
    /// several devices are.
    ///
    /// # Errors
    /// As [`MultiGpuAnalyzer::new`]. `strips` is checked against the lattice.
    pub fn loopback(
        device: usize,
        strips: usize,
        connectivity: Connectivity,
        boundary: Boundary,
    ) -> Result<Self> {
        Ok(Self::new(&[device], connectivity, boundary)?.strips(strips))
    }

    /// `n` strips of (nearly) equal heights over the devices (as
    /// [`MultiGpuLabeler::strips`](super::MultiGpuLabeler::strips)).
    pub fn strips(mut self, n: usize) -> Self {
        self.split = Split::Count(n);
        self
    }

    /// Strips of exactly these heights, top to bottom.
    pub fn strip_rows(mut self, rows: &[usize]) -> Self {
        self.split = Split::Rows(rows.to_vec());
        self
    }

    /// The strips of the last lattice.
    pub fn layout(&self) -> Vec<StripInfo> {
        self.strips
            .iter()
            .map(|(s, _)| StripInfo {
                y0: s.y0,
                rows: s.rows,
                device: self.devices[s.slot],
            })
            .collect()
    }

    /// Where the time of the last [`MultiGpuAnalyzer::analyze`] went.
    pub fn timings(&self) -> AnalysisTimings {
        self.timings
    }

    /// The [`Measures::Shape`] table of `lattice` (nonzero = occupied).
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond [`MAX_SITES`](crate::MAX_SITES), [`Error::InvalidArgument`]
    /// for a bad strip split, [`Error::OutOfDeviceMemory`], [`Error::KernelCompile`],
    /// [`Error::Cuda`].
    pub fn analyze<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<ClusterTable> {
        let started = Instant::now();
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        if h == 0 || w == 0 {
            return Ok(ClusterTable::empty(
                (h, w),
                self.connectivity,
                self.boundary,
                false,
                Measures::Shape,
            ));
        }
        let plan = layout::plan(h, w, self.devices.len(), &self.split)?;
        let same = self.strips.len() == plan.len()
            && self.strips.iter().zip(&plan).all(|((s, _), p)| s == p);
        if !same {
            self.strips.clear();
            for p in plan {
                let gpu =
                    CudaAnalyzer::new(self.devices[p.slot], self.connectivity, Boundary::Open)?;
                self.strips.push((p, gpu));
            }
        }
        // One host thread per strip: the uploads, the waits and the downloads of the pieces
        // (the host side of each strip's analysis) overlap across devices.
        let results: Vec<Result<(StripPieces, f64)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .strips
                .iter_mut()
                .map(|(strip, gpu)| {
                    let part = lattice.slice(s![strip.y0..strip.y0 + strip.rows, ..]);
                    scope.spawn(move || {
                        gpu.queue_pieces(part)?;
                        let queued = started.elapsed().as_secs_f64() * 1e3;
                        Ok((gpu.finish_pieces()?, queued))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Cuda("a strip's analysis thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut pieces = Vec::with_capacity(results.len());
        let mut upload_ms = 0f64;
        for r in results {
            let (p, queued) = r?;
            upload_ms = upload_ms.max(queued);
            pieces.push(p);
        }
        let collected = Instant::now();
        let table = self.join((h, w), &pieces)?;
        let done = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        self.timings = AnalysisTimings {
            total_ms: ms(started, done),
            upload_ms,
            strips_ms: ms(started, collected) - upload_ms,
            join_ms: ms(collected, done),
        };
        Ok(table)
    }

    /// `n_s` and the wrapping / spanning clusters of `lattice`, from its table.
    ///
    /// # Errors
    /// As [`MultiGpuAnalyzer::analyze`].
    pub fn size_counts<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<SizeCounts> {
        let table = self.analyze(lattice)?;
        let mut out = SizeCounts {
            shape: lattice.dim(),
            ..SizeCounts::default()
        };
        for i in 0..table.count() {
            let size = table.size[i];
            let p = PercolatingCluster {
                size,
                wraps_x: table.wraps_x[i],
                wraps_y: table.wraps_y[i],
                spans_x: table.spans_x[i],
                spans_y: table.spans_y[i],
            };
            if p.wraps_x || p.wraps_y || p.spans_x || p.spans_y {
                out.percolating.push(p);
            }
        }
        // The sizes through one device's histogram range, the larger ones sorted.
        out.counts = merge_counts(&[0; HIST_CAP + 1], table.size.iter().copied());
        out.percolating.sort_unstable();
        Ok(out)
    }

    /// Joins the strips' pieces (numbered strip after strip, so in raster order of their first
    /// sites) across the seams and the periodic edges, and builds the table.
    fn join(&mut self, (h, w): (usize, usize), pieces: &[StripPieces]) -> Result<ClusterTable> {
        // Piece ids are global: strip k's piece i is offset[k] + i.
        let mut offset = Vec::with_capacity(pieces.len());
        let mut total = 0u64;
        for (m, _) in pieces {
            offset.push(total as u32);
            total += m.len() as u64;
        }
        if total >= u64::from(u32::MAX) {
            return Err(Error::InvalidArgument(format!(
                "{total} pieces over the strips: the join numbers fewer than 2^32 − 1"
            )));
        }
        let strips: Vec<Strip> = self.strips.iter().map(|(s, _)| *s).collect();
        // The strip of every row, for the periodic edges' sites.
        let mut strip_of = vec![0u32; h];
        for (k, s) in strips.iter().enumerate() {
            strip_of[s.y0..s.y0 + s.rows].fill(k as u32);
        }
        let piece_at = |(y, x): (usize, usize)| -> u32 {
            let k = strip_of[y] as usize;
            let s = strips[k];
            let p = pieces[k].1[edge_index((s.rows, w), (y - s.y0, x))];
            if p == 0 {
                0
            } else {
                offset[k] + p
            }
        };
        // The seams between strips: the last row of one against the first row of the next,
        // straight down and (8-connectivity) diagonally, never across a period: those links
        // crossing the periodic x edge are among the wrap links below.
        let diagonals: &[isize] = match self.connectivity {
            Connectivity::Four => &[0],
            Connectivity::Eight => &[-1, 0, 1],
        };
        let mut seams = Vec::new();
        for strip in strips.iter().skip(1) {
            let y = strip.y0;
            let mut last = None;
            for x in 0..w {
                let a = piece_at((y - 1, x));
                if a == 0 {
                    continue;
                }
                for &d in diagonals {
                    let tx = x as isize + d;
                    if tx < 0 || tx >= w as isize {
                        continue;
                    }
                    let b = piece_at((y, tx as usize));
                    // Along a seam most links repeat the one before.
                    if b != 0 && last != Some((a, b)) {
                        seams.push((a, b));
                        last = Some((a, b));
                    }
                }
            }
        }
        let npieces = total as usize;
        self.joined.join_with_seams(
            h,
            w,
            npieces,
            self.connectivity,
            self.boundary,
            &seams,
            |s, t, _| {
                let (a, b) = (piece_at(s), piece_at(t));
                (a != 0 && b != 0).then_some((a, b))
            },
        );
        let count = self.joined.count;
        let mut builder = Builder::new(
            (h, w),
            self.connectivity,
            self.boundary,
            false,
            Measures::Shape,
            count,
            std::mem::take(&mut self.sums),
        );
        for c in 1..=count {
            builder.set_wraps(c as u32, self.joined.wraps[c]);
        }
        for (k, (moments, _)) in pieces.iter().enumerate() {
            let y0 = strips[k].y0 as u32;
            for (i, m) in moments.iter().enumerate() {
                let g = offset[k] as usize + i + 1;
                builder.add_piece(
                    self.joined.map[g],
                    &m.translated_y(y0),
                    self.joined.shift[g],
                );
            }
        }
        Ok(builder.finish(true, None, &mut self.sums))
    }
}
