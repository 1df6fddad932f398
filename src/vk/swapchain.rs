//! Window-system surface and swapchain (window mode).
//!
//! # Examples
//!
//! The swapchain's extent follows the window within the surface's limits, and never beyond
//! what the device can render (the presentation engine scales the rest):
//!
//! ```
//! use ash::vk;
//! use vkhip::vk::swapchain::{clamp_extent, device_max_extent};
//!
//! let mut limits = vk::PhysicalDeviceLimits::default();
//! limits.max_image_dimension2_d = 16384;
//! limits.max_framebuffer_width = 16384;
//! limits.max_framebuffer_height = 8192;
//! limits.max_viewport_dimensions = [16384, 16384];
//! assert_eq!(device_max_extent(&limits), vk::Extent2D { width: 16384, height: 8192 });
//!
//! let caps = vk::SurfaceCapabilitiesKHR {
//!     min_image_extent: vk::Extent2D { width: 1, height: 1 },
//!     max_image_extent: vk::Extent2D { width: 20000, height: 20000 },
//!     ..Default::default()
//! };
//! let want = |width, height| clamp_extent(vk::Extent2D { width, height }, &caps, &limits);
//! assert_eq!(want(1280, 720), vk::Extent2D { width: 1280, height: 720 });
//! assert_eq!(want(19000, 9000), vk::Extent2D { width: 16384, height: 8192 }); // the device wins
//! assert_eq!(want(0, 0), vk::Extent2D { width: 1, height: 1 }); // a minimised window: never 0
//! ```

use super::device::{Context, PhysicalDeviceInfo, PresentProblem};
use super::instance::Instance;
use super::target::{Framebuffer, Image, DEPTH_FORMAT};
use super::{CallContext, VkError};
use crate::fault::{self, Fault};
use ash::{khr, vk};
use raw_window_handle::{RawDisplayHandle, RawWindowHandle};
use std::sync::Arc;

/// A `VkSurfaceKHR` for a window.
pub struct Surface {
    pub loader: khr::surface::Instance,
    pub handle: vk::SurfaceKHR,
    instance: Arc<Instance>,
}

impl Surface {
    /// # Safety
    /// The handles must refer to a live window that outlives this surface.
    pub unsafe fn new(
        instance: &Arc<Instance>,
        display: RawDisplayHandle,
        window: RawWindowHandle,
    ) -> Result<Self, VkError> {
        // SAFETY: the caller guarantees the window outlives the surface; the instance was created
        // with the extensions ash_window asked for.
        let handle =
            unsafe { ash_window::create_surface(&instance.entry, &instance.instance, display, window, None) }
                .call("vkCreate*SurfaceKHR")?;
        let loader = khr::surface::Instance::new(&instance.entry, &instance.instance);
        Ok(Surface { loader, handle, instance: instance.clone() })
    }

    /// Why `device` cannot present to this surface, or `None` if it can: its queue family must
    /// support the surface, and every query a swapchain needs (capabilities, formats, present
    /// modes) must succeed with something to choose from. NVIDIA's Vulkan on an X server without
    /// DRI3 (Xvfb) says the family is supported, then answers the present-modes query with
    /// VK_ERROR_UNKNOWN. Each query is a `surface-query` fault point. `display` names the display
    /// in the answer.
    pub fn present_problem(&self, device: &PhysicalDeviceInfo, display: &str) -> Option<PresentProblem> {
        let family = device.graphics_family?;
        let pd = device.handle;
        let problem = |why: String| Some(PresentProblem { display: display.to_string(), why });
        let failed = |call: &str, e: vk::Result| problem(format!("{call} failed: {}", super::describe(e)));
        let surface = self.handle;
        // SAFETY: a physical device of the instance this surface belongs to, its queue family
        // index, and the live surface (the same for the three queries below).
        let supported = fault::inject(Fault::SurfaceQuery)
            .and_then(|()| unsafe { self.loader.get_physical_device_surface_support(pd, family, surface) });
        match supported {
            Err(e) => return failed("vkGetPhysicalDeviceSurfaceSupportKHR", e),
            Ok(false) => return problem(format!("its queue family {family} cannot present to it")),
            Ok(true) => {}
        }
        // SAFETY: as above.
        let caps = fault::inject(Fault::SurfaceQuery)
            .and_then(|()| unsafe { self.loader.get_physical_device_surface_capabilities(pd, surface) });
        if let Err(e) = caps {
            return failed("vkGetPhysicalDeviceSurfaceCapabilitiesKHR", e);
        }
        // SAFETY: as above.
        let formats = fault::inject(Fault::SurfaceQuery)
            .and_then(|()| unsafe { self.loader.get_physical_device_surface_formats(pd, surface) });
        match formats {
            Err(e) => return failed("vkGetPhysicalDeviceSurfaceFormatsKHR", e),
            Ok(f) if f.is_empty() => return problem("the surface reports no formats".into()),
            Ok(_) => {}
        }
        // SAFETY: as above.
        let modes = fault::inject(Fault::SurfaceQuery)
            .and_then(|()| unsafe { self.loader.get_physical_device_surface_present_modes(pd, surface) });
        match modes {
            Err(e) => failed("vkGetPhysicalDeviceSurfacePresentModesKHR", e),
            Ok(m) if m.is_empty() => problem("the surface reports no present modes".into()),
            Ok(_) => None,
        }
    }

