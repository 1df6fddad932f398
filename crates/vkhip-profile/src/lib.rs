//! A frame-sync profiler for programs that hand work between Vulkan and CUDA, HIP or wgpu.
//!
//! (guide: to be written)
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod analysis;
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
mod ring;
mod standin;
pub mod vulkan;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use cuda::{CudaScope, CudaStream};
pub use error::{is_environment, Error, Result};
pub use host::{HostScope, HostThread};
pub use model::{
    Access, AccessKind, Api, Item, Names, ResourceId, Scope, SemaphoreId, Sink, Sync, SyncKind, Timeline,
    TrackId,
};
pub use profiler::{Capture, Options, Profiler, Resource, Semaphore, Stats};
pub use vulkan::{Submission, VulkanQueue, VulkanScope};
