//! `vulkan` backend: a compute shader on the render device writes the slot. No interop at all:
//! the baseline a user would pick instead of CUDA or HIP. It can run every mode: GPU-side
//! (`external`, `binary`) by submitting its dispatch to the queue with the protocol's waits and
//! signals, host-side (`bridged`, `blocking`) by waiting on its own fence.
//!
//! `cuda-in-vulkan` is this backend with one command swapped: the CUDA backend's kernel, launched
//! in the same command buffer through `VK_NVX_binary_import` ([`super::cuda::in_vulkan`]) instead
//! of the shader's dispatch. Everything around it — waits, signals, fences, timestamps — is shared.
//!
//! Profiling: each dispatch's command buffer writes three timestamps, as the draw's do
//! ([`crate::vk::timestamps`]): its start, the moment its wait for `rendered` was satisfied (a
//! barrier from the wait's stage chains with the semaphore wait), and its end (at the compute stage:
//! the dispatch's own work, not the draws queued before it). They are read once
//! the slot's fence says the dispatch finished, and leave as Vulkan ticks. Their queries are reset
//! from the host (`hostQueryReset`) where the device can, else in the command buffer.
//!
//! One submission per frame ([`crate::sync`], "One submission per frame"): the renderer records
//! the write into the draw's command buffer through [`ComputeBackend::record_write`]; this
//! backend's own command buffers, fences and timestamps are then unused, and the draw's
//! command buffer times the write.
//!
//! Post stage (`--post outline`): [`ComputeBackend::attach_post`] builds the filter over the
//! pairs' images ([`super::post::PostSurface::Image`]): `shaders/outline.comp` with a descriptor
//! set per pair ([`super::outline::OutlineShader`]), or for `cuda-in-vulkan` `kernels/outline.hip`
//! on the views' NVX handles ([`super::cuda::in_vulkan::OutlineInVulkan`]);
//! [`ComputeBackend::record_post`] records it into the caller's command buffer (one submission
//! per frame: the caller's barriers and timestamps around it).
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): one dispatch writes the slot, which matches the CPU
//! reference within the tolerance `vkhip verify` uses.
//!
//! ```
//! use std::sync::Arc;
//! use vkhip::compute::vulkan::VulkanBackend;
//! use vkhip::compute::{BackendKind, ComputeBackend};
//! use vkhip::sim::{compare_with_reference, Grid, WaveParams};
//! use vkhip::sync::{FrameSemaphores, SyncMode, SyncPlan, SyncRequest};
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::external::{Slot, SlotMemory};
//! use vkhip::vk::instance::Instance;
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
//! let ctx = Context::new(instance, pd, false).unwrap();
//! let auto = SyncRequest::mode(SyncMode::Auto);
//! let plan = SyncPlan::resolve(&auto, BackendKind::Vulkan, &ctx.physical).unwrap();
//! assert_eq!(plan.mode, SyncMode::External); // it waits and signals on its own queue
//! let sems = FrameSemaphores::new(&ctx, &plan).unwrap();
//! let grid = Grid { width: 96, height: 40 };
//! let slot = || Slot::new(&ctx, grid.bytes(), SlotMemory::HostMapped, false).unwrap();
//! let slots: Vec<Slot> = (0..plan.slots).map(|_| slot()).collect();
//! let mut backend = VulkanBackend::new(&ctx, &slots, sems.handles()).unwrap();
//! assert!(backend.gpu_sync_support().timeline);
//!
//! let params = WaveParams::at_time(grid, 2.5);
//! backend.write_slot_and_wait(0, 2, &params).unwrap();
//! // SAFETY: a host-coherent mapping of grid.len() floats; the dispatch's fence was waited for.
//! let heights = unsafe { std::slice::from_raw_parts(slots[2].mapped().unwrap(), grid.len()) };
//! let c = compare_with_reference(&params, heights, 1e-5);
//! assert_eq!(c.mismatches, 0, "{c:?}");
//! assert!(heights.iter().any(|&h| h.abs() > 0.1));
//! backend.finish().unwrap();
//! ```

use super::cuda::in_vulkan::{OutlineInVulkan, SinewaveInVulkan};
use super::outline::{image_views, OutlineShader};
use super::post::{PostKind, PostResources};
use super::{
    semaphore_ops, BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport, SemaphoreHandles,
    SemaphoreRef,
};
use crate::profile::{Phase, Span, Stamp, Track};
use crate::shaders::SinewavePush;
use crate::sim::WaveParams;
use crate::vk::device::{Context, WAIT_TIMEOUT};
use crate::vk::external::Slot;
use crate::vk::pipeline::SinewavePipeline;
use crate::vk::{cmd_memory_barrier, CallContext, VkError};
use ash::vk;
use std::sync::Arc;

