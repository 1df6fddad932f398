//! HIP (AMD; cargo feature `hip`, the header's `VKHIP_HIP`): open the device the Vulkan device
//! runs on, import shared buffers, compile a kernel with hiprtc, launch it, wait for the stream.
//! ROCm cannot import semaphores on Linux: the hand-off is on the host (vkhip_hip_synchronize,
//! then the engine's submit), as the interop crate's `hip` module explains.

use crate::cuda::{Launch, VkhipDim3};
use crate::handle::{self, handle};
use crate::vulkan::{VkhipBuffer, VkhipDevice};
use crate::{entry, text, VkhipStatus};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use vkhip_interop::hip::{Hip, HipBuffer, HipKernel};

/// A HIP device and its stream.
pub struct VkhipHip {
    /// Shared with the profiler's stream tracks made on it, which borrow it.
    pub(crate) hip: Arc<Hip>,
    describe: CString,
}
handle!(VkhipHip, Hip);

/// Open the HIP device the Vulkan `device` runs on (AMD: matched by PCI location). Without ROCm
/// or a GPU: VKHIP_STATUS_UNAVAILABLE.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_open(device: *const VkhipDevice, out: *mut *mut VkhipHip) -> VkhipStatus {
    const F: &str = "vkhip_hip_open";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle.
            let uuid = unsafe { handle::get(device, F, "device") }?.device.uuid();
            let hip = Hip::open(uuid)?;
            let describe = CString::new(hip.describe().replace('\0', " ")).unwrap_or_default();
            Ok(VkhipHip { hip: Arc::new(hip), describe })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy the handle (NULL: nothing happens), after waiting for its stream.
///
/// # Safety
/// No other call on `hip` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_destroy(hip: *mut VkhipHip) -> VkhipStatus {
    const F: &str = "vkhip_hip_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(hip, F) })
}

/// One line naming the device, valid while the handle lives.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_describe(hip: *const VkhipHip, out: *mut *const c_char) -> VkhipStatus {
    const F: &str = "vkhip_hip_describe";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(hip, F, "hip")?.describe.as_ptr())) })
}

/// Wait on the host until everything enqueued on the stream has finished: with no semaphore
/// import on Linux, this is the hand-off to Vulkan.
///
/// # Safety
/// `hip` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_synchronize(hip: *const VkhipHip) -> VkhipStatus {
    const F: &str = "vkhip_hip_synchronize";
    // SAFETY: a checked handle.
    entry(F, || Ok(unsafe { handle::get(hip, F, "hip") }?.hip.synchronize()?))
}

/// A shared buffer imported into HIP and mapped for kernels.
pub struct VkhipHipBuffer {
    buffer: HipBuffer,
}
handle!(VkhipHipBuffer, HipBuffer);

/// Export `buffer` and import it into `hip`'s device, mapped as one device pointer.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_import_buffer(
    hip: *const VkhipHip,
    buffer: *const VkhipBuffer,
    out: *mut *mut VkhipHipBuffer,
) -> VkhipStatus {
    const F: &str = "vkhip_hip_import_buffer";
    entry(F, || {
        let make = || {
            // SAFETY: checked handles.
            let (h, b) = unsafe { (handle::get(hip, F, "hip")?, handle::get(buffer, F, "buffer")?) };
            Ok(VkhipHipBuffer { buffer: h.hip.import_buffer(b.buffer.export()?)? })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Unmap and release an imported buffer (NULL: nothing happens), after the stream is idle.
///
/// # Safety
/// No other call on `buffer` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_buffer_destroy(buffer: *mut VkhipHipBuffer) -> VkhipStatus {
    const F: &str = "vkhip_hip_buffer_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(buffer, F) })
}

/// The buffer's device pointer (a hipDeviceptr_t), for kernel arguments.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_buffer_pointer(
    buffer: *const VkhipHipBuffer,
    out: *mut u64,
) -> VkhipStatus {
    const F: &str = "vkhip_hip_buffer_pointer";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(buffer, F, "buffer")?.buffer.device_ptr())) })
}

/// A compiled HIP kernel.
pub struct VkhipHipKernel {
    kernel: HipKernel,
}
handle!(VkhipHipKernel, HipKernel);

/// Compile `source` with hiprtc for the device and load the `extern "C" __global__` function
/// `entry_point` (VKHIP_STATUS_COMPILE_FAILED with hiprtc's log when rejected).
///
/// # Safety
/// `source` and `entry_point` are NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_compile(
    hip: *const VkhipHip,
    source: *const c_char,
    entry_point: *const c_char,
    out: *mut *mut VkhipHipKernel,
) -> VkhipStatus {
    const F: &str = "vkhip_hip_compile";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle; strings per this function's contract.
            let (h, source, name) = unsafe {
                (
                    handle::get(hip, F, "hip")?,
                    text(source, F, "source")?,
                    text(entry_point, F, "entry_point")?,
                )
            };
            Ok(VkhipHipKernel { kernel: h.hip.compile(source, name)? })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Unload a kernel (NULL: nothing happens) once no launch of it is pending.
///
/// # Safety
/// No other call on `kernel` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_kernel_destroy(kernel: *mut VkhipHipKernel) -> VkhipStatus {
    const F: &str = "vkhip_hip_kernel_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(kernel, F) })
}

/// Enqueue `kernel` on the stream, as vkhip_cuda_launch does on CUDA's.
///
/// # Safety
/// As vkhip_cuda_launch.
#[no_mangle]
pub unsafe extern "C" fn vkhip_hip_launch(
    hip: *const VkhipHip,
    kernel: *const VkhipHipKernel,
    grid: VkhipDim3,
    block: VkhipDim3,
    args: *mut *mut c_void,
    arg_count: u32,
) -> VkhipStatus {
    const F: &str = "vkhip_hip_launch";
    entry(F, || {
        // SAFETY: `args` holds `arg_count` pointers (this function's contract).
        let launch = unsafe { Launch::check(grid, block, args, arg_count, F) }?;
        // SAFETY: checked handles; the arguments per this function's contract.
        unsafe {
            let (h, k) = (handle::get(hip, F, "hip")?, handle::get(kernel, F, "kernel")?);
            Ok(h.hip.launch(&k.kernel, launch.grid, launch.block, launch.args)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn the_hip_handles_may_be_shared_between_threads() {
        send_sync::<VkhipHip>();
        send_sync::<VkhipHipBuffer>();
        send_sync::<VkhipHipKernel>();
    }

    #[test]
    fn a_bad_launch_is_refused_before_hip_is_touched() {
        let one = VkhipDim3 { x: 1, y: 1, z: 1 };
        // SAFETY: NULL handles and arguments are checked before anything is read.
        let s = unsafe {
            vkhip_hip_launch(std::ptr::null(), std::ptr::null(), one, one, std::ptr::null_mut(), 2)
        };
        assert_eq!(s, VkhipStatus::NullArgument);
    }
}
