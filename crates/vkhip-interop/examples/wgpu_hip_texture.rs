//! wgpu ⇄ HIP textures in one file: HIP writes one of K shared wgpu textures every frame, wgpu
//! samples it in a render pass into an offscreen target and copies that to the host; every
//! pixel of every frame is checked. ROCm on Linux cannot import Vulkan semaphores: the hand-off
//! is on the host (HIP's stream synchronised before wgpu's submit; wgpu's frame f − K read back
//! before HIP writes frame f).
//!
//!     HIP_PATH=/opt/rocm cargo run -p vkhip-interop --features hip,wgpu,wgpu/wgsl --example wgpu_hip_texture [FRAMES]
//!
//! Exit codes: 0 every pixel checked, 1 a wrong pixel or a failed call, 2 no usable HIP device,
//! with one line on stderr. WGPU_VALIDATION=1: the Khronos layer, its messages logged (RUST_LOG=warn).

use std::collections::VecDeque;
use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::hip::{devices, Hip};
use vkhip_interop::vulkan::Importer;
use vkhip_interop::wgpu_interop::{vulkan_adapter, WgpuDevice};
use vkhip_interop::{FrameStream, ImageFormat};

/// Frame f writes texel (x, y) = (x + f, 3y + f, x ^ y ^ f, 7f), each mod 256.
const KERNEL: &str = r#"
extern "C" __global__ void paint(hipSurfaceObject_t s, unsigned int w, unsigned int h, unsigned int f) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) surf2Dwrite(make_uchar4((x + f) & 255u, (3u * y + f) & 255u, (x ^ y ^ f) & 255u, (7u * f) & 255u), s, x * 4, y);
}
"#;
/// A full-screen triangle; each pixel loads its own texel (unorm8 in and out: exact).
const SHADER: &str = r#"
@group(0) @binding(0) var t: texture_2d<f32>;
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    return vec4<f32>(f32((i << 1u) & 2u) * 2.0 - 1.0, f32(i & 2u) * 2.0 - 1.0, 0.0, 1.0);
}
@fragment fn fs(@builtin(position) p: vec4<f32>) -> @location(0) vec4<f32> { return textureLoad(t, vec2<i32>(p.xy), 0); }
"#;
const WIDTH: u32 = 67;
const HEIGHT: u32 = 45;
/// Textures in flight: HIP writes frame f + 1 while wgpu may still render f and f − 1.
const K: u64 = 3;

