//! What the timeline is made of: spans of one frame's phases, each on one track (actor), and
//! times on the clock they were taken on (host, Vulkan ticks, GPU timer ns) until the profiler
//! maps them onto the host's.

/// Spans an actor buffers for the profiler before it drops more (nobody is taking them: `verify`,
/// `cycles`): bounded memory whoever forgets to collect.
pub const SPAN_BUFFER: usize = 4096;

/// The actors of the protocol: one track each (see [`crate::profile::program`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Track {
    /// The render thread: throttle, compute hand-off, record+submit, present.
    Render,
    /// The bridge thread (`bridged`, `none`): wait for `rendered`, write the slot, host signal.
    Bridge,
    /// The graphics queue (GPU): the draw, and with `--post` the copy.
    Queue,
    /// The compute side on the GPU: the CUDA/HIP stream, or the `vulkan` backend's dispatch
    /// (in the graphics queue).
    Compute,
}

impl Track {
    pub const ALL: [Track; 4] = [Track::Render, Track::Bridge, Track::Queue, Track::Compute];

    /// A host thread (its times are the host clock's own).
    pub fn is_host(self) -> bool {
        matches!(self, Track::Render | Track::Bridge)
    }

    /// The short name the model's internal semaphores use: `submit:render→graphics`.
    ///
    /// ```
    /// use vkhip::profile::span::Track;
    ///
    /// let names: Vec<&str> = Track::ALL.iter().map(|t| t.short()).collect();
    /// assert_eq!(names, ["render", "bridge", "graphics", "compute"]);
    /// assert!(Track::Bridge.is_host() && !Track::Compute.is_host());
    /// ```
    pub fn short(self) -> &'static str {
        match self {
            Track::Render => "render",
            Track::Bridge => "bridge",
            Track::Queue => "graphics",
            Track::Compute => "compute",
        }
    }
}

/// What a span is. Names are the trace's scope names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    /// Post stage (`--post`), compute side: waiting for `rendered` (the scene is drawn) and
    /// `presented` (the output's previous copy is done), on the GPU or the host.
    PostWait,
    /// Post stage, compute side: the filter reading the scene image and writing the output.
    PostFilter,
    /// Post stage, compute side: signalling `posted` (on the GPU, or from the host).
    PostSignal,
    /// Post stage, graphics queue: the copy of the output to the swapchain image or target.
    PostCopy,
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
            Phase::PostWait => "post wait",
            Phase::PostFilter => "post filter",
            Phase::PostSignal => "signal posted",
            Phase::PostCopy => "post copy",
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

impl Stamp {
    /// The host time, when this is one.
    pub fn host_ns(self) -> Option<u64> {
        match self {
            Stamp::Host(ns) => Some(ns),
            Stamp::Vulkan(_) | Stamp::Gpu(_) => None,
        }
    }
}

/// The Vulkan timestamp (ticks of `timestampPeriod` ns) that a GPU timer reading of `ns`
/// nanoseconds is: the rule that puts kernel stamps on the Vulkan clock (see `vk::clock`); the
/// profiler crate's.
pub use vkhip_profile::clock::gpu_ns_to_ticks;

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
