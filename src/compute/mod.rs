//! The compute side: one small trait, four implementations.
//!
//! | backend  | writes the slot with                    | memory                      | GPU-side sync |
//! |----------|-----------------------------------------|-----------------------------|---------------|
//! | `cpu`    | the CPU reference, through a mapping    | host-visible Vulkan memory  | no            |
//! | `vulkan` | a compute shader on the render device   | the slot buffers themselves | yes (native)  |
//! | `cuda`   | `kernels/sinewave.hip` via NVRTC        | imported OPAQUE_FD          | yes (imported)|
//! | `hip`    | `kernels/sinewave.hip` via hiprtc       | imported OPAQUE_FD          | not on Linux  |
//! | `cuda-in-vulkan` | `kernels/sinewave.hip` via NVRTC, launched in Vulkan's queue | the slot buffers (device addresses) | yes (native) |
//!
//! The post stage (`--post outline`, [`post`]) has one filter, [`post::outline_reference`], and
//! every GPU backend computes its bytes: `vulkan` with `shaders/outline.comp`
//! ([`outline::OutlineShader`], recorded into the frame's command buffer), `cuda-in-vulkan` with
//! `kernels/outline.hip` in Vulkan's queue on `VK_NVX_image_view_handle` handles
//! ([`cuda::in_vulkan::OutlineInVulkan`]), `cuda` and `hip` with the same kernel on their stream
//! over imported images ([`post_stage::PostStage`]; `hip` host-synchronous only).
//!
//! A backend is created after the Vulkan side exists: it receives what it needs to reach the slots
//! ([`InteropMemory`] fds for the interop APIs, mappings for `cpu`, the buffers for `vulkan`) and,
//! where it waits and signals on the GPU, the semaphores ([`InteropSemaphores`]). Which of its two
//! entry points is called, and when, is decided in one place only: [`crate::sync`].

pub mod cpu;
pub mod cuda;
pub mod fd;
#[cfg(feature = "hip")]
pub mod hip;
pub mod imported;
pub mod kernel;
pub mod outline;
pub mod post;
pub mod post_stage;
pub mod timing;
pub mod vulkan;

use crate::profile::clock::ClockInfo;
use crate::profile::Span;
use crate::sim::WaveParams;
use fd::ImportFd;

/// Who writes the height field (`--backend`; [`BackendKind::ALL`] lists them, [`BackendKind::help`]
/// says what each is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Auto,
    Cpu,
    Vulkan,
    Cuda,
    Hip,
    CudaInVulkan,
}

