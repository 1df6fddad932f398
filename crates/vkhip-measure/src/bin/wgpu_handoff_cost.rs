//! What the crate's wgpu hand-off costs per frame against its plain-ash path, and where the
//! difference goes (issue 32): the same loop in several configurations on one grid, interleaved
//! round by round. In the hand-off loops CUDA paints one of K shared RGBA8 images (the kernel of
//! `wgpu_cuda_texture`) and signals; Vulkan waits for it, copies the image into a buffer (rows
//! padded to 256 bytes) and signals back. The configurations form a ladder from the ash path to
//! wgpu's, one difference per rung:
//!
//! | config | what runs |
//! |---|---|
//! | `ash` | the crate's ash path: its own `VkDevice`, one command buffer recorded per frame (`SharedImage::cmd_acquire`, the copy, `cmd_release`), one `vkQueueSubmit`; the host waits on a timeline of its own that the submission signals |
//! | `raw` | the same raw Vulkan on wgpu's `VkDevice` and `VkQueue`, on wgpu's textures' images (no wgpu-core) |
//! | `raw+sem` | `raw` plus wgpu-hal's relay semaphores: a binary wait (top of pipe) on the previous submission's binary signal |
//! | `raw+8cb` | `raw+sem` as the eight command buffers `wgpu-4cb` becomes (wgpu's transit buffers, the same barriers) |
//! | `wgpu-4cb` | the hand-off through wgpu: `[acquire, copy, general, release]`, the crate's shape before issue 32 |
//! | `wgpu` | the crate's shape: `[acquire, copy + wgpu's transition, release]` (`finish_and_release`) |
//! | `raw+8cb+pad` | `raw+8cb` with the host spinning before each submit for as long as `wgpu-4cb`'s host time exceeds `raw+8cb`'s |
//! | `ash-ext`, `ash-spin`, `wgpu-spin` | the throttle's wait: on the exported timeline CUDA waits on (before issue 32), or spinning on a counter |
//! | `cuda-only`, `ash-only`, `wgpu-only` | the kernel alone; the copy alone (an image Vulkan owns; a plain `wgpu::Texture`) |
//!
//! Each loop waits on the host for frame f + 1 − K after submitting frame f, as a renderer with K
//! frames in flight does; a frame's time is the host time between two such waits. No host wait
//! is ever on a value CUDA signals (those wake ≈ 10 ms late on NVIDIA: issue 34): the hand-off
//! loops wait on Vulkan's signals, `cuda-only` on CUDA events. Per frame the host time is split
//! into CUDA's calls, recording (encoders, command buffers), the submit, and the throttle's wait.
//! No host read-back in the loop: after each run the last frame of every slot is checked.
//!
//! `--trace N` adds one traced run of N frames per hand-off configuration, on one clock: the
//! kernel stamps the GPU timer (`%globaltimer`) at its start and end, the hand-off's command
//! buffers write Vulkan timestamps (the same timer on NVIDIA) after the acquire and after the
//! release (through `WgpuDevice::acquire_with` / `finish_and_release_with` on wgpu's side), and
//! the host's marks are mapped onto the GPU timer through a CUDA kernel that stamps it while the
//! host brackets the launch. `--trace-out DIR` writes each traced run as CSV.
//!
//!     cargo run --release -p vkhip-measure --features wgpu --bin wgpu_handoff_cost -- \
//!         [--grid WxH] [--k K] [--frames N] [--warmup N] [--rounds R] [--configs a,b,..] \
//!         [--trace N] [--trace-out DIR] [--no-cuda]
//!
//! `--no-cuda` runs the Vulkan and wgpu sides without CUDA (a host signal stands in for the
//! kernel; lavapipe, which exports no semaphores, runs it with plain timelines): a smoke test of
//! every submission shape, the traces' Vulkan side and the validation layer; its times mean
//! nothing and no texel is checked.
//!
//! Exit codes: 0 every check passed, 1 a wrong texel, a failed call or a bad argument (one line),
//! 2 no usable CUDA device, with one line on stderr.

use ash::vk;
use std::collections::VecDeque;
use std::error::Error;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vkhip_interop::cuda::{
    compile_to_image, devices, Cuda, CudaEvent, CudaHostMemory, CudaImage, CudaKernel, CudaMemory,
    CudaSemaphore,
};
use vkhip_interop::vulkan::{Device, ImageAccess, Importer, SharedBuffer, SharedImage, SharedSemaphore};
use vkhip_interop::wgpu_interop::{vulkan_adapter, WgpuDevice, WgpuTexture};
use vkhip_interop::{FrameStream, FrameValues, ImageFormat};
use wgpu::hal::api::Vulkan;

type Res<T> = Result<T, Box<dyn Error>>;

/// Frame f writes texel (x, y) = (x + f, 3y + f, x ^ y ^ f, 7f), each mod 256. With `stamps`
/// (traced frames) block (0, 0) stamps the GPU timer at its start and the last block to finish
/// at its end; `anchor` stamps it once (the host brackets its launch).
const KERNEL: &str = r#"
__device__ unsigned long long gpu_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
extern "C" __global__ void paint(cudaSurfaceObject_t s, unsigned int w, unsigned int h, unsigned int f,
                                 unsigned long long* stamps, unsigned int* done) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    bool first = blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0;
    if (stamps && first) stamps[0] = gpu_timer();
    if (x < w && y < h) surf2Dwrite(make_uchar4((x + f) & 255u, (3u * y + f) & 255u, (x ^ y ^ f) & 255u, (7u * f) & 255u), s, x * 4, y);
    if (stamps) {
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            __threadfence();
            if (atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1) {
                stamps[1] = gpu_timer();
                *done = 0u;
            }
        }
    }
}
extern "C" __global__ void anchor(unsigned long long* out) { out[0] = gpu_timer(); }
"#;
const USAGE: &str =
    "usage: wgpu_handoff_cost [--grid WxH] [--k 1..8] [--frames N>=10] [--warmup N] [--rounds 1..100] \
[--configs a,b,..] [--trace N] [--trace-out DIR] [--no-cuda]";
/// The colour of the images the `-only` copies read (0.2, 0.4, 0.6, 0.8 in unorm8).
const CLEARED: [u8; 4] = [51, 102, 153, 204];
const WAIT: Duration = Duration::from_secs(30);
/// Any access (the crate's own side of the wgpu barriers).
const ANY: vk::AccessFlags =
    vk::AccessFlags::from_raw(vk::AccessFlags::MEMORY_READ.as_raw() | vk::AccessFlags::MEMORY_WRITE.as_raw());

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Config {
    Ash,
    Raw,
    RawSem,
    Raw8,
    Wgpu4,
    Wgpu,
    Raw8Pad,
    Raw3Sub,
    Wgpu3Sub,
    AshExt,
    AshSpin,
    WgpuSpin,
    CudaOnly,
    AshOnly,
    WgpuOnly,
}

/// Every configuration, in the order of the even rounds (odd rounds run it backwards);
/// `raw+8cb+pad` comes after the two it takes its pad from.
const ALL: [Config; 15] = [
    Config::Ash,
    Config::Raw,
    Config::RawSem,
    Config::Raw8,
    Config::Wgpu4,
    Config::Wgpu,
    Config::Raw8Pad,
    Config::Raw3Sub,
    Config::Wgpu3Sub,
    Config::AshExt,
    Config::AshSpin,
    Config::WgpuSpin,
    Config::CudaOnly,
    Config::AshOnly,
    Config::WgpuOnly,
];

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Ash => "ash",
            Config::Raw => "raw",
            Config::RawSem => "raw+sem",
            Config::Raw8 => "raw+8cb",
            Config::Wgpu4 => "wgpu-4cb",
            Config::Wgpu => "wgpu",
            Config::Raw8Pad => "raw+8cb+pad",
            Config::Raw3Sub => "raw-3sub",
            Config::Wgpu3Sub => "wgpu-3sub",
            Config::AshExt => "ash-ext",
            Config::AshSpin => "ash-spin",
            Config::WgpuSpin => "wgpu-spin",
            Config::CudaOnly => "cuda-only",
            Config::AshOnly => "ash-only",
            Config::WgpuOnly => "wgpu-only",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Config::Ash => "the crate's ash path: own VkDevice, 1 command buffer, 1 vkQueueSubmit",
            Config::Raw => "ash's submission, raw, on wgpu's VkDevice, VkQueue and textures",
            Config::RawSem => "+ wgpu-hal's binary relay semaphore: wait (top of pipe), signal",
            Config::Raw8 => "+ the 8 command buffers wgpu-4cb becomes (transit buffers, same barriers)",
            Config::Wgpu4 => "+ wgpu-core: [acquire, copy, general, release] (before issue 32)",
            Config::Wgpu => "the crate's shape: [acquire, copy + transition, release]",
            Config::Raw8Pad => "raw+8cb, the host spinning wgpu-4cb's extra host time per frame",
            Config::Raw3Sub => "raw, acquire / copy / release in 3 vkQueueSubmits",
            Config::Wgpu3Sub => "raw acquire, wgpu's [copy + transition], raw release: 3 submits",
            Config::AshExt => "ash, the throttle waiting on the exported timeline (before issue 32)",
            Config::AshSpin => "ash, the throttle spinning on the counter",
            Config::WgpuSpin => "wgpu, the throttle spinning on the counter, then poll(Poll)",
            Config::CudaOnly => "the kernel and its signal alone (throttle: CUDA events)",
            Config::AshOnly => "the copy alone, crate's device (an image Vulkan owns)",
            Config::WgpuOnly => "the copy alone through wgpu (a plain wgpu::Texture)",
        }
    }

    fn by_name(name: &str) -> Option<Config> {
        ALL.into_iter().find(|c| c.name() == name)
    }

    /// Hand-off loops that get a traced run with `--trace`.
    fn traced(self) -> bool {
        !matches!(
            self,
            Config::Raw8Pad
                | Config::AshExt
                | Config::AshSpin
                | Config::WgpuSpin
                | Config::CudaOnly
                | Config::AshOnly
                | Config::WgpuOnly
        )
    }

    fn needs_cuda(self) -> bool {
        self == Config::CudaOnly
    }
}

