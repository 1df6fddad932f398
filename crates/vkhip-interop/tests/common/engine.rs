//! An engine's instance and device, made as engines make them, for the crate's tests that borrow a
//! device (`Device::from_raw`): Vulkan 1.2 or 1.3, with or without `synchronization2` (core in
//! 1.3, `VK_KHR_synchronization2` on 1.2), with the Khronos validation layer and its
//! synchronization validation, and a debug-utils messenger that collects every warning and error.
#![allow(dead_code)]

use crate::skip;
use ash::vk;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;
use vkhip_interop::vulkan::{requirements, Device, Importer};
use vkhip_interop::ImageFormat;

pub const VALIDATION: &CStr = c"VK_LAYER_KHRONOS_validation";

/// How the engine makes its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// `VK_API_VERSION_1_2` or `VK_API_VERSION_1_3`, for the instance and the device.
    pub api_version: u32,
    /// Enable `synchronization2` (the 1.3 feature, or `VK_KHR_synchronization2` on 1.2).
    pub synchronization2: bool,
    /// Enable the crate's device extensions (`requirements(Importer::Hip)`: memory only, which is
    /// what lavapipe can export).
    pub crate_extensions: bool,
    /// Enable `maintenance4` (the 1.3 feature; with it the layer checks `maxBufferSize`).
    pub maintenance4: bool,
}

impl Shape {
    /// The shapes engines create: 1.2 and 1.3, each with and without `synchronization2`.
    pub const MATRIX: [Shape; 4] = [
        Shape {
            api_version: vk::API_VERSION_1_2,
            synchronization2: false,
            crate_extensions: true,
            maintenance4: false,
        },
        Shape {
            api_version: vk::API_VERSION_1_2,
            synchronization2: true,
            crate_extensions: true,
            maintenance4: false,
        },
        Shape {
            api_version: vk::API_VERSION_1_3,
            synchronization2: false,
            crate_extensions: true,
            maintenance4: false,
        },
        Shape {
            api_version: vk::API_VERSION_1_3,
            synchronization2: true,
            crate_extensions: true,
            maintenance4: false,
        },
    ];

    pub fn name(&self) -> String {
        format!(
            "Vulkan 1.{}{}",
            vk::api_version_minor(self.api_version),
            if self.synchronization2 { " + synchronization2" } else { "" }
        )
    }
}

/// The messenger's callback: every message into the engine's list (`user`).
unsafe extern "system" fn collect(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes a valid callback data struct for the duration of the call.
    let message = unsafe { (*data).message_as_c_str() }.map(|m| m.to_string_lossy().into_owned());
    let line = format!("{severity:?}: {}", message.unwrap_or_default());
    eprintln!("validation: {line}");
    // SAFETY: `user` is the engine's boxed list, which outlives the messenger.
    let list = unsafe { &*user.cast::<Mutex<Vec<String>>>() };
    list.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    vk::FALSE
}

pub struct Engine {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub family: u32,
    pub shape: Shape,
    /// Whether the validation layer is on (it is whenever it is installed).
    pub validated: bool,
    /// Validation warnings and errors so far (boxed: the messenger holds its address).
    messages: Box<Mutex<Vec<String>>>,
    /// [`Engine::finish`] destroyed the device already.
    device_destroyed: bool,
}

impl Engine {
    /// The engine, or `None` (after the skip line of tests/common/skip.rs; a failure under CI)
    /// when the validation layer is missing and `test` needs it.
    pub fn validated(test: &str, shape: Shape) -> Option<Engine> {
        if !skip::require(test, skip::Component::ValidationLayer) {
            return None;
        }
        Some(Engine::new(shape))
    }

    /// The engine, with the validation layer when it is installed.
    pub fn new(shape: Shape) -> Engine {
        // SAFETY: loads the system loader.
        let entry = unsafe { ash::Entry::load() }.expect("libvulkan1");
        // SAFETY: valid entry.
        let layers = unsafe { entry.enumerate_instance_layer_properties() }.expect("layers");
        let validated = layers.iter().any(|l| l.layer_name_as_c_str() == Ok(VALIDATION));
        let need = requirements(Importer::Hip);
        let app = vk::ApplicationInfo::default().api_version(shape.api_version);
        let layer_names: Vec<*const c_char> = if validated { vec![VALIDATION.as_ptr()] } else { vec![] };
        let mut exts: Vec<*const c_char> = need.instance_extensions.iter().map(|e| e.as_ptr()).collect();
        if validated {
            exts.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&exts);
        if validated {
            info = info.push_next(&mut features);
        }
        // SAFETY: valid entry; `info` points at live locals.
        let instance = unsafe { entry.create_instance(&info, None) }.expect("instance");
        let messages = Box::new(Mutex::new(Vec::new()));
        let messenger = validated.then(|| {
            let utils = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                        | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(collect))
                .user_data(std::ptr::from_ref::<Mutex<Vec<String>>>(&messages).cast_mut().cast());
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
        let mut exts: Vec<*const c_char> = if shape.crate_extensions {
            need.device_extensions.iter().map(|e| e.as_ptr()).collect()
        } else {
            vec![]
        };
        let v13 = shape.api_version >= vk::API_VERSION_1_3;
        if shape.synchronization2 && !v13 {
            exts.push(ash::khr::synchronization2::NAME.as_ptr());
        }
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let mut v13_features = vk::PhysicalDeviceVulkan13Features::default()
            .synchronization2(shape.synchronization2)
            .maintenance4(shape.maintenance4)
            .dynamic_rendering(true);
        let mut khr_sync2 =
            vk::PhysicalDeviceSynchronization2Features::default().synchronization2(shape.synchronization2);
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .push_next(&mut v12);
        if v13 {
            info = info.push_next(&mut v13_features);
        } else if shape.synchronization2 {
            info = info.push_next(&mut khr_sync2);
        }
        // SAFETY: valid physical device; live locals.
        let device = unsafe { instance.create_device(physical, &info, None) }.expect("device");
        Engine {
            entry,
            instance,
            messenger,
            physical,
            device,
            family,
            shape,
            validated,
            messages,
            device_destroyed: false,
        }
    }

    /// Hand the device to the crate (`Device::from_raw`).
    pub fn hand_over(&self) -> vkhip_interop::Result<Device> {
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

    /// The validation messages so far, taken (the list is emptied).
    pub fn take_messages(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Fail with every message when the layer said anything.
    #[track_caller]
    pub fn assert_silent(&self, what: &str) {
        let messages = self.take_messages();
        assert!(
            messages.is_empty(),
            "{what} on {}: {} validation message(s):\n{}",
            self.shape.name(),
            messages.len(),
            messages.join("\n")
        );
    }
}

impl Engine {
    /// Destroy the device (every Device handle of the crate is gone), then fail with every
    /// message the layer said, teardown included (a crate object left alive is reported by
    /// vkDestroyDevice).
    #[track_caller]
    pub fn finish(mut self, what: &str) {
        // SAFETY: the engine's device; the crate let go of it (the caller's word).
        unsafe { self.device.destroy_device(None) };
        self.device_destroyed = true;
        self.assert_silent(what);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: the engine's own objects, destroyed by the engine after the crate let go.
        unsafe {
            if !self.device_destroyed {
                self.device.destroy_device(None);
            }
            if let Some((utils, m)) = self.messenger.take() {
                utils.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// A clear colour per format, and the bytes one texel must then hold.
pub fn clear_colour(format: ImageFormat) -> ([f32; 4], Vec<u8>) {
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
