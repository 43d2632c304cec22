//! Fixed-`p` sampling in batches: `K` lattices of `L × M` sites at occupation `p` (site
//! percolation) or bond configurations at bond probability `p` (bond percolation), generated
//! from Philox 4×32-10 keyed by `(seed, sample index)` (the counter layout is documented at
//! [`threshold`]'s module, `measure::fixed_p`, and repeated here) and reduced to per-sample
//! statistics ([`SampleStats`]: wrapping/spanning flags, largest cluster, `Σ′ s²`, occupied and
//! percolating sites) and an accumulated `n_s` histogram. The same call runs on the CPU (rayon
//! over samples; the result does not depend on the thread count) or on a GPU (one thread block
//! per lattice, nothing but the statistics leaves the device), with identical results.
//!
//! Counter layout: key = `[seed mod 2³², seed >> 32]`, counter = `[b, index mod 2³², index >> 32,
//! t mod 2³²]`, `t = floor(p · 2³²)`; site `i = y · L + x` is occupied when word `i mod 4` of
//! block `b = i / 4` is below `t`. Bonds: bond `d` (0 `right`, 1 `down`) of site `i` is open
//! when word `j mod 4` of block `2³¹ + j / 4` is below `t`, `j = 2 i + d`.
//!
//! ```
//! use clusterlab::percolation::{BatchSampler, BatchSpec};
//! use clusterlab::{Backend, Boundary, Connectivity, Options};
//!
//! let spec = BatchSpec::new(Connectivity::Four, Boundary::Periodic, 32, 32, 0.6, 7, 0, 100)?;
//! let mut sampler = BatchSampler::new(&Options::default().backend(Backend::Cpu))?;
//! let batch = sampler.sample(&spec)?;
//! let wrapping = batch.samples.iter().filter(|s| s.along_x()).count();
//! assert!(wrapping > 20 && wrapping < 90);
//! # Ok::<(), clusterlab::Error>(())
//! ```

use crate::core::bonds::PackedBonds;
use crate::cpu::pool::CpuPool;
use crate::device::{self, Device};
use crate::measure::fixed_p::{check_shape, fill_sites};
pub use crate::measure::fixed_p::{threshold, BatchSpec, BatchStats, SampleStats, MAX_BATCH_SITES};
use crate::measure::wrapping::{Joined, WRAP_X, WRAP_Y};
use crate::{Backend, Boundary, Connectivity, Labeler, Options, Parallelism, Result, SizeCounts};
use ndarray::{Array2, Array3, ArrayView2, ArrayView3, Axis};
use rayon::prelude::*;

/// Runs fixed-`p` batches on the device `Options` resolve to ([`Backend::Auto`]: a GPU when
/// one opens, else the CPU's threads), with the device's buffers kept between calls.
pub struct BatchSampler {
    device: Device,
    gpu: Option<crate::cuda::PercolationBatch>,
}

