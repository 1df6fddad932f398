//! hiprtc compiles kernels/sinewave.hip for AMD targets without a GPU, and the code objects are
//! what a GPU of that target would load: checked with the `object` crate (ELF machine, OS/ABI,
//! the target in `e_flags`, the kernel symbol and its descriptor). Runs in CI twice, neither time
//! with an AMD GPU:
//!
//! - On the host, Debian 12's HIP 5.2.3 (libamdhip64-dev; hiprtc inside libamdhip64.so.5,
//!   compiling through comgr 2.4 built against LLVM 15). comgr 2.4's target table stops at
//!   gfx1036 / gfx90c: it has neither gfx942 (MI300, newer than LLVM 15 itself), gfx1100 (RDNA3,
//!   which LLVM 15 knows but comgr 5.2's table does not) nor gfx1201 (RDNA4). For such a target
//!   hiprtc 5.2 aborts the whole process (comgr rejects the ISA name, hiprtc destroys the action
//!   info twice, glibc: "munmap_chunk(): invalid pointer"), so `compile_sinewave` refuses it
//!   beforehand with a compile error; on this toolchain the test asserts exactly that error.
//! - In `.ci/hip-sid.sh`, Debian sid's HIP 6.4.3 (libhiprtc.so.6, comgr 7.0.2): all five
//!   targets — gfx90a, gfx942, gfx1030, gfx1100, gfx1201 — must compile.
//!
//! Any other runtime: a target compiles exactly when its comgr lists it.
#![cfg(feature = "hip")]

use object::read::elf::{ElfFile64, FileHeader};
use object::{Endianness, Object, ObjectSymbol, SymbolKind};
use vkhip::compute::hip::compile_sinewave;
use vkhip::compute::kernel::{SINEWAVE_BATCH_ENTRY, SINEWAVE_ENTRY};
use vkhip_interop::hip::{runtime_version, supported_offload_archs};

