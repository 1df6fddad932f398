//! The app embedded in another program (the Python package's door): both directions of the
//! frame hand-off, as a Rust API that knows nothing of Python.
//!
//! **A. The viewer driven by a caller's writer** ([`view()`]): the app's own run — window where
//! there is a display, else headless, with its renderer, sync protocol, frame report, trace and
//! capture — where the caller's [`HeightWriter`] writes each frame's heights instead of the sine
//! wave. [`WriterApi::Host`] runs as `--backend cpu` (`bridged`: the writer gets the slot's
//! mapping on the bridge thread); [`WriterApi::Cuda`] as `--backend cuda` (`external` where the
//! driver exports timelines: on the stream — the caller's, lent with
//! [`ViewOptions::with_stream`], or the backend's — wait `rendered` ≥ f+1−K, the writer's
//! enqueued work, signal `computed` = f+1; see docs/ARCHITECTURE.md for the protocol).
//!
//! **B. Frames into the framework** ([`Frames`]): the app's renderer draws offscreen; each
//! frame's image is copied on Vulkan's side (one `vkCmdCopyImageToBuffer`, in
//! [`frames`]) into one of K linear shared buffers (RGBA8, `height × width × 4` bytes, tightly
//! packed), exportable for CUDA's import, mapped for the host where the memory is host-visible
//! (lavapipe). Two timelines: `ready` (Vulkan signals f+1 when frame f's copy is done) and
//! `released` (the consumer signals f+1 when it has finished reading frame f); the copy into
//! slot s for frame f waits `released` ≥ f+1−K on the GPU.
//!
//! ```text
//! pub fn view(options: &ViewOptions, writer: Box<dyn HeightWriter>) -> Result<ViewOutcome, EmbedError>;
//! pub trait HeightWriter: Send {
//!     fn write(&mut self, frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError>;
//! }
//! pub enum HeightTarget<'a> {
//!     Host { heights: &'a mut [f32], cols: u32, rows: u32 },
//!     Cuda { ptr: u64, stream: u64, cols: u32, rows: u32 },
//! }
//! ViewOptions::new(args, WriterApi::Host | WriterApi::Cuda); unsafe fn with_stream(self, stream: u64) -> Self;
//! pub struct ViewOutcome { pub report: String, pub capture: Option<PathBuf>, pub frames: u64 }
//!
//! impl Frames {
//!     pub fn new(options: &FramesOptions) -> Result<Frames, EmbedError>;
//!     pub fn slots(&self) -> usize;
//!     pub fn extent(&self) -> (u32, u32);                                   // (width, height)
//!     pub fn rendered(&self) -> u64;                                        // the next frame's number
//!     pub fn slot_memory(&self, slot: usize) -> Result<ExportedMemory, EmbedError>;
//!     pub fn timeline_fds(&self) -> Result<(ImportFd, ImportFd), EmbedError>; // (ready, released)
//!     pub fn render(&mut self) -> Result<FrameInfo, EmbedError>;
//!     pub fn host_bytes(&self, slot: usize) -> Option<(*mut u8, usize)>;
//!     pub fn wait_ready_host(&self, frame: u64) -> Result<(), EmbedError>;
//!     pub fn is_ready(&self, frame: u64) -> Result<bool, EmbedError>;     // never waits
//!     pub fn release_host(&self, frame: u64) -> Result<(), EmbedError>;
//!     pub fn vulkan_device(&self) -> Result<&vkhip_interop::vulkan::Device, EmbedError>;
//!     pub fn views(&self) -> u32;                                           // N (--views)
//!     pub fn envs(&self) -> u32;                                            // E (--envs)
//!     pub fn set_poses(&mut self, poses: &[Pose]) -> Result<(), EmbedError>; // N cameras
//!     pub fn poses(&self) -> &[Pose];
//!     pub fn gpu_times(&mut self) -> Result<Option<GpuTimes>, EmbedError>;  // the raster limit
//! }
//! FramesOptions::new(args, slots, Importer::Host | Importer::Cuda).with_views(n).with_envs(e).with_gpu_times()
//! pub struct FrameInfo { pub frame: u64, pub slot: usize, pub ready_value: u64, pub width: u32, pub height: u32, pub views: u32 }
//! pub struct Pose { pub eye: [f32; 3], pub target: [f32; 3], pub up: [f32; 3], pub fov_y_deg: f32 }
//! pub enum EmbedError { Help(String), Usage { line, text }, Unsupported(String), Environment(String), Writer(String), Failed(String),
//!                       Limit { limit: String, device: u64, asked: u64, what: String } }
//! ```
//!
//! # Examples
//!
//! The heights written by the caller (here the CPU reference itself), drawn headless:
//!
//! ```
//! use vkhip::embed::{view, HeightTarget, HeightWriter, ViewOptions, WriterApi, WriterError};
//! use vkhip::sim::{fill_reference, Grid, WaveParams};
//!
//! struct Wave;
//! impl HeightWriter for Wave {
//!     fn write(&mut self, _frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError> {
//!         let HeightTarget::Host { heights, cols, rows, .. } = target else {
//!             return Err(WriterError("a host writer".into()));
//!         };
//!         fill_reference(&WaveParams::at_time(Grid { width: cols, height: rows }, time_s), heights);
//!         Ok(())
//!     }
//! }
//! let args = ["--headless", "--frames", "3", "--grid", "32x32", "--size", "64x48"];
//! let outcome = view(&ViewOptions::new(args, WriterApi::Host), Box::new(Wave)).unwrap();
//! assert_eq!(outcome.frames, 3);
//! assert!(outcome.report.contains("backend"), "{}", outcome.report);
//! ```
//!
//! Threads and lifetimes: [`view()`] runs on the calling thread and returns when the run ends. The
//! writer is called on the bridge thread on the host path (`bridged`), on the calling thread on
//! the CUDA path in `external` mode (on the bridge thread with `--sync bridged`). A window needs
//! the main thread (winit's rule; elsewhere the run says so and goes headless); windows may
//! follow one another in one process (the app keeps the thread's event loop). A [`Frames`] is
//! `Send` and used from one thread at a time; its exported fds are the caller's to import (CUDA
//! owns an fd once its import succeeded); drop the caller's imports (and finish their work)
//! before the [`Frames`].

