//! GPU timing of a compute stream (CUDA, HIP) on the host clock, without ever blocking the host on
//! the stream.
//!
//! Each frame records up to four events on the stream: before the wait for `rendered`, before the
//! kernel, after the kernel, after the signal of `computed`. The events of the last [`DEPTH`]
//! frames live in a ring; [`StreamTimer::take_spans`] asks (without waiting) whether a frame's last
//! event has completed and, if so, turns its events into spans.
//!
//! Events carry no absolute time, only the time between two of them. An **anchor** event gives
//! them one: it is recorded on an idle stream (the clock stream: HIP's own second stream; for CUDA
//! the backend's one stream, so a re-anchor waits until the frames are idle) between two host
//! clock readings and polled until complete; it happened inside that window, so its midpoint is its host time and half the
//! window the accuracy. The narrowest of a few tries is kept. Every other event's host time is
//! the anchor's plus the elapsed time from the anchor to it. The anchor is re-taken every
//! [`REANCHOR_NS`]; where the previous anchor predicted the new one, compared with where it was
//! measured, is the drift between the two clocks, and the largest seen is added to the stated
//! accuracy (250 ms between anchors keeps it to a few µs on any ordinary oscillator).
//!
//! **GPU stamps** ([`StreamTimer::gpu_stamped`], the CUDA backend): the kernel itself writes the
//! GPU's nanosecond timer at its start and end (`compute::cuda::stamps`). Those are times on the
//! clock Vulkan's timestamps count ([`Stamp::Gpu`]), mapped by the profiler through the Vulkan
//! device clock: no anchor event, no host window, no drift of an event clock, and no event at
//! all: a frame's entry is zeroed before its launch and the kernel writes its end stamp last, so
//! a valid pair read from the entry (start ≠ 0, end ≥ start) is final, and the host tells a
//! finished frame from the stamps alone, without a CUDA call (an event record is ≈ 1.8 µs of the
//! render thread's CPU a frame on the H200, its query ≈ 0.3 µs).
//!
//! # Examples
//!
//! A fake API whose events complete the moment they are recorded: one launch writes a batch of
//! three frames, and each of the frames gets the batch's wait, write and signal spans.
//!
//! ```
//! use std::cell::Cell;
//! use vkhip::compute::timing::{Mark, StreamTimer, TimedEvent};
//! use vkhip::compute::ComputeError;
//! use vkhip::profile::clock::host_now_ns;
//! use vkhip::profile::{Phase, Stamp, Track};
//!
//! struct Stream;
//! struct Event(Cell<u64>);
//! impl TimedEvent for Event {
//!     type Stream = Stream;
//!     fn record_on(&self, _: &Stream) -> Result<(), ComputeError> {
//!         self.0.set(host_now_ns());
//!         Ok(())
//!     }
//!     fn is_done(&self) -> Result<bool, ComputeError> {
//!         Ok(true)
//!     }
//!     fn ms_since(&self, earlier: &Self) -> Result<f32, ComputeError> {
//!         Ok(((self.0.get() as f64 - earlier.0.get() as f64) / 1e6) as f32)
//!     }
//!     fn wait(&self) -> Result<(), ComputeError> {
//!         Ok(())
//!     }
//! }
//!
//! let mut timer = StreamTimer::new("fake", Stream, || Ok(Event(Cell::new(0)))).unwrap();
//! let info = timer.clock_info().expect("GPU timing is on by default");
//! assert!(info.method.starts_with("fake events against an anchor event"), "{}", info.method);
//! assert!(info.method.contains("(1 anchors, 0 refused)"), "{}", info.method);
//!
//! let before = host_now_ns();
//! let i = timer.begin_batch(8, 3);
//! for mark in [Mark::BeforeWait, Mark::BeforeKernel, Mark::AfterKernel, Mark::AfterSignal] {
//!     timer.mark(i, mark, &Stream).unwrap();
//! }
//! let after = host_now_ns();
//! let mut spans = Vec::new();
//! timer.take_spans(&mut spans);
//! let mut seen: Vec<(u64, Phase)> = spans.iter().map(|s| (s.frame, s.phase)).collect();
//! seen.sort_by_key(|&(f, p)| (f, p as u8));
//! let phases = [Phase::WaitRendered, Phase::Write, Phase::Signal];
//! let want: Vec<(u64, Phase)> = (8..11).flat_map(|f| phases.map(|p| (f, p))).collect();
//! assert_eq!(seen, want);
//! // On the host clock, between the first and the last mark (plus the anchor's accuracy).
//! let slack = timer.clock_info().unwrap().accuracy_ns + 2_000;
//! for s in &spans {
//!     assert_eq!(s.track, Track::Compute);
//!     let (Stamp::Host(a), Stamp::Host(b)) = (s.start, s.end) else { panic!("host stamps") };
//!     assert!(a + slack >= before && a <= b && b <= after + slack, "{a}..{b} outside {before}..{after}");
//! }
//! // Taken once: a second call finds nothing new.
//! timer.take_spans(&mut spans);
//! assert_eq!((spans.len(), timer.dropped), (9, 0));
//! ```

