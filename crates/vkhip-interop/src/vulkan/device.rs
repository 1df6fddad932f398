//! The device the crate exports from: borrowed from an engine ([`Device::from_raw`]) or opened
//! here for samples ([`Device::open`]).

use super::limits::{self, DeviceLimits};
use super::one_shot::OneShot;
use super::{compute_queue_family, requirements, uuid_string, version_string, Importer};
use crate::device_match::{self, ComputeDevice, VulkanDevice};
use crate::error::{Api, Error, Result};
use ash::{khr, vk};
use std::ffi::{c_char, CStr};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, OnceLock};

/// What the crate knows about a physical device: identity and export capabilities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    pub name: String,
    /// `VkPhysicalDeviceIDProperties::deviceUUID`: the compute API opens the device with the
    /// same UUID (CUDA's `cuDeviceGetUuid`; on AMD one built from the PCI address).
    pub uuid: [u8; 16],
    pub api_version: u32,
    /// A storage buffer can be exported as OPAQUE_FD.
    pub memory_export: bool,
    /// The driver exports such memory only as dedicated allocations.
    pub memory_export_dedicated_only: bool,
    /// A timeline semaphore can be exported as OPAQUE_FD.
    pub timeline_export: bool,
    /// A binary semaphore can be exported as OPAQUE_FD.
    pub binary_export: bool,
}

impl Capabilities {
    /// Read the capabilities of `physical`.
    ///
    /// # Safety
    /// `physical` is a physical device of `instance`, which is live.
    pub unsafe fn probe(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<Self> {
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
        // SAFETY: per this function's contract; the pNext chain points at live locals.
        unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
        let props = props2.properties;
        // SAFETY: as above.
        let exts = unsafe { instance.enumerate_device_extension_properties(physical) }
            .map_err(|r| Error::vulkan("vkEnumerateDeviceExtensionProperties", r))?;
        let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        let (memory_export, memory_export_dedicated_only) = if has(khr::external_memory_fd::NAME) {
            let info = vk::PhysicalDeviceExternalBufferInfo::default()
                .usage(super::BUFFER_USAGE)
                .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
            let mut p = vk::ExternalBufferProperties::default();
            // SAFETY: as above, live locals.
            unsafe { instance.get_physical_device_external_buffer_properties(physical, &info, &mut p) };
            let f = p.external_memory_properties.external_memory_features;
            (
                f.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE),
                f.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY),
            )
        } else {
            (false, false)
        };
        let semaphore_export = |ty: vk::SemaphoreType| {
            if !has(khr::external_semaphore_fd::NAME) {
                return false;
            }
            let mut type_info = vk::SemaphoreTypeCreateInfo::default().semaphore_type(ty);
            let info = vk::PhysicalDeviceExternalSemaphoreInfo::default()
                .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD)
                .push_next(&mut type_info);
            let mut p = vk::ExternalSemaphoreProperties::default();
            // SAFETY: as above, live locals.
            unsafe { instance.get_physical_device_external_semaphore_properties(physical, &info, &mut p) };
            p.external_semaphore_features.contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE)
        };
        Ok(Capabilities {
            name: props.device_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            uuid: id.device_uuid,
            api_version: props.api_version,
            memory_export,
            memory_export_dedicated_only,
            timeline_export: semaphore_export(vk::SemaphoreType::TIMELINE),
            binary_export: semaphore_export(vk::SemaphoreType::BINARY),
        })
    }

    /// Why this device cannot serve `importer`, if it cannot.
    pub fn refusal(&self, importer: Importer) -> Option<String> {
        if self.api_version < vk::API_VERSION_1_2 {
            return Some(format!(
                "{} supports Vulkan {} (1.2 needed)",
                self.name,
                version_string(self.api_version)
            ));
        }
        if !self.memory_export {
            return Some(format!(
                "{} cannot export buffer memory as OPAQUE_FD (VK_KHR_external_memory_fd)",
                self.name
            ));
        }
        if importer == Importer::Cuda && !self.timeline_export {
            return Some(format!(
                "{} cannot export timeline semaphores as OPAQUE_FD (VK_KHR_external_semaphore_fd), which {} imports",
                self.name,
                importer.name()
            ));
        }
        None
    }
}

