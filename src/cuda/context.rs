//! The plumbing under the CUDA backend: loading the driver without panicking, a device context
//! with its stream, NVRTC compilation of the embedded kernel sources for the device's own
//! architecture (cached per context and kernel family), raw device and pinned host buffers that
//! only grow, and kernel launches with stack-held arguments (no allocation per launch).

use crate::{Error, Result};
use cudarc::driver::result::{self as dres, DriverError};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::{result as nres, sys as nsys, Ptx};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

/// Shared helpers, prepended to every family's source.
const COMMON: &str = include_str!("../../kernels/common.cuh");
/// Canonical numbering kernels, compiled into every family's module.
const CANONICAL: &str = include_str!("../../kernels/canonical.cu");
const LABEL_EQUIVALENCE: &str = include_str!("../../kernels/label_equivalence.cu");
const BLOCK_UNION_FIND: &str = include_str!("../../kernels/block_union_find.cu");
const TILE_MERGE: &str = include_str!("../../kernels/tile_merge.cu");
const HA4: &str = include_str!("../../kernels/ha4.cu");
const BIT_RUNS: &str = include_str!("../../kernels/bit_runs.cu");
/// Cluster analysis on the block forest, compiled into the block union-find module.
const ANALYSIS: &str = include_str!("../../kernels/analysis.cu");
const REGIONS: &str = include_str!("../../kernels/regions.cu");

/// Kernels of `canonical.cu`, present in every module.
const CANONICAL_KERNELS: [&str; 4] = ["canon_count", "canon_scan", "canon_rank", "canon_final"];

/// A driver error as the crate's error, naming the call that failed.
pub(crate) fn cuda_err(what: &str, e: DriverError) -> Error {
    Error::Cuda(format!("{what}: {e:?}"))
}

/// Runs a cudarc call that may panic (it panics when a library or symbol cannot be loaded) and
/// turns a panic into [`Error::CudaUnavailable`].
fn no_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
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

/// The site type of a lattice on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SiteType {
    U8,
    U16,
    U32,
}

impl SiteType {
    /// Bytes per site.
    pub(crate) fn size(self) -> usize {
        match self {
            SiteType::U8 => 1,
            SiteType::U16 => 2,
            SiteType::U32 => 4,
        }
    }
    fn c_name(self) -> &'static str {
        match self {
            SiteType::U8 => "unsigned char",
            SiteType::U16 => "unsigned short",
            SiteType::U32 => "unsigned int",
        }
    }
    /// The site type of `T` (one of `u8`, `u16`, `u32`: [`crate::SiteValue`] is sealed).
    pub(crate) fn of<T: crate::SiteValue>() -> SiteType {
        match std::mem::size_of::<T>() {
            1 => SiteType::U8,
            2 => SiteType::U16,
            _ => SiteType::U32,
        }
    }
}

/// A kernel family: one `.cu` file, compiled per configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    LabelEquivalence,
    BlockUnionFind,
    TileMerge,
    Ha4,
    BitRuns,
    /// Seeded regions' kernels (not a labeling algorithm).
    Regions,
}

impl Family {
    fn file(self) -> (&'static str, &'static str) {
        match self {
            Family::LabelEquivalence => ("label_equivalence.cu", LABEL_EQUIVALENCE),
            Family::BlockUnionFind => ("block_union_find.cu", BLOCK_UNION_FIND),
            Family::TileMerge => ("tile_merge.cu", TILE_MERGE),
            Family::Ha4 => ("ha4.cu", HA4),
            Family::BitRuns => ("bit_runs.cu", BIT_RUNS),
            Family::Regions => ("regions.cu", REGIONS),
        }
    }
    fn kernels(self) -> &'static [&'static str] {
        match self {
            Family::LabelEquivalence => &["le_init", "le_solve"],
            Family::BlockUnionFind => &[
                "buf_local",
                "buf_border",
                "buf_wrap",
                "buf_flatten",
                "buf_final_raw",
                "ana_zero",
                "ana_runs",
                "ana_border",
                "ana_hist",
            ],
            Family::TileMerge => &["tm_local", "tm_merge", "tm_wrap", "tm_final"],
            Family::Ha4 => &["ha4_strip", "ha4_border", "ha4_wrap", "ha4_relabel"],
            Family::BitRuns => &[
                "br_local",
                "br_local_ana",
                "br_merge",
                "br_flatten",
                "br_count",
                "br_publish",
                "br_spread",
                "br_final",
                "ana_zero",
                "ana_records",
                "ana_border",
                "ana_hist",
            ],
            Family::Regions => crate::cuda::regions::KERNELS,
        }
    }
}

