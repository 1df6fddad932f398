//! The protocol as the profiler crate models it: each actor's operations in its program order
//! (semaphore signals and waits, the orderings that are not semaphores, and the scopes that
//! touch the shared slots and images), recorded where the app performs them, and assembled
//! into `vkhip_profile` items for its checker, hand-offs and trace (docs/ARCHITECTURE.md,
//! "The profiler").
//!
//! ## Recording
//! Each thread that performs protocol operations records them, in the order it performs them,
//! into a log of its own ([`enable`], then [`signal`], [`wait`], [`submit`], [`join`],
//! [`barrier`], [`scope`], …): the render thread (for itself, the graphics queue it submits to
//! and the compute stream or dispatches it enqueues) and the bridge thread (for itself and the
//! compute stream it enqueues to). A thread that never enabled its log records nothing, so a
//! run without a profiler (`verify`, `cycles`) pays one thread-local flag per call.
//!
//! What is recorded, and where ([`Sem`] names the semaphores):
//! - a **GPU wait or signal** of a submission or an enqueue, on the GPU track, where the app
//!   hands it to Vulkan, CUDA or HIP (the draw's and the copy's [`crate::sync::DrawSync`], the
//!   compute side's enqueue);
//! - a **host wait or signal** (`vkWaitSemaphores`, a counter read that saw a value,
//!   `vkSignalSemaphore`), on the host thread, with the host time it returned or began;
//! - a **submission or enqueue** from a host thread to a GPU track: [`submit`] (internal
//!   semaphore `submit:A→B`: the host signals it before the call, the GPU track waits on it
//!   before the submitted work);
//! - a **host wait for a queue, stream, fence or event** (`vkQueueWaitIdle`, the compute API's
//!   own event after a kernel): [`join`] (internal `join:A→B`, signalled at the end of the GPU
//!   track's program order so far);
//! - a **barrier between two tracks of one Vulkan queue** (the one-submission frames' barriers
//!   between the write and the draw, the post stage's on the queue): [`barrier`];
//! - a **GPU scope** whose times come later from timestamps, stamps or events: [`scope`], a
//!   placeholder in the track's order that the span of the same frame and phase fills.
//!
//! Binary semaphores (`--sync binary`) are counters: the n-th wait on one is met by its n-th
//! signal ([`binary_signal`], [`binary_wait`]).
//!
//! ## Assembly
//! [`Assembler`] keeps each track's items in order until their times are known, gives every
//! scope the accesses the app's rules declare ([`Layout::accesses`]: the write of frame f writes
//! `slot[f mod K]`, the draw reads it; with a post stage the draw writes `scene[p]`, the filter
//! reads `scene[p]` and writes `output[p]`, the copy reads `output[p]`), and feeds the items to
//! the crate's sinks. A host track's items are its operations and its host spans, ordered by
//! time; a GPU track's are its recorded operations, in order, with each placeholder filled by
//! its span. A placeholder whose span never comes (a frame dropped by the timer) is given up
//! [`DROP_LAG`] frames later, counted, and the track goes on.

use super::clock::{host_now_ns, ClockInfo};
use super::span::{HostSpan, Phase, Span, Track};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use vkhip_profile::model::{self, Access, Item, Names, Scope, SemaphoreInfo, Sink, Sync, SyncKind};
use vkhip_profile::{ResourceId, SemaphoreId, TrackId};

/// Frames a placeholder waits for its span before it is given up (GPU spans arrive within a
/// few frames: a draw's timestamps when its command buffer comes round again, events and
/// stamps when the stream has passed them).
pub const DROP_LAG: u64 = 64;

/// Operations a thread's log holds before it drops more (nobody is taking them).
pub const LOG_LIMIT: usize = 1 << 16;

/// A semaphore of the model. The protocol's four timelines, two of them also under the name of
/// the post stage's use, the binary pairs, and the internal orderings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sem {
    /// `computed`: the compute side wrote the slot.
    Computed,
    /// `rendered`: the draw finished (the slot may be written again; the throttle's frees).
    Rendered,
    /// `posted`: the filter wrote the output image (the copy may read it).
    Posted,
    /// `presented`: the copy finished (the output may be written again).
    Presented,
    /// `rendered` as the post filter waits for it: the scene image holds the frame. One Vulkan
    /// semaphore, named apart so the filter's hand-off is not averaged with the slot's.
    Scene,
    /// `posted` as the draw waits for it: the filter of frame f−K finished reading the scene
    /// image the draw writes. Named apart for the same reason.
    SceneFree,
    /// `--sync binary`: slot s's `computed` and `rendered`, counted by their signals.
    BinaryComputed(u8),
    BinaryRendered(u8),
    /// A host thread submitted or enqueued work to a GPU track (internal).
    Submit(Track, Track),
    /// A host thread waited for a GPU track's queue, stream, fence or event (internal).
    Join(Track, Track),
    /// A barrier between two tracks of one Vulkan queue (internal).
    Barrier(Track, Track),
}

