//! The Vulkan side: what to enable, the device (the engine's, borrowed, or one of the crate's
//! own), shared buffers, images and timeline semaphores, and the barriers an engine records.

use crate::handle::{self, handle};
use crate::{entry, Fail, Result, VkhipStatus};
use ash::vk;
use std::ffi::{c_char, CString};
use std::time::Duration;
use vkhip_interop::device_match::DeviceRequest;
use vkhip_interop::vulkan::{self, ImageAccess, Importer};
use vkhip_interop::ImageFormat;

// Vulkan's own types, as vulkan.h names them (the header includes it; cbindgen leaves these
// names alone). ash's handles and flags are `#[repr(transparent)]` over the same C types.
pub type VkInstance = vk::Instance;
pub type VkPhysicalDevice = vk::PhysicalDevice;
pub type VkDevice = vk::Device;
pub type VkCommandBuffer = vk::CommandBuffer;
pub type VkBuffer = vk::Buffer;
pub type VkImage = vk::Image;
pub type VkSemaphore = vk::Semaphore;
pub type VkPipelineStageFlags = u32;
pub type VkAccessFlags = u32;
pub type VkImageUsageFlags = u32;
#[allow(non_camel_case_types)]
pub type PFN_vkGetInstanceProcAddr = Option<vk::PFN_vkGetInstanceProcAddr>;

/// Which compute API imports what the device exports.
pub type VkhipImporter = u32;
/// CUDA: memory and semaphores (VK_KHR_external_memory_fd and VK_KHR_external_semaphore_fd).
pub const VKHIP_IMPORTER_CUDA: VkhipImporter = 0;
/// HIP: memory only (semaphore export is optional: ROCm cannot import semaphores on Linux).
pub const VKHIP_IMPORTER_HIP: VkhipImporter = 1;

/// The texel format of a shared image (the Rust API's ImageFormat).
pub type VkhipImageFormat = u32;
/// VK_FORMAT_R32_SFLOAT; a CUDA kernel writes `float`.
pub const VKHIP_IMAGE_FORMAT_R32_SFLOAT: VkhipImageFormat = 0;
/// VK_FORMAT_R8G8B8A8_UNORM; a CUDA kernel writes `uchar4`.
pub const VKHIP_IMAGE_FORMAT_R8G8B8A8_UNORM: VkhipImageFormat = 1;
/// VK_FORMAT_R16G16B16A16_SFLOAT; a CUDA kernel writes `ushort4` holding halves.
pub const VKHIP_IMAGE_FORMAT_R16G16B16A16_SFLOAT: VkhipImageFormat = 2;
/// VK_FORMAT_R32G32B32A32_SFLOAT; a CUDA kernel writes `float4`.
pub const VKHIP_IMAGE_FORMAT_R32G32B32A32_SFLOAT: VkhipImageFormat = 3;

/// How Vulkan uses a shared image while it owns it (VkhipImageAccess::kind).
pub type VkhipImageUse = u32;
/// Rendered into (COLOR_ATTACHMENT_OPTIMAL); `stages` and `access` are ignored.
pub const VKHIP_IMAGE_USE_COLOR_ATTACHMENT_WRITE: VkhipImageUse = 0;
/// Written by a copy, blit or clear (TRANSFER_DST_OPTIMAL); `stages`, `access` ignored.
pub const VKHIP_IMAGE_USE_TRANSFER_WRITE: VkhipImageUse = 1;
/// Read by a copy or blit (TRANSFER_SRC_OPTIMAL); `stages`, `access` ignored.
pub const VKHIP_IMAGE_USE_TRANSFER_READ: VkhipImageUse = 2;
/// Sampled by shaders of `stages` (SHADER_READ_ONLY_OPTIMAL); `access` ignored.
pub const VKHIP_IMAGE_USE_SAMPLED: VkhipImageUse = 3;
/// Any access `access` by `stages` in layout GENERAL (a storage image, or a copy in GENERAL).
pub const VKHIP_IMAGE_USE_GENERAL: VkhipImageUse = 4;

/// One way Vulkan uses a shared image: the layout follows from `kind`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VkhipImageAccess {
    /// A `VKHIP_IMAGE_USE_*`.
    pub kind: VkhipImageUse,
    pub stages: VkPipelineStageFlags,
    pub access: VkAccessFlags,
}

