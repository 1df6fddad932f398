//! The HIP side, kernel-agnostic, with the names of [`crate::cuda`]: open the AMD device Vulkan
//! runs on, import the buffers and images Vulkan exported, compile your kernel with hiprtc, and
//! run your launches on one stream.
//!
//! [`Hip`] is one device and **one** non-blocking stream, on which everything the crate enqueues
//! runs — waits, signals, launches, fills and event records. HIP has no context object: every
//! call first makes the device current on its thread (`hipSetDevice`). Every object it hands out
//! keeps the device and the stream alive, and every imported object's `Drop` first waits for the
//! stream, so nothing is destroyed while a kernel may still use it, whatever order you drop
//! things in. `libamdhip64` is linked (hip-runtime-sys; build with `HIP_PATH` set) and hiprtc is
//! loaded at run time (`libhiprtc.so.N` on ROCm 6+, inside `libamdhip64.so.5` on HIP 5.x).
//! Statuses stay integers ([`Error::status`](crate::Error::status)). **Built and tested without
//! an AMD GPU only** (Debian 12's HIP 5.2.3 and Debian sid's 6.4.3): up to the device, never on it.
//!
//! ```no_run
//! # fn main() -> Result<(), vkhip_interop::Error> {
//! use vkhip_interop::hip::{devices, Hip};
//! let first = devices()?.remove(0); // an environment error (one line) without ROCm or an AMD GPU
//! let hip = Hip::open(first.uuid)?;
//! let kernel = hip.compile("extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }", "k")?;
//! # let _ = kernel; Ok(()) }
//! ```
//!
//! **Semaphores on AMD.** ROCm on Linux cannot import external semaphores:
//! `hipImportExternalSemaphore` reaches clr's Linux `importExtSemaphore`, a stub that fails
//! (hipamd#48, clr#72: implemented only in the Windows/PAL backend), and HIP < 6.4 has no timeline
//! handle type at all, so [`Hip::import_timeline`] is refused there without a call and
//! [`Hip::import_binary`] / [`Hip::import_timeline`] fail on Linux. Hand off on the host instead:
//! [`Hip::synchronize`] after the kernel, then let Vulkan read (`examples/hip_buffer.rs` does).
//! The calls are kept so that a runtime that implements them is used without a change. Where one
//! does and HIP signals a timeline, host-wait on it as on one CUDA signals, with
//! [`SharedSemaphore::wait`](crate::vulkan::SharedSemaphore::wait), which reads the counter
//! ([`crate::vulkan::wait`]): whether AMD's Vulkan driver wakes a blocking `vkWaitSemaphores`
//! late on a foreign signal, as NVIDIA's does, is unknown, since that path never ran on AMD.
//!
//! **File descriptors.** Both HIP imports *borrow* the fd: the crate closes it after the call,
//! whatever the outcome ([`MEMORY_FD_OWNERSHIP`], [`SEMAPHORE_FD_OWNERSHIP`], also
//! [`HipBuffer::FD_OWNERSHIP`], [`HipImage::FD_OWNERSHIP`], [`HipSemaphore::FD_OWNERSHIP`]).
//! CUDA takes it on success instead.
//!
//! **Images.** [`Hip::import_image`] maps an exported image as a one-level mipmapped array
//! (`hipExternalMemoryGetMappedMipmappedArray`) with a surface object ([`HipImage::surface`], a
//! `hipSurfaceObject_t`). A kernel writes texel (x, y) with `surf2Dwrite(value, surface,
//! x * texel_bytes, y)` (x in bytes), `value` as for CUDA: `float`, `uchar4`, `ushort4` holding
//! halves, `float4`. HIP 5.x has no `hipExternalMemoryGetMappedMipmappedArray` (and exports its
//! surface calls only under C++ names), so the image calls are looked up at run time; where the
//! runtime lacks one, `import_image` is an [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)
//! error naming it. Buffers work on every runtime from 5.2 on.

mod compile;
mod device;
mod ffi;
mod image_ffi;
#[cfg(test)]
mod layout;
mod raii;
mod rtc;

pub use compile::{compile_to_image, hiprtc_version, supported_offload_archs};
pub use device::amd_uuid_from_pci;

use crate::error::{Api, Error, Result};
use crate::held::{Held, Quiesce};
use crate::{ExportedImage, ExportedMemory, FdOwnership, FrameStream, ImageShape, ImportFd};
use raii::{Event, ExternalMemory, ExternalSemaphore, MappedArray, MappedBuffer, Module, Stream, Surface};
use std::ffi::c_void;
use std::sync::Arc;

