//! The ways vkhip runs: window, headless, verify, info, benchmarks. Each builds a
//! [`session::Session`] and drives the frame loop.
//!
//! # Examples
//!
//! Errors are sorted into exit code 2 (usage, environment) and 1 (failures) by their type,
//! however deep in the chain:
//!
//! ```
//! use anyhow::Context as _;
//! use vkhip::app::is_environment_error;
//! use vkhip::cli::UsageError;
//! use vkhip::compute::ComputeError;
//!
//! let usage: anyhow::Result<()> = Err(UsageError("--frames must be at least 1".into()).into());
//! assert!(is_environment_error(&usage.context("starting the run").unwrap_err()));
//! let missing = ComputeError::Unavailable { backend: "cuda", reason: "no libcuda.so".into() };
//! assert!(is_environment_error(&anyhow::Error::from(missing)));
//! assert!(!is_environment_error(&anyhow::anyhow!("the kernel wrote NaN")));
//! ```

pub mod bench;
pub mod frame;
pub mod headless;
pub mod info;
pub mod interrupt;
pub mod matrix;
pub mod panics;
pub mod profiling;
pub mod report;
pub mod session;
pub mod trace_check;
pub mod verify;
pub mod window;

use crate::cli::{Cli, Command};
use std::process::ExitCode;

/// Where a run that fell back to headless (no display, no `--headless`) writes its last frame.
pub const DEFAULT_CAPTURE: &str = "vkhip-frame.png";

/// Run the command `cli` names. `Ok` carries the exit code of checks (verify, cycles, compare).
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => {
            let ran = run_frames(cli.run, None)?;
            if let Some(report) = &ran.report {
                crate::output::print(report);
            }
            ran.failed.map_or(Ok(interrupted_or(ExitCode::SUCCESS)), Err)
        }
        Some(Command::Info(a)) => info::run(&a).map(|()| ExitCode::SUCCESS),
        Some(Command::Verify(a)) => verify::run(&a).map(interrupted_or),
        Some(Command::Bench(a)) => matrix::run(&a),
        Some(Command::BenchKernel(a)) => bench::bench_kernel(&a),
        Some(Command::Cycles(a)) => bench::cycles(&a),
        Some(Command::ComparePng(a)) => compare_png(&a),
        Some(Command::Trace(crate::cli::TraceCommand::Check(a))) => trace_check(&a),
    }
}

/// What `vkhip`'s frame run (a window, or headless) made.
pub struct FramesRun {
    /// The frame report (None when a window run failed before its first frame).
    pub report: Option<String>,
    /// The PNG written, if any.
    pub capture: Option<std::path::PathBuf>,
    /// Frames drawn.
    pub frames: u64,
    /// The run's error after its report was made (writing the capture or the trace, a window
    /// run's failure).
    pub failed: Option<anyhow::Error>,
}

