//! The cross-API hazard checker: proves on the measured clock that every two conflicting
//! accesses (same resource, at least one write) from different tracks are ordered by a chain of
//! semaphore signals and waits, that the order held on the clock, and that each wait's work
//! started after the signal it waited on.
//!
//! ## How (streaming, one pass)
//! - **Happens-before** is tracked with vector clocks, one component per track. Each scope gets
//!   the next epoch of its own track; a signal snapshots its track's clock; a wait joins the
//!   snapshot of its matching signal — the first signal of that semaphore whose value is ≥ the
//!   wait's (values grow). Scope A happens before scope B when B's clock has seen A's epoch.
//! - **Pending queues**: items arrive per track in program order, tracks interleaved in any way
//!   (a Vulkan submission may be recorded waiting for a value CUDA signals later in record
//!   order). A track advances while its head can be processed; a wait whose signal has not been
//!   processed yet blocks its track until it is. Because waits block, an access is processed
//!   only after everything that happens before it, so "A happens before B" needs one test: the
//!   access processed second has seen the first's epoch.
//! - **Unverifiable** waits are released without ordering anything, counted and not reported:
//!   a wait whose signal lies before the trace (the first frames of a trace ring: the wait's
//!   value is below every signal of its semaphore, which cannot be matched with certainty — in a
//!   whole trace whose values jump, e.g. batches, this costs the first batch's waits); a wait
//!   whose signal never came (at [`Checker::finish`], or when its track holds more than
//!   [`Checker::with_horizon`] pending items); a GPU signal with no scope before it (no time).
//!   A wait for value 0 is met by the semaphore's initial value and orders nothing.
//! - **Accesses** (FastTrack-style): per resource the last write and the reads since it (a few
//!   per track). A new write is checked against both, a new read against the last write.
//!   Pairs on one track are not checked: a queue's or stream's own order is that API's business
//!   (the Khronos layer's synchronisation validation for Vulkan).
//!
//! ## Rules
//! 1. **unordered**: no signal → wait chain orders the two accesses.
//! 2. **overlap**: a chain orders them, but on the clock the second starts before the first
//!    ends by more than the tolerance (a wait at the wrong stage, a signal before the work).
//! 3. **wait before signal**: the first scope after a wait (a host wait: the moment it returned)
//!    starts before the signal's time by more than the tolerance. A GPU signal's time is the end
//!    of the last scope before it on its track, a host signal's its `host_ns`.
//!
//! The tolerance of a comparison is [`Names::tolerance_ns`] of the two tracks: the clocks'
//! stated accuracy, so a correct program gets no violation. Internal semaphores (submissions,
//! host joins, barriers) are ordinary semaphores here.
//!
//! Assumed: the signals of one semaphore are processed in value order (true when one track
//! signals it, as for every internal semaphore and the usual hand-off; a semaphore signalled
//! by several tracks may match a wait to a later signal than the first ≥ its value).

use crate::model::{
    AccessKind, Api, Item, Names, Ns, ResourceId, Scope, SemaphoreId, Sink, Sync, SyncKind, Timeline, TrackId,
};
use crate::model::{FrameEnd, Track};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;

/// Violations kept with their text (all are counted).
pub const KEEP_VIOLATIONS: usize = 1000;
/// Pending items a track may hold behind a blocked wait before the wait is released as
/// unverifiable (the default of [`Checker::with_horizon`]).
pub const DEFAULT_HORIZON: usize = 1 << 16;
/// Signals kept per semaphore for waits that arrive late; a wait whose signal fell out is
/// unverifiable (counted, never a violation). A wait is processed at most a few frames after the
/// signal it waits for (K ≤ 8 in vkhip; a GPU track's items arrive within 64 frames), so 512
/// leaves room; 4096 made a vkhip run's memory grow for 30 s before it was flat (batched
/// semaphores are signalled once every 4–7 frames; H200 soak, 2026-11-27).
pub const KEEP_SIGNALS: usize = 512;
/// Reads of one resource kept per track since its last write.
const READS_PER_TRACK: usize = 4;

