//! GPU timestamps of each frame's command buffer, read back without waiting when the command
//! buffer's set is reused (the throttle has then seen that frame finish) or at the end.
//!
//! [`Layout::Split`] — the draw alone (its compute was a submission of its own), three timestamps:
//! 1. **start** — top of pipe, first command: when the queue started the command buffer. This
//!    can come before the submission's wait on `computed` is satisfied (the wait is at the vertex
//!    stage, and the implementation may start earlier stages).
//! 2. **readable** — after a pipeline barrier whose source stage is the stage the submission waits
//!    `computed` at, and whose destination is all commands, a timestamp at that same stage. A
//!    barrier whose first scope includes the wait's stage chains with the semaphore wait (as for a
//!    swapchain acquire semaphore), and the timestamp write is in the barrier's second scope, so
//!    this timestamp is written only once `computed` was reached. At the wait's stage (not bottom
//!    of pipe) it does not also wait for the previous draw's fragment work. The spec lets an
//!    implementation write a timestamp at any later stage, so "readable" is an upper bound of the
//!    moment the wait was satisfied; the profiler's draw scope starts there, after the draw's
//!    waits (a wait is an instant before its first work in the profiler's model).
//! 3. **end** — bottom of pipe, last command: the draw finished.
//!
//! [`Layout::Joined`] — one-submission frames (dispatch → barrier → draw; see `sync`'s module note), four
//! timestamps and no barrier of their own: **write start** (compute stage, after the barrier that
//! orders the write after the slot's previous draw), **write end** (compute stage, after the
//! dispatch), **readable** (vertex stage, after the barrier from the write to the draw's reads),
//! **end** (bottom of pipe). They leave as the compute track's write span and the queue's
//! "wait computed" (write end → readable: the barrier) and draw spans; the profiler records the
//! two barriers between the write and the draw (`crate::render`), so the checker proves the same
//! two orders as for two submissions.
//!
//! **The profiler's own cost.** Where the device has `hostQueryReset` (Vulkan 1.2; lavapipe and
//! NVIDIA do), each set is reset from the host in [`DrawTimer::prepare`] instead of by a
//! `vkCmdResetQueryPool` recorded at the start of the command buffer, which the H100 paid for in
//! the idle time before the command buffer's first timestamp (docs/ARCHITECTURE.md, "The
//! profiler's own cost"). Per frame a one-submission frame then writes 4 timestamps (2 at the
//! compute stage, 1 at the vertex stage, 1 at bottom of pipe), records no reset and no barrier for
//! timing, and reads 4 queries with one `vkGetQueryPoolResults`; a split frame writes 3 here and 3
//! in the dispatch's command buffer ([`crate::compute::vulkan`]), plus one timing-only barrier in
//! each. `--gpu-timing off` writes none (`app::profiling::gpu_timestamps_per_frame` counts them).
//!
//! Spans leave as raw ticks ([`Stamp::Vulkan`]); the profiler maps them to the host clock.
//!
//! # Examples
//!
//! On any Vulkan device: with GPU timing off there is no timer at all; with it on, a device
//! that has timestamps (lavapipe does) returns a frame's two draw spans, in order, once the
//! command buffer ran.
//!
//! ```
//! use ash::vk;
//! use std::sync::Arc;
//! use vkhip::profile::{Phase, Stamp, Track};
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::instance::Instance;
//! use vkhip::vk::timestamps::{DrawTimer, Layout};
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
//! let ctx = Context::new(instance, pd, false).unwrap();
//! vkhip::profile::set_gpu_timing(false);
//! assert!(DrawTimer::new(&ctx, 2, Layout::Split).unwrap().is_none());
//! vkhip::profile::set_gpu_timing(true);
//! let has_timestamps = ctx.physical.timestamp_bits > 0 && ctx.physical.timestamp_period > 0.0;
//! let timer = DrawTimer::new(&ctx, 2, Layout::Split).unwrap();
//! assert_eq!(timer.is_some(), has_timestamps);
//! if let Some(mut timer) = timer {
//!     timer.prepare(1, 42); // frame 42 uses triple 1
//!     ctx.one_shot(&[], |cmd| {
//!         // SAFETY: recording the one-shot command buffer; triple 1 was never used.
//!         unsafe {
//!             timer.record_begin(cmd, 1, vk::PipelineStageFlags::VERTEX_SHADER);
//!             timer.end(cmd, 1);
//!         }
//!     })
//!     .unwrap();
//!     timer.submitted(1);
//!     timer.finish(); // one_shot waited for the queue
//!     let mut spans = Vec::new();
//!     timer.take_spans(&mut spans);
//!     let got: Vec<(u64, Track, Phase)> = spans.iter().map(|s| (s.frame, s.track, s.phase)).collect();
//!     assert_eq!(got, [(42, Track::Queue, Phase::WaitComputed), (42, Track::Queue, Phase::Draw)]);
//!     let ticks = |s: Stamp| match s {
//!         Stamp::Vulkan(t) => t,
//!         Stamp::Host(_) | Stamp::Gpu(_) => panic!("draw spans leave as Vulkan ticks"),
//!     };
//!     assert_eq!(ticks(spans[0].end), ticks(spans[1].start));
//!     assert!(ticks(spans[0].start) <= ticks(spans[0].end) && ticks(spans[1].start) <= ticks(spans[1].end));
//! }
//! ```

