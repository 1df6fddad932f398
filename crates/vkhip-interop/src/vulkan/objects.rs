//! The exportable objects: buffers, 2D images, timeline and binary semaphores. One RAII type each,
//! holding the device it came from; dropped objects are destroyed at once, so drop them only when
//! no GPU work (Vulkan's or the compute API's) uses them any more.

use super::device::{Device, Inner};
use super::handoff::{self, ImageAccess};
use super::limits;
use super::memory::{self, allocate_exportable_in, Allocation, Owner, Placement};
use super::BUFFER_USAGE;
use crate::error::{Api, Error, Result};
use crate::export::{ExportedImage, ExportedMemory, ImageFormat};
use crate::fd::ImportFd;
use ash::vk;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

/// Usage every shared image has: sampled, storage (a foreign writer's surface stores are what a
/// storage image is; NVIDIA's samples set it on images CUDA writes, which keeps the layouts of
/// both APIs' views alike), transfer source and destination.
pub(crate) const IMAGE_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::SAMPLED.as_raw()
        | vk::ImageUsageFlags::STORAGE.as_raw()
        | vk::ImageUsageFlags::TRANSFER_SRC.as_raw()
        | vk::ImageUsageFlags::TRANSFER_DST.as_raw(),
);

/// The usage of a shared image of a format with `features` (optimal tiling): [`IMAGE_USAGE`],
/// plus colour attachment (a render target) where the format can be one. `Err` names the
/// required usages the format lacks. Pure; unit-tested.
pub(crate) fn image_usage(
    features: vk::FormatFeatureFlags,
) -> std::result::Result<vk::ImageUsageFlags, vk::ImageUsageFlags> {
    type F = vk::FormatFeatureFlags;
    type U = vk::ImageUsageFlags;
    let required = [
        (F::SAMPLED_IMAGE, U::SAMPLED),
        (F::STORAGE_IMAGE, U::STORAGE),
        (F::TRANSFER_SRC, U::TRANSFER_SRC),
        (F::TRANSFER_DST, U::TRANSFER_DST),
    ];
    let missing =
        required.iter().filter(|(f, _)| !features.contains(*f)).fold(U::empty(), |m, (_, u)| m | *u);
    if !missing.is_empty() {
        return Err(missing);
    }
    let attachment = if features.contains(F::COLOR_ATTACHMENT) { U::COLOR_ATTACHMENT } else { U::empty() };
    Ok(IMAGE_USAGE | attachment)
}

impl Device {
    /// A device-local buffer of `bytes` in its own exportable allocation. Refused, before any
    /// object is made, when the device cannot hold it: the error names the limit it exceeds
    /// ([`Error::limit`]: `maxBufferSize`, the memory heap, `maxMemoryAllocationSize`, …).
    pub fn shared_buffer(&self, bytes: u64) -> Result<SharedBuffer> {
        self.shared_buffer_with_usage(bytes, BUFFER_USAGE)
    }

    /// [`Self::shared_buffer`] in memory the host maps ([`SharedBuffer::host_ptr`] is `Some`):
    /// HOST_VISIBLE and HOST_COHERENT, HOST_CACHED where the device has it. For a reader on the
    /// host — a frame read back the way a program without a compute API does it — not for a
    /// kernel (a GPU reaches such memory across the bus). Refused like [`Self::shared_buffer`],
    /// and where no host-visible memory type can hold it.
    pub fn shared_buffer_for_host(&self, bytes: u64) -> Result<SharedBuffer> {
        self.shared_buffer_in(bytes, BUFFER_USAGE, Placement::Host)
    }

    /// [`Self::shared_buffer`] with `usage` instead of the crate's (vertex buffers for wgpu).
    pub(crate) fn shared_buffer_with_usage(
        &self,
        bytes: u64,
        usage: vk::BufferUsageFlags,
    ) -> Result<SharedBuffer> {
        self.shared_buffer_in(bytes, usage, Placement::Device)
    }

