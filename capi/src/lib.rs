//! The C door: `vkhip-interop` and `vkhip-profile` behind a C ABI (`libvkhip.so`, `libvkhip.a`)
//! and a header generated from this crate by cbindgen (`include/vkhip.h`; `tests/header.rs`
//! fails when the committed header is stale, and says how to regenerate it).
//!
//! # Design note
//!
//! The door translates; it decides nothing. Every function is a few lines: check the arguments,
//! call the crate, translate the result. What a C caller needs that the crates lack would be added
//! to the crates (with a test), not here.
//!
//! - **Status codes.** Every function returns a [`VkhipStatus`]; the crates' errors become codes
//!   in one pure function ([`status::of_interop`], unit-tested), and their one-line text becomes
//!   the calling thread's last error ([`vkhip_last_error`]). No C library's status lands in a Rust
//!   enum: numbers the caller passes in (importers, formats, image uses) are plain integers,
//!   checked on entry.
//! - **Handles** are `Box`es handed out as opaque pointers. Each live handle is in one registry
//!   with its kind ([`handle`]): a pointer is looked up there before it is dereferenced, so a
//!   NULL, a handle of another kind, or one already destroyed is an error code, and no freed
//!   memory is ever read (AddressSanitizer would rightly call that a use after free). A pointer
//!   that is reused by a later allocation of the same kind cannot be told apart: use after
//!   destroy is detected only where the memory was not handed out again.
//! - **Lifetimes.** A handle keeps alive what it was made from (the crates' objects hold their
//!   device, as in Rust), so handles may be destroyed in any order. The profiler's tracks borrow
//!   in Rust (a CUDA stream track borrows the `Cuda`, a scope its track): here the borrowed
//!   object sits in an `Arc` that the borrower's handle holds too ([`profile`]).
//! - **Panics** never cross the ABI: every entry runs under `catch_unwind`
//!   ([`VkhipStatus::Panic`]).
//! - **Threads**: the header's opening comment (the crate's `cbindgen.toml`) states the rules;
//!   handles that must stay on one thread (a host track, its scopes) check it
//!   ([`VkhipStatus::WrongThread`]).
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod cuda;
pub mod handle;
#[cfg(feature = "hip")]
pub mod hip;
pub mod profile;
pub mod status;
pub mod vulkan;

pub use status::VkhipStatus;

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Why a call failed: its status and the one line for [`vkhip_last_error`].
#[derive(Debug)]
pub struct Fail {
    pub status: VkhipStatus,
    pub message: String,
}

impl Fail {
    pub fn new(status: VkhipStatus, message: impl Into<String>) -> Fail {
        Fail { status, message: message.into() }
    }

    /// The caller passed something the door refuses.
    pub fn invalid(message: impl Into<String>) -> Fail {
        Fail::new(VkhipStatus::Invalid, message)
    }
}

impl From<vkhip_interop::Error> for Fail {
    fn from(e: vkhip_interop::Error) -> Fail {
        Fail::new(status::of_interop(&e), e.to_string())
    }
}

impl From<vkhip_profile::Error> for Fail {
    fn from(e: vkhip_profile::Error) -> Fail {
        Fail::new(status::of_profile(&e), e.to_string())
    }
}

pub type Result<T, E = Fail> = std::result::Result<T, E>;

thread_local! {
    /// The message of this thread's last call into the door ("" after a success).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // One line, and no NUL inside (a C string ends at the first).
    let line: String = message.chars().map(|c| if c == '\0' || c == '\n' { ' ' } else { c }).collect();
    let line = CString::new(line).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = line);
}

/// Run one entry point: clear the thread's last error, run `body` under `catch_unwind`, and turn
/// its result into a status (and, on failure, the thread's last error).
pub(crate) fn entry(function: &str, body: impl FnOnce() -> Result<()>) -> VkhipStatus {
    set_last_error("");
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => VkhipStatus::Ok,
        Ok(Err(fail)) => {
            set_last_error(&fail.message);
            fail.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            set_last_error(&format!("{function}: internal error (a panic, caught at the ABI): {what}"));
            VkhipStatus::Panic
        }
    }
}

/// `p` as a `&str`: a NULL or non-UTF-8 string is an error naming `what`.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn text<'a>(p: *const c_char, function: &str, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Fail::new(VkhipStatus::NullArgument, format!("{function}: {what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated (this function's contract).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| Fail::invalid(format!("{function}: {what} is not UTF-8")))
}

/// The message of the calling thread's last `vkhip_*` call: one line, the crates' own text
/// ("vulkan: vkAllocateMemory failed (status -2): VK_ERROR_OUT_OF_DEVICE_MEMORY: …"), or "" when
/// that call succeeded. Never NULL. Valid until the thread's next `vkhip_*` call.
#[no_mangle]
pub extern "C" fn vkhip_last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}