use super::device::Context;
use super::{CallContext, VkError};
use crate::profile::{Phase, Span, Stamp, Track};
use ash::vk;
use std::sync::Arc;

/// Timestamps the post stage adds to a draw's command buffer on Vulkan's queue.
const POST_STAMPS: u32 = 3;

/// What one frame's command buffer holds, and so which timestamps it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The draw alone (its compute was submitted apart): start, readable, end — three
    /// timestamps and one execution-only barrier that exists for the readable timestamp.
    Split,
    /// Dispatch → barrier → draw in one command buffer: write start, write end, readable, end —
    /// four timestamps and no barrier of their own (the protocol's two barriers order them).
    Joined,
    /// The post stage's copy submission (`--post`, off Vulkan's queue): start, readable (after
    /// its wait for `posted`), end — the copy is readable → end.
    PostCopy,
}

impl Layout {
    /// Timestamps written per frame.
    pub const fn stamps(self) -> u32 {
        match self {
            Layout::Split | Layout::PostCopy => 3,
            Layout::Joined => 4,
        }
    }
}

/// Timestamp sets (one per frame in flight) for command buffers used round-robin.
pub struct DrawTimer {
    ctx: Arc<Context>,
    pool: vk::QueryPool,
    layout: Layout,
    /// The draw's command buffer filters and copies too (`--post` on Vulkan's queue): three
    /// more timestamps after the draw's end — filter start, filter end (= copy start), copy end.
    post: bool,
    /// Reset each set from the host before its command buffer is submitted (`hostQueryReset`)
    /// instead of recording `vkCmdResetQueryPool` into it.
    host_reset: bool,
    /// Which frame each set holds once its command buffer was submitted (None: nothing
    /// pending).
    pending: Vec<Option<u64>>,
    /// Which frame each set was recorded for, until [`Self::submitted`].
    recorded: Vec<Option<u64>>,
    mask: u64,
    /// Spans read back and not yet taken.
    ready: Vec<Span>,
}

impl DrawTimer {
    /// `Ok(None)` when the queue has no timestamps, or GPU timing is off
    /// ([`crate::profile::gpu_timing`]).
    pub fn new(ctx: &Arc<Context>, buffers: usize, layout: Layout) -> Result<Option<Self>, VkError> {
        Self::with_post(ctx, buffers, layout, false)
    }

