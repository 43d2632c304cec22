//! Seeded regions, PNG plots, percolation studies and cluster Monte Carlo chains.

use crate::input::{self, with_sites};
use crate::{error, options, value_error};
use clusterlab::mc::{self, Chain, MemorySink, Update};
use clusterlab::percolation::{Method, Model, Study, StudyConfig, Wrapping};
use clusterlab::plot::{self, Background, LabelImageOptions, SizePlotOptions};
use clusterlab::regions::{Criterion, Reference, RegionGrower};
use clusterlab::{Options, SizeDistribution};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `clusterlab.region_from_seeds`: the region grown from `seeds` in a `uint8` or `float32`
/// field (`H × W` or `H × W × C`), as a `uint8` mask.
#[pyfunction]
#[pyo3(signature = (field, seeds, tolerance, connectivity=4, boundary="open", absorb=false, reference=None, backend="auto"))]
#[allow(clippy::too_many_arguments)]
fn region_from_seeds<'py>(
    py: Python<'py>,
    field: &Bound<'py, PyAny>,
    seeds: Vec<(usize, usize)>,
    tolerance: Vec<f32>,
    connectivity: i64,
    boundary: &str,
    absorb: bool,
    reference: Option<Vec<f32>>,
    backend: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let mut criterion = if tolerance.len() == 1 {
        Criterion::new(tolerance[0])
    } else {
        Criterion::per_channel(tolerance)
    }
    .connectivity(options::connectivity(connectivity)?)
    .boundary(options::boundary(boundary)?)
    .absorb(absorb);
    if let Some(r) = reference {
        criterion = criterion.reference(Reference::Value(r));
    }
    let mut grower = RegionGrower::new(criterion)
        .backend(options::backend(backend)?)
        .map_err(error)?;
    let numpy = py.import("numpy")?;
    let array = input::as_array(field)?;
    let dtype = array.dtype().str()?.to_string();
    let target = if dtype.ends_with("u1") {
        "uint8"
    } else {
        "float32"
    };
    let field = numpy.call_method1("ascontiguousarray", (&array, target))?;
    let mask = match (target, array.ndim()) {
        ("uint8", 2) => grow2::<u8>(py, &field, &mut grower, &seeds),
        ("uint8", 3) => grow3::<u8>(py, &field, &mut grower, &seeds),
        (_, 2) => grow2::<f32>(py, &field, &mut grower, &seeds),
        (_, 3) => grow3::<f32>(py, &field, &mut grower, &seeds),
        (_, n) => Err(value_error(format!(
            "the field must be H × W or H × W × C, got {n} dimensions"
        ))),
    }?;
    Ok(PyArray2::from_owned_array(py, mask).into_any())
}

fn grow2<T: numpy::Element + clusterlab::regions::Sample>(
    py: Python<'_>,
    field: &Bound<'_, PyAny>,
    grower: &mut RegionGrower,
    seeds: &[(usize, usize)],
) -> PyResult<ndarray::Array2<u8>> {
    let a = field.cast::<numpy::PyArray2<T>>()?.readonly();
    let v = a.as_array();
    py.detach(|| grower.grow(v, seeds)).map_err(error)
}

fn grow3<T: numpy::Element + clusterlab::regions::Sample>(
    py: Python<'_>,
    field: &Bound<'_, PyAny>,
    grower: &mut RegionGrower,
    seeds: &[(usize, usize)],
) -> PyResult<ndarray::Array2<u8>> {
    let a = field.cast::<numpy::PyArray3<T>>()?.readonly();
    let v = a.as_array();
    py.detach(|| grower.grow(v, seeds)).map_err(error)
}

/// Runs `draw` on a temporary PNG path and returns the file's bytes, or draws into `path`.
fn png_or_file<'py>(
    py: Python<'py>,
    path: Option<PathBuf>,
    draw: impl FnOnce(&Path) -> clusterlab::Result<()> + Send,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    match path {
        Some(p) => {
            py.detach(|| draw(&p)).map_err(error)?;
            Ok(None)
        }
        None => {
            let dir = std::env::temp_dir().join(format!(
                "clusterlab-py-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::create_dir_all(&dir)
                .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
            let file = dir.join("plot.png");
            let result = py.detach(|| draw(&file)).map_err(error);
            let bytes = result.and_then(|()| {
                std::fs::read(&file)
                    .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
            });
            let _ = std::fs::remove_dir_all(&dir);
            Ok(Some(PyBytes::new(py, &bytes?)))
        }
    }
}

/// `clusterlab.plot_labels`: a label image as PNG bytes, or into `path`.
#[pyfunction]
#[pyo3(signature = (labels, path=None, background="black", max_side=Some(2048), scale=1))]
fn plot_labels<'py>(
    py: Python<'py>,
    labels: &Bound<'py, PyAny>,
    path: Option<PathBuf>,
    background: &str,
    max_side: Option<u32>,
    scale: u32,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let background = match background {
        "black" => Background::Black,
        "white" => Background::White,
        _ => return Err(value_error("background must be \"black\" or \"white\"")),
    };
    let numpy = py.import("numpy")?;
    let labels = numpy
        .call_method1("asarray", (labels, "uint32"))?
        .cast_into::<numpy::PyArray2<u32>>()
        .map_err(|_| value_error("labels must be 2-D"))?;
    let ro = labels.readonly();
    let view = ro.as_array();
    let mut options = LabelImageOptions::default();
    options.background = background;
    options.max_side = max_side;
    options.scale = scale;
    png_or_file(py, path, move |p| {
        plot::plot_labels(p, view, &options).map(|_| ())
    })
}

