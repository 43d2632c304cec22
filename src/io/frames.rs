//! Stacks of frames: a 3-D `(T, H, W)` array read one frame at a time ([`FrameReader`]), label
//! images written one frame at a time ([`LabelSink`]), and which frames to take
//! ([`FrameSelection`]). Memory stays about one frame in and one frame out whatever `T`.

use super::atomic::io_error;
use super::columns::SummaryColumn;
use super::dtype::Dtype;
use super::npy_frames::{NpyFrames, NpyStackWriter};
use super::{Format, LabelMeta, Lattice, WriteOptions, LATTICE_DATASET};
use crate::{ClusterTable, Error, Labels, Result};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[cfg(feature = "hdf5")]
use super::hdf5_frames::{Hdf5Frames, Hdf5Sink};

#[cfg(not(feature = "hdf5"))]
fn hdf5_off(path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "{}: HDF5 files need clusterlab's `hdf5` feature (on by default), which this build lacks",
        path.display()
    ))
}

/// Which frames of a `(T, H, W)` stack to take: `all`, one frame `K`, or the frames `A:B` (from
/// `A` up to but not including `B`, as a Python slice; `A:` runs to the end, `:B` starts at 0).
/// Frames are numbered from 0.
///
/// ```
/// use clusterlab::io::FrameSelection;
///
/// let s: FrameSelection = "2:5".parse()?;
/// assert_eq!(s.resolve(10)?, 2..5);
/// assert_eq!("all".parse::<FrameSelection>()?.resolve(3)?, 0..3);
/// assert_eq!("7".parse::<FrameSelection>()?.resolve(8)?, 7..8);
/// assert!("7".parse::<FrameSelection>()?.resolve(7).is_err());
/// assert!("5:2".parse::<FrameSelection>().is_err());
/// # Ok::<(), clusterlab::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameSelection {
    /// Every frame.
    All,
    /// One frame.
    One(usize),
    /// The frames `start..end`; `None` is the start or the end of the stack.
    Range {
        /// The first frame (default 0).
        start: Option<usize>,
        /// One past the last frame (default: the number of frames).
        end: Option<usize>,
    },
}

impl FromStr for FrameSelection {
    type Err = Error;
    /// `all`, `K` or `A:B` (either side of the colon may be left out).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "frames must be all, K or A:B (frame numbers from 0; A:B takes A up to but not \
                 including B), not {s:?}"
            ))
        };
        let text = s.trim();
        if text == "all" {
            return Ok(FrameSelection::All);
        }
        let number = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
        let side = |t: &str| -> Result<Option<usize>> {
            if t.trim().is_empty() {
                Ok(None)
            } else {
                number(t).map(Some)
            }
        };
        match text.split_once(':') {
            None => Ok(FrameSelection::One(number(text)?)),
            Some((a, b)) => {
                let (start, end) = (side(a)?, side(b)?);
                if let (Some(a), Some(b)) = (start, end) {
                    if b <= a {
                        return Err(Error::InvalidArgument(format!(
                            "frames {s:?}: A:B needs A < B (it takes A up to but not including B)"
                        )));
                    }
                }
                Ok(FrameSelection::Range { start, end })
            }
        }
    }
}

impl fmt::Display for FrameSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSelection::All => f.write_str("all"),
            FrameSelection::One(k) => write!(f, "{k}"),
            FrameSelection::Range { start, end } => {
                if let Some(a) = start {
                    write!(f, "{a}")?;
                }
                f.write_str(":")?;
                if let Some(b) = end {
                    write!(f, "{b}")?;
                }
                Ok(())
            }
        }
    }
}

impl FrameSelection {
    /// The frame numbers taken from a stack of `frames` frames.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a frame asked for is not in the stack, or none is taken.
    pub fn resolve(self, frames: usize) -> Result<Range<usize>> {
        let range = match self {
            FrameSelection::All => 0..frames,
            FrameSelection::One(k) => k..k.saturating_add(1),
            FrameSelection::Range { start, end } => start.unwrap_or(0)..end.unwrap_or(frames),
        };
        if range.end > frames || range.start >= range.end {
            return Err(Error::InvalidArgument(if frames == 0 {
                "the stack holds no frames".to_owned()
            } else {
                format!(
                    "frames {self}: the stack holds {frames} frames, numbered 0 to {}",
                    frames - 1
                )
            }));
        }
        Ok(range)
    }
}

