//! The binding layer for libcuda and libnvrtc: one method per driver or NVRTC call, each turning
//! the raw status into the crate's `Result`: an [`Error`] with [`Api::Cuda`] or [`Api::Nvrtc`],
//! the C call's name and the numeric status (the status' name and description in its message).
//! Status codes are looked at here and nowhere else.
//!
//! Statuses. cudarc's `CUresult` and `nvrtcResult` are Rust enums, and a driver newer than the
//! bindings can return a code the enum does not list (CUDA 13.x minors add codes); a Rust enum
//! holding an unlisted value is undefined behaviour. So every entry point is resolved here, by
//! our own loader, into a function pointer whose declared return type is a plain integer
//! ([`CuStatus`], [`NvrtcStatus`]); codes are compared as integers, and the few this file tests
//! for are named consts. cudarc's `sys` modules still provide the `#[repr(C)]` structs, the
//! opaque handle types and the enums that are only *passed in* (attributes, handle types, flags);
//! no out-parameter or return value the library writes has a cudarc enum type. cudarc's own
//! loader (its `dynamic-loading` feature) is never called: the feature stays enabled only
//! because cudarc's build needs one of its linking modes and this is the one that links nothing.
//! `tests/binding_status.rs` of the vkhip repository keeps all this true.
//!
//! Loading. [`Driver::get`] / [`Nvrtc::get`] dlopen the library, check that every symbol in
//! [`DRIVER_SYMBOLS`] / [`NVRTC_SYMBOLS`] exists and resolve them into a table ([`DriverApi`],
//! [`NvrtcApi`]) that lives as long as the process. The lists are generated from the same field
//! names the table is built from (the compiler rejects a field missing from the list or the
//! reverse), every field is called (an unread field fails `-D warnings`), and a unit test checks
//! the calls in this file against the lists. A missing library or symbol is
//! [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable), never a panic.
//!
//! Versions. `cuDeviceGetUuid_v2` exists in every driver since CUDA 11.4; the elapsed time
//! function is resolved on its own, preferring the plain `cuEventElapsedTime` (every driver) and
//! falling back to `cuEventElapsedTime_v2` (drivers ≥ 12.8; same signature).
//!
//! Contexts. Everything except the device queries and [`Driver::primary_ctx_retain`] acts on the
//! calling thread's current context; the public layer (`cuda::Cuda`) makes the primary context
//! current before it calls in.
#![allow(non_snake_case)] // the tables' fields are the C symbols' names

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::os::fd::RawFd;
use std::sync::OnceLock;

use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc_sys;
use libloading::Library;

use crate::error::{Api, Error, Result};
use crate::ImageShape;

/// A raw `CUresult` as the driver returns it (any value, known to these bindings or not).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuStatus(pub c_int);

impl CuStatus {
    /// `CUDA_SUCCESS`.
    pub const SUCCESS: CuStatus = CuStatus(0);
    /// `CUDA_ERROR_NOT_READY`: the work before an event has not completed yet.
    pub const NOT_READY: CuStatus = CuStatus(600);
}

/// A raw `nvrtcResult`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvrtcStatus(pub c_int);

impl NvrtcStatus {
    /// `NVRTC_SUCCESS`.
    pub const SUCCESS: NvrtcStatus = NvrtcStatus(0);
}

/// The names tried, in order, for libcuda (the driver installs `.so.1`; `.so` is the dev link).
const DRIVER_LIBRARIES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// The names tried, in order, for libnvrtc (as cudarc's loader tried them for CUDA 13).
const NVRTC_LIBRARIES: &[&str] = &["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"];

/// Builds `$table` from `$lib`, one field per listed symbol (field name = symbol name), and
/// defines `$list` as those names. A struct literal must name every field exactly once, so the
/// list and the table cannot drift apart.
macro_rules! symbol_table {
    ($table:ident, $list:ident, [$($field:ident),* $(,)?]) => {
        /// Every symbol of the library the calls in this file resolve.
        pub const $list: &[&str] = &[$(stringify!($field)),*];

        impl $table {
            /// # Safety
            /// `lib` is the library the table is declared for: each of its symbols has the C
            /// signature of the field of the same name.
            unsafe fn resolve(lib: &Library) -> std::result::Result<Self, String> {
                Ok($table {
                    // SAFETY: per this function's contract.
                    $($field: unsafe { symbol(lib, stringify!($field)) }?,)*
                })
            }
        }
    };
}

