//! The bridge thread of `bridged` (and `none`): it owns the backend while the run lasts and
//! serves its jobs in the order the render thread sent them. A heights job is one batch:
//! host-wait `rendered` (a Vulkan-signalled value), write each slot of the batch with the compute
//! API's own wait, then host-signal `computed` once. A post job is one post hand-off
//! ([`run_post`], which the reference modes also run on the render thread).

use super::SyncError;
use crate::compute::BackendKind;
use crate::compute::ComputeBackend;
use crate::profile::clock::host_now_ns;
use crate::profile::program::{self, Rec, Sem};
use crate::profile::span::SPAN_BUFFER;
use crate::profile::{Phase, Span, Track};
use crate::sim::WaveParams;
use crate::vk::device::Context;
use ash::vk;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What the bridge thread does next, in the order the render thread asked.
pub(super) enum Job {
    Heights(HeightsJob),
    Post(PostJob),
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

/// The post timelines the bridge thread waits on and signals.
#[derive(Clone, Copy)]
pub(super) struct PostTimelineHandles {
    pub posted: vk::Semaphore,
    pub presented: vk::Semaphore,
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

/// The bridge thread and its job queue.
pub(super) struct Bridge {
    jobs: Option<mpsc::SyncSender<Job>>,
    thread: Option<JoinHandle<Box<dyn ComputeBackend>>>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Bridge {
    /// Start the thread; `capacity` bounds the jobs queued ahead of it.
    pub fn start(
        ctx: Arc<Context>,
        computed: vk::Semaphore,
        rendered: vk::Semaphore,
        post: Option<PostTimelineHandles>,
        capacity: usize,
        mut backend: Box<dyn ComputeBackend>,
    ) -> Result<(Self, mpsc::Receiver<Rec>), SyncError> {
        // Bounded: in `none` nothing else ties the render thread to the bridge, and a slow writer
        // must not let jobs pile up. In `bridged` the plan already keeps the bridge within K + 2
        // frames, and a job's wait is for a draw submitted before the job was sent, so a full
        // queue cannot deadlock.
        let (tx, rx) = mpsc::sync_channel::<Job>(capacity);
        // The thread's operations and spans, in its order ([`program`]); its log is handed over
        // after each job.
        let (span_tx, spans) = mpsc::sync_channel::<Rec>(SPAN_BUFFER);
        let gpu_scopes = crate::profile::gpu_timing();
        let failure = Arc::new(Mutex::new(None));
        let fail = failure.clone();
        let thread = std::thread::Builder::new()
            .name("vkhip-bridge".into())
            .spawn(move || {
                program::enable(Track::Bridge, gpu_scopes);
                let gpu = backend.kind() != BackendKind::Cpu;
                let mut gpu_spans = Vec::new();
                let mut recs = Vec::new();
                // After each job: the backend's clock, then the job's records (a full channel
                // means nobody collects: they are dropped).
                let mut hand_over = |backend: &mut dyn ComputeBackend| {
                    if let Some(c) = backend.clock_info() {
                        let _ = span_tx.try_send(Rec::Clock(c));
                    }
                    backend.take_spans(&mut gpu_spans);
                    for s in gpu_spans.drain(..) {
                        program::push_span(s);
                    }
                    program::take(&mut recs);
                    for r in recs.drain(..) {
                        let _ = span_tx.try_send(r);
                    }
                };
                // The last value this thread host-signalled on `posted` (0: none yet).
                let mut last_posted = 0;
                for job in rx.iter() {
                    let job = match job {
                        Job::Heights(h) => h,
                        Job::Post(p) => {
                            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                // A full channel means nobody collects: the log drops them.
                                let mut span = program::push_span;
                                let last = Some(&mut last_posted);
                                run_post(&ctx, rendered, post, &p, backend.as_mut(), &mut span, last)
                            }))
                            .unwrap_or_else(|_| Err(SyncError::Bridge("the post filter panicked".into())));
                            hand_over(backend.as_mut());
                            if let Err(e) = outcome {
                                log::debug!("bridge thread, post of frame {}: {e}", p.frame);
                                *fail.lock().unwrap_or_else(|p| p.into_inner()) =
                                    Some(format!("post of frame {}: {e}", p.frame));
                                release(&ctx, computed, post, (0, p.signal_posted.unwrap_or(0)), &rx);
                                break;
                            }
                            continue;
                        }
                    };
                    let first = job.frames.first().map_or(0, |f| f.0);
                    let last = job.frames.last().map_or(0, |f| f.0);
                    let mut step = || -> Result<(), SyncError> {
                        if let Some(v) = job.wait_rendered {
                            let t0 = host_now_ns();
                            ctx.wait_timeline(rendered, v, || {
                                format!("'rendered' ≥ {v} (frame {} drawn) on the bridge thread", v - 1)
                            })?;
                            let t1 = host_now_ns();
                            program::host_wait(Sem::Rendered, v, first, t1);
                            program::host_span(first, Phase::WaitRendered, t0, t1);
                        }
                        for &(f, slot, ref params) in &job.frames {
                            let t1 = host_now_ns();
                            if gpu {
                                program::submit(Track::Compute, f);
                                program::scope(Track::Compute, Phase::Write, f..f + 1);
                            }
                            backend.write_slot_and_wait(f, slot, params)?;
                            let t2 = host_now_ns();
                            if gpu {
                                // The compute API's own event said the kernel finished.
                                program::join(Track::Compute, f, t2);
                            }
                            program::host_span(f, Phase::Write, t1, t2);
                        }
                        let t2 = host_now_ns();
                        program::host_signal(Sem::Computed, job.signal_computed, last);
                        ctx.signal_timeline(computed, job.signal_computed)?;
                        program::host_span(last, Phase::Signal, t2, host_now_ns());
                        Ok(())
                    };
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut step))
                        .unwrap_or_else(|_| Err(SyncError::Bridge("the compute backend panicked".into())));
                    hand_over(backend.as_mut());
                    if let Err(e) = outcome {
                        // Returned to the render thread on its next compute(): logged at debug only.
                        log::debug!("bridge thread, frames {first}..={last}: {e}");
                        *fail.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("frame {first}: {e}"));
                        // Release every draw that waits on `computed` (and every copy on
                        // `posted`) for a frame handed over so far, so the queue drains;
                        // `FrameSync::shutdown` releases any later one.
                        release(&ctx, computed, post, (job.signal_computed, 0), &rx);
                        break;
                    }
                }
                backend
            })
            .map_err(|e| SyncError::Bridge(format!("could not start: {e}")))?;
        Ok((Bridge { jobs: Some(tx), thread: Some(thread), failure }, spans))
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
fn release(
    ctx: &Context,
    computed: vk::Semaphore,
    post: Option<PostTimelineHandles>,
    promised: (u64, u64),
    rx: &mpsc::Receiver<Job>,
) {
    let (mut c, mut p) = promised;
    for job in rx.try_iter() {
        match job {
            Job::Heights(h) => c = c.max(h.signal_computed),
            Job::Post(j) => p = p.max(j.signal_posted.unwrap_or(0)),
        }
    }
    let raise = |sem: vk::Semaphore, v: u64| {
        if v > 0 && ctx.timeline_value(sem).is_ok_and(|now| now < v) {
            if let Err(e) = ctx.signal_timeline(sem, v) {
                log::warn!("bridge thread: could not release waiting submissions: {e}");
            }
        }
    };
    raise(computed, c);
    if let Some(t) = post {
        raise(t.posted, p);
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

    #[test]
    fn an_untimed_gpu_filter_gets_its_compute_span_from_the_host_readings() {
        let instance = Arc::new(Instance::new(false, &[]).unwrap());
        let Some(pd) = enumerate(&instance).unwrap().into_iter().find(|d| d.usable()) else {
            // CI installs lavapipe: a skip there is a failure.
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must provide a Vulkan device (mesa-vulkan-drivers)"
            );
            eprintln!("skipped: no usable Vulkan device (install mesa-vulkan-drivers)");
            return;
        };
        let ctx = Context::new(instance, pd, false).unwrap();
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
}
