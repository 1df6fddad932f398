//! CUDA backend (NVIDIA): the driver API and NVRTC, loaded at run time by our own loader, with
//! cudarc's `sys` types.
//!
//! # Design
//!
//! Layers, as in cudarc itself:
//! - [`result`]: one method per driver / NVRTC call; each status code becomes
//!   `Result<_, ComputeError>` there and nowhere else. The methods hang off [`result::Driver`] and
//!   [`result::Nvrtc`], which exist only after the library was found and every symbol the layer
//!   uses was resolved into a table of function pointers that return a plain integer status
//!   (cudarc's `CUresult` / `nvrtcResult` are Rust enums, which a newer driver's unknown code
//!   would make undefined behaviour; `tests/binding_status.rs` keeps them out). No GPU, no
//!   driver, an old driver: one-line [`ComputeError::Unavailable`].
//! - [`safe`]: one RAII type per CUDA object (context, stream, event, kernel module, imported
//!   memory and its mapping, imported semaphore); drops log instead of panicking.
//! - [`staged`]: [`CudaStagedBackend`], `--memory staged`: the same kernel into CUDA-owned memory,
//!   copied through page-locked host memory into host-mapped slots (the no-interop baseline).
//! - [`plan`]: the decisions that need no GPU (launch shape, argument order, semaphore choice,
//!   device match), unit-tested in CI; [`nvrtc`]: the compile step and its cache key.
//!
//! Context. The backend works in the device's primary context (what the CUDA runtime and HIP's
//! NVIDIA platform use), retained for its lifetime. Calls may come from the render thread or the
//! bridge thread, one at a time, so every entry point, and `Drop`, first makes that context
//! current on the calling thread.
//!
//! Frame sync ([`crate::sync`] decides which entry point runs when):
//! - `enqueue_gpu_synced`: wait (imported `rendered`) → kernel → signal (imported `computed`), all
//!   on one non-blocking stream, and return. The host never waits on anything CUDA signals (a
//!   host wait on a CUDA-signalled Vulkan timeline value costs ≈ 10 ms on the H100: DESIGN.md).
//! - `write_slot_and_wait`: kernel → record an event → wait for the event (CUDA's own object).
//!
//! Kernel. `kernels/sinewave.hip` compiled by NVRTC to a cubin for the device (see [`nvrtc`] for
//! why not PTX), cached by [`KernelCache`]. Each thread owns four columns and walks rows; enough
//! row walkers are launched to fill the GPU ([`plan::launch_config`]).
//!
//! Shape. [`CudaBackend`] is the skeleton HIP shares ([`crate::compute::imported`]):
//! [`Imported`] over `CudaApi` (the kernel: `sinewave`, or `sinewave_batch` for a batch, fill,
//! events, semaphore wait/signal), in an [`InteropBackend`] with `CudaContext` (the primary
//! context, made current before every call). Slot, grid and semaphore checks, the frame paths and
//! the benchmark are written there once, for both APIs.
//!
//! Teardown (DESIGN.md "Interop rules"), encoded by field order: `InteropBackend`'s `Drop`
//! makes the context current and synchronises the stream; then the profiler's and host-wait
//! events are released, the imported semaphores destroyed, the mapped pointers freed and the
//! imported memory destroyed, the module unloaded, the stream destroyed and the primary context
//! released. The caller frees the Vulkan
//! memory and semaphores after the backend is gone.

pub(crate) mod nvrtc;
pub(crate) mod plan;
mod prewarm;
pub(crate) mod result;
pub(crate) mod safe;
mod staged;

use crate::compute::imported::{
    self, Imported, InteropApi, InteropBackend, InteropDevice, SemaphorePair, Semaphores,
};
use crate::compute::kernel::{CacheOutcome, KernelCache, SinewaveLaunch, SINEWAVE_ENTRY};
use crate::compute::timing::StreamTimer;
use crate::compute::{
    BackendKind, ComputeDeviceInfo, ComputeError, InteropMemory, InteropSemaphorePair, InteropSemaphores,
};
use crate::interop::cuda::{Cuda, CudaBuffer, CudaTimeline};
use crate::sim::WaveParams;
use cudarc::driver::sys;
use plan::{DeviceLimits, SeenDevice};
use result::Driver;
use safe::{Event, Kernel, PrimaryContext, Stream};