fn main() -> ExitCode {
    env_logger::init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("wgpu_hip_texture: no usable HIP device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("wgpu_hip_texture: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let frames: u64 = std::env::args().nth(1).map_or(Ok(24), |a| a.parse())?;
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
    let kernel = hip.compile(KERNEL, "paint")?;
    let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let target_format = wgpu::TextureFormat::Rgba8Unorm;
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: None,
        layout: None,
        vertex: wgpu::VertexState {
            module: &shader,
            entry_point: None,
            compilation_options: Default::default(),
            buffers: &[],
        },
        fragment: Some(wgpu::FragmentState {
            module: &shader,
            entry_point: None,
            compilation_options: Default::default(),
            targets: &[Some(target_format.into())],
        }),
        primitive: Default::default(),
        depth_stencil: None,
        multisample: Default::default(),
        multiview_mask: None,
        cache: None,
    });
    let size = wgpu::Extent3d { width: WIDTH, height: HEIGHT, depth_or_array_layers: 1 };
    let padded = (WIDTH * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    // Per slot: HIP's surface (dropped before the texture), the shared texture (handed to HIP
    // first), its bind group, the render target and the read-back buffer.
    let mut slots = Vec::new();
    for _ in 0..K {
        let texture = gpu.shared_texture(ImageFormat::Rgba8Unorm, WIDTH, HEIGHT)?;
        queue.submit(gpu.release(&[&texture], &[]));
        let surface = hip.import_image(texture.image().export()?)?;
        let view = texture.texture().create_view(&Default::default());
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&view),
            }],
        });
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
        let target = device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: target_format,
            usage,
            view_formats: &[],
        });
        let host = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: u64::from(padded * HEIGHT),
            mapped_at_creation: false,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        });
        slots.push((surface, texture, bind, target, host));
    }
    device.poll(wgpu::PollType::wait_indefinitely())?; // the textures are HIP's before it writes
    let mut pending = VecDeque::new();
    let check = |(f, s, index): (u64, usize, wgpu::SubmissionIndex)| -> Result<(), Box<dyn Error>> {
        device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })?;
        let host: &wgpu::Buffer = &slots[s].4;
        for (y, row) in host.get_mapped_range(..)?.chunks(padded as usize).enumerate() {
            for (x, px) in row[..WIDTH as usize * 4].chunks_exact(4).enumerate() {
                let (x, y) = (x as u64, y as u64);
                let want =
                    [(x + f) % 256, (3 * y + f) % 256, (x ^ y ^ f) % 256, (7 * f) % 256].map(|v| v as u8);
                if px != want {
                    return Err(format!("frame {f}: pixel ({x}, {y}) is {px:?}, expected {want:?}").into());
                }
            }
        }
        host.unmap();
        Ok(())
    };
    for f in 0..frames {
        let s = (f % K) as usize;
        let (surface, texture, bind, target, host) = &slots[s];
        // HIP paints frame f (wgpu's frame f − K from this texture was read back), then the host
        // waits for HIP's stream before wgpu's submit.
        hip.frame(None, None, |hip| {
            let (mut surf, mut w, mut h, mut frame) = (surface.surface(), WIDTH, HEIGHT, f as u32);
            let mut args = [
                &mut surf as *mut u64 as *mut c_void,
                &mut w as *mut u32 as *mut c_void,
                &mut h as *mut u32 as *mut c_void,
                &mut frame as *mut u32 as *mut c_void,
            ];
            // SAFETY: `paint(hipSurfaceObject_t, unsigned, unsigned, unsigned)`: one pointer per
            // parameter to a value of its type; texels x < w, y < h of a surface `surface` keeps.
            unsafe {
                hip.launch(&kernel, [WIDTH.div_ceil(16), HEIGHT.div_ceil(16), 1], [16, 16, 1], &mut args)
            }
        })?;
        hip.synchronize()?;
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let view = target.create_view(&Default::default());
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        ..Default::default()
                    },
                })],
                ..Default::default()
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, bind, &[]);
            pass.draw(0..3, 0..1);
        }
        let layout = wgpu::TexelCopyBufferLayout { bytes_per_row: Some(padded), ..Default::default() };
        let to_host = wgpu::TexelCopyBufferInfo { buffer: host, layout };
        encoder.copy_texture_to_buffer(target.as_image_copy(), to_host, size);
        let [work, release] = gpu.finish_and_release(encoder, &[texture], &[]);
        let index = queue.submit([gpu.acquire(&[texture], &[]), work, release]);
        host.map_async(wgpu::MapMode::Read, .., |r| r.expect("map the read-back buffer"));
        pending.push_back((f, s, index));
        while pending.len() as u64 > K - 1 {
            check(pending.pop_front().expect("a frame"))?;
        }
        if f == 100 || f + 1 == frames {
            let (fds, status) =
                (std::fs::read_dir("/proc/self/fd")?.count(), std::fs::read_to_string("/proc/self/status")?);
            let rss = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap_or("?").trim();
            println!("frame {f}: fds {fds}, rss {rss}");
        }
    }
    pending.into_iter().try_for_each(check)?;
    hip.synchronize()?;
    let pixels = frames * u64::from(WIDTH * HEIGHT);
    println!("wgpu_hip_texture: OK ({frames} frames, K = {K}, {pixels} pixels checked)");
    Ok(())
}
