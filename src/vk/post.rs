//! The post stage's Vulkan side (`--post`; the protocol is in [`crate::sync`], "The post
//! stage"): K pairs of RGBA8 images, *scene* (the draw renders into it) and *output* (the
//! filter writes it, a copy takes it to the swapchain image or the capture target), and for the
//! `cpu` backend a host-visible buffer beside each image. This module owns them and records the
//! commands around them; which command buffer holds which, and what it waits for, is the
//! renderer's and the protocol's.
//!
//! Layouts: every image of a pair is in `GENERAL` whenever the filter may touch it. The draw's
//! render pass starts from `UNDEFINED` (it clears) and leaves the scene in `GENERAL`; outputs stay
//! in `GENERAL` for good (copies read them there). Images shared with CUDA/HIP cross with the
//! interop crate's hand-off barriers ([`vkhip_interop::vulkan::handoff`]): acquire before
//! Vulkan's access, release after it, `GENERAL` → `GENERAL`, never a layout change in a transfer.

use super::device::Context;
use super::memory::HostBuffer;
use super::target::{subresource, Image};
use super::{cmd_memory_barrier, CallContext, VkError};
use ash::vk;
use std::sync::Arc;
use vkhip_interop::vulkan::handoff::ImageAccess;
use vkhip_interop::vulkan::SharedImage;
use vkhip_interop::ImageFormat;

/// The format of scene and output images.
pub const POST_FORMAT: vk::Format = vk::Format::R8G8B8A8_UNORM;

/// Usage of an image of a pair that stays on the render device (the usages POST.md lists).
const LOCAL_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::COLOR_ATTACHMENT.as_raw()
        | vk::ImageUsageFlags::STORAGE.as_raw()
        | vk::ImageUsageFlags::TRANSFER_SRC.as_raw()
        | vk::ImageUsageFlags::TRANSFER_DST.as_raw(),
);

/// The draw's last access to a shared scene image (in `GENERAL`, where the render pass leaves
/// it and the layout every ownership transfer keeps).
const SCENE_DRAWN: ImageAccess = ImageAccess::general(
    vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
    vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
);

/// One image of a pair.
pub enum PostImage {
    /// On the render device only (`cpu`, `vulkan`, `cuda-in-vulkan`).
    Local(Image),
    /// In exportable memory, shared with CUDA/HIP (dropped view first, then the image).
    Shared(SharedView),
}

/// A shared image and the view the framebuffer or a copy uses.
pub struct SharedView {
    ctx: Arc<Context>,
    view: vk::ImageView,
    pub image: SharedImage,
}

impl Drop for SharedView {
    fn drop(&mut self) {
        // SAFETY: dropped after the frames using the view finished (the session's teardown).
        unsafe { self.ctx.device.destroy_image_view(self.view, None) };
    }
}

impl PostImage {
    fn new(ctx: &Arc<Context>, extent: vk::Extent2D, shared: bool) -> Result<Self, VkError> {
        if !shared {
            return Ok(PostImage::Local(Image::new(
                ctx,
                extent,
                POST_FORMAT,
                LOCAL_USAGE,
                vk::ImageAspectFlags::COLOR,
            )?));
        }
        let image = ctx.interop()?.shared_image(ImageFormat::Rgba8Unorm, extent.width, extent.height)?;
        if !image.usage().contains(vk::ImageUsageFlags::COLOR_ATTACHMENT) {
            return Err(VkError::Unsupported(format!(
                "{} cannot render into a shared RGBA8 image (no colour-attachment usage for exportable images)",
                ctx.physical.name
            )));
        }
        let info = vk::ImageViewCreateInfo::default()
            .image(image.image())
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(POST_FORMAT)
            .subresource_range(subresource(vk::ImageAspectFlags::COLOR));
        // SAFETY: a bound image of this device.
        let view = unsafe { ctx.device.create_image_view(&info, None) }.call("vkCreateImageView")?;
        Ok(PostImage::Shared(SharedView { ctx: ctx.clone(), view, image }))
    }

    pub fn image(&self) -> vk::Image {
        match self {
            PostImage::Local(i) => i.image,
            PostImage::Shared(s) => s.image.image(),
        }
    }

    pub fn view(&self) -> vk::ImageView {
        match self {
            PostImage::Local(i) => i.view,
            PostImage::Shared(s) => s.view,
        }
    }

    /// The shared image, when it is one.
    pub fn shared(&self) -> Option<&SharedImage> {
        match self {
            PostImage::Local(_) => None,
            PostImage::Shared(s) => Some(&s.image),
        }
    }
}

/// Pair `i` of the post stage.
pub struct PostPairImages {
    pub scene: PostImage,
    pub output: PostImage,
    /// `cpu`: (scene, output) host-visible buffers of width × height × 4 bytes.
    pub host: Option<(HostBuffer, HostBuffer)>,
}

