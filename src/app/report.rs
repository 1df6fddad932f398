//! The one-screen frame report printed at the end of every headless run (and window run).
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included), with the `cpu` backend: the report of a session
//! whose profiler saw a few frames holds every line `vkhip bench` reads back
//! ([`crate::app::matrix::parse`]), with the plan and the device as they are.
//!
//! ```
//! use clap::Parser as _;
//! use std::sync::Arc;
//! use vkhip::app::matrix::parse::parse_report;
//! use vkhip::app::profiling::FrameProfile;
//! use vkhip::app::session::Session;
//! use vkhip::cli::Cli;
//! use vkhip::profile::RenderMarks;
//! use vkhip::vk::instance::Instance;
//!
//! let args = ["vkhip", "--backend", "cpu", "--sync", "bridged", "--grid", "32x32"];
//! let cli = Cli::try_parse_from(args).unwrap();
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let session = Session::new(instance, &cli.run.common, false).unwrap();
//! let mut profile = FrameProfile::new(&session, None);
//! for f in 0..5 {
//!     profile.profiler.end_frame(RenderMarks::start(f));
//!     std::thread::sleep(std::time::Duration::from_millis(2));
//! }
//! profile.profiler.finish(vkhip::profile::clock::host_now_ns());
//! let report = vkhip::app::report::frame_report(&session, &profile, "offscreen 64x64", &[]);
//! assert!(report.starts_with("vkhip frame report\n  frames       5 (offscreen 64x64), grid 32x32"), "{report}");
//! let m = parse_report(&report).unwrap();
//! assert_eq!(m.resolved, session.sync.plan().describe());
//! assert_eq!(m.resolved, "bridged, 3 slot(s), run-ahead 0, batch 1");
//! assert!(m.device.starts_with(&session.ctx.physical.name), "{}", m.device);
//! assert!(m.mean_ms >= 1.5 && m.p99_ms >= m.p50_ms, "{m:?}"); // 2 ms sleeps between frame starts
//! ```

use super::profiling::FrameProfile;
use super::session::Session;
use crate::profile::clock::ClockInfo;
use crate::profile::collect::Stats;
use crate::profile::Stat;
use std::fmt::Write as _;

fn ms_line(s: &Stat) -> String {
    format!("p50 {:.3} ms   p99 {:.3} ms", s.p50_ms(), s.p99_ms())
}

fn us_line(s: &Stat) -> String {
    format!("p50 {:.1} µs   p99 {:.1} µs", s.p50_ms() * 1e3, s.p99_ms() * 1e3)
}

