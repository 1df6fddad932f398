//! The crate's one error type.
//!
//! Every failure says which API it came from ([`Api`]), which call failed (the C function's name,
//! `vkAllocateMemory`, `cuImportExternalMemory`, …), the numeric status that call returned when
//! there is one ([`Error::status`], as the C library returned it: `VkResult`, `CUresult`,
//! `nvrtcResult`, `hipError_t`), and what kind of failure it is ([`ErrorKind`]).
//!
//! Status values stay integers. A driver newer than these bindings can return a code no Rust enum
//! lists, and a Rust enum holding an unlisted value is undefined behaviour; so the binding layers
//! (`cuda::sys`, `hip::ffi`, ash for Vulkan) hand raw integers to [`Error::call`] and nothing
//! above them sees a status at all. Match on the number:
//!
//! ```
//! use vkhip_interop::{Api, Error, ErrorKind};
//! let e = Error::failed(Api::Cuda, "cuImportExternalMemory", 1, "CUDA_ERROR_INVALID_VALUE: invalid argument");
//! assert_eq!((e.api(), e.call(), e.status(), e.kind()), (Api::Cuda, "cuImportExternalMemory", Some(1), ErrorKind::Call));
//! assert!(!e.is_environment());
//! assert_eq!(e.to_string(), "cuda: cuImportExternalMemory failed (status 1): CUDA_ERROR_INVALID_VALUE: invalid argument");
//!
//! // No driver or no device is the machine's fault, not the program's.
//! let e = Error::failed(Api::Cuda, "cuInit", 100, "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected");
//! assert!(e.is_environment());
//! ```

use std::fmt;

/// The library a failure belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// Vulkan (the loader, the driver, or a capability of the device).
    Vulkan,
    /// The CUDA driver API (`libcuda`).
    Cuda,
    /// NVIDIA's run-time compiler (`libnvrtc`).
    Nvrtc,
    /// The HIP runtime (`libamdhip64`).
    Hip,
    /// HIP's run-time compiler (`libhiprtc`, or inside `libamdhip64` before ROCm 6).
    Hiprtc,
}

