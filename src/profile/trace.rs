//! The trace: the last N frames' spans, written as Chrome trace-event JSON (the format
//! ui.perfetto.dev and chrome://tracing open).
//!
//! Layout of the file:
//! - one process, "vkhip", with one thread per [`Track`] (tid 1 render thread, 2 bridge thread,
//!   3 graphics queue, 4 compute, 5 hand-off), named by `thread_name` metadata (the compute track
//!   is "compute (GPU: in the graphics queue)" when its work is submitted there: the `vulkan` and
//!   `cuda-in-vulkan` backends, whose spans come from Vulkan timestamps around the dispatch or launch);
//! - one complete event (`"ph": "X"`) per span, `ts`/`dur` in microseconds from the run's first
//!   traced instant, `args` = {frame, slot, role?}; `role` is `write` for the compute side's write
//!   of a slot and `read` for the draw from the moment its heights were readable: what
//!   `vkhip trace check` reads; a draw that a compute write of another frame overlapped carries
//!   `kernel_inside` (that frame);
//! - flow arrows (`"ph": "s"` → `"ph": "f"`, `"bp": "e"`) from each signal to the wait it releases:
//!   `computed` (compute signal → the draw of that frame), `rendered` (end of draw f → the compute
//!   side's wait of frame f+K, and → the render thread's throttle of frame f+2);
//! - a counter (`"ph": "C"`) "frames in flight": submitted draws not yet finished;
//! - `otherData`: the run's configuration and how each clock was aligned, with its accuracy.

use super::span::{HostSpan, Phase, Track};
use crate::pending::PendingFile;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Default `--trace-frames`.
pub const DEFAULT_TRACE_FRAMES: u32 = 3000;

/// One sample of the frames-in-flight counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterSample {
    pub ts_ns: u64,
    pub frames: u64,
}

/// One closed frame's spans.
#[derive(Clone, Debug)]
pub struct FrameTrace {
    pub frame: u64,
    pub slot: usize,
    pub spans: Vec<HostSpan>,
    pub counters: Vec<CounterSample>,
    /// The frame of a compute write of another frame that ran inside this frame's draw (the
    /// draw's `kernel_inside` argument in the trace).
    pub kernel_inside: Option<u64>,
}

/// The last `capacity` frames.
///
/// # Examples
///
/// ```
/// use vkhip::profile::trace::{FrameTrace, TraceRing};
///
/// // Bounded whatever the run's length: the oldest frames fall out and are counted.
/// let mut ring = TraceRing::new(3);
/// for frame in 0..5 {
///     ring.push(FrameTrace { frame, slot: (frame % 2) as usize, spans: vec![], counters: vec![], kernel_inside: None });
/// }
/// assert_eq!(ring.len(), 3);
/// assert_eq!(ring.dropped, 2);
/// assert_eq!(ring.frames().map(|f| f.frame).collect::<Vec<_>>(), [2, 3, 4]);
/// ```
#[derive(Clone, Debug)]
pub struct TraceRing {
    frames: VecDeque<FrameTrace>,
    capacity: usize,
    /// Frames that fell out of the ring.
    pub dropped: u64,
}

impl TraceRing {
    pub fn new(capacity: usize) -> Self {
        TraceRing { frames: VecDeque::new(), capacity: capacity.max(1), dropped: 0 }
    }

