//! One owning type per HIP object, above the binding layer. Drop never panics: a failed destroy
//! is logged and the handle abandoned.
//!
//! Ordering rules the owner ([`super::HipBackend`]) must keep, and does by field order after a
//! `Drop` that first synchronises the stream:
//! - everything recorded on a stream completes before the stream is destroyed, and events are
//!   destroyed while their stream still exists (ROCm#4670: an event synchronised after its stream
//!   is gone reports a misleading `hipErrorCapturedEvent`);
//! - imported semaphores and memory are released before Vulkan frees the objects they came from
//!   (the owner is dropped before the Vulkan side);
//! - a mapped pointer is freed before the imported memory it maps ([`MappedBuffer`] owns its
//!   [`ExternalMemory`]).

use std::ffi::{c_void, CString};

use super::ffi::{
    self, RawEvent, RawExternalMemory, RawExternalSemaphore, RawFunction, RawModule, RawStream,
};
use super::{MEMORY_FD_OWNERSHIP, SEMAPHORE_FD_OWNERSHIP};
use crate::compute::fd::ImportFd;
use crate::compute::ComputeError;

fn log_drop_error(what: &str, r: Result<(), ComputeError>) {
    if let Err(e) = r {
        log::warn!("hip: releasing {what}: {e}");
    }
}

/// A non-blocking stream (`hipStreamNonBlocking`: never implicitly ordered against the null
/// stream). Drop synchronises it, then destroys it.
pub struct Stream {
    raw: RawStream,
}

// SAFETY: a hipStream_t is a handle into the runtime, which locks its own state; it may be used
// from any thread (the owner sets the current device before each use).
unsafe impl Send for Stream {}

impl Stream {
    /// A stream on the current device.
    pub fn new_non_blocking() -> Result<Stream, ComputeError> {
        Ok(Stream { raw: ffi::stream_create_non_blocking()? })
    }

    pub fn raw(&self) -> RawStream {
        self.raw
    }

    /// `hipStreamSynchronize`: wait for everything enqueued so far.
    pub fn synchronize(&self) -> Result<(), ComputeError> {
        // SAFETY: `raw` is live for as long as `self`.
        unsafe { ffi::stream_synchronize(self.raw) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        log_drop_error("stream (synchronize)", self.synchronize());
        // SAFETY: `raw` is live, idle after the synchronise above, and never used again.
        log_drop_error("stream", unsafe { ffi::stream_destroy(self.raw) });
    }
}

/// An event. Destroy it before its stream (the owner's field order does).
pub struct Event {
    raw: RawEvent,
}

// SAFETY: as for Stream: a runtime handle usable from any thread.
unsafe impl Send for Event {}

impl Event {
    /// An event without timing (cheapest to record and wait on).
    pub fn new_sync_only() -> Result<Event, ComputeError> {
        Ok(Event { raw: ffi::event_create(ffi::EVENT_DISABLE_TIMING)? })
    }

    /// An event that records a timestamp, for [`Event::elapsed_ms`].
    pub fn new_timed() -> Result<Event, ComputeError> {
        Ok(Event { raw: ffi::event_create(ffi::EVENT_DEFAULT)? })
    }

    /// `hipEventRecord` on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<(), ComputeError> {
        // SAFETY: both handles are live (borrowed owners).
        unsafe { ffi::event_record(self.raw, stream.raw()) }
    }

    /// `hipEventSynchronize`: the host waits until the recorded work is complete.
    pub fn synchronize(&self) -> Result<(), ComputeError> {
        // SAFETY: `raw` is live; its stream outlives it (owner's field order).
        unsafe { ffi::event_synchronize(self.raw) }
    }

    /// Milliseconds between two completed timed events.
    pub fn elapsed_ms(start: &Event, stop: &Event) -> Result<f32, ComputeError> {
        // SAFETY: both events are live; the caller synchronised `stop` (hipEventElapsedTime
        // reports hipErrorNotReady otherwise, it does not misbehave).
        unsafe { ffi::event_elapsed_ms(start.raw, stop.raw) }
    }
}

impl crate::compute::timing::TimedEvent for Event {
    type Stream = Stream;

    fn record_on(&self, stream: &Stream) -> Result<(), ComputeError> {
        self.record(stream)
    }

    fn is_done(&self) -> Result<bool, ComputeError> {
        // SAFETY: `raw` is live; its stream outlives it (owner's field order).
        unsafe { ffi::event_query(self.raw) }
    }

    fn ms_since(&self, earlier: &Event) -> Result<f32, ComputeError> {
        Event::elapsed_ms(earlier, self)
    }

    fn wait(&self) -> Result<(), ComputeError> {
        self.synchronize()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: `raw` is live and never used again; the owner synchronised its stream first.
        log_drop_error("event", unsafe { ffi::event_destroy(self.raw) });
    }
}

/// A loaded code object and the one kernel taken from it.
pub struct Module {
    raw: RawModule,
    function: RawFunction,
}

// SAFETY: runtime handles usable from any thread.
unsafe impl Send for Module {}

