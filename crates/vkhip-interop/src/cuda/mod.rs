//! The CUDA side, kernel-agnostic: open the device Vulkan runs on, import the buffers, images and
//! semaphores Vulkan exported, compile your kernel with NVRTC, and run wait → your launch →
//! signal on one stream.
//!
//! [`Cuda`] is one device: its primary context (what the CUDA runtime uses too) and **one**
//! non-blocking stream, on which everything the crate enqueues runs — waits, signals, launches,
//! fills, copies and event records. Every object it hands out keeps the device open, and every
//! imported object's `Drop` first makes the context current and waits for the stream, so nothing
//! is destroyed while a kernel may still use it, whatever order you drop things in.
//!
//! **A stream you own.** [`Cuda::with_stream`] gives a handle on the same device that enqueues
//! on your stream instead (torch's current stream, a CuPy stream, your engine's `CUstream`):
//! the protocol's wait and signal then sit between your own kernels on your stream, and nothing
//! waits on the host. Objects stay the device's; the crate never synchronises or destroys your
//! stream, except that teardown of imported objects then waits for the whole context.
//!
//! The driver and NVRTC are loaded at run time (`libcuda.so.1`, `libnvrtc.so`); without them
//! every call returns an [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) error (one
//! line, [`Error::is_environment`]), never a panic. Statuses stay integers
//! ([`Error::status`]).
//!
//! ```no_run
//! # fn main() -> Result<(), vkhip_interop::Error> {
//! use vkhip_interop::cuda::{devices, Cuda};
//! let first = devices()?.remove(0); // an environment error without a driver or a GPU
//! let cuda = Cuda::open(first.uuid)?;
//! let kernel = cuda.compile("extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }", "k")?;
//! # let _ = kernel; Ok(()) }
//! ```
//!
//! **Images.** [`Cuda::import_image`] maps an exported image as a CUDA array with a surface
//! object ([`CudaImage::surface`], a `cudaSurfaceObject_t`). A kernel writes texel (x, y) with
//! `surf2Dwrite(value, surface, x * texel_bytes, y)` — the x coordinate is in bytes — where
//! `value` is a `float` (R32_SFLOAT), `uchar4` (R8G8B8A8_UNORM: raw bytes, 255 = 1.0),
//! `ushort4` holding the bits of four halves (R16G16B16A16_SFLOAT) or `float4`
//! (R32G32B32A32_SFLOAT).

mod nvrtc;
mod raii;
mod sys;

pub use nvrtc::Target;

use crate::device_match::{self, ComputeDevice, DeviceRequest};
use crate::error::{Api, Error, Result};
use crate::held::{Held, Quiesce};
use crate::{ExportedImage, ExportedMemory, FrameStream, ImageShape, ImportFd};
use cudarc::driver::sys as cu;
use raii::{
    DeviceBuffer, Event, ExternalMemory, ExternalSemaphore, MappedArray, MappedBuffer, Module,
    PinnedHostBuffer, PrimaryContext, Stream, StreamRef, Surface,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use sys::{Driver, Nvrtc};

/// A CUDA device as the driver reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The driver's ordinal (`cuDeviceGet`).
    pub ordinal: i32,
    pub name: String,
    /// `cuDeviceGetUuid_v2`: compare with Vulkan's `VkPhysicalDeviceIDProperties::deviceUUID`.
    pub uuid: [u8; 16],
    /// (major, minor): (9, 0) for an H100.
    pub compute_capability: (u32, u32),
    /// Bytes of device memory (`cuDeviceTotalMem`).
    pub total_memory: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_multiprocessor: u32,
    /// One line for listings: architecture, SMs, memory, driver version.
    pub detail: String,
}

impl DeviceInfo {
    /// The compute capability as NVRTC's architecture number: major·10 + minor (90 = `sm_90`).
    pub fn arch(&self) -> u32 {
        self.compute_capability.0 * 10 + self.compute_capability.1
    }
}

/// The version `cuDriverGetVersion` reports (13000 for CUDA 13.0); displays as "13.0".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriverVersion(pub i32);

impl std::fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0 / 1000, (self.0 % 1000) / 10)
    }
}

/// Whether `libcuda.so.1` can be loaded at all (it may still have no usable device).
pub fn driver_present() -> bool {
    sys::driver_library_present()
}

/// The CUDA version of the installed driver.
pub fn driver_version() -> Result<DriverVersion> {
    Ok(DriverVersion(Driver::get()?.driver_version()?))
}

