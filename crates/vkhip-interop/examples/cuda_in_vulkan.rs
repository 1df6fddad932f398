//! CUDA kernels launched inside a Vulkan command buffer (NVIDIA's `VK_NVX_binary_import`): no
//! exported memory, no semaphores, no hand-off between two APIs. Our two kernels run in one
//! submission on Vulkan's queue, ordered by a pipeline barrier like two compute dispatches: `ramp`
//! writes the buffer's first half, `square_add` reads it and writes the second. The host checks
//! every value. Headless.
//!
//!     cargo run -p vkhip-interop --example cuda_in_vulkan
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no device that offers
//! `VK_NVX_binary_import` (or no CUDA driver / NVRTC to compile the kernels), with one line.

use ash::vk;
use std::process::ExitCode;
use vkhip_interop::cuda::{compile_to_image, devices, target_for};
use vkhip_interop::cuda_in_vulkan::{buffer_address, requirements, supported, CuModule, Launch, Params};
use vkhip_interop::vulkan::Capabilities;
use vkhip_interop::{Api, Error};

const KERNEL: &str = r#"
extern "C" __global__ void ramp(float* a, unsigned int n, float frame) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { a[i] = frame + (float)(i % 1024u); }
}
extern "C" __global__ void square_add(float* b, const float* a, unsigned int n, float add) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { b[i] = a[i] * a[i] + add; }
}"#;
const N: u32 = 1 << 20;
const FRAMES: u32 = 4;
fn vkerr(call: &'static str) -> impl Fn(vk::Result) -> Error {
    move |r| Error::vulkan(call, r)
}

/// What the example creates, destroyed in reverse by `Drop` (the module is dropped before this).
struct Gpu {
    instance: ash::Instance,
    device: Option<ash::Device>,
    objects: (vk::Buffer, vk::DeviceMemory, vk::CommandPool),
    _entry: ash::Entry,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_environment() => {
            eprintln!("cuda_in_vulkan: no usable CUDA device: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("cuda_in_vulkan: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<(), Error> {
    // SAFETY: loads the system's Vulkan loader.
    let entry =
        unsafe { ash::Entry::load() }.map_err(|e| Error::unavailable(Api::Vulkan, "", e.to_string()))?;
    let (need, null) = (requirements(), Default::default());
    let app = vk::ApplicationInfo::default().api_version(need.api_version);
    // SAFETY: valid entry; `app` lives through the call.
    let instance =
        unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
            .map_err(vkerr("vkCreateInstance"))?;
    let mut gpu = Gpu { instance, device: None, objects: null, _entry: entry };
    // 1. A device that offers the extension, with its compute family; else the last refusal says why.
    let mut chosen = Err(Error::unavailable(Api::Vulkan, "", "no Vulkan device"));
    // SAFETY: the live instance, and physical devices enumerated from it.
    for p in
        unsafe { gpu.instance.enumerate_physical_devices() }.map_err(vkerr("vkEnumeratePhysicalDevices"))?
    {
        // SAFETY: as above.
        chosen = unsafe { supported(&gpu.instance, p) }?.check().map(|family| (p, family));
        if chosen.is_ok() {
            break;
        }
    }
    let (physical, family) = chosen?;
    // SAFETY: a physical device of the live instance.
    let uuid = unsafe { Capabilities::probe(&gpu.instance, physical) }?.uuid;
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&[1.0])];
    let exts: Vec<_> = need.device_extensions.iter().map(|e| e.as_ptr()).collect();
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default().buffer_device_address(true);
    let info = vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&exts);
    // SAFETY: as above; `info` points at live locals.
    let device = unsafe { gpu.instance.create_device(physical, &info.push_next(&mut v12), None) }
        .map_err(vkerr("vkCreateDevice"))?;
    let device = gpu.device.insert(device).clone();

    // 2. Compile with NVRTC for the CUDA device that is this Vulkan device; 3. load into Vulkan.
    let cuda = devices()?.into_iter().find(|d| d.uuid == uuid);
    let cuda = cuda.ok_or_else(|| Error::unsupported(Api::Cuda, "no CUDA device is this Vulkan device"))?;
    let image = compile_to_image(KERNEL, "kernels.cu", target_for(&cuda)?, &[])?;
    // SAFETY: the device has `requirements()` enabled and outlives the module (dropped first).
    let module = unsafe { CuModule::load(&gpu.instance, &device, &image) }?;
    let (ramp, square_add) = (module.function("ramp")?, module.function("square_add")?);

