//! `label`, `label_batch` and the `Labeler` class on host (NumPy) arrays.

use crate::input::{self, with_sites, Lattice, Raw};
use crate::{error, options, value_error, DETACH_SITES};
use clusterlab::{Algorithm, Backend, Boundary, Connectivity, Parallelism, SizeCounts};
use ndarray::ArrayViewMut2;
use numpy::npyffi::{self, objects::_PyArray_GET_ITEM_DATA};
use numpy::{PyArray1, PyArray2, PyArray3, PyArrayDescrMethods, PyArrayMethods};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use std::sync::Mutex;

/// Lattices below this many sites are labeled on the calling thread: handing a few thousand
/// sites to rayon's pool costs more (waking a worker) than labeling them (256² measured: 0.10 ms
/// on the calling thread, 0.19 ms through the pool of the 2-core development machine).
const SEQUENTIAL_SITES: usize = 1 << 17;

/// What a cached one-shot labeler was built for.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
    backend: Backend,
    algorithm: Algorithm,
    sequential: bool,
}

/// One-shot calls reuse labelers (and their grown buffers) through this cache; a labeler is
/// taken out while it works, so concurrent calls from several Python threads each get their own.
static CACHE: Mutex<Vec<(Key, clusterlab::Labeler)>> = Mutex::new(Vec::new());
/// The most labelers the cache keeps.
const CACHE_SIZE: usize = 16;

fn build(key: Key) -> PyResult<clusterlab::Labeler> {
    let labeler = clusterlab::Labeler::new(key.connectivity, key.boundary)
        .segments(key.segments)
        .backend(key.backend)
        .map_err(error)?
        .algorithm(key.algorithm);
    Ok(if key.sequential {
        labeler.parallelism(Parallelism::Sequential)
    } else {
        labeler
    })
}

fn take(key: Key) -> PyResult<clusterlab::Labeler> {
    let found = {
        let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .iter()
            .position(|(k, _)| *k == key)
            .map(|i| cache.swap_remove(i).1)
    };
    match found {
        Some(l) => Ok(l),
        None => build(key),
    }
}

fn give_back(key: Key, labeler: clusterlab::Labeler) {
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() < CACHE_SIZE {
        cache.push((key, labeler));
    }
}

/// Whether a lattice of `sites` is labeled on the calling thread.
fn sequential(sites: usize) -> bool {
    sites < SEQUENTIAL_SITES || rayon::current_num_threads() == 1
}

/// The output of a 2-D call: the caller's `out` (checked) or a new `uint32` array.
fn output_2d<'py>(
    py: Python<'py>,
    out: Option<&Bound<'py, PyAny>>,
    lattice: &Lattice<'_>,
) -> PyResult<(Bound<'py, PyUntypedArray>, Raw)> {
    let (h, w) = lattice.dim();
    match out {
        Some(o) => input::output(o, &[h, w], lattice.extent()),
        None => {
            let array = PyArray2::<u32>::zeros(py, [h, w], false);
            let untyped = array.as_untyped().clone();
            Ok((untyped.clone(), input::raw_of(&untyped).0))
        }
    }
}

/// Labels `lattice` into `raw` with `labeler`, without the GIL when the lattice is large.
fn run(
    py: Python<'_>,
    labeler: &mut clusterlab::Labeler,
    lattice: &Lattice<'_>,
    raw: Raw,
) -> clusterlab::Result<usize> {
    let sites = lattice.sites();
    let (h, w) = sites.dim();
    // SAFETY: `raw` is the output array (checked: aligned u32/i32, writeable, not overlapping
    // the input), alive in the caller's frame for the whole call.
    let out: ArrayViewMut2<'_, u32> = unsafe { raw.view_mut() };
    if h * w >= DETACH_SITES {
        py.detach(move || with_sites!(sites, v => labeler.label_into(v, out)))
    } else {
        with_sites!(sites, v => labeler.label_into(v, out))
    }
}

/// `clusterlab.label` on host arrays (the Python wrapper documents it).
#[pyfunction]
#[pyo3(signature = (input, connectivity=4, boundary="open", segments=false, backend="auto", out=None, algorithm="auto"))]
#[allow(clippy::too_many_arguments)]
fn label<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    connectivity: i64,
    boundary: &str,
    segments: bool,
    backend: &str,
    out: Option<&Bound<'py, PyAny>>,
    algorithm: &str,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let connectivity = options::connectivity(connectivity)?;
    let boundary = options::boundary(boundary)?;
    let backend = options::backend(backend)?;
    let lattice = input::lattice(input, segments, "input")?;
    let (out_array, raw) = output_2d(py, out, &lattice)?;
    let (h, w) = lattice.dim();
    let key = Key {
        connectivity,
        boundary,
        segments,
        backend,
        algorithm: options::algorithm(algorithm)?,
        sequential: sequential(h * w),
    };
    let mut labeler = take(key)?;
    let n = run(py, &mut labeler, &lattice, raw);
    give_back(key, labeler);
    Ok((out_array.into_any(), n.map_err(error)?))
}

