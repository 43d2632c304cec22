//! Fixed-`p` percolation batches on the GPU (`kernels/percolation_batch.cu`): one thread block
//! per lattice generates it from Philox (the layout of `measure::fixed_p`), labels it, joins the
//! pieces on its edges by winding and writes one 24-byte record; the `n_s` histogram is
//! accumulated on the device. Only the records and the histogram come back.
//!
//! Lattices of at most 65536 sites (L ≤ 256) keep everything in shared memory: a `u16` forest
//! slot per site, occupancy and root bitmaps (and the right/down bond bitmaps for bond
//! percolation), the edge tables. Larger ones keep the forest and the bitmaps in a slot of global
//! scratch per resident block (`4 + 1/4` bytes per site, `4 + 1/2` for bonds), the edge tables
//! still in shared memory.
//!
//! Site lattices whose edge tables do not fit either (`h + w` beyond about 3000 with
//! 4-connectivity on a torus, 2300 with 8-connectivity, 3600 open, on a 227 KiB block) go one at
//! a time through the full-lattice analyzer (`CudaAnalyzer`'s size counts) on the same stream:
//! `pb_generate` writes the lattice as bytes on the device, the analyzer labels it and counts its
//! clusters, and only the counts come back (`SampleStats::from_size_counts`). Such lattices fill
//! the GPU by themselves. Bond configurations that large are refused (the analyzer has no bond
//! masks): the CPU backend runs them.
//!
//! Bytes that must move per sample: the 24-byte record (and nothing per site): generation,
//! labeling and reduction stay on the chip for small lattices; for large ones the forest's
//! traffic (about 4 bytes written and read a few times per site) goes mostly to L2.

use super::analyzer::CudaAnalyzer;
use super::family::HEADERS;
use super::runtime::{cuda_err, kernel_args, DevBuf, Gpu, ModuleSpec};
use super::CudaDevice;
use crate::core::size_counts::SizeCounts;
use crate::measure::fixed_p::{threshold, BatchSpec, BatchStats, SampleStats};
use crate::Boundary;
use crate::{Connectivity, Error, Result};
use cudarc::driver::result as dres;

/// The family's kernel file.
pub(crate) const FILE: &str = "percolation_batch.cu";
/// Its kernels.
pub(crate) const KERNELS: &[&str] = &["pb_batch", "pb_generate"];

/// Sizes below this are counted in shared memory first (`PB_HS` in the kernel).
const SHARED_HIST: usize = 64;
/// Bytes before the tables: the per-lattice sums and the shared histogram.
const HEADER_BYTES: usize = 32 + 4 * SHARED_HIST;
/// Lattices per launch at most (the records of one launch: 24 MiB).
const MAX_LAUNCH: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PbKey {
    conn8: bool,
    bond: bool,
    small: bool,
}

impl ModuleSpec for PbKey {
    fn key(&self) -> u64 {
        1 << 40 | u64::from(self.bond) << 2 | u64::from(self.conn8) << 1 | u64::from(self.small)
    }
    fn name(&self) -> String {
        format!(
            "{FILE} ({}, {})",
            match (self.bond, self.conn8) {
                (true, _) => "bonds",
                (false, true) => "sites, 8-connectivity",
                (false, false) => "sites, 4-connectivity",
            },
            if self.small { "shared" } else { "global" }
        )
    }
    fn source(&self) -> String {
        format!(
            "#define SITE_T unsigned char\n#define CONN8 {}\n#define BOND {}\n#define SEGMENTS 0\n\
             #define BW 1\n#define BH 1\n#define SMALL {}\n#include \"common.cuh\"\n\
             #include \"{FILE}\"\n",
            u32::from(self.conn8),
            u32::from(self.bond),
            u32::from(self.small)
        )
    }
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        HEADERS
    }
    fn kernels(&self) -> Vec<&'static str> {
        KERNELS.to_vec()
    }
    fn shared_bytes(&self, _kernel: &str, max_optin: usize) -> Option<usize> {
        Some(max_optin)
    }
}

/// The kernel's parameters (`PbParams`), passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct PbParams {
    first: u64,
    count: u64,
    t: u64,
    input: u64,
    out: u64,
    hist: u64,
    scratch: u64,
    w: u32,
    h: u32,
    n: u32,
    nw: u32,
    wrap_x: u32,
    wrap_y: u32,
    key0: u32,
    key1: u32,
    scratch_words: u32,
    max_links: u32,
}

/// `pb_generate`'s parameters (`PgParams`), passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct PgParams {
    out: u64,
    t: u64,
    n: u32,
    idx_lo: u32,
    idx_hi: u32,
    key0: u32,
    key1: u32,
    pad: u32,
}