    /// The colour format vkhip renders to: B8G8R8A8_UNORM or R8G8B8A8_UNORM (linear, like the
    /// offscreen target), else whatever comes first.
    pub fn choose_format(&self, ctx: &Context) -> Result<vk::SurfaceFormatKHR, VkError> {
        // SAFETY: valid physical device and surface.
        let formats =
            unsafe { self.loader.get_physical_device_surface_formats(ctx.physical.handle, self.handle) }
                .call("vkGetPhysicalDeviceSurfaceFormatsKHR")?;
        let pick = formats
            .iter()
            .find(|f| f.format == vk::Format::B8G8R8A8_UNORM)
            .or_else(|| formats.iter().find(|f| f.format == vk::Format::R8G8B8A8_UNORM))
            .or(formats.first())
            .copied();
        pick.ok_or_else(|| VkError::Unsupported("the surface reports no formats".into()))
    }

    /// `Some((smallest extent the surface accepts now, largest the device renders))` while no
    /// swapchain is possible: the window system accepts only extents beyond the device's limits
    /// (an X11 window wider than 16384 on lavapipe: min = max = current = the window's size).
    /// Creating one anyway, clamped, breaks VUID-VkSwapchainCreateInfoKHR-imageExtent-01274.
    pub fn out_of_device_range(
        &self,
        ctx: &Context,
    ) -> Result<Option<(vk::Extent2D, vk::Extent2D)>, VkError> {
        let pd = ctx.physical.handle;
        // SAFETY: valid physical device and surface.
        let caps = fault::inject(Fault::SurfaceQuery)
            .and_then(|()| unsafe { self.loader.get_physical_device_surface_capabilities(pd, self.handle) })
            .call("vkGetPhysicalDeviceSurfaceCapabilitiesKHR")?;
        // SAFETY: valid physical device of this instance.
        let limits = unsafe { self.instance.instance.get_physical_device_properties(pd) }.limits;
        Ok(beyond_device(&caps, &limits))
    }
}

/// See [`Surface::out_of_device_range`]: `Some((surface minimum, device maximum))` when the
/// smallest extent the surface accepts is larger than the device can render, in either side.
///
/// ```
/// use ash::vk;
/// use vkhip::vk::swapchain::beyond_device;
///
/// let mut limits = vk::PhysicalDeviceLimits::default();
/// limits.max_image_dimension2_d = 16384;
/// limits.max_framebuffer_width = 16384;
/// limits.max_framebuffer_height = 16384;
/// limits.max_viewport_dimensions = [16384, 16384];
/// let x11 = |width, height| {
///     let e = vk::Extent2D { width, height };
///     vk::SurfaceCapabilitiesKHR { current_extent: e, min_image_extent: e, max_image_extent: e, ..Default::default() }
/// };
/// assert_eq!(beyond_device(&x11(16384, 120), &limits), None);
/// let dev = vk::Extent2D { width: 16384, height: 16384 };
/// assert_eq!(beyond_device(&x11(16500, 120), &limits), Some((vk::Extent2D { width: 16500, height: 120 }, dev)));
/// ```
pub fn beyond_device(
    caps: &vk::SurfaceCapabilitiesKHR,
    limits: &vk::PhysicalDeviceLimits,
) -> Option<(vk::Extent2D, vk::Extent2D)> {
    let dev = device_max_extent(limits);
    let min = caps.min_image_extent;
    (min.width > dev.width || min.height > dev.height).then_some((min, dev))
}