/// A `K × H × W` stack: per frame, a view of the caller's memory (1-, 2- and 4-byte integer
/// and bool dtypes) or of one converted copy of the whole stack.
struct Stack<'py> {
    _keep: Bound<'py, PyUntypedArray>,
    width: usize,
    shape: [usize; 3],
    strides: [isize; 3],
    ptr: *mut u8,
}

impl Stack<'_> {
    fn frame(&self, k: usize) -> Raw {
        Raw {
            // SAFETY: `k < shape[0]`: the frame's first element lies inside the array.
            ptr: unsafe { self.ptr.offset(k as isize * self.strides[0]) },
            shape: [self.shape[1], self.shape[2]],
            strides: [self.strides[1], self.strides[2]],
        }
    }
}

fn stack<'py>(obj: &Bound<'py, PyAny>, segments: bool) -> PyResult<Stack<'py>> {
    let py = obj.py();
    let mut array = input::as_array(obj)?;
    if array.ndim() != 3 {
        return Err(value_error(format!(
            "the stack must be 3-D (K, H, W), got shape {:?}",
            array.shape()
        )));
    }
    if array.shape().contains(&0) {
        return Err(value_error(format!(
            "the stack has no sites (shape {:?})",
            array.shape()
        )));
    }
    let numpy = py.import("numpy")?;
    let dtype = array.dtype();
    let (kind, size) = (dtype.kind(), dtype.itemsize());
    let narrow = matches!((kind, size), (b'b', 1) | (b'u' | b'i', 1 | 2 | 4));
    if !narrow {
        if segments || !matches!((kind, size), (b'u' | b'i', 8) | (b'f', 2 | 4 | 8)) {
            return Err(value_error(format!(
                "unsupported dtype {} for a stack{}",
                dtype.str()?,
                if segments {
                    " of segments: use 8-, 16- or 32-bit integers"
                } else {
                    ""
                }
            )));
        }
        // Occupancy of wide values: one bool copy (NumPy's `!= 0`: −0.0 empty, NaN occupied).
        array = numpy
            .call_method1("not_equal", (&array, 0))?
            .cast_into::<PyUntypedArray>()?;
    }
    // SAFETY: a live NumPy array's fields, read only.
    let flags = unsafe { (*_PyArray_GET_ITEM_DATA(array.as_array_ptr())).flags };
    let size = array.dtype().itemsize();
    if flags & npyffi::NPY_ARRAY_ALIGNED == 0
        || array.strides().iter().any(|s| s % size as isize != 0)
    {
        array = numpy
            .call_method1("ascontiguousarray", (&array,))?
            .cast_into::<PyUntypedArray>()?;
    }
    // SAFETY: as above.
    let ptr = unsafe { (*_PyArray_GET_ITEM_DATA(array.as_array_ptr())).data.cast() };
    let (s, t) = (array.shape().to_vec(), array.strides().to_vec());
    Ok(Stack {
        width: array.dtype().itemsize(),
        shape: [s[0], s[1], s[2]],
        strides: [t[0], t[1], t[2]],
        ptr,
        _keep: array,
    })
}

/// The output of a stack: the caller's `out` (C-contiguous `uint32`/`int32` of the stack's
/// shape) or a new `uint32` array.
fn output_3d<'py>(
    py: Python<'py>,
    out: Option<&Bound<'py, PyAny>>,
    stack: &Stack<'_>,
) -> PyResult<(Bound<'py, PyAny>, *mut u8)> {
    let [k, h, w] = stack.shape;
    let array = match out {
        None => PyArray3::<u32>::zeros(py, [k, h, w], false)
            .as_untyped()
            .clone(),
        Some(o) => {
            // Frame by frame, each frame checked as a 2-D output would be.
            let a = o
                .cast::<PyUntypedArray>()
                .map_err(|_| value_error("out must be a NumPy array of uint32 or int32"))?
                .clone();
            if a.shape() != [k, h, w] || !a.is_c_contiguous() {
                return Err(value_error(format!(
                    "out must be a C-contiguous array of shape {:?}",
                    [k, h, w]
                )));
            }
            let view = a.call_method1("reshape", ((k * h, w),))?;
            let keep = &stack._keep;
            let lo = stack.frame(0).extent(stack.width);
            let hi = stack.frame(k - 1).extent(stack.width);
            let span = (lo.0.min(hi.0), lo.1.max(hi.1));
            input::output(&view, &[k * h, w], Some(span))?;
            let _ = keep;
            a
        }
    };
    // SAFETY: a live NumPy array's fields, read only.
    let ptr = unsafe { (*_PyArray_GET_ITEM_DATA(array.as_array_ptr())).data.cast() };
    Ok((array.into_any(), ptr))
}