/// A checker rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// No signal → wait chain orders two conflicting accesses.
    Unordered,
    /// A chain orders them, but the second started before the first ended.
    Overlap,
    /// A wait's work started before the signal it waited on.
    WaitBeforeSignal,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Unordered => "unordered",
            Rule::Overlap => "overlap",
            Rule::WaitBeforeSignal => "wait before signal",
        }
    }
}

/// One side of a violation: a scope, or a host wait or signal.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub track: TrackId,
    /// `vulkan queue "graphics"`, `cuda stream "sim"`, `host thread "main"`.
    pub track_label: String,
    /// The scope's name, or `signal "sem" = v` / `wait "sem" ≥ v` for a host operation.
    pub name: String,
    pub frame: u64,
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// What it did to the violation's resource (rules 1 and 2).
    pub access: Option<AccessKind>,
}

/// A broken rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub rule: Rule,
    /// The resource both accessed (rules 1 and 2).
    pub resource: Option<String>,
    /// Rules 1 and 2: the access processed first (for rule 2, the one ordered first); rule 3:
    /// the signal (the scope whose end is its time, or the host signal).
    pub a: Endpoint,
    /// Rules 1 and 2: the other access; rule 3: the waiter's first scope (or its host wait).
    pub b: Endpoint,
    /// Rule 1: how long they overlap (≤ 0: how far apart they ran, by luck); rule 2: by how much
    /// `b` started before `a` ended; rule 3: how early `b` started.
    pub by_ns: i64,
    pub tolerance_ns: u64,
    /// One line naming the rule, the resource, both scopes with track, API and frame, and the
    /// overlap in µs.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Violations per rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByRule {
    pub unordered: u64,
    pub overlap: u64,
    pub wait_before_signal: u64,
}

impl ByRule {
    fn add(&mut self, rule: Rule) {
        match rule {
            Rule::Unordered => self.unordered += 1,
            Rule::Overlap => self.overlap += 1,
            Rule::WaitBeforeSignal => self.wait_before_signal += 1,
        }
    }
}

/// Waits the checker could not verify, by reason (counted, never violations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unverifiable {
    /// The wait's signal lies before the trace (or fell out of the signals kept per semaphore).
    pub before_trace: u64,
    /// Its signal never came (released at the end or at the horizon).
    pub never_signalled: u64,
    /// A GPU signal with no scope before it on its track: it has no time to compare with.
    pub no_signal_time: u64,
}

impl Unverifiable {
    pub fn total(&self) -> u64 {
        self.before_trace + self.never_signalled + self.no_signal_time
    }
}

/// How many comparisons one resource, semaphore or pair of tracks took part in, and how many of
/// them were violations (all counted, not only the ones kept with their text).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub checked: u64,
    pub violations: u64,
}

impl Counts {
    fn add(&mut self, violated: bool) {
        self.checked += 1;
        self.violations += u64::from(violated);
    }
}

/// What the checker found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    /// The first [`KEEP_VIOLATIONS`] violations, in the order found.
    pub violations: Vec<Violation>,
    /// All violations.
    pub violation_count: u64,
    pub by_rule: ByRule,
    /// Conflicting access pairs on different tracks that were compared (rules 1 and 2).
    pub pairs_checked: u64,
    /// Waits whose work was compared with their signal's time (rule 3).
    pub waits_checked: u64,
    pub unverifiable: Unverifiable,
    /// The largest tolerance any comparison used, ns.
    pub tolerance_ns: u64,
    /// Frames the checked items span (first to last frame number).
    pub frames: u64,
    /// Per resource (index: [`ResourceId`]): the access pairs compared on it (rules 1 and 2).
    /// A program names what the checker proved for a group of its resources from these (the
    /// app: its post stage's images).
    pub by_resource: Vec<Counts>,
    /// Per semaphore (index: [`SemaphoreId`]): the waits on it compared with their signal
    /// (rule 3).
    pub by_semaphore: Vec<Counts>,
    /// Per pair of tracks (the lower id first): access pairs and waits compared between them
    /// (what was proved between two tracks, e.g. on one clock domain).
    pub by_tracks: BTreeMap<(TrackId, TrackId), Counts>,
}

