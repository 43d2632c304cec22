//! A `.npy` label image filled in place: [`NpyOutput`].
//!
//! Labeling into memory and then writing the image copies every label twice more: into a fresh
//! image (each page faulted in on first touch) and from it into the page cache. Where the
//! filesystem can reserve the file's blocks up front (Linux `fallocate`), the temporary output
//! file is mapped into memory and the labeler writes the labels straight into its pages, so
//! only the flush to disk remains; a full disk is then an error at [`NpyOutput::create`], not a
//! `SIGBUS` while labeling. Elsewhere the image is labeled in memory and written at
//! [`NpyOutput::finish`]. The file is the same either way, and the output is atomic as every
//! other (see [`write_atomically`](super::write_atomically)).

use super::atomic::{io_error, PendingFile};
use crate::core::labels::sizes_of;
use crate::{Error, LabelValue, Result};
use memmap2::MmapMut;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use ndarray_npy::{write_zeroed_npy, ViewMutNpyExt};
use std::path::Path;

/// A label image being written into a new `.npy` file, in place where the system allows: give
/// [`NpyOutput::view_mut`] to [`Labeler::label_into`](crate::Labeler::label_into), then
/// [`NpyOutput::finish`]. Until then the labels live in a temporary file beside the destination
/// (removed if the output is dropped unfinished), and the destination is left as it was.
///
/// ```
/// use clusterlab::io::NpyOutput;
/// use clusterlab::{Boundary, Connectivity, Labeler};
/// use ndarray::array;
///
/// # let dir = tempfile::tempdir()?;
/// let path = dir.path().join("labels.npy");
/// let lattice = array![[1u8, 0, 1], [1, 0, 1]];
/// let mut labeler = Labeler::new(Connectivity::Four, Boundary::Open);
/// let mut out = NpyOutput::<u32>::create(&path, lattice.dim())?;
/// let count = labeler.label_into(lattice.view(), out.view_mut())?;
/// assert_eq!(out.view(), array![[1u32, 0, 2], [1, 0, 2]]);
/// assert_eq!(out.sizes(count)?, vec![2, 2, 2]);
/// out.finish()?;
/// let back: ndarray::Array2<u32> = ndarray_npy::read_npy(&path)?;
/// assert_eq!(back, array![[1u32, 0, 2], [1, 0, 2]]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NpyOutput<L: LabelValue = u32> {
    pending: PendingFile,
    image: Image<L>,
}

/// Where the labels are: a mapping of the file, with the data's byte offset, or memory.
enum Image<L> {
    Mapped {
        map: MmapMut,
        offset: usize,
        shape: (usize, usize),
    },
    Memory(Array2<L>),
}

impl<L: LabelValue> NpyOutput<L> {
    /// A `height × width` label file at `path` (a `.npy` file, whatever its extension), mapped
    /// into memory where its blocks can be reserved.
    ///
    /// # Errors
    /// [`Error::TooManySites`] beyond the label type's limit, [`Error::Io`] when the temporary
    /// cannot be created or its space reserved (a full disk), [`Error::OutOfMemory`] when the
    /// in-memory image (no mapping) does not fit.
    pub fn create(path: &Path, shape: (usize, usize)) -> Result<Self> {
        Self::open(path, shape, true)
    }

    /// As [`NpyOutput::create`], with the labels always in memory, written at
    /// [`NpyOutput::finish`]: for a file that must not be mapped (a network filesystem that
    /// handles shared mappings badly).
    ///
    /// # Errors
    /// As [`NpyOutput::create`].
    pub fn in_memory(path: &Path, shape: (usize, usize)) -> Result<Self> {
        Self::open(path, shape, false)
    }

    fn open(path: &Path, (height, width): (usize, usize), map: bool) -> Result<Self> {
        crate::core::lattice::check_size_for(height, width, L::MAX_SITES)?;
        let pending = PendingFile::create(path)?;
        let npy_err = |e: ndarray_npy::WriteNpyError| match e {
            ndarray_npy::WriteNpyError::Io(e) => io_error(path, e),
            e => io_error(path, std::io::Error::other(e.to_string())),
        };
        write_zeroed_npy::<L, _>(pending.file(), (height, width)).map_err(npy_err)?;
        let bytes = height * width * std::mem::size_of::<L>();
        let mapped = if map {
            map_file(&pending, path, bytes)?
        } else {
            None
        };
        // The view is checked once here (header, length, alignment), so `view_mut` cannot fail.
        let image = match mapped.map(|mut map| {
            let offset = match ArrayViewMut2::<L>::view_mut_npy(&mut map) {
                Ok(v) if v.dim() == (height, width) && v.is_standard_layout() => {
                    Some(v.as_ptr() as usize - map.as_ptr() as usize)
                }
                _ => None,
            };
            (map, offset)
        }) {
            Some((map, Some(offset))) => Image::Mapped {
                map,
                offset,
                shape: (height, width),
            },
            _ => Image::Memory(crate::core::alloc::zeros(height, width, "the label image")?),
        };
        Ok(NpyOutput { pending, image })
    }

