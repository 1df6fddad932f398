//! The collector of the app's own per-frame figures: spans of each frame arrive from several
//! places and at different times (the render thread's own marks at once, the bridge thread's
//! through a channel, CUDA events and Vulkan timestamps a few frames later); the collector keeps
//! the last [`LAG`] frames open, and closes a frame once it is older than that: its figures go to
//! the streaming statistics, and then the frame is forgotten. Memory is constant. (The
//! hand-offs, the GPU's limit, the checker and the trace are the profiler crate's, fed by
//! [`super::program`].)
//!
//! # Examples
//!
//! ```
//! use vkhip::profile::collect::LAG;
//! use vkhip::profile::{Phase, Profiler, RenderMarks, Span, Stamp, Track};
//!
//! let mut p = Profiler::new();
//! let no_timestamps = |_: u64| None;
//! for f in 0..20 {
//!     // The compute side's write of frame f: 400 µs on the host clock.
//!     let t = 1_000_000 * (f + 1);
//!     p.add(Span::host(f, Track::Compute, Phase::Write, t, t + 400_000), &no_timestamps);
//!     p.end_frame(RenderMarks::start(f));
//! }
//! // Only frames more than LAG behind the latest are closed while the run goes on.
//! assert_eq!(p.frames_closed(), 20 - 1 - LAG);
//! // A Vulkan timestamp without a mapping to the host clock cannot be placed: not counted.
//! let (start, end) = (Stamp::Vulkan(1), Stamp::Vulkan(2));
//! p.add(Span { frame: 19, track: Track::Queue, phase: Phase::Draw, start, end }, &no_timestamps);
//! p.finish(vkhip::profile::clock::host_now_ns());
//! assert_eq!(p.frames_closed(), 20);
//! let figures: Vec<_> = p.drain_closed().collect();
//! assert_eq!(figures.len(), 20);
//! assert!(figures.iter().enumerate().all(|(i, f)| f.frame == i as u64 && f.compute_ns == Some(400_000)));
//! assert!(figures.iter().all(|f| f.draw_ns.is_none()));
//! assert_eq!((p.stats.frame.count(), p.stats.compute.count(), p.stats.draw.count()), (20, 20, 0));
//! assert!((p.stats.compute.p50_ms() - 0.4).abs() < 0.01);
//! ```

use super::clock::{host_now_ns, rss_bytes, thread_cpu_ns};
use super::span::{gpu_ns_to_ticks, HostSpan, Phase, Span, Stamp, Track};
use super::stats::Stat;
use std::collections::VecDeque;

/// Frames kept open for late spans. CUDA events and draw timestamps arrive within a few frames
/// (up to 8 frames in flight: a draw's timestamps are read when its command buffer comes round
/// again); a span for a frame already closed is counted as late.
pub const LAG: u64 = 16;

/// The frame at which the report's "after warm-up" memory figure is taken (or the last frame of
/// a shorter run).
pub const RSS_WARMUP_FRAME: u64 = 10_000;

/// The render thread's marks for one frame: each [`RenderMarks::lap`] closes a phase that began
/// where the previous one ended.
#[derive(Clone, Debug)]
pub struct RenderMarks {
    pub frame: u64,
    pub start_ns: u64,
    /// Whether the throttle host-waited before this frame (true unless told otherwise). With
    /// more than two frames in flight the render thread submits the frames after such a wait
    /// back to back; the report's frame time spreads each such run over its frames.
    pub waited: bool,
    last_ns: u64,
    /// The thread's CPU clock at the last mark.
    cpu_last_ns: u64,
    /// The render thread's CPU time so far, by phase.
    split: CpuSplit,
    spans: Vec<HostSpan>,
}

/// The render thread's CPU time for one frame, by phase (ns): where the report's `render cpu`
/// goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSplit {
    /// Waiting: the throttle's host wait and (window) the swapchain acquire, inside the driver.
    pub wait_ns: u64,
    /// Handing frames over to the compute side (CUDA/HIP calls, the bridge's channel).
    pub handoff_ns: u64,
    /// Recording and submitting the draw, and (window) presenting.
    pub submit_ns: u64,
    /// The rest: the frame loop and the profiler's own bookkeeping.
    pub other_ns: u64,
}

impl CpuSplit {
    /// The frame's whole CPU time.
    pub fn total_ns(&self) -> u64 {
        self.wait_ns + self.handoff_ns + self.submit_ns + self.other_ns
    }
}

impl RenderMarks {
    /// Frame `frame` starts now.
    pub fn start(frame: u64) -> Self {
        let now = host_now_ns();
        let cpu = thread_cpu_ns();
        RenderMarks {
            frame,
            start_ns: now,
            waited: true,
            last_ns: now,
            cpu_last_ns: cpu,
            split: CpuSplit::default(),
            spans: Vec::new(),
        }
    }

