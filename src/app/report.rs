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
//! // No frame went through the profiler crate's analysis: its lines say what is unknown.
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
use vkhip_profile::analysis::HandoffFigure;
use vkhip_profile::{CheckReport, Summary};

fn ms_line(s: &Stat) -> String {
    format!("p50 {:.3} ms   p99 {:.3} ms", s.p50_ms(), s.p99_ms())
}

fn us_line(s: &Stat) -> String {
    format!("p50 {:.1} µs   p99 {:.1} µs", s.p50_ms() * 1e3, s.p99_ms() * 1e3)
}

/// The `in flight` line's tail: what a frame whose throttle host-waited cost the render thread,
/// how much of that was the wait itself, and what a frame without a wait cost (means; empty
/// when no measured frame waited).
fn wait_cost(st: &Stats) -> String {
    if st.cpu_waited.is_empty() {
        return String::new();
    }
    let us = |s: &Stat| s.mean_ms() * 1e3;
    let other = if st.cpu_unwaited.is_empty() {
        String::new()
    } else {
        format!(", one that did not {:.1}", us(&st.cpu_unwaited))
    };
    format!(
        " (render cpu of a frame that waited {:.1} µs, {:.1} of it in the wait{other}; means)",
        us(&st.cpu_waited),
        us(&st.cpu_waited_wait)
    )
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
    // GPU-side modes write on the GPU, whichever thread made the calls.
    let plan = session.sync.plan();
    !st.wait_signal.is_empty()
        || session.sync.compute_clock().is_some()
        || plan.joined()
        || plan.mode.gpu_side()
}

/// The report's label of a hand-off edge: `hand-off in` (`rendered`, or `rendered[s]`, to
/// whoever writes the slot), `hand-off out` (`computed` to the draw), `post in` (`scene` to the
/// filter), `post out` (`posted` to the copy), `post reuse` (the filter waiting for the copy of
/// frame f−K, the draw for its filter), `host wait` (the render thread waiting for a value).
fn edge_label(h: &HandoffFigure, render: &str) -> (u8, &'static str) {
    let base = h.semaphore.split('[').next().unwrap_or("");
    let to_render = h.to_label == render;
    match base {
        _ if to_render => (5, "host wait"),
        "rendered" => (0, "hand-off in"),
        "computed" => (1, "hand-off out"),
        "scene" => (2, "post in"),
        "posted" => (3, "post out"),
        _ => (4, "post reuse"),
    }
}

