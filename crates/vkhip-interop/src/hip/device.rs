//! The devices HIP sees, described the way the Vulkan side can match them: by a UUID built from
//! the PCI location, as AMD's Vulkan drivers build `deviceUUID`.

use super::ffi::{self, attr};
use super::DeviceInfo;
use crate::error::{Api, Error, Result};
use crate::vulkan::uuid_string;

/// The `VkPhysicalDeviceIDProperties::deviceUUID` that RADV and AMDVLK report for the GPU at PCI
/// `domain:bus:device`: three little-endian `u32` (domain, bus, device), then zeroes (the function
/// slot, also a `u32`, is 0 for a GPU).
///
/// HIP's own `hipDeviceGetUuid` cannot be compared with it (it returns the HSA agent UUID,
/// hipamd#50); rocm-examples `HIP-Basic/vulkan_interop/main.hip` builds this same value from
/// `hipDeviceProp_t::pciDomainID/pciBusID/pciDeviceID` for that reason (RADV: `ac_gpu_info.c`,
/// AMDVLK: `vk_physical_device.cpp`).
///
/// ```
/// use vkhip_interop::hip::amd_uuid_from_pci;
/// use vkhip_interop::vulkan::uuid_string;
/// // The GPU at 0001:c3:1f.0, as RADV and AMDVLK report it.
/// assert_eq!(uuid_string(&amd_uuid_from_pci(0x0001, 0xc3, 0x1f)), "01000000-c300-0000-1f00-000000000000");
/// ```
pub fn amd_uuid_from_pci(domain: u32, bus: u32, device: u32) -> [u8; 16] {
    let mut uuid = [0u8; 16];
    uuid[0..4].copy_from_slice(&domain.to_le_bytes());
    uuid[4..8].copy_from_slice(&bus.to_le_bytes());
    uuid[8..12].copy_from_slice(&device.to_le_bytes());
    uuid
}

/// `(domain, bus, device)` from `hipDeviceGetPCIBusId`'s "dddd:bb:dd.f" (hex fields; HIP 5.x and
/// 6.x both print "%04x:%02x:%02x.0"). `None` for anything else.
fn parse_pci_bus_id(s: &str) -> Option<(u32, u32, u32)> {
    let (domain, rest) = s.trim().split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    let hex = |t: &str| {
        if t.is_empty() || t.len() > 8 {
            None
        } else {
            u32::from_str_radix(t, 16).ok()
        }
    };
    hex(function)?;
    Some((hex(domain)?, hex(bus)?, hex(device)?))
}

/// "5.2.21153" from the `HIP_VERSION` encoding (major·10⁷ + minor·10⁵ + patch).
pub(super) fn format_hip_version(v: i32) -> String {
    format!("{}.{}.{}", v / 10_000_000, (v / 100_000) % 100, v % 100_000)
}

fn layout_error(call: &'static str, message: String) -> Error {
    Error::unsupported(Api::Hip, format!("{call}: {message}"))
}

/// Describe device `ordinal`.
///
/// The PCI location comes from `hipDeviceGetPCIBusId` (HIP 5.x's `hipDeviceGetAttribute` has no
/// PCI domain attribute) and is cross-checked against the bus and device attributes and against
/// the properties struct, whose 5.x layout is assumed for `gcnArchName`: any disagreement is an
/// error rather than a wrong UUID or a garbage target name.
fn describe_device(ordinal: i32, runtime: i32) -> Result<DeviceInfo> {
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
    let compute_units =
        u32::try_from(ffi::device_attribute(ordinal, attr::MULTIPROCESSOR_COUNT)?).unwrap_or(0);
    let uuid = amd_uuid_from_pci(domain, bus, device);
    let arch = props.gcn_arch_name;
    let detail = format!(
        "{arch}, PCI {pci_bus_id}, {compute_units} CUs, HIP runtime {}; UUID {} built from PCI \
         domain/bus/device as RADV and AMDVLK build deviceUUID (hipDeviceGetUuid is not used: it \
         returns the HSA agent UUID, which does not match Vulkan's, hipamd#50)",
        format_hip_version(runtime),
        uuid_string(&uuid)
    );
    Ok(DeviceInfo {
        ordinal,
        name: ffi::device_name(ordinal)?,
        uuid,
        arch,
        pci_bus_id,
        compute_units,
        detail,
    })
}

/// Every device HIP sees; [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when it sees
/// none.
pub(super) fn enumerate() -> Result<Vec<DeviceInfo>> {
    let n = ffi::device_count()?;
    let runtime = ffi::runtime_version()?;
    (0..n).map(|ordinal| describe_device(ordinal, runtime)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_layout_matches_radv_and_amdvlk() {
        // A GPU at 0000:03:00.0 (a common single-GPU desktop slot).
        assert_eq!(amd_uuid_from_pci(0, 3, 0), [0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        // 0001:c3:1f.0: every field little-endian at its own offset.
        assert_eq!(
            amd_uuid_from_pci(0x0001, 0xc3, 0x1f),
            [1, 0, 0, 0, 0xc3, 0, 0, 0, 0x1f, 0, 0, 0, 0, 0, 0, 0]
        );
        // Wide values keep byte order (domains can exceed 0xff on large systems).
        assert_eq!(
            amd_uuid_from_pci(0x1234_5678, 0x9a, 0xbc),
            [0x78, 0x56, 0x34, 0x12, 0x9a, 0, 0, 0, 0xbc, 0, 0, 0, 0, 0, 0, 0]
        );
        // As vulkaninfo prints a RADV deviceUUID for 0000:03:00.0.
        assert_eq!(uuid_string(&amd_uuid_from_pci(0, 3, 0)), "00000000-0300-0000-0000-000000000000");
    }

    #[test]
    fn pci_bus_id_strings_parse() {
        assert_eq!(parse_pci_bus_id("0000:03:00.0"), Some((0, 3, 0)));
        assert_eq!(parse_pci_bus_id("0001:c3:1f.0"), Some((1, 0xc3, 0x1f)));
        assert_eq!(parse_pci_bus_id("10000:e3:00.0\n"), Some((0x10000, 0xe3, 0)));
        for bad in ["", "0000:03:00", "03:00.0", "0000:zz:00.0", "0000::00.0", "0000:03:00.x"] {
            assert_eq!(parse_pci_bus_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hip_version_encoding() {
        assert_eq!(format_hip_version(50_221_153), "5.2.21153");
        assert_eq!(format_hip_version(60_443_483), "6.4.43483");
    }
}