/// Which image of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Scene,
    Output,
}

/// Where a frame's copy goes: the swapchain image or the offscreen target's colour image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyDest {
    pub image: vk::Image,
    pub format: vk::Format,
    pub extent: vk::Extent2D,
    /// The layout the destination is left in (`PRESENT_SRC_KHR`, or `TRANSFER_SRC_OPTIMAL` for
    /// a capture's read-back).
    pub final_layout: vk::ImageLayout,
}

/// How the backend reaches the pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostAccess {
    /// The images on the render device (`vulkan`, `cuda-in-vulkan`).
    Images,
    /// Exported to CUDA/HIP.
    Exported,
    /// Host buffers (`cpu`).
    Mapped,
}

/// The K pairs of one run. Owned by the session; dropped after the backend that imports or maps
/// them, and after the queue is idle.
pub struct PostImages {
    pub extent: vk::Extent2D,
    pub access: PostAccess,
    pub pairs: Vec<PostPairImages>,
    ctx: Arc<Context>,
}

impl PostImages {
    /// K pairs of `extent`, reached as `access` says; every image is put in `GENERAL` (shared
    /// ones: prepared for, and released to, the compute API) before this returns.
    pub fn new(
        ctx: &Arc<Context>,
        extent: vk::Extent2D,
        pairs: usize,
        access: PostAccess,
    ) -> Result<Self, VkError> {
        let shared = access == PostAccess::Exported;
        let bytes = u64::from(extent.width) * u64::from(extent.height) * 4;
        let pairs = (0..pairs)
            .map(|_| {
                let host = if access == PostAccess::Mapped {
                    let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
                    Some((HostBuffer::new(ctx, bytes, usage)?, HostBuffer::new(ctx, bytes, usage)?))
                } else {
                    None
                };
                Ok(PostPairImages {
                    scene: PostImage::new(ctx, extent, shared)?,
                    output: PostImage::new(ctx, extent, shared)?,
                    host,
                })
            })
            .collect::<Result<Vec<_>, VkError>>()?;
        let me = PostImages { extent, access, pairs, ctx: ctx.clone() };
        let d = &ctx.device;
        ctx.one_shot(&[], |cmd| {
            for p in &me.pairs {
                for img in [&p.scene, &p.output] {
                    match img.shared() {
                        // SAFETY: recording into the one-shot command buffer; a new image.
                        Some(s) => unsafe { s.cmd_prepare(cmd) },
                        // SAFETY: as above.
                        None => unsafe { general_barrier(d, cmd, img.image()) },
                    }
                }
            }
        })?;
        Ok(me)
    }

    /// Read image `which` of pair `pair` back (tight RGBA8 rows) once every `waits` (timeline,
    /// value) is reached. Shared images are acquired from, and released back to, the compute API
    /// around the copy.
    pub fn read(
        &self,
        pair: usize,
        which: Which,
        waits: &[(vk::Semaphore, u64)],
    ) -> Result<Vec<u8>, VkError> {
        let ctx = &self.ctx;
        let (w, h) = (self.extent.width, self.extent.height);
        let p = &self.pairs[pair];
        let img = match which {
            Which::Scene => &p.scene,
            Which::Output => &p.output,
        };
        let buf = HostBuffer::new(ctx, u64::from(w) * u64::from(h) * 4, vk::BufferUsageFlags::TRANSFER_DST)?;
        let waits: Vec<_> = waits.iter().map(|&(s, v)| (s, v, vk::PipelineStageFlags::TRANSFER)).collect();
        let d = &ctx.device;
        ctx.one_shot(&waits, |cmd| {
            // SAFETY: recording into the one-shot command buffer; the image is in GENERAL (module
            // note), the buffer holds w × h texels.
            unsafe {
                in_layout(d, cmd, img, ImageAccess::TRANSFER_READ, || {
                    let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
                    d.cmd_copy_image_to_buffer(cmd, img.image(), src, buf.buffer, &[region(w, h)]);
                });
                cmd_memory_barrier(
                    d,
                    cmd,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                );
            }
        })?;
        Ok(buf.bytes().to_vec())
    }