/// NVRTC's (major, minor) version; loads libnvrtc on first use.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    Nvrtc::get()?.version()
}

/// The CUDA devices. An environment error (one line) when libcuda is missing or too old,
/// `cuInit` fails, or there are no devices.
///
/// ```
/// // A GPU machine lists its devices; anywhere else the answer is one line saying why not.
/// match vkhip_interop::cuda::devices() {
///     Ok(devices) => assert!(!devices.is_empty()),
///     Err(e) => assert!(e.is_environment() && !e.to_string().contains('\n'), "{e}"),
/// }
/// ```
pub fn devices() -> Result<Vec<DeviceInfo>> {
    let devices: Vec<DeviceInfo> = enumerate(Driver::get()?)?.into_iter().map(|(_, info)| info).collect();
    if devices.is_empty() {
        return Err(Error::unavailable(
            Api::Cuda,
            "cuDeviceGetCount",
            "the NVIDIA driver reports no CUDA devices",
        ));
    }
    Ok(devices)
}

/// Every device: its handle and what the driver says about it.
fn enumerate(driver: &Driver) -> Result<Vec<(cu::CUdevice, DeviceInfo)>> {
    use cu::CUdevice_attribute as A;
    let version = DriverVersion(driver.driver_version()?);
    (0..driver.device_count()?)
        .map(|ordinal| {
            let handle = driver.device_get(ordinal)?;
            let attr = |a| driver.device_attribute(handle, a).map(|v| v.max(0) as u32);
            let compute_capability = (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            );
            let multiprocessors = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
            let total_memory = driver.device_total_mem(handle)? as u64;
            let mut info = DeviceInfo {
                ordinal,
                name: driver.device_name(handle)?,
                uuid: driver.device_uuid(handle)?,
                compute_capability,
                total_memory,
                multiprocessors,
                max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                max_threads_per_multiprocessor: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
                detail: String::new(),
            };
            info.detail = format!(
                "sm_{}, {multiprocessors} SMs, {:.1} GiB, driver CUDA {version}, UUID from cuDeviceGetUuid_v2",
                info.arch(),
                total_memory as f64 / (1u64 << 30) as f64
            );
            Ok((handle, info))
        })
        .collect()
}

/// The CUDA device `want` names (an ordinal as this process numbers them, after
/// `CUDA_VISIBLE_DEVICES`, or a UUID). A device the process does not see is
/// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) naming what was asked and what
/// exists; a negative ordinal is [`ErrorKind::Invalid`](crate::ErrorKind::Invalid).
pub fn device(want: DeviceRequest) -> Result<DeviceInfo> {
    if matches!(want, DeviceRequest::Ordinal(n) if n < 0) {
        return Err(device_match::compute_position("CUDA", want, &[]).unwrap_err().into_error(Api::Cuda));
    }
    let mut seen = match devices() {
        Ok(seen) => seen,
        // No driver, no device: say which device was asked for, then why there is none.
        Err(e) => return Err(e.context(format!("CUDA device {want}"))),
    };
    let listed: Vec<ComputeDevice> =
        seen.iter().map(|d| ComputeDevice::new(d.ordinal, &d.name, d.uuid)).collect();
    let i = device_match::compute_position("CUDA", want, &listed).map_err(|e| e.into_error(Api::Cuda))?;
    Ok(seen.swap_remove(i))
}

/// The ordinal of the device whose context is current on the calling thread (what
/// `torch.cuda.set_device(n)`, `cupy.cuda.Device(n).use()` or `cudaSetDevice(n)` made current),
/// or `None` when no context is current (or there is no driver).
pub fn current_device() -> Result<Option<i32>> {
    let Ok(driver) = Driver::get() else {
        return Ok(None);
    };
    let ctx = driver.ctx_get_current()?;
    if ctx.is_null() {
        return Ok(None);
    }
    // SAFETY: the thread's current context is live.
    let handle = unsafe { driver.ctx_device(ctx) }?;
    Ok(enumerate(driver)?.into_iter().find(|(h, _)| *h == handle).map(|(_, info)| info.ordinal))
}

