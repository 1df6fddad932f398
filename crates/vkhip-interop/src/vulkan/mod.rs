//! The Vulkan side: what a device must enable, the device (yours or one opened here), and the
//! exportable objects — buffers, 2D images, timeline and binary semaphores.
//!
//! **Memory.** Every shared buffer or image has its own allocation, made with
//! `VkExportMemoryAllocateInfo(OPAQUE_FD)` and bound at offset 0; it is dedicated to its object
//! when the driver prefers or requires it (`VkMemoryDedicatedRequirements`), and the importer is
//! then told so. The importer imports the allocation's size (`VkMemoryRequirements::size`), not
//! the object's. Sub-allocated exports gave CUDA wrong pointers (vulkano PR #1700), so nothing
//! here shares an allocation. An object the device cannot hold (larger than `maxBufferSize`, its
//! memory heap, `maxMemoryAllocationSize`, the format's `maxExtent` or `maxResourceSize`, …) is
//! refused before any Vulkan call is made for it, with an error naming the limit
//! ([`crate::Error::limit`], [`crate::Limit`]).
//!
//! **Images** are 2D, one mip level, one layer, optimal tiling, in exclusive sharing mode, usable
//! as a render target where the format allows ([`SharedImage::usage`]). Ownership moves between
//! Vulkan's queue family and `VK_QUEUE_FAMILY_EXTERNAL` (the compute API) in named steps —
//! [`SharedImage::cmd_prepare`] (the compute API first) or [`SharedImage::cmd_prepare_for_vulkan`]
//! (Vulkan first) once, then [`SharedImage::cmd_release`] after Vulkan's last access and
//! [`SharedImage::cmd_acquire`] before Vulkan's next, each naming Vulkan's access
//! ([`ImageAccess`]). Layout transitions happen on Vulkan's own queue family; transfers keep
//! `GENERAL`, the layout of the compute API's tenure (the sequence, and why: [`handoff`]). Buffers have the pair
//! [`SharedBuffer::cmd_acquire`] and [`SharedBuffer::cmd_release`]. Semaphores order the two
//! APIs; the barriers make the writes visible, change layouts and hand ownership over.
//!
//! **fds.** Each `export` returns a new fd that the caller owns until an import consumes it
//! ([`crate::ImportFd`]).

mod device;
pub mod handoff;
mod limits;
mod memory;
mod objects;
mod one_shot;
mod submit;
mod submitter;
pub mod wait;

#[cfg(feature = "wgpu")]
pub(crate) use device::calibrated_extension;
pub use device::{Capabilities, Device, OptionalFeatures};
pub use handoff::ImageAccess;
pub use objects::{ImportedBuffer, SharedBuffer, SharedImage, SharedSemaphore};
pub use submit::{Around, Edge, Wait, ONE_SHOT_TIMEOUT};
pub use submitter::Submitter;

use ash::{khr, vk};
use std::ffi::CStr;

/// Usage of every shared buffer: storage (shaders read and write it), transfer source and
/// destination (copies, fills, read-backs).
pub(crate) const BUFFER_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw(),
);

/// Which compute API will import what the device exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Importer {
    /// CUDA imports memory and semaphores (timeline and binary).
    Cuda,
    /// HIP imports memory; semaphores only where ROCm can (not on Linux), so semaphore export
    /// is optional for it.
    Hip,
}

impl Importer {
    pub fn name(self) -> &'static str {
        match self {
            Importer::Cuda => "CUDA",
            Importer::Hip => "HIP",
        }
    }
}

/// What an engine must enable for the crate to work on its device ([`requirements`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirements {
    /// The lowest Vulkan version of the instance and device (1.2: timeline semaphores and the
    /// external-memory queries are core).
    pub api_version: u32,
    /// Instance extensions to enable (none beyond 1.2's core today).
    pub instance_extensions: Vec<&'static CStr>,
    /// Device extensions to enable.
    pub device_extensions: Vec<&'static CStr>,
    /// Device extensions to enable when the device has them (semaphore export for HIP, which
    /// uses it only where ROCm can import semaphores).
    pub optional_device_extensions: Vec<&'static CStr>,
    /// `VkPhysicalDeviceVulkan12Features::timelineSemaphore` must be enabled.
    pub timeline_semaphore: bool,
    /// `VkPhysicalDeviceVulkan12Features::bufferDeviceAddress` must be enabled (for kernels
    /// launched in Vulkan: [`crate::cuda_in_vulkan::requirements`]).
    pub buffer_device_address: bool,
}

/// The instance and device extensions and features to enable for `importer`.
///
/// ```
/// use vkhip_interop::vulkan::{requirements, Importer};
/// let cuda = requirements(Importer::Cuda);
/// let names: Vec<_> = cuda.device_extensions.iter().map(|n| n.to_str().unwrap()).collect();
/// assert_eq!(names, ["VK_KHR_external_memory_fd", "VK_KHR_external_semaphore_fd"]);
/// assert!(cuda.timeline_semaphore);
/// let hip = requirements(Importer::Hip);
/// assert_eq!(hip.device_extensions.len(), 1); // memory only; semaphores are optional on HIP
/// ```
pub fn requirements(importer: Importer) -> Requirements {
    let memory = khr::external_memory_fd::NAME;
    let semaphore = khr::external_semaphore_fd::NAME;
    let (device_extensions, optional_device_extensions) = match importer {
        Importer::Cuda => (vec![memory, semaphore], vec![]),
        Importer::Hip => (vec![memory], vec![semaphore]),
    };
    Requirements {
        api_version: vk::API_VERSION_1_2,
        instance_extensions: Vec::new(),
        device_extensions,
        optional_device_extensions,
        timeline_semaphore: true,
        buffer_device_address: false,
    }
}

/// The queue family to create a device's queue in, from `vkGetPhysicalDeviceQueueFamilyProperties`:
/// the first with graphics and compute (shared images are render targets too), else the first
/// with compute; None when no family can compute. What [`Device::open`] uses, and
/// [`crate::cuda_in_vulkan::supported`] reports.
///
/// ```
/// use ash::vk::{QueueFamilyProperties as F, QueueFlags as Q};
/// use vkhip_interop::vulkan::compute_queue_family;
/// let family = |queue_flags| F { queue_flags, queue_count: 1, ..Default::default() };
/// // A transfer-only family first, then compute only, then graphics and compute.
/// let families = [family(Q::TRANSFER), family(Q::COMPUTE), family(Q::GRAPHICS | Q::COMPUTE)];
/// assert_eq!(compute_queue_family(&families), Some(2));
/// assert_eq!(compute_queue_family(&families[..2]), Some(1));
/// assert_eq!(compute_queue_family(&[family(Q::GRAPHICS), family(Q::TRANSFER)]), None);
/// ```
pub fn compute_queue_family(families: &[vk::QueueFamilyProperties]) -> Option<u32> {
    [vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE, vk::QueueFlags::COMPUTE]
        .iter()
        .find_map(|&want| families.iter().position(|f| f.queue_count > 0 && f.queue_flags.contains(want)))
        .map(|i| i as u32)
}

/// `VK_API_VERSION_MAJOR.MINOR.PATCH`.
pub(crate) fn version_string(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

pub use crate::device_match::uuid_string;