    /// Test hook (`verify --corrupt-frame` with `--post`): fill output `pair` with magenta on the
    /// GPU once `waits` are reached, and wait for it.
    pub fn corrupt_output(&self, pair: usize, waits: &[(vk::Semaphore, u64)]) -> Result<(), VkError> {
        let d = &self.ctx.device;
        let img = &self.pairs[pair].output;
        let waits: Vec<_> = waits.iter().map(|&(s, v)| (s, v, vk::PipelineStageFlags::TRANSFER)).collect();
        let magenta = vk::ClearColorValue { float32: [1.0, 0.0, 1.0, 1.0] };
        self.ctx.one_shot(&waits, |cmd| {
            // SAFETY: recording into the one-shot command buffer; the output is in GENERAL and
            // has transfer-destination usage.
            unsafe {
                in_layout(d, cmd, img, ImageAccess::TRANSFER_WRITE, || {
                    let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
                    let range = [subresource(vk::ImageAspectFlags::COLOR)];
                    d.cmd_clear_color_image(cmd, img.image(), dst, &magenta, &range);
                });
                cmd_memory_barrier(
                    d,
                    cmd,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (
                        vk::PipelineStageFlags::ALL_COMMANDS,
                        vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
                    ),
                );
            }
        })
    }

    /// Before the draw renders into scene `pair`: a shared scene comes back from the compute API.
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass; the filter that last read the scene is ordered
    /// before this command buffer (a semaphore wait or a host wait).
    pub unsafe fn cmd_before_draw(&self, cmd: vk::CommandBuffer, pair: usize) {
        let p = &self.pairs[pair];
        if let Some(s) = p.scene.shared() {
            // SAFETY: per this function's contract.
            unsafe { s.cmd_acquire(cmd, ImageAccess::COLOR_ATTACHMENT_WRITE) };
        }
    }

    /// After the draw rendered scene `pair` (now in `GENERAL`): hand it to the filter. `cpu`:
    /// copy it into its host buffer, visible to the host once `rendered` is signalled; CUDA/HIP:
    /// release it; on Vulkan's queue (`on_queue`): a barrier from the draw's writes (and the
    /// previous copy's reads of the output) to the filter's shader reads and writes.
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass, after the render pass that drew scene `pair`.
    pub unsafe fn cmd_after_draw(&self, cmd: vk::CommandBuffer, pair: usize, on_queue: bool) {
        let d = &self.ctx.device;
        let p = &self.pairs[pair];
        // SAFETY: per this function's contract.
        unsafe {
            if let Some(s) = p.scene.shared() {
                s.cmd_release(cmd, SCENE_DRAWN);
            } else if let Some((scene_buf, _)) = &p.host {
                let (w, h) = (self.extent.width, self.extent.height);
                in_layout(d, cmd, &p.scene, ImageAccess::TRANSFER_READ, || {
                    let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
                    d.cmd_copy_image_to_buffer(cmd, p.scene.image(), src, scene_buf.buffer, &[region(w, h)]);
                });
                cmd_memory_barrier(
                    d,
                    cmd,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                );
            } else if on_queue {
                cmd_memory_barrier(
                    d,
                    cmd,
                    (
                        vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::TRANSFER,
                        vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
                    ),
                    (
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                    ),
                );
            }
        }
    }

    /// On Vulkan's queue, after the filter was recorded: its writes → the copy's reads.
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass.
    pub unsafe fn cmd_after_filter(&self, cmd: vk::CommandBuffer) {
        // SAFETY: per this function's contract.
        unsafe {
            cmd_memory_barrier(
                &self.ctx.device,
                cmd,
                (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
        }
    }

    /// The copy of frame f: image `source` of pair `pair` (the output; the scene when the
    /// filter is toggled off in a window) to `dest`, as a copy when the formats match and a blit
    /// (which converts) when they do not. `cpu`: the output buffer goes into the output image
    /// first. Shared images are acquired and released around the copy.
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass; the filter's writes are ordered before it (a
    /// semaphore wait, or [`Self::cmd_after_filter`]), and `dest` is not in use by earlier
    /// commands still running other than through the queue's order.
    pub unsafe fn cmd_copy_out(&self, cmd: vk::CommandBuffer, pair: usize, source: Which, dest: &CopyDest) {
        let d = &self.ctx.device;
        let p = &self.pairs[pair];
        let (w, h) = (self.extent.width, self.extent.height);
        let img = match source {
            Which::Scene => &p.scene,
            Which::Output => &p.output,
        };
        // SAFETY: per this function's contract; every image is in GENERAL (module note).
        unsafe {
            if let (Which::Output, Some((_, out_buf))) = (source, &p.host) {
                // The host wrote the buffer before signalling `posted`, which this submission
                // waited for; the previous copy read the image (same queue): `in_layout` orders it.
                in_layout(d, cmd, &p.output, ImageAccess::TRANSFER_WRITE, || {
                    let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
                    d.cmd_copy_buffer_to_image(cmd, out_buf.buffer, p.output.image(), dst, &[region(w, h)]);
                });
            }
            // The destination's earlier readers (a capture, the previous copy) → its layout
            // transition and writes; `in_layout` orders the source's last writes before the copy.
            layout_barrier(
                d,
                cmd,
                dest.image,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::empty(), vk::ImageLayout::UNDEFINED),
                (
                    vk::PipelineStageFlags::TRANSFER,
                    vk::AccessFlags::TRANSFER_WRITE,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                ),
            );
            let layers = vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            };
            let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
            in_layout(d, cmd, img, ImageAccess::TRANSFER_READ, || {
                if dest.format == POST_FORMAT && dest.extent == self.extent {
                    let copy = vk::ImageCopy::default()
                        .src_subresource(layers)
                        .dst_subresource(layers)
                        .extent(vk::Extent3D { width: w, height: h, depth: 1 });
                    d.cmd_copy_image(
                        cmd,
                        img.image(),
                        src,
                        dest.image,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        &[copy],
                    );
                } else {
                    let corner =
                        |e: vk::Extent2D| vk::Offset3D { x: e.width as i32, y: e.height as i32, z: 1 };
                    let blit = vk::ImageBlit::default()
                        .src_subresource(layers)
                        .dst_subresource(layers)
                        .src_offsets([vk::Offset3D::default(), corner(self.extent)])
                        .dst_offsets([vk::Offset3D::default(), corner(dest.extent)]);
                    d.cmd_blit_image(
                        cmd,
                        img.image(),
                        src,
                        dest.image,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        &[blit],
                        vk::Filter::NEAREST,
                    );
                }
            });
            layout_barrier(
                d,
                cmd,
                dest.image,
                (
                    vk::PipelineStageFlags::TRANSFER,
                    vk::AccessFlags::TRANSFER_WRITE,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                ),
                (vk::PipelineStageFlags::BOTTOM_OF_PIPE, vk::AccessFlags::empty(), dest.final_layout),
            );
        }
    }
}