/// What `hipImportExternalMemory` does with the fd: it borrows it.
///
/// ROCm clr, `hipImportExternalMemory` (hipamd/src/hip_memory.cpp) wraps the fd in an
/// `amd::ExternalBuffer` (rocclr/platform/external_memory.hpp, whose destructor is empty) and
/// calls `create()`, which for a one-device context maps the memory at once
/// (`amd::Memory::create`, rocclr/platform/memory.cpp) through `roc::Buffer::create` →
/// `Memory::interopMapBuffer` → `hsa_amd_interop_map_buffer(fd)` (rocclr/device/rocm/rocmemory.cpp).
/// The kernel driver takes its own dma-buf reference there; clr never closes or keeps using the
/// fd (it closes only fds it exported itself, in the GL path). HIP 5.x (Debian's 5.2) takes the
/// same route through `amd::BufferVk` → `interopMapBuffer(getVkSharedHandle())`. So the fd is
/// closed right after the call, success or not: what rocDecode does too.
pub const MEMORY_FD_OWNERSHIP: FdOwnership = FdOwnership::Borrowed;

/// What `hipImportExternalSemaphore` does with the fd: it borrows it.
///
/// ROCm clr, `hipImportExternalSemaphore` (hipamd/src/hip_memory.cpp) passes the fd to
/// `amd::Device::importExtSemaphore`; on Linux (`roc::Device`, rocclr/device/rocm/rocdevice.hpp)
/// that is a stub returning false, so the call fails with `hipErrorNotSupported` and the fd is
/// never consumed. The caller closes it in every case; were a future ROCm to take ownership on
/// success, this constant is the one place to change.
pub const SEMAPHORE_FD_OWNERSHIP: FdOwnership = FdOwnership::Borrowed;

/// A HIP device as the runtime reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The runtime's ordinal (`hipSetDevice`).
    pub ordinal: i32,
    pub name: String,
    /// Vulkan's `deviceUUID` for this GPU, built from its PCI location ([`amd_uuid_from_pci`]):
    /// `hipDeviceGetUuid` is the HSA agent UUID, which no Vulkan driver reports.
    pub uuid: [u8; 16],
    /// `hipDeviceProp_t::gcnArchName`, e.g. "gfx90a:sramecc+:xnack-": the hiprtc target.
    pub arch: String,
    /// "dddd:bb:dd.f" from `hipDeviceGetPCIBusId`.
    pub pci_bus_id: String,
    pub compute_units: u32,
    /// One line for listings: target, PCI location, CUs, runtime version, where the UUID comes from.
    pub detail: String,
}

/// The version `hipRuntimeGetVersion` reports (`HIP_VERSION` encoding: major·10⁷ + minor·10⁵ +
/// patch; 50221153 for Debian 12's HIP); displays as "5.2.21153".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuntimeVersion(pub i32);

impl std::fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&device::format_hip_version(self.0))
    }
}

/// The first runtime whose headers define the timeline semaphore handle type.
const FIRST_TIMELINE_RUNTIME: RuntimeVersion = RuntimeVersion(ffi::FIRST_TIMELINE_RUNTIME);

impl RuntimeVersion {
    /// Whether this runtime knows `hipExternalSemaphoreHandleTypeTimelineSemaphoreFd` (HIP >= 6.4);
    /// an older one would reject (or misread) the value, so it is not asked.
    pub fn has_timeline_handle_type(self) -> bool {
        self >= FIRST_TIMELINE_RUNTIME
    }
}

/// The HIP runtime's version. Needs no GPU.
pub fn runtime_version() -> Result<RuntimeVersion> {
    Ok(RuntimeVersion(ffi::runtime_version()?))
}

/// `hipDriverGetVersion`.
pub fn driver_version() -> Result<i32> {
    ffi::driver_version()
}

/// The HIP devices. An environment error (one line) without an AMD GPU ROCm can use: measured on
/// Debian 12 (HIP 5.2.3, no /dev/kfd), `hipGetDeviceCount` returns `hipErrorNoDevice`, prints
/// nothing, and the error says why (no /dev/kfd, no access to it, or no supported GPU).
///
/// ```
/// match vkhip_interop::hip::devices() {
///     Ok(devices) => assert!(!devices.is_empty()),
///     Err(e) => assert!(e.is_environment() && !e.to_string().contains('\n'), "{e}"),
/// }
/// ```
pub fn devices() -> Result<Vec<DeviceInfo>> {
    device::enumerate()
}

