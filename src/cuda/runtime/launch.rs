//! Kernel launches with stack-held arguments (no allocation per launch).

use super::driver::{cuda_err, Gpu};
use crate::Result;
use cudarc::driver::result as dres;
use cudarc::driver::{sys, CudaFunction};
use std::ffi::c_void;

impl Gpu {
    /// Launches `f` on the stream. `args` point at the kernel's arguments, in order.
    ///
    /// # Safety
    /// The arguments must match the kernel's parameters, and the buffers must be large enough.
    pub(crate) unsafe fn launch(
        &self,
        f: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        args: &mut [*mut c_void],
    ) -> Result<()> {
        self.launch_shared(f, grid, block, 0, args)
    }

    /// Launches `f` with `shared` bytes of dynamic shared memory.
    ///
    /// # Safety
    /// As [`Gpu::launch`]; `shared` must not exceed the function's dynamic shared memory limit.
    pub(crate) unsafe fn launch_shared(
        &self,
        f: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        dres::launch_kernel(
            f.cu_function(),
            grid,
            block,
            shared,
            self.stream.cu_stream(),
            args,
        )
        .map_err(|e| cuda_err("launching a kernel", e))
    }

    /// Launches `f` to follow the kernel queued before it on the stream, overlapping that
    /// kernel's end where the device allows ([`Gpu::pdl`], programmatic dependent launch): `f`
    /// may begin as the kernel before it ends, and waits in `pdl_wait()` (kernels/common.cuh)
    /// until that kernel has finished and its writes are visible. On an H200 this took 2–8 µs
    /// off a 2048² labeling's 60–100, 2–5 % at 4096² and under 1 % at 16384² (BENCHMARKS.md).
    /// Without PDL, a plain launch.
    ///
    /// # Safety
    /// As [`Gpu::launch`]; moreover every thread of `f` must call `pdl_wait()` before it touches
    /// memory that the work queued before it writes (or reads, for `f`'s writes), and one
    /// thread at least must call it (`pdl_anchor()`), so that `f` cannot end before that work.
    pub(crate) unsafe fn launch_after(
        &self,
        f: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        args: &mut [*mut c_void],
    ) -> Result<()> {
        if !self.pdl {
            return self.launch(f, grid, block, args);
        }
        let mut attr = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value: sys::CUlaunchAttributeValue {
                programmaticStreamSerializationAllowed: 1,
            },
        };
        let config = sys::CUlaunchConfig {
            gridDimX: grid.0,
            gridDimY: grid.1,
            gridDimZ: grid.2,
            blockDimX: block.0,
            blockDimY: block.1,
            blockDimZ: block.2,
            sharedMemBytes: 0,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: `config` and `attr` live across the call; the caller vouches for the arguments.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                f.cu_function(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|e| cuda_err("launching a kernel", e))
    }

    /// Launches `f` cooperatively (all blocks resident at once, for grid barriers).
    ///
    /// # Safety
    /// As [`Gpu::launch`]; `grid` must not exceed the co-resident limit.
    pub(crate) unsafe fn launch_cooperative(
        &self,
        f: &CudaFunction,
        grid: u32,
        block: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        dres::launch_cooperative_kernel(
            f.cu_function(),
            (grid, 1, 1),
            (block, 1, 1),
            0,
            self.stream.cu_stream(),
            args,
        )
        .map_err(|e| cuda_err("launching a cooperative kernel", e))
    }
}

/// Pointers to a kernel's arguments, for [`Gpu::launch`]. Use it inside the launch call only:
/// the pointers borrow the expressions, which live until the end of that statement.
macro_rules! kernel_args {
    ($($a:expr),* $(,)?) => {
        [$(&$a as *const _ as *mut ::std::ffi::c_void),*]
    };
}
pub(crate) use kernel_args;
