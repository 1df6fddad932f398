//! The draw: command buffers that clear and draw the surface from a slot, recorded once per
//! (frame in flight, slot) and submitted every frame with the waits and signals the frame-sync
//! protocol gives ([`crate::sync::DrawSync`]). When asked, the frame-time
//! overlay ([`crate::overlay`]) is drawn after the surface; its pipeline is created on first use,
//! so a run that never shows it records exactly what it did before.

use crate::camera::{OrbitCamera, Pose};
use crate::overlay::OverlayHistory;
use crate::profile::program;
use crate::profile::{Phase, Span, Track};
use crate::shaders::{SurfacePush, ViewPush};
use crate::sim::Grid;
use crate::sync::{DrawSync, Few, SyncError, HEIGHTS_READ_STAGE};
use crate::vk::device::{Context, QueueBatch};
use crate::vk::external::Slot;
use crate::vk::overlay::OverlayPipeline;
use crate::vk::pipeline::{RenderPass, SurfacePipeline};
use crate::vk::post::{CopyDest, PostImages, Which};
use crate::vk::target::{Framebuffer, Image, DEPTH_FORMAT};
use crate::vk::timestamps::{DrawTimer, Layout};
use crate::vk::{cmd_memory_barrier, CallContext, VkError};
use ash::vk;
use std::sync::Arc;

/// Records frame f's compute into its draw's command buffer (one-submission frames; see
/// [`crate::sync::FrameSync::record_joined`]): called with the command buffer, outside a render
/// pass, between the barriers the renderer records around it.
pub type RecordCompute<'a> = &'a mut dyn FnMut(vk::CommandBuffer) -> Result<(), SyncError>;

/// The post stage of one frame (`--post`; see [`crate::sync`], "The post stage"): the draw
/// renders into scene `pair` instead of the target, then the filter and the copy of image
/// `source` to `dest` follow — in the draw's own command buffer on Vulkan's queue (`on_queue`),
/// else in a copy submission of their own ([`Renderer::copy`]).
pub struct PostFrame<'a> {
    pub images: &'a PostImages,
    pub pair: usize,
    /// The output; the scene when the filter is toggled off (window key O).
    pub source: Which,
    pub dest: CopyDest,
    /// The filter and the copy are recorded into the draw's command buffer.
    pub on_queue: bool,
    /// On Vulkan's queue: records the filter ([`crate::sync::FrameSync::record_post`]); None
    /// when it is toggled off.
    pub filter: Option<RecordCompute<'a>>,
}

/// One copy of [`Renderer::copy`]: frame `frame`'s image of `post` to its destination, with the
/// protocol's `sync` and the target's own waits (binary, with their stages) and signals.
pub struct CopyJob<'a> {
    pub frame: u64,
    pub post: PostFrame<'a>,
    pub sync: DrawSync,
    pub waits: &'a [(vk::Semaphore, vk::PipelineStageFlags)],
    pub signals: &'a [vk::Semaphore],
}

/// A copy of [`Renderer::record_copies`], ready to submit as one batch.
struct RecordedCopy {
    /// Its index in the ring of copy command buffers.
    index: usize,
    cmd: [vk::CommandBuffer; 1],
    waits: Few<(vk::Semaphore, u64, vk::PipelineStageFlags)>,
    signals: Few<(vk::Semaphore, u64)>,
}

impl RecordedCopy {
    fn batch(&self) -> QueueBatch<'_> {
        QueueBatch { cmds: &self.cmd, waits: &self.waits, signals: &self.signals }
    }
}

