//! Shared images and buffers on every device shape an engine creates (Vulkan 1.2 and 1.3, with
//! and without `synchronization2`), under the Khronos validation layer with synchronization
//! validation: every hand-off in both directions, 0 messages, every texel checked. The compute
//! API's side is played by a second Vulkan device that imports the exported memory (lavapipe
//! exports and imports OPAQUE_FD memory, but no semaphores: the host orders the two devices).

#[path = "common/engine.rs"]
mod engine;
#[path = "common/skip.rs"]
mod skip;

use ash::vk;
use engine::{Engine, Shape};
use vkhip_interop::vulkan::{Device, ImageAccess, Importer, SharedImage};
use vkhip_interop::{ErrorKind, ImageFormat, Limit};

const WIDTH: u32 = 13;
const HEIGHT: u32 = 7;

/// Before the fix, the first read-back after `cmd_prepare` on a synchronization2 device was
/// reported ("expects GENERAL, current UNDEFINED").
#[test]
fn prepared_image_reads_back_without_validation_messages_on_every_shape() {
    for shape in Shape::MATRIX {
        let test = "prepared_image_reads_back_without_validation_messages_on_every_shape";
        let Some(engine) = Engine::validated(test, shape) else { return };
        {
            let device = engine.hand_over().expect("hand over");
            let image = device.shared_image(ImageFormat::Rgba8Unorm, 5, 3).expect("image");
            // SAFETY: a one-shot command buffer of `device`, recording; the image is new.
            device.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) }).expect("prepare");
            device.read_image(&image, None, None).expect("read back");
            device.read_image(&image, None, None).expect("read back again");
        }
        engine.finish("prepare, then read_image twice");
    }
}

/// Render into `image` (new, Vulkan first) through a render pass that clears it to `color`, then
/// release it to the compute API: prepare_for_vulkan → draw → release.
fn render_clear(device: &Device, image: &SharedImage, color: [f32; 4]) {
    let d = device.ash();
    let format = image.format().vk_format();
    let (width, height) = image.extent();
    let write = ImageAccess::COLOR_ATTACHMENT_WRITE;
    let attachment = [vk::AttachmentDescription::default()
        .format(format)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .initial_layout(write.layout())
        .final_layout(write.layout())];
    let refs = [vk::AttachmentReference::default().attachment(0).layout(write.layout())];
    let subpass = [vk::SubpassDescription::default().color_attachments(&refs)];
    let info = vk::RenderPassCreateInfo::default().attachments(&attachment).subpasses(&subpass);
    // SAFETY: valid device; live locals.
    let pass = unsafe { d.create_render_pass(&info, None) }.expect("render pass");
    let range = vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(1);
    let view_info = vk::ImageViewCreateInfo::default()
        .image(image.image())
        .view_type(vk::ImageViewType::TYPE_2D)
        .format(format)
        .subresource_range(range);
    // SAFETY: a live image with COLOR_ATTACHMENT usage.
    let view = unsafe { d.create_image_view(&view_info, None) }.expect("view");
    let views = [view];
    let fb_info = vk::FramebufferCreateInfo::default()
        .render_pass(pass)
        .attachments(&views)
        .width(width)
        .height(height)
        .layers(1);
    // SAFETY: as above.
    let framebuffer = unsafe { d.create_framebuffer(&fb_info, None) }.expect("framebuffer");
    device
        .submit_one_shot(&[], &[], |cmd| {
            let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: color } }];
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(pass)
                .framebuffer(framebuffer)
                .render_area(vk::Rect2D {
                    offset: vk::Offset2D::default(),
                    extent: vk::Extent2D { width, height },
                })
                .clear_values(&clear);
            // SAFETY: recording on the device's queue family; the image is new.
            unsafe {
                image.cmd_prepare_for_vulkan(cmd, write);
                d.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE);
                d.cmd_end_render_pass(cmd);
                image.cmd_release(cmd, write);
            }
        })
        .expect("render");
    // SAFETY: the one-shot submission finished.
    unsafe {
        d.destroy_framebuffer(framebuffer, None);
        d.destroy_image_view(view, None);
        d.destroy_render_pass(pass, None);
    }
}

