//! The post filter (`--post outline`) of every GPU backend against the CPU reference
//! (`vkhip::compute::post::outline_reference`), byte for byte:
//!
//! - `vulkan` (the compute shader), on any Vulkan device (lavapipe in CI), on odd sizes (1x1,
//!   333x77, 4097x3) and random RGBA, K = 2 pairs, under the Khronos validation layer with 0
//!   messages when the layer is installed;
//! - the kernel source compiled by NVRTC (PTX and a cubin) when libnvrtc is present (skips
//!   otherwise: CI has no NVRTC);
//! - on an NVIDIA GPU (skips without libcuda): `cuda` (imported images: the GPU-side path with
//!   the post timelines, and the host-synchronous path) and `cuda-in-vulkan` (the kernel in
//!   Vulkan's queue on VK_NVX_image_view_handle handles). The GPU box has no cargo: build the test
//!   binary with `cargo test --release --test post_filters --no-run` (it prints the path), copy
//!   it, and run `post_filters-<hash> gpu_ --nocapture`: each backend prints `<backend>: OK ...`
//!   or the test fails naming the first wrong texel.

#[path = "../crates/vkhip-interop/tests/common/skip.rs"]
mod skip;

use ash::vk;
use skip::{require_part, Component};
use std::sync::Arc;
use vkhip::compute::post::{outline_reference, PostKind, PostPair, PostResources, PostSurface};
use vkhip::compute::vulkan::VulkanBackend;
use vkhip::compute::{BackendKind, ComputeBackend};
use vkhip::sim::Grid;
use vkhip::sync::{FrameSemaphores, SyncMode, SyncPlan, SyncRequest};
use vkhip::vk::device::{enumerate, Context};
use vkhip::vk::external::{Slot, SlotMemory};
use vkhip::vk::instance::{Instance, ValidationCounts};
use vkhip::vk::post::{layout_barrier, region};
use vkhip::vk::target::subresource;

/// Odd sizes: a single texel, partial workgroups in both directions, a row wider than 4096.
const SIZES: [(u32, u32); 3] = [(1, 1), (333, 77), (4097, 3)];

/// Deterministic random RGBA bytes (xorshift64*), with flat runs so that some texels keep their
/// colour and some edges are strong.
fn random_rgba(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut out = Vec::with_capacity(width as usize * height as usize * 4);
    // A colour per 7x5 block (flat inside, edges between), and one texel in 40 of noise.
    let (bw, bh) = (width.div_ceil(7) as usize, height.div_ceil(5) as usize);
    let blocks: Vec<[u8; 4]> = (0..bw * bh).map(|_| (next() as u32).to_le_bytes()).collect();
    for y in 0..height as usize {
        for x in 0..width as usize {
            let noise = next();
            let texel = if noise % 40 == 0 {
                (noise >> 8) as u32
            } else {
                u32::from_le_bytes(blocks[y / 5 * bw + x / 7])
            };
            out.extend(texel.to_le_bytes());
        }
    }
    out
}

/// The first texel where `got` differs from `want`, described.
fn first_difference(got: &[u8], want: &[u8], width: u32) -> Option<String> {
    assert_eq!(got.len(), want.len(), "sizes differ");
    let t = (0..want.len() / 4).find(|&t| got[4 * t..4 * t + 4] != want[4 * t..4 * t + 4])?;
    let (x, y) = (t as u32 % width, t as u32 / width);
    Some(format!("texel ({x}, {y}) is {:?}, expected {:?}", &got[4 * t..4 * t + 4], &want[4 * t..4 * t + 4]))
}

/// An RGBA8 storage image of the app's device with its view, and a host-visible staging buffer
/// of the same bytes (for upload and read-back).
struct TestImage {
    image: vk::Image,
    view: vk::ImageView,
    memory: vk::DeviceMemory,
    staging: vk::Buffer,
    staging_memory: vk::DeviceMemory,
    mapped: *mut u8,
    width: u32,
    height: u32,
    ctx: Arc<Context>,
}

fn memory_type(ctx: &Context, bits: u32, want: vk::MemoryPropertyFlags) -> u32 {
    let p = &ctx.memory_properties;
    (0..p.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && p.memory_types[i as usize].property_flags.contains(want))
        .expect("a memory type for the test image")
}