/// The Vulkan device of the CUDA device `want` names (`None`: [`default_device`]), opened for
/// CUDA to import from ([`vulkan::Device::open_matching`](crate::vulkan::Device::open_matching)):
/// the GPU of the CUDA ordinal, whatever Vulkan's order. [`Cuda::open`] with its
/// [`uuid`](crate::vulkan::Device::uuid) then opens the CUDA side.
pub fn open_vulkan(want: Option<DeviceRequest>) -> Result<crate::vulkan::Device> {
    let want = match want {
        Some(w) => w,
        None => default_device()?,
    };
    let info = device(want)?;
    let compute = ComputeDevice::new(info.ordinal, &info.name, info.uuid);
    crate::vulkan::Device::open_matching(&compute, crate::vulkan::Importer::Cuda)
}

/// The device a program means when it names none: the device of the context current on the
/// calling thread (the framework's: `torch.cuda.set_device`, `cupy.cuda.Device(n).use()`), else
/// ordinal 0.
pub fn default_device() -> Result<DeviceRequest> {
    Ok(DeviceRequest::Ordinal(current_device()?.unwrap_or(0)))
}

/// The index in `seen` of the device whose UUID is `want`, or an error naming the devices seen.
fn choose_device(want: [u8; 16], seen: &[DeviceInfo]) -> Result<usize> {
    let seen: Vec<_> = seen.iter().map(|d| (d.ordinal, d.name.as_str(), d.uuid)).collect();
    crate::device_match::by_uuid(Api::Cuda, want, &seen)
}

/// Compile `source` (called `name` in NVRTC's messages) for `target` with NVRTC: the cubin, or
/// the NUL-terminated PTX, ready for [`Cuda::load_module`]. `options` come after the
/// `--gpu-architecture` that `target` selects (for example `--fmad=false`). Needs no GPU.
pub fn compile_to_image(source: &str, name: &str, target: Target, options: &[&str]) -> Result<Vec<u8>> {
    let nvrtc = Nvrtc::get()?;
    let options: Vec<String> =
        std::iter::once(target.arch_option()).chain(options.iter().map(|o| o.to_string())).collect();
    nvrtc::compile_with(nvrtc, source, name, &options, target)
}

/// What NVRTC should produce for `device` ([`Cuda::target`] explains the choice), without
/// opening a context on it: also for kernels that run in a Vulkan queue
/// ([`crate::cuda_in_vulkan`]).
pub fn target_for(device: &DeviceInfo) -> Result<Target> {
    let nvrtc = Nvrtc::get()?;
    let target = nvrtc::choose_target(device.arch(), &nvrtc.supported_archs()?)?;
    nvrtc::check_compiler_vs_driver(nvrtc.version()?, Driver::get()?.driver_version()?, target)?;
    Ok(target)
}

/// `cuda.h`'s special stream handles (macros there, so not in the bindings).
const CU_STREAM_LEGACY: usize = 0x1;
const CU_STREAM_PER_THREAD: usize = 0x2;

/// The `CUstream` a stream number names, as DLPack and the frameworks number them: 0 and 1 the
/// legacy default stream, 2 the per-thread default stream, anything else the handle itself.
fn stream_handle(stream: u64) -> usize {
    match stream {
        0 | 1 => CU_STREAM_LEGACY,
        2 => CU_STREAM_PER_THREAD,
        other => other as usize,
    }
}

/// What every object of a device shares: the stream first, then the context (field order is
/// drop order).
struct Shared {
    stream: Stream,
    ctx: PrimaryContext,
    driver: &'static Driver,
    info: DeviceInfo,
    /// Set once a caller's stream was lent ([`Cuda::with_stream`]): from then on teardown waits
    /// for the whole context, since waits and signals on imported objects may be pending there.
    lent_streams: AtomicBool,
}

// SAFETY: every use of the stream and the context goes through the CUDA driver API, which is
// thread-safe: calls from several threads on one stream are serialised by the driver (their
// order between threads is whatever the callers make it). `Shared` holds no Rust-side mutable
// state.
unsafe impl Sync for Shared {}

impl Quiesce for Shared {
    fn quiesce(&self) {
        let waited = if self.lent_streams.load(Ordering::Acquire) {
            self.ctx.synchronize()
        } else {
            self.ctx.make_current().and_then(|()| self.stream.synchronize())
        };
        if let Err(e) = waited {
            log::warn!("cuda: waiting for the stream before teardown failed: {e}");
        }
    }
}

/// One CUDA device: its primary context and the stream everything is enqueued on — the crate's
/// own non-blocking stream ([`Cuda::open`]), or one the caller owns ([`Cuda::with_stream`]).
pub struct Cuda {
    shared: Arc<Shared>,
    /// The caller's stream, where this handle enqueues instead of the crate's.
    lent: Option<StreamRef>,
}

