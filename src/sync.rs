//! The frame-sync protocol: who waits on what, in every `--sync` mode. This is the one place where
//! the mode is chosen and the one place that calls the compute backend.
//!
//! ## Slots and values
//! K shared height buffers ("slots", 1 ≤ K ≤ 4); frame f uses slot `f mod K`. Two timeline
//! semaphores carry frame numbers + 1 (0 = nothing yet):
//!
//! - `computed`: set to f+1 by the compute side when slot `f mod K` holds frame f.
//! - `rendered`: set to f+1 by the graphics queue when frame f's draw has finished reading its slot.
//!
//! ## One frame, end to end
//! The render thread, for frame f:
//! 1. **throttle** — host-waits `rendered ≥ f+1−F` (F = frames in flight, 2), a value Vulkan
//!    signals, so per-frame command buffers can be reused. This is the only host wait of the render
//!    thread, and it never waits on a value the compute API signals (DESIGN.md: such a wait costs
//!    ≈ 10 ms on NVIDIA).
//! 2. **compute** — [`FrameSync::compute`] gets slot `f mod K` written for frame f. The compute side
//!    first waits `rendered ≥ f+1−K` (the slot's previous reader, frame f−K, is done; skipped while
//!    f < K), writes the slot, then signals `computed = f+1`. *How* depends on the mode (below).
//! 3. **draw** — the draw is submitted waiting `computed ≥ f+1` at the vertex-shader stage (where
//!    heights are first read) and signalling `rendered = f+1` (plus the binary present semaphore in
//!    a window). [`FrameSync::draw_sync`] returns exactly these waits and signals.
//!
//! With K ≥ 2 the kernel for frame f+1 runs while frame f is drawn; with K = 1 the APIs alternate.
//!
//! ## Modes (`--sync`)
//! - `external` — the compute side waits and signals on the GPU. CUDA imports both timelines
//!   (OPAQUE_FD) and calls wait → kernel → signal on its stream; the `vulkan` backend submits its
//!   dispatch to the queue with the same waits and signals. The host never waits on `computed`.
//! - `binary` — the reference samples' scheme: one pair of binary semaphores per slot, every signal
//!   matched by exactly one wait. Draw f waits `computed[s]`, signals `rendered[s]`; compute f waits
//!   `rendered[s]` (from frame f−K; skipped while f < K), signals `computed[s]`. The timeline
//!   `rendered` is still signalled for the throttle.
//! - `bridged` — the compute API imports memory only. A bridge thread receives frame f, host-waits
//!   `rendered ≥ f+1−K` (a Vulkan-signalled value), runs the kernel and waits for it with the
//!   compute API's own event, then signals `computed = f+1` from the host (vkSignalSemaphore). The
//!   render thread never blocks on it: the draw was already submitted waiting on the GPU for a
//!   value the host signals later (wait-before-signal, legal for timelines). ROCm on Linux cannot
//!   import semaphores, so this is HIP's mode there; the `cpu` backend uses it too, so CI runs it.
//! - `blocking` — the reference samples' fallback on AMD Linux: vkQueueWaitIdle before the kernel,
//!   wait for the kernel after it, then the host signals `computed`. A measured baseline only.
//! - `auto` — `external` when the backend can wait/signal on the GPU (vulkan; cuda when the driver
//!   exports timeline semaphores), else `bridged`.
//! - `none` — **unsafe, for demonstration only**: the bridge thread writes each slot as soon as it
//!   gets the frame, without waiting for `rendered`, and the draw waits for nothing. Slots are
//!   overwritten while drawn and drawn while written; `vkhip trace check` shows where. It exists to
//!   answer "does my sync do anything?". Refused for the `vulkan` backend, whose dispatch and draw
//!   share one queue.
//!
//! ## What the profiler sees
//! Every actor reports its spans ([`crate::profile`]): the bridge thread times its wait, write and
//! signal on the host clock and sends them over a bounded channel; `blocking` times its steps on
//! the render thread; GPU-side backends time their own stream or queue. [`FrameSync::take_spans`]
//! gathers them all for the render thread's profiler.
//!
//! ## Teardown
//! [`FrameSync::shutdown`] stops the bridge thread (joining it), waits for the compute side
//! (stream synchronise), releases any draw still waiting on a `computed` value that will never
//! come (after an error or Ctrl-C), and waits for the queue. The idle backend is dropped with the
//! `FrameSync`, before the Vulkan memory and semaphores it imported.

