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
//! Teardown (DESIGN.md "Interop rules"), encoded by [`CudaBackend`]'s field order: its `Drop`
//! makes the context current and synchronises the stream; then the imported semaphores are
//! destroyed, the mapped pointers freed and the imported memory destroyed, the event and module
//! released, the stream destroyed and the primary context released. The caller frees the Vulkan
//! memory and semaphores after the backend is gone.

pub(crate) mod nvrtc;
pub(crate) mod plan;
mod prewarm;
pub(crate) mod result;
pub(crate) mod safe;
mod staged;

use crate::compute::kernel::{CacheOutcome, KernelCache, SINEWAVE_ENTRY};
use crate::compute::timing::{Mark, StreamTimer};
use crate::compute::{plan_sync, SemaphoreRef};
use crate::compute::{
    BackendKind, ComputeBackend, ComputeDeviceInfo, ComputeError, GpuSync, GpuSyncSupport, InteropMemory,
    InteropSemaphorePair, InteropSemaphores, KernelBenchmark,
};
use crate::profile::clock::ClockInfo;
use crate::profile::Span;
use crate::sim::WaveParams;
use cudarc::driver::sys;
use plan::{DeviceLimits, SeenDevice};
use result::Driver;
use safe::{Event, ExternalMemory, ExternalSemaphore, Kernel, MappedBuffer, PrimaryContext, Stream};

pub use prewarm::prewarm;
pub use staged::CudaStagedBackend;

type Result<T> = std::result::Result<T, ComputeError>;

/// Launches (kernel and fill each) run before `benchmark` starts timing.
const BENCHMARK_WARMUP: u32 = 5;

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

/// An imported (computed, rendered) pair.
struct SemaphorePair {
    computed: ExternalSemaphore,
    rendered: ExternalSemaphore,
}

impl SemaphorePair {
    fn import(driver: &'static Driver, pair: InteropSemaphorePair, timeline: bool) -> Result<Self> {
        let InteropSemaphorePair { computed, rendered } = pair;
        // If the first import fails, `rendered` is dropped unused, which closes its fd.
        // An injected failure drops both fds unused, which closes them, as a real one does.
        crate::fault::inject_compute(
            crate::fault::Fault::CudaSemaphoreImport,
            "cuda",
            "cuImportExternalSemaphore",
        )?;
        let computed = ExternalSemaphore::import(driver, computed, timeline)?;
        let rendered = ExternalSemaphore::import(driver, rendered, timeline)?;
        Ok(SemaphorePair { computed, rendered })
    }
}

/// The CUDA backend: imported slots and semaphores, the kernel, one stream.
pub struct CudaBackend {
    // Field order is teardown order (after `Drop` has synchronised the stream): semaphores,
    // then slots (each frees its pointer, then destroys its import), then event, module and
    // stream, and the context last.
    timeline: Option<SemaphorePair>,
    binary: Vec<SemaphorePair>,
    slots: Vec<MappedBuffer>,
    /// Per-frame events for the profiler (their own idle stream for the clock anchor).
    timer: StreamTimer<Event>,
    done: Event,
    kernel: Kernel,
    stream: Stream,
    ctx: PrimaryContext,
    device: CudaDevice,
    driver: &'static Driver,
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
        if !binary.is_empty() && binary.len() != memory.len() {
            return Err(ComputeError::Unsupported {
                backend: "cuda",
                reason: format!(
                    "{} binary semaphore pairs for {} slots (one pair per slot expected)",
                    binary.len(),
                    memory.len()
                ),
            });
        }

