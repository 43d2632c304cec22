//! Perimeters, hulls and filled areas on the GPU (`kernels/perimeters.cu`), for
//! [`Measures::All`](crate::Measures::All) tables of occupancy lattices with open boundaries.
//!
//! After the lattice's own analysis (with its label image), the complement is labeled with the
//! dual connectivity by a second [`DeviceAnalysis`] on the same stream, whose rows give every
//! region's size, bounding box (touching the edge: the outside) and first site. Then, on the
//! device: the tree of holes read off the first sites, the subtree sums (filled areas) from
//! the leaves up, and one pass over the label image for the bond, site and hull perimeters.
//! The definitions and the tree are the CPU's (`cpu::analysis`, `filled::tree_filled`), which
//! the tests compare against.
//!
//! Bytes moved on an `n`-site lattice (besides the two analyses): the complement (`n` read,
//! `n` written), and the perimeter pass reads the `4n`-byte label image once (a five-row
//! window in registers) plus the region label of each (empty site, cluster) pair it counts.

use super::analysis::DeviceAnalysis;
use super::family::{Family, LabelWidth, ModuleKey, SiteType};
use super::runtime::{cuda_err, kernel_args, DevBuf, Gpu, PinnedBuf};
use crate::{Connectivity, Error, Result};
use cudarc::driver::{result as dres, CudaStream};
use std::sync::Arc;

/// The family's kernel file.
pub(crate) const FILE: &str = "perimeters.cu";
/// The kernels of `perimeters.cu`.
pub(crate) const KERNELS: &[&str] = &["pm_complement", "pm_nodes", "pm_filled", "pm_sites"];

/// Columns of `pm_sites`'s warps and rows of its tiles (`PM_OWN`, `PM_ROWS`).
const PM_OWN: u32 = 28;
const PM_ROWS: u32 = 64;
/// Nodes per block of `pm_nodes` and `pm_filled` (`PM_CHUNK`).
const PM_CHUNK: u32 = 2048;

/// One cluster's perimeter sums, as `pm_sites` leaves them (`struct PerimRow`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PerimRow {
    pub bond: u64,
    pub site: u32,
    pub hull: u32,
}

/// The complement's analysis and the buffers of the perimeter kernels, grown only.
pub(crate) struct DevicePerimeters {
    /// The complement, labeled with the dual connectivity (its input buffer holds it).
    dual: DeviceAnalysis,
    conn8: bool,
    /// Per cluster: [`PerimRow`].
    perim: DevBuf,
    /// Per node (clusters, then regions): parent, child count, children done (`u32` each),
    /// then the subtree sums (`u64`).
    nodes: DevBuf,
    /// Per region: the cluster it is a hole of (0 for the outside).
    hole_of: DevBuf,
    perim_host: PinnedBuf,
    filled_host: PinnedBuf,
    /// Clusters of the last queued run.
    queued: Option<usize>,
    /// Node slots of the last run's layout in `nodes` (even).
    nodes_cap: usize,
}

impl DevicePerimeters {
    /// The perimeter kernels for `connectivity`, queued on `stream`.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the driver fails.
    pub(crate) fn new(stream: Arc<CudaStream>, connectivity: Connectivity) -> Result<Self> {
        let gpu = Gpu::with_stream(stream)?;
        let (perim, nodes, hole_of) = (DevBuf::new(&gpu), DevBuf::new(&gpu), DevBuf::new(&gpu));
        let (perim_host, filled_host) = (PinnedBuf::new(&gpu.ctx), PinnedBuf::new(&gpu.ctx));
        let mut dual = DeviceAnalysis::with_gpu(gpu, connectivity.dual(), crate::Boundary::Open);
        // The complement's labels are read by the perimeter kernels alone, which follow its
        // forest (no br_final for it).
        dual.forest_labels = true;
        Ok(DevicePerimeters {
            perim,
            nodes,
            hole_of,
            perim_host,
            filled_host,
            dual,
            conn8: connectivity == Connectivity::Eight,
            queued: None,
            nodes_cap: 0,
        })
    }

    fn key(&self, site: SiteType) -> ModuleKey {
        ModuleKey {
            family: Family::Perimeters,
            site,
            conn8: self.conn8,
            segments: false,
            labels: LabelWidth::U32,
            short_tiles: false,
        }
    }

