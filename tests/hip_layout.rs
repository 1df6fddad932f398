//! The interop structs vkhip hands to HIP, against the installed `hip_runtime_api.h`: a C program
//! compiled against the header prints every field's `offsetof`, every struct's `sizeof` and the
//! handle-type constants; the test compares them with `vkhip::compute::hip::interop_layout()`
//! (`offset_of!` on the Rust structs).
//!
//! - Against a ROCm >= 6.4 header (Debian sid's 6.4.3 in `.ci/hip-sid.sh`): every entry must be
//!   present and equal, the timeline handle type included. Any moved field fails.
//! - Against an older header (Debian 12's 5.2.3 on the host): the entries 5.x shares with 6.4
//!   must be equal (the 5.x-compatible prefix); the 6.4-only ones are absent from the header.
//!
//! Needs a C compiler (`cc`, or `$CC`) and the header under `$HIP_PATH/include` (default /usr).
#![cfg(feature = "hip")]

use std::collections::BTreeMap;
use std::process::Command;

use vkhip::compute::hip::{interop_layout, Since};

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
#endif
  return 0;
}
"#;

/// The header's layout as the C compiler sees it, and its `HIP_VERSION`.
fn header_layout() -> (i64, BTreeMap<String, usize>) {
    let hip_path = std::env::var("HIP_PATH").unwrap_or_else(|_| "/usr".into());
    let include = format!("{hip_path}/include");
    let dir = std::env::temp_dir().join(format!("vkhip-hip-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("layout.c"), dir.join("layout"));
    std::fs::write(&src, PROGRAM).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
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
            Some(&v) => wrong.push(format!("{}: vkhip {} header {v}", e.name, e.value)),
            None => wrong.push(format!("{}: not in the header (vkhip {})", e.name, e.value)),
        }
    }
    assert!(wrong.is_empty(), "layout differs from HIP {version}'s header:\n{}", wrong.join("\n"));
    if full {
        let ours: Vec<&str> = ours.iter().map(|e| e.name).collect();
        let extra: Vec<&String> = header.keys().filter(|k| !ours.contains(&k.as_str())).collect();
        assert!(extra.is_empty(), "header entries vkhip does not list: {extra:?}");
        assert_eq!(header["hipExternalSemaphoreHandleTypeTimelineSemaphoreFd"], 9);
    }
    eprintln!(
        "HIP_VERSION {version}: {compared} layout entries equal ({})",
        if full { "the whole ROCm 6.4 layout" } else { "the 5.x-compatible prefix" }
    );
}
