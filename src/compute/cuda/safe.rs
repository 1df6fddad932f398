//! RAII types over [`super::result`]: each owns one CUDA object and destroys it on drop.
//!
//! Every object here belongs to the device's primary context and must be used, and dropped, with
//! that context current on the calling thread; `CudaBackend` makes it current at the top of every
//! entry point and of its `Drop`. Drops never panic: a failed destroy is logged and skipped.
//!
//! [`DeviceBuffer`] (`cuMemAlloc`) and [`PinnedHostBuffer`] (`cuMemAllocHost`) serve the
//! staged-copy backend; a kernel writes a [`DeviceRange`], which only a [`MappedBuffer`] or a
//! [`DeviceBuffer`] hands out.
//!
//! Ownership encodes the teardown rules of DESIGN.md: a [`Stream`] synchronises before it is
//! destroyed; a [`MappedBuffer`] owns its [`ExternalMemory`], so the pointer is freed before the
//! import is destroyed; imports take their fd through [`ImportFd::import`] with
//! [`FdOwnership::TakenOnSuccess`] (CUDA owns the fd after a successful import).

use super::plan::{self, DeviceLimits, SinewaveArgs, SinewaveBatchArgs};
use super::result::Driver;
use crate::compute::fd::{FdOwnership, ImportFd};
use crate::compute::kernel::{SinewaveLaunch, SINEWAVE_BATCH_ENTRY};
use crate::compute::ComputeError;
use crate::sim::WaveParams;
use cudarc::driver::sys;
use std::ffi::c_void;