/// The stage at which a dispatch waits for `rendered` (its first write of the slot).
const WRITE_STAGE: vk::PipelineStageFlags = vk::PipelineStageFlags::COMPUTE_SHADER;

/// Timestamps per dispatch submitted on its own (with GPU timing): start, after the wait, end.
/// One-submission frames write none here: the draw's command buffer times the write
/// ([`crate::vk::timestamps::Layout::Joined`]).
pub const STAMPS: u32 = 3;

/// What writes the slot: the compute shader, or the CUDA kernel recorded into the same command
/// buffer (`--backend cuda-in-vulkan`).
enum Kernel {
    Shader(SinewavePipeline),
    Cuda(SinewaveInVulkan),
}

/// What filters a post pair (`--post outline`): the compute shader, or the CUDA kernel in the
/// queue (`cuda-in-vulkan`).
enum PostFilter {
    Shader(OutlineShader),
    Cuda(OutlineInVulkan),
}

/// One command buffer + fence per slot: a slot's buffer is re-recorded only after its fence says
/// the previous dispatch for that slot finished (a Vulkan fence: never a compute-API value).
pub struct VulkanBackend {
    /// Timestamp triples, one per slot (None without timestamp support).
    queries: Option<vk::QueryPool>,
    /// (frame, waited for `rendered`) each slot's triple holds, until read.
    timed: Vec<Option<(u64, bool)>>,
    mask: u64,
    spans: Vec<Span>,
    kernel: Kernel,
    /// The post filter, once [`ComputeBackend::attach_post`] built it.
    post: Option<PostFilter>,
    pool: vk::CommandPool,
    cmds: Vec<vk::CommandBuffer>,
    fences: Vec<vk::Fence>,
    sems: SemaphoreHandles,
    ctx: Arc<Context>,
}

impl VulkanBackend {
    pub fn new(ctx: &Arc<Context>, slots: &[Slot], sems: SemaphoreHandles) -> Result<Self, ComputeError> {
        let pipeline = SinewavePipeline::new(ctx, slots)?;
        Ok(Self::create(ctx, slots, sems, Kernel::Shader(pipeline))?)
    }

    /// The same backend with the CUDA backend's kernel launched in the queue instead of the
    /// shader (`--backend cuda-in-vulkan`; `ctx` made by [`Context::new_with`] for it).
    pub fn with_cuda_kernel(
        ctx: &Arc<Context>,
        slots: &[Slot],
        sems: SemaphoreHandles,
    ) -> Result<Self, ComputeError> {
        let kernel = SinewaveInVulkan::new(ctx, slots)?;
        Ok(Self::create(ctx, slots, sems, Kernel::Cuda(kernel))?)
    }

