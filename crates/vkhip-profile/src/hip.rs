//! A HIP stream's track (feature `hip`): scopes timed by HIP events, put on the host clock
//! through anchors. Built and tested without a GPU, as the rest of the HIP side.
//!
//! HIP has no `%globaltimer` that Vulkan's timestamps are known to count, so a HIP track has a
//! clock of its own: a scope records an event before its work and one after it, on the stream
//! (any work: a kernel, a copy, a library call), and an event's time is its elapsed time from an
//! **anchor** event whose host time is known. An anchor is recorded on the idle stream between
//! two host clock readings and polled until it completes: it happened inside that window, so
//! the midpoint is its host time and half the width its accuracy (the narrowest of a few tries
//! is kept). Anchors are re-taken every [`REANCHOR_NS`] — when the stream is idle as a scope
//! begins, so that the anchor does not queue behind the stream's work — and each carries the
//! rate fitted since the previous one ([`Anchored`]); the largest drift seen is stated.
//! Elapsed times are `f32` milliseconds, exact to ≈ 10 ns within 100 ms of the anchor.

use crate::clock::{host_now_ns, Anchor, Anchored, ClockInfo};
use crate::error::Result;
use crate::model::{Access, Api, SyncKind, Track, TrackId};
use crate::profiler::{
    Entry, Gpu, GpuKind, Kind, Marks, Profiler, Resolved, Resource, ScopeCore, Semaphore, Shared, State,
    StreamOps,
};
use crate::ring::Ring;
use crate::streams::StreamHandle;
use std::sync::Arc;
use vkhip_interop::hip::{Hip, HipEvent};

/// How often the anchor is re-taken, ns (when the stream is idle then).
pub const REANCHOR_NS: u64 = 50_000_000;
/// Anchor tries; the narrowest window wins, and one this narrow (half-width, ns) ends them.
const ANCHOR_TRIES: usize = 5;
const ANCHOR_GOOD_NS: u64 = 5_000;
/// A try whose event takes longer than this to complete is abandoned (the GPU was busy), ns.
const ANCHOR_GIVE_UP_NS: u64 = 2_000_000;
/// A re-anchor wider than this (half-width, ns) is not taken: the stream was not idle after all.
const REANCHOR_ACCEPT_NS: u64 = 25_000;

/// The event side of a HIP stream track; lives in the profiler's state.
pub(crate) struct EventTrack {
    events: Vec<HipEvent>,
    pub(crate) ring: Ring,
    /// The anchor events (the current one and the previous), alternating.
    anchors: [HipEvent; 2],
    current: usize,
    /// The clock: a device reading is the ns elapsed since the first anchor, summed anchor to
    /// anchor (exact integers), plus the elapsed time from the current anchor.
    clock: Anchored,
    /// The current anchor's device reading.
    device_at_anchor: u64,
    taken_at_ns: u64,
    /// The end event of the last scope (whether the stream is idle).
    last_end: Option<u32>,
    refused: u64,
}

/// One anchor: record `event` on the idle stream between two host readings, the narrowest of
/// [`ANCHOR_TRIES`]; `None` when every try timed out.
fn take_anchor(hip: &Hip, event: &HipEvent, tries: usize) -> Result<Option<(u64, u64)>> {
    let mut best: Option<(u64, u64)> = None;
    for _ in 0..tries {
        let before = host_now_ns();
        hip.record(event)?;
        let done = loop {
            if event.query()? {
                break Some(host_now_ns());
            }
            if host_now_ns() - before > ANCHOR_GIVE_UP_NS {
                break None;
            }
            std::hint::spin_loop();
        };
        let Some(after) = done else { continue };
        let half = (after - before) / 2;
        if best.is_none_or(|(_, h)| half < h) {
            best = Some((before + half, half));
        }
        if half <= ANCHOR_GOOD_NS {
            break;
        }
    }
    if best.is_none() {
        // Leave the event complete before it is recorded again.
        event.synchronize()?;
    }
    Ok(best)
}

impl GpuKind for EventTrack {
    fn kind_refresh(&mut self, _gpu: Option<&Gpu>) -> Result<()> {
        self.refresh()
    }

    fn kind_resolve(&mut self, marks: Marks, _gpu: Option<&Gpu>) -> Resolved {
        self.resolve(marks)
    }

    fn kind_release(&mut self, marks: Marks, _read: bool, _gpu: Option<&Gpu>) {
        self.release(marks)
    }

    /// HIP's events have a host anchor of their own: not the Vulkan clock's accuracy. The
    /// method (with its anchor count) only at the end: names change rarely.
    fn kind_accuracy(&self, _vulkan_ns: Option<u64>, last: bool) -> Option<(u64, Option<String>)> {
        Some((self.accuracy_ns(), last.then(|| self.clock_info().method)))
    }

