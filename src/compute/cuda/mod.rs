//! CUDA backend (NVIDIA), built on the interop crate's public CUDA API
//! ([`vkhip_interop::cuda`]) like any other user of it.
//!
//! # Design
//!
//! The crate does the CUDA side of the interop: the driver API and NVRTC loaded at run time,
//! every status kept as an integer in its [`vkhip_interop::Error`], the device's primary context
//! and **one** non-blocking stream ([`Cuda`]), the imports of Vulkan's memory and semaphores,
//! events, compiling and launching. What stays here is vkhip's own:
//! - the `sinewave` kernel: its source, compile options and on-disk cache ([`KernelCache`]),
//!   its launch shape (`plan::launch_config`) and arguments (`Sinewave`), and the grid checks;
//! - fault injection (`VKHIP_FAULT=cuda-compile`, `cuda-launch`, …) and the start-up prewarm
//!   (`prewarm`);
//! - the profiler's timing of the kernel: GPU stamps (`stamps`: `sinewave` writes the GPU timer
//!   at its start and end into mapped host memory, on the Vulkan device clock, no anchor), taken
//!   once the entry holds both (it is zeroed before its launch; no event is recorded for it,
//!   [`StreamTimer::gpu_stamped`]);
//! - `staged`: [`CudaStagedBackend`], `--memory staged`, the same kernel into CUDA-owned memory,
//!   copied through page-locked host memory into host-mapped slots (the no-interop baseline).
//!
//! One stream. Everything of a backend — waits, launches, signals, fills (and the staged
//! backend's timing events and clock anchors), the staged copies — runs on the crate's one stream of the
//! [`Cuda`] the backend opened (shared as an `Arc<Cuda>`; there is no second stream).
//!
//! Frame sync ([`crate::sync`] decides which entry point runs when):
//! - `enqueue_gpu_synced`: wait (imported `rendered`) → kernel → signal (imported `computed`),
//!   all on the stream, and return. The host never waits on anything CUDA signals (a host wait
//!   on a CUDA-signalled Vulkan timeline value costs ≈ 10 ms on the H100: docs/ARCHITECTURE.md).
//! - `write_slot_and_wait`: kernel → record an event → wait for the event (CUDA's own object).
//!
//! Kernel. `kernels/sinewave.hip` compiled by NVRTC for the device ([`Cuda::target`]: a cubin
//! for its architecture, PTX only as a fallback), cached by [`KernelCache`]. Each thread owns
//! four columns and walks rows, the row factor taken from a table its block shares; one block per
//! multiprocessor is launched (`plan::launch_config`).
//!
//! Shape. [`CudaBackend`] is the skeleton HIP shares ([`crate::compute::imported`]):
//! [`Imported`] over [`CudaApi`] (the kernel: `sinewave`, or `sinewave_batch` for a batch, fill,
//! events, semaphore wait/signal), in an [`InteropBackend`] with [`CudaContext`] (the device).
//!
//! Teardown (docs/ARCHITECTURE.md, "Interop rules"): `InteropBackend`'s `Drop` synchronises the
//! stream; then the profiler's and host-wait events are released, the imported semaphores
//! destroyed, the mapped pointers freed and the imported memory destroyed, the module unloaded.
//! Every crate object holds the device (context and stream) open and waits for the stream before
//! it goes, so the stream is destroyed and the primary context released with the last of them.
//! The caller frees the Vulkan memory and semaphores after the backend is gone.

pub mod in_vulkan;
pub(crate) mod plan;
mod post;
mod prewarm;
mod staged;
pub mod stamps;

use crate::compute::imported::{
    self, Imported, InteropApi, InteropBackend, InteropDevice, SemaphorePair, Semaphores,
};
use crate::compute::kernel::{
    CacheOutcome, KernelCache, SinewaveArgs, SinewaveLaunch, StampTarget, MAX_LAUNCH_ENVS,
    SINEWAVE_BATCH_ENTRY, SINEWAVE_ENTRY, SINEWAVE_SOURCE,
};
use crate::compute::timing::{StreamTimer, TimedEvent};
use crate::compute::{
    BackendKind, ComputeDeviceInfo, ComputeError, InteropMemory, InteropSemaphorePair, InteropSemaphores,
};
use crate::sim::WaveParams;
use plan::{DeviceLimits, SinewaveBatchArgs};
use stamps::GpuStamps;
use std::sync::Arc;
use vkhip_interop::cuda::{
    self as interop, Cuda, CudaBuffer, CudaEvent, CudaKernel, CudaMemory, CudaSemaphore,
};
use vkhip_interop::cuda::{DeviceInfo, DriverVersion, Target};

