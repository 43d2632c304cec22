//! Loading the driver without panicking, and a device context with its stream.

use super::modules::Module;
use crate::{Error, Result};
use cudarc::driver::result::{self as dres, DriverError};
use cudarc::driver::{sys, CudaContext, CudaStream};
use cudarc::nvrtc::sys as nsys;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A driver error as the crate's error, naming the call that failed.
pub(crate) fn cuda_err(what: &str, e: DriverError) -> Error {
    Error::Cuda(format!("{what}: {e:?}"))
}

/// Runs a cudarc call that may panic (it panics when a library or symbol cannot be loaded) and
/// turns a panic into [`Error::CudaUnavailable`].
pub(crate) fn no_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            Err(Error::CudaUnavailable(format!("{what}: {msg}")))
        }
    }
}

/// Checks that the driver library (libcuda) and NVRTC (libnvrtc) can be loaded, before anything
/// touches them: cudarc panics when it cannot load a library.
pub(crate) fn check_libraries() -> Result<()> {
    // SAFETY: these only try to dlopen the libraries by their usual names.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::CudaUnavailable(
            "the NVIDIA driver library (libcuda) was not found".into(),
        ));
    }
    if !unsafe { nsys::is_culib_present() } {
        return Err(Error::CudaUnavailable(
            "NVRTC (libnvrtc) was not found; add the CUDA toolkit's lib64 folder to \
             LD_LIBRARY_PATH"
                .into(),
        ));
    }
    Ok(())
}

/// Opens the primary context of device `ordinal`, after checking that the libraries load and the
/// device exists.
pub(crate) fn open_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    check_libraries()?;
    no_panic("opening the CUDA device", || {
        dres::init().map_err(|e| Error::CudaUnavailable(format!("cuInit failed: {e:?}")))?;
        let count = dres::device::get_count()
            .map_err(|e| Error::CudaUnavailable(format!("cannot count CUDA devices: {e:?}")))?;
        if count <= 0 {
            return Err(Error::CudaUnavailable("no CUDA device is present".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::CudaUnavailable(format!(
                "CUDA device {ordinal} requested but only {count} present"
            )));
        }
        CudaContext::new(ordinal).map_err(|e| {
            Error::CudaUnavailable(format!("cannot open CUDA device {ordinal}: {e:?}"))
        })
    })
}

/// Whether programmatic dependent launches are allowed: `CLUSTERLAB_PDL=0` turns them off (to
/// time their gain in one binary, or to rule them out).
fn pdl_allowed() -> bool {
    std::env::var("CLUSTERLAB_PDL").map_or(true, |v| v != "0")
}

/// A device context with its stream and compiled kernels.
pub(crate) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// Compute capability.
    pub cc: (i32, i32),
    /// Multiprocessors.
    pub sms: u32,
    /// Shared memory a block may opt in to, in bytes.
    pub max_shared_optin: usize,
    /// Kernels launched by [`Gpu::launch_after`] may start while the kernel before them ends
    /// (programmatic dependent launch: compute capability 9.0 or newer, unless
    /// `CLUSTERLAB_PDL=0`).
    pub pdl: bool,
    /// This context's modules, from the process-wide cache, by their spec's key.
    pub(super) modules: HashMap<u64, Arc<Module>>,
}

impl Gpu {
    /// Device `ordinal` with a new stream of its own.
    pub(crate) fn new(ordinal: usize) -> Result<Gpu> {
        let ctx = open_context(ordinal)?;
        let stream = ctx
            .new_stream()
            .map_err(|e| cuda_err("creating a stream", e))?;
        Gpu::with_stream(stream)
    }

    /// Work on a stream the caller owns.
    pub(crate) fn with_stream(stream: Arc<CudaStream>) -> Result<Gpu> {
        let ctx = stream.context().clone();
        let cc = ctx
            .compute_capability()
            .map_err(|e| cuda_err("reading the compute capability", e))?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| cuda_err("reading the multiprocessor count", e))?;
        let max_shared_optin = ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .map_err(|e| cuda_err("reading the shared memory limit", e))?;
        if cc.0 < 7 {
            return Err(Error::CudaUnavailable(format!(
                "compute capability {}.{} is too old: clusterlab needs 7.0 or newer",
                cc.0, cc.1
            )));
        }
        Ok(Gpu {
            ctx,
            stream,
            cc,
            sms: sms.max(1) as u32,
            max_shared_optin: max_shared_optin.max(0) as usize,
            pdl: cc.0 >= 9 && pdl_allowed(),
            modules: HashMap::new(),
        })
    }

    /// Makes the context current on this thread (cudarc's safe calls do this themselves; the raw
    /// calls used for launches and copies do not).
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| cuda_err("binding the CUDA context", e))
    }

    /// Free and total device memory in bytes.
    pub(crate) fn mem_info(&self) -> Result<(usize, usize)> {
        self.ctx
            .mem_get_info()
            .map_err(|e| cuda_err("reading free device memory", e))
    }

    /// Waits for everything queued on the stream.
    pub(crate) fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| cuda_err("running the labeling kernels", e))
    }

    /// Fills `bytes` bytes at `ptr` with zeros, on the stream.
    pub(crate) fn memset_zero(&self, ptr: sys::CUdeviceptr, bytes: usize) -> Result<()> {
        // SAFETY: the caller's buffer holds at least `bytes` bytes at `ptr`.
        unsafe { dres::memset_d8_async(ptr, 0, bytes, self.stream.cu_stream()) }
            .map_err(|e| cuda_err("clearing device memory", e))
    }
}
