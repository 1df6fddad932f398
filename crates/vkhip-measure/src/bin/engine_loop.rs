//! An engine's loop, profiled, and the report's GPU busy time checked against the union of its
//! own scopes (issue 39's acceptance): per frame f, slot s = f mod K, Vulkan "renders" (fills
//! buffer A[s]) and signals `rendered`; CUDA waits for it, filters A[s] into B[s] (B = 2A + 1)
//! and signals `written`; Vulkan waits for that and copies spots of B[s] to a host buffer — two
//! Vulkan ⇄ CUDA switches a frame, two Vulkan submissions, one queue. The host reads each slot's
//! results K frames later, once its fence says the copy is done, and checks every spot.
//!
//! At the end it prints the profiler's report, then the report's GPU busy per frame next to the
//! union of each frame's top-level GPU scopes computed here from the capture's timeline, and
//! the late scopes: exit 1 unless they agree (same frame count, means within 1 ns) with none late.
//!
//!     cargo run --release -p vkhip-measure --bin engine_loop -- [--frames N] [--k K] [--size N]
//!
//! Exit codes: 0 the figures agree, the checker found no hazard and every value was right; 1 any
//! of those failed (said on stdout) or a bad argument; 2 no usable CUDA device (one line on
//! stderr); 3 any other failure.

use ash::vk;
use std::collections::BTreeMap;
use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::cuda::{devices, Cuda};
use vkhip_interop::vulkan::{Device, Importer, SharedBuffer};
use vkhip_interop::FrameStream;
use vkhip_measure::{Commands, HostFloats};
use vkhip_profile::model::{Item, Timeline};
use vkhip_profile::{Options, Profiler, Submission};

const NAME: &str = "engine_loop";
const KERNEL: &str = r#"
extern "C" __global__ void filter(const float* a, float* b, unsigned int n)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = 2.0f * a[i] + 1.0f;
}
"#;
/// Values the copy reads per frame, which the host checks.
const SPOTS: u32 = 64;

fn main() -> ExitCode {
    env_logger::init();
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) if e.is::<ArgError>() => {
            eprintln!("{NAME}: error: {e}");
            ExitCode::from(1)
        }
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

#[derive(Debug)]
struct ArgError(String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for ArgError {}

struct Args {
    frames: u64,
    k: u64,
    size: u32,
}

fn args() -> Result<Args, ArgError> {
    let mut a = Args { frames: 600, k: 2, size: 256 };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value = it.next().ok_or_else(|| ArgError(format!("{arg} needs a value")))?;
        let number =
            |lo: u64, hi: u64| {
                value.parse::<u64>().ok().filter(|n| (lo..=hi).contains(n)).ok_or_else(|| {
                    ArgError(format!("{arg} {value:?}: expected a whole number in {lo}..={hi}"))
                })
            };
        match arg.as_str() {
            "--frames" => a.frames = number(10, 10_000_000)?,
            "--k" => a.k = number(1, 8)?,
            "--size" => a.size = number(16, 8192)? as u32,
            _ => return Err(ArgError(format!("unknown argument {arg:?}"))),
        }
    }
    Ok(a)
}

