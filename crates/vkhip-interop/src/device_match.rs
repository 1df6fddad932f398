//! Which compute device is the Vulkan device: the one whose UUID is Vulkan's `deviceUUID`.

use crate::error::{Api, Error, Result};
use crate::vulkan::uuid_string;

/// The index in `seen` (ordinal, name, UUID of each device the compute API lists) of the device
/// whose UUID is `want`, or an [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) error
/// naming the devices seen.
pub(crate) fn by_uuid(api: Api, want: [u8; 16], seen: &[(i32, &str, [u8; 16])]) -> Result<usize> {
    if let Some(i) = seen.iter().position(|d| d.2 == want) {
        return Ok(i);
    }
    let listed = if seen.is_empty() {
        "none".to_string()
    } else {
        seen.iter()
            .map(|(ordinal, name, uuid)| format!("{ordinal} {name} (UUID {})", uuid_string(uuid)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let name = api.name().to_uppercase();
    Err(Error::unsupported(
        api,
        format!(
            "no {name} device has the Vulkan device's UUID {}; {name} devices seen: {listed}",
            uuid_string(&want)
        ),
    ))
}
