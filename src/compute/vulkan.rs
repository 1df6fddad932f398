//! `vulkan` backend: a compute shader on the render device writes the slot. No interop at all:
//! the baseline a user would pick instead of CUDA or HIP. It can run every mode: GPU-side
//! (`external`, `binary`) by submitting its dispatch to the queue with the protocol's waits and
//! signals, host-side (`bridged`, `blocking`) by waiting on its own fence.

use super::{plan_sync, BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport, SemaphoreRef};
use crate::shaders::SinewavePush;
use crate::sim::WaveParams;
use crate::sync::SemaphoreHandles;
use crate::vk::device::{Context, WAIT_TIMEOUT};
use crate::vk::external::Slot;
use crate::vk::pipeline::SinewavePipeline;
use crate::vk::{cmd_memory_barrier, CallContext, VkError};
use ash::vk;
use std::sync::Arc;

fn vkerr(e: VkError) -> ComputeError {
    ComputeError::Vulkan(e.to_string())
}

/// One command buffer + fence per slot: a slot's buffer is re-recorded only after its fence says
/// the previous dispatch for that slot finished (a Vulkan fence: never a compute-API value).
pub struct VulkanBackend {
    pipeline: SinewavePipeline,
    pool: vk::CommandPool,
    cmds: Vec<vk::CommandBuffer>,
    fences: Vec<vk::Fence>,
    sems: SemaphoreHandles,
    ctx: Arc<Context>,
}

impl VulkanBackend {
    pub fn new(ctx: &Arc<Context>, slots: &[Slot], sems: SemaphoreHandles) -> Result<Self, ComputeError> {
        Self::create(ctx, slots, sems).map_err(vkerr)
    }

