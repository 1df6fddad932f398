//! GPU timestamps around each frame's draw command buffer: the per-phase GPU-time seam the
//! profiler builds on. One pair of queries per frame in flight; a pair is read back when its
//! command buffer is reused (the throttle has then seen that frame finish) or at the end.

use super::device::Context;
use super::{CallContext, VkError};
use ash::vk;
use std::sync::Arc;

/// Timestamp pairs for `slots` command buffers used round-robin.
pub struct DrawTimer {
    ctx: Arc<Context>,
    pool: vk::QueryPool,
    /// Which frame each pair last recorded (None: nothing pending).
    pending: Vec<Option<u64>>,
    mask: u64,
    ns_per_tick: f64,
    /// (frame, GPU milliseconds) of every frame read back so far.
    pub measured: Vec<(u64, f64)>,
}

impl DrawTimer {
    /// `Ok(None)` when the queue has no timestamps.
    pub fn new(ctx: &Arc<Context>, slots: usize) -> Result<Option<Self>, VkError> {
        let bits = ctx.physical.timestamp_bits;
        if bits == 0 || ctx.physical.timestamp_period <= 0.0 {
            return Ok(None);
        }
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(2 * slots as u32);
        // SAFETY: valid device.
        let pool = unsafe { ctx.device.create_query_pool(&info, None) }.call("vkCreateQueryPool")?;
        Ok(Some(DrawTimer {
            ctx: ctx.clone(),
            pool,
            pending: vec![None; slots],
            mask: if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 },
            ns_per_tick: ctx.physical.timestamp_period as f64,
            measured: Vec::new(),
        }))
    }

    /// Read pair `index` if a finished frame left results there. With `wait`, block until they are
    /// available (only after the queue is idle).
    fn collect(&mut self, index: usize, wait: bool) {
        let Some(frame) = self.pending[index] else { return };
        let mut ticks = [0u64; 2];
        let flags = vk::QueryResultFlags::TYPE_64
            | if wait { vk::QueryResultFlags::WAIT } else { vk::QueryResultFlags::empty() };
        // SAFETY: the pair was written by a submitted command buffer; results are copied out.
        match unsafe {
            self.ctx.device.get_query_pool_results(self.pool, 2 * index as u32, &mut ticks, flags)
        } {
            Ok(()) => {
                let dt = ticks[1].wrapping_sub(ticks[0]) & self.mask;
                self.measured.push((frame, dt as f64 * self.ns_per_tick / 1e6));
            }
            Err(vk::Result::NOT_READY) => log::debug!("timestamps of frame {frame} not ready; skipped"),
            Err(e) => log::debug!("vkGetQueryPoolResults: {e}"),
        }
        self.pending[index] = None;
    }

    /// At the start of `cmd` (outside a render pass): read what pair `index` held, reset it,
    /// write the start timestamp for `frame`.
    ///
    /// # Safety
    /// `cmd` is recording; the previous command buffer that used pair `index` has finished.
    pub unsafe fn begin(&mut self, cmd: vk::CommandBuffer, index: usize, frame: u64) {
        self.collect(index, false);
        let d = &self.ctx.device;
        // SAFETY: per this function's contract.
        unsafe {
            d.cmd_reset_query_pool(cmd, self.pool, 2 * index as u32, 2);
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, self.pool, 2 * index as u32);
        }
        self.pending[index] = Some(frame);
    }

    /// At the end of `cmd`: the end timestamp of pair `index`.
    ///
    /// # Safety
    /// `cmd` is recording and [`Self::begin`] was recorded into it for `index`.
    pub unsafe fn end(&mut self, cmd: vk::CommandBuffer, index: usize) {
        // SAFETY: per this function's contract.
        unsafe {
            self.ctx.device.cmd_write_timestamp(
                cmd,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                self.pool,
                2 * index as u32 + 1,
            )
        };
    }

    /// Read every pending pair (call after the queue is idle); results sorted by frame.
    pub fn finish(&mut self) -> Vec<f64> {
        for i in 0..self.pending.len() {
            self.collect(i, true);
        }
        self.measured.sort_by_key(|m| m.0);
        self.measured.iter().map(|m| m.1).collect()
    }
}

impl Drop for DrawTimer {
    fn drop(&mut self) {
        // SAFETY: owners drop the timer after the command buffers using it finished.
        unsafe { self.ctx.device.destroy_query_pool(self.pool, None) };
    }
}