/// The driver entry points, declared as in `cuda.h` (CUDA 13) except that each returns the raw
/// status. Handles and structs are cudarc's; `CUdevice_attribute` is an enum we only pass in.
struct DriverApi {
    cuCtxGetCurrent: unsafe extern "C" fn(*mut sys::CUcontext) -> CuStatus,
    cuCtxGetDevice: unsafe extern "C" fn(*mut sys::CUdevice) -> CuStatus,
    cuCtxPopCurrent_v2: unsafe extern "C" fn(*mut sys::CUcontext) -> CuStatus,
    cuCtxPushCurrent_v2: unsafe extern "C" fn(sys::CUcontext) -> CuStatus,
    cuCtxSetCurrent: unsafe extern "C" fn(sys::CUcontext) -> CuStatus,
    cuCtxSynchronize: unsafe extern "C" fn() -> CuStatus,
    cuDestroyExternalMemory: unsafe extern "C" fn(sys::CUexternalMemory) -> CuStatus,
    cuDestroyExternalSemaphore: unsafe extern "C" fn(sys::CUexternalSemaphore) -> CuStatus,
    cuDeviceGet: unsafe extern "C" fn(*mut sys::CUdevice, c_int) -> CuStatus,
    cuDeviceGetAttribute:
        unsafe extern "C" fn(*mut c_int, sys::CUdevice_attribute, sys::CUdevice) -> CuStatus,
    cuDeviceGetCount: unsafe extern "C" fn(*mut c_int) -> CuStatus,
    cuDeviceGetName: unsafe extern "C" fn(*mut c_char, c_int, sys::CUdevice) -> CuStatus,
    cuDeviceGetUuid_v2: unsafe extern "C" fn(*mut sys::CUuuid, sys::CUdevice) -> CuStatus,
    cuDevicePrimaryCtxRelease_v2: unsafe extern "C" fn(sys::CUdevice) -> CuStatus,
    cuDevicePrimaryCtxRetain: unsafe extern "C" fn(*mut sys::CUcontext, sys::CUdevice) -> CuStatus,
    cuDeviceTotalMem_v2: unsafe extern "C" fn(*mut usize, sys::CUdevice) -> CuStatus,
    cuDriverGetVersion: unsafe extern "C" fn(*mut c_int) -> CuStatus,
    cuEventCreate: unsafe extern "C" fn(*mut sys::CUevent, c_uint) -> CuStatus,
    cuEventDestroy_v2: unsafe extern "C" fn(sys::CUevent) -> CuStatus,
    cuEventQuery: unsafe extern "C" fn(sys::CUevent) -> CuStatus,
    cuEventRecord: unsafe extern "C" fn(sys::CUevent, sys::CUstream) -> CuStatus,
    cuEventSynchronize: unsafe extern "C" fn(sys::CUevent) -> CuStatus,
    cuExternalMemoryGetMappedBuffer: unsafe extern "C" fn(
        *mut sys::CUdeviceptr,
        sys::CUexternalMemory,
        *const sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
    ) -> CuStatus,
    cuExternalMemoryGetMappedMipmappedArray: unsafe extern "C" fn(
        *mut sys::CUmipmappedArray,
        sys::CUexternalMemory,
        *const sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC,
    ) -> CuStatus,
    /// `CUresult cuGetErrorName(CUresult error, const char** pStr)`: the code goes in as the
    /// plain integer it is (a C enum is an `int` in the ABI).
    cuGetErrorName: unsafe extern "C" fn(CuStatus, *mut *const c_char) -> CuStatus,
    cuGetErrorString: unsafe extern "C" fn(CuStatus, *mut *const c_char) -> CuStatus,
    cuImportExternalMemory: unsafe extern "C" fn(
        *mut sys::CUexternalMemory,
        *const sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
    ) -> CuStatus,
    cuImportExternalSemaphore: unsafe extern "C" fn(
        *mut sys::CUexternalSemaphore,
        *const sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
    ) -> CuStatus,
    cuInit: unsafe extern "C" fn(c_uint) -> CuStatus,
    cuLaunchKernel: unsafe extern "C" fn(
        sys::CUfunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        sys::CUstream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuStatus,
    cuMemAllocHost_v2: unsafe extern "C" fn(*mut *mut c_void, usize) -> CuStatus,
    cuMemAlloc_v2: unsafe extern "C" fn(*mut sys::CUdeviceptr, usize) -> CuStatus,
    cuMemFreeHost: unsafe extern "C" fn(*mut c_void) -> CuStatus,
    cuMemcpyDtoHAsync_v2:
        unsafe extern "C" fn(*mut c_void, sys::CUdeviceptr, usize, sys::CUstream) -> CuStatus,
    cuMemFree_v2: unsafe extern "C" fn(sys::CUdeviceptr) -> CuStatus,
    cuMemGetInfo_v2: unsafe extern "C" fn(*mut usize, *mut usize) -> CuStatus,
    cuMemsetD32Async: unsafe extern "C" fn(sys::CUdeviceptr, c_uint, usize, sys::CUstream) -> CuStatus,
    cuMipmappedArrayDestroy: unsafe extern "C" fn(sys::CUmipmappedArray) -> CuStatus,
    cuMipmappedArrayGetLevel:
        unsafe extern "C" fn(*mut sys::CUarray, sys::CUmipmappedArray, c_uint) -> CuStatus,
    cuModuleGetFunction: unsafe extern "C" fn(*mut sys::CUfunction, sys::CUmodule, *const c_char) -> CuStatus,
    cuModuleLoadData: unsafe extern "C" fn(*mut sys::CUmodule, *const c_void) -> CuStatus,
    cuModuleUnload: unsafe extern "C" fn(sys::CUmodule) -> CuStatus,
    cuSignalExternalSemaphoresAsync: unsafe extern "C" fn(
        *const sys::CUexternalSemaphore,
        *const sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS,
        c_uint,
        sys::CUstream,
    ) -> CuStatus,
    cuStreamCreate: unsafe extern "C" fn(*mut sys::CUstream, c_uint) -> CuStatus,
    cuStreamDestroy_v2: unsafe extern "C" fn(sys::CUstream) -> CuStatus,
    cuStreamGetCtx: unsafe extern "C" fn(sys::CUstream, *mut sys::CUcontext) -> CuStatus,
    cuStreamSynchronize: unsafe extern "C" fn(sys::CUstream) -> CuStatus,
    cuSurfObjectCreate:
        unsafe extern "C" fn(*mut sys::CUsurfObject, *const sys::CUDA_RESOURCE_DESC) -> CuStatus,
    cuSurfObjectDestroy: unsafe extern "C" fn(sys::CUsurfObject) -> CuStatus,
    cuWaitExternalSemaphoresAsync: unsafe extern "C" fn(
        *const sys::CUexternalSemaphore,
        *const sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS,
        c_uint,
        sys::CUstream,
    ) -> CuStatus,
}

symbol_table!(
    DriverApi,
    DRIVER_SYMBOLS,
    [
        cuCtxGetCurrent,
        cuCtxGetDevice,
        cuCtxPopCurrent_v2,
        cuCtxPushCurrent_v2,
        cuCtxSetCurrent,
        cuCtxSynchronize,
        cuDestroyExternalMemory,
        cuDestroyExternalSemaphore,
        cuDeviceGet,
        cuDeviceGetAttribute,
        cuDeviceGetCount,
        cuDeviceGetName,
        cuDeviceGetUuid_v2,
        cuDevicePrimaryCtxRelease_v2,
        cuDevicePrimaryCtxRetain,
        cuDeviceTotalMem_v2,
        cuDriverGetVersion,
        cuEventCreate,
        cuEventDestroy_v2,
        cuEventQuery,
        cuEventRecord,
        cuEventSynchronize,
        cuExternalMemoryGetMappedBuffer,
        cuExternalMemoryGetMappedMipmappedArray,
        cuGetErrorName,
        cuGetErrorString,
        cuImportExternalMemory,
        cuImportExternalSemaphore,
        cuInit,
        cuLaunchKernel,
        cuMemAllocHost_v2,
        cuMemAlloc_v2,
        cuMemFreeHost,
        cuMemcpyDtoHAsync_v2,
        cuMemFree_v2,
        cuMemGetInfo_v2,
        cuMemsetD32Async,
        cuMipmappedArrayDestroy,
        cuMipmappedArrayGetLevel,
        cuModuleGetFunction,
        cuModuleLoadData,
        cuModuleUnload,
        cuSignalExternalSemaphoresAsync,
        cuStreamCreate,
        cuStreamDestroy_v2,
        cuStreamGetCtx,
        cuStreamSynchronize,
        cuSurfObjectCreate,
        cuSurfObjectDestroy,
        cuWaitExternalSemaphoresAsync,
    ]
);

/// The NVRTC entry points, declared as in `nvrtc.h` except that each status is the raw integer.
struct NvrtcApi {
    nvrtcCompileProgram:
        unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, c_int, *const *const c_char) -> NvrtcStatus,
    nvrtcCreateProgram: unsafe extern "C" fn(
        *mut nvrtc_sys::nvrtcProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> NvrtcStatus,
    nvrtcDestroyProgram: unsafe extern "C" fn(*mut nvrtc_sys::nvrtcProgram) -> NvrtcStatus,
    nvrtcGetCUBIN: unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, *mut c_char) -> NvrtcStatus,
    nvrtcGetCUBINSize: unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, *mut usize) -> NvrtcStatus,
    /// `const char* nvrtcGetErrorString(nvrtcResult result)`.
    nvrtcGetErrorString: unsafe extern "C" fn(NvrtcStatus) -> *const c_char,
    nvrtcGetNumSupportedArchs: unsafe extern "C" fn(*mut c_int) -> NvrtcStatus,
    nvrtcGetPTX: unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, *mut c_char) -> NvrtcStatus,
    nvrtcGetPTXSize: unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, *mut usize) -> NvrtcStatus,
    nvrtcGetProgramLog: unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, *mut c_char) -> NvrtcStatus,
    nvrtcGetProgramLogSize: unsafe extern "C" fn(nvrtc_sys::nvrtcProgram, *mut usize) -> NvrtcStatus,
    nvrtcGetSupportedArchs: unsafe extern "C" fn(*mut c_int) -> NvrtcStatus,
    nvrtcVersion: unsafe extern "C" fn(*mut c_int, *mut c_int) -> NvrtcStatus,
}

symbol_table!(
    NvrtcApi,
    NVRTC_SYMBOLS,
    [
        nvrtcCompileProgram,
        nvrtcCreateProgram,
        nvrtcDestroyProgram,
        nvrtcGetCUBIN,
        nvrtcGetCUBINSize,
        nvrtcGetErrorString,
        nvrtcGetNumSupportedArchs,
        nvrtcGetPTX,
        nvrtcGetPTXSize,
        nvrtcGetProgramLog,
        nvrtcGetProgramLogSize,
        nvrtcGetSupportedArchs,
        nvrtcVersion,
    ]
);

/// The elapsed-time symbols, in order of preference (see the module docs).
const ELAPSED_TIME_SYMBOLS: [&str; 2] = ["cuEventElapsedTime", "cuEventElapsedTime_v2"];

/// The one line `probe` and `CudaBackend::new` report when libcuda cannot be loaded.
pub const NO_DRIVER: &str = "libcuda.so not found: install the NVIDIA driver";

/// The line reported when libnvrtc cannot be loaded.
pub const NO_NVRTC: &str = "libnvrtc.so (.13 or .12) not found: install NVRTC (the CUDA toolkit, \
     or `pip install nvidia-cuda-nvrtc`) and put its lib directory on LD_LIBRARY_PATH";

type ElapsedTimeFn = unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> CuStatus;

/// # Safety
/// `T` is the `unsafe extern "C" fn` type of the C function `lib` exports as `name`.
unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> std::result::Result<T, String> {
    // SAFETY: per this function's contract; the pointer is used only while `lib` stays loaded
    // (the tables live next to their library, in a process-wide static).
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{name}: {e}"))
}

/// The first of `names` that loads.
///
/// # Safety
/// Loading runs the library's initialisers: only for the NVIDIA libraries named above, whose
/// initialisers are safe to run in any process.
unsafe fn open_first(names: &[&str]) -> Option<Library> {
    // SAFETY: per this function's contract.
    names.iter().find_map(|name| unsafe { Library::new(name) }.ok())
}