impl BackendKind {
    /// Every backend, in the order `--help` lists them.
    pub const ALL: [BackendKind; 6] = [
        BackendKind::Auto,
        BackendKind::Cpu,
        BackendKind::Vulkan,
        BackendKind::Cuda,
        BackendKind::Hip,
        BackendKind::CudaInVulkan,
    ];

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            BackendKind::Auto => "an interop backend whose device matches the Vulkan device (cuda, then hip), else vulkan",
            BackendKind::Cpu => "the host writes each slot through a persistent mapping (the CPU reference itself)",
            BackendKind::Vulkan => "a compute shader on the render device: no interop, the baseline",
            BackendKind::Cuda => "NVIDIA: CUDA driver API + NVRTC, loaded at run time",
            BackendKind::Hip => "AMD: HIP + hiprtc (build with `--features hip`)",
            BackendKind::CudaInVulkan => {
                "NVIDIA, experimental: the CUDA kernel runs inside Vulkan's own queue (VK_NVX_binary_import), \
                 with no shared memory or semaphores and no hand-off. Never `auto`"
            }
        }
    }

    /// The `--backend` value.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Auto => "auto",
            BackendKind::Cpu => "cpu",
            BackendKind::Vulkan => "vulkan",
            BackendKind::Cuda => "cuda",
            BackendKind::Hip => "hip",
            BackendKind::CudaInVulkan => "cuda-in-vulkan",
        }
    }

    /// Whether the backend reaches the slots through exported (OPAQUE_FD) memory.
    pub fn imports_memory(self) -> bool {
        matches!(self, BackendKind::Cuda | BackendKind::Hip)
    }

    /// How the slot's writer is launched, for the report and the trace.
    pub fn launch_path(self) -> &'static str {
        match self {
            BackendKind::Auto => "not resolved",
            BackendKind::Cpu => "host writes through a mapping",
            BackendKind::Vulkan => "vkCmdDispatch in the Vulkan queue",
            BackendKind::Cuda => "cuLaunchKernel on a CUDA stream (imported memory and semaphores)",
            BackendKind::Hip => "hipModuleLaunchKernel on a HIP stream (imported memory)",
            BackendKind::CudaInVulkan => "vkCmdCuLaunchKernelNVX in the Vulkan queue (VK_NVX_binary_import)",
        }
    }

    /// Whether the slot is written by work submitted to the render device's own queue (a compute
    /// shader, or a CUDA kernel in a Vulkan command buffer): the same protocol and the same
    /// rules, no interop.
    pub fn on_vulkan_queue(self) -> bool {
        matches!(self, BackendKind::Vulkan | BackendKind::CudaInVulkan)
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A device an interop API can see (for `vkhip info` and for matching against Vulkan devices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeDeviceInfo {
    /// "cuda" or "hip".
    pub api: &'static str,
    /// The API's device ordinal.
    pub ordinal: i32,
    pub name: String,
    /// The UUID to compare with `VkPhysicalDeviceIDProperties::deviceUUID`.
    pub uuid: [u8; 16],
    /// Free text for `info`: architecture, memory, driver version, how the UUID was obtained.
    pub detail: String,
}

/// Errors from a compute backend. `Unavailable` is an environment gap (the CLI exits 2).
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// The backend cannot run here at all (no library, no device, not built in).
    #[error("backend {backend} is not available: {reason}")]
    Unavailable { backend: &'static str, reason: String },
    /// The backend cannot do what was asked (e.g. a sync mode it does not implement).
    #[error("backend {backend}: {reason}")]
    Unsupported { backend: &'static str, reason: String },
    /// A call into the compute API failed.
    #[error("{api} call {call} failed: {message}")]
    Api { api: &'static str, call: &'static str, message: String },
    /// The run-time compiler rejected the kernel `kernels/{file}`.
    #[error("{api}: compiling kernels/{file} failed: {log}")]
    Compile { api: &'static str, file: &'static str, log: String },
    /// A Vulkan call made by a backend (the vulkan backend, or host-side sync) failed; the error
    /// keeps the call and its `VkResult`.
    #[error("vulkan: {0}")]
    Vulkan(#[from] crate::vk::VkError),
    /// A call into the interop crate failed: it keeps the API, the call and its numeric status.
    #[error(transparent)]
    Interop(#[from] vkhip_interop::Error),
}

impl ComputeError {
    /// An environment gap or an impossible request (exit code 2) rather than a failure.
    pub fn is_environment(&self) -> bool {
        match self {
            ComputeError::Unavailable { .. } | ComputeError::Unsupported { .. } => true,
            ComputeError::Interop(e) => e.is_environment(),
            ComputeError::Vulkan(e) => e.is_environment(),
            _ => false,
        }
    }
}

/// `Err` with the compute API's real failure for `call` if the fault `point` fires now
/// (`VKHIP_FAULT`; for the CUDA and HIP backends, before the real call).
pub(crate) fn inject_fault(
    point: crate::fault::Fault,
    api: &'static str,
    call: &'static str,
) -> Result<(), ComputeError> {
    if crate::fault::hit(point) {
        return Err(ComputeError::Api {
            api,
            call,
            message: format!(
                "{} (injected by {}={})",
                point.compute_status(),
                crate::fault::ENV,
                point.name()
            ),
        });
    }
    Ok(())
}

/// Raw handles of the protocol's semaphores, for a backend that waits and signals on the render
/// device's own queue (valid while `crate::sync::FrameSemaphores` lives).
#[derive(Clone, Debug)]
pub struct SemaphoreHandles {
    pub computed: ash::vk::Semaphore,
    pub rendered: ash::vk::Semaphore,
    pub binary: Vec<(ash::vk::Semaphore, ash::vk::Semaphore)>,
}

/// GPU-side synchronisation for one frame, for backends that wait and signal on their own queue
/// or stream. Values follow [`crate::sync`]: frame f is `f + 1` on both timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuSync {
    /// Timeline semaphores: wait `rendered ≥ wait_rendered` (None: no wait — the first K
    /// frames, or a frame inside a batch), run, then signal `computed = signal_computed` (None:
    /// no signal — a frame before the last of a batch).
    Timeline { wait_rendered: Option<u64>, signal_computed: Option<u64> },
    /// The reference samples' scheme: binary semaphore pair `slot`; wait its `rendered` (unless it
    /// has not been signalled yet), run, signal its `computed`.
    Binary { slot: usize, wait_rendered: bool },
}

/// An imported semaphore, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemaphoreRef {
    TimelineRendered,
    TimelineComputed,
    BinaryRendered(usize),
    BinaryComputed(usize),
}

/// One semaphore operation (`value` is ignored for binary semaphores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemaphoreOp {
    pub semaphore: SemaphoreRef,
    pub value: u64,
}

/// What `enqueue_gpu_synced` does around the kernel, on the backend's stream or queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemaphoreOps {
    pub wait: Option<SemaphoreOp>,
    pub signal: Option<SemaphoreOp>,
}

/// The operations for `sync`, given what `backend` has: a timeline pair or not, and how many
/// binary pairs. Missing semaphores are [`ComputeError::Unsupported`]. Every backend that waits
/// and signals on the GPU uses this one rule, then maps each [`SemaphoreRef`] to its own handle.
///
/// # Examples
///
/// ```
/// use vkhip::compute::{semaphore_ops, GpuSync, SemaphoreOp, SemaphoreRef};
///
/// // Frame 4 with K = 3: wait `rendered` ≥ 2 (frame 1's draw), signal `computed` = 5.
/// let plan = semaphore_ops("cuda", GpuSync::Timeline { wait_rendered: Some(2), signal_computed: Some(5) }, true, 0)
///     .unwrap();
/// assert_eq!(plan.wait, Some(SemaphoreOp { semaphore: SemaphoreRef::TimelineRendered, value: 2 }));
/// assert_eq!(plan.signal, Some(SemaphoreOp { semaphore: SemaphoreRef::TimelineComputed, value: 5 }));
/// // Asking for a scheme whose semaphores were not imported is an error, not a silent no-op.
/// assert!(semaphore_ops("hip", GpuSync::Binary { slot: 0, wait_rendered: false }, false, 0).is_err());
/// ```
pub fn semaphore_ops(
    backend: &'static str,
    sync: GpuSync,
    has_timeline: bool,
    binary_pairs: usize,
) -> Result<SemaphoreOps, ComputeError> {
    match sync {
        GpuSync::Timeline { wait_rendered, signal_computed } => {
            if !has_timeline {
                return Err(ComputeError::Unsupported {
                    backend,
                    reason: "timeline sync requested but no timeline semaphores were imported".into(),
                });
            }
            Ok(SemaphoreOps {
                wait: wait_rendered
                    .map(|value| SemaphoreOp { semaphore: SemaphoreRef::TimelineRendered, value }),
                signal: signal_computed
                    .map(|value| SemaphoreOp { semaphore: SemaphoreRef::TimelineComputed, value }),
            })
        }
        GpuSync::Binary { slot, wait_rendered } => {
            if slot >= binary_pairs {
                return Err(ComputeError::Unsupported {
                    backend,
                    reason: format!(
                        "binary sync for slot {slot} requested but {binary_pairs} binary \
                         semaphore pair(s) were imported"
                    ),
                });
            }
            Ok(SemaphoreOps {
                wait: wait_rendered
                    .then_some(SemaphoreOp { semaphore: SemaphoreRef::BinaryRendered(slot), value: 0 }),
                signal: Some(SemaphoreOp { semaphore: SemaphoreRef::BinaryComputed(slot), value: 0 }),
            })
        }
    }
}

/// Which GPU-side schemes a backend implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSyncSupport {
    pub timeline: bool,
    pub binary: bool,
}

