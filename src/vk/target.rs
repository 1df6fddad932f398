//! Images, framebuffers and the offscreen colour + depth target used by headless runs.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): a render pass that only clears leaves the clear
//! colour in every pixel the target reads back.
//!
//! ```
//! use ash::vk;
//! use std::sync::Arc;
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::external::Semaphore;
//! use vkhip::vk::instance::Instance;
//! use vkhip::vk::pipeline::RenderPass;
//! use vkhip::vk::target::{OffscreenTarget, OFFSCREEN_FORMAT};
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
//! let ctx = Context::new(instance, pd, false).unwrap();
//! let pass = RenderPass::new(&ctx, OFFSCREEN_FORMAT, vk::ImageLayout::TRANSFER_SRC_OPTIMAL).unwrap();
//! let extent = vk::Extent2D { width: 40, height: 24 };
//! let target = OffscreenTarget::new(&ctx, pass.handle, extent).unwrap();
//! let clear = [
//!     vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.5, 1.0, 1.0] } },
//!     vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } },
//! ];
//! let begin = vk::RenderPassBeginInfo::default()
//!     .render_pass(pass.handle)
//!     .framebuffer(target.framebuffer.handle)
//!     .render_area(vk::Rect2D { offset: vk::Offset2D::default(), extent })
//!     .clear_values(&clear);
//! ctx.one_shot(&[], |cmd| {
//!     // SAFETY: recording into the one-shot command buffer; the pass and framebuffer are alive.
//!     unsafe {
//!         ctx.device.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
//!         ctx.device.cmd_end_render_pass(cmd);
//!     }
//! })
//! .unwrap();
//! let done = Semaphore::timeline(&ctx, 1, false).unwrap(); // already at 1: the wait is satisfied
//! let rgba = target.read_rgba(&ctx, (done.handle, 1)).unwrap();
//! assert_eq!(rgba.len(), 40 * 24 * 4);
//! let near = |a: u8, b: u8| a.abs_diff(b) <= 1;
//! assert!(rgba.chunks_exact(4).all(|p| p[0] == 0 && near(p[1], 128) && p[2] == 255 && p[3] == 255));
//! ```

use super::device::Context;
use super::memory::{find_memory_type, HostBuffer};
use super::{CallContext, VkError};
use ash::vk;
use std::sync::Arc;

/// Colour format of the offscreen target (what `--capture` writes as RGBA8 PNG).
pub const OFFSCREEN_FORMAT: vk::Format = vk::Format::R8G8B8A8_UNORM;
/// Depth format everywhere (required for depth attachments by the spec).
pub const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;

/// A device-local 2D image with one view.
pub struct Image {
    ctx: Arc<Context>,
    pub image: vk::Image,
    memory: vk::DeviceMemory,
    pub view: vk::ImageView,
}

impl Image {
    pub fn new(
        ctx: &Arc<Context>,
        extent: vk::Extent2D,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> Result<Self, VkError> {
        Self::layered(ctx, extent, 1, format, usage, aspect)
    }

    /// [`Image::new`] with `layers` array layers (a `2D_ARRAY` view over all of them when
    /// `layers` > 1: a layered render target, one layer per view).
    pub fn layered(
        ctx: &Arc<Context>,
        extent: vk::Extent2D,
        layers: u32,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width: extent.width, height: extent.height, depth: 1 })
            .mip_levels(1)
            .array_layers(layers)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: valid device and create info.
        let image = unsafe { d.create_image(&info, None) }.call("vkCreateImage")?;
        let mut me =
            Image { ctx: ctx.clone(), image, memory: vk::DeviceMemory::null(), view: vk::ImageView::null() };
        // SAFETY: valid image.
        let req = unsafe { d.get_image_memory_requirements(image) };
        let ty = find_memory_type(
            &ctx.memory_properties,
            req.memory_type_bits,
            vk::MemoryPropertyFlags::empty(),
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
        )
        .ok_or_else(|| VkError::Unsupported("no memory type for an image".into()))?;
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
        // SAFETY: valid device, type from this device.
        me.memory = crate::fault::inject(crate::fault::Fault::VkAlloc)
            // SAFETY: as above.
            .and_then(|()| unsafe { d.allocate_memory(&alloc, None) })
            .call("vkAllocateMemory (image)")?;
        // SAFETY: fresh image and memory.
        unsafe { d.bind_image_memory(image, me.memory, 0) }.call("vkBindImageMemory")?;
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(if layers > 1 { vk::ImageViewType::TYPE_2D_ARRAY } else { vk::ImageViewType::TYPE_2D })
            .format(format)
            .subresource_range(subresource_layers(aspect, layers));
        // SAFETY: bound image.
        me.view = unsafe { d.create_image_view(&view_info, None) }.call("vkCreateImageView")?;
        Ok(me)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: owners drop images after the GPU work using them finished (frame loop drained).
        unsafe {
            if self.view != vk::ImageView::null() {
                d.destroy_image_view(self.view, None);
            }
            d.destroy_image(self.image, None);
            if self.memory != vk::DeviceMemory::null() {
                d.free_memory(self.memory, None);
            }
        }
    }
}

/// The whole-image subresource range for `aspect`.
pub fn subresource(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    subresource_layers(aspect, 1)
}

/// The subresource range of `layers` layers from layer 0 for `aspect`.
pub fn subresource_layers(aspect: vk::ImageAspectFlags, layers: u32) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: layers,
    }
}

/// A framebuffer (RAII).
pub struct Framebuffer {
    ctx: Arc<Context>,
    pub handle: vk::Framebuffer,
}

