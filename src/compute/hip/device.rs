//! The devices HIP sees, described the way the Vulkan side can match them.

use super::ffi::{self, attr};
use super::pci::{amd_uuid_from_pci, format_uuid, parse_pci_bus_id};
use crate::compute::{ComputeDeviceInfo, ComputeError};

/// One HIP device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HipDevice {
    pub ordinal: i32,
    pub name: String,
    /// `hipDeviceProp_t::gcnArchName`, e.g. "gfx90a:sramecc+:xnack-": the hiprtc target.
    pub arch: String,
    /// "dddd:bb:dd.f" from `hipDeviceGetPCIBusId`.
    pub pci_bus_id: String,
    pub pci: (u32, u32, u32),
    pub compute_units: u32,
    /// [`amd_uuid_from_pci`] of `pci`.
    pub uuid: [u8; 16],
}

/// "5.2.21153" from the `HIP_VERSION` encoding.
pub fn format_hip_version(v: i32) -> String {
    format!("{}.{}.{}", v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

fn layout_error(call: &'static str, message: String) -> ComputeError {
    ComputeError::Api { api: "hip", call, message }
}

/// Describe device `ordinal`.
///
/// The PCI location comes from `hipDeviceGetPCIBusId` (HIP 5.x's `hipDeviceGetAttribute` has no
/// PCI domain attribute) and is cross-checked against the bus and device attributes and against
/// the properties struct, whose 5.x layout is assumed for `gcnArchName`: any disagreement is an
/// error rather than a wrong UUID or a garbage target name.
pub fn describe_device(ordinal: i32) -> Result<HipDevice, ComputeError> {
    let pci_bus_id = ffi::device_pci_bus_id(ordinal)?;
    let (domain, bus, device) = parse_pci_bus_id(&pci_bus_id).ok_or_else(|| {
        layout_error("hipDeviceGetPCIBusId", format!("unexpected PCI bus id {pci_bus_id:?}"))
    })?;
    let bus_attr = ffi::device_attribute(ordinal, attr::PCI_BUS_ID)?;
    let device_attr = ffi::device_attribute(ordinal, attr::PCI_DEVICE_ID)?;
    if (bus_attr, device_attr) != (bus as i32, device as i32) {
        return Err(layout_error(
            "hipDeviceGetAttribute",
            format!(
                "PCI bus/device {bus_attr:x}:{device_attr:x} disagree with hipDeviceGetPCIBusId {pci_bus_id}"
            ),
        ));
    }
    let props = ffi::device_props(ordinal)?;
    if (props.pci_domain, props.pci_bus, props.pci_device) != (domain as i32, bus as i32, device as i32) {
        return Err(layout_error(
            "hipGetDeviceProperties",
            format!(
                "hipDeviceProp_t layout mismatch: PCI {:x}:{:x}:{:x} in the struct, {pci_bus_id} from \
                 hipDeviceGetPCIBusId",
                props.pci_domain, props.pci_bus, props.pci_device
            ),
        ));
    }
    let compute_units = ffi::device_attribute(ordinal, attr::MULTIPROCESSOR_COUNT)?;
    Ok(HipDevice {
        ordinal,
        name: ffi::device_name(ordinal)?,
        arch: props.gcn_arch_name,
        pci_bus_id,
        pci: (domain, bus, device),
        compute_units: u32::try_from(compute_units).unwrap_or(0),
        uuid: amd_uuid_from_pci(domain, bus, device),
    })
}

/// Every device HIP sees; `Unavailable` when it sees none.
pub fn enumerate() -> Result<Vec<HipDevice>, ComputeError> {
    let n = ffi::device_count()?;
    (0..n).map(describe_device).collect()
}

/// The device whose PCI-built UUID ([`amd_uuid_from_pci`]) is `uuid` (Vulkan's deviceUUID);
/// `Unavailable`, listing what HIP sees, when none has it. `HipBackend::new` matches the same way.
pub fn find_by_uuid(uuid: [u8; 16]) -> Result<HipDevice, ComputeError> {
    let devices = enumerate()?;
    if let Some(d) = devices.iter().find(|d| d.uuid == uuid) {
        return Ok(d.clone());
    }
    let seen: Vec<String> = devices.iter().map(HipDevice::summary).collect();
    Err(ComputeError::Unavailable {
        backend: "hip",
        reason: format!(
            "no HIP device has the Vulkan device's UUID {} (HIP devices are matched by PCI \
             domain/bus/device); HIP sees: {}",
            format_uuid(&uuid),
            seen.join("; ")
        ),
    })
}

impl HipDevice {
    /// For `vkhip info` and device matching.
    pub fn info(&self, runtime_version: Option<i32>) -> ComputeDeviceInfo {
        let runtime = runtime_version.map(format_hip_version).unwrap_or_else(|| "?".into());
        ComputeDeviceInfo {
            api: "hip",
            ordinal: self.ordinal,
            name: self.name.clone(),
            uuid: self.uuid,
            detail: format!(
                "{}, PCI {}, {} CUs, HIP runtime {runtime}; UUID {} built from PCI domain/bus/device \
                 as RADV and AMDVLK build deviceUUID (hipDeviceGetUuid is not used: it returns the \
                 HSA agent UUID, which does not match Vulkan's, hipamd#50)",
                self.arch,
                self.pci_bus_id,
                self.compute_units,
                format_uuid(&self.uuid)
            ),
        }
    }

    /// One line for error messages listing what HIP saw.
    pub fn summary(&self) -> String {
        format!(
            "[{}] {} ({}, PCI {}, UUID {})",
            self.ordinal,
            self.name,
            self.arch,
            self.pci_bus_id,
            format_uuid(&self.uuid)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_version_encoding() {
        assert_eq!(format_hip_version(50_221_153), "5.2.21153");
        assert_eq!(format_hip_version(60_443_483), "6.4.43483");
    }

    #[test]
    fn info_names_the_uuid_source() {
        let d = HipDevice {
            ordinal: 0,
            name: "AMD Radeon RX 6800".into(),
            arch: "gfx1030".into(),
            pci_bus_id: "0000:03:00.0".into(),
            pci: (0, 3, 0),
            compute_units: 60,
            uuid: amd_uuid_from_pci(0, 3, 0),
        };
        let info = d.info(Some(50_221_153));
        assert_eq!((info.api, info.ordinal, info.uuid), ("hip", 0, amd_uuid_from_pci(0, 3, 0)));
        assert!(info.detail.starts_with("gfx1030, PCI 0000:03:00.0, 60 CUs, HIP runtime 5.2.21153;"));
        assert!(info.detail.contains("hipDeviceGetUuid is not used") && info.detail.contains("hipamd#50"));
        assert_eq!(
            d.summary(),
            "[0] AMD Radeon RX 6800 (gfx1030, PCI 0000:03:00.0, UUID 00000000-0300-0000-0000-000000000000)"
        );
    }
}