/// One slot's exported memory, on its way to an interop API.
#[derive(Debug)]
pub struct InteropMemory {
    pub fd: ImportFd,
    /// Import size: `VkMemoryRequirements::size` of the allocation (not the buffer size).
    pub allocation_size: u64,
    /// The bytes to map: the buffer's range, starting at offset 0 of the allocation.
    pub buffer_size: u64,
    /// The allocation is dedicated to the buffer (set the DEDICATED flag on import).
    pub dedicated: bool,
}

impl InteropMemory {
    /// Refuse sizes an importer cannot map: an empty buffer, or one larger than its allocation.
    pub fn check_sizes(&self, backend: &'static str) -> Result<(), ComputeError> {
        if self.buffer_size == 0 || self.buffer_size > self.allocation_size {
            return Err(ComputeError::Unsupported {
                backend,
                reason: format!(
                    "buffer size {} does not fit the allocation size {}",
                    self.buffer_size, self.allocation_size
                ),
            });
        }
        Ok(())
    }
}

/// The interop crate's description of the same export (`buffer_size` is its `size`).
impl From<InteropMemory> for vkhip_interop::ExportedMemory {
    fn from(m: InteropMemory) -> Self {
        vkhip_interop::ExportedMemory {
            fd: m.fd,
            allocation_size: m.allocation_size,
            size: m.buffer_size,
            dedicated: m.dedicated,
        }
    }
}

