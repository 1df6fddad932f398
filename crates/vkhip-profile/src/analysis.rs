//! One streaming pass over the timeline, in constant memory: the hazard checker
//! ([`crate::check`](mod@crate::check)), the hand-offs, per-scope statistics and the frame
//! figures. The result is a [`Summary`], which [`crate::report`] prints and tests read.
//!
//! - **Hand-offs**: for every wait met by a signal of another track on a semaphore that is not
//!   internal: latency = the waiter's first work − the signal's time, and the *exposed* part =
//!   first work − max(signal's time, end of the waiter's previous scope, the other signals the
//!   same first work waited for): what the hand-off cost the waiter beyond what held it anyway
//!   (its own work, or a submission that came later than this signal — the internal `submit`
//!   semaphores count here, though they are not reported as hand-offs). A signal's time and
//!   the first work are the checker's
//!   (rule 3): the end of the last scope before a GPU signal, a host signal's own time; the
//!   first scope after a wait, or when a host wait returned. Per edge (semaphore, signalling
//!   track → waiting track): p50/p99 of both.
//! - **Scopes**: per (track, name) the duration's distribution (every depth).
//! - **Frames**: frame time from consecutive [`FrameEnd`]s; per frame the GPU busy time, the
//!   union of the intervals of its top-level scopes on GPU tracks (the frame number a scope was
//!   recorded in). A frame is summed once none of its items can still come: when the profiler
//!   says so ([`Sink::resolved_below`], after every `end_frame`); fed by anything else, once
//!   every GPU track (one that sent nothing yet included) has sent an item of a newer frame.
//!   [`OPEN_FRAMES`] bounds the frames held open (memory); a scope arriving after its frame was
//!   summed anyway is counted as late, not added.
//!
//! Every figure is an HDR histogram ([`Stat`]): memory does not grow with the run.

use crate::check::{track_label, CheckReport, Checker, Handoff};
use crate::model::{FrameEnd, Item, Names, Ns, SemaphoreId, Sink, Timeline, Track, TrackId};
use crate::stats::{Figure, Stat};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Frames kept open for late GPU scopes before they are summed anyway: one more than the
/// profiler's horizon in frames (`profiler::HORIZON_FRAMES`, past which it drops a scope whose
/// results have not come; a test there keeps the two together).
pub const OPEN_FRAMES: usize = 257;
/// Distinct (track, scope name) pairs with their own statistics; more are counted, not kept.
pub const MAX_SCOPE_NAMES: usize = 256;
/// Scope names listed as counting towards GPU busy.
const MAX_BUSY_NAMES: usize = 64;

/// One scope's (track, name) duration.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeFigure {
    pub track: TrackId,
    pub track_label: String,
    pub name: String,
    pub duration: Figure,
}

/// One hand-off edge: a semaphore signalled on `from` and waited on `to`.
#[derive(Clone, Debug, PartialEq)]
pub struct HandoffFigure {
    pub semaphore: String,
    pub from: TrackId,
    pub to: TrackId,
    pub from_label: String,
    pub to_label: String,
    /// Signal → the waiter's first work.
    pub latency: Figure,
    /// The part of the latency not hidden behind the waiter's own previous work.
    pub exposed: Figure,
}

/// Everything the report prints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub tracks: Vec<Track>,
    /// How the device clocks were mapped, one line per mapping.
    pub clock_notes: Vec<String>,
    /// The largest stated accuracy of any track's times, ns.
    pub accuracy_ns: u64,
    /// Frame ends seen.
    pub frames: u64,
    /// Between consecutive frame ends.
    pub frame_time: Figure,
    /// Per frame, the union of its top-level GPU scopes.
    pub gpu_busy: Figure,
    /// Which scopes count towards GPU busy: `vulkan queue "graphics": draw`.
    pub gpu_busy_scopes: Vec<String>,
    /// GPU scopes that arrived after their frame was summed.
    pub late_scopes: u64,
    pub scopes: Vec<ScopeFigure>,
    /// Scopes not in [`Self::scopes`] because more than [`MAX_SCOPE_NAMES`] names were seen.
    pub scopes_not_kept: u64,
    pub handoffs: Vec<HandoffFigure>,
    pub check: CheckReport,
}

