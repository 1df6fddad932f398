//! The profiler of a frame loop (headless or window): gathers every actor's spans and recorded
//! operations once per frame, maps them onto the host clock, feeds the app's own figures
//! ([`Profiler`]) and hands the rest to the profiler crate's streaming analysis (checker,
//! hand-offs, GPU busy) and, with `--trace`, its trace ring, on a thread of their own
//! ([`Feed`]); at the end writes the trace.
//!
//! # Examples
//!
//! The trace's file is claimed before the first frame, so a bad `--trace` path fails at once,
//! naming the path; a good one leaves nothing behind until the trace is written.
//!
//! ```
//! use vkhip::app::profiling::create_trace_file;
//!
//! let dir = std::env::temp_dir().join(format!("vkhip-profiling-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let err = create_trace_file(&dir).unwrap_err();
//! assert_eq!(err.to_string(), format!("cannot write the trace to {}: it is a directory", dir.display()));
//!
//! let path = dir.join("trace.json");
//! let pending = create_trace_file(&path).unwrap();
//! assert_eq!(pending.path(), path.as_path());
//! drop(pending); // no trace written: no file
//! assert!(!path.exists());
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use super::session::Session;
use crate::compute::BackendKind;
use crate::pending::PendingFile;
use crate::profile::clock::{host_now_ns, ClockInfo};
use crate::profile::feed::{Batch, Feed, Outcome};
use crate::profile::program::{self, Layout, Rec};
use crate::profile::span::HostSpan;
use crate::profile::{Phase, Profiler, RenderMarks, Span, Track};
use crate::render::Renderer;
use crate::sync::plan::MemoryPath;
use crate::vk::clock::GpuClock;
use serde_json::{json, Value};
use std::path::Path;
use vkhip_profile::model::{Api, FrameEnd, Track as ModelTrack};
use vkhip_profile::Summary;

/// Frames between two updates of the tracks' clocks for the checker.
const TRACKS_EVERY: u64 = 64;

/// Errors writing the trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot write the trace to {path}: {what}")]
    NotWritable { path: String, what: String },
    #[error("cannot write the trace to {path}: {what}")]
    Write { path: String, what: String },
}

/// Create the trace's file before any frame, so an unwritable path fails at once (see
/// [`PendingFile`]).
pub fn create_trace_file(path: &Path) -> Result<PendingFile, TraceError> {
    PendingFile::create(path)
        .map_err(|what| TraceError::NotWritable { path: path.display().to_string(), what })
}

/// The most GPU draw times [`FrameProfile::keep_draw_times`] keeps (the older half goes).
pub const KEPT_DRAW_TIMES: usize = 1 << 16;

/// One run's profiler: the app's own figures, and the profiler crate's analysis and trace ring
/// on a thread of their own ([`Feed`]).
pub struct FrameProfile {
    pub profiler: Profiler,
    /// Vulkan timestamps each frame writes, draw and compute together (0 with `--gpu-timing
    /// off`): what the profiler itself costs the GPU per frame (docs/ARCHITECTURE.md, "The
    /// profiler's own cost"). Known after the first frame.
    pub gpu_timestamps_per_frame: u32,
    feed: Feed,
    /// The analysis thread's results, after [`Self::finish`].
    outcome: Option<Outcome>,
    /// How the bridge thread's backend maps its times (it owns the backend while the run lasts).
    bridge_clock: Option<ClockInfo>,
    bridge_clock_changed: bool,
    /// The newest frame ended.
    frame: u64,
    scratch: Vec<Span>,
    recs: Vec<Rec>,
    /// Each frame's draw on the GPU (ns), kept only when asked ([`Self::keep_draw_times`]).
    draw_ns: Option<Vec<u64>>,
}

impl FrameProfile {
    /// `trace_frames`: keep the last N frames for `--trace` (None: statistics only). Starts the
    /// render thread's record of the protocol's operations ([`program::enable`]): call it on the
    /// render thread.
    pub fn new(session: &Session, trace_frames: Option<usize>) -> Self {
        let mut profiler = Profiler::new();
        profiler.timestamp_period = session.clock.as_ref().map(|_| session.ctx.physical.timestamp_period);
        let gpu_scopes = crate::profile::gpu_timing() && session.clock.is_some();
        program::enable(Track::Render, gpu_scopes);
        FrameProfile {
            profiler,
            gpu_timestamps_per_frame: 0,
            feed: Feed::start(layout(session, None), trace_frames),
            outcome: None,
            bridge_clock: None,
            bridge_clock_changed: false,
            frame: 0,
            scratch: Vec::new(),
            recs: Vec::new(),
            draw_ns: None,
        }
    }

