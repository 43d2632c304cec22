//! HDF5 stacks (feature `hdf5`): frames by hyperslab, label frames into a chunked dataset (a
//! new file, or a temporary dataset of an existing file renamed when complete), per-frame
//! summary columns and cluster tables.

use super::columns::{check_rows, SummaryColumn, SummaryValues};
use super::dtype::{bad_input, check_header, narrow, unsupported, Dtype};
use super::hdf5::{check_filters, chunk_rows, hdf5_dtype, hdf5_result, open_dataset};
use super::{LabelLayout, LabelMeta, Lattice, WriteOptions};
use crate::measure::columns::{columns, ColumnData};
use crate::{ClusterTable, Error, Labels, Result};
use ::hdf5::types::VarLenUnicode;
use ndarray::{s, Array2, ArrayView1};
use std::path::{Path, PathBuf};

/// The prefix of the temporary datasets of [`Hdf5Sink::append`], at the file's root.
const TEMP_PREFIX: &str = ".clusterlab-tmp.";

/// The shape of dataset `name`.
pub(crate) fn shape(path: &Path, name: &str) -> Result<Vec<usize>> {
    let file = hdf5_result(path, super::hdf5_fd::open(path))?;
    Ok(open_dataset(path, &file, name)?.shape())
}

/// An open `(T, H, W)` dataset.
pub(crate) struct Hdf5Frames {
    ds: ::hdf5::Dataset,
}

impl Hdf5Frames {
    pub(crate) fn open(path: &Path, name: &str) -> Result<(Hdf5Frames, Vec<usize>, Dtype)> {
        let file = hdf5_result(path, super::hdf5_fd::open(path))?;
        let ds = open_dataset(path, &file, name)?;
        let shape = ds.shape();
        if shape.len() != 3 {
            return Err(bad_input(
                path,
                format!(
                    "dataset {name:?}: expected a 3-D (T, H, W) stack of frames, found a {}-D array",
                    shape.len()
                ),
            ));
        }
        let td = hdf5_result(path, ds.dtype().and_then(|t| t.to_descriptor()))?;
        let dtype = hdf5_dtype(&td);
        check_header(path, &shape[1..], &dtype)?;
        // Frames are labeled into u32 (`LabelSink`): refused from the header beyond that.
        crate::core::lattice::check_size(shape[1], shape[2])?;
        check_filters(path, name, &ds)?;
        Ok((Hdf5Frames { ds }, shape, dtype))
    }

    pub(crate) fn read(
        &mut self,
        path: &Path,
        t: usize,
        _dim: (usize, usize),
        dtype: &Dtype,
    ) -> Result<Lattice> {
        let ds = &self.ds;
        match dtype {
            Dtype::Bool => Ok(Lattice::from(frame::<bool>(path, ds, t)?)),
            Dtype::U8 => Ok(Lattice::U8(frame(path, ds, t)?)),
            Dtype::U16 => Ok(Lattice::U16(frame(path, ds, t)?)),
            Dtype::U32 => Ok(Lattice::U32(frame(path, ds, t)?)),
            Dtype::U64 => narrow(path, frame::<u64>(path, ds, t)?, dtype),
            Dtype::I8 => narrow(path, frame::<i8>(path, ds, t)?, dtype),
            Dtype::I16 => narrow(path, frame::<i16>(path, ds, t)?, dtype),
            Dtype::I32 => narrow(path, frame::<i32>(path, ds, t)?, dtype),
            Dtype::I64 => narrow(path, frame::<i64>(path, ds, t)?, dtype),
            Dtype::Float(_) | Dtype::Other(_) => Err(unsupported(path, dtype)),
        }
    }
}

/// Frame `t` by hyperslab: only its chunks are read.
fn frame<T: ::hdf5::H5Type>(path: &Path, ds: &::hdf5::Dataset, t: usize) -> Result<Array2<T>> {
    hdf5_result(path, ds.read_slice_2d::<T, _>(s![t, .., ..]))
}

/// Where [`Hdf5Sink::append`] renames its dataset when complete.
struct Rename {
    temp: String,
    target: String,
}

/// Label frames (and per-frame tables) into an HDF5 file.
pub(crate) struct Hdf5Sink {
    file: ::hdf5::File,
    path: PathBuf,
    labels: Option<::hdf5::Dataset>,
    dim: (usize, usize),
    frames: Option<usize>,
    pushed: usize,
    last_count: u64,
    meta: LabelMeta,
    frame_start: usize,
    rename: Option<Rename>,
    tables: Option<Tables>,
}

