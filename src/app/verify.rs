//! `vkhip verify`: run real frames through the protocol and check every value of every frame's
//! slot against the CPU reference.
//!
//! For each frame f: throttle → poison, with NaN, the slot of every frame handed over now (just f,
//! or with run-ahead and batches frames ahead of f; each after its slot's previous draw) →
//! compute (the mode's own path) → draw → read slot `f mod K` back through Vulkan after the draw
//! → compare every value with `sim::height`. A value left unwritten stays NaN and fails. The
//! slot is read before any later frame is handed over, so nothing can overwrite it first.
//!
//! With `--post outline` ([`crate::sync`], "The post stage"), each frame also reads back the
//! scene and the output of its pair once the frame's copy finished (`presented ≥ f+1`; the pair
//! is not written again before frame f+K, which is not yet submitted) and compares the output
//! with [`crate::compute::post::outline_reference`] of the scene: every texel within 1/255 per
//! channel, or exit 1 naming the first differing texel. `--size WxH` sets the images' size.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included), with the `cpu` backend: every slot matches the
//! reference, and a slot corrupted on purpose (the hidden `--corrupt-frame`) fails the check.
//!
//! ```
//! use clap::Parser as _;
//! use std::process::ExitCode;
//! use vkhip::cli::{Cli, Command};
//!
//! let verify = |extra: &[&str]| {
//!     let base = ["vkhip", "verify", "--backend", "cpu", "--sync", "bridged"];
//!     let shape = ["--grid", "48x32", "--frames", "4"];
//!     let cli = Cli::try_parse_from(base.iter().chain(&shape).chain(extra)).unwrap();
//!     let Some(Command::Verify(args)) = cli.command else { unreachable!() };
//!     vkhip::app::verify::run(&args).unwrap()
//! };
//! assert_eq!(verify(&[]), ExitCode::SUCCESS);
//! assert_eq!(verify(&["--corrupt-frame", "2"]), ExitCode::FAILURE);
//! ```

use super::frame::{compute_and_draw, flush_post, interrupted, throttle};
use super::headless::Offscreen;
use super::session::Session;
use crate::cli::{check_dt, VerifyArgs};
use crate::compute::post::{outline_reference, PostKind};
use crate::profile::RenderMarks;
use crate::sim::{compare_with_reference_progress, WaveParams};
use crate::sync::SyncMode;
use crate::vk::post::Which;
use anyhow::Context as _;
use ash::vk;
use std::process::ExitCode;

