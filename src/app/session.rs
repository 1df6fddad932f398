//! Everything one run needs, built in dependency order and torn down in reverse:
//! backend choice → Vulkan device → slots (exported) → semaphores (exported) → backend (imports)
//! → frame-sync protocol. The interop path, export → import, is [`Session::new`] top to bottom.
//!
//! # Examples
//!
//! The checks made before anything is allocated need only the device's description:
//!
//! ```
//! use vkhip::app::session::{check_grid, choose_backend, POISON};
//! use vkhip::compute::BackendKind;
//! use vkhip::sim::Grid;
//! use vkhip::vk::device::PhysicalDeviceInfo;
//!
//! let dev = PhysicalDeviceInfo {
//!     name: "gpu".into(),
//!     max_storage_buffer_range: 1 << 27,  // 128 MiB
//!     device_local_bytes: 512 << 20,      // 512 MiB
//!     ..Default::default()
//! };
//! let grid = |s: &str| s.parse::<Grid>().unwrap();
//! assert!(check_grid(grid("4096x4096"), 3, &dev).is_ok()); // 64 MiB a slot, 192 MiB in all
//! let err = check_grid(grid("8192x4096"), 3, &dev).unwrap_err(); // 128 MiB a slot, 384 MiB in all
//! assert_eq!(
//!     err.to_string(),
//!     "grid 8192x4096 is too large: 3 slots need 384 MiB, more than half of gpu's 512 MiB device-local heap"
//! );
//! assert!(err.is_environment()); // exit code 2: a user's request, not a failure
//! let err = check_grid(grid("8192x8192"), 1, &dev).unwrap_err();
//! let text = err.to_string();
//! assert!(text.contains("one slot needs 256 MiB, more than gpu's maxStorageBufferRange (128 MiB)"), "{text}");
//!
//! // An explicit non-interop backend is taken as given, without probing a compute API.
//! let choice = choose_backend(BackendKind::Cpu, &[], None).unwrap();
//! assert_eq!((choice.kind, choice.reason.as_str()), (BackendKind::Cpu, "--backend"));
//! assert!(choice.compute_devices.is_empty());
//!
//! // The poison a checked frame's slot is filled with is a NaN: it never equals a height.
//! assert!(f32::from_bits(POISON).is_nan());
//! ```

use crate::cli::CommonArgs;
use crate::compute::post::{PostKind, PostPair, PostResources, PostSemaphores, PostSurface};
use crate::compute::{
    cpu::CpuBackend, vulkan::VulkanBackend, BackendKind, ComputeBackend, ComputeDeviceInfo, ComputeError,
    InteropMemory, InteropSemaphorePair, InteropSemaphores,
};
use crate::profile::clock::startup_mark;
use crate::sim::Grid;
use crate::sync::plan::MemoryPath;
use crate::sync::{
    default_frames_in_flight, Export, FrameSemaphores, FrameSync, SyncError, SyncPlan, SyncRequest,
};
use crate::vk::clock::GpuClock;
use crate::vk::device::{
    choose_device, enumerate, resolve_device_arg, uuid_string, Context, PhysicalDeviceInfo,
};
use crate::vk::external::{Slot, SlotMemory};
use crate::vk::instance::Instance;
use crate::vk::post::{PostAccess, PostImage, PostImages};
use crate::vk::swapchain::Surface;
use crate::vk::{cmd_memory_barrier, VkError};

/// The post stage's image size where the caller has none of its own (a run's default `--size`).
pub const DEFAULT_POST_EXTENT: ash::vk::Extent2D = ash::vk::Extent2D { width: 1280, height: 720 };
use std::sync::Arc;

/// Errors building a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Vulkan(#[from] VkError),
    #[error(transparent)]
    Compute(#[from] ComputeError),
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error("grid {grid} is too large: {reason}")]
    GridTooLarge { grid: Grid, reason: String },
}

impl SessionError {
    /// An environment gap or a user mistake (exit code 2).
    pub fn is_environment(&self) -> bool {
        match self {
            SessionError::Vulkan(e) => e.is_environment(),
            SessionError::Compute(e) => e.is_environment(),
            SessionError::Sync(e) => e.is_environment(),
            SessionError::GridTooLarge { .. } => true,
        }
    }
}

