//! A frame-sync profiler for programs that hand work between Vulkan and CUDA, HIP or wgpu: one
//! clock for every queue, stream and thread, scopes around your own work in each API, the
//! semaphore hand-offs between them, and a checker that proves every two conflicting accesses
//! to a shared buffer from different APIs ordered — in a test, not only in a viewer.
//!
//! # Adopting it
//!
//! Your engine already has a device ([`vkhip_interop::vulkan::Device`], yours or the crate's),
//! a CUDA stream, command buffers and a frame loop. Profiling it adds this (the whole program:
//! `examples/ash_cuda.rs`, whose profiling lines end in `// profile`):
//!
//! ```no_run
//! # use ash::vk;
//! # use vkhip_interop::cuda::Cuda;
//! # use vkhip_interop::vulkan::Device;
//! # fn record_draw(_: vk::CommandBuffer) {}
//! # fn submit(_: vk::CommandBuffer) {}
//! # fn launch(_: &Cuda) -> Result<(), vkhip_interop::Error> { Ok(()) }
//! # fn engine(vk: &Device, cuda: &Cuda, cmd: vk::CommandBuffer) -> Result<(), Box<dyn std::error::Error>> {
//! use vkhip_profile::{Options, Profiler};
//!
//! let prof = Profiler::new(vk, Options::default())?; // the GPU clock, on your device
//! let queue = prof.vulkan_queue("graphics")?; // a track and its query pool
//! let stream = prof.cuda_stream("sim", cuda)?; // a track, its events and its GPU anchor
//! let heights = prof.resource("heights"); // what scopes read and write
//! let (written, read) = (prof.semaphore("written"), prof.semaphore("read"));
//! for f in 0..1000u64 {
//!     // CUDA: your wait on `read`, a scope around your launch, your signal of `written`.
//!     stream.wait(&read, f);
//!     {
//!         let _sim = stream.scope("sim")?.writes(&heights);
//!         launch(cuda)?;
//!     }
//!     stream.signal(&written, f + 1);
//!     // Vulkan: a scope in your command buffer, then your submit, which waits and signals.
//!     {
//!         // SAFETY: `cmd` is recording until after the scope ends.
//!         let _draw = unsafe { queue.scope(cmd, "draw") }.reads(&heights);
//!         record_draw(cmd);
//!     }
//!     submit(cmd);
//!     queue.submitted(&[(&written, f + 1)], &[(&read, f + 1)]);
//!     prof.end_frame()?; // results of earlier frames are read; never waits for the GPU
//! }
//! let capture = prof.finish()?; // waits (bounded) for the last results
//! capture.write_perfetto("trace.json")?; // ui.perfetto.dev: a track per queue, stream, thread
//! println!("{}", capture.report()); // clocks, the checker's verdict, frame time, hand-offs, scopes
//! assert!(capture.check().is_clean()); // the checker alone: use it in your tests
//! # Ok(()) }
//! ```
//!
//! Switched off (`Options { enabled: false, .. }` or [`Profiler::disabled`]) every call is a
//! no-op: no query pool, no event, no stamp kernel, nothing on the GPU.
//!
//! # What each track records
//!
//! | track | made by | a scope is | its clock |
//! |---|---|---|---|
//! | Vulkan queue | [`Profiler::vulkan_queue`] | two timestamps of the profiler's query pool, written into your command buffer ([`VulkanQueue::scope`]) | the GPU clock: calibrated timestamps re-anchored every 50 ms with a fitted rate, or a one-off calibration ([`clock`]) |
//! | CUDA stream | [`Profiler::cuda_stream`] | a one-thread kernel storing `%globaltimer` before and after whatever you enqueue, cuBLAS included; or, with [`CudaStamps::Events`], two CUDA events ([`cuda`]) | the same GPU clock: `%globaltimer` is what Vulkan's timestamps count, and events are put on it by a `%globaltimer` stamp between two events, re-taken every 50 ms (its accuracy added) |
//! | HIP stream (feature `hip`) | `Profiler::hip_stream` | two HIP events | its own: events against host anchors, re-anchored |
//! | wgpu queue (feature `wgpu`) | `Profiler::wgpu_queue` | two command buffers of the profiler's around yours, in one submit (`WgpuScope::around`) | the GPU clock |
//! | host thread | [`Profiler::host_thread`] | `CLOCK_MONOTONIC` now, and at the end | the host's |
//!
//! Every time ends up in nanoseconds of `CLOCK_MONOTONIC`, and every output states how accurate
//! its mapping is ([`clock::ClockInfo`]).
//!
//! # Orderings
//!
//! Each track's items are in its program order, and only semaphores order one track after
//! another ([`model`]): a [`SyncKind::Signal`] on one track, a [`SyncKind::Wait`] for that
//! value or less on another. You name your semaphores' waits and signals: a CUDA stream's
//! ([`CudaStream::wait`], [`CudaStream::signal`]), a Vulkan submission's
//! ([`VulkanQueue::submitted`]), a host thread's ([`HostThread::wait`], [`HostThread::signal`]).
//! Orderings that are not semaphores the profiler adds itself, as *internal* semaphores: a host
//! thread that records GPU work orders it after what the thread did before (`submit:` edges);
//! a thread that waited for a fence, a queue or a stream ([`VulkanQueue::waited`],
//! [`VulkanQueue::idle`], [`CudaStream::synchronized`]) is ordered after that work (`join:`).
//! Each belongs to one track or edge, whatever the tracks are named. What CUDA orders between
//! streams by itself is added too ([`streams`]): several tracks on one stream are in its order
//! (`stream:`), and the legacy default stream is ordered with the per-thread default stream
//! (`legacy:`); a track on the legacy stream beside one on any other stream is refused, since
//! whether that stream synchronises with it cannot be seen.
//!
//! # The checker
//!
//! Each scope declares the shared resources it reads and writes ([`VulkanScope::reads`],
//! [`CudaScope::writes`], …). For every two conflicting accesses (one at least a write) on
//! different tracks, the checker proves that a chain of signal → wait orders them, that on the
//! clock the later one starts after the earlier one ends, and that each wait's first work
//! starts after the signal it waited for; tolerance is the stated accuracy. Each violation
//! names the rule, the resource, both scopes with their tracks and frames, and the overlap in
//! µs. [`Capture::check`] returns them.
//!
//! # Cost, and what not to do
//!
//! - Recording takes one short lock per call; [`Profiler::end_frame`] reads results without
//!   waiting. A CUDA scope is two one-thread kernel launches on your stream (the default,
//!   [`CudaStamps::Kernel`]), or with [`CudaStamps::Events`] two event records (every 50 ms, at a
//!   scope's begin, also an anchor: two more and a one-thread kernel); a Vulkan scope is two timestamps; a host scope is two clock
//!   reads.
//! - [`Profiler::end_frame`]'s host work: one pass over the tracks under the lock — per Vulkan
//!   queue at most two `vkGetQueryPoolResults` and one `vkResetQueryPool` per scope read; per
//!   CUDA stream one `cuEventQuery` and two `cuEventElapsedTime` per scope read (kernel stamps:
//!   two loads), and one query while an anchor is in flight — then each item moved to the sinks
//!   and into the kept timeline. Nothing is allocated per frame but the scopes' declared
//!   accesses and the timeline's growth (its vectors double; `keep_timeline: false` keeps
//!   memory constant).
//! - Rings are bounded ([`Options`]): a scope begun while its ring is full is dropped and
//!   counted ([`Stats`]), never waited for. Results that never come (a command buffer recorded
//!   and never submitted) are dropped at the horizon and counted.
//! - Drop the profiler and its track handles after the GPU finished the work they were recorded
//!   into (the query pools and the stamp memory go with them), as with any Vulkan object.
//! - Device setup: [`requirements`] — calibrated timestamps and `hostQueryReset`, both optional;
//!   the interop crate's `vulkan::Device::open` and `WgpuDevice::open` enable them where the
//!   device has them.
//!
//! # Examples
//!
//! `examples/ash_cuda.rs` (the loop above, whole), `ash_cuda_broken.rs` (one wait removed: the
//! checker names the race), `wgpu_cuda.rs`, and the HIP twins `ash_hip.rs`, `wgpu_hip.rs`. Exit
//! codes of all of them: 0 no hazard found (and the data as expected), 1 the checker found
//! hazards (each printed), 2 no usable device (one line on stderr), 3 any other failure.
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod analysis;
pub mod bound;
pub mod check;
pub mod clock;
pub mod cuda;
mod error;
#[cfg(feature = "hip")]
pub mod hip;
pub mod host;
pub mod model;
pub mod perfetto;
pub mod profiler;
pub mod report;
pub mod stats;
#[cfg(test)]
mod stream_seam;
pub mod streams;
#[cfg(feature = "tracy")]
pub mod tracy;

pub use analysis::{analyze, Analysis, Summary};
pub use bound::{Bound, Budget};
pub use check::{check, CheckReport, Checker, Counts, Rule, Violation};
mod ring;
pub mod vulkan;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use cuda::{CudaScope, CudaStamps, CudaStream};
pub use error::{is_environment, Error, Result};
pub use host::{HostScope, HostThread};
pub use model::{
    Access, AccessKind, Api, Item, Names, ResourceId, Scope, SemaphoreId, Sink, Sync, SyncKind, Timeline,
    TrackId,
};
pub use perfetto::{TraceError, TraceRing};
pub use profiler::{Capture, Options, Profiler, Resource, Semaphore, Stats};
#[cfg(feature = "tracy")]
pub use tracy::TracySink;
pub use vulkan::{requirements, Requirements, Submission, VulkanQueue, VulkanScope};
