//! A frame-sync profiler for programs that hand work between Vulkan and CUDA, HIP or wgpu.
//!
//! (The adopter's guide and first example are written with the capture API: see
//! `Profiler`.)
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod analysis;
pub mod check;
pub mod clock;
pub mod model;
pub mod perfetto;
pub mod report;
pub mod stats;
#[cfg(feature = "tracy")]
pub mod tracy;

pub use analysis::{analyze, Analysis, Summary};
pub use check::{check, CheckReport, Checker, Counts, Rule, Violation};
pub use model::{
    Access, AccessKind, Api, Item, Names, ResourceId, Scope, SemaphoreId, Sink, Sync, SyncKind, Timeline,
    TrackId,
};
pub use perfetto::{TraceError, TraceRing};
#[cfg(feature = "tracy")]
pub use tracy::TracySink;
