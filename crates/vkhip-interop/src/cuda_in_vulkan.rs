//! CUDA kernels launched inside a Vulkan command buffer, on Vulkan's own queue, through NVIDIA's
//! `VK_NVX_binary_import`: no external memory, no semaphores, no hand-off between two APIs.
//!
//! The other modules of this crate share memory between two APIs, so the GPU switches from
//! Vulkan's work to CUDA's and back at least once per hand-off (≈ 0.29 ms on an H100, driver 580).
//! Here the CUDA kernel is one more command in a Vulkan command buffer, ordered by ordinary
//! pipeline barriers, and it reads and writes Vulkan buffers through their device addresses.
//!
//! 1. **enable** — create the device with [`EXTENSION`] and the `bufferDeviceAddress` feature
//!    ([`requirements`]); ask [`supported`] first: only NVIDIA's drivers offer the extension.
//! 2. **compile** — NVRTC, as for a CUDA stream: a cubin for the GPU's architecture, PTX as the
//!    fallback ([`crate::cuda::target_for`], [`crate::cuda::compile_to_image`]).
//! 3. **load** — [`CuModule::load`] (`vkCreateCuModuleNVX`), then [`CuModule::function`] for an
//!    `extern "C" __global__` entry point (`vkCreateCuFunctionNVX`).
//! 4. **record** — [`CuFunction::record_launch`] (`vkCmdCuLaunchKernelNVX`) with [`Params`]: one
//!    8-byte-aligned value per kernel parameter, a pointer parameter being the buffer's device
//!    address ([`buffer_address`]; the buffer needs `SHADER_DEVICE_ADDRESS` usage and its memory
//!    `MemoryAllocateFlags::DEVICE_ADDRESS`). Put a barrier from `COMPUTE_SHADER` /
//!    `SHADER_WRITE` to the stage that reads the result, as for a compute dispatch.
//!
//! What it cannot do: there is no CUDA stream, event or context, so no CUDA library (cuBLAS,
//! cuFFT, …), no `cudaMemcpy`, no other process. The extension is NVIDIA's, experimental
//! (`NVX`) and may change. AMD has no equivalent: HIP kernels cannot be launched in a Vulkan
//! queue.
//!
//! The module and functions borrow the caller's `VkDevice`; dropping them destroys only what
//! they created (functions before their module: each function holds the module).
//!
//! ```
//! // A kernel's parameters are packed without a GPU: one pointer per parameter, each to a value
//! // in its own 8-byte slot.
//! use vkhip_interop::cuda_in_vulkan::Params;
//! let p = Params::new().address(0x7f00_0000_1000).u32(640).f32(0.5);
//! assert_eq!(p.len(), 3);
//! assert_eq!(p.value_bytes(1).unwrap()[..4], 640u32.to_ne_bytes());
//! ```

use crate::error::{Api, Error, Result};
use crate::vulkan::Requirements;
use ash::nvx::binary_import;
use ash::vk;
use std::ffi::{c_void, CStr, CString};
use std::sync::Arc;

/// `VK_NVX_binary_import`.
pub const EXTENSION: &CStr = binary_import::NAME;

/// What a physical device offers for launching CUDA kernels in Vulkan ([`supported`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Support {
    /// The device lists [`EXTENSION`].
    pub extension: bool,
    /// `VkPhysicalDeviceVulkan12Features::bufferDeviceAddress` (pointer parameters).
    pub buffer_device_address: bool,
    /// The queue family to create the device's queue in and launch in: one that can compute
    /// ([`crate::vulkan::compute_queue_family`]); None when no family can.
    pub queue_family: Option<u32>,
}

impl Support {
    /// Why kernels cannot be launched in this device's queues, or None when they can.
    pub fn refusal(&self) -> Option<String> {
        if !self.extension {
            return Some(format!(
                "the Vulkan device does not offer {} (only NVIDIA's driver does)",
                EXTENSION.to_string_lossy()
            ));
        }
        if !self.buffer_device_address {
            return Some("the Vulkan device has no bufferDeviceAddress feature".into());
        }
        if self.queue_family.is_none() {
            return Some("the Vulkan device has no queue family that can compute".into());
        }
        None
    }

