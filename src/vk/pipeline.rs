//! Render pass, the surface pipeline (draws the height field), and the compute pipeline used by
//! the `vulkan` backend. Shader interfaces are documented in `src/shaders.rs`.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): the compute pipeline's dispatch for a slot writes
//! the sine wave into that slot only.
//!
//! ```
//! use std::sync::Arc;
//! use vkhip::shaders::SinewavePush;
//! use vkhip::sim::{compare_with_reference, Grid, WaveParams};
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::external::{Slot, SlotMemory};
//! use vkhip::vk::instance::Instance;
//! use vkhip::vk::pipeline::SinewavePipeline;
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
//! let ctx = Context::new(instance, pd, false).unwrap();
//! let grid = Grid { width: 33, height: 17 }; // not a multiple of the workgroup size
//! let slots: Vec<Slot> =
//!     (0..2).map(|_| Slot::new(&ctx, grid.bytes(), SlotMemory::HostMapped, false).unwrap()).collect();
//! let pipeline = SinewavePipeline::new(&ctx, &slots).unwrap();
//! let params = WaveParams::at_time(grid, 1.0);
//! // SAFETY: slot 0's host-coherent mapping holds grid.len() floats; nothing else uses it.
//! unsafe { std::slice::from_raw_parts_mut(slots[0].mapped().unwrap(), grid.len()).fill(7.0) };
//! ctx.one_shot(&[], |cmd| pipeline.record_dispatch(cmd, 1, &SinewavePush::from(&params))).unwrap();
//! // SAFETY: host-coherent mappings of grid.len() floats; the one-shot submission has finished.
//! let read = |s: &Slot| unsafe { std::slice::from_raw_parts(s.mapped().unwrap(), grid.len()) }.to_vec();
//! assert_eq!(compare_with_reference(&params, &read(&slots[1]), 1e-5).mismatches, 0);
//! assert!(read(&slots[0]).iter().all(|&h| h == 7.0)); // the other slot is untouched
//! ```

use super::device::Context;
use super::external::Slot;
use super::target::DEPTH_FORMAT;
use super::{CallContext, VkError};
use crate::shaders::{sinewave_dispatch, surface_draw, SinewavePush, SurfacePush, ViewPush};
use crate::sim::Grid;
use ash::vk;
use std::sync::Arc;

/// A render pass with one colour and one depth attachment.
pub struct RenderPass {
    ctx: Arc<Context>,
    pub handle: vk::RenderPass,
    pub color_format: vk::Format,
}

impl RenderPass {
    /// Colour is cleared, stored, and left in `final_layout` (TRANSFER_SRC_OPTIMAL offscreen,
    /// PRESENT_SRC_KHR for a swapchain).
    pub fn new(
        ctx: &Arc<Context>,
        color_format: vk::Format,
        final_layout: vk::ImageLayout,
    ) -> Result<Self, VkError> {
        let attachments = [
            vk::AttachmentDescription::default()
                .format(color_format)
                .samples(vk::SampleCountFlags::TYPE_1)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
                .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(final_layout),
            vk::AttachmentDescription::default()
                .format(DEPTH_FORMAT)
                .samples(vk::SampleCountFlags::TYPE_1)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::DONT_CARE)
                .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
                .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL),
        ];
        let color_ref =
            [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
        let depth_ref = vk::AttachmentReference {
            attachment: 1,
            layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        };
        let subpass = [vk::SubpassDescription::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .color_attachments(&color_ref)
            .depth_stencil_attachment(&depth_ref)];
        let attach_stages = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
            | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
            | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        let attach_writes =
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
        let deps = [
            // The previous frame's attachment writes and capture reads finish before this frame's
            // layout transition and writes (the offscreen target is reused every frame).
            vk::SubpassDependency::default()
                .src_subpass(vk::SUBPASS_EXTERNAL)
                .dst_subpass(0)
                .src_stage_mask(attach_stages | vk::PipelineStageFlags::TRANSFER)
                .dst_stage_mask(attach_stages)
                .src_access_mask(attach_writes)
                .dst_access_mask(
                    attach_writes
                        | vk::AccessFlags::COLOR_ATTACHMENT_READ
                        | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ,
                ),
            // Colour writes are done before a later copy (capture) reads the image.
            vk::SubpassDependency::default()
                .src_subpass(0)
                .dst_subpass(vk::SUBPASS_EXTERNAL)
                .src_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
                .dst_stage_mask(vk::PipelineStageFlags::TRANSFER)
                .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
                .dst_access_mask(vk::AccessFlags::TRANSFER_READ),
        ];
        let info = vk::RenderPassCreateInfo::default()
            .attachments(&attachments)
            .subpasses(&subpass)
            .dependencies(&deps);
        // SAFETY: valid device; info points at live locals.
        let handle = unsafe { ctx.device.create_render_pass(&info, None) }.call("vkCreateRenderPass")?;
        Ok(RenderPass { ctx: ctx.clone(), handle, color_format })
    }
}

