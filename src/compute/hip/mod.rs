//! HIP backend (AMD), built on the interop crate's public HIP API ([`vkhip_interop::hip`]) like
//! any other user of it: imports the slots Vulkan exports, compiles `kernels/sinewave.hip` with
//! hiprtc for the device's target, and writes the height field on the crate's one stream.
//!
//! # Design
//!
//! The crate does the HIP side of the interop: the binding layer (statuses kept as integers in
//! its [`vkhip_interop::Error`]), hiprtc loaded at run time, the device matched by its PCI-built
//! UUID, **one** non-blocking stream ([`Hip`]), the imports of Vulkan's memory and semaphores,
//! events, compiling and launching; its module notes say why ROCm on Linux cannot import
//! semaphores and why its imports borrow the fd. What stays here is vkhip's own:
//! - the `sinewave` kernel: compiled through the crate with the app's on-disk cache, and checked
//!   to be an AMDGPU code object defining the kernel before it is loaded (`compile`, `elf`);
//! - the policy when semaphores do not import: a warning, and [`ComputeBackend::gpu_sync_support`](crate::compute::ComputeBackend::gpu_sync_support)
//!   then reports nothing, which sends `crate::sync` to `bridged`;
//! - the profiler's timing of the stream ([`StreamTimer`] over the crate's [`HipEvent`]).
//!
//! One stream. Everything of a backend — launches, fills, semaphore waits and signals where a
//! runtime imports them, the profiler's event records and its clock anchors — runs on the one
//! stream of the [`Hip`] the backend opened (shared as an `Arc<Hip>`).
//!
//! In `bridged` and `blocking`, [`ComputeBackend::write_slot_and_wait`](crate::compute::ComputeBackend::write_slot_and_wait)
//! enqueues the kernel, records an event behind it and waits on that event on the host: HIP's
//! own completion primitive, whose host wait costs microseconds (`hipLaunchHostFunc` is not
//! exported by HIP 5.2, and `hipStreamWaitValue32` makes the *stream* wait, not the host).
//!
//! Shape. [`HipBackend`] is the skeleton CUDA shares ([`crate::compute::imported`]): [`Imported`]
//! over [`HipApi`] in an [`InteropBackend`] with [`HipContext`] (the device). Built and
//! unit-tested without an AMD GPU (Debian 12's HIP 5.2.3, Debian sid's 6.4.3 in
//! `.ci/hip-sid.sh`); never run on AMD hardware.
//!
//! Teardown: `InteropBackend`'s `Drop` synchronises the stream; then the profiler's and
//! host-wait events, the imported semaphores, the mapped slots and the module go, each waiting
//! for the stream, and the stream with the last of them. The owner drops the backend before it
//! frees the Vulkan memory and semaphores.
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod compile;
mod elf;
mod post;

pub use compile::{compile_outline, compile_sinewave};
pub use elf::code_object_has_symbol;

use super::fd::ImportFd;
use super::imported::{self, Imported, InteropApi, InteropBackend, InteropDevice, SemaphorePair, Semaphores};
use super::kernel::{sinewave_launch, SinewaveArgs, SinewaveLaunch, SINEWAVE_ENTRY};
use super::timing::{StreamTimer, TimedEvent};
use super::{
    BackendKind, ComputeDeviceInfo, ComputeError, InteropMemory, InteropSemaphorePair, InteropSemaphores,
};
use crate::sim::WaveParams;
use std::sync::Arc;
use vkhip_interop::hip::{self, Hip, HipBuffer, HipEvent, HipKernel, HipSemaphore};
use vkhip_interop::FrameStream;

type Result<T> = std::result::Result<T, ComputeError>;

/// The CLI's wording for an AMD GPU that is not there ("backend hip is not available: …", exit
/// 2); every other crate error stays the crate's typed error.
fn backend_error(e: vkhip_interop::Error) -> ComputeError {
    if e.is_environment() && e.call() == "hipGetDeviceCount" {
        let reason = format!("hipGetDeviceCount returned {}", e.message());
        return ComputeError::Unavailable { backend: "hip", reason };
    }
    if e.kind() == vkhip_interop::ErrorKind::Unavailable {
        return ComputeError::Unavailable { backend: "hip", reason: e.message().to_string() };
    }
    e.into()
}

