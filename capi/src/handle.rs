//! Opaque handles: a `Box` per object, and a registry of the live ones with their kind.
//!
//! A pointer from C is looked up in the registry before it is turned into a reference, so a
//! NULL, a handle of another kind or one already destroyed is a status code, and memory that was
//! freed is never read. (A magic number inside the object would have to be read from that freed
//! memory to be checked.) The registry holds addresses only; the objects are the caller's to
//! destroy, once each.

use crate::{Fail, Result, VkhipStatus};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The kind of a handle, as the header names its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Device,
    Buffer,
    Image,
    Semaphore,
    Cuda,
    CudaBuffer,
    CudaImage,
    CudaSemaphore,
    CudaKernel,
    Hip,
    HipBuffer,
    HipKernel,
    Profiler,
    Resource,
    ProfSemaphore,
    Queue,
    Stream,
    HipStream,
    Host,
    Scope,
    Capture,
}

/// A type handed to C as an opaque pointer.
pub trait Handle: Sized + 'static {
    const KIND: Kind;
    /// The header's name of the type ("VkhipDevice").
    const NAME: &'static str;
}

/// Live handles: address → kind.
static LIVE: Mutex<BTreeMap<usize, Kind>> = Mutex::new(BTreeMap::new());

fn live() -> MutexGuard<'static, BTreeMap<usize, Kind>> {
    // A panic while holding the lock cannot leave the map half-changed (single inserts and
    // removes): take it back.
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Check an out pointer before any work is done: NULL is an error naming `what`.
pub fn out<T>(p: *mut T, function: &str, what: &str) -> Result<*mut T> {
    if p.is_null() {
        return Err(Fail::new(VkhipStatus::NullArgument, format!("{function}: {what} is NULL")));
    }
    Ok(p)
}

/// Make a handle: check `out` before any work, run `make`, and publish what it made in `*out`.
///
/// # Safety
/// `out` is NULL or points at writable storage for a pointer.
pub unsafe fn create<T: Handle>(
    out: *mut *mut T,
    function: &str,
    make: impl FnOnce() -> Result<T>,
) -> Result<()> {
    let out = self::out(out, function, "out")?;
    let value = make()?;
    // SAFETY: checked non-NULL; writable per this function's contract.
    unsafe { publish(out, value) };
    Ok(())
}

