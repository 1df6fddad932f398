//! A CUDA stream's track: scopes around any work on the stream, even work you cannot change.
//!
//! A scope marks the stream before its work and after it, and stream order does the rest: the
//! first mark comes after everything enqueued before the scope (a semaphore wait included), the
//! second after the scope's work, whatever that work is — your kernel, a copy, or a library call
//! such as cuBLAS that nothing inside can be added to. Two ways to mark, chosen by
//! [`Options::cuda_stamps`](crate::Options::cuda_stamps) ([`CudaStamps`]):
//!
//! **Events.** A scope records two CUDA events (timing enabled) from a pool (a
//! ring: an event is recorded again only once it was read, or `cuEventQuery` says it is
//! complete). Events carry no absolute time, only differences (`cuEventElapsedTime`, `f32`
//! milliseconds, a resolution CUDA documents as about 0.5 µs: [`EVENT_RESOLUTION_NS`]), so they
//! are put on the GPU timer by a **GPU anchor**: on the same stream, event A, the stamp kernel
//! below (it stores `%globaltimer`), event B. The stamp lies between A and B, so A's GPU time
//! is the stamp minus half the window elapsed(A, B), to within half the window plus the
//! resolution ([`event_anchor`]); any later event E is A's time plus elapsed(A, E). An anchor is
//! re-taken every [`EVENT_REANCHOR_NS`] at a scope's begin (three more commands on your stream,
//! before the scope's first event) and read back in [`Profiler::end_frame`] without waiting; a
//! window much wider than the recent narrowest (the stream was preempted inside it) is refused,
//! and the next try comes sooner. [`EventClock`] keeps the anchors: the rate of the event clock
//! against `%globaltimer` is fitted over a baseline of at least [`RATE_BASELINE_NS`] (they may be
//! one timer; nothing here assumes it), and the track states its accuracy from what the anchors
//! showed: the widest anchor taken (half its window plus the resolution), plus the largest drift
//! seen between anchors, plus the `f32` rounding of the elapsed times read — on top of the
//! Vulkan clock's own accuracy, since the GPU timer then goes through it. Per scope: two event
//! records on the host (no kernel launch), two timestamp writes on the GPU; one event query and
//! two elapsed times when read.
//!
//! **Kernel stamps** (the default: the accuracy of the Vulkan clock). A scope launches a one-thread kernel before its work and another after it;
//! each stores `%globaltimer` into a slot of page-locked host memory mapped for the device. Exact
//! on the GPU timer (no anchor of its own), but each stamp is a kernel launch on the host (a few
//! µs) and a kernel on the GPU, on your stream's critical path. The slots are a ring
//! (`src/ring.rs`), two per scope. A slot is zero until its stamp lands (a timer reading is never
//! 0), so the host reads it without any event: non-zero means done. Once both of a scope's stamps
//! are read they are zeroed and the slots go back to the ring; a slot is handed out again only
//! after that.
//!
//! **One clock with Vulkan.** `%globaltimer` is the timer Vulkan's timestamps count (measured on
//! the H100 and H200: docs/ARCHITECTURE.md), so a GPU timer reading of `ns` is mapped as the
//! Vulkan timestamp `ns / timestampPeriod` through the Vulkan clock's anchors
//! ([`GpuClock::gpu_ns_to_host_ns`](crate::clock::GpuClock::gpu_ns_to_host_ns)): a CUDA scope and
//! a Vulkan scope compare with no host anchor between them. The CUDA device must be the
//! profiler's Vulkan GPU (same UUID): another GPU's timer is another clock.
//!
//! **Why PTX written by hand** ([`stamp_ptx`]): ten lines the driver compiles itself
//! (`cuModuleLoadData`), so the profiler needs no NVRTC (an engine may ship only the driver), no
//! compile at start-up and no compiler-versus-driver match.

use crate::clock::{
    accept_reanchor, fitted_rate, gpu_ns_to_ticks, host_now_ns, Anchor, ClockInfo, REFUSE_AT_MOST_NS,
};
use crate::error::{Error, Result};
use crate::model::{Access, Api, SyncKind, Track, TrackId};
use crate::profiler::{
    Gpu, GpuKind, Kind, Marks, Profiler, Resolved, Resource, ScopeCore, Semaphore, Shared, State, StreamOps,
};
use crate::ring::Ring;
use crate::streams::StreamHandle;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use vkhip_interop::cuda::{Cuda, CudaEvent, CudaHostMemory, CudaKernel};

/// How a CUDA stream's scopes are marked on the GPU ([`crate::Options::cuda_stamps`]; the module
/// note compares them). Parsed from and shown as `"events"` and `"kernel"`.
///
/// ```
/// use vkhip_profile::CudaStamps;
/// assert_eq!("kernel".parse::<CudaStamps>().unwrap(), CudaStamps::Kernel);
/// assert_eq!(CudaStamps::Events.to_string(), "events");
/// assert!("stamps".parse::<CudaStamps>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CudaStamps {
    /// Two CUDA events per scope, put on the GPU timer by periodic GPU anchors (a stamp kernel
    /// between two events): cheaper, less accurate. On an H200 (scripts/profile-check.sh,
    /// BENCHMARKS.md 2026-11-27) the example's frame cost 1.011× with it at 1024² against 1.038×
    /// with kernel stamps, but its stated accuracy was ±7.4 µs against ±3.6 µs.
    Events,
    /// Two one-thread kernels per scope, each storing `%globaltimer`: exact on the GPU timer,
    /// a kernel launch per mark. The default: its accuracy is the Vulkan clock's (±3.6 µs on the
    /// H200), which is what the checker's tolerance is; choose [`CudaStamps::Events`] where the
    /// two launches per scope cost more than a few µs of tolerance.
    #[default]
    Kernel,
}

impl CudaStamps {
    /// `"events"` or `"kernel"`.
    pub fn name(self) -> &'static str {
        match self {
            CudaStamps::Events => "events",
            CudaStamps::Kernel => "kernel",
        }
    }
}

impl fmt::Display for CudaStamps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CudaStamps {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        [CudaStamps::Events, CudaStamps::Kernel]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| Error::Invalid(format!("no CUDA stamp mode {s:?} (events or kernel)")))
    }
}

/// The stamp kernel's entry point.
pub const STAMP_ENTRY: &str = "vkhip_profile_stamp";

/// The stamp kernel for a device of compute capability `arch` (90 for sm_90): PTX ISA 6.3 for
/// `sm_75`, or for the device's own architecture below that (PTX runs on its target and every
/// newer GPU; sm_75 is the oldest architecture CUDA 13 still targets). One thread loads the
/// address it is given, reads `%globaltimer` and stores it there. NUL-terminated, as
/// `cuModuleLoadData` takes PTX.
///
/// ```
/// let ptx = vkhip_profile::cuda::stamp_ptx(90);
/// assert!(ptx.contains(".target sm_75") && ptx.contains("%globaltimer") && ptx.ends_with('\0'));
/// assert!(vkhip_profile::cuda::stamp_ptx(61).contains(".target sm_61"));
/// ```
pub fn stamp_ptx(arch: u32) -> String {
    let target = arch.clamp(30, 75);
    format!(
        "//\n\
         // vkhip-profile: one thread stores the GPU's nanosecond timer at the address it is given\n\
         // (a slot of page-locked host memory mapped for the device).\n\
         //\n\
         .version 6.3\n\
         .target sm_{target}\n\
         .address_size 64\n\
         \n\
         .visible .entry {STAMP_ENTRY}(\n\
         \t.param .u64 slot\n\
         )\n\
         {{\n\
         \t.reg .b64 %rd<3>;\n\
         \tld.param.u64 %rd1, [slot];\n\
         \tmov.u64 %rd2, %globaltimer;\n\
         \tst.volatile.u64 [%rd1], %rd2;\n\
         \tret;\n\
         }}\n\0"
    )
}