impl VkhipImageAccess {
    fn to_rust(self, function: &str) -> Result<ImageAccess> {
        let stages = vk::PipelineStageFlags::from_raw(self.stages);
        Ok(match self.kind {
            VKHIP_IMAGE_USE_COLOR_ATTACHMENT_WRITE => ImageAccess::COLOR_ATTACHMENT_WRITE,
            VKHIP_IMAGE_USE_TRANSFER_WRITE => ImageAccess::TRANSFER_WRITE,
            VKHIP_IMAGE_USE_TRANSFER_READ => ImageAccess::TRANSFER_READ,
            VKHIP_IMAGE_USE_SAMPLED => ImageAccess::sampled(stages),
            VKHIP_IMAGE_USE_GENERAL => ImageAccess::general(stages, vk::AccessFlags::from_raw(self.access)),
            other => return Err(Fail::invalid(format!("{function}: {other} is no VKHIP_IMAGE_USE_*"))),
        })
    }
}

pub(crate) fn importer(value: VkhipImporter, function: &str) -> Result<Importer> {
    match value {
        VKHIP_IMPORTER_CUDA => Ok(Importer::Cuda),
        VKHIP_IMPORTER_HIP => Ok(Importer::Hip),
        other => Err(Fail::invalid(format!("{function}: {other} is no VKHIP_IMPORTER_*"))),
    }
}

fn image_format(value: VkhipImageFormat, function: &str) -> Result<ImageFormat> {
    match value {
        VKHIP_IMAGE_FORMAT_R32_SFLOAT => Ok(ImageFormat::R32Float),
        VKHIP_IMAGE_FORMAT_R8G8B8A8_UNORM => Ok(ImageFormat::Rgba8Unorm),
        VKHIP_IMAGE_FORMAT_R16G16B16A16_SFLOAT => Ok(ImageFormat::Rgba16Float),
        VKHIP_IMAGE_FORMAT_R32G32B32A32_SFLOAT => Ok(ImageFormat::Rgba32Float),
        other => Err(Fail::invalid(format!("{function}: {other} is no VKHIP_IMAGE_FORMAT_*"))),
    }
}

/// Room for extension names in VkhipRequirements.
pub const VKHIP_MAX_EXTENSIONS: usize = 4;

/// What an engine enables before it creates its instance and device. Every name is a static
/// string; unused array entries are NULL.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VkhipRequirements {
    /// The lowest Vulkan version of instance and device (VK_API_VERSION_1_2).
    pub api_version: u32,
    pub instance_extension_count: u32,
    pub instance_extensions: [*const c_char; VKHIP_MAX_EXTENSIONS],
    /// Device extensions to enable.
    pub device_extension_count: u32,
    pub device_extensions: [*const c_char; VKHIP_MAX_EXTENSIONS],
    /// Device extensions to enable where the device has them (semaphore export for HIP).
    pub optional_device_extension_count: u32,
    pub optional_device_extensions: [*const c_char; VKHIP_MAX_EXTENSIONS],
    /// VkPhysicalDeviceVulkan12Features::timelineSemaphore must be enabled.
    pub timeline_semaphore: bool,
    /// For the profiler (optional): enable the first of these two the device offers (the
    /// calibrated timestamps extension, EXT then KHR) ...
    pub calibrated_timestamps: [*const c_char; 2],
    /// ... and VkPhysicalDeviceVulkan12Features::hostQueryReset where supported (then say so
    /// in VkhipProfilerOptions::host_query_reset).
    pub host_query_reset: bool,
}

