//! The keyword arguments every call shares, parsed into the crate's types with `ValueError`s
//! that name the accepted values.

use crate::value_error;
use clusterlab::{Algorithm, Backend, Boundary, Connectivity, Parallelism};
use pyo3::prelude::*;

/// `4` or `8`.
pub(crate) fn connectivity(value: i64) -> PyResult<Connectivity> {
    match value {
        4 => Ok(Connectivity::Four),
        8 => Ok(Connectivity::Eight),
        _ => Err(value_error(format!(
            "connectivity must be 4 or 8, not {value}"
        ))),
    }
}

/// `"open"`, `"periodic"`, `"periodic-x"` or `"periodic-y"` (underscores accepted too).
pub(crate) fn boundary(value: &str) -> PyResult<Boundary> {
    match value {
        "open" => Ok(Boundary::Open),
        "periodic" => Ok(Boundary::Periodic),
        "periodic-x" | "periodic_x" => Ok(Boundary::PeriodicX),
        "periodic-y" | "periodic_y" => Ok(Boundary::PeriodicY),
        _ => Err(value_error(format!(
            "boundary must be \"open\", \"periodic\", \"periodic-x\" or \"periodic-y\", not {value:?}"
        ))),
    }
}

/// `"auto"`, `"cpu"`, `"cuda"` or `"cuda:N"`.
pub(crate) fn backend(value: &str) -> PyResult<Backend> {
    match value {
        "auto" => Ok(Backend::Auto),
        "cpu" => Ok(Backend::Cpu),
        "cuda" => Ok(Backend::Cuda { device: 0 }),
        _ => value
            .strip_prefix("cuda:")
            .and_then(|n| n.parse().ok())
            .map(|device| Backend::Cuda { device })
            .ok_or_else(|| {
                value_error(format!(
                    "backend must be \"auto\", \"cpu\", \"cuda\" or \"cuda:N\", not {value:?}"
                ))
            }),
    }
}

/// `None` (rayon's global pool, sized by `RAYON_NUM_THREADS`) or a thread count.
pub(crate) fn threads(value: Option<usize>) -> PyResult<Parallelism> {
    match value {
        None => Ok(Parallelism::Rayon),
        Some(1) => Ok(Parallelism::Sequential),
        Some(n) if (2..=clusterlab::MAX_THREADS).contains(&n) => Ok(Parallelism::Threads(n)),
        Some(n) => Err(value_error(format!(
            "threads must be from 1 to {}, not {n}",
            clusterlab::MAX_THREADS
        ))),
    }
}

/// The boundary's name as the Python calls spell it.
pub(crate) fn boundary_name(boundary: Boundary) -> &'static str {
    match boundary {
        Boundary::Open => "open",
        Boundary::Periodic => "periodic",
        Boundary::PeriodicX => "periodic-x",
        Boundary::PeriodicY => "periodic-y",
    }
}

/// An algorithm's name (`"auto"`, `"strips"`, `"hoshen-kopelman"`, `"bfs"`, or a GPU one:
/// `"bit-runs"`, `"block-union-find"`, `"ha4"`, `"tile-merge"`, `"label-equivalence"`).
pub(crate) fn algorithm(value: &str) -> PyResult<Algorithm> {
    value.parse().map_err(crate::error)
}
