//! The Vulkan side of the crate on whatever Vulkan device the machine has (Mesa's lavapipe in CI:
//! it exports memory but no semaphores). Everything up to the compute API: requirements, an own
//! device, a borrowed one (with the Khronos validation layer when installed), exported buffers and
//! images of every format, their barriers and read-backs checked texel by texel, and the refusals.

#[path = "common/skip.rs"]
mod skip;

use ash::vk;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use vkhip_interop::vulkan::{requirements, Device, Importer};
use vkhip_interop::{Api, ErrorKind, ImageFormat};

const VALIDATION: &CStr = c"VK_LAYER_KHRONOS_validation";

/// The clear colour per format, and the bytes one texel must then hold.
fn clear_and_expected(format: ImageFormat) -> ([f32; 4], Vec<u8>) {
    match format {
        ImageFormat::R32Float => ([0.5, 0.0, 0.0, 0.0], 0.5f32.to_le_bytes().to_vec()),
        ImageFormat::Rgba8Unorm => {
            ([51.0 / 255.0, 102.0 / 255.0, 153.0 / 255.0, 1.0], vec![51, 102, 153, 255])
        }
        // 0.25, 0.5, 0.75, 1.0 as IEEE halves.
        ImageFormat::Rgba16Float => (
            [0.25, 0.5, 0.75, 1.0],
            [0x3400u16, 0x3800, 0x3a00, 0x3c00].iter().flat_map(|h| h.to_le_bytes()).collect(),
        ),
        ImageFormat::Rgba32Float => {
            ([0.25, 0.5, 0.75, 1.0], [0.25f32, 0.5, 0.75, 1.0].iter().flat_map(|f| f.to_le_bytes()).collect())
        }
    }
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

    let (color, texel) = clear_and_expected(format);
    let d = device.ash();
    // SAFETY: one-shot command buffers of this device, recording.
    device.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) }).expect("prepare");
    let transfer = vk::PipelineStageFlags::TRANSFER;
    device
        .submit_one_shot(&[], &[], |cmd| {
            let range = vk::ImageSubresourceRange::default()
                .aspect_mask(vk::ImageAspectFlags::COLOR)
                .level_count(1)
                .layer_count(1);
            // SAFETY: recording; the image is in GENERAL after the prepare above.
            unsafe {
                image.cmd_acquire(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE));
                d.cmd_clear_color_image(
                    cmd,
                    image.image(),
                    vk::ImageLayout::GENERAL,
                    &vk::ClearColorValue { float32: color },
                    &[range],
                );
                image.cmd_release(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE));
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
    assert!(e.is_environment() && e.message().contains("larger than the device's"), "{e}");
}

#[test]
fn semaphore_export_is_refused_where_the_driver_cannot() {
    let device = Device::open(&[], Importer::Hip).expect("device");
    if device.capabilities().timeline_export {
        let t = device.shared_timeline(5).expect("timeline");
        assert_eq!(t.value().expect("value"), 5);
        t.signal(7).expect("host signal");
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

/// The messenger's callback: counts errors into the engine's counter (`user`).
unsafe extern "system" fn count_errors(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        // SAFETY: `user` is the engine's boxed counter, which outlives the messenger.
        unsafe { &*user.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the layer passes a valid callback data struct for the duration of the call.
        let message = unsafe { (*data).message_as_c_str() }.map(|m| m.to_string_lossy().into_owned());
        eprintln!("validation: {}", message.unwrap_or_default());
    }
    vk::FALSE
}

/// An engine's instance and device, as an engine makes them: with or without the crate's device
/// extensions, with the validation layer (and synchronization validation) when it is installed.
struct Engine {
    entry: ash::Entry,
    instance: ash::Instance,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    physical: vk::PhysicalDevice,
    device: ash::Device,
    family: u32,
    /// Validation errors reported so far (boxed: the messenger holds its address).
    errors: Box<AtomicUsize>,
}

impl Engine {
    fn new(with_crate_extensions: bool) -> Engine {
        // SAFETY: loads the system loader.
        let entry = unsafe { ash::Entry::load() }.expect("libvulkan1");
        // SAFETY: valid entry.
        let layers = unsafe { entry.enumerate_instance_layer_properties() }.expect("layers");
        let validation = layers.iter().any(|l| l.layer_name_as_c_str() == Ok(VALIDATION));
        if !validation {
            // The rule every test follows (this crate's tests/common/skip.rs): a line here, a failure in CI.
            let test = std::thread::current().name().unwrap_or("vulkan").to_string();
            skip::require_part(&test, "validation part", skip::Component::ValidationLayer);
        }
        let need = requirements(Importer::Hip);
        let app = vk::ApplicationInfo::default().api_version(need.api_version);
        let layer_names: Vec<*const c_char> = if validation { vec![VALIDATION.as_ptr()] } else { vec![] };
        let mut exts: Vec<*const c_char> = need.instance_extensions.iter().map(|e| e.as_ptr()).collect();
        if validation {
            exts.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&exts);
        if validation {
            info = info.push_next(&mut features);
        }
        // SAFETY: valid entry; `info` points at live locals.
        let instance = unsafe { entry.create_instance(&info, None) }.expect("instance");
        let errors = Box::new(AtomicUsize::new(0));
        let messenger = validation.then(|| {
            let utils = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                        | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL,
                )
                .pfn_user_callback(Some(count_errors))
                .user_data(std::ptr::from_ref::<AtomicUsize>(&errors).cast_mut().cast());
            // SAFETY: valid instance; the callback is a plain function.
            let m = unsafe { utils.create_debug_utils_messenger(&info, None) }.expect("messenger");
            (utils, m)
        });
        // SAFETY: valid instance.
        let physical = unsafe { instance.enumerate_physical_devices() }.expect("devices")[0];
        // SAFETY: valid physical device.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let family =
            families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS)).expect("graphics")
                as u32;
        let priorities = [1.0f32];
        let queues =
            [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
        let exts: Vec<*const c_char> = if with_crate_extensions {
            need.device_extensions.iter().map(|e| e.as_ptr()).collect()
        } else {
            vec![]
        };
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .push_next(&mut v12);
        // SAFETY: valid physical device; live locals.
        let device = unsafe { instance.create_device(physical, &info, None) }.expect("device");
        Engine { entry, instance, messenger, physical, device, family, errors }
    }

    fn hand_over(&self) -> vkhip_interop::Result<Device> {
        // SAFETY: the engine's handles are valid and outlive the returned Device (dropped first
        // in every test).
        unsafe {
            Device::from_raw(
                &self.entry,
                &self.instance,
                self.physical,
                &self.device,
                self.family,
                Importer::Hip,
            )
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: the engine's own objects, destroyed by the engine after the crate let go.
        unsafe {
            self.device.destroy_device(None);
            if let Some((utils, m)) = self.messenger.take() {
                utils.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

#[test]
fn borrowed_device_without_the_extensions_is_refused_by_name() {
    let engine = Engine::new(false);
    let e = engine.hand_over().err().expect("the export entry points do not resolve");
    assert_eq!(engine.errors.load(Ordering::SeqCst), 0, "validation errors (see stderr)");
    assert!(e.is_environment(), "{e}");
    assert!(e.to_string().contains("VK_KHR_external_memory_fd is not enabled on the device"), "{e}");
}

#[test]
fn borrowed_device_is_used_and_never_destroyed() {
    let engine = Engine::new(true);
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
    assert_eq!(engine.errors.load(Ordering::SeqCst), 0, "validation errors (see stderr)");
}
