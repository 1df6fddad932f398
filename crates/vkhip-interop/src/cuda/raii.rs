//! RAII types over [`super::sys`]: each owns one CUDA object and destroys it on drop.
//!
//! Every object here belongs to the device's primary context and must be used, and dropped, with
//! that context current on the calling thread; the public layer ([`super::Cuda`] and the objects
//! it hands out) makes it current, and waits for the stream, before any of these drops. Drops
//! never panic: a failed destroy is logged and skipped.
//!
//! Ownership encodes the teardown order of the crate's documentation: a [`Stream`] synchronises
//! before it is destroyed; a [`MappedBuffer`] owns its [`ExternalMemory`], so the pointer is freed
//! before the import is destroyed; a [`Surface`] owns its [`MappedArray`], which owns its
//! [`ExternalMemory`], so the surface object goes first, then the mipmapped array, then the
//! import; imports take their fd through [`ImportFd::import`] with
//! [`FdOwnership::TakenOnSuccess`] (CUDA owns the fd after a successful import).

use super::sys::{self as cu, Driver};
use crate::error::{Api, Error, Result};
use crate::{FdOwnership, ImageShape, ImportFd};
use cudarc::driver::sys;
use std::ffi::c_void;

/// A retained primary context of one device; released on drop.
#[derive(Debug)]
pub struct PrimaryContext {
    driver: &'static Driver,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: a CUDA context is not tied to the thread that retained it; any thread may make it
// current (cuCtxSetCurrent) and use it, which is what every user of this type does first.
unsafe impl Send for PrimaryContext {}

impl PrimaryContext {
    pub fn retain(driver: &'static Driver, device: sys::CUdevice) -> Result<Self> {
        let ctx = driver.primary_ctx_retain(device)?;
        Ok(PrimaryContext { driver, device, ctx })
    }

    /// Make this context current on the calling thread.
    pub fn make_current(&self) -> Result<()> {
        // SAFETY: `ctx` is retained until `self` drops.
        unsafe { self.driver.ctx_set_current(self.ctx) }
    }

    /// The context's handle (to compare with the context a caller's stream belongs to).
    pub fn raw(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Block until every stream of the context is idle, the caller's streams too.
    pub fn synchronize(&self) -> Result<()> {
        self.make_current()?;
        self.driver.ctx_synchronize()
    }
}

/// A stream to enqueue on: the crate's own ([`Stream::handle`]) or one the caller owns
/// (`Cuda::with_stream`, whose contract keeps it alive). A handle only: nothing is synchronised
/// or destroyed through it.
#[derive(Clone, Copy, Debug)]
pub struct StreamRef(sys::CUstream);

// SAFETY: a stream handle may be used from any thread that has its context current.
unsafe impl Send for StreamRef {}
// SAFETY: as for `Send`; the handle is a value, never mutated.
unsafe impl Sync for StreamRef {}

impl StreamRef {
    /// # Safety
    /// `raw` is a live stream of the context it will be used in, or a special handle
    /// (`CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`), for as long as the value is used.
    pub unsafe fn borrowed(raw: sys::CUstream) -> Self {
        StreamRef(raw)
    }

    pub fn raw(self) -> sys::CUstream {
        self.0
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `PrimaryContext::retain`; the objects created in the
        // context hold it (through `Cuda`'s shared state) and drop before it.
        if let Err(e) = unsafe { self.driver.primary_ctx_release(self.device) } {
            log::warn!("cuda: releasing the primary context failed: {e}");
        }
    }
}

/// A non-blocking stream; synchronised, then destroyed, on drop.
#[derive(Debug)]
pub struct Stream {
    driver: &'static Driver,
    raw: sys::CUstream,
}

// SAFETY: CUDA streams may be used from any thread that has their context current.
unsafe impl Send for Stream {}

impl Stream {
    pub fn new_non_blocking(driver: &'static Driver) -> Result<Self> {
        Ok(Stream { driver, raw: driver.stream_create_non_blocking()? })
    }

    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: `raw` is live until `self` drops.
        unsafe { self.driver.stream_synchronize(self.raw) }
    }

