//! The Vulkan side: one RAII type per object group, each holding what it needs to destroy itself.
//!
//! - [`instance`]: loader, instance, validation layer and the debug messenger routed to `log`.
//! - [`device`]: physical-device facts, the selection rule, and the logical device + queue
//!   ([`device::Context`], shared as `Arc` by everything that must be destroyed before it).
//! - [`memory`]: memory-type choice (pure, unit-tested) and plain buffers.
//! - [`external`]: exportable slot buffers and semaphores (OPAQUE_FD): the part a template user copies.
//! - [`target`]: the offscreen colour + depth target and its read-back.
//! - [`pipeline`]: render pass, the surface pipeline and the compute pipeline.
//! - [`overlay`]: the frame-time overlay's pipeline and sample buffers.
//! - [`swapchain`]: surface + swapchain for window mode.
//! - [`timestamps`]: GPU timestamps around each frame's draw.

pub mod clock;
pub mod device;
pub mod external;
pub mod instance;
pub mod memory;
pub mod overlay;
pub mod pipeline;
pub mod post;
pub mod swapchain;
pub mod target;
pub mod timestamps;
pub mod views;

use ash::vk;

/// A failed Vulkan call, or a missing capability, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum VkError {
    /// The Vulkan loader library could not be opened.
    #[error(
        "no Vulkan loader found ({0}): install libvulkan1 and a Vulkan driver, e.g. mesa-vulkan-drivers"
    )]
    NoLoader(String),
    /// No physical device (or none usable).
    #[error("no usable Vulkan device: {0}")]
    NoDevice(String),
    /// A user-chosen device index is out of range.
    #[error("--device {index}: there are only {count} Vulkan devices (see `vkhip info`)")]
    BadDeviceIndex { index: usize, count: usize },
    /// The device lacks something this run needs.
    #[error("{0}")]
    Unsupported(String),
    /// The device cannot present to the window (a surface query failed, or no queue family
    /// presents to it): the window run falls back to headless.
    #[error("{device} cannot present to the window on {display} ({why})")]
    CannotPresent { device: String, display: String, why: String },
    /// A device limit the request is past, refused before any driver call: the limit's Vulkan
    /// name, the device's value, what was asked (`--views`, `--size`, …) and how much.
    #[error("{what}: {asked} is past this device's {limit} ({device})")]
    Limit { limit: &'static str, device: u64, asked: u64, what: String },
    /// A Vulkan call returned an error.
    #[error("{call} failed: {}", describe(*result))]
    Call { call: &'static str, result: vk::Result },
    /// Waiting on the GPU took too long (something upstream never signalled).
    #[error("timed out after {seconds} s waiting for {what}")]
    Timeout { what: String, seconds: u64 },
    /// The interop crate's export side failed (it keeps the call and the numeric status).
    #[error(transparent)]
    Interop(#[from] vkhip_interop::Error),
}

/// A Vulkan result by its spec name (`VK_ERROR_DEVICE_LOST`), with ash's description where it
/// has one, so a message names the error the way drivers, docs and searches do.
///
/// # Examples
///
/// ```
/// use ash::vk;
///
/// let s = vkhip::vk::describe(vk::Result::ERROR_DEVICE_LOST);
/// assert!(s.starts_with("VK_ERROR_DEVICE_LOST"), "{s}");
/// ```
pub fn describe(result: vk::Result) -> String {
    let name = format!("VK_{result:?}");
    let text = result.to_string();
    if text.trim_start_matches("VK_") == name.trim_start_matches("VK_") {
        name
    } else {
        let text = text.split(" See <").next().unwrap_or(&text).trim_end_matches('.');
        format!("{name} ({text})")
    }
}

impl VkError {
    /// Whether this is an environment gap or a user mistake (exit code 2) rather than a failure.
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            VkError::NoLoader(_)
                | VkError::NoDevice(_)
                | VkError::BadDeviceIndex { .. }
                | VkError::Unsupported(_)
                | VkError::CannotPresent { .. }
                | VkError::Limit { .. }
        ) || matches!(self, VkError::Interop(e) if e.is_environment())
            || matches!(
                self,
                VkError::Call {
                    result: vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY,
                    ..
                }
            )
    }
}

/// Record a global memory barrier: `src_access` in `src_stage` before `dst_access` in `dst_stage`.
///
/// # Safety
/// `cmd` is a command buffer of `device` in the recording state, outside a render pass.
pub unsafe fn cmd_memory_barrier(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    (src_stage, src_access): (vk::PipelineStageFlags, vk::AccessFlags),
    (dst_stage, dst_access): (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let barrier = vk::MemoryBarrier::default().src_access_mask(src_access).dst_access_mask(dst_access);
    // SAFETY: per this function's contract.
    unsafe {
        device.cmd_pipeline_barrier(
            cmd,
            src_stage,
            dst_stage,
            vk::DependencyFlags::empty(),
            &[barrier],
            &[],
            &[],
        )
    };
}

/// Convert an `ash` result into [`VkError::Call`] naming the call.
pub trait CallContext<T> {
    fn call(self, name: &'static str) -> Result<T, VkError>;
}

impl<T> CallContext<T> for Result<T, vk::Result> {
    fn call(self, name: &'static str) -> Result<T, VkError> {
        self.map_err(|result| VkError::Call { call: name, result })
    }
}