impl Sem {
    /// Its name in the report and the trace.
    ///
    /// ```
    /// use vkhip::profile::program::Sem;
    /// use vkhip::profile::Track;
    ///
    /// assert_eq!(Sem::Rendered.name(), "rendered");
    /// assert_eq!(Sem::BinaryComputed(2).name(), "computed[2]");
    /// assert_eq!(Sem::Submit(Track::Render, Track::Queue).name(), "submit:render→graphics");
    /// assert!(Sem::Join(Track::Compute, Track::Bridge).internal() && !Sem::Scene.internal());
    /// ```
    pub fn name(self) -> String {
        match self {
            Sem::Computed => "computed".into(),
            Sem::Rendered => "rendered".into(),
            Sem::Posted => "posted".into(),
            Sem::Presented => "presented".into(),
            Sem::Scene => "scene".into(),
            Sem::SceneFree => "scene free".into(),
            Sem::BinaryComputed(s) => format!("computed[{s}]"),
            Sem::BinaryRendered(s) => format!("rendered[{s}]"),
            Sem::Submit(a, b) => format!("submit:{}→{}", a.short(), b.short()),
            Sem::Join(a, b) => format!("join:{}→{}", a.short(), b.short()),
            Sem::Barrier(a, b) => format!("barrier:{}→{}", a.short(), b.short()),
        }
    }

    /// An ordering that is not one of the protocol's semaphores (checked, not a hand-off).
    pub fn internal(self) -> bool {
        matches!(self, Sem::Submit(..) | Sem::Join(..) | Sem::Barrier(..))
    }

    /// A binary semaphore (values are counts of its signals and waits).
    pub fn binary(self) -> bool {
        matches!(self, Sem::BinaryComputed(_) | Sem::BinaryRendered(_))
    }
}

/// What an operation is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpKind {
    Signal(Sem, u64),
    Wait(Sem, u64),
    /// A GPU scope of `phase` for the op's frame; its times come with its span.
    Scope(Phase),
}

/// One operation of one track, in its program order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    pub track: Track,
    pub frame: u64,
    pub kind: OpKind,
    /// Host operations: when the host signalled (just before the call) or when its wait
    /// returned.
    pub host_ns: Option<u64>,
}

/// What a thread's log holds: operations, and (the bridge thread's) host spans in their place.
#[derive(Clone, Debug, PartialEq)]
pub enum Rec {
    Op(Op),
    Span(Span),
    /// How the compute side's times are mapped (the bridge thread owns the backend).
    Clock(ClockInfo),
}

#[derive(Default)]
struct Log {
    enabled: bool,
    host: Option<Track>,
    gpu_scopes: bool,
    recs: Vec<Rec>,
    /// Per semaphore: signals and waits recorded (binary values, internal orderings).
    counts: BTreeMap<Sem, (u64, u64)>,
    /// GPU tracks this thread placed a scope on: a join or barrier from a track with no work
    /// recorded before it orders nothing and is not recorded.
    scoped: Vec<Track>,
    dropped: u64,
}

thread_local! {
    static LOG: RefCell<Log> = RefCell::new(Log::default());
}

fn with<T>(f: impl FnOnce(&mut Log) -> T) -> Option<T> {
    LOG.with(|l| {
        let mut l = l.borrow_mut();
        l.enabled.then(|| f(&mut l))
    })
}

impl Log {
    fn push(&mut self, rec: Rec) {
        if self.recs.len() < LOG_LIMIT {
            self.recs.push(rec);
        } else {
            self.dropped += 1;
        }
    }

    fn op(&mut self, track: Track, frame: u64, kind: OpKind, host_ns: Option<u64>) {
        self.push(Rec::Op(Op { track, frame, kind, host_ns }));
    }

    fn next_signal(&mut self, sem: Sem) -> u64 {
        let c = self.counts.entry(sem).or_default();
        c.0 += 1;
        c.0
    }

    fn next_wait(&mut self, sem: Sem) -> u64 {
        let c = self.counts.entry(sem).or_default();
        c.1 += 1;
        c.1
    }

    fn host(&self) -> Track {
        self.host.unwrap_or(Track::Render)
    }
}

/// From now on this thread records its operations, as the host track `host` (`Render` or
/// `Bridge`); `gpu_scopes`: GPU scopes are placed (their spans will come: GPU timing is on and
/// the queue has timestamps). Starts an empty log.
pub fn enable(host: Track, gpu_scopes: bool) {
    LOG.with(|l| *l.borrow_mut() = Log { enabled: true, host: Some(host), gpu_scopes, ..Log::default() });
}

