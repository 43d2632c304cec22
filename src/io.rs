//! Reading lattices and writing labels: `.npy` and `.h5`, written atomically.
//!
//! The format follows the file's extension: `.npy` (NumPy's array format) or `.h5` / `.hdf5`.
//!
//! - [`read_lattice`] reads a 2-D array of booleans or non-negative integers. `bool`, `u8`, `u16`
//!   and `u32` are kept as they are; signed integers and `u64` are converted to the narrowest of
//!   `u8`, `u16`, `u32` that holds every value. In an HDF5 file the lattice is the dataset
//!   `/lattice` unless another one is named.
//! - [`write_labels`] writes the `u32` label image: the array itself in a `.npy` file; in an HDF5
//!   file the dataset `/labels` with the attributes `connectivity`, `boundary`, `count` and
//!   `segments`, and the lattice as `/lattice` when given.
//! - [`write_lattice`] writes a lattice (`.npy`, or `/lattice` in an HDF5 file).
//!
//! Every output goes through [`write_atomically`]: it is written to a temporary file in the
//! destination's folder and renamed into place, so that a failure leaves neither a half-written
//! file nor the temporary behind, and readers never see a partial file.

use crate::{Boundary, Connectivity, Error, Labeler, Labels, Result};
use ndarray::{Array2, ArrayView2};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyExt, ReadableElement, WritableElement, WriteNpyExt};
use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// The dataset that holds the lattice in an HDF5 file unless another is named.
pub const LATTICE_DATASET: &str = "/lattice";
/// The dataset that holds the labels in an HDF5 file written by [`write_labels`].
pub const LABELS_DATASET: &str = "/labels";

/// A file format, chosen by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// NumPy's `.npy` array format.
    Npy,
    /// HDF5 (`.h5` or `.hdf5`).
    Hdf5,
}

impl Format {
    /// The format of `path` by its extension (case-insensitive): `.npy`, `.h5` or `.hdf5`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for any other extension, or none.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("npy") => Ok(Format::Npy),
            Some("h5") | Some("hdf5") => Ok(Format::Hdf5),
            Some(ext) => Err(Error::InvalidArgument(format!(
                "{}: unsupported file extension \".{ext}\": use .npy, .h5 or .hdf5",
                path.display()
            ))),
            None => Err(Error::InvalidArgument(format!(
                "{}: no file extension to tell the format: use .npy, .h5 or .hdf5",
                path.display()
            ))),
        }
    }
}

/// An owned lattice of one of the site types that can be labeled. Zero is empty, anything else
/// occupied (or, in segment mode, the site's segment value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lattice {
    /// 8-bit sites (also what boolean arrays become).
    U8(Array2<u8>),
    /// 16-bit sites.
    U16(Array2<u16>),
    /// 32-bit sites.
    U32(Array2<u32>),
}

impl Lattice {
    /// The shape `(height, width)`.
    pub fn dim(&self) -> (usize, usize) {
        match self {
            Lattice::U8(a) => a.dim(),
            Lattice::U16(a) => a.dim(),
            Lattice::U32(a) => a.dim(),
        }
    }

    /// The site type's NumPy name: `"uint8"`, `"uint16"` or `"uint32"`.
    pub fn dtype(&self) -> &'static str {
        match self {
            Lattice::U8(_) => "uint8",
            Lattice::U16(_) => "uint16",
            Lattice::U32(_) => "uint32",
        }
    }

    /// The number of occupied (nonzero) sites.
    pub fn occupied(&self) -> usize {
        match self {
            Lattice::U8(a) => a.iter().filter(|&&v| v != 0).count(),
            Lattice::U16(a) => a.iter().filter(|&&v| v != 0).count(),
            Lattice::U32(a) => a.iter().filter(|&&v| v != 0).count(),
        }
    }

    /// Labels the lattice with `labeler`, whatever its site type.
    ///
    /// # Errors
    /// As [`Labeler::label`].
    pub fn label_with(&self, labeler: &mut Labeler) -> Result<Labels> {
        match self {
            Lattice::U8(a) => labeler.label(a.view()),
            Lattice::U16(a) => labeler.label(a.view()),
            Lattice::U32(a) => labeler.label(a.view()),
        }
    }
}

