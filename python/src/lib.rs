//! `clusterlab._clusterlab`: the compiled half of the `clusterlab` Python package.
//!
//! The pure-Python package (`python/clusterlab/`) wraps these functions with NumPy-style
//! docstrings and routes `__cuda_array_interface__` objects (CuPy, PyTorch, Numba) to
//! [`gpu`]. Every long call releases the GIL; every error is a Python exception carrying the
//! crate's message (see [`error`]), never a panic across the interpreter.

use pyo3::prelude::*;

mod analyze;
mod extras;
mod gpu;
mod input;
mod label;
mod options;

/// Sites from which a call releases the GIL: below it, releasing and re-taking the lock costs
/// more than the labeling it would let other threads overlap with.
pub(crate) const DETACH_SITES: usize = 1 << 14;

/// The crate's errors as Python exceptions, the message kept: `MemoryError` for host or device
/// memory, `RuntimeError` for CUDA, NVRTC and plotting failures, `OSError` for files,
/// `ValueError` for everything the caller passed (shapes, dtypes, arguments).
pub(crate) fn error(e: clusterlab::Error) -> PyErr {
    use clusterlab::Error as E;
    use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
    let message = e.to_string();
    match e {
        E::OutOfMemory { .. } | E::OutOfDeviceMemory { .. } => PyMemoryError::new_err(message),
        E::CudaUnavailable(_) | E::Cuda(_) | E::KernelCompile { .. } | E::Plot(_) => {
            PyRuntimeError::new_err(message)
        }
        E::Io { .. } => PyOSError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// `ValueError(message)`.
pub(crate) fn value_error(message: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(message.into())
}

#[pymodule]
fn _clusterlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_SITES", clusterlab::MAX_SITES)?;
    label::register(m)?;
    analyze::register(m)?;
    gpu::register(m)?;
    extras::register(m)?;
    Ok(())
}
