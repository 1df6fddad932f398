//! The sync plan: every decision about a run's frame sync, made once, before anything is created.
//!
//! [`SyncPlan::resolve`] turns the request (`--sync`, `--slots`, `--run-ahead`, `--batch`,
//! `--memory`), the backend and the Vulkan device's capabilities into the mode, the pipeline
//! shape (K slots, run-ahead R, batch B), what Vulkan exports for the compute API to import, and
//! the mode to fall back to if the import fails. The session, the frame loop, `verify`, `bench`
//! and `cycles` all consume this one object; [`SyncPlan::after_import`] is the only later change
//! (the fallback, once the backend said what it imported).
//!
//! ## The schedule
//! Frames are handed to the compute side in batches of B consecutive frames starting at
//! multiples of B. The batch starting at frame s is handed over while the render thread is at
//! frame max(0, s − R), so compute runs up to R + B − 1 frames ahead of the draw. One batch is
//! one compute visit: one wait (`rendered` ≥ s + B − K: the previous reader of the batch's last
//! slot is done), B writes, one signal (`computed` = s + B). Draw f waits `computed` ≥ the end of
//! its batch. R + B ≤ K keeps every compute wait on a draw that was submitted before the batch
//! was handed over: no slot is overwritten early and nothing waits on work not yet submitted.
//!
//! # Examples
//!
//! CUDA on a device that exports timeline semaphores: `auto` resolves to `external` with the
//! GPU-side defaults, K = 8, R = 0, B = 7.
//!
//! ```
//! use vkhip::compute::BackendKind;
//! use vkhip::sync::{Export, SyncMode, SyncPlan, SyncRequest};
//! use vkhip::vk::device::PhysicalDeviceInfo;
//!
//! let gpu = PhysicalDeviceInfo { name: "H100".into(), timeline_export: true, ..Default::default() };
//! let plan = SyncPlan::resolve(&SyncRequest::mode(SyncMode::Auto), BackendKind::Cuda, &gpu).unwrap();
//! assert_eq!((plan.mode, plan.slots, plan.run_ahead, plan.batch), (SyncMode::External, 8, 0, 7));
//! assert_eq!(plan.export, Export::Timelines);
//! assert_eq!(plan.describe(), "external, 8 slot(s), run-ahead 0, batch 7");
//!
//! // Walk the hand-offs: frames 0–6 at frame 0, nothing until frame 7, then 7–13.
//! let mut handed = 0;
//! let mut handoffs = Vec::new();
//! for frame in 0..15 {
//!     let due = plan.due(frame, handed);
//!     if !due.is_empty() {
//!         handoffs.push((frame, due.clone(), plan.compute_wait_value(due.start)));
//!         handed = due.end;
//!     }
//! }
//! // Batch 7..14 (slots 7, 0–5) waits for rendered ≥ 6: draw 5, the previous reader of slot 5.
//! assert_eq!(handoffs, [(0, 0..7, None), (7, 7..14, Some(6)), (14, 14..21, Some(13))]);
//! // Every draw of a batch waits for the batch's single signal.
//! let draws = [0, 6, 7].map(|f| plan.computed_for_draw(f));
//! assert_eq!(draws, [7, 7, 14]);
//! assert_eq!(plan.lead_frames(), 6);
//!
//! // What the device cannot export, and a shape the mode cannot run, are refused with the reason.
//! let binary = SyncRequest::mode(SyncMode::Binary);
//! let err = SyncPlan::resolve(&binary, BackendKind::Cuda, &gpu).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "--sync binary with --backend cuda: H100 cannot export binary semaphores as OPAQUE_FD; use bridged"
//! );
//! let both = PhysicalDeviceInfo { binary_export: true, ..gpu.clone() };
//! let req = SyncRequest { batch: Some(4), ..binary };
//! let err = SyncPlan::resolve(&req, BackendKind::Cuda, &both).unwrap_err();
//! let text = err.to_string();
//! assert!(text.starts_with("--sync binary with --backend cuda: --batch 4 with --sync binary: "), "{text}");
//! assert!(text.ends_with("; use --sync external or bridged"), "{text}");
//! // The cpu backend cannot wait on the GPU.
//! let external = SyncRequest::mode(SyncMode::External);
//! let err = SyncPlan::resolve(&external, BackendKind::Cpu, &gpu).unwrap_err();
//! assert!(err.to_string().contains("the cpu backend cannot wait or signal on the GPU"), "{err}");
//! ```

use crate::compute::post::PostKind;
use crate::compute::{BackendKind, GpuSyncSupport};
use crate::vk::device::PhysicalDeviceInfo;
use vkhip_interop::FrameValues;

use super::{SyncError, SyncMode};

/// Most slots (K) a run may use.
pub const MAX_SLOTS: usize = 8;

/// Whether the compute side's wait on `rendered` may be skipped when the host already saw the
/// value (`--compute-wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ComputeWait {
    /// Skip the wait when the host already saw `rendered` reach the value.
    Auto,
    /// Always wait on the GPU.
    Gpu,
}

/// Which thread makes the interop compute API's calls in `external` (`--enqueue`; see "The
/// submission thread" in [`super`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enqueue {
    /// A submission thread: the render thread queues each hand-off, the thread makes the CUDA
    /// or HIP calls (wait, launch, signal). Where the plan allows it ([`SyncPlan::submission_thread`]).
    Thread,
    /// The render thread makes them itself (the shape before the submission thread; kept to
    /// compare them).
    Render,
}

impl Enqueue {
    pub fn name(self) -> &'static str {
        match self {
            Enqueue::Thread => "thread",
            Enqueue::Render => "render",
        }
    }
}

/// How the compute side reaches the slot (`--memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryPath {
    /// The compute API writes the Vulkan slot itself (imported OPAQUE_FD memory).
    ZeroCopy,
    /// The compute API writes its own buffer, copied through host memory into the slot.
    Staged,
}

impl MemoryPath {
    pub fn name(self) -> &'static str {
        match self {
            MemoryPath::ZeroCopy => "zero-copy",
            MemoryPath::Staged => "staged",
        }
    }
}

/// How a frame whose compute is due with its draw reaches an in-queue backend's queue
/// (`--submit`; see "One submission per frame" in [`super`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Submit {
    /// Dispatch → barrier → draw in one command buffer and one `vkQueueSubmit`, where the plan
    /// allows it ([`SyncPlan::joined`]); the semaphore protocol everywhere else.
    Joined,
    /// Always the semaphore protocol: the dispatch and the draw in two submissions (the shape
    /// before one-submission frames; kept to compare them).
    Split,
}

impl Submit {
    pub fn name(self) -> &'static str {
        match self {
            Submit::Joined => "joined",
            Submit::Split => "split",
        }
    }
}

/// What a run asks for; `None` fields take the plan's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncRequest {
    pub mode: SyncMode,
    pub slots: Option<u32>,
    pub run_ahead: Option<u32>,
    pub batch: Option<u32>,
    pub memory: MemoryPath,
    pub compute_wait: ComputeWait,
    /// `--frames-in-flight`; None: [`default_frames_in_flight`].
    pub frames_in_flight: Option<u32>,
    /// `--submit`.
    pub submit: Submit,
    /// `--enqueue`.
    pub enqueue: Enqueue,
    /// `--post`: a post-process stage after each draw ([`crate::sync`], "The post stage").
    pub post: PostKind,
    /// `--post-batch P`; None: [`SyncPlan::post_batch`]'s default.
    pub post_batch: Option<u32>,
    /// The run presents to a window (where `--post-batch` > 1 is refused).
    pub window: bool,
}