/// Devices HIP can see, with their Vulkan-comparable UUIDs. With no AMD GPU this is
/// [`ComputeError::Unavailable`] naming `hipErrorNoDevice` and why (HIP prints nothing itself).
pub fn probe() -> Result<Vec<ComputeDeviceInfo>> {
    let devices = hip::devices().map_err(backend_error)?;
    Ok(devices
        .into_iter()
        .map(|d| ComputeDeviceInfo {
            api: "hip",
            ordinal: d.ordinal,
            name: d.name,
            uuid: d.uuid,
            detail: d.detail,
        })
        .collect())
}

/// Try the imports the user asked for; a failure is a warning and leaves that scheme off (ROCm on
/// Linux cannot import external semaphores, and HIP < 6.4 has no timeline handle type: the
/// crate refuses those). Every fd is closed either way. `import(fd, timeline)` imports one.
fn import_semaphores<S>(
    semaphores: InteropSemaphores,
    import: impl Fn(ImportFd, bool) -> Result<S>,
) -> Semaphores<S> {
    let pair =
        |pair: InteropSemaphorePair, timeline: bool| SemaphorePair::import(pair, |fd| import(fd, timeline));
    let warn = |what: &str, e: ComputeError| log::warn!("hip: importing the {what} semaphores failed ({e})");
    let mut out = Semaphores::default();
    if let Some(p) = semaphores.timeline {
        match pair(p, true) {
            Ok(p) => out.timeline = Some(p),
            Err(e) => warn("timeline", e),
        }
    }
    // All pairs or none: the first failure drops the pairs not yet tried, which closes their fds.
    match semaphores.binary.into_iter().map(|p| pair(p, false)).collect::<Result<Vec<_>>>() {
        Ok(binary) => out.binary = binary,
        Err(e) => warn("binary", e),
    }
    out
}

/// The profiler's events are the crate's, recorded on the backend's one stream.
impl TimedEvent for HipEvent {
    type Stream = Arc<Hip>;

    fn record_on(&self, stream: &Arc<Hip>) -> Result<()> {
        Ok(stream.record(self)?)
    }

    fn is_done(&self) -> Result<bool> {
        Ok(self.query()?)
    }

    fn ms_since(&self, earlier: &HipEvent) -> Result<f32> {
        Ok(earlier.elapsed_ms(self)?)
    }

    fn wait(&self) -> Result<()> {
        Ok(self.synchronize()?)
    }
}

/// What the shared skeleton ([`Imported`]) calls HIP with: the device, the loaded kernel and how
/// many blocks the device keeps resident.
pub struct HipApi {
    kernel: HipKernel,
    hip: Arc<Hip>,
    max_blocks: u32,
}

impl InteropApi for HipApi {
    const NAME: &'static str = "hip";
    const FILL_NAME: &'static str = "hipMemsetD32Async";
    /// The crate's device, whose one stream everything runs on.
    type Stream = Arc<Hip>;
    type Event = HipEvent;
    type Semaphore = HipSemaphore;
    type Buffer = HipBuffer;

    fn buffer_size(buffer: &HipBuffer) -> u64 {
        buffer.size()
    }

    fn wait(&self, semaphore: &HipSemaphore, value: u64, stream: &Arc<Hip>) -> Result<()> {
        Ok(FrameStream::wait(&**stream, semaphore, value)?)
    }

    fn signal(&self, semaphore: &HipSemaphore, value: u64, stream: &Arc<Hip>) -> Result<()> {
        Ok(FrameStream::signal(&**stream, semaphore, value)?)
    }

    /// One `sinewave` launch per slot (HIP batches through the trait's default loop, one slot each).
    /// HIP has no GPU stamps (events against anchors): `_stamp_entry` is ignored, the stamp
    /// pointers are null.
    fn launch(
        &self,
        stream: &Arc<Hip>,
        slots: &[(&HipBuffer, WaveParams)],
        _stamp_entry: Option<usize>,
    ) -> Result<SinewaveLaunch> {
        let mut last = None;
        for (buffer, params) in slots {
            imported::check_grid_fits("hip", params, buffer.size())?;
            // gridDim.z = `--envs`: every environment of the slot in this one launch.
            let launch = sinewave_launch(params.grid, params.envs, self.max_blocks);
            let mut args = SinewaveArgs::new(buffer.device_ptr(), params);
            let mut ptrs = args.param_pointers();
            let (grid, block) = ([launch.grid_x, launch.grid_y, launch.grid_z], [launch.block_x, 1, 1]);
            // SAFETY: `kernel` is `sinewave` from a module loaded on `stream`'s device, whose
            // parameters are `SinewaveArgs::SIGNATURE` (checked against the source by a unit
            // test; the device pointer is 8 bytes, as on every HIP target) and `ptrs` follows that
            // order; `args` outlives the call (the runtime copies the values at launch); the
            // kernel writes `envs·width·height` floats, which the check above keeps inside the mapping,
            // and the buffer outlives the stream's work (the skeleton synchronises before drop).
            unsafe { stream.launch(&self.kernel, grid, block, &mut ptrs) }?;
            last = Some(launch);
        }
        last.ok_or_else(|| ComputeError::Unsupported { backend: "hip", reason: "an empty batch".into() })
    }

