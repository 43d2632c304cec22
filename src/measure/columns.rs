//! The column registry of a [`ClusterTable`]: one list, [`COLUMNS`], from which the CSV headers,
//! the CSV rows and the HDF5 datasets are all generated, so that a column is named, typed and
//! ordered in one place (after scikit-image's `regionprops` property table).

use super::table::{ClusterRow, ClusterTable};
use super::Measures;
use ndarray::{Array1, ArrayView1};

/// How a column is stored: its type in HDF5 (and in [`ClusterTable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnType {
    /// `u32` (the label).
    U32,
    /// `u64` (counts of sites).
    U64,
    /// `i64` (coordinates, unwrapped along periodic axes).
    I64,
    /// `f64`.
    F64,
    /// A flag: `bool` in the table, `u8` 0/1 in HDF5, `0`/`1` in CSV.
    Flag,
}

/// One column of a [`ClusterTable`] as it is written out.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Column {
    /// The name of the CSV column and of the HDF5 dataset under `/clusters`.
    pub name: &'static str,
    /// What it holds.
    pub description: &'static str,
    /// The unit: `sites`, `lattice spacings`, or empty for labels and flags.
    pub unit: &'static str,
    /// How it is stored.
    pub dtype: ColumnType,
    /// The least [`Measures`] that computes it: [`Measures::Shape`] (every table) or
    /// [`Measures::All`] (the perimeters and the filled area).
    pub measures: Measures,
    row: fn(&ClusterRow) -> Value,
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    // only the HDF5 writer reads whole columns
    table: fn(&ClusterTable) -> Option<ColumnData<'_>>,
}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Column")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .field("dtype", &self.dtype)
            .field("measures", &self.measures)
            .finish_non_exhaustive()
    }
}

impl Column {
    /// Whether a table computed with `measures` has this column.
    pub const fn in_table(&self, measures: Measures) -> bool {
        matches!(measures, Measures::All) || matches!(self.measures, Measures::Shape)
    }

    /// The column's value in `row`.
    pub(crate) fn value(&self, row: &ClusterRow) -> Value {
        (self.row)(row)
    }

    /// The column of `table`, or `None` when the table does not have it.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn data<'a>(&self, table: &'a ClusterTable) -> Option<ColumnData<'a>> {
        (self.table)(table)
    }
}

/// One cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    U32(u32),
    U64(u64),
    I64(i64),
    F64(f64),
    Flag(bool),
}

impl Value {
    /// Appends the cell as CSV: integers in decimal, `f64` in the shortest form that reads back
    /// to the same value, flags as 0/1.
    pub(crate) fn write_csv(self, s: &mut String) {
        use std::fmt::Write as _;
        let _ = match self {
            Value::U32(v) => write!(s, "{v}"),
            Value::U64(v) => write!(s, "{v}"),
            Value::I64(v) => write!(s, "{v}"),
            Value::F64(v) => write!(s, "{v}"),
            Value::Flag(v) => write!(s, "{}", u8::from(v)),
        };
    }
}