/// The shape of the array in a `.npy` file, or of an HDF5 dataset (default `/lattice`), read
/// from the header alone: to tell a 2-D lattice from a `(T, H, W)` stack before reading either.
///
/// # Errors
/// As [`read_lattice`](super::read_lattice) for a missing file, an unsupported extension, a file
/// that is not `.npy`, or a dataset that does not exist.
pub fn array_shape(path: &Path, dataset: Option<&str>) -> Result<Vec<usize>> {
    let format = Format::from_path(path)?;
    std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    match format {
        Format::Npy => super::npy_frames::shape(path),
        #[cfg(feature = "hdf5")]
        Format::Hdf5 => super::hdf5_frames::shape(path, dataset.unwrap_or(LATTICE_DATASET)),
        #[cfg(not(feature = "hdf5"))]
        Format::Hdf5 => {
            let _ = (dataset, LATTICE_DATASET);
            Err(hdf5_off(path))
        }
    }
}

enum Source {
    Npy(NpyFrames),
    #[cfg(feature = "hdf5")]
    Hdf5(Hdf5Frames),
}

/// A `(T, H, W)` stack of lattices in a `.npy` file or an HDF5 dataset, read one frame at a time:
/// by positioned reads from a `.npy` file (C order), by hyperslab from HDF5. Each frame is
/// converted as [`read_lattice`](super::read_lattice) converts a 2-D array (signed and 64-bit
/// integers to the narrowest unsigned type that holds the frame's values).
pub struct FrameReader {
    source: Source,
    path: PathBuf,
    frames: usize,
    dim: (usize, usize),
    dtype: Dtype,
}

impl FrameReader {
    /// Opens the stack in `path` (`dataset` names the HDF5 dataset, default `/lattice`).
    ///
    /// # Errors
    /// As [`read_lattice`](super::read_lattice); [`Error::BadInput`] also when the array is not
    /// 3-D, or (`.npy`) is stored in Fortran order, or the file is shorter than its header says.
    pub fn open(path: &Path, dataset: Option<&str>) -> Result<FrameReader> {
        let format = Format::from_path(path)?;
        std::fs::metadata(path).map_err(|e| io_error(path, e))?;
        let (source, shape, dtype) = match format {
            Format::Npy => {
                let (frames, shape, dtype) = NpyFrames::open(path)?;
                (Source::Npy(frames), shape, dtype)
            }
            #[cfg(feature = "hdf5")]
            Format::Hdf5 => {
                let name = dataset.unwrap_or(LATTICE_DATASET);
                let (frames, shape, dtype) = Hdf5Frames::open(path, name)?;
                (Source::Hdf5(frames), shape, dtype)
            }
            #[cfg(not(feature = "hdf5"))]
            Format::Hdf5 => {
                let _ = dataset;
                return Err(hdf5_off(path));
            }
        };
        Ok(FrameReader {
            source,
            path: path.to_owned(),
            frames: shape[0],
            dim: (shape[1], shape[2]),
            dtype,
        })
    }

    /// The number of frames `T`.
    pub fn len(&self) -> usize {
        self.frames
    }

    /// Whether the stack holds no frames.
    pub fn is_empty(&self) -> bool {
        self.frames == 0
    }

    /// The shape `(H, W)` of each frame.
    pub fn dim(&self) -> (usize, usize) {
        self.dim
    }

    /// The element type in the file, by its NumPy name (`uint8`, `int32`, `bool`, ...).
    pub fn dtype(&self) -> String {
        self.dtype.to_string()
    }