/// A draw that failed: a Vulkan call of the renderer, or the compute it recorded.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    #[error(transparent)]
    Vulkan(#[from] VkError),
    #[error(transparent)]
    Compute(#[from] SyncError),
}

/// Background colour (linear RGBA).
pub const CLEAR_COLOR: [f32; 4] = [0.055, 0.063, 0.086, 1.0];

/// Records and submits draws for one kind of target (offscreen or swapchain).
///
/// A draw without the overlay is recorded once per (frame-in-flight index, slot) and submitted
/// again while its target and push constants stay the same (a headless run records F × K command
/// buffers in all; a window re-records when the camera moves or the swapchain changes). What
/// changes every frame, the waits and signals, is given at submit time. With the overlay on, the
/// draw is recorded afresh each frame (its vertex data does change), and so is a post stage on
/// Vulkan's queue (the filter it records). A one-submission frame's write (its parameters change
/// every frame) is recorded afresh into a small command buffer of its own, submitted in the same
/// batch just before the reused draw (on the render thread's clock the draw's recording was most
/// of a joined frame's record+submit). With a post stage off the queue the draw into scene
/// `slot` and its hand-off of the scene are the same every time, and are reused as well; so is
/// each copy command buffer while its pair, source and destination stay the same
/// ([`Self::copy`]).
pub struct Renderer {
    timer: Option<DrawTimer>,
    pool: vk::CommandPool,
    /// Recorded afresh every frame (overlay on, a post stage on the queue, or a one-submission
    /// frame's write), one per frame-in-flight index.
    cmds: Vec<vk::CommandBuffer>,
    /// The slots' buffers, for the barrier between a recorded write and the draw.
    slot_buffers: Vec<vk::Buffer>,
    /// F: frame f uses index f mod F.
    in_flight: usize,
    /// Recorded once and reused (overlay off), at `index * slots + slot`.
    reused: Vec<ReusedDraw>,
    slots: usize,
    pipeline: SurfacePipeline,
    overlay: Option<OverlayPipeline>,
    /// `--post`: the scene framebuffers and the copy submissions' command buffers.
    post: Option<PostStage>,
    /// `--views N` > 1: the layered pipeline and each view's push constants.
    views: Option<ViewDraws>,
    pub render_pass: RenderPass,
    ctx: Arc<Context>,
}

/// The draws of `--views N` > 1 (docs/ARCHITECTURE.md, "Views"): in the one render pass over
/// the layered target, one `vkCmdDraw` per view with its [`ViewPush`] (pose, layer, heights).
struct ViewDraws {
    pipeline: SurfacePipeline,
    pushes: Vec<ViewPush>,
    /// A window's tiles, one per view (layer 0 each); empty: one layer per view.
    tiles: Vec<vk::Rect2D>,
    /// Bumped whenever `pushes` change: the recorded draws' key.
    generation: u64,
}

/// The renderer's side of the post stage.
struct PostStage {
    /// Scene image `i` + the target's depth: where frame f's draw renders (pair f mod K).
    framebuffers: Vec<Framebuffer>,
    /// Their depth attachment (after them: field order is drop order).
    _depth: Image,
    /// The copy submissions' command buffers, a ring (off Vulkan's queue).
    copy_cmds: Vec<vk::CommandBuffer>,
    /// What each copy command buffer holds (None: not recorded yet, or its recording failed):
    /// recorded again only when that changes.
    copy_keys: Vec<Option<CopyKey>>,
    /// Timestamps around the copy submissions (PostCopy spans).
    copy_timer: Option<DrawTimer>,
}

/// How [`Renderer::record`] begins a draw's command buffer, before the render pass.
enum Start<'a> {
    /// A one-submission frame in one command buffer: its write (steps 1–3), timed.
    Compute(RecordCompute<'a>),
    /// A split frame: the timer's first two timestamps (when timing).
    Timed,
    /// A one-submission frame's draw, reused: its write is a command buffer of its own just
    /// before it in the batch (steps 1–3 of [`Renderer::record`]), which wrote the first timestamps.
    AfterWrite,
}

/// What a reusable draw was recorded for: if any of it changes, the draw is recorded again.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DrawKey {
    framebuffer: vk::Framebuffer,
    extent: vk::Extent2D,
    push: SurfacePush,
    /// The post stage's pair whose scene the draw renders and hands over (off Vulkan's queue).
    post_pair: Option<usize>,
    /// The views' pushes ([`ViewDraws::generation`]; 0 without views).
    views: u64,
    /// Recorded to follow a one-submission frame's write ([`Start::AfterWrite`]).
    joined: bool,
}

/// What a copy command buffer was recorded for ([`Renderer::copy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CopyKey {
    pair: usize,
    source: Which,
    dest: CopyDest,
}

/// A command buffer recorded once and submitted every time its (index, slot) comes round.
struct ReusedDraw {
    cmd: vk::CommandBuffer,
    /// None: not recorded yet, or its last recording failed.
    key: Option<DrawKey>,
}

/// The push constants for a grid seen through `camera` in a viewport of `extent`.
///
/// # Examples
///
/// ```
/// use ash::vk;
/// use vkhip::camera::OrbitCamera;
/// use vkhip::render::surface_push;
/// use vkhip::sim::Grid;
///
/// let cam = OrbitCamera::default();
/// let push = surface_push(&cam, Grid { width: 64, height: 32 }, vk::Extent2D { width: 1280, height: 720 });
/// assert_eq!((push.width, push.height), (64, 32));
/// assert_eq!(push.view_proj, cam.view_proj(1280.0 / 720.0).to_cols_array_2d());
/// assert_eq!(push.as_bytes().len(), vkhip::shaders::SURFACE_PUSH_SIZE as usize);
/// ```
pub fn surface_push(camera: &OrbitCamera, grid: Grid, extent: vk::Extent2D) -> SurfacePush {
    let aspect = extent.width as f32 / extent.height.max(1) as f32;
    SurfacePush::new(camera.view_proj(aspect), camera.eye(), grid, 1.0)
}

/// The push constants for a grid seen through `pose` in a viewport of `extent` (one view).
pub fn pose_push(pose: &Pose, grid: Grid, extent: vk::Extent2D) -> SurfacePush {
    let aspect = extent.width as f32 / extent.height.max(1) as f32;
    SurfacePush::new(pose.view_proj(aspect), pose.eye.into(), grid, 1.0)
}

