//! Frames into the framework: the app's renderer draws offscreen, and each frame is copied on
//! Vulkan's side into one of K linear shared buffers that a consumer (CUDA through DLPack, or the
//! host) reads.
//!
//! Frame f, slot s = f mod K, one submission after the app's own frame (throttle → heights →
//! draw, exactly the headless run's):
//! - waits the target's "frame f is drawn" value (`rendered` ≥ f+1) and, from f = K on,
//!   `released` ≥ f+1−K (the consumer has finished reading slot s's previous frame), both at the
//!   transfer stage, on the GPU;
//! - **the one GPU copy**: `vkCmdCopyImageToBuffer` from the offscreen colour image (RGBA8,
//!   `TRANSFER_SRC_OPTIMAL` after the render pass) into buffer s, tightly packed rows
//!   (`height × width × 4` bytes), recorded once per slot at creation (`CopyCommands`);
//! - a barrier making the bytes visible to the host (the host consumer), and with a CUDA
//!   importer the buffer's release to the external queue family (acquired back before the
//!   copy);
//! - signals `ready` = f+1.
//!
//! The render pass orders the next draw after the copy (its incoming dependency includes the
//! transfer stage), so a consumer K frames behind holds the GPU back: the draw after a copy that
//! waits for `released` waits too. A host consumer ([`Importer::Host`]) that still holds frame
//! f−1−K when frame f is asked for gets an error from [`Frames::render`] instead (that frame's
//! throttle would wait for a draw stuck behind the held frame). A CUDA consumer releases on its
//! stream, ahead of what the host can see, so there [`Frames::render`]'s throttle waits (for a
//! value Vulkan signals, up to the app's wait timeout, then an error).
//!
//! Teardown ([`Drop`]): copies still waiting for `released` are let go by a host signal, the
//! protocol is stopped and the queue drained; then the command buffers, the shared buffers, the
//! timelines and the session go, in that order.

use super::{parse_run, EmbedError};
use crate::app::frame::{compute_and_draw, throttle, Clock, DrawTarget};
use crate::app::headless::Offscreen;
use crate::app::profiling::FrameProfile;
use crate::camera::Pose;
use crate::cli::TimeMode;
use crate::profile::RenderMarks;
use crate::render::{pose_push, view_pushes};
use crate::vk::device::Context;
use crate::vk::external::Semaphore;
use crate::vk::target::OffscreenTarget;
use crate::vk::{CallContext as _, VkError};
use ash::vk;
use std::sync::Arc;
use vkhip_interop::vulkan::SharedBuffer;
use vkhip_interop::{ExportedMemory, ImportFd};

/// Who reads the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Importer {
    /// The host, through the buffers' mappings (memory the host maps: on a GPU, what a program
    /// without a compute API reads its frames from); the timelines are the app's own, not
    /// exportable.
    Host,
    /// CUDA imports the buffers and both timelines (exportable: a GPU with
    /// `VK_KHR_external_semaphore_fd`).
    Cuda,
}

/// What [`Frames::new`] builds.
#[derive(Clone, Debug)]
pub struct FramesOptions {
    /// The `vkhip` command's flags for the frames: `--size`, `--grid`, `--backend` (who writes
    /// the heights), `--sync`, `--time`, `--dt`, `--validation`, … (`--capture`, `--trace`,
    /// `--overlay` and `--post` are refused: the frames go to the consumer).
    pub args: Vec<String>,
    /// K, the shared buffers (1..=8); frame f uses buffer f mod K.
    pub slots: usize,
    pub importer: Importer,
    /// Time each frame's draw and copy on the GPU for [`Frames::gpu_times`] (the raster
    /// limit): two timestamps, a query reset and a barrier more in each copy, so measure it in
    /// a run of its own, as `vkhip bench`'s GPU limit row is (default off: the copy is exactly
    /// the one-view path's).
    pub gpu_times: bool,
}