/// A byte pattern of `len` bytes (bit-exact through copies, whatever the format).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed ^ (i / 251) as u8)).collect()
}

/// The compute API's side, played by device `b` on the imported image: it reads what Vulkan
/// rendered (checked against `rendered`), then writes `bytes` over it (acquire → copy → release).
fn external_reads_then_writes(b: &Device, image: &SharedImage, rendered: &[u8], bytes: &[u8]) {
    let got = b.read_image(image, None, None).expect("the external side reads");
    let texel = rendered.len();
    for (i, t) in got.chunks(texel).enumerate() {
        assert_eq!(t, rendered, "{}: texel {i} as the external side reads it", image.format());
    }
    let staging = b.shared_buffer(bytes.len() as u64).expect("staging");
    let (width, height) = image.extent();
    b.submit_one_shot(&[], &[], |cmd| {
        let region = vk::BufferImageCopy::default()
            .image_subresource(
                vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1),
            )
            .image_extent(vk::Extent3D { width, height, depth: 1 });
        let written = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ);
        let write = ImageAccess::TRANSFER_WRITE;
        // SAFETY: recording on b; the buffer holds the whole image; ≤ 64 KiB for the update.
        unsafe {
            b.ash().cmd_update_buffer(cmd, staging.buffer(), 0, bytes);
            let transfer = vk::PipelineStageFlags::TRANSFER;
            b.ash().cmd_pipeline_barrier(
                cmd,
                transfer,
                transfer,
                vk::DependencyFlags::empty(),
                &[written],
                &[],
                &[],
            );
            image.cmd_acquire(cmd, write);
            b.ash().cmd_copy_buffer_to_image(cmd, staging.buffer(), image.image(), write.layout(), &[region]);
            image.cmd_release(cmd, write);
        }
    })
    .expect("the external side writes");
}

/// Vulkan renders → the compute API reads and writes → Vulkan samples and copies, on every
/// shape and format; then a buffer both ways. 0 validation messages, every byte checked.
#[test]
fn images_and_buffers_hand_off_both_ways_on_every_shape() {
    for shape in Shape::MATRIX {
        let Some(engine) = Engine::validated("images_and_buffers_hand_off_both_ways_on_every_shape", shape)
        else {
            return;
        };
        {
            let a = engine.hand_over().expect("hand over");
            let b = Device::open(&[a.uuid()], Importer::Hip).expect("the second device (the external side)");
            for format in ImageFormat::ALL {
                let image = a.shared_image(format, WIDTH, HEIGHT).expect("image");
                assert!(
                    image.usage().contains(vk::ImageUsageFlags::COLOR_ATTACHMENT),
                    "{format}: {:?}",
                    image.usage()
                );
                let (color, texel) = engine::clear_colour(format);
                render_clear(&a, &image, color);
                let exported = image.export().expect("export");
                assert!(exported.color_attachment, "{format}: the importer is told it is a render target");
                let imported = b.import_image(exported).expect("import");
                let bytes =
                    pattern((WIDTH * HEIGHT * format.texel_bytes()) as usize, format.texel_bytes() as u8);
                external_reads_then_writes(&b, &imported, &texel, &bytes);
                // Vulkan takes it back for a fragment shader's sampling, then a copy, and hands
                // it back: acquire → transition → release.
                let sampled = ImageAccess::sampled(vk::PipelineStageFlags::FRAGMENT_SHADER);
                a.submit_one_shot(&[], &[], |cmd| {
                    // SAFETY: recording on a; the external side released the image.
                    unsafe {
                        image.cmd_acquire(cmd, sampled);
                        image.cmd_transition(cmd, sampled, ImageAccess::TRANSFER_READ);
                        image.cmd_release(cmd, ImageAccess::TRANSFER_READ);
                    }
                })
                .expect("sampled, then copied");
                let got = a.read_image(&image, None, None).expect("Vulkan reads back");
                assert!(
                    got == bytes,
                    "{format} on {}: Vulkan must read what the external side wrote",
                    shape.name()
                );
            }
            let first = pattern(4096, 1);
            let buffer = a.shared_buffer(first.len() as u64).expect("buffer");
            let transfer = vk::PipelineStageFlags::TRANSFER;
            a.submit_one_shot(&[], &[], |cmd| {
                // SAFETY: recording on a; 4 KiB ≤ vkCmdUpdateBuffer's 64 KiB.
                unsafe {
                    a.ash().cmd_update_buffer(cmd, buffer.buffer(), 0, &first);
                    buffer.cmd_release(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE));
                }
            })
            .expect("Vulkan writes the buffer");
            let imported = b.import_buffer(buffer.export().expect("export")).expect("import");
            let copy = b.shared_buffer(first.len() as u64).expect("b's buffer");
            let second = pattern(4096, 2);
            b.submit_one_shot(&[], &[], |cmd| {
                let region = vk::BufferCopy { src_offset: 0, dst_offset: 0, size: 4096 };
                let copied = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFER_READ)
                    .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
                // SAFETY: recording on b; both buffers are b's and 4 KiB long.
                unsafe {
                    b.ash().cmd_copy_buffer(cmd, imported.buffer(), copy.buffer(), &[region]);
                    b.ash().cmd_pipeline_barrier(
                        cmd,
                        transfer,
                        transfer,
                        vk::DependencyFlags::empty(),
                        &[copied],
                        &[],
                        &[],
                    );
                    b.ash().cmd_update_buffer(cmd, imported.buffer(), 0, &second);
                }
            })
            .expect("the external side reads and writes the buffer");
            assert!(
                b.read_buffer(&copy, None, None).expect("read") == first,
                "the external side reads Vulkan's bytes"
            );
            assert!(
                a.read_buffer(&buffer, None, None).expect("read") == second,
                "Vulkan reads the external side's bytes"
            );
        }
        engine.finish("render → external read and write → sample and copy; a buffer both ways");
    }
}