/// A stamp pair as read back: both landed (non-zero), or not yet.
///
/// ```
/// use vkhip_profile::cuda::stamp_pair;
/// assert_eq!(stamp_pair(100, 250), Some((100, 250)));
/// assert_eq!(stamp_pair(0, 250), None); // the begin stamp has not landed yet
/// assert_eq!(stamp_pair(100, 0), None);
/// ```
pub fn stamp_pair(begin: u64, end: u64) -> Option<(u64, u64)> {
    (begin != 0 && end != 0).then_some((begin, end))
}

/// The resolution of a CUDA event's elapsed time as CUDA documents `cuEventElapsedTime` ("a
/// resolution of around 0.5 microseconds"), ns. Not measured here: it is part of every stated
/// accuracy of an events track.
pub const EVENT_RESOLUTION_NS: u64 = 500;

/// How often a CUDA stream in events mode re-takes its GPU anchor (at a scope's begin, once due),
/// ns.
pub const EVENT_REANCHOR_NS: u64 = 50_000_000;

/// How soon a refused anchor (a window much wider than the recent narrowest) is tried again, ns.
pub const EVENT_RETRY_NS: u64 = 5_000_000;

/// The event clock's rate against `%globaltimer` is fitted only over at least this much GPU time
/// (until then the nominal rate, 1, is kept): over a baseline of `T`, anchors of ±`u` leave a
/// rate error of at most `2u / T` — 4 ppm for ±2 µs over a second, 0.2 µs over the 50 ms to the
/// next anchor.
pub const RATE_BASELINE_NS: u64 = 1_000_000_000;

/// Anchors older than this are not fitted against (the rate follows a slow change), ns.
pub const RATE_BASELINE_MAX_NS: u64 = 10_000_000_000;

/// The nanoseconds an elapsed time of `ms` milliseconds (`cuEventElapsedTime`) is, rounded;
/// negative when the end came first.
///
/// ```
/// use vkhip_profile::cuda::elapsed_ns;
/// assert_eq!(elapsed_ns(0.0025), 2_500);
/// assert_eq!(elapsed_ns(-1.5), -1_500_000);
/// ```
pub fn elapsed_ns(ms: f32) -> i64 {
    (f64::from(ms) * 1e6).round() as i64
}

/// The most an `f32` of `ms` milliseconds can be off the time it rounded, ns (half the spacing of
/// `f32` values there, rounded up): 2 ns at 50 ms, 31 ns at 1 s.
///
/// ```
/// use vkhip_profile::cuda::elapsed_rounding_ns;
/// assert_eq!(elapsed_rounding_ns(0.003), 1); // a few µs: well under a nanosecond
/// assert_eq!(elapsed_rounding_ns(50.0), 2);
/// assert_eq!(elapsed_rounding_ns(-1000.0), 31);
/// ```
pub fn elapsed_rounding_ns(ms: f32) -> u64 {
    let x = ms.abs();
    if x == 0.0 {
        return 0;
    }
    if !x.is_finite() {
        return u64::MAX / 4;
    }
    let spacing = f64::from(f32::from_bits(x.to_bits() + 1)) - f64::from(x);
    (spacing * 1e6 / 2.0).ceil() as u64
}

/// The GPU anchor of an events track: event A was recorded, then the stamp kernel stored
/// `%globaltimer` = `stamp_ns`, then event B; `window_ms` = elapsed(A, B), and `device` is A's
/// reading on the track's event clock (the elapsed times summed since the first anchor).
///
/// A's GPU time is the midpoint, `stamp_ns − window / 2`: the stamp was taken somewhere between
/// A and B. Its error is under half the window plus [`EVENT_RESOLUTION_NS`] (a window and the
/// elapsed time of a later event, each read with that resolution, together move a mapped event
/// by less than half the window plus one resolution), plus the window's `f32` rounding. In the
/// returned [`Anchor`], `host_ns` holds the GPU timer's ns: the clock events are mapped onto.
///
/// ```
/// use vkhip_profile::cuda::{event_anchor, EVENT_RESOLUTION_NS};
/// // A stamp of 10 ms in a 3 µs window: A was at 10 ms − 1.5 µs, to within 1.5 µs + 0.5 µs.
/// let a = event_anchor(7, 10_000_000, 0.003);
/// assert_eq!((a.device, a.host_ns), (7, 9_998_500));
/// assert_eq!(a.accuracy_ns, 1_500 + EVENT_RESOLUTION_NS + 1);
/// ```
pub fn event_anchor(device: u64, stamp_ns: u64, window_ms: f32) -> Anchor {
    let window = elapsed_ns(window_ms).max(0) as u64;
    let half = window / 2;
    Anchor {
        device,
        host_ns: stamp_ns.saturating_sub(half),
        ns_per_unit: 1.0,
        accuracy_ns: (window - half) + EVENT_RESOLUTION_NS + elapsed_rounding_ns(window_ms),
    }
}

/// At most this many recent anchors are kept to judge a new one against.
const RECENT_ANCHORS: usize = 256;

/// An events track's clock: readings of the event clock (ns summed from elapsed times since the
/// first anchor; a wrapping `u64`, so it maps across a wrap) put on the GPU timer through the
/// anchors [`event_anchor`] makes. Pure: tested without a GPU.
///
/// Each anchor offered ([`EventClock::offer`]) is taken unless its window is much wider than the
/// narrowest offered within the last [`REFUSE_AT_MOST_NS`] of GPU time ([`accept_reanchor`]: the
/// stream was preempted inside it; after that long without an anchor, the next is taken). A
/// taken anchor becomes the current one; where the current anchor had put it, against where it
/// was measured, is the drift. The rate is fitted against the oldest anchor taken within
/// [`RATE_BASELINE_MAX_NS`], once that is [`RATE_BASELINE_NS`] old. The stated accuracy
/// ([`EventClock::accuracy_ns`]) is the widest anchor taken, plus the largest drift seen, plus the
/// largest `f32` rounding of an elapsed time read.
///
/// ```
/// use vkhip_profile::cuda::{event_anchor, EventClock};
/// // The first anchor: event clock 0 is GPU time 1 s (a 2 µs window around a stamp at 1 s + 1 µs).
/// let mut clock = EventClock::new(event_anchor(0, 1_000_001_000, 0.002));
/// assert_eq!(clock.map(0, 0.002), 1_000_002_000); // an event 2 µs after the anchor's A
/// // 50 ms later on both clocks: taken, no drift.
/// assert!(clock.offer(event_anchor(50_000_000, 1_050_001_000, 0.002)));
/// assert_eq!(clock.drift_ns(), 0);
/// // Half the window, the resolution, and (each under 1 ns) the window's and the event's rounding.
/// assert_eq!(clock.accuracy_ns(), 1_000 + 500 + 1 + 1);
/// ```
#[derive(Clone, Debug)]
pub struct EventClock {
    current: Anchor,
    /// Anchors taken within [`RATE_BASELINE_MAX_NS`] of the newest, oldest first.
    history: VecDeque<Anchor>,
    /// The anchors offered within the last [`REFUSE_AT_MOST_NS`] (GPU ns, accuracy).
    recent: VecDeque<(u64, u64)>,
    max_drift_ns: u64,
    widest_ns: u64,
    rounding_ns: u64,
    anchors: u64,
    refused: u64,
    fitted: bool,
}