/// This thread stops recording and forgets its log.
pub fn disable() {
    LOG.with(|l| *l.borrow_mut() = Log::default());
}

/// The host track this thread records as (the render thread's unless told otherwise).
pub fn host_track() -> Track {
    LOG.with(|l| l.borrow().host())
}

/// Whether this thread places GPU scopes ([`scope`] records them): it records, GPU timing is
/// on and the queue has timestamps.
pub fn gpu_scopes() -> bool {
    with(|l| l.gpu_scopes).unwrap_or(false)
}

/// Whether this thread records.
pub fn enabled() -> bool {
    LOG.with(|l| l.borrow().enabled)
}

/// Move what this thread recorded so far into `out`; returns how many records were dropped
/// because the log was full.
pub fn take(out: &mut Vec<Rec>) -> u64 {
    with(|l| {
        out.append(&mut l.recs);
        std::mem::take(&mut l.dropped)
    })
    .unwrap_or(0)
}

/// A GPU track signals `sem = value` after its work so far (`value` is ignored for a binary
/// semaphore: see [`binary_signal`]).
pub fn signal(track: Track, sem: Sem, value: u64, frame: u64) {
    with(|l| {
        let v = if sem.binary() { l.next_signal(sem) } else { value };
        l.op(track, frame, OpKind::Signal(sem, v), None)
    });
}

/// A GPU track waits for `sem ≥ value` before its next work (a binary semaphore: its next
/// unconsumed signal).
pub fn wait(track: Track, sem: Sem, value: u64, frame: u64) {
    with(|l| {
        let v = if sem.binary() { l.next_wait(sem) } else { value };
        l.op(track, frame, OpKind::Wait(sem, v), None)
    });
}

/// A binary semaphore's signal: its value is the count of its signals.
pub fn binary_signal(track: Track, sem: Sem, frame: u64) {
    signal(track, sem, 0, frame);
}

/// A binary semaphore's wait, met by the signal of the same count.
pub fn binary_wait(track: Track, sem: Sem, frame: u64) {
    wait(track, sem, 0, frame);
}

/// This host thread signals `sem = value` (call just before the signal is made, so a waiter
/// cannot start earlier than the recorded time).
pub fn host_signal(sem: Sem, value: u64, frame: u64) {
    let now = host_now_ns();
    with(|l| {
        let h = l.host();
        l.op(h, frame, OpKind::Signal(sem, value), Some(now))
    });
}

/// This host thread's wait for `sem ≥ value` returned at `at_ns` (or a counter read saw it).
pub fn host_wait(sem: Sem, value: u64, frame: u64, at_ns: u64) {
    with(|l| {
        let h = l.host();
        l.op(h, frame, OpKind::Wait(sem, value), Some(at_ns))
    });
}

/// This host thread is about to submit or enqueue work to the GPU track `to`: what it did
/// before happens before that work. Call just before the API call.
pub fn submit(to: Track, frame: u64) {
    let now = host_now_ns();
    with(|l| {
        let from = l.host();
        let sem = Sem::Submit(from, to);
        let n = l.next_signal(sem);
        l.op(from, frame, OpKind::Signal(sem, n), Some(now));
        l.op(to, frame, OpKind::Wait(sem, n), None);
    });
}

/// This host thread's wait for everything the GPU track `from` was given so far (a queue, a
/// stream's event, a fence) returned at `at_ns`. Nothing while `from` has no scope (no work to
/// order, and no time for the checker to compare with).
pub fn join(from: Track, frame: u64, at_ns: u64) {
    with(|l| {
        if !l.scoped.contains(&from) {
            return;
        }
        let to = l.host();
        let sem = Sem::Join(from, to);
        let n = l.next_signal(sem);
        l.op(from, frame, OpKind::Signal(sem, n), None);
        l.op(to, frame, OpKind::Wait(sem, n), Some(at_ns));
    });
}

/// A pipeline barrier between two tracks of one Vulkan queue: `from`'s work so far happens
/// before `to`'s next work. Nothing while `from` has no scope (as [`join`]).
pub fn barrier(from: Track, to: Track, frame: u64) {
    with(|l| {
        if !l.scoped.contains(&from) {
            return;
        }
        let sem = Sem::Barrier(from, to);
        let n = l.next_signal(sem);
        l.op(from, frame, OpKind::Signal(sem, n), None);
        l.op(to, frame, OpKind::Wait(sem, n), None);
    });
}