impl Api {
    /// "vulkan", "cuda", "nvrtc", "hip" or "hiprtc".
    pub fn name(self) -> &'static str {
        match self {
            Api::Vulkan => "vulkan",
            Api::Cuda => "cuda",
            Api::Nvrtc => "nvrtc",
            Api::Hip => "hip",
            Api::Hiprtc => "hiprtc",
        }
    }

    /// The statuses of this API that mean "no driver, no device or a driver too old" rather
    /// than a bug: `VK_ERROR_INITIALIZATION_FAILED` (-3), `VK_ERROR_EXTENSION_NOT_PRESENT`
    /// (-7), `VK_ERROR_FEATURE_NOT_PRESENT` (-8), `VK_ERROR_INCOMPATIBLE_DRIVER` (-9);
    /// `CUDA_ERROR_NO_DEVICE` (100), `CUDA_ERROR_INSUFFICIENT_DRIVER` (35),
    /// `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH` (803), `CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE`
    /// (804); `hipErrorNoDevice` (100), `hipErrorInsufficientDriver` (35).
    fn environment_statuses(self) -> &'static [i64] {
        match self {
            Api::Vulkan => &[-3, -7, -8, -9],
            Api::Cuda => &[35, 100, 803, 804],
            Api::Hip => &[35, 100],
            Api::Nvrtc | Api::Hiprtc => &[],
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of failure an [`Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The library or a device is not there (no driver, no GPU, a library that does not load):
    /// the machine's environment, not a bug.
    Unavailable,
    /// The device or driver cannot do what was asked (an extension or feature not enabled, an
    /// export type, an image format, devices that do not match): environment too.
    Unsupported,
    /// A call returned a failure [status](Error::status).
    Call,
    /// The run-time compiler rejected a kernel; the message holds its log.
    Compile,
    /// The caller passed something the crate refuses (a size of 0, a buffer larger than its
    /// allocation, a kernel that would write past the end): a bug in the caller.
    Invalid,
    /// A host wait ran past its limit (something upstream never signalled).
    Timeout,
}

/// A limit of the device that a shared object would exceed ([`Error::limit`]): the crate
/// refuses such an object before the Vulkan call the specification forbids for it, and the
/// error's message names the limit as the specification does, with the device's value.
///
/// ```
/// use vkhip_interop::{Api, Error, ErrorKind, Limit};
/// let e = Error::exceeds(Api::Vulkan, Limit::MaxBufferSize, "gpu: a buffer of 8 GiB exceeds maxBufferSize (4 GiB)");
/// assert_eq!((e.kind(), e.limit()), (ErrorKind::Unsupported, Some(Limit::MaxBufferSize)));
/// assert_eq!(Limit::MaxBufferSize.name(), "maxBufferSize");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// `VkPhysicalDeviceMaintenance4Properties::maxBufferSize` (Vulkan 1.3 or
    /// `VK_KHR_maintenance4`): the largest `VkBufferCreateInfo::size`.
    MaxBufferSize,
    /// `VkPhysicalDeviceMaintenance3Properties::maxMemoryAllocationSize` (Vulkan 1.1): the
    /// largest allocation the device promises to make.
    MaxMemoryAllocationSize,
    /// `VkMemoryHeap::size` of the heap the allocation's memory type is in: no allocation may be
    /// larger (`VUID-vkAllocateMemory-pAllocateInfo-01713`).
    MemoryHeapSize,
    /// `VkPhysicalDeviceLimits::maxMemoryAllocationCount`: allocations alive at once (the crate
    /// counts its own; an engine's allocations on a borrowed device are its own business).
    MaxMemoryAllocationCount,
    /// `VkImageFormatProperties::maxExtent` of the format, with the image's usage and OPAQUE_FD
    /// export (`imageCreateMaxExtent`).
    MaxExtent,
    /// `VkImageFormatProperties::maxResourceSize` of the format, with the image's usage and
    /// OPAQUE_FD export: the image's bytes.
    MaxResourceSize,
    /// `VkPhysicalDeviceLimits::maxFramebufferWidth`, for an image that can be a render target.
    MaxFramebufferWidth,
    /// `VkPhysicalDeviceLimits::maxFramebufferHeight`, for an image that can be a render target.
    MaxFramebufferHeight,
}

impl Limit {
    /// The limit's name in the Vulkan specification ("maxBufferSize", "VkMemoryHeap::size", …).
    pub fn name(self) -> &'static str {
        match self {
            Limit::MaxBufferSize => "maxBufferSize",
            Limit::MaxMemoryAllocationSize => "maxMemoryAllocationSize",
            Limit::MemoryHeapSize => "VkMemoryHeap::size",
            Limit::MaxMemoryAllocationCount => "maxMemoryAllocationCount",
            Limit::MaxExtent => "VkImageFormatProperties::maxExtent",
            Limit::MaxResourceSize => "VkImageFormatProperties::maxResourceSize",
            Limit::MaxFramebufferWidth => "maxFramebufferWidth",
            Limit::MaxFramebufferHeight => "maxFramebufferHeight",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed interop call or a refused request: the API, the C call, its numeric status and the
/// kind of failure. Statuses stay integers (no Rust enum can hold a value a newer driver returns).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{api}: {}{message}", call_prefix(*kind, call, *status))]
pub struct Error {
    api: Api,
    call: &'static str,
    status: Option<i64>,
    kind: ErrorKind,
    limit: Option<Limit>,
    message: String,
}

impl Error {
    /// `call` returned the failure status `status`; `message` says what it means (the status'
    /// name and description, and any hint).
    pub fn failed(api: Api, call: &'static str, status: i64, message: impl Into<String>) -> Self {
        Error { api, call, status: Some(status), kind: ErrorKind::Call, limit: None, message: message.into() }
    }

    /// A Vulkan call failed with `result` (ash's `vk::Result` is a plain `i32` newtype).
    pub fn vulkan(call: &'static str, result: ash::vk::Result) -> Self {
        let message = match ash_name(result) {
            Some(name) => format!("{name}: {result}"),
            None => format!("{result}"),
        };
        Error::failed(Api::Vulkan, call, i64::from(result.as_raw()), message)
    }

    /// The library or the device is not there. `call` may be "" when no call was made.
    pub fn unavailable(api: Api, call: &'static str, reason: impl Into<String>) -> Self {
        Error { api, call, status: None, kind: ErrorKind::Unavailable, limit: None, message: reason.into() }
    }

    /// The device or driver cannot do what was asked.
    pub fn unsupported(api: Api, reason: impl Into<String>) -> Self {
        Error {
            api,
            call: "",
            status: None,
            kind: ErrorKind::Unsupported,
            limit: None,
            message: reason.into(),
        }
    }

    /// The device cannot hold what was asked: it would exceed `limit`, which `reason` names
    /// with the device's value ([`ErrorKind::Unsupported`], [`Error::limit`]).
    pub fn exceeds(api: Api, limit: Limit, reason: impl Into<String>) -> Self {
        Error {
            api,
            call: "",
            status: None,
            kind: ErrorKind::Unsupported,
            limit: Some(limit),
            message: reason.into(),
        }
    }

    /// The run-time compiler rejected a kernel: `log` is its output.
    pub fn compile(api: Api, call: &'static str, status: Option<i64>, log: impl Into<String>) -> Self {
        Error { api, call, status, kind: ErrorKind::Compile, limit: None, message: log.into() }
    }

    /// The caller asked for something the crate refuses.
    pub fn invalid(api: Api, reason: impl Into<String>) -> Self {
        Error { api, call: "", status: None, kind: ErrorKind::Invalid, limit: None, message: reason.into() }
    }

    /// A host wait on `what` ran past `seconds`.
    pub fn timeout(api: Api, call: &'static str, what: impl fmt::Display, seconds: u64) -> Self {
        let message = format!("timed out after {seconds} s waiting for {what}");
        Error { api, call, status: None, kind: ErrorKind::Timeout, limit: None, message }
    }

    /// The API the failure belongs to.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The C function that failed (`vkGetMemoryFdKHR`, `cuExternalMemoryGetMappedBuffer`, …), or
    /// "" when the crate refused before calling anything.
    pub fn call(&self) -> &'static str {
        self.call
    }

    /// The status that call returned, as the C library returned it (`VkResult`, `CUresult`,
    /// `nvrtcResult`, `hipError_t`); `None` when no call returned one.
    pub fn status(&self) -> Option<i64> {
        self.status
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The device limit the request would exceed, when that is why it was refused.
    pub fn limit(&self) -> Option<Limit> {
        self.limit
    }

    /// What went wrong, without the API and call (the status' name and description, a compile
    /// log, or the reason for a refusal).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the environment is to blame (no driver, no device, a capability missing) rather
    /// than the program: a tool exits 2 on these, 1 on the rest.
    pub fn is_environment(&self) -> bool {
        match self.kind {
            ErrorKind::Unavailable | ErrorKind::Unsupported => true,
            ErrorKind::Call => self.status.is_some_and(|s| self.api.environment_statuses().contains(&s)),
            ErrorKind::Compile | ErrorKind::Invalid | ErrorKind::Timeout => false,
        }
    }

    /// The same error with `context` (which object, which slot) put before its message.
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

/// What the message of an [`Error`] starts with, after the API: the failed call and its status.
fn call_prefix(kind: ErrorKind, call: &str, status: Option<i64>) -> String {
    match (kind, call, status) {
        (ErrorKind::Call, call, Some(status)) => format!("{call} failed (status {status}): "),
        (ErrorKind::Compile, "", _) => "compiling the kernel failed: ".into(),
        (ErrorKind::Compile, call, _) => format!("{call}: compiling the kernel failed: "),
        (_, "", _) => String::new(),
        (_, call, _) => format!("{call}: "),
    }
}

/// `VK_ERROR_DEVICE_LOST` for `vk::Result::ERROR_DEVICE_LOST`: the spec's name, which drivers,
/// docs and searches use (ash's `Display` gives the description only).
fn ash_name(result: ash::vk::Result) -> Option<String> {
    // ash's Debug prints the constant's name (ERROR_DEVICE_LOST) for known values and the number
    // for unknown ones.
    let debug = format!("{result:?}");
    debug
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        .then(|| format!("VK_{debug}"))
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk;

    #[test]
    fn vulkan_errors_keep_the_number_and_the_spec_name() {
        let e = Error::vulkan("vkAllocateMemory", vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        assert_eq!(e.status(), Some(-2));
        assert_eq!(e.call(), "vkAllocateMemory");
        assert!(
            e.to_string()
                .starts_with("vulkan: vkAllocateMemory failed (status -2): VK_ERROR_OUT_OF_DEVICE_MEMORY"),
            "{e}"
        );
        assert!(!e.is_environment());
        // A value no enum lists stays a number.
        let e = Error::vulkan("vkQueueSubmit", vk::Result::from_raw(-1_000_999_999));
        assert_eq!(e.status(), Some(-1_000_999_999));
        assert!(!e.message().starts_with("VK_"), "{e}");
    }

    #[test]
    fn environment_is_the_missing_driver_device_or_capability() {
        assert!(Error::vulkan("vkCreateInstance", vk::Result::ERROR_INCOMPATIBLE_DRIVER).is_environment());
        assert!(Error::vulkan("vkCreateDevice", vk::Result::ERROR_EXTENSION_NOT_PRESENT).is_environment());
        assert!(Error::unavailable(Api::Cuda, "", "libcuda.so.1 not found").is_environment());
        assert!(Error::unsupported(Api::Vulkan, "VK_KHR_external_memory_fd is not enabled").is_environment());
        assert!(Error::failed(Api::Hip, "hipGetDeviceCount", 100, "hipErrorNoDevice").is_environment());
        assert!(!Error::failed(Api::Hip, "hipMalloc", 2, "hipErrorOutOfMemory").is_environment());
        assert!(!Error::compile(Api::Nvrtc, "nvrtcCompileProgram", Some(6), "error: x").is_environment());
        assert!(!Error::invalid(Api::Cuda, "size 0").is_environment());
        assert!(!Error::timeout(Api::Vulkan, "vkWaitSemaphores", "value 3", 30).is_environment());
    }

    #[test]
    fn display_names_api_call_and_status() {
        let e = Error::compile(Api::Nvrtc, "nvrtcCompileProgram", Some(6), "k.cu(3): error: x");
        assert_eq!(
            e.to_string(),
            "nvrtc: nvrtcCompileProgram: compiling the kernel failed: k.cu(3): error: x"
        );
        let e = Error::unsupported(Api::Vulkan, "no timeline semaphores").context("device 0");
        assert_eq!(e.to_string(), "vulkan: device 0: no timeline semaphores");
        let e = Error::timeout(Api::Vulkan, "vkWaitSemaphores", "value 3", 30);
        assert_eq!(e.to_string(), "vulkan: vkWaitSemaphores: timed out after 30 s waiting for value 3");
    }
}
