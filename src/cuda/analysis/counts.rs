//! Bit runs' size counts on the device ([`DeviceAnalysis::queue_counts`]): the labeling's raw
//! forest with the components' sizes, then the crossing clusters' edges, histogram and (periodic)
//! border for the host's join (`ns_edges`, `ns_hist`, `ns_border` in `kernels/analysis.cu`).

use super::{DeviceAnalysis, HIST_CAP};
use crate::cuda::bit_runs;
use crate::cuda::canonical::Geo;
use crate::cuda::engine::Job;
use crate::cuda::runtime::kernel_args;
use crate::cuda::Numbering;
use crate::Result;
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
            tail: self.tail.ptr,
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
        let (hist, tail, tail_cap) = (self.hist.ptr, self.tail.ptr, self.tail_cap as u32);
        // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold the
        // job's sites, `sf` 8 bytes a site (the accumulators, prepare), the edge-root mask
        // `words` words, `hist` HIST_CAP + 2 words, `tail` 2 · tail_cap words and `border`
        // BORDER_WORDS words per edge site (prepare). Each kernel waits for the one before it
        // (`pdl_wait`) before it reads what that one wrote.
        unsafe {
            gpu.launch_after(
                module.func("ns_edges"),
                (items.div_ceil(256), 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, labels, geo, sf],
            )?;
            gpu.launch_after(
                module.func("ns_hist"),
                (words.div_ceil(256).clamp(1, gpu.sms.max(1) * 4), 1, 1),
                (256, 1, 1),
                &mut kernel_args![
                    edge_roots, sf, geo, tiles_x, words, wrap_x, wrap_y, hist, tail, tail_cap
                ],
            )?;
            if border {
                let out = self.border.ptr;
                gpu.launch_after(
                    module.func("ns_border"),
                    (items.div_ceil(256), 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![input, labels, geo, sf, out],
                )?;
            }
        }
        Ok(())
    }
}
