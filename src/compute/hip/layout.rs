//! The interop structs' layout as data: every field's `offset_of!`, every struct's size and the
//! handle-type constants, under the names `hip_runtime_api.h` gives them. `tests/hip_layout.rs`
//! compares this table with what a C compiler computes from the installed header, so a field that
//! moves (or a constant that changes) in a ROCm release fails a test instead of corrupting a call.

use std::mem::{offset_of, size_of};

use super::ffi::{
    ExternalMemoryBufferDesc, ExternalMemoryHandleDesc, ExternalSemaphoreHandleDesc,
    ExternalSemaphoreSignalParams, ExternalSemaphoreWaitParams, EXTERNAL_MEMORY_DEDICATED,
    EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD, EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
    EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD,
};

/// Which headers an entry holds for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// The same value in the 5.x headers (Debian 12's 5.2.3) and in 6.4.
    Rocm5,
    /// Only in the 6.4 headers: a new field, a moved one, a new size or a new constant.
    Rocm64,
}

/// One line of the layout: `hipExternalMemoryHandleDesc.size` → 24, `sizeof(...)` → 104,
/// `hipExternalSemaphoreHandleTypeTimelineSemaphoreFd` → 9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutEntry {
    pub name: &'static str,
    pub value: usize,
    pub since: Since,
}

const fn entry(name: &'static str, value: usize, since: Since) -> LayoutEntry {
    LayoutEntry { name, value, since }
}

/// The layout vkhip passes to the runtime, in the ROCm 6.4 header's names.
pub fn interop_layout() -> Vec<LayoutEntry> {
    use Since::{Rocm5, Rocm64};
    type Mem = ExternalMemoryHandleDesc;
    type Buf = ExternalMemoryBufferDesc;
    type Sem = ExternalSemaphoreHandleDesc;
    type Sig = ExternalSemaphoreSignalParams;
    type Wait = ExternalSemaphoreWaitParams;
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_struct_has_its_size() {
        let layout = interop_layout();
        let mut names: Vec<&str> = layout.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), layout.len(), "duplicate names");
        for s in
            ["hipExternalMemoryHandleDesc", "hipExternalMemoryBufferDesc", "hipExternalSemaphoreHandleDesc"]
        {
            assert!(names.contains(&format!("sizeof({s})").as_str()), "{s}");
        }
        assert!(names.contains(&"sizeof(hipExternalSemaphoreSignalParams)"));
        assert!(names.contains(&"sizeof(hipExternalSemaphoreWaitParams)"));
    }
}
