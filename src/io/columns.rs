//! Small tables of named columns — per-frame summaries, `n_s`, the numbers behind a chart —
//! written as CSV or as one HDF5 dataset per column, atomically.

use super::atomic::io_error;
use super::write_atomically;
use crate::{Error, Result};
use std::io::Write as _;
use std::path::Path;

/// The values of one [`SummaryColumn`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SummaryValues {
    /// Counts (HDF5 `u64`).
    U64(Vec<u64>),
    /// Real numbers (HDF5 `f64`); NaN is written as an empty CSV field.
    F64(Vec<f64>),
    /// Flags (HDF5 `u8`, CSV 0/1).
    Flag(Vec<bool>),
    /// Text (HDF5 variable-length UTF-8 strings; CSV as it is, so no commas or line breaks).
    Text(Vec<String>),
}

impl SummaryValues {
    /// The number of rows.
    pub fn len(&self) -> usize {
        match self {
            SummaryValues::U64(v) => v.len(),
            SummaryValues::F64(v) => v.len(),
            SummaryValues::Flag(v) => v.len(),
            SummaryValues::Text(v) => v.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn write_csv(&self, row: usize, out: &mut String) {
        use std::fmt::Write as _;
        match self {
            SummaryValues::U64(v) => {
                let _ = write!(out, "{}", v[row]);
            }
            SummaryValues::F64(v) if v[row].is_nan() => {}
            SummaryValues::F64(v) => {
                let _ = write!(out, "{}", v[row]);
            }
            SummaryValues::Flag(v) => out.push(if v[row] { '1' } else { '0' }),
            SummaryValues::Text(v) => out.push_str(&v[row]),
        }
    }
}

/// A named column of a small table.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryColumn {
    /// The column's name: the CSV header, the HDF5 dataset's name.
    pub name: String,
    /// Its values.
    pub values: SummaryValues,
}

impl SummaryColumn {
    /// A column named `name`.
    pub fn new(name: &str, values: SummaryValues) -> SummaryColumn {
        SummaryColumn {
            name: name.to_owned(),
            values,
        }
    }
}

/// Checks that every column has as many rows as the first.
pub(crate) fn check_rows(columns: &[SummaryColumn]) -> Result<usize> {
    let rows = columns.first().map_or(0, |c| c.values.len());
    if let Some(c) = columns.iter().find(|c| c.values.len() != rows) {
        return Err(Error::InvalidArgument(format!(
            "column {:?} has {} rows, not {rows} as {:?}",
            c.name,
            c.values.len(),
            columns[0].name
        )));
    }
    Ok(rows)
}

/// The columns as CSV text: a header row of the names, then one line per row; NaN as an empty
/// field, flags as 0/1.
///
/// # Errors
/// [`Error::InvalidArgument`] when the columns do not all have the same number of rows.
pub fn columns_to_csv(columns: &[SummaryColumn]) -> Result<String> {
    let rows = check_rows(columns)?;
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let mut s = names.join(",");
    s.push('\n');
    for r in 0..rows {
        for (k, c) in columns.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            c.values.write_csv(r, &mut s);
        }
        s.push('\n');
    }
    Ok(s)
}

/// Writes a table of columns, replacing `path` atomically: `.csv` as [`columns_to_csv`] writes
/// it; `.h5`/`.hdf5` as one dataset per column in the group `group` (created at the root).
///
/// # Errors
/// [`Error::InvalidArgument`] for another extension or columns of unequal lengths;
/// [`Error::Io`] or [`Error::Hdf5`] when writing fails (nothing is left behind then).
pub fn write_columns(path: &Path, group: &str, columns: &[SummaryColumn]) -> Result<()> {
    check_rows(columns)?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("csv") => {
            let text = columns_to_csv(columns)?;
            write_atomically(path, |tmp| {
                let mut f = std::fs::File::create(tmp).map_err(|e| io_error(tmp, e))?;
                f.write_all(text.as_bytes()).map_err(|e| io_error(tmp, e))?;
                f.flush().map_err(|e| io_error(tmp, e))
            })
        }
        #[cfg(feature = "hdf5")]
        Some("h5") | Some("hdf5") => write_atomically(path, |tmp| {
            super::hdf5_frames::write_column_groups_file(tmp, &[(group, columns)])
        }),
        _ => {
            let _ = group;
            Err(Error::InvalidArgument(format!(
                "{}: unsupported extension for a table: use .csv{}",
                path.display(),
                if cfg!(feature = "hdf5") {
                    ", .h5 or .hdf5"
                } else {
                    " (HDF5 needs the `hdf5` feature)"
                }
            )))
        }
    }
}

/// Writes several groups of columns to one new HDF5 file (`.h5`/`.hdf5`), replacing `path`
/// atomically: group `name` holds one dataset per column.
///
/// # Errors
/// [`Error::InvalidArgument`] for another extension or a group whose columns have unequal
/// lengths; [`Error::Io`] or [`Error::Hdf5`] when writing fails (nothing is left behind then).
pub fn write_column_groups(path: &Path, groups: &[(&str, &[SummaryColumn])]) -> Result<()> {
    for (_, columns) in groups {
        check_rows(columns)?;
    }
    match super::Format::from_path(path) {
        #[cfg(feature = "hdf5")]
        Ok(super::Format::Hdf5) => write_atomically(path, |tmp| {
            super::hdf5_frames::write_column_groups_file(tmp, groups)
        }),
        _ => Err(Error::InvalidArgument(format!(
            "{}: groups of columns are written to an HDF5 file (.h5, .hdf5){}",
            path.display(),
            if cfg!(feature = "hdf5") {
                ""
            } else {
                ", which needs the `hdf5` feature"
            }
        ))),
    }
}
