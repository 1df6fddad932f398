//! The per-frame sequence shared by every mode: throttle → compute → draw (see [`crate::sync`]).

use super::session::Session;
use crate::cli::TimeMode;
use crate::overlay::OverlayHistory;
use crate::profile::{Phase, RenderMarks};
use crate::render::Renderer;
use crate::shaders::SurfacePush;
use crate::sim::WaveParams;
use crate::sync::SyncError;
use crate::vk::VkError;
use ash::vk;
use std::time::Instant;

pub use super::interrupt::{install_interrupt_handler, interrupted};

/// Simulation time for frame numbers.
///
/// # Examples
///
/// ```
/// use vkhip::app::frame::Clock;
/// use vkhip::cli::TimeMode;
///
/// // `--time frame`: reproducible simulation time, frame × dt.
/// let clock = Clock::new(TimeMode::Frame, 0.5);
/// assert_eq!(clock.time(0), 0.0);
/// assert_eq!(clock.time(7), 3.5);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub mode: TimeMode,
    pub dt: f64,
    start: Instant,
}

impl Clock {
    pub fn new(mode: TimeMode, dt: f64) -> Self {
        Clock { mode, dt, start: Instant::now() }
    }

    /// Seconds of simulation time at `frame`.
    pub fn time(&self, frame: u64) -> f64 {
        match self.mode {
            TimeMode::Frame => frame as f64 * self.dt,
            TimeMode::Wall => self.start.elapsed().as_secs_f64(),
        }
    }
}

/// Errors of one frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error("draw: {0}")]
    Vulkan(#[from] VkError),
}

impl FrameError {
    /// An environment gap or an impossible request (exit code 2) rather than a failure.
    pub fn is_environment(&self) -> bool {
        match self {
            FrameError::Sync(e) => e.is_environment(),
            FrameError::Vulkan(e) => e.is_environment(),
        }
    }
}

/// Where and how a frame is drawn.
pub struct DrawTarget<'a> {
    pub framebuffer: vk::Framebuffer,
    pub extent: vk::Extent2D,
    pub push: SurfacePush,
    /// Swapchain acquire semaphore (binary) and the stage that waits for it.
    pub extra_waits: &'a [(vk::Semaphore, vk::PipelineStageFlags)],
    /// Swapchain present semaphore (binary).
    pub extra_signals: &'a [vk::Semaphore],
    /// The frame-time overlay to draw on top, if shown.
    pub overlay: Option<&'a OverlayHistory>,
}

/// Throttle: host-wait until frame `frame`'s per-frame resources are free.
pub fn throttle(session: &Session, frame: u64, marks: &mut RenderMarks) -> Result<(), FrameError> {
    session.sync.throttle(frame)?;
    marks.lap(Phase::Throttle);
    Ok(())
}

/// Compute + draw of frame `frame` (after [`throttle`]).
pub fn compute_and_draw(
    session: &mut Session,
    renderer: &mut Renderer,
    frame: u64,
    params: &WaveParams,
    target: &DrawTarget<'_>,
    marks: &mut RenderMarks,
) -> Result<(), FrameError> {
    session.sync.compute(frame, params)?;
    marks.lap(Phase::Handoff);
    let sync = session.sync.draw_sync(frame);
    renderer.draw(
        frame,
        session.sync.slot_of(frame),
        target.framebuffer,
        target.extent,
        &target.push,
        &sync,
        target.extra_waits,
        target.extra_signals,
        target.overlay,
    )?;
    marks.lap(Phase::Submit);
    Ok(())
}