/// The `hipStream_t` a stream number is, in DLPack's numbering: 0 and 1 (the legacy default
/// stream) HIP's null stream, 2 the per-thread default stream, any other number the handle.
fn stream_handle(stream: u64) -> ffi::RawStream {
    match stream {
        0 | 1 => std::ptr::null_mut(),
        2 => ffi::STREAM_PER_THREAD as ffi::RawStream,
        other => other as usize as ffi::RawStream,
    }
}

/// What every object of a device shares: the stream first (field order is drop order; its
/// `Drop` waits for it), then the device to make current before each call.
struct Shared {
    stream: Stream,
    info: DeviceInfo,
    runtime: RuntimeVersion,
}

// SAFETY: the stream is used only through the HIP runtime API, which is thread-safe (the runtime
// locks its own state; calls on one stream from several threads are serialised, in whatever order
// the callers make). Each call sets the device on its own thread first. No Rust-side mutable state.
unsafe impl Sync for Shared {}

impl Shared {
    /// Make the device current on this thread (HIP's current device is per thread).
    fn current(&self) -> Result<&Shared> {
        ffi::set_device(self.info.ordinal)?;
        Ok(self)
    }
}

impl Quiesce for Shared {
    fn quiesce(&self) {
        if let Err(e) = self.current().and_then(|s| s.stream.synchronize()) {
            log::warn!("hip: waiting for the stream before teardown failed: {e}");
        }
    }
}

/// One HIP device and its one non-blocking stream.
pub struct Hip {
    shared: Arc<Shared>,
}

impl Hip {
    /// Open the device whose UUID is `device_uuid` (Vulkan's `deviceUUID`; HIP devices are
    /// matched by PCI domain/bus/device, [`DeviceInfo::uuid`]) and create the stream. A UUID no
    /// HIP device has is [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported), naming the
    /// devices seen.
    pub fn open(device_uuid: [u8; 16]) -> Result<Self> {
        let mut devices = device::enumerate()?;
        let seen: Vec<_> = devices.iter().map(|d| (d.ordinal, d.name.as_str(), d.uuid)).collect();
        let index = crate::device_match::by_uuid(Api::Hip, device_uuid, &seen)?;
        let info = devices.swap_remove(index);
        ffi::set_device(info.ordinal)?;
        let runtime = runtime_version()?;
        let stream = Stream::new_non_blocking()?;
        Ok(Hip { shared: Arc::new(Shared { stream, info, runtime }) })
    }

