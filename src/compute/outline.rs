//! The post filter of `--post outline` on the GPU: the kernel every interop backend compiles
//! (`kernels/outline.hip`: CUDA through NVRTC, HIP through hiprtc, `cuda-in-vulkan` through NVRTC
//! and `VK_NVX_binary_import`), its arguments and launch shape, and the `vulkan` backend's compute
//! shader (`shaders/outline.comp`, [`OutlineShader`]). All of them compute
//! [`super::post::outline_reference`] byte for byte.

use super::post::{PostPair, PostSurface};
use super::ComputeError;
use crate::shaders::{outline_dispatch, OutlinePush, OUTLINE_OUTPUT_BINDING, OUTLINE_SCENE_BINDING};
use crate::vk::device::Context;
use crate::vk::{CallContext, VkError};
use ash::vk;
use std::ffi::c_void;
use std::sync::Arc;

/// The kernel source, embedded at build time.
pub const OUTLINE_SOURCE: &str = include_str!("../../kernels/outline.hip");
/// The kernel's entry point (`extern "C"`).
pub const OUTLINE_ENTRY: &str = "outline";
/// Threads per block of `outline` in x and in y (the shader's local size too).
pub const OUTLINE_BLOCK: u32 = 16;

/// `(grid, block)` of an `outline` launch over `width × height` texels: one thread per texel.
///
/// ```
/// use vkhip::compute::outline::outline_launch;
///
/// assert_eq!(outline_launch(333, 77), ([21, 5, 1], [16, 16, 1]));
/// assert_eq!(outline_launch(1, 1), ([1, 1, 1], [16, 16, 1]));
/// ```
pub fn outline_launch(width: u32, height: u32) -> ([u32; 3], [u32; 3]) {
    let (x, y, z) = outline_dispatch(width, height);
    ([x, y, z], [OUTLINE_BLOCK, OUTLINE_BLOCK, 1])
}

/// The arguments of `outline` in `kernels/outline.hip`, in the order the APIs pass them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutlineArgs {
    /// Surface object of the scene (read).
    pub src: u64,
    /// Surface object of the output (written).
    pub dst: u64,
    pub width: u32,
    pub height: u32,
    /// Device address of the launch's GPU stamp pair (0: none).
    pub stamps: u64,
    /// Device address of the block counter (0: none).
    pub blocks_done: u64,
}

impl OutlineArgs {
    /// The kernel's parameter list as written in the source: (C type, name); a unit test parses
    /// `kernels/outline.hip` and compares.
    pub const SIGNATURE: [(&'static str, &'static str); 6] = [
        ("vkhip_surface", "src"),
        ("vkhip_surface", "dst"),
        ("unsigned int", "width"),
        ("unsigned int", "height"),
        ("unsigned long long*", "stamps"),
        ("unsigned int*", "blocks_done"),
    ];

    /// `kernelParams` for `cuLaunchKernel` / `hipModuleLaunchKernel`, in [`Self::SIGNATURE`]
    /// order; the pointers borrow `self` until the launch call returns.
    pub fn param_pointers(&mut self) -> [*mut c_void; 6] {
        [
            (&mut self.src as *mut u64).cast(),
            (&mut self.dst as *mut u64).cast(),
            (&mut self.width as *mut u32).cast(),
            (&mut self.height as *mut u32).cast(),
            (&mut self.stamps as *mut u64).cast(),
            (&mut self.blocks_done as *mut u64).cast(),
        ]
    }
}

/// A post surface a backend cannot use, as an error naming the backend and what it expected.
pub(crate) fn wrong_surface(backend: &'static str, expected: &str, pair: usize) -> ComputeError {
    ComputeError::Unsupported {
        backend,
        reason: format!("post pair {pair}: expected {expected} surfaces (see compute::post)"),
    }
}