/// What a device has enabled beyond [`requirements`] that a profiler uses (the vkhip-profile
/// crate): [`Device::open`] enables both where the device has them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptionalFeatures {
    /// `hostQueryReset` (Vulkan 1.2): query pools reset from the host. Unknown (false) on a
    /// borrowed device: Vulkan cannot be asked which features a device was created with.
    pub host_query_reset: bool,
    /// `VK_EXT_calibrated_timestamps` or `VK_KHR_calibrated_timestamps`, with the device and
    /// `CLOCK_MONOTONIC` time domains: enabled on the device (a borrowed one too: its entry point
    /// resolves).
    pub calibrated_timestamps: Option<&'static CStr>,
}

/// The calibrated-timestamps extension `physical` offers (EXT first: layers older than 1.3.255
/// do not know the KHR name) when it can read the device clock and `CLOCK_MONOTONIC` together.
///
/// # Safety
/// `instance` was created from `entry` and is live; `physical` belongs to it.
pub(crate) unsafe fn calibrated_extension(
    entry: &ash::Entry,
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    has: &dyn Fn(&CStr) -> bool,
) -> Option<&'static CStr> {
    let domains = if has(ash::ext::calibrated_timestamps::NAME) {
        let f = ash::ext::calibrated_timestamps::Instance::new(entry, instance);
        // SAFETY: per this function's contract; the extension is present.
        (ash::ext::calibrated_timestamps::NAME, unsafe {
            f.get_physical_device_calibrateable_time_domains(physical)
        })
    } else if has(khr::calibrated_timestamps::NAME) {
        let f = khr::calibrated_timestamps::Instance::new(entry, instance);
        // SAFETY: as above.
        (khr::calibrated_timestamps::NAME, unsafe {
            f.get_physical_device_calibrateable_time_domains(physical)
        })
    } else {
        return None;
    };
    let (name, domains) = (domains.0, domains.1.ok()?);
    (domains.contains(&vk::TimeDomainKHR::DEVICE) && domains.contains(&vk::TimeDomainKHR::CLOCK_MONOTONIC))
        .then_some(name)
}

/// Which physical device [`Device::open`] / [`Device::open_matching`] take.
#[derive(Clone, Copy)]
enum Pick<'a> {
    /// The first with one of these UUIDs, else the best that can export.
    Prefer(&'a [[u8; 16]]),
    /// The one with this compute device's UUID, or none.
    Exactly(&'a ComputeDevice),
}

/// The device everything is exported from, with the loaders of the export entry points. Cheap to
/// clone (shared); the objects made from it keep it alive.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) device: ash::Device,
    pub(crate) instance: ash::Instance,
    pub(crate) physical: vk::PhysicalDevice,
    pub(crate) queue_family: u32,
    pub(crate) memory_properties: vk::PhysicalDeviceMemoryProperties,
    pub(crate) caps: Capabilities,
    pub(crate) importer: Importer,
    pub(crate) external_memory_fd: khr::external_memory_fd::Device,
    pub(crate) external_semaphore_fd: Option<khr::external_semaphore_fd::Device>,
    /// The command pool and fence of [`Device::read_buffer`] / [`Device::read_image`] /
    /// [`Device::submit_one_shot`], made on first use, destroyed with this.
    pub(crate) one_shot: Mutex<Option<OneShot>>,
    pub(crate) optional: OptionalFeatures,
    /// `Some` when the crate created the instance and device, and so destroys them.
    owned: Option<ash::Entry>,
    /// What must outlive this device's handles when they are borrowed from another owner (the
    /// wgpu device of `crate::wgpu_interop`); dropped after everything above.
    _keep_alive: OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// What the device allows a shared object ([`super::limits`]).
    pub(crate) limits: DeviceLimits,
    /// The device memory allocations the crate made that are alive (`memory::reserve`, `memory::free`).
    pub(crate) allocations: AtomicU32,
}