/// Devices each interop API can see (an error says why an API is unavailable).
pub fn probe_interop(kind: BackendKind) -> Result<Vec<ComputeDeviceInfo>, ComputeError> {
    match kind {
        BackendKind::Cuda | BackendKind::CudaInVulkan => crate::compute::cuda::probe(),
        #[cfg(feature = "hip")]
        BackendKind::Hip => crate::compute::hip::probe(),
        #[cfg(not(feature = "hip"))]
        BackendKind::Hip => Err(ComputeError::Unavailable {
            backend: "hip",
            reason: "this vkhip was built without HIP support (rebuild with `cargo build --release --features hip` on a ROCm machine)".into(),
        }),
        _ => Ok(Vec::new()),
    }
}

/// The backend to use and the compute device UUIDs to match, with the reason for the choice.
pub struct BackendChoice {
    pub kind: BackendKind,
    pub compute_devices: Vec<ComputeDeviceInfo>,
    pub reason: String,
}

/// Resolve `--backend auto` (and probe an explicit interop backend). `auto` prefers an interop
/// backend whose device UUID matches a usable Vulkan device, else `vulkan`, and says why.
pub fn choose_backend(
    requested: BackendKind,
    devices: &[PhysicalDeviceInfo],
    device_index: Option<usize>,
) -> Result<BackendChoice, ComputeError> {
    if requested == BackendKind::CudaInVulkan {
        // The extension first: without it (lavapipe, AMD, other drivers) CUDA is beside the point.
        let offered = devices.iter().any(|d| {
            d.usable() && device_index.is_none_or(|i| d.index == i) && d.cuda_in_vulkan.refusal().is_none()
        });
        if !offered {
            return Err(ComputeError::Unsupported {
                backend: requested.name(),
                reason: format!(
                    "no Vulkan device{} offers {} (NVIDIA's driver only); use --backend cuda",
                    device_index.map(|i| format!(" (--device {i})")).unwrap_or_default(),
                    vkhip_interop::cuda_in_vulkan::EXTENSION.to_string_lossy()
                ),
            });
        }
    }
    if requested != BackendKind::Auto {
        let compute_devices = probe_interop(requested)?;
        return Ok(BackendChoice { kind: requested, compute_devices, reason: "--backend".into() });
    }
    let mut why_not = Vec::new();
    for kind in [BackendKind::Cuda, BackendKind::Hip] {
        match probe_interop(kind) {
            Err(ComputeError::Unavailable { reason, .. }) => why_not.push(format!("{kind}: {reason}")),
            Err(e) => why_not.push(format!("{kind}: {e}")),
            Ok(list) => {
                let candidates: Vec<&PhysicalDeviceInfo> = devices
                    .iter()
                    .filter(|d| d.usable() && device_index.is_none_or(|i| d.index == i))
                    .collect();
                if let Some(c) = list.iter().find(|c| candidates.iter().any(|d| d.uuid == c.uuid)) {
                    return Ok(BackendChoice {
                        kind,
                        reason: format!("auto: {kind} device '{}' has the UUID of a Vulkan device", c.name),
                        compute_devices: list,
                    });
                }
                why_not.push(format!("{kind}: no {kind} device matches a usable Vulkan device's UUID"));
            }
        }
    }
    let reason = format!("auto: no interop backend usable ({})", why_not.join("; "));
    log::info!("{reason}; using the vulkan backend");
    Ok(BackendChoice { kind: BackendKind::Vulkan, compute_devices: Vec::new(), reason })
}

/// Check the grid against the device's limits before allocating anything.
pub fn check_grid(grid: Grid, slots: usize, dev: &PhysicalDeviceInfo) -> Result<(), SessionError> {
    let bytes = grid.bytes();
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let too_large = |reason: String| Err(SessionError::GridTooLarge { grid, reason });
    if bytes > dev.max_storage_buffer_range as u64 {
        return too_large(format!(
            "one slot needs {:.0} MiB, more than {}'s maxStorageBufferRange ({:.0} MiB)",
            mib(bytes),
            dev.name,
            mib(dev.max_storage_buffer_range as u64)
        ));
    }
    if dev.max_memory_allocation_size > 0 && bytes > dev.max_memory_allocation_size {
        return too_large(format!(
            "one slot needs {:.0} MiB, more than {}'s maxMemoryAllocationSize ({:.0} MiB)",
            mib(bytes),
            dev.name,
            mib(dev.max_memory_allocation_size)
        ));
    }
    let total = bytes * slots as u64;
    if dev.device_local_bytes > 0 && total > dev.device_local_bytes / 2 {
        return too_large(format!(
            "{slots} slots need {:.0} MiB, more than half of {}'s {:.0} MiB device-local heap",
            mib(total),
            dev.name,
            mib(dev.device_local_bytes)
        ));
    }
    Ok(())
}