impl SyncRequest {
    /// `--sync MODE` and nothing else.
    pub fn mode(mode: SyncMode) -> Self {
        SyncRequest {
            mode,
            slots: None,
            run_ahead: None,
            batch: None,
            memory: MemoryPath::ZeroCopy,
            compute_wait: ComputeWait::Auto,
            frames_in_flight: None,
            submit: Submit::Joined,
            enqueue: Enqueue::Thread,
            post: PostKind::None,
            post_batch: None,
            window: false,
        }
    }
}

/// The semaphores Vulkan creates exportable, for the compute API to import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    /// Nothing (the compute side never touches a semaphore, or it is Vulkan itself).
    Nothing,
    /// The two timelines, `computed` and `rendered` (OPAQUE_FD).
    Timelines,
    /// One (computed, rendered) pair of binary semaphores per slot (OPAQUE_FD).
    BinaryPairs,
}

/// K, R and B when the request leaves them open: (slots, run-ahead, batch). Chosen from `vkhip
/// bench` on the H100 (docs/BACKENDS.md, "Defaults"; BENCHMARKS.md).
pub fn default_shape(backend: BackendKind, mode: SyncMode) -> (usize, usize, usize) {
    match (mode, backend) {
        // GPU-side interop: the cost is a pair of GPU context switches per hand-off; batches of 7
        // pay it once per 7 frames, and with R + B ≤ K − 1 the host has always seen the previous
        // reader finish, so the compute side never waits on a Vulkan signal (BENCHMARKS.md).
        (SyncMode::External, BackendKind::Cuda | BackendKind::Hip) => (8, 0, 7),
        (SyncMode::HostWait, _) => (1, 0, 1),
        _ => (3, 0, 1),
    }
}

/// Why `--post` cannot run (None: it can). The post stage has a protocol in every sync mode
/// ([`crate::sync`], "The post stage"): on Vulkan's queue, on the compute API's stream
/// (`external`), on the bridge thread (`bridged`, `none`), host-synchronously on the render
/// thread (`binary`, `blocking`, `host-wait`). Only the staged copy path has none.
pub fn post_refusal(staged: bool) -> Option<String> {
    staged.then(|| "--post has no --memory staged path; use the default zero-copy memory".to_string())
}

/// Most draws the render thread may have queued on the GPU (`--frames-in-flight`).
pub const MAX_FRAMES_IN_FLIGHT: u64 = 8;

/// F when the request leaves it open: 2 in a window, where each queued frame is a frame of input
/// latency and presentation paces the loop anyway; 4 headless, where the render thread then
/// sleeps once per F − 1 frames instead of every frame (docs/BACKENDS.md, "Defaults"; BENCHMARKS.md).
/// Headless plans whose throttle settles the hand-offs' waits raise it to B + 1
/// ([`SyncPlan::default_frames_in_flight`]).
pub const fn default_frames_in_flight(window: bool) -> u64 {
    if window {
        2
    } else {
        4
    }
}

/// Every sync decision of one run (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncPlan {
    pub backend: BackendKind,
    /// Never `Auto`.
    pub mode: SyncMode,
    /// K: shared height buffers; frame f uses slot f mod K.
    pub slots: usize,
    /// R: how many frames before its first frame a batch is handed to the compute side.
    pub run_ahead: usize,
    /// B: frames per hand-off (one wait, B writes, one signal).
    pub batch: usize,
    /// F: draws the render thread may have queued on the GPU (2..=8; see [`super::throttle_wait`]).
    pub frames_in_flight: u64,
    pub memory: MemoryPath,
    /// `--compute-wait` (see [`SyncPlan::elide_waits`]).
    pub compute_wait: ComputeWait,
    /// What Vulkan exports for the backend to import.
    pub export: Export,
    /// The mode to use instead if the backend did not import what `mode` needs (HIP on Linux).
    pub fallback: Option<SyncMode>,
    /// `Joined` only where a frame's dispatch and draw go in one submission ([`Self::joined`]);
    /// `Split` everywhere else.
    pub submit: Submit,
    /// `Thread` only where a submission thread makes the compute API's calls
    /// ([`Self::submission_thread`]); `Render` everywhere else.
    pub enqueue: Enqueue,
    /// `--post`: the post stage after each draw (`none`: none).
    pub post: PostKind,
    /// P: frames filtered per post hand-off (cuda/hip with `--post`; 1 everywhere else). Frames
    /// s..s+P−1 (s a multiple of P) are drawn, then one hand-off filters the P pairs (one wait,
    /// P filters, one signal `posted = s+P`), then their P copies are submitted ([`crate::sync`],
    /// "The post stage"). Default: K, the most that fits (P ≤ K).
    pub post_batch: usize,
}

