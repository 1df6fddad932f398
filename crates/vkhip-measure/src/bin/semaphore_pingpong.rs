//! What a host wait on a semaphore costs, per round trip of tiny work, in every way the host can
//! wait (issue 34: `vkWaitSemaphores` on a value CUDA signalled woke ≈ 8.5–10 ms late on NVIDIA).
//! Two shared timelines made and exported by the crate and imported into CUDA: `a`, which CUDA
//! signals after a 1-thread kernel, and `b`, which Vulkan signals after a 256-byte
//! `vkCmdFillBuffer`. The schemes, interleaved round by round:
//! - CUDA alone (kernel, signal `a`), the host waiting with the crate's `SharedSemaphore::wait`,
//!   with CUDA's stream synchronisation, spinning on `SharedSemaphore::value`, and with plain
//!   `vkWaitSemaphores` (`SharedSemaphore::wait_blocking`: the trap);
//! - Vulkan alone (fill, signal `b`), waited with `wait` and with `wait_blocking`;
//! - Vulkan ⇄ CUDA with both waits on the GPU (CUDA waits `b`, Vulkan waits `a`; the host keeps
//!   one round trip queued ahead and waits `b` with `wait`);
//! - Vulkan ⇄ CUDA with the host in between: kernel, `wait` on `a`, fill, `wait` on `b`.
//!
//! Then one long wait: a kernel holds the stream for `--hold-ms` before CUDA signals `a`, waited
//! with `wait`, stream synchronisation and `wait_blocking`: wall time and CPU time.
//!
//!     cargo run --release -p vkhip-measure --bin semaphore_pingpong -- \
//!         [--round-trips N] [--warmup N] [--rounds R] [--hold-ms MS]
//!
//! Exit codes: 0 all checked and the crate's wait within 2× of CUDA's stream synchronisation,
//! 1 beyond that, a wrong value, a failed call or a bad argument (one line), 2 no usable CUDA
//! device, with one line on stderr.

use ash::vk;
use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vkhip_interop::cuda::{devices, Cuda, CudaHostMemory, CudaKernel, CudaSemaphore};
use vkhip_interop::vulkan::{Device, Importer, SharedBuffer, SharedSemaphore};
use vkhip_interop::FrameStream;

type Res<T> = Result<T, Box<dyn Error>>;

/// `stamp` writes `v` through `p` (one thread); `hold` keeps its thread busy for `ns` of the GPU's
/// global timer.
const KERNEL: &str = r#"
extern "C" __global__ void stamp(unsigned int* p, unsigned int v) { *p = v; }
extern "C" __global__ void hold(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}
"#;
const USAGE: &str =
    "usage: semaphore_pingpong [--round-trips N>=10] [--warmup N] [--rounds 1..100] [--hold-ms 1..10000]";
const WAIT: Duration = Duration::from_secs(30);
/// What every fill writes (64 words of the 256-byte buffer).
const PATTERN: u32 = 0x5eed_f111;
const SCHEMES: [&str; 8] = [
    "cuda, crate wait",
    "cuda, stream sync",
    "cuda, spin on value",
    "cuda, vkWaitSemaphores",
    "vulkan, crate wait",
    "vulkan, vkWaitSemaphores",
    "vk<>cuda, GPU waits",
    "vk<>cuda, host waits",
];
/// The two schemes the exit code compares.
const CRATE_WAIT: usize = 0;
const STREAM_SYNC: usize = 1;

struct Args {
    round_trips: u64,
    warmup: u64,
    rounds: u64,
    hold_ms: u64,
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("semaphore_pingpong: error: {e}; {USAGE}");
            return ExitCode::from(1);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("semaphore_pingpong: no usable CUDA device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("semaphore_pingpong: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args { round_trips: 500, warmup: 100, rounds: 3, hold_ms: 100 };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |lo: u64, hi: u64| match value.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(format!("{flag} {value:?}: expected a whole number in {lo}..={hi}")),
        };
        match flag.as_str() {
            "--round-trips" => a.round_trips = number(10, 10_000_000)?,
            "--warmup" => a.warmup = number(0, 10_000_000)?,
            "--rounds" => a.rounds = number(1, 100)?,
            "--hold-ms" => a.hold_ms = number(1, 10_000)?,
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    Ok(a)
}

/// CPU time of `clock` (`CLOCK_THREAD_CPUTIME_ID`, `CLOCK_PROCESS_CPUTIME_ID`).
fn cpu(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a live timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The command pool, and two command buffers that each fill the buffer (used in turn).
struct Pool(ash::Device, vk::CommandPool, Vec<vk::CommandBuffer>);

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: the pool is ours; waiting for the device first leaves nothing pending.
        unsafe {
            let _ = self.0.device_wait_idle();
            self.0.destroy_command_pool(self.1, None);
        }
    }
}

