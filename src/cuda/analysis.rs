//! The device side of GPU cluster analysis (`kernels/analysis.cu`): the pieces (clusters with
//! open boundaries) ranked in raster order, and their features accumulated as they are found.
//! On the fast path, bit runs' tile pass sums each tile's components in shared memory and one
//! record per component is added into its piece (`ana_records`); devices whose blocks cannot
//! have bit runs' shared memory use block union-find's forest and sum the features run by run
//! with atomics (`ana_runs`). [`crate::analysis::CudaAnalyzer`] turns what this queues and
//! downloads into tables.

use super::bit_runs::{self, Records};

// Bit runs' size counts: n_s and the flags from the labeling's forest.
mod counts;
use super::canonical::Geo;
use super::engine::{family_of, Engine, Job};
use super::family::{Family, LabelWidth, SiteType};
use super::runtime::{cuda_err, kernel_args, DevBuf, Gpu, PinnedBuf};
use super::Numbering;
use crate::lattice::{Boundary, Connectivity};
use crate::measure::moments::Moments;
use crate::Algorithm;
use crate::{Error, Result};
use cudarc::driver::{result as dres, sys};

/// Exact sizes counted by `ana_hist` (`HIST_CAP` in `analysis.cu`).
pub(crate) const HIST_CAP: usize = 1024;
/// Rows one warp walks in `ana_runs` (`ANA_ROWS`).
const ANA_ROWS: u32 = 32;
/// Words per edge site written by `ana_border`: its piece's label, then (for the size counts)
/// the piece's size and bounding box, in a second array after all the labels.
pub(crate) const BORDER_WORDS: usize = 6;
/// Bytes per edge site of the size counts' seam join on the device (`kernels/analysis.cu`,
/// `Seam`: a union-find word, a size, a node and flags).
const SEAM_BYTES: usize = 24;

/// One piece's accumulators, as the device keeps them (`struct Row` in `analysis.cu`): one
/// 64-byte row per piece, so that a record's sums touch two 32-byte sectors and the host
/// downloads one contiguous buffer. Plain integers only (any bit pattern is valid), so rows can
/// be read straight out of pinned memory.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PieceRow {
    pub sx: u64,
    pub sy: u64,
    pub sxx: u64,
    pub syy: u64,
    pub size: u32,
    pub x_min: u32,
    pub x_max: u32,
    pub y_min: u32,
    pub y_max: u32,
    /// Zero on the device (`sxx_hi`, `syy_hi`).
    pad: [u32; 2],
    /// The piece's first site (raster index), for the tree of holes (`perimeters.cu`).
    pub first: u32,
}

/// Bytes of a [`PieceRow`].
const ROW_BYTES: usize = std::mem::size_of::<PieceRow>();
const _: () = assert!(ROW_BYTES == 64);

impl PieceRow {
    /// The piece's moments.
    #[inline]
    pub(crate) fn moments(&self) -> Moments {
        Moments::from_parts(
            self.size,
            (self.x_min, self.x_max, self.y_min, self.y_max),
            self.sx,
            self.sy,
            self.sxx,
            self.syy,
        )
    }
}

/// The engine plus the analysis buffers, grown only.
pub(crate) struct DeviceAnalysis {
    pub engine: Engine,
    pub connectivity: Connectivity,
    pub boundary: Boundary,
    /// Host lattices are staged here.
    pub input: DevBuf,
    pub labels: DevBuf,
    /// Bit runs: leave the forest in `labels` as the ranking leaves it (a site's slot holds its
    /// local root + 1, a local root's own `FLAG | piece − 1`) instead of turning it into labels
    /// with `br_final`, for a reader that follows it itself (the perimeter kernels: always for
    /// the complement, for the lattice when no labels are wanted).
    pub forest_labels: bool,
    /// The pieces' rows ([`PieceRow`]).
    acc: DevBuf,
    /// The rows downloaded: row `p` is piece `p`'s (row 0 unused).
    rows_host: PinnedBuf,
    /// Rows queued into `rows_host` (row 0 included).
    rows_len: usize,
    /// `ana_border`'s output downloaded.
    border_host: PinnedBuf,
    /// Words queued into `border_host`.
    border_len: usize,
    /// Bit runs' component records: the two counts, then the record arrays.
    records: DevBuf,
    /// Shared-memory accumulators of bit runs' tile pass, when this device runs it.
    slots: Option<u32>,
    /// `ana_border`'s output.
    border: DevBuf,
    /// The size counts' seam join on the device (`ns_seam_*`): `SEAM_BYTES` per edge site.
    seam: DevBuf,
    /// Whether the last queued size counts join the periodic seams on the device.
    pub(crate) seams_joined: bool,
    /// Whether the last queued size counts wrote `ns_border`'s output (the host's join needs it).
    pub(crate) seams_border: bool,
    /// Join the size counts' seams on the host, from `ns_border`'s output (the path taken when
    /// the device's join overflows; its test sets it).
    pub(crate) host_seams: bool,
    /// `hist[0..=HIST_CAP]`, the tail count, then the tail's `tail_cap` pairs (`tail_ptr`): one
    /// buffer, so that one copy brings the histogram and the tail's start (`histogram`).
    hist: DevBuf,
    tail_cap: usize,
    /// Where `histogram` downloads to.
    hist_host: PinnedBuf,
    /// The job of the last queued run.
    pub job: Option<Job>,
}

