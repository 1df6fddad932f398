//! Memory-type choice (pure, unit-tested), the one exportable allocation every shared object
//! gets, and the count of the device's allocations the crate made (checked with the other
//! limits of an allocation before `vkAllocateMemory`: [`reserve`]).

use super::device::Inner;
use super::limits;
use crate::error::{Api, Error, Result};
use ash::vk;
use std::sync::atomic::Ordering;

/// Index of a memory type allowed by `type_bits` that has all of `required`, preferring one that
/// also has all of `preferred`; the lowest index wins a tie (drivers order types by preference).
pub(crate) fn find_memory_type(
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

/// What an allocation is dedicated to, when it is.
#[derive(Clone, Copy)]
pub(crate) enum Owner {
    Buffer(vk::Buffer),
    Image(vk::Image),
}

/// An exportable (OPAQUE_FD) device-local allocation for one buffer or image.
pub(crate) struct Allocation {
    pub(crate) memory: vk::DeviceMemory,
    /// `VkMemoryRequirements::size`: what an importer imports.
    pub(crate) size: u64,
    pub(crate) dedicated: bool,
    /// Whether the host can map it (HOST_VISIBLE and HOST_COHERENT: lavapipe's memory, say).
    pub(crate) host_coherent: bool,
}

/// Whether memory type `ty` is HOST_VISIBLE and HOST_COHERENT.
fn host_coherent(props: &vk::PhysicalDeviceMemoryProperties, ty: u32) -> bool {
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    props.memory_types[ty as usize].property_flags.contains(host)
}

/// One of the device's allocations, taken by [`reserve`] once the allocation fits the device's
/// limits: [`Reserved::made`] keeps it (until [`free`]), dropping it unmade gives it back.
pub(crate) struct Reserved<'a> {
    device: &'a Inner,
    made: bool,
}

impl Reserved<'_> {
    /// The allocation was made: it counts until [`free`].
    pub(crate) fn made(mut self) {
        self.made = true;
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if !self.made {
            self.device.allocations.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Check an allocation of `size` bytes in memory type `ty` for `what` against the device's
/// limits ([`limits::allocation`]) and count it, before `vkAllocateMemory` is called.
pub(crate) fn reserve<'a>(device: &'a Inner, ty: u32, size: u64, what: &str) -> Result<Reserved<'a>> {
    let mut over = None;
    let counted =
        device.allocations.fetch_update(
            Ordering::Relaxed,
            Ordering::Relaxed,
            |live| match limits::allocation(&device.limits, &device.memory_properties, ty, size, live) {
                Ok(()) => Some(live + 1),
                Err(e) => {
                    over = Some(e);
                    None
                }
            },
        );
    match (counted, over) {
        (Ok(_), _) => Ok(Reserved { device, made: false }),
        (Err(_), Some(over)) => {
            Err(over.error(&device.caps.name, format_args!("the allocation of {size} bytes for {what}")))
        }
        (Err(_), None) => unreachable!("fetch_update fails only when the closure refused"),
    }
}

/// Free `memory`, an allocation [`reserve`] counted.
///
/// # Safety
/// `memory` is an allocation of `device` that nothing uses any more (no object bound to it is
/// used again, no GPU work reads it).
pub(crate) unsafe fn free(device: &Inner, memory: vk::DeviceMemory) {
    // SAFETY: per this function's contract.
    unsafe { device.device.free_memory(memory, None) };
    device.allocations.fetch_sub(1, Ordering::Relaxed);
}

/// Where an exportable allocation lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Device-local memory first (what the GPU reads and writes fastest).
    Device,
    /// Memory the host maps (HOST_VISIBLE and HOST_COHERENT required, HOST_CACHED preferred):
    /// for a host reader.
    Host,
}

