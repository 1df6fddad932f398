//! Fault injection, compiled in and inert by default. `VKHIP_FAULT=POINT[@N][,POINT[@N]…]` makes
//! the N-th call (default: the first) at each named point fail the way the real failure would,
//! so every error path can be run on purpose, also on lavapipe:
//!
//! | point | where | injected result |
//! |---|---|---|
//! | `vk-alloc` | every vkAllocateMemory of the app's own (host-mapped and unshared slots, images, host-visible buffers; exported slots are the interop crate's, which injects nothing) | VK_ERROR_OUT_OF_DEVICE_MEMORY |
//! | `queue-submit` | every vkQueueSubmit (`Context::submit`: draws, Vulkan-backend dispatches, one-shot copies) | VK_ERROR_OUT_OF_HOST_MEMORY |
//! | `device-lost` | the same submits | VK_ERROR_DEVICE_LOST |
//! | `kernel-compile` | the Vulkan backend's compute pipeline (its kernel compilation) | VK_ERROR_INVALID_SHADER_NV |
//! | `cuda-memory-import` | CUDA's import of a slot (cuImportExternalMemory) | CUDA_ERROR_INVALID_HANDLE |
//! | `cuda-semaphore-import` | CUDA's import of a semaphore (cuImportExternalSemaphore) | CUDA_ERROR_NOT_SUPPORTED |
//! | `cuda-compile` | NVRTC compiling the kernel (the cache is bypassed) | NVRTC_ERROR_COMPILATION |
//! | `cuda-launch` | a kernel launch (cuLaunchKernel) | CUDA_ERROR_ILLEGAL_ADDRESS (the error a kernel's bad access leaves; the injection does not make the context unusable the way a real one does) |
//! | `surface-query` | every query of a window's surface: while the device is chosen (support, capabilities, formats, present modes of each device, in that order) and later (capabilities before each swapchain) | VK_ERROR_UNKNOWN (what NVIDIA's driver answers on an X server without DRI3) |
//!
//! Unset, each point costs a `Once` check and one relaxed atomic load. A malformed value is a usage error (exit 2),
//! checked at start-up by [`check_env`].

use ash::vk;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// The environment variable that arms faults.
pub const ENV: &str = "VKHIP_FAULT";

/// A place where a fault can be injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    VkAlloc,
    QueueSubmit,
    DeviceLost,
    KernelCompile,
    CudaMemoryImport,
    CudaSemaphoreImport,
    CudaCompile,
    CudaLaunch,
    SurfaceQuery,
}

impl Fault {
    const ALL: [Fault; N] = [
        Fault::VkAlloc,
        Fault::QueueSubmit,
        Fault::DeviceLost,
        Fault::KernelCompile,
        Fault::CudaMemoryImport,
        Fault::CudaSemaphoreImport,
        Fault::CudaCompile,
        Fault::CudaLaunch,
        Fault::SurfaceQuery,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::VkAlloc => "vk-alloc",
            Fault::QueueSubmit => "queue-submit",
            Fault::DeviceLost => "device-lost",
            Fault::KernelCompile => "kernel-compile",
            Fault::CudaMemoryImport => "cuda-memory-import",
            Fault::CudaSemaphoreImport => "cuda-semaphore-import",
            Fault::CudaCompile => "cuda-compile",
            Fault::CudaLaunch => "cuda-launch",
            Fault::SurfaceQuery => "surface-query",
        }
    }

    /// The Vulkan result the real failure would return (the compute API's points: unknown).
    pub fn result(self) -> vk::Result {
        match self {
            Fault::VkAlloc => vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
            Fault::QueueSubmit => vk::Result::ERROR_OUT_OF_HOST_MEMORY,
            Fault::DeviceLost => vk::Result::ERROR_DEVICE_LOST,
            Fault::KernelCompile => vk::Result::ERROR_INVALID_SHADER_NV,
            _ => vk::Result::ERROR_UNKNOWN,
        }
    }

    /// The status name the compute API's real failure would carry.
    pub fn compute_status(self) -> &'static str {
        match self {
            Fault::CudaMemoryImport => "CUDA_ERROR_INVALID_HANDLE",
            Fault::CudaSemaphoreImport => "CUDA_ERROR_NOT_SUPPORTED",
            Fault::CudaCompile => "NVRTC_ERROR_COMPILATION",
            Fault::CudaLaunch => "CUDA_ERROR_ILLEGAL_ADDRESS",
            _ => "an unknown error",
        }
    }

    fn index(self) -> usize {
        Fault::ALL.iter().position(|&f| f == self).unwrap_or(0)
    }
}

/// Which call fails at each point (0 = never), and how many calls each point has seen.
const N: usize = 9;
static FAIL_AT: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];
static SEEN: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];
static FROM_ENV: Once = Once::new();

