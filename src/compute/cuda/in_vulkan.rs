//! `--backend cuda-in-vulkan`: the CUDA backend's `sinewave` kernel, compiled by NVRTC exactly as
//! for a CUDA stream (same source, options, cache and launch shape), but loaded into the render
//! device with `VK_NVX_binary_import` and recorded into a Vulkan command buffer
//! ([`vkhip_interop::cuda_in_vulkan`]). The slot is reached through its buffer device address;
//! nothing is exported or imported, and there is no CUDA context, stream or semaphore.
//!
//! The submission around the launch — the protocol's waits and signals, the timestamps, the
//! fences, frames in flight — is the `vulkan` backend's ([`crate::compute::vulkan`]): only the
//! command that writes the slot differs. So every mode, K and batch that the `vulkan` backend
//! runs, this one runs the same way, and its profile comes from Vulkan timestamps on the queue.
//!
//! The post filter (`--post outline`, [`OutlineInVulkan`]): `kernels/outline.hip`, compiled the
//! same way, launched on the pair's images themselves ([`crate::compute::post::PostSurface::Image`]).
//! A kernel in Vulkan's queue has no CUDA surface object to take; it takes the 32-bit handle
//! `vkGetImageViewHandleNVX` (`VK_NVX_image_view_handle`) gives for the view as a
//! `STORAGE_IMAGE`, zero-extended into the kernel's 64-bit `cudaSurfaceObject_t` parameter: that
//! handle is what NVIDIA's driver hands out as a CUDA surface object for an image view (it is how
//! D3D12-on-Vulkan layers implement NVAPI's `GetCudaSurfaceObject` for CUDA kernels launched through
//! `VK_NVX_binary_import`). No spec text promises this layout: the GPU check
//! (`tests/post_filters.rs`, `gpu_outline_cuda_in_vulkan_matches_the_reference`) is what says it holds.

use super::plan::{check_grid_fits, launch_config, DeviceLimits};
use super::{compile_fault, load_kernel, load_sinewave, Result};
use crate::compute::kernel::{SinewaveArgs, SINEWAVE_ENTRY};
use crate::compute::outline::{image_views, outline_launch, OutlineArgs, OUTLINE_ENTRY, OUTLINE_SOURCE};
use crate::compute::post::PostResources;
use crate::compute::ComputeError;
use crate::sim::WaveParams;
use crate::vk::device::Context;
use crate::vk::external::Slot;
use ash::vk;
use vkhip_interop::cuda as interop;
use vkhip_interop::cuda_in_vulkan::{CuFunction, CuModule, Launch, Params};

/// The `sinewave` kernel loaded into a Vulkan device, and the slots' device addresses.
pub struct SinewaveInVulkan {
    kernel: CuFunction,
    /// (device address, size in bytes) of each slot.
    slots: Vec<(u64, u64)>,
    limits: DeviceLimits,
}

