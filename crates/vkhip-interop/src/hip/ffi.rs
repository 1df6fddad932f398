//! The binding layer for libamdhip64: the only place where a `hipError_t` exists.
//!
//! Everything above this module sees `Result<_, Error>`; a failed call becomes
//! [`Error::failed`]`(Api::Hip, call, status, message)` with the status kept as a number and
//! `hipGetErrorName` (and `hipGetErrorString` where it says more) as the message.
//!
//! Why the functions are declared here and not taken from `hip-runtime-sys`: that crate's
//! pre-generated bindings (HIP 5.4 headers) return `hipError_t` as a Rust `enum` and take
//! `hipDeviceAttribute_t` / handle types as Rust enums. A runtime newer than 5.4 can return a
//! status the enum does not list, and a Rust enum holding an unlisted value is undefined
//! behaviour. So the calls below return a plain `c_int` ([`HipStatus`]) and take plain integers;
//! `hip-runtime-sys` is still what links `libamdhip64` (its build script finds `HIP_PATH`) and
//! its structs are used to check our layouts at compile time.
//!
//! The interop structs are declared here too, field for field in the layout of ROCm 6.4's
//! `hip_runtime_api.h` (Debian sid's libamdhip64-dev 6.4.3), which is a superset of the 5.x
//! layout: ROCm 6 appended `reserved[16]` to the descriptors and inserted an `nvSciSync` member
//! into the semaphore parameters, which moves their `flags` from offset 64 to 72. Every field a
//! 5.x runtime reads either sits at the same offset in both (descriptors, the fence value) or
//! falls on a field that is always zero here (the 5.x `flags` at 64 is inside 6.4's
//! `params.reserved`), and semaphore parameters are always passed one at a time, so the array
//! stride never matters. So one layout serves 5.2 to 7.x and no cfg is needed: what differs
//! between runtimes is behaviour, decided at run time from `hipRuntimeGetVersion` (the timeline
//! handle type is offered only to runtimes >= 6.4, see `FIRST_TIMELINE_RUNTIME`).
//!
//! The image calls are not here but in `image_ffi`, resolved at run time.
//!
//! Three checks keep the layouts honest: compile-time asserts below against the offsets read
//! from the 6.4.3 header (cited in place) and against hip-runtime-sys's 5.4 structs; the
//! `layout` unit test compiles a C program against the installed header and fails when any
//! offset differs (run against 6.4 by `.ci/hip-sid.sh`, against 5.2.3 on the host).
#![allow(non_snake_case)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use hip_runtime_sys as sys;

use crate::error::{Api, Error, Result};

/// A raw `hipError_t`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HipStatus(pub c_int);

impl HipStatus {
    pub const SUCCESS: HipStatus = HipStatus(0);
    pub const NO_DEVICE: HipStatus = HipStatus(100);
    pub const INSUFFICIENT_DRIVER: HipStatus = HipStatus(35);
    /// `hipErrorNotReady`: the work before an event (or on a stream) has not completed yet.
    pub const NOT_READY: HipStatus = HipStatus(600);
    /// `hipErrorUnknown`: what `hipGetErrorName` answers for any value it does not know.
    pub const UNKNOWN: HipStatus = HipStatus(999);
}

/// Opaque runtime handles (`hipStream_t`, `hipEvent_t`, ...). HIP defines them as pointers to
/// incomplete types; only their identity matters here.
pub type RawStream = *mut c_void;
pub type RawEvent = *mut c_void;
pub type RawModule = *mut c_void;
pub type RawFunction = *mut c_void;
pub type RawExternalMemory = *mut c_void;
pub type RawExternalSemaphore = *mut c_void;

// --- constants (values identical in the 5.2 headers, the 5.4 bindings and the 6.x/7.x headers) --

/// `hipStreamNonBlocking`: the stream does not synchronise with the null stream.
pub const STREAM_NON_BLOCKING: c_uint = 0x1;
/// `hipStreamPerThread` (hip_runtime_api.h: `((hipStream_t)2)`): the calling thread's default
/// stream, where HIP reads a stream handle; as CUDA's `CU_STREAM_PER_THREAD`, 2 in DLPack's numbering.
pub const STREAM_PER_THREAD: usize = 2;
/// `hipEventDefault`.
pub const EVENT_DEFAULT: c_uint = 0x0;
/// `hipEventDisableTiming`.
pub const EVENT_DISABLE_TIMING: c_uint = 0x2;
/// `hipExternalMemoryHandleTypeOpaqueFd`.
pub const EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD: u32 = 1;
/// `hipExternalMemoryDedicated`: defined from ROCm 6 on (absent from the 5.x headers, where the
/// runtime ignores `flags`; ROCm 6's `hipImportExternalMemory` accepts 0 or this value).
pub const EXTERNAL_MEMORY_DEDICATED: u32 = 0x1;
/// `hipExternalSemaphoreHandleTypeOpaqueFd` (a binary Vulkan semaphore).
pub const EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD: u32 = 1;
/// `hipExternalSemaphoreHandleTypeTimelineSemaphoreFd`: only in the HIP >= 6.4 headers; older
/// runtimes do not know the value.
pub const EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD: u32 = 9;
/// The first runtime whose headers define the timeline handle type (`HIP_VERSION` encoding).
pub const FIRST_TIMELINE_RUNTIME: i32 = 60_400_000;

