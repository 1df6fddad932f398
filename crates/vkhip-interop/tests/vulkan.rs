//! The Vulkan side of the crate on whatever Vulkan device the machine has (Mesa's lavapipe in CI:
//! it exports memory but no semaphores). Everything up to the compute API: requirements, an own
//! device, a borrowed one (with the Khronos validation layer when installed), exported buffers and
//! images of every format, their barriers and read-backs checked texel by texel, and the refusals.

#[path = "common/engine.rs"]
mod engine;
#[path = "common/skip.rs"]
mod skip;

use ash::vk;
use engine::{Engine, Shape};
use vkhip_interop::vulkan::{requirements, Device, ImageAccess, Importer};
use vkhip_interop::{Api, ErrorKind, ImageFormat, Limit};

/// An engine of Vulkan 1.2 without synchronization2, with or without the crate's extensions,
/// validated when the layer is installed (a skip line for that part otherwise; a failure in CI).
fn engine(test: &str, crate_extensions: bool) -> Engine {
    skip::require_part(test, "validation part", skip::Component::ValidationLayer);
    Engine::new(Shape { crate_extensions, ..Shape::MATRIX[0] })
}

/// Prepare `image`, clear it on the Vulkan queue (acquire, clear, release), read it back, and
/// check every texel.
fn clear_and_check(device: &Device, format: ImageFormat, width: u32, height: u32) {
    let image = device.shared_image(format, width, height).expect("an exportable image");
    let exported = image.export().expect("export");
    assert_eq!((exported.format, exported.width, exported.height), (format, width, height));
    assert!(exported.memory.fd.raw() >= 0);
    assert_eq!(exported.memory.size, exported.memory.allocation_size);
    let min = u64::from(width * height * format.texel_bytes());
    assert!(exported.memory.allocation_size >= min, "{format}: {} < {min}", exported.memory.allocation_size);

    let (color, texel) = engine::clear_colour(format);
    let d = device.ash();
    // SAFETY: one-shot command buffers of this device, recording.
    device.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) }).expect("prepare");
    device
        .submit_one_shot(&[], &[], |cmd| {
            let range = vk::ImageSubresourceRange::default()
                .aspect_mask(vk::ImageAspectFlags::COLOR)
                .level_count(1)
                .layer_count(1);
            // SAFETY: recording; the image is in GENERAL after the prepare above.
            unsafe {
                image.cmd_acquire(cmd, ImageAccess::TRANSFER_WRITE);
                d.cmd_clear_color_image(
                    cmd,
                    image.image(),
                    ImageAccess::TRANSFER_WRITE.layout(),
                    &vk::ClearColorValue { float32: color },
                    &[range],
                );
                image.cmd_release(cmd, ImageAccess::TRANSFER_WRITE);
            }
        })
        .expect("clear");
    let bytes = device.read_image(&image, None, None).expect("read back");
    assert_eq!(bytes.len() as u64, min);
    for (i, got) in bytes.chunks(texel.len()).enumerate() {
        assert_eq!(got, &texel[..], "{format}: texel {i} ({}, {})", i as u32 % width, i as u32 / width);
    }
}

#[test]
fn requirements_name_what_each_importer_needs() {
    let cuda = requirements(Importer::Cuda);
    assert_eq!(cuda.api_version, vk::API_VERSION_1_2);
    assert!(cuda.device_extensions.contains(&ash::khr::external_semaphore_fd::NAME));
    assert!(cuda.optional_device_extensions.is_empty());
    let hip = requirements(Importer::Hip);
    assert_eq!(hip.device_extensions, [ash::khr::external_memory_fd::NAME]);
    assert_eq!(hip.optional_device_extensions, [ash::khr::external_semaphore_fd::NAME]);
}

#[test]
fn own_device_exports_buffers_and_images_of_every_format() {
    let device =
        Device::open(&[], Importer::Hip).expect("a Vulkan device that exports memory (lavapipe does)");
    assert!(device.describe().contains("deviceUUID"), "{}", device.describe());

    let buffer = device.shared_buffer(4096).expect("buffer");
    let (a, b) = (buffer.export().expect("export"), buffer.export().expect("export"));
    assert!(a.allocation_size >= 4096 && a.size == 4096);
    assert_ne!(a.fd.raw(), b.fd.raw(), "every export is a new fd");
    let zero = device.shared_buffer(0).err().expect("0 bytes refused");
    assert_eq!(zero.kind(), ErrorKind::Invalid);

    for format in ImageFormat::ALL {
        clear_and_check(&device, format, 67, 33);
    }
    let e = device.shared_image(ImageFormat::R32Float, 0, 8).err().expect("empty image refused");
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let e = device.shared_image(ImageFormat::R32Float, 1 << 20, 8).err().expect("huge image refused");
    assert!(e.is_environment() && e.message().contains("exceeds VkImageFormatProperties::maxExtent"), "{e}");
    assert_eq!(e.limit(), Some(Limit::MaxExtent), "{e}");
}

