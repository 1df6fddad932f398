//! The profiler: the registry of tracks, resources and semaphores, the pending GPU results, and
//! the sinks the resolved items go to.
//!
//! **Recording** (any thread, the hot path): a scope or a semaphore operation becomes an entry at
//! the end of its track's queue, in the track's program order, under one short mutex. GPU scopes
//! carry where their times will be (two query slots, two stamp slots, two events); host scopes
//! carry their times.
//!
//! **Resolving** ([`Profiler::end_frame`], never blocking): each track's queue is resolved from
//! its head while the head's times are known — results are read without waiting — and mapped
//! onto `CLOCK_MONOTONIC`; the items go to every [`Sink`] in each track's program order, after the
//! [`Names`] they use. A scope whose results never come (its command buffer never submitted, a
//! device lost) is dropped at the horizon and counted, so a track never blocks for good.
//!
//! **Orderings that are not semaphores** become internal semaphores (docs/ARCHITECTURE.md):
//! - a host thread with a track ([`Profiler::host_thread`]) that records GPU work — a CUDA scope,
//!   wait or signal, a Vulkan submission — signals `submit:H→G` on its own track and the GPU
//!   track waits for it before that work, whenever the host track has new items since its last
//!   such edge to that GPU track (an edge orders everything before it, so one suffices);
//! - every Vulkan submission ends with a signal of `join:G` (its number), and every
//!   [`CudaStream::synchronized`](crate::CudaStream::synchronized) puts one at the stream's end;
//!   a host thread that waited for a fence, a queue or a stream waits for that value on its own
//!   track;
//! - an operation on a CUDA stream track that CUDA orders after another stream track's work (one
//!   stream, or the legacy default stream and a blocking one: [`crate::streams`]) waits for a
//!   `stream:A→B` or `legacy:A→B` signal put after that work.
//!
//! Each internal semaphore belongs to one edge or one track: two tracks of one name (a track
//! made after another was dropped) never share one, so a host wait for one track's join is
//! never taken for the other's.

use crate::clock::{host_now_ns, ClockInfo, GpuClock, OneOffReading};
use crate::error::{Error, Result};
use crate::model::{
    Access, FrameEnd, Item, Names, Ns, ResourceId, Scope, SemaphoreId, SemaphoreInfo, Sink, Sync, SyncKind,
    Timeline, Track, TrackId,
};
use crate::streams::{self, Order, Place, StreamHandle};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use vkhip_interop::vulkan;

/// How the profiler runs. `Options::default()` profiles; `enabled: false` makes every call a
/// no-op that does no GPU work ([`Profiler::disabled`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Off: nothing is recorded, no query pool, event, stamp memory or kernel is made.
    pub enabled: bool,
    /// Timestamp queries per Vulkan or wgpu queue, two per scope. A scope begun while the ring
    /// is full (results of older scopes not read yet) is dropped and counted
    /// ([`Stats::dropped_full`]).
    pub queries_per_queue: u32,
    /// How CUDA streams mark their scopes: stamp kernels (the default), or CUDA events on the GPU
    /// timer ([`CudaStamps`](crate::CudaStamps); the choice is per profiler).
    pub cuda_stamps: crate::CudaStamps,
    /// Stamp slots (8 bytes of page-locked memory each) per CUDA stream with
    /// [`CudaStamps::Kernel`](crate::CudaStamps::Kernel), two per scope.
    pub stamps_per_stream: u32,
    /// Timing events per HIP stream, and per CUDA stream with
    /// [`CudaStamps::Events`](crate::CudaStamps::Events), two per scope.
    pub events_per_stream: u32,
    /// How long [`Profiler::finish`] waits for results still pending.
    pub drain_timeout: Duration,
    /// A scope whose results are still missing this long after it was recorded, and
    /// [`HORIZON_FRAMES`] frames later, is dropped (counted in [`Stats::lost`]).
    pub horizon: Duration,
    /// Whether the device has `hostQueryReset` enabled; `None`: as the interop crate's device
    /// says (its `Device::open` and `WgpuDevice::open` enable it where the device has it; a
    /// borrowed device reports it off). Without it, each scope resets its queries in the
    /// command buffer, which must then be outside a render pass where a scope begins or ends.
    pub host_query_reset: Option<bool>,
    /// Keep every resolved item for [`Capture::timeline`] (the default). Off: only the sinks
    /// given to [`Profiler::with_sinks`] see them (constant memory for long runs).
    pub keep_timeline: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            enabled: true,
            queries_per_queue: 4096,
            cuda_stamps: crate::CudaStamps::default(),
            stamps_per_stream: 4096,
            events_per_stream: 1024,
            drain_timeout: Duration::from_secs(2),
            horizon: Duration::from_secs(2),
            host_query_reset: None,
            keep_timeline: true,
        }
    }
}

/// See [`Options::horizon`].
pub const HORIZON_FRAMES: u64 = 256;

/// Counts of what did not make it into the timeline, and why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames ended.
    pub frames: u64,
    /// Scopes and semaphore operations resolved and sent to the sinks.
    pub items: u64,
    /// Scopes begun while their track's ring was full: not recorded.
    pub dropped_full: u64,
    /// Scopes whose results never came (horizon, or still pending when `finish` gave up).
    pub lost: u64,
    /// Scopes recorded on a Vulkan queue but never followed by `submitted`.
    pub never_submitted: u64,
    /// Scope guards whose end failed (a failed stamp launch, logged).
    pub failed_ends: u64,
}