impl FramesOptions {
    pub fn new(args: impl IntoIterator<Item = impl Into<String>>, slots: usize, importer: Importer) -> Self {
        FramesOptions { args: args.into_iter().map(Into::into).collect(), slots, importer, gpu_times: false }
    }

    /// Time the draws and the copies ([`FramesOptions::gpu_times`], [`Frames::gpu_times`]).
    pub fn with_gpu_times(mut self) -> Self {
        self.gpu_times = true;
        self
    }

    /// Render on `device` (`--device`: a Vulkan index, or the GPU of a CUDA ordinal); the
    /// importer then opens the same GPU (the Vulkan device's UUID).
    pub fn with_device(mut self, device: crate::vk::device::DeviceArg) -> Self {
        self.args.extend(["--device".to_string(), device.to_string()]);
        self
    }

    /// N views a frame: appends `--views n` to the args (each frame is then an
    /// `(n, height, width, 4)` array; see [`Frames::set_poses`]).
    pub fn with_views(mut self, n: u32) -> Self {
        self.args.extend(["--views".to_string(), n.to_string()]);
        self
    }

    /// E environments (1 or the views): appends `--envs e` to the args.
    pub fn with_envs(mut self, e: u32) -> Self {
        self.args.extend(["--envs".to_string(), e.to_string()]);
        self
    }
}

/// The Vulkan GPU time of the frames so far: the draw and the copy alone, without the
/// hand-offs (the raster limit: `views / raster_ns_p50` views a nanosecond).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuTimes {
    /// Frames whose draw was timed.
    pub frames: u64,
    /// Median GPU time of a frame's draw (the clear and every view), ns.
    pub draw_ns_p50: f64,
    /// Median GPU time of a frame's copy into its shared buffer, ns.
    pub copy_ns_p50: f64,
    /// `draw_ns_p50 + copy_ns_p50`.
    pub raster_ns_p50: f64,
}

/// One rendered frame, on its way to the consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// The frame number f (0, 1, …).
    pub frame: u64,
    /// The shared buffer holding it once `ready` ≥ [`FrameInfo::ready_value`]: f mod K.
    pub slot: usize,
    /// f+1: the `ready` value that says the copy is done, and the `released` value the consumer
    /// signals when it has finished reading.
    pub ready_value: u64,
    pub width: u32,
    pub height: u32,
    /// N: the buffer holds a contiguous `(views, height, width, 4)` uint8 array, view i at
    /// byte i × height × width × 4.
    pub views: u32,
}

/// Timestamps around each slot's copy (2 a slot), reset inside the copy's own command buffer;
/// slot s's pair is read once `ready` says its last copy finished, before the slot's next copy
/// is submitted (so it always holds that copy's times).
struct CopyTimer {
    pool: vk::QueryPool,
    period_ns: f64,
    /// The frame whose times each slot's pair was last read for.
    read: Vec<Option<u64>>,
    ns: Vec<u64>,
}

impl CopyTimer {
    fn new(ctx: &Context, slots: usize) -> Result<Option<Self>, VkError> {
        let p = &ctx.physical;
        if p.timestamp_bits == 0 || p.timestamp_period <= 0.0 || !crate::profile::gpu_timing() {
            return Ok(None);
        }
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(2 * slots as u32);
        // SAFETY: valid device and create info.
        let pool = unsafe { ctx.device.create_query_pool(&info, None) }.call("vkCreateQueryPool")?;
        Ok(Some(CopyTimer {
            pool,
            period_ns: p.timestamp_period as f64,
            read: vec![None; slots],
            ns: Vec::new(),
        }))
    }