/// `hipDeviceAttribute_t` values used here (unchanged from 5.2 to 7.x; checked against the
/// bindings in the tests). Not `hipDeviceAttributePciDomainID`: HIP 5.x's `hipDeviceGetAttribute`
/// has no case for it and answers `hipErrorInvalidValue`; the domain comes from
/// `hipDeviceGetPCIBusId` instead.
pub mod attr {
    use std::ffi::c_int;
    pub const MULTIPROCESSOR_COUNT: c_int = 63;
    pub const PCI_BUS_ID: c_int = 67;
    pub const PCI_DEVICE_ID: c_int = 68;
}

// --- interop structs (ROCm 6 layout, 5.x-compatible prefix) --------------------------------------

#[repr(C)]
#[derive(Clone, Copy)]
pub union HandleUnion {
    pub fd: c_int,
    /// `win32 { void* handle; const void* name; }`: sizes the union as the headers do.
    pub win32: [*mut c_void; 2],
}

/// `hipExternalMemoryHandleDesc`.
#[repr(C)]
pub struct ExternalMemoryHandleDesc {
    pub type_: u32,
    pub handle: HandleUnion,
    pub size: u64,
    pub flags: u32,
    pub reserved: [u32; 16],
}

/// `hipExternalMemoryBufferDesc`.
#[repr(C)]
pub struct ExternalMemoryBufferDesc {
    pub offset: u64,
    pub size: u64,
    pub flags: u32,
    pub reserved: [u32; 16],
}

/// `hipExternalSemaphoreHandleDesc`.
#[repr(C)]
pub struct ExternalSemaphoreHandleDesc {
    pub type_: u32,
    pub handle: HandleUnion,
    pub flags: u32,
    pub reserved: [u32; 16],
}

/// `hipExternalSemaphoreSignalParams` (ROCm 6.4 layout: `params { fence { value }, nvSciSync,
/// keyedMutex { key }, reserved[12] }, flags, reserved[16]`).
#[repr(C)]
pub struct ExternalSemaphoreSignalParams {
    pub fence_value: u64,
    /// `nvSciSync` (a union of `void*` and `unsigned long long`); 6.x only.
    pub nv_sci_sync: u64,
    pub keyed_mutex_key: u64,
    pub params_reserved: [u32; 12],
    pub flags: u32,
    pub reserved: [u32; 16],
}

impl ExternalSemaphoreSignalParams {
    pub fn with_value(fence_value: u64) -> Self {
        ExternalSemaphoreSignalParams {
            fence_value,
            nv_sci_sync: 0,
            keyed_mutex_key: 0,
            params_reserved: [0; 12],
            flags: 0,
            reserved: [0; 16],
        }
    }
}

/// `hipExternalSemaphoreWaitParams` (ROCm 6.4 layout: `params { fence { value }, nvSciSync,
/// keyedMutex { key, timeoutMs }, reserved[10] }, flags, reserved[16]`).
#[repr(C)]
pub struct ExternalSemaphoreWaitParams {
    pub fence_value: u64,
    /// `nvSciSync` (a union of `void*` and `unsigned long long`); 6.x only.
    pub nv_sci_sync: u64,
    pub keyed_mutex_key: u64,
    pub keyed_mutex_timeout_ms: u32,
    /// The C struct `keyedMutex { u64 key; u32 timeoutMs; }` is padded to 16 bytes.
    pub keyed_mutex_padding: u32,
    pub params_reserved: [u32; 10],
    pub flags: u32,
    pub reserved: [u32; 16],
}

impl ExternalSemaphoreWaitParams {
    pub fn with_value(fence_value: u64) -> Self {
        ExternalSemaphoreWaitParams {
            fence_value,
            nv_sci_sync: 0,
            keyed_mutex_key: 0,
            keyed_mutex_timeout_ms: 0,
            keyed_mutex_padding: 0,
            params_reserved: [0; 10],
            flags: 0,
            reserved: [0; 16],
        }
    }
}