    fn kind_clock_info(&self, _gpu: Option<&Gpu>) -> Option<ClockInfo> {
        Some(self.clock_info())
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl EventTrack {
    fn new(hip: &Hip, capacity: u32) -> Result<Self> {
        let events = (0..capacity).map(|_| hip.event(true)).collect::<vkhip_interop::Result<Vec<_>>>()?;
        let anchors = [hip.event(true)?, hip.event(true)?];
        let (host_ns, accuracy_ns) = take_anchor(hip, &anchors[0], ANCHOR_TRIES)?.ok_or_else(|| {
            vkhip_interop::Error::unsupported(
                vkhip_interop::Api::Hip,
                "no anchor event completed within 2 ms on the idle stream",
            )
        })?;
        let first = Anchor { device: 0, host_ns, ns_per_unit: 1.0, accuracy_ns };
        Ok(EventTrack {
            events,
            ring: Ring::new(capacity),
            anchors,
            current: 0,
            clock: Anchored::new(first, u64::MAX, 1.0),
            device_at_anchor: 0,
            taken_at_ns: host_now_ns(),
            last_end: None,
            refused: 0,
        })
    }

    /// Re-anchor when due and the stream is idle (its last scope's end event completed).
    fn maybe_reanchor(&mut self, hip: &Hip) -> Result<()> {
        let now = host_now_ns();
        if now.saturating_sub(self.taken_at_ns) < REANCHOR_NS {
            return Ok(());
        }
        if let Some(e) = self.last_end {
            if !self.events[e as usize].query()? {
                return Ok(());
            }
        }
        self.taken_at_ns = now;
        let next = 1 - self.current;
        match take_anchor(hip, &self.anchors[next], 2)? {
            Some((host_ns, half)) if half <= REANCHOR_ACCEPT_NS => {
                let ms = self.anchors[self.current].elapsed_ms(&self.anchors[next])?;
                let device =
                    self.device_at_anchor.saturating_add_signed((f64::from(ms) * 1e6).round() as i64);
                self.clock.reanchor(Anchor { device, host_ns, ns_per_unit: 1.0, accuracy_ns: half });
                self.device_at_anchor = device;
                self.current = next;
            }
            _ => self.refused += 1,
        }
        Ok(())
    }

    pub(crate) fn refresh(&mut self) -> Result<()> {
        Ok(())
    }

    fn time(&mut self, event: u32) -> Option<u64> {
        let ms = self.anchors[self.current].elapsed_ms(&self.events[event as usize]).ok()?;
        let device = self.device_at_anchor.saturating_add_signed((f64::from(ms) * 1e6).round() as i64);
        Some(self.clock.map(device))
    }

    pub(crate) fn resolve(&mut self, marks: Marks) -> Resolved {
        let (b, e) = (self.ring.index(marks.begin), self.ring.index(marks.end));
        match (self.events[b as usize].query(), self.events[e as usize].query()) {
            (Ok(true), Ok(true)) => match (self.time(b), self.time(e)) {
                (Some(start), Some(end)) => Resolved::Times(start, end),
                _ => Resolved::Lost,
            },
            (Ok(_), Ok(_)) => Resolved::Pending,
            _ => Resolved::Lost,
        }
    }

    pub(crate) fn release(&mut self, marks: Marks) {
        for c in [marks.begin, marks.end] {
            self.ring.release(c);
        }
    }

    pub(crate) fn accuracy_ns(&self) -> u64 {
        self.clock.accuracy_ns()
    }

    pub(crate) fn clock_info(&self) -> ClockInfo {
        ClockInfo {
            method: format!(
                "HIP events against an anchor event on the idle stream, re-anchored every {} ms when idle, rate fitted ({} anchors, {} refused)",
                REANCHOR_NS / 1_000_000,
                self.clock.anchors(),
                self.refused
            ),
            accuracy_ns: self.clock.accuracy_ns(),
            drift_ns: self.clock.drift_ns(),
            anchors: self.clock.anchors(),
        }
    }
}

/// A HIP stream's track ([`Profiler::hip_stream`]): scopes around work enqueued on the stream.
/// Borrows the [`Hip`] it records on.
pub struct HipStream<'h> {
    shared: Option<Arc<Shared>>,
    track: TrackId,
    hip: &'h Hip,
}

impl Profiler {
    /// A track for `hip`'s stream: [`crate::Options::events_per_stream`] timing events and an
    /// anchor taken now (the stream should be idle).
    pub fn hip_stream<'h>(&self, name: &str, hip: &'h Hip) -> Result<HipStream<'h>> {
        let Some(s) = &self.shared else { return Ok(HipStream { shared: None, track: TrackId(0), hip }) };
        let events = EventTrack::new(hip, s.options.events_per_stream.max(2))?;
        let info = events.clock_info();
        // `hip`'s one stream, named by the handle's address while a track borrows it: several
        // tracks on one handle are that stream's order (crate::streams).
        let stream = StreamHandle::Hip(hip as *const Hip as usize as u64);
        let track = s.lock().add_stream_track(
            Track {
                name: name.into(),
                api: Api::Hip,
                clock: info.method,
                accuracy_ns: info.accuracy_ns,
                clock_domain: None,
            },
            Kind::Gpu(Box::new(events)),
            stream,
        )?;
        Ok(HipStream { shared: Some(s.clone()), track, hip })
    }
}

