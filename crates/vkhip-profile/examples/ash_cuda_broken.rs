//! `ash_cuda` with one wait removed: Vulkan's submission no longer waits for CUDA's `written`
//! signal, so the draw may read a height buffer while CUDA's kernel still writes it. Nothing
//! else changes (`diff ash_cuda.rs ash_cuda_broken.rs`). The Khronos layer cannot see this race
//! (the writer is CUDA); the profiler's checker names it: the buffer, both scopes, their
//! frames, the overlap in µs, on the first frame and every frame after it.
//!
//!     cargo run --release -p vkhip-profile --example ash_cuda_broken -- [--frames N] [--size N] [--cuda-stamps events|kernel] [--trace PATH]
//!
//! Exit codes (every example of this crate): 0 the checker found no hazard and every value was as
//! expected; 1 the checker found hazards (each printed): **the expected outcome here**; 2 no
//! usable CUDA device (one line on stderr); 3 any other failure (a failed call, or a wrong value
//! with no hazard found: the race happened and the checker missed it).

use ash::vk;
use std::error::Error;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vkhip_interop::cuda::{devices, Cuda};
use vkhip_interop::vulkan::{Device, Importer, SharedBuffer, SharedSemaphore};
use vkhip_interop::{FrameStream, FrameValues};
use vkhip_profile::{Options, Profiler, Submission};

const NAME: &str = "ash_cuda_broken";
/// Frame f writes (i + 7919 f) mod 2²⁴ into element i: exact in f32, different every frame.
const KERNEL: &str = r#"
extern "C" __global__ void heights(float* out, unsigned int n, unsigned int frame)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)((i + 7919u * frame) & 0xffffffu);
}
"#;
/// Frames in flight: CUDA writes frame f + 1 while Vulkan reads frame f.
const K: u64 = 2;
/// Values Vulkan reads per frame (spread over the buffer), which the host checks.
const SPOTS: u32 = 256;