/// A shared buffer, image or part of one that scopes declare they read or write
/// ([`Profiler::resource`]). Cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Resource {
    pub(crate) profiler: u64,
    pub(crate) id: ResourceId,
}

/// A semaphore, as the profiler names it ([`Profiler::semaphore`]): a Vulkan timeline shared
/// with CUDA, a binary semaphore, a wgpu hand-off. Cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Semaphore {
    pub(crate) profiler: u64,
    pub(crate) id: SemaphoreId,
}

static NEXT_PROFILER: AtomicU64 = AtomicU64::new(1);

/// The profiler. Cheap to clone (shared); every track handle holds it. See the crate's
/// documentation for the whole picture.
#[derive(Clone)]
pub struct Profiler {
    pub(crate) shared: Option<Arc<Shared>>,
}

/// What every handle shares.
pub(crate) struct Shared {
    pub(crate) id: u64,
    pub(crate) options: Options,
    pub(crate) gpu: Option<Gpu>,
    pub(crate) state: Mutex<State>,
    /// Taken before `state` by whoever feeds the sinks, so items reach them in order.
    out: Mutex<Out>,
}

/// The Vulkan device the profiler runs on, and its clock.
pub(crate) struct Gpu {
    pub(crate) device: vulkan::Device,
    pub(crate) clock: GpuClock,
    pub(crate) host_query_reset: bool,
    /// A one-off reading of the device's clock on its idle queue (`crate::vulkan`), for
    /// re-checking a one-off calibration at the end.
    pub(crate) one_off: fn(&vulkan::Device) -> Result<OneOffReading>,
}

/// The sinks, and what they were told.
struct Out {
    sinks: Vec<Box<dyn Sink + Send>>,
    timeline: Option<Timeline>,
    names_sent: u64,
    /// The buffers the state's `ready` and `frame_ends` are swapped with (empty between flushes).
    ready: Vec<(TrackId, Item)>,
    frame_ends: Vec<FrameEnd>,
}

/// Where a GPU scope's times will be: two slots of its track's ring (or, on a host track, its
/// times).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Marks {
    pub(crate) begin: u64,
    pub(crate) end: u64,
}

/// A scope waiting for its times.
#[derive(Clone, Debug)]
pub(crate) struct PendingScope {
    /// Unique on its track: how its guard finds it.
    pub(crate) id: u64,
    pub(crate) name: Arc<str>,
    pub(crate) frame: u64,
    pub(crate) depth: u32,
    pub(crate) accesses: Vec<Access>,
    pub(crate) marks: Marks,
    /// Its guard is still alive (its end is not recorded).
    pub(crate) open: bool,
    /// A stamp or event of it could not be enqueued (or a wgpu scope was never placed): its
    /// slots are given back, it is counted as lost.
    pub(crate) failed: bool,
    /// When it was recorded (host ns), for the horizon.
    pub(crate) recorded_ns: Ns,
}

#[derive(Clone, Debug)]
pub(crate) enum Entry {
    Scope(PendingScope),
    Sync(Sync),
}

impl Entry {
    /// The frame it was recorded in.
    fn frame(&self) -> u64 {
        match self {
            Entry::Scope(s) => s.frame,
            Entry::Sync(s) => s.frame,
        }
    }
}

/// A scope's times, once known.
pub(crate) enum Resolved {
    Pending,
    Times(Ns, Ns),
    /// The results cannot be had (a failed read): dropped.
    Lost,
}

/// What each kind of track does to resolve its scopes: a host track's times are its own; a GPU
/// track's module (vulkan, cuda, hip) resolves them through [`GpuKind`], so this core knows no API
/// and the arrows point from the API modules down to it.
pub(crate) enum Kind {
    Host,
    Gpu(Box<dyn GpuKind>),
}

/// A GPU track's own side, implemented by its API's module.
pub(crate) trait GpuKind: Send + 'static {
    /// Read what the GPU has finished (never blocks).
    fn kind_refresh(&mut self, gpu: Option<&Gpu>) -> Result<()>;
    /// A scope's times, once its marks landed.
    fn kind_resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved;
    /// Give back a scope's marks; `read`: its results were read.
    fn kind_release(&mut self, marks: Marks, read: bool, gpu: Option<&Gpu>);
    /// Scopes recorded but not yet submitted (a Vulkan queue's), newest last.
    fn kind_staged(&mut self) -> Option<&mut Vec<Entry>> {
        None
    }
    /// How many of them there are.
    fn kind_staged_len(&self) -> usize {
        0
    }
    /// The track's stated accuracy (ns) given the Vulkan clock's (None: no GPU clock), and a new
    /// clock description when `last`; None when the track's mapping does not change.
    fn kind_accuracy(&self, vulkan_ns: Option<u64>, last: bool) -> Option<(u64, Option<String>)>;
    /// How the track's times were mapped, for the report (None: the Vulkan clock's line says it).
    fn kind_clock_info(&self, gpu: Option<&Gpu>) -> Option<ClockInfo>;
    /// For the track's own module to reach its state.
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl Kind {
    /// The GPU side of type `T` (the API module's own state), if this track has one.
    pub(crate) fn gpu_mut<T: 'static>(&mut self) -> Option<&mut T> {
        match self {
            Kind::Host => None,
            Kind::Gpu(g) => g.as_any_mut().downcast_mut::<T>(),
        }
    }
}

