//! The HIP backend's post filter (`--post outline`): [`PostStage`] over the crate's HIP device.
//! `kernels/outline.hip` compiled by hiprtc with the app's cache ([`super::compile`]), the pairs'
//! exported images imported with [`Hip::import_image`] (a HIP array and a surface object each).
//! ROCm on Linux imports no Vulkan semaphores (the crate's module notes say why), so the post
//! timelines are closed unused and only the host-synchronous path runs (`bridged`). Built and
//! unit-tested without an AMD GPU; never run on AMD hardware.

use super::{compile, HipContext, Result};
use crate::compute::outline::OUTLINE_ENTRY;
use crate::compute::post::PostResources;
use crate::compute::post_stage::{PostApi, PostStage};
use std::ffi::c_void;
use std::sync::Arc;
use vkhip_interop::hip::{self, Hip, HipEvent, HipImage, HipKernel, HipSemaphore};
use vkhip_interop::{ExportedImage, FrameStream, ImportFd};

/// What the post stage calls HIP with.
pub struct HipPost {
    hip: Arc<Hip>,
}

impl PostApi for HipPost {
    const NAME: &'static str = "hip";
    type Stream = Arc<Hip>;
    type Image = HipImage;
    type Kernel = HipKernel;
    type Semaphore = HipSemaphore;
    type Event = HipEvent;

    fn import_image(&self, image: ExportedImage) -> Result<HipImage> {
        Ok(self.hip.import_image(image)?)
    }

    fn import_timeline(&self, fd: ImportFd) -> Result<HipSemaphore> {
        Ok(self.hip.import_timeline(fd)?)
    }

    fn surface(image: &HipImage) -> u64 {
        image.surface()
    }

    fn event(&self) -> Result<HipEvent> {
        Ok(self.hip.event(false)?)
    }

    unsafe fn launch(
        &self,
        stream: &Arc<Hip>,
        kernel: &HipKernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: per this function's contract; `kernel` was loaded through `stream`'s device.
        Ok(unsafe { stream.launch(kernel, grid, block, args) }?)
    }

    fn wait(&self, stream: &Arc<Hip>, semaphore: &HipSemaphore, value: u64) -> Result<()> {
        Ok(FrameStream::wait(&**stream, semaphore, value)?)
    }

    fn signal(&self, stream: &Arc<Hip>, semaphore: &HipSemaphore, value: u64) -> Result<()> {
        Ok(FrameStream::signal(&**stream, semaphore, value)?)
    }
}

/// Compile (or take from the cache) and load `outline`, import `post`'s images; the post
/// timelines, if any, are closed (bridged only).
pub(super) fn attach(device: &HipContext, mut post: PostResources) -> Result<PostStage<HipPost>> {
    let hip = device.hip.clone();
    if post.semaphores.take().is_some() {
        log::info!(
            "hip: the post timelines are not imported (ROCm on Linux imports no semaphores): bridged only"
        );
    }
    let driver = hip::driver_version().unwrap_or(0);
    let code = compile::outline_code(&hip, driver)?;
    let kernel = hip.load_module(&code)?.function(OUTLINE_ENTRY)?;
    PostStage::new(HipPost { hip: hip.clone() }, kernel, post, None)
}