/// The concatenated cluster tables of the frames: `/clusters/<column>` plus `/clusters/frame`.
struct Tables {
    datasets: Vec<::hdf5::Dataset>,
    frame: ::hdf5::Dataset,
    rows: usize,
}

/// A `u32` label dataset of `frames` frames (`None`: one 2-D image), chunked one frame per
/// chunk (whole rows of at most ~1 GiB for frames above that), compressed as `options` say;
/// `early`: its space allocated now, so that writing it changes no metadata.
fn label_dataset(
    file: &::hdf5::File,
    name: &str,
    frames: Option<usize>,
    (h, w): (usize, usize),
    options: &WriteOptions,
    early: bool,
) -> ::hdf5::Result<::hdf5::Dataset> {
    use ::hdf5::dataset::{AllocTime, FillTime};
    let rows_per_chunk = ((1usize << 30) / (4 * w).max(1)).clamp(1, h.max(1));
    let mut b = match frames {
        Some(t) => {
            let b = file.new_dataset::<u32>().shape((t, h, w));
            if t > 0 && h > 0 && w > 0 {
                b.chunk((1, rows_per_chunk, w))
            } else {
                b
            }
        }
        None => {
            let b = file.new_dataset::<u32>().shape((h, w));
            match options.compression {
                Some(_) if h > 0 && w > 0 => b.chunk((chunk_rows(h, w, 4), w)),
                _ => b,
            }
        }
    };
    match options.compression {
        Some(level) if h > 0 && w > 0 => b = b.shuffle().deflate(level),
        _ if early => {
            b = b
                .alloc_time(Some(AllocTime::Early))
                .fill_time(FillTime::Never)
        }
        _ => {}
    }
    b.create(name)
}

impl Hdf5Sink {
    pub(crate) fn create(
        path: &Path,
        layout: LabelLayout,
        meta: &LabelMeta,
        options: &WriteOptions,
    ) -> Result<Hdf5Sink> {
        let file = hdf5_result(path, super::hdf5_fd::create(path))?;
        let labels = hdf5_result(
            path,
            label_dataset(&file, "labels", layout.frames, layout.dim, options, false),
        )?;
        Ok(Hdf5Sink::new(file, path, Some(labels), layout, meta))
    }

    /// A new file that gets only cluster tables and summary columns, no label image.
    pub(crate) fn create_tables_only(path: &Path, meta: &LabelMeta) -> Result<Hdf5Sink> {
        let file = hdf5_result(path, super::hdf5_fd::create(path))?;
        Ok(Hdf5Sink::new(
            file,
            path,
            None,
            LabelLayout::image((0, 0)),
            meta,
        ))
    }

    fn new(
        file: ::hdf5::File,
        path: &Path,
        labels: Option<::hdf5::Dataset>,
        layout: LabelLayout,
        meta: &LabelMeta,
    ) -> Hdf5Sink {
        Hdf5Sink {
            file,
            path: path.to_owned(),
            labels,
            dim: layout.dim,
            frames: layout.frames,
            pushed: 0,
            last_count: 0,
            meta: *meta,
            frame_start: layout.frame_start,
            rename: None,
            tables: None,
        }
    }

    pub(crate) fn append(
        path: &Path,
        name: &str,
        replace: bool,
        layout: LabelLayout,
        meta: &LabelMeta,
        options: &WriteOptions,
    ) -> Result<Hdf5Sink> {
        let target = format!("/{}", name.trim_start_matches('/'));
        if target == "/" || target.ends_with('/') {
            return Err(Error::InvalidArgument(format!("{name:?} names no dataset")));
        }
        let file = hdf5_result(path, super::hdf5_fd::open_rw(path))?;
        remove_stale(&file);
        if let Some((parent, _)) = target.rsplit_once('/') {
            if !parent.is_empty() && file.group(parent).is_err() {
                return Err(Error::InvalidArgument(format!(
                    "{}: no group {parent:?} to hold {target:?}",
                    path.display()
                )));
            }
        }
        if file.link_exists(&target) && !replace {
            return Err(Error::InvalidArgument(format!(
                "{}: the file already holds {target:?}; replacing it must be asked for \
                 (clusterlab: --force)",
                path.display()
            )));
        }
        let temp = temp_name();
        let labels = hdf5_result(
            path,
            label_dataset(&file, &temp, layout.frames, layout.dim, options, true).and_then(|ds| {
                // The new link on disk before any data: a kill from here on leaves a file whose
                // metadata is whole, with the temporary to be removed by the next run.
                file.flush()?;
                Ok(ds)
            }),
        )?;
        let mut sink = Hdf5Sink::new(file, path, Some(labels), layout, meta);
        sink.rename = Some(Rename { temp, target });
        Ok(sink)
    }

