//! Exportable slot buffers and semaphores: the part of vkhip a template user copies.
//!
//! **Memory.** A slot is a storage buffer created with `VkExternalMemoryBufferCreateInfo(OPAQUE_FD)`
//! and bound at offset 0 to its own allocation made with `VkExportMemoryAllocateInfo(OPAQUE_FD)`.
//! When the driver prefers or requires a dedicated allocation (`VkMemoryDedicatedRequirements`),
//! the allocation is dedicated to the buffer, and the importer must then set its DEDICATED flag.
//! The importer imports `allocation_size` bytes (`VkMemoryRequirements::size`, not the buffer size)
//! and maps the buffer's range at offset 0. Sub-allocated exports gave CUDA wrong pointers
//! (vulkano PR #1700), so a slot never shares an allocation.
//!
//! **Semaphores.** `computed` and `rendered` are timeline semaphores; the reference samples'
//! scheme uses binary ones. Either is created with `VkExportSemaphoreCreateInfo(OPAQUE_FD)` when an
//! interop API will import it. Lavapipe exports memory but refuses every exportable semaphore.
//!
//! **fds.** Every `export_fd` call returns a new fd that the caller owns; pass it on through
//! [`crate::compute::fd::ImportFd`], which applies the importing API's ownership rule.
//!
//! # Examples
//!
//! On any Vulkan device that exports memory (lavapipe does): an exportable slot hands out a new
//! fd per call; a host-mapped slot is written and read through its mapping.
//!
//! ```
//! use std::os::fd::AsRawFd as _;
//! use std::sync::Arc;
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::external::{Semaphore, Slot, SlotMemory};
//! use vkhip::vk::instance::Instance;
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable() && d.memory_export).expect("a device exporting memory");
//! let ctx = Context::new(instance, pd, false).unwrap();
//!
//! let slot = Slot::new(&ctx, 4096, SlotMemory::DeviceLocal, true).unwrap();
//! assert!(slot.exportable && slot.allocation_size >= slot.size && slot.size == 4096);
//! assert!(slot.mapped().is_none());
//! let (a, b) = (slot.export_fd().unwrap(), slot.export_fd().unwrap());
//! assert!(a.as_raw_fd() >= 0 && a.as_raw_fd() != b.as_raw_fd());
//!
//! let host = Slot::new(&ctx, 16, SlotMemory::HostMapped, false).unwrap();
//! let p = host.mapped().expect("a persistent mapping");
//! // SAFETY: 16 bytes = 4 floats of a host-coherent mapping nobody else uses.
//! let back = unsafe {
//!     p.copy_from_nonoverlapping([1.0f32, 2.0, 3.0, 4.0].as_ptr(), 4);
//!     std::slice::from_raw_parts(p, 4).to_vec()
//! };
//! assert_eq!(back, [1.0, 2.0, 3.0, 4.0]);
//! assert!(host.export_fd().is_err()); // not created exportable
//!
//! let sem = Semaphore::timeline(&ctx, 5, false).unwrap();
//! assert!(sem.timeline);
//! let err = sem.export_fd().err().expect("not exportable");
//! assert!(err.to_string().contains("this semaphore was not created exportable"), "{err}");
//! ```

use super::device::Context;
use super::memory::find_memory_type;
use super::{CallContext, VkError};
use crate::compute::fd::{FdOwnership, ImportFd};
use ash::vk;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

/// Usage of every slot buffer: read by shaders, written by shaders or transfers, read back.
pub const SLOT_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw(),
);

/// Where a slot's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotMemory {
    /// Host-visible, coherent, persistently mapped (the `cpu` backend writes through the mapping).
    HostMapped,
    /// Device-local where available (GPU writers).
    DeviceLocal,
}

/// One height-field slot: buffer + its own allocation, optionally exportable and mapped.
pub struct Slot {
    ctx: Arc<Context>,
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// Buffer size in bytes (the payload: width × height × 4).
    pub size: u64,
    /// Allocation size in bytes (`VkMemoryRequirements::size`): what an importer imports.
    pub allocation_size: u64,
    /// The allocation is dedicated to this buffer.
    pub dedicated: bool,
    /// Memory type index of the allocation (an importer on the same physical device uses it too).
    pub memory_type: u32,
    pub exportable: bool,
    mapped: *mut f32,
}

// SAFETY: the handles are plain Vulkan handles; the mapping is only written by the one compute
// backend that owns the slot's contents at a time, as the frame-sync protocol orders it.
unsafe impl Send for Slot {}
// SAFETY: as above; `&Slot` exposes the mapping only as a raw pointer.
unsafe impl Sync for Slot {}

