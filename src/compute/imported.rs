//! The skeleton both interop backends (CUDA, HIP) share: imported slots and semaphores, and what
//! is done with them on one stream, written once over a small trait ([`InteropApi`]) that each
//! API implements with its own RAII objects (`compute::cuda::CudaApi`, `compute::hip::HipApi`).
//!
//! What lives here, and so fails the same way in both backends (same [`ComputeError`] variant,
//! same text, `backend` = [`InteropApi::NAME`]):
//! - the checks on what Vulkan hands over ([`check_slot_memory`], [`check_pairs_per_slot`]) and the
//!   import of a (computed, rendered) semaphore pair ([`SemaphorePair::import`]);
//! - the semaphore lookup by role ([`Semaphores::get`]), the slot lookup ([`Imported::slot`]) and the
//!   grid check ([`check_grid_fits`]);
//! - the frame paths: wait → launch → signal ([`Imported::enqueue`], a batch of up to
//!   [`MAX_BATCH`] frames in one launch where the API's launch takes several slots), launch →
//!   event → host wait ([`Imported::write_and_wait`]), and the kernel-against-fill benchmark
//!   ([`Imported::benchmark`]).
//!
//! What stays with each backend: finding the device and making it current (CUDA's primary
//! context, HIP's `hipSetDevice`) before every call into [`Imported`], compiling and loading the
//! kernel, importing memory (the fd ownership differs), and the policy when semaphores fail to
//! import (CUDA: an error; HIP: a warning, since ROCm on Linux cannot import them).

use crate::compute::fd::ImportFd;
use crate::compute::kernel::{SinewaveLaunch, MAX_BATCH, MAX_LAUNCH_ENVS};
use crate::compute::post::{PostResources, PostSync};
use crate::compute::post_stage::{PostApi, PostStage};
use crate::compute::timing::{Mark, StreamTimer, TimedEvent};
use crate::compute::{
    enqueue_frame_by_frame, semaphore_ops, BackendKind, ComputeBackend, ComputeError, GpuSync,
    GpuSyncSupport, InteropMemory, InteropSemaphorePair, KernelBenchmark, SemaphoreRef,
};
use crate::profile::clock::ClockInfo;
use crate::profile::Span;
use crate::sim::WaveParams;

type Result<T> = std::result::Result<T, ComputeError>;

/// Launches (kernel and fill each) run before [`Imported::benchmark`] starts timing.
pub const BENCHMARK_WARMUP: u32 = 5;

/// What the skeleton needs from a compute API: its stream, events, imported semaphores and
/// imported buffers (the API's own RAII types), and the calls made with them. Implemented by a
/// small value that owns the loaded kernel (so `launch` needs nothing else).
pub trait InteropApi {
    /// "cuda" or "hip": the `backend` of every error the skeleton returns.
    const NAME: &'static str;
    /// The fill [`Imported::benchmark`] times the kernel against (e.g. "cuMemsetD32Async").
    const FILL_NAME: &'static str;
    type Stream;
    type Event: TimedEvent<Stream = Self::Stream>;
    type Semaphore;
    type Buffer;

    /// The bytes `buffer` maps (what the kernel may write).
    fn buffer_size(buffer: &Self::Buffer) -> u64;
    /// Enqueue a wait on `semaphore` (timeline: until ≥ `value`; binary: `value` ignored).
    fn wait(&self, semaphore: &Self::Semaphore, value: u64, stream: &Self::Stream) -> Result<()>;
    /// Enqueue a signal of `semaphore` (timeline: to `value`; binary: `value` ignored).
    fn signal(&self, semaphore: &Self::Semaphore, value: u64, stream: &Self::Stream) -> Result<()>;
    /// Enqueue the kernel writing each buffer for its parameters: 1 to [`MAX_BATCH`] slots, all
    /// on one grid when more than one, each grid already checked to fit its buffer. One launch
    /// for the lot where the API can; returns the (last) launch's shape. `stamp_entry`: the
    /// launch writes its GPU stamps into that ring entry when the backend's timer is
    /// [`StreamTimer::gpu_stamped`] (None: no stamps, null pointers; APIs without GPU stamps,
    /// HIP, ignore it).
    fn launch(
        &self,
        stream: &Self::Stream,
        slots: &[(&Self::Buffer, WaveParams)],
        stamp_entry: Option<usize>,
    ) -> Result<SinewaveLaunch>;
    /// Enqueue a fill of the first `words` 32-bit words of `buffer` with zeros (checked to fit).
    fn fill(&self, buffer: &Self::Buffer, words: usize, stream: &Self::Stream) -> Result<()>;
    /// A new event that records timestamps.
    fn timed_event(&self) -> Result<Self::Event>;
    /// Microseconds from `start` to `end` (both timed, recorded and complete).
    fn elapsed_us(&self, start: &Self::Event, end: &Self::Event) -> Result<f64>;
    /// Block the host until everything enqueued on `stream` has finished.
    fn synchronize(&self, stream: &Self::Stream) -> Result<()>;