    /// On the buffer's device's stream, which is `stream`.
    fn fill(&self, buffer: &HipBuffer, words: usize, _stream: &Arc<Hip>) -> Result<()> {
        Ok(buffer.fill_u32(0, words)?)
    }

    fn timed_event(&self) -> Result<HipEvent> {
        Ok(self.hip.event(true)?)
    }

    fn elapsed_us(&self, start: &HipEvent, end: &HipEvent) -> Result<f64> {
        Ok(f64::from(start.elapsed_ms(end)?) * 1000.0)
    }

    fn synchronize(&self, stream: &Arc<Hip>) -> Result<()> {
        Ok(stream.synchronize()?)
    }
}

/// The HIP backend: imported slots and semaphores, the kernel and the device's one stream (the
/// shared skeleton, [`Imported`]), and the device ([`HipContext`]).
pub type HipBackend = InteropBackend<HipContext>;

/// The device a [`HipBackend`] runs on.
pub struct HipContext {
    /// The post stage (`--post outline`), once attached.
    post: Option<super::post_stage::PostStage<post::HipPost>>,
    hip: Arc<Hip>,
}

impl InteropDevice for HipContext {
    type Api = HipApi;
    const KIND: BackendKind = BackendKind::Hip;
    /// Batches go frame by frame (the trait's default): `sinewave_batch` was never run on AMD.
    const BATCHES: bool = false;

    /// Nothing to do: every call of the crate makes the device current first.
    fn make_current(&self) -> Result<()> {
        Ok(())
    }

    fn name(&self) -> String {
        self.hip.describe()
    }

    type Post = post::HipPost;

    fn attach_post(&mut self, resources: super::post::PostResources) -> Result<()> {
        self.post = None;
        if resources.kind == super::post::PostKind::None {
            return Ok(());
        }
        self.post = Some(post::attach(self, resources)?);
        Ok(())
    }

    fn post_stage(&mut self) -> Option<&mut super::post_stage::PostStage<post::HipPost>> {
        self.post.as_mut()
    }
}

