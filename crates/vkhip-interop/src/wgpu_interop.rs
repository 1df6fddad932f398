//! wgpu textures and buffers shared with CUDA or HIP (feature `wgpu`; wgpu 30, its Vulkan
//! backend only).
//!
//! [`WgpuDevice`] is a `wgpu::Device` and `wgpu::Queue` on a Vulkan adapter with what the crate
//! needs enabled ([`WgpuDevice::open`]; or your own device, checked: [`WgpuDevice::from_wgpu`]),
//! plus the crate's [`vulkan::Device`] borrowed from it. Its [`WgpuTexture`]s and [`WgpuBuffer`]s
//! are ordinary `wgpu::Texture`s and `wgpu::Buffer`s with a [`SharedImage`] / [`SharedBuffer`]
//! behind them, which export to CUDA or HIP as any other (`SharedImage::export`).
//!
//! **Lifetimes, in the types.** wgpu's texture or buffer holds the crate's object through wgpu-hal's
//! drop callback (an `Arc`), and the crate's object holds its [`vulkan::Device`], which holds a
//! clone of the `wgpu::Device` it borrows its handles from. The memory is freed when both the
//! wrapper and wgpu's object are gone (wgpu drops its object only once the GPU is done with it);
//! the borrowed Vulkan device outlives both.
//!
//! **The hand-off, and how it agrees with wgpu's tracking.** wgpu records its own barriers: before
//! each command buffer it transitions every resource from the state its tracker holds to the state
//! that command buffer first uses. Those barriers never move ownership, so the crate adds its own
//! in command buffers of their own, recorded through wgpu-hal (`CommandEncoder::as_hal_mut`), and
//! keeps wgpu's tracker in the layout of the compute API's tenure, `GENERAL`
//! (`TextureUses::STORAGE_READ_WRITE`, which wgpu-hal maps to `GENERAL`):
//!
//! ```text
//!  submit([ acquire(..),               ownership EXTERNAL → wgpu's family, GENERAL kept (crate, hal)
//!           your work,                 wgpu: GENERAL → what you use, barriers of its own (wgpu)
//!           finish_and_release(..) ])  wgpu: → GENERAL at the end of your last encoder (wgpu),
//!                                      then ownership wgpu's family → EXTERNAL, GENERAL (crate, hal)
//! ```
//!
//! Between a release and the next acquire, wgpu's tracker says `STORAGE_READ_WRITE` and the image
//! is in `GENERAL`: the two agree at every submit boundary. [`WgpuDevice::release`] does the same
//! with wgpu's transition in an encoder of its own (for a new texture, or after an encoder recorded
//! through `as_hal_mut`); a new texture is prepared for a compute API that writes first by a
//! [`WgpuDevice::release`] alone (its UNDEFINED → GENERAL transition is wgpu's), finished before
//! the compute API writes (`Device::poll`, or a signal it waits on). Semaphores order the APIs:
//! [`WgpuDevice::wait_next_submit`] and [`WgpuDevice::signal_next_submit`] attach a timeline wait
//! and signal to wgpu's next submit (wgpu-hal's `Queue::add_wait_semaphore` /
//! `add_signal_semaphore`). Without semaphore export (HIP on Linux, lavapipe) order them on the
//! host: the compute stream synchronised before the submit, `Device::poll` before the compute API
//! touches the memory again.
//!
//! **What a hand-off costs on wgpu's side** (wgpu 30, read in wgpu-core's `Queue::submit` and
//! wgpu-hal's Vulkan `Queue::submit`): one `queue.submit` is one `vkQueueSubmit`, whatever the
//! number of command buffers. wgpu records a command buffer of its own (its barriers, "Transit")
//! in front of every `wgpu::CommandBuffer`, empty or not, so `[acquire, work, release]` is six
//! Vulkan command buffers (the older `[acquire, work, general, release]` eight). The submission
//! waits on the crate's semaphore (at every stage) and on wgpu's binary "relay" semaphore from its
//! previous submission (top of pipe), and signals the crate's semaphore, the next relay semaphore
//! and wgpu's own timeline (its fence). `Device::poll(Wait)` is a `vkWaitSemaphores` on that
//! timeline — a value Vulkan signals, never a value the compute API signals — and then wgpu's
//! cleanup: every finished encoder's command pool is reset (`vkResetCommandPool`) and returned to
//! wgpu's pool. Each encoder is created, finished (wgpu encodes at `finish`), submitted and reset
//! once per frame: the fewer command buffers, the less of this. `wgpu_handoff_cost` measures each
//! part against the crate's plain-ash path (docs/ARCHITECTURE.md, "The wgpu hand-off").
//!
//! # The smallest program
//!
//! CUDA paints a wgpu texture every frame; wgpu waits for it on the GPU and uses it (also in the
//! crate's README):
//!
//! ```no_run
//! use std::ffi::c_void;
//! use vkhip_interop::cuda::{devices, Cuda};
//! use vkhip_interop::vulkan::Importer;
//! use vkhip_interop::wgpu_interop::{vulkan_adapter, WgpuDevice};
//! use vkhip_interop::{FrameStream, ImageFormat};
//!
//! const KERNEL: &str = r#"extern "C" __global__ void paint(cudaSurfaceObject_t s, unsigned int f) {
//!     surf2Dwrite(make_uchar4(threadIdx.x, blockIdx.x, f, 255), s, threadIdx.x * 4, blockIdx.x);
//! }"#;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // wgpu on the GPU CUDA runs on, with what sharing needs enabled.
//!     let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
//!     let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
//!     let gpu = WgpuDevice::open(&vulkan_adapter(&instance, &uuids)?, &Default::default(), Importer::Cuda)?;
//!     let cuda = Cuda::open(gpu.vulkan().uuid())?;
//!     // A wgpu texture CUDA writes, handed to CUDA once; two timelines order the two APIs.
//!     let texture = gpu.shared_texture(ImageFormat::Rgba8Unorm, 256, 256)?;
//!     gpu.queue().submit(gpu.release(&[&texture], &[]));
//!     gpu.device().poll(wgpu::PollType::wait_indefinitely())?; // done before CUDA writes
//!     let surface = cuda.import_image(texture.image().export()?)?;
//!     let (written, read) = (gpu.vulkan().shared_timeline(0)?, gpu.vulkan().shared_timeline(0)?);
//!     let (cuda_written, cuda_read) = (cuda.import_timeline(written.export()?)?, cuda.import_timeline(read.export()?)?);
//!     let kernel = cuda.compile(KERNEL, "paint")?;
//!     for f in 0..60u64 {
//!         // CUDA: once wgpu has read frame f − 1, paint frame f and signal f + 1.
//!         let wait = (f > 0).then_some((&cuda_read, f));
//!         cuda.frame(wait, Some((&cuda_written, f + 1)), |cuda| {
//!             let (mut s, mut frame) = (surface.surface(), f as u32);
//!             let mut args = [&mut s as *mut u64 as *mut c_void, &mut frame as *mut u32 as *mut c_void];
//!             // SAFETY: `paint(cudaSurfaceObject_t, unsigned)`: a pointer to a value of each
//!             // parameter's type; 256 × 256 texels of the surface `surface` keeps.
//!             unsafe { cuda.launch(&kernel, [256, 1, 1], [256, 1, 1], &mut args) }
//!         })?;
//!         // wgpu: the next submit waits for CUDA's frame and signals its own read.
//!         gpu.wait_next_submit(&written, f + 1)?;
//!         gpu.signal_next_submit(&read, f + 1)?;
//!         let encoder = gpu.device().create_command_encoder(&Default::default());
//!         // … your passes sample, copy or render into texture.texture() …
//!         let [work, release] = gpu.finish_and_release(encoder, &[&texture], &[]);
//!         gpu.queue().submit([gpu.acquire(&[&texture], &[]), work, release]);
//!     }
//!     gpu.device().poll(wgpu::PollType::wait_indefinitely())?;
//!     cuda.synchronize()?;
//!     Ok(())
//! }
//! ```
//!
//! **Other wgpu backends** (Metal, DX12, GL, WebGPU) are refused with one line
//! ([`crate::ErrorKind::Unsupported`]): the export, import and semaphore paths here are Vulkan's
//! (`VK_KHR_external_memory_fd`, `VK_KHR_external_semaphore_fd`).