    /// The GPU stamps of ring entry `entry` (start, end ns), read only once the launch that wrote
    /// them completed (see [`StreamTimer::take_spans_with`]).
    fn read_stamps(&self, _entry: usize) -> Option<(u64, u64)> {
        None
    }
}

/// Refuse heights that do not fit the mapped slot (`params.envs` fields of `params.grid`): the
/// kernel would write past its end.
pub fn check_grid_fits(backend: &'static str, params: &WaveParams, buffer_size: u64) -> Result<()> {
    let (grid, envs) = (params.grid, params.envs.max(1));
    let bytes = grid.bytes() * envs as u64;
    if bytes > buffer_size {
        let fields = if envs > 1 { format!(" × {envs} environments") } else { String::new() };
        return Err(ComputeError::Unsupported {
            backend,
            reason: format!("grid {grid}{fields} needs {bytes} bytes but the slot maps only {buffer_size}"),
        });
    }
    if envs > MAX_LAUNCH_ENVS {
        return Err(ComputeError::Unsupported {
            backend,
            reason: format!("{envs} environments in one launch: at most {MAX_LAUNCH_ENVS} (gridDim.z)"),
        });
    }
    Ok(())
}

/// Refuse slot `index`'s memory before importing it: an empty buffer, or one larger than the
/// allocation it is mapped from.
pub fn check_slot_memory(backend: &'static str, index: usize, m: &InteropMemory) -> Result<()> {
    m.check_sizes(backend).map_err(|e| match e {
        ComputeError::Unsupported { backend, reason } => {
            ComputeError::Unsupported { backend, reason: format!("slot {index}: {reason}") }
        }
        other => other,
    })
}

/// Binary semaphores come one pair per slot, or not at all.
pub fn check_pairs_per_slot(backend: &'static str, binary_pairs: usize, slots: usize) -> Result<()> {
    if binary_pairs != 0 && binary_pairs != slots {
        return Err(ComputeError::Unsupported {
            backend,
            reason: format!(
                "{binary_pairs} binary semaphore pairs for {slots} slots (one pair per slot expected)"
            ),
        });
    }
    Ok(())
}

/// An imported (computed, rendered) pair.
pub struct SemaphorePair<S> {
    pub computed: S,
    pub rendered: S,
}

impl<S> SemaphorePair<S> {
    /// Import `computed`, then `rendered`, with `import`. If the first import fails, `rendered`
    /// is dropped unused, which closes its fd; every fd is released either way.
    pub fn import(pair: InteropSemaphorePair, mut import: impl FnMut(ImportFd) -> Result<S>) -> Result<Self> {
        let InteropSemaphorePair { computed, rendered } = pair;
        let computed = import(computed)?;
        let rendered = import(rendered)?;
        Ok(SemaphorePair { computed, rendered })
    }
}

/// The imported semaphores of a backend: a timeline pair, and one binary pair per slot.
pub struct Semaphores<S> {
    pub timeline: Option<SemaphorePair<S>>,
    pub binary: Vec<SemaphorePair<S>>,
}

impl<S> Default for Semaphores<S> {
    fn default() -> Self {
        Semaphores { timeline: None, binary: Vec::new() }
    }
}

impl<S> Semaphores<S> {
    /// Which GPU-side schemes these semaphores allow.
    pub fn support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: self.timeline.is_some(), binary: !self.binary.is_empty() }
    }

    /// The semaphore playing role `which`.
    pub fn get(&self, backend: &'static str, which: SemaphoreRef) -> Result<&S> {
        let found = match which {
            SemaphoreRef::TimelineRendered => self.timeline.as_ref().map(|p| &p.rendered),
            SemaphoreRef::TimelineComputed => self.timeline.as_ref().map(|p| &p.computed),
            SemaphoreRef::BinaryRendered(i) => self.binary.get(i).map(|p| &p.rendered),
            SemaphoreRef::BinaryComputed(i) => self.binary.get(i).map(|p| &p.computed),
        };
        found.ok_or_else(|| ComputeError::Unsupported {
            backend,
            reason: format!("semaphore {which:?} was not imported"),
        })
    }
}