impl DeviceAnalysis {
    pub(crate) fn new(
        device: usize,
        connectivity: Connectivity,
        boundary: Boundary,
    ) -> Result<Self> {
        Ok(Self::with_gpu(Gpu::new(device)?, connectivity, boundary))
    }

    /// The analysis on a context and stream that another worker holds.
    pub(crate) fn with_gpu(gpu: Gpu, connectivity: Connectivity, boundary: Boundary) -> Self {
        DeviceAnalysis {
            input: DevBuf::new(&gpu),
            labels: DevBuf::new(&gpu),
            forest_labels: false,
            acc: DevBuf::new(&gpu),
            rows_host: PinnedBuf::new(&gpu.ctx),
            rows_len: 0,
            border_host: PinnedBuf::new(&gpu.ctx),
            border_len: 0,
            records: DevBuf::new(&gpu),
            // (Room for the accumulators implies room for br_local's own shared memory; the
            // rows' need more than bands', so this says whether bit runs runs at all.)
            slots: bit_runs::ana_slots(gpu.max_shared_optin, false),
            border: DevBuf::new(&gpu),
            seam: DevBuf::new(&gpu),
            seams_joined: false,
            seams_border: false,
            host_seams: false,
            hist: DevBuf::new(&gpu),
            tail_cap: 0,
            hist_host: PinnedBuf::new(&gpu.ctx),
            engine: Engine::new(gpu),
            connectivity,
            boundary,
            job: None,
        }
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.engine.gpu
    }

    /// The job for a `height × width` lattice of `site`s; refuses lattices whose exact 64-bit
    /// sums of squares could overflow.
    pub(crate) fn job<T: crate::SiteValue>(&self, height: usize, width: usize) -> Result<Job> {
        let site = SiteType::of::<T>();
        let n = (height * width) as u128;
        let m = height.max(width).saturating_sub(1) as u128;
        if n * m * m >= 1u128 << 64 {
            return Err(Error::InvalidArgument(format!(
                "a {height}×{width} lattice is too large for the GPU analysis's 64-bit sums; use \
                 the CPU backend"
            )));
        }
        Ok(Job {
            site,
            height,
            width,
            connectivity: self.connectivity,
            // Pieces with open boundaries: the host joins them across the seams by winding.
            boundary: Boundary::Open,
            segments: false,
            family: if self.slots.is_some() {
                Family::BitRuns
            } else {
                family_of(Algorithm::BlockUnionFind, &self.engine.gpu, false)?
            },
            numbering: Numbering::Canonical,
            labels: LabelWidth::U32,
            short_tiles: false,
            write_once: false,
        })
    }

    /// Pieces the accumulators must hold at most: one per bit runs' component record, or per
    /// union-find block (rounded up to an even count, so that the records' 64-bit sums after
    /// their 32-bit roots are aligned).
    fn capacity(job: &Job) -> usize {
        let pieces = match job.family {
            Family::BitRuns => bit_runs::record_capacity(job),
            _ => job.blocks(),
        };
        pieces.max(1).next_multiple_of(2)
    }

    /// The records' pointers at `records` (counts, roots, the two packed sums, the boxes).
    fn records(&self, job: &Job, moments: bool) -> Records {
        let cap = Self::capacity(job);
        let b = self.records.ptr;
        let root = b + 16;
        let a = root + (4 * cap) as u64;
        Records {
            count: b,
            hist: 0,
            root,
            a,
            b: a + (8 * cap) as u64,
            boxes: a + (16 * cap) as u64,
            cap: cap as u32,
            // The job's own: bands' tiles take more blocks a multiprocessor, with fewer slots.
            slots: self
                .slots
                .and_then(|_| {
                    bit_runs::ana_slots(
                        self.engine.gpu.max_shared_optin,
                        bit_runs::bands(&job.key()),
                    )
                })
                .unwrap_or(0),
            moments: u32::from(moments),
        }
    }

