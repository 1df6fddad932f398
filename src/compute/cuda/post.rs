//! The CUDA backend's post filter (`--post outline`): [`PostStage`] over the crate's CUDA device.
//! `kernels/outline.hip` is compiled by NVRTC exactly as `sinewave` is (same options, same
//! on-disk cache), the pairs' exported images are imported with [`Cuda::import_image`] (a CUDA
//! array and a surface object each), the post timelines with [`Cuda::import_timeline`]. The
//! kernel stamps the GPU timer into a [`GpuStamps`] of its own, so GPU-side frames get
//! `PostFilter` spans on the Vulkan device clock, as `sinewave`'s `Write` spans.

use super::stamps::GpuStamps;
use super::{backend_error, load_kernel, CudaContext, Result};
use crate::compute::kernel::StampTarget;
use crate::compute::outline::{OUTLINE_ENTRY, OUTLINE_SOURCE};
use crate::compute::post::PostResources;
use crate::compute::post_stage::{PostApi, PostStage};
use crate::compute::timing::StreamTimer;
use std::ffi::c_void;
use std::sync::Arc;
use vkhip_interop::cuda::{self as interop, Cuda, CudaEvent, CudaImage, CudaKernel, CudaSemaphore};
use vkhip_interop::{ExportedImage, FrameStream, ImportFd};

/// What the post stage calls CUDA with: the device and the filter's stamp memory.
pub struct CudaPost {
    stamps: Option<GpuStamps>,
    cuda: Arc<Cuda>,
}

impl PostApi for CudaPost {
    const NAME: &'static str = "cuda";
    type Stream = Arc<Cuda>;
    type Image = CudaImage;
    type Kernel = CudaKernel;
    type Semaphore = CudaSemaphore;
    type Event = CudaEvent;

    fn import_image(&self, image: ExportedImage) -> Result<CudaImage> {
        crate::compute::inject_fault(
            crate::fault::Fault::CudaMemoryImport,
            "cuda",
            "cuImportExternalMemory",
        )?;
        Ok(self.cuda.import_image(image)?)
    }

    fn import_timeline(&self, fd: ImportFd) -> Result<CudaSemaphore> {
        Ok(self.cuda.import_timeline(fd)?)
    }

    fn surface(image: &CudaImage) -> u64 {
        image.surface()
    }

    fn event(&self) -> Result<CudaEvent> {
        Ok(self.cuda.event(false)?)
    }

    unsafe fn launch(
        &self,
        stream: &Arc<Cuda>,
        kernel: &CudaKernel,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: per this function's contract; `kernel` was loaded through `stream`'s device.
        Ok(unsafe { stream.launch(kernel, grid, block, args) }?)
    }

    fn wait(&self, stream: &Arc<Cuda>, semaphore: &CudaSemaphore, value: u64) -> Result<()> {
        Ok(FrameStream::wait(&**stream, semaphore, value)?)
    }

    fn signal(&self, stream: &Arc<Cuda>, semaphore: &CudaSemaphore, value: u64) -> Result<()> {
        Ok(FrameStream::signal(&**stream, semaphore, value)?)
    }

    fn stamp_target(&self, entry: usize) -> Option<StampTarget> {
        Some(self.stamps.as_ref()?.target(entry))
    }

    fn read_stamps(&self, entry: usize) -> Option<(u64, u64)> {
        self.stamps.as_ref()?.read(entry)
    }
}

/// Compile (or take from the cache) and load `outline`, import `post`'s images and timelines.
pub(super) fn attach(device: &CudaContext, post: PostResources) -> Result<PostStage<CudaPost>> {
    let cuda = device.cuda.clone();
    let driver_version = interop::driver_version().map_err(|e| backend_error(e.into()))?;
    let kernel =
        load_kernel((OUTLINE_SOURCE, "outline.hip"), cuda.info(), driver_version, "cuda", |image| {
            Ok(cuda.load_module(image)?.function(OUTLINE_ENTRY)?)
        })?;
    let stamps = crate::profile::gpu_timing().then(|| GpuStamps::new(&cuda)).transpose()?;
    let timer = StreamTimer::gpu_stamped("cuda post", cuda.clone(), || Ok(cuda.event(false)?))?;
    PostStage::new(CudaPost { stamps, cuda: cuda.clone() }, kernel, post, Some(timer))
}
