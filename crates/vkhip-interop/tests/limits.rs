//! Issue 33, item 1: a shared buffer or image the device cannot hold is refused before any Vulkan
//! call the specification forbids for it, with an error that names the limit it exceeds
//! (`Error::limit`, and the limit's name in the message), and the Khronos validation layer
//! reports nothing (tests/common/engine.rs: an engine's device with the layer and its
//! synchronization validation). The sizes come from the device's own limits (lavapipe in CI:
//! maxBufferSize 4 GiB − 1, one 2 GiB heap, maxMemoryAllocationSize 2 GiB, maxExtent 16384²,
//! maxResourceSize 4 GiB − 1).
//!
//! Limits lavapipe cannot reach on their own (maxMemoryAllocationSize below the heap,
//! maxMemoryAllocationCount, maxFramebufferWidth/Height below maxExtent) are checked by the pure
//! functions' unit tests (src/vulkan/limits.rs).

#[path = "common/engine.rs"]
mod engine;
#[path = "common/skip.rs"]
mod skip;

use ash::vk;
use engine::{Engine, Shape};
use vkhip_interop::{Error, ErrorKind, ImageFormat, Limit};

/// A 1.2 engine without synchronization2, and a 1.3 one with synchronization2 and maintenance4
/// (maxBufferSize is the 1.3 property on one, `VK_KHR_maintenance4`'s on the other).
const SHAPES: [Shape; 2] = [Shape::MATRIX[0], Shape { maintenance4: true, ..Shape::MATRIX[3] }];

/// The device's limits, read as the test's engine would.
struct Facts {
    max_buffer_size: u64,
    max_memory_allocation_size: u64,
    /// The size of the heap of the first device-local memory type (the crate's choice).
    heap: u64,
}

fn facts(engine: &Engine) -> Facts {
    let mut m3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut m4 = vk::PhysicalDeviceMaintenance4Properties::default();
    let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut m3).push_next(&mut m4);
    // SAFETY: the engine's live instance and physical device (Vulkan 1.3, VK_KHR_maintenance4:
    // lavapipe has both); live locals.
    unsafe { engine.instance.get_physical_device_properties2(engine.physical, &mut props) };
    // SAFETY: as above.
    let memory = unsafe { engine.instance.get_physical_device_memory_properties(engine.physical) };
    let types = &memory.memory_types[..memory.memory_type_count as usize];
    let local = types
        .iter()
        .find(|t| t.property_flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL))
        .unwrap_or(&types[0]);
    Facts {
        max_buffer_size: m4.max_buffer_size,
        max_memory_allocation_size: m3.max_memory_allocation_size,
        heap: memory.memory_heaps[local.heap_index as usize].size,
    }
}

/// `maxExtent` and `maxResourceSize` of `format` with the usage the crate gives it and OPAQUE_FD
/// export (the usage read from a 1×1 image the crate makes).
fn format_limits(
    engine: &Engine,
    device: &vkhip_interop::vulkan::Device,
    format: ImageFormat,
) -> (u32, u32, u64) {
    let usage = device.shared_image(format, 1, 1).expect("a 1x1 image").usage();
    let mut external_info = vk::PhysicalDeviceExternalImageFormatInfo::default()
        .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let info = vk::PhysicalDeviceImageFormatInfo2::default()
        .format(format.vk_format())
        .ty(vk::ImageType::TYPE_2D)
        .tiling(vk::ImageTiling::OPTIMAL)
        .usage(usage)
        .push_next(&mut external_info);
    let mut external = vk::ExternalImageFormatProperties::default();
    let mut props = vk::ImageFormatProperties2::default().push_next(&mut external);
    // SAFETY: the engine's live instance and physical device; live locals.
    unsafe {
        engine.instance.get_physical_device_image_format_properties2(engine.physical, &info, &mut props)
    }
    .expect("the crate made such an image");
    let p = props.image_format_properties;
    (p.max_extent.width, p.max_extent.height, p.max_resource_size)
}

/// `e` is the refusal for `limit`, its message naming the limit and `max` (the device's value).
#[track_caller]
fn assert_refused(e: &Error, limit: Limit, max: &str) {
    assert_eq!((e.kind(), e.limit(), e.call()), (ErrorKind::Unsupported, Some(limit), ""), "{e}");
    let named = format!("exceeds {} ({max}", limit.name());
    assert!(e.to_string().contains(&named), "'{named}' not in: {e}");
}