/// Whether libcuda can be loaded at all (for tests that behave differently without a driver).
pub fn driver_library_present() -> bool {
    // SAFETY: only the NVIDIA driver's names (see `open_first`).
    unsafe { open_first(DRIVER_LIBRARIES) }.is_some()
}

/// The message of a failed call: "NAME: description", from whatever of the two is known.
pub fn describe_status(code: i32, name: Option<&str>, description: Option<&str>) -> String {
    match (name, description) {
        (Some(n), Some(d)) => format!("{n}: {d}"),
        (Some(n), None) => n.to_string(),
        (None, Some(d)) => format!("status {code}: {d}"),
        (None, None) => format!("status {code}"),
    }
}

/// A hint for failures whose usual cause is known.
pub fn hint(call: &str, name: &str) -> Option<&'static str> {
    match (call, name) {
        ("cuModuleLoadData", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
        | ("cuModuleLoadData", "CUDA_ERROR_NO_BINARY_FOR_GPU")
        | ("cuModuleLoadData", "CUDA_ERROR_INVALID_IMAGE") => Some(
            "the kernel was built by an NVRTC newer than this driver supports: use an NVRTC \
             whose major.minor is at most the driver's CUDA version",
        ),
        ("cuImportExternalMemory", _) => Some(
            "the fd must be a fresh OPAQUE_FD export (vkGetMemoryFdKHR) of memory on this GPU, \
             imported with its allocation size",
        ),
        ("cuImportExternalSemaphore", _) => Some(
            "the fd must be a fresh OPAQUE_FD export (vkGetSemaphoreFdKHR) of a semaphore of the \
             matching type (timeline or binary) on this GPU",
        ),
        (_, "CUDA_ERROR_NO_DEVICE") => Some("no NVIDIA GPU is visible to this process"),
        _ => None,
    }
}

/// The error for a failed driver call (pure: the text lookup is done by the caller).
pub fn api_error(call: &'static str, code: i32, name: Option<&str>, desc: Option<&str>) -> Error {
    let mut message = describe_status(code, name, desc);
    if let Some(h) = name.and_then(|n| hint(call, n)) {
        message.push_str(" (");
        message.push_str(h);
        message.push(')');
    }
    Error::failed(Api::Cuda, call, i64::from(code), message)
}

/// The name of a driver status: the driver's own, else "CUDA error <n>" (a code this driver's
/// `cuGetErrorName` does not know).
pub fn cuda_status_name(code: CuStatus, driver_name: Option<String>) -> String {
    driver_name.unwrap_or_else(|| format!("CUDA error {}", code.0))
}