pub(crate) struct TrackState {
    pub(crate) entries: VecDeque<Entry>,
    /// Entries ever pushed (a host track's count tells whether a submit edge is due).
    pub(crate) pushed: u64,
    pub(crate) depth: u32,
    pub(crate) next_scope: u64,
    /// The track's `join:` semaphore and its last value.
    pub(crate) join: Option<(SemaphoreId, u64)>,
    pub(crate) kind: Kind,
    /// A CUDA stream track's stream ([`crate::streams`]).
    pub(crate) stream: Option<Place>,
}

/// An internal edge from one track to another: `submit:` (a host thread to a GPU track),
/// `stream:` or `legacy:` (a stream track to another).
struct Edge {
    semaphore: SemaphoreId,
    value: u64,
    /// How many of the source track's entries the last edge's signal follows.
    covered: u64,
}

pub(crate) struct State {
    pub(crate) names: Names,
    names_version: u64,
    pub(crate) tracks: Vec<TrackState>,
    pub(crate) frame: u64,
    ready: Vec<(TrackId, Item)>,
    frame_ends: Vec<FrameEnd>,
    /// Every item of the frames below this was resolved (or dropped): [`Sink::resolved_below`].
    resolved_below: u64,
    edges: HashMap<(TrackId, TrackId), Edge>,
    /// The highest join value each host track waited for, per semaphore.
    joined: HashMap<(TrackId, SemaphoreId), u64>,
    host_tracks: usize,
    stream_tracks: usize,
    interned: HashSet<Arc<str>>,
    pub(crate) stats: Stats,
    /// `finish` ran: nothing more is recorded.
    pub(crate) finished: bool,
}

impl State {
    fn new() -> Self {
        State {
            names: Names::default(),
            names_version: 0,
            tracks: Vec::new(),
            frame: 0,
            ready: Vec::new(),
            frame_ends: Vec::new(),
            resolved_below: 0,
            edges: HashMap::new(),
            joined: HashMap::new(),
            host_tracks: 0,
            stream_tracks: 0,
            interned: HashSet::new(),
            stats: Stats::default(),
            finished: false,
        }
    }

