//! The compute side's own host thread, where a mode gives it one: it owns the backend while the
//! run lasts and serves its jobs in the order the render thread sent them.
//!
//! - The **bridge thread** of `bridged` (and `none`): a heights job is one batch: host-wait
//!   `rendered` (a Vulkan-signalled value), write each slot of the batch with the compute API's
//!   own wait, then host-signal `computed` once. A post job is one post hand-off ([`run_post`],
//!   which the reference modes also run on the render thread).
//! - The **submission thread** of `external` with cuda or hip ([`super`], "The submission
//!   thread"): a job is one GPU-synced hand-off, enqueued with its waits and signals on the
//!   compute API's stream ([`super::enqueue`]); the thread never waits for the GPU, except for a
//!   `Finish` job and after a failure (stream synchronise).
use super::{enqueue, SyncError};
use crate::compute::post::PostSync;
use crate::compute::ComputeBackend;
use crate::compute::{BackendKind, ComputeError};
use crate::profile::clock::host_now_ns;
use crate::profile::program::{self, Rec, Sem};
use crate::profile::span::SPAN_BUFFER;
use crate::profile::{Phase, Span, Track};
use crate::sim::WaveParams;
use crate::vk::device::Context;
use ash::vk;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What the thread does next, in the order the render thread asked.
pub(super) enum Job {
    /// `bridged`, `none`: host waits, host-synchronous writes, a host signal.
    Heights(HeightsJob),
    Post(PostJob),
    /// `external` (the submission thread): the same hand-offs with their waits and signals
    /// enqueued on the compute API's stream. A heights job's wait for `rendered` is skipped when
    /// the thread, reading the counter, sees it reached (with `--compute-wait auto`).
    Enqueue(HeightsJob),
    EnqueuePost(PostJob),
    /// Wait until the compute API finished everything enqueued so far (stream synchronise), and
    /// say how it went.
    Finish(mpsc::SyncSender<Result<(), ComputeError>>),
}

impl Job {
    /// Enqueued on the GPU rather than run host-synchronously.
    fn enqueued(&self) -> bool {
        matches!(self, Job::Enqueue(_) | Job::EnqueuePost(_))
    }

    /// What it is about, for a failure's message: "frame f" (heights, its first frame) or "post
    /// of frame f".
    fn about(&self) -> String {
        match self {
            Job::Post(p) | Job::EnqueuePost(p) => format!("post of frame {}", p.frame),
            _ => format!("frame {}", self.promises().0),
        }
    }

    /// The first frame it is about, and the (computed, posted) values it promised (0: none).
    fn promises(&self) -> (u64, (u64, u64)) {
        match self {
            Job::Heights(h) | Job::Enqueue(h) => {
                (h.frames.first().map_or(0, |f| f.0), (h.signal_computed, 0))
            }
            Job::Post(p) | Job::EnqueuePost(p) => (p.frame, (0, p.signal_posted.unwrap_or(0))),
            Job::Finish(_) => (0, (0, 0)),
        }
    }
}

/// One post hand-off ([`crate::sync`], "The post stage"): host-wait the Vulkan-signalled values,
/// filter pair `pair`, host-signal `posted`.
pub(super) struct PostJob {
    pub frame: u64,
    pub pair: usize,
    /// Host-wait `rendered ≥ value` (scene `pair` holds `frame`; None with `--sync none`).
    pub wait_rendered: Option<u64>,
    /// Host-wait `presented ≥ value` (output `pair`'s previous copy finished; None for the first
    /// K frames and with `--sync none`).
    pub wait_presented: Option<u64>,
    /// Host-signal `posted = value` after the filter (None: a post batch's frame before its
    /// last, whose filter signals for the whole batch).
    pub signal_posted: Option<u64>,
}

impl PostJob {
    /// Its waits and signal, for the GPU.
    pub fn sync(&self) -> PostSync {
        PostSync {
            wait_rendered: self.wait_rendered,
            wait_presented: self.wait_presented,
            signal_posted: self.signal_posted,
        }
    }
}

/// The post timelines the bridge thread waits on and signals.
#[derive(Clone, Copy)]
pub(super) struct PostTimelineHandles {
    pub posted: vk::Semaphore,
    pub presented: vk::Semaphore,
}

