//! `--views N`: the limits N views (and E environments) are checked against before any Vulkan
//! object of theirs is made, each refusal naming the limit and the device's value
//! ([`VkError::Limit`]). The technique is in docs/ARCHITECTURE.md, "Views".
//!
//! # Examples
//!
//! ```
//! use ash::vk;
//! use vkhip::sim::Grid;
//! use vkhip::vk::device::PhysicalDeviceInfo;
//! use vkhip::vk::views::{check, ViewsRequest};
//!
//! let dev = PhysicalDeviceInfo {
//!     name: "gpu".into(),
//!     shader_output_layer: true,
//!     max_image_array_layers: 2048,
//!     max_framebuffer_layers: 1024,
//!     max_image_dimension_2d: 16384,
//!     max_storage_buffer_range: u32::MAX,
//!     max_memory_allocation_size: u64::MAX,
//!     device_local_bytes: 8 << 30,
//!     ..Default::default()
//! };
//! let request = |views| ViewsRequest {
//!     views,
//!     envs: 1,
//!     extent: vk::Extent2D { width: 128, height: 128 },
//!     grid: Grid { width: 64, height: 64 },
//!     slots: 3,
//!     shared_buffers: 3,
//! };
//! assert!(check(&dev, &request(1024)).is_ok());
//! let e = check(&dev, &request(1500)).unwrap_err();
//! assert_eq!(e.to_string(), "--views 1500: 1500 is past this device's maxFramebufferLayers (1024)");
//! ```

use super::device::PhysicalDeviceInfo;
use super::VkError;
use crate::sim::Grid;
use ash::vk;

/// What a run with views makes: N layers of `extent` (colour and depth), E height fields of
/// `grid` in each of `slots` slots, and `shared_buffers` linear copies of the N layers (the
/// embed API's K buffers; 0 for the app).
#[derive(Clone, Copy, Debug)]
pub struct ViewsRequest {
    pub views: u32,
    pub envs: u32,
    pub extent: vk::Extent2D,
    pub grid: Grid,
    pub slots: u32,
    pub shared_buffers: u32,
}

impl ViewsRequest {
    /// Bytes of one frame of every view, RGBA8: N × H × W × 4.
    pub fn frame_bytes(&self) -> u64 {
        self.views as u64 * self.extent.width as u64 * self.extent.height as u64 * 4
    }

    /// Bytes of one slot's heights: E × rows × cols × 4.
    pub fn heights_bytes(&self) -> u64 {
        self.envs as u64 * self.grid.bytes()
    }
}

/// Refuse `request` where it is past a limit of `device` (before any driver call): the views'
/// layers (`maxImageArrayLayers`, `maxFramebufferLayers`), the size (`maxImageDimension2D`),
/// a slot's heights (`maxStorageBufferRange`), one allocation (`maxMemoryAllocationSize`) and
/// the device-local heap (the targets, the slots and the shared buffers together). N > 1 also
/// needs `shaderOutputLayer` ([`VkError::Unsupported`] without it).
pub fn check(device: &PhysicalDeviceInfo, request: &ViewsRequest) -> Result<(), VkError> {
    let r = request;
    let views = format!("--views {}", r.views);
    let limit = |limit, device: u64, asked: u64, what: &str| {
        if asked > device {
            Err(VkError::Limit { limit, device, asked, what: what.to_string() })
        } else {
            Ok(())
        }
    };
    check_layered_shader(device, r.views)?;
    limit("maxImageArrayLayers", device.max_image_array_layers.into(), r.views.into(), &views)?;
    limit("maxFramebufferLayers", device.max_framebuffer_layers.into(), r.views.into(), &views)?;
    let side = r.extent.width.max(r.extent.height);
    let size = format!("--size {}x{}", r.extent.width, r.extent.height);
    limit("maxImageDimension2D", device.max_image_dimension_2d.into(), side.into(), &size)?;
    check_heights(device, r.envs, r.grid)?;
    let frame = format!("{views} at {size} (bytes of one frame)");
    if device.max_memory_allocation_size > 0 {
        limit("maxMemoryAllocationSize", device.max_memory_allocation_size, r.frame_bytes(), &frame)?;
    }
    if device.device_local_bytes > 0 {
        // Colour and depth (4 bytes a texel each), the slots' heights, the shared copies.
        let total = 2 * r.frame_bytes()
            + r.slots as u64 * r.heights_bytes()
            + r.shared_buffers as u64 * r.frame_bytes();
        let what = format!(
            "{views} at {size} with {} slots and {} frame buffers (bytes)",
            r.slots, r.shared_buffers
        );
        limit("device-local heap size", device.device_local_bytes, total, &what)?;
    }
    Ok(())
}