impl EventClock {
    /// Start from `first` (its `host_ns`: GPU timer ns).
    pub fn new(first: Anchor) -> Self {
        EventClock {
            current: first,
            history: VecDeque::from([first]),
            recent: VecDeque::from([(first.host_ns, first.accuracy_ns)]),
            max_drift_ns: 0,
            widest_ns: first.accuracy_ns,
            rounding_ns: 0,
            anchors: 1,
            refused: 0,
            fitted: false,
        }
    }

    /// An anchor read back: taken (true) or refused as too wide.
    pub fn offer(&mut self, anchor: Anchor) -> bool {
        while self.recent.len() >= RECENT_ANCHORS
            || self
                .recent
                .front()
                .is_some_and(|(at, _)| anchor.host_ns.saturating_sub(*at) > REFUSE_AT_MOST_NS)
        {
            self.recent.pop_front();
        }
        self.recent.push_back((anchor.host_ns, anchor.accuracy_ns));
        let best = self.recent.iter().map(|r| r.1).min().unwrap_or(anchor.accuracy_ns);
        let since = anchor.host_ns.saturating_sub(self.current.host_ns);
        if !accept_reanchor(anchor.accuracy_ns, best, since) {
            self.refused += 1;
            return false;
        }
        let predicted = self.current.to_host_ns(anchor.device, u64::MAX);
        self.max_drift_ns = self.max_drift_ns.max(predicted.abs_diff(anchor.host_ns));
        while self.history.len() > 1
            && self
                .history
                .front()
                .is_some_and(|a| anchor.host_ns.saturating_sub(a.host_ns) > RATE_BASELINE_MAX_NS)
        {
            self.history.pop_front();
        }
        let mut next = anchor;
        next.ns_per_unit = self.current.ns_per_unit;
        if let Some(base) =
            self.history.front().filter(|a| anchor.host_ns.saturating_sub(a.host_ns) >= RATE_BASELINE_NS)
        {
            if let Some(rate) = fitted_rate(base, &anchor, 1.0, u64::MAX) {
                next.ns_per_unit = rate;
                self.fitted = true;
            }
        }
        self.widest_ns = self.widest_ns.max(anchor.accuracy_ns);
        self.history.push_back(anchor);
        self.current = next;
        self.anchors += 1;
        true
    }

    /// Nanoseconds of an elapsed time read (`cuEventElapsedTime`), its rounding counted in the
    /// stated accuracy.
    pub fn elapsed(&mut self, ms: f32) -> i64 {
        self.rounding_ns = self.rounding_ns.max(elapsed_rounding_ns(ms));
        elapsed_ns(ms)
    }

    /// The GPU timer ns of an event `ms` milliseconds after a base whose event-clock reading is
    /// `base`.
    pub fn map(&mut self, base: u64, ms: f32) -> u64 {
        let device = base.wrapping_add_signed(self.elapsed(ms));
        self.current.to_host_ns(device, u64::MAX)
    }

    /// The stated error of a mapped time on the GPU timer, ns: the widest anchor taken, plus the
    /// largest drift seen between anchors, plus the largest `f32` rounding of an elapsed time.
    pub fn accuracy_ns(&self) -> u64 {
        self.widest_ns + self.max_drift_ns + self.rounding_ns
    }

    /// The largest drift seen between two anchors, ns.
    pub fn drift_ns(&self) -> u64 {
        self.max_drift_ns
    }

    /// The widest anchor taken (half its window plus the resolution), ns.
    pub fn widest_ns(&self) -> u64 {
        self.widest_ns
    }

    /// Anchors taken, and refused as too wide.
    pub fn anchors(&self) -> (u64, u64) {
        (self.anchors, self.refused)
    }

    /// The event clock's rate against the GPU timer in use (ns per event-clock ns), and whether
    /// it was fitted (else the nominal 1).
    pub fn rate(&self) -> (f64, bool) {
        (self.current.ns_per_unit, self.fitted)
    }

    /// The current anchor.
    pub fn anchor(&self) -> &Anchor {
        &self.current
    }
}

/// The stamp side of a CUDA stream track in [`CudaStamps::Kernel`] mode; lives in the profiler's
/// state.
pub(crate) struct StampTrack {
    memory: CudaHostMemory,
    pub(crate) ring: Ring,
}

impl StampTrack {
    /// The slot's word.
    fn word(&self, c: u64) -> *mut u64 {
        let i = self.ring.index(c) as usize;
        // SAFETY: `i` < capacity, and the memory holds capacity u64s (made so in cuda_stream);
        // page-locked allocations are page aligned, so every slot is 8-byte aligned.
        unsafe { self.memory.as_mut_ptr().cast::<u64>().add(i) }
    }

    fn read(&self, c: u64) -> u64 {
        // SAFETY: a slot of the live allocation (`word`); volatile, because the device writes
        // it outside Rust's view; an aligned 8-byte load is one access on every 64-bit host.
        unsafe { self.word(c).read_volatile() }
    }

    fn resolve(&mut self, marks: Marks, gpu: &Gpu) -> Resolved {
        match stamp_pair(self.read(marks.begin), self.read(marks.end)) {
            Some((b, e)) => {
                let mut t = [gpu_ns_to_ticks(b, gpu.clock.period()), gpu_ns_to_ticks(e, gpu.clock.period())];
                gpu.clock.map_all(&mut t);
                Resolved::Times(t[0], t[1])
            }
            None => Resolved::Pending,
        }
    }

    fn release(&mut self, marks: Marks) {
        for c in [marks.begin, marks.end] {
            // SAFETY: the slot's stamp was read (or given up on); no launch targets it until the
            // ring hands it out again, after this store.
            unsafe { self.word(c).write_volatile(0) };
            self.ring.release(c);
        }
    }
}

/// The event pool's bookkeeping, apart from the events (pure: tested without a GPU). Events are
/// handed out two per scope from a ring; a scope's events come back once it was read — or, for
/// a scope given up on, once `cuEventQuery` says each is complete (until then they are held
/// back, and re-checked on every read): an event is never recorded again while a record of it
/// is pending.
#[derive(Debug)]
pub(crate) struct EventRing {
    pub(crate) ring: Ring,
    /// Counters of events given back while their record may be pending.
    held: Vec<u64>,
}

impl EventRing {
    pub(crate) fn new(capacity: u32) -> Self {
        EventRing { ring: Ring::new(capacity), held: Vec::new() }
    }

    /// Two events for a new scope, or `None` while the ring is full.
    pub(crate) fn alloc(&mut self) -> Option<Marks> {
        self.ring.alloc(2).map(|c| Marks { begin: c, end: c + 1 })
    }

    /// Give back a scope's events; `read`: both were read complete. Otherwise each goes back once
    /// `complete(index)` says so (now, or on a later [`EventRing::recheck`]).
    pub(crate) fn release(&mut self, marks: Marks, read: bool, mut complete: impl FnMut(u32) -> bool) {
        for c in [marks.begin, marks.end] {
            if read || complete(self.ring.index(c)) {
                self.ring.release(c);
            } else {
                self.held.push(c);
            }
        }
    }

    /// Give back the held events that are complete now.
    pub(crate) fn recheck(&mut self, mut complete: impl FnMut(u32) -> bool) {
        let ring = &mut self.ring;
        self.held.retain(|&c| {
            let done = complete(ring.index(c));
            if done {
                ring.release(c);
            }
            !done
        });
    }
}