/// Imported slots and semaphores, the kernel (inside the API value), one stream, and its timer.
///
/// Field order is teardown order, after the owner made the device current and called
/// [`Imported::teardown`]: the profiler's events (and their clock stream), the host-wait event,
/// the semaphores, the slots (each freeing its mapping, then its import), the kernel, and the
/// stream last. Whatever the API needs to outlive all of it (CUDA's context) stays with the owner,
/// after this in its field order.
pub struct Imported<A: InteropApi> {
    timer: StreamTimer<A::Event>,
    done: A::Event,
    semaphores: Semaphores<A::Semaphore>,
    slots: Vec<A::Buffer>,
    api: A,
    stream: A::Stream,
}

impl<A: InteropApi> Imported<A> {
    /// `done` is the event [`Self::write_and_wait`] waits on (timing not needed); `timer` records
    /// on `stream`.
    pub fn new(
        api: A,
        stream: A::Stream,
        done: A::Event,
        timer: StreamTimer<A::Event>,
        slots: Vec<A::Buffer>,
        semaphores: Semaphores<A::Semaphore>,
    ) -> Self {
        Imported { timer, done, semaphores, slots, api, stream }
    }

    pub fn support(&self) -> GpuSyncSupport {
        self.semaphores.support()
    }

    /// The stream (or the device whose one stream) everything runs on.
    pub fn stream(&self) -> &A::Stream {
        &self.stream
    }

    /// The imported `rendered` timeline, if timelines were imported (the post stage waits on it).
    pub fn rendered_timeline(&self) -> Option<&A::Semaphore> {
        self.semaphores.timeline.as_ref().map(|p| &p.rendered)
    }

    /// Slot `slot`'s buffer.
    pub fn slot(&self, slot: usize) -> Result<&A::Buffer> {
        self.slots.get(slot).ok_or_else(|| ComputeError::Unsupported {
            backend: A::NAME,
            reason: format!("slot {slot} out of range ({} slots imported)", self.slots.len()),
        })
    }

    /// Slot `slot`'s buffer, checked to hold `params`' heights.
    fn slot_for(&self, slot: usize, params: &WaveParams) -> Result<&A::Buffer> {
        let buffer = self.slot(slot)?;
        check_grid_fits(A::NAME, params, A::buffer_size(buffer))?;
        Ok(buffer)
    }

    /// wait → one launch writing every slot of `frames` → signal, on the stream, and return.
    /// Everything is resolved and checked before the first enqueue, so a refused frame or batch
    /// leaves no wait behind on the stream. Binary sync takes one frame; timelines up to
    /// [`MAX_BATCH`].
    pub fn enqueue(&mut self, frames: &[(u64, usize, WaveParams)], sync: GpuSync) -> Result<()> {
        let Some(&(first, _, _)) = frames.first() else { return Ok(()) };
        if frames.len() > MAX_BATCH || (frames.len() > 1 && matches!(sync, GpuSync::Binary { .. })) {
            return Err(ComputeError::Unsupported {
                backend: A::NAME,
                reason: format!(
                    "a batch of {} frames (binary sync takes 1, timelines up to {MAX_BATCH})",
                    frames.len()
                ),
            });
        }
        let i = self.timer.begin_batch(first, frames.len() as u64);
        let s = &self.semaphores;
        let plan = semaphore_ops(A::NAME, sync, s.timeline.is_some(), s.binary.len())?;
        let slots = frames
            .iter()
            .map(|&(_, slot, params)| self.slot_for(slot, &params).map(|b| (b, params)))
            .collect::<Result<Vec<_>>>()?;
        let wait = plan.wait.map(|w| s.get(A::NAME, w.semaphore).map(|h| (h, w.value))).transpose()?;
        let signal = plan.signal.map(|w| s.get(A::NAME, w.semaphore).map(|h| (h, w.value))).transpose()?;
        if let Some((semaphore, value)) = wait {
            self.timer.mark(i, Mark::BeforeWait, &self.stream)?;
            self.api.wait(semaphore, value, &self.stream)?;
        }
        self.timer.mark(i, Mark::BeforeKernel, &self.stream)?;
        self.api.launch(&self.stream, &slots, self.timer.stamping().then_some(i))?;
        self.timer.mark(i, Mark::AfterKernel, &self.stream)?;
        if let Some((semaphore, value)) = signal {
            self.api.signal(semaphore, value, &self.stream)?;
        }
        self.timer.mark(i, Mark::AfterSignal, &self.stream)
    }