pub use prewarm::{limit_hardware_queues, prewarm};
pub use staged::CudaStagedBackend;

type Result<T> = std::result::Result<T, ComputeError>;

/// A device as the driver reports it.
#[derive(Clone, Debug)]
pub(crate) struct CudaDevice {
    pub ordinal: i32,
    pub handle: sys::CUdevice,
    pub name: String,
    pub uuid: [u8; 16],
    /// Compute capability as major·10 + minor (90 for the H100).
    pub arch: u32,
    pub limits: DeviceLimits,
    pub total_mem: u64,
}

fn enumerate(driver: &Driver) -> Result<Vec<CudaDevice>> {
    use sys::CUdevice_attribute as A;
    let count = driver.device_count()?;
    (0..count)
        .map(|ordinal| {
            let handle = driver.device_get(ordinal)?;
            let attr = |a| driver.device_attribute(handle, a).map(|v| v.max(0) as u32);
            Ok(CudaDevice {
                ordinal,
                handle,
                name: driver.device_name(handle)?,
                uuid: driver.device_uuid(handle)?,
                arch: attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
                    + attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
                limits: DeviceLimits {
                    sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
                    max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                    max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
                },
                total_mem: driver.device_total_mem(handle)? as u64,
            })
        })
        .collect()
}

/// "13.0" for the 13000 that `cuDriverGetVersion` reports.
fn format_cuda_version(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// Devices the CUDA driver can see. [`ComputeError::Unavailable`] (one line) when libcuda is
/// missing or too old, `cuInit` fails, or there are no devices.
///
/// ```
/// // A GPU machine lists its devices; anywhere else the answer is one line saying why not
/// // (an environment gap, exit code 2 in the CLI), never a panic.
/// match vkhip::compute::cuda::probe() {
///     Ok(devices) => assert!(!devices.is_empty() && devices.iter().all(|d| d.api == "cuda")),
///     Err(e) => assert!(e.is_environment() && !e.to_string().contains('\n'), "{e}"),
/// }
/// ```
pub fn probe() -> Result<Vec<ComputeDeviceInfo>> {
    let driver = Driver::get()?;
    let version = format_cuda_version(driver.driver_version()?);
    let devices = enumerate(driver)?;
    if devices.is_empty() {
        return Err(ComputeError::Unavailable {
            backend: "cuda",
            reason: "the NVIDIA driver reports no CUDA devices".into(),
        });
    }
    Ok(devices
        .into_iter()
        .map(|d| ComputeDeviceInfo {
            api: "cuda",
            ordinal: d.ordinal,
            detail: format!(
                "sm_{}, {} SMs, {:.1} GiB, driver CUDA {version}, UUID from cuDeviceGetUuid_v2",
                d.arch,
                d.limits.sm_count,
                d.total_mem as f64 / (1u64 << 30) as f64
            ),
            name: d.name,
            uuid: d.uuid,
        })
        .collect())
}

/// A retained primary context on the device with `device_uuid`, kept across backend lifetimes
/// (`vkhip cycles`): without it the context would be destroyed whenever the last backend goes,
/// taking any leaked import with it and hiding the leak.
pub struct ContextHold {
    _ctx: PrimaryContext,
}

/// Retain the primary context of the CUDA device whose UUID is `device_uuid`.
pub fn hold_context(device_uuid: [u8; 16]) -> Result<ContextHold> {
    let driver = Driver::get()?;
    let device = find_device(driver, device_uuid)?;
    Ok(ContextHold { _ctx: PrimaryContext::retain(driver, device.handle)? })
}

/// The CUDA device whose UUID is `device_uuid` (Vulkan's deviceUUID), or `Unavailable` naming
/// the devices seen.
pub(crate) fn find_device(driver: &Driver, device_uuid: [u8; 16]) -> Result<CudaDevice> {
    let devices = enumerate(driver)?;
    let seen: Vec<SeenDevice> = devices
        .iter()
        .map(|d| SeenDevice { ordinal: d.ordinal, name: d.name.clone(), uuid: d.uuid })
        .collect();
    Ok(devices[plan::choose_device(device_uuid, &seen)?].clone())
}

/// Import a (computed, rendered) pair ([`SemaphorePair::import`]); a failure is an error.
fn import_pair(
    cuda: &Cuda,
    pair: InteropSemaphorePair,
    timeline: bool,
) -> Result<SemaphorePair<CudaTimeline>> {
    // An injected failure drops both fds unused, which closes them, as a real one does.
    crate::fault::inject_compute(
        crate::fault::Fault::CudaSemaphoreImport,
        "cuda",
        "cuImportExternalSemaphore",
    )?;
    SemaphorePair::import(pair, |fd| if timeline { cuda.import_timeline(fd) } else { cuda.import_binary(fd) })
}

/// What the shared skeleton ([`Imported`]) calls CUDA with: the loaded kernel and the device's
/// launch limits.
pub struct CudaApi {
    kernel: Kernel,
    limits: DeviceLimits,
    driver: &'static Driver,
}

impl InteropApi for CudaApi {
    const NAME: &'static str = "cuda";
    const FILL_NAME: &'static str = "cuMemsetD32Async";
    type Stream = Stream;
    type Event = Event;
    type Semaphore = CudaTimeline;
    type Buffer = CudaBuffer;

    fn buffer_size(buffer: &CudaBuffer) -> u64 {
        buffer.size()
    }

    fn wait(&self, semaphore: &CudaTimeline, value: u64, stream: &Stream) -> Result<()> {
        semaphore.raw().wait(value, stream)
    }

    fn signal(&self, semaphore: &CudaTimeline, value: u64, stream: &Stream) -> Result<()> {
        semaphore.raw().signal(value, stream)
    }

    /// One `sinewave` launch for one slot, one `sinewave_batch` launch for several.
    fn launch(&self, stream: &Stream, slots: &[(&CudaBuffer, WaveParams)]) -> Result<SinewaveLaunch> {
        if let [(buffer, params)] = slots {
            return self.kernel.launch(stream, buffer.range(), params, self.limits);
        }
        let ranges: Vec<_> = slots.iter().map(|(b, _)| b.range()).collect();
        let params: Vec<WaveParams> = slots.iter().map(|s| s.1).collect();
        self.kernel.launch_batch(stream, &ranges, &params, self.limits)
    }

    fn fill(&self, buffer: &CudaBuffer, words: usize, stream: &Stream) -> Result<()> {
        buffer.fill(0, words, stream)
    }

    fn timed_event(&self) -> Result<Event> {
        Event::new(self.driver, true)
    }

    fn elapsed_us(&self, start: &Event, end: &Event) -> Result<f64> {
        start.elapsed_us(end)
    }

    fn synchronize(&self, stream: &Stream) -> Result<()> {
        stream.synchronize()
    }
}

/// The CUDA backend: imported slots and semaphores, the kernel and one stream (the shared
/// skeleton, [`Imported`]), in the device's primary context ([`CudaContext`], dropped last).
pub type CudaBackend = InteropBackend<CudaContext>;

/// The device a [`CudaBackend`] runs on, and its retained primary context (which outlives the
/// skeleton's objects: it is the backend's last field).
pub struct CudaContext {
    ctx: PrimaryContext,
    device: CudaDevice,
    driver: &'static Driver,
}

impl InteropDevice for CudaContext {
    type Api = CudaApi;
    const KIND: BackendKind = BackendKind::Cuda;
    /// One `sinewave_batch` launch per batch.
    const BATCHES: bool = true;

    fn make_current(&self) -> Result<()> {
        self.ctx.make_current()
    }

    fn name(&self) -> String {
        format!("{} (CUDA device {}, sm_{})", self.device.name, self.device.ordinal, self.device.arch)
    }

    fn memory(&self) -> Option<Result<(u64, u64)>> {
        Some(self.ctx.make_current().and_then(|()| self.driver.mem_get_info()))
    }
}

impl CudaBackend {
    /// Import the slots and semaphores Vulkan exported, on the CUDA device whose UUID is
    /// `device_uuid`, and build the kernel. Every fd is consumed: owned by CUDA after a
    /// successful import, closed otherwise.
    pub fn new(
        device_uuid: [u8; 16],
        memory: Vec<InteropMemory>,
        semaphores: InteropSemaphores,
    ) -> Result<Self> {
        let driver = Driver::get()?;
        let driver_version = driver.driver_version()?;
        let device = find_device(driver, device_uuid)?;
        let InteropSemaphores { timeline, binary } = semaphores;
        imported::check_pairs_per_slot("cuda", binary.len(), memory.len())?;

        // Declaration order here is the reverse of teardown on an early return (`setup` drops
        // last: the module, then the context, which stays current on this thread throughout).
        let setup = setup_device(driver, &device, driver_version)?;
        let stream = Stream::new_non_blocking(driver)?;
        let done = Event::new(driver, false)?;
        let timer = StreamTimer::new("cuda", Stream::new_non_blocking(driver)?, || Event::new(driver, true))?;
        // The imports go through the public interop API (`vkhip::interop::cuda`), as a user's
        // would; each import keeps the context alive and waits for CUDA's work before it goes.
        let cuda = Cuda::on_device(driver, device.clone())?;
        let slots = memory
            .into_iter()
            .enumerate()
            .map(|(i, m)| import_slot(&cuda, i, m))
            .collect::<Result<Vec<_>>>()?;
        let timeline = timeline.map(|pair| import_pair(&cuda, pair, true)).transpose()?;
        let binary =
            binary.into_iter().map(|pair| import_pair(&cuda, pair, false)).collect::<Result<Vec<_>>>()?;
        log::info!(
            "cuda: {} (device {}, sm_{}, driver CUDA {}): {} slot(s) imported, timeline \
             semaphores: {}, binary pairs: {}",
            device.name,
            device.ordinal,
            device.arch,
            format_cuda_version(driver_version),
            slots.len(),
            if timeline.is_some() { "yes" } else { "no" },
            binary.len()
        );
        let DeviceSetup { kernel, ctx } = setup;
        let api = CudaApi { kernel, limits: device.limits, driver };
        let core = Imported::new(api, stream, done, timer, slots, Semaphores { timeline, binary });
        Ok(InteropBackend::from_parts(core, CudaContext { ctx, device, driver }))
    }

    /// (free, total) device memory in bytes (`cuMemGetInfo`), for the leak check. Through
    /// `dyn ComputeBackend` the same figure comes as `Some(..)` from the trait's `device_memory`.
    pub fn device_memory(&self) -> Result<(u64, u64)> {
        let context = self.device();
        context.ctx.make_current()?;
        context.driver.mem_get_info()
    }
}

/// A device's retained primary context and its kernel (fields in teardown order: the module is
/// unloaded before the context is released).
struct DeviceSetup {
    kernel: Kernel,
    ctx: PrimaryContext,
}

/// The context (retained, and current on this thread) and kernel for `device`: prewarm's when
/// [`prewarm()`] got them, else made now. `VKHIP_FAULT=cuda-compile` counts once per call either way.
fn setup_device(driver: &'static Driver, device: &CudaDevice, driver_version: i32) -> Result<DeviceSetup> {
    if let Some(setup) = prewarm::take(device.uuid) {
        match setup.ctx.make_current() {
            Ok(()) => {
                compile_fault()?;
                log::debug!("cuda: using the prewarmed context and kernel for {}", device.name);
                return Ok(setup);
            }
            Err(e) => log::debug!("cuda: the prewarmed context is unusable ({e}); setting up afresh"),
        }
    }
    let ctx = PrimaryContext::retain(driver, device.handle)?;
    ctx.make_current()?;
    compile_fault()?;
    let kernel = build_kernel(driver, device, driver_version)?;
    Ok(DeviceSetup { kernel, ctx })
}

/// `VKHIP_FAULT=cuda-compile`: fail as a rejected kernel would.
fn compile_fault() -> Result<()> {
    if crate::fault::hit(crate::fault::Fault::CudaCompile) {
        return Err(ComputeError::Compile {
            api: "nvrtc",
            log: "NVRTC_ERROR_COMPILATION (injected by VKHIP_FAULT=cuda-compile)".into(),
        });
    }
    Ok(())
}

/// The `sinewave` kernel for `device`, from the cache (recompiled once if the cached image does
/// not load) or compiled now; loaded into the current context.
fn build_kernel(driver: &'static Driver, device: &CudaDevice, driver_version: i32) -> Result<Kernel> {
    let cache = KernelCache::from_env();
    let build = |fresh| nvrtc::sinewave_image(&cache, &device.name, device.arch, driver_version, fresh);
    let built = build(false)?;
    log::info!("cuda: kernel {:?} by {} ({:?})", built.target, built.compiler, built.outcome);
    match Kernel::load(driver, &built.image, SINEWAVE_ENTRY).map(Kernel::with_batch_entry) {
        Ok(kernel) => Ok(kernel),
        Err(e) if built.outcome == CacheOutcome::Hit => {
            log::warn!("cuda: the cached kernel did not load ({e}); compiling it afresh");
            Kernel::load(driver, &build(true)?.image, SINEWAVE_ENTRY).map(Kernel::with_batch_entry)
        }
        Err(e) => Err(e),
    }
}

fn import_slot(cuda: &Cuda, index: usize, m: InteropMemory) -> Result<CudaBuffer> {
    imported::check_slot_memory("cuda", index, &m)?;
    crate::fault::inject_compute(crate::fault::Fault::CudaMemoryImport, "cuda", "cuImportExternalMemory")?;
    cuda.import_buffer(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_can_move_to_the_bridge_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<CudaBackend>();
    }

    #[test]
    fn driver_versions_read_as_cuda_releases() {
        assert_eq!(format_cuda_version(13000), "13.0");
        assert_eq!(format_cuda_version(12090), "12.9");
        assert_eq!(format_cuda_version(12040), "12.4");
    }

    #[test]
    fn probe_reports_a_missing_driver_in_one_line_or_lists_devices() {
        let have_libcuda = result::driver_library_present();
        match probe() {
            Err(ComputeError::Unavailable { backend, reason }) => {
                assert_eq!(backend, "cuda");
                assert!(!reason.contains('\n'), "one line: {reason}");
                if have_libcuda {
                    // A driver without a usable GPU (a container, a CPU-only host): cuInit or the
                    // device count says so, never the missing-library line.
                    assert_ne!(reason, result::NO_DRIVER);
                    assert!(reason.contains("cuInit") || reason.contains("no CUDA devices"), "{reason}");
                } else {
                    assert_eq!(reason, "libcuda.so not found: install the NVIDIA driver");
                }
            }
            Ok(devices) => {
                assert!(have_libcuda, "devices listed without libcuda");
                assert!(!devices.is_empty());
                for d in devices {
                    assert_eq!(d.api, "cuda");
                    assert!(!d.name.is_empty());
                    assert_ne!(d.uuid, [0; 16], "{} has no UUID", d.name);
                    assert!(d.detail.starts_with("sm_"), "{}", d.detail);
                }
            }
            Err(other) => panic!("probe must be Ok or Unavailable, got: {other}"),
        }
    }

    #[test]
    fn new_without_a_driver_is_unavailable_and_closes_the_fds() {
        if result::driver_library_present() {
            return; // Covered by the GPU check (scripts/gpu-check.sh) on a machine with a driver.
        }
        use crate::compute::fd::ImportFd;
        use std::os::fd::{FromRawFd, OwnedFd};
        // The slot's "fd" is the write end of a pipe: once every write end is closed, a read
        // from the other end sees end-of-file (immune to the fd number being reused).
        let mut ends = [0; 2];
        // SAFETY: pipe2 writes two new descriptors into `ends`.
        let status = unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        assert_eq!(status, 0, "pipe2 failed");
        // SAFETY: both descriptors are fresh and owned by nothing else.
        let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
        let memory = vec![InteropMemory {
            fd: ImportFd::new(write_end),
            allocation_size: 4096,
            buffer_size: 4096,
            dedicated: true,
        }];
        let err = match CudaBackend::new([0; 16], memory, InteropSemaphores::default()) {
            Err(e) => e,
            Ok(_) => panic!("CudaBackend::new succeeded without libcuda"),
        };
        assert!(matches!(err, ComputeError::Unavailable { backend: "cuda", .. }), "{err}");
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into `byte` from a descriptor we own.
        let n = unsafe {
            libc::read(std::os::fd::AsRawFd::as_raw_fd(&read_end), (&mut byte as *mut u8).cast(), 1)
        };
        let still_open = n != 0;
        assert!(!still_open, "the slot's fd must be closed when the backend is not created");
    }
}