pub use prewarm::{limit_hardware_queues, prewarm};
pub use staged::CudaStagedBackend;

type Result<T> = std::result::Result<T, ComputeError>;

/// NVRTC options after the architecture: `--fmad=false` keeps `frequency·u + phase` as a rounded
/// multiply then a rounded add, exactly as the CPU reference in `sim.rs` computes it; a fused
/// multiply-add would shift the sine's argument by up to half an ulp. The kernel is bound by its
/// stores, so this costs nothing measurable.
const NVRTC_OPTIONS: &[&str] = &["--fmad=false"];

/// The CLI's wording for a missing driver or library ("backend cuda is not available: …", exit
/// 2); every other crate error stays the crate's typed error.
fn backend_error(e: ComputeError) -> ComputeError {
    match e {
        ComputeError::Interop(e) if e.kind() == vkhip_interop::ErrorKind::Unavailable => {
            ComputeError::Unavailable { backend: "cuda", reason: e.message().to_string() }
        }
        other => other,
    }
}

/// Devices the CUDA driver can see. [`ComputeError::Unavailable`] (one line) when libcuda is
/// missing or too old, or there are no devices; a failed `cuInit` keeps its status.
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
    let devices = interop::devices().map_err(|e| backend_error(e.into()))?;
    Ok(devices
        .into_iter()
        .map(|d| ComputeDeviceInfo {
            api: "cuda",
            ordinal: d.ordinal,
            name: d.name,
            uuid: d.uuid,
            detail: d.detail,
        })
        .collect())
}

/// The CUDA device with `device_uuid` held open (its primary context retained) across backend
/// lifetimes (`vkhip cycles`): without it the context would be destroyed whenever the last
/// backend goes, taking any leaked import with it and hiding the leak.
pub struct ContextHold {
    _cuda: Cuda,
}

/// Hold the CUDA device whose UUID is `device_uuid` open.
pub fn hold_context(device_uuid: [u8; 16]) -> Result<ContextHold> {
    Ok(ContextHold { _cuda: Cuda::open(device_uuid).map_err(|e| backend_error(e.into()))? })
}

/// A device address range the kernel may write: `size` bytes from `ptr`, 16-byte aligned,
/// borrowed from the imported buffer or CUDA allocation that owns them (only those make one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceRange<'a> {
    ptr: u64,
    size: u64,
    _owner: std::marker::PhantomData<&'a ()>,
}

impl<'a> From<&'a CudaBuffer> for DeviceRange<'a> {
    fn from(b: &'a CudaBuffer) -> Self {
        DeviceRange { ptr: b.device_ptr(), size: b.size(), _owner: std::marker::PhantomData }
    }
}

impl<'a> From<&'a CudaMemory> for DeviceRange<'a> {
    fn from(m: &'a CudaMemory) -> Self {
        DeviceRange { ptr: m.device_ptr(), size: m.size(), _owner: std::marker::PhantomData }
    }
}

/// The loaded `sinewave` entry points and the device's launch limits.
pub(crate) struct Sinewave {
    single: CudaKernel,
    /// `sinewave_batch` (None: an image without it; batches then launch once per slot).
    batch: Option<CudaKernel>,
    limits: DeviceLimits,
}

impl Sinewave {
    /// Load `image` on `cuda` and look up both entry points (`sinewave_batch` is optional).
    fn load(cuda: &Cuda, image: &[u8]) -> Result<Self> {
        let module = cuda.load_module(image)?;
        let single = module.function(SINEWAVE_ENTRY)?;
        let batch = module
            .function(SINEWAVE_BATCH_ENTRY)
            .map_err(|e| log::debug!("cuda: no {SINEWAVE_BATCH_ENTRY} in the image ({e})"))
            .ok();
        Ok(Sinewave { single, batch, limits: DeviceLimits::of(cuda.info()) })
    }