    fn create(ctx: &Arc<Context>, slots: &[Slot], sems: SemaphoreHandles) -> Result<Self, VkError> {
        let pipeline = SinewavePipeline::new(ctx, slots)?;
        let d = &ctx.device;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(ctx.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device.
        let pool = unsafe { d.create_command_pool(&info, None) }.call("vkCreateCommandPool")?;
        let mut me =
            VulkanBackend { pipeline, pool, cmds: Vec::new(), fences: Vec::new(), sems, ctx: ctx.clone() };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(slots.len() as u32);
        // SAFETY: pool owned by `me`.
        me.cmds = unsafe { d.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        for _ in slots {
            let info = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
            // SAFETY: valid device.
            me.fences.push(unsafe { d.create_fence(&info, None) }.call("vkCreateFence")?);
        }
        Ok(me)
    }

    /// Wait for the slot's previous dispatch, re-record its command buffer, and submit it.
    fn submit(
        &mut self,
        slot: usize,
        params: &WaveParams,
        waits: &[(vk::Semaphore, u64)],
        signals: &[(vk::Semaphore, u64)],
    ) -> Result<(), VkError> {
        let d = &self.ctx.device;
        let (cmd, fence) = (self.cmds[slot], self.fences[slot]);
        // SAFETY: the fence belongs to this device; it is signalled when the last use finished.
        match unsafe { d.wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64) } {
            Ok(()) => {}
            Err(vk::Result::TIMEOUT) => {
                return Err(VkError::Timeout {
                    what: format!("the previous dispatch for slot {slot}"),
                    seconds: WAIT_TIMEOUT.as_secs(),
                })
            }
            Err(e) => return Err(VkError::Call { call: "vkWaitForFences", result: e }),
        }
        // SAFETY: the fence is signalled, so the command buffer is no longer pending.
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()).call("vkResetCommandBuffer")?;
            let begin =
                vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            d.begin_command_buffer(cmd, &begin).call("vkBeginCommandBuffer")?;
        }
        let push = SinewavePush::from(params);
        if waits.is_empty() {
            // Host-synchronised modes: the host already waited for the slot's previous reader, but
            // Vulkan needs its own execution dependency for the write-after-read on the slot: the
            // earlier draws (submission order) finish their vertex reads before this dispatch writes.
            // SAFETY: recording into `cmd`, outside a render pass.
            unsafe {
                cmd_memory_barrier(
                    d,
                    cmd,
                    (vk::PipelineStageFlags::VERTEX_SHADER, vk::AccessFlags::empty()),
                    (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                )
            };
        }
        self.pipeline.record_dispatch(cmd, slot, &push);
        // SAFETY: recording was begun above.
        unsafe { d.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;

        let waits: Vec<_> =
            waits.iter().map(|&(sem, v)| (sem, v, vk::PipelineStageFlags::COMPUTE_SHADER)).collect();
        // Unsignal the fence only now: if anything above failed it stays signalled, so later
        // waits on it (finish, teardown) do not wait for a submission that never happened.
        // SAFETY: the fence is signalled and not in use by a pending submission.
        unsafe { d.reset_fences(&[fence]) }.call("vkResetFences")?;
        let submitted = self.ctx.submit_with(cmd, &waits, signals, fence);
        if submitted.is_err() {
            // Nothing will signal the fence: replace it with a signalled one.
            let info = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
            // SAFETY: the failed submission did not take the fence; valid device.
            if let Ok(new) = unsafe { d.create_fence(&info, None) } {
                // SAFETY: the old fence is not used by any submission.
                unsafe { d.destroy_fence(fence, None) };
                self.fences[slot] = new;
            }
        }
        submitted
    }
}

impl ComputeBackend for VulkanBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Vulkan
    }

    fn device_name(&self) -> String {
        self.ctx.physical.name.clone()
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: true, binary: !self.sems.binary.is_empty() }
    }

    fn enqueue_gpu_synced(
        &mut self,
        slot: usize,
        params: &WaveParams,
        sync: GpuSync,
    ) -> Result<(), ComputeError> {
        let plan = plan_sync("vulkan", sync, true, self.sems.binary.len())?;
        let handle = |r: SemaphoreRef| match r {
            SemaphoreRef::TimelineComputed => self.sems.computed,
            SemaphoreRef::TimelineRendered => self.sems.rendered,
            SemaphoreRef::BinaryComputed(i) => self.sems.binary[i].0,
            SemaphoreRef::BinaryRendered(i) => self.sems.binary[i].1,
        };
        let waits: Vec<_> = plan.wait.map(|w| (handle(w.semaphore), w.value)).into_iter().collect();
        let signals = [(handle(plan.signal.semaphore), plan.signal.value)];
        self.submit(slot, params, &waits, &signals).map_err(vkerr)
    }

    fn write_slot_and_wait(&mut self, slot: usize, params: &WaveParams) -> Result<(), ComputeError> {
        self.submit(slot, params, &[], &[]).map_err(vkerr)?;
        let fence = self.fences[slot];
        // SAFETY: fence submitted above.
        unsafe { self.ctx.device.wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64) }
            .call("vkWaitForFences")
            .map_err(vkerr)
    }

    fn finish(&mut self) -> Result<(), ComputeError> {
        // SAFETY: fences of this device; each is signalled or pending.
        unsafe { self.ctx.device.wait_for_fences(&self.fences, true, WAIT_TIMEOUT.as_nanos() as u64) }
            .call("vkWaitForFences")
            .map_err(vkerr)
    }
}

impl Drop for VulkanBackend {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: wait for our own fences first, so nothing recorded here is pending; then the
        // pool (freeing its command buffers) and the fences can go.
        unsafe {
            let waited = if self.fences.is_empty() {
                Ok(())
            } else {
                d.wait_for_fences(&self.fences, true, WAIT_TIMEOUT.as_nanos() as u64)
            };
            if let Err(e) = waited {
                log::warn!("vulkan backend teardown: vkWaitForFences: {e}");
                let _ = self.ctx.queue_wait_idle();
            }
            for &f in &self.fences {
                d.destroy_fence(f, None);
            }
            d.destroy_command_pool(self.pool, None);
        }
    }
}