/// The push constants of `--views`: view i through `poses[i]` into layer i, reading environment
/// i of the slot when there are `envs` > 1 of them (`envs` == the views), else environment 0.
///
/// ```
/// use ash::vk;
/// use vkhip::camera::Pose;
/// use vkhip::render::view_pushes;
/// use vkhip::sim::Grid;
///
/// let grid = Grid { width: 4, height: 3 };
/// let pushes = view_pushes(&Pose::default_spread(3), grid, vk::Extent2D { width: 8, height: 8 }, 3);
/// assert_eq!(pushes.iter().map(|p| (p.layer, p.heights_base)).collect::<Vec<_>>(), [(0, 0), (1, 12), (2, 24)]);
/// ```
pub fn view_pushes(poses: &[Pose], grid: Grid, extent: vk::Extent2D, envs: u32) -> Vec<ViewPush> {
    poses
        .iter()
        .enumerate()
        .map(|(i, pose)| ViewPush {
            surface: pose_push(pose, grid, extent),
            layer: i as u32,
            heights_base: if envs > 1 { (i * grid.len()) as u32 } else { 0 },
        })
        .collect()
}

/// The tiles of `n` views in an image of `extent`: ⌈√n⌉ columns, row by row (as
/// [`crate::image::Rgba::tiled`]), each at least 1×1.
///
/// ```
/// use ash::vk;
/// let tiles = vkhip::render::view_tiles(5, vk::Extent2D { width: 90, height: 40 });
/// assert_eq!(tiles.len(), 5);
/// assert_eq!((tiles[4].offset.x, tiles[4].offset.y, tiles[4].extent.width, tiles[4].extent.height), (30, 20, 30, 20));
/// ```
pub fn view_tiles(n: u32, extent: vk::Extent2D) -> Vec<vk::Rect2D> {
    let (cols, rows) = crate::image::tile_grid(n);
    let (w, h) = ((extent.width / cols).max(1), (extent.height / rows).max(1));
    (0..n)
        .map(|i| vk::Rect2D {
            offset: vk::Offset2D { x: ((i % cols) * w) as i32, y: ((i / cols) * h) as i32 },
            extent: vk::Extent2D { width: w, height: h },
        })
        .collect()
}