use crate::error::{Api, Error, Result};
use crate::vulkan::{self, requirements, ImageAccess, Importer, SharedBuffer, SharedImage, SharedSemaphore};
use crate::ImageFormat;
use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;
use wgpu::hal::api::Vulkan;
use wgpu::hal::vulkan as hal_vk;

/// The usages of every shared `wgpu::Buffer`.
pub const BUFFER_USAGES: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::VERTEX)
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// The crate's access on its side of a barrier: everything (wgpu's own barriers narrow it).
const ANY: vk::AccessFlags =
    vk::AccessFlags::from_raw(vk::AccessFlags::MEMORY_READ.as_raw() | vk::AccessFlags::MEMORY_WRITE.as_raw());

fn refuse_backend(what: &str, backend: wgpu::Backend) -> Error {
    Error::unsupported(
        Api::Vulkan,
        format!(
            "{what} runs on wgpu's {backend} backend: vkhip-interop shares memory with CUDA and HIP only through wgpu's Vulkan backend"
        ),
    )
}

/// "`what` cannot share memory with `importer`: it lacks a, b`hint`", in one line.
fn lacks(what: &str, importer: Importer, missing: &[String], hint: &str) -> Error {
    let missing = missing.join(", ");
    Error::unsupported(
        Api::Vulkan,
        format!("{what} cannot share memory with {}: it lacks {missing}{hint}", importer.name()),
    )
}