    /// "AMD Radeon RX 6800 (HIP device 0, gfx1030, PCI 0000:03:00.0, HIP 6.4.43483)".
    pub fn describe(&self) -> String {
        let (d, runtime) = (&self.shared.info, self.shared.runtime);
        format!("{} (HIP device {}, {}, PCI {}, HIP {runtime})", d.name, d.ordinal, d.arch, d.pci_bus_id)
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// The runtime this device was opened with.
    pub fn runtime(&self) -> RuntimeVersion {
        self.shared.runtime
    }

    /// Import exported Vulkan memory and map its first `memory.size` bytes for kernels
    /// ([`HipBuffer::device_ptr`]). The fd is closed either way ([`HipBuffer::FD_OWNERSHIP`]).
    pub fn import_buffer(&self, memory: ExportedMemory) -> Result<HipBuffer> {
        self.shared.current()?;
        memory.check_sizes(Api::Hip)?;
        let imported = ExternalMemory::import(memory.fd, memory.allocation_size, memory.dedicated)?;
        let mapped = MappedBuffer::map(imported, memory.size)?;
        Ok(HipBuffer { mapped: Held::new(mapped, &self.shared), size: memory.size })
    }

    /// Import an exported Vulkan image: its allocation is imported whole (dedicated when Vulkan
    /// says so), mapped as a mipmapped array of one level of `width` × `height` texels of its
    /// format, and level 0 gets a surface object for kernels ([`HipImage::surface`]). The fd is
    /// closed either way. [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) on a runtime
    /// without `hipExternalMemoryGetMappedMipmappedArray` (HIP 5.x; see the module notes).
    pub fn import_image(&self, image: ExportedImage) -> Result<HipImage> {
        self.shared.current()?;
        let (memory, shape) = image.check(Api::Hip)?;
        let imported = ExternalMemory::import(memory.fd, memory.allocation_size, memory.dedicated)?;
        let surface = Surface::create(MappedArray::map(imported, shape.format, shape.width, shape.height)?)?;
        Ok(HipImage { surface: Held::new(surface, &self.shared), shape })
    }

    /// Import an exported Vulkan timeline semaphore. The fd is closed either way. Refused
    /// ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)) without a call on HIP < 6.4,
    /// which has no timeline handle type; fails on Linux (see the module notes).
    pub fn import_timeline(&self, fd: ImportFd) -> Result<HipSemaphore> {
        if !self.shared.runtime.has_timeline_handle_type() {
            return Err(Error::unsupported(
                Api::Hip,
                format!(
                    "HIP runtime {} has no timeline semaphore handle type (HIP 6.4 adds it)",
                    self.shared.runtime
                ),
            ));
        }
        self.import_semaphore(fd, ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD)
    }

    /// Import an exported Vulkan binary semaphore (each signal must be matched by one wait). The
    /// fd is closed either way. Fails on Linux (see the module notes).
    pub fn import_binary(&self, fd: ImportFd) -> Result<HipSemaphore> {
        self.import_semaphore(fd, ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD)
    }

    fn import_semaphore(&self, fd: ImportFd, handle_type: u32) -> Result<HipSemaphore> {
        self.shared.current()?;
        let semaphore = ExternalSemaphore::import(fd, handle_type).map_err(|e| {
            e.context("ROCm on Linux cannot import Vulkan semaphores (hipamd#48, clr#72); synchronise on the host instead")
        })?;
        Ok(HipSemaphore { semaphore: Held::new(semaphore, &self.shared) })
    }

    /// The hiprtc target for this device: its gcnArchName (e.g. "gfx90a:sramecc+:xnack-").
    /// Refused ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)) when the installed
    /// hiprtc cannot compile for it (a GPU newer than the ROCm).
    pub fn target(&self) -> Result<&str> {
        let d = &self.shared.info;
        compile::check_target_supported(&d.name, &d.arch, &self.shared.runtime.to_string())?;
        Ok(&d.arch)
    }

    /// Load a code object ([`compile_to_image`]: a whole AMDGPU ELF) on the device.
    pub fn load_module(&self, code: &[u8]) -> Result<HipModule> {
        self.shared.current()?;
        let module = Module::load(code)?;
        Ok(HipModule { inner: Arc::new(Held::new(module, &self.shared)) })
    }

    /// Compile `source` for this device ([`Hip::target`]) and load `entry`, an
    /// `extern "C" __global__` function.
    pub fn compile(&self, source: &str, entry: &str) -> Result<HipKernel> {
        let code = compile_to_image(source, &format!("{entry}.hip"), self.target()?, &[])?;
        self.load_module(&code)?.function(entry)
    }

    /// Enqueue `kernel` on the stream: `grid` blocks of `block` threads, no dynamic shared
    /// memory.
    ///
    /// # Safety
    /// `kernel` was loaded through this `Hip`; `args` holds one pointer per parameter of the
    /// kernel, in order, each to a live value of that parameter's type; device pointers and
    /// surfaces among them ([`HipBuffer::device_ptr`], [`HipImage::surface`]) belong to objects
    /// that stay alive until the stream is past the launch, and cover everything the kernel
    /// touches.
    pub unsafe fn launch(
        &self,
        kernel: &HipKernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let s = self.shared.current()?;
        // SAFETY: per this function's contract; the function belongs to a module `kernel` keeps
        // loaded, the stream is live (owned by `self`); the runtime copies the argument values.
        unsafe { ffi::launch_kernel(kernel.function, grid, block, s.stream.raw(), args) }
    }

    /// A new event; `timing` false makes it cheaper to record (no timestamps).
    pub fn event(&self, timing: bool) -> Result<HipEvent> {
        self.shared.current()?;
        let event = if timing { Event::new_timed()? } else { Event::new_sync_only()? };
        Ok(HipEvent { event, shared: self.shared.clone() })
    }

    /// Enqueue a record of `event` on the stream: it completes once everything enqueued before
    /// it has.
    pub fn record(&self, event: &HipEvent) -> Result<()> {
        event.event.record(&self.shared.current()?.stream)
    }

    /// Wait (on the host) until everything enqueued so far has finished: HIP's own wait, never a
    /// semaphore value. With no imported semaphores, this is the hand-off to Vulkan.
    pub fn synchronize(&self) -> Result<()> {
        self.shared.current()?.stream.synchronize()
    }

    /// Wait (on the host) until everything enqueued so far on `stream`, a stream the caller owns
    /// (a framework's current stream on ROCm: torch's `cuda_stream`, CuPy's `ptr`), has
    /// finished: the hand-off of the caller's work to Vulkan while no semaphore can be imported
    /// (see the module notes). `stream` 0 or 1 is the null stream, 2 the per-thread default
    /// stream (`hipStreamPerThread`), as in DLPack's `__dlpack__(stream=…)`.
    /// Work on the crate's own stream is [`Hip::synchronize`]'s.
    ///
    /// # Safety
    /// `stream` is one of the special values above or a live `hipStream_t` of this device (HIP
    /// 5.x has no call that tells a stream's device, so another device's is not refused).
    pub unsafe fn synchronize_stream(&self, stream: u64) -> Result<()> {
        self.shared.current()?;
        // SAFETY: per this function's contract.
        unsafe { ffi::stream_synchronize(stream_handle(stream)) }
    }
}

impl FrameStream for Hip {
    type Semaphore = HipSemaphore;