/// What a compiled module is specialised for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ModuleKey {
    pub family: Family,
    pub site: SiteType,
    pub conn8: bool,
    pub segments: bool,
}

impl ModuleKey {
    /// Whether the forest is a compact array of its own (blocks of more than one site) rather
    /// than the label array.
    pub(crate) fn compact_forest(&self) -> bool {
        self.block_shape() != (1, 1)
    }

    /// The union-find block shape `(BW, BH)` of this configuration.
    pub(crate) fn block_shape(&self) -> (u32, u32) {
        match (self.family, self.segments, self.conn8) {
            (
                Family::LabelEquivalence
                | Family::TileMerge
                | Family::Ha4
                | Family::BitRuns
                | Family::Regions,
                _,
                _,
            )
            | (_, true, _) => (1, 1),
            (Family::BlockUnionFind, false, true) => (2, 2),
            (Family::BlockUnionFind, false, false) => (2, 1),
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "{} (sites {}, {}-connectivity{})",
            self.family.file().0,
            self.site.c_name(),
            if self.conn8 { 8 } else { 4 },
            if self.segments { ", segments" } else { "" }
        )
    }

    /// The full source: configuration defines, then the shared helpers, canonical numbering and
    /// the family's kernels, each with a `#line` directive so that NVRTC's log names the file.
    pub(crate) fn source(&self) -> String {
        let (bw, bh) = self.block_shape();
        let (file, body) = self.family.file();
        // The analysis kernels read the forest of block union-find or bit runs.
        let extra = if matches!(self.family, Family::BlockUnionFind | Family::BitRuns) {
            format!("#line 1 \"analysis.cu\"\n{ANALYSIS}\n")
        } else {
            String::new()
        };
        format!(
            "#define SITE_T {}\n#define CONN8 {}\n#define SEGMENTS {}\n#define BW {bw}\n#define BH {bh}\n\
             #line 1 \"common.cuh\"\n{COMMON}\n#line 1 \"canonical.cu\"\n{CANONICAL}\n\
             #line 1 \"{file}\"\n{body}\n{extra}",
            self.site.c_name(),
            self.conn8 as u32,
            self.segments as u32,
        )
    }
}

/// A loaded module and its kernels.
pub(crate) struct Module {
    _module: Arc<CudaModule>,
    funcs: Vec<(&'static str, CudaFunction)>,
}

impl Module {
    /// The kernel `name` (one of the family's or canonical numbering's).
    pub(crate) fn func(&self, name: &str) -> &CudaFunction {
        &self
            .funcs
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("kernel {name} is not in this module"))
            .1
    }
}

/// Compiled modules of every context in the process, by context handle and configuration: each
/// kernel family is compiled once per context (labelers on one device share its primary context).
type ModuleCache = HashMap<(usize, ModuleKey), Arc<Module>>;

