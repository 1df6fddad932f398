//! The frame-time overlay's pipeline: one screen-space rectangle drawn inside the surface's render
//! pass, after the surface, whose fragment shader reads the graph's samples from a storage buffer
//! (see [`crate::overlay`] for what it shows, `src/shaders.rs` for the shader interface).
//!
//! One host-visible, persistently mapped sample buffer (and descriptor set) per frame in flight:
//! frame f writes buffer `f % FRAMES_IN_FLIGHT` while recording, which the frames-in-flight
//! throttle has freed (the previous command buffer that read it has finished). The host writes
//! before the submit, and a queue submission makes host writes to coherent memory visible to the
//! device, so no barrier is needed.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): the overlay draws inside its rectangle
//! ([`crate::overlay::overlay_rect`]) and leaves the rest of the image alone.
//!
//! ```
//! use ash::vk;
//! use std::sync::Arc;
//! use vkhip::overlay::{overlay_rect, OverlayHistory, Series};
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::external::Semaphore;
//! use vkhip::vk::instance::Instance;
//! use vkhip::vk::overlay::OverlayPipeline;
//! use vkhip::vk::pipeline::RenderPass;
//! use vkhip::vk::target::{OffscreenTarget, OFFSCREEN_FORMAT};
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
//! let ctx = Context::new(instance, pd, false).unwrap();
//! let pass = RenderPass::new(&ctx, OFFSCREEN_FORMAT, vk::ImageLayout::TRANSFER_SRC_OPTIMAL).unwrap();
//! let extent = vk::Extent2D { width: 320, height: 180 };
//! let target = OffscreenTarget::new(&ctx, pass.handle, extent).unwrap();
//! let mut overlay = OverlayPipeline::new(&ctx, &pass, 2).unwrap();
//! let mut history = OverlayHistory::new();
//! for f in 0..100 {
//!     history.set(f, Series::Frame, 10.0 + (f % 7) as f32);
//! }
//! let clear = [
//!     vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } },
//!     vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } },
//! ];
//! let area = vk::Rect2D { offset: vk::Offset2D::default(), extent };
//! let begin = vk::RenderPassBeginInfo::default()
//!     .render_pass(pass.handle)
//!     .framebuffer(target.framebuffer.handle)
//!     .render_area(area)
//!     .clear_values(&clear);
//! let viewport = vk::Viewport { width: 320.0, height: 180.0, max_depth: 1.0, ..Default::default() };
//! ctx.one_shot(&[], |cmd| {
//!     // SAFETY: recording into the one-shot command buffer, inside a render pass of the kind the
//!     // overlay was made for; sample buffer 0 has never been used.
//!     unsafe {
//!         ctx.device.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
//!         ctx.device.cmd_set_viewport(cmd, 0, &[viewport]);
//!         ctx.device.cmd_set_scissor(cmd, 0, &[area]);
//!         overlay.record(cmd, 0, extent, &history);
//!         ctx.device.cmd_end_render_pass(cmd);
//!     }
//! })
//! .unwrap();
//! let done = Semaphore::timeline(&ctx, 1, false).unwrap();
//! let rgba = target.read_rgba(&ctx, (done.handle, 1)).unwrap();
//! let r = overlay_rect(320, 180);
//! let drawn = |x: u32, y: u32| {
//!     let i = ((y * 320 + x) * 4) as usize;
//!     rgba[i..i + 3] != [0, 0, 0]
//! };
//! let inside = (r.x..r.x + r.width).flat_map(|x| (r.y..r.y + r.height).map(move |y| (x, y)));
//! assert!(inside.filter(|&(x, y)| drawn(x, y)).count() as u32 > r.width * r.height / 2);
//! let outside = (0..320u32).flat_map(|x| (0..180u32).map(move |y| (x, y)));
//! let inside_r = |x: u32, y: u32| (r.x..r.x + r.width).contains(&x) && (r.y..r.y + r.height).contains(&y);
//! assert!(outside.filter(|&(x, y)| !inside_r(x, y)).all(|(x, y)| !drawn(x, y)));
//! ```

use super::device::Context;
use super::memory::HostBuffer;
use super::pipeline::{graphics_pipeline, BufferDescriptors, GraphicsState, Pipeline, RenderPass};
use super::VkError;
use crate::overlay::{overlay_rect, top_ms, OverlayHistory, OVERLAY_FRAMES, REFERENCE_MS};
use crate::shaders::{OverlayPush, OVERLAY_FRAG, OVERLAY_VERT};
use ash::vk;
use std::sync::Arc;