/// The Vulkan half of examples/cuda_post_process.rs on every shape: two new images, one cleared
/// and blitted into (the frame), both handed to the compute API in one command buffer, then read
/// back: 0 messages, and the frame holds the background with the blitted rectangle.
#[test]
fn cleared_and_blitted_frame_hands_off_cleanly_on_every_shape() {
    for shape in Shape::MATRIX {
        let test = "cleared_and_blitted_frame_hands_off_cleanly_on_every_shape";
        let Some(engine) = Engine::validated(test, shape) else { return };
        {
            let vk = engine.hand_over().expect("hand over");
            let frame = vk.shared_image(ImageFormat::Rgba8Unorm, WIDTH, HEIGHT).expect("frame");
            let output = vk.shared_image(ImageFormat::Rgba8Unorm, WIDTH, HEIGHT).expect("output");
            let (d, write, read) = (vk.ash(), ImageAccess::TRANSFER_WRITE, ImageAccess::TRANSFER_READ);
            let range = vk::ImageSubresourceRange::default()
                .aspect_mask(vk::ImageAspectFlags::COLOR)
                .level_count(1)
                .layer_count(1);
            let layers =
                vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1);
            let at = |x, y, z| vk::Offset3D { x, y, z };
            let blit = vk::ImageBlit {
                src_subresource: layers,
                src_offsets: [at(0, 0, 0), at(1, 1, 1)],
                dst_subresource: layers,
                dst_offsets: [at(2, 1, 0), at(9, 5, 1)],
            };
            let colour = |v: f32| vk::ClearColorValue { float32: [v, v, v, 1.0] };
            vk.submit_one_shot(&[], &[], |cmd| {
                // SAFETY: recording on vk; both images are new, then Vulkan's until released.
                unsafe {
                    for (image, v) in [(&frame, 0.2), (&output, 0.8)] {
                        image.cmd_prepare_for_vulkan(cmd, write);
                        d.cmd_clear_color_image(cmd, image.image(), write.layout(), &colour(v), &[range]);
                    }
                    frame.cmd_transition(cmd, write, write);
                    output.cmd_transition(cmd, write, read);
                    let (src, dst) = (output.image(), frame.image());
                    d.cmd_blit_image(
                        cmd,
                        src,
                        read.layout(),
                        dst,
                        write.layout(),
                        &[blit],
                        vk::Filter::NEAREST,
                    );
                    frame.cmd_release(cmd, write);
                    output.cmd_release(cmd, read);
                }
            })
            .expect("draw and hand over");
            let got = vk.read_image(&frame, None, None).expect("read the frame");
            for (t, texel) in got.chunks(4).enumerate() {
                let (x, y) = (t as i32 % WIDTH as i32, t as i32 / WIDTH as i32);
                let v = if (2..9).contains(&x) && (1..5).contains(&y) { 204 } else { 51 };
                assert_eq!(texel, [v, v, v, 255], "texel ({x}, {y}) on {}", shape.name());
            }
            vk.read_image(&output, None, None).expect("read the output");
        }
        engine.finish("clear, blit, hand over both, read back");
    }
}