    fn shared_buffer_in(
        &self,
        bytes: u64,
        usage: vk::BufferUsageFlags,
        placement: Placement,
    ) -> Result<SharedBuffer> {
        if bytes == 0 {
            return Err(Error::invalid(Api::Vulkan, "a shared buffer of 0 bytes"));
        }
        let what = format!("a shared buffer of {bytes} bytes");
        self.inner.check_buffer_size(bytes, &what)?;
        let export_dedicated_only = self.check_buffer_export(usage)?;
        let d = &self.inner.device;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: valid device; `info` points at live locals.
        let buffer =
            unsafe { d.create_buffer(&info, None) }.map_err(|r| Error::vulkan("vkCreateBuffer", r))?;
        match allocate_exportable_in(
            &self.inner,
            Owner::Buffer(buffer),
            export_dedicated_only,
            &what,
            placement,
        ) {
            Ok(allocation) => {
                let mapped = std::sync::Mutex::new(None);
                Ok(SharedBuffer { buffer, size: bytes, allocation, mapped, device: self.inner.clone() })
            }
            Err(e) => {
                // SAFETY: the buffer was never bound or used.
                unsafe { d.destroy_buffer(buffer, None) };
                Err(e)
            }
        }
    }

    /// A 2D image of `width` × `height` texels of `format` (one mip level, one layer, optimal
    /// tiling; usage sampled + storage + transfer source and destination, and colour attachment
    /// where the format can be one: [`SharedImage::usage`]) in its own exportable allocation, in
    /// layout UNDEFINED and owned by nobody until [`SharedImage::cmd_prepare`] or
    /// [`SharedImage::cmd_prepare_for_vulkan`] runs. Refused, before any object is made, when
    /// the device cannot make or export such an image (the error names the format, the usage
    /// and why: a missing feature, or the limit it exceeds, [`Error::limit`]).
    pub fn shared_image(&self, format: ImageFormat, width: u32, height: u32) -> Result<SharedImage> {
        let made = self.create_image(format, width, height)?;
        let (image, usage) = (made.image, made.usage);
        match allocate_exportable_in(
            &self.inner,
            Owner::Image(image),
            made.export_dedicated_only,
            &made.what,
            Placement::Device,
        ) {
            Ok(allocation) => Ok(SharedImage {
                image,
                format,
                width,
                height,
                usage,
                allocation,
                exportable: true,
                device: self.inner.clone(),
            }),
            Err(e) => {
                // SAFETY: the image was never bound or used.
                unsafe { self.inner.device.destroy_image(image, None) };
                Err(e)
            }
        }
    }