    pub(crate) fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.interned.get(name) {
            return n.clone();
        }
        let n: Arc<str> = name.into();
        self.interned.insert(n.clone());
        n
    }

    pub(crate) fn add_track(&mut self, track: Track, kind: Kind) -> TrackId {
        let id = TrackId(self.names.tracks.len() as u32);
        if matches!(kind, Kind::Host) {
            self.host_tracks += 1;
        }
        self.names.tracks.push(track);
        self.names_version += 1;
        self.tracks.push(TrackState {
            entries: VecDeque::new(),
            pushed: 0,
            depth: 0,
            next_scope: 0,
            join: None,
            kind,
            stream: None,
        });
        id
    }

    /// Whether a CUDA stream track named `name` on `handle` may be made ([`streams::admit`]).
    pub(crate) fn admit_stream(&self, name: &str, handle: StreamHandle) -> Result<Place> {
        let existing: Vec<(&str, Place)> = (self.tracks.iter().zip(&self.names.tracks))
            .filter_map(|(t, n)| t.stream.map(|p| (n.name.as_str(), p)))
            .collect();
        streams::admit(&existing, name, handle)
    }

    /// A CUDA stream track on `handle` (refused as [`State::admit_stream`] says).
    pub(crate) fn add_stream_track(
        &mut self,
        track: Track,
        kind: Kind,
        handle: StreamHandle,
    ) -> Result<TrackId> {
        let place = self.admit_stream(&track.name, handle)?;
        let id = self.add_track(track, kind);
        self.tracks[id.0 as usize].stream = Some(place);
        self.stream_tracks += 1;
        Ok(id)
    }

    /// The stream track's handle was dropped: its handle may name another stream from now on.
    pub(crate) fn stream_dropped(&mut self, track: TrackId) {
        if let Some(p) = self.tracks.get_mut(track.0 as usize).and_then(|t| t.stream.as_mut()) {
            p.alive = false;
        }
    }

    pub(crate) fn add_semaphore(&mut self, name: String, internal: bool) -> SemaphoreId {
        if let Some(i) = self.names.semaphores.iter().position(|s| s.name == name && s.internal == internal) {
            return SemaphoreId(i as u32);
        }
        self.names.semaphores.push(SemaphoreInfo { name, internal });
        self.names_version += 1;
        SemaphoreId(self.names.semaphores.len() as u32 - 1)
    }

    /// A new internal semaphore for one edge or one track, never shared with another by name
    /// (two tracks may be named alike): `name`, or `name #2`, `#3`… when taken.
    pub(crate) fn add_internal(&mut self, name: String) -> SemaphoreId {
        let mut unique = name.clone();
        let mut n = 2;
        while self.names.semaphores.iter().any(|s| s.name == unique) {
            unique = format!("{name} #{n}");
            n += 1;
        }
        self.names.semaphores.push(SemaphoreInfo { name: unique, internal: true });
        self.names_version += 1;
        SemaphoreId(self.names.semaphores.len() as u32 - 1)
    }

    fn add_resource(&mut self, name: String) -> ResourceId {
        if let Some(i) = self.names.resources.iter().position(|r| *r == name) {
            return ResourceId(i as u32);
        }
        self.names.resources.push(name);
        self.names_version += 1;
        ResourceId(self.names.resources.len() as u32 - 1)
    }

    pub(crate) fn set_accuracy(&mut self, track: TrackId, accuracy_ns: u64, clock: Option<&str>) {
        let t = &mut self.names.tracks[track.0 as usize];
        if t.accuracy_ns != accuracy_ns || clock.is_some_and(|c| c != t.clock) {
            t.accuracy_ns = accuracy_ns;
            if let Some(c) = clock {
                t.clock = c.to_string();
            }
            self.names_version += 1;
        }
    }

    /// Push `entry` at the end of `track`'s program order (nothing once finished).
    pub(crate) fn push(&mut self, track: TrackId, entry: Entry) {
        if self.finished {
            return;
        }
        let t = &mut self.tracks[track.0 as usize];
        t.entries.push_back(entry);
        t.pushed += 1;
    }

    pub(crate) fn sync(
        &self,
        semaphore: SemaphoreId,
        value: u64,
        kind: SyncKind,
        host_ns: Option<Ns>,
    ) -> Sync {
        Sync { semaphore, value, kind, frame: self.frame, host_ns }
    }

    /// A new scope entry on `track` (depth counted), not yet pushed.
    pub(crate) fn new_scope(&mut self, track: TrackId, name: &str, marks: Marks, now: Ns) -> PendingScope {
        let name = self.intern(name);
        let frame = self.frame;
        let t = &mut self.tracks[track.0 as usize];
        let id = t.next_scope;
        t.next_scope += 1;
        let depth = t.depth;
        t.depth += 1;
        PendingScope {
            id,
            name,
            frame,
            depth,
            accesses: Vec::new(),
            marks,
            open: true,
            failed: false,
            recorded_ns: now,
        }
    }

    /// Close the scope `id` of `track`: its end mark (a host time, known only now), its
    /// accesses, and whether it failed.
    pub(crate) fn close_scope(
        &mut self,
        track: TrackId,
        id: u64,
        end: Option<u64>,
        accesses: Vec<Access>,
        failed: bool,
    ) {
        let resources = self.names.resources.len() as u32;
        let t = &mut self.tracks[track.0 as usize];
        t.depth = t.depth.saturating_sub(1);
        let staged = match &mut t.kind {
            Kind::Gpu(g) => g.kind_staged(),
            Kind::Host => None,
        };
        let found =
            staged.into_iter().flat_map(|s| s.iter_mut().rev()).chain(t.entries.iter_mut().rev()).find_map(
                |e| match e {
                    Entry::Scope(s) if s.id == id => Some(s),
                    _ => None,
                },
            );
        if let Some(s) = found {
            s.open = false;
            s.failed = failed;
            if let Some(end) = end {
                s.marks.end = end;
            }
            s.accesses = accesses.into_iter().filter(|a| a.resource.0 < resources).collect();
        }
    }

    /// The calling thread's host track, when it has one.
    pub(crate) fn current_host(&self, profiler: u64) -> Option<TrackId> {
        current_host_track(profiler)
    }

    /// If the host track `host` has new items since its last edge to `gpu`: signal
    /// `submit:H→G` on it (at `host_ns`) and return the wait `gpu` must put before the work.
    pub(crate) fn submit_edge(&mut self, host: TrackId, gpu: TrackId, host_ns: Ns) -> Option<Sync> {
        self.edge(host, gpu, "submit", Some(host_ns))
    }

    /// How many of `t`'s entries a signal put now would follow, and where it goes: at the end,
    /// or on a GPU track with a scope still open, before the outermost open scope (its end is
    /// not enqueued yet, so what comes next on another stream is not ordered after it).
    fn edge_point(&self, t: TrackId, gpu: bool) -> (u64, Option<usize>) {
        let tr = &self.tracks[t.0 as usize];
        if !gpu || tr.depth == 0 {
            return (tr.pushed, None);
        }
        match tr.entries.iter().position(|e| matches!(e, Entry::Scope(s) if s.open)) {
            Some(i) => (tr.pushed - (tr.entries.len() - i) as u64, Some(i)),
            None => (tr.pushed, None),
        }
    }

    /// If `from` has new items since its last edge to `to`: signal `PREFIX:F→T` on `from` (a
    /// host signal at `host_ns`, or a GPU one after `from`'s work so far) and return the wait
    /// `to` must put before its next operation.
    fn edge(&mut self, from: TrackId, to: TrackId, prefix: &str, host_ns: Option<Ns>) -> Option<Sync> {
        let gpu = host_ns.is_none();
        let (covered, at) = self.edge_point(from, gpu);
        if gpu && covered == 0 {
            return None; // nothing recorded there yet
        }
        if self.edges.get(&(from, to)).is_some_and(|e| e.covered == covered) {
            return None;
        }
        if !self.edges.contains_key(&(from, to)) {
            let name = format!("{prefix}:{}→{}", self.names.track(from).name, self.names.track(to).name);
            let semaphore = self.add_internal(name);
            self.edges.insert((from, to), Edge { semaphore, value: 0, covered: u64::MAX });
        }
        let (semaphore, value) = {
            let e = self.edges.get_mut(&(from, to))?;
            e.value += 1;
            (e.semaphore, e.value)
        };
        let signal = Entry::Sync(self.sync(semaphore, value, SyncKind::Signal, host_ns));
        match at {
            Some(i) if !self.finished => {
                let t = &mut self.tracks[from.0 as usize];
                t.entries.insert(i, signal);
                t.pushed += 1;
            }
            _ => self.push(from, signal),
        }
        let covered = self.edge_point(from, gpu).0;
        if let Some(e) = self.edges.get_mut(&(from, to)) {
            e.covered = covered;
        }
        Some(self.sync(semaphore, value, SyncKind::Wait, None))
    }

    /// Before an operation on the stream track `to`: wait for the work of every other stream
    /// track CUDA orders it after ([`streams::order`]; `same_stream`: only one stream's tracks).
    pub(crate) fn stream_edges(&mut self, to: TrackId, same_stream: bool) {
        if self.stream_tracks < 2 {
            return;
        }
        let Some(b) = self.tracks[to.0 as usize].stream else { return };
        for i in 0..self.tracks.len() {
            let Some(a) = self.tracks[i].stream.filter(|_| i != to.0 as usize) else { continue };
            let Some(why) = streams::order(&a, &b).filter(|w| !same_stream || *w == Order::SameStream) else {
                continue;
            };
            if let Some(wait) = self.edge(TrackId(i as u32), to, why.prefix(), None) {
                self.push(to, Entry::Sync(wait));
            }
        }
    }

    /// The `join:G` semaphore of the GPU track `gpu`, made on first use; and its next value.
    pub(crate) fn next_join(&mut self, gpu: TrackId) -> (SemaphoreId, u64) {
        let (semaphore, value) = match self.tracks[gpu.0 as usize].join {
            Some(j) => j,
            None => {
                let name = format!("join:{}", self.names.track(gpu).name);
                (self.add_internal(name), 0)
            }
        };
        self.tracks[gpu.0 as usize].join = Some((semaphore, value + 1));
        (semaphore, value + 1)
    }

    /// Whether any host track exists (join signals are recorded only then).
    pub(crate) fn has_host_tracks(&self) -> bool {
        self.host_tracks > 0
    }

    /// The host track `host` waited (on the host, just now) for `join` ≥ `value`.
    pub(crate) fn host_joined(&mut self, host: TrackId, join: SemaphoreId, value: u64) {
        let seen = self.joined.entry((host, join)).or_insert(0);
        if value == 0 || *seen >= value {
            return;
        }
        *seen = value;
        let wait = self.sync(join, value, SyncKind::Wait, Some(host_now_ns()));
        self.push(host, Entry::Sync(wait));
    }
}

