//! Physical-device facts, the selection rule, and the logical device with its queue.
//!
//! Selection (`choose_device`, pure and unit-tested): `--device N` wins; otherwise the device whose
//! deviceUUID matches the compute backend's device; otherwise discrete > integrated > virtual >
//! CPU, first in enumeration order on a tie. Only devices with a graphics queue and timeline
//! semaphores are candidates; for a window, only those that can present to it
//! ([`PhysicalDeviceInfo::cannot_present`]).

use super::instance::Instance;
use super::{CallContext, VkError};
use ash::{khr, vk};
use std::ffi::CStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use vkhip_interop::cuda_in_vulkan::Support as CudaInVulkanSupport;
use vkhip_interop::vulkan::{requirements, wait, Device as InteropDevice, Importer};

/// How long a host wait on a Vulkan semaphore may take before the run fails with a clear message.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The schedule of [`Context::wait_timeline`] in validation runs, where it polls instead of
/// blocking (see `Context::poll_timeline`): Vulkan's own values, so no spin, and sleeps from
/// 20 µs growing to 1 ms.
const VALIDATION_BACKOFF: wait::Backoff = wait::Backoff {
    spin: Duration::ZERO,
    first_sleep: Duration::from_micros(20),
    max_sleep: Duration::from_millis(1),
};

/// A failed host wait of the interop crate as the app's error, as the app's own waits report
/// them: a timeout names what was awaited (`what`); a failed Vulkan call (a lost device) is that
/// call and its result; anything else stays the crate's error.
fn wait_error(e: vkhip_interop::Error, what: impl FnOnce() -> String) -> VkError {
    let result = e.status().and_then(|s| i32::try_from(s).ok()).map(vk::Result::from_raw);
    match (e.kind(), e.api(), result) {
        (vkhip_interop::ErrorKind::Timeout, ..) => {
            VkError::Timeout { what: what(), seconds: WAIT_TIMEOUT.as_secs() }
        }
        (_, vkhip_interop::Api::Vulkan, Some(result)) => VkError::Call { call: e.call(), result },
        _ => VkError::Interop(e),
    }
}

/// `--device`: a Vulkan device index (Vulkan's order, as `vkhip info` lists them) or the GPU of
/// a CUDA ordinal (CUDA's order, after `CUDA_VISIBLE_DEVICES`; the two orders need not agree).
///
/// ```
/// use vkhip::vk::device::DeviceArg;
/// assert_eq!("2".parse::<DeviceArg>(), Ok(DeviceArg::Vulkan(2)));
/// assert_eq!("cuda:1".parse::<DeviceArg>(), Ok(DeviceArg::Cuda(1)));
/// assert_eq!(DeviceArg::Cuda(1).to_string(), "cuda:1");
/// assert!("gpu1".parse::<DeviceArg>().unwrap_err().starts_with("\"gpu1\": expected"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceArg {
    /// `N` or `vulkan:N`: Vulkan's physical device N.
    Vulkan(usize),
    /// `cuda:N`: the Vulkan device with the deviceUUID of CUDA device N.
    Cuda(i32),
}

