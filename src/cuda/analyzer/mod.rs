//! Cluster analysis on an NVIDIA GPU (feature `cuda`): [`CudaAnalyzer`].
//!
//! The lattice is labeled with open boundaries by bit runs (the GPU fast path) and the features
//! are summed as the clusters are found (HA4's analysis, after Hennequin et al.): each 32 × 1024
//! tile sums its components' exact integer features (size, bounding box, `Σx`, `Σy`, `Σx²`,
//! `Σy²`) in shared memory and writes one record per component; once the seams are merged and
//! the roots ranked in raster order (the CPU's piece numbering), the records go into their
//! pieces' accumulators, plainly for components inside a tile and with warp-grouped atomics for
//! those on its edges. No label image is written unless asked for. Devices whose blocks cannot
//! have bit runs' shared memory use block union-find's forest and sum the features run by run
//! with atomics.
//!
//! Periodic axes: the pieces are joined across the seams on the host by the same
//! displacement-tracking union-find as the CPU's, fed only with the labels of the `2(h + w)` edge
//! sites, and their sums are merged with the shifts it finds; so the table is identical to the
//! CPU's, including unwrapped coordinates and winding-based wrapping.
//!
//! [`CudaAnalyzer::size_counts`] skips the table: a device-resident histogram of the sizes of
//! the pieces off the periodic seams (exact up to 1024 sites, larger and spanning ones listed),
//! plus the seam pieces joined across the periodic edges, gives `n_s` and the wrapping /
//! spanning flags. On bit runs it runs the labeling's tiles and raw forest, not the table's: the
//! tile pass counts its interior components and keeps each edge component's size, the flatten
//! adds those into the global roots, and no ranking or records are made; the seams are joined on
//! the device too, by a union-find with shifts over the pieces on the wrapped edges (the host
//! joins them from the edge sites' pieces for the other families, and where the device's
//! shifts would overflow 16 bits).
//!
//! [`CudaAnalyzer::analyze_all`] adds the perimeters, hulls and filled areas ([`Measures::All`])
//! for lattices with open boundaries, on the device too ([`full`]). [`crate::Analyzer`] with a
//! CUDA backend takes that path for open occupancy lattices; for periodic ones or segments it
//! labels the lattice and its complement on the GPU and measures the perimeters and filled
//! areas on the CPU.

// n_s and flags without a table, and the labeling backend's entry to them.
mod counts;
// Measures::All tables: perimeters, hulls and filled areas on the device.
mod full;
pub(crate) use counts::{merge_counts, size_counts_into};

use super::analysis::{DeviceAnalysis, PieceRow, BORDER_WORDS, HIST_CAP};
use crate::core::lattice::{check_size, Input};
use crate::core::options::Spec;
use crate::core::size_counts::{PercolatingCluster, SizeCounts};
use crate::measure::compose::{compose, Columns, Pieces};
use crate::measure::moments::Moments;
use crate::measure::wrapping::{Joined, WRAP_X, WRAP_Y};
use crate::measure::Measures;
use crate::ClusterTable;
use crate::{Boundary, Connectivity, SiteValue};
use crate::{Error, Labels, Result};
use cudarc::driver::{result as dres, CudaStream, DevicePtr};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use std::sync::Arc;

/// What the last queued run will give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Table {
        labels: bool,
    },
    Counts,
    /// The open-boundary pieces and their edge sites, for a caller that joins them itself.
    Pieces,
}

