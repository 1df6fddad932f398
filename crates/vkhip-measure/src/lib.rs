//! What the measuring programs (`src/bin/`) share: command buffers with their fences on the
//! device's queue, submitted with timeline waits and signals, and host-visible buffers to read
//! results from. Not a library for engines: the crates' examples are the templates.
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use ash::vk;
use std::error::Error;
use vkhip_interop::vulkan::{Device, SharedSemaphore};

/// `per_slot` command buffers and one fence (signalled when made) for each of `slots` slots, on
/// queue 0 of the device's family. Dropped after the queue is idle.
pub struct Commands {
    vk: Device,
    queue: vk::Queue,
    pool: vk::CommandPool,
    cmds: Vec<Vec<vk::CommandBuffer>>,
    fences: Vec<vk::Fence>,
}

impl Commands {
    pub fn new(vk: &Device, slots: usize, per_slot: u32) -> Result<Commands, Box<dyn Error>> {
        let d = vk.ash();
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(vk.queue_family())
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: the crate's device; queue 0 of its family exists.
        let (queue, pool) =
            unsafe { (d.get_device_queue(vk.queue_family(), 0), d.create_command_pool(&info, None)?) };
        let mut made = Commands { vk: vk.clone(), queue, pool, cmds: Vec::new(), fences: Vec::new() };
        for _ in 0..slots {
            let alloc =
                vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(per_slot);
            let fence = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
            // SAFETY: live device and pool; each handle lands in `made` at once, so Drop
            // destroys whatever was made if a later call fails.
            unsafe {
                made.cmds.push(d.allocate_command_buffers(&alloc)?);
                made.fences.push(d.create_fence(&fence, None)?);
            }
        }
        Ok(made)
    }

    /// Wait on the host until slot `s`'s last fenced submission finished.
    pub fn wait(&self, s: usize) -> Result<(), Box<dyn Error>> {
        // SAFETY: a fence of this device.
        unsafe { self.vk.ash().wait_for_fences(&[self.fences[s]], true, 10_000_000_000) }?;
        Ok(())
    }

    /// Begin slot `s`'s command buffer `which`.
    ///
    /// # Safety
    /// Its last submission finished (the slot's fence was waited for, and a fence covers every
    /// submission made before its own).
    pub unsafe fn begin(&self, s: usize, which: usize) -> Result<vk::CommandBuffer, Box<dyn Error>> {
        let cmd = self.cmds[s][which];
        let info = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: per this function's contract.
        unsafe { self.vk.ash().begin_command_buffer(cmd, &info) }?;
        Ok(cmd)
    }

    /// End slot `s`'s command buffer `which` and submit it, waiting for each `(semaphore, value)`
    /// of `waits` at the transfer stage and signalling `signals`; with `fence`, the slot's fence
    /// signals when it is done (reset first: wait for it before).
    pub fn submit(
        &self,
        s: usize,
        which: usize,
        waits: &[(&SharedSemaphore, u64)],
        signals: &[(&SharedSemaphore, u64)],
        fence: bool,
    ) -> Result<(), Box<dyn Error>> {
        let d = self.vk.ash();
        let wait_sems: Vec<_> = waits.iter().map(|w| w.0.handle()).collect();
        let wait_values: Vec<_> = waits.iter().map(|w| w.1).collect();
        let stages = vec![vk::PipelineStageFlags::TRANSFER; waits.len()];
        let signal_sems: Vec<_> = signals.iter().map(|w| w.0.handle()).collect();
        let signal_values: Vec<_> = signals.iter().map(|w| w.1).collect();
        let mut values = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let cmds = [self.cmds[s][which]];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&wait_sems)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cmds)
            .signal_semaphores(&signal_sems)
            .push_next(&mut values);
        let fence = if fence { self.fences[s] } else { vk::Fence::null() };
        // SAFETY: the command buffer is recording (begun by `begin`); a fence given was waited
        // for; only the calling thread submits to the queue.
        unsafe {
            d.end_command_buffer(cmds[0])?;
            if fence != vk::Fence::null() {
                d.reset_fences(&[fence])?;
            }
            d.queue_submit(self.queue, &[submit], fence)?;
        }
        Ok(())
    }
}

impl Drop for Commands {
    fn drop(&mut self) {
        let d = self.vk.ash();
        // SAFETY: the queue is idle first (every submission done); then each object of ours is
        // destroyed once.
        unsafe {
            if let Err(e) = d.queue_wait_idle(self.queue) {
                log::warn!("waiting for the queue before teardown failed: {e}");
            }
            for &f in &self.fences {
                d.destroy_fence(f, None);
            }
            d.destroy_command_pool(self.pool, None);
        }
    }
}

/// A host-visible, coherent buffer of `len` floats a transfer writes, mapped for the host.
pub struct HostFloats {
    vk: Device,
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *const f32,
    len: usize,
}

impl HostFloats {
    pub fn new(vk: &Device, len: usize) -> Result<HostFloats, Box<dyn Error>> {
        let d = vk.ash();
        // SAFETY: the memory properties of the device's own physical device.
        let props = unsafe { vk.instance().get_physical_device_memory_properties(vk.physical()) };
        let info =
            vk::BufferCreateInfo::default().size(len as u64 * 4).usage(vk::BufferUsageFlags::TRANSFER_DST);
        let mut made = HostFloats {
            vk: vk.clone(),
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            ptr: std::ptr::null(),
            len,
        };
        // SAFETY: live device; each handle lands in `made` at once, so Drop destroys whatever was
        // made if a later call fails.
        unsafe {
            made.buffer = d.create_buffer(&info, None)?;
            let need = d.get_buffer_memory_requirements(made.buffer);
            let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let ty = (0..props.memory_type_count)
                .find(|&i| {
                    need.memory_type_bits & (1 << i) != 0
                        && props.memory_types[i as usize].property_flags.contains(host)
                })
                .ok_or("no host-visible memory")?;
            let alloc = vk::MemoryAllocateInfo::default().allocation_size(need.size).memory_type_index(ty);
            made.memory = d.allocate_memory(&alloc, None)?;
            d.bind_buffer_memory(made.buffer, made.memory, 0)?;
            made.ptr =
                d.map_memory(made.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())?.cast::<f32>();
        }
        Ok(made)
    }

    /// Its values.
    ///
    /// # Safety
    /// Every transfer that wrote them finished (its fence was waited for), and none is pending.
    pub unsafe fn read(&self) -> Vec<f32> {
        // SAFETY: `len` floats of mapped, coherent memory, not written now (this function's
        // contract); volatile: the device wrote them outside Rust's view.
        (0..self.len).map(|i| unsafe { self.ptr.add(i).read_volatile() }).collect()
    }
}

impl Drop for HostFloats {
    fn drop(&mut self) {
        let d = self.vk.ash();
        // SAFETY: the owner drops it after the transfers into it finished (`Commands` waits for
        // the queue when dropped first); null handles are ignored by Vulkan.
        unsafe {
            d.destroy_buffer(self.buffer, None);
            d.free_memory(self.memory, None);
        }
    }
}