/// A whole column, as HDF5 writes it.
#[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
pub(crate) enum ColumnData<'a> {
    U32(Array1<u32>),
    U64(ArrayView1<'a, u64>),
    I64(ArrayView1<'a, i64>),
    F64(ArrayView1<'a, f64>),
    Flag(ArrayView1<'a, bool>),
}

/// A column descriptor (keeps the list below one line per field).
macro_rules! column {
    ($name:ident, $dtype:ident, $measures:ident, $unit:literal, $description:literal,
     row: $row:expr, table: $table:expr) => {
        Column {
            name: stringify!($name),
            description: $description,
            unit: $unit,
            dtype: ColumnType::$dtype,
            measures: Measures::$measures,
            row: $row,
            table: $table,
        }
    };
}

/// The columns of a [`ClusterTable`] in output order (CSV columns, HDF5 datasets). A
/// [`Measures::Shape`] table has the columns whose [`Column::measures`] is `Shape`.
///
/// ```
/// use clusterlab::analysis::{COLUMNS, CSV_HEADER};
///
/// let names: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
/// assert_eq!(names.join(","), CSV_HEADER);
/// ```
pub const COLUMNS: &[Column] = &[
    column!(label, U32, Shape, "", "The cluster's label, 1..=count in raster order of first sites",
        row: |r| Value::U32(r.label), table: |t| Some(ColumnData::U32(t.label()))),
    column!(size, U64, Shape, "sites", "Number of sites",
        row: |r| Value::U64(r.size), table: |t| Some(ColumnData::U64(t.size.view()))),
    column!(x_min, I64, Shape, "lattice spacings", "Smallest x (column), unwrapped",
        row: |r| Value::I64(r.x_min), table: |t| Some(ColumnData::I64(t.x_min.view()))),
    column!(x_max, I64, Shape, "lattice spacings", "Largest x, unwrapped",
        row: |r| Value::I64(r.x_max), table: |t| Some(ColumnData::I64(t.x_max.view()))),
    column!(y_min, I64, Shape, "lattice spacings", "Smallest y (row), unwrapped",
        row: |r| Value::I64(r.y_min), table: |t| Some(ColumnData::I64(t.y_min.view()))),
    column!(y_max, I64, Shape, "lattice spacings", "Largest y, unwrapped",
        row: |r| Value::I64(r.y_max), table: |t| Some(ColumnData::I64(t.y_max.view()))),
    column!(centroid_x, F64, Shape, "lattice spacings", "Mean x of the sites",
        row: |r| Value::F64(r.centroid_x), table: |t| Some(ColumnData::F64(t.centroid_x.view()))),
    column!(centroid_y, F64, Shape, "lattice spacings", "Mean y of the sites",
        row: |r| Value::F64(r.centroid_y), table: |t| Some(ColumnData::F64(t.centroid_y.view()))),
    column!(gyration_radius, F64, Shape, "lattice spacings",
        "Radius of gyration: root mean squared distance of the sites from the centroid",
        row: |r| Value::F64(r.gyration_radius),
        table: |t| Some(ColumnData::F64(t.gyration_radius.view()))),
    column!(site_perimeter, U64, All, "sites",
        "Distinct sites outside the cluster that neighbour it",
        row: |r| Value::U64(r.site_perimeter.unwrap_or(0)),
        table: |t| t.site_perimeter.as_ref().map(|a| ColumnData::U64(a.view()))),
    column!(bond_perimeter, U64, All, "bonds",
        "(cluster site, outside neighbour) pairs, per direction",
        row: |r| Value::U64(r.bond_perimeter.unwrap_or(0)),
        table: |t| t.bond_perimeter.as_ref().map(|a| ColumnData::U64(a.view()))),
    column!(hull_perimeter, U64, All, "sites", "Perimeter sites on the cluster's outside",
        row: |r| Value::U64(r.hull_perimeter.unwrap_or(0)),
        table: |t| t.hull_perimeter.as_ref().map(|a| ColumnData::U64(a.view()))),
    column!(filled_area, U64, All, "sites", "The cluster plus everything it encloses",
        row: |r| Value::U64(r.filled_area.unwrap_or(0)),
        table: |t| t.filled_area.as_ref().map(|a| ColumnData::U64(a.view()))),
    column!(wraps_x, Flag, Shape, "", "Wraps around a periodic x axis (by winding)",
        row: |r| Value::Flag(r.wraps_x), table: |t| Some(ColumnData::Flag(t.wraps_x.view()))),
    column!(wraps_y, Flag, Shape, "", "Wraps around a periodic y axis (by winding)",
        row: |r| Value::Flag(r.wraps_y), table: |t| Some(ColumnData::Flag(t.wraps_y.view()))),
    column!(spans_x, Flag, Shape, "", "Touches the first and last column of an open x axis",
        row: |r| Value::Flag(r.spans_x), table: |t| Some(ColumnData::Flag(t.spans_x.view()))),
    column!(spans_y, Flag, Shape, "", "Touches the first and last row of an open y axis",
        row: |r| Value::Flag(r.spans_y), table: |t| Some(ColumnData::Flag(t.spans_y.view()))),
];

/// The columns of a table computed with `measures`, in output order.
pub fn columns(measures: Measures) -> impl Iterator<Item = &'static Column> {
    COLUMNS.iter().filter(move |c| c.in_table(measures))
}

/// The length of the CSV header of a table computed with `measures`.
const fn header_len(measures: Measures) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < COLUMNS.len() {
        if COLUMNS[i].in_table(measures) {
            n += COLUMNS[i].name.len() + 1;
        }
        i += 1;
    }
    n - 1
}

/// The CSV header of a table computed with `measures`, as bytes, at compile time.
const fn header<const N: usize>(measures: Measures) -> [u8; N] {
    let mut out = [0u8; N];
    let (mut i, mut k) = (0, 0);
    while i < COLUMNS.len() {
        if COLUMNS[i].in_table(measures) {
            if k > 0 {
                out[k] = b',';
                k += 1;
            }
            let name = COLUMNS[i].name.as_bytes();
            let mut j = 0;
            while j < name.len() {
                out[k] = name[j];
                k += 1;
                j += 1;
            }
        }
        i += 1;
    }
    assert!(k == N);
    out
}

/// `bytes` as text (column names are ASCII identifiers).
const fn as_str(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("column names are ASCII"),
    }
}