    fn create(
        ctx: &Arc<Context>,
        slots: &[Slot],
        sems: SemaphoreHandles,
        kernel: Kernel,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(ctx.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device.
        let pool = unsafe { d.create_command_pool(&info, None) }.call("vkCreateCommandPool")?;
        let bits = ctx.physical.timestamp_bits;
        let mut me = VulkanBackend {
            queries: None,
            timed: vec![None; slots.len()],
            mask: if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 },
            spans: Vec::new(),
            kernel,
            post: None,
            pool,
            cmds: Vec::new(),
            fences: Vec::new(),
            sems,
            ctx: ctx.clone(),
        };
        if bits > 0 && crate::profile::gpu_timing() {
            let info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(STAMPS * slots.len() as u32);
            // SAFETY: valid device; the pool is destroyed in Drop.
            let pool = unsafe { d.create_query_pool(&info, None) }.call("vkCreateQueryPool")?;
            if ctx.physical.host_query_reset {
                // SAFETY: a new pool, unused; hostQueryReset is enabled with the device.
                unsafe { d.reset_query_pool(pool, 0, STAMPS * slots.len() as u32) };
            }
            me.queries = Some(pool);
        }
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
        frame: u64,
        slot: usize,
        params: &WaveParams,
        waits: &[(vk::Semaphore, u64)],
        signals: &[(vk::Semaphore, u64)],
    ) -> Result<(), ComputeError> {
        let ctx = self.ctx.clone();
        let d = &ctx.device;
        let (cmd, fence) = (self.cmds[slot], self.fences[slot]);
        // SAFETY: the fence belongs to this device; it is signalled when the last use finished.
        match unsafe { d.wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64) } {
            Ok(()) => {}
            Err(vk::Result::TIMEOUT) => {
                return Err(VkError::Timeout {
                    what: format!("the previous dispatch for slot {slot}"),
                    seconds: WAIT_TIMEOUT.as_secs(),
                }
                .into())
            }
            Err(e) => return Err(VkError::Call { call: "vkWaitForFences", result: e }.into()),
        }
        self.collect(slot);
        // SAFETY: the fence is signalled, so the command buffer is no longer pending.
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()).call("vkResetCommandBuffer")?;
            let begin =
                vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            d.begin_command_buffer(cmd, &begin).call("vkBeginCommandBuffer")?;
        }
        let stamps = self.queries.map(|q| (q, STAMPS * slot as u32));
        if let Some((q, first)) = stamps {
            // SAFETY: recording into `cmd`, outside a render pass; the triple's previous results
            // were read above. The execution-only barrier orders the second timestamp after the
            // submission's wait (at WRITE_STAGE), as in `vk::timestamps`.
            unsafe {
                if ctx.physical.host_query_reset {
                    // The slot's fence says its previous dispatch finished: the triple is free.
                    d.reset_query_pool(q, first, STAMPS);
                } else {
                    d.cmd_reset_query_pool(cmd, q, first, STAMPS);
                }
                d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, q, first);
                d.cmd_pipeline_barrier(
                    cmd,
                    WRITE_STAGE,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &[],
                );
                d.cmd_write_timestamp(cmd, WRITE_STAGE, q, first + 1);
            }
        }
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
        // SAFETY: `cmd` is recording, outside a render pass, and submitted below, while the
        // backend lives.
        let recorded = unsafe { self.record_write(cmd, slot, params) };
        // On failure the buffer stays in the recording state; the next use of the slot resets it.
        recorded?;
        if let Some((q, first)) = stamps {
            // SAFETY: recording into `cmd`; the triple was reset above.
            unsafe { d.cmd_write_timestamp(cmd, WRITE_STAGE, q, first + 2) };
        }
        // SAFETY: recording was begun above.
        unsafe { d.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;

        let waits: Vec<_> = waits.iter().map(|&(sem, v)| (sem, v, WRITE_STAGE)).collect();
        // Unsignal the fence only now: if anything above failed it stays signalled, so later
        // waits on it (finish, teardown) do not wait for a submission that never happened.
        // SAFETY: the fence is signalled and not in use by a pending submission.
        unsafe { d.reset_fences(&[fence]) }.call("vkResetFences")?;
        let submitted = self.ctx.submit_with(cmd, &waits, signals, fence);
        if submitted.is_ok() && stamps.is_some() {
            self.timed[slot] = Some((frame, !waits.is_empty()));
        }
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
        Ok(submitted?)
    }
}

impl ComputeBackend for VulkanBackend {
    fn kind(&self) -> BackendKind {
        match self.kernel {
            Kernel::Shader(_) => BackendKind::Vulkan,
            Kernel::Cuda(_) => BackendKind::CudaInVulkan,
        }
    }