    /// Read slot `slot`'s times, of frame `frame`'s copy, which has finished.
    fn collect(&mut self, ctx: &Context, slot: usize, frame: u64) {
        if self.read[slot] == Some(frame) {
            return;
        }
        let mut stamps = [[0u64; 2]; 2];
        // SAFETY: two queries of this pool; with AVAILABILITY each element is (value, available).
        let got = unsafe {
            ctx.device.get_query_pool_results(
                self.pool,
                2 * slot as u32,
                &mut stamps,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WITH_AVAILABILITY,
            )
        };
        if got.is_ok() && stamps.iter().all(|s| s[1] != 0) && stamps[1][0] >= stamps[0][0] {
            self.read[slot] = Some(frame);
            if self.ns.len() >= crate::app::profiling::KEPT_DRAW_TIMES {
                self.ns.drain(..crate::app::profiling::KEPT_DRAW_TIMES / 2);
            }
            self.ns.push(((stamps[1][0] - stamps[0][0]) as f64 * self.period_ns) as u64);
        }
    }

    fn destroy(&self, ctx: &Context) {
        // SAFETY: the queue is idle (the owner's Drop drained it).
        unsafe { ctx.device.destroy_query_pool(self.pool, None) };
    }
}

/// The K copy command buffers, one per slot, recorded once (`SIMULTANEOUS_USE`: each is
/// submitted again while an earlier submission of it may still wait for `released`).
struct CopyCommands {
    pool: vk::CommandPool,
    cmds: Vec<vk::CommandBuffer>,
    ctx: Arc<Context>,
}

impl CopyCommands {
    fn new(
        ctx: &Arc<Context>,
        target: &OffscreenTarget,
        buffers: &[SharedBuffer],
        export: bool,
        timer: Option<&CopyTimer>,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family);
        // SAFETY: valid device; `info` points at a live local.
        let pool = unsafe { d.create_command_pool(&info, None) }.call("vkCreateCommandPool")?;
        let mut copies = CopyCommands { pool, cmds: Vec::new(), ctx: ctx.clone() };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(buffers.len() as u32);
        // SAFETY: a pool of this device.
        copies.cmds = unsafe { d.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        for (slot, (&cmd, buffer)) in copies.cmds.iter().zip(buffers).enumerate() {
            let begin =
                vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE);
            // SAFETY: a fresh command buffer of this device.
            unsafe { d.begin_command_buffer(cmd, &begin) }.call("vkBeginCommandBuffer")?;
            // SAFETY: `cmd` is recording; the image and the buffer are live, the image is in
            // TRANSFER_SRC_OPTIMAL after the render pass, the buffer holds the whole extent.
            unsafe { record_copy(d, cmd, target, buffer, export, timer.map(|t| (t.pool, 2 * slot as u32))) };
            // SAFETY: as above.
            unsafe { d.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;
        }
        Ok(copies)
    }
}

/// Record frame → buffer: (acquire from the importer) → the copy → visible to the host →
/// (release to the importer).
///
/// # Safety
/// As [`CopyCommands::new`] says where it calls it.
unsafe fn record_copy(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    target: &OffscreenTarget,
    buffer: &SharedBuffer,
    export: bool,
    timer: Option<(vk::QueryPool, u32)>,
) {
    let transfer_write = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
    let transfer = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::empty());
    // SAFETY: per this function's contract.
    unsafe {
        if let Some((pool, first)) = timer {
            // The slot's previous copy has finished before this one starts (it waits for
            // `released` of the frame it copied): the reset is ordered after its timestamps.
            d.cmd_reset_query_pool(cmd, pool, first, 2);
        }
        if export {
            buffer.cmd_acquire(cmd, transfer_write);
        }
        if let Some((pool, first)) = timer {
            // A barrier from the stage the submission waits at chains with its waits: the
            // timestamp after it is written once the waits are satisfied.
            crate::vk::cmd_memory_barrier(d, cmd, transfer, transfer);
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TRANSFER, pool, first);
        }
        // The one GPU copy of the frame: tiled image → linear shared buffer, tightly packed
        // rows of width × 4 bytes (vkCmdCopyImageToBuffer).
        target.cmd_copy_to_buffer(d, cmd, buffer.buffer());
        crate::vk::cmd_memory_barrier(
            d,
            cmd,
            transfer_write,
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
        );
        if export {
            buffer.cmd_release(cmd, transfer_write);
        }
        if let Some((pool, first)) = timer {
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, first + 1);
        }
    }
}