/// The (scene, output) image views of `pairs`, which must all be [`PostSurface::Image`].
pub(crate) fn image_views(
    backend: &'static str,
    pairs: &[PostPair],
) -> Result<Vec<(vk::ImageView, vk::ImageView)>, ComputeError> {
    pairs
        .iter()
        .enumerate()
        .map(|(i, p)| match (&p.scene, &p.output) {
            (PostSurface::Image { view: s, .. }, PostSurface::Image { view: o, .. }) => Ok((*s, *o)),
            _ => Err(wrong_surface(backend, "Image", i)),
        })
        .collect()
}

/// The `vulkan` backend's post filter: `shaders/outline.comp` and one descriptor set per pair.
pub struct OutlineShader {
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    pool: vk::DescriptorPool,
    sets: Vec<vk::DescriptorSet>,
    push: OutlinePush,
    ctx: Arc<Context>,
}

impl OutlineShader {
    /// The pipeline for images of `width × height`, with a set per (scene, output) view pair.
    pub fn new(
        ctx: &Arc<Context>,
        views: &[(vk::ImageView, vk::ImageView)],
        width: u32,
        height: u32,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let mut me = OutlineShader {
            pipeline: vk::Pipeline::null(),
            layout: vk::PipelineLayout::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            pool: vk::DescriptorPool::null(),
            sets: Vec::new(),
            push: OutlinePush { width, height },
            ctx: ctx.clone(),
        };
        let bindings = [OUTLINE_SCENE_BINDING, OUTLINE_OUTPUT_BINDING].map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        });
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: valid device; `me` destroys the layout in Drop.
        me.set_layout =
            unsafe { d.create_descriptor_set_layout(&info, None) }.call("vkCreateDescriptorSetLayout")?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(std::mem::size_of::<OutlinePush>() as u32)];
        let set_layouts = [me.set_layout];
        let info =
            vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts).push_constant_ranges(&ranges);
        // SAFETY: valid device and set layout.
        me.layout = unsafe { d.create_pipeline_layout(&info, None) }.call("vkCreatePipelineLayout")?;
        let module_info = vk::ShaderModuleCreateInfo::default().code(crate::shaders::OUTLINE_COMP);
        // SAFETY: SPIR-V produced and validated by naga at build time.
        let module = unsafe { d.create_shader_module(&module_info, None) }.call("vkCreateShaderModule")?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(crate::shaders::ENTRY_POINT);
        let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(me.layout);
        // SAFETY: every referenced object is alive for the call.
        let created = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
        // SAFETY: the module is no longer needed once the pipeline exists (or failed).
        unsafe { d.destroy_shader_module(module, None) };
        me.pipeline =
            created.map_err(|(_, e)| VkError::Call { call: "vkCreateComputePipelines", result: e })?[0];
        if views.is_empty() {
            return Ok(me);
        }
        let n = views.len() as u32;
        let sizes =
            [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_IMAGE, descriptor_count: 2 * n }];
        let info = vk::DescriptorPoolCreateInfo::default().max_sets(n).pool_sizes(&sizes);
        // SAFETY: valid device.
        me.pool = unsafe { d.create_descriptor_pool(&info, None) }.call("vkCreateDescriptorPool")?;
        let layouts = vec![me.set_layout; views.len()];
        let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(me.pool).set_layouts(&layouts);
        // SAFETY: the pool holds 2 storage images per set.
        me.sets = unsafe { d.allocate_descriptor_sets(&info) }.call("vkAllocateDescriptorSets")?;
        for (&set, &(scene, output)) in me.sets.iter().zip(views) {
            let image = |view| {
                [vk::DescriptorImageInfo::default().image_view(view).image_layout(vk::ImageLayout::GENERAL)]
            };
            let (scene, output) = (image(scene), image(output));
            let writes = [
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(OUTLINE_SCENE_BINDING)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(&scene),
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(OUTLINE_OUTPUT_BINDING)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(&output),
            ];
            // SAFETY: the set is not in use; the views are valid storage-image views.
            unsafe { d.update_descriptor_sets(&writes, &[]) };
        }
        Ok(me)
    }

    /// Record the filter of pair `pair` into `cmd` (bind, push, dispatch; nothing else).
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass, on this device; both images of the pair are in
    /// layout `GENERAL` when it executes and outlive its execution.
    pub unsafe fn record(&self, cmd: vk::CommandBuffer, pair: usize) -> Result<(), ComputeError> {
        let set = *self.sets.get(pair).ok_or_else(|| ComputeError::Unsupported {
            backend: "vulkan",
            reason: format!("post pair {pair} out of range ({} attached)", self.sets.len()),
        })?;
        let d = &self.ctx.device;
        let (x, y, z) = outline_dispatch(self.push.width, self.push.height);
        // SAFETY: per this function's contract; the pipeline, layout and set are alive.
        unsafe {
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, self.layout, 0, &[set], &[]);
            d.cmd_push_constants(cmd, self.layout, vk::ShaderStageFlags::COMPUTE, 0, self.push.as_bytes());
            d.cmd_dispatch(cmd, x, y, z);
        }
        Ok(())
    }
}