    /// launch → record the host-wait event → wait for it on the host.
    pub fn write_and_wait(&mut self, frame: u64, slot: usize, params: &WaveParams) -> Result<()> {
        let i = self.timer.begin(frame);
        let buffer = self.slot_for(slot, params)?;
        self.timer.mark(i, Mark::BeforeKernel, &self.stream)?;
        self.api.launch(&self.stream, &[(buffer, *params)], self.timer.stamping().then_some(i))?;
        self.timer.mark(i, Mark::AfterKernel, &self.stream)?;
        self.done.record_on(&self.stream)?;
        self.done.wait()
    }

    /// Kernel time against the API's fill over the same bytes, both timed with events on the
    /// stream, `iterations` of each (after [`BENCHMARK_WARMUP`] untimed pairs), enqueued without
    /// a host wait between them. The slot holds `params`' heights afterwards.
    pub fn benchmark(
        &mut self,
        slot: usize,
        params: &WaveParams,
        iterations: u32,
    ) -> Result<KernelBenchmark> {
        let buffer = self.slot_for(slot, params)?;
        let words = params.values();
        let api = &self.api;
        let events = (0..iterations)
            .map(|_| Ok([api.timed_event()?, api.timed_event()?, api.timed_event()?, api.timed_event()?]))
            .collect::<Result<Vec<_>>>()?;
        let launch = || api.launch(&self.stream, &[(buffer, *params)], None);
        let cfg = launch()?;
        log::info!(
            "{}: benchmark on {}: {}x{} blocks of {} threads, {iterations} timed launches",
            A::NAME,
            params.grid,
            cfg.grid_x,
            cfg.grid_y,
            cfg.block_x
        );
        for _ in 0..BENCHMARK_WARMUP {
            launch()?;
            api.fill(buffer, words, &self.stream)?;
        }
        for [k0, k1, f0, f1] in &events {
            k0.record_on(&self.stream)?;
            launch()?;
            k1.record_on(&self.stream)?;
            f0.record_on(&self.stream)?;
            api.fill(buffer, words, &self.stream)?;
            f1.record_on(&self.stream)?;
        }
        launch()?;
        api.synchronize(&self.stream)?;
        let mut result = KernelBenchmark { fill_name: A::FILL_NAME, ..Default::default() };
        for [k0, k1, f0, f1] in &events {
            result.kernel_us.push(api.elapsed_us(k0, k1)?);
            result.fill_us.push(api.elapsed_us(f0, f1)?);
        }
        Ok(result)
    }

    /// Move the spans of finished frames into `out` (never blocks).
    pub fn take_spans(&mut self, out: &mut Vec<Span>) {
        let api = &self.api;
        self.timer.take_spans_with(out, &|entry| api.read_stamps(entry));
    }

    pub fn clock_info(&self) -> Option<ClockInfo> {
        self.timer.clock_info()
    }

    /// Wait until everything enqueued has finished.
    pub fn finish(&self) -> Result<()> {
        self.api.synchronize(&self.stream)
    }

    /// For the owner's `Drop`, with the device current: synchronise the stream before any field
    /// goes (logs instead of failing).
    pub fn teardown(&self) {
        if let Err(e) = self.finish() {
            log::warn!("{}: synchronising the stream for teardown failed: {e}", A::NAME);
        }
    }
}

/// The rest of a backend built on the skeleton: the device (and whatever must outlive the
/// skeleton's objects, e.g. CUDA's primary context), made current on the calling thread before
/// every call into it.
pub trait InteropDevice: Send {
    type Api: InteropApi;
    const KIND: BackendKind;
    /// Whether a batch is written by one [`Imported::enqueue`] (one launch for several slots);
    /// otherwise frame by frame, as [`ComputeBackend::enqueue_batch_gpu_synced`]'s default.
    const BATCHES: bool;
    /// Make the device current on the calling thread.
    fn make_current(&self) -> Result<()>;
    /// For the frame report.
    fn name(&self) -> String;
    /// (free, total) device memory, if the API can tell.
    fn memory(&self) -> Option<Result<(u64, u64)>> {
        None
    }

