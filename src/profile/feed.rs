//! The profiler crate's analysis, off the render thread: each frame the render thread gathers
//! what it recorded (the operations, the spans mapped onto the host clock, the tracks' current
//! clocks) into a [`Batch`]; every [`SEND_EVERY`] frames it hands the batches over in one
//! message; a thread of its own assembles them ([`Assembler`]) and feeds the crate's streaming
//! `Analysis` (the checker over every frame, the hand-offs, the GPU busy time) and, with
//! `--trace`, its `TraceRing`. The analysis costs ≈ 10–20 µs of CPU a frame on the CI machine,
//! more than the render thread's own work at small grids; the render thread's part is draining
//! and filling buffers. Two things it no longer pays every frame (issue 39): waking the analysis
//! thread (one send per [`SEND_EVERY`] frames: a send to a thread asleep on the channel is a
//! futex wake), and allocating (the analysis thread sends the emptied batches back, and the next
//! frames fill them again, their capacity kept).
//!
//! The channel holds [`BACKLOG`] messages: a thread that falls that far behind makes the render
//! thread wait (every item is checked; none is dropped).

use super::program::{Assembler, Both, Layout, Losses, Op, Rec};
use super::span::{HostSpan, Track};
use std::sync::mpsc;
use std::thread::JoinHandle;
use vkhip_profile::model::{self, FrameEnd, Sink};
use vkhip_profile::{Analysis, Summary, TraceRing};

/// Messages the channel holds before the render thread waits for the analysis thread.
pub const BACKLOG: usize = 16;

/// Frames gathered before they are handed over in one message.
pub const SEND_EVERY: usize = 8;

/// What one frame hands the analysis thread.
#[derive(Debug, Default)]
pub struct Batch {
    /// The frame the render thread is at (placeholders far behind it are given up).
    pub frame: u64,
    /// The render thread's operations of GPU tracks, in its order.
    pub ops: Vec<Op>,
    /// The render thread's own host items with their times: its operations and its spans.
    pub render: Vec<(u64, Rec)>,
    /// The bridge thread's records in its order, spans already on the host clock.
    pub bridge: Vec<Rec>,
    /// GPU spans on the host clock, with their frames.
    pub spans: Vec<(u64, HostSpan)>,
    /// The tracks' descriptions now (their clocks' accuracy grows with the drift seen).
    pub tracks: Vec<(Track, model::Track)>,
    /// Operations the threads' logs dropped since the last batch.
    pub dropped: u64,
    pub end: Option<FrameEnd>,
    /// The run is over: give up every placeholder still waiting.
    pub last: bool,
}

/// What the analysis thread hands back at the end.
pub struct Outcome {
    pub summary: Summary,
    pub ring: Option<TraceRing>,
    pub losses: Losses,
}

impl Batch {
    /// Empty it for the next frame, keeping its buffers' capacity.
    fn clear(&mut self) {
        let Batch { frame, ops, render, bridge, spans, tracks, dropped, end, last } = self;
        (*frame, *dropped, *end, *last) = (0, 0, None, false);
        ops.clear();
        render.clear();
        bridge.clear();
        spans.clear();
        tracks.clear();
    }
}

enum Msg {
    Batches(Vec<Batch>),
    Finish(Vec<String>),
}

/// The analysis thread.
pub struct Feed {
    tx: Option<mpsc::SyncSender<Msg>>,
    thread: Option<JoinHandle<Outcome>>,
    /// Batches handed back emptied by the analysis thread, and those ready for reuse.
    back: Option<mpsc::Receiver<Vec<Batch>>>,
    spare: Vec<Batch>,
    /// Frames gathered and not yet handed over.
    pending: Vec<Batch>,
}

impl Feed {
    /// Start the thread for a run of `layout`; `trace_frames`: keep the last N frames for the
    /// trace. A thread that cannot start is logged and the run goes on without the analysis.
    pub fn start(layout: Layout, trace_frames: Option<usize>) -> Self {
        let (tx, rx) = mpsc::sync_channel::<Msg>(BACKLOG);
        let (back_tx, back) = mpsc::channel::<Vec<Batch>>();
        let spawned = std::thread::Builder::new()
            .name("vkhip-profile".into())
            .spawn(move || run(rx, back_tx, Assembler::new(layout), trace_frames.map(TraceRing::new)));
        let feed = |tx, thread, back| Feed { tx, thread, back, spare: Vec::new(), pending: Vec::new() };
        match spawned {
            Ok(thread) => feed(Some(tx), Some(thread), Some(back)),
            Err(e) => {
                log::warn!(
                    "the profiler's analysis thread did not start ({e}): no checker or hand-offs this run"
                );
                feed(None, None, None)
            }
        }
    }

