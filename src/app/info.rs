//! `vkhip info`: every Vulkan device with the capabilities that matter for interop, every compute
//! device the interop APIs can see, and the pair vkhip would use, with the reason.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): the report prints, and a `--device` index beyond
//! the devices listed is a usage error (exit code 2) raised before anything is printed.
//!
//! ```
//! use vkhip::cli::InfoArgs;
//! use vkhip::compute::BackendKind;
//! use vkhip::vk::device::DeviceArg;
//!
//! vkhip::app::info::run(&InfoArgs { backend: BackendKind::Vulkan, device: None }).unwrap();
//! let err = vkhip::app::info::run(&InfoArgs { backend: BackendKind::Auto, device: Some(DeviceArg::Vulkan(999)) }).unwrap_err();
//! assert!(err.to_string().starts_with("--device 999: there are only "), "{err}");
//! assert!(vkhip::app::is_environment_error(&err));
//! ```

use super::session::{choose_backend, probe_interop};
use crate::cli::InfoArgs;
use crate::compute::BackendKind;
use crate::sync::{SyncMode, SyncPlan, SyncRequest};
use crate::vk::device::{choose_device, enumerate, resolve_device_arg, uuid_string, PhysicalDeviceInfo};
use crate::vk::instance::Instance;
use ash::vk;

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Print the report to stdout.
pub fn run(args: &InfoArgs) -> anyhow::Result<()> {
    let instance = Instance::new(false, &[])?;
    let devices = enumerate(&instance)?;
    let device = resolve_device_arg(args.device, &devices)?;
    if let Some(index) = device.filter(|&i| i >= devices.len()) {
        // A mistake in the request, not something to report on: exit 2 before printing anything.
        return Err(crate::vk::VkError::BadDeviceIndex { index, count: devices.len() }.into());
    }
    crate::outln!("Vulkan devices ({}):", devices.len());
    for d in &devices {
        crate::outln!(
            "  [{}] {} ({}, Vulkan {}.{}.{})",
            d.index,
            d.name,
            d.type_name(),
            vk::api_version_major(d.api_version),
            vk::api_version_minor(d.api_version),
            vk::api_version_patch(d.api_version)
        );
        crate::outln!("      driver            {}", d.driver);
        crate::outln!("      deviceUUID        {}", uuid_string(&d.uuid));
        crate::outln!(
            "      graphics queue    {}   timeline semaphores {}",
            d.graphics_family.map_or("none".to_string(), |f| format!("family {f}")),
            yes(d.timeline_semaphores)
        );
        crate::outln!(
            "      export memory     {} (OPAQUE_FD{})",
            yes(d.memory_export),
            if d.memory_export_dedicated_only { ", dedicated only" } else { "" }
        );
        crate::outln!(
            "      export semaphore  timeline {}, binary {} (OPAQUE_FD)",
            yes(d.timeline_export),
            yes(d.binary_export)
        );
        crate::outln!(
            "      cuda in queue     {} (VK_NVX_binary_import {}, bufferDeviceAddress {}; --backend cuda-in-vulkan)",
            yes(d.cuda_in_vulkan.refusal().is_none()),
            yes(d.cuda_in_vulkan.extension),
            yes(d.cuda_in_vulkan.buffer_device_address)
        );
        crate::outln!(
            "      limits            maxStorageBufferRange {} MiB, device-local heap {} MiB",
            d.max_storage_buffer_range / (1 << 20),
            d.device_local_bytes >> 20
        );
    }
    crate::outln!("Compute devices:");
    for kind in [BackendKind::Cuda, BackendKind::Hip] {
        match probe_interop(kind) {
            Ok(list) if list.is_empty() => crate::outln!("  {kind}: no devices"),
            Ok(list) => {
                for c in list {
                    crate::outln!("  {kind} [{}] {}  UUID {}", c.ordinal, c.name, uuid_string(&c.uuid));
                    if !c.detail.is_empty() {
                        crate::outln!("      {}", c.detail);
                    }
                }
            }
            Err(e) => crate::outln!("  {kind}: unavailable: {e}"),
        }
    }
    print_pairing(&devices);
    crate::outln!("Selection (--backend {}):", args.backend);
    let choice = match choose_backend(args.backend, &devices, device) {
        Ok(c) => c,
        Err(e) => {
            crate::outln!("  backend {} cannot be used: {e}", args.backend);
            return Ok(());
        }
    };
    let uuids: Vec<[u8; 16]> = choice.compute_devices.iter().map(|c| c.uuid).collect();
    match choose_device(&devices, device, &uuids) {
        Ok((i, why)) => {
            let d = &devices[i];
            crate::outln!("  backend  {} ({})", choice.kind, choice.reason);
            crate::outln!("  device   [{i}] {} ({why})", d.name);
            match SyncPlan::resolve(&SyncRequest::mode(SyncMode::Auto), choice.kind, d) {
                Ok(p) => crate::outln!("  sync     {} (defaults)", p.describe()),
                Err(e) => crate::outln!("  sync     none: {e}"),
            }
        }
        Err(e) => crate::outln!("  no device: {e}"),
    }
    Ok(())
}

/// Which Vulkan index is which CUDA ordinal (by deviceUUID: the two numberings need not agree),
/// the two spellings of `--device` side by side; without CUDA, one line saying so.
fn print_pairing(devices: &[PhysicalDeviceInfo]) {
    use vkhip_interop::device_match::{pairing, ComputeDevice, VulkanDevice};
    crate::outln!(
        "Vulkan and CUDA numbering (--device N is Vulkan's index, --device cuda:N CUDA's ordinal):"
    );
    let cuda = match vkhip_interop::cuda::devices() {
        Ok(list) => list,
        Err(e) => {
            crate::outln!("  no CUDA here ({e}): --device cuda:N cannot be used");
            return;
        }
    };
    let compute: Vec<ComputeDevice> =
        cuda.iter().map(|c| ComputeDevice::new(c.ordinal, &c.name, c.uuid)).collect();
    let vulkan: Vec<VulkanDevice> =
        devices.iter().map(|d| VulkanDevice::new(d.index, &d.name, d.uuid)).collect();
    for (d, (index, ordinal)) in devices.iter().zip(pairing(&compute, &vulkan)) {
        match ordinal {
            Some(n) => crate::outln!("  --device {index} = --device cuda:{n}  {}", d.name),
            None => crate::outln!("  --device {index}  {} (no CUDA device has its deviceUUID)", d.name),
        }
    }
    for c in cuda.iter().filter(|c| !devices.iter().any(|d| d.uuid == c.uuid)) {
        crate::outln!(
            "  cuda:{} {}: no Vulkan device has its UUID (not usable with vkhip)",
            c.ordinal,
            c.name
        );
    }
}