use crate::compute::{BackendKind, ComputeBackend, ComputeError, GpuSync};
use crate::profile::clock::{host_now_ns, ClockInfo};
use crate::profile::span::SPAN_BUFFER;
use crate::profile::{Phase, Span, Track};
use crate::sim::WaveParams;
use crate::vk::device::{Context, PhysicalDeviceInfo};
use crate::vk::external::Semaphore;
use crate::vk::VkError;
use ash::vk;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Frames the render thread may have in flight on the GPU.
pub const FRAMES_IN_FLIGHT: u64 = 2;

/// The stage at which a draw first reads the heights, and so waits for `computed`.
pub const HEIGHTS_READ_STAGE: vk::PipelineStageFlags = vk::PipelineStageFlags::VERTEX_SHADER;

/// `--sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum SyncMode {
    /// external when the backend can wait/signal on the GPU, else bridged.
    Auto,
    /// The compute side waits/signals the timeline semaphores on the GPU.
    External,
    /// The reference samples' scheme: binary semaphore pairs, one per slot.
    Binary,
    /// A bridge thread: host waits on Vulkan's value, runs the kernel, host-signals `computed`.
    Bridged,
    /// Queue wait idle → kernel → wait for the kernel (the reference fallback; baseline only).
    Blocking,
    /// cuda-samples simpleVulkan's shipped scheme (baseline only): one slot; the host waits for
    /// the value the compute API signalled before each draw, which waits at the wrong stage.
    HostWait,
    /// UNSAFE, demonstration only: no waits at all, so slots race (see `vkhip trace check`).
    #[value(name = "none")]
    Unsynchronized,
}

