//! The CUDA side of the interop, kernel-agnostic: open the device Vulkan runs on, import the
//! buffer and the timelines Vulkan exported, compile your kernel with NVRTC, and run
//! wait → your launch → signal on one stream.
//!
//! Every object keeps the device open (its primary context and stream, shared), and every
//! import's `Drop` first makes the context current and waits for the stream, so nothing is
//! destroyed while a kernel may still use it, whatever order you drop things in. The status codes
//! of the driver become `Result<_, ComputeError>` in vkhip's binding layer, which reads them as
//! plain integers (a code newer than the bindings is an error message, never undefined behaviour).
//!
//! ```no_run
//! # fn main() -> Result<(), vkhip::interop::ComputeError> {
//! use vkhip::interop::cuda::{devices, Cuda};
//! let first = devices()?.remove(0); // Unavailable (one line) without a driver or a GPU
//! let cuda = Cuda::open(first.uuid)?;
//! let kernel = cuda.compile("extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }", "k")?;
//! # let _ = kernel; Ok(()) }
//! ```

use super::FrameStream;
use crate::compute::cuda::nvrtc::{check_compiler_vs_driver, choose_target, compile_with};
use crate::compute::cuda::result::{Driver, Nvrtc};
use crate::compute::cuda::safe::{
    ExternalMemory, ExternalSemaphore, Kernel, MappedBuffer, PrimaryContext, Stream,
};
use crate::compute::cuda::{find_device, CudaDevice};
use crate::compute::fd::ImportFd;
use crate::compute::{ComputeDeviceInfo, ComputeError, InteropMemory};
use std::ffi::c_void;
use std::sync::Arc;

type Result<T> = std::result::Result<T, ComputeError>;

/// The CUDA devices (name, ordinal, UUID): match a Vulkan device's `deviceUUID` against them.
pub fn devices() -> Result<Vec<ComputeDeviceInfo>> {
    crate::compute::cuda::probe()
}

/// What every object shares: the stream first, then the context (field order is drop order).
struct Shared {
    stream: Stream,
    ctx: PrimaryContext,
    driver: &'static Driver,
    device: CudaDevice,
}

// SAFETY: every use of the stream and the context goes through the CUDA driver API, which is
// thread-safe: calls from several threads on one stream are serialised by the driver (their
// order between threads is whatever the callers make it). `Shared` holds no Rust-side mutable
// state.
unsafe impl Sync for Shared {}

impl Shared {
    /// Make the context current on this thread and wait for the stream: before any object that
    /// pending work may use is destroyed.
    fn quiesce(&self) {
        if let Err(e) = self.ctx.make_current().and_then(|()| self.stream.synchronize()) {
            log::warn!("cuda: waiting for the stream before teardown failed: {e}");
        }
    }
}

/// One CUDA device, its primary context and one non-blocking stream.
pub struct Cuda {
    shared: Arc<Shared>,
}

impl Cuda {
    /// Open the device whose UUID is `device_uuid` (Vulkan's `deviceUUID`): retain its primary
    /// context (what the CUDA runtime uses) and create a non-blocking stream.
    pub fn open(device_uuid: [u8; 16]) -> Result<Self> {
        let driver = Driver::get()?;
        Cuda::on_device(driver, find_device(driver, device_uuid)?)
    }

    /// [`Cuda::open`] for a device already found (the backend has looked it up).
    pub(crate) fn on_device(driver: &'static Driver, device: CudaDevice) -> Result<Self> {
        let ctx = PrimaryContext::retain(driver, device.handle)?;
        ctx.make_current()?;
        let stream = Stream::new_non_blocking(driver)?;
        Ok(Cuda { shared: Arc::new(Shared { stream, ctx, driver, device }) })
    }

    /// "NVIDIA H100 80GB HBM3 (device 0, sm_90)".
    pub fn describe(&self) -> String {
        let d = &self.shared.device;
        format!("{} (device {}, sm_{})", d.name, d.ordinal, d.arch)
    }

    /// Import exported Vulkan memory and map it for kernels. The fd is consumed either way.
    pub fn import_buffer(&self, memory: InteropMemory) -> Result<CudaBuffer> {
        let s = &self.shared;
        s.ctx.make_current()?;
        memory.check_sizes("cuda")?;
        let imported = ExternalMemory::import(s.driver, memory.fd, memory.allocation_size, memory.dedicated)?;
        let mapped = MappedBuffer::map(imported, memory.buffer_size)?;
        Ok(CudaBuffer { mapped, size: memory.buffer_size, shared: s.clone() })
    }

