//! Submissions that return at once: each has a command buffer and a fence of its own, and
//! whatever it needs alive until the GPU is done (a staging buffer) travels with it. Finished
//! ones are reclaimed at the next submit; [`Submitter::finish`] and `Drop` wait for the rest on
//! their fences (Vulkan's own work: a host wait that returns within µs of the GPU).
//!
//! This is the shape of a frame loop's Vulkan side when the consumer is a stream: the GPU waits
//! for the consumer's release and signals Vulkan's value; the host never waits in between.

use super::device::Device;
use super::objects::{SharedBuffer, SharedSemaphore};
use super::submit::{record_and_submit, Around, Edge, Wait};
use crate::error::{Api, Error, Result};
use ash::vk;
use std::collections::VecDeque;
use std::time::Duration;

/// How long `finish` waits for the submissions in flight before it gives up.
const FINISH_TIMEOUT: Duration = Duration::from_secs(30);

/// One submission in flight.
struct InFlight {
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    /// Dropped once the fence has signalled.
    _keep: Option<Box<dyn std::any::Any + Send>>,
}

/// Non-blocking submissions on queue 0 of the device's queue family.
pub struct Submitter {
    device: Device,
    pool: vk::CommandPool,
    in_flight: VecDeque<InFlight>,
    /// Finished command buffers and fences, ready for reuse.
    free: Vec<(vk::CommandBuffer, vk::Fence)>,
}

// SAFETY: the handles are used only through `&mut self` (one thread at a time); Vulkan objects
// may move between threads.
unsafe impl Send for Submitter {}