    /// The post stage's API ([`PostStage`]): the same stream and semaphores as [`Self::Api`].
    type Post: PostApi<
        Stream = <Self::Api as InteropApi>::Stream,
        Semaphore = <Self::Api as InteropApi>::Semaphore,
    >;

    /// Build the post stage from `post` on this device (`attach_post`).
    fn attach_post(&mut self, post: PostResources) -> Result<()>;

    /// The post stage, once attached.
    fn post_stage(&mut self) -> Option<&mut PostStage<Self::Post>>;
}

/// A [`ComputeBackend`] made of the skeleton and a device: `CudaBackend` and `HipBackend`.
pub struct InteropBackend<D: InteropDevice> {
    // Field order is teardown order (after `Drop` made the device current and synchronised the
    // stream): the skeleton's objects (see [`Imported`]), then the device.
    core: Imported<D::Api>,
    device: D,
}

impl<D: InteropDevice> InteropBackend<D> {
    pub fn from_parts(core: Imported<D::Api>, device: D) -> Self {
        InteropBackend { core, device }
    }

    pub fn device(&self) -> &D {
        &self.device
    }
}

impl<D: InteropDevice> ComputeBackend for InteropBackend<D>
where
    Imported<D::Api>: Send,
{
    fn kind(&self) -> BackendKind {
        D::KIND
    }

    fn device_name(&self) -> String {
        self.device.name()
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        self.core.support()
    }

    fn enqueue_gpu_synced(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
        sync: GpuSync,
    ) -> Result<()> {
        self.device.make_current()?;
        self.core.enqueue(&[(frame, slot, *params)], sync)
    }

    fn enqueue_batch_gpu_synced(&mut self, frames: &[(u64, usize, WaveParams)], sync: GpuSync) -> Result<()> {
        if !D::BATCHES {
            return enqueue_frame_by_frame(self, frames, sync);
        }
        self.device.make_current()?;
        self.core.enqueue(frames, sync)
    }

    fn write_slot_and_wait(&mut self, frame: u64, slot: usize, params: &WaveParams) -> Result<()> {
        self.device.make_current()?;
        self.core.write_and_wait(frame, slot, params)
    }

    fn attach_post(&mut self, post: PostResources) -> Result<()> {
        self.device.make_current()?;
        self.device.attach_post(post)
    }

    fn enqueue_post_gpu_synced(&mut self, frame: u64, pair: usize, sync: PostSync) -> Result<()> {
        self.device.make_current()?;
        let stage = self.device.post_stage().ok_or_else(|| not_attached(D::Api::NAME))?;
        stage.enqueue(self.core.stream(), self.core.rendered_timeline(), frame, pair, sync)
    }

    fn post_and_wait_timed(&mut self) -> bool {
        self.device.post_stage().is_some_and(|s| s.is_timed())
    }

    fn post_and_wait(&mut self, frame: u64, pair: usize) -> Result<()> {
        self.device.make_current()?;
        let stage = self.device.post_stage().ok_or_else(|| not_attached(D::Api::NAME))?;
        stage.run_and_wait(self.core.stream(), frame, pair)
    }

    fn take_spans(&mut self, out: &mut Vec<Span>) {
        match self.device.make_current() {
            Ok(()) => {
                self.core.take_spans(out);
                if let Some(stage) = self.device.post_stage() {
                    stage.take_spans(out);
                }
            }
            Err(e) => log::debug!("{}: timing skipped: {e}", D::Api::NAME),
        }
    }

    fn clock_info(&self) -> Option<ClockInfo> {
        self.core.clock_info()
    }

    fn finish(&mut self) -> Result<()> {
        self.device.make_current()?;
        self.core.finish()
    }

    fn benchmark(&mut self, slot: usize, params: &WaveParams, iterations: u32) -> Result<KernelBenchmark> {
        self.device.make_current()?;
        self.core.benchmark(slot, params, iterations)
    }

    fn device_memory(&self) -> Option<Result<(u64, u64)>> {
        self.device.memory()
    }
}

/// A post entry point called before [`ComputeBackend::attach_post`].
fn not_attached(backend: &'static str) -> ComputeError {
    ComputeError::Unsupported { backend, reason: "the post stage was not attached (attach_post)".into() }
}

