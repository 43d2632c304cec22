//! One strip on its device: its rows of the lattice, their labels, and the queued passes of the
//! join (`kernels/strips.cu`). Every strip has an engine (a stream) of its own, so strips on one
//! device (the loopback transport) run concurrently, as strips on several devices do.

use super::super::canonical::{self, Geo};
use super::super::engine::{family_of, Engine, Job};
use super::super::family::{Family, LabelWidth, ModuleKey, SiteType};
use super::super::runtime::{cuda_err, kernel_args, DevBuf, Gpu, Module, PinnedBuf};
use super::super::Numbering;
use super::layout::Strip;
use super::numbering::FLAG;
use crate::lattice::{Boundary, Connectivity};
use crate::{Algorithm, Error, Result};
use cudarc::driver::result as dres;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;

/// The family's kernel file.
pub(crate) const FILE: &str = "strips.cu";
/// The kernels of its module (besides canonical numbering's, which it uses too).
pub(crate) const KERNELS: &[&str] = &[
    "st_mark",
    "st_raw_final",
    "st_count",
    "st_gather",
    "st_final",
];

/// Threads per block of the elementwise and list kernels (`ST_THREADS`).
const THREADS: u32 = 256;
/// Blocks of the elementwise passes: a few waves of a large GPU, grid-stride beyond.
const MAX_BLOCKS: usize = 8192;

/// What the strips label: the same for every strip but the height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kind {
    pub site: SiteType,
    pub width: usize,
    pub connectivity: Connectivity,
    /// The lattice's boundary; a strip keeps only its `x` part.
    pub boundary: Boundary,
    pub segments: bool,
    pub algorithm: Algorithm,
}

/// The border rows of a strip, copied out of the pinned buffer once the strip is labeled.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub top: Vec<u32>,
    pub bottom: Vec<u32>,
    pub top_values: Vec<u32>,
    pub bottom_values: Vec<u32>,
}

/// A strip's device state.
pub(crate) struct StripGpu {
    pub strip: Strip,
    pub ordinal: usize,
    engine: Engine,
    input: DevBuf,
    labels: DevBuf,
    /// Small words: segment counts and the total, demotion pairs, targets, gathered slots.
    lists: DevBuf,
    up: PinnedBuf,
    down: PinnedBuf,
    /// Start and end of the strip's own labeling, and end of the seam rows' copy.
    events: [CudaEvent; 3],
    kind: Option<Kind>,
}

/// Device words of `lists` for `m` demotions and `k` targets of a strip of `sites` sites:
/// segment counts, the total (padded), the pairs, the targets and what is gathered for them.
fn list_layout(sites: usize, m: usize, k: usize) -> [usize; 5] {
    let counts = 0;
    let total = canonical::segments(sites).max(1);
    let pairs = total + 4;
    let targets = pairs + 2 * m;
    let gathered = targets + k;
    [counts, total, pairs, targets, gathered + k]
}

