//! What one profiler scope costs the thread that records it, in host ns, on each kind of track
//! (issue 39: the cost measured where it is made). Per track, batches of scopes are recorded with
//! nothing inside them, timed around the recording only; after each batch the work is submitted,
//! waited for and `end_frame` resolves it (untimed). The same loop with a disabled profiler is
//! the floor a scope cannot go under (the calls themselves).
//!
//! | track | a scope is | needs |
//! |---|---|---|
//! | `host` | two `CLOCK_MONOTONIC` reads and the profiler's lock | nothing |
//! | `vulkan` | two `vkCmdWriteTimestamp` into a command buffer (hostQueryReset on: no reset command) | any Vulkan device, lavapipe too |
//! | `cuda-kernel` | two one-thread stamp-kernel launches on the stream (the default) | a CUDA device |
//! | `cuda-events` | two CUDA event records | a CUDA device |
//!
//! Each track runs `--rounds` rounds of `--batches` batches of `--scopes` scopes (after one
//! untimed round), interleaved with its disabled twin round by round. Printed per track: the
//! median over the rounds of ns per scope, min–max, and the same for the disabled profiler; and
//! what an empty scope spans on its track's own clock (on a GPU track, what its two marks cost
//! the GPU, from the marks' own times); then `profile_scope_cost: OK`.
//!
//!     cargo run --release -p vkhip-measure --bin profile_scope_cost -- \
//!         [--scopes N] [--batches N] [--rounds R] [--tracks host,vulkan,cuda-kernel,cuda-events]
//!
//! Without a CUDA device the CUDA tracks print one `skipped` line each; without any Vulkan
//! device the Vulkan and CUDA tracks do. Exit codes: 0 done, 1 a failed call or a bad argument
//! (one line on stderr).

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;
use vkhip_interop::cuda::{devices, Cuda};
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_measure::Commands;
use vkhip_profile::{CudaStamps, Options, Profiler};

const NAME: &str = "profile_scope_cost";
const TRACKS: [&str; 4] = ["host", "vulkan", "cuda-kernel", "cuda-events"];

fn main() -> ExitCode {
    env_logger::init();
    let args = match Args::parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{NAME}: error: {e}");
            return ExitCode::from(1);
        }
    };
    match run(&args) {
        Ok(()) => {
            println!("{NAME}: OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{NAME}: error: {e}");
            ExitCode::from(1)
        }
    }
}

struct Args {
    scopes: u32,
    batches: u32,
    rounds: u32,
    tracks: Vec<String>,
}

impl Args {
    fn parse() -> Result<Args, Box<dyn Error>> {
        let mut a = Args { scopes: 1000, batches: 20, rounds: 7, tracks: TRACKS.map(String::from).to_vec() };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
            let number = |v: String, lo: u32, hi: u32| -> Result<u32, Box<dyn Error>> {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or_else(|| format!("{arg} {v:?}: expected a whole number in {lo}..={hi}").into())
            };
            match arg.as_str() {
                // Two queries or stamp slots a scope, 4096 a track: at most 2000 scopes a batch.
                "--scopes" => a.scopes = number(value()?, 10, 2000)?,
                "--batches" => a.batches = number(value()?, 1, 10_000)?,
                "--rounds" => a.rounds = number(value()?, 1, 100)?,
                "--tracks" => {
                    a.tracks = value()?.split(',').map(String::from).collect();
                    if let Some(t) = a.tracks.iter().find(|t| !TRACKS.contains(&t.as_str())) {
                        return Err(format!("--tracks: unknown track {t:?} (of {})", TRACKS.join(",")).into());
                    }
                }
                _ => return Err(format!("unknown argument {arg:?}").into()),
            }
        }
        Ok(a)
    }
}

fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    println!(
        "{NAME}: host ns per scope (two marks), median of {} rounds of {} × {} scopes [min–max]; disabled: the same calls on a disabled profiler",
        args.rounds, args.batches, args.scopes
    );
    let wants = |t: &str| args.tracks.iter().any(|x| x == t);
    if wants("host") {
        host(args)?;
    }
    let gpu_tracks = ["vulkan", "cuda-kernel", "cuda-events"];
    if !gpu_tracks.iter().any(|t| wants(t)) {
        return Ok(());
    }
    let cuda_uuids: Vec<[u8; 16]> = devices().map(|d| d.iter().map(|d| d.uuid).collect()).unwrap_or_default();
    let importer = if cuda_uuids.is_empty() { Importer::Hip } else { Importer::Cuda };
    let vk = match Device::open(&cuda_uuids, importer) {
        Ok(vk) => vk,
        Err(e) => {
            for t in gpu_tracks.iter().filter(|t| wants(t)) {
                println!("{t:<12} skipped: no usable Vulkan device: {e}");
            }
            return Ok(());
        }
    };
    println!("vulkan: {}", vk.describe());
    if wants("vulkan") {
        vulkan(args, &vk)?;
    }
    for (track, stamps) in [("cuda-kernel", CudaStamps::Kernel), ("cuda-events", CudaStamps::Events)] {
        if wants(track) {
            match Cuda::open(vk.uuid()) {
                Ok(c) => cuda(args, track, &vk, &c, stamps)?,
                Err(e) => println!("{track:<12} skipped: no usable CUDA device: {e}"),
            }
        }
    }
    Ok(())
}

/// A profiler of `options`, on `vk` or host-only.
fn profiler(vk: Option<&Device>, options: &Options, enabled: bool) -> Result<Profiler, Box<dyn Error>> {
    let options = Options { enabled, ..options.clone() };
    Ok(match vk {
        Some(vk) => Profiler::new(vk, options)?,
        None => Profiler::host_only(options, Vec::new()),
    })
}