impl Cuda {
    /// Open the device whose UUID is `device_uuid` (Vulkan's `deviceUUID`): retain its primary
    /// context and create the stream. A UUID no CUDA device has is
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported), naming the devices seen.
    pub fn open(device_uuid: [u8; 16]) -> Result<Self> {
        let driver = Driver::get()?;
        let mut devices = enumerate(driver)?;
        let infos: Vec<DeviceInfo> = devices.iter().map(|(_, info)| info.clone()).collect();
        let (handle, info) = devices.swap_remove(choose_device(device_uuid, &infos)?);
        let ctx = PrimaryContext::retain(driver, handle)?;
        ctx.make_current()?;
        let stream = Stream::new_non_blocking(driver)?;
        let lent_streams = AtomicBool::new(false);
        Ok(Cuda { shared: Arc::new(Shared { stream, ctx, driver, info, lent_streams }), lent: None })
    }

    /// The CUDA device `want` names ([`device`]) and the Vulkan device of the same GPU
    /// ([`vulkan::Device::open_matching`](crate::vulkan::Device::open_matching)), whatever
    /// order each API lists them in: the one way the Python and C doors open a device. `None`
    /// is [`default_device`]: the device of the calling thread's current context, else 0.
    pub fn open_with_vulkan(want: Option<DeviceRequest>) -> Result<(crate::vulkan::Device, Cuda)> {
        let vk = open_vulkan(want)?;
        let cuda = Cuda::open(vk.uuid())?;
        Ok((vk, cuda))
    }

    /// The same device, enqueueing on a stream the caller owns: torch's current stream
    /// (`torch.cuda.current_stream().cuda_stream`), a CuPy stream's `ptr`, an engine's
    /// `CUstream`. Waits, signals, launches, event records and copies made through the returned
    /// handle go on `stream`, in the caller's order with the caller's own work there; objects
    /// imported through it are the device's, as through `self`. Dropping it neither
    /// synchronises nor destroys `stream`. `stream` 0 or 1 is the legacy default stream
    /// (`CU_STREAM_LEGACY`), 2 the per-thread default stream (`CU_STREAM_PER_THREAD`), as in
    /// DLPack's `__dlpack__(stream=…)`.
    ///
    /// A stream of another context (another device, or a context that is not the device's
    /// primary one) is [`ErrorKind::Invalid`](crate::ErrorKind::Invalid). Once a stream has been
    /// lent, dropping an imported object waits for the whole context (`cuCtxSynchronize`), not
    /// only the crate's stream: a wait or signal may be pending on the caller's.
    ///
    /// # Safety
    /// `stream` is one of the special values above or a live `CUstream`, and stays alive while
    /// the returned handle is used and until the work enqueued through it has completed.
    pub unsafe fn with_stream(&self, stream: u64) -> Result<Cuda> {
        let s = self.current()?;
        let raw = stream_handle(stream) as cu::CUstream;
        // SAFETY: per this function's contract.
        let ctx = unsafe { s.driver.stream_context(raw) }?;
        if ctx != s.ctx.raw() {
            // Name the stream's device: another GPU, or this one through another context.
            // SAFETY: the context of a live stream is live.
            let theirs = unsafe { s.driver.ctx_device(ctx) }
                .ok()
                .and_then(|h| enumerate(s.driver).ok()?.into_iter().find(|(d, _)| *d == h))
                .map(|(_, info)| info);
            let whose = match theirs {
                Some(d) if d.ordinal == s.info.ordinal => {
                    format!("a context of {} that is not its primary one", self.describe())
                }
                Some(d) => format!(
                    "CUDA device {} ({}, UUID {})",
                    d.ordinal,
                    d.name,
                    device_match::uuid_string(&d.uuid)
                ),
                None => "another CUDA context".to_string(),
            };
            return Err(Error::invalid(
                Api::Cuda,
                format!(
                    "stream {stream:#x} belongs to {whose}, but this handle is {} (UUID {}): enqueue on a stream of CUDA device {} (torch.cuda.current_stream({}))",
                    self.describe(),
                    device_match::uuid_string(&s.info.uuid),
                    s.info.ordinal,
                    s.info.ordinal
                ),
            ));
        }
        s.lent_streams.store(true, Ordering::Release);
        // SAFETY: per this function's contract.
        let lent = unsafe { StreamRef::borrowed(raw) };
        Ok(Cuda { shared: self.shared.clone(), lent: Some(lent) })
    }

    /// The stream this handle enqueues on, as the integer CUDA's runtime and the frameworks use
    /// (`CU_STREAM_LEGACY` is 1).
    pub fn stream(&self) -> u64 {
        self.stream_ref().raw() as usize as u64
    }

    fn stream_ref(&self) -> StreamRef {
        self.lent.unwrap_or_else(|| self.shared.stream.handle())
    }

    /// "NVIDIA H100 80GB HBM3 (CUDA device 0, sm_90)".
    pub fn describe(&self) -> String {
        let d = &self.shared.info;
        format!("{} (CUDA device {}, sm_{})", d.name, d.ordinal, d.arch())
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// Make the context current on this thread (every call of this module does it first).
    fn current(&self) -> Result<&Shared> {
        self.shared.ctx.make_current()?;
        Ok(&self.shared)
    }

    /// (free, total) bytes of device memory (`cuMemGetInfo`).
    pub fn memory(&self) -> Result<(u64, u64)> {
        self.current()?.driver.mem_get_info()
    }

    /// Import exported Vulkan memory and map its first `memory.size` bytes for kernels
    /// ([`CudaBuffer::device_ptr`], 16-byte aligned). The fd is consumed either way.
    pub fn import_buffer(&self, memory: ExportedMemory) -> Result<CudaBuffer> {
        let s = self.current()?;
        memory.check_sizes(Api::Cuda)?;
        let imported = ExternalMemory::import(s.driver, memory.fd, memory.allocation_size, memory.dedicated)?;
        let mapped = MappedBuffer::map(imported, memory.size)?;
        Ok(CudaBuffer { mapped: Held::new(mapped, &self.shared), size: memory.size })
    }

    /// Import an exported Vulkan image: its allocation is imported whole (dedicated when Vulkan
    /// says so), mapped as a mipmapped array of one level of `width` × `height` texels of its
    /// format, and level 0 gets a surface object for kernels ([`CudaImage::surface`]). The fd is
    /// consumed either way.
    pub fn import_image(&self, image: ExportedImage) -> Result<CudaImage> {
        let s = self.current()?;
        let (memory, shape) = image.check(Api::Cuda)?;
        let imported = ExternalMemory::import(s.driver, memory.fd, memory.allocation_size, memory.dedicated)?;
        let surface = Surface::create(MappedArray::map(imported, shape)?)?;
        Ok(CudaImage { surface: Held::new(surface, &self.shared), shape })
    }

    /// Import an exported Vulkan timeline semaphore. The fd is consumed either way.
    pub fn import_timeline(&self, fd: ImportFd) -> Result<CudaSemaphore> {
        self.import_semaphore(fd, true)
    }

    /// Import an exported Vulkan binary semaphore (each signal must be matched by one wait).
    /// The fd is consumed either way.
    pub fn import_binary(&self, fd: ImportFd) -> Result<CudaSemaphore> {
        self.import_semaphore(fd, false)
    }

    fn import_semaphore(&self, fd: ImportFd, timeline: bool) -> Result<CudaSemaphore> {
        let s = self.current()?;
        let semaphore = ExternalSemaphore::import(s.driver, fd, timeline)?;
        Ok(CudaSemaphore { semaphore: Held::new(semaphore, &self.shared) })
    }

    /// What NVRTC should produce for this device: a cubin for its architecture, else (a GPU
    /// newer than the compiler) PTX for the newest architecture NVRTC knows, which the driver
    /// JIT-compiles. A cubin, not PTX, by default: the driver refuses PTX from an NVRTC newer
    /// than itself, while a cubin of the same major version loads on an older minor driver.
    /// Refused ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)) when the driver
    /// could not load the output of this NVRTC.
    pub fn target(&self) -> Result<Target> {
        target_for(&self.shared.info)
    }

    /// Load a compiled image ([`compile_to_image`]: a cubin or NUL-terminated PTX) into the
    /// device's context.
    pub fn load_module(&self, image: &[u8]) -> Result<CudaModule> {
        let s = self.current()?;
        let module = Module::load(s.driver, image)?;
        Ok(CudaModule { inner: Arc::new(Held::new(module, &self.shared)) })
    }

    /// Compile `source` for this device ([`Cuda::target`]) and load `entry`, an
    /// `extern "C" __global__` function.
    pub fn compile(&self, source: &str, entry: &str) -> Result<CudaKernel> {
        let image = compile_to_image(source, entry, self.target()?, &[])?;
        self.load_module(&image)?.function(entry)
    }

    /// Enqueue `kernel` on the stream: `grid` blocks of `block` threads, no dynamic shared
    /// memory.
    ///
    /// # Safety
    /// `kernel` was loaded through this `Cuda`; `args` holds one pointer per parameter of the
    /// kernel, in order, each to a live value of that parameter's type; device pointers and
    /// surfaces among them ([`CudaBuffer::device_ptr`], [`CudaImage::surface`]) belong to
    /// objects that stay alive until the stream is past the launch, and cover everything the
    /// kernel touches.
    pub unsafe fn launch(
        &self,
        kernel: &CudaKernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let s = self.current()?;
        // SAFETY: per this function's contract; the function belongs to a module that `kernel`
        // keeps loaded; the driver copies the argument values before returning.
        unsafe { s.driver.launch_kernel(kernel.function, grid, block, self.stream_ref().raw(), args) }
    }

    /// A new event; `timing` false makes it cheaper to record (no timestamps).
    pub fn event(&self, timing: bool) -> Result<CudaEvent> {
        let s = self.current()?;
        Ok(CudaEvent { event: Event::new(s.driver, timing)?, shared: self.shared.clone() })
    }

    /// Enqueue a record of `event` on the stream: it completes once everything enqueued before
    /// it has.
    pub fn record(&self, event: &CudaEvent) -> Result<()> {
        self.current()?;
        event.event.record(self.stream_ref())
    }

    /// Allocate `bytes` of device memory of CUDA's own (no interop), 16-byte aligned.
    pub fn alloc(&self, bytes: u64) -> Result<CudaMemory> {
        let s = self.current()?;
        Ok(CudaMemory { buffer: Held::new(DeviceBuffer::new(s.driver, bytes)?, &self.shared) })
    }

    /// Allocate `bytes` of page-locked host memory, the target of [`Cuda::copy_to_host`].
    pub fn alloc_host(&self, bytes: u64) -> Result<CudaHostMemory> {
        let s = self.current()?;
        Ok(CudaHostMemory { buffer: Held::new(PinnedHostBuffer::new(s.driver, bytes)?, &self.shared) })
    }

    /// Enqueue a copy of the first `bytes` of `src` into `dst` on the stream. The copy runs
    /// after everything enqueued before it; wait for it with an event or [`Cuda::synchronize`].
    ///
    /// # Safety
    /// `dst` is neither read ([`CudaHostMemory::bytes`]) nor dropped until the copy has
    /// completed.
    pub unsafe fn copy_to_host(&self, src: &CudaMemory, dst: &mut CudaHostMemory, bytes: u64) -> Result<()> {
        self.current()?;
        // SAFETY: per this function's contract.
        unsafe { src.buffer.object.copy_to_host_async(&mut dst.buffer.object, bytes, self.stream_ref()) }
    }

    /// Wait (on the host) until everything enqueued so far has finished: CUDA's own wait, never a
    /// semaphore value.
    pub fn synchronize(&self) -> Result<()> {
        let s = self.current()?;
        match self.lent {
            // SAFETY: the caller's stream is live (`with_stream`'s contract).
            Some(lent) => unsafe { s.driver.stream_synchronize(lent.raw()) },
            None => s.stream.synchronize(),
        }
    }
}