impl SinewaveInVulkan {
    /// Compile (or take from the cache) and load `sinewave` into `ctx`'s device, made with
    /// [`Context::new_with`] for kernels in the queue, for the device-addressed `slots`.
    pub fn new(ctx: &Context, slots: &[Slot]) -> Result<Self> {
        let unavailable = |reason: String| ComputeError::Unavailable { backend: "cuda-in-vulkan", reason };
        let devices = interop::devices().map_err(|e| unavailable(e.message().to_string()))?;
        let device = devices.into_iter().find(|d| d.uuid == ctx.physical.uuid).ok_or_else(|| {
            unavailable(format!("no CUDA device is the Vulkan device '{}' (UUID)", ctx.physical.name))
        })?;
        let slots = slots
            .iter()
            .map(|s| {
                s.device_address().map(|a| (a, s.size)).ok_or_else(|| ComputeError::Unsupported {
                    backend: "cuda-in-vulkan",
                    reason:
                        "the slots have no device address (the context was not made for kernels in the queue)"
                            .into(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        compile_fault()?;
        let driver_version = interop::driver_version()?;
        let kernel = load_sinewave(&device, driver_version, "cuda-in-vulkan", |image| {
            // SAFETY: `ctx.device` was made from `ctx.instance` with VK_NVX_binary_import
            // (`new_with`; the slots' addresses above prove it); the backend that holds this
            // value drops it before its `Arc<Context>` and after its last submission finished.
            let module = unsafe { CuModule::load(&ctx.instance.instance, &ctx.device, image) }?;
            Ok(module.function(SINEWAVE_ENTRY)?)
        })?;
        log::info!(
            "cuda-in-vulkan: {} (sm_{}): sinewave loaded into the Vulkan device",
            device.name,
            device.arch()
        );
        Ok(SinewaveInVulkan { kernel, slots, limits: DeviceLimits::of(&device) })
    }

    /// Record the launch that writes slot `slot` for `params` into `cmd`.
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass, on the device the kernel was loaded into; the
    /// slots outlive its execution.
    pub unsafe fn record(&self, cmd: vk::CommandBuffer, slot: usize, params: &WaveParams) -> Result<()> {
        let (address, size) = self.slots[slot];
        check_grid_fits(params, size)?;
        // gridDim.z = `--envs`: the environments in one launch, as on a CUDA stream.
        let shape = launch_config(params.grid, params.envs, self.limits);
        let launch = Launch {
            grid: [shape.grid_x, shape.grid_y, shape.grid_z],
            block: [shape.block_x, 1, 1],
            shared_memory: 0,
        };
        // SAFETY: per this function's contract; `launch_params` matches `sinewave`'s signature
        // (tested below) and the grid fits the slot (checked above), so the kernel writes inside it.
        unsafe {
            self.kernel.record_launch(cmd, launch, &launch_params(&SinewaveArgs::new(address, params)))
        }?;
        Ok(())
    }
}

/// The `outline` kernel loaded into a Vulkan device, and the NVX handles of every pair's views.
pub struct OutlineInVulkan {
    kernel: CuFunction,
    /// (scene, output) surface handles per pair.
    pairs: Vec<(u64, u64)>,
    width: u32,
    height: u32,
}

impl OutlineInVulkan {
    /// Compile (or take from the cache) and load `outline` into `ctx`'s device (made by
    /// [`Context::new_with`] for kernels in the queue, with `VK_NVX_image_view_handle`), for the
    /// pairs of `post` ([`crate::compute::post::PostSurface::Image`] only).
    pub fn new(ctx: &Context, post: &PostResources) -> Result<Self> {
        let unsupported = |reason: String| ComputeError::Unsupported { backend: "cuda-in-vulkan", reason };
        if !ctx.cuda_in_vulkan || !ctx.image_view_handle {
            return Err(unsupported(format!(
                "the post filter needs VK_NVX_binary_import and VK_NVX_image_view_handle, which '{}' \
                 was not created with",
                ctx.physical.name
            )));
        }
        let views = image_views("cuda-in-vulkan", &post.pairs)?;
        let devices = interop::devices().map_err(|e| unsupported(e.message().to_string()))?;
        let device = devices.into_iter().find(|d| d.uuid == ctx.physical.uuid).ok_or_else(|| {
            unsupported(format!("no CUDA device is the Vulkan device '{}'", ctx.physical.name))
        })?;
        let nvx = ash::nvx::image_view_handle::Device::new(&ctx.instance.instance, &ctx.device);
        let handle = |view: vk::ImageView| {
            let info = vk::ImageViewHandleInfoNVX::default()
                .image_view(view)
                .descriptor_type(vk::DescriptorType::STORAGE_IMAGE);
            // SAFETY: the device was created with VK_NVX_image_view_handle (checked above), so the
            // entry point is loaded; `view` is a live storage-capable view of this device.
            u64::from(unsafe { (nvx.fp().get_image_view_handle_nvx)(ctx.device.handle(), &info) })
        };
        let pairs = views.iter().map(|&(s, o)| (handle(s), handle(o))).collect();

        let driver_version = interop::driver_version()?;
        let kernel = load_kernel(
            (OUTLINE_SOURCE, "outline.hip"),
            &device,
            driver_version,
            "cuda-in-vulkan",
            |image| {
                // SAFETY: as for `SinewaveInVulkan::new`: the device has VK_NVX_binary_import, and
                // the backend drops this value before its `Arc<Context>`, after its last submission.
                let module = unsafe { CuModule::load(&ctx.instance.instance, &ctx.device, image) }?;
                Ok(module.function(OUTLINE_ENTRY)?)
            },
        )?;
        log::info!("cuda-in-vulkan: outline loaded into the Vulkan device, {} pair(s)", views.len());
        Ok(OutlineInVulkan { kernel, pairs, width: post.width, height: post.height })
    }

    /// Record the filter of pair `pair` into `cmd`.
    ///
    /// # Safety
    /// `cmd` is recording, outside a render pass, on the device the kernel was loaded into; the
    /// pair's images are in layout `GENERAL` when it runs and outlive its execution.
    pub unsafe fn record(&self, cmd: vk::CommandBuffer, pair: usize) -> Result<()> {
        let &(src, dst) = self.pairs.get(pair).ok_or_else(|| ComputeError::Unsupported {
            backend: "cuda-in-vulkan",
            reason: format!("post pair {pair} out of range ({} attached)", self.pairs.len()),
        })?;
        let args =
            OutlineArgs { src, dst, width: self.width, height: self.height, stamps: 0, blocks_done: 0 };
        let (grid, block) = outline_launch(self.width, self.height);
        // SAFETY: per this function's contract; the parameters follow `outline`'s signature
        // (tested below); the kernel touches texels inside width × height of both images only.
        unsafe {
            self.kernel.record_launch(cmd, Launch { grid, block, shared_memory: 0 }, &outline_params(&args))
        }?;
        Ok(())
    }
}

/// `outline`'s parameters, in `OutlineArgs::SIGNATURE` order (null stamp pointers: a kernel in
/// the queue is timed by the queue's timestamps).
fn outline_params(a: &OutlineArgs) -> Params {
    Params::new().u64(a.src).u64(a.dst).u32(a.width).u32(a.height).address(a.stamps).address(a.blocks_done)
}

/// `sinewave`'s parameters, in `SinewaveArgs::SIGNATURE` order. A kernel in Vulkan's queue is
/// timed by the queue's own timestamps: its stamp pointers are whatever `a` holds (0: none).
fn launch_params(a: &SinewaveArgs) -> Params {
    Params::new()
        .address(a.heights)
        .u32(a.width)
        .u32(a.height)
        .f32(a.phase)
        .f32(a.amplitude)
        .f32(a.frequency)
        .address(a.stamps)
        .address(a.blocks_done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Grid;

    /// The outline launch passes the stream path's bytes, parameter by parameter.
    #[test]
    fn outline_parameters_follow_the_kernel_signature() {
        let mut args =
            OutlineArgs { src: 0x1234, dst: 0x5678_9abc, width: 333, height: 77, stamps: 0, blocks_done: 0 };
        let packed = outline_params(&args);
        assert_eq!(packed.len(), OutlineArgs::SIGNATURE.len());
        let stream = args.param_pointers();
        for (i, (ty, name)) in OutlineArgs::SIGNATURE.iter().enumerate() {
            let size = if *ty == "unsigned int" { 4 } else { 8 };
            // SAFETY: each pointer points at a field of `args` of `size` bytes.
            let want = unsafe { std::slice::from_raw_parts(stream[i] as *const u8, size) };
            assert_eq!(&packed.value_bytes(i).unwrap()[..size], want, "parameter {i} ({ty} {name})");
        }
    }

    /// One value per parameter of the kernel's source signature, each of its C type's size, in
    /// order, equal to what the stream path passes (`SinewaveArgs::param_pointers`).
    #[test]
    fn parameters_follow_the_kernel_signature() {
        let params = WaveParams::at_time(Grid { width: 640, height: 3 }, 1.25);
        let mut args = SinewaveArgs::new(0xdead_0000_0100, &params);
        let packed = launch_params(&args);
        assert_eq!(packed.len(), SinewaveArgs::SIGNATURE.len());
        assert_eq!((args.stamps, args.blocks_done), (0, 0), "a kernel in the queue is not stamped");
        let stream = args.param_pointers();
        for (i, (ty, name)) in SinewaveArgs::SIGNATURE.iter().enumerate() {
            let size = match *ty {
                "float*" | "unsigned long long*" | "unsigned int*" => 8,
                "unsigned int" | "float" => 4,
                other => panic!("unexpected type {other}"),
            };
            // SAFETY: each pointer points at a field of `args` of `size` bytes.
            let want = unsafe { std::slice::from_raw_parts(stream[i] as *const u8, size) };
            assert_eq!(&packed.value_bytes(i).unwrap()[..size], want, "parameter {i} ({ty} {name})");
        }
    }
}