fn module_cache() -> &'static Mutex<ModuleCache> {
    static CACHE: OnceLock<Mutex<ModuleCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
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
    /// This context's modules, from the process-wide cache.
    modules: HashMap<ModuleKey, Arc<Module>>,
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

    /// The module for `key`, compiled on first use in this context.
    pub(crate) fn module(&mut self, key: ModuleKey) -> Result<&Module> {
        if !self.modules.contains_key(&key) {
            let ctx_key = (self.ctx.cu_ctx() as usize, key);
            let cached = module_cache()
                .lock()
                .map_err(|_| Error::Cuda("the kernel cache is poisoned".into()))?
                .get(&ctx_key)
                .cloned();
            let module = match cached {
                Some(m) => m,
                None => {
                    let m = Arc::new(self.compile(&key)?);
                    module_cache()
                        .lock()
                        .map_err(|_| Error::Cuda("the kernel cache is poisoned".into()))?
                        .insert(ctx_key, m.clone());
                    m
                }
            };
            self.modules.insert(key, module);
        }
        Ok(&self.modules[&key])
    }

    /// Whether the module for `key` is compiled already.
    pub(crate) fn has_module(&self, key: &ModuleKey) -> bool {
        self.modules.contains_key(key)
    }

    /// The module for `key`, if compiled.
    pub(crate) fn get_module(&self, key: &ModuleKey) -> Option<&Module> {
        self.modules.get(key).map(|m| &**m)
    }

    fn compile(&self, key: &ModuleKey) -> Result<Module> {
        let name = key.describe();
        let src = key.source();
        let arch = no_panic("asking NVRTC for its architectures", || {
            target_arch(self.cc.0 * 10 + self.cc.1)
        })?;
        let cubin = no_panic("compiling with NVRTC", || compile_cubin(&name, &src, &arch))?;
        self.bind()?;
        let module = self
            .ctx
            .load_module(Ptx::from_binary(cubin))
            .map_err(|e| cuda_err(&format!("loading the module of {name}"), e))?;
        let mut funcs = Vec::new();
        for &k in key.family.kernels().iter().chain(CANONICAL_KERNELS.iter()) {
            let f = module
                .load_function(k)
                .map_err(|e| cuda_err(&format!("finding kernel {k}"), e))?;
            let shared = match key.family {
                Family::BitRuns => {
                    super::bit_runs::kernel_shared_bytes(k, key.segments, self.max_shared_optin)
                }
                _ => None,
            };
            if let Some(bytes) = shared {
                // More than the default 48 KB of dynamic shared memory must be asked for.
                let bytes = bytes as i32;
                f.set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes,
                )
                .map_err(|e| cuda_err(&format!("giving {k} {bytes} bytes of shared memory"), e))?;
            }
            funcs.push((k, f));
        }
        Ok(Module {
            _module: module,
            funcs,
        })
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

    /// Fills `bytes` bytes at `ptr` with zeros, on the stream.
    pub(crate) fn memset_zero(&self, ptr: sys::CUdeviceptr, bytes: usize) -> Result<()> {
        // SAFETY: the caller's buffer holds at least `bytes` bytes at `ptr`.
        unsafe { dres::memset_d8_async(ptr, 0, bytes, self.stream.cu_stream()) }
            .map_err(|e| cuda_err("clearing device memory", e))
    }
}

/// The `--gpu-architecture` option for a device of compute capability `sm` (e.g. 90): its own
/// architecture when NVRTC supports it; for a device newer than NVRTC, the newest virtual
/// architecture NVRTC has (PTX, which the driver compiles at load).
fn target_arch(sm: i32) -> Result<String> {
    let mut n = 0i32;
    // SAFETY: plain NVRTC queries into buffers of the size NVRTC reports.
    let archs = unsafe {
        nsys::nvrtcGetNumSupportedArchs(&mut n)
            .result()
            .map_err(|e| Error::Cuda(format!("nvrtcGetNumSupportedArchs: {e:?}")))?;
        let mut v = vec![0i32; n.max(0) as usize];
        nsys::nvrtcGetSupportedArchs(v.as_mut_ptr())
            .result()
            .map_err(|e| Error::Cuda(format!("nvrtcGetSupportedArchs: {e:?}")))?;
        v
    };
    match (archs.iter().min(), archs.iter().max()) {
        _ if archs.contains(&sm) => Ok(format!("--gpu-architecture=sm_{sm}")),
        (Some(&lo), _) if sm < lo => Err(Error::CudaUnavailable(format!(
            "this NVRTC compiles for sm_{lo} and newer; the device is sm_{sm}"
        ))),
        (_, Some(&hi)) if sm > hi => Ok(format!("--gpu-architecture=compute_{hi}")),
        _ => Ok(format!("--gpu-architecture=sm_{sm}")),
    }
}

