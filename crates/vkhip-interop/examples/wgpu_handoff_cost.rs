//! What the crate's wgpu hand-off costs per frame, against its plain-ash path, on one grid: the
//! same loop five ways, interleaved round by round. In the hand-off loops CUDA paints one of K
//! shared RGBA8 images (the kernel of `wgpu_cuda_texture`) and signals; Vulkan waits for it,
//! copies the image into a device-local buffer (rows padded to 256 bytes) and signals back:
//! - `wgpu`: a shared `wgpu::Texture`, `wait/signal_next_submit`, `acquire`, the copy, `release`;
//! - `ash`: the same image through `vulkan::Device` and a command buffer recorded every frame
//!   (`SharedImage::cmd_acquire`, the copy, `cmd_release`), one `vkQueueSubmit`;
//! - without a hand-off: `cuda-only` (the kernel alone), `ash-only` and `wgpu-only` (the copy
//!   alone, from an image Vulkan owns throughout: a cleared one, a plain `wgpu::Texture`).
//!
//! Each loop waits on the host for frame f + 1 − K after submitting frame f, as a renderer with K
//! frames in flight does; a frame's time is the host time between two such waits. No host
//! read-back in the loop: after each run the last frame of every slot is checked on the host.
//!
//!     cargo run --release -p vkhip-interop --features wgpu --example wgpu_handoff_cost -- \
//!         [--grid WxH] [--k K] [--frames N] [--warmup N] [--rounds R]
//!
//! Exit codes: 0 every check passed, 1 a wrong texel, a failed call or a bad argument (one line),
//! 2 no usable CUDA device, with one line on stderr.

use ash::vk;
use std::collections::VecDeque;
use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vkhip_interop::cuda::{devices, Cuda, CudaImage, CudaKernel};
use vkhip_interop::vulkan::{Device, ImageAccess, Importer, SharedBuffer, SharedImage};
use vkhip_interop::wgpu_interop::{vulkan_adapter, WgpuDevice, WgpuTexture};
use vkhip_interop::{FrameStream, FrameValues, ImageFormat};

type Res<T> = Result<T, Box<dyn Error>>;

/// Frame f writes texel (x, y) = (x + f, 3y + f, x ^ y ^ f, 7f), each mod 256.
const KERNEL: &str = r#"
extern "C" __global__ void paint(cudaSurfaceObject_t s, unsigned int w, unsigned int h, unsigned int f) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) surf2Dwrite(make_uchar4((x + f) & 255u, (3u * y + f) & 255u, (x ^ y ^ f) & 255u, (7u * f) & 255u), s, x * 4, y);
}
"#;
const USAGE: &str =
    "usage: wgpu_handoff_cost [--grid WxH] [--k 1..8] [--frames N>=10] [--warmup N] [--rounds 1..100]";
/// The colour of the images the `-only` copies read (0.2, 0.4, 0.6, 0.8 in unorm8).
const CLEARED: [u8; 4] = [51, 102, 153, 204];
const WAIT: Duration = Duration::from_secs(30);
const CONFIGS: [&str; 5] = ["ash", "wgpu", "cuda-only", "ash-only", "wgpu-only"];

struct Args {
    grid: (u32, u32),
    k: u64,
    frames: u64,
    warmup: u64,
    rounds: u64,
}