    /// An empty batch for `frame`: one the analysis thread handed back when there is one (its
    /// buffers keep their capacity), else a new one.
    pub fn batch(&mut self, frame: u64, last: bool) -> Batch {
        if self.spare.is_empty() {
            if let Some(back) = &self.back {
                while let Ok(batches) = back.try_recv() {
                    self.spare.extend(batches);
                }
            }
        }
        let mut b = self.spare.pop().unwrap_or_default();
        (b.frame, b.last) = (frame, last);
        b
    }

    /// Queue one frame's batch; every [`SEND_EVERY`] frames, and with the last, hand them over
    /// (waits while [`BACKLOG`] messages are queued).
    pub fn send(&mut self, batch: Batch) {
        let last = batch.last;
        self.pending.push(batch);
        if self.pending.len() < SEND_EVERY && !last {
            return;
        }
        let batches = std::mem::replace(&mut self.pending, Vec::with_capacity(SEND_EVERY));
        if let Some(tx) = &self.tx {
            if tx.send(Msg::Batches(batches)).is_err() {
                log::debug!("the profiler's analysis thread is gone");
            }
        }
    }

    /// The end of the run: the summary (with `clock_notes` stating how the clocks were mapped),
    /// the trace ring and what went missing. None if the thread never ran or panicked.
    pub fn finish(&mut self, clock_notes: Vec<String>) -> Option<Outcome> {
        let tx = self.tx.take()?;
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() {
            let _ = tx.send(Msg::Batches(pending));
        }
        let _ = tx.send(Msg::Finish(clock_notes));
        drop(tx);
        match self.thread.take()?.join() {
            Ok(outcome) => Some(outcome),
            Err(_) => {
                log::error!("the profiler's analysis thread panicked");
                None
            }
        }
    }
}

fn run(
    rx: mpsc::Receiver<Msg>,
    back: mpsc::Sender<Vec<Batch>>,
    mut a: Assembler,
    mut ring: Option<TraceRing>,
) -> Outcome {
    let mut analysis = Analysis::new();
    let mut notes = Vec::new();
    for msg in rx.iter() {
        match msg {
            Msg::Batches(mut batches) => {
                for b in batches.iter_mut() {
                    apply(&mut a, &mut analysis, ring.as_mut(), b);
                    b.clear();
                }
                // Back for reuse; nobody takes them once the render thread is done.
                let _ = back.send(batches);
            }
            Msg::Finish(n) => {
                notes = n;
                break;
            }
        }
    }
    a.finish(&mut Both(&mut analysis, ring.as_mut()));
    analysis.set_clock_notes(notes.clone());
    if let Some(r) = ring.as_mut() {
        r.set_clock_notes(notes);
    }
    Outcome { summary: analysis.summary(), ring, losses: a.losses }
}

/// One frame's records, in the order that keeps every placeholder ahead of its span (its
/// buffers drained, for reuse).
fn apply(a: &mut Assembler, analysis: &mut Analysis, mut ring: Option<&mut TraceRing>, b: &mut Batch) {
    a.losses.ops_dropped += b.dropped;
    for op in b.ops.drain(..) {
        a.op(op);
    }
    for rec in b.bridge.drain(..) {
        match rec {
            Rec::Op(op) if op.track.is_host() => a.host_rec(op.track, Rec::Op(op)),
            Rec::Op(op) => a.op(op),
            Rec::Span(s) if s.track.is_host() => a.host_rec(s.track, Rec::Span(s)),
            Rec::Span(s) => {
                if let (Some(start_ns), Some(end_ns)) = (s.start.host_ns(), s.end.host_ns()) {
                    a.span(s.frame, HostSpan { track: s.track, phase: s.phase, start_ns, end_ns });
                }
            }
            Rec::Clock(_) => {}
        }
    }
    for (frame, span) in b.spans.drain(..) {
        a.span(frame, span);
    }
    a.host(Track::Render, &mut b.render);
    for (t, info) in b.tracks.drain(..) {
        a.set_track(t, info);
    }
    let frame = if b.last { u64::MAX } else { b.frame };
    a.flush(frame, &mut Both(&mut *analysis, ring.as_deref_mut()));
    if let Some(end) = b.end {
        Both(analysis, ring).frame_end(end);
    }
}