/// Compiles `src` for `arch` with NVRTC (a CUBIN, or PTX for a virtual architecture); a failed compile returns NVRTC's log.
pub(crate) fn compile_cubin(name: &str, src: &str, arch: &str) -> Result<Vec<u8>> {
    let csrc = CString::new(src).expect("kernel sources hold no NUL");
    let cname = CString::new(name).expect("kernel names hold no NUL");
    let prog = nres::create_program(&csrc, Some(&cname))
        .map_err(|e| Error::Cuda(format!("nvrtcCreateProgram: {e:?}")))?;
    struct Guard(nsys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: created above and destroyed once.
            let _ = unsafe { nres::destroy_program(self.0) };
        }
    }
    let guard = Guard(prog);
    let opts = [arch, "--std=c++17"];
    // SAFETY: `prog` is a live program.
    if let Err(e) = unsafe { nres::compile_program(guard.0, &opts) } {
        // SAFETY: as above.
        let log = unsafe { nres::get_program_log(guard.0) }
            .map(|v| {
                let bytes: Vec<u8> = v
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_default();
        return Err(Error::KernelCompile {
            kernel: name.to_string(),
            log: format!("{e:?} with options {opts:?}\n{log}"),
        });
    }
    if arch.contains("compute_") {
        // SAFETY: `prog` compiled successfully.
        let ptx = unsafe { nres::get_ptx(guard.0) }
            .map_err(|e| Error::Cuda(format!("nvrtcGetPTX: {e:?}")))?;
        return Ok(ptx.iter().map(|&c| c as u8).collect());
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reports.
    unsafe {
        nsys::nvrtcGetCUBINSize(guard.0, &mut size)
            .result()
            .map_err(|e| Error::Cuda(format!("nvrtcGetCUBINSize: {e:?}")))?;
        let mut cubin = vec![0u8; size];
        nsys::nvrtcGetCUBIN(guard.0, cubin.as_mut_ptr().cast())
            .result()
            .map_err(|e| Error::Cuda(format!("nvrtcGetCUBIN: {e:?}")))?;
        Ok(cubin)
    }
}

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

/// Pointers to a kernel's arguments, for [`Gpu::launch`]. Use it inside the launch call only:
/// the pointers borrow the expressions, which live until the end of that statement.
macro_rules! kernel_args {
    ($($a:expr),* $(,)?) => {
        [$(&$a as *const _ as *mut ::std::ffi::c_void),*]
    };
}
pub(crate) use kernel_args;

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether NVRTC loads; when `CLUSTERLAB_REQUIRE_NVRTC=1` (scripts/test.sh, which installs
    /// NVRTC from PyPI) its absence fails the test instead of skipping it.
    fn nvrtc_present() -> bool {
        // SAFETY: only tries to dlopen libnvrtc.
        let present = unsafe { nsys::is_culib_present() };
        if !present && std::env::var("CLUSTERLAB_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
            panic!("CLUSTERLAB_REQUIRE_NVRTC=1 but libnvrtc does not load (LD_LIBRARY_PATH?)");
        }
        if !present {
            eprintln!(
                "NVRTC not found: skipping the kernel compile check (scripts/test.sh runs it)"
            );
        }
        present
    }

    /// Every kernel configuration compiles with NVRTC (no GPU needed: only libnvrtc).
    #[test]
    fn every_configuration_compiles() {
        if !nvrtc_present() {
            return;
        }
        for family in [
            Family::LabelEquivalence,
            Family::BlockUnionFind,
            Family::TileMerge,
            Family::Ha4,
            Family::BitRuns,
        ] {
            for site in [SiteType::U8, SiteType::U16, SiteType::U32] {
                for conn8 in [false, true] {
                    for segments in [false, true] {
                        let key = ModuleKey {
                            family,
                            site,
                            conn8,
                            segments,
                        };
                        for arch in [target_arch(75).unwrap(), target_arch(90).unwrap()] {
                            let cubin = compile_cubin(&key.describe(), &key.source(), &arch)
                                .unwrap_or_else(|e| panic!("{e}"));
                            assert!(!cubin.is_empty());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_bad_kernel_returns_the_log() {
        if !nvrtc_present() {
            return;
        }
        let e = compile_cubin(
            "bad.cu",
            "extern \"C\" __global__ void k() { undefined_thing(); }",
            "--gpu-architecture=sm_75",
        )
        .unwrap_err();
        match e {
            Error::KernelCompile { kernel, log } => {
                assert_eq!(kernel, "bad.cu");
                assert!(log.contains("undefined_thing"), "{log}");
            }
            other => panic!("{other}"),
        }
    }
}
