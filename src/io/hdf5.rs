//! HDF5 files (feature `hdf5`).

use super::dtype::{bad_input, check_header, narrow, rank_error, standard, unsupported, Dtype};
use super::{LabelMeta, WriteOptions, LABELS_DATASET, LATTICE_DATASET};
use crate::io::Lattice;
use crate::measure::columns::{columns, ColumnData};
use crate::{ClusterTable, Error, Labels, Result};
use ndarray::{Array2, ArrayView2};
use std::path::Path;

/// Turns an HDF5 error into ours, on one line.
pub(crate) fn hdf5_result<T>(path: &Path, result: ::hdf5::Result<T>) -> Result<T> {
    result.map_err(|e| Error::Hdf5 {
        path: path.to_owned(),
        message: one_line(&e.to_string()),
    })
}

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn hdf5_dtype(td: &::hdf5::types::TypeDescriptor) -> Dtype {
    use ::hdf5::types::{FloatSize, IntSize, TypeDescriptor as TD};
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
fn list_datasets(group: &::hdf5::Group, out: &mut Vec<String>) -> ::hdf5::Result<()> {
    for ds in group.datasets()? {
        out.push(ds.name());
    }
    for g in group.groups()? {
        list_datasets(&g, out)?;
    }
    Ok(())
}

/// The dataset `name`, or an error that lists the datasets the file holds.
pub(crate) fn open_dataset(
    path: &Path,
    file: &::hdf5::File,
    name: &str,
) -> Result<::hdf5::Dataset> {
    match file.dataset(name) {
        Ok(ds) => Ok(ds),
        Err(_) => {
            let mut names = Vec::new();
            let listed = list_datasets(file, &mut names);
            names.sort();
            let found = match listed {
                Err(_) => String::new(),
                Ok(()) if names.is_empty() => "; the file holds no datasets".to_owned(),
                Ok(()) => format!("; datasets in the file: {}", names.join(", ")),
            };
            Err(bad_input(path, format!("no dataset {name:?}{found}")))
        }
    }
}

pub(crate) fn read_lattice(path: &Path, name: &str) -> Result<Lattice> {
    let file = hdf5_result(path, super::hdf5_fd::open(path))?;
    let ds = open_dataset(path, &file, name)?;
    let shape = ds.shape();
    if shape.len() != 2 {
        return Err(rank_error(path, &shape));
    }
    let td = hdf5_result(path, ds.dtype().and_then(|t| t.to_descriptor()))?;
    let dtype = hdf5_dtype(&td);
    check_header(path, &shape, &dtype)?;
    check_filters(path, name, &ds)?;
    let read = |ds: &::hdf5::Dataset| -> Result<Lattice> {
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

fn read_hdf5_data<T: ::hdf5::H5Type + Clone>(
    path: &Path,
    ds: &::hdf5::Dataset,
) -> Result<Array2<T>> {
    hdf5_result(path, ds.read_2d::<T>()).map(standard)
}

/// Rows per chunk of a compressed 2-D dataset: whole rows, about 1 MiB.
pub(crate) fn chunk_rows(h: usize, w: usize, elem: usize) -> usize {
    ((1 << 20) / (w * elem).max(1)).clamp(1, h.max(1))
}

/// Writes a 2-D dataset, compressed (shuffle + deflate, chunks of whole rows) when asked.
fn write_hdf5_array<T: ::hdf5::H5Type>(
    group: &::hdf5::Group,
    name: &str,
    array: ArrayView2<'_, T>,
    options: &WriteOptions,
) -> ::hdf5::Result<::hdf5::Dataset> {
    let (h, w) = array.dim();
    let builder = group.new_dataset_builder();
    match options.compression {
        Some(level) if h > 0 && w > 0 => builder
            .with_data(array)
            .chunk((chunk_rows(h, w, std::mem::size_of::<T>()), w))
            .shuffle()
            .deflate(level)
            .create(name),
        _ => builder.with_data(array).create(name),
    }
}

pub(crate) fn write_lattice_dataset(
    file: &::hdf5::File,
    lattice: &Lattice,
    options: &WriteOptions,
) -> ::hdf5::Result<::hdf5::Dataset> {
    match lattice {
        Lattice::U8(a) => write_hdf5_array(file, LATTICE_DATASET, a.view(), options),
        Lattice::U16(a) => write_hdf5_array(file, LATTICE_DATASET, a.view(), options),
        Lattice::U32(a) => write_hdf5_array(file, LATTICE_DATASET, a.view(), options),
    }
}

fn write_labels_file<T: ::hdf5::H5Type>(
    path: &Path,
    array: ArrayView2<'_, T>,
    count: usize,
    meta: &LabelMeta,
    lattice: Option<&Lattice>,
    options: &WriteOptions,
) -> ::hdf5::Result<()> {
    use ::hdf5::types::VarLenUnicode;
    let file = super::hdf5_fd::create(path)?;
    {
        let ds = write_hdf5_array(&file, LABELS_DATASET, array, options)?;
        let connectivity = meta.connectivity.neighbours() as u32;
        ds.new_attr::<u32>()
            .create("connectivity")?
            .write_scalar(&connectivity)?;
        let boundary: VarLenUnicode = meta
            .boundary
            .name()
            .parse()
            .map_err(|e| ::hdf5::Error::from(format!("{e}")))?;
        ds.new_attr::<VarLenUnicode>()
            .create("boundary")?
            .write_scalar(&boundary)?;
        ds.new_attr::<u64>()
            .create("count")?
            .write_scalar(&(count as u64))?;
        ds.new_attr::<u8>()
            .create("segments")?
            .write_scalar(&u8::from(meta.segments))?;
        if let Some(lattice) = lattice {
            write_lattice_dataset(&file, lattice, options)?;
        }
    }
    file.close()
}

/// Writes the label file `path` (see [`write_labels`](super::write_labels)).
pub(crate) fn write_labels<L: crate::LabelValue>(
    path: &Path,
    labels: &Labels<L>,
    meta: &LabelMeta,
    lattice: Option<&Lattice>,
    options: &WriteOptions,
) -> Result<()> {
    use crate::core::labels::LabelArray;
    let count = labels.count();
    let written = match L::array(labels.array()) {
        LabelArray::U32(a) => write_labels_file(path, a.view(), count, meta, lattice, options),
        LabelArray::U64(a) => write_labels_file(path, a.view(), count, meta, lattice, options),
    };
    hdf5_result(path, written)
}

/// Writes the lattice file `path` (see [`write_lattice`](super::write_lattice)).
pub(crate) fn write_lattice(path: &Path, lattice: &Lattice, options: &WriteOptions) -> Result<()> {
    hdf5_result(
        path,
        (|| {
            let file = super::hdf5_fd::create(path)?;
            write_lattice_dataset(&file, lattice, options)?;
            file.close()
        })(),
    )
}

/// Writes a cluster table's file `path` (see
/// [`ClusterTable::write_hdf5_with`](crate::ClusterTable::write_hdf5_with)).
pub(crate) fn write_table(
    path: &Path,
    table: &ClusterTable,
    labels: Option<&Labels>,
    lattice: Option<&Lattice>,
    options: &WriteOptions,
) -> Result<()> {
    hdf5_result(path, table_file(table, path, labels, lattice, options))
}

fn table_file(
    table: &ClusterTable,
    path: &Path,
    labels: Option<&Labels>,
    lattice: Option<&Lattice>,
    options: &WriteOptions,
) -> ::hdf5::Result<()> {
    use ::hdf5::types::VarLenUnicode;
    let file = super::hdf5_fd::create(path)?;
    let boundary: VarLenUnicode = table
        .boundary
        .name()
        .parse()
        .map_err(|e| ::hdf5::Error::from(format!("{e}")))?;
    let connectivity = table.connectivity.neighbours() as u32;
    let count = table.count() as u64;
    let segments = u8::from(table.segments);
    let attrs = |loc: &::hdf5::Location| -> ::hdf5::Result<()> {
        loc.new_attr::<u32>()
            .create("connectivity")?
            .write_scalar(&connectivity)?;
        loc.new_attr::<VarLenUnicode>()
            .create("boundary")?
            .write_scalar(&boundary)?;
        loc.new_attr::<u64>()
            .create("count")?
            .write_scalar(&count)?;
        loc.new_attr::<u8>()
            .create("segments")?
            .write_scalar(&segments)?;
        Ok(())
    };
    {
        let g = file.create_group("clusters")?;
        let shape = [table.shape.0 as u64, table.shape.1 as u64];
        g.new_attr_builder().with_data(&shape[..]).create("shape")?;
        attrs(&g)?;
        // One dataset per column of the registry, in its order.
        for c in columns(table.measures) {
            let Some(data) = c.data(table) else { continue };
            let ds = g.new_dataset_builder();
            match data {
                ColumnData::U32(a) => ds.with_data(a.view()).create(c.name),
                ColumnData::U64(a) => ds.with_data(a).create(c.name),
                ColumnData::I64(a) => ds.with_data(a).create(c.name),
                ColumnData::F64(a) => ds.with_data(a).create(c.name),
                ColumnData::Flag(a) => ds.with_data(a.mapv(u8::from).view()).create(c.name),
            }?;
        }
    }
    if let Some(labels) = labels {
        let ds = write_hdf5_array(&file, LABELS_DATASET, labels.array().view(), options)?;
        attrs(&ds)?;
    }
    if let Some(lattice) = lattice {
        write_lattice_dataset(&file, lattice, options)?;
    }
    file.close()
}

/// The usual name of an HDF5 filter, by its registered id.
fn filter_name(id: i32) -> &'static str {
    match id {
        1 => "deflate (gzip)",
        2 => "shuffle",
        3 => "Fletcher-32",
        4 => "szip",
        5 => "N-bit",
        6 => "scale-offset",
        307 => "bzip2",
        32000 => "LZF",
        32001 => "Blosc",
        32004 => "LZ4",
        32008 => "bitshuffle",
        32013 => "ZFP",
        32015 => "Zstandard",
        32017 => "SZ",
        _ => "an unregistered filter",
    }
}

/// Refuses, by name, a dataset stored with a filter this build cannot decode — instead of the
/// HDF5 library's message about a plugin folder. Built in: deflate, shuffle, Fletcher-32,
/// scale-offset, N-bit (HDF5's own), LZF and Blosc (blosclz, LZ4, zlib, Zstandard).
pub(crate) fn check_filters(path: &Path, name: &str, ds: &::hdf5::Dataset) -> Result<()> {
    for f in ds.filters() {
        if !f.is_available() {
            let id = f.id();
            return Err(bad_input(
                path,
                format!(
                    "dataset {name:?} is stored with the HDF5 filter {} (id {id}), which clusterlab \
                     cannot decode; rewrite it with one it can, e.g. \
                     `h5repack -f {name}:GZIP=4 in.h5 out.h5` (deflate, shuffle, Fletcher-32, LZF and \
                     Blosc are built in)",
                    filter_name(id)
                ),
            ));
        }
    }
    Ok(())
}
