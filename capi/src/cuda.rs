//! CUDA: open the device the Vulkan device runs on, import its shared objects, compile a kernel
//! with NVRTC, launch it, and wait and signal on a stream — the crate's own, or the engine's
//! (`vkhip_cuda_with_stream`).

use crate::handle::{self, handle};
use crate::vulkan::{VkhipBuffer, VkhipDevice, VkhipImage, VkhipSemaphore};
use crate::{entry, text, Fail, VkhipStatus};
use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use vkhip_interop::cuda::{Cuda, CudaBuffer, CudaImage, CudaKernel, CudaSemaphore};
use vkhip_interop::FrameStream;

/// A CUDA device (its primary context, the one the CUDA runtime uses) and the stream everything
/// is enqueued on: the crate's own non-blocking stream, or the engine's (vkhip_cuda_with_stream).
pub struct VkhipCuda {
    /// Shared with the profiler's stream tracks made on it, which borrow it.
    pub(crate) cuda: Arc<Cuda>,
    describe: CString,
}
handle!(VkhipCuda, Cuda);

impl VkhipCuda {
    fn new(cuda: Cuda) -> VkhipCuda {
        let describe = CString::new(cuda.describe().replace('\0', " ")).unwrap_or_default();
        VkhipCuda { cuda: Arc::new(cuda), describe }
    }
}

/// Open the CUDA device whose UUID is `device`'s deviceUUID, with a stream of the crate's own.
/// Without a driver or a GPU: VKHIP_STATUS_UNAVAILABLE (one line saying why).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_open(
    device: *const VkhipDevice,
    out: *mut *mut VkhipCuda,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_open";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle.
            let uuid = unsafe { handle::get(device, F, "device") }?.device.uuid();
            let cuda = Cuda::open(uuid)?;
            Ok(VkhipCuda::new(cuda))
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// A second handle on `cuda`'s device that enqueues everything (launches, waits, signals, the
/// profiler's marks through vkhip_profiler_cuda_stream) on `stream`, a CUstream the engine owns,
/// in the engine's order with its own work there: NULL or CU_STREAM_LEGACY ((CUstream)1) for the
/// legacy default stream, CU_STREAM_PER_THREAD ((CUstream)2) for the per-thread one, else a
/// stream of the device's primary context (the one the CUDA runtime uses; a stream of another
/// context is VKHIP_STATUS_INVALID, naming both). Objects imported through either handle serve
/// both. Destroying the handle neither synchronises nor destroys `stream`; once a stream was
/// lent, destroying an imported object waits for the whole context.
///
/// # Safety
/// `stream` is one of the above and outlives the returned handle; `out` as everywhere.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_with_stream(
    cuda: *const VkhipCuda,
    stream: *mut c_void,
    out: *mut *mut VkhipCuda,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_with_stream";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle; `stream` per this function's contract (a CUstream is a
            // pointer; the crate takes it as the integer the frameworks pass around).
            let lent = unsafe { handle::get(cuda, F, "cuda")?.cuda.with_stream(stream as usize as u64) }?;
            Ok(VkhipCuda::new(lent))
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// The CUstream the handle enqueues on (the crate's own, or the one vkhip_cuda_with_stream
/// lent; CU_STREAM_LEGACY for NULL).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_stream(cuda: *const VkhipCuda, out: *mut *mut c_void) -> VkhipStatus {
    const F: &str = "vkhip_cuda_stream";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe {
        handle::put(out, F, || Ok(handle::get(cuda, F, "cuda")?.cuda.stream() as usize as *mut c_void))
    })
}

/// Destroy the handle (NULL: nothing happens): waits for the stream if it is the crate's own,
/// then releases the device once nothing made from it is left.
///
/// # Safety
/// No other call on `cuda` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_destroy(cuda: *mut VkhipCuda) -> VkhipStatus {
    const F: &str = "vkhip_cuda_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(cuda, F) })
}

/// "NVIDIA H100 80GB HBM3 (CUDA device 0, sm_90)", valid while the handle lives.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_describe(cuda: *const VkhipCuda, out: *mut *const c_char) -> VkhipStatus {
    const F: &str = "vkhip_cuda_describe";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(cuda, F, "cuda")?.describe.as_ptr())) })
}

/// Wait on the host until everything enqueued on the handle's stream so far has finished
/// (cuStreamSynchronize: CUDA's own wait, never a semaphore value).
///
/// # Safety
/// `cuda` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_synchronize(cuda: *const VkhipCuda) -> VkhipStatus {
    const F: &str = "vkhip_cuda_synchronize";
    // SAFETY: a checked handle.
    entry(F, || Ok(unsafe { handle::get(cuda, F, "cuda") }?.cuda.synchronize()?))
}

/// A shared buffer imported into CUDA and mapped for kernels.
pub struct VkhipCudaBuffer {
    buffer: CudaBuffer,
}
handle!(VkhipCudaBuffer, CudaBuffer);

