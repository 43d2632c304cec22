//! Device arrays (CuPy, PyTorch, Numba: anything with `__cuda_array_interface__`) labeled where
//! they are: the Python wrapper passes their raw device pointers, the labels come back in a
//! device array it allocated, and only the cluster count crosses to the host.

use crate::{error, options, value_error};
use clusterlab::cuda::CudaLabeler;
use clusterlab::{Boundary, Connectivity};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    device: usize,
    connectivity: Connectivity,
    boundary: Boundary,
    segments: bool,
}

/// Labelers by device and settings: kernels compiled and scratch grown once per process.
static CACHE: Mutex<Vec<(Key, CudaLabeler)>> = Mutex::new(Vec::new());

/// Labels the `height × width` lattice of `width_bytes`-byte sites at device address `input`
/// into the `u32` labels at `output` (both C-contiguous, on `device`), ordered after `stream`
/// (a `CUstream` handle, 0 for the legacy default stream); returns the cluster count.
#[pyfunction]
#[pyo3(signature = (input, site_bytes, height, width, output, device, stream, connectivity=4, boundary="open", segments=false))]
#[allow(clippy::too_many_arguments)]
fn label_device(
    py: Python<'_>,
    input: u64,
    site_bytes: usize,
    height: usize,
    width: usize,
    output: u64,
    device: usize,
    stream: usize,
    connectivity: i64,
    boundary: &str,
    segments: bool,
) -> PyResult<usize> {
    let key = Key {
        device,
        connectivity: options::connectivity(connectivity)?,
        boundary: options::boundary(boundary)?,
        segments,
    };
    if height == 0 || width == 0 {
        return Err(value_error(format!(
            "the input has no sites (shape {:?})",
            (height, width)
        )));
    }
    let found = {
        let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
        let i = cache.iter().position(|(k, _)| *k == key);
        i.map(|i| cache.swap_remove(i).1)
    };
    let mut labeler = match found {
        Some(l) => l,
        None => CudaLabeler::new(device, key.connectivity, key.boundary)
            .map_err(error)?
            .segments(segments),
    };
    let result = py.detach(|| {
        // A handle is an opaque driver token: an address travels, the pointer is rebuilt here.
        let stream = stream as clusterlab::cuda::cudarc::driver::sys::CUstream;
        // SAFETY: the Python wrapper passes the pointers of live, C-contiguous device arrays of
        // the stated shape and site width, the output a fresh array of its own, and the stream
        // of the caller; `label_device_ptr` checks that both pointers are on the device.
        unsafe {
            match site_bytes {
                1 => labeler.label_device_ptr::<u8>(input, height, width, output, stream),
                2 => labeler.label_device_ptr::<u16>(input, height, width, output, stream),
                4 => labeler.label_device_ptr::<u32>(input, height, width, output, stream),
                _ => Err(clusterlab::Error::InvalidArgument(format!(
                    "sites of {site_bytes} bytes: 1, 2 or 4"
                ))),
            }
        }
    });
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() < 16 {
        cache.push((key, labeler));
    }
    result.map_err(error)
}

/// Describes GPU `device` as a dict, or raises `RuntimeError` with the reason it is unusable.
#[pyfunction]
#[pyo3(signature = (device=0))]
fn cuda_info(py: Python<'_>, device: usize) -> PyResult<Bound<'_, PyDict>> {
    let info = py
        .detach(|| clusterlab::cuda::device_info(device))
        .map_err(error)?;
    let d = PyDict::new(py);
    d.set_item("ordinal", info.ordinal)?;
    d.set_item("name", info.name)?;
    d.set_item("compute_capability", info.compute_capability)?;
    d.set_item("multiprocessors", info.multiprocessors)?;
    d.set_item("total_memory", info.total_memory)?;
    d.set_item("free_memory", info.free_memory)?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(label_device, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_info, m)?)?;
    Ok(())
}
