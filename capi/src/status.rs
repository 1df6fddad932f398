//! Status codes, and the one place where the crates' errors become them.

use std::ffi::c_char;
use vkhip_interop::ErrorKind;

/// What every `vkhip_*` call returns. On anything but `VKHIP_STATUS_OK`, `vkhip_last_error()`
/// says what happened, in one line.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VkhipStatus {
    Ok = 0,
    /// A required pointer argument (a handle, a string, an out pointer) is NULL.
    NullArgument = 1,
    /// A handle is not a live handle of the kind the function takes (another kind, destroyed,
    /// or never made by vkhip).
    WrongHandle = 2,
    /// A handle bound to one thread (a host track, its scopes) was used on another.
    WrongThread = 3,
    /// The caller passed something refused (a size of 0, an unknown enum value, an index past
    /// the end, a profiler already finished): a bug in the caller.
    Invalid = 4,
    /// A library or device is not there (no Vulkan loader, no CUDA driver, no GPU): the
    /// machine's environment, not a bug.
    Unavailable = 5,
    /// The device or driver cannot do what was asked (an extension not enabled, an export
    /// type, devices that do not match): the environment too.
    Unsupported = 6,
    /// The object would exceed a limit of the device (maxBufferSize, a heap, an image
    /// extent): the message names the limit and the device's value.
    ExceedsLimit = 7,
    /// A Vulkan, CUDA or HIP call failed; the message holds its status number and name.
    CallFailed = 8,
    /// The run-time compiler rejected a kernel; the message holds its log.
    CompileFailed = 9,
    /// A host wait ran past its limit.
    Timeout = 10,
    /// Writing a file failed.
    Io = 11,
    /// A bug inside vkhip (a Rust panic, caught before it reached the caller).
    Panic = 12,
}

impl VkhipStatus {
    const ALL: [VkhipStatus; 13] = [
        VkhipStatus::Ok,
        VkhipStatus::NullArgument,
        VkhipStatus::WrongHandle,
        VkhipStatus::WrongThread,
        VkhipStatus::Invalid,
        VkhipStatus::Unavailable,
        VkhipStatus::Unsupported,
        VkhipStatus::ExceedsLimit,
        VkhipStatus::CallFailed,
        VkhipStatus::CompileFailed,
        VkhipStatus::Timeout,
        VkhipStatus::Io,
        VkhipStatus::Panic,
    ];

    /// The constant's name in the header, NUL-terminated.
    fn name(self) -> &'static std::ffi::CStr {
        match self {
            VkhipStatus::Ok => c"VKHIP_STATUS_OK",
            VkhipStatus::NullArgument => c"VKHIP_STATUS_NULL_ARGUMENT",
            VkhipStatus::WrongHandle => c"VKHIP_STATUS_WRONG_HANDLE",
            VkhipStatus::WrongThread => c"VKHIP_STATUS_WRONG_THREAD",
            VkhipStatus::Invalid => c"VKHIP_STATUS_INVALID",
            VkhipStatus::Unavailable => c"VKHIP_STATUS_UNAVAILABLE",
            VkhipStatus::Unsupported => c"VKHIP_STATUS_UNSUPPORTED",
            VkhipStatus::ExceedsLimit => c"VKHIP_STATUS_EXCEEDS_LIMIT",
            VkhipStatus::CallFailed => c"VKHIP_STATUS_CALL_FAILED",
            VkhipStatus::CompileFailed => c"VKHIP_STATUS_COMPILE_FAILED",
            VkhipStatus::Timeout => c"VKHIP_STATUS_TIMEOUT",
            VkhipStatus::Io => c"VKHIP_STATUS_IO",
            VkhipStatus::Panic => c"VKHIP_STATUS_PANIC",
        }
    }

    /// Whether the machine, not the program, is to blame: what a tool reports as "no usable
    /// device" (exit 2 in the examples).
    fn is_environment(self) -> bool {
        matches!(self, VkhipStatus::Unavailable | VkhipStatus::Unsupported | VkhipStatus::ExceedsLimit)
    }
}

/// The status of an interop error: its kind, whether a device limit refused it, and whether a
/// failed call's status means "no driver or device" ([`vkhip_interop::Error::is_environment`]).
pub fn of_interop(e: &vkhip_interop::Error) -> VkhipStatus {
    of_kind(e.kind(), e.limit().is_some(), e.is_environment())
}

/// The status of a profiler error.
pub fn of_profile(e: &vkhip_profile::Error) -> VkhipStatus {
    match e {
        vkhip_profile::Error::Device(e) => of_interop(e),
        vkhip_profile::Error::Invalid(_) => VkhipStatus::Invalid,
        vkhip_profile::Error::Io { .. } => VkhipStatus::Io,
    }
}