/// GPU scopes of `phase` on `track`, one per frame of `frames`, whose spans come later (a batch
/// written by one launch gets one span per frame, all the same: the assembler makes them one
/// scope). Nothing when GPU scopes are off ([`enable`]).
pub fn scope(track: Track, phase: Phase, frames: Range<u64>) {
    with(|l| {
        if l.gpu_scopes && !frames.is_empty() {
            for f in frames {
                l.op(track, f, OpKind::Scope(phase), None);
            }
            if !l.scoped.contains(&track) {
                l.scoped.push(track);
            }
        }
    });
}

/// A host span of this thread, in its place among its operations (the bridge thread's).
pub fn host_span(frame: u64, phase: Phase, start_ns: u64, end_ns: u64) {
    with(|l| {
        let h = l.host();
        l.push(Rec::Span(Span::host(frame, h, phase, start_ns, end_ns)))
    });
}

/// A span measured for this thread (the bridge thread's backend's GPU spans), in the log's
/// order.
pub fn push_span(span: Span) {
    with(|l| l.push(Rec::Span(span)));
}

/// What the model of a run holds: its tracks and resources.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// K: slots, and with a post stage scene/output pairs.
    pub slots: usize,
    pub post: bool,
    /// The compute side's writes and filters run on the GPU (the compute track holds them);
    /// else they are the host's work (the `cpu` backend), on the host track that timed them.
    pub compute_on_gpu: bool,
    /// The app's tracks of this run, with the crate's description of each.
    pub tracks: Vec<(Track, model::Track)>,
}

impl Layout {
    fn resource(&self, kind: usize, frame: u64) -> ResourceId {
        let k = self.slots.max(1) as u64;
        ResourceId((kind as u64 * k + frame % k) as u32)
    }

    /// The resources: `slot[i]`, and with a post stage `scene[i]` and `output[i]`.
    pub fn resources(&self) -> Vec<String> {
        let kinds: &[&str] = if self.post { &["slot", "scene", "output"] } else { &["slot"] };
        kinds.iter().flat_map(|k| (0..self.slots.max(1)).map(move |i| format!("{k}[{i}]"))).collect()
    }

    /// The accesses the app's rules declare for a scope of `phase` on `track` covering
    /// `frames`.
    ///
    /// ```
    /// use vkhip::profile::program::Layout;
    /// use vkhip::profile::{Phase, Track};
    /// use vkhip_profile::model::{Access, ResourceId};
    ///
    /// let run = Layout { slots: 2, post: true, compute_on_gpu: true, tracks: vec![] };
    /// assert_eq!(run.resources(), ["slot[0]", "slot[1]", "scene[0]", "scene[1]", "output[0]", "output[1]"]);
    /// let (slot, scene, output) = (|i: u32| ResourceId(i), |i: u32| ResourceId(2 + i), |i: u32| ResourceId(4 + i));
    /// assert_eq!(run.accesses(Track::Compute, Phase::Write, 4..6), [Access::write(slot(0)), Access::write(slot(1))]);
    /// assert_eq!(run.accesses(Track::Queue, Phase::Draw, 3..4), [Access::read(slot(1)), Access::write(scene(1))]);
    /// assert_eq!(run.accesses(Track::Compute, Phase::PostFilter, 3..4), [Access::read(scene(1)), Access::write(output(1))]);
    /// assert_eq!(run.accesses(Track::Queue, Phase::PostCopy, 3..4), [Access::read(output(1))]);
    /// // The bridge thread's "write slot" only waits for the kernel: the stream writes.
    /// assert!(run.accesses(Track::Bridge, Phase::Write, 4..5).is_empty());
    /// // With the cpu backend the host writes.
    /// let cpu = Layout { compute_on_gpu: false, ..run };
    /// assert_eq!(cpu.accesses(Track::Bridge, Phase::Write, 4..5), [Access::write(slot(0))]);
    /// ```
    pub fn accesses(&self, track: Track, phase: Phase, frames: Range<u64>) -> Vec<Access> {
        // The compute side's work belongs to the track that runs it.
        let computes = if self.compute_on_gpu { track == Track::Compute } else { track.is_host() };
        let mut out = Vec::new();
        for f in frames {
            match phase {
                Phase::Write if computes => out.push(Access::write(self.resource(0, f))),
                Phase::Draw if track == Track::Queue => {
                    out.push(Access::read(self.resource(0, f)));
                    if self.post {
                        out.push(Access::write(self.resource(1, f)));
                    }
                }
                Phase::PostFilter if computes && self.post => {
                    out.push(Access::read(self.resource(1, f)));
                    out.push(Access::write(self.resource(2, f)));
                }
                Phase::PostCopy if track == Track::Queue && self.post => {
                    out.push(Access::read(self.resource(2, f)))
                }
                _ => {}
            }
        }
        out
    }
}

/// A track's item whose place is known and whose times may not be yet.
#[derive(Debug)]
enum Entry {
    Ready(Item),
    Scope { phase: Phase, frame: u64, times: Option<(u64, u64)> },
}