/// The protocol's timelines, as the thread waits on, reads and (bridged) signals them.
#[derive(Clone, Copy)]
pub(super) struct Timelines {
    pub computed: vk::Semaphore,
    pub rendered: vk::Semaphore,
    /// `--post` only.
    pub post: Option<PostTimelineHandles>,
}

/// One hand-off: the frames of a batch, in order, and what to wait for and signal around them.
pub(super) struct HeightsJob {
    /// (frame, slot, params) for each frame of the batch.
    pub frames: Vec<(u64, usize, WaveParams)>,
    /// Host-wait `rendered ≥ value` first (None: the slots were never read, or `none` mode).
    pub wait_rendered: Option<u64>,
    /// Host-signal `computed = value` after the last write.
    pub signal_computed: u64,
}

/// The thread and its job queue.
pub(super) struct Bridge {
    jobs: Option<mpsc::SyncSender<Job>>,
    thread: Option<JoinHandle<Box<dyn ComputeBackend>>>,
    failure: Arc<Mutex<Option<String>>>,
    /// Enqueued heights jobs whose wait for `rendered` the thread skipped.
    elided: Arc<AtomicU64>,
}

/// What the thread keeps between jobs.
struct Worker {
    ctx: Arc<Context>,
    t: Timelines,
    /// Skip an enqueued wait for `rendered` that the thread saw reached (`--compute-wait auto`).
    elide: bool,
    /// The highest `rendered` value this thread saw.
    seen: u64,
    elided: Arc<AtomicU64>,
    /// The last value this thread host-signalled on `posted` (0: none yet).
    last_posted: u64,
    /// The backend runs GPU work (not `cpu`).
    gpu: bool,
}

impl Worker {
    fn run(&mut self, backend: &mut dyn ComputeBackend, job: &Job) -> Result<(), SyncError> {
        match job {
            Job::Heights(h) => self.heights(backend, h),
            Job::Post(p) => {
                // A full log means nobody collects: it drops them.
                let mut span = program::push_span;
                let last = Some(&mut self.last_posted);
                run_post(&self.ctx, self.t.rendered, self.t.post, p, backend, &mut span, last)
            }
            Job::Enqueue(h) => {
                let first = h.frames.first().map_or(0, |f| f.0);
                let wait = match h.wait_rendered {
                    Some(v)
                        if self.elide
                            && enqueue::host_saw_rendered(
                                &self.ctx,
                                self.t.rendered,
                                &mut self.seen,
                                v,
                                first,
                            )? =>
                    {
                        self.elided.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                    w => w,
                };
                enqueue::heights(backend, &h.frames, wait, h.signal_computed)
            }
            Job::EnqueuePost(p) => enqueue::post(backend, p.frame, p.pair, p.sync()),
            Job::Finish(reply) => {
                // The caller may have given up waiting: nothing to tell then.
                let _ = reply.send(backend.finish());
                Ok(())
            }
        }
    }

    /// A host-synchronous heights job (`bridged`, `none`).
    fn heights(&mut self, backend: &mut dyn ComputeBackend, job: &HeightsJob) -> Result<(), SyncError> {
        let first = job.frames.first().map_or(0, |f| f.0);
        let last = job.frames.last().map_or(0, |f| f.0);
        if let Some(v) = job.wait_rendered {
            let t0 = host_now_ns();
            self.ctx.wait_timeline(self.t.rendered, v, || {
                format!("'rendered' ≥ {v} (frame {} drawn) on the bridge thread", v - 1)
            })?;
            let t1 = host_now_ns();
            program::host_wait(Sem::Rendered, v, first, t1);
            program::host_span(first, Phase::WaitRendered, t0, t1);
        }
        for &(f, slot, ref params) in &job.frames {
            let t1 = host_now_ns();
            if self.gpu {
                program::submit(Track::Compute, f);
                program::scope(Track::Compute, Phase::Write, f..f + 1);
            }
            backend.write_slot_and_wait(f, slot, params)?;
            let t2 = host_now_ns();
            if self.gpu {
                // The compute API's own event said the kernel finished.
                program::join(Track::Compute, f, t2);
            }
            program::host_span(f, Phase::Write, t1, t2);
        }
        let t2 = host_now_ns();
        program::host_signal(Sem::Computed, job.signal_computed, last);
        self.ctx.signal_timeline(self.t.computed, job.signal_computed)?;
        program::host_span(last, Phase::Signal, t2, host_now_ns());
        Ok(())
    }
}

/// The thread's operations and spans, in its order ([`program`]), until the render thread takes
/// them: one shared buffer, appended to after each job and emptied by the taker, so neither side
/// allocates once it has grown. Bounded: when nobody collects, what does not fit is dropped.
#[derive(Clone, Default)]
pub(super) struct Records(Arc<Mutex<Vec<Rec>>>);

impl Records {
    /// Append `recs` (emptied) as far as the bound allows.
    fn put(&self, recs: &mut Vec<Rec>) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        recs.truncate(SPAN_BUFFER.saturating_sub(kept.len()));
        kept.append(recs);
    }