impl TestImage {
    fn new(ctx: &Arc<Context>, width: u32, height: u32) -> TestImage {
        let d = &ctx.device;
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(vk::Format::R8G8B8A8_UNORM)
            .extent(vk::Extent3D { width, height, depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(
                vk::ImageUsageFlags::STORAGE
                    | vk::ImageUsageFlags::TRANSFER_SRC
                    | vk::ImageUsageFlags::TRANSFER_DST,
            )
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: valid device; every object made here is destroyed in Drop.
        unsafe {
            let image = d.create_image(&info, None).unwrap();
            let req = d.get_image_memory_requirements(image);
            let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(
                memory_type(ctx, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL),
            );
            let memory = d.allocate_memory(&alloc, None).unwrap();
            d.bind_image_memory(image, memory, 0).unwrap();
            let view_info = vk::ImageViewCreateInfo::default()
                .image(image)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(vk::Format::R8G8B8A8_UNORM)
                .subresource_range(subresource(vk::ImageAspectFlags::COLOR));
            let view = d.create_image_view(&view_info, None).unwrap();
            let bytes = u64::from(width) * u64::from(height) * 4;
            let binfo = vk::BufferCreateInfo::default()
                .size(bytes)
                .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST);
            let staging = d.create_buffer(&binfo, None).unwrap();
            let req = d.get_buffer_memory_requirements(staging);
            let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(memory_type(ctx, req.memory_type_bits, host));
            let staging_memory = d.allocate_memory(&alloc, None).unwrap();
            d.bind_buffer_memory(staging, staging_memory, 0).unwrap();
            let mapped =
                d.map_memory(staging_memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()).unwrap().cast();
            TestImage {
                image,
                view,
                memory,
                staging,
                staging_memory,
                mapped,
                width,
                height,
                ctx: ctx.clone(),
            }
        }
    }

    fn len(&self) -> usize {
        self.width as usize * self.height as usize * 4
    }

    fn surface(&self) -> PostSurface {
        PostSurface::Image { image: self.image, view: self.view }
    }

    fn staged(&self) -> Vec<u8> {
        // SAFETY: a host-coherent mapping of len() bytes; callers read after the fence.
        unsafe { std::slice::from_raw_parts(self.mapped, self.len()) }.to_vec()
    }

    fn copy_region(&self) -> vk::BufferImageCopy {
        region(self.width, self.height)
    }
}

impl Drop for TestImage {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: the test waited for every submission using these objects.
        unsafe {
            d.destroy_image_view(self.view, None);
            d.destroy_image(self.image, None);
            d.free_memory(self.memory, None);
            d.destroy_buffer(self.staging, None);
            d.free_memory(self.staging_memory, None);
        }
    }
}