impl std::str::FromStr for DeviceArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("{s:?}: expected a Vulkan device index (0, 1, …) or cuda:N (a CUDA ordinal); `vkhip info` lists both")
        };
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let (api, number) = s.split_once(':').unwrap_or(("vulkan", s));
        if !digits(number) {
            return Err(bad());
        }
        match api {
            "vulkan" => number.parse().map(DeviceArg::Vulkan).map_err(|_| bad()),
            "cuda" => number.parse().map(DeviceArg::Cuda).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for DeviceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceArg::Vulkan(i) => write!(f, "{i}"),
            DeviceArg::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// The Vulkan index `--device` names among `devices`: a Vulkan index as given (checked later,
/// by [`choose_device`]); `cuda:N` through CUDA device N's UUID (the interop crate's rule,
/// [`vkhip_interop::device_match`]). No CUDA, or no such CUDA device, or none of `devices` with
/// its UUID, is an environment error naming what was asked and what exists.
pub fn resolve_device_arg(
    arg: Option<DeviceArg>,
    devices: &[PhysicalDeviceInfo],
) -> Result<Option<usize>, VkError> {
    use vkhip_interop::device_match::{vulkan_position, ComputeDevice, DeviceRequest, VulkanDevice};
    let n = match arg {
        None => return Ok(None),
        Some(DeviceArg::Vulkan(i)) => return Ok(Some(i)),
        Some(DeviceArg::Cuda(n)) => n,
    };
    let no = |why: String| VkError::NoSuchDevice { arg: format!("cuda:{n}"), why };
    let cuda = vkhip_interop::cuda::device(DeviceRequest::Ordinal(n)).map_err(|e| no(e.to_string()))?;
    let listed: Vec<VulkanDevice> =
        devices.iter().map(|d| VulkanDevice::new(d.index, &d.name, d.uuid)).collect();
    let at = vulkan_position("CUDA", &ComputeDevice::new(cuda.ordinal, &cuda.name, cuda.uuid), &listed)
        .map_err(|e| no(e.to_string()))?;
    Ok(Some(devices[at].index))
}

/// What vkhip needs to know about one physical device.
#[derive(Clone, Debug, Default)]
pub struct PhysicalDeviceInfo {
    pub index: usize,
    pub handle: vk::PhysicalDevice,
    pub name: String,
    pub device_type: vk::PhysicalDeviceType,
    /// Driver name and info (VkPhysicalDeviceDriverProperties).
    pub driver: String,
    pub api_version: u32,
    pub uuid: [u8; 16],
    /// A queue family with graphics + compute + transfer.
    pub graphics_family: Option<u32>,
    pub timeline_semaphores: bool,
    /// `hostQueryReset` (Vulkan 1.2): query pools can be reset from the host (`vkResetQueryPool`),
    /// so the profiler's command buffers need no `vkCmdResetQueryPool` (see [`super::timestamps`]).
    pub host_query_reset: bool,
    /// VK_KHR_external_memory_fd present and a storage buffer can be exported as OPAQUE_FD.
    pub memory_export: bool,
    /// The driver wants exported buffers in dedicated allocations.
    pub memory_export_dedicated_only: bool,
    /// VK_KHR_external_semaphore_fd present and a timeline semaphore can be exported as OPAQUE_FD.
    pub timeline_export: bool,
    /// Same for a binary semaphore.
    pub binary_export: bool,
    pub swapchain_ext: bool,
    pub max_storage_buffer_range: u32,
    /// `shaderOutputLayer` (Vulkan 1.2): a vertex shader may write `gl_Layer` (`--views` > 1).
    pub shader_output_layer: bool,
    /// `maxImageArrayLayers`, `maxFramebufferLayers`, `maxImageDimension2D`: what `--views`
    /// and `--size` are checked against ([`super::views`]).
    pub max_image_array_layers: u32,
    pub max_framebuffer_layers: u32,
    pub max_image_dimension_2d: u32,
    pub max_memory_allocation_size: u64,
    /// Largest device-local heap, bytes.
    pub device_local_bytes: u64,
    /// Nanoseconds per timestamp tick (VkPhysicalDeviceLimits::timestampPeriod).
    pub timestamp_period: f32,
    /// Valid bits of timestamps on the graphics queue family (0: no timestamps).
    pub timestamp_bits: u32,
    /// A calibrated-timestamps extension with the DEVICE and CLOCK_MONOTONIC domains, if any.
    pub calibrated: Option<CalibratedExt>,
    /// Whether CUDA kernels can run in this device's queue (VK_NVX_binary_import and
    /// bufferDeviceAddress; `--backend cuda-in-vulkan`).
    pub cuda_in_vulkan: CudaInVulkanSupport,
    /// Why this device cannot present to the window the run opened (set by the window's device
    /// choice; `None`: it can, or there is no window).
    pub cannot_present: Option<PresentProblem>,
}

/// A device that cannot present to a window: the display, and the failed query or refusal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresentProblem {
    /// The display as the user named it (`DISPLAY=:0`, `WAYLAND_DISPLAY=wayland-0`).
    pub display: String,
    /// What failed: a surface query and its result, or the queue family's refusal.
    pub why: String,
}

impl PresentProblem {
    fn error(&self, device: &str) -> VkError {
        VkError::CannotPresent {
            device: device.to_string(),
            display: self.display.clone(),
            why: self.why.clone(),
        }
    }
}

impl PhysicalDeviceInfo {
    pub fn type_name(&self) -> &'static str {
        match self.device_type {
            vk::PhysicalDeviceType::DISCRETE_GPU => "discrete GPU",
            vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated GPU",
            vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual GPU",
            vk::PhysicalDeviceType::CPU => "CPU",
            _ => "other",
        }
    }

    /// Usable by vkhip at all.
    pub fn usable(&self) -> bool {
        self.graphics_family.is_some() && self.timeline_semaphores && self.api_version >= vk::API_VERSION_1_2
    }

    fn type_rank(&self) -> u32 {
        match self.device_type {
            vk::PhysicalDeviceType::DISCRETE_GPU => 4,
            vk::PhysicalDeviceType::INTEGRATED_GPU => 3,
            vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
            vk::PhysicalDeviceType::CPU => 1,
            _ => 0,
        }
    }
}

/// Which calibrated-timestamps extension a device has (both have the same entry points): the
/// profiler crate's, whose clock ([`crate::vk::clock`]) uses it.
pub use vkhip_profile::clock::CalibratedExt;

/// Format a UUID as 8-4-4-4-12 hex.
///
/// # Examples
///
/// ```
/// let uuid: [u8; 16] = core::array::from_fn(|i| i as u8 * 17);
/// assert_eq!(vkhip::vk::device::uuid_string(&uuid), "00112233-4455-6677-8899-aabbccddeeff");
/// ```
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..].concat()
    )
}

