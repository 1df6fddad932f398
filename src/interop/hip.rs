//! The HIP side of the interop, kernel-agnostic, with the names of [`super::cuda`]: open the AMD
//! device Vulkan runs on, import the buffer Vulkan exported, compile your kernel with hiprtc, and
//! run wait → your launch → signal on one stream.
//!
//! **Semaphores on AMD.** ROCm on Linux cannot import external semaphores (clr's Linux
//! `importExtSemaphore` is a stub; hipamd#48, clr#72), and HIP < 6.4 has no timeline handle type
//! at all, so [`Hip::import_timeline`] and [`Hip::import_binary`] fail there with
//! `ComputeError::Unsupported` saying so. Then hand off on the host: [`Hip::synchronize`] after
//! the kernel, then let Vulkan read (vkhip's `bridged` scheme; `examples/hip_interop.rs` does it).
//!
//! HIP has no context object: every object shares the device and the stream, each call first
//! makes the device current on its thread (`hipSetDevice`), and every `Drop` first waits for the
//! stream, whatever order you drop things in. Built and tested without an AMD GPU only.
//!
//! ```no_run
//! # fn main() -> Result<(), vkhip::interop::ComputeError> {
//! use vkhip::interop::hip::{devices, Hip};
//! let first = devices()?.remove(0); // Unavailable (one line) without ROCm or an AMD GPU
//! let hip = Hip::open(first.uuid)?;
//! let kernel = hip.compile("extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }", "k")?;
//! # let _ = kernel; Ok(()) }
//! ```

use super::FrameStream;
use crate::compute::fd::ImportFd;
use crate::compute::hip::compile::{check_target_supported, compile_kernel};
use crate::compute::hip::device::{find_by_uuid, format_hip_version, HipDevice};
use crate::compute::hip::ffi;
use crate::compute::hip::offers_timeline_import;
use crate::compute::hip::raii::{ExternalMemory, ExternalSemaphore, MappedBuffer, Module, Stream};
use crate::compute::{ComputeDeviceInfo, ComputeError, InteropMemory};
use std::ffi::c_void;
use std::sync::Arc;

type Result<T> = std::result::Result<T, ComputeError>;

/// The HIP devices (name, ordinal, UUID built from the PCI location as RADV and AMDVLK build
/// deviceUUID): match a Vulkan device's `deviceUUID` against them.
pub fn devices() -> Result<Vec<ComputeDeviceInfo>> {
    crate::compute::hip::probe()
}

/// What every object shares: the stream, and the device to make current before each call. The
/// last owner's `Drop` quiesces (device current, stream idle) before the stream itself goes.
struct Shared {
    stream: Stream,
    device: HipDevice,
    runtime: i32,
}

// SAFETY: the stream is used only through the HIP runtime API, which is thread-safe (the runtime
// locks its own state; calls on one stream from several threads are serialised, in whatever order
// the callers make). Each call sets the device on its own thread first. No Rust-side mutable state.
unsafe impl Sync for Shared {}

impl Shared {
    /// Make the device current on this thread (HIP's current device is per thread).
    fn current(&self) -> Result<()> {
        ffi::set_device(self.device.ordinal)
    }

    /// Make the device current and wait for the stream: before any object that pending work may
    /// use is destroyed.
    fn quiesce(&self) {
        if let Err(e) = self.current().and_then(|()| self.stream.synchronize()) {
            log::warn!("hip: waiting for the stream before teardown failed: {e}");
        }
    }
}

/// One HIP device and one non-blocking stream on it.
pub struct Hip {
    shared: Arc<Shared>,
}

impl Hip {
    /// Open the device whose UUID is `device_uuid` (Vulkan's `deviceUUID`; HIP devices are matched
    /// by PCI domain/bus/device, because `hipDeviceGetUuid` is not Vulkan's UUID) and create a
    /// non-blocking stream on it.
    pub fn open(device_uuid: [u8; 16]) -> Result<Self> {
        Hip::on_device(find_by_uuid(device_uuid)?)
    }

    /// [`Hip::open`] for a device already found (the backend has looked it up).
    pub(crate) fn on_device(device: HipDevice) -> Result<Self> {
        ffi::set_device(device.ordinal)?;
        let runtime = ffi::runtime_version()?;
        let stream = Stream::new_non_blocking()?;
        Ok(Hip { shared: Arc::new(Shared { stream, device, runtime }) })
    }

    /// "AMD Radeon RX 6800 (device 0, gfx1030, PCI 0000:03:00.0, HIP 6.4.43483)".
    pub fn describe(&self) -> String {
        let (d, hip) = (&self.shared.device, format_hip_version(self.shared.runtime));
        format!("{} (device {}, {}, PCI {}, HIP {hip})", d.name, d.ordinal, d.arch, d.pci_bus_id)
    }

    /// Import exported Vulkan memory and map it for kernels. The fd is consumed either way.
    pub fn import_buffer(&self, memory: InteropMemory) -> Result<HipBuffer> {
        let s = &self.shared;
        s.current()?;
        memory.check_sizes("hip")?;
        let (size, allocation) = (memory.buffer_size, memory.allocation_size);
        let imported = ExternalMemory::import(memory.fd, allocation, memory.dedicated)?;
        let mapped = MappedBuffer::map(imported, size)?;
        Ok(HipBuffer { mapped, size, shared: s.clone() })
    }

