//! Memory-type choice (pure, unit-tested) and host-visible buffers for uploads and read-backs.

use super::device::Context;
use super::{CallContext, VkError};
use ash::vk;
use std::sync::Arc;

/// Index of a memory type allowed by `type_bits` that has all of `required`, preferring one that
/// also has all of `preferred`; the lowest index wins a tie (drivers order types by preference).
///
/// # Examples
///
/// ```
/// use ash::vk;
/// use vkhip::vk::memory::find_memory_type;
///
/// type F = vk::MemoryPropertyFlags;
/// let mut props = vk::PhysicalDeviceMemoryProperties { memory_type_count: 3, ..Default::default() };
/// props.memory_types[0].property_flags = F::DEVICE_LOCAL;
/// props.memory_types[1].property_flags = F::HOST_VISIBLE | F::HOST_COHERENT;
/// props.memory_types[2].property_flags = F::DEVICE_LOCAL | F::HOST_VISIBLE | F::HOST_COHERENT;
/// let host = F::HOST_VISIBLE | F::HOST_COHERENT;
/// // The preferred flags win when a type has them...
/// assert_eq!(find_memory_type(&props, 0b111, host, F::DEVICE_LOCAL), Some(2));
/// // ...but only among the types the resource allows.
/// assert_eq!(find_memory_type(&props, 0b011, host, F::DEVICE_LOCAL), Some(1));
/// assert_eq!(find_memory_type(&props, 0b001, host, F::empty()), None);
/// ```
pub fn find_memory_type(
    props: &vk::PhysicalDeviceMemoryProperties,
    type_bits: u32,
    required: vk::MemoryPropertyFlags,
    preferred: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let types = &props.memory_types[..props.memory_type_count as usize];
    let allowed = |i: usize, want: vk::MemoryPropertyFlags| {
        type_bits & (1 << i) != 0 && types[i].property_flags.contains(want)
    };
    (0..types.len())
        .find(|&i| allowed(i, required | preferred))
        .or_else(|| (0..types.len()).find(|&i| allowed(i, required)))
        .map(|i| i as u32)
}

/// A buffer in host-visible, host-coherent memory, persistently mapped.
pub struct HostBuffer {
    ctx: Arc<Context>,
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    pub size: u64,
    ptr: *mut u8,
}

// SAFETY: the mapping is plain memory owned by this object; access goes through &self / &mut self.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    /// Create a mapped buffer of `size` bytes for `usage` (host-cached memory preferred: read-backs).
    pub fn new(ctx: &Arc<Context>, size: u64, usage: vk::BufferUsageFlags) -> Result<Self, VkError> {
        let d = &ctx.device;
        let info =
            vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid device and create info.
        let buffer = unsafe { d.create_buffer(&info, None) }.call("vkCreateBuffer")?;
        let mut me = HostBuffer {
            ctx: ctx.clone(),
            buffer,
            memory: vk::DeviceMemory::null(),
            size,
            ptr: std::ptr::null_mut(),
        };
        // SAFETY: valid buffer.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let ty = find_memory_type(
            &ctx.memory_properties,
            req.memory_type_bits,
            host,
            vk::MemoryPropertyFlags::HOST_CACHED,
        )
        .ok_or_else(|| VkError::Unsupported("no host-visible coherent memory type".into()))?;
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
        // SAFETY: valid device; type index from this device's properties.
        me.memory = crate::fault::inject(crate::fault::Fault::VkAlloc)
            // SAFETY: as above.
            .and_then(|()| unsafe { d.allocate_memory(&alloc, None) })
            .call("vkAllocateMemory")?;
        // SAFETY: fresh buffer and memory, offset 0 satisfies any alignment.
        unsafe { d.bind_buffer_memory(buffer, me.memory, 0) }.call("vkBindBufferMemory")?;
        // SAFETY: host-visible memory, not mapped yet.
        me.ptr = unsafe { d.map_memory(me.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
            .call("vkMapMemory")? as *mut u8;
        Ok(me)
    }

    /// The mapped bytes. Only meaningful once the GPU work writing them has finished.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping covers `size` bytes and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.size as usize) }
    }

    /// The mapping's address, for a writer that outlives no use of this buffer (the `cpu`
    /// backend's post filter; see [`crate::compute::post::PostSurface::Mapped`]).
    pub fn mapped_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The mapped contents as f32 values (the mapping is at least 4-byte aligned).
    pub fn floats(&self) -> &[f32] {
        // SAFETY: mapped pointers are aligned to minMemoryMapAlignment (≥ 64); size is in bytes.
        unsafe { std::slice::from_raw_parts(self.ptr as *const f32, self.size as usize / 4) }
    }

    /// The mapped contents as f32 values, for writing. Only while no GPU work reads them.
    pub fn floats_mut(&mut self) -> &mut [f32] {
        // SAFETY: as for `floats`; `&mut self` makes this the only view of the mapping.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut f32, self.size as usize / 4) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: owned handles; users finish GPU work on this buffer before dropping it
        // (every read-back waits on a fence), and freeing memory unmaps it.
        unsafe {
            d.destroy_buffer(self.buffer, None);
            if self.memory != vk::DeviceMemory::null() {
                d.free_memory(self.memory, None);
            }
        }
    }
}