    /// The handle as a [`StreamRef`] (used while `self` lives: the owner drops the stream last).
    pub fn handle(&self) -> StreamRef {
        StreamRef(self.raw)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Err(e) = self.synchronize() {
            log::warn!("cuda: synchronising the stream before destroying it failed: {e}");
        }
        // SAFETY: live until now, synchronised above, never used again.
        if let Err(e) = unsafe { self.driver.stream_destroy(self.raw) } {
            log::warn!("cuda: destroying the stream failed: {e}");
        }
    }
}

/// An event, with or without timing.
#[derive(Debug)]
pub struct Event {
    driver: &'static Driver,
    raw: sys::CUevent,
}

// SAFETY: CUDA events may be used from any thread that has their context current.
unsafe impl Send for Event {}
// SAFETY: as for `Send`: the driver API is thread-safe and the handle is never mutated here.
unsafe impl Sync for Event {}

impl Event {
    pub fn new(driver: &'static Driver, timing: bool) -> Result<Self> {
        Ok(Event { driver, raw: driver.event_create(timing)? })
    }

    pub fn record(&self, stream: StreamRef) -> Result<()> {
        // SAFETY: the event is live while borrowed; the stream per `StreamRef`'s contract.
        unsafe { self.driver.event_record(self.raw, stream.raw()) }
    }

    /// Whether the work before the last record has finished (never blocks).
    pub fn query(&self) -> Result<bool> {
        // SAFETY: live while borrowed.
        unsafe { self.driver.event_query(self.raw) }
    }

    /// Block the host until the work before the last record has finished.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live while borrowed.
        unsafe { self.driver.event_synchronize(self.raw) }
    }

    /// Milliseconds from `self` to `end` (both recorded, completed and created with timing).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        // SAFETY: both events are live while borrowed; an event without timing or not yet
        // complete is an error code, not undefined behaviour.
        unsafe { self.driver.event_elapsed_ms(self.raw, end.raw) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: live until now; cuEventDestroy on an event with pending work is allowed (the
        // driver releases it once the work completes).
        if let Err(e) = unsafe { self.driver.event_destroy(self.raw) } {
            log::warn!("cuda: destroying an event failed: {e}");
        }
    }
}

/// A loaded module; unloaded on drop.
#[derive(Debug)]
pub struct Module {
    driver: &'static Driver,
    raw: sys::CUmodule,
}

// SAFETY: modules may be used from any thread that has their context current.
unsafe impl Send for Module {}
// SAFETY: as for `Send`: the driver API is thread-safe and the handle is never mutated here.
unsafe impl Sync for Module {}

impl Module {
    /// Load `image` (cubin, or NUL-terminated PTX) into the current context.
    pub fn load(driver: &'static Driver, image: &[u8]) -> Result<Self> {
        Ok(Module { driver, raw: driver.module_load_data(image)? })
    }

    /// The entry point `name`: valid while `self` is loaded.
    pub fn function(&self, name: &str) -> Result<sys::CUfunction> {
        // SAFETY: `raw` is live (owned by `self`) in the current context.
        unsafe { self.driver.module_get_function(self.raw, name) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised the stream that ran this module's kernels before
        // dropping it.
        if let Err(e) = unsafe { self.driver.module_unload(self.raw) } {
            log::warn!("cuda: unloading the module failed: {e}");
        }
    }
}

/// Imported external memory (OPAQUE_FD); destroyed on drop. CUDA owns the fd.
#[derive(Debug)]
pub struct ExternalMemory {
    driver: &'static Driver,
    raw: sys::CUexternalMemory,
}

// SAFETY: imported memory may be used from any thread that has its context current.
unsafe impl Send for ExternalMemory {}
// SAFETY: as for `Send`: the driver API is thread-safe and the handle is never mutated here.
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// Import `fd`, an OPAQUE_FD export of an allocation of `allocation_size` bytes.
    pub fn import(
        driver: &'static Driver,
        fd: ImportFd,
        allocation_size: u64,
        dedicated: bool,
    ) -> Result<Self> {
        let raw = fd.import(FdOwnership::TakenOnSuccess, |raw_fd| {
            // SAFETY: `raw_fd` is the open export `ImportFd` holds; `import` releases it to CUDA
            // on success and closes it on failure, as `TakenOnSuccess` says.
            unsafe { driver.import_external_memory_fd(raw_fd, allocation_size, dedicated) }
        })?;
        Ok(ExternalMemory { driver, raw })
    }
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        // SAFETY: every mapping of this import is released first (the mapping types own it).
        if let Err(e) = unsafe { self.driver.destroy_external_memory(self.raw) } {
            log::warn!("cuda: destroying imported memory failed: {e}");
        }
    }
}

