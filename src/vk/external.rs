//! The app's slot buffers and semaphores. Exportable ones are the interop crate's objects
//! (`vkhip_interop::vulkan::SharedBuffer`, `SharedSemaphore`), made on the app's own device handed
//! to the crate ([`Context::interop`], the crate's "bring your own device"): the app exports
//! through the same public API an engine uses. The others (host-mapped slots for the `cpu`
//! backend, slots and semaphores no other API sees) are plain Vulkan objects of the app.
//!
//! **Memory.** See the crate's `vulkan` module: one exportable allocation per slot, dedicated when
//! the driver prefers it; the importer imports the allocation's size and maps the buffer's range.
//!
//! **Semaphores.** `computed` and `rendered` are timeline semaphores; the reference samples'
//! scheme uses binary ones. Lavapipe exports memory but refuses every exportable semaphore.
//!
//! **fds.** Every export returns a new fd wrapped in an [`ImportFd`], which applies the importing
//! API's ownership rule.
//!
//! # Examples
//!
//! On any Vulkan device that exports memory (lavapipe does): an exportable slot hands out a new
//! fd per call; a host-mapped slot is written and read through its mapping.
//!
//! ```
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
//! assert!(slot.mapped().is_none());
//! let (a, b) = (slot.export().unwrap(), slot.export().unwrap());
//! assert!(a.allocation_size >= 4096 && a.size == 4096);
//! assert_ne!(a.fd.raw(), b.fd.raw());
//!
//! let host = Slot::new(&ctx, 16, SlotMemory::HostMapped, false).unwrap();
//! let p = host.mapped().expect("a persistent mapping");
//! // SAFETY: 16 bytes = 4 floats of a host-coherent mapping nobody else uses.
//! let back = unsafe {
//!     p.copy_from_nonoverlapping([1.0f32, 2.0, 3.0, 4.0].as_ptr(), 4);
//!     std::slice::from_raw_parts(p, 4).to_vec()
//! };
//! assert_eq!(back, [1.0, 2.0, 3.0, 4.0]);
//! assert!(host.export().is_err()); // not created exportable
//!
//! let sem = Semaphore::timeline(&ctx, 5, false).unwrap();
//! assert!(sem.timeline);
//! let err = sem.export().err().expect("not exportable");
//! assert!(err.to_string().contains("this semaphore was not created exportable"), "{err}");
//! ```

use super::device::Context;
use super::memory::find_memory_type;
use super::{CallContext, VkError};
use ash::vk;
use std::sync::Arc;
use vkhip_interop::vulkan::{SharedBuffer, SharedSemaphore};
use vkhip_interop::{ExportedMemory, ImportFd};

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

/// What holds a slot's memory.
enum Backing {
    /// Exportable: the interop crate's buffer, in its own allocation.
    Shared(SharedBuffer),
    /// The app's own buffer and allocation (`mapped` is null unless host-mapped).
    Own { memory: vk::DeviceMemory, mapped: *mut f32 },
}

/// One height-field slot: a buffer with its own allocation, exportable or host-mapped.
pub struct Slot {
    pub buffer: vk::Buffer,
    /// Buffer size in bytes (the payload: width × height × 4).
    pub size: u64,
    backing: Backing,
    /// Dropped last: the device outlives the buffer.
    ctx: Arc<Context>,
}

// SAFETY: the handles are plain Vulkan handles; the mapping is only written by the one compute
// backend that owns the slot's contents at a time, as the frame-sync protocol orders it.
unsafe impl Send for Slot {}
// SAFETY: as above; `&Slot` exposes the mapping only as a raw pointer.
unsafe impl Sync for Slot {}

impl Slot {
    /// Create a slot of `size` bytes. With `export` (device-local only), the memory can be
    /// exported as OPAQUE_FD.
    pub fn new(ctx: &Arc<Context>, size: u64, memory: SlotMemory, export: bool) -> Result<Self, VkError> {
        if export {
            if memory == SlotMemory::HostMapped {
                return Err(VkError::Unsupported(
                    "an exportable slot is device-local, never host-mapped".into(),
                ));
            }
            let shared = ctx.interop()?.shared_buffer(size)?;
            log::debug!("slot: {size} bytes, exportable, allocation {} bytes", shared.allocation_size());
            return Ok(Slot {
                buffer: shared.buffer(),
                size,
                backing: Backing::Shared(shared),
                ctx: ctx.clone(),
            });
        }
        let d = &ctx.device;
        // CUDA kernels in the queue reach the slot through its device address.
        let addressed = ctx.cuda_in_vulkan;
        let usage =
            if addressed { SLOT_USAGE | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS } else { SLOT_USAGE };
        let info =
            vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid device; `info` points at live locals.
        let buffer = unsafe { d.create_buffer(&info, None) }.call("vkCreateBuffer")?;
        let mut slot = Slot {
            buffer,
            size,
            backing: Backing::Own { memory: vk::DeviceMemory::null(), mapped: std::ptr::null_mut() },
            ctx: ctx.clone(),
        };
        // SAFETY: valid buffer.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        use vk::MemoryPropertyFlags as F;
        let (required, preferred) = match memory {
            SlotMemory::HostMapped => (F::HOST_VISIBLE | F::HOST_COHERENT, F::DEVICE_LOCAL),
            SlotMemory::DeviceLocal => (F::empty(), F::DEVICE_LOCAL),
        };
        let ty = find_memory_type(&ctx.memory_properties, req.memory_type_bits, required, preferred)
            .ok_or_else(|| {
                VkError::Unsupported(format!("no memory type with {required:?} for a slot buffer"))
            })?;
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let mut alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
        if addressed {
            alloc = alloc.push_next(&mut flags);
        }
        let allocated = crate::fault::inject(crate::fault::Fault::VkAlloc)
            // SAFETY: valid device; type index from this device.
            .and_then(|()| unsafe { d.allocate_memory(&alloc, None) })
            .call("vkAllocateMemory (slot)")?;
        let mut mapped = std::ptr::null_mut();
        slot.backing = Backing::Own { memory: allocated, mapped };
        // SAFETY: fresh buffer and memory; offset 0.
        unsafe { d.bind_buffer_memory(buffer, allocated, 0) }.call("vkBindBufferMemory")?;
        if memory == SlotMemory::HostMapped {
            // SAFETY: host-visible memory, not mapped yet.
            mapped = unsafe { d.map_memory(allocated, 0, size, vk::MemoryMapFlags::empty()) }
                .call("vkMapMemory (slot)")? as *mut f32;
            slot.backing = Backing::Own { memory: allocated, mapped };
        }
        log::debug!("slot: {size} bytes, allocation {} bytes, type {ty}", req.size);
        Ok(slot)
    }