/// A pair of exported semaphores, on their way to an interop API.
#[derive(Debug)]
pub struct InteropSemaphorePair {
    /// Signalled by the compute side when a slot holds its frame.
    pub computed: ImportFd,
    /// Signalled by Vulkan when the draw that read a slot has finished.
    pub rendered: ImportFd,
}

/// Exported semaphores for GPU-side sync (`--sync external` and `--sync binary`).
#[derive(Debug, Default)]
pub struct InteropSemaphores {
    /// Timeline semaphores (OPAQUE_FD), for `external`.
    pub timeline: Option<InteropSemaphorePair>,
    /// One binary pair per slot, for the reference samples' scheme.
    pub binary: Vec<InteropSemaphorePair>,
}

/// The compute side of the renderer. Every call comes from one thread at a time (the render thread,
/// the bridge thread in `bridged` mode, or the submission thread in `external` off Vulkan's
/// queue); [`crate::sync`] decides which call and when.
pub trait ComputeBackend: Send {
    /// `cpu`, `vulkan`, `cuda`, `hip`.
    fn kind(&self) -> BackendKind;

    /// Human-readable device, for the frame report.
    fn device_name(&self) -> String;

    /// Which GPU-side schemes [`ComputeBackend::enqueue_gpu_synced`] accepts.
    fn gpu_sync_support(&self) -> GpuSyncSupport;

    /// GPU-side path: enqueue wait → kernel (write `slot` for `params`) → signal for `frame`, and
    /// return at once. The host does not wait for anything the compute API signals.
    fn enqueue_gpu_synced(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
        sync: GpuSync,
    ) -> Result<(), ComputeError>;

    /// GPU-side path for a batch: `frames` (frame, slot, params), written in order behind
    /// `sync`'s wait and before its signal, with no signal between them (see [`crate::sync`],
    /// "Run-ahead and batches"). Returns at once. The default enqueues frame by frame; a backend
    /// may write the whole batch with one launch.
    fn enqueue_batch_gpu_synced(
        &mut self,
        frames: &[(u64, usize, WaveParams)],
        sync: GpuSync,
    ) -> Result<(), ComputeError> {
        enqueue_frame_by_frame(self, frames, sync)
    }

    /// Host-synchronous path (`bridged`, `blocking`): write `slot` for `params` and return when the
    /// values are complete and visible to Vulkan. The wait uses the API's own event or fence.
    fn write_slot_and_wait(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
    ) -> Result<(), ComputeError>;

    /// One-submission frames (backends on Vulkan's queue; see [`crate::sync`], "One submission
    /// per frame"): record the write of `slot` for `params` into `cmd`, the caller's command
    /// buffer on the render device, and nothing else: no barrier, no timestamp, no submission.
    /// The caller orders it with barriers before and after.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the render device in the recording state, outside a render
    /// pass, and is not submitted after the backend is dropped.
    unsafe fn record_write(
        &mut self,
        _cmd: ash::vk::CommandBuffer,
        _slot: usize,
        _params: &WaveParams,
    ) -> Result<(), ComputeError> {
        Err(ComputeError::Unsupported {
            backend: self.kind().name(),
            reason: "its writes cannot be recorded into a Vulkan command buffer".into(),
        })
    }