/// The hand-off lines, one per edge (semaphore, signalling track → waiting track) of the
/// profiler crate's summary: the part of the wait that the waiter could not hide behind its
/// own work (*exposed*: the figure to act on) as p50, p99 and its mean as a share of the mean
/// frame, then the edge and the raw latency from the signal to the waiter's first work (with K
/// slots it starts K − 1 draws before the frame needs its heights, so it can be longer than a
/// frame; the trace keeps each one). `render`: the render thread's label in the summary.
///
/// ```
/// use vkhip::app::report::handoff_lines;
/// use vkhip_profile::analysis::{HandoffFigure, Summary};
/// use vkhip_profile::stats::Figure;
/// use vkhip_profile::TrackId;
///
/// let fig = |p50_ns, p99_ns| Figure { count: 10, mean_ns: p50_ns as f64, p50_ns, p99_ns, max_ns: p99_ns };
/// let edge = |sem: &str, from: &str, to: &str, exposed, latency| HandoffFigure {
///     semaphore: sem.into(), from: TrackId(0), to: TrackId(1), from_label: from.into(), to_label: to.into(),
///     latency, exposed,
/// };
/// let summary = Summary {
///     handoffs: vec![
///         edge("computed", "cuda stream \"compute\"", "vulkan queue \"graphics\"", fig(10_000, 12_000), fig(10_000, 12_000)),
///         // `rendered` → kernel start: 240 µs, longer than the 150 µs frame, of which 6 µs exposed.
///         edge("rendered", "vulkan queue \"graphics\"", "cuda stream \"compute\"", fig(6_000, 9_000), fig(240_000, 260_000)),
///     ],
///     ..Default::default()
/// };
/// let lines = handoff_lines(&summary, 0.150, "host thread \"render\"");
/// assert_eq!(lines, [
///     "  hand-off in  exposed p50 6.0 µs   p99 9.0 µs   (4.0% of the frame; 'rendered' vulkan queue \"graphics\" → cuda stream \"compute\"; latency p50 240.0 µs, p99 260.0 µs, 10 waits)",
///     "  hand-off out exposed p50 10.0 µs   p99 12.0 µs   (6.7% of the frame; 'computed' cuda stream \"compute\" → vulkan queue \"graphics\"; latency p50 10.0 µs, p99 12.0 µs, 10 waits)",
/// ]);
/// ```
pub fn handoff_lines(summary: &Summary, frame_mean_ms: f64, render: &str) -> Vec<String> {
    let mut edges: Vec<(u8, &'static str, &HandoffFigure)> = summary
        .handoffs
        .iter()
        .map(|h| {
            let (rank, label) = edge_label(h, render);
            (rank, label, h)
        })
        .collect();
    edges.sort_by(|a, b| (a.0, &a.2.semaphore).cmp(&(b.0, &b.2.semaphore)));
    let us = |ns: u64| ns as f64 / 1e3;
    edges
        .into_iter()
        .map(|(_, label, h)| {
            let share =
                if frame_mean_ms > 0.0 { 100.0 * h.exposed.mean_ns / 1e6 / frame_mean_ms } else { 0.0 };
            format!(
                "  {label:<12} exposed p50 {:.1} µs   p99 {:.1} µs   ({share:.1}% of the frame; '{}' {} → {}; latency p50 {:.1} µs, p99 {:.1} µs, {} waits)",
                us(h.exposed.p50_ns),
                us(h.exposed.p99_ns),
                h.semaphore,
                h.from_label,
                h.to_label,
                us(h.latency.p50_ns),
                us(h.latency.p99_ns),
                h.latency.count
            )
        })
        .collect()
}

/// The post stage's own lines (`--post`; none without one): the filter's time and what the
/// stage adds to a frame's way to the screen, the draw's end → the copy's end (GPU timestamps:
/// with `--gpu-timing on`). Each as p50 (the median) and p99. `filter_on_gpu`: the filter is
/// timed on the GPU (a kernel or dispatch), not on the host (`bridged`, `cpu`). Its hand-offs
/// are [`handoff_lines`]' `post in` and `post out`.
///
/// ```
/// use vkhip::app::report::post_lines;
/// use vkhip::profile::collect::Stats;
///
/// let mut st = Stats::default();
/// assert!(post_lines(&st, true).is_empty(), "no post stage, no lines");
/// for _ in 0..10 {
///     st.post_filter.record(50_000);
///     st.post_latency.record(120_000);
/// }
/// let lines = post_lines(&st, true);
/// assert_eq!(lines, [
///     "  post filter  p50 0.050 ms   p99 0.050 ms   (GPU: the filter reading the rendered image and writing the output)",
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
    if !st.post_latency.is_empty() {
        lines.push(format!(
            "  post latency {}   (GPU: the draw ended → the copy ended; how much later each frame is shown with the post stage)",
            ms_line(&st.post_latency)
        ));
    }
    lines
}

/// How the `GPU limit` line names a scope that counts towards GPU busy.
fn busy_word(name: &str) -> &str {
    match name {
        "write slot" => "kernel",
        other => other,
    }
}