#[test]
fn semaphore_export_is_refused_where_the_driver_cannot() {
    let device = Device::open(&[], Importer::Hip).expect("device");
    if device.capabilities().timeline_export {
        let t = device.shared_timeline(5).expect("timeline");
        assert_eq!(t.value().expect("value"), 5);
        t.signal(7).expect("host signal");
        let e = t.signal(7).expect_err("a value that does not grow is refused");
        assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
        t.wait(7, std::time::Duration::from_secs(1)).expect("host wait on a value Vulkan has");
        assert!(t.export().expect("export").raw() >= 0);
        return;
    }
    // lavapipe: exports memory, refuses every exportable semaphore.
    let e = device.shared_timeline(0).err().expect("refused");
    assert!(e.is_environment() && e.api() == Api::Vulkan, "{e}");
    assert!(e.to_string().contains("cannot export timeline semaphores"), "{e}");
    let e = Device::open(&[], Importer::Cuda).err().expect("CUDA needs timeline export");
    assert!(e.is_environment(), "{e}");
    assert!(e.to_string().contains("timeline semaphores"), "{e}");
}

#[test]
fn borrowed_device_without_the_extensions_is_refused_by_name() {
    let engine = engine("borrowed_device_without_the_extensions_is_refused_by_name", false);
    let e = engine.hand_over().err().expect("the export entry points do not resolve");
    engine.finish("a refused hand-over");
    assert!(e.is_environment(), "{e}");
    assert!(e.to_string().contains("VK_KHR_external_memory_fd is not enabled on the device"), "{e}");
}

/// Issue 26, item 7: a queue family the device does not have is refused when the device is
/// lent, not at the first submission (before: accepted, and `read_buffer` asked the driver for
/// queue 0 of family 99).
#[test]
fn borrowed_device_with_a_queue_family_out_of_range_is_refused() {
    let engine = engine("borrowed_device_with_a_queue_family_out_of_range_is_refused", true);
    // SAFETY: the engine's handles are valid and outlive the call; the family is what is tested.
    let lent = unsafe {
        Device::from_raw(&engine.entry, &engine.instance, engine.physical, &engine.device, 99, Importer::Hip)
    };
    let e = lent.err().expect("family 99 refused");
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
    assert!(e.to_string().contains("queue family 99: the device has"), "{e}");
    engine.finish("a refused queue family");
}

#[test]
fn borrowed_device_is_used_and_never_destroyed() {
    let engine = engine("borrowed_device_is_used_and_never_destroyed", true);
    {
        let device = engine.hand_over().expect("hand over");
        let buffer = device.shared_buffer(1 << 16).expect("buffer");
        assert!(buffer.export().expect("export").fd.raw() >= 0);
        for format in ImageFormat::ALL {
            clear_and_check(&device, format, 16, 9);
        }
        let e = device.check_uuid(Api::Cuda, [7; 16]).expect_err("another GPU");
        assert!(e.is_environment() && e.to_string().contains("is not the Vulkan device's"), "{e}");
        device.check_uuid(Api::Cuda, device.uuid()).expect("same GPU");
    }
    // The crate let go: the engine's device still works (a destroyed device would crash here or
    // be reported by the validation layer).
    let info = vk::BufferCreateInfo::default().size(64).usage(vk::BufferUsageFlags::STORAGE_BUFFER);
    // SAFETY: the engine's live device.
    let b = unsafe { engine.device.create_buffer(&info, None) }.expect("the engine's device is alive");
    // SAFETY: unused buffer of the engine's device.
    unsafe { engine.device.destroy_buffer(b, None) };
    engine.finish("the borrowed device's exports, clears and read-backs");
}