fn main() -> ExitCode {
    env_logger::init();
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("wgpu_handoff_cost: error: {e}; {USAGE}");
            return ExitCode::from(1);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("wgpu_handoff_cost: no usable CUDA device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("wgpu_handoff_cost: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args { grid: (1024, 1024), k: 3, frames: 2000, warmup: 200, rounds: 5 };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |lo: u64, hi: u64| match value.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(format!("{flag} {value:?}: expected a whole number in {lo}..={hi}")),
        };
        match flag.as_str() {
            "--k" => a.k = number(1, 8)?,
            "--frames" => a.frames = number(10, 10_000_000)?,
            "--warmup" => a.warmup = number(0, 10_000_000)?,
            "--rounds" => a.rounds = number(1, 100)?,
            "--grid" => {
                let size = |s: &str| s.parse::<u32>().ok().filter(|n| (1..=16384).contains(n));
                a.grid = match value.split_once('x').map(|(w, h)| (size(w), size(h))) {
                    Some((Some(w), Some(h))) => (w, h),
                    _ => return Err(format!("--grid {value:?}: expected WxH, each in 1..=16384")),
                };
            }
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    Ok(a)
}

/// CUDA's frame f into `surface`.
fn paint(
    cuda: &Cuda,
    kernel: &CudaKernel,
    surface: &CudaImage,
    (w, h): (u32, u32),
    f: u64,
) -> vkhip_interop::Result<()> {
    let (mut surf, mut w, mut h, mut frame) = (surface.surface(), w, h, f as u32);
    let mut args = [
        &mut surf as *mut u64 as *mut c_void,
        &mut w as *mut u32 as *mut c_void,
        &mut h as *mut u32 as *mut c_void,
        &mut frame as *mut u32 as *mut c_void,
    ];
    // SAFETY: `paint(cudaSurfaceObject_t, unsigned, unsigned, unsigned)`: one pointer per
    // parameter to a live value of its type; texels x < w, y < h of a surface `surface` keeps.
    unsafe { cuda.launch(kernel, [w.div_ceil(16), h.div_ceil(16), 1], [16, 16, 1], &mut args) }
}

/// Every texel of `bytes` (rows `pitch` bytes apart) is `want(x, y)`.
fn check(
    what: &str,
    bytes: &[u8],
    pitch: usize,
    (w, h): (u32, u32),
    want: impl Fn(u64, u64) -> [u8; 4],
) -> Res<()> {
    for (y, row) in bytes.chunks(pitch).take(h as usize).enumerate() {
        for (x, px) in row[..w as usize * 4].chunks_exact(4).enumerate() {
            let want = want(x as u64, y as u64);
            if px != want {
                return Err(format!("{what}: texel ({x}, {y}) is {px:?}, expected {want:?}").into());
            }
        }
    }
    Ok(())
}

fn painted(f: u64) -> impl Fn(u64, u64) -> [u8; 4] {
    move |x, y| [x + f, 3 * y + f, x ^ y ^ f, 7 * f].map(|v| (v % 256) as u8)
}

/// The per-frame times (µs) of `frames` frames after `warmup`: `step(f)` submits frame f and
/// waits for frame f + 1 − K.
fn timed(a: &Args, mut step: impl FnMut(u64) -> Res<()>) -> Res<Vec<f64>> {
    let mut times = Vec::with_capacity(a.frames as usize);
    let mut last = Instant::now();
    for f in 0..a.warmup + a.frames {
        step(f)?;
        let now = Instant::now();
        if f >= a.warmup {
            times.push((now - last).as_secs_f64() * 1e6);
        }
        last = now;
    }
    Ok(times)
}

/// The command pool of the ash loops, and one command buffer per slot.
struct Pool(ash::Device, vk::CommandPool, Vec<vk::CommandBuffer>);

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: the pool is ours; the device is idle (every run waits for its last frame).
        unsafe {
            let _ = self.0.device_wait_idle();
            self.0.destroy_command_pool(self.1, None);
        }
    }
}

fn vkerr(call: &'static str) -> impl Fn(vk::Result) -> vkhip_interop::Error {
    move |r| vkhip_interop::Error::vulkan(call, r)
}