fn run() -> Result<bool, Box<dyn Error>> {
    let args = args()?;
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Cuda)?;
    let cuda = Cuda::open(vk.uuid())?;
    println!("vulkan: {}\ncuda:   {}", vk.describe(), cuda.describe());
    let (k, n) = (args.k as usize, args.size * args.size);
    let bytes = u64::from(n) * 4;
    let a: Vec<SharedBuffer> = (0..k).map(|_| vk.shared_buffer(bytes)).collect::<Result<_, _>>()?;
    let b: Vec<SharedBuffer> = (0..k).map(|_| vk.shared_buffer(bytes)).collect::<Result<_, _>>()?;
    let (rendered, written) = (vk.shared_timeline(0)?, vk.shared_timeline(0)?);
    let ca = a.iter().map(|x| cuda.import_buffer(x.export()?)).collect::<Result<Vec<_>, _>>()?;
    let cb = b.iter().map(|x| cuda.import_buffer(x.export()?)).collect::<Result<Vec<_>, _>>()?;
    let (c_rendered, c_written) =
        (cuda.import_timeline(rendered.export()?)?, cuda.import_timeline(written.export()?)?);
    let kernel = cuda.compile(KERNEL, "filter")?;
    let slots = Slots::new(&vk, k)?;

    let prof = Profiler::new(&vk, Options::default())?;
    let (queue, stream, host) =
        (prof.vulkan_queue("graphics")?, prof.cuda_stream("filter", &cuda)?, prof.host_thread("main"));
    let p_a: Vec<_> = (0..k).map(|s| prof.resource(format!("A[{s}]"))).collect();
    let p_b: Vec<_> = (0..k).map(|s| prof.resource(format!("B[{s}]"))).collect();
    let p_spots: Vec<_> = (0..k).map(|s| prof.resource(format!("spots[{s}]"))).collect();
    let (p_rendered, p_written) = (prof.semaphore("rendered"), prof.semaphore("written"));
    let mut copies = vec![Submission::default(); k];
    let mut wrong = 0u64;
    let transfer = vk::PipelineStageFlags::TRANSFER;
    for f in 0..args.frames {
        let s = (f % args.k) as usize;
        let v = f + 1;
        // The host: slot s's results of frame f − K, read now that its copy is done.
        if f >= args.k {
            slots.wait(s)?;
            queue.waited(copies[s]);
            let _check = host.scope("check").reads(&p_spots[s]);
            wrong += u64::from(!slots.check(s, f - args.k));
        }
        // Vulkan renders A[s] (after the filter of frame f − K read it), signals `rendered`.
        let reuse = (f >= args.k).then(|| f + 1 - args.k);
        let cmd = slots.begin(s, 0)?;
        {
            // SAFETY: `cmd` records until `submit` ends it, after this scope.
            let _render = unsafe { queue.scope(cmd, "render") }.writes(&p_a[s]);
            // SAFETY: `cmd` is recording, for the device's queue family; A[s] holds n floats.
            unsafe {
                a[s].cmd_acquire(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE));
                vk.ash().cmd_fill_buffer(cmd, a[s].buffer(), 0, bytes, value(f).to_bits());
                a[s].cmd_release(cmd, (transfer, vk::AccessFlags::TRANSFER_WRITE));
            }
        }
        let waits: Vec<_> = reuse.map(|w| (&written, w)).into_iter().collect();
        slots.cmds.submit(s, 0, &waits, &[(&rendered, v)], false)?;
        let p_waits: Vec<_> = reuse.map(|w| (&p_written, w)).into_iter().collect();
        queue.submitted(&p_waits, &[(&p_rendered, v)]);

        // CUDA filters A[s] into B[s] once Vulkan rendered it, signals `written`.
        cuda.wait(&c_rendered, v)?;
        stream.wait(&p_rendered, v);
        {
            let _filt = stream.scope("filt")?.reads(&p_a[s]).writes(&p_b[s]);
            let (mut src, mut dst, mut count) = (ca[s].device_ptr(), cb[s].device_ptr(), n);
            let mut params = [
                (&mut src as *mut u64).cast::<c_void>(),
                (&mut dst as *mut u64).cast::<c_void>(),
                (&mut count as *mut u32).cast::<c_void>(),
            ];
            // SAFETY: `filter(const float*, float*, unsigned int)` loaded through `cuda`: one
            // pointer per parameter, in order; both buffers map n floats and outlive the stream's
            // work.
            unsafe { cuda.launch(&kernel, [n.div_ceil(256), 1, 1], [256, 1, 1], &mut params) }?;
        }
        cuda.signal(&c_written, v)?;
        stream.signal(&p_written, v);

        // Vulkan copies spots of B[s] to the host once CUDA wrote it; the slot's fence.
        let cmd = slots.begin(s, 1)?;
        {
            // SAFETY: `cmd` records until `submit` ends it, after this scope.
            let _copy = unsafe { queue.scope(cmd, "copy") }.reads(&p_b[s]).writes(&p_spots[s]);
            // SAFETY: `cmd` is recording; B[s] holds n floats.
            unsafe { slots.record_copy(cmd, s, &b[s], n) };
        }
        slots.cmds.submit(s, 1, &[(&written, v)], &[], true)?;
        copies[s] = queue.submitted(&[(&p_written, v)], &[]);
        prof.end_frame()?;
    }
    for f in args.frames.saturating_sub(args.k)..args.frames {
        let s = (f % args.k) as usize;
        slots.wait(s)?;
        wrong += u64::from(!slots.check(s, f));
    }
    cuda.synchronize()?;
    stream.synchronized();
    drop((queue, stream, host));

    let capture = prof.finish()?;
    let report = capture.report();
    println!("{report}");
    let union = union_per_frame(capture.timeline());
    let mean = union.values().sum::<u64>() as f64 / union.len().max(1) as f64;
    let busy = &report.gpu_busy;
    let agree =
        busy.count == union.len() as u64 && (busy.mean_ns - mean).abs() < 1.0 && report.late_scopes == 0;
    println!(
        "{NAME}: K = {}, {} frames: the report's GPU busy per frame mean {:.3} µs over {} frames, {} scopes late; the union of each frame's top-level GPU scopes mean {:.3} µs over {} frames: {}",
        args.k,
        args.frames,
        busy.mean_ns / 1e3,
        busy.count,
        report.late_scopes,
        mean / 1e3,
        union.len(),
        if agree { "equal" } else { "DIFFERENT" }
    );
    println!("values: {wrong} of {} frames wrong", args.frames);
    let clean = report.check.is_clean();
    Ok(agree && clean && wrong == 0)
}

