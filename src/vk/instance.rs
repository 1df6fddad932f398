//! Loader, instance, validation layer, and the debug messenger routed to `log`.
//!
//! Every message the validation layer sends is counted by severity; runs with `--validation` end
//! by printing [`ValidationCounts`]. Two messages are known false positives when a foreign API
//! (CUDA) signals an imported timeline semaphore, because the layer cannot see that signal
//! (docs/ARCHITECTURE.md, "Facts measured on the GPU machine"); while [`set_foreign_signals`] is on they are counted
//! separately instead of as errors.

use super::{CallContext, VkError};
use ash::{ext, vk};
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// VUIDs the layer reports when CUDA signals an imported semaphore it cannot track. The first two
/// are the design notes' (docs/ARCHITECTURE.md, "Facts measured on the GPU machine"); the last
/// two follow from them (seen on the H200, driver 580.159.04, layer 1.3.239): the layer never
/// sees the draw's wait on `computed` satisfied, so it believes the draw's command buffer is
/// still pending when the throttle (after a real wait on `rendered`) submits or re-records it.
const FOREIGN_SIGNAL_VUIDS: [&str; 4] = [
    "VUID-VkSemaphoreSignalInfo-value-03259",
    "VUID-vkQueueSubmit-pCommandBuffers-00071",
    "VUID-vkResetCommandBuffer-commandBuffer-00045",
    "VUID-vkBeginCommandBuffer-commandBuffer-00049",
];

static ERRORS: AtomicU64 = AtomicU64::new(0);
static WARNINGS: AtomicU64 = AtomicU64::new(0);
static INFOS: AtomicU64 = AtomicU64::new(0);
static FOREIGN: AtomicU64 = AtomicU64::new(0);
static LAYER_BUG: AtomicU64 = AtomicU64::new(0);

/// A message the layer itself calls "most likely a validation bug": its host-wait bookkeeping
/// times out when another thread host-signals a timeline that pending submissions wait on (our
/// `bridged` mode). Vulkan-ValidationLayers #4649 / #8461, fixed by PR #8519 (2024); Debian 12's
/// layer (1.3.239) predates the fix. Counted, logged, but not as an error.
const LAYER_BUG_IDS: [&str; 1] = ["UNASSIGNED-VkSemaphore-state-timeout"];
static FOREIGN_SIGNALS: AtomicBool = AtomicBool::new(false);
/// Whether an instance with the validation layer was created in this process.
static LAYER_ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether the validation layer ran in this process (an instance was created with it): only then
/// do [`ValidationCounts`] mean anything. `--validation` without the layer installed fails before
/// that, and the run must not print counts it never got.
pub fn validation_ran() -> bool {
    LAYER_ENABLED.load(Ordering::SeqCst)
}

/// Messages received from the debug messenger, by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValidationCounts {
    pub errors: u64,
    pub warnings: u64,
    pub infos: u64,
    /// Known false positives caused by a foreign API signalling an imported semaphore.
    pub foreign_signal: u64,
    /// Messages the layer reports as its own bug (see `LAYER_BUG_IDS`).
    pub layer_bug: u64,
}

impl ValidationCounts {
    /// The counts so far in this process.
    ///
    /// # Examples
    ///
    /// ```
    /// use vkhip::vk::instance::ValidationCounts;
    ///
    /// // No instance, no messenger: nothing counted yet in this process.
    /// assert_eq!(ValidationCounts::current(), ValidationCounts::default());
    /// ```
    pub fn current() -> Self {
        ValidationCounts {
            errors: ERRORS.load(Ordering::Relaxed),
            warnings: WARNINGS.load(Ordering::Relaxed),
            infos: INFOS.load(Ordering::Relaxed),
            foreign_signal: FOREIGN.load(Ordering::Relaxed),
            layer_bug: LAYER_BUG.load(Ordering::Relaxed),
        }
    }
}

impl std::fmt::Display for ValidationCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} errors, {} warnings, {} info", self.errors, self.warnings, self.infos)?;
        if self.foreign_signal > 0 {
            write!(f, ", {} known false positives from foreign semaphore signals", self.foreign_signal)?;
        }
        if self.layer_bug > 0 {
            write!(f, ", {} known layer bugs (UNASSIGNED-VkSemaphore-state-timeout)", self.layer_bug)?;
        }
        Ok(())
    }
}

/// Declare that a foreign API signals imported semaphores in this run (see the module docs).
pub fn set_foreign_signals(on: bool) {
    FOREIGN_SIGNALS.store(on, Ordering::Relaxed);
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes a valid callback-data struct (or null) for the duration of the call.
    let data = unsafe { data.as_ref() };
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: non-null strings from the layer are NUL-terminated and live for the call.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let (id, message) = data.map(|d| (text(d.p_message_id_name), text(d.p_message))).unwrap_or_default();
    let foreign =
        FOREIGN_SIGNALS.load(Ordering::Relaxed) && FOREIGN_SIGNAL_VUIDS.iter().any(|v| id.contains(v));
    if foreign {
        FOREIGN.fetch_add(1, Ordering::Relaxed);
        log::debug!(target: "vulkan", "[{kind:?}] (foreign signal, expected) {message}");
    } else if LAYER_BUG_IDS.iter().any(|v| id.contains(v)) {
        LAYER_BUG.fetch_add(1, Ordering::Relaxed);
        log::info!(target: "vulkan", "[{kind:?}] (validation-layer bug, not counted as an error) {message}");
    } else if kind == vk::DebugUtilsMessageTypeFlagsEXT::GENERAL {
        // Loader and layer chatter, not a validation finding: counted, but logged at info. A
        // failing call's result says the same in vkhip's one error line ("Failed to detect any
        // valid GPUs" → no usable Vulkan device); RUST_LOG=vulkan=info shows it.
        if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
            ERRORS.fetch_add(1, Ordering::Relaxed);
        } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
            WARNINGS.fetch_add(1, Ordering::Relaxed);
        }
        log::info!(target: "vulkan", "[{kind:?}] {severity:?}: {message}");
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        ERRORS.fetch_add(1, Ordering::Relaxed);
        log::error!(target: "vulkan", "[{kind:?}] {message}");
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
        WARNINGS.fetch_add(1, Ordering::Relaxed);
        log::warn!(target: "vulkan", "[{kind:?}] {message}");
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::INFO) {
        INFOS.fetch_add(1, Ordering::Relaxed);
        log::debug!(target: "vulkan", "[{kind:?}] {message}");
    } else {
        log::trace!(target: "vulkan", "[{kind:?}] {message}");
    }
    vk::FALSE
}