    /// The queue family to launch in ([`Self::queue_family`]), or [`Self::refusal`] as a typed
    /// error ([`crate::ErrorKind::Unsupported`], an environment gap).
    pub fn check(&self) -> Result<u32> {
        match (self.refusal(), self.queue_family) {
            (None, Some(family)) => Ok(family),
            (why, _) => Err(Error::unsupported(Api::Vulkan, why.unwrap_or_default())),
        }
    }
}

/// Whether `physical` can launch CUDA kernels in its queues.
///
/// # Safety
/// `physical` is a physical device enumerated from `instance`, which is alive.
pub unsafe fn supported(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<Support> {
    // SAFETY: per this function's contract.
    let extensions = unsafe { instance.enumerate_device_extension_properties(physical) }
        .map_err(|e| Error::vulkan("vkEnumerateDeviceExtensionProperties", e))?;
    let extension = extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(EXTENSION));
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12);
    // SAFETY: per this function's contract; `features` chains live locals.
    unsafe { instance.get_physical_device_features2(physical, &mut features) };
    // SAFETY: per this function's contract.
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
    Ok(Support {
        extension,
        buffer_device_address: v12.buffer_device_address == vk::TRUE,
        queue_family: crate::vulkan::compute_queue_family(&families),
    })
}

/// What to enable on the device: Vulkan 1.2, [`EXTENSION`] and `bufferDeviceAddress`. Nothing is
/// exported, so no external-memory extension is needed.
///
/// ```
/// let need = vkhip_interop::cuda_in_vulkan::requirements();
/// assert_eq!(need.device_extensions, [vkhip_interop::cuda_in_vulkan::EXTENSION]);
/// assert!(need.buffer_device_address && !need.timeline_semaphore);
/// ```
pub fn requirements() -> Requirements {
    Requirements {
        api_version: vk::API_VERSION_1_2,
        instance_extensions: Vec::new(),
        device_extensions: vec![EXTENSION],
        optional_device_extensions: Vec::new(),
        timeline_semaphore: false,
        buffer_device_address: true,
    }
}

/// The device address of `buffer`, for a pointer parameter.
///
/// # Safety
/// `buffer` belongs to `device`, was created with `BufferUsageFlags::SHADER_DEVICE_ADDRESS`, is
/// bound to memory allocated with `MemoryAllocateFlags::DEVICE_ADDRESS`, and `device` was created
/// with `bufferDeviceAddress` enabled.
pub unsafe fn buffer_address(device: &ash::Device, buffer: vk::Buffer) -> u64 {
    let info = vk::BufferDeviceAddressInfo::default().buffer(buffer);
    // SAFETY: per this function's contract.
    unsafe { device.get_buffer_device_address(&info) }
}

/// The module's handle and what destroys it.
struct ModuleInner {
    fp: binary_import::DeviceFn,
    device: vk::Device,
    module: vk::CuModuleNVX,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        // SAFETY: created by `CuModule::load` on `device`, which the caller keeps alive; every
        // function of the module holds this value, so none is left.
        unsafe { (self.fp.destroy_cu_module_nvx)(self.device, self.module, std::ptr::null()) };
    }
}

/// A CUDA module (cubin or PTX) loaded into a Vulkan device (`vkCreateCuModuleNVX`).
pub struct CuModule {
    inner: Arc<ModuleInner>,
}