fn vkerr(call: &'static str) -> impl Fn(vk::Result) -> vkhip_interop::Error {
    move |r| vkhip_interop::Error::vulkan(call, r)
}

/// Both sides of the ping-pong, and the values signalled so far on `a` (CUDA) and `b` (Vulkan).
/// CUDA's imports are declared (so dropped) before the Vulkan semaphores they import.
struct PingPong<'a> {
    cuda: &'a Cuda,
    stamp: CudaKernel,
    out: CudaHostMemory,
    ca: CudaSemaphore,
    cb: CudaSemaphore,
    vk: &'a Device,
    queue: vk::Queue,
    pool: Pool,
    a: SharedSemaphore,
    b: SharedSemaphore,
    na: u64,
    nb: u64,
}

impl PingPong<'_> {
    /// CUDA: (wait `b` ≥ its last value on the GPU), the kernel stamps the next value of `a`,
    /// signal `a`.
    fn kernel(&mut self, wait_b: bool) -> Res<u64> {
        self.na += 1;
        let (mut p, mut v) = (self.out.device_ptr(), self.na as u32);
        let wait = wait_b.then_some((&self.cb, self.nb));
        self.cuda.frame(wait, Some((&self.ca, self.na)), |c| {
            let mut args = [&mut p as *mut u64 as *mut c_void, &mut v as *mut u32 as *mut c_void];
            // SAFETY: `stamp(unsigned*, unsigned)`: pointers to a live value of each type; `p`
            // is `out`'s first word, which lives until the stream is idle.
            unsafe { c.launch(&self.stamp, [1, 1, 1], [1, 1, 1], &mut args) }
        })?;
        Ok(self.na)
    }

    /// Vulkan: the fill, (waiting `a` ≥ `wait_a` on the GPU), signalling the next value of `b`.
    fn fill(&mut self, wait_a: Option<u64>) -> Res<u64> {
        self.nb += 1;
        let n = usize::from(wait_a.is_some());
        let (wait, wait_value) = ([self.a.handle()], [wait_a.unwrap_or(0)]);
        let (signal, signal_value) = ([self.b.handle()], [self.nb]);
        let stage = [vk::PipelineStageFlags::TRANSFER];
        let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_value[..n])
            .signal_semaphore_values(&signal_value);
        let cmd = [self.pool.2[(self.nb % 2) as usize]];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&wait[..n])
            .wait_dst_stage_mask(&stage[..n])
            .command_buffers(&cmd)
            .signal_semaphores(&signal)
            .push_next(&mut tl);
        // SAFETY: the device's queue, used by this thread only; the command buffer is not
        // pending (the host waited for the `b` value of its previous use); the handles are live.
        unsafe { self.vk.ash().queue_submit(self.queue, &[submit], vk::Fence::null()) }
            .map_err(vkerr("vkQueueSubmit"))?;
        Ok(self.nb)
    }

    /// One round trip of `scheme` (an index into `SCHEMES`).
    fn step(&mut self, scheme: usize) -> Res<()> {
        match scheme {
            0..=3 => {
                let v = self.kernel(false)?;
                match scheme {
                    0 => self.a.wait(v, WAIT)?,
                    1 => self.cuda.synchronize()?,
                    2 => {
                        while self.a.value()? < v {
                            std::hint::spin_loop();
                        }
                    }
                    _ => self.a.wait_blocking(v, WAIT)?,
                }
            }
            4 | 5 => {
                let v = self.fill(None)?;
                if scheme == 4 {
                    self.b.wait(v, WAIT)?
                } else {
                    self.b.wait_blocking(v, WAIT)?
                }
            }
            6 => {
                let v = self.kernel(true)?;
                let done = self.fill(Some(v))? - 1;
                self.b.wait(done, WAIT)?;
            }
            _ => {
                let v = self.kernel(false)?;
                self.a.wait(v, WAIT)?;
                let v = self.fill(None)?;
                self.b.wait(v, WAIT)?;
            }
        }
        Ok(())
    }

    /// One run: `warmup` + `round_trips` round trips of `scheme`; the µs of each timed one and the
    /// thread's CPU µs per round trip. Checks both timelines and the last stamp afterwards.
    fn run(&mut self, a: &Args, scheme: usize) -> Res<(Vec<f64>, f64)> {
        let mut times = Vec::with_capacity(a.round_trips as usize);
        let (mut last, mut cpu0) = (Instant::now(), cpu(libc::CLOCK_THREAD_CPUTIME_ID));
        for i in 0..a.warmup + a.round_trips {
            if i == a.warmup {
                cpu0 = cpu(libc::CLOCK_THREAD_CPUTIME_ID);
            }
            self.step(scheme)?;
            let now = Instant::now();
            if i >= a.warmup {
                times.push((now - last).as_secs_f64() * 1e6);
            }
            last = now;
        }
        let cpu_us = (cpu(libc::CLOCK_THREAD_CPUTIME_ID) - cpu0).as_secs_f64() * 1e6 / a.round_trips as f64;
        self.b.wait(self.nb, WAIT)?;
        self.cuda.synchronize()?;
        let stamp = u32::from_ne_bytes(self.out.bytes()[..4].try_into()?);
        let got = (self.a.value()?, self.b.value()?, stamp);
        if got != (self.na, self.nb, self.na as u32) {
            return Err(format!(
                "{}: (a, b, stamp) = {got:?}, expected {:?}",
                SCHEMES[scheme],
                (self.na, self.nb, self.na)
            )
            .into());
        }
        Ok((times, cpu_us))
    }

    /// A kernel holds the stream `hold`, then CUDA signals `a`; the host waits with `how` (0 the
    /// crate's wait, 1 stream sync, 2 `vkWaitSemaphores`): (wall, thread CPU, process CPU).
    fn long_wait(&mut self, hold: Duration, how: usize, kernel: &CudaKernel) -> Res<[Duration; 3]> {
        self.na += 1;
        let mut ns = hold.as_nanos() as u64;
        let start = (Instant::now(), cpu(libc::CLOCK_THREAD_CPUTIME_ID), cpu(libc::CLOCK_PROCESS_CPUTIME_ID));
        self.cuda.frame(None, Some((&self.ca, self.na)), |c| {
            let mut args = [&mut ns as *mut u64 as *mut c_void];
            // SAFETY: `hold(unsigned long long)`: a pointer to a live u64.
            unsafe { c.launch(kernel, [1, 1, 1], [1, 1, 1], &mut args) }
        })?;
        match how {
            0 => self.a.wait(self.na, WAIT)?,
            1 => self.cuda.synchronize()?,
            _ => self.a.wait_blocking(self.na, WAIT)?,
        }
        let end = (Instant::now(), cpu(libc::CLOCK_THREAD_CPUTIME_ID), cpu(libc::CLOCK_PROCESS_CPUTIME_ID));
        self.cuda.synchronize()?;
        Ok([end.0 - start.0, end.1 - start.1, end.2 - start.2])
    }
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