/// Before: `vkCreateBuffer` was called with the size (the driver's VK_ERROR_OUT_OF_DEVICE_MEMORY
/// came back as a failed call, `vkCreateBuffer failed (status -2)`), for a shared buffer and for
/// an imported one.
#[test]
fn buffers_above_max_buffer_size_are_refused_before_vk_create_buffer() {
    for shape in SHAPES {
        let test = "buffers_above_max_buffer_size_are_refused_before_vk_create_buffer";
        let Some(engine) = Engine::validated(test, shape) else { return };
        let f = facts(&engine);
        {
            let device = engine.hand_over().expect("hand over");
            let max = format!("{} bytes", f.max_buffer_size);
            // Above the device's own limit, whatever it is (the H200's is 2^40 bytes: 1 << 40 was
            // not above it there).
            for bytes in [f.max_buffer_size + 1, f.max_buffer_size.saturating_mul(2), u64::MAX] {
                let e = device.shared_buffer(bytes).err().expect("larger than maxBufferSize");
                assert_refused(&e, Limit::MaxBufferSize, &max);
                assert!(e.to_string().contains(&format!("a shared buffer of {bytes} bytes")), "{e}");
            }
            let buffer = device.shared_buffer(4096).expect("a buffer");
            let mut memory = buffer.export().expect("export");
            (memory.allocation_size, memory.size) = (f.max_buffer_size + 1, f.max_buffer_size + 1);
            let e = device.import_buffer(memory).err().expect("an import larger than maxBufferSize");
            assert_refused(&e, Limit::MaxBufferSize, &max);
        }
        engine.finish(&format!("buffers above maxBufferSize ({})", shape.name()));
    }
}

/// Before: the allocation reached `vkAllocateMemory` (VUID-vkAllocateMemory-pAllocateInfo-01713
/// from the layer); lavapipe then made the buffer (it allocates lazily) and refused the import.
#[test]
fn buffers_above_the_memory_heap_are_refused_before_vk_allocate_memory() {
    for shape in SHAPES {
        let test = "buffers_above_the_memory_heap_are_refused_before_vk_allocate_memory";
        let Some(engine) = Engine::validated(test, shape) else { return };
        let f = facts(&engine);
        // The smaller of the heap and maxMemoryAllocationSize is the one exceeded (the heap when
        // they are equal, as on lavapipe); the buffer itself fits maxBufferSize.
        let (limit, max) = if f.heap <= f.max_memory_allocation_size {
            (Limit::MemoryHeapSize, f.heap)
        } else {
            (Limit::MaxMemoryAllocationSize, f.max_memory_allocation_size)
        };
        let bytes = max + 4096;
        {
            let device = engine.hand_over().expect("hand over");
            if bytes <= f.max_buffer_size {
                let e = device.shared_buffer(bytes).err().expect("more than the device can allocate");
                assert_refused(&e, limit, &format!("{max} bytes"));
                let what = format!("the allocation of {bytes} bytes for a shared buffer");
                assert!(e.to_string().contains(&what), "{e}");
            } else {
                eprintln!("{test}: {bytes} bytes exceed maxBufferSize first here");
            }
            // An import of an allocation that large (the exporter's word) is refused the same way.
            let buffer = device.shared_buffer(4096).expect("a buffer");
            let mut memory = buffer.export().expect("export");
            memory.allocation_size = bytes;
            let e = device.import_buffer(memory).err().expect("an import larger than the heap");
            assert_refused(&e, limit, &format!("{max} bytes"));
            // The refusals leave nothing counted: the device still makes and imports buffers.
            let imported = device.import_buffer(buffer.export().expect("export")).expect("import");
            assert_eq!(imported.size(), 4096);
        }
        engine.finish(&format!("buffers above the memory heap ({})", shape.name()));
    }
}