/// One untimed round each, then `--rounds` rounds of on and off interleaved (the order swapped
/// every round); `batch(enabled)` records one batch and returns the ns its scopes took. Prints
/// the track's line; fails if the enabled profiler dropped or lost a scope.
fn interleave(
    args: &Args,
    track: &str,
    on: &Profiler,
    mut batch: impl FnMut(bool) -> Result<u64, Box<dyn Error>>,
) -> Result<(), Box<dyn Error>> {
    let mut round = |enabled: bool| -> Result<f64, Box<dyn Error>> {
        let mut ns = 0;
        for _ in 0..args.batches {
            ns += batch(enabled)?;
        }
        Ok(ns as f64 / f64::from(args.batches * args.scopes))
    };
    round(true)?;
    round(false)?;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for r in 0..args.rounds {
        for enabled in if r % 2 == 0 { [true, false] } else { [false, true] } {
            let ns = round(enabled)?;
            if enabled {
                with.push(ns)
            } else {
                without.push(ns)
            }
        }
    }
    let stats = on.stats();
    if stats.dropped_full + stats.lost > 0 {
        return Err(format!("{track}: {} scopes dropped, {} lost", stats.dropped_full, stats.lost).into());
    }
    let line = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        format!("{:.0} ns [{:.0}–{:.0}]", v[v.len() / 2], v[0], v[v.len() - 1])
    };
    println!(
        "{track:<12} {} per scope; disabled {}; {} items resolved",
        line(&mut with),
        line(&mut without),
        stats.items
    );
    Ok(())
}

/// Host scopes on this thread.
fn host(args: &Args) -> Result<(), Box<dyn Error>> {
    let profs = [profiler(None, &Options::default(), true)?, profiler(None, &Options::default(), false)?];
    let threads = [profs[0].host_thread("main"), profs[1].host_thread("main")];
    interleave(args, "host", &profs[0], |enabled| {
        let i = usize::from(!enabled);
        let t0 = Instant::now();
        for _ in 0..args.scopes {
            let _s = threads[i].scope("s");
        }
        let ns = t0.elapsed().as_nanos() as u64;
        profs[i].end_frame()?;
        Ok(ns)
    })?;
    drop(threads);
    let [on, off] = profs;
    drop(off);
    span_line("host", on, "main")
}

/// Vulkan scopes in one command buffer, submitted once per batch and waited for.
fn vulkan(args: &Args, vk: &Device) -> Result<(), Box<dyn Error>> {
    let profs =
        [profiler(Some(vk), &Options::default(), true)?, profiler(Some(vk), &Options::default(), false)?];
    let queues = [profs[0].vulkan_queue("graphics")?, profs[1].vulkan_queue("graphics")?];
    let cmds = Commands::new(vk, 1, 1)?;
    interleave(args, "vulkan", &profs[0], |enabled| {
        let i = usize::from(!enabled);
        // SAFETY: the command buffer is not in use (the last batch's fence was waited for).
        let cmd = unsafe { cmds.begin(0, 0) }?;
        let t0 = Instant::now();
        for _ in 0..args.scopes {
            // SAFETY: `cmd` records until `end_command_buffer` below, after the scope's end;
            // the device has hostQueryReset where the crate's `Device::open` could enable it,
            // and the scope is outside any render pass either way.
            let _s = unsafe { queues[i].scope(cmd, "s") };
        }
        let ns = t0.elapsed().as_nanos() as u64;
        cmds.submit(0, 0, &[], &[], true)?;
        cmds.wait(0)?;
        queues[i].submitted(&[], &[]);
        profs[i].end_frame()?;
        Ok(ns)
    })?;
    drop(queues);
    let [on, off] = profs;
    off.finish()?;
    span_line("vulkan", on, "graphics")
}

/// CUDA scopes on the stream (nothing inside them), synchronised once per batch.
fn cuda(args: &Args, track: &str, vk: &Device, c: &Cuda, stamps: CudaStamps) -> Result<(), Box<dyn Error>> {
    // Room for a whole batch of scopes in the ring (two marks each): a scope begun while the ring
    // is full would be dropped, not measured (the events ring's default holds 512).
    let marks = 2 * args.scopes + 16;
    let options = Options {
        cuda_stamps: stamps,
        events_per_stream: marks,
        stamps_per_stream: marks,
        ..Options::default()
    };
    let profs = [profiler(Some(vk), &options, true)?, profiler(Some(vk), &options, false)?];
    let streams = [profs[0].cuda_stream("stream", c)?, profs[1].cuda_stream("stream", c)?];
    interleave(args, track, &profs[0], |enabled| {
        let i = usize::from(!enabled);
        let t0 = Instant::now();
        for _ in 0..args.scopes {
            let _s = streams[i].scope("s")?;
        }
        let ns = t0.elapsed().as_nanos() as u64;
        c.synchronize()?;
        profs[i].end_frame()?;
        Ok(ns)
    })?;
    drop(streams);
    let [on, off] = profs;
    off.finish()?;
    span_line(track, on, "stream")
}

/// What an empty scope spans on its own track's clock (on a GPU track: what its two marks cost
/// the GPU, from the marks' own times), from the finished profiler's report.
fn span_line(track: &str, on: Profiler, track_name: &str) -> Result<(), Box<dyn Error>> {
    let report = on.finish()?.report();
    let f = &report.scope(track_name, "s").ok_or("no scope in the report")?.duration;
    println!(
        "{track:<12} an empty scope spans p50 {} ns, p99 {} ns, mean {:.0} ns on its track's clock ({} scopes)",
        f.p50_ns, f.p99_ns, f.mean_ns, f.count
    );
    Ok(())
}
