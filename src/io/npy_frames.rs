//! `.npy` stacks: the header alone, frames by positioned reads, label frames appended.

use super::atomic::io_error;
use super::dtype::{bad_input, check_header, narrow, unsupported, Dtype};
use super::npy::npy_dtype;
use crate::io::Lattice;
use crate::{Error, Labels, Result};
use ndarray::Array2;
use ndarray_npy::npy::header::Header;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

struct NpyHeader {
    shape: Vec<usize>,
    dtype: Dtype,
    fortran: bool,
    big_endian: bool,
    data_start: u64,
    file_len: u64,
}

fn read_header(path: &Path) -> Result<NpyHeader> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let file_len = file.metadata().map_err(|e| io_error(path, e))?.len();
    let mut reader = BufReader::new(file);
    let header = Header::from_reader(&mut reader)
        .map_err(|e| bad_input(path, format!("not a valid .npy file: {e}")))?;
    let (dtype, big_endian) = match header.type_descriptor.as_string() {
        Some(descr) => (
            npy_dtype(descr),
            descr.starts_with('>') || (descr.starts_with('=') && cfg!(target_endian = "big")),
        ),
        None => (Dtype::Other(format!("{}", header.type_descriptor)), false),
    };
    let data_start = reader.stream_position().map_err(|e| io_error(path, e))?;
    Ok(NpyHeader {
        shape: header.shape,
        dtype,
        fortran: header.layout.is_fortran(),
        big_endian,
        data_start,
        file_len,
    })
}

/// The array's shape, from the header.
pub(crate) fn shape(path: &Path) -> Result<Vec<usize>> {
    read_header(path).map(|h| h.shape)
}

/// An open `.npy` stack.
pub(crate) struct NpyFrames {
    file: File,
    data_start: u64,
    frame_bytes: usize,
    big_endian: bool,
    buf: Vec<u8>,
}

impl NpyFrames {
    pub(crate) fn open(path: &Path) -> Result<(NpyFrames, Vec<usize>, Dtype)> {
        let h = read_header(path)?;
        if h.shape.len() != 3 {
            return Err(bad_input(
                path,
                format!(
                    "expected a 3-D (T, H, W) stack of frames, found a {}-D array",
                    h.shape.len()
                ),
            ));
        }
        if h.fortran && h.shape[1] * h.shape[2] > 1 && h.shape[0] > 1 {
            return Err(bad_input(
                path,
                "the stack is stored in Fortran (column-major) order, so its frames are not \
                 contiguous: save it in C order (numpy.ascontiguousarray) to read it frame by frame",
            ));
        }
        check_header(path, &h.shape[1..], &h.dtype)?;
        // Frames are labeled into u32 (`LabelSink`): refused from the header beyond that.
        crate::core::lattice::check_size(h.shape[1], h.shape[2])?;
        let size = h.dtype.size().ok_or_else(|| unsupported(path, &h.dtype))?;
        let frame_bytes = h.shape[1] * h.shape[2] * size;
        let need = (frame_bytes as u64).saturating_mul(h.shape[0] as u64);
        let have = h.file_len.saturating_sub(h.data_start);
        if have < need {
            return Err(bad_input(
                path,
                format!(
                    "the header says {} frames of {} × {} {} ({need} bytes of data) but the file \
                     holds {have} bytes after it",
                    h.shape[0], h.shape[1], h.shape[2], h.dtype
                ),
            ));
        }
        let file = File::open(path).map_err(|e| io_error(path, e))?;
        let frames = NpyFrames {
            file,
            data_start: h.data_start,
            frame_bytes,
            big_endian: h.big_endian,
            buf: Vec::new(),
        };
        Ok((frames, h.shape, h.dtype))
    }

    /// Reads frame `t` (checked by the caller to be in the stack).
    pub(crate) fn read(
        &mut self,
        path: &Path,
        t: usize,
        (h, w): (usize, usize),
        dtype: &Dtype,
    ) -> Result<Lattice> {
        let at = self.data_start + (t as u64) * self.frame_bytes as u64;
        self.buf.clear();
        self.buf
            .try_reserve_exact(self.frame_bytes)
            .map_err(|_| Error::OutOfMemory {
                what: "a frame read from a .npy file".into(),
                bytes: self.frame_bytes,
            })?;
        self.buf.resize(self.frame_bytes, 0);
        self.file
            .seek(SeekFrom::Start(at))
            .and_then(|_| self.file.read_exact(&mut self.buf))
            .map_err(|e| io_error(path, e))?;
        decode(path, &self.buf, (h, w), dtype, self.big_endian)
    }
}