/// Enqueue a fill of the first `words` 32-bit words at `ptr` with `value` on `stream`
/// (`cuMemsetD32Async`); more words than `size` bytes hold is [`ErrorKind::Invalid`](crate::ErrorKind::Invalid).
///
/// # Safety
/// `ptr` is device memory of at least `size` bytes that stays alive until the fill has run.
unsafe fn memset_d32_within(
    driver: &Driver,
    ptr: sys::CUdeviceptr,
    size: u64,
    value: u32,
    words: usize,
    stream: StreamRef,
) -> Result<()> {
    if words as u64 * 4 > size {
        return Err(Error::invalid(
            Api::Cuda,
            format!("a fill of {words} words exceeds the {size}-byte buffer"),
        ));
    }
    // SAFETY: the range lies inside the memory (checked above; the caller vouches for `size`);
    // the stream is live per `StreamRef`'s contract.
    unsafe { driver.memset_d32_async(ptr, value, words, stream.raw()) }
}

/// A device pointer to `size` bytes at offset 0 of imported memory, which it owns: on drop the
/// pointer is freed, then the import destroyed.
#[derive(Debug)]
pub struct MappedBuffer {
    ptr: sys::CUdeviceptr,
    size: u64,
    // After `ptr` is freed in `drop`, this field drops and destroys the import.
    memory: ExternalMemory,
}

impl MappedBuffer {
    /// Map the first `size` bytes of `memory`.
    pub fn map(memory: ExternalMemory, size: u64) -> Result<Self> {
        // SAFETY: `memory` is live (owned here).
        let ptr = unsafe { memory.driver.external_memory_mapped_buffer(memory.raw, 0, size) }?;
        let buffer = MappedBuffer { ptr, size, memory };
        check_aligned(buffer.ptr, "cuExternalMemoryGetMappedBuffer")?;
        Ok(buffer)
    }

    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Enqueue a fill of the first `words` 32-bit words with `value`.
    pub fn memset_d32_async(&self, value: u32, words: usize, stream: StreamRef) -> Result<()> {
        // SAFETY: `ptr` maps `size` bytes, alive while `self` is.
        unsafe { memset_d32_within(self.memory.driver, self.ptr, self.size, value, words, stream) }
    }
}

impl Drop for MappedBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised the stream before dropping the buffer; never used again.
        if let Err(e) = unsafe { self.memory.driver.mem_free(self.ptr) } {
            log::warn!("cuda: freeing a mapped buffer failed: {e}");
        }
    }
}

/// Imported memory viewed as a mipmapped array of one level (the image's texels), which owns the
/// import: on drop the array is destroyed, then the import.
#[derive(Debug)]
pub struct MappedArray {
    raw: sys::CUmipmappedArray,
    /// Level 0, owned by `raw`.
    level0: sys::CUarray,
    // After `raw` is destroyed in `drop`, this field drops and destroys the import.
    memory: ExternalMemory,
}

// SAFETY: arrays may be used from any thread that has their context current; the handles are
// never mutated after `map`.
unsafe impl Send for MappedArray {}
// SAFETY: as above.
unsafe impl Sync for MappedArray {}

impl MappedArray {
    /// Map `memory` as an image of `shape`, for surface loads and stores.
    pub fn map(memory: ExternalMemory, shape: ImageShape) -> Result<Self> {
        let desc = cu::mipmapped_array_desc(shape);
        // SAFETY: `memory` is live (owned here).
        let raw = unsafe { memory.driver.external_memory_mapped_mipmapped_array(memory.raw, &desc) }?;
        let mut array = MappedArray { raw, level0: std::ptr::null_mut(), memory };
        // SAFETY: `raw` is live (owned by `array`, which destroys it if this fails).
        array.level0 = unsafe { array.memory.driver.mipmapped_array_level(array.raw, 0) }?;
        Ok(array)
    }
}

impl Drop for MappedArray {
    fn drop(&mut self) {
        // SAFETY: the surface over it is destroyed first (`Surface` owns `self`) and the owner
        // synchronised the stream; never used again.
        if let Err(e) = unsafe { self.memory.driver.mipmapped_array_destroy(self.raw) } {
            log::warn!("cuda: destroying an imported image's mipmapped array failed: {e}");
        }
    }
}

/// A surface object over level 0 of a [`MappedArray`], which it owns: on drop the surface object
/// is destroyed, then the array, then the import.
#[derive(Debug)]
pub struct Surface {
    raw: sys::CUsurfObject,
    // After `raw` is destroyed in `drop`, this field drops (array, then import).
    array: MappedArray,
}