impl Profiler {
    /// A profiler of host threads only (no GPU track can be made), feeding `sinks`: for tests
    /// and tools.
    pub fn host_only(options: Options, sinks: Vec<Box<dyn Sink + Send>>) -> Profiler {
        if !options.enabled {
            return Profiler::disabled();
        }
        Profiler::make(options, None, sinks)
    }

    pub(crate) fn make(options: Options, gpu: Option<Gpu>, sinks: Vec<Box<dyn Sink + Send>>) -> Profiler {
        let timeline = options.keep_timeline.then(Timeline::default);
        let shared = Shared {
            id: NEXT_PROFILER.fetch_add(1, Ordering::Relaxed),
            options,
            gpu,
            state: Mutex::new(State::new()),
            out: Mutex::new(Out {
                sinks,
                timeline,
                names_sent: 0,
                ready: Vec::new(),
                frame_ends: Vec::new(),
            }),
        };
        Profiler { shared: Some(Arc::new(shared)) }
    }

    /// A profiler that records nothing: every call is a no-op, no GPU work is done. The same
    /// code runs with it as with a real one.
    pub fn disabled() -> Profiler {
        Profiler { shared: None }
    }

    pub fn is_enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// The frame being recorded (0 until the first [`Profiler::end_frame`]).
    pub fn frame(&self) -> u64 {
        self.shared.as_ref().map_or(0, |s| s.lock().frame)
    }

    /// A shared resource, by name (the same name gives the same resource): what scopes declare
    /// they read or write.
    pub fn resource(&self, name: impl Into<String>) -> Resource {
        match &self.shared {
            Some(s) => Resource { profiler: s.id, id: s.lock().add_resource(name.into()) },
            None => Resource { profiler: 0, id: ResourceId(u32::MAX) },
        }
    }