    /// Keep every frame's GPU draw time (the queue's draw span, ns) for [`Self::draw_times`]:
    /// the embed API's raster limit (a bounded ring of the last [`KEPT_DRAW_TIMES`]).
    pub fn keep_draw_times(&mut self) {
        self.draw_ns.get_or_insert_with(Vec::new);
    }

    /// The GPU draw times kept so far (ns; empty unless [`Self::keep_draw_times`]).
    pub fn draw_times(&self) -> &[u64] {
        self.draw_ns.as_deref().unwrap_or_default()
    }

    /// Collect what every actor measured and recorded so far: the app's own figures here, the
    /// rest to the analysis thread. `marks`: the render thread's spans of the frame that just
    /// ended.
    fn gather(
        &mut self,
        session: &mut Session,
        renderer: &mut Renderer,
        last: bool,
        marks: &[HostSpan],
    ) -> Batch {
        self.gpu_timestamps_per_frame = gpu_timestamps_per_frame(session, renderer);
        let clock = session.clock.as_ref();
        let map = |t: u64| clock.map(|c| c.to_host_ns(t));
        let frame = self.frame;
        let mut b = self.feed.batch(frame, last);
        // The render thread's host items, ordered by time on the other side.
        b.render.extend(
            marks
                .iter()
                .map(|s| (s.end_ns, Rec::Span(Span::host(frame, s.track, s.phase, s.start_ns, s.end_ns)))),
        );
        // The render thread's operations.
        b.dropped = program::take(&mut self.recs);
        for rec in self.recs.drain(..) {
            match rec {
                Rec::Op(op) if op.track.is_host() => b.render.push((op.host_ns.unwrap_or(0), Rec::Op(op))),
                Rec::Op(op) => b.ops.push(op),
                Rec::Span(_) | Rec::Clock(_) => {}
            }
        }
        // The bridge thread's records, in its order, spans mapped.
        session.sync.take_records(&mut self.recs);
        for rec in self.recs.drain(..) {
            match rec {
                Rec::Span(s) => {
                    if let Some(h) = self.profiler.add(s, &map) {
                        b.bridge.push(Rec::Span(Span::host(s.frame, h.track, h.phase, h.start_ns, h.end_ns)));
                    }
                }
                Rec::Clock(c) => {
                    self.bridge_clock_changed |= self.bridge_clock.as_ref() != Some(&c);
                    self.bridge_clock = Some(c);
                }
                op => b.bridge.push(op),
            }
        }
        // The GPU spans read back (and the render thread's own host steps).
        renderer.take_spans(&mut self.scratch, last);
        session.sync.take_spans(&mut self.scratch);
        for s in self.scratch.drain(..) {
            let Some(h) = self.profiler.add(s, &map) else { continue };
            if let Some(kept) =
                self.draw_ns.as_mut().filter(|_| h.phase == Phase::Draw && h.track == Track::Queue)
            {
                if kept.len() >= KEPT_DRAW_TIMES {
                    kept.drain(..KEPT_DRAW_TIMES / 2);
                }
                kept.push(h.end_ns.saturating_sub(h.start_ns));
            }
            if h.track.is_host() {
                b.render
                    .push((h.end_ns, Rec::Span(Span::host(s.frame, h.track, h.phase, h.start_ns, h.end_ns))));
            } else {
                b.spans.push((s.frame, h));
            }
        }
        // The clocks' stated accuracy grows with the drift seen: the checker uses the latest,
        // taken every TRACKS_EVERY frames (the clock's description is a formatted string).
        if last || frame % TRACKS_EVERY == 0 || self.bridge_clock_changed {
            b.tracks = layout(session, self.bridge_clock.clone()).tracks;
            self.bridge_clock_changed = false;
        }
        b
    }

    /// The render thread finished a frame: collect what every actor measured so far.
    pub fn end_frame(&mut self, session: &mut Session, renderer: &mut Renderer, marks: RenderMarks) {
        self.frame = marks.frame;
        let mut batch = self.gather(session, renderer, false, marks.spans());
        batch.end = Some(FrameEnd { frame: marks.frame, host_ns: host_now_ns() });
        self.feed.send(batch);
        self.profiler.end_frame(marks);
    }

    /// The run is over and the protocol shut down (nothing pending): collect the rest, close
    /// every frame and summarise; the last frame's draw finished at `end_ns`.
    pub fn finish(&mut self, session: &mut Session, renderer: &mut Renderer, end_ns: u64) {
        if let Some(c) = &session.clock {
            c.recheck_idle(&session.ctx);
        }
        let batch = self.gather(session, renderer, true, &[]);
        self.feed.send(batch);
        self.profiler.finish(end_ns);
        self.outcome = self.feed.finish(clock_notes(session, self.bridge_clock.clone()));
    }