    /// Move everything recorded so far into `out`, in order.
    pub fn take(&self, out: &mut Vec<Rec>) {
        out.append(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// Which thread it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// `bridged`, `none`.
    Bridge,
    /// `external`: `elide`, skip an enqueued wait for `rendered` the thread sees reached.
    Submit { elide: bool },
}

impl Bridge {
    /// Start the thread; `capacity` bounds the jobs queued ahead of it.
    pub fn start(
        ctx: Arc<Context>,
        t: Timelines,
        role: Role,
        capacity: usize,
        mut backend: Box<dyn ComputeBackend>,
    ) -> Result<(Self, Records), SyncError> {
        // Bounded: in `none` nothing else ties the render thread to the bridge, and a slow writer
        // must not let jobs pile up. In `bridged` the plan already keeps the bridge within K + 2
        // frames, and a job's wait is for a draw submitted before the job was sent, so a full
        // queue cannot deadlock; the submission thread waits for the GPU only when asked to
        // (`Finish`) or after a failure.
        let (tx, rx) = mpsc::sync_channel::<Job>(capacity);
        // The thread's operations and spans; its log is handed over after each job.
        let records = Records::default();
        let out = records.clone();
        let gpu_scopes = crate::profile::gpu_timing();
        let failure = Arc::new(Mutex::new(None));
        let fail = failure.clone();
        let elided = Arc::new(AtomicU64::new(0));
        let gpu = backend.kind() != BackendKind::Cpu;
        let elide = role == Role::Submit { elide: true };
        let mut worker = Worker { ctx, t, elide, seen: 0, elided: elided.clone(), last_posted: 0, gpu };
        let name = if role == Role::Bridge { "vkhip-bridge" } else { "vkhip-submit" };
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                program::enable(Track::Bridge, gpu_scopes);
                let mut gpu_spans = Vec::new();
                let mut recs = Vec::new();
                let mut clock = None;
                // After each job: the backend's clock when it changed, then the job's records.
                let mut hand_over = |backend: &mut dyn ComputeBackend| {
                    let now = backend.clock_info();
                    if now != clock {
                        clock.clone_from(&now);
                        recs.extend(now.map(Rec::Clock));
                    }
                    backend.take_spans(&mut gpu_spans);
                    for s in gpu_spans.drain(..) {
                        program::push_span(s);
                    }
                    program::take(&mut recs);
                    out.put(&mut recs);
                };
                let guarded = |f: &mut dyn FnMut() -> Result<(), SyncError>, what: &str| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
                        Err(SyncError::Bridge(format!("the compute backend panicked {what}")))
                    })
                };
                for job in rx.iter() {
                    let ran = guarded(&mut || worker.run(backend.as_mut(), &job), "in a hand-off");
                    let handed = guarded(
                        &mut || {
                            hand_over(backend.as_mut());
                            Ok(())
                        },
                        "handing over its timings",
                    );
                    let Err(e) = ran.and(handed) else { continue };
                    let about = job.about();
                    // Returned to the render thread on its next hand-off: logged at debug only.
                    log::debug!("{name}, {about}: {e}");
                    *fail.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{about}: {e}"));
                    if job.enqueued() {
                        // What the stream took before the failure signals first: a host signal
                        // must not pass a GPU signal still pending.
                        if let Err(e) = guarded(&mut || Ok(backend.finish()?), "synchronising") {
                            log::debug!("{name}: after the failure, the stream: {e}");
                        }
                    }
                    // Release every draw that waits on `computed` (and every copy on `posted`)
                    // for a frame handed over so far, so the queue drains; then, until the
                    // render thread stops sending (it sees the failure on its next hand-off, or
                    // stops the thread), every job still sent is released the same way without
                    // running; `FrameSync::shutdown` releases any later promise.
                    release(&worker.ctx, worker.t, job.promises().1, &rx);
                    for late in rx.iter() {
                        release(&worker.ctx, worker.t, late.promises().1, &rx);
                    }
                    break;
                }
                backend
            })
            .map_err(|e| SyncError::Bridge(format!("could not start: {e}")))?;
        Ok((Bridge { jobs: Some(tx), thread: Some(thread), failure, elided }, records))
    }

    /// Wait until the thread has served every job sent so far and the compute API finished
    /// what they enqueued.
    pub fn finish(&self) -> Result<(), SyncError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Job::Finish(tx))?;
        match rx.recv() {
            Ok(done) => Ok(done?),
            Err(_) => Err(SyncError::Bridge(self.failure().unwrap_or_else(|| "it is gone".into()))),
        }
    }

    /// Enqueued waits for `rendered` the thread skipped so far.
    pub fn waits_elided(&self) -> u64 {
        self.elided.load(Ordering::Relaxed)
    }

    /// Queue a job; fails if the thread stopped (with its reason).
    pub fn send(&self, job: Job) -> Result<(), SyncError> {
        if let Some(f) = self.failure() {
            return Err(SyncError::Bridge(f));
        }
        let sent = self.jobs.as_ref().map(|tx| tx.send(job));
        if !matches!(sent, Some(Ok(()))) {
            return Err(SyncError::Bridge(self.failure().unwrap_or_else(|| "it is gone".into())));
        }
        Ok(())
    }

    /// Why the thread stopped, if it failed.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Close the queue and join; returns the backend (None if the thread panicked).
    pub fn stop(&mut self) -> Option<Box<dyn ComputeBackend>> {
        self.jobs.take();
        match self.thread.take()?.join() {
            Ok(b) => Some(b),
            Err(_) => {
                log::error!("the bridge thread panicked");
                None
            }
        }
    }
}