/// Copy the first `size` bytes of `buffer` to host memory on the queue once every `waits`
/// (timeline, value) is reached; returns the floats once the copy finished (a fence of Vulkan's
/// own, never a value the compute API signals).
pub fn read_back(
    ctx: &Arc<Context>,
    buffer: vk::Buffer,
    size: u64,
    waits: &[(vk::Semaphore, u64)],
) -> Result<Vec<f32>, VkError> {
    let host = HostBuffer::new(ctx, size, vk::BufferUsageFlags::TRANSFER_DST)?;
    let d = &ctx.device;
    let waits: Vec<_> = waits.iter().map(|&(s, v)| (s, v, vk::PipelineStageFlags::TRANSFER)).collect();
    ctx.one_shot(&waits, |cmd| {
        let region = vk::BufferCopy { src_offset: 0, dst_offset: 0, size };
        // SAFETY: recording into the one-shot command buffer; both buffers are live and large
        // enough. The semaphore waits made the writer's results available; the barriers make them
        // visible to the copy, and the copy's to the host.
        unsafe {
            super::cmd_memory_barrier(
                d,
                cmd,
                (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
            d.cmd_copy_buffer(cmd, buffer, host.buffer, &[region]);
            super::cmd_memory_barrier(
                d,
                cmd,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
            );
        }
    })?;
    Ok(host.floats().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(types: &[vk::MemoryPropertyFlags]) -> vk::PhysicalDeviceMemoryProperties {
        let mut p = vk::PhysicalDeviceMemoryProperties {
            memory_type_count: types.len() as u32,
            ..Default::default()
        };
        for (i, &f) in types.iter().enumerate() {
            p.memory_types[i].property_flags = f;
        }
        p
    }

    #[test]
    fn prefers_then_falls_back() {
        use vk::MemoryPropertyFlags as F;
        let p = props(&[
            F::DEVICE_LOCAL,
            F::HOST_VISIBLE | F::HOST_COHERENT,
            F::HOST_VISIBLE | F::HOST_COHERENT | F::HOST_CACHED,
        ]);
        let host = F::HOST_VISIBLE | F::HOST_COHERENT;
        assert_eq!(find_memory_type(&p, 0b111, host, F::HOST_CACHED), Some(2));
        assert_eq!(find_memory_type(&p, 0b011, host, F::HOST_CACHED), Some(1));
        assert_eq!(find_memory_type(&p, 0b001, host, F::empty()), None);
        assert_eq!(find_memory_type(&p, 0b111, F::empty(), F::DEVICE_LOCAL), Some(0));
    }
}