/// `f` as wgpu-hal's device callback, its `'this` tied to what `f` borrows (a closure's own
/// argument type would leave it free, and a borrowed feature struct would need `'static`).
fn device_callback<'this>(
    f: impl for<'arg, 'pnext> FnOnce(hal_vk::CreateDeviceCallbackArgs<'arg, 'pnext, 'this>) + 'this,
) -> Box<hal_vk::CreateDeviceCallback<'this>> {
    Box::new(f)
}

/// The wgpu format of the crate's image format.
pub fn texture_format(format: ImageFormat) -> wgpu::TextureFormat {
    match format {
        ImageFormat::R32Float => wgpu::TextureFormat::R32Float,
        ImageFormat::Rgba8Unorm => wgpu::TextureFormat::Rgba8Unorm,
        ImageFormat::Rgba16Float => wgpu::TextureFormat::Rgba16Float,
        ImageFormat::Rgba32Float => wgpu::TextureFormat::Rgba32Float,
    }
}

/// The future's value, for wgpu's native futures (ready when returned; `Pending` is refused).
fn ready<F: std::future::Future>(f: F) -> Result<F::Output> {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => Ok(v),
        std::task::Poll::Pending => {
            Err(Error::unsupported(Api::Vulkan, "a wgpu future was not ready (not a native backend)"))
        }
    }
}

/// The Vulkan adapter of `instance` whose `deviceUUID` is in `prefer` (the compute API's
/// devices: `cuda::devices()`), else the first Vulkan adapter. Refused when wgpu has none
/// (other backends are not looked at).
pub fn vulkan_adapter(instance: &wgpu::Instance, prefer: &[[u8; 16]]) -> Result<wgpu::Adapter> {
    let adapters = ready(instance.enumerate_adapters(wgpu::Backends::VULKAN))?;
    let uuid = |a: &wgpu::Adapter| {
        // SAFETY: read only, while the adapter lives.
        let hal = unsafe { a.as_hal::<Vulkan>() }?;
        // SAFETY: the adapter's physical device belongs to its live instance.
        unsafe {
            vulkan::Capabilities::probe(hal.shared_instance().raw_instance(), hal.raw_physical_device())
        }
        .ok()
        .map(|c| c.uuid)
    };
    let chosen = adapters.iter().position(|a| uuid(a).is_some_and(|u| prefer.contains(&u))).unwrap_or(0);
    adapters.into_iter().nth(chosen).ok_or_else(|| {
        Error::unavailable(Api::Vulkan, "vkEnumeratePhysicalDevices", "wgpu found no Vulkan adapter")
    })
}

/// A wgpu device and queue on Vulkan, and the crate's [`vulkan::Device`] borrowed from them.
pub struct WgpuDevice {
    vulkan: vulkan::Device,
    device: wgpu::Device,
    queue: wgpu::Queue,
}