/// One colour layout transition of `image` (whole image, one level, one layer): `src` and `dst`
/// are (stage, access, layout) before and after.
///
/// # Safety
/// `cmd` is recording, outside a render pass; `image` is a live colour image of the device.
pub unsafe fn layout_barrier(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    image: vk::Image,
    src: (vk::PipelineStageFlags, vk::AccessFlags, vk::ImageLayout),
    dst: (vk::PipelineStageFlags, vk::AccessFlags, vk::ImageLayout),
) {
    let barrier = vk::ImageMemoryBarrier::default()
        .src_access_mask(src.1)
        .dst_access_mask(dst.1)
        .old_layout(src.2)
        .new_layout(dst.2)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(subresource(vk::ImageAspectFlags::COLOR));
    // SAFETY: per this function's contract.
    unsafe { d.cmd_pipeline_barrier(cmd, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &[barrier]) };
}

/// A new image's UNDEFINED → GENERAL (contents discarded), before any use.
///
/// # Safety
/// As [`layout_barrier`]; the image was never used.
unsafe fn general_barrier(d: &ash::Device, cmd: vk::CommandBuffer, image: vk::Image) {
    // SAFETY: per this function's contract.
    unsafe {
        layout_barrier(
            d,
            cmd,
            image,
            (vk::PipelineStageFlags::TOP_OF_PIPE, vk::AccessFlags::empty(), vk::ImageLayout::UNDEFINED),
            (
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
                vk::ImageLayout::GENERAL,
            ),
        )
    };
}

/// The copy region of a whole `w` × `h` colour image, tightly packed.
pub fn region(w: u32, h: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        })
        .image_extent(vk::Extent3D { width: w, height: h, depth: 1 })
}

/// Run `record` with `img` in layout `access.layout()` for `access` (a transfer), and back in
/// `GENERAL` after: a shared image is acquired from, and released back to, the compute API
/// (GENERAL on its side, the crate's barriers), an image of the render device takes two
/// ordinary barriers. Transfers read and write optimal layouts, which the validation layer asks
/// for.
///
/// # Safety
/// `cmd` is recording, outside a render pass; `img` is in `GENERAL` (module note), and, when
/// shared, owned by the compute API with its work ordered before this command buffer.
unsafe fn in_layout(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    img: &PostImage,
    access: ImageAccess,
    record: impl FnOnce(),
) {
    let any =
        (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
    // SAFETY: per this function's contract.
    unsafe {
        match img.shared() {
            Some(s) => s.cmd_acquire(cmd, access),
            None => layout_barrier(
                d,
                cmd,
                img.image(),
                (any.0, vk::AccessFlags::MEMORY_WRITE, vk::ImageLayout::GENERAL),
                (access.stage(), access.access(), access.layout()),
            ),
        }
        record();
        match img.shared() {
            Some(s) => s.cmd_release(cmd, access),
            None => layout_barrier(
                d,
                cmd,
                img.image(),
                (access.stage(), access.access() & WRITES, access.layout()),
                (any.0, any.1, vk::ImageLayout::GENERAL),
            ),
        }
    }
}

/// The write accesses among those [`in_layout`] brackets.
const WRITES: vk::AccessFlags = vk::AccessFlags::TRANSFER_WRITE;
