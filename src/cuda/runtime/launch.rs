//! Kernel launches with stack-held arguments (no allocation per launch).

use super::driver::{cuda_err, Gpu};
use crate::Result;
use cudarc::driver::result as dres;
use cudarc::driver::CudaFunction;
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