use super::ComputeError;
use crate::profile::clock::{host_now_ns, Anchor, ClockInfo};
use crate::profile::span::SPAN_BUFFER;
use crate::profile::{Phase, Span, Stamp, Track};
use std::cell::Cell;

type Result<T> = std::result::Result<T, ComputeError>;

/// Frames whose events are kept; a frame not complete by the time its ring entry is reused is
/// dropped from the timeline (counted).
pub const DEPTH: usize = 16;

/// How often the anchor is re-taken, ns.
pub const REANCHOR_NS: u64 = 250_000_000;

/// Anchor tries per anchoring; the narrowest window wins.
const ANCHOR_TRIES: usize = 5;

/// A re-anchor whose window is wider than this (half-width, ns) is not taken (the GPU was busy
/// with another context); it is tried again [`RETRY_NS`] later.
const REANCHOR_ACCEPT_NS: u64 = 25_000;

/// How soon a refused re-anchor is first tried again (doubling up to [`REANCHOR_NS`]), ns.
const RETRY_NS: u64 = 50_000_000;

/// A window this narrow (half-width, ns) ends the anchor tries.
const ANCHOR_GOOD_NS: u64 = 5_000;

/// A try whose event takes longer than this to complete is abandoned (the GPU was busy).
const ANCHOR_GIVE_UP_NS: u64 = 2_000_000;

/// The same for a re-anchor, which runs on the render thread (or the bridge thread).
const REANCHOR_GIVE_UP_NS: u64 = ANCHOR_GIVE_UP_NS;

/// How long a due re-anchor waits for the frames' stream to be idle before it is tried anyway,
/// ns. On the frames' own stream (CUDA), or with one hardware queue per context
/// (CUDA_DEVICE_MAX_CONNECTIONS=1, vkhip's default for a fast start), the anchor's record queues
/// behind whatever the frames' stream holds, such as a wait for a draw, and would read late; on
/// an idle stream it runs at once.
const REANCHOR_WAIT_NS: u64 = 4 * REANCHOR_NS;

/// Tries per re-anchor. While the GPU runs the other API's work, the first record waits until the
/// GPU switches to this API's context (on an H100: about 0.16 ms when the queue is idle, up to a
/// time slice of about 1.6 ms during a long draw) and its window is too wide; the next one, with
/// the GPU now on this context, is narrow. Worst case: a 4 ms stall of the calling thread every
/// 250 ms; measured cost of the whole timing on frame time: see BENCHMARKS.md.
const REANCHOR_TRIES: usize = 2;

/// What the timer needs from an API's events.
pub trait TimedEvent: Sized {
    type Stream;
    /// Record the event on `stream`.
    fn record_on(&self, stream: &Self::Stream) -> Result<()>;
    /// Whether the work before the last record has completed (never blocks).
    fn is_done(&self) -> Result<bool>;
    /// Milliseconds from `earlier` to `self` (both completed; negative when `self` came first).
    fn ms_since(&self, earlier: &Self) -> Result<f32>;
    /// Block until the work before the last record has completed (teardown only).
    fn wait(&self) -> Result<()>;
}

/// The event slots of one frame, in stream order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    BeforeWait = 0,
    BeforeKernel = 1,
    AfterKernel = 2,
    AfterSignal = 3,
}

struct Entry<E> {
    frame: Option<u64>,
    /// Frames `frame..frame + covers` share these events (a batch written by one launch).
    covers: u64,
    events: [E; 4],
    /// Which events were recorded for `frame` (a Cell, so marks need only `&self` while the
    /// caller holds other borrows of its backend).
    used: [Cell<bool>; 4],
}

/// Per-frame events of one stream, and the anchor that puts them on the host clock.
pub struct StreamTimer<E: TimedEvent> {
    /// Off (`--gpu-timing off`): no event is ever recorded and no anchor taken.
    enabled: bool,
    ring: Vec<Entry<E>>,
    /// The anchor event and, once one was taken, its host time.
    anchor: (E, Option<Anchor>),
    spare: E,
    clock_stream: E::Stream,
    /// When the next re-anchor is due (host ns), and the back-off after a refused one.
    next_anchor_ns: u64,
    backoff_ns: u64,
    max_drift_ns: u64,
    /// The widest anchor window accepted so far (the accuracy of any span mapped through one).
    max_anchor_ns: u64,
    /// The largest f32 step of an elapsed time mapped so far (ms since the anchor lose precision
    /// as the anchor ages), ns.
    max_f32_step_ns: u64,
    /// Anchors taken, and re-anchors refused for a wide window.
    anchors: u64,
    refused_anchors: u64,
    /// Frames whose events were overwritten before they completed, or failed to read.
    pub dropped: u64,
    /// Spans of completed frames, until taken (at most [`SPAN_BUFFER`]).
    spans: Vec<Span>,
    api: &'static str,
    /// The kernels stamp the GPU clock themselves ([`Self::gpu_stamped`]): no anchor and no
    /// event; [`Mark::AfterKernel`] only notes that the entry's launch was enqueued.
    stamped: bool,
}

