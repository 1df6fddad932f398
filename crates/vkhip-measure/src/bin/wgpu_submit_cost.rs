//! What one more `wgpu::CommandBuffer` in a submit costs, in wgpu alone (wgpu 30, Vulkan backend;
//! no vkhip-interop): the smallest program for wgpu's issue tracker behind issue 32. The same N
//! tiny copies (256 bytes each) go to the queue every frame in one command buffer ("merged") or in
//! N ("split"), 3 frames in flight (`Device::poll(Wait)` on frame f − 2); the host time per frame
//! is split into encoding (create the encoders, record, `finish`), `Queue::submit` and the poll.
//!
//! What it shows, read in wgpu's source: each `wgpu::CommandBuffer` is its own encoder (a
//! command pool of wgpu-hal's), encoded at `finish`, given a command buffer of wgpu's own in front
//! at submit ("Transit": `vkBeginCommandBuffer` / `vkEndCommandBuffer` even with no barrier), and
//! its pool reset (`vkResetCommandPool`) when `poll` sees it done; the submit is one
//! `vkQueueSubmit` whatever N. So the split column grows with N where the merged one barely does,
//! and on the GPU each Vulkan command buffer is one more for the driver to chain.
//!
//! The 8 configurations (N = 1, 2, 4, 8; merged, split) run interleaved so that clocks ramping and caches
//! warming fall on all alike: an untimed warm-up block of each, then ROUNDS rounds of a block of each
//! (FRAMES_PER_BLOCK frames, queue drained after), the order rotated each round, reversed every other.
//! Printed: per configuration, the median over the rounds of each round's mean µs per frame, encode,
//! submit and poll [min, max over the rounds]; per N, split − merged frame time (median of per-round
//! differences [min, max]): N − 1 more command buffers, and per buffer. N = 1 (same work) is the self-check.
//!
//!     cargo run --release -p vkhip-measure --features wgpu --bin wgpu_submit_cost -- 300 7
//!
//! `-- [FRAMES_PER_BLOCK] [ROUNDS]`: default 300 (at least 10) and 7 (1 to 100); any Vulkan adapter,
//! lavapipe too. Exit codes: 0 done, 1 a failed call or bad argument, 2 no Vulkan adapter (one line).

use std::collections::VecDeque;
use std::ops::RangeInclusive;
use std::process::ExitCode;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

const COPY: u64 = 256;
const NS: [u64; 4] = [1, 2, 4, 8];
const USAGE: &str = "usage: wgpu_submit_cost [FRAMES_PER_BLOCK] [ROUNDS]";

/// wgpu's native futures are ready when returned.
fn ready<F: std::future::Future>(f: F) -> Option<F::Output> {
    match std::pin::pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// The median of `v`, its min and its max.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    ((v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0, v[0], v[v.len() - 1])
}

/// Argument `at` of `[FRAMES_PER_BLOCK] [ROUNDS]`, or its default.
fn arg(at: usize, name: &str, default: usize, range: RangeInclusive<usize>) -> Result<usize, String> {
    let Some(a) = std::env::args().nth(at) else { return Ok(default) };
    let bad = format!("{name} {a:?}: expected a whole number in {range:?} ({USAGE})");
    a.parse().ok().filter(|n| range.contains(n)).ok_or(bad)
}

