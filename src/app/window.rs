//! Window mode: one winit `ApplicationHandler`; the window, surface, session and swapchain are
//! created in `resumed`, a frame is rendered on every redraw. Drag rotates, the wheel zooms, R
//! resets the camera, G toggles the frame-time overlay (`--overlay` starts with it shown; see
//! [`crate::overlay`]), O toggles the post stage's filter when started with `--post` (off: the
//! scene is shown as it is), Esc or closing the window exits (with the frame report).

use super::frame::{compute_and_draw, interrupted, throttle, Clock, DrawTarget, PostTarget};
use super::profiling::{create_trace_file, FrameProfile};
use super::report::frame_report;
use super::session::{MakeBackend, Session, SessionError};
use crate::camera::{OrbitCamera, Pose};
use crate::cli::{PresentMode, RunArgs, TimeMode};
use crate::overlay::OverlayFeed;
use crate::pending::PendingFile;
use crate::profile::clock::host_now_ns;
use crate::profile::{Phase, RenderMarks};
use crate::render::{surface_push, view_pushes, view_tiles, Renderer};
use crate::vk::external::Semaphore;
use crate::vk::instance::Instance;
use crate::vk::pipeline::RenderPass;
use crate::vk::post::{CopyDest, Which, POST_FORMAT};
use crate::vk::swapchain::{Acquire, Surface, Swapchain};
use crate::vk::VkError;
use anyhow::Context as _;
use ash::vk;
use raw_window_handle::{HasDisplayHandle, HasWindowHandle};
use std::sync::Arc;
use std::time::{Duration, Instant};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::platform::run_on_demand::EventLoopExtRunOnDemand;
use winit::window::{Window, WindowId};

/// Everything that lives while the window is open. Field order is drop order: swapchain and
/// renderer (they wait for the queue), the acquire semaphores, the session (protocol, backend,
/// slots, device), then the surface, then the window.
struct Running {
    swapchain: Option<Swapchain>,
    renderer: Renderer,
    acquired: Vec<Semaphore>,
    session: Session,
    surface: Surface,
    format: vk::SurfaceFormatKHR,
    window: Arc<Window>,
    /// The window's size as the last `Resized` said: asking winit (`inner_size`) panics once the
    /// window is destroyed from outside.
    size: PhysicalSize<u32>,
    camera: OrbitCamera,
    /// `--views`: the camera and the extent the tiled views were set up for (set again when
    /// either changes).
    tiled: Option<(OrbitCamera, vk::Extent2D)>,
    clock: Clock,
    frame: u64,
    profile: FrameProfile,
    resized: bool,
    recreated: u32,
    drag: Option<(f64, f64)>,
    cursor: (f64, f64),
    title_at: Instant,
    title_frames: u64,
    next_frame_at: Instant,
    overlay: OverlayFeed,
    /// Presenting stopped: the window is larger than the device can render (the window system
    /// accepts no smaller swapchain). Holds the window's extent; cleared when it fits again.
    paused: Option<vk::Extent2D>,
    /// `--post`: whether the filter's output is shown (key O; off: the scene as it is).
    post_filter: bool,
    /// `--post`: the render pass the swapchain's framebuffers are made for (the renderer's draws
    /// into the scene images, of another format).
    swap_pass: Option<RenderPass>,
}

struct App<'a, 'm> {
    args: &'a RunArgs,
    /// The caller's backend in place of `--backend`'s ([`run_with`]).
    maker: Option<&'a mut (dyn MakeBackend + 'm)>,
    /// Frames drawn, once the window has closed.
    frames: u64,
    running: Option<Running>,
    error: Option<anyhow::Error>,
    report: Option<String>,
    /// `--trace`: created before the window opens, written when it closes.
    trace_file: Option<PendingFile>,
}

fn present_mode(m: PresentMode) -> vk::PresentModeKHR {
    match m {
        PresentMode::Fifo => vk::PresentModeKHR::FIFO,
        PresentMode::Mailbox => vk::PresentModeKHR::MAILBOX,
        PresentMode::Immediate => vk::PresentModeKHR::IMMEDIATE,
    }
}

