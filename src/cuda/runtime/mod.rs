//! The plumbing under the CUDA backend, which names no kernel family: the driver loaded without
//! panicking and a device context with its stream ([`driver`]), NVRTC compilation of embedded
//! sources with their `#include`s ([`nvrtc`]), modules compiled once per context and
//! configuration (and kept on disk across processes, [`disk_cache`]) as each family states them ([`modules`]), raw device and pinned host buffers
//! that only grow ([`buffers`]), and kernel launches with stack-held arguments ([`launch`]).

pub(crate) mod buffers;
pub(crate) mod disk_cache;
pub(crate) mod driver;
pub(crate) mod launch;
pub(crate) mod modules;
pub(crate) mod nvrtc;

pub(crate) use buffers::{DevBuf, PinnedBuf};
pub(crate) use driver::{cuda_err, open_context, Gpu};
pub(crate) use launch::kernel_args;
pub use modules::{compile_stats, CompileStats};
pub(crate) use modules::{Module, ModuleSpec};