impl CheckReport {
    /// No violation. (A report that checked nothing is clean too: see
    /// [`Self::pairs_checked`] and [`Self::waits_checked`].)
    pub fn is_clean(&self) -> bool {
        self.violation_count == 0
    }
}

/// Check a whole timeline.
///
/// # Examples
///
/// ```
/// use vkhip_profile::check::check;
/// use vkhip_profile::Timeline;
///
/// let report = check(&Timeline::default());
/// assert!(report.is_clean());
/// assert_eq!(report.pairs_checked, 0);
/// ```
pub fn check(timeline: &Timeline) -> CheckReport {
    let mut checker = Checker::for_timeline(timeline);
    timeline.replay(&mut checker);
    checker.finish();
    checker.report()
}

/// A wait met by a signal of another track, with the times a hand-off is measured from (for
/// [`crate::analysis`] and the trace's flows).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Handoff {
    pub semaphore: SemaphoreId,
    pub from: TrackId,
    pub to: TrackId,
    /// The signal's time (see rule 3).
    pub signal_ns: Option<Ns>,
    /// The waiter's first work: its first scope's start, or when its host wait returned.
    pub first_ns: Ns,
    /// When the waiter would have been ready without this signal: the end of its last scope
    /// before the wait, or the latest of the other signals its first work waited for.
    pub ready_ns: Option<Ns>,
}

/// A scope as the checker keeps it.
#[derive(Clone, Debug)]
struct ScopeRef {
    track: TrackId,
    name: Arc<str>,
    frame: u64,
    start_ns: Ns,
    end_ns: Ns,
}

impl ScopeRef {
    fn new(track: TrackId, s: &Scope) -> Self {
        ScopeRef { track, name: s.name.clone(), frame: s.frame, start_ns: s.start_ns, end_ns: s.end_ns }
    }
}

#[derive(Clone, Debug)]
struct AccessRec {
    scope: ScopeRef,
    epoch: u64,
    kind: AccessKind,
}

#[derive(Default)]
struct ResourceState {
    last_write: Option<AccessRec>,
    reads: Vec<AccessRec>,
}

/// A processed signal.
#[derive(Clone, Debug)]
struct SignalRec {
    track: TrackId,
    value: u64,
    frame: u64,
    clock: Vec<u64>,
    time: Option<Ns>,
    /// The scope whose end is its time (GPU signals), or `None` for a host signal.
    after: Option<ScopeRef>,
}

#[derive(Default)]
struct SemState {
    signals: BTreeMap<u64, SignalRec>,
    /// The largest value dropped from `signals`.
    pruned_max: Option<u64>,
    /// The smallest and largest value this semaphore is signalled with in the whole trace, when
    /// known in advance ([`Checker::for_timeline`]).
    range: Option<(u64, u64)>,
}

enum Lookup<'a> {
    Found(&'a SignalRec),
    Pending,
    BeforeTrace,
    Never,
}

impl SemState {
    fn lookup(&self, w: u64) -> Lookup<'_> {
        if let Some((min, max)) = self.range {
            if w > max {
                return Lookup::Never;
            }
            if w < min {
                return Lookup::BeforeTrace;
            }
        }
        if self.pruned_max.is_some_and(|p| p >= w) {
            return Lookup::BeforeTrace;
        }
        let Some((&v, rec)) = self.signals.range(w..).next() else {
            return Lookup::Pending;
        };
        // The first processed signal ≥ w is the match only if a signal below w is known (or it
        // is exactly w): else one between them may have been signalled before the trace.
        let below = self.pruned_max.is_some() || self.signals.range(..w).next_back().is_some();
        if v == w || below {
            Lookup::Found(rec)
        } else {
            Lookup::BeforeTrace
        }
    }

    fn insert(&mut self, rec: SignalRec) {
        self.signals.insert(rec.value, rec);
        if self.signals.len() > KEEP_SIGNALS {
            if let Some((v, _)) = self.signals.pop_first() {
                self.pruned_max = Some(self.pruned_max.map_or(v, |p| p.max(v)));
            }
        }
    }
}

/// A wait met, waiting for the waiter's first scope (rule 3 and the hand-off).
struct MetWait {
    semaphore: SemaphoreId,
    value: u64,
    frame: u64,
    signal: SignalRec,
    prev_end_ns: Option<Ns>,
}

