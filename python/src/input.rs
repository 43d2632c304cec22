//! NumPy arrays in, as the crate's site types, without copies wherever the bits allow.
//!
//! Occupancy only asks "is the site nonzero?" and segments "are the two values equal?", and
//! both answers are the same for an integer's bits read as an unsigned integer of the same width,
//! whatever the signedness or byte order. So `bool`, `int8` and `uint8` are viewed as `u8`,
//! 16-bit integers as `u16` and 32-bit ones as `u32`, in place, in any memory layout (C, Fortran,
//! strided, negative strides). Floats (whose −0.0 is not all-zero bits) and 64-bit integers
//! become a `u8` occupancy mask (one pass); for segments, 64-bit integers become `u32` when their
//! values fit. Complex, object, string and other dtypes are a `ValueError`.

use crate::value_error;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, Ix2, ShapeBuilder, StrideShape, Zip};
use numpy::npyffi::{self, objects::_PyArray_GET_ITEM_DATA};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// A 2-D lattice as the crate takes it.
pub(crate) enum Sites<'a> {
    U8(ArrayView2<'a, u8>),
    U16(ArrayView2<'a, u16>),
    U32(ArrayView2<'a, u32>),
}

impl Sites<'_> {
    pub(crate) fn dim(&self) -> (usize, usize) {
        match self {
            Sites::U8(a) => a.dim(),
            Sites::U16(a) => a.dim(),
            Sites::U32(a) => a.dim(),
        }
    }
}

/// Calls `$body` with `$view` bound to the lattice's view, whatever its site type.
macro_rules! with_sites {
    ($sites:expr, $view:ident => $body:expr) => {
        match $sites {
            $crate::input::Sites::U8($view) => $body,
            $crate::input::Sites::U16($view) => $body,
            $crate::input::Sites::U32($view) => $body,
        }
    };
}
pub(crate) use with_sites;

/// Where a lattice's sites are: in the caller's array (kept alive here) or converted.
pub(crate) enum Lattice<'py> {
    Borrowed {
        _array: Bound<'py, PyUntypedArray>,
        raw: Raw,
        width: u8,
    },
    U8(Array2<u8>),
    U32(Array2<u32>),
}

/// A 2-D strided block of memory: the address of element `[0, 0]`, the shape and the strides
/// in bytes (negative ones too).
#[derive(Clone, Copy)]
pub(crate) struct Raw {
    pub ptr: *mut u8,
    pub shape: [usize; 2],
    pub strides: [isize; 2],
}

impl Raw {
    /// The bytes `[start, end)` the block touches (empty blocks: `start == end`).
    pub(crate) fn extent(&self, item: usize) -> (usize, usize) {
        if self.shape[0] == 0 || self.shape[1] == 0 {
            return (self.ptr as usize, self.ptr as usize);
        }
        let (mut lo, mut hi) = (self.ptr as isize, self.ptr as isize);
        for k in 0..2 {
            let span = (self.shape[k] as isize - 1) * self.strides[k];
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        (lo as usize, hi as usize + item)
    }

    /// The block as a view of `T`.
    ///
    /// # Safety
    /// The block must hold aligned `T`s (strides multiples of `size_of::<T>()`) alive for `'a`,
    /// not written by anyone else meanwhile.
    pub(crate) unsafe fn view<'a, T>(&self) -> ArrayView2<'a, T> {
        // SAFETY: as the caller promises; `origin` gives the shape and element strides of it.
        let (ptr, shape, flip) = unsafe { self.origin::<T>() };
        let mut view = unsafe { ArrayView2::from_shape_ptr(shape, ptr.cast::<T>().cast_const()) };
        for k in flip {
            view.invert_axis(Axis(k));
        }
        view
    }

    /// The block as a mutable view of `T`.
    ///
    /// # Safety
    /// As [`Raw::view`], and no other view of the block may be alive for `'a`.
    pub(crate) unsafe fn view_mut<'a, T>(&self) -> ArrayViewMut2<'a, T> {
        // SAFETY: as for `view`.
        let (ptr, shape, flip) = unsafe { self.origin::<T>() };
        let mut view = unsafe { ArrayViewMut2::from_shape_ptr(shape, ptr.cast::<T>()) };
        for k in flip {
            view.invert_axis(Axis(k));
        }
        view
    }

    /// The block's lowest address, its shape with non-negative element strides, and the axes to
    /// invert afterwards: ndarray wants the origin at index 0 with non-negative strides here, so
    /// a negative axis starts at its last element and is flipped back.
    ///
    /// # Safety
    /// As [`Raw::view`] (the offset stays inside the block).
    unsafe fn origin<T>(&self) -> (*mut u8, StrideShape<Ix2>, Vec<usize>) {
        let item = std::mem::size_of::<T>() as isize;
        let (mut ptr, mut flip) = (self.ptr, Vec::new());
        let mut strides = [0usize; 2];
        for (k, stride) in strides.iter_mut().enumerate() {
            let s = self.strides[k];
            if s < 0 && self.shape[k] > 0 {
                ptr = unsafe { ptr.offset(s * (self.shape[k] as isize - 1)) };
                flip.push(k);
            }
            *stride = (s.unsigned_abs() as isize / item) as usize;
        }
        let shape = (self.shape[0], self.shape[1]).strides((strides[0], strides[1]));
        (ptr, shape, flip)
    }
}

/// An array's data pointer, shape, strides and flags.
pub(crate) fn raw_of(array: &Bound<'_, PyUntypedArray>) -> (Raw, i32) {
    // SAFETY: `array` is a live NumPy array; these fields are read, not written.
    let fields = unsafe { &*_PyArray_GET_ITEM_DATA(array.as_array_ptr()) };
    let (shape, strides) = (array.shape(), array.strides());
    let raw = Raw {
        ptr: fields.data.cast(),
        shape: [shape[0], shape[1]],
        strides: [strides[0], strides[1]],
    };
    (raw, fields.flags)
}

/// `obj` as a NumPy array (`numpy.asarray` for anything else).
pub(crate) fn as_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let numpy = obj.py().import("numpy")?;
    Ok(numpy
        .call_method1("asarray", (obj,))?
        .cast_into::<PyUntypedArray>()?)
}