// Compile-time layout checks against ROCm 6.4.3's hip_runtime_api.h (Debian sid libamdhip64-dev
// 6.4.3-5, lines 1213-1330; offsets as gcc computes them there, see the layout test in hip/layout.rs).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(ExternalMemoryHandleDesc, type_) == 0);
    assert!(offset_of!(ExternalMemoryHandleDesc, handle) == 8);
    assert!(offset_of!(ExternalMemoryHandleDesc, size) == 24);
    assert!(offset_of!(ExternalMemoryHandleDesc, flags) == 32);
    assert!(offset_of!(ExternalMemoryHandleDesc, reserved) == 36);
    assert!(size_of::<ExternalMemoryHandleDesc>() == 104);
    assert!(offset_of!(ExternalMemoryBufferDesc, offset) == 0);
    assert!(offset_of!(ExternalMemoryBufferDesc, size) == 8);
    assert!(offset_of!(ExternalMemoryBufferDesc, flags) == 16);
    assert!(offset_of!(ExternalMemoryBufferDesc, reserved) == 20);
    assert!(size_of::<ExternalMemoryBufferDesc>() == 88);
    assert!(offset_of!(ExternalSemaphoreHandleDesc, type_) == 0);
    assert!(offset_of!(ExternalSemaphoreHandleDesc, handle) == 8);
    assert!(offset_of!(ExternalSemaphoreHandleDesc, flags) == 24);
    assert!(offset_of!(ExternalSemaphoreHandleDesc, reserved) == 28);
    assert!(size_of::<ExternalSemaphoreHandleDesc>() == 96);
    assert!(offset_of!(ExternalSemaphoreSignalParams, nv_sci_sync) == 8);
    assert!(offset_of!(ExternalSemaphoreSignalParams, keyed_mutex_key) == 16);
    assert!(offset_of!(ExternalSemaphoreSignalParams, params_reserved) == 24);
    assert!(offset_of!(ExternalSemaphoreSignalParams, flags) == 72);
    assert!(size_of::<ExternalSemaphoreSignalParams>() == 144);
    assert!(offset_of!(ExternalSemaphoreWaitParams, keyed_mutex_timeout_ms) == 24);
    assert!(offset_of!(ExternalSemaphoreWaitParams, params_reserved) == 32);
    assert!(offset_of!(ExternalSemaphoreWaitParams, flags) == 72);
    assert!(size_of::<ExternalSemaphoreWaitParams>() == 144);
};

// Compile-time layout checks against the generated (5.4) structs, which match Debian's 5.2.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(
        offset_of!(ExternalMemoryHandleDesc, type_) == offset_of!(sys::hipExternalMemoryHandleDesc_st, type_)
    );
    assert!(
        offset_of!(ExternalMemoryHandleDesc, handle)
            == offset_of!(sys::hipExternalMemoryHandleDesc_st, handle)
    );
    assert!(
        offset_of!(ExternalMemoryHandleDesc, size) == offset_of!(sys::hipExternalMemoryHandleDesc_st, size)
    );
    assert!(
        offset_of!(ExternalMemoryHandleDesc, flags) == offset_of!(sys::hipExternalMemoryHandleDesc_st, flags)
    );
    assert!(size_of::<ExternalMemoryHandleDesc>() >= size_of::<sys::hipExternalMemoryHandleDesc_st>());
    assert!(
        offset_of!(ExternalMemoryBufferDesc, offset)
            == offset_of!(sys::hipExternalMemoryBufferDesc_st, offset)
    );
    assert!(
        offset_of!(ExternalMemoryBufferDesc, size) == offset_of!(sys::hipExternalMemoryBufferDesc_st, size)
    );
    assert!(
        offset_of!(ExternalMemoryBufferDesc, flags) == offset_of!(sys::hipExternalMemoryBufferDesc_st, flags)
    );
    assert!(
        offset_of!(ExternalSemaphoreHandleDesc, handle)
            == offset_of!(sys::hipExternalSemaphoreHandleDesc_st, handle)
    );
    assert!(
        offset_of!(ExternalSemaphoreHandleDesc, flags)
            == offset_of!(sys::hipExternalSemaphoreHandleDesc_st, flags)
    );
    // Semaphore parameters: the 5.x structs are no larger, and the 5.x `flags` (offset 64) falls
    // inside 6.4's `params.reserved`, which is always zero here.
    assert!(
        size_of::<ExternalSemaphoreSignalParams>() >= size_of::<sys::hipExternalSemaphoreSignalParams_st>()
    );
    assert!(size_of::<ExternalSemaphoreWaitParams>() >= size_of::<sys::hipExternalSemaphoreWaitParams_st>());
    assert!(
        offset_of!(sys::hipExternalSemaphoreSignalParams_st, flags)
            >= offset_of!(ExternalSemaphoreSignalParams, params_reserved)
    );
    assert!(
        offset_of!(sys::hipExternalSemaphoreSignalParams_st, flags) + 4
            <= offset_of!(ExternalSemaphoreSignalParams, flags)
    );
    assert!(
        offset_of!(sys::hipExternalSemaphoreWaitParams_st, flags)
            >= offset_of!(ExternalSemaphoreWaitParams, params_reserved)
    );
    assert!(
        offset_of!(sys::hipExternalSemaphoreWaitParams_st, flags) + 4
            <= offset_of!(ExternalSemaphoreWaitParams, flags)
    );
    // hipDeviceProp_t as `hipGetDeviceProperties` fills it: the 5.x layout, kept by ROCm 6 and 7
    // under the same symbol as `hipDeviceProp_tR0000` (6.x headers map the name to ...R0600).
    assert!(size_of::<sys::hipDeviceProp_t>() == 792);
    assert!(offset_of!(sys::hipDeviceProp_t, pciDomainID) == 364);
    assert!(offset_of!(sys::hipDeviceProp_t, pciBusID) == 368);
    assert!(offset_of!(sys::hipDeviceProp_t, pciDeviceID) == 372);
    assert!(offset_of!(sys::hipDeviceProp_t, gcnArchName) == 396);
};