#[derive(Default)]
struct TrackState {
    queue: VecDeque<Item>,
    clock: Vec<u64>,
    /// The largest end of the scopes processed so far, and that scope.
    last_end: Option<Ns>,
    last_scope: Option<ScopeRef>,
    met: Vec<MetWait>,
}

/// The streaming checker: a [`Sink`]. Feed it items (or use [`check`]), call
/// [`Checker::finish`], read [`Checker::report`].
pub struct Checker {
    names: Names,
    tracks: Vec<TrackState>,
    resources: Vec<ResourceState>,
    sems: Vec<SemState>,
    horizon: usize,
    report: CheckReport,
    first_frame: Option<u64>,
    last_frame: u64,
    signalled: bool,
    /// Hand-offs met since the owner last drained them (only when recording).
    pub(crate) handoffs: Vec<Handoff>,
    record_handoffs: bool,
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new()
    }
}

impl Checker {
    pub fn new() -> Self {
        Checker {
            names: Names::default(),
            tracks: Vec::new(),
            resources: Vec::new(),
            sems: Vec::new(),
            horizon: DEFAULT_HORIZON,
            report: CheckReport::default(),
            first_frame: None,
            last_frame: 0,
            signalled: false,
            handoffs: Vec::new(),
            record_handoffs: false,
        }
    }

    /// Release a blocked wait as unverifiable once its track holds more than `items` pending
    /// items (at least 1; default [`DEFAULT_HORIZON`]).
    pub fn with_horizon(mut self, items: usize) -> Self {
        self.horizon = items.max(1);
        self
    }

    /// A checker for a whole, known timeline: each semaphore's smallest and largest signalled
    /// value are taken from it, so a wait below every signal (its signal lies before the trace)
    /// or above every signal (never signalled) is released at once instead of blocking its track.
    pub(crate) fn for_timeline(timeline: &Timeline) -> Self {
        let mut checker = Checker::new();
        checker.names(&timeline.names);
        checker.sems.resize_with(timeline.names.semaphores.len(), SemState::default);
        for item in timeline.items.iter().flatten() {
            if let Item::Sync(Sync { semaphore, value, kind: SyncKind::Signal, .. }) = item {
                let sem = checker.sem(*semaphore);
                sem.range = Some(sem.range.map_or((*value, *value), |(a, b)| (a.min(*value), b.max(*value))));
            }
        }
        // A semaphore never signalled in the trace: every wait on it is unmatched.
        for sem in &mut checker.sems {
            if sem.range.is_none() {
                sem.range = Some((u64::MAX, 0));
            }
        }
        checker
    }

    /// Record [`Handoff`]s for the owner to drain.
    pub(crate) fn recording_handoffs(mut self) -> Self {
        self.record_handoffs = true;
        self
    }

    /// Signals kept for waits still to come, all semaphores together (at most
    /// [`KEEP_SIGNALS`] each: constant memory however long the run).
    pub fn retained_signals(&self) -> usize {
        self.sems.iter().map(|s| s.signals.len()).sum()
    }

    /// Items waiting behind blocked waits, all tracks together.
    pub fn pending_items(&self) -> usize {
        self.tracks.iter().map(|t| t.queue.len()).sum()
    }

    /// The end of the input: release every blocked wait as unverifiable and process what was
    /// behind it.
    pub fn finish(&mut self) {
        self.wake_all();
        // Release the oldest blocked wait first (the lowest frame): at a trace ring's start the
        // tracks wait on each other's signals from before the trace, and releasing the oldest
        // wait is what lets the others be matched.
        while let Some(t) = (0..self.tracks.len())
            .filter(|&t| !self.tracks[t].queue.is_empty())
            .min_by_key(|&t| self.tracks[t].queue.front().map_or(0, Item::frame))
        {
            self.release_head(t);
            self.drain(t);
            self.wake_all();
        }
    }

    /// What was found so far.
    pub fn report(&self) -> CheckReport {
        let mut r = self.report.clone();
        r.frames = self.first_frame.map_or(0, |f| self.last_frame - f + 1);
        r
    }