/// Sizes and uses the device cannot serve are refused with typed errors before any object is
/// made; objects outlive the handles they were made from where the types let them.
#[test]
fn hostile_images_are_refused_and_drop_order_is_free() {
    let shape = Shape::MATRIX[3];
    let Some(engine) = Engine::validated("hostile_images_are_refused_and_drop_order_is_free", shape) else {
        return;
    };
    {
        let a = engine.hand_over().expect("hand over");
        for (w, h) in [(0, 8), (8, 0), (0, 0)] {
            let e = a.shared_image(ImageFormat::Rgba8Unorm, w, h).err().expect("empty image refused");
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
        }
        // SAFETY: a plain query of the engine's physical device.
        let limits = unsafe { engine.instance.get_physical_device_properties(engine.physical) }.limits;
        for (w, h) in [(limits.max_image_dimension2_d + 1, 1), (1, u32::MAX), (u32::MAX, u32::MAX)] {
            let e = a.shared_image(ImageFormat::Rgba32Float, w, h).err().expect("huge image refused");
            assert!(e.is_environment(), "{e}");
            let text = e.to_string();
            assert_eq!(e.limit(), Some(Limit::MaxExtent), "{text}");
            assert!(
                text.contains("exceeds VkImageFormatProperties::maxExtent")
                    && text.contains("R32G32B32A32_SFLOAT"),
                "{text}"
            );
            assert!(text.contains("COLOR_ATTACHMENT") && text.contains("STORAGE"), "names the usage: {text}");
        }
        // Objects keep their device: the image outlives every Device handle, its import
        // outlives the image, and the second device outlives neither of its own objects' needs.
        let image = {
            let short = engine.hand_over().expect("a second handle");
            short.shared_image(ImageFormat::R32Float, 4, 4).expect("image")
        };
        let b = Device::open(&[a.uuid()], Importer::Hip).expect("device b");
        let exported = image.export().expect("export after its Device handle is gone");
        let mut bad = image.export().expect("export");
        bad.width = 0;
        assert_eq!(b.import_image(bad).err().expect("empty import refused").kind(), ErrorKind::Invalid);
        let imported = b.import_image(exported).expect("import");
        let e = imported.export().expect_err("an import is not exported again");
        assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
        // SAFETY: a one-shot command buffer of `a`, recording; the image is new.
        a.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) }).expect("prepare");
        drop(image);
        drop(a);
        assert_eq!(b.read_image(&imported, None, None).expect("read through the import").len(), 64);
        drop(b);
        drop(imported);
        // A recording closure that panics leaves the crate's lock poisoned: the device still
        // submits, and still destroys its command pool and fence when dropped (the engine's
        // vkDestroyDevice below would report them otherwise).
        let c = engine.hand_over().expect("hand over");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.submit_one_shot(&[], &[], |_| panic!("a recording closure fails"))
        }));
        assert!(panicked.is_err());
        c.submit_one_shot(&[], &[], |_| {}).expect("submits after a panic");
    }
    engine.finish("refusals, drop orders and a panicking recording");
}