    /// Enqueue `sinewave` writing `dst` for `params` on `cuda`'s stream, stamping into `stamps`
    /// (None: null stamp pointers).
    fn launch(
        &self,
        cuda: &Cuda,
        dst: DeviceRange<'_>,
        params: &WaveParams,
        stamps: Option<StampTarget>,
    ) -> Result<SinewaveLaunch> {
        plan::check_grid_fits(params, dst.size)?;
        crate::compute::inject_fault(crate::fault::Fault::CudaLaunch, "cuda", "cuLaunchKernel")?;
        let cfg = plan::launch_config(params.grid, params.envs, self.limits);
        let mut args = SinewaveArgs::new(dst.ptr, params).with_stamps(stamps);
        let mut ptrs = args.param_pointers();
        let (grid, block) = dims(cfg);
        // SAFETY: `single` is `sinewave` from a module loaded on `cuda`, whose parameters are
        // `SinewaveArgs::SIGNATURE` (a unit test checks it against the source) and `ptrs`
        // follows that order; the kernel writes `envs · grid.len()` floats from `dst.ptr`
        // (gridDim.z = envs, one field each), which the check above keeps inside the range (a `DeviceRange` borrows live memory of its size,
        // 16-byte aligned, that the stream has finished with before it is freed); the stamp
        // pointers are null or a live `GpuStamps` entry and counter (freed after the stream is
        // idle); `args` outlives the call, which copies the values.
        unsafe { cuda.launch(&self.single, grid, block, &mut ptrs) }?;
        Ok(cfg)
    }

    /// Enqueue one launch of `sinewave_batch` writing `dsts[i]` for `params[i]` (all on one grid,
    /// at most [`crate::compute::kernel::MAX_BATCH`]); falls back to one `sinewave` launch per
    /// slot when the image has no batch entry. One launch instead of B is most of what a batched
    /// hand-off saves on the GPU.
    fn launch_batch(
        &self,
        cuda: &Cuda,
        dsts: &[DeviceRange<'_>],
        params: &[WaveParams],
        stamps: Option<StampTarget>,
    ) -> Result<SinewaveLaunch> {
        // gridDim.z = slots × envs must stay within CUDA's limit (else one launch per slot).
        let fits_z = |envs: u32| (dsts.len() as u64) * u64::from(envs.max(1)) <= u64::from(MAX_LAUNCH_ENVS);
        let envs = params.first().map_or(1, |p| p.envs.max(1));
        let Some(function) = self.batch.as_ref().filter(|_| dsts.len() > 1 && fits_z(envs)) else {
            // One launch per slot (one slot, or an image without the batch entry): the stamps
            // are one launch's, so only a single launch is stamped.
            let mut cfg = None;
            let stamps = stamps.filter(|_| dsts.len() == 1);
            for (d, p) in dsts.iter().zip(params) {
                cfg = Some(self.launch(cuda, *d, p, stamps)?);
            }
            return cfg.ok_or_else(|| ComputeError::Unsupported {
                backend: "cuda",
                reason: "an empty batch".into(),
            });
        };
        for (d, p) in dsts.iter().zip(params) {
            plan::check_grid_fits(p, d.size)?;
        }
        crate::compute::inject_fault(crate::fault::Fault::CudaLaunch, "cuda", "cuLaunchKernel")?;
        let ptrs: Vec<u64> = dsts.iter().map(|d| d.ptr).collect();
        let mut args = SinewaveBatchArgs::new(&ptrs, params, stamps)?;
        let mut cfg = plan::launch_config(params[0].grid, envs, self.limits);
        cfg.grid_z = dsts.len() as u32 * envs;
        let mut arg_ptrs = args.param_pointers();
        let (grid, block) = dims(cfg);
        // SAFETY: `function` is `sinewave_batch` from a module loaded on `cuda`, whose parameters
        // are `SinewaveBatchArgs::SIGNATURE` with the struct's layout checked against the source
        // by a unit test; blockIdx.z / envs < dsts.len() picks one of the pointers filled in,
        // each the start of a live `DeviceRange` that holds `envs` fields of the grid (checked
        // above; `SinewaveBatchArgs::new` refused frames of other grids or envs); the stamp pointers
        // are null or a live `GpuStamps` entry and counter; `args` outlives the call, which
        // copies the values.
        unsafe { cuda.launch(function, grid, block, &mut arg_ptrs) }?;
        Ok(cfg)
    }
}

/// `cuLaunchKernel`'s (grid, block) for a `sinewave` launch.
fn dims(l: SinewaveLaunch) -> ([u32; 3], [u32; 3]) {
    ([l.grid_x, l.grid_y, l.grid_z], [l.block_x, 1, 1])
}

/// The profiler's events are the crate's, recorded on the backend's one stream.
impl TimedEvent for CudaEvent {
    type Stream = Arc<Cuda>;