impl Drop for RenderPass {
    fn drop(&mut self) {
        // SAFETY: dropped after pipelines and framebuffers using it.
        unsafe { self.ctx.device.destroy_render_pass(self.handle, None) };
    }
}

/// A shader module that lives only while pipelines are created.
pub(super) struct ShaderModule<'a> {
    ctx: &'a Context,
    pub(super) handle: vk::ShaderModule,
}

impl<'a> ShaderModule<'a> {
    pub(super) fn new(ctx: &'a Context, words: &[u32]) -> Result<Self, VkError> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: SPIR-V produced and validated by naga at build time.
        let handle = unsafe { ctx.device.create_shader_module(&info, None) }.call("vkCreateShaderModule")?;
        Ok(ShaderModule { ctx, handle })
    }
}

impl Drop for ShaderModule<'_> {
    fn drop(&mut self) {
        // SAFETY: modules may be destroyed once the pipelines using them are created.
        unsafe { self.ctx.device.destroy_shader_module(self.handle, None) };
    }
}

/// Descriptor set layout + pool + one set per buffer, each binding its buffer as a storage buffer
/// at set 0, binding 0, visible to `stage` (the slots for the surface and the kernel; the
/// overlay's sample buffers).
pub(super) struct BufferDescriptors {
    ctx: Arc<Context>,
    pub(super) layout: vk::DescriptorSetLayout,
    pool: vk::DescriptorPool,
    pub(super) sets: Vec<vk::DescriptorSet>,
}

impl BufferDescriptors {
    /// One set per slot.
    fn for_slots(ctx: &Arc<Context>, slots: &[Slot], stage: vk::ShaderStageFlags) -> Result<Self, VkError> {
        let buffers: Vec<_> = slots.iter().map(|s| (s.buffer, s.size)).collect();
        Self::new(ctx, &buffers, stage)
    }

    /// One set per (buffer, bytes bound).
    pub(super) fn new(
        ctx: &Arc<Context>,
        buffers: &[(vk::Buffer, u64)],
        stage: vk::ShaderStageFlags,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let bindings = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(stage)];
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: valid device.
        let layout =
            unsafe { d.create_descriptor_set_layout(&info, None) }.call("vkCreateDescriptorSetLayout")?;
        let mut me = BufferDescriptors {
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
        // SAFETY: pool sized for `n` sets of this layout.
        me.sets = unsafe { d.allocate_descriptor_sets(&alloc) }.call("vkAllocateDescriptorSets")?;
        for (set, &(buffer, range)) in me.sets.iter().zip(buffers) {
            let buf = [vk::DescriptorBufferInfo { buffer, offset: 0, range }];
            let write = vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&buf);
            // SAFETY: set and buffer belong to this device; the set is not in use yet.
            unsafe { d.update_descriptor_sets(&[write], &[]) };
        }
        Ok(me)
    }
}