impl Slot {
    /// Create a slot of `size` bytes. With `export`, the memory can be exported as OPAQUE_FD.
    pub fn new(ctx: &Arc<Context>, size: u64, memory: SlotMemory, export: bool) -> Result<Self, VkError> {
        if export && !ctx.physical.memory_export {
            return Err(VkError::Unsupported(format!(
                "{} cannot export buffer memory as OPAQUE_FD (VK_KHR_external_memory_fd)",
                ctx.physical.name
            )));
        }
        let d = &ctx.device;
        let mut ext_info = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(SLOT_USAGE)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        if export {
            info = info.push_next(&mut ext_info);
        }
        // SAFETY: valid device; `info` points at live locals.
        let buffer = unsafe { d.create_buffer(&info, None) }.call("vkCreateBuffer")?;
        let mut slot = Slot {
            ctx: ctx.clone(),
            buffer,
            memory: vk::DeviceMemory::null(),
            size,
            allocation_size: 0,
            dedicated: false,
            memory_type: 0,
            exportable: export,
            mapped: std::ptr::null_mut(),
        };

        let mut dedicated_req = vk::MemoryDedicatedRequirements::default();
        let mut req2 = vk::MemoryRequirements2::default().push_next(&mut dedicated_req);
        let req_info = vk::BufferMemoryRequirementsInfo2::default().buffer(buffer);
        // SAFETY: valid buffer; the pNext chain points at live locals.
        unsafe { d.get_buffer_memory_requirements2(&req_info, &mut req2) };
        let req = req2.memory_requirements;
        let dedicated = export
            && (dedicated_req.prefers_dedicated_allocation == vk::TRUE
                || dedicated_req.requires_dedicated_allocation == vk::TRUE
                || ctx.physical.memory_export_dedicated_only);

        use vk::MemoryPropertyFlags as F;
        let (required, preferred) = match memory {
            SlotMemory::HostMapped => (F::HOST_VISIBLE | F::HOST_COHERENT, F::DEVICE_LOCAL),
            SlotMemory::DeviceLocal => (F::empty(), F::DEVICE_LOCAL),
        };
        let ty = find_memory_type(&ctx.memory_properties, req.memory_type_bits, required, preferred)
            .ok_or_else(|| {
                VkError::Unsupported(format!("no memory type with {required:?} for a slot buffer"))
            })?;

        let mut export_info = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let mut alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
        if export {
            alloc = alloc.push_next(&mut export_info);
        }
        if dedicated {
            alloc = alloc.push_next(&mut dedicated_info);
        }
        // SAFETY: valid device; type index from this device; pNext chain of live locals.
        slot.memory = crate::fault::inject(crate::fault::Fault::VkAlloc)
            // SAFETY: as above.
            .and_then(|()| unsafe { d.allocate_memory(&alloc, None) })
            .call("vkAllocateMemory (slot)")?;
        slot.allocation_size = req.size;
        slot.dedicated = dedicated;
        slot.memory_type = ty;
        // SAFETY: fresh buffer and memory; offset 0.
        unsafe { d.bind_buffer_memory(buffer, slot.memory, 0) }.call("vkBindBufferMemory")?;
        if memory == SlotMemory::HostMapped {
            // SAFETY: host-visible memory, not mapped yet.
            slot.mapped = unsafe { d.map_memory(slot.memory, 0, size, vk::MemoryMapFlags::empty()) }
                .call("vkMapMemory (slot)")? as *mut f32;
        }
        log::debug!(
            "slot: {size} bytes, allocation {} bytes, type {ty}, dedicated {dedicated}, export {export}",
            slot.allocation_size
        );
        Ok(slot)
    }