    /// Whether the labels go straight into the file's pages (rather than an image in memory
    /// written at [`NpyOutput::finish`]).
    pub fn is_mapped(&self) -> bool {
        matches!(self.image, Image::Mapped { .. })
    }

    /// The label image to fill, `[y, x]`, all zeros at first.
    pub fn view_mut(&mut self) -> ArrayViewMut2<'_, L> {
        match &mut self.image {
            Image::Mapped { map, offset, shape } => {
                // SAFETY: `create` viewed `shape.0 * shape.1` elements of `L` at `offset` of this
                // mapping (in bounds, aligned, standard layout); it lives as long as `self`, and
                // the borrow is exclusive.
                unsafe {
                    ArrayViewMut2::from_shape_ptr(*shape, map.as_mut_ptr().add(*offset).cast::<L>())
                }
            }
            Image::Memory(a) => a.view_mut(),
        }
    }

    /// The labels written so far, `[y, x]` (read them here, before [`NpyOutput::finish`]:
    /// the pages are in memory now).
    pub fn view(&self) -> ArrayView2<'_, L> {
        match &self.image {
            Image::Mapped { map, offset, shape } => {
                // SAFETY: as in `view_mut`, shared.
                unsafe { ArrayView2::from_shape_ptr(*shape, map.as_ptr().add(*offset).cast::<L>()) }
            }
            Image::Memory(a) => a.view(),
        }
    }

    /// Sites per label of the labels written, numbered `0..=count` (element 0 counts the empty
    /// sites), as [`Labels::sizes`](crate::Labels::sizes) gives them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a label exceeds `count`.
    pub fn sizes(&self, count: usize) -> Result<Vec<u64>> {
        sizes_of(self.view(), count).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the label image holds a label above the cluster count {count}"
            ))
        })
    }

    /// Writes the file to disk (the in-memory image, or the mapping's pages) and renames it to
    /// its destination. The mapping is dropped first: writing back pages that are still mapped
    /// costs the kernel a page-table walk per page.
    ///
    /// # Errors
    /// [`Error::Io`] when writing, flushing or renaming fails (the destination is left as it
    /// was, and the temporary removed).
    pub fn finish(self) -> Result<()> {
        let NpyOutput { pending, image } = self;
        if let Image::Memory(a) = &image {
            super::npy::write_array(pending.path(), a)?;
        }
        drop(image);
        pending.commit()
    }
}

/// Maps the temporary for writing once its `bytes` of data are reserved on disk; `None` where
/// this system or filesystem cannot reserve them (the labels then go through memory).
fn map_file(pending: &PendingFile, path: &Path, bytes: usize) -> Result<Option<MmapMut>> {
    if bytes == 0 || !reserve(pending, path, bytes)? {
        return Ok(None);
    }
    // SAFETY: the temporary was created by this process under a fresh random name and is
    // changed by nothing else while mapped (its blocks are reserved, so writes cannot fault).
    Ok(unsafe { MmapMut::map_mut(pending.file()) }.ok())
}

/// Reserves the file's blocks: `Ok(false)` where that is not supported, an error when the disk
/// is full.
#[cfg(target_os = "linux")]
fn reserve(pending: &PendingFile, path: &Path, bytes: usize) -> Result<bool> {
    use std::os::unix::io::AsRawFd;
    let len = pending
        .file()
        .metadata()
        .map_err(|e| io_error(path, e))?
        .len();
    let (Ok(len), Ok(start)) = (
        libc::off_t::try_from(len),
        libc::off_t::try_from(len as usize - bytes),
    ) else {
        return Ok(false);
    };
    // SAFETY: a plain system call on an open descriptor.
    let rc = unsafe { libc::fallocate(pending.file().as_raw_fd(), 0, start, len - start) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => Err(Error::Io {
            path: path.to_owned(),
            source: err,
        }),
        _ => Ok(false),
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_: &PendingFile, _: &Path, _: usize) -> Result<bool> {
    Ok(false)
}
