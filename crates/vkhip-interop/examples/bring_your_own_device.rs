//! An engine's own Vulkan device, handed to the crate: the engine creates its instance and device
//! as it always does, with what `vulkan::requirements` lists, and lends them to
//! `vulkan::Device::from_raw`. CUDA imports a buffer and two timelines exported on the engine's
//! device; our kernel writes the buffer between a wait and a signal; the engine's queue reads it
//! back. The crate never destroys the engine's device: the engine does, last.
//!
//!     cargo run --release -p vkhip-interop --example bring_your_own_device
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no usable CUDA device.

use ash::vk;
use std::ffi::{c_char, c_void};
use std::process::ExitCode;
use vkhip_interop::cuda::{self, Cuda};
use vkhip_interop::vulkan::{requirements, Capabilities, Device, Importer};
use vkhip_interop::{Api, Error, FrameStream, FrameValues};

/// Frame f writes f × 1000 + i into element i.
const KERNEL: &str = r#"extern "C" __global__ void count(float* out, unsigned int n, float frame) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = frame * 1000.0f + (float)i; }
}"#;
const N: u32 = 4096;
const FRAMES: u64 = 6;

/// What an engine already has: an instance, a physical device, a device and a queue family.
struct Engine {
    entry: ash::Entry,
    instance: ash::Instance,
    physical: vk::PhysicalDevice,
    family: u32,
    device: Option<ash::Device>,
}

impl Engine {
    /// Create the instance and the device the way an engine does, on the GPU whose deviceUUID is
    /// one of `uuids`, enabling what the crate needs for `importer`.
    fn new(uuids: &[[u8; 16]], importer: Importer) -> Result<Engine, Error> {
        // SAFETY: loads the system's Vulkan loader.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| Error::unavailable(Api::Vulkan, "", format!("no Vulkan loader: {e}")))?;
        let need = requirements(importer);
        let app = vk::ApplicationInfo::default().api_version(need.api_version);
        let exts: Vec<*const c_char> = need.instance_extensions.iter().map(|e| e.as_ptr()).collect();
        let info = vk::InstanceCreateInfo::default().application_info(&app).enabled_extension_names(&exts);
        // SAFETY: valid entry; `info` points at live locals.
        let instance = unsafe { entry.create_instance(&info, None) }
            .map_err(|r| Error::vulkan("vkCreateInstance", r))?;
        let physical = vk::PhysicalDevice::null();
        // From here on, Engine's Drop cleans up whatever was made.
        let mut engine = Engine { entry, instance, physical, family: 0, device: None };
        // SAFETY: live instance.
        for p in unsafe { engine.instance.enumerate_physical_devices() }.unwrap_or_default() {
            // SAFETY: a physical device of the live instance.
            let uuid = unsafe { Capabilities::probe(&engine.instance, p) }?.uuid;
            // SAFETY: as above.
            let families = unsafe { engine.instance.get_physical_device_queue_family_properties(p) };
            let graphics = families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS));
            if let (true, Some(family)) = (uuids.contains(&uuid), graphics) {
                (engine.physical, engine.family) = (p, family as u32);
            }
        }
        if engine.physical == vk::PhysicalDevice::null() {
            return Err(Error::unavailable(Api::Vulkan, "", "no Vulkan device is one of the CUDA devices"));
        }
        let priorities = [1.0f32];
        let queue = vk::DeviceQueueCreateInfo::default().queue_family_index(engine.family);
        let queues = [queue.queue_priorities(&priorities)];
        let exts: Vec<*const c_char> = need.device_extensions.iter().map(|e| e.as_ptr()).collect();
        let mut v12 =
            vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(need.timeline_semaphore);
        let info = vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&exts);
        // SAFETY: a physical device of the live instance; live locals.
        let device =
            unsafe { engine.instance.create_device(engine.physical, &info.push_next(&mut v12), None) };
        engine.device = Some(device.map_err(|r| Error::vulkan("vkCreateDevice", r))?);
        Ok(engine)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: the engine's own objects; the crate's were dropped first (declared after it).
        unsafe {
            if let Some(device) = self.device.take() {
                let _ = device.device_wait_idle();
                device.destroy_device(None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_environment() => {
            eprintln!("bring_your_own_device: no usable CUDA device: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("bring_your_own_device: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<(), Error> {
    let uuids: Vec<[u8; 16]> = cuda::devices()?.iter().map(|d| d.uuid).collect();
    let engine = Engine::new(&uuids, Importer::Cuda)?;
    // SAFETY: the engine's handles, made with `requirements(Importer::Cuda)`, outlive `shared` and all
    // made from it (declared after `engine`); nothing else submits to the queue (one thread here).
    let (e, device) =
        (&engine, engine.device.as_ref().ok_or_else(|| Error::invalid(Api::Vulkan, "no device"))?);
    let shared =
        unsafe { Device::from_raw(&e.entry, &e.instance, e.physical, device, e.family, Importer::Cuda) }?;
    let cuda = Cuda::open(shared.uuid())?;
    println!("vulkan (the engine's): {}\ncuda: {}", shared.describe(), cuda.describe());
    let buffer = shared.shared_buffer(u64::from(N) * 4)?;
    let (written, read) = (shared.shared_timeline(0)?, shared.shared_timeline(0)?);
    let imported = cuda.import_buffer(buffer.export()?)?;
    let (cuda_written, cuda_read) =
        (cuda.import_timeline(written.export()?)?, cuda.import_timeline(read.export()?)?);
    let kernel = cuda.compile(KERNEL, "count")?;
    let values = FrameValues { slots: 1 };
    for f in 0..FRAMES {
        let wait = values.wait_before_write(f).map(|v| (&cuda_read, v));
        cuda.frame(wait, Some((&cuda_written, values.signal(f))), |cuda| {
            let (mut out, mut n, mut frame) = (imported.device_ptr(), N, f as f32);
            let mut args = [
                (&mut out as *mut u64).cast::<c_void>(),
                (&mut n as *mut u32).cast(),
                (&mut frame as *mut f32).cast(),
            ];
            // SAFETY: `count(float*, unsigned int, float)`: one pointer per parameter, in order;
            // `out` maps N floats and the kernel writes indices < N.
            unsafe { cuda.launch(&kernel, [N.div_ceil(256), 1, 1], [256, 1, 1], &mut args) }
        })?;
        // The engine's queue reads it once CUDA signalled, then signals `read` for the next write.
        let v = values.signal(f);
        let bytes = shared.read_buffer(&buffer, Some((&written, v)), Some((&read, v)))?;
        let got = bytes.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
        if let Some((i, x)) = got.enumerate().find(|&(i, x)| x != f as f32 * 1000.0 + i as f32) {
            return Err(Error::invalid(Api::Cuda, format!("frame {f}: element {i} is {x}")));
        }
    }
    cuda.synchronize()?;
    println!("bring_your_own_device: OK ({FRAMES} frames on the engine's device)");
    Ok(())
}