impl Drop for Surface {
    fn drop(&mut self) {
        let _ = &self.instance;
        // SAFETY: the swapchain using this surface is destroyed first (owners drop it earlier).
        unsafe { self.loader.destroy_surface(self.handle, None) };
    }
}

/// What [`Swapchain::acquire`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    Image {
        image: u32,
        suboptimal: bool,
    },
    /// No image this time; re-create the swapchain first if `recreate`.
    Retry {
        recreate: bool,
    },
}

/// Per-image resources of a swapchain.
struct SwapImage {
    image: vk::Image,
    framebuffer: Framebuffer,
    view: vk::ImageView,
    /// Signalled by the draw into this image, waited by its present.
    present: vk::Semaphore,
}

/// Swapchain + views + depth + framebuffers + one present semaphore per image.
pub struct Swapchain {
    ctx: Arc<Context>,
    pub handle: vk::SwapchainKHR,
    pub extent: vk::Extent2D,
    pub present_mode: vk::PresentModeKHR,
    /// Whether the extent was cut to the device's limits (the window is larger than the device
    /// can render). The presentation engine then says SUBOPTIMAL on every frame; that is not a
    /// reason to re-create, and the window should be asked to shrink to `extent`.
    pub clamped: bool,
    /// The images can be copied into (`TRANSFER_DST` usage; `--post` needs it).
    pub transfer_dst: bool,
    images: Vec<SwapImage>,
    _depth: Image,
}