/// Upload `scenes[i]` into pair i's scene, filter every pair with `backend.record_post` in one
/// command buffer (the frame's barriers around it), read every output back.
fn filter_on_queue(
    ctx: &Arc<Context>,
    backend: &mut dyn ComputeBackend,
    pairs: &[(TestImage, TestImage)],
    scenes: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    use vk::{AccessFlags as A, ImageLayout as L, PipelineStageFlags as S};
    for ((scene, _), bytes) in pairs.iter().zip(scenes) {
        // SAFETY: a host-coherent mapping of len() bytes, not in use by the device now.
        unsafe { std::slice::from_raw_parts_mut(scene.mapped, scene.len()) }.copy_from_slice(bytes);
    }
    let mut recorded = Ok(());
    ctx.one_shot(&[], |cmd| {
        let d = &ctx.device;
        // SAFETY (every barrier below): recording `cmd` outside a render pass; the images are
        // alive.
        let barrier = |image, src, dst| unsafe { layout_barrier(d, cmd, image, src, dst) };
        for (i, (scene, output)) in pairs.iter().enumerate() {
            barrier(
                scene.image,
                (S::TOP_OF_PIPE, A::empty(), L::UNDEFINED),
                (S::TRANSFER, A::TRANSFER_WRITE, L::TRANSFER_DST_OPTIMAL),
            );
            // SAFETY: recording outside a render pass; buffer and image alive and large enough.
            unsafe {
                d.cmd_copy_buffer_to_image(
                    cmd,
                    scene.staging,
                    scene.image,
                    L::TRANSFER_DST_OPTIMAL,
                    &[scene.copy_region()],
                )
            };
            barrier(
                scene.image,
                (S::TRANSFER, A::TRANSFER_WRITE, L::TRANSFER_DST_OPTIMAL),
                (S::COMPUTE_SHADER, A::SHADER_READ, L::GENERAL),
            );
            let compute_write = (S::COMPUTE_SHADER, A::SHADER_WRITE, L::GENERAL);
            barrier(output.image, (S::TOP_OF_PIPE, A::empty(), L::UNDEFINED), compute_write);
            // SAFETY: recording outside a render pass on the backend's device; both images are
            // GENERAL when the filter runs, and outlive the one-shot submission.
            if let Err(e) = unsafe { backend.record_post(cmd, i) } {
                recorded = Err(e);
            }
            barrier(output.image, compute_write, (S::TRANSFER, A::TRANSFER_READ, L::TRANSFER_SRC_OPTIMAL));
            // SAFETY: as above.
            unsafe {
                d.cmd_copy_image_to_buffer(
                    cmd,
                    output.image,
                    L::TRANSFER_SRC_OPTIMAL,
                    output.staging,
                    &[output.copy_region()],
                )
            };
            // The fence wait makes the copy's writes of the staging buffer visible to the host.
        }
    })
    .expect("the filter's submission");
    recorded.expect("record_post");
    pairs.iter().map(|(_, output)| output.staged()).collect()
}

/// A backend on Vulkan's queue with its post stage attached, and what it borrows (dropped in
/// this order: the backend first).
struct OnQueue {
    backend: Box<dyn ComputeBackend>,
    pairs: Vec<(TestImage, TestImage)>,
    _sems: FrameSemaphores,
    _slots: Vec<Slot>,
}

/// A backend on `ctx` (`vulkan` or `cuda-in-vulkan`) with its post stage attached to `k` pairs of
/// `width × height`.
fn on_queue_backend(ctx: &Arc<Context>, kind: BackendKind, width: u32, height: u32, k: usize) -> OnQueue {
    let plan = SyncPlan::resolve(&SyncRequest::mode(SyncMode::Auto), kind, &ctx.physical).unwrap();
    let sems = FrameSemaphores::new(ctx, &plan).unwrap();
    let grid = Grid { width: 8, height: 8 };
    let slots: Vec<Slot> = (0..plan.slots)
        .map(|_| Slot::new(ctx, grid.bytes(), SlotMemory::DeviceLocal, false).unwrap())
        .collect();
    let mut backend: Box<dyn ComputeBackend> = match kind {
        BackendKind::Vulkan => Box::new(VulkanBackend::new(ctx, &slots, sems.handles()).unwrap()),
        BackendKind::CudaInVulkan => {
            Box::new(VulkanBackend::with_cuda_kernel(ctx, &slots, sems.handles()).unwrap())
        }
        other => panic!("{other} is not on Vulkan's queue"),
    };
    let pairs: Vec<(TestImage, TestImage)> =
        (0..k).map(|_| (TestImage::new(ctx, width, height), TestImage::new(ctx, width, height))).collect();
    let resources = PostResources {
        kind: PostKind::Outline,
        width,
        height,
        pairs: pairs.iter().map(|(s, o)| PostPair { scene: s.surface(), output: o.surface() }).collect(),
        semaphores: None,
    };
    backend.attach_post(resources).unwrap_or_else(|e| panic!("{kind}: attach_post: {e}"));
    OnQueue { backend, pairs, _sems: sems, _slots: slots }
}