/// The names in `names` for which `present` is false.
fn missing_symbols(names: &[&'static str], present: impl Fn(&str) -> bool) -> Vec<&'static str> {
    names.iter().copied().filter(|name| !present(name)).collect()
}

/// # Safety
/// `ptr` is null or points to a NUL-terminated string that outlives the call.
unsafe fn c_string(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    Some(unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
}

/// The loaded driver library, checked for every symbol used here. All driver calls go through it.
pub struct Driver {
    api: DriverApi,
    elapsed_time: ElapsedTimeFn,
    elapsed_time_name: &'static str,
    /// Keeps every pointer in `api` valid; never unloaded (the driver lives in a static).
    _lib: Library,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").field("elapsed_time", &self.elapsed_time_name).finish()
    }
}

static DRIVER: OnceLock<Result<Driver>> = OnceLock::new();

impl Driver {
    /// Load libcuda, check its symbols and call `cuInit(0)`, once per process. A missing library
    /// or symbol is [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) with one line
    /// saying why; a failed `cuInit` keeps its status (`CUDA_ERROR_NO_DEVICE` is
    /// [`Error::is_environment`]).
    pub fn get() -> Result<&'static Driver> {
        DRIVER.get_or_init(|| Driver::load(DRIVER_LIBRARIES)).as_ref().map_err(Error::clone)
    }

    /// Resolve the driver from the first of `names` that loads, then `cuInit(0)`.
    fn load(names: &[&str]) -> Result<Driver> {
        let unavailable = |reason: String| Error::unavailable(Api::Cuda, "", reason);
        // SAFETY: only ever called with the NVIDIA driver's names (or, in tests, libraries whose
        // initialisers are harmless, like libc).
        let Some(lib) = (unsafe { open_first(names) }) else {
            return Err(unavailable(NO_DRIVER.to_string()));
        };
        let present = |name: &str| {
            // SAFETY: a lookup without side effects; the fn-pointer type is only a placeholder
            // for the presence check and is never called.
            unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok()
        };
        let missing = missing_symbols(DRIVER_SYMBOLS, present);
        if !missing.is_empty() {
            return Err(unavailable(format!(
                "the NVIDIA driver's libcuda lacks {} (driver too old? CUDA 12 or newer needed)",
                missing.join(", ")
            )));
        }
        let mut elapsed = None;
        for name in ELAPSED_TIME_SYMBOLS {
            // SAFETY: both names have exactly `ElapsedTimeFn`'s signature
            // (float*, CUevent, CUevent) -> CUresult in every CUDA driver that exports them.
            if let Ok(f) = unsafe { symbol::<ElapsedTimeFn>(&lib, name) } {
                elapsed = Some((f, name));
                break;
            }
        }
        let Some((elapsed_time, elapsed_time_name)) = elapsed else {
            return Err(unavailable("the NVIDIA driver's libcuda lacks cuEventElapsedTime".to_string()));
        };
        // SAFETY: `lib` is libcuda, whose symbols have the signatures `DriverApi` declares (CUDA
        // 12 and 13 `cuda.h`; the statuses as the integers they are).
        let api = unsafe { DriverApi::resolve(&lib) }.map_err(unavailable)?;
        let driver = Driver { api, elapsed_time, elapsed_time_name, _lib: lib };
        // SAFETY: cuInit takes flags only (must be 0).
        let status = unsafe { (driver.api.cuInit)(0) };
        driver.check("cuInit", status)?;
        Ok(driver)
    }

    fn check(&self, call: &'static str, code: CuStatus) -> Result<()> {
        if code == CuStatus::SUCCESS {
            return Ok(());
        }
        let mut name_ptr: *const c_char = std::ptr::null();
        let mut desc_ptr: *const c_char = std::ptr::null();
        // SAFETY: both calls take any integer code and write a pointer to a static string (or
        // leave it null and return an error for a code the driver does not know).
        let name = unsafe {
            ((self.api.cuGetErrorName)(code, &mut name_ptr) == CuStatus::SUCCESS)
                .then(|| c_string(name_ptr))
                .flatten()
        };
        // SAFETY: as above.
        let desc = unsafe {
            ((self.api.cuGetErrorString)(code, &mut desc_ptr) == CuStatus::SUCCESS)
                .then(|| c_string(desc_ptr))
                .flatten()
        };
        let name = cuda_status_name(code, name);
        Err(api_error(call, code.0, Some(&name), desc.as_deref()))
    }

    pub fn driver_version(&self) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        self.check("cuDriverGetVersion", unsafe { (self.api.cuDriverGetVersion)(&mut v) })?;
        Ok(v)
    }

    pub fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        // SAFETY: writes one int.
        self.check("cuDeviceGetCount", unsafe { (self.api.cuDeviceGetCount)(&mut n) })?;
        Ok(n)
    }

    pub fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice> {
        let mut dev = 0;
        // SAFETY: writes one int; a bad ordinal is an error code.
        self.check("cuDeviceGet", unsafe { (self.api.cuDeviceGet)(&mut dev, ordinal) })?;
        Ok(dev)
    }

    pub fn device_name(&self, dev: sys::CUdevice) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes into `buf`.
        let status = unsafe { (self.api.cuDeviceGetName)(buf.as_mut_ptr(), buf.len() as c_int, dev) };
        self.check("cuDeviceGetName", status)?;
        let bytes = buf.map(|c| c as u8);
        Ok(CStr::from_bytes_until_nul(&bytes)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned()))
    }

    pub fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: writes 16 bytes into `uuid`.
        self.check("cuDeviceGetUuid_v2", unsafe { (self.api.cuDeviceGetUuid_v2)(&mut uuid, dev) })?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    pub fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        self.check("cuDeviceGetAttribute", unsafe { (self.api.cuDeviceGetAttribute)(&mut v, attr, dev) })?;
        Ok(v)
    }

    pub fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize> {
        let mut bytes = 0;
        // SAFETY: writes one size_t.
        self.check("cuDeviceTotalMem_v2", unsafe { (self.api.cuDeviceTotalMem_v2)(&mut bytes, dev) })?;
        Ok(bytes)
    }

    /// Retain the device's primary context (balanced by [`Driver::primary_ctx_release`]).
    pub fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: writes one handle.
        self.check("cuDevicePrimaryCtxRetain", unsafe {
            (self.api.cuDevicePrimaryCtxRetain)(&mut ctx, dev)
        })?;
        Ok(ctx)
    }

    /// # Safety
    /// Balances one successful [`Driver::primary_ctx_retain`] of `dev`; nothing created in the
    /// context through that retain is used afterwards.
    pub unsafe fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuDevicePrimaryCtxRelease_v2", unsafe { (self.api.cuDevicePrimaryCtxRelease_v2)(dev) })
    }

    /// # Safety
    /// `ctx` is a context this process holds (a retained primary context).
    pub unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuCtxSetCurrent", unsafe { (self.api.cuCtxSetCurrent)(ctx) })
    }

    /// The context current on the calling thread (null: none), `cuCtxGetCurrent`.
    pub fn ctx_get_current(&self) -> Result<sys::CUcontext> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: writes one handle.
        self.check("cuCtxGetCurrent", unsafe { (self.api.cuCtxGetCurrent)(&mut ctx) })?;
        Ok(ctx)
    }

    /// The device of `ctx` (`cuCtxGetDevice` with `ctx` pushed for the call, then popped: the
    /// thread's current context is left as it was).
    ///
    /// # Safety
    /// `ctx` is a live context (the current one, or one a live stream belongs to).
    pub unsafe fn ctx_device(&self, ctx: sys::CUcontext) -> Result<sys::CUdevice> {
        // SAFETY: per this function's contract.
        self.check("cuCtxPushCurrent_v2", unsafe { (self.api.cuCtxPushCurrent_v2)(ctx) })?;
        let mut dev = 0;
        // SAFETY: writes one int; `ctx` is current now.
        let got = self.check("cuCtxGetDevice", unsafe { (self.api.cuCtxGetDevice)(&mut dev) });
        let mut popped = std::ptr::null_mut();
        // SAFETY: pops what was pushed above.
        let pop = self.check("cuCtxPopCurrent_v2", unsafe { (self.api.cuCtxPopCurrent_v2)(&mut popped) });
        got?;
        pop?;
        Ok(dev)
    }

    /// Block until every stream of the current context is idle (`cuCtxSynchronize`).
    pub fn ctx_synchronize(&self) -> Result<()> {
        // SAFETY: no arguments; without a current context this is an error code.
        self.check("cuCtxSynchronize", unsafe { (self.api.cuCtxSynchronize)() })
    }

    /// The context `stream` belongs to (for the legacy and per-thread default streams, the
    /// current context).
    ///
    /// # Safety
    /// `stream` is a live stream, or one of the special handles (`CU_STREAM_LEGACY`,
    /// `CU_STREAM_PER_THREAD`, null).
    pub unsafe fn stream_context(&self, stream: sys::CUstream) -> Result<sys::CUcontext> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: per this function's contract; writes one handle.
        self.check("cuStreamGetCtx", unsafe { (self.api.cuStreamGetCtx)(stream, &mut ctx) })?;
        Ok(ctx)
    }

    /// A stream that does not synchronise with the legacy default stream.
    pub fn stream_create_non_blocking(&self) -> Result<sys::CUstream> {
        let mut s = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint;
        // SAFETY: writes one handle; without a current context this is an error code.
        self.check("cuStreamCreate", unsafe { (self.api.cuStreamCreate)(&mut s, flags) })?;
        Ok(s)
    }

    /// # Safety
    /// `stream` is a live stream of the current context.
    pub unsafe fn stream_synchronize(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuStreamSynchronize", unsafe { (self.api.cuStreamSynchronize)(stream) })
    }

    /// # Safety
    /// `stream` is a live stream of the current context with nothing pending, not used again.
    pub unsafe fn stream_destroy(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuStreamDestroy_v2", unsafe { (self.api.cuStreamDestroy_v2)(stream) })
    }

    /// An event; `timing` false creates it with CU_EVENT_DISABLE_TIMING (cheaper to record).
    pub fn event_create(&self, timing: bool) -> Result<sys::CUevent> {
        let mut e = std::ptr::null_mut();
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        // SAFETY: writes one handle.
        self.check("cuEventCreate", unsafe { (self.api.cuEventCreate)(&mut e, flags as c_uint) })?;
        Ok(e)
    }

    /// # Safety
    /// `event` and `stream` are live objects of the current context.
    pub unsafe fn event_record(&self, event: sys::CUevent, stream: sys::CUstream) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuEventRecord", unsafe { (self.api.cuEventRecord)(event, stream) })
    }

    /// Whether the work before the event's last record has completed (`CUDA_ERROR_NOT_READY`:
    /// not yet). Never blocks.
    ///
    /// # Safety
    /// `event` is a live event of the current context.
    pub unsafe fn event_query(&self, event: sys::CUevent) -> Result<bool> {
        // SAFETY: per this function's contract.
        let status = unsafe { (self.api.cuEventQuery)(event) };
        if status == CuStatus::NOT_READY {
            return Ok(false);
        }
        self.check("cuEventQuery", status).map(|()| true)
    }

    /// # Safety
    /// `event` is a live event of the current context.
    pub unsafe fn event_synchronize(&self, event: sys::CUevent) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuEventSynchronize", unsafe { (self.api.cuEventSynchronize)(event) })
    }

    /// Milliseconds between two completed events.
    ///
    /// # Safety
    /// Both are live events of the current context, created with timing.
    pub unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: `elapsed_time` was resolved with this exact signature; the events are live
        // per this function's contract.
        self.check(self.elapsed_time_name, unsafe { (self.elapsed_time)(&mut ms, start, end) })?;
        Ok(ms)
    }

    /// # Safety
    /// `event` is a live event of the current context that no pending work refers to.
    pub unsafe fn event_destroy(&self, event: sys::CUevent) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuEventDestroy_v2", unsafe { (self.api.cuEventDestroy_v2)(event) })
    }

    /// Load a module from a cubin (ELF) or NUL-terminated PTX image into the current context.
    pub fn module_load_data(&self, image: &[u8]) -> Result<sys::CUmodule> {
        let is_elf = image.starts_with(b"\x7fELF");
        if !is_elf && image.last() != Some(&0) {
            return Err(Error::invalid(
                Api::Cuda,
                "cuModuleLoadData: the image is neither a cubin nor NUL-terminated PTX",
            ));
        }
        let mut m = std::ptr::null_mut();
        // SAFETY: the driver reads a self-delimiting ELF image or a NUL-terminated string, both
        // within `image` (checked above); a malformed image is an error code.
        self.check("cuModuleLoadData", unsafe {
            (self.api.cuModuleLoadData)(&mut m, image.as_ptr().cast::<c_void>())
        })?;
        Ok(m)
    }

    /// # Safety
    /// `module` is a live module of the current context.
    pub unsafe fn module_get_function(&self, module: sys::CUmodule, name: &str) -> Result<sys::CUfunction> {
        let cname = CString::new(name).map_err(|_| {
            Error::invalid(Api::Cuda, format!("cuModuleGetFunction: kernel name {name:?} contains NUL"))
        })?;
        let mut f = std::ptr::null_mut();
        // SAFETY: `module` is live per this function's contract; `cname` outlives the call.
        self.check("cuModuleGetFunction", unsafe {
            (self.api.cuModuleGetFunction)(&mut f, module, cname.as_ptr())
        })?;
        Ok(f)
    }

    /// # Safety
    /// `module` is a live module of the current context whose functions no pending work uses.
    pub unsafe fn module_unload(&self, module: sys::CUmodule) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuModuleUnload", unsafe { (self.api.cuModuleUnload)(module) })
    }

    /// Enqueue a launch of `function` on `stream`: `grid` blocks of `block` threads, no dynamic
    /// shared memory.
    ///
    /// # Safety
    /// `function` and `stream` are live objects of the current context; `params` holds one
    /// pointer per kernel parameter, in order, each to a value of the parameter's type, and any
    /// device pointers among them address memory large enough for what the kernel writes.
    pub unsafe fn launch_kernel(
        &self,
        function: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        stream: sys::CUstream,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: per this function's contract; the driver copies the argument values before
        // returning, so `params` need only live for the call.
        self.check("cuLaunchKernel", unsafe {
            (self.api.cuLaunchKernel)(
                function,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                0,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    /// # Safety
    /// `dst .. dst + 4·words` is device memory of the current context; `stream` is live.
    pub unsafe fn memset_d32_async(
        &self,
        dst: sys::CUdeviceptr,
        value: u32,
        words: usize,
        stream: sys::CUstream,
    ) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuMemsetD32Async", unsafe { (self.api.cuMemsetD32Async)(dst, value, words, stream) })
    }

    /// Import an OPAQUE_FD memory export of `size` bytes (the allocation size).
    ///
    /// # Safety
    /// `fd` is an open OPAQUE_FD memory export. On success the driver owns it (the caller must
    /// not close it); on failure the caller still does. Use it through `ImportFd::import` with
    /// `FdOwnership::TakenOnSuccess`.
    pub unsafe fn import_external_memory_fd(
        &self,
        fd: RawFd,
        size: u64,
        dedicated: bool,
    ) -> Result<sys::CUexternalMemory> {
        let desc = memory_handle_desc(fd, size, dedicated);
        let mut ext = std::ptr::null_mut();
        // SAFETY: `desc` is fully initialised; fd ownership per this function's contract.
        self.check("cuImportExternalMemory", unsafe { (self.api.cuImportExternalMemory)(&mut ext, &desc) })?;
        Ok(ext)
    }

    /// Map `size` bytes from `offset` of imported memory as a device pointer.
    ///
    /// # Safety
    /// `ext` is live imported memory of the current context.
    pub unsafe fn external_memory_mapped_buffer(
        &self,
        ext: sys::CUexternalMemory,
        offset: u64,
        size: u64,
    ) -> Result<sys::CUdeviceptr> {
        // SAFETY: a plain C struct for which all-zero is a valid value.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { std::mem::zeroed() };
        desc.offset = offset;
        desc.size = size;
        let mut ptr = 0;
        // SAFETY: `ext` is live per this function's contract; `desc` is initialised.
        self.check("cuExternalMemoryGetMappedBuffer", unsafe {
            (self.api.cuExternalMemoryGetMappedBuffer)(&mut ptr, ext, &desc)
        })?;
        Ok(ptr)
    }

    /// # Safety
    /// `ptr` came from [`Driver::external_memory_mapped_buffer`] or [`Driver::mem_alloc`], no
    /// pending work uses it, and it is not used again.
    pub unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuMemFree_v2", unsafe { (self.api.cuMemFree_v2)(ptr) })
    }

    /// # Safety
    /// `ext` is live imported memory whose mapped buffers have all been freed; not used again.
    pub unsafe fn destroy_external_memory(&self, ext: sys::CUexternalMemory) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuDestroyExternalMemory", unsafe { (self.api.cuDestroyExternalMemory)(ext) })
    }

    /// Map imported memory as a mipmapped array of one level described by `desc` (see
    /// [`mipmapped_array_desc`]).
    ///
    /// # Safety
    /// `ext` is live imported memory of the current context.
    pub unsafe fn external_memory_mapped_mipmapped_array(
        &self,
        ext: sys::CUexternalMemory,
        desc: &sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC,
    ) -> Result<sys::CUmipmappedArray> {
        let mut array = std::ptr::null_mut();
        // SAFETY: `ext` is live per this function's contract; `desc` is initialised and outlives
        // the call.
        self.check("cuExternalMemoryGetMappedMipmappedArray", unsafe {
            (self.api.cuExternalMemoryGetMappedMipmappedArray)(&mut array, ext, desc)
        })?;
        Ok(array)
    }

    /// Level `level` of a mipmapped array (owned by the mipmapped array: not destroyed on its
    /// own).
    ///
    /// # Safety
    /// `array` is a live mipmapped array of the current context.
    pub unsafe fn mipmapped_array_level(
        &self,
        array: sys::CUmipmappedArray,
        level: u32,
    ) -> Result<sys::CUarray> {
        let mut level_array = std::ptr::null_mut();
        // SAFETY: `array` is live per this function's contract; writes one handle.
        self.check("cuMipmappedArrayGetLevel", unsafe {
            (self.api.cuMipmappedArrayGetLevel)(&mut level_array, array, level)
        })?;
        Ok(level_array)
    }

    /// # Safety
    /// `array` came from [`Driver::external_memory_mapped_mipmapped_array`], no surface object
    /// or pending work uses it, and it is not used again.
    pub unsafe fn mipmapped_array_destroy(&self, array: sys::CUmipmappedArray) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuMipmappedArrayDestroy", unsafe { (self.api.cuMipmappedArrayDestroy)(array) })
    }

    /// A surface object over `array`, for `surf2Dwrite` / `surf2Dread` in kernels.
    ///
    /// # Safety
    /// `array` is a live array of the current context, created with `CUDA_ARRAY3D_SURFACE_LDST`.
    pub unsafe fn surf_object_create(&self, array: sys::CUarray) -> Result<sys::CUsurfObject> {
        let desc = array_resource_desc(array);
        let mut surface = 0;
        // SAFETY: `desc` is initialised and names a live array per this function's contract.
        self.check("cuSurfObjectCreate", unsafe { (self.api.cuSurfObjectCreate)(&mut surface, &desc) })?;
        Ok(surface)
    }

    /// # Safety
    /// `surface` came from [`Driver::surf_object_create`], no pending work uses it, and it is not
    /// used again.
    pub unsafe fn surf_object_destroy(&self, surface: sys::CUsurfObject) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuSurfObjectDestroy", unsafe { (self.api.cuSurfObjectDestroy)(surface) })
    }

    /// Import an OPAQUE_FD semaphore export, as a timeline or a binary semaphore.
    ///
    /// # Safety
    /// As [`Driver::import_external_memory_fd`], for a semaphore export of the matching type.
    pub unsafe fn import_external_semaphore_fd(
        &self,
        fd: RawFd,
        timeline: bool,
    ) -> Result<sys::CUexternalSemaphore> {
        let desc = semaphore_handle_desc(fd, timeline);
        let mut sem = std::ptr::null_mut();
        // SAFETY: `desc` is initialised; fd ownership per this function's contract.
        self.check("cuImportExternalSemaphore", unsafe {
            (self.api.cuImportExternalSemaphore)(&mut sem, &desc)
        })?;
        Ok(sem)
    }

    /// # Safety
    /// `sem` is a live imported semaphore that no pending work uses; not used again.
    pub unsafe fn destroy_external_semaphore(&self, sem: sys::CUexternalSemaphore) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuDestroyExternalSemaphore", unsafe { (self.api.cuDestroyExternalSemaphore)(sem) })
    }

    /// Enqueue a signal of `sem` (to `value` for a timeline; `value` is ignored for binary).
    ///
    /// # Safety
    /// `sem` and `stream` are live objects of the current context.
    pub unsafe fn signal_external_semaphore(
        &self,
        sem: sys::CUexternalSemaphore,
        value: u64,
        stream: sys::CUstream,
    ) -> Result<()> {
        // SAFETY: a plain C struct for which all-zero is a valid value.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
        params.params.fence.value = value;
        // SAFETY: one semaphore, one parameter block; both live for the call.
        self.check("cuSignalExternalSemaphoresAsync", unsafe {
            (self.api.cuSignalExternalSemaphoresAsync)(&sem, &params, 1, stream)
        })
    }

    /// Enqueue a wait on `sem` (until ≥ `value` for a timeline; once-signalled for binary).
    ///
    /// # Safety
    /// `sem` and `stream` are live objects of the current context.
    pub unsafe fn wait_external_semaphore(
        &self,
        sem: sys::CUexternalSemaphore,
        value: u64,
        stream: sys::CUstream,
    ) -> Result<()> {
        // SAFETY: a plain C struct for which all-zero is a valid value.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
        params.params.fence.value = value;
        // SAFETY: one semaphore, one parameter block; both live for the call.
        self.check("cuWaitExternalSemaphoresAsync", unsafe {
            (self.api.cuWaitExternalSemaphoresAsync)(&sem, &params, 1, stream)
        })
    }

    /// (free, total) device memory of the current context's device, in bytes.
    pub fn mem_get_info(&self) -> Result<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two size_t; without a current context this is an error code.
        self.check("cuMemGetInfo_v2", unsafe { (self.api.cuMemGetInfo_v2)(&mut free, &mut total) })?;
        Ok((free as u64, total as u64))
    }

    /// Allocate `bytes` of device memory in the current context (`cuMemAlloc`).
    pub fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        let mut ptr = 0;
        // SAFETY: writes one device pointer; without a current context this is an error code.
        self.check("cuMemAlloc_v2", unsafe { (self.api.cuMemAlloc_v2)(&mut ptr, bytes) })?;
        Ok(ptr)
    }

    /// Allocate `bytes` of page-locked host memory, mapped for the current context's device
    /// (`cuMemAllocHost`).
    pub fn mem_alloc_host(&self, bytes: usize) -> Result<*mut c_void> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: writes one host pointer; without a current context this is an error code.
        self.check("cuMemAllocHost_v2", unsafe { (self.api.cuMemAllocHost_v2)(&mut ptr, bytes) })?;
        if ptr.is_null() {
            return Err(Error::invalid(Api::Cuda, "cuMemAllocHost_v2 returned a null pointer"));
        }
        Ok(ptr)
    }

    /// # Safety
    /// `ptr` came from [`Driver::mem_alloc_host`], no pending work uses it, and it is not used
    /// again.
    pub unsafe fn mem_free_host(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuMemFreeHost", unsafe { (self.api.cuMemFreeHost)(ptr) })
    }

    /// Enqueue a copy of `bytes` from device memory `src` to host memory `dst` on `stream`.
    ///
    /// # Safety
    /// `src .. src + bytes` is device memory of the current context; `dst .. dst + bytes` is host
    /// memory that stays valid, and that nothing else reads or writes, until the copy has
    /// completed (page-locked for the copy to be asynchronous); `stream` is live.
    pub unsafe fn memcpy_dtoh_async(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<()> {
        // SAFETY: per this function's contract.
        self.check("cuMemcpyDtoHAsync_v2", unsafe {
            (self.api.cuMemcpyDtoHAsync_v2)(dst, src, bytes, stream)
        })
    }
}