impl CuModule {
    /// Load `image`: a cubin, or NUL-terminated PTX, as [`crate::cuda::compile_to_image`] makes.
    ///
    /// # Safety
    /// `device` was created from `instance` with [`EXTENSION`] enabled, and outlives the module
    /// and every [`CuFunction`] taken from it, and every command buffer that launches one.
    pub unsafe fn load(instance: &ash::Instance, device: &ash::Device, image: &[u8]) -> Result<CuModule> {
        if image.is_empty() {
            return Err(Error::invalid(Api::Vulkan, "an empty CUDA module image"));
        }
        let fp = binary_import::Device::new(instance, device).fp().clone();
        // ash's stand-ins for entry points that did not resolve panic when called: resolve first.
        // SAFETY: per this function's contract; the name is NUL-terminated.
        let resolved =
            unsafe { instance.get_device_proc_addr(device.handle(), c"vkCreateCuModuleNVX".as_ptr()) };
        if resolved.is_none() {
            return Err(Error::unsupported(
                Api::Vulkan,
                format!(
                    "vkCreateCuModuleNVX does not resolve: enable {} on the device",
                    EXTENSION.to_string_lossy()
                ),
            ));
        }
        let info = vk::CuModuleCreateInfoNVX {
            data_size: image.len(),
            p_data: image.as_ptr().cast(),
            ..Default::default()
        };
        let mut module = vk::CuModuleNVX::null();
        // SAFETY: the entry point resolved on this device; `info` points at `image`, alive for
        // the call.
        let result =
            unsafe { (fp.create_cu_module_nvx)(device.handle(), &info, std::ptr::null(), &mut module) };
        if result != vk::Result::SUCCESS {
            return Err(Error::vulkan("vkCreateCuModuleNVX", result));
        }
        Ok(CuModule { inner: Arc::new(ModuleInner { fp, device: device.handle(), module }) })
    }

    /// The `extern "C"` kernel `name` (`vkCreateCuFunctionNVX`).
    pub fn function(&self, name: &str) -> Result<CuFunction> {
        let c_name =
            CString::new(name).map_err(|_| Error::invalid(Api::Vulkan, "a kernel name with a NUL byte"))?;
        let info = vk::CuFunctionCreateInfoNVX {
            module: self.inner.module,
            p_name: c_name.as_ptr(),
            ..Default::default()
        };
        let mut function = vk::CuFunctionNVX::null();
        let m = &self.inner;
        // SAFETY: the module is alive (held by `self`); `info` points at `c_name`, alive for the
        // call; the device outlives the module (`load`'s contract).
        let result =
            unsafe { (m.fp.create_cu_function_nvx)(m.device, &info, std::ptr::null(), &mut function) };
        if result != vk::Result::SUCCESS {
            return Err(Error::vulkan("vkCreateCuFunctionNVX", result).context(format!("kernel {name}")));
        }
        Ok(CuFunction { function, name: name.to_string(), module: self.inner.clone() })
    }
}

/// One kernel of a [`CuModule`]; holds the module loaded.
pub struct CuFunction {
    function: vk::CuFunctionNVX,
    name: String,
    module: Arc<ModuleInner>,
}

// SAFETY: the handles are plain Vulkan handles; recording a launch only reads them, and Vulkan
// requires external synchronisation only for the command buffer, which the caller provides.
unsafe impl Send for CuFunction {}
// SAFETY: as above.
unsafe impl Sync for CuFunction {}

/// Grid and block of a launch, in CUDA's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in x, y, z (each ≥ 1).
    pub grid: [u32; 3],
    /// Threads per block in x, y, z (each ≥ 1).
    pub block: [u32; 3],
    /// Dynamic shared memory, in bytes.
    pub shared_memory: u32,
}

