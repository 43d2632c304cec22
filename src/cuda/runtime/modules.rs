//! Compiled modules: what the runtime needs to know of a module ([`ModuleSpec`], stated by each
//! kernel family, so that the runtime names none), its compilation (once per context and
//! configuration, cached for the process and on disk, see [`super::disk_cache`]) and its
//! kernels by name.

use super::disk_cache::{self, Source};
use super::driver::{cuda_err, no_panic, Gpu};
use super::nvrtc::{compile_cubin, extra_options, nvrtc_version, target_arch};
use crate::{Error, Result};
use cudarc::driver::{sys, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What kernel compilation has cost this process: modules compiled by NVRTC, modules read from
/// the on-disk cache, and the time spent in both (what `clusterlab label --timings` reports as
/// "compile").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Modules NVRTC compiled in this process.
    pub compiled: u64,
    /// Modules read from the on-disk kernel cache.
    pub from_disk: u64,
    /// Time spent compiling, reading the cache and loading modules into a context.
    pub time: Duration,
}

static COMPILED: AtomicU64 = AtomicU64::new(0);
static FROM_DISK: AtomicU64 = AtomicU64::new(0);
static COMPILE_NANOS: AtomicU64 = AtomicU64::new(0);

/// What kernel compilation has cost this process so far.
pub fn compile_stats() -> CompileStats {
    CompileStats {
        compiled: COMPILED.load(Relaxed),
        from_disk: FROM_DISK.load(Relaxed),
        time: Duration::from_nanos(COMPILE_NANOS.load(Relaxed)),
    }
}

/// One module as its family states it: the program, the files it `#include`s, its kernels.
pub(crate) trait ModuleSpec {
    /// A key unique to this configuration among the process's modules.
    fn key(&self) -> u64;
    /// A name for messages and NVRTC's log, e.g. `bit_runs.cu (sites unsigned char, ...)`.
    fn name(&self) -> String;
    /// The program NVRTC compiles: configuration defines and `#include`s.
    fn source(&self) -> String;
    /// The files the program may `#include`, as `(name, contents)`.
    fn headers(&self) -> &'static [(&'static str, &'static str)];
    /// The kernels to load from the module.
    fn kernels(&self) -> Vec<&'static str>;
    /// Dynamic shared memory `kernel` must be allowed beyond the default 48 KB, given the
    /// device's opt-in limit.
    fn shared_bytes(&self, kernel: &str, max_optin: usize) -> Option<usize>;
}

/// The kernel files a program may include: the embedded ones, or, for kernel development
/// without rebuilding the crate, those of the folder `CLUSTERLAB_KERNEL_DIR` names (a file
/// missing there keeps its embedded text). The disk cache keys by the text, so both coexist.
fn kernel_sources(
    embedded: &'static [(&'static str, &'static str)],
) -> Vec<(&'static str, std::borrow::Cow<'static, str>)> {
    let dir = std::env::var_os("CLUSTERLAB_KERNEL_DIR").filter(|d| !d.is_empty());
    embedded
        .iter()
        .map(|&(name, body)| {
            let over = dir
                .as_ref()
                .and_then(|d| std::fs::read_to_string(std::path::Path::new(d).join(name)).ok());
            (
                name,
                over.map_or(std::borrow::Cow::Borrowed(body), Into::into),
            )
        })
        .collect()
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
type ModuleCache = HashMap<(usize, u64), Arc<Module>>;

fn module_cache() -> &'static Mutex<ModuleCache> {
    static CACHE: OnceLock<Mutex<ModuleCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Gpu {
    /// The module for `key`, compiled on first use in this context.
    pub(crate) fn module(&mut self, spec: &impl ModuleSpec) -> Result<&Module> {
        let key = spec.key();
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
                    let m = Arc::new(self.compile(spec)?);
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
    pub(crate) fn has_module(&self, spec: &impl ModuleSpec) -> bool {
        self.modules.contains_key(&spec.key())
    }

    /// The module for `key`, if compiled.
    pub(crate) fn get_module(&self, spec: &impl ModuleSpec) -> Option<&Module> {
        self.modules.get(&spec.key()).map(|m| &**m)
    }

    fn compile(&self, spec: &impl ModuleSpec) -> Result<Module> {
        let start = Instant::now();
        let r = self.compile_timed(spec);
        COMPILE_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        r
    }

    fn compile_timed(&self, spec: &impl ModuleSpec) -> Result<Module> {
        let name = spec.name();
        let src = spec.source();
        let arch = no_panic("asking NVRTC for its architectures", || {
            target_arch(self.cc.0 * 10 + self.cc.1)
        })?;
        let nvrtc = no_panic("asking NVRTC for its version", nvrtc_version)?;
        let headers = kernel_sources(spec.headers());
        // Everything the binary depends on is in the key: a change to any is a new entry.
        let mut parts: Vec<&[u8]> = vec![
            env!("CARGO_PKG_VERSION").as_bytes(),
            nvrtc.as_bytes(),
            arch.as_bytes(),
            src.as_bytes(),
        ];
        for opt in extra_options() {
            parts.push(opt.as_bytes());
        }
        for (n, body) in &headers {
            parts.push(n.as_bytes());
            parts.push(body.as_bytes());
        }
        let key = disk_cache::key_of(&parts);
        let dir = disk_cache::cache_dir();
        let build = || {
            no_panic("compiling with NVRTC", || {
                compile_cubin(&name, &src, &headers, &arch)
            })
        };
        let (cubin, source) = disk_cache::load_or_compile(dir.as_deref(), key, build)?;
        self.bind()?;
        let module = match self.ctx.load_module(Ptx::from_binary(cubin)) {
            Ok(m) => m,
            // A cached binary the driver refuses (damaged in a way the checksum missed, or
            // written by another driver): compile it again once.
            Err(_) if source == Source::Disk => {
                disk_cache::forget(dir.as_deref(), key);
                let (cubin, _) = disk_cache::load_or_compile(dir.as_deref(), key, build)?;
                COMPILED.fetch_add(1, Relaxed);
                self.ctx
                    .load_module(Ptx::from_binary(cubin))
                    .map_err(|e| cuda_err(&format!("loading the module of {name}"), e))?
            }
            Err(e) => return Err(cuda_err(&format!("loading the module of {name}"), e)),
        };
        match source {
            Source::Disk => FROM_DISK.fetch_add(1, Relaxed),
            Source::Compiled => COMPILED.fetch_add(1, Relaxed),
        };
        let mut funcs = Vec::new();
        for k in spec.kernels() {
            let f = module
                .load_function(k)
                .map_err(|e| cuda_err(&format!("finding kernel {k}"), e))?;
            if let Some(bytes) = spec.shared_bytes(k, self.max_shared_optin) {
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
}