/// One post hand-off, on the bridge thread (`bridged`, `none`) or on the render thread (the
/// reference modes, `FrameSync::post_batch`): the host waits (Vulkan-signalled values only), the
/// filter, the host signal, each timed on the host clock (on the thread's own track) and given
/// to `span`, and recorded in order for the profiler ([`program`]: the filter on the compute
/// track when it is GPU work). `last_posted`, the bridge thread's: the last value it
/// host-signalled on `posted`, whose copies are host-waited before the next signal (see there).
pub(super) fn run_post(
    ctx: &Context,
    rendered: vk::Semaphore,
    post: Option<PostTimelineHandles>,
    job: &PostJob,
    backend: &mut dyn ComputeBackend,
    span: &mut dyn FnMut(Span),
    last_posted: Option<&mut u64>,
) -> Result<(), SyncError> {
    let Some(t) = post else {
        return Err(SyncError::Bridge("internal: a post hand-off without the post timelines".into()));
    };
    let f = job.frame;
    let host = program::host_track();
    let gpu = backend.kind() != BackendKind::Cpu;
    let mut span = |track, phase, a, b| span(Span::host(f, track, phase, a, b));
    let t0 = host_now_ns();
    if let Some(v) = job.wait_rendered {
        ctx.wait_timeline(rendered, v, || {
            format!("'rendered' ≥ {v} (scene of frame {f}) before its filter")
        })?;
        program::host_wait(Sem::Scene, v, f, host_now_ns());
    }
    if let Some(v) = job.wait_presented {
        ctx.wait_timeline(t.presented, v, || {
            format!("'presented' ≥ {v} (frame {} copied out) before the filter", v - 1)
        })?;
        program::host_wait(Sem::Presented, v, f, host_now_ns());
    }
    let t1 = host_now_ns();
    span(host, Phase::PostWait, t0, t1);
    if gpu {
        program::submit(Track::Compute, f);
        program::scope(Track::Compute, Phase::PostFilter, f..f + 1);
    }
    backend.post_and_wait(f, job.pair)?;
    let t2 = host_now_ns();
    if gpu {
        program::join(Track::Compute, f, t2);
        if program::gpu_scopes() && !backend.post_and_wait_timed() {
            // The compute track's filter scope was placed above, and no GPU span will fill it
            // (HIP's post stage has no timer): the kernel ran inside [t1, t2], a sound, wider
            // interval. Without GPU scopes nothing waits for it.
            span(Track::Compute, Phase::PostFilter, t1, t2);
        }
    }
    span(host, Phase::PostFilter, t1, t2);
    if let Some(v) = job.signal_posted {
        // The copies that waited for the previous signal: done already in practice (they were
        // submitted before the draws this job waited for). Host-waiting them lets the Khronos
        // layer 1.3.239 retire those waits and so its record of the previous host signal; without
        // it, with post batches (nothing else host-waits `presented` then), every host signal of
        // `posted` was reported as exceeding a "pending" one (VUID-VkSemaphoreSignalInfo-value-03259,
        // on the H100), although no queue signals `posted` in this mode.
        if let Some(&done) = last_posted.as_deref().filter(|done| **done > 0) {
            ctx.wait_timeline(t.presented, done, || {
                format!("'presented' ≥ {done} (the copies behind 'posted' = {done}) on the bridge thread")
            })?;
            program::host_wait(Sem::Presented, done, f, host_now_ns());
        }
        program::host_signal(Sem::Posted, v, f);
        program::host_signal(Sem::SceneFree, v, f);
        ctx.signal_timeline(t.posted, v)?;
        if let Some(last) = last_posted {
            *last = v;
        }
    }
    span(host, Phase::PostSignal, t2, host_now_ns());
    Ok(())
}