impl Drop for BufferDescriptors {
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

/// A pipeline with its layout.
pub(super) struct Pipeline {
    ctx: Arc<Context>,
    pub(super) layout: vk::PipelineLayout,
    pub(super) handle: vk::Pipeline,
}

impl Pipeline {
    pub(super) fn layout(
        ctx: &Arc<Context>,
        set_layout: vk::DescriptorSetLayout,
        push_stages: vk::ShaderStageFlags,
        push_size: usize,
    ) -> Result<Self, VkError> {
        let set_layouts = [set_layout];
        let ranges = [vk::PushConstantRange { stage_flags: push_stages, offset: 0, size: push_size as u32 }];
        let info =
            vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts).push_constant_ranges(&ranges);
        // SAFETY: valid device and set layout.
        let layout =
            unsafe { ctx.device.create_pipeline_layout(&info, None) }.call("vkCreatePipelineLayout")?;
        Ok(Pipeline { ctx: ctx.clone(), layout, handle: vk::Pipeline::null() })
    }

    /// Bind the pipeline at `point` with descriptor set `set` (set 0) and push `push` to `stages`.
    ///
    /// # Safety
    /// `cmd` is recording (inside a render pass for a graphics pipeline); `set` was allocated
    /// with this pipeline's set layout; `stages` and `push` match its push-constant range.
    pub(super) unsafe fn bind(
        &self,
        cmd: vk::CommandBuffer,
        point: vk::PipelineBindPoint,
        set: vk::DescriptorSet,
        stages: vk::ShaderStageFlags,
        push: &[u8],
    ) {
        let d = &self.ctx.device;
        // SAFETY: per this function's contract.
        unsafe {
            d.cmd_bind_pipeline(cmd, point, self.handle);
            d.cmd_bind_descriptor_sets(cmd, point, self.layout, 0, &[set], &[]);
            d.cmd_push_constants(cmd, self.layout, stages, 0, push);
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // SAFETY: dropped after the command buffers using it finished.
        unsafe {
            if self.handle != vk::Pipeline::null() {
                self.ctx.device.destroy_pipeline(self.handle, None);
            }
            self.ctx.device.destroy_pipeline_layout(self.layout, None);
        }
    }
}

/// Stages that see [`SurfacePush`].
pub const SURFACE_PUSH_STAGES: vk::ShaderStageFlags = vk::ShaderStageFlags::from_raw(
    vk::ShaderStageFlags::VERTEX.as_raw() | vk::ShaderStageFlags::FRAGMENT.as_raw(),
);

/// What differs between vkhip's graphics pipelines; everything else (no vertex input, triangle
/// strips, dynamic viewport and scissor, no culling, one sample) is shared.
pub(super) struct GraphicsState {
    /// Depth test and write (LESS), or neither (drawn over whatever is there).
    pub depth: bool,
    /// Colour blending, or plain writes.
    pub blend: Option<vk::PipelineColorBlendAttachmentState>,
}

/// Create a graphics pipeline from SPIR-V `(vertex, fragment)` with `layout`'s layout, for
/// subpass 0 of `render_pass`.
pub(super) fn graphics_pipeline(
    ctx: &Arc<Context>,
    layout: &Pipeline,
    render_pass: &RenderPass,
    (vert_spv, frag_spv): (&[u32], &[u32]),
    state: GraphicsState,
) -> Result<vk::Pipeline, VkError> {
    let vert = ShaderModule::new(ctx, vert_spv)?;
    let frag = ShaderModule::new(ctx, frag_spv)?;
    let stages = [
        vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::VERTEX)
            .module(vert.handle)
            .name(crate::shaders::ENTRY_POINT),
        vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::FRAGMENT)
            .module(frag.handle)
            .name(crate::shaders::ENTRY_POINT),
    ];
    let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
    let assembly =
        vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_STRIP);
    let viewport = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
    let raster = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(vk::CullModeFlags::NONE)
        .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
        .line_width(1.0);
    let multisample =
        vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
    let depth = vk::PipelineDepthStencilStateCreateInfo::default()
        .depth_test_enable(state.depth)
        .depth_write_enable(state.depth)
        .depth_compare_op(vk::CompareOp::LESS);
    let blend_attach = [state.blend.unwrap_or_default().color_write_mask(vk::ColorComponentFlags::RGBA)];
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
        .layout(layout.layout)
        .render_pass(render_pass.handle)
        .subpass(0);
    // SAFETY: every referenced object is alive for the call (the shader modules until return).
    let pipelines = unsafe { ctx.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
        .map_err(|(_, e)| VkError::Call { call: "vkCreateGraphicsPipelines", result: e })?;
    Ok(pipelines[0])
}

