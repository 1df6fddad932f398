//! Which device is which: the rules that pair a compute device (a CUDA ordinal or UUID) with the
//! Vulkan device of the same GPU, over plain lists (no driver calls here: the callers list the
//! devices, these rules choose, and the unit tests run them over made-up machines).
//!
//! The two APIs number their devices independently: Vulkan lists every GPU of the machine in
//! the loader's order, CUDA lists the GPUs `CUDA_VISIBLE_DEVICES` leaves it, fastest first by
//! default, renumbered from 0. The one thing both agree on is the UUID (Vulkan's `deviceUUID`,
//! CUDA's `cuDeviceGetUuid`), so a CUDA ordinal is turned into a UUID on CUDA's list and the
//! UUID into an index on Vulkan's.
//!
//! ```
//! use vkhip_interop::device_match::{vulkan_index, ComputeDevice, DeviceRequest, VulkanDevice};
//! // Vulkan sees GPUs A, B, C; CUDA_VISIBLE_DEVICES=2,1 leaves CUDA C (ordinal 0) and B (1).
//! let (a, b, c) = ([1; 16], [2; 16], [3; 16]);
//! let vulkan = [VulkanDevice::new(0, "A", a), VulkanDevice::new(1, "B", b), VulkanDevice::new(2, "C", c)];
//! let cuda = [ComputeDevice::new(0, "C", c), ComputeDevice::new(1, "B", b)];
//! assert_eq!(vulkan_index(DeviceRequest::Ordinal(0), &cuda, &vulkan).unwrap(), (0, 2));
//! let e = vulkan_index(DeviceRequest::Ordinal(2), &cuda, &vulkan).unwrap_err();
//! assert_eq!(e.to_string(), "CUDA device 2: this process sees 2 CUDA devices (0 C, 1 B)");
//! ```

use crate::error::{Api, Error, Result};

/// Format a UUID as 8-4-4-4-12 hex.
///
/// ```
/// assert_eq!(vkhip_interop::vulkan::uuid_string(&[0xab; 16]), "abababab-abab-abab-abab-abababababab");
/// ```
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The device a caller asked for, in the compute API's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceRequest {
    /// The compute API's ordinal, as the process sees it (after `CUDA_VISIBLE_DEVICES`): what
    /// `cuda:N`, `torch.cuda.set_device(N)` and DLPack's `(2, N)` name.
    Ordinal(i32),
    /// The device's UUID (`cuDeviceGetUuid`, Vulkan's `deviceUUID`).
    Uuid([u8; 16]),
}

impl std::fmt::Display for DeviceRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceRequest::Ordinal(n) => write!(f, "{n}"),
            DeviceRequest::Uuid(u) => write!(f, "with UUID {}", uuid_string(u)),
        }
    }
}

/// A compute device as its API lists it (CUDA's order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeDevice {
    pub ordinal: i32,
    pub name: String,
    pub uuid: [u8; 16],
}

impl ComputeDevice {
    pub fn new(ordinal: i32, name: &str, uuid: [u8; 16]) -> Self {
        ComputeDevice { ordinal, name: name.to_string(), uuid }
    }
}

/// A Vulkan physical device as the loader lists it (Vulkan's order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VulkanDevice {
    pub index: usize,
    pub name: String,
    pub uuid: [u8; 16],
}

impl VulkanDevice {
    pub fn new(index: usize, name: &str, uuid: [u8; 16]) -> Self {
        VulkanDevice { index, name: name.to_string(), uuid }
    }
}