impl Surface {
    pub fn create(array: MappedArray) -> Result<Self> {
        // SAFETY: level 0 is live while `array` is, and the array was created with
        // CUDA_ARRAY3D_SURFACE_LDST (`mipmapped_array_desc`).
        let raw = unsafe { array.memory.driver.surf_object_create(array.level0) }?;
        Ok(Surface { raw, array })
    }

    pub fn raw(&self) -> sys::CUsurfObject {
        self.raw
    }
}

impl Drop for Surface {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised the stream (no kernel uses the surface); never used
        // again.
        if let Err(e) = unsafe { self.array.memory.driver.surf_object_destroy(self.raw) } {
            log::warn!("cuda: destroying a surface object failed: {e}");
        }
    }
}

/// Device memory CUDA owns (`cuMemAlloc`); freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer {
    driver: &'static Driver,
    ptr: sys::CUdeviceptr,
    size: u64,
}

// SAFETY: device memory may be used from any thread that has its context current.
unsafe impl Send for DeviceBuffer {}
// SAFETY: as for `Send`: the driver API is thread-safe and the handle is never mutated here.
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// Allocate `size` bytes in the current context.
    pub fn new(driver: &'static Driver, size: u64) -> Result<Self> {
        let bytes = checked_len(size, "cuMemAlloc_v2")?;
        let buffer = DeviceBuffer { driver, ptr: driver.mem_alloc(bytes)?, size };
        check_aligned(buffer.ptr, "cuMemAlloc_v2")?;
        Ok(buffer)
    }

    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Enqueue a fill of the first `words` 32-bit words with `value`.
    pub fn memset_d32_async(&self, value: u32, words: usize, stream: StreamRef) -> Result<()> {
        // SAFETY: `ptr` is an allocation of `size` bytes, alive while `self` is.
        unsafe { memset_d32_within(self.driver, self.ptr, self.size, value, words, stream) }
    }

    /// Enqueue a copy of the first `bytes` bytes into `dst` on `stream`.
    ///
    /// # Safety
    /// Nothing reads or writes `dst`'s memory until the copy has completed, and `dst` is not
    /// dropped before then.
    pub unsafe fn copy_to_host_async(
        &self,
        dst: &mut PinnedHostBuffer,
        bytes: u64,
        stream: StreamRef,
    ) -> Result<()> {
        if bytes > self.size || bytes > dst.size {
            return Err(Error::invalid(
                Api::Cuda,
                format!(
                    "a copy of {bytes} bytes exceeds the device buffer ({}) or the host buffer ({})",
                    self.size, dst.size
                ),
            ));
        }
        let len = checked_len(bytes, "cuMemcpyDtoHAsync_v2")?;
        // SAFETY: both ranges lie inside their allocations (checked above); the host buffer is
        // page-locked and, per this function's contract, untouched until the copy completes; the
        // stream is live per `StreamRef`'s contract.
        unsafe { self.driver.memcpy_dtoh_async(dst.ptr, self.ptr, len, stream.raw()) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised the stream before dropping the buffer; never used again.
        if let Err(e) = unsafe { self.driver.mem_free(self.ptr) } {
            log::warn!("cuda: freeing a device buffer failed: {e}");
        }
    }
}

/// Page-locked host memory (`cuMemAllocHost`), the target of asynchronous device-to-host
/// copies; freed on drop.
#[derive(Debug)]
pub struct PinnedHostBuffer {
    driver: &'static Driver,
    ptr: *mut c_void,
    size: u64,
}

// SAFETY: the allocation is plain host memory owned by this value; CUDA lets any thread with the
// context current free it.
unsafe impl Send for PinnedHostBuffer {}
// SAFETY: shared access only reads the memory (`bytes`); CUDA writes it only through a copy
// enqueued with `&mut self`, whose caller waits for it before reading.
unsafe impl Sync for PinnedHostBuffer {}

impl PinnedHostBuffer {
    /// Allocate `size` bytes (in the current context, which the memory stays registered with).
    pub fn new(driver: &'static Driver, size: u64) -> Result<Self> {
        let bytes = checked_len(size, "cuMemAllocHost_v2")?;
        let buffer = PinnedHostBuffer { driver, ptr: driver.mem_alloc_host(bytes)?, size };
        // SAFETY: a fresh, non-null allocation of `bytes` bytes that nothing else uses yet;
        // zeroed once so that `bytes()` never exposes uninitialised memory.
        unsafe { std::ptr::write_bytes(buffer.ptr.cast::<u8>(), 0, bytes) };
        Ok(buffer)
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The allocation's address (see `CudaHostMemory::as_mut_ptr`).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.cast::<u8>()
    }

