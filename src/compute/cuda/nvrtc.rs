//! Compiling `kernels/sinewave.hip` with NVRTC, through the kernel cache.
//!
//! The kernel is compiled to a cubin for the device's own architecture (`sm_XY`), not to PTX:
//! PTX has to be JIT-compiled by the driver, which refuses PTX from an NVRTC newer than itself
//! (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) — and the NVRTC one installs today (pip: 13.x) is often
//! newer than the driver. A cubin from the same major version loads on an older minor driver
//! (CUDA minor-version compatibility). Only when this NVRTC cannot target the device's
//! architecture (a GPU newer than the compiler) does it fall back to PTX for the newest
//! architecture it knows, which the driver then JIT-compiles for the device.
//!
//! `--fmad=false` keeps `frequency·u + phase` as a rounded multiply then a rounded add, exactly as
//! the CPU reference in `sim.rs` computes it; a fused multiply-add would shift the sine's argument
//! by up to half an ulp. The kernel is bound by its stores, so this costs nothing measurable.

use super::result::Nvrtc;
use crate::compute::kernel::{CacheOutcome, KernelCache, SINEWAVE_SOURCE};
use crate::compute::ComputeError;

type Result<T> = std::result::Result<T, ComputeError>;

/// What NVRTC produces.
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

    /// The full option list for `nvrtcCompileProgram`.
    pub fn options(self) -> Vec<String> {
        vec![self.arch_option(), "--fmad=false".to_string()]
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
        None => Err(ComputeError::Unavailable {
            backend: "cuda",
            reason: format!(
                "this NVRTC cannot build for the device (sm_{arch}); it supports sm_{}",
                supported.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", sm_")
            ),
        }),
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
    let driver = super::format_cuda_version(driver_version);
    let (output, newest) = match target {
        Target::Cubin(_) => ("cubin", format!("{}.x", driver_version / 1000)),
        Target::Ptx(_) => ("PTX", driver.clone()),
    };
    Err(ComputeError::Unavailable {
        backend: "cuda",
        reason: format!(
            "NVRTC {major}.{minor} is newer than the driver (CUDA {driver}), which cannot load \
             its {output}: use an NVRTC of CUDA {newest} or older, or a newer driver"
        ),
    })
}

/// Compile `source` for `target`: the cubin, or the NUL-terminated PTX.
pub fn compile(nvrtc: &Nvrtc, source: &str, target: Target) -> Result<Vec<u8>> {
    compile_with(nvrtc, source, "sinewave.hip", &target.options(), target)
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
        return Err(ComputeError::Compile {
            api: "nvrtc",
            log: if log.is_empty() { e.to_string() } else { format!("{e}\n{log}") },
        });
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

/// The kernel image for a device, from the cache or freshly compiled.
#[derive(Debug)]
pub struct KernelImage {
    pub image: Vec<u8>,
    pub target: Target,
    pub outcome: CacheOutcome,
    /// "NVRTC 13.0", for logs.
    pub compiler: String,
}

/// The `sinewave` image for the device `device` (name, for the cache key) of compute capability
/// `arch`, under a driver reporting `driver_version`. `fresh` bypasses the cache (used when a
/// cached image fails to load; the damaged entry stays, and is bypassed again next time).
pub fn sinewave_image(
    cache: &KernelCache,
    device: &str,
    arch: u32,
    driver_version: i32,
    fresh: bool,
) -> Result<KernelImage> {
    let nvrtc = Nvrtc::get()?;
    let (major, minor) = nvrtc.version()?;
    let compiler = format!("NVRTC {major}.{minor}");
    let target = choose_target(arch, &nvrtc.supported_archs()?)?;
    check_compiler_vs_driver((major, minor), driver_version, target)?;
    let options = target.options().join(" ");
    let device_key = format!("{device} sm_{arch}");
    let driver_key = format!("driver {driver_version}");
    let parts = [SINEWAVE_SOURCE, compiler.as_str(), options.as_str(), &device_key, &driver_key];
    let compile = || compile(nvrtc, SINEWAVE_SOURCE, target);
    let (image, outcome) = if fresh {
        let image = compile()?;
        (image, CacheOutcome::Uncached)
    } else {
        cache.get_or_compile(&parts, compile)?
    };
    Ok(KernelImage { image, target, outcome, compiler })
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
        assert!(matches!(err, ComputeError::Unavailable { backend: "cuda", .. }));
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
        assert!(matches!(err, ComputeError::Unavailable { backend: "cuda", .. }));
        assert!(err.to_string().contains("NVRTC 13.5 is newer than the driver (CUDA 13.0)"), "{err}");
        assert!(err.to_string().contains("CUDA 13.0 or older"), "{err}");
        assert!(check_compiler_vs_driver((13, 0), 13000, Target::Ptx(90)).is_ok());
        // A CUDA 13 compiler on a CUDA 12 driver loads nothing.
        let err = check_compiler_vs_driver((13, 0), 12080, Target::Cubin(90)).unwrap_err();
        assert!(err.to_string().contains("CUDA 12.x or older"), "{err}");
    }

    #[test]
    fn options_select_the_output_and_keep_mul_add_unfused() {
        assert_eq!(Target::Cubin(90).options(), ["--gpu-architecture=sm_90", "--fmad=false"]);
        assert_eq!(Target::Ptx(90).arch_option(), "--gpu-architecture=compute_90");
    }

    /// Compiles the real kernel with the NVRTC on LD_LIBRARY_PATH (no GPU needed). Run with
    /// `cargo test --lib -- --ignored nvrtc_compiles`, e.g. with LD_LIBRARY_PATH pointing at
    /// the lib directory of the `nvidia-cuda-nvrtc` wheel.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_the_kernel_to_vectorised_ptx_and_a_cubin() {
        let nvrtc = Nvrtc::get().expect("libnvrtc must be loadable for this test");
        let (major, minor) = nvrtc.version().unwrap();
        let archs = nvrtc.supported_archs().unwrap();
        eprintln!("NVRTC {major}.{minor}, sm_{archs:?}");

        let ptx = compile(nvrtc, SINEWAVE_SOURCE, Target::Ptx(90)).unwrap();
        assert_eq!(ptx.last(), Some(&0), "PTX must be NUL-terminated for cuModuleLoadData");
        let text = String::from_utf8_lossy(&ptx[..ptx.len() - 1]);
        assert!(text.contains(".entry sinewave("), "no unmangled entry point:\n{text}");
        assert!(text.contains("st.global.v4.f32"), "no 16-byte stores:\n{text}");
        assert!(text.contains(".target sm_90"), "{text}");
        // Six parameters: the pointer and five 32-bit values.
        let params = text.matches(".param .u64 sinewave_param_").count()
            + text.matches(".param .u32 sinewave_param_").count()
            + text.matches(".param .f32 sinewave_param_").count();
        assert_eq!(params, 6, "{text}");
        let dump = std::env::var_os("VKHIP_DUMP_PTX");
        if let Some(path) = dump {
            std::fs::write(path, &ptx[..ptx.len() - 1]).unwrap();
        }

        let cubin = compile(nvrtc, SINEWAVE_SOURCE, Target::Cubin(90)).unwrap();
        assert!(cubin.starts_with(b"\x7fELF"), "a cubin is an ELF image");

        // A broken source gives the compiler's log, not just a status.
        let err = compile(nvrtc, "extern \"C\" __global__ void k() { nope; }", Target::Ptx(90)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ComputeError::Compile { api: "nvrtc", .. }));
        assert!(text.contains("nope"), "{text}");
    }
}