    /// A semaphore, by name (the same name gives the same semaphore): what the tracks' waits and
    /// signals name.
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        match &self.shared {
            Some(s) => Semaphore { profiler: s.id, id: s.lock().add_semaphore(name.into(), false) },
            None => Semaphore { profiler: 0, id: SemaphoreId(u32::MAX) },
        }
    }

    /// End the frame: note its end on the host, resolve whatever GPU results are ready, and feed
    /// the sinks. Never waits for the GPU.
    pub fn end_frame(&self) -> Result<()> {
        let Some(s) = &self.shared else { return Ok(()) };
        {
            let mut st = s.lock();
            let end = FrameEnd { frame: st.frame, host_ns: host_now_ns() };
            st.frame_ends.push(end);
            st.frame += 1;
            st.stats.frames += 1;
        }
        s.flush(false)
    }

    /// What did not make it into the timeline so far.
    pub fn stats(&self) -> Stats {
        self.shared.as_ref().map_or_else(Stats::default, |s| s.lock().stats)
    }

    /// Stop: wait (at most [`Options::drain_timeout`]) for the results still pending, feed the
    /// sinks, and hand over the capture. Call it once the GPU work is done (after your last
    /// fence or stream synchronisation): a one-off clock is checked once more on the idle queue.
    /// Track handles still alive record nothing afterwards.
    pub fn finish(self) -> Result<Capture> {
        let Some(s) = self.shared else { return Ok(Capture::empty()) };
        let deadline = Instant::now() + s.options.drain_timeout;
        loop {
            s.flush(false)?;
            if s.lock().pending() == 0 || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if let Some(gpu) = &s.gpu {
            if !gpu.clock.is_calibrated() {
                if let Err(e) = gpu.clock.recheck(|| (gpu.one_off)(&gpu.device)) {
                    log::warn!("vkhip-profile: re-checking the one-off clock after the run failed: {e}");
                }
            }
        }
        s.flush(true)?;
        let mut out = s.out.lock().unwrap_or_else(|p| p.into_inner());
        let stats = s.lock().stats;
        let clocks: Vec<ClockInfo> = s.clock_infos();
        let mut timeline = out.timeline.take().unwrap_or_default();
        timeline.clock_notes = clocks.iter().map(ClockInfo::line).collect();
        let sinks = std::mem::take(&mut out.sinks);
        Ok(Capture { timeline, stats, clocks, sinks, extra: serde_json::Value::Object(Default::default()) })
    }

    pub(crate) fn require_gpu(&self, what: &str) -> Result<Option<(&Arc<Shared>, &Gpu)>> {
        let Some(s) = &self.shared else { return Ok(None) };
        let Some(gpu) = &s.gpu else {
            return Err(Error::Invalid(format!(
                "{what} needs a profiler on a Vulkan device (Profiler::new), not a host-only one"
            )));
        };
        if s.lock().finished {
            return Err(Error::Invalid(format!("{what}: the profiler has finished")));
        }
        Ok(Some((s, gpu)))
    }
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn clock_infos(&self) -> Vec<ClockInfo> {
        let mut infos: Vec<ClockInfo> = self.gpu.iter().map(|g| g.clock.info()).collect();
        for t in &self.lock().tracks {
            if let Kind::Gpu(g) = &t.kind {
                infos.extend(g.kind_clock_info(self.gpu.as_ref()));
            }
        }
        infos
    }

    /// Resolve what is ready and feed the sinks. `last`: drop whatever is still pending (and
    /// tell the sinks the final names).
    fn flush(&self, last: bool) -> Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let out = &mut *out;
        // The items and frame ends change hands by swapping buffers: both keep their capacity,
        // so a frame allocates nothing here. What was resolved is fed even when a read failed.
        let (names, result, resolved_below) = {
            let mut st = self.lock();
            let result = st.poll(self, last);
            let names =
                (st.names_version != out.names_sent || last).then(|| (st.names.clone(), st.names_version));
            std::mem::swap(&mut st.ready, &mut out.ready);
            std::mem::swap(&mut st.frame_ends, &mut out.frame_ends);
            if last {
                st.finished = true;
            }
            (names, result, st.resolved_below)
        };
        if let Some((names, version)) = names {
            out.names_sent = version;
            for sink in out.sinks.iter_mut() {
                sink.names(&names);
            }
            if let Some(t) = &mut out.timeline {
                t.set_names(names);
            }
        }
        for (track, item) in out.ready.drain(..) {
            for sink in out.sinks.iter_mut() {
                sink.item(track, &item);
            }
            // The timeline keeps the item itself (moved, not cloned).
            if let Some(t) = &mut out.timeline {
                t.push_item(track, item);
            }
        }
        for end in out.frame_ends.drain(..) {
            for sink in out.sinks.iter_mut() {
                sink.frame_end(end);
            }
            if let Some(t) = &mut out.timeline {
                t.frame_end(end);
            }
        }
        for sink in out.sinks.iter_mut() {
            sink.resolved_below(resolved_below);
        }
        result
    }
}

impl State {
    /// Entries still waiting, and Vulkan scopes recorded but not submitted.
    fn pending(&self) -> usize {
        self.tracks
            .iter()
            .map(|t| {
                t.entries.len()
                    + match &t.kind {
                        Kind::Gpu(g) => g.kind_staged_len(),
                        Kind::Host => 0,
                    }
            })
            .sum()
    }