    /// The crate's summary of the run (after [`Self::finish`]): the checker over every frame,
    /// the hand-offs, each frame's GPU busy time.
    pub fn summary(&self) -> Option<&Summary> {
        self.outcome.as_ref().map(|o| &o.summary)
    }

    /// What went missing between the actors and the analysis (after [`Self::finish`]).
    pub fn losses(&self) -> program::Losses {
        self.outcome.as_ref().map(|o| o.losses).unwrap_or_default()
    }

    /// How each clock was aligned, for the report and the trace: (vulkan, compute). Compute
    /// times on the Vulkan device clock (GPU stamps) carry the Vulkan mapping's accuracy and
    /// drift: they go through its anchors and have none of their own.
    pub fn clocks(session: &Session) -> (ClockInfo, Option<ClockInfo>) {
        clocks(session, None)
    }

    /// Write the trace (if tracing) into `file`; returns the report's line for it.
    pub fn write_trace(
        &self,
        session: &Session,
        file: PendingFile,
    ) -> Result<Option<(&'static str, String)>, TraceError> {
        let Some(ring) = self.outcome.as_ref().and_then(|o| o.ring.as_ref()) else { return Ok(None) };
        let shown = file.path().display().to_string();
        let extra = self.extra(session);
        let err = |what: String| TraceError::Write { path: shown.clone(), what };
        file.commit(
            |out| ring.write_to(out, &extra).map_err(|e| err(e.to_string())),
            |e| err(e.to_string()),
        )?;
        let kept = ring.timeline().frame_ends.len();
        Ok(Some(("trace", format!("{shown} (last {kept} frames; open in ui.perfetto.dev)"))))
    }

    /// The run's configuration, in the trace's `otherData.extra` (what `vkhip trace check` and
    /// the scripts read beside the timeline).
    fn extra(&self, session: &Session) -> Value {
        let sync = &session.sync;
        let plan = sync.plan();
        let (vk, compute) = clocks(session, self.bridge_clock.clone());
        let clock =
            |c: &ClockInfo| json!({"method": c.method, "accuracy_ns": c.accuracy_ns, "drift_ns": c.drift_ns});
        let losses = self.losses();
        json!({
            "generator": concat!("vkhip ", env!("CARGO_PKG_VERSION")),
            "backend": sync.backend_kind().name(),
            "launch": sync.backend_kind().launch_path(),
            "sync": sync.mode().name(),
            "slots": sync.slots(),
            "post": sync.post_kind().to_string(),
            "post_batch": plan.post_batch,
            "run_ahead": plan.run_ahead,
            "batch": plan.batch,
            "frames_in_flight": plan.frames_in_flight,
            "submit": plan.submit.name(),
            "grid": session.grid.to_string(),
            "device": session.ctx.physical.name,
            "vulkan_clock": clock(&vk),
            "compute_clock": compute.as_ref().map(clock),
            "compute_on_gpu_clock": compute.as_ref().is_some_and(|c| c.on_vulkan_clock),
            "gpu_timestamps_per_frame": self.gpu_timestamps_per_frame,
            "late_spans": self.profiler.late_spans,
            "unmapped_spans": self.profiler.unmapped_spans,
            "scopes_given_up": losses.scopes_given_up,
            "ops_dropped": losses.ops_dropped,
        })
    }
}

impl Drop for FrameProfile {
    fn drop(&mut self) {
        program::disable();
    }
}

/// (vulkan, compute) clock infos; `bridge`: the compute clock as the bridge thread last told.
fn clocks(session: &Session, bridge: Option<ClockInfo>) -> (ClockInfo, Option<ClockInfo>) {
    let vk = session
        .clock
        .as_ref()
        .map_or_else(|| ClockInfo { method: "no timestamps".into(), ..Default::default() }, GpuClock::info);
    let compute = session.sync.compute_clock().or(bridge).map(|c| on_vulkan_clock(c, &vk));
    (vk, compute)
}

/// The clock notes of the trace and the crate's report: one line per mapping.
fn clock_notes(session: &Session, bridge: Option<ClockInfo>) -> Vec<String> {
    let (vk, compute) = clocks(session, bridge);
    let line = |who: &str, c: &ClockInfo| {
        format!(
            "{who}: {}, ±{:.1} µs (largest drift between anchors {:.1} µs)",
            c.method,
            c.accuracy_ns as f64 / 1e3,
            c.drift_ns as f64 / 1e3
        )
    };
    let mut notes = vec![line("vulkan", &vk)];
    notes.extend(compute.map(|c| line("compute", &c)));
    notes
}