impl FrameStream for Cuda {
    type Semaphore = CudaSemaphore;

    fn wait(&self, semaphore: &CudaSemaphore, value: u64) -> Result<()> {
        self.current()?;
        semaphore.semaphore.object.wait(value, self.stream_ref())
    }

    fn signal(&self, semaphore: &CudaSemaphore, value: u64) -> Result<()> {
        self.current()?;
        semaphore.semaphore.object.signal(value, self.stream_ref())
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        // A handle on the caller's stream leaves it alone: the caller owns it.
        if self.lent.is_none() {
            self.shared.quiesce();
        }
    }
}

/// Imported Vulkan memory, mapped for kernels; unmapped and released on drop (after the stream
/// is idle).
pub struct CudaBuffer {
    mapped: Held<MappedBuffer, Shared>,
    size: u64,
}

impl CudaBuffer {
    /// The device address a kernel writes (`float*` etc. on the device), 16-byte aligned.
    pub fn device_ptr(&self) -> u64 {
        self.mapped.object.ptr()
    }

    /// Bytes mapped.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Enqueue, on the device's stream, a fill of the first `words` 32-bit words with `value`
    /// (`cuMemsetD32Async`). More words than the buffer holds is
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid).
    pub fn fill_u32(&self, value: u32, words: usize) -> Result<()> {
        let device = &self.mapped.device;
        device.ctx.make_current()?;
        self.mapped.object.memset_d32_async(value, words, device.stream.handle())
    }
}