impl Summary {
    /// The figure of the scope `name` on the track named `track`.
    pub fn scope(&self, track: &str, name: &str) -> Option<&ScopeFigure> {
        self.scopes
            .iter()
            .find(|s| s.name == name && self.tracks.get(s.track.0 as usize).is_some_and(|t| t.name == track))
    }

    /// The hand-off edges of the semaphore `name`.
    pub fn handoffs_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a HandoffFigure> + 'a {
        self.handoffs.iter().filter(move |h| h.semaphore == name)
    }
}

/// Analyse a whole timeline.
pub fn analyze(timeline: &Timeline) -> Summary {
    let mut a = Analysis { checker: Checker::for_timeline(timeline).recording_handoffs(), ..Analysis::new() };
    a.set_clock_notes(timeline.clock_notes.clone());
    timeline.replay(&mut a);
    a.summary()
}

#[derive(Default)]
struct Edge {
    latency: Stat,
    exposed: Stat,
}

/// The streaming analysis: a [`Sink`]. Feed it, then call [`Analysis::summary`].
pub struct Analysis {
    checker: Checker,
    names: Names,
    clock_notes: Vec<String>,
    scopes: Vec<(TrackId, Arc<str>, Stat)>,
    scope_index: HashMap<(TrackId, Arc<str>), usize>,
    scopes_not_kept: u64,
    edges: BTreeMap<(SemaphoreId, TrackId, TrackId), Edge>,
    frame_time: Stat,
    frames: u64,
    last_end: Option<FrameEnd>,
    busy: GpuBusy,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis::new()
    }
}

impl Analysis {
    pub fn new() -> Self {
        Analysis {
            checker: Checker::new().recording_handoffs(),
            names: Names::default(),
            clock_notes: Vec::new(),
            scopes: Vec::new(),
            scope_index: HashMap::new(),
            scopes_not_kept: 0,
            edges: BTreeMap::new(),
            frame_time: Stat::default(),
            frames: 0,
            last_end: None,
            busy: GpuBusy::default(),
        }
    }

    /// How the device clocks were mapped (the report prints them; see
    /// [`Timeline::clock_notes`]).
    pub fn set_clock_notes(&mut self, notes: Vec<String>) {
        self.clock_notes = notes;
    }

    /// The checker's findings so far (live: violations appear as the items that break a rule
    /// arrive).
    pub fn check_report(&self) -> CheckReport {
        self.checker.report()
    }

    /// Finish the pass (blocked waits released as unverifiable, open frames summed) and
    /// summarise. Items fed afterwards start a new, partial pass: call it once, at the end.
    pub fn summary(&mut self) -> Summary {
        self.checker.finish();
        self.take_handoffs();
        self.busy.finish();
        let label = |t: TrackId| self.names.tracks.get(t.0 as usize).map(track_label).unwrap_or_default();
        let scopes = self
            .scopes
            .iter()
            .map(|(t, name, stat)| ScopeFigure {
                track: *t,
                track_label: label(*t),
                name: name.to_string(),
                duration: stat.figure(),
            })
            .collect();
        let handoffs = self
            .edges
            .iter()
            .map(|(&(sem, from, to), e)| HandoffFigure {
                semaphore: self
                    .names
                    .semaphores
                    .get(sem.0 as usize)
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                from,
                to,
                from_label: label(from),
                to_label: label(to),
                latency: e.latency.figure(),
                exposed: e.exposed.figure(),
            })
            .collect();
        Summary {
            tracks: self.names.tracks.clone(),
            clock_notes: self.clock_notes.clone(),
            accuracy_ns: self.names.tracks.iter().map(|t| t.accuracy_ns).max().unwrap_or(0),
            frames: self.frames,
            frame_time: self.frame_time.figure(),
            gpu_busy: self.busy.stat.figure(),
            gpu_busy_scopes: self
                .busy
                .counted
                .iter()
                .map(|(t, name)| format!("{}: {name}", label(*t)))
                .collect(),
            late_scopes: self.busy.late,
            scopes,
            scopes_not_kept: self.scopes_not_kept,
            handoffs,
            check: self.checker.report(),
        }
    }

    fn take_handoffs(&mut self) {
        for h in self.checker.handoffs.drain(..) {
            record_handoff(&mut self.edges, &self.names, &h);
        }
    }