impl Framebuffer {
    pub fn new(
        ctx: &Arc<Context>,
        render_pass: vk::RenderPass,
        views: &[vk::ImageView],
        extent: vk::Extent2D,
    ) -> Result<Self, VkError> {
        Self::layered(ctx, render_pass, views, extent, 1)
    }

    /// [`Framebuffer::new`] with `layers` layers (attachments of as many array layers).
    pub fn layered(
        ctx: &Arc<Context>,
        render_pass: vk::RenderPass,
        views: &[vk::ImageView],
        extent: vk::Extent2D,
        layers: u32,
    ) -> Result<Self, VkError> {
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(render_pass)
            .attachments(views)
            .width(extent.width)
            .height(extent.height)
            .layers(layers);
        // SAFETY: valid render pass and views of this device.
        let handle = unsafe { ctx.device.create_framebuffer(&info, None) }.call("vkCreateFramebuffer")?;
        Ok(Framebuffer { ctx: ctx.clone(), handle })
    }
}

impl Drop for Framebuffer {
    fn drop(&mut self) {
        // SAFETY: dropped after the frames using it finished.
        unsafe { self.ctx.device.destroy_framebuffer(self.handle, None) };
    }
}

/// Offscreen colour + depth target. The render pass leaves colour in TRANSFER_SRC_OPTIMAL.
/// With `layers` > 1 (`--views N`) both images have N array layers and the framebuffer N
/// layers: view i is drawn into layer i (docs/ARCHITECTURE.md, "Views").
pub struct OffscreenTarget {
    pub extent: vk::Extent2D,
    /// Array layers: the views (1 without `--views`).
    pub layers: u32,
    pub framebuffer: Framebuffer,
    pub color: Image,
    pub depth: Image,
}

impl OffscreenTarget {
    pub fn new(
        ctx: &Arc<Context>,
        render_pass: vk::RenderPass,
        extent: vk::Extent2D,
    ) -> Result<Self, VkError> {
        Self::layered(ctx, render_pass, extent, 1)
    }

    /// [`OffscreenTarget::new`] with `layers` layers (one per view).
    pub fn layered(
        ctx: &Arc<Context>,
        render_pass: vk::RenderPass,
        extent: vk::Extent2D,
        layers: u32,
    ) -> Result<Self, VkError> {
        let color = Image::layered(
            ctx,
            extent,
            layers,
            OFFSCREEN_FORMAT,
            // TRANSFER_DST: with `--post` the frame is copied in instead of drawn.
            vk::ImageUsageFlags::COLOR_ATTACHMENT
                | vk::ImageUsageFlags::TRANSFER_SRC
                | vk::ImageUsageFlags::TRANSFER_DST,
            vk::ImageAspectFlags::COLOR,
        )?;
        let depth = Image::layered(
            ctx,
            extent,
            layers,
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        )?;
        let framebuffer = Framebuffer::layered(ctx, render_pass, &[color.view, depth.view], extent, layers)?;
        Ok(OffscreenTarget { extent, layers, framebuffer, color, depth })
    }

    /// Bytes of one frame in a linear buffer: layers × height × width × 4.
    pub fn bytes(&self) -> u64 {
        self.layers as u64 * self.extent.width as u64 * self.extent.height as u64 * 4
    }

    /// Record the copy of the colour image (in TRANSFER_SRC_OPTIMAL, as the render pass leaves
    /// it) into `buffer` as tightly packed RGBA8 rows, after a barrier from the render pass's
    /// colour writes to the copy's reads. With layers, ONE copy of every layer: a contiguous
    /// `(layers, height, width, 4)` array (layer i at byte i × height × width × 4).
    ///
    /// # Safety
    /// `cmd` is a command buffer of `device` (this target's) in the recording state, outside a
    /// render pass; `buffer` has TRANSFER_DST usage and holds [`Self::bytes`] bytes.
    pub unsafe fn cmd_copy_to_buffer(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        buffer: vk::Buffer,
    ) {
        let (w, h) = (self.extent.width, self.extent.height);
        let barrier = vk::ImageMemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
            .old_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .new_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(self.color.image)
            .subresource_range(subresource_layers(vk::ImageAspectFlags::COLOR, self.layers));
        let region = vk::BufferImageCopy::default()
            .image_subresource(vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: self.layers,
            })
            .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
        // SAFETY: per this function's contract.
        unsafe {
            device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[barrier],
            );
            device.cmd_copy_image_to_buffer(
                cmd,
                self.color.image,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                buffer,
                &[region],
            );
        }
    }

    /// Copy the colour image to the host as tightly packed RGBA8 rows (every layer, in order),
    /// after the frame whose `rendered` value is `wait` (semaphore, value) has finished.
    pub fn read_rgba(&self, ctx: &Arc<Context>, wait: (vk::Semaphore, u64)) -> Result<Vec<u8>, VkError> {
        let buf = HostBuffer::new(ctx, self.bytes(), vk::BufferUsageFlags::TRANSFER_DST)?;
        ctx.one_shot(&[(wait.0, wait.1, vk::PipelineStageFlags::TRANSFER)], |cmd| {
            // SAFETY: recording into the one-shot command buffer; the image is in TRANSFER_SRC
            // layout after the render pass, and the buffer is large enough.
            unsafe {
                self.cmd_copy_to_buffer(&ctx.device, cmd, buf.buffer);
                super::cmd_memory_barrier(
                    &ctx.device,
                    cmd,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                );
            }
        })?;
        Ok(buf.bytes().to_vec())
    }
}