/// How one lattice shape runs: which variant, threads, shared bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub small: bool,
    pub threads: u32,
    pub shared: usize,
    pub tables: usize,
    pub max_links: usize,
    pub scratch_words: usize,
}

/// The plan of a lattice shape given the block's shared-memory limit.
///
/// # Errors
/// [`Error::InvalidArgument`] when even the edge tables do not fit in shared memory.
pub(crate) fn plan(shape: &BatchSpec, max_shared: usize) -> Result<Plan> {
    let (w, h) = (shape.width, shape.height);
    let n = w * h;
    let nw = n.div_ceil(32);
    let t = 2 * (h + w);
    let d = if shape.connectivity == Connectivity::Eight {
        3
    } else {
        1
    };
    let max_links = if shape.boundary.wraps_x() { h * d } else { 0 }
        + if shape.boundary.wraps_y() { w * d } else { 0 };
    let tables = (4 * (8 * t + 3 * max_links)).next_multiple_of(16);
    // Occupancy and roots; right and down bonds.
    let bitmaps = if shape.bonds { 4 * nw } else { 2 * nw };
    let small_bytes = HEADER_BYTES + tables + 4 * bitmaps + (2 * n).next_multiple_of(4);
    let threads = nw.next_multiple_of(32).clamp(128, 1024) as u32;
    if n <= 1 << 16 && t <= 1 << 16 && small_bytes <= max_shared {
        return Ok(Plan {
            small: true,
            threads,
            shared: small_bytes,
            tables,
            max_links,
            scratch_words: 0,
        });
    }
    let shared = HEADER_BYTES + tables;
    if shared > max_shared || n > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument(format!(
            "a {w} × {h} lattice's edge tables need {shared} bytes of shared memory; this GPU \
             gives a block {max_shared}: use the CPU backend"
        )));
    }
    Ok(Plan {
        small: false,
        threads,
        shared,
        tables,
        max_links,
        scratch_words: bitmaps + n,
    })
}

/// Fixed-`p` batches on one GPU, with its buffers kept between calls.
pub(crate) struct PercolationBatch {
    gpu: Gpu,
    records: DevBuf,
    hist: DevBuf,
    scratch: DevBuf,
    input: DevBuf,
    /// The full-lattice analyzer of the lattices too large for a block, on this stream, with the
    /// connectivity and boundary it was made for.
    large: Option<((Connectivity, Boundary), CudaAnalyzer)>,
}

impl PercolationBatch {
    /// A batch runner with a stream of its own on the device the front end resolved.
    pub(crate) fn on(device: &CudaDevice) -> Result<PercolationBatch> {
        let gpu = Gpu::new(device.ordinal())?;
        Ok(PercolationBatch {
            records: DevBuf::new(&gpu),
            hist: DevBuf::new(&gpu),
            scratch: DevBuf::new(&gpu),
            input: DevBuf::new(&gpu),
            large: None,
            gpu,
        })
    }

