//! The labeling engine shared by [`CudaBackend`](super::CudaBackend) and
//! [`CudaLabeler`](super::CudaLabeler): a device context with its compiled kernels and the small
//! scratch buffer every pipeline uses, and the dispatch from a job to a kernel family.

use super::family::{Family, LabelWidth, ModuleKey, SiteType};
use super::runtime::{cuda_err, DevBuf, Gpu, PinnedBuf};
use super::{
    bit_runs, block_union_find, canonical, ha4, label_equivalence, swendsen_wang, tile_merge,
    Numbering,
};
use crate::lattice::{Boundary, Connectivity};
use crate::Algorithm;
use crate::{Error, Result};
use cudarc::driver::{result as dres, sys};

/// Canonical 32-bit labels flag roots with bit 31, so they need fewer than 2^31 sites (64-bit
/// ones flag them with bit 63).
pub(crate) const MAX_CANONICAL_SITES: usize = (1 << 31) - 1;

/// Words at the start of the scratch buffer: `[0]` the cluster count, `[8..14]` label
/// equivalence's barrier, flags and root counts. Canonical numbering's segment counts follow,
/// then the block forest (for blocks of more than one site).
const HEADER_WORDS: usize = 16;
/// Scratch word of label equivalence's state.
const LE_STATE_WORD: usize = 8;
/// Words of label equivalence's state.
pub(crate) const LE_STATE_WORDS: usize = 6;

/// The scratch words a family needs after the common header and canonical numbering's segment
/// counts, in this order (faer's `*_scratch` idea: each family states its needs, the engine only
/// lays them out and grows one buffer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FamilyScratch {
    /// The union-find forest, one word per block, when blocks hold more than one site (else the
    /// label array is the forest).
    pub forest: usize,
    /// Saved cells of the tiles' first and last block rows (block union-find).
    pub border_rows: usize,
    /// Saved cells of the tiles' first and last block columns (block union-find).
    pub border_cols: usize,
    /// The family's own (bit runs' canonical numbering).
    pub aux: usize,
}

impl FamilyScratch {
    fn words(&self) -> usize {
        self.forest + self.border_rows + self.border_cols + self.aux
    }
}

/// One labeling to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    pub site: SiteType,
    pub height: usize,
    pub width: usize,
    pub connectivity: Connectivity,
    pub boundary: Boundary,
    pub segments: bool,
    pub family: Family,
    pub numbering: Numbering,
    /// The label width: 64-bit labels (bit runs only) for lattices of any size.
    pub labels: LabelWidth,
    /// Bit runs in short tiles ([`bit_runs::short_tiles`]; labelings of 32-bit labels only).
    pub short_tiles: bool,
    /// Bit runs writing each label once ([`bit_runs::write_once`]: the tile pass keeps each
    /// run's local root and `br_write` writes the labels; labelings of 32-bit labels only).
    pub write_once: bool,
}

impl Job {
    pub(crate) fn sites(&self) -> usize {
        self.height * self.width
    }

    /// Union-find blocks (nodes of the forest).
    pub(crate) fn blocks(&self) -> usize {
        let (bw, bh) = self.key().block_shape();
        self.height.div_ceil(bh as usize) * self.width.div_ceil(bw as usize)
    }

    /// Words of scratch before the forest: header and segment counts (rounded up to 4 words).
    fn forest_word(&self) -> usize {
        HEADER_WORDS + canonical::segments(self.sites()).max(1).next_multiple_of(4)
    }

    /// What the job's family needs after the header and segment counts, as the family states
    /// it (each family's `scratch`).
    pub(crate) fn family_scratch(&self) -> FamilyScratch {
        match self.family {
            Family::BlockUnionFind => block_union_find::scratch(self),
            Family::BitRuns => bit_runs::scratch(self),
            Family::SwendsenWang => swendsen_wang::scratch(self),
            _ => FamilyScratch::default(),
        }
    }

    /// Scratch bytes: header, segment counts, then the family's own.
    fn scratch_bytes(&self) -> usize {
        (self.forest_word() + self.family_scratch().words()) * 4
    }

