//! vkhip-interop's wgpu + CUDA loop, profiled. CUDA paints one of K shared wgpu textures every
//! frame between a wait and a signal; wgpu samples it in a render pass into an offscreen target
//! and copies that to the host, its submit waiting for CUDA's signal and signalling its own;
//! the host checks every pixel once the frame's submission is done. No host wait on CUDA.
//!
//!     cargo run --release -p vkhip-profile --features wgpu --example wgpu_cuda -- [--frames N] [--size N] [--no-profile] [--cuda-stamps events|kernel] [--trace PATH]
//!
//! The lines that profile it end in `// profile`. wgpu's queue is a track like a Vulkan queue:
//! a scope is placed around the command buffers of a submit (`around`), and `submitted` names
//! the hand-off's wait and signal. `--size N`: N × N textures (default 67 × 45).
//! WGPU_VALIDATION=1: the Khronos layer, its messages logged (RUST_LOG=warn).
//!
//! Exit codes (every example of this crate): 0 the checker found no hazard and every pixel was as
//! expected; 1 the checker found hazards (each printed); 2 no usable CUDA device (one line on
//! stderr); 3 any other failure (a failed call, or a wrong pixel with no hazard found).

use std::collections::VecDeque;
use std::error::Error;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vkhip_interop::cuda::{devices, Cuda};
use vkhip_interop::vulkan::Importer;
use vkhip_interop::wgpu_interop::{vulkan_adapter, WgpuDevice};
use vkhip_interop::{FrameStream, FrameValues, ImageFormat};
use vkhip_profile::{Options, Profiler, Submission};

const NAME: &str = "wgpu_cuda";
/// Frame f writes texel (x, y) = (x + f, 3y + f, x ^ y ^ f, 7f), each mod 256.
const KERNEL: &str = r#"
extern "C" __global__ void paint(cudaSurfaceObject_t s, unsigned int w, unsigned int h, unsigned int f) {
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
/// Textures in flight: CUDA writes frame f + 1 while wgpu still renders f and f − 1.
const K: u64 = 3;

fn main() -> ExitCode {
    env_logger::init();
    match run() {
        Ok(Outcome { hazards: 0, wrong_frames: 0 }) => ExitCode::SUCCESS,
        Ok(Outcome { hazards: 0, wrong_frames }) => {
            eprintln!("{NAME}: {wrong_frames} frame(s) with wrong pixels, and the checker found no hazard");
            ExitCode::from(3)
        }
        Ok(Outcome { .. }) => ExitCode::from(1),
        Err(e) if vkhip_profile::is_environment(e.as_ref()) => {
            eprintln!("{NAME}: no usable CUDA device: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("{NAME}: error: {e}");
            ExitCode::from(3)
        }
    }
}

struct Outcome {
    hazards: u64,
    wrong_frames: u64,
}

fn run() -> Result<Outcome, Box<dyn Error>> {
    let args = Args::parse()?;
    let (width, height) = args.size.map_or((67, 45), |n| (n, n));
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    if std::env::var_os("WGPU_VALIDATION").is_some() {
        desc.flags = wgpu::InstanceFlags::VALIDATION;
    }
    let instance = wgpu::Instance::new(desc);
    let gpu = WgpuDevice::open(&vulkan_adapter(&instance, &uuids)?, &Default::default(), Importer::Cuda)?;
    let cuda = Cuda::open(gpu.vulkan().uuid())?;
    println!("wgpu: {}\ncuda: {}", gpu.vulkan().describe(), cuda.describe());
    let (device, queue) = (gpu.device(), gpu.queue());
    let (written, read) = (gpu.vulkan().shared_timeline(0)?, gpu.vulkan().shared_timeline(0)?);
    let (cuda_written, cuda_read) =
        (cuda.import_timeline(written.export()?)?, cuda.import_timeline(read.export()?)?);
    let kernel = cuda.compile(KERNEL, "paint")?;
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
    let size = wgpu::Extent3d { width, height, depth_or_array_layers: 1 };
    let padded = (width * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    // Per slot: CUDA's surface (dropped before the texture), the shared texture (handed to CUDA
    // first), its bind group, the render target and the read-back buffer.
    let mut slots = Vec::new();
    for _ in 0..K {
        let texture = gpu.shared_texture(ImageFormat::Rgba8Unorm, width, height)?;
        queue.submit(gpu.release(&[&texture], &[]));
        let surface = cuda.import_image(texture.image().export()?)?;
        let view = texture.texture().create_view(&Default::default());
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&view),
            }],
        });
        let target = device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: target_format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let host = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: u64::from(padded * height),
            mapped_at_creation: false,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        });
        slots.push((surface, texture, bind, target, host));
    }
    device.poll(wgpu::PollType::wait_indefinitely())?; // the textures are CUDA's before it writes

    // One clock for wgpu's queue, CUDA and the host; the textures, read-backs and semaphores.
    let prof = Profiler::new(gpu.vulkan(), args.profile.clone())?; // profile
    let (render, stream) = (prof.wgpu_queue("render", &gpu)?, prof.cuda_stream("paint", &cuda)?); // profile
    let host_track = prof.host_thread("main"); // profile
    let p_textures: Vec<_> = (0..K).map(|s| prof.resource(format!("texture[{s}]"))).collect(); // profile
    let p_readbacks: Vec<_> = (0..K).map(|s| prof.resource(format!("readback[{s}]"))).collect(); // profile
    let (p_written, p_read) = (prof.semaphore("written"), prof.semaphore("read")); // profile

    let values = FrameValues { slots: K };
    let mut pending = VecDeque::new();
    let check = |(f, s, index, submission): (u64, usize, wgpu::SubmissionIndex, Submission)| -> Result<bool, Box<dyn Error>> {
        device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })?;
        render.waited(submission); // profile
        let _check = host_track.scope("check").reads(&p_readbacks[s]); // profile
        let host: &wgpu::Buffer = &slots[s].4;
        let mut good = true;
        for (y, row) in host.get_mapped_range(..)?.chunks(padded as usize).enumerate() {
            for (x, px) in row[..width as usize * 4].chunks_exact(4).enumerate() {
                let (x, y) = (x as u64, y as u64);
                let want =
                    [(x + f) % 256, (3 * y + f) % 256, (x ^ y ^ f) % 256, (7 * f) % 256].map(|v| v as u8);
                good &= px == want;
            }
        }
        host.unmap();
        Ok(good)
    };
    let (mut wrong_frames, mut frame_times, start) = (0, Vec::new(), Instant::now());
    for f in 0..args.frames {
        let t0 = Instant::now();
        let s = (f % K) as usize;
        let v = values.signal(f);
        let (surface, texture, bind, target, host) = &slots[s];
        // CUDA: wait until wgpu has read frame f − K from this texture, paint frame f, signal f + 1.
        if let Some(w) = values.wait_before_write(f) {
            cuda.wait(&cuda_read, w)?;
            stream.wait(&p_read, w); // profile
        }
        {
            let _paint = stream.scope("paint")?.writes(&p_textures[s]); // profile
            let (mut surf, mut w, mut h, mut frame) = (surface.surface(), width, height, f as u32);
            let mut args = [
                &mut surf as *mut u64 as *mut c_void,
                &mut w as *mut u32 as *mut c_void,
                &mut h as *mut u32 as *mut c_void,
                &mut frame as *mut u32 as *mut c_void,
            ];
            // SAFETY: `paint(cudaSurfaceObject_t, unsigned, unsigned, unsigned)`: one pointer per
            // parameter to a value of its type; texels x < w, y < h of a surface `surface` keeps.
            unsafe {
                cuda.launch(&kernel, [width.div_ceil(16), height.div_ceil(16), 1], [16, 16, 1], &mut args)
            }?;
        }
        cuda.signal(&cuda_written, v)?;
        stream.signal(&p_written, v); // profile

        // wgpu: the next submit waits for `written` = f + 1 and signals `read` = f + 1.
        gpu.wait_next_submit(&written, v)?;
        gpu.signal_next_submit(&read, v)?;
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
        encoder.copy_texture_to_buffer(
            target.as_image_copy(),
            wgpu::TexelCopyBufferInfo { buffer: host, layout },
            size,
        );
        let [general, release] = gpu.release(&[texture], &[]);
        let draw = render.scope("draw").reads(&p_textures[s]).writes(&p_readbacks[s]); // profile
        let index =
            queue.submit(draw.around([gpu.acquire(&[texture], &[]), encoder.finish(), general, release])); // profile
        let submission = render.submitted(&[(&p_written, v)], &[(&p_read, v)]); // profile
        host.map_async(wgpu::MapMode::Read, .., |r| r.expect("map the read-back buffer"));
        pending.push_back((f, s, index, submission));
        while pending.len() as u64 > K - 1 {
            let frame = pending.pop_front().ok_or("a frame")?;
            wrong_frames += u64::from(!check(frame)?);
        }
        prof.end_frame()?; // profile
        frame_times.push(t0.elapsed());
    }
    for frame in pending {
        wrong_frames += u64::from(!check(frame)?);
    }
    cuda.synchronize()?;
    print_frame_times(&mut frame_times, start.elapsed(), &args.profile, width, height);

    // The trace, and the report with the checker's verdict (each hazard on a line of its own).
    let capture = prof.finish()?; // profile
    capture.write_perfetto(&args.trace)?; // profile
    let report = capture.report(); // profile
    println!("{report}trace: {}", args.trace.display()); // profile
    println!("pixels: {wrong_frames} of {} frames wrong", args.frames);
    Ok(Outcome { hazards: report.check.violation_count, wrong_frames })
}