/// Every size, two pairs with different scenes: each output is the reference of its own scene.
fn check_on_queue(ctx: &Arc<Context>, kind: BackendKind) {
    for (width, height) in SIZES {
        let OnQueue { mut backend, pairs, _sems, _slots } = on_queue_backend(ctx, kind, width, height, 2);
        let scenes: Vec<Vec<u8>> = (0..2).map(|i| random_rgba(width, height, 7 + i)).collect();
        let outputs = filter_on_queue(ctx, backend.as_mut(), &pairs, &scenes);
        for (i, (scene, got)) in scenes.iter().zip(&outputs).enumerate() {
            let want = outline_reference(scene, width, height);
            if let Some(diff) = first_difference(got, &want, width) {
                panic!("{kind} {width}x{height} pair {i}: {diff}");
            }
        }
        let inked = outputs[1].chunks(4).zip(scenes[1].chunks(4)).filter(|(o, s)| o[..3] != s[..3]).count();
        assert!(
            width * height == 1 || inked > 0,
            "{kind} {width}x{height}: no texel outlined, the test checks nothing"
        );
        backend.finish().unwrap();
        drop(backend);
        eprintln!("{kind}: OK {width}x{height} ({} texels x 2 pairs, {inked} outlined)", width * height);
    }
}

#[test]
fn vulkan_shader_outline_matches_the_reference_on_odd_sizes() {
    let validation =
        require_part("vulkan_shader_outline", "under the validation layer", Component::ValidationLayer);
    let _ = env_logger::builder().is_test(true).try_init();
    let instance = Arc::new(Instance::new(validation, &[]).unwrap());
    let pd = enumerate(&instance).unwrap().into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device");
    let ctx = Context::new(instance, pd, false).unwrap();
    let before = ValidationCounts::current();
    check_on_queue(&ctx, BackendKind::Vulkan);
    if validation {
        let after = ValidationCounts::current();
        assert_eq!(
            (after.errors - before.errors, after.warnings - before.warnings),
            (0, 0),
            "the validation layer reported messages (see the log)"
        );
    }
}

#[test]
fn attach_post_refuses_surfaces_the_backend_cannot_reach() {
    let instance = Arc::new(Instance::new(false, &[]).unwrap());
    let pd = enumerate(&instance).unwrap().into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device");
    let ctx = Context::new(instance, pd, false).unwrap();
    let plan =
        SyncPlan::resolve(&SyncRequest::mode(SyncMode::Auto), BackendKind::Vulkan, &ctx.physical).unwrap();
    let sems = FrameSemaphores::new(&ctx, &plan).unwrap();
    let slots = vec![Slot::new(&ctx, 256, SlotMemory::DeviceLocal, false).unwrap()];
    let mut backend = VulkanBackend::new(&ctx, &slots, sems.handles()).unwrap();
    let mut bytes = vec![0u8; 16];
    let ptr = bytes.as_mut_ptr();
    let mapped = || PostSurface::Mapped { ptr, len: 16 };
    let pair = PostPair { scene: mapped(), output: mapped() };
    let post =
        PostResources { kind: PostKind::Outline, width: 2, height: 2, pairs: vec![pair], semaphores: None };
    let e = backend.attach_post(post).unwrap_err();
    assert!(e.is_environment(), "{e}");
    assert_eq!(e.to_string(), "backend vulkan: post pair 0: expected Image surfaces (see compute::post)");
    // SAFETY: never executed: record_post refuses before recording anything.
    let e = unsafe { backend.record_post(vk::CommandBuffer::null(), 0) }.unwrap_err();
    assert!(e.to_string().contains("record_post before attach_post"), "{e}");
}

/// The kernel source as NVRTC compiles it for the CUDA backends (PTX with surface loads and
/// stores, and a cubin). NVRTC only: no GPU needed.
#[test]
fn nvrtc_compiles_the_outline_kernel() {
    if !require_part("nvrtc_compiles_the_outline_kernel", "compiling kernels/outline.hip", Component::Nvrtc) {
        return;
    }
    use vkhip::compute::outline::OUTLINE_SOURCE;
    use vkhip_interop::cuda::{compile_to_image, Target};
    let ptx = compile_to_image(OUTLINE_SOURCE, "outline.hip", Target::Ptx(90), &["--fmad=false"]).unwrap();
    let text = String::from_utf8_lossy(&ptx[..ptx.len() - 1]);
    assert!(text.contains(".entry outline("), "no unmangled entry point:\n{text}");
    assert!(text.contains("suld.b.2d") && text.contains("sust.b.2d"), "no surface access:\n{text}");
    assert!(text.contains("%globaltimer"), "no GPU stamps:\n{text}");
    let cubin =
        compile_to_image(OUTLINE_SOURCE, "outline.hip", Target::Cubin(90), &["--fmad=false"]).unwrap();
    assert!(cubin.starts_with(b"\x7fELF"), "a cubin is an ELF image");
}