impl Launch {
    /// CUDA's launch limits, the same on every GPU since compute capability 3.0: threads per
    /// block (1024), block (1024, 1024, 64), grid (2³¹ − 1, 65535, 65535), and dynamic shared
    /// memory without the opt-in attribute, which `VK_NVX_binary_import` cannot set (48 KiB).
    pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
    pub const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];
    pub const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];
    pub const MAX_SHARED_MEMORY: u32 = 48 * 1024;

    /// Refuse a launch no CUDA GPU runs ([`crate::ErrorKind::Invalid`]), before any command is
    /// recorded: a 0 dimension, or beyond the limits above. `kernel` names it in the error.
    ///
    /// # Examples
    ///
    /// ```
    /// use vkhip_interop::cuda_in_vulkan::Launch;
    ///
    /// let launch = |grid, block, shared_memory| Launch { grid, block, shared_memory };
    /// assert!(launch([4096, 1, 1], [256, 1, 1], 0).check("k").is_ok());
    /// let e = launch([1, 1, 1], [64, 32, 1], 0).check("k").unwrap_err(); // 2048 threads
    /// assert!(e.to_string().contains("2048 threads per block"), "{e}");
    /// assert!(launch([1, 65536, 1], [32, 1, 1], 0).check("k").is_err());
    /// assert!(launch([0, 1, 1], [32, 1, 1], 0).check("k").is_err());
    /// assert!(launch([1, 1, 1], [32, 1, 1], 64 * 1024).check("k").is_err());
    /// ```
    pub fn check(&self, kernel: &str) -> Result<()> {
        let refuse = |why: String| {
            Err(Error::invalid(
                Api::Vulkan,
                format!("kernel {kernel}: grid {:?}, block {:?}: {why}", self.grid, self.block),
            ))
        };
        if self.grid.contains(&0) || self.block.contains(&0) {
            return refuse("a dimension is 0".into());
        }
        let threads = self.block.iter().map(|&b| u64::from(b)).product::<u64>();
        if threads > u64::from(Self::MAX_THREADS_PER_BLOCK) {
            return refuse(format!(
                "{threads} threads per block, more than CUDA's {}",
                Self::MAX_THREADS_PER_BLOCK
            ));
        }
        let over = |dims: [u32; 3], max: [u32; 3]| dims.iter().zip(max).any(|(&d, m)| d > m);
        if over(self.block, Self::MAX_BLOCK) || over(self.grid, Self::MAX_GRID) {
            return refuse(format!(
                "beyond CUDA's block {:?} and grid {:?}",
                Self::MAX_BLOCK,
                Self::MAX_GRID
            ));
        }
        if self.shared_memory > Self::MAX_SHARED_MEMORY {
            return refuse(format!(
                "{} bytes of dynamic shared memory, more than the {} a launch without the opt-in attribute gets",
                self.shared_memory,
                Self::MAX_SHARED_MEMORY
            ));
        }
        Ok(())
    }
}

impl CuFunction {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Record one launch of the kernel into `cmd` (`vkCmdCuLaunchKernelNVX`). Refused
    /// ([`crate::ErrorKind::Invalid`]) when [`Launch::check`] refuses it.
    ///
    /// # Safety
    /// `cmd` is in the recording state, outside a render pass, on the device the module was
    /// loaded into; `params` matches the kernel's parameters in number, order and size; every
    /// address among them points at memory that holds everything the kernel touches and stays
    /// alive until the command buffer has finished executing; so does this function.
    pub unsafe fn record_launch(
        &self,
        cmd: vk::CommandBuffer,
        launch: Launch,
        params: &Params,
    ) -> Result<()> {
        launch.check(&self.name)?;
        let pointers = params.pointers();
        let info = vk::CuLaunchInfoNVX {
            function: self.function,
            grid_dim_x: launch.grid[0],
            grid_dim_y: launch.grid[1],
            grid_dim_z: launch.grid[2],
            block_dim_x: launch.block[0],
            block_dim_y: launch.block[1],
            block_dim_z: launch.block[2],
            shared_mem_bytes: launch.shared_memory,
            param_count: pointers.len(),
            p_params: pointers.as_ptr(),
            ..Default::default()
        };
        // SAFETY: per this function's contract; `info` points at `pointers`, which point into
        // `params`: both alive for the call, which copies the values into the command buffer.
        unsafe { (self.module.fp.cmd_cu_launch_kernel_nvx)(cmd, &info) };
        Ok(())
    }
}

impl Drop for CuFunction {
    fn drop(&mut self) {
        let m = &self.module;
        // SAFETY: created on `m.device` by `CuModule::function`; the module is still loaded
        // (held by `self.module`); the caller's contract keeps the device alive and no command
        // buffer still executing uses the function.
        unsafe { (m.fp.destroy_cu_function_nvx)(m.device, self.function, std::ptr::null()) };
    }
}