/// The text of the report's `GPU limit` line: the frame time's p50 against the GPU's own work
/// per frame, from the profiler crate's summary of the same run: per frame, the union of every
/// GPU scope of that frame the frame serialises (the draw, the kernel or dispatch, and with
/// `--post` the filter and the copy), as a p50, with each one named and its own p50; or why the
/// limit is unknown (`gpu_timing`: `--gpu-timing on`). `host_writes`: the compute side writes
/// on the host (`cpu`), which is no GPU work and so not counted.
///
/// ```
/// use vkhip::app::report::limit_text;
/// use vkhip_profile::analysis::{ScopeFigure, Summary};
/// use vkhip_profile::stats::Figure;
/// use vkhip_profile::TrackId;
///
/// let p50 = |ns| Figure { count: 10, mean_ns: ns as f64, p50_ns: ns, p99_ns: ns, max_ns: ns };
/// let scope = |track: &str, name: &str, ns| ScopeFigure {
///     track: TrackId(0), track_label: track.into(), name: name.into(), duration: p50(ns),
/// };
/// let summary = Summary {
///     gpu_busy: p50(161_000),
///     gpu_busy_scopes: vec![ // in the order the analysis first met them
///         "vulkan queue \"graphics\": draw".into(),
///         "cuda stream \"compute\": write slot".into(),
///         "cuda stream \"compute\": post filter".into(),
///         "vulkan queue \"graphics\": post copy".into(),
///     ],
///     scopes: vec![
///         scope("vulkan queue \"graphics\"", "draw", 126_000),
///         scope("cuda stream \"compute\"", "write slot", 5_000),
///         scope("cuda stream \"compute\"", "post filter", 20_000),
///         scope("vulkan queue \"graphics\"", "post copy", 10_000),
///     ],
///     ..Default::default()
/// };
/// assert_eq!(
///     limit_text(Some(&summary), 0.190, true, false),
///     "frame p50 at 1.18× the GPU's limit: busy 0.161 ms per frame (p50 of each frame's union of kernel 0.005 ms, draw 0.126 ms, post filter 0.020 ms, post copy 0.010 ms: their p50s)"
/// );
/// assert!(limit_text(Some(&Summary::default()), 0.2, true, false).starts_with("unknown: no GPU timestamps"));
/// assert!(limit_text(None, 0.2, false, false).starts_with("unknown: --gpu-timing off"));
/// ```
pub fn limit_text(
    summary: Option<&Summary>,
    frame_p50_ms: f64,
    gpu_timing: bool,
    host_writes: bool,
) -> String {
    if !gpu_timing {
        return "unknown: --gpu-timing off (no GPU timestamps of the draw and the kernel)".into();
    }
    let Some(s) = summary.filter(|s| s.gpu_busy.count > 0) else {
        return "unknown: no GPU timestamps of the draw (the device or queue has none)".into();
    };
    let busy = s.gpu_busy.p50_ns as f64 / 1e6;
    let ratio = if busy > 0.0 { frame_p50_ms / busy } else { 0.0 };
    let mut counted: Vec<_> = s
        .gpu_busy_scopes
        .iter()
        .filter_map(|counted| s.scopes.iter().find(|f| format!("{}: {}", f.track_label, f.name) == *counted))
        .collect();
    // In the order a frame runs them.
    let rank =
        |name: &str| ["write slot", "draw", "post filter", "post copy"].iter().position(|n| *n == name);
    counted.sort_by_key(|f| rank(&f.name).unwrap_or(usize::MAX));
    let parts: Vec<String> = counted
        .iter()
        .map(|f| format!("{} {:.3} ms", busy_word(&f.name), f.duration.p50_ns as f64 / 1e6))
        .collect();
    let host = if host_writes { "; the host writes the slots (cpu backend): not GPU work" } else { "" };
    // The busy time leaves out the hand-offs between GPU tracks (the GPU changing contexts):
    // say so, with the ratio that counts them (the crate's `bound` module).
    let switches = s.gpu_handoffs_ns() / 1e6;
    let switches = if switches > 0.0 {
        format!(
            "; leaves out {switches:.3} ms a frame exposed in hand-offs between GPU tracks (the GPU changing contexts): {:.2}× counting them",
            frame_p50_ms / (busy + switches)
        )
    } else {
        String::new()
    };
    format!(
        "frame p50 at {ratio:.2}× the GPU's limit: busy {busy:.3} ms per frame (p50 of each frame's union of {}: their p50s){switches}{host}",
        parts.join(", ")
    )
}

/// The checker's lines: its verdict over every frame of the run (the profiler crate's streaming
/// checker), then what it could not verify and the first violations, each on a line of its own.
pub fn checker_lines(check: &CheckReport) -> Vec<String> {
    let text = check.to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").trim_start_matches("checker: ");
    let mut out = vec![format!("  checker      {first}")];
    out.extend(lines.map(|l| format!("             {l}")));
    out
}

