//! One-shot submissions on the device's queue, and the read-backs built on them: what samples and
//! tests use to play the Vulkan reader, waiting and signalling like a draw would. Not for a frame
//! loop (each call waits on a fence).

use super::device::{Device, Inner};
use super::handoff::ImageAccess;
use super::memory::{self, find_memory_type};
use super::objects::{SharedBuffer, SharedImage, SharedSemaphore};
use super::one_shot::OneShot;
use crate::error::{Api, Error, Result};
use ash::vk;
use std::time::Duration;

/// How long a one-shot submission may take before it fails: something upstream never signalled.
pub const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(30);

/// A wait of a one-shot submission: the semaphore, the value (ignored for binary ones), and the
/// stage that waits.
pub type Wait<'a> = (&'a SharedSemaphore, u64, vk::PipelineStageFlags);

/// Where a one-shot transfer's commands begin and end in its command buffer: what a caller's
/// `around` hook records there (a profiler's timestamps, a debug label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Before the acquire, the first command.
    Begin,
    /// After the release, the last command.
    End,
}

/// A caller's hook called with the command buffer at each [`Edge`] of a one-shot transfer.
pub type Around<'a> = &'a mut dyn FnMut(vk::CommandBuffer, Edge);

impl Device {
    /// Record commands with `record`, submit them to queue 0 of [`Device::queue_family`] waiting
    /// on `waits` and signalling `signals` (value ignored for binary semaphores), and wait on a
    /// fence until they finished (at most [`ONE_SHOT_TIMEOUT`]).
    pub fn submit_one_shot(
        &self,
        waits: &[Wait<'_>],
        signals: &[(&SharedSemaphore, u64)],
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<()> {
        let inner = &self.inner;
        let d = &inner.device;
        let semaphores = waits.iter().map(|w| w.0).chain(signals.iter().map(|s| s.0));
        for s in semaphores {
            self.check_own(s.device_handle(), "a semaphore")?;
        }
        let mut guard = inner.one_shot.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(OneShot::new(d, inner.queue_family)?);
        }
        let Some(one) = guard.as_ref() else { unreachable!("made above") };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(one.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is ours and locked for this whole call.
        let cmd = unsafe { d.allocate_command_buffers(&alloc) }
            .map_err(|r| Error::vulkan("vkAllocateCommandBuffers", r))?[0];
        let result = submit_and_wait(inner, one.fence, cmd, waits, signals, record);
        // SAFETY: the submission finished (or never started, or the queue was drained below).
        unsafe { d.free_command_buffers(one.pool, &[cmd]) };
        result
    }

    /// Copy `buffer` to the host once `wait` (if any) is reached, as a reader on the GPU would
    /// (acquire from the compute API, copy, release back), then signal `signal` (if any). Returns
    /// the bytes.
    pub fn read_buffer(
        &self,
        buffer: &SharedBuffer,
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
    ) -> Result<Vec<u8>> {
        self.read_buffer_around(buffer, wait, signal, &mut |_, _| {})
    }

    /// [`Device::read_buffer`], calling `around` at the [`Edge`]s of its commands.
    pub fn read_buffer_around(
        &self,
        buffer: &SharedBuffer,
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
        around: Around<'_>,
    ) -> Result<Vec<u8>> {
        self.check_own(buffer.device_handle(), "the buffer")?;
        let host = HostBuffer::new(&self.inner, buffer.size(), vk::BufferUsageFlags::TRANSFER_DST)?;
        let d = &self.inner.device;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let waits: Vec<Wait<'_>> = wait.map(|(s, v)| (s, v, transfer)).into_iter().collect();
        let signals: Vec<_> = signal.into_iter().collect();
        self.submit_one_shot(&waits, &signals, |cmd| {
            let region = vk::BufferCopy { src_offset: 0, dst_offset: 0, size: buffer.size() };
            around(cmd, Edge::Begin);
            // SAFETY: `cmd` is recording on this device's queue family; both buffers are live and
            // large enough.
            unsafe {
                buffer.cmd_acquire(cmd, (transfer, vk::AccessFlags::TRANSFER_READ));
                d.cmd_copy_buffer(cmd, buffer.buffer(), host.buffer, &[region]);
                host.cmd_host_visible(d, cmd);
                buffer.cmd_release(cmd, (transfer, vk::AccessFlags::empty()));
            }
            around(cmd, Edge::End);
        })?;
        host.read()
    }

    /// Copy `data` into the start of `buffer` once `wait` (if any) is reached, as a writer on the
    /// GPU would (acquire from the compute API, copy from a staging buffer, release back), then
    /// signal `signal` (if any), calling `around` at the [`Edge`]s of its commands. More bytes
    /// than the buffer holds are refused before any call.
    pub fn write_buffer(
        &self,
        buffer: &SharedBuffer,
        data: &[u8],
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
        around: Around<'_>,
    ) -> Result<()> {
        self.check_own(buffer.device_handle(), "the buffer")?;
        let bytes = data.len() as u64;
        if bytes == 0 || bytes > buffer.size() {
            return Err(Error::invalid(
                Api::Vulkan,
                format!("a write of {bytes} bytes into a buffer of {} bytes", buffer.size()),
            ));
        }
        let staging = HostBuffer::new(&self.inner, bytes, vk::BufferUsageFlags::TRANSFER_SRC)?;
        staging.write(data)?;
        let region = vk::BufferCopy { src_offset: 0, dst_offset: 0, size: bytes };
        self.write_with(buffer, wait, signal, around, |d, cmd| {
            // SAFETY: `cmd` is recording on this device's queue family; both buffers are live and
            // large enough (checked above); the staging memory was written before the submit.
            unsafe { d.cmd_copy_buffer(cmd, staging.buffer, buffer.buffer(), &[region]) }
        })
    }

    /// Fill the first `words` 32-bit words of `buffer` with `value` (`vkCmdFillBuffer`), with
    /// `wait` and `signal` as [`Device::write_buffer`].
    pub fn fill_buffer(
        &self,
        buffer: &SharedBuffer,
        value: u32,
        words: u64,
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
        around: Around<'_>,
    ) -> Result<()> {
        self.check_own(buffer.device_handle(), "the buffer")?;
        if words == 0 || words * 4 > buffer.size() {
            return Err(Error::invalid(
                Api::Vulkan,
                format!("a fill of {words} words into a buffer of {} bytes", buffer.size()),
            ));
        }
        self.write_with(buffer, wait, signal, around, |d, cmd| {
            // SAFETY: `cmd` is recording on this device's queue family; the range lies inside
            // the live buffer (checked above) and is a multiple of 4 bytes.
            unsafe { d.cmd_fill_buffer(cmd, buffer.buffer(), 0, words * 4, value) }
        })
    }

    /// One transfer write into `buffer` between an acquire from the compute API and a release
    /// back to it, waiting `wait` and signalling `signal` (a one-shot submission).
    fn write_with(
        &self,
        buffer: &SharedBuffer,
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
        around: Around<'_>,
        write: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<()> {
        let d = &self.inner.device;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let waits: Vec<Wait<'_>> = wait.map(|(s, v)| (s, v, transfer)).into_iter().collect();
        let signals: Vec<_> = signal.into_iter().collect();
        self.submit_one_shot(&waits, &signals, |cmd| {
            around(cmd, Edge::Begin);
            // SAFETY: `cmd` is recording on this device's queue family; the buffer is live.
            unsafe { buffer.cmd_acquire(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE)) };
            write(d, cmd);
            // SAFETY: as above.
            unsafe { buffer.cmd_release(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE)) };
            around(cmd, Edge::End);
        })
    }

    /// Copy `image`, which the compute API owns ([`SharedImage::cmd_prepare`] or
    /// [`SharedImage::cmd_release`] ran), to the host once `wait` (if any) is reached, as
    /// [`Device::read_buffer`] does: acquire (into `TRANSFER_SRC_OPTIMAL`), copy, release back
    /// to the compute API. Returns the texels row by row, tightly packed.
    pub fn read_image(
        &self,
        image: &SharedImage,
        wait: Option<(&SharedSemaphore, u64)>,
        signal: Option<(&SharedSemaphore, u64)>,
    ) -> Result<Vec<u8>> {
        let (width, height) = image.extent();
        let bytes = u64::from(width) * u64::from(height) * u64::from(image.format().texel_bytes());
        let host = HostBuffer::new(&self.inner, bytes, vk::BufferUsageFlags::TRANSFER_DST)?;
        let d = &self.inner.device;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let waits: Vec<Wait<'_>> = wait.map(|(s, v)| (s, v, transfer)).into_iter().collect();
        let signals: Vec<_> = signal.into_iter().collect();
        self.submit_one_shot(&waits, &signals, |cmd| {
            let region = vk::BufferImageCopy::default()
                .image_subresource(
                    vk::ImageSubresourceLayers::default()
                        .aspect_mask(vk::ImageAspectFlags::COLOR)
                        .layer_count(1),
                )
                .image_extent(vk::Extent3D { width, height, depth: 1 });
            let read = ImageAccess::TRANSFER_READ;
            // SAFETY: as in read_buffer; the compute API owns the image (the caller's word), and
            // the acquire puts it in the copy's layout.
            unsafe {
                image.cmd_acquire(cmd, read);
                d.cmd_copy_image_to_buffer(cmd, image.image(), read.layout(), host.buffer, &[region]);
                host.cmd_host_visible(d, cmd);
                image.cmd_release(cmd, read);
            }
        })?;
        host.read()
    }
}

impl Device {
    /// Refuse an object of another `VkDevice` before any command uses it (Vulkan's handles are
    /// per device: the driver would read another device's object, or crash).
    fn check_own(&self, device: vk::Device, what: &str) -> Result<()> {
        if device != self.inner.device.handle() {
            return Err(Error::invalid(
                Api::Vulkan,
                format!(
                    "{what} was made on another VkDevice than the one submitting ({})",
                    self.inner.caps.name
                ),
            ));
        }
        Ok(())
    }
}

/// Begin `cmd`, record into it with `record`, end it, and submit it to queue 0 of the device's
/// queue family waiting on `waits` and signalling `signals` (timeline values; ignored for binary
/// semaphores), with `fence` signalled when it is done. Returns the queue. What the one-shot
/// submissions and [`super::Submitter`] share.
pub(crate) fn record_and_submit(
    inner: &Inner,
    fence: vk::Fence,
    cmd: vk::CommandBuffer,
    waits: &[Wait<'_>],
    signals: &[(&SharedSemaphore, u64)],
    record: impl FnOnce(vk::CommandBuffer),
) -> Result<vk::Queue> {
    let d = &inner.device;
    let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
    // SAFETY: the caller's command buffer of this device, not pending (fresh, or its fence
    // signalled).
    unsafe { d.begin_command_buffer(cmd, &begin) }.map_err(|r| Error::vulkan("vkBeginCommandBuffer", r))?;
    record(cmd);
    // SAFETY: recording was begun above.
    unsafe { d.end_command_buffer(cmd) }.map_err(|r| Error::vulkan("vkEndCommandBuffer", r))?;
    let wait_sems: Vec<_> = waits.iter().map(|w| w.0.handle()).collect();
    let wait_values: Vec<_> = waits.iter().map(|w| w.1).collect();
    let stages: Vec<_> = waits.iter().map(|w| w.2).collect();
    let signal_sems: Vec<_> = signals.iter().map(|s| s.0.handle()).collect();
    let signal_values: Vec<_> = signals.iter().map(|s| s.1).collect();
    let mut values = vk::TimelineSemaphoreSubmitInfo::default()
        .wait_semaphore_values(&wait_values)
        .signal_semaphore_values(&signal_values);
    let cmds = [cmd];
    let submit = vk::SubmitInfo::default()
        .wait_semaphores(&wait_sems)
        .wait_dst_stage_mask(&stages)
        .command_buffers(&cmds)
        .signal_semaphores(&signal_sems)
        .push_next(&mut values);
    // SAFETY: valid device and family; queue 0 exists (the device was created with a queue in
    // this family).
    let queue = unsafe { d.get_device_queue(inner.queue_family, 0) };
    // SAFETY: the submission's handles are live; the caller keeps other threads off this queue
    // (Device::from_raw's contract); the fence is unsignalled and unused.
    unsafe { d.queue_submit(queue, &[submit], fence) }.map_err(|r| Error::vulkan("vkQueueSubmit", r))?;
    Ok(queue)
}

/// Record, submit, wait; on any failure after the submit, drain the queue so the command buffer
/// and fence can be reused or freed.
fn submit_and_wait(
    inner: &Inner,
    fence: vk::Fence,
    cmd: vk::CommandBuffer,
    waits: &[Wait<'_>],
    signals: &[(&SharedSemaphore, u64)],
    record: impl FnOnce(vk::CommandBuffer),
) -> Result<()> {
    let d = &inner.device;
    let queue = record_and_submit(inner, fence, cmd, waits, signals, record)?;
    let nanos = ONE_SHOT_TIMEOUT.as_nanos() as u64;
    // SAFETY: the fence was submitted above.
    let waited = match unsafe { d.wait_for_fences(&[fence], true, nanos) } {
        Ok(()) => Ok(()),
        Err(vk::Result::TIMEOUT) => Err(Error::timeout(
            Api::Vulkan,
            "vkWaitForFences",
            "a one-shot submission",
            ONE_SHOT_TIMEOUT.as_secs(),
        )),
        Err(r) => Err(Error::vulkan("vkWaitForFences", r)),
    };
    if waited.is_err() {
        // SAFETY: the queue is ours for this call; drain it so nothing submitted stays pending.
        if let Err(r) = unsafe { d.queue_wait_idle(queue) } {
            log::warn!("vulkan: vkQueueWaitIdle after a failed one-shot submission: {r}");
        }
    }
    // SAFETY: the fence is signalled or the queue is idle.
    unsafe { d.reset_fences(&[fence]) }.map_err(|r| Error::vulkan("vkResetFences", r))?;
    waited
}

/// A host-visible, host-coherent buffer a read-back copies into.
struct HostBuffer<'a> {
    device: &'a Inner,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
}

impl<'a> HostBuffer<'a> {
    /// A staging buffer of `size` bytes for `usage`, refused before any call when the device's limits do
    /// not allow it (as a shared object's).
    fn new(device: &'a Inner, size: u64, usage: vk::BufferUsageFlags) -> Result<Self> {
        let what = format!("a staging buffer of {size} bytes");
        device.check_buffer_size(size, &what)?;
        let d = &device.device;
        let info =
            vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid device; `info` points at live locals.
        let buffer =
            unsafe { d.create_buffer(&info, None) }.map_err(|r| Error::vulkan("vkCreateBuffer", r))?;
        let mut me = HostBuffer { device, buffer, memory: vk::DeviceMemory::null(), size };
        // SAFETY: a live buffer.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let ty = find_memory_type(
            &device.memory_properties,
            req.memory_type_bits,
            host,
            vk::MemoryPropertyFlags::HOST_CACHED,
        )
        .ok_or_else(|| Error::unsupported(Api::Vulkan, "no host-visible memory for a read-back"))?;
        let reserved = memory::reserve(device, ty, req.size, &what)?;
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
        // SAFETY: valid device and type index; the size fits the type's heap and the device's
        // limits (reserved above).
        me.memory =
            unsafe { d.allocate_memory(&alloc, None) }.map_err(|r| Error::vulkan("vkAllocateMemory", r))?;
        reserved.made();
        // SAFETY: fresh buffer and memory, offset 0.
        unsafe { d.bind_buffer_memory(buffer, me.memory, 0) }
            .map_err(|r| Error::vulkan("vkBindBufferMemory", r))?;
        Ok(me)
    }

    /// Record the barrier that makes the copy's writes visible to the host.
    ///
    /// # Safety
    /// `cmd` is recording on the device's queue family.
    unsafe fn cmd_host_visible(&self, d: &ash::Device, cmd: vk::CommandBuffer) {
        let b = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: per this function's contract.
        unsafe {
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[b],
                &[],
                &[],
            )
        };
    }

