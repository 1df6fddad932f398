//! The device limits a shared buffer or image must fit, read once per device, and the checks
//! (pure, unit-tested) that refuse an object before the Vulkan call the specification forbids for
//! it, with an error naming the limit ([`Limit`]).
//!
//! What each call the crate makes for a shared object may not be given, and where it is checked:
//!
//! - `vkCreateBuffer`: a size of 0 (refused by `shared_buffer`); a size above `maxBufferSize`
//!   (`VUID-VkBufferCreateInfo-size-06409`; known on Vulkan 1.3 or with `VK_KHR_maintenance4`,
//!   otherwise the driver's answer is all there is): [`buffer`]. The usage must be exportable as
//!   OPAQUE_FD (`VkExternalBufferProperties`): `Device::shared_buffer_with_usage`.
//! - `vkCreateImage`: the format's features for the usage, OPAQUE_FD export of such an image
//!   (`vkGetPhysicalDeviceImageFormatProperties2`), then [`image`]: the extent within that
//!   query's `maxExtent` (`VUID-VkImageCreateInfo-extent-02252`/`-02253`), its bytes within its
//!   `maxResourceSize` (the layer's estimate: texels × bytes per texel), and a render target's
//!   extent within `maxFramebufferWidth`/`maxFramebufferHeight`
//!   (`VUID-VkImageCreateInfo-usage-00964`/`-00965`).
//! - `vkAllocateMemory`: [`allocation`]: the allocation within its memory type's heap
//!   (`VUID-vkAllocateMemory-pAllocateInfo-01713`), within `maxMemoryAllocationSize` (not a
//!   VUID: the driver "may" fail larger ones, and does), and fewer allocations alive than
//!   `maxMemoryAllocationCount` (`VUID-vkAllocateMemory-maxMemoryAllocationCount-04101`; the
//!   crate counts the allocations it made, it cannot see an engine's). A dedicated allocation
//!   where the export needs one (`VUID-VkMemoryAllocateInfo-pNext-00639`): the buffer's or the
//!   image's own `DEDICATED_ONLY`.
//! - `vkBindBufferMemory` / `vkBindImageMemory`: an imported allocation at least
//!   `VkMemoryRequirements::size` (`VUID-vkBindBufferMemory-size-01037`,
//!   `VUID-vkBindImageMemory-size-01049`): the exporter says how large it is, so it is checked
//!   (`memory::import`).
//!
//! Not limits of these objects: `maxImageDimension2D` is the extent every format is guaranteed,
//! not a ceiling (a format may report a larger `maxExtent`, which is the rule); the crate binds no
//! descriptors, so `maxStorageBufferRange` is the binder's to check (the app does, before making
//! its slots); no object here is sparse.

use crate::error::Limit;
use ash::vk;

/// What a device allows, read once ([`DeviceLimits::probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceLimits {
    /// `maxBufferSize`, when the device reports it (Vulkan 1.3 or `VK_KHR_maintenance4`).
    pub(crate) max_buffer_size: Option<u64>,
    pub(crate) max_memory_allocation_size: u64,
    pub(crate) max_memory_allocation_count: u32,
    /// `maxFramebufferWidth`, `maxFramebufferHeight`.
    pub(crate) max_framebuffer: (u32, u32),
}

impl DeviceLimits {
    /// The limits of `physical`.
    ///
    /// # Safety
    /// `physical` is a physical device of `instance`, which is live, and supports Vulkan 1.2
    /// (`vkGetPhysicalDeviceProperties2` and the 1.1 maintenance3 properties are core there).
    pub(crate) unsafe fn probe(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Self {
        // SAFETY: per this function's contract.
        let api_version = unsafe { instance.get_physical_device_properties(physical) }.api_version;
        // SAFETY: as above. A failed listing only hides maintenance4 from a 1.2 device.
        let maintenance4_extension = unsafe { instance.enumerate_device_extension_properties(physical) }
            .unwrap_or_default()
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ash::khr::maintenance4::NAME));
        let maintenance4 = maintenance4_extension || api_version >= vk::API_VERSION_1_3;
        let mut m3 = vk::PhysicalDeviceMaintenance3Properties::default();
        let mut m4 = vk::PhysicalDeviceMaintenance4Properties::default();
        let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut m3);
        if maintenance4 {
            props = props.push_next(&mut m4);
        }
        // SAFETY: as above; the chain holds structures of versions or extensions the device has.
        unsafe { instance.get_physical_device_properties2(physical, &mut props) };
        let limits = props.properties.limits;
        DeviceLimits {
            max_buffer_size: maintenance4.then_some(m4.max_buffer_size),
            max_memory_allocation_size: m3.max_memory_allocation_size,
            max_memory_allocation_count: limits.max_memory_allocation_count,
            max_framebuffer: (limits.max_framebuffer_width, limits.max_framebuffer_height),
        }
    }
}