type Result<T> = std::result::Result<T, ComputeError>;

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
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `PrimaryContext::retain`; the objects created in the
        // context are owned by structs that drop before this one (see CudaBackend's field order).
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

    fn raw(&self) -> sys::CUstream {
        self.raw
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

impl Event {
    pub fn new(driver: &'static Driver, timing: bool) -> Result<Self> {
        Ok(Event { driver, raw: driver.event_create(timing)? })
    }

    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both objects are live while borrowed.
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

    /// Microseconds from `self` to `end` (both recorded, completed and created with timing).
    pub fn elapsed_us(&self, end: &Event) -> Result<f64> {
        // SAFETY: both events are live while borrowed; an event without timing or not yet
        // complete is an error code, not undefined behaviour.
        let ms = unsafe { self.driver.event_elapsed_ms(self.raw, end.raw) }?;
        Ok(f64::from(ms) * 1000.0)
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

/// The loaded `sinewave` module and its entry points; unloaded on drop.
#[derive(Debug)]
pub struct Kernel {
    driver: &'static Driver,
    module: sys::CUmodule,
    function: sys::CUfunction,
    /// `sinewave_batch` (None: an image without it; batches then launch once per slot).
    batch: Option<sys::CUfunction>,
}

// SAFETY: modules and functions may be used from any thread that has their context current.
unsafe impl Send for Kernel {}

impl Kernel {
    /// Load `image` (cubin, or NUL-terminated PTX) and look up `entry`.
    pub fn load(driver: &'static Driver, image: &[u8], entry: &str) -> Result<Self> {
        let module = driver.module_load_data(image)?;
        // SAFETY: `module` was just loaded into the current context.
        match unsafe { driver.module_get_function(module, entry) } {
            Ok(function) => Ok(Kernel { driver, module, function, batch: None }),
            Err(e) => {
                // SAFETY: loaded above, nothing uses it.
                if let Err(u) = unsafe { driver.module_unload(module) } {
                    log::warn!("cuda: unloading the module failed: {u}");
                }
                Err(e)
            }
        }
    }

    /// Enqueue `sinewave` writing `dst` (imported memory or a CUDA allocation) for `params` on
    /// `stream`.
    pub fn launch(
        &self,
        stream: &Stream,
        dst: DeviceRange<'_>,
        params: &WaveParams,
        limits: DeviceLimits,
    ) -> Result<SinewaveLaunch> {
        plan::check_grid_fits(params.grid, dst.size())?;
        crate::fault::inject_compute(crate::fault::Fault::CudaLaunch, "cuda", "cuLaunchKernel")?;
        let cfg = plan::launch_config(params.grid, limits);
        let mut args = SinewaveArgs::new(dst.ptr(), params);
        let mut ptrs = args.param_pointers();
        // SAFETY: `function` is `sinewave`, whose parameters are `SinewaveArgs::SIGNATURE` (a unit
        // test checks it against the source) and `ptrs` follows that order; the kernel writes
        // `grid.len()` floats from `dst.ptr()`, which the check above keeps inside the range (a
        // `DeviceRange` is only made from live, owned device memory of its size, 16-byte
        // aligned, which it borrows); `args` outlives the call, which copies the values.
        unsafe {
            self.driver.launch_kernel(self.function, dims(cfg).0, dims(cfg).1, stream.raw(), &mut ptrs)
        }?;
        Ok(cfg)
    }
}

impl Kernel {
    /// Enqueue one launch of `sinewave_batch` writing `dsts[i]` for `params[i]` (all on one grid,
    /// at most [`crate::compute::kernel::MAX_BATCH`]); falls back to one `sinewave` launch per slot when the image has no
    /// batch entry. One launch instead of B is most of what a batched hand-off saves on the GPU.
    pub fn launch_batch(
        &self,
        stream: &Stream,
        dsts: &[DeviceRange<'_>],
        params: &[WaveParams],
        limits: DeviceLimits,
    ) -> Result<SinewaveLaunch> {
        let Some(function) = self.batch.filter(|_| dsts.len() > 1) else {
            let mut cfg = None;
            for (d, p) in dsts.iter().zip(params) {
                cfg = Some(self.launch(stream, *d, p, limits)?);
            }
            return cfg.ok_or_else(|| ComputeError::Unsupported {
                backend: "cuda",
                reason: "an empty batch".into(),
            });
        };
        for (d, p) in dsts.iter().zip(params) {
            plan::check_grid_fits(p.grid, d.size())?;
        }
        crate::fault::inject_compute(crate::fault::Fault::CudaLaunch, "cuda", "cuLaunchKernel")?;
        let ptrs: Vec<u64> = dsts.iter().map(DeviceRange::ptr).collect();
        let mut args = SinewaveBatchArgs::new(&ptrs, params)?;
        let mut cfg = plan::launch_config(params[0].grid, limits);
        cfg.grid_z = dsts.len() as u32;
        let mut arg_ptrs = args.param_pointers();
        // SAFETY: `function` is `sinewave_batch`, whose parameters are
        // `SinewaveBatchArgs::SIGNATURE` with the struct's layout checked against the source by a
        // unit test; blockIdx.z < dsts.len() picks one of the pointers filled in, each the start
        // of a live `DeviceRange` that holds the grid (checked above); `args` outlives the call,
        // which copies the values.
        unsafe {
            self.driver.launch_kernel(function, dims(cfg).0, dims(cfg).1, stream.raw(), &mut arg_ptrs)
        }?;
        Ok(cfg)
    }
}

impl Kernel {
    /// Also look up `sinewave_batch` (logged at debug level if the image has none: batches then
    /// launch once per slot).
    pub fn with_batch_entry(mut self) -> Self {
        // SAFETY: `module` is live (owned by `self`) in the current context.
        self.batch = unsafe { self.driver.module_get_function(self.module, SINEWAVE_BATCH_ENTRY) }
            .map_err(|e| log::debug!("cuda: no {SINEWAVE_BATCH_ENTRY} in the image ({e})"))
            .ok();
        self
    }

    /// Enqueue a launch of the loaded entry point with your own arguments.
    ///
    /// # Safety
    /// `args` holds one pointer per parameter of the entry point, in order, each to a live value
    /// of that parameter's type; device pointers among them address memory of the current
    /// context large enough for everything the kernel touches, and nothing else uses that memory
    /// until the stream is past this launch.
    pub unsafe fn launch_raw(
        &self,
        stream: &Stream,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: per this function's contract; `function` belongs to the live module.
        unsafe { self.driver.launch_kernel(self.function, grid, block, stream.raw(), args) }
    }
}

/// `cuLaunchKernel`'s (grid, block) for a `sinewave` launch.
fn dims(l: SinewaveLaunch) -> ([u32; 3], [u32; 3]) {
    ([l.grid_x, l.grid_y, l.grid_z], [l.block_x, 1, 1])
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised every stream that ran this kernel before dropping it.
        if let Err(e) = unsafe { self.driver.module_unload(self.module) } {
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
        // SAFETY: the only mapping of this import is freed first (`MappedBuffer` owns `self`).
        if let Err(e) = unsafe { self.driver.destroy_external_memory(self.raw) } {
            log::warn!("cuda: destroying imported memory failed: {e}");
        }
    }
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
        // The kernel stores float4s from the base address.
        if buffer.ptr % 16 != 0 {
            return Err(ComputeError::Api {
                api: "cuda",
                call: "cuExternalMemoryGetMappedBuffer",
                message: format!("mapped pointer {:#x} is not 16-byte aligned", buffer.ptr),
            });
        }
        Ok(buffer)
    }

    /// The mapping, for a kernel to write.
    pub fn range(&self) -> DeviceRange<'_> {
        DeviceRange { ptr: self.ptr, size: self.size, _owner: std::marker::PhantomData }
    }

    /// Enqueue a fill of the first `words` 32-bit words with `value`.
    pub fn memset_d32_async(&self, value: u32, words: usize, stream: &Stream) -> Result<()> {
        if words as u64 * 4 > self.size {
            return Err(ComputeError::Unsupported {
                backend: "cuda",
                reason: format!("fill of {words} words exceeds the {}-byte slot", self.size),
            });
        }
        // SAFETY: the range lies inside the mapping (checked above); the stream is live.
        unsafe { self.memory.driver.memset_d32_async(self.ptr, value, words, stream.raw()) }
    }
}

impl Drop for MappedBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised the stream before dropping slots; never used again.
        if let Err(e) = unsafe { self.memory.driver.mem_free(self.ptr) } {
            log::warn!("cuda: freeing a mapped buffer failed: {e}");
        }
    }
}

