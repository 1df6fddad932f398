//! The frame-sync profiler: one timeline of every actor of the protocol, on one clock.
//!
//! ## What is measured, by whom
//! | track | spans | measured with |
//! |---|---|---|
//! | render thread | throttle, compute hand-off, record+submit, present | host clock at each phase boundary ([`RenderMarks`]), and its CPU time (`CLOCK_THREAD_CPUTIME_ID`) |
//! | bridge thread (`bridged`, `none`) | wait rendered, write slot, signal computed | host clock on the bridge thread, sent over a channel |
//! | graphics queue | wait computed, draw | three Vulkan timestamps per draw: start of the command buffer; the moment the heights became readable; end |
//! | compute (cuda) | write slot (the kernel) | the kernel's own two GPU stamps (`%globaltimer`: block (0,0,0) at entry, the last block at exit) in mapped host memory, read once one CUDA event per frame says the kernel completed (`compute::cuda::stamps`); `--memory staged` keeps the events of the hip row |
//! | compute (hip) | wait rendered, write slot (the kernel), signal computed | four HIP events per frame, read back frames later without blocking |
//! | compute (vulkan) | wait rendered, write slot (the dispatch) | Vulkan timestamps in the dispatch's command buffer |
//! | render/bridge (cpu) | write slot | host clock around the host write |
//! | hand-off (GPU) | rendered → kernel, kernel → draw | derived when a frame closes: from the end of the draw that last read the slot (frame f−K, or K frames before a batch's last frame: Vulkan signalled `rendered`) to the compute write's start, and from its end to the draw's "readable" timestamp |
//! | post stage (`--post`) | post wait, post filter, signal posted (compute track); post copy (graphics queue) | as the compute side's spans of the same backend (GPU stamps or events, Vulkan timestamps around the filter in the graphics queue, the bridge thread's host clock); the copy between two Vulkan timestamps |
//! | hand-off (GPU), post | draw → filter, filter → copy | derived when a frame closes ([`collect::post_spans`]): from the end of the draw into the rendered image to the filter's start, and from the filter's end to the copy's start; the report adds the latency draw end → copy end |
//!
//! A draw that a compute write of another frame overlapped is counted in the report (`overlap`)
//! and labelled in the trace (the draw's `kernel_inside` argument).
//!
//! The "readable" timestamp of a draw is sound, not a guess: the draw's submission waits
//! `computed` at the vertex stage; its command buffer starts with a pipeline barrier whose source
//! stage is that same vertex stage (so it chains with the semaphore wait: the pattern the Vulkan
//! spec uses for a swapchain image's acquire semaphore) and whose destination is all commands,
//! then writes a timestamp. That timestamp cannot be written before the wait was satisfied. The
//! command buffer's first timestamp (top of pipe) can be, which is why the draw is split in two
//! spans: "wait computed" (start → readable) and "draw" (readable → end).
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
//!   anchor of its own, and the accuracy is the Vulkan mapping's (±2.9 µs measured). Kernel and
//!   draw times are then compared on one clock; `vkhip trace check` proves per frame that the
//!   kernel started after the `rendered` it waited on and ended before its draw could read, which
//!   a different timer would break.
//! - **HIP events** (and CUDA's with `--memory staged`; `compute::timing`): an anchor event recorded on an idle stream of its
//!   own, with host readings before the record and after the event completed; the narrowest of
//!   several tries gives the anchor and its accuracy. Every event's time is the anchor's plus
//!   the elapsed time from the anchor event to it. The anchor is re-taken every 250 ms, and the difference
//!   between where the old anchor predicted the new one and where it was measured is the drift
//!   (kept below 10 µs by the re-anchoring interval; the largest seen is in the trace).
//!
//! ## Figures, trace, checker
//! [`collect::Profiler`] keeps the last few frames open for late spans, then turns each frame
//! into figures ([`collect::FrameFigures`]: frame time, draw, compute, hand-off latency, the GPU
//! hand-off in and out, sync overhead, render-thread CPU time) recorded in constant-memory histograms ([`stats`]), and, with
//! `--trace`, keeps the spans of the last N frames in a ring written as Chrome trace-event JSON at
//! the end ([`trace`]). [`check`] reads such a file back and proves the protocol's two orderings,
//! and with a post stage its four more (`vkhip trace check`).
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

pub mod check;
pub mod clock;
pub mod collect;
pub mod span;
pub mod stats;
pub mod trace;

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