/// Whether an NVIDIA driver is here (else the GPU checks skip with one line; CI has none).
fn nvidia_gpu(test: &str) -> bool {
    match vkhip::compute::cuda::probe() {
        Ok(devices) if !devices.is_empty() => true,
        other => {
            let why = other.err().map_or("no CUDA devices".to_string(), |e| e.to_string());
            skip::skip(test, &format!("an NVIDIA GPU and driver ({why})"), false);
            false
        }
    }
}

/// On the GPU: `cuda-in-vulkan`'s kernel in Vulkan's queue, on the images' NVX handles.
#[test]
fn gpu_outline_cuda_in_vulkan_matches_the_reference() {
    if !nvidia_gpu("gpu_outline_cuda_in_vulkan") {
        return;
    }
    let validation = Component::ValidationLayer.present();
    let _ = env_logger::builder().is_test(true).try_init();
    let instance = Arc::new(Instance::new(validation, &[]).unwrap());
    let uuids: Vec<[u8; 16]> = vkhip::compute::cuda::probe().unwrap().iter().map(|d| d.uuid).collect();
    let pd = enumerate(&instance)
        .unwrap()
        .into_iter()
        .find(|d| d.usable() && uuids.contains(&d.uuid))
        .expect("a Vulkan device that CUDA sees");
    let ctx = Context::new_with(instance, pd, false, true).expect("a device with VK_NVX_binary_import");
    assert!(ctx.image_view_handle, "the driver offers no VK_NVX_image_view_handle");
    let before = ValidationCounts::current();
    check_on_queue(&ctx, BackendKind::CudaInVulkan);
    if validation {
        let after = ValidationCounts::current();
        eprintln!(
            "cuda-in-vulkan: validation layer: {} error(s), {} warning(s)",
            after.errors - before.errors,
            after.warnings - before.warnings
        );
        assert_eq!(after.errors - before.errors, 0, "cuda-in-vulkan: the validation layer reported errors");
    }
}