    /// Allocates everything the job needs (and compiles its kernels).
    pub(crate) fn prepare(&mut self, job: &Job, with_labels: bool, host_input: bool) -> Result<()> {
        self.engine.prepare(job)?;
        let n = job.sites();
        // (The size counts keep 8 bytes a site there, and a periodic join's 4 more.)
        self.acc
            .ensure((Self::capacity(job) * ROW_BYTES).max(12 * n))?;
        if job.family == Family::BitRuns {
            // Bit runs' label array is its forest, needed with or without labels.
            self.records
                .ensure(16 + Self::capacity(job) * bit_runs::RECORD_BYTES)?;
            self.labels.ensure(n.max(1) * 4)?;
        }
        let edge_sites = 2 * (job.height + job.width).max(1);
        self.border.ensure(BORDER_WORDS * 4 * edge_sites)?;
        self.seam.ensure(SEAM_BYTES * edge_sites)?;
        // Clusters listed one by one: larger than HIST_CAP or spanning (at least min(h, w) sites).
        let tail_cap = n / (HIST_CAP + 1) + n / job.height.min(job.width).max(1) + 1;
        self.hist.ensure((HIST_CAP + 2) * 4 + tail_cap * 8)?;
        self.tail_cap = tail_cap;
        if with_labels {
            self.labels.ensure(n * 4)?;
        }
        if host_input {
            self.input.ensure(n * job.site.size())?;
        }
        Ok(())
    }

