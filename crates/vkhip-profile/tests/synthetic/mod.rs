//! Synthetic timelines for the analysis tests: a small builder, and the K = 3 producer/consumer
//! program (a host thread, a CUDA stream writing one of three height slots per frame, a Vulkan
//! queue drawing it) with hooks to break it.
#![allow(dead_code)]

use vkhip_profile::model::{
    Access, Api, FrameEnd, Item, Ns, Scope, SemaphoreInfo, Sync, SyncKind, Timeline, Track,
};
use vkhip_profile::{ResourceId, SemaphoreId, TrackId};

/// Where the synthetic clock starts (1000 s after boot).
pub const BASE_NS: Ns = 1_000_000_000_000;

pub fn ns(us: f64) -> Ns {
    BASE_NS + (us * 1e3).round() as Ns
}

#[derive(Default)]
pub struct Tl {
    pub tl: Timeline,
}

impl Tl {
    pub fn track(&mut self, name: &str, api: Api, accuracy_ns: u64, clock_domain: Option<u32>) -> TrackId {
        let clock = if api == Api::Host { "host clock" } else { "GPU clock, calibrated" };
        self.tl.names.tracks.push(Track {
            name: name.into(),
            api,
            clock: clock.into(),
            accuracy_ns,
            clock_domain,
        });
        self.tl.items.push(Vec::new());
        TrackId(self.tl.names.tracks.len() as u32 - 1)
    }

    pub fn resource(&mut self, name: &str) -> ResourceId {
        self.tl.names.resources.push(name.into());
        ResourceId(self.tl.names.resources.len() as u32 - 1)
    }

    pub fn semaphore(&mut self, name: &str, internal: bool) -> SemaphoreId {
        self.tl.names.semaphores.push(SemaphoreInfo { name: name.into(), internal });
        SemaphoreId(self.tl.names.semaphores.len() as u32 - 1)
    }

    pub fn push(&mut self, t: TrackId, item: Item) {
        self.tl.items[t.0 as usize].push(item);
    }

    /// A scope from `a` to `b` µs.
    pub fn scope(&mut self, t: TrackId, name: &str, frame: u64, a: f64, b: f64, accesses: &[Access]) {
        self.nested(t, name, frame, a, b, 0, accesses);
    }

    #[allow(clippy::too_many_arguments)]
    pub fn nested(
        &mut self,
        t: TrackId,
        name: &str,
        frame: u64,
        a: f64,
        b: f64,
        depth: u32,
        accesses: &[Access],
    ) {
        let scope = Scope {
            name: name.into(),
            frame,
            start_ns: ns(a),
            end_ns: ns(b),
            depth,
            accesses: accesses.to_vec(),
        };
        self.push(t, Item::Scope(scope));
    }

    pub fn signal(&mut self, t: TrackId, s: SemaphoreId, value: u64, frame: u64) {
        self.push(t, Item::Sync(Sync { semaphore: s, value, kind: SyncKind::Signal, frame, host_ns: None }));
    }

    pub fn wait(&mut self, t: TrackId, s: SemaphoreId, value: u64, frame: u64) {
        self.push(t, Item::Sync(Sync { semaphore: s, value, kind: SyncKind::Wait, frame, host_ns: None }));
    }

    pub fn host_signal(&mut self, t: TrackId, s: SemaphoreId, value: u64, frame: u64, at: f64) {
        self.push(
            t,
            Item::Sync(Sync { semaphore: s, value, kind: SyncKind::Signal, frame, host_ns: Some(ns(at)) }),
        );
    }

    pub fn host_wait(&mut self, t: TrackId, s: SemaphoreId, value: u64, frame: u64, at: f64) {
        self.push(
            t,
            Item::Sync(Sync { semaphore: s, value, kind: SyncKind::Wait, frame, host_ns: Some(ns(at)) }),
        );
    }

    pub fn frame_end(&mut self, frame: u64, at: f64) {
        self.tl.frame_ends.push(FrameEnd { frame, host_ns: ns(at) });
    }
}

/// Slots of the producer/consumer program.
pub const K: u64 = 3;