    /// Put `data` at the start (before the submission that copies from it).
    fn write(&self, data: &[u8]) -> Result<()> {
        let d = &self.device.device;
        // SAFETY: host-visible memory of `size` ≥ data.len() bytes, not mapped elsewhere, unused
        // by the GPU until the submission that follows.
        let p = unsafe { d.map_memory(self.memory, 0, self.size, vk::MemoryMapFlags::empty()) }
            .map_err(|r| Error::vulkan("vkMapMemory", r))?;
        // SAFETY: the mapping covers `size` ≥ data.len() bytes and does not overlap `data`;
        // coherent memory: the submit makes the writes visible to the device.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.cast::<u8>(), data.len()) };
        // SAFETY: mapped above.
        unsafe { d.unmap_memory(self.memory) };
        Ok(())
    }

    /// The bytes, once the copy finished.
    fn read(&self) -> Result<Vec<u8>> {
        let d = &self.device.device;
        // SAFETY: host-visible memory of `size` bytes, not mapped elsewhere; the GPU is done with it.
        let p = unsafe { d.map_memory(self.memory, 0, self.size, vk::MemoryMapFlags::empty()) }
            .map_err(|r| Error::vulkan("vkMapMemory", r))?;
        // SAFETY: the mapping covers `size` bytes; coherent memory after the fence wait.
        let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), self.size as usize) }.to_vec();
        // SAFETY: mapped above.
        unsafe { d.unmap_memory(self.memory) };
        Ok(bytes)
    }
}

impl Drop for HostBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: the one-shot submission that used it finished before this is dropped.
        unsafe {
            self.device.device.destroy_buffer(self.buffer, None);
            if self.memory != vk::DeviceMemory::null() {
                memory::free(self.device, self.memory);
            }
        }
    }
}
