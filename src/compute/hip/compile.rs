//! HIP source → an AMDGPU code object, with hiprtc, for a named target. Needs no GPU. One compile
//! function ([`compile_source`]) serves `kernels/sinewave.hip` ([`compile_sinewave`]) and any
//! other kernel ([`compile_kernel`], what `interop::hip` compiles with).
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
//! `Compile` error instead of a dead process.

use std::ffi::CString;
use std::sync::Mutex;

use super::rtc::{self, Comgr};
use crate::compute::kernel::SINEWAVE_SOURCE;
use crate::compute::ComputeError;

/// The hiprtc options for `arch` (every kernel vkhip compiles gets these).
pub fn sinewave_options(arch: &str) -> Vec<String> {
    vec![format!("--offload-arch={arch}")]
}

/// hiprtc is not documented as thread-safe (and comgr 2.x was not): one compile at a time.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

fn valid_arch(arch: &str) -> bool {
    arch.starts_with("gfx")
        && arch.len() <= 64
        && arch.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'+' | b'-' | b'_'))
}

fn not_a_comgr_target(arch: &str, comgr: &Comgr) -> ComputeError {
    ComputeError::Compile {
        api: "hiprtc",
        log: format!(
            "target {} is unknown to the code object manager hiprtc compiles through \
             ({}, comgr {}.{}, {} targets); not calling hiprtc, which aborts the process \
             when comgr rejects a target (ROCm 5.2: double amd_comgr_destroy_action_info)",
            Comgr::processor(arch),
            comgr.library,
            comgr.version.0,
            comgr.version.1,
            comgr.isa_names.len()
        ),
    }
}

/// Compile `source` (called `name` in hiprtc's messages) for `arch` (a gcnArchName such as
/// "gfx90a" or "gfx90a:sramecc+:xnack-") and return the code object (an AMDGPU ELF). Works
/// without a GPU. The one compile function: the sine wave and `interop::hip` both come here.
pub fn compile_source(source: &str, name: &str, arch: &str) -> Result<Vec<u8>, ComputeError> {
    if !valid_arch(arch) {
        return Err(ComputeError::Compile {
            api: "hiprtc",
            log: format!("'{arch}' is not an AMDGPU target name"),
        });
    }
    let rtc = rtc::hiprtc()?;
    match rtc::comgr() {
        Some(comgr) if !comgr.knows(arch) => return Err(not_a_comgr_target(arch, comgr)),
        Some(_) => {}
        None => log::warn!("comgr could not be loaded to check target {arch}; asking hiprtc anyway"),
    }
    let nul =
        |what: &str| ComputeError::Compile { api: "hiprtc", log: format!("{what} contains a NUL byte") };
    let source = CString::new(source).map_err(|_| nul(name))?;
    let name = CString::new(name).map_err(|_| nul("the program name"))?;
    let options: Vec<CString> = sinewave_options(arch)
        .into_iter()
        .map(|o| CString::new(o).expect("validated target names contain no NUL"))
        .collect();
    let _guard = COMPILE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let program = rtc::Program::new(rtc, &source, &name)?;
    program.compile(&options)?;
    let code = program.code()?;
    if code.is_empty() {
        return Err(ComputeError::Compile { api: "hiprtc", log: format!("empty code object for {arch}") });
    }
    Ok(code)
}

/// Compile `kernels/sinewave.hip` for `arch` and return the code object (an AMDGPU ELF). Works
/// without a GPU.
pub fn compile_sinewave(arch: &str) -> Result<Vec<u8>, ComputeError> {
    compile_source(SINEWAVE_SOURCE, "sinewave.hip", arch)
}

/// Compile your kernel: `source` must define `extern "C" __global__ void <entry>(...)`. Returns a
/// code object for `arch` that is an AMDGPU ELF defining `entry` (checked, so it is safe to hand
/// to `hipModuleLoadData`, which reads it without a length). Works without a GPU.
pub fn compile_kernel(source: &str, entry: &str, arch: &str) -> Result<Vec<u8>, ComputeError> {
    let code = compile_source(source, &format!("{entry}.hip"), arch)?;
    let amdgpu = super::elf::elf_machine_and_flags(&code).is_some_and(|(m, _)| m == super::elf::EM_AMDGPU);
    if !amdgpu || !super::code_object_has_symbol(&code, entry) {
        return Err(ComputeError::Compile {
            api: "hiprtc",
            log: format!(
                "the code object for {arch} is not an AMDGPU ELF defining `{entry}` \
                 (is it declared extern \"C\" __global__?)"
            ),
        });
    }
    Ok(code)
}

/// `Unavailable` when comgr does not list `arch`'s processor: the GPU (`device_name`) is newer
/// than the installed ROCm, an environment gap rather than a kernel bug. `Ok` when comgr cannot
/// be loaded (hiprtc is asked anyway).
pub fn check_target_supported(device_name: &str, arch: &str, runtime: i32) -> Result<(), ComputeError> {
    let processor = Comgr::processor(arch);
    match supported_offload_archs() {
        Some(archs) if !archs.iter().any(|a| a == processor) => Err(ComputeError::Unavailable {
            backend: "hip",
            reason: format!(
                "{device_name} is a {processor}, a target the installed hiprtc ({}, HIP {}) \
                 cannot compile for; a newer ROCm is needed",
                hiprtc_version().unwrap_or_else(|e| e.to_string()),
                super::device::format_hip_version(runtime)
            ),
        }),
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

/// "hiprtc 9.0 (libamdhip64.so)": for the kernel-cache key and `info`.
pub fn hiprtc_version() -> Result<String, ComputeError> {
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
            let e = compile_sinewave(bad).unwrap_err();
            assert!(matches!(e, ComputeError::Compile { .. }), "{bad:?}: {e}");
        }
    }

    #[test]
    fn options_name_the_target() {
        assert_eq!(sinewave_options("gfx90a:xnack-"), vec!["--offload-arch=gfx90a:xnack-".to_string()]);
    }
}