    /// A new OPAQUE_FD for this slot's memory; the caller owns it.
    pub fn export_fd(&self) -> Result<OwnedFd, VkError> {
        let ext = self
            .ctx
            .external_memory_fd
            .as_ref()
            .filter(|_| self.exportable)
            .ok_or_else(|| VkError::Unsupported("this slot was not created exportable".into()))?;
        let info = vk::MemoryGetFdInfoKHR::default()
            .memory(self.memory)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        // SAFETY: memory allocated with OPAQUE_FD export.
        let fd = unsafe { ext.get_memory_fd(&info) }.call("vkGetMemoryFdKHR")?;
        // SAFETY: vkGetMemoryFdKHR returns a new fd owned by the caller.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The persistent host mapping (`SlotMemory::HostMapped` only): `size / 4` floats.
    pub fn mapped(&self) -> Option<*mut f32> {
        (!self.mapped.is_null()).then_some(self.mapped)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: owners drop slots only after the queue and every importer are done with them
        // (the session's field order: compute backend first, then slots).
        unsafe {
            self.ctx.device.destroy_buffer(self.buffer, None);
            if self.memory != vk::DeviceMemory::null() {
                self.ctx.device.free_memory(self.memory, None);
            }
        }
    }
}

/// A storage buffer bound to memory imported from an OPAQUE_FD: the Vulkan side of an importer,
/// used to check exports without a second API (tests) and by templates that share memory between
/// two Vulkan devices or processes.
pub struct ImportedBuffer {
    ctx: Arc<Context>,
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    pub size: u64,
}

impl ImportedBuffer {
    /// Import `fd` (from [`Slot::export_fd`] on the same physical device) as a buffer of `size`
    /// bytes. Vulkan takes the fd on success and leaves it to us on failure
    /// (VkImportMemoryFdInfoKHR), which [`ImportFd`] encodes.
    pub fn import(
        ctx: &Arc<Context>,
        fd: ImportFd,
        allocation_size: u64,
        size: u64,
        memory_type: u32,
        dedicated: bool,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let mut ext_info = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(SLOT_USAGE)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut ext_info);
        // SAFETY: valid device; pNext chain of live locals.
        let buffer = unsafe { d.create_buffer(&info, None) }.call("vkCreateBuffer (import)")?;
        let mut me = ImportedBuffer { ctx: ctx.clone(), buffer, memory: vk::DeviceMemory::null(), size };
        me.memory = fd.import(FdOwnership::TakenOnSuccess, |raw| {
            let mut import = vk::ImportMemoryFdInfoKHR::default()
                .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD)
                .fd(raw);
            let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
            let mut alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(allocation_size)
                .memory_type_index(memory_type)
                .push_next(&mut import);
            if dedicated {
                alloc = alloc.push_next(&mut dedicated_info);
            }
            // SAFETY: valid device; the fd refers to an exported allocation of this physical device.
            crate::fault::inject(crate::fault::Fault::MemoryImport)
                // SAFETY: as above.
                .and_then(|()| unsafe { d.allocate_memory(&alloc, None) })
                .call("vkAllocateMemory (import OPAQUE_FD)")
        })?;
        // SAFETY: fresh buffer and imported memory, offset 0.
        unsafe { d.bind_buffer_memory(buffer, me.memory, 0) }.call("vkBindBufferMemory (import)")?;
        Ok(me)
    }
}

impl Drop for ImportedBuffer {
    fn drop(&mut self) {
        // SAFETY: owners finish GPU work on the buffer before dropping it.
        unsafe {
            self.ctx.device.destroy_buffer(self.buffer, None);
            if self.memory != vk::DeviceMemory::null() {
                self.ctx.device.free_memory(self.memory, None);
            }
        }
    }
}

/// A semaphore, timeline or binary, optionally exportable.
pub struct Semaphore {
    ctx: Arc<Context>,
    pub handle: vk::Semaphore,
    pub timeline: bool,
    exportable: bool,
}

impl Semaphore {
    /// A timeline semaphore starting at `initial`.
    pub fn timeline(ctx: &Arc<Context>, initial: u64, export: bool) -> Result<Self, VkError> {
        Self::create(ctx, Some(initial), export)
    }

    /// A binary semaphore.
    pub fn binary(ctx: &Arc<Context>, export: bool) -> Result<Self, VkError> {
        Self::create(ctx, None, export)
    }

    fn create(ctx: &Arc<Context>, timeline: Option<u64>, export: bool) -> Result<Self, VkError> {
        let can = if timeline.is_some() { ctx.physical.timeline_export } else { ctx.physical.binary_export };
        if export && !can {
            return Err(VkError::Unsupported(format!(
                "{} cannot export {} semaphores as OPAQUE_FD (lavapipe cannot): use --sync bridged",
                ctx.physical.name,
                if timeline.is_some() { "timeline" } else { "binary" }
            )));
        }
        let mut type_info = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(timeline.unwrap_or(0));
        let mut export_info = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let mut info = vk::SemaphoreCreateInfo::default();
        if timeline.is_some() {
            info = info.push_next(&mut type_info);
        }
        if export {
            info = info.push_next(&mut export_info);
        }
        // SAFETY: valid device; pNext chain of live locals.
        let handle = unsafe { ctx.device.create_semaphore(&info, None) }.call("vkCreateSemaphore")?;
        Ok(Semaphore { ctx: ctx.clone(), handle, timeline: timeline.is_some(), exportable: export })
    }

    /// A new OPAQUE_FD for this semaphore; the caller owns it.
    pub fn export_fd(&self) -> Result<OwnedFd, VkError> {
        let ext = self
            .ctx
            .external_semaphore_fd
            .as_ref()
            .filter(|_| self.exportable)
            .ok_or_else(|| VkError::Unsupported("this semaphore was not created exportable".into()))?;
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(self.handle)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: semaphore created with OPAQUE_FD export.
        let fd = unsafe { ext.get_semaphore_fd(&info) }.call("vkGetSemaphoreFdKHR")?;
        // SAFETY: a new fd owned by the caller.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        // SAFETY: owners drop semaphores after the queue is idle and importers are destroyed.
        unsafe { self.ctx.device.destroy_semaphore(self.handle, None) };
    }
}