/// What a dtype's bits are, for the site conversions.
#[derive(Clone, Copy, PartialEq)]
enum Bits {
    /// An integer (or bool) of this many bytes, signed or not.
    Int(usize, bool),
    /// An IEEE float of this many bytes.
    Float(usize),
}

fn bits_of(array: &Bound<'_, PyUntypedArray>) -> PyResult<Bits> {
    let dtype = array.dtype();
    let (kind, size) = (dtype.kind(), dtype.itemsize());
    match (kind, size) {
        (b'b', 1) => Ok(Bits::Int(1, false)),
        (b'u', 1 | 2 | 4 | 8) => Ok(Bits::Int(size, false)),
        (b'i', 1 | 2 | 4 | 8) => Ok(Bits::Int(size, true)),
        (b'f', 2 | 4 | 8) => Ok(Bits::Float(size)),
        _ => {
            Err(value_error(format!(
            "unsupported dtype {}: lattices are bool, integer or float arrays (nonzero = occupied)",
            dtype.str().map(|s| s.to_string()).unwrap_or_else(|_| "?".into())
        )))
        }
    }
}

/// The 2-D lattice of `obj` (`what` names it in errors): a view of the caller's array where the
/// dtype allows, else a converted copy (see the module docs). Zero-size lattices are refused.
pub(crate) fn lattice<'py>(
    obj: &Bound<'py, PyAny>,
    segments: bool,
    what: &str,
) -> PyResult<Lattice<'py>> {
    let array = as_array(obj)?;
    if array.ndim() != 2 {
        return Err(value_error(format!(
            "{what} must be 2-D, got {} dimensions (shape {:?}); stacks go to label_batch",
            array.ndim(),
            array.shape()
        )));
    }
    let bits = bits_of(&array)?;
    let (raw, flags) = raw_of(&array);
    if raw.shape[0] == 0 || raw.shape[1] == 0 {
        return Err(value_error(format!(
            "{what} has no sites (shape {:?})",
            raw.shape
        )));
    }
    let size = match bits {
        Bits::Int(n, _) | Bits::Float(n) => n,
    };
    let aligned = flags & npyffi::NPY_ARRAY_ALIGNED != 0
        && raw.strides.iter().all(|s| s % size as isize == 0);
    if !aligned {
        // Rare (views of packed records): one aligned copy, then as any other array.
        let copy = obj
            .py()
            .import("numpy")?
            .call_method1("ascontiguousarray", (&array,))?;
        return lattice(&copy, segments, what);
    }
    match bits {
        Bits::Int(n @ (1 | 2 | 4), _) => Ok(Lattice::Borrowed {
            _array: array,
            raw,
            width: n as u8,
        }),
        Bits::Int(8, signed) if segments => Ok(Lattice::U32(wide_segments(raw, signed)?)),
        Bits::Int(8, _) => {
            // SAFETY: aligned 8-byte integers of the live array.
            Ok(Lattice::U8(mask(unsafe { raw.view::<u64>() }, |b| b != 0)))
        }
        Bits::Float(_) if segments => Err(value_error(format!(
            "segments need integer values; {what} holds floats (cast it, or label occupancy \
             with segments=False)"
        ))),
        // Occupied = any bit but the sign's set (−0.0 is empty, NaN occupied, as `x != 0`).
        Bits::Float(2) => Ok(Lattice::U8(mask(unsafe { raw.view::<u16>() }, |b| {
            b << 1 != 0
        }))),
        Bits::Float(4) => Ok(Lattice::U8(mask(unsafe { raw.view::<u32>() }, |b| {
            b << 1 != 0
        }))),
        Bits::Float(_) => Ok(Lattice::U8(mask(unsafe { raw.view::<u64>() }, |b| {
            b << 1 != 0
        }))),
        Bits::Int(..) => unreachable!("bits_of admits 1, 2, 4 and 8 bytes"),
    }
}