    /// The buffer's device address, for a CUDA kernel launched in the queue; None unless the
    /// context was made for that ([`Context::new_with`]).
    pub fn device_address(&self) -> Option<u64> {
        if !self.ctx.cuda_in_vulkan || matches!(self.backing, Backing::Shared(_)) {
            return None;
        }
        // SAFETY: a buffer of this context's device, made with SHADER_DEVICE_ADDRESS usage and
        // bound to DEVICE_ADDRESS memory (both because `cuda_in_vulkan` is set, which also
        // enabled bufferDeviceAddress).
        Some(unsafe { vkhip_interop::cuda_in_vulkan::buffer_address(&self.ctx.device, self.buffer) })
    }

    /// Export the slot's memory: a new OPAQUE_FD with the sizes an importer needs.
    pub fn export(&self) -> Result<ExportedMemory, VkError> {
        match &self.backing {
            Backing::Shared(shared) => Ok(shared.export()?),
            Backing::Own { .. } => Err(VkError::Unsupported("this slot was not created exportable".into())),
        }
    }

    /// The persistent host mapping (`SlotMemory::HostMapped` only): `size / 4` floats.
    pub fn mapped(&self) -> Option<*mut f32> {
        match self.backing {
            Backing::Own { mapped, .. } if !mapped.is_null() => Some(mapped),
            _ => None,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Backing::Own { memory, .. } = self.backing {
            // SAFETY: owners drop slots only after the queue and every importer are done with
            // them (the session's field order: compute backend first, then slots).
            unsafe {
                self.ctx.device.destroy_buffer(self.buffer, None);
                if memory != vk::DeviceMemory::null() {
                    self.ctx.device.free_memory(memory, None);
                }
            }
        }
        // A shared slot's buffer and memory go with its `SharedBuffer`.
    }
}

/// What holds a semaphore.
enum SemaphoreBacking {
    /// Exportable: the interop crate's semaphore.
    Shared(SharedSemaphore),
    /// The app's own.
    Own,
}

/// A semaphore, timeline or binary, optionally exportable.
pub struct Semaphore {
    pub handle: vk::Semaphore,
    pub timeline: bool,
    backing: SemaphoreBacking,
    ctx: Arc<Context>,
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
        if export {
            let refuse = |e: vkhip_interop::Error| {
                VkError::Unsupported(format!("{}: use --sync bridged", e.message()))
            };
            let interop = ctx.interop()?;
            let shared = match timeline {
                Some(initial) => interop.shared_timeline(initial),
                None => interop.shared_binary(),
            }
            .map_err(|e| if e.is_environment() { refuse(e) } else { e.into() })?;
            return Ok(Semaphore {
                handle: shared.handle(),
                timeline: timeline.is_some(),
                backing: SemaphoreBacking::Shared(shared),
                ctx: ctx.clone(),
            });
        }
        let mut type_info = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(timeline.unwrap_or(0));
        let mut info = vk::SemaphoreCreateInfo::default();
        if timeline.is_some() {
            info = info.push_next(&mut type_info);
        }
        // SAFETY: valid device; pNext chain of live locals.
        let handle = unsafe { ctx.device.create_semaphore(&info, None) }.call("vkCreateSemaphore")?;
        Ok(Semaphore {
            handle,
            timeline: timeline.is_some(),
            backing: SemaphoreBacking::Own,
            ctx: ctx.clone(),
        })
    }

    /// Export it: a new OPAQUE_FD each call.
    pub fn export(&self) -> Result<ImportFd, VkError> {
        match &self.backing {
            SemaphoreBacking::Shared(shared) => Ok(shared.export()?),
            SemaphoreBacking::Own => {
                Err(VkError::Unsupported("this semaphore was not created exportable".into()))
            }
        }
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        if let SemaphoreBacking::Own = self.backing {
            // SAFETY: owners drop semaphores after the queue is idle and importers are destroyed.
            unsafe { self.ctx.device.destroy_semaphore(self.handle, None) };
        }
    }
}