/// A device address range a kernel may write: `size` bytes from `ptr`, 16-byte aligned, borrowed
/// from the [`MappedBuffer`] or [`DeviceBuffer`] that owns them (only those make one).
#[derive(Clone, Copy, Debug)]
pub struct DeviceRange<'a> {
    ptr: sys::CUdeviceptr,
    size: u64,
    _owner: std::marker::PhantomData<&'a ()>,
}

impl DeviceRange<'_> {
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn size(&self) -> u64 {
        self.size
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

impl DeviceBuffer {
    /// Allocate `size` bytes in the current context.
    pub fn new(driver: &'static Driver, size: u64) -> Result<Self> {
        let bytes = checked_len(size, "cuMemAlloc_v2")?;
        let buffer = DeviceBuffer { driver, ptr: driver.mem_alloc(bytes)?, size };
        // cuMemAlloc aligns to at least 256 bytes; the kernel's float4 stores need 16.
        if buffer.ptr % 16 != 0 {
            return Err(ComputeError::Api {
                api: "cuda",
                call: "cuMemAlloc_v2",
                message: format!("device pointer {:#x} is not 16-byte aligned", buffer.ptr),
            });
        }
        Ok(buffer)
    }

    /// The whole allocation, for a kernel to write.
    pub fn range(&self) -> DeviceRange<'_> {
        DeviceRange { ptr: self.ptr, size: self.size, _owner: std::marker::PhantomData }
    }

    /// Enqueue a copy of the first `bytes` bytes into `dst` on `stream`. `dst` is borrowed
    /// mutably until the caller has waited for the copy (for example `stream.synchronize()` or an
    /// event recorded after it): the borrow ends when this returns, so the wait is the caller's.
    ///
    /// # Safety
    /// Nothing reads or writes `dst`'s memory until the copy has completed, and `dst` is not
    /// dropped before then.
    pub unsafe fn copy_to_host_async(
        &self,
        dst: &mut PinnedHostBuffer,
        bytes: u64,
        stream: &Stream,
    ) -> Result<()> {
        if bytes > self.size || bytes > dst.size {
            return Err(ComputeError::Unsupported {
                backend: "cuda",
                reason: format!(
                    "copy of {bytes} bytes exceeds the device buffer ({}) or the host buffer ({})",
                    self.size, dst.size
                ),
            });
        }
        let len = checked_len(bytes, "cuMemcpyDtoHAsync_v2")?;
        // SAFETY: both ranges lie inside their allocations (checked above); the host buffer is
        // page-locked and, per this function's contract, untouched until the copy completes; the
        // stream is live.
        unsafe { self.driver.memcpy_dtoh_async(dst.ptr, self.ptr, len, stream.raw()) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner synchronised every stream that used the buffer before dropping it;
        // never used again.
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
    ptr: *mut std::ffi::c_void,
    size: u64,
}

// SAFETY: the allocation is plain host memory owned by this value; CUDA lets any thread with the
// context current free it.
unsafe impl Send for PinnedHostBuffer {}

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

    /// The contents (zero until a copy has written them). Only meaningful once the copies into
    /// the buffer have completed (the caller waited for them).
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
        Ok(0) | Err(_) => Err(ComputeError::Unsupported {
            backend: "cuda",
            reason: format!("{call}: {size} bytes is not a size this host can allocate"),
        }),
        Ok(n) => Ok(n),
    }
}