fn run(a: &Args) -> Res<bool> {
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Cuda)?;
    let cuda = Cuda::open(vk.uuid())?;
    println!("vulkan: {}\ncuda:   {}", vk.describe(), cuda.describe());
    let (stamp, hold) = (cuda.compile(KERNEL, "stamp")?, cuda.compile(KERNEL, "hold")?);
    let (ta, tb) = (vk.shared_timeline(0)?, vk.shared_timeline(0)?);
    let (ca, cb) = (cuda.import_timeline(ta.export()?)?, cuda.import_timeline(tb.export()?)?);

    // The fill's buffer: Vulkan's from here on (taken from the compute API once, given back at
    // the end for the read-back); two command buffers: a write-after-write barrier, the fill.
    let buffer: SharedBuffer = vk.shared_buffer(256)?;
    let write = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
    // SAFETY: a one-shot command buffer of `vk`, recording; nothing else uses the buffer.
    vk.submit_one_shot(&[], &[], |cmd| unsafe { buffer.cmd_acquire(cmd, write) })?;
    let d = vk.ash();
    let info = vk::CommandPoolCreateInfo::default().queue_family_index(vk.queue_family());
    // SAFETY: the live device; `Pool` destroys the pool before the device goes.
    let pool = unsafe { d.create_command_pool(&info, None) }.map_err(vkerr("vkCreateCommandPool"))?;
    let mut pool = Pool(d.clone(), pool, vec![]);
    let alloc = vk::CommandBufferAllocateInfo::default().command_pool(pool.1).command_buffer_count(2);
    // SAFETY: the pool above.
    pool.2 = unsafe { d.allocate_command_buffers(&alloc) }.map_err(vkerr("vkAllocateCommandBuffers"))?;
    let waw = vk::MemoryBarrier::default().src_access_mask(write.1).dst_access_mask(write.1);
    for &cmd in &pool.2 {
        // SAFETY: a new command buffer of the pool; the buffer is Vulkan's and 256 bytes long.
        unsafe {
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .map_err(vkerr("vkBeginCommandBuffer"))?;
            d.cmd_pipeline_barrier(cmd, write.0, write.0, vk::DependencyFlags::empty(), &[waw], &[], &[]);
            d.cmd_fill_buffer(cmd, buffer.buffer(), 0, 256, PATTERN);
            d.end_command_buffer(cmd).map_err(vkerr("vkEndCommandBuffer"))?;
        }
    }
    // SAFETY: queue 0 of the device's family exists (the crate's device made it).
    let queue = unsafe { d.get_device_queue(vk.queue_family(), 0) };
    let out = cuda.alloc_host(4)?;
    let mut pp =
        PingPong { cuda: &cuda, stamp, out, ca, cb, vk: &vk, queue, pool, a: ta, b: tb, na: 0, nb: 0 };

    let mut results: Vec<Vec<(Vec<f64>, f64)>> = vec![Vec::new(); SCHEMES.len()];
    for r in 0..a.rounds {
        let mut order: Vec<usize> = (0..SCHEMES.len()).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        for s in order {
            results[s].push(pp.run(a, s)?);
        }
    }
    let hold_for = Duration::from_millis(a.hold_ms);
    let long: Vec<[Duration; 3]> =
        (0..3).map(|how| pp.long_wait(hold_for, how, &hold)).collect::<Res<_>>()?;
    drop(pp.pool);
    // SAFETY: a one-shot command buffer of `vk`, recording; the queue is idle (`Pool`'s drop).
    vk.submit_one_shot(&[], &[], |cmd| unsafe { buffer.cmd_release(cmd, write) })?;
    let bytes = vk.read_buffer(&buffer, None, None)?;
    if let Some(i) = bytes.chunks_exact(4).position(|w| u32::from_ne_bytes(w.try_into().unwrap()) != PATTERN)
    {
        return Err(format!("the fill's buffer: word {i} is not {PATTERN:#x}").into());
    }

    println!(
        "{} rounds x {} round trips (after {} warm-up) of each scheme, interleaved; us per round trip",
        a.rounds, a.round_trips, a.warmup
    );
    println!(
        "{:<26} {:>9} {:>9} {:>9}   {:<20} {:>11}",
        "scheme", "median", "p5", "p95", "round medians", "cpu us/rt"
    );
    let mut medians = Vec::new();
    for (name, runs) in SCHEMES.iter().zip(&results) {
        let mut all: Vec<f64> = runs.iter().flat_map(|r| r.0.iter().copied()).collect();
        all.sort_by(f64::total_cmp);
        let per_round: Vec<f64> = runs.iter().map(|r| median(&r.0)).collect();
        let (lo, hi) = per_round.iter().fold((f64::MAX, 0f64), |(l, h), &m| (l.min(m), h.max(m)));
        let cpu_us = median(&runs.iter().map(|r| r.1).collect::<Vec<_>>());
        let (q5, q50, q95) = (quantile(&all, 0.05), quantile(&all, 0.5), quantile(&all, 0.95));
        let spread = format!("{lo:.1}..{hi:.1}");
        println!("{name:<26} {q50:>9.1} {q5:>9.1} {q95:>9.1}   {spread:<20} {cpu_us:>11.1}");
        medians.push(q50);
    }
    println!("one long wait: a kernel holds the stream {} ms, then CUDA signals", a.hold_ms);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (name, [wall, thread, process]) in ["crate wait", "stream sync", "vkWaitSemaphores"].iter().zip(&long)
    {
        let (late, share) = (ms(*wall) - a.hold_ms as f64, thread.as_secs_f64() / wall.as_secs_f64() * 100.0);
        println!(
            "  {name:<17} wall {:.3} ms ({late:+.3} ms past the hold), thread CPU {:.3} ms ({share:.1}% of a core), process CPU {:.3} ms",
            ms(*wall),
            ms(*thread),
            ms(*process)
        );
    }
    let ratio = medians[CRATE_WAIT] / medians[STREAM_SYNC];
    let share = long[0][1].as_secs_f64() / long[0][0].as_secs_f64() * 100.0;
    let summary = format!(
        "crate wait {:.1} us per round trip, {ratio:.2}x CUDA's stream sync ({:.1} us; limit 2x); a {} ms wait used {share:.1}% of a core",
        medians[CRATE_WAIT], medians[STREAM_SYNC], a.hold_ms
    );
    if ratio > 2.0 {
        println!("semaphore_pingpong: FAIL: {summary}");
        return Ok(false);
    }
    println!("semaphore_pingpong: OK ({summary})");
    Ok(true)
}