/// An imported Vulkan image, mapped as a CUDA array with a surface object; the surface object,
/// the array and the import are destroyed on drop, in that order (after the stream is idle).
pub struct CudaImage {
    surface: Held<Surface, Shared>,
    shape: ImageShape,
}

impl CudaImage {
    /// The surface object (a `cudaSurfaceObject_t` / `CUsurfObject`) a kernel writes with
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
pub struct CudaSemaphore {
    semaphore: Held<ExternalSemaphore, Shared>,
}

/// A loaded module; unloaded once it and every [`CudaKernel`] from it are dropped (after the
/// stream is idle).
pub struct CudaModule {
    inner: Arc<Held<Module, Shared>>,
}

impl CudaModule {
    /// The entry point `name` (an `extern "C" __global__` function).
    pub fn function(&self, name: &str) -> Result<CudaKernel> {
        self.inner.device.ctx.make_current()?;
        let function = self.inner.object.function(name)?;
        Ok(CudaKernel { function, _module: self.inner.clone() })
    }
}

/// One entry point of a loaded module, which it keeps loaded; launched with [`Cuda::launch`].
pub struct CudaKernel {
    function: cu::CUfunction,
    _module: Arc<Held<Module, Shared>>,
}

// SAFETY: a CUfunction is a handle into the module `_module` keeps loaded; the driver API may use
// it from any thread (with the context current, which `Cuda::launch` makes it), and nothing about
// it is mutated on the Rust side.
unsafe impl Send for CudaKernel {}
// SAFETY: as above.
unsafe impl Sync for CudaKernel {}

/// An event on the device's stream ([`Cuda::record`]): for host waits and GPU timing.
pub struct CudaEvent {
    event: Event,
    shared: Arc<Shared>,
}

impl CudaEvent {
    /// Whether the work before the last record has finished (never blocks).
    pub fn query(&self) -> Result<bool> {
        self.shared.ctx.make_current()?;
        self.event.query()
    }