impl Device {
    /// Borrow an engine's device. The crate keeps copies of the handles, creates and destroys
    /// only its own objects, and never destroys `instance` or `device`.
    ///
    /// Checks that `physical` can export what `importer` imports and that the device's export
    /// entry points resolve (they do only when the extensions of [`requirements`] were enabled).
    ///
    /// # Safety
    /// `instance` was created from `entry`, `physical` belongs to it, `device` was created on
    /// `physical` with the extensions and features of [`requirements`]`(importer)` enabled and a
    /// queue in `queue_family`; all of them outlive the returned `Device` and every object made
    /// from it. The crate submits to queue 0 of `queue_family` only in [`Device::read_buffer`],
    /// [`Device::read_image`] and [`Device::submit_one_shot`], under a lock of its own: do not
    /// submit to that queue from another thread during those calls.
    pub unsafe fn from_raw(
        entry: &ash::Entry,
        instance: &ash::Instance,
        physical: vk::PhysicalDevice,
        device: &ash::Device,
        queue_family: u32,
        importer: Importer,
    ) -> Result<Self> {
        // Taken for symmetry with `open` and future instance-level checks.
        let _ = entry;
        // SAFETY: per this function's contract.
        let mut made = unsafe {
            Device::wrap(instance.clone(), physical, device.clone(), queue_family, importer, None)
        }?;
        // An extension's entry point resolves only when it was enabled.
        let resolves = |name: &CStr| {
            // SAFETY: valid instance and device; `name` is NUL-terminated.
            unsafe { (instance.fp_v1_0().get_device_proc_addr)(device.handle(), name.as_ptr()) }.is_some()
        };
        let calibrated = [
            (c"vkGetCalibratedTimestampsEXT", ash::ext::calibrated_timestamps::NAME),
            (c"vkGetCalibratedTimestampsKHR", khr::calibrated_timestamps::NAME),
        ]
        .into_iter()
        .find_map(|(function, name)| resolves(function).then_some(name));
        made.set_optional_features(OptionalFeatures {
            host_query_reset: false,
            calibrated_timestamps: calibrated,
        });
        Ok(made)
    }