/// A malformed `VKHIP_FAULT`.
#[derive(Debug, thiserror::Error)]
#[error("{ENV}={value}: {why} (points: vk-alloc, queue-submit, device-lost, kernel-compile, cuda-memory-import, cuda-semaphore-import, cuda-compile, cuda-launch, surface-query; POINT[@N],…)")]
pub struct FaultSpecError {
    value: String,
    why: String,
}

/// Parse `POINT[@N][,POINT[@N]…]` into the call number that fails at each point.
fn parse(value: &str) -> Result<[u64; N], FaultSpecError> {
    let bad = |why: String| FaultSpecError { value: value.to_string(), why };
    let mut fail_at = [0u64; N];
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, n) = match item.split_once('@') {
            Some((name, n)) => {
                let n = n.parse::<u64>().ok().filter(|&n| n >= 1);
                (name, n.ok_or_else(|| bad(format!("'{item}': N must be a whole number ≥ 1")))?)
            }
            None => (item, 1),
        };
        let f = Fault::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| bad(format!("unknown fault point '{name}'")))?;
        fail_at[f.index()] = n;
    }
    Ok(fail_at)
}

fn store(fail_at: [u64; N]) {
    for (i, n) in fail_at.into_iter().enumerate() {
        SEEN[i].store(0, Ordering::SeqCst);
        FAIL_AT[i].store(n, Ordering::SeqCst);
    }
}

/// Arm faults from `spec` (the `VKHIP_FAULT` syntax; "" disarms), resetting the call counts: the
/// test hook for in-process checks. Replaces what the environment armed.
///
/// # Examples
///
/// ```
/// use vkhip::fault::{arm, hit, Fault};
///
/// // A typo is refused, naming the point.
/// let err = arm("vk-aloc").unwrap_err();
/// assert!(err.to_string().contains("unknown fault point 'vk-aloc'"));
/// assert!(arm("queue-submit@0").is_err());
///
/// // The second vkAllocateMemory fails, and only that one.
/// arm("vk-alloc@2").unwrap();
/// assert!(!hit(Fault::VkAlloc));
/// assert!(hit(Fault::VkAlloc));
/// assert!(!hit(Fault::VkAlloc));
/// assert!(!hit(Fault::QueueSubmit));
/// arm("").unwrap(); // disarm
/// ```
pub fn arm(spec: &str) -> Result<(), FaultSpecError> {
    let fail_at = parse(spec)?;
    FROM_ENV.call_once(|| {});
    store(fail_at);
    Ok(())
}

/// Check `VKHIP_FAULT` at start-up (a typo must not silently inject nothing).
pub fn check_env() -> Result<(), FaultSpecError> {
    match std::env::var(ENV) {
        Ok(v) => parse(&v).map(|_| ()),
        Err(_) => Ok(()),
    }
}

/// Count a call at `point`; `true` if this is the call that must fail.
pub fn hit(point: Fault) -> bool {
    FROM_ENV.call_once(|| {
        if let Some(fail_at) = std::env::var(ENV).ok().and_then(|v| parse(&v).ok()) {
            store(fail_at);
        }
    });
    let i = point.index();
    let at = FAIL_AT[i].load(Ordering::Relaxed);
    if at == 0 {
        return false;
    }
    let n = SEEN[i].fetch_add(1, Ordering::Relaxed) + 1;
    let fire = n == at;
    if fire {
        log::info!("{ENV}: injecting {} at call {n} ({:?})", point.name(), point.result());
    }
    fire
}

/// `Err(the real failure's result)` if `point` fires now, for chaining before the real call:
/// `fault::inject(Fault::VkAlloc).and_then(|()| unsafe { d.allocate_memory(..) })`.
pub fn inject(point: Fault) -> Result<(), vk::Result> {
    if hit(point) {
        Err(point.result())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_typos_are_refused() {
        assert_eq!(parse("").unwrap(), [0; N]);
        assert_eq!(parse("vk-alloc").unwrap(), [1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse("queue-submit@7, device-lost@2").unwrap(), [0, 7, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse("kernel-compile@3,cuda-memory-import").unwrap(), [0, 0, 0, 3, 1, 0, 0, 0, 0]);
        assert_eq!(parse("cuda-launch@5,cuda-compile").unwrap(), [0, 0, 0, 0, 0, 0, 1, 5, 0]);
        assert_eq!(parse("surface-query@4").unwrap(), [0, 0, 0, 0, 0, 0, 0, 0, 4]);
        for bad in ["vk-aloc", "queue-submit@0", "device-lost@x", "@3", "memory-import"] {
            assert!(parse(bad).is_err(), "{bad} accepted");
        }
    }
}
