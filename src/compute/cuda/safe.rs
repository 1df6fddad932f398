//! RAII types over [`super::result`]: each owns one CUDA object and destroys it on drop.
//!
//! Every object here belongs to the device's primary context and must be used, and dropped, with
//! that context current on the calling thread; `CudaBackend` makes it current at the top of every
//! entry point and of its `Drop`. Drops never panic: a failed destroy is logged and skipped.
//!
//! Ownership encodes the teardown rules of DESIGN.md: a [`Stream`] synchronises before it is
//! destroyed; a [`MappedBuffer`] owns its [`ExternalMemory`], so the pointer is freed before the
//! import is destroyed; imports take their fd through [`ImportFd::import`] with
//! [`FdOwnership::TakenOnSuccess`] (CUDA owns the fd after a successful import).

use super::plan::{self, DeviceLimits, SinewaveArgs};
use super::result::Driver;
use crate::compute::fd::{FdOwnership, ImportFd};
use crate::compute::kernel::SinewaveLaunch;
use crate::compute::ComputeError;
use crate::sim::WaveParams;
use cudarc::driver::sys;

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

/// The loaded `sinewave` module and its entry point; unloaded on drop.
#[derive(Debug)]
pub struct Kernel {
    driver: &'static Driver,
    module: sys::CUmodule,
    function: sys::CUfunction,
}

// SAFETY: modules and functions may be used from any thread that has their context current.
unsafe impl Send for Kernel {}

impl Kernel {
    /// Load `image` (cubin, or NUL-terminated PTX) and look up `entry`.
    pub fn load(driver: &'static Driver, image: &[u8], entry: &str) -> Result<Self> {
        let module = driver.module_load_data(image)?;
        // SAFETY: `module` was just loaded into the current context.
        match unsafe { driver.module_get_function(module, entry) } {
            Ok(function) => Ok(Kernel { driver, module, function }),
            Err(e) => {
                // SAFETY: loaded above, nothing uses it.
                if let Err(u) = unsafe { driver.module_unload(module) } {
                    log::warn!("cuda: unloading the module failed: {u}");
                }
                Err(e)
            }
        }
    }

    /// Enqueue `sinewave` writing `slot` for `params` on `stream`.
    pub fn launch(
        &self,
        stream: &Stream,
        slot: &MappedBuffer,
        params: &WaveParams,
        limits: DeviceLimits,
    ) -> Result<SinewaveLaunch> {
        plan::check_grid_fits(params.grid, slot.size())?;
        crate::fault::inject_compute(crate::fault::Fault::CudaLaunch, "cuda", "cuLaunchKernel")?;
        let cfg = plan::launch_config(params.grid, limits);
        let mut args = SinewaveArgs::new(slot.ptr(), params);
        let mut ptrs = args.param_pointers();
        // SAFETY: `function` is `sinewave`, whose parameters are `SinewaveArgs::SIGNATURE` (a unit
        // test checks it against the source) and `ptrs` follows that order; the kernel writes
        // `grid.len()` floats from `slot.ptr()`, which the check above keeps inside the mapping;
        // `args` outlives the call, which copies the values.
        unsafe { self.driver.launch_kernel(self.function, cfg, stream.raw(), &mut ptrs) }?;
        Ok(cfg)
    }
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

    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn size(&self) -> u64 {
        self.size
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
