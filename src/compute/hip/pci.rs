//! Pure mappings between PCI locations and the deviceUUID that AMD's Vulkan drivers report.

/// The `VkPhysicalDeviceIDProperties::deviceUUID` that RADV and AMDVLK report for the GPU at PCI
/// `domain:bus:device`: three little-endian `u32` (domain, bus, device), then zeroes (the function
/// slot, also a `u32`, is 0 for a GPU).
///
/// HIP's own `hipDeviceGetUuid` cannot be compared with it (it returns the HSA agent UUID,
/// hipamd#50); rocm-examples `HIP-Basic/vulkan_interop/main.hip` builds this same value from
/// `hipDeviceProp_t::pciDomainID/pciBusID/pciDeviceID` for that reason (RADV: `ac_gpu_info.c`,
/// AMDVLK: `vk_physical_device.cpp`).
pub fn amd_uuid_from_pci(domain: u32, bus: u32, device: u32) -> [u8; 16] {
    let mut uuid = [0u8; 16];
    uuid[0..4].copy_from_slice(&domain.to_le_bytes());
    uuid[4..8].copy_from_slice(&bus.to_le_bytes());
    uuid[8..12].copy_from_slice(&device.to_le_bytes());
    uuid
}

/// `(domain, bus, device)` from `hipDeviceGetPCIBusId`'s "dddd:bb:dd.f" (hex fields; HIP 5.x and
/// 6.x both print "%04x:%02x:%02x.0"). `None` for anything else.
pub fn parse_pci_bus_id(s: &str) -> Option<(u32, u32, u32)> {
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

/// 8-4-4-4-12 hex, as `vulkaninfo` prints deviceUUID.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
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
        assert_eq!(format_uuid(&amd_uuid_from_pci(0, 3, 0)), "00000000-0300-0000-0000-000000000000");
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
}