impl<D: InteropDevice> Drop for InteropBackend<D> {
    fn drop(&mut self) {
        // The last user may be another thread than the one that created the backend.
        if let Err(e) = self.device.make_current() {
            log::warn!("{}: making the device current for teardown failed: {e}", D::Api::NAME);
        }
        // Before any event, semaphore or mapping goes (ROCm#4670); the fields drop after this.
        self.core.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Grid;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<String>>>;

    /// A stream that logs what is enqueued on it.
    struct FakeStream(Log);

    struct FakeEvent {
        recorded: Cell<u32>,
    }

    impl TimedEvent for FakeEvent {
        type Stream = FakeStream;
        fn record_on(&self, _: &FakeStream) -> Result<()> {
            self.recorded.set(self.recorded.get() + 1);
            Ok(())
        }
        fn is_done(&self) -> Result<bool> {
            Ok(true)
        }
        fn ms_since(&self, _: &Self) -> Result<f32> {
            Ok(0.5)
        }
        fn wait(&self) -> Result<()> {
            Ok(())
        }
    }

    fn event() -> Result<FakeEvent> {
        Ok(FakeEvent { recorded: Cell::new(0) })
    }

    /// Records the ring entries launches were told to stamp into.
    #[derive(Default)]
    struct FakeApi {
        stamp_entries: RefCell<Vec<Option<usize>>>,
    }

    impl InteropApi for FakeApi {
        const NAME: &'static str = "fake";
        const FILL_NAME: &'static str = "fakeFill";
        type Stream = FakeStream;
        type Event = FakeEvent;
        /// The semaphore's name.
        type Semaphore = &'static str;
        /// (slot index, size).
        type Buffer = (usize, u64);

        fn buffer_size(buffer: &(usize, u64)) -> u64 {
            buffer.1
        }
        fn wait(&self, semaphore: &&'static str, value: u64, stream: &FakeStream) -> Result<()> {
            stream.0.borrow_mut().push(format!("wait {semaphore} {value}"));
            Ok(())
        }
        fn signal(&self, semaphore: &&'static str, value: u64, stream: &FakeStream) -> Result<()> {
            stream.0.borrow_mut().push(format!("signal {semaphore} {value}"));
            Ok(())
        }
        fn launch(
            &self,
            stream: &FakeStream,
            slots: &[(&(usize, u64), WaveParams)],
            stamp_entry: Option<usize>,
        ) -> Result<SinewaveLaunch> {
            self.stamp_entries.borrow_mut().push(stamp_entry);
            let which: Vec<String> = slots.iter().map(|(b, _)| b.0.to_string()).collect();
            stream.0.borrow_mut().push(format!("launch {}", which.join(",")));
            Ok(crate::compute::kernel::sinewave_launch(slots[0].1.grid, slots[0].1.envs, 8))
        }
        fn fill(&self, buffer: &(usize, u64), words: usize, stream: &FakeStream) -> Result<()> {
            stream.0.borrow_mut().push(format!("fill {} {words}", buffer.0));
            Ok(())
        }
        fn timed_event(&self) -> Result<FakeEvent> {
            event()
        }
        fn elapsed_us(&self, start: &FakeEvent, end: &FakeEvent) -> Result<f64> {
            Ok(f64::from(end.ms_since(start)?) * 1000.0)
        }
        fn synchronize(&self, stream: &FakeStream) -> Result<()> {
            stream.0.borrow_mut().push("sync".into());
            Ok(())
        }
    }

    const GRID: Grid = Grid { width: 16, height: 16 };

    fn pair(computed: &'static str, rendered: &'static str) -> SemaphorePair<&'static str> {
        SemaphorePair { computed, rendered }
    }

    /// Three slots of `GRID`'s size; the timeline pair if `timeline`, binary pairs if `binary`.
    fn imported(timeline: bool, binary: bool) -> (Imported<FakeApi>, Log) {
        imported_with(timeline, binary, StreamTimer::new("fake", FakeStream(Log::default()), event).unwrap())
    }

    fn imported_with(
        timeline: bool,
        binary: bool,
        timer: StreamTimer<FakeEvent>,
    ) -> (Imported<FakeApi>, Log) {
        let log = Log::default();
        let semaphores = Semaphores {
            timeline: timeline.then(|| pair("tc", "tr")),
            binary: if binary { vec![pair("c0", "r0"), pair("c1", "r1"), pair("c2", "r2")] } else { vec![] },
        };
        let slots = (0..3).map(|i| (i, GRID.bytes())).collect();
        let core = Imported::new(
            FakeApi::default(),
            FakeStream(log.clone()),
            event().unwrap(),
            timer,
            slots,
            semaphores,
        );
        (core, log)
    }

