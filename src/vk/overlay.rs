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
use super::pipeline::{Pipeline, RenderPass, ShaderModule};
use super::{CallContext, VkError};
use crate::overlay::{overlay_rect, top_ms, OverlayHistory, OVERLAY_FRAMES, REFERENCE_MS};
use crate::shaders::{OverlayPush, ENTRY_POINT, OVERLAY_FRAG, OVERLAY_VERT};
use ash::vk;
use std::sync::Arc;

/// Stages that see [`OverlayPush`].
const PUSH_STAGES: vk::ShaderStageFlags = vk::ShaderStageFlags::from_raw(
    vk::ShaderStageFlags::VERTEX.as_raw() | vk::ShaderStageFlags::FRAGMENT.as_raw(),
);

/// Bytes of one sample buffer: a `vec4` per column.
const SAMPLES_SIZE: u64 = (OVERLAY_FRAMES * 16) as u64;

/// Descriptor set layout + pool + one set per sample buffer (set 0, binding 0, fragment stage).
struct SampleDescriptors {
    ctx: Arc<Context>,
    layout: vk::DescriptorSetLayout,
    pool: vk::DescriptorPool,
    sets: Vec<vk::DescriptorSet>,
}

impl SampleDescriptors {
    fn new(ctx: &Arc<Context>, buffers: &[HostBuffer]) -> Result<Self, VkError> {
        let d = &ctx.device;
        let bindings = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: valid device; info points at live locals.
        let layout =
            unsafe { d.create_descriptor_set_layout(&info, None) }.call("vkCreateDescriptorSetLayout")?;
        let mut me = SampleDescriptors {
            ctx: ctx.clone(),
            layout,
            pool: vk::DescriptorPool::null(),
            sets: Vec::new(),
        };
        let n = buffers.len() as u32;
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: n }];
        let pool_info = vk::DescriptorPoolCreateInfo::default().max_sets(n).pool_sizes(&sizes);
        // SAFETY: valid device.
        me.pool = unsafe { d.create_descriptor_pool(&pool_info, None) }.call("vkCreateDescriptorPool")?;
        let layouts = vec![layout; buffers.len()];
        let alloc = vk::DescriptorSetAllocateInfo::default().descriptor_pool(me.pool).set_layouts(&layouts);
        // SAFETY: the pool is sized for `n` sets of this layout.
        me.sets = unsafe { d.allocate_descriptor_sets(&alloc) }.call("vkAllocateDescriptorSets")?;
        for (set, b) in me.sets.iter().zip(buffers) {
            let info = [vk::DescriptorBufferInfo { buffer: b.buffer, offset: 0, range: b.size }];
            let write = vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&info);
            // SAFETY: set and buffer belong to this device; the set is not in use yet.
            unsafe { d.update_descriptor_sets(&[write], &[]) };
        }
        Ok(me)
    }
}

impl Drop for SampleDescriptors {
    fn drop(&mut self) {
        // SAFETY: dropped after the command buffers using the sets finished; destroying the pool
        // frees the sets.
        unsafe {
            if self.pool != vk::DescriptorPool::null() {
                self.ctx.device.destroy_descriptor_pool(self.pool, None);
            }
            self.ctx.device.destroy_descriptor_set_layout(self.layout, None);
        }
    }
}

/// The overlay pipeline and its per-frame sample buffers. Field order is drop order: the
/// pipeline, then the descriptor sets, then the buffers they point at. The owner drops it only
/// after the command buffers that drew it have finished.
pub struct OverlayPipeline {
    pipeline: Pipeline,
    descriptors: SampleDescriptors,
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
        let descriptors = SampleDescriptors::new(ctx, &buffers)?;
        let mut pipeline =
            Pipeline::layout(ctx, descriptors.layout, PUSH_STAGES, std::mem::size_of::<OverlayPush>())?;
        let vert = ShaderModule::new(ctx, OVERLAY_VERT)?;
        let frag = ShaderModule::new(ctx, OVERLAY_FRAG)?;
        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(vert.handle)
                .name(ENTRY_POINT),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(frag.handle)
                .name(ENTRY_POINT),
        ];
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
        let viewport = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        let raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(vk::SampleCountFlags::TYPE_1);
        // On top of the surface whatever its depth.
        let depth = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(false)
            .depth_write_enable(false);
        // Translucent background over the surface; the target's alpha stays as it was.
        let blend_attach = [vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(true)
            .src_color_blend_factor(vk::BlendFactor::SRC_ALPHA)
            .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
            .color_blend_op(vk::BlendOp::ADD)
            .src_alpha_blend_factor(vk::BlendFactor::ZERO)
            .dst_alpha_blend_factor(vk::BlendFactor::ONE)
            .alpha_blend_op(vk::BlendOp::ADD)
            .color_write_mask(vk::ColorComponentFlags::RGBA)];
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend_attach);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .depth_stencil_state(&depth)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(pipeline.layout)
            .render_pass(render_pass.handle)
            .subpass(0);
        // SAFETY: every referenced object is alive for the call.
        pipeline.handle =
            unsafe { ctx.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
                .map_err(|(_, e)| VkError::Call { call: "vkCreateGraphicsPipelines", result: e })?[0];
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
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipeline.handle);
            d.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.pipeline.layout,
                0,
                &[self.descriptors.sets[index]],
                &[],
            );
            d.cmd_push_constants(cmd, self.pipeline.layout, PUSH_STAGES, 0, push.as_bytes());
            d.cmd_draw(cmd, 4, 1, 0, 0);
        }
    }
}