/// The height-field surface: triangle strips, one instance per row pair, heights from the slot's
/// storage buffer (no vertex or index buffers: GPU memory beyond the slots is O(1)).
pub struct SurfacePipeline {
    pipeline: Pipeline,
    descriptors: BufferDescriptors,
}

impl SurfacePipeline {
    pub fn new(ctx: &Arc<Context>, render_pass: &RenderPass, slots: &[Slot]) -> Result<Self, VkError> {
        Self::with_vertex_shader(
            ctx,
            render_pass,
            slots,
            crate::shaders::SURFACE_VERT,
            std::mem::size_of::<SurfacePush>(),
        )
    }

    /// The pipeline of `--views N` > 1: the layered vertex shader
    /// ([`crate::shaders::SURFACE_LAYERED_VERT`]: view i → layer i) with [`ViewPush`] (the device
    /// must have `shaderOutputLayer` enabled; [`super::views::check`] says so first).
    pub fn layered(ctx: &Arc<Context>, render_pass: &RenderPass, slots: &[Slot]) -> Result<Self, VkError> {
        Self::with_vertex_shader(
            ctx,
            render_pass,
            slots,
            crate::shaders::SURFACE_LAYERED_VERT,
            std::mem::size_of::<ViewPush>(),
        )
    }

    /// The surface pipeline with `vert` (its push constants `push_bytes` long) and the one
    /// fragment shader: what the one-view and the layered pipelines differ in.
    fn with_vertex_shader(
        ctx: &Arc<Context>,
        render_pass: &RenderPass,
        slots: &[Slot],
        vert: &[u32],
        push_bytes: usize,
    ) -> Result<Self, VkError> {
        let descriptors = BufferDescriptors::for_slots(ctx, slots, vk::ShaderStageFlags::VERTEX)?;
        let mut pipeline = Pipeline::layout(ctx, descriptors.layout, SURFACE_PUSH_STAGES, push_bytes)?;
        pipeline.handle = graphics_pipeline(
            ctx,
            &pipeline,
            render_pass,
            (vert, crate::shaders::SURFACE_FRAG),
            GraphicsState { depth: true, blend: None },
        )?;
        Ok(SurfacePipeline { pipeline, descriptors })
    }