    fn calls(log: &Log) -> Vec<String> {
        std::mem::take(&mut *log.borrow_mut())
    }

    fn params() -> WaveParams {
        WaveParams::at_time(GRID, 0.25)
    }

    #[test]
    fn a_frame_waits_then_launches_then_signals() {
        let (mut core, log) = imported(true, true);
        let sync = GpuSync::Timeline { wait_rendered: Some(2), signal_computed: Some(5) };
        core.enqueue(&[(4, 1, params())], sync).unwrap();
        assert_eq!(calls(&log), ["wait tr 2", "launch 1", "signal tc 5"]);
        core.enqueue(&[(5, 2, params())], GpuSync::Binary { slot: 2, wait_rendered: true }).unwrap();
        assert_eq!(calls(&log), ["wait r2 0", "launch 2", "signal c2 0"]);
        core.enqueue(&[(6, 0, params())], GpuSync::Binary { slot: 0, wait_rendered: false }).unwrap();
        assert_eq!(calls(&log), ["launch 0", "signal c0 0"]);
    }

    #[test]
    fn a_batch_is_one_launch_between_one_wait_and_one_signal() {
        let (mut core, log) = imported(true, false);
        let frames = [(7, 0, params()), (8, 1, params()), (9, 2, params())];
        let sync = GpuSync::Timeline { wait_rendered: Some(6), signal_computed: Some(10) };
        core.enqueue(&frames, sync).unwrap();
        assert_eq!(calls(&log), ["wait tr 6", "launch 0,1,2", "signal tc 10"]);
        core.enqueue(&[], sync).unwrap();
        assert!(calls(&log).is_empty(), "an empty batch enqueues nothing");
        let binary = core.enqueue(&frames[..2], GpuSync::Binary { slot: 0, wait_rendered: false });
        assert!(matches!(binary, Err(ComputeError::Unsupported { backend: "fake", .. })));
        let nine = [(1, 0, params()); MAX_BATCH + 1];
        assert!(core.enqueue(&nine, sync).unwrap_err().to_string().contains("a batch of 9 frames"));
        assert!(calls(&log).is_empty(), "refused batches enqueue nothing");
    }

    #[test]
    fn missing_semaphores_and_bad_slots_are_refused_before_any_enqueue() {
        let (mut core, log) = imported(false, false);
        let sync = GpuSync::Timeline { wait_rendered: Some(1), signal_computed: Some(2) };
        let e = core.enqueue(&[(1, 0, params())], sync).unwrap_err();
        assert!(matches!(e, ComputeError::Unsupported { backend: "fake", .. }), "{e}");
        let e =
            core.enqueue(&[(1, 0, params())], GpuSync::Binary { slot: 0, wait_rendered: true }).unwrap_err();
        assert!(e.to_string().contains("slot 0"), "{e}");

        let (mut core, _) = imported(true, false);
        let e = core.enqueue(&[(1, 3, params())], sync).unwrap_err();
        assert_eq!(e.to_string(), "backend fake: slot 3 out of range (3 slots imported)");
        let big = WaveParams::at_time(Grid { width: 32, height: 16 }, 0.0);
        let e = core.enqueue(&[(1, 0, big)], sync).unwrap_err();
        assert_eq!(e.to_string(), "backend fake: grid 32x16 needs 2048 bytes but the slot maps only 1024");
        let e = core.write_and_wait(1, 0, &big).unwrap_err();
        assert!(e.to_string().contains("needs 2048 bytes"), "{e}");
        // `--envs`: E fields of the grid must fit the slot.
        let e = core.enqueue(&[(1, 0, params().with_envs(2))], sync).unwrap_err();
        assert_eq!(
            e.to_string(),
            "backend fake: grid 16x16 × 2 environments needs 2048 bytes but the slot maps only 1024"
        );
        assert!(core.benchmark(5, &params(), 1).is_err());
        assert!(calls(&log).is_empty(), "nothing enqueued: {:?}", calls(&log));
    }