struct Args {
    grid: (u32, u32),
    k: u64,
    frames: u64,
    warmup: u64,
    rounds: u64,
    configs: Vec<Config>,
    trace: u64,
    trace_out: Option<PathBuf>,
    no_cuda: bool,
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
            Some(e) if e.is_environment() && !args.no_cuda => {
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
    let mut a = Args {
        grid: (1024, 1024),
        k: 3,
        frames: 2000,
        warmup: 200,
        rounds: 5,
        configs: ALL.to_vec(),
        trace: 0,
        trace_out: None,
        no_cuda: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--no-cuda" {
            a.no_cuda = true;
            continue;
        }
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
            "--trace" => a.trace = number(0, 100_000)?,
            "--trace-out" => a.trace_out = Some(PathBuf::from(value)),
            "--configs" => {
                a.configs = value
                    .split(',')
                    .map(|n| {
                        Config::by_name(n.trim()).ok_or(format!("--configs: unknown configuration {n:?}"))
                    })
                    .collect::<Result<_, _>>()?;
                let known: Vec<Config> = ALL.into_iter().filter(|c| a.configs.contains(c)).collect();
                a.configs = known;
            }
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
    if a.trace > 0 && a.trace < a.k + 1 {
        return Err(format!("--trace {}: at least K + 1 frames", a.trace));
    }
    Ok(a)
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

fn vkerr(call: &'static str) -> impl Fn(vk::Result) -> vkhip_interop::Error {
    move |r| vkhip_interop::Error::vulkan(call, r)
}

/// The `p`-quantile of sorted `v` (nearest rank); NaN when empty.
fn quantile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

// ---------------------------------------------------------------------------------------------
// Host timing.

/// The host's marks inside one frame (what the step did not mark is the mark before it).
#[derive(Default)]
struct Step {
    cuda: Option<Instant>,
    record: Option<Instant>,
    submit: Option<Instant>,
    /// Time in wgpu's non-blocking `Device::poll(Poll)` after the throttle's own wait.
    maint: Duration,
}

impl Step {
    fn cuda(&mut self) {
        self.cuda = Some(Instant::now());
    }
    fn recorded(&mut self) {
        self.record = Some(Instant::now());
    }
    fn submitted(&mut self) {
        self.submit = Some(Instant::now());
    }
    /// `device.poll(Poll)`, timed as wgpu's maintenance.
    fn maintain(&mut self, device: &wgpu::Device) -> Res<()> {
        let t = Instant::now();
        device.poll(wgpu::PollType::Poll)?;
        self.maint += t.elapsed();
        Ok(())
    }
}

/// One frame's marks: its start, after CUDA's calls, after recording, after the submit, after
/// the throttle's wait (its end).
#[derive(Clone, Copy)]
struct Marks([Instant; 5]);

/// One run: µs per frame, the host phases of each frame (CUDA, record, submit, the throttle's
/// wait, wgpu's maintenance after it; µs), and the marks of every frame after the warm-up
/// (traced runs only).
#[derive(Default)]
struct Run {
    frames: Vec<f64>,
    phases: Vec<[f64; 5]>,
    marks: Vec<Marks>,
}

/// Run `warmup + frames` frames of `step(f, marks)`, which submits frame f and waits for frame
/// f + 1 − K.
fn timed(
    warmup: u64,
    frames: u64,
    keep_marks: bool,
    mut step: impl FnMut(u64, &mut Step) -> Res<()>,
) -> Res<Run> {
    let mut run = Run::default();
    let mut last = Instant::now();
    for f in 0..warmup + frames {
        let start = Instant::now();
        let mut s = Step::default();
        step(f, &mut s)?;
        let end = Instant::now();
        let cuda = s.cuda.unwrap_or(start);
        let record = s.record.unwrap_or(cuda);
        let submit = s.submit.unwrap_or(record);
        if f >= warmup {
            run.frames.push(us(end - last));
            let (wait, maint) = (us(end - submit) - us(s.maint), us(s.maint));
            run.phases.push([us(cuda - start), us(record - cuda), us(submit - record), wait, maint]);
            if keep_marks {
                run.marks.push(Marks([start, cuda, record, submit, end]));
            }
        }
        last = end;
    }
    Ok(run)
}

fn spin_until(deadline: Instant) {
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// One `vkQueueSubmit` of `cmds`, waiting on `waits` (semaphore, value, stage) and signalling
/// `signals` (semaphore, value); values of binary semaphores are ignored.
///
/// # Safety
/// `queue` is `d`'s and used by this thread only; the command buffers are executable and not
/// pending; every semaphore is live, binary ones signalled before they are waited on.
unsafe fn submit(
    d: &ash::Device,
    queue: vk::Queue,
    cmds: &[vk::CommandBuffer],
    waits: &[(vk::Semaphore, u64, vk::PipelineStageFlags)],
    signals: &[(vk::Semaphore, u64)],
) -> Res<()> {
    let (wait, wait_values, stages): (Vec<_>, Vec<_>, Vec<_>) =
        waits.iter().copied().fold((vec![], vec![], vec![]), |(mut a, mut b, mut c), (s, v, st)| {
            a.push(s);
            b.push(v);
            c.push(st);
            (a, b, c)
        });
    let (signal, signal_values): (Vec<_>, Vec<_>) = signals.iter().copied().unzip();
    let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
        .wait_semaphore_values(&wait_values)
        .signal_semaphore_values(&signal_values);
    let info = vk::SubmitInfo::default()
        .wait_semaphores(&wait)
        .wait_dst_stage_mask(&stages)
        .command_buffers(cmds)
        .signal_semaphores(&signal)
        .push_next(&mut tl);
    // SAFETY: per this function's contract.
    unsafe { d.queue_submit(queue, &[info], vk::Fence::null()) }.map_err(vkerr("vkQueueSubmit"))?;
    Ok(())
}

/// Spin until `value()` reaches `target` (for at most [`WAIT`]).
fn spin_to(value: impl Fn() -> Res<u64>, target: u64) -> Res<()> {
    let deadline = Instant::now() + WAIT;
    while value()? < target {
        if Instant::now() > deadline {
            return Err(format!("timeline value {target} not reached in {WAIT:?}").into());
        }
        std::hint::spin_loop();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Vulkan objects of the benchmark's own.

/// A command pool and its command buffers.
struct Pool(ash::Device, vk::CommandPool, Vec<vk::CommandBuffer>);

impl Pool {
    fn new(dev: &Device, count: u32) -> Res<Pool> {
        let d = dev.ash();
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(dev.queue_family())
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: the live device; `Pool` destroys the pool before the device goes.
        let pool = unsafe { d.create_command_pool(&info, None) }.map_err(vkerr("vkCreateCommandPool"))?;
        let mut pool = Pool(d.clone(), pool, vec![]);
        let alloc = vk::CommandBufferAllocateInfo::default().command_pool(pool.1).command_buffer_count(count);
        // SAFETY: the pool above.
        pool.2 = unsafe { d.allocate_command_buffers(&alloc) }.map_err(vkerr("vkAllocateCommandBuffers"))?;
        Ok(pool)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: the pool is ours; the queue is idle (every run waits for its last frame).
        unsafe {
            let _ = self.0.device_wait_idle();
            self.0.destroy_command_pool(self.1, None);
        }
    }
}

/// A semaphore the benchmark makes (not exported): a timeline, or a binary one.
struct Plain(ash::Device, vk::Semaphore);

impl Plain {
    fn new(dev: &Device, timeline: bool) -> Res<Plain> {
        let mut kind = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
        let mut info = vk::SemaphoreCreateInfo::default();
        if timeline {
            info = info.push_next(&mut kind);
        }
        // SAFETY: the live device; `Plain` destroys it once idle.
        let s = unsafe { dev.ash().create_semaphore(&info, None) }.map_err(vkerr("vkCreateSemaphore"))?;
        Ok(Plain(dev.ash().clone(), s))
    }

    fn value(&self) -> Res<u64> {
        // SAFETY: a timeline semaphore of this device.
        Ok(unsafe { self.0.get_semaphore_counter_value(self.1) }
            .map_err(vkerr("vkGetSemaphoreCounterValue"))?)
    }

    fn wait(&self, value: u64) -> Res<()> {
        let (s, v) = ([self.1], [value]);
        let info = vk::SemaphoreWaitInfo::default().semaphores(&s).values(&v);
        // SAFETY: a timeline semaphore of this device.
        unsafe { self.0.wait_semaphores(&info, WAIT.as_nanos() as u64) }
            .map_err(vkerr("vkWaitSemaphores"))?;
        Ok(())
    }

    fn signal(&self, value: u64) -> Res<()> {
        let info = vk::SemaphoreSignalInfo::default().semaphore(self.1).value(value);
        // SAFETY: a timeline semaphore of this device; values only grow (frame numbers).
        unsafe { self.0.signal_semaphore(&info) }.map_err(vkerr("vkSignalSemaphore"))?;
        Ok(())
    }
}

impl Drop for Plain {
    fn drop(&mut self) {
        // SAFETY: no pending operation uses it (every run waits for its last frame first).
        unsafe { self.0.destroy_semaphore(self.1, None) };
    }
}

/// The two timelines of the protocol: exported and imported into CUDA, or (`--no-cuda`) plain.
enum Sem {
    Shared(SharedSemaphore),
    Plain(Box<Plain>),
}

impl Sem {
    fn handle(&self) -> vk::Semaphore {
        match self {
            Sem::Shared(s) => s.handle(),
            Sem::Plain(p) => p.1,
        }
    }

    fn value(&self) -> Res<u64> {
        match self {
            Sem::Shared(s) => Ok(s.value()?),
            Sem::Plain(p) => p.value(),
        }
    }

    /// A host wait: only ever on values Vulkan signals.
    fn wait(&self, value: u64) -> Res<()> {
        match self {
            Sem::Shared(s) => Ok(s.wait_blocking(value, WAIT)?),
            Sem::Plain(p) => p.wait(value),
        }
    }

    fn spin(&self, value: u64) -> Res<()> {
        spin_to(|| self.value(), value)
    }
}

/// `written` (CUDA signals, Vulkan waits) and `read` (Vulkan signals, CUDA waits), with CUDA's
/// imports of both.
struct Protocol {
    written: Sem,
    read: Sem,
    cuda: Option<(CudaSemaphore, CudaSemaphore)>,
}

/// Vulkan timestamps: two per traced frame (after the acquire, after the release).
struct Queries {
    d: ash::Device,
    pool: vk::QueryPool,
    count: u32,
    period_ns: f64,
    mask: u64,
}

impl Queries {
    /// A pool of `count` timestamps on `dev`, reset; None where its queue family has none.
    fn new(dev: &Device, count: u32) -> Res<Option<Queries>> {
        // SAFETY: the device's live instance and physical device.
        let (props, families) = unsafe {
            (
                dev.instance().get_physical_device_properties(dev.physical()),
                dev.instance().get_physical_device_queue_family_properties(dev.physical()),
            )
        };
        let bits = families.get(dev.queue_family() as usize).map_or(0, |f| f.timestamp_valid_bits);
        if bits == 0 || props.limits.timestamp_period <= 0.0 {
            return Ok(None);
        }
        let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(count);
        let d = dev.ash();
        // SAFETY: the live device; `Queries` destroys the pool once the device is idle.
        let pool = unsafe { d.create_query_pool(&info, None) }.map_err(vkerr("vkCreateQueryPool"))?;
        let q = Queries {
            d: d.clone(),
            pool,
            count,
            period_ns: f64::from(props.limits.timestamp_period),
            mask: if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 },
        };
        // SAFETY: a one-shot command buffer of `dev`, recording; the pool is new.
        dev.submit_one_shot(&[], &[], |cmd| unsafe { d.cmd_reset_query_pool(cmd, pool, 0, count) })?;
        Ok(Some(q))
    }

    /// Write timestamp `index` once every earlier command of the queue has completed.
    ///
    /// # Safety
    /// `cmd` is recording on the pool's device; `index` < count, written once per reset.
    unsafe fn write(&self, cmd: vk::CommandBuffer, index: u32) {
        // SAFETY: per this function's contract.
        unsafe { self.d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, self.pool, index) };
    }

    /// Every timestamp, in ns of the GPU timer (call once every write has completed).
    fn read(&self) -> Res<Vec<f64>> {
        let mut raw = vec![0u64; self.count as usize];
        // SAFETY: the pool holds `count` queries, all written and complete.
        unsafe {
            self.d.get_query_pool_results(
                self.pool,
                0,
                &mut raw,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(vkerr("vkGetQueryPoolResults"))?;
        Ok(raw.into_iter().map(|t| (t & self.mask) as f64 * self.period_ns).collect())
    }
}

impl Drop for Queries {
    fn drop(&mut self) {
        // SAFETY: the pool is ours; nothing pending writes it (read waited for every write).
        unsafe { self.d.destroy_query_pool(self.pool, None) };
    }
}

// ---------------------------------------------------------------------------------------------
// CUDA's side and the clocks.

struct CudaSide {
    cuda: Cuda,
    paint: CudaKernel,
    anchor: CudaKernel,
    /// 8 bytes the anchor kernel writes.
    anchor_mem: CudaHostMemory,
    /// The paint kernel's block counter (traced frames).
    done: CudaMemory,
}

/// CUDA's frame f into `surface`; `stamps` (0: none) is where the kernel stamps its start and end.
fn paint(
    c: &CudaSide,
    surface: &CudaImage,
    (w, h): (u32, u32),
    f: u64,
    stamps: u64,
) -> vkhip_interop::Result<()> {
    let (mut surf, mut w, mut h, mut frame) = (surface.surface(), w, h, f as u32);
    let (mut stamps, mut done) = (stamps, if stamps == 0 { 0 } else { c.done.device_ptr() });
    let mut args = [
        &mut surf as *mut u64 as *mut c_void,
        &mut w as *mut u32 as *mut c_void,
        &mut h as *mut u32 as *mut c_void,
        &mut frame as *mut u32 as *mut c_void,
        &mut stamps as *mut u64 as *mut c_void,
        &mut done as *mut u64 as *mut c_void,
    ];
    // SAFETY: `paint(cudaSurfaceObject_t, unsigned, unsigned, unsigned, unsigned long long*,
    // unsigned*)`: one pointer per parameter to a live value of its type (device pointers are
    // 64-bit); texels x < w, y < h of a surface `surface` keeps; `stamps`, when not 0, is 16
    // bytes of page-locked host memory the caller keeps until the stream is idle, and `done`
    // the counter `c` keeps.
    unsafe { c.cuda.launch(&c.paint, [w.div_ceil(16), h.div_ceil(16), 1], [16, 16, 1], &mut args) }
}

/// Where the host clock lies on the GPU timer: the narrowest of 25 brackets of a kernel that
/// stamps the timer. Returns (host instant at the bracket's middle, GPU ns, bracket width µs).
fn anchor(c: &CudaSide) -> Res<(Instant, f64, f64)> {
    let mut best: Option<(Instant, f64, f64)> = None;
    for _ in 0..25 {
        let mut out = c.anchor_mem.device_ptr();
        let mut args = [&mut out as *mut u64 as *mut c_void];
        let t0 = Instant::now();
        // SAFETY: `anchor(unsigned long long*)`: 8 bytes of page-locked host memory `c` keeps.
        unsafe { c.cuda.launch(&c.anchor, [1, 1, 1], [1, 1, 1], &mut args) }?;
        c.cuda.synchronize()?;
        let t1 = Instant::now();
        let bytes: [u8; 8] = c.anchor_mem.bytes()[..8].try_into().expect("8 bytes");
        let g = u64::from_ne_bytes(bytes) as f64;
        let width = us(t1 - t0);
        if best.is_none_or(|b| width < b.2) {
            best = Some((t0 + (t1 - t0) / 2, g, width));
        }
    }
    Ok(best.expect("25 tries"))
}

/// Host instants → GPU ns, from one anchor before and one after a run.
#[derive(Clone, Copy)]
struct HostMap {
    h0: Instant,
    g0: f64,
    rate: f64,
    /// Half the wider bracket, µs.
    accuracy: f64,
}

impl HostMap {
    fn from(a: (Instant, f64, f64), b: (Instant, f64, f64)) -> HostMap {
        let dh = (b.0 - a.0).as_nanos() as f64;
        let rate = if dh > 0.0 { (b.1 - a.1) / dh } else { 1.0 };
        HostMap { h0: a.0, g0: a.1, rate, accuracy: a.2.max(b.2) / 2.0 }
    }

    fn gpu(&self, h: Instant) -> f64 {
        let d =
            if h >= self.h0 { (h - self.h0).as_nanos() as f64 } else { -((self.h0 - h).as_nanos() as f64) };
        self.g0 + d * self.rate
    }
}

/// What a traced run saw on the GPU: per traced frame the kernel's (start, end) and the
/// hand-off's (after acquire, after release), GPU ns.
#[derive(Default)]
struct Gpu {
    kernel: Vec<Option<(f64, f64)>>,
    vulkan: Vec<Option<(f64, f64)>>,
}

struct Traced {
    config: Config,
    run: Run,
    gpu: Gpu,
    map: Option<HostMap>,
}

/// Per-run trace state: kernel stamp memory and the Vulkan timestamps.
struct Tracer {
    frames: u64,
    warmup: u64,
    stamps: Option<CudaHostMemory>,
    queries: Option<Queries>,
}

impl Tracer {
    fn new(ctx: &Ctx<'_>, dev: &Device, frames: u64) -> Res<Tracer> {
        let stamps = match &ctx.cuda {
            Some(c) => {
                let mem = c.cuda.alloc_host(16 * frames)?;
                c.done.fill_u32(0, 1)?;
                Some(mem)
            }
            None => None,
        };
        Ok(Tracer { frames, warmup: ctx.a.warmup, stamps, queries: Queries::new(dev, 2 * frames as u32)? })
    }

    /// The traced index of frame f, if it is traced.
    fn index(&self, f: u64) -> Option<u64> {
        (f >= self.warmup && f - self.warmup < self.frames).then(|| f - self.warmup)
    }

    /// Where frame f's kernel stamps (0: nowhere).
    fn stamps(&self, f: u64) -> u64 {
        match (&self.stamps, self.index(f)) {
            (Some(m), Some(i)) => m.device_ptr() + 16 * i,
            _ => 0,
        }
    }

    /// Frame f's two timestamp indices and the pool, if traced.
    fn queries(&self, f: u64) -> Option<(&Queries, u32)> {
        Some((self.queries.as_ref()?, 2 * self.index(f)? as u32))
    }

    /// Read everything back (once the run's work has completed).
    fn finish(self) -> Res<Gpu> {
        let mut gpu = Gpu::default();
        let n = self.frames as usize;
        gpu.kernel = match &self.stamps {
            Some(m) => m.bytes()[..16 * n]
                .chunks_exact(16)
                .map(|c| {
                    let s = u64::from_ne_bytes(c[..8].try_into().expect("8 bytes"));
                    let e = u64::from_ne_bytes(c[8..].try_into().expect("8 bytes"));
                    (s != 0 && e >= s).then_some((s as f64, e as f64))
                })
                .collect(),
            None => vec![None; n],
        };
        gpu.vulkan = match &self.queries {
            Some(q) => q.read()?.chunks_exact(2).map(|c| (c[1] >= c[0]).then_some((c[0], c[1]))).collect(),
            None => vec![None; n],
        };
        Ok(gpu)
    }
}

// ---------------------------------------------------------------------------------------------
// The loops.

/// One slot on the crate's own device: CUDA's surface (none without CUDA), the image (CUDA's,
/// prepared), a destination buffer (at rest released to the compute API, as `read_buffer`
/// leaves it).
struct AshSlot {
    surface: Option<CudaImage>,
    image: SharedImage,
    dst: SharedBuffer,
}

/// One slot on wgpu's device: CUDA's surface, the shared texture (CUDA's at rest), a plain
/// texture of CLEARED texels (`wgpu-only`), wgpu's destination buffer, and the raw loops'
/// destination buffer (at rest released to the compute API).
struct WgpuSlot {
    surface: Option<CudaImage>,
    texture: WgpuTexture,
    plain: wgpu::Texture,
    dst: wgpu::Buffer,
    raw_dst: SharedBuffer,
}

/// Everything the loops share.
struct Ctx<'a> {
    a: &'a Args,
    cuda: Option<CudaSide>,
    vk: &'a Device,
    gpu: &'a WgpuDevice,
    ash_slots: Vec<AshSlot>,
    wgpu_slots: Vec<WgpuSlot>,
    readback: wgpu::Buffer,
    pitch: u32,
    bytes: u64,
    values: FrameValues,
}

impl Ctx<'_> {
    fn region(&self) -> vk::BufferImageCopy {
        vk::BufferImageCopy::default()
            .buffer_row_length(self.pitch / 4)
            .image_subresource(
                vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1),
            )
            .image_extent(vk::Extent3D { width: self.a.grid.0, height: self.a.grid.1, depth: 1 })
    }

    /// The last frame of a run of `frames` that used slot s.
    fn last_of(&self, frames: u64, s: usize) -> u64 {
        let last = frames - 1;
        last - (last - s as u64) % self.a.k
    }

    /// The protocol's two timelines on `dev`.
    fn protocol(&self, dev: &Device) -> Res<Protocol> {
        Ok(match &self.cuda {
            Some(c) => {
                let (written, read) = (dev.shared_timeline(0)?, dev.shared_timeline(0)?);
                let imported =
                    (c.cuda.import_timeline(written.export()?)?, c.cuda.import_timeline(read.export()?)?);
                Protocol { written: Sem::Shared(written), read: Sem::Shared(read), cuda: Some(imported) }
            }
            None => Protocol {
                written: Sem::Plain(Box::new(Plain::new(dev, true)?)),
                read: Sem::Plain(Box::new(Plain::new(dev, true)?)),
                cuda: None,
            },
        })
    }

    /// CUDA's frame f (after `read` says frame f − K was read), then `written` = f + 1. Without
    /// CUDA the host signals `written` (frame f − K was read: the throttle saw to it).
    fn compute(&self, p: &Protocol, surface: Option<&CudaImage>, f: u64, stamps: u64) -> Res<()> {
        let v = self.values;
        match (&self.cuda, &p.cuda, surface) {
            (Some(c), Some((cw, cr)), Some(surface)) => {
                let wait = v.wait_before_write(f).map(|x| (cr, x));
                c.cuda.frame(wait, Some((cw, v.signal(f))), |_| paint(c, surface, self.a.grid, f, stamps))?;
            }
            _ => {
                if let Some(x) = v.wait_before_write(f) {
                    p.read.spin(x)?;
                }
                match &p.written {
                    Sem::Plain(w) => w.signal(v.signal(f))?,
                    Sem::Shared(_) => return Err("a shared timeline without CUDA".into()),
                }
            }
        }
        Ok(())
    }

    fn synchronize(&self) -> Res<()> {
        if let Some(c) = &self.cuda {
            c.cuda.synchronize()?;
        }
        Ok(())
    }

    fn check(&self, what: &str, bytes: &[u8], want: impl Fn(u64, u64) -> [u8; 4]) -> Res<()> {
        if self.cuda.is_none() {
            return Ok(()); // --no-cuda: nothing painted the images
        }
        check(what, bytes, self.pitch as usize, self.a.grid, want)
    }
}

/// What the throttle waits on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Throttle {
    /// A timeline of the loop's own that the submission signals (`vkWaitSemaphores`).
    Own,
    /// The same, spinning on its counter.
    OwnSpin,
    /// `read`, the exported timeline CUDA waits on.
    Exported,
}

#[derive(Clone, Copy)]
struct RawShape {
    on_wgpu: bool,
    handoff: bool,
    relay: bool,
    eight: bool,
    /// Acquire, copy and release in three submissions.
    split: bool,
    throttle: Throttle,
    pad: Duration,
}

fn raw_shape(c: Config, pad: Duration) -> RawShape {
    let base = RawShape {
        on_wgpu: false,
        handoff: true,
        relay: false,
        eight: false,
        split: false,
        throttle: Throttle::Own,
        pad: Duration::ZERO,
    };
    match c {
        Config::Ash => base,
        Config::AshExt => RawShape { throttle: Throttle::Exported, ..base },
        Config::AshSpin => RawShape { throttle: Throttle::OwnSpin, ..base },
        Config::AshOnly => RawShape { handoff: false, ..base },
        Config::Raw => RawShape { on_wgpu: true, ..base },
        Config::RawSem => RawShape { on_wgpu: true, relay: true, ..base },
        Config::Raw8 => RawShape { on_wgpu: true, relay: true, eight: true, ..base },
        Config::Raw8Pad => RawShape { on_wgpu: true, relay: true, eight: true, pad, ..base },
        Config::Raw3Sub => RawShape { on_wgpu: true, split: true, ..base },
        _ => unreachable!("not a raw configuration"),
    }
}

/// The hand-off (or, without one, the copy alone) in raw Vulkan: on the crate's own device, or
/// on wgpu's device and queue.
fn raw_loop(ctx: &Ctx<'_>, shape: RawShape, frames: u64, trace: bool) -> Res<(Run, Option<Gpu>)> {
    let a = ctx.a;
    let (k, values) = (a.k, ctx.values);
    let dev: &Device = if shape.on_wgpu { ctx.gpu.vulkan() } else { ctx.vk };
    let d = dev.ash();
    let queue = if shape.on_wgpu {
        // SAFETY: the handle only; submissions to it come from this thread, between wgpu's.
        unsafe { ctx.gpu.queue().as_hal::<Vulkan>() }.ok_or("wgpu's queue is not Vulkan")?.as_raw()
    } else {
        // SAFETY: queue 0 of the device's family exists (the crate's device made it).
        unsafe { d.get_device_queue(dev.queue_family(), 0) }
    };
    let slots: Vec<(Option<&CudaImage>, &SharedImage, &SharedBuffer)> = if shape.on_wgpu {
        ctx.wgpu_slots.iter().map(|s| (s.surface.as_ref(), s.texture.image(), &s.raw_dst)).collect()
    } else {
        ctx.ash_slots.iter().map(|s| (s.surface.as_ref(), &s.image, &s.dst)).collect()
    };
    let per_frame = if shape.eight {
        8
    } else if shape.split {
        3
    } else {
        1
    };
    let pool = Pool::new(dev, per_frame * k as u32)?;
    let p = ctx.protocol(dev)?;
    let own = Plain::new(dev, true)?;
    let relay = [Plain::new(dev, false)?, Plain::new(dev, false)?];
    let tracer = if trace { Some(Tracer::new(ctx, dev, frames)?) } else { None };
    let transfer = vk::PipelineStageFlags::TRANSFER;
    let read_access = ImageAccess::TRANSFER_READ;
    let dst_write = (transfer, vk::AccessFlags::TRANSFER_WRITE);
    let range = vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(1);
    let region = ctx.region();
    // Take the buffers (and, for the copy alone, the images: cleared, then copy sources) from CUDA.
    dev.submit_one_shot(&[], &[], |cmd| {
        for (_, image, dst) in &slots {
            // SAFETY: a one-shot command buffer of `dev`, recording; CUDA owns both (at rest).
            unsafe {
                dst.cmd_acquire(cmd, dst_write);
                if !shape.handoff {
                    image.cmd_acquire(cmd, ImageAccess::TRANSFER_WRITE);
                    let clear = vk::ClearColorValue { float32: [0.2, 0.4, 0.6, 0.8] };
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
    let (warmup, last) = (a.warmup, a.warmup + frames - 1);
    let run = timed(warmup, frames, trace, |f, step| {
        let s = (f % k) as usize;
        let (surface, image, dst) = slots[s];
        let stamps = tracer.as_ref().map_or(0, |t| t.stamps(f));
        if shape.handoff {
            ctx.compute(&p, surface, f, stamps)?;
            step.cuda();
        }
        let cmds = &pool.2[s * per_frame as usize..(s + 1) * per_frame as usize];
        let ts = tracer.as_ref().and_then(|t| t.queries(f));
        // SAFETY: the slot's command buffers, not pending (frame f − K finished: the throttle);
        // with a hand-off CUDA owns the image until the acquire; without, Vulkan owns it in
        // TRANSFER_SRC_OPTIMAL; the buffer is Vulkan's and large enough for `region`; each
        // timestamp is written once after its pool's reset.
        unsafe {
            let begin = |cmd| {
                d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                    .map_err(vkerr("vkBeginCommandBuffer"))
            };
            let end = |cmd| d.end_command_buffer(cmd).map_err(vkerr("vkEndCommandBuffer"));
            let stamp = |cmd, i: u32| {
                if let Some((q, first)) = ts {
                    q.write(cmd, first + i);
                }
            };
            let copy = |cmd| {
                d.cmd_copy_image_to_buffer(cmd, image.image(), read_access.layout(), dst.buffer(), &[region])
            };
            if !shape.handoff {
                let cmd = cmds[0];
                begin(cmd)?;
                let waw = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                    .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
                d.cmd_pipeline_barrier(
                    cmd,
                    transfer,
                    transfer,
                    vk::DependencyFlags::empty(),
                    &[waw],
                    &[],
                    &[],
                );
                copy(cmd);
                end(cmd)?;
            } else if shape.split {
                begin(cmds[0])?;
                image.cmd_acquire(cmds[0], read_access);
                stamp(cmds[0], 0);
                end(cmds[0])?;
                begin(cmds[1])?;
                copy(cmds[1]);
                end(cmds[1])?;
                begin(cmds[2])?;
                image.cmd_release(cmds[2], read_access);
                stamp(cmds[2], 1);
                end(cmds[2])?;
            } else if !shape.eight {
                let cmd = cmds[0];
                begin(cmd)?;
                image.cmd_acquire(cmd, read_access);
                stamp(cmd, 0);
                copy(cmd);
                image.cmd_release(cmd, read_access);
                stamp(cmd, 1);
                end(cmd)?;
            } else {
                // As wgpu-4cb reaches the queue: each of its four command buffers behind a transit
                // buffer of wgpu's, the barriers where wgpu and the crate put them.
                let all = vk::PipelineStageFlags::ALL_COMMANDS;
                let general = ImageAccess::general(all, ANY);
                for (i, &cmd) in cmds.iter().enumerate() {
                    begin(cmd)?;
                    match i {
                        1 => {
                            image.cmd_acquire(cmd, general);
                            stamp(cmd, 0);
                        }
                        2 => image.cmd_transition(cmd, general, read_access),
                        3 => copy(cmd),
                        4 => image.cmd_transition(cmd, read_access, general),
                        7 => {
                            image.cmd_release(cmd, ImageAccess::general(all, vk::AccessFlags::MEMORY_WRITE));
                            stamp(cmd, 1);
                        }
                        _ => {}
                    }
                    end(cmd)?;
                }
            }
        }
        step.recorded();
        if !shape.pad.is_zero() {
            spin_until(Instant::now() + shape.pad);
        }
        let v = values.signal(f);
        let mut waits = vec![];
        if shape.handoff {
            waits.push((p.written.handle(), v, vk::PipelineStageFlags::ALL_COMMANDS));
        }
        let i = (f % 2) as usize;
        if shape.relay && f > 0 {
            waits.push((relay[1 - i].1, 0, vk::PipelineStageFlags::TOP_OF_PIPE));
        }
        let mut signals = vec![(own.1, v)];
        if shape.handoff {
            signals.push((p.read.handle(), v));
        }
        if shape.relay {
            signals.push((relay[i].1, 0));
        }
        // SAFETY: the device's queue, used by this thread only (wgpu submits nothing meanwhile);
        // the handles above are live; each binary relay semaphore is signalled by frame f and
        // waited by frame f + 1, in submission order.
        unsafe {
            if shape.split {
                submit(d, queue, &cmds[..1], &waits, &[])?;
                submit(d, queue, &cmds[1..2], &[], &[])?;
                submit(d, queue, &cmds[2..], &[], &signals)?;
            } else {
                submit(d, queue, cmds, &waits, &signals)?;
            }
        }
        step.submitted();
        if f + 1 >= k {
            let x = values.signal(f + 1 - k);
            match shape.throttle {
                Throttle::Own => own.wait(x)?,
                Throttle::OwnSpin => spin_to(|| own.value(), x)?,
                Throttle::Exported => p.read.wait(x)?,
            }
        }
        Ok(())
    });
    let run = run?;
    own.wait(values.signal(last))?;
    ctx.synchronize()?;
    let gpu = match tracer {
        Some(t) => Some(t.finish()?),
        None => None,
    };
    // Back to CUDA (at rest), then each buffer to the host once.
    dev.submit_one_shot(&[], &[], |cmd| {
        for (_, image, dst) in &slots {
            // SAFETY: a one-shot command buffer of `dev`, recording; Vulkan owns the buffer,
            // and the image too without a hand-off (last accessed by the copies).
            unsafe {
                dst.cmd_release(cmd, dst_write);
                if !shape.handoff {
                    image.cmd_release(cmd, read_access);
                }
            }
        }
    })?;
    for (s, (_, _, dst)) in slots.iter().enumerate() {
        let got = dev.read_buffer(dst, None, None)?;
        let f = ctx.last_of(warmup + frames, s);
        let what =
            format!("{}, slot {s}, frame {f}", if shape.handoff { "raw hand-off" } else { "ash-only" });
        if shape.handoff {
            ctx.check(&what, &got, painted(f))?;
        } else {
            ctx.check(&what, &got, |_, _| CLEARED)?;
        }
    }
    Ok((run, gpu))
}

fn cuda_only(ctx: &Ctx<'_>, frames: u64) -> Res<Run> {
    let Some(c) = &ctx.cuda else { return Err("cuda-only needs CUDA".into()) };
    let k = ctx.a.k;
    // CUDA events for the throttle: a host wait on CUDA's own completion (never a semaphore
    // value CUDA signals, issue 34).
    let events: Vec<CudaEvent> = (0..k).map(|_| c.cuda.event(false)).collect::<Result<_, _>>()?;
    // CUDA's side of the protocol: the kernel, then the signal (nobody waits on it).
    let p = ctx.protocol(ctx.vk)?;
    let (cw, _) = p.cuda.as_ref().ok_or("no CUDA semaphores")?;
    let run = timed(ctx.a.warmup, frames, false, |f, step| {
        let surface = ctx.ash_slots[(f % k) as usize].surface.as_ref().ok_or("no surface")?;
        c.cuda.frame(None, Some((cw, ctx.values.signal(f))), |_| paint(c, surface, ctx.a.grid, f, 0))?;
        c.cuda.record(&events[(f % k) as usize])?;
        step.cuda();
        if f + 1 >= k {
            events[((f + 1 - k) % k) as usize].synchronize()?;
        }
        Ok(())
    })?;
    c.cuda.synchronize()?;
    for (s, slot) in ctx.ash_slots.iter().enumerate() {
        let f = ctx.last_of(ctx.a.warmup + frames, s);
        let got = ctx.vk.read_image(&slot.image, None, None)?;
        check(
            &format!("cuda-only, slot {s}, frame {f}"),
            &got,
            ctx.a.grid.0 as usize * 4,
            ctx.a.grid,
            painted(f),
        )?;
    }
    Ok(run)
}

#[derive(Clone, Copy)]
struct WgpuShape {
    handoff: bool,
    /// `[acquire, copy, general, release]` (`WgpuDevice::release`).
    four: bool,
    /// The throttle spins on `read`, then `poll(Poll)`.
    spin: bool,
    /// The crate's barriers in raw submissions of their own, before and after wgpu's.
    raw_subs: bool,
}

fn wgpu_shape(c: Config) -> WgpuShape {
    let base = WgpuShape { handoff: true, four: false, spin: false, raw_subs: false };
    match c {
        Config::Wgpu => base,
        Config::Wgpu4 => WgpuShape { four: true, ..base },
        Config::WgpuSpin => WgpuShape { spin: true, ..base },
        Config::Wgpu3Sub => WgpuShape { raw_subs: true, ..base },
        Config::WgpuOnly => WgpuShape { handoff: false, ..base },
        _ => unreachable!("not a wgpu configuration"),
    }
}

fn wgpu_loop(ctx: &Ctx<'_>, shape: WgpuShape, frames: u64, trace: bool) -> Res<(Run, Option<Gpu>)> {
    let (gpu, k, values) = (ctx.gpu, ctx.a.k, ctx.values);
    let (device, wq) = (gpu.device(), gpu.queue());
    let p = ctx.protocol(gpu.vulkan())?;
    let tracer = if trace { Some(Tracer::new(ctx, gpu.vulkan(), frames)?) } else { None };
    // wgpu-3sub: the crate's barriers in command buffers of the benchmark's own, on wgpu's queue.
    let d = gpu.vulkan().ash();
    let pool = if shape.raw_subs { Some(Pool::new(gpu.vulkan(), 2 * k as u32)?) } else { None };
    let own = Plain::new(gpu.vulkan(), true)?;
    // SAFETY: the handle only; the raw submissions come from this thread, between wgpu's.
    let queue = unsafe { wq.as_hal::<Vulkan>() }.ok_or("wgpu's queue is not Vulkan")?.as_raw();
    let layout = wgpu::TexelCopyBufferLayout { bytes_per_row: Some(ctx.pitch), ..Default::default() };
    let size = wgpu::Extent3d { width: ctx.a.grid.0, height: ctx.a.grid.1, depth_or_array_layers: 1 };
    let mut pending: VecDeque<(wgpu::SubmissionIndex, u64)> = VecDeque::new();
    let wait = |index: wgpu::SubmissionIndex| {
        device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None }).map(drop)
    };
    let attach = |sem: &Sem, v: u64, wait: bool| -> Res<()> {
        match sem {
            Sem::Shared(s) if wait => gpu.wait_next_submit(s, v)?,
            Sem::Shared(s) => gpu.signal_next_submit(s, v)?,
            Sem::Plain(plain) => {
                // SAFETY: the guard adds a semaphore to wgpu's next submit only.
                let q = unsafe { wq.as_hal::<Vulkan>() }.ok_or("wgpu's queue is not Vulkan")?;
                if wait {
                    q.add_wait_semaphore(plain.1, Some(v), vk::PipelineStageFlags::ALL_COMMANDS);
                } else {
                    q.add_signal_semaphore(plain.1, Some(v));
                }
            }
        }
        Ok(())
    };
    let (warmup, last) = (ctx.a.warmup, ctx.a.warmup + frames - 1);
    let run = timed(warmup, frames, trace, |f, step| {
        let WgpuSlot { surface, texture, plain, dst, .. } = &ctx.wgpu_slots[(f % k) as usize];
        let stamps = tracer.as_ref().map_or(0, |t| t.stamps(f));
        if shape.handoff {
            ctx.compute(&p, surface.as_ref(), f, stamps)?;
            step.cuda();
            if !shape.raw_subs {
                attach(&p.written, values.signal(f), true)?;
                attach(&p.read, values.signal(f), false)?;
            }
        }
        let mut encoder = device.create_command_encoder(&Default::default());
        let source = if shape.handoff { texture.texture() } else { plain };
        encoder.copy_texture_to_buffer(
            source.as_image_copy(),
            wgpu::TexelCopyBufferInfo { buffer: dst, layout },
            size,
        );
        let ts = tracer.as_ref().and_then(|t| t.queries(f));
        let stamp = |i: u32| {
            move |cmd| {
                if let Some((q, first)) = ts {
                    // SAFETY: a timestamp of a pool on wgpu's device, written once after its
                    // reset, into the crate's command buffer, recording on wgpu's queue family.
                    unsafe { q.write(cmd, first + i) }
                }
            }
        };
        let index = if let Some(pool) = &pool {
            let (acquire, release) = (pool.2[2 * (f % k) as usize], pool.2[2 * (f % k) as usize + 1]);
            let (image, all) = (texture.image(), vk::PipelineStageFlags::ALL_COMMANDS);
            // SAFETY: the slot's two command buffers of wgpu's device, not pending (frame f − K
            // finished: the throttle); the barriers are `acquire` / `finish_and_release`'s, CUDA
            // owning the image before the first and after the second; `stamp` as said above.
            unsafe {
                let info = vk::CommandBufferBeginInfo::default();
                d.begin_command_buffer(acquire, &info).map_err(vkerr("vkBeginCommandBuffer"))?;
                image.cmd_acquire(acquire, ImageAccess::general(all, ANY));
                stamp(0)(acquire);
                d.end_command_buffer(acquire).map_err(vkerr("vkEndCommandBuffer"))?;
                d.begin_command_buffer(release, &info).map_err(vkerr("vkBeginCommandBuffer"))?;
                image.cmd_release(release, ImageAccess::general(all, vk::AccessFlags::MEMORY_WRITE));
                stamp(1)(release);
                d.end_command_buffer(release).map_err(vkerr("vkEndCommandBuffer"))?;
            }
            // wgpu's own transition back to GENERAL, as `finish_and_release` records it.
            encoder.transition_resources(
                std::iter::empty(),
                std::iter::once(wgpu::TextureTransition {
                    texture: texture.texture(),
                    selector: None,
                    state: wgpu::TextureUses::STORAGE_READ_WRITE,
                }),
            );
            let work = encoder.finish();
            step.recorded();
            let v = values.signal(f);
            let written = [(p.written.handle(), v, vk::PipelineStageFlags::ALL_COMMANDS)];
            // SAFETY: wgpu's queue, used by this thread only, between wgpu's own submissions; the
            // command buffers were just recorded; the semaphores are live timelines.
            unsafe { submit(d, queue, &[acquire], &written, &[]) }?;
            let index = wq.submit([work]);
            // SAFETY: as above.
            unsafe { submit(d, queue, &[release], &[], &[(p.read.handle(), v), (own.1, v)]) }?;
            index
        } else if !shape.handoff {
            step.recorded();
            wq.submit([encoder.finish()])
        } else if shape.four {
            // SAFETY: `stamp` writes a timestamp, as said above.
            let acquire = unsafe { gpu.acquire_with(&[texture], &[], stamp(0)) };
            // SAFETY: as above.
            let [general, release] = unsafe { gpu.release_with(&[texture], &[], stamp(1)) };
            let work = encoder.finish();
            step.recorded();
            wq.submit([acquire, work, general, release])
        } else {
            // SAFETY: `stamp` writes a timestamp, as said above.
            let acquire = unsafe { gpu.acquire_with(&[texture], &[], stamp(0)) };
            // SAFETY: as above.
            let [work, release] = unsafe { gpu.finish_and_release_with(encoder, &[texture], &[], stamp(1)) };
            step.recorded();
            wq.submit([acquire, work, release])
        };
        step.submitted();
        if shape.raw_subs {
            if f + 1 >= k {
                own.wait(values.signal(f + 1 - k))?;
                step.maintain(device)?;
            }
            return Ok(());
        }
        pending.push_back((index, f));
        while pending.len() as u64 > k - 1 {
            let (index, g) = pending.pop_front().expect("a frame");
            if shape.spin {
                p.read.spin(values.signal(g))?;
                step.maintain(device)?;
            } else {
                wait(index)?;
            }
        }
        Ok(())
    });
    let run = run?;
    pending.into_iter().try_for_each(|(index, _)| wait(index))?;
    if shape.handoff {
        p.read.wait(values.signal(last))?;
    }
    device.poll(wgpu::PollType::wait_indefinitely())?;
    ctx.synchronize()?;
    let gpu_trace = match tracer {
        Some(t) => Some(t.finish()?),
        None => None,
    };
    for (s, slot) in ctx.wgpu_slots.iter().enumerate() {
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&slot.dst, 0, &ctx.readback, 0, ctx.bytes);
        wait(wq.submit([encoder.finish()]))?;
        ctx.readback.map_async(wgpu::MapMode::Read, .., |r| r.expect("map the read-back buffer"));
        device.poll(wgpu::PollType::wait_indefinitely())?;
        let f = ctx.last_of(warmup + frames, s);
        let what = format!("{}, slot {s}, frame {f}", if shape.handoff { "wgpu" } else { "wgpu-only" });
        let got = ctx.readback.get_mapped_range(..)?.to_vec();
        ctx.readback.unmap();
        if shape.handoff {
            ctx.check(&what, &got, painted(f))?;
        } else {
            ctx.check(&what, &got, |_, _| CLEARED)?;
        }
    }
    Ok((run, gpu_trace))
}

/// One run of `config`: `frames` after the warm-up, traced or not.
fn run_config(
    ctx: &Ctx<'_>,
    config: Config,
    frames: u64,
    trace: bool,
    pad: Duration,
) -> Res<(Run, Option<Gpu>)> {
    match config {
        Config::CudaOnly => Ok((cuda_only(ctx, frames)?, None)),
        Config::Wgpu | Config::Wgpu4 | Config::WgpuSpin | Config::Wgpu3Sub | Config::WgpuOnly => {
            wgpu_loop(ctx, wgpu_shape(config), frames, trace)
        }
        _ => raw_loop(ctx, raw_shape(config, pad), frames, trace),
    }
}

// ---------------------------------------------------------------------------------------------

fn run(a: &Args) -> Res<()> {
    // CUDA first: without it the benchmark stops here (exit 2), before any Vulkan instance.
    let (uuids, importer): (Vec<[u8; 16]>, Importer) = if a.no_cuda {
        (vec![], Importer::Hip)
    } else {
        (devices()?.iter().map(|d| d.uuid).collect(), Importer::Cuda)
    };
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    if std::env::var_os("WGPU_VALIDATION").is_some() {
        desc.flags = wgpu::InstanceFlags::VALIDATION;
    }
    let instance = wgpu::Instance::new(desc);
    let gpu = WgpuDevice::open(&vulkan_adapter(&instance, &uuids)?, &Default::default(), importer)?;
    let vk = Device::open(&uuids, importer)?;
    if gpu.vulkan().uuid() != vk.uuid() {
        return Err("wgpu and the crate's device opened different GPUs".into());
    }
    let cuda = if a.no_cuda {
        None
    } else {
        let cuda = Cuda::open(vk.uuid())?;
        let module =
            cuda.load_module(&compile_to_image(KERNEL, "wgpu_handoff_cost", cuda.target()?, &[])?)?;
        let (paint, anchor) = (module.function("paint")?, module.function("anchor")?);
        let (anchor_mem, done) = (cuda.alloc_host(8)?, cuda.alloc(4)?);
        done.fill_u32(0, 1)?;
        Some(CudaSide { cuda, paint, anchor, anchor_mem, done })
    };
    println!("wgpu: {}\nash:  {}", gpu.vulkan().describe(), vk.describe());
    match &cuda {
        Some(c) => println!("cuda: {}", c.cuda.describe()),
        None => println!("cuda: none (--no-cuda: a host signal stands in for the kernel; times mean nothing, texels unchecked)"),
    }
    let configs: Vec<Config> =
        a.configs.iter().copied().filter(|c| cuda.is_some() || !c.needs_cuda()).collect();
    let ((w, h), k) = (a.grid, a.k);
    let pitch = (w * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let bytes = u64::from(pitch) * u64::from(h);
    let transfer = vk::PipelineStageFlags::TRANSFER;

    // The crate's device: the slots (AshSlot).
    let import = |image: &SharedImage| -> Res<Option<CudaImage>> {
        Ok(match &cuda {
            Some(c) => Some(c.cuda.import_image(image.export()?)?),
            None => None,
        })
    };
    let mut ash_slots = Vec::new();
    for _ in 0..k {
        let (image, dst) = (vk.shared_image(ImageFormat::Rgba8Unorm, w, h)?, vk.shared_buffer(bytes)?);
        // SAFETY: a one-shot command buffer of `vk`, recording; the image and buffer are new.
        vk.submit_one_shot(&[], &[], |cmd| unsafe {
            image.cmd_prepare(cmd);
            dst.cmd_release(cmd, (transfer, vk::AccessFlags::empty()));
        })?;
        ash_slots.push(AshSlot { surface: import(&image)?, image, dst });
    }

    // wgpu's device: the slots (WgpuSlot).
    let (device, wq) = (gpu.device(), gpu.queue());
    let size = wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 };
    let buffer = |usage, size| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: false })
    };
    let mut wgpu_slots = Vec::new();
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
        let raw_dst = gpu.vulkan().shared_buffer(bytes)?;
        wgpu_slots.push(WgpuSlot { surface: import(texture.image())?, texture, plain, dst, raw_dst });
    }
    device.poll(wgpu::PollType::wait_indefinitely())?; // the textures are CUDA's before it writes
    gpu.vulkan().submit_one_shot(&[], &[], |cmd| {
        for slot in &wgpu_slots {
            // SAFETY: a one-shot command buffer of wgpu's device, recording; the buffer is new.
            unsafe { slot.raw_dst.cmd_release(cmd, (transfer, vk::AccessFlags::empty())) };
        }
    })?;
    let readback = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, bytes);
    let ctx = Ctx {
        a,
        cuda,
        vk: &vk,
        gpu: &gpu,
        ash_slots,
        wgpu_slots,
        readback,
        pitch,
        bytes,
        values: FrameValues { slots: k },
    };

    // Rounds of every configuration, odd rounds backwards.
    let mut results: Vec<Vec<Run>> = configs.iter().map(|_| Vec::new()).collect();
    let mut pad = Duration::ZERO;
    for r in 0..a.rounds {
        let mut order: Vec<usize> = (0..configs.len()).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if configs[i] == Config::Raw8Pad {
                pad = host_pad(&configs, &results);
            }
            let (run, _) = run_config(&ctx, configs[i], a.frames, false, pad)?;
            results[i].push(run);
        }
    }
    // One traced run of each hand-off configuration.
    let mut traced = Vec::new();
    if a.trace > 0 {
        for &c in configs.iter().filter(|c| c.traced()) {
            let before = ctx.cuda.as_ref().map(anchor).transpose()?;
            let (run, gpu_trace) = run_config(&ctx, c, a.trace, true, Duration::ZERO)?;
            let after = ctx.cuda.as_ref().map(anchor).transpose()?;
            let map = before.zip(after).map(|(b, e)| HostMap::from(b, e));
            traced.push(Traced { config: c, run, gpu: gpu_trace.unwrap_or_default(), map });
        }
    }
    report(a, &configs, &results, pad, &traced)?;
    Ok(())
}