    /// The phases closed so far.
    pub fn spans(&self) -> &[HostSpan] {
        &self.spans
    }

    /// Close `phase`: it ran from the previous mark until now.
    pub fn lap(&mut self, phase: Phase) {
        let now = host_now_ns();
        let cpu = thread_cpu_ns();
        let used = cpu.saturating_sub(self.cpu_last_ns);
        self.cpu_last_ns = cpu;
        match phase {
            Phase::Throttle | Phase::Acquire => self.split.wait_ns += used,
            Phase::Handoff => self.split.handoff_ns += used,
            Phase::Submit | Phase::Present => self.split.submit_ns += used,
            _ => self.split.other_ns += used,
        }
        self.spans.push(HostSpan { track: Track::Render, phase, start_ns: self.last_ns, end_ns: now });
        self.last_ns = now;
    }

    /// Close `phase` on the host clock only, without reading the thread's CPU clock (a system
    /// call, where the host clock is not): the CPU time spent in it goes to the next phase
    /// closed with [`Self::lap`] (or the rest). For a phase whose CPU time is negligible: the
    /// throttle when it did not wait (checking a counter it already holds).
    pub fn lap_host(&mut self, phase: Phase) {
        let now = host_now_ns();
        self.spans.push(HostSpan { track: Track::Render, phase, start_ns: self.last_ns, end_ns: now });
        self.last_ns = now;
    }
}

/// The per-frame figures the report and the overlay use, once a frame is closed. Times in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameFigures {
    pub frame: u64,
    /// Start of this frame to the start of the next (the last: to the end of its draw). With
    /// more than two frames in flight, frames submitted back to back after one throttle wait
    /// share that run's time equally (see [`RenderMarks::waited`]).
    pub frame_ns: u64,
    /// The draw's GPU time from the moment its heights were readable to its end.
    pub draw_ns: Option<u64>,
    /// The whole draw command buffer, including any GPU wait for `computed`.
    pub draw_cmd_ns: Option<u64>,
    /// The compute side's write: kernel or dispatch on the GPU, else the host write.
    pub compute_ns: Option<u64>,
    /// GPU-side wait for `rendered` plus the signal of `computed` (cuda/hip/vulkan in GPU modes).
    pub wait_signal_ns: Option<u64>,
    /// Frame time minus the longer of the draw and the compute write (clamped at 0).
    pub overhead_ns: Option<u64>,
    /// The frame of a compute write (of another frame) that ran while this frame's draw read.
    pub kernel_inside: Option<u64>,
    /// Post stage (`--post`): the filter reading the rendered image and writing the output (GPU,
    /// or the host for `bridged` and `cpu`).
    pub post_filter_ns: Option<u64>,
    /// What the post stage adds to a frame's way to the screen: the draw's end → the copy's end.
    pub post_latency_ns: Option<u64>,
    /// Render thread CPU time for the frame.
    pub cpu_ns: u64,
    /// The same without the throttle's wait: vkhip's own work per frame (recording, submitting,
    /// handing over), not the driver's polling while the render thread waits for the GPU.
    pub cpu_work_ns: u64,
    /// `cpu_ns` by phase.
    pub cpu_split: CpuSplit,
    /// Whether the throttle host-waited before this frame ([`RenderMarks::waited`]).
    pub waited: bool,
}

/// All streaming statistics of a run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub frame: Stat,
    pub draw: Stat,
    pub draw_cmd: Stat,
    pub compute: Stat,
    pub wait_signal: Stat,
    pub overhead: Stat,
    pub cpu: Stat,
    pub cpu_work: Stat,
    /// `cpu` by phase (see [`CpuSplit`]).
    pub cpu_wait: Stat,
    pub cpu_handoff: Stat,
    pub cpu_submit: Stat,
    pub cpu_other: Stat,
    /// `cpu` of the frames whose throttle host-waited, the wait phase's part of it, and `cpu` of
    /// the other frames: what a wait costs the render thread (the report's `in flight` line).
    pub cpu_waited: Stat,
    pub cpu_waited_wait: Stat,
    pub cpu_unwaited: Stat,
    pub throttle: Stat,
    pub handoff_host: Stat,
    pub submit: Stat,
    /// The post stage (see [`FrameFigures::post_filter_ns`] and
    /// [`FrameFigures::post_latency_ns`]).
    pub post_filter: Stat,
    pub post_latency: Stat,
    /// Draws measured, and those a compute write of another frame overlapped.
    pub draws: u64,
    pub overlapped_draws: u64,
}