    #[test]
    fn frame_launches_stamp_into_their_ring_entry_only_with_a_stamped_timer() {
        let stamped = StreamTimer::gpu_stamped("fake", FakeStream(Log::default()), event).unwrap();
        let (mut core, _) = imported_with(true, false, stamped);
        let sync = GpuSync::Timeline { wait_rendered: Some(2), signal_computed: Some(5) };
        core.enqueue(&[(21, 1, params())], sync).unwrap();
        core.write_and_wait(22, 2, &params()).unwrap();
        core.benchmark(0, &params(), 1).unwrap();
        let entries = core.api.stamp_entries.take();
        // Frames 21 and 22 stamp into entries 21 % DEPTH and 22 % DEPTH; the benchmark's
        // launches (1 + warm-up + timed + last) stamp nothing.
        let depth = crate::compute::timing::DEPTH;
        assert_eq!(entries[..2], [Some(21 % depth), Some(22 % depth)]);
        assert!(entries[2..].iter().all(Option::is_none), "{entries:?}");
        // Events against anchors (HIP's timer): null stamp pointers.
        let (mut core, _) = imported(true, false);
        core.enqueue(&[(21, 1, params())], sync).unwrap();
        assert_eq!(core.api.stamp_entries.take(), [None]);
    }

    #[test]
    fn semaphores_are_found_by_role() {
        let s = Semaphores { timeline: Some(pair("tc", "tr")), binary: vec![pair("c0", "r0")] };
        assert_eq!(*s.get("x", SemaphoreRef::TimelineRendered).unwrap(), "tr");
        assert_eq!(*s.get("x", SemaphoreRef::TimelineComputed).unwrap(), "tc");
        assert_eq!(*s.get("x", SemaphoreRef::BinaryRendered(0)).unwrap(), "r0");
        assert_eq!(*s.get("x", SemaphoreRef::BinaryComputed(0)).unwrap(), "c0");
        let e = s.get("hip", SemaphoreRef::BinaryComputed(1)).unwrap_err();
        assert_eq!(e.to_string(), "backend hip: semaphore BinaryComputed(1) was not imported");
        assert_eq!(s.support(), GpuSyncSupport { timeline: true, binary: true });
        assert_eq!(Semaphores::<u8>::default().support(), GpuSyncSupport { timeline: false, binary: false });
    }

    #[test]
    fn write_and_wait_launches_and_waits_without_semaphores() {
        let (mut core, log) = imported(true, true);
        core.write_and_wait(3, 2, &params()).unwrap();
        assert_eq!(calls(&log), ["launch 2"]);
        assert_eq!(core.done.recorded.get(), 1);
    }

    #[test]
    fn benchmark_interleaves_kernel_and_fill_and_ends_with_the_kernel() {
        let (mut core, log) = imported(false, false);
        let b = core.benchmark(1, &params(), 2).unwrap();
        let words = GRID.len();
        let mut want = vec!["launch 1".to_string()];
        for _ in 0..BENCHMARK_WARMUP + 2 {
            want.push("launch 1".into());
            want.push(format!("fill 1 {words}"));
        }
        want.extend(["launch 1".into(), "sync".into()]);
        assert_eq!(calls(&log), want);
        assert_eq!(b.fill_name, "fakeFill");
        assert_eq!((b.kernel_us, b.fill_us), (vec![500.0; 2], vec![500.0; 2]));
    }

    #[test]
    fn import_checks_name_the_backend() {
        use std::os::fd::OwnedFd;
        let fd = || ImportFd::new(OwnedFd::from(std::fs::File::open("/dev/null").unwrap()));
        let m = |buffer_size| InteropMemory { fd: fd(), allocation_size: 4096, buffer_size, dedicated: true };
        assert!(check_slot_memory("hip", 0, &m(4096)).is_ok());
        for bad in [0, 4097] {
            let e = check_slot_memory("hip", 2, &m(bad)).unwrap_err();
            assert!(matches!(e, ComputeError::Unsupported { backend: "hip", .. }));
            assert!(e.to_string().contains("slot 2: buffer size"), "{e}");
        }
        assert!(check_pairs_per_slot("cuda", 0, 3).is_ok());
        assert!(check_pairs_per_slot("cuda", 3, 3).is_ok());
        assert!(check_pairs_per_slot("cuda", 2, 3).is_err());
        // A failed first import drops the second fd unused; the second import is never tried.
        let mut tried = 0;
        let r = SemaphorePair::<u8>::import(InteropSemaphorePair { computed: fd(), rendered: fd() }, |_| {
            tried += 1;
            Err(ComputeError::Unsupported { backend: "cuda", reason: "refused".into() })
        });
        assert!(r.is_err());
        assert_eq!(tried, 1);
    }
}