impl SyncMode {
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

/// Decide the mode before anything is created, from the request, the backend and the device.
/// Returns the mode and, when it differs from an explicit request, why.
pub fn resolve_mode(
    requested: SyncMode,
    backend: BackendKind,
    device: &PhysicalDeviceInfo,
) -> Result<SyncMode, SyncError> {
    let unsupported =
        |reason: &str| SyncError::Unsupported { mode: requested, backend, reason: reason.into() };
    match (requested, backend) {
        (SyncMode::Auto, BackendKind::Vulkan) => Ok(SyncMode::External),
        (SyncMode::Auto, BackendKind::Cuda) if device.timeline_export => Ok(SyncMode::External),
        (SyncMode::Auto, _) => Ok(SyncMode::Bridged),
        (SyncMode::External | SyncMode::Binary, BackendKind::Cpu) => {
            Err(unsupported("the cpu backend cannot wait or signal on the GPU; use bridged or blocking"))
        }
        (SyncMode::Unsynchronized, BackendKind::Vulkan) => Err(unsupported(
            "the dispatch and the draw share one queue, which orders them anyway; use --backend cpu or \
             cuda to see what no synchronisation does",
        )),
        (SyncMode::Bridged, BackendKind::Vulkan) => Err(unsupported(
            "the dispatch would queue behind the draw that waits for it on the same queue (deadlock); \
             use external, binary or blocking",
        )),
        (SyncMode::External, BackendKind::Cuda) if !device.timeline_export => Err(unsupported(&format!(
            "{} cannot export timeline semaphores as OPAQUE_FD; use bridged",
            device.name
        ))),
        (SyncMode::Binary, BackendKind::Cuda | BackendKind::Hip) if !device.binary_export => {
            Err(unsupported(&format!(
                "{} cannot export binary semaphores as OPAQUE_FD; use bridged",
                device.name
            )))
        }
        // HIP: `external` is attempted; if the import fails the backend reports no GPU-side
        // support and `FrameSync::new` falls back to bridged with a warning (ROCm on Linux).
        (mode, _) => Ok(mode),
    }
}

/// The semaphores of the protocol. Dropped after the backend that imported them.
pub struct FrameSemaphores {
    pub computed: Semaphore,
    pub rendered: Semaphore,
    /// `binary` mode only: (computed, rendered) per slot.
    pub binary: Vec<(Semaphore, Semaphore)>,
}

impl FrameSemaphores {
    /// Create them for `mode`; `export` makes the ones the compute API will import exportable.
    pub fn new(ctx: &Arc<Context>, mode: SyncMode, slots: usize, export: bool) -> Result<Self, VkError> {
        let export_timeline = export && mode == SyncMode::External;
        let export_binary = export && mode == SyncMode::Binary;
        let binary = if mode == SyncMode::Binary {
            (0..slots)
                .map(|_| Ok((Semaphore::binary(ctx, export_binary)?, Semaphore::binary(ctx, export_binary)?)))
                .collect::<Result<_, VkError>>()?
        } else {
            Vec::new()
        };
        Ok(FrameSemaphores {
            computed: Semaphore::timeline(ctx, 0, export_timeline)?,
            rendered: Semaphore::timeline(ctx, 0, export_timeline)?,
            binary,
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

/// Raw semaphore handles (valid while the [`FrameSemaphores`] live).
#[derive(Clone, Debug)]
pub struct SemaphoreHandles {
    pub computed: vk::Semaphore,
    pub rendered: vk::Semaphore,
    pub binary: Vec<(vk::Semaphore, vk::Semaphore)>,
}

/// What the draw of one frame waits on and signals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawSync {
    /// (semaphore, value — 0 for binary, stage).
    pub waits: Vec<(vk::Semaphore, u64, vk::PipelineStageFlags)>,
    /// (semaphore, value — 0 for binary).
    pub signals: Vec<(vk::Semaphore, u64)>,
}

/// The value the compute side of frame `f` waits for on `rendered`, or None for the first K frames.
pub fn compute_wait_value(frame: u64, slots: usize) -> Option<u64> {
    (frame >= slots as u64).then(|| frame + 1 - slots as u64)
}

/// The `rendered` value the render thread waits for before reusing frame `f`'s resources.
pub fn throttle_value(frame: u64) -> Option<u64> {
    (frame >= FRAMES_IN_FLIGHT).then(|| frame + 1 - FRAMES_IN_FLIGHT)
}

struct Job {
    frame: u64,
    slot: usize,
    params: WaveParams,
}

/// The bridge thread of `bridged` (and `none`) mode; owns the backend while it runs.
struct Bridge {
    jobs: Option<mpsc::SyncSender<Job>>,
    thread: Option<JoinHandle<Box<dyn ComputeBackend>>>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Bridge {
    /// `wait`: wait for the slot's previous reader before writing (false only in `none`).
    fn start(
        ctx: Arc<Context>,
        sems: SemaphoreHandles,
        slots: usize,
        wait: bool,
        mut backend: Box<dyn ComputeBackend>,
    ) -> Result<(Self, mpsc::Receiver<Span>), SyncError> {
        // Bounded: in `none` nothing else ties the render thread to the bridge, and a slow writer
        // must not let jobs pile up. In `bridged` the protocol already keeps the bridge within
        // K + 2 frames, and job f's wait is for a draw submitted before job f was sent, so a full
        // queue cannot deadlock.
        let (tx, rx) = mpsc::sync_channel::<Job>(slots + FRAMES_IN_FLIGHT as usize);
        let (span_tx, spans) = mpsc::sync_channel::<Span>(SPAN_BUFFER);
        let failure = Arc::new(Mutex::new(None));
        let fail = failure.clone();
        let thread = std::thread::Builder::new()
            .name("vkhip-bridge".into())
            .spawn(move || {
                let mut gpu_spans = Vec::new();
                for job in rx.iter() {
                    let f = job.frame;
                    let span = |phase, a, b| {
                        // A full channel means nobody collects: drop the span.
                        let _ = span_tx.try_send(Span::host(f, Track::Bridge, phase, a, b));
                    };
                    let mut step = || -> Result<(), SyncError> {
                        let t0 = host_now_ns();
                        if let Some(v) = compute_wait_value(f, slots).filter(|_| wait) {
                            ctx.wait_timeline(sems.rendered, v, || {
                                format!("'rendered' ≥ {v} (frame {} drawn) on the bridge thread", v - 1)
                            })?;
                            span(Phase::WaitRendered, t0, host_now_ns());
                        }
                        let t1 = host_now_ns();
                        backend.write_slot_and_wait(f, job.slot, &job.params)?;
                        let t2 = host_now_ns();
                        span(Phase::Write, t1, t2);
                        ctx.signal_timeline(sems.computed, f + 1)?;
                        span(Phase::Signal, t2, host_now_ns());
                        backend.take_spans(&mut gpu_spans);
                        for s in gpu_spans.drain(..) {
                            let _ = span_tx.try_send(s);
                        }
                        Ok(())
                    };
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut step))
                        .unwrap_or_else(|_| Err(SyncError::Bridge("the compute backend panicked".into())));
                    if let Err(e) = outcome {
                        // Returned to the render thread on its next compute(): logged at debug only.
                        log::debug!("bridge thread, frame {}: {e}", job.frame);
                        *fail.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(format!("frame {}: {e}", job.frame));
                        // Release every draw that waits on `computed` for a frame handed over so
                        // far, so the queue drains; `FrameSync::shutdown` releases any later one.
                        let last = rx.try_iter().map(|j| j.frame).fold(job.frame, u64::max);
                        if let Err(e) = ctx.signal_timeline(sems.computed, last + 1) {
                            log::warn!("bridge thread: could not release waiting draws: {e}");
                        }
                        break;
                    }
                }
                backend
            })
            .map_err(|e| SyncError::Bridge(format!("could not start: {e}")))?;
        Ok((Bridge { jobs: Some(tx), thread: Some(thread), failure }, spans))
    }

    fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Close the queue and join; returns the backend (None if the thread panicked).
    fn stop(&mut self) -> Option<Box<dyn ComputeBackend>> {
        self.jobs.take();
        match self.thread.take()?.join() {
            Ok(b) => Some(b),
            Err(_) => {
                log::error!("the bridge thread panicked");
                None
            }
        }
    }
}

enum Driver {
    /// The render thread calls the backend itself (external, binary, blocking).
    Inline(Box<dyn ComputeBackend>),
    Bridged(Bridge),
    /// After shutdown: idle, kept until the `FrameSync` drops (before the semaphores it imported).
    Stopped(Box<dyn ComputeBackend>),
    /// After shutdown, when the bridge thread did not hand the backend back (it panicked).
    Done,
}

/// The protocol for one run: the mode, the semaphores, and the compute side.
pub struct FrameSync {
    // Field order is drop order: the compute side (and the imports it holds) goes first, then the
    // semaphores it imported.
    driver: Driver,
    pub sems: FrameSemaphores,
    ctx: Arc<Context>,
    mode: SyncMode,
    slots: usize,
    backend_kind: BackendKind,
    backend_device: String,
    /// Highest `computed` value requested so far (frame + 1).
    requested: u64,
    /// The bridge thread's spans (bounded channel; `bridged` and `none`).
    bridge_spans: Option<mpsc::Receiver<Span>>,
    /// Spans the render thread timed itself (`blocking`), until taken.
    local_spans: Vec<Span>,
}

impl FrameSync {
    /// Start the protocol. `mode` comes from [`resolve_mode`]; if the backend turns out not to
    /// support the GPU-side scheme it asked for (HIP on Linux), this falls back to `bridged`.
    pub fn new(
        ctx: &Arc<Context>,
        mode: SyncMode,
        slots: usize,
        sems: FrameSemaphores,
        backend: Box<dyn ComputeBackend>,
    ) -> Result<Self, SyncError> {
        let kind = backend.kind();
        let support = backend.gpu_sync_support();
        let mode = match mode {
            SyncMode::External if !support.timeline && kind == BackendKind::Hip => {
                log::warn!(
                    "--sync external: HIP did not import the semaphores (ROCm on Linux cannot, or the Vulkan \
                     device cannot export them); falling back to bridged"
                );
                SyncMode::Bridged
            }
            SyncMode::External | SyncMode::Binary
                if !(if mode == SyncMode::External { support.timeline } else { support.binary }) =>
            {
                return Err(SyncError::Unsupported {
                    mode,
                    backend: kind,
                    reason: "the backend did not import the semaphores this mode needs".into(),
                });
            }
            SyncMode::Auto => {
                return Err(SyncError::Unsupported {
                    mode,
                    backend: kind,
                    reason: "resolve `auto` with resolve_mode() before starting the protocol".into(),
                })
            }
            m => m,
        };
        let backend_device = backend.device_name();
        let mut bridge_spans = None;
        let driver = if matches!(mode, SyncMode::Bridged | SyncMode::Unsynchronized) {
            let wait = mode == SyncMode::Bridged;
            let (bridge, spans) = Bridge::start(ctx.clone(), sems.handles(), slots, wait, backend)?;
            bridge_spans = Some(spans);
            Driver::Bridged(bridge)
        } else {
            Driver::Inline(backend)
        };
        log::info!("sync: {mode}, {slots} slot(s), backend {kind} on {backend_device}");
        Ok(FrameSync {
            driver,
            sems,
            ctx: ctx.clone(),
            mode,
            slots,
            backend_kind: kind,
            backend_device,
            requested: 0,
            bridge_spans,
            local_spans: Vec::new(),
        })
    }

    pub fn mode(&self) -> SyncMode {
        self.mode
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn backend_kind(&self) -> BackendKind {
        self.backend_kind
    }

    pub fn backend_device(&self) -> &str {
        &self.backend_device
    }

    /// The slot frame `f` uses.
    pub fn slot_of(&self, frame: u64) -> usize {
        (frame % self.slots as u64) as usize
    }

    /// Step 1: host-wait until frame f's per-frame resources are free (a Vulkan-signalled value).
    pub fn throttle(&self, frame: u64) -> Result<(), SyncError> {
        if let Some(v) = throttle_value(frame) {
            self.wait_rendered(v)?;
        }
        Ok(())
    }

    /// Host-wait `rendered ≥ value` (draws are Vulkan's: this never waits on the compute API).
    pub fn wait_rendered(&self, value: u64) -> Result<(), SyncError> {
        self.ctx
            .wait_timeline(self.sems.rendered.handle, value, || {
                let why = match &self.driver {
                    Driver::Bridged(b) => b.failure().map(|f| format!(" (bridge: {f})")).unwrap_or_default(),
                    _ => String::new(),
                };
                format!("'rendered' ≥ {value}: frame {} was never drawn{why}", value - 1)
            })
            .map_err(SyncError::from)
    }

    /// Step 2: get slot `f mod K` written for frame `f`, as the mode says. Never waits on a value
    /// the compute API signals.
    pub fn compute(&mut self, frame: u64, params: &WaveParams) -> Result<(), SyncError> {
        let slot = self.slot_of(frame);
        let slots = self.slots;
        match (&mut self.driver, self.mode) {
            (Driver::Inline(b), SyncMode::External) => b.enqueue_gpu_synced(
                frame,
                slot,
                params,
                GpuSync::Timeline {
                    wait_rendered: compute_wait_value(frame, slots),
                    signal_computed: Some(frame + 1),
                },
            )?,
            (Driver::Inline(b), SyncMode::Binary) => b.enqueue_gpu_synced(
                frame,
                slot,
                params,
                GpuSync::Binary { slot, wait_rendered: frame >= slots as u64 },
            )?,
            (Driver::Inline(b), SyncMode::Blocking) => {
                let t0 = host_now_ns();
                self.ctx.queue_wait_idle()?;
                let t1 = host_now_ns();
                b.write_slot_and_wait(frame, slot, params)?;
                let t2 = host_now_ns();
                self.ctx.signal_timeline(self.sems.computed.handle, frame + 1)?;
                let t3 = host_now_ns();
                if self.local_spans.len() + 3 <= SPAN_BUFFER {
                    self.local_spans.extend([
                        Span::host(frame, Track::Render, Phase::QueueIdle, t0, t1),
                        Span::host(frame, Track::Render, Phase::Write, t1, t2),
                        Span::host(frame, Track::Render, Phase::Signal, t2, t3),
                    ]);
                }
            }
            (Driver::Bridged(bridge), _) => {
                if let Some(f) = bridge.failure() {
                    return Err(SyncError::Bridge(f));
                }
                let sent = bridge.jobs.as_ref().map(|tx| tx.send(Job { frame, slot, params: *params }));
                if !matches!(sent, Some(Ok(()))) {
                    return Err(SyncError::Bridge(bridge.failure().unwrap_or_else(|| "it is gone".into())));
                }
            }
            (Driver::Done | Driver::Stopped(_), _) => {
                return Err(SyncError::Bridge("compute() after shutdown".into()))
            }
            (Driver::Inline(_), m) => {
                return Err(SyncError::Bridge(format!("internal: mode {m} has no inline compute path")))
            }
        }
        self.requested = frame + 1;
        Ok(())
    }

    /// Step 3: the waits and signals of frame `f`'s draw submission.
    pub fn draw_sync(&self, frame: u64) -> DrawSync {
        let slot = self.slot_of(frame);
        let read_stage = HEIGHTS_READ_STAGE;
        let mut s = DrawSync::default();
        match self.mode {
            SyncMode::Binary => {
                let (computed, rendered) = &self.sems.binary[slot];
                s.waits.push((computed.handle, 0, read_stage));
                s.signals.push((rendered.handle, 0));
            }
            // No wait at all: the point of `none`.
            SyncMode::Unsynchronized => {}
            _ => s.waits.push((self.sems.computed.handle, frame + 1, read_stage)),
        }
        s.signals.push((self.sems.rendered.handle, frame + 1));
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
            Driver::Bridged(mut bridge) => match bridge.stop() {
                Some(b) => Driver::Stopped(b),
                None => Driver::Done,
            },
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
        if self.mode != SyncMode::Binary {
            keep(self.release_waiting_draws());
        }
        keep(self.ctx.queue_wait_idle().map_err(SyncError::from));
        first.map_or(Ok(()), Err)
    }

    /// Host-signal `computed` up to the last value a draw was promised, if it is not there yet.
    fn release_waiting_draws(&self) -> Result<(), SyncError> {
        let current = self.ctx.timeline_value(self.sems.computed.handle)?;
        if current < self.requested {
            log::warn!("releasing draws waiting on 'computed' {} (reached {current})", self.requested);
            self.ctx.signal_timeline(self.sems.computed.handle, self.requested)?;
        }
        Ok(())
    }

    /// Move every compute-side span reported so far into `out`: the bridge thread's, the
    /// render thread's own (`blocking`), and the backend's GPU timing (when the render thread
    /// owns the backend, or after shutdown). Never blocks.
    pub fn take_spans(&mut self, out: &mut Vec<Span>) {
        out.append(&mut self.local_spans);
        if let Some(rx) = &self.bridge_spans {
            out.extend(rx.try_iter());
        }
        if let Driver::Inline(b) | Driver::Stopped(b) = &mut self.driver {
            b.take_spans(out);
        }
    }

    /// How the backend's GPU times were put on the host clock (None: it has none, or the bridge
    /// thread still owns it).
    pub fn compute_clock(&self) -> Option<ClockInfo> {
        match &self.driver {
            Driver::Inline(b) | Driver::Stopped(b) => b.clock_info(),
            _ => None,
        }
    }

    /// Run `f` with the backend while nothing else runs on it: either after [`Self::shutdown`], or
    /// in a mode where the render thread owns it (not `bridged` before shutdown).
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
            _ => Err(SyncError::Bridge("the backend is owned by the bridge thread in bridged mode".into())),
        }
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

    #[test]
    fn compute_waits_for_the_slots_previous_reader() {
        // K = 3: frames 0..2 wait for nothing; frame 3 reuses slot 0 after frame 0's draw (value 1).
        assert_eq!(compute_wait_value(0, 3), None);
        assert_eq!(compute_wait_value(2, 3), None);
        assert_eq!(compute_wait_value(3, 3), Some(1));
        assert_eq!(compute_wait_value(10, 3), Some(8));
        // K = 1: every frame waits for the previous draw.
        assert_eq!(compute_wait_value(0, 1), None);
        assert_eq!(compute_wait_value(5, 1), Some(5));
    }

    #[test]
    fn throttle_keeps_two_frames_in_flight() {
        assert_eq!(throttle_value(0), None);
        assert_eq!(throttle_value(1), None);
        assert_eq!(throttle_value(2), Some(1));
        assert_eq!(throttle_value(7), Some(6));
    }

    fn device(timeline_export: bool, binary_export: bool) -> PhysicalDeviceInfo {
        PhysicalDeviceInfo { name: "dev".into(), timeline_export, binary_export, ..Default::default() }
    }

    #[test]
    fn auto_mode_follows_backend_and_device() {
        let gpu = device(true, true);
        let lvp = device(false, false);
        assert_eq!(resolve_mode(SyncMode::Auto, BackendKind::Vulkan, &lvp).unwrap(), SyncMode::External);
        assert_eq!(resolve_mode(SyncMode::Auto, BackendKind::Cuda, &gpu).unwrap(), SyncMode::External);
        assert_eq!(resolve_mode(SyncMode::Auto, BackendKind::Cuda, &lvp).unwrap(), SyncMode::Bridged);
        assert_eq!(resolve_mode(SyncMode::Auto, BackendKind::Hip, &gpu).unwrap(), SyncMode::Bridged);
        assert_eq!(resolve_mode(SyncMode::Auto, BackendKind::Cpu, &gpu).unwrap(), SyncMode::Bridged);
    }

    #[test]
    fn impossible_requests_are_refused_with_reason() {
        let lvp = device(false, false);
        let e = resolve_mode(SyncMode::External, BackendKind::Cpu, &lvp).unwrap_err().to_string();
        assert!(e.contains("cpu backend cannot"), "{e}");
        let e = resolve_mode(SyncMode::External, BackendKind::Cuda, &lvp).unwrap_err().to_string();
        assert!(e.contains("cannot export timeline"), "{e}");
        // The vulkan backend uses the semaphores natively: no export needed.
        assert_eq!(resolve_mode(SyncMode::Binary, BackendKind::Vulkan, &lvp).unwrap(), SyncMode::Binary);
        let e = resolve_mode(SyncMode::Bridged, BackendKind::Vulkan, &lvp).unwrap_err().to_string();
        assert!(e.contains("deadlock"), "{e}");
        // HIP external is attempted (and may fall back later).
        assert_eq!(resolve_mode(SyncMode::External, BackendKind::Hip, &lvp).unwrap(), SyncMode::External);
    }
}