// --- declarations ----------------------------------------------------------------------------

// Linked through hip-runtime-sys (`cargo:rustc-link-lib=dylib=amdhip64`).
extern "C" {
    fn hipGetErrorName(status: HipStatus) -> *const c_char;
    fn hipGetErrorString(status: HipStatus) -> *const c_char;
    fn hipRuntimeGetVersion(version: *mut c_int) -> HipStatus;
    fn hipDriverGetVersion(version: *mut c_int) -> HipStatus;
    fn hipGetDeviceCount(count: *mut c_int) -> HipStatus;
    fn hipSetDevice(device: c_int) -> HipStatus;
    fn hipDeviceGetAttribute(value: *mut c_int, attr: c_int, device: c_int) -> HipStatus;
    fn hipDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> HipStatus;
    fn hipDeviceGetPCIBusId(bus_id: *mut c_char, len: c_int, device: c_int) -> HipStatus;
    fn hipGetDeviceProperties(prop: *mut sys::hipDeviceProp_t, device: c_int) -> HipStatus;

    fn hipStreamCreateWithFlags(stream: *mut RawStream, flags: c_uint) -> HipStatus;
    fn hipStreamSynchronize(stream: RawStream) -> HipStatus;
    fn hipStreamDestroy(stream: RawStream) -> HipStatus;

    fn hipEventCreateWithFlags(event: *mut RawEvent, flags: c_uint) -> HipStatus;
    fn hipEventRecord(event: RawEvent, stream: RawStream) -> HipStatus;
    fn hipEventSynchronize(event: RawEvent) -> HipStatus;
    fn hipEventQuery(event: RawEvent) -> HipStatus;
    fn hipEventElapsedTime(ms: *mut f32, start: RawEvent, stop: RawEvent) -> HipStatus;
    fn hipEventDestroy(event: RawEvent) -> HipStatus;

    fn hipModuleLoadData(module: *mut RawModule, image: *const c_void) -> HipStatus;
    fn hipModuleGetFunction(function: *mut RawFunction, module: RawModule, name: *const c_char) -> HipStatus;
    fn hipModuleUnload(module: RawModule) -> HipStatus;
    fn hipModuleLaunchKernel(
        f: RawFunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        shared_mem_bytes: c_uint,
        stream: RawStream,
        kernel_params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> HipStatus;
    fn hipMemsetD32Async(dst: *mut c_void, value: c_int, count: usize, stream: RawStream) -> HipStatus;
    fn hipFree(ptr: *mut c_void) -> HipStatus;

    fn hipImportExternalMemory(
        out: *mut RawExternalMemory,
        desc: *const ExternalMemoryHandleDesc,
    ) -> HipStatus;
    fn hipExternalMemoryGetMappedBuffer(
        ptr: *mut *mut c_void,
        mem: RawExternalMemory,
        desc: *const ExternalMemoryBufferDesc,
    ) -> HipStatus;
    fn hipDestroyExternalMemory(mem: RawExternalMemory) -> HipStatus;
    fn hipImportExternalSemaphore(
        out: *mut RawExternalSemaphore,
        desc: *const ExternalSemaphoreHandleDesc,
    ) -> HipStatus;
    fn hipSignalExternalSemaphoresAsync(
        sems: *const RawExternalSemaphore,
        params: *const ExternalSemaphoreSignalParams,
        count: c_uint,
        stream: RawStream,
    ) -> HipStatus;
    fn hipWaitExternalSemaphoresAsync(
        sems: *const RawExternalSemaphore,
        params: *const ExternalSemaphoreWaitParams,
        count: c_uint,
        stream: RawStream,
    ) -> HipStatus;
    fn hipDestroyExternalSemaphore(sem: RawExternalSemaphore) -> HipStatus;
}

// --- status → Result -------------------------------------------------------------------------

fn static_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: hipGetErrorName / hipGetErrorString return pointers to static NUL-terminated
    // strings inside libamdhip64 (or NULL, handled above).
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// `hipGetErrorName`, plus `hipGetErrorString` where it says more than the name (HIP 5.x returns
/// the name for both; 6.x has descriptions), plus the number where the runtime does not know it.
pub fn describe(status: HipStatus) -> String {
    // SAFETY: both functions accept any value and only read static tables.
    let name = static_str(unsafe { hipGetErrorName(status) }).unwrap_or_default();
    // SAFETY: as above.
    let text = static_str(unsafe { hipGetErrorString(status) }).unwrap_or_default();
    let mut message = if name.is_empty() { format!("hipError {}", status.0) } else { name.clone() };
    if !text.is_empty() && text != name {
        message.push_str(": ");
        message.push_str(&text);
    }
    if name == "hipErrorUnknown" && status != HipStatus::UNKNOWN {
        message.push_str(&format!(" (code {})", status.0));
    }
    message
}

/// The one conversion from a status to a `Result`.
pub fn check(status: HipStatus, call: &'static str) -> Result<()> {
    if status == HipStatus::SUCCESS {
        Ok(())
    } else {
        Err(Error::failed(Api::Hip, call, i64::from(status.0), describe(status)))
    }
}

/// `hipErrorNoDevice` (or a driver too old) and why: no /dev/kfd, no access to it, or no GPU
/// ROCm supports. The status stays (an environment status: [`Error::is_environment`]).
fn no_device(status: HipStatus) -> Error {
    let kfd = std::path::Path::new("/dev/kfd");
    let hint = if !kfd.exists() {
        "no /dev/kfd: the amdgpu kernel driver is not loaded or this is not an AMD GPU machine"
    } else if std::fs::OpenOptions::new().read(true).write(true).open(kfd).is_err() {
        "/dev/kfd exists but cannot be opened: is the user in the render and video groups?"
    } else {
        "/dev/kfd is usable, but ROCm lists no GPU it supports"
    };
    let message = format!("{}: no AMD GPU visible to ROCm ({hint})", describe(status));
    Error::failed(Api::Hip, "hipGetDeviceCount", i64::from(status.0), message)
}

// --- device queries (safe: they only write to locals) ----------------------------------------

/// `hipRuntimeGetVersion` (`HIP_VERSION` encoding: major·10⁷ + minor·10⁵ + patch). Works without
/// a GPU.
pub fn runtime_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: `v` is a valid out-pointer for the duration of the call.
    check(unsafe { hipRuntimeGetVersion(&mut v) }, "hipRuntimeGetVersion")?;
    Ok(v)
}

