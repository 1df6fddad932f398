//! The frame-sync protocol: who waits on what, in every `--sync` mode. This is the one place that
//! calls the compute backend; every decision about the run's sync (mode, slots, run-ahead,
//! batch, exports, fallback) is made once, in [`plan`], and everything here follows that plan.
//!
//! ## Slots and values
//! K shared height buffers ("slots", 1 ≤ K ≤ 8); frame f uses slot `f mod K`. Two timeline
//! semaphores carry frame numbers + 1 (0 = nothing yet):
//!
//! - `computed`: set by the compute side; `computed ≥ f+1` means slot `f mod K` holds frame f.
//! - `rendered`: set to f+1 by the graphics queue when frame f's draw has finished reading its slot.
//!
//! ## One frame, end to end
//! The render thread, for frame f:
//! 1. **throttle** — makes sure the draw F frames back is done (`rendered ≥ f+1−F`, F = frames
//!    in flight, `--frames-in-flight`), so frame f's command buffer can be reused, and, when a
//!    hand-off is due whose wait the host can settle (below), that its `rendered` value was
//!    reached. When the host has not seen that yet, it host-waits until only one draw is left in
//!    flight (`rendered ≥ f−1`): with F = 2 that is every frame, with F = 4 once per 3 frames, so
//!    the thread sleeps and wakes less often, and the GPU always keeps a draw queued
//!    ([`throttle_wait`]). It waits only for values Vulkan signals, never for one the compute API
//!    signals (a `vkWaitSemaphores` on such a value wakes ≈ 10 ms late on NVIDIA:
//!    docs/ARCHITECTURE.md; the one host wait on a compute-signalled value, in `host-wait` mode
//!    below, reads the counter instead, [`Context::wait_compute_timeline`]).
//! 2. **compute** — [`FrameSync::compute`] hands the compute side the frames that are due
//!    ([`FrameSync::due`]): with the defaults of most modes just frame f; with run-ahead R and
//!    batches of B, whole batches up to R frames ahead (below). Each hand-off first waits
//!    `rendered` for the previous reader of the slots it writes, writes them, then signals
//!    `computed`. *How* depends on the mode (below).
//! 3. **draw** — the draw is submitted waiting `computed ≥` the end of frame f's batch (f+1 without
//!    batching) at the vertex-shader stage (where heights are first read) and signalling
//!    `rendered = f+1` (plus the binary present semaphore in a window). [`FrameSync::draw_sync`]
//!    returns exactly these waits and signals.
//!
//! With K ≥ 2 the kernel for frame f+1 runs while frame f is drawn; with K = 1 the APIs alternate.
//!
//! ## One submission per frame (`--submit joined`, the default)
//! When both sides are on Vulkan's queue (`vulkan`, `cuda-in-vulkan`) and frame f's compute is
//! due with its draw (`external`, R = 0, B = 1, any K: [`SyncPlan::joined`]), steps 2 and 3 are one
//! batch of one `vkQueueSubmit`, recorded by the renderer ([`crate::render`]; steps 1–3 in a small
//! command buffer recorded each frame, the draw in one recorded once and reused after it):
//! 1. a barrier from every earlier command of the queue to the compute stage's writes — in place
//!    of the compute side's wait for `rendered ≥ f+1−K`: the slot's previous reader, draw f−K,
//!    was submitted earlier on the same queue, so this barrier orders the write after it (and
//!    after the slot's previous write);
//! 2. the write ([`FrameSync::record_joined`]: the backend records its dispatch or kernel launch
//!    into the draw's command buffer, [`crate::compute::ComputeBackend::record_write`]);
//! 3. a buffer memory barrier on the slot, compute-shader write → vertex-shader read — in place of
//!    the draw's wait for `computed ≥ f+1`;
//! 4. the draw.
//!
//! [`FrameSync::compute`] then only remembers the frame; [`FrameSync::draw_sync`] returns no wait
//! and signals `computed = f+1` and `rendered = f+1` at the end of the submission, so both values
//! keep their meaning (`computed` later than two submissions would set it; nothing in this shape
//! waits for it, and teardown never host-signals it). Why: each boundary between command buffers
//! costs the GPU idle time (≈ 8 µs per boundary on the H100 without timestamps; docs/ARCHITECTURE.md,
//! "Where the time between command buffers goes"), and two submissions per frame paid it twice.
//! Where run-ahead or batches hand work over earlier than its draw, and in `binary`, `blocking`
//! and `host-wait`, the semaphore protocol below stays as it is; `--submit split` keeps it for
//! these frames too, for comparison. With GPU timing, timestamps after steps 1, 2 and 3 and at the
//! end time the write and the draw, and `vkhip trace check` proves both orders from them for
//! every frame (write end ≤ draw readable; previous draw end ≤ write start), as it does from the
//! timestamps around two submissions.
//!
//! ## The submission thread (`external` with cuda or hip, headless; `--enqueue thread`, the default)
//! Off Vulkan's queue, a hand-off is three or four calls into the compute API (wait, launch,
//! signal; the post stage's two waits, filter, signal), and each costs the calling thread
//! 1–4 µs of driver work (≈ 10 µs per CUDA hand-off on the H200, BENCHMARKS.md): more than
//! the rest of a K = 1 frame. So a thread of their own makes them (`bridge.rs`, role `Submit`):
//! the render thread queues each hand-off ([`FrameSync::compute`], [`FrameSync::post`]) and goes
//! on to the draw. Nothing else changes: the hand-off carries the same waits and signals, and
//! the thread enqueues them on the stream (`enqueue.rs`) in the order the render thread sent
//! them, so every wait is still on work submitted before the hand-off was *sent*, and the
//! thread itself never waits for the GPU, except to synchronise its stream when asked
//! ([`FrameSync::finish_compute`]) or after a failure (it cannot deadlock, and the bounded queue
//! never fills while the GPU moves). A draw (or a copy) may now reach Vulkan before the CUDA signal
//! it waits for was enqueued: legal for timeline semaphores (wait-before-signal), as in
//! `bridged`, whose host signals always come after the draw. Binary semaphores are not
//! (a wait must follow its signal), so `binary` keeps its calls on the render thread, as do
//! `host-wait` (whose render thread waits for the value right after the call), the backends
//! on Vulkan's queue (one queue, one submitting thread), a window (`vkQueuePresentKHR` needs
//! every signal its wait depends on submitted: VUID-vkQueuePresentKHR-pWaitSemaphores-03268;
//! `bridged` in a window breaks that rule, see docs/ARCHITECTURE.md) and an embedded writer
//! (`vkhip::embed::view`: the caller's current device and stream belong to its own thread).
//!
//! The skipped compute wait (`--compute-wait auto`) is decided by the thread: it reads the
//! `rendered` counter before it enqueues, and that read, recorded on its own track, is what
//! orders the write after the draw in the profiler's model (a value only the render thread saw
//! would order nothing the thread enqueues). The thread's records and its backend's GPU spans
//! reach the profiler as the bridge thread's do ([`FrameSync::take_records`]);
//! [`FrameSync::finish_compute`] waits for the stream through it. `--enqueue render` keeps the
//! calls on the render thread, for comparison.
//!
//! ## Run-ahead and batches (`--run-ahead R`, `--batch B`; R + B ≤ K)
//! Each switch between the graphics and the compute API costs the GPU a context switch (≈ 0.16 ms
//! on the H100, BENCHMARKS.md), paid twice per hand-off. Two ways to pay it less:
//! - **Batches**: frames are handed over B at a time (batches start at multiples of B). One
//!   compute visit waits once (`rendered ≥ s+B−K`, the draw of frame s+B−K−1, the last previous
//!   reader of the batch's slots), writes B slots with no signal between them, and signals once
//!   (`computed = s+B`). Draws s..s+B−1 all wait for `computed ≥ s+B`. Binary semaphores cannot
//!   do this: each signal is paired with exactly one wait.
//! - **Run-ahead**: the batch starting at s is handed over at render frame max(0, s−R), so the
//!   compute side works on later frames while earlier ones are drawn.
//!
//! R + B ≤ K guarantees that the draw each hand-off waits for was submitted before the hand-off,
//! so no slot is written while a draw may still read it, and no wait can deadlock. The compute
//! side is at most R + B − 1 frames ahead of the draw (the report says how many). Frame f's
//! simulation time is decided when f is handed over: `--time frame` gives f × dt as always;
//! `--time wall` extrapolates from the hand-off by the measured frame interval. Live input to the
//! simulation therefore lands up to R + B − 1 frames late; the camera (a push constant of the
//! draw) does not. [`plan`] explains the schedule and checks it for every K, R and B.
//!
//! ## Modes (`--sync`)
//! - `external` — the compute side waits and signals on the GPU. CUDA imports both timelines
//!   (OPAQUE_FD) and calls wait → kernel(s) → signal on its stream, from the submission thread
//!   (above); the `vulkan` backend submits its dispatches to the queue with the same waits and
//!   signals. The host never waits on `computed`.
//! - `binary` — the reference samples' scheme: one pair of binary semaphores per slot, every signal
//!   matched by exactly one wait. Draw f waits `computed[s]`, signals `rendered[s]`; compute f waits
//!   `rendered[s]` (from frame f−K; skipped while f < K), signals `computed[s]`. The timeline
//!   `rendered` is still signalled for the throttle. Run-ahead works; batches do not.
//! - `bridged` — the compute API imports memory only. A bridge thread receives each batch,
//!   host-waits `rendered` (a Vulkan-signalled value), runs the kernels and waits for them with the
//!   compute API's own event, then signals `computed` from the host (vkSignalSemaphore). The
//!   render thread never blocks on it: the draw was already submitted waiting on the GPU for a
//!   value the host signals later (wait-before-signal, legal for timelines). ROCm on Linux cannot
//!   import semaphores, so this is HIP's mode there; the `cpu` backend uses it too, so CI runs it.
//! - `blocking` — the reference samples' fallback on AMD Linux: vkQueueWaitIdle before the kernel,
//!   wait for the kernel after it, then the host signals `computed`. A measured baseline only.
//! - `host-wait` — cuda-samples simpleVulkan's shipped scheme, reproduced as a baseline: one slot;
//!   the compute side waits for the previous draw and signals `computed` on the GPU, then the
//!   *host* waits for that compute-signalled value before submitting the draw, which waits for it
//!   again at the colour-attachment-output stage (after the vertex shader that reads the heights:
//!   the wrong stage, covered only by the host wait). simpleVulkan uses one timeline for both
//!   directions (values 2n and 2n+1); vkhip keeps its two timelines, which gives the same waits
//!   in the same order. simpleVulkan's host wait is `vkWaitSemaphores`, which on NVIDIA wakes
//!   ≈ 10 ms after a CUDA signal (9.4 ms a frame at 256², issue 34); vkhip's reads the counter
//!   (the interop crate's polling wait, [`Context::wait_compute_timeline`]), so the baseline
//!   measures the scheme, not that trap. It is the only host wait on a value the compute API
//!   signals.
//! - `auto` — `external` when the backend can wait/signal on the GPU (vulkan; cuda when the driver
//!   exports timeline semaphores), else `bridged`.
//! - `none` — **unsafe, for demonstration only**: the bridge thread writes each slot as soon as it
//!   gets the frame, without waiting for `rendered`, and the draw waits for nothing. Slots are
//!   overwritten while drawn and drawn while written; `vkhip trace check` shows where. It exists to
//!   answer "does my sync do anything?". Refused for the `vulkan` backend, whose dispatch and draw
//!   share one queue.
//!
//! ## The post stage (`--post outline`)
//! After the draw, a compute filter reads the rendered frame and writes a second image, which
//! Vulkan copies to the swapchain image or the capture target ([`crate::compute::post`] is the
//! filter, [`crate::vk::post`] the images). K pairs of RGBA8 images, *scene* and *output*, one
//! per slot (K = `--slots`): frame f uses pair `p = f mod K`, as it uses slot p. Two more
//! timelines, with the same values (frame f is f+1):
//!
//! - `posted`: set by the compute side; `posted ≥ f+1` means output p holds frame f's result.
//! - `presented`: set by Vulkan; `presented ≥ f+1` means the copy of output p has finished (the
//!   target holds frame f, and output p may be written again).
//!
//! `rendered = f+1` keeps its meaning and gains one: scene p holds frame f. The hand-offs, end to
//! end, for frame f:
//! 1. **draw f** renders into scene p (its render pass leaves it in `GENERAL`). Scene p's
//!    previous reader is the filter of frame f−K, so the draw first makes sure it finished:
//!    off Vulkan's queue it waits `posted ≥ f+1−K` on the GPU at the colour-attachment and
//!    transfer stages (skipped while f < K); on the queue, queue order and a barrier from the
//!    compute shader to the render pass do it. It signals `rendered = f+1` as before. `cpu`: the
//!    same command buffer copies scene p into a host-visible buffer after the render pass.
//! 2. **filter f** reads scene p and writes output p. Its two waits are `rendered ≥ f+1` (the
//!    scene is drawn) and `presented ≥ f+1−K` (output p's previous copy, frame f−K, is done);
//!    it then signals `posted = f+1`. Who does it, by mode ([`FrameSync::post`]):
//!    - `vulkan`, `cuda-in-vulkan` (`external`): recorded into the draw's command buffer after
//!      the render pass ([`FrameSync::record_post`]), between a barrier colour-attachment write →
//!      compute read/write and a barrier compute write → transfer read; one submission per
//!      frame: (heights) → draw → filter → copy. The submission signals `posted` and
//!      `presented` as well, so both keep their meaning.
//!    - `cuda` (`external`): `enqueue_post_gpu_synced` on its stream, with both waits and the
//!      signal on the GPU (the timelines are exported), from the submission thread.
//!    - `bridged` (`cpu`, `cuda`, `hip`): the bridge thread, after the draw was submitted,
//!      host-waits `rendered` and `presented` (Vulkan-signalled values only), runs
//!      `post_and_wait`, and host-signals `posted`. Height jobs and post jobs share its queue, in
//!      the order the render thread sends them; every job waits only for a draw or a copy
//!      submitted before it was sent, so the order cannot deadlock.
//!    - `none`: the bridge thread filters without waiting, and neither the draw nor the copy
//!      waits for `posted`: scenes are read while drawn and outputs copied while written, which
//!      `vkhip trace check` reports.
//!    - `binary`, `blocking`, `host-wait` (the reference samples' height schemes, which have no
//!      post stage of their own): the render thread, right after the draw, host-waits
//!      `rendered` and `presented`, runs `post_and_wait`, and host-signals `posted`, as
//!      `blocking` does the heights. On Vulkan's queue the draw's command buffer filters, as
//!      in every mode. `--memory staged` runs are refused ([`plan::post_refusal`]).
//! 3. **copy f** (off the queue, a batch of its own in draw f's `vkQueueSubmit`, after the
//!    draw's, [`FrameSync::copies_due`], [`FrameSync::copy_sync`]) waits `posted ≥ f+1` at the
//!    transfer stage, copies (or, to a swapchain image of another format or size, blits) output
//!    p to the target, and signals `presented = f+1`; in a window it also waits for the
//!    swapchain image and signals the present semaphore. `cpu`: it first copies output buffer p
//!    into output image p. It reaches the queue just *before* the hand-off of step 2 is made
//!    (the render thread submits draw and copy, then hands the filter over): one call into the
//!    driver instead of two, 4.6 µs off the render thread's p50 on the H200 (BENCHMARKS.md).
//!    Timelines allow the wait before its signal is enqueued, and it cannot deadlock: the
//!    filter waits only for the draw submitted before the copy (and for copies of earlier
//!    frames), and nothing submitted before the copy waits for it.
//!
//! ### Post batches (`--post-batch P`, cuda and hip)
//! Every hand-off between Vulkan and CUDA/HIP switches the GPU between the APIs (≈ 0.16–0.3 ms on
//! the H100), so the interop backends filter P frames per hand-off ([`plan::SyncPlan::post_batch`];
//! default K/2 with `--sync external`, 1 in `bridged`; 1 on Vulkan's queue, for `cpu`, with `--sync none` and in a
//! window, where P > 1 is refused because P frames would be presented in a burst). Frames
//! s..s+P−1 (s a multiple of P) are drawn, each signalling `rendered` as above. After draw s+P−1
//! was submitted, ONE hand-off ([`FrameSync::post`]) filters the P pairs: its first filter waits
//! `rendered ≥ s+P` and `presented ≥ s+P−K` (the previous copy of the batch's last output; the
//! others were copied earlier), its last signals `posted = s+P`, the others wait and signal
//! nothing. The P copies go in draw s+P−1's `vkQueueSubmit`, just before that hand-off (one
//! batch per copy after the draw's, in frame order), each waiting `posted ≥ s+P` and signalling
//! `presented = f+1`. Draw f keeps its wait `posted ≥ f+1−K`, now met by the signal of
//! the batch holding frame f−K. With P ≤ K every other wait is on work submitted before it: the
//! batch holding f−K was handed over after draw f−K+P−1 < f, and copy s+P−1−K belongs to an
//! earlier batch; the copies wait for the hand-off made right after them, which itself waits
//! only for work submitted before them, so nothing can deadlock. The throttle leaves `presented`
//! alone (the copies of the batch being drawn are not submitted yet; the GPU waits order the
//! pairs); the renderer's ring of F+P copy command buffers is checked where a batch's copies are
//! recorded (`presented` ≥ end − F − P, a copy of an earlier batch). A frame reaches the target
//! up to P−1 frames later. When the frame loop stops, the last partial batch is flushed
//! ([`FrameSync::flush_post`]: its hand-off, then its copies) before anything waits for the
//! last copy.
//!
//! The throttle also host-waits `presented` with `rendered` (the copy is the frame's last
//! submission, and its command buffer is reused F frames later). Images shared with CUDA/HIP
//! change hands with the interop crate's ownership barriers, `GENERAL` on both sides of each
//! transfer; scenes go to the compute API after the draw and come back before the next one,
//! outputs come to Vulkan for each copy and go back after it. Teardown host-signals `posted`
//! up to the last value promised, as it does `computed`, so no copy or draw waits forever after
//! a failure. The profiler sees the post wait, the filter and the signal on the host thread that
//! runs the hand-off (the bridge thread's, or the render thread's in the reference modes) and
//! the filter itself on the compute track when it is GPU work (the CUDA stream's stamps or
//! events, or Vulkan timestamps around the recorded filter), the copy on the queue's (Vulkan
//! timestamps).
//!
//! ## What the profiler sees
//! Every actor reports its spans ([`crate::profile`]): the bridge thread times its wait, writes and
//! signal on the host clock; `blocking` and `host-wait` time their host steps, and the reference
//! modes their post hand-offs, on the render thread; GPU-side backends time their own stream or
//! queue. Beside them, each thread records the protocol's operations where it performs them, in
//! its order ([`crate::profile::program`]): the compute side's enqueues with their waits and
//! signals (below, in [`FrameSync::compute`] and [`FrameSync::post`]), host waits and signals,
//! submissions and host waits for a queue or a stream; a draw's and a copy's waits and signals
//! travel in [`DrawSync`] to the renderer, which records them where it submits. The bridge or
//! submission thread hands its spans and operations over in one bounded buffer
//! ([`FrameSync::take_records`]); [`FrameSync::take_spans`] gathers the rest for the render
//! thread's profiler.
//!
//! ## Teardown
//! [`FrameSync::shutdown`] stops the bridge or submission thread (joining it once it served
//! every job queued), waits for the compute side
//! (stream synchronise), releases any draw still waiting on a `computed` value that will never
//! come (after an error or Ctrl-C), and waits for the queue. The idle backend is dropped with the
//! `FrameSync`, before the Vulkan memory and semaphores it imported.
//!
//! # Examples
//!
//! The render thread's throttle never waits during the first F frames; after that it waits, until
//! one draw is left in flight, whenever it has not seen the draw F frames back finish. Modes are
//! named as on the command line.
//!
//! ```
//! use vkhip::sync::{throttle_wait, SyncMode};
//!
//! // Which frames wait, and for what, with F frames in flight and no hand-off to settle.
//! let waits = |f_in_flight: u64| {
//!     let mut seen = 0;
//!     let mut waits = Vec::new();
//!     for frame in 0..10 {
//!         if let Some(v) = throttle_wait(frame, f_in_flight, seen, None) {
//!             waits.push((frame, v));
//!             seen = v;
//!         }
//!     }
//!     waits
//! };
//! // F = 2: every frame from frame 2 waits for the draw before the last (frame 2: rendered ≥ 1).
//! assert_eq!(waits(2), (2..10).map(|f| (f, f - 1)).collect::<Vec<_>>());
//! // F = 4: frame 4 waits until draw 2 is done, which also frees frames 5 and 6; then frame 7.
//! assert_eq!(waits(4), [(4, 3), (7, 6)]);
//! // A hand-off at frame 5 that waits for rendered ≥ 4 is settled by the throttle first.
//! assert_eq!(throttle_wait(5, 4, 3, Some(4)), Some(4));
//!
//! assert_eq!(SyncMode::HostWait.to_string(), "host-wait");
//! assert_eq!(format!("--sync {}", SyncMode::Unsynchronized), "--sync none");
//! assert!(SyncMode::External.gpu_side() && SyncMode::Binary.gpu_side());
//! assert!(!SyncMode::Bridged.gpu_side() && !SyncMode::Blocking.gpu_side());
//! ```