/// Anchor tries when the track is made; the narrowest window is the first anchor.
const FIRST_ANCHOR_TRIES: usize = 5;

/// One anchor's events: A before the stamp kernel, B after it.
struct AnchorEvents {
    a: CudaEvent,
    b: CudaEvent,
}

/// The event side of a CUDA stream track in [`CudaStamps::Events`] mode; lives in the profiler's
/// state.
pub(crate) struct EventTrack {
    name: String,
    events: Vec<CudaEvent>,
    pub(crate) pool: EventRing,
    kernel: CudaKernel,
    /// Two stamp slots (one per anchor slot) of page-locked memory mapped for the device.
    stamps: CudaHostMemory,
    /// Two anchor slots: the base (the newest anchor read, whose A every elapsed time is taken
    /// from) and the one in flight.
    anchors: [AnchorEvents; 2],
    base: usize,
    /// The event-clock reading of the base's A.
    device_at_base: u64,
    /// An anchor enqueued and not read yet (its slot: the one that is not the base).
    pending: bool,
    /// When the last anchor was enqueued (host ns), moved back when one was refused.
    taken_at_ns: u64,
    pub(crate) clock: EventClock,
}

/// Enqueue the stamp kernel on `cuda`'s stream, storing `%globaltimer` at `address`.
fn launch_stamp(cuda: &Cuda, kernel: &CudaKernel, address: u64) -> Result<()> {
    let mut address = address;
    let mut args = [(&mut address as *mut u64).cast::<c_void>()];
    // SAFETY: the stamp kernel takes one u64 (the slot's address), loaded through `cuda`; the
    // address is a slot of page-locked memory the profiler's state keeps until the stream is
    // idle (the memory's drop waits for the stream), mapped for the device at its host address;
    // the kernel writes those 8 bytes only.
    unsafe { cuda.launch(kernel, [1, 1, 1], [1, 1, 1], &mut args) }?;
    Ok(())
}

impl EventTrack {
    fn new(name: &str, cuda: &Cuda, kernel: CudaKernel, capacity: u32) -> Result<Self> {
        let events = (0..capacity).map(|_| cuda.event(true)).collect::<vkhip_interop::Result<Vec<_>>>()?;
        let anchors = [
            AnchorEvents { a: cuda.event(true)?, b: cuda.event(true)? },
            AnchorEvents { a: cuda.event(true)?, b: cuda.event(true)? },
        ];
        let stamps = cuda.alloc_host(16)?;
        let mut track = EventTrack {
            name: name.into(),
            events,
            pool: EventRing::new(capacity),
            kernel,
            stamps,
            anchors,
            base: 0,
            device_at_base: 0,
            pending: false,
            taken_at_ns: host_now_ns(),
            clock: EventClock::new(Anchor { device: 0, host_ns: 0, ns_per_unit: 1.0, accuracy_ns: 0 }),
        };
        // The first anchor: the narrowest of a few, each waited for (the stream should be idle).
        let mut best: Option<Anchor> = None;
        for i in 0..FIRST_ANCHOR_TRIES {
            let slot = i % 2;
            track.enqueue_anchor(cuda, slot)?;
            track.anchors[slot].b.synchronize()?;
            let (stamp, window) = track.read_anchor(slot)?.ok_or_else(|| {
                vkhip_interop::Error::unsupported(
                    vkhip_interop::Api::Cuda,
                    "the stamp kernel stored nothing before the event after it completed",
                )
            })?;
            let device = if i == 0 {
                0
            } else {
                let ms = track.anchors[1 - slot].a.elapsed_ms(&track.anchors[slot].a)?;
                track.device_at_base.wrapping_add_signed(elapsed_ns(ms))
            };
            let anchor = event_anchor(device, stamp, window);
            if best.is_none_or(|b| anchor.accuracy_ns < b.accuracy_ns) {
                best = Some(anchor);
            }
            (track.base, track.device_at_base) = (slot, device);
        }
        if let Some(best) = best {
            track.clock = EventClock::new(best);
        }
        track.taken_at_ns = host_now_ns();
        Ok(track)
    }

    fn stamp_word(&self, slot: usize) -> *mut u64 {
        // SAFETY: the memory holds two u64s (16 bytes, page aligned), slot < 2.
        unsafe { self.stamps.as_mut_ptr().cast::<u64>().add(slot) }
    }

    /// Enqueue anchor `slot`: A, the stamp kernel, B.
    fn enqueue_anchor(&mut self, cuda: &Cuda, slot: usize) -> Result<()> {
        // SAFETY: a slot of the live allocation (`stamp_word`), not targeted by any pending
        // launch: the slot's last anchor was read, or waited for.
        unsafe { self.stamp_word(slot).write_volatile(0) };
        cuda.record(&self.anchors[slot].a)?;
        launch_stamp(cuda, &self.kernel, self.stamps.device_ptr() + 8 * slot as u64)?;
        cuda.record(&self.anchors[slot].b)?;
        Ok(())
    }

    /// Anchor `slot`'s stamp and window, once B completed and the stamp landed.
    fn read_anchor(&self, slot: usize) -> Result<Option<(u64, f32)>> {
        if !self.anchors[slot].b.query()? {
            return Ok(None);
        }
        // SAFETY: a slot of the live allocation; volatile: the device wrote it outside Rust's
        // view (its kernel completed before B).
        let stamp = unsafe { self.stamp_word(slot).read_volatile() };
        if stamp == 0 {
            return Ok(None);
        }
        Ok(Some((stamp, self.anchors[slot].a.elapsed_ms(&self.anchors[slot].b)?)))
    }

    /// At a scope's begin: enqueue an anchor when one is due and none is in flight.
    fn anchor_if_due(&mut self, cuda: &Cuda, now: u64) -> Result<()> {
        if self.pending || now.saturating_sub(self.taken_at_ns) < EVENT_REANCHOR_NS {
            return Ok(());
        }
        self.taken_at_ns = now;
        self.enqueue_anchor(cuda, 1 - self.base)?;
        self.pending = true;
        Ok(())
    }

    /// Read the anchor in flight, if it is done, and give back held events that completed.
    fn refresh(&mut self) -> Result<()> {
        let events = &self.events;
        self.pool.recheck(|i| events[i as usize].query().unwrap_or(true));
        if !self.pending {
            return Ok(());
        }
        let slot = 1 - self.base;
        let read = self.read_anchor(slot).and_then(|done| {
            let Some(stamp_window) = done else { return Ok(None) };
            let ms = self.anchors[self.base].a.elapsed_ms(&self.anchors[slot].a)?;
            Ok(Some((stamp_window, ms)))
        });
        let ((stamp, window), since_base) = match read {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(()),
            Err(e) => {
                // Given up on: the next one is enqueued when due.
                self.pending = false;
                return Err(e);
            }
        };
        let device = self.device_at_base.wrapping_add_signed(self.clock.elapsed(since_base));
        if !self.clock.offer(event_anchor(device, stamp, window)) {
            self.taken_at_ns = host_now_ns().saturating_sub(EVENT_REANCHOR_NS - EVENT_RETRY_NS);
        }
        (self.base, self.device_at_base, self.pending) = (slot, device, false);
        Ok(())
    }