    /// Queues everything after `main`'s analysis of a `h × w` lattice of `site`s at `input`
    /// (queued with its label image, or its forest where `l_forest`:
    /// [`DeviceAnalysis::labels_are_forest`]); waits once for the two piece counts.
    ///
    /// # Errors
    /// [`Error::OutOfDeviceMemory`], [`Error::KernelCompile`], [`Error::Cuda`].
    pub(crate) fn queue(
        &mut self,
        main: &mut DeviceAnalysis,
        site: SiteType,
        input: u64,
        (h, w): (usize, usize),
        l_forest: bool,
    ) -> Result<()> {
        self.queued = None;
        let sites = h * w;
        let djob = self.dual.job::<u8>(h, w)?;
        self.dual.prepare(&djob, true, true)?;
        let key = self.key(site);
        let gpu = &mut self.dual.engine.gpu;
        gpu.module(&key)?;
        let module = gpu.get_module(&key).ok_or_else(missing)?;
        let (n32, h32, w32) = (sites as u32, h as u32, w as u32);
        let comp = self.dual.input.ptr;
        let sms = gpu.sms.max(1);
        // SAFETY: `input` holds the job's `sites` sites of type `site`, the dual's input as
        // many bytes (prepare).
        unsafe {
            gpu.launch(
                module.func("pm_complement"),
                (sms * 8, 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, comp, n32],
            )?;
        }
        let (comp_ptr, comp_labels) = (self.dual.input.ptr, self.dual.labels.ptr);
        self.dual
            .queue(&djob, comp_ptr, comp_labels, false, false, false)?;
        let n = main.count()?;
        let m = self.dual.count()?;
        let nodes = n + m;
        // (Even, so that the sums after three u32 arrays are 8-aligned.)
        let cap = nodes.max(1).next_multiple_of(2);
        self.perim
            .ensure(n.max(1) * std::mem::size_of::<PerimRow>())?;
        self.nodes.ensure(cap * 20)?;
        self.nodes_cap = cap;
        self.hole_of.ensure(m.max(1) * 4)?;
        self.perim_host
            .ensure((n + 1) * std::mem::size_of::<PerimRow>())?;
        self.filled_host.ensure((n + 1) * 8)?;
        let gpu = &self.dual.engine.gpu;
        let module = gpu.get_module(&key).ok_or_else(missing)?;
        let parent = self.nodes.ptr;
        let kids = parent + 4 * cap as u64;
        let done = kids + 4 * cap as u64;
        let sub = done + 4 * cap as u64;
        let (rc, re) = (main.rows_ptr(), self.dual.rows_ptr());
        let (labels, empties, hole_of, perim) = (
            main.labels.ptr,
            self.dual.labels.ptr,
            self.hole_of.ptr,
            self.perim.ptr,
        );
        let (n32, m32, total) = (n as u32, m as u32, nodes as u32);
        let (l_forest, e_forest) = (
            u32::from(l_forest),
            u32::from(self.dual.labels_are_forest()),
        );
        let chunks = total.div_ceil(PM_CHUNK);
        if n > 0 {
            gpu.memset_zero(perim, n * std::mem::size_of::<PerimRow>())?;
            gpu.memset_zero(kids, 8 * cap)?;
            // SAFETY: the rows hold n and m rows, the label images `sites` labels, `nodes` 20
            // bytes per node, `hole_of` m words, `perim` n rows (all ensured above).
            unsafe {
                gpu.launch(
                    module.func("pm_nodes"),
                    (chunks, 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![
                        rc, re, n32, m32, labels, empties, h32, w32, parent, sub, kids, hole_of,
                        l_forest, e_forest
                    ],
                )?;
                gpu.launch(
                    module.func("pm_filled"),
                    (chunks, 1, 1),
                    (256, 1, 1),
                    &mut kernel_args![parent, kids, sub, done, total],
                )?;
                gpu.launch(
                    module.func("pm_sites"),
                    (
                        w32.div_ceil(8 * PM_OWN),
                        h32.div_ceil(PM_ROWS).min(65535),
                        1,
                    ),
                    (32, 8, 1),
                    &mut kernel_args![
                        labels, empties, hole_of, h32, w32, perim, l_forest, e_forest
                    ],
                )?;
            }
        }
        self.queued = Some(n);
        Ok(())
    }

    /// Queues the download of what [`DevicePerimeters::queue`] computed into the kept pinned
    /// buffers; [`DevicePerimeters::results`] waits for it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when nothing was queued, [`Error::Cuda`].
    pub(crate) fn queue_download(&mut self) -> Result<()> {
        let n = self
            .queued
            .ok_or_else(|| Error::InvalidArgument("no perimeters were queued".into()))?;
        if n == 0 {
            return Ok(());
        }
        let nodes = self.nodes_cap;
        let sub = self.nodes.ptr + 12 * nodes as u64;
        let stream = self.dual.engine.gpu.stream.cu_stream();
        let rows = self.perim_host.slice_mut::<PerimRow>(n + 1);
        let filled = self.filled_host.slice_mut::<u64>(n + 1);
        // SAFETY: `perim` holds n rows and `sub` (the clusters' first) n sums; the pinned
        // destinations are kept by `self` and not read before the stream is synchronised.
        unsafe {
            dres::memcpy_dtoh_async(&mut rows[1..], self.perim.ptr, stream)
                .map_err(|e| cuda_err("copying perimeters from the GPU", e))?;
            dres::memcpy_dtoh_async(&mut filled[1..], sub, stream)
                .map_err(|e| cuda_err("copying filled areas from the GPU", e))?;
        }
        Ok(())
    }

    /// Waits for [`DevicePerimeters::queue_download`] and returns each cluster's perimeter sums
    /// and filled area (cluster `l` at index `l`, index 0 unused).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when nothing was queued, [`Error::Cuda`] when the kernels or
    /// the copies failed.
    pub(crate) fn results(&mut self) -> Result<(&[PerimRow], &[u64])> {
        let n = self
            .queued
            .ok_or_else(|| Error::InvalidArgument("no perimeters were queued".into()))?;
        self.dual.engine.gpu.sync()?;
        let rows: &[PerimRow] = self.perim_host.slice_mut::<PerimRow>(n + 1);
        // (Two pinned buffers: two borrows of self's fields.)
        let filled: &[u64] = self.filled_host.slice_mut::<u64>(n + 1);
        Ok((rows, filled))
    }
}

fn missing() -> Error {
    Error::Cuda("the perimeters module was not loaded".into())
}
