//! hiprtc compiles kernels/sinewave.hip for AMD targets without a GPU, and the code objects
//! define the kernel. Runs in CI (Debian 12, HIP 5.2.3 from libamdhip64-dev, no GPU).
//!
//! Debian 12's toolchain: hiprtc 5.2.3 inside libamdhip64.so.5, compiling through comgr 2.4
//! (libamd-comgr2 5.2.3, linked against LLVM 15). comgr 2.4's target table stops at gfx1036 /
//! gfx90c: it has neither gfx942 (MI300, newer than LLVM 15 itself) nor gfx1100 (RDNA3, which
//! LLVM 15 knows but comgr 5.2's table does not). For such a target hiprtc 5.2 aborts the whole
//! process (comgr rejects the ISA name, hiprtc destroys the action info twice, glibc:
//! "munmap_chunk(): invalid pointer"), so `compile_sinewave` refuses it beforehand with a
//! `Compile` error; on this toolchain the test asserts exactly that error.
#![cfg(feature = "hip")]

use vkhip::compute::hip::{
    code_object_has_symbol, compile_sinewave, runtime_version, supported_offload_archs,
};
use vkhip::compute::kernel::SINEWAVE_ENTRY;

const EM_AMDGPU: u16 = 224;

/// `EF_AMDGPU_MACH_*` (LLVM AMDGPUUsage): the target a code object was built for.
fn expected_mach(arch: &str) -> u32 {
    match arch.split(':').next().unwrap() {
        "gfx90a" => 0x3f,
        "gfx942" => 0x4c,
        "gfx1030" => 0x36,
        "gfx1100" => 0x41,
        other => panic!("no EF_AMDGPU_MACH for {other}"),
    }
}

/// `(e_machine, e_flags)` of an ELF64 LE code object.
fn machine_and_flags(code: &[u8]) -> (u16, u32) {
    assert_eq!(&code[..4], b"\x7fELF", "hiprtc returns an ELF code object");
    assert_eq!((code[4], code[5]), (2, 1), "ELF64, little-endian");
    let machine = u16::from_le_bytes([code[18], code[19]]);
    let flags = u32::from_le_bytes([code[48], code[49], code[50], code[51]]);
    (machine, flags)
}

/// Debian 12's HIP: runtime 5.2.x.
fn is_debian_hip_5_2() -> bool {
    runtime_version().map(|v| v / 100_000 == 502).unwrap_or(false)
}

/// Compile `arch`; returns the code object's `e_flags`.
fn assert_compiles(arch: &str) -> u32 {
    let code = compile_sinewave(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
    assert!(code_object_has_symbol(&code, SINEWAVE_ENTRY), "{arch}: no `{SINEWAVE_ENTRY}` symbol");
    assert!(code_object_has_symbol(&code, "sinewave.kd"), "{arch}: no kernel descriptor");
    assert!(!code_object_has_symbol(&code, "vkhip_height"), "{arch}: the helper is inlined, not exported");
    let (machine, flags) = machine_and_flags(&code);
    assert_eq!(machine, EM_AMDGPU, "{arch}: not an AMDGPU object");
    assert_eq!(flags & 0xff, expected_mach(arch), "{arch}: wrong EF_AMDGPU_MACH in e_flags {flags:#x}");
    eprintln!("{arch}: {} bytes, e_flags {flags:#x}", code.len());
    flags
}

/// The exact refusal on Debian's HIP 5.2.3.
fn assert_refused_on_debian_5_2(arch: &str) {
    let e = compile_sinewave(arch).expect_err("comgr 2.4 has no such target");
    assert_eq!(
        e.to_string(),
        format!(
            "hiprtc: compiling kernels/sinewave.hip failed: target {arch} is unknown to the code \
             object manager hiprtc compiles through (/usr/lib/x86_64-linux-gnu/libamd_comgr.so.2.4.0, \
             comgr 2.4, 33 targets); not calling hiprtc, which aborts the process when comgr \
             rejects a target (ROCm 5.2: double amd_comgr_destroy_action_info)"
        )
    );
}

/// Elsewhere: compiles exactly when the installed comgr lists the target.
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
    if is_debian_hip_5_2() {
        assert_refused_on_debian_5_2("gfx942");
    } else {
        assert_matches_comgr("gfx942");
    }
}

#[test]
fn gfx1100_rdna3() {
    if is_debian_hip_5_2() {
        assert_refused_on_debian_5_2("gfx1100");
    } else {
        assert_matches_comgr("gfx1100");
    }
}

#[test]
fn debian_toolchain_lists_its_targets() {
    let Some(archs) = supported_offload_archs() else { panic!("comgr must load where hiprtc does") };
    assert!(archs.iter().any(|a| a == "gfx90a") && archs.iter().any(|a| a == "gfx1030"), "{archs:?}");
    if is_debian_hip_5_2() {
        assert_eq!(archs.len(), 33, "{archs:?}");
        assert!(!archs.iter().any(|a| a == "gfx942" || a == "gfx940" || a == "gfx1100"), "{archs:?}");
    }
}