    fn record_on(&self, stream: &Arc<Cuda>) -> Result<()> {
        Ok(stream.record(self)?)
    }

    fn is_done(&self) -> Result<bool> {
        Ok(self.query()?)
    }

    fn ms_since(&self, earlier: &CudaEvent) -> Result<f32> {
        Ok(earlier.elapsed_ms(self)?)
    }

    fn wait(&self) -> Result<()> {
        Ok(self.synchronize()?)
    }
}

/// Import a (computed, rendered) pair ([`SemaphorePair::import`]); a failure is an error.
fn import_pair(
    cuda: &Cuda,
    pair: InteropSemaphorePair,
    timeline: bool,
) -> Result<SemaphorePair<CudaSemaphore>> {
    // An injected failure drops both fds unused, which closes them, as a real one does.
    crate::compute::inject_fault(
        crate::fault::Fault::CudaSemaphoreImport,
        "cuda",
        "cuImportExternalSemaphore",
    )?;
    SemaphorePair::import(pair, |fd| {
        Ok(if timeline { cuda.import_timeline(fd) } else { cuda.import_binary(fd) }?)
    })
}

/// What the shared skeleton ([`Imported`]) calls CUDA with: the device, the loaded kernel and
/// its GPU stamp memory (None with `--gpu-timing off`).
pub struct CudaApi {
    kernel: Sinewave,
    stamps: Option<GpuStamps>,
    cuda: Arc<Cuda>,
}

impl InteropApi for CudaApi {
    const NAME: &'static str = "cuda";
    const FILL_NAME: &'static str = "cuMemsetD32Async";
    /// The crate's device, whose one stream everything runs on.
    type Stream = Arc<Cuda>;
    type Event = CudaEvent;
    type Semaphore = CudaSemaphore;
    type Buffer = CudaBuffer;

    fn buffer_size(buffer: &CudaBuffer) -> u64 {
        buffer.size()
    }

    fn wait(&self, semaphore: &CudaSemaphore, value: u64, stream: &Arc<Cuda>) -> Result<()> {
        Ok(vkhip_interop::FrameStream::wait(&**stream, semaphore, value)?)
    }

    fn signal(&self, semaphore: &CudaSemaphore, value: u64, stream: &Arc<Cuda>) -> Result<()> {
        Ok(vkhip_interop::FrameStream::signal(&**stream, semaphore, value)?)
    }

    /// One `sinewave` launch for one slot, one `sinewave_batch` launch for several.
    fn launch(
        &self,
        stream: &Arc<Cuda>,
        slots: &[(&CudaBuffer, WaveParams)],
        stamp_entry: Option<usize>,
    ) -> Result<SinewaveLaunch> {
        let stamps = stamp_entry.and_then(|entry| Some(self.stamps.as_ref()?.target(entry)));
        if let [(buffer, params)] = slots {
            return self.kernel.launch(stream, (*buffer).into(), params, stamps);
        }
        let ranges: Vec<DeviceRange<'_>> = slots.iter().map(|(b, _)| (*b).into()).collect();
        let params: Vec<WaveParams> = slots.iter().map(|s| s.1).collect();
        self.kernel.launch_batch(stream, &ranges, &params, stamps)
    }

    /// On the buffer's device's stream, which is `stream`.
    fn fill(&self, buffer: &CudaBuffer, words: usize, _stream: &Arc<Cuda>) -> Result<()> {
        Ok(buffer.fill_u32(0, words)?)
    }

    fn timed_event(&self) -> Result<CudaEvent> {
        Ok(self.cuda.event(true)?)
    }

    fn elapsed_us(&self, start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
        Ok(f64::from(start.elapsed_ms(end)?) * 1000.0)
    }

    fn synchronize(&self, stream: &Arc<Cuda>) -> Result<()> {
        Ok(stream.synchronize()?)
    }