/// The GPU stamps of ring entry `i` as they are now: (start, end) in ns of the GPU timer once
/// the launch wrote both (final then), None until it has (the entry was zeroed before the
/// launch) or when the entry holds no valid pair.
pub type StampReader<'a> = &'a dyn Fn(usize) -> Option<(u64, u64)>;

impl<E: TimedEvent> StreamTimer<E> {
    /// `new_event` makes timing-enabled events; anchors are recorded on `clock_stream` (idle now;
    /// a stream of its own, or a handle to the frames' stream).
    pub fn new(
        api: &'static str,
        clock_stream: E::Stream,
        new_event: impl FnMut() -> Result<E>,
    ) -> Result<Self> {
        Self::build(api, clock_stream, new_event, false)
    }

    /// A timer whose spans come from the kernels' own GPU stamps (see the module note): no
    /// anchor is taken; `clock_stream` only satisfies the type (nothing is recorded on it).
    pub fn gpu_stamped(
        api: &'static str,
        clock_stream: E::Stream,
        new_event: impl FnMut() -> Result<E>,
    ) -> Result<Self> {
        Self::build(api, clock_stream, new_event, true)
    }

    fn build(
        api: &'static str,
        clock_stream: E::Stream,
        mut new_event: impl FnMut() -> Result<E>,
        stamped: bool,
    ) -> Result<Self> {
        let ring = event_ring(&mut new_event)?;
        let first = new_event()?;
        let enabled = crate::profile::gpu_timing();
        // Profiling must not stop the backend from opening: without an anchor (a GPU busy with
        // another context), spans wait for one taken later. A stamped timer needs none.
        let anchor = if !enabled || stamped {
            None
        } else {
            match take_anchor(&first, &clock_stream, ANCHOR_TRIES, ANCHOR_GIVE_UP_NS) {
                Ok(a) => {
                    log::info!("{api} clock: anchor event, accuracy ±{} ns", a.accuracy_ns);
                    Some(a)
                }
                Err(e) => {
                    log::warn!("{api} clock: no anchor yet ({e}); compute spans start once one is taken");
                    None
                }
            }
        };
        let next_anchor_ns = match (stamped, anchor) {
            (true, _) => u64::MAX,
            (false, Some(_)) => host_now_ns() + REANCHOR_NS,
            (false, None) => host_now_ns() + RETRY_NS,
        };
        Ok(StreamTimer {
            enabled,
            ring,
            max_anchor_ns: anchor.map_or(0, |a| a.accuracy_ns),
            anchors: u64::from(anchor.is_some()),
            anchor: (first, anchor),
            spare: new_event()?,
            clock_stream,
            next_anchor_ns,
            backoff_ns: RETRY_NS,
            max_drift_ns: 0,
            max_f32_step_ns: 0,
            refused_anchors: 0,
            dropped: 0,
            spans: Vec::new(),
            api,
            stamped,
        })
    }

    /// Whether the next launches should write GPU stamps into the entry [`Self::begin`] returned
    /// (a GPU-stamped timer with GPU timing on).
    pub fn stamping(&self) -> bool {
        self.enabled && self.stamped
    }

    /// Start frame `frame`'s events; returns the ring entry to [`Self::mark`].
    pub fn begin(&mut self, frame: u64) -> usize {
        self.begin_batch(frame, 1)
    }

    /// Like [`Self::begin`], for a batch of `covers` frames starting at `frame` written by one
    /// launch: each of them gets the batch's spans.
    pub fn begin_batch(&mut self, frame: u64, covers: u64) -> usize {
        let i = (frame % DEPTH as u64) as usize;
        if self.ring[i].frame.is_some() {
            if !self.stamped {
                self.collect(i);
            }
            if self.ring[i].frame.take().is_some() {
                self.dropped += 1;
            }
        }
        self.ring[i].frame = Some(frame);
        self.ring[i].covers = covers.max(1);
        self.ring[i].used.iter().for_each(|u| u.set(false));
        i
    }