/// `hipDriverGetVersion`.
pub fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: `v` is a valid out-pointer for the duration of the call.
    check(unsafe { hipDriverGetVersion(&mut v) }, "hipDriverGetVersion")?;
    Ok(v)
}

/// `hipGetDeviceCount`, where "no device" (and a too-old driver) keeps its status with the reason
/// added, and zero devices is [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable): both are
/// environment gaps ([`Error::is_environment`]), not bugs. Measured on Debian 12 (HIP 5.2.3, no /dev/kfd): it returns
/// `hipErrorNoDevice` with count 0 and prints nothing.
pub fn device_count() -> Result<i32> {
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer for the duration of the call.
    let status = unsafe { hipGetDeviceCount(&mut n) };
    match status {
        HipStatus::SUCCESS if n > 0 => Ok(n),
        HipStatus::SUCCESS => {
            Err(Error::unavailable(Api::Hip, "hipGetDeviceCount", "0 devices: no AMD GPU visible to ROCm"))
        }
        HipStatus::NO_DEVICE | HipStatus::INSUFFICIENT_DRIVER => Err(no_device(status)),
        other => check(other, "hipGetDeviceCount").map(|()| n),
    }
}

/// `hipSetDevice`: the calling thread's current device for every call that follows.
pub fn set_device(ordinal: i32) -> Result<()> {
    // SAFETY: plain value argument; an invalid ordinal is reported as an error.
    check(unsafe { hipSetDevice(ordinal) }, "hipSetDevice")
}

/// `hipDeviceGetAttribute` for one of [`attr`].
pub fn device_attribute(ordinal: i32, attribute: c_int) -> Result<i32> {
    let mut v = 0;
    // SAFETY: `v` is a valid out-pointer; unknown attributes are reported as errors.
    check(unsafe { hipDeviceGetAttribute(&mut v, attribute, ordinal) }, "hipDeviceGetAttribute")?;
    Ok(v)
}

fn string_from_buf(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `hipDeviceGetName`.
pub fn device_name(ordinal: i32) -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: `buf` is writable for the length passed; the runtime NUL-terminates within it.
    check(unsafe { hipDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, ordinal) }, "hipDeviceGetName")?;
    Ok(string_from_buf(&buf))
}

/// `hipDeviceGetPCIBusId` ("dddd:bb:dd.f").
pub fn device_pci_bus_id(ordinal: i32) -> Result<String> {
    let mut buf = [0 as c_char; 64];
    // SAFETY: `buf` is writable for the length passed; the runtime NUL-terminates within it.
    let status = unsafe { hipDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int, ordinal) };
    check(status, "hipDeviceGetPCIBusId")?;
    Ok(string_from_buf(&buf))
}