/// `wgpu-4cb`'s median host time per frame (CUDA, record, submit) over `raw+8cb`'s, so far.
fn host_pad(configs: &[Config], results: &[Vec<Run>]) -> Duration {
    let busy = |c: Config| {
        let i = configs.iter().position(|&x| x == c)?;
        let all: Vec<f64> =
            results[i].iter().flat_map(|r| r.phases.iter().map(|p| p[0] + p[1] + p[2] + p[4])).collect();
        (!all.is_empty()).then(|| median(&all))
    };
    match (busy(Config::Wgpu4), busy(Config::Raw8)) {
        (Some(w), Some(r)) if w > r => Duration::from_secs_f64((w - r) * 1e-6),
        _ => Duration::ZERO,
    }
}

fn report(a: &Args, configs: &[Config], results: &[Vec<Run>], pad: Duration, traced: &[Traced]) -> Res<()> {
    let ((w, h), k) = (a.grid, a.k);
    let mut out = String::new();
    writeln!(
        out,
        "grid {w}x{h} RGBA8, K = {k}: {} rounds x {} frames (after {} warm-up) of each, interleaved; us per frame",
        a.rounds, a.frames, a.warmup
    )?;
    writeln!(
        out,
        "{:<12} {:>8} {:>8} {:>8} {:>15}  | host (medians): {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "config", "median", "p5", "p95", "round medians", "cuda", "record", "submit", "wait", "maint", "busy"
    )?;
    let med = |c: Config| -> Option<f64> {
        let i = configs.iter().position(|&x| x == c)?;
        let all: Vec<f64> = results[i].concat_frames();
        Some(median(&all))
    };
    for (c, rounds) in configs.iter().zip(results) {
        let mut all: Vec<f64> = rounds.concat_frames();
        all.sort_by(f64::total_cmp);
        let per_round: Vec<f64> = rounds.iter().map(|r| median(&r.frames)).collect();
        let (lo, hi) = per_round.iter().fold((f64::MAX, 0f64), |(l, h), &m| (l.min(m), h.max(m)));
        let phase =
            |j: usize| median(&rounds.iter().flat_map(|r| r.phases.iter().map(|p| p[j])).collect::<Vec<_>>());
        let busy = median(
            &rounds
                .iter()
                .flat_map(|r| r.phases.iter().map(|p| p[0] + p[1] + p[2] + p[4]))
                .collect::<Vec<_>>(),
        );
        writeln!(
            out,
            "{:<12} {:>8.1} {:>8.1} {:>8.1} {:>15}  |                 {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1}",
            c.name(),
            quantile(&all, 0.5),
            quantile(&all, 0.05),
            quantile(&all, 0.95),
            format!("{lo:.1}..{hi:.1}"),
            phase(0),
            phase(1),
            phase(2),
            phase(3),
            phase(4),
            busy
        )?;
    }
    writeln!(
        out,
        "  host: cuda = CUDA's calls; record = encoders or command buffers (wgpu: create_command_encoder .. finish, and the \
         crate's acquire / release); submit = queue.submit (wgpu's includes its transit command buffers and maintain(Poll)) \
         or vkQueueSubmit; wait = the throttle's (wgpu's poll(Wait) includes its clean-up); maint = poll(Poll) after a spin \
         or a wait of the loop's own; busy = all but wait"
    )?;
    // The ladder: each rung against the one it adds to.
    let rungs = [
        (Config::Ash, None),
        (Config::Raw, Some(Config::Ash)),
        (Config::RawSem, Some(Config::Raw)),
        (Config::Raw8, Some(Config::RawSem)),
        (Config::Wgpu4, Some(Config::Raw8)),
        (Config::Wgpu, Some(Config::Wgpu4)),
        (Config::Raw8Pad, Some(Config::Raw8)),
        (Config::Raw3Sub, Some(Config::Raw)),
        (Config::Wgpu3Sub, Some(Config::Raw3Sub)),
        (Config::AshExt, Some(Config::Ash)),
        (Config::AshSpin, Some(Config::Ash)),
        (Config::WgpuSpin, Some(Config::Wgpu)),
    ];
    writeln!(out, "ladder (median us per frame; each step against the row it names):")?;
    for (c, base) in rungs {
        let Some(m) = med(c) else { continue };
        let step = match base.and_then(|b| Some((b, med(b)?))) {
            Some((b, mb)) => format!("{:+7.1} vs {:<8}", m - mb, b.name()),
            None => format!("{:>19}", ""),
        };
        let extra = if c == Config::Raw8Pad { format!(" (pad {:.1} us)", us(pad)) } else { String::new() };
        writeln!(out, "  {:<12} {m:>7.1} {step}  {}{extra}", c.name(), c.what())?;
    }
    let ratio = |num: Config, den: Config| -> Option<(f64, f64, f64, f64)> {
        let (i, j) = (configs.iter().position(|&x| x == num)?, configs.iter().position(|&x| x == den)?);
        let per: Vec<f64> =
            results[i].iter().zip(&results[j]).map(|(n, d)| median(&n.frames) / median(&d.frames)).collect();
        let (lo, hi) = per.iter().fold((f64::MAX, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
        let (mn, md) = (med(num)?, med(den)?);
        Some((mn / md, lo, hi, mn - md))
    };
    let mut ok = String::new();
    for num in [Config::Wgpu, Config::Wgpu4, Config::Wgpu3Sub] {
        if let Some((r, lo, hi, extra)) = ratio(num, Config::Ash) {
            writeln!(out, "{}/ash {r:.2} (rounds {lo:.2}..{hi:.2}), {extra:+.1} us/frame", num.name())?;
            write!(ok, "{}{}/ash {r:.2}", if ok.is_empty() { "" } else { ", " }, num.name())?;
        }
    }
    let over = |c: Config, copy: Config| Some(med(c)? - med(copy)?);
    let mut line = String::new();
    for (c, copy) in
        [(Config::Ash, Config::AshOnly), (Config::Wgpu, Config::WgpuOnly), (Config::Wgpu4, Config::WgpuOnly)]
    {
        if let Some(x) = over(c, copy) {
            write!(line, "{}{} {x:+.1}", if line.is_empty() { "" } else { ", " }, c.name())?;
        }
    }
    if !line.is_empty() {
        writeln!(out, "over the copy alone: {line} us/frame (the kernel and the hand-off)")?;
    }
    if !traced.is_empty() {
        trace_report(&mut out, a, traced)?;
    }
    print!("{out}");
    let checked: u64 = results.iter().map(|r| r.len() as u64).sum::<u64>() * k + traced.len() as u64 * k;
    let note = if ok.is_empty() { String::new() } else { format!("{ok}; ") };
    println!("wgpu_handoff_cost: OK ({note}{checked} frames checked)");
    Ok(())
}

trait Frames {
    fn concat_frames(&self) -> Vec<f64>;
}

impl Frames for Vec<Run> {
    fn concat_frames(&self) -> Vec<f64> {
        self.iter().flat_map(|r| r.frames.iter().copied()).collect()
    }
}

/// The traced runs: per configuration the medians of the spans on the GPU timer, then (with
/// `--trace-out`) every frame as CSV.
fn trace_report(out: &mut String, a: &Args, traced: &[Traced]) -> Res<()> {
    let k = a.k as usize;
    let accuracy = traced.iter().filter_map(|t| t.map.map(|m| m.accuracy)).fold(0f64, f64::max);
    writeln!(
        out,
        "gpu trace ({} frames of each after {} warm-up; GPU timer, us, medians; host marks mapped {}):",
        a.trace,
        a.warmup,
        if traced.iter().any(|t| t.map.is_some()) {
            format!("to +-{accuracy:.1} us")
        } else {
            "not at all (no CUDA)".into()
        }
    )?;
    writeln!(
        out,
        "{:<10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "config",
        "kernel",
        "k->v",
        "vulkan",
        "period",
        "other",
        "ready->v",
        "ready->k",
        "sub->v",
        "wake",
        "order ok"
    )?;
    for t in traced {
        let n = t.gpu.vulkan.len().min(t.gpu.kernel.len()).min(t.run.marks.len());
        let g = |h: Instant| t.map.map(|m| m.gpu(h));
        let (mut kern, mut kv, mut vul, mut period, mut other) = (vec![], vec![], vec![], vec![], vec![]);
        let (mut ready_v, mut ready_k, mut sub_v, mut wake) = (vec![], vec![], vec![], vec![]);
        let (mut ordered, mut pairs) = (0usize, 0usize);
        for i in 0..n {
            let (kc, vc) = (t.gpu.kernel[i], t.gpu.vulkan[i]);
            let m = t.run.marks[i].0;
            if let Some((k0, k1)) = kc {
                kern.push((k1 - k0) / 1e3);
                // The kernel could start once CUDA's launch was made and frame i − K was read.
                if let (Some(hc), Some(Some((_, v2)))) = (g(m[1]), i.checked_sub(k).map(|j| t.gpu.vulkan[j]))
                {
                    ready_k.push((k0 - hc.max(v2)) / 1e3);
                }
            }
            if let Some((v1, v2)) = vc {
                vul.push((v2 - v1) / 1e3);
                if let Some(Some((_, p2))) = i.checked_sub(1).map(|j| t.gpu.vulkan[j]) {
                    period.push((v2 - p2) / 1e3);
                    if let Some((k0, k1)) = kc {
                        other.push((v2 - p2 - (k1 - k0) - (v2 - v1)) / 1e3);
                    }
                }
                if let Some(hs) = g(m[3]) {
                    sub_v.push((v1 - hs) / 1e3);
                    if let Some((_, k1)) = kc {
                        ready_v.push((v1 - k1.max(hs)) / 1e3);
                    }
                }
                // The host waited for frame i at the end of frame i + K − 1, from its submit on.
                if let Some(mm) = t.run.marks.get(i + k - 1) {
                    if let (Some(from), Some(woke)) = (g(mm.0[3]), g(mm.0[4])) {
                        if from < v2 {
                            wake.push((woke - v2) / 1e3);
                        }
                    }
                }
            }
            if let (Some((_, k1)), Some((v1, _))) = (kc, vc) {
                kv.push((v1 - k1) / 1e3);
                pairs += 1;
                ordered += usize::from(v1 + 1e3 >= k1);
            }
        }
        let order = if pairs > 0 { format!("{ordered}/{pairs}") } else { "-".into() };
        let wake_s = format!("{:.1} ({}%)", median(&wake), wake.len() * 100 / n.max(1));
        writeln!(
            out,
            "{:<10} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>8.1} {:>8.1} {:>8.1} {:>8} {:>9}",
            t.config.name(),
            median(&kern),
            median(&kv),
            median(&vul),
            median(&period),
            median(&other),
            median(&ready_v),
            median(&ready_k),
            median(&sub_v),
            wake_s,
            order
        )?;
        if let Some(dir) = &a.trace_out {
            write_csv(dir, a, t)?;
        }
    }
    writeln!(
        out,
        "  kernel, vulkan: the kernel's and the hand-off's spans (after the acquire .. after the release); k->v: kernel end -> \
         hand-off start; period: hand-off end to end; other: period - kernel - vulkan; ready->v: hand-off start - max(kernel end, \
         host submit); ready->k: kernel start - max(launch, frame f-K's end); sub->v: host submit -> hand-off start; wake: the \
         throttle's return after the frame's end (% of frames it blocked); order ok: hand-offs that started after their kernel"
    )?;
    Ok(())
}

fn write_csv(dir: &std::path::Path, a: &Args, t: &Traced) -> Res<()> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("trace-{}x{}-{}.csv", a.grid.0, a.grid.1, t.config.name().replace('+', "_")));
    // Zero: the first traced frame's start on the GPU timer (host marks mapped), or, without a
    // mapping, host columns from the first start and GPU columns from the first GPU stamp.
    let first_host = t.run.marks.first().map(|m| m.0[0]);
    let first_gpu = t
        .gpu
        .kernel
        .iter()
        .flatten()
        .map(|k| k.0)
        .chain(t.gpu.vulkan.iter().flatten().map(|v| v.0))
        .fold(f64::MAX, f64::min);
    let zero = match (t.map, first_host) {
        (Some(m), Some(h)) => m.gpu(h),
        _ => first_gpu,
    };
    let mut csv = String::from("frame,h_start,h_cuda,h_record,h_submit,h_end,k_start,k_end,v_start,v_end\n");
    let cell = |x: Option<f64>| x.map_or(String::new(), |x| format!("{:.3}", (x - zero) / 1e3));
    for (i, m) in t.run.marks.iter().enumerate() {
        write!(csv, "{}", i as u64 + a.warmup)?;
        for h in m.0 {
            let x = match (t.map, first_host) {
                (Some(map), _) => Some(map.gpu(h)),
                (None, Some(h0)) => Some(zero + (h - h0).as_nanos() as f64),
                _ => None,
            };
            write!(csv, ",{}", cell(x))?;
        }
        let kk = t.gpu.kernel.get(i).copied().flatten();
        let vv = t.gpu.vulkan.get(i).copied().flatten();
        writeln!(
            csv,
            ",{},{},{},{}",
            cell(kk.map(|k| k.0)),
            cell(kk.map(|k| k.1)),
            cell(vv.map(|v| v.0)),
            cell(vv.map(|v| v.1))
        )?;
    }
    std::fs::write(&path, csv)?;
    Ok(())
}
