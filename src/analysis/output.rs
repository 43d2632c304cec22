//! Writing a [`ClusterTable`]: CSV and HDF5, both atomically.

use super::{ClusterTable, Measures};
use crate::io::{write_atomically, Lattice};
use crate::{Error, Labels, Result};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// The CSV header of a [`Measures::All`] table.
pub const CSV_HEADER: &str = "label,size,x_min,x_max,y_min,y_max,centroid_x,centroid_y,\
gyration_radius,site_perimeter,bond_perimeter,hull_perimeter,filled_area,wraps_x,wraps_y,\
spans_x,spans_y";

/// The CSV header of a [`Measures::Shape`] table (the perimeter and filled-area columns left out).
pub const CSV_HEADER_SHAPE: &str = "label,size,x_min,x_max,y_min,y_max,centroid_x,centroid_y,\
gyration_radius,wraps_x,wraps_y,spans_x,spans_y";

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
        let b = |v: bool| u8::from(v);
        for r in self.rows() {
            let _ = write!(
                s,
                "{},{},{},{},{},{},{},{},{}",
                r.label,
                r.size,
                r.x_min,
                r.x_max,
                r.y_min,
                r.y_max,
                r.centroid_x,
                r.centroid_y,
                r.gyration_radius
            );
            if full {
                let _ = write!(
                    s,
                    ",{},{},{},{}",
                    r.site_perimeter.unwrap_or(0),
                    r.bond_perimeter.unwrap_or(0),
                    r.hull_perimeter.unwrap_or(0),
                    r.filled_area.unwrap_or(0)
                );
            }
            let _ = writeln!(
                s,
                ",{},{},{},{}",
                b(r.wraps_x),
                b(r.wraps_y),
                b(r.spans_x),
                b(r.spans_y)
            );
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
            let put = |name: &str, data: ndarray::ArrayView1<'_, _>| -> hdf5::Result<()> {
                g.new_dataset_builder().with_data(data).create(name)?;
                Ok(())
            };
            let flags = |a: &ndarray::Array1<bool>| a.mapv(u8::from);
            g.new_dataset_builder()
                .with_data(self.label().view())
                .create("label")?;
            g.new_dataset_builder()
                .with_data(self.size.view())
                .create("size")?;
            for (name, col) in [
                ("x_min", &self.x_min),
                ("x_max", &self.x_max),
                ("y_min", &self.y_min),
                ("y_max", &self.y_max),
            ] {
                g.new_dataset_builder().with_data(col.view()).create(name)?;
            }
            for (name, col) in [
                ("centroid_x", &self.centroid_x),
                ("centroid_y", &self.centroid_y),
                ("gyration_radius", &self.gyration_radius),
            ] {
                g.new_dataset_builder().with_data(col.view()).create(name)?;
            }
            for (name, col) in [
                ("site_perimeter", &self.site_perimeter),
                ("bond_perimeter", &self.bond_perimeter),
                ("hull_perimeter", &self.hull_perimeter),
                ("filled_area", &self.filled_area),
            ] {
                if let Some(col) = col {
                    put(name, col.view())?;
                }
            }
            for (name, col) in [
                ("wraps_x", &self.wraps_x),
                ("wraps_y", &self.wraps_y),
                ("spans_x", &self.spans_x),
                ("spans_y", &self.spans_y),
            ] {
                g.new_dataset_builder()
                    .with_data(flags(col).view())
                    .create(name)?;
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
