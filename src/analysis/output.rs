//! Writing a [`ClusterTable`]: CSV and HDF5, both atomically.

use super::columns::{columns, ColumnData, CSV_HEADER, CSV_HEADER_SHAPE};
use super::{ClusterTable, Measures};
use crate::io::{write_atomically, Lattice};
use crate::{Error, Labels, Result};
use std::io::Write as _;
use std::path::Path;

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_owned(),
        source,
    }
}

fn hdf5_err(path: &Path, e: hdf5::Error) -> Error {
    Error::Hdf5 {
        path: path.to_owned(),
        message: e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

impl ClusterTable {
    /// The table as CSV text: a header row ([`CSV_HEADER`], or [`CSV_HEADER_SHAPE`] for a
    /// [`Measures::Shape`] table), then row `i` = cluster `i`; flags as 0/1; floating-point
    /// values in the shortest form that reads back to the same `f64`.
    pub fn to_csv(&self) -> String {
        let full = self.measures == Measures::All;
        let mut s = String::with_capacity(64 * (self.count() + 1));
        s.push_str(if full { CSV_HEADER } else { CSV_HEADER_SHAPE });
        s.push('\n');
        let cols: Vec<_> = columns(self.measures).collect();
        for r in self.rows() {
            for (k, c) in cols.iter().enumerate() {
                if k > 0 {
                    s.push(',');
                }
                c.value(&r).write_csv(&mut s);
            }
            s.push('\n');
        }
        s
    }

    /// Writes the table as CSV (see [`ClusterTable::to_csv`]), replacing `path` atomically
    /// (through [`write_atomically`]).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written; nothing is left behind then.
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        let text = self.to_csv();
        write_atomically(path, |tmp| {
            let mut f = std::fs::File::create(tmp).map_err(|e| io_err(tmp, e))?;
            f.write_all(text.as_bytes()).map_err(|e| io_err(tmp, e))?;
            f.flush().map_err(|e| io_err(tmp, e))
        })
    }

    /// Writes the table to an HDF5 file, replacing `path` atomically: one dataset per column
    /// under `/clusters` (`label` `u32`; `size`, perimeters and `filled_area` `u64`; bounding
    /// box `i64`; centroid and gyration radius `f64`; flags `u8` 0/1), and on the `/clusters`
    /// group the attributes `shape` (`u64` × 2: height, width), `connectivity` (`u32`: 4 or 8),
    /// `boundary` (string), `count` (`u64`) and `segments` (`u8`).
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Hdf5`] when writing fails; nothing is left behind then.
    pub fn write_hdf5(&self, path: &Path) -> Result<()> {
        self.write_hdf5_with(path, None, None)
    }

    /// As [`ClusterTable::write_hdf5`], adding the label image as `/labels` (`u32`, with the
    /// attributes `connectivity`, `boundary`, `count` and `segments`, as
    /// [`io::write_labels`](crate::io::write_labels) writes them) and the lattice as `/lattice`
    /// when given.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the labels or the lattice do not have the table's shape,
    /// [`Error::Io`] or [`Error::Hdf5`] when writing fails; nothing is left behind then.
    pub fn write_hdf5_with(
        &self,
        path: &Path,
        labels: Option<&Labels>,
        lattice: Option<&Lattice>,
    ) -> Result<()> {
        if let Some(l) = labels {
            if l.array().dim() != self.shape {
                return Err(Error::InvalidArgument(format!(
                    "labels of shape {:?} do not match the table's lattice shape {:?}",
                    l.array().dim(),
                    self.shape
                )));
            }
        }
        if let Some(l) = lattice {
            if l.dim() != self.shape {
                return Err(Error::InvalidArgument(format!(
                    "lattice of shape {:?} does not match the table's shape {:?}",
                    l.dim(),
                    self.shape
                )));
            }
        }
        write_atomically(path, |tmp| {
            self.hdf5_body(tmp, labels, lattice)
                .map_err(|e| hdf5_err(tmp, e))
        })
    }

    fn hdf5_body(
        &self,
        path: &Path,
        labels: Option<&Labels>,
        lattice: Option<&Lattice>,
    ) -> hdf5::Result<()> {
        use hdf5::types::VarLenUnicode;
        let file = hdf5::File::create(path)?;
        let boundary: VarLenUnicode = self
            .boundary
            .name()
            .parse()
            .map_err(|e| hdf5::Error::from(format!("{e}")))?;
        let connectivity = self.connectivity.neighbours() as u32;
        let count = self.count() as u64;
        let segments = u8::from(self.segments);
        let attrs = |loc: &hdf5::Location| -> hdf5::Result<()> {
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
            let shape = [self.shape.0 as u64, self.shape.1 as u64];
            g.new_attr_builder().with_data(&shape[..]).create("shape")?;
            attrs(&g)?;
            // One dataset per column of the registry, in its order.
            for c in columns(self.measures) {
                let Some(data) = c.data(self) else { continue };
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
            let ds = file
                .new_dataset_builder()
                .with_data(labels.array().view())
                .create("labels")?;
            attrs(&ds)?;
        }
        if let Some(lattice) = lattice {
            match lattice {
                Lattice::U8(a) => file
                    .new_dataset_builder()
                    .with_data(a.view())
                    .create("lattice"),
                Lattice::U16(a) => file
                    .new_dataset_builder()
                    .with_data(a.view())
                    .create("lattice"),
                Lattice::U32(a) => file
                    .new_dataset_builder()
                    .with_data(a.view())
                    .create("lattice"),
            }?;
        }
        file.close()
    }
}