impl Drop for OutlineShader {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: the owner (the vulkan backend) waited for its submissions; null handles are
        // ignored by the destroy calls; the pool frees its sets.
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_pool(self.pool, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signature in `kernels/outline.hip`, as (type, name) pairs.
    fn source_signature() -> Vec<(String, String)> {
        let start = OUTLINE_SOURCE.find("void outline(").expect("no outline entry") + "void outline(".len();
        let end = start + OUTLINE_SOURCE[start..].find(')').unwrap();
        OUTLINE_SOURCE[start..end]
            .split(',')
            .map(|p| {
                let p = p.split_whitespace().collect::<Vec<_>>().join(" ");
                let (ty, name) = p.rsplit_once(' ').unwrap();
                let stars = name.chars().take_while(|&c| c == '*').count();
                (format!("{ty}{}", "*".repeat(stars)), name[stars..].to_string())
            })
            .collect()
    }

    #[test]
    fn arguments_follow_the_kernel_signature() {
        let want: Vec<(String, String)> =
            OutlineArgs::SIGNATURE.iter().map(|(t, n)| (t.to_string(), n.to_string())).collect();
        assert_eq!(source_signature(), want);
        let mut a = OutlineArgs { src: 1, dst: 2, width: 3, height: 4, stamps: 5, blocks_done: 6 };
        let p = a.param_pointers();
        // SAFETY: each pointer points at the field of that position.
        unsafe {
            assert_eq!(*(p[0] as *const u64), 1);
            assert_eq!(*(p[1] as *const u64), 2);
            assert_eq!(*(p[2] as *const u32), 3);
            assert_eq!(*(p[3] as *const u32), 4);
            assert_eq!(*(p[4] as *const u64), 5);
            assert_eq!(*(p[5] as *const u64), 6);
        }
    }

    #[test]
    fn the_kernel_has_no_include_and_states_the_reference_formula() {
        assert!(!OUTLINE_SOURCE.lines().any(|l| l.trim_start().starts_with("#include")));
        for line in ["lum(c)  = (77 r + 150 g + 29 b) >> 8", "keep    = 255 - min(255, |gx| + |gy|)"] {
            assert!(OUTLINE_SOURCE.contains(line), "{line}");
        }
        assert!(OUTLINE_SOURCE.contains("(77 * (int)c.x + 150 * (int)c.y + 29 * (int)c.z) >> 8"));
    }

    /// Compiles the real kernel with the NVRTC on LD_LIBRARY_PATH (no GPU needed), for PTX and a
    /// cubin: `cargo test --lib outline -- --ignored`, e.g. with LD_LIBRARY_PATH at the
    /// `nvidia-cuda-nvrtc` wheel's lib directory. tests/post_filters.rs runs the same compile
    /// whenever NVRTC is present.
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_outline() {
        use vkhip_interop::cuda::{compile_to_image, Target};
        let ptx = compile_to_image(OUTLINE_SOURCE, "outline.hip", Target::Ptx(90), &[]).unwrap();
        let text = String::from_utf8_lossy(&ptx[..ptx.len() - 1]);
        assert!(text.contains(".entry outline("), "{text}");
        assert!(text.contains("suld.b.2d"), "no surface load:\n{text}");
        assert!(text.contains("sust.b.2d"), "no surface store:\n{text}");
    }
}