/// What `hipGetDeviceProperties` gives that no attribute does: the target name with features
/// (`gcnArchName`, e.g. "gfx90a:sramecc+:xnack-"), plus the PCI ids to cross-check the layout.
pub struct PropsExtract {
    pub gcn_arch_name: String,
    pub pci_domain: i32,
    pub pci_bus: i32,
    pub pci_device: i32,
}

/// `hipGetDeviceProperties` into the 5.x layout (see the layout checks above).
pub fn device_props(ordinal: i32) -> Result<PropsExtract> {
    // SAFETY: hipDeviceProp_t holds only integers, arrays, a bitfield struct of u32 and raw
    // pointers: the all-zero pattern is a valid value.
    let mut p: sys::hipDeviceProp_t = unsafe { std::mem::zeroed() };
    // SAFETY: `p` is a writable hipDeviceProp_t of the layout the plain symbol fills.
    check(unsafe { hipGetDeviceProperties(&mut p, ordinal) }, "hipGetDeviceProperties")?;
    Ok(PropsExtract {
        gcn_arch_name: string_from_buf(&p.gcnArchName),
        pci_domain: p.pciDomainID,
        pci_bus: p.pciBusID,
        pci_device: p.pciDeviceID,
    })
}

// --- object calls (unsafe: handle validity is the caller's contract) -----------------------------

/// `hipStreamCreateWithFlags(hipStreamNonBlocking)` on the current device.
pub fn stream_create_non_blocking() -> Result<RawStream> {
    let mut s: RawStream = std::ptr::null_mut();
    // SAFETY: `s` is a valid out-pointer.
    check(unsafe { hipStreamCreateWithFlags(&mut s, STREAM_NON_BLOCKING) }, "hipStreamCreateWithFlags")?;
    Ok(s)
}

/// # Safety
/// `stream` must be a live stream of the current device (one created by
/// [`stream_create_non_blocking`], or a caller's), the null stream, or [`STREAM_PER_THREAD`].
pub unsafe fn stream_synchronize(stream: RawStream) -> Result<()> {
    // SAFETY: the caller guarantees `stream` is live.
    check(unsafe { hipStreamSynchronize(stream) }, "hipStreamSynchronize")
}

/// # Safety
/// `stream` must be live, idle (synchronised), and never used again.
pub unsafe fn stream_destroy(stream: RawStream) -> Result<()> {
    // SAFETY: the caller guarantees `stream` is live and unused from now on.
    check(unsafe { hipStreamDestroy(stream) }, "hipStreamDestroy")
}

/// `hipEventCreateWithFlags` on the current device.
pub fn event_create(flags: c_uint) -> Result<RawEvent> {
    let mut e: RawEvent = std::ptr::null_mut();
    // SAFETY: `e` is a valid out-pointer.
    check(unsafe { hipEventCreateWithFlags(&mut e, flags) }, "hipEventCreateWithFlags")?;
    Ok(e)
}

/// # Safety
/// `event` and `stream` must be live handles of the same device.
pub unsafe fn event_record(event: RawEvent, stream: RawStream) -> Result<()> {
    // SAFETY: the caller guarantees both handles are live.
    check(unsafe { hipEventRecord(event, stream) }, "hipEventRecord")
}

/// # Safety
/// `event` must be live, and the stream it was recorded on must still exist (ROCm#4670).
pub unsafe fn event_synchronize(event: RawEvent) -> Result<()> {
    // SAFETY: the caller guarantees `event` is live.
    check(unsafe { hipEventSynchronize(event) }, "hipEventSynchronize")
}

/// Whether the work before the event's last record has completed (`hipErrorNotReady`: not yet).
/// Never blocks.
///
/// # Safety
/// `event` must be live, and the stream it was recorded on must still exist.
pub unsafe fn event_query(event: RawEvent) -> Result<bool> {
    // SAFETY: the caller guarantees `event` is live.
    let status = unsafe { hipEventQuery(event) };
    if status == HipStatus::NOT_READY {
        return Ok(false);
    }
    check(status, "hipEventQuery").map(|()| true)
}

/// # Safety
/// Both events must be live, created with timing enabled, recorded and complete.
pub unsafe fn event_elapsed_ms(start: RawEvent, stop: RawEvent) -> Result<f32> {
    let mut ms = 0f32;
    // SAFETY: `ms` is a valid out-pointer; the caller guarantees the events.
    check(unsafe { hipEventElapsedTime(&mut ms, start, stop) }, "hipEventElapsedTime")?;
    Ok(ms)
}

/// # Safety
/// `event` must be live, complete, and never used again.
pub unsafe fn event_destroy(event: RawEvent) -> Result<()> {
    // SAFETY: the caller guarantees `event` is live and unused from now on.
    check(unsafe { hipEventDestroy(event) }, "hipEventDestroy")
}