    /// Block the host until the work before the last record has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.shared.ctx.make_current()?;
        self.event.synchronize()
    }

    /// Milliseconds from `self` to `end` (both made with timing, recorded and complete;
    /// negative when `end` came first).
    pub fn elapsed_ms(&self, end: &CudaEvent) -> Result<f32> {
        self.shared.ctx.make_current()?;
        self.event.elapsed_ms(&end.event)
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // Destroying an event with pending work is allowed; only the context must be current.
        if let Err(e) = self.shared.ctx.make_current() {
            log::warn!("cuda: making the context current to destroy an event failed: {e}");
        }
    }
}

/// Device memory of CUDA's own ([`Cuda::alloc`]); freed on drop (after the stream is idle).
pub struct CudaMemory {
    buffer: Held<DeviceBuffer, Shared>,
}

impl CudaMemory {
    /// The device address, 16-byte aligned.
    pub fn device_ptr(&self) -> u64 {
        self.buffer.object.ptr()
    }

    /// Enqueue, on the device's stream, a fill of the first `words` 32-bit words with `value`
    /// (`cuMemsetD32Async`; fresh memory is not zeroed). More words than the memory holds is
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid).
    pub fn fill_u32(&self, value: u32, words: usize) -> Result<()> {
        let device = &self.buffer.device;
        device.ctx.make_current()?;
        self.buffer.object.memset_d32_async(value, words, device.stream.handle())
    }

    pub fn size(&self) -> u64 {
        self.buffer.object.size()
    }
}

/// Page-locked host memory ([`Cuda::alloc_host`]); freed on drop (after the stream is idle).
pub struct CudaHostMemory {
    buffer: Held<PinnedHostBuffer, Shared>,
}

impl CudaHostMemory {
    /// The contents: zero until a copy has written them; read only after the copies into the
    /// memory have completed (see [`Cuda::copy_to_host`]).
    pub fn bytes(&self) -> &[u8] {
        self.buffer.object.bytes()
    }

    pub fn size(&self) -> u64 {
        self.buffer.object.size()
    }

