//! Compiling kernels with NVRTC, and which output to ask it for.
//!
//! A kernel is compiled to a cubin for the device's own architecture (`sm_XY`), not to PTX:
//! PTX has to be JIT-compiled by the driver, which refuses PTX from an NVRTC newer than itself
//! (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) — and the NVRTC one installs today (pip: 13.x) is often
//! newer than the driver. A cubin from the same major version loads on an older minor driver
//! (CUDA minor-version compatibility). Only when this NVRTC cannot target the device's
//! architecture (a GPU newer than the compiler) does it fall back to PTX for the newest
//! architecture it knows, which the driver then JIT-compiles for the device.

use super::sys::Nvrtc;
use crate::error::{Api, Error, Result};

/// What NVRTC produces for a device ([`super::Cuda::target`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Machine code for `sm_XY` (XY = major·10 + minor).
    Cubin(u32),
    /// PTX for `compute_XY`, JIT-compiled by the driver at load time.
    Ptx(u32),
}

impl Target {
    /// The `--gpu-architecture` option that selects this output.
    pub fn arch_option(self) -> String {
        match self {
            Target::Cubin(arch) => format!("--gpu-architecture=sm_{arch}"),
            Target::Ptx(arch) => format!("--gpu-architecture=compute_{arch}"),
        }
    }
}

/// The target for a device of compute capability `arch` (e.g. 90), given the `sm_XY` numbers
/// this NVRTC supports.
pub fn choose_target(arch: u32, supported: &[i32]) -> Result<Target> {
    if supported.iter().any(|&a| a as u32 == arch) {
        return Ok(Target::Cubin(arch));
    }
    match supported.iter().map(|&a| a as u32).filter(|&a| a < arch).max() {
        Some(older) => {
            log::info!(
                "cuda: this NVRTC cannot build sm_{arch}; using PTX for compute_{older}, which \
                 the driver JIT-compiles"
            );
            Ok(Target::Ptx(older))
        }
        None => Err(Error::unsupported(
            Api::Nvrtc,
            format!(
                "this NVRTC cannot build for the device (sm_{arch}); it supports sm_{}",
                supported.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", sm_")
            ),
        )),
    }
}

/// Refuse an NVRTC whose output this driver cannot load: a cubin needs a compiler of the
/// driver's major version or older (minor-version compatibility covers a newer minor); PTX needs
/// a compiler no newer than the driver, whose JIT reads it.
pub fn check_compiler_vs_driver(nvrtc: (i32, i32), driver_version: i32, target: Target) -> Result<()> {
    let (major, minor) = nvrtc;
    let loads = match target {
        Target::Cubin(_) => major <= driver_version / 1000,
        Target::Ptx(_) => major * 1000 + minor * 10 <= driver_version,
    };
    if loads {
        return Ok(());
    }
    let driver = super::DriverVersion(driver_version).to_string();
    let (output, newest) = match target {
        Target::Cubin(_) => ("cubin", format!("{}.x", driver_version / 1000)),
        Target::Ptx(_) => ("PTX", driver.clone()),
    };
    Err(Error::unsupported(
        Api::Nvrtc,
        format!(
            "NVRTC {major}.{minor} is newer than the driver (CUDA {driver}), which cannot load \
             its {output}: use an NVRTC of CUDA {newest} or older, or a newer driver"
        ),
    ))
}

/// Compile `source` (named `name` in messages) with `options` (which must select `target`'s
/// output): the cubin, or the NUL-terminated PTX.
pub fn compile_with(
    nvrtc: &Nvrtc,
    source: &str,
    name: &str,
    options: &[String],
    target: Target,
) -> Result<Vec<u8>> {
    let program = Program { nvrtc, raw: nvrtc.create_program(source, name)? };
    // SAFETY: `program.raw` is live until `program` drops (so for every call below).
    let compiled = unsafe { nvrtc.compile_program(program.raw, options) };
    // SAFETY: as above.
    let log = unsafe { nvrtc.program_log(program.raw) }.unwrap_or_default();
    if let Err(e) = compiled {
        let log = if log.is_empty() { e.message().to_string() } else { format!("{}\n{log}", e.message()) };
        return Err(Error::compile(Api::Nvrtc, e.call(), e.status(), log));
    }
    if !log.is_empty() {
        log::debug!("nvrtc log for {name}:\n{log}");
    }
    match target {
        // SAFETY: compiled successfully above.
        Target::Cubin(_) => unsafe { nvrtc.cubin(program.raw) },
        // SAFETY: compiled successfully above.
        Target::Ptx(_) => unsafe { nvrtc.ptx(program.raw) },
    }
}