/// Pick a device: returns its position in `devices` and the reason, for logs and `info`. A
/// device that cannot present ([`PhysicalDeviceInfo::cannot_present`]) is never picked: asked
/// for by `--device` or by its UUID, or the best of the usable ones, it is a
/// [`VkError::CannotPresent`] naming it, the display and why.
///
/// # Examples
///
/// ```
/// use ash::vk;
/// use vkhip::vk::device::{choose_device, PhysicalDeviceInfo, PresentProblem};
/// use vkhip::vk::VkError;
///
/// let device = |index, name: &str, device_type| PhysicalDeviceInfo {
///     index,
///     name: name.into(),
///     device_type,
///     graphics_family: Some(0),
///     timeline_semaphores: true,
///     api_version: vk::API_VERSION_1_3,
///     ..Default::default()
/// };
/// let mut devices = vec![
///     device(0, "H100", vk::PhysicalDeviceType::DISCRETE_GPU),
///     device(1, "llvmpipe", vk::PhysicalDeviceType::CPU),
/// ];
/// devices[0].cannot_present = Some(PresentProblem {
///     display: "DISPLAY=:99".into(),
///     why: "vkGetPhysicalDeviceSurfacePresentModesKHR failed: VK_ERROR_UNKNOWN".into(),
/// });
/// // The discrete GPU cannot present to the window: the one that can is preferred.
/// assert_eq!(choose_device(&devices, None, &[]).unwrap().0, 1);
/// // Asked for by name, it is refused, saying why.
/// let e = choose_device(&devices, Some(0), &[]).unwrap_err();
/// assert!(matches!(e, VkError::CannotPresent { .. }));
/// assert!(e.to_string().starts_with("H100 cannot present to the window on DISPLAY=:99"), "{e}");
/// ```
pub fn choose_device(
    devices: &[PhysicalDeviceInfo],
    requested: Option<usize>,
    compute_uuids: &[[u8; 16]],
) -> Result<(usize, String), VkError> {
    if devices.is_empty() {
        return Err(VkError::NoDevice(
            "the Vulkan loader lists no physical device (install a driver, e.g. mesa-vulkan-drivers)".into(),
        ));
    }
    if let Some(i) = requested {
        let d = devices.get(i).ok_or(VkError::BadDeviceIndex { index: i, count: devices.len() })?;
        if !d.usable() {
            return Err(VkError::Unsupported(format!(
                "--device {i} ({}) cannot run vkhip: it needs Vulkan 1.2, timeline semaphores and a graphics queue",
                d.name
            )));
        }
        if let Some(p) = &d.cannot_present {
            return Err(p.error(&d.name));
        }
        return Ok((i, format!("--device {i}")));
    }
    for uuid in compute_uuids {
        if let Some(i) = devices.iter().position(|d| d.usable() && &d.uuid == uuid) {
            // The compute device is this one: another device could present, but not share memory.
            if let Some(p) = &devices[i].cannot_present {
                return Err(p.error(&devices[i].name));
            }
            return Ok((i, format!("its deviceUUID {} matches the compute device", uuid_string(uuid))));
        }
    }
    let best = |presents: bool| {
        devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.usable() && (!presents || d.cannot_present.is_none()))
            .max_by_key(|(i, d)| (d.type_rank(), std::cmp::Reverse(*i)))
    };
    if let Some((i, d)) = best(true) {
        let can = if devices.iter().any(|d| d.cannot_present.is_some()) { " that can present" } else { "" };
        return Ok((i, format!("first {}{can} (discrete > integrated > virtual > CPU)", d.type_name())));
    }
    match best(false) {
        Some((_, d)) => Err(d
            .cannot_present
            .as_ref()
            .map_or_else(|| VkError::NoDevice("no usable device".into()), |p| p.error(&d.name))),
        None => Err(VkError::NoDevice(
            "no device has Vulkan 1.2, timeline semaphores and a graphics queue".into(),
        )),
    }
}

fn c_array_to_string(chars: &[std::ffi::c_char]) -> String {
    // SAFETY: Vulkan fixed-size name arrays are NUL-terminated within their length.
    unsafe { CStr::from_ptr(chars.as_ptr()) }.to_string_lossy().into_owned()
}

/// Gather the facts for every physical device.
pub fn enumerate(instance: &Instance) -> Result<Vec<PhysicalDeviceInfo>, VkError> {
    let inst = &instance.instance;
    // SAFETY: valid instance.
    let handles = unsafe { inst.enumerate_physical_devices() }.map_err(|e| match e {
        // The loader found a driver, but not the hardware it drives (e.g. VK_ICD_FILENAMES names
        // radeon_icd.json on a machine without an AMD GPU).
        vk::Result::ERROR_INITIALIZATION_FAILED => VkError::NoDevice(
            "the Vulkan driver found no hardware it supports (check VK_ICD_FILENAMES / VK_DRIVER_FILES \
             and that the GPU's driver is loaded)"
                .into(),
        ),
        e => VkError::Call { call: "vkEnumeratePhysicalDevices", result: e },
    })?;
    let mut out = Vec::new();
    for (index, &handle) in handles.iter().enumerate() {
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut id)
            .push_next(&mut driver)
            .push_next(&mut maint3);
        // SAFETY: valid handle; the pNext chain points at live locals.
        unsafe { inst.get_physical_device_properties2(handle, &mut props2) };
        let props = props2.properties;
        let mut timeline = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
        let mut query_reset = vk::PhysicalDeviceHostQueryResetFeatures::default();
        let mut v12_features = vk::PhysicalDeviceVulkan12Features::default();
        let mut feats2 = vk::PhysicalDeviceFeatures2::default();
        let api12 =
            vk::api_version_major(props.api_version) > 1 || vk::api_version_minor(props.api_version) >= 2;
        feats2 = feats2.push_next(&mut timeline).push_next(&mut query_reset);
        if api12 {
            // VkPhysicalDeviceVulkan12Features may be chained only on a 1.2 device.
            feats2 = feats2.push_next(&mut v12_features);
        }
        // SAFETY: as above.
        unsafe { inst.get_physical_device_features2(handle, &mut feats2) };
        // SAFETY: valid handle.
        let families = unsafe { inst.get_physical_device_queue_family_properties(handle) };
        let want = vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE;
        let graphics_family = families.iter().position(|f| f.queue_flags.contains(want)).map(|i| i as u32);
        let timestamp_bits = graphics_family.map_or(0, |i| families[i as usize].timestamp_valid_bits);
        // SAFETY: valid handle.
        let exts = unsafe { inst.enumerate_device_extension_properties(handle) }
            .call("vkEnumerateDeviceExtensionProperties")?;
        let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        // SAFETY: valid handle.
        let mem = unsafe { inst.get_physical_device_memory_properties(handle) };
        let device_local_bytes = mem.memory_heaps[..mem.memory_heap_count as usize]
            .iter()
            .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
            .map(|h| h.size)
            .max()
            .unwrap_or(0);

        // What the device can export: the interop crate's own probe, so the app and the crate
        // agree on it.
        // SAFETY: `handle` is a physical device of the live instance.
        let export = unsafe { vkhip_interop::vulkan::Capabilities::probe(inst, handle) }?;

        let calibrated = calibrated_timestamps(instance, handle, &has);
        // SAFETY: as above.
        let cuda_in_vulkan = unsafe { vkhip_interop::cuda_in_vulkan::supported(inst, handle) }?;

        out.push(PhysicalDeviceInfo {
            index,
            handle,
            name: c_array_to_string(&props.device_name),
            device_type: props.device_type,
            driver: format!(
                "{} {}",
                c_array_to_string(&driver.driver_name),
                c_array_to_string(&driver.driver_info)
            )
            .trim()
            .to_string(),
            api_version: props.api_version,
            uuid: id.device_uuid,
            graphics_family,
            timeline_semaphores: timeline.timeline_semaphore == vk::TRUE,
            host_query_reset: query_reset.host_query_reset == vk::TRUE,
            memory_export: export.memory_export,
            memory_export_dedicated_only: export.memory_export_dedicated_only,
            timeline_export: export.timeline_export,
            binary_export: export.binary_export,
            swapchain_ext: has(khr::swapchain::NAME),
            max_storage_buffer_range: props.limits.max_storage_buffer_range,
            shader_output_layer: v12_features.shader_output_layer == vk::TRUE,
            max_image_array_layers: props.limits.max_image_array_layers,
            max_framebuffer_layers: props.limits.max_framebuffer_layers,
            max_image_dimension_2d: props.limits.max_image_dimension2_d,
            max_memory_allocation_size: maint3.max_memory_allocation_size,
            device_local_bytes,
            timestamp_period: props.limits.timestamp_period,
            timestamp_bits,
            calibrated,
            cuda_in_vulkan,
            cannot_present: None,
        });
    }
    Ok(out)
}