    /// Reads frame `t`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `t` is not below [`FrameReader::len`]; [`Error::Io`] or
    /// [`Error::Hdf5`] when reading fails; [`Error::BadInput`] for a value a lattice cannot hold
    /// (negative, above `u32::MAX`).
    pub fn read(&mut self, t: usize) -> Result<Lattice> {
        if t >= self.frames {
            return Err(Error::InvalidArgument(format!(
                "{}: frame {t} is not in the stack of {} frames",
                self.path.display(),
                self.frames
            )));
        }
        let result = match &mut self.source {
            Source::Npy(f) => f.read(&self.path, t, self.dim, &self.dtype),
            #[cfg(feature = "hdf5")]
            Source::Hdf5(f) => f.read(&self.path, t, self.dim, &self.dtype),
        };
        result.map_err(|e| match e {
            Error::BadInput { path, reason } => Error::BadInput {
                path,
                reason: format!("frame {t}: {reason}"),
            },
            e => e,
        })
    }
}

/// What a [`LabelSink`] holds: `frames` label frames of `dim` = `(H, W)` sites each (`None`: one
/// 2-D label image), the first of them made from input frame `frame_start`.
///
/// ```
/// use clusterlab::io::LabelLayout;
///
/// let stack = LabelLayout::frames(10..20, (512, 256));
/// assert_eq!((stack.frames, stack.frame_start, stack.dim), (Some(10), 10, (512, 256)));
/// assert_eq!(LabelLayout::image((4, 5)).frames, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LabelLayout {
    /// The number of label frames; `None` for one 2-D image.
    pub frames: Option<usize>,
    /// The input frame of the first label frame (recorded in HDF5 as `frame_start`).
    pub frame_start: usize,
    /// `(H, W)`: each frame's shape.
    pub dim: (usize, usize),
}

impl LabelLayout {
    /// One 2-D label image of `dim`.
    pub fn image(dim: (usize, usize)) -> LabelLayout {
        LabelLayout {
            frames: None,
            frame_start: 0,
            dim,
        }
    }

    /// The label frames of input frames `range`, each of `dim`.
    pub fn frames(range: Range<usize>, dim: (usize, usize)) -> LabelLayout {
        LabelLayout {
            frames: Some(range.len()),
            frame_start: range.start,
            dim,
        }
    }
}

enum Sink {
    Npy(NpyStackWriter),
    #[cfg(feature = "hdf5")]
    Hdf5(Hdf5Sink),
}

/// Where label images go one frame at a time: a `.npy` file of shape `(T, H, W)` (`u32`), or in
/// an HDF5 file the dataset `/labels` — `(T, H, W)`, chunked one frame per chunk, with the
/// attributes `connectivity`, `boundary`, `segments` and `frame_start` (the input frame of the
/// first label frame) — and, at [`LabelSink::finish`], one dataset per summary column under
/// `/frames` (one row per frame).
///
/// [`LabelSink::create`] writes a new file at the path it is given (wrap it in
/// [`write_atomically`](super::write_atomically)); [`LabelSink::append`] adds the labels to an
/// existing HDF5 file without touching its other datasets.
pub struct LabelSink {
    sink: Sink,
}

impl LabelSink {
    /// A new file at `path`, in `format` (the path may be a temporary with another extension),
    /// for the label frames of `layout` (a 2-D image is written as
    /// [`write_labels`](super::write_labels) writes it, without `/lattice`). HDF5 label frames
    /// are compressed as `options` say; `.npy` files never are.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for HDF5 without the `hdf5` feature; [`Error::Io`] or
    /// [`Error::Hdf5`] when the file cannot be created.
    pub fn create(
        path: &Path,
        format: Format,
        layout: LabelLayout,
        meta: &LabelMeta,
        options: &WriteOptions,
    ) -> Result<LabelSink> {
        let sink = match format {
            Format::Npy => Sink::Npy(NpyStackWriter::create(path, layout.frames, layout.dim)?),
            #[cfg(feature = "hdf5")]
            Format::Hdf5 => Sink::Hdf5(Hdf5Sink::create(path, layout, meta, options)?),
            #[cfg(not(feature = "hdf5"))]
            Format::Hdf5 => {
                let _ = (meta, options);
                return Err(hdf5_off(path));
            }
        };
        Ok(LabelSink { sink })
    }

