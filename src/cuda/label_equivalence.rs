//! Label equivalence (Kalentev, Rai, Kemnitz & Schneider, 2011): simple and robust.
//!
//! Every occupied site starts with the index + 1 of the first site of its run within 32 sites
//! (the paper: its own index + 1, which costs more iterations); each iteration's scanning lowers
//! the root of a site's label to the smallest label among its joined neighbours, and its
//! analysis follows every label chain to its end, until a scan changes nothing. No reference
//! array: the labels are their own forest. All iterations run in one cooperative launch (`le_solve`, every CTA
//! resident, grid barriers between the phases), so the done flag stays in device memory and the
//! host never waits on it. Both connectivities, segments and all boundaries (the neighbourhood
//! wraps literally). The result is the raw labels; canonical numbering follows when asked.

use super::canonical;
use super::engine::{Buffers, Job, LE_STATE_WORDS};
use super::runtime::{cuda_err, kernel_args, Gpu, Module};
use super::Numbering;
use crate::Result;

/// The family's kernel file.
pub(crate) const FILE: &str = "label_equivalence.cu";
/// The kernels of its module (besides canonical numbering's).
pub(crate) const KERNELS: &[&str] = &["le_init", "le_solve"];

/// Threads per CTA of `le_solve`.
const THREADS: u32 = 256;

/// Queues the labeling of `job`.
pub(crate) fn run(gpu: &Gpu, module: &Module, job: &Job, bufs: &Buffers) -> Result<()> {
    let (h, w) = (job.height as u32, job.width as u32);
    let n = job.sites() as u32;
    let (input, labels, state, count) = (bufs.input, bufs.labels, bufs.le_state, bufs.count);
    let (wrap_x, wrap_y) = (job.boundary.wraps_x() as u32, job.boundary.wraps_y() as u32);
    let solve = module.func("le_solve");
    let per_sm = solve
        .occupancy_max_active_blocks_per_multiprocessor(THREADS, 0, None)
        .map_err(|e| cuda_err("querying le_solve's occupancy", e))?
        .max(1);
    let wanted = job.sites().div_ceil(THREADS as usize);
    let resident = (per_sm * gpu.sms) as usize;
    let blocks = wanted.clamp(1, resident) as u32;
    let init_blocks = wanted.clamp(1, resident * 8) as u32;
    gpu.memset_zero(state, LE_STATE_WORDS * 4)?;
    // SAFETY: the arguments match the kernels' parameters; `input` and `labels` hold h * w sites
    // and `state` LE_STATE_WORDS words; `blocks` does not exceed the co-resident limit.
    unsafe {
        gpu.launch(
            module.func("le_init"),
            (init_blocks, 1, 1),
            (THREADS, 1, 1),
            &mut kernel_args![input, labels, n, w],
        )?;
        gpu.launch_cooperative(
            solve,
            blocks,
            THREADS,
            &mut kernel_args![input, labels, h, w, wrap_x, wrap_y, state, count],
        )?;
    }
    if job.numbering == Numbering::Canonical {
        canonical::run(gpu, module, job, bufs)?;
    }
    Ok(())
}