    /// An unbound exportable image (checked first: [`Self::check_image_export`]).
    fn create_image(&self, format: ImageFormat, width: u32, height: u32) -> Result<MadeImage> {
        if width == 0 || height == 0 {
            return Err(Error::invalid(Api::Vulkan, format!("a shared image of {width}x{height} texels")));
        }
        let (usage, export_dedicated_only) = self.check_image_export(format, width, height)?;
        let mut external = vk::ExternalMemoryImageCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format.vk_format())
            .extent(vk::Extent3D { width, height, depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .push_next(&mut external);
        // SAFETY: valid device; `info` points at live locals; the format, usage and size were
        // checked.
        let image = unsafe { self.inner.device.create_image(&info, None) }
            .map_err(|r| Error::vulkan("vkCreateImage", r))?;
        let what = format!("a {format} image of {width}x{height}");
        Ok(MadeImage { image, usage, export_dedicated_only, what })
    }

    /// The usage of an exportable `format` image of `width` × `height` ([`image_usage`]) and
    /// whether its export needs a dedicated allocation, or why the device cannot make one: the
    /// format's features, export of such an image as OPAQUE_FD
    /// (`vkGetPhysicalDeviceImageFormatProperties2` with `VkPhysicalDeviceExternalImageFormatInfo`,
    /// for exactly that usage), or a limit the size exceeds ([`limits::image`]).
    fn check_image_export(
        &self,
        format: ImageFormat,
        width: u32,
        height: u32,
    ) -> Result<(vk::ImageUsageFlags, bool)> {
        let inst = &self.inner.instance;
        let refuse = |usage: vk::ImageUsageFlags, why: String| {
            Error::unsupported(
                Api::Vulkan,
                format!(
                    "{}: a {format} image of {width}x{height} with usage {usage:?}: {why}",
                    self.inner.caps.name
                ),
            )
        };
        // SAFETY: valid physical device of this instance.
        let features =
            unsafe { inst.get_physical_device_format_properties(self.inner.physical, format.vk_format()) }
                .optimal_tiling_features;
        let usage = image_usage(features).map_err(|missing| {
            refuse(IMAGE_USAGE, format!("the format does not support {missing:?} with optimal tiling"))
        })?;
        let mut external_info = vk::PhysicalDeviceExternalImageFormatInfo::default()
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::PhysicalDeviceImageFormatInfo2::default()
            .format(format.vk_format())
            .ty(vk::ImageType::TYPE_2D)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .push_next(&mut external_info);
        let mut external = vk::ExternalImageFormatProperties::default();
        let mut props = vk::ImageFormatProperties2::default().push_next(&mut external);
        // SAFETY: valid physical device of this instance; the chains point at live locals.
        let r = unsafe {
            inst.get_physical_device_image_format_properties2(self.inner.physical, &info, &mut props)
        };
        match r {
            Ok(()) => {}
            Err(vk::Result::ERROR_FORMAT_NOT_SUPPORTED) => {
                return Err(refuse(
                    usage,
                    "the device cannot make such an image exportable as OPAQUE_FD".into(),
                ))
            }
            Err(r) => return Err(Error::vulkan("vkGetPhysicalDeviceImageFormatProperties2", r)),
        }
        let p = props.image_format_properties;
        let features = external.external_memory_properties.external_memory_features;
        if !features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
            return Err(refuse(usage, "such an image cannot be exported as OPAQUE_FD".into()));
        }
        let format_limits = limits::FormatLimits {
            max_extent: (p.max_extent.width, p.max_extent.height),
            max_resource_size: p.max_resource_size,
        };
        let attachment = usage.contains(vk::ImageUsageFlags::COLOR_ATTACHMENT);
        limits::image(&self.inner.limits, &format_limits, attachment, (width, height), format.texel_bytes())
            .map_err(|over| {
                over.error(
                    &self.inner.caps.name,
                    format_args!("a {format} image of {width}x{height} with usage {usage:?}"),
                )
            })?;
        Ok((usage, features.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY)))
    }

    /// Whether a buffer of `usage` can be exported as OPAQUE_FD, and whether its export needs a
    /// dedicated allocation (`vkGetPhysicalDeviceExternalBufferProperties`).
    fn check_buffer_export(&self, usage: vk::BufferUsageFlags) -> Result<bool> {
        let info = vk::PhysicalDeviceExternalBufferInfo::default()
            .usage(usage)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut p = vk::ExternalBufferProperties::default();
        // SAFETY: valid physical device of this instance; live locals.
        unsafe {
            self.inner.instance.get_physical_device_external_buffer_properties(
                self.inner.physical,
                &info,
                &mut p,
            )
        };
        let features = p.external_memory_properties.external_memory_features;
        if !features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
            return Err(Error::unsupported(
                Api::Vulkan,
                format!(
                    "{}: a buffer with usage {usage:?} cannot be exported as OPAQUE_FD",
                    self.inner.caps.name
                ),
            ));
        }
        Ok(features.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY))
    }

    /// An exportable timeline semaphore starting at `initial`.
    pub fn shared_timeline(&self, initial: u64) -> Result<SharedSemaphore> {
        SharedSemaphore::create(&self.inner, Some(initial))
    }

    /// An exportable binary semaphore (the reference samples' scheme: every signal is matched by
    /// exactly one wait).
    pub fn shared_binary(&self) -> Result<SharedSemaphore> {
        SharedSemaphore::create(&self.inner, None)
    }
}

/// An unbound image [`Device::create_image`] made, with what its allocation needs.
struct MadeImage {
    image: vk::Image,
    usage: vk::ImageUsageFlags,
    /// OPAQUE_FD export of such an image needs a dedicated allocation.
    export_dedicated_only: bool,
    /// "a R32_SFLOAT image of 16x16", for errors.
    what: String,
}

