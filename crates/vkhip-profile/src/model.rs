//! The timeline every part of the crate shares: tracks (a queue, a stream, a host thread), the
//! scopes recorded on them with the shared resources each declares it reads or writes, and the
//! semaphore operations that order one track after another. Every time is nanoseconds of the
//! host's `CLOCK_MONOTONIC` ([`crate::clock`] maps the GPU's clock onto it).
//!
//! Items of one track are kept in **program order**: the order the track executes them —
//! submission order on a Vulkan queue, stream order on a CUDA or HIP stream, call order on a host
//! thread. Items of different tracks are ordered only by the semaphores between them: a
//! [`SyncKind::Signal`] of value v on one track and a [`SyncKind::Wait`] for a value ≤ v on
//! another make everything before the signal happen before everything after the wait. That is
//! all the checker ([`crate::check`](mod@crate::check)) assumes.
//!
//! Orderings that are not semaphores (a host thread submitting work to a queue, a host wait on a
//! stream or a fence, a barrier between two tracks of one queue) are recorded as signal/wait
//! pairs on *internal* semaphores ([`SemaphoreInfo::internal`]), so the checker has one rule.

use std::sync::Arc;

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub type Ns = u64;

/// A track: index into [`Names::tracks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackId(pub u32);

/// A shared buffer or image (or a part of one) that scopes declare they read or write: index
/// into [`Names::resources`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceId(pub u32);

/// A semaphore (timeline values; a binary semaphore is counted as a timeline by its signals):
/// index into [`Names::semaphores`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SemaphoreId(pub u32);

/// The API a track belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Api {
    /// A host thread.
    Host,
    /// A Vulkan queue (ash).
    Vulkan,
    /// A CUDA stream.
    Cuda,
    /// A HIP stream.
    Hip,
    /// wgpu's queue (Vulkan backend).
    Wgpu,
}

impl Api {
    pub const ALL: [Api; 5] = [Api::Host, Api::Vulkan, Api::Cuda, Api::Hip, Api::Wgpu];

    /// "host", "vulkan", "cuda", "hip", "wgpu": the name the trace file and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Api::Host => "host",
            Api::Vulkan => "vulkan",
            Api::Cuda => "cuda",
            Api::Hip => "hip",
            Api::Wgpu => "wgpu",
        }
    }

    /// The API of a trace's `api` name.
    pub fn from_name(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether the track's times come from the GPU (everything but a host thread).
    pub fn is_gpu(self) -> bool {
        self != Api::Host
    }
}

/// One track: a queue, a stream or a host thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    pub name: String,
    pub api: Api,
    /// How this track's times were put on `CLOCK_MONOTONIC` ("host clock", "Vulkan timestamps,
    /// calibrated (VK_KHR_calibrated_timestamps), re-anchored every 50 ms", …).
    pub clock: String,
    /// The largest error of a time on this track, ns, as stated by its mapping (anchor accuracy
    /// plus the largest drift seen). 0 for host tracks.
    pub accuracy_ns: u64,
    /// Times of this track and of every other track with the same `clock_domain` are readings
    /// of one device clock mapped through the same anchors (Vulkan timestamps and CUDA's
    /// `%globaltimer` on one GPU): between two such tracks the mapping's error cancels, and the
    /// tolerance is the larger accuracy, not the sum. `None`: a clock of its own.
    pub clock_domain: Option<u32>,
}

/// A named semaphore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SemaphoreInfo {
    pub name: String,
    /// An ordering the profiler recorded as a semaphore (a submission from a host thread, a
    /// host wait on a stream or fence, a barrier between two tracks of one queue): checked like
    /// any other, not reported as a hand-off between APIs.
    pub internal: bool,
}

/// What a scope does to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessKind {
    Read,
    Write,
}

impl AccessKind {
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
        }
    }
}

/// One declared access of a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub resource: ResourceId,
    pub kind: AccessKind,
}

impl Access {
    pub fn read(resource: ResourceId) -> Self {
        Access { resource, kind: AccessKind::Read }
    }

    pub fn write(resource: ResourceId) -> Self {
        Access { resource, kind: AccessKind::Write }
    }

    /// Two accesses conflict when they touch the same resource and at least one writes.
    pub fn conflicts(&self, other: &Access) -> bool {
        self.resource == other.resource && (self.kind == AccessKind::Write || other.kind == AccessKind::Write)
    }
}

