//! The command pool and fence of the one-shot submissions (`submit`), owned by the device's
//! shared state (`device::Inner`) and destroyed with it.

use crate::error::{Error, Result};
use ash::vk;

/// The crate's command pool and fence, made on first use (see `Inner::one_shot`).
pub(crate) struct OneShot {
    pub(crate) pool: vk::CommandPool,
    pub(crate) fence: vk::Fence,
}

impl OneShot {
    pub(crate) fn new(d: &ash::Device, family: u32) -> Result<Self> {
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER | vk::CommandPoolCreateFlags::TRANSIENT);
        // SAFETY: valid device.
        let pool = unsafe { d.create_command_pool(&info, None) }
            .map_err(|r| Error::vulkan("vkCreateCommandPool", r))?;
        // SAFETY: valid device.
        match unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) } {
            Ok(fence) => Ok(OneShot { pool, fence }),
            Err(r) => {
                // SAFETY: the pool is unused.
                unsafe { d.destroy_command_pool(pool, None) };
                Err(Error::vulkan("vkCreateFence", r))
            }
        }
    }

    /// # Safety
    /// Nothing recorded from the pool is pending and the fence is not in use.
    pub(crate) unsafe fn destroy(self, d: &ash::Device) {
        // SAFETY: per this function's contract.
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}