const HEADER_ALL: [u8; header_len(Measures::All)] = header(Measures::All);
const HEADER_SHAPE: [u8; header_len(Measures::Shape)] = header(Measures::Shape);

/// The CSV header of a [`Measures::All`] table: the names of [`COLUMNS`], comma-separated.
pub const CSV_HEADER: &str = as_str(&HEADER_ALL);

/// The CSV header of a [`Measures::Shape`] table (the perimeter and filled-area columns left out).
pub const CSV_HEADER_SHAPE: &str = as_str(&HEADER_SHAPE);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_the_published_ones() {
        // The output contract: these strings must never change by accident.
        assert_eq!(
            CSV_HEADER,
            "label,size,x_min,x_max,y_min,y_max,centroid_x,centroid_y,gyration_radius,\
             site_perimeter,bond_perimeter,hull_perimeter,filled_area,wraps_x,wraps_y,\
             spans_x,spans_y"
        );
        assert_eq!(
            CSV_HEADER_SHAPE,
            "label,size,x_min,x_max,y_min,y_max,centroid_x,centroid_y,gyration_radius,\
             wraps_x,wraps_y,spans_x,spans_y"
        );
        let names: Vec<_> = columns(Measures::Shape).map(|c| c.name).collect();
        assert_eq!(names.join(","), CSV_HEADER_SHAPE);
    }

    #[test]
    fn values_and_data_have_the_declared_type() {
        let t = ClusterTable::empty(
            (2, 2),
            crate::Connectivity::Four,
            crate::Boundary::Open,
            false,
            Measures::All,
        );
        let row = ClusterRow {
            label: 1,
            size: 2,
            x_min: -1,
            x_max: 0,
            y_min: 0,
            y_max: 0,
            centroid_x: -0.5,
            centroid_y: 0.0,
            gyration_radius: 0.5,
            site_perimeter: Some(6),
            bond_perimeter: Some(6),
            hull_perimeter: Some(6),
            filled_area: Some(2),
            wraps_x: false,
            wraps_y: false,
            spans_x: true,
            spans_y: false,
        };
        for c in COLUMNS {
            let ok = matches!(
                (c.dtype, c.value(&row), c.data(&t)),
                (ColumnType::U32, Value::U32(_), Some(ColumnData::U32(_)))
                    | (ColumnType::U64, Value::U64(_), Some(ColumnData::U64(_)))
                    | (ColumnType::I64, Value::I64(_), Some(ColumnData::I64(_)))
                    | (ColumnType::F64, Value::F64(_), Some(ColumnData::F64(_)))
                    | (ColumnType::Flag, Value::Flag(_), Some(ColumnData::Flag(_)))
            );
            assert!(ok, "{}", c.name);
            assert!(!c.description.is_empty());
        }
    }
}
