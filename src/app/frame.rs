//! The per-frame sequence shared by every mode: throttle → compute → draw, and with `--post` off
//! Vulkan's queue the post hand-off and the copies after it (see [`crate::sync`]).

use super::session::Session;
use crate::cli::TimeMode;
use crate::overlay::OverlayHistory;
use crate::profile::{Phase, RenderMarks};
use crate::render::{DrawError, PostFrame, Renderer};
use crate::shaders::SurfacePush;
use crate::sim::WaveParams;
use crate::sync::SyncError;
use crate::vk::post::{CopyDest, Which};
use crate::vk::VkError;
use ash::vk;
use std::time::Instant;

pub use super::interrupt::{install_interrupt_handler, interrupted};

/// Simulation time for frame numbers. A frame's time is decided when it is handed to the compute
/// side, which with run-ahead or batches is before the render thread reaches it (see
/// [`crate::sync`]).
///
/// # Examples
///
/// ```
/// use vkhip::app::frame::Clock;
/// use vkhip::cli::TimeMode;
///
/// // `--time frame`: reproducible simulation time, frame × dt, whenever it is decided.
/// let mut clock = Clock::new(TimeMode::Frame, 0.5);
/// assert_eq!(clock.time_for(0, 0), 0.0);
/// assert_eq!(clock.time_for(7, 3), 3.5);
/// // `--time wall`: a frame handed over ahead is placed later than the current one.
/// let mut wall = Clock::new(TimeMode::Wall, 0.5);
/// let now = wall.time_for(0, 0);
/// std::thread::sleep(std::time::Duration::from_millis(5));
/// let next = wall.time_for(1, 1);
/// let ahead = wall.time_for(5, 1);
/// assert!(next > now && ahead > next);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub mode: TimeMode,
    pub dt: f64,
    start: Instant,
    /// (render frame, seconds since start) when the interval was last updated.
    last: Option<(u64, f64)>,
    /// Smoothed seconds per render frame (wall mode).
    interval: f64,
}

impl Clock {
    pub fn new(mode: TimeMode, dt: f64) -> Self {
        Clock { mode, dt, start: Instant::now(), last: None, interval: 0.0 }
    }

    /// Seconds of simulation time for `frame`, decided while the render thread is at
    /// `render_frame` (≤ `frame`). `frame` mode: frame × dt. `wall` mode: the time now, plus the
    /// frames still to come times the measured frame interval, so frames handed over ahead move
    /// as smoothly as frames handed over on time.
    pub fn time_for(&mut self, frame: u64, render_frame: u64) -> f64 {
        match self.mode {
            TimeMode::Frame => frame as f64 * self.dt,
            TimeMode::Wall => {
                let now = self.start.elapsed().as_secs_f64();
                match self.last {
                    Some((f, t)) if render_frame > f => {
                        let i = (now - t) / (render_frame - f) as f64;
                        self.interval = if self.interval == 0.0 { i } else { 0.9 * self.interval + 0.1 * i };
                        self.last = Some((render_frame, now));
                    }
                    None => self.last = Some((render_frame, now)),
                    _ => {}
                }
                now + frame.saturating_sub(render_frame) as f64 * self.interval
            }
        }
    }