/// A GPU cluster-analysis plan (feature `cuda`): connectivity and boundary, with its device,
/// stream, kernels and buffers kept between calls. Occupancy lattices (nonzero = occupied),
/// [`Measures::Shape`] columns, tables identical to the CPU's [`crate::Analyzer`].
///
/// ```no_run
/// use clusterlab::cuda::CudaAnalyzer;
/// use clusterlab::{Boundary, Connectivity};
/// use ndarray::Array2;
///
/// let mut gpu = CudaAnalyzer::new(0, Connectivity::Four, Boundary::Periodic)?;
/// let lattice = Array2::<u8>::ones((512, 512));
/// let table = gpu.analyze(lattice.view())?;
/// assert!(table.wraps_x[0] && table.wraps_y[0]);
/// let counts = gpu.size_counts(lattice.view())?;
/// assert_eq!(counts.counts, vec![(512 * 512, 1)]);
/// # Ok::<(), clusterlab::Error>(())
/// ```
///
/// Device memory (bit runs): the label array, which is also the forest (4 bytes per site), and,
/// per possible piece (one per two sites of a tile row), a 24-byte component record and a 64-byte
/// row of accumulators — about 48 bytes per site in all — plus bit runs' scratch (two bits per
/// site) and the staged input for host lattices. With block union-find (GPUs without bit runs'
/// shared memory): its forest and scratch and 64 bytes per union-find block (2×1 sites with
/// 4-connectivity, 2×2 with 8), plus 4 bytes per site when labels are asked for. On the host,
/// the pieces' rows are downloaded into pinned memory kept between calls (64 bytes a piece).
pub struct CudaAnalyzer {
    dev: DeviceAnalysis,
    pending: Option<Pending>,
    joined: Joined,
    staging: Vec<u8>,
    /// The size counts' seam pieces, kept between calls.
    seam: counts::SeamNodes,
    /// The complement's analysis and the perimeter kernels, made on the first
    /// [`CudaAnalyzer::analyze_all`].
    perimeters: Option<super::perimeters::DevicePerimeters>,
    /// [`CudaAnalyzer::queue_all`] queued the perimeters too.
    all_pending: bool,
    /// Pieces of the last table, for the next one's columns, made while the device works.
    last_pieces: usize,
}

/// Index of edge site `(y, x)` in `ana_border`'s output.
pub(crate) use crate::measure::wrapping::edge_index;

impl CudaAnalyzer {
    /// An analyzer on GPU `device` with a stream of its own.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when the driver, NVRTC or the device is missing (never a
    /// panic), [`Error::Cuda`] when the driver fails.
    pub fn new(device: usize, connectivity: Connectivity, boundary: Boundary) -> Result<Self> {
        Ok(CudaAnalyzer {
            dev: DeviceAnalysis::new(device, connectivity, boundary)?,
            pending: None,
            joined: Joined::parallel(),
            staging: Vec::new(),
            seam: counts::SeamNodes::default(),
            perimeters: None,
            all_pending: false,
            last_pieces: 0,
        })
    }

    /// An analyzer that queues its work on `stream` (another worker's), so that what was queued
    /// there before (a lattice generated on the device) is done before the analysis starts.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::new`].
    pub(crate) fn with_stream(
        stream: Arc<CudaStream>,
        connectivity: Connectivity,
        boundary: Boundary,
    ) -> Result<Self> {
        let gpu = super::runtime::Gpu::with_stream(stream)?;
        Ok(CudaAnalyzer {
            dev: DeviceAnalysis::with_gpu(gpu, connectivity, boundary),
            pending: None,
            joined: Joined::parallel(),
            staging: Vec::new(),
            seam: counts::SeamNodes::default(),
            perimeters: None,
            all_pending: false,
            last_pieces: 0,
        })
    }

    /// [`CudaAnalyzer::queue_size_counts`] for `height × width` byte sites (nonzero = occupied)
    /// at the raw device address `ptr` of this analyzer's context.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::queue_table`].
    pub(crate) fn queue_size_counts_at(
        &mut self,
        ptr: u64,
        height: usize,
        width: usize,
    ) -> Result<()> {
        check_size(height, width)?;
        self.queue_ptr::<u8>(ptr, height, width, Pending::Counts)
    }

    /// An analyzer on a device the front end resolved.
    pub(crate) fn on(
        device: &crate::cuda::CudaDevice,
        connectivity: Connectivity,
        boundary: Boundary,
    ) -> Result<Self> {
        Self::new(device.ordinal(), connectivity, boundary)
    }