impl BatchSampler {
    /// A sampler on the device `options` ask for (connectivity and boundary come with each
    /// batch; the algorithm is not used).
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) for [`Backend::Cuda`] without a usable GPU.
    pub fn new(options: &Options) -> Result<BatchSampler> {
        let device = match options.backend {
            Backend::Cpu => Device::Cpu(CpuPool::new(options.parallelism)),
            // Generated, labeled and reduced on the device: where `Auto` finds the GPU faster.
            _ => Device::resolve_for(
                &options.algorithm(crate::Algorithm::Auto),
                device::Work::Resident,
            )?,
        };
        Ok(BatchSampler { device, gpu: None })
    }

    /// `"cpu"` or `"cuda:N"`.
    pub fn backend_name(&self) -> String {
        self.device.name()
    }

    /// Whether batches run on a GPU.
    pub fn is_gpu(&self) -> bool {
        self.device.is_gpu()
    }

    /// Generates and reduces the batch `spec`.
    ///
    /// # Errors
    /// As [`BatchSpec::check`]; on a GPU [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a lattice whose edge
    /// tables do not fit in a block's shared memory, [`Error::OutOfDeviceMemory`](crate::Error::OutOfDeviceMemory),
    /// [`Error::Cuda`](crate::Error::Cuda); on the CPU a bad thread count.
    pub fn sample(&mut self, spec: &BatchSpec) -> Result<BatchStats> {
        spec.check()?;
        match &self.device {
            Device::Cpu(pool) => cpu_batch(pool, spec, None),
            Device::Cuda(d) => {
                if self.gpu.is_none() {
                    self.gpu = Some(crate::cuda::PercolationBatch::on(d)?);
                }
                let gpu = self.gpu.as_mut().expect("made above");
                gpu.run(spec, None)
            }
        }
    }

    /// Reduces `K` given lattices (a `(K, H, W)` array, nonzero = occupied; site percolation) to
    /// the statistics of [`BatchSampler::sample`]: the batch API for an ensemble made elsewhere.
    ///
    /// # Errors
    /// As [`BatchSampler::sample`].
    pub fn analyze_batch(
        &mut self,
        lattices: ArrayView3<'_, u8>,
        connectivity: Connectivity,
        boundary: Boundary,
        histogram: bool,
    ) -> Result<BatchStats> {
        let (k, h, w) = lattices.dim();
        check_shape(w, h)?;
        let spec = BatchSpec {
            bonds: false,
            connectivity,
            boundary,
            width: w,
            height: h,
            p: 0.0,
            seed: 0,
            first: 0,
            count: k as u64,
            histogram,
        };
        let owned;
        let data = match lattices.as_slice() {
            Some(s) => s,
            None => {
                owned = lattices.as_standard_layout().into_owned();
                owned.as_slice().expect("standard layout")
            }
        };
        match &self.device {
            Device::Cpu(pool) => cpu_batch(pool, &spec, Some(data)),
            Device::Cuda(d) => {
                if self.gpu.is_none() {
                    self.gpu = Some(crate::cuda::PercolationBatch::on(d)?);
                }
                self.gpu
                    .as_mut()
                    .expect("made above")
                    .run(&spec, Some(data))
            }
        }
    }
}

/// Labels each lattice of a `(K, H, W)` stack (nonzero = occupied) with the connectivity,
/// boundary and backend of `options`: labels `1..=n_k` per lattice in scipy's numbering, and the
/// counts `n_k`. On the CPU the lattices run in parallel (one sequential labeler per thread); on
/// a GPU one after the other through one labeler (each lattice fills the device by itself).
///
/// # Errors
/// As [`Labeler::label_into`]; [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) for
/// [`Backend::Cuda`] without a GPU.
pub fn label_batch(
    lattices: ArrayView3<'_, u8>,
    options: &Options,
) -> Result<(Array3<u32>, Vec<usize>)> {
    let (k, h, w) = lattices.dim();
    let mut labels = Array3::<u32>::zeros((k, h, w));
    let device = match options.backend {
        Backend::Cpu => Device::Cpu(CpuPool::new(options.parallelism)),
        _ => Device::resolve(options)?,
    };
    let counts = match &device {
        Device::Cuda(_) => {
            let mut labeler = Labeler::with_options(*options)?;
            lattices
                .axis_iter(Axis(0))
                .zip(labels.axis_iter_mut(Axis(0)))
                .map(|(l, out)| labeler.label_into(l, out))
                .collect::<Result<Vec<_>>>()?
        }
        Device::Cpu(pool) => {
            let one = options
                .backend(Backend::Cpu)
                .parallelism(Parallelism::Sequential);
            Labeler::with_options(one)?;
            pool.install(|_| {
                lattices
                    .axis_iter(Axis(0))
                    .into_par_iter()
                    .zip(labels.axis_iter_mut(Axis(0)).into_par_iter())
                    .map_init(
                        || Labeler::with_options(one).expect("options checked above"),
                        |labeler, (l, out)| labeler.label_into(l, out),
                    )
                    .collect::<Result<Vec<_>>>()
            })??
        }
    };
    Ok((labels, counts))
}