impl SyncPlan {
    /// Decide everything from the request, the backend (already resolved from `auto`) and the
    /// Vulkan device, for a headless run when `--frames-in-flight` is left open (a window passes
    /// its default in the request). Impossible requests are [`SyncError::Unsupported`] with the
    /// reason and what to use instead.
    pub fn resolve(
        req: &SyncRequest,
        backend: BackendKind,
        device: &PhysicalDeviceInfo,
    ) -> Result<SyncPlan, SyncError> {
        let requested = req.mode;
        let refuse = |reason: String| SyncError::Unsupported { mode: requested, backend, reason };
        if req.memory == MemoryPath::Staged && backend != BackendKind::Cuda {
            return Err(refuse("--memory staged is implemented for --backend cuda only".into()));
        }
        let staged = req.memory == MemoryPath::Staged;
        let mode = match (requested, backend) {
            (SyncMode::Auto, _) if staged => SyncMode::Bridged,
            (SyncMode::Auto, b) if b.on_vulkan_queue() => SyncMode::External,
            (SyncMode::Auto, BackendKind::Cuda) if device.timeline_export => SyncMode::External,
            (SyncMode::Auto, _) => SyncMode::Bridged,
            (SyncMode::External | SyncMode::Binary | SyncMode::HostWait, _) if staged => return Err(refuse(
                "with --memory staged the slot is written by a host copy, which cannot wait or signal on \
                     the GPU; use bridged or blocking"
                    .into(),
            )),
            (SyncMode::External | SyncMode::Binary | SyncMode::HostWait, BackendKind::Cpu) => {
                return Err(refuse(
                    "the cpu backend cannot wait or signal on the GPU; use bridged or blocking".into(),
                ))
            }
            (SyncMode::Unsynchronized, b) if b.on_vulkan_queue() => {
                return Err(refuse(
                    "the dispatch and the draw share one queue, which orders them anyway; use --backend cpu \
                     or cuda to see what no synchronisation does"
                        .into(),
                ))
            }
            (SyncMode::Bridged, b) if b.on_vulkan_queue() => {
                return Err(refuse(
                    "the dispatch would queue behind the draw that waits for it on the same queue \
                     (deadlock); use external, binary or blocking"
                        .into(),
                ))
            }
            (SyncMode::External | SyncMode::HostWait, BackendKind::Cuda) if !device.timeline_export => {
                return Err(refuse(format!(
                    "{} cannot export timeline semaphores as OPAQUE_FD; use bridged",
                    device.name
                )))
            }
            (SyncMode::Binary, BackendKind::Cuda | BackendKind::Hip) if !device.binary_export => {
                return Err(refuse(format!(
                    "{} cannot export binary semaphores as OPAQUE_FD; use bridged",
                    device.name
                )))
            }
            (m, _) => m,
        };
        if req.post != PostKind::None {
            if let Some(reason) = post_refusal(staged) {
                return Err(refuse(reason));
            }
        }
        let (slots, run_ahead, batch) = shape(req, backend, mode).map_err(refuse)?;
        let post_batch = post_batch(req, backend, mode, slots).map_err(refuse)?;
        let interop = backend.imports_memory() && !staged;
        let export = match mode {
            SyncMode::External | SyncMode::HostWait if interop && device.timeline_export => Export::Timelines,
            SyncMode::Binary if interop && device.binary_export => Export::BinaryPairs,
            _ => Export::Nothing,
        };
        // HIP tries the GPU-side scheme; ROCm on Linux cannot import semaphores, and then the run
        // continues bridged (same slots, run-ahead and batch: bridged supports them all).
        let fallback =
            (backend == BackendKind::Hip && mode == SyncMode::External).then_some(SyncMode::Bridged);
        // One submission per frame: both sides on Vulkan's queue, and frame f's compute handed
        // over at frame f (no run-ahead, no batch), in the timeline mode. Binary keeps its
        // semaphore pairs (it exists to show them), blocking its host waits.
        let joinable =
            backend.on_vulkan_queue() && mode == SyncMode::External && run_ahead == 0 && batch == 1;
        let submit = if req.submit == Submit::Joined && joinable { Submit::Joined } else { Submit::Split };
        // The submission thread: an interop API waiting and signalling the timelines on its own
        // stream. Not on Vulkan's queue (one queue, one submitting thread), not in `binary` (a
        // binary wait must be submitted after its signal, which the thread could make later), not
        // in `host-wait` (the render thread waits for the compute API right after the call), not
        // in a window (a present's wait, and every signal it depends on, must be submitted before
        // vkQueuePresentKHR: VUID-vkQueuePresentKHR-pWaitSemaphores-03268).
        let threadable = mode == SyncMode::External && export == Export::Timelines && !req.window;
        let enqueue =
            if req.enqueue == Enqueue::Thread && threadable { Enqueue::Thread } else { Enqueue::Render };
        let mut plan = SyncPlan {
            backend,
            mode,
            slots,
            run_ahead,
            batch,
            frames_in_flight: 0,
            memory: req.memory,
            compute_wait: req.compute_wait,
            export,
            fallback,
            submit,
            enqueue,
            post: req.post,
            post_batch,
        };
        plan.frames_in_flight = req
            .frames_in_flight
            .map_or_else(|| plan.default_frames_in_flight(), |f| u64::from(f).clamp(2, MAX_FRAMES_IN_FLIGHT));
        Ok(plan)
    }

    /// F for this plan when the request leaves it open, headless (a window asks for
    /// [`default_frames_in_flight`]`(true)`): 4, or B + 1 (at most 8) when the throttle settles
    /// the hand-offs' waits ([`Self::elide_waits`], batches of B > 1: `external` with cuda or hip).
    /// Such a throttle already waits until one draw is left in flight at every hand-off, once per
    /// B frames; with F ≤ B it must also wake in between, once per F − 1 frames (F = 4, B = 7: in
    /// 3 frames of 7 instead of 1). On an H200 at 256² with `--post outline` that took the render
    /// thread's median frame from 25.9 to 9.2 µs of CPU (33.8 to 12.5 with GPU timing) at the same
    /// frame time (+0.15–0.26 %); its mean rose 14–22 %, as the fewer waits are longer
    /// (BENCHMARKS.md, "2026-11-27 (day)").
    pub fn default_frames_in_flight(&self) -> u64 {
        let base = default_frames_in_flight(false);
        if self.elide_waits() && self.batch > 1 {
            base.max(self.batch as u64 + 1).min(MAX_FRAMES_IN_FLIGHT)
        } else {
            base
        }
    }

    /// Whether each frame's compute is recorded into its draw's command buffer (dispatch →
    /// barrier → draw, one submission) instead of handed over through the semaphores.
    pub fn joined(&self) -> bool {
        self.submit == Submit::Joined
    }

    /// Whether a submission thread makes the compute API's calls (`external` with an interop
    /// backend on its own stream, headless, `--enqueue thread`; see "The submission thread" in
    /// [`super`]).
    pub fn submission_thread(&self) -> bool {
        self.enqueue == Enqueue::Thread && self.mode == SyncMode::External
    }

    /// Whether a second host thread owns the backend while the run lasts: the bridge thread
    /// (`bridged`, `none`) or the submission thread.
    pub fn compute_thread(&self) -> bool {
        matches!(self.mode, SyncMode::Bridged | SyncMode::Unsynchronized) || self.submission_thread()
    }

    /// Apply the fallback once the backend said what it imported. Errors when the mode needs
    /// semaphores the backend does not have and there is no fallback.
    pub fn after_import(mut self, support: GpuSyncSupport) -> Result<SyncPlan, SyncError> {
        let needs = match self.mode {
            SyncMode::External | SyncMode::HostWait => Some(support.timeline),
            SyncMode::Binary => Some(support.binary),
            _ => None,
        };
        match (needs, self.fallback) {
            (Some(false), Some(fallback)) => {
                log::warn!(
                    "--sync {}: {} did not import the semaphores (ROCm on Linux cannot, or the Vulkan device \
                     cannot export them); falling back to {fallback}",
                    self.mode,
                    self.backend
                );
                self.mode = fallback;
                self.fallback = None;
                self.enqueue = Enqueue::Render;
                Ok(self)
            }
            (Some(false), None) => Err(SyncError::Unsupported {
                mode: self.mode,
                backend: self.backend,
                reason: "the backend did not import the semaphores this mode needs".into(),
            }),
            _ => Ok(self),
        }
    }

    /// The slot frame `f` uses.
    pub fn slot_of(&self, frame: u64) -> usize {
        (frame % self.slots as u64) as usize
    }

    /// First frame of the batch that holds `frame`.
    pub fn batch_start(&self, frame: u64) -> u64 {
        frame - frame % self.batch as u64
    }

    /// The `computed` value frame `frame`'s draw waits for: the end of its batch.
    pub fn computed_for_draw(&self, frame: u64) -> u64 {
        self.batch_start(frame) + self.batch as u64
    }

    /// The `rendered` value the batch starting at `start` waits for before writing (None while
    /// its slots were never read): the draw of frame start + B − K − 1, the previous reader of
    /// the batch's last slot, is done. The rule of one frame ([`FrameValues`]) applied to the
    /// batch's last frame, whose slot was read longest ago.
    pub fn compute_wait_value(&self, start: u64) -> Option<u64> {
        FrameValues { slots: self.slots as u64 }.wait_before_write(start + self.batch as u64 - 1)
    }