impl Renderer {
    pub fn new(
        ctx: &Arc<Context>,
        color_format: vk::Format,
        final_layout: vk::ImageLayout,
        slots: &[Slot],
        frames_in_flight: u64,
        joined: bool,
        post_on_queue: bool,
    ) -> Result<Self, VkError> {
        let in_flight = frames_in_flight.max(1) as usize;
        let render_pass = RenderPass::new(ctx, color_format, final_layout)?;
        let pipeline = SurfacePipeline::new(ctx, &render_pass, slots)?;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(ctx.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid device.
        let pool = unsafe { ctx.device.create_command_pool(&info, None) }.call("vkCreateCommandPool")?;
        let layout = if joined { Layout::Joined } else { Layout::Split };
        let timer = DrawTimer::with_post(ctx, in_flight, layout, post_on_queue)?;
        let mut me = Renderer {
            timer,
            pool,
            cmds: Vec::new(),
            slot_buffers: slots.iter().map(|s| s.buffer).collect(),
            in_flight,
            reused: Vec::new(),
            slots: slots.len().max(1),
            pipeline,
            overlay: None,
            post: None,
            views: None,
            render_pass,
            ctx: ctx.clone(),
        };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count((in_flight * (1 + me.slots)) as u32);
        // SAFETY: pool owned by `me`.
        let mut all =
            unsafe { ctx.device.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        me.reused = all.split_off(in_flight).into_iter().map(|cmd| ReusedDraw { cmd, key: None }).collect();
        me.cmds = all;
        Ok(me)
    }

    /// Set up the post stage: a framebuffer per scene image of `images` (with one depth image of
    /// their extent, shared by every frame as a target's is), and the copy submissions' command
    /// buffers: F + P of them (P = `post_batch`, the plan's post batch), since a batch's P copies
    /// are submitted together, up to P − 1 frames after their draws. The renderer's render pass
    /// must have been made for [`crate::vk::post::POST_FORMAT`] with final layout `GENERAL`.
    pub fn attach_post(&mut self, images: &PostImages, post_batch: usize) -> Result<(), VkError> {
        let depth = Image::new(
            &self.ctx,
            images.extent,
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        )?;
        let framebuffers = images
            .pairs
            .iter()
            .map(|p| {
                Framebuffer::new(
                    &self.ctx,
                    self.render_pass.handle,
                    &[p.scene.view(), depth.view],
                    images.extent,
                )
            })
            .collect::<Result<_, _>>()?;
        let copies = self.in_flight + post_batch.max(1);
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(copies as u32);
        // SAFETY: the pool is owned by the renderer.
        let copy_cmds =
            unsafe { self.ctx.device.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        let copy_timer = DrawTimer::new(&self.ctx, copies, Layout::PostCopy)?;
        let copy_keys = vec![None; copy_cmds.len()];
        self.post = Some(PostStage { framebuffers, _depth: depth, copy_cmds, copy_keys, copy_timer });
        Ok(())
    }

    /// Draw N views (one per layer of a layered framebuffer given to [`Self::draw`]) with
    /// `pushes`, one per view, instead of the one surface of `draw`'s push (the layered
    /// pipeline is made on the first call, for `slots`). Called again with new pushes (new
    /// poses), the draws recorded so far are recorded again on their next use.
    pub fn set_views(&mut self, slots: &[Slot], pushes: Vec<ViewPush>) -> Result<(), VkError> {
        self.set_tiled_views(slots, pushes, Vec::new())
    }

    /// [`Self::set_views`] into one image: view i in `tiles[i]` (its viewport and scissor), every
    /// push's layer 0 (a window shows the views tiled).
    pub fn set_tiled_views(
        &mut self,
        slots: &[Slot],
        pushes: Vec<ViewPush>,
        tiles: Vec<vk::Rect2D>,
    ) -> Result<(), VkError> {
        match self.views.as_mut() {
            Some(v) => {
                v.pushes = pushes;
                v.tiles = tiles;
                v.generation += 1;
            }
            None => {
                let pipeline = SurfacePipeline::layered(&self.ctx, &self.render_pass, slots)?;
                self.views = Some(ViewDraws { pipeline, pushes, tiles, generation: 1 });
            }
        }
        Ok(())
    }

    /// How many copy command buffers the post stage cycles through (0 without one): the copy of
    /// frame f reuses the buffer of frame f − this.
    pub fn copy_buffers(&self) -> usize {
        self.post.as_ref().map_or(0, |p| p.copy_cmds.len())
    }

    /// Post stage, off Vulkan's queue: submit the copies of `jobs` (each frame's output, or its
    /// scene, to its destination) in ONE vkQueueSubmit, one batch per copy in order, each with its
    /// sync (wait `posted`, signal `presented`; [`crate::sync::FrameSync::copy_sync`]) plus the
    /// target's own waits and signals (swapchain acquire / present): the last, partial post
    /// batch's copies, after its hand-off (a frame's due copies go in its draw's submission
    /// instead, [`Self::draw`]'s `copies`). The caller made sure each index's copy command buffer is free: its last
    /// user, the copy of frame f − [`Self::copy_buffers`], finished (`presented` reached it); the
    /// jobs are fewer than the ring, so no two share a buffer. A command buffer is recorded
    /// again only when its pair, source or destination changed: a copy depends on nothing else
    /// (its timestamps on the ring index alone), and the waits and signals are given at submit.
    pub fn copy(&mut self, jobs: &[CopyJob<'_>]) -> Result<(), DrawError> {
        let copies = self.record_copies(jobs)?;
        let batches: Few<_> = copies.iter().map(RecordedCopy::batch).collect();
        self.ctx.submit_each(&batches, vk::Fence::null())?;
        self.copies_submitted(&copies);
        Ok(())
    }

    /// The copies of `jobs`, ready to submit in order after whatever the caller submits before
    /// them (see [`Self::copy`]): their command buffers recorded where needed, the profiler's
    /// record of each made (its waits, the copy, its signals).
    fn record_copies(&mut self, jobs: &[CopyJob<'_>]) -> Result<Vec<RecordedCopy>, DrawError> {
        let stage = self
            .post
            .as_mut()
            .ok_or_else(|| SyncError::Bridge("internal: a post copy without Renderer::attach_post".into()))?;
        if jobs.len() >= stage.copy_cmds.len() {
            return Err(SyncError::Bridge(format!(
                "internal: {} copies at once, {} copy command buffers",
                jobs.len(),
                stage.copy_cmds.len()
            ))
            .into());
        }
        let d = &self.ctx.device;
        let mut recorded = Vec::with_capacity(jobs.len());
        if let Some(first) = jobs.first() {
            program::submit(Track::Queue, first.frame);
        }
        for job in jobs {
            // The profiler's record: each copy's waits, the copy, its signals (one batch each).
            for &(sem, v) in &job.sync.profile_waits {
                program::wait(Track::Queue, sem, v, job.frame);
            }
            if stage.copy_timer.is_some() {
                program::scope(Track::Queue, Phase::PostCopy, job.frame..job.frame + 1);
            }
            for &(sem, v) in &job.sync.profile_signals {
                program::signal(Track::Queue, sem, v, job.frame);
            }
            let index = (job.frame % stage.copy_cmds.len() as u64) as usize;
            let cmd = stage.copy_cmds[index];
            if let Some(t) = stage.copy_timer.as_mut() {
                t.prepare(index, job.frame);
            }
            let key = Some(CopyKey { pair: job.post.pair, source: job.post.source, dest: job.post.dest });
            if stage.copy_keys[index] != key {
                stage.copy_keys[index] = None;
                // SAFETY: the caller saw this index's last copy (frame f − copy_buffers) finish;
                // the pool allows resets; every handle recorded outlives the submission (teardown
                // order).
                unsafe {
                    d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                        .call("vkResetCommandBuffer")?;
                    d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                        .call("vkBeginCommandBuffer")?;
                    if let Some(t) = stage.copy_timer.as_ref() {
                        t.record_begin(cmd, index, vk::PipelineStageFlags::TRANSFER);
                    }
                    job.post.images.cmd_copy_out(cmd, job.post.pair, job.post.source, &job.post.dest);
                    if let Some(t) = stage.copy_timer.as_ref() {
                        t.end(cmd, index);
                    }
                    d.end_command_buffer(cmd).call("vkEndCommandBuffer")?;
                }
                stage.copy_keys[index] = key;
            }
            let (waits, signals) = with_target(&job.sync, job.waits, job.signals);
            recorded.push(RecordedCopy { index, cmd: [cmd], waits, signals });
        }
        Ok(recorded)
    }

    /// After the copies of [`Self::record_copies`] were submitted: their timestamps are pending.
    fn copies_submitted(&mut self, copies: &[RecordedCopy]) {
        if let Some(t) = self.post.as_mut().and_then(|s| s.copy_timer.as_mut()) {
            for c in copies {
                t.submitted(c.index);
            }
        }
    }

    /// Draw `slot` into `framebuffer` as frame `frame` and submit it with `sync` plus the
    /// target's own waits/signals (swapchain acquire / present), with the frame-time overlay of
    /// `overlay` on top when given. With `sync.joined`, `compute` records the frame's write of
    /// the slot first, in the same command buffer, between two barriers (see [`crate::sync`], "One
    /// submission per frame"). The caller has throttled, so every command buffer of `frame`'s
    /// index is free: the last submission of each was frame − F or earlier. `copies` (the post
    /// stage off Vulkan's queue: the copies due with this draw, as for [`Self::copy`]) go in the
    /// same vkQueueSubmit, a batch each after the draw's.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &mut self,
        frame: u64,
        slot: usize,
        framebuffer: vk::Framebuffer,
        extent: vk::Extent2D,
        push: &SurfacePush,
        sync: &DrawSync,
        extra_waits: &[(vk::Semaphore, vk::PipelineStageFlags)],
        extra_signals: &[vk::Semaphore],
        overlay: Option<&OverlayHistory>,
        compute: Option<RecordCompute<'_>>,
        post: Option<PostFrame<'_>>,
        copies: &[CopyJob<'_>],
    ) -> Result<(), DrawError> {
        // The post stage renders into scene `pair` at the images' size.
        let (framebuffer, extent) = match (&post, &self.post) {
            (None, _) => (framebuffer, extent),
            (Some(p), Some(stage)) => (stage.framebuffers[p.pair].handle, p.images.extent),
            (Some(_), None) => {
                return Err(
                    SyncError::Bridge("internal: a post frame without Renderer::attach_post".into()).into()
                )
            }
        };
        if overlay.is_some() && self.overlay.is_none() {
            self.overlay = Some(OverlayPipeline::new(&self.ctx, &self.render_pass, self.in_flight)?);
        }
        let index = (frame % self.in_flight as u64) as usize;
        if let Some(t) = self.timer.as_mut() {
            // The timestamps' host side: what the index's triple held is read before it is reused.
            t.prepare(index, frame);
        }
        // What the command buffer holds, for the profiler's record of the queue (below).
        let shape = (sync.joined, post.as_ref().map(|p| (p.on_queue, p.filter.is_some())));
        let joined = match (sync.joined, compute) {
            (true, Some(c)) => Some(c),
            (true, None) => {
                return Err(SyncError::Bridge(format!(
                    "internal: frame {frame} is joined but has no compute"
                ))
                .into())
            }
            (false, _) => None,
        };
        let post_on_queue = post.as_ref().is_some_and(|p| p.on_queue);
        let mut cmds = [vk::CommandBuffer::null(); 2];
        let used = if overlay.is_some() || post_on_queue {
            cmds[0] = self.cmds[index];
            let start = match joined {
                Some(c) => Start::Compute(c),
                None => Start::Timed,
            };
            self.record(cmds[0], index, slot, framebuffer, extent, push, overlay, start, post)?;
            &cmds[..1]
        } else {
            // Off Vulkan's queue the post stage adds only the scene's hand-off, which depends on
            // the pair alone (the filter and the copy are not in this command buffer).
            let key = Some(DrawKey {
                framebuffer,
                extent,
                push: *push,
                post_pair: post.as_ref().map(|p| p.pair),
                views: self.views.as_ref().map_or(0, |v| v.generation),
                joined: joined.is_some(),
            });
            let i = index * self.slots + slot;
            let draw = self.reused[i].cmd;
            if self.reused[i].key != key {
                self.reused[i].key = None;
                let start = if joined.is_some() { Start::AfterWrite } else { Start::Timed };
                self.record(draw, index, slot, framebuffer, extent, push, None, start, post)?;
                self.reused[i].key = key;
            }
            match joined {
                // A one-submission frame: only its write (whose parameters change every frame)
                // is recorded afresh, into a command buffer of its own ahead of the reused draw
                // in the same batch; the write's barriers order the two as within one buffer.
                Some(compute) => {
                    cmds = [self.cmds[index], draw];
                    self.begin(cmds[0], vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
                    // On failure the buffer stays in the recording state; its next use resets it.
                    self.record_compute(cmds[0], index, slot, compute)?;
                    // SAFETY: `cmds[0]` is recording.
                    unsafe { self.ctx.device.end_command_buffer(cmds[0]) }.call("vkEndCommandBuffer")?;
                    &cmds[..]
                }
                None => {
                    cmds[0] = draw;
                    &cmds[..1]
                }
            }
        };

        record_draw(frame, sync, shape, self.timer.is_some());
        // The copies due with this draw go in its vkQueueSubmit, a batch each after the draw's
        // (one call into the driver instead of two; see `crate::sync`, "The post stage").
        let copies = if copies.is_empty() { Vec::new() } else { self.record_copies(copies)? };
        let (waits, signals) = with_target(sync, extra_waits, extra_signals);
        let draw = QueueBatch { cmds: used, waits: &waits, signals: &signals };
        let batches: Few<_> = std::iter::once(draw).chain(copies.iter().map(RecordedCopy::batch)).collect();
        self.ctx.submit_each(&batches, vk::Fence::null())?;
        self.copies_submitted(&copies);
        if let Some(t) = self.timer.as_mut() {
            t.submitted(index);
        }
        Ok(())
    }

    /// Forget every recorded draw: call when a framebuffer given to [`Self::draw`] is destroyed
    /// (a swapchain re-creation), since a new one may reuse its handle.
    pub fn forget_recorded(&mut self) {
        self.reused.iter_mut().for_each(|r| r.key = None);
        if let Some(p) = self.post.as_mut() {
            p.copy_keys.iter_mut().for_each(|k| *k = None);
        }
    }

    /// Record into `cmd` (not pending): as `start` says (with [`Start::Compute`], a
    /// one-submission frame, the write of `slot` between its two barriers); then clear, the
    /// surface from `slot`, the overlay when given; and the timestamps of set `index` when timing
    /// (see [`crate::vk::timestamps`]).
    ///
    /// A one-submission frame records, in one command buffer (or steps 1–3 in one and 4 in the
    /// next of the same batch: a barrier's scopes are the queue's submission order, not one
    /// command buffer):
    /// 1. a barrier from every earlier command of the queue (`ALL_COMMANDS`, `SHADER_WRITE`) to
    ///    the compute stage's writes: the slot's previous draw (frame f − K, submitted earlier)
    ///    has finished, as the split shape's wait for `rendered ≥ f+1−K` promised, and the
    ///    previous write of the slot is available;
    /// 2. the write (`compute`: the shader's dispatch or the CUDA kernel's launch);
    /// 3. a buffer memory barrier on the slot, compute-shader write → vertex-shader read, in
    ///    place of the split shape's wait for `computed ≥ f+1`;
    /// 4. the draw.
    ///
    /// With timing, timestamps after 1 (write start) and after 2 (write end), after 3 at the
    /// vertex stage (readable) and at the end: the checker proves write end ≤ readable and the
    /// previous draw's end ≤ write start from them, as for two submissions.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        cmd: vk::CommandBuffer,
        index: usize,
        slot: usize,
        framebuffer: vk::Framebuffer,
        extent: vk::Extent2D,
        push: &SurfacePush,
        overlay: Option<&OverlayHistory>,
        start: Start<'_>,
        post: Option<PostFrame<'_>>,
    ) -> Result<(), DrawError> {
        let d = &self.ctx.device;
        let clear = [
            vk::ClearValue { color: vk::ClearColorValue { float32: CLEAR_COLOR } },
            vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } },
        ];
        let area = vk::Rect2D { offset: vk::Offset2D::default(), extent };
        let viewport = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: extent.width as f32,
            height: extent.height as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        self.begin(cmd, vk::CommandBufferUsageFlags::empty())?;
        match (start, self.timer.as_ref()) {
            // On failure the buffer stays in the recording state; its next use resets it.
            (Start::Compute(compute), _) => self.record_compute(cmd, index, slot, compute)?,
            // SAFETY: `cmd` is recording, outside a render pass; see `draw` for the set.
            (Start::Timed, Some(t)) => unsafe { t.record_begin(cmd, index, HEIGHTS_READ_STAGE) },
            (Start::Timed | Start::AfterWrite, _) => {}
        }
        // SAFETY: `cmd` is recording, outside a render pass.
        unsafe {
            if let Some(p) = &post {
                // The scene's previous reader, the filter of frame f−K, is ordered before this
                // command buffer: by a semaphore wait, a host wait, or (on the queue) this
                // barrier from its compute-shader reads to the render pass.
                p.images.cmd_before_draw(cmd, p.pair);
                if p.on_queue {
                    cmd_memory_barrier(
                        d,
                        cmd,
                        (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::empty()),
                        (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::empty()),
                    );
                }
            }
            let rp = vk::RenderPassBeginInfo::default()
                .render_pass(self.render_pass.handle)
                .framebuffer(framebuffer)
                .render_area(area)
                .clear_values(&clear);
            d.cmd_begin_render_pass(cmd, &rp, vk::SubpassContents::INLINE);
            d.cmd_set_viewport(cmd, 0, &[viewport]);
            d.cmd_set_scissor(cmd, 0, &[area]);
        }
        match &self.views {
            Some(v) => {
                v.pipeline.record_views(cmd, slot, &v.pushes, &v.tiles);
                if !v.tiles.is_empty() {
                    // SAFETY: inside the render pass; the overlay draws over the whole image.
                    unsafe {
                        d.cmd_set_viewport(cmd, 0, &[viewport]);
                        d.cmd_set_scissor(cmd, 0, &[area]);
                    }
                }
            }
            None => self.pipeline.record_draw(cmd, slot, push),
        }
        if let (Some(history), Some(pipeline)) = (overlay, self.overlay.as_mut()) {
            // SAFETY: inside the render pass (same one the pipeline was made for); the throttle
            // freed this frame's index, so its sample buffer is no longer read.
            unsafe { pipeline.record(cmd, index, extent, history) };
        }
        // SAFETY: inside the render pass begun above.
        unsafe {
            d.cmd_end_render_pass(cmd);
            if let Some(t) = self.timer.as_ref() {
                t.end(cmd, index);
            }
        }
        if let Some(p) = post {
            self.record_post(cmd, index, p)?;
        }
        // SAFETY: `cmd` is recording.
        unsafe { d.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;
        Ok(())
    }

    /// Reset `cmd` and begin recording it with `flags`.
    fn begin(&self, cmd: vk::CommandBuffer, flags: vk::CommandBufferUsageFlags) -> Result<(), VkError> {
        let d = &self.ctx.device;
        // SAFETY: `cmd` is not pending (the throttle: see `draw`); its pool allows resets.
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()).call("vkResetCommandBuffer")?;
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default().flags(flags))
                .call("vkBeginCommandBuffer")
        }
    }

    /// After the draw into scene `post.pair`: hand it to the filter; on Vulkan's queue, then the
    /// filter (between its two barriers, timed as PostFilter) and the copy (timed as PostCopy).
    fn record_post(
        &self,
        cmd: vk::CommandBuffer,
        index: usize,
        post: PostFrame<'_>,
    ) -> Result<(), DrawError> {
        let timer = self.timer.as_ref().filter(|_| post.on_queue);
        let compute = vk::PipelineStageFlags::COMPUTE_SHADER;
        // SAFETY: `cmd` is recording, outside a render pass, after the render pass that drew the
        // scene; the timer's set `index` was reset with the draw's (see `draw`).
        unsafe {
            post.images.cmd_after_draw(cmd, post.pair, post.on_queue);
            if !post.on_queue {
                return Ok(());
            }
            if let Some(t) = timer {
                t.post_stamp(cmd, index, 0, compute);
            }
        }
        if let Some(filter) = post.filter {
            filter(cmd)?;
        }
        // SAFETY: as above.
        unsafe {
            if let Some(t) = timer {
                t.post_stamp(cmd, index, 1, compute);
            }
            post.images.cmd_after_filter(cmd);
            post.images.cmd_copy_out(cmd, post.pair, post.source, &post.dest);
            if let Some(t) = timer {
                t.post_stamp(cmd, index, 2, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
            }
        }
        Ok(())
    }

    /// Steps 1–3 of a one-submission frame (see [`Self::record`]), with their timestamps.
    fn record_compute(
        &self,
        cmd: vk::CommandBuffer,
        index: usize,
        slot: usize,
        compute: RecordCompute<'_>,
    ) -> Result<(), DrawError> {
        let d = &self.ctx.device;
        let timer = self.timer.as_ref();
        let write = vk::PipelineStageFlags::COMPUTE_SHADER;
        // SAFETY: `cmd` is recording, outside a render pass; the caller throttled, so the
        // timestamp set `index` is free (see `draw`).
        unsafe {
            if let Some(t) = timer {
                t.reset(cmd, index);
            }
            cmd_memory_barrier(
                d,
                cmd,
                (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::SHADER_WRITE),
                (write, vk::AccessFlags::SHADER_WRITE),
            );
            if let Some(t) = timer {
                t.stamp(cmd, index, 0, write);
            }
        }
        compute(cmd)?;
        let buffer = *self.slot_buffers.get(slot).ok_or_else(|| {
            SyncError::Bridge(format!("internal: slot {slot} of {}", self.slot_buffers.len()))
        })?;
        let barrier = vk::BufferMemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .buffer(buffer)
            .offset(0)
            .size(vk::WHOLE_SIZE);
        // SAFETY: as above; the slot's buffer outlives the renderer's command buffers.
        unsafe {
            if let Some(t) = timer {
                t.stamp(cmd, index, 1, write);
            }
            d.cmd_pipeline_barrier(
                cmd,
                write,
                HEIGHTS_READ_STAGE,
                vk::DependencyFlags::empty(),
                &[],
                &[barrier],
                &[],
            );
            if let Some(t) = timer {
                t.stamp(cmd, index, 2, HEIGHTS_READ_STAGE);
            }
        }
        Ok(())
    }

    /// Timestamps each frame's draw command buffer writes (0 without GPU timing).
    pub fn stamps_per_frame(&self) -> u32 {
        self.timer.as_ref().map_or(0, DrawTimer::stamps_per_frame)
    }
}

impl Renderer {
    /// Move the draws' GPU spans read back so far into `out` (Vulkan ticks). With `finish`, first
    /// read every pending one: only once the frames have finished (after the protocol's
    /// shutdown). Nothing without timestamp support.
    pub fn take_spans(&mut self, out: &mut Vec<Span>, finish: bool) {
        let copies = self.post.as_mut().and_then(|p| p.copy_timer.as_mut());
        for t in self.timer.as_mut().into_iter().chain(copies) {
            if finish {
                t.finish();
            }
            t.take_spans(out);
        }
    }
}

/// Submit `cmd` with `sync`'s waits and signals plus the target's binary ones (swapchain acquire
/// at its stage, present).
/// The profiler's record of a draw's submission ([`crate::profile::program`]), in the order
/// the queue runs it: the render thread's submission, the waits of `sync`; in a one-submission
/// frame the barrier before the write, the write (on the compute track: the same queue), the
/// barrier after it; with the post stage on the queue the barrier from the filters before
/// (the scene's previous reader); the draw; then the filter and the copy between their
/// barriers; the signals of `sync` last. `shape`: (joined, post (on the queue, filter
/// recorded)); `timed`: the draw's timestamps give the scopes their times.
fn record_draw(frame: u64, sync: &DrawSync, shape: (bool, Option<(bool, bool)>), timed: bool) {
    if !program::enabled() {
        return;
    }
    let scope = |track, phase| {
        if timed {
            program::scope(track, phase, frame..frame + 1);
        }
    };
    let (joined, post) = shape;
    let on_queue = post.is_some_and(|(q, _)| q);
    program::submit(Track::Queue, frame);
    if joined || on_queue {
        // The command buffer holds the compute track's work too.
        program::submit(Track::Compute, frame);
    }
    for &(sem, v) in &sync.profile_waits {
        program::wait(Track::Queue, sem, v, frame);
    }
    if joined {
        program::barrier(Track::Queue, Track::Compute, frame);
        scope(Track::Compute, Phase::Write);
        program::barrier(Track::Compute, Track::Queue, frame);
    }
    if on_queue {
        program::barrier(Track::Compute, Track::Queue, frame);
    }
    scope(Track::Queue, Phase::Draw);
    if let Some((true, filter)) = post {
        program::barrier(Track::Queue, Track::Compute, frame);
        if filter {
            scope(Track::Compute, Phase::PostFilter);
        }
        program::barrier(Track::Compute, Track::Queue, frame);
        scope(Track::Queue, Phase::PostCopy);
    }
    for &(sem, v) in &sync.profile_signals {
        program::signal(Track::Queue, sem, v, frame);
    }
}

/// A submission's waits and signals: the protocol's (`sync`), then the target's own (a swapchain
/// image's acquire and present semaphores, binary: value 0).
#[allow(clippy::type_complexity)]
fn with_target(
    sync: &DrawSync,
    extra_waits: &[(vk::Semaphore, vk::PipelineStageFlags)],
    extra_signals: &[vk::Semaphore],
) -> (Few<(vk::Semaphore, u64, vk::PipelineStageFlags)>, Few<(vk::Semaphore, u64)>) {
    let waits =
        sync.waits.iter().copied().chain(extra_waits.iter().map(|&(s, stage)| (s, 0, stage))).collect();
    let signals = sync.signals.iter().copied().chain(extra_signals.iter().map(|&s| (s, 0))).collect();
    (waits, signals)
}

impl Drop for Renderer {
    fn drop(&mut self) {
        // Frames it submitted may still be pending; none can wait forever (the protocol releases
        // waiting draws after a compute-side failure).
        if let Err(e) = self.ctx.queue_wait_idle() {
            log::warn!("renderer teardown: {e}");
        }
        // The scene framebuffers go with the queue idle, before the pool.
        self.post = None;
        // SAFETY: the queue is idle; destroying the pool frees the command buffers.
        unsafe { self.ctx.device.destroy_command_pool(self.pool, None) };
    }
}
