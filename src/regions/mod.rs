//! Seeded regions (connected regions, "magic wand", flood fill without the painting): every site
//! connected to a seed through sites that meet a tolerance criterion, as PARAFILL (Troendle &
//! Jang) computes it, with optional absorption of the enclosed unconnected regions.
//!
//! ```
//! use clusterlab::regions::{region_from_seeds, Criterion, Reference};
//! use ndarray::array;
//!
//! let image = array![
//!     [10u8, 12, 90, 11],
//!     [11, 90, 13, 12],
//!     [95, 10, 11, 10],
//! ];
//! // Sites within 5 of the seed's own value, 4-connected to the seed (row 0, column 0).
//! let mask = region_from_seeds(image.view(), &[(0, 0)], &Criterion::new(5.0))?;
//! assert_eq!(mask, array![[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]);
//! // With a fixed reference value instead, from two seeds at once.
//! let c = Criterion::new(2.0).reference(Reference::Value(vec![11.0]));
//! let mask = region_from_seeds(image.view(), &[(0, 0), (2, 2)], &c)?;
//! assert_eq!(mask, array![[1, 1, 0, 1], [1, 0, 1, 1], [0, 1, 1, 1]]);
//! # Ok::<(), clusterlab::Error>(())
//! ```
//!
//! ## Definitions
//! - A field is `H × W` ([`ArrayView2`](ndarray::ArrayView2)) or `H × W × C` ([`ArrayView3`](ndarray::ArrayView3), `C` channels per site)
//!   of `u8` or `f32`; seeds are `(y, x)` = (row, column).
//! - Site `s` meets the criterion for the reference `r` when, in every channel `k`,
//!   `|value(s, k) − r[k]| ≤ tolerance[k]`, computed in `f32` (exact for `u8` values). A NaN
//!   value never meets it.
//! - [`Reference::Seed`]: the region grown from each seed uses **that seed's own value** as its
//!   reference; with several seeds, the result is the union of the regions grown from each.
//!   A seed whose own value is NaN grows nothing. [`Reference::Value`]: one reference for every
//!   seed. A seed that does not meet the criterion grows nothing (it is not in the mask).
//! - The region of a seed: the sites connected to it (4- or 8-connectivity, across wrapping
//!   edges for a periodic [`Boundary`](crate::Boundary)) through sites meeting the criterion.
//! - Absorption ([`Criterion::absorb`]): every site of the complement of the union that cannot
//!   be reached from outside the lattice without crossing the union is added to it — holes, and
//!   everything in them, nested holes and islands alike (PARAFILL's absorption of unconnected
//!   interior regions; scikit-image's `area_filled` for the mask). The outside is reached through
//!   the dual connectivity (8 for a 4-connected region, 4 for an 8-connected one) and lies
//!   beyond the non-wrapping edges: all four for [`Boundary::Open`](crate::Boundary::Open), top and bottom for
//!   [`Boundary::PeriodicX`](crate::Boundary::PeriodicX), left and right for [`Boundary::PeriodicY`](crate::Boundary::PeriodicY). A torus has no
//!   outside, so absorption with [`Boundary::Periodic`](crate::Boundary::Periodic) is refused.
//! - The output is a mask of the field's shape, `1` in the region, `0` elsewhere: a lattice that
//!   [`crate::label`] and [`crate::analyze`] accept as it is.
//!
//! ## Algorithms
//! - CPU, scanline ([`Method::Scanline`]): a span flood fill per reference value, touching only
//!   the region and its border (PARAFILL's horizontal spans with a stack instead of passes).
//!   Open boundary only.
//! - CPU, labeling ([`Method::Labeling`]): per distinct reference value, the predicate mask is
//!   labeled with the crate's parallel strip labeler and the components holding a seed kept.
//! - GPU ([`Backend::Cuda`]): a predicate kernel, the crate's CUDA labeler with root-index
//!   labels on the device, a kernel marking the roots of the seeds, a mask kernel; absorption
//!   labels the complement on the device with the dual connectivity and keeps what does not
//!   touch an open edge. [`crate::cuda::CudaRegionGrower`] is the device-resident entry point.
//!
//! Each distinct reference costs a pass (and, when labeling, a labeling of the whole field):
//! many seeds with many distinct values are best grown with [`Method::Scanline`] on the CPU.

pub use crate::core::region::{Criterion, Field, Method, Reference, Sample};

use crate::core::lattice::check_size;
use crate::core::region::plan;
use crate::cpu::regions::CpuRegions;
use crate::cuda::CudaRegionGrower;
use crate::device::Device;
use crate::{Backend, Error, Options, Parallelism, Result};
use ndarray::{Array2, ArrayViewMut2};

/// Grows the region of `seeds` in `field` on the CPU and returns its mask (1 in the region).
/// For repeated calls, a [`RegionGrower`] keeps its buffers.
///
/// # Errors
/// [`Error::InvalidArgument`] for no seeds, a seed outside the field, a tolerance or reference
/// whose length is neither 1 nor the channel count, a NaN or negative tolerance, a NaN reference,
/// a field without channels, absorption on a torus; [`Error::TooManySites`] beyond
/// [`crate::MAX_SITES`] sites.
pub fn region_from_seeds<'a, F: Field<'a>>(
    field: F,
    seeds: &[(usize, usize)],
    criterion: &Criterion,
) -> Result<Array2<u8>> {
    RegionGrower::new(criterion.clone()).grow(field, seeds)
}

