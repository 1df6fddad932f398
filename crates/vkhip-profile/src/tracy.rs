//! The live view (feature `tracy`): a [`Sink`] that draws a running program in the Tracy
//! profiler through `tracy-client`'s GPU contexts.
//!
//! - **One GPU context per track** (queue, stream — and host thread: see below), named like the
//!   report names tracks (`cuda stream "sim"`). Its period is 1 ns and its "GPU" clock is
//!   `CLOCK_MONOTONIC` itself: the context is created with the host clock's reading of the
//!   moment, and every scope is uploaded with its already-mapped times, so all tracks line up
//!   with each other and with Tracy's own CPU zones (re-synchronised once a second, which keeps
//!   Tracy's CPU timer and `CLOCK_MONOTONIC` from drifting apart on screen).
//! - **Host tracks** are contexts too: their scopes reach the sink after they ended, and Tracy's
//!   CPU zones can only be opened and closed live.
//! - **Nesting**: Tracy wants a context's zones opened and closed in nesting order with their
//!   times uploaded in increasing order. A track's scopes are held until the next top-level
//!   scope starts after them, then sent sorted by start, each inside the last one that contains
//!   it (the order the capture side sends nested scopes in does not matter).
//! - **Hazards**: the sink runs its own [`Checker`]; each violation (the first
//!   [`crate::check::KEEP_VIOLATIONS`]) becomes a red Tracy message when it is found.
//! - **No viewer, no cost**: tracy-client is built with `ondemand` — nothing is queued until a
//!   viewer connects (without it Tracy keeps every event in memory until one does) — and the
//!   sink sends nothing and holds no scopes while none is connected. It never blocks.
//! - Semaphore operations are not drawn: Tracy stamps messages with the time they are sent, not
//!   the operation's. The Perfetto trace ([`crate::perfetto`]) has them, with flows.

use crate::check::{track_label, Checker};
use crate::clock::host_now_ns;
use crate::model::{Api, FrameEnd, Item, Names, Ns, Sink, TrackId};
use std::sync::Arc;
use tracy_client::{Client, GpuContext, GpuContextType};

/// Scopes a track holds for nesting before it sends them anyway.
const MAX_HELD: usize = 1024;
/// How often the contexts are re-synchronised with Tracy's CPU clock, ns.
const RESYNC_NS: Ns = 1_000_000_000;
/// Red, opaque (Tracy: RGBA, red in the top byte).
const VIOLATION_RGBA: u32 = 0xFF30_30FF;

/// What the sink did, for tests and the curious.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TracyStats {
    /// GPU contexts created (one per track, at most 255 per process: Tracy's limit).
    pub contexts: u32,
    /// Zones sent to a connected viewer.
    pub zones_sent: u64,
    /// Scopes dropped because no viewer was connected.
    pub zones_skipped: u64,
    /// Violation messages sent.
    pub violations_sent: u64,
}

/// A zone waiting to be sent.
#[derive(Clone, Debug, PartialEq)]
struct Zone {
    name: Arc<str>,
    start_ns: Ns,
    end_ns: Ns,
}

/// One step of sending zones in nesting order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Open(usize),
    Close(usize),
}

/// The order to open and close `zones` (sorted here by start, longest first) so that each lies
/// inside the last open zone that contains it. Properly nested zones are sent with their times
/// in increasing order, as Tracy wants; zones that only partly overlap (work overlapping on a
/// queue) are sent as siblings.
fn nest(zones: &mut [Zone]) -> Vec<Step> {
    zones.sort_by(|a, b| a.start_ns.cmp(&b.start_ns).then(b.end_ns.cmp(&a.end_ns)));
    let mut steps = Vec::with_capacity(zones.len() * 2);
    let mut open: Vec<usize> = Vec::new();
    for (i, z) in zones.iter().enumerate() {
        while let Some(&top) = open.last() {
            if zones[top].end_ns > z.start_ns && zones[top].end_ns >= z.end_ns {
                break; // z lies inside top
            }
            steps.push(Step::Close(open.pop().expect("not empty")));
        }
        steps.push(Step::Open(i));
        open.push(i);
    }
    steps.extend(open.into_iter().rev().map(Step::Close));
    steps
}