    /// Violations found so far (the first [`KEEP_VIOLATIONS`]).
    pub fn violations(&self) -> &[Violation] {
        &self.report.violations
    }

    fn sem(&mut self, id: SemaphoreId) -> &mut SemState {
        let i = id.0 as usize;
        if self.sems.len() <= i {
            self.sems.resize_with(i + 1, SemState::default);
        }
        &mut self.sems[i]
    }

    fn track(&mut self, id: TrackId) -> usize {
        let i = id.0 as usize;
        if self.tracks.len() <= i {
            self.tracks.resize_with(i + 1, TrackState::default);
        }
        i
    }

    /// Process the head of `t`'s queue while it can be.
    fn drain(&mut self, t: usize) {
        while let Some(item) = self.tracks[t].queue.pop_front() {
            if !self.process(t, &item) {
                self.tracks[t].queue.push_front(item);
                break;
            }
        }
    }

    /// After a signal: advance every blocked track that can advance, until none can.
    fn wake_all(&mut self) {
        while std::mem::take(&mut self.signalled) {
            for t in 0..self.tracks.len() {
                if !self.tracks[t].queue.is_empty() {
                    self.drain(t);
                }
            }
        }
    }

    /// Release the blocked wait at the head of `t` as unverifiable: its signal lies before the
    /// trace when a later signal of its semaphore (processed or still queued) exists.
    fn release_head(&mut self, t: usize) {
        let Some(Item::Sync(s)) = self.tracks[t].queue.pop_front() else { return };
        let sem = self.sem(s.semaphore);
        let processed = sem.signals.range(s.value..).next().is_some() || sem.pruned_max.is_some();
        let queued = || {
            self.tracks.iter().flat_map(|tr| tr.queue.iter()).any(|item| match item {
                Item::Sync(q) => {
                    q.kind == SyncKind::Signal && q.semaphore == s.semaphore && q.value >= s.value
                }
                Item::Scope(_) => false,
            })
        };
        if processed || queued() {
            self.report.unverifiable.before_trace += 1;
        } else {
            self.report.unverifiable.never_signalled += 1;
        }
    }

    /// Process one item; `false` when it is a wait whose signal has not been processed.
    fn process(&mut self, t: usize, item: &Item) -> bool {
        let frame = item.frame();
        self.first_frame = Some(self.first_frame.map_or(frame, |f| f.min(frame)));
        self.last_frame = self.last_frame.max(frame);
        match item {
            Item::Scope(s) => {
                self.scope(t, s);
                true
            }
            Item::Sync(s) if s.kind == SyncKind::Signal => {
                self.signal(t, s);
                true
            }
            Item::Sync(s) => self.wait(t, s),
        }
    }

    fn signal(&mut self, t: usize, s: &Sync) {
        // Waits with no scope between them and this signal had no work of their own to check
        // (a stream that relays a hand-off without an instrumented scope).
        self.tracks[t].met.clear();
        let tr = &self.tracks[t];
        let (time, after) = match s.host_ns {
            Some(ns) => (Some(ns), None),
            None => (tr.last_end, tr.last_scope.clone()),
        };
        let rec = SignalRec {
            track: TrackId(t as u32),
            value: s.value,
            frame: s.frame,
            clock: tr.clock.clone(),
            time,
            after,
        };
        self.sem(s.semaphore).insert(rec);
        self.signalled = true;
    }

    fn wait(&mut self, t: usize, s: &Sync) -> bool {
        if s.value == 0 {
            return true; // met by the initial value: orders nothing
        }
        let rec = match self.sem(s.semaphore).lookup(s.value) {
            Lookup::Pending => return false,
            Lookup::BeforeTrace => {
                self.report.unverifiable.before_trace += 1;
                return true;
            }
            Lookup::Never => {
                self.report.unverifiable.never_signalled += 1;
                return true;
            }
            Lookup::Found(rec) => rec.clone(),
        };
        let tr = &mut self.tracks[t];
        join(&mut tr.clock, &rec.clock);
        if rec.track.0 as usize == t {
            return true;
        }
        if rec.time.is_none() {
            self.report.unverifiable.no_signal_time += 1;
        }
        let met = MetWait {
            semaphore: s.semaphore,
            value: s.value,
            frame: s.frame,
            signal: rec,
            prev_end_ns: tr.last_end,
        };
        match s.host_ns {
            Some(ns) => self.wait_met(t, met, ns, None, None),
            None => self.tracks[t].met.push(met),
        }
        true
    }