    /// The stream the analyzer queues its work on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.dev.gpu().stream
    }

    /// The neighbourhood.
    pub fn connectivity(&self) -> Connectivity {
        self.dev.connectivity
    }

    /// The boundary.
    pub fn boundary(&self) -> Boundary {
        self.dev.boundary
    }

    /// Copies a host lattice to the device's input buffer.
    fn upload<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>, labels: bool) -> Result<()> {
        let (h, w) = lattice.dim();
        check_size(h, w)?;
        let job = self.dev.job::<T>(h, w)?;
        self.dev.prepare(&job, labels, true)?;
        let n = h * w;
        if n == 0 {
            return Ok(());
        }
        let bytes = n * std::mem::size_of::<T>();
        self.staging.resize(bytes, 0);
        // SAFETY: `staging` holds `bytes` bytes, exactly `n` values of the plain integer `T`.
        let dst: &mut [T] =
            unsafe { std::slice::from_raw_parts_mut(self.staging.as_mut_ptr().cast::<T>(), n) };
        match lattice.as_slice() {
            Some(s) => dst.copy_from_slice(s),
            None => dst
                .iter_mut()
                .zip(lattice.iter())
                .for_each(|(d, &s)| *d = s),
        }
        let gpu = self.dev.gpu();
        // SAFETY: the device input holds at least `bytes` bytes; the stream is synchronised
        // before `staging` can change.
        unsafe {
            dres::memcpy_htod_async(
                self.dev.input.ptr,
                &self.staging[..],
                gpu.stream.cu_stream(),
            )
            .map_err(|e| Error::Cuda(format!("copying the lattice to the GPU: {e:?}")))?;
        }
        gpu.sync()
    }

    /// The [`Measures::Shape`] table of a host lattice (no label image is written).
    ///
    /// # Errors
    /// [`Error::TooManySites`], [`Error::InvalidArgument`] for lattices of 2^31 sites or more
    /// (or whose sums of squares could overflow 64 bits), [`Error::OutOfDeviceMemory`],
    /// [`Error::KernelCompile`], [`Error::Cuda`].
    pub fn analyze<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<ClusterTable> {
        self.analyze_reusing(lattice, None)
    }

    /// [`CudaAnalyzer::analyze`], into the columns' memory of `reuse` when given (see
    /// [`CudaAnalyzer::finish_table_into`]).
    pub(crate) fn analyze_reusing<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        reuse: Option<&mut ClusterTable>,
    ) -> Result<ClusterTable> {
        self.upload(lattice, false)?;
        let (h, w) = lattice.dim();
        self.queue_ptr::<T>(self.dev.input.ptr, h, w, Pending::Table { labels: false })?;
        self.finish_table_with(reuse)
    }

    /// The [`Measures::Shape`] table and the labels (`1..=n` in raster order, as the CPU's) of
    /// a host lattice.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::analyze`].
    pub fn analyze_labeled<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
    ) -> Result<(ClusterTable, Labels)> {
        self.upload(lattice, true)?;
        let (h, w) = lattice.dim();
        self.queue_ptr::<T>(self.dev.input.ptr, h, w, Pending::Table { labels: true })?;
        let table = self.finish_table()?;
        let n = h * w;
        let mut flat = if n == 0 {
            Vec::new()
        } else {
            self.dev.labels(n)?
        };
        if self.dev.boundary != Boundary::Open && n > 0 {
            // (The table's join leaves the per-piece map to those who need it.)
            self.joined.fill_map();
            let map = &self.joined.map;
            flat.par_chunks_mut(w.max(1)).for_each(|row| {
                for v in row {
                    *v = map[*v as usize];
                }
            });
        }
        let array = Array2::from_shape_vec((h, w), flat)
            .map_err(|e| Error::InvalidArgument(format!("label array: {e}")))?;
        let count = table.count();
        Ok((table, Labels { array, count }))
    }

    /// `n_s` and the wrapping / spanning flags of a host lattice, without a table.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::analyze`].
    pub fn size_counts<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<SizeCounts> {
        self.upload(lattice, false)?;
        let (h, w) = lattice.dim();
        self.queue_ptr::<T>(self.dev.input.ptr, h, w, Pending::Counts)?;
        self.finish_size_counts()
    }

    /// Queues the analysis of a `height × width` lattice already on this analyzer's device
    /// (row-major) and returns without waiting; [`CudaAnalyzer::finish_table`] waits and builds
    /// the table. Until then everything stays on the device (the pieces' accumulators), so the
    /// caller can time the device work with events on [`CudaAnalyzer::stream`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the buffer does not hold `height * width` sites, and as
    /// [`CudaAnalyzer::analyze`].
    pub fn queue_table<T: SiteValue, I: DevicePtr<T>>(
        &mut self,
        input: &I,
        height: usize,
        width: usize,
    ) -> Result<()> {
        let ptr = self.device_input(input, height, width)?;
        self.queue_ptr::<T>(ptr, height, width, Pending::Table { labels: false })
    }

    /// Queues `n_s` and the flags for a lattice on the device (see
    /// [`CudaAnalyzer::queue_table`]); [`CudaAnalyzer::finish_size_counts`] collects them.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::queue_table`].
    pub fn queue_size_counts<T: SiteValue, I: DevicePtr<T>>(
        &mut self,
        input: &I,
        height: usize,
        width: usize,
    ) -> Result<()> {
        let ptr = self.device_input(input, height, width)?;
        self.queue_ptr::<T>(ptr, height, width, Pending::Counts)
    }

    fn device_input<T: SiteValue, I: DevicePtr<T>>(
        &mut self,
        input: &I,
        height: usize,
        width: usize,
    ) -> Result<u64> {
        check_size(height, width)?;
        if input.len() != height * width {
            return Err(Error::InvalidArgument(format!(
                "a {height}×{width} lattice needs {} sites, got a buffer of {}",
                height * width,
                input.len()
            )));
        }
        let stream = self.dev.gpu().stream.clone();
        let (ptr, _sync) = input.device_ptr(&stream);
        Ok(ptr)
    }

    fn queue_ptr<T: SiteValue>(
        &mut self,
        input: u64,
        h: usize,
        w: usize,
        what: Pending,
    ) -> Result<()> {
        self.all_pending = false;
        let job = self.dev.job::<T>(h, w)?;
        let periodic = self.dev.boundary != Boundary::Open;
        let labels = match what {
            Pending::Table { labels: true } => {
                self.dev.prepare(&job, true, false)?;
                self.dev.labels.ptr
            }
            _ => 0,
        };
        let table = matches!(what, Pending::Table { .. });
        self.dev
            .queue(&job, input, labels, table, periodic, !table)?;
        self.pending = Some(what);
        Ok(())
    }

    fn take_pending(&mut self, want_table: bool) -> Result<()> {
        match self.pending.take() {
            Some(Pending::Table { .. }) if want_table => Ok(()),
            Some(Pending::Counts) if !want_table => Ok(()),
            _ => Err(Error::InvalidArgument(
                "nothing of that kind was queued on this analyzer".into(),
            )),
        }
    }

    /// Uploads a host lattice and queues its pieces with open boundaries (whatever this
    /// analyzer's boundary) and the pieces of its edge sites; [`CudaAnalyzer::finish_pieces`]
    /// collects them. The multi-GPU analyzer joins the strips' pieces this way.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::analyze`].
    pub(crate) fn queue_pieces<T: SiteValue>(&mut self, lattice: ArrayView2<'_, T>) -> Result<()> {
        self.upload(lattice, false)?;
        let (h, w) = lattice.dim();
        let job = self.dev.job::<T>(h, w)?;
        let input = self.dev.input.ptr;
        self.dev.queue(&job, input, 0, true, true, false)?;
        self.pending = Some(Pending::Pieces);
        Ok(())
    }

    /// Waits for [`CudaAnalyzer::queue_pieces`] and returns each piece's moments (piece `i + 1`
    /// at index `i`, numbered in raster order of its first site) and the piece of every edge
    /// site (0 = empty), in `ana_border`'s order: rows 0 and `h − 1`, then columns 0 and `w − 1`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no pieces were queued, [`Error::Cuda`] when the kernels
    /// or the copies failed.
    pub(crate) fn finish_pieces(&mut self) -> Result<(Vec<Moments>, Vec<u32>)> {
        if self.pending.take() != Some(Pending::Pieces) {
            return Err(Error::InvalidArgument(
                "no pieces were queued on this analyzer".into(),
            ));
        }
        self.dev.queue_border(false)?;
        let np = self.dev.count()?;
        self.dev.queue_rows(np)?;
        let moments = self.dev.rows(np)?[1..]
            .iter()
            .map(PieceRow::moments)
            .collect();
        let edges = self.dev.border(false)?.to_vec();
        Ok((moments, edges))
    }

    /// Waits for the analysis queued by [`CudaAnalyzer::queue_table`] and builds its table.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no table was queued, [`Error::Cuda`] when the kernels or
    /// the copies failed.
    pub fn finish_table(&mut self) -> Result<ClusterTable> {
        self.finish_table_with(None)
    }

    /// As [`CudaAnalyzer::finish_table`], into `table`, whose columns' memory the new table
    /// reuses: a loop that keeps one table across timesteps pays no page faults for its columns
    /// (a new table's pages are faulted in afresh, the larger part of the host's work on some
    /// machines). `table` keeps the memory of the largest table it held. On an error `table` may
    /// be left with empty columns.
    ///
    /// # Errors
    /// As [`CudaAnalyzer::finish_table`].
    pub fn finish_table_into(&mut self, table: &mut ClusterTable) -> Result<()> {
        *table = self.finish_table_with(Some(table))?;
        Ok(())
    }

    /// [`CudaAnalyzer::analyze`] into `table` (see [`CudaAnalyzer::finish_table_into`]).
    ///
    /// # Errors
    /// As [`CudaAnalyzer::analyze`].
    pub fn analyze_into<T: SiteValue>(
        &mut self,
        lattice: ArrayView2<'_, T>,
        table: &mut ClusterTable,
    ) -> Result<()> {
        *table = self.analyze_reusing(lattice, Some(table))?;
        Ok(())
    }

    /// The table of the queued analysis, into the memory of `reuse`'s columns when given, else
    /// into columns made while the device works.
    fn finish_table_with(&mut self, reuse: Option<&mut ClusterTable>) -> Result<ClusterTable> {
        self.take_pending(true)?;
        let job = self
            .dev
            .job
            .ok_or_else(|| Error::InvalidArgument("nothing queued".into()))?;
        let (h, w) = (job.height, job.width);
        let (connectivity, boundary) = (self.dev.connectivity, self.dev.boundary);
        if h == 0 || w == 0 {
            return Ok(ClusterTable::empty(
                (h, w),
                connectivity,
                boundary,
                false,
                Measures::Shape,
            ));
        }
        let periodic = boundary != Boundary::Open;
        if periodic {
            self.dev.queue_border(false)?;
        }
        // The device part's end: the count, the rows' download (one contiguous copy into
        // pinned memory) queued, and on a torus the edge sites' pieces joined. Beside it the
        // host faults in the table's columns: while the device still works (a table queued just
        // before, as `analyze` does) for as many pieces as the last table's and a few more (a
        // timestep's count is close to the one before), or, on the first table, once the count
        // is known.
        let (dev, joined) = (&mut self.dev, &mut self.joined);
        let last = self.last_pieces;
        // The count, the rows' download queued, the torus's join.
        let mut settle = || -> Result<usize> {
            let np = dev.count()?;
            dev.queue_rows(np)?;
            if periodic {
                let b = dev.border(false)?;
                joined.join_edges((h, w), np, connectivity, boundary, b, false);
            }
            Ok(np)
        };
        let (np, columns) = if let Some(t) = reuse {
            let np = settle()?;
            (np, Columns::reclaim(t, np))
        } else if last > 0 {
            let (ahead, np) = rayon::join(|| Columns::new(last + last / 64 + 64, true), settle);
            let np = np?;
            // Columns made ahead for a table much smaller are not kept in it.
            let fits = ahead.len() >= np && ahead.len() / 2 <= np;
            (np, if fits { ahead } else { Columns::new(np, true) })
        } else {
            let np = dev.count()?;
            dev.queue_rows(np)?;
            let columns = if periodic {
                let b = dev.border(false)?;
                rayon::join(
                    || joined.join_edges((h, w), np, connectivity, boundary, b, false),
                    || Columns::new(np, true),
                )
                .1
            } else {
                Columns::new(np, true)
            };
            (np, columns)
        };
        self.last_pieces = np;
        // (The columns are made for every piece, a cluster has one or more: those of the
        // pieces joined into others stay allocated, unused.)
        let joined = if periodic {
            Some(&self.joined)
        } else {
            self.joined.map.clear();
            None
        };
        let rows = self.dev.rows(np)?;
        let table = compose(
            Some(columns),
            (h, w),
            connectivity,
            boundary,
            false,
            np,
            rows,
            joined,
            true,
        );
        Ok(table)
    }
}

/// Rows by label: row `p` is piece `p`'s (row 0 unused), as downloaded.
impl Pieces for [PieceRow] {
    #[inline]
    fn moments(&self, p: usize) -> Moments {
        self[p].moments()
    }
}