/// N > 1 views need the layered surface shader, which writes `gl_Layer`: the device's
/// `shaderOutputLayer` (Vulkan 1.2). The window's tiles use that shader too.
pub fn check_layered_shader(device: &PhysicalDeviceInfo, views: u32) -> Result<(), VkError> {
    if views > 1 && !device.shader_output_layer {
        return Err(VkError::Unsupported(format!(
            "--views {views}: {} has no shaderOutputLayer (Vulkan 1.2), which draws each view into its layer",
            device.name
        )));
    }
    Ok(())
}

/// A slot of `envs` height fields of `grid` within `maxStorageBufferRange` (one binding reads
/// them all).
pub fn check_heights(device: &PhysicalDeviceInfo, envs: u32, grid: Grid) -> Result<(), VkError> {
    let bytes = envs as u64 * grid.bytes();
    let range = device.max_storage_buffer_range as u64;
    if bytes > range {
        return Err(VkError::Limit {
            limit: "maxStorageBufferRange",
            device: range,
            asked: bytes,
            what: format!("--envs {envs} of --grid {grid} (bytes)"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> PhysicalDeviceInfo {
        PhysicalDeviceInfo {
            name: "dev".into(),
            shader_output_layer: true,
            max_image_array_layers: 256,
            max_framebuffer_layers: 256,
            max_image_dimension_2d: 4096,
            max_storage_buffer_range: (1 << 20) - 1,
            max_memory_allocation_size: 1 << 30,
            device_local_bytes: 1 << 32,
            ..Default::default()
        }
    }

    fn request(views: u32) -> ViewsRequest {
        ViewsRequest {
            views,
            envs: 1,
            extent: vk::Extent2D { width: 64, height: 48 },
            grid: Grid { width: 32, height: 32 },
            slots: 2,
            shared_buffers: 2,
        }
    }

    #[test]
    fn each_limit_is_named_with_the_devices_value() {
        let dev = device();
        assert!(check(&dev, &request(256)).is_ok());
        let text = |r: &ViewsRequest| check(&dev, r).unwrap_err().to_string();
        assert_eq!(text(&request(257)), "--views 257: 257 is past this device's maxImageArrayLayers (256)");
        let big = ViewsRequest { extent: vk::Extent2D { width: 5000, height: 8 }, ..request(2) };
        assert_eq!(text(&big), "--size 5000x8: 5000 is past this device's maxImageDimension2D (4096)");
        let envs = ViewsRequest { envs: 2, grid: Grid { width: 512, height: 256 }, ..request(2) };
        assert_eq!(
            text(&envs),
            "--envs 2 of --grid 512x256 (bytes): 1048576 is past this device's maxStorageBufferRange (1048575)"
        );
    }

    #[test]
    fn the_heap_counts_targets_slots_and_shared_buffers() {
        let dev = PhysicalDeviceInfo { device_local_bytes: 1 << 20, ..device() };
        // 16 views of 64x48: 196,608 bytes a frame; ×2 (colour, depth) + 2 shared = 786,432,
        // + 2 slots of 4 KiB = 794,624: fits 1 MiB; 32 views do not.
        assert!(check(&dev, &request(16)).is_ok());
        let e = check(&dev, &request(32)).unwrap_err();
        assert!(matches!(e, VkError::Limit { limit: "device-local heap size", asked: 1_581_056, .. }), "{e}");
        assert!(e.is_environment());
    }

    #[test]
    fn views_need_shader_output_layer() {
        let dev = PhysicalDeviceInfo { shader_output_layer: false, ..device() };
        assert!(check(&dev, &request(1)).is_ok());
        let e = check(&dev, &request(2)).unwrap_err().to_string();
        assert!(e.contains("shaderOutputLayer"), "{e}");
    }
}