    /// This labeling job in the tiles that suit it on `gpu`: short bit-runs tiles for
    /// 4-connected occupancy into 32-bit labels ([`bit_runs::short_tiles`]), and bit runs'
    /// labels written once where that is faster ([`bit_runs::write_once`]).
    pub(crate) fn tiles_for(mut self, gpu: &Gpu) -> Self {
        self.short_tiles = self.family == Family::BitRuns
            && !self.segments
            && self.labels == LabelWidth::U32
            && bit_runs::short_tiles(self.connectivity == Connectivity::Eight);
        self.write_once = self.family == Family::BitRuns
            && self.labels == LabelWidth::U32
            && bit_runs::write_once(self.segments, self.height, self.width, gpu.sms);
        self
    }

    pub(crate) fn key(&self) -> ModuleKey {
        ModuleKey {
            family: self.family,
            site: self.site,
            conn8: self.connectivity == Connectivity::Eight,
            segments: self.segments,
            labels: self.labels,
            short_tiles: self.short_tiles,
        }
    }
}

/// The kernel family that runs `algorithm` on `gpu` for lattices of this kind. `Auto` is the
/// fastest measured (README, "GPU"): bit runs, or block union-find on devices that cannot give a
/// block bit runs' shared memory (compute capability 7.5).
pub(crate) fn family_of(algorithm: Algorithm, gpu: &Gpu, segments: bool) -> Result<Family> {
    // The tall tiles' (short tiles need less).
    let bytes = bit_runs::shared_bytes(segments, bit_runs::tile_h(segments, false), false);
    let bit_runs_fit = bytes <= gpu.max_shared_optin;
    match algorithm {
        Algorithm::Auto if bit_runs_fit => Ok(Family::BitRuns),
        Algorithm::Auto | Algorithm::BlockUnionFind => Ok(Family::BlockUnionFind),
        Algorithm::LabelEquivalence => Ok(Family::LabelEquivalence),
        Algorithm::TileMerge => Ok(Family::TileMerge),
        Algorithm::Ha4 => Ok(Family::Ha4),
        Algorithm::BitRuns if bit_runs_fit => Ok(Family::BitRuns),
        Algorithm::BitRuns => Err(Error::InvalidArgument(format!(
            "BitRuns needs {} bytes of shared memory per block; this GPU gives {}",
            bytes, gpu.max_shared_optin
        ))),
        other => Err(Error::InvalidArgument(format!(
            "algorithm {other:?} is a CPU algorithm; the CUDA backend runs BitRuns, \
             BlockUnionFind, Ha4, TileMerge and LabelEquivalence"
        ))),
    }
}

/// The kernel family that labels into 64-bit labels for `algorithm`: bit runs, the only family
/// with a 64-bit build ([`Algorithm::Auto`] picks it; on devices whose blocks cannot have its
/// shared memory, 64-bit labels are not on the GPU).
///
/// # Errors
/// [`Error::InvalidArgument`] for any other algorithm, naming `BitRuns`, or such a device.
pub(crate) fn family_of_wide(algorithm: Algorithm, gpu: &Gpu, segments: bool) -> Result<Family> {
    match algorithm {
        Algorithm::Auto | Algorithm::BitRuns => family_of(Algorithm::BitRuns, gpu, segments),
        other => Err(Error::InvalidArgument(format!(
            "64-bit labels on the GPU come from Algorithm::BitRuns (or Auto), not {other:?}"
        ))),
    }
}

/// Device pointers handed to a family's driver.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Buffers {
    pub input: sys::CUdeviceptr,
    pub labels: sys::CUdeviceptr,
    /// The cluster count (one `u32`, or one `u64` for 64-bit labels).
    pub count: sys::CUdeviceptr,
    /// Label equivalence's state ([`LE_STATE_WORDS`] words).
    pub le_state: sys::CUdeviceptr,
    /// Canonical numbering's segment counts (one word per segment).
    pub counts: sys::CUdeviceptr,
    /// The union-find forest: a slot per block (the label array for 1×1 blocks).
    pub forest: sys::CUdeviceptr,
    /// Block union-find's saved cells of the tiles' first and last block rows.
    pub border_rows: sys::CUdeviceptr,
    /// Block union-find's saved cells of the tiles' first and last block columns.
    pub border_cols: sys::CUdeviceptr,
    /// The family's own scratch (bit runs: canonical numbering's root mask and counts).
    pub aux: sys::CUdeviceptr,
}

