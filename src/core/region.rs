//! What a seeded region is (PARAFILL): the field, the growth criterion and the checked plan of
//! seed groups that every backend grows. The front end is `crate::regions`.

use super::lattice::check_size;
use crate::{Boundary, Connectivity, Error, Result};
use ndarray::{ArrayView2, ArrayView3, Axis};

/// Seals [`Sample`] and [`Field`].
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
        self.connectivity.dual()
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
pub(crate) fn plan<T: Sample>(
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