    /// [`Self::new`]; with `post`, each set has the post stage's three timestamps too (see
    /// [`Self::post_stamp`]).
    pub fn with_post(
        ctx: &Arc<Context>,
        buffers: usize,
        layout: Layout,
        post: bool,
    ) -> Result<Option<Self>, VkError> {
        let per = layout.stamps() + if post { POST_STAMPS } else { 0 };
        let bits = ctx.physical.timestamp_bits;
        if bits == 0 || ctx.physical.timestamp_period <= 0.0 || !crate::profile::gpu_timing() {
            return Ok(None);
        }
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(per * buffers as u32);
        // SAFETY: valid device.
        let pool = unsafe { ctx.device.create_query_pool(&info, None) }.call("vkCreateQueryPool")?;
        let host_reset = ctx.physical.host_query_reset;
        if host_reset {
            // SAFETY: a new pool, not used by any command buffer; hostQueryReset is enabled on
            // the device whenever the physical device has it (`Context::new_with`).
            unsafe { ctx.device.reset_query_pool(pool, 0, per * buffers as u32) };
        }
        Ok(Some(DrawTimer {
            ctx: ctx.clone(),
            pool,
            layout,
            post,
            host_reset,
            pending: vec![None; buffers],
            recorded: vec![None; buffers],
            mask: if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 },
            ready: Vec::new(),
        }))
    }

    /// Timestamps one frame writes.
    pub fn stamps_per_frame(&self) -> u32 {
        self.layout.stamps() + if self.post { POST_STAMPS } else { 0 }
    }

    fn first(&self, index: usize) -> u32 {
        self.stamps_per_frame() * index as u32
    }

    /// Post stage on Vulkan's queue: timestamp `n` (0: filter start, 1: filter end, 2: copy end)
    /// of set `index`, after the draw's own.
    ///
    /// # Safety
    /// As [`Self::stamp`]; the timer was made [`Self::with_post`].
    pub unsafe fn post_stamp(
        &self,
        cmd: vk::CommandBuffer,
        index: usize,
        n: u32,
        stage: vk::PipelineStageFlags,
    ) {
        // SAFETY: per this function's contract.
        unsafe { self.stamp(cmd, index, self.layout.stamps() + n, stage) };
    }

    /// Read set `index` if a finished frame left results there. With `wait`, block until they
    /// are available (only after the queue is idle).
    fn collect(&mut self, index: usize, wait: bool) {
        let Some(frame) = self.pending[index] else { return };
        let mut ticks = [0u64; 4 + POST_STAMPS as usize];
        let ticks = &mut ticks[..self.stamps_per_frame() as usize];
        let flags = vk::QueryResultFlags::TYPE_64
            | if wait { vk::QueryResultFlags::WAIT } else { vk::QueryResultFlags::empty() };
        // SAFETY: the set was written by a submitted command buffer; results are copied out.
        match unsafe { self.ctx.device.get_query_pool_results(self.pool, self.first(index), ticks, flags) } {
            Ok(()) => {
                let mut t = [0u64; 4 + POST_STAMPS as usize];
                for (m, &tick) in t.iter_mut().zip(ticks.iter()) {
                    *m = tick & self.mask;
                }
                let span = |track, phase, a, b| Span {
                    frame,
                    track,
                    phase,
                    start: Stamp::Vulkan(a),
                    end: Stamp::Vulkan(b),
                };
                match self.layout {
                    Layout::Split => {
                        self.ready.push(span(Track::Queue, Phase::WaitComputed, t[0], t[1]));
                        self.ready.push(span(Track::Queue, Phase::Draw, t[1], t[2]));
                    }
                    Layout::Joined => {
                        self.ready.push(span(Track::Compute, Phase::Write, t[0], t[1]));
                        self.ready.push(span(Track::Queue, Phase::WaitComputed, t[1], t[2]));
                        self.ready.push(span(Track::Queue, Phase::Draw, t[2], t[3]));
                    }
                    Layout::PostCopy => self.ready.push(span(Track::Queue, Phase::PostCopy, t[1], t[2])),
                }
                if self.post {
                    let b = self.layout.stamps() as usize;
                    self.ready.push(span(Track::Compute, Phase::PostFilter, t[b], t[b + 1]));
                    self.ready.push(span(Track::Queue, Phase::PostCopy, t[b + 1], t[b + 2]));
                }
                // Bounded even when nobody takes them (verify).
                self.ready.truncate(crate::profile::span::SPAN_BUFFER);
            }
            Err(vk::Result::NOT_READY) => log::debug!("timestamps of frame {frame} not ready; skipped"),
            Err(e) => log::debug!("vkGetQueryPoolResults: {e}"),
        }
        self.pending[index] = None;
    }

    /// Frame `frame` is about to use set `index`: read what the set held (its previous frame's
    /// results), reset it from the host where the device can, and remember `frame` for it. Every
    /// frame, whether its command buffer is recorded afresh or reused; the caller has throttled,
    /// so the set's previous command buffer has finished.
    pub fn prepare(&mut self, index: usize, frame: u64) {
        self.collect(index, false);
        if self.host_reset {
            // SAFETY: the command buffer that last used the set finished (the caller's throttle
            // saw its frame's `rendered`), and its results were read just above.
            unsafe {
                self.ctx.device.reset_query_pool(self.pool, self.first(index), self.stamps_per_frame())
            };
        }
        self.recorded[index] = Some(frame);
    }

    /// Record the reset of set `index` into `cmd`, where the device cannot reset queries from the
    /// host (with `hostQueryReset`, [`Self::prepare`] did it and this records nothing).
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass; every submission of it runs after the previous
    /// command buffer that used set `index` has finished.
    pub unsafe fn reset(&self, cmd: vk::CommandBuffer, index: usize) {
        if !self.host_reset {
            // SAFETY: per this function's contract.
            unsafe {
                self.ctx.device.cmd_reset_query_pool(
                    cmd,
                    self.pool,
                    self.first(index),
                    self.stamps_per_frame(),
                )
            };
        }
    }

    /// Timestamp `n` of set `index`, written at `stage`.
    ///
    /// # Safety
    /// `cmd` is recording and [`Self::reset`] (or the host reset) came before for `index`.
    pub unsafe fn stamp(&self, cmd: vk::CommandBuffer, index: usize, n: u32, stage: vk::PipelineStageFlags) {
        // SAFETY: per this function's contract.
        unsafe { self.ctx.device.cmd_write_timestamp(cmd, stage, self.pool, self.first(index) + n) };
    }

    /// [`Layout::Split`], at the start of `cmd` (outside a render pass): reset set `index`, write
    /// its start timestamp, then the barrier and the readable timestamp (see the module note).
    /// `wait_stage` is the stage the submission waits for the heights at. The commands depend on
    /// `index` alone, so a command buffer holding them can be submitted again for later frames.
    ///
    /// # Safety
    /// `cmd` is recording; every submission of it runs after the previous command buffer that
    /// used set `index` has finished, and after [`Self::prepare`] for that frame.
    pub unsafe fn record_begin(
        &self,
        cmd: vk::CommandBuffer,
        index: usize,
        wait_stage: vk::PipelineStageFlags,
    ) {
        // SAFETY: per this function's contract.
        unsafe {
            self.reset(cmd, index);
            self.stamp(cmd, index, 0, vk::PipelineStageFlags::TOP_OF_PIPE);
            // An execution-only barrier: no memory is made visible here (the draw's own
            // semaphore wait does that); it only orders the next timestamp after the wait.
            self.ctx.device.cmd_pipeline_barrier(
                cmd,
                wait_stage,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[],
            );
            self.stamp(cmd, index, 1, wait_stage);
        }
    }

    /// The command buffer that recorded set `index` was submitted: its results will come.
    /// (Until then nothing reads the set: a command buffer that failed to end or submit never
    /// wrote it.)
    pub fn submitted(&mut self, index: usize) {
        self.pending[index] = self.recorded[index].take();
    }

    /// At the end of `cmd`: the end timestamp of set `index` (bottom of pipe).
    ///
    /// # Safety
    /// `cmd` is recording and the set's reset was recorded before (see [`Self::reset`]).
    pub unsafe fn end(&self, cmd: vk::CommandBuffer, index: usize) {
        // SAFETY: per this function's contract.
        unsafe { self.stamp(cmd, index, self.layout.stamps() - 1, vk::PipelineStageFlags::BOTTOM_OF_PIPE) };
    }

    /// Move the spans read back so far into `out`.
    pub fn take_spans(&mut self, out: &mut Vec<Span>) {
        out.append(&mut self.ready);
    }

    /// Read every pending set (call after the queue is idle).
    pub fn finish(&mut self) {
        for i in 0..self.pending.len() {
            self.collect(i, true);
        }
    }
}

impl Drop for DrawTimer {
    fn drop(&mut self) {
        // SAFETY: owners drop the timer after the command buffers using it finished.
        unsafe { self.ctx.device.destroy_query_pool(self.pool, None) };
    }
}