/// Labels every frame of `stack` into the C-contiguous `out` (frames of `h * w` labels), without
/// the GIL. On the CPU, many small frames go to the threads one frame each (a sequential labeler
/// per thread); few large ones are labeled one after the other, each with every thread. On a
/// GPU, one after the other through one labeler.
fn run_stack(
    py: Python<'_>,
    key: Key,
    threads: Parallelism,
    stack: &Stack<'_>,
    out: *mut u8,
) -> PyResult<Vec<usize>> {
    let [k, h, w] = stack.shape;
    // Raw pointers are not Send; the blocks outlive the call, so their addresses may travel.
    let frames: Vec<(SendRaw, SendRaw)> = (0..k)
        .map(|i| {
            let o = Raw {
                // SAFETY: frame `i` of the C-contiguous output.
                ptr: unsafe { out.add(i * h * w * 4) },
                shape: [h, w],
                strides: [(w * 4) as isize, 4],
            };
            (SendRaw(stack.frame(i)), SendRaw(o))
        })
        .collect();
    let width = stack.width;
    let label_one = move |labeler: &mut clusterlab::Labeler, src: Raw, dst: Raw| {
        // SAFETY: each input frame is alive (the stack keeps its array) and each output frame is
        // a disjoint block of the output, written by this task only.
        unsafe {
            let out: ArrayViewMut2<'_, u32> = dst.view_mut();
            match width {
                1 => labeler.label_into(src.view::<u8>(), out),
                2 => labeler.label_into(src.view::<u16>(), out),
                _ => labeler.label_into(src.view::<u32>(), out),
            }
        }
    };
    let gpu = matches!(key.backend, Backend::Cuda { .. });
    let many = !gpu
        && threads != Parallelism::Sequential
        && (k >= 2 * threads_of(threads) || h * w < SEQUENTIAL_SITES);
    let one = Key {
        sequential: true,
        ..key
    };
    // Built here, with the GIL, so that a GPU that cannot open is the right exception.
    let mut labeler = build(Key {
        sequential: false,
        ..key
    })?
    .parallelism(threads);
    let mut singles = Vec::new();
    if many {
        singles = (0..threads_of(threads))
            .map(|_| build(one))
            .collect::<PyResult<_>>()?;
    }
    let work = move || -> clusterlab::Result<Vec<usize>> {
        if !many {
            return frames
                .into_iter()
                .map(|(a, b)| label_one(&mut labeler, a.0, b.0))
                .collect();
        }
        let pool = Mutex::new(singles);
        let go = || {
            frames
                .into_par_iter()
                .map_init(
                    || pool.lock().unwrap_or_else(|p| p.into_inner()).pop(),
                    |l, (a, b)| match l {
                        Some(l) => label_one(l, a.0, b.0),
                        None => label_one(&mut build(one).expect("a CPU labeler builds"), a.0, b.0),
                    },
                )
                .collect()
        };
        match threads {
            Parallelism::Threads(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| clusterlab::Error::InvalidArgument(e.to_string()))?
                .install(go),
            _ => go(),
        }
    };
    py.detach(work).map_err(error)
}

/// The threads `parallelism` runs on.
fn threads_of(parallelism: Parallelism) -> usize {
    match parallelism {
        Parallelism::Sequential => 1,
        Parallelism::Threads(n) => n,
        _ => rayon::current_num_threads(),
    }
}

#[derive(Clone, Copy)]
struct SendRaw(Raw);
// SAFETY: the blocks are NumPy arrays kept alive by the caller for the whole call; each output
// block is written by one task.
unsafe impl Send for SendRaw {}

/// `clusterlab.label_batch` (the Python wrapper documents it).
#[pyfunction]
#[pyo3(signature = (stack, connectivity=4, boundary="open", segments=false, backend="auto", out=None, threads=None, algorithm="auto"))]
#[allow(clippy::too_many_arguments)]
fn label_batch<'py>(
    py: Python<'py>,
    stack: &Bound<'py, PyAny>,
    connectivity: i64,
    boundary: &str,
    segments: bool,
    backend: &str,
    out: Option<&Bound<'py, PyAny>>,
    threads: Option<usize>,
    algorithm: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let key = Key {
        connectivity: options::connectivity(connectivity)?,
        boundary: options::boundary(boundary)?,
        segments,
        backend: options::backend(backend)?,
        algorithm: options::algorithm(algorithm)?,
        sequential: false,
    };
    let threads = options::threads(threads)?;
    let stack = self::stack(stack, segments)?;
    let (out_array, ptr) = output_3d(py, out, &stack)?;
    let counts = run_stack(py, key, threads, &stack, ptr)?;
    let counts: Vec<i64> = counts.into_iter().map(|c| c as i64).collect();
    Ok((out_array, PyArray1::from_vec(py, counts).into_any()))
}