/// What frame f renders (exact in f32).
fn value(f: u64) -> f32 {
    (f % 4096) as f32
}

/// Per frame, the length of the union of its top-level scopes on GPU tracks (ns), from the
/// timeline itself: the intervals sorted by start, merged as they overlap.
fn union_per_frame(tl: &Timeline) -> BTreeMap<u64, u64> {
    let mut spans: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for (t, items) in tl.items.iter().enumerate() {
        if !tl.names.tracks.get(t).is_some_and(|t| t.api.is_gpu()) {
            continue;
        }
        for item in items {
            if let Item::Scope(s) = item {
                if s.depth == 0 {
                    spans.entry(s.frame).or_default().push((s.start_ns, s.end_ns));
                }
            }
        }
    }
    spans
        .into_iter()
        .map(|(f, mut v)| {
            v.sort_unstable();
            let (mut total, mut open) = (0, None::<(u64, u64)>);
            for (a, b) in v {
                open = match open {
                    Some((oa, ob)) if a <= ob => Some((oa, ob.max(b))),
                    Some((oa, ob)) => {
                        total += ob - oa;
                        Some((a, b))
                    }
                    None => Some((a, b)),
                };
            }
            (f, total + open.map_or(0, |(a, b)| b - a))
        })
        .collect()
}

/// Per slot: the render and copy command buffers with the copy's fence, and the host buffer
/// the copy writes the spots into (dropped after the commands, which wait for the queue).
struct Slots {
    cmds: Commands,
    spots: Vec<HostFloats>,
    vk: Device,
}

impl Slots {
    fn new(vk: &Device, k: usize) -> Result<Slots, Box<dyn Error>> {
        let spots = (0..k).map(|_| HostFloats::new(vk, SPOTS as usize)).collect::<Result<_, _>>()?;
        Ok(Slots { cmds: Commands::new(vk, k, 2)?, spots, vk: vk.clone() })
    }

    fn wait(&self, s: usize) -> Result<(), Box<dyn Error>> {
        self.cmds.wait(s)
    }

    /// Whether slot `s` holds frame `f`'s filtered values (its fence waited for).
    fn check(&self, s: usize, f: u64) -> bool {
        let want = 2.0 * value(f) + 1.0;
        // SAFETY: the copy that wrote them finished (the caller waited for the slot's fence),
        // and the next is recorded only after this check.
        unsafe { self.spots[s].read() }.iter().all(|&v| v == want)
    }

    /// Begin slot `s`'s command buffer `which` (0 render, 1 copy).
    fn begin(&self, s: usize, which: usize) -> Result<vk::CommandBuffer, Box<dyn Error>> {
        // SAFETY: the slot's fence was waited for before (at frame f ≥ K), or never submitted:
        // the fence covers both of the slot's submissions of frame f − K.
        unsafe { self.cmds.begin(s, which) }
    }

    /// Record the copy of SPOTS spread values of `b` (n floats) to slot `s`'s host buffer.
    ///
    /// # Safety
    /// `cmd` is slot `s`'s copy command buffer, recording; `b` holds n floats.
    unsafe fn record_copy(&self, cmd: vk::CommandBuffer, s: usize, b: &SharedBuffer, n: u32) {
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let stride = n / SPOTS;
        let regions: Vec<vk::BufferCopy> = (0..SPOTS)
            .map(|j| vk::BufferCopy {
                src_offset: u64::from(j * stride) * 4,
                dst_offset: u64::from(j) * 4,
                size: 4,
            })
            .collect();
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        let d = self.vk.ash();
        // SAFETY: per this function's contract.
        unsafe {
            b.cmd_acquire(cmd, (transfer, vk::AccessFlags::TRANSFER_READ));
            d.cmd_copy_buffer(cmd, b.buffer(), self.spots[s].buffer, &regions);
            d.cmd_pipeline_barrier(
                cmd,
                transfer,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
            b.cmd_release(cmd, (transfer, vk::AccessFlags::empty()));
        }
    }
}