/// A context, its kernels and scratch.
pub(crate) struct Engine {
    pub gpu: Gpu,
    scratch: DevBuf,
    count_host: PinnedBuf,
    /// The label width of the last job queued: its count is a `u32` or a `u64`.
    count_width: LabelWidth,
}

impl Engine {
    pub(crate) fn new(gpu: Gpu) -> Engine {
        Engine {
            scratch: DevBuf::new(&gpu),
            count_host: PinnedBuf::new(&gpu.ctx),
            gpu,
            count_width: LabelWidth::U32,
        }
    }

    /// Checks that the job can be labeled on the GPU with its numbering.
    pub(crate) fn check(&self, job: &Job) -> Result<()> {
        if job.labels == LabelWidth::U64 {
            // Any size the kernels' 32-bit grid and mask indices allow; canonical numbering
            // flags roots with bit 63.
            if job.family != Family::BitRuns {
                return Err(Error::InvalidArgument(format!(
                    "64-bit labels on the GPU come from Algorithm::BitRuns, not {:?}",
                    job.family
                )));
            }
            return bit_runs::check_wide(job);
        }
        let n = job.sites();
        crate::lattice::check_size(job.height, job.width)?;
        if job.numbering == Numbering::Canonical && n > MAX_CANONICAL_SITES {
            return Err(Error::InvalidArgument(format!(
                "canonical 32-bit GPU labels need fewer than 2^31 sites (this lattice has {n}); \
                 use 64-bit labels (CudaLabeler::label_device64), Numbering::Raw or the CPU \
                 backend"
            )));
        }
        Ok(())
    }

    /// Scratch bytes the job would still allocate.
    pub(crate) fn scratch_shortfall(&self, job: &Job) -> usize {
        self.scratch.shortfall(job.scratch_bytes())
    }

    /// Grows a job's input and label buffers (`(buffer, bytes)` pairs) and then prepares the job,
    /// after checking that the device has the memory for all of them and the scratch at once
    /// (buffers that grow free their old memory first), so that a job too large fails before
    /// anything is freed or allocated.
    ///
    /// # Errors
    /// [`Error::OutOfDeviceMemory`], [`Error::KernelCompile`], [`Error::Cuda`].
    pub(crate) fn reserve(&mut self, bufs: [(&mut DevBuf, usize); 2], job: &Job) -> Result<()> {
        let need = bufs
            .iter()
            .map(|(b, want)| b.shortfall(*want))
            .sum::<usize>()
            + self.scratch_shortfall(job);
        if need > 0 {
            let reclaim = bufs
                .iter()
                .filter(|(b, want)| b.shortfall(*want) > 0)
                .map(|(b, _)| b.bytes)
                .sum::<usize>();
            let (free, _) = self.gpu.mem_info()?;
            if need > free + reclaim {
                return Err(Error::OutOfDeviceMemory {
                    needed: need,
                    free: free + reclaim,
                });
            }
        }
        for (b, want) in bufs {
            b.ensure(want)?;
        }
        self.prepare(job)
    }

    /// Compiles the job's kernels (once per context) and grows the scratch buffer.
    pub(crate) fn prepare(&mut self, job: &Job) -> Result<()> {
        self.check(job)?;
        self.gpu.bind()?;
        self.gpu.module(&job.key())?;
        let need = self.scratch_shortfall(job);
        if need > 0 {
            let (free, _) = self.gpu.mem_info()?;
            if need > free + self.scratch.bytes {
                return Err(Error::OutOfDeviceMemory {
                    needed: need,
                    free: free + self.scratch.bytes,
                });
            }
            self.scratch.ensure(job.scratch_bytes())?;
        }
        self.count_host.ensure(8)
    }

