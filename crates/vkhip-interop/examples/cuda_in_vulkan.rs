//! CUDA kernels launched inside a Vulkan command buffer (NVIDIA's `VK_NVX_binary_import`): no
//! exported memory, no semaphores, no hand-off between two APIs. Our own two kernels run in one
//! submission on Vulkan's queue, ordered by a pipeline barrier like two compute dispatches: `ramp`
//! writes buffer A, `square_add` reads A and writes B. The host checks every value of B.
//!
//!     cargo run -p vkhip-interop --example cuda_in_vulkan
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no device that offers
//! `VK_NVX_binary_import` (or no CUDA driver / NVRTC to compile the kernels), with one line.

use ash::vk;
use std::ffi::c_char;
use std::process::ExitCode;
use vkhip_interop::cuda::{compile_to_image, devices, target_for};
use vkhip_interop::cuda_in_vulkan::{buffer_address, requirements, supported, CuModule, Launch, Params};
use vkhip_interop::vulkan::Capabilities;
use vkhip_interop::{Api, Error};

const KERNELS: &str = r#"
extern "C" __global__ void ramp(float* a, unsigned int n, float frame)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { a[i] = frame + (float)(i % 1024u); }
}
extern "C" __global__ void square_add(float* b, const float* a, unsigned int n, float add)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { b[i] = a[i] * a[i] + add; }
}
"#;
const N: u32 = 1 << 20;
const FRAMES: u32 = 4;

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

/// The instance, device and what the example creates on it; `Drop` destroys them in reverse.
struct Gpu {
    instance: ash::Instance,
    device: Option<ash::Device>,
    physical: vk::PhysicalDevice,
    family: u32,
    buffers: Vec<(vk::Buffer, vk::DeviceMemory)>,
    pool: vk::CommandPool,
    _entry: ash::Entry,
}