    // One host-visible buffer of 2N floats with a device address: A is its first half, B the second.
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
    // SAFETY: the live device; every object made here is destroyed by `Gpu`'s Drop.
    let (a, mapped, cmd) = unsafe {
        gpu.objects.0 = device
            .create_buffer(&vk::BufferCreateInfo::default().size(8 * u64::from(N)).usage(usage), None)
            .map_err(vkerr("vkCreateBuffer"))?;
        let req = device.get_buffer_memory_requirements(gpu.objects.0);
        let props = gpu.instance.get_physical_device_memory_properties(physical);
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let ty = (0..props.memory_type_count)
            .find(|&t| {
                req.memory_type_bits & (1 << t) != 0
                    && props.memory_types[t as usize].property_flags.contains(host)
            })
            .ok_or_else(|| Error::unsupported(Api::Vulkan, "no host-visible memory"))?;
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
        gpu.objects.1 =
            device.allocate_memory(&alloc.push_next(&mut flags), None).map_err(vkerr("vkAllocateMemory"))?;
        device.bind_buffer_memory(gpu.objects.0, gpu.objects.1, 0).map_err(vkerr("vkBindBufferMemory"))?;
        let mapped = device.map_memory(gpu.objects.1, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty());
        // Each frame begins `cmd` again, which resets it: its pool must allow that.
        let reset = vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER;
        let pool = vk::CommandPoolCreateInfo::default().queue_family_index(family).flags(reset);
        gpu.objects.2 = device.create_command_pool(&pool, None).map_err(vkerr("vkCreateCommandPool"))?;
        let alloc =
            vk::CommandBufferAllocateInfo::default().command_pool(gpu.objects.2).command_buffer_count(1);
        let cmd = device.allocate_command_buffers(&alloc).map_err(vkerr("vkAllocateCommandBuffers"))?[0];
        (buffer_address(&device, gpu.objects.0), mapped.map_err(vkerr("vkMapMemory"))? as *const f32, cmd)
    };
    let b = a + 4 * u64::from(N);
    let launch = Launch { grid: [N.div_ceil(256), 1, 1], block: [256, 1, 1], shared_memory: 0 };
    let barrier = |dst_stage, dst_access| {
        let m = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(dst_access);
        // SAFETY: `cmd` is recording when this is called (below).
        unsafe {
            device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                dst_stage,
                Default::default(),
                &[m],
                &[],
                &[],
            )
        };
    };
    for frame in 0..FRAMES {
        // 4. Record: ramp → barrier (A written before it is read) → square_add → barrier (B
        //    visible to the host); submit; wait for the queue (Vulkan's own, nothing foreign).
        let add = 0.25 * frame as f32;
        // SAFETY: `cmd` is not pending (the queue was idle after the last frame); the parameters
        // match `ramp(float*, unsigned int, float)` and `square_add(float*, const float*,
        // unsigned int, float)`; both halves hold N floats and outlive the work.
        unsafe {
            device.begin_command_buffer(cmd, &Default::default()).map_err(vkerr("vkBeginCommandBuffer"))?;
            ramp.record_launch(cmd, launch, &Params::new().address(a).u32(N).f32(frame as f32))?;
            barrier(vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_READ);
            square_add.record_launch(cmd, launch, &Params::new().address(b).address(a).u32(N).f32(add))?;
            barrier(vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ);
            device.end_command_buffer(cmd).map_err(vkerr("vkEndCommandBuffer"))?;
            let queue = device.get_device_queue(family, 0);
            let submit = vk::SubmitInfo::default().command_buffers(std::slice::from_ref(&cmd));
            device.queue_submit(queue, &[submit], vk::Fence::null()).map_err(vkerr("vkQueueSubmit"))?;
            device.queue_wait_idle(queue).map_err(vkerr("vkQueueWaitIdle"))?;
        }
        // 5. Check every value of B against the CPU.
        // SAFETY: 2N host-coherent floats, written by work the queue has finished.
        let got = unsafe { std::slice::from_raw_parts(mapped.add(N as usize), N as usize) };
        let x = |i: usize| frame as f32 + (i % 1024) as f32;
        let want = |i: usize| x(i) * x(i) + add;
        if let Some((i, v)) = got.iter().enumerate().find(|&(i, &v)| v != want(i)) {
            return Err(Error::invalid(
                Api::Cuda,
                format!("frame {frame}: B[{i}] is {v}, expected {}", want(i)),
            ));
        }
        println!("frame {frame}: all {N} values of B as expected");
    }
    println!("cuda_in_vulkan: OK ({FRAMES} frames, {} values checked, no hand-off)", FRAMES * N);
    Ok(())
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: the example's own objects, after the device is idle (null handles are ignored).
        unsafe {
            if let Some(d) = self.device.take() {
                let _ = d.device_wait_idle();
                d.destroy_command_pool(self.objects.2, None);
                d.destroy_buffer(self.objects.0, None);
                d.free_memory(self.objects.1, None);
                d.destroy_device(None);
            }
            self.instance.destroy_instance(None);
        }
    }
}