    /// The frames to hand over while the render thread is at `frame`, given that every frame
    /// before `handed` was handed over already: whole batches whose first frame is at most
    /// `frame` + R.
    pub fn due(&self, frame: u64, handed: u64) -> std::ops::Range<u64> {
        let b = self.batch as u64;
        let end = ((frame + self.run_ahead as u64) / b + 1) * b;
        handed..end.max(handed)
    }

    /// How far ahead of the draw the compute side may be handed a frame.
    pub fn lead_frames(&self) -> usize {
        self.run_ahead + self.batch - 1
    }

    /// "external, 8 slot(s), run-ahead 0, batch 8": the report's and the trace's description.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}, {} slot(s), run-ahead {}, batch {}",
            self.mode, self.slots, self.run_ahead, self.batch
        );
        if self.memory == MemoryPath::Staged {
            s.push_str(", staged copy");
        }
        if self.joined() {
            s.push_str(", one submission per frame");
        }
        if self.waits_across_apis() && self.compute_wait == ComputeWait::Gpu {
            s.push_str(", compute always waits on the GPU");
        }
        if self.mode == SyncMode::External && self.export == Export::Timelines && !self.submission_thread() {
            s.push_str(", compute calls on the render thread");
        }
        if self.post != PostKind::None {
            s.push_str(&format!(", post {}", self.post));
            if !self.post_on_queue() && self.backend != BackendKind::Cpu {
                s.push_str(&format!(", post batch {}", self.post_batch));
            }
        }
        s
    }

    /// Post stage off Vulkan's queue: the frames whose filters are handed over once frame
    /// `frame` was drawn, given that every frame before `posted` was handed over already: the
    /// whole post batch when `frame` ends one (`frame + 1` a multiple of P), else none. The last
    /// partial batch is flushed with [`Self::post_flush`].
    pub fn post_due(&self, frame: u64, posted: u64) -> std::ops::Range<u64> {
        if (frame + 1) % self.post_batch as u64 == 0 {
            posted..(frame + 1).max(posted)
        } else {
            posted..posted
        }
    }

    /// At the end of a run of `frames` frames: the frames drawn but not yet handed to the
    /// filter (the last, partial post batch), given that every frame before `posted` was.
    pub fn post_flush(&self, frames: u64, posted: u64) -> std::ops::Range<u64> {
        posted..frames.max(posted)
    }

    /// The `presented` value the post hand-off of `batch` waits for before writing its outputs
    /// (None while none of them was copied out before): the copy of frame end − 1 − K, the
    /// previous reader of the batch's last pair, is done; the batch's other pairs were copied
    /// out earlier.
    pub fn post_wait_presented(&self, batch: &std::ops::Range<u64>) -> Option<u64> {
        FrameValues { slots: self.slots as u64 }.wait_before_write(batch.end - 1)
    }

    /// Whether the post stage runs on Vulkan's queue, recorded into the draw's command buffer
    /// (the backend is on the queue): draw → filter → copy in one submission.
    pub fn post_on_queue(&self) -> bool {
        self.post != PostKind::None && self.backend.on_vulkan_queue()
    }

    /// Whether the compute side waits for `rendered` across APIs: an interop backend writing
    /// zero-copy slots in a GPU-side timeline mode, where `--compute-wait` applies.
    fn waits_across_apis(&self) -> bool {
        self.backend.imports_memory()
            && self.memory == MemoryPath::ZeroCopy
            && matches!(self.mode, SyncMode::External | SyncMode::HostWait)
    }

    /// Skip a compute-side wait for `rendered` that the host has already seen satisfied: only
    /// across APIs (binary semaphores must pair every signal with a wait; a Vulkan dispatch's
    /// wait on its own queue, or the bridge thread's host wait, costs nothing when satisfied and
    /// keeps its span in the trace), and with `--compute-wait auto`. Follows the mode after a
    /// fallback.
    pub fn elide_waits(&self) -> bool {
        self.compute_wait == ComputeWait::Auto && self.waits_across_apis()
    }
}

/// P for the request (`--post-batch`; see [`SyncPlan::post_batch`]): batching the post hand-offs
/// exists for the interop backends (cuda, hip), whose filter is one visit of the compute API per
/// hand-off, and only headless (a window would present P frames in a burst). At most K, the most
/// that keeps every draw's wait for the previous filter of its scene on a hand-off that
/// was made before the draw (P ≤ K). The default is K/2 with `--sync external` (the latency of
/// P = K buys almost nothing more), 1 in `bridged`, with `--sync none`, on Vulkan's queue and for
/// cpu.
fn post_batch(
    req: &SyncRequest,
    backend: BackendKind,
    mode: SyncMode,
    slots: usize,
) -> Result<usize, String> {
    let batching = req.post != PostKind::None
        && matches!(backend, BackendKind::Cuda | BackendKind::Hip)
        && mode != SyncMode::Unsynchronized
        && !req.window;
    let Some(p) = req.post_batch.map(|p| p as usize) else {
        // K/2 with GPU-side sync: on the H100 (BENCHMARKS.md, 2026-11-25 evening) P = 4 of K = 8
        // gave 1.07× the Vulkan-shader post at 1024² against 1.06× for P = 8, at a third of the
        // latency (p50 2.7 ms against 9.2 ms). Bridged hand-offs keep P = 1 unless asked.
        return Ok(if batching && mode == SyncMode::External { (slots / 2).max(1) } else { 1 });
    };
    if p <= 1 {
        return Ok(1);
    }
    let why = if req.post == PostKind::None {
        "it batches the post stage's hand-offs; add --post outline".to_string()
    } else if !matches!(backend, BackendKind::Cuda | BackendKind::Hip) {
        format!("--backend {backend} filters without a hand-off to another API; post batches are for cuda and hip")
    } else if mode == SyncMode::Unsynchronized {
        "--sync none hands each frame's filter over alone; use external or bridged".to_string()
    } else if req.window {
        "a window would present P frames in a burst; post batches run headless (run --headless, verify, bench)"
            .to_string()
    } else if p > slots {
        format!("a batch filters P different pairs, so it needs --slots ≥ {p}; got --slots {slots}")
    } else {
        return Ok(p);
    };
    Err(format!("--post-batch {p}: {why}"))
}