#[derive(Debug)]
struct Open {
    frame: u64,
    start_ns: Option<u64>,
    waited: bool,
    cpu_split: CpuSplit,
    spans: Vec<HostSpan>,
}

/// The collector of one run.
pub struct Profiler {
    open: VecDeque<Open>,
    /// Frame number of `open[0]`.
    first_open: u64,
    pub stats: Stats,
    /// (frame, start, end) of the last closed frames' compute writes, for the draws they overlap.
    recent_writes: VecDeque<(u64, u64, u64)>,
    /// Nanoseconds per Vulkan timestamp tick, to map [`Stamp::Gpu`] (None: no timestamps).
    pub timestamp_period: Option<f32>,
    /// Spans that arrived for a frame already closed.
    pub late_spans: u64,
    /// Spans whose clock could not be mapped (no Vulkan clock).
    pub unmapped_spans: u64,
    /// RSS after warm-up: (frame, bytes).
    pub rss_warm: Option<(u64, u64)>,
    /// RSS at the end of the run.
    pub rss_end: Option<u64>,
    /// Frames before this one are left out of the statistics (`--warmup-frames`).
    pub warmup_frames: u64,
    /// When frame 0 was finished: its draw's end (or, without timestamps, the next frame's
    /// start), on the host clock. The report's start-up figure.
    pub first_frame_end_ns: Option<u64>,
    closed: VecDeque<FrameFigures>,
    frames_closed: u64,
    /// The run of frames the last closed one belongs to: (first frame, its start), where the
    /// first frame's throttle waited.
    burst: Option<(u64, u64)>,
}

impl Default for Profiler {
    fn default() -> Self {
        Profiler::new()
    }
}

impl Profiler {
    pub fn new() -> Self {
        Profiler {
            open: VecDeque::new(),
            first_open: 0,
            stats: Stats::default(),
            recent_writes: VecDeque::new(),
            timestamp_period: None,
            late_spans: 0,
            unmapped_spans: 0,
            rss_warm: None,
            rss_end: None,
            warmup_frames: 0,
            first_frame_end_ns: None,
            closed: VecDeque::new(),
            frames_closed: 0,
            burst: None,
        }
    }

    pub fn frames_closed(&self) -> u64 {
        self.frames_closed
    }

    fn open_frame(&mut self, frame: u64) -> Option<&mut Open> {
        if frame < self.first_open {
            return None;
        }
        if self.open.is_empty() {
            self.first_open = frame;
        }
        while self.first_open + (self.open.len() as u64) <= frame {
            let f = self.first_open + self.open.len() as u64;
            self.open.push_back(Open {
                frame: f,
                start_ns: None,
                waited: false,
                cpu_split: CpuSplit::default(),
                spans: Vec::new(),
            });
        }
        self.open.get_mut((frame - self.first_open) as usize)
    }

    /// Add a span from anywhere; `vulkan` maps Vulkan ticks to host ns (None: no timestamps).
    /// GPU timer stamps go through the same map ([`gpu_ns_to_ticks`] with
    /// [`Self::timestamp_period`]). Returns the span on the host clock (None: not mapped).
    pub fn add(&mut self, span: Span, vulkan: &dyn Fn(u64) -> Option<u64>) -> Option<HostSpan> {
        let host = self.map(span, vulkan);
        match host {
            Some(h) => self.add_host(span.frame, h),
            None => self.unmapped_spans += 1,
        }
        host
    }

    /// `span` on the host clock (see [`Self::add`]), without adding it.
    pub fn map(&self, span: Span, vulkan: &dyn Fn(u64) -> Option<u64>) -> Option<HostSpan> {
        let period = self.timestamp_period;
        let map = |s: Stamp| match s {
            Stamp::Host(ns) => Some(ns),
            Stamp::Vulkan(t) => vulkan(t),
            Stamp::Gpu(ns) => vulkan(gpu_ns_to_ticks(ns, f64::from(period?))),
        };
        let (start_ns, end_ns) = (map(span.start)?, map(span.end)?);
        Some(HostSpan { track: span.track, phase: span.phase, start_ns, end_ns: end_ns.max(start_ns) })
    }

    /// Add a span already on the host clock.
    pub fn add_host(&mut self, frame: u64, span: HostSpan) {
        match self.open_frame(frame) {
            Some(open) => open.spans.push(span),
            None => self.late_spans += 1,
        }
    }