fn main() -> ExitCode {
    env_logger::init();
    match run() {
        Ok(Outcome { hazards: 0, wrong_frames: 0 }) => ExitCode::SUCCESS,
        Ok(Outcome { hazards: 0, wrong_frames }) => {
            eprintln!("{NAME}: {wrong_frames} frame(s) read wrong values, and the checker found no hazard");
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
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Cuda)?;
    let cuda = Cuda::open(vk.uuid())?;
    println!("vulkan: {}\ncuda:   {}", vk.describe(), cuda.describe());
    let n = args.size * args.size;
    let heights = [vk.shared_buffer(u64::from(n) * 4)?, vk.shared_buffer(u64::from(n) * 4)?];
    let (written, read) = (vk.shared_timeline(0)?, vk.shared_timeline(0)?);
    let imported = [cuda.import_buffer(heights[0].export()?)?, cuda.import_buffer(heights[1].export()?)?];
    let (cuda_written, cuda_read) =
        (cuda.import_timeline(written.export()?)?, cuda.import_timeline(read.export()?)?);
    let kernel = cuda.compile(KERNEL, "heights")?;
    let frames = Frames::new(&vk, n)?;

    // One clock for Vulkan, CUDA and the host; a track per queue, stream and thread; the shared
    // buffers and the semaphores by name.
    let prof = Profiler::new(&vk, args.profile.clone())?; // profile
    let (queue, stream) = (prof.vulkan_queue("graphics")?, prof.cuda_stream("sim", &cuda)?); // profile
    let host = prof.host_thread("main"); // profile
    let p_heights: Vec<_> = (0..K).map(|s| prof.resource(format!("heights[{s}]"))).collect(); // profile
    let p_spots: Vec<_> = (0..K).map(|s| prof.resource(format!("spots[{s}]"))).collect(); // profile
    let (p_written, p_read) = (prof.semaphore("written"), prof.semaphore("read")); // profile
    let mut submissions = [Submission::default(); K as usize]; // profile

    let values = FrameValues { slots: K };
    let (mut wrong_frames, mut frame_times, start) = (0, Vec::new(), Instant::now());
    for f in 0..args.frames {
        let t0 = Instant::now();
        let s = (f % K) as usize;
        let v = values.signal(f);
        // The host: once Vulkan has read frame f − K from this slot, check what it read.
        if f >= K {
            frames.wait(s)?;
            queue.waited(submissions[s]); // profile
            let _check = host.scope("check").reads(&p_spots[s]); // profile
            wrong_frames += u64::from(!frames.check(s, f - K, n));
        }
        // CUDA: wait until Vulkan has read frame f − K from this buffer, write frame f, signal.
        if let Some(w) = values.wait_before_write(f) {
            cuda.wait(&cuda_read, w)?;
            stream.wait(&p_read, w); // profile
        }
        {
            let _sim = stream.scope("sim")?.writes(&p_heights[s]); // profile
            let (mut out, mut count, mut frame) = (imported[s].device_ptr(), n, f as u32);
            let mut args = [
                (&mut out as *mut u64).cast::<c_void>(),
                (&mut count as *mut u32).cast::<c_void>(),
                (&mut frame as *mut u32).cast::<c_void>(),
            ];
            // SAFETY: `heights(float*, unsigned int, unsigned int)` loaded through `cuda`: one
            // pointer per parameter, in order, to values of those types; `out` maps n floats, the
            // kernel writes indices < n, and the buffer outlives the stream's work.
            unsafe { cuda.launch(&kernel, [n.div_ceil(256), 1, 1], [256, 1, 1], &mut args) }?;
        }
        cuda.signal(&cuda_written, v)?;
        stream.signal(&p_written, v); // profile

        // Vulkan: a command buffer that reads the buffer, submitted to signal `read` = f + 1.
        // THE BUG: it does not wait for `written` ≥ f + 1 (ash_cuda's submission does).
        let cmd = frames.begin(s)?;
        {
            // SAFETY: `cmd` records (begun above) until `frames.submit` ends it, after this scope.
            let _draw = unsafe { queue.scope(cmd, "draw") }.reads(&p_heights[s]).writes(&p_spots[s]); // profile

            // SAFETY: as above; the buffer holds n floats.
            unsafe { frames.record_read(cmd, s, &heights[s], n) };
        }
        frames.submit(s, &[], &[(&read, v)])?;
        submissions[s] = queue.submitted(&[], &[(&p_read, v)]); // profile
        prof.end_frame()?; // profile
        frame_times.push(t0.elapsed());
    }
    for f in args.frames.saturating_sub(K)..args.frames {
        let s = (f % K) as usize;
        frames.wait(s)?;
        wrong_frames += u64::from(!frames.check(s, f, n));
    }
    cuda.synchronize()?;
    print_frame_times(&mut frame_times, start.elapsed(), &args);

    // The trace, and the report with the checker's verdict (each hazard on a line of its own).
    let capture = prof.finish()?; // profile
    capture.write_perfetto(&args.trace)?; // profile
    let report = capture.report(); // profile
    println!("{report}trace: {}", args.trace.display()); // profile
    println!("values: {wrong_frames} of {} frames wrong", args.frames);
    Ok(Outcome { hazards: report.check.violation_count, wrong_frames })
}

/// `--frames N` (default 600), `--size N` (default 256), `--no-profile`, `--cuda-stamps MODE`,
/// `--trace PATH`.
struct Args {
    frames: u64,
    size: u32,
    /// The profiler's options: `enabled` (`--no-profile`), `cuda_stamps` (`--cuda-stamps`).
    profile: Options,
    trace: PathBuf,
}

impl Args {
    fn parse() -> Result<Args, Box<dyn Error>> {
        let mut a = Args {
            frames: 600,
            size: 256,
            profile: Options::default(),
            trace: format!("{NAME}.trace.json").into(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--frames" => a.frames = value()?.parse()?,
                "--size" => a.size = value()?.parse()?,
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
        if a.size < 16 {
            return Err(
                format!("--size {} is below 16 ({SPOTS} values are checked per frame)", a.size).into()
            );
        }
        Ok(a)
    }
}

/// One line for the cost measurement (scripts/profile-check.sh): the median frame time and the mean.
fn print_frame_times(times: &mut [Duration], total: Duration, args: &Args) {
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let mean = total.as_secs_f64() / times.len().max(1) as f64;
    let on =
        if args.profile.enabled { format!("on (CUDA {})", args.profile.cuda_stamps) } else { "off".into() };
    println!(
        "{NAME}: {} frames at {}², profiling {on}: frame time median {:.1} µs, mean {:.1} µs",
        times.len(),
        args.size,
        median.as_secs_f64() * 1e6,
        mean * 1e6
    );
}

/// Vulkan's side of the frames in flight, per slot: a command buffer, a fence, and a small
/// host-visible buffer the copy writes the spot values into. Destroyed once the GPU is done.
struct Frames {
    vk: Device,
    queue: vk::Queue,
    pool: vk::CommandPool,
    slots: Vec<Slot>,
    stride: u32,
}

#[derive(Default)]
struct Slot {
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    spots: Option<std::ptr::NonNull<f32>>,
}

impl Frames {
    fn new(vk: &Device, n: u32) -> Result<Frames, Box<dyn Error>> {
        let d = vk.ash();
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(vk.queue_family())
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: the crate's device (live for `vk`); queue 0 of its family exists.
        let (queue, pool) =
            unsafe { (d.get_device_queue(vk.queue_family(), 0), d.create_command_pool(&info, None)?) };
        let mut frames = Frames { vk: vk.clone(), queue, pool, slots: Vec::new(), stride: n / SPOTS };
        // SAFETY: the memory properties of the device's own physical device.
        let memory = unsafe { vk.instance().get_physical_device_memory_properties(vk.physical()) };
        for s in 0..K as usize {
            frames.slots.push(Slot::default());
            let slot = &mut frames.slots[s];
            let alloc = vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1);
            let fence = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
            let buffer = vk::BufferCreateInfo::default()
                .size(u64::from(SPOTS) * 4)
                .usage(vk::BufferUsageFlags::TRANSFER_DST);
            // SAFETY: live device and pool; every handle lands in `slot` at once, so Drop
            // destroys whatever was made if a later call fails.
            unsafe {
                slot.cmd = d.allocate_command_buffers(&alloc)?[0];
                slot.fence = d.create_fence(&fence, None)?;
                slot.buffer = d.create_buffer(&buffer, None)?;
                let need = d.get_buffer_memory_requirements(slot.buffer);
                let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
                let ty = (0..memory.memory_type_count)
                    .find(|&i| {
                        need.memory_type_bits & (1 << i) != 0
                            && memory.memory_types[i as usize].property_flags.contains(host)
                    })
                    .ok_or("no host-visible memory")?;
                let info = vk::MemoryAllocateInfo::default().allocation_size(need.size).memory_type_index(ty);
                slot.memory = d.allocate_memory(&info, None)?;
                d.bind_buffer_memory(slot.buffer, slot.memory, 0)?;
                let p = d.map_memory(slot.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())?;
                slot.spots = std::ptr::NonNull::new(p.cast::<f32>());
            }
        }
        Ok(frames)
    }

    /// Wait (on the host) until slot `s`'s last submission has finished.
    fn wait(&self, s: usize) -> Result<(), Box<dyn Error>> {
        // SAFETY: a fence of this device.
        unsafe { self.vk.ash().wait_for_fences(&[self.slots[s].fence], true, 10_000_000_000) }?;
        Ok(())
    }

    /// Whether slot `s` holds frame `f`'s values (its fence waited for).
    fn check(&self, s: usize, f: u64, n: u32) -> bool {
        let Some(spots) = self.slots[s].spots else { return false };
        (0..SPOTS).all(|j| {
            let i = (j * self.stride).min(n - 1);
            // SAFETY: SPOTS floats of mapped, coherent memory; the copy that wrote them finished
            // (the caller waited for the slot's fence).
            let got = unsafe { spots.as_ptr().add(j as usize).read_volatile() };
            got == ((u64::from(i) + 7919 * f) & 0xff_ffff) as f32
        })
    }

    /// Begin slot `s`'s command buffer (its fence waited for, or never submitted).
    fn begin(&self, s: usize) -> Result<vk::CommandBuffer, Box<dyn Error>> {
        let cmd = self.slots[s].cmd;
        let info = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the command buffer's last submission finished (the caller waited for the fence).
        unsafe { self.vk.ash().begin_command_buffer(cmd, &info) }?;
        Ok(cmd)
    }

    /// Record the read: acquire `buffer` from CUDA, copy SPOTS of its n floats to the slot's
    /// host-visible buffer, make them visible to the host, release `buffer` back to CUDA.
    ///
    /// # Safety
    /// `cmd` is slot `s`'s command buffer, recording; `buffer` holds n floats.
    unsafe fn record_read(&self, cmd: vk::CommandBuffer, s: usize, buffer: &SharedBuffer, n: u32) {
        let d = self.vk.ash();
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let regions: Vec<vk::BufferCopy> = (0..SPOTS)
            .map(|j| vk::BufferCopy {
                src_offset: u64::from((j * self.stride).min(n - 1)) * 4,
                dst_offset: u64::from(j) * 4,
                size: 4,
            })
            .collect();
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: per this function's contract.
        unsafe {
            buffer.cmd_acquire(cmd, (transfer, vk::AccessFlags::TRANSFER_READ));
            d.cmd_copy_buffer(cmd, buffer.buffer(), self.slots[s].buffer, &regions);
            d.cmd_pipeline_barrier(
                cmd,
                transfer,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
            buffer.cmd_release(cmd, (transfer, vk::AccessFlags::empty()));
        }
    }

    /// End slot `s`'s command buffer and submit it: waits (at the copy), signals, the fence.
    fn submit(
        &self,
        s: usize,
        waits: &[(&SharedSemaphore, u64)],
        signals: &[(&SharedSemaphore, u64)],
    ) -> Result<(), Box<dyn Error>> {
        let (d, slot) = (self.vk.ash(), &self.slots[s]);
        let wait_sems: Vec<_> = waits.iter().map(|w| w.0.handle()).collect();
        let wait_values: Vec<_> = waits.iter().map(|w| w.1).collect();
        let stages = vec![vk::PipelineStageFlags::TRANSFER; waits.len()];
        let signal_sems: Vec<_> = signals.iter().map(|w| w.0.handle()).collect();
        let signal_values: Vec<_> = signals.iter().map(|w| w.1).collect();
        let mut values = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let cmds = [slot.cmd];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&wait_sems)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cmds)
            .signal_semaphores(&signal_sems)
            .push_next(&mut values);
        // SAFETY: the command buffer is recording; its fence is signalled (waited for, or new);
        // only this thread submits to the queue.
        unsafe {
            d.end_command_buffer(slot.cmd)?;
            d.reset_fences(&[slot.fence])?;
            d.queue_submit(self.queue, &[submit], slot.fence)?;
        }
        Ok(())
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        let d = self.vk.ash();
        // SAFETY: every submission is waited for first (a fence never submitted is signalled);
        // then each object of ours is destroyed once (null handles are ignored by Vulkan).
        unsafe {
            let fences: Vec<_> =
                self.slots.iter().map(|s| s.fence).filter(|f| *f != vk::Fence::null()).collect();
            if !fences.is_empty() {
                if let Err(e) = d.wait_for_fences(&fences, true, 10_000_000_000) {
                    log::warn!("{NAME}: waiting for the last frames before teardown failed: {e}");
                }
            }
            for slot in &self.slots {
                d.destroy_fence(slot.fence, None);
                d.destroy_buffer(slot.buffer, None);
                d.free_memory(slot.memory, None);
            }
            d.destroy_command_pool(self.pool, None);
        }
    }
}