/// One frame of the program, times in µs from the frame's start (frames are 1000 µs apart).
#[derive(Clone, Debug)]
pub struct Frame {
    pub sine: (f64, f64),
    pub draw: (f64, f64),
    /// A scope without accesses on the queue before the draw.
    pub clear: Option<(f64, f64)>,
    /// The queue waits `written` before the draw.
    pub wait_written: bool,
    /// The stream waits `read` before overwriting a slot.
    pub wait_read: bool,
    /// The draw as a nested scope inside a top-level "pass" spanning it (sent after it).
    pub nested_draw: bool,
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            sine: (100.0, 300.0),
            draw: (350.0, 800.0),
            clear: None,
            wait_written: true,
            wait_read: true,
            nested_draw: false,
        }
    }
}

/// The tracks, resources and semaphores of [`program`].
pub struct Ids {
    pub main: TrackId,
    pub sim: TrackId,
    pub graphics: TrackId,
    pub heights: Vec<ResourceId>,
    pub written: SemaphoreId,
    pub read: SemaphoreId,
    pub submit_sim: SemaphoreId,
    pub submit_gfx: SemaphoreId,
    pub join: SemaphoreId,
}

/// The tracks and names of [`program`], with no items.
pub fn setup(b: &mut Tl) -> Ids {
    let main = b.track("main", Api::Host, 0, None);
    let sim = b.track("sim", Api::Cuda, 3_500, Some(0));
    let graphics = b.track("graphics", Api::Vulkan, 3_000, Some(0));
    let heights = (0..K).map(|i| b.resource(&format!("heights[{i}]"))).collect();
    let written = b.semaphore("written", false);
    let read = b.semaphore("read", false);
    let submit_sim = b.semaphore("submit:main→sim", true);
    let submit_gfx = b.semaphore("submit:main→graphics", true);
    let join = b.semaphore("join:graphics→main", true);
    b.tl.clock_notes.push("Vulkan timestamps calibrated (VK_KHR_calibrated_timestamps), ±3.0 µs".into());
    Ids { main, sim, graphics, heights, written, read, submit_sim, submit_gfx, join }
}

/// Append frame `f` of the program, shaped by `fr`.
pub fn frame(b: &mut Tl, ids: &Ids, f: u64, fr: &Frame) {
    let t = f as f64 * 1000.0;
    let slot = ids.heights[(f % K) as usize];
    // The host: waits for the queue two frames back, records, submits to both.
    if f >= 2 {
        b.host_wait(ids.main, ids.join, f - 1, f, t + 10.0);
    }
    b.scope(ids.main, "record", f, t + 20.0, t + 50.0, &[]);
    b.host_signal(ids.main, ids.submit_sim, f + 1, f, t + 55.0);
    b.host_signal(ids.main, ids.submit_gfx, f + 1, f, t + 60.0);
    // The stream: waits for the submission and for the slot's previous draw, writes, signals.
    b.wait(ids.sim, ids.submit_sim, f + 1, f);
    if f >= K && fr.wait_read {
        b.wait(ids.sim, ids.read, f + 1 - K, f);
    }
    b.scope(ids.sim, "sine", f, t + fr.sine.0, t + fr.sine.1, &[Access::write(slot)]);
    b.signal(ids.sim, ids.written, f + 1, f);
    // The queue: waits for the submission and the write, draws, signals `read` and the host.
    b.wait(ids.graphics, ids.submit_gfx, f + 1, f);
    if fr.wait_written {
        b.wait(ids.graphics, ids.written, f + 1, f);
    }
    if let Some((a, c)) = fr.clear {
        b.scope(ids.graphics, "clear", f, t + a, t + c, &[]);
    }
    if fr.nested_draw {
        b.nested(ids.graphics, "draw", f, t + fr.draw.0, t + fr.draw.1, 1, &[Access::read(slot)]);
        b.scope(ids.graphics, "pass", f, t + fr.draw.0 - 5.0, t + fr.draw.1 + 5.0, &[]);
    } else {
        b.scope(ids.graphics, "draw", f, t + fr.draw.0, t + fr.draw.1, &[Access::read(slot)]);
    }
    b.signal(ids.graphics, ids.read, f + 1, f);
    b.signal(ids.graphics, ids.join, f + 1, f);
    b.frame_end(f, t + 900.0);
}

