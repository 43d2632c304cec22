//! NumPy's `.npy` format.

use super::atomic::io_error;
use super::dtype::{bad_input, check_header, narrow, standard, unsupported, Dtype};
use crate::core::alloc::Zeroable;
use crate::io::Lattice;
use crate::Result;
use ndarray::Array2;
use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyExt, ReadableElement, WritableElement, WriteNpyExt};
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

pub(crate) fn npy_dtype(descr: &str) -> Dtype {
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

pub(crate) fn read_lattice(path: &Path) -> Result<Lattice> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut reader = BufReader::new(file);
    let header = Header::from_reader(&mut reader)
        .map_err(|e| bad_input(path, format!("not a valid .npy file: {e}")))?;
    let dtype = match header.type_descriptor.as_string() {
        Some(descr) => npy_dtype(descr),
        None => Dtype::Other(format!("{}", header.type_descriptor)),
    };
    check_header(path, &header.shape, &dtype)?;
    // A header that claims more data than the file holds is refused before reading.
    let data_start = reader.stream_position().map_err(|e| io_error(path, e))?;
    let file_len = reader
        .get_ref()
        .metadata()
        .map_err(|e| io_error(path, e))?
        .len();
    let need = (header.shape[0] * header.shape[1]) as u64 * dtype.size().unwrap_or(1) as u64;
    if file_len.saturating_sub(data_start) < need {
        return Err(bad_input(
            path,
            format!(
                "the header says {} × {} {dtype} ({need} bytes of data) but the file holds {} bytes after it",
                header.shape[0],
                header.shape[1],
                file_len.saturating_sub(data_start)
            ),
        ));
    }
    // Native-order u8/u16/u32 data that fills the file exactly is read in parallel, straight
    // into the lattice: one thread copying (and faulting in) a 268 MB lattice took twice
    // numpy's time.
    let native = header.type_descriptor.as_string().is_some_and(|d| {
        d.starts_with('|')
            || d.starts_with('=')
            || (cfg!(target_endian = "little") && d.starts_with('<'))
    });
    if cfg!(unix) && native && !header.layout.is_fortran() && file_len - data_start == need {
        let (h, w) = (header.shape[0], header.shape[1]);
        let file = reader.get_ref();
        match dtype {
            Dtype::U8 => return Ok(Lattice::U8(read_parallel(path, file, data_start, h, w)?)),
            Dtype::U16 => return Ok(Lattice::U16(read_parallel(path, file, data_start, h, w)?)),
            Dtype::U32 => return Ok(Lattice::U32(read_parallel(path, file, data_start, h, w)?)),
            _ => {}
        }
    }
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, e))?;
    match dtype {
        Dtype::Bool => Ok(Lattice::from(read_data::<bool>(path, reader)?)),
        Dtype::U8 => Ok(Lattice::U8(read_data(path, reader)?)),
        Dtype::U16 => Ok(Lattice::U16(read_data(path, reader)?)),
        Dtype::U32 => Ok(Lattice::U32(read_data(path, reader)?)),
        Dtype::U64 => narrow(path, read_data::<u64>(path, reader)?, &dtype),
        Dtype::I8 => narrow(path, read_data::<i8>(path, reader)?, &dtype),
        Dtype::I16 => narrow(path, read_data::<i16>(path, reader)?, &dtype),
        Dtype::I32 => narrow(path, read_data::<i32>(path, reader)?, &dtype),
        Dtype::I64 => narrow(path, read_data::<i64>(path, reader)?, &dtype),
        Dtype::Float(_) | Dtype::Other(_) => Err(unsupported(path, &dtype)),
    }
}

/// Reads `h × w` native-order values at byte `start` of `file`, in parallel chunks.
#[cfg(unix)]
fn read_parallel<T: Zeroable + Send + Sync>(
    path: &Path,
    file: &File,
    start: u64,
    h: usize,
    w: usize,
) -> Result<Array2<T>> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    const CHUNK: usize = 4 << 20;
    let mut a = crate::core::alloc::zeros::<T>(h, w, "the lattice")?;
    let Some(values) = a.as_slice_mut() else {
        return Err(bad_input(path, "the lattice is not contiguous"));
    };
    let len = std::mem::size_of_val(values);
    // SAFETY: the values are plain integers (`Zeroable`), so their bytes may be written as any
    // byte values; the slice covers exactly their `len` bytes and borrows them exclusively.
    let bytes = unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), len) };
    bytes
        .par_chunks_mut(CHUNK)
        .enumerate()
        .try_for_each(|(i, chunk)| file.read_exact_at(chunk, start + (i * CHUNK) as u64))
        .map_err(|e| io_error(path, e))?;
    Ok(a)
}

#[cfg(not(unix))]
fn read_parallel<T: Zeroable + Send + Sync>(
    path: &Path,
    _: &File,
    _: u64,
    _: usize,
    _: usize,
) -> Result<Array2<T>> {
    Err(bad_input(path, "no parallel reads on this system"))
}

fn read_data<T: ReadableElement + Clone>(
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

pub(crate) fn write_array<T: WritableElement>(path: &Path, array: &Array2<T>) -> Result<()> {
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