/// What went missing on the way (the report's and the trace's bookkeeping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Losses {
    /// GPU scopes whose span never came (given up after [`DROP_LAG`] frames).
    pub scopes_given_up: u64,
    /// Operations a full log dropped.
    pub ops_dropped: u64,
}

/// Assembles recorded operations and measured spans into the crate's items (see the module
/// note) and feeds them to a [`Sink`].
///
/// # Examples
///
/// A frame of `--sync external`: the compute stream waits `rendered` of frame f−K, writes,
/// signals `computed`; the queue waits for it and draws. The draw's span arrives last: the
/// queue's items after its wait are held until it comes, and then the checker finds the draw
/// ordered after the write.
///
/// ```
/// use vkhip::profile::program::{Assembler, Layout, Op, OpKind, Sem};
/// use vkhip::profile::span::HostSpan;
/// use vkhip::profile::{Phase, Track};
/// use vkhip_profile::model::{Api, Timeline, Track as ModelTrack};
///
/// let track = |name: &str, api, domain| ModelTrack {
///     name: name.into(), api, clock: String::new(), accuracy_ns: 0, clock_domain: domain,
/// };
/// let layout = Layout {
///     slots: 1, post: false, compute_on_gpu: true,
///     tracks: vec![(Track::Queue, track("graphics", Api::Vulkan, Some(0))),
///                  (Track::Compute, track("compute", Api::Cuda, Some(0)))],
/// };
/// let mut a = Assembler::new(layout);
/// let op = |track, kind| Op { track, frame: 0, kind, host_ns: None };
/// a.op(op(Track::Compute, OpKind::Scope(Phase::Write)));
/// a.op(op(Track::Compute, OpKind::Signal(Sem::Computed, 1)));
/// a.op(op(Track::Queue, OpKind::Wait(Sem::Computed, 1)));
/// a.op(op(Track::Queue, OpKind::Scope(Phase::Draw)));
/// let span = |track, phase, start_ns, end_ns| HostSpan { track, phase, start_ns, end_ns };
/// a.span(0, span(Track::Compute, Phase::Write, 1_000, 2_000));
/// let mut tl = Timeline::default();
/// a.flush(0, &mut tl);
/// // The queue's wait is given; its draw is held until its span comes.
/// assert_eq!((tl.items[0].len(), tl.items[1].len()), (1, 2));
/// a.span(0, span(Track::Queue, Phase::Draw, 2_500, 4_000));
/// a.flush(0, &mut tl);
/// assert_eq!(tl.items[0].len(), 2);
/// let report = vkhip_profile::check(&tl);
/// assert!(report.is_clean() && report.pairs_checked == 1, "{report}");
/// ```
pub struct Assembler {
    layout: Layout,
    names: Names,
    /// Whether the sink has the current names.
    names_sent: bool,
    ids: Vec<(Track, TrackId)>,
    sems: BTreeMap<Sem, SemaphoreId>,
    pending: Vec<VecDeque<Entry>>,
    phase_names: BTreeMap<Phase, Arc<str>>,
    pub losses: Losses,
}

impl Assembler {
    pub fn new(layout: Layout) -> Self {
        let names = Names {
            tracks: layout.tracks.iter().map(|(_, t)| t.clone()).collect(),
            resources: layout.resources(),
            semaphores: Vec::new(),
        };
        let ids = layout.tracks.iter().enumerate().map(|(i, (t, _))| (*t, TrackId(i as u32))).collect();
        let pending = (0..layout.tracks.len()).map(|_| VecDeque::new()).collect();
        Assembler {
            layout,
            names,
            names_sent: false,
            ids,
            sems: BTreeMap::new(),
            pending,
            phase_names: BTreeMap::new(),
            losses: Losses::default(),
        }
    }

    /// The names so far (tracks, resources, the semaphores seen).
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The crate's id of an app track of this run.
    pub fn track_id(&self, track: Track) -> Option<TrackId> {
        self.ids.iter().find(|(t, _)| *t == track).map(|(_, id)| *id)
    }

    /// Replace the description of `track` (its clock's accuracy grew, or became known).
    pub fn set_track(&mut self, track: Track, info: model::Track) {
        if let Some(id) = self.track_id(track) {
            let slot = &mut self.names.tracks[id.0 as usize];
            if *slot != info {
                *slot = info;
                self.names_sent = false;
            }
        }
    }

    fn sem(&mut self, sem: Sem) -> SemaphoreId {
        if let Some(id) = self.sems.get(&sem) {
            return *id;
        }
        self.names.semaphores.push(SemaphoreInfo { name: sem.name(), internal: sem.internal() });
        let id = SemaphoreId(self.names.semaphores.len() as u32 - 1);
        self.sems.insert(sem, id);
        self.names_sent = false;
        id
    }