/// Work measured on a track, from `start_ns` to `end_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    pub name: Arc<str>,
    /// The frame it was recorded in (the profiler's frame counter, or the program's own number).
    pub frame: u64,
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// Nesting depth on its track (0: top level). Only top-level scopes count towards a frame's
    /// GPU time.
    pub depth: u32,
    /// The shared resources it reads or writes, as the program declared them.
    pub accesses: Vec<Access>,
}

impl Scope {
    pub fn dur_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Which side of a semaphore operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncKind {
    /// The semaphore reaches `value` once everything before it on the track is done.
    Signal,
    /// Everything after it on the track waits until the semaphore reaches `value`.
    Wait,
}

impl SyncKind {
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Signal => "signal",
            SyncKind::Wait => "wait",
        }
    }
}

/// A semaphore operation at its place in a track's program order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sync {
    pub semaphore: SemaphoreId,
    pub value: u64,
    pub kind: SyncKind,
    pub frame: u64,
    /// Host operations: when the host signalled, or when its wait returned. `None` for GPU
    /// operations, whose times follow from the scopes around them (a signal happens when the
    /// work before it ends; a wait is met when the work after it starts).
    pub host_ns: Option<Ns>,
}

/// One item of a track's program order.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Scope(Scope),
    Sync(Sync),
}

impl Item {
    pub fn frame(&self) -> u64 {
        match self {
            Item::Scope(s) => s.frame,
            Item::Sync(s) => s.frame,
        }
    }
}

/// The end of a frame on the host (`Profiler::end_frame`): frame times are the differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameEnd {
    pub frame: u64,
    pub host_ns: Ns,
}

/// The names behind the ids: what every consumer of items needs before the first item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Names {
    pub tracks: Vec<Track>,
    pub resources: Vec<String>,
    pub semaphores: Vec<SemaphoreInfo>,
}

impl Names {
    pub fn track(&self, id: TrackId) -> &Track {
        &self.tracks[id.0 as usize]
    }

    pub fn resource(&self, id: ResourceId) -> &str {
        &self.resources[id.0 as usize]
    }

    pub fn semaphore(&self, id: SemaphoreId) -> &SemaphoreInfo {
        &self.semaphores[id.0 as usize]
    }

    /// The tolerance of a comparison between a time on track `a` and one on track `b`: the
    /// larger accuracy when both read one device clock through the same anchors, else the sum.
    pub fn tolerance_ns(&self, a: TrackId, b: TrackId) -> u64 {
        let (ta, tb) = (self.track(a), self.track(b));
        match (ta.clock_domain, tb.clock_domain) {
            (Some(x), Some(y)) if x == y => ta.accuracy_ns.max(tb.accuracy_ns),
            _ => ta.accuracy_ns + tb.accuracy_ns,
        }
    }
}

/// Where resolved items go, in each track's program order (items of different tracks arrive
/// interleaved in any way). The analysis ([`crate::analysis`]), the trace ring
/// ([`crate::perfetto`]) and the live view (`crate::tracy`) are sinks.
pub trait Sink {
    /// Called whenever a track, resource or semaphore was added, before any item that uses it.
    fn names(&mut self, names: &Names);
    /// The next item of `track`.
    fn item(&mut self, track: TrackId, item: &Item);
    /// A frame ended on the host.
    fn frame_end(&mut self, end: FrameEnd);
    /// Every item of the frames below `frame` has been sent (or dropped at the horizon): none
    /// is still waiting for its results. The profiler says so after each
    /// `Profiler::end_frame`; a sink that sums per frame sums on it rather than guessing from
    /// the frames of the items it saw. Never decreases.
    fn resolved_below(&mut self, _frame: u64) {}
}

/// A whole recorded timeline: what a trace file holds, and what the checker and the report read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub names: Names,
    /// Per track (index = [`TrackId`]), its items in program order.
    pub items: Vec<Vec<Item>>,
    pub frame_ends: Vec<FrameEnd>,
    /// How the device clocks were mapped, for the report and the trace: one line per mapping.
    pub clock_notes: Vec<String>,
}

impl Timeline {
    /// Feed everything to `sink`: names, then the tracks' items interleaved frame by frame
    /// (each track's in its program order: every track's items of the oldest frame not yet
    /// sent, then the next frame's; an item recorded in an older frame behind a newer one of
    /// its track waits for it), then the frame ends. Interleaving by frame, not by item count,
    /// keeps the tracks together however many items a frame each has.
    pub fn replay(&self, sink: &mut dyn Sink) {
        sink.names(&self.names);
        let mut next = vec![0usize; self.items.len()];
        // The oldest frame any track's next item belongs to.
        let oldest = |next: &[usize]| {
            self.items.iter().zip(next).filter_map(|(items, &n)| items.get(n)).map(Item::frame).min()
        };
        while let Some(frame) = oldest(&next) {
            for (t, items) in self.items.iter().enumerate() {
                while let Some(item) = items.get(next[t]).filter(|i| i.frame() <= frame) {
                    sink.item(TrackId(t as u32), item);
                    next[t] += 1;
                }
            }
        }
        for end in &self.frame_ends {
            sink.frame_end(*end);
        }
    }
}