    /// The render thread finished frame `marks.frame`: record its marks and close frames older
    /// than [`LAG`].
    pub fn end_frame(&mut self, marks: RenderMarks) {
        // The CPU time since the last mark is the rest's.
        let mut split = marks.split;
        split.other_ns += thread_cpu_ns().saturating_sub(marks.cpu_last_ns);
        let frame = marks.frame;
        if let Some(open) = self.open_frame(frame) {
            open.start_ns = Some(marks.start_ns);
            open.waited = marks.waited;
            open.cpu_split = split;
            open.spans.extend(marks.spans);
        } else {
            self.late_spans += marks.spans.len() as u64;
        }
        if frame + 1 == RSS_WARMUP_FRAME {
            self.rss_warm = rss_bytes().map(|b| (frame + 1, b));
        }
        while self.first_open + LAG < frame && !self.open.is_empty() {
            self.close_first(None);
        }
    }

    /// Close every open frame: the run ended, its last draw finished at `end_ns`.
    pub fn finish(&mut self, end_ns: u64) {
        while !self.open.is_empty() {
            self.close_first(Some(end_ns));
        }
        if self.rss_warm.is_none() {
            self.rss_warm = rss_bytes().map(|b| (self.frames_closed, b));
        }
        self.rss_end = rss_bytes();
    }

    /// Figures of frames closed since the last call (for the overlay); at most [`LAG`] × 4 kept.
    pub fn drain_closed(&mut self) -> impl Iterator<Item = FrameFigures> + '_ {
        self.closed.drain(..)
    }

    /// Frame time of `open` (just taken off the open frames, started at `start`) as its share of
    /// the run of frames it was submitted in: from the start of the run's first frame (whose
    /// throttle waited) to the start of the next frame whose throttle waits (or `end_ns`, the
    /// end of the run), divided by the frames in between. With two frames in flight every frame
    /// waits and this is the time to the next frame's start. None while the run's ends are not
    /// known (then the plain start-to-start time is used).
    fn paced_frame_ns(&mut self, open: &Open, start: u64, end_ns: Option<u64>) -> Option<u64> {
        if open.waited {
            self.burst = Some((open.frame, start));
        }
        let (first, first_start) = self.burst.filter(|&(f, _)| f + LAG >= open.frame)?;
        let ended = || self.open.iter().take_while(|o| o.start_ns.is_some());
        let next = ended().find(|o| o.waited).and_then(|o| Some((o.frame, o.start_ns?))).or_else(|| {
            let last = ended().last().map_or(open.frame, |o| o.frame);
            Some((last + 1, end_ns?))
        })?;
        (next.0 > first).then(|| next.1.saturating_sub(first_start) / (next.0 - first))
    }

    fn close_first(&mut self, end_ns: Option<u64>) {
        let Some(open) = self.open.pop_front() else { return };
        self.first_open = open.frame + 1;
        let Some(start) = open.start_ns else {
            // Spans for a frame the render thread never finished (an interrupted run): dropped.
            return;
        };
        let next_start = self.open.front().and_then(|o| o.start_ns).or(end_ns);
        let frame_ns =
            self.paced_frame_ns(&open, start, end_ns).or(next_start.map(|n| n.saturating_sub(start)));
        let mut figures = figures(&open, frame_ns);
        figures.kernel_inside = self.kernel_inside(&open);
        if open.frame >= self.warmup_frames {
            self.record(&figures, &open.spans);
        }
        let draw_end = find(&open.spans, Track::Queue, Phase::Draw).map(|s| s.end_ns);
        let write = find(&open.spans, Track::Compute, Phase::Write).map(|w| (w.start_ns, w.end_ns));
        if open.frame == 0 {
            self.first_frame_end_ns = draw_end.or(next_start);
        }
        if let Some((start, end)) = write {
            self.recent_writes.push_back((open.frame, start, end));
            if self.recent_writes.len() > LAG as usize {
                self.recent_writes.pop_front();
            }
        }
        self.frames_closed += 1;
        self.closed.push_back(figures);
        while self.closed.len() > 4 * LAG as usize {
            self.closed.pop_front();
        }
    }

    /// The frame of a compute write of another frame (closed recently, or still open) that ran
    /// inside `open`'s draw, if any.
    fn kernel_inside(&self, open: &Open) -> Option<u64> {
        let draw = find(&open.spans, Track::Queue, Phase::Draw)?;
        let inside = |start: u64, end: u64| start < draw.end_ns && end > draw.start_ns;
        let closed = self.recent_writes.iter().filter(|w| inside(w.1, w.2)).map(|w| w.0);
        let pending = self.open.iter().filter_map(|o| {
            find(&o.spans, Track::Compute, Phase::Write)
                .filter(|w| inside(w.start_ns, w.end_ns))
                .map(|_| o.frame)
        });
        closed.chain(pending).find(|&f| f != open.frame)
    }

    fn record(&mut self, f: &FrameFigures, spans: &[HostSpan]) {
        let s = &mut self.stats;
        if f.draw_ns.is_some() {
            s.draws += 1;
            s.overlapped_draws += u64::from(f.kernel_inside.is_some());
        }
        s.frame.record(f.frame_ns);
        s.cpu.record(f.cpu_ns);
        s.cpu_work.record(f.cpu_work_ns);
        s.cpu_wait.record(f.cpu_split.wait_ns);
        s.cpu_handoff.record(f.cpu_split.handoff_ns);
        s.cpu_submit.record(f.cpu_split.submit_ns);
        s.cpu_other.record(f.cpu_split.other_ns);
        if f.waited {
            s.cpu_waited.record(f.cpu_ns);
            s.cpu_waited_wait.record(f.cpu_split.wait_ns);
        } else {
            s.cpu_unwaited.record(f.cpu_ns);
        }
        let opt = |stat: &mut Stat, v: Option<u64>| {
            if let Some(v) = v {
                stat.record(v)
            }
        };
        opt(&mut s.draw, f.draw_ns);
        opt(&mut s.draw_cmd, f.draw_cmd_ns);
        opt(&mut s.compute, f.compute_ns);
        opt(&mut s.wait_signal, f.wait_signal_ns);
        opt(&mut s.overhead, f.overhead_ns);
        opt(&mut s.post_filter, f.post_filter_ns);
        opt(&mut s.post_latency, f.post_latency_ns);
        let host = |phases: &[Phase]| -> u64 {
            spans
                .iter()
                .filter(|x| x.track == Track::Render && phases.contains(&x.phase))
                .map(HostSpan::dur_ns)
                .sum()
        };
        s.throttle.record(host(&[Phase::Throttle]));
        s.handoff_host.record(host(&[Phase::Handoff]));
        s.submit.record(host(&[Phase::Submit, Phase::Present]));
    }
}