/// The loaded NVRTC library, checked for every symbol used here.
pub struct Nvrtc {
    api: NvrtcApi,
    /// Keeps every pointer in `api` valid; never unloaded (NVRTC lives in a static).
    _lib: Library,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc").finish_non_exhaustive()
    }
}

static NVRTC: OnceLock<Result<Nvrtc>> = OnceLock::new();

impl Nvrtc {
    /// Load libnvrtc and check its symbols, once per process.
    pub fn get() -> Result<&'static Nvrtc> {
        NVRTC.get_or_init(|| Nvrtc::load(NVRTC_LIBRARIES)).as_ref().map_err(Error::clone)
    }

    fn load(names: &[&str]) -> Result<Nvrtc> {
        let unavailable = |reason: String| Error::unavailable(Api::Nvrtc, "", reason);
        // SAFETY: tries to dlopen NVRTC's names; its initialisers are safe to run.
        let Some(lib) = (unsafe { open_first(names) }) else {
            return Err(unavailable(NO_NVRTC.to_string()));
        };
        let present = |name: &str| {
            // SAFETY: as in `Driver::load`.
            unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok()
        };
        let missing = missing_symbols(NVRTC_SYMBOLS, present);
        if !missing.is_empty() {
            return Err(unavailable(format!(
                "libnvrtc lacks {} (NVRTC 12 or newer needed)",
                missing.join(", ")
            )));
        }
        // SAFETY: `lib` is libnvrtc, whose symbols have the signatures `NvrtcApi` declares.
        let api = unsafe { NvrtcApi::resolve(&lib) }.map_err(unavailable)?;
        Ok(Nvrtc { api, _lib: lib })
    }

    fn check(&self, call: &'static str, code: NvrtcStatus) -> Result<()> {
        if code == NvrtcStatus::SUCCESS {
            return Ok(());
        }
        // SAFETY: takes any integer code; returns a pointer to a static string (NVRTC's name of
        // the code, e.g. "NVRTC_ERROR_COMPILATION"), or null.
        let name = unsafe { c_string((self.api.nvrtcGetErrorString)(code)) };
        Err(Error::failed(Api::Nvrtc, call, i64::from(code.0), nvrtc_status_message(code, name)))
    }

    /// (major, minor).
    pub fn version(&self) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints.
        self.check("nvrtcVersion", unsafe { (self.api.nvrtcVersion)(&mut major, &mut minor) })?;
        Ok((major, minor))
    }

    /// The `sm_XY` numbers (e.g. 90) this NVRTC can compile for.
    pub fn supported_archs(&self) -> Result<Vec<i32>> {
        let mut n = 0;
        // SAFETY: writes one int.
        self.check("nvrtcGetNumSupportedArchs", unsafe { (self.api.nvrtcGetNumSupportedArchs)(&mut n) })?;
        let mut archs = vec![0; n.max(0) as usize];
        // SAFETY: `archs` has room for the `n` ints the call writes.
        self.check("nvrtcGetSupportedArchs", unsafe {
            (self.api.nvrtcGetSupportedArchs)(archs.as_mut_ptr())
        })?;
        Ok(archs)
    }

    /// Create a program from `source` (no headers).
    pub fn create_program(&self, source: &str, name: &str) -> Result<nvrtc_sys::nvrtcProgram> {
        let invalid =
            |what: &str| Error::invalid(Api::Nvrtc, format!("nvrtcCreateProgram: {what} contains NUL"));
        let csrc = CString::new(source).map_err(|_| invalid("the source"))?;
        let cname = CString::new(name).map_err(|_| invalid("the program name"))?;
        let mut prog = std::ptr::null_mut();
        // SAFETY: both strings outlive the call (NVRTC copies them); no headers.
        self.check("nvrtcCreateProgram", unsafe {
            (self.api.nvrtcCreateProgram)(
                &mut prog,
                csrc.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        })?;
        Ok(prog)
    }

    /// # Safety
    /// `prog` is a live program.
    pub unsafe fn compile_program(&self, prog: nvrtc_sys::nvrtcProgram, options: &[String]) -> Result<()> {
        let copts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::invalid(Api::Nvrtc, "nvrtcCompileProgram: an option contains NUL"))?;
        let ptrs: Vec<*const c_char> = copts.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: `prog` is live per this function's contract; the option strings outlive the
        // call.
        self.check("nvrtcCompileProgram", unsafe {
            (self.api.nvrtcCompileProgram)(prog, ptrs.len() as c_int, ptrs.as_ptr())
        })
    }

    /// # Safety
    /// `prog` is a live program.
    pub unsafe fn program_log(&self, prog: nvrtc_sys::nvrtcProgram) -> Result<String> {
        let mut size = 0;
        // SAFETY: `prog` is live; writes one size_t.
        self.check("nvrtcGetProgramLogSize", unsafe { (self.api.nvrtcGetProgramLogSize)(prog, &mut size) })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has the `size` bytes the call writes.
        self.check("nvrtcGetProgramLog", unsafe {
            (self.api.nvrtcGetProgramLog)(prog, buf.as_mut_ptr().cast())
        })?;
        let text = String::from_utf8_lossy(&buf);
        Ok(text.trim_end_matches('\0').trim().to_string())
    }

    /// The compiled cubin (after a compile for an `sm_XY` architecture).
    ///
    /// # Safety
    /// `prog` is a live, successfully compiled program.
    pub unsafe fn cubin(&self, prog: nvrtc_sys::nvrtcProgram) -> Result<Vec<u8>> {
        let mut size = 0;
        // SAFETY: `prog` is live; writes one size_t.
        self.check("nvrtcGetCUBINSize", unsafe { (self.api.nvrtcGetCUBINSize)(prog, &mut size) })?;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the `size` bytes the call writes.
        self.check("nvrtcGetCUBIN", unsafe { (self.api.nvrtcGetCUBIN)(prog, buf.as_mut_ptr().cast()) })?;
        Ok(buf)
    }

    /// The compiled PTX, NUL-terminated as `cuModuleLoadData` wants it.
    ///
    /// # Safety
    /// `prog` is a live, successfully compiled program.
    pub unsafe fn ptx(&self, prog: nvrtc_sys::nvrtcProgram) -> Result<Vec<u8>> {
        let mut size = 0;
        // SAFETY: `prog` is live; writes one size_t (the size includes the NUL).
        self.check("nvrtcGetPTXSize", unsafe { (self.api.nvrtcGetPTXSize)(prog, &mut size) })?;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the `size` bytes the call writes.
        self.check("nvrtcGetPTX", unsafe { (self.api.nvrtcGetPTX)(prog, buf.as_mut_ptr().cast()) })?;
        if buf.last() != Some(&0) {
            buf.push(0);
        }
        Ok(buf)
    }

    /// # Safety
    /// `prog` is a live program, not used again.
    pub unsafe fn destroy_program(&self, prog: nvrtc_sys::nvrtcProgram) -> Result<()> {
        let mut p = prog;
        // SAFETY: per this function's contract.
        self.check("nvrtcDestroyProgram", unsafe { (self.api.nvrtcDestroyProgram)(&mut p) })
    }
}