impl From<Array2<u8>> for Lattice {
    fn from(a: Array2<u8>) -> Self {
        Lattice::U8(a)
    }
}
impl From<Array2<u16>> for Lattice {
    fn from(a: Array2<u16>) -> Self {
        Lattice::U16(a)
    }
}
impl From<Array2<u32>> for Lattice {
    fn from(a: Array2<u32>) -> Self {
        Lattice::U32(a)
    }
}
impl From<Array2<bool>> for Lattice {
    fn from(a: Array2<bool>) -> Self {
        Lattice::U8(a.mapv(u8::from))
    }
}

/// How a label image was made, recorded with it in HDF5 files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LabelMeta {
    /// The neighbourhood used.
    pub connectivity: Connectivity,
    /// The boundary used.
    pub boundary: Boundary,
    /// Whether same-value segments were labeled (rather than occupancy).
    pub segments: bool,
}

/// Reads a 2-D lattice from a `.npy` or HDF5 file.
///
/// `dataset` names the HDF5 dataset (default [`LATTICE_DATASET`], `/lattice`); `.npy` files
/// ignore it. Booleans, `u8`, `u16` and `u32` are read as they are; `i8`, `i16`, `i32`, `i64` and
/// `u64` are converted to the narrowest of `u8`, `u16`, `u32` that holds every value. Fortran-order
/// `.npy` files and big-endian data are read correctly; the lattice comes back in standard (row-major)
/// layout.
///
/// # Errors
/// - [`Error::InvalidArgument`] for an extension other than `.npy`, `.h5`, `.hdf5`;
/// - [`Error::Io`] when the file cannot be opened or read (e.g. it does not exist);
/// - [`Error::BadInput`] when the file is not a valid `.npy` file, the array is not 2-D, its type
///   is not boolean or integer (e.g. floats), a value is negative or above `u32::MAX`, or the HDF5
///   dataset does not exist (the message lists the datasets that do);
/// - [`Error::Hdf5`] when the HDF5 library fails otherwise.
pub fn read_lattice(path: &Path, dataset: Option<&str>) -> Result<Lattice> {
    let format = Format::from_path(path)?;
    // Check the file first, so that a missing file is an I/O error with its path in every format.
    std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    match format {
        Format::Npy => read_npy_lattice(path),
        Format::Hdf5 => read_hdf5_lattice(path, dataset.unwrap_or(LATTICE_DATASET)),
    }
}

/// Writes a label image: `.npy` gets the `u32` label array; an HDF5 file gets the dataset
/// `/labels` (`u32`) with the attributes `connectivity` (`u32`: 4 or 8), `boundary` (string:
/// `open`, `periodic`, `periodic-x` or `periodic-y`), `count` (`u64`, the number of clusters) and
/// `segments` (`u8`: 0 or 1), plus the dataset `/lattice` when `lattice` is given (`.npy` files
/// ignore it). The file is replaced atomically (see [`write_atomically`]).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unsupported extension, [`Error::Io`] or [`Error::Hdf5`] when
/// writing fails; nothing is left behind then.
pub fn write_labels(
    path: &Path,
    labels: &Labels,
    meta: &LabelMeta,
    lattice: Option<&Lattice>,
) -> Result<()> {
    match Format::from_path(path)? {
        Format::Npy => write_atomically(path, |tmp| write_npy_array(tmp, labels.array())),
        Format::Hdf5 => write_atomically(path, |tmp| {
            hdf5_result(tmp, write_labels_hdf5(tmp, labels, meta, lattice))
        }),
    }
}

/// Writes a lattice: the array itself in a `.npy` file, the dataset `/lattice` in an HDF5 file.
/// The file is replaced atomically (see [`write_atomically`]).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unsupported extension, [`Error::Io`] or [`Error::Hdf5`] when
/// writing fails; nothing is left behind then.
pub fn write_lattice(path: &Path, lattice: &Lattice) -> Result<()> {
    match Format::from_path(path)? {
        Format::Npy => write_atomically(path, |tmp| match lattice {
            Lattice::U8(a) => write_npy_array(tmp, a),
            Lattice::U16(a) => write_npy_array(tmp, a),
            Lattice::U32(a) => write_npy_array(tmp, a),
        }),
        Format::Hdf5 => write_atomically(path, |tmp| {
            hdf5_result(
                tmp,
                (|| {
                    let file = hdf5::File::create(tmp)?;
                    write_lattice_dataset(&file, lattice)?;
                    file.close()
                })(),
            )
        }),
    }
}