#[test]
fn buffers_are_written_filled_and_read_by_vulkan_and_mapped_where_host_visible() {
    let device = Device::open(&[], Importer::Hip).expect("a Vulkan device that exports memory");
    let buffer = device.shared_buffer(4096).expect("buffer");
    let mut edges = Vec::new();
    device.fill_buffer(&buffer, 0x4049_0fdb, 1024, None, None, &mut |_, e| edges.push(e)).expect("fill");
    assert_eq!(edges, [vkhip_interop::vulkan::Edge::Begin, vkhip_interop::vulkan::Edge::End]);
    let bytes = device.read_buffer(&buffer, None, None).expect("read");
    assert!(bytes.chunks(4).all(|w| w == 0x4049_0fdbu32.to_ne_bytes()), "every word is the fill");
    let data: Vec<u8> = (0..4000u32).map(|i| (i * 7 % 251) as u8).collect();
    device.write_buffer(&buffer, &data, None, None, &mut |_, _| {}).expect("write");
    let bytes = device.read_buffer(&buffer, None, None).expect("read");
    assert_eq!(&bytes[..4000], &data[..], "the written bytes");
    assert!(bytes[4000..].chunks(4).all(|w| w == 0x4049_0fdbu32.to_ne_bytes()), "the tail kept the fill");
    // The refusals come before any call.
    let e = device.write_buffer(&buffer, &[0; 4097], None, None, &mut |_, _| {}).unwrap_err();
    assert!(e.kind() == ErrorKind::Invalid && e.to_string().contains("4097 bytes"), "{e}");
    let e = device.fill_buffer(&buffer, 0, 1025, None, None, &mut |_, _| {}).unwrap_err();
    assert!(e.kind() == ErrorKind::Invalid && e.to_string().contains("1025 words"), "{e}");
    // lavapipe's memory is host-visible: the host sees what Vulkan wrote, and Vulkan what the host writes.
    if let Some(p) = buffer.host_ptr().expect("map") {
        // SAFETY: the mapping covers the 4096-byte buffer; the one-shot submissions finished.
        let host = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), 4096) };
        assert_eq!(&host[..4000], &data[..]);
        host.fill(0x5a);
        assert_eq!(buffer.host_ptr().expect("mapped once").map(|q| q.as_ptr()), Some(p.as_ptr()));
        assert!(device.read_buffer(&buffer, None, None).expect("read").iter().all(|&b| b == 0x5a));
    } else {
        assert!(std::env::var_os("CI").is_none(), "CI's lavapipe maps device-local memory");
    }
}

#[test]
fn submitter_fills_without_waiting_and_finishes_on_drop() {
    let device = Device::open(&[], Importer::Hip).expect("a Vulkan device that exports memory");
    let buffers: Vec<_> = (0..3).map(|_| device.shared_buffer(1 << 12).expect("buffer")).collect();
    let mut submitter = vkhip_interop::vulkan::Submitter::new(&device).expect("submitter");
    for round in 0..4u32 {
        for (i, b) in buffers.iter().enumerate() {
            submitter.fill_buffer(b, round * 10 + i as u32, 1024, &[], None, &mut |_, _| {}).expect("fill");
        }
    }
    assert!(submitter.in_flight() <= 12);
    let e = submitter.fill_buffer(&buffers[0], 0, 1025, &[], None, &mut |_, _| {}).unwrap_err();
    assert!(e.to_string().contains("1025 words"), "{e}");
    submitter.finish().expect("finish");
    assert_eq!(submitter.in_flight(), 0);
    for (i, b) in buffers.iter().enumerate() {
        let bytes = device.read_buffer(b, None, None).expect("read");
        let want = (30 + i as u32).to_ne_bytes();
        assert!(bytes.chunks(4).all(|w| w == want), "buffer {i} holds the last round's fill");
    }
    submitter.fill_buffer(&buffers[1], 7, 1, &[], None, &mut |_, _| {}).expect("fill");
    drop(submitter); // waits for the fill before the pool goes
    assert_eq!(&device.read_buffer(&buffers[1], None, None).expect("read")[..4], &7u32.to_ne_bytes());
}

/// `Device::open_matching` opens the Vulkan device with the compute device's UUID and no other:
/// lavapipe's own UUID opens it; a UUID no Vulkan device has is an environment error naming the
/// compute device asked for and the Vulkan devices there are (Vulkan's indices).
#[test]
fn open_matching_takes_the_device_with_the_uuid_or_none() {
    use vkhip_interop::device_match::ComputeDevice;
    let any = Device::open(&[], Importer::Hip).expect("a Vulkan device that exports memory (lavapipe)");
    let uuid = any.uuid();
    let name = any.capabilities().name.clone();
    drop(any);
    let same = Device::open_matching(&ComputeDevice::new(0, "the same GPU", uuid), Importer::Hip)
        .expect("the device with that UUID");
    assert_eq!(same.uuid(), uuid);
    drop(same);
    let e = match Device::open_matching(&ComputeDevice::new(3, "elsewhere", [0x5a; 16]), Importer::Hip) {
        Ok(_) => panic!("a device without that UUID was opened"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.is_environment());
    let text = e.to_string();
    let asked = "vulkan: HIP device 3 (elsewhere, UUID 5a5a5a5a-5a5a-5a5a-5a5a-5a5a5a5a5a5a) is not one of the Vulkan devices: [";
    assert!(text.starts_with(asked), "{text}");
    // The device that was opened above is among those listed, with its UUID.
    let listed = format!("] {name} (UUID {})", vkhip_interop::vulkan::uuid_string(&uuid));
    assert!(text.contains(&listed), "{text}\nlacks: {listed}");
}
