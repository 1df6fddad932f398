//! Headless run: render offscreen, print the frame report, optionally write the last frame.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): a few frames offscreen, the last one captured.
//!
//! ```
//! use clap::Parser as _;
//! use vkhip::cli::Cli;
//! use vkhip::image::Rgba;
//!
//! let png = std::env::temp_dir().join(format!("vkhip-headless-doc-{}.png", std::process::id()));
//! let mut args: Vec<std::ffi::OsString> = ["vkhip", "--headless", "--frames", "3", "--backend", "cpu"]
//!     .into_iter()
//!     .chain(["--grid", "32x32", "--size", "96x64", "--capture"])
//!     .map(Into::into)
//!     .collect();
//! args.push(png.clone().into());
//! let cli = Cli::try_parse_from(args).unwrap();
//! vkhip::app::headless::run(&cli.run).unwrap();
//! let img = Rgba::read_png(&png).unwrap();
//! assert_eq!((img.width, img.height), (96, 64));
//! let first = &img.pixels[..4];
//! assert!(img.pixels.chunks_exact(4).any(|p| p != first), "the surface is drawn over the background");
//! std::fs::remove_file(&png).unwrap();
//! ```

use super::frame::{compute_and_draw, flush_post, interrupted, throttle, Clock, DrawTarget, PostTarget};
use super::profiling::{create_trace_file, FrameProfile};
use super::report::frame_report;
use super::session::{MakeBackend, Session};
use crate::camera::{OrbitCamera, Pose};
use crate::cli::{CommonArgs, RunArgs, TimeMode};
use crate::image::Rgba;
use crate::overlay::OverlayFeed;
use crate::profile::clock::host_now_ns;
use crate::profile::RenderMarks;
use crate::render::{surface_push, view_pushes, Renderer};
use crate::vk::instance::Instance;
use crate::vk::post::{CopyDest, Which, POST_FORMAT};
use crate::vk::target::{OffscreenTarget, OFFSCREEN_FORMAT};
use crate::vk::views::ViewsRequest;
use anyhow::Context as _;
use ash::vk;
use std::sync::Arc;

/// A session drawing into an offscreen target: what headless runs and `verify` share. Its `Drop`
/// stops the protocol first (so no draw is pending, even after an error), then the fields go in
/// order: the target's images, the renderer, the session.
pub struct Offscreen {
    pub target: OffscreenTarget,
    pub renderer: Renderer,
    pub session: Session,
    /// `--views` (N layers in the target) and `--envs`.
    pub views: u32,
    pub envs: u32,
}

impl Offscreen {
    /// Build the session for `common` and an offscreen target of `extent`.
    pub fn new(common: &CommonArgs, extent: vk::Extent2D) -> anyhow::Result<Self> {
        Self::with_backend(common, extent, None)
    }