/// `clusterlab.Labeler`: a labeling plan kept across timesteps (the Python class documents it).
#[pyclass(module = "clusterlab._clusterlab", name = "Labeler")]
struct PyLabeler {
    inner: Mutex<clusterlab::Labeler>,
    key: Key,
    threads: Parallelism,
    counts: SizeCounts,
}

#[pymethods]
impl PyLabeler {
    #[new]
    #[pyo3(signature = (connectivity=4, boundary="open", segments=false, backend="auto", threads=None, algorithm="auto"))]
    fn new(
        connectivity: i64,
        boundary: &str,
        segments: bool,
        backend: &str,
        threads: Option<usize>,
        algorithm: &str,
    ) -> PyResult<Self> {
        let key = Key {
            connectivity: options::connectivity(connectivity)?,
            boundary: options::boundary(boundary)?,
            segments,
            backend: options::backend(backend)?,
            algorithm: options::algorithm(algorithm)?,
            sequential: false,
        };
        let threads = options::threads(threads)?;
        Ok(PyLabeler {
            inner: Mutex::new(build(key)?.parallelism(threads)),
            key,
            threads,
            counts: SizeCounts::new(),
        })
    }

    #[pyo3(signature = (input, out=None))]
    fn label<'py>(
        &mut self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyAny>, usize)> {
        let lattice = input::lattice(input, self.key.segments, "input")?;
        let (out_array, raw) = output_2d(py, out, &lattice)?;
        let labeler = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        let n = run(py, labeler, &lattice, raw).map_err(error)?;
        Ok((out_array.into_any(), n))
    }

    #[pyo3(signature = (stack, out=None))]
    fn label_batch<'py>(
        &self,
        py: Python<'py>,
        stack: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let stack = self::stack(stack, self.key.segments)?;
        let (out_array, ptr) = output_3d(py, out, &stack)?;
        let counts = run_stack(py, self.key, self.threads, &stack, ptr)?;
        let counts: Vec<i64> = counts.into_iter().map(|c| c as i64).collect();
        Ok((out_array, PyArray1::from_vec(py, counts).into_any()))
    }

    /// Per-step counts without labels (see the Python docstring).
    fn size_counts<'py>(
        &mut self,
        py: Python<'py>,
        input: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let lattice = input::lattice(input, self.key.segments, "input")?;
        let sites = lattice.sites();
        let (h, w) = sites.dim();
        let labeler = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        let counts = &mut self.counts;
        let result = if h * w >= DETACH_SITES {
            py.detach(|| with_sites!(sites, v => labeler.size_counts_into(v, counts)))
        } else {
            with_sites!(sites, v => labeler.size_counts_into(v, counts))
        };
        result.map_err(error)?;
        counts_dict(py, &self.counts)
    }

    #[getter]
    fn backend(&self) -> String {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .backend_name()
    }

    #[getter]
    fn connectivity(&self) -> u8 {
        match self.key.connectivity {
            Connectivity::Four => 4,
            _ => 8,
        }
    }

    #[getter]
    fn boundary(&self) -> &'static str {
        options::boundary_name(self.key.boundary)
    }

    #[getter]
    fn segments(&self) -> bool {
        self.key.segments
    }

    fn __repr__(&self) -> String {
        format!(
            "Labeler(connectivity={}, boundary={:?}, segments={}, backend={:?})",
            self.connectivity(),
            self.boundary(),
            if self.key.segments { "True" } else { "False" },
            self.backend()
        )
    }
}

/// A [`SizeCounts`] as a dict: the per-lattice numbers and `n_s` as two arrays.
pub(crate) fn counts_dict<'py>(py: Python<'py>, c: &SizeCounts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("clusters", c.clusters())?;
    d.set_item("occupied", c.occupied())?;
    d.set_item("largest", c.largest())?;
    d.set_item("mean_size", c.mean_size())?;
    d.set_item("p_infinity", c.p_infinity())?;
    d.set_item("wraps_x", c.wraps_x())?;
    d.set_item("wraps_y", c.wraps_y())?;
    d.set_item("wraps_both", c.wraps_both())?;
    d.set_item("spans_x", c.spans_x())?;
    d.set_item("spans_y", c.spans_y())?;
    let (s, n): (Vec<u64>, Vec<u64>) = c.counts.iter().copied().unzip();
    d.set_item("sizes", PyArray1::from_vec(py, s))?;
    d.set_item("counts", PyArray1::from_vec(py, n))?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(label, m)?)?;
    m.add_function(wrap_pyfunction!(label_batch, m)?)?;
    m.add_class::<PyLabeler>()?;
    Ok(())
}