/// The calibrated-timestamps extension to use on `handle` (EXT preferred), if it can read the
/// device clock and CLOCK_MONOTONIC together.
fn calibrated_timestamps(
    instance: &Instance,
    handle: vk::PhysicalDevice,
    has: &dyn Fn(&CStr) -> bool,
) -> Option<CalibratedExt> {
    // EXT first: the same entry points, and validation layers older than 1.3.255 warn about the
    // KHR name they do not know.
    let ext = [CalibratedExt::Ext, CalibratedExt::Khr].into_iter().find(|e| has(e.name()))?;
    // SAFETY: `handle` belongs to the live instance, created from its entry.
    unsafe { vkhip_profile::clock::has_monotonic_domain(&instance.entry, &instance.instance, handle, ext) }
        .then_some(ext)
}

/// The logical device, its one queue, and the extension loaders. Shared as `Arc<Context>` by every
/// object that must be destroyed before the device; `Drop` waits for the device to go idle first.
pub struct Context {
    pub device: ash::Device,
    pub physical: PhysicalDeviceInfo,
    pub memory_properties: vk::PhysicalDeviceMemoryProperties,
    pub queue_family: u32,
    queue: Mutex<vk::Queue>,
    /// Transient pool for one-shot transfers (fills, read-backs, captures).
    one_shot_pool: Mutex<vk::CommandPool>,
    /// The interop crate's view of this device (borrowed: the crate never destroys it), when
    /// the device can export memory; exportable slots and semaphores are made through it.
    interop: Option<InteropDevice>,
    /// Created with VK_NVX_binary_import and bufferDeviceAddress enabled ([`Context::new_with`]).
    pub cuda_in_vulkan: bool,
    /// Created with VK_NVX_image_view_handle too (with `cuda_in_vulkan`, where offered).
    pub image_view_handle: bool,
    pub swapchain_fn: Option<khr::swapchain::Device>,
    /// Dropped after the device (the `Drop` impl destroys the device first).
    pub instance: Arc<Instance>,
}

impl Context {
    /// Create the logical device on `physical`, with the swapchain extension if `swapchain`.
    pub fn new(
        instance: Arc<Instance>,
        physical: PhysicalDeviceInfo,
        swapchain: bool,
    ) -> Result<Arc<Self>, VkError> {
        Self::new_with(instance, physical, swapchain, false)
    }