    fn phase_name(&mut self, phase: Phase) -> Arc<str> {
        self.phase_names.entry(phase).or_insert_with(|| phase.name().into()).clone()
    }

    fn sync_item(&mut self, op: &Op) -> Option<Item> {
        let (sem, value, kind) = match op.kind {
            OpKind::Signal(s, v) => (s, v, SyncKind::Signal),
            OpKind::Wait(s, v) => (s, v, SyncKind::Wait),
            OpKind::Scope(_) => return None,
        };
        let semaphore = self.sem(sem);
        Some(Item::Sync(Sync { semaphore, value, kind, frame: op.frame, host_ns: op.host_ns }))
    }

    fn scope_item(&mut self, track: Track, phase: Phase, frames: Range<u64>, start: u64, end: u64) -> Item {
        Item::Scope(Scope {
            name: self.phase_name(phase),
            frame: frames.start,
            start_ns: start,
            end_ns: end.max(start),
            depth: 0,
            accesses: self.layout.accesses(track, phase, frames),
        })
    }

    /// One operation of a GPU track (or a host track's operation that needs no ordering by
    /// time), in its track's program order. Operations of tracks this run does not have are
    /// ignored.
    pub fn op(&mut self, op: Op) {
        let Some(id) = self.track_id(op.track) else { return };
        let entry = match op.kind {
            OpKind::Scope(phase) => Entry::Scope { phase, frame: op.frame, times: None },
            _ => match self.sync_item(&op) {
                Some(item) => Entry::Ready(item),
                None => return,
            },
        };
        self.pending[id.0 as usize].push_back(entry);
    }

    /// The span of a GPU scope of frame `frame` (mapped onto the host clock): it fills the
    /// track's placeholder of that frame and phase. A span with no placeholder (a phase the
    /// model keeps as waits and signals, or a batch's later frame) is not an item.
    pub fn span(&mut self, frame: u64, span: HostSpan) {
        let Some(id) = self.track_id(span.track) else { return };
        let hit = self.pending[id.0 as usize].iter_mut().find_map(|e| match e {
            Entry::Scope { phase, frame: f, times, .. }
                if *phase == span.phase && *f == frame && times.is_none() =>
            {
                Some(times)
            }
            _ => None,
        });
        if let Some(times) = hit {
            *times = Some((span.start_ns, span.end_ns));
        }
    }

    /// A host track's operations and spans, in their program order (ordered by time: an
    /// operation at its host time, a span at its end; at one instant waits first, then spans,
    /// then signals: work done after a wait returned and before a signal was made).
    pub fn host(&mut self, track: Track, items: &mut Vec<(u64, Rec)>) {
        let rank = |r: &Rec| match r {
            Rec::Op(Op { kind: OpKind::Wait(..), .. }) => 0,
            Rec::Span(_) => 1,
            _ => 2,
        };
        items.sort_by_key(|(t, r)| (*t, rank(r)));
        for (_, rec) in items.drain(..) {
            self.host_rec(track, rec);
        }
    }

    /// One record of a host track, appended in order (the bridge thread's come in its order).
    pub fn host_rec(&mut self, track: Track, rec: Rec) {
        let Some(id) = self.track_id(track) else { return };
        let item = match rec {
            Rec::Op(op) => match self.sync_item(&op) {
                Some(item) => item,
                None => return,
            },
            Rec::Span(s) => {
                let (Some(a), Some(b)) = (s.start.host_ns(), s.end.host_ns()) else { return };
                self.scope_item(track, s.phase, s.frame..s.frame + 1, a, b)
            }
            Rec::Clock(_) => return,
        };
        self.pending[id.0 as usize].push_back(Entry::Ready(item));
    }

    /// Give up placeholders more than [`DROP_LAG`] frames older than `frame`, and feed every
    /// item whose place and times are known to `sink`, each track in order.
    pub fn flush(&mut self, frame: u64, sink: &mut dyn Sink) {
        for t in 0..self.pending.len() {
            let before = self.pending[t].len();
            self.pending[t].retain(|e| match e {
                Entry::Scope { frame: f, times: None, .. } => f.saturating_add(DROP_LAG) >= frame,
                _ => true,
            });
            self.losses.scopes_given_up += (before - self.pending[t].len()) as u64;
        }
        self.emit(sink);
    }

    /// The end of the run: give up every placeholder still waiting and feed the rest.
    pub fn finish(&mut self, sink: &mut dyn Sink) {
        self.flush(u64::MAX, sink);
    }