fn names(
    list: &[&'static std::ffi::CStr],
    function: &str,
) -> Result<(u32, [*const c_char; VKHIP_MAX_EXTENSIONS])> {
    let mut out = [std::ptr::null(); VKHIP_MAX_EXTENSIONS];
    if list.len() > VKHIP_MAX_EXTENSIONS {
        return Err(Fail::new(
            VkhipStatus::Panic,
            format!("{function}: more extensions than VKHIP_MAX_EXTENSIONS"),
        ));
    }
    for (slot, name) in out.iter_mut().zip(list) {
        *slot = name.as_ptr();
    }
    Ok((list.len() as u32, out))
}

/// Fill `*out` with what to enable for `importer` (VKHIP_IMPORTER_*).
///
/// # Safety
/// `out` is NULL or points at writable storage for a VkhipRequirements.
#[no_mangle]
pub unsafe extern "C" fn vkhip_vulkan_requirements(
    importer: VkhipImporter,
    out: *mut VkhipRequirements,
) -> VkhipStatus {
    const F: &str = "vkhip_vulkan_requirements";
    entry(F, || {
        let out = handle::out(out, F, "out")?;
        let need = vulkan::requirements(self::importer(importer, F)?);
        let profiler = vkhip_profile::requirements();
        let (instance_extension_count, instance_extensions) = names(&need.instance_extensions, F)?;
        let (device_extension_count, device_extensions) = names(&need.device_extensions, F)?;
        let (optional_device_extension_count, optional_device_extensions) =
            names(&need.optional_device_extensions, F)?;
        let [ext, khr] = profiler.calibrated_timestamps;
        let value = VkhipRequirements {
            api_version: need.api_version,
            instance_extension_count,
            instance_extensions,
            device_extension_count,
            device_extensions,
            optional_device_extension_count,
            optional_device_extensions,
            timeline_semaphore: need.timeline_semaphore,
            calibrated_timestamps: [ext.as_ptr(), khr.as_ptr()],
            host_query_reset: profiler.host_query_reset,
        };
        // SAFETY: checked non-NULL; writable per this function's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// A Vulkan device the crate exports from: the engine's (borrowed) or one of its own.
pub struct VkhipDevice {
    pub(crate) device: vulkan::Device,
    describe: CString,
}
handle!(VkhipDevice, Device);

impl VkhipDevice {
    fn new(device: vulkan::Device) -> VkhipDevice {
        let describe = CString::new(device.describe().replace('\0', " ")).unwrap_or_default();
        VkhipDevice { device, describe }
    }
}

/// Borrow the engine's device: its instance (made through `get_instance_proc_addr`, the
/// loader's vkGetInstanceProcAddr), physical device, device (created with what
/// vkhip_vulkan_requirements lists for `importer`) and the queue family whose queue 0 the
/// crate's own one-shot submissions (vkhip_device_read_buffer, vkhip_device_read_image) use.
/// vkhip never destroys any of them; they must outlive every vkhip object made from the device.
///
/// Checks what it can: that the physical device can export the memory and semaphore types,
/// and that the device's export entry points resolve (they only do when the extensions were
/// enabled); VKHIP_STATUS_UNSUPPORTED naming what is missing otherwise.
///
/// # Safety
/// The handles are valid, `device` was made from `physical`, which belongs to `instance`, and
/// `get_instance_proc_addr` is the loader's entry point that made `instance`.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_from_raw(
    get_instance_proc_addr: PFN_vkGetInstanceProcAddr,
    instance: VkInstance,
    physical_device: VkPhysicalDevice,
    device: VkDevice,
    queue_family: u32,
    importer: VkhipImporter,
    out: *mut *mut VkhipDevice,
) -> VkhipStatus {
    const F: &str = "vkhip_device_from_raw";
    entry(F, || {
        let make = || {
            let null = |what: &str| Fail::new(VkhipStatus::NullArgument, format!("{F}: {what} is NULL"));
            let gipa = get_instance_proc_addr.ok_or_else(|| null("get_instance_proc_addr"))?;
            if instance == vk::Instance::null() {
                return Err(null("instance"));
            }
            if physical_device == vk::PhysicalDevice::null() {
                return Err(null("physical_device"));
            }
            if device == vk::Device::null() {
                return Err(null("device"));
            }
            let importer = self::importer(importer, F)?;
            // SAFETY: the caller's handles and loader (this function's contract); the entry, instance
            // and device tables are copies of function pointers that stay valid while the handles
            // live, which the caller promises for every object made from the returned device.
            let made = unsafe {
                let entry = ash::Entry::from_static_fn(ash::StaticFn { get_instance_proc_addr: gipa });
                let instance = ash::Instance::load(entry.static_fn(), instance);
                let device = ash::Device::load(instance.fp_v1_0(), device);
                vulkan::Device::from_raw(&entry, &instance, physical_device, &device, queue_family, importer)
            }?;
            Ok(VkhipDevice::new(made))
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Open a device of the crate's own, for samples and tools without an engine: the device whose
/// deviceUUID is the 16 bytes at `prefer_uuid` (NULL: no preference), else the first that can
/// export what `importer` imports, discrete GPUs first; Vulkan 1.3 with synchronization2 where
/// the device has them. vkhip_device_handles gives its handles, for recording commands.
///
/// # Safety
/// `prefer_uuid` is NULL or points at 16 readable bytes; `out` as everywhere.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_open(
    importer: VkhipImporter,
    prefer_uuid: *const u8,
    out: *mut *mut VkhipDevice,
) -> VkhipStatus {
    const F: &str = "vkhip_device_open";
    entry(F, || {
        let make = || {
            let importer = self::importer(importer, F)?;
            let prefer: Vec<[u8; 16]> = if prefer_uuid.is_null() {
                Vec::new()
            } else {
                // SAFETY: 16 readable bytes (this function's contract).
                vec![unsafe { prefer_uuid.cast::<[u8; 16]>().read_unaligned() }]
            };
            let made = vulkan::Device::open(&prefer, importer)?;
            Ok(VkhipDevice::new(made))
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// `vkhip_device_open_cuda`'s ordinal for the device of the CUDA context current on the calling
/// thread (what `cudaSetDevice` made current), else CUDA device 0.
pub const VKHIP_CUDA_DEVICE_CURRENT: i32 = -1;

/// Open the Vulkan device of CUDA device `ordinal` (as this process numbers them, after
/// `CUDA_VISIBLE_DEVICES`; VKHIP_CUDA_DEVICE_CURRENT: the current context's device, else 0): the
/// one with its UUID, whatever order Vulkan lists the GPUs in; vkhip_cuda_open on it then opens
/// that CUDA device. A GPU this process does not see (or no CUDA at all) is
/// VKHIP_STATUS_UNAVAILABLE, naming what was asked and what exists; another negative ordinal is
/// VKHIP_STATUS_INVALID.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_open_cuda(ordinal: i32, out: *mut *mut VkhipDevice) -> VkhipStatus {
    const F: &str = "vkhip_device_open_cuda";
    entry(F, || {
        let make = || {
            let want = (ordinal != VKHIP_CUDA_DEVICE_CURRENT).then_some(DeviceRequest::Ordinal(ordinal));
            let made = vkhip_interop::cuda::open_vulkan(want)?;
            Ok(VkhipDevice::new(made))
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy the handle (NULL: nothing happens). A borrowed device's Vulkan objects stay the
/// engine's; a device of the crate's own is destroyed with the last object made from it.
///
/// # Safety
/// No other call on `device` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_destroy(device: *mut VkhipDevice) -> VkhipStatus {
    const F: &str = "vkhip_device_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(device, F) })
}

/// One line naming the device: "NVIDIA H100 80GB HBM3 (Vulkan 1.4.312, deviceUUID …)", valid
/// while the handle lives.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_describe(
    device: *const VkhipDevice,
    out: *mut *const c_char,
) -> VkhipStatus {
    const F: &str = "vkhip_device_describe";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(device, F, "device")?.describe.as_ptr())) })
}

/// The device's deviceUUID: 16 bytes written to `out`.
///
/// # Safety
/// `out` is NULL or points at 16 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_uuid(device: *const VkhipDevice, out: *mut u8) -> VkhipStatus {
    const F: &str = "vkhip_device_uuid";
    entry(F, || {
        let out = handle::out(out, F, "out")?;
        // SAFETY: a checked handle; 16 writable bytes at `out`.
        unsafe { out.cast::<[u8; 16]>().write_unaligned(handle::get(device, F, "device")?.device.uuid()) };
        Ok(())
    })
}

/// The Vulkan handles of a device (for one of the crate's own: to record and submit commands).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VkhipVulkanHandles {
    pub instance: VkInstance,
    pub physical_device: VkPhysicalDevice,
    pub device: VkDevice,
    /// The queue family of the crate's barriers and one-shot submissions.
    pub queue_family: u32,
}

/// The device's Vulkan handles, valid while the handle (or any object made from it) lives.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_handles(
    device: *const VkhipDevice,
    out: *mut VkhipVulkanHandles,
) -> VkhipStatus {
    const F: &str = "vkhip_device_handles";
    entry(F, || {
        let out = handle::out(out, F, "out")?;
        // SAFETY: a checked handle.
        let d = &unsafe { handle::get(device, F, "device") }?.device;
        let value = VkhipVulkanHandles {
            instance: d.instance().handle(),
            physical_device: d.physical(),
            device: d.ash().handle(),
            queue_family: d.queue_family(),
        };
        // SAFETY: `out` checked above.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// A device-local buffer in its own exportable allocation (storage, transfer source and
/// destination).
pub struct VkhipBuffer {
    pub(crate) buffer: vulkan::SharedBuffer,
}
handle!(VkhipBuffer, Buffer);

/// A shared buffer of `bytes` bytes. Refused before any Vulkan call when the device cannot
/// hold it (VKHIP_STATUS_EXCEEDS_LIMIT, naming maxBufferSize, the heap, ...) or `bytes` is 0.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_buffer_create(
    device: *const VkhipDevice,
    bytes: u64,
    out: *mut *mut VkhipBuffer,
) -> VkhipStatus {
    const F: &str = "vkhip_buffer_create";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle.
            let buffer = unsafe { handle::get(device, F, "device") }?.device.shared_buffer(bytes)?;
            Ok(VkhipBuffer { buffer })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy a shared buffer (NULL: nothing happens) once no GPU work uses it.
///
/// # Safety
/// No other call on `buffer` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_buffer_destroy(buffer: *mut VkhipBuffer) -> VkhipStatus {
    const F: &str = "vkhip_buffer_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(buffer, F) })
}

/// The VkBuffer, for the engine's own commands, and its size in bytes (either out may be NULL).
///
/// # Safety
/// `vk_buffer` and `bytes` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_buffer_info(
    buffer: *const VkhipBuffer,
    vk_buffer: *mut VkBuffer,
    bytes: *mut u64,
) -> VkhipStatus {
    const F: &str = "vkhip_buffer_info";
    entry(F, || {
        // SAFETY: a checked handle; each out is NULL (skipped) or writable.
        unsafe {
            let b = &handle::get(buffer, F, "buffer")?.buffer;
            if !vk_buffer.is_null() {
                vk_buffer.write(b.buffer());
            }
            if !bytes.is_null() {
                bytes.write(b.size());
            }
        }
        Ok(())
    })
}

/// Record, into the engine's `cmd`, the acquire of `buffer` from the compute API before
/// Vulkan's access (`dst_stages`, `dst_access`) after the compute API's writes.
///
/// # Safety
/// `cmd` is recording, on the device's queue family (VkhipVulkanHandles::queue_family); only
/// the thread recording `cmd` calls this (Vulkan's rule for command buffers).
#[no_mangle]
pub unsafe extern "C" fn vkhip_buffer_cmd_acquire(
    buffer: *const VkhipBuffer,
    cmd: VkCommandBuffer,
    dst_stages: VkPipelineStageFlags,
    dst_access: VkAccessFlags,
) -> VkhipStatus {
    const F: &str = "vkhip_buffer_cmd_acquire";
    entry(F, || {
        let cmd = command_buffer(cmd, F)?;
        let dst = (vk::PipelineStageFlags::from_raw(dst_stages), vk::AccessFlags::from_raw(dst_access));
        // SAFETY: a checked handle; `cmd` per this function's contract.
        unsafe { handle::get(buffer, F, "buffer")?.buffer.cmd_acquire(cmd, dst) };
        Ok(())
    })
}

/// Record the release of `buffer` to the compute API after Vulkan's last access
/// (`src_stages`, `src_access`).
///
/// # Safety
/// As vkhip_buffer_cmd_acquire.
#[no_mangle]
pub unsafe extern "C" fn vkhip_buffer_cmd_release(
    buffer: *const VkhipBuffer,
    cmd: VkCommandBuffer,
    src_stages: VkPipelineStageFlags,
    src_access: VkAccessFlags,
) -> VkhipStatus {
    const F: &str = "vkhip_buffer_cmd_release";
    entry(F, || {
        let cmd = command_buffer(cmd, F)?;
        let src = (vk::PipelineStageFlags::from_raw(src_stages), vk::AccessFlags::from_raw(src_access));
        // SAFETY: a checked handle; `cmd` per this function's contract.
        unsafe { handle::get(buffer, F, "buffer")?.buffer.cmd_release(cmd, src) };
        Ok(())
    })
}

fn command_buffer(cmd: VkCommandBuffer, function: &str) -> Result<vk::CommandBuffer> {
    if cmd == vk::CommandBuffer::null() {
        return Err(Fail::new(VkhipStatus::NullArgument, format!("{function}: cmd is NULL")));
    }
    Ok(cmd)
}

/// A wait for `semaphore` (NULL: none) to reach `value`.
///
/// # Safety
/// `semaphore` is NULL or a pointer `handle::get` may check.
unsafe fn optional_wait<'a>(
    semaphore: *const VkhipSemaphore,
    value: u64,
    function: &str,
) -> Result<Option<(&'a vulkan::SharedSemaphore, u64)>> {
    if semaphore.is_null() {
        return Ok(None);
    }
    // SAFETY: a pointer to check (this function's contract).
    Ok(Some((&unsafe { handle::get(semaphore, function, "wait")? }.semaphore, value)))
}

/// Copy `bytes` into `dst` (at most the object's size), out of what read returned.
///
/// # Safety
/// `dst` points at `bytes` writable bytes (checked non-NULL here).
unsafe fn copy_out(data: &[u8], dst: *mut u8, bytes: u64, function: &str) -> Result<()> {
    if bytes > data.len() as u64 {
        return Err(Fail::invalid(format!(
            "{function}: {bytes} bytes asked, the object holds {}",
            data.len()
        )));
    }
    // SAFETY: `bytes` ≤ data.len(), and `dst` holds `bytes` (this function's contract).
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, bytes as usize) };
    Ok(())
}

/// Copy the first `bytes` of `buffer` to `dst` on the host, once `wait` (NULL: none) reaches
/// `wait_value`, as a reader on the GPU would (acquire from the compute API, copy, release):
/// a one-shot submission to queue 0 of the device's queue family, waited for on a fence.
///
/// # Safety
/// `dst` is NULL or points at `bytes` writable bytes; no other thread submits to that queue
/// during the call.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_read_buffer(
    device: *const VkhipDevice,
    buffer: *const VkhipBuffer,
    wait: *const VkhipSemaphore,
    wait_value: u64,
    dst: *mut u8,
    bytes: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_device_read_buffer";
    entry(F, || {
        let dst = handle::out(dst, F, "dst")?;
        // SAFETY: checked handles; `dst` per this function's contract.
        unsafe {
            let d = &handle::get(device, F, "device")?.device;
            let b = &handle::get(buffer, F, "buffer")?.buffer;
            let data = d.read_buffer(b, optional_wait(wait, wait_value, F)?, None)?;
            copy_out(&data, dst, bytes, F)
        }
    })
}

/// A 2D shared image (one level, one layer, optimal tiling) in its own exportable allocation.
pub struct VkhipImage {
    pub(crate) image: vulkan::SharedImage,
}
handle!(VkhipImage, Image);

/// A shared image of `width` × `height` texels of `format` (VKHIP_IMAGE_FORMAT_*): usage sampled,
/// storage, transfer source and destination, and colour attachment where the format allows
/// (vkhip_image_info). In layout UNDEFINED, owned by nobody until vkhip_image_cmd_prepare (the
/// compute API writes first) or vkhip_image_cmd_prepare_for_vulkan runs. Refused before any
/// Vulkan call when the device cannot make, export or hold it (EXCEEDS_LIMIT names the limit).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_create(
    device: *const VkhipDevice,
    format: VkhipImageFormat,
    width: u32,
    height: u32,
    out: *mut *mut VkhipImage,
) -> VkhipStatus {
    const F: &str = "vkhip_image_create";
    entry(F, || {
        let make = || {
            let format = image_format(format, F)?;
            // SAFETY: a checked handle.
            let image =
                unsafe { handle::get(device, F, "device") }?.device.shared_image(format, width, height)?;
            Ok(VkhipImage { image })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy a shared image (NULL: nothing happens) once no GPU work uses it.
///
/// # Safety
/// No other call on `image` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_destroy(image: *mut VkhipImage) -> VkhipStatus {
    const F: &str = "vkhip_image_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(image, F) })
}

/// The VkImage and its usage flags (either out may be NULL).
///
/// # Safety
/// `vk_image` and `usage` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_info(
    image: *const VkhipImage,
    vk_image: *mut VkImage,
    usage: *mut VkImageUsageFlags,
) -> VkhipStatus {
    const F: &str = "vkhip_image_info";
    entry(F, || {
        // SAFETY: a checked handle; each out is NULL (skipped) or writable.
        unsafe {
            let i = &handle::get(image, F, "image")?.image;
            if !vk_image.is_null() {
                vk_image.write(i.image());
            }
            if !usage.is_null() {
                usage.write(i.usage().as_raw());
            }
        }
        Ok(())
    })
}

/// Record, once, for a new image the compute API writes first: UNDEFINED → GENERAL on Vulkan's
/// queue family, then the release to the compute API.
///
/// # Safety
/// As vkhip_buffer_cmd_acquire; the image is new.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_cmd_prepare(
    image: *const VkhipImage,
    cmd: VkCommandBuffer,
) -> VkhipStatus {
    const F: &str = "vkhip_image_cmd_prepare";
    entry(F, || {
        let cmd = command_buffer(cmd, F)?;
        // SAFETY: a checked handle; `cmd` per this function's contract.
        unsafe { handle::get(image, F, "image")?.image.cmd_prepare(cmd) };
        Ok(())
    })
}

/// Record, once, for a new image Vulkan uses first (a render target): UNDEFINED → `first`'s
/// layout. Vulkan owns the image afterwards.
///
/// # Safety
/// As vkhip_image_cmd_prepare.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_cmd_prepare_for_vulkan(
    image: *const VkhipImage,
    cmd: VkCommandBuffer,
    first: VkhipImageAccess,
) -> VkhipStatus {
    const F: &str = "vkhip_image_cmd_prepare_for_vulkan";
    entry(F, || {
        let (cmd, first) = (command_buffer(cmd, F)?, first.to_rust(F)?);
        // SAFETY: a checked handle; `cmd` per this function's contract.
        unsafe { handle::get(image, F, "image")?.image.cmd_prepare_for_vulkan(cmd, first) };
        Ok(())
    })
}