struct Context {
    gpu: GpuContext,
    next_query: u16,
    held: Vec<Zone>,
}

impl Context {
    fn query(&mut self) -> u16 {
        // A query id is free again once its time is uploaded, which happens right away.
        self.next_query = self.next_query.wrapping_add(1);
        self.next_query
    }

    /// Send `zones` (see [`nest`]); returns how many.
    fn send(&mut self, mut zones: Vec<Zone>, function: &str) -> u64 {
        let steps = nest(&mut zones);
        let mut ends = vec![0u16; zones.len()];
        for step in steps {
            match step {
                Step::Open(i) => {
                    let q = self.query();
                    let z = &zones[i];
                    self.gpu.begin_span_alloc(&z.name, function, "vkhip-profile", 0, q);
                    self.gpu.upload_gpu_timestamp(q, z.start_ns as i64);
                    ends[i] = self.query();
                }
                Step::Close(i) => {
                    self.gpu.end_span(ends[i]);
                    self.gpu.upload_gpu_timestamp(ends[i], zones[i].end_ns as i64);
                }
            }
        }
        zones.len() as u64
    }
}

/// The live view: a [`Sink`] feeding Tracy (see the module's notes).
pub struct TracySink {
    client: Client,
    names: Names,
    labels: Vec<String>,
    contexts: Vec<Option<Context>>,
    checker: Option<Checker>,
    frame_marks: bool,
    last_sync_ns: Ns,
    stats: TracyStats,
}

impl Default for TracySink {
    fn default() -> Self {
        TracySink::new()
    }
}

impl TracySink {
    /// Starts the Tracy client (a no-op when it runs already). Hazard messages on, frame marks
    /// off.
    pub fn new() -> Self {
        TracySink {
            client: Client::start(),
            names: Names::default(),
            labels: Vec::new(),
            contexts: Vec::new(),
            checker: Some(Checker::new()),
            frame_marks: false,
            last_sync_ns: 0,
            stats: TracyStats::default(),
        }
    }

    /// Mark Tracy frames at the profiler's frame ends (off by default: an engine that uses
    /// Tracy usually marks its own).
    pub fn with_frame_marks(mut self, on: bool) -> Self {
        self.frame_marks = on;
        self
    }

    /// Check hazards live and send each violation as a message (on by default).
    pub fn with_checker(mut self, on: bool) -> Self {
        self.checker = on.then(Checker::new);
        self
    }

    /// Whether a Tracy viewer is connected now.
    pub fn is_connected(&self) -> bool {
        Client::is_connected()
    }

    pub fn stats(&self) -> TracyStats {
        self.stats
    }

    /// Send every scope held for nesting (at the end of a run).
    pub fn flush(&mut self) {
        for (t, ctx) in self.contexts.iter_mut().enumerate() {
            if let Some(ctx) = ctx {
                let held = std::mem::take(&mut ctx.held);
                self.stats.zones_sent += ctx.send(held, &self.labels[t]);
            }
        }
    }

    fn context(&mut self, t: usize) -> Option<&mut Context> {
        self.contexts.get_mut(t).and_then(Option::as_mut)
    }