    fn emit(&mut self, sink: &mut dyn Sink) {
        for t in 0..self.pending.len() {
            let track = self.layout.tracks[t].0;
            loop {
                let item = match self.pending[t].front() {
                    Some(Entry::Ready(_)) => match self.pending[t].pop_front() {
                        Some(Entry::Ready(item)) => item,
                        _ => break,
                    },
                    Some(&Entry::Scope { phase, frame, times: Some(times) }) => {
                        // One launch for a batch: the scopes of the frames after it with the
                        // very same times are the same work.
                        let Some(n) = same_launch(&self.pending[t], phase, frame, times) else { break };
                        self.pending[t].drain(..n);
                        self.scope_item(track, phase, frame..frame + n as u64, times.0, times.1)
                    }
                    _ => break,
                };
                if !self.names_sent {
                    sink.names(&self.names);
                    self.names_sent = true;
                }
                sink.item(TrackId(t as u32), &item);
            }
        }
        if !self.names_sent && !self.names.tracks.is_empty() {
            sink.names(&self.names);
            self.names_sent = true;
        }
    }

    /// Items waiting for a span or for an earlier item of their track.
    pub fn pending(&self) -> usize {
        self.pending.iter().map(VecDeque::len).sum()
    }
}

/// How many entries from the front of `pending` (a resolved scope of `phase`, `frame`, `times`)
/// are one launch: it and the scopes of the next frames right after it with the same phase and
/// times. None while one of those next frames' span has not come (it may be the same launch).
fn same_launch(pending: &VecDeque<Entry>, phase: Phase, frame: u64, times: (u64, u64)) -> Option<usize> {
    let mut n = 1;
    for e in pending.iter().skip(1) {
        match *e {
            Entry::Scope { phase: p, frame: f, times: t } if p == phase && f == frame + n as u64 => match t {
                None => return None,
                Some(t) if t == times => n += 1,
                Some(_) => break,
            },
            _ => break,
        }
    }
    Some(n)
}

/// Two sinks fed together (the analysis and, with `--trace`, the trace ring).
pub struct Both<'a, A: Sink + ?Sized, B: Sink + ?Sized>(pub &'a mut A, pub Option<&'a mut B>);