/// # Safety
/// `image` must be a complete code object: the runtime reads it through its ELF headers, not
/// through a length.
pub unsafe fn module_load_data(image: &[u8]) -> Result<RawModule> {
    let mut m: RawModule = std::ptr::null_mut();
    // SAFETY: `m` is a valid out-pointer; `image` outlives the call and is a whole code object.
    check(unsafe { hipModuleLoadData(&mut m, image.as_ptr().cast()) }, "hipModuleLoadData")?;
    Ok(m)
}

/// # Safety
/// `module` must be live; the function handle is valid only while it is.
pub unsafe fn module_get_function(module: RawModule, name: &CStr) -> Result<RawFunction> {
    let mut f: RawFunction = std::ptr::null_mut();
    // SAFETY: `f` is a valid out-pointer; `name` is NUL-terminated; the caller guarantees `module`.
    check(unsafe { hipModuleGetFunction(&mut f, module, name.as_ptr()) }, "hipModuleGetFunction")?;
    Ok(f)
}

/// # Safety
/// `module` must be live, no launch of its functions may be pending, and it is never used again.
pub unsafe fn module_unload(module: RawModule) -> Result<()> {
    // SAFETY: the caller guarantees `module` is live and idle.
    check(unsafe { hipModuleUnload(module) }, "hipModuleUnload")
}

/// `hipModuleLaunchKernel(f, grid, block, no dynamic shared memory, stream, args)`.
///
/// # Safety
/// `f` and `stream` must be live; `args` must hold one pointer per kernel parameter, each
/// pointing at a value of exactly that parameter's type, alive for the duration of the call.
pub unsafe fn launch_kernel(
    f: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    stream: RawStream,
    args: &mut [*mut c_void],
) -> Result<()> {
    let ([gx, gy, gz], [bx, by, bz]) = (grid, block);
    // SAFETY: the caller guarantees the handles and the argument array.
    let status = unsafe {
        hipModuleLaunchKernel(f, gx, gy, gz, bx, by, bz, 0, stream, args.as_mut_ptr(), std::ptr::null_mut())
    };
    check(status, "hipModuleLaunchKernel")
}

/// # Safety
/// `dst` must be device memory with at least `count` 32-bit words; `stream` must be live.
pub unsafe fn memset_d32_async(dst: *mut c_void, value: u32, count: usize, stream: RawStream) -> Result<()> {
    // SAFETY: the caller guarantees the range and the stream.
    check(unsafe { hipMemsetD32Async(dst, value as c_int, count, stream) }, "hipMemsetD32Async")
}

/// # Safety
/// `ptr` must be a pointer returned by [`external_memory_mapped_buffer`], not used afterwards.
pub unsafe fn free(ptr: *mut c_void) -> Result<()> {
    // SAFETY: the caller guarantees `ptr` and that nothing uses it afterwards.
    check(unsafe { hipFree(ptr) }, "hipFree")
}

/// # Safety
/// `fd` must be an open OPAQUE_FD memory export of at least `size` bytes. Ownership of `fd`
/// follows [`super::MEMORY_FD_OWNERSHIP`].
pub unsafe fn import_external_memory_fd(fd: c_int, size: u64, dedicated: bool) -> Result<RawExternalMemory> {
    let mut desc = ExternalMemoryHandleDesc {
        type_: EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
        handle: HandleUnion { win32: [std::ptr::null_mut(); 2] },
        size,
        flags: if dedicated { EXTERNAL_MEMORY_DEDICATED } else { 0 },
        reserved: [0; 16],
    };
    desc.handle.fd = fd;
    let mut m: RawExternalMemory = std::ptr::null_mut();
    // SAFETY: `desc` is a fully initialised descriptor whose layout the runtime reads (see the
    // layout checks); `m` is a valid out-pointer; the caller guarantees the fd.
    check(unsafe { hipImportExternalMemory(&mut m, &desc) }, "hipImportExternalMemory")?;
    Ok(m)
}

/// # Safety
/// `mem` must be a live imported memory of at least `offset + size` bytes.
pub unsafe fn external_memory_mapped_buffer(
    mem: RawExternalMemory,
    offset: u64,
    size: u64,
) -> Result<*mut c_void> {
    let desc = ExternalMemoryBufferDesc { offset, size, flags: 0, reserved: [0; 16] };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: `desc` is initialised, `p` is a valid out-pointer, the caller guarantees `mem`.
    let status = unsafe { hipExternalMemoryGetMappedBuffer(&mut p, mem, &desc) };
    check(status, "hipExternalMemoryGetMappedBuffer")?;
    if p.is_null() {
        // HIP 5.x returns success without writing the pointer when it has no device memory.
        return Err(Error::unavailable(
            Api::Hip,
            "hipExternalMemoryGetMappedBuffer",
            "returned hipSuccess but no pointer (the runtime has no device memory to map into)",
        ));
    }
    Ok(p)
}