/// The status of a trace file's error: reading or writing it (the door only writes).
pub fn of_trace(e: &vkhip_profile::TraceError) -> VkhipStatus {
    match e {
        vkhip_profile::TraceError::Read { .. } | vkhip_profile::TraceError::Write { .. } => VkhipStatus::Io,
        _ => VkhipStatus::Invalid,
    }
}

/// The mapping itself, pure: `limit` is whether a device limit refused the request,
/// `environment` whether the error is the machine's (a failed call returning "no device" or
/// "driver too old" becomes `Unavailable`, like a library that does not load).
pub fn of_kind(kind: ErrorKind, limit: bool, environment: bool) -> VkhipStatus {
    match kind {
        ErrorKind::Unavailable => VkhipStatus::Unavailable,
        ErrorKind::Unsupported if limit => VkhipStatus::ExceedsLimit,
        ErrorKind::Unsupported => VkhipStatus::Unsupported,
        ErrorKind::Call if environment => VkhipStatus::Unavailable,
        ErrorKind::Call => VkhipStatus::CallFailed,
        ErrorKind::Compile => VkhipStatus::CompileFailed,
        ErrorKind::Invalid => VkhipStatus::Invalid,
        ErrorKind::Timeout => VkhipStatus::Timeout,
    }
}

/// The name of a status ("VKHIP_STATUS_UNAVAILABLE"), or "unknown status" for a number that is
/// none. Never NULL; a static string.
#[no_mangle]
pub extern "C" fn vkhip_status_name(status: i32) -> *const c_char {
    let known = VkhipStatus::ALL.iter().find(|s| **s as i32 == status);
    known.map_or(c"unknown status".as_ptr(), |s| s.name().as_ptr())
}

/// Whether `status` is the machine's fault (no library, no device, a capability or limit the
/// device lacks) rather than the program's: UNAVAILABLE, UNSUPPORTED and EXCEEDS_LIMIT. What a
/// tool reports as "no usable device".
#[no_mangle]
pub extern "C" fn vkhip_status_is_environment(status: i32) -> bool {
    VkhipStatus::ALL.iter().any(|s| *s as i32 == status && s.is_environment())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;
    use vkhip_interop::{Api, Error, Limit};

    #[test]
    fn each_kind_has_its_status() {
        use ErrorKind as K;
        use VkhipStatus as S;
        let cases = [
            (K::Unavailable, false, true, S::Unavailable),
            (K::Unsupported, false, true, S::Unsupported),
            (K::Unsupported, true, true, S::ExceedsLimit),
            (K::Call, false, false, S::CallFailed),
            (K::Call, false, true, S::Unavailable),
            (K::Compile, false, false, S::CompileFailed),
            (K::Invalid, false, false, S::Invalid),
            (K::Timeout, false, false, S::Timeout),
        ];
        for (kind, limit, environment, want) in cases {
            assert_eq!(of_kind(kind, limit, environment), want, "{kind:?} limit={limit} env={environment}");
        }
    }

    #[test]
    fn real_errors_map_through_their_kind() {
        let no_device = Error::failed(Api::Cuda, "cuInit", 100, "CUDA_ERROR_NO_DEVICE");
        assert_eq!(of_interop(&no_device), VkhipStatus::Unavailable);
        let oom = Error::failed(Api::Cuda, "cuMemAlloc", 2, "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(of_interop(&oom), VkhipStatus::CallFailed);
        let big =
            Error::exceeds(Api::Vulkan, Limit::MaxBufferSize, "a buffer of 8 GiB exceeds maxBufferSize");
        assert_eq!(of_interop(&big), VkhipStatus::ExceedsLimit);
        let refused = vkhip_profile::Error::Invalid("after finish".into());
        assert_eq!(of_profile(&refused), VkhipStatus::Invalid);
        assert_eq!(of_profile(&vkhip_profile::Error::Device(oom)), VkhipStatus::CallFailed);
    }

    #[test]
    fn names_and_environment_by_number() {
        let name = |s: i32| {
            // SAFETY: vkhip_status_name returns a static NUL-terminated string.
            unsafe { CStr::from_ptr(vkhip_status_name(s)) }.to_str().map(str::to_owned)
        };
        assert_eq!(name(0).as_deref(), Ok("VKHIP_STATUS_OK"));
        assert_eq!(name(7).as_deref(), Ok("VKHIP_STATUS_EXCEEDS_LIMIT"));
        assert_eq!(name(-1).as_deref(), Ok("unknown status"));
        let environment: Vec<i32> = (-1..20).filter(|&s| vkhip_status_is_environment(s)).collect();
        assert_eq!(environment, [5, 6, 7]);
        // The discriminants are the table's order: a new status must be added to ALL too.
        for (i, s) in VkhipStatus::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
    }
}