    fn device_name(&self) -> String {
        self.ctx.physical.name.clone()
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: true, binary: !self.sems.binary.is_empty() }
    }

    fn enqueue_gpu_synced(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
        sync: GpuSync,
    ) -> Result<(), ComputeError> {
        let plan = semaphore_ops(self.kind().name(), sync, true, self.sems.binary.len())?;
        let handle = |r: SemaphoreRef| match r {
            SemaphoreRef::TimelineComputed => self.sems.computed,
            SemaphoreRef::TimelineRendered => self.sems.rendered,
            SemaphoreRef::BinaryComputed(i) => self.sems.binary[i].0,
            SemaphoreRef::BinaryRendered(i) => self.sems.binary[i].1,
        };
        let waits: Vec<_> = plan.wait.map(|w| (handle(w.semaphore), w.value)).into_iter().collect();
        let signals: Vec<_> = plan.signal.map(|s| (handle(s.semaphore), s.value)).into_iter().collect();
        self.submit(frame, slot, params, &waits, &signals)
    }

    unsafe fn record_write(
        &mut self,
        cmd: vk::CommandBuffer,
        slot: usize,
        params: &WaveParams,
    ) -> Result<(), ComputeError> {
        match &self.kernel {
            Kernel::Shader(pipeline) => {
                pipeline.record_dispatch(cmd, slot, &SinewavePush::from(params));
                Ok(())
            }
            // SAFETY: per this function's contract `cmd` is recording, outside a render pass, on
            // the device the kernel was loaded into; the slots outlive the backend (the session
            // drops it first).
            Kernel::Cuda(kernel) => Ok(unsafe { kernel.record(cmd, slot, params) }?),
        }
    }

    /// The pairs must be [`super::post::PostSurface::Image`]s of this device (storage images);
    /// the shader's descriptor sets (or the kernel's NVX handles) are made once, here.
    fn attach_post(&mut self, post: PostResources) -> Result<(), ComputeError> {
        if post.kind != PostKind::Outline {
            self.post = None;
            return Ok(());
        }
        self.post = Some(match self.kernel {
            Kernel::Shader(_) => {
                let views = image_views("vulkan", &post.pairs)?;
                PostFilter::Shader(OutlineShader::new(&self.ctx, &views, post.width, post.height)?)
            }
            Kernel::Cuda(_) => PostFilter::Cuda(OutlineInVulkan::new(&self.ctx, &post)?),
        });
        Ok(())
    }

    unsafe fn record_post(&mut self, cmd: vk::CommandBuffer, pair: usize) -> Result<(), ComputeError> {
        match &self.post {
            // SAFETY: per this function's contract (the trait's): `cmd` is recording outside a
            // render pass on this device, the pair's images are GENERAL and outlive it.
            Some(PostFilter::Shader(shader)) => unsafe { shader.record(cmd, pair) },
            // SAFETY: as above; the kernel was loaded into this device.
            Some(PostFilter::Cuda(kernel)) => Ok(unsafe { kernel.record(cmd, pair) }?),
            None => Err(ComputeError::Unsupported {
                backend: self.kind().name(),
                reason: "record_post before attach_post".into(),
            }),
        }
    }

    fn write_slot_and_wait(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
    ) -> Result<(), ComputeError> {
        self.submit(frame, slot, params, &[], &[])?;
        let fence = self.fences[slot];
        // SAFETY: fence submitted above.
        Ok(unsafe { self.ctx.device.wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64) }
            .call("vkWaitForFences")?)
    }

    fn finish(&mut self) -> Result<(), ComputeError> {
        // SAFETY: fences of this device; each is signalled or pending.
        Ok(unsafe { self.ctx.device.wait_for_fences(&self.fences, true, WAIT_TIMEOUT.as_nanos() as u64) }
            .call("vkWaitForFences")?)
    }

    fn take_spans(&mut self, out: &mut Vec<Span>) {
        for slot in 0..self.timed.len() {
            if self.timed[slot].is_some()
                // SAFETY: a fence of this device.
                && unsafe { self.ctx.device.get_fence_status(self.fences[slot]) } == Ok(true)
            {
                self.collect(slot);
            }
        }
        out.append(&mut self.spans);
    }
}

impl VulkanBackend {
    /// Read slot `slot`'s timestamps, if a dispatch left some (call only once its fence is
    /// signalled).
    fn collect(&mut self, slot: usize) {
        let (Some(q), Some((frame, waited))) = (self.queries, self.timed[slot].take()) else { return };
        let mut ticks = [0u64; STAMPS as usize];
        // SAFETY: the dispatch that wrote the triple finished (its fence is signalled).
        let read = unsafe {
            self.ctx.device.get_query_pool_results(
                q,
                STAMPS * slot as u32,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64,
            )
        };
        if let Err(e) = read {
            log::debug!("vulkan backend: timestamps of frame {frame}: {e}");
            return;
        }
        let [start, ready, end] = ticks.map(|t| t & self.mask);
        let span = |phase, a, b| Span {
            frame,
            track: Track::Compute,
            phase,
            start: Stamp::Vulkan(a),
            end: Stamp::Vulkan(b),
        };
        if waited {
            self.spans.push(span(Phase::WaitRendered, start, ready));
        }
        self.spans.push(span(Phase::Write, ready, end));
        self.spans.truncate(crate::profile::span::SPAN_BUFFER);
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
            if let Some(q) = self.queries {
                d.destroy_query_pool(q, None);
            }
            d.destroy_command_pool(self.pool, None);
        }
    }
}