    /// [`Offscreen::new`] with the backend `maker` builds instead of `--backend`'s
    /// ([`Session::with_backend`]).
    pub fn with_backend(
        common: &CommonArgs,
        extent: vk::Extent2D,
        maker: Option<&mut (dyn MakeBackend + '_)>,
    ) -> anyhow::Result<Self> {
        Self::with_shared(common, extent, maker, 0)
    }

    /// [`Offscreen::with_backend`] for a caller that will also hold `shared_buffers` linear
    /// copies of the target (the embed API's K frame buffers), counted in the views' memory
    /// check ([`crate::vk::views::check`]).
    pub fn with_shared(
        common: &CommonArgs,
        extent: vk::Extent2D,
        maker: Option<&mut (dyn MakeBackend + '_)>,
        shared_buffers: u32,
    ) -> anyhow::Result<Self> {
        crate::cli::check_views(common)?;
        if maker.is_none() {
            super::session::prewarm(common.backend);
        }
        // A dependency panicking while the device is made: one line and exit 2 (`super::panics`).
        let session = super::panics::contain("creating the Vulkan device", || {
            let instance = Arc::new(Instance::new(common.validation, &[])?);
            anyhow::Ok(Session::with_backend(instance, common, extent, maker)?)
        })??;
        // With `--post` the draw renders into the scene images (left in GENERAL for the filter),
        // and a copy brings the output into the target.
        let (format, final_layout) = match session.post {
            Some(_) => (POST_FORMAT, vk::ImageLayout::GENERAL),
            None => (OFFSCREEN_FORMAT, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        };
        let mut renderer = Renderer::new(
            &session.ctx,
            format,
            final_layout,
            &session.slots,
            session.sync.plan().frames_in_flight,
            session.sync.plan().joined(),
            session.sync.plan().post_on_queue(),
        )?;
        let (views, envs) = (common.views, common.envs);
        let request = ViewsRequest {
            views,
            envs,
            extent,
            grid: session.grid,
            slots: session.slots.len() as u32,
            shared_buffers,
        };
        crate::vk::views::check(&session.ctx.physical, &request)?;
        let target = OffscreenTarget::layered(&session.ctx, renderer.render_pass.handle, extent, views)?;
        if views > 1 {
            let pushes = view_pushes(&Pose::default_spread(views), session.grid, extent, envs);
            renderer.set_views(&session.slots, pushes)?;
        }
        if let Some(images) = &session.post {
            renderer.attach_post(images, session.sync.plan().post_batch)?;
        }
        crate::profile::clock::startup_mark("renderer and target ready");
        Ok(Offscreen { target, renderer, session, views, envs })
    }

    /// The default camera's view of the grid, drawn into the target.
    pub fn draw_target(&self) -> DrawTarget<'static> {
        let extent = self.target.extent;
        DrawTarget {
            framebuffer: self.target.framebuffer.handle,
            extent,
            push: surface_push(&OrbitCamera::default(), self.session.grid, extent),
            extra_waits: &[],
            extra_signals: &[],
            overlay: None,
            post: self.session.post.as_ref().map(|_| PostTarget {
                dest: CopyDest {
                    image: self.target.color.image,
                    format: OFFSCREEN_FORMAT,
                    extent,
                    final_layout: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                },
                source: Which::Output,
            }),
        }
    }

    /// The timeline and value that say frame `frames − 1` is complete in the target: `presented`
    /// with a post stage (the copy), else `rendered` (the draw).
    pub fn target_done(&self, frames: u64) -> (vk::Semaphore, u64) {
        let sems = &self.session.sync.sems;
        match &sems.post {
            Some(t) => (t.presented.handle, frames),
            None => (sems.rendered.handle, frames),
        }
    }
}

impl Drop for Offscreen {
    fn drop(&mut self) {
        // Errors are logged by shutdown; nothing may be pending when the target goes.
        let _ = self.session.sync.shutdown();
    }
}

/// Run headless; prints the frame report to stdout.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let ran = run_with(args, None)?;
    crate::output::print(&ran.report);
    ran.failed.map_or(Ok(()), Err)
}

/// What a headless run made.
pub struct HeadlessRun {
    /// The frame report, as `run` prints it.
    pub report: String,
    /// The PNG written (`--capture`), if any.
    pub capture: Option<std::path::PathBuf>,
    /// Frames drawn.
    pub frames: u64,
    /// Writing the capture or the trace failed after the frames ran (the report still stands).
    pub failed: Option<anyhow::Error>,
}

/// [`run`] with the backend `maker` builds instead of `--backend`'s, returning the report
/// instead of printing it.
pub fn run_with(args: &RunArgs, maker: Option<&mut (dyn MakeBackend + '_)>) -> anyhow::Result<HeadlessRun> {
    let trace_file = args.trace.as_deref().map(create_trace_file).transpose()?;
    let extent = vk::Extent2D { width: args.size.width, height: args.size.height };
    // Before the first frame: an unwritable capture path fails now, not after the run.
    let capture = args.capture.as_deref().map(crate::image::PendingPng::create).transpose()?;
    let mut o = Offscreen::with_backend(&args.common, extent, maker)?;
    let draw_target = o.draw_target();
    let mut clock = Clock::new(args.time.unwrap_or(TimeMode::Frame), args.dt);
    let frames = args.frames.unwrap_or(crate::cli::DEFAULT_FRAMES);

    let mut profile = FrameProfile::new(&o.session, args.trace.as_ref().map(|_| args.trace_frames as usize));
    profile.profiler.warmup_frames = args.warmup_frames;
    let mut overlay = args.overlay.then(|| OverlayFeed::new(true));
    let mut done = 0;
    for f in 0..frames {
        if interrupted() {
            break;
        }
        let mut marks = RenderMarks::start(f);
        throttle(&o.session, f, &mut marks)?;
        if let Some(feed) = overlay.as_mut() {
            feed.frame_started(f, marks.start_ns);
        }
        let params = clock.due_params(&o.session, f);
        let target = DrawTarget { overlay: overlay.as_ref().and_then(OverlayFeed::shown), ..draw_target };
        compute_and_draw(&mut o.session, &mut o.renderer, f, &params, &target, &mut marks)
            .with_context(|| format!("frame {f}"))?;
        profile.end_frame(&mut o.session, &mut o.renderer, marks);
        if f == 0 {
            crate::profile::clock::startup_mark("frame 0 submitted");
        }
        if let Some(feed) = overlay.as_mut() {
            profile.profiler.drain_closed().for_each(|c| feed.profiled(&c));
        }
        done = f + 1;
    }
    // Post batches: the last, partial batch's filters and copies.
    flush_post(&mut o.session, &mut o.renderer, done, &draw_target)
        .context("flushing the last post batch")?;
    if done > 0 {
        o.session.sync.wait_rendered(done)?;
    }
    let end_ns = host_now_ns();

    let mut extra = Vec::new();
    let mut failed = None;
    let mut captured = None;
    if let Some(png) = capture.filter(|_| done > 0 || !interrupted()) {
        anyhow::ensure!(done > 0, "no frame was rendered, nothing to capture");
        let pixels = o.target.read_rgba(&o.session.ctx, o.target_done(done))?;
        let shown = format!("{} (frame {})", png.path().display(), done - 1);
        let path = png.path().to_path_buf();
        let picture = if o.views > 1 {
            Rgba::tiled(&pixels, extent.width, extent.height, o.views)
        } else {
            Rgba { width: extent.width, height: extent.height, pixels }
        };
        match png.commit(&picture) {
            Ok(()) => {
                extra.push(("capture", shown));
                captured = Some(path);
            }
            Err(e) => failed = Some(anyhow::Error::new(e).context("writing the capture")),
        }
    }
    o.session.sync.shutdown()?;
    profile.finish(&mut o.session, &mut o.renderer, end_ns);
    if let Some(file) = trace_file {
        // A failed write still prints the report (the run's figures are not lost with the file).
        match profile.write_trace(&o.session, file) {
            Ok(line) => extra.extend(line),
            Err(e) => {
                failed.get_or_insert(e.into());
            }
        }
    }
    let report =
        frame_report(&o.session, &profile, &format!("offscreen {}x{}", extent.width, extent.height), &extra);
    Ok(HeadlessRun { report, capture: captured, frames: done, failed })
}

/// Tests of the post stage: the first usable device, under the validation layer where it is
/// installed (`who` says which test went without it).
#[cfg(test)]
fn post_test_device(who: &str) -> (Arc<crate::vk::device::Context>, crate::vk::device::PhysicalDeviceInfo) {
    let instance = Arc::new(
        Instance::new(true, &[])
            .or_else(|e| {
                eprintln!("{who}: without the validation layer ({e})");
                Instance::new(false, &[])
            })
            .unwrap(),
    );
    let pd = crate::vk::device::enumerate(&instance)
        .unwrap()
        .into_iter()
        .find(|d| d.usable())
        .expect("a Vulkan device");
    (crate::vk::device::Context::new(instance, pd.clone(), false).unwrap(), pd)
}

/// Tests of the post stage: an offscreen run of `plan` put together by hand around `backend`
/// (attached to `images`' pairs), K `slots` and the pairs, the target `images.extent`.
#[cfg(test)]
fn post_test_offscreen(
    ctx: &Arc<crate::vk::device::Context>,
    plan: &crate::sync::SyncPlan,
    mut backend: Box<dyn crate::compute::ComputeBackend>,
    slots: Vec<crate::vk::external::Slot>,
    images: crate::vk::post::PostImages,
    grid: crate::sim::Grid,
) -> Offscreen {
    let kind = crate::compute::post::PostKind::Outline;
    backend.attach_post(crate::app::session::post_resources(&images, kind).unwrap()).unwrap();
    let sems = crate::sync::FrameSemaphores::new(ctx, plan).unwrap();
    let extent = images.extent;
    let sync = crate::sync::FrameSync::new(ctx, plan.clone(), sems, backend).unwrap();
    let session = Session {
        sync,
        post: Some(images),
        clock: None,
        slots,
        ctx: ctx.clone(),
        grid,
        envs: 1,
        views: 1,
        device_reason: String::new(),
        backend_reason: String::new(),
    };
    let on_queue = plan.post_on_queue();
    let mut renderer = Renderer::new(
        ctx,
        POST_FORMAT,
        vk::ImageLayout::GENERAL,
        &session.slots,
        plan.frames_in_flight,
        plan.joined(),
        on_queue,
    )
    .unwrap();
    renderer.attach_post(session.post.as_ref().unwrap(), plan.post_batch).unwrap();
    let target = OffscreenTarget::new(ctx, renderer.render_pass.handle, extent).unwrap();
    Offscreen { target, renderer, session, views: 1, envs: 1 }
}

/// The post stage's on-Vulkan's-queue frame shape (`vulkan`, `cuda-in-vulkan`: heights → draw →
/// filter → copy in one command buffer), run end to end on lavapipe with a stand-in filter that
/// stamps each pair's colour into its output: the capture shows the colour of the last frame's
/// pair, so the filter of the right pair was recorded, ordered before the copy, and the copy
/// went to the target. The real filters are the backends' (tests/post.rs compares them with the
/// CPU's).
#[cfg(test)]
mod on_queue_post {
    use super::*;
    use crate::compute::post::{PostKind, PostResources, PostSurface};
    use crate::compute::{BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport};
    use crate::sim::{Grid, WaveParams};
    use crate::sync::{SyncMode, SyncPlan, SyncRequest};
    use crate::vk::external::{Slot, SlotMemory};
    use crate::vk::post::{PostAccess, PostImages};
    use crate::vk::target::subresource;
    use std::sync::Mutex;

    /// Pair `p`'s stamp.
    fn colour(p: usize) -> [u8; 4] {
        [20 + 30 * p as u8, 200 - 20 * p as u8, 60, 255]
    }

    struct StandIn {
        device: ash::Device,
        outputs: Vec<vk::Image>,
        recorded: Arc<Mutex<Vec<usize>>>,
    }

    impl ComputeBackend for StandIn {
        fn kind(&self) -> BackendKind {
            BackendKind::Vulkan
        }
        fn device_name(&self) -> String {
            "stand-in".into()
        }
        fn gpu_sync_support(&self) -> GpuSyncSupport {
            GpuSyncSupport { timeline: true, binary: false }
        }
        fn enqueue_gpu_synced(
            &mut self,
            _: u64,
            _: usize,
            _: &WaveParams,
            _: GpuSync,
        ) -> Result<(), ComputeError> {
            Err(ComputeError::Unsupported { backend: "stand-in", reason: "joined frames only".into() })
        }
        fn write_slot_and_wait(&mut self, _: u64, _: usize, _: &WaveParams) -> Result<(), ComputeError> {
            Err(ComputeError::Unsupported { backend: "stand-in", reason: "joined frames only".into() })
        }
        unsafe fn record_write(
            &mut self,
            _: vk::CommandBuffer,
            _: usize,
            _: &WaveParams,
        ) -> Result<(), ComputeError> {
            Ok(())
        }
        fn attach_post(&mut self, post: PostResources) -> Result<(), ComputeError> {
            for p in post.pairs {
                match p.output {
                    PostSurface::Image { image, .. } => self.outputs.push(image),
                    other => panic!("on the queue the filter gets the images, not {other:?}"),
                }
            }
            Ok(())
        }
        unsafe fn record_post(&mut self, cmd: vk::CommandBuffer, pair: usize) -> Result<(), ComputeError> {
            self.recorded.lock().unwrap().push(pair);
            let c = colour(pair).map(|v| f32::from(v) / 255.0);
            // SAFETY: `cmd` is recording outside a render pass (the trait's contract); the output
            // is in GENERAL. Its own barriers put the clear between the renderer's (compute
            // stage) barriers.
            unsafe {
                let compute = (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE);
                let transfer = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
                crate::vk::cmd_memory_barrier(&self.device, cmd, compute, transfer);
                self.device.cmd_clear_color_image(
                    cmd,
                    self.outputs[pair],
                    vk::ImageLayout::GENERAL,
                    &vk::ClearColorValue { float32: c },
                    &[subresource(vk::ImageAspectFlags::COLOR)],
                );
                crate::vk::cmd_memory_barrier(&self.device, cmd, transfer, compute);
            }
            Ok(())
        }
        fn finish(&mut self) -> Result<(), ComputeError> {
            Ok(())
        }
    }

    #[test]
    fn the_filter_of_each_pair_is_recorded_before_the_copy_in_one_submission() {
        // Under the validation layer where it is installed (synchronization validation on): the
        // shape's barriers must satisfy it too.
        let (ctx, pd) = post_test_device("on_queue_post");
        let extent = vk::Extent2D { width: 24, height: 16 };
        let grid = Grid { width: 16, height: 16 };
        for (k, frames) in [(1usize, 3u64), (3, 7), (4, 6)] {
            let req = SyncRequest {
                slots: Some(k as u32),
                post: PostKind::Outline,
                ..SyncRequest::mode(SyncMode::External)
            };
            let plan = SyncPlan::resolve(&req, BackendKind::Vulkan, &pd).unwrap();
            assert!(plan.joined() && plan.post_on_queue());
            let slots: Vec<Slot> = (0..k)
                .map(|_| Slot::new(&ctx, grid.bytes(), SlotMemory::DeviceLocal, false).unwrap())
                .collect();
            let images = PostImages::new(&ctx, extent, k, PostAccess::Images).unwrap();
            let recorded = Arc::new(Mutex::new(Vec::new()));
            let backend =
                StandIn { device: ctx.device.clone(), outputs: Vec::new(), recorded: recorded.clone() };
            let mut o = post_test_offscreen(&ctx, &plan, Box::new(backend), slots, images, grid);
            let draw_target = o.draw_target();
            for f in 0..frames {
                let mut marks = RenderMarks::start(f);
                throttle(&o.session, f, &mut marks).unwrap();
                let params = [WaveParams::at_time(grid, f as f64 / 60.0)];
                compute_and_draw(&mut o.session, &mut o.renderer, f, &params, &draw_target, &mut marks)
                    .unwrap();
            }
            let pixels = o.target.read_rgba(&ctx, o.target_done(frames)).unwrap();
            let last = ((frames - 1) % k as u64) as usize;
            assert!(
                pixels.chunks_exact(4).all(|p| p == colour(last)),
                "K={k}: the target is not output {last}'s colour: {:?}",
                &pixels[..4]
            );
            let pairs: Vec<usize> = (0..frames).map(|f| (f % k as u64) as usize).collect();
            assert_eq!(*recorded.lock().unwrap(), pairs, "K={k}");
            // Every value meant: `posted` and `presented` reached the last frame with the draw.
            let t = o.session.sync.sems.post.as_ref().unwrap();
            assert_eq!(ctx.timeline_value(t.posted.handle).unwrap(), frames);
            assert_eq!(ctx.timeline_value(t.presented.handle).unwrap(), frames);
            // The timestamps around the recorded filter and the copy: one PostFilter (compute
            // track) and one PostCopy (queue) per frame, after the frame's draw, in order.
            if o.renderer.stamps_per_frame() > 0 {
                o.session.sync.shutdown().unwrap();
                let mut spans = Vec::new();
                o.renderer.take_spans(&mut spans, true);
                let ticks = |s: crate::profile::Stamp| match s {
                    crate::profile::Stamp::Vulkan(t) => t,
                    other => panic!("a Vulkan timestamp, not {other:?}"),
                };
                for f in 0..frames {
                    let of = |phase| spans.iter().find(|s| s.frame == f && s.phase == phase).copied();
                    let (draw, filter, copy) = (
                        of(crate::profile::Phase::Draw).expect("draw span"),
                        of(crate::profile::Phase::PostFilter).expect("post filter span"),
                        of(crate::profile::Phase::PostCopy).expect("post copy span"),
                    );
                    assert_eq!(filter.track, crate::profile::Track::Compute);
                    assert_eq!(copy.track, crate::profile::Track::Queue);
                    assert!(ticks(draw.end) <= ticks(filter.start), "K={k} frame {f}: draw → filter");
                    assert!(ticks(filter.end) <= ticks(copy.start), "K={k} frame {f}: filter → copy");
                }
            }
        }
        if crate::vk::instance::validation_ran() {
            let v = crate::vk::instance::ValidationCounts::current();
            assert_eq!((v.errors, v.warnings), (0, 0), "validation: {v}");
        }
    }
}

/// Post batches off Vulkan's queue, end to end on lavapipe: the bridged protocol of `hip` (host
/// waits, `post_and_wait`, host signals), with the cpu backend's host filter standing in for the
/// HIP kernel (the plan is resolved for `--backend hip --sync bridged`, so `--post-batch P`
/// applies). Every frame's output, read back when its batch's copies were submitted (and after the
/// flush of the last, partial batch), is the reference filter of its scene; the capture is the
/// last frame's; `posted` and `presented` reach the frame count, and the flush cannot hang.
#[cfg(test)]
mod bridged_post_batch {
    use super::*;
    use crate::compute::cpu::CpuBackend;
    use crate::compute::post::{outline_reference, PostKind};
    use crate::compute::BackendKind;
    use crate::sim::{Grid, WaveParams};
    use crate::sync::{SyncMode, SyncPlan, SyncRequest};
    use crate::vk::external::{Slot, SlotMemory};
    use crate::vk::post::{PostAccess, PostImages};

    #[test]
    fn every_frame_of_every_post_batch_is_filtered_and_copied_out() {
        // Under the validation layer where it is installed: a copy command buffer reused while
        // its last copy runs, or a missing wait, shows there.
        let (ctx, pd) = post_test_device("bridged_post_batch");
        let extent = vk::Extent2D { width: 23, height: 17 };
        let grid = Grid { width: 16, height: 16 };
        for (k, p, frames) in [(3usize, 3u32, 7u64), (4, 2, 5), (8, 8, 11), (5, 3, 5), (2, 1, 3), (1, 1, 2)] {
            let ctx_s = format!("K={k} P={p} frames={frames}");
            let req = SyncRequest {
                slots: Some(k as u32),
                post: PostKind::Outline,
                post_batch: Some(p),
                ..SyncRequest::mode(SyncMode::Bridged)
            };
            let plan = SyncPlan::resolve(&req, BackendKind::Hip, &pd).unwrap();
            assert_eq!((plan.post_batch, plan.slots), (p as usize, k), "{ctx_s}");
            let slots: Vec<Slot> = (0..k)
                .map(|_| Slot::new(&ctx, grid.bytes(), SlotMemory::HostMapped, false).unwrap())
                .collect();
            let images = PostImages::new(&ctx, extent, k, PostAccess::Mapped).unwrap();
            let backend = CpuBackend::new(&slots).unwrap();
            let mut o = post_test_offscreen(&ctx, &plan, Box::new(backend), slots, images, grid);
            let draw_target = o.draw_target();
            let mut checked = 0u64;
            let mut last_output = Vec::new();
            let mut check = |s: &Session, copied: std::ops::Range<u64>| {
                assert_eq!(copied.start, checked, "{ctx_s}: copies in frame order, each once");
                let (images, t) = (s.post.as_ref().unwrap(), s.sync.sems.post.as_ref().unwrap());
                for g in copied {
                    s.sync.wait_presented(g + 1).unwrap();
                    let waits = [(s.sync.sems.rendered.handle, g + 1), (t.presented.handle, g + 1)];
                    let pair = s.sync.slot_of(g);
                    let scene = images.read(pair, Which::Scene, &waits).unwrap();
                    let output = images.read(pair, Which::Output, &waits).unwrap();
                    assert!(scene.iter().any(|&v| v != scene[0]), "{ctx_s}: frame {g} drew something");
                    assert!(
                        output == outline_reference(&scene, extent.width, extent.height),
                        "{ctx_s}: frame {g}"
                    );
                    last_output = output;
                    checked = g + 1;
                }
            };
            for f in 0..frames {
                let mut marks = RenderMarks::start(f);
                throttle(&o.session, f, &mut marks).unwrap();
                let params: Vec<_> =
                    o.session.sync.due(f).map(|g| WaveParams::at_time(grid, g as f64 / 30.0)).collect();
                let copied =
                    compute_and_draw(&mut o.session, &mut o.renderer, f, &params, &draw_target, &mut marks)
                        .unwrap();
                // Copies only when a batch ends: P frames at once.
                let ends = (f + 1) % u64::from(p) == 0;
                assert_eq!(
                    copied.end - copied.start,
                    if ends { u64::from(p) } else { 0 },
                    "{ctx_s}: frame {f}"
                );
                check(&o.session, copied);
            }
            let flushed = flush_post(&mut o.session, &mut o.renderer, frames, &draw_target).unwrap();
            assert_eq!(flushed.end, frames, "{ctx_s}");
            assert!(flushed.end - flushed.start < u64::from(p), "{ctx_s}: {flushed:?}");
            check(&o.session, flushed);
            assert_eq!(checked, frames, "{ctx_s}: every frame checked");
            let pixels = o.target.read_rgba(&ctx, o.target_done(frames)).unwrap();
            assert!(pixels == last_output, "{ctx_s}: the capture is the last frame's output");
            let t = o.session.sync.sems.post.as_ref().unwrap();
            assert_eq!(ctx.timeline_value(t.posted.handle).unwrap(), frames, "{ctx_s}");
            assert_eq!(ctx.timeline_value(t.presented.handle).unwrap(), frames, "{ctx_s}");
            o.session.sync.shutdown().unwrap();
        }
        if crate::vk::instance::validation_ran() {
            let v = crate::vk::instance::ValidationCounts::current();
            assert_eq!((v.errors, v.warnings), (0, 0), "validation: {v}");
        }
    }
}