    fn send_violations(&mut self) {
        let Some(checker) = &self.checker else { return };
        let found = checker.violations();
        for v in found.iter().skip(self.stats.violations_sent as usize) {
            let mut text = format!("vkhip-profile: {v}");
            if text.len() > 4096 {
                let mut cut = 4096;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            self.client.color_message(&text, VIOLATION_RGBA, 0);
        }
        self.stats.violations_sent = found.len() as u64;
    }
}

impl Sink for TracySink {
    fn names(&mut self, names: &Names) {
        self.names = names.clone();
        if let Some(c) = &mut self.checker {
            c.names(names);
        }
        for t in self.contexts.len()..names.tracks.len() {
            let track = &names.tracks[t];
            let label = track_label(track);
            let ty = match track.api {
                Api::Vulkan | Api::Wgpu => GpuContextType::Vulkan,
                Api::Host | Api::Cuda | Api::Hip => GpuContextType::Invalid,
            };
            let ctx = match self.client.clone().new_gpu_context(Some(&label), ty, host_now_ns() as i64, 1.0) {
                Ok(gpu) => {
                    self.stats.contexts += 1;
                    Some(Context { gpu, next_query: 0, held: Vec::new() })
                }
                Err(e) => {
                    log::warn!("tracy: no GPU context for {label}: {e}");
                    None
                }
            };
            self.contexts.push(ctx);
            self.labels.push(label);
        }
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        if let Some(c) = &mut self.checker {
            c.item(track, item);
            if c.violations().len() as u64 > self.stats.violations_sent {
                self.send_violations();
            }
        }
        let Item::Scope(s) = item else { return };
        let t = track.0 as usize;
        if !Client::is_connected() {
            self.stats.zones_skipped += 1;
            if let Some(ctx) = self.context(t) {
                ctx.held.clear();
            }
            return;
        }
        let zone = Zone { name: s.name.clone(), start_ns: s.start_ns, end_ns: s.end_ns.max(s.start_ns) };
        let Some(ctx) = self.contexts.get_mut(t).and_then(Option::as_mut) else { return };
        // A new top-level scope: what started before it is complete (its nested scopes arrived).
        let ready: Vec<Zone> = if ctx.held.len() >= MAX_HELD {
            std::mem::take(&mut ctx.held)
        } else if s.depth == 0 {
            let (ready, keep) = ctx.held.drain(..).partition(|z| z.start_ns < zone.start_ns);
            ctx.held = keep;
            ready
        } else {
            Vec::new()
        };
        ctx.held.push(zone);
        if !ready.is_empty() {
            self.stats.zones_sent += ctx.send(ready, &self.labels[t]);
        }
    }

    fn frame_end(&mut self, end: FrameEnd) {
        if let Some(c) = &mut self.checker {
            c.frame_end(end);
        }
        if self.frame_marks {
            self.client.frame_mark();
        }
        let now = host_now_ns();
        if Client::is_connected() && now.saturating_sub(self.last_sync_ns) >= RESYNC_NS {
            self.last_sync_ns = now;
            for ctx in self.contexts.iter().flatten() {
                ctx.gpu.sync_gpu_time(host_now_ns() as i64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(name: &str, a: Ns, b: Ns) -> Zone {
        Zone { name: name.into(), start_ns: a, end_ns: b }
    }

    fn names_of(zones: &[Zone], steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match *s {
                Step::Open(i) => format!("+{}", zones[i].name),
                Step::Close(i) => format!("-{}", zones[i].name),
            })
            .collect()
    }

    #[test]
    fn nesting_orders_zones_whatever_order_they_came_in() {
        // Inner before outer (the order scopes close in), then a sibling, then a later one.
        let mut zones = vec![z("inner", 20, 30), z("outer", 10, 50), z("inner2", 35, 45), z("next", 60, 70)];
        let steps = nest(&mut zones);
        assert_eq!(
            names_of(&zones, &steps),
            ["+outer", "+inner", "-inner", "+inner2", "-inner2", "-outer", "+next", "-next"]
        );
        // The times sent are in increasing order.
        let times: Vec<Ns> = steps
            .iter()
            .map(|s| match *s {
                Step::Open(i) => zones[i].start_ns,
                Step::Close(i) => zones[i].end_ns,
            })
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }

    #[test]
    fn partly_overlapping_zones_are_siblings() {
        let mut zones = vec![z("a", 0, 10), z("b", 5, 20)];
        let steps = nest(&mut zones);
        assert_eq!(names_of(&zones, &steps), ["+a", "-a", "+b", "-b"]);
    }
}