/// Writes `path` atomically: `write` gets the path of a new, empty temporary file in the same
/// folder and writes the whole output there (it may truncate or recreate that file, as the
/// HDF5 library does); then the temporary is flushed to disk and renamed to `path`, replacing
/// any file there. If `write` or the rename fails, the temporary is removed and `path` is left
/// as it was. The temporary is a hidden file named after the destination (`.NAME.XXXXXX.tmp`),
/// created with the permissions a new file usually gets.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let path = dir.path().join("table.csv");
/// clusterlab::io::write_atomically(&path, |tmp| {
///     std::fs::write(tmp, "label,size\n1,4\n")
///         .map_err(|source| clusterlab::Error::Io { path: tmp.to_owned(), source })
/// })?;
/// assert_eq!(std::fs::read_to_string(&path)?, "label,size\n1,4\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when `path` names no file, [`Error::Io`] when the temporary
/// cannot be created, flushed or renamed (e.g. the folder does not exist), and whatever `write`
/// returns.
pub fn write_atomically<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&Path) -> Result<()>,
{
    let name = path
        .file_name()
        .ok_or_else(|| Error::InvalidArgument(format!("output path {:?} names no file", path)))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // As `File::create` does: 0o666 less the umask (tempfile's default is 0o600).
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(dir).map_err(|e| io_error(dir, e))?;
    // On any error below, dropping `tmp` removes the temporary file.
    write(tmp.path())?;
    File::open(tmp.path())
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error(path, e))?;
    tmp.persist(path).map_err(|e| io_error(path, e.error))?;
    Ok(())
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}

