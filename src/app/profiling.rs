//! The profiler of a frame loop (headless or window): gathers every actor's spans once per frame,
//! maps them onto the host clock, and at the end writes the trace (`--trace`).
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
use crate::pending::PendingFile;
use crate::profile::clock::ClockInfo;
use crate::profile::trace::{self, TraceMeta};
use crate::profile::{Profiler, RenderMarks, Span};
use crate::render::Renderer;
use crate::vk::clock::GpuClock;
use std::path::Path;

/// Errors writing the trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot write the trace to {path}: {what}")]
    NotWritable { path: String, what: String },
    #[error("cannot write the trace to {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// Create the trace's file before any frame, so an unwritable path fails at once (see
/// [`PendingFile`]).
pub fn create_trace_file(path: &Path) -> Result<PendingFile, TraceError> {
    PendingFile::create(path)
        .map_err(|what| TraceError::NotWritable { path: path.display().to_string(), what })
}

/// One run's profiler and the buffer its spans pass through.
pub struct FrameProfile {
    pub profiler: Profiler,
    /// Vulkan timestamps each frame writes, draw and compute together (0 with `--gpu-timing
    /// off`): what the profiler itself costs the GPU per frame (docs/ARCHITECTURE.md, "The
    /// profiler's own cost"). Known after the first frame.
    pub gpu_timestamps_per_frame: u32,
    scratch: Vec<Span>,
}

impl FrameProfile {
    /// `trace_frames`: keep the last N frames for `--trace` (None: statistics only).
    pub fn new(session: &Session, trace_frames: Option<usize>) -> Self {
        let mut profiler = Profiler::new(session.sync.slots(), trace_frames);
        profiler.timestamp_period = session.clock.as_ref().map(|_| session.ctx.physical.timestamp_period);
        FrameProfile { profiler, gpu_timestamps_per_frame: 0, scratch: Vec::new() }
    }

    fn gather(&mut self, session: &mut Session, renderer: &mut Renderer, finish: bool) {
        self.gpu_timestamps_per_frame = gpu_timestamps_per_frame(session, renderer);
        renderer.take_spans(&mut self.scratch, finish);
        session.sync.take_spans(&mut self.scratch);
        let clock = session.clock.as_ref();
        let map = |t: u64| clock.map(|c| c.to_host_ns(t));
        for s in self.scratch.drain(..) {
            self.profiler.add(s, &map);
        }
    }

    /// The render thread finished a frame: collect what every actor measured so far.
    pub fn end_frame(&mut self, session: &mut Session, renderer: &mut Renderer, marks: RenderMarks) {
        self.gather(session, renderer, false);
        self.profiler.end_frame(marks);
    }

    /// The run is over and the protocol shut down (nothing pending): collect the rest and close
    /// every frame; the last frame's draw finished at `end_ns`.
    pub fn finish(&mut self, session: &mut Session, renderer: &mut Renderer, end_ns: u64) {
        if let Some(c) = &session.clock {
            c.recheck_idle(&session.ctx);
        }
        self.gather(session, renderer, true);
        self.profiler.finish(end_ns);
    }

    /// How each clock was aligned, for the report and the trace: (vulkan, compute). Compute
    /// times on the Vulkan device clock (GPU stamps) carry the Vulkan mapping's accuracy and
    /// drift: they go through its anchors and have none of their own.
    pub fn clocks(session: &Session) -> (ClockInfo, Option<ClockInfo>) {
        let vk = session.clock.as_ref().map_or_else(
            || ClockInfo { method: "no timestamps".into(), ..Default::default() },
            GpuClock::info,
        );
        let compute = session.sync.compute_clock().map(|c| on_vulkan_clock(c, &vk));
        (vk, compute)
    }

    /// Write the trace (if tracing) into `file`; returns the report's line for it.
    pub fn write_trace(
        &self,
        session: &Session,
        file: PendingFile,
    ) -> Result<Option<(&'static str, String)>, TraceError> {
        let Some(ring) = self.profiler.trace() else { return Ok(None) };
        let shown = file.path().display().to_string();
        let (vk, compute) = Self::clocks(session);
        let compute = compute.unwrap_or_default();
        let meta = TraceMeta {
            backend: session.sync.backend_kind().to_string(),
            launch: session.sync.backend_kind().launch_path().to_string(),
            sync: session.sync.mode().to_string(),
            slots: session.sync.slots(),
            post: session.sync.post_kind().to_string(),
            run_ahead: session.sync.plan().run_ahead,
            batch: session.sync.plan().batch,
            frames_in_flight: session.sync.plan().frames_in_flight,
            grid: session.grid.to_string(),
            device: session.ctx.physical.name.clone(),
            vulkan_clock: vk.method,
            vulkan_accuracy_ns: vk.accuracy_ns,
            vulkan_drift_ns: vk.drift_ns,
            compute_clock: compute.method,
            compute_accuracy_ns: compute.accuracy_ns,
            compute_drift_ns: compute.drift_ns,
            compute_on_gpu_clock: compute.on_vulkan_clock,
            compute_in_graphics_queue: session.sync.backend_kind().on_vulkan_queue(),
            submit: session.sync.plan().submit.name().to_string(),
            gpu_timestamps_per_frame: self.gpu_timestamps_per_frame,
            late_spans: self.profiler.late_spans,
        };
        trace::write(file, ring, &meta)
            .map_err(|source| TraceError::Write { path: shown.clone(), source })?;
        Ok(Some(("trace", format!("{shown} (last {} frames; open in ui.perfetto.dev)", ring.len()))))
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