/// `frames` frames of the program; `shape` may change any frame.
pub fn program(frames: u64, mut shape: impl FnMut(u64, &mut Frame)) -> Timeline {
    let mut b = Tl::default();
    let ids = setup(&mut b);
    for f in 0..frames {
        let mut fr = Frame::default();
        shape(f, &mut fr);
        frame(&mut b, &ids, f, &fr);
    }
    b.tl
}

/// The correct program.
pub fn correct(frames: u64) -> Timeline {
    program(frames, |_, _| {})
}

/// Keep only the frames ≥ `first` (what a trace ring of the last frames holds).
pub fn tail(tl: &Timeline, first: u64) -> Timeline {
    let mut out = tl.clone();
    for items in &mut out.items {
        items.retain(|i: &Item| i.frame() >= first);
    }
    out.frame_ends.retain(|e| e.frame >= first);
    out
}

/// The engine of issue 39, per frame f (`period` µs apart): the host waits the slot's fence two
/// frames back and records; Vulkan renders (4 µs), CUDA filters (4 µs) 160 µs later, Vulkan
/// copies (7 µs) 160 µs after that (two context switches a frame). The Vulkan queue has more items a frame than the stream
/// (two submissions, each with its own waits and signals). GPU busy per frame: 15 µs.
pub fn engine(frames: u64, period: f64) -> Timeline {
    let mut b = Tl::default();
    let main = b.track("main", Api::Host, 0, None);
    let gfx = b.track("graphics", Api::Vulkan, 3_000, Some(0));
    let filter = b.track("filter", Api::Cuda, 3_000, Some(0));
    let (image, filtered) = (b.resource("image"), b.resource("filtered"));
    let rendered = b.semaphore("rendered", false);
    let written = b.semaphore("written", false);
    let copied = b.semaphore("copied", false);
    let submit_gfx = b.semaphore("submit:main→graphics", true);
    let submit_filter = b.semaphore("submit:main→filter", true);
    let join = b.semaphore("join:graphics", true);
    for f in 0..frames {
        let t = f as f64 * period;
        if f >= 2 {
            b.host_wait(main, join, 2 * (f - 2) + 2, f, t + 5.0);
        }
        b.scope(main, "record", f, t + 10.0, t + 20.0, &[]);
        b.host_signal(main, submit_gfx, 2 * f + 1, f, t + 21.0);
        b.host_signal(main, submit_filter, f + 1, f, t + 22.0);
        b.host_signal(main, submit_gfx, 2 * f + 2, f, t + 23.0);
        // Submission 1: render, signal `rendered`.
        b.wait(gfx, submit_gfx, 2 * f + 1, f);
        if f >= 2 {
            b.wait(gfx, copied, f - 1, f);
        }
        b.scope(gfx, "render", f, t + 30.0, t + 34.0, &[Access::write(image)]);
        b.signal(gfx, rendered, f + 1, f);
        b.signal(gfx, join, 2 * f + 1, f);
        // The stream: wait `rendered`, filter, signal `written`.
        b.wait(filter, submit_filter, f + 1, f);
        b.wait(filter, rendered, f + 1, f);
        b.scope(filter, "filt", f, t + 194.0, t + 198.0, &[Access::read(image), Access::write(filtered)]);
        b.signal(filter, written, f + 1, f);
        // Submission 2: wait `written`, copy, signal `copied`.
        b.wait(gfx, submit_gfx, 2 * f + 2, f);
        b.wait(gfx, written, f + 1, f);
        b.scope(gfx, "copy", f, t + 358.0, t + 365.0, &[Access::read(filtered)]);
        b.signal(gfx, copied, f + 1, f);
        b.signal(gfx, join, 2 * f + 2, f);
        b.frame_end(f, t + 400.0);
    }
    b.tl
}