    /// Record `mark` of entry `i` on `stream`.
    pub fn mark(&self, i: usize, mark: Mark, stream: &E::Stream) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        if self.stamped {
            // The stamps say when the frame ended: nothing is recorded on the stream.
            if mark == Mark::AfterKernel {
                self.ring[i].used[mark as usize].set(true);
            }
            return Ok(());
        }
        self.ring[i].events[mark as usize].record_on(stream)?;
        self.ring[i].used[mark as usize].set(true);
        Ok(())
    }

    /// Move the spans of every frame whose events have completed into `out`, oldest first;
    /// re-anchors when due. Never blocks.
    pub fn take_spans(&mut self, out: &mut Vec<Span>) {
        self.take_spans_with(out, &|_| None);
    }

    /// [`Self::take_spans`] for a GPU-stamped timer: `stamps` reads an entry's stamps as they
    /// are now (see [`StampReader`]).
    pub fn take_spans_with(&mut self, out: &mut Vec<Span>, stamps: StampReader<'_>) {
        if !self.enabled {
            return;
        }
        if self.stamped {
            // The pending entries, oldest first (on the stack: this runs every frame).
            let mut order = [0usize; DEPTH];
            let mut n = 0;
            for i in (0..DEPTH).filter(|&i| self.ring[i].frame.is_some()) {
                order[n] = i;
                n += 1;
            }
            order[..n].sort_unstable_by_key(|&i| self.ring[i].frame);
            // One stream, frames in order: once a frame has not ended, no later one has.
            for &i in &order[..n] {
                if !self.collect_stamped(i, stamps) {
                    break;
                }
            }
            out.append(&mut self.spans);
            return;
        }
        self.reanchor_if_due(host_now_ns());
        let mut order: Vec<usize> = (0..DEPTH).filter(|&i| self.ring[i].frame.is_some()).collect();
        order.sort_by_key(|&i| self.ring[i].frame);
        for i in order {
            self.collect(i);
        }
        out.append(&mut self.spans);
    }

    /// Re-anchor if one is due at host time `now`: a due re-anchor waits for the frames' stream
    /// to be idle, for up to [`REANCHOR_WAIT_NS`].
    fn reanchor_if_due(&mut self, now: u64) {
        if now >= self.next_anchor_ns && (self.frames_idle() || now >= self.next_anchor_ns + REANCHOR_WAIT_NS)
        {
            self.reanchor();
        }
    }

    /// Whether the last event recorded on the frames' stream has completed, so nothing of the
    /// frames is queued (never blocks; a query that fails reads as busy).
    fn frames_idle(&self) -> bool {
        let newest = self.ring.iter().filter(|e| e.frame.is_some()).max_by_key(|e| e.frame);
        newest.is_none_or(|e| {
            e.used.iter().rposition(Cell::get).is_none_or(|m| e.events[m].is_done().unwrap_or(false))
        })
    }

    /// The mapping's method and accuracy (None with GPU timing off: nothing is mapped).
    pub fn clock_info(&self) -> Option<ClockInfo> {
        if !self.enabled {
            return None;
        }
        if self.stamped {
            return Some(ClockInfo {
                method: format!(
                    "{} kernels stamp the GPU timer (%globaltimer) themselves, on the Vulkan device clock, no anchor of their own",
                    self.api
                ),
                on_vulkan_clock: true,
                ..Default::default()
            });
        }
        Some(ClockInfo {
            method: format!(
                "{} events against an anchor event on an idle stream, re-anchored every {} ms ({} anchors, {} refused)",
                self.api,
                REANCHOR_NS / 1_000_000,
                self.anchors,
                self.refused_anchors
            ),
            accuracy_ns: self.max_anchor_ns + self.max_drift_ns + self.max_f32_step_ns,
            drift_ns: self.max_drift_ns,
            on_vulkan_clock: false,
        })
    }

    /// Take a new anchor: a few short tries on the calling thread (at most
    /// [`REANCHOR_TRIES`] × [`REANCHOR_GIVE_UP_NS`], never a long spin); a refused or failed
    /// re-anchor backs off exponentially.
    fn reanchor(&mut self) {
        let now = host_now_ns();
        let limit = self.anchor.1.map_or(u64::MAX, |a| REANCHOR_ACCEPT_NS.max(2 * a.accuracy_ns));
        let fresh = match take_anchor(&self.spare, &self.clock_stream, REANCHOR_TRIES, REANCHOR_GIVE_UP_NS) {
            Ok(a) if a.accuracy_ns <= limit => a,
            refused => {
                if let Err(e) = refused {
                    log::debug!("{}: re-anchoring failed: {e}", self.api);
                }
                self.refused_anchors += 1;
                self.next_anchor_ns = now + self.backoff_ns;
                self.backoff_ns = (2 * self.backoff_ns).min(REANCHOR_NS);
                return;
            }
        };
        self.next_anchor_ns = now + REANCHOR_NS;
        self.backoff_ns = RETRY_NS;
        self.anchors += 1;
        self.max_anchor_ns = self.max_anchor_ns.max(fresh.accuracy_ns);
        if let Some(old) = self.anchor.1 {
            match self.spare.ms_since(&self.anchor.0) {
                Ok(ms) => {
                    let predicted = old.host_ns as f64 + f64::from(ms) * 1e6;
                    let drift = (predicted - fresh.host_ns as f64).abs() as u64;
                    self.max_drift_ns = self.max_drift_ns.max(drift);
                }
                Err(e) => log::debug!("{}: comparing anchors failed: {e}", self.api),
            }
        }
        std::mem::swap(&mut self.anchor.0, &mut self.spare);
        self.anchor.1 = Some(fresh);
    }

    /// A GPU-stamped entry: once its stamps are a valid pair (the launch ended), they become the
    /// frame's kernel span (for every frame of a batch). Returns false while it is pending; one
    /// that never ends (a launch without stamps) is dropped when its entry is reused.
    /// Returns false when the entry's witness event has not completed yet (the entry stays).
    fn collect_stamped(&mut self, i: usize, stamps: StampReader<'_>) -> bool {
        let e = &self.ring[i];
        let Some(frame) = e.frame else { return true };
        if !e.used[Mark::AfterKernel as usize].get() {
            self.ring[i].frame = None;
            return true;
        }
        let Some((start, end)) = stamps(i) else {
            return false;
        };
        let covers = e.covers;
        self.ring[i].frame = None;
        for f in frame..frame + covers {
            if self.spans.len() < SPAN_BUFFER {
                let span = Span {
                    frame: f,
                    track: Track::Compute,
                    phase: Phase::Write,
                    start: Stamp::Gpu(start),
                    end: Stamp::Gpu(end),
                };
                self.spans.push(span);
            }
        }
        true
    }

    /// Turn entry `i` into spans if its last event completed (then the entry is free).
    fn collect(&mut self, i: usize) {
        let e = &self.ring[i];
        let Some(frame) = e.frame else { return };
        let used = e.used.each_ref().map(Cell::get);
        let Some(last) = (0..4).rev().find(|&m| used[m]) else {
            self.ring[i].frame = None;
            return;
        };
        match e.events[last].is_done() {
            Ok(true) => {}
            Ok(false) => return,
            Err(err) => {
                log::debug!("{}: event of frame {frame}: {err}", self.api);
                self.ring[i].frame = None;
                self.dropped += 1;
                return;
            }
        }
        let Some(anchor) = self.anchor.1 else {
            // No anchor yet: the events cannot be placed on the host clock.
            self.ring[i].frame = None;
            self.dropped += 1;
            return;
        };
        let anchor_event = &self.anchor.0;
        // The frame's first event is placed through the anchor (an f32 of milliseconds since
        // the anchor: coarse once the anchor is old); the others relative to that event, whose
        // elapsed times are short and so exact to the event timer's resolution. Durations never
        // carry the anchor's rounding.
        let first = (0..4).find(|&m| used[m]).unwrap_or(last);
        let Ok(base_ms) = e.events[first].ms_since(anchor_event) else {
            self.ring[i].frame = None;
            self.dropped += 1;
            return;
        };
        // One unit in the last place of an f32 of this size, in ns.
        let step_ns = (f64::from(base_ms.abs()) * f64::from(f32::EPSILON) * 1e6) as u64;
        let base_ns = anchor.host_ns as f64 + f64::from(base_ms) * 1e6;
        let host = |m: usize| -> Option<u64> {
            let rel_ms = if m == first { 0.0 } else { e.events[m].ms_since(&e.events[first]).ok()? };
            Some((base_ns + f64::from(rel_ms) * 1e6).max(0.0) as u64)
        };
        let pairs = [(0, 1, Phase::WaitRendered), (1, 2, Phase::Write), (2, 3, Phase::Signal)];
        for (a, b, phase) in pairs {
            if used[a] && used[b] {
                if let (Some(s), Some(t)) = (host(a), host(b)) {
                    for f in frame..frame + e.covers {
                        if self.spans.len() < SPAN_BUFFER {
                            self.spans.push(Span::host(f, Track::Compute, phase, s, t));
                        }
                    }
                }
            }
        }
        self.max_f32_step_ns = self.max_f32_step_ns.max(step_ns);
        self.ring[i].frame = None;
    }
}