        // Declaration order here is the reverse of teardown on an early return (`setup` drops
        // last: the module, then the context, which stays current on this thread throughout).
        let setup = setup_device(driver, &device, driver_version)?;
        let stream = Stream::new_non_blocking(driver)?;
        let done = Event::new(driver, false)?;
        let timer = StreamTimer::new("cuda", Stream::new_non_blocking(driver)?, || Event::new(driver, true))?;
        let slots = memory
            .into_iter()
            .enumerate()
            .map(|(i, m)| import_slot(driver, i, m))
            .collect::<Result<Vec<_>>>()?;
        let timeline = timeline.map(|pair| SemaphorePair::import(driver, pair, true)).transpose()?;
        let binary = binary
            .into_iter()
            .map(|pair| SemaphorePair::import(driver, pair, false))
            .collect::<Result<Vec<_>>>()?;
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
        Ok(CudaBackend { timeline, binary, slots, timer, done, kernel, stream, ctx, device, driver })
    }

    /// (free, total) device memory in bytes (`cuMemGetInfo`), for the leak check. Through
    /// `dyn ComputeBackend` the same figure comes as `Some(..)` from the trait's `device_memory`.
    pub fn device_memory(&self) -> Result<(u64, u64)> {
        self.ctx.make_current()?;
        self.driver.mem_get_info()
    }

    fn slot(&self, slot: usize) -> Result<&MappedBuffer> {
        self.slots.get(slot).ok_or_else(|| ComputeError::Unsupported {
            backend: "cuda",
            reason: format!("slot {slot} out of range ({} slots imported)", self.slots.len()),
        })
    }

    fn semaphore(&self, which: SemaphoreRef) -> Result<&ExternalSemaphore> {
        let found = match which {
            SemaphoreRef::TimelineRendered => self.timeline.as_ref().map(|p| &p.rendered),
            SemaphoreRef::TimelineComputed => self.timeline.as_ref().map(|p| &p.computed),
            SemaphoreRef::BinaryRendered(i) => self.binary.get(i).map(|p| &p.rendered),
            SemaphoreRef::BinaryComputed(i) => self.binary.get(i).map(|p| &p.computed),
        };
        found.ok_or_else(|| ComputeError::Unsupported {
            backend: "cuda",
            reason: format!("semaphore {which:?} was not imported"),
        })
    }

    /// wait → one launch writing every slot of `frames` → signal, on the stream (a batch of one is
    /// a plain `sinewave` launch). Everything is resolved and checked before the first enqueue,
    /// so a refused batch leaves no wait behind on the stream.
    fn enqueue(&mut self, frames: &[(u64, usize, WaveParams)], sync: GpuSync) -> Result<()> {
        let Some(&(first, _, _)) = frames.first() else { return Ok(()) };
        if frames.len() > crate::compute::kernel::MAX_BATCH
            || (frames.len() > 1 && matches!(sync, GpuSync::Binary { .. }))
        {
            return Err(ComputeError::Unsupported {
                backend: "cuda",
                reason: format!(
                    "a batch of {} frames (binary sync takes 1, timelines up to 8)",
                    frames.len()
                ),
            });
        }
        self.ctx.make_current()?;
        let i = self.timer.begin_batch(first, frames.len() as u64);
        let plan = plan_sync("cuda", sync, self.timeline.is_some(), self.binary.len())?;
        let ranges = frames
            .iter()
            .map(|&(_, slot, _)| self.slot(slot).map(MappedBuffer::range))
            .collect::<Result<Vec<_>>>()?;
        let params: Vec<WaveParams> = frames.iter().map(|f| f.2).collect();
        for (r, p) in ranges.iter().zip(&params) {
            plan::check_grid_fits(p.grid, r.size())?;
        }
        let wait = plan.wait.map(|w| self.semaphore(w.semaphore).map(|s| (s, w.value))).transpose()?;
        let signal = plan.signal.map(|s| self.semaphore(s.semaphore).map(|h| (h, s.value))).transpose()?;
        if let Some((semaphore, value)) = wait {
            self.timer.mark(i, Mark::BeforeWait, &self.stream)?;
            semaphore.wait(value, &self.stream)?;
        }
        self.timer.mark(i, Mark::BeforeKernel, &self.stream)?;
        if let [range] = ranges[..] {
            self.kernel.launch(&self.stream, range, &params[0], self.device.limits)?;
        } else {
            self.kernel.launch_batch(&self.stream, &ranges, &params, self.device.limits)?;
        }
        self.timer.mark(i, Mark::AfterKernel, &self.stream)?;
        if let Some((semaphore, value)) = signal {
            semaphore.signal(value, &self.stream)?;
        }
        self.timer.mark(i, Mark::AfterSignal, &self.stream)
    }

    fn launch(&self, slot: usize, params: &WaveParams) -> Result<()> {
        self.kernel.launch(&self.stream, self.slot(slot)?.range(), params, self.device.limits)?;
        Ok(())
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

fn import_slot(driver: &'static Driver, index: usize, m: InteropMemory) -> Result<MappedBuffer> {
    if m.buffer_size == 0 || m.buffer_size > m.allocation_size {
        return Err(ComputeError::Unsupported {
            backend: "cuda",
            reason: format!(
                "slot {index}: buffer size {} does not fit the allocation size {}",
                m.buffer_size, m.allocation_size
            ),
        });
    }
    crate::fault::inject_compute(crate::fault::Fault::CudaMemoryImport, "cuda", "cuImportExternalMemory")?;
    let memory = ExternalMemory::import(driver, m.fd, m.allocation_size, m.dedicated)?;
    MappedBuffer::map(memory, m.buffer_size)
}

impl ComputeBackend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device_name(&self) -> String {
        format!("{} (CUDA device {}, sm_{})", self.device.name, self.device.ordinal, self.device.arch)
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: self.timeline.is_some(), binary: !self.binary.is_empty() }
    }

    fn enqueue_gpu_synced(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
        sync: GpuSync,
    ) -> Result<()> {
        self.enqueue(&[(frame, slot, *params)], sync)
    }

    fn enqueue_batch_gpu_synced(&mut self, frames: &[(u64, usize, WaveParams)], sync: GpuSync) -> Result<()> {
        self.enqueue(frames, sync)
    }

    fn write_slot_and_wait(&mut self, frame: u64, slot: usize, params: &WaveParams) -> Result<()> {
        self.ctx.make_current()?;
        let i = self.timer.begin(frame);
        self.timer.mark(i, Mark::BeforeKernel, &self.stream)?;
        self.launch(slot, params)?;
        self.timer.mark(i, Mark::AfterKernel, &self.stream)?;
        self.done.record(&self.stream)?;
        self.done.synchronize()
    }

    fn take_spans(&mut self, out: &mut Vec<Span>) {
        match self.ctx.make_current() {
            Ok(()) => self.timer.take_spans(out),
            Err(e) => log::debug!("cuda: timing skipped: {e}"),
        }
    }

    fn clock_info(&self) -> Option<ClockInfo> {
        self.timer.clock_info()
    }

    fn finish(&mut self) -> Result<()> {
        self.ctx.make_current()?;
        self.stream.synchronize()
    }

    /// Kernel time against `cuMemsetD32Async` over the same bytes, both timed with events on the
    /// backend's stream, `iterations` of each (after a few untimed warm-up launches). The slot
    /// holds `params`' heights afterwards.
    fn benchmark(&mut self, slot: usize, params: &WaveParams, iterations: u32) -> Result<KernelBenchmark> {
        self.ctx.make_current()?;
        let buffer = self.slot(slot)?;
        let words = params.grid.len();
        let events = (0..iterations)
            .map(|_| -> Result<[Event; 4]> {
                Ok([
                    Event::new(self.driver, true)?,
                    Event::new(self.driver, true)?,
                    Event::new(self.driver, true)?,
                    Event::new(self.driver, true)?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        let launch = || self.kernel.launch(&self.stream, buffer.range(), params, self.device.limits);
        let cfg = launch()?;
        log::info!(
            "cuda: benchmark on {}: {}x{} blocks of {} threads, {iterations} timed launches",
            params.grid,
            cfg.grid_x,
            cfg.grid_y,
            cfg.block_x
        );
        for _ in 0..BENCHMARK_WARMUP {
            launch()?;
            buffer.memset_d32_async(0, words, &self.stream)?;
        }
        for [k0, k1, f0, f1] in &events {
            k0.record(&self.stream)?;
            launch()?;
            k1.record(&self.stream)?;
            f0.record(&self.stream)?;
            buffer.memset_d32_async(0, words, &self.stream)?;
            f1.record(&self.stream)?;
        }
        launch()?;
        self.stream.synchronize()?;
        let mut result = KernelBenchmark { fill_name: "cuMemsetD32Async", ..Default::default() };
        for [k0, k1, f0, f1] in &events {
            result.kernel_us.push(k0.elapsed_us(k1)?);
            result.fill_us.push(f0.elapsed_us(f1)?);
        }
        Ok(result)
    }

    fn device_memory(&self) -> Option<Result<(u64, u64)>> {
        // The inherent method of the same name (inherent methods win on a concrete `CudaBackend`).
        Some(CudaBackend::device_memory(self))
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.make_current() {
            log::warn!("cuda: making the context current for teardown failed: {e}");
        }
        if let Err(e) = self.stream.synchronize() {
            log::warn!("cuda: synchronising the stream for teardown failed: {e}");
        }
        // The fields now drop in declaration order (see the struct).
    }
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