    fn scope(&mut self, t: usize, s: &Scope) {
        let track = TrackId(t as u32);
        let epoch = {
            let tr = &mut self.tracks[t];
            if tr.clock.len() <= t {
                tr.clock.resize(t + 1, 0);
            }
            tr.clock[t] += 1;
            tr.clock[t]
        };
        let me = ScopeRef::new(track, s);
        let met = std::mem::take(&mut self.tracks[t].met);
        if !met.is_empty() {
            let times: Vec<Option<Ns>> = met.iter().map(|m| m.signal.time).collect();
            for (i, m) in met.into_iter().enumerate() {
                let others = times.iter().enumerate().filter(|&(j, _)| j != i).filter_map(|(_, t)| *t).max();
                self.wait_met(t, m, s.start_ns, Some(&me), others);
            }
        }
        for (i, access) in s.accesses.iter().enumerate() {
            // A scope that reads and writes one resource counts as writing it, once.
            let kind =
                if s.accesses.iter().any(|a| a.resource == access.resource && a.kind == AccessKind::Write) {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                };
            if s.accesses[..i].iter().any(|a| a.resource == access.resource) {
                continue;
            }
            self.access(t, access.resource, AccessRec { scope: me.clone(), epoch, kind });
        }
        let tr = &mut self.tracks[t];
        if tr.last_end.is_none_or(|e| s.end_ns >= e) {
            tr.last_end = Some(s.end_ns);
            tr.last_scope = Some(me);
        }
    }

    fn access(&mut self, t: usize, resource: ResourceId, b: AccessRec) {
        let i = resource.0 as usize;
        if self.resources.len() <= i {
            self.resources.resize_with(i + 1, ResourceState::default);
        }
        let mut res = std::mem::take(&mut self.resources[i]);
        if let Some(a) = &res.last_write {
            self.pair(t, resource, a, &b);
        }
        if b.kind == AccessKind::Write {
            for a in &res.reads {
                self.pair(t, resource, a, &b);
            }
            res.reads.clear();
            res.last_write = Some(b);
        } else {
            let mine = res.reads.iter().filter(|r| r.scope.track == b.scope.track).count();
            if mine >= READS_PER_TRACK {
                if let Some(oldest) = res.reads.iter().position(|r| r.scope.track == b.scope.track) {
                    res.reads.remove(oldest);
                }
            }
            res.reads.push(b);
        }
        self.resources[i] = res;
    }

    /// Compare access `b` (on track `t`, processed now) with the earlier access `a`.
    fn pair(&mut self, t: usize, resource: ResourceId, a: &AccessRec, b: &AccessRec) {
        let ta = a.scope.track;
        if ta.0 as usize == t {
            return;
        }
        self.report.pairs_checked += 1;
        let tol = self.tolerance(ta, b.scope.track);
        self.report.tolerance_ns = self.report.tolerance_ns.max(tol);
        let seen = self.tracks[t].clock.get(ta.0 as usize).copied().unwrap_or(0);
        let unordered = seen < a.epoch;
        let overlap = !unordered && b.scope.start_ns + tol < a.scope.end_ns;
        self.count(Some(resource), None, ta, b.scope.track, unordered || overlap);
        if unordered {
            let res = self.resource_name(resource);
            let overlap =
                a.scope.end_ns.min(b.scope.end_ns) as i64 - a.scope.start_ns.max(b.scope.start_ns) as i64;
            // Name the later-starting access first: the order of processing is arbitrary here.
            let (x, y) = if (b.scope.start_ns, b.scope.track) >= (a.scope.start_ns, a.scope.track) {
                (b, a)
            } else {
                (a, b)
            };
            let timing = if overlap > 0 {
                format!("they overlap by {}", us(overlap))
            } else {
                format!("{} apart, by luck", us(-overlap))
            };
            let message = format!(
                "unordered: {res}: {} {} while {} {}; no signal → wait chain orders them; {timing}",
                self.scope_text(&x.scope),
                verb(x.kind),
                self.scope_text(&y.scope),
                verb(y.kind)
            );
            self.violation(Rule::Unordered, Some(res), a, b, overlap, tol, message);
        } else if overlap {
            let res = self.resource_name(resource);
            let by = a.scope.end_ns as i64 - b.scope.start_ns as i64;
            let message = format!(
                "overlap: {res}: {} {} while {} {}; a signal → wait chain orders them, \
                 but \"{}\" starts {} before \"{}\" ends (tolerance {})",
                self.scope_text(&b.scope),
                verb(b.kind),
                self.scope_text(&a.scope),
                verb(a.kind),
                b.scope.name,
                us(by),
                a.scope.name,
                us(tol as i64)
            );
            self.violation(Rule::Overlap, Some(res), a, b, by, tol, message);
        }
    }