/// A new OPAQUE_FD for `memory`; the caller owns it until an import consumes it.
fn export_memory(device: &Inner, memory: vk::DeviceMemory) -> Result<ImportFd> {
    let info = vk::MemoryGetFdInfoKHR::default()
        .memory(memory)
        .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    // SAFETY: memory allocated with OPAQUE_FD export on this device.
    let fd = unsafe { device.external_memory_fd.get_memory_fd(&info) }
        .map_err(|r| Error::vulkan("vkGetMemoryFdKHR", r))?;
    // SAFETY: vkGetMemoryFdKHR returns a new descriptor owned by the caller.
    Ok(ImportFd::new(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The queue-family ownership transfers to and from `VK_QUEUE_FAMILY_EXTERNAL` (the compute
/// API) for one buffer (images: [`super::handoff`]).
fn ownership_barrier(
    device: &Inner,
    cmd: vk::CommandBuffer,
    acquire: bool,
    stages: (vk::PipelineStageFlags, vk::PipelineStageFlags),
    access: (vk::AccessFlags, vk::AccessFlags),
    buffer: vk::Buffer,
) {
    let (src_family, dst_family) = if acquire {
        (vk::QUEUE_FAMILY_EXTERNAL, device.queue_family)
    } else {
        (device.queue_family, vk::QUEUE_FAMILY_EXTERNAL)
    };
    let d = &device.device;
    let b = vk::BufferMemoryBarrier::default()
        .src_access_mask(access.0)
        .dst_access_mask(access.1)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .buffer(buffer)
        .offset(0)
        .size(vk::WHOLE_SIZE);
    // SAFETY: `cmd` is recording (the caller's contract); the buffer is live.
    unsafe { d.cmd_pipeline_barrier(cmd, stages.0, stages.1, vk::DependencyFlags::empty(), &[], &[b], &[]) };
}

/// A buffer the compute API writes and Vulkan reads (or the reverse), without a copy.
pub struct SharedBuffer {
    buffer: vk::Buffer,
    size: u64,
    allocation: Allocation,
    /// The host mapping ([`SharedBuffer::host_ptr`]), made on first use; freeing the memory
    /// unmaps it.
    mapped: std::sync::Mutex<Option<usize>>,
    device: Arc<Inner>,
}

impl SharedBuffer {
    /// Export the memory: a new fd each call, with the sizes an importer needs.
    pub fn export(&self) -> Result<ExportedMemory> {
        Ok(ExportedMemory {
            fd: export_memory(&self.device, self.allocation.memory)?,
            allocation_size: self.allocation.size,
            size: self.size,
            dedicated: self.allocation.dedicated,
        })
    }

    /// The Vulkan buffer, for your descriptors and commands.
    pub fn buffer(&self) -> vk::Buffer {
        self.buffer
    }

    /// The `VkDevice` it was made on (a [`Device`] made elsewhere must not use it).
    pub(crate) fn device_handle(&self) -> vk::Device {
        self.device.device.handle()
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The allocation's size (≥ [`Self::size`]): what an importer imports.
    pub fn allocation_size(&self) -> u64 {
        self.allocation.size
    }

    /// The buffer's bytes as the host sees them, where its memory is host-visible and coherent
    /// (CPU implementations such as lavapipe; rarely a discrete GPU's device-local memory):
    /// `None` otherwise. Mapped once, on the first call, for the buffer's lifetime. Reading or
    /// writing through it is ordered with the GPU only by the caller's waits (a fence, a
    /// semaphore value Vulkan signals).
    pub fn host_ptr(&self) -> Result<Option<std::ptr::NonNull<u8>>> {
        if !self.allocation.host_coherent {
            return Ok(None);
        }
        let mut mapped = self.mapped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = *mapped {
            return Ok(std::ptr::NonNull::new(p as *mut u8));
        }
        let d = &self.device.device;
        // SAFETY: host-visible memory of this device, mapped nowhere else (only here, under the
        // lock, once); the whole allocation.
        let p =
            unsafe { d.map_memory(self.allocation.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .map_err(|r| Error::vulkan("vkMapMemory", r))?;
        *mapped = Some(p as usize);
        Ok(std::ptr::NonNull::new(p.cast::<u8>()))
    }

    /// Record the acquire from the compute API, before Vulkan's first access after the compute
    /// API wrote: `dst` is that access (stage, access mask), e.g. (VERTEX_SHADER, SHADER_READ).
    ///
    /// # Safety
    /// `cmd` is a command buffer of this device in the recording state, for a queue of
    /// [`Device::queue_family`].
    pub unsafe fn cmd_acquire(&self, cmd: vk::CommandBuffer, dst: (vk::PipelineStageFlags, vk::AccessFlags)) {
        let stages = (vk::PipelineStageFlags::TOP_OF_PIPE, dst.0);
        let access = (vk::AccessFlags::empty(), dst.1);
        ownership_barrier(&self.device, cmd, true, stages, access, self.buffer);
    }

    /// Record the release to the compute API, after Vulkan's last access before the compute API
    /// writes again: `src` is that access, e.g. (VERTEX_SHADER, empty) for a read.
    ///
    /// # Safety
    /// As [`Self::cmd_acquire`].
    pub unsafe fn cmd_release(&self, cmd: vk::CommandBuffer, src: (vk::PipelineStageFlags, vk::AccessFlags)) {
        let stages = (src.0, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
        let access = (src.1, vk::AccessFlags::empty());
        ownership_barrier(&self.device, cmd, false, stages, access, self.buffer);
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner drops the buffer only when no GPU work uses it (module note); the
        // device outlives it (`Arc<Inner>`).
        unsafe {
            self.device.device.destroy_buffer(self.buffer, None);
            memory::free(&self.device, self.allocation.memory);
        }
    }
}

/// A 2D image the compute API writes through a surface object and Vulkan reads (or the reverse).
pub struct SharedImage {
    image: vk::Image,
    format: ImageFormat,
    width: u32,
    height: u32,
    usage: vk::ImageUsageFlags,
    allocation: Allocation,
    /// Made here in exportable memory (not imported: [`Device::import_image`]).
    exportable: bool,
    device: Arc<Inner>,
}

impl SharedImage {
    /// Export the memory: a new fd each call, with the format and extent an importer needs to
    /// view it as an array.
    pub fn export(&self) -> Result<ExportedImage> {
        if !self.exportable {
            return Err(Error::invalid(Api::Vulkan, "an imported image cannot be exported again"));
        }
        Ok(ExportedImage {
            memory: ExportedMemory {
                fd: export_memory(&self.device, self.allocation.memory)?,
                allocation_size: self.allocation.size,
                size: self.allocation.size,
                dedicated: self.allocation.dedicated,
            },
            format: self.format,
            width: self.width,
            height: self.height,
            color_attachment: self.usage.contains(vk::ImageUsageFlags::COLOR_ATTACHMENT),
        })
    }

    pub fn image(&self) -> vk::Image {
        self.image
    }

    pub fn format(&self) -> ImageFormat {
        self.format
    }

    pub fn extent(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The image's usage: sampled, storage, transfer source and destination, and
    /// `COLOR_ATTACHMENT` where the format can be a render target.
    pub fn usage(&self) -> vk::ImageUsageFlags {
        self.usage
    }

    /// Record the barriers of `barriers` on this image.
    ///
    /// # Safety
    /// As [`SharedBuffer::cmd_acquire`].
    unsafe fn record(&self, cmd: vk::CommandBuffer, barriers: &[handoff::Barrier]) {
        // SAFETY: per the caller's contract; the image is live, one level, one layer, colour.
        unsafe { handoff::record(&self.device.device, cmd, self.device.queue_family, self.image, barriers) }
    }

    /// For a new image the compute API writes first: UNDEFINED → GENERAL on Vulkan's queue family
    /// (contents discarded), then the release to the compute API. Record it once, before the
    /// compute API first touches the image (module note of [`super::handoff`]).
    ///
    /// # Safety
    /// As [`SharedBuffer::cmd_acquire`]; the image is new (never prepared).
    pub unsafe fn cmd_prepare(&self, cmd: vk::CommandBuffer) {
        let general = ImageAccess::general(vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::empty());
        let mut barriers = vec![handoff::transition(handoff::NEW, general.into())];
        barriers.extend(handoff::release(general.into()));
        // SAFETY: per this function's contract.
        unsafe { self.record(cmd, &barriers) };
    }

    /// For a new image Vulkan writes first (a render target): UNDEFINED → `first`'s layout on
    /// Vulkan's queue family (contents discarded), before Vulkan's first access `first`. Vulkan
    /// owns the image afterwards: [`Self::cmd_release`] hands it to the compute API.
    ///
    /// # Safety
    /// As [`Self::cmd_prepare`].
    pub unsafe fn cmd_prepare_for_vulkan(&self, cmd: vk::CommandBuffer, first: ImageAccess) {
        // SAFETY: per this function's contract.
        unsafe { self.record(cmd, &[handoff::transition(handoff::NEW, first.into())]) };
    }

    /// Record the acquire from the compute API before Vulkan's first access `before` after the
    /// compute API's: the ownership transfer (GENERAL kept), then GENERAL → `before`'s layout
    /// on Vulkan's own queue family. Vulkan owns the image afterwards.
    ///
    /// # Safety
    /// As [`SharedBuffer::cmd_acquire`]; the compute API owns the image ([`Self::cmd_prepare`] or
    /// [`Self::cmd_release`] executed before, and the compute API's work on it is ordered
    /// before this command buffer by a semaphore or a host wait).
    pub unsafe fn cmd_acquire(&self, cmd: vk::CommandBuffer, before: ImageAccess) {
        // SAFETY: per this function's contract.
        unsafe { self.record(cmd, &handoff::acquire(before.into())) };
    }

    /// Record the release to the compute API after Vulkan's last access `after`: `after`'s
    /// layout → GENERAL on Vulkan's own queue family, then the ownership transfer (GENERAL
    /// kept). The compute API owns the image afterwards (once a semaphore or a host wait orders
    /// its work after this command buffer).
    ///
    /// # Safety
    /// As [`SharedBuffer::cmd_acquire`]; Vulkan owns the image and its last access was `after`
    /// (in `after`'s layout).
    pub unsafe fn cmd_release(&self, cmd: vk::CommandBuffer, after: ImageAccess) {
        // SAFETY: per this function's contract.
        unsafe { self.record(cmd, &handoff::release(after.into())) };
    }

    /// Record a layout transition between two of Vulkan's own accesses, `from` and then `to`,
    /// while Vulkan owns the image (e.g. rendered, then blitted from).
    ///
    /// # Safety
    /// As [`SharedBuffer::cmd_acquire`]; Vulkan owns the image and its last access was `from`.
    pub unsafe fn cmd_transition(&self, cmd: vk::CommandBuffer, from: ImageAccess, to: ImageAccess) {
        // SAFETY: per this function's contract.
        unsafe { self.record(cmd, &[handoff::transition(from.into(), to.into())]) };
    }
}

impl Drop for SharedImage {
    fn drop(&mut self) {
        // SAFETY: as for SharedBuffer.
        unsafe {
            self.device.device.destroy_image(self.image, None);
            memory::free(&self.device, self.allocation.memory);
        }
    }
}

/// A semaphore both APIs wait on and signal: a timeline (values) or binary.
pub struct SharedSemaphore {
    handle: vk::Semaphore,
    timeline: bool,
    device: Arc<Inner>,
}

impl SharedSemaphore {
    fn create(device: &Arc<Inner>, timeline: Option<u64>) -> Result<Self> {
        let (can, kind) = match timeline {
            Some(_) => (device.caps.timeline_export, "timeline"),
            None => (device.caps.binary_export, "binary"),
        };
        if !can || device.external_semaphore_fd.is_none() {
            return Err(Error::unsupported(
                Api::Vulkan,
                format!(
                    "{} cannot export {kind} semaphores as OPAQUE_FD{}",
                    device.caps.name,
                    if can { " (VK_KHR_external_semaphore_fd is not enabled on the device)" } else { "" }
                ),
            ));
        }
        let mut type_info = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(timeline.unwrap_or(0));
        let mut export = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut export);
        if timeline.is_some() {
            info = info.push_next(&mut type_info);
        }
        // SAFETY: valid device; pNext chain of live locals.
        let handle = unsafe { device.device.create_semaphore(&info, None) }
            .map_err(|r| Error::vulkan("vkCreateSemaphore", r))?;
        Ok(SharedSemaphore { handle, timeline: timeline.is_some(), device: device.clone() })
    }

    /// Export it: a new fd each call.
    pub fn export(&self) -> Result<ImportFd> {
        let ext = self.device.external_semaphore_fd.as_ref().ok_or_else(|| {
            Error::unsupported(Api::Vulkan, "VK_KHR_external_semaphore_fd is not enabled on the device")
        })?;
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(self.handle)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: a semaphore of this device created with OPAQUE_FD export.
        let fd =
            unsafe { ext.get_semaphore_fd(&info) }.map_err(|r| Error::vulkan("vkGetSemaphoreFdKHR", r))?;
        // SAFETY: a new descriptor owned by the caller.
        Ok(ImportFd::new(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The Vulkan handle, for your submissions' waits and signals.
    pub fn handle(&self) -> vk::Semaphore {
        self.handle
    }

    /// The `VkDevice` it was made on.
    pub(crate) fn device_handle(&self) -> vk::Device {
        self.device.device.handle()
    }

    pub fn is_timeline(&self) -> bool {
        self.timeline
    }

    fn check_timeline(&self, what: &str) -> Result<()> {
        if !self.timeline {
            return Err(Error::invalid(Api::Vulkan, format!("{what} of a binary semaphore")));
        }
        Ok(())
    }

    /// The current value of a timeline (never blocks).
    pub fn value(&self) -> Result<u64> {
        self.check_timeline("the value")?;
        // SAFETY: a timeline semaphore of this device.
        unsafe { self.device.device.get_semaphore_counter_value(self.handle) }
            .map_err(|r| Error::vulkan("vkGetSemaphoreCounterValue", r))
    }

    /// Set a timeline to `value` from the host (values only grow: a value not above the current
    /// one is refused before the driver sees it, VUID-VkSemaphoreSignalInfo-value-03258).
    pub fn signal(&self, value: u64) -> Result<()> {
        self.check_timeline("a host signal")?;
        let now = self.value()?;
        if value <= now {
            return Err(Error::invalid(
                Api::Vulkan,
                format!("a host signal of {value}: the timeline is at {now} already (values only grow)"),
            ));
        }
        let info = vk::SemaphoreSignalInfo::default().semaphore(self.handle).value(value);
        // SAFETY: a timeline semaphore of this device.
        unsafe { self.device.device.signal_semaphore(&info) }
            .map_err(|r| Error::vulkan("vkSignalSemaphore", r))
    }

    /// Host-wait until a timeline reaches `value`, for at most `timeout`, whoever signals it
    /// (CUDA, HIP, Vulkan's queue or the host): it reads the counter, back to back for 50 µs,
    /// then between sleeps growing from 10 µs to 100 µs
    /// ([`wait_polling`](super::wait::wait_polling) with
    /// [`Backoff::DEFAULT`](super::wait::Backoff::DEFAULT)), so it returns within about 100 µs
    /// of the signal without burning a core on a long wait. Not `vkWaitSemaphores`: on NVIDIA's
    /// driver that wakes ≈ 8.5–10 ms after a value CUDA signalled (8,488 µs per round trip on an
    /// H200 against 9.4 µs reading the counter; [`vulkan::wait`](super::wait) has the figures).
    /// For a value only Vulkan's queue or the host signals, [`Self::wait_blocking`] uses no CPU
    /// while it waits.
    pub fn wait(&self, value: u64, timeout: Duration) -> Result<()> {
        self.check_timeline("a host wait")?;
        // SAFETY: a timeline semaphore of this device, alive for the call.
        unsafe {
            super::wait::wait_polling(
                &self.device.device,
                self.handle,
                value,
                timeout,
                &super::wait::Backoff::DEFAULT,
            )
        }
    }

    /// Host-wait until a timeline reaches `value`, for at most `timeout`, in `vkWaitSemaphores`
    /// ([`wait_blocking`](super::wait::wait_blocking)): the thread sleeps in the driver and uses
    /// no CPU. Only for values Vulkan's queue or the host signals (a draw, a copy); never for one
    /// CUDA or HIP may signal, which it sees ≈ 10 ms late on NVIDIA's driver: use [`Self::wait`]
    /// for those.
    pub fn wait_blocking(&self, value: u64, timeout: Duration) -> Result<()> {
        self.check_timeline("a host wait")?;
        // SAFETY: a timeline semaphore of this device, alive for the call.
        unsafe { super::wait::wait_blocking(&self.device.device, self.handle, value, timeout) }
    }
}

impl Drop for SharedSemaphore {
    fn drop(&mut self) {
        // SAFETY: the owner drops the semaphore after every wait and signal on it completed and
        // the compute API's import of it was destroyed (crate-level "Teardown").
        unsafe { self.device.device.destroy_semaphore(self.handle, None) };
    }
}

impl Device {
    /// Import memory another Vulkan device of the same GPU exported (or this one: another
    /// process, a second device on the same GPU) as a buffer of `memory.size` bytes. Vulkan takes
    /// the fd on success and leaves it to the caller on failure (`VkImportMemoryFdInfoKHR`),
    /// which [`ImportFd`] encodes. The memory type is chosen as the exporter chose it (device
    /// local first, among the types the buffer allows), which OPAQUE_FD requires to match.
    pub fn import_buffer(&self, memory: ExportedMemory) -> Result<ImportedBuffer> {
        memory.check_sizes(Api::Vulkan)?;
        let what = format!("an imported buffer of {} bytes", memory.size);
        self.inner.check_buffer_size(memory.size, &what)?;
        let d = &self.inner.device;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let info = vk::BufferCreateInfo::default()
            .size(memory.size)
            .usage(BUFFER_USAGE)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        let size = memory.size;
        // SAFETY: valid device; `info` points at live locals.
        let buffer =
            unsafe { d.create_buffer(&info, None) }.map_err(|r| Error::vulkan("vkCreateBuffer", r))?;
        match memory::import(&self.inner, memory, Owner::Buffer(buffer), &what) {
            Ok(allocation) => Ok(ImportedBuffer { buffer, allocation, size, device: self.inner.clone() }),
            Err(e) => {
                // SAFETY: the buffer was never bound or used.
                unsafe { d.destroy_buffer(buffer, None) };
                Err(e)
            }
        }
    }

    /// Import an image another Vulkan device of the same GPU exported (or this one, or another
    /// process) as [`Device::import_buffer`] imports a buffer: an image of the same format,
    /// extent and usage as the exporter's, bound to the imported memory. It starts owned by
    /// nobody; its steps are a shared image's ([`SharedImage::cmd_acquire`] …). It cannot be
    /// exported again.
    pub fn import_image(&self, exported: ExportedImage) -> Result<SharedImage> {
        let (memory, shape) = exported.check(Api::Vulkan)?;
        let made = self.create_image(shape.format, shape.width, shape.height)?;
        let (image, usage) = (made.image, made.usage);
        match memory::import(&self.inner, memory, Owner::Image(image), &made.what) {
            Ok(allocation) => Ok(SharedImage {
                image,
                format: shape.format,
                width: shape.width,
                height: shape.height,
                usage,
                allocation,
                exportable: false,
                device: self.inner.clone(),
            }),
            Err(e) => {
                // SAFETY: the image was never bound or used.
                unsafe { self.inner.device.destroy_image(image, None) };
                Err(e)
            }
        }
    }
}

/// A buffer bound to memory imported from an OPAQUE_FD ([`Device::import_buffer`]): the Vulkan
/// side of an importer, for sharing between two Vulkan devices or processes, and for checking an
/// export without a second API.
pub struct ImportedBuffer {
    buffer: vk::Buffer,
    allocation: Allocation,
    size: u64,
    device: Arc<Inner>,
}

impl ImportedBuffer {
    pub fn buffer(&self) -> vk::Buffer {
        self.buffer
    }

    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Drop for ImportedBuffer {
    fn drop(&mut self) {
        // SAFETY: the owner drops it when no GPU work uses it; freeing the imported memory
        // releases this device's reference to the allocation.
        unsafe {
            self.device.device.destroy_buffer(self.buffer, None);
            memory::free(&self.device, self.allocation.memory);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_usage_adds_the_render_target_where_the_format_allows_and_names_what_is_missing() {
        type F = vk::FormatFeatureFlags;
        let base = F::SAMPLED_IMAGE | F::STORAGE_IMAGE | F::TRANSFER_SRC | F::TRANSFER_DST;
        assert_eq!(image_usage(base), Ok(IMAGE_USAGE));
        assert_eq!(
            image_usage(base | F::COLOR_ATTACHMENT),
            Ok(IMAGE_USAGE | vk::ImageUsageFlags::COLOR_ATTACHMENT)
        );
        assert_eq!(image_usage(base & !F::STORAGE_IMAGE), Err(vk::ImageUsageFlags::STORAGE));
        assert_eq!(
            image_usage(F::COLOR_ATTACHMENT),
            Err(IMAGE_USAGE),
            "a format with no features is refused, whatever else it could be"
        );
    }
}