    pub(crate) fn push(&mut self, labels: &Labels) -> Result<()> {
        let a = labels.array();
        let total = self.frames.unwrap_or(1);
        let Some(ds) = &self.labels else {
            return Err(Error::InvalidArgument(format!(
                "{}: this file gets no label image",
                self.path.display()
            )));
        };
        if a.dim() != self.dim || self.pushed >= total {
            return Err(Error::InvalidArgument(format!(
                "{}: labels of shape {:?} do not fit the stack of {:?} frames ({} of {total} written)",
                self.path.display(),
                a.dim(),
                self.dim,
                self.pushed
            )));
        }
        let view = a.view();
        let written = match self.frames {
            Some(_) => ds.write_slice(view, s![self.pushed, .., ..]),
            None => ds.write(view),
        };
        hdf5_result(&self.path, written)?;
        self.pushed += 1;
        self.last_count = labels.count() as u64;
        Ok(())
    }

    /// Appends frame `frame`'s cluster table to `/clusters/<column>` and `/clusters/frame`.
    pub(crate) fn push_table(&mut self, frame: usize, table: &ClusterTable) -> Result<()> {
        let path = self.path.clone();
        hdf5_result(&path, self.push_table_h5(frame, table))
    }

    fn push_table_h5(&mut self, frame: usize, table: &ClusterTable) -> ::hdf5::Result<()> {
        if self.tables.is_none() {
            let g = self.file.create_group("clusters")?;
            let mut datasets = Vec::new();
            for c in columns(table.measures) {
                let Some(data) = c.data(table) else { continue };
                let b = g.new_dataset_builder();
                let ds = match data {
                    ColumnData::U32(_) => b.empty::<u32>(),
                    ColumnData::U64(_) => b.empty::<u64>(),
                    ColumnData::I64(_) => b.empty::<i64>(),
                    ColumnData::F64(_) => b.empty::<f64>(),
                    ColumnData::Flag(_) => b.empty::<u8>(),
                }
                .shape(0..)
                .chunk(1024)
                .chunk_cache(521, 0, 1.0)
                .create(c.name)?;
                datasets.push(ds);
            }
            let frame = g
                .new_dataset::<u64>()
                .shape(0..)
                .chunk(1024)
                .chunk_cache(521, 0, 1.0)
                .create("frame")?;
            self.tables = Some(Tables {
                datasets,
                frame,
                rows: 0,
            });
        }
        let Some(tables) = &mut self.tables else {
            return Ok(());
        };
        let (n0, n) = (tables.rows, table.count());
        let rows = s![n0..n0 + n];
        let mut k = 0;
        for c in columns(table.measures) {
            let Some(data) = c.data(table) else { continue };
            let Some(ds) = tables.datasets.get(k) else {
                break;
            };
            k += 1;
            ds.resize(n0 + n)?;
            match data {
                ColumnData::U32(a) => ds.write_slice(a.view(), rows),
                ColumnData::U64(a) => ds.write_slice(a, rows),
                ColumnData::I64(a) => ds.write_slice(a, rows),
                ColumnData::F64(a) => ds.write_slice(a, rows),
                ColumnData::Flag(a) => ds.write_slice(a.mapv(u8::from).view(), rows),
            }?;
        }
        tables.frame.resize(n0 + n)?;
        let frames = vec![frame as u64; n];
        tables
            .frame
            .write_slice(ArrayView1::from(frames.as_slice()), rows)?;
        tables.rows += n;
        // Written out frame by frame, so that the library holds no more than a frame's worth.
        self.file.flush()
    }