/// `--frames N` (default 600), `--size N`, `--no-profile`, `--cuda-stamps MODE`, `--trace PATH`.
struct Args {
    frames: u64,
    size: Option<u32>,
    /// The profiler's options: `enabled` (`--no-profile`), `cuda_stamps` (`--cuda-stamps`).
    profile: Options,
    trace: PathBuf,
}

impl Args {
    fn parse() -> Result<Args, Box<dyn Error>> {
        let mut a = Args {
            frames: 600,
            size: None,
            profile: Options::default(),
            trace: format!("{NAME}.trace.json").into(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--frames" => a.frames = value()?.parse()?,
                "--size" => a.size = Some(value()?.parse()?),
                "--trace" => a.trace = value()?.into(),
                "--no-profile" => a.profile.enabled = false,
                "--cuda-stamps" => a.profile.cuda_stamps = value()?.parse()?,
                _ => {
                    return Err(format!(
                        "unknown argument {arg:?} (--frames N, --size N, --no-profile, --cuda-stamps events|kernel, --trace PATH)"
                    )
                    .into())
                }
            }
        }
        Ok(a)
    }
}

/// One line for the cost measurement: the median frame time and the mean.
fn print_frame_times(times: &mut [Duration], total: Duration, profile: &Options, width: u32, height: u32) {
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let mean = total.as_secs_f64() / times.len().max(1) as f64;
    let on = if profile.enabled { format!("on (CUDA {})", profile.cuda_stamps) } else { "off".into() };
    println!(
        "{NAME}: {} frames at {width}x{height}, profiling {on}: frame time median {:.1} µs, mean {:.1} µs",
        times.len(),
        median.as_secs_f64() * 1e6,
        mean * 1e6
    );
}
