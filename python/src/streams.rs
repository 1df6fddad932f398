//! The consumer's stream, before a driver reads it. A stream reaches the door as an integer
//! (DLPack's `__dlpack__(stream=…)`, `release(stream)`, `Profiler.stream`): -1 (no
//! synchronisation), 0 or 1 (the legacy default stream), 2 (the per-thread default stream), or a
//! handle, which CUDA and HIP read as the address of their stream object. The contract, in the
//! stubs and python/README.md: **a handle is a live stream of the buffer's device**. What the
//! door can tell without touching memory is checked here ([`check`]): a number below -1, in the
//! first page, not 8-byte aligned or beyond the address space is no stream object, and is an
//! `InvalidError` instead of the driver's crash. CUDA then refuses a stream of another context
//! (its answer to `cuStreamGetCtx`). What stays unchecked: an aligned address that is not a live
//! stream (a destroyed one, another object), which the driver dereferences.

use crate::errors::{invalid, IntoPy};
use pyo3::prelude::*;
use vkhip_interop::cuda::Cuda;

/// No object lives below this address: Linux maps nothing under `vm.mmap_min_addr` (4096 at the
/// least; 65536 by default).
const LOWEST_OBJECT: i64 = 4096;
/// Past the largest user address of x86-64 and AArch64 (57 bits, with 5-level paging).
const PAST_ADDRESSES: i64 = 1 << 57;
/// A stream handle is a pointer to the runtime's stream object, a C++ object with pointers in
/// it: aligned to 8 at least.
const ALIGN: i64 = 8;

/// Refuse a stream number that cannot be a stream, before any driver dereferences it: `Ok` for
/// -1, 0, 1, 2 and any aligned user-space address.
pub fn check(stream: i64) -> PyResult<()> {
    let why = match stream {
        -1..=2 => return Ok(()),
        s if s < -1 => "below -1",
        s if s < LOWEST_OBJECT => "in the first page of memory, where no stream object lives",
        s if s >= PAST_ADDRESSES => "beyond the process's address space",
        s if s % ALIGN != 0 => "not a multiple of 8, as the address of a stream object is",
        _ => return Ok(()),
    };
    Err(invalid(format!(
        "stream {stream} ({stream:#x}) is no stream: {why}. Pass None, 0 or 1 (the legacy default stream), 2 (the per-thread default stream), -1 (no synchronisation) or a live stream of the buffer's device (torch.cuda.current_stream(), a cupy.cuda.Stream)"
    )))
}

/// `cuda` enqueueing on the consumer's stream `stream` (DLPack's numbering, not -1): refused
/// when it cannot be a stream ([`check`]) or is one of another context (`Cuda::with_stream`).
pub fn lend(cuda: &Cuda, stream: i64) -> PyResult<Cuda> {
    check(stream)?;
    // SAFETY: the door's contract (the module note): a number given as a stream is -1, 0, 1, 2
    // or a live stream of the device; `check` refused what cannot be one, and `with_stream`
    // refuses a live stream of another context.
    unsafe { cuda.with_stream(stream as u64) }.py()
}

/// Wait on the host for the work enqueued so far on the consumer's HIP stream `stream` (DLPack's
/// numbering, not -1): HIP's hand-off to Vulkan on Linux, where no semaphore can be imported.
#[cfg(feature = "hip")]
pub fn hip_synchronize(hip: &vkhip_interop::hip::Hip, stream: i64) -> PyResult<()> {
    check(stream)?;
    // SAFETY: as in `lend`: -1 was refused by the caller, what cannot be a stream by `check`;
    // the rest is the caller's live stream of this device (HIP 5.x cannot tell its device).
    unsafe { hip.synchronize_stream(stream as u64) }.py()
}