/// The `p`-quantile of sorted `v` (nearest rank).
fn quantile(v: &[f64], p: f64) -> f64 {
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

fn run(a: &Args) -> Res<()> {
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    if std::env::var_os("WGPU_VALIDATION").is_some() {
        desc.flags = wgpu::InstanceFlags::VALIDATION;
    }
    let instance = wgpu::Instance::new(desc);
    let gpu = WgpuDevice::open(&vulkan_adapter(&instance, &uuids)?, &Default::default(), Importer::Cuda)?;
    let vk = Device::open(&uuids, Importer::Cuda)?;
    let cuda = Cuda::open(vk.uuid())?;
    if gpu.vulkan().uuid() != vk.uuid() {
        return Err("wgpu and the crate's device opened different GPUs".into());
    }
    println!("wgpu: {}\nash:  {}\ncuda: {}", gpu.vulkan().describe(), vk.describe(), cuda.describe());
    let kernel = cuda.compile(KERNEL, "paint")?;
    let ((w, h), k) = (a.grid, a.k);
    let pitch = (w * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let bytes = u64::from(pitch) * u64::from(h);
    let (transfer, read_access) = (vk::PipelineStageFlags::TRANSFER, ImageAccess::TRANSFER_READ);
    let last = a.warmup + a.frames - 1;
    // The last frame that used slot s (frames >= 10 > K: every slot was used).
    let last_of = |s: usize| last - (last - s as u64) % k;

    // ash: per slot an image (CUDA's, prepared), its surface, a destination buffer (at rest
    // released to the compute API, as `read_buffer` leaves it); a command buffer per slot.
    let mut ash_slots: Vec<(CudaImage, SharedImage, SharedBuffer)> = Vec::new();
    for _ in 0..k {
        let (image, dst) = (vk.shared_image(ImageFormat::Rgba8Unorm, w, h)?, vk.shared_buffer(bytes)?);
        // SAFETY: a one-shot command buffer of `vk`, recording; the image and buffer are new.
        vk.submit_one_shot(&[], &[], |cmd| unsafe {
            image.cmd_prepare(cmd);
            dst.cmd_release(cmd, (transfer, vk::AccessFlags::empty()));
        })?;
        ash_slots.push((cuda.import_image(image.export()?)?, image, dst));
    }
    let d = vk.ash();
    let info = vk::CommandPoolCreateInfo::default()
        .queue_family_index(vk.queue_family())
        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
    // SAFETY: the live device; `Pool` destroys the pool before the device goes.
    let pool = unsafe { d.create_command_pool(&info, None) }.map_err(vkerr("vkCreateCommandPool"))?;
    let mut pool = Pool(d.clone(), pool, vec![]);
    let alloc = vk::CommandBufferAllocateInfo::default().command_pool(pool.1).command_buffer_count(k as u32);
    // SAFETY: the pool above.
    pool.2 = unsafe { d.allocate_command_buffers(&alloc) }.map_err(vkerr("vkAllocateCommandBuffers"))?;
    // SAFETY: queue 0 of the device's family exists (the crate's device made it).
    let queue = unsafe { d.get_device_queue(vk.queue_family(), 0) };
    let region = vk::BufferImageCopy::default()
        .buffer_row_length(pitch / 4)
        .image_subresource(
            vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1),
        )
        .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });

    // wgpu: per slot CUDA's surface, the shared texture (CUDA's), a plain texture of CLEARED
    // texels (the `-only` source) and the destination buffer; one read-back buffer for the checks.
    let (device, wq) = (gpu.device(), gpu.queue());
    let size = wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 };
    let mut wgpu_slots: Vec<(CudaImage, WgpuTexture, wgpu::Texture, wgpu::Buffer)> = Vec::new();
    let buffer = |usage, size| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: false })
    };
    for _ in 0..k {
        let texture = gpu.shared_texture(ImageFormat::Rgba8Unorm, w, h)?;
        wq.submit(gpu.release(&[&texture], &[]));
        let plain = device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let tight = wgpu::TexelCopyBufferLayout { bytes_per_row: Some(w * 4), ..Default::default() };
        wq.write_texture(plain.as_image_copy(), &CLEARED.repeat((w * h) as usize), tight, size);
        let dst = buffer(wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST, bytes);
        wgpu_slots.push((cuda.import_image(texture.image().export()?)?, texture, plain, dst));
    }
    let readback = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, bytes);
    device.poll(wgpu::PollType::wait_indefinitely())?; // the textures are CUDA's before it writes
    let values = FrameValues { slots: k };

    let ash_loop = |handoff: bool| -> Res<Vec<f64>> {
        let (written, read) = (vk.shared_timeline(0)?, vk.shared_timeline(0)?);
        let (cw, cr) = (cuda.import_timeline(written.export()?)?, cuda.import_timeline(read.export()?)?);
        let clear = vk::ClearColorValue { float32: [0.2, 0.4, 0.6, 0.8] };
        let range = vk::ImageSubresourceRange::default()
            .aspect_mask(vk::ImageAspectFlags::COLOR)
            .level_count(1)
            .layer_count(1);
        let dst_write = (transfer, vk::AccessFlags::TRANSFER_WRITE);
        // Take the buffers (and, for `ash-only`, the images: cleared, then copy sources) from CUDA.
        vk.submit_one_shot(&[], &[], |cmd| {
            for (_, image, dst) in &ash_slots {
                // SAFETY: a one-shot command buffer of `vk`, recording; CUDA owns both (at rest).
                unsafe {
                    dst.cmd_acquire(cmd, dst_write);
                    if !handoff {
                        image.cmd_acquire(cmd, ImageAccess::TRANSFER_WRITE);
                        d.cmd_clear_color_image(
                            cmd,
                            image.image(),
                            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                            &clear,
                            &[range],
                        );
                        image.cmd_transition(cmd, ImageAccess::TRANSFER_WRITE, read_access);
                    }
                }
            }
        })?;
        let times = timed(a, |f| {
            let s = (f % k) as usize;
            let (surface, image, dst) = &ash_slots[s];
            if handoff {
                let wait = values.wait_before_write(f).map(|v| (&cr, v));
                cuda.frame(wait, Some((&cw, values.signal(f))), |c| paint(c, &kernel, surface, a.grid, f))?;
            }
            let cmd = pool.2[s];
            let waw = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
            // SAFETY: the slot's command buffer, not pending (frame f − K finished: the wait below);
            // with a hand-off CUDA owns the image until the acquire; without, Vulkan owns it in
            // TRANSFER_SRC_OPTIMAL; the buffer is Vulkan's and large enough for `region`.
            unsafe {
                d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                    .map_err(vkerr("vkBeginCommandBuffer"))?;
                if handoff {
                    image.cmd_acquire(cmd, read_access);
                } else {
                    d.cmd_pipeline_barrier(
                        cmd,
                        transfer,
                        transfer,
                        vk::DependencyFlags::empty(),
                        &[waw],
                        &[],
                        &[],
                    );
                }
                d.cmd_copy_image_to_buffer(cmd, image.image(), read_access.layout(), dst.buffer(), &[region]);
                if handoff {
                    image.cmd_release(cmd, read_access);
                }
                d.end_command_buffer(cmd).map_err(vkerr("vkEndCommandBuffer"))?;
            }
            let n = usize::from(handoff);
            let (wait, wait_value, stage) =
                ([written.handle()], [values.signal(f)], [vk::PipelineStageFlags::ALL_COMMANDS]);
            let (signal, signal_value) = ([read.handle()], [values.signal(f)]);
            let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
                .wait_semaphore_values(&wait_value[..n])
                .signal_semaphore_values(&signal_value);
            let submit = vk::SubmitInfo::default()
                .wait_semaphores(&wait[..n])
                .wait_dst_stage_mask(&stage[..n])
                .command_buffers(std::slice::from_ref(&cmd))
                .signal_semaphores(&signal)
                .push_next(&mut tl);
            // SAFETY: the device's queue, used by this thread only; the handles above are live.
            unsafe { d.queue_submit(queue, &[submit], vk::Fence::null()) }.map_err(vkerr("vkQueueSubmit"))?;
            // `read` is Vulkan's own value: a blocking wait, as wgpu's `poll` is (issue 34).
            if f + 1 >= k {
                read.wait_blocking(values.signal(f + 1 - k), WAIT)?;
            }
            Ok(())
        })?;
        read.wait_blocking(values.signal(last), WAIT)?;
        cuda.synchronize()?;
        // Back to CUDA (at rest), then each buffer to the host once.
        vk.submit_one_shot(&[], &[], |cmd| {
            for (_, image, dst) in &ash_slots {
                // SAFETY: a one-shot command buffer of `vk`, recording; Vulkan owns the buffer,
                // and the image too without a hand-off (last accessed by the copies).
                unsafe {
                    dst.cmd_release(cmd, dst_write);
                    if !handoff {
                        image.cmd_release(cmd, read_access);
                    }
                }
            }
        })?;
        for (s, (_, _, dst)) in ash_slots.iter().enumerate() {
            let got = vk.read_buffer(dst, None, None)?;
            let name = if handoff { "ash" } else { "ash-only" };
            let what = format!("{name}, slot {s}, frame {}", last_of(s));
            if handoff {
                check(&what, &got, pitch as usize, a.grid, painted(last_of(s)))?;
            } else {
                check(&what, &got, pitch as usize, a.grid, |_, _| CLEARED)?;
            }
        }
        Ok(times)
    };

    let cuda_only = || -> Res<Vec<f64>> {
        let written = vk.shared_timeline(0)?;
        let cw = cuda.import_timeline(written.export()?)?;
        let times = timed(a, |f| {
            let surface = &ash_slots[(f % k) as usize].0;
            cuda.frame(None, Some((&cw, values.signal(f))), |c| paint(c, &kernel, surface, a.grid, f))?;
            if f + 1 >= k {
                written.wait(values.signal(f + 1 - k), WAIT)?;
            }
            Ok(())
        })?;
        cuda.synchronize()?;
        for (s, (_, image, _)) in ash_slots.iter().enumerate() {
            let what = format!("cuda-only, slot {s}, frame {}", last_of(s));
            check(&what, &vk.read_image(image, None, None)?, w as usize * 4, a.grid, painted(last_of(s)))?;
        }
        Ok(times)
    };

    let wgpu_loop = |handoff: bool| -> Res<Vec<f64>> {
        let (written, read) = (gpu.vulkan().shared_timeline(0)?, gpu.vulkan().shared_timeline(0)?);
        let (cw, cr) = (cuda.import_timeline(written.export()?)?, cuda.import_timeline(read.export()?)?);
        let layout = wgpu::TexelCopyBufferLayout { bytes_per_row: Some(pitch), ..Default::default() };
        let mut pending = VecDeque::new();
        let wait = |index| {
            device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None }).map(drop)
        };
        let times = timed(a, |f| {
            let (surface, texture, plain, dst) = &wgpu_slots[(f % k) as usize];
            if handoff {
                let wait = values.wait_before_write(f).map(|v| (&cr, v));
                cuda.frame(wait, Some((&cw, values.signal(f))), |c| paint(c, &kernel, surface, a.grid, f))?;
                gpu.wait_next_submit(&written, values.signal(f))?;
                gpu.signal_next_submit(&read, values.signal(f))?;
            }
            let mut encoder = device.create_command_encoder(&Default::default());
            let source = if handoff { texture.texture() } else { plain };
            encoder.copy_texture_to_buffer(
                source.as_image_copy(),
                wgpu::TexelCopyBufferInfo { buffer: dst, layout },
                size,
            );
            pending.push_back(if handoff {
                let [general, release] = gpu.release(&[texture], &[]);
                wq.submit([gpu.acquire(&[texture], &[]), encoder.finish(), general, release])
            } else {
                wq.submit([encoder.finish()])
            });
            while pending.len() as u64 > k - 1 {
                wait(pending.pop_front().expect("a frame"))?;
            }
            Ok(())
        })?;
        pending.into_iter().try_for_each(wait)?;
        cuda.synchronize()?;
        for (s, (_, _, _, dst)) in wgpu_slots.iter().enumerate() {
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(dst, 0, &readback, 0, bytes);
            wait(wq.submit([encoder.finish()]))?;
            readback.map_async(wgpu::MapMode::Read, .., |r| r.expect("map the read-back buffer"));
            device.poll(wgpu::PollType::wait_indefinitely())?;
            let name = if handoff { "wgpu" } else { "wgpu-only" };
            let what = format!("{name}, slot {s}, frame {}", last_of(s));
            let got = readback.get_mapped_range(..)?.to_vec();
            readback.unmap();
            if handoff {
                check(&what, &got, pitch as usize, a.grid, painted(last_of(s)))?;
            } else {
                check(&what, &got, pitch as usize, a.grid, |_, _| CLEARED)?;
            }
        }
        Ok(times)
    };

    // Rounds of all five, the two hand-offs alternating which goes first.
    let mut results: Vec<Vec<Vec<f64>>> = vec![Vec::new(); CONFIGS.len()];
    for r in 0..a.rounds {
        let order = if r % 2 == 0 { [0, 1, 2, 3, 4] } else { [1, 0, 2, 4, 3] };
        for c in order {
            let times = match c {
                0 => ash_loop(true),
                1 => wgpu_loop(true),
                2 => cuda_only(),
                3 => ash_loop(false),
                _ => wgpu_loop(false),
            }?;
            results[c].push(times);
        }
    }
    println!(
        "grid {w}x{h} RGBA8, K = {k}: {} rounds x {} frames (after {} warm-up) of each, interleaved; us per frame",
        a.rounds, a.frames, a.warmup
    );
    println!("{:<10} {:>9} {:>9} {:>9}   round medians", "config", "median", "p5", "p95");
    let mut medians = Vec::new();
    for (name, rounds) in CONFIGS.iter().zip(&results) {
        let mut all: Vec<f64> = rounds.concat();
        all.sort_by(f64::total_cmp);
        let per_round: Vec<f64> = rounds.iter().map(|t| median(t)).collect();
        let (lo, hi) = per_round.iter().fold((f64::MAX, 0f64), |(l, h), &m| (l.min(m), h.max(m)));
        let (q5, q50, q95) = (quantile(&all, 0.05), quantile(&all, 0.5), quantile(&all, 0.95));
        println!("{name:<10} {q50:>9.1} {q5:>9.1} {q95:>9.1}   {lo:.1}..{hi:.1}");
        medians.push(q50);
    }
    let ratios: Vec<f64> =
        results[1].iter().zip(&results[0]).map(|(wg, ash)| median(wg) / median(ash)).collect();
    let (lo, hi) = ratios.iter().fold((f64::MAX, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
    let (ratio, extra) = (medians[1] / medians[0], medians[1] - medians[0]);
    let (ash_over, wgpu_over) = (medians[0] - medians[3], medians[1] - medians[4]);
    println!("wgpu/ash {ratio:.2} (rounds {lo:.2}..{hi:.2}), {extra:+.1} us/frame");
    println!("over the copy alone: ash {ash_over:+.1}, wgpu {wgpu_over:+.1} us/frame (the kernel and the hand-off)");
    let checked = a.rounds * CONFIGS.len() as u64 * k;
    println!("wgpu_handoff_cost: OK (wgpu/ash {ratio:.2}, {extra:+.1} us/frame; {checked} frames checked)");
    Ok(())
}