/// What a caller's backend is built from, once the Vulkan side exists ([`MakeBackend`]).
pub struct BackendParts<'a> {
    /// The backend the run resolved (`--backend`): it decided the slots' memory (host-mapped for
    /// `cpu`, exportable for `cuda`/`hip`) and the sync plan.
    pub kind: BackendKind,
    /// The Vulkan device's UUID (open the compute API's device with it).
    pub device_uuid: [u8; 16],
    pub slots: &'a [Slot],
    pub sems: &'a FrameSemaphores,
    pub plan: &'a SyncPlan,
    /// Whether the plan's semaphores were made exportable for the compute API
    /// ([`export_semaphores`]).
    pub export_semaphores: bool,
}

/// A backend the caller builds in place of the one `--backend` names, in the same place of
/// [`Session`]'s construction (after the slots and semaphores, before the protocol): the run is
/// otherwise the app's own: device choice, sync plan, renderer, report. Called at most once per
/// session, only once the device and the plan are settled.
pub trait MakeBackend {
    fn make(&mut self, parts: BackendParts<'_>) -> Result<Box<dyn ComputeBackend>, ComputeError>;
}

/// One run's Vulkan device, slots, protocol and compute backend.
pub struct Session {
    // Field order is teardown order (docs/ARCHITECTURE.md, "Teardown order"): the protocol first (joins the bridge, waits for
    // the queue and the stream, drops the backend and with it every import), then the slots'
    // Vulkan memory, then the device.
    pub sync: FrameSync,
    /// `--post`: the K scene/output pairs (after the protocol: the backend that maps or imports
    /// them is dropped with it).
    pub post: Option<PostImages>,
    /// Vulkan timestamps → host clock, for the profiler (None: the queue has no timestamps).
    pub clock: Option<GpuClock>,
    pub slots: Vec<Slot>,
    pub ctx: Arc<Context>,
    pub grid: Grid,
    /// `--envs`: height fields in each slot, `(envs, rows, cols)`.
    pub envs: u32,
    /// `--views`: cameras per frame (the renderer's layers).
    pub views: u32,
    pub device_reason: String,
    pub backend_reason: String,
}

impl Session {
    /// Build everything for `args` on `instance`; `swapchain` enables presenting.
    pub fn new(instance: Arc<Instance>, args: &CommonArgs, swapchain: bool) -> Result<Self, SessionError> {
        Self::build(instance, args, swapchain, None, DEFAULT_POST_EXTENT, None)
    }

    /// [`Session::new`] with the post stage's images (`--post`) of `post_extent` (the offscreen
    /// target's or the window's size).
    pub fn with_post_extent(
        instance: Arc<Instance>,
        args: &CommonArgs,
        post_extent: ash::vk::Extent2D,
    ) -> Result<Self, SessionError> {
        Self::build(instance, args, false, None, post_extent, None)
    }

