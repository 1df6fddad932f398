//! The frame-sync profiler of the app, built on the `vkhip_profile` crate: the app measures its
//! actors with its own, cheap stamps, records the protocol's operations in each actor's program
//! order ([`program`]), and the crate checks, summarises and traces them.
//!
//! ## What is measured, by whom
//! | track | spans (scopes) | measured with |
//! |---|---|---|
//! | render thread | throttle, compute hand-off, record+submit, present; in `blocking` and `host-wait` its host steps, and in the reference modes the post hand-off | host clock at each phase boundary ([`RenderMarks`]), and its CPU time (`CLOCK_THREAD_CPUTIME_ID`) |
//! | bridge thread (`bridged`, `none`) | wait rendered, write slot, signal computed; post wait, post filter, signal posted | host clock on the bridge thread, sent over a channel with its operations |
//! | graphics queue | draw (from its heights readable to its end); post copy | Vulkan timestamps in the draw's and the copy's command buffers ([`crate::vk::timestamps`]) |
//! | compute | write slot (the kernel or dispatch); post filter | cuda: the kernel's own GPU stamps (`%globaltimer` at entry and exit, `compute::cuda::stamps`); hip (and cuda with `--memory staged`): events read back frames later without blocking (`compute::timing`); vulkan and cuda-in-vulkan: Vulkan timestamps around the dispatch, or in the draw's command buffer in one-submission frames |
//!
//! Beside the scopes, each track records the semaphore operations it performs, in order
//! ([`program`]): the GPU waits and signals of each submission and enqueue, the host's waits and
//! signals, submissions, host waits for a queue or stream, and the barriers between the write and
//! the draw of a one-submission frame. The compute side's own GPU-side waits and signals (the
//! spans `wait rendered` and `signal computed` of hip, vulkan and the draw's `wait computed`) are
//! not scopes of the model: a wait is an instant between two scopes, and the time a queue spent
//! waiting is what the hand-offs measure. They still give the report's `gpu draw` and
//! `wait+signal` lines.
//!
//! The "readable" timestamp of a draw is sound, not a guess: the draw's submission waits
//! `computed` at the vertex stage; its command buffer starts with a pipeline barrier whose source
//! stage is that same vertex stage (so it chains with the semaphore wait: the pattern the Vulkan
//! spec uses for a swapchain image's acquire semaphore) and whose destination is all commands,
//! then writes a timestamp. That timestamp cannot be written before the wait was satisfied, so
//! the draw's scope starts there, after its waits, as the checker's rule needs.
//!
//! ## One clock
//! Everything is mapped onto the host's `CLOCK_MONOTONIC` ([`clock`]):
//! - **Vulkan timestamps** (`vk::clock`): with VK_KHR/EXT_calibrated_timestamps, an anchor from
//!   `vkGetCalibratedTimestamps{KHR,EXT}` (device + CLOCK_MONOTONIC in one call, accurate to the
//!   driver's reported maximum deviation), re-taken every 50 ms with the rate measured between
//!   anchors, so the two clocks cannot drift apart; without it, a one-off calibration: a timestamp written on the idle queue between two
//!   host readings, the narrowest of several tries, accurate to half that window.
//! - **CUDA kernels' GPU stamps** ([`Stamp::Gpu`]): the GPU has one nanosecond timer, which
//!   Vulkan's timestamps count (ticks of `timestampPeriod` ns) and a kernel reads as
//!   `%globaltimer` (measured on the H100: a stamp mapped through the calibrated Vulkan clock lies
//!   inside the host bracket of its launch in 2000/2000 trials; a kernel in Vulkan's queue reads
//!   a value between the timestamps around it in 200/200). So a stamp is mapped as the Vulkan
//!   timestamp [`span::gpu_ns_to_ticks`] makes of it, through the Vulkan clock's anchors: no host
//!   anchor of its own, and the accuracy is the Vulkan mapping's (±2.9 µs measured). The compute
//!   track then shares the graphics queue's clock domain, and the checker compares the two with
//!   the larger accuracy, not the sum.
//! - **HIP events** (and CUDA's with `--memory staged`; `compute::timing`): an anchor event recorded on an idle stream of its
//!   own, with host readings before the record and after the event completed; the narrowest of
//!   several tries gives the anchor and its accuracy. Every event's time is the anchor's plus
//!   the elapsed time from the anchor event to it. The anchor is re-taken every 250 ms, and the difference
//!   between where the old anchor predicted the new one and where it was measured is the drift
//!   (kept below 10 µs by the re-anchoring interval; the largest seen is in the trace). A clock
//!   domain of its own.
//!
//! ## Figures, checker, trace
//! [`collect::Profiler`] keeps the last few frames open for late spans, then turns each frame
//! into the app's own figures ([`collect::FrameFigures`]: frame time, draw, compute, sync
//! overhead, render-thread CPU time, the post filter and latency) in constant-memory histograms
//! ([`stats`]). The same spans and the recorded operations go, on a thread of their own
//! ([`feed`]), through [`program::Assembler`] to the crate's streaming `Analysis` (the hazard checker over every frame of the run, the
//! hand-offs with their exposed part, each frame's GPU busy time) and, with `--trace`, to its
//! `TraceRing`, written as Chrome trace-event JSON at the end. `vkhip trace check` reads such a
//! file back and runs the crate's checker on it.
//!
//! # Examples
//!
//! `--gpu-timing off` reaches every timer created afterwards: a compute stream's timer then
//! records no frame's events and maps nothing.
//!
//! ```
//! use std::cell::Cell;
//! use vkhip::compute::timing::{Mark, StreamTimer, TimedEvent};
//! use vkhip::compute::ComputeError;
//!
//! thread_local!(static RECORDS: Cell<u32> = const { Cell::new(0) });
//! struct Event;
//! impl TimedEvent for Event {
//!     type Stream = ();
//!     fn record_on(&self, _: &()) -> Result<(), ComputeError> {
//!         RECORDS.set(RECORDS.get() + 1);
//!         Ok(())
//!     }
//!     fn is_done(&self) -> Result<bool, ComputeError> {
//!         Ok(true)
//!     }
//!     fn ms_since(&self, _: &Self) -> Result<f32, ComputeError> {
//!         panic!("nothing is mapped with GPU timing off")
//!     }
//!     fn wait(&self) -> Result<(), ComputeError> {
//!         Ok(())
//!     }
//! }
//!
//! assert!(vkhip::profile::gpu_timing()); // on by default
//! vkhip::profile::set_gpu_timing(false);
//! assert!(!vkhip::profile::gpu_timing());
//! let mut timer = StreamTimer::new("off", (), || Ok(Event)).unwrap();
//! assert!(timer.clock_info().is_none());
//! let before = RECORDS.get();
//! let i = timer.begin(0);
//! for mark in [Mark::BeforeWait, Mark::BeforeKernel, Mark::AfterKernel, Mark::AfterSignal] {
//!     timer.mark(i, mark, &()).unwrap();
//! }
//! let mut spans = Vec::new();
//! timer.take_spans(&mut spans);
//! assert_eq!(RECORDS.get(), before, "a frame's marks record nothing");
//! assert!(spans.is_empty());
//! ```

pub mod clock;
pub mod collect;
pub mod feed;
pub mod program;
pub mod span;
pub mod stats;

/// Default `--trace-frames`.
pub const DEFAULT_TRACE_FRAMES: u32 = 3000;

pub use collect::{CpuSplit, FrameFigures, Profiler, RenderMarks};

static GPU_TIMING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turn the GPU side of the timeline on or off for the objects created from now on
/// (`--gpu-timing`): the draws' and dispatches' timestamps and the CUDA/HIP events. Off, a run
/// has only host-side figures (frame time, render-thread phases and CPU time, host writes),
/// and the GPU does no profiling work at all.
pub fn set_gpu_timing(on: bool) {
    GPU_TIMING.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether GPU timing is on (see [`set_gpu_timing`]; on by default).
pub fn gpu_timing() -> bool {
    GPU_TIMING.load(std::sync::atomic::Ordering::Relaxed)
}
pub use span::{Phase, Span, Stamp, Track};
pub use stats::{FrameSummary, Stat};