/// An imported semaphore (timeline or binary, OPAQUE_FD); destroyed on drop. CUDA owns the fd.
#[derive(Debug)]
pub struct ExternalSemaphore {
    driver: &'static Driver,
    raw: sys::CUexternalSemaphore,
}

// SAFETY: imported semaphores may be used from any thread that has their context current.
unsafe impl Send for ExternalSemaphore {}

impl ExternalSemaphore {
    pub fn import(driver: &'static Driver, fd: ImportFd, timeline: bool) -> Result<Self> {
        let raw = fd.import(FdOwnership::TakenOnSuccess, |raw_fd| {
            // SAFETY: as in `ExternalMemory::import`, for a semaphore export.
            unsafe { driver.import_external_semaphore_fd(raw_fd, timeline) }
        })?;
        Ok(ExternalSemaphore { driver, raw })
    }

    /// Enqueue a wait (timeline: until the value is ≥ `value`; binary: `value` ignored).
    pub fn wait(&self, value: u64, stream: &Stream) -> Result<()> {
        // SAFETY: both objects are live while borrowed.
        unsafe { self.driver.wait_external_semaphore(self.raw, value, stream.raw()) }
    }

    /// Enqueue a signal (timeline: to `value`; binary: `value` ignored).
    pub fn signal(&self, value: u64, stream: &Stream) -> Result<()> {
        // SAFETY: both objects are live while borrowed.
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

impl crate::compute::timing::TimedEvent for Event {
    type Stream = Stream;

    fn record_on(&self, stream: &Stream) -> Result<()> {
        self.record(stream)
    }

    fn is_done(&self) -> Result<bool> {
        self.query()
    }

    fn ms_since(&self, earlier: &Event) -> Result<f32> {
        // SAFETY: both events are live while borrowed; incomplete or untimed events are an
        // error code, not undefined behaviour.
        unsafe { self.driver.event_elapsed_ms(earlier.raw, self.raw) }
    }

    fn wait(&self) -> Result<()> {
        self.synchronize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_oversized_lengths_are_refused_before_any_call() {
        assert_eq!(checked_len(4096, "cuMemAlloc_v2").unwrap(), 4096);
        let err = checked_len(0, "cuMemAlloc_v2").unwrap_err();
        assert!(matches!(err, ComputeError::Unsupported { backend: "cuda", .. }));
        assert!(err.to_string().contains("cuMemAlloc_v2: 0 bytes"), "{err}");
        #[cfg(target_pointer_width = "32")]
        assert!(checked_len(u64::MAX, "cuMemAllocHost_v2").is_err());
    }
}
