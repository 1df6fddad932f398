//! The interop structs' layout against the installed `hip_runtime_api.h`: every field's
//! `offset_of!`, every struct's size and the handle-type constants, under the names the header
//! gives them, compared with what a C compiler computes from the header, so a field that moves
//! (or a constant that changes) in a ROCm release fails a test instead of corrupting a call.
//!
//! - Against a ROCm >= 6.4 header (Debian sid's 6.4.3 in `.ci/hip-sid.sh`): every entry must be
//!   present and equal, the timeline handle type and the mipmapped-array descriptor included.
//! - Against an older header (Debian 12's 5.2.3 on the host): the entries 5.x shares with 6.4
//!   must be equal (the 5.x-compatible prefix); the 6.4-only ones are absent from the header.
//!
//! Needs a C compiler (`cc`) and the header of the ROCm install whose libamdhip64 the test runs.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::process::Command;

use super::ffi::{
    ExternalMemoryBufferDesc, ExternalMemoryHandleDesc, ExternalSemaphoreHandleDesc,
    ExternalSemaphoreSignalParams, ExternalSemaphoreWaitParams, EXTERNAL_MEMORY_DEDICATED,
    EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD, EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
    EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD,
};
use super::image_ffi::ExternalMemoryMipmappedArrayDesc;

/// Which headers an entry holds for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Since {
    /// The same value in the 5.x headers (Debian 12's 5.2.3) and in 6.4.
    Rocm5,
    /// Only in the 6.4 headers: a new field, a moved one, a new size or a new constant.
    Rocm64,
}

/// One line of the layout: `hipExternalMemoryHandleDesc.size` → 24, `sizeof(...)` → 104,
/// `hipExternalSemaphoreHandleTypeTimelineSemaphoreFd` → 9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LayoutEntry {
    name: &'static str,
    value: usize,
    since: Since,
}

const fn entry(name: &'static str, value: usize, since: Since) -> LayoutEntry {
    LayoutEntry { name, value, since }
}

/// The layout the crate passes to the runtime, in the ROCm 6.4 header's names.
fn interop_layout() -> Vec<LayoutEntry> {
    use Since::{Rocm5, Rocm64};
    type Mem = ExternalMemoryHandleDesc;
    type Buf = ExternalMemoryBufferDesc;
    type Sem = ExternalSemaphoreHandleDesc;
    type Sig = ExternalSemaphoreSignalParams;
    type Wait = ExternalSemaphoreWaitParams;
    type Mip = ExternalMemoryMipmappedArrayDesc;
    vec![
        entry("hipExternalMemoryHandleDesc.type", offset_of!(Mem, type_), Rocm5),
        entry("hipExternalMemoryHandleDesc.handle", offset_of!(Mem, handle), Rocm5),
        entry("hipExternalMemoryHandleDesc.size", offset_of!(Mem, size), Rocm5),
        entry("hipExternalMemoryHandleDesc.flags", offset_of!(Mem, flags), Rocm5),
        entry("hipExternalMemoryHandleDesc.reserved", offset_of!(Mem, reserved), Rocm64),
        entry("sizeof(hipExternalMemoryHandleDesc)", size_of::<Mem>(), Rocm64),
        entry("hipExternalMemoryBufferDesc.offset", offset_of!(Buf, offset), Rocm5),
        entry("hipExternalMemoryBufferDesc.size", offset_of!(Buf, size), Rocm5),
        entry("hipExternalMemoryBufferDesc.flags", offset_of!(Buf, flags), Rocm5),
        entry("hipExternalMemoryBufferDesc.reserved", offset_of!(Buf, reserved), Rocm64),
        entry("sizeof(hipExternalMemoryBufferDesc)", size_of::<Buf>(), Rocm64),
        entry("hipExternalSemaphoreHandleDesc.type", offset_of!(Sem, type_), Rocm5),
        entry("hipExternalSemaphoreHandleDesc.handle", offset_of!(Sem, handle), Rocm5),
        entry("hipExternalSemaphoreHandleDesc.flags", offset_of!(Sem, flags), Rocm5),
        entry("hipExternalSemaphoreHandleDesc.reserved", offset_of!(Sem, reserved), Rocm64),
        entry("sizeof(hipExternalSemaphoreHandleDesc)", size_of::<Sem>(), Rocm64),
        entry("hipExternalSemaphoreSignalParams.params.fence.value", offset_of!(Sig, fence_value), Rocm5),
        entry("hipExternalSemaphoreSignalParams.params.nvSciSync", offset_of!(Sig, nv_sci_sync), Rocm64),
        entry(
            "hipExternalSemaphoreSignalParams.params.keyedMutex.key",
            offset_of!(Sig, keyed_mutex_key),
            Rocm64,
        ),
        entry("hipExternalSemaphoreSignalParams.params.reserved", offset_of!(Sig, params_reserved), Rocm64),
        entry("hipExternalSemaphoreSignalParams.flags", offset_of!(Sig, flags), Rocm64),
        entry("hipExternalSemaphoreSignalParams.reserved", offset_of!(Sig, reserved), Rocm64),
        entry("sizeof(hipExternalSemaphoreSignalParams)", size_of::<Sig>(), Rocm64),
        entry("hipExternalSemaphoreWaitParams.params.fence.value", offset_of!(Wait, fence_value), Rocm5),
        entry("hipExternalSemaphoreWaitParams.params.nvSciSync", offset_of!(Wait, nv_sci_sync), Rocm64),
        entry(
            "hipExternalSemaphoreWaitParams.params.keyedMutex.key",
            offset_of!(Wait, keyed_mutex_key),
            Rocm64,
        ),
        entry(
            "hipExternalSemaphoreWaitParams.params.keyedMutex.timeoutMs",
            offset_of!(Wait, keyed_mutex_timeout_ms),
            Rocm64,
        ),
        entry("hipExternalSemaphoreWaitParams.params.reserved", offset_of!(Wait, params_reserved), Rocm64),
        entry("hipExternalSemaphoreWaitParams.flags", offset_of!(Wait, flags), Rocm64),
        entry("hipExternalSemaphoreWaitParams.reserved", offset_of!(Wait, reserved), Rocm64),
        entry("sizeof(hipExternalSemaphoreWaitParams)", size_of::<Wait>(), Rocm64),
        entry("hipExternalMemoryHandleTypeOpaqueFd", EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD as usize, Rocm5),
        entry(
            "hipExternalSemaphoreHandleTypeOpaqueFd",
            EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD as usize,
            Rocm5,
        ),
        entry(
            "hipExternalSemaphoreHandleTypeTimelineSemaphoreFd",
            EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD as usize,
            Rocm64,
        ),
        entry("hipExternalMemoryDedicated", EXTERNAL_MEMORY_DEDICATED as usize, Rocm64),
        entry("hipExternalMemoryMipmappedArrayDesc.offset", offset_of!(Mip, offset), Rocm64),
        entry("hipExternalMemoryMipmappedArrayDesc.formatDesc", offset_of!(Mip, format_desc), Rocm64),
        entry("hipExternalMemoryMipmappedArrayDesc.extent", offset_of!(Mip, extent), Rocm64),
        entry("hipExternalMemoryMipmappedArrayDesc.flags", offset_of!(Mip, flags), Rocm64),
        entry("hipExternalMemoryMipmappedArrayDesc.numLevels", offset_of!(Mip, num_levels), Rocm64),
        entry("sizeof(hipExternalMemoryMipmappedArrayDesc)", size_of::<Mip>(), Rocm64),
    ]
}

