//! The kernels for AMD targets: `kernels/sinewave.hip` (and `kernels/outline.hip`, the post
//! filter) compiled by the interop crate's hiprtc ([`vkhip_interop::hip::compile_to_image`]),
//! cached on disk by [`KernelCache`], and checked to be an AMDGPU code object defining the entry
//! point before HIP may load it. Needs no GPU.

use super::elf::{self, code_object_has_symbol};
use crate::compute::kernel::{KernelCache, SINEWAVE_ENTRY, SINEWAVE_SOURCE};
use crate::compute::outline::{OUTLINE_ENTRY, OUTLINE_SOURCE};
use crate::compute::ComputeError;
use vkhip_interop::hip::{self, Hip};

type Result<T> = std::result::Result<T, ComputeError>;

/// Compile `kernels/sinewave.hip` for `arch` (a gcnArchName, features allowed) and return the
/// code object (an AMDGPU ELF). Works without a GPU.
pub fn compile_sinewave(arch: &str) -> Result<Vec<u8>> {
    Ok(hip::compile_to_image(SINEWAVE_SOURCE, "sinewave.hip", arch, &[])?)
}

/// A kernel source: (text, file name for hiprtc's messages, entry point).
type Kernel = (&'static str, &'static str, &'static str);

const SINEWAVE: Kernel = (SINEWAVE_SOURCE, "sinewave.hip", SINEWAVE_ENTRY);
const OUTLINE: Kernel = (OUTLINE_SOURCE, "outline.hip", OUTLINE_ENTRY);

/// Compile `kernels/outline.hip` for `arch`, as [`compile_sinewave`] does the sine wave.
pub fn compile_outline(arch: &str) -> Result<Vec<u8>> {
    Ok(hip::compile_to_image(OUTLINE_SOURCE, "outline.hip", arch, &[])?)
}

/// Whether bytes are a code object HIP may be given for `entry`: an AMDGPU ELF (or offload
/// bundle) that defines the kernel. A damaged cache entry never gets further.
fn is_code_object_for(code: &[u8], entry: &str) -> bool {
    let amdgpu = elf::elf_machine_and_flags(code).is_some_and(|(machine, _)| machine == elf::EM_AMDGPU);
    amdgpu && code_object_has_symbol(code, entry)
}

/// The `sinewave` code object for `hip`'s device ([`kernel_code`]).
pub(super) fn sinewave_code(hip: &Hip, driver: i32) -> Result<Vec<u8>> {
    kernel_code(hip, driver, SINEWAVE)
}

/// The `outline` code object for `hip`'s device ([`kernel_code`]).
pub(super) fn outline_code(hip: &Hip, driver: i32) -> Result<Vec<u8>> {
    kernel_code(hip, driver, OUTLINE)
}

/// The code object of `kernel` for `hip`'s device: from the cache, recompiled once if the cached
/// entry is not a usable code object. The cache key covers the source, hiprtc, the target and the
/// runtime and driver versions.
fn kernel_code(hip: &Hip, driver: i32, (source, file, entry): Kernel) -> Result<Vec<u8>> {
    let arch = hip.target()?;
    let rtc_version = hip::hiprtc_version()?;
    let option = format!("--offload-arch={arch}");
    let versions = format!("hip runtime {} driver {driver}", hip.runtime());
    let parts = [source, rtc_version.as_str(), option.as_str(), arch, versions.as_str()];
    let compile = || -> Result<Vec<u8>> { Ok(hip::compile_to_image(source, file, arch, &[])?) };
    let (code, outcome) = KernelCache::from_env().get_or_compile(file, &parts, compile)?;
    log::debug!("hip {file} for {arch} ({rtc_version}): {outcome:?}, {} bytes", code.len());
    if is_code_object_for(&code, entry) {
        return Ok(code);
    }
    log::warn!("hip: cached {file} for {arch} is not a usable code object; recompiling");
    let code = compile()?;
    if is_code_object_for(&code, entry) {
        Ok(code)
    } else {
        Err(ComputeError::Compile {
            api: "hiprtc",
            file,
            log: format!("the code object for {arch} has no `{entry}` kernel"),
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
        assert!(!is_code_object_for(b"", SINEWAVE_ENTRY));
        assert!(!is_code_object_for(b"\x7fELF garbage", SINEWAVE_ENTRY));
        let code = compile_sinewave("gfx1030").expect("hiprtc compiles the sine wave for gfx1030");
        assert!(is_code_object_for(&code, SINEWAVE_ENTRY));
        assert!(!is_code_object_for(&code, OUTLINE_ENTRY));
    }

    /// The post filter's source compiles with hiprtc too (HIP's surface types and functions,
    /// no #include), and defines `outline`.
    #[test]
    fn hiprtc_compiles_the_outline_filter() {
        let code = compile_outline("gfx1030").expect("hiprtc compiles kernels/outline.hip for gfx1030");
        assert!(is_code_object_for(&code, OUTLINE_ENTRY));
    }
}