/// Export `buffer` and import it into `cuda`'s device: its whole size mapped as one device
/// pointer (vkhip_cuda_buffer_pointer). The exported fd is the driver's after the import, and
/// closed by vkhip if the import fails.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_import_buffer(
    cuda: *const VkhipCuda,
    buffer: *const VkhipBuffer,
    out: *mut *mut VkhipCudaBuffer,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_import_buffer";
    entry(F, || {
        let make = || {
            // SAFETY: checked handles.
            let (c, b) = unsafe { (handle::get(cuda, F, "cuda")?, handle::get(buffer, F, "buffer")?) };
            let buffer = c.cuda.import_buffer(b.buffer.export()?)?;
            Ok(VkhipCudaBuffer { buffer })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Unmap and release an imported buffer (NULL: nothing happens), after its device's stream is
/// idle.
///
/// # Safety
/// No other call on `buffer` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_buffer_destroy(buffer: *mut VkhipCudaBuffer) -> VkhipStatus {
    const F: &str = "vkhip_cuda_buffer_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(buffer, F) })
}

/// The buffer's CUdeviceptr (16-byte aligned), for kernel arguments.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_buffer_pointer(
    buffer: *const VkhipCudaBuffer,
    out: *mut u64,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_buffer_pointer";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(buffer, F, "buffer")?.buffer.device_ptr())) })
}

/// A shared image imported into CUDA: a CUDA array with a surface object.
pub struct VkhipCudaImage {
    image: CudaImage,
}
handle!(VkhipCudaImage, CudaImage);

/// Export `image` and import it into `cuda`'s device as a CUDA array of one level with a surface
/// object (vkhip_cuda_image_surface). A kernel writes texel (x, y) with
/// surf2Dwrite(value, surface, x * texel_bytes, y) — x in bytes.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_import_image(
    cuda: *const VkhipCuda,
    image: *const VkhipImage,
    out: *mut *mut VkhipCudaImage,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_import_image";
    entry(F, || {
        let make = || {
            // SAFETY: checked handles.
            let (c, i) = unsafe { (handle::get(cuda, F, "cuda")?, handle::get(image, F, "image")?) };
            let image = c.cuda.import_image(i.image.export()?)?;
            Ok(VkhipCudaImage { image })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Release an imported image (NULL: nothing happens), after its device's stream is idle.
///
/// # Safety
/// No other call on `image` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_image_destroy(image: *mut VkhipCudaImage) -> VkhipStatus {
    const F: &str = "vkhip_cuda_image_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(image, F) })
}

/// The image's surface object (a cudaSurfaceObject_t), for kernel arguments.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_image_surface(
    image: *const VkhipCudaImage,
    out: *mut u64,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_image_surface";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(image, F, "image")?.image.surface())) })
}

/// A shared timeline semaphore imported into CUDA.
pub struct VkhipCudaSemaphore {
    semaphore: CudaSemaphore,
}
handle!(VkhipCudaSemaphore, CudaSemaphore);

/// Export the timeline `semaphore` and import it into `cuda`'s device.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_import_timeline(
    cuda: *const VkhipCuda,
    semaphore: *const VkhipSemaphore,
    out: *mut *mut VkhipCudaSemaphore,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_import_timeline";
    entry(F, || {
        let make = || {
            // SAFETY: checked handles.
            let (c, s) = unsafe { (handle::get(cuda, F, "cuda")?, handle::get(semaphore, F, "semaphore")?) };
            let semaphore = c.cuda.import_timeline(s.semaphore.export()?)?;
            Ok(VkhipCudaSemaphore { semaphore })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy an imported semaphore (NULL: nothing happens), after its device's stream is idle.
///
/// # Safety
/// No other call on `semaphore` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_semaphore_destroy(semaphore: *mut VkhipCudaSemaphore) -> VkhipStatus {
    const F: &str = "vkhip_cuda_semaphore_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(semaphore, F) })
}

/// Enqueue on the handle's stream a wait until `semaphore` reaches `value`
/// (cuWaitExternalSemaphoresAsync); the host does not wait.
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_wait(
    cuda: *const VkhipCuda,
    semaphore: *const VkhipCudaSemaphore,
    value: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_wait";
    entry(F, || {
        // SAFETY: checked handles.
        let (c, s) = unsafe { (handle::get(cuda, F, "cuda")?, handle::get(semaphore, F, "semaphore")?) };
        Ok(c.cuda.wait(&s.semaphore, value)?)
    })
}

/// Enqueue on the handle's stream a signal of `semaphore` = `value` once the work before it is
/// done (cuSignalExternalSemaphoresAsync).
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_signal(
    cuda: *const VkhipCuda,
    semaphore: *const VkhipCudaSemaphore,
    value: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_signal";
    entry(F, || {
        // SAFETY: checked handles.
        let (c, s) = unsafe { (handle::get(cuda, F, "cuda")?, handle::get(semaphore, F, "semaphore")?) };
        Ok(c.cuda.signal(&s.semaphore, value)?)
    })
}

/// A compiled kernel: one `extern "C" __global__` function, its module kept loaded.
pub struct VkhipCudaKernel {
    kernel: CudaKernel,
}
handle!(VkhipCudaKernel, CudaKernel);

/// Compile `source` with NVRTC for the device (a cubin for its architecture) and load the
/// `extern "C" __global__` function `entry_point`. A rejected source is
/// VKHIP_STATUS_COMPILE_FAILED with NVRTC's log in vkhip_last_error().
///
/// # Safety
/// `source` and `entry_point` are NULL or NUL-terminated; `out` as everywhere.
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_compile(
    cuda: *const VkhipCuda,
    source: *const c_char,
    entry_point: *const c_char,
    out: *mut *mut VkhipCudaKernel,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_compile";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle; strings per this function's contract.
            let (c, source, name) = unsafe {
                (
                    handle::get(cuda, F, "cuda")?,
                    text(source, F, "source")?,
                    text(entry_point, F, "entry_point")?,
                )
            };
            let kernel = c.cuda.compile(source, name)?;
            Ok(VkhipCudaKernel { kernel })
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
pub unsafe extern "C" fn vkhip_cuda_kernel_destroy(kernel: *mut VkhipCudaKernel) -> VkhipStatus {
    const F: &str = "vkhip_cuda_kernel_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(kernel, F) })
}

/// Three dimensions of a launch (grid in blocks, block in threads).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VkhipDim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

/// Enqueue `kernel` on the handle's stream: `grid` blocks of `block` threads, no dynamic shared
/// memory. `args` is what cuLaunchKernel's kernelParams is: `arg_count` pointers, one per kernel
/// parameter in order, each to a value of that parameter's type (copied before this returns).
///
/// # Safety
/// `kernel` was compiled on this device; `args` matches the kernel's parameters; device pointers
/// and surfaces among them belong to objects alive until the stream is past the launch, and
/// cover everything the kernel touches (vkhip cannot check what a kernel writes).
#[no_mangle]
pub unsafe extern "C" fn vkhip_cuda_launch(
    cuda: *const VkhipCuda,
    kernel: *const VkhipCudaKernel,
    grid: VkhipDim3,
    block: VkhipDim3,
    args: *mut *mut c_void,
    arg_count: u32,
) -> VkhipStatus {
    const F: &str = "vkhip_cuda_launch";
    entry(F, || {
        // SAFETY: `args` holds `arg_count` pointers (this function's contract).
        let launch = unsafe { Launch::check(grid, block, args, arg_count, F) }?;
        // SAFETY: checked handles; the arguments per this function's contract.
        unsafe {
            let (c, k) = (handle::get(cuda, F, "cuda")?, handle::get(kernel, F, "kernel")?);
            Ok(c.cuda.launch(&k.kernel, launch.grid, launch.block, launch.args)?)
        }
    })
}

/// A launch's shape and arguments, checked: no dimension 0, no NULL list with a count.
pub(crate) struct Launch<'a> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: &'a mut [*mut c_void],
}

impl Launch<'_> {
    /// # Safety
    /// `args` is NULL or holds `arg_count` pointers, alive for `'a`.
    pub(crate) unsafe fn check<'a>(
        grid: VkhipDim3,
        block: VkhipDim3,
        args: *mut *mut c_void,
        arg_count: u32,
        function: &str,
    ) -> crate::Result<Launch<'a>> {
        let dims = |d: VkhipDim3| [d.x, d.y, d.z];
        let (grid, block) = (dims(grid), dims(block));
        if args.is_null() && arg_count > 0 {
            return Err(Fail::new(
                VkhipStatus::NullArgument,
                format!("{function}: args is NULL, arg_count {arg_count}"),
            ));
        }
        if grid.contains(&0) || block.contains(&0) {
            return Err(Fail::invalid(format!(
                "{function}: grid {grid:?} and block {block:?} must be at least 1 in every dimension"
            )));
        }
        let args: &mut [*mut c_void] = if args.is_null() {
            &mut []
        } else {
            // SAFETY: `arg_count` pointers (this function's contract).
            unsafe { std::slice::from_raw_parts_mut(args, arg_count as usize) }
        };
        Ok(Launch { grid, block, args })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn the_cuda_handles_may_be_shared_between_threads() {
        send_sync::<VkhipCuda>();
        send_sync::<VkhipCudaBuffer>();
        send_sync::<VkhipCudaImage>();
        send_sync::<VkhipCudaSemaphore>();
        send_sync::<VkhipCudaKernel>();
    }

    #[test]
    fn a_null_device_is_refused_before_cuda_is_loaded() {
        let mut out = std::ptr::null_mut();
        // SAFETY: a NULL device is checked before anything is read.
        let s = unsafe { vkhip_cuda_open(std::ptr::null(), &mut out) };
        assert_eq!(s, VkhipStatus::NullArgument);
        assert!(out.is_null());
        // SAFETY: the thread's last error is a NUL-terminated string.
        let message = unsafe { std::ffi::CStr::from_ptr(crate::vkhip_last_error()) };
        assert_eq!(message.to_str().ok(), Some("vkhip_cuda_open: device is NULL"));
    }
}