    /// Record what the device was created with beyond [`requirements`] (the crate's own
    /// devices, before anything else holds them).
    pub(crate) fn set_optional_features(&mut self, optional: OptionalFeatures) {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.optional = optional;
        }
    }

    /// Keep `owner` until the last clone of this device is dropped: the owner of the handles
    /// [`Device::from_raw`] borrowed (wgpu's device), which then outlives them. Call it on the
    /// device `from_raw` returned, before anything is made from it.
    #[cfg(feature = "wgpu")]
    pub(crate) fn keeping(self, owner: Box<dyn std::any::Any + Send + Sync>) -> Self {
        if self.inner._keep_alive.set(owner).is_err() {
            log::warn!("vulkan: the borrowed device's owner was kept already; the second is dropped");
        }
        self
    }

    /// Open a device of the crate's own (samples, tests, tools without an engine): the first
    /// device whose `deviceUUID` is in `prefer` (the compute API's devices), else the first that
    /// can export what `importer` imports, discrete GPUs first; with a graphics and compute
    /// queue where it has one, and, like an engine's, Vulkan 1.3 with `synchronization2` where
    /// the device has them. Destroyed with the last clone.
    pub fn open(prefer: &[[u8; 16]], importer: Importer) -> Result<Self> {
        Device::open_picking(Pick::Prefer(prefer), importer)
    }

    /// Open the Vulkan device of the compute device `compute` (the one with its UUID), and no
    /// other: the device of a CUDA ordinal ([`crate::cuda::device`]) whatever Vulkan's order.
    /// None with that UUID that can export what `importer` imports is
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable), naming the compute device and
    /// the Vulkan devices seen.
    pub fn open_matching(compute: &ComputeDevice, importer: Importer) -> Result<Self> {
        Device::open_picking(Pick::Exactly(compute), importer)
    }

    fn open_picking(pick: Pick<'_>, importer: Importer) -> Result<Self> {
        // SAFETY: loading the system's Vulkan loader runs its initialisers; nothing else here.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            Error::unavailable(
                Api::Vulkan,
                "",
                format!("no Vulkan loader ({e}): install libvulkan1 and a Vulkan driver"),
            )
        })?;
        let need = requirements(importer);
        // Vulkan 1.3 where the device has it (open_on): the crate's own device is made like an
        // engine's, synchronization2 included, so the samples run on what engines run.
        let app = vk::ApplicationInfo::default()
            .application_name(c"vkhip-interop")
            .api_version(need.api_version.max(vk::API_VERSION_1_3));
        let ext_ptrs: Vec<*const c_char> = need.instance_extensions.iter().map(|n| n.as_ptr()).collect();
        let info =
            vk::InstanceCreateInfo::default().application_info(&app).enabled_extension_names(&ext_ptrs);
        // SAFETY: valid entry; `info` points at live locals.
        let instance = unsafe { entry.create_instance(&info, None) }
            .map_err(|r| Error::vulkan("vkCreateInstance", r))?;
        // SAFETY: `instance` was just created; on failure nothing else refers to it.
        match unsafe { Device::open_on(&entry, &instance, pick, importer) } {
            Ok((physical, device, family, optional)) => {
                // SAFETY: made above with `requirements(importer)`; ownership passes to `Inner`.
                let mut made =
                    unsafe { Device::wrap(instance, physical, device, family, importer, Some(entry)) }?;
                made.set_optional_features(optional);
                Ok(made)
            }
            Err(e) => {
                // SAFETY: nothing was created from the instance that still lives.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    /// Choose the physical device and create the logical device with one queue, and with the
    /// [`OptionalFeatures`] it has.
    ///
    /// # Safety
    /// `instance` is live and was created from `entry`.
    unsafe fn open_on(
        entry: &ash::Entry,
        instance: &ash::Instance,
        pick: Pick<'_>,
        importer: Importer,
    ) -> Result<(vk::PhysicalDevice, ash::Device, u32, OptionalFeatures)> {
        // SAFETY: live instance.
        let physicals = unsafe { instance.enumerate_physical_devices() }
            .map_err(|r| Error::vulkan("vkEnumeratePhysicalDevices", r))?;
        let mut candidates = Vec::new();
        let mut refusals = Vec::new();
        // Vulkan's index of each candidate, for errors that list them.
        let mut candidate_index = Vec::new();
        for (index, &p) in physicals.iter().enumerate() {
            // SAFETY: `p` belongs to the live instance.
            let caps = unsafe { Capabilities::probe(instance, p) }?;
            // SAFETY: as above.
            let families = unsafe { instance.get_physical_device_queue_family_properties(p) };
            let family = compute_queue_family(&families);
            // SAFETY: as above.
            let props = unsafe { instance.get_physical_device_properties(p) };
            match (caps.refusal(importer), family) {
                (Some(why), _) => refusals.push(why),
                (None, None) => refusals.push(format!("{} has no compute queue", caps.name)),
                (None, Some(family)) => {
                    candidates.push((p, caps, family, props.device_type));
                    candidate_index.push(index);
                }
            }
        }
        let rank = |t: vk::PhysicalDeviceType| match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => 0,
            vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
            vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
            _ => 3,
        };
        let prefer = match pick {
            Pick::Prefer(prefer) => prefer,
            Pick::Exactly(compute) => {
                let listed: Vec<VulkanDevice> = candidates
                    .iter()
                    .zip(&candidate_index)
                    .map(|(c, &i)| VulkanDevice::new(i, &c.1.name, c.1.uuid))
                    .collect();
                let at = device_match::vulkan_position(importer.name(), compute, &listed).map_err(|e| {
                    let mut e = e.to_string();
                    if !refusals.is_empty() {
                        e.push_str(&format!(" (unusable: {})", refusals.join("; ")));
                    }
                    Error::unavailable(Api::Vulkan, "", e)
                })?;
                &[candidates[at].1.uuid][..]
            }
        };
        let chosen = candidates
            .iter()
            .find(|c| prefer.contains(&c.1.uuid))
            .or_else(|| candidates.iter().min_by_key(|c| rank(c.3)))
            .ok_or_else(|| {
                let why =
                    if refusals.is_empty() { "no Vulkan device".to_string() } else { refusals.join("; ") };
                Error::unsupported(
                    Api::Vulkan,
                    format!("no device can share memory with {}: {why}", importer.name()),
                )
            })?;
        let (physical, caps, family, _) = chosen;
        let need = requirements(importer);
        // SAFETY: `physical` belongs to the live instance.
        let available = unsafe { instance.enumerate_device_extension_properties(*physical) }
            .map_err(|r| Error::vulkan("vkEnumerateDeviceExtensionProperties", r))?;
        let has = |n: &CStr| available.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        let mut exts: Vec<*const c_char> = need.device_extensions.iter().map(|n| n.as_ptr()).collect();
        exts.extend(need.optional_device_extensions.iter().filter(|n| has(n)).map(|n| n.as_ptr()));
        // For profilers (OptionalFeatures): calibrated timestamps and hostQueryReset where present.
        // SAFETY: `physical` belongs to the live instance, made from `entry`.
        let calibrated = unsafe { calibrated_extension(entry, instance, *physical, &has) };
        exts.extend(calibrated.map(CStr::as_ptr));
        let mut v12_supported = vk::PhysicalDeviceVulkan12Features::default();
        {
            let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12_supported);
            // SAFETY: `physical` belongs to the live instance (Vulkan 1.2, refusal() checked); live locals.
            unsafe { instance.get_physical_device_features2(*physical, &mut features) };
        }
        let optional = OptionalFeatures {
            host_query_reset: v12_supported.host_query_reset == vk::TRUE,
            calibrated_timestamps: calibrated,
        };
        let priorities = [1.0f32];
        let queues =
            [vk::DeviceQueueCreateInfo::default().queue_family_index(*family).queue_priorities(&priorities)];
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
            .timeline_semaphore(need.timeline_semaphore)
            .host_query_reset(optional.host_query_reset);
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
        if caps.api_version >= vk::API_VERSION_1_3 {
            let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut v13);
            // SAFETY: `physical` belongs to the live instance (Vulkan 1.3); live locals.
            unsafe { instance.get_physical_device_features2(*physical, &mut features) };
        }
        // Only synchronization2 of 1.3's features: what engines enable and what the crate's
        // barriers must stay correct under (vulkan::handoff).
        let mut v13 =
            vk::PhysicalDeviceVulkan13Features::default().synchronization2(v13.synchronization2 == vk::TRUE);
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .push_next(&mut v12);
        if caps.api_version >= vk::API_VERSION_1_3 {
            info = info.push_next(&mut v13);
        }
        // SAFETY: `physical` belongs to the live instance; `info` points at live locals.
        let device = unsafe { instance.create_device(*physical, &info, None) }
            .map_err(|r| Error::vulkan("vkCreateDevice", r).context(&caps.name))?;
        Ok((*physical, device, *family, optional))
    }

    /// # Safety
    /// As [`Device::from_raw`]; with `owned`, the instance and device become the crate's to
    /// destroy (also when this fails).
    unsafe fn wrap(
        instance: ash::Instance,
        physical: vk::PhysicalDevice,
        device: ash::Device,
        queue_family: u32,
        importer: Importer,
        owned: Option<ash::Entry>,
    ) -> Result<Self> {
        let destroy_owned = |e: Error| {
            if owned.is_some() {
                // SAFETY: ours to destroy; nothing was created from them yet.
                unsafe {
                    device.destroy_device(None);
                    instance.destroy_instance(None);
                }
            }
            e
        };
        // An index the physical device does not have: every later submission would name it.
        // SAFETY: `physical` belongs to `instance` (this function's contract).
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) }.len();
        if queue_family as usize >= families {
            return Err(destroy_owned(Error::invalid(
                Api::Vulkan,
                format!(
                    "queue family {queue_family}: the device has {families} (0 to {})",
                    families.saturating_sub(1)
                ),
            )));
        }
        // SAFETY: per this function's contract.
        let caps = unsafe { Capabilities::probe(&instance, physical) }.map_err(destroy_owned)?;
        if let Some(why) = caps.refusal(importer) {
            return Err(destroy_owned(Error::unsupported(Api::Vulkan, why)));
        }
        // An entry point of a device extension resolves only when the extension was enabled.
        let resolves = |name: &CStr| {
            // SAFETY: valid instance and device; `name` is NUL-terminated.
            unsafe { (instance.fp_v1_0().get_device_proc_addr)(device.handle(), name.as_ptr()) }.is_some()
        };
        let need = requirements(importer);
        let entry_points = [
            (khr::external_memory_fd::NAME, c"vkGetMemoryFdKHR"),
            (khr::external_semaphore_fd::NAME, c"vkGetSemaphoreFdKHR"),
        ];
        for (ext, function) in entry_points {
            if need.device_extensions.contains(&ext) && !resolves(function) {
                return Err(destroy_owned(Error::unsupported(
                    Api::Vulkan,
                    format!(
                        "{} is not enabled on the device ({} does not resolve): enable vkhip_interop::vulkan::requirements({:?}).device_extensions",
                        ext.to_string_lossy(),
                        function.to_string_lossy(),
                        importer
                    ),
                )));
            }
        }
        let external_semaphore_fd = resolves(c"vkGetSemaphoreFdKHR")
            .then(|| khr::external_semaphore_fd::Device::new(&instance, &device));
        // SAFETY: valid handles.
        let memory_properties = unsafe { instance.get_physical_device_memory_properties(physical) };
        let external_memory_fd = khr::external_memory_fd::Device::new(&instance, &device);
        // SAFETY: `physical` belongs to `instance`; Vulkan 1.2 at least (`refusal` above).
        let limits = unsafe { DeviceLimits::probe(&instance, physical) };
        log::debug!(
            "vulkan: {} ({}), {} device, deviceUUID {}, queue family {queue_family}",
            caps.name,
            version_string(caps.api_version),
            if owned.is_some() { "own" } else { "borrowed" },
            uuid_string(&caps.uuid)
        );
        Ok(Device {
            inner: Arc::new(Inner {
                device,
                instance,
                physical,
                queue_family,
                memory_properties,
                caps,
                importer,
                external_memory_fd,
                external_semaphore_fd,
                one_shot: Mutex::new(None),
                optional: OptionalFeatures::default(),
                owned,
                _keep_alive: OnceLock::new(),
                limits,
                allocations: AtomicU32::new(0),
            }),
        })
    }

    /// The device's `deviceUUID`.
    pub fn uuid(&self) -> [u8; 16] {
        self.inner.caps.uuid
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    /// "NVIDIA H100 80GB HBM3 (Vulkan 1.4.312, deviceUUID …)".
    pub fn describe(&self) -> String {
        let c = &self.inner.caps;
        format!("{} (Vulkan {}, deviceUUID {})", c.name, version_string(c.api_version), uuid_string(&c.uuid))
    }

    /// Refuse a compute device whose UUID is not this device's: memory exported here can only
    /// be imported on the same GPU.
    pub fn check_uuid(&self, api: Api, compute_uuid: [u8; 16]) -> Result<()> {
        if compute_uuid != self.uuid() {
            return Err(Error::unsupported(
                api,
                format!(
                    "the {api} device's UUID {} is not the Vulkan device's {} ({}): open the {api} device with vulkan::Device::uuid()",
                    uuid_string(&compute_uuid),
                    uuid_string(&self.uuid()),
                    self.inner.caps.name
                ),
            ));
        }
        Ok(())
    }

    /// The `ash::Device` (yours, when borrowed), for recording your own commands.
    pub fn ash(&self) -> &ash::Device {
        &self.inner.device
    }

    pub fn instance(&self) -> &ash::Instance {
        &self.inner.instance
    }

    pub fn physical(&self) -> vk::PhysicalDevice {
        self.inner.physical
    }

    /// The queue family the crate's own submissions and its barriers use.
    pub fn queue_family(&self) -> u32 {
        self.inner.queue_family
    }

    pub fn importer(&self) -> Importer {
        self.inner.importer
    }

    /// What the device has enabled beyond [`requirements`] that a profiler uses.
    pub fn optional_features(&self) -> OptionalFeatures {
        self.inner.optional
    }
}

impl Inner {
    /// Refuse a buffer of `bytes` (`what`, for the error) above the device's `maxBufferSize`,
    /// before `vkCreateBuffer` ([`limits::buffer`]).
    pub(crate) fn check_buffer_size(&self, bytes: u64, what: &str) -> Result<()> {
        limits::buffer(&self.limits, bytes).map_err(|over| over.error(&self.caps.name, what))
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: every object made from this device holds an `Arc<Inner>`, so none is left; the
        // one-shot pool is the crate's own and idle (each submission waits for its fence); the
        // instance and device are destroyed only when the crate created them, after waiting for
        // the device (a borrowed device's idleness is its owner's business).
        unsafe {
            if self.owned.is_some() {
                if let Err(e) = self.device.device_wait_idle() {
                    log::warn!("vulkan: waiting for the device before teardown failed: {e}");
                }
            }
            if let Some(one_shot) = self.one_shot.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
                one_shot.destroy(&self.device);
            }
            if self.owned.is_some() {
                self.device.destroy_device(None);
                self.instance.destroy_instance(None);
            }
        }
    }
}