    pub fn push(&mut self, f: FrameTrace) {
        if self.frames.len() == self.capacity {
            self.frames.pop_front();
            self.dropped += 1;
        }
        self.frames.push_back(f);
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn frames(&self) -> impl Iterator<Item = &FrameTrace> {
        self.frames.iter()
    }
}

/// What the trace says about the run, beside its events (`otherData`).
#[derive(Clone, Debug, Default)]
pub struct TraceMeta {
    pub backend: String,
    /// How the slot's writer was launched (which path ran).
    pub launch: String,
    pub sync: String,
    pub slots: usize,
    /// `--post` (`none` or `outline`): the post stage, whose K pairs are the slots' K.
    pub post: String,
    /// Run-ahead R and batch B of the sync plan.
    pub run_ahead: usize,
    pub batch: usize,
    pub frames_in_flight: u64,
    pub grid: String,
    pub device: String,
    /// How Vulkan timestamps were mapped to the host clock, and the accuracy in ns.
    pub vulkan_clock: String,
    pub vulkan_accuracy_ns: u64,
    pub vulkan_drift_ns: u64,
    /// How the compute API's events were mapped (empty when there are none), and the accuracy.
    pub compute_clock: String,
    pub compute_accuracy_ns: u64,
    pub compute_drift_ns: u64,
    /// The compute side's spans are GPU stamps on the Vulkan device clock (same mapping).
    pub compute_on_gpu_clock: bool,
    /// The compute side is work submitted to the graphics queue (`vulkan`, `cuda-in-vulkan`).
    pub compute_in_graphics_queue: bool,
    /// `joined` (one submission per frame: dispatch → barrier → draw) or `split`.
    pub submit: String,
    /// Vulkan timestamps one frame writes (the profiler's own cost on the GPU).
    pub gpu_timestamps_per_frame: u32,
    pub late_spans: u64,
}

fn us(ns: u64, origin: u64) -> f64 {
    (ns as f64 - origin as f64) / 1000.0
}

/// A time strictly inside `s` near `at` (flow events bind to the slice that encloses them).
fn inside(s: &HostSpan, at: u64) -> u64 {
    if s.end_ns <= s.start_ns {
        return s.start_ns;
    }
    at.clamp(s.start_ns, s.end_ns - 1)
}

/// Build the trace document.
pub fn document(ring: &TraceRing, meta: &TraceMeta) -> Value {
    let origin = ring.frames().flat_map(|f| f.spans.iter().map(|s| s.start_ns)).min().unwrap_or(0);
    let mut events = vec![json!({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "vkhip"}})];
    for t in Track::ALL {
        // A kernel or dispatch submitted to the graphics queue runs there: its track says so.
        let name = match t {
            Track::Compute if meta.compute_in_graphics_queue => "compute (GPU: in the graphics queue)",
            _ => t.name(),
        };
        events.push(
            json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": t.tid(), "args": {"name": name}}),
        );
        events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": t.tid(), "args": {"sort_index": t.tid()}}));
    }
    let by_frame: std::collections::HashMap<u64, &FrameTrace> = ring.frames().map(|f| (f.frame, f)).collect();
    let span_of = |frame: u64, pred: &dyn Fn(&HostSpan) -> bool| {
        by_frame.get(&frame).and_then(|f| f.spans.iter().find(|s| pred(s)))
    };
    let mut flow_id = 0u64;
    let mut flow = |events: &mut Vec<Value>, name: &str, from: &HostSpan, to: &HostSpan| {
        flow_id += 1;
        let from_ts = inside(from, from.end_ns.saturating_sub(1));
        let to_ts = inside(to, to.start_ns);
        events.push(json!({"ph": "s", "id": flow_id, "name": name, "cat": "sync", "pid": 1,
            "tid": from.track.tid(), "ts": us(from_ts, origin)}));
        events.push(json!({"ph": "f", "bp": "e", "id": flow_id, "name": name, "cat": "sync", "pid": 1,
            "tid": to.track.tid(), "ts": us(to_ts, origin)}));
    };
    for f in ring.frames() {
        for s in &f.spans {
            let mut args = json!({"frame": f.frame, "slot": f.slot});
            if let Some(role) = s.phase.role() {
                args["role"] = json!(role);
            }
            if let (Phase::Draw, Some(g)) = (s.phase, f.kernel_inside) {
                args["kernel_inside"] = json!(g);
            }
            events.push(json!({"ph": "X", "name": s.phase.name(), "cat": "frame", "pid": 1,
                "tid": s.track.tid(), "ts": us(s.start_ns, origin),
                "dur": s.dur_ns() as f64 / 1000.0, "args": args}));
        }
        for c in &f.counters {
            events.push(json!({"ph": "C", "name": "frames in flight", "pid": 1,
                "ts": us(c.ts_ns, origin), "args": {"frames": c.frames}}));
        }
        // `computed`: whoever signalled it → this frame's draw.
        let draw = span_of(f.frame, &|s| s.track == Track::Queue && s.phase == Phase::Draw);
        let signal = span_of(f.frame, &|s| s.phase == Phase::Signal)
            .or_else(|| span_of(f.frame, &|s| s.track == Track::Compute && s.phase == Phase::Write));
        if let (Some(sig), Some(d)) = (signal, draw) {
            flow(&mut events, "computed", sig, d);
        }
        // `rendered`: this draw's end → the wait of the frame that reuses the slot, and → the
        // throttle of the frame that reuses the command buffer.
        if let Some(d) = draw {
            let reuse = f.frame + meta.slots as u64;
            if let Some(w) = span_of(reuse, &|s| s.phase == Phase::WaitRendered) {
                flow(&mut events, "rendered", d, w);
            }
            let again = f.frame + meta.frames_in_flight;
            if let Some(t) = span_of(again, &|s| s.track == Track::Render && s.phase == Phase::Throttle) {
                flow(&mut events, "rendered", d, t);
            }
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": format!("vkhip {}", env!("CARGO_PKG_VERSION")),
            "clock": "CLOCK_MONOTONIC",
            "origin_ns": origin,
            "backend": meta.backend,
            "launch": meta.launch,
            "sync": meta.sync,
            "slots": meta.slots,
            "post": meta.post,
            "run_ahead": meta.run_ahead,
            "batch": meta.batch,
            "frames_in_flight": meta.frames_in_flight,
            "grid": meta.grid,
            "device": meta.device,
            "frames": ring.len(),
            "frames_dropped": ring.dropped,
            "late_spans": meta.late_spans,
            "vulkan_clock": meta.vulkan_clock,
            "vulkan_accuracy_ns": meta.vulkan_accuracy_ns,
            "vulkan_drift_ns": meta.vulkan_drift_ns,
            "compute_clock": meta.compute_clock,
            "compute_accuracy_ns": meta.compute_accuracy_ns,
            "compute_drift_ns": meta.compute_drift_ns,
            "compute_on_gpu_clock": meta.compute_on_gpu_clock,
            "submit": meta.submit,
            "gpu_timestamps_per_frame": meta.gpu_timestamps_per_frame,
        }
    })
}