impl Timeline {
    /// [`Sink::names`], taking the names it is given.
    pub(crate) fn set_names(&mut self, names: Names) {
        self.items.resize_with(names.tracks.len(), Vec::new);
        self.names = names;
    }

    /// [`Sink::item`], taking the item it is given (no clone).
    pub(crate) fn push_item(&mut self, track: TrackId, item: Item) {
        let t = track.0 as usize;
        if self.items.len() <= t {
            self.items.resize_with(t + 1, Vec::new);
        }
        self.items[t].push(item);
    }
}

impl Sink for Timeline {
    fn names(&mut self, names: &Names) {
        self.set_names(names.clone());
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        self.push_item(track, item.clone());
    }

    fn frame_end(&mut self, end: FrameEnd) {
        self.frame_ends.push(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(name: &str, api: Api, accuracy_ns: u64, clock_domain: Option<u32>) -> Track {
        Track { name: name.into(), api, clock: String::new(), accuracy_ns, clock_domain }
    }

    #[test]
    fn conflicts_need_one_write_on_the_same_resource() {
        let (a, b) = (ResourceId(0), ResourceId(1));
        assert!(Access::write(a).conflicts(&Access::read(a)));
        assert!(Access::read(a).conflicts(&Access::write(a)));
        assert!(Access::write(a).conflicts(&Access::write(a)));
        assert!(!Access::read(a).conflicts(&Access::read(a)));
        assert!(!Access::write(a).conflicts(&Access::write(b)));
    }

    #[test]
    fn tolerance_is_the_larger_accuracy_on_one_clock_and_the_sum_across_clocks() {
        let names = Names {
            tracks: vec![
                track("queue", Api::Vulkan, 3_000, Some(0)),
                track("stream", Api::Cuda, 3_500, Some(0)),
                track("host", Api::Host, 0, None),
                track("hip", Api::Hip, 20_000, None),
            ],
            ..Default::default()
        };
        assert_eq!(names.tolerance_ns(TrackId(0), TrackId(1)), 3_500);
        assert_eq!(names.tolerance_ns(TrackId(0), TrackId(2)), 3_000);
        assert_eq!(names.tolerance_ns(TrackId(3), TrackId(1)), 23_500);
    }

    #[test]
    fn replay_keeps_each_tracks_order() {
        let scope = |frame| {
            Item::Scope(Scope {
                name: "s".into(),
                frame,
                start_ns: frame,
                end_ns: frame + 1,
                depth: 0,
                accesses: vec![],
            })
        };
        let tl = Timeline {
            names: Names {
                tracks: vec![track("a", Api::Host, 0, None), track("b", Api::Cuda, 0, Some(0))],
                ..Default::default()
            },
            items: vec![vec![scope(0), scope(1), scope(2)], vec![scope(10)]],
            frame_ends: vec![FrameEnd { frame: 0, host_ns: 5 }],
            clock_notes: vec![],
        };
        let mut copy = Timeline::default();
        tl.replay(&mut copy);
        assert_eq!(copy, tl);
        // Frame by frame, not item by item: track a has three items a frame, b one.
        struct Order(Vec<(u32, u64)>);
        impl Sink for Order {
            fn names(&mut self, _: &Names) {}
            fn item(&mut self, t: TrackId, item: &Item) {
                self.0.push((t.0, item.frame()));
            }
            fn frame_end(&mut self, _: FrameEnd) {}
        }
        let tl = Timeline {
            names: tl.names.clone(),
            items: vec![[0, 0, 0, 1, 1, 1].map(scope).to_vec(), vec![scope(0), scope(1)]],
            ..Default::default()
        };
        let mut order = Order(Vec::new());
        tl.replay(&mut order);
        assert_eq!(order.0, [(0, 0), (0, 0), (0, 0), (1, 0), (0, 1), (0, 1), (0, 1), (1, 1)]);
        assert_eq!(Api::from_name("cuda"), Some(Api::Cuda));
        assert!(!Api::Host.is_gpu() && Api::Wgpu.is_gpu());
    }
}
