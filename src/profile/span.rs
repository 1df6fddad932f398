//! What the timeline is made of: spans of one frame's phases, each on one track (actor), and
//! times on the clock they were taken on (host, Vulkan ticks, GPU timer ns) until the profiler
//! maps them onto the host's.

/// Spans an actor buffers for the profiler before it drops more (nobody is taking them: `verify`,
/// `cycles`): bounded memory whoever forgets to collect.
pub const SPAN_BUFFER: usize = 4096;

/// The actors of the protocol: one trace track each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Track {
    /// The render thread: throttle, compute hand-off, record+submit, present.
    Render,
    /// The bridge thread (`bridged`, `none`): wait for `rendered`, write the slot, host signal.
    Bridge,
    /// The graphics queue (GPU): the draw, split at the moment its heights became readable.
    Queue,
    /// The compute side on the GPU: the CUDA/HIP stream, or the `vulkan` backend's dispatch.
    Compute,
    /// The hand-off on the GPU, derived from the other GPU tracks: `rendered` signalled → the
    /// kernel's start, and the kernel's end → the draw could read; with `--post`, the draw's end
    /// → the filter's start, and the filter's end → the copy's start.
    Handoff,
}

impl Track {
    pub const ALL: [Track; 5] = [Track::Render, Track::Bridge, Track::Queue, Track::Compute, Track::Handoff];

    /// Trace thread id (stable: the checker and tests rely on it).
    ///
    /// # Examples
    ///
    /// ```
    /// use vkhip::profile::span::Track;
    ///
    /// let tids: Vec<u64> = Track::ALL.iter().map(|t| t.tid()).collect();
    /// assert_eq!(tids, [1, 2, 3, 4, 5]); // `vkhip trace check` reads the compute track as tid 4
    /// assert_eq!(Track::Compute.name(), "compute (GPU)");
    /// ```
    pub fn tid(self) -> u64 {
        match self {
            Track::Render => 1,
            Track::Bridge => 2,
            Track::Queue => 3,
            Track::Compute => 4,
            Track::Handoff => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Track::Render => "render thread (host)",
            Track::Bridge => "bridge thread (host)",
            Track::Queue => "graphics queue (GPU)",
            Track::Compute => "compute (GPU)",
            Track::Handoff => "hand-off (GPU)",
        }
    }
}

