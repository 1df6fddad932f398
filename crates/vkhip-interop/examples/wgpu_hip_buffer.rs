//! wgpu ⇄ HIP buffers in one file: every frame a wgpu compute pass writes a shared buffer, HIP
//! reads it and writes a second shared buffer, and wgpu copies that one to the host, where every
//! value is checked. ROCm on Linux cannot import Vulkan semaphores: the host orders the two
//! (wgpu's submit finished before HIP's kernel, HIP's stream synchronised before wgpu's read).
//!
//!     HIP_PATH=/opt/rocm cargo run -p vkhip-interop --features hip,wgpu,wgpu/wgsl --example wgpu_hip_buffer
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no usable HIP device,
//! with one line on stderr. WGPU_VALIDATION=1: the Khronos layer, its messages logged (RUST_LOG=warn).

use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::hip::{devices, Hip};
use vkhip_interop::vulkan::Importer;
use vkhip_interop::wgpu_interop::{vulkan_adapter, WgpuDevice};
use vkhip_interop::FrameStream;

/// wgpu writes a[i] = 3i + frame.
const SHADER: &str = r#"
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<uniform> frame: vec4<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&a)) { a[id.x] = 3u * id.x + frame.x; }
}
"#;
/// HIP writes b[i] = 2 a[i] + 1.
const KERNEL: &str = r#"
extern "C" __global__ void twice(const unsigned int* a, unsigned int* b, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = 2u * a[i] + 1u;
}
"#;
const N: u32 = 1 << 16;
const FRAMES: u64 = 8;

fn main() -> ExitCode {
    env_logger::init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("wgpu_hip_buffer: no usable HIP device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("wgpu_hip_buffer: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    if std::env::var_os("WGPU_VALIDATION").is_some() {
        desc.flags = wgpu::InstanceFlags::VALIDATION;
    }
    let instance = wgpu::Instance::new(desc);
    let gpu = WgpuDevice::open(&vulkan_adapter(&instance, &uuids)?, &Default::default(), Importer::Hip)?;
    let hip = Hip::open(gpu.vulkan().uuid())?;
    println!("wgpu: {}\nhip:  {}", gpu.vulkan().describe(), hip.describe());
    let (device, queue) = (gpu.device(), gpu.queue());
    let (a, b) = (gpu.shared_buffer(u64::from(N) * 4)?, gpu.shared_buffer(u64::from(N) * 4)?);
    let (hip_a, hip_b) = (hip.import_buffer(a.shared().export()?)?, hip.import_buffer(b.shared().export()?)?);
    let kernel = hip.compile(KERNEL, "twice")?;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: None,
        compilation_options: Default::default(),
        cache: None,
    });
    let buffer = |size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: false })
    };
    let frame = buffer(16, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
    let host = buffer(u64::from(N) * 4, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: a.buffer().as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: frame.as_entire_binding() },
        ],
    });
    for f in 0..FRAMES {
        // wgpu: take `a` back from HIP, write it, hand it over.
        queue.write_buffer(&frame, 0, &[f as u32, 0, 0, 0].map(u32::to_ne_bytes).concat());
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(N.div_ceil(64), 1, 1);
        }
        let [work, release] = gpu.finish_and_release(encoder, &[], &[&a]);
        queue.submit([gpu.acquire(&[], &[&a]), work, release]);
        // HIP, once wgpu is done with `a`: b = 2a + 1, then the host waits for HIP's stream.
        device.poll(wgpu::PollType::wait_indefinitely())?;
        hip.frame(None, None, |hip| {
            let (mut pa, mut pb, mut n) = (hip_a.device_ptr(), hip_b.device_ptr(), N);
            let mut args = [
                &mut pa as *mut u64 as *mut c_void,
                &mut pb as *mut u64 as *mut c_void,
                &mut n as *mut u32 as *mut c_void,
            ];
            // SAFETY: `twice(const unsigned*, unsigned*, unsigned)`: one pointer per parameter to
            // a value of its type; both buffers map N values and outlive the stream's work.
            unsafe { hip.launch(&kernel, [N.div_ceil(256), 1, 1], [256, 1, 1], &mut args) }
        })?;
        hip.synchronize()?;
        // wgpu: take `b`, copy it to the host, hand it back.
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(b.buffer(), 0, &host, 0, None);
        let [work, release] = gpu.finish_and_release(encoder, &[], &[&b]);
        queue.submit([gpu.acquire(&[], &[&b]), work, release]);
        host.map_async(wgpu::MapMode::Read, .., |r| r.expect("map the read-back buffer"));
        device.poll(wgpu::PollType::wait_indefinitely())?;
        for (i, v) in host.get_mapped_range(..)?.chunks_exact(4).enumerate() {
            let (got, want) =
                (u32::from_ne_bytes([v[0], v[1], v[2], v[3]]), 2 * (3 * i as u32 + f as u32) + 1);
            if got != want {
                return Err(format!("frame {f}: b[{i}] is {got}, expected {want}").into());
            }
        }
        host.unmap();
        println!("frame {f}: all {N} values as expected");
    }
    hip.synchronize()?;
    println!("wgpu_hip_buffer: OK ({FRAMES} frames, {} values checked)", FRAMES * u64::from(N));
    Ok(())
}