/// K, R and B for `mode`: the request's values, defaults for the rest, checked against each
/// other and against what the mode can do.
fn shape(req: &SyncRequest, backend: BackendKind, mode: SyncMode) -> Result<(usize, usize, usize), String> {
    let (dk, dr, db) = default_shape(backend, mode);
    let user = |v: Option<u32>| v.map(|v| v as usize);
    let (k_req, r_req, b_req) = (user(req.slots), user(req.run_ahead), user(req.batch));
    let batching = matches!(mode, SyncMode::External | SyncMode::Bridged);
    let running_ahead = matches!(mode, SyncMode::External | SyncMode::Bridged | SyncMode::Binary);
    if let Some(b) = b_req.filter(|&b| b > 1 && !batching) {
        let why = match mode {
            SyncMode::Binary => {
                "binary semaphores pair every signal with exactly one wait, so each frame needs its own \
                 hand-off"
            }
            _ => "only external and bridged hand frames over in batches",
        };
        return Err(format!("--batch {b} with --sync {mode}: {why}; use --sync external or bridged"));
    }
    if let Some(r) = r_req.filter(|&r| r > 0 && !running_ahead) {
        return Err(format!(
            "--run-ahead {r} with --sync {mode}: this mode writes each frame while the render thread waits for \
             it; use external, binary or bridged"
        ));
    }
    if mode == SyncMode::HostWait {
        if let Some(k) = k_req.filter(|&k| k != 1) {
            return Err(format!(
                "--slots {k} with --sync host-wait: simpleVulkan's scheme has one height buffer; use --slots 1"
            ));
        }
    }
    // Fill the gaps around what the user fixed.
    let b = b_req.unwrap_or(if batching { db } else { 1 });
    let r = r_req.unwrap_or(if running_ahead { dr } else { 0 });
    let k = k_req.unwrap_or(dk.max(b + r).min(MAX_SLOTS));
    let b = if b_req.is_none() { b.min(k.saturating_sub(r)).max(1) } else { b };
    let r = if r_req.is_none() { r.min(k.saturating_sub(b)) } else { r };
    if b > k {
        return Err(format!(
            "--batch {b} needs at least {b} slots (--slots {k}): a batch writes B different slots"
        ));
    }
    if r + b > k {
        return Err(format!(
            "--run-ahead {r} with --batch {b} needs --slots ≥ {} (R + B ≤ K: a slot is rewritten only after the \
             draw that read it was submitted); got --slots {k}",
            r + b
        ));
    }
    Ok((k, r, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(timeline_export: bool, binary_export: bool) -> PhysicalDeviceInfo {
        PhysicalDeviceInfo { name: "dev".into(), timeline_export, binary_export, ..Default::default() }
    }

    fn req(mode: SyncMode, k: Option<u32>, r: Option<u32>, b: Option<u32>) -> SyncRequest {
        SyncRequest { slots: k, run_ahead: r, batch: b, ..SyncRequest::mode(mode) }
    }

    fn plan(r: SyncRequest, backend: BackendKind, dev: &PhysicalDeviceInfo) -> Result<SyncPlan, String> {
        SyncPlan::resolve(&r, backend, dev).map_err(|e| e.to_string())
    }

    const BACKENDS: [BackendKind; 5] = [
        BackendKind::Cpu,
        BackendKind::Vulkan,
        BackendKind::Cuda,
        BackendKind::Hip,
        BackendKind::CudaInVulkan,
    ];
    const MODES: [SyncMode; 7] = SyncMode::ALL;

    /// Every backend × mode × device capability: the outcome, the export, the fallback.
    #[test]
    fn every_backend_mode_and_capability() {
        use SyncMode::*;
        for backend in BACKENDS {
            for mode in MODES {
                for (t, b) in [(true, true), (false, false), (true, false), (false, true)] {
                    let dev = device(t, b);
                    let got = plan(SyncRequest::mode(mode), backend, &dev);
                    let interop = backend.imports_memory();
                    let expected_mode: Option<SyncMode> = match (mode, backend) {
                        (Auto, BackendKind::Vulkan | BackendKind::CudaInVulkan) => Some(External),
                        (Auto, BackendKind::Cuda) => Some(if t { External } else { Bridged }),
                        (Auto, _) => Some(Bridged),
                        (External | Binary | HostWait, BackendKind::Cpu) => None,
                        (Unsynchronized | Bridged, BackendKind::Vulkan | BackendKind::CudaInVulkan) => None,
                        (External | HostWait, BackendKind::Cuda) if !t => None,
                        (Binary, BackendKind::Cuda | BackendKind::Hip) if !b => None,
                        (m, _) => Some(m),
                    };
                    let ctx = format!("{backend} {mode} timeline_export={t} binary_export={b}: {got:?}");
                    match expected_mode {
                        None => assert!(got.is_err(), "{ctx}"),
                        Some(m) => {
                            let p = got.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                            assert_eq!(p.mode, m, "{ctx}");
                            let export = match m {
                                External | HostWait if interop && t => Export::Timelines,
                                Binary if interop && b => Export::BinaryPairs,
                                _ => Export::Nothing,
                            };
                            assert_eq!(p.export, export, "{ctx}");
                            let fallback = (backend == BackendKind::Hip && m == External).then_some(Bridged);
                            assert_eq!(p.fallback, fallback, "{ctx}");
                            assert!(p.run_ahead + p.batch <= p.slots && p.slots <= MAX_SLOTS, "{ctx}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn defaults_batch_gpu_interop_and_keep_the_rest() {
        let gpu = device(true, true);
        let p = plan(SyncRequest::mode(SyncMode::Auto), BackendKind::Cuda, &gpu).unwrap();
        assert_eq!((p.mode, p.slots, p.run_ahead, p.batch), (SyncMode::External, 8, 0, 7));
        let p = plan(SyncRequest::mode(SyncMode::Auto), BackendKind::Vulkan, &gpu).unwrap();
        assert_eq!((p.slots, p.run_ahead, p.batch), (3, 0, 1));
        let p = plan(SyncRequest::mode(SyncMode::Binary), BackendKind::Cuda, &gpu).unwrap();
        assert_eq!((p.slots, p.run_ahead, p.batch), (3, 0, 1));
        let p = plan(SyncRequest::mode(SyncMode::HostWait), BackendKind::Cuda, &gpu).unwrap();
        assert_eq!((p.slots, p.run_ahead, p.batch), (1, 0, 1));
        // Fixing K shrinks the default batch to fit.
        let p = plan(req(SyncMode::External, Some(3), None, None), BackendKind::Cuda, &gpu).unwrap();
        assert_eq!((p.slots, p.run_ahead, p.batch), (3, 0, 3));
        // Fixing R and B grows K to fit.
        let p = plan(req(SyncMode::Bridged, None, Some(4), Some(4)), BackendKind::Cpu, &gpu).unwrap();
        assert_eq!((p.slots, p.run_ahead, p.batch), (8, 4, 4));
        let p = plan(req(SyncMode::External, Some(8), Some(7), None), BackendKind::Cuda, &gpu).unwrap();
        assert_eq!((p.slots, p.run_ahead, p.batch), (8, 7, 1));
    }

    #[test]
    fn impossible_shapes_are_refused_with_reason() {
        let gpu = device(true, true);
        let e =
            plan(req(SyncMode::External, Some(4), Some(3), Some(2)), BackendKind::Cuda, &gpu).unwrap_err();
        assert!(e.contains("R + B ≤ K") && e.contains("--slots ≥ 5"), "{e}");
        let e = plan(req(SyncMode::Binary, None, None, Some(2)), BackendKind::Cuda, &gpu).unwrap_err();
        assert!(e.contains("exactly one wait"), "{e}");
        let e = plan(req(SyncMode::Blocking, None, Some(1), None), BackendKind::Cuda, &gpu).unwrap_err();
        assert!(e.contains("--run-ahead 1"), "{e}");
        let e = plan(req(SyncMode::HostWait, Some(3), None, None), BackendKind::Cuda, &gpu).unwrap_err();
        assert!(e.contains("one height buffer"), "{e}");
        let e = plan(req(SyncMode::External, Some(2), None, Some(4)), BackendKind::Vulkan, &gpu).unwrap_err();
        assert!(e.contains("at least 4 slots"), "{e}");
        let staged = SyncRequest { memory: MemoryPath::Staged, ..SyncRequest::mode(SyncMode::External) };
        let e = plan(staged, BackendKind::Cuda, &gpu).unwrap_err();
        assert!(e.contains("host copy"), "{e}");
        let e = plan(
            SyncRequest { memory: MemoryPath::Staged, ..SyncRequest::mode(SyncMode::Auto) },
            BackendKind::Cpu,
            &gpu,
        )
        .unwrap_err();
        assert!(e.contains("cuda only"), "{e}");
        let p = plan(
            SyncRequest { memory: MemoryPath::Staged, ..SyncRequest::mode(SyncMode::Auto) },
            BackendKind::Cuda,
            &gpu,
        )
        .unwrap();
        assert_eq!((p.mode, p.export), (SyncMode::Bridged, Export::Nothing));
    }

    #[test]
    fn the_submission_thread_serves_exactly_the_interop_timeline_hand_offs() {
        let gpu = device(true, true);
        let thread = |r: SyncRequest, b| {
            let p = plan(r, b, &gpu).unwrap();
            (p.submission_thread(), p.compute_thread())
        };
        let m = SyncRequest::mode;
        // cuda and hip waiting and signalling the timelines on their stream: the thread.
        assert_eq!(thread(m(SyncMode::External), BackendKind::Cuda), (true, true));
        assert_eq!(thread(m(SyncMode::Auto), BackendKind::Cuda), (true, true));
        assert_eq!(thread(m(SyncMode::External), BackendKind::Hip), (true, true));
        let post = SyncRequest { post: PostKind::Outline, ..m(SyncMode::External) };
        assert_eq!(thread(post, BackendKind::Cuda), (true, true));
        // Binary waits must follow their signals; host-wait waits right after the call; the
        // queue's own backends submit where they record; the bridge thread is the other role.
        assert_eq!(thread(m(SyncMode::Binary), BackendKind::Cuda), (false, false));
        assert_eq!(thread(m(SyncMode::HostWait), BackendKind::Cuda), (false, false));
        assert_eq!(thread(m(SyncMode::Blocking), BackendKind::Cuda), (false, false));
        assert_eq!(thread(m(SyncMode::External), BackendKind::Vulkan), (false, false));
        assert_eq!(thread(m(SyncMode::External), BackendKind::CudaInVulkan), (false, false));
        assert_eq!(thread(m(SyncMode::Bridged), BackendKind::Cuda), (false, true));
        assert_eq!(thread(m(SyncMode::Unsynchronized), BackendKind::Cuda), (false, true));
        // A window presents right after the draw: the compute side's signals must be submitted.
        let window = SyncRequest { window: true, ..m(SyncMode::External) };
        assert_eq!(thread(window, BackendKind::Cuda), (false, false));
        // A device that exports no timelines has no GPU-side external for cuda at all.
        let e = plan(m(SyncMode::External), BackendKind::Cuda, &device(false, true)).unwrap_err();
        assert!(e.contains("cannot export timeline"), "{e}");
        // `--enqueue render` keeps the calls on the render thread, and says so.
        let render = SyncRequest { enqueue: Enqueue::Render, ..m(SyncMode::External) };
        let p = plan(render, BackendKind::Cuda, &gpu).unwrap();
        assert_eq!((p.submission_thread(), p.compute_thread()), (false, false));
        assert!(p.describe().ends_with(", compute calls on the render thread"), "{}", p.describe());
        let p = plan(m(SyncMode::External), BackendKind::Cuda, &gpu).unwrap();
        assert!(!p.describe().contains("render thread"), "{}", p.describe());
        // HIP on Linux imports no semaphores: bridged, the bridge thread's role.
        let hip = plan(m(SyncMode::External), BackendKind::Hip, &gpu).unwrap();
        let after = hip.after_import(GpuSyncSupport { timeline: false, binary: false }).unwrap();
        assert_eq!(
            (after.mode, after.submission_thread(), after.compute_thread()),
            (SyncMode::Bridged, false, true)
        );
    }

    #[test]
    fn hip_falls_back_to_bridged_when_nothing_was_imported() {
        let p = plan(SyncRequest::mode(SyncMode::External), BackendKind::Hip, &device(true, true)).unwrap();
        let none = GpuSyncSupport { timeline: false, binary: false };
        let after = p.clone().after_import(none).unwrap();
        assert_eq!((after.mode, after.slots, after.batch), (SyncMode::Bridged, p.slots, p.batch));
        // The bridge thread's host waits are kept once the run falls back.
        assert!(p.elide_waits() && !after.elide_waits());
        let kept = p.after_import(GpuSyncSupport { timeline: true, binary: false }).unwrap();
        assert_eq!(kept.mode, SyncMode::External);
        assert!(kept.elide_waits());
        // No fallback for CUDA: refused.
        let p = plan(SyncRequest::mode(SyncMode::External), BackendKind::Cuda, &device(true, true)).unwrap();
        assert!(p.after_import(none).is_err());
    }

    #[test]
    fn frames_in_flight_default_and_request() {
        let dev = device(true, true);
        assert_eq!((default_frames_in_flight(false), default_frames_in_flight(true)), (4, 2));
        // Headless cuda defaults to external with batches of 7 whose waits the throttle settles:
        // F = B + 1, so it wakes once per batch.
        let p = plan(SyncRequest::mode(SyncMode::Auto), BackendKind::Cuda, &dev).unwrap();
        assert_eq!((p.mode, p.batch, p.frames_in_flight), (SyncMode::External, 7, 8));
        // Smaller batches: B + 1, never below the headless default.
        let req = |b| SyncRequest { batch: Some(b), ..SyncRequest::mode(SyncMode::External) };
        assert_eq!(plan(req(5), BackendKind::Cuda, &dev).unwrap().frames_in_flight, 6);
        assert_eq!(plan(req(2), BackendKind::Cuda, &dev).unwrap().frames_in_flight, 4);
        assert_eq!(plan(req(1), BackendKind::Cuda, &dev).unwrap().frames_in_flight, 4);
        // No settled waits: bridged batches are waited for on the bridge thread, `--compute-wait
        // gpu` keeps every wait on the stream, and Vulkan's queue has no hand-off to settle.
        let bridged = SyncRequest { batch: Some(7), ..SyncRequest::mode(SyncMode::Bridged) };
        assert_eq!(plan(bridged, BackendKind::Cuda, &dev).unwrap().frames_in_flight, 4);
        let gpu_wait =
            SyncRequest { compute_wait: ComputeWait::Gpu, ..SyncRequest::mode(SyncMode::External) };
        assert_eq!(plan(gpu_wait, BackendKind::Cuda, &dev).unwrap().frames_in_flight, 4);
        let p = plan(SyncRequest::mode(SyncMode::Auto), BackendKind::Vulkan, &dev).unwrap();
        assert_eq!(p.frames_in_flight, 4);
        // The request wins.
        let asked = SyncRequest { frames_in_flight: Some(3), ..SyncRequest::mode(SyncMode::External) };
        assert_eq!(plan(asked, BackendKind::Cuda, &dev).unwrap().frames_in_flight, 3);
        for f in 2..=8 {
            let req = SyncRequest { frames_in_flight: Some(f), ..SyncRequest::mode(SyncMode::Bridged) };
            assert_eq!(plan(req, BackendKind::Cpu, &dev).unwrap().frames_in_flight, u64::from(f));
        }
    }

    #[test]
    fn post_runs_where_a_post_protocol_exists() {
        assert_eq!(post_refusal(false), None);
        assert!(post_refusal(true).is_some_and(|w| w.contains("--memory staged")));
        // The plan carries it, and says so; on Vulkan's queue the post stage is in the draw's
        // command buffer.
        let dev = PhysicalDeviceInfo { timeline_export: true, ..Default::default() };
        let req = SyncRequest { post: PostKind::Outline, ..SyncRequest::mode(SyncMode::Auto) };
        let p = SyncPlan::resolve(&req, BackendKind::Vulkan, &dev).unwrap();
        assert!(p.post_on_queue() && p.describe().ends_with(", post outline"), "{}", p.describe());
        let p = SyncPlan::resolve(&req, BackendKind::Cpu, &dev).unwrap();
        assert!(!p.post_on_queue() && p.mode == SyncMode::Bridged);
        // The reference schemes carry it too (the render thread filters host-synchronously).
        let binary = SyncRequest { post: PostKind::Outline, ..SyncRequest::mode(SyncMode::Binary) };
        let p = SyncPlan::resolve(&binary, BackendKind::Vulkan, &dev).unwrap();
        assert!(p.describe().ends_with(", post outline"), "{}", p.describe());
    }

    /// Walk the schedule for every legal (K, R, B) and check the protocol's promises.
    #[test]
    fn schedule_keeps_its_promises_for_every_shape() {
        for k in 1..=MAX_SLOTS {
            for b in 1..=k {
                for r in 0..=(k - b) {
                    let p = SyncPlan {
                        backend: BackendKind::Cuda,
                        mode: SyncMode::External,
                        slots: k,
                        run_ahead: r,
                        batch: b,
                        frames_in_flight: 2,
                        memory: MemoryPath::ZeroCopy,
                        compute_wait: ComputeWait::Auto,
                        export: Export::Timelines,
                        fallback: None,
                        submit: Submit::Split,
                        enqueue: Enqueue::Thread,
                        post: PostKind::None,
                        post_batch: 1,
                    };
                    let mut handed = 0u64;
                    let mut handed_at = vec![];
                    for f in 0..40u64 {
                        let due = p.due(f, handed);
                        assert_eq!(due.start, handed);
                        assert_eq!((due.end - due.start) % b as u64, 0, "whole batches");
                        for g in due.clone() {
                            handed_at.push((g, f));
                        }
                        handed = due.end;
                        // Frame f itself is handed over by now, and its batch's signal covers it.
                        assert!(handed > f, "K={k} R={r} B={b}: frame {f} not handed over");
                        assert!(p.computed_for_draw(f) > f && p.computed_for_draw(f) <= handed);
                        assert!(handed <= f + 1 + p.lead_frames() as u64);
                    }
                    for &(g, f) in &handed_at {
                        // The batch's wait is on a draw submitted before the hand-off (frame < f).
                        if let Some(v) = p.compute_wait_value(p.batch_start(g)) {
                            assert!(
                                v <= f,
                                "K={k} R={r} B={b}: frame {g} handed at {f} waits for draw {}",
                                v - 1
                            );
                            // ...and that draw is the last reader of every slot the batch writes.
                            assert!(v - 1 + k as u64 >= p.batch_start(g) + b as u64 - 1);
                        } else {
                            assert!(p.batch_start(g) + (b as u64) <= k as u64);
                        }
                        // No earlier reader of slot(g) is still to be drawn when g is handed over:
                        // g − K was drawn... at the latest, submitted before the hand-off.
                        assert!(g < k as u64 || g - (k as u64) < f);
                    }
                }
            }
        }
    }

    /// One submission per frame exactly where both sides are on Vulkan's queue, the mode is the
    /// timeline one and frame f's compute is handed over at frame f (R = 0, B = 1), for every K;
    /// the semaphore protocol everywhere else, and wherever `--submit split` asks for it.
    #[test]
    fn one_submission_frames_only_where_compute_is_due_with_its_draw() {
        let dev = device(true, true);
        let joined = |r: SyncRequest, backend| plan(r, backend, &dev).map(|p| p.joined());
        for backend in [BackendKind::Vulkan, BackendKind::CudaInVulkan] {
            for k in 1..=MAX_SLOTS as u32 {
                assert_eq!(joined(req(SyncMode::External, Some(k), Some(0), Some(1)), backend), Ok(true));
                assert_eq!(joined(req(SyncMode::Auto, Some(k), None, None), backend), Ok(true), "K={k}");
                let split =
                    SyncRequest { submit: Submit::Split, ..req(SyncMode::External, Some(k), None, None) };
                assert_eq!(joined(split, backend), Ok(false));
                for b in 2..=k {
                    assert_eq!(
                        joined(req(SyncMode::External, Some(k), Some(0), Some(b)), backend),
                        Ok(false)
                    );
                }
                for r in 1..k {
                    assert_eq!(
                        joined(req(SyncMode::External, Some(k), Some(r), Some(1)), backend),
                        Ok(false)
                    );
                }
                for mode in [SyncMode::Binary, SyncMode::Blocking] {
                    assert_eq!(joined(req(mode, Some(k), None, None), backend), Ok(false), "{mode}");
                }
            }
            let p = plan(req(SyncMode::Auto, None, None, None), backend, &dev).unwrap();
            assert_eq!(p.describe(), "external, 3 slot(s), run-ahead 0, batch 1, one submission per frame");
        }
        for backend in [BackendKind::Cpu, BackendKind::Cuda, BackendKind::Hip] {
            for mode in MODES {
                if let Ok(p) = plan(req(mode, Some(1), Some(0), Some(1)), backend, &dev) {
                    assert!(!p.joined(), "{backend} {mode}");
                }
            }
        }
    }

    /// `--post-batch`: the default (K/2 for cuda/hip with `--post` and `--sync external`, 1 elsewhere)
    /// and every refusal.
    #[test]
    fn post_batch_default_and_refusals() {
        let dev = device(true, true);
        let post = |b: BackendKind, mode, k: Option<u32>, p: Option<u32>| {
            let r = SyncRequest { post: PostKind::Outline, post_batch: p, ..req(mode, k, None, None) };
            plan(r, b, &dev)
        };
        for backend in [BackendKind::Cuda, BackendKind::Hip] {
            for mode in [SyncMode::External, SyncMode::Bridged] {
                let default_p = |k: usize| if mode == SyncMode::External { (k / 2).max(1) } else { 1 };
                let p = post(backend, mode, None, None).unwrap();
                assert_eq!(p.post_batch, default_p(p.slots), "{backend} {mode}");
                assert!(p.describe().ends_with(&format!(", post outline, post batch {}", p.post_batch)));
                for k in 1..=MAX_SLOTS as u32 {
                    assert_eq!(post(backend, mode, Some(k), None).unwrap().post_batch, default_p(k as usize));
                    for pb in 1..=k {
                        assert_eq!(post(backend, mode, Some(k), Some(pb)).unwrap().post_batch, pb as usize);
                    }
                    if k < 8 {
                        let e = post(backend, mode, Some(k), Some(k + 1)).unwrap_err();
                        assert!(e.contains(&format!("needs --slots ≥ {}", k + 1)), "{e}");
                    }
                }
            }
            // --sync none: one frame per hand-off by default, and refused above 1.
            assert_eq!(post(backend, SyncMode::Unsynchronized, None, None).unwrap().post_batch, 1);
            let e = post(backend, SyncMode::Unsynchronized, None, Some(2)).unwrap_err();
            assert!(e.contains("--post-batch 2: --sync none"), "{e}");
            // A window: 1 by default, refused above.
            let w = |p| SyncRequest {
                post: PostKind::Outline,
                post_batch: p,
                window: true,
                ..req(SyncMode::Auto, None, None, None)
            };
            assert_eq!(plan(w(None), backend, &dev).unwrap().post_batch, 1);
            let e = plan(w(Some(4)), backend, &dev).unwrap_err();
            assert!(e.contains("--post-batch 4: a window"), "{e}");
        }
        // On Vulkan's queue and for cpu P means nothing: 1, and refused above.
        for (backend, mode) in [
            (BackendKind::Vulkan, SyncMode::External),
            (BackendKind::CudaInVulkan, SyncMode::External),
            (BackendKind::Cpu, SyncMode::Bridged),
        ] {
            let p = post(backend, mode, None, None).unwrap();
            assert_eq!(p.post_batch, 1);
            assert!(!p.describe().contains("post batch"), "{}", p.describe());
            assert_eq!(post(backend, mode, None, Some(1)).unwrap().post_batch, 1);
            let e = post(backend, mode, None, Some(2)).unwrap_err();
            assert!(e.contains(&format!("--post-batch 2: --backend {backend}")), "{e}");
        }
        // Without --post.
        let r = SyncRequest { post_batch: Some(2), ..req(SyncMode::Auto, None, None, None) };
        assert!(plan(r, BackendKind::Cuda, &dev).unwrap_err().contains("add --post outline"));
        assert_eq!(
            plan(req(SyncMode::Auto, None, None, None), BackendKind::Cuda, &dev).unwrap().post_batch,
            1
        );
    }

    /// Walk the post stage's schedule for every K ≤ 8, P ≤ K and run length (with the flush of
    /// the last partial batch), in submission order: draws, post hand-offs and copies. Every wait
    /// is on a value whose signal was submitted before it (nothing waits on work not yet
    /// submitted, so one queue cannot deadlock), and each wait covers what the reuse rules need.
    #[test]
    fn post_schedule_keeps_its_promises_for_every_k_and_p() {
        #[derive(Debug)]
        enum Op {
            Draw(u64),
            Post(std::ops::Range<u64>),
            Copy(u64, u64),
        }
        for k in 1..=MAX_SLOTS {
            for pb in 1..=k {
                let dev = device(true, true);
                let r = SyncRequest {
                    post: PostKind::Outline,
                    post_batch: Some(pb as u32),
                    ..req(SyncMode::External, Some(k as u32), None, None)
                };
                let p = plan(r, BackendKind::Cuda, &dev).unwrap();
                assert_eq!(p.post_batch, pb);
                for frames in 1..=3 * k as u64 + 1 {
                    let ctx = format!("K={k} P={pb} frames={frames}");
                    let mut ops = Vec::new();
                    let mut posted = 0u64;
                    let hand = |ops: &mut Vec<Op>, batch: std::ops::Range<u64>| {
                        if batch.is_empty() {
                            return;
                        }
                        ops.push(Op::Post(batch.clone()));
                        for g in batch.clone() {
                            ops.push(Op::Copy(g, batch.end));
                        }
                    };
                    for f in 0..frames {
                        ops.push(Op::Draw(f));
                        let due = p.post_due(f, posted);
                        assert!(due.is_empty() || due.end - due.start == pb as u64, "{ctx}: whole batches");
                        posted = due.end.max(posted);
                        hand(&mut ops, due);
                    }
                    let rest = p.post_flush(frames, posted);
                    assert!(rest.end - rest.start < pb as u64, "{ctx}: a partial batch");
                    posted = rest.end.max(posted);
                    hand(&mut ops, rest);
                    assert_eq!(posted, frames, "{ctx}: every frame filtered");
                    // Where each timeline first reaches a value: (op index, value) in order.
                    let (mut rendered, mut posts, mut presented) = (vec![], vec![], vec![]);
                    for (i, op) in ops.iter().enumerate() {
                        match op {
                            Op::Draw(f) => rendered.push((i, f + 1)),
                            Op::Post(b) => posts.push((i, b.clone())),
                            Op::Copy(g, _) => presented.push((i, g + 1)),
                        }
                    }
                    let first_rendered = |v: u64| rendered.iter().find(|&&(_, r)| r >= v).map(|&(i, _)| i);
                    let first_presented = |v: u64| presented.iter().find(|&&(_, r)| r >= v).map(|&(i, _)| i);
                    let first_posted = |v: u64| posts.iter().find(|(_, b)| b.end >= v).cloned();
                    for (i, op) in ops.iter().enumerate() {
                        match op {
                            Op::Draw(f) if *f >= k as u64 => {
                                // Waits posted ≥ f+1−K: the hand-off that filters frame f−K
                                // (the scene's previous reader), submitted before the draw.
                                let (j, b) = first_posted(f + 1 - k as u64).expect("posted");
                                assert!(j < i && b.contains(&(f - k as u64)), "{ctx}: draw {f} on {b:?}");
                            }
                            Op::Draw(_) => {}
                            Op::Post(b) => {
                                let j = first_rendered(b.end).expect("rendered");
                                assert!(j < i, "{ctx}: filter {b:?} before its draws");
                                match p.post_wait_presented(b) {
                                    Some(v) => {
                                        assert!(first_presented(v).is_some_and(|j| j < i), "{ctx}: {b:?}");
                                        // Covers every pair's previous copy, frame g − K.
                                        assert!(b.clone().all(|g| g < k as u64 || v > g - k as u64), "{ctx}");
                                    }
                                    None => assert!(b.end <= k as u64, "{ctx}: {b:?} reuses an output"),
                                }
                            }
                            Op::Copy(g, wait) => {
                                let (j, b) = first_posted(*wait).expect("posted");
                                assert!(j < i && b.contains(g), "{ctx}: copy {g} waits for {b:?}");
                                // The pair's next filter (frame g + K) is handed over after this copy.
                                if let Some((j, _)) = posts.iter().find(|(_, b)| b.contains(&(g + k as u64)))
                                {
                                    assert!(
                                        *j > i,
                                        "{ctx}: copy {g} after the filter of frame {}",
                                        g + k as u64
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