/// # Safety
/// `mem` must be live, no mapped pointer of it may be in use, and it is never used again.
pub unsafe fn destroy_external_memory(mem: RawExternalMemory) -> Result<()> {
    // SAFETY: the caller guarantees `mem`.
    check(unsafe { hipDestroyExternalMemory(mem) }, "hipDestroyExternalMemory")
}

/// # Safety
/// `fd` must be an open semaphore export of the kind `handle_type` names. Ownership of `fd`
/// follows [`super::SEMAPHORE_FD_OWNERSHIP`].
pub unsafe fn import_external_semaphore_fd(fd: c_int, handle_type: u32) -> Result<RawExternalSemaphore> {
    let mut desc = ExternalSemaphoreHandleDesc {
        type_: handle_type,
        handle: HandleUnion { win32: [std::ptr::null_mut(); 2] },
        flags: 0,
        reserved: [0; 16],
    };
    desc.handle.fd = fd;
    let mut s: RawExternalSemaphore = std::ptr::null_mut();
    // SAFETY: `desc` is initialised, `s` is a valid out-pointer, the caller guarantees the fd.
    check(unsafe { hipImportExternalSemaphore(&mut s, &desc) }, "hipImportExternalSemaphore")?;
    Ok(s)
}

/// # Safety
/// `sem` and `stream` must be live handles of the current device.
pub unsafe fn signal_external_semaphore_async(
    sem: RawExternalSemaphore,
    value: u64,
    stream: RawStream,
) -> Result<()> {
    let params = ExternalSemaphoreSignalParams::with_value(value);
    // SAFETY: one semaphore and one parameter block, both alive for the call.
    let status = unsafe { hipSignalExternalSemaphoresAsync(&sem, &params, 1, stream) };
    check(status, "hipSignalExternalSemaphoresAsync")
}

/// # Safety
/// `sem` and `stream` must be live handles of the current device.
pub unsafe fn wait_external_semaphore_async(
    sem: RawExternalSemaphore,
    value: u64,
    stream: RawStream,
) -> Result<()> {
    let params = ExternalSemaphoreWaitParams::with_value(value);
    // SAFETY: one semaphore and one parameter block, both alive for the call.
    let status = unsafe { hipWaitExternalSemaphoresAsync(&sem, &params, 1, stream) };
    check(status, "hipWaitExternalSemaphoresAsync")
}

/// # Safety
/// `sem` must be live, no pending stream operation may use it, and it is never used again.
pub unsafe fn destroy_external_semaphore(sem: RawExternalSemaphore) -> Result<()> {
    // SAFETY: the caller guarantees `sem`.
    check(unsafe { hipDestroyExternalSemaphore(sem) }, "hipDestroyExternalSemaphore")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_come_from_the_runtime() {
        assert_eq!(check(HipStatus::SUCCESS, "hipSetDevice").ok(), Some(()));
        let e = check(HipStatus::NO_DEVICE, "hipGetDeviceCount").unwrap_err();
        assert_eq!((e.api(), e.call(), e.status()), (Api::Hip, "hipGetDeviceCount", Some(100)));
        assert!(e.is_environment(), "no device is the machine's fault");
        // HIP 5.x: the name only; 6.x adds ": no ROCm-capable device is detected".
        let message = e.message();
        assert!(message == "hipErrorNoDevice" || message.starts_with("hipErrorNoDevice: "), "{message}");
        assert!(
            e.to_string().starts_with("hip: hipGetDeviceCount failed (status 100): hipErrorNoDevice"),
            "{e}"
        );
        assert!(describe(HipStatus(801)).starts_with("hipErrorNotSupported"));
        // A value the runtime does not know keeps its number.
        let unknown = describe(HipStatus(12345));
        assert!(unknown.starts_with("hipErrorUnknown") && unknown.ends_with("(code 12345)"), "{unknown}");
    }

    #[test]
    fn attribute_values_match_the_bindings() {
        use sys::hipDeviceAttribute_t as A;
        assert_eq!(A::hipDeviceAttributeMultiprocessorCount as c_int, attr::MULTIPROCESSOR_COUNT);
        assert_eq!(A::hipDeviceAttributePciBusId as c_int, attr::PCI_BUS_ID);
        assert_eq!(A::hipDeviceAttributePciDeviceId as c_int, attr::PCI_DEVICE_ID);
        assert_eq!(sys::hipStreamNonBlocking, STREAM_NON_BLOCKING);
        assert_eq!(sys::hipEventDisableTiming, EVENT_DISABLE_TIMING);
        assert_eq!(
            sys::hipExternalMemoryHandleType::hipExternalMemoryHandleTypeOpaqueFd as u32,
            EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
        );
        assert_eq!(
            sys::hipExternalSemaphoreHandleType::hipExternalSemaphoreHandleTypeOpaqueFd as u32,
            EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
        );
    }
}