impl Module {
    /// `hipModuleLoadData` + `hipModuleGetFunction(entry)` on the current device.
    ///
    /// # Safety
    /// `code` must be a complete code object (as hiprtc returns it): the runtime parses it through
    /// its ELF headers without a length.
    pub unsafe fn load(code: &[u8], entry: &str) -> Result<Module, ComputeError> {
        // SAFETY: the caller guarantees `code` is a whole code object.
        let raw = unsafe { ffi::module_load_data(code) }?;
        let name = CString::new(entry).map_err(|_| ComputeError::Api {
            api: "hip",
            call: "hipModuleGetFunction",
            message: format!("entry name {entry:?} contains NUL"),
        })?;
        // SAFETY: `raw` was just loaded.
        match unsafe { ffi::module_get_function(raw, &name) } {
            Ok(function) => Ok(Module { raw, function }),
            Err(e) => {
                // SAFETY: `raw` is live, nothing was launched from it, and it is dropped here.
                log_drop_error("module", unsafe { ffi::module_unload(raw) });
                Err(e)
            }
        }
    }

    /// The kernel; valid while `self` lives.
    pub fn function(&self) -> RawFunction {
        self.function
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; the owner synchronised every stream that launched from it.
        log_drop_error("module", unsafe { ffi::module_unload(self.raw) });
    }
}

/// Memory imported from a Vulkan OPAQUE_FD export.
pub struct ExternalMemory {
    raw: RawExternalMemory,
    size: u64,
}

// SAFETY: runtime handle usable from any thread.
unsafe impl Send for ExternalMemory {}

impl ExternalMemory {
    /// `hipImportExternalMemory(OPAQUE_FD, size = allocation_size, dedicated flag)`. The fd is
    /// released as [`MEMORY_FD_OWNERSHIP`] says, whatever the outcome.
    pub fn import(
        fd: ImportFd,
        allocation_size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemory, ComputeError> {
        let raw = fd.import(MEMORY_FD_OWNERSHIP, |raw_fd| {
            // SAFETY: `raw_fd` is the open Vulkan memory export that `ImportFd` holds, and the
            // caller passes its VkMemoryRequirements::size as `allocation_size`.
            unsafe { ffi::import_external_memory_fd(raw_fd, allocation_size, dedicated) }
        })?;
        Ok(ExternalMemory { raw, size: allocation_size })
    }
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; its mapped pointer was freed first (MappedBuffer's Drop).
        log_drop_error("external memory", unsafe { ffi::destroy_external_memory(self.raw) });
    }
}

/// A device pointer to the first `size` bytes of an imported allocation. Owns the import.
pub struct MappedBuffer {
    ptr: *mut c_void,
    /// Held for its Drop, which runs after `Drop::drop` freed `ptr`.
    _memory: ExternalMemory,
}

// SAFETY: the device pointer is an address in the GPU's virtual address space, not host memory;
// it is only passed to runtime calls, from whichever thread owns the backend.
unsafe impl Send for MappedBuffer {}

impl MappedBuffer {
    /// `hipExternalMemoryGetMappedBuffer(offset 0, size)`.
    pub fn map(memory: ExternalMemory, size: u64) -> Result<MappedBuffer, ComputeError> {
        if size == 0 || size > memory.size {
            return Err(ComputeError::Api {
                api: "hip",
                call: "hipExternalMemoryGetMappedBuffer",
                message: format!("cannot map {size} bytes of a {}-byte import", memory.size),
            });
        }
        // SAFETY: `memory` is live and at least `size` bytes long (checked above).
        let ptr = unsafe { ffi::external_memory_mapped_buffer(memory.raw, 0, size) }?;
        Ok(MappedBuffer { ptr, _memory: memory })
    }

    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }
}

impl Drop for MappedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from hipExternalMemoryGetMappedBuffer and nothing uses it after this.
        // ROCm 6 registers and retains the import for the mapped pointer, and hipFree releases
        // that; HIP 5.x did neither and answers hipErrorInvalidValue, which is expected there.
        if let Err(e) = unsafe { ffi::free(self.ptr) } {
            log::debug!("hip: hipFree on a mapped external buffer: {e} (expected on HIP 5.x)");
        }
    }
}

/// A semaphore imported from a Vulkan OPAQUE_FD export.
pub struct ExternalSemaphore {
    raw: RawExternalSemaphore,
}

// SAFETY: runtime handle usable from any thread.
unsafe impl Send for ExternalSemaphore {}

impl ExternalSemaphore {
    /// `hipImportExternalSemaphore` with `handle_type` (`ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_*`).
    /// The fd is released as [`SEMAPHORE_FD_OWNERSHIP`] says, whatever the outcome.
    pub fn import(fd: ImportFd, handle_type: u32) -> Result<ExternalSemaphore, ComputeError> {
        let raw = fd.import(SEMAPHORE_FD_OWNERSHIP, |raw_fd| {
            // SAFETY: `raw_fd` is the open Vulkan semaphore export that `ImportFd` holds; the
            // caller picks the handle type that matches the semaphore's type.
            unsafe { ffi::import_external_semaphore_fd(raw_fd, handle_type) }
        })?;
        Ok(ExternalSemaphore { raw })
    }

    /// Enqueue a wait for `value` (timeline) or for the pending signal (binary; value ignored).
    pub fn wait_async(&self, value: u64, stream: &Stream) -> Result<(), ComputeError> {
        // SAFETY: both handles are live (borrowed owners).
        unsafe { ffi::wait_external_semaphore_async(self.raw, value, stream.raw()) }
    }

    /// Enqueue a signal of `value` (timeline) or a binary signal (value ignored).
    pub fn signal_async(&self, value: u64, stream: &Stream) -> Result<(), ComputeError> {
        // SAFETY: both handles are live (borrowed owners).
        unsafe { ffi::signal_external_semaphore_async(self.raw, value, stream.raw()) }
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; the owner synchronised the stream that waits/signals it.
        log_drop_error("external semaphore", unsafe { ffi::destroy_external_semaphore(self.raw) });
    }
}