const PROGRAM: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <hip/hip_runtime_api.h>
#define OFF(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))
#define SIZE(T) printf("sizeof(%s) %zu\n", #T, sizeof(T))
#define VALUE(c) printf("%s %d\n", #c, (int)(c))
int main(void) {
  printf("HIP_VERSION %d\n", HIP_VERSION);
  OFF(hipExternalMemoryHandleDesc, type);
  OFF(hipExternalMemoryHandleDesc, handle);
  OFF(hipExternalMemoryHandleDesc, size);
  OFF(hipExternalMemoryHandleDesc, flags);
  OFF(hipExternalMemoryBufferDesc, offset);
  OFF(hipExternalMemoryBufferDesc, size);
  OFF(hipExternalMemoryBufferDesc, flags);
  OFF(hipExternalSemaphoreHandleDesc, type);
  OFF(hipExternalSemaphoreHandleDesc, handle);
  OFF(hipExternalSemaphoreHandleDesc, flags);
  OFF(hipExternalSemaphoreSignalParams, params.fence.value);
  OFF(hipExternalSemaphoreSignalParams, params.keyedMutex.key);
  OFF(hipExternalSemaphoreSignalParams, params.reserved);
  OFF(hipExternalSemaphoreSignalParams, flags);
  OFF(hipExternalSemaphoreSignalParams, reserved);
  SIZE(hipExternalSemaphoreSignalParams);
  OFF(hipExternalSemaphoreWaitParams, params.fence.value);
  OFF(hipExternalSemaphoreWaitParams, params.keyedMutex.key);
  OFF(hipExternalSemaphoreWaitParams, params.keyedMutex.timeoutMs);
  OFF(hipExternalSemaphoreWaitParams, params.reserved);
  OFF(hipExternalSemaphoreWaitParams, flags);
  OFF(hipExternalSemaphoreWaitParams, reserved);
  SIZE(hipExternalSemaphoreWaitParams);
  VALUE(hipExternalMemoryHandleTypeOpaqueFd);
  VALUE(hipExternalSemaphoreHandleTypeOpaqueFd);
#if HIP_VERSION >= 60400000
  OFF(hipExternalMemoryHandleDesc, reserved);
  SIZE(hipExternalMemoryHandleDesc);
  OFF(hipExternalMemoryBufferDesc, reserved);
  SIZE(hipExternalMemoryBufferDesc);
  OFF(hipExternalSemaphoreHandleDesc, reserved);
  SIZE(hipExternalSemaphoreHandleDesc);
  OFF(hipExternalSemaphoreSignalParams, params.nvSciSync);
  OFF(hipExternalSemaphoreWaitParams, params.nvSciSync);
  VALUE(hipExternalSemaphoreHandleTypeTimelineSemaphoreFd);
  VALUE(hipExternalMemoryDedicated);
  OFF(hipExternalMemoryMipmappedArrayDesc, offset);
  OFF(hipExternalMemoryMipmappedArrayDesc, formatDesc);
  OFF(hipExternalMemoryMipmappedArrayDesc, extent);
  OFF(hipExternalMemoryMipmappedArrayDesc, flags);
  OFF(hipExternalMemoryMipmappedArrayDesc, numLevels);
  SIZE(hipExternalMemoryMipmappedArrayDesc);
#endif
  return 0;
}
"#;