/// `clusterlab.plot_size_distribution`: `n_s` of lattices (or of label arrays' sizes) on
/// log–log axes, as PNG bytes or into `path`.
#[pyfunction]
#[pyo3(signature = (lattices, path=None, connectivity=4, boundary="open", exclude_percolating=true, title="Cluster-size distribution", width=800, height=600, bins_per_decade=5, guide=Some(plot::TAU_2D)))]
#[allow(clippy::too_many_arguments)]
fn plot_size_distribution<'py>(
    py: Python<'py>,
    lattices: &Bound<'py, PyAny>,
    path: Option<PathBuf>,
    connectivity: i64,
    boundary: &str,
    exclude_percolating: bool,
    title: &str,
    width: u32,
    height: u32,
    bins_per_decade: u32,
    guide: Option<f64>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mut analyzer = clusterlab::Analyzer::new(
        options::connectivity(connectivity)?,
        options::boundary(boundary)?,
    )
    .measures(clusterlab::Measures::Shape);
    let mut distribution = SizeDistribution::new();
    let list: Vec<Bound<'py, PyAny>> = if input::as_array(lattices).is_ok_and(|a| a.ndim() == 2) {
        vec![lattices.clone()]
    } else {
        lattices.try_iter()?.collect::<PyResult<_>>()?
    };
    for item in &list {
        let lattice = input::lattice(item, false, "each lattice")?;
        let sites = lattice.sites();
        let table = py
            .detach(|| with_sites!(sites, v => analyzer.analyze(v)))
            .map_err(error)?;
        distribution.add_table(&table, exclude_percolating);
    }
    let mut options = SizePlotOptions::default();
    options.width = width;
    options.height = height;
    options.title = title.to_string();
    options.bins_per_decade = bins_per_decade;
    options.guide = guide;
    png_or_file(py, path, move |p| {
        plot::plot_size_distribution(p, &distribution, &options)
    })
}

fn estimate(py: Python<'_>, e: clusterlab::percolation::Estimate) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("value", e.value)?;
    d.set_item("stderr", e.stderr)?;
    d.set_item("samples", e.samples)?;
    Ok(d)
}

fn series<'py>(
    py: Python<'py>,
    v: &[clusterlab::percolation::Estimate],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("value", PyArray1::from_iter(py, v.iter().map(|e| e.value)))?;
    d.set_item(
        "stderr",
        PyArray1::from_iter(py, v.iter().map(|e| e.stderr)),
    )?;
    Ok(d)
}

/// `clusterlab.percolation_study`: runs a study in memory and returns its estimates.
#[pyfunction]
#[pyo3(signature = (sizes, samples, model="site", connectivity=4, boundary="periodic", seed=1, method="newman-ziff", p=None, backend="auto", threads=None))]
#[allow(clippy::too_many_arguments)]
fn percolation_study<'py>(
    py: Python<'py>,
    sizes: Vec<usize>,
    samples: u64,
    model: &str,
    connectivity: i64,
    boundary: &str,
    seed: u64,
    method: &str,
    p: Option<Vec<f64>>,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let model = Model::from_parts(model, options::connectivity(connectivity)?).map_err(error)?;
    let method: Method = method.parse().map_err(error)?;
    let config = StudyConfig {
        model,
        boundary: options::boundary(boundary)?,
        sizes: sizes.iter().map(|&l| (l, l)).collect(),
        samples,
        seed,
        p_grid: p.unwrap_or_else(|| StudyConfig::default_grid(model)),
        command: "clusterlab (Python)".into(),
        method,
    };
    let mut study = Study::new(config).map_err(error)?;
    let opts = Options::default()
        .backend(options::backend(backend)?)
        .parallelism(options::threads(threads)?);
    let results = py
        .detach(|| {
            study.run(&opts, Duration::from_secs(3600), |_, _| Ok(()))?;
            study.results()
        })
        .map_err(error)?;
    let d = PyDict::new(py);
    d.set_item("reference_pc", results.reference_pc)?;
    d.set_item("samples", results.samples)?;
    d.set_item("backend", &study.backend)?;
    match &results.p_c {
        Some(fit) => {
            d.set_item("p_c", estimate(py, fit.intercept)?)?;
            d.set_item("chi2", fit.chi2)?;
            d.set_item("dof", fit.dof)?;
        }
        None => d.set_item("p_c", py.None())?,
    }
    let per_size = PyList::empty(py);
    for s in &results.sizes {
        let e = PyDict::new(py);
        e.set_item("width", s.width)?;
        e.set_item("height", s.height)?;
        e.set_item("samples", s.samples)?;
        e.set_item("p", PyArray1::from_slice(py, &s.curves.p))?;
        for (k, kind) in Wrapping::ALL.iter().enumerate() {
            e.set_item(kind.name(), series(py, &s.curves.wrapping[k])?)?;
            e.set_item(format!("{}_at_pc", kind.name()), estimate(py, s.at_pc[k])?)?;
        }
        e.set_item("p_infinity", series(py, &s.curves.p_infinity)?)?;
        e.set_item("largest", series(py, &s.curves.largest)?)?;
        e.set_item("mean_size", series(py, &s.curves.mean_size)?)?;
        match &s.crossing {
            Some(c) => e.set_item("crossing", estimate(py, c.p)?)?,
            None => e.set_item("crossing", py.None())?,
        }
        match &s.tau {
            Some(t) => e.set_item("tau", estimate(py, t.tau)?)?,
            None => e.set_item("tau", py.None())?,
        }
        per_size.append(e)?;
    }
    d.set_item("sizes", per_size)?;
    Ok(d)
}

