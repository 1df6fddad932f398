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

use super::plan::{check_grid_fits, launch_config, DeviceLimits};
use super::{compile_fault, load_sinewave, Result};
use crate::compute::kernel::{SinewaveArgs, SINEWAVE_ENTRY};
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
        check_grid_fits(params.grid, size)?;
        let shape = launch_config(params.grid, self.limits);
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
