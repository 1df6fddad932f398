//! The Vulkan side of the interop: a device that can export, a shared buffer, shared timeline
//! semaphores, and a read-back that waits and signals on the queue like a draw would.
//!
//! These wrap vkhip's own Vulkan objects ([`crate::vk`]), which the renderer uses too: one RAII
//! type per object, destroyed in reverse order of creation by ownership.
//!
//! ```no_run
//! # fn main() -> Result<(), vkhip::interop::VkError> {
//! use vkhip::interop::vulkan::VulkanDevice;
//! let vk = VulkanDevice::open(&[])?; // the best device that can export (or match a UUID)
//! let buffer = vk.shared_buffer(4096)?;
//! let exported = buffer.export()?; // an fd and the sizes an importer needs
//! assert!(exported.allocation_size >= 4096);
//! # Ok(()) }
//! ```

use crate::compute::fd::ImportFd;
use crate::compute::InteropMemory;
use crate::vk::device::{choose_device, enumerate, Context};
use crate::vk::external::{Semaphore, Slot, SlotMemory};
use crate::vk::instance::Instance;
use crate::vk::memory::HostBuffer;
use crate::vk::{cmd_memory_barrier, VkError};
use ash::vk;
use std::sync::Arc;

/// A Vulkan device (and its queue) able to export memory and timeline semaphores.
pub struct VulkanDevice {
    ctx: Arc<Context>,
    why: String,
}

impl VulkanDevice {
    /// Open the first usable device whose `deviceUUID` is in `prefer` (the compute devices'
    /// UUIDs), else the best usable one. Errors if it cannot export memory and timeline
    /// semaphores as OPAQUE_FD.
    pub fn open(prefer: &[[u8; 16]]) -> Result<Self, VkError> {
        let instance = Arc::new(Instance::new(false, &[])?);
        let devices = enumerate(&instance)?;
        let (index, why) = choose_device(&devices, None, prefer)?;
        let physical = devices[index].clone();
        if !(physical.memory_export && physical.timeline_export) {
            return Err(VkError::Unsupported(format!(
                "{} cannot export memory and timeline semaphores as OPAQUE_FD",
                physical.name
            )));
        }
        Ok(VulkanDevice { ctx: Context::new(instance, physical, false)?, why })
    }

    /// The device's `deviceUUID`: the compute API opens the device with the same UUID.
    pub fn uuid(&self) -> [u8; 16] {
        self.ctx.physical.uuid
    }

    /// "NVIDIA H100 80GB HBM3 (its deviceUUID … matches the compute device)".
    pub fn describe(&self) -> String {
        format!("{} ({})", self.ctx.physical.name, self.why)
    }

    /// vkhip's device context, for recording your own work on the queue.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// A device-local buffer of `bytes`, in its own exportable allocation.
    pub fn shared_buffer(&self, bytes: u64) -> Result<SharedBuffer, VkError> {
        Ok(SharedBuffer { slot: Slot::new(&self.ctx, bytes, SlotMemory::DeviceLocal, true)? })
    }

    /// An exportable timeline semaphore at 0.
    pub fn shared_timeline(&self) -> Result<SharedTimeline, VkError> {
        Ok(SharedTimeline { ctx: self.ctx.clone(), semaphore: Semaphore::timeline(&self.ctx, 0, true)? })
    }

    /// Read `buffer` back as Vulkan work: once `wait` is reached, copy it to host memory, then
    /// signal `signal` from the queue — the same waits and signals a draw reading the buffer
    /// would have. Returns the floats once the copy finished (a wait on a fence of Vulkan's own).
    pub fn read_back(
        &self,
        buffer: &SharedBuffer,
        wait: (&SharedTimeline, u64),
        signal: (&SharedTimeline, u64),
    ) -> Result<Vec<f32>, VkError> {
        read_back(&self.ctx, &buffer.slot, &[(wait.0.handle(), wait.1)], &[(signal.0.handle(), signal.1)])
    }
}

/// Export `slot`'s memory: a new fd, with the allocation size, the buffer size and whether the
/// allocation is dedicated (an importer needs all three).
pub fn export_slot(slot: &Slot) -> Result<InteropMemory, VkError> {
    Ok(InteropMemory {
        fd: ImportFd::new(slot.export_fd()?),
        allocation_size: slot.allocation_size,
        buffer_size: slot.size,
        dedicated: slot.dedicated,
    })
}

/// Copy `slot` to host memory on the queue once every `waits` (timeline, value) is reached, then
/// signal `signals`; returns the floats once the copy finished (a fence of Vulkan's own).
pub fn read_back(
    ctx: &Arc<Context>,
    slot: &Slot,
    waits: &[(vk::Semaphore, u64)],
    signals: &[(vk::Semaphore, u64)],
) -> Result<Vec<f32>, VkError> {
    let host = HostBuffer::new(ctx, slot.size, vk::BufferUsageFlags::TRANSFER_DST)?;
    let d = &ctx.device;
    let waits: Vec<_> = waits.iter().map(|&(s, v)| (s, v, vk::PipelineStageFlags::TRANSFER)).collect();
    ctx.one_shot_signalling(&waits, signals, |cmd| {
        let region = vk::BufferCopy { src_offset: 0, dst_offset: 0, size: slot.size };
        // SAFETY: recording into the one-shot command buffer; both buffers are live and large
        // enough. The semaphore waits made the writer's results available; the barrier makes them
        // visible to the copy, and the copy's to the host.
        unsafe {
            cmd_memory_barrier(
                d,
                cmd,
                (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
            d.cmd_copy_buffer(cmd, slot.buffer, host.buffer, &[region]);
            cmd_memory_barrier(
                d,
                cmd,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
            );
        }
    })?;
    Ok(host.floats().to_vec())
}

/// A buffer the compute API writes and Vulkan reads, without a copy.
pub struct SharedBuffer {
    slot: Slot,
}

impl SharedBuffer {
    /// Export the memory: a new fd each call, with the allocation size, the buffer size and
    /// whether the allocation is dedicated (the importer needs all three).
    pub fn export(&self) -> Result<InteropMemory, VkError> {
        export_slot(&self.slot)
    }

    /// The Vulkan buffer, for your own descriptors and commands.
    pub fn buffer(&self) -> vk::Buffer {
        self.slot.buffer
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.slot.size
    }
}

/// A timeline semaphore both APIs wait on and signal.
pub struct SharedTimeline {
    ctx: Arc<Context>,
    semaphore: Semaphore,
}

impl SharedTimeline {
    /// Export it (a new fd each call).
    pub fn export(&self) -> Result<ImportFd, VkError> {
        Ok(ImportFd::new(self.semaphore.export_fd()?))
    }

    /// The Vulkan handle, for your own submissions' waits and signals.
    pub fn handle(&self) -> vk::Semaphore {
        self.semaphore.handle
    }

    /// The current value (never blocks).
    pub fn value(&self) -> Result<u64, VkError> {
        self.ctx.timeline_value(self.semaphore.handle)
    }

    /// Host-wait until the value reaches `value`. Use it only on values Vulkan signals: a host
    /// wait on a value the compute API signals costs ≈ 10 ms on NVIDIA.
    pub fn wait(&self, value: u64) -> Result<(), VkError> {
        self.ctx.wait_timeline(self.semaphore.handle, value, || format!("timeline value {value}"))
    }
}