/// Allocate exportable memory for `owner` (`what`, for errors) in the memory `placement` names,
/// dedicated to it when the driver prefers or requires it, or when OPAQUE_FD export of such an
/// object is dedicated-only (`export_dedicated_only`), and bind it at offset 0. Refused before
/// `vkAllocateMemory` when the device's limits do not allow it ([`reserve`]). On failure nothing
/// is left allocated; `owner` itself stays the caller's.
pub(crate) fn allocate_exportable_in(
    device: &Inner,
    owner: Owner,
    export_dedicated_only: bool,
    what: &str,
    placement: Placement,
) -> Result<Allocation> {
    let d = &device.device;
    let mut dedicated_req = vk::MemoryDedicatedRequirements::default();
    let mut req2 = vk::MemoryRequirements2::default().push_next(&mut dedicated_req);
    match owner {
        // SAFETY: a live buffer of this device; the pNext chain points at live locals.
        Owner::Buffer(b) => unsafe {
            d.get_buffer_memory_requirements2(
                &vk::BufferMemoryRequirementsInfo2::default().buffer(b),
                &mut req2,
            )
        },
        // SAFETY: as above, for an image.
        Owner::Image(i) => unsafe {
            d.get_image_memory_requirements2(&vk::ImageMemoryRequirementsInfo2::default().image(i), &mut req2)
        },
    }
    let req = req2.memory_requirements;
    let dedicated = dedicated_req.prefers_dedicated_allocation == vk::TRUE
        || dedicated_req.requires_dedicated_allocation == vk::TRUE
        || export_dedicated_only;
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let (required, preferred) = match placement {
        Placement::Device => (vk::MemoryPropertyFlags::empty(), vk::MemoryPropertyFlags::DEVICE_LOCAL),
        Placement::Host => (host, vk::MemoryPropertyFlags::HOST_CACHED),
    };
    let ty = find_memory_type(&device.memory_properties, req.memory_type_bits, required, preferred)
        .ok_or_else(|| Error::unsupported(Api::Vulkan, "no memory type can hold the shared object"))?;
    let reserved = reserve(device, ty, req.size, what)?;
    let mut export =
        vk::ExportMemoryAllocateInfo::default().handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let mut dedicated_info = match owner {
        Owner::Buffer(b) => vk::MemoryDedicatedAllocateInfo::default().buffer(b),
        Owner::Image(i) => vk::MemoryDedicatedAllocateInfo::default().image(i),
    };
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(req.size)
        .memory_type_index(ty)
        .push_next(&mut export);
    if dedicated {
        alloc = alloc.push_next(&mut dedicated_info);
    }
    // SAFETY: valid device; the type index is this device's; the pNext chain points at live
    // locals; the size fits the type's heap and the device's limits (reserved above).
    let memory =
        unsafe { d.allocate_memory(&alloc, None) }.map_err(|r| Error::vulkan("vkAllocateMemory", r))?;
    reserved.made();
    bind_or_free(device, owner, memory)?;
    log::debug!(
        "vulkan: exportable allocation of {} bytes, memory type {ty}, dedicated {dedicated}",
        req.size
    );
    let host_coherent = host_coherent(&device.memory_properties, ty);
    Ok(Allocation { memory, size: req.size, dedicated, host_coherent })
}

/// Bind fresh `memory` to `owner` at offset 0; on failure free it (nothing else uses it).
fn bind_or_free(device: &Inner, owner: Owner, memory: vk::DeviceMemory) -> Result<()> {
    let d = &device.device;
    let bound =
        match owner {
            // SAFETY: fresh memory of a type and size the owner allows, offset 0; the owner is unbound.
            Owner::Buffer(b) => unsafe { d.bind_buffer_memory(b, memory, 0) }
                .map_err(|r| Error::vulkan("vkBindBufferMemory", r)),
            // SAFETY: as above.
            Owner::Image(i) => unsafe { d.bind_image_memory(i, memory, 0) }
                .map_err(|r| Error::vulkan("vkBindImageMemory", r)),
        };
    if bound.is_err() {
        // SAFETY: nothing uses the memory: binding it failed.
        unsafe { free(device, memory) };
    }
    bound
}