    /// The address kernels reach this memory at. CUDA maps every `cuMemAllocHost` allocation
    /// into the device's address space, and with unified addressing (every 64-bit Linux
    /// process) at the host pointer's own value, so this is the host address: a kernel's stores
    /// there land in this memory (read them once the kernel has completed).
    pub fn device_ptr(&self) -> u64 {
        self.buffer.object.bytes().as_ptr() as u64
    }

    /// The memory's host address, for a host that reads and writes it while kernels write it too
    /// (a ring of slots a kernel fills, the host reads and clears): access it only with volatile
    /// or atomic operations, within [`Self::size`] bytes, and order the host's and the device's
    /// accesses yourself.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.buffer.object.as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(ordinal: i32, name: &str, uuid: [u8; 16]) -> DeviceInfo {
        DeviceInfo {
            ordinal,
            name: name.into(),
            uuid,
            compute_capability: (9, 0),
            total_memory: 0,
            multiprocessors: 132,
            max_threads_per_block: 1024,
            max_threads_per_multiprocessor: 2048,
            detail: String::new(),
        }
    }

    #[test]
    fn stream_numbers_follow_dlpack() {
        // DLPack: None/1 the legacy default stream, 2 the per-thread one; torch's default
        // stream reports 0, which CUDA also reads as the legacy stream.
        assert_eq!(stream_handle(0), CU_STREAM_LEGACY);
        assert_eq!(stream_handle(1), CU_STREAM_LEGACY);
        assert_eq!(stream_handle(2), CU_STREAM_PER_THREAD);
        assert_eq!(stream_handle(0x5555_0000_1230), 0x5555_0000_1230);
    }

    #[test]
    fn device_is_chosen_by_uuid_or_named_in_the_error() {
        let a = device(0, "GPU A", [1; 16]);
        let mut b_uuid = [0u8; 16];
        b_uuid[15] = 0xab;
        let b = device(1, "GPU B", b_uuid);
        assert_eq!(choose_device(b_uuid, &[a.clone(), b.clone()]).unwrap(), 1);
        let err = choose_device([0xff; 16], &[a, b]).unwrap_err();
        let text = err.to_string();
        assert_eq!((err.api(), err.kind()), (Api::Cuda, crate::ErrorKind::Unsupported));
        assert!(err.is_environment());
        assert!(text.contains("ffffffff-ffff-ffff-ffff-ffffffffffff"), "{text}");
        assert!(text.contains("0 GPU A (UUID 01010101-0101-0101-0101-010101010101)"), "{text}");
        assert!(text.contains("1 GPU B (UUID 00000000-0000-0000-0000-0000000000ab)"), "{text}");
        let none = choose_device([0; 16], &[]).unwrap_err().to_string();
        assert!(none.contains("CUDA devices seen: none"), "{none}");
    }

    #[test]
    fn versions_and_architectures_read_as_nvidia_writes_them() {
        assert_eq!(DriverVersion(13000).to_string(), "13.0");
        assert_eq!(DriverVersion(12090).to_string(), "12.9");
        assert_eq!(DriverVersion(12040).to_string(), "12.4");
        let mut d = device(0, "x", [0; 16]);
        assert_eq!(d.arch(), 90);
        d.compute_capability = (12, 1);
        assert_eq!(d.arch(), 121);
    }

    #[test]
    fn everything_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Cuda>();
        send_sync::<CudaBuffer>();
        send_sync::<CudaImage>();
        send_sync::<CudaSemaphore>();
        send_sync::<CudaModule>();
        send_sync::<CudaKernel>();
        send_sync::<CudaEvent>();
        send_sync::<CudaMemory>();
        send_sync::<CudaHostMemory>();
    }

    /// Without a driver every entry point is an environment error, in one line, and the fds
    /// handed in are closed (no Cuda can be opened, so the imports are never reached; the
    /// device listing says why).
    #[test]
    fn without_a_driver_everything_is_unavailable() {
        if driver_present() {
            return; // Checked on the GPU machine by the examples.
        }
        for e in [devices().unwrap_err(), Cuda::open([0; 16]).err().unwrap(), driver_version().unwrap_err()] {
            assert_eq!((e.api(), e.kind()), (Api::Cuda, crate::ErrorKind::Unavailable), "{e}");
            assert!(e.is_environment());
            assert_eq!(e.to_string(), "cuda: libcuda.so not found: install the NVIDIA driver");
        }
    }
}