    /// [`Context::new`], and with `cuda_in_vulkan` also what CUDA kernels in the queue need
    /// (`vkhip_interop::cuda_in_vulkan::requirements`: VK_NVX_binary_import and
    /// bufferDeviceAddress); refused when the device does not offer them. Slots made on such a
    /// context have device addresses ([`crate::vk::external::Slot::device_address`]).
    pub fn new_with(
        instance: Arc<Instance>,
        physical: PhysicalDeviceInfo,
        swapchain: bool,
        cuda_in_vulkan: bool,
    ) -> Result<Arc<Self>, VkError> {
        let family = physical.graphics_family.ok_or_else(|| VkError::NoDevice("no graphics queue".into()))?;
        // What the interop crate needs to export from this device (it borrows the device below,
        // as an engine's would be): memory export, and semaphore export where the driver has it.
        let need = requirements(Importer::Hip);
        let mut exts = Vec::new();
        if physical.memory_export {
            exts.extend(need.device_extensions.iter().map(|e| e.as_ptr()));
        }
        if physical.timeline_export || physical.binary_export {
            exts.extend(need.optional_device_extensions.iter().map(|e| e.as_ptr()));
        }
        if let Some(ext) = physical.calibrated {
            exts.push(ext.name().as_ptr());
        }
        if swapchain {
            if !physical.swapchain_ext {
                return Err(VkError::Unsupported(format!(
                    "{} has no VK_KHR_swapchain: use --headless",
                    physical.name
                )));
            }
            exts.push(khr::swapchain::NAME.as_ptr());
        }
        if cuda_in_vulkan {
            if let Some(why) = physical.cuda_in_vulkan.refusal() {
                return Err(VkError::Unsupported(format!("{}: {why}", physical.name)));
            }
            exts.extend(
                vkhip_interop::cuda_in_vulkan::requirements().device_extensions.iter().map(|e| e.as_ptr()),
            );
        }
        // The post filter of `cuda-in-vulkan` reaches images through VK_NVX_image_view_handle
        // (`compute::cuda::in_vulkan`): enabled with VK_NVX_binary_import where offered.
        let image_view_handle = cuda_in_vulkan
            // SAFETY: `physical.handle` was enumerated from this live instance.
            && unsafe { instance.instance.enumerate_device_extension_properties(physical.handle) }
                .unwrap_or_default()
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(ash::nvx::image_view_handle::NAME));
        if image_view_handle {
            exts.push(ash::nvx::image_view_handle::NAME.as_ptr());
        }
        let priorities = [1.0f32];
        let queues =
            [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
            .timeline_semaphore(true)
            .host_query_reset(physical.host_query_reset)
            // `--views` > 1 draws each view into its layer (gl_Layer); enabling the feature
            // changes nothing for a run that does not use it.
            .shader_output_layer(physical.shader_output_layer)
            .buffer_device_address(cuda_in_vulkan);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .push_next(&mut v12);
        let inst = &instance.instance;
        // SAFETY: valid physical device; `info` points at live locals.
        let device = unsafe { inst.create_device(physical.handle, &info, None) }.call("vkCreateDevice")?;
        let interop = if physical.memory_export {
            // SAFETY: the device was created on `physical` with the crate's requirements enabled
            // (above) and a queue in `family`; `Context` drops the crate's device before its own
            // (see Drop), and the app never calls the crate's one-shot submissions.
            match unsafe {
                InteropDevice::from_raw(
                    &instance.entry,
                    &instance.instance,
                    physical.handle,
                    &device,
                    family,
                    Importer::Hip,
                )
            } {
                Ok(d) => Some(d),
                Err(e) => {
                    // SAFETY: nothing else was created from the device yet.
                    unsafe { device.destroy_device(None) };
                    return Err(e.into());
                }
            }
        } else {
            None
        };
        // SAFETY: family/index 0 were requested above.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(family)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT | vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device.
        let pool = match unsafe { device.create_command_pool(&pool_info, None) } {
            Ok(p) => p,
            Err(e) => {
                drop(interop);
                // SAFETY: nothing else was created from the device yet.
                unsafe { device.destroy_device(None) };
                return Err(VkError::Call { call: "vkCreateCommandPool", result: e });
            }
        };
        // SAFETY: valid handle.
        let memory_properties = unsafe { inst.get_physical_device_memory_properties(physical.handle) };
        Ok(Arc::new(Context {
            cuda_in_vulkan,
            image_view_handle,
            interop,
            swapchain_fn: swapchain.then(|| khr::swapchain::Device::new(inst, &device)),
            device,
            physical,
            memory_properties,
            queue_family: family,
            queue: Mutex::new(queue),
            one_shot_pool: Mutex::new(pool),
            instance,
        }))
    }

    /// The interop crate's device, for exportable objects; an error on a device that cannot
    /// export memory.
    pub fn interop(&self) -> Result<&InteropDevice, VkError> {
        self.interop.as_ref().ok_or_else(|| {
            VkError::Unsupported(format!(
                "{} cannot export buffer memory as OPAQUE_FD (VK_KHR_external_memory_fd)",
                self.physical.name
            ))
        })
    }