    /// Import an exported Vulkan timeline semaphore. The fd is consumed either way. Fails with
    /// `Unsupported` on HIP < 6.4 (no timeline handle type) and on ROCm for Linux (see above).
    pub fn import_timeline(&self, fd: ImportFd) -> Result<HipTimeline> {
        if !offers_timeline_import(self.shared.runtime) {
            let version = format_hip_version(self.shared.runtime);
            return Err(unsupported(format!(
                "HIP runtime {version} has no timeline semaphore handle type (HIP 6.4 adds it)"
            )));
        }
        self.import_semaphore(fd, ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD, "timeline")
    }

    /// Import an exported Vulkan binary semaphore (each signal must be matched by one wait). The
    /// fd is consumed either way. Fails with `Unsupported` on ROCm for Linux (see above).
    pub fn import_binary(&self, fd: ImportFd) -> Result<HipTimeline> {
        self.import_semaphore(fd, ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD, "binary")
    }

    fn import_semaphore(&self, fd: ImportFd, handle_type: u32, kind: &str) -> Result<HipTimeline> {
        self.shared.current()?;
        let semaphore = ExternalSemaphore::import(fd, handle_type)
            .map_err(|e| unsupported(format!("importing a {kind} semaphore failed ({e})")))?;
        Ok(HipTimeline { semaphore, shared: self.shared.clone() })
    }

    /// Compile `source` with hiprtc for this device's target (its gcnArchName, e.g.
    /// "gfx90a:sramecc+:xnack-") and load `entry`, an `extern "C" __global__` function.
    pub fn compile(&self, source: &str, entry: &str) -> Result<HipKernel> {
        let s = &self.shared;
        s.current()?;
        check_target_supported(&s.device.name, &s.device.arch, s.runtime)?;
        let code = compile_kernel(source, entry, &s.device.arch)?;
        // SAFETY: `compile_kernel` checked that `code` is a whole AMDGPU ELF defining `entry`.
        let module = unsafe { Module::load(&code, entry) }?;
        Ok(HipKernel { module, shared: s.clone() })
    }

    /// Enqueue `kernel` on the stream: `grid` blocks of `block` threads.
    ///
    /// # Safety
    /// `args` holds one pointer per parameter of the kernel, in order, each to a live value of
    /// that parameter's type; device pointers among them ([`HipBuffer::device_ptr`]) address
    /// memory large enough for everything the kernel touches.
    pub unsafe fn launch(
        &self,
        kernel: &HipKernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        self.shared.current()?;
        let (function, stream) = (kernel.module.function(), self.shared.stream.raw());
        // SAFETY: per this function's contract; the module and the stream are live (owned by
        // `kernel` and `self`) and belong to this device.
        unsafe { ffi::launch_kernel(function, grid, block, stream, args) }
    }

    /// Wait (on the host) until everything enqueued so far has finished: HIP's own wait, never a
    /// semaphore value. With no imported semaphores, this is the hand-off to Vulkan.
    pub fn synchronize(&self) -> Result<()> {
        self.shared.current()?;
        self.shared.stream.synchronize()
    }
}

fn unsupported(what: String) -> ComputeError {
    ComputeError::Unsupported {
        backend: "hip",
        reason: format!(
            "{what}: ROCm on Linux cannot import Vulkan semaphores (external semaphores are \
             implemented only in its Windows/PAL backend; hipamd#48, clr#72); synchronise on the \
             host instead: Hip::synchronize after the kernel, then let Vulkan read"
        ),
    }
}

impl FrameStream for Hip {
    type Semaphore = HipTimeline;

    fn wait(&self, semaphore: &HipTimeline, value: u64) -> Result<()> {
        self.shared.current()?;
        semaphore.semaphore.wait_async(value, &self.shared.stream)
    }

    fn signal(&self, semaphore: &HipTimeline, value: u64) -> Result<()> {
        self.shared.current()?;
        semaphore.semaphore.signal_async(value, &self.shared.stream)
    }
}

impl Drop for Hip {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}

/// Imported Vulkan memory, mapped for kernels; unmapped and released on drop (after the stream
/// is idle).
pub struct HipBuffer {
    mapped: MappedBuffer,
    size: u64,
    shared: Arc<Shared>,
}

impl HipBuffer {
    /// The mapping, for vkhip's own kernels and fills.
    pub(crate) fn mapped(&self) -> &MappedBuffer {
        &self.mapped
    }
}

impl HipBuffer {
    /// The device address a kernel writes (`float*` etc. on the device).
    pub fn device_ptr(&self) -> u64 {
        self.mapped.ptr().addr() as u64
    }

    /// Bytes mapped.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for HipBuffer {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}

/// An imported Vulkan semaphore (timeline or binary); destroyed on drop (after the stream is idle).
pub struct HipTimeline {
    semaphore: ExternalSemaphore,
    shared: Arc<Shared>,
}

impl HipTimeline {
    /// The imported semaphore, for waits and signals on another stream of the same device.
    pub(crate) fn raw(&self) -> &ExternalSemaphore {
        &self.semaphore
    }
}

impl Drop for HipTimeline {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}

/// A compiled, loaded kernel; unloaded on drop (after the stream is idle).
pub struct HipKernel {
    module: Module,
    shared: Arc<Shared>,
}

impl Drop for HipKernel {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}