impl Drop for HipStream<'_> {
    fn drop(&mut self) {
        self.ops().dropped();
    }
}

impl HipStream<'_> {
    fn events<'a>(&self, st: &'a mut State) -> Option<&'a mut EventTrack> {
        st.tracks[self.track.0 as usize].kind.gpu_mut::<EventTrack>()
    }

    fn ops(&self) -> StreamOps<'_> {
        StreamOps { shared: &self.shared, track: self.track }
    }

    /// Open a scope: an event is recorded on the stream now, and another when the guard is
    /// dropped (or [`HipScope::end`]); enqueue the scope's work between the two.
    pub fn scope(&self, name: &str) -> Result<HipScope<'_>> {
        let Some(s) = &self.shared else { return Ok(HipScope::inert(self)) };
        let now = host_now_ns();
        let mut st = s.lock();
        if st.finished {
            return Ok(HipScope::inert(self));
        }
        self.ops().edge(&mut st, now);
        let Some(events) = self.events(&mut st) else { return Ok(HipScope::inert(self)) };
        events.maybe_reanchor(self.hip)?;
        let Some(first) = events.ring.alloc(2) else {
            st.stats.dropped_full += 1;
            return Ok(HipScope::inert(self));
        };
        let marks = Marks { begin: first, end: first + 1 };
        let (b, e) = (events.ring.index(marks.begin), events.ring.index(marks.end));
        let recorded = self.hip.record(&events.events[b as usize]);
        let scope = st.new_scope(self.track, name, marks, now);
        let id = scope.id;
        st.push(self.track, Entry::Scope(scope));
        drop(st);
        let mut guard = HipScope {
            stream: self,
            end_event: Some(e),
            core: ScopeCore {
                shared: Some(s.clone()),
                track: self.track,
                id,
                accesses: Vec::new(),
                closed: false,
            },
        };
        if let Err(e) = recorded {
            guard.end_event = None;
            guard.core.fail();
            return Err(e.into());
        }
        Ok(guard)
    }

    /// The stream waits for `semaphore` ≥ `value` (where ROCm can import semaphores).
    pub fn wait(&self, semaphore: &Semaphore, value: u64) {
        self.ops().sync(semaphore, value, SyncKind::Wait);
    }

    /// The stream signals `semaphore` = `value` (where ROCm can import semaphores).
    pub fn signal(&self, semaphore: &Semaphore, value: u64) {
        self.ops().sync(semaphore, value, SyncKind::Signal);
    }

    /// The calling thread (a host track) waited for everything enqueued so far
    /// (`Hip::synchronize`): the hand-off to Vulkan on Linux.
    pub fn synchronized(&self) {
        self.ops().synchronized();
    }

    /// The track's id in the timeline.
    pub fn track(&self) -> TrackId {
        self.track
    }
}

/// A scope on a HIP stream: from [`HipStream::scope`] until dropped or [`HipScope::end`].
#[must_use = "a scope ends when its guard is dropped: bind it (`let _s = …`)"]
pub struct HipScope<'s> {
    stream: &'s HipStream<'s>,
    end_event: Option<u32>,
    core: ScopeCore,
}

impl<'s> HipScope<'s> {
    fn inert(stream: &'s HipStream<'s>) -> Self {
        HipScope { stream, end_event: None, core: ScopeCore::inert() }
    }

    /// Declare that the scope reads `r`.
    pub fn reads(mut self, r: &Resource) -> Self {
        self.core.access(r, Access::read);
        self
    }

    /// Declare that the scope writes `r`.
    pub fn writes(mut self, r: &Resource) -> Self {
        self.core.access(r, Access::write);
        self
    }

    /// End the scope now: its end event is recorded; a failed record is returned.
    pub fn end(mut self) -> Result<()> {
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        let (Some(e), Some(s)) = (self.end_event.take(), &self.stream.shared) else { return Ok(()) };
        let result = {
            let mut st = s.lock();
            match self.stream.events(&mut st) {
                Some(events) => {
                    let r = self.stream.hip.record(&events.events[e as usize]);
                    if r.is_ok() {
                        events.last_end = Some(e);
                    }
                    r
                }
                None => Ok(()),
            }
        };
        match result {
            Ok(()) => self.core.close(None),
            Err(_) => self.core.fail(),
        }
        result.map_err(Into::into)
    }
}

impl Drop for HipScope<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("vkhip-profile: a HIP scope's end event failed (the scope is dropped): {e}");
            self.core.count_failed_end();
        }
    }
}