    fn wait(&self, semaphore: &HipSemaphore, value: u64) -> Result<()> {
        semaphore.semaphore.object.wait_async(value, &self.shared.current()?.stream)
    }

    fn signal(&self, semaphore: &HipSemaphore, value: u64) -> Result<()> {
        semaphore.semaphore.object.signal_async(value, &self.shared.current()?.stream)
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
    mapped: Held<MappedBuffer, Shared>,
    size: u64,
}

impl HipBuffer {
    /// What the import does with the fd: HIP borrows it, the crate closes it.
    pub const FD_OWNERSHIP: FdOwnership = MEMORY_FD_OWNERSHIP;

    /// The device address a kernel writes (`float*` etc. on the device).
    pub fn device_ptr(&self) -> u64 {
        self.mapped.object.ptr() as u64
    }

    /// Bytes mapped.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Enqueue, on the device's stream, a fill of the first `words` 32-bit words with `value`
    /// (`hipMemsetD32Async`). More words than the buffer holds is
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid).
    pub fn fill_u32(&self, value: u32, words: usize) -> Result<()> {
        self.mapped.object.memset_d32_async(value, words, &self.mapped.device.current()?.stream)
    }
}

/// An imported Vulkan image, mapped as a HIP array with a surface object; the surface object,
/// the array and the import are destroyed on drop, in that order (after the stream is idle).
pub struct HipImage {
    surface: Held<Surface, Shared>,
    shape: ImageShape,
}

impl HipImage {
    /// What the import does with the fd: HIP borrows it, the crate closes it.
    pub const FD_OWNERSHIP: FdOwnership = MEMORY_FD_OWNERSHIP;

    /// The surface object (a `hipSurfaceObject_t`) a kernel writes with
    /// `surf2Dwrite(value, surface, x * format.texel_bytes(), y)`.
    pub fn surface(&self) -> u64 {
        self.surface.object.raw()
    }

    /// The format and extent the image was imported with.
    pub fn shape(&self) -> ImageShape {
        self.shape
    }
}

/// An imported Vulkan semaphore (timeline or binary); destroyed on drop (after the stream is
/// idle). Waited on and signalled through [`FrameStream`].
pub struct HipSemaphore {
    semaphore: Held<ExternalSemaphore, Shared>,
}

impl HipSemaphore {
    /// What the import does with the fd: HIP borrows it, the crate closes it.
    pub const FD_OWNERSHIP: FdOwnership = SEMAPHORE_FD_OWNERSHIP;
}

/// A loaded module; unloaded once it and every [`HipKernel`] from it are dropped (after the
/// stream is idle).
pub struct HipModule {
    inner: Arc<Held<Module, Shared>>,
}

impl HipModule {
    /// The entry point `name` (an `extern "C" __global__` function).
    pub fn function(&self, name: &str) -> Result<HipKernel> {
        self.inner.device.current()?;
        let function = self.inner.object.function(name)?;
        Ok(HipKernel { function, _module: self.inner.clone() })
    }
}

/// One entry point of a loaded module, which it keeps loaded; launched with [`Hip::launch`].
pub struct HipKernel {
    function: *mut c_void,
    _module: Arc<Held<Module, Shared>>,
}

// SAFETY: a hipFunction_t is a handle into the module `_module` keeps loaded; the runtime may use
// it from any thread (with the device current, which `Hip::launch` makes it), and nothing about
// it is mutated on the Rust side.
unsafe impl Send for HipKernel {}
// SAFETY: as above.
unsafe impl Sync for HipKernel {}

/// An event on the device's stream ([`Hip::record`]): for host waits and GPU timing. Destroyed
/// while the stream still exists (it holds it; ROCm#4670).
pub struct HipEvent {
    event: Event,
    shared: Arc<Shared>,
}

impl HipEvent {
    /// Whether the work before the last record has finished (never blocks).
    pub fn query(&self) -> Result<bool> {
        self.shared.current()?;
        self.event.query()
    }