    /// [`Session::with_post_extent`] with the backend `maker` builds instead of `--backend`'s
    /// (None: `--backend`'s).
    pub fn with_backend(
        instance: Arc<Instance>,
        args: &CommonArgs,
        post_extent: ash::vk::Extent2D,
        maker: Option<&mut (dyn MakeBackend + '_)>,
    ) -> Result<Self, SessionError> {
        Self::build(instance, args, false, None, post_extent, maker)
    }

    /// [`Session::new`] for a window: only a device that can present to `surface` is chosen
    /// ([`Surface::present_problem`]); where none can, a [`VkError::CannotPresent`] naming the
    /// device and `display`. `maker` as in [`Session::with_backend`].
    pub fn for_window(
        instance: Arc<Instance>,
        args: &CommonArgs,
        surface: &Surface,
        display: &str,
        post_extent: ash::vk::Extent2D,
        maker: Option<&mut (dyn MakeBackend + '_)>,
    ) -> Result<Self, SessionError> {
        Self::build(instance, args, true, Some((surface, display)), post_extent, maker)
    }

    fn build(
        instance: Arc<Instance>,
        args: &CommonArgs,
        swapchain: bool,
        window: Option<(&Surface, &str)>,
        post_extent: ash::vk::Extent2D,
        maker: Option<&mut (dyn MakeBackend + '_)>,
    ) -> Result<Self, SessionError> {
        if maker.is_none() {
            prewarm(args.backend, args.device);
        }
        crate::profile::set_gpu_timing(args.gpu_timing == crate::cli::OnOff::On);
        let mut devices = enumerate(&instance)?;
        if let Some((surface, display)) = window {
            for d in devices.iter_mut().filter(|d| d.usable()) {
                d.cannot_present = surface.present_problem(d, display);
            }
        }
        startup_mark("Vulkan instance made, devices enumerated");
        // Before the backend's checks, which would otherwise answer for a device that is not there.
        let device = resolve_device_arg(args.device, &devices)?;
        if let Some(index) = device.filter(|&i| i >= devices.len()) {
            return Err(VkError::BadDeviceIndex { index, count: devices.len() }.into());
        }
        let choice = choose_backend(args.backend, &devices, device)?;
        startup_mark("compute devices probed");
        let uuids: Vec<[u8; 16]> = choice.compute_devices.iter().map(|c| c.uuid).collect();
        let (index, mut device_reason) = choose_device(&devices, device, &uuids)?;
        if let Some(asked @ crate::vk::device::DeviceArg::Cuda(_)) = args.device {
            device_reason = format!("--device {asked}: the GPU with that CUDA device's UUID");
        }
        let physical = devices[index].clone();
        log::info!(
            "backend {} ({}); Vulkan device {} '{}' ({device_reason})",
            choice.kind,
            choice.reason,
            index,
            physical.name
        );
        // Every sync decision, once: mode, K/R/B, exports, fallback.
        let mut request = SyncRequest::from(args);
        if swapchain {
            request.frames_in_flight.get_or_insert(default_frames_in_flight(true) as u32);
            request.window = true;
        }
        let plan = SyncPlan::resolve(&request, choice.kind, &physical)?;
        let slots_n = plan.slots;
        check_grid(args.grid, slots_n, &physical)?;
        if args.envs > 1 {
            // `--envs`: (E, rows, cols) in each slot, written in one launch by every backend
            // (the CUDA/HIP kernel's gridDim.z, the compute shader's dispatch z) or by the
            // caller's writer (`maker`).
            crate::vk::views::check_heights(&physical, args.envs, args.grid)?;
        }
        let staged = plan.memory == MemoryPath::Staged;
        let interop = choice.kind.imports_memory() && !staged;
        if interop && !physical.memory_export {
            return Err(VkError::Unsupported(format!(
                "--backend {}: {} cannot export memory as OPAQUE_FD (VK_KHR_external_memory_fd)",
                choice.kind, physical.name
            ))
            .into());
        }
        // The kernel in Vulkan's queue is CUDA's too: the device must be one CUDA sees.
        let in_queue = choice.kind == BackendKind::CudaInVulkan;
        if (interop || in_queue) && !uuids.contains(&physical.uuid) {
            return Err(ComputeError::Unavailable {
                backend: choice.kind.name(),
                reason: format!(
                    "Vulkan device '{}' (UUID {}) is not one of the {} devices: {}",
                    physical.name,
                    uuid_string(&physical.uuid),
                    choice.kind,
                    choice
                        .compute_devices
                        .iter()
                        .map(|c| format!("'{}' {}", c.name, uuid_string(&c.uuid)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
            .into());
        }
        let device_uuid = physical.uuid;
        let ctx = Context::new_with(instance, physical, swapchain, in_queue)?;
        startup_mark("Vulkan device created");
        // Calibrate while the queue is still idle.
        let clock = GpuClock::new(&ctx)?;

        // Export: slots and (for GPU-side modes) the semaphores the compute API will import.
        let memory = if choice.kind == BackendKind::Cpu || staged {
            SlotMemory::HostMapped
        } else {
            SlotMemory::DeviceLocal
        };
        let slots = (0..slots_n)
            .map(|_| Slot::new(&ctx, args.grid.bytes() * args.envs as u64, memory, interop))
            .collect::<Result<Vec<_>, _>>()?;
        let export_sems = interop && plan.export != Export::Nothing;
        let sems = FrameSemaphores::new(&ctx, &plan)?;
        startup_mark("clock calibrated, slots and semaphores made");
        crate::vk::instance::set_foreign_signals(export_sems);

        // Import: the backend takes what it needs.
        let backend: Box<dyn ComputeBackend> = match (maker, choice.kind) {
            (Some(maker), kind) => maker.make(BackendParts {
                kind,
                device_uuid,
                slots: &slots,
                sems: &sems,
                plan: &plan,
                export_semaphores: export_sems,
            })?,
            (None, kind) => match kind {
                BackendKind::Cpu => Box::new(CpuBackend::new(&slots)?),
                BackendKind::Vulkan => Box::new(VulkanBackend::new(&ctx, &slots, sems.handles())?),
                BackendKind::CudaInVulkan => {
                    Box::new(VulkanBackend::with_cuda_kernel(&ctx, &slots, sems.handles())?)
                }
                BackendKind::Cuda if staged => staged_backend(device_uuid, &slots)?,
                BackendKind::Cuda | BackendKind::Hip => {
                    let memory = export_memory(&slots)?;
                    let semaphores =
                        if export_sems { export_semaphores(&sems)? } else { InteropSemaphores::default() };
                    interop_backend(choice.kind, device_uuid, memory, semaphores, &plan)?
                }
                BackendKind::Auto => {
                    return Err(
                        ComputeError::Unsupported { backend: "auto", reason: "not resolved".into() }.into()
                    )
                }
            },
        };
        startup_mark("compute backend ready (memory and semaphores imported)");
        let mut backend = backend;
        let post = if plan.post == PostKind::None {
            None
        } else {
            let access = match choice.kind {
                BackendKind::Cpu => PostAccess::Mapped,
                k if k.imports_memory() => PostAccess::Exported,
                _ => PostAccess::Images,
            };
            let images = PostImages::new(&ctx, post_extent, plan.slots, access)?;
            let mut resources = post_resources(&images, plan.post)?;
            // Only the timelines a GPU-synced post waits on and signals (`external`; `host-wait`
            // imports timelines too); with binary pairs they are not exportable, and the post
            // hand-off runs host-synchronously.
            if export_sems && plan.export == Export::Timelines {
                if let Some(t) = &sems.post {
                    resources.semaphores =
                        Some(PostSemaphores { posted: t.posted.export()?, presented: t.presented.export()? });
                }
            }
            // A backend without a filter refuses here, before the first frame (exit 2).
            backend.attach_post(resources)?;
            startup_mark("post stage attached");
            Some(images)
        };
        let sync = FrameSync::new(&ctx, plan, sems, backend)?;
        Ok(Session {
            sync,
            post,
            clock,
            slots,
            ctx,
            grid: args.grid,
            envs: args.envs,
            views: args.views,
            device_reason,
            backend_reason: choice.reason,
        })
    }
}

/// What the backend's `attach_post` takes: each pair of `images` as the backend reaches it
/// (exported memory gets a new fd each call); no semaphores yet.
pub fn post_resources(images: &PostImages, kind: PostKind) -> Result<PostResources, VkError> {
    let surface =
        |img: &PostImage, host: Option<&crate::vk::memory::HostBuffer>| -> Result<PostSurface, VkError> {
            Ok(match (images.access, img, host) {
                (PostAccess::Mapped, _, Some(b)) => {
                    PostSurface::Mapped { ptr: b.mapped_ptr(), len: b.size as usize }
                }
                (PostAccess::Exported, PostImage::Shared(s), _) => PostSurface::Exported(s.image.export()?),
                _ => PostSurface::Image { image: img.image(), view: img.view() },
            })
        };
    let pairs = images
        .pairs
        .iter()
        .map(|p| {
            Ok(PostPair {
                scene: surface(&p.scene, p.host.as_ref().map(|h| &h.0))?,
                output: surface(&p.output, p.host.as_ref().map(|h| &h.1))?,
            })
        })
        .collect::<Result<_, VkError>>()?;
    Ok(PostResources {
        kind,
        width: images.extent.width,
        height: images.extent.height,
        pairs,
        semaphores: None,
    })
}

/// Start loading the compute API (driver, contexts, kernel) in the background, so it overlaps the
/// Vulkan set-up, when the backend may be CUDA. Idempotent; call it as early as possible.
///
/// Only the GPU the run will use: `--device cuda:N`'s, else (no `--device`) CUDA device 0, the
/// default's usual match; a Vulkan index (`--device N`) does not say which CUDA device it is
/// before Vulkan is up, so then every device. One process per GPU (torchrun) so opens a context
/// on its own GPU only.
pub fn prewarm(backend: BackendKind, device: Option<crate::vk::device::DeviceArg>) {
    use crate::vk::device::DeviceArg;
    if matches!(backend, BackendKind::Cuda | BackendKind::Auto) {
        crate::compute::cuda::prewarm(match device {
            None => Some(0),
            Some(DeviceArg::Cuda(n)) => Some(n),
            Some(DeviceArg::Vulkan(_)) => None,
        });
    }
}

/// Export every slot's memory as OPAQUE_FD with the sizes an importer needs.
pub fn export_memory(slots: &[Slot]) -> Result<Vec<InteropMemory>, VkError> {
    slots
        .iter()
        .map(|slot| {
            let m = slot.export()?;
            Ok(InteropMemory {
                fd: m.fd,
                allocation_size: m.allocation_size,
                buffer_size: m.size,
                dedicated: m.dedicated,
            })
        })
        .collect()
}

/// Export the semaphores of the mode in use.
pub fn export_semaphores(sems: &FrameSemaphores) -> Result<InteropSemaphores, VkError> {
    let timeline = if sems.binary.is_empty() {
        Some(InteropSemaphorePair { computed: sems.computed.export()?, rendered: sems.rendered.export()? })
    } else {
        None
    };
    let binary = sems
        .binary
        .iter()
        .map(|(c, r)| Ok(InteropSemaphorePair { computed: c.export()?, rendered: r.export()? }))
        .collect::<Result<_, VkError>>()?;
    Ok(InteropSemaphores { timeline, binary })
}

fn interop_backend(
    kind: BackendKind,
    uuid: [u8; 16],
    memory: Vec<InteropMemory>,
    semaphores: InteropSemaphores,
    plan: &SyncPlan,
) -> Result<Box<dyn ComputeBackend>, ComputeError> {
    match kind {
        BackendKind::Cuda => Ok(Box::new(crate::compute::cuda::CudaBackend::new(uuid, memory, semaphores)?)),
        #[cfg(feature = "hip")]
        BackendKind::Hip => Ok(Box::new(crate::compute::hip::HipBackend::new(
            uuid,
            memory,
            semaphores,
            plan.export == Export::Timelines,
        )?)),
        _ => {
            let _ = (uuid, memory, semaphores, plan);
            Err(ComputeError::Unavailable { backend: kind.name(), reason: "not built in".into() })
        }
    }
}

/// `--memory staged`: CUDA writes its own buffer and copies it through host memory into the
/// host-mapped slots.
fn staged_backend(uuid: [u8; 16], slots: &[Slot]) -> Result<Box<dyn ComputeBackend>, ComputeError> {
    Ok(Box::new(crate::compute::cuda::CudaStagedBackend::new(uuid, slots)?))
}

/// Bit pattern written into a slot before a checked frame: a quiet NaN, which no writer produces
/// and every comparison rejects.
pub const POISON: u32 = 0x7fc0_dead;

impl Session {
    /// Fill `slot` with [`POISON`] on the GPU, after `rendered ≥ after_rendered` (the slot's
    /// previous readers), and wait for it. A barrier orders the fill before every later command.
    pub fn poison_slot(&self, slot: usize, after_rendered: u64) -> Result<(), VkError> {
        self.fill_slot(slot, 0, ash::vk::WHOLE_SIZE, POISON, after_rendered)
    }

    /// Fill `size` bytes of `slot` at `offset` with the 32-bit `pattern` (see [`Self::poison_slot`]).
    pub fn fill_slot(
        &self,
        slot: usize,
        offset: u64,
        size: u64,
        pattern: u32,
        after_rendered: u64,
    ) -> Result<(), VkError> {
        use ash::vk;
        let buffer = self.slots[slot].buffer;
        let d = &self.ctx.device;
        let waits: Vec<_> = (after_rendered > 0)
            .then_some((self.sync.sems.rendered.handle, after_rendered, vk::PipelineStageFlags::TRANSFER))
            .into_iter()
            .collect();
        self.ctx.one_shot(&waits, |cmd| {
            // SAFETY: recording into the one-shot command buffer; the buffer is a live slot.
            unsafe {
                d.cmd_fill_buffer(cmd, buffer, offset, size, pattern);
                cmd_memory_barrier(
                    d,
                    cmd,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (
                        vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST,
                        vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
                    ),
                );
            }
        })
    }

    /// Read `slot` back through Vulkan once `waits` (semaphore, value) are reached.
    pub fn read_slot(&self, slot: usize, waits: &[(ash::vk::Semaphore, u64)]) -> Result<Vec<f32>, VkError> {
        let slot = &self.slots[slot];
        crate::vk::memory::read_back(&self.ctx, slot.buffer, slot.size, waits)
    }
}