#[allow(clippy::large_enum_variant)] // one per grower: boxing the CPU state buys nothing
enum Engine {
    Cpu(CpuRegions),
    Cuda(Box<CudaRegionGrower>),
}

/// A reusable region grower: a criterion, a backend, and the buffers kept between calls.
///
/// ```
/// use clusterlab::regions::{Criterion, RegionGrower};
/// use clusterlab::Backend;
/// use ndarray::Array2;
///
/// let mut grower = RegionGrower::new(Criterion::new(0.5).absorb(true)).backend(Backend::Auto)?;
/// let field = Array2::<f32>::from_shape_fn((64, 64), |(y, x)| ((y / 8 + x / 8) % 2) as f32);
/// let mask = grower.grow(field.view(), &[(0, 0)])?;
/// // The checkerboard's diagonal squares touch only at corners: 4-connected, one square.
/// assert_eq!(mask.iter().filter(|&&m| m == 1).count(), 64);
/// # Ok::<(), clusterlab::Error>(())
/// ```
pub struct RegionGrower {
    criterion: Criterion,
    method: Method,
    parallelism: Parallelism,
    engine: Engine,
    staging: Array2<u8>,
}

impl RegionGrower {
    /// A CPU grower with [`Method::Auto`] and rayon's global pool.
    pub fn new(criterion: Criterion) -> Self {
        let engine = Engine::Cpu(CpuRegions::new(&criterion, Parallelism::Rayon));
        RegionGrower {
            criterion,
            method: Method::Auto,
            parallelism: Parallelism::Rayon,
            engine,
            staging: Array2::zeros((0, 0)),
        }
    }

    /// The CPU algorithm (default [`Method::Auto`]; the GPU backend ignores it).
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// The CPU thread count (default [`Parallelism::Rayon`]).
    pub fn parallelism(mut self, parallelism: Parallelism) -> Self {
        self.parallelism = parallelism;
        if let Engine::Cpu(_) = self.engine {
            self.engine = Engine::Cpu(CpuRegions::new(&self.criterion, parallelism));
        }
        self
    }

    /// Where to grow (default [`Backend::Auto`]: the CPU for calls on host arrays).
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] for [`Backend::Cuda`] without a usable driver, NVRTC or
    /// device (or without the `cuda` feature); [`Backend::Auto`] falls back to the CPU.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        let options = Options::new(
            self.criterion.neighbourhood(),
            self.criterion.lattice_boundary(),
        )
        .parallelism(self.parallelism)
        .backend(backend);
        let gpu = match Device::resolve(&options)? {
            Device::Cuda(d) => match CudaRegionGrower::on(&d, self.criterion.clone()) {
                Ok(g) => Some(g),
                Err(e) if backend != Backend::Auto => return Err(e),
                Err(_) => None,
            },
            Device::Cpu(_) => None,
        };
        self.engine = match gpu {
            Some(g) => Engine::Cuda(Box::new(g)),
            None => Engine::Cpu(CpuRegions::new(&self.criterion, self.parallelism)),
        };
        Ok(self)
    }

    /// The backend that grows regions: `"cpu"` or `"cuda:N"`.
    pub fn backend_name(&self) -> String {
        match &self.engine {
            Engine::Cpu(_) => "cpu".into(),
            Engine::Cuda(g) => g.name(),
        }
    }

    /// The criterion.
    pub fn criterion(&self) -> &Criterion {
        &self.criterion
    }

    /// Grows the region of `seeds` (`(y, x)` each) into a new mask.
    ///
    /// # Errors
    /// As [`region_from_seeds`], and on the GPU [`Error::OutOfDeviceMemory`],
    /// [`Error::KernelCompile`] and [`Error::Cuda`].
    pub fn grow<'a, F: Field<'a>>(
        &mut self,
        field: F,
        seeds: &[(usize, usize)],
    ) -> Result<Array2<u8>> {
        let field = field.channels();
        check_size(field.dim().0, field.dim().1)?;
        let mut out = Array2::zeros((field.dim().0, field.dim().1));
        self.grow_into(field, seeds, out.view_mut())?;
        Ok(out)
    }

    /// Grows the region of `seeds` into `out` (the field's `H × W`), overwriting it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `out` is not `H × W`, and the errors of
    /// [`RegionGrower::grow`].
    pub fn grow_into<'a, F: Field<'a>>(
        &mut self,
        field: F,
        seeds: &[(usize, usize)],
        mut out: ArrayViewMut2<'_, u8>,
    ) -> Result<()> {
        let field = field.channels();
        let (h, w, _) = field.dim();
        if out.dim() != (h, w) {
            return Err(Error::ShapeMismatch {
                expected: [h, w],
                found: [out.nrows(), out.ncols()],
            });
        }
        let plan = plan(&self.criterion, &field, seeds)?;
        let field = field.as_standard_layout();
        let values = field.as_slice().expect("standard layout is contiguous");
        let direct = out.is_standard_layout();
        if !direct && self.staging.dim() != (h, w) {
            self.staging = Array2::zeros((h, w));
        }
        let dst = if direct {
            out.as_slice_mut().expect("standard layout is contiguous")
        } else {
            self.staging
                .as_slice_mut()
                .expect("owned arrays are contiguous")
        };
        match &mut self.engine {
            Engine::Cpu(c) => c.grow(values, &plan, self.method, dst)?,
            Engine::Cuda(g) => g.grow_host(values, &plan, dst)?,
        }
        if !direct {
            out.assign(&self.staging);
        }
        Ok(())
    }
}