pub mod frames;
pub mod view;

pub use crate::camera::Pose;
pub use frames::{FrameInfo, Frames, FramesOptions, GpuTimes, Importer};
pub use view::{view, HeightTarget, HeightWriter, ViewOptions, ViewOutcome, WriterApi, WriterError};

use crate::cli::{Cli, RunArgs};
use clap::Parser as _;

/// Errors of the embedding API, one line each (but [`EmbedError::Help`], the text asked for).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// `--help` or `--version` was among the args: the text the app prints.
    #[error("{0}")]
    Help(String),
    /// The args do not parse: the problem in one line as `vkhip` prints it after `vkhip:
    /// error: ` (`line`), and clap's whole text (`text`: with the usage block).
    #[error("{line}")]
    Usage { line: String, text: String },
    /// The args ask for something this API does not do.
    #[error("{0}")]
    Unsupported(String),
    /// An environment gap: no driver, no device, no validation layer, a device that cannot
    /// export (the app's exit code 2).
    #[error("{0}")]
    Environment(String),
    /// The caller's writer failed: its own message.
    #[error("{0}")]
    Writer(String),
    /// The run failed.
    #[error("{0}")]
    Failed(String),
    /// A device limit the request is past, refused before any driver call (Python's
    /// `LimitError`): the limit's Vulkan name (`maxImageArrayLayers`, …), the device's value,
    /// what was asked and how much.
    #[error("{what}: {asked} is past this device's {limit} ({device})")]
    Limit { limit: String, device: u64, asked: u64, what: String },
}

impl EmbedError {
    /// An environment gap or a usage mistake (the app's exit code 2) rather than a failure.
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            EmbedError::Environment(_)
                | EmbedError::Usage { .. }
                | EmbedError::Unsupported(_)
                | EmbedError::Limit { .. }
        )
    }

    /// The app's error, on one line, sorted as the app sorts it (a device limit as
    /// [`EmbedError::Limit`], a usage mistake found after parsing as `Unsupported`).
    pub(crate) fn from_run(e: &anyhow::Error) -> Self {
        use crate::app::session::SessionError;
        use crate::vk::VkError;
        for c in e.chain() {
            // `SessionError::Vulkan` is `#[error(transparent)]`: its `source()` skips the
            // `VkError` it holds (e.g. the session's `--envs` check, maxStorageBufferRange), so
            // that layer is asked directly.
            let vk = c.downcast_ref::<VkError>().or(match c.downcast_ref::<SessionError>() {
                Some(SessionError::Vulkan(v)) => Some(v),
                _ => None,
            });
            if let Some(VkError::Limit { limit, device, asked, what }) = vk {
                return EmbedError::Limit {
                    limit: limit.to_string(),
                    device: *device,
                    asked: *asked,
                    what: what.clone(),
                };
            }
            if let Some(u) = c.downcast_ref::<crate::cli::UsageError>() {
                return EmbedError::Unsupported(u.0.clone());
            }
        }
        let line = one_line(&format!("{e:#}"));
        if crate::app::is_environment_error(e) {
            EmbedError::Environment(line)
        } else {
            EmbedError::Failed(line)
        }
    }

    pub(crate) fn from_compute(e: &crate::compute::ComputeError) -> Self {
        let line = one_line(&e.to_string());
        if e.is_environment() {
            EmbedError::Environment(line)
        } else {
            EmbedError::Failed(line)
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The app's run flags, parsed by its own command line (`--help` and errors are the app's).
pub(crate) fn parse_run(args: &[String]) -> Result<RunArgs, EmbedError> {
    use clap::error::ErrorKind;
    let cli = Cli::try_parse_from(std::iter::once("vkhip").chain(args.iter().map(String::as_str))).map_err(
        |e| {
            let text = e.render().to_string();
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => EmbedError::Help(text),
                _ => EmbedError::Usage { line: crate::cli::error_line(&e), text },
            }
        },
    )?;
    if cli.command.is_some() {
        return Err(EmbedError::Unsupported(format!(
            "{}: a subcommand; only the run's flags are taken here",
            args.first().map(String::as_str).unwrap_or_default()
        )));
    }
    Ok(cli.run)
}