/// Load the Vulkan loader library (`$VKHIP_VULKAN_LIBRARY` if set, else the system's
/// libvulkan.so.1), or say what to install.
pub fn load_entry() -> Result<ash::Entry, VkError> {
    match std::env::var_os("VKHIP_VULKAN_LIBRARY") {
        // SAFETY: loading a Vulkan loader runs its initialisers; loaders are designed for dlopen.
        Some(path) => unsafe { ash::Entry::load_from(&path) }
            .map_err(|e| VkError::NoLoader(format!("VKHIP_VULKAN_LIBRARY={}: {e}", path.to_string_lossy()))),
        // SAFETY: as above.
        None => unsafe { ash::Entry::load() }.map_err(|e| VkError::NoLoader(e.to_string())),
    }
}

/// The loader, the instance and (with validation) the debug messenger.
pub struct Instance {
    // Field order is drop order only for what has no Drop of its own; `Drop` below does the work.
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    debug: Option<(ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub validation: bool,
}

impl Instance {
    /// Create a Vulkan 1.2 instance with `extensions` (e.g. the window system's surface ones).
    pub fn new(validation: bool, extensions: &[*const c_char]) -> Result<Self, VkError> {
        let entry = load_entry()?;
        // SAFETY: plain query on a loaded entry.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .call("vkEnumerateInstanceVersion")?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_2 {
            return Err(VkError::Unsupported(format!(
                "the Vulkan loader supports only {}.{}; vkhip needs Vulkan 1.2 (timeline semaphores)",
                vk::api_version_major(version),
                vk::api_version_minor(version)
            )));
        }

        let mut layers: Vec<*const c_char> = Vec::new();
        let mut exts: Vec<*const c_char> = extensions.to_vec();
        // SAFETY: plain queries on a loaded entry.
        let available_exts = unsafe { entry.enumerate_instance_extension_properties(None) }
            .call("vkEnumerateInstanceExtensionProperties")?;
        let has_ext = |name: &CStr| available_exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
        if validation {
            // SAFETY: plain query on a loaded entry.
            let available = unsafe { entry.enumerate_instance_layer_properties() }
                .call("vkEnumerateInstanceLayerProperties")?;
            if !available.iter().any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER)) {
                return Err(VkError::Unsupported(
                    "--validation: VK_LAYER_KHRONOS_validation is not installed (Debian: apt-get install vulkan-validationlayers)"
                        .into(),
                ));
            }
            layers.push(VALIDATION_LAYER.as_ptr());
            exts.push(ext::validation_features::NAME.as_ptr());
        }
        let debug_utils = validation || has_ext(ext::debug_utils::NAME);
        if debug_utils {
            exts.push(ext::debug_utils::NAME.as_ptr());
        }

        let app = vk::ApplicationInfo::default()
            .application_name(c"vkhip")
            .engine_name(c"vkhip")
            .api_version(vk::API_VERSION_1_2);
        let enabled = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enabled);
        let messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                    | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                    | vk::DebugUtilsMessageSeverityFlagsEXT::INFO
                    | vk::DebugUtilsMessageSeverityFlagsEXT::VERBOSE,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(debug_callback));
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&exts);
        // A copy for the instance's pNext chain (covers vkCreateInstance/vkDestroyInstance); the
        // original stays unchained for vkCreateDebugUtilsMessengerEXT.
        let mut chained_messenger = messenger_info;
        if validation {
            info = info.push_next(&mut features).push_next(&mut chained_messenger);
        }
        // SAFETY: every pointer in `info` refers to locals that outlive the call.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
            vk::Result::ERROR_INCOMPATIBLE_DRIVER => VkError::NoDevice(
                "the Vulkan loader found no driver (install mesa-vulkan-drivers or your GPU's Vulkan driver)"
                    .into(),
            ),
            e => VkError::Call { call: "vkCreateInstance", result: e },
        })?;

        if validation {
            LAYER_ENABLED.store(true, Ordering::SeqCst);
        }
        let debug = if debug_utils {
            let loader = ext::debug_utils::Instance::new(&entry, &instance);
            // SAFETY: valid instance with debug_utils enabled; the callback is a plain fn.
            match unsafe { loader.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(m) => Some((loader, m)),
                Err(e) => {
                    log::warn!(
                        "vkCreateDebugUtilsMessengerEXT failed: {e}; Vulkan messages will not be logged"
                    );
                    None
                }
            }
        } else {
            None
        };
        Ok(Instance { entry, instance, debug, validation })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: everything created from this instance (devices, surfaces) holds an Arc that keeps
        // the instance alive, so by now they are gone.
        unsafe {
            if let Some((loader, messenger)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}
