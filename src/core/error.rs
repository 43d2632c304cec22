//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in clusterlab.
///
/// Bad input gets one of these, never a panic. The enum is `#[non_exhaustive]`: new
/// backends and file formats add variants without a breaking release.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The output array does not have the lattice's shape.
    #[error("output shape {found:?} does not match the lattice shape {expected:?}")]
    ShapeMismatch {
        /// The lattice's shape `[height, width]`.
        expected: [usize; 2],
        /// The output's shape.
        found: [usize; 2],
    },
    /// The lattice has more sites than its label type can number: `u32` labels number at most
    /// [`MAX_SITES`](crate::MAX_SITES) sites (larger lattices take `u64` labels), `u64` labels
    /// [`MAX_SITES_64`](crate::MAX_SITES_64).
    #[error("lattice of {sites} sites is too large: {}", too_many_hint(*max))]
    TooManySites {
        /// Sites in the lattice.
        sites: usize,
        /// The largest supported number of sites.
        max: usize,
    },
    /// The host could not provide a lattice-sized buffer.
    #[error("out of memory: {what} needs {bytes} bytes, which the system could not provide")]
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
        /// What they were for.
        what: String,
    },
    /// A setting that cannot be used as given (with the reason).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An input or output file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A file holds something other than a 2-D lattice of a supported type.
    #[error("{path}: {reason}")]
    BadInput {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong with it, in a few words.
        reason: String,
    },
    /// An HDF5 operation failed.
    #[error("{path}: HDF5: {message}")]
    Hdf5 {
        /// The file concerned.
        path: PathBuf,
        /// The HDF5 library's message.
        message: String,
    },
    /// The CUDA backend was asked for but cannot be used here (with the reason).
    #[error("CUDA unavailable: {0}")]
    CudaUnavailable(String),
    /// The lattice, its labels and the algorithm's scratch do not fit in the GPU's free memory.
    #[error("out of GPU memory: {needed} bytes needed, {free} bytes free")]
    OutOfDeviceMemory {
        /// Bytes the labeling needs on the device.
        needed: usize,
        /// Bytes free on the device when asked.
        free: usize,
    },
    /// A GPU kernel family failed to compile at run time (with NVRTC's log).
    #[error("NVRTC could not compile {kernel}:\n{log}")]
    KernelCompile {
        /// The kernel family and its configuration.
        kernel: String,
        /// NVRTC's compilation log.
        log: String,
    },
    /// A CUDA driver call failed (with the call and the driver's error).
    #[error("CUDA error: {0}")]
    Cuda(String),
    /// A chart or image could not be drawn or encoded (with the plotting library's message).
    #[error("plot: {0}")]
    Plot(String),
    /// A message between the ranks of an MPI sample farm was not what the protocol expects
    /// (ranks running different commands or builds).
    #[error("MPI farm: {0}")]
    Farm(String),
}

/// The second half of [`Error::TooManySites`]' message: the alternative, where there is one.
fn too_many_hint(max: usize) -> String {
    if max == crate::MAX_SITES {
        format!(
            "u32 labels number at most {max} sites; label it with u64 labels \
             (clusterlab::label64, Labeler::label64, or `clusterlab label --label-dtype uint64`)"
        )
    } else {
        format!(
            "u64 labels number at most {max} sites here (the label image must fit one allocation)"
        )
    }
}

/// Short for `Result<T, clusterlab::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
