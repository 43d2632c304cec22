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

impl Dtype {
    /// Bytes per element in the file (`None` for types a lattice cannot hold).
    pub(crate) fn size(&self) -> Option<usize> {
        Some(match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 => 2,
            Dtype::U32 | Dtype::I32 => 4,
            Dtype::U64 | Dtype::I64 => 8,
            Dtype::Float(_) | Dtype::Other(_) => return None,
        })
    }
}

/// The machine's physical memory in bytes, where the system says (Linux: `/proc/meminfo`).
pub(crate) fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Checks a 2-D array's header before any data is read: the site count against the labels'
/// limit, and the bytes that reading it takes against the machine's memory, so that a file
/// whose header claims 70000 × 70000 is refused at once instead of after reading gigabytes.
pub(crate) fn check_header(path: &Path, shape: &[usize], dtype: &Dtype) -> Result<()> {
    if shape.len() != 2 {
        return Err(rank_error(path, shape));
    }
    let size = dtype.size().ok_or_else(|| unsupported(path, dtype))?;
    // Beyond MAX_SITES, u64 labels number the lattice: the reader takes any size that fits the
    // machine (the labeling checks its own memory).
    crate::core::lattice::check_size_for(shape[0], shape[1], crate::MAX_SITES_64)?;
    let sites = (shape[0] * shape[1]) as u64;
    // The array as read, and the narrowed lattice it becomes.
    let need = sites * size as u64 + if size > 4 { sites * 4 } else { 0 };
    if let Some(have) = machine_memory() {
        if need > have {
            return Err(bad_input(
                path,
                format!(
                    "a {} × {} {dtype} array needs {need} bytes to read; this machine has {have} bytes of memory",
                    shape[0], shape[1]
                ),
            ));
        }
    }
    Ok(())
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