/// `vkhip [OPTIONS]`: a window where there is a display, else (or with `--headless`) a headless
/// run, with the backend `maker` builds in place of `--backend`'s where given. `Err` for what
/// fails before a report exists.
pub fn run_frames(
    run: crate::cli::RunArgs,
    mut maker: Option<&mut (dyn session::MakeBackend + '_)>,
) -> anyhow::Result<FramesRun> {
    let headless = run.headless || !display_available();
    if !headless {
        // Window-only checks (e.g. --capture needs a headless run) apply only once a
        // window can really open: a dead DISPLAY falls back to headless, where they don't.
        let windowed = window::with_event_loop(|el| -> anyhow::Result<window::WindowRun> {
            crate::cli::check_run(&run, false)?;
            window::run_with(&run, el, maker.as_deref_mut())
        });
        match windowed {
            Ok(ran) => {
                let ran = ran?;
                match ran.failed {
                    // No device can draw into the window (before its first frame): as
                    // with a dead display, the run goes on without it.
                    Some(e) if window::cannot_present(&e) => log::warn!(
                        "{}; running headless (--headless skips the window; --device N picks \
                         a device that can present, `vkhip info` lists them)",
                        e.root_cause()
                    ),
                    failed => {
                        return Ok(FramesRun {
                            report: ran.report,
                            capture: None,
                            frames: ran.frames,
                            failed,
                        })
                    }
                }
            }
            Err(e) => log::warn!("cannot open a window ({e}); running headless"),
        }
    } else if !run.headless {
        log::info!("no display (DISPLAY / WAYLAND_DISPLAY unset): running headless");
    }
    crate::cli::check_run(&run, true)?;
    let mut args = run;
    if !args.headless && args.capture.is_none() {
        // Headless because there is no display: the user asked for a picture, so show one.
        args.capture = Some(DEFAULT_CAPTURE.into());
    }
    let ran = headless::run_with(&args, maker)?;
    Ok(FramesRun { report: Some(ran.report), capture: ran.capture, frames: ran.frames, failed: ran.failed })
}

/// For a run a signal stopped, 128 + its number (130 for Ctrl-C, 143 for SIGTERM, 129 for
/// SIGHUP; see [`interrupt::exit_code`]), else `code`.
fn interrupted_or(code: ExitCode) -> ExitCode {
    interrupt::interrupt_exit_code().map_or(code, ExitCode::from)
}

/// Whether a window system is reachable.
pub fn display_available() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Whether an error is a usage or environment problem (exit code 2) rather than a failure.
pub fn is_environment_error(e: &anyhow::Error) -> bool {
    // `#[error(transparent)]` wrappers forward `source()` past their inner error, so each layer's
    // type is asked directly.
    e.chain().any(|c| {
        c.downcast_ref::<crate::cli::UsageError>().is_some()
            || c.downcast_ref::<crate::image::ImageError>().is_some()
            || c.downcast_ref::<trace_check::TraceFileError>().is_some()
            || c.downcast_ref::<profiling::TraceError>().is_some()
            || c.downcast_ref::<panics::DependencyPanic>().is_some()
            || c.downcast_ref::<session::SessionError>().is_some_and(|s| s.is_environment())
            || c.downcast_ref::<frame::FrameError>().is_some_and(|f| f.is_environment())
            || c.downcast_ref::<crate::sync::SyncError>().is_some_and(|s| s.is_environment())
            || c.downcast_ref::<crate::vk::VkError>().is_some_and(|v| v.is_environment())
            || c.downcast_ref::<crate::compute::ComputeError>().is_some_and(|c| c.is_environment())
    })
}

/// Whether `e` says the window's surface is gone (the window was destroyed from outside).
pub fn is_surface_lost(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<crate::vk::VkError>(),
            Some(crate::vk::VkError::Call { result: ash::vk::Result::ERROR_SURFACE_LOST_KHR, .. })
        )
    })
}

/// The window was destroyed from outside (`xdotool windowclose`, a compositor): say so once and
/// end the run as if it had been closed (report, exit 0).
pub fn window_gone(el: &winit::event_loop::ActiveEventLoop) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::SeqCst) {
        crate::errln!("vkhip: the window was destroyed from outside; ending the run");
    }
    el.exit();
}

fn trace_check(a: &crate::cli::TraceCheckArgs) -> anyhow::Result<ExitCode> {
    if let Some(t) = a.tolerance_us.filter(|t| !(0.0..=1e6).contains(t)) {
        return Err(
            crate::cli::UsageError(format!("--tolerance-us {t} must be from 0 to 1000000 (1 s)")).into()
        );
    }
    let check = trace_check::TraceCheck::run(&a.file, a.tolerance_us)?;
    crate::output::print(&check.render(&a.file.display().to_string()));
    Ok(if check.clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn compare_png(a: &crate::cli::CompareArgs) -> anyhow::Result<ExitCode> {
    use crate::image::{compare, Rgba};
    let (x, y) = (Rgba::read_png(&a.a)?, Rgba::read_png(&a.b)?);
    let Some(d) = compare(&x, &y, a.tolerance) else {
        crate::outln!(
            "compare-png: size={}x{} vs {}x{} result=DIFFERENT (sizes differ)",
            x.width,
            x.height,
            y.width,
            y.height
        );
        return Ok(ExitCode::from(1));
    };
    let same = d.same();
    crate::outln!(
        "compare-png: size={}x{} max_channel_diff={} pixels_over_tolerance={} tolerance={} result={}",
        x.width,
        x.height,
        d.max_channel_diff,
        d.pixels_over,
        a.tolerance,
        if same { "SAME" } else { "DIFFERENT" }
    );
    Ok(if same { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