impl<A: Sink + ?Sized, B: Sink + ?Sized> Sink for Both<'_, A, B> {
    fn names(&mut self, names: &Names) {
        self.0.names(names);
        if let Some(b) = self.1.as_deref_mut() {
            b.names(names);
        }
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        self.0.item(track, item);
        if let Some(b) = self.1.as_deref_mut() {
            b.item(track, item);
        }
    }

    fn frame_end(&mut self, end: model::FrameEnd) {
        self.0.frame_end(end);
        if let Some(b) = self.1.as_deref_mut() {
            b.frame_end(end);
        }
    }

    fn resolved_below(&mut self, frame: u64) {
        self.0.resolved_below(frame);
        if let Some(b) = self.1.as_deref_mut() {
            b.resolved_below(frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkhip_profile::model::{Api, Timeline};

    fn model(name: &str, api: Api) -> model::Track {
        let domain = api.is_gpu().then_some(0);
        model::Track { name: name.into(), api, clock: String::new(), accuracy_ns: 0, clock_domain: domain }
    }

    fn layout(post: bool) -> Layout {
        Layout {
            slots: 2,
            post,
            compute_on_gpu: true,
            tracks: vec![
                (Track::Render, model("render", Api::Host)),
                (Track::Queue, model("graphics", Api::Vulkan)),
                (Track::Compute, model("compute", Api::Cuda)),
            ],
        }
    }

    /// The thread's log records only once enabled, in order, with internal semaphores counted
    /// per pair of tracks and binary ones per semaphore.
    #[test]
    fn the_log_records_in_order_once_enabled() {
        disable();
        signal(Track::Queue, Sem::Rendered, 1, 0);
        let mut out = Vec::new();
        assert_eq!(take(&mut out), 0);
        assert!(out.is_empty(), "nothing is recorded before enable");
        enable(Track::Render, true);
        submit(Track::Queue, 0);
        submit(Track::Queue, 1);
        binary_signal(Track::Compute, Sem::BinaryComputed(1), 1);
        binary_wait(Track::Queue, Sem::BinaryComputed(1), 1);
        join(Track::Queue, 1, 41); // the queue has no work recorded yet: nothing to join
        scope(Track::Queue, Phase::Draw, 1..3);
        join(Track::Queue, 1, 42);
        take(&mut out);
        let ops: Vec<(Track, OpKind)> = out
            .iter()
            .map(|r| match r {
                Rec::Op(o) => (o.track, o.kind.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        let s = Sem::Submit(Track::Render, Track::Queue);
        let b = Sem::BinaryComputed(1);
        let j = Sem::Join(Track::Queue, Track::Render);
        assert_eq!(
            ops,
            [
                (Track::Render, OpKind::Signal(s, 1)),
                (Track::Queue, OpKind::Wait(s, 1)),
                (Track::Render, OpKind::Signal(s, 2)),
                (Track::Queue, OpKind::Wait(s, 2)),
                (Track::Compute, OpKind::Signal(b, 1)),
                (Track::Queue, OpKind::Wait(b, 1)),
                (Track::Queue, OpKind::Scope(Phase::Draw)),
                (Track::Queue, OpKind::Scope(Phase::Draw)),
                (Track::Queue, OpKind::Signal(j, 1)),
                (Track::Render, OpKind::Wait(j, 1)),
            ]
        );
        // GPU scopes off: no placeholder.
        enable(Track::Bridge, false);
        scope(Track::Queue, Phase::Draw, 1..2);
        host_span(3, Phase::Write, 10, 20);
        out.clear();
        take(&mut out);
        assert_eq!(out, [Rec::Span(Span::host(3, Track::Bridge, Phase::Write, 10, 20))]);
        disable();
    }

    /// A batch written by one launch is one scope writing every slot of the batch; a
    /// placeholder whose span never comes is given up and its track goes on.
    #[test]
    fn batches_are_one_scope_and_lost_spans_are_given_up() {
        let mut a = Assembler::new(layout(false));
        let op = |track, frame, kind| Op { track, frame, kind, host_ns: None };
        for f in [4, 5, 6, 7] {
            a.op(op(Track::Compute, f, OpKind::Scope(Phase::Write)));
        }
        a.op(op(Track::Compute, 7, OpKind::Signal(Sem::Computed, 8)));
        a.op(op(Track::Queue, 4, OpKind::Scope(Phase::Draw)));
        a.op(op(Track::Queue, 4, OpKind::Signal(Sem::Rendered, 5)));
        let span = |track, phase, s, e| HostSpan { track, phase, start_ns: s, end_ns: e };
        // Frames 4 and 5 were one launch (the same span for each), 6 and 7 one each.
        a.span(4, span(Track::Compute, Phase::Write, 100, 200));
        a.span(5, span(Track::Compute, Phase::Write, 100, 200));
        let mut tl = Timeline::default();
        a.flush(5, &mut tl);
        assert_eq!(tl.items[2].len(), 0, "frame 6 may be the same launch: held");
        a.span(6, span(Track::Compute, Phase::Write, 210, 230));
        a.span(7, span(Track::Compute, Phase::Write, 240, 260));
        a.flush(7, &mut tl);
        let c = &tl.items[2];
        assert_eq!(c.len(), 4);
        let Item::Scope(w) = &c[0] else { panic!("{c:?}") };
        assert_eq!(w.accesses, [Access::write(ResourceId(0)), Access::write(ResourceId(1))]);
        assert_eq!((w.frame, w.start_ns, w.end_ns), (4, 100, 200));
        let frames: Vec<u64> = c.iter().map(Item::frame).collect();
        assert_eq!(frames, [4, 6, 7, 7]);
        // The draw's span never comes: held, then given up.
        assert_eq!(tl.items[1].len(), 0);
        a.flush(4 + DROP_LAG, &mut tl);
        assert_eq!(tl.items[1].len(), 0);
        a.flush(5 + DROP_LAG, &mut tl);
        assert_eq!(tl.items[1].len(), 1, "the signal after the lost draw goes on");
        assert_eq!(a.losses.scopes_given_up, 1);
        assert_eq!(a.pending(), 0);
    }

    /// Host items are ordered by time: a wait before the work after it, a signal after the
    /// work before it, whatever order they were handed in.
    #[test]
    fn host_items_are_ordered_by_time() {
        let mut a = Assembler::new(Layout { compute_on_gpu: false, ..layout(false) });
        let w = Rec::Op(Op {
            track: Track::Render,
            frame: 1,
            kind: OpKind::Wait(Sem::Join(Track::Queue, Track::Render), 1),
            host_ns: Some(50),
        });
        let s = Rec::Op(Op {
            track: Track::Render,
            frame: 1,
            kind: OpKind::Signal(Sem::Computed, 2),
            host_ns: Some(90),
        });
        let write = Rec::Span(Span::host(1, Track::Render, Phase::Write, 50, 90));
        a.host(Track::Render, &mut vec![(90, s), (90, write), (50, w)]);
        let mut tl = Timeline::default();
        a.flush(1, &mut tl);
        let kinds: Vec<String> = tl.items[0]
            .iter()
            .map(|i| match i {
                Item::Scope(s) => format!("{} {:?}", s.name, s.accesses),
                Item::Sync(s) => s.kind.name().to_string(),
            })
            .collect();
        assert_eq!(kinds, ["wait", "write slot [Access { resource: ResourceId(1), kind: Write }]", "signal"]);
    }
}
