//! What a lattice file may hold, and how integer arrays become lattices.

use crate::io::Lattice;
use crate::{Error, Result};
use ndarray::Array2;
use std::fmt;
use std::path::Path;

pub(crate) fn bad_input(path: &Path, reason: impl Into<String>) -> Error {
    Error::BadInput {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", dims.join(", "))
}

pub(crate) fn rank_error(path: &Path, shape: &[usize]) -> Error {
    bad_input(
        path,
        format!(
            "expected a 2-D lattice, found a {}-D array of shape {}",
            shape.len(),
            shape_text(shape)
        ),
    )
}

/// The element types a lattice file may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dtype {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    /// A floating-point type, by its NumPy name.
    Float(&'static str),
    /// Anything else, described.
    Other(String),
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "uint8",
            Dtype::U16 => "uint16",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::Float(name) => name,
            Dtype::Other(s) => s,
        };
        f.write_str(name)
    }
}

pub(crate) fn unsupported(path: &Path, dtype: &Dtype) -> Error {
    bad_input(
        path,
        format!("unsupported dtype {dtype}: a lattice holds integers or booleans"),
    )
}

/// Makes a lattice of an integer array, in the narrowest type that holds every value.
pub(crate) fn narrow<T>(path: &Path, array: Array2<T>, dtype: &Dtype) -> Result<Lattice>
where
    T: Copy + Into<i128>,
{
    let mut min = 0i128;
    let mut max = 0i128;
    for &v in array.iter() {
        let v = v.into();
        min = min.min(v);
        max = max.max(v);
    }
    if min < 0 {
        let at = array.indexed_iter().find(|(_, &v)| v.into() == min);
        let at = at
            .map(|((y, x), _)| format!(" at [{y}, {x}]"))
            .unwrap_or_default();
        return Err(bad_input(
            path,
            format!(
                "{dtype} array holds the negative value {min}{at}: lattice sites must be 0..={}",
                u32::MAX
            ),
        ));
    }
    if max > i128::from(u32::MAX) {
        let at = array.indexed_iter().find(|(_, &v)| v.into() == max);
        let at = at
            .map(|((y, x), _)| format!(" at [{y}, {x}]"))
            .unwrap_or_default();
        return Err(bad_input(
            path,
            format!(
                "{dtype} array holds the value {max}{at}, above u32::MAX: lattice sites must be 0..={}",
                u32::MAX
            ),
        ));
    }
    // Every value is in 0..=max, which fits the chosen type: the casts are exact.
    Ok(if max <= i128::from(u8::MAX) {
        Lattice::U8(array.mapv(|v| v.into() as u8))
    } else if max <= i128::from(u16::MAX) {
        Lattice::U16(array.mapv(|v| v.into() as u16))
    } else {
        Lattice::U32(array.mapv(|v| v.into() as u32))
    })
}

/// Row-major layout, for the backends' fast path and for writing back.
pub(crate) fn standard<T: Clone>(array: Array2<T>) -> Array2<T> {
    if array.is_standard_layout() {
        array
    } else {
        array.as_standard_layout().into_owned()
    }
}