    /// Runs the batch (generated, or the `(count, h, w)` lattices of `input`) and returns the
    /// records in index order and the histogram (empty unless asked for).
    pub(crate) fn run(&mut self, spec: &BatchSpec, input: Option<&[u8]>) -> Result<BatchStats> {
        let shape = *spec;
        let plan = match plan(&shape, self.gpu.max_shared_optin) {
            Ok(plan) => plan,
            Err(_) if !shape.bonds => return self.run_large(spec, input),
            Err(e) => return Err(e),
        };
        if shape.bonds && input.is_some() {
            return Err(Error::InvalidArgument(
                "a batch of given lattices is site percolation: bond configurations are generated"
                    .into(),
            ));
        }
        let key = PbKey {
            conn8: shape.connectivity == Connectivity::Eight && !shape.bonds,
            bond: shape.bonds,
            small: plan.small,
        };
        self.gpu.bind()?;
        let func = self.gpu.module(&key)?.func("pb_batch").clone();
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(plan.threads, plan.shared, None)
            .map_err(|e| cuda_err("asking the batch kernel's occupancy", e))?
            .max(1) as u64;
        let resident = per_sm * u64::from(self.gpu.sms);
        let n = shape.width * shape.height;
        let bins = if spec.histogram { n + 1 } else { 0 };
        let mut out = BatchStats {
            samples: Vec::with_capacity(spec.count as usize),
            ns: vec![0; bins],
        };
        if spec.count == 0 {
            return Ok(out);
        }
        let launch = spec.count.min(MAX_LAUNCH);
        let grid = resident.min(launch).max(1);
        let rec_bytes = launch as usize * std::mem::size_of::<SampleStats>();
        let scratch_bytes = grid as usize * plan.scratch_words * 4;
        let in_bytes = if input.is_some() {
            launch as usize * n
        } else {
            0
        };
        let need = self.records.shortfall(rec_bytes)
            + self.hist.shortfall(bins * 8)
            + self.scratch.shortfall(scratch_bytes)
            + self.input.shortfall(in_bytes);
        if need > 0 {
            let (free, _) = self.gpu.mem_info()?;
            if need > free {
                return Err(Error::OutOfDeviceMemory { needed: need, free });
            }
        }
        self.records.ensure(rec_bytes.max(1))?;
        self.scratch.ensure(scratch_bytes.max(4))?;
        if bins > 0 {
            self.hist.ensure(bins * 8)?;
            self.gpu.memset_zero(self.hist.ptr, bins * 8)?;
        }
        if in_bytes > 0 {
            self.input.ensure(in_bytes)?;
        }
        let stream = self.gpu.stream.cu_stream();
        let mut done = 0u64;
        let mut host = vec![SampleStats::default(); launch as usize];
        while done < spec.count {
            let count = (spec.count - done).min(launch);
            if let Some(data) = input {
                let part = &data[done as usize * n..(done + count) as usize * n];
                // SAFETY: the device buffer holds `launch * n >= part.len()` bytes; the copy is
                // ordered before the launch on the same stream and `part` outlives the sync below.
                unsafe { dres::memcpy_htod_async(self.input.ptr, part, stream) }
                    .map_err(|e| cuda_err("copying the lattices to the GPU", e))?;
            }
            let params = PbParams {
                first: spec.first + done,
                count,
                t: threshold(spec.p),
                input: if input.is_some() { self.input.ptr } else { 0 },
                out: self.records.ptr,
                hist: if bins > 0 { self.hist.ptr } else { 0 },
                scratch: self.scratch.ptr,
                w: shape.width as u32,
                h: shape.height as u32,
                n: n as u32,
                nw: n.div_ceil(32) as u32,
                wrap_x: u32::from(shape.boundary.wraps_x()),
                wrap_y: u32::from(shape.boundary.wraps_y()),
                key0: spec.seed as u32,
                key1: (spec.seed >> 32) as u32,
                scratch_words: plan.scratch_words as u32,
                max_links: plan.max_links as u32,
            };
            let tables = plan.tables as u32;
            let g = grid.min(count) as u32;
            // SAFETY: the arguments match `pb_batch(const PbParams, u32)`; the records, scratch,
            // histogram and input buffers were sized above for this launch.
            unsafe {
                self.gpu.launch_shared(
                    &func,
                    (g, 1, 1),
                    (plan.threads, 1, 1),
                    plan.shared as u32,
                    &mut kernel_args![params, tables],
                )?;
            }
            let dst = &mut host[..count as usize];
            // SAFETY: `dst` lives until the synchronisation just below.
            unsafe { dres::memcpy_dtoh_async(dst, self.records.ptr, stream) }
                .map_err(|e| cuda_err("copying the batch's records from the GPU", e))?;
            self.gpu.sync()?;
            out.samples.extend_from_slice(&host[..count as usize]);
            done += count;
        }
        if bins > 0 {
            // SAFETY: the histogram holds `bins` words; synchronised below.
            unsafe { dres::memcpy_dtoh_async(&mut out.ns[..], self.hist.ptr, stream) }
                .map_err(|e| cuda_err("copying the histogram from the GPU", e))?;
            self.gpu.sync()?;
        }
        Ok(out)
    }
}