/// `clusterlab.MonteCarlo`: an Ising or Potts chain (Swendsen–Wang, Wolff or Metropolis).
#[pyclass(module = "clusterlab._clusterlab", name = "MonteCarlo", subclass)]
struct PyChain {
    chain: std::sync::Mutex<Chain>,
}

#[pymethods]
impl PyChain {
    #[new]
    #[pyo3(signature = (size, temperature, model="ising", q=2, algorithm="sw", seed=1, boundary="periodic", backend="auto", threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        size: (usize, usize),
        temperature: f64,
        model: &str,
        q: u8,
        algorithm: &str,
        seed: u64,
        boundary: &str,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        let (h, w) = size;
        let m = match model {
            "ising" => mc::Model::ising(h, w, temperature),
            "potts" => mc::Model::potts(q, h, w, temperature),
            _ => return Err(value_error("model must be \"ising\" or \"potts\"")),
        }
        .and_then(|m| m.with_boundary(options::boundary(boundary).unwrap_or_default()))
        .map_err(error)?;
        options::boundary(boundary)?;
        let update: Update = algorithm.parse().map_err(error)?;
        let opts = Options::default()
            .backend(options::backend(backend)?)
            .parallelism(options::threads(threads)?);
        let chain = Chain::new(m, update, seed, 0, opts).map_err(error)?;
        Ok(PyChain {
            chain: std::sync::Mutex::new(chain),
        })
    }

    /// Runs `sweeps` sweeps, measuring every `every`-th; returns the samples as arrays.
    #[pyo3(signature = (sweeps, every=1))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        sweeps: u64,
        every: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let chain = self.chain.get_mut().unwrap_or_else(|p| p.into_inner());
        let mut sink = MemorySink::default();
        py.detach(|| chain.run(sweeps, every.max(1), &mut sink))
            .map_err(error)?;
        let samples = sink.values();
        let d = PyDict::new(py);
        let col = |f: fn(&mc::Sample) -> f64| PyArray1::from_iter(py, samples.iter().map(f));
        d.set_item("energy", col(|s| s.energy))?;
        d.set_item("m", col(|s| s.m))?;
        d.set_item("abs_m", col(|s| s.abs_m))?;
        d.set_item("m2", col(|s| s.m2))?;
        d.set_item("m4", col(|s| s.m4))?;
        let model = *chain.model();
        let s = mc::summarize(&samples, model.beta(), model.sites());
        let summary = PyDict::new(py);
        for (name, e) in [
            ("energy", s.energy),
            ("abs_magnetization", s.abs_magnetization),
            ("m2", s.m2),
            ("specific_heat", s.specific_heat),
            ("susceptibility", s.susceptibility),
            ("binder", s.binder),
        ] {
            let x = PyDict::new(py);
            x.set_item("mean", e.mean)?;
            x.set_item("stderr", e.stderr)?;
            x.set_item("tau_int", e.tau_int)?;
            summary.set_item(name, x)?;
        }
        d.set_item("summary", summary)?;
        Ok(d)
    }

    /// The spins (`uint8`, `0..q`; Ising 0 is s = +1), a copy.
    #[getter]
    fn spins<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        let chain = self.chain.lock().unwrap_or_else(|p| p.into_inner());
        PyArray2::from_array(py, chain.spins()).into_any()
    }

    /// Sweeps made so far.
    #[getter]
    fn sweeps(&self) -> u64 {
        self.chain
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sweeps()
    }

    /// Whether the chain runs on a GPU.
    #[getter]
    fn on_gpu(&self) -> bool {
        self.chain
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .on_gpu()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(region_from_seeds, m)?)?;
    m.add_function(wrap_pyfunction!(plot_labels, m)?)?;
    m.add_function(wrap_pyfunction!(plot_size_distribution, m)?)?;
    m.add_function(wrap_pyfunction!(percolation_study, m)?)?;
    m.add_class::<PyChain>()?;
    Ok(())
}