    pub(crate) fn finish(self, columns: &[SummaryColumn]) -> Result<()> {
        let total = self.frames.unwrap_or(1);
        if self.labels.is_some() && self.pushed != total {
            return Err(Error::InvalidArgument(format!(
                "{}: {} of {total} label frames were written",
                self.path.display(),
                self.pushed
            )));
        }
        check_rows(columns)?;
        let path = self.path.clone();
        hdf5_result(&path, self.finish_h5(columns))
    }

    fn finish_h5(self, summary: &[SummaryColumn]) -> ::hdf5::Result<()> {
        if let Some(ds) = &self.labels {
            label_attributes(ds, &self.meta)?;
            match self.frames {
                Some(_) => ds
                    .new_attr::<u64>()
                    .create("frame_start")?
                    .write_scalar(&(self.frame_start as u64))?,
                None => ds
                    .new_attr::<u64>()
                    .create("count")?
                    .write_scalar(&self.last_count)?,
            }
        }
        if let Some(tables) = &self.tables {
            let _ = tables;
            let g = self.file.group("clusters")?;
            label_attributes(&g, &self.meta)?;
        }
        match &self.rename {
            Some(Rename { temp, target }) => {
                // Everything written and flushed under the temporary name first; then the one
                // metadata change that makes it visible under its name.
                self.file.flush()?;
                if self.file.link_exists(target) {
                    self.file.unlink(target)?;
                }
                self.file.relink(temp, target)?;
                self.file.flush()?;
            }
            None => {
                if !summary.is_empty() {
                    let g = self.file.create_group("frames")?;
                    write_columns_group(&g, summary)?;
                }
            }
        }
        drop(self.labels);
        drop(self.tables);
        self.file.close()
    }
}

fn label_attributes(loc: &::hdf5::Location, meta: &LabelMeta) -> ::hdf5::Result<()> {
    let boundary: VarLenUnicode = meta
        .boundary
        .name()
        .parse()
        .map_err(|e| ::hdf5::Error::from(format!("{e}")))?;
    loc.new_attr::<u32>()
        .create("connectivity")?
        .write_scalar(&(meta.connectivity.neighbours() as u32))?;
    loc.new_attr::<VarLenUnicode>()
        .create("boundary")?
        .write_scalar(&boundary)?;
    loc.new_attr::<u8>()
        .create("segments")?
        .write_scalar(&u8::from(meta.segments))?;
    Ok(())
}

/// `.clusterlab-tmp.PID.N`: unique among the runs on this machine.
fn temp_name() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "/{TEMP_PREFIX}{}.{nanos}{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Unlinks the temporary datasets that killed runs left at the root (their process no longer
/// runs: Linux, no `/proc/PID`); those of live runs are left alone. Failures are ignored: a
/// temporary that cannot be removed holds nothing of the file's own data.
fn remove_stale(file: &::hdf5::File) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(names) = file.member_names() else {
        return;
    };
    let mut removed = false;
    for name in names {
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            removed |= file.unlink(&name).is_ok();
        }
    }
    if removed {
        let _ = file.flush();
    }
}

/// One dataset per column in `group`.
pub(crate) fn write_columns_group(
    group: &::hdf5::Group,
    columns: &[SummaryColumn],
) -> ::hdf5::Result<()> {
    for c in columns {
        let b = group.new_dataset_builder();
        let name = c.name.as_str();
        match &c.values {
            SummaryValues::U64(v) => b.with_data(ArrayView1::from(v.as_slice())).create(name),
            SummaryValues::F64(v) => b.with_data(ArrayView1::from(v.as_slice())).create(name),
            SummaryValues::Flag(v) => {
                let v: Vec<u8> = v.iter().map(|&f| u8::from(f)).collect();
                b.with_data(ArrayView1::from(v.as_slice())).create(name)
            }
            SummaryValues::Text(v) => {
                let v = v
                    .iter()
                    .map(|s| s.parse::<VarLenUnicode>())
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| ::hdf5::Error::from(format!("{e}")))?;
                b.with_data(ArrayView1::from(v.as_slice())).create(name)
            }
        }?;
    }
    Ok(())
}

/// A new file holding each group of columns.
pub(crate) fn write_column_groups_file(
    path: &Path,
    groups: &[(&str, &[SummaryColumn])],
) -> Result<()> {
    hdf5_result(
        path,
        (|| {
            let file = super::hdf5_fd::create(path)?;
            for (name, columns) in groups {
                let g = file.create_group(name)?;
                write_columns_group(&g, columns)?;
            }
            file.close()
        })(),
    )
}