/// One worker's buffers.
struct Work {
    /// Site percolation: the size counts on the spec's boundary (no label image, no pass over
    /// one: `SampleStats::from_size_counts`).
    counter: Labeler,
    counts: SizeCounts,
    /// Bond percolation: the open sheet's labels, joined here across the wrapped edges.
    labeler: Labeler,
    lattice: Array2<u8>,
    bonds: PackedBonds,
    labels: Array2<u32>,
    piece_size: Vec<u32>,
    size: Vec<u32>,
    touch: Vec<u8>,
    joined: Joined,
}

const LEFT: u8 = 1;
const RIGHT: u8 = 2;
const TOP: u8 = 4;
const BOTTOM: u8 = 8;

impl Work {
    fn new(spec: &BatchSpec) -> Result<Work> {
        let on_cpu = |boundary| {
            Labeler::with_options(
                Options::new(spec.connectivity, boundary)
                    .backend(Backend::Cpu)
                    .parallelism(Parallelism::Sequential),
            )
        };
        // (Only bond batches label: site batches keep no label image.)
        let labels = if spec.bonds {
            (spec.height, spec.width)
        } else {
            (0, 0)
        };
        Ok(Work {
            counter: on_cpu(spec.boundary)?,
            counts: SizeCounts::new(),
            labeler: on_cpu(Boundary::Open)?,
            lattice: Array2::zeros((spec.height, spec.width)),
            bonds: PackedBonds::default(),
            labels: Array2::zeros(labels),
            piece_size: Vec::new(),
            size: Vec::new(),
            touch: Vec::new(),
            joined: Joined::default(),
        })
    }

    /// Site percolation: the size counts of `lattice`, reduced. Bond percolation: labels the
    /// open sheet of `self.bonds`, joins the pieces across the wrapped edges by winding and
    /// reduces.
    fn stats(
        &mut self,
        lattice: ArrayView2<'_, u8>,
        spec: &BatchSpec,
        ns: &mut [u64],
    ) -> Result<SampleStats> {
        if !spec.bonds {
            self.counter.size_counts_into(lattice, &mut self.counts)?;
            let ns = (!ns.is_empty()).then_some(ns);
            return Ok(SampleStats::from_size_counts(&self.counts, ns));
        }
        let pieces = self
            .labeler
            .label_packed_bonds_into(&self.bonds, self.labels.view_mut())?;
        self.piece_size.clear();
        self.piece_size.resize(pieces + 1, 0);
        let mut occupied = 0u32;
        for &l in self.labels.iter() {
            self.piece_size[l as usize] += 1;
            occupied += u32::from(l != 0);
        }
        let (h, w) = (spec.height, spec.width);
        let (labels, bonds) = (&self.labels, &self.bonds);
        self.joined
            .join_by(h, w, pieces, spec.connectivity, spec.boundary, |s, t, k| {
                let (a, b) = (labels[s], labels[t]);
                let joined = !spec.bonds || wrapping_bond_open(bonds, s, t, k);
                (a != 0 && b != 0 && joined).then_some((a, b))
            });
        let j = &self.joined;
        self.size.clear();
        self.size.resize(j.count + 1, 0);
        for p in 1..=pieces {
            self.size[j.map[p] as usize] += self.piece_size[p];
        }
        // Edges touched, along the open axes only.
        self.touch.clear();
        self.touch.resize(j.count + 1, 0);
        let mut mark = |y: usize, x: usize, f: u8| {
            let l = self.labels[(y, x)];
            if l != 0 {
                self.touch[j.map[l as usize] as usize] |= f;
            }
        };
        if !spec.boundary.wraps_x() {
            for y in 0..h {
                mark(y, 0, LEFT);
                mark(y, w - 1, RIGHT);
            }
        }
        if !spec.boundary.wraps_y() {
            for x in 0..w {
                mark(0, x, TOP);
                mark(h - 1, x, BOTTOM);
            }
        }
        let mut s = SampleStats {
            occupied,
            ..SampleStats::default()
        };
        for c in 1..=j.count {
            let (size, t, wr) = (self.size[c], self.touch[c], j.wraps[c]);
            let px = wr & WRAP_X != 0 || t & (LEFT | RIGHT) == LEFT | RIGHT;
            let py = wr & WRAP_Y != 0 || t & (TOP | BOTTOM) == TOP | BOTTOM;
            s.largest = s.largest.max(size);
            if px || py {
                s.percolating += size;
                if px {
                    s.flags |= SampleStats::X;
                }
                if py {
                    s.flags |= SampleStats::Y;
                }
                if px && py {
                    s.flags |= SampleStats::BOTH;
                }
            } else {
                s.finite_s2 += u64::from(size) * u64::from(size);
                if let Some(b) = ns.get_mut(size as usize) {
                    *b += 1;
                }
            }
        }
        Ok(s)
    }
}