    fn resolve(&mut self, marks: Marks, gpu: &Gpu) -> Resolved {
        let (b, e) = (self.pool.ring.index(marks.begin) as usize, self.pool.ring.index(marks.end) as usize);
        // Stream order: once the end event is complete, so is the begin.
        match self.events[e].query() {
            Ok(true) => {}
            Ok(false) => return Resolved::Pending,
            Err(_) => return Resolved::Lost,
        }
        let base = &self.anchors[self.base].a;
        let (Ok(mb), Ok(me)) = (base.elapsed_ms(&self.events[b]), base.elapsed_ms(&self.events[e])) else {
            return Resolved::Lost;
        };
        let period = gpu.clock.period();
        let mut t = [
            gpu_ns_to_ticks(self.clock.map(self.device_at_base, mb), period),
            gpu_ns_to_ticks(self.clock.map(self.device_at_base, me), period),
        ];
        gpu.clock.map_all(&mut t);
        Resolved::Times(t[0], t[1])
    }

    fn release(&mut self, marks: Marks, read: bool) {
        let events = &self.events;
        self.pool.release(marks, read, |i| events[i as usize].query().unwrap_or(true));
    }

    fn clock_info(&self, gpu: &Gpu) -> ClockInfo {
        let (anchors, refused) = self.clock.anchors();
        let (rate, fitted) = self.clock.rate();
        let rate = if fitted {
            format!("rate fitted: {:+.2} ppm", (rate - 1.0) * 1e6)
        } else {
            "rate 1 (not fitted yet)".into()
        };
        let us = |ns: u64| format!("{:.1} µs", ns as f64 / 1e3);
        ClockInfo {
            method: format!(
                "CUDA \"{}\": events on the GPU timer through a %globaltimer stamp between two events, re-anchored every {} ms ({anchors} anchors, {refused} refused as too wide; widest ±{} incl. {} ns event resolution; drift {}; {rate}), then the Vulkan clock (±{})",
                self.name,
                EVENT_REANCHOR_NS / 1_000_000,
                us(self.clock.widest_ns()),
                EVENT_RESOLUTION_NS,
                us(self.clock.drift_ns()),
                us(gpu.clock.accuracy_ns()),
            ),
            accuracy_ns: self.clock.accuracy_ns() + gpu.clock.accuracy_ns(),
            drift_ns: self.clock.drift_ns(),
            anchors,
        }
    }
}

/// A CUDA stream track's GPU side, in either mode.
pub(crate) enum CudaTrack {
    Kernel(StampTrack),
    Events(Box<EventTrack>),
}

impl GpuKind for CudaTrack {
    fn kind_refresh(&mut self, _gpu: Option<&Gpu>) -> Result<()> {
        self.refresh()
    }

    fn kind_resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved {
        self.resolve(marks, gpu)
    }

    fn kind_release(&mut self, marks: Marks, read: bool, _gpu: Option<&Gpu>) {
        self.release(marks, read)
    }

    fn kind_accuracy(&self, vulkan_ns: Option<u64>, _last: bool) -> Option<(u64, Option<String>)> {
        vulkan_ns.map(|ns| (self.accuracy_ns(ns), None))
    }

    fn kind_clock_info(&self, gpu: Option<&Gpu>) -> Option<ClockInfo> {
        gpu.and_then(|g| self.clock_info(g))
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl CudaTrack {
    pub(crate) fn refresh(&mut self) -> Result<()> {
        match self {
            CudaTrack::Kernel(_) => Ok(()),
            CudaTrack::Events(e) => e.refresh(),
        }
    }

    pub(crate) fn resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved {
        let Some(gpu) = gpu else { return Resolved::Lost };
        match self {
            CudaTrack::Kernel(k) => k.resolve(marks, gpu),
            CudaTrack::Events(e) => e.resolve(marks, gpu),
        }
    }

    /// Give back a scope's marks; `read`: its results were read.
    pub(crate) fn release(&mut self, marks: Marks, read: bool) {
        match self {
            CudaTrack::Kernel(k) => k.release(marks),
            CudaTrack::Events(e) => e.release(marks, read),
        }
    }

    /// The stated accuracy of the track's times, given the Vulkan clock's: that, plus the
    /// events' anchors.
    pub(crate) fn accuracy_ns(&self, vulkan_ns: u64) -> u64 {
        match self {
            CudaTrack::Kernel(_) => vulkan_ns,
            CudaTrack::Events(e) => vulkan_ns + e.clock.accuracy_ns(),
        }
    }

    /// How an events track's times were mapped (none for kernel stamps: they are the GPU clock's).
    pub(crate) fn clock_info(&self, gpu: &Gpu) -> Option<ClockInfo> {
        match self {
            CudaTrack::Kernel(_) => None,
            CudaTrack::Events(e) => Some(e.clock_info(gpu)),
        }
    }
}

/// A CUDA stream's track ([`Profiler::cuda_stream`]): scopes around work enqueued on the
/// stream, and the stream's semaphore waits and signals. Borrows the [`Cuda`] it records on.
pub struct CudaStream<'c> {
    shared: Option<Arc<Shared>>,
    track: TrackId,
    cuda: &'c Cuda,
    /// Kernel stamps: the kernel and the device address of slot index 0 (launched outside the
    /// profiler's lock). Events: `None` (the events live in the track, recorded under the lock).
    stamps: Option<(CudaKernel, u64)>,
}

impl Profiler {
    /// A track for `cuda`'s stream, marked as [`crate::Options::cuda_stamps`] says: loads the
    /// stamp kernel, and makes [`crate::Options::events_per_stream`] timing events and takes the
    /// first GPU anchor (events: the stream should be idle), or allocates
    /// [`crate::Options::stamps_per_stream`] slots of page-locked memory (kernel stamps). `cuda`
    /// must be the profiler's Vulkan GPU (its timer is the Vulkan clock).
    ///
    /// Several tracks may record one stream, and CUDA's two default streams may both have
    /// tracks: what CUDA orders between them is recorded ([`crate::streams`]). A track on the
    /// legacy default stream beside one on any other stream but the per-thread default one is
    /// refused ([`Error::Invalid`]): whether that stream synchronises with the legacy one is not
    /// known here.
    pub fn cuda_stream<'c>(&self, name: &str, cuda: &'c Cuda) -> Result<CudaStream<'c>> {
        let Some((s, gpu)) = self.require_gpu("a CUDA stream track")? else {
            return Ok(CudaStream { shared: None, track: TrackId(0), cuda, stamps: None });
        };
        if cuda.info().uuid != gpu.device.uuid() {
            return Err(Error::Invalid(format!(
                "{} is not the profiler's Vulkan GPU ({}): its timer is another clock; open CUDA with vulkan::Device::uuid()",
                cuda.describe(),
                gpu.device.describe()
            )));
        }
        let handle = StreamHandle::of(cuda.stream());
        s.lock().admit_stream(name, handle)?; // before anything is made on the stream
        let kernel = cuda.load_module(stamp_ptx(cuda.info().arch()).as_bytes())?.function(STAMP_ENTRY)?;
        let (kind, clock, stamps) = match s.options.cuda_stamps {
            CudaStamps::Kernel => {
                let capacity = s.options.stamps_per_stream.max(2);
                let memory = cuda.alloc_host(u64::from(capacity) * 8)?;
                let base = memory.device_ptr();
                let clock = format!("%globaltimer stamps on the Vulkan clock: {}", gpu.clock.method());
                (
                    CudaTrack::Kernel(StampTrack { memory, ring: Ring::new(capacity) }),
                    clock,
                    Some((kernel, base)),
                )
            }
            CudaStamps::Events => {
                let events = EventTrack::new(name, cuda, kernel, s.options.events_per_stream.max(2))?;
                let clock = format!(
                    "CUDA events on the GPU timer (a %globaltimer stamp between two events, re-anchored every {} ms), on the Vulkan clock: {}",
                    EVENT_REANCHOR_NS / 1_000_000,
                    gpu.clock.method()
                );
                (CudaTrack::Events(Box::new(events)), clock, None)
            }
        };
        let accuracy_ns = kind.accuracy_ns(gpu.clock.accuracy_ns());
        let track = s.lock().add_stream_track(
            Track { name: name.into(), api: Api::Cuda, clock, accuracy_ns, clock_domain: Some(0) },
            Kind::Gpu(Box::new(kind)),
            handle,
        )?;
        Ok(CudaStream { shared: Some(s.clone()), track, cuda, stamps })
    }
}