fn run() -> Result<(), Error> {
    // SAFETY: loads the system's Vulkan loader.
    let entry = unsafe { ash::Entry::load() }
        .map_err(|e| Error::unavailable(Api::Vulkan, "", format!("no Vulkan loader: {e}")))?;
    let need = requirements();
    let app = vk::ApplicationInfo::default().api_version(need.api_version);
    // SAFETY: valid entry; `app` is alive for the call.
    let instance =
        unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
            .map_err(|r| Error::vulkan("vkCreateInstance", r))?;
    let mut gpu = Gpu {
        instance,
        device: None,
        physical: vk::PhysicalDevice::null(),
        family: 0,
        buffers: Vec::new(),
        pool: vk::CommandPool::null(),
        _entry: entry,
    };

    // 1. A device that offers the extension (the first one; `supported` says why not otherwise).
    let mut refusal = Error::unavailable(Api::Vulkan, "", "no Vulkan device");
    let mut chosen = None;
    // SAFETY: the live instance.
    for p in unsafe { gpu.instance.enumerate_physical_devices() }
        .map_err(|r| Error::vulkan("vkEnumeratePhysicalDevices", r))?
    {
        // SAFETY: a physical device of the live instance.
        match unsafe { supported(&gpu.instance, p) }?.check() {
            Ok(()) => {
                chosen = Some(p);
                break;
            }
            Err(e) => refusal = e,
        }
    }
    let physical = chosen.ok_or(refusal)?;
    gpu.physical = physical;
    // SAFETY: as above.
    let uuid = unsafe { Capabilities::probe(&gpu.instance, physical) }?.uuid;
    // SAFETY: as above.
    let families = unsafe { gpu.instance.get_physical_device_queue_family_properties(physical) };
    gpu.family =
        families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE)).unwrap_or(0) as u32;
    let priorities = [1.0f32];
    let queues =
        [vk::DeviceQueueCreateInfo::default().queue_family_index(gpu.family).queue_priorities(&priorities)];
    let exts: Vec<*const c_char> = need.device_extensions.iter().map(|e| e.as_ptr()).collect();
    let mut v12 =
        vk::PhysicalDeviceVulkan12Features::default().buffer_device_address(need.buffer_device_address);
    let info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&exts)
        .push_next(&mut v12);
    // SAFETY: a physical device of the live instance; `info` points at live locals.
    let device = unsafe { gpu.instance.create_device(physical, &info, None) }
        .map_err(|r| Error::vulkan("vkCreateDevice", r))?;
    let device = gpu.device.insert(device).clone();

    // 2. Compile with NVRTC for the CUDA device that is this Vulkan device (a cubin for its
    //    architecture), and 3. load it into the Vulkan device.
    let cuda_device = devices()?
        .into_iter()
        .find(|d| d.uuid == uuid)
        .ok_or_else(|| Error::unsupported(Api::Cuda, "no CUDA device has the Vulkan device's UUID"))?;
    let image = compile_to_image(KERNELS, "kernels.cu", target_for(&cuda_device)?, &[])?;
    // SAFETY: the device was created with `requirements()` enabled and outlives the module (the
    // module and functions are dropped at the end of `run`, after the last submission finished).
    let module = unsafe { CuModule::load(&gpu.instance, &device, &image) }?;
    let (ramp, square_add) = (module.function("ramp")?, module.function("square_add")?);
    println!(
        "cuda_in_vulkan: {} (sm_{}), kernels loaded into the Vulkan device",
        cuda_device.name,
        cuda_device.arch()
    );

    // Two host-visible buffers with device addresses (the kernels' pointer parameters).
    for _ in 0..2 {
        let b = gpu.buffer(u64::from(N) * 4)?;
        gpu.buffers.push(b);
    }
    let (a, b) = (gpu.buffers[0], gpu.buffers[1]);
    // SAFETY: both buffers were made with SHADER_DEVICE_ADDRESS usage and DEVICE_ADDRESS memory
    // on a device with bufferDeviceAddress enabled.
    let (addr_a, addr_b) = unsafe { (buffer_address(&device, a.0), buffer_address(&device, b.0)) };
    let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(gpu.family);
    // SAFETY: the live device.
    gpu.pool = unsafe { device.create_command_pool(&pool_info, None) }
        .map_err(|r| Error::vulkan("vkCreateCommandPool", r))?;
    // SAFETY: as above; mapped once, unmapped when the memory is freed.
    let mapped = unsafe { device.map_memory(b.1, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
        .map_err(|r| Error::vulkan("vkMapMemory", r))? as *const f32;

    for frame in 0..FRAMES {
        // 4. Record: ramp → barrier (A written before it is read) → square_add → barrier (B
        //    visible to the host), submit, and wait on a fence of Vulkan's own.
        let add = 0.25 * frame as f32;
        let launch = Launch { grid: [N.div_ceil(256), 1, 1], block: [256, 1, 1], shared_memory: 0 };
        let alloc = vk::CommandBufferAllocateInfo::default().command_pool(gpu.pool).command_buffer_count(1);
        // SAFETY: the pool is the live device's; one primary buffer, freed with the pool.
        let cmd = unsafe { device.allocate_command_buffers(&alloc) }
            .map_err(|r| Error::vulkan("vkAllocateCommandBuffers", r))?[0];
        let barrier = |dst_stage, dst_access| {
            let m = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(dst_access);
            // SAFETY: `cmd` is recording (between begin and end below).
            unsafe {
                device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    dst_stage,
                    vk::DependencyFlags::empty(),
                    &[m],
                    &[],
                    &[],
                )
            };
        };
        // SAFETY: a fresh command buffer.
        unsafe { device.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()) }
            .map_err(|r| Error::vulkan("vkBeginCommandBuffer", r))?;
        // SAFETY: `cmd` is recording; the parameters match `ramp(float*, unsigned int, float)`
        // and `square_add(float*, const float*, unsigned int, float)`; both buffers hold N floats
        // and live until the fence below says the work is done.
        unsafe {
            ramp.record_launch(cmd, launch, &Params::new().address(addr_a).u32(N).f32(frame as f32))?;
            barrier(vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_READ);
            square_add.record_launch(
                cmd,
                launch,
                &Params::new().address(addr_b).address(addr_a).u32(N).f32(add),
            )?;
            barrier(vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ);
        }
        // SAFETY: recording began above.
        unsafe { device.end_command_buffer(cmd) }.map_err(|r| Error::vulkan("vkEndCommandBuffer", r))?;
        // SAFETY: the live device; the fence is destroyed after it was waited for.
        let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(|r| Error::vulkan("vkCreateFence", r))?;
        let cmds = [cmd];
        // SAFETY: queue 0 of the family the device was created with; `cmd` is executable.
        let submitted = unsafe {
            let queue = device.get_device_queue(gpu.family, 0);
            device
                .queue_submit(queue, &[vk::SubmitInfo::default().command_buffers(&cmds)], fence)
                .and_then(|()| device.wait_for_fences(&[fence], true, 10_000_000_000))
        };
        // SAFETY: the fence is signalled (or the submission failed and never took it).
        unsafe { device.destroy_fence(fence, None) };
        submitted.map_err(|r| Error::vulkan("vkQueueSubmit / vkWaitForFences", r))?;

        // 5. Check every value against the CPU.
        // SAFETY: N floats, host-coherent, written by work the fence says has finished.
        let got = unsafe { std::slice::from_raw_parts(mapped, N as usize) };
        for (i, &v) in got.iter().enumerate() {
            let x = frame as f32 + (i % 1024) as f32;
            let want = x * x + add;
            if v != want {
                return Err(Error::invalid(
                    Api::Cuda,
                    format!("frame {frame}: element {i} is {v}, expected {want}"),
                ));
            }
        }
        println!("frame {frame}: all {N} values as expected");
    }
    println!("cuda_in_vulkan: OK ({FRAMES} frames, {} values checked, no hand-off)", FRAMES * N);
    Ok(())
}