/// The `include` directory of the ROCm install whose libamdhip64 this process runs: the nearest
/// ancestor of the mapped library that has `include/hip/hip_runtime_api.h` (/usr/include for
/// Debian's /usr/lib/x86_64-linux-gnu/libamdhip64.so.5, /opt/rocm/include for /opt/rocm/lib).
fn include_dir() -> std::path::PathBuf {
    super::ffi::runtime_version().expect("libamdhip64 answers without a GPU");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let library = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("libamdhip64.so"))
        .expect("libamdhip64 is mapped");
    std::path::Path::new(library)
        .ancestors()
        .map(|dir| dir.join("include"))
        .find(|include| include.join("hip/hip_runtime_api.h").is_file())
        .unwrap_or_else(|| panic!("no include/hip/hip_runtime_api.h above {library}"))
}

/// The header's layout as the C compiler sees it, and its `HIP_VERSION`.
fn header_layout() -> (i64, BTreeMap<String, usize>) {
    let include = include_dir().display().to_string();
    let dir = std::env::temp_dir().join(format!("vkhip-interop-hip-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("layout.c"), dir.join("layout"));
    std::fs::write(&src, PROGRAM).unwrap();
    let cc = "cc";
    let out = Command::new(cc)
        .args(["-D__HIP_PLATFORM_AMD__", "-I", &include, "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(out.status.success(), "{cc} against {include}: {}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    std::fs::remove_dir_all(&dir).ok();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let (name, value) = line.rsplit_once(' ').unwrap();
        map.insert(name.to_string(), value.parse::<i64>().unwrap());
    }
    let version = map.remove("HIP_VERSION").expect("HIP_VERSION printed");
    (version, map.into_iter().map(|(k, v)| (k, usize::try_from(v).unwrap())).collect())
}

#[test]
fn names_are_unique_and_every_struct_has_its_size() {
    let layout = interop_layout();
    let mut names: Vec<&str> = layout.iter().map(|e| e.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), layout.len(), "duplicate names");
    for s in [
        "hipExternalMemoryHandleDesc",
        "hipExternalMemoryBufferDesc",
        "hipExternalSemaphoreHandleDesc",
        "hipExternalSemaphoreSignalParams",
        "hipExternalSemaphoreWaitParams",
        "hipExternalMemoryMipmappedArrayDesc",
    ] {
        assert!(names.contains(&format!("sizeof({s})").as_str()), "{s}");
    }
}

#[test]
fn interop_structs_match_the_installed_header() {
    let (version, header) = header_layout();
    let ours = interop_layout();
    let full = version >= 60_400_000;
    let mut compared = 0;
    let mut wrong = Vec::new();
    for e in &ours {
        if !full && e.since == Since::Rocm64 {
            continue;
        }
        match header.get(e.name) {
            Some(&v) if v == e.value => compared += 1,
            Some(&v) => wrong.push(format!("{}: crate {} header {v}", e.name, e.value)),
            None => wrong.push(format!("{}: not in the header (crate {})", e.name, e.value)),
        }
    }
    assert!(wrong.is_empty(), "layout differs from HIP {version}'s header:\n{}", wrong.join("\n"));
    if full {
        let ours: Vec<&str> = ours.iter().map(|e| e.name).collect();
        let extra: Vec<&String> = header.keys().filter(|k| !ours.contains(&k.as_str())).collect();
        assert!(extra.is_empty(), "header entries the crate does not list: {extra:?}");
        assert_eq!(header["hipExternalSemaphoreHandleTypeTimelineSemaphoreFd"], 9);
    }
    eprintln!(
        "HIP_VERSION {version}: {compared} layout entries equal ({})",
        if full { "the whole ROCm 6.4 layout" } else { "the 5.x-compatible prefix" }
    );
}