    /// The queue, locked (Vulkan requires external synchronisation of queue operations).
    pub fn queue(&self) -> MutexGuard<'_, vk::Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// vkQueueSubmit under the queue lock.
    pub fn submit(&self, submits: &[vk::SubmitInfo<'_>], fence: vk::Fence) -> Result<(), VkError> {
        let q = self.queue();
        // SAFETY: the queue is locked; the caller guarantees the submit infos are valid.
        crate::fault::inject(crate::fault::Fault::QueueSubmit)
            .and_then(|()| crate::fault::inject(crate::fault::Fault::DeviceLost))
            // SAFETY: as above.
            .and_then(|()| unsafe { self.device.queue_submit(*q, submits, fence) })
            .call("vkQueueSubmit")
    }

    /// Submit one command buffer waiting on `waits` (semaphore, value — ignored for binary ones,
    /// stage) and signalling `signals` (semaphore, value — ignored for binary ones), timeline and
    /// binary semaphores mixed, then `fence`.
    pub fn submit_with(
        &self,
        cmd: vk::CommandBuffer,
        waits: &[(vk::Semaphore, u64, vk::PipelineStageFlags)],
        signals: &[(vk::Semaphore, u64)],
        fence: vk::Fence,
    ) -> Result<(), VkError> {
        self.submit_each(&[QueueBatch { cmds: std::slice::from_ref(&cmd), waits, signals }], fence)
    }

    /// One vkQueueSubmit of several batches, each with its own command buffers (run in order, the
    /// waits before all of them, the signals after the last), waits and signals (as
    /// [`Self::submit_with`]), then `fence`: a frame whose compute is recorded afresh ahead of a
    /// draw recorded once, and the copies due with it ([`crate::render::Renderer::draw`]).
    ///
    /// On any Vulkan 1.2 device (lavapipe will do): nine waits and nine signals, more than the
    /// stack holds, still one batch.
    ///
    /// ```
    /// use ash::vk;
    /// use std::sync::Arc;
    /// use vkhip::vk::device::{enumerate, Context, QueueBatch};
    /// use vkhip::vk::external::Semaphore;
    /// use vkhip::vk::instance::Instance;
    ///
    /// let instance = Arc::new(Instance::new(false, &[]).unwrap());
    /// let devices = enumerate(&instance).unwrap();
    /// let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
    /// let ctx = Context::new(instance, pd, false).unwrap();
    /// let sems: Vec<Semaphore> = (0..9).map(|_| Semaphore::timeline(&ctx, 1, false).unwrap()).collect();
    /// let waits: Vec<_> = sems.iter().map(|s| (s.handle, 1, vk::PipelineStageFlags::ALL_COMMANDS)).collect();
    /// let signals: Vec<_> = sems.iter().zip(2..).map(|(s, v)| (s.handle, v)).collect();
    /// let batch = QueueBatch { cmds: &[], waits: &waits, signals: &signals };
    /// ctx.submit_each(&[batch], vk::Fence::null()).unwrap();
    /// ctx.queue_wait_idle().unwrap();
    /// let values: Vec<u64> = sems.iter().map(|s| ctx.timeline_value(s.handle).unwrap()).collect();
    /// assert_eq!(values, (2..11).collect::<Vec<u64>>());
    /// ```
    pub fn submit_each(&self, batches: &[QueueBatch<'_>], fence: vk::Fence) -> Result<(), VkError> {
        // The frame loop submits this way every frame (its draw, and the copies due with it): a
        // few batches of up to eight waits and signals each stay on the stack (no allocation per
        // submission); more spill to the heap, still in the same batches.
        type Few<T> = smallvec::SmallVec<[T; 4]>;
        type Eight<T> = smallvec::SmallVec<[T; 8]>;
        struct Parts {
            wait_sems: Eight<vk::Semaphore>,
            wait_values: Eight<u64>,
            stages: Eight<vk::PipelineStageFlags>,
            signal_sems: Eight<vk::Semaphore>,
            signal_values: Eight<u64>,
        }
        let parts: Few<Parts> = batches
            .iter()
            .map(|b| Parts {
                wait_sems: b.waits.iter().map(|w| w.0).collect(),
                wait_values: b.waits.iter().map(|w| w.1).collect(),
                stages: b.waits.iter().map(|w| w.2).collect(),
                signal_sems: b.signals.iter().map(|s| s.0).collect(),
                signal_values: b.signals.iter().map(|s| s.1).collect(),
            })
            .collect();
        let mut timelines: Few<_> = parts
            .iter()
            .map(|p| {
                vk::TimelineSemaphoreSubmitInfo::default()
                    .wait_semaphore_values(&p.wait_values)
                    .signal_semaphore_values(&p.signal_values)
            })
            .collect();
        let submits: Few<_> = parts
            .iter()
            .zip(batches)
            .zip(timelines.iter_mut())
            .map(|((p, b), timeline)| {
                vk::SubmitInfo::default()
                    .wait_semaphores(&p.wait_sems)
                    .wait_dst_stage_mask(&p.stages)
                    .command_buffers(b.cmds)
                    .signal_semaphores(&p.signal_sems)
                    .push_next(timeline)
            })
            .collect();
        self.submit(&submits, fence)
    }

    /// vkQueueWaitIdle under the queue lock.
    pub fn queue_wait_idle(&self) -> Result<(), VkError> {
        let q = self.queue();
        // SAFETY: the queue is locked.
        unsafe { self.device.queue_wait_idle(*q) }.call("vkQueueWaitIdle")
    }

    /// Host wait until timeline `sem` ≥ `value`, a value **Vulkan** signals (a draw, a copy, or
    /// the host), failing after [`WAIT_TIMEOUT`] with `what`: blocks in `vkWaitSemaphores`
    /// (the interop crate's [`wait_blocking`](vkhip_interop::vulkan::wait::wait_blocking)),
    /// using no CPU. Never for a value the compute API signals: on NVIDIA that wakes ≈ 10 ms late
    /// (docs/ARCHITECTURE.md); use [`Self::wait_compute_timeline`] for those.
    pub fn wait_timeline(
        &self,
        sem: vk::Semaphore,
        value: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), VkError> {
        if self.instance.validation {
            return self.poll_timeline(sem, value, &VALIDATION_BACKOFF, what);
        }
        // SAFETY: a timeline semaphore of this device (the caller's), alive for the call.
        let waited = unsafe { wait::wait_blocking(&self.device, sem, value, WAIT_TIMEOUT) };
        waited.map_err(|e| wait_error(e, what))
    }

    /// Host wait until timeline `sem` ≥ `value`, a value the **compute API** signals (CUDA or
    /// HIP on its stream), failing after [`WAIT_TIMEOUT`] with `what`: reads the counter, back to
    /// back for 50 µs, then between sleeps growing from 10 to 100 µs (the interop crate's
    /// [`wait_polling`](vkhip_interop::vulkan::wait::wait_polling) with its default schedule), so
    /// it returns within about 100 µs of the signal where `vkWaitSemaphores` woke ≈ 10 ms late on
    /// NVIDIA (issue 34), and a long wait keeps no core busy. Right for any signaller, at some CPU
    /// cost; [`Self::wait_timeline`] is cheaper for Vulkan's own values.
    pub fn wait_compute_timeline(
        &self,
        sem: vk::Semaphore,
        value: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), VkError> {
        self.poll_timeline(sem, value, &wait::Backoff::DEFAULT, what)
    }

    /// Poll `sem`'s counter on `backoff`'s schedule (the interop crate's `wait_polling`).
    ///
    /// [`Self::wait_timeline`] polls too in validation runs, on [`VALIDATION_BACKOFF`]: Khronos
    /// validation 1.3.239 (Debian 12) follows a successful vkWaitSemaphores with a wait on its own
    /// model of the timeline, which misses values another thread host-signals and stalls 10 s per
    /// wait (UNASSIGNED-VkSemaphore-state-timeout; fixed upstream in 2024). A counter query only
    /// moves the model forward, so validation runs stay fast and every other check stays on.
    /// Costs up to 1 ms of latency per wait (validation only). Residual: a query landing between
    /// another thread's vkSignalSemaphore and the layer's record of it still stalls once (about
    /// one `cycles --validation` run in 30 on lavapipe).
    fn poll_timeline(
        &self,
        sem: vk::Semaphore,
        value: u64,
        backoff: &wait::Backoff,
        what: impl FnOnce() -> String,
    ) -> Result<(), VkError> {
        // SAFETY: a timeline semaphore of this device (the caller's), alive for the call.
        let waited = unsafe { wait::wait_polling(&self.device, sem, value, WAIT_TIMEOUT, backoff) };
        waited.map_err(|e| wait_error(e, what))
    }

    /// Host signal of timeline `sem` to `value`.
    pub fn signal_timeline(&self, sem: vk::Semaphore, value: u64) -> Result<(), VkError> {
        let info = vk::SemaphoreSignalInfo::default().semaphore(sem).value(value);
        // SAFETY: valid timeline semaphore; the caller keeps values increasing.
        unsafe { self.device.signal_semaphore(&info) }.call("vkSignalSemaphore")
    }

    /// Current value of timeline `sem`.
    pub fn timeline_value(&self, sem: vk::Semaphore) -> Result<u64, VkError> {
        // SAFETY: valid timeline semaphore.
        unsafe { self.device.get_semaphore_counter_value(sem) }.call("vkGetSemaphoreCounterValue")
    }

    /// Record commands with `record`, submit them (waiting on `waits` at the given stages), and
    /// wait on a fence until they finish. For rare transfers, not the frame loop.
    pub fn one_shot(
        &self,
        waits: &[(vk::Semaphore, u64, vk::PipelineStageFlags)],
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<(), VkError> {
        self.one_shot_signalling(waits, &[], record)
    }

    /// [`Self::one_shot`] that also signals `signals` (semaphore, value — 0 for binary) when the
    /// commands finish.
    pub fn one_shot_signalling(
        &self,
        waits: &[(vk::Semaphore, u64, vk::PipelineStageFlags)],
        signals: &[(vk::Semaphore, u64)],
        record: impl FnOnce(vk::CommandBuffer),
    ) -> Result<(), VkError> {
        let d = &self.device;
        let pool = self.one_shot_pool.lock().unwrap_or_else(|p| p.into_inner());
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(*pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is locked for the whole function and belongs to this device.
        let cmd = unsafe { d.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?[0];
        // SAFETY: valid device.
        let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.call("vkCreateFence");
        let result = fence.and_then(|fence| {
            let r = (|| {
                let begin =
                    vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
                // SAFETY: fresh command buffer from the locked pool.
                unsafe { d.begin_command_buffer(cmd, &begin) }.call("vkBeginCommandBuffer")?;
                record(cmd);
                // SAFETY: recording was begun above.
                unsafe { d.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;
                self.submit_with(cmd, waits, signals, fence)?;
                // SAFETY: the fence was submitted above.
                match unsafe { d.wait_for_fences(&[fence], true, WAIT_TIMEOUT.as_nanos() as u64) } {
                    Ok(()) => Ok(()),
                    Err(vk::Result::TIMEOUT) => Err(VkError::Timeout {
                        what: "a one-shot transfer".into(),
                        seconds: WAIT_TIMEOUT.as_secs(),
                    }),
                    Err(e) => Err(VkError::Call { call: "vkWaitForFences", result: e }),
                }
            })();
            if r.is_err() {
                // The submission may still be pending: make sure it is finished before freeing.
                let _ = self.queue_wait_idle();
            }
            // SAFETY: the fence is signalled or the queue is idle; nothing uses it any more.
            unsafe { d.destroy_fence(fence, None) };
            r
        });
        // SAFETY: the command buffer is no longer pending (see above).
        unsafe { d.free_command_buffers(*pool, &[cmd]) };
        result
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every object created from this device holds an `Arc<Context>`, so they are all
        // destroyed by now; waiting for idle first makes the destruction legal even after an error.
        unsafe {
            if let Err(e) = self.device.device_wait_idle() {
                log::warn!("vkDeviceWaitIdle at teardown: {e}");
            }
            // The crate's borrowed view goes before the device it borrows.
            drop(self.interop.take());
            let pool = *self.one_shot_pool.get_mut().unwrap_or_else(|p| p.into_inner());
            self.device.destroy_command_pool(pool, None);
            self.device.destroy_device(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interop crate's wait errors become the app's: a timeout names what the run waited
    /// for; a failed call is the call and its result.
    #[test]
    fn wait_errors_name_what_was_awaited() {
        let timeout = vkhip_interop::Error::timeout(
            vkhip_interop::Api::Vulkan,
            "vkGetSemaphoreCounterValue",
            "timeline value 3 (at 2)",
            30,
        );
        let e = wait_error(timeout, || "'computed' ≥ 3 (host-wait mode)".into());
        assert_eq!(e.to_string(), "timed out after 30 s waiting for 'computed' ≥ 3 (host-wait mode)");
        let lost = vkhip_interop::Error::vulkan("vkGetSemaphoreCounterValue", vk::Result::ERROR_DEVICE_LOST);
        let e = wait_error(lost, || unreachable!("only a timeout asks what was awaited"));
        assert!(
            matches!(
                e,
                VkError::Call { call: "vkGetSemaphoreCounterValue", result: vk::Result::ERROR_DEVICE_LOST }
            ),
            "{e}"
        );
        assert!(e.to_string().starts_with("vkGetSemaphoreCounterValue failed: VK_ERROR_DEVICE_LOST"), "{e}");
        // Out of memory stays an environment error (exit 2), as it was from vkWaitSemaphores.
        let oom = vkhip_interop::Error::vulkan("vkWaitSemaphores", vk::Result::ERROR_OUT_OF_HOST_MEMORY);
        assert!(wait_error(oom, String::new).is_environment());
    }

    fn dev(index: usize, ty: vk::PhysicalDeviceType, uuid: u8) -> PhysicalDeviceInfo {
        PhysicalDeviceInfo {
            index,
            name: format!("dev{index}"),
            device_type: ty,
            api_version: vk::API_VERSION_1_3,
            uuid: [uuid; 16],
            graphics_family: Some(0),
            timeline_semaphores: true,
            ..Default::default()
        }
    }

    #[test]
    fn explicit_index_wins() {
        let d = [dev(0, vk::PhysicalDeviceType::CPU, 1), dev(1, vk::PhysicalDeviceType::DISCRETE_GPU, 2)];
        assert_eq!(choose_device(&d, Some(0), &[[2; 16]]).unwrap().0, 0);
        assert!(matches!(
            choose_device(&d, Some(5), &[]),
            Err(VkError::BadDeviceIndex { index: 5, count: 2 })
        ));
    }

    #[test]
    fn a_device_that_cannot_present_is_never_chosen() {
        let problem = PresentProblem { display: "DISPLAY=:9".into(), why: "no".into() };
        let mut d = [dev(0, vk::PhysicalDeviceType::DISCRETE_GPU, 1), dev(1, vk::PhysicalDeviceType::CPU, 2)];
        d[0].cannot_present = Some(problem.clone());
        // The compute device's UUID names the one that cannot present: refused, not swapped for
        // a device that could present but not share memory.
        let e = choose_device(&d, None, &[[1; 16]]).unwrap_err();
        assert_eq!(e.to_string(), "dev0 cannot present to the window on DISPLAY=:9 (no)");
        let (i, why) = choose_device(&d, None, &[]).unwrap();
        assert_eq!((i, why.contains("that can present")), (1, true), "{why}");
        // None can: the best of them is named.
        d[1].cannot_present = Some(problem);
        let e = choose_device(&d, None, &[]).unwrap_err();
        assert!(e.to_string().starts_with("dev0 cannot present"), "{e}");
        assert!(e.is_environment());
    }

    #[test]
    fn uuid_match_beats_type() {
        let d = [
            dev(0, vk::PhysicalDeviceType::DISCRETE_GPU, 1),
            dev(1, vk::PhysicalDeviceType::INTEGRATED_GPU, 2),
        ];
        let (i, why) = choose_device(&d, None, &[[2; 16]]).unwrap();
        assert_eq!(i, 1);
        assert!(why.contains("deviceUUID"), "{why}");
    }

    #[test]
    fn type_order_then_enumeration_order() {
        let d = [
            dev(0, vk::PhysicalDeviceType::CPU, 1),
            dev(1, vk::PhysicalDeviceType::INTEGRATED_GPU, 2),
            dev(2, vk::PhysicalDeviceType::DISCRETE_GPU, 3),
            dev(3, vk::PhysicalDeviceType::DISCRETE_GPU, 4),
        ];
        assert_eq!(choose_device(&d, None, &[[9; 16]]).unwrap().0, 2);
        assert_eq!(choose_device(&d[..2], None, &[]).unwrap().0, 1);
    }

    #[test]
    fn unusable_devices_are_skipped_or_refused() {
        let mut a = dev(0, vk::PhysicalDeviceType::DISCRETE_GPU, 1);
        a.timeline_semaphores = false;
        let b = dev(1, vk::PhysicalDeviceType::CPU, 2);
        let d = [a, b];
        assert_eq!(choose_device(&d, None, &[[1; 16]]).unwrap().0, 1);
        assert!(matches!(choose_device(&d, Some(0), &[]), Err(VkError::Unsupported(_))));
        assert!(matches!(choose_device(&[], None, &[]), Err(VkError::NoDevice(_))));
    }

    #[test]
    fn uuid_formats_like_nvidia_smi() {
        let u = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(uuid_string(&u), "12345678-9abc-def0-0102-030405060708");
    }
}

/// One batch of a [`Context::submit_each`]: its command buffers, in order, their waits
/// (semaphore, value — ignored for binary ones, stage) and their signals (semaphore, value).
#[derive(Clone, Copy, Debug)]
pub struct QueueBatch<'a> {
    pub cmds: &'a [vk::CommandBuffer],
    pub waits: &'a [(vk::Semaphore, u64, vk::PipelineStageFlags)],
    pub signals: &'a [(vk::Semaphore, u64)],
}