impl WgpuDevice {
    /// Open a device on `adapter` (wgpu's Vulkan backend) with `desc` and the extensions of
    /// [`requirements`]`(importer)` added (optional ones where the adapter has them). Timeline
    /// semaphores and `VK_KHR_external_memory_fd` wgpu enables itself where the device has them.
    pub fn open(
        adapter: &wgpu::Adapter,
        desc: &wgpu::DeviceDescriptor<'_>,
        importer: Importer,
    ) -> Result<Self> {
        let info = adapter.get_info();
        let what = format!("wgpu adapter {}", info.name);
        // SAFETY: the guard is read here only and dropped before the adapter.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }.ok_or_else(|| refuse_backend(&what, info.backend))?;
        let instance = hal.shared_instance().raw_instance();
        // SAFETY: the adapter's physical device belongs to its live instance.
        let available = unsafe { instance.enumerate_device_extension_properties(hal.raw_physical_device()) }
            .map_err(|r| Error::vulkan("vkEnumerateDeviceExtensionProperties", r))?;
        let has = |n: &CStr| available.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        let need = requirements(importer);
        let missing: Vec<String> = need
            .device_extensions
            .iter()
            .filter(|n| !has(n))
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        if !missing.is_empty() {
            return Err(lacks(&what, importer, &missing, ""));
        }
        let mut add: Vec<&'static CStr> = need.device_extensions.clone();
        add.extend(need.optional_device_extensions.iter().filter(|n| has(n)));
        // For profilers, as vulkan::Device::open does: calibrated timestamps and hostQueryReset
        // where the device has them (vulkan::OptionalFeatures).
        // SAFETY: the adapter's physical device belongs to its live instance, made from this entry.
        let calibrated = unsafe {
            vulkan::calibrated_extension(
                hal.shared_instance().entry(),
                instance,
                hal.raw_physical_device(),
                &has,
            )
        };
        add.extend(calibrated);
        let mut query_reset = vk::PhysicalDeviceHostQueryResetFeatures::default();
        {
            let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut query_reset);
            // SAFETY: as above; live locals.
            unsafe { instance.get_physical_device_features2(hal.raw_physical_device(), &mut features) };
        }
        let optional = vulkan::OptionalFeatures {
            host_query_reset: query_reset.host_query_reset == vk::TRUE,
            calibrated_timestamps: calibrated,
        };
        // wgpu-hal chains its own per-feature structs (never VkPhysicalDeviceVulkan12Features),
        // so hostQueryReset's own struct may be added.
        let mut enable_reset = vk::PhysicalDeviceHostQueryResetFeatures::default().host_query_reset(true);
        let enable_reset = &mut enable_reset;
        let callback = device_callback(move |args| {
            for name in add {
                if !args.extensions.contains(&name) {
                    args.extensions.push(name);
                }
            }
            if optional.host_query_reset {
                *args.create_info = args.create_info.push_next(enable_reset);
            }
        });
        // SAFETY: the callback only adds extensions the physical device offers (checked above)
        // and removes nothing.
        let open = unsafe {
            hal.open_with_callback(
                desc.required_features,
                &desc.required_limits,
                &desc.memory_hints,
                Some(callback),
            )
        }
        .map_err(|e| Error::unavailable(Api::Vulkan, "vkCreateDevice", format!("{what}: wgpu-hal: {e}")))?;
        drop(hal);
        // SAFETY: `open` was opened on this adapter's hal adapter, with `desc`'s features and limits.
        let (device, queue) = unsafe { adapter.create_device_from_hal(open, desc) }
            .map_err(|e| Error::unavailable(Api::Vulkan, "create_device_from_hal", format!("{what}: {e}")))?;
        let mut made = WgpuDevice::from_wgpu(device, queue, importer)?;
        made.vulkan.set_optional_features(optional);
        Ok(made)
    }

    /// Borrow a device you opened yourself. Refused, in one error naming each missing
    /// extension and feature, when it was not opened with what `importer` needs (open it with
    /// [`WgpuDevice::open`], or add [`requirements`]`(importer).device_extensions` in your own
    /// `open_with_callback`).
    pub fn from_wgpu(device: wgpu::Device, queue: wgpu::Queue, importer: Importer) -> Result<Self> {
        let vulkan = {
            // SAFETY: the guard is read here only; the handles taken from it are kept alive by the
            // clone of `device` that the crate's device holds.
            let hal = unsafe { device.as_hal::<Vulkan>() }
                .ok_or_else(|| refuse_backend("the wgpu device", device.adapter_info().backend))?;
            let shared = hal.shared_instance();
            let (instance, physical) = (shared.raw_instance(), hal.raw_physical_device());
            let need = requirements(importer);
            let enabled = hal.enabled_device_extensions();
            let mut missing: Vec<String> = need
                .device_extensions
                .iter()
                .filter(|n| !enabled.contains(n))
                .map(|n| format!("{} (not enabled)", n.to_string_lossy()))
                .collect();
            // SAFETY: the device's physical device belongs to its live instance.
            let props = unsafe { instance.get_physical_device_properties(physical) };
            if props.api_version < need.api_version {
                missing.push(format!(
                    "Vulkan {} (the device has {})",
                    vulkan::version_string(need.api_version),
                    vulkan::version_string(props.api_version)
                ));
            } else if need.timeline_semaphore {
                let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
                let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12);
                // SAFETY: as above; a Vulkan 1.2 device; live locals.
                unsafe { instance.get_physical_device_features2(physical, &mut features) };
                // wgpu-hal enables timelineSemaphore whenever the device supports it.
                if v12.timeline_semaphore != vk::TRUE {
                    missing.push("timelineSemaphore (not supported)".into());
                }
            }
            if !missing.is_empty() {
                let hint = "; open it with vkhip_interop::wgpu_interop::WgpuDevice::open";
                return Err(lacks("the wgpu device", importer, &missing, hint));
            }
            // SAFETY: the handles are wgpu-hal's live instance, physical device and device, made
            // with `requirements(importer)` (checked above) and a queue in the family below; the
            // crate's device keeps a clone of `device`, so they outlive it; it submits to that
            // queue only in its one-shot helpers (documented on `WgpuDevice::vulkan`).
            unsafe {
                vulkan::Device::from_raw(
                    shared.entry(),
                    instance,
                    physical,
                    hal.raw_device(),
                    hal.queue_family_index(),
                    importer,
                )
            }?
            .keeping(Box::new(device.clone()))
        };
        Ok(WgpuDevice { vulkan, device, queue })
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The crate's device, borrowed from wgpu's: for semaphores and exports. Its one-shot helpers
    /// (`read_buffer`, `read_image`, `submit_one_shot`) submit to wgpu's queue: do not call them
    /// while another thread submits through wgpu.
    pub fn vulkan(&self) -> &vulkan::Device {
        &self.vulkan
    }

    /// A `width` × `height` `wgpu::Texture` of `format` in exportable memory: usages sampling,
    /// storage, copies, and render attachment where the format can be one
    /// ([`SharedImage::usage`]). Contents undefined; wgpu considers it initialised.
    pub fn shared_texture(&self, format: ImageFormat, width: u32, height: u32) -> Result<WgpuTexture> {
        let image = Arc::new(self.vulkan.shared_image(format, width, height)?);
        let mut usage = wgpu::TextureUsages::TEXTURE_BINDING
            | wgpu::TextureUsages::STORAGE_BINDING
            | wgpu::TextureUsages::COPY_SRC
            | wgpu::TextureUsages::COPY_DST;
        let mut uses = wgpu::TextureUses::RESOURCE
            | wgpu::TextureUses::STORAGE_READ_WRITE
            | wgpu::TextureUses::COPY_SRC
            | wgpu::TextureUses::COPY_DST;
        if image.usage().contains(vk::ImageUsageFlags::COLOR_ATTACHMENT) {
            usage |= wgpu::TextureUsages::RENDER_ATTACHMENT;
            uses |= wgpu::TextureUses::COLOR_TARGET;
        }
        let size = wgpu::Extent3d { width, height, depth_or_array_layers: 1 };
        let label = Some("vkhip-interop shared texture");
        let hal_desc = wgpu::hal::TextureDescriptor {
            label,
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: texture_format(format),
            usage: uses,
            memory_flags: wgpu::hal::MemoryFlags::empty(),
            view_formats: Vec::new(),
        };
        let held = image.clone();
        let hal_texture = {
            // SAFETY: the guard is read here only.
            let hal = unsafe { self.device.as_hal::<Vulkan>() }
                .ok_or_else(|| refuse_backend("the wgpu device", self.device.adapter_info().backend))?;
            // SAFETY: the image is the device's, made as `hal_desc` says (2D, one level, one layer,
            // optimal tiling, those usages, no view formats), bound to memory that the callback's
            // `Arc` keeps (TextureMemory::External: wgpu destroys neither image nor memory).
            unsafe {
                hal.texture_from_raw(
                    image.image(),
                    &hal_desc,
                    Some(Box::new(move || drop(held))),
                    hal_vk::TextureMemory::External,
                )
            }
        };
        let desc = wgpu::TextureDescriptor {
            label,
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: texture_format(format),
            usage,
            view_formats: &[],
        };
        // SAFETY: made on this device as `desc` says; UNINITIALIZED: the image is new, in layout
        // UNDEFINED.
        let texture = unsafe {
            self.device.create_texture_from_hal::<Vulkan>(
                hal_texture,
                &desc,
                wgpu::TextureUses::UNINITIALIZED,
            )
        };
        Ok(WgpuTexture { texture, image })
    }

    /// A `wgpu::Buffer` of `bytes` in exportable memory, usages [`BUFFER_USAGES`] (not mappable:
    /// read it back through a copy).
    pub fn shared_buffer(&self, bytes: u64) -> Result<WgpuBuffer> {
        let usage = vulkan::BUFFER_USAGE | vk::BufferUsageFlags::VERTEX_BUFFER;
        let shared = Arc::new(self.vulkan.shared_buffer_with_usage(bytes, usage)?);
        let held = shared.clone();
        // SAFETY: the callback's `Arc` keeps the buffer and its memory until wgpu drops its object;
        // wgpu destroys neither and never maps it (not MAP_READ / MAP_WRITE).
        let hal_buffer = unsafe {
            hal_vk::Buffer::from_raw_externally_owned(shared.buffer(), Box::new(move || drop(held)))
        };
        let desc = wgpu::BufferDescriptor {
            label: Some("vkhip-interop shared buffer"),
            size: bytes,
            usage: BUFFER_USAGES,
            mapped_at_creation: false,
        };
        // SAFETY: made on this device, `bytes` (> 0, checked above) long, with the usages of
        // `desc`; its contents count as initialised (they are the compute API's).
        let buffer = unsafe { self.device.create_buffer_from_hal::<Vulkan>(hal_buffer, &desc) };
        Ok(WgpuBuffer { buffer, shared })
    }

    fn hal_queue(&self) -> Result<impl std::ops::Deref<Target = hal_vk::Queue> + '_> {
        // SAFETY: the guard is used to add semaphores only.
        unsafe { self.queue.as_hal::<Vulkan>() }
            .ok_or_else(|| refuse_backend("the wgpu queue", self.device.adapter_info().backend))
    }

    /// The next `queue.submit` waits (at every stage) until the timeline `semaphore` reaches
    /// `value` — e.g. the value the compute API signals once it wrote. `semaphore` must live until
    /// that submit has finished.
    pub fn wait_next_submit(&self, semaphore: &SharedSemaphore, value: u64) -> Result<()> {
        semaphore_is_timeline(semaphore)?;
        self.hal_queue()?.add_wait_semaphore(
            semaphore.handle(),
            Some(value),
            vk::PipelineStageFlags::ALL_COMMANDS,
        );
        Ok(())
    }

    /// The next `queue.submit` sets the timeline `semaphore` to `value` once it has finished —
    /// e.g. the value the compute API waits on before it writes again. `semaphore` must live until
    /// that submit has finished.
    pub fn signal_next_submit(&self, semaphore: &SharedSemaphore, value: u64) -> Result<()> {
        semaphore_is_timeline(semaphore)?;
        self.hal_queue()?.add_signal_semaphore(semaphore.handle(), Some(value));
        Ok(())
    }

    /// A command buffer that takes `textures` and `buffers` from the compute API: the ownership
    /// transfers from `VK_QUEUE_FAMILY_EXTERNAL`, layout `GENERAL` kept (module note). Submit it
    /// first, in the same `queue.submit` as the work that uses them.
    pub fn acquire(&self, textures: &[&WgpuTexture], buffers: &[&WgpuBuffer]) -> wgpu::CommandBuffer {
        // SAFETY: records nothing of its own.
        unsafe { self.acquire_with(textures, buffers, |_| {}) }
    }

    /// [`Self::acquire`], then raw Vulkan commands of yours in the same command buffer, after the
    /// crate's barriers (a timestamp, say: what the crate's benchmark writes, and a profiler
    /// would). `record` gets the command buffer, recording, on wgpu's queue family; record with
    /// [`WgpuDevice::vulkan`]`().ash()`.
    ///
    /// # Safety
    /// `record` records only valid commands for a primary command buffer of this device's queue
    /// family, outside any render pass, on objects of this device that live until the submission
    /// has finished; it changes no layout and no ownership of any resource wgpu tracks, and does
    /// not end the command buffer.
    pub unsafe fn acquire_with(
        &self,
        textures: &[&WgpuTexture],
        buffers: &[&WgpuBuffer],
        record: impl FnOnce(vk::CommandBuffer),
    ) -> wgpu::CommandBuffer {
        // SAFETY: per this function's contract.
        unsafe { self.hal_barriers(textures, buffers, true, record) }
    }

    /// `encoder`, finished with wgpu's own transition of `textures` to `GENERAL`
    /// (`STORAGE_READ_WRITE`), and the command buffer that then hands `textures` and `buffers` to
    /// the compute API (the ownership transfers to `VK_QUEUE_FAMILY_EXTERNAL`, `GENERAL` kept).
    /// `encoder` is your last one that uses them this frame, recorded through wgpu's API (not
    /// `as_hal_mut`). Submit both last, in the same `queue.submit`, after [`Self::acquire`]:
    /// `[acquire, your command buffers…, these two]`, three command buffers for one encoder of
    /// yours — one fewer than [`Self::release`], whose transition is an encoder of its own.
    pub fn finish_and_release(
        &self,
        encoder: wgpu::CommandEncoder,
        textures: &[&WgpuTexture],
        buffers: &[&WgpuBuffer],
    ) -> [wgpu::CommandBuffer; 2] {
        // SAFETY: records nothing of its own.
        unsafe { self.finish_and_release_with(encoder, textures, buffers, |_| {}) }
    }

    /// [`Self::finish_and_release`], then raw Vulkan commands of yours after the crate's barriers,
    /// in the release's command buffer (a timestamp of the hand-off's end, say).
    ///
    /// # Safety
    /// As [`Self::acquire_with`].
    pub unsafe fn finish_and_release_with(
        &self,
        mut encoder: wgpu::CommandEncoder,
        textures: &[&WgpuTexture],
        buffers: &[&WgpuBuffer],
        record: impl FnOnce(vk::CommandBuffer),
    ) -> [wgpu::CommandBuffer; 2] {
        to_general(&mut encoder, textures);
        // SAFETY: per this function's contract.
        [encoder.finish(), unsafe { self.hal_barriers(textures, buffers, false, record) }]
    }

    /// The command buffers that hand `textures` and `buffers` to the compute API after wgpu's
    /// last use: wgpu's own transition to `GENERAL` (`STORAGE_READ_WRITE`) in an encoder of its
    /// own, then the ownership transfers to `VK_QUEUE_FAMILY_EXTERNAL`. Submit them last, in the
    /// same `queue.submit` as that use; on a new texture they prepare it for a compute API that
    /// writes first (which must then wait for that submit: `Device::poll`, or
    /// [`Self::signal_next_submit`]). After your own encoders prefer [`Self::finish_and_release`]
    /// (one command buffer fewer per frame); this one serves where there is no encoder to finish
    /// (a new texture) or your last one was recorded through `as_hal_mut`.
    pub fn release(&self, textures: &[&WgpuTexture], buffers: &[&WgpuBuffer]) -> [wgpu::CommandBuffer; 2] {
        // SAFETY: records nothing of its own.
        unsafe { self.release_with(textures, buffers, |_| {}) }
    }

    /// [`Self::release`], then raw Vulkan commands of yours after the crate's barriers, in the
    /// release's command buffer.
    ///
    /// # Safety
    /// As [`Self::acquire_with`].
    pub unsafe fn release_with(
        &self,
        textures: &[&WgpuTexture],
        buffers: &[&WgpuBuffer],
        record: impl FnOnce(vk::CommandBuffer),
    ) -> [wgpu::CommandBuffer; 2] {
        let mut general = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("vkhip-interop: to GENERAL"),
        });
        to_general(&mut general, textures);
        // SAFETY: per this function's contract.
        [general.finish(), unsafe { self.hal_barriers(textures, buffers, false, record) }]
    }

    /// # Safety
    /// As [`Self::acquire_with`], for `record`.
    unsafe fn hal_barriers(
        &self,
        textures: &[&WgpuTexture],
        buffers: &[&WgpuBuffer],
        acquire: bool,
        record: impl FnOnce(vk::CommandBuffer),
    ) -> wgpu::CommandBuffer {
        let label = if acquire { "vkhip-interop: acquire" } else { "vkhip-interop: release" };
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        let all = vk::PipelineStageFlags::ALL_COMMANDS;
        // SAFETY: the encoder is new and used through wgpu-hal only; the command buffer is
        // recording for wgpu's queue family, which is the crate's device's; the images and
        // buffers are the crate's, in GENERAL while the compute API owns them (module note);
        // `record` keeps to the caller's contract.
        unsafe {
            encoder.as_hal_mut::<Vulkan, _, _>(|hal| {
                let Some(hal) = hal else { return };
                let cmd = hal.raw_handle();
                for t in textures {
                    if acquire {
                        t.image.cmd_acquire(cmd, ImageAccess::general(all, ANY));
                    } else {
                        t.image.cmd_release(cmd, ImageAccess::general(all, vk::AccessFlags::MEMORY_WRITE));
                    }
                }
                for b in buffers {
                    if acquire {
                        b.shared.cmd_acquire(cmd, (all, ANY));
                    } else {
                        b.shared.cmd_release(cmd, (all, vk::AccessFlags::MEMORY_WRITE));
                    }
                }
                record(cmd);
            })
        };
        encoder.finish()
    }
}