    fn read_stamps(&self, entry: usize) -> Option<(u64, u64)> {
        self.stamps.as_ref()?.read(entry)
    }
}

/// The CUDA backend: imported slots and semaphores, the kernel and the device's one stream (the
/// shared skeleton, [`Imported`]), and the device ([`CudaContext`]).
pub type CudaBackend = InteropBackend<CudaContext>;

/// The device a [`CudaBackend`] runs on.
pub struct CudaContext {
    /// The post stage (`--post outline`), once attached.
    post: Option<crate::compute::post_stage::PostStage<post::CudaPost>>,
    cuda: Arc<Cuda>,
}

impl InteropDevice for CudaContext {
    type Api = CudaApi;
    const KIND: BackendKind = BackendKind::Cuda;
    /// One `sinewave_batch` launch per batch.
    const BATCHES: bool = true;

    /// Nothing to do: every call of the crate makes the device's primary context current first.
    fn make_current(&self) -> Result<()> {
        Ok(())
    }

    fn name(&self) -> String {
        self.cuda.describe()
    }

    fn memory(&self) -> Option<Result<(u64, u64)>> {
        Some(self.cuda.memory().map_err(ComputeError::from))
    }

    type Post = post::CudaPost;

    fn attach_post(&mut self, resources: crate::compute::post::PostResources) -> Result<()> {
        self.post = None;
        if resources.kind == crate::compute::post::PostKind::None {
            return Ok(());
        }
        self.post = Some(post::attach(self, resources)?);
        Ok(())
    }

    fn post_stage(&mut self) -> Option<&mut crate::compute::post_stage::PostStage<post::CudaPost>> {
        self.post.as_mut()
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
        Self::build(device_uuid, memory, semaphores).map_err(backend_error)
    }

    fn build(
        device_uuid: [u8; 16],
        memory: Vec<InteropMemory>,
        semaphores: InteropSemaphores,
    ) -> Result<Self> {
        let driver_version = interop::driver_version()?;
        let InteropSemaphores { timeline, binary } = semaphores;
        imported::check_pairs_per_slot("cuda", binary.len(), memory.len())?;
        let DeviceSetup { kernel, cuda } = setup_device(device_uuid, driver_version)?;
        let done = cuda.event(false)?;
        // GPU timing on: the kernels stamp the GPU clock (no anchor); off: no stamp memory, and
        // the timer records and maps nothing.
        let stamps = crate::profile::gpu_timing().then(|| GpuStamps::new(&cuda)).transpose()?;
        // Stamped: the timer records no event (its event ring stays unused).
        let timer = StreamTimer::gpu_stamped("cuda", cuda.clone(), || Ok(cuda.event(false)?))?;
        let slots = memory
            .into_iter()
            .enumerate()
            .map(|(i, m)| import_slot(&cuda, i, m))
            .collect::<Result<Vec<_>>>()?;
        let timeline = timeline.map(|pair| import_pair(&cuda, pair, true)).transpose()?;
        let binary =
            binary.into_iter().map(|pair| import_pair(&cuda, pair, false)).collect::<Result<Vec<_>>>()?;
        log::info!(
            "cuda: {}, driver CUDA {driver_version}: {} slot(s) imported, timeline semaphores: {}, \
             binary pairs: {}",
            cuda.describe(),
            slots.len(),
            if timeline.is_some() { "yes" } else { "no" },
            binary.len()
        );
        let api = CudaApi { kernel, stamps, cuda: cuda.clone() };
        let core = Imported::new(api, cuda.clone(), done, timer, slots, Semaphores { timeline, binary });
        Ok(InteropBackend::from_parts(core, CudaContext { post: None, cuda }))
    }