/// Why no device was chosen: what was asked and what exists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// An ordinal below 0: a mistake in the request.
    #[error("{api} device {asked}: an ordinal is 0 or more")]
    NegativeOrdinal { api: &'static str, asked: i32 },
    /// The API lists no device at all.
    #[error("{api} device {asked}: this process sees no {api} device")]
    NoDevices { api: &'static str, asked: String },
    /// No listed device has the ordinal or UUID asked for.
    #[error("{api} device {asked}: this process sees {count} {api} device{s} ({listed})", s = if *.count == 1 { "" } else { "s" })]
    NotListed { api: &'static str, asked: String, count: usize, listed: String },
    /// The compute device exists, but no Vulkan device (of those offered) has its UUID.
    #[error("{api} device {ordinal} ({name}, UUID {uuid}) is not one of the Vulkan devices: {listed}")]
    NoVulkanDevice { api: &'static str, ordinal: i32, name: String, uuid: String, listed: String },
}

impl ChoiceError {
    /// The crate's error: a negative ordinal is [`ErrorKind::Invalid`](crate::ErrorKind::Invalid)
    /// (the caller's mistake); a device the machine does not have is
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) (the environment).
    pub fn into_error(self, api: Api) -> Error {
        match self {
            ChoiceError::NegativeOrdinal { .. } => Error::invalid(api, self.to_string()),
            _ => Error::unavailable(api, "", self.to_string()),
        }
    }
}

fn compute_list(seen: &[ComputeDevice]) -> String {
    seen.iter().map(|d| format!("{} {}", d.ordinal, d.name)).collect::<Vec<_>>().join(", ")
}

fn vulkan_list(seen: &[VulkanDevice]) -> String {
    if seen.is_empty() {
        return "none".to_string();
    }
    seen.iter()
        .map(|d| format!("[{}] {} (UUID {})", d.index, d.name, uuid_string(&d.uuid)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The position in `seen` (the compute API's list, named `api` in errors) of the device asked for.
pub fn compute_position(
    api: &'static str,
    want: DeviceRequest,
    seen: &[ComputeDevice],
) -> Result<usize, ChoiceError> {
    if let DeviceRequest::Ordinal(n) = want {
        if n < 0 {
            return Err(ChoiceError::NegativeOrdinal { api, asked: n });
        }
    }
    if seen.is_empty() {
        return Err(ChoiceError::NoDevices { api, asked: want.to_string() });
    }
    let found = match want {
        DeviceRequest::Ordinal(n) => seen.iter().position(|d| d.ordinal == n),
        DeviceRequest::Uuid(u) => seen.iter().position(|d| d.uuid == u),
    };
    found.ok_or_else(|| ChoiceError::NotListed {
        api,
        asked: want.to_string(),
        count: seen.len(),
        listed: compute_list(seen),
    })
}

/// The position in `vulkan` of the device with `compute`'s UUID.
pub fn vulkan_position(
    api: &'static str,
    compute: &ComputeDevice,
    vulkan: &[VulkanDevice],
) -> Result<usize, ChoiceError> {
    vulkan.iter().position(|v| v.uuid == compute.uuid).ok_or_else(|| ChoiceError::NoVulkanDevice {
        api,
        ordinal: compute.ordinal,
        name: compute.name.clone(),
        uuid: uuid_string(&compute.uuid),
        listed: vulkan_list(vulkan),
    })
}

/// The CUDA device asked for and the Vulkan device of the same GPU: (position in `cuda`,
/// Vulkan index of the match).
pub fn vulkan_index(
    want: DeviceRequest,
    cuda: &[ComputeDevice],
    vulkan: &[VulkanDevice],
) -> Result<(usize, usize), ChoiceError> {
    let c = compute_position("CUDA", want, cuda)?;
    let v = vulkan_position("CUDA", &cuda[c], vulkan)?;
    Ok((c, vulkan[v].index))
}

/// For each Vulkan device (in `vulkan`'s order), the ordinal of the compute device with its
/// UUID, if any: what `vkhip info` prints.
pub fn pairing(compute: &[ComputeDevice], vulkan: &[VulkanDevice]) -> Vec<(usize, Option<i32>)> {
    vulkan.iter().map(|v| (v.index, compute.iter().find(|c| c.uuid == v.uuid).map(|c| c.ordinal))).collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    const A: [u8; 16] = [0xa; 16];
    const B: [u8; 16] = [0xb; 16];
    const C: [u8; 16] = [0xc; 16];
    const D: [u8; 16] = [0xd; 16];

    fn vk(list: &[(&str, [u8; 16])]) -> Vec<VulkanDevice> {
        list.iter().enumerate().map(|(i, (n, u))| VulkanDevice::new(i, n, *u)).collect()
    }

    fn cuda(list: &[(&str, [u8; 16])]) -> Vec<ComputeDevice> {
        list.iter().enumerate().map(|(i, (n, u))| ComputeDevice::new(i as i32, n, *u)).collect()
    }

    #[test]
    fn vulkan_order_is_not_cuda_order() {
        // Vulkan: A B C D; CUDA (fastest first): D C B A.
        let v = vk(&[("A", A), ("B", B), ("C", C), ("D", D)]);
        let c = cuda(&[("D", D), ("C", C), ("B", B), ("A", A)]);
        for ordinal in 0..4 {
            let (pos, index) = vulkan_index(DeviceRequest::Ordinal(ordinal), &c, &v).unwrap();
            assert_eq!(pos, ordinal as usize);
            assert_eq!(index, 3 - ordinal as usize, "cuda:{ordinal}");
            assert_eq!(v[index].uuid, c[pos].uuid);
        }
        assert_eq!(pairing(&c, &v), vec![(0, Some(3)), (1, Some(2)), (2, Some(1)), (3, Some(0))]);
    }

    #[test]
    fn by_uuid_finds_the_ordinal() {
        let v = vk(&[("A", A), ("B", B)]);
        let c = cuda(&[("B", B), ("A", A)]);
        assert_eq!(vulkan_index(DeviceRequest::Uuid(A), &c, &v).unwrap(), (1, 0));
        let e = vulkan_index(DeviceRequest::Uuid(C), &c, &v).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("CUDA device with UUID {}: this process sees 2 CUDA devices (0 B, 1 A)", uuid_string(&C))
        );
    }

    #[test]
    fn cuda_visible_devices_renumbers() {
        // Four GPUs in Vulkan; CUDA_VISIBLE_DEVICES=3,1 leaves CUDA two, numbered 0 and 1.
        let v = vk(&[("g0", A), ("g1", B), ("g2", C), ("g3", D)]);
        let c = cuda(&[("g3", D), ("g1", B)]);
        assert_eq!(vulkan_index(DeviceRequest::Ordinal(0), &c, &v).unwrap(), (0, 3));
        assert_eq!(vulkan_index(DeviceRequest::Ordinal(1), &c, &v).unwrap(), (1, 1));
        let e = vulkan_index(DeviceRequest::Ordinal(3), &c, &v).unwrap_err();
        assert_eq!(e.to_string(), "CUDA device 3: this process sees 2 CUDA devices (0 g3, 1 g1)");
        assert_eq!(e.clone().into_error(Api::Cuda).kind(), ErrorKind::Unavailable);
        assert_eq!(pairing(&c, &v), vec![(0, None), (1, Some(1)), (2, None), (3, Some(0))]);
    }

    #[test]
    fn a_cuda_device_vulkan_does_not_list() {
        // The Vulkan driver offers only one of the two GPUs (say the other cannot export).
        let v = vk(&[("A", A)]);
        let c = cuda(&[("A", A), ("B", B)]);
        assert_eq!(vulkan_index(DeviceRequest::Ordinal(0), &c, &v).unwrap(), (0, 0));
        let e = vulkan_index(DeviceRequest::Ordinal(1), &c, &v).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "CUDA device 1 (B, UUID {}) is not one of the Vulkan devices: [0] A (UUID {})",
                uuid_string(&B),
                uuid_string(&A)
            )
        );
        let none = vulkan_index(DeviceRequest::Ordinal(0), &c, &[]).unwrap_err();
        assert!(none.to_string().ends_with("is not one of the Vulkan devices: none"), "{none}");
    }

    #[test]
    fn one_gpu() {
        let v = vk(&[("H200", A)]);
        let c = cuda(&[("H200", A)]);
        assert_eq!(vulkan_index(DeviceRequest::Ordinal(0), &c, &v).unwrap(), (0, 0));
        let e = vulkan_index(DeviceRequest::Ordinal(1), &c, &v).unwrap_err();
        assert_eq!(e.to_string(), "CUDA device 1: this process sees 1 CUDA device (0 H200)");
        let e = e.into_error(Api::Cuda);
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(e.to_string().contains("CUDA device 1: this process sees 1 CUDA device (0 H200)"), "{e}");
    }

    #[test]
    fn no_gpu() {
        let e = vulkan_index(DeviceRequest::Ordinal(0), &[], &vk(&[("llvmpipe", A)])).unwrap_err();
        assert_eq!(e.to_string(), "CUDA device 0: this process sees no CUDA device");
        assert_eq!(e.into_error(Api::Cuda).kind(), ErrorKind::Unavailable);
        assert!(pairing(&[], &vk(&[("llvmpipe", A)])) == vec![(0, None)]);
    }

    #[test]
    fn negative_ordinal_is_the_callers_mistake() {
        let c = cuda(&[("A", A)]);
        let e = compute_position("CUDA", DeviceRequest::Ordinal(-1), &c).unwrap_err();
        assert_eq!(e.to_string(), "CUDA device -1: an ordinal is 0 or more");
        assert_eq!(e.into_error(Api::Cuda).kind(), ErrorKind::Invalid);
    }
}