/// wgpu's own transition of `textures` to `STORAGE_READ_WRITE` (layout `GENERAL`), recorded in
/// `encoder`: its tracker and the image then agree with the release that follows.
fn to_general(encoder: &mut wgpu::CommandEncoder, textures: &[&WgpuTexture]) {
    if textures.is_empty() {
        return;
    }
    encoder.transition_resources(
        std::iter::empty(),
        textures.iter().map(|t| wgpu::TextureTransition {
            texture: &t.texture,
            selector: None,
            state: wgpu::TextureUses::STORAGE_READ_WRITE,
        }),
    );
}

fn semaphore_is_timeline(semaphore: &SharedSemaphore) -> Result<()> {
    if !semaphore.is_timeline() {
        return Err(Error::invalid(Api::Vulkan, "wgpu hand-offs use timeline semaphores"));
    }
    Ok(())
}

/// A `wgpu::Texture` with the crate's [`SharedImage`] behind it.
pub struct WgpuTexture {
    texture: wgpu::Texture,
    image: Arc<SharedImage>,
}

impl WgpuTexture {
    pub fn texture(&self) -> &wgpu::Texture {
        &self.texture
    }

    /// The image behind it, to export (`SharedImage::export`).
    pub fn image(&self) -> &SharedImage {
        &self.image
    }
}

/// A `wgpu::Buffer` with the crate's [`SharedBuffer`] behind it.
pub struct WgpuBuffer {
    buffer: wgpu::Buffer,
    shared: Arc<SharedBuffer>,
}

impl WgpuBuffer {
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// The buffer behind it, to export (`SharedBuffer::export`).
    pub fn shared(&self) -> &SharedBuffer {
        &self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_backends_are_refused_in_one_typed_line_that_names_them() {
        for backend in
            [wgpu::Backend::Metal, wgpu::Backend::Dx12, wgpu::Backend::Gl, wgpu::Backend::BrowserWebGpu]
        {
            let e = refuse_backend("wgpu adapter X", backend);
            let text = e.to_string();
            assert_eq!(e.kind(), crate::ErrorKind::Unsupported, "{text}");
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(text.contains(&backend.to_string()) && text.contains("Vulkan backend"), "{text}");
        }
    }
}