impl PercolationBatch {
    /// A batch of site lattices too large for a block: one lattice at a time, generated (or
    /// copied) into a device buffer, then labeled and counted by the full-lattice analyzer on
    /// the same stream.
    fn run_large(&mut self, spec: &BatchSpec, input: Option<&[u8]>) -> Result<BatchStats> {
        let (w, h) = (spec.width, spec.height);
        let n = w * h;
        let bins = if spec.histogram { n + 1 } else { 0 };
        let mut out = BatchStats {
            samples: Vec::with_capacity(spec.count as usize),
            ns: vec![0; bins],
        };
        if spec.count == 0 {
            return Ok(out);
        }
        let kind = (spec.connectivity, spec.boundary);
        if self.large.as_ref().map(|(k, _)| *k) != Some(kind) {
            let analyzer = CudaAnalyzer::with_stream(self.gpu.stream.clone(), kind.0, kind.1)?;
            self.large = Some((kind, analyzer));
        }
        let need = self.input.shortfall(n);
        if need > 0 {
            let (free, _) = self.gpu.mem_info()?;
            if need > free {
                return Err(Error::OutOfDeviceMemory { needed: need, free });
            }
        }
        self.input.ensure(n)?;
        self.gpu.bind()?;
        let key = PbKey {
            conn8: spec.connectivity == Connectivity::Eight,
            bond: false,
            small: false,
        };
        let func = self.gpu.module(&key)?.func("pb_generate").clone();
        let stream = self.gpu.stream.cu_stream();
        let t = threshold(spec.p);
        for k in 0..spec.count {
            let index = spec.first + k;
            match input {
                Some(data) => {
                    let part = &data[k as usize * n..(k as usize + 1) * n];
                    // SAFETY: the device buffer holds `n` bytes; `part` outlives the
                    // synchronisation in `finish_size_counts` below.
                    unsafe { dres::memcpy_htod_async(self.input.ptr, part, stream) }
                        .map_err(|e| cuda_err("copying a lattice to the GPU", e))?;
                }
                None => {
                    let params = PgParams {
                        out: self.input.ptr,
                        t,
                        n: n as u32,
                        idx_lo: index as u32,
                        idx_hi: (index >> 32) as u32,
                        key0: spec.seed as u32,
                        key1: (spec.seed >> 32) as u32,
                        pad: 0,
                    };
                    let blocks = n.div_ceil(4).div_ceil(256) as u32;
                    // SAFETY: the argument matches `pb_generate(const PgParams)`; the buffer
                    // holds the `n` bytes it writes.
                    unsafe {
                        self.gpu.launch_shared(
                            &func,
                            (blocks, 1, 1),
                            (256, 1, 1),
                            0,
                            &mut kernel_args![params],
                        )?;
                    }
                }
            }
            let analyzer = &mut self.large.as_mut().expect("made above").1;
            analyzer.queue_size_counts_at(self.input.ptr, h, w)?;
            let counts: SizeCounts = analyzer.finish_size_counts()?;
            let ns = (bins > 0).then_some(&mut out.ns[..]);
            out.samples.push(SampleStats::from_size_counts(&counts, ns));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::runtime::nvrtc::{compile_cubin, target_arch};
    use crate::Boundary;

    /// Both variants and connectivities compile with NVRTC (no GPU needed: only libnvrtc).
    #[test]
    fn every_variant_compiles() {
        if !super::super::runtime::nvrtc::tests::nvrtc_present() {
            return;
        }
        for (conn8, bond) in [(false, false), (true, false), (false, true)] {
            for small in [false, true] {
                let key = PbKey { conn8, bond, small };
                for arch in [target_arch(75).unwrap(), target_arch(90).unwrap()] {
                    let cubin = compile_cubin(&key.name(), &key.source(), key.headers(), &arch)
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert!(!cubin.is_empty());
                }
            }
        }
    }

    /// L ≤ 256 runs in shared memory on a 227 KiB block; larger lattices use global scratch.
    #[test]
    fn plans_pick_shared_memory_up_to_256() {
        let at = |l: usize, c: Connectivity| {
            let s = BatchSpec::new(c, Boundary::Periodic, l, l, 0.5, 1, 0, 1).unwrap();
            plan(&s, 232_448).unwrap()
        };
        for c in [Connectivity::Four, Connectivity::Eight] {
            assert!(at(64, c).small && at(256, c).small);
            assert!(!at(257, c).small && !at(1024, c).small);
        }
        // Bonds need two more bitmaps: still L = 256 in shared memory.
        let bond = |l: usize| {
            let s = BatchSpec::bond(Boundary::Periodic, l, l, 0.5, 1, 0, 1).unwrap();
            plan(&s, 232_448).unwrap()
        };
        assert!(bond(256).small && !bond(257).small);
        assert_eq!(
            bond(300).scratch_words,
            4 * (300 * 300usize).div_ceil(32) + 300 * 300
        );
    }

    /// The shapes the GPU test `gpu_batch_beyond_a_block_equals_cpu_batch` runs do not fit a
    /// 227 KiB block (so that they take the full-lattice path), and a shape just inside does.
    #[test]
    fn plans_refuse_what_a_block_cannot_hold() {
        let four = Connectivity::Four;
        let eight = Connectivity::Eight;
        let fits = |c, b, w, h| {
            let s = BatchSpec::new(c, b, w, h, 0.5, 1, 0, 1).unwrap();
            plan(&s, 232_448).is_ok()
        };
        assert!(!fits(four, Boundary::Periodic, 1600, 1500));
        assert!(!fits(eight, Boundary::Periodic, 1200, 1201));
        assert!(!fits(four, Boundary::Open, 2000, 1700));
        assert!(!fits(eight, Boundary::PeriodicY, 1700, 1300));
        assert!(!fits(four, Boundary::PeriodicX, 3700, 5));
        assert!(fits(four, Boundary::Periodic, 1500, 1500));
        assert!(fits(eight, Boundary::Periodic, 1100, 1100));
        assert!(!fits(four, Boundary::Open, 1, 1 << 20));
    }
}
