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
//! - A field is `H × W` ([`ArrayView2`]) or `H × W × C` ([`ArrayView3`], `C` channels per site)
//!   of `u8` or `f32`; seeds are `(y, x)` = (row, column).
//! - Site `s` meets the criterion for the reference `r` when, in every channel `k`,
//!   `|value(s, k) − r[k]| ≤ tolerance[k]`, computed in `f32` (exact for `u8` values). A NaN
//!   value never meets it.
//! - [`Reference::Seed`]: the region grown from each seed uses **that seed's own value** as its
//!   reference; with several seeds, the result is the union of the regions grown from each.
//!   A seed whose own value is NaN grows nothing. [`Reference::Value`]: one reference for every
//!   seed. A seed that does not meet the criterion grows nothing (it is not in the mask).
//! - The region of a seed: the sites connected to it (4- or 8-connectivity, across wrapping
//!   edges for a periodic [`Boundary`]) through sites meeting the criterion.
//! - Absorption ([`Criterion::absorb`]): every site of the complement of the union that cannot
//!   be reached from outside the lattice without crossing the union is added to it — holes, and
//!   everything in them, nested holes and islands alike (PARAFILL's absorption of unconnected
//!   interior regions; scikit-image's `area_filled` for the mask). The outside is reached through
//!   the dual connectivity (8 for a 4-connected region, 4 for an 8-connected one) and lies
//!   beyond the non-wrapping edges: all four for [`Boundary::Open`], top and bottom for
//!   [`Boundary::PeriodicX`], left and right for [`Boundary::PeriodicY`]. A torus has no
//!   outside, so absorption with [`Boundary::Periodic`] is refused.
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

mod cpu;

use crate::core::lattice::check_size;
use crate::cuda::CudaRegionGrower;
use crate::device::Device;
use crate::{Backend, Boundary, Connectivity, Options, Parallelism};
use crate::{Error, Result};
use ndarray::{Array2, ArrayView2, ArrayView3, ArrayViewMut2, Axis};

pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for f32 {}
    impl<T> Sealed for ndarray::ArrayView2<'_, T> {}
    impl<T> Sealed for ndarray::ArrayView3<'_, T> {}
}

/// A field value type: `u8` or `f32` (sealed).
pub trait Sample: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The value as `f32` (exact for `u8`).
    fn to_f32(self) -> f32;
    /// Whether the GPU kernels read `f32` (else `u8`).
    #[doc(hidden)]
    const IS_F32: bool;
}

impl Sample for u8 {
    #[inline]
    fn to_f32(self) -> f32 {
        f32::from(self)
    }
    const IS_F32: bool = false;
}

impl Sample for f32 {
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    const IS_F32: bool = true;
}

/// A field a region can be grown in: `ArrayView2<T>` (one channel) or `ArrayView3<T>`
/// (`H × W × C`), for `T` in `u8`, `f32` (sealed).
pub trait Field<'a>: sealed::Sealed {
    /// The value type.
    type Value: Sample;
    /// The field as `H × W × C`.
    fn channels(self) -> ArrayView3<'a, Self::Value>;
}

impl<'a, T: Sample> Field<'a> for ArrayView2<'a, T> {
    type Value = T;
    fn channels(self) -> ArrayView3<'a, T> {
        self.insert_axis(Axis(2))
    }
}

impl<'a, T: Sample> Field<'a> for ArrayView3<'a, T> {
    type Value = T;
    fn channels(self) -> ArrayView3<'a, T> {
        self
    }
}

/// What each site is compared with.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Reference {
    /// Each seed's own value: the region grown from a seed uses that seed's value, and the
    /// result is the union over the seeds (scikit-image's `flood`, OpenCV's `floodFill` with
    /// `FLOODFILL_FIXED_RANGE`, one call per seed).
    #[default]
    Seed,
    /// One reference for every seed: one value per channel, or one value for all channels.
    Value(Vec<f32>),
}

/// Which CPU algorithm grows the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Method {
    /// Scanline on an open lattice, labeling otherwise.
    #[default]
    Auto,
    /// Span flood fill (open boundary only): work proportional to the region.
    Scanline,
    /// Predicate mask, parallel strip labeling, keep the seeded components: work proportional
    /// to the field, on every core.
    Labeling,
}