/// Write the trace into `file` (created before the run; see [`PendingFile`]): the target is
/// replaced only once the whole trace is written, so a failed write never leaves half a trace or
/// destroys an earlier one.
pub fn write(file: PendingFile, ring: &TraceRing, meta: &TraceMeta) -> std::io::Result<()> {
    let doc = document(ring, meta);
    file.commit(|out| serde_json::to_writer(out, &doc).map_err(std::io::Error::from), |e| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(track: Track, phase: Phase, a: u64, b: u64) -> HostSpan {
        HostSpan { track, phase, start_ns: a, end_ns: b }
    }

    fn ring() -> TraceRing {
        let mut r = TraceRing::new(10);
        for f in 0..4u64 {
            let t = 1_000_000 + f * 100_000;
            r.push(FrameTrace {
                frame: f,
                slot: (f % 2) as usize,
                spans: vec![
                    span(Track::Render, Phase::Throttle, t, t + 1000),
                    span(Track::Compute, Phase::WaitRendered, t + 1000, t + 2000),
                    span(Track::Compute, Phase::Write, t + 2000, t + 12_000),
                    span(Track::Compute, Phase::Signal, t + 12_000, t + 13_000),
                    span(Track::Queue, Phase::WaitComputed, t + 5000, t + 15_000),
                    span(Track::Queue, Phase::Draw, t + 15_000, t + 60_000),
                ],
                counters: vec![CounterSample { ts_ns: t + 2000, frames: 1 }],
                kernel_inside: (f == 2).then_some(3),
            });
        }
        r
    }

    #[test]
    fn document_has_tracks_spans_roles_flows_and_counters() {
        let meta = TraceMeta { slots: 2, frames_in_flight: 2, ..Default::default() };
        let doc = document(&ring(), &meta);
        let events = doc["traceEvents"].as_array().unwrap();
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 5);
        assert!(names.contains(&"hand-off (GPU)"));
        let x: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 24);
        assert_eq!(x.iter().filter(|e| e["args"]["role"] == "write").count(), 4);
        assert_eq!(x.iter().filter(|e| e["args"]["role"] == "read").count(), 4);
        // The first span starts at ts 0; the draw of frame 0 at 15 µs lasting 45 µs.
        let draw0 = x.iter().find(|e| e["name"] == "draw" && e["args"]["frame"] == 0).unwrap();
        assert_eq!(draw0["ts"], 15.0);
        assert_eq!(draw0["dur"], 45.0);
        // Frame 2's draw is labelled with the kernel that ran inside it; the others are not.
        let draws = x.iter().filter(|e| e["name"] == "draw");
        let labelled: Vec<&Value> = draws.filter_map(|e| e["args"].get("kernel_inside")).collect();
        assert_eq!(labelled, [&json!(3)]);
        // 4 computed flows; rendered: frames 0,1 → waits of frames 2,3 and throttles of 2,3.
        let starts = events.iter().filter(|e| e["ph"] == "s").count();
        let ends = events.iter().filter(|e| e["ph"] == "f").count();
        assert_eq!((starts, ends), (8, 8));
        assert_eq!(events.iter().filter(|e| e["ph"] == "C").count(), 4);
        assert_eq!(doc["otherData"]["slots"], 2);
    }

    #[test]
    fn ring_drops_oldest() {
        let mut r = TraceRing::new(2);
        for f in 0..5 {
            r.push(FrameTrace { frame: f, slot: 0, spans: vec![], counters: vec![], kernel_inside: None });
        }
        assert_eq!(r.len(), 2);
        assert_eq!(r.dropped, 3);
        assert_eq!(r.frames().map(|f| f.frame).collect::<Vec<_>>(), vec![3, 4]);
    }

    #[test]
    fn write_replaces_atomically_and_keeps_the_old_file_on_failure() {
        let dir = std::env::temp_dir().join(format!("vkhip-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let pending = PendingFile::create(&path).unwrap();
        write(pending, &ring(), &TraceMeta { slots: 2, ..Default::default() }).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(v["traceEvents"].as_array().unwrap().len() > 20);
        // A path in a missing directory fails before anything is written and leaves nothing.
        let bad = dir.join("missing").join("t.json");
        assert!(PendingFile::create(&bad).is_err());
        // A trace that is never committed leaves the earlier file and no temporary file.
        drop(PendingFile::create(&path).unwrap());
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 1);
        assert_eq!(serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()).unwrap(), v);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
