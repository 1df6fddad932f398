//! `kernels/sinewave.hip` → an AMDGPU code object, with hiprtc, for a named target. Needs no GPU.
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

/// The hiprtc options for `arch`.
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

/// Compile `kernels/sinewave.hip` for `arch` (a gcnArchName such as "gfx90a" or
/// "gfx90a:sramecc+:xnack-") and return the code object (an AMDGPU ELF). Works without a GPU.
pub fn compile_sinewave(arch: &str) -> Result<Vec<u8>, ComputeError> {
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
    let source = CString::new(SINEWAVE_SOURCE).map_err(|_| ComputeError::Compile {
        api: "hiprtc",
        log: "kernels/sinewave.hip contains a NUL byte".into(),
    })?;
    let options: Vec<CString> = sinewave_options(arch)
        .into_iter()
        .map(|o| CString::new(o).expect("validated target names contain no NUL"))
        .collect();
    let _guard = COMPILE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let program = rtc::Program::new(rtc, &source, c"sinewave.hip")?;
    program.compile(&options)?;
    let code = program.code()?;
    if code.is_empty() {
        return Err(ComputeError::Compile { api: "hiprtc", log: format!("empty code object for {arch}") });
    }
    Ok(code)
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