impl HipBackend {
    /// Open the HIP device whose PCI-built UUID is `device_uuid`, import and map every slot,
    /// import the semaphores if `try_import_semaphores` (`--sync external`), and build the
    /// kernel. Every fd is closed, whatever happens (HIP borrows them).
    pub fn new(
        device_uuid: [u8; 16],
        memory: Vec<InteropMemory>,
        semaphores: InteropSemaphores,
        try_import_semaphores: bool,
    ) -> Result<Self> {
        imported::check_pairs_per_slot("hip", semaphores.binary.len(), memory.len())?;
        let hip = Arc::new(Hip::open(device_uuid).map_err(backend_error)?);
        let driver = hip::driver_version().unwrap_or(0);
        log::info!("hip: {} (driver {driver})", hip.describe());
        let code = compile::sinewave_code(&hip, driver)?;
        let kernel = hip.load_module(&code)?.function(SINEWAVE_ENTRY)?;
        let done = hip.event(false)?;
        let timer = StreamTimer::new("hip", hip.clone(), || Ok(hip.event(true)?))?;
        let mut slots = Vec::with_capacity(memory.len());
        for (i, m) in memory.into_iter().enumerate() {
            imported::check_slot_memory("hip", i, &m)?;
            slots.push(hip.import_buffer(m.into())?);
        }
        let semaphores = if try_import_semaphores {
            import_semaphores(semaphores, |fd, timeline| {
                Ok(if timeline { hip.import_timeline(fd) } else { hip.import_binary(fd) }?)
            })
        } else {
            drop(semaphores); // closes the fds
            Semaphores::default()
        };
        // Resident blocks of 256 threads: 8 per compute unit (2048 threads, the CDNA/RDNA maximum).
        // CUDA launches one block per multiprocessor since the kernel's row table (faster on an
        // H200, see cuda::plan::launch_config); HIP keeps 8 until it is measured on an AMD GPU.
        let max_blocks = hip.info().compute_units.max(1).saturating_mul(8);
        let api = HipApi { kernel, hip: hip.clone(), max_blocks };
        let core = Imported::new(api, hip.clone(), done, timer, slots, semaphores);
        Ok(InteropBackend::from_parts(core, HipContext { post: None, hip }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::GpuSyncSupport;
    use std::io::Read as _;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    /// A descriptor to hand to the backend, and the other end of its socket pair, which reads
    /// end-of-file once every descriptor of the first is closed. That judges the socket, not a
    /// descriptor number that another test's thread may be handed the moment it is closed.
    fn witnessed_fd() -> (UnixStream, OwnedFd) {
        let (peer, end) = UnixStream::pair().expect("socket pair");
        (peer, end.into())
    }

    /// Whether `peer`'s other end is closed, waiting up to 5 s (a child being spawned by another
    /// thread holds a copy until it execs).
    fn closed(peer: &UnixStream) -> bool {
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("read timeout");
        matches!((&*peer).read(&mut [0u8; 1]), Ok(0))
    }

    #[test]
    fn backend_can_move_to_the_bridge_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<HipBackend>();
    }

    #[test]
    fn probe_without_gpu_names_hip_error_no_device() {
        if std::path::Path::new("/dev/kfd").exists() {
            // A ROCm machine: probe must answer with devices or a clean environment error.
            match probe() {
                Ok(devices) => assert!(devices.iter().all(|d| d.api == "hip")),
                Err(e) => assert!(e.is_environment(), "{e}"),
            }
            return;
        }
        let e = probe().unwrap_err();
        let ComputeError::Unavailable { backend, reason } = &e else {
            panic!("expected Unavailable, got {e:?}")
        };
        assert_eq!(*backend, "hip");
        assert!(
            reason.starts_with("hipGetDeviceCount returned hipErrorNoDevice")
                && reason.contains(
                    ": no AMD GPU visible to ROCm (no /dev/kfd: the amdgpu kernel driver is not loaded"
                ),
            "{reason}"
        );
        assert!(!e.to_string().contains('\n'), "one line for the CLI: {e}");
        assert!(e
            .to_string()
            .starts_with("backend hip is not available: hipGetDeviceCount returned hipErrorNoDevice"));
    }

    #[test]
    fn backend_without_gpu_is_unavailable_and_closes_the_fds() {
        if std::path::Path::new("/dev/kfd").exists() {
            return; // needs the GPU-less case
        }
        let (peer, f) = witnessed_fd();
        let memory = vec![InteropMemory {
            fd: ImportFd::new(f),
            allocation_size: 4096,
            buffer_size: 4096,
            dedicated: true,
        }];
        let r = HipBackend::new([0; 16], memory, InteropSemaphores::default(), true);
        assert!(matches!(r, Err(ComputeError::Unavailable { backend: "hip", .. })));
        assert!(closed(&peer), "fds handed to a backend that could not start are closed");
    }

    /// A runtime that cannot import (ROCm on Linux, or no timeline type): a warning, not an
    /// error, every fd closed, and `FrameSync` then falls back to bridged.
    #[test]
    fn failed_semaphore_import_leaves_gpu_sync_off_and_closes_the_fds() {
        let [(pa, a), (pb, b), (pc, c), (pd, d)] = [(); 4].map(|()| witnessed_fd());
        let [a, b, c, d] = [a, b, c, d].map(ImportFd::new);
        let semaphores = InteropSemaphores {
            timeline: Some(InteropSemaphorePair { computed: a, rendered: b }),
            binary: vec![InteropSemaphorePair { computed: c, rendered: d }],
        };
        let tried = std::cell::Cell::new(0);
        let imported = import_semaphores(semaphores, |fd: ImportFd, _timeline| -> Result<()> {
            tried.set(tried.get() + 1);
            drop(fd); // what a borrowing import does after the call
            Err(vkhip_interop::Error::failed(
                vkhip_interop::Api::Hip,
                "hipImportExternalSemaphore",
                801,
                "hipErrorNotSupported",
            )
            .into())
        });
        assert_eq!(imported.support(), GpuSyncSupport { timeline: false, binary: false });
        assert_eq!(tried.get(), 2, "one attempt per scheme: the pair's second fd is dropped unused");
        for (i, peer) in [pa, pb, pc, pd].iter().enumerate() {
            assert!(closed(peer), "fd {i} of 4 closed after the attempt");
        }
    }
}