impl CudaStream<'_> {
    /// The track's GPU side.
    fn gpu_side<'a>(&self, st: &'a mut State) -> Option<&'a mut CudaTrack> {
        st.tracks[self.track.0 as usize].kind.gpu_mut::<CudaTrack>()
    }

    /// Open a scope: the stream is marked now (an event, or a stamp kernel), and again when the
    /// guard is dropped (or [`CudaScope::end`]); enqueue the scope's work between the two. Scopes
    /// nest.
    pub fn scope(&self, name: &str) -> Result<CudaScope<'_>> {
        let Some(s) = &self.shared else { return Ok(CudaScope::inert(self)) };
        let now = host_now_ns();
        let mut st = s.lock();
        if st.finished {
            return Ok(CudaScope::inert(self));
        }
        // Events are recorded here, under the lock; a stamp kernel is launched after it.
        let marked = match self.gpu_side(&mut st) {
            Some(CudaTrack::Events(ev)) => {
                ev.anchor_if_due(self.cuda, now)?;
                ev.pool.alloc().map(|marks| {
                    let (b, e) = (ev.pool.ring.index(marks.begin), ev.pool.ring.index(marks.end));
                    (marks, b, e, Some(self.cuda.record(&ev.events[b as usize])))
                })
            }
            Some(CudaTrack::Kernel(k)) => k.ring.alloc(2).map(|c| {
                let marks = Marks { begin: c, end: c + 1 };
                (marks, k.ring.index(marks.begin), k.ring.index(marks.end), None)
            }),
            None => return Ok(CudaScope::inert(self)),
        };
        let Some((marks, begin, end, recorded)) = marked else {
            st.stats.dropped_full += 1;
            return Ok(CudaScope::inert(self));
        };
        let id = self.ops().begin(&mut st, name, marks, now);
        drop(st);
        let mut guard = CudaScope {
            stream: self,
            end: Some(end),
            core: ScopeCore {
                shared: Some(s.clone()),
                track: self.track,
                id,
                accesses: Vec::new(),
                closed: false,
            },
        };
        let result = match (recorded, &self.stamps) {
            (Some(recorded), _) => recorded.map_err(Error::from),
            (None, Some((kernel, base))) => launch_stamp(self.cuda, kernel, base + u64::from(begin) * 8),
            (None, None) => Ok(()),
        };
        if let Err(e) = result {
            guard.end = None;
            guard.core.fail();
            return Err(e);
        }
        Ok(guard)
    }

    /// A host track recording work here orders it after what the host did before.
    fn ops(&self) -> StreamOps<'_> {
        StreamOps { shared: &self.shared, track: self.track }
    }

    /// The stream waits (`cuWaitExternalSemaphoresAsync`, enqueued by you, in this order with
    /// the stream's scopes) until `semaphore` reaches `value`.
    pub fn wait(&self, semaphore: &Semaphore, value: u64) {
        self.ops().sync(semaphore, value, SyncKind::Wait);
    }

    /// The stream signals `semaphore` = `value` (`cuSignalExternalSemaphoresAsync`, enqueued by
    /// you, in this order with the stream's scopes).
    pub fn signal(&self, semaphore: &Semaphore, value: u64) {
        self.ops().sync(semaphore, value, SyncKind::Signal);
    }

    /// The calling thread (a host track) waited for everything enqueued on the stream so far
    /// (`Cuda::synchronize`, or an event recorded last).
    pub fn synchronized(&self) {
        self.ops().synchronized();
    }

    /// The track's id in the timeline.
    pub fn track(&self) -> TrackId {
        self.track
    }
}

impl Drop for CudaStream<'_> {
    fn drop(&mut self) {
        // Its handle may name another stream from now on (crate::streams).
        self.ops().dropped();
    }
}

/// A scope on a CUDA stream: from [`CudaStream::scope`] until dropped or [`CudaScope::end`];
/// each marks the stream (an event, or a stamp kernel).
#[must_use = "a scope ends when its guard is dropped: bind it (`let _s = …`)"]
pub struct CudaScope<'s> {
    stream: &'s CudaStream<'s>,
    /// The end mark's index: an event of the pool, or a stamp slot.
    end: Option<u32>,
    core: ScopeCore,
}

impl<'s> CudaScope<'s> {
    fn inert(stream: &'s CudaStream<'s>) -> Self {
        CudaScope { stream, end: None, core: ScopeCore::inert() }
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

    /// End the scope now: its end mark is enqueued; a failed record or launch is returned.
    pub fn end(mut self) -> Result<()> {
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        let (Some(end), Some(s)) = (self.end.take(), &self.stream.shared) else { return Ok(()) };
        let result = match &self.stream.stamps {
            Some((kernel, base)) => launch_stamp(self.stream.cuda, kernel, base + u64::from(end) * 8),
            None => match self.stream.gpu_side(&mut s.lock()) {
                Some(CudaTrack::Events(ev)) => {
                    self.stream.cuda.record(&ev.events[end as usize]).map_err(Error::from)
                }
                _ => Ok(()),
            },
        };
        match result {
            Ok(()) => self.core.close(None),
            Err(_) => self.core.fail(),
        }
        result
    }
}

impl Drop for CudaScope<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("vkhip-profile: a CUDA scope's end mark failed (the scope is dropped): {e}");
            self.core.count_failed_end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_kernel_reads_the_timer_and_stores_it_at_its_argument() {
        let ptx = stamp_ptx(90);
        let lines: Vec<&str> = ptx.trim_end_matches('\0').lines().map(str::trim).collect();
        let at = |l: &str| lines.iter().position(|x| *x == l).unwrap_or_else(|| panic!("no `{l}` in\n{ptx}"));
        // Header: an ISA every driver since CUDA 10 reads, the target, 64-bit addresses.
        assert!(at(".version 6.3") < at(".target sm_75") && at(".target sm_75") < at(".address_size 64"));
        // One entry with one 64-bit parameter, the timer read before the store, nothing else.
        let entry = at(&format!(".visible .entry {STAMP_ENTRY}("));
        assert_eq!(lines[entry + 1], ".param .u64 slot");
        let load = at("ld.param.u64 %rd1, [slot];");
        let timer = at("mov.u64 %rd2, %globaltimer;");
        let store = at("st.volatile.u64 [%rd1], %rd2;");
        assert!(entry < load && load < timer && timer < store && store < at("ret;"));
        assert_eq!(ptx.matches("%globaltimer").count(), 1);
        assert!(!ptx.contains("%tid") && !ptx.contains("bar."), "one thread, no sync: {ptx}");
        // Braces balance; exactly one NUL, at the end (cuModuleLoadData reads PTX as a C string).
        assert_eq!(ptx.matches('{').count(), ptx.matches('}').count());
        assert_eq!(ptx.find('\0'), Some(ptx.len() - 1));
        // Targets: the device's own below sm_75, sm_75 from there up.
        for (arch, target) in [(52, 52), (61, 61), (70, 70), (75, 75), (86, 75), (90, 75), (120, 75)] {
            assert!(stamp_ptx(arch).contains(&format!(".target sm_{target}\n")), "{arch}");
        }
    }