/// The model of this run: its tracks (with each one's clock), slots and post stage. The
/// render thread and the graphics queue always; the bridge thread in `bridged` and `none`, the
/// submission thread in `external` with cuda or hip (one track, [`Track::Bridge`]); the
/// compute track unless the host writes (`cpu`). Vulkan timestamps and CUDA's GPU stamps share
/// one clock domain; HIP's (and staged CUDA's) events and the host clock are apart.
fn layout(session: &Session, bridge: Option<ClockInfo>) -> Layout {
    let sync = &session.sync;
    let backend = sync.backend_kind();
    let (vk, compute) = clocks(session, bridge);
    let host = |name: &str| ModelTrack {
        name: name.into(),
        api: Api::Host,
        clock: "host clock (CLOCK_MONOTONIC)".into(),
        accuracy_ns: 0,
        clock_domain: None,
    };
    let mut tracks = vec![(Track::Render, host("render"))];
    if sync.plan().compute_thread() {
        // The same track either way: the host thread that owns the backend.
        let name = if sync.plan().submission_thread() { "submission" } else { "bridge" };
        tracks.push((Track::Bridge, host(name)));
    }
    let vulkan = |name: &str| ModelTrack {
        name: name.into(),
        api: Api::Vulkan,
        clock: format!("Vulkan timestamps: {}", vk.method),
        accuracy_ns: vk.accuracy_ns,
        clock_domain: Some(0),
    };
    tracks.push((Track::Queue, vulkan("graphics")));
    let compute_track = match backend {
        BackendKind::Cpu | BackendKind::Auto => None,
        BackendKind::Vulkan | BackendKind::CudaInVulkan => Some(vulkan("compute (graphics queue)")),
        BackendKind::Cuda | BackendKind::Hip => {
            let api = if backend == BackendKind::Cuda { Api::Cuda } else { Api::Hip };
            // Before the bridge thread says: CUDA's kernels stamp the GPU timer unless staged.
            let stamped = compute
                .as_ref()
                .map_or(backend == BackendKind::Cuda && sync.plan().memory != MemoryPath::Staged, |c| {
                    c.on_vulkan_clock
                });
            let c = compute.unwrap_or_default();
            Some(ModelTrack {
                name: "compute".into(),
                api,
                clock: if c.method.is_empty() { format!("{} stream", api.name()) } else { c.method },
                accuracy_ns: if stamped { vk.accuracy_ns } else { c.accuracy_ns },
                clock_domain: stamped.then_some(0),
            })
        }
    };
    tracks.extend(compute_track.map(|t| (Track::Compute, t)));
    Layout {
        slots: sync.slots(),
        post: sync.post_kind() != crate::compute::post::PostKind::None,
        compute_on_gpu: !matches!(backend, BackendKind::Cpu | BackendKind::Auto),
        tracks,
    }
}

/// Vulkan timestamps one frame writes: the draw's command buffer's (which also times the write
/// in a one-submission frame), plus the `vulkan`/`cuda-in-vulkan` dispatch's own when it is
/// submitted apart. CUDA's kernel stamps (`%globaltimer`) are not Vulkan timestamps.
pub fn gpu_timestamps_per_frame(session: &Session, renderer: &Renderer) -> u32 {
    let plan = session.sync.plan();
    let dispatch = plan.backend.on_vulkan_queue()
        && !plan.joined()
        && crate::profile::gpu_timing()
        && session.ctx.physical.timestamp_bits > 0;
    renderer.stamps_per_frame() + if dispatch { crate::compute::vulkan::STAMPS } else { 0 }
}

/// `compute` as stated in the report: on the Vulkan device clock, the Vulkan mapping's accuracy.
///
/// ```
/// use vkhip::app::profiling::on_vulkan_clock;
/// use vkhip::profile::clock::ClockInfo;
///
/// let vk = ClockInfo { method: "VK_KHR_calibrated_timestamps".into(), accuracy_ns: 2_900, drift_ns: 400, on_vulkan_clock: true };
/// let stamps = ClockInfo { method: "cuda kernels stamp the GPU timer".into(), on_vulkan_clock: true, ..Default::default() };
/// let c = on_vulkan_clock(stamps, &vk);
/// assert_eq!((c.accuracy_ns, c.drift_ns), (2_900, 400));
/// assert_eq!(c.method, "cuda kernels stamp the GPU timer, mapped with VK_KHR_calibrated_timestamps");
/// // Events with anchors of their own keep their own figures.
/// let events = ClockInfo { method: "hip events".into(), accuracy_ns: 84_000, ..Default::default() };
/// assert_eq!(on_vulkan_clock(events.clone(), &vk), events);
/// ```
pub fn on_vulkan_clock(compute: ClockInfo, vk: &ClockInfo) -> ClockInfo {
    if !compute.on_vulkan_clock {
        return compute;
    }
    ClockInfo {
        method: format!("{}, mapped with {}", compute.method, vk.method),
        accuracy_ns: vk.accuracy_ns,
        drift_ns: vk.drift_ns,
        on_vulkan_clock: true,
    }
}
