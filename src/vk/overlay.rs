//! The frame-time overlay's pipeline: one screen-space rectangle drawn inside the surface's render
//! pass, after the surface, whose fragment shader reads the graph's samples from a storage buffer
//! (see [`crate::overlay`] for what it shows, `src/shaders.rs` for the shader interface).
//!
//! One host-visible, persistently mapped sample buffer (and descriptor set) per frame in flight:
//! frame f writes buffer `f % FRAMES_IN_FLIGHT` while recording, which the frames-in-flight
//! throttle has freed (the previous command buffer that read it has finished). The host writes
//! before the submit, and a queue submission makes host writes to coherent memory visible to the
//! device, so no barrier is needed.

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