    /// Post stage (`--post`, [`post`]): take over the K scene/output pairs and the post
    /// timelines, import what the backend needs, build its filter. Called once, after the
    /// backend is created and before the first frame. Backends without a post filter say so.
    fn attach_post(&mut self, _post: post::PostResources) -> Result<(), ComputeError> {
        Err(ComputeError::Unsupported {
            backend: self.kind().name(),
            reason: "no post-process filter for this backend".into(),
        })
    }

    /// Post stage, GPU-side path: enqueue wait → filter pair `pair` (scene → output) → signal
    /// for `frame`, as `sync` says, and return at once.
    fn enqueue_post_gpu_synced(
        &mut self,
        _frame: u64,
        _pair: usize,
        _sync: post::PostSync,
    ) -> Result<(), ComputeError> {
        Err(ComputeError::Unsupported {
            backend: self.kind().name(),
            reason: "its post filter cannot wait and signal on the GPU".into(),
        })
    }

    /// Whether [`ComputeBackend::post_and_wait`] times the filter on the GPU: a
    /// [`crate::profile::Phase::PostFilter`] span on the compute track through
    /// [`ComputeBackend::take_spans`]. When not, the caller times it on the host around the call
    /// (the kernel ran inside that window).
    fn post_and_wait_timed(&mut self) -> bool {
        false
    }

    /// Post stage, host-synchronous path (`bridged`, `none`): filter pair `pair` for `frame` and
    /// return when the output is complete and visible to Vulkan.
    fn post_and_wait(&mut self, _frame: u64, _pair: usize) -> Result<(), ComputeError> {
        Err(ComputeError::Unsupported {
            backend: self.kind().name(),
            reason: "its post filter cannot run host-synchronously".into(),
        })
    }

    /// Post stage on Vulkan's queue (`vulkan`, `cuda-in-vulkan`): record the filter of pair
    /// `pair` into `cmd` and nothing else (no barrier, no timestamp); the caller orders it.
    ///
    /// # Safety
    /// As [`ComputeBackend::record_write`]; both images of the pair are in layout `GENERAL`.
    unsafe fn record_post(&mut self, _cmd: ash::vk::CommandBuffer, _pair: usize) -> Result<(), ComputeError> {
        Err(ComputeError::Unsupported {
            backend: self.kind().name(),
            reason: "its post filter cannot be recorded into a Vulkan command buffer".into(),
        })
    }

    /// Move the GPU spans of finished frames measured so far into `out` (the profiler's
    /// timeline; see [`crate::profile`]). Never blocks; backends without GPU timing add nothing.
    fn take_spans(&mut self, _out: &mut Vec<Span>) {}

    /// How this backend's GPU times are put on the host clock (None: it reports host or Vulkan
    /// times only).
    fn clock_info(&self) -> Option<ClockInfo> {
        None
    }

    /// Wait until everything this backend has enqueued has finished (teardown, mode switches).
    fn finish(&mut self) -> Result<(), ComputeError>;

    /// Time the kernel writing `slot` against a plain fill of the same bytes (`vkhip
    /// bench-kernel`), with the API's own events. Backends without one say so.
    fn benchmark(
        &mut self,
        _slot: usize,
        _params: &WaveParams,
        _iterations: u32,
    ) -> Result<KernelBenchmark, ComputeError> {
        Err(ComputeError::Unsupported {
            backend: self.kind().name(),
            reason: "no kernel benchmark for this backend (use --backend cuda or hip)".into(),
        })
    }

    /// Free and total device memory as the compute API sees it (leak checks), if it can tell.
    fn device_memory(&self) -> Option<Result<(u64, u64), ComputeError>> {
        None
    }
}