impl StripGpu {
    /// A strip on device `ordinal`, with a stream of its own.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] when the device cannot be opened, [`Error::Cuda`].
    pub(crate) fn new(strip: Strip, ordinal: usize) -> Result<StripGpu> {
        let gpu = Gpu::new(ordinal)?;
        let event = || {
            gpu.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| cuda_err("creating a timing event", e))
        };
        let events = [event()?, event()?, event()?];
        Ok(StripGpu {
            strip,
            ordinal,
            input: DevBuf::new(&gpu),
            labels: DevBuf::new(&gpu),
            lists: DevBuf::new(&gpu),
            up: PinnedBuf::new(&gpu.ctx),
            down: PinnedBuf::new(&gpu.ctx),
            events,
            engine: Engine::new(gpu),
            kind: None,
        })
    }

    fn sites(&self) -> usize {
        self.strip.rows * self.kind.map_or(0, |k| k.width)
    }

    /// The raw labeling job of this strip: open in `y`, the lattice's `x` boundary.
    fn job(&self, kind: &Kind) -> Result<Job> {
        Ok(Job {
            site: kind.site,
            height: self.strip.rows,
            width: kind.width,
            connectivity: kind.connectivity,
            boundary: if kind.boundary.wraps_x() {
                Boundary::PeriodicX
            } else {
                Boundary::Open
            },
            segments: kind.segments,
            family: family_of(kind.algorithm, &self.engine.gpu, kind.segments)?,
            numbering: Numbering::Raw,
            labels: LabelWidth::U32,
            short_tiles: false,
            write_once: false,
        })
    }

    /// The strip kernels' module key.
    fn key(kind: &Kind) -> ModuleKey {
        ModuleKey {
            family: Family::Strips,
            site: kind.site,
            conn8: false,
            segments: false,
            labels: LabelWidth::U32,
            short_tiles: false,
        }
    }

    /// Compiles the kernels and allocates the rows, labels and scratch for `kind`, after checking
    /// that the device has the memory.
    ///
    /// # Errors
    /// [`Error::OutOfDeviceMemory`], [`Error::KernelCompile`], [`Error::Cuda`].
    pub(crate) fn prepare(&mut self, kind: Kind) -> Result<()> {
        self.kind = Some(kind);
        let job = self.job(&kind)?;
        let n = job.sites();
        let (in_bytes, out_bytes) = (n * kind.site.size(), n * 4);
        self.engine.reserve(
            [(&mut self.input, in_bytes), (&mut self.labels, out_bytes)],
            &job,
        )?;
        self.engine.gpu.module(&Self::key(&kind))?;
        let row = kind.width * (4 + kind.site.size());
        self.down.ensure(2 * row + 16)
    }

    /// Copies the contiguous `rows` (the strip's sites) into the strip's input, waiting.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the copy fails.
    pub(crate) fn upload<T>(&mut self, rows: &[T]) -> Result<()> {
        // Raw driver calls act on the current context: with strips on several devices it must
        // be this strip's before every copy or launch.
        self.engine.gpu.bind()?;
        // On the strip's stream, so that its kernels are ordered after the copy (a copy on the
        // legacy stream does not order work on the strip's own stream).
        // SAFETY: `input` holds the strip's sites (prepare) and `rows` exactly that many; the
        // pageable source is staged before the call returns and lives until the wait below.
        unsafe {
            dres::memcpy_htod_async(self.input.ptr, rows, self.engine.gpu.stream.cu_stream())
        }
        .map_err(|e| cuda_err("copying a strip to its GPU", e))?;
        self.engine.gpu.sync()
    }

    /// Copies the strip's labels into `out` (its sites), waiting.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the labeling or the copy failed.
    pub(crate) fn download(&mut self, out: &mut [u32]) -> Result<()> {
        self.engine.gpu.bind()?;
        // SAFETY: `labels` holds the strip's sites and `out` exactly that many; the wait below
        // ends the copy before `out` is released.
        unsafe {
            dres::memcpy_dtoh_async(out, self.labels.ptr, self.engine.gpu.stream.cu_stream())
        }
        .map_err(|e| cuda_err("copying a strip's labels from its GPU", e))?;
        self.engine.gpu.sync()
    }

    /// Queues the strip's raw labeling and the copies of its border rows (labels, and values for
    /// segments) to the host.
    ///
    /// # Errors
    /// [`Error::Cuda`] when a launch or copy fails.
    pub(crate) fn queue_label(&mut self) -> Result<()> {
        let kind = self
            .kind
            .ok_or_else(|| Error::Cuda("strip not prepared".into()))?;
        let job = self.job(&kind)?;
        let stream = self.engine.gpu.stream.clone();
        self.events[0]
            .record(&stream)
            .map_err(|e| cuda_err("recording a timing event", e))?;
        self.engine.run(&job, self.input.ptr, self.labels.ptr)?;
        self.events[1]
            .record(&stream)
            .map_err(|e| cuda_err("recording a timing event", e))?;
        let (w, size) = (kind.width, kind.site.size());
        let last = (self.strip.rows - 1) * w;
        let down = self.down.slice_mut::<u8>(2 * w * (4 + size));
        let (labels, values) = down.split_at_mut(8 * w);
        let (top, bottom) = labels.split_at_mut(4 * w);
        let mut copies = vec![
            (top, self.labels.ptr),
            (bottom, self.labels.ptr + (4 * last) as u64),
        ];
        if kind.segments {
            let (vt, vb) = values.split_at_mut(size * w);
            copies.push((vt, self.input.ptr));
            copies.push((vb, self.input.ptr + (size * last) as u64));
        }
        for (dst, src) in copies {
            // SAFETY: pinned destinations of one row each, alive and untouched until the
            // synchronisation in `finish_label`; the sources are rows of the strip's buffers.
            unsafe { dres::memcpy_dtoh_async(dst, src, stream.cu_stream()) }
                .map_err(|e| cuda_err("copying a strip's border rows", e))?;
        }
        self.events[2]
            .record(&stream)
            .map_err(|e| cuda_err("recording a timing event", e))
    }

    /// Waits for [`StripGpu::queue_label`]; returns the strip's local cluster count, its border
    /// rows, and the device times (ms) of its labeling and of the rows' copy.
    ///
    /// # Errors
    /// [`Error::Cuda`] when the labeling failed.
    pub(crate) fn finish_label(&mut self) -> Result<(usize, Rows, f64, f64)> {
        let count = self.engine.count()?;
        let kind = self
            .kind
            .ok_or_else(|| Error::Cuda("strip not prepared".into()))?;
        let (w, size) = (kind.width, kind.site.size());
        let down = self.down.slice_mut::<u8>(2 * w * (4 + size));
        let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let value = |b: &[u8]| match size {
            1 => u32::from(b[0]),
            2 => u32::from(u16::from_ne_bytes([b[0], b[1]])),
            _ => word(b),
        };
        let (labels, values) = down.split_at(8 * w);
        let mut rows = Rows {
            top: labels[..4 * w].chunks_exact(4).map(word).collect(),
            bottom: labels[4 * w..].chunks_exact(4).map(word).collect(),
            ..Rows::default()
        };
        if kind.segments {
            rows.top_values = values[..size * w].chunks_exact(size).map(value).collect();
            rows.bottom_values = values[size * w..].chunks_exact(size).map(value).collect();
        }
        let ms = |a: &CudaEvent, b: &CudaEvent| {
            a.elapsed_ms(b)
                .map(f64::from)
                .map_err(|e| cuda_err("reading a timing event", e))
        };
        let label_ms = ms(&self.events[0], &self.events[1])?;
        let copy_ms = ms(&self.events[1], &self.events[2])?;
        Ok((count, rows, label_ms, copy_ms))
    }

    /// Copies `words` to the start of the pinned upload buffer and queues them into `lists` at
    /// word `at`.
    fn upload_words(&mut self, words: &[u32], at: usize) -> Result<()> {
        if words.is_empty() {
            return Ok(());
        }
        self.engine.gpu.bind()?;
        self.up.ensure(4 * words.len())?;
        let up = self.up.slice_mut::<u32>(words.len());
        up.copy_from_slice(words);
        // SAFETY: the pinned source stays untouched until the strip's stream has been waited
        // for (the next upload comes after a synchronisation); `lists` holds `at + len` words.
        unsafe {
            dres::memcpy_htod_async(
                self.lists.ptr + (4 * at) as u64,
                &*up,
                self.engine.gpu.stream.cu_stream(),
            )
        }
        .map_err(|e| cuda_err("copying the seam join's answer to a GPU", e))
    }

    /// Grows `lists` for `m` demotions and `k` targets.
    fn ensure_lists(&mut self, m: usize, k: usize) -> Result<[usize; 5]> {
        let layout = list_layout(self.sites(), m, k);
        self.lists.ensure(4 * layout[4])?;
        Ok(layout)
    }

    /// The strip kernels' module (compiled by [`StripGpu::prepare`]).
    fn module(&self) -> Result<(&Gpu, &Module)> {
        let kind = self
            .kind
            .ok_or_else(|| Error::Cuda("strip not prepared".into()))?;
        let gpu = &self.engine.gpu;
        let module = gpu
            .get_module(&Self::key(&kind))
            .ok_or_else(|| Error::Cuda("strip kernels missing after preparation".into()))?;
        Ok((gpu, module))
    }

    /// Queues `st_mark` of the `m` pairs at word `at` of `lists`.
    fn mark(&self, at: usize, m: usize) -> Result<()> {
        if m == 0 {
            return Ok(());
        }
        let (l, p, m) = (self.labels.ptr, self.lists.ptr + (4 * at) as u64, m as u32);
        let (gpu, module) = self.module()?;
        // SAFETY: `l` holds the strip's labels, every pair's slot is one of its sites, and `p`
        // holds the `m` pairs.
        unsafe {
            gpu.launch(
                module.func("st_mark"),
                (m.div_ceil(THREADS).min(1024), 1, 1),
                (THREADS, 1, 1),
                &mut kernel_args![l, p, m],
            )
        }
    }

    /// Queues the elementwise pass `kernel(labels, sites, offset, vec)`.
    fn elementwise(&self, kernel: &str, offset: u32) -> Result<()> {
        let (l, n) = (self.labels.ptr, self.sites() as u64);
        let vec = u32::from(l % 16 == 0);
        let blocks = self.elementwise_blocks();
        let (gpu, module) = self.module()?;
        // SAFETY: `l` holds the strip's `n` labels.
        unsafe {
            gpu.launch(
                module.func(kernel),
                (blocks, 1, 1),
                (THREADS, 1, 1),
                &mut kernel_args![l, n, offset, vec],
            )
        }
    }

    /// Grid of an elementwise pass over the strip.
    fn elementwise_blocks(&self) -> u32 {
        self.sites().div_ceil(THREADS as usize).clamp(1, MAX_BLOCKS) as u32
    }

    /// Raw numbering: queues the demoted roots' global ids into their slots and the elementwise
    /// pass that gives every site its global root + 1 (`offset`: the strip's first site).
    ///
    /// # Errors
    /// [`Error::Cuda`] when a copy or launch fails.
    pub(crate) fn queue_raw(
        &mut self,
        flagged: &[[u32; 2]],
        plain: &[[u32; 2]],
        offset: u32,
    ) -> Result<()> {
        self.engine.gpu.bind()?;
        let m = flagged.len();
        let at = self.ensure_lists(2 * m, 0)?[2];
        // One upload of both lists: the pinned source is not touched again before a wait.
        let mut words = flagged.as_flattened().to_vec();
        words.extend_from_slice(plain.as_flattened());
        self.upload_words(&words, at)?;
        self.mark(at, m)?;
        self.elementwise("st_raw_final", offset)?;
        self.mark(at + 2 * m, plain.len())
    }

    /// Canonical numbering, first half: marks the demoted roots (`pairs`: `FLAG` values, not
    /// roots any more), counts and ranks the strip's remaining roots (each root's slot gets
    /// `FLAG | rank` within the strip) and reads back the slots of `targets`, then the strip's
    /// root count, to the host.
    ///
    /// # Errors
    /// [`Error::Cuda`] when a copy or launch fails.
    pub(crate) fn queue_rank(&mut self, pairs: &[[u32; 2]], targets: &[u32]) -> Result<()> {
        self.engine.gpu.bind()?;
        let kind = self
            .kind
            .ok_or_else(|| Error::Cuda("strip not prepared".into()))?;
        let [counts, total, at_pairs, at_targets, _] =
            self.ensure_lists(pairs.len(), targets.len())?;
        // Room for the count and the gathered slots where the border rows were (read by now).
        self.down.ensure(4 * (1 + targets.len()))?;
        // One upload: the pairs, then the targets.
        let mut words = pairs.as_flattened().to_vec();
        words.extend_from_slice(targets);
        self.upload_words(&words, at_pairs)?;
        self.mark(at_pairs, pairs.len())?;
        let geo = Geo::new(&Job {
            family: Family::Strips,
            ..self.job(&kind)?
        });
        let base = self.lists.ptr;
        let at = |w: usize| base + (4 * w) as u64;
        let (input, l) = (self.input.ptr, self.labels.ptr);
        let (counts, total) = (at(counts), at(total));
        let (t, g) = (at(at_targets), at(at_targets + targets.len()));
        let k = targets.len() as u32;
        let nseg = canonical::segments(self.sites()) as u32;
        let (gpu, module) = self.module()?;
        // SAFETY: the arguments match the kernels' parameters; `input` and `l` hold the strip's
        // sites, `counts` one word per segment, then the total, the pairs, the targets and room
        // for what is gathered (list_layout).
        unsafe {
            gpu.launch(
                module.func("st_count"),
                (nseg, 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, l, geo, counts],
            )?;
            gpu.launch(
                module.func("canon_scan"),
                (1, 1, 1),
                (1024, 1, 1),
                &mut kernel_args![counts, nseg, total],
            )?;
            gpu.launch(
                module.func("canon_rank"),
                (nseg, 1, 1),
                (256, 1, 1),
                &mut kernel_args![input, l, geo, counts],
            )?;
            if k > 0 {
                gpu.launch(
                    module.func("st_gather"),
                    (k.div_ceil(THREADS).min(1024), 1, 1),
                    (THREADS, 1, 1),
                    &mut kernel_args![l, t, k, g],
                )?;
            }
        }
        let stream = self.engine.gpu.stream.cu_stream();
        let down = self.down.slice_mut::<u32>(1 + targets.len());
        let (count_dst, gathered_dst) = down.split_at_mut(1);
        // SAFETY: pinned destinations, untouched until `finish_rank` waits.
        unsafe {
            dres::memcpy_dtoh_async(count_dst, total, stream)
                .map_err(|e| cuda_err("reading a strip's root count", e))?;
            if k > 0 {
                dres::memcpy_dtoh_async(gathered_dst, g, stream)
                    .map_err(|e| cuda_err("reading the ranks of a strip's roots", e))?;
            }
        }
        Ok(())
    }

    /// Waits for [`StripGpu::queue_rank`]: the strip's count of global roots and the slots of its
    /// targets (`FLAG | rank`).
    ///
    /// # Errors
    /// [`Error::Cuda`] when a kernel failed.
    pub(crate) fn finish_rank(&mut self, targets: usize) -> Result<(u64, Vec<u32>)> {
        self.engine.gpu.sync()?;
        let down = self.down.slice_mut::<u32>(1 + targets);
        Ok((u64::from(down[0]), down[1..].to_vec()))
    }

    /// Canonical numbering, second half: the demoted roots' values (`pairs`, `FLAG | number - 1
    /// - first` modulo 2^31) into their slots and the elementwise pass that gives every site its
    /// number (`first`: the clusters of the strips above, before 2^31).
    ///
    /// # Errors
    /// [`Error::Cuda`] when a copy or launch fails.
    pub(crate) fn queue_final(&mut self, pairs: &[[u32; 2]], first: u32) -> Result<()> {
        self.engine.gpu.bind()?;
        debug_assert!(first < FLAG);
        let at = self.ensure_lists(pairs.len(), 0)?[2];
        self.upload_words(pairs.as_flattened(), at)?;
        self.mark(at, pairs.len())?;
        self.elementwise("st_final", first)
    }

    /// Waits for the strip's queued work.
    ///
    /// # Errors
    /// [`Error::Cuda`] when a kernel failed.
    pub(crate) fn sync(&self) -> Result<()> {
        self.engine.gpu.sync()
    }
}