/// Record the acquire from the compute API before Vulkan's access `before`: the ownership
/// transfer (GENERAL kept), then GENERAL → `before`'s layout on Vulkan's queue family.
///
/// # Safety
/// As vkhip_buffer_cmd_acquire; the compute API owns the image.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_cmd_acquire(
    image: *const VkhipImage,
    cmd: VkCommandBuffer,
    before: VkhipImageAccess,
) -> VkhipStatus {
    const F: &str = "vkhip_image_cmd_acquire";
    entry(F, || {
        let (cmd, before) = (command_buffer(cmd, F)?, before.to_rust(F)?);
        // SAFETY: a checked handle; `cmd` per this function's contract.
        unsafe { handle::get(image, F, "image")?.image.cmd_acquire(cmd, before) };
        Ok(())
    })
}

/// Record the release to the compute API after Vulkan's last access `after`: `after`'s layout
/// → GENERAL on Vulkan's queue family, then the ownership transfer.
///
/// # Safety
/// As vkhip_buffer_cmd_acquire; Vulkan owns the image and its last access was `after`.
#[no_mangle]
pub unsafe extern "C" fn vkhip_image_cmd_release(
    image: *const VkhipImage,
    cmd: VkCommandBuffer,
    after: VkhipImageAccess,
) -> VkhipStatus {
    const F: &str = "vkhip_image_cmd_release";
    entry(F, || {
        let (cmd, after) = (command_buffer(cmd, F)?, after.to_rust(F)?);
        // SAFETY: a checked handle; `cmd` per this function's contract.
        unsafe { handle::get(image, F, "image")?.image.cmd_release(cmd, after) };
        Ok(())
    })
}