    /// Prepares `job` when its module or scratch is missing, else only checks it and binds the
    /// context: the per-call path allocates nothing.
    fn ready(&mut self, job: &Job) -> Result<()> {
        if !self.gpu.has_module(&job.key()) || self.scratch_shortfall(job) > 0 {
            self.prepare(job)
        } else {
            self.check(job)?;
            self.gpu.bind()
        }
    }

    /// Queues the labeling of `job` from `input` into `labels` (both device pointers holding the
    /// job's sites). Nothing is allocated and nothing waits when [`Engine::prepare`] ran for an
    /// equal or larger job.
    pub(crate) fn run(
        &mut self,
        job: &Job,
        input: sys::CUdeviceptr,
        labels: sys::CUdeviceptr,
    ) -> Result<()> {
        self.ready(job)?;
        self.count_width = job.labels;
        let bufs = self.buffers(job, input, labels);
        if job.sites() == 0 {
            return self.gpu.memset_zero(bufs.count, job.labels.bytes());
        }
        let gpu = &self.gpu;
        let module = self.module(job)?;
        match job.family {
            Family::BlockUnionFind => block_union_find::run(gpu, module, job, &bufs),
            Family::LabelEquivalence => label_equivalence::run(gpu, module, job, &bufs),
            Family::TileMerge => tile_merge::run(gpu, module, job, &bufs),
            Family::Ha4 => ha4::run(gpu, module, job, &bufs),
            Family::BitRuns => bit_runs::run(gpu, module, job, &bufs),
            Family::SwendsenWang => swendsen_wang::run(gpu, module, job, &bufs),
            Family::Regions | Family::Strips | Family::Perimeters => Err(Error::InvalidArgument(
                "the regions, strip-join and perimeter kernels do not label".into(),
            )),
        }
    }

    /// Queues block union-find's unions, flatten and root ranking for `job` (no labels written:
    /// each root's slot holds `FLAG | label - 1`, the count is on the device) and returns the
    /// buffers, for the analysis kernels. Prepares the job first when needed.
    pub(crate) fn run_ranked(&mut self, job: &Job, input: sys::CUdeviceptr) -> Result<Buffers> {
        if job.family != Family::BlockUnionFind || job.segments {
            return Err(Error::InvalidArgument(
                "GPU analysis runs on block union-find's forest of occupancy lattices".into(),
            ));
        }
        self.ready(job)?;
        self.count_width = job.labels;
        let bufs = self.buffers(job, input, 0);
        if job.sites() == 0 {
            self.gpu.memset_zero(bufs.count, 4)?;
            return Ok(bufs);
        }
        let gpu = &self.gpu;
        let module = self.module(job)?;
        block_union_find::build_forest(gpu, module, job, &bufs)?;
        canonical::rank(gpu, module, job, &bufs)?;
        Ok(bufs)
    }

    /// Queues bit runs' pieces for the cluster analysis: the tiles' records into `rec`, the
    /// seams with open boundaries and the ranking (every local root's slot in `labels` holds
    /// `FLAG | label - 1`, the count is on the device; no label is written). Returns the
    /// buffers; prepares the job first when needed.
    pub(crate) fn run_pieces(
        &mut self,
        job: &Job,
        input: sys::CUdeviceptr,
        labels: sys::CUdeviceptr,
        pieces: &bit_runs::Pieces<'_>,
    ) -> Result<Buffers> {
        let bufs = self.bit_runs_job(
            job,
            input,
            labels,
            Numbering::Canonical,
            "bit runs' pieces are ranked occupancy clusters (32-bit)",
        )?;
        if job.sites() > 0 {
            bit_runs::run_pieces(&self.gpu, self.module(job)?, job, &bufs, pieces)?;
        }
        Ok(bufs)
    }