impl<E: TimedEvent> Drop for StreamTimer<E> {
    fn drop(&mut self) {
        // An abandoned anchor try may still be pending on the clock stream: finish it before the
        // events and the stream go (the owner synchronised its own stream, which the ring's
        // events were recorded on).
        for e in [&self.anchor.0, &self.spare] {
            if let Err(err) = e.wait() {
                log::warn!("{}: waiting for an anchor event at teardown: {err}", self.api);
            }
        }
    }
}

/// The [`DEPTH`] entries of a timer's ring, four events each.
fn event_ring<E: TimedEvent>(new_event: &mut impl FnMut() -> Result<E>) -> Result<Vec<Entry<E>>> {
    (0..DEPTH)
        .map(|_| {
            Ok(Entry {
                frame: None,
                covers: 1,
                events: [new_event()?, new_event()?, new_event()?, new_event()?],
                used: Default::default(),
            })
        })
        .collect()
}

/// Record `event` on the idle `stream` between two host readings, polling until it completes
/// (giving up after `give_up_ns`). Each try re-records the event, so the anchor is the last
/// try's: the first window narrower than [`ANCHOR_GOOD_NS`] ends the tries.
fn take_anchor<E: TimedEvent>(
    event: &E,
    stream: &E::Stream,
    tries: usize,
    give_up_ns: u64,
) -> Result<Anchor> {
    let mut last = None;
    for _ in 0..tries {
        let before = host_now_ns();
        event.record_on(stream)?;
        let mut after;
        let mut done;
        loop {
            done = event.is_done()?;
            after = host_now_ns();
            if done || after - before > give_up_ns {
                break;
            }
            std::hint::spin_loop();
        }
        if !done {
            last = None;
            continue;
        }
        let half = (after - before) / 2;
        let a = Anchor { device: 0, host_ns: before + half, ns_per_unit: 1.0, accuracy_ns: half };
        last = Some(a);
        if half <= ANCHOR_GOOD_NS {
            break;
        }
    }
    last.ok_or_else(|| ComputeError::Api {
        api: "timing",
        call: "anchor event",
        message: format!("no anchor event completed within {} µs", give_up_ns / 1000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the fake events' clock is ahead of the host clock (a day). Like a GPU's event
    /// clock it has an origin of its own, so a test can move an event far into its past however
    /// recently the host's monotonic clock started (a machine just booted, a time namespace).
    const FAKE_EPOCH_NS: u64 = 86_400_000_000_000;

    /// A fake stream: events complete `delay_ns` after they are recorded.
    struct FakeStream {
        delay_ns: u64,
    }

    struct FakeEvent {
        at: Cell<Option<u64>>,
    }

    thread_local! {
        /// How many times this thread asked a fake event whether it completed.
        static QUERIES: Cell<u32> = const { Cell::new(0) };
    }

    impl TimedEvent for FakeEvent {
        type Stream = FakeStream;
        fn record_on(&self, s: &FakeStream) -> Result<()> {
            self.at.set(Some(FAKE_EPOCH_NS + host_now_ns() + s.delay_ns));
            Ok(())
        }
        fn is_done(&self) -> Result<bool> {
            QUERIES.with(|q| q.set(q.get() + 1));
            Ok(self.at.get().is_some_and(|t| FAKE_EPOCH_NS + host_now_ns() >= t))
        }
        fn ms_since(&self, earlier: &Self) -> Result<f32> {
            let (a, b) = (earlier.at.get().unwrap_or(0), self.at.get().unwrap_or(0));
            Ok(((b as f64 - a as f64) / 1e6) as f32)
        }
        fn wait(&self) -> Result<()> {
            Ok(())
        }
    }

    fn event() -> Result<FakeEvent> {
        Ok(FakeEvent { at: Cell::new(None) })
    }

    #[test]
    fn spans_land_on_the_host_clock_within_the_stated_accuracy() {
        let mut t = StreamTimer::new("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        let stream = FakeStream { delay_ns: 200_000 };
        let mut out = Vec::new();
        let before = host_now_ns();
        let i = t.begin(7);
        t.mark(i, Mark::BeforeKernel, &stream).unwrap();
        let first_marked = host_now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second_marking = host_now_ns();
        t.mark(i, Mark::AfterKernel, &stream).unwrap();
        let second_marked = host_now_ns();
        t.take_spans(&mut out);
        assert!(out.is_empty(), "not complete yet: the second event completes 200 µs later");
        std::thread::sleep(std::time::Duration::from_millis(1));
        t.take_spans(&mut out);
        assert_eq!(out.len(), 1);
        let s = out[0];
        assert_eq!((s.frame, s.track, s.phase), (7, Track::Compute, Phase::Write));
        let crate::profile::Stamp::Host(start) = s.start else { panic!("host stamp") };
        let crate::profile::Stamp::Host(end) = s.end else { panic!("host stamp") };
        // The fake event "happens" 200 µs after its record: the mapping must say so, to within
        // the anchor's accuracy plus float rounding of the elapsed time.
        let slack = t.clock_info().unwrap().accuracy_ns + 2_000;
        assert!(start + slack >= before + 200_000, "start {start} before {before}");
        // Recorded right after `before`: not later than that plus the delay, slack and a little
        // scheduling time.
        assert!(start <= before + 200_000 + slack + 3_000_000, "start {start} long after {before}");
        // Both events carry the same delay: the span lasts as long as the host took between the
        // two marks (within the marks' own duration and float rounding).
        let dur = end - start;
        assert!(
            dur + 2_000 >= second_marking - first_marked && dur <= second_marked - before + 2_000,
            "{dur} ns vs marks {} .. {} ns apart",
            second_marking - first_marked,
            second_marked - before
        );
    }

    #[test]
    fn a_due_reanchor_waits_for_the_frames_stream_to_be_idle() {
        let mut t = StreamTimer::new("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        assert_eq!(t.anchors, 1);
        let mut out = Vec::new();
        // Frame 3's last event completes 60 s from now: the frames' stream is busy.
        let i = t.begin(3);
        t.mark(i, Mark::AfterSignal, &FakeStream { delay_ns: 60_000_000_000 }).unwrap();
        let now = host_now_ns();
        t.next_anchor_ns = now; // due
        t.take_spans(&mut out);
        assert_eq!((t.anchors, t.refused_anchors), (1, 0), "re-anchored while the stream was busy");
        // Busy for longer than REANCHOR_WAIT_NS past the due time: taken anyway. The check looks
        // ahead in time rather than moving the due time back: a clock that started less than
        // REANCHOR_WAIT_NS ago (a machine just booted, a time namespace) has no time that early.
        t.reanchor_if_due(now + REANCHOR_WAIT_NS);
        assert_eq!(t.anchors + t.refused_anchors, 2, "a re-anchor overdue by REANCHOR_WAIT_NS was not tried");
        // Idle (the frame's last event done): a due re-anchor is taken at once.
        let i = t.begin(4);
        t.mark(i, Mark::AfterSignal, &FakeStream { delay_ns: 0 }).unwrap();
        t.next_anchor_ns = host_now_ns();
        let before = t.anchors + t.refused_anchors;
        t.take_spans(&mut out);
        assert_eq!(t.anchors + t.refused_anchors, before + 1);
    }

    #[test]
    fn durations_stay_exact_when_the_anchor_is_old() {
        let mut t = StreamTimer::new("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        // Move the anchor event 1000 s into the past of the event clock: milliseconds since it no
        // longer fit an f32 to better than ~60 µs. Its host time stays (the host clock may not go
        // back 1000 s), so the spans land 1000 s ahead on the host clock: only durations count.
        let old = 1_000_000_000_000u64;
        let at = t.anchor.0.at.get().unwrap();
        t.anchor.0.at.set(Some(at - old));
        let stream = FakeStream { delay_ns: 0 };
        let mut out = Vec::new();
        let i = t.begin(1);
        let t_before_first = host_now_ns();
        t.mark(i, Mark::BeforeKernel, &stream).unwrap();
        let t0 = host_now_ns();
        while host_now_ns() - t0 < 1_234_000 {
            std::hint::spin_loop();
        }
        let t_before_second = host_now_ns();
        t.mark(i, Mark::AfterKernel, &stream).unwrap();
        let t_after_second = host_now_ns();
        t.take_spans(&mut out);
        let (crate::profile::Stamp::Host(a), crate::profile::Stamp::Host(b)) = (out[0].start, out[0].end)
        else {
            panic!("host stamps")
        };
        // Through the old anchor the duration would be a multiple of ~62 µs; measured between the
        // frame's own events it lies within the host's bounds around the two marks.
        let (low, high) = (t_before_second - t0, t_after_second - t_before_first);
        assert!(
            b - a + 1_000 >= low && b - a <= high + 1_000,
            "duration {} ns outside {low}..{high} ns",
            b - a
        );
        // The position carries the f32 step, and the stated accuracy says so.
        assert!(t.clock_info().unwrap().accuracy_ns >= 50_000, "{:?}", t.clock_info());
    }

    #[test]
    fn a_timer_without_an_anchor_opens_and_maps_nothing_until_it_has_one() {
        // The anchor stream never completes within the give-up time (a GPU busy elsewhere).
        let mut t = StreamTimer::new("fake", FakeStream { delay_ns: 10_000_000_000 }, event).unwrap();
        assert!(t.clock_info().unwrap().method.contains("(0 anchors"), "{}", t.clock_info().unwrap().method);
        let mut out = Vec::new();
        let i = t.begin(0);
        t.mark(i, Mark::BeforeKernel, &FakeStream { delay_ns: 0 }).unwrap();
        t.mark(i, Mark::AfterKernel, &FakeStream { delay_ns: 0 }).unwrap();
        t.take_spans(&mut out);
        assert!(out.is_empty(), "no anchor: no spans");
        assert_eq!(t.dropped, 1);
    }

    #[test]
    fn a_gpu_stamped_timer_records_no_event_and_takes_the_stamps_once_they_are_a_pair() {
        let mut t = StreamTimer::gpu_stamped("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        assert!(t.stamping());
        let info = t.clock_info().unwrap();
        assert!(info.on_vulkan_clock && info.method.contains("%globaltimer"), "{info:?}");
        assert!(!info.method.contains("anchor event"), "{info:?}");
        assert_eq!(t.anchors, 0, "no anchor is taken");
        let slow = FakeStream { delay_ns: 60_000_000_000 };
        let i = t.begin_batch(10, 2);
        for m in [Mark::BeforeWait, Mark::BeforeKernel, Mark::AfterKernel, Mark::AfterSignal] {
            t.mark(i, m, &slow).unwrap();
        }
        assert!(t.ring[i].events.iter().all(|e| e.at.get().is_none()), "no event is recorded");
        // The entry as the launch writes it: zeroed, then the start, then the end.
        let entry = Cell::new((0u64, 0u64));
        let reads = Cell::new(0);
        let reader = |e: usize| {
            reads.set(reads.get() + 1);
            assert_eq!(e, i);
            let (start, end) = entry.get();
            (start != 0 && end >= start).then_some((start, end))
        };
        let mut out = Vec::new();
        QUERIES.with(|q| q.set(0));
        t.take_spans_with(&mut out, &reader);
        entry.set((5_000, 0));
        t.take_spans_with(&mut out, &reader);
        assert_eq!((out.len(), reads.get()), (0, 2), "no end yet: pending, read again later");
        // The end lands: both frames of the batch get the kernel's GPU span, read once more.
        entry.set((5_000, 9_000));
        t.take_spans_with(&mut out, &reader);
        t.take_spans_with(&mut out, &reader);
        assert_eq!(reads.get(), 3, "a taken entry is not read again");
        assert_eq!(QUERIES.with(Cell::get), 0, "no event was asked");
        let got: Vec<(u64, Phase, Stamp, Stamp)> =
            out.iter().map(|s| (s.frame, s.phase, s.start, s.end)).collect();
        let span = |f| (f, Phase::Write, Stamp::Gpu(5_000), Stamp::Gpu(9_000));
        assert_eq!(got, [span(10), span(11)]);
        // A launch that never stamps stays pending until its entry is reused: then it is
        // dropped and counted.
        let j = t.begin(12);
        t.mark(j, Mark::AfterKernel, &FakeStream { delay_ns: 0 }).unwrap();
        t.take_spans_with(&mut out, &|_| None);
        assert_eq!((out.len(), t.dropped), (2, 0));
        t.begin(12 + DEPTH as u64);
        assert_eq!(t.dropped, 1);
        // An entry whose launch was never enqueued (no AfterKernel) holds nothing back.
        let mut t = StreamTimer::gpu_stamped("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        t.begin(0);
        let k = t.begin(1);
        t.mark(k, Mark::AfterKernel, &slow).unwrap();
        t.take_spans_with(&mut out, &|_| Some((1, 2)));
        assert_eq!(out.iter().map(|s| s.frame).collect::<Vec<_>>(), [10, 11, 1]);
    }

    /// One stream runs the frames in order: the walk over pending frames stops at the first
    /// that has not ended, so a frame is never taken before an earlier one.
    #[test]
    fn a_gpu_stamped_timer_stops_at_the_first_pending_frame() {
        let mut t = StreamTimer::gpu_stamped("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        let slow = FakeStream { delay_ns: 60_000_000_000 };
        let mut entries = Vec::new();
        for f in 0..4 {
            let i = t.begin(f);
            t.mark(i, Mark::AfterKernel, &slow).unwrap();
            entries.push(i);
        }
        // Which entries have ended (their stamps a pair).
        let ended = std::cell::RefCell::new(vec![false; DEPTH]);
        let reads = Cell::new(0);
        let reader = |e: usize| {
            reads.set(reads.get() + 1);
            ended.borrow()[e].then_some((1, 2))
        };
        let mut out = Vec::new();
        // Frame 1 ended but frame 0 has not: nothing is taken, and only frame 0 is read.
        ended.borrow_mut()[entries[1]] = true;
        t.take_spans_with(&mut out, &reader);
        assert!(out.is_empty());
        assert_eq!(reads.get(), 1, "frames 1..3 run after frame 0");
        // Frame 0 ends: frames 0 and 1 are taken, and frame 2 ends the walk.
        ended.borrow_mut()[entries[0]] = true;
        reads.set(0);
        t.take_spans_with(&mut out, &reader);
        assert_eq!(out.iter().map(|s| s.frame).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(reads.get(), 3);
        // The rest end later and are taken then, in order.
        for &e in &entries[2..] {
            ended.borrow_mut()[e] = true;
        }
        t.take_spans_with(&mut out, &reader);
        assert_eq!(out.iter().map(|s| s.frame).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn a_frame_overwritten_before_it_completed_is_dropped() {
        let mut t = StreamTimer::new("fake", FakeStream { delay_ns: 0 }, event).unwrap();
        let slow = FakeStream { delay_ns: 10_000_000_000 };
        let mut out = Vec::new();
        let i = t.begin(0);
        t.mark(i, Mark::AfterKernel, &slow).unwrap();
        let j = t.begin(DEPTH as u64);
        t.take_spans(&mut out);
        assert_eq!(i, j);
        assert_eq!(t.dropped, 1);
        assert!(out.is_empty());
    }
}
