//! The sine-wave kernel for AMD targets: `kernels/sinewave.hip` compiled by the interop crate's
//! hiprtc ([`vkhip_interop::hip::compile_to_image`]), cached on disk by [`KernelCache`], and
//! checked to be an AMDGPU code object defining `sinewave` before HIP may load it. Needs no GPU.

use super::elf::{self, code_object_has_symbol};
use crate::compute::kernel::{KernelCache, SINEWAVE_ENTRY, SINEWAVE_SOURCE};
use crate::compute::ComputeError;
use vkhip_interop::hip::{self, Hip};

type Result<T> = std::result::Result<T, ComputeError>;

/// Compile `kernels/sinewave.hip` for `arch` (a gcnArchName, features allowed) and return the
/// code object (an AMDGPU ELF). Works without a GPU.
pub fn compile_sinewave(arch: &str) -> Result<Vec<u8>> {
    Ok(hip::compile_to_image(SINEWAVE_SOURCE, "sinewave.hip", arch, &[])?)
}

/// Whether bytes are a code object HIP may be given for the sine wave: an AMDGPU ELF (or offload
/// bundle) that defines the kernel. A damaged cache entry never gets further.
fn is_sinewave_code_object(code: &[u8]) -> bool {
    let amdgpu = elf::elf_machine_and_flags(code).is_some_and(|(machine, _)| machine == elf::EM_AMDGPU);
    amdgpu && code_object_has_symbol(code, SINEWAVE_ENTRY)
}

/// The `sinewave` code object for `hip`'s device: from the cache, recompiled once if the cached
/// entry is not a usable code object. The cache key covers the source, hiprtc, the target and the
/// runtime and driver versions.
pub(super) fn sinewave_code(hip: &Hip, driver: i32) -> Result<Vec<u8>> {
    let arch = hip.target()?;
    let rtc_version = hip::hiprtc_version()?;
    let option = format!("--offload-arch={arch}");
    let versions = format!("hip runtime {} driver {driver}", hip.runtime());
    let parts = [SINEWAVE_SOURCE, rtc_version.as_str(), option.as_str(), arch, versions.as_str()];
    let (code, outcome) = KernelCache::from_env().get_or_compile(&parts, || compile_sinewave(arch))?;
    log::debug!("hip kernel for {arch} ({rtc_version}): {outcome:?}, {} bytes", code.len());
    if is_sinewave_code_object(&code) {
        return Ok(code);
    }
    log::warn!("hip: cached kernel for {arch} is not a usable code object; recompiling");
    let code = compile_sinewave(arch)?;
    if is_sinewave_code_object(&code) {
        Ok(code)
    } else {
        Err(ComputeError::Compile {
            api: "hiprtc",
            log: format!("the code object for {arch} has no `{SINEWAVE_ENTRY}` kernel"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_are_validated_before_hiprtc() {
        for bad in ["", "sm_90", "gfx90a --save-temps", "gfx\"", "gfx90a\0"] {
            let e = compile_sinewave(bad).unwrap_err();
            assert!(
                matches!(&e, ComputeError::Interop(i) if i.kind() == vkhip_interop::ErrorKind::Compile),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn cached_garbage_is_never_loadable() {
        assert!(!is_sinewave_code_object(b""));
        assert!(!is_sinewave_code_object(b"\x7fELF garbage"));
        let code = compile_sinewave("gfx1030").expect("hiprtc compiles the sine wave for gfx1030");
        assert!(is_sinewave_code_object(&code));
    }
}