/// Stages that see [`OverlayPush`].
const PUSH_STAGES: vk::ShaderStageFlags = vk::ShaderStageFlags::from_raw(
    vk::ShaderStageFlags::VERTEX.as_raw() | vk::ShaderStageFlags::FRAGMENT.as_raw(),
);

/// Bytes of one sample buffer: a `vec4` per column.
const SAMPLES_SIZE: u64 = (OVERLAY_FRAMES * 16) as u64;

/// The overlay pipeline and its per-frame sample buffers. Field order is drop order: the
/// pipeline, then the descriptor sets, then the buffers they point at. The owner drops it only
/// after the command buffers that drew it have finished.
pub struct OverlayPipeline {
    pipeline: Pipeline,
    descriptors: BufferDescriptors,
    buffers: Vec<HostBuffer>,
    ctx: Arc<Context>,
}

impl OverlayPipeline {
    /// For subpass 0 of `render_pass`, with `frames_in_flight` sample buffers.
    pub fn new(
        ctx: &Arc<Context>,
        render_pass: &RenderPass,
        frames_in_flight: usize,
    ) -> Result<Self, VkError> {
        let buffers = (0..frames_in_flight)
            .map(|_| HostBuffer::new(ctx, SAMPLES_SIZE, vk::BufferUsageFlags::STORAGE_BUFFER))
            .collect::<Result<Vec<_>, _>>()?;
        let bound: Vec<_> = buffers.iter().map(|b| (b.buffer, b.size)).collect();
        let descriptors = BufferDescriptors::new(ctx, &bound, vk::ShaderStageFlags::FRAGMENT)?;
        let mut pipeline =
            Pipeline::layout(ctx, descriptors.layout, PUSH_STAGES, std::mem::size_of::<OverlayPush>())?;
        // On top of the surface whatever its depth; a translucent background over the surface,
        // the target's alpha staying as it was.
        let blend = vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(true)
            .src_color_blend_factor(vk::BlendFactor::SRC_ALPHA)
            .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .color_blend_op(vk::BlendOp::ADD)
            .src_alpha_blend_factor(vk::BlendFactor::ZERO)
            .dst_alpha_blend_factor(vk::BlendFactor::ONE)
            .alpha_blend_op(vk::BlendOp::ADD);
        pipeline.handle = graphics_pipeline(
            ctx,
            &pipeline,
            render_pass,
            (OVERLAY_VERT, OVERLAY_FRAG),
            GraphicsState { depth: false, blend: Some(blend) },
        )?;
        Ok(OverlayPipeline { pipeline, descriptors, buffers, ctx: ctx.clone() })
    }

    /// Write `history` into sample buffer `index` and record the overlay's draw for a viewport of
    /// `extent` (inside the render pass, viewport and scissor covering `extent`).
    ///
    /// # Safety
    /// `cmd` is recording inside a render pass compatible with the one this pipeline was made for,
    /// and the previous command buffer that used sample buffer `index` has finished.
    pub unsafe fn record(
        &mut self,
        cmd: vk::CommandBuffer,
        index: usize,
        extent: vk::Extent2D,
        history: &OverlayHistory,
    ) {
        let floats = self.buffers[index].floats_mut();
        let mut samples = [[0.0f32; 4]; OVERLAY_FRAMES];
        history.write_samples(&mut samples);
        for (dst, src) in floats.chunks_exact_mut(4).zip(&samples) {
            dst.copy_from_slice(src);
        }
        let rect = overlay_rect(extent.width, extent.height);
        let push = OverlayPush {
            rect: rect.to_ndc(extent.width, extent.height),
            top_ms: top_ms(history.max_ms()),
            ref_ms: REFERENCE_MS,
            height_px: rect.height as f32,
            count: OVERLAY_FRAMES as u32,
        };
        let d = &self.ctx.device;
        // SAFETY: per this function's contract; the set for `index` exists and points at a buffer
        // of OVERLAY_FRAMES samples, which is what `count` lets the shader read.
        unsafe {
            self.pipeline.bind(
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.descriptors.sets[index],
                PUSH_STAGES,
                push.as_bytes(),
            );
            d.cmd_draw(cmd, 4, 1, 0, 0);
        }
    }
}