/// Whether the bond of a link across a wrapped edge (from `s` to `t`, crossing `k` periods; an
/// edge neighbour) is open: the `right` bond of the site in the last column, or the `down` bond
/// of the site in the last row. On a torus one site wide `s` and `t` coincide and `k` says which
/// bond it is; on one two sites wide `k` tells the wrapping bond from the inner one.
fn wrapping_bond_open(
    bonds: &PackedBonds,
    s: (usize, usize),
    t: (usize, usize),
    k: [i32; 2],
) -> bool {
    match k {
        [1, 0] => bonds.right(s.0, s.1),
        [-1, 0] => bonds.right(t.0, t.1),
        [0, 1] => bonds.down(s.0, s.1),
        [0, -1] => bonds.down(t.0, t.1),
        _ => false, // diagonal: bonds join edge neighbours only
    }
}

/// The CPU batch: contiguous chunks of samples per thread, concatenated in index order, and the
/// histograms summed (integers), so the result does not depend on the threads.
fn cpu_batch(pool: &CpuPool, spec: &BatchSpec, input: Option<&[u8]>) -> Result<BatchStats> {
    let count = spec.count;
    let sites = spec.sites();
    let bins = if spec.histogram { sites + 1 } else { 0 };
    if count == 0 {
        return Ok(BatchStats {
            samples: Vec::new(),
            ns: vec![0; bins],
        });
    }
    let t = threshold(spec.p);
    let parts = pool.install(|threads| {
        let chunks = (threads as u64 * 4).min(count);
        (0..chunks)
            .into_par_iter()
            .map(|c| -> Result<(Vec<SampleStats>, Vec<u64>)> {
                let lo = count * c / chunks;
                let hi = count * (c + 1) / chunks;
                let mut work = Work::new(spec)?;
                let mut ns = vec![0u64; bins];
                let mut out = Vec::with_capacity((hi - lo) as usize);
                for k in lo..hi {
                    let mut lattice = std::mem::take(&mut work.lattice);
                    let slice = lattice.as_slice_mut().expect("standard layout");
                    match input {
                        Some(data) => {
                            slice.copy_from_slice(&data[k as usize * sites..][..sites]);
                        }
                        None if spec.bonds => spec.fill_bonds(spec.first + k, &mut work.bonds),
                        None => fill_sites(spec.seed, spec.first + k, t, slice),
                    }
                    out.push(work.stats(lattice.view(), spec, &mut ns)?);
                    work.lattice = lattice;
                }
                Ok((out, ns))
            })
            .collect::<Vec<_>>()
    })?;
    let mut total = BatchStats {
        samples: Vec::with_capacity(count as usize),
        ns: vec![0; bins],
    };
    for part in parts {
        let (s, ns) = part?;
        total.samples.extend(s);
        for (a, b) in total.ns.iter_mut().zip(ns) {
            *a += b;
        }
    }
    Ok(total)
}