    /// Parameters for every frame the protocol hands over at `render_frame`.
    pub fn due_params(&mut self, session: &Session, render_frame: u64) -> Vec<WaveParams> {
        let grid = session.grid;
        session
            .sync
            .due(render_frame)
            .map(|g| WaveParams::at_time(grid, self.time_for(g, render_frame)).with_envs(session.envs))
            .collect()
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

impl From<DrawError> for FrameError {
    fn from(e: DrawError) -> Self {
        match e {
            DrawError::Vulkan(e) => FrameError::Vulkan(e),
            DrawError::Compute(e) => FrameError::Sync(e),
        }
    }
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
    /// `--post`: where the frame's copy goes, and from which image of its pair.
    pub post: Option<PostTarget>,
}

/// The post stage's end of a frame: the copy's destination (the swapchain image or the capture
/// target) and its source (the output; the scene when the filter is toggled off).
#[derive(Clone, Copy, Debug)]
pub struct PostTarget {
    pub dest: CopyDest,
    pub source: Which,
}

/// Throttle: host-wait until frame `frame`'s per-frame resources are free.
pub fn throttle(session: &Session, frame: u64, marks: &mut RenderMarks) -> Result<(), FrameError> {
    marks.waited = session.sync.throttle(frame)?;
    // A throttle that did not wait checked counters the host holds: its few instructions go
    // to the hand-off's CPU time, sparing the frame a read of the thread's CPU clock (a system
    // call). One that waited keeps its own (the report's `wait`).
    if marks.waited {
        marks.lap(Phase::Throttle);
    } else {
        marks.lap_host(Phase::Throttle);
    }
    Ok(())
}

/// Compute + draw of frame `frame` (after [`throttle`]): hand over the frames due now, with
/// `params` for each (see [`Clock::due_params`]), then draw frame `frame`. With a post stage off
/// Vulkan's queue, when frame `frame` ends a post batch: submit the batch's copies with the draw,
/// then hand its filters over. Returns the frames whose copies were submitted (empty without them; see
/// [`flush_post`] for the last, partial batch).
pub fn compute_and_draw(
    session: &mut Session,
    renderer: &mut Renderer,
    frame: u64,
    params: &[WaveParams],
    target: &DrawTarget<'_>,
    marks: &mut RenderMarks,
) -> Result<std::ops::Range<u64>, FrameError> {
    session.sync.compute(frame, params)?;
    marks.lap(Phase::Handoff);
    let sync = session.sync.draw_sync(frame);
    let slot = session.sync.slot_of(frame);
    let on_queue = session.sync.plan().post_on_queue();
    let Session { sync: fs, post: images, .. } = session;
    let post = match (images.as_ref(), target.post) {
        (Some(images), Some(t)) => Some((images, t)),
        (None, None) => None,
        _ => return Err(SyncError::Bridge("internal: --post without its images or its target".into()).into()),
    };
    // With a post stage off the queue, the swapchain's acquire and present belong to the copy.
    let target_sems_on_draw = post.is_none() || on_queue;
    let acquire_stage = |w: &[(vk::Semaphore, vk::PipelineStageFlags)]| -> Vec<_> {
        let stage =
            if post.is_some() { vk::PipelineStageFlags::TRANSFER } else { vk::PipelineStageFlags::empty() };
        w.iter().map(|&(s, st)| (s, if stage.is_empty() { st } else { stage })).collect()
    };
    let waits = acquire_stage(target.extra_waits);
    // The copies due with this draw (the post batch it ends), submitted with it, just before the
    // batch's hand-off below. A window's frames are never batched (P = 1): the swapchain's
    // semaphores go with frame `frame`'s own copy.
    let due = fs.copies_due(frame);
    let copies = copy_jobs(fs, renderer, post, due.clone(), frame, &waits, target.extra_signals)?;
    let fs = std::cell::RefCell::new(fs);
    // One-submission frames: the draw's command buffer records the compute handed over above.
    // SAFETY: the renderer calls this while recording its command buffer, outside a render
    // pass, and submits it while the session (and so the backend) lives.
    let mut record = |cmd| unsafe { fs.borrow_mut().record_joined(cmd, frame) };
    let compute: Option<crate::render::RecordCompute<'_>> = sync.joined.then_some(&mut record);
    // The post stage on Vulkan's queue: the same command buffer records the filter.
    // SAFETY: as above; the renderer records it after the barrier that puts the pair in reach.
    let mut filter = |cmd| unsafe { fs.borrow_mut().record_post(cmd, frame) };
    let (draw_waits, draw_signals): (&[_], &[_]) =
        if target_sems_on_draw { (&waits, target.extra_signals) } else { (&[], &[]) };
    renderer.draw(
        frame,
        slot,
        target.framebuffer,
        target.extent,
        &target.push,
        &sync,
        draw_waits,
        draw_signals,
        target.overlay,
        compute,
        post_frame(post, slot, on_queue, on_queue.then_some(&mut filter)),
        &copies,
    )?;
    let fs = fs.into_inner();
    let mut copied = frame..frame;
    if post.is_some() {
        copied = fs.post(frame)?;
        if copied != due && !on_queue {
            return Err(SyncError::Bridge(format!(
                "internal: frame {frame} submitted the copies of {due:?} but handed over the filters of {copied:?}"
            ))
            .into());
        }
    }
    marks.lap(Phase::Submit);
    Ok(copied)
}

/// Post stage off Vulkan's queue, after the frame loop stopped at `frames` frames: hand the last,
/// partial post batch to the filter and submit its copies (see [`crate::sync`], "The post
/// stage"). Returns the frames whose copies were submitted; without a post stage, or with
/// nothing left over, none.
pub fn flush_post(
    session: &mut Session,
    renderer: &mut Renderer,
    frames: u64,
    target: &DrawTarget<'_>,
) -> Result<std::ops::Range<u64>, FrameError> {
    let Session { sync: fs, post: images, .. } = session;
    let post = match (images.as_ref(), target.post) {
        (Some(images), Some(t)) => (images, t),
        _ => return Ok(frames..frames),
    };
    let copied = fs.flush_post(frames)?;
    let jobs = copy_jobs(fs, renderer, Some(post), copied.clone(), u64::MAX, &[], &[])?;
    if !jobs.is_empty() {
        // One submission: the last batch's copies, in frame order, after its hand-off.
        renderer.copy(&jobs)?;
    }
    Ok(copied)
}

/// The copies of `frames` (output → target), in order, for one submission; the copy of frame
/// `own` also takes the target's swapchain waits and signals. None without a post stage off
/// Vulkan's queue.
fn copy_jobs<'a>(
    fs: &crate::sync::FrameSync,
    renderer: &Renderer,
    post: Option<(&'a crate::vk::post::PostImages, PostTarget)>,
    frames: std::ops::Range<u64>,
    own: u64,
    waits: &'a [(vk::Semaphore, vk::PipelineStageFlags)],
    signals: &'a [vk::Semaphore],
) -> Result<Vec<crate::render::CopyJob<'a>>, FrameError> {
    if frames.is_empty() || post.is_none() || fs.plan().post_on_queue() {
        return Ok(Vec::new());
    }
    // The copy command buffers are a ring: the last copy recorded here reuses the buffer of the
    // copy `ring` frames before it, submitted in an earlier batch; it must have finished.
    let ring = renderer.copy_buffers() as u64;
    if frames.end > ring {
        fs.wait_presented(frames.end - ring)?;
    }
    let mut jobs = Vec::with_capacity(frames.clone().count());
    for g in frames {
        let (Some(p), Some(copy)) = (post_frame(post, fs.slot_of(g), false, None), fs.copy_sync(g)) else {
            continue;
        };
        let (w, s): (&[_], &[_]) = if g == own { (waits, signals) } else { (&[], &[]) };
        jobs.push(crate::render::CopyJob { frame: g, post: p, sync: copy, waits: w, signals: s });
    }
    Ok(jobs)
}

/// Frame `pair`'s post stage for the renderer, if the run has one.
fn post_frame<'a>(
    post: Option<(&'a crate::vk::post::PostImages, PostTarget)>,
    pair: usize,
    on_queue: bool,
    filter: Option<crate::render::RecordCompute<'a>>,
) -> Option<PostFrame<'a>> {
    post.map(|(images, t)| PostFrame {
        images,
        pair,
        source: t.source,
        dest: t.dest,
        on_queue,
        filter: filter.filter(|_| t.source == Which::Output),
    })
}