/// `ELFOSABI_AMDGPU_HSA`.
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EF_AMDGPU_MACH`: the processor part of `e_flags`.
const EF_AMDGPU_MACH: u32 = 0xff;

/// `EF_AMDGPU_MACH_AMDGCN_*` (LLVM's BinaryFormat/ELF.h, AMDGPUUsage "AMDGPU ELF Header").
fn expected_mach(arch: &str) -> u32 {
    match arch.split(':').next().unwrap() {
        "gfx90a" => 0x3f,
        "gfx942" => 0x4c,
        "gfx1030" => 0x36,
        "gfx1100" => 0x41,
        "gfx1201" => 0x4e,
        other => panic!("no EF_AMDGPU_MACH for {other}"),
    }
}

/// The five targets issue 11 asks the modern toolchain for: CDNA2, CDNA3, RDNA2, RDNA3, RDNA4.
const FIVE_TARGETS: [&str; 5] = ["gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201"];

fn runtime() -> i32 {
    runtime_version().expect("hipRuntimeGetVersion needs no GPU").0
}

/// Debian 12's HIP: runtime 5.2.x.
fn is_hip_5_2() -> bool {
    runtime() / 100_000 == 502
}

/// ROCm 6.4 or newer (Debian sid's 6.4.3 in the sid job).
fn is_hip_6_4_or_newer() -> bool {
    runtime() >= 60_400_000
}

/// What the code object says about itself.
struct CodeObject {
    machine: u16,
    os_abi: u8,
    abi_version: u8,
    flags: u32,
    /// Defined symbols, with their kinds.
    symbols: Vec<(String, SymbolKind)>,
}

fn read_code_object(arch: &str, code: &[u8]) -> CodeObject {
    let file = ElfFile64::<Endianness>::parse(code).unwrap_or_else(|e| panic!("{arch}: not an ELF64: {e}"));
    assert!(file.is_little_endian(), "{arch}: AMDGPU code objects are little-endian");
    let (header, endian) = (file.elf_header(), file.endian());
    let symbols = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| !s.is_undefined())
        .map(|s| (s.name().unwrap_or_default().to_string(), s.kind()))
        .collect();
    CodeObject {
        machine: header.e_machine(endian).0,
        os_abi: header.e_ident().os_abi.0,
        abi_version: header.e_ident().abi_version,
        flags: header.e_flags(endian).0,
        symbols,
    }
}

/// Compile `arch` and check the code object; returns its `e_flags`.
fn assert_compiles(arch: &str) -> u32 {
    let code = compile_sinewave(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
    let co = read_code_object(arch, &code);
    assert_eq!(co.machine, object::elf::EM_AMDGPU.0, "{arch}: not an AMDGPU object");
    assert_eq!(co.os_abi, ELFOSABI_AMDGPU_HSA, "{arch}: not an HSA code object");
    assert_eq!(
        co.flags & EF_AMDGPU_MACH,
        expected_mach(arch),
        "{arch}: wrong EF_AMDGPU_MACH in e_flags {:#x}",
        co.flags
    );
    let has = |name: &str, kind: SymbolKind| co.symbols.iter().any(|(n, k)| n == name && *k == kind);
    assert!(
        has(SINEWAVE_ENTRY, SymbolKind::Text),
        "{arch}: no `{SINEWAVE_ENTRY}` function: {:?}",
        co.symbols
    );
    assert!(
        co.symbols.iter().any(|(n, _)| n == "sinewave.kd"),
        "{arch}: no kernel descriptor: {:?}",
        co.symbols
    );
    // The batch entry (gridDim.z = slots × environments) is in the same code object.
    assert!(
        has(SINEWAVE_BATCH_ENTRY, SymbolKind::Text)
            && co.symbols.iter().any(|(n, _)| *n == format!("{SINEWAVE_BATCH_ENTRY}.kd")),
        "{arch}: no `{SINEWAVE_BATCH_ENTRY}` kernel: {:?}",
        co.symbols
    );
    assert!(
        !co.symbols.iter().any(|(n, _)| n == "vkhip_height"),
        "{arch}: the helper is inlined, not exported"
    );
    eprintln!(
        "{arch}: {} bytes, e_machine {} (EM_AMDGPU), OS/ABI {} (AMDGPU_HSA) ABI version {}, e_flags {:#x} \
         (EF_AMDGPU_MACH {:#x}), defines {SINEWAVE_ENTRY} (FUNC) and sinewave.kd",
        code.len(),
        co.machine,
        co.os_abi,
        co.abi_version,
        co.flags,
        co.flags & EF_AMDGPU_MACH
    );
    co.flags
}

/// The exact refusal on Debian's HIP 5.2.3.
fn assert_refused_on_hip_5_2(arch: &str) {
    let e = compile_sinewave(arch).expect_err("comgr 2.4 has no such target");
    assert_eq!(
        e.to_string(),
        format!(
            "hiprtc: compiling the kernel failed: target {arch} is unknown to the code \
             object manager hiprtc compiles through (/usr/lib/x86_64-linux-gnu/libamd_comgr.so.2.4.0, \
             comgr 2.4, 33 targets); not calling hiprtc, which aborts the process when comgr \
             rejects a target (ROCm 5.2: double amd_comgr_destroy_action_info)"
        )
    );
    eprintln!("{arch}: refused by HIP 5.2.3's comgr 2.4, as expected");
}

/// Neither 5.2 nor >= 6.4: compiles exactly when the installed comgr lists the target.
fn assert_matches_comgr(arch: &str) {
    let known = supported_offload_archs().expect("comgr loads where hiprtc does");
    if known.iter().any(|a| a == arch) {
        assert_compiles(arch);
    } else {
        let e = compile_sinewave(arch).expect_err("target not in comgr's list");
        assert!(
            e.to_string().contains(&format!("target {arch} is unknown to the code object manager")),
            "{e}"
        );
    }
}

/// A target that HIP 5.2.3 cannot compile for: refused there, compiled on >= 6.4.
fn newer_target(arch: &str) {
    if is_hip_5_2() {
        assert_refused_on_hip_5_2(arch);
    } else if is_hip_6_4_or_newer() {
        assert_compiles(arch);
    } else {
        assert_matches_comgr(arch);
    }
}

#[test]
fn gfx90a_cdna2() {
    // Plain target: code for either XNACK and SRAMECC mode (EF_AMDGPU_FEATURE_*_ANY_V4).
    assert_eq!(assert_compiles("gfx90a") & 0xf00, 0x100 | 0x400);
    // The spelling a device reports (gcnArchName with features) reaches the code object:
    // SRAMECC on (0xc00), XNACK off (0x200).
    assert_eq!(assert_compiles("gfx90a:sramecc+:xnack-") & 0xf00, 0xc00 | 0x200);
}

#[test]
fn gfx1030_rdna2() {
    assert_compiles("gfx1030");
}

#[test]
fn gfx942_cdna3() {
    newer_target("gfx942");
}

#[test]
fn gfx1100_rdna3() {
    newer_target("gfx1100");
}

#[test]
fn gfx1201_rdna4() {
    newer_target("gfx1201");
}

#[test]
fn the_toolchain_lists_its_targets() {
    let Some(archs) = supported_offload_archs() else { panic!("comgr must load where hiprtc does") };
    assert!(archs.iter().any(|a| a == "gfx90a") && archs.iter().any(|a| a == "gfx1030"), "{archs:?}");
    if is_hip_5_2() {
        assert_eq!(archs.len(), 33, "{archs:?}");
        assert!(
            !archs.iter().any(|a| a == "gfx942" || a == "gfx940" || a == "gfx1100" || a == "gfx1201"),
            "{archs:?}"
        );
    }
    if is_hip_6_4_or_newer() {
        for arch in FIVE_TARGETS {
            assert!(archs.iter().any(|a| a == arch), "comgr of HIP {} lacks {arch}: {archs:?}", runtime());
        }
    }
    eprintln!("HIP runtime {}: comgr lists {} targets", runtime(), archs.len());
}