/// A kernel's parameters, in order: each value in its own 8-byte, 8-aligned slot, as
/// `vkCmdCuLaunchKernelNVX` reads them (an array of pointers, one per parameter, each at the
/// value). Scalars of 4 or 8 bytes and device addresses; pass anything larger through a buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    values: Vec<u64>,
}

impl Params {
    /// No parameters yet.
    pub fn new() -> Self {
        Params::default()
    }

    fn push(mut self, bytes: &[u8]) -> Self {
        let mut slot = [0u8; 8];
        slot[..bytes.len()].copy_from_slice(bytes);
        self.values.push(u64::from_ne_bytes(slot));
        self
    }

    /// A pointer parameter (`T*` in the kernel): a device address ([`buffer_address`]) plus an
    /// offset into the buffer.
    pub fn address(self, address: u64) -> Self {
        self.push(&address.to_ne_bytes())
    }

    /// An `unsigned int` parameter.
    pub fn u32(self, v: u32) -> Self {
        self.push(&v.to_ne_bytes())
    }

    /// An `int` parameter.
    pub fn i32(self, v: i32) -> Self {
        self.push(&v.to_ne_bytes())
    }

    /// A `float` parameter.
    pub fn f32(self, v: f32) -> Self {
        self.push(&v.to_ne_bytes())
    }

    /// An `unsigned long long` parameter.
    pub fn u64(self, v: u64) -> Self {
        self.push(&v.to_ne_bytes())
    }

    /// A `double` parameter.
    pub fn f64(self, v: f64) -> Self {
        self.push(&v.to_ne_bytes())
    }

    /// How many parameters.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// No parameters.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The 8 bytes that parameter `i` points at (a 4-byte value in the first 4).
    pub fn value_bytes(&self, i: usize) -> Option<[u8; 8]> {
        self.values.get(i).map(|v| v.to_ne_bytes())
    }

    /// One pointer per parameter, each at its value; they borrow `self`.
    fn pointers(&self) -> Vec<*const c_void> {
        self.values.iter().map(|v| (v as *const u64).cast::<c_void>()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parameter_points_at_its_own_aligned_value() {
        let p = Params::new().address(0x1234_5678_9abc_def0).u32(7).i32(-2).f32(1.5).u64(u64::MAX).f64(-0.25);
        let ptrs = p.pointers();
        assert_eq!(ptrs.len(), 6);
        for (i, &ptr) in ptrs.iter().enumerate() {
            assert_eq!(ptr as usize % 8, 0, "parameter {i} is 8-byte aligned");
            // SAFETY: each pointer points at one u64 of `p`, alive here.
            let v = unsafe { *(ptr as *const u64) };
            assert_eq!(v.to_ne_bytes(), p.value_bytes(i).unwrap());
        }
        // SAFETY: as above; read each value as the kernel would, with its own type.
        unsafe {
            assert_eq!(*(ptrs[0] as *const u64), 0x1234_5678_9abc_def0);
            assert_eq!(*(ptrs[1] as *const u32), 7);
            assert_eq!(*(ptrs[2] as *const i32), -2);
            assert_eq!(*(ptrs[3] as *const f32), 1.5);
            assert_eq!(*(ptrs[4] as *const u64), u64::MAX);
            assert_eq!(*(ptrs[5] as *const f64), -0.25);
        }
    }

    #[test]
    fn a_device_without_the_extension_is_refused_in_one_line() {
        let all = Support { extension: true, buffer_device_address: true, queue_family: Some(1) };
        let none = Support { extension: false, ..all };
        let why = none.refusal().unwrap();
        assert!(why.contains("VK_NVX_binary_import") && !why.contains('\n'), "{why}");
        let e = none.check().unwrap_err();
        assert!(e.is_environment(), "{e}");
        let no_address = Support { buffer_device_address: false, ..all };
        assert!(no_address.refusal().unwrap().contains("bufferDeviceAddress"));
        let no_compute = Support { queue_family: None, ..all };
        assert!(no_compute.refusal().unwrap().contains("no queue family that can compute"));
        assert_eq!((all.refusal(), all.check()), (None, Ok(1)));
    }
}