/// What a span is. Names are the trace's slice names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Render thread: the frames-in-flight throttle (host wait on `rendered`).
    Throttle,
    /// Render thread (window): acquiring the swapchain image.
    Acquire,
    /// Render thread: handing the frame to the compute side.
    Handoff,
    /// Render thread: recording and submitting the draw.
    Submit,
    /// Render thread: presenting (window).
    Present,
    /// `blocking`: vkQueueWaitIdle before the kernel.
    QueueIdle,
    /// Compute side waiting for `rendered` (GPU wait on a stream or queue, or a host wait).
    WaitRendered,
    /// The compute side writing the slot: kernel, dispatch, or host write.
    Write,
    /// The compute side signalling `computed` (on the GPU, or from the host).
    Signal,
    /// Graphics queue: the draw's command buffer started but its heights are not yet readable
    /// (waiting for `computed`).
    WaitComputed,
    /// Graphics queue: the draw from the moment its heights were readable to its end.
    Draw,
    /// Hand-off track: the draw that last read the slot ended (Vulkan signalled `rendered`) →
    /// the kernel that writes it again started.
    HandoffIn,
    /// Hand-off track: the kernel ended → the draw of its frame could read the heights.
    HandoffOut,
    /// Post stage (`--post`), compute side: waiting for `rendered` (the scene is drawn) and
    /// `presented` (the output's previous copy is done), on the GPU or the host.
    PostWait,
    /// Post stage, compute side: the filter reading the scene image and writing the output.
    PostFilter,
    /// Post stage, compute side: signalling `posted` (on the GPU, or from the host).
    PostSignal,
    /// Post stage, graphics queue: the copy of the output to the swapchain image or target.
    PostCopy,
    /// Hand-off track: the draw into the scene ended → the filter started.
    SceneToFilter,
    /// Hand-off track: the filter ended → the copy to the target started.
    FilterToCopy,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Throttle => "throttle",
            Phase::Acquire => "acquire image",
            Phase::Handoff => "compute hand-off",
            Phase::Submit => "record+submit",
            Phase::Present => "present",
            Phase::QueueIdle => "queue wait idle",
            Phase::WaitRendered => "wait rendered",
            Phase::Write => "write slot",
            Phase::Signal => "signal computed",
            Phase::WaitComputed => "wait computed",
            Phase::Draw => "draw",
            Phase::HandoffIn => "rendered → kernel",
            Phase::HandoffOut => "kernel → draw",
            Phase::PostWait => "post wait",
            Phase::PostFilter => "post filter",
            Phase::PostSignal => "signal posted",
            Phase::PostCopy => "post copy",
            Phase::SceneToFilter => "draw → filter",
            Phase::FilterToCopy => "filter → copy",
        }
    }

    /// The access a span stands for, for the protocol checker: `write` (the slot is being
    /// written) or `read` (the draw may read it; with `--post`, also the draw writing the
    /// rendered image), and for the post stage `filter` (the filter reads the rendered image and
    /// writes the output image) or `copy` (the copy reads the output image).
    ///
    /// ```
    /// use vkhip::profile::Phase;
    ///
    /// assert_eq!(Phase::PostFilter.role(), Some("filter"));
    /// assert_eq!(Phase::PostCopy.role(), Some("copy"));
    /// assert_eq!(Phase::PostWait.role(), None); // waiting touches no image
    /// ```
    pub fn role(self) -> Option<&'static str> {
        match self {
            Phase::Write => Some("write"),
            Phase::Draw => Some("read"),
            Phase::PostFilter => Some("filter"),
            Phase::PostCopy => Some("copy"),
            _ => None,
        }
    }
}

/// A time on the clock it was taken on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// Host `CLOCK_MONOTONIC` nanoseconds (also CUDA/HIP event times already mapped by their
    /// backend).
    Host(u64),
    /// A Vulkan timestamp query value in ticks (mapped by the profiler's Vulkan clock).
    Vulkan(u64),
    /// Nanoseconds of the GPU's own timer as a kernel reads it (`%globaltimer` on NVIDIA): the
    /// timer Vulkan's timestamps count in ticks of `timestampPeriod` ns. Mapped as the Vulkan
    /// timestamp [`gpu_ns_to_ticks`] gives, through the same anchors; never through a host
    /// anchor of its own.
    Gpu(u64),
}

/// The Vulkan timestamp (ticks of `timestamp_period` ns) that a GPU timer reading of `ns`
/// nanoseconds is: the rule that puts kernel stamps on the Vulkan clock (see `vk::clock`).
///
/// ```
/// use vkhip::profile::span::gpu_ns_to_ticks;
///
/// assert_eq!(gpu_ns_to_ticks(1_234_567, 1.0), 1_234_567); // NVIDIA: one tick is one ns
/// assert_eq!(gpu_ns_to_ticks(1_000, 0.5), 2_000);
/// assert_eq!(gpu_ns_to_ticks(1_000, 0.0), 1_000); // no period: read as ns
/// ```
pub fn gpu_ns_to_ticks(ns: u64, timestamp_period: f32) -> u64 {
    if timestamp_period <= 0.0 || timestamp_period == 1.0 {
        return ns;
    }
    (ns as f64 / f64::from(timestamp_period)).round() as u64
}

/// One phase of one frame on one track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub frame: u64,
    pub track: Track,
    pub phase: Phase,
    pub start: Stamp,
    pub end: Stamp,
}

impl Span {
    pub fn host(frame: u64, track: Track, phase: Phase, start_ns: u64, end_ns: u64) -> Self {
        Span { frame, track, phase, start: Stamp::Host(start_ns), end: Stamp::Host(end_ns) }
    }
}

/// A span on the host clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostSpan {
    pub track: Track,
    pub phase: Phase,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl HostSpan {
    pub fn dur_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}