    /// Import an exported Vulkan timeline semaphore. The fd is consumed either way.
    pub fn import_timeline(&self, fd: ImportFd) -> Result<CudaTimeline> {
        self.import_semaphore(fd, true)
    }

    /// Import an exported Vulkan binary semaphore (each signal must be matched by one wait).
    pub fn import_binary(&self, fd: ImportFd) -> Result<CudaTimeline> {
        self.import_semaphore(fd, false)
    }

    fn import_semaphore(&self, fd: ImportFd, timeline: bool) -> Result<CudaTimeline> {
        self.shared.ctx.make_current()?;
        let semaphore = ExternalSemaphore::import(self.shared.driver, fd, timeline)?;
        Ok(CudaTimeline { semaphore, shared: self.shared.clone() })
    }

    /// Compile `source` with NVRTC for this device (a cubin for its architecture; PTX for the
    /// newest architecture NVRTC knows when it is older than the GPU) and load `entry`, an
    /// `extern "C" __global__` function.
    pub fn compile(&self, source: &str, entry: &str) -> Result<CudaKernel> {
        let s = &self.shared;
        s.ctx.make_current()?;
        let nvrtc = Nvrtc::get()?;
        let target = choose_target(s.device.arch, &nvrtc.supported_archs()?)?;
        check_compiler_vs_driver(nvrtc.version()?, s.driver.driver_version()?, target)?;
        let image = compile_with(nvrtc, source, entry, &[target.arch_option()], target)?;
        Ok(CudaKernel { kernel: Kernel::load(s.driver, &image, entry)?, shared: s.clone() })
    }

    /// Enqueue `kernel` on the stream: `grid` blocks of `block` threads.
    ///
    /// # Safety
    /// `args` holds one pointer per parameter of the kernel, in order, each to a live value of
    /// that parameter's type; device pointers among them ([`CudaBuffer::device_ptr`]) address
    /// memory large enough for everything the kernel touches.
    pub unsafe fn launch(
        &self,
        kernel: &CudaKernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        self.shared.ctx.make_current()?;
        // SAFETY: per this function's contract; the kernel belongs to this context.
        unsafe { kernel.kernel.launch_raw(&self.shared.stream, grid, block, args) }
    }

    /// Wait (on the host) until everything enqueued so far has finished: CUDA's own wait, never a
    /// semaphore value.
    pub fn synchronize(&self) -> Result<()> {
        self.shared.ctx.make_current()?;
        self.shared.stream.synchronize()
    }
}

impl FrameStream for Cuda {
    type Semaphore = CudaTimeline;

    fn wait(&self, semaphore: &CudaTimeline, value: u64) -> Result<()> {
        self.shared.ctx.make_current()?;
        semaphore.semaphore.wait(value, &self.shared.stream)
    }

    fn signal(&self, semaphore: &CudaTimeline, value: u64) -> Result<()> {
        self.shared.ctx.make_current()?;
        semaphore.semaphore.signal(value, &self.shared.stream)
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}

/// Imported Vulkan memory, mapped for kernels; unmapped and released on drop (after the stream
/// is idle).
pub struct CudaBuffer {
    mapped: MappedBuffer,
    size: u64,
    shared: Arc<Shared>,
}

impl CudaBuffer {
    /// The device address a kernel writes (`float*` etc. on the device).
    pub fn device_ptr(&self) -> u64 {
        self.mapped.range().ptr()
    }

    /// Bytes mapped.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl CudaBuffer {
    /// The mapped range, for vkhip's own kernels.
    pub(crate) fn range(&self) -> crate::compute::cuda::safe::DeviceRange<'_> {
        self.mapped.range()
    }

    /// Enqueue a fill of the first `words` 32-bit words with `value`.
    pub(crate) fn fill(&self, value: u32, words: usize, stream: &Stream) -> Result<()> {
        self.mapped.memset_d32_async(value, words, stream)
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}

/// An imported Vulkan semaphore (timeline or binary); destroyed on drop (after the stream is idle).
pub struct CudaTimeline {
    semaphore: ExternalSemaphore,
    shared: Arc<Shared>,
}

impl CudaTimeline {
    /// The imported semaphore, for waits and signals on another stream of the same context.
    pub(crate) fn raw(&self) -> &ExternalSemaphore {
        &self.semaphore
    }
}

impl Drop for CudaTimeline {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}

/// A compiled, loaded kernel; unloaded on drop (after the stream is idle).
pub struct CudaKernel {
    kernel: Kernel,
    shared: Arc<Shared>,
}

impl Drop for CudaKernel {
    fn drop(&mut self) {
        self.shared.quiesce();
    }
}