/// The growth rule: tolerance, reference, connectivity, boundary and absorption.
///
/// ```
/// use clusterlab::regions::{Criterion, Reference};
/// use clusterlab::Connectivity;
///
/// // RGB: within 10 in red and blue and 20 in green of (200, 40, 40), 8-connected, holes filled.
/// let c = Criterion::per_channel(vec![10.0, 20.0, 10.0])
///     .reference(Reference::Value(vec![200.0, 40.0, 40.0]))
///     .connectivity(Connectivity::Eight)
///     .absorb(true);
/// assert!(c.absorbs());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    tolerance: Vec<f32>,
    reference: Reference,
    connectivity: Connectivity,
    boundary: Boundary,
    absorb: bool,
}

impl Criterion {
    /// The same tolerance in every channel; [`Reference::Seed`], 4-connectivity, open boundary,
    /// no absorption.
    pub fn new(tolerance: f32) -> Self {
        Criterion::per_channel(vec![tolerance])
    }

    /// One tolerance per channel (or one for all).
    pub fn per_channel(tolerance: Vec<f32>) -> Self {
        Criterion {
            tolerance,
            reference: Reference::Seed,
            connectivity: Connectivity::Four,
            boundary: Boundary::Open,
            absorb: false,
        }
    }

    /// What sites are compared with (default [`Reference::Seed`]).
    pub fn reference(mut self, reference: Reference) -> Self {
        self.reference = reference;
        self
    }

    /// The neighbourhood (default 4).
    pub fn connectivity(mut self, connectivity: Connectivity) -> Self {
        self.connectivity = connectivity;
        self
    }

    /// The boundary (default [`Boundary::Open`]).
    pub fn boundary(mut self, boundary: Boundary) -> Self {
        self.boundary = boundary;
        self
    }

    /// Absorb the enclosed unconnected regions (default no).
    pub fn absorb(mut self, absorb: bool) -> Self {
        self.absorb = absorb;
        self
    }

    /// The tolerances.
    pub fn tolerances(&self) -> &[f32] {
        &self.tolerance
    }

    /// The reference.
    pub fn reference_kind(&self) -> &Reference {
        &self.reference
    }

    /// The neighbourhood.
    pub fn neighbourhood(&self) -> Connectivity {
        self.connectivity
    }

    /// The boundary.
    pub fn lattice_boundary(&self) -> Boundary {
        self.boundary
    }

    /// Whether enclosed regions are absorbed.
    pub fn absorbs(&self) -> bool {
        self.absorb
    }

    /// The dual neighbourhood, through which the outside is reached.
    pub(crate) fn dual(&self) -> Connectivity {
        match self.connectivity {
            Connectivity::Four => Connectivity::Eight,
            Connectivity::Eight => Connectivity::Four,
        }
    }
}

/// Seeds sharing one reference: one pass (fill or labeling) grows them all.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    /// One value per channel.
    pub reference: Vec<f32>,
    /// Site indices `y * w + x`, distinct, each meeting the criterion.
    pub seeds: Vec<u32>,
}

/// A checked request: geometry, per-channel tolerance and the seed groups.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub tolerance: Vec<f32>,
    pub groups: Vec<Group>,
}

/// Whether `px` (one site's channels) meets the criterion for `r` and `t`.
#[inline]
pub(crate) fn meets<T: Sample>(px: &[T], r: &[f32], t: &[f32]) -> bool {
    px.iter()
        .zip(r)
        .zip(t)
        .all(|((&v, &r), &t)| (v.to_f32() - r).abs() <= t)
}

/// Expands a per-channel list of length 1 or `c` to length `c`.
fn per_channel(v: &[f32], c: usize, what: &str) -> Result<Vec<f32>> {
    match v.len() {
        1 => Ok(vec![v[0]; c]),
        n if n == c => Ok(v.to_vec()),
        n => Err(Error::InvalidArgument(format!(
            "{what} has {n} values for a field of {c} channels (give 1 or {c})"
        ))),
    }
}