    fn scope_stat(&mut self, track: TrackId, name: &Arc<str>) -> Option<&mut Stat> {
        let i = match self.scope_index.get(&(track, name.clone())) {
            Some(&i) => i,
            None if self.scopes.len() < MAX_SCOPE_NAMES => {
                self.scopes.push((track, name.clone(), Stat::default()));
                self.scope_index.insert((track, name.clone()), self.scopes.len() - 1);
                self.scopes.len() - 1
            }
            None => {
                self.scopes_not_kept += 1;
                return None;
            }
        };
        Some(&mut self.scopes[i].2)
    }
}

fn record_handoff(edges: &mut BTreeMap<(SemaphoreId, TrackId, TrackId), Edge>, names: &Names, h: &Handoff) {
    let internal = names.semaphores.get(h.semaphore.0 as usize).is_none_or(|s| s.internal);
    let Some(signal) = h.signal_ns else { return };
    if internal {
        return;
    }
    let e = edges.entry((h.semaphore, h.from, h.to)).or_default();
    e.latency.record(h.first_ns.saturating_sub(signal));
    let ready = signal.max(h.ready_ns.unwrap_or(0));
    e.exposed.record(h.first_ns.saturating_sub(ready));
}

impl Sink for Analysis {
    fn names(&mut self, names: &Names) {
        self.names = names.clone();
        self.checker.names(names);
        self.busy.gpu = names.tracks.iter().map(|t| t.api.is_gpu()).collect();
        self.busy.latest.resize(names.tracks.len(), None);
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        self.checker.item(track, item);
        if !self.checker.handoffs.is_empty() {
            self.take_handoffs();
        }
        if let Item::Scope(s) = item {
            if let Some(stat) = self.scope_stat(track, &s.name) {
                stat.record(s.dur_ns());
            }
        }
        self.busy.item(track, item);
    }

    fn frame_end(&mut self, end: FrameEnd) {
        self.checker.frame_end(end);
        self.frames += 1;
        if let Some(last) = self.last_end {
            if end.frame == last.frame + 1 {
                self.frame_time.record(end.host_ns.saturating_sub(last.host_ns));
            }
        }
        self.last_end = Some(end);
    }

    fn resolved_below(&mut self, frame: u64) {
        self.busy.resolved_below(frame);
    }
}

/// Per frame, the union of its top-level GPU scopes.
#[derive(Default)]
struct GpuBusy {
    /// Per track: whether it is a GPU track, and the newest frame it delivered an item of.
    gpu: Vec<bool>,
    latest: Vec<Option<u64>>,
    /// What the feeder said is complete ([`Sink::resolved_below`]); once said, the only rule.
    told: Option<u64>,
    open: BTreeMap<u64, Vec<(Ns, Ns)>>,
    /// Frames below this are summed.
    summed_below: u64,
    stat: Stat,
    counted: Vec<(TrackId, Arc<str>)>,
    late: u64,
}

impl GpuBusy {
    fn item(&mut self, track: TrackId, item: &Item) {
        let t = track.0 as usize;
        if !self.gpu.get(t).copied().unwrap_or(false) {
            return;
        }
        let frame = item.frame();
        self.latest[t] = Some(self.latest[t].map_or(frame, |f| f.max(frame)));
        if let Item::Scope(s) = item {
            if s.depth == 0 {
                if frame < self.summed_below {
                    self.late += 1;
                } else {
                    self.open.entry(frame).or_default().push((s.start_ns, s.end_ns));
                    if self.counted.len() < MAX_BUSY_NAMES
                        && !self.counted.iter().any(|(ct, n)| *ct == track && *n == s.name)
                    {
                        self.counted.push((track, s.name.clone()));
                    }
                }
            }
        }
        self.sum_done();
    }

    fn resolved_below(&mut self, frame: u64) {
        self.told = Some(self.told.map_or(frame, |f| f.max(frame)));
        self.sum_done();
    }

    /// Frames below this have every item in: as told, or else every GPU track has sent an item
    /// of a frame at least this new (a track that sent nothing yet holds every frame open).
    fn done(&self) -> u64 {
        if let Some(told) = self.told {
            return told;
        }
        let mut tracks = self.gpu.iter().zip(&self.latest).filter(|(gpu, _)| **gpu).map(|(_, l)| *l);
        tracks
            .try_fold(u64::MAX, |done, latest| latest.map(|f| done.min(f)))
            .filter(|&d| d != u64::MAX)
            .unwrap_or(0)
    }

