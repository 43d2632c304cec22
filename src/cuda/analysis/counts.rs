//! Bit runs' size counts on the device ([`DeviceAnalysis::queue_counts`]): the labeling's raw
//! forest with the components' sizes, then the crossing clusters' edges, histogram and (periodic)
//! border for the host's join (`ns_edges`, `ns_hist`, `ns_border` in `kernels/analysis.cu`).

use super::{DeviceAnalysis, HIST_CAP};
use crate::cuda::bit_runs;
use crate::cuda::canonical::Geo;
use crate::cuda::engine::Job;
use crate::cuda::runtime::cuda_err;
use crate::cuda::runtime::kernel_args;
use crate::cuda::Numbering;
use crate::Connectivity;
use crate::Error;
use crate::Result;
use cudarc::driver::result as dres;
use cudarc::driver::sys;

impl DeviceAnalysis {
    /// Bit runs' size counts (`n_s` and the flags, [`DeviceAnalysis::queue`] with `hist`): the
    /// labeling's tiles and raw forest with each edge component's size at its local root
    /// ([`bit_runs::run_counts`]), the tiles' interior components counted in the tile pass; then
    /// the edges each crossing cluster touches (`ns_edges`), the crossing clusters' histogram
    /// from their global roots (`ns_hist`) and, with `border`, the edge sites' clusters for the
    /// host's join (`ns_border`). No ranking and no records: those served the table. The sizes
    /// lie in the accumulators' memory (8 bytes a site; it holds 32).
    pub(super) fn queue_counts(
        &mut self,
        job: &Job,
        input: sys::CUdeviceptr,
        border: bool,
    ) -> Result<()> {
        let gpu = &self.engine.gpu;
        let cjob = Job {
            numbering: Numbering::Raw,
            ..*job
        }
        .tiles_for(gpu);
        // (The forest is all it needs: no labels are written.)
        let cjob = Job {
            write_once: false,
            ..cjob
        };
        self.engine
            .gpu
            .memset_zero(self.hist.ptr, (HIST_CAP + 2) * 4)?;
        let counts = bit_runs::Counts {
            sf: self.acc.ptr,
            hist: self.hist.ptr,
            tail: self.tail_ptr(),
            tail_cap: self.tail_cap as u32,
        };
        debug_assert!(self.acc.bytes >= job.sites() * 8);
        let bufs = self
            .engine
            .run_counts(&cjob, input, self.labels.ptr, &counts)?;
        if job.sites() == 0 {
            return Ok(());
        }
        let gpu = &self.engine.gpu;
        let module = self.engine.module(&cjob)?;
        let geo = Geo::new(&cjob);
        let (labels, sf) = (self.labels.ptr, self.acc.ptr);
        let items = 2 * (geo.w + geo.h);
        let tiles_x = job.width.div_ceil(bit_runs::TILE_W) as u32;
        let words = 32 * job.height as u32 * tiles_x;
        // (The edge-root mask is the first of bit runs' scratch.)
        let edge_roots = bufs.aux;
        let (wrap_x, wrap_y) = (
            u32::from(self.boundary.wraps_x()),
            u32::from(self.boundary.wraps_y()),
        );
        let (hist, tail, tail_cap) = (self.hist.ptr, self.tail_ptr(), self.tail_cap as u32);
        // The seams' join on the device (periodic): each piece's node after the sizes (`acc`
        // holds 12 bytes a site, prepare).
        let device_join = border && !self.host_seams && seams_on_device(job);
        self.seams_joined = device_join;
        // `ns_border` only where the host may have to join: without the device's join, or where
        // its shifts could overflow (they cannot below SEAM_MAX, `seams_cannot_overflow`).
        let border_out = border && !(device_join && seams_cannot_overflow(job));
        self.seams_border = border_out;
        let seam_nodes = if device_join {
            sf + 8 * job.sites() as u64
        } else {
            0
        };
        // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold the
        // job's sites, `sf` 8 bytes a site (the accumulators, prepare), the edge-root mask
        // `words` words, `hist` HIST_CAP + 2 words, `tail` 2 · tail_cap words, `border`
        // BORDER_WORDS words and `seam` SEAM_BYTES per edge site (prepare). Each kernel waits
        // for the one before it (`pdl_wait`) before it reads what that one wrote.
        unsafe {
            gpu.launch_after(
                module.func("ns_edges"),
                (items.div_ceil(256), 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, labels, geo, sf, seam_nodes],
            )?;
            gpu.launch_after(
                module.func("ns_hist"),
                ((words / 4).div_ceil(256).clamp(1, gpu.sms.max(1) * 8), 1, 1),
                (256, 1, 1),
                &mut kernel_args![
                    edge_roots, sf, geo, tiles_x, words, wrap_x, wrap_y, hist, tail, tail_cap
                ],
            )?;
            if border_out {
                let out = self.border.ptr;
                gpu.launch_after(
                    module.func("ns_border"),
                    (items.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![input, labels, geo, sf, out],
                )?;
            }
            if device_join {
                let (seam, conn8) = (
                    self.seam.ptr,
                    u32::from(self.connectivity == Connectivity::Eight),
                );
                let links = 3 * (geo.w + geo.h);
                gpu.launch_after(
                    module.func("ns_seam_nodes"),
                    (items.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![input, labels, geo, sf, seam_nodes, wrap_x, wrap_y, seam],
                )?;
                gpu.launch_after(
                    module.func("ns_seam_link"),
                    (links.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![geo, wrap_x, wrap_y, conn8, seam, hist],
                )?;
                gpu.launch_after(
                    module.func("ns_seam_sum"),
                    (items.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![labels, geo, sf, seam],
                )?;
                gpu.launch_after(
                    module.func("ns_seam_count"),
                    (items.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![geo, wrap_x, wrap_y, seam, hist, tail, tail_cap],
                )?;
            }
        }
        Ok(())
    }

    /// The listed clusters' `(size, span bits)` pairs, after the histogram in `hist`.
    pub(super) fn tail_ptr(&self) -> sys::CUdeviceptr {
        self.hist.ptr + (HIST_CAP as u64 + 2) * 4
    }

    /// Waits for the queued counts and returns the histogram (`hist[s]` for `s <= HIST_CAP`,
    /// then the tail count) and the listed `(size, span bits)` pairs. One copy brings the
    /// histogram and the tail's first `TAIL_AHEAD` pairs, a second the rest, if any: each
    /// copy is a round trip that cost about as much as the host's work on the counts.
    pub(crate) fn histogram(&mut self) -> Result<(Vec<u32>, Vec<u32>)> {
        /// Pairs fetched with the histogram: a 16384² lattice at p_c lists a few thousand
        /// (its clusters above HIST_CAP sites, by n_s ∝ s^−τ).
        const TAIL_AHEAD: usize = 8192;
        let head = HIST_CAP + 2;
        let ahead = self.tail_cap.min(TAIL_AHEAD);
        let stream = self.engine.gpu.stream.cu_stream();
        self.hist_host.ensure((head + 2 * ahead) * 4)?;
        let host = self.hist_host.slice_mut::<u32>(head + 2 * ahead);
        // SAFETY: `hist` holds `head` words and then `2 · tail_cap` (prepare), `host` the copy's
        // words; the copy is complete after the synchronisation that follows, before `host` is
        // read.
        unsafe {
            dres::memcpy_dtoh_async(host, self.hist.ptr, stream)
                .map_err(|e| cuda_err("copying the size histogram from the GPU", e))?;
        }
        self.engine.gpu.sync()?;
        let host = self.hist_host.slice_mut::<u32>(head + 2 * ahead);
        let tail_n = host[HIST_CAP + 1] as usize;
        if tail_n > self.tail_cap {
            return Err(Error::Cuda(format!(
                "the GPU size histogram listed {tail_n} clusters, more than its {} slots",
                self.tail_cap
            )));
        }
        let hist = host[..head].to_vec();
        let mut tail = host[head..head + 2 * tail_n.min(ahead)].to_vec();
        if tail_n > ahead {
            let rest = 2 * (tail_n - ahead);
            self.hist_host.ensure(rest * 4)?;
            let host = self.hist_host.slice_mut::<u32>(rest);
            // SAFETY: as above; the listed pairs after the first copy's.
            unsafe {
                dres::memcpy_dtoh_async(
                    host,
                    self.hist.ptr + (head + 2 * ahead) as u64 * 4,
                    stream,
                )
                .map_err(|e| cuda_err("copying the size histogram from the GPU", e))?;
            }
            self.engine.gpu.sync()?;
            tail.extend_from_slice(self.hist_host.slice_mut::<u32>(rest));
        }
        Ok((hist, tail))
    }
}

/// Whether the size counts join a periodic lattice's seams on the device: its kernels number
/// the edge sites in 32 bits (beyond, `ns_border`'s output is joined on the host).
fn seams_on_device(job: &Job) -> bool {
    2 * (job.height + job.width) < 1 << 31
}

/// The largest shift `ns_seam_*` packs (16-bit signed, per direction: `SEAM_MAX` in
/// `kernels/analysis.cu`).
const SEAM_MAX: usize = 32767;

/// Whether the device's seam join cannot overflow its 16-bit shifts. A node's shift relative to
/// its root is the sum of the ±1 steps along the path that joined them, a path through distinct
/// pieces. Pieces touching column 0 are separated along it by an empty site, so at most
/// ⌈h / 2⌉ touch it and as many column w − 1; a path's x-steps, each between two of those, are
/// fewer than 2⌈h / 2⌉, so |x shift| ≤ h (|y shift| ≤ w likewise; a model of the join checks
/// it in `tests/size_counts.rs`, `seam_join_shifts_are_bounded_by_the_side`).
fn seams_cannot_overflow(job: &Job) -> bool {
    job.height <= SEAM_MAX && job.width <= SEAM_MAX
}