    /// (free, total) device memory in bytes (`cuMemGetInfo`), for the leak check. Through
    /// `dyn ComputeBackend` the same figure comes as `Some(..)` from the trait's `device_memory`.
    pub fn device_memory(&self) -> Result<(u64, u64)> {
        Ok(self.device().cuda.memory()?)
    }
}

/// A device opened for a backend and its kernel.
struct DeviceSetup {
    kernel: Sinewave,
    cuda: Arc<Cuda>,
}

/// The device and kernel for `device_uuid`: prewarm's when [`prewarm()`] got them, else made
/// now. `VKHIP_FAULT=cuda-compile` counts once per call either way.
fn setup_device(device_uuid: [u8; 16], driver_version: DriverVersion) -> Result<DeviceSetup> {
    if let Some(setup) = prewarm::take(device_uuid) {
        compile_fault()?;
        log::debug!("cuda: using the prewarmed device and kernel for {}", setup.cuda.describe());
        return Ok(setup);
    }
    let cuda = Arc::new(Cuda::open(device_uuid)?);
    compile_fault()?;
    let kernel = build_kernel(&cuda, driver_version)?;
    Ok(DeviceSetup { kernel, cuda })
}

/// `VKHIP_FAULT=cuda-compile`: fail as a rejected `sinewave` would.
fn compile_fault() -> Result<()> {
    if crate::fault::hit(crate::fault::Fault::CudaCompile) {
        return Err(ComputeError::Compile {
            api: "nvrtc",
            file: "sinewave.hip",
            log: "NVRTC_ERROR_COMPILATION (injected by VKHIP_FAULT=cuda-compile)".into(),
        });
    }
    Ok(())
}

/// The kernel image for a device, from the cache or freshly compiled.
struct KernelImage {
    image: Vec<u8>,
    target: Target,
    outcome: CacheOutcome,
    /// "NVRTC 13.0", for logs.
    compiler: String,
}

/// The image of `source` (`file` names it for NVRTC's messages) for `device` under a driver
/// reporting `driver_version`. `fresh` bypasses the cache (used when a cached image fails to
/// load; the damaged entry stays, and is bypassed again next time). The cache key covers the
/// source, the compiler, its options, the device and the driver.
fn kernel_image(
    cache: &KernelCache,
    (source, file): (&str, &str),
    device: &DeviceInfo,
    driver_version: DriverVersion,
    fresh: bool,
) -> Result<KernelImage> {
    let (major, minor) = interop::nvrtc_version()?;
    let compiler = format!("NVRTC {major}.{minor}");
    let target = interop::target_for(device)?;
    let options = std::iter::once(target.arch_option())
        .chain(NVRTC_OPTIONS.iter().map(|o| o.to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let device_key = format!("{} sm_{}", device.name, device.arch());
    let driver_key = format!("driver {}", driver_version.0);
    let parts = [source, compiler.as_str(), options.as_str(), &device_key, &driver_key];
    let compile = || interop::compile_to_image(source, file, target, NVRTC_OPTIONS);
    let (image, outcome) = if fresh {
        (compile()?, CacheOutcome::Uncached)
    } else {
        cache.get_or_compile(file, &parts, compile)?
    };
    Ok(KernelImage { image, target, outcome, compiler })
}

/// The `sinewave` kernel for `device`, from the cache (compiled afresh once if the cached image
/// does not load) or compiled now, loaded by `load` (`what` names the path in the log).
fn load_sinewave<T>(
    device: &DeviceInfo,
    driver_version: DriverVersion,
    what: &str,
    load: impl Fn(&[u8]) -> Result<T>,
) -> Result<T> {
    load_kernel((SINEWAVE_SOURCE, "sinewave.hip"), device, driver_version, what, load)
}

/// Kernel `(source, file)` for `device`, as [`load_sinewave`] loads `sinewave`.
pub(crate) fn load_kernel<T>(
    source: (&str, &str),
    device: &DeviceInfo,
    driver_version: DriverVersion,
    what: &str,
    load: impl Fn(&[u8]) -> Result<T>,
) -> Result<T> {
    let cache = KernelCache::from_env();
    let built = kernel_image(&cache, source, device, driver_version, false)?;
    log::info!("{what}: {} {:?} by {} ({:?})", source.1, built.target, built.compiler, built.outcome);
    match load(&built.image) {
        Ok(kernel) => Ok(kernel),
        Err(e) if built.outcome == CacheOutcome::Hit => {
            log::warn!("{what}: the cached {} did not load ({e}); compiling it afresh", source.1);
            load(&kernel_image(&cache, source, device, driver_version, true)?.image)
        }
        Err(e) => Err(e),
    }
}

/// The `sinewave` kernel for `cuda`'s device, loaded on its context.
fn build_kernel(cuda: &Cuda, driver_version: DriverVersion) -> Result<Sinewave> {
    load_sinewave(cuda.info(), driver_version, "cuda", |image| Sinewave::load(cuda, image))
}

fn import_slot(cuda: &Cuda, index: usize, m: InteropMemory) -> Result<CudaBuffer> {
    imported::check_slot_memory("cuda", index, &m)?;
    crate::compute::inject_fault(crate::fault::Fault::CudaMemoryImport, "cuda", "cuImportExternalMemory")?;
    Ok(cuda.import_buffer(m.into())?)
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
    fn probe_reports_a_missing_driver_in_one_line_or_lists_devices() {
        match probe() {
            Err(ComputeError::Unavailable { backend, reason }) => {
                assert_eq!(backend, "cuda");
                assert!(!reason.contains('\n'), "one line: {reason}");
                if interop::driver_present() {
                    // A driver without a usable GPU (a container, a CPU-only host): the device
                    // count says so, never the missing-library line.
                    assert!(reason.contains("no CUDA devices"), "{reason}");
                } else {
                    assert_eq!(reason, "libcuda.so not found: install the NVIDIA driver");
                }
            }
            // cuInit failed: its status is kept, and "no device" is the environment's fault.
            Err(ComputeError::Interop(e)) => {
                assert!(interop::driver_present(), "{e}");
                assert_eq!(e.call(), "cuInit", "{e}");
            }
            Ok(devices) => {
                assert!(interop::driver_present(), "devices listed without libcuda");
                assert!(!devices.is_empty());
                for d in devices {
                    assert_eq!(d.api, "cuda");
                    assert!(!d.name.is_empty());
                    assert_ne!(d.uuid, [0; 16], "{} has no UUID", d.name);
                    assert!(d.detail.starts_with("sm_"), "{}", d.detail);
                }
            }
            Err(other) => panic!("probe must be Ok, Unavailable or cuInit's status, got: {other}"),
        }
    }

    #[test]
    fn new_without_a_driver_is_unavailable_and_closes_the_fds() {
        if interop::driver_present() {
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
        assert_eq!(
            err.to_string(),
            "backend cuda is not available: libcuda.so not found: install the NVIDIA driver"
        );
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into `byte` from a descriptor we own.
        let n = unsafe {
            libc::read(std::os::fd::AsRawFd::as_raw_fd(&read_end), (&mut byte as *mut u8).cast(), 1)
        };
        let still_open = n != 0;
        assert!(!still_open, "the slot's fd must be closed when the backend is not created");
    }

    /// Compiles the real kernel with the NVRTC on LD_LIBRARY_PATH (no GPU needed), with the
    /// backend's options. Run with `cargo test --lib -- --ignored nvrtc_compiles`, e.g. with
    /// LD_LIBRARY_PATH pointing at the lib directory of the `nvidia-cuda-nvrtc` wheel.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_the_kernel_to_vectorised_ptx_and_a_cubin() {
        let (major, minor) = interop::nvrtc_version().expect("libnvrtc must be loadable for this test");
        eprintln!("NVRTC {major}.{minor}");
        let compile =
            |t| interop::compile_to_image(SINEWAVE_SOURCE, "sinewave.hip", t, NVRTC_OPTIONS).unwrap();
        let ptx = compile(Target::Ptx(90));
        assert_eq!(ptx.last(), Some(&0), "PTX must be NUL-terminated for cuModuleLoadData");
        let text = String::from_utf8_lossy(&ptx[..ptx.len() - 1]);
        assert!(text.contains(".entry sinewave("), "no unmangled entry point:\n{text}");
        assert!(text.contains("st.global.v4.f32"), "no 16-byte stores:\n{text}");
        assert!(text.contains(".target sm_90"), "{text}");
        // Eight parameters: three pointers (heights, stamps, blocks_done) and five 32-bit values.
        let params = text.matches(".param .u64 sinewave_param_").count()
            + text.matches(".param .u32 sinewave_param_").count()
            + text.matches(".param .f32 sinewave_param_").count();
        assert_eq!(params, SinewaveArgs::SIGNATURE.len(), "{text}");
        assert_eq!(text.matches(".param .u64 sinewave_param_").count(), 3, "{text}");
        // The GPU stamps: the timer read (NVRTC defines __CUDACC_RTC__) and the block counter.
        assert!(text.contains("%globaltimer"), "no %globaltimer read:\n{text}");
        assert!(text.contains("atom.global.add.u32"), "no block counter:\n{text}");
        assert!(compile(Target::Cubin(90)).starts_with(b"\x7fELF"), "a cubin is an ELF image");
    }
}