fn clock_line(c: &ClockInfo) -> String {
    format!(
        "{}, ±{:.1} µs (largest drift between anchors {:.1} µs)",
        c.method,
        c.accuracy_ns as f64 / 1e3,
        c.drift_ns as f64 / 1e3
    )
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Whether the compute side's write is timed on the GPU (a kernel or dispatch), not on the host.
fn compute_on_gpu(session: &Session, st: &Stats) -> bool {
    !st.wait_signal.is_empty() || session.sync.compute_clock().is_some() || session.sync.plan().joined()
}

/// The `hand-off in` and `hand-off out` lines: the raw span's p50 and p99 (the trace holds each
/// frame's raw span), then the part of it that frames in flight did not hide
/// ([`crate::profile::collect::exposed_ns`]) as a p50 and as a share of the mean frame time. That
/// part lies inside the graphics queue's idle time before the frame's draw, so its share stays
/// at or under 100% where the raw span's can exceed it.
///
/// ```
/// use vkhip::app::report::handoff_lines;
/// use vkhip::profile::collect::Stats;
///
/// let mut st = Stats::default();
/// for _ in 0..10 {
///     st.frame.record(150_000); // 150 µs frames
///     st.handoff_in.record(240_000); // `rendered` → kernel start: 160% of a frame …
///     st.handoff_in_exposed.record(6_000); // … of which 6 µs with the queue idle
/// }
/// let lines = handoff_lines(&st);
/// assert_eq!(lines.len(), 1, "no hand-off out measured");
/// // (p50 and p99 come from a histogram: 3 significant digits, 240.1 µs here)
/// assert!(lines[0].starts_with("  hand-off in  p50 240.1 µs   p99 240.1 µs   (GPU: 'rendered' → kernel start;"), "{}", lines[0]);
/// assert!(lines[0].ends_with("not hidden by frames in flight: p50 6.0 µs, 4.0% of the frame)"), "{}", lines[0]);
/// ```
pub fn handoff_lines(st: &Stats) -> Vec<String> {
    let frame = st.frame.mean_ms();
    let share = |h: &Stat| if frame > 0.0 { 100.0 * h.mean_ms() / frame } else { 0.0 };
    let exposed = |h: &Stat| {
        if h.is_empty() {
            String::new()
        } else {
            format!(
                "; not hidden by frames in flight: p50 {:.1} µs, {:.1}% of the frame",
                h.p50_ms() * 1e3,
                share(h)
            )
        }
    };
    let mut lines = Vec::new();
    if !st.handoff_in.is_empty() {
        lines.push(format!(
            "  hand-off in  {}   (GPU: 'rendered' → kernel start{})",
            us_line(&st.handoff_in),
            exposed(&st.handoff_in_exposed)
        ));
    }
    if !st.handoff_out.is_empty() {
        lines.push(format!(
            "  hand-off out {}   (GPU: kernel end → the draw's heights readable{})",
            us_line(&st.handoff_out),
            exposed(&st.handoff_out_exposed)
        ));
    }
    lines
}

/// The post stage's lines (`--post`; none without one): the filter's time, its two hand-offs
/// (the draw into the rendered image ended → the filter started; the filter ended → the copy of
/// its output started) and what the stage adds to a frame's way to the screen, the draw's end →
/// the copy's end (GPU timestamps: with `--gpu-timing on`). Each as p50 (the median) and p99.
/// `filter_on_gpu`: the filter is timed on the GPU (a kernel or dispatch), not on the host
/// (`bridged`, `cpu`).
///
/// ```
/// use vkhip::app::report::post_lines;
/// use vkhip::profile::collect::Stats;
///
/// let mut st = Stats::default();
/// assert!(post_lines(&st, true).is_empty(), "no post stage, no lines");
/// for _ in 0..10 {
///     st.post_filter.record(50_000);
///     st.post_in.record(30_000);
///     st.post_out.record(10_000);
///     st.post_latency.record(120_000);
/// }
/// let lines = post_lines(&st, true);
/// assert_eq!(lines, [
///     "  post filter  p50 0.050 ms   p99 0.050 ms   (GPU: the filter reading the rendered image and writing the output)",
///     "  post in      p50 30.0 µs   p99 30.0 µs   (GPU: the draw into the rendered image ended → the filter started)",
///     "  post out     p50 10.0 µs   p99 10.0 µs   (GPU: the filter ended → the copy of its output started)",
///     "  post latency p50 0.120 ms   p99 0.120 ms   (GPU: the draw ended → the copy ended; how much later each frame is shown with the post stage)",
/// ]);
/// assert!(post_lines(&st, false)[0].ends_with("(host: the filter reading the rendered image and writing the output, on the bridge thread)"));
/// ```
pub fn post_lines(st: &Stats, filter_on_gpu: bool) -> Vec<String> {
    let filter_clock = if filter_on_gpu { "GPU" } else { "host" };
    let mut lines = Vec::new();
    if !st.post_filter.is_empty() {
        let on = if filter_on_gpu { "" } else { ", on the bridge thread" };
        lines.push(format!(
            "  post filter  {}   ({filter_clock}: the filter reading the rendered image and writing the output{on})",
            ms_line(&st.post_filter)
        ));
    }
    // The draw and the copy are GPU timestamps; the filter's end of each hand-off is on its clock.
    let clock = if filter_on_gpu { "GPU" } else { "GPU and host clocks" };
    if !st.post_in.is_empty() {
        lines.push(format!(
            "  post in      {}   ({clock}: the draw into the rendered image ended → the filter started)",
            us_line(&st.post_in)
        ));
    }
    if !st.post_out.is_empty() {
        lines.push(format!(
            "  post out     {}   ({clock}: the filter ended → the copy of its output started)",
            us_line(&st.post_out)
        ));
    }
    if !st.post_latency.is_empty() {
        lines.push(format!(
            "  post latency {}   (GPU: the draw ended → the copy ended; how much later each frame is shown with the post stage)",
            ms_line(&st.post_latency)
        ));
    }
    lines
}

/// The text of the report's `GPU limit` line: the frame time's p50 against the GPU's own work per
/// frame, the draw's p50 plus the kernel's (or dispatch's) p50, both from GPU timestamps of the
/// same run; or why the limit is unknown (`gpu_timing`: `--gpu-timing on`; `compute_on_gpu`: the
/// compute side's write is timed on the GPU).
///
/// ```
/// use vkhip::app::report::limit_text;
/// use vkhip::profile::collect::Stats;
///
/// let mut st = Stats::default();
/// for _ in 0..10 {
///     st.frame.record(147_000);
///     st.draw.record(126_000);
///     st.compute.record(5_000);
/// }
/// assert_eq!(
///     limit_text(&st, true, true),
///     "frame p50 at 1.12× the GPU's limit: draw 0.126 + kernel 0.005 = 0.131 ms (GPU p50s)"
/// );
/// assert!(limit_text(&st, true, false).starts_with("unknown: the compute side"));
/// assert!(limit_text(&Stats::default(), false, true).starts_with("unknown: --gpu-timing off"));
/// ```
pub fn limit_text(st: &Stats, gpu_timing: bool, compute_on_gpu: bool) -> String {
    if !gpu_timing {
        return "unknown: --gpu-timing off (no GPU timestamps of the draw and the kernel)".into();
    }
    if st.draw.is_empty() {
        return "unknown: no GPU timestamps of the draw (the device or queue has none)".into();
    }
    if !compute_on_gpu || st.compute.is_empty() {
        return "unknown: the compute side writes on the host (cpu backend), not timed on the GPU".into();
    }
    let (draw, kernel) = (st.draw.p50_ms(), st.compute.p50_ms());
    let limit = draw + kernel;
    let ratio = if limit > 0.0 { st.frame.p50_ms() / limit } else { 0.0 };
    format!("frame p50 at {ratio:.2}× the GPU's limit: draw {draw:.3} + kernel {kernel:.3} = {limit:.3} ms (GPU p50s)")
}

/// Render the frame report.
pub fn frame_report(
    session: &Session,
    profile: &FrameProfile,
    target: &str,
    extra: &[(&str, String)],
) -> String {
    let p = &profile.profiler;
    let st = &p.stats;
    let s = st.frame.summary();
    let sync = &session.sync;
    let dev = &session.ctx.physical;
    let mut out = String::new();
    let _ = writeln!(out, "vkhip frame report");
    let warm = if p.warmup_frames > 0 {
        format!(", after {} warm-up frames", p.warmup_frames)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  frames       {} ({target}{warm}), grid {} ({} values per slot)",
        st.frame.count(),
        session.grid,
        session.grid.len()
    );
    let _ = writeln!(
        out,
        "  frame time   mean {:.3} ms   p50 {:.3} ms   p99 {:.3} ms   ({:.1} fps)",
        s.mean_ms, s.p50_ms, s.p99_ms, s.fps
    );
    if !st.draw_cmd.is_empty() {
        let g = st.draw_cmd.summary();
        let _ = writeln!(
            out,
            "  gpu draw     mean {:.3} ms   p50 {:.3} ms   p99 {:.3} ms   (the draw's whole command buffer, any wait included)",
            g.mean_ms, g.p50_ms, g.p99_ms
        );
        let _ =
            writeln!(out, "  draw         {}   (GPU, from heights readable to the end)", ms_line(&st.draw));
    }
    if !st.compute.is_empty() {
        let gpu = compute_on_gpu(session, st);
        let what = if gpu { "GPU: kernel or dispatch" } else { "host: write and wait" };
        let _ = writeln!(out, "  compute      {}   ({what})", ms_line(&st.compute));
    }
    let on_gpu = compute_on_gpu(session, st);
    let _ = writeln!(out, "  GPU limit    {}", limit_text(st, crate::profile::gpu_timing(), on_gpu));
    if !st.wait_signal.is_empty() {
        let _ = writeln!(
            out,
            "  wait+signal  {}   (GPU: compute waits 'rendered', signals 'computed')",
            us_line(&st.wait_signal)
        );
    }
    if !st.handoff.is_empty() {
        let _ = writeln!(
            out,
            "  hand-off     {}   (compute signalled, or queue free if later → draw could read)",
            us_line(&st.handoff)
        );
    }
    for line in handoff_lines(st) {
        let _ = writeln!(out, "{line}");
    }
    let filter_on_gpu =
        sync.backend_kind().on_vulkan_queue() || sync.mode() == crate::sync::SyncMode::External;
    for line in post_lines(st, filter_on_gpu) {
        let _ = writeln!(out, "{line}");
    }
    if st.draws > 0 && !st.compute.is_empty() {
        let _ = writeln!(
            out,
            "  overlap      {} of {} draws had a GPU kernel or dispatch of another frame running inside them (trace: the draw's kernel_inside)",
            st.overlapped_draws, st.draws
        );
    }
    if !st.overhead.is_empty() {
        let _ =
            writeln!(out, "  sync overhead {}   (frame time − max(draw, compute))", ms_line(&st.overhead));
    }
    let _ = writeln!(
        out,
        "  render cpu   {}   mean {:.1} µs   (render thread CPU time per frame; without the throttle's wait, vkhip's own work: {:.1} µs p50)",
        us_line(&st.cpu),
        st.cpu.mean_ms() * 1e3,
        st.cpu_work.p50_ms() * 1e3
    );
    let p50 = |s: &crate::profile::Stat| s.p50_ms() * 1e3;
    let _ = writeln!(
        out,
        "  cpu phases   wait {:.1}   hand-off {:.1}   record+submit {:.1}   rest {:.1}   (µs, p50 of each: render cpu by phase)",
        p50(&st.cpu_wait),
        p50(&st.cpu_handoff),
        p50(&st.cpu_submit),
        p50(&st.cpu_other)
    );
    if let (Some(start), Some(first)) = (crate::profile::clock::process_start_ns(), p.first_frame_end_ns) {
        let to = if st.draw.is_empty() {
            "process start → the second frame began; no GPU timestamps"
        } else {
            "process start → first draw finished"
        };
        let _ = writeln!(
            out,
            "  start-up     {:.3} s to the first frame ({to})",
            first.saturating_sub(start) as f64 / 1e9
        );
    }
    let _ = writeln!(
        out,
        "  host phases  throttle {:.0} µs   compute {:.0} µs   record+submit {:.0} µs   (mean per frame)",
        st.throttle.mean_ms() * 1e3,
        st.handoff_host.mean_ms() * 1e3,
        st.submit.mean_ms() * 1e3
    );
    if let (Some((frame, warm)), Some(end)) = (p.rss_warm, p.rss_end) {
        let _ = writeln!(
            out,
            "  memory       RSS {:.1} MiB after frame {frame}, {:.1} MiB at the end ({:+.3} MiB)",
            mib(warm),
            mib(end),
            (end as f64 - warm as f64) / (1024.0 * 1024.0)
        );
    }
    let (vk, compute) = FrameProfile::clocks(session);
    let _ = writeln!(out, "  clock        vulkan: {}", clock_line(&vk));
    if let Some(c) = compute {
        let _ = writeln!(out, "  clock        compute: {}", clock_line(&c));
    }
    let _ = writeln!(
        out,
        "  backend      {} on {}: {} ({})",
        sync.backend_kind(),
        sync.backend_device(),
        sync.backend_kind().launch_path(),
        session.backend_reason
    );
    let plan = sync.plan();
    let _ = writeln!(out, "  sync         {}", plan.describe());
    let _ = writeln!(
        out,
        "  in flight    up to {} draws; the render thread host-waited in {} of {} frames",
        plan.frames_in_flight,
        sync.throttle_waits(),
        p.frames_closed()
    );
    if plan.elide_waits() && sync.waits_planned > 0 {
        let _ = writeln!(
            out,
            "  compute wait {} of {} skipped: the host had already seen the draw finish",
            sync.waits_elided, sync.waits_planned
        );
    }
    if plan.lead_frames() > 0 {
        let _ = writeln!(
            out,
            "  run-ahead    compute was handed frames up to {} ahead of the draw; heights were ready {} before their draw",
            plan.lead_frames(),
            if st.handoff_out.is_empty() { "(not measured)".to_string() } else { ms_line(&st.handoff_out) }
        );
    }
    let _ = writeln!(
        out,
        "  device       {} [{}; {}] ({})",
        dev.name,
        dev.type_name(),
        dev.driver,
        session.device_reason
    );
    for (k, v) in extra {
        let _ = writeln!(out, "  {k:<12} {v}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Phase, Profiler, RenderMarks, Span, Stamp, Track};

    /// K = 3 on a 150 µs frame: frame f's kernel runs at +20..+30 µs, its draw at +40..+140 µs.
    /// `rendered` for frame f is draw f − 3's end, 330 µs (220% of a frame) before the kernel
    /// starts, but the queue was busy with draws f − 2 and f − 1 until 30 µs before it.
    #[test]
    fn a_hand_off_longer_than_a_frame_reports_the_part_frames_in_flight_did_not_hide() {
        let (us, base) = (1000u64, 1_000_000_000u64);
        let mut p = Profiler::new(3, None);
        let host = |f, track, phase, a, b| Span {
            frame: f,
            track,
            phase,
            start: Stamp::Host(a),
            end: Stamp::Host(b),
        };
        let no_vk = |_: u64| None;
        for f in 0..40u64 {
            let t0 = base + f * 150 * us;
            p.add(host(f, Track::Render, Phase::Submit, t0 + 5 * us, t0 + 10 * us), &no_vk);
            p.add(host(f, Track::Compute, Phase::Write, t0 + 20 * us, t0 + 30 * us), &no_vk);
            p.add(host(f, Track::Queue, Phase::Draw, t0 + 40 * us, t0 + 140 * us), &no_vk);
            let mut marks = RenderMarks::start(f);
            marks.start_ns = t0;
            p.end_frame(marks);
        }
        p.finish(base + 40 * 150 * us);
        let st = &p.stats;
        assert!((st.frame.mean_ms() - 0.150).abs() < 1e-9, "{}", st.frame.mean_ms());
        // The raw span, kept (the trace holds it per frame): 330 µs, more than the frame.
        assert!((st.handoff_in.p50_ms() - 0.330).abs() < 0.001, "{}", st.handoff_in.p50_ms());
        assert!(st.handoff_in.mean_ms() > st.frame.mean_ms());
        let lines = handoff_lines(st);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let (into, out) = (&lines[0], &lines[1]);
        assert!(into.starts_with("  hand-off in  p50 330."), "{into}");
        assert!(into.ends_with("not hidden by frames in flight: p50 30.0 µs, 20.0% of the frame)"), "{into}");
        assert!(out.ends_with("not hidden by frames in flight: p50 10.0 µs, 6.7% of the frame)"), "{out}");
        // Every share in the lines is at most 100%; the old wording is gone.
        for line in &lines {
            let share: f64 = line.rsplit_once("µs, ").unwrap().1.split('%').next().unwrap().parse().unwrap();
            assert!((0.0..=100.0).contains(&share), "{line}");
            assert!(!line.contains("frames in flight included"), "{line}");
        }
    }
}
