//! The GPU-synced hand-offs of `external` off Vulkan's queue (cuda, hip): what is enqueued on the
//! compute API's stream, with its waits and signals, and recorded for the profiler in the calling
//! thread's order ([`crate::profile::program`]). One place for both callers: the submission thread
//! ([`super::bridge`], the default) and the render thread (`--enqueue render`, `host-wait`).

use super::SyncError;
use crate::compute::post::PostSync;
use crate::compute::{ComputeBackend, GpuSync};
use crate::profile::clock::host_now_ns;
use crate::profile::program::{self, Sem};
use crate::profile::{Phase, Track};
use crate::sim::WaveParams;
use crate::vk::device::Context;
use ash::vk;

/// One heights hand-off: wait `rendered ≥ wait` (if any) → write `frames` in order → signal
/// `computed = end`, enqueued on the stream; returns at once.
pub(super) fn heights(
    backend: &mut dyn ComputeBackend,
    frames: &[(u64, usize, WaveParams)],
    wait: Option<u64>,
    end: u64,
) -> Result<(), SyncError> {
    let start = frames.first().map_or(end, |f| f.0);
    program::submit(Track::Compute, start);
    if let Some(w) = wait {
        program::wait(Track::Compute, Sem::Rendered, w, start);
    }
    program::scope(Track::Compute, Phase::Write, start..end);
    program::signal(Track::Compute, Sem::Computed, end, end - 1);
    let sync = GpuSync::Timeline { wait_rendered: wait, signal_computed: Some(end) };
    Ok(backend.enqueue_batch_gpu_synced(frames, sync)?)
}

/// One post filter of a post hand-off (frame `frame`, pair `pair`): its GPU waits (`rendered`,
/// the scene is drawn; `presented`, the output's previous copy is done), the filter, its signal
/// of `posted`, as `sync` says, enqueued on the stream; returns at once.
pub(super) fn post(
    backend: &mut dyn ComputeBackend,
    frame: u64,
    pair: usize,
    sync: PostSync,
) -> Result<(), SyncError> {
    program::submit(Track::Compute, frame);
    if let Some(v) = sync.wait_rendered {
        program::wait(Track::Compute, Sem::Scene, v, frame);
    }
    if let Some(v) = sync.wait_presented {
        program::wait(Track::Compute, Sem::Presented, v, frame);
    }
    program::scope(Track::Compute, Phase::PostFilter, frame..frame + 1);
    if let Some(v) = sync.signal_posted {
        program::signal(Track::Compute, Sem::Posted, v, frame);
        program::signal(Track::Compute, Sem::SceneFree, v, frame);
    }
    Ok(backend.enqueue_post_gpu_synced(frame, pair, sync)?)
}

/// Whether the compute side's wait for `rendered ≥ value` (the hand-off of `frame`) can be
/// skipped because the host has seen the value reached: `seen` first (what this thread saw
/// before), else one read of the counter, which raises `seen`. A read that saw more is recorded
/// as this thread's host wait (so what the thread enqueues next is ordered after that draw, in
/// the profiler's model as on the GPU), after a `wait rendered` span around the read: the
/// thread's previous scope, so the profiler counts nothing of the hand-off as exposed on it
/// (the read blocked nobody).
pub(super) fn host_saw_rendered(
    ctx: &Context,
    rendered: vk::Semaphore,
    seen: &mut u64,
    value: u64,
    frame: u64,
) -> Result<bool, SyncError> {
    if *seen < value {
        let t0 = host_now_ns();
        let now = ctx.timeline_value(rendered)?;
        if now > *seen {
            let t1 = host_now_ns();
            program::host_span(frame, Phase::WaitRendered, t0, t1);
            program::host_wait(Sem::Rendered, now, now - 1, t1);
            *seen = now;
        }
    }
    Ok(*seen >= value)
}
