//! Where work runs, resolved once: [`Backend`] (what the caller asked for) becomes a [`Device`]
//! (what is there). `Labeler`, `Analyzer` and `RegionGrower` hold one and build their backends
//! from it, so the CPU/GPU choice, the fallback of [`Backend::Auto`] and the "no GPU" message
//! live here alone.

use crate::core::backend::LabelBackend;
use crate::core::sweep::SwParams;
use crate::cpu::pool::CpuPool;
use crate::cpu::CpuBackend;
use crate::cuda::CudaDevice;
use crate::{Algorithm, Backend, Options, Result};

// What the physics layer (`mc`) drives on a GPU, named here so that it imports no backend.
pub(crate) use crate::core::sweep::SwTally;
pub(crate) use crate::cuda::CudaSwendsenWang as GpuSwendsenWang;

/// A resolved backend.
#[derive(Clone)]
pub(crate) enum Device {
    /// The CPU, with its threads.
    Cpu(CpuPool),
    /// A GPU that opened (never constructed without the `cuda` feature).
    Cuda(CudaDevice),
}

impl Device {
    /// Resolves `options.backend`: [`Backend::Cuda`] must open; [`Backend::Auto`] takes GPU 0
    /// when it opens and the algorithm runs there, the CPU otherwise.
    ///
    /// # Errors
    /// [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) for [`Backend::Cuda`] when no
    /// driver, NVRTC or device is usable, or without the `cuda` feature.
    pub(crate) fn resolve(options: &Options) -> Result<Device> {
        let cpu = || Device::Cpu(CpuPool::new(options.parallelism));
        Ok(match options.backend {
            Backend::Cpu => cpu(),
            Backend::Cuda { device } => Device::Cuda(CudaDevice::open(device)?),
            Backend::Auto if options.algorithm.runs_on_gpu() => {
                CudaDevice::open(0).map_or_else(|_| cpu(), Device::Cuda)
            }
            Backend::Auto => cpu(),
        })
    }

    /// The same device with other CPU threads (a GPU keeps its own).
    pub(crate) fn with_parallelism(self, parallelism: crate::Parallelism) -> Device {
        match self {
            Device::Cpu(_) => Device::Cpu(CpuPool::new(parallelism)),
            gpu => gpu,
        }
    }

    /// `"cpu"` or `"cuda:N"`.
    pub(crate) fn name(&self) -> String {
        match self {
            Device::Cpu(_) => "cpu".into(),
            Device::Cuda(d) => d.name(),
        }
    }

    pub(crate) fn is_gpu(&self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// The algorithm to run here: a GPU-only algorithm that [`Backend::Auto`] could not place on
    /// a GPU becomes the CPU's fastest ([`Algorithm::Auto`]), so that `Auto` never fails later
    /// for want of a GPU; an explicit [`Backend::Cpu`] keeps the caller's choice (and its error).
    pub(crate) fn algorithm(&self, options: &Options) -> Algorithm {
        match self {
            Device::Cpu(_)
                if options.backend == Backend::Auto && !options.algorithm.runs_on_cpu() =>
            {
                Algorithm::Auto
            }
            _ => options.algorithm,
        }
    }

    /// A labeling backend on this device.
    ///
    /// # Errors
    /// On a GPU, [`Error::CudaUnavailable`](crate::Error::CudaUnavailable) or
    /// [`Error::Cuda`](crate::Error::Cuda) when its stream cannot be made.
    pub(crate) fn label_backend(&self) -> Result<Box<dyn LabelBackend + Send>> {
        Ok(match self {
            Device::Cpu(pool) => Box::new(CpuBackend::new(pool.clone())),
            Device::Cuda(d) => d.label_backend()?,
        })
    }

    /// A device-resident Swendsen–Wang chain on this GPU; `None` on the CPU.
    ///
    /// # Errors
    /// Those of the GPU chain's construction (memory, kernels, driver).
    pub(crate) fn swendsen_wang(&self, params: SwParams) -> Result<Option<GpuSwendsenWang>> {
        match self {
            Device::Cpu(_) => Ok(None),
            Device::Cuda(d) => GpuSwendsenWang::on(d, params).map(Some),
        }
    }
}
