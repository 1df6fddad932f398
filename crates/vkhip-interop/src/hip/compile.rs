//! HIP source → an AMDGPU code object, with hiprtc, for a named target. Needs no GPU.
//!
//! The target goes in as `--offload-arch=<gcnArchName>` (features included, e.g.
//! `gfx90a:sramecc+:xnack-`); hiprtc 5.2 and 6.x both accept that spelling.
//!
//! Before hiprtc sees a target, comgr's list of targets is consulted. Reason, measured on Debian 12
//! (HIP 5.2.3, comgr 2.4 built against LLVM 15): for a target missing from comgr's ISA table
//! (gfx940, gfx942, gfx1100, ...), `amd_comgr_action_info_set_isa_name` returns
//! `AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT`, hiprtc then calls `amd_comgr_destroy_action_info` twice
//! on the same handle, and glibc aborts the whole process ("munmap_chunk(): invalid pointer").
//! An error cannot be returned from there, so the check happens here and the caller gets a
//! compile error instead of a dead process.

use std::ffi::CString;
use std::sync::Mutex;

use super::rtc::{self, Comgr};
use crate::error::{Api, Error, Result};

/// hiprtc is not documented as thread-safe (and comgr 2.x was not): one compile at a time.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

fn valid_arch(arch: &str) -> bool {
    arch.starts_with("gfx")
        && arch.len() <= 64
        && arch.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'+' | b'-' | b'_'))
}

fn not_a_comgr_target(arch: &str, comgr: &Comgr) -> Error {
    Error::compile(
        Api::Hiprtc,
        "",
        None,
        format!(
            "target {} is unknown to the code object manager hiprtc compiles through \
             ({}, comgr {}.{}, {} targets); not calling hiprtc, which aborts the process \
             when comgr rejects a target (ROCm 5.2: double amd_comgr_destroy_action_info)",
            Comgr::processor(arch),
            comgr.library,
            comgr.version.0,
            comgr.version.1,
            comgr.isa_names.len()
        ),
    )
}

/// Compile `source` (called `name` in hiprtc's messages) for `arch` (a gcnArchName such as
/// "gfx90a" or "gfx90a:sramecc+:xnack-") and return the code object (an AMDGPU ELF), ready for
/// [`Hip::load_module`](super::Hip::load_module). `options` come after the
/// `--offload-arch=<arch>` (for example `-ffp-contract=off`). Works without a GPU.
pub fn compile_to_image(source: &str, name: &str, arch: &str, options: &[&str]) -> Result<Vec<u8>> {
    if !valid_arch(arch) {
        return Err(Error::compile(Api::Hiprtc, "", None, format!("'{arch}' is not an AMDGPU target name")));
    }
    let rtc = rtc::hiprtc()?;
    match rtc::comgr() {
        Some(comgr) if !comgr.knows(arch) => return Err(not_a_comgr_target(arch, comgr)),
        Some(_) => {}
        None => log::warn!("comgr could not be loaded to check target {arch}; asking hiprtc anyway"),
    }
    let nul = |what: &str| Error::compile(Api::Hiprtc, "", None, format!("{what} contains a NUL byte"));
    let source = CString::new(source).map_err(|_| nul(name))?;
    let name = CString::new(name).map_err(|_| nul("the program name"))?;
    let options = std::iter::once(format!("--offload-arch={arch}"))
        .chain(options.iter().map(|o| o.to_string()))
        .map(|o| CString::new(o).map_err(|_| nul("an option")))
        .collect::<Result<Vec<CString>>>()?;
    let _guard = COMPILE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let program = rtc::Program::new(rtc, &source, &name)?;
    program.compile(&options)?;
    let code = program.code()?;
    if code.is_empty() {
        return Err(Error::compile(
            Api::Hiprtc,
            "hiprtcGetCode",
            None,
            format!("empty code object for {arch}"),
        ));
    }
    Ok(code)
}

/// Refused ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)) when comgr does not list
/// `arch`'s processor: the GPU (`device_name`) is newer than the installed ROCm, an environment
/// gap rather than a kernel bug. `Ok` when comgr cannot be loaded (hiprtc is asked anyway).
pub(super) fn check_target_supported(device_name: &str, arch: &str, runtime: &str) -> Result<()> {
    let processor = Comgr::processor(arch);
    match supported_offload_archs() {
        Some(archs) if !archs.iter().any(|a| a == processor) => Err(Error::unsupported(
            Api::Hiprtc,
            format!(
                "{device_name} is a {processor}, a target the installed hiprtc ({}, HIP {runtime}) \
                 cannot compile for; a newer ROCm is needed",
                hiprtc_version().unwrap_or_else(|e| e.to_string()),
            ),
        )),
        _ => Ok(()),
    }
}

/// The targets (processor names, e.g. "gfx90a") the installed hiprtc can compile for, from its
/// comgr; `None` when comgr cannot be loaded.
pub fn supported_offload_archs() -> Option<Vec<String>> {
    rtc::comgr().map(|c| {
        let mut v: Vec<String> = c.isa_names.iter().map(|n| Comgr::processor(n).to_string()).collect();
        v.dedup();
        v
    })
}

/// "hiprtc 9.0 (libamdhip64.so)": which hiprtc compiles, for logs and cache keys.
pub fn hiprtc_version() -> Result<String> {
    let rtc = rtc::hiprtc()?;
    let (major, minor) = rtc.version();
    Ok(format!("hiprtc {major}.{minor} ({})", rtc.library()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_are_validated_before_hiprtc() {
        assert!(valid_arch("gfx90a:sramecc+:xnack-"));
        assert!(valid_arch("gfx1100"));
        for bad in ["", "sm_90", "gfx90a --save-temps", "gfx\"", "gfx90a\0"] {
            let e = compile_to_image("", "k.hip", bad, &[]).unwrap_err();
            assert_eq!((e.api(), e.kind()), (Api::Hiprtc, crate::ErrorKind::Compile), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_kernel_compiles_for_a_named_target_without_a_gpu() {
        let code = compile_to_image(
            "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }",
            "k.hip",
            "gfx1030",
            &[],
        )
        .expect("hiprtc compiles for gfx1030 on every supported ROCm");
        assert!(code.starts_with(b"\x7fELF"), "an AMDGPU code object is an ELF");
        let e = compile_to_image("extern \"C\" __global__ void k() { oops; }", "bad.hip", "gfx1030", &[])
            .unwrap_err();
        assert_eq!((e.kind(), e.call()), (crate::ErrorKind::Compile, "hiprtcCompileProgram"));
        assert!(e.message().contains("oops"), "the log names the error: {e}");
    }
}
