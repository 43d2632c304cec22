//! Reading lattices and writing labels: `.npy` and `.h5`, written atomically.
//!
//! The format follows the file's extension: `.npy` (NumPy's array format) or `.h5` / `.hdf5`.
//!
//! - [`read_lattice`] reads a 2-D array of booleans or non-negative integers. `bool`, `u8`, `u16`
//!   and `u32` are kept as they are; signed integers and `u64` are converted to the narrowest of
//!   `u8`, `u16`, `u32` that holds every value. In an HDF5 file the lattice is the dataset
//!   `/lattice` unless another one is named.
//! - [`write_labels`] writes the label image, `uint32` or `uint64` as the labels are: the array
//!   itself in a `.npy` file; in an HDF5 file the dataset `/labels` with the attributes
//!   `connectivity`, `boundary`, `count` and `segments`, and the lattice as `/lattice` when given.
//!   A `uint64` label file reads back through [`read_lattice`] (narrowed when its labels fit).
//! - [`NpyOutput`] is a `.npy` label file that a [`Labeler`](crate::Labeler) fills in place
//!   (mapped into memory where the system can reserve its blocks): no image in memory, no copy.
//! - [`write_lattice`] writes a lattice (`.npy`, or `/lattice` in an HDF5 file).
//! - Stacks of frames, `(T, H, W)`: [`FrameReader`] reads one frame at a time, [`LabelSink`]
//!   writes label frames one at a time (to a new file, or added safely to an existing HDF5
//!   file), [`FrameSelection`] says which frames; [`array_shape`] tells a stack from a lattice.
//! - [`write_columns`] writes small tables of named columns (per-frame summaries, `n_s`) as CSV
//!   or HDF5.
//!
//! Every output goes through [`write_atomically`]: it is written to a temporary file in the
//! destination's folder and renamed into place, so that a failure leaves neither a half-written
//! file nor the temporary behind, and readers never see a partial file.

mod atomic;
mod columns;
mod dtype;
mod frames;
#[cfg(feature = "hdf5")]
mod hdf5;
#[cfg(not(feature = "hdf5"))]
#[path = "hdf5_off.rs"]
mod hdf5;
#[cfg(feature = "hdf5")]
pub(crate) mod hdf5_fd;
#[cfg(feature = "hdf5")]
mod hdf5_frames;
mod npy;
mod npy_frames;
mod npy_output;
mod table;

pub use crate::core::lattice::Lattice;
pub use atomic::{remove_pending_temporaries, write_atomically};
pub use columns::{
    columns_to_csv, write_column_groups, write_columns, SummaryColumn, SummaryValues,
};
pub use frames::{array_shape, FrameReader, FrameSelection, LabelLayout, LabelSink};
pub use npy_output::NpyOutput;

use crate::core::labels::LabelArray;
use crate::{Boundary, Connectivity, Error, LabelValue, Labels, Result};
use atomic::io_error;
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

/// How outputs are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct WriteOptions {
    /// HDF5 outputs: compress the lattice and label images with shuffle + deflate (gzip) at this
    /// level, 0..=9, in chunks of whole rows of about 1 MiB (h5py, HDF5's tools and every
    /// HDF5 reader decompress them). `.npy` files are never compressed.
    pub compression: Option<u8>,
}

impl WriteOptions {
    /// Compression at `level` (0..=9; above 9 is taken as 9).
    pub fn compress(mut self, level: u8) -> Self {
        self.compression = Some(level.min(9));
        self
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
        Format::Npy => npy::read_lattice(path),
        Format::Hdf5 => hdf5::read_lattice(path, dataset.unwrap_or(LATTICE_DATASET)),
    }
}

/// Writes a label image: `.npy` gets the label array (`u32`, or `u64` for [`Labels<u64>`]); an
/// HDF5 file gets the dataset `/labels` (of the labels' type) with the attributes `connectivity` (`u32`: 4 or 8), `boundary` (string:
/// `open`, `periodic`, `periodic-x` or `periodic-y`), `count` (`u64`, the number of clusters) and
/// `segments` (`u8`: 0 or 1), plus the dataset `/lattice` when `lattice` is given (`.npy` files
/// ignore it). The file is replaced atomically (see [`write_atomically`]).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unsupported extension, [`Error::Io`] or [`Error::Hdf5`] when
/// writing fails; nothing is left behind then.
pub fn write_labels<L: LabelValue>(
    path: &Path,
    labels: &Labels<L>,
    meta: &LabelMeta,
    lattice: Option<&Lattice>,
) -> Result<()> {
    write_labels_with(path, labels, meta, lattice, &WriteOptions::default())
}

/// As [`write_labels`], stored as `options` say (HDF5 compression).
///
/// # Errors
/// As [`write_labels`].
pub fn write_labels_with<L: LabelValue>(
    path: &Path,
    labels: &Labels<L>,
    meta: &LabelMeta,
    lattice: Option<&Lattice>,
    options: &WriteOptions,
) -> Result<()> {
    match Format::from_path(path)? {
        Format::Npy => write_atomically(path, |tmp| match L::array(labels.array()) {
            LabelArray::U32(a) => npy::write_array(tmp, a),
            LabelArray::U64(a) => npy::write_array(tmp, a),
        }),
        Format::Hdf5 => write_atomically(path, |tmp| {
            hdf5::write_labels(tmp, labels, meta, lattice, options)
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
    write_lattice_with(path, lattice, &WriteOptions::default())
}

/// As [`write_lattice`], stored as `options` say (HDF5 compression).
///
/// # Errors
/// As [`write_lattice`].
pub fn write_lattice_with(path: &Path, lattice: &Lattice, options: &WriteOptions) -> Result<()> {
    match Format::from_path(path)? {
        Format::Npy => write_atomically(path, |tmp| match lattice {
            Lattice::U8(a) => npy::write_array(tmp, a),
            Lattice::U16(a) => npy::write_array(tmp, a),
            Lattice::U32(a) => npy::write_array(tmp, a),
        }),
        Format::Hdf5 => write_atomically(path, |tmp| hdf5::write_lattice(tmp, lattice, options)),
    }
}