/// An NVRTC program, destroyed on drop.
struct Program<'a> {
    nvrtc: &'a Nvrtc,
    raw: cudarc::nvrtc::sys::nvrtcProgram,
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `compile`, not used after this.
        if let Err(e) = unsafe { self.nvrtc.destroy_program(self.raw) } {
            log::warn!("nvrtc: destroying the program failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubin_for_a_supported_arch_else_ptx_for_the_newest_older_one() {
        let nvrtc_12_9 = [75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121];
        assert_eq!(choose_target(90, &nvrtc_12_9).unwrap(), Target::Cubin(90));
        // A device newer than the compiler: PTX for the newest architecture it knows.
        assert_eq!(choose_target(130, &nvrtc_12_9).unwrap(), Target::Ptx(121));
        assert_eq!(choose_target(95, &nvrtc_12_9).unwrap(), Target::Ptx(90));
        // A device older than anything it supports.
        let err = choose_target(70, &nvrtc_12_9).unwrap_err();
        assert_eq!((err.api(), err.kind()), (Api::Nvrtc, crate::ErrorKind::Unsupported));
        assert!(err.is_environment());
        assert!(err.to_string().contains("sm_70"), "{err}");
        assert!(err.to_string().contains("supports sm_75, sm_80"), "{err}");
    }

    #[test]
    fn compiler_newer_than_the_driver_is_refused_where_its_output_would_not_load() {
        // The pip wheel today (13.5) on the H100's driver (580, CUDA 13.0): a cubin loads.
        assert!(check_compiler_vs_driver((13, 5), 13000, Target::Cubin(90)).is_ok());
        assert!(check_compiler_vs_driver((12, 9), 13000, Target::Cubin(90)).is_ok());
        // ... but its PTX would not: the 13.0 JIT cannot read PTX ISA 9.5.
        let err = check_compiler_vs_driver((13, 5), 13000, Target::Ptx(90)).unwrap_err();
        assert!(err.is_environment(), "{err}");
        assert!(err.to_string().contains("NVRTC 13.5 is newer than the driver (CUDA 13.0)"), "{err}");
        assert!(err.to_string().contains("CUDA 13.0 or older"), "{err}");
        assert!(check_compiler_vs_driver((13, 0), 13000, Target::Ptx(90)).is_ok());
        // A CUDA 13 compiler on a CUDA 12 driver loads nothing.
        let err = check_compiler_vs_driver((13, 0), 12080, Target::Cubin(90)).unwrap_err();
        assert!(err.to_string().contains("CUDA 12.x or older"), "{err}");
    }

    #[test]
    fn the_arch_option_selects_the_output() {
        assert_eq!(Target::Cubin(90).arch_option(), "--gpu-architecture=sm_90");
        assert_eq!(Target::Ptx(90).arch_option(), "--gpu-architecture=compute_90");
    }

    /// Compiles a kernel with the NVRTC on LD_LIBRARY_PATH (no GPU needed). Run with
    /// `cargo test -p vkhip-interop -- --ignored nvrtc_compiles`, e.g. with LD_LIBRARY_PATH
    /// pointing at the lib directory of the `nvidia-cuda-nvrtc` wheel.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_ptx_and_a_cubin_and_reports_the_log() {
        let nvrtc = Nvrtc::get().expect("libnvrtc must be loadable for this test");
        let source = "extern \"C\" __global__ void k(cudaSurfaceObject_t s) { surf2Dwrite(1.0f, s, 0, 0); }";
        let options = |t: Target| vec![t.arch_option()];
        let ptx = compile_with(nvrtc, source, "k.cu", &options(Target::Ptx(90)), Target::Ptx(90)).unwrap();
        assert_eq!(ptx.last(), Some(&0), "PTX must be NUL-terminated for cuModuleLoadData");
        let text = String::from_utf8_lossy(&ptx[..ptx.len() - 1]);
        assert!(text.contains(".entry k("), "no unmangled entry point:\n{text}");
        assert!(text.contains("sust."), "no surface store:\n{text}");
        let cubin =
            compile_with(nvrtc, source, "k.cu", &options(Target::Cubin(90)), Target::Cubin(90)).unwrap();
        assert!(cubin.starts_with(b"\x7fELF"), "a cubin is an ELF image");
        // A broken source gives the compiler's log, not just a status.
        let broken = "extern \"C\" __global__ void k() { nope; }";
        let err =
            compile_with(nvrtc, broken, "k.cu", &options(Target::Ptx(90)), Target::Ptx(90)).unwrap_err();
        assert_eq!((err.kind(), err.call()), (crate::ErrorKind::Compile, "nvrtcCompileProgram"));
        assert!(err.message().contains("nope"), "{err}");
    }
}