fn main() -> ExitCode {
    let args = (arg(1, "FRAMES_PER_BLOCK", 300, 10..=1_000_000), arg(2, "ROUNDS", 7, 1..=100));
    let (frames, rounds) = match (args, std::env::args().nth(3)) {
        ((Ok(frames), Ok(rounds)), None) => (frames, rounds),
        ((Err(e), _) | (_, Err(e)), _) => return fail(&e),
        (_, Some(a)) => return fail(&format!("{a:?}: at most 2 arguments ({USAGE})")),
    };
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    (desc.backends, desc.flags) = (wgpu::Backends::VULKAN, wgpu::InstanceFlags::empty());
    let instance = wgpu::Instance::new(desc);
    let Some(Ok(adapter)) = ready(instance.request_adapter(&Default::default())) else {
        eprintln!("wgpu_submit_cost: no Vulkan adapter");
        return ExitCode::from(2);
    };
    let Some(Ok((device, queue))) = ready(adapter.request_device(&Default::default())) else {
        return fail(&format!("no device on {}", adapter.get_info().name));
    };
    let size = COPY * NS[NS.len() - 1];
    let [src, dst] = [wgpu::BufferUsages::COPY_SRC, wgpu::BufferUsages::COPY_DST].map(|usage| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size, usage, mapped_at_creation: false })
    });
    // Configuration c is N = NS[c / 2], merged if c is even, split if odd. One block of it: `frames`
    // frames, the queue drained after; the mean µs per frame of [frame, encode, submit, poll].
    let block = |c: usize| -> Result<[f64; 4], wgpu::PollError> {
        let (encoders, per) = if c % 2 == 1 { (NS[c / 2], 1) } else { (1, NS[c / 2]) };
        let (mut pending, mut times, mut last) = (VecDeque::new(), [(); 4].map(|_| vec![]), Instant::now());
        for _ in 0..frames {
            let t0 = Instant::now();
            let mut buffers = Vec::new();
            for e in 0..encoders {
                let mut encoder = device.create_command_encoder(&Default::default());
                for at in (e * per..(e + 1) * per).map(|i| i * COPY) {
                    encoder.copy_buffer_to_buffer(&src, at, &dst, at, COPY);
                }
                buffers.push(encoder.finish());
            }
            let t1 = Instant::now();
            pending.push_back(queue.submit(buffers));
            let t2 = Instant::now();
            while pending.len() > 2 {
                device.poll(wgpu::PollType::Wait { submission_index: pending.pop_front(), timeout: None })?;
            }
            let t3 = Instant::now();
            for (v, (a, b)) in times.iter_mut().zip([(last, t3), (t0, t1), (t1, t2), (t2, t3)]) {
                v.push((b - a).as_secs_f64() * 1e6);
            }
            last = t3;
        }
        device.poll(wgpu::PollType::wait_indefinitely())?;
        Ok(times.map(|v| v.iter().sum::<f64>() / v.len() as f64))
    };
    // runs[c][r]: configuration c's means in round r + 1 (round 0 is the warm-up).
    let mut runs = vec![Vec::new(); 2 * NS.len()];
    for round in 0..=rounds {
        let order = (0..runs.len()).map(|i| (i + round) % runs.len());
        for c in if round % 2 == 1 { order.rev().collect() } else { order.collect::<Vec<_>>() } {
            match block(c) {
                Ok(means) => runs[c].extend((round > 0).then_some(means)),
                Err(e) => return fail(&format!("poll: {e}")),
            }
        }
    }
    let (info, stats) = (adapter.get_info(), |c: usize, k| spread(runs[c].iter().map(|r| r[k]).collect()));
    println!(
        "{} ({:?}), 3 frames in flight; merged: N copies in 1 command buffer, split: N of 1 copy each\n\
         {rounds} interleaved rounds of {frames} frames per configuration after a warm-up block of each\n\
         us per frame: the median of the round means [min, max over the rounds]\n \
         N        |         frame          |         encode         |         submit         |          poll",
        info.name, info.backend
    );
    for c in 0..runs.len() {
        let cell = |(m, lo, hi)| format!("{m:>7.1} {:<14}", format!("[{lo:.1}, {hi:.1}]"));
        let cells: Vec<String> = (0..4).map(|k| cell(stats(c, k))).collect();
        println!("{:>2} {:<6} | {}", NS[c / 2], ["merged", "split"][c % 2], cells.join(" | ").trim_end());
    }
    println!("split - merged, frame: the median of the per-round differences [min, max]");
    for (&n, pair) in NS.iter().zip(runs.chunks(2)) {
        let (d, lo, hi) = spread(pair[0].iter().zip(&pair[1]).map(|(m, s)| s[0] - m[0]).collect());
        print!("N = {n}: {d:+7.1} us [{lo:+.1}, {hi:+.1}]");
        if n == 1 {
            let (m, s) = (stats(0, 0).0, stats(1, 0).0);
            println!(" = the self-check, the same work both ways: split {s:.1} vs merged {m:.1} us");
        } else {
            println!(" for {} extra: {:+.1} us per extra command buffer", n - 1, d / (n - 1) as f64);
        }
    }
    ExitCode::SUCCESS
}

/// A failed call or a bad argument: one line, exit 1.
fn fail(e: &str) -> ExitCode {
    eprintln!("wgpu_submit_cost: error: {e}");
    ExitCode::from(1)
}
