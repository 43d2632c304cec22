//! Writing a [`ClusterTable`]: CSV and HDF5, both atomically.

use super::atomic::io_error;
use super::{write_atomically, Lattice, WriteOptions};
use crate::measure::columns::{columns, CSV_HEADER, CSV_HEADER_SHAPE};
use crate::{ClusterTable, Measures};
use crate::{Error, Labels, Result};
use std::io::Write as _;
use std::path::Path;

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
            let mut f = std::fs::File::create(tmp).map_err(|e| io_error(tmp, e))?;
            f.write_all(text.as_bytes()).map_err(|e| io_error(tmp, e))?;
            f.flush().map_err(|e| io_error(tmp, e))
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
        self.write_hdf5_options(path, labels, lattice, &WriteOptions::default())
    }

    /// As [`ClusterTable::write_hdf5_with`], the label image and the lattice stored as `options`
    /// say (compressed).
    ///
    /// # Errors
    /// As [`ClusterTable::write_hdf5_with`].
    pub fn write_hdf5_options(
        &self,
        path: &Path,
        labels: Option<&Labels>,
        lattice: Option<&Lattice>,
        options: &WriteOptions,
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
            super::hdf5::write_table(tmp, self, labels, lattice, options)
        })
    }
}
