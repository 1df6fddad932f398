//! What one more `wgpu::CommandBuffer` in a submit costs, in wgpu alone (wgpu 30, Vulkan backend;
//! no vkhip-interop): the smallest program for wgpu's issue tracker behind issue 32. The same N
//! tiny copies (256 bytes each) go to the queue every frame either in one command buffer or in N,
//! with 3 frames in flight (`Device::poll(Wait)` on frame f − 2); per frame the host time is split
//! into encoding (create the encoders, record, `finish`), `Queue::submit` and the poll.
//!
//! What it shows, read in wgpu's source: each `wgpu::CommandBuffer` is its own encoder (a
//! command pool of wgpu-hal's), encoded at `finish`, given a command buffer of wgpu's own in front
//! at submit ("Transit": `vkBeginCommandBuffer` / `vkEndCommandBuffer` even with no barrier), and
//! its pool reset (`vkResetCommandPool`) when `poll` sees it done; the submit is one
//! `vkQueueSubmit` whatever N. So the split column grows with N where the merged one barely does,
//! and on the GPU each Vulkan command buffer is one more for the driver to chain.
//!
//!     cargo run --release -p vkhip-interop --features wgpu --example wgpu_submit_cost -- [FRAMES]
//!
//! Runs on any Vulkan adapter wgpu finds (lavapipe included). Exit codes: 0 done, 1 a failed call
//! or a bad argument, 2 no Vulkan adapter, with one line on stderr.

use std::process::ExitCode;
use std::time::Instant;

const COPY: u64 = 256;
const MAX: u64 = 8;

/// wgpu's native futures are ready when returned.
fn ready<F: std::future::Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let frames: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 2000,
        Some(Ok(n)) if n >= 10 => n,
        Some(_) => {
            eprintln!("wgpu_submit_cost: error: usage: wgpu_submit_cost [FRAMES >= 10]");
            return ExitCode::from(1);
        }
    };
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::empty();
    let instance = wgpu::Instance::new(desc);
    let Some(Ok(adapter)) = ready(instance.request_adapter(&Default::default())) else {
        eprintln!("wgpu_submit_cost: no Vulkan adapter");
        return ExitCode::from(2);
    };
    let Some(Ok((device, queue))) = ready(adapter.request_device(&Default::default())) else {
        eprintln!("wgpu_submit_cost: error: no device on {}", adapter.get_info().name);
        return ExitCode::from(1);
    };
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: COPY * MAX,
            usage,
            mapped_at_creation: false,
        })
    };
    let (src, dst) = (buffer(wgpu::BufferUsages::COPY_SRC), buffer(wgpu::BufferUsages::COPY_DST));
    let info = adapter.get_info();
    println!(
        "{} ({:?}); {frames} frames after {}, 3 in flight; us per frame, medians",
        info.name,
        info.backend,
        frames.min(200)
    );
    println!(
        "{:>2} {:>7} | {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7} {:>7} | {:>9}",
        "N", "", "frame", "encode", "submit", "poll", "frame", "encode", "submit", "poll", "per extra"
    );
    println!(
        "{:>2} {:>7} | {:^31} | {:^31} | {:>9}",
        "", "", "N copies in 1 command buffer", "N command buffers of 1 copy", "buffer"
    );
    for n in [1, 2, 4, 8] {
        let mut rows = Vec::new();
        for split in [false, true] {
            let mut pending = std::collections::VecDeque::new();
            let (mut frame, mut encode, mut submit, mut poll) = (vec![], vec![], vec![], vec![]);
            let mut last = Instant::now();
            let warmup = frames.min(200);
            for f in 0..warmup + frames {
                let t0 = Instant::now();
                let encoders = if split { n } else { 1 };
                let per = n / encoders;
                let buffers: Vec<wgpu::CommandBuffer> = (0..encoders)
                    .map(|e| {
                        let mut encoder = device.create_command_encoder(&Default::default());
                        for c in 0..per {
                            let at = (e * per + c) * COPY;
                            encoder.copy_buffer_to_buffer(&src, at, &dst, at, COPY);
                        }
                        encoder.finish()
                    })
                    .collect();
                let t1 = Instant::now();
                pending.push_back(queue.submit(buffers));
                let t2 = Instant::now();
                while pending.len() > 2 {
                    let index = pending.pop_front().expect("a frame");
                    let wait = wgpu::PollType::Wait { submission_index: Some(index), timeout: None };
                    if let Err(e) = device.poll(wait) {
                        eprintln!("wgpu_submit_cost: error: poll: {e}");
                        return ExitCode::from(1);
                    }
                }
                let t3 = Instant::now();
                if f >= warmup {
                    let us = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e6;
                    frame.push(us(last, t3));
                    encode.push(us(t0, t1));
                    submit.push(us(t1, t2));
                    poll.push(us(t2, t3));
                }
                last = t3;
            }
            if let Err(e) = device.poll(wgpu::PollType::wait_indefinitely()) {
                eprintln!("wgpu_submit_cost: error: poll: {e}");
                return ExitCode::from(1);
            }
            rows.push([median(frame), median(encode), median(submit), median(poll)]);
        }
        let [m, s] = [rows[0], rows[1]];
        let extra =
            if n > 1 { format!("{:+9.2}", (s[0] - m[0]) / (n - 1) as f64) } else { format!("{:>9}", "-") };
        println!(
            "{n:>2} {:>7} | {:>7.1} {:>7.1} {:>7.1} {:>7.1} | {:>7.1} {:>7.1} {:>7.1} {:>7.1} | {extra}",
            "", m[0], m[1], m[2], m[3], s[0], s[1], s[2], s[3]
        );
    }
    ExitCode::SUCCESS
}