/// Whether a window can be opened at all (the event loop needs a reachable display, and the
/// libraries winit loads at run time: without `libxkbcommon-x11` it panics, and the panic is
/// this error, see [`super::panics`]).
pub fn event_loop() -> anyhow::Result<EventLoop<()>> {
    Ok(super::panics::contain("opening the window system", EventLoop::new)??)
}

thread_local! {
    /// This thread's event loop, once made ([`with_event_loop`]).
    static EVENT_LOOP: std::cell::RefCell<Option<EventLoop<()>>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` with this thread's event loop, made on first use ([`event_loop`]) and kept for the
/// next window run: winit makes one per process, and a program that runs windows one after
/// another (an embedding one: `crate::embed`) runs each on the same loop ([`run_with`] runs it
/// on demand).
pub fn with_event_loop<T>(f: impl FnOnce(&mut EventLoop<()>) -> T) -> anyhow::Result<T> {
    EVENT_LOOP.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| anyhow::anyhow!("a window run is already in progress on this thread"))?;
        let el = match slot.take() {
            Some(el) => el,
            None => event_loop()?,
        };
        Ok(f(slot.insert(el)))
    })
}

/// Whether `e` says that no device can present to the window (the run falls back to headless).
pub fn cannot_present(e: &anyhow::Error) -> bool {
    // `SessionError::Vulkan` is transparent: its `source()` skips the `VkError` it holds.
    let cannot = |v: Option<&VkError>| matches!(v, Some(VkError::CannotPresent { .. }));
    e.chain().any(|c| {
        cannot(c.downcast_ref::<VkError>())
            || matches!(c.downcast_ref::<SessionError>(), Some(SessionError::Vulkan(v)) if cannot(Some(v)))
    })
}

/// The display the window opens on, as the user set it (`DISPLAY=:0`).
fn display_name() -> String {
    ["WAYLAND_DISPLAY", "DISPLAY"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()).map(|s| format!("{v}={s}")))
        .unwrap_or_else(|| "the display".into())
}

/// Run the window until it is closed (or `--frames` is reached); prints the frame report.
pub fn run(args: &RunArgs, mut event_loop: EventLoop<()>) -> anyhow::Result<()> {
    let ran = run_with(args, &mut event_loop, None)?;
    if let Some(report) = &ran.report {
        crate::output::print(report);
    }
    ran.failed.map_or(Ok(()), Err)
}

/// What a window run made.
pub struct WindowRun {
    /// The frame report (None when the run failed before its first frame).
    pub report: Option<String>,
    /// Frames drawn.
    pub frames: u64,
    /// The run's error, if any (the report, when there is one, still stands).
    pub failed: Option<anyhow::Error>,
}

/// [`run`] with the backend `maker` builds instead of `--backend`'s, returning the report
/// instead of printing it. `Err` only for what fails before the window opens.
pub fn run_with(
    args: &RunArgs,
    event_loop: &mut EventLoop<()>,
    maker: Option<&mut (dyn MakeBackend + '_)>,
) -> anyhow::Result<WindowRun> {
    let trace_file = args.trace.as_deref().map(create_trace_file).transpose()?;
    let mut app = App { args, maker, frames: 0, running: None, error: None, report: None, trace_file };
    let proxy = event_loop.create_proxy();
    // An interrupt wakes a loop that sleeps until the next --max-fps deadline.
    super::interrupt::set_waker(move || {
        let _ = proxy.send_event(());
    });
    // On demand: the loop may run again for the next window ([`with_event_loop`]).
    let ran = event_loop.run_app_on_demand(&mut app).context("window event loop");
    super::interrupt::clear_waker();
    ran?;
    if let Some(r) = app.running.take() {
        app.finish(r);
    }
    Ok(WindowRun { report: app.report, frames: app.frames, failed: app.error })
}

impl App<'_, '_> {
    fn start(&mut self, el: &ActiveEventLoop) -> anyhow::Result<Running> {
        let args = self.args;
        let attrs = Window::default_attributes()
            .with_title("vkhip")
            .with_inner_size(PhysicalSize::new(args.size.width, args.size.height));
        if self.maker.is_none() {
            super::session::prewarm(args.common.backend, args.common.device);
        }
        let window = Arc::new(el.create_window(attrs).context("creating the window")?);
        let display = el.display_handle().context("display handle")?.as_raw();
        let exts = ash_window::enumerate_required_extensions(display).map_err(|e| {
            VkError::Unsupported(format!("no Vulkan surface support for this window system: {e}"))
        })?;
        let instance = Arc::new(Instance::new(args.common.validation, exts)?);
        let raw_window = window.window_handle().context("window handle")?.as_raw();
        // SAFETY: `window` is kept in `Running` and dropped after the surface (field order).
        let surface = unsafe { Surface::new(&instance, display, raw_window) }?;
        let post_extent = vk::Extent2D { width: args.size.width, height: args.size.height };
        let session = Session::for_window(
            instance,
            &args.common,
            &surface,
            &display_name(),
            post_extent,
            self.maker.as_deref_mut(),
        )?;
        // The window tiles the views in its swapchain image (no layered target): of the views'
        // limits, the layered shader's feature and the heights' range apply here, refused before
        // any pipeline is made, as headless runs refuse them.
        crate::vk::views::check_layered_shader(&session.ctx.physical, session.views)?;
        crate::vk::views::check_heights(&session.ctx.physical, session.envs, session.grid)?;
        let format = surface.choose_format(&session.ctx)?;
        let post = session.post.is_some();
        let (draw_format, draw_layout) = if post {
            (POST_FORMAT, vk::ImageLayout::GENERAL)
        } else {
            (format.format, vk::ImageLayout::PRESENT_SRC_KHR)
        };
        let mut renderer = Renderer::new(
            &session.ctx,
            draw_format,
            draw_layout,
            &session.slots,
            session.sync.plan().frames_in_flight,
            session.sync.plan().joined(),
            session.sync.plan().post_on_queue(),
        )?;
        let swap_pass = match &session.post {
            Some(images) => {
                renderer.attach_post(images, session.sync.plan().post_batch)?;
                log::info!("post stage {} on: O shows the scene without it", session.sync.post_kind());
                Some(RenderPass::new(&session.ctx, format.format, vk::ImageLayout::PRESENT_SRC_KHR)?)
            }
            None => None,
        };
        let acquired = (0..session.sync.plan().frames_in_flight)
            .map(|_| Semaphore::binary(&session.ctx, false))
            .collect::<Result<Vec<_>, _>>()?;
        let now = Instant::now();
        let mut profile =
            FrameProfile::new(&session, args.trace.as_ref().map(|_| args.trace_frames as usize));
        profile.profiler.warmup_frames = args.warmup_frames;
        Ok(Running {
            swapchain: None,
            renderer,
            acquired,
            session,
            surface,
            format,
            size: window.inner_size(),
            window,
            camera: OrbitCamera::default(),
            tiled: None,
            clock: Clock::new(args.time.unwrap_or(TimeMode::Wall), args.dt),
            frame: 0,
            profile,
            resized: true,
            recreated: 0,
            drag: None,
            cursor: (0.0, 0.0),
            title_at: now,
            title_frames: 0,
            next_frame_at: now,
            overlay: OverlayFeed::new(args.overlay),
            paused: None,
            post_filter: true,
            swap_pass,
        })
    }

    /// Render one frame if the window is visible. `Ok(false)` means: stop (frame limit reached).
    fn frame(&mut self) -> anyhow::Result<bool> {
        let args = self.args;
        let Some(r) = self.running.as_mut() else { return Ok(true) };
        let size = r.size;
        if size.width == 0 || size.height == 0 {
            return Ok(true); // minimised: nothing to draw, keep the swapchain until restored
        }
        if r.paused.is_some() && !r.resized {
            return Ok(true); // too large to render, and not resized since
        }
        if r.resized || r.swapchain.is_none() {
            // A window the device cannot render: stop presenting (say so once), keep the run
            // alive, and look again at the next resize.
            r.resized = false;
            if let Some((window, dev)) = r.surface.out_of_device_range(&r.session.ctx)? {
                if r.paused.is_none() {
                    log::warn!(
                        "the window is {}x{}, larger than the device can render ({}x{}): presenting stopped until it is resized to fit",
                        window.width,
                        window.height,
                        dev.width,
                        dev.height
                    );
                    r.window.set_title(&format!(
                        "vkhip — paused: window {}x{} exceeds the device's {}x{}; resize to resume",
                        window.width, window.height, dev.width, dev.height
                    ));
                }
                r.paused = Some(window);
                return Ok(true);
            }
            if let Some(was) = r.paused.take() {
                log::warn!(
                    "the window fits the device again ({}x{}, was {}x{}): presenting resumed",
                    size.width,
                    size.height,
                    was.width,
                    was.height
                );
                r.title_at = Instant::now();
                r.title_frames = 0;
            }
            let extent = vk::Extent2D { width: size.width, height: size.height };
            let old = r.swapchain.take();
            // Draws recorded for the old swapchain's framebuffers are recorded again.
            r.renderer.forget_recorded();
            let sc = Swapchain::new(
                &r.session.ctx,
                &r.surface,
                r.format,
                r.swap_pass.as_ref().unwrap_or(&r.renderer.render_pass).handle,
                extent,
                present_mode(args.present_mode),
                old.as_ref(),
            )?;
            if sc.clamped {
                // Larger than the device can render: ask for the size it can (a WM may refuse).
                let _ = r.window.request_inner_size(PhysicalSize::new(sc.extent.width, sc.extent.height));
            }
            if old.is_some() {
                r.recreated += 1;
            }
            drop(old);
            r.swapchain = Some(sc);
        }
        if r.session.post.is_some() && r.swapchain.as_ref().is_some_and(|sc| !sc.transfer_dst) {
            return Err(VkError::Unsupported(
                "--post copies its output into the swapchain image, but this surface's images cannot be \
                 copied into (no TRANSFER_DST usage); run --headless"
                    .into(),
            )
            .into());
        }
        let f = r.frame;
        let mut marks = RenderMarks::start(f);
        throttle(&r.session, f, &mut marks)?;
        r.overlay.frame_started(f, marks.start_ns);
        let acquire = r.acquired[(f % r.acquired.len() as u64) as usize].handle;
        let Some(sc) = r.swapchain.as_ref() else { return Ok(true) };
        let (image, suboptimal) = match sc.acquire(acquire)? {
            Acquire::Image { image, suboptimal } => (image, suboptimal),
            Acquire::Retry { recreate } => {
                r.resized |= recreate;
                return Ok(true);
            }
        };
        marks.lap(Phase::Acquire);
        let (framebuffer, present) = sc.image(image);
        let extent = sc.extent;
        if r.session.views > 1 && r.tiled != Some((r.camera, extent)) {
            // The views tiled in the window, around the orbit camera (a drag turns them all).
            let n = r.session.views;
            let tiles = view_tiles(n, extent);
            let poses = Pose::spread_around(&r.camera, n);
            let mut pushes = view_pushes(&poses, r.session.grid, tiles[0].extent, r.session.envs);
            pushes.iter_mut().for_each(|p| p.layer = 0);
            r.renderer.set_tiled_views(&r.session.slots, pushes, tiles)?;
            r.tiled = Some((r.camera, extent));
        }
        let target = DrawTarget {
            framebuffer,
            extent,
            push: surface_push(&r.camera, r.session.grid, extent),
            extra_waits: &[(acquire, vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)],
            extra_signals: &[present],
            overlay: r.overlay.shown(),
            post: r.session.post.as_ref().map(|_| PostTarget {
                dest: CopyDest {
                    image: sc.vk_image(image),
                    format: r.format.format,
                    extent,
                    final_layout: vk::ImageLayout::PRESENT_SRC_KHR,
                },
                source: if r.post_filter { Which::Output } else { Which::Scene },
            }),
        };
        let params = r.clock.due_params(&r.session, f);
        compute_and_draw(&mut r.session, &mut r.renderer, f, &params, &target, &mut marks)
            .with_context(|| format!("frame {f}"))?;
        if !sc.present(image)? || suboptimal {
            r.resized = true;
        }
        marks.lap(Phase::Present);
        r.profile.end_frame(&mut r.session, &mut r.renderer, marks);
        for closed in r.profile.profiler.drain_closed() {
            r.overlay.profiled(&closed);
        }
        r.frame += 1;
        r.title_frames += 1;
        let since = r.title_at.elapsed();
        if since >= Duration::from_millis(500) {
            let fps = r.title_frames as f64 / since.as_secs_f64();
            r.window.set_title(&format!(
                "vkhip — {} / {} / {} slots — {:.0} fps, {:.2} ms",
                r.session.sync.backend_kind(),
                r.session.sync.mode(),
                r.session.sync.slots(),
                fps,
                1e3 / fps.max(1e-9)
            ));
            r.title_at = Instant::now();
            r.title_frames = 0;
        }
        let limit = args.frames.unwrap_or(0);
        Ok(limit == 0 || r.frame < limit)
    }

    /// Drain and tear down in order, then build the report.
    fn finish(&mut self, mut r: Running) {
        let done = r.frame;
        self.frames = done;
        let failed_before_a_frame = done == 0 && self.error.is_some();
        if done > 0 {
            if let Err(e) = r.session.sync.wait_rendered(done) {
                self.error.get_or_insert(e.into());
            }
        }
        let end_ns = host_now_ns();
        // Always, also after an error: nothing may be pending when the swapchain and renderer go.
        if let Err(e) = r.session.sync.shutdown() {
            self.error.get_or_insert(e.into());
        }
        r.profile.finish(&mut r.session, &mut r.renderer, end_ns);
        let size = r.size;
        let mut extra = vec![("resizes", format!("{} swapchain re-creations", r.recreated))];
        if let Some(file) = self.trace_file.take() {
            match r.profile.write_trace(&r.session, file) {
                Ok(line) => extra.extend(line),
                Err(e) => {
                    self.error.get_or_insert(e.into());
                }
            }
        }
        // A run that failed before its first frame has nothing to report: the error says it all.
        if !failed_before_a_frame {
            self.report = Some(frame_report(
                &r.session,
                &r.profile,
                &format!("window {}x{}", size.width, size.height),
                &extra,
            ));
        }
        log::info!(
            "window closed after {done} frames ({:.1} fps)",
            r.profile.profiler.stats.frame.summary().fps
        );
        drop(r);
    }

    fn fail(&mut self, el: &ActiveEventLoop, e: anyhow::Error) {
        self.error.get_or_insert(e);
        el.exit();
    }
}

impl ApplicationHandler for App<'_, '_> {
    fn resumed(&mut self, el: &ActiveEventLoop) {
        if self.running.is_some() || self.error.is_some() {
            return;
        }
        // A dependency panicking while the window and its device are made (winit, a loader
        // library): one line and exit 2, no backtrace (see `super::panics`).
        match super::panics::contain("creating the window and its Vulkan device", || self.start(el)) {
            Ok(Ok(r)) => {
                r.window.request_redraw();
                self.running = Some(r);
            }
            Ok(Err(e)) => self.fail(el, e),
            Err(panicked) => self.fail(el, panicked.into()),
        }
    }

    fn window_event(&mut self, el: &ActiveEventLoop, id: WindowId, event: WindowEvent) {
        // An earlier run's window (the loop runs again for the next window, `with_event_loop`):
        // its last events, `Destroyed` among them, are not this run's.
        if self.running.as_ref().is_some_and(|r| r.window.id() != id) {
            return;
        }
        match event {
            WindowEvent::CloseRequested => el.exit(),
            // Only a window that ran: one that failed to start is dropped by vkhip itself.
            WindowEvent::Destroyed if self.running.is_some() => super::window_gone(el),
            WindowEvent::KeyboardInput { event, is_synthetic, .. }
                if event.state == ElementState::Pressed =>
            {
                match event.logical_key {
                    Key::Named(NamedKey::Escape) => el.exit(),
                    Key::Character(c) if c.eq_ignore_ascii_case("r") => {
                        if let Some(r) = self.running.as_mut() {
                            r.camera.reset();
                        }
                    }
                    // Not the presses winit makes up for keys held as the window gains focus.
                    Key::Character(c) if c.eq_ignore_ascii_case("g") && !event.repeat && !is_synthetic => {
                        if let Some(r) = self.running.as_mut() {
                            r.overlay.visible = !r.overlay.visible;
                            log::info!("frame-time overlay {}", if r.overlay.visible { "on" } else { "off" });
                        }
                    }
                    Key::Character(c) if c.eq_ignore_ascii_case("o") && !event.repeat && !is_synthetic => {
                        if let Some(r) = self.running.as_mut() {
                            match r.session.post.as_ref() {
                                Some(_) => {
                                    r.post_filter = !r.post_filter;
                                    let on = if r.post_filter { "on" } else { "off (the scene as it is)" };
                                    log::info!("post stage {}: {on}", r.session.sync.post_kind());
                                }
                                None => log::info!(
                                    "no post stage in this run: start vkhip with --post outline to outline the frame (O then toggles it)"
                                ),
                            }
                        }
                    }
                    _ => {}
                }
            }
            WindowEvent::Resized(size) => {
                if let Some(r) = self.running.as_mut() {
                    r.size = size;
                    r.resized = true;
                }
            }
            WindowEvent::MouseInput { state, button: MouseButton::Left, .. } => {
                if let Some(r) = self.running.as_mut() {
                    r.drag = (state == ElementState::Pressed).then_some(r.cursor);
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let Some(r) = self.running.as_mut() {
                    r.cursor = (position.x, position.y);
                    if let Some((x0, y0)) = r.drag {
                        r.camera.drag((position.x - x0) as f32, (position.y - y0) as f32);
                        r.drag = Some(r.cursor);
                    }
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                if let Some(r) = self.running.as_mut() {
                    let lines = match delta {
                        MouseScrollDelta::LineDelta(_, y) => y,
                        MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                    };
                    r.camera.zoom(lines);
                }
            }
            WindowEvent::RedrawRequested => match self.frame() {
                Ok(true) => {}
                Ok(false) => el.exit(),
                Err(e) if super::is_surface_lost(&e) => super::window_gone(el),
                Err(e) => self.fail(el, e),
            },
            _ => {}
        }
    }

    fn about_to_wait(&mut self, el: &ActiveEventLoop) {
        if interrupted() {
            el.exit();
            return;
        }
        let max_fps = self.args.max_fps;
        let Some(r) = self.running.as_mut() else { return };
        let size = r.size;
        if size.width == 0 || size.height == 0 || (r.paused.is_some() && !r.resized) {
            // Minimised, or too large to render: sleep until the next event (a restore or a
            // resize arrives as Resized).
            el.set_control_flow(ControlFlow::Wait);
            return;
        }
        if max_fps > 0.0 {
            let now = Instant::now();
            if now < r.next_frame_at {
                el.set_control_flow(ControlFlow::WaitUntil(r.next_frame_at));
                return;
            }
            r.next_frame_at = now.max(r.next_frame_at) + Duration::from_secs_f64(1.0 / max_fps);
        }
        el.set_control_flow(ControlFlow::Poll);
        r.window.request_redraw();
    }

    fn exiting(&mut self, _el: &ActiveEventLoop) {
        if let Some(r) = self.running.take() {
            self.finish(r);
        }
    }
}