/// The message of a failed NVRTC call: NVRTC's name for the code, else "NVRTC error <n>".
pub fn nvrtc_status_message(code: NvrtcStatus, name: Option<String>) -> String {
    name.filter(|n| !n.is_empty()).unwrap_or_else(|| format!("NVRTC error {}", code.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_text_combines_name_and_description() {
        assert_eq!(
            describe_status(2, Some("CUDA_ERROR_OUT_OF_MEMORY"), Some("out of memory")),
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory"
        );
        assert_eq!(describe_status(2, Some("CUDA_ERROR_OUT_OF_MEMORY"), None), "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(describe_status(999, None, Some("unknown error")), "status 999: unknown error");
        assert_eq!(describe_status(1234, None, None), "status 1234");
    }

    #[test]
    fn api_error_names_the_call_and_adds_known_hints() {
        let e = api_error("cuMemsetD32Async", 1, Some("CUDA_ERROR_INVALID_VALUE"), Some("invalid argument"));
        assert_eq!(
            e.to_string(),
            "cuda: cuMemsetD32Async failed (status 1): CUDA_ERROR_INVALID_VALUE: invalid argument"
        );
        assert_eq!((e.api(), e.call(), e.status()), (Api::Cuda, "cuMemsetD32Async", Some(1)));
        assert_eq!(e.kind(), crate::ErrorKind::Call);
        assert!(!e.is_environment());
        let e = api_error(
            "cuModuleLoadData",
            222,
            Some("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
            Some("the provided PTX was compiled with an unsupported toolchain."),
        );
        let text = e.to_string();
        assert!(text
            .starts_with("cuda: cuModuleLoadData failed (status 222): CUDA_ERROR_UNSUPPORTED_PTX_VERSION"));
        assert!(text.contains("NVRTC newer than this driver"), "{text}");
        let e = api_error("cuImportExternalMemory", 1, Some("CUDA_ERROR_INVALID_VALUE"), None);
        assert!(e.to_string().contains("allocation size"), "{e}");
        assert_eq!((e.call(), e.status()), ("cuImportExternalMemory", Some(1)));
        // No device is the machine's fault.
        let e = api_error(
            "cuInit",
            100,
            Some("CUDA_ERROR_NO_DEVICE"),
            Some("no CUDA-capable device is detected"),
        );
        assert!(e.is_environment(), "{e}");
        assert!(e.message().ends_with("(no NVIDIA GPU is visible to this process)"), "{e}");
    }

    #[test]
    fn unknown_codes_are_named_by_number() {
        // A code newer than this driver's cuGetErrorName (or than cudarc's enum) is just a number.
        let name = cuda_status_name(CuStatus(1234), None);
        assert_eq!(name, "CUDA error 1234");
        let e = api_error("cuStreamCreate", 1234, Some(&name), None);
        assert_eq!(e.to_string(), "cuda: cuStreamCreate failed (status 1234): CUDA error 1234");
        assert_eq!(e.status(), Some(1234));
        assert_eq!(
            cuda_status_name(CuStatus(2), Some("CUDA_ERROR_OUT_OF_MEMORY".into())),
            "CUDA_ERROR_OUT_OF_MEMORY"
        );
        assert_eq!(nvrtc_status_message(NvrtcStatus(77), None), "NVRTC error 77");
        assert_eq!(nvrtc_status_message(NvrtcStatus(77), Some(String::new())), "NVRTC error 77");
        assert_eq!(
            nvrtc_status_message(NvrtcStatus(6), Some("NVRTC_ERROR_COMPILATION".into())),
            "NVRTC_ERROR_COMPILATION"
        );
    }

    #[test]
    fn named_status_codes_match_the_headers() {
        // Reading a discriminant of an enum value we construct is sound; only values written by
        // the library must never be held in the enum.
        assert_eq!(CuStatus::SUCCESS.0, sys::CUresult::CUDA_SUCCESS as c_int);
        assert_eq!(CuStatus::NOT_READY.0, sys::CUresult::CUDA_ERROR_NOT_READY as c_int);
        assert_eq!(NvrtcStatus::SUCCESS.0, nvrtc_sys::nvrtcResult::NVRTC_SUCCESS as c_int);
        // The status types are exactly the C `int` the functions return.
        assert_eq!(std::mem::size_of::<CuStatus>(), std::mem::size_of::<sys::CUresult>());
        assert_eq!(std::mem::size_of::<NvrtcStatus>(), std::mem::size_of::<nvrtc_sys::nvrtcResult>());
        // Enums passed in are int-sized too.
        assert_eq!(std::mem::size_of::<sys::CUdevice_attribute>(), std::mem::size_of::<c_int>());
    }

    /// Every entry point called in this file (`(….api.NAME)(`) is in the symbol lists checked
    /// before any call is made, and the lists name nothing this file does not call. (The lists
    /// and the tables cannot drift apart: both come from one `symbol_table!` invocation.)
    #[test]
    fn symbol_lists_cover_every_call() {
        let source = include_str!("sys.rs");
        let code = &source[..source.find("#[cfg(test)]\nmod tests").expect("test module marker")];
        let prefix = ".api.";
        let called: std::collections::BTreeSet<String> = code
            .match_indices(prefix)
            .map(|(i, _)| {
                let rest = &code[i + prefix.len()..];
                let name: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                assert!(rest[name.len()..].starts_with(")("), "{name} is named but not called");
                name
            })
            .collect();
        let listed: std::collections::BTreeSet<String> =
            DRIVER_SYMBOLS.iter().chain(NVRTC_SYMBOLS).map(|s| s.to_string()).collect();
        assert_eq!(called, listed, "DRIVER_SYMBOLS / NVRTC_SYMBOLS out of step with the calls");
        assert_eq!(DRIVER_SYMBOLS.len() + NVRTC_SYMBOLS.len(), listed.len(), "a symbol is listed twice");
        assert!(DRIVER_SYMBOLS.iter().all(|s| s.starts_with("cu")));
        assert!(NVRTC_SYMBOLS.iter().all(|s| s.starts_with("nvrtc")));
    }

    #[test]
    fn missing_libraries_are_reported_in_one_line() {
        assert!(!NO_DRIVER.contains('\n'));
        assert!(!NO_NVRTC.contains('\n'));
        // On a machine without libcuda (CI), the gate says so instead of panicking.
        if !driver_library_present() {
            let err = Driver::get().unwrap_err();
            assert_eq!(err.to_string(), format!("cuda: {NO_DRIVER}"));
            assert!(err.is_environment());
        }
        // SAFETY: only tries to dlopen NVRTC's names.
        if unsafe { open_first(NVRTC_LIBRARIES) }.is_none() {
            let err = Nvrtc::get().unwrap_err();
            assert_eq!((err.api(), err.kind()), (Api::Nvrtc, crate::ErrorKind::Unavailable));
            assert!(err.to_string().contains("libnvrtc.so"), "{err}");
        }
        let err = Driver::load(&["libvkhip-no-such-library.so"]).unwrap_err();
        assert_eq!((err.api(), err.kind(), err.status()), (Api::Cuda, crate::ErrorKind::Unavailable, None));
        assert_eq!(err.message(), NO_DRIVER);
        assert!(err.is_environment());
        let err = Nvrtc::load(&["libvkhip-no-such-library.so"]).unwrap_err();
        assert_eq!(err.message(), NO_NVRTC);
    }

    #[test]
    fn a_library_without_the_symbols_is_refused_without_a_call() {
        // libc loads but exports none of the entry points: the presence check names them all
        // (and no function pointer is ever resolved or called).
        let err = Driver::load(&["libc.so.6"]).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Unavailable);
        let err = err.message();
        assert!(err.starts_with("the NVIDIA driver's libcuda lacks cuCtxGetCurrent, "), "{err}");
        assert!(err.contains("cuWaitExternalSemaphoresAsync"), "{err}");
        assert!(!err.contains('\n'));
        let err = Nvrtc::load(&["libc.so.6"]).unwrap_err();
        let err = err.message();
        assert!(err.starts_with("libnvrtc lacks nvrtcCompileProgram, "), "{err}");
    }
}

/// The import descriptor for an OPAQUE_FD memory handle. Built field by field: the handle-type
/// field is a Rust enum without a zero variant, so the struct has no valid all-zero value
/// (`mem::zeroed` panics on it).
pub fn memory_handle_desc(fd: i32, size: u64, dedicated: bool) -> sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
    let mut desc = std::mem::MaybeUninit::<sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC>::zeroed();
    let p = desc.as_mut_ptr();
    // SAFETY: `p` points at zeroed storage of the right type; writing the enum field leaves every
    // field valid (the rest are integers, raw pointers and unions of those, all valid as zero).
    unsafe {
        std::ptr::addr_of_mut!((*p).type_)
            .write(sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD);
        let mut desc = desc.assume_init();
        desc.handle.fd = fd;
        desc.size = size;
        desc.flags = if dedicated { sys::CUDA_EXTERNAL_MEMORY_DEDICATED } else { 0 };
        desc
    }
}

/// The import descriptor for a semaphore fd (timeline or binary); see [`memory_handle_desc`].
pub fn semaphore_handle_desc(fd: i32, timeline: bool) -> sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
    use sys::CUexternalSemaphoreHandleType as T;
    let ty = if timeline {
        T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
    } else {
        T::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
    };
    let mut desc = std::mem::MaybeUninit::<sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC>::zeroed();
    let p = desc.as_mut_ptr();
    // SAFETY: as in `memory_handle_desc`.
    unsafe {
        std::ptr::addr_of_mut!((*p).type_).write(ty);
        let mut desc = desc.assume_init();
        desc.handle.fd = fd;
        desc
    }
}

/// How an imported image is viewed: a mipmapped array of one level, `width` × `height` texels of
/// `format` (`Depth` 0: a 2D array), usable by surface loads and stores, and flagged as a colour
/// attachment when Vulkan can render into it (the driver API's reference for
/// `cuExternalMemoryGetMappedMipmappedArray` requires the flag for an array "bound as a color
/// target in the graphics API"). Built field by field (the format field is a Rust enum without a
/// zero variant, as in [`memory_handle_desc`]).
pub fn mipmapped_array_desc(shape: ImageShape) -> sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC {
    let ImageShape { format, width, height, color_attachment } = shape;
    use crate::ChannelType;
    use sys::CUarray_format as F;
    let channel_format = match format.channel_type() {
        ChannelType::U8 => F::CU_AD_FORMAT_UNSIGNED_INT8,
        ChannelType::F16 => F::CU_AD_FORMAT_HALF,
        ChannelType::F32 => F::CU_AD_FORMAT_FLOAT,
    };
    let mut desc = std::mem::MaybeUninit::<sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC>::zeroed();
    let p = desc.as_mut_ptr();
    // SAFETY: `p` points at zeroed storage of the right type; writing the enum field leaves every
    // field valid (the rest are integers, valid as zero).
    unsafe {
        std::ptr::addr_of_mut!((*p).arrayDesc.Format).write(channel_format);
        let mut desc = desc.assume_init();
        desc.offset = 0;
        desc.arrayDesc.Width = width as usize;
        desc.arrayDesc.Height = height as usize;
        desc.arrayDesc.Depth = 0;
        desc.arrayDesc.NumChannels = format.channels();
        desc.arrayDesc.Flags = sys::CUDA_ARRAY3D_SURFACE_LDST
            | if color_attachment { sys::CUDA_ARRAY3D_COLOR_ATTACHMENT } else { 0 };
        desc.numLevels = 1;
        desc
    }
}

/// The resource descriptor of a surface object over `array`.
pub fn array_resource_desc(array: sys::CUarray) -> sys::CUDA_RESOURCE_DESC {
    let mut desc = std::mem::MaybeUninit::<sys::CUDA_RESOURCE_DESC>::zeroed();
    let p = desc.as_mut_ptr();
    // SAFETY: as in `mipmapped_array_desc`: the enum field is written before the value is read;
    // the union's other members are integers and pointers, valid as zero.
    unsafe {
        std::ptr::addr_of_mut!((*p).resType).write(sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
        let mut desc = desc.assume_init();
        desc.res.array.hArray = array;
        desc.flags = 0;
        desc
    }
}

#[cfg(test)]
mod descriptor_tests {
    use super::*;
    use crate::ImageFormat;

    // These structs were once built with `mem::zeroed`, which panics (abort in the import path)
    // because their handle-type enum has no zero value. Building them must work without a GPU.
    #[test]
    fn import_descriptors_build_without_zeroed_enums() {
        let m = memory_handle_desc(7, 4096, true);
        assert_eq!(m.type_, sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD);
        // SAFETY: `fd` is the member just written.
        assert_eq!(unsafe { m.handle.fd }, 7);
        assert_eq!((m.size, m.flags), (4096, sys::CUDA_EXTERNAL_MEMORY_DEDICATED));
        let s = semaphore_handle_desc(9, true);
        assert_eq!(
            s.type_,
            sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
        );
        // SAFETY: as above.
        assert_eq!(unsafe { s.handle.fd }, 9);
        // The descriptors that are still built with `mem::zeroed` must stay zero-valid.
        // SAFETY: zeroed is checked at run time; a type without a zero value panics here.
        let _: sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let _: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let _: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
        let b = semaphore_handle_desc(3, false);
        assert_eq!(b.type_, sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD);
        let shared = memory_handle_desc(4, 8192, false);
        assert_eq!((shared.size, shared.flags), (8192, 0));
    }

    #[test]
    fn image_descriptors_follow_the_format() {
        use sys::CUarray_format as F;
        let expected = [
            (ImageFormat::R32Float, F::CU_AD_FORMAT_FLOAT, 1),
            (ImageFormat::Rgba8Unorm, F::CU_AD_FORMAT_UNSIGNED_INT8, 4),
            (ImageFormat::Rgba16Float, F::CU_AD_FORMAT_HALF, 4),
            (ImageFormat::Rgba32Float, F::CU_AD_FORMAT_FLOAT, 4),
        ];
        for (format, channel_format, channels) in expected {
            let d =
                mipmapped_array_desc(ImageShape { format, width: 640, height: 480, color_attachment: false });
            let a = d.arrayDesc;
            assert_eq!((d.offset, d.numLevels), (0, 1), "{format}");
            assert_eq!((a.Width, a.Height, a.Depth), (640, 480, 0), "{format}");
            assert_eq!((a.Format, a.NumChannels), (channel_format, channels), "{format}");
            assert_eq!(a.Flags, sys::CUDA_ARRAY3D_SURFACE_LDST, "{format}");
            assert!(d.reserved.iter().all(|&r| r == 0), "{format}");
            let target =
                mipmapped_array_desc(ImageShape { format, width: 640, height: 480, color_attachment: true });
            let flags = sys::CUDA_ARRAY3D_SURFACE_LDST | sys::CUDA_ARRAY3D_COLOR_ATTACHMENT;
            assert_eq!(target.arrayDesc.Flags, flags, "{format}: a render target is flagged as one");
        }
        let array = 0x1234usize as sys::CUarray;
        let r = array_resource_desc(array);
        assert_eq!(r.resType, sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
        // SAFETY: `array` is the member just written.
        assert_eq!(unsafe { r.res.array.hArray }, array);
        assert_eq!(r.flags, 0);
    }
}