fn find(spans: &[HostSpan], track: Track, phase: Phase) -> Option<&HostSpan> {
    spans.iter().find(|s| s.track == track && s.phase == phase)
}

/// The post stage's filter of a frame: on the compute track (GPU, or the bridge thread's host
/// clock), else wherever it was recorded.
fn post_filter(spans: &[HostSpan]) -> Option<&HostSpan> {
    find(spans, Track::Compute, Phase::PostFilter)
        .or_else(|| spans.iter().find(|s| s.phase == Phase::PostFilter))
}

/// The figures of one frame from its spans.
fn figures(open: &Open, frame_ns: Option<u64>) -> FrameFigures {
    let spans = &open.spans;
    let draw = find(spans, Track::Queue, Phase::Draw);
    let draw_wait = find(spans, Track::Queue, Phase::WaitComputed);
    // The compute side's write: the GPU's own timing when there is one, else the host's.
    let write = find(spans, Track::Compute, Phase::Write)
        .or_else(|| find(spans, Track::Bridge, Phase::Write))
        .or_else(|| find(spans, Track::Render, Phase::Write));
    let gpu_wait_signal: Vec<&HostSpan> = spans
        .iter()
        .filter(|s| s.track == Track::Compute && matches!(s.phase, Phase::WaitRendered | Phase::Signal))
        .collect();
    let frame_known = frame_ns.is_some();
    let frame_ns = frame_ns.unwrap_or(0);
    let draw_ns = draw.map(HostSpan::dur_ns);
    let compute_ns = write.map(HostSpan::dur_ns);
    let draw_cmd_ns = match (draw_wait, draw) {
        (Some(w), Some(d)) => Some(d.end_ns.saturating_sub(w.start_ns)),
        (None, Some(d)) => Some(d.dur_ns()),
        _ => None,
    };
    let busiest = draw_ns.into_iter().chain(compute_ns).max();
    let copy = find(spans, Track::Queue, Phase::PostCopy);
    let post_latency_ns = match (draw, copy) {
        (Some(d), Some(c)) if c.end_ns >= d.end_ns => Some(c.end_ns - d.end_ns),
        _ => None,
    };
    FrameFigures {
        frame: open.frame,
        frame_ns,
        draw_ns,
        draw_cmd_ns,
        compute_ns,
        wait_signal_ns: (!gpu_wait_signal.is_empty())
            .then(|| gpu_wait_signal.iter().map(|s| s.dur_ns()).sum()),
        overhead_ns: (frame_known && busiest.is_some())
            .then(|| frame_ns.saturating_sub(busiest.unwrap_or(0))),
        kernel_inside: None,
        post_filter_ns: post_filter(spans).map(HostSpan::dur_ns),
        post_latency_ns,
        cpu_ns: open.cpu_split.total_ns(),
        cpu_work_ns: open.cpu_split.total_ns() - open.cpu_split.wait_ns,
        cpu_split: open.cpu_split,
        waited: open.waited,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burn about `ns` of this thread's CPU time.
    fn burn(ns: u64) {
        let c0 = thread_cpu_ns();
        let mut x = 1u64;
        while thread_cpu_ns() - c0 < ns {
            for i in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
        }
        std::hint::black_box(x);
    }

    #[test]
    fn cpu_time_is_split_by_the_phase_it_was_spent_in() {
        let mut p = Profiler::new();
        let mut marks = RenderMarks::start(0);
        burn(3_000_000);
        marks.lap(Phase::Throttle);
        burn(1_000_000);
        marks.lap(Phase::Handoff);
        burn(6_000_000);
        marks.lap(Phase::Submit);
        burn(2_000_000); // after the last mark: the rest
        p.end_frame(marks);
        p.finish(host_now_ns());
        let f = p.drain_closed().next().expect("frame 0 closed");
        let s = f.cpu_split;
        let ms = |ns: u64| ns as f64 / 1e6;
        // Each phase holds at least what was burnt in it, and not the others' share.
        assert!((3.0..5.0).contains(&ms(s.wait_ns)), "{s:?}");
        assert!((1.0..2.9).contains(&ms(s.handoff_ns)), "{s:?}");
        assert!((6.0..8.0).contains(&ms(s.submit_ns)), "{s:?}");
        assert!((2.0..3.9).contains(&ms(s.other_ns)), "{s:?}");
        assert_eq!(s.wait_ns + s.handoff_ns + s.submit_ns + s.other_ns, f.cpu_ns);
        assert_eq!(f.cpu_work_ns, f.cpu_ns - s.wait_ns);
    }

    #[test]
    fn a_host_only_lap_charges_its_cpu_time_to_the_next_phase() {
        let mut p = Profiler::new();
        let mut marks = RenderMarks::start(0);
        burn(1_000_000);
        marks.lap_host(Phase::Throttle);
        burn(2_000_000);
        marks.lap(Phase::Handoff);
        // The throttle's span is still there, on the host clock, and the hand-off follows it.
        let phases: Vec<_> = marks.spans().iter().map(|s| s.phase).collect();
        assert_eq!(phases, [Phase::Throttle, Phase::Handoff]);
        assert_eq!(marks.spans()[0].end_ns, marks.spans()[1].start_ns);
        p.end_frame(marks);
        p.finish(host_now_ns());
        let f = p.drain_closed().next().expect("frame 0 closed");
        let s = f.cpu_split;
        assert_eq!(s.wait_ns, 0, "{s:?}");
        assert!(s.handoff_ns >= 3_000_000, "{s:?}");
        assert_eq!(s.wait_ns + s.handoff_ns + s.submit_ns + s.other_ns, f.cpu_ns);
    }

    fn host(frame: u64, track: Track, phase: Phase, a: u64, b: u64) -> Span {
        Span::host(frame, track, phase, a, b)
    }

    fn no_vk(_: u64) -> Option<u64> {
        None
    }

    /// Frame `f`'s render marks: started at `start_ns`, one 1 µs submit.
    fn submitted(f: u64, start_ns: u64) -> RenderMarks {
        let mut m = RenderMarks::start(f);
        m.start_ns = start_ns;
        m.spans.push(HostSpan {
            track: Track::Render,
            phase: Phase::Submit,
            start_ns,
            end_ns: start_ns + 1000,
        });
        m
    }

    /// A frame of `external` mode: draw waits 20 µs for the kernel, which ends at +50 µs.
    fn feed_frame(p: &mut Profiler, f: u64, t0: u64) {
        let us = 1000;
        let mut m = RenderMarks::start(f);
        m.start_ns = t0;
        m.spans.push(HostSpan {
            track: Track::Render,
            phase: Phase::Throttle,
            start_ns: t0,
            end_ns: t0 + 5 * us,
        });
        m.spans.push(HostSpan {
            track: Track::Render,
            phase: Phase::Submit,
            start_ns: t0 + 6 * us,
            end_ns: t0 + 10 * us,
        });
        p.add(host(f, Track::Compute, Phase::WaitRendered, t0 + 10 * us, t0 + 20 * us), &no_vk);
        p.add(host(f, Track::Compute, Phase::Write, t0 + 20 * us, t0 + 50 * us), &no_vk);
        p.add(host(f, Track::Compute, Phase::Signal, t0 + 50 * us, t0 + 52 * us), &no_vk);
        p.add(host(f, Track::Queue, Phase::WaitComputed, t0 + 40 * us, t0 + 60 * us), &no_vk);
        p.add(host(f, Track::Queue, Phase::Draw, t0 + 60 * us, t0 + 160 * us), &no_vk);
        p.end_frame(m);
    }

    #[test]
    fn figures_of_a_steady_run() {
        let mut p = Profiler::new();
        for f in 0..40 {
            feed_frame(&mut p, f, f * 200_000);
        }
        p.finish(40 * 200_000);
        let s = &p.stats;
        assert_eq!(s.frame.count(), 40);
        assert!((s.frame.p50_ms() - 0.200).abs() < 0.001, "{}", s.frame.p50_ms());
        assert!((s.draw.p50_ms() - 0.100).abs() < 0.001);
        assert!((s.draw_cmd.p50_ms() - 0.120).abs() < 0.001);
        assert!((s.compute.p50_ms() - 0.030).abs() < 0.001);
        assert!((s.wait_signal.p50_ms() - 0.012).abs() < 0.001);
        // 200 µs frame − max(100 draw, 30 compute).
        assert!((s.overhead.p50_ms() - 0.100).abs() < 0.001);
        assert!((s.throttle.mean_ms() - 0.005).abs() < 1e-9);
        assert_eq!(p.late_spans, 0);
    }

    /// Frames submitted back to back after one throttle wait (4 frames in flight: a wait every
    /// third frame) share the run's time; the mean is the plain start-to-start mean.
    #[test]
    fn frames_of_a_run_share_its_time() {
        let mut p = Profiler::new();
        let mut plain = Profiler::new();
        // Runs of 3 frames every 6 ms, 10 µs apart within a run; frames 0–3 never wait.
        let start =
            |f: u64| if f < 4 { f * 10_000 } else { 40_000 + (f - 4) / 3 * 6_000_000 + (f - 4) % 3 * 10_000 };
        for f in 0..61 {
            let mut marks = RenderMarks { start_ns: start(f), ..RenderMarks::start(f) };
            marks.waited = f >= 4 && (f - 4) % 3 == 0;
            p.end_frame(marks.clone());
            plain.end_frame(RenderMarks { waited: true, ..marks });
        }
        let end = start(61);
        p.finish(end);
        plain.finish(end);
        let figures: Vec<_> = p.drain_closed().collect();
        let plain_figures: Vec<_> = plain.drain_closed().collect();
        // Every frame from frame 4 on is 2 ms: 6 ms over the run's 3 frames.
        assert!(figures[4..].iter().all(|f| f.frame_ns == 2_000_000), "{:?}", &figures[4..8]);
        // Before the first wait: start to start. Without the waits marked: the raw intervals.
        assert_eq!(figures[0].frame_ns, 10_000);
        assert_eq!(plain_figures[5].frame_ns, 10_000);
        assert_eq!(plain_figures[6].frame_ns, 6_000_000 - 20_000);
        let total = |v: &[FrameFigures]| v.iter().map(|f| f.frame_ns).sum::<u64>();
        assert_eq!(total(&figures), total(&plain_figures));
        assert!((p.stats.frame.p50_ms() - 2.0).abs() < 0.01, "{}", p.stats.frame.p50_ms());
        assert!(plain.stats.frame.p50_ms() < 0.02, "{}", plain.stats.frame.p50_ms());
    }

    #[test]
    fn open_frames_are_bounded_and_late_spans_counted() {
        let mut p = Profiler::new();
        for f in 0..1000 {
            feed_frame(&mut p, f, f * 200_000);
            assert!(p.open.len() as u64 <= LAG + 2, "{} open", p.open.len());
        }
        p.add(host(3, Track::Compute, Phase::Write, 1, 2), &no_vk);
        assert_eq!(p.late_spans, 1);
        p.finish(1000 * 200_000);
        assert_eq!(p.frames_closed(), 1000);
        assert!(p.closed.len() <= 4 * LAG as usize);
    }

    /// A CUDA run with GPU stamps (K = 2): frame f's kernel stamps f·200 + 20 .. + 50 µs of the
    /// GPU timer, its draw (Vulkan ticks of 2 ns) reads from f·200 + 60 to + 160 µs, and frame 3's
    /// kernel is slow enough to run inside draw 2.
    #[test]
    fn gpu_stamps_map_through_the_vulkan_clock() {
        let mut p = Profiler::new();
        p.timestamp_period = Some(2.0);
        let us = 1000;
        // The Vulkan mapping: tick t is host ns 1_000_000 + 2t.
        let vk = |t: u64| Some(1_000_000 + 2 * t);
        for f in 0..6u64 {
            let t0 = f * 200 * us;
            let (ks, ke) = if f == 3 { (t0 - 100 * us, t0 + 50 * us) } else { (t0 + 20 * us, t0 + 50 * us) };
            let gpu = Span {
                frame: f,
                track: Track::Compute,
                phase: Phase::Write,
                start: Stamp::Gpu(ks),
                end: Stamp::Gpu(ke),
            };
            p.add(gpu, &vk);
            let tick = |ns: u64| Stamp::Vulkan(ns / 2);
            let draw =
                |phase, a, b| Span { frame: f, track: Track::Queue, phase, start: tick(a), end: tick(b) };
            p.add(draw(Phase::WaitComputed, t0 + 10 * us, t0 + 60 * us), &vk);
            p.add(draw(Phase::Draw, t0 + 60 * us, t0 + 160 * us), &vk);
            p.end_frame(submitted(f, 1_000_000 + t0));
        }
        p.finish(1_000_000 + 1200 * us);
        assert_eq!(p.unmapped_spans, 0);
        let f: Vec<FrameFigures> = p.drain_closed().collect();
        // GPU ns map like the Vulkan ticks they are: the kernel is 30 µs on the host clock.
        assert_eq!(f[1].compute_ns, Some(30 * us));
        // Frame 3's kernel (500..650 µs) ran inside draw 2 (460..560 µs); no other draw had one.
        let inside: Vec<Option<u64>> = f.iter().map(|x| x.kernel_inside).collect();
        assert_eq!(inside, [None, None, Some(3), None, None, None]);
        assert_eq!((p.stats.draws, p.stats.overlapped_draws), (6, 1));
        // Without a timestamp period (no Vulkan timestamps), GPU stamps cannot be placed.
        let mut q = Profiler::new();
        q.add(
            Span {
                frame: 0,
                track: Track::Compute,
                phase: Phase::Write,
                start: Stamp::Gpu(1),
                end: Stamp::Gpu(2),
            },
            &vk,
        );
        assert_eq!(q.unmapped_spans, 1);
    }

    /// A `--post outline` run, K = 2, frames 200 µs apart: the draw ends at +100 µs, the filter
    /// runs +130..+180 µs, the copy +190..+220 µs. The collector records the filter and the
    /// latency (draw end → copy end); the hand-offs are the profiler crate's.
    #[test]
    fn post_stage_spans_give_the_filter_and_the_latency() {
        let mut p = Profiler::new();
        let us = 1000;
        for f in 0..10u64 {
            let t0 = f * 200 * us;
            p.add(host(f, Track::Queue, Phase::Draw, t0 + 40 * us, t0 + 100 * us), &no_vk);
            p.add(host(f, Track::Compute, Phase::PostWait, t0 + 100 * us, t0 + 130 * us), &no_vk);
            p.add(host(f, Track::Compute, Phase::PostFilter, t0 + 130 * us, t0 + 180 * us), &no_vk);
            p.add(host(f, Track::Compute, Phase::PostSignal, t0 + 180 * us, t0 + 181 * us), &no_vk);
            p.add(host(f, Track::Queue, Phase::PostCopy, t0 + 190 * us, t0 + 220 * us), &no_vk);
            p.end_frame(submitted(f, t0));
        }
        p.finish(2200 * us);
        let f: Vec<FrameFigures> = p.drain_closed().collect();
        assert!(f.iter().all(|x| x.post_filter_ns == Some(50 * us)), "{:?}", f[0]);
        // Draw end (+100) → copy end (+220).
        assert!(f.iter().all(|x| x.post_latency_ns == Some(120 * us)));
        let s = &p.stats;
        assert_eq!((s.post_filter.count(), s.post_latency.count()), (10, 10));
        assert!((s.post_latency.p99_ms() - 0.120).abs() < 0.001);
        // A run without a post stage records none of it.
        let mut q = Profiler::new();
        for f in 0..5 {
            feed_frame(&mut q, f, f * 200_000);
        }
        q.finish(1_000_000);
        assert!(q.stats.post_filter.is_empty() && q.stats.post_latency.is_empty());
    }

    #[test]
    fn vulkan_stamps_need_a_clock() {
        let mut p = Profiler::new();
        let s = Span {
            frame: 0,
            track: Track::Queue,
            phase: Phase::Draw,
            start: Stamp::Vulkan(10),
            end: Stamp::Vulkan(20),
        };
        p.add(s, &no_vk);
        assert_eq!(p.unmapped_spans, 1);
        p.add(s, &|t| Some(t * 1000));
        let m = RenderMarks::start(0);
        p.end_frame(m);
        p.finish(host_now_ns());
        assert!((p.stats.draw.p50_ms() - 0.010).abs() < 1e-4);
    }
}