/// Copy `image` (which the compute API owns) to `dst` on the host, row by row tightly packed,
/// once `wait` (NULL: none) reaches `wait_value`; `bytes` at most width × height × texel size.
///
/// # Safety
/// As vkhip_device_read_buffer.
#[no_mangle]
pub unsafe extern "C" fn vkhip_device_read_image(
    device: *const VkhipDevice,
    image: *const VkhipImage,
    wait: *const VkhipSemaphore,
    wait_value: u64,
    dst: *mut u8,
    bytes: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_device_read_image";
    entry(F, || {
        let dst = handle::out(dst, F, "dst")?;
        // SAFETY: checked handles; `dst` per this function's contract.
        unsafe {
            let d = &handle::get(device, F, "device")?.device;
            let i = &handle::get(image, F, "image")?.image;
            let data = d.read_image(i, optional_wait(wait, wait_value, F)?, None)?;
            copy_out(&data, dst, bytes, F)
        }
    })
}

/// A timeline semaphore both APIs wait on and signal.
pub struct VkhipSemaphore {
    pub(crate) semaphore: vulkan::SharedSemaphore,
}
handle!(VkhipSemaphore, Semaphore);

/// A shared timeline semaphore starting at `initial`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_timeline_create(
    device: *const VkhipDevice,
    initial: u64,
    out: *mut *mut VkhipSemaphore,
) -> VkhipStatus {
    const F: &str = "vkhip_timeline_create";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle.
            let semaphore = unsafe { handle::get(device, F, "device") }?.device.shared_timeline(initial)?;
            Ok(VkhipSemaphore { semaphore })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy a shared semaphore (NULL: nothing happens) once no queue or stream uses it.
///
/// # Safety
/// No other call on `semaphore` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_semaphore_destroy(semaphore: *mut VkhipSemaphore) -> VkhipStatus {
    const F: &str = "vkhip_semaphore_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(semaphore, F) })
}