    /// Resolve every track from its head. `last`: drop what is still pending.
    fn poll(&mut self, shared: &Shared, last: bool) -> Result<()> {
        let now = host_now_ns();
        let horizon_ns = shared.options.horizon.as_nanos() as u64;
        let frame = self.frame;
        let mut first_error = None;
        for i in 0..self.tracks.len() {
            let track = TrackId(i as u32);
            let t = &mut self.tracks[i];
            if let Err(e) = t.kind.refresh(shared.gpu.as_ref()) {
                first_error.get_or_insert(e);
            }
            while let Some(head) = t.entries.front() {
                let resolved = match head {
                    Entry::Sync(_) => None,
                    Entry::Scope(s) if s.open && !last => break,
                    Entry::Scope(s) => {
                        let expired = last
                            || s.open
                            || (s.frame + HORIZON_FRAMES < frame
                                && now.saturating_sub(s.recorded_ns) > horizon_ns);
                        let resolved = if s.failed {
                            Resolved::Lost
                        } else {
                            t.kind.resolve(s.marks, shared.gpu.as_ref())
                        };
                        match resolved {
                            Resolved::Times(start_ns, end_ns) => Some(Some((start_ns, end_ns))),
                            Resolved::Pending if !expired => break,
                            Resolved::Pending | Resolved::Lost => Some(None),
                        }
                    }
                };
                // The head leaves the queue: moved into its item, nothing cloned.
                let item = match (t.entries.pop_front(), resolved) {
                    (Some(Entry::Sync(s)), _) => Some(Item::Sync(s)),
                    (Some(Entry::Scope(s)), Some(times)) => {
                        t.kind.release(s.marks, times.is_some(), shared.gpu.as_ref());
                        times.map(|(start_ns, end_ns)| {
                            Item::Scope(Scope {
                                name: s.name,
                                frame: s.frame,
                                start_ns,
                                end_ns: end_ns.max(start_ns),
                                depth: s.depth,
                                accesses: s.accesses,
                            })
                        })
                    }
                    _ => None,
                };
                match item {
                    Some(item) => {
                        self.ready.push((track, item));
                        self.stats.items += 1;
                    }
                    None => self.stats.lost += 1,
                }
            }
            if last {
                let staged = match &mut t.kind {
                    Kind::Gpu(g) => g.kind_staged().map(std::mem::take).unwrap_or_default(),
                    Kind::Host => Vec::new(),
                };
                self.stats.never_submitted += staged.len() as u64;
                for e in staged {
                    if let Entry::Scope(s) = e {
                        t.kind.release(s.marks, false, shared.gpu.as_ref());
                    }
                }
            }
        }
        // What can still come: the frames of the entries still waiting (scopes recorded and
        // not yet submitted included) and of whatever is recorded from now on.
        let waiting = self.tracks.iter_mut().flat_map(|t| {
            let staged = match &mut t.kind {
                Kind::Gpu(g) => g.kind_staged().map(|s| s.iter().map(Entry::frame).min()),
                Kind::Host => None,
            };
            t.entries.iter().map(Entry::frame).min().into_iter().chain(staged.flatten())
        });
        let below = waiting.min().map_or(frame, |f| f.min(frame));
        self.resolved_below = self.resolved_below.max(below);
        // The clocks' stated accuracy, on every track they map.
        let vulkan_ns = shared.gpu.as_ref().map(|g| g.clock.accuracy_ns());
        for i in 0..self.tracks.len() {
            let accuracy = match &self.tracks[i].kind {
                Kind::Gpu(g) => g.kind_accuracy(vulkan_ns, last),
                Kind::Host => None,
            };
            if let Some((ns, method)) = accuracy {
                self.set_accuracy(TrackId(i as u32), ns, method.as_deref());
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Kind {
    fn refresh(&mut self, gpu: Option<&Gpu>) -> Result<()> {
        match self {
            Kind::Host => Ok(()),
            Kind::Gpu(g) => g.kind_refresh(gpu),
        }
    }

    fn resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved {
        match self {
            Kind::Host => Resolved::Times(marks.begin, marks.end),
            Kind::Gpu(g) => g.kind_resolve(marks, gpu),
        }
    }

    /// Give back a scope's marks; `read`: its results were read.
    fn release(&mut self, marks: Marks, read: bool, gpu: Option<&Gpu>) {
        if let Kind::Gpu(g) = self {
            g.kind_release(marks, read, gpu);
        }
    }
}

thread_local! {
    /// The host tracks of this thread: (profiler id, track) ([`crate::host`] binds them).
    static HOST_TRACKS: std::cell::RefCell<Vec<(u64, TrackId)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The calling thread's host track on the profiler `profiler`, if it has one.
pub(crate) fn current_host_track(profiler: u64) -> Option<TrackId> {
    HOST_TRACKS.with(|t| t.borrow().iter().find(|(p, _)| *p == profiler).map(|(_, t)| *t))
}

/// Make `track` the calling thread's host track on `profiler` (replacing an earlier one).
pub(crate) fn bind_host_track(profiler: u64, track: TrackId) {
    HOST_TRACKS.with(|t| {
        let mut t = t.borrow_mut();
        t.retain(|(p, _)| *p != profiler);
        t.push((profiler, track));
    });
}

/// Forget it (when the thread's track is dropped; never panics during thread teardown).
pub(crate) fn unbind_host_track(profiler: u64, track: TrackId) {
    let _ = HOST_TRACKS.try_with(|t| t.borrow_mut().retain(|e| *e != (profiler, track)));
}

/// A stream's side of the protocol (a CUDA or HIP stream: every operation is in stream order as
/// the host enqueues it), written once for both.
pub(crate) struct StreamOps<'a> {
    pub(crate) shared: &'a Option<Arc<Shared>>,
    pub(crate) track: TrackId,
}

impl StreamOps<'_> {
    /// The submit edge from the calling thread's host track, if it has new items, and the edges
    /// from the other stream tracks CUDA orders this stream's next operation after.
    pub(crate) fn edge(&self, st: &mut State, now: Ns) {
        let Some(s) = self.shared else { return };
        if let Some(host) = st.current_host(s.id) {
            if let Some(wait) = st.submit_edge(host, self.track, now) {
                st.push(self.track, Entry::Sync(wait));
            }
        }
        st.stream_edges(self.track, false);
    }

    /// A scope begins on the stream (after [`StreamOps::edge`]): pushed with its marks; its id.
    pub(crate) fn begin(&self, st: &mut State, name: &str, marks: Marks, now: Ns) -> u64 {
        self.edge(st, now);
        let scope = st.new_scope(self.track, name, marks, now);
        let id = scope.id;
        st.push(self.track, Entry::Scope(scope));
        id
    }

    /// The track's handle was dropped.
    pub(crate) fn dropped(&self) {
        if let Some(s) = self.shared {
            s.lock().stream_dropped(self.track);
        }
    }

    /// A wait or signal the caller enqueued on the stream.
    pub(crate) fn sync(&self, semaphore: &Semaphore, value: u64, kind: SyncKind) {
        let Some(s) = self.shared else { return };
        if semaphore.profiler != s.id {
            return;
        }
        let mut st = s.lock();
        self.edge(&mut st, host_now_ns());
        let sync = st.sync(semaphore.id, value, kind, None);
        st.push(self.track, Entry::Sync(sync));
    }

    /// The calling thread (a host track) waited for everything enqueued on the stream so far.
    pub(crate) fn synchronized(&self) {
        let Some(s) = self.shared else { return };
        let mut st = s.lock();
        let Some(host) = st.current_host(s.id) else { return };
        // The stream's other tracks' work is the stream's too.
        st.stream_edges(self.track, true);
        let (join, value) = st.next_join(self.track);
        let signal = st.sync(join, value, SyncKind::Signal, None);
        st.push(self.track, Entry::Sync(signal));
        st.host_joined(host, join, value);
    }
}

/// A scope guard's common part: the track, the scope's id and its declared accesses.
pub(crate) struct ScopeCore {
    pub(crate) shared: Option<Arc<Shared>>,
    pub(crate) track: TrackId,
    pub(crate) id: u64,
    pub(crate) accesses: Vec<Access>,
    /// Already closed (by `end`).
    pub(crate) closed: bool,
}

impl ScopeCore {
    pub(crate) fn inert() -> Self {
        ScopeCore { shared: None, track: TrackId(0), id: 0, accesses: Vec::new(), closed: true }
    }

    pub(crate) fn access(&mut self, r: &Resource, access: fn(ResourceId) -> Access) {
        if let Some(s) = &self.shared {
            if r.profiler == s.id && !self.closed {
                self.accesses.push(access(r.id));
            }
        }
    }

    /// Record the scope's end (`end`: a host scope's end time).
    pub(crate) fn close(&mut self, end: Option<u64>) {
        self.finish(end, false);
    }

    /// Record that the scope's results will never come (a failed stamp or event).
    pub(crate) fn fail(&mut self) {
        self.finish(None, true);
    }

    fn finish(&mut self, end: Option<u64>, failed: bool) {
        if self.closed {
            return;
        }
        self.closed = true;
        if let Some(s) = &self.shared {
            let accesses = std::mem::take(&mut self.accesses);
            s.lock().close_scope(self.track, self.id, end, accesses, failed);
        }
    }

    pub(crate) fn count_failed_end(&self) {
        if let Some(s) = &self.shared {
            s.lock().stats.failed_ends += 1;
        }
    }
}

/// Everything a finished profiler recorded: the timeline, what was lost, the clocks; the
/// checker, the report and the trace are made from it.
pub struct Capture {
    timeline: Timeline,
    stats: Stats,
    clocks: Vec<ClockInfo>,
    sinks: Vec<Box<dyn Sink + Send>>,
    extra: serde_json::Value,
}

impl Capture {
    fn empty() -> Self {
        Capture {
            timeline: Timeline::default(),
            stats: Stats::default(),
            clocks: Vec::new(),
            sinks: Vec::new(),
            extra: serde_json::Value::Object(Default::default()),
        }
    }

    /// The whole timeline (empty with [`Options::keep_timeline`] off, or a disabled profiler).
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    pub fn into_timeline(self) -> Timeline {
        self.timeline
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// How each device clock was mapped, with its accuracy.
    pub fn clocks(&self) -> &[ClockInfo] {
        &self.clocks
    }

    /// The sinks given to [`Profiler::with_sinks`], fed to the end.
    pub fn into_sinks(self) -> Vec<Box<dyn Sink + Send>> {
        self.sinks
    }

    /// A JSON object written into the trace's `otherData.extra` (your configuration).
    pub fn with_extra(mut self, extra: serde_json::Value) -> Self {
        self.extra = extra;
        self
    }

    /// The cross-API hazard checker over the whole timeline.
    pub fn check(&self) -> crate::check::CheckReport {
        crate::check::check(&self.timeline)
    }

    /// The text report (its `Display`): clocks, the checker's verdict, frame time against the
    /// GPU's busy time, hand-offs, scopes.
    pub fn report(&self) -> crate::analysis::Summary {
        crate::analysis::analyze(&self.timeline)
    }

    /// Write the Chrome/Perfetto JSON trace (for ui.perfetto.dev).
    pub fn write_perfetto(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(), crate::perfetto::TraceError> {
        crate::perfetto::write(&self.timeline, path, &self.extra)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_analysis_keeps_frames_open_as_long_as_the_horizon() {
        assert_eq!(crate::analysis::OPEN_FRAMES as u64, super::HORIZON_FRAMES + 1);
    }

    #[test]
    fn the_profiler_is_send_and_sync_with_every_kind_of_track() {
        // Its state holds every track's GPU side (query pools, stamp memory, CUDA events): one
        // that is not Send would make the profiler unusable from other threads.
        fn is<T: Send + Sync>() {}
        is::<super::Profiler>();
    }
}