/// A request over a limit: which limit, and the device's value of it as the message shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Over {
    pub(crate) limit: Limit,
    pub(crate) max: String,
}

impl Over {
    fn new(limit: Limit, max: impl Into<String>) -> Self {
        Over { limit, max: max.into() }
    }

    /// The crate's error: "`device`: `what` exceeds `limit` (`max`)".
    pub(crate) fn error(self, device: &str, what: impl std::fmt::Display) -> crate::Error {
        crate::Error::exceeds(
            crate::Api::Vulkan,
            self.limit,
            format!("{device}: {what} exceeds {} ({})", self.limit.name(), self.max),
        )
    }
}

/// A buffer of `bytes` (`vkCreateBuffer`).
pub(crate) fn buffer(limits: &DeviceLimits, bytes: u64) -> Result<(), Over> {
    match limits.max_buffer_size {
        Some(max) if bytes > max => Err(Over::new(Limit::MaxBufferSize, format!("{max} bytes"))),
        _ => Ok(()),
    }
}

/// An allocation of `size` bytes in memory type `type_index` while `live` allocations of the
/// crate are alive (`vkAllocateMemory`).
pub(crate) fn allocation(
    limits: &DeviceLimits,
    memory: &vk::PhysicalDeviceMemoryProperties,
    type_index: u32,
    size: u64,
    live: u32,
) -> Result<(), Over> {
    if live >= limits.max_memory_allocation_count {
        let max = limits.max_memory_allocation_count;
        return Err(Over::new(
            Limit::MaxMemoryAllocationCount,
            format!("{max} allocations; the crate has {live} alive"),
        ));
    }
    let heap_index = memory.memory_types[type_index as usize].heap_index;
    let heap = memory.memory_heaps[heap_index as usize].size;
    if size > heap {
        return Err(Over::new(
            Limit::MemoryHeapSize,
            format!("{heap} bytes, heap {heap_index} of memory type {type_index}"),
        ));
    }
    let max = limits.max_memory_allocation_size;
    if size > max {
        return Err(Over::new(Limit::MaxMemoryAllocationSize, format!("{max} bytes")));
    }
    Ok(())
}

/// What `vkGetPhysicalDeviceImageFormatProperties2` allows for the image's format, usage and
/// export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FormatLimits {
    pub(crate) max_extent: (u32, u32),
    pub(crate) max_resource_size: u64,
}