/// `occupied(bits)` of every site as a `u8` mask, in parallel on large lattices.
fn mask<T: Copy + Send + Sync>(
    view: ArrayView2<'_, T>,
    occupied: impl Fn(T) -> bool + Sync,
) -> Array2<u8> {
    if view.len() >= 1 << 16 {
        Zip::from(view).par_map_collect(|&b| occupied(b) as u8)
    } else {
        view.map(|&b| occupied(b) as u8)
    }
}

/// 64-bit segment values as `u32`, when they fit: all in `i32`'s range (signed bits) or all in
/// `u32`'s; equal values stay equal and distinct ones distinct, 0 stays 0.
fn wide_segments(raw: Raw, signed: bool) -> PyResult<Array2<u32>> {
    // SAFETY: aligned 8-byte integers of the live array.
    let view = unsafe { raw.view::<u64>() };
    if signed && view.iter().all(|&b| i32::try_from(b as i64).is_ok()) {
        return Ok(view.mapv(|b| b as i64 as i32 as u32));
    }
    if view
        .iter()
        .all(|&b| (!signed || (b as i64) >= 0) && b <= u64::from(u32::MAX))
    {
        return Ok(view.mapv(|b| b as u32));
    }
    Err(value_error(
        "segments of 64-bit integers need values that fit in 32 bits (all within int32's or \
         uint32's range)",
    ))
}

impl Lattice<'_> {
    /// The sites as the crate takes them.
    pub(crate) fn sites(&self) -> Sites<'_> {
        match self {
            // SAFETY: `_array` keeps the aligned block alive as long as `self`.
            Lattice::Borrowed { raw, width, .. } => unsafe {
                match width {
                    1 => Sites::U8(raw.view::<u8>()),
                    2 => Sites::U16(raw.view::<u16>()),
                    _ => Sites::U32(raw.view::<u32>()),
                }
            },
            Lattice::U8(a) => Sites::U8(a.view()),
            Lattice::U32(a) => Sites::U32(a.view()),
        }
    }

    /// The bytes the caller's array spans, for overlap checks with an output (none for a copy).
    pub(crate) fn extent(&self) -> Option<(usize, usize)> {
        match self {
            Lattice::Borrowed { raw, width, .. } => Some(raw.extent(*width as usize)),
            _ => None,
        }
    }

    pub(crate) fn dim(&self) -> (usize, usize) {
        self.sites().dim()
    }
}

/// A caller's `out=` array: 2-D, native `uint32` or `int32`, writeable, aligned, of `shape`,
/// not overlapping the input. Returns it with its block; `int32` also needs the labels to fit.
pub(crate) fn output<'py>(
    obj: &Bound<'py, PyAny>,
    shape: &[usize],
    input: Option<(usize, usize)>,
) -> PyResult<(Bound<'py, PyUntypedArray>, Raw)> {
    let array = obj
        .cast::<PyUntypedArray>()
        .map_err(|_| value_error("out must be a NumPy array of uint32 or int32"))?
        .clone();
    let dtype = array.dtype();
    let native = dtype.is_native_byteorder().unwrap_or(true);
    if !matches!(dtype.kind(), b'u' | b'i') || dtype.itemsize() != 4 || !native {
        return Err(value_error(format!(
            "out must have dtype uint32 or int32 in native byte order, not {}",
            dtype
                .str()
                .map(|s| s.to_string())
                .unwrap_or_else(|_| "?".into())
        )));
    }
    if array.shape() != shape {
        return Err(value_error(format!(
            "out has shape {:?}, the input {:?}",
            array.shape(),
            shape
        )));
    }
    let (raw, flags) = raw_of(&array);
    if flags & npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(value_error("out is read-only"));
    }
    if flags & npyffi::NPY_ARRAY_ALIGNED == 0 || raw.strides.iter().any(|s| s % 4 != 0) {
        return Err(value_error(
            "out must be aligned (a plain uint32/int32 array or a view of one)",
        ));
    }
    if dtype.kind() == b'i' {
        let sites = shape.iter().product::<usize>();
        // At most one cluster per two sites (a checkerboard), rounded up.
        if sites.div_ceil(2) > i32::MAX as usize {
            return Err(value_error(
                "int32 out cannot hold the labels of this many sites: use uint32",
            ));
        }
    }
    if let Some((lo, hi)) = input {
        let (olo, ohi) = raw.extent(4);
        if olo < hi && lo < ohi {
            return Err(value_error("out overlaps the input: pass a separate array"));
        }
    }
    Ok((array, raw))
}