impl Swapchain {
    /// Create (or re-create, passing `old`) for a window of `size`.
    pub fn new(
        ctx: &Arc<Context>,
        surface: &Surface,
        format: vk::SurfaceFormatKHR,
        render_pass: vk::RenderPass,
        size: vk::Extent2D,
        want_mode: vk::PresentModeKHR,
        old: Option<&Swapchain>,
    ) -> Result<Self, VkError> {
        let sc_fn =
            ctx.swapchain_fn.as_ref().ok_or_else(|| VkError::Unsupported("no swapchain extension".into()))?;
        let pd = ctx.physical.handle;
        // SAFETY: valid physical device and surface.
        let caps = unsafe { surface.loader.get_physical_device_surface_capabilities(pd, surface.handle) }
            .call("vkGetPhysicalDeviceSurfaceCapabilitiesKHR")?;
        // SAFETY: as above.
        let modes = unsafe { surface.loader.get_physical_device_surface_present_modes(pd, surface.handle) }
            .call("vkGetPhysicalDeviceSurfacePresentModesKHR")?;
        let present_mode = if modes.contains(&want_mode) {
            want_mode
        } else {
            log::warn!("present mode {want_mode:?} is not supported here; using FIFO");
            vk::PresentModeKHR::FIFO
        };
        let want = if caps.current_extent.width != u32::MAX { caps.current_extent } else { size };
        // SAFETY: valid physical device of this instance.
        let limits = unsafe { surface.instance.instance.get_physical_device_properties(pd) }.limits;
        let extent = clamp_extent(want, &caps, &limits);
        if extent != want {
            log::warn!(
                "the window is {}x{}; rendering {}x{} (device limit {}x{}), stretched to fit",
                want.width,
                want.height,
                extent.width,
                extent.height,
                device_max_extent(&limits).width,
                device_max_extent(&limits).height
            );
        }
        log::debug!(
            "surface extent: current {:?}, min {:?}, max {:?} → {extent:?}",
            caps.current_extent,
            caps.min_image_extent,
            caps.max_image_extent
        );
        let mut count = caps.min_image_count + 1;
        if caps.max_image_count > 0 {
            count = count.min(caps.max_image_count);
        }
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(surface.handle)
            .min_image_count(count)
            .image_format(format.format)
            .image_color_space(format.color_space)
            .image_extent(extent)
            .image_array_layers(1)
            // TRANSFER_DST where offered: `--post` copies (blits) its output into the image.
            .image_usage(
                vk::ImageUsageFlags::COLOR_ATTACHMENT
                    | (caps.supported_usage_flags & vk::ImageUsageFlags::TRANSFER_DST),
            )
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
            .present_mode(present_mode)
            .clipped(true)
            .old_swapchain(old.map_or(vk::SwapchainKHR::null(), |o| o.handle));
        // SAFETY: valid device, surface and (optional) old swapchain.
        let handle = unsafe { sc_fn.create_swapchain(&info, None) }.call("vkCreateSwapchainKHR")?;
        let depth = match Image::new(
            ctx,
            extent,
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        ) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: the new swapchain is unused.
                unsafe { sc_fn.destroy_swapchain(handle, None) };
                return Err(e);
            }
        };
        let mut me = Swapchain {
            ctx: ctx.clone(),
            handle,
            extent,
            present_mode,
            clamped: extent != want,
            transfer_dst: caps.supported_usage_flags.contains(vk::ImageUsageFlags::TRANSFER_DST),
            images: Vec::new(),
            _depth: depth,
        };
        // SAFETY: valid swapchain.
        let images = unsafe { sc_fn.get_swapchain_images(handle) }.call("vkGetSwapchainImagesKHR")?;
        for image in images {
            let view_info = vk::ImageViewCreateInfo::default()
                .image(image)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(format.format)
                .subresource_range(super::target::subresource(vk::ImageAspectFlags::COLOR));
            // SAFETY: swapchain image of this device.
            let view = unsafe { ctx.device.create_image_view(&view_info, None) }.call("vkCreateImageView")?;
            // SAFETY: valid device.
            let present =
                match unsafe { ctx.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) } {
                    Ok(s) => s,
                    Err(e) => {
                        // SAFETY: the view is unused.
                        unsafe { ctx.device.destroy_image_view(view, None) };
                        return Err(VkError::Call { call: "vkCreateSemaphore", result: e });
                    }
                };
            let framebuffer = match Framebuffer::new(ctx, render_pass, &[view, me._depth.view], extent) {
                Ok(f) => f,
                Err(e) => {
                    // SAFETY: both are unused.
                    unsafe {
                        ctx.device.destroy_image_view(view, None);
                        ctx.device.destroy_semaphore(present, None);
                    }
                    return Err(e);
                }
            };
            me.images.push(SwapImage { image, framebuffer, view, present });
        }
        log::info!(
            "swapchain {}x{}, {} images, {present_mode:?}",
            extent.width,
            extent.height,
            me.images.len()
        );
        Ok(me)
    }

    fn swapchain_fn(&self) -> Result<&khr::swapchain::Device, VkError> {
        self.ctx.swapchain_fn.as_ref().ok_or_else(|| VkError::Unsupported("no swapchain extension".into()))
    }

    /// Acquire the next image, signalling `acquired`. `Ok(Acquire::Retry)` when no image came
    /// within a second (a hidden window) or the swapchain is out of date (`recreate` set).
    pub fn acquire(&self, acquired: vk::Semaphore) -> Result<Acquire, VkError> {
        let sc_fn = self.swapchain_fn()?;
        // SAFETY: valid swapchain and unsignalled binary semaphore (its last wait has completed:
        // the caller throttled). A finite timeout keeps Esc and Ctrl-C responsive.
        match unsafe { sc_fn.acquire_next_image(self.handle, 1_000_000_000, acquired, vk::Fence::null()) } {
            Ok((image, suboptimal)) => Ok(Acquire::Image { image, suboptimal: suboptimal && !self.clamped }),
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => Ok(Acquire::Retry { recreate: true }),
            Err(vk::Result::TIMEOUT | vk::Result::NOT_READY) => Ok(Acquire::Retry { recreate: false }),
            Err(e) => Err(VkError::Call { call: "vkAcquireNextImageKHR", result: e }),
        }
    }

    /// Image `i` itself (the post stage's copy destination).
    pub fn vk_image(&self, i: u32) -> vk::Image {
        self.images[i as usize].image
    }

    /// Framebuffer and present semaphore of image `i`.
    pub fn image(&self, i: u32) -> (vk::Framebuffer, vk::Semaphore) {
        let img = &self.images[i as usize];
        (img.framebuffer.handle, img.present)
    }

    /// Present image `i` after its draw. `Ok(false)`: out of date or suboptimal, re-create.
    pub fn present(&self, i: u32) -> Result<bool, VkError> {
        let sc_fn = self.swapchain_fn()?;
        let waits = [self.images[i as usize].present];
        let swapchains = [self.handle];
        let indices = [i];
        let info = vk::PresentInfoKHR::default()
            .wait_semaphores(&waits)
            .swapchains(&swapchains)
            .image_indices(&indices);
        let q = self.ctx.queue();
        // SAFETY: the queue is locked; the image was acquired and drawn into.
        match unsafe { sc_fn.queue_present(*q, &info) } {
            Ok(false) => Ok(true),
            Ok(true) if self.clamped => Ok(true),
            Ok(true) | Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => Ok(false),
            Err(e) => Err(VkError::Call { call: "vkQueuePresentKHR", result: e }),
        }
    }
}