/// Write a value to an out pointer: check `out` before any work, then write what `value` gives.
///
/// # Safety
/// `out` is NULL or points at writable storage for a `T`.
pub unsafe fn put<T>(out: *mut T, function: &str, value: impl FnOnce() -> Result<T>) -> Result<()> {
    let out = self::out(out, function, "out")?;
    let value = value()?;
    // SAFETY: checked non-NULL; writable per this function's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Box `value`, register it, and store the handle in `*out`.
///
/// # Safety
/// `out` came from [`out`] (not NULL) and points at writable storage for a pointer.
pub unsafe fn publish<T: Handle>(out: *mut *mut T, value: T) {
    let p = Box::into_raw(Box::new(value));
    live().insert(p as usize, T::KIND);
    // SAFETY: per this function's contract.
    unsafe { out.write(p) };
}

/// The object behind a handle of kind `T`, or the status saying why not.
///
/// # Safety
/// If `p` is a live handle, no other thread destroys it while the returned reference is used
/// (the header's threading rule: destroy a handle only when no call on it is running).
pub unsafe fn get<'a, T: Handle>(p: *const T, function: &str, what: &str) -> Result<&'a T> {
    if p.is_null() {
        return Err(Fail::new(VkhipStatus::NullArgument, format!("{function}: {what} is NULL")));
    }
    check(live().get(&(p as usize)).copied(), T::KIND, function, what, T::NAME)?;
    // SAFETY: registered as a live `T` (made by `publish`, not yet destroyed); per the contract
    // it stays alive for the call.
    Ok(unsafe { &*p })
}

fn check(found: Option<Kind>, want: Kind, function: &str, what: &str, name: &str) -> Result<()> {
    match found {
        Some(kind) if kind == want => Ok(()),
        Some(kind) => Err(Fail::new(
            VkhipStatus::WrongHandle,
            format!("{function}: {what} is not a {name} (it is a {})", type_name(kind)),
        )),
        None => Err(Fail::new(
            VkhipStatus::WrongHandle,
            format!("{function}: {what} is not a live {name} (destroyed already, or not made by vkhip)"),
        )),
    }
}

/// Destroy a handle of kind `T`: NULL is fine (nothing happens); another kind, or a handle not
/// live, is an error and nothing is freed.
///
/// # Safety
/// No other call on the handle runs now or later (the header's threading rule).
pub unsafe fn destroy<T: Handle>(p: *mut T, function: &str) -> Result<()> {
    if p.is_null() {
        return Ok(());
    }
    {
        let mut map = live();
        check(map.get(&(p as usize)).copied(), T::KIND, function, "the handle", T::NAME)?;
        map.remove(&(p as usize));
    }
    // SAFETY: made by `publish` as a `Box<T>` and just unregistered: this is its only owner.
    drop(unsafe { Box::from_raw(p) });
    Ok(())
}

/// Take the object out of a handle of kind `T` (it is unregistered and freed; the value is the
/// caller's), e.g. to check before destroying that it may be destroyed here.
///
/// # Safety
/// As [`destroy`].
pub unsafe fn take<T: Handle>(p: *mut T) -> T {
    live().remove(&(p as usize));
    // SAFETY: made by `publish` as a `Box<T>`, live (the caller checked with `get`), and now
    // unregistered: this is its only owner.
    *unsafe { Box::from_raw(p) }
}

fn type_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Device => "VkhipDevice",
        Kind::Buffer => "VkhipBuffer",
        Kind::Image => "VkhipImage",
        Kind::Semaphore => "VkhipSemaphore",
        Kind::Cuda => "VkhipCuda",
        Kind::CudaBuffer => "VkhipCudaBuffer",
        Kind::CudaImage => "VkhipCudaImage",
        Kind::CudaSemaphore => "VkhipCudaSemaphore",
        Kind::CudaKernel => "VkhipCudaKernel",
        Kind::Hip => "VkhipHip",
        Kind::HipBuffer => "VkhipHipBuffer",
        Kind::HipKernel => "VkhipHipKernel",
        Kind::Profiler => "VkhipProfiler",
        Kind::Resource => "VkhipResource",
        Kind::ProfSemaphore => "VkhipProfSemaphore",
        Kind::Queue => "VkhipProfQueue",
        Kind::Stream => "VkhipProfStream",
        Kind::HipStream => "VkhipProfHipStream",
        Kind::Host => "VkhipProfHost",
        Kind::Scope => "VkhipScope",
        Kind::Capture => "VkhipCapture",
    }
}

/// Declare `T` a handle of `kind`, named as the header names its type.
macro_rules! handle {
    ($t:ident, $kind:ident) => {
        impl $crate::handle::Handle for $t {
            const KIND: $crate::handle::Kind = $crate::handle::Kind::$kind;
            const NAME: &'static str = stringify!($t);
        }
    };
}
pub(crate) use handle;

#[cfg(test)]
mod tests {
    use super::*;

    struct VkhipThing(u32);
    handle!(VkhipThing, Device);
    struct VkhipOther;
    handle!(VkhipOther, Buffer);

    #[test]
    fn a_handle_is_checked_for_null_kind_and_life() {
        let mut p: *mut VkhipThing = std::ptr::null_mut();
        // SAFETY: `&mut p` is writable storage for the handle.
        unsafe { publish(&mut p, VkhipThing(7)) };
        // SAFETY: live handles, used and destroyed on this thread only.
        unsafe {
            assert_eq!(get::<VkhipThing>(p, "f", "thing").map(|t| t.0).ok(), Some(7));
            let null = get::<VkhipThing>(std::ptr::null(), "f", "thing").err().map(|e| (e.status, e.message));
            assert_eq!(null, Some((VkhipStatus::NullArgument, "f: thing is NULL".into())));
            let wrong = get::<VkhipOther>(p.cast(), "f", "other").err().map(|e| (e.status, e.message));
            assert_eq!(
                wrong,
                Some((VkhipStatus::WrongHandle, "f: other is not a VkhipOther (it is a VkhipDevice)".into()))
            );
            assert!(destroy::<VkhipOther>(p.cast(), "d").is_err(), "destroyed through the wrong kind");
            assert!(destroy(p, "d").is_ok());
            let dead = get::<VkhipThing>(p, "f", "thing").err().map(|e| e.status);
            assert_eq!(dead, Some(VkhipStatus::WrongHandle));
            assert_eq!(destroy(p, "d").err().map(|e| e.status), Some(VkhipStatus::WrongHandle));
            assert!(destroy::<VkhipThing>(std::ptr::null_mut(), "d").is_ok());
        }
    }
}