/// The frame's bytes as a lattice, converted as `read_lattice` converts.
fn decode(
    path: &Path,
    bytes: &[u8],
    dim: (usize, usize),
    dtype: &Dtype,
    big: bool,
) -> Result<Lattice> {
    macro_rules! ints {
        ($t:ty) => {{
            const N: usize = std::mem::size_of::<$t>();
            let v: Vec<$t> = bytes
                .chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    if big {
                        <$t>::from_be_bytes(a)
                    } else {
                        <$t>::from_le_bytes(a)
                    }
                })
                .collect();
            array(path, dim, v)?
        }};
    }
    Ok(match dtype {
        Dtype::Bool => Lattice::from(array(path, dim, bytes.iter().map(|&b| b != 0).collect())?),
        Dtype::U8 => Lattice::U8(array(path, dim, bytes.to_vec())?),
        Dtype::U16 => Lattice::U16(ints!(u16)),
        Dtype::U32 => Lattice::U32(ints!(u32)),
        Dtype::U64 => narrow(path, ints!(u64), dtype)?,
        Dtype::I8 => narrow(path, ints!(i8), dtype)?,
        Dtype::I16 => narrow(path, ints!(i16), dtype)?,
        Dtype::I32 => narrow(path, ints!(i32), dtype)?,
        Dtype::I64 => narrow(path, ints!(i64), dtype)?,
        Dtype::Float(_) | Dtype::Other(_) => return Err(unsupported(path, dtype)),
    })
}

fn array<T>(path: &Path, dim: (usize, usize), v: Vec<T>) -> Result<Array2<T>> {
    Array2::from_shape_vec(dim, v).map_err(|e| bad_input(path, format!("frame of {dim:?}: {e}")))
}

/// A `.npy` file of `u32` labels written frame by frame: the header for the whole shape first,
/// then each frame appended.
pub(crate) struct NpyStackWriter {
    out: BufWriter<File>,
    path: PathBuf,
    dim: (usize, usize),
    left: usize,
    buf: Vec<u8>,
}

/// NumPy's format 1.0 header for a C-order `<u4` array of `shape`, padded to 64 bytes.
fn header_bytes(shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut dict = format!("{{'descr': '<u4', 'fortran_order': False, 'shape': {shape_text}, }}");
    // magic (6) + version (2) + length (2) + dict + '\n', a multiple of 64.
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    while 10 + dict.len() + 1 < total {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

impl NpyStackWriter {
    pub(crate) fn create(
        path: &Path,
        frames: Option<usize>,
        (h, w): (usize, usize),
    ) -> Result<NpyStackWriter> {
        let file = File::create(path).map_err(|e| io_error(path, e))?;
        let mut out = BufWriter::new(file);
        let shape = match frames {
            Some(t) => vec![t, h, w],
            None => vec![h, w],
        };
        out.write_all(&header_bytes(&shape))
            .map_err(|e| io_error(path, e))?;
        Ok(NpyStackWriter {
            out,
            path: path.to_owned(),
            dim: (h, w),
            left: frames.unwrap_or(1),
            buf: Vec::new(),
        })
    }

    pub(crate) fn push(&mut self, labels: &Labels) -> Result<()> {
        let a = labels.array();
        if a.dim() != self.dim || self.left == 0 {
            return Err(Error::InvalidArgument(format!(
                "{}: labels of shape {:?} do not fit the stack of {:?} frames ({} left)",
                self.path.display(),
                a.dim(),
                self.dim,
                self.left
            )));
        }
        // Row by row, so that the staging buffer is one row.
        for row in a.rows() {
            self.buf.clear();
            self.buf.extend(row.iter().flat_map(|v| v.to_le_bytes()));
            self.out
                .write_all(&self.buf)
                .map_err(|e| io_error(&self.path, e))?;
        }
        self.left -= 1;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Result<()> {
        if self.left != 0 {
            return Err(Error::InvalidArgument(format!(
                "{}: {} frames were not written",
                self.path.display(),
                self.left
            )));
        }
        self.out.flush().map_err(|e| io_error(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::header_bytes;

    #[test]
    fn header_is_padded_to_64_bytes() {
        for shape in [vec![3, 4, 5], vec![100000, 70000], vec![1]] {
            let h = header_bytes(&shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(*h.last().unwrap(), b'\n');
        }
    }
}