/// Import `memory` (an OPAQUE_FD of the same GPU) for `owner` (`what`, for errors), in the
/// memory type the exporter chose (device local first among the types the owner allows, which
/// OPAQUE_FD requires to match), dedicated when the exporter's was, and bind it at offset 0.
/// Refused before `vkAllocateMemory` when the allocation is smaller than the owner needs
/// (`VkMemoryRequirements::size`: binding it is forbidden) or does not fit the device's limits
/// ([`reserve`]). Vulkan takes the fd on success and leaves it to the caller on failure
/// (`VkImportMemoryFdInfoKHR`), which [`crate::ImportFd`] encodes. On failure nothing is left
/// allocated; `owner` stays the caller's.
pub(crate) fn import(
    device: &Inner,
    memory: crate::ExportedMemory,
    owner: Owner,
    what: &str,
) -> Result<Allocation> {
    let d = &device.device;
    let req = match owner {
        // SAFETY: a live buffer of this device.
        Owner::Buffer(b) => unsafe { d.get_buffer_memory_requirements(b) },
        // SAFETY: a live image of this device.
        Owner::Image(i) => unsafe { d.get_image_memory_requirements(i) },
    };
    let ty = find_memory_type(
        &device.memory_properties,
        req.memory_type_bits,
        vk::MemoryPropertyFlags::empty(),
        vk::MemoryPropertyFlags::DEVICE_LOCAL,
    )
    .ok_or_else(|| Error::unsupported(Api::Vulkan, "no memory type can hold the imported object"))?;
    let (size, dedicated) = (memory.allocation_size, memory.dedicated);
    if size < req.size {
        return Err(Error::invalid(
            Api::Vulkan,
            format!(
                "an imported allocation of {size} bytes is smaller than {what} needs ({} bytes, VkMemoryRequirements::size)",
                req.size
            ),
        ));
    }
    let reserved = reserve(device, ty, size, what)?;
    let imported = memory.fd.import(crate::FdOwnership::TakenOnSuccess, |raw| {
        let mut import = vk::ImportMemoryFdInfoKHR::default()
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD)
            .fd(raw);
        let mut dedicated_info = match owner {
            Owner::Buffer(b) => vk::MemoryDedicatedAllocateInfo::default().buffer(b),
            Owner::Image(i) => vk::MemoryDedicatedAllocateInfo::default().image(i),
        };
        let mut alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(size)
            .memory_type_index(ty)
            .push_next(&mut import);
        if dedicated {
            alloc = alloc.push_next(&mut dedicated_info);
        }
        // SAFETY: valid device; the fd refers to an exported allocation of this GPU; the size
        // fits the type's heap and the device's limits (reserved above).
        unsafe { d.allocate_memory(&alloc, None) }
            .map_err(|r| Error::vulkan("vkAllocateMemory (import OPAQUE_FD)", r))
    })?;
    reserved.made();
    bind_or_free(device, owner, imported)?;
    let host_coherent = host_coherent(&device.memory_properties, ty);
    Ok(Allocation { memory: imported, size, dedicated, host_coherent })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_type_prefers_then_requires() {
        type F = vk::MemoryPropertyFlags;
        let mut props = vk::PhysicalDeviceMemoryProperties { memory_type_count: 3, ..Default::default() };
        props.memory_types[0].property_flags = F::HOST_VISIBLE | F::HOST_COHERENT;
        props.memory_types[1].property_flags = F::DEVICE_LOCAL;
        props.memory_types[2].property_flags = F::DEVICE_LOCAL | F::HOST_VISIBLE;
        assert_eq!(find_memory_type(&props, 0b111, F::empty(), F::DEVICE_LOCAL), Some(1));
        assert_eq!(find_memory_type(&props, 0b001, F::empty(), F::DEVICE_LOCAL), Some(0));
        assert_eq!(find_memory_type(&props, 0b101, F::HOST_VISIBLE, F::DEVICE_LOCAL), Some(2));
        assert_eq!(find_memory_type(&props, 0b010, F::HOST_VISIBLE, F::empty()), None);
    }
}