/// The VkSemaphore, for the engine's submissions' waits and signals.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_semaphore_handle(
    semaphore: *const VkhipSemaphore,
    out: *mut VkSemaphore,
) -> VkhipStatus {
    const F: &str = "vkhip_semaphore_handle";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe {
        handle::put(out, F, || Ok(handle::get(semaphore, F, "semaphore")?.semaphore.handle()))
    })
}

/// The timeline's current value (never blocks).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_semaphore_value(
    semaphore: *const VkhipSemaphore,
    out: *mut u64,
) -> VkhipStatus {
    const F: &str = "vkhip_semaphore_value";
    entry(F, || {
        let out = handle::out(out, F, "out")?;
        // SAFETY: a checked handle.
        let value = unsafe { handle::get(semaphore, F, "semaphore") }?.semaphore.value()?;
        // SAFETY: `out` checked above.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Set the timeline to `value` from the host (values only grow: one not above the current value
/// is VKHIP_STATUS_INVALID).
///
/// # Safety
/// `semaphore` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_semaphore_signal(semaphore: *const VkhipSemaphore, value: u64) -> VkhipStatus {
    const F: &str = "vkhip_semaphore_signal";
    entry(F, || {
        // SAFETY: a checked handle.
        Ok(unsafe { handle::get(semaphore, F, "semaphore") }?.semaphore.signal(value)?)
    })
}

/// Host-wait until the timeline reaches `value`, for at most `timeout_ns` (VKHIP_STATUS_TIMEOUT
/// then), whoever signals it: it polls the counter (returns within ≈ 100 µs of the signal), as a
/// vkWaitSemaphores on a value CUDA signals wakes ≈ 10 ms late on NVIDIA's driver.
///
/// # Safety
/// `semaphore` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_semaphore_wait(
    semaphore: *const VkhipSemaphore,
    value: u64,
    timeout_ns: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_semaphore_wait";
    entry(F, || {
        // SAFETY: a checked handle.
        let s = unsafe { handle::get(semaphore, F, "semaphore") }?;
        Ok(s.semaphore.wait(value, Duration::from_nanos(timeout_ns))?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn the_vulkan_handles_may_be_shared_between_threads() {
        // The header says these may be used from any thread: it holds because they are Sync.
        send_sync::<VkhipDevice>();
        send_sync::<VkhipBuffer>();
        send_sync::<VkhipImage>();
        send_sync::<VkhipSemaphore>();
    }

    #[test]
    fn image_uses_become_the_crates_accesses() {
        let stages = vk::PipelineStageFlags::COMPUTE_SHADER.as_raw();
        let access = |kind| VkhipImageAccess { kind, stages, access: vk::AccessFlags::SHADER_WRITE.as_raw() };
        let layout = |kind| access(kind).to_rust("f").map(|a| a.layout());
        assert_eq!(
            layout(VKHIP_IMAGE_USE_COLOR_ATTACHMENT_WRITE).ok(),
            Some(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
        );
        assert_eq!(layout(VKHIP_IMAGE_USE_TRANSFER_READ).ok(), Some(vk::ImageLayout::TRANSFER_SRC_OPTIMAL));
        assert_eq!(layout(VKHIP_IMAGE_USE_SAMPLED).ok(), Some(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL));
        let general = access(VKHIP_IMAGE_USE_GENERAL).to_rust("f").ok();
        assert_eq!(
            general.map(|a| (a.layout(), a.access())),
            Some((vk::ImageLayout::GENERAL, vk::AccessFlags::SHADER_WRITE))
        );
        let bad = access(99).to_rust("f").err().map(|e| (e.status, e.message));
        assert_eq!(bad, Some((VkhipStatus::Invalid, "f: 99 is no VKHIP_IMAGE_USE_*".into())));
    }
}