fn bad_input(path: &Path, reason: impl Into<String>) -> Error {
    Error::BadInput {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Turns an HDF5 error into ours, on one line.
fn hdf5_result<T>(path: &Path, result: hdf5::Result<T>) -> Result<T> {
    result.map_err(|e| Error::Hdf5 {
        path: path.to_owned(),
        message: one_line(&e.to_string()),
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", dims.join(", "))
}

fn rank_error(path: &Path, shape: &[usize]) -> Error {
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
enum Dtype {
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

fn unsupported(path: &Path, dtype: &Dtype) -> Error {
    bad_input(
        path,
        format!("unsupported dtype {dtype}: a lattice holds integers or booleans"),
    )
}

/// Makes a lattice of an integer array, in the narrowest type that holds every value.
fn narrow<T>(path: &Path, array: Array2<T>, dtype: &Dtype) -> Result<Lattice>
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
fn standard<T: Clone>(array: Array2<T>) -> Array2<T> {
    if array.is_standard_layout() {
        array
    } else {
        array.as_standard_layout().into_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// .npy

fn npy_dtype(descr: &str) -> Dtype {
    // Byte order: '<' little, '>' big, '|' not applicable, '=' native.
    let code = descr.trim_start_matches(['<', '>', '|', '=']);
    match code {
        "b1" | "?" => Dtype::Bool,
        "u1" | "B" => Dtype::U8,
        "u2" => Dtype::U16,
        "u4" => Dtype::U32,
        "u8" => Dtype::U64,
        "i1" | "b" => Dtype::I8,
        "i2" => Dtype::I16,
        "i4" => Dtype::I32,
        "i8" => Dtype::I64,
        "f2" | "e" => Dtype::Float("float16"),
        "f4" | "f" => Dtype::Float("float32"),
        "f8" | "d" => Dtype::Float("float64"),
        "f16" | "g" => Dtype::Float("float128"),
        _ => Dtype::Other(format!("{descr:?}")),
    }
}

fn read_npy_lattice(path: &Path) -> Result<Lattice> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut reader = BufReader::new(file);
    let header = Header::from_reader(&mut reader)
        .map_err(|e| bad_input(path, format!("not a valid .npy file: {e}")))?;
    let dtype = match header.type_descriptor.as_string() {
        Some(descr) => npy_dtype(descr),
        None => Dtype::Other(format!("{}", header.type_descriptor)),
    };
    if header.shape.len() != 2 {
        return Err(rank_error(path, &header.shape));
    }
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, e))?;
    match dtype {
        Dtype::Bool => Ok(Lattice::from(read_npy_data::<bool>(path, reader)?)),
        Dtype::U8 => Ok(Lattice::U8(read_npy_data(path, reader)?)),
        Dtype::U16 => Ok(Lattice::U16(read_npy_data(path, reader)?)),
        Dtype::U32 => Ok(Lattice::U32(read_npy_data(path, reader)?)),
        Dtype::U64 => narrow(path, read_npy_data::<u64>(path, reader)?, &dtype),
        Dtype::I8 => narrow(path, read_npy_data::<i8>(path, reader)?, &dtype),
        Dtype::I16 => narrow(path, read_npy_data::<i16>(path, reader)?, &dtype),
        Dtype::I32 => narrow(path, read_npy_data::<i32>(path, reader)?, &dtype),
        Dtype::I64 => narrow(path, read_npy_data::<i64>(path, reader)?, &dtype),
        Dtype::Float(_) | Dtype::Other(_) => Err(unsupported(path, &dtype)),
    }
}

fn read_npy_data<T: ReadableElement + Clone>(
    path: &Path,
    reader: BufReader<File>,
) -> Result<Array2<T>> {
    use ndarray_npy::ReadNpyError;
    match Array2::<T>::read_npy(reader) {
        Ok(a) => Ok(standard(a)),
        Err(ReadNpyError::Io(e)) => Err(io_error(path, e)),
        Err(e) => Err(bad_input(path, format!("not a valid .npy file: {e}"))),
    }
}

fn write_npy_array<T: WritableElement>(path: &Path, array: &Array2<T>) -> Result<()> {
    let file = File::create(path).map_err(|e| io_error(path, e))?;
    let mut writer = BufWriter::new(file);
    array.write_npy(&mut writer).map_err(|e| match e {
        ndarray_npy::WriteNpyError::Io(e) => io_error(path, e),
        e => io_error(path, std::io::Error::other(e.to_string())),
    })?;
    writer
        .into_inner()
        .map_err(|e| io_error(path, e.into_error()))?
        .flush()
        .map_err(|e| io_error(path, e))
}

// ---------------------------------------------------------------------------------------------
// HDF5

fn hdf5_dtype(td: &hdf5::types::TypeDescriptor) -> Dtype {
    use hdf5::types::{FloatSize, IntSize, TypeDescriptor as TD};
    match td {
        TD::Boolean => Dtype::Bool,
        TD::Unsigned(IntSize::U1) => Dtype::U8,
        TD::Unsigned(IntSize::U2) => Dtype::U16,
        TD::Unsigned(IntSize::U4) => Dtype::U32,
        TD::Unsigned(IntSize::U8) => Dtype::U64,
        TD::Integer(IntSize::U1) => Dtype::I8,
        TD::Integer(IntSize::U2) => Dtype::I16,
        TD::Integer(IntSize::U4) => Dtype::I32,
        TD::Integer(IntSize::U8) => Dtype::I64,
        TD::Float(FloatSize::U4) => Dtype::Float("float32"),
        TD::Float(FloatSize::U8) => Dtype::Float("float64"),
        #[allow(unreachable_patterns)]
        TD::Float(_) => Dtype::Float("float16"),
        other => Dtype::Other(other.to_string()),
    }
}

/// The full paths of every dataset in the file, sorted.
fn list_datasets(group: &hdf5::Group, out: &mut Vec<String>) -> hdf5::Result<()> {
    for ds in group.datasets()? {
        out.push(ds.name());
    }
    for g in group.groups()? {
        list_datasets(&g, out)?;
    }
    Ok(())
}

fn read_hdf5_lattice(path: &Path, name: &str) -> Result<Lattice> {
    let file = hdf5_result(path, hdf5::File::open(path))?;
    let ds = match file.dataset(name) {
        Ok(ds) => ds,
        Err(_) => {
            let mut names = Vec::new();
            let listed = list_datasets(&file, &mut names);
            names.sort();
            let found = match listed {
                Err(_) => String::new(),
                Ok(()) if names.is_empty() => "; the file holds no datasets".to_owned(),
                Ok(()) => format!("; datasets in the file: {}", names.join(", ")),
            };
            return Err(bad_input(path, format!("no dataset {name:?}{found}")));
        }
    };
    let shape = ds.shape();
    if shape.len() != 2 {
        return Err(rank_error(path, &shape));
    }
    let td = hdf5_result(path, ds.dtype().and_then(|t| t.to_descriptor()))?;
    let dtype = hdf5_dtype(&td);
    let read = |ds: &hdf5::Dataset| -> Result<Lattice> {
        match dtype {
            Dtype::Bool => Ok(Lattice::from(read_hdf5_data::<bool>(path, ds)?)),
            Dtype::U8 => Ok(Lattice::U8(read_hdf5_data(path, ds)?)),
            Dtype::U16 => Ok(Lattice::U16(read_hdf5_data(path, ds)?)),
            Dtype::U32 => Ok(Lattice::U32(read_hdf5_data(path, ds)?)),
            Dtype::U64 => narrow(path, read_hdf5_data::<u64>(path, ds)?, &dtype),
            Dtype::I8 => narrow(path, read_hdf5_data::<i8>(path, ds)?, &dtype),
            Dtype::I16 => narrow(path, read_hdf5_data::<i16>(path, ds)?, &dtype),
            Dtype::I32 => narrow(path, read_hdf5_data::<i32>(path, ds)?, &dtype),
            Dtype::I64 => narrow(path, read_hdf5_data::<i64>(path, ds)?, &dtype),
            Dtype::Float(_) | Dtype::Other(_) => Err(unsupported(path, &dtype)),
        }
    };
    read(&ds).map_err(|e| match e {
        // Name the dataset in the messages about its content.
        Error::BadInput { path, reason } => Error::BadInput {
            path,
            reason: format!("dataset {name:?}: {reason}"),
        },
        e => e,
    })
}

fn read_hdf5_data<T: hdf5::H5Type + Clone>(path: &Path, ds: &hdf5::Dataset) -> Result<Array2<T>> {
    hdf5_result(path, ds.read_2d::<T>()).map(standard)
}

fn write_hdf5_array<T: hdf5::H5Type>(
    file: &hdf5::File,
    name: &str,
    array: ArrayView2<'_, T>,
) -> hdf5::Result<hdf5::Dataset> {
    file.new_dataset_builder().with_data(array).create(name)
}

fn write_lattice_dataset(file: &hdf5::File, lattice: &Lattice) -> hdf5::Result<hdf5::Dataset> {
    match lattice {
        Lattice::U8(a) => write_hdf5_array(file, LATTICE_DATASET, a.view()),
        Lattice::U16(a) => write_hdf5_array(file, LATTICE_DATASET, a.view()),
        Lattice::U32(a) => write_hdf5_array(file, LATTICE_DATASET, a.view()),
    }
}

fn write_labels_hdf5(
    path: &Path,
    labels: &Labels,
    meta: &LabelMeta,
    lattice: Option<&Lattice>,
) -> hdf5::Result<()> {
    use hdf5::types::VarLenUnicode;
    let file = hdf5::File::create(path)?;
    {
        let ds = write_hdf5_array(&file, LABELS_DATASET, labels.array().view())?;
        let connectivity = meta.connectivity.neighbours() as u32;
        ds.new_attr::<u32>()
            .create("connectivity")?
            .write_scalar(&connectivity)?;
        let boundary: VarLenUnicode = meta
            .boundary
            .name()
            .parse()
            .map_err(|e| hdf5::Error::from(format!("{e}")))?;
        ds.new_attr::<VarLenUnicode>()
            .create("boundary")?
            .write_scalar(&boundary)?;
        ds.new_attr::<u64>()
            .create("count")?
            .write_scalar(&(labels.count() as u64))?;
        ds.new_attr::<u8>()
            .create("segments")?
            .write_scalar(&u8::from(meta.segments))?;
        if let Some(lattice) = lattice {
            write_lattice_dataset(&file, lattice)?;
        }
    }
    file.close()
}