    /// Queues bit runs' size-counts forest of `job` (raw numbering, occupancy, 32-bit labels:
    /// [`bit_runs::run_counts`]) from `input` into the forest `labels`, with the sizes and
    /// histogram of `counts`; prepares the job first when needed.
    pub(crate) fn run_counts(
        &mut self,
        job: &Job,
        input: sys::CUdeviceptr,
        labels: sys::CUdeviceptr,
        counts: &bit_runs::Counts,
    ) -> Result<Buffers> {
        let bufs = self.bit_runs_job(
            job,
            input,
            labels,
            Numbering::Raw,
            "bit runs' size counts take raw occupancy clusters (32-bit)",
        )?;
        if job.sites() > 0 {
            bit_runs::run_counts(&self.gpu, self.module(job)?, job, &bufs, counts)?;
        }
        Ok(bufs)
    }

    /// The checks and set-up of the analysis's bit-runs passes: `job` must be a 32-bit
    /// occupancy job of bit runs numbered by `numbering` (else `what`, as an invalid argument);
    /// it is prepared when needed and its buffers returned, the count zeroed for an empty one.
    fn bit_runs_job(
        &mut self,
        job: &Job,
        input: sys::CUdeviceptr,
        labels: sys::CUdeviceptr,
        numbering: Numbering,
        what: &str,
    ) -> Result<Buffers> {
        if job.family != Family::BitRuns
            || job.segments
            || job.numbering != numbering
            || job.labels != LabelWidth::U32
        {
            return Err(Error::InvalidArgument(what.into()));
        }
        self.ready(job)?;
        self.count_width = job.labels;
        let bufs = self.buffers(job, input, labels);
        if job.sites() == 0 {
            self.gpu.memset_zero(bufs.count, 4)?;
        }
        Ok(bufs)
    }

    /// The module of `job` (compiled by [`Engine::prepare`]).
    pub(crate) fn module(&self, job: &Job) -> Result<&super::runtime::Module> {
        self.gpu
            .get_module(&job.key())
            .ok_or_else(|| Error::Cuda("kernel module missing after preparation".into()))
    }

    /// Where the job's buffers lie in the scratch.
    fn buffers(&self, job: &Job, input: sys::CUdeviceptr, labels: sys::CUdeviceptr) -> Buffers {
        let base = self.scratch.ptr;
        let f = job.family_scratch();
        let at = |words: usize| base + ((job.forest_word() + words) * 4) as u64;
        Buffers {
            input,
            labels,
            count: base,
            le_state: base + (LE_STATE_WORD * 4) as u64,
            counts: base + (HEADER_WORDS * 4) as u64,
            forest: if f.forest > 0 { at(0) } else { labels },
            border_rows: at(f.forest),
            border_cols: at(f.forest + f.border_rows),
            aux: at(f.forest + f.border_rows + f.border_cols),
        }
    }

    /// Waits for the queued work and returns the cluster count of the last labeling.
    pub(crate) fn count(&mut self) -> Result<usize> {
        self.gpu.bind()?;
        if self.scratch.ptr == 0 {
            return Ok(0);
        }
        self.count_host.ensure(8)?;
        let stream = self.gpu.stream.cu_stream();
        // SAFETY: the destination is pinned and outlives the copy, which completes before the
        // sync below; the scratch's first word (two for 64-bit labels) holds the count.
        let copied = unsafe {
            match self.count_width {
                LabelWidth::U32 => {
                    let dst = self.count_host.slice_mut::<u32>(1);
                    dres::memcpy_dtoh_async(dst, self.scratch.ptr, stream)
                }
                LabelWidth::U64 => {
                    let dst = self.count_host.slice_mut::<u64>(1);
                    dres::memcpy_dtoh_async(dst, self.scratch.ptr, stream)
                }
            }
        };
        copied.map_err(|e| cuda_err("reading the cluster count", e))?;
        self.gpu.sync()?;
        Ok(match self.count_width {
            LabelWidth::U32 => self.count_host.slice_mut::<u32>(1)[0] as usize,
            LabelWidth::U64 => self.count_host.slice_mut::<u64>(1)[0] as usize,
        })
    }
}