/// The largest image the device can render into and show: image, framebuffer and viewport limits.
pub fn device_max_extent(limits: &vk::PhysicalDeviceLimits) -> vk::Extent2D {
    vk::Extent2D {
        width: limits
            .max_image_dimension2_d
            .min(limits.max_framebuffer_width)
            .min(limits.max_viewport_dimensions[0]),
        height: limits
            .max_image_dimension2_d
            .min(limits.max_framebuffer_height)
            .min(limits.max_viewport_dimensions[1]),
    }
}

/// The swapchain extent for a window that wants `want`: within the surface's [min, max] and
/// never beyond what the device can render ([`device_max_extent`]; where the two disagree, as
/// with an X11 window larger than the device's limits, the device wins and the presentation
/// engine scales the image to the window). Never 0.
pub fn clamp_extent(
    want: vk::Extent2D,
    caps: &vk::SurfaceCapabilitiesKHR,
    limits: &vk::PhysicalDeviceLimits,
) -> vk::Extent2D {
    let dev = device_max_extent(limits);
    let side = |w: u32, lo: u32, hi: u32, dev: u32| w.clamp(lo.min(hi), hi.max(lo)).min(dev).max(1);
    vk::Extent2D {
        width: side(want.width, caps.min_image_extent.width, caps.max_image_extent.width, dev.width),
        height: side(want.height, caps.min_image_extent.height, caps.max_image_extent.height, dev.height),
    }
}

impl Drop for Swapchain {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.queue_wait_idle() {
            log::warn!("swapchain teardown: {e}");
        }
        // SAFETY: the queue is idle, so no draw or present uses these objects any more.
        unsafe {
            for img in self.images.drain(..) {
                drop(img.framebuffer);
                self.ctx.device.destroy_image_view(img.view, None);
                self.ctx.device.destroy_semaphore(img.present, None);
            }
            if let Some(sc_fn) = &self.ctx.swapchain_fn {
                sc_fn.destroy_swapchain(self.handle, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(min: (u32, u32), max: (u32, u32)) -> vk::SurfaceCapabilitiesKHR {
        vk::SurfaceCapabilitiesKHR {
            min_image_extent: vk::Extent2D { width: min.0, height: min.1 },
            max_image_extent: vk::Extent2D { width: max.0, height: max.1 },
            ..Default::default()
        }
    }

    fn limits(image: u32, fb: (u32, u32), viewport: [u32; 2]) -> vk::PhysicalDeviceLimits {
        vk::PhysicalDeviceLimits {
            max_image_dimension2_d: image,
            max_framebuffer_width: fb.0,
            max_framebuffer_height: fb.1,
            max_viewport_dimensions: viewport,
            ..Default::default()
        }
    }

    fn e(width: u32, height: u32) -> vk::Extent2D {
        vk::Extent2D { width, height }
    }

    #[test]
    fn extents_stay_within_surface_and_device_limits() {
        let l = limits(16384, (16384, 16384), [16384, 16384]);
        // Normal window: unchanged.
        assert_eq!(clamp_extent(e(1280, 720), &caps((1, 1), (32768, 32768)), &l), e(1280, 720));
        // X11 (min = max = current) beyond the device: the device wins.
        assert_eq!(clamp_extent(e(20000, 300), &caps((20000, 300), (20000, 300)), &l), e(16384, 300));
        // The smallest of image, framebuffer and viewport limits, per axis.
        let l = limits(16384, (8192, 16384), [16384, 4096]);
        assert_eq!(clamp_extent(e(30000, 30000), &caps((1, 1), (32768, 32768)), &l), e(8192, 4096));
        // Surface maximum below the request.
        assert_eq!(clamp_extent(e(5000, 5000), &caps((1, 1), (4000, 3000)), &l), e(4000, 3000));
        // Never 0.
        assert_eq!(clamp_extent(e(0, 0), &caps((0, 0), (100, 100)), &l), e(1, 1));
    }
}