impl Gpu {
    /// A host-visible, coherent buffer of `bytes` with a device address.
    fn buffer(&self, bytes: u64) -> Result<(vk::Buffer, vk::DeviceMemory), Error> {
        let (d, i) =
            (self.device.as_ref().ok_or_else(|| Error::invalid(Api::Vulkan, "no device"))?, &self.instance);
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
        // SAFETY: the live device; `info` is a local.
        let buffer =
            unsafe { d.create_buffer(&vk::BufferCreateInfo::default().size(bytes).usage(usage), None) }
                .map_err(|r| Error::vulkan("vkCreateBuffer", r))?;
        // SAFETY: the buffer was just created on `d`.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        // SAFETY: the physical device of the live instance that `d` was created on.
        let props = unsafe { i.get_physical_device_memory_properties(self.physical) };
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let ty = (0..props.memory_type_count)
            .find(|&t| {
                req.memory_type_bits & (1 << t) != 0
                    && props.memory_types[t as usize].property_flags.contains(want)
            })
            .ok_or_else(|| Error::unsupported(Api::Vulkan, "no host-visible memory for the buffers"))?;
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(ty)
            .push_next(&mut flags);
        // SAFETY: the live device; `alloc` chains live locals; the memory is bound once.
        let memory = unsafe { d.allocate_memory(&alloc, None) }.map_err(|r| {
            // SAFETY: the buffer is unused.
            unsafe { d.destroy_buffer(buffer, None) };
            Error::vulkan("vkAllocateMemory", r)
        })?;
        // SAFETY: fresh buffer and memory; on failure `Drop` frees neither, so free them here.
        if let Err(r) = unsafe { d.bind_buffer_memory(buffer, memory, 0) } {
            // SAFETY: neither is in use.
            unsafe { (d.destroy_buffer(buffer, None), d.free_memory(memory, None)) };
            return Err(Error::vulkan("vkBindBufferMemory", r));
        }
        Ok((buffer, memory))
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: the example's own objects, destroyed after the device is idle, device last but
        // one, instance last.
        unsafe {
            if let Some(d) = self.device.take() {
                let _ = d.device_wait_idle();
                d.destroy_command_pool(self.pool, None);
                for &(b, m) in &self.buffers {
                    d.destroy_buffer(b, None);
                    d.free_memory(m, None);
                }
                d.destroy_device(None);
            }
            self.instance.destroy_instance(None);
        }
    }
}