    /// Rule 3 for a wait met by another track's signal, now that the waiter's first work is
    /// known: `first_ns`, the start of `scope` (or when a host wait returned).
    fn wait_met(
        &mut self,
        t: usize,
        met: MetWait,
        first_ns: Ns,
        scope: Option<&ScopeRef>,
        others_ns: Option<Ns>,
    ) {
        let sig = &met.signal;
        if self.record_handoffs {
            self.handoffs.push(Handoff {
                semaphore: met.semaphore,
                from: sig.track,
                to: TrackId(t as u32),
                signal_ns: sig.time,
                first_ns,
                ready_ns: met.prev_end_ns.max(others_ns),
            });
        }
        let Some(signal_ns) = sig.time else { return };
        let tol = self.tolerance(sig.track, TrackId(t as u32));
        self.report.tolerance_ns = self.report.tolerance_ns.max(tol);
        self.report.waits_checked += 1;
        let early = first_ns + tol < signal_ns;
        self.count(None, Some(met.semaphore), sig.track, TrackId(t as u32), early);
        if !early {
            return;
        }
        let by = signal_ns as i64 - first_ns as i64;
        let sem = self.semaphore_name(met.semaphore);
        let signaller = match &sig.after {
            Some(s) => format!("{} signalled it after {} ended", self.label(sig.track), self.scope_text(s)),
            None => format!("{} signalled it (frame {})", self.label(sig.track), sig.frame),
        };
        let waiter = match scope {
            Some(s) => format!("{} starts", self.scope_text(s)),
            None => format!("{} returned from its wait (frame {})", self.label(TrackId(t as u32)), met.frame),
        };
        let message = format!(
            "wait before signal: {waiter} {} before \"{sem}\" reached {}: {signaller}; tolerance {}",
            us(by),
            met.value,
            us(tol as i64)
        );
        let a = match &sig.after {
            Some(s) => self.endpoint(s, None),
            None => self.sync_endpoint(
                sig.track,
                format!("signal \"{sem}\" = {}", sig.value),
                sig.frame,
                signal_ns,
            ),
        };
        let b = match scope {
            Some(s) => self.endpoint(s, None),
            None => self.sync_endpoint(
                TrackId(t as u32),
                format!("wait \"{sem}\" ≥ {}", met.value),
                met.frame,
                first_ns,
            ),
        };
        self.push(Violation {
            rule: Rule::WaitBeforeSignal,
            resource: None,
            a,
            b,
            by_ns: by,
            tolerance_ns: tol,
            message,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn violation(
        &mut self,
        rule: Rule,
        resource: Option<String>,
        a: &AccessRec,
        b: &AccessRec,
        by_ns: i64,
        tol: u64,
        message: String,
    ) {
        let (a, b) = (self.endpoint(&a.scope, Some(a.kind)), self.endpoint(&b.scope, Some(b.kind)));
        self.push(Violation { rule, resource, a, b, by_ns, tolerance_ns: tol, message });
    }

    /// Count one comparison (and whether it was a violation) for its resource or semaphore and
    /// its two tracks.
    fn count(
        &mut self,
        resource: Option<ResourceId>,
        semaphore: Option<SemaphoreId>,
        a: TrackId,
        b: TrackId,
        violated: bool,
    ) {
        let r = &mut self.report;
        if let Some(res) = resource {
            let i = res.0 as usize;
            if r.by_resource.len() <= i {
                r.by_resource.resize(i + 1, Counts::default());
            }
            r.by_resource[i].add(violated);
        }
        if let Some(sem) = semaphore {
            let i = sem.0 as usize;
            if r.by_semaphore.len() <= i {
                r.by_semaphore.resize(i + 1, Counts::default());
            }
            r.by_semaphore[i].add(violated);
        }
        r.by_tracks.entry((a.min(b), a.max(b))).or_default().add(violated);
    }

    fn push(&mut self, v: Violation) {
        self.report.violation_count += 1;
        self.report.by_rule.add(v.rule);
        if self.report.violations.len() < KEEP_VIOLATIONS {
            self.report.violations.push(v);
        }
    }

    fn endpoint(&self, s: &ScopeRef, access: Option<AccessKind>) -> Endpoint {
        Endpoint {
            track: s.track,
            track_label: self.label(s.track),
            name: s.name.to_string(),
            frame: s.frame,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            access,
        }
    }

    fn sync_endpoint(&self, track: TrackId, name: String, frame: u64, at: Ns) -> Endpoint {
        Endpoint {
            track,
            track_label: self.label(track),
            name,
            frame,
            start_ns: at,
            end_ns: at,
            access: None,
        }
    }

    /// [`Names::tolerance_ns`], 0 for a track the names do not hold (a malformed input never
    /// panics a sink).
    fn tolerance(&self, a: TrackId, b: TrackId) -> u64 {
        let n = self.names.tracks.len() as u32;
        if a.0 < n && b.0 < n {
            self.names.tolerance_ns(a, b)
        } else {
            0
        }
    }

    fn resource_name(&self, r: ResourceId) -> String {
        self.names.resources.get(r.0 as usize).cloned().unwrap_or_else(|| format!("resource {}", r.0))
    }

    fn semaphore_name(&self, s: SemaphoreId) -> String {
        match self.names.semaphores.get(s.0 as usize) {
            Some(info) => info.name.clone(),
            None => format!("semaphore {}", s.0),
        }
    }

    fn label(&self, t: TrackId) -> String {
        match self.names.tracks.get(t.0 as usize) {
            Some(track) => track_label(track),
            None => format!("track {}", t.0),
        }
    }

    /// `"sine" (cuda stream "sim", frame 7)`
    fn scope_text(&self, s: &ScopeRef) -> String {
        format!("\"{}\" ({}, frame {})", s.name, self.label(s.track), s.frame)
    }
}

impl Sink for Checker {
    fn names(&mut self, names: &Names) {
        self.names = names.clone();
        self.track(TrackId(names.tracks.len().saturating_sub(1) as u32));
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        let t = self.track(track);
        if self.tracks[t].queue.is_empty() {
            if self.process(t, item) {
                self.wake_all();
                return;
            }
            self.tracks[t].queue.push_back(item.clone());
        } else {
            self.tracks[t].queue.push_back(item.clone());
            if self.tracks[t].queue.len() > self.horizon {
                self.release_head(t);
                self.drain(t);
                self.wake_all();
            }
        }
    }

    fn frame_end(&mut self, _end: FrameEnd) {}
}

fn join(clock: &mut Vec<u64>, other: &[u64]) {
    if clock.len() < other.len() {
        clock.resize(other.len(), 0);
    }
    for (c, o) in clock.iter_mut().zip(other) {
        *c = (*c).max(*o);
    }
}

fn verb(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "reads",
        AccessKind::Write => "writes",
    }
}

/// `12.3 µs`
fn us(ns: i64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

/// How reports name a track: `vulkan queue "graphics"`, `cuda stream "sim"`, `host thread "main"`.
pub fn track_label(track: &Track) -> String {
    let kind = match track.api {
        Api::Host => "host thread",
        Api::Vulkan => "vulkan queue",
        Api::Cuda => "cuda stream",
        Api::Hip => "hip stream",
        Api::Wgpu => "wgpu queue",
    };
    format!("{kind} \"{}\"", track.name)
}