/// On the GPU: `cuda` with imported images, the GPU-side path (the post timelines: wait
/// `rendered`, signal `posted`) on pair 0 and the host-synchronous path on pair 1.
#[test]
fn gpu_outline_cuda_matches_the_reference() {
    if !nvidia_gpu("gpu_outline_cuda") {
        return;
    }
    use vkhip::compute::cuda::CudaBackend;
    use vkhip::compute::post::{PostSemaphores, PostSync};
    use vkhip::compute::{InteropSemaphorePair, InteropSemaphores};
    use vkhip_interop::vulkan::{Device, ImageAccess, Importer};
    use vkhip_interop::ImageFormat;

    let uuids: Vec<[u8; 16]> = vkhip::compute::cuda::probe().unwrap().iter().map(|d| d.uuid).collect();
    let vkd = Device::open(&uuids, Importer::Cuda).expect("a Vulkan device CUDA can import from");
    for (width, height) in SIZES {
        let image = || vkd.shared_image(ImageFormat::Rgba8Unorm, width, height).unwrap();
        let pairs = [(image(), image()), (image(), image())];
        let timeline = || vkd.shared_timeline(0).unwrap();
        let (computed, rendered, posted, presented) = (timeline(), timeline(), timeline(), timeline());
        let semaphores = InteropSemaphores {
            timeline: Some(InteropSemaphorePair {
                computed: computed.export().unwrap(),
                rendered: rendered.export().unwrap(),
            }),
            binary: Vec::new(),
        };
        let mut backend = CudaBackend::new(vkd.uuid(), Vec::new(), semaphores).expect("the cuda backend");
        let post = PostResources {
            kind: PostKind::Outline,
            width,
            height,
            pairs: pairs
                .iter()
                .map(|(s, o)| PostPair {
                    scene: PostSurface::Exported(s.export().unwrap()),
                    output: PostSurface::Exported(o.export().unwrap()),
                })
                .collect(),
            semaphores: Some(PostSemaphores {
                posted: posted.export().unwrap(),
                presented: presented.export().unwrap(),
            }),
        };
        backend.attach_post(post).expect("attach_post");

        // Vulkan "renders" both scenes: a clear and rectangles blitted from the output image
        // (cleared to a second colour first), then hands them to CUDA and signals rendered = 1.
        let (d, write, read) = (vkd.ash(), ImageAccess::TRANSFER_WRITE, ImageAccess::TRANSFER_READ);
        let colour = |c: [u8; 4]| vk::ClearColorValue { float32: c.map(|v| v as f32 / 255.0) };
        let layers = vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            layer_count: 1,
            ..Default::default()
        };
        let at = |x: u32, y: u32| vk::Offset3D { x: x as i32, y: y as i32, z: 0 };
        let rects = [(0, 0, width / 3 + 1, height / 2 + 1), (width / 2, height / 3, width, height)];
        vkd.submit_one_shot(&[], &[(&rendered, 1)], |cmd| {
            // SAFETY: recording on vkd's queue family; the images are new, then Vulkan's until
            // released; every command names the layout its access was given.
            unsafe {
                for (i, (scene, output)) in pairs.iter().enumerate() {
                    let (bg, ink) = ([30, 60 + 40 * i as u8, 90, 255], [250, 200, 40 * i as u8, 7]);
                    scene.cmd_prepare_for_vulkan(cmd, write);
                    output.cmd_prepare_for_vulkan(cmd, write);
                    d.cmd_clear_color_image(
                        cmd,
                        scene.image(),
                        write.layout(),
                        &colour(bg),
                        &[subresource(vk::ImageAspectFlags::COLOR)],
                    );
                    d.cmd_clear_color_image(
                        cmd,
                        output.image(),
                        write.layout(),
                        &colour(ink),
                        &[subresource(vk::ImageAspectFlags::COLOR)],
                    );
                    output.cmd_transition(cmd, write, read);
                    scene.cmd_transition(cmd, write, write);
                    let blits = rects.map(|(x0, y0, x1, y1)| vk::ImageBlit {
                        src_subresource: layers,
                        src_offsets: [at(0, 0), vk::Offset3D { x: 1, y: 1, z: 1 }],
                        dst_subresource: layers,
                        dst_offsets: [at(x0, y0), vk::Offset3D { x: x1 as i32, y: y1 as i32, z: 1 }],
                    });
                    d.cmd_blit_image(
                        cmd,
                        output.image(),
                        read.layout(),
                        scene.image(),
                        write.layout(),
                        &blits,
                        vk::Filter::NEAREST,
                    );
                    scene.cmd_release(cmd, write);
                    output.cmd_release(cmd, read);
                }
            }
        })
        .unwrap();
        // Pair 0 on the GPU-side path (the host does not wait), pair 1 host-synchronously.
        let sync = PostSync { wait_rendered: Some(1), wait_presented: None, signal_posted: Some(1) };
        backend.enqueue_post_gpu_synced(0, 0, sync).expect("enqueue_post_gpu_synced");
        rendered.wait(1, std::time::Duration::from_secs(10)).unwrap();
        backend.post_and_wait(1, 1).expect("post_and_wait");
        for (i, (scene, output)) in pairs.iter().enumerate() {
            let wait = (i == 0).then_some((&posted, 1));
            let got = vkd.read_image(output, wait, None).unwrap();
            let scene_bytes = vkd.read_image(scene, None, None).unwrap();
            let want = outline_reference(&scene_bytes, width, height);
            if let Some(diff) = first_difference(&got, &want, width) {
                panic!("cuda {width}x{height} pair {i}: {diff}");
            }
        }
        backend.finish().unwrap();
        let mut spans = Vec::new();
        backend.take_spans(&mut spans);
        let filters = spans.iter().filter(|s| s.phase == vkhip::profile::Phase::PostFilter).count();
        drop(backend);
        eprintln!(
            "cuda: OK {width}x{height} (GPU-synced pair 0, host-synced pair 1; {filters} PostFilter span(s))"
        );
    }
}