    /// Record the draws of every view of `views` from `slot`, one `vkCmdDraw` each after its
    /// push constants (inside a layered render pass, viewport/scissor set; a pipeline made by
    /// [`Self::layered`]). With `tiles` (one rectangle per view: a window's tiled views), each
    /// view's viewport and scissor are its tile first.
    pub fn record_views(
        &self,
        cmd: vk::CommandBuffer,
        slot: usize,
        views: &[ViewPush],
        tiles: &[vk::Rect2D],
    ) {
        let d = &self.pipeline.ctx.device;
        let Some(first) = views.first() else { return };
        // SAFETY: as in `record_draw`; each view reads its environment's width × height floats
        // from `heights_base`, inside the slot (the pushes are made for the slot's size).
        unsafe {
            self.pipeline.bind(
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.descriptors.sets[slot],
                SURFACE_PUSH_STAGES,
                first.as_bytes(),
            );
            let (vertices, instances) =
                surface_draw(Grid { width: first.surface.width, height: first.surface.height });
            for (i, view) in views.iter().enumerate() {
                if i > 0 {
                    d.cmd_push_constants(cmd, self.pipeline.layout, SURFACE_PUSH_STAGES, 0, view.as_bytes());
                }
                if let Some(tile) = tiles.get(i) {
                    let viewport = vk::Viewport {
                        x: tile.offset.x as f32,
                        y: tile.offset.y as f32,
                        width: tile.extent.width as f32,
                        height: tile.extent.height as f32,
                        min_depth: 0.0,
                        max_depth: 1.0,
                    };
                    d.cmd_set_viewport(cmd, 0, &[viewport]);
                    d.cmd_set_scissor(cmd, 0, &[*tile]);
                }
                d.cmd_draw(cmd, vertices, instances, 0, 0);
            }
        }
    }

    /// Record the draw of `slot` with `push` (inside a render pass, viewport/scissor set).
    pub fn record_draw(&self, cmd: vk::CommandBuffer, slot: usize, push: &SurfacePush) {
        let d = &self.pipeline.ctx.device;
        // SAFETY: recording state is managed by the caller; the set for `slot` exists; the draw
        // reads exactly width × height floats (2·W vertices per strip, H−1 strips).
        unsafe {
            self.pipeline.bind(
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.descriptors.sets[slot],
                SURFACE_PUSH_STAGES,
                push.as_bytes(),
            );
            let (vertices, instances) = surface_draw(Grid { width: push.width, height: push.height });
            d.cmd_draw(cmd, vertices, instances, 0, 0);
        }
    }
}

/// The `vulkan` backend's sine-wave compute pipeline, one descriptor set per slot.
pub struct SinewavePipeline {
    pipeline: Pipeline,
    descriptors: BufferDescriptors,
}

impl SinewavePipeline {
    pub fn new(ctx: &Arc<Context>, slots: &[Slot]) -> Result<Self, VkError> {
        let descriptors = BufferDescriptors::for_slots(ctx, slots, vk::ShaderStageFlags::COMPUTE)?;
        let mut pipeline = Pipeline::layout(
            ctx,
            descriptors.layout,
            vk::ShaderStageFlags::COMPUTE,
            std::mem::size_of::<SinewavePush>(),
        )?;
        let module = ShaderModule::new(ctx, crate::shaders::SINEWAVE_COMP)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module.handle)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(pipeline.layout);
        // The Vulkan backend's kernel compilation (a fault point, see `crate::fault`).
        crate::fault::inject(crate::fault::Fault::KernelCompile).call("vkCreateComputePipelines")?;
        // SAFETY: every referenced object is alive for the call.
        pipeline.handle =
            unsafe { ctx.device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) }
                .map_err(|(_, e)| VkError::Call { call: "vkCreateComputePipelines", result: e })?[0];
        Ok(SinewavePipeline { pipeline, descriptors })
    }

    /// Record the dispatch that writes `slot` (workgroup counts from `shaders::sinewave_dispatch`,
    /// z = `push.envs`: one launch for every environment).
    pub fn record_dispatch(&self, cmd: vk::CommandBuffer, slot: usize, push: &SinewavePush) {
        let d = &self.pipeline.ctx.device;
        // SAFETY: recording state is managed by the caller; the set for `slot` exists.
        unsafe {
            self.pipeline.bind(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.descriptors.sets[slot],
                vk::ShaderStageFlags::COMPUTE,
                push.as_bytes(),
            );
            // z: one layer of workgroups per environment (`--envs`).
            let (x, y, _) = sinewave_dispatch(Grid { width: push.width, height: push.height });
            d.cmd_dispatch(cmd, x, y, push.envs.max(1));
        }
    }
}
