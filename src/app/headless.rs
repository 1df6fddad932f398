//! Headless run: render offscreen, print the frame report, optionally write the last frame.

use super::frame::{compute_and_draw, interrupted, throttle, Clock, DrawTarget};
use super::report::frame_report;
use super::session::Session;
use crate::camera::OrbitCamera;
use crate::cli::{RunArgs, TimeMode};
use crate::image::Rgba;
use crate::profile::{FrameTimes, PhaseTimes};
use crate::render::{surface_push, Renderer};
use crate::sim::WaveParams;
use crate::vk::instance::Instance;
use crate::vk::target::{OffscreenTarget, OFFSCREEN_FORMAT};
use anyhow::Context as _;
use ash::vk;
use std::sync::Arc;
use std::time::Instant;

/// Default frame count of a headless run.
pub const DEFAULT_FRAMES: u64 = 120;

/// Run headless; prints the frame report to stdout.
pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let instance = Arc::new(Instance::new(args.common.validation, &[])?);
    let mut session = Session::new(instance, &args.common, false)?;
    let extent = vk::Extent2D { width: args.size.width, height: args.size.height };
    let mut renderer =
        Renderer::new(&session.ctx, OFFSCREEN_FORMAT, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, &session.slots)?;
    let target = OffscreenTarget::new(&session.ctx, renderer.render_pass.handle, extent)?;
    let clock = Clock::new(args.time.unwrap_or(TimeMode::Frame), args.dt);
    let frames = args.frames.unwrap_or(DEFAULT_FRAMES);
    let push = surface_push(&OrbitCamera::default(), session.grid, extent);
    let draw_target = DrawTarget {
        framebuffer: target.framebuffer.handle,
        extent,
        push,
        extra_waits: &[],
        extra_signals: &[],
    };

    let mut times = FrameTimes::default();
    let mut done = 0;
    for f in 0..frames {
        if interrupted() {
            break;
        }
        let mut t = PhaseTimes::default();
        throttle(&session, f, &mut t)?;
        let params = WaveParams::at_time(session.grid, clock.time(f));
        compute_and_draw(&mut session, &mut renderer, f, &params, &draw_target, &mut t)
            .with_context(|| format!("frame {f}"))?;
        times.frames.push(t);
        done = f + 1;
    }
    if done > 0 {
        session.sync.wait_rendered(done)?;
    }
    times.end = Some(Instant::now());

    let mut extra = Vec::new();
    if let Some(path) = &args.capture {
        anyhow::ensure!(done > 0, "no frame was rendered, nothing to capture");
        let pixels = target.read_rgba(&session.ctx, (session.sync.sems.rendered.handle, done))?;
        Rgba { width: extent.width, height: extent.height, pixels }
            .write_png(path)
            .with_context(|| "writing the capture".to_string())?;
        extra.push(("capture", format!("{} (frame {})", path.display(), done - 1)));
    }
    let mut backend = session.sync.shutdown()?;
    drop(backend.take());
    let report =
        frame_report(&session, &times, &format!("offscreen {}x{}", extent.width, extent.height), &extra);
    print!("{report}");
    Ok(())
}