/// Checks the criterion against a field of `h × w × c` and the seeds, without the field's
/// values: the geometry, the tolerance and the reference.
pub(crate) fn check(
    criterion: &Criterion,
    (h, w, c): (usize, usize, usize),
    seeds: &[(usize, usize)],
) -> Result<(Vec<f32>, Option<Vec<f32>>)> {
    check_size(h, w)?;
    if c == 0 {
        return Err(Error::InvalidArgument("the field has no channels".into()));
    }
    if seeds.is_empty() {
        return Err(Error::InvalidArgument(
            "no seeds: a region needs at least one".into(),
        ));
    }
    if let Some(&(y, x)) = seeds.iter().find(|&&(y, x)| y >= h || x >= w) {
        return Err(Error::InvalidArgument(format!(
            "seed (y {y}, x {x}) is outside the {h}×{w} field"
        )));
    }
    let tolerance = per_channel(&criterion.tolerance, c, "the tolerance")?;
    if let Some(t) = tolerance.iter().find(|t| t.is_nan() || **t < 0.0) {
        return Err(Error::InvalidArgument(format!(
            "tolerance {t} must be a number >= 0"
        )));
    }
    let reference = match &criterion.reference {
        Reference::Seed => None,
        Reference::Value(v) => {
            let r = per_channel(v, c, "the reference value")?;
            if r.iter().any(|r| r.is_nan()) {
                return Err(Error::InvalidArgument(
                    "the reference value is NaN: nothing would match".into(),
                ));
            }
            Some(r)
        }
    };
    if criterion.absorb && criterion.boundary == Boundary::Periodic {
        return Err(Error::InvalidArgument(
            "absorption needs an outside: a torus has none (use an open or cylinder boundary)"
                .into(),
        ));
    }
    Ok((tolerance, reference))
}

/// Groups the seeds by reference, given each seed's channel values (`values(i)` for seed `i`):
/// seeds that do not meet the criterion, and duplicates, are dropped.
pub(crate) fn group(
    w: usize,
    seeds: &[(usize, usize)],
    tolerance: &[f32],
    reference: Option<&[f32]>,
    mut values: impl FnMut(usize) -> Vec<f32>,
) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index = std::collections::HashMap::<Vec<u32>, usize>::new();
    for (i, &(y, x)) in seeds.iter().enumerate() {
        let v = values(i);
        let r = reference.map_or_else(|| v.clone(), <[f32]>::to_vec);
        if !meets(&v, &r, tolerance) {
            continue;
        }
        // -0.0 and 0.0 compare alike: one group.
        let key: Vec<u32> = r.iter().map(|x| (x + 0.0).to_bits()).collect();
        let g = *index.entry(key).or_insert_with(|| {
            groups.push(Group {
                reference: r,
                seeds: Vec::new(),
            });
            groups.len() - 1
        });
        groups[g].seeds.push((y * w + x) as u32);
    }
    for g in &mut groups {
        g.seeds.sort_unstable();
        g.seeds.dedup();
    }
    groups
}

/// Checks the request and groups the seeds of a host field.
fn plan<T: Sample>(
    criterion: &Criterion,
    field: &ArrayView3<'_, T>,
    seeds: &[(usize, usize)],
) -> Result<Plan> {
    let (h, w, c) = field.dim();
    let (tolerance, reference) = check(criterion, (h, w, c), seeds)?;
    let groups = group(w, seeds, &tolerance, reference.as_deref(), |i| {
        let (y, x) = seeds[i];
        (0..c).map(|k| field[[y, x, k]].to_f32()).collect()
    });
    Ok(Plan {
        h,
        w,
        c,
        tolerance,
        groups,
    })
}

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
    Cpu(cpu::CpuRegions),
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
        let engine = Engine::Cpu(cpu::CpuRegions::new(&criterion, Parallelism::Rayon));
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
            self.engine = Engine::Cpu(cpu::CpuRegions::new(&self.criterion, parallelism));
        }
        self
    }

    /// Where to grow (default [`Backend::Cpu`]).
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`] for [`Backend::Cuda`] without a usable driver, NVRTC or
    /// device (or without the `cuda` feature); [`Backend::Auto`] falls back to the CPU.
    pub fn backend(mut self, backend: Backend) -> Result<Self> {
        let options = Options::new(self.criterion.connectivity, self.criterion.boundary)
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
            None => Engine::Cpu(cpu::CpuRegions::new(&self.criterion, self.parallelism)),
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