mod bridge;
mod enqueue;
pub mod plan;

pub use plan::{default_frames_in_flight, Export, SyncPlan, SyncRequest, MAX_FRAMES_IN_FLIGHT, MAX_SLOTS};

use crate::compute::post::PostKind;
pub use crate::compute::SemaphoreHandles;
use crate::compute::{BackendKind, ComputeBackend, ComputeError, GpuSync};
use crate::profile::clock::{host_now_ns, ClockInfo};
use crate::profile::program::{self, Rec, Sem};
use crate::profile::span::SPAN_BUFFER;
use crate::profile::{Phase, Span, Track};
use crate::sim::WaveParams;
use crate::vk::device::Context;
use crate::vk::external::Semaphore;
use crate::vk::VkError;
use ash::vk;
use bridge::{Bridge, HeightsJob, Job, PostJob, PostTimelineHandles, Role, Timelines};
use std::sync::Arc;

/// The stage at which a draw first reads the heights, and so waits for `computed`.
pub const HEIGHTS_READ_STAGE: vk::PipelineStageFlags = vk::PipelineStageFlags::VERTEX_SHADER;

/// Who waits on what (`--sync`; [`SyncMode::ALL`] lists them, [`SyncMode::help`] says what each is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncMode {
    Auto,
    External,
    Binary,
    Bridged,
    Blocking,
    HostWait,
    Unsynchronized,
}