/// After a failure: host-signal `computed` and `posted` up to the highest value promised by the
/// failed job (`promised`: computed, posted) and every job still queued, so no draw or copy
/// waits forever and the queue drains. Values already reached are left alone.
fn release(ctx: &Context, t: Timelines, promised: (u64, u64), rx: &mpsc::Receiver<Job>) {
    let (mut c, mut p) = promised;
    for job in rx.try_iter() {
        let (_, (jc, jp)) = job.promises();
        c = c.max(jc);
        p = p.max(jp);
    }
    let raise = |sem: vk::Semaphore, v: u64| {
        if v > 0 && ctx.timeline_value(sem).is_ok_and(|now| now < v) {
            if let Err(e) = ctx.signal_timeline(sem, v) {
                log::warn!("compute thread: could not release waiting submissions: {e}");
            }
        }
    };
    raise(t.computed, c);
    if let Some(post) = t.post {
        raise(post.posted, p);
    }
}

/// The host-synchronous post hand-off's spans: a GPU backend whose filter has no GPU timer (HIP's
/// post stage) still fills the compute track's filter scope, from the host readings around the
/// call; one with a timer leaves it to the timer's span; without GPU scopes (GPU timing off)
/// there is no scope to fill.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::{ComputeError, GpuSync, GpuSyncSupport};
    use crate::profile::span::Stamp;
    use crate::vk::device::enumerate;
    use crate::vk::instance::Instance;

    /// A HIP-kinded backend whose filter takes 2 ms and is timed on the GPU or not.
    struct StandIn {
        timed: bool,
        filtered: Vec<(u64, usize)>,
    }

    impl ComputeBackend for StandIn {
        fn kind(&self) -> BackendKind {
            BackendKind::Hip
        }
        fn device_name(&self) -> String {
            "stand-in".into()
        }
        fn gpu_sync_support(&self) -> crate::compute::GpuSyncSupport {
            GpuSyncSupport { timeline: false, binary: false }
        }
        fn enqueue_gpu_synced(
            &mut self,
            _: u64,
            _: usize,
            _: &WaveParams,
            _: GpuSync,
        ) -> Result<(), ComputeError> {
            Err(ComputeError::Unsupported { backend: "stand-in", reason: "post only".into() })
        }
        fn write_slot_and_wait(&mut self, _: u64, _: usize, _: &WaveParams) -> Result<(), ComputeError> {
            Err(ComputeError::Unsupported { backend: "stand-in", reason: "post only".into() })
        }
        fn post_and_wait_timed(&mut self) -> bool {
            self.timed
        }
        fn post_and_wait(&mut self, frame: u64, pair: usize) -> Result<(), ComputeError> {
            std::thread::sleep(std::time::Duration::from_millis(2));
            self.filtered.push((frame, pair));
            Ok(())
        }
        fn finish(&mut self) -> Result<(), ComputeError> {
            Ok(())
        }
    }

    /// The spans of one post hand-off of frame 7, pair 1 (no waits, no signal).
    fn post_spans(ctx: &Context, timed: bool) -> Vec<Span> {
        let mut backend = StandIn { timed, filtered: Vec::new() };
        let handles = PostTimelineHandles { posted: vk::Semaphore::null(), presented: vk::Semaphore::null() };
        let job =
            PostJob { frame: 7, pair: 1, wait_rendered: None, wait_presented: None, signal_posted: None };
        let mut spans = Vec::new();
        run_post(ctx, vk::Semaphore::null(), Some(handles), &job, &mut backend, &mut |s| spans.push(s), None)
            .unwrap();
        assert_eq!(backend.filtered, [(7, 1)], "the filter ran once, on the job's pair");
        spans
    }

    /// A context on the first usable Vulkan device (lavapipe in CI; None, with a note: skip).
    fn context() -> Option<Arc<Context>> {
        let instance = Arc::new(Instance::new(false, &[]).unwrap());
        let Some(pd) = enumerate(&instance).unwrap().into_iter().find(|d| d.usable()) else {
            // CI installs lavapipe: a skip there is a failure.
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must provide a Vulkan device (mesa-vulkan-drivers)"
            );
            eprintln!("skipped: no usable Vulkan device (install mesa-vulkan-drivers)");
            return None;
        };
        Some(Context::new(instance, pd, false).unwrap())
    }

    #[test]
    fn an_untimed_gpu_filter_gets_its_compute_span_from_the_host_readings() {
        let Some(ctx) = context() else { return };
        let filter = |spans: &[Span], track: Track| -> Vec<Span> {
            spans.iter().filter(|s| s.track == track && s.phase == Phase::PostFilter).copied().collect()
        };

        // The bridge thread's recording with GPU scopes, as `--gpu-timing on` starts it.
        program::enable(Track::Bridge, true);
        let spans = post_spans(&ctx, false);
        let mut recs = Vec::new();
        program::take(&mut recs);
        let scoped = recs.iter().any(|r| {
            matches!(r, Rec::Op(o) if o.track == Track::Compute && o.frame == 7
                && matches!(o.kind, program::OpKind::Scope(Phase::PostFilter)))
        });
        assert!(scoped, "the compute track's filter scope was placed: {recs:?}");
        let host = program::host_track();
        assert_eq!(host, Track::Bridge);
        let on_host = filter(&spans, host);
        let on_compute = filter(&spans, Track::Compute);
        assert_eq!((on_host.len(), on_compute.len()), (1, 1), "{spans:?}");
        let (c, h) = (on_compute[0], on_host[0]);
        assert_eq!(c.frame, 7);
        let (Stamp::Host(a), Stamp::Host(b)) = (c.start, c.end) else {
            panic!("the compute span is on the host clock: {c:?}");
        };
        assert!(b - a >= 2_000_000, "it covers the 2 ms filter: {a}..{b}");
        assert_eq!((c.start, c.end), (h.start, h.end), "the same readings as the host's filter span");

        let spans = post_spans(&ctx, true);
        assert_eq!(filter(&spans, host).len(), 1, "{spans:?}");
        assert!(filter(&spans, Track::Compute).is_empty(), "the GPU timer's span is the only one: {spans:?}");

        // GPU timing off: no scope placed, so no compute span either.
        program::enable(Track::Bridge, false);
        let spans = post_spans(&ctx, false);
        assert_eq!(filter(&spans, host).len(), 1, "{spans:?}");
        assert!(filter(&spans, Track::Compute).is_empty(), "no scope to fill: {spans:?}");
        program::disable();
    }

    /// What a stand-in stream was asked, in order.
    #[derive(Clone, Debug, PartialEq)]
    enum Call {
        Heights(Vec<u64>, GpuSync),
        Post(u64, usize, crate::compute::post::PostSync),
        /// With `computed`'s value when the stream was synchronised.
        Finish(u64),
    }

    /// A CUDA-kinded backend that enqueues nothing: it writes down what it was asked, and
    /// fails the enqueue of frame `fail_at`.
    struct Stream {
        calls: Arc<Mutex<Vec<Call>>>,
        fail_at: Option<u64>,
        computed: (Arc<Context>, vk::Semaphore),
    }

    impl ComputeBackend for Stream {
        fn kind(&self) -> BackendKind {
            BackendKind::Cuda
        }
        fn device_name(&self) -> String {
            "stand-in stream".into()
        }
        fn gpu_sync_support(&self) -> GpuSyncSupport {
            GpuSyncSupport { timeline: true, binary: false }
        }
        fn enqueue_gpu_synced(
            &mut self,
            f: u64,
            s: usize,
            p: &WaveParams,
            sync: GpuSync,
        ) -> Result<(), ComputeError> {
            self.enqueue_batch_gpu_synced(&[(f, s, *p)], sync)
        }
        fn enqueue_batch_gpu_synced(
            &mut self,
            frames: &[(u64, usize, WaveParams)],
            sync: GpuSync,
        ) -> Result<(), ComputeError> {
            let ids: Vec<u64> = frames.iter().map(|f| f.0).collect();
            if self.fail_at.is_some_and(|f| ids.contains(&f)) {
                return Err(ComputeError::Unsupported {
                    backend: "stand-in",
                    reason: "the launch failed".into(),
                });
            }
            self.calls.lock().unwrap().push(Call::Heights(ids, sync));
            Ok(())
        }
        fn enqueue_post_gpu_synced(
            &mut self,
            frame: u64,
            pair: usize,
            sync: crate::compute::post::PostSync,
        ) -> Result<(), ComputeError> {
            self.calls.lock().unwrap().push(Call::Post(frame, pair, sync));
            Ok(())
        }
        fn write_slot_and_wait(&mut self, _: u64, _: usize, _: &WaveParams) -> Result<(), ComputeError> {
            Err(ComputeError::Unsupported { backend: "stand-in", reason: "enqueues only".into() })
        }
        fn finish(&mut self) -> Result<(), ComputeError> {
            let (ctx, computed) = &self.computed;
            self.calls.lock().unwrap().push(Call::Finish(ctx.timeline_value(*computed).unwrap()));
            Ok(())
        }
    }

    fn heights(frames: std::ops::Range<u64>, wait_rendered: Option<u64>) -> Job {
        let p = WaveParams::at_time(crate::sim::Grid { width: 4, height: 4 }, 0.0);
        let signal_computed = frames.end;
        let frames = frames.map(|f| (f, (f % 2) as usize, p)).collect();
        Job::Enqueue(HeightsJob { frames, wait_rendered, signal_computed })
    }

    #[test]
    fn the_submission_thread_enqueues_in_order_and_skips_only_waits_it_saw_met() {
        let Some(ctx) = context() else { return };
        let sem = |v| crate::vk::external::Semaphore::timeline(&ctx, v, false).unwrap();
        let (computed, rendered, posted, presented) = (sem(0), sem(0), sem(0), sem(0));
        let post = PostTimelineHandles { posted: posted.handle, presented: presented.handle };
        let t = Timelines { computed: computed.handle, rendered: rendered.handle, post: Some(post) };
        let calls = Arc::new(Mutex::new(Vec::new()));
        let stream = Stream { calls: calls.clone(), fail_at: None, computed: (ctx.clone(), computed.handle) };
        let (bridge, recs) =
            Bridge::start(ctx.clone(), t, Role::Submit { elide: true }, 4, Box::new(stream)).unwrap();

        // Draw 2 is done (rendered = 3) before the thread takes the hand-offs.
        ctx.signal_timeline(rendered.handle, 3).unwrap();
        bridge.send(heights(0..1, None)).unwrap();
        bridge.send(heights(1..2, Some(2))).unwrap(); // seen met: skipped
        bridge.send(heights(2..4, Some(5))).unwrap(); // not met: the stream waits
        let job = PostJob {
            frame: 3,
            pair: 1,
            wait_rendered: Some(4),
            wait_presented: Some(2),
            signal_posted: Some(4),
        };
        bridge.send(Job::EnqueuePost(job)).unwrap();
        bridge.finish().unwrap();

        let timeline = |w, s| GpuSync::Timeline { wait_rendered: w, signal_computed: Some(s) };
        let post_sync = crate::compute::post::PostSync {
            wait_rendered: Some(4),
            wait_presented: Some(2),
            signal_posted: Some(4),
        };
        assert_eq!(
            *calls.lock().unwrap(),
            [
                Call::Heights(vec![0], timeline(None, 1)),
                Call::Heights(vec![1], timeline(None, 2)),
                Call::Heights(vec![2, 3], timeline(Some(5), 4)),
                Call::Post(3, 1, post_sync),
                Call::Finish(0),
            ]
        );
        assert_eq!(bridge.waits_elided(), 1);
        // Nothing was host-signalled: the stream signals.
        assert_eq!(ctx.timeline_value(computed.handle).unwrap(), 0);

        // The profiler's model: the thread's read of `rendered` (a host wait on its own track)
        // comes before the hand-off it let skip the wait, and that hand-off waits for nothing.
        let mut taken = Vec::new();
        recs.take(&mut taken);
        // The read's span comes right before the host wait it recorded: the thread's previous
        // scope, so the wait's exposed time is nil (the read blocked nobody).
        let read = taken.iter().position(|r| matches!(r, Rec::Span(s) if s.track == Track::Bridge && s.phase == Phase::WaitRendered && s.frame == 1));
        let read = read.unwrap_or_else(|| panic!("no span of the read: {taken:#?}"));
        assert!(
            matches!(&taken[read + 1], Rec::Op(o) if o.kind == program::OpKind::Wait(Sem::Rendered, 3)),
            "{taken:#?}"
        );
        let ops: Vec<(Track, u64, program::OpKind)> = taken
            .into_iter()
            .filter_map(|r| match r {
                Rec::Op(o) => Some((o.track, o.frame, o.kind)),
                _ => None,
            })
            .collect();
        let at = |want: &dyn Fn(&(Track, u64, program::OpKind)) -> bool| {
            ops.iter().position(want).unwrap_or_else(|| panic!("missing in {ops:#?}"))
        };
        use program::OpKind::{Signal, Wait};
        let saw = at(&|o| *o == (Track::Bridge, 2, Wait(Sem::Rendered, 3)));
        let handed = at(&|o| o.0 == Track::Bridge && o.1 == 1 && matches!(o.2, Signal(Sem::Submit(..), _)));
        assert!(saw < handed, "{ops:#?}");
        assert!(!ops
            .iter()
            .any(|o| o.0 == Track::Compute && o.1 == 1 && matches!(o.2, Wait(Sem::Rendered, _))));
        at(&|o| *o == (Track::Compute, 2, Wait(Sem::Rendered, 5)));
        at(&|o| *o == (Track::Compute, 3, Wait(Sem::Scene, 4)));
        at(&|o| *o == (Track::Compute, 3, Signal(Sem::Posted, 4)));
        let mut bridge = bridge;
        assert!(bridge.stop().is_some());
    }

    #[test]
    fn a_failed_enqueue_waits_for_the_stream_then_releases_every_promised_draw() {
        let Some(ctx) = context() else { return };
        let sem = |v| crate::vk::external::Semaphore::timeline(&ctx, v, false).unwrap();
        let (computed, rendered) = (sem(0), sem(0));
        let t = Timelines { computed: computed.handle, rendered: rendered.handle, post: None };
        let calls = Arc::new(Mutex::new(Vec::new()));
        let stream =
            Stream { calls: calls.clone(), fail_at: Some(1), computed: (ctx.clone(), computed.handle) };
        // Capacity 4: the jobs queue up behind a thread that is not served yet.
        let (bridge, _recs) =
            Bridge::start(ctx.clone(), t, Role::Submit { elide: false }, 4, Box::new(stream)).unwrap();
        bridge.send(heights(0..1, None)).unwrap();
        let sent_after = [heights(1..2, Some(1)), heights(2..3, Some(2))].map(|j| bridge.send(j));
        let err = bridge.finish().unwrap_err().to_string();
        assert!(err.contains("frame 1") && err.contains("the launch failed"), "{err}");
        let e = bridge.send(heights(3..4, Some(3))).unwrap_err().to_string();
        assert!(e.contains("frame 1"), "{e}");
        // Once the thread is gone: the stream was synchronised after the failure and before any
        // host signal; then every value promised by a job that was sent was released (frame 2's,
        // if its send went through before the failure was seen).
        let mut bridge = bridge;
        assert!(bridge.stop().is_some());
        let first =
            Call::Heights(vec![0], GpuSync::Timeline { wait_rendered: None, signal_computed: Some(1) });
        assert_eq!(*calls.lock().unwrap(), [first, Call::Finish(0)]);
        let released = ctx.timeline_value(computed.handle).unwrap();
        let queued = if sent_after[1].is_ok() { 3 } else { 2 };
        assert_eq!(released, queued);
    }
}
