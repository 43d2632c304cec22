//! `analyze` and `measure`: cluster tables as dicts of NumPy arrays (one per column, as
//! `skimage.measure.regionprops_table` gives them) and the lattice's statistics.

use crate::input::{self, with_sites};
use crate::{error, options, value_error, DETACH_SITES};
use clusterlab::{Analyzer, ClusterTable, LatticeStats, Measures};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn measures(value: &str) -> PyResult<Measures> {
    match value {
        "all" => Ok(Measures::All),
        "shape" => Ok(Measures::Shape),
        _ => Err(value_error(format!(
            "measures must be \"all\" or \"shape\", not {value:?}"
        ))),
    }
}

/// The table's columns, moved into NumPy arrays without copies.
fn columns<'py>(py: Python<'py>, t: ClusterTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("label", PyArray1::from_owned_array(py, t.label()))?;
    d.set_item("size", PyArray1::from_owned_array(py, t.size))?;
    d.set_item("x_min", PyArray1::from_owned_array(py, t.x_min))?;
    d.set_item("x_max", PyArray1::from_owned_array(py, t.x_max))?;
    d.set_item("y_min", PyArray1::from_owned_array(py, t.y_min))?;
    d.set_item("y_max", PyArray1::from_owned_array(py, t.y_max))?;
    d.set_item("centroid_x", PyArray1::from_owned_array(py, t.centroid_x))?;
    d.set_item("centroid_y", PyArray1::from_owned_array(py, t.centroid_y))?;
    d.set_item(
        "gyration_radius",
        PyArray1::from_owned_array(py, t.gyration_radius),
    )?;
    for (name, column) in [
        ("site_perimeter", t.site_perimeter),
        ("bond_perimeter", t.bond_perimeter),
        ("hull_perimeter", t.hull_perimeter),
        ("filled_area", t.filled_area),
    ] {
        if let Some(c) = column {
            d.set_item(name, PyArray1::from_owned_array(py, c))?;
        }
    }
    d.set_item("wraps_x", PyArray1::from_owned_array(py, t.wraps_x))?;
    d.set_item("wraps_y", PyArray1::from_owned_array(py, t.wraps_y))?;
    d.set_item("spans_x", PyArray1::from_owned_array(py, t.spans_x))?;
    d.set_item("spans_y", PyArray1::from_owned_array(py, t.spans_y))?;
    Ok(d)
}

/// [`LatticeStats`] as a dict.
fn stats<'py>(py: Python<'py>, s: &LatticeStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("sites", s.sites)?;
    d.set_item("occupied", s.occupied)?;
    d.set_item("clusters", s.clusters)?;
    d.set_item("largest", s.largest)?;
    d.set_item("largest_label", s.largest_label)?;
    d.set_item("percolating", s.percolating)?;
    d.set_item("mean_size", s.mean_size)?;
    d.set_item("p_infinity", s.p_infinity)?;
    d.set_item("wraps_x", s.wraps_x)?;
    d.set_item("wraps_y", s.wraps_y)?;
    d.set_item("wraps_both", s.wraps_both)?;
    d.set_item("wraps_either", s.wraps_either)?;
    d.set_item("spans_x", s.spans_x)?;
    d.set_item("spans_y", s.spans_y)?;
    Ok(d)
}

/// `(columns, stats, n_s)`: `n_s` as `(sizes, n_s)` arrays without the percolating clusters.
type Table<'py> = (
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    (Bound<'py, PyAny>, Bound<'py, PyAny>),
);

fn table<'py>(py: Python<'py>, t: ClusterTable) -> PyResult<Table<'py>> {
    let s = stats(py, &t.stats())?;
    let (sizes, ns): (Vec<u64>, Vec<f64>) = t.size_distribution(true).into_iter().unzip();
    let ns = (
        PyArray1::from_vec(py, sizes).into_any(),
        PyArray1::from_vec(py, ns).into_any(),
    );
    Ok((columns(py, t)?, s, ns))
}

/// `clusterlab.analyze` (the Python wrapper documents it and builds the `ClusterTable`).
#[pyfunction]
#[pyo3(signature = (input, connectivity=4, boundary="open", segments=false, measures="all", backend="auto", threads=None, return_labels=false))]
#[allow(clippy::too_many_arguments)]
fn analyze<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    connectivity: i64,
    boundary: &str,
    segments: bool,
    measures: &str,
    backend: &str,
    threads: Option<usize>,
    return_labels: bool,
) -> PyResult<(Table<'py>, Option<Bound<'py, PyAny>>)> {
    let mut analyzer = Analyzer::new(
        options::connectivity(connectivity)?,
        options::boundary(boundary)?,
    )
    .segments(segments)
    .measures(self::measures(measures)?)
    .parallelism(options::threads(threads)?)
    .backend(options::backend(backend)?)
    .map_err(error)?;
    let lattice = input::lattice(input, segments, "input")?;
    let sites = lattice.sites();
    let (h, w) = sites.dim();
    let mut work = || {
        with_sites!(sites, v => if return_labels {
            analyzer.analyze_labeled(v).map(|(t, l)| (t, Some(l)))
        } else {
            analyzer.analyze(v).map(|t| (t, None))
        })
    };
    let (t, labels) = if h * w >= DETACH_SITES {
        py.detach(work)
    } else {
        work()
    }
    .map_err(error)?;
    let labels = labels.map(|l| PyArray2::from_owned_array(py, l.into_array()).into_any());
    Ok((table(py, t)?, labels))
}

/// `clusterlab.measure`: the table of labels made elsewhere.
#[pyfunction]
#[pyo3(signature = (labels, connectivity=4, boundary="open", threads=None))]
fn measure<'py>(
    py: Python<'py>,
    labels: &Bound<'py, PyAny>,
    connectivity: i64,
    boundary: &str,
    threads: Option<usize>,
) -> PyResult<Table<'py>> {
    let mut analyzer = Analyzer::new(
        options::connectivity(connectivity)?,
        options::boundary(boundary)?,
    )
    .parallelism(options::threads(threads)?);
    let numpy = py.import("numpy")?;
    // Labels of any integer dtype, as u32 (a copy only when they are not u32 already).
    let array = input::as_array(labels)?;
    let kind = numpy::PyUntypedArrayMethods::dtype(&array);
    if !matches!(numpy::PyArrayDescrMethods::kind(&kind), b'u' | b'i' | b'b') {
        return Err(value_error("labels must be an integer array"));
    }
    let as_u32 = numpy
        .call_method1("asarray", (&array, "uint32"))?
        .cast_into::<numpy::PyArray2<u32>>()
        .map_err(|_| value_error("labels must be 2-D"))?;
    let ro = as_u32.readonly();
    let view = ro.as_array();
    let t = if view.len() >= DETACH_SITES {
        py.detach(|| analyzer.measure(view))
    } else {
        analyzer.measure(view)
    }
    .map_err(error)?;
    table(py, t)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(measure, m)?)?;
    Ok(())
}