impl Drop for CopyCommands {
    fn drop(&mut self) {
        // SAFETY: the owner drains the queue first (`Frames`' Drop); freeing the pool frees its
        // command buffers.
        unsafe { self.ctx.device.destroy_command_pool(self.pool, None) };
    }
}

/// The app's renderer feeding K shared buffers (module note). Field order is teardown order,
/// after [`Drop`] has drained the queue.
pub struct Frames {
    copy_timer: Option<CopyTimer>,
    copies: CopyCommands,
    buffers: Vec<SharedBuffer>,
    /// Each buffer's host mapping (address), where its memory is host-visible.
    host: Vec<Option<usize>>,
    ready: Semaphore,
    released: Semaphore,
    profile: FrameProfile,
    clock: Clock,
    target: DrawTarget<'static>,
    offscreen: Offscreen,
    importer: Importer,
    next: u64,
    /// Every view's camera (the default spread until [`Frames::set_poses`]).
    poses: Vec<Pose>,
}

impl Frames {
    /// The session for `options.args` (the app's: device, heights backend, sync protocol,
    /// renderer, offscreen target), K shared buffers of the target's size, and the two
    /// timelines (exportable for [`Importer::Cuda`]).
    pub fn new(options: &FramesOptions) -> Result<Frames, EmbedError> {
        let run = parse_run(&options.args)?;
        let k = options.slots;
        if !(1..=8).contains(&k) {
            return Err(EmbedError::Unsupported(format!("{k} frame buffers: K is 1..=8")));
        }
        for (given, flag) in [
            (run.capture.is_some(), "--capture"),
            (run.trace.is_some(), "--trace"),
            (run.overlay, "--overlay"),
            (run.common.post != crate::compute::post::PostKind::None, "--post"),
        ] {
            if given {
                return Err(EmbedError::Unsupported(format!("{flag}: the frames go to the consumer here")));
            }
        }
        let extent = vk::Extent2D { width: run.size.width, height: run.size.height };
        let offscreen = Offscreen::with_shared(&run.common, extent, None, k as u32)
            .map_err(|e| EmbedError::from_run(&e))?;
        let ctx = offscreen.session.ctx.clone();
        let vulkan = |e: VkError| EmbedError::from_run(&e.into());
        let interop = ctx.interop().map_err(vulkan)?;
        // (views, height, width, 4), contiguous: the one copy of every layer.
        let bytes = offscreen.target.bytes();
        let buffers = (0..k)
            .map(|_| match options.importer {
                // The host reads the frames: memory it maps (on a GPU, across the bus).
                Importer::Host => interop.shared_buffer_for_host(bytes),
                Importer::Cuda => interop.shared_buffer(bytes),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| vulkan(e.into()))?;
        let host = buffers
            .iter()
            .map(|b| Ok(b.host_ptr()?.map(|p| p.as_ptr() as usize)))
            .collect::<Result<Vec<_>, vkhip_interop::Error>>()
            .map_err(|e| vulkan(e.into()))?;
        let export = options.importer == Importer::Cuda;
        if export && !ctx.physical.timeline_export {
            return Err(EmbedError::Environment(format!(
                "{} cannot export timeline semaphores as OPAQUE_FD: a CUDA consumer waits and signals them (Importer::Host reads the frames on the host)",
                ctx.physical.name
            )));
        }
        // CUDA signals `released`: the validation layer's known false positives for a foreign
        // signal are counted apart, as in the app's external runs.
        crate::vk::instance::set_foreign_signals(export);
        let ready = Semaphore::timeline(&ctx, 0, export).map_err(vulkan)?;
        let released = Semaphore::timeline(&ctx, 0, export).map_err(vulkan)?;
        let copy_timer = if options.gpu_times { CopyTimer::new(&ctx, k).map_err(vulkan)? } else { None };
        let copies = CopyCommands::new(&ctx, &offscreen.target, &buffers, export, copy_timer.as_ref())
            .map_err(vulkan)?;
        let mut profile = FrameProfile::new(&offscreen.session, None);
        if options.gpu_times {
            profile.keep_draw_times();
        }
        let target = offscreen.draw_target();
        let poses = Pose::default_spread(offscreen.views);
        // (The renderer draws the default spread already: `Offscreen` set it up.)
        Ok(Frames {
            copy_timer,
            copies,
            buffers,
            host,
            ready,
            released,
            profile,
            clock: Clock::new(run.time.unwrap_or(TimeMode::Frame), run.dt),
            target,
            offscreen,
            importer: options.importer,
            next: 0,
            poses,
        })
    }

    /// N, the views of every frame.
    pub fn views(&self) -> u32 {
        self.offscreen.views
    }

    /// E, the environments (height fields) of every frame.
    pub fn envs(&self) -> u32 {
        self.offscreen.envs
    }

    /// Every view's camera now.
    pub fn poses(&self) -> &[Pose] {
        &self.poses
    }

    /// The default cameras of `n` views ([`Pose::default_spread`]): the app's orbit camera at
    /// `n` evenly spaced azimuths; view 0 is the app's one camera.
    pub fn default_poses(n: u32) -> Vec<Pose> {
        Pose::default_spread(n)
    }

    /// Set every view's camera, from the next [`Frames::render`] on: `poses[i]` for view i,
    /// exactly N of them. Checked first (nothing changes on an error): `Unsupported` naming the
    /// view and the problem (a non-finite value, the eye at the target, up along the view
    /// direction, a field of view outside (0, 180) degrees).
    pub fn set_poses(&mut self, poses: &[Pose]) -> Result<(), EmbedError> {
        let n = self.views();
        if poses.len() != n as usize {
            return Err(EmbedError::Unsupported(format!("{} poses for {n} views", poses.len())));
        }
        for (i, p) in poses.iter().enumerate() {
            p.check().map_err(|why| EmbedError::Unsupported(format!("pose {i}: {why}")))?;
        }
        let o = &mut self.offscreen;
        let (grid, extent) = (o.session.grid, o.target.extent);
        if n == 1 {
            self.target.push = pose_push(&poses[0], grid, extent);
        } else {
            let pushes = view_pushes(poses, grid, extent, o.envs);
            o.renderer.set_views(&o.session.slots, pushes).map_err(|e| EmbedError::from_run(&e.into()))?;
        }
        self.poses = poses.to_vec();
        Ok(())
    }

    /// The Vulkan GPU time of the frames' draws and copies measured so far: the raster limit
    /// beside which the views a second are read. Waits for nothing (what has not finished is
    /// not counted yet). None unless made [`FramesOptions::with_gpu_times`], where the device
    /// has no timestamps, or with `--gpu-timing off`.
    pub fn gpu_times(&mut self) -> Result<Option<GpuTimes>, EmbedError> {
        let ctx = self.offscreen.session.ctx.clone();
        let ready = ctx.timeline_value(self.ready.handle).map_err(|e| EmbedError::from_run(&e.into()))?;
        let k = self.buffers.len() as u64;
        if let Some(t) = self.copy_timer.as_mut() {
            // Each slot's last copy, if it has finished.
            for g in self.next.saturating_sub(k)..self.next {
                if ready > g {
                    t.collect(&ctx, (g % k) as usize, g);
                }
            }
        }
        // The draws' spans come through the frame profile as frames end.
        let draws = self.profile.draw_times();
        let (Some(t), false) = (self.copy_timer.as_ref(), draws.is_empty()) else { return Ok(None) };
        if t.ns.is_empty() {
            return Ok(None);
        }
        let draw = median(draws);
        let copy = median(&t.ns);
        Ok(Some(GpuTimes {
            frames: draws.len() as u64,
            draw_ns_p50: draw,
            copy_ns_p50: copy,
            raster_ns_p50: draw + copy,
        }))
    }

    /// K.
    pub fn slots(&self) -> usize {
        self.buffers.len()
    }

    /// (width, height) of every frame.
    pub fn extent(&self) -> (u32, u32) {
        (self.target.extent.width, self.target.extent.height)
    }

    /// Frames rendered so far (the next frame's number).
    pub fn rendered(&self) -> u64 {
        self.next
    }

    /// Buffer `slot`'s memory for an importer (a new fd each call).
    pub fn slot_memory(&self, slot: usize) -> Result<ExportedMemory, EmbedError> {
        let buffer = self.buffers.get(slot).ok_or_else(|| self.no_slot(slot))?;
        buffer.export().map_err(|e| EmbedError::from_run(&VkError::from(e).into()))
    }

    /// (ready, released) for an importer (new fds each call); refused unless the frames were
    /// made for [`Importer::Cuda`].
    pub fn timeline_fds(&self) -> Result<(ImportFd, ImportFd), EmbedError> {
        let export = |s: &Semaphore| {
            s.export().map_err(|e| match e {
                VkError::Unsupported(why) => EmbedError::Unsupported(format!(
                    "the frame timelines: {why} (Importer::Cuda exports them)"
                )),
                other => EmbedError::from_run(&other.into()),
            })
        };
        Ok((export(&self.ready)?, export(&self.released)?))
    }

    /// Draw the next frame (f) and copy it into buffer f mod K: the app's frame (throttle →
    /// heights → draw), then the copy's submission, waiting `released` ≥ f+1−K on the GPU and
    /// signalling `ready` = f+1. Returns once submitted.
    pub fn render(&mut self) -> Result<FrameInfo, EmbedError> {
        let f = self.next;
        let k = self.buffers.len() as u64;
        let slot = (f % k) as usize;
        if self.importer == Importer::Host && f > k {
            // Frame f−1's copy waits for frame f−1−K's release: the host must have given it,
            // or the draws after that copy (and frame f's throttle) would wait forever.
            let held = f - 1 - k;
            let released = self.offscreen.session.ctx.timeline_value(self.released.handle);
            if released.map_err(|e| EmbedError::from_run(&e.into()))? <= held {
                return Err(EmbedError::Unsupported(format!(
                    "frame {f}: frame {held} is still held ({k} frame buffers): release it first"
                )));
            }
        }
        let o = &mut self.offscreen;
        let mut marks = RenderMarks::start(f);
        let failed = |e: anyhow::Error| EmbedError::from_run(&e.context(format!("frame {f}")));
        throttle(&o.session, f, &mut marks).map_err(|e| failed(e.into()))?;
        let params = self.clock.due_params(&o.session, f);
        compute_and_draw(&mut o.session, &mut o.renderer, f, &params, &self.target, &mut marks)
            .map_err(|e| failed(e.into()))?;
        self.profile.end_frame(&mut o.session, &mut o.renderer, marks);
        if let Some(t) = self.copy_timer.as_mut() {
            // Slot `slot`'s previous copy (frame f − K), if it has finished: its times, read
            // before this frame's copy resets them.
            if f >= k {
                let ready = o.session.ctx.timeline_value(self.ready.handle);
                if ready.map_err(|e| EmbedError::from_run(&e.into()))? > f - k {
                    t.collect(&o.session.ctx, slot, f - k);
                }
            }
        }
        let (drawn, value) = o.target_done(f + 1);
        let mut waits = vec![(drawn, value, vk::PipelineStageFlags::TRANSFER)];
        if f >= k {
            waits.push((self.released.handle, f + 1 - k, vk::PipelineStageFlags::TRANSFER));
        }
        o.session
            .ctx
            .submit_with(self.copies.cmds[slot], &waits, &[(self.ready.handle, f + 1)], vk::Fence::null())
            .map_err(|e| failed(e.into()))?;
        self.next = f + 1;
        let (width, height) = self.extent();
        Ok(FrameInfo { frame: f, slot, ready_value: f + 1, width, height, views: self.offscreen.views })
    }

    /// Buffer `slot`'s host mapping (address, bytes), where its memory is host-visible: read
    /// frame f there after [`Frames::wait_ready_host`]`(f)` and before
    /// [`Frames::release_host`]`(f)`.
    pub fn host_bytes(&self, slot: usize) -> Option<(*mut u8, usize)> {
        let bytes = self.offscreen.target.bytes() as usize;
        self.host.get(slot).copied().flatten().map(|a| (a as *mut u8, bytes))
    }

    /// Host-wait until frame `frame`'s copy is done (`ready` ≥ frame+1, a value Vulkan
    /// signals).
    pub fn wait_ready_host(&self, frame: u64) -> Result<(), EmbedError> {
        self.check_rendered(frame)?;
        let ctx = &self.offscreen.session.ctx;
        ctx.wait_timeline(self.ready.handle, frame + 1, || {
            format!("'ready' ≥ {} (frame {frame}'s copy)", frame + 1)
        })
        .map_err(|e| EmbedError::from_run(&e.into()))
    }

    /// Whether frame `frame`'s copy is done (`ready` ≥ frame+1), without waiting.
    pub fn is_ready(&self, frame: u64) -> Result<bool, EmbedError> {
        self.check_rendered(frame)?;
        let value = self.offscreen.session.ctx.timeline_value(self.ready.handle);
        Ok(value.map_err(|e| EmbedError::from_run(&e.into()))? > frame)
    }

    /// The host consumer has finished reading frame `frame`: signal `released` = frame+1 (a
    /// frame released already, or an earlier one, is a no-op).
    pub fn release_host(&self, frame: u64) -> Result<(), EmbedError> {
        self.check_rendered(frame)?;
        let ctx = &self.offscreen.session.ctx;
        let signal = || -> Result<(), VkError> {
            if ctx.timeline_value(self.released.handle)? < frame + 1 {
                ctx.signal_timeline(self.released.handle, frame + 1)?;
            }
            Ok(())
        };
        signal().map_err(|e| EmbedError::from_run(&e.into()))
    }

    /// The interop crate's device the frames are on (its `uuid()` opens CUDA on the same GPU).
    pub fn vulkan_device(&self) -> Result<&vkhip_interop::vulkan::Device, EmbedError> {
        self.offscreen.session.ctx.interop().map_err(|e| EmbedError::from_run(&e.into()))
    }

    /// `frame` was rendered (waiting for or releasing a later one would wait forever).
    fn check_rendered(&self, frame: u64) -> Result<(), EmbedError> {
        if frame >= self.next {
            return Err(EmbedError::Unsupported(format!(
                "frame {frame} was not rendered (the next is {})",
                self.next
            )));
        }
        Ok(())
    }

    fn no_slot(&self, slot: usize) -> EmbedError {
        EmbedError::Unsupported(format!("no frame buffer {slot}: there are {}", self.buffers.len()))
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        let ctx = self.offscreen.session.ctx.clone();
        // The copies of the last K frames may wait for a `released` value no consumer will
        // signal now: let them go, or the queue never drains.
        let k = self.buffers.len() as u64;
        if self.next > k {
            let promised = self.next - k;
            match ctx.timeline_value(self.released.handle) {
                Ok(v) if v < promised => {
                    log::debug!("frames: releasing copies waiting for 'released' {promised} (reached {v})");
                    if let Err(e) = ctx.signal_timeline(self.released.handle, promised) {
                        log::warn!("frames: releasing the waiting copies failed: {e}");
                    }
                }
                Ok(_) => {}
                Err(e) => log::warn!("frames: reading 'released' failed: {e}"),
            }
        }
        if let Err(e) = self.offscreen.session.sync.shutdown() {
            log::warn!("frames: stopping the protocol failed: {e}");
        }
        if let Err(e) = ctx.queue_wait_idle() {
            log::warn!("frames: draining the queue failed: {e}");
        }
        if let Some(t) = self.copy_timer.take() {
            t.destroy(&ctx);
        }
    }
}

fn median(values: &[u64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Frames>();
        send::<FramesOptions>();
        send::<EmbedError>();
    }
}
