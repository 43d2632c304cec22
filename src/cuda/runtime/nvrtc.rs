//! NVRTC: compiling the embedded kernel sources for the device's own architecture.

use crate::{Error, Result};
use cudarc::nvrtc::{result as nres, sys as nsys};
use std::ffi::{c_char, CString};

/// The `--gpu-architecture` option for a device of compute capability `sm` (e.g. 90): its own
/// architecture when NVRTC supports it; for a device newer than NVRTC, the newest virtual
/// architecture NVRTC has (PTX, which the driver compiles at load).
pub(crate) fn target_arch(sm: i32) -> Result<String> {
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

/// NVRTC's version, e.g. `"13.0"` (part of the on-disk kernel cache's key).
pub(crate) fn nvrtc_version() -> Result<String> {
    let (mut major, mut minor) = (0i32, 0i32);
    // SAFETY: a plain query into two integers.
    unsafe { nsys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Cuda(format!("nvrtcVersion: {e:?}")))?;
    Ok(format!("{major}.{minor}"))
}

/// NVRTC options beyond the architecture: `--generate-line-info` when
/// `CLUSTERLAB_NVRTC_LINEINFO=1`, so that a profiler (`ncu --import-source`) can place a kernel's
/// time on its source lines; and the whitespace-separated options of `CLUSTERLAB_NVRTC_DEFINES`
/// (say `-DLOCAL_MINB=3`), so that one binary can time a kernel's compile-time choices against
/// each other. Off by default; they are part of the disk cache's key.
pub(crate) fn extra_options() -> &'static [&'static str] {
    static OPTS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    OPTS.get_or_init(|| {
        let on = std::env::var("CLUSTERLAB_NVRTC_LINEINFO").is_ok_and(|v| v == "1");
        let mut v: Vec<&'static str> = if on {
            vec!["--generate-line-info"]
        } else {
            Vec::new()
        };
        if let Ok(d) = std::env::var("CLUSTERLAB_NVRTC_DEFINES") {
            // (Read once per process: the string lives as long as the options.)
            let d: &'static str = Box::leak(d.into_boxed_str());
            v.extend(d.split_whitespace());
        }
        v
    })
}

/// Compiles `src` for `arch` with NVRTC (a CUBIN, or PTX for a virtual architecture), with
/// `headers` (`(name, contents)`) available to its `#include`s; a failed compile returns NVRTC's
/// log.
pub(crate) fn compile_cubin(
    name: &str,
    src: &str,
    headers: &[(&str, impl AsRef<str>)],
    arch: &str,
) -> Result<Vec<u8>> {
    let csrc = CString::new(src).expect("kernel sources hold no NUL");
    let cname = CString::new(name).expect("kernel names hold no NUL");
    let hnames: Vec<CString> = headers
        .iter()
        .map(|(n, _)| CString::new(*n).expect("header names hold no NUL"))
        .collect();
    let hbodies: Vec<CString> = headers
        .iter()
        .map(|(_, b)| CString::new(b.as_ref()).expect("kernel sources hold no NUL"))
        .collect();
    let name_ptrs: Vec<*const c_char> = hnames.iter().map(|c| c.as_ptr()).collect();
    let body_ptrs: Vec<*const c_char> = hbodies.iter().map(|c| c.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a NUL-terminated string alive until the call returns; NVRTC
    // copies the sources.
    let prog = unsafe {
        nsys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            csrc.as_ptr(),
            cname.as_ptr(),
            headers.len() as i32,
            body_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
        .result()
        .map_err(|e| Error::Cuda(format!("nvrtcCreateProgram: {e:?}")))?;
        prog.assume_init()
    };
    struct Guard(nsys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: created above and destroyed once.
            let _ = unsafe { nres::destroy_program(self.0) };
        }
    }
    let guard = Guard(prog);
    let mut opts = vec![arch, "--std=c++17"];
    opts.extend_from_slice(extra_options());
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Whether NVRTC loads; when `CLUSTERLAB_REQUIRE_NVRTC=1` (scripts/test.sh, which installs
    /// NVRTC from PyPI) its absence fails the test instead of skipping it.
    pub(crate) fn nvrtc_present() -> bool {
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

    #[test]
    fn a_bad_kernel_returns_the_log() {
        if !nvrtc_present() {
            return;
        }
        let e = compile_cubin(
            "bad.cu",
            "extern \"C\" __global__ void k() { undefined_thing(); }",
            &[] as &[(&str, &str)],
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

    /// `#include`s resolve to the headers handed to NVRTC, and an error inside one names it.
    #[test]
    fn headers_are_included_by_name() {
        if !nvrtc_present() {
            return;
        }
        let headers = [
            ("a.cuh", "#pragma once\n__device__ int twice(int x) { return 2 * x; }\n"),
            ("b.cu", "#pragma once\n#include \"a.cuh\"\nextern \"C\" __global__ void k(int* p) { *p = twice(*p); }\n"),
        ];
        let src = "#include \"a.cuh\"\n#include \"b.cu\"\n";
        let arch = target_arch(90).unwrap();
        assert!(!compile_cubin("ok.cu", src, &headers, &arch)
            .unwrap()
            .is_empty());
        let broken = [("c.cuh", "__device__ int f() { return missing_symbol; }\n")];
        match compile_cubin("broken.cu", "#include \"c.cuh\"\n", &broken, &arch) {
            Err(Error::KernelCompile { log, .. }) => {
                assert!(
                    log.contains("c.cuh") && log.contains("missing_symbol"),
                    "{log}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