    #[test]
    fn zero_means_pending_and_a_read_slot_is_zeroed_before_reuse() {
        // The ring and the zero rule without a GPU: a "device" writes slots in plain memory.
        let mut memory = [0u64; 4];
        let mut ring = Ring::new(4);
        let a = ring.alloc(2).unwrap();
        assert_eq!(stamp_pair(memory[ring.index(a) as usize], memory[ring.index(a + 1) as usize]), None);
        memory[ring.index(a) as usize] = 1_000; // the begin stamp landed
        assert_eq!(stamp_pair(memory[0], memory[1]), None, "the end has not");
        memory[ring.index(a + 1) as usize] = 1_500;
        assert_eq!(stamp_pair(memory[0], memory[1]), Some((1_000, 1_500)));
        // Read: zeroed, given back; the next lap finds them pending again.
        for c in [a, a + 1] {
            memory[ring.index(c) as usize] = 0;
            ring.release(c);
        }
        let _b = ring.alloc(2).unwrap();
        let c = ring.alloc(2).unwrap();
        assert_eq!((ring.index(c), memory[ring.index(c) as usize]), (0, 0));
    }

    /// A stream without a GPU: the GPU timer is the truth (ns); the event clock reads
    /// `(g − origin) × (1 + skew)` plus `start`, and each event's timestamp is floored to
    /// `quantum` ns (a coarse event timer), the elapsed times read as `f32` ms.
    struct Sim {
        origin: u64,
        start: u64,
        skew: f64,
        quantum: u64,
        seed: u64,
    }

    impl Sim {
        fn new(skew_ppm: f64, quantum: u64, start: u64) -> Self {
            Sim { origin: 5_000_000_000, start, skew: skew_ppm * 1e-6, quantum, seed: 0x9e37_79b9_7f4a_7c15 }
        }

        /// 0 ≤ r < n, pseudo-random.
        fn below(&mut self, n: u64) -> u64 {
            self.seed =
                self.seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.seed >> 33) % n.max(1)
        }

        /// The event clock's timestamp of an event at GPU time `g` (wrapping, like the readings).
        fn stamp_of(&self, g: u64) -> u64 {
            let units = ((g as f64 - self.origin as f64) * (1.0 + self.skew)).round() as i64;
            let t = self.start.wrapping_add_signed(units);
            t - t % self.quantum
        }

        /// cuEventElapsedTime from an event at GPU time `from` to one at `to`.
        fn elapsed_ms(&self, from: u64, to: u64) -> f32 {
            (self.stamp_of(to).wrapping_sub(self.stamp_of(from)) as i64 as f64 / 1e6) as f32
        }