    /// Queues the forest, the ranking and the run kernel: the pieces' features end up in the
    /// accumulators (sums of coordinates only when `moments`), the piece labels in `labels`
    /// when it is nonzero. With `border`, also the edge sites' pieces; with `hist`, the size
    /// histogram of the pieces off the periodic seams.
    pub(crate) fn queue(
        &mut self,
        job: &Job,
        input: sys::CUdeviceptr,
        labels: sys::CUdeviceptr,
        moments: bool,
        border: bool,
        hist: bool,
    ) -> Result<()> {
        let cap = Self::capacity(job);
        let bit_runs = job.family == Family::BitRuns;
        let short = bit_runs
            && (self.records.bytes < 16 + cap * bit_runs::RECORD_BYTES
                || self.labels.bytes < job.sites() * 4);
        // (The edges' buffers follow h + w, which a lattice of as many sites may exceed.)
        let edge_sites = 2 * (job.height + job.width).max(1);
        let edges_short = self.border.bytes < BORDER_WORDS * 4 * edge_sites
            || self.seam.bytes < SEAM_BYTES * edge_sites
            || self.acc.bytes < 12 * job.sites();
        if self.acc.bytes < cap * ROW_BYTES
            || (hist && self.hist.bytes == 0)
            || short
            || edges_short
        {
            self.prepare(job, false, false)?;
        }
        self.job = Some(*job);
        self.seams_joined = false;
        self.seams_border = false;
        if hist && bit_runs {
            return self.queue_counts(job, input, border);
        }
        let mut rec = self.records(job, moments);
        // Bit runs' size counts: the tile pass counts interior clusters into the histogram
        // itself (they need no record), where its shared memory leaves room.
        let direct_slots = if hist && bit_runs {
            bit_runs::direct_hist_slots(rec.slots)
        } else {
            None
        };
        if hist {
            // Before the tile pass, which may add into it.
            self.engine
                .gpu
                .memset_zero(self.hist.ptr, (HIST_CAP + 2) * 4)?;
        }
        if let Some(slots) = direct_slots {
            rec.slots = slots;
            rec.hist = self.hist.ptr;
        }
        // Without labels the forest is all the later kernels read (bit runs).
        let forest_only = labels == 0;
        let bufs = if bit_runs {
            let pieces = bit_runs::Pieces {
                rec: &rec,
                forest_only,
                rows: self.acc.ptr,
                moments,
            };
            self.engine
                .run_pieces(job, input, self.labels.ptr, &pieces)?
        } else {
            self.engine.run_ranked(job, input)?
        };
        if job.sites() == 0 {
            return Ok(());
        }
        let acc = self.acc.ptr;
        let geo = Geo::new(job);
        let gpu = &self.engine.gpu;
        let module = self.engine.module(job)?;
        let count = bufs.count;
        let sms = gpu.sms.max(1);
        let moments = u32::from(moments);
        // SAFETY: the arguments match the kernels' parameters; the accumulators hold `capacity`
        // rows (an upper bound on the pieces), `input` the job's sites, `labels` (when nonzero)
        // and bit runs' forest as many labels, the records `capacity` entries, `border` 6 words
        // per edge site, `hist` HIST_CAP + 2 words and `tail` 2 · tail_cap words (prepare).
        // The kernels launched with `launch_after` wait first (`pdl_wait`) and follow kernels.
        unsafe {
            // Bit runs: br_publish set the edge pieces' rows empty, and ana_records stores the
            // interior ones whole.
            if !bit_runs {
                gpu.launch(
                    module.func("ana_zero"),
                    (sms * 8, 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![count, acc, moments],
                )?;
            }
            // Bit runs' size counts take the interior clusters' sizes straight into the
            // histogram (the tile pass, or ana_hist_records from the records): only the pieces
            // with edge records get rows.
            let edges_only = u32::from(hist);
            if bit_runs {
                // A forest-only tile pass left interior roots' slots unwritten: their ranks
                // come from the masks.
                let [rb, cnt, chunks, pre] = if forest_only {
                    bit_runs::rank_masks(job, &bufs)
                } else {
                    [0; 4]
                };
                let tiles_x = job.width.div_ceil(bit_runs::TILE_W) as u32;
                gpu.launch_after(
                    module.func("ana_records"),
                    (sms * 8, 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![
                        bufs.forest,
                        geo,
                        acc,
                        rec,
                        moments,
                        edges_only,
                        rb,
                        cnt,
                        chunks,
                        pre,
                        tiles_x
                    ],
                )?;
            } else {
                gpu.launch(
                    module.func("ana_runs"),
                    (
                        geo.w.div_ceil(32),
                        geo.h.div_ceil(8 * ANA_ROWS).min(65535),
                        1,
                    ),
                    (32, 8, 1),
                    &mut kernel_args![input, bufs.forest, geo, acc, labels, moments],
                )?;
            }
            if border {
                let items = 2 * (geo.w + geo.h);
                let out = self.border.ptr;
                // Sizes and boxes for the size counts; a table's join needs the labels only.
                let info = u32::from(hist);
                gpu.launch_after(
                    module.func("ana_border"),
                    (items.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![input, bufs.forest, geo, acc, out, info],
                )?;
            }
            if hist {
                let (wrap_x, wrap_y) = (
                    u32::from(self.boundary.wraps_x()),
                    u32::from(self.boundary.wraps_y()),
                );
                let hist = self.hist.ptr;
                let tail = self.tail_ptr();
                let tail_cap = self.tail_cap as u32;
                let tail_n = hist + (HIST_CAP as u64 + 1) * 4;
                if bit_runs {
                    gpu.launch_after(
                        module.func("ana_hist_records"),
                        (sms * 4, 1, 1),
                        (256, 1, 1),
                        &mut kernel_args![
                            bufs.forest,
                            acc,
                            rec,
                            geo,
                            wrap_x,
                            wrap_y,
                            hist,
                            tail,
                            tail_cap,
                            tail_n
                        ],
                    )?;
                } else {
                    gpu.launch(
                        module.func("ana_hist"),
                        (sms * 4, 1, 1),
                        (256, 1, 1),
                        &mut kernel_args![
                            count, acc, geo, wrap_x, wrap_y, hist, tail, tail_cap, tail_n
                        ],
                    )?;
                }
            }
        }
        if bit_runs && labels != 0 && !self.forest_labels {
            // Last: the finds above read the forest that this overwrites with the labels.
            bit_runs::final_pass(gpu, module, job, &bufs)?;
        }
        Ok(())
    }

    /// Whether the last queued run left bit runs' forest in `labels` rather than labels
    /// ([`DeviceAnalysis::forest_labels`]).
    pub(crate) fn labels_are_forest(&self) -> bool {
        self.forest_labels && self.job.is_some_and(|j| j.family == Family::BitRuns)
    }

    /// The device address of the pieces' rows ([`PieceRow`], piece `p` at index `p − 1`).
    pub(crate) fn rows_ptr(&self) -> sys::CUdeviceptr {
        self.acc.ptr
    }

    /// Waits and returns the piece count of the last queued run.
    pub(crate) fn count(&mut self) -> Result<usize> {
        if self.job.map_or(0, |j| j.sites()) == 0 {
            return Ok(0);
        }
        self.engine.count()
    }

    /// Downloads `len` elements at `src` into a new vector (waits for the stream).
    fn download<T: Copy + Default>(&self, src: sys::CUdeviceptr, len: usize) -> Result<Vec<T>> {
        let mut v = vec![T::default(); len];
        if len > 0 {
            // SAFETY: `src` holds at least `len` elements of `T`; the copy is complete after the
            // synchronisation below, before `v` is used or dropped.
            unsafe {
                dres::memcpy_dtoh_async(&mut v[..], src, self.engine.gpu.stream.cu_stream())
                    .map_err(|e| cuda_err("copying analysis results from the GPU", e))?;
            }
            self.engine.gpu.sync()?;
        }
        Ok(v)
    }

    /// Queues the download of the rows of the `npieces` pieces of the last run into the kept
    /// pinned buffer (row `p` = piece `p`); [`DeviceAnalysis::rows`] waits for it.
    pub(crate) fn queue_rows(&mut self, npieces: usize) -> Result<()> {
        if self.job.is_none() {
            return Err(Error::InvalidArgument("nothing was analyzed".into()));
        }
        let n = npieces;
        self.rows_len = 0;
        self.rows_host.ensure((n + 1) * ROW_BYTES)?;
        self.rows_len = n + 1;
        let rows = self.rows_host.slice_mut::<PieceRow>(n + 1);
        rows[0] = PieceRow::default();
        if n > 0 {
            // SAFETY: the accumulators hold at least `n` rows (n ≤ capacity); the destination is
            // pinned, kept by `self` and neither read nor resized before the stream is
            // synchronised (`rows`).
            unsafe {
                dres::memcpy_dtoh_async(
                    &mut rows[1..],
                    self.acc.ptr,
                    self.engine.gpu.stream.cu_stream(),
                )
                .map_err(|e| cuda_err("copying analysis results from the GPU", e))?;
            }
        }
        Ok(())
    }

    /// Waits for [`DeviceAnalysis::queue_rows`] and returns its rows (row 0 unused).
    pub(crate) fn rows(&mut self, npieces: usize) -> Result<&[PieceRow]> {
        self.engine.gpu.sync()?;
        if npieces + 1 > self.rows_len {
            return Err(Error::InvalidArgument(
                "the pieces' rows were not downloaded".into(),
            ));
        }
        Ok(self.rows_host.slice_mut::<PieceRow>(npieces + 1))
    }

    /// Queues the download of `ana_border`'s output into the kept pinned buffer: the label of
    /// every edge site (rows 0 and h − 1, then columns 0 and w − 1), then with `info` five words
    /// per edge site (its piece's size and bounding box). [`DeviceAnalysis::border`] waits for it.
    pub(crate) fn queue_border(&mut self, info: bool) -> Result<()> {
        let job = self
            .job
            .ok_or_else(|| Error::InvalidArgument("nothing was analyzed".into()))?;
        let words = self.border_words(&job, info);
        self.border_len = 0;
        self.border_host.ensure(words.max(1) * 4)?;
        self.border_len = words;
        if words > 0 {
            let dst = self.border_host.slice_mut::<u32>(words);
            // SAFETY: `border` holds BORDER_WORDS words per edge site (prepare); the destination
            // is pinned, kept by `self` and not read before the stream is synchronised.
            unsafe {
                dres::memcpy_dtoh_async(dst, self.border.ptr, self.engine.gpu.stream.cu_stream())
                    .map_err(|e| cuda_err("copying analysis results from the GPU", e))?;
            }
        }
        Ok(())
    }

    fn border_words(&self, job: &Job, info: bool) -> usize {
        let e = 2 * (job.height + job.width);
        if info {
            BORDER_WORDS * e
        } else {
            e
        }
    }

    /// Waits for [`DeviceAnalysis::queue_border`] and returns what it downloaded.
    pub(crate) fn border(&mut self, info: bool) -> Result<&[u32]> {
        let job = self
            .job
            .ok_or_else(|| Error::InvalidArgument("nothing was analyzed".into()))?;
        self.engine.gpu.sync()?;
        let words = self.border_words(&job, info);
        if words > self.border_len {
            return Err(Error::InvalidArgument(
                "the border was not downloaded".into(),
            ));
        }
        Ok(self.border_host.slice_mut::<u32>(words))
    }

    /// The piece labels written by the last run (`n` sites).
    pub(crate) fn labels(&self, n: usize) -> Result<Vec<u32>> {
        self.download(self.labels.ptr, n)
    }
}