impl Submitter {
    /// A command pool of the device's queue family.
    pub fn new(device: &Device) -> Result<Self> {
        let d = &device.inner.device;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(device.inner.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device.
        let pool = unsafe { d.create_command_pool(&info, None) }
            .map_err(|r| Error::vulkan("vkCreateCommandPool", r))?;
        Ok(Submitter { device: device.clone(), pool, in_flight: VecDeque::new(), free: Vec::new() })
    }

    /// Submissions not yet known to be finished.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Record with `record`, submit waiting on `waits` and signalling `signals`, and return at
    /// once; `keep` is dropped once the GPU is done with the submission.
    pub fn submit(
        &mut self,
        waits: &[Wait<'_>],
        signals: &[(&SharedSemaphore, u64)],
        record: impl FnOnce(vk::CommandBuffer),
        keep: Option<Box<dyn std::any::Any + Send>>,
    ) -> Result<()> {
        self.reclaim()?;
        let (cmd, fence) = self.take()?;
        if let Err(e) = record_and_submit(&self.device.inner, fence, cmd, waits, signals, record) {
            // Not pending (recording or the submit failed): reusable.
            self.free.push((cmd, fence));
            return Err(e);
        }
        self.in_flight.push_back(InFlight { cmd, fence, _keep: keep });
        Ok(())
    }

    /// Fill the first `words` 32-bit words of `buffer` with `value` between an acquire from and
    /// a release to the compute API, waiting for every `(semaphore, value)` of `waits` (at the
    /// transfer stage) and signalling `signal`, calling `around` at its [`Edge`]s; returns at
    /// once.
    pub fn fill_buffer(
        &mut self,
        buffer: &SharedBuffer,
        value: u32,
        words: u64,
        waits: &[(&SharedSemaphore, u64)],
        signal: Option<(&SharedSemaphore, u64)>,
        around: Around<'_>,
    ) -> Result<()> {
        if words == 0 || words * 4 > buffer.size() {
            return Err(Error::invalid(
                Api::Vulkan,
                format!("a fill of {words} words into a buffer of {} bytes", buffer.size()),
            ));
        }
        let d = self.device.inner.device.clone();
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let waits: Vec<Wait<'_>> = waits.iter().map(|&(s, v)| (s, v, transfer)).collect();
        let signals: Vec<_> = signal.into_iter().collect();
        let write = (transfer, vk::AccessFlags::TRANSFER_WRITE);
        self.submit(
            &waits,
            &signals,
            |cmd| {
                around(cmd, Edge::Begin);
                // SAFETY: `cmd` records on the device's family; the range lies inside the live
                // buffer (checked above); the buffer outlives the submission (the caller keeps
                // it until `finish`, or passes it in `keep`).
                unsafe {
                    buffer.cmd_acquire(cmd, write);
                    d.cmd_fill_buffer(cmd, buffer.buffer(), 0, words * 4, value);
                    buffer.cmd_release(cmd, write);
                }
                around(cmd, Edge::End);
            },
            None,
        )
    }

    /// Wait (on the fences) until every submission has finished, then reclaim them all.
    pub fn finish(&mut self) -> Result<()> {
        let d = &self.device.inner.device;
        let fences: Vec<_> = self.in_flight.iter().map(|f| f.fence).collect();
        if !fences.is_empty() {
            // SAFETY: submitted fences of this device.
            match unsafe { d.wait_for_fences(&fences, true, FINISH_TIMEOUT.as_nanos() as u64) } {
                Ok(()) => {}
                Err(vk::Result::TIMEOUT) => {
                    return Err(Error::timeout(
                        Api::Vulkan,
                        "vkWaitForFences",
                        "submissions in flight",
                        FINISH_TIMEOUT.as_secs(),
                    ))
                }
                Err(r) => return Err(Error::vulkan("vkWaitForFences", r)),
            }
        }
        self.reclaim()
    }

    /// Move finished submissions (their fence signalled) to the free list, dropping what they kept.
    fn reclaim(&mut self) -> Result<()> {
        let d = &self.device.inner.device;
        while let Some(first) = self.in_flight.front() {
            // SAFETY: a submitted fence of this device.
            let done = unsafe { d.get_fence_status(first.fence) }
                .map_err(|r| Error::vulkan("vkGetFenceStatus", r))?;
            if !done {
                break;
            }
            let Some(f) = self.in_flight.pop_front() else { break };
            // SAFETY: signalled, so no longer in use.
            unsafe { d.reset_fences(&[f.fence]) }.map_err(|r| Error::vulkan("vkResetFences", r))?;
            self.free.push((f.cmd, f.fence));
        }
        Ok(())
    }

    /// A free command buffer and fence, or new ones.
    fn take(&mut self) -> Result<(vk::CommandBuffer, vk::Fence)> {
        if let Some(pair) = self.free.pop() {
            return Ok(pair);
        }
        let d = &self.device.inner.device;
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: our pool, used only through `&mut self`.
        let cmd = unsafe { d.allocate_command_buffers(&alloc) }
            .map_err(|r| Error::vulkan("vkAllocateCommandBuffers", r))?[0];
        // SAFETY: valid device.
        match unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) } {
            Ok(fence) => Ok((cmd, fence)),
            Err(r) => {
                // SAFETY: never recorded or submitted.
                unsafe { d.free_command_buffers(self.pool, &[cmd]) };
                Err(Error::vulkan("vkCreateFence", r))
            }
        }
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            log::warn!("vulkan: waiting for submissions in flight before teardown failed: {e}");
            let d = &self.device.inner.device;
            // SAFETY: valid device; drains the queue so nothing below is still in use.
            if let Err(r) = unsafe { d.device_wait_idle() } {
                log::warn!("vulkan: vkDeviceWaitIdle: {r}");
            }
        }
        let d = &self.device.inner.device;
        // SAFETY: nothing is pending (finished or drained above); the pool frees its buffers.
        unsafe {
            for f in self.in_flight.drain(..) {
                d.destroy_fence(f.fence, None);
            }
            for (_, fence) in self.free.drain(..) {
                d.destroy_fence(fence, None);
            }
            d.destroy_command_pool(self.pool, None);
        }
    }
}