/// How long before its draw could read them the heights were written (run-ahead and batches):
/// the raw latency of `computed` to the graphics queue.
fn ready_before_draw(summary: Option<&Summary>) -> Option<String> {
    let h =
        summary?.handoffs.iter().find(|h| h.semaphore == "computed" && h.to_label.contains("graphics"))?;
    let ms = |ns: u64| ns as f64 / 1e6;
    Some(format!("p50 {:.3} ms   p99 {:.3} ms", ms(h.latency.p50_ns), ms(h.latency.p99_ns)))
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
    if session.views > 1 {
        let envs = match session.envs {
            1 => "every view over the one height field".to_string(),
            e => format!("view i over environment i of {e}"),
        };
        let _ = writeln!(
            out,
            "  views        {} per frame ({:.0} views/s): one draw submission, the hand-offs of one frame; {envs}",
            session.views,
            s.fps * session.views as f64,
        );
    }
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
    let summary = profile.summary();
    let host_writes = sync.backend_kind() == crate::compute::BackendKind::Cpu;
    let limit = limit_text(summary, st.frame.p50_ms(), crate::profile::gpu_timing(), host_writes);
    let _ = writeln!(out, "  GPU limit    {limit}");
    if !st.wait_signal.is_empty() {
        let _ = writeln!(
            out,
            "  wait+signal  {}   (GPU: compute waits 'rendered', signals 'computed')",
            us_line(&st.wait_signal)
        );
    }
    let render = summary.and_then(|s| s.tracks.first()).map(vkhip_profile::check::track_label);
    let handoffs = summary.map(|s| handoff_lines(s, st.frame.mean_ms(), render.as_deref().unwrap_or("")));
    for line in handoffs.unwrap_or_default() {
        let _ = writeln!(out, "{line}");
    }
    for line in post_lines(st, sync.filter_on_gpu()) {
        let _ = writeln!(out, "{line}");
    }
    if st.draws > 0 && !st.compute.is_empty() {
        let _ = writeln!(
            out,
            "  overlap      {} of {} draws had a GPU kernel or dispatch of another frame running inside them (`vkhip trace check` counts them from the trace)",
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
    match summary {
        Some(sum) => {
            for line in checker_lines(&sum.check) {
                let _ = writeln!(out, "{line}");
            }
        }
        None => {
            let _ = writeln!(out, "  checker      not run: the run ended before the profiler summarised it");
        }
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
        "  in flight    up to {} draws; the render thread host-waited in {} of {} frames{}",
        plan.frames_in_flight,
        sync.throttle_waits(),
        p.frames_closed(),
        wait_cost(st)
    );
    if plan.elide_waits() && sync.waits_planned() > 0 {
        let _ = writeln!(
            out,
            "  compute wait {} of {} skipped: the host had already seen the draw finish",
            sync.waits_elided(),
            sync.waits_planned()
        );
    }
    if plan.lead_frames() > 0 {
        let _ = writeln!(
            out,
            "  run-ahead    compute was handed frames up to {} ahead of the draw; heights were ready {} before their draw",
            plan.lead_frames(),
            ready_before_draw(summary).unwrap_or_else(|| "(not measured)".to_string())
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
    use crate::profile::program::{Assembler, Layout, Op, OpKind, Sem};
    use crate::profile::span::HostSpan;
    use crate::profile::{Phase, Track};
    use vkhip_profile::model::{Api, Track as ModelTrack};
    use vkhip_profile::Analysis;

    /// K = 3 on a 150 µs frame: frame f's kernel runs at +20..+30 µs after waiting `rendered`
    /// of frame f − 3, its draw at +40..+140 µs. `rendered` for frame f is draw f − 3's end,
    /// 330 µs (220% of a frame) before the kernel starts, but the stream was busy until the
    /// previous kernel ended and the submission came 10 µs before it: the report leads with the
    /// exposed part, which is a share of the frame, and keeps the raw latency after it.
    #[test]
    fn a_hand_off_longer_than_a_frame_leads_with_the_part_the_waiter_could_not_hide() {
        let (us, base) = (1000u64, 1_000_000_000u64);
        let track = |name: &str, api: Api| ModelTrack {
            name: name.into(),
            api,
            clock: String::new(),
            accuracy_ns: 0,
            clock_domain: api.is_gpu().then_some(0),
        };
        let mut a = Assembler::new(Layout {
            slots: 3,
            post: false,
            compute_on_gpu: true,
            tracks: vec![
                (Track::Render, track("render", Api::Host)),
                (Track::Queue, track("graphics", Api::Vulkan)),
                (Track::Compute, track("compute", Api::Cuda)),
            ],
        });
        let mut analysis = Analysis::new();
        let op = |track, frame, kind, host_ns| Op { track, frame, kind, host_ns };
        let span = |track, phase, start_ns, end_ns| HostSpan { track, phase, start_ns, end_ns };
        for f in 0..40u64 {
            let t0 = base + f * 150 * us;
            let submit = Sem::Submit(Track::Render, Track::Compute);
            a.host(
                Track::Render,
                &mut vec![(
                    t0 + 10 * us,
                    crate::profile::program::Rec::Op(op(
                        Track::Render,
                        f,
                        OpKind::Signal(submit, f + 1),
                        Some(t0 + 10 * us),
                    )),
                )],
            );
            a.op(op(Track::Compute, f, OpKind::Wait(submit, f + 1), None));
            if f >= 3 {
                a.op(op(Track::Compute, f, OpKind::Wait(Sem::Rendered, f - 2), None));
            }
            a.op(op(Track::Compute, f, OpKind::Scope(Phase::Write), None));
            a.op(op(Track::Compute, f, OpKind::Signal(Sem::Computed, f + 1), None));
            a.op(op(Track::Queue, f, OpKind::Wait(Sem::Computed, f + 1), None));
            a.op(op(Track::Queue, f, OpKind::Scope(Phase::Draw), None));
            a.op(op(Track::Queue, f, OpKind::Signal(Sem::Rendered, f + 1), None));
            a.span(f, span(Track::Compute, Phase::Write, t0 + 20 * us, t0 + 30 * us));
            a.span(f, span(Track::Queue, Phase::Draw, t0 + 40 * us, t0 + 140 * us));
            a.flush(f, &mut analysis);
        }
        a.finish(&mut analysis);
        let summary = analysis.summary();
        assert!(summary.check.is_clean(), "{}", summary.check);
        let lines = handoff_lines(&summary, 0.150, "host thread \"render\"");
        assert_eq!(lines.len(), 2, "{lines:?}");
        let (into, out) = (&lines[0], &lines[1]);
        // In: `rendered` (draw f − 3 ended at (f − 3)·150 + 140 µs) → the kernel at f·150 + 20:
        // 330 µs raw; the stream's own work ended at (f − 1)·150 + 30, the submission came at
        // f·150 + 10: 10 µs exposed.
        assert!(into.starts_with("  hand-off in  exposed p50 10.0 µs"), "{into}");
        assert!(into.contains("(6.7% of the frame; 'rendered' vulkan queue \"graphics\" → cuda stream \"compute\"; latency p50 330."), "{into}");
        // Out: the kernel ended at +30, the queue's previous draw at −10: 10 µs, all exposed.
        assert!(out.starts_with("  hand-off out exposed p50 10.0 µs"), "{out}");
        for line in &lines {
            let share: f64 = line.split_once("   (").unwrap().1.split('%').next().unwrap().parse().unwrap();
            assert!((0.0..=100.0).contains(&share), "{line}");
        }
        // Every frame's GPU work is the kernel and the draw: 110 µs busy; the line names both.
        let text = limit_text(Some(&summary), 0.150, true, false);
        assert!(text.starts_with("frame p50 at 1.36× the GPU's limit: busy 0.110 ms per frame"), "{text}");
        assert!(text.contains("union of kernel 0.010 ms, draw 0.100 ms: their p50s"), "{text}");
        // The two hand-offs' 10 µs exposed (`rendered` in 37 frames of 40): 0.019 ms a frame,
        // which the limit counts in the second ratio: 0.150 / (0.110 + 0.01925).
        assert!(
            text.ends_with("; leaves out 0.019 ms a frame exposed in hand-offs between GPU tracks (the GPU changing contexts): 1.16× counting them"),
            "{text}"
        );
    }
}
