//! The bridge thread of `bridged` (and `none`): it owns the backend while the run lasts and
//! serves one batch at a time — host-wait `rendered` (a Vulkan-signalled value), write each slot
//! of the batch with the compute API's own wait, then host-signal `computed` once.

use super::SyncError;
use crate::compute::ComputeBackend;
use crate::profile::clock::host_now_ns;
use crate::profile::span::SPAN_BUFFER;
use crate::profile::{Phase, Span, Track};
use crate::sim::WaveParams;
use crate::vk::device::Context;
use ash::vk;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One hand-off: the frames of a batch, in order, and what to wait for and signal around them.
pub(super) struct Job {
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
        capacity: usize,
        mut backend: Box<dyn ComputeBackend>,
    ) -> Result<(Self, mpsc::Receiver<Span>), SyncError> {
        // Bounded: in `none` nothing else ties the render thread to the bridge, and a slow writer
        // must not let jobs pile up. In `bridged` the plan already keeps the bridge within K + 2
        // frames, and a job's wait is for a draw submitted before the job was sent, so a full
        // queue cannot deadlock.
        let (tx, rx) = mpsc::sync_channel::<Job>(capacity);
        let (span_tx, spans) = mpsc::sync_channel::<Span>(SPAN_BUFFER);
        let failure = Arc::new(Mutex::new(None));
        let fail = failure.clone();
        let thread = std::thread::Builder::new()
            .name("vkhip-bridge".into())
            .spawn(move || {
                let mut gpu_spans = Vec::new();
                for job in rx.iter() {
                    let first = job.frames.first().map_or(0, |f| f.0);
                    let last = job.frames.last().map_or(0, |f| f.0);
                    let span = |f, phase, a, b| {
                        // A full channel means nobody collects: drop the span.
                        let _ = span_tx.try_send(Span::host(f, Track::Bridge, phase, a, b));
                    };
                    let mut step = || -> Result<(), SyncError> {
                        if let Some(v) = job.wait_rendered {
                            let t0 = host_now_ns();
                            ctx.wait_timeline(rendered, v, || {
                                format!("'rendered' ≥ {v} (frame {} drawn) on the bridge thread", v - 1)
                            })?;
                            span(first, Phase::WaitRendered, t0, host_now_ns());
                        }
                        for &(f, slot, ref params) in &job.frames {
                            let t1 = host_now_ns();
                            backend.write_slot_and_wait(f, slot, params)?;
                            span(f, Phase::Write, t1, host_now_ns());
                        }
                        let t2 = host_now_ns();
                        ctx.signal_timeline(computed, job.signal_computed)?;
                        span(last, Phase::Signal, t2, host_now_ns());
                        backend.take_spans(&mut gpu_spans);
                        for s in gpu_spans.drain(..) {
                            let _ = span_tx.try_send(s);
                        }
                        Ok(())
                    };
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut step))
                        .unwrap_or_else(|_| Err(SyncError::Bridge("the compute backend panicked".into())));
                    if let Err(e) = outcome {
                        // Returned to the render thread on its next compute(): logged at debug only.
                        log::debug!("bridge thread, frames {first}..={last}: {e}");
                        *fail.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("frame {first}: {e}"));
                        // Release every draw that waits on `computed` for a frame handed over so
                        // far, so the queue drains; `FrameSync::shutdown` releases any later one.
                        let promised =
                            rx.try_iter().map(|j| j.signal_computed).fold(job.signal_computed, u64::max);
                        if let Err(e) = ctx.signal_timeline(computed, promised) {
                            log::warn!("bridge thread: could not release waiting draws: {e}");
                        }
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