        /// An anchor at GPU time `g` with a window of `window` ns, the stamp anywhere in it;
        /// `base`: the base anchor's GPU time and event-clock reading. Returns the anchor.
        fn anchor(&mut self, g: u64, window: u64, base: Option<(u64, u64)>) -> Anchor {
            let stamp = g + self.below(window + 1);
            let device = match base {
                Some((bg, bd)) => bd.wrapping_add_signed(elapsed_ns(self.elapsed_ms(bg, g))),
                None => self.start,
            };
            event_anchor(device, stamp, self.elapsed_ms(g, g + window))
        }
    }

    #[test]
    fn an_anchor_is_the_windows_midpoint_within_half_the_window_and_the_resolution() {
        // Every place of the stamp in the window, events at every phase of a 500 ns quantum:
        // the mapped event is never further from the truth than the stated accuracy, and the
        // worst case comes close to it (the bound is not loose).
        let mut worst = 0u64;
        for window in [1_000u64, 2_900, 3_000, 7_777] {
            for phase in (0..500).step_by(50) {
                for x in (0..=window).step_by(97) {
                    let sim = Sim::new(0.0, EVENT_RESOLUTION_NS, 1_000_000 + phase);
                    let g = sim.origin + 40_000_000;
                    let stamp = g + x;
                    let base = (sim.origin, sim.start);
                    let device = base.1.wrapping_add_signed(elapsed_ns(sim.elapsed_ms(base.0, g)));
                    let anchor = event_anchor(device, stamp, sim.elapsed_ms(g, g + window));
                    let mut clock = EventClock::new(anchor);
                    for later in [0u64, 123, 4_567, 250_000, 9_999_999] {
                        let e = g + later;
                        let mapped = clock.map(device, sim.elapsed_ms(g, e));
                        let error = mapped.abs_diff(e);
                        assert!(
                            error <= clock.accuracy_ns(),
                            "window {window}, x {x}, phase {phase}, +{later}: {error} ns off, stated {}",
                            clock.accuracy_ns()
                        );
                        worst = worst.max(error * 1000 / clock.accuracy_ns());
                    }
                }
            }
        }
        assert!(worst >= 800, "the worst case reaches {worst}‰ of the stated accuracy");
        // The midpoint itself, exactly.
        let a = event_anchor(0, 1_000_000, 0.004);
        assert_eq!((a.host_ns, a.accuracy_ns), (998_000, 2_000 + EVENT_RESOLUTION_NS + 1));
        // A window read as negative or zero (a coarse timer): the stamp itself, ± the resolution.
        let a = event_anchor(0, 1_000_000, 0.0);
        assert_eq!((a.host_ns, a.accuracy_ns), (1_000_000, EVENT_RESOLUTION_NS));
    }

    /// Run `sim` for `seconds` with an anchor every 50 ms (window 2–4 µs) and an event every
    /// 0.5 ms mapped through the newest anchor; returns the clock and the largest error seen,
    /// ns.
    fn run(sim: &mut Sim, seconds: u64, wide_every: Option<u64>) -> (EventClock, u64) {
        let g0 = sim.origin + 1_000_000;
        let first = sim.anchor(g0, 2_000, None);
        let (mut base_g, mut base_d) = (g0, first.device);
        let mut clock = EventClock::new(first);
        let mut worst = 0;
        let steps = seconds * 20;
        for k in 1..=steps {
            let g = g0 + k * EVENT_REANCHOR_NS;
            let window = match wide_every {
                Some(n) if k % n == 0 => 200_000, // preempted inside the window
                _ => 2_000 + sim.below(2_001),
            };
            let anchor = sim.anchor(g, window, Some((base_g, base_d)));
            clock.offer(anchor);
            (base_g, base_d) = (g, anchor.device);
            for j in 0..100 {
                let e = g + window + j * 500_000 + sim.below(400_000);
                let mapped = clock.map(base_d, sim.elapsed_ms(base_g, e));
                worst = worst.max(mapped.abs_diff(e));
            }
        }
        (clock, worst)
    }

    #[test]
    fn one_timer_maps_within_the_stated_accuracy_without_fitting_noise() {
        // The event clock is %globaltimer itself (no skew), with a 32 ns quantum.
        let mut sim = Sim::new(0.0, 32, 77);
        let (clock, worst) = run(&mut sim, 12, None);
        // Windows wider than the recent narrowest by half are refused (their next try comes 5 ms
        // later on a GPU); most are taken.
        let (anchors, refused) = clock.anchors();
        assert_eq!(anchors + refused, 12 * 20 + 1);
        assert!(refused < anchors / 3, "{anchors} taken, {refused} refused");
        assert!(worst <= clock.accuracy_ns(), "{worst} > {}", clock.accuracy_ns());
        // Windows of 2–4 µs: the widest anchor is at most 2 µs + 0.5 µs; the drift seen is the
        // anchors' own scatter (the rate fitted over ≥ 1 s adds next to nothing to it).
        assert!(clock.widest_ns() <= 2_000 + EVENT_RESOLUTION_NS + 1, "{}", clock.widest_ns());
        assert!(clock.drift_ns() <= 2 * 2_000 + 200, "drift {}", clock.drift_ns());
        let (rate, fitted) = clock.rate();
        assert!(fitted && (rate - 1.0).abs() < 5e-6, "rate {rate}");
    }

    #[test]
    fn a_skewed_event_clock_is_fitted_and_its_drift_stated() {
        // The event clock runs 25 ppm fast against %globaltimer: 1.25 µs per 50 ms until the
        // rate is fitted (after 1 s), which the drift states; after that, mapped times follow.
        let mut sim = Sim::new(25.0, 1, 0);
        let (clock, worst) = run(&mut sim, 12, None);
        assert!(worst <= clock.accuracy_ns(), "{worst} > {}", clock.accuracy_ns());
        assert!((1_000..=1_250 + 4_200).contains(&clock.drift_ns()), "drift {}", clock.drift_ns());
        let (rate, fitted) = clock.rate();
        assert!(fitted && (rate - 1.0 / 1.000025).abs() < 5e-6, "rate {rate}");
        // After the fit: a fresh run's late events are mapped within the anchors' width.
        let mut sim = Sim::new(25.0, 1, 0);
        let (mut clock, _) = run(&mut sim, 3, None);
        let a = *clock.anchor();
        let g = sim.origin + 1_000_000 + 60 * EVENT_REANCHOR_NS;
        let e = g + 30_000_000;
        let base_d = a.device;
        let mapped = clock.map(base_d, sim.elapsed_ms(g, e));
        assert!(mapped.abs_diff(e) <= 2_000 + 500 + 200, "{}", mapped.abs_diff(e));
    }

    #[test]
    fn a_wide_window_is_refused_until_a_second_has_passed() {
        // Every 7th anchor was preempted (a 200 µs window): refused (with some ordinary ones a
        // little wider than the narrowest), the accuracy keeps to the narrow ones.
        let mut sim = Sim::new(0.0, 32, 0);
        let (clock, worst) = run(&mut sim, 6, Some(7));
        let (anchors, refused) = clock.anchors();
        assert_eq!(anchors + refused, 6 * 20 + 1);
        assert!(refused >= 6 * 20 / 7, "{refused}");
        assert!(clock.widest_ns() < 3_000 && worst <= clock.accuracy_ns(), "{} {worst}", clock.widest_ns());
        // Only wide ones for a second: after 1 s without an anchor, the next is taken anyway
        // (and its width stated).
        let first = event_anchor(0, 1_000_000_000, 0.002);
        let mut clock = EventClock::new(first);
        let wide = |k: u64| event_anchor(k * EVENT_REANCHOR_NS, 1_000_000_000 + k * EVENT_REANCHOR_NS, 0.2);
        // (A's time is the stamp minus half the 200 µs window: the 20th is 0.1 ms short of 1 s.)
        for k in 1..=20 {
            assert!(!clock.offer(wide(k)), "{k}");
        }
        assert!(clock.offer(wide(21)));
        assert!(clock.accuracy_ns() >= 100_000);
    }

    #[test]
    fn event_clock_readings_wrap() {
        // The event clock's readings are wrapping sums of elapsed times: a run started just
        // below 2^64 crosses the wrap and maps as one started at 0 does.
        let mut at_top = Sim::new(0.0, 32, u64::MAX - 31 - 700_000_000);
        let mut at_zero = Sim::new(0.0, 32, 0);
        let (top, worst_top) = run(&mut at_top, 2, None);
        let (zero, worst_zero) = run(&mut at_zero, 2, None);
        assert!(top.anchor().device < at_top.start, "wrapped: {}", top.anchor().device);
        assert_eq!(top.anchor().host_ns, zero.anchor().host_ns);
        assert_eq!((top.accuracy_ns(), worst_top), (zero.accuracy_ns(), worst_zero));
        // A reading before the anchor (across the wrap) maps before it.
        let mut clock = EventClock::new(event_anchor(3, 1_000_000, 0.0));
        assert_eq!(clock.map(3, -0.000_010), 1_000_000 - 10);
        assert_eq!(clock.map(0, -0.000_010), 1_000_000 - 13);
    }

    #[test]
    fn elapsed_times_are_rounded_and_their_f32_error_stated() {
        assert_eq!(elapsed_ns(0.000_5), 500);
        assert_eq!(elapsed_ns(49.999_996), 49_999_996);
        for ms in [0.001f32, 0.5, 3.0, 49.9, 50.0, 100.0, 999.0, 5_000.0] {
            let spacing = f64::from(f32::from_bits(ms.to_bits() + 1)) - f64::from(ms);
            let r = elapsed_rounding_ns(ms);
            assert!(r as f64 >= spacing * 1e6 / 2.0 && (r as f64) < spacing * 1e6 / 2.0 + 1.0, "{ms}: {r}");
            assert_eq!(elapsed_rounding_ns(-ms), r);
        }
        let mut clock = EventClock::new(event_anchor(0, 1_000_000, 0.0));
        clock.map(0, 1_000.0);
        assert_eq!(clock.accuracy_ns(), EVENT_RESOLUTION_NS + 31);
    }

    #[test]
    fn events_come_back_once_read_or_complete() {
        let mut pool = EventRing::new(6);
        let (a, b, c) = (pool.alloc().unwrap(), pool.alloc().unwrap(), pool.alloc().unwrap());
        assert_eq!(pool.alloc(), None, "full");
        // a was read: back at once. b was given up on while its end event is still pending.
        pool.release(a, true, |_| panic!("a read scope's events are not queried"));
        let pending = pool.ring.index(b.end);
        pool.release(b, false, |i| i != pending);
        // a's two events are free, and b's begin (complete); its end is held.
        assert_eq!(pool.ring.out(), 3..6);
        pool.release(c, true, |_| true);
        let d = pool.alloc().unwrap();
        assert_eq!(pool.alloc(), None, "b's end is still out, so c's events wait behind it");
        // The held event completes: re-checked on the next read, then everything is free.
        pool.recheck(|i| i != pending);
        assert_eq!(pool.ring.out(), 3..8, "still pending: held");
        pool.recheck(|_| true);
        assert_eq!(pool.ring.out(), 6..8);
        pool.release(d, true, |_| true);
        assert_eq!(pool.ring.out(), 8..8);
    }

    #[test]
    fn stamp_modes_parse() {
        assert_eq!("events".parse::<CudaStamps>().unwrap(), CudaStamps::Events);
        assert_eq!("kernel".parse::<CudaStamps>().unwrap(), CudaStamps::Kernel);
        assert_eq!(CudaStamps::default(), CudaStamps::Kernel);
        let e = "Kernel".parse::<CudaStamps>().unwrap_err().to_string();
        assert_eq!(e, "vkhip-profile: no CUDA stamp mode \"Kernel\" (events or kernel)");
    }
}