impl SyncMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [SyncMode; 7] = [
        SyncMode::Auto,
        SyncMode::External,
        SyncMode::Binary,
        SyncMode::Bridged,
        SyncMode::Blocking,
        SyncMode::HostWait,
        SyncMode::Unsynchronized,
    ];

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            SyncMode::Auto => "external when the backend can wait/signal on the GPU, else bridged",
            SyncMode::External => "the compute side waits/signals the timeline semaphores on the GPU",
            SyncMode::Binary => "the reference samples' scheme: binary semaphore pairs, one per slot",
            SyncMode::Bridged => {
                "a bridge thread: host waits on Vulkan's value, runs the kernel, host-signals `computed`"
            }
            SyncMode::Blocking => {
                "queue wait idle → kernel → wait for the kernel (the reference fallback; baseline only)"
            }
            SyncMode::HostWait => {
                "cuda-samples simpleVulkan's shipped scheme (baseline only): one slot; the host waits for \
                 the value the compute API signalled before each draw, which waits at the wrong stage"
            }
            SyncMode::Unsynchronized => {
                "UNSAFE, demonstration only: no waits at all, so slots race (see `vkhip trace check`)"
            }
        }
    }

    /// The `--sync` value.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Auto => "auto",
            SyncMode::External => "external",
            SyncMode::Binary => "binary",
            SyncMode::Bridged => "bridged",
            SyncMode::Blocking => "blocking",
            SyncMode::HostWait => "host-wait",
            SyncMode::Unsynchronized => "none",
        }
    }

    /// Modes in which the compute side waits and signals on the GPU.
    pub fn gpu_side(self) -> bool {
        matches!(self, SyncMode::External | SyncMode::Binary)
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of the protocol (a failed backend call, a Vulkan call, a dead bridge).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Compute(#[from] ComputeError),
    #[error(transparent)]
    Vulkan(#[from] VkError),
    #[error("--sync {mode} with --backend {backend}: {reason}")]
    Unsupported { mode: SyncMode, backend: BackendKind, reason: String },
    #[error("the bridge thread stopped: {0}")]
    Bridge(String),
}

impl SyncError {
    /// An environment gap or an impossible request (exit code 2) rather than a failure.
    pub fn is_environment(&self) -> bool {
        match self {
            SyncError::Compute(e) => e.is_environment(),
            SyncError::Vulkan(e) => e.is_environment(),
            SyncError::Unsupported { .. } => true,
            SyncError::Bridge(_) => false,
        }
    }
}

/// The semaphores of the protocol. Dropped after the backend that imported them.
pub struct FrameSemaphores {
    pub computed: Semaphore,
    pub rendered: Semaphore,
    /// `binary` mode only: (computed, rendered) per slot.
    pub binary: Vec<(Semaphore, Semaphore)>,
    /// `--post` only: the post stage's timelines.
    pub post: Option<PostTimelines>,
}

/// The post stage's timelines (frame f is `f + 1`; see "The post stage" above).
pub struct PostTimelines {
    /// `posted ≥ f+1`: output `f mod K` holds frame f's filtered image.
    pub posted: Semaphore,
    /// `presented ≥ f+1`: the copy of output `f mod K` to the swapchain image or the capture
    /// target has finished (so the output may be written again, and the target holds frame f).
    pub presented: Semaphore,
}

impl FrameSemaphores {
    /// The post timelines' handles, for a post hand-off off Vulkan's queue (None without `--post`).
    fn post_handles(&self) -> Option<PostTimelineHandles> {
        self.post
            .as_ref()
            .map(|t| PostTimelineHandles { posted: t.posted.handle, presented: t.presented.handle })
    }

    /// Create them for `plan`, exportable where the plan says the compute API will import them.
    pub fn new(ctx: &Arc<Context>, plan: &SyncPlan) -> Result<Self, VkError> {
        let export_timeline = plan.export == Export::Timelines;
        let export_binary = plan.export == Export::BinaryPairs;
        let binary = if plan.mode == SyncMode::Binary {
            (0..plan.slots)
                .map(|_| Ok((Semaphore::binary(ctx, export_binary)?, Semaphore::binary(ctx, export_binary)?)))
                .collect::<Result<_, VkError>>()?
        } else {
            Vec::new()
        };
        let post = if plan.post == PostKind::None {
            None
        } else {
            Some(PostTimelines {
                posted: Semaphore::timeline(ctx, 0, export_timeline)?,
                presented: Semaphore::timeline(ctx, 0, export_timeline)?,
            })
        };
        Ok(FrameSemaphores {
            computed: Semaphore::timeline(ctx, 0, export_timeline)?,
            rendered: Semaphore::timeline(ctx, 0, export_timeline)?,
            binary,
            post,
        })
    }

    /// The raw handles, for backends that submit to the Vulkan queue themselves.
    pub fn handles(&self) -> SemaphoreHandles {
        SemaphoreHandles {
            computed: self.computed.handle,
            rendered: self.rendered.handle,
            binary: self.binary.iter().map(|(c, r)| (c.handle, r.handle)).collect(),
        }
    }
}

/// Waits or signals of one submission: a few, kept inline (one per frame, no allocation).
pub type Few<T> = smallvec::SmallVec<[T; 4]>;

/// What the draw of one frame waits on and signals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawSync {
    /// (semaphore, value — 0 for binary, stage).
    pub waits: Few<(vk::Semaphore, u64, vk::PipelineStageFlags)>,
    /// (semaphore, value — 0 for binary).
    pub signals: Few<(vk::Semaphore, u64)>,
    /// The frame's compute is recorded into the draw's own command buffer, before the draw
    /// ([`FrameSync::record_joined`]), ordered by barriers instead of semaphores.
    pub joined: bool,
    /// The same waits and signals as the profiler names them ([`crate::profile::program`]),
    /// recorded where the submission is made.
    pub profile_waits: Few<(Sem, u64)>,
    pub profile_signals: Few<(Sem, u64)>,
}

impl DrawSync {
    fn wait(&mut self, sem: &Semaphore, value: u64, stage: vk::PipelineStageFlags, name: Sem) {
        self.waits.push((sem.handle, value, stage));
        self.profile_waits.push((name, value));
    }

    fn signal(&mut self, sem: &Semaphore, value: u64, name: Sem) {
        self.signals.push((sem.handle, value));
        self.profile_signals.push((name, value));
    }
}

/// The `rendered` value the render thread's throttle host-waits for at frame `frame` (None: no
/// wait), with F = `frames_in_flight` draws allowed in flight, `seen` the highest `rendered` value
/// the host has seen reached, and `handoff` the `rendered` value the hand-off due at this frame
/// waits for, when the host may settle it (the compute side then skips that wait). F below 2 is
/// taken as 2.
///
/// Frame f needs `rendered ≥ f+1−F` (the draw F frames back is done, so frame f's command buffer
/// is free) and, for a hand-off wait v, `rendered ≥ v` when v ≤ f−1 (a later value would empty
/// the queue; the compute side then waits for it on the GPU). When the host has not seen what it
/// needs, it waits until only one draw is left in flight, `rendered ≥ f−1`: the same wait as F = 2
/// every frame, but with F > 2 it frees the next F−2 frames too, so the thread sleeps once per
/// F−1 frames (each wake-up, after a sleep of a whole frame, costs the render thread more CPU
/// than the rest of its frame; BENCHMARKS.md).
pub fn throttle_wait(frame: u64, frames_in_flight: u64, seen: u64, handoff: Option<u64>) -> Option<u64> {
    let resources = (frame + 1).saturating_sub(frames_in_flight.max(2));
    let settle = handoff.filter(|&v| v < frame).unwrap_or(0);
    (resources.max(settle) > seen).then(|| frame - 1)
}

enum Driver {
    /// The render thread calls the backend itself (external on Vulkan's queue, in a window, with
    /// `--enqueue render` or for an embedded writer; binary, blocking, host-wait).
    Inline(Box<dyn ComputeBackend>),
    Bridged(Bridge),
    /// After shutdown: idle, kept until the `FrameSync` drops (before the semaphores it imported).
    Stopped(Box<dyn ComputeBackend>),
    /// After shutdown, when the bridge thread did not hand the backend back (it panicked).
    Done,
}

/// The protocol for one run: the plan, the semaphores, and the compute side.
pub struct FrameSync {
    // Field order is drop order: the compute side (and the imports it holds) goes first, then the
    // semaphores it imported.
    driver: Driver,
    pub sems: FrameSemaphores,
    ctx: Arc<Context>,
    plan: SyncPlan,
    backend_device: String,
    /// Every frame before this one was handed to the compute side.
    handed: u64,
    /// Highest `computed` value promised to a draw so far (the end of the last batch).
    requested_end: u64,
    /// Highest `rendered` value the host has seen reached (throttle waits and counter reads).
    rendered_seen: std::cell::Cell<u64>,
    /// Compute-side waits handed over, and how many of them were skipped as already satisfied.
    waits_planned: u64,
    waits_elided: u64,
    /// The submission thread's skipped waits, kept when it stopped.
    thread_elided: u64,
    /// Frames whose throttle host-waited.
    throttle_waits: std::cell::Cell<u64>,
    /// The bridge or submission thread's spans and operations, in its order (a bounded buffer).
    bridge_spans: Option<bridge::Records>,
    /// Spans the render thread timed itself (`blocking`, `host-wait`), until taken.
    local_spans: Vec<Span>,
    /// One-submission frames: the frame handed over by [`Self::compute`], until its draw records
    /// it ([`Self::record_joined`]).
    joined: Option<(u64, usize, WaveParams)>,
    /// Highest `posted` value handed to the compute side so far (post stage, off Vulkan's queue).
    posted_requested: u64,
    /// Highest `posted` value a copy was given to wait for ([`Self::copies_due`]): copies due
    /// with a draw are submitted with it, just before their post hand-off is made.
    posted_promised: u64,
    /// Highest `presented` value the host has seen reached (post stage).
    presented_seen: std::cell::Cell<u64>,
    /// [`Self::filter_on_gpu`], decided once from the backend.
    filter_on_gpu: bool,
}

impl FrameSync {
    /// Start the protocol for `plan` (from [`SyncPlan::resolve`]). If the backend did not import
    /// what the plan's mode needs, the plan's fallback applies ([`SyncPlan::after_import`]).
    pub fn new(
        ctx: &Arc<Context>,
        plan: SyncPlan,
        sems: FrameSemaphores,
        backend: Box<dyn ComputeBackend>,
    ) -> Result<Self, SyncError> {
        let mut backend = backend;
        let plan = plan.after_import(backend.gpu_sync_support())?;
        let backend_device = backend.device_name();
        // Where the post filter runs and is timed: on Vulkan's queue, on the stream behind GPU
        // waits (`external`), or host-synchronously under the backend's own GPU timer (CUDA's
        // post stage; HIP's has none) — the backend says, before the bridge thread takes it.
        let filter_on_gpu = plan.post_on_queue()
            || plan.mode == SyncMode::External
            || (crate::profile::gpu_timing() && backend.post_and_wait_timed());
        let mut bridge_spans = None;
        let driver = if plan.compute_thread() {
            let capacity = plan.slots + plan.frames_in_flight as usize;
            let timelines = Timelines {
                computed: sems.computed.handle,
                rendered: sems.rendered.handle,
                post: sems.post_handles(),
            };
            // Each frame may queue a post job beside its heights job.
            let capacity = if timelines.post.is_some() { 2 * capacity } else { capacity };
            let role = if plan.submission_thread() {
                Role::Submit { elide: plan.elide_waits() }
            } else {
                Role::Bridge
            };
            let (bridge, spans) = Bridge::start(ctx.clone(), timelines, role, capacity, backend)?;
            bridge_spans = Some(spans);
            Driver::Bridged(bridge)
        } else {
            Driver::Inline(backend)
        };
        log::info!("sync: {}; backend {} on {backend_device}", plan.describe(), plan.backend);
        Ok(FrameSync {
            driver,
            sems,
            ctx: ctx.clone(),
            plan,
            backend_device,
            handed: 0,
            requested_end: 0,
            rendered_seen: std::cell::Cell::new(0),
            waits_planned: 0,
            waits_elided: 0,
            thread_elided: 0,
            throttle_waits: std::cell::Cell::new(0),
            bridge_spans,
            local_spans: Vec::new(),
            joined: None,
            posted_requested: 0,
            posted_promised: 0,
            presented_seen: std::cell::Cell::new(0),
            filter_on_gpu,
        })
    }

    /// Whether the post filter runs on the GPU and its figures are GPU time (the report's
    /// label): decided in [`Self::new`] from the plan and the backend, the one place.
    pub fn filter_on_gpu(&self) -> bool {
        self.filter_on_gpu
    }

    /// The plan in use (after any fallback).
    pub fn plan(&self) -> &SyncPlan {
        &self.plan
    }

    pub fn mode(&self) -> SyncMode {
        self.plan.mode
    }

    pub fn slots(&self) -> usize {
        self.plan.slots
    }

    pub fn backend_kind(&self) -> BackendKind {
        self.plan.backend
    }

    pub fn backend_device(&self) -> &str {
        &self.backend_device
    }

    /// The slot frame `f` uses.
    pub fn slot_of(&self, frame: u64) -> usize {
        self.plan.slot_of(frame)
    }

    /// Step 1: make sure frame f's per-frame resources are free, and that the `rendered` value
    /// this frame's hand-off waits for was reached, host-waiting (for a Vulkan-signalled value)
    /// when the host has not seen it ([`throttle_wait`]). Returns whether it waited.
    pub fn throttle(&self, frame: u64) -> Result<bool, SyncError> {
        let due = self.due(frame);
        let handoff = if self.plan.elide_waits() && !due.is_empty() {
            self.plan.compute_wait_value(due.start)
        } else {
            None
        };
        let mut seen = self.rendered_seen.get();
        // One post hand-off per frame: the copy submission is the frame's last, and its command
        // buffer (and the pair's output image) is free once `presented` says so, too. With post
        // batches the copies of the batch being drawn are not submitted yet; the GPU waits order
        // the pairs, and the copy command buffers are checked where a batch's copies are
        // recorded (`presented` ≥ the ring's previous user, [`Self::wait_presented`]).
        let presented = self.sems.post.is_some() && self.plan.post_batch == 1;
        if presented {
            seen = seen.min(self.presented_seen.get());
        }
        if let Some(v) = throttle_wait(frame, self.plan.frames_in_flight, seen, handoff) {
            self.wait_rendered(v)?;
            if presented {
                self.wait_presented(v)?;
            }
            self.throttle_waits.set(self.throttle_waits.get() + 1);
            return Ok(true);
        }
        Ok(false)
    }

    /// Compute-side waits for `rendered` handed over so far (cuda and hip in `external` and
    /// `host-wait`; see [`SyncPlan::elide_waits`]).
    pub fn waits_planned(&self) -> u64 {
        self.waits_planned
    }

    /// How many of them were skipped because the host had seen the value reached: by the
    /// render thread, or by the submission thread once it took the hand-off.
    pub fn waits_elided(&self) -> u64 {
        let by_thread = match &self.driver {
            Driver::Bridged(b) => b.waits_elided(),
            _ => self.thread_elided,
        };
        self.waits_elided + by_thread
    }

    /// How many frames' throttles host-waited so far.
    pub fn throttle_waits(&self) -> u64 {
        self.throttle_waits.get()
    }

    /// Host-wait `rendered ≥ value` (draws are Vulkan's: this never waits on the compute API).
    pub fn wait_rendered(&self, value: u64) -> Result<(), SyncError> {
        self.ctx
            .wait_timeline(self.sems.rendered.handle, value, || {
                format!("'rendered' ≥ {value}: frame {} was never drawn{}", value - 1, self.bridge_failure())
            })
            .map_err(SyncError::from)?;
        program::host_wait(Sem::Rendered, value, value - 1, host_now_ns());
        self.rendered_seen.set(self.rendered_seen.get().max(value));
        Ok(())
    }

    /// Why the bridge thread stopped, as a suffix for a wait's timeout message (empty: it did
    /// not, or there is none).
    fn bridge_failure(&self) -> String {
        match &self.driver {
            Driver::Bridged(b) => b.failure().map(|f| format!(" (bridge: {f})")).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// Host-wait `presented ≥ value` (post stage; the copies are Vulkan's, so this never waits
    /// on the compute API). Returns at once when the host already saw it.
    pub fn wait_presented(&self, value: u64) -> Result<(), SyncError> {
        let Some(t) = &self.sems.post else {
            return Err(SyncError::Bridge("internal: wait_presented() without --post".into()));
        };
        if self.presented_seen.get() >= value {
            return Ok(());
        }
        self.ctx
            .wait_timeline(t.presented.handle, value, || {
                format!(
                    "'presented' ≥ {value}: frame {} was never copied out{}",
                    value - 1,
                    self.bridge_failure()
                )
            })
            .map_err(SyncError::from)?;
        program::host_wait(Sem::Presented, value, value - 1, host_now_ns());
        self.presented_seen.set(self.presented_seen.get().max(value));
        Ok(())
    }

    /// The post stage of this run (`none`: none).
    pub fn post_kind(&self) -> PostKind {
        self.plan.post
    }

    /// Post stage, after frame `frame`'s draw was submitted: hand the filters of the post batch
    /// it ends to the compute side (see "The post stage"), and return the frames whose copies are
    /// now due (empty while the batch is still being drawn; always empty on Vulkan's queue, where
    /// the draw's command buffer recorded the filter and the copy, [`Self::record_post`]).
    pub fn post(&mut self, frame: u64) -> Result<std::ops::Range<u64>, SyncError> {
        let due = self.plan.post_due(frame, self.posted_requested);
        self.post_batch(due)
    }

    /// Post stage, at the end of a run of `frames` frames: hand over the last, partial post batch
    /// (frames drawn whose filters were not handed over yet) and return the frames whose copies
    /// are now due. Call it once the frame loop stopped, before waiting for the last copy.
    pub fn flush_post(&mut self, frames: u64) -> Result<std::ops::Range<u64>, SyncError> {
        let due = self.plan.post_flush(frames, self.posted_requested);
        self.post_batch(due)
    }

    /// Post stage, off Vulkan's queue, before frame `frame`'s draw is submitted: the frames
    /// whose copies are due with it, the post batch its hand-off ([`Self::post`], right after the
    /// draw) will filter; empty while the batch is still being drawn, on Vulkan's queue and
    /// without a post stage. Their copies ([`Self::copy_sync`]) go in the draw's own
    /// vkQueueSubmit, waiting for the `posted` value that hand-off will signal: a promise kept
    /// from here on, so teardown releases them should the hand-off never be made.
    pub fn copies_due(&mut self, frame: u64) -> std::ops::Range<u64> {
        if self.plan.post == PostKind::None || self.plan.post_on_queue() {
            return frame..frame;
        }
        let due = self.plan.post_due(frame, self.posted_requested);
        self.posted_promised = self.posted_promised.max(due.end);
        due
    }

    /// One post hand-off: filter the pairs of `batch` after one wait (`rendered ≥ end`: every
    /// scene of the batch is drawn; `presented ≥ end − K`: the previous copy of every output is
    /// done), signal `posted = end` once after the last filter.
    fn post_batch(&mut self, batch: std::ops::Range<u64>) -> Result<std::ops::Range<u64>, SyncError> {
        if self.plan.post == PostKind::None || self.plan.post_on_queue() || batch.is_empty() {
            return Ok(batch.start..batch.start);
        }
        let synced = self.plan.mode != SyncMode::Unsynchronized;
        let end = batch.end;
        let (first, last) = (batch.start, end - 1);
        for frame in batch.clone() {
            let pair = self.slot_of(frame);
            let wait_rendered = (synced && frame == first).then_some(end);
            let wait_presented =
                if synced && frame == first { self.plan.post_wait_presented(&batch) } else { None };
            let signal_posted = (frame == last).then_some(end);
            let job = PostJob { frame, pair, wait_rendered, wait_presented, signal_posted };
            match (&mut self.driver, self.plan.mode) {
                (Driver::Inline(b), SyncMode::External) => {
                    enqueue::post(b.as_mut(), frame, pair, job.sync())?
                }
                // The reference samples' height schemes have no post protocol of their own: the
                // render thread runs the post hand-off host-synchronously, as `blocking` does the
                // heights (host-wait the Vulkan-signalled values, filter and wait, host-signal),
                // as the bridge thread runs it.
                (Driver::Inline(b), SyncMode::Binary | SyncMode::Blocking | SyncMode::HostWait) => {
                    let spans = &mut self.local_spans;
                    let mut span = |s| {
                        if spans.len() < SPAN_BUFFER {
                            spans.push(s);
                        }
                    };
                    let (rendered, post) = (self.sems.rendered.handle, self.sems.post_handles());
                    bridge::run_post(&self.ctx, rendered, post, &job, b.as_mut(), &mut span, None)?;
                }
                (Driver::Bridged(bridge), SyncMode::External) => bridge.send(Job::EnqueuePost(job))?,
                (Driver::Bridged(bridge), _) => bridge.send(Job::Post(job))?,
                (_, m) => return Err(SyncError::Bridge(format!("internal: --sync {m} has no post path"))),
            }
        }
        self.posted_requested = end;
        Ok(batch)
    }

    /// Post stage on Vulkan's queue: record frame `frame`'s filter into `cmd`, its draw's command
    /// buffer, between the barriers the renderer records around it.
    ///
    /// # Safety
    /// As [`Self::record_joined`]; both images of the pair are in layout `GENERAL`.
    pub unsafe fn record_post(&mut self, cmd: vk::CommandBuffer, frame: u64) -> Result<(), SyncError> {
        let pair = self.slot_of(frame);
        match &mut self.driver {
            // SAFETY: per this function's contract.
            Driver::Inline(b) => Ok(unsafe { b.record_post(cmd, pair) }?),
            _ => Err(SyncError::Bridge("record_post() without an inline backend".into())),
        }
    }

    /// Post stage, off Vulkan's queue: the waits and signals of frame `frame`'s copy (output →
    /// target), submitted with the draw that ends its post batch, just before that batch's
    /// hand-off ([`Self::copies_due`], [`Self::post`]), or right after the last, partial batch's
    /// ([`Self::flush_post`]): wait `posted` ≥ that hand-off's signal (the end of its batch, ≥
    /// f+1) at the transfer stage (nothing with `--sync none`), signal `presented = f+1`. None
    /// without a post stage, and on Vulkan's queue, where the draw's own command buffer copies.
    pub fn copy_sync(&self, frame: u64) -> Option<DrawSync> {
        let t = self.sems.post.as_ref()?;
        if self.plan.post_on_queue() {
            return None;
        }
        let mut s = DrawSync::default();
        if self.plan.mode != SyncMode::Unsynchronized {
            // The end of the frame's post batch: handed over, or promised with its draw.
            let posted = self.posted_requested.max(self.posted_promised).max(frame + 1);
            s.wait(&t.posted, posted, vk::PipelineStageFlags::TRANSFER, Sem::Posted);
        }
        s.signal(&t.presented, frame + 1, Sem::Presented);
        Some(s)
    }

    /// The waits and signals the post stage adds to frame `frame`'s draw: on Vulkan's queue the
    /// draw's command buffer filters and copies too, so it signals `posted` and `presented`;
    /// elsewhere it waits until the filter of frame f−K has finished reading scene `f mod K`
    /// (`posted ≥ f+1−K`, at the first stages that write it).
    fn post_draw_sync(&self, frame: u64, s: &mut DrawSync) {
        let Some(t) = &self.sems.post else { return };
        let k = self.plan.slots as u64;
        if self.plan.post_on_queue() {
            s.signal(&t.posted, frame + 1, Sem::Posted);
            s.signal(&t.presented, frame + 1, Sem::Presented);
            return;
        }
        // The filter's wait on `rendered`, named apart (see [`Sem::Scene`]).
        s.profile_signals.push((Sem::Scene, frame + 1));
        if self.plan.mode != SyncMode::Unsynchronized && frame >= k {
            let stages = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::TRANSFER;
            s.wait(&t.posted, frame + 1 - k, stages, Sem::SceneFree);
        }
    }

    /// The compute-side wait for `rendered ≥ value`, unless the host has already seen it reached
    /// (the draw finished before the hand-off, so there is nothing left to order: the compute API
    /// then never waits on a signal from Vulkan, whose wake-up costs it ≈ 0.17 ms on the H100).
    fn compute_wait(&mut self, frame: u64, value: Option<u64>) -> Result<Option<u64>, SyncError> {
        let Some(v) = value else { return Ok(None) };
        self.waits_planned += 1;
        // The submission thread decides for itself, from what it reads (see `Job::Enqueue`):
        // a value the render thread saw would order nothing the thread enqueues, in the
        // profiler's model.
        if self.plan.elide_waits() && !self.plan.submission_thread() {
            let mut seen = self.rendered_seen.get();
            let saw = enqueue::host_saw_rendered(&self.ctx, self.sems.rendered.handle, &mut seen, v, frame)?;
            self.rendered_seen.set(seen);
            if saw {
                self.waits_elided += 1;
                return Ok(None);
            }
        }
        Ok(Some(v))
    }

    /// The frames [`Self::compute`] hands over while the render thread is at `frame` (whole
    /// batches, up to R frames ahead; empty when they were handed over earlier).
    pub fn due(&self, frame: u64) -> std::ops::Range<u64> {
        self.plan.due(frame, self.handed)
    }

    /// Step 2: hand the compute side every frame [`Self::due`] at render frame `frame`, with
    /// `params[i]` for frame `due.start + i`: one hand-off per batch, as the mode says. Never
    /// waits on a value the compute API signals, except in `host-wait`, which exists to show
    /// what that costs.
    pub fn compute(&mut self, frame: u64, params: &[WaveParams]) -> Result<(), SyncError> {
        let due = self.due(frame);
        if params.len() as u64 != due.end - due.start {
            return Err(SyncError::Bridge(format!(
                "internal: frame {frame} hands over frames {due:?} but {} parameter sets were given",
                params.len()
            )));
        }
        if self.plan.joined() {
            // One frame, due with its draw (R = 0, B = 1): its draw's command buffer records it.
            if let (Some(p), 1) = (params.first(), params.len()) {
                if let Some((f, _, _)) = self.joined.replace((due.start, self.plan.slot_of(due.start), *p)) {
                    return Err(SyncError::Bridge(format!(
                        "internal: frame {f} was handed over but never drawn"
                    )));
                }
                self.handed = due.end;
                self.requested_end = due.end;
            }
            return Ok(());
        }
        for (i, batch) in params.chunks(self.plan.batch).enumerate() {
            let start = due.start + (i * self.plan.batch) as u64;
            self.hand_over(start, batch)?;
            self.handed = start + batch.len() as u64;
        }
        Ok(())
    }

    /// One compute visit: the batch of frames `start..start + params.len()`.
    fn hand_over(&mut self, start: u64, params: &[WaveParams]) -> Result<(), SyncError> {
        // The timeline wait of the modes that have one. Binary pairs its waits per slot, blocking
        // waits for the whole queue, `none` waits for nothing (all below).
        let wait = match self.plan.mode {
            SyncMode::External | SyncMode::HostWait | SyncMode::Bridged => {
                self.compute_wait(start, self.plan.compute_wait_value(start))?
            }
            _ => None,
        };
        let plan = &self.plan;
        let end = start + params.len() as u64;
        let frames: Vec<(u64, usize, WaveParams)> = params
            .iter()
            .enumerate()
            .map(|(i, p)| (start + i as u64, plan.slot_of(start + i as u64), *p))
            .collect();
        match (&mut self.driver, plan.mode) {
            (Driver::Inline(b), SyncMode::External | SyncMode::HostWait) => {
                enqueue::heights(b.as_mut(), &frames, wait, end)?;
                if plan.mode == SyncMode::HostWait {
                    // simpleVulkan's shipped scheme: the host waits for the value the compute API
                    // signalled before the draw is submitted. It reads the counter (the interop
                    // crate's polling wait): simpleVulkan's vkWaitSemaphores woke ≈ 10 ms late on
                    // NVIDIA (issue 34), a trap of the wait, not of the scheme.
                    let t0 = host_now_ns();
                    self.ctx.wait_compute_timeline(self.sems.computed.handle, end, || {
                        format!("'computed' ≥ {end} (host-wait mode)")
                    })?;
                    let t1 = host_now_ns();
                    program::host_wait(Sem::Computed, end, end - 1, t1);
                    push_span(&mut self.local_spans, start, Phase::WaitComputed, t0, t1);
                }
            }
            (Driver::Inline(b), SyncMode::Binary) => {
                for &(f, slot, ref p) in &frames {
                    let sync = GpuSync::Binary { slot, wait_rendered: f >= plan.slots as u64 };
                    program::submit(Track::Compute, f);
                    if f >= plan.slots as u64 {
                        program::binary_wait(Track::Compute, Sem::BinaryRendered(slot as u8), f);
                    }
                    program::scope(Track::Compute, Phase::Write, f..f + 1);
                    program::binary_signal(Track::Compute, Sem::BinaryComputed(slot as u8), f);
                    b.enqueue_gpu_synced(f, slot, p, sync)?;
                }
            }
            (Driver::Inline(b), SyncMode::Blocking) => {
                let gpu = b.kind() != BackendKind::Cpu;
                for &(f, slot, ref p) in &frames {
                    let t0 = host_now_ns();
                    self.ctx.queue_wait_idle()?;
                    let t1 = host_now_ns();
                    // The queue's work so far, the dispatches on it included, is done.
                    program::join(Track::Queue, f, t1);
                    if b.kind().on_vulkan_queue() {
                        program::join(Track::Compute, f, t1);
                    }
                    if gpu {
                        program::submit(Track::Compute, f);
                        program::scope(Track::Compute, Phase::Write, f..f + 1);
                    }
                    b.write_slot_and_wait(f, slot, p)?;
                    let t2 = host_now_ns();
                    if gpu {
                        program::join(Track::Compute, f, t2);
                    }
                    program::host_signal(Sem::Computed, f + 1, f);
                    self.ctx.signal_timeline(self.sems.computed.handle, f + 1)?;
                    let t3 = host_now_ns();
                    push_span(&mut self.local_spans, f, Phase::QueueIdle, t0, t1);
                    push_span(&mut self.local_spans, f, Phase::Write, t1, t2);
                    push_span(&mut self.local_spans, f, Phase::Signal, t2, t3);
                }
            }
            (Driver::Bridged(bridge), m) => {
                let job = HeightsJob { frames, wait_rendered: wait, signal_computed: end };
                bridge.send(if m == SyncMode::External { Job::Enqueue(job) } else { Job::Heights(job) })?;
            }
            (Driver::Done | Driver::Stopped(_), _) => {
                return Err(SyncError::Bridge("compute() after shutdown".into()))
            }
            (Driver::Inline(_), m) => {
                return Err(SyncError::Bridge(format!("internal: mode {m} has no inline compute path")))
            }
        }
        self.requested_end = end;
        Ok(())
    }

    /// One-submission frames, step 3: record frame `frame`'s write (handed over by
    /// [`Self::compute`]) into `cmd`, its draw's command buffer, between the barriers the draw
    /// records around it (see the module note). The only call the render thread makes into the
    /// backend in this shape.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the render device in the recording state, outside a render
    /// pass, submitted (if at all) while this `FrameSync` lives.
    pub unsafe fn record_joined(&mut self, cmd: vk::CommandBuffer, frame: u64) -> Result<(), SyncError> {
        let Some((f, slot, params)) = self.joined.take() else {
            return Err(SyncError::Bridge(format!("internal: frame {frame}'s compute was not handed over")));
        };
        if f != frame {
            return Err(SyncError::Bridge(format!("internal: frame {frame} drawn with frame {f}'s compute")));
        }
        match &mut self.driver {
            // SAFETY: per this function's contract.
            Driver::Inline(b) => Ok(unsafe { b.record_write(cmd, slot, &params) }?),
            _ => Err(SyncError::Bridge("record_joined() without an inline backend".into())),
        }
    }

    /// Step 3: the waits and signals of frame `f`'s draw submission.
    pub fn draw_sync(&self, frame: u64) -> DrawSync {
        let slot = self.slot_of(frame);
        let mut s = DrawSync::default();
        if self.plan.joined() {
            // Dispatch and draw are one submission, ordered by barriers inside it: no wait. It
            // signals `computed` too, so the value still means "slot f mod K holds frame f"
            // (verify and teardown read it), if later than a split submission would.
            s.joined = true;
            s.signal(&self.sems.computed, frame + 1, Sem::Computed);
            s.signal(&self.sems.rendered, frame + 1, Sem::Rendered);
            self.post_draw_sync(frame, &mut s);
            return s;
        }
        match self.plan.mode {
            SyncMode::Binary => {
                let (computed, rendered) = &self.sems.binary[slot];
                s.wait(computed, 0, HEIGHTS_READ_STAGE, Sem::BinaryComputed(slot as u8));
                s.signal(rendered, 0, Sem::BinaryRendered(slot as u8));
            }
            // No wait at all: the point of `none`.
            SyncMode::Unsynchronized => {}
            // simpleVulkan waits at the colour-attachment stage, after the vertex shader has read
            // the heights: wrong, and harmless there only because the host already waited.
            SyncMode::HostWait => s.wait(
                &self.sems.computed,
                self.plan.computed_for_draw(frame),
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                Sem::Computed,
            ),
            _ => s.wait(
                &self.sems.computed,
                self.plan.computed_for_draw(frame),
                HEIGHTS_READ_STAGE,
                Sem::Computed,
            ),
        }
        s.signal(&self.sems.rendered, frame + 1, Sem::Rendered);
        self.post_draw_sync(frame, &mut s);
        s
    }

    /// Stop the compute side and wait for everything: join the bridge thread, wait for the
    /// compute API's work (stream synchronise), release any draw still waiting for a `computed`
    /// value nobody will signal now (after a failure or an interruption), and wait for the queue.
    /// Every step runs even if an earlier one failed; the first error is returned. The backend is
    /// kept, idle, and dropped with the `FrameSync` (before the semaphores it imported). Safe to
    /// call twice.
    pub fn shutdown(&mut self) -> Result<(), SyncError> {
        self.driver = match std::mem::replace(&mut self.driver, Driver::Done) {
            Driver::Inline(b) | Driver::Stopped(b) => Driver::Stopped(b),
            Driver::Bridged(mut bridge) => {
                let backend = bridge.stop();
                self.thread_elided = bridge.waits_elided();
                backend.map_or(Driver::Done, Driver::Stopped)
            }
            Driver::Done => Driver::Done,
        };
        let mut first: Option<SyncError> = None;
        let mut keep = |r: Result<(), SyncError>| {
            if let Err(e) = r {
                log::warn!("frame-sync teardown: {e}");
                first.get_or_insert(e);
            }
        };
        // The stream first: everything it waits on comes from draws already submitted.
        if let Driver::Stopped(b) = &mut self.driver {
            keep(b.finish().map_err(SyncError::from));
        }
        // One-submission frames: no draw waits on `computed` (the draw's own submission signals
        // it, and a host signal could race that signal).
        if self.plan.mode != SyncMode::Binary && !self.plan.joined() {
            keep(self.release_waiting_draws());
        }
        // The post stage off Vulkan's queue: copies (and draws) waiting on a `posted` value the
        // compute side will not signal now.
        if !self.plan.post_on_queue() {
            keep(self.release_waiting_copies());
        }
        keep(self.ctx.queue_wait_idle().map_err(SyncError::from));
        first.map_or(Ok(()), Err)
    }

    /// Host-signal `computed` up to the last value a draw was promised, if it is not there yet.
    fn release_waiting_draws(&self) -> Result<(), SyncError> {
        let current = self.ctx.timeline_value(self.sems.computed.handle)?;
        if current < self.requested_end {
            log::warn!("releasing draws waiting on 'computed' {} (reached {current})", self.requested_end);
            self.ctx.signal_timeline(self.sems.computed.handle, self.requested_end)?;
        }
        Ok(())
    }

    /// Host-signal `posted` up to the last value a copy was promised, if it is not there yet.
    fn release_waiting_copies(&self) -> Result<(), SyncError> {
        let Some(t) = &self.sems.post else { return Ok(()) };
        let current = self.ctx.timeline_value(t.posted.handle)?;
        let promised = self.posted_requested.max(self.posted_promised);
        if current < promised {
            log::warn!("releasing copies waiting on 'posted' {promised} (reached {current})");
            self.ctx.signal_timeline(t.posted.handle, promised)?;
        }
        Ok(())
    }

    /// Move every compute-side span reported so far into `out`: the render thread's own
    /// (`blocking`, `host-wait`, the reference modes' post hand-off), and the backend's GPU
    /// timing (when the render thread owns the backend, or after shutdown). Never blocks.
    pub fn take_spans(&mut self, out: &mut Vec<Span>) {
        out.append(&mut self.local_spans);
        if let Driver::Inline(b) | Driver::Stopped(b) = &mut self.driver {
            b.take_spans(out);
        }
    }

    /// Move what the bridge or submission thread reported so far into `out`, in its order:
    /// its operations, its host spans and its backend's GPU spans ([`crate::profile::program`]).
    /// Never blocks.
    pub fn take_records(&mut self, out: &mut Vec<Rec>) {
        if let Some(records) = &self.bridge_spans {
            records.take(out);
        }
    }

    /// How the backend's GPU times were put on the host clock (None: it has none, or the bridge
    /// or submission thread still owns it and reports it in its records).
    pub fn compute_clock(&self) -> Option<ClockInfo> {
        match &self.driver {
            Driver::Inline(b) | Driver::Stopped(b) => b.clock_info(),
            _ => None,
        }
    }

    /// Wait until the compute API finished everything handed over so far (its own wait: stream
    /// synchronise), on whichever thread owns the backend. Never waits on a Vulkan semaphore.
    pub fn finish_compute(&mut self) -> Result<(), SyncError> {
        match &mut self.driver {
            Driver::Inline(b) | Driver::Stopped(b) => Ok(b.finish()?),
            Driver::Bridged(bridge) => bridge.finish(),
            Driver::Done => Ok(()),
        }
    }

    /// Run `f` with the backend while nothing else runs on it: either after [`Self::shutdown`], or
    /// in a mode where the render thread owns it (not with a bridge or submission thread before
    /// shutdown; [`Self::finish_compute`] works in every mode).
    pub fn with_idle_backend<T>(
        &mut self,
        f: impl FnOnce(&mut dyn ComputeBackend) -> Result<T, ComputeError>,
    ) -> Result<T, SyncError> {
        match &mut self.driver {
            Driver::Inline(b) | Driver::Stopped(b) => {
                b.finish()?;
                self.ctx.queue_wait_idle()?;
                Ok(f(b.as_mut())?)
            }
            _ => Err(SyncError::Bridge(
                "the backend is owned by the bridge or submission thread until shutdown".into(),
            )),
        }
    }
}

/// A span the render thread timed itself, kept until taken (bounded: nobody may be collecting).
fn push_span(spans: &mut Vec<Span>, frame: u64, phase: Phase, a: u64, b: u64) {
    if spans.len() < SPAN_BUFFER {
        spans.push(Span::host(frame, Track::Render, phase, a, b));
    }
}

impl Drop for FrameSync {
    fn drop(&mut self) {
        // Errors are logged by shutdown; the backend (field `driver`) drops right after this,
        // before the semaphores.
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulate the throttle over `frames` frames with F in flight and a hand-off every `batch`
    /// frames waiting for `rendered ≥ start − lag` (None: no settled hand-offs). Returns the
    /// frames that waited; checks on the way that every frame's resources were free, that no wait
    /// emptied the queue, and that F draws were never exceeded.
    fn simulate(frames: u64, f_in_flight: u64, handoffs: Option<(u64, u64)>) -> Vec<u64> {
        let mut seen = 0;
        let mut waited = Vec::new();
        for frame in 0..frames {
            let handoff =
                handoffs.filter(|&(b, lag)| frame % b == 0 && frame >= lag).map(|(_, lag)| frame - lag);
            if let Some(v) = throttle_wait(frame, f_in_flight, seen, handoff) {
                assert!(v > seen && v < frame, "frame {frame}: waits for {v} (seen {seen})");
                seen = v;
                waited.push(frame);
            }
            assert!(seen + f_in_flight > frame, "frame {frame}: the draw F back may still run");
            if let Some(v) = handoff.filter(|&v| v < frame) {
                assert!(seen >= v, "frame {frame}: hand-off wait {v} not settled (seen {seen})");
            }
        }
        waited
    }

    #[test]
    fn throttle_wakes_once_per_f_minus_one_frames() {
        assert_eq!(simulate(10, 2, None), (2..10).collect::<Vec<_>>());
        assert_eq!(simulate(10, 3, None), [3, 5, 7, 9]);
        assert_eq!(simulate(16, 4, None), [4, 7, 10, 13]);
        for f in 2..=MAX_FRAMES_IN_FLIGHT {
            let n = simulate(1000, f, None).len() as u64;
            assert_eq!(n, (1000 - 1 - f) / (f - 1) + 1, "F = {f}");
        }
    }

    #[test]
    fn throttle_settles_the_handoff_wait() {
        // The default external shape: a batch of 7 every 7 frames waits for rendered ≥ start − 1.
        assert_eq!(simulate(30, 2, Some((7, 1))), (2..30).collect::<Vec<_>>());
        // With F = 8 the batch's wait and the resources' wait fall on the same frames.
        assert_eq!(simulate(30, 8, Some((7, 1))), [7, 14, 21, 28]);
        // F = 4: the batch starts add wake-ups (7, 14, 21, 28) to the every-third-frame ones.
        assert_eq!(simulate(30, 4, Some((7, 1))), [4, 7, 10, 13, 14, 17, 20, 21, 24, 27, 28]);
        // A wait for the draw just before (R + B = K) is left to the compute side.
        assert_eq!(throttle_wait(8, 8, 7, Some(8)), None);
        // F below 2 is 2.
        assert_eq!(throttle_wait(0, 0, 0, None), None);
        assert_eq!(throttle_wait(2, 1, 0, None), Some(1));
    }
}