    fn sum_done(&mut self) {
        let done = self.done();
        while let Some((&f, _)) = self.open.first_key_value() {
            if f < done || self.open.len() > OPEN_FRAMES {
                self.sum_first();
            } else {
                break;
            }
        }
    }

    fn sum_first(&mut self) {
        if let Some((f, mut spans)) = self.open.pop_first() {
            self.summed_below = self.summed_below.max(f + 1);
            self.stat.record(union_ns(&mut spans));
        }
    }

    fn finish(&mut self) {
        while !self.open.is_empty() {
            self.sum_first();
        }
    }
}

/// Total length of the union of intervals.
fn union_ns(spans: &mut [(Ns, Ns)]) -> u64 {
    spans.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(Ns, Ns)> = None;
    for &(a, b) in spans.iter() {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                cur = Some((a, b.max(a)));
            }
            None => cur = Some((a, b.max(a))),
        }
    }
    total + cur.map_or(0, |(a, b)| b - a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(frame: u64, start_ns: u64, end_ns: u64) -> Item {
        Item::Scope(crate::model::Scope {
            name: "s".into(),
            frame,
            start_ns,
            end_ns,
            depth: 0,
            accesses: vec![],
        })
    }

    fn sync(frame: u64) -> Item {
        Item::Sync(crate::model::Sync {
            semaphore: SemaphoreId(0),
            value: frame + 1,
            kind: crate::model::SyncKind::Wait,
            frame,
            host_ns: None,
        })
    }

    fn busy_of_two_gpu_tracks() -> GpuBusy {
        GpuBusy { gpu: vec![true, true], latest: vec![None, None], ..GpuBusy::default() }
    }

    #[test]
    fn a_gpu_track_that_sent_nothing_yet_holds_its_frames_open() {
        let mut b = busy_of_two_gpu_tracks();
        for f in 0..8 {
            b.item(TrackId(0), &scope(f, f * 1000, f * 1000 + 10));
        }
        assert!(b.stat.figure().count == 0 && b.open.len() == 8);
        // The second track's scopes of the same frames, 8 frames late: none is late.
        for f in 0..8 {
            b.item(TrackId(1), &scope(f, f * 1000 + 20, f * 1000 + 25));
        }
        b.finish();
        assert_eq!((b.late, b.stat.figure().count, b.stat.figure().mean_ns), (0, 8, 15.0));
    }

    #[test]
    fn once_told_what_is_complete_the_items_frames_do_not_decide() {
        // A track sends a wait recorded in frame 1 before a scope recorded in frame 0 (a
        // submission made after `end_frame`, of work recorded before it).
        let mut b = busy_of_two_gpu_tracks();
        b.resolved_below(0);
        b.item(TrackId(1), &sync(1));
        b.item(TrackId(0), &sync(1));
        b.item(TrackId(0), &scope(0, 0, 10));
        b.item(TrackId(1), &scope(0, 20, 30));
        assert_eq!((b.late, b.stat.figure().count), (0, 0), "frame 0 waits to be told");
        b.resolved_below(1);
        assert_eq!((b.late, b.stat.figure().count, b.stat.figure().mean_ns), (0, 1, 20.0));
        // Without being told, the frames of the items decide: frame 0 is summed as soon as both
        // tracks sent an item of frame 1: with the first scope behind them, the second late.
        let mut guess = busy_of_two_gpu_tracks();
        guess.item(TrackId(1), &sync(1));
        guess.item(TrackId(0), &sync(1));
        guess.item(TrackId(0), &scope(0, 0, 10));
        guess.item(TrackId(1), &scope(0, 20, 30));
        assert_eq!((guess.late, guess.stat.figure().mean_ns), (1, 10.0));
    }

    #[test]
    fn union_merges_overlaps_and_keeps_gaps() {
        assert_eq!(union_ns(&mut []), 0);
        assert_eq!(union_ns(&mut [(10, 20), (0, 5), (15, 30), (40, 41)]), 5 + 20 + 1);
        assert_eq!(union_ns(&mut [(0, 100), (10, 20)]), 100);
    }
}