    /// Adds the labels to the existing HDF5 file `path` as the dataset `name` (e.g. `/labels`),
    /// safely: the frames go to a new, uniquely named dataset (`/.clusterlab-tmp.PID.N`) that is
    /// flushed and then renamed to `name` by [`LabelSink::finish`], so that the file's other
    /// datasets are never written to, whenever the program stops. A dataset already at `name` is
    /// an error unless `replace`, when it is unlinked just before the rename. Temporary datasets
    /// that killed runs left (their process no longer runs) are removed first. `name`'s group
    /// must exist. Without compression, the dataset's space is allocated when it is made, so that
    /// writing the frames changes no metadata.
    ///
    /// Open the sink before a [`FrameReader`] of the same file: HDF5 shares one open file, and
    /// a file open for reading only cannot be reopened for writing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a file that is not HDF5, or when `name` exists and
    /// `replace` is false, or its group does not exist; [`Error::Io`] or [`Error::Hdf5`] when the
    /// file cannot be opened for writing.
    pub fn append(
        path: &Path,
        name: &str,
        replace: bool,
        layout: LabelLayout,
        meta: &LabelMeta,
        options: &WriteOptions,
    ) -> Result<LabelSink> {
        if Format::from_path(path)? != Format::Hdf5 {
            return Err(Error::InvalidArgument(format!(
                "{}: labels can be added only to an HDF5 file (.h5, .hdf5)",
                path.display()
            )));
        }
        #[cfg(feature = "hdf5")]
        {
            let sink = Hdf5Sink::append(path, name, replace, layout, meta, options)?;
            Ok(LabelSink {
                sink: Sink::Hdf5(sink),
            })
        }
        #[cfg(not(feature = "hdf5"))]
        {
            let _ = (name, replace, layout, meta, options, Sink::Npy);
            Err(hdf5_off(path))
        }
    }

    /// A new HDF5 file at `path` that gets cluster tables ([`LabelSink::push_table`]) and
    /// summary columns, but no label image.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without the `hdf5` feature; [`Error::Io`] or [`Error::Hdf5`]
    /// when the file cannot be created.
    pub fn create_tables_only(path: &Path, meta: &LabelMeta) -> Result<LabelSink> {
        #[cfg(feature = "hdf5")]
        {
            Ok(LabelSink {
                sink: Sink::Hdf5(Hdf5Sink::create_tables_only(path, meta)?),
            })
        }
        #[cfg(not(feature = "hdf5"))]
        {
            let _ = meta;
            Err(hdf5_off(path))
        }
    }

    /// Appends the cluster table of input frame `frame` to `/clusters/<column>` (one dataset
    /// per column of the table, the frames' rows one after another) and its frame number to
    /// `/clusters/frame` (HDF5 files only).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `.npy` sink; [`Error::Hdf5`] when writing fails.
    pub fn push_table(&mut self, frame: usize, table: &ClusterTable) -> Result<()> {
        match &mut self.sink {
            Sink::Npy(_) => {
                let _ = (frame, table);
                Err(Error::InvalidArgument(
                    "cluster tables of frames go to an HDF5 file, not .npy".into(),
                ))
            }
            #[cfg(feature = "hdf5")]
            Sink::Hdf5(w) => w.push_table(frame, table),
        }
    }

    /// Writes the next label frame.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the labels do not have the frames' shape or every frame
    /// is written already; [`Error::Io`] or [`Error::Hdf5`] when writing fails.
    pub fn push(&mut self, labels: &Labels) -> Result<()> {
        match &mut self.sink {
            Sink::Npy(w) => w.push(labels),
            #[cfg(feature = "hdf5")]
            Sink::Hdf5(w) => w.push(labels),
        }
    }

    /// Writes the summary columns (HDF5: `/frames/<name>`, one row per frame; `.npy` files do
    /// not hold them, and an appended dataset gets none) and closes the file; an appended
    /// dataset is renamed to its final name here.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when fewer frames were pushed than the sink was made for;
    /// [`Error::Io`] or [`Error::Hdf5`] when writing fails.
    pub fn finish(self, columns: &[SummaryColumn]) -> Result<()> {
        match self.sink {
            Sink::Npy(w) => {
                let _ = columns;
                w.finish()
            }
            #[cfg(feature = "hdf5")]
            Sink::Hdf5(w) => w.finish(columns),
        }
    }
}
