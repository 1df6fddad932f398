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
        let gpu = !st.wait_signal.is_empty()
            || session.sync.compute_clock().is_some()
            || session.sync.plan().joined();
        let what = if gpu { "GPU: kernel or dispatch" } else { "host: write and wait" };
        let _ = writeln!(out, "  compute      {}   ({what})", ms_line(&st.compute));
    }
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
    let share = |h: &Stat| {
        let frame = st.frame.mean_ms();
        if frame > 0.0 {
            100.0 * h.mean_ms() / frame
        } else {
            0.0
        }
    };
    if !st.handoff_in.is_empty() {
        let _ = writeln!(
            out,
            "  hand-off in  {}   (GPU: 'rendered' signalled, the slot's last draw ended → kernel start, frames in flight included; {:.1}% of the frame)",
            us_line(&st.handoff_in),
            share(&st.handoff_in)
        );
    }
    if !st.handoff_out.is_empty() {
        let _ = writeln!(
            out,
            "  hand-off out {}   (GPU: kernel end → the draw's heights readable; {:.1}% of the frame)",
            us_line(&st.handoff_out),
            share(&st.handoff_out)
        );
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
        "  render cpu   {}   mean {:.1} µs   (render thread CPU time per frame)",
        us_line(&st.cpu),
        st.cpu.mean_ms() * 1e3
    );
    let _ = writeln!(
        out,
        "  render work  {}   (the same without the throttle's wait: vkhip's own work per frame)",
        us_line(&st.cpu_work)
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