    /// Block the host until the work before the last record has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.shared.current()?;
        self.event.synchronize()
    }

    /// Milliseconds from `self` to `end` (both made with timing, recorded and complete).
    pub fn elapsed_ms(&self, end: &HipEvent) -> Result<f32> {
        self.shared.current()?;
        Event::elapsed_ms(&self.event, &end.event)
    }
}

impl Drop for HipEvent {
    fn drop(&mut self) {
        // Destroying an event with pending work is allowed; only the device must be current.
        if let Err(e) = self.shared.current() {
            log::warn!("hip: making the device current to destroy an event failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::witness::Witness;

    #[test]
    fn hip_imports_borrow_the_fd_either_way() {
        assert_eq!(HipBuffer::FD_OWNERSHIP, FdOwnership::Borrowed);
        assert_eq!(HipImage::FD_OWNERSHIP, FdOwnership::Borrowed);
        assert_eq!(HipSemaphore::FD_OWNERSHIP, FdOwnership::Borrowed);
        for ownership in [MEMORY_FD_OWNERSHIP, SEMAPHORE_FD_OWNERSHIP] {
            for ok in [true, false] {
                let (witness, end) = Witness::new();
                let fd = ImportFd::new(end);
                let raw = fd.raw();
                let seen = fd.import(ownership, |r| if ok { Ok(r) } else { Err(r) });
                assert_eq!(seen.unwrap_or_else(|r| r), raw);
                assert!(witness.closed(), "HIP borrows the fd: closed after the import (ok = {ok})");
            }
        }
    }

    #[test]
    fn timeline_import_is_offered_from_hip_6_4_on() {
        assert!(!RuntimeVersion(50_221_153).has_timeline_handle_type(), "Debian 12's HIP 5.2.3");
        assert!(!RuntimeVersion(60_342_134).has_timeline_handle_type(), "HIP 6.3");
        assert!(RuntimeVersion(60_443_484).has_timeline_handle_type(), "Debian sid's HIP 6.4.3");
        assert!(RuntimeVersion(70_000_000).has_timeline_handle_type(), "HIP 7.0");
        assert_eq!(RuntimeVersion(60_443_483).to_string(), "6.4.43483");
    }

    #[test]
    fn dlpack_stream_numbers_map_to_hip_streams() {
        assert!(stream_handle(0).is_null() && stream_handle(1).is_null(), "the null stream");
        assert_eq!(stream_handle(2) as usize, 2, "hipStreamPerThread");
        assert_eq!(stream_handle(0x5555_0000_1230) as usize, 0x5555_0000_1230, "a caller's handle");
    }

    #[test]
    fn runtime_version_is_readable_without_a_gpu() {
        assert!(runtime_version().expect("hipRuntimeGetVersion needs no device").0 >= 50_000_000);
    }

    #[test]
    fn everything_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Hip>();
        send_sync::<HipBuffer>();
        send_sync::<HipImage>();
        send_sync::<HipSemaphore>();
        send_sync::<HipModule>();
        send_sync::<HipKernel>();
        send_sync::<HipEvent>();
    }

    /// Without an AMD GPU every entry point is an environment error in one line; `Hip::open`
    /// is never reached past the device listing, so no import is attempted.
    #[test]
    fn without_a_gpu_everything_is_unavailable() {
        if std::path::Path::new("/dev/kfd").exists() {
            return; // needs the GPU-less case
        }
        for e in [devices().unwrap_err(), Hip::open([0; 16]).err().unwrap()] {
            assert_eq!((e.api(), e.call(), e.status()), (Api::Hip, "hipGetDeviceCount", Some(100)));
            assert!(e.is_environment() && !e.to_string().contains('\n'), "{e}");
            assert!(e.message().contains("no AMD GPU visible to ROCm (no /dev/kfd"), "{e}");
        }
    }
}