/// A 2D image of `width` × `height` texels of `texel_bytes` each, a render target when
/// `attachment` (`vkCreateImage`).
pub(crate) fn image(
    limits: &DeviceLimits,
    format: &FormatLimits,
    attachment: bool,
    (width, height): (u32, u32),
    texel_bytes: u32,
) -> Result<(), Over> {
    let (max_w, max_h) = format.max_extent;
    if width > max_w || height > max_h {
        return Err(Over::new(Limit::MaxExtent, format!("{max_w}x{max_h}")));
    }
    let bytes = u64::from(width) * u64::from(height) * u64::from(texel_bytes);
    if bytes > format.max_resource_size {
        let max = format.max_resource_size;
        return Err(Over::new(Limit::MaxResourceSize, format!("{max} bytes; the image has {bytes}")));
    }
    let (fb_w, fb_h) = limits.max_framebuffer;
    if attachment && width > fb_w {
        return Err(Over::new(Limit::MaxFramebufferWidth, format!("{fb_w}, for a render target")));
    }
    if attachment && height > fb_h {
        return Err(Over::new(Limit::MaxFramebufferHeight, format!("{fb_h}, for a render target")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits unlike lavapipe's (where the heap, maxMemoryAllocationSize and the extents are
    /// all equal), so that each check is reached on its own.
    fn limits() -> DeviceLimits {
        DeviceLimits {
            max_buffer_size: Some(1 << 32),
            max_memory_allocation_size: 1 << 30,
            max_memory_allocation_count: 4096,
            max_framebuffer: (8192, 4096),
        }
    }

    fn memory() -> vk::PhysicalDeviceMemoryProperties {
        let mut m = vk::PhysicalDeviceMemoryProperties {
            memory_type_count: 2,
            memory_heap_count: 2,
            ..Default::default()
        };
        m.memory_types[0].heap_index = 0;
        m.memory_types[1].heap_index = 1;
        m.memory_heaps[0].size = 1 << 33;
        m.memory_heaps[1].size = 1 << 28;
        m
    }

    #[test]
    fn buffers_above_max_buffer_size_are_refused_and_unknown_limits_left_to_the_driver() {
        assert_eq!(buffer(&limits(), 1 << 32), Ok(()));
        assert_eq!(buffer(&limits(), (1 << 32) + 1).unwrap_err().limit, Limit::MaxBufferSize);
        assert_eq!(buffer(&limits(), u64::MAX).unwrap_err().max, "4294967296 bytes");
        let unknown = DeviceLimits { max_buffer_size: None, ..limits() };
        assert_eq!(buffer(&unknown, u64::MAX), Ok(()));
    }

    #[test]
    fn allocations_are_held_to_the_count_then_their_heap_then_max_memory_allocation_size() {
        let (l, m) = (limits(), memory());
        assert_eq!(allocation(&l, &m, 0, 1 << 30, 4095), Ok(()));
        let e = allocation(&l, &m, 0, 4096, 4096).unwrap_err();
        assert_eq!(
            (e.limit, e.max.as_str()),
            (Limit::MaxMemoryAllocationCount, "4096 allocations; the crate has 4096 alive")
        );
        // Heap 1 is smaller than maxMemoryAllocationSize: the heap is named.
        let e = allocation(&l, &m, 1, (1 << 28) + 1, 0).unwrap_err();
        assert_eq!(
            (e.limit, e.max.as_str()),
            (Limit::MemoryHeapSize, "268435456 bytes, heap 1 of memory type 1")
        );
        assert_eq!(allocation(&l, &m, 1, 1 << 28, 0), Ok(()));
        // Heap 0 is larger: maxMemoryAllocationSize is.
        let e = allocation(&l, &m, 0, (1 << 30) + 1, 0).unwrap_err();
        assert_eq!((e.limit, e.max.as_str()), (Limit::MaxMemoryAllocationSize, "1073741824 bytes"));
        let e = allocation(&l, &m, 0, (1 << 33) + 1, 0).unwrap_err();
        assert_eq!(e.limit, Limit::MemoryHeapSize);
    }

    #[test]
    fn images_are_held_to_the_format_extent_resource_size_and_a_render_target_to_the_framebuffer() {
        let l = limits();
        let f = FormatLimits { max_extent: (16384, 16384), max_resource_size: 1 << 31 };
        assert_eq!(image(&l, &f, false, (16384, 8192), 16), Ok(()));
        assert_eq!(image(&l, &f, false, (16385, 1), 4).unwrap_err().limit, Limit::MaxExtent);
        assert_eq!(image(&l, &f, false, (1, 16385), 4).unwrap_err().max, "16384x16384");
        let e = image(&l, &f, false, (16384, 8193), 16).unwrap_err();
        assert_eq!(
            (e.limit, e.max.as_str()),
            (Limit::MaxResourceSize, "2147483648 bytes; the image has 2147745792")
        );
        // The framebuffer's limits bind render targets only.
        assert_eq!(image(&l, &f, false, (8193, 4097), 4), Ok(()));
        assert_eq!(image(&l, &f, true, (8192, 4096), 4), Ok(()));
        assert_eq!(image(&l, &f, true, (8193, 1), 4).unwrap_err().limit, Limit::MaxFramebufferWidth);
        assert_eq!(image(&l, &f, true, (1, 4097), 4).unwrap_err().limit, Limit::MaxFramebufferHeight);
    }

    #[test]
    fn the_error_names_the_limit_and_the_device_value() {
        let e = buffer(&limits(), u64::MAX)
            .unwrap_err()
            .error("gpu", "a shared buffer of 18446744073709551615 bytes");
        assert_eq!((e.kind(), e.limit()), (crate::ErrorKind::Unsupported, Some(Limit::MaxBufferSize)));
        assert_eq!(
            e.to_string(),
            "vulkan: gpu: a shared buffer of 18446744073709551615 bytes exceeds maxBufferSize (4294967296 bytes)"
        );
    }
}