    /// The contents (zero until a copy has written them).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a live allocation of `size` bytes (`size` fit a usize in `new`) owned
        // by `self`; CUDA writes it only during a copy enqueued through `&mut self`
        // (`DeviceBuffer::copy_to_host_async`), whose caller waits for it before reading.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.size as usize) }
    }
}

impl Drop for PinnedHostBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner waited for every copy into the buffer before dropping it; never used
        // again.
        if let Err(e) = unsafe { self.driver.mem_free_host(self.ptr) } {
            log::warn!("cuda: freeing page-locked host memory failed: {e}");
        }
    }
}

/// `size` as a `usize` byte count for `call`, or an error where it does not fit (and for 0,
/// which CUDA refuses to allocate).
fn checked_len(size: u64, call: &'static str) -> Result<usize> {
    match usize::try_from(size) {
        Ok(0) | Err(_) => Err(Error::invalid(
            Api::Cuda,
            format!("{call}: {size} bytes is not a size this host can allocate"),
        )),
        Ok(n) => Ok(n),
    }
}

/// Device pointers handed out are 16-byte aligned, so kernels may store `float4`s from them
/// (CUDA aligns allocations and dedicated imports to at least 256 bytes).
fn check_aligned(ptr: sys::CUdeviceptr, call: &'static str) -> Result<()> {
    if ptr % 16 != 0 {
        return Err(Error::invalid(
            Api::Cuda,
            format!("{call} returned {ptr:#x}, which is not 16-byte aligned"),
        ));
    }
    Ok(())
}

/// An imported semaphore (timeline or binary, OPAQUE_FD); destroyed on drop. CUDA owns the fd.
#[derive(Debug)]
pub struct ExternalSemaphore {
    driver: &'static Driver,
    raw: sys::CUexternalSemaphore,
}

// SAFETY: imported semaphores may be used from any thread that has their context current.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: as for `Send`: the driver API is thread-safe and the handle is never mutated here.
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    pub fn import(driver: &'static Driver, fd: ImportFd, timeline: bool) -> Result<Self> {
        let raw = fd.import(FdOwnership::TakenOnSuccess, |raw_fd| {
            // SAFETY: as in `ExternalMemory::import`, for a semaphore export.
            unsafe { driver.import_external_semaphore_fd(raw_fd, timeline) }
        })?;
        Ok(ExternalSemaphore { driver, raw })
    }

    /// Enqueue a wait (timeline: until the value is ≥ `value`; binary: `value` ignored).
    pub fn wait(&self, value: u64, stream: StreamRef) -> Result<()> {
        // SAFETY: the semaphore is live while borrowed; the stream per `StreamRef`'s contract.
        unsafe { self.driver.wait_external_semaphore(self.raw, value, stream.raw()) }
    }

    /// Enqueue a signal (timeline: to `value`; binary: `value` ignored).
    pub fn signal(&self, value: u64, stream: StreamRef) -> Result<()> {
        // SAFETY: the semaphore is live while borrowed; the stream per `StreamRef`'s contract.
        unsafe { self.driver.signal_external_semaphore(self.raw, value, stream.raw()) }
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised the stream (no pending wait or signal) before dropping.
        if let Err(e) = unsafe { self.driver.destroy_external_semaphore(self.raw) } {
            log::warn!("cuda: destroying an imported semaphore failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_oversized_lengths_are_refused_before_any_call() {
        assert_eq!(checked_len(4096, "cuMemAlloc_v2").unwrap(), 4096);
        let err = checked_len(0, "cuMemAlloc_v2").unwrap_err();
        assert_eq!((err.api(), err.kind()), (Api::Cuda, crate::ErrorKind::Invalid));
        assert!(err.to_string().contains("cuMemAlloc_v2: 0 bytes"), "{err}");
        #[cfg(target_pointer_width = "32")]
        assert!(checked_len(u64::MAX, "cuMemAllocHost_v2").is_err());
        assert!(check_aligned(0x7f00_0000_0100, "cuMemAlloc_v2").is_ok());
        assert!(check_aligned(0x7f00_0000_0104, "cuMemAlloc_v2").is_err());
    }
}