/// Before: R32G32B32A32_SFLOAT at 16384 × 16384 (4 GiB) reached `vkCreateImage` (the layer's
/// UNASSIGNED-CoreValidation-Image-InvalidFormatLimitsViolation, "resource size exceeds
/// allowable maximum"), then `vkAllocateMemory` (VUID-…-01713), then failed in
/// `vkBindImageMemory`; at 16384 × 8193 (just over the 2 GiB heap) `vkAllocateMemory` was called
/// (VUID-…-01713) and lavapipe made the image. At 16385 × 1 the image was refused, without naming
/// the limit ("larger than the device's 16384x16384").
#[test]
fn images_above_the_format_extent_resource_size_or_heap_are_refused_before_the_call() {
    for shape in SHAPES {
        let test = "images_above_the_format_extent_resource_size_or_heap_are_refused_before_the_call";
        let Some(engine) = Engine::validated(test, shape) else { return };
        let f = facts(&engine);
        {
            let device = engine.hand_over().expect("hand over");
            let format = ImageFormat::Rgba32Float;
            let (max_w, max_h, max_resource) = format_limits(&engine, &device, format);
            let extent = format!("{max_w}x{max_h}");
            for (w, h) in [(max_w + 1, 1), (1, max_h + 1)] {
                let e = device.shared_image(ImageFormat::R32Float, w, h).err().expect("beyond maxExtent");
                assert_refused(&e, Limit::MaxExtent, &extent);
                assert!(e.to_string().contains(&format!("a R32_SFLOAT image of {w}x{h}")), "{e}");
            }
            // The least rows of the widest image that exceed maxResourceSize.
            let row = u64::from(max_w) * u64::from(format.texel_bytes());
            let rows = max_resource / row + 1;
            if rows <= u64::from(max_h) {
                let e =
                    device.shared_image(format, max_w, rows as u32).err().expect("beyond maxResourceSize");
                assert_refused(&e, Limit::MaxResourceSize, &format!("{max_resource} bytes"));
            } else {
                eprintln!("{test}: maxResourceSize ({max_resource} bytes) is beyond maxExtent here");
            }
            // The least rows that exceed the heap (or maxMemoryAllocationSize) but not
            // maxResourceSize.
            let (limit, max) = if f.heap <= f.max_memory_allocation_size {
                (Limit::MemoryHeapSize, f.heap)
            } else {
                (Limit::MaxMemoryAllocationSize, f.max_memory_allocation_size)
            };
            let rows = max / row + 1;
            if rows <= u64::from(max_h) && rows * row <= max_resource {
                let e = device.shared_image(format, max_w, rows as u32).err().expect("beyond the heap");
                assert_refused(&e, limit, &format!("{max} bytes"));
            } else {
                eprintln!("{test}: the heap ({max} bytes) is beyond maxExtent or maxResourceSize here");
            }
            // At the limits' edge the image is made.
            drop(device.shared_image(ImageFormat::R32Float, max_w, 1).expect("maxExtent wide"));
        }
        engine.finish(&format!("images above the limits ({})", shape.name()));
    }
}

/// Before: an exported image imported as a larger one (the exporter's allocation smaller than the
/// image needs) reached `vkBindImageMemory` (VUID-vkBindImageMemory-size-01049).
#[test]
fn an_import_smaller_than_its_object_needs_is_refused_before_binding() {
    let test = "an_import_smaller_than_its_object_needs_is_refused_before_binding";
    let Some(engine) = Engine::validated(test, SHAPES[1]) else { return };
    {
        let device = engine.hand_over().expect("hand over");
        let image = device.shared_image(ImageFormat::Rgba8Unorm, 64, 64).expect("image");
        let mut exported = image.export().expect("export");
        let allocation = exported.memory.allocation_size;
        (exported.width, exported.height) = (256, 256);
        let e = device.import_image(exported).err().expect("the allocation is too small");
        assert_eq!((e.kind(), e.limit()), (ErrorKind::Invalid, None), "{e}");
        let text = format!(
            "an imported allocation of {allocation} bytes is smaller than a R8G8B8A8_UNORM image of 256x256 needs"
        );
        assert!(e.to_string().contains(&text), "'{text}' not in: {e}");
        assert!(e.to_string().contains("VkMemoryRequirements::size"), "{e}");
        // The right shape imports.
        device.import_image(image.export().expect("export")).expect("the exported shape imports");
    }
    engine.finish("an import smaller than its image");
}
