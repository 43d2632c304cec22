//! Raw device and pinned host buffers that only grow.

use super::driver::{cuda_err, Gpu};
use crate::{Error, Result};
use cudarc::driver::result as dres;
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::sync::Arc;

/// Device memory that only grows. Dropping it frees it (after the stream's work).
pub(crate) struct DevBuf {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

impl DevBuf {
    pub(crate) fn new(gpu: &Gpu) -> DevBuf {
        DevBuf {
            ptr: 0,
            bytes: 0,
            ctx: gpu.ctx.clone(),
            stream: gpu.stream.clone(),
        }
    }

    /// Bytes this buffer must still allocate to hold `bytes`.
    pub(crate) fn shortfall(&self, bytes: usize) -> usize {
        if bytes <= self.bytes {
            0
        } else {
            bytes
        }
    }

    /// Grows to at least `bytes` (contents are lost when it grows). The caller has checked free
    /// memory; an allocation failure still comes back as [`Error::OutOfDeviceMemory`].
    pub(crate) fn ensure(&mut self, bytes: usize) -> Result<()> {
        if bytes <= self.bytes {
            return Ok(());
        }
        self.release()?;
        self.ctx
            .bind_to_thread()
            .map_err(|e| cuda_err("binding the CUDA context", e))?;
        // SAFETY: plain allocation; the memory is written before it is read.
        match unsafe { dres::malloc_sync(bytes) } {
            Ok(p) => {
                self.ptr = p;
                self.bytes = bytes;
                Ok(())
            }
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let free = self.ctx.mem_get_info().map(|m| m.0).unwrap_or(0);
                Err(Error::OutOfDeviceMemory {
                    needed: bytes,
                    free,
                })
            }
            Err(e) => Err(cuda_err("allocating device memory", e)),
        }
    }

    fn release(&mut self) -> Result<()> {
        if self.ptr != 0 {
            self.stream
                .synchronize()
                .map_err(|e| cuda_err("waiting before freeing device memory", e))?;
            self.ctx
                .bind_to_thread()
                .map_err(|e| cuda_err("binding the CUDA context", e))?;
            // SAFETY: allocated by malloc_sync and no longer used by queued work.
            unsafe { dres::free_sync(self.ptr) }
                .map_err(|e| cuda_err("freeing device memory", e))?;
            self.ptr = 0;
            self.bytes = 0;
        }
        Ok(())
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Page-locked host memory that only grows, for fast asynchronous copies.
pub(crate) struct PinnedBuf {
    ptr: *mut u8,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffer is plain host memory owned by this value.
unsafe impl Send for PinnedBuf {}

impl PinnedBuf {
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> PinnedBuf {
        PinnedBuf {
            ptr: std::ptr::null_mut(),
            bytes: 0,
            ctx: ctx.clone(),
        }
    }

    /// Grows to at least `bytes` (contents are lost when it grows).
    pub(crate) fn ensure(&mut self, bytes: usize) -> Result<()> {
        if bytes <= self.bytes {
            return Ok(());
        }
        self.release();
        self.ctx
            .bind_to_thread()
            .map_err(|e| cuda_err("binding the CUDA context", e))?;
        // SAFETY: plain page-locked allocation.
        let p = unsafe { dres::malloc_host(bytes.max(1), 0) }
            .map_err(|e| cuda_err(&format!("allocating {bytes} bytes of pinned memory"), e))?;
        self.ptr = p.cast();
        self.bytes = bytes;
        Ok(())
    }

    /// The first `len` elements as a slice of `T` (needs `len * size_of::<T>() <= bytes`).
    pub(crate) fn slice_mut<T: Copy>(&mut self, len: usize) -> &mut [T] {
        assert!(len * std::mem::size_of::<T>() <= self.bytes || len == 0);
        if len == 0 {
            return &mut [];
        }
        // SAFETY: in bounds (asserted), page-aligned allocation, exclusive borrow; callers only
        // use plain integer types, for which any bit pattern is valid.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), len) }
    }

    fn release(&mut self) {
        if !self.ptr.is_null() {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: allocated by malloc_host; callers synchronise before it is freed.
            let _ = unsafe { dres::free_host(self.ptr.cast()) };
            self.ptr = std::ptr::null_mut();
            self.bytes = 0;
        }
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        self.release();
    }
}