/// Run verify; prints one line per frame (debug log) and a summary line last.
pub fn run(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    check_dt(args.dt)?;
    if args.frames == 0 {
        return Err(crate::cli::UsageError("--frames must be at least 1 for verify".into()).into());
    }
    let extent = vk::Extent2D { width: args.size.width, height: args.size.height };
    let mut o = Offscreen::new(&args.common, extent)?;
    let draw_target = o.draw_target();
    let Offscreen { session, renderer, .. } = &mut o;
    let mut post = PostCheck::default();

    // Every environment of the slot (`--envs`: what each view reads) is checked.
    let envs = session.envs;
    let bar = progress_bar(args.frames.saturating_mul(session.grid.len() as u64 * envs as u64));
    let mut max_err = 0f32;
    let mut over = 0usize;
    let mut values = 0usize;
    let mut frames_done = 0u64;
    let mut first_failure = None;
    let grid = session.grid;
    let params_of = |g: u64| WaveParams::at_time(grid, g as f64 * args.dt).with_envs(envs);
    for f in 0..args.frames {
        if interrupted() {
            break;
        }
        let slot = session.sync.slot_of(f);
        let t_frame = std::time::Instant::now();
        bar.set_message(format!("frame {f}: computing and drawing"));
        let mut t = RenderMarks::start(f);
        throttle(session, f, &mut t)?;
        // Poison every slot handed over now (with run-ahead or batches, frames ahead of f), after
        // its previous reader (frame g − K) was drawn: a value the compute side does not write
        // stays NaN.
        let k = session.sync.slots() as u64;
        let due = session.sync.due(f);
        for g in due.clone() {
            let s = session.sync.slot_of(g);
            session
                .poison_slot(s, (g + 1).saturating_sub(k))
                .with_context(|| format!("poisoning slot {s} for frame {g}"))?;
        }
        let handed: Vec<_> = due.map(params_of).collect();
        let copied = compute_and_draw(session, renderer, f, &handed, &draw_target, &mut t)
            .with_context(|| format!("frame {f}"))?;
        let params = params_of(f);
        session.sync.wait_rendered(f + 1)?;
        let sems = &session.sync.sems;
        let mut waits = vec![(sems.rendered.handle, f + 1)];
        if session.sync.mode() != SyncMode::Binary {
            waits.push((sems.computed.handle, f + 1));
        }
        if args.corrupt_frame == Some(f) {
            // Overwrite one value of the slot itself (on the GPU, after the draw) with 2.0, a
            // height no frame produces.
            let i = session.grid.len() as u64 / 2;
            session.fill_slot(slot, i * 4, 4, 2.0f32.to_bits(), f + 1)?;
            log::warn!("test hook: corrupted value {i} of slot {slot} in frame {f}");
        }
        log::debug!("frame {f}: computed and drawn in {:?}", t_frame.elapsed());
        // The post stage: every frame copied out by now (on Vulkan's queue, frame f with its
        // draw; off it, the post batch that frame f ended, if it ended one).
        let on_queue = session.sync.plan().post_on_queue();
        let ready = if on_queue { f + 1 } else { copied.end };
        post.check_copied(session, ready, args.corrupt_frame)?;
        let mut data =
            session.read_slot(slot, &waits).with_context(|| format!("reading slot {slot} back"))?;
        data.truncate(params.values());
        let t_cmp = std::time::Instant::now();
        bar.set_message(format!("frame {f}: comparing with the CPU reference"));
        let c = compare_with_reference_progress(&params, &data, args.tolerance, &|n| bar.inc(n));
        log::debug!("frame {f}: compared {} values in {:?}", data.len(), t_cmp.elapsed());
        log::info!(
            "frame {f} slot {slot}: max_abs_error {:.3e}, {} over tolerance",
            c.max_abs_error,
            c.mismatches
        );
        if c.mismatches > 0 && first_failure.is_none() {
            let i = c.first_mismatch.unwrap_or(0);
            let w = session.grid.width as usize;
            let (env, k) = (i / session.grid.len(), i % session.grid.len());
            let at = if envs > 1 { format!("environment {env} ") } else { String::new() };
            first_failure = Some(format!(
                "frame {f} slot {slot}: first bad value at {at}(x={}, y={}) = {} (expected {})",
                k % w,
                k / w,
                data.get(i).copied().unwrap_or(f32::NAN),
                crate::sim::height(&params.env(env as u32), (k % w) as u32, (k / w) as u32)
            ));
        }
        max_err = max_err.max(c.max_abs_error);
        over += c.mismatches;
        values += data.len();
        frames_done += 1;
    }
    bar.finish_and_clear();
    // Post batches: the last, partial batch's filters and copies, then their checks.
    let blank = blank_views(&o, frames_done)?;
    if let Some(&v) = blank.first() {
        first_failure.get_or_insert(format!(
            "view {v} of the last frame ({} of {} views) shows only the background",
            blank.len(),
            o.views
        ));
    }
    let Offscreen { session, renderer, .. } = &mut o;
    let flushed = flush_post(session, renderer, frames_done, &draw_target)?;
    post.check_copied(session, flushed.end, args.corrupt_frame)?;
    let post_all = session.post.is_none() || post.frames == frames_done;
    let pass = over == 0 && post.over == 0 && post_all && frames_done == args.frames && blank.is_empty();
    let backend = session.sync.backend_kind();
    let mode = session.sync.mode();
    let slots = session.sync.slots();
    let (run_ahead, batch) = (session.sync.plan().run_ahead, session.sync.plan().batch);
    let submit = session.sync.plan().submit.name();
    let post_batch = session.sync.plan().post_batch;
    session.sync.shutdown()?;
    drop(o);
    if let Some(f) = &first_failure {
        crate::errln!("verify: {f}");
    }
    if let Some(f) = &post.first_failure {
        crate::errln!("verify: {f}");
    }
    let post_line = match args.common.post {
        PostKind::None => String::new(),
        kind => format!(
            " post={kind} size={}x{} texels={} texels_over={} max_channel_diff={} post_batch={post_batch} post_frames={}",
            extent.width, extent.height, post.texels, post.over, post.max_diff, post.frames
        ),
    };
    // An interrupted run is neither a pass nor a failure of the data (exit 130, see dispatch).
    let verdict = if interrupted() && frames_done < args.frames {
        "INTERRUPTED"
    } else if pass {
        "PASS"
    } else {
        "FAIL"
    };
    let views_line = match (args.common.views, args.common.envs) {
        (1, 1) => String::new(),
        (n, e) => format!(" views={n} envs={e}"),
    };
    crate::outln!(
        "verify: {verdict} backend={backend} sync={mode} slots={slots} run_ahead={run_ahead} batch={batch} grid={} frames={frames_done} values={values} max_abs_error={max_err:.3e} over_tolerance={over} submit={submit}{views_line}{post_line}",
        args.common.grid,
    );
    Ok(if pass { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `--views`: the views of the last frame (`frames` drawn) that show only the background (every
/// view must draw the surface: its heights were checked above, its layer is checked here).
fn blank_views(o: &Offscreen, frames: u64) -> anyhow::Result<Vec<u32>> {
    if o.views == 1 || frames == 0 {
        return Ok(Vec::new());
    }
    let pixels = o.target.read_rgba(&o.session.ctx, o.target_done(frames))?;
    let per_view = pixels.len() / o.views as usize;
    let background = pixels[..4].to_vec();
    Ok(pixels
        .chunks_exact(per_view)
        .enumerate()
        .filter(|(_, view)| view.chunks_exact(4).all(|p| p == background.as_slice()))
        .map(|(i, _)| i as u32)
        .collect())
}

/// The post stage's check: every frame's output against [`outline_reference`] of its scene.
#[derive(Default)]
struct PostCheck {
    /// Frames checked: every frame before this one.
    frames: u64,
    texels: u64,
    /// Texels with a channel more than 1/255 off.
    over: u64,
    max_diff: u8,
    first_failure: Option<String>,
}

impl PostCheck {
    /// Check every frame from [`Self::frames`] up to `ready` (its copy was submitted): read back
    /// the scene and output of its pair, which holds it until the draw of frame g + K, not
    /// submitted before this check (a post batch is at most K frames). `corrupt` (test hook):
    /// fill that frame's output with magenta first.
    fn check_copied(&mut self, session: &Session, ready: u64, corrupt: Option<u64>) -> anyhow::Result<()> {
        let sems = &session.sync.sems;
        let (Some(images), Some(t)) = (&session.post, &sems.post) else { return Ok(()) };
        for g in self.frames..ready {
            let pair = session.sync.slot_of(g);
            session.sync.wait_presented(g + 1)?;
            let waits = [(sems.rendered.handle, g + 1), (t.presented.handle, g + 1)];
            if corrupt == Some(g) {
                images.corrupt_output(pair, &waits)?;
                log::warn!("test hook: filled output {pair} of frame {g} with magenta");
            }
            let scene = images.read(pair, Which::Scene, &waits).context("reading the scene back")?;
            let output = images.read(pair, Which::Output, &waits).context("reading the output back")?;
            self.check(g, pair, images.extent, &scene, &output);
            self.frames = g + 1;
        }
        Ok(())
    }

    fn check(&mut self, frame: u64, pair: usize, extent: vk::Extent2D, scene: &[u8], output: &[u8]) {
        let (w, h) = (extent.width, extent.height);
        let expected = outline_reference(scene, w, h);
        let mut over = 0;
        for (i, (got, want)) in output.chunks_exact(4).zip(expected.chunks_exact(4)).enumerate() {
            let diff = got.iter().zip(want).map(|(a, b)| a.abs_diff(*b)).max().unwrap_or(0);
            self.max_diff = self.max_diff.max(diff);
            if diff > 1 {
                over += 1;
                if self.first_failure.is_none() {
                    let (x, y) = (i as u32 % w, i as u32 / w);
                    self.first_failure = Some(format!(
                        "frame {frame} pair {pair}: first differing texel at (x={x}, y={y}) = {got:?} \
                         (the CPU filter of the scene gives {want:?})"
                    ));
                }
            }
        }
        log::info!("frame {frame} pair {pair}: post output, {over} texel(s) more than 1/255 off");
        self.over += over;
        self.texels += u64::from(w) * u64::from(h);
    }
}

/// Checks of at least this many values (frames × grid) show a progress bar.
const LONG_CHECK_VALUES: u64 = 64 << 20;

/// A bar over every value the check compares, on stderr; indicatif draws nothing when stderr is
/// not a terminal, and short checks get a hidden bar.
fn progress_bar(total_values: u64) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if total_values < LONG_CHECK_VALUES {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total_values), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("verify [{bar:30}] {percent:>3}% {msg} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