/// [`ComputeBackend::enqueue_batch_gpu_synced`]'s default: `frames` one by one through
/// `enqueue_gpu_synced`, the first waiting and the last signalling (binary sync takes one frame).
pub fn enqueue_frame_by_frame<B: ComputeBackend + ?Sized>(
    backend: &mut B,
    frames: &[(u64, usize, WaveParams)],
    sync: GpuSync,
) -> Result<(), ComputeError> {
    let n = frames.len();
    for (i, &(frame, slot, ref params)) in frames.iter().enumerate() {
        let per_frame = match sync {
            GpuSync::Timeline { wait_rendered, signal_computed } => GpuSync::Timeline {
                wait_rendered: wait_rendered.filter(|_| i == 0),
                signal_computed: signal_computed.filter(|_| i + 1 == n),
            },
            binary @ GpuSync::Binary { .. } if n == 1 => binary,
            GpuSync::Binary { .. } => {
                return Err(ComputeError::Unsupported {
                    backend: backend.kind().name(),
                    reason: "binary semaphores cannot batch: each signal pairs with one wait".into(),
                })
            }
        };
        backend.enqueue_gpu_synced(frame, slot, params, per_frame)?;
    }
    Ok(())
}

/// Kernel time against a plain fill (memset) of the same buffer, both timed with the compute
/// API's own events on one stream in the same run (`vkhip bench-kernel`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelBenchmark {
    /// Per-launch kernel times, microseconds.
    pub kernel_us: Vec<f64>,
    /// Per-launch fill times over the same bytes, microseconds.
    pub fill_us: Vec<f64>,
    /// What the fill was (e.g. "cuMemsetD32Async").
    pub fill_name: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before (issue 33): every rejected kernel read "compiling kernels/sinewave.hip failed",
    /// the outline filter's too.
    #[test]
    fn a_rejected_kernel_is_named_by_its_own_source() {
        let e =
            ComputeError::Compile { api: "hiprtc", file: "outline.hip", log: "no `outline` kernel".into() };
        assert_eq!(e.to_string(), "hiprtc: compiling kernels/outline.hip failed: no `outline` kernel");
        assert!(!e.is_environment());
    }

    #[test]
    fn timeline_plan_waits_only_when_asked() {
        let plan = semaphore_ops(
            "cuda",
            GpuSync::Timeline { wait_rendered: Some(3), signal_computed: Some(5) },
            true,
            0,
        )
        .unwrap();
        assert_eq!(
            plan,
            SemaphoreOps {
                wait: Some(SemaphoreOp { semaphore: SemaphoreRef::TimelineRendered, value: 3 }),
                signal: Some(SemaphoreOp { semaphore: SemaphoreRef::TimelineComputed, value: 5 }),
            }
        );
        let first = semaphore_ops(
            "cuda",
            GpuSync::Timeline { wait_rendered: None, signal_computed: Some(1) },
            true,
            0,
        )
        .unwrap();
        assert_eq!(first.wait, None);
        assert_eq!(first.signal.map(|s| s.value), Some(1));
        // Inside a batch: neither wait nor signal.
        let inner =
            semaphore_ops("cuda", GpuSync::Timeline { wait_rendered: None, signal_computed: None }, true, 0)
                .unwrap();
        assert_eq!((inner.wait, inner.signal), (None, None));
    }

    #[test]
    fn binary_plan_uses_the_slot_pair() {
        let plan = semaphore_ops("cuda", GpuSync::Binary { slot: 2, wait_rendered: true }, false, 3).unwrap();
        assert_eq!(plan.wait.map(|w| w.semaphore), Some(SemaphoreRef::BinaryRendered(2)));
        assert_eq!(plan.signal.map(|s| s.semaphore), Some(SemaphoreRef::BinaryComputed(2)));
        let no_wait =
            semaphore_ops("cuda", GpuSync::Binary { slot: 0, wait_rendered: false }, false, 3).unwrap();
        assert_eq!(no_wait.wait, None);
    }

    #[test]
    fn missing_semaphores_are_unsupported() {
        let t = semaphore_ops(
            "cuda",
            GpuSync::Timeline { wait_rendered: None, signal_computed: Some(1) },
            false,
            4,
        );
        assert!(matches!(t, Err(ComputeError::Unsupported { backend: "cuda", .. })));
        let b = semaphore_ops("cuda", GpuSync::Binary { slot: 1, wait_rendered: false }, true, 1);
        let err = b.unwrap_err();
        assert!(matches!(err, ComputeError::Unsupported { .. }));
        assert!(err.to_string().contains("slot 1"), "{err}");
    }
}
