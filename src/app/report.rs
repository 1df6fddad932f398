//! The one-screen frame report printed at the end of every headless run (and window run).

use super::session::Session;
use crate::profile::{FrameSummary, FrameTimes};
use std::fmt::Write as _;

/// Render the frame report.
pub fn frame_report(session: &Session, times: &FrameTimes, target: &str, extra: &[(&str, String)]) -> String {
    let s = FrameSummary::of(&times.periods_ms());
    let (throttle, compute, submit) = times.phase_means_us();
    let sync = &session.sync;
    let dev = &session.ctx.physical;
    let mut out = String::new();
    let _ = writeln!(out, "vkhip frame report");
    let _ = writeln!(out, "  frames       {} ({target})", times.frames.len());
    let _ = writeln!(
        out,
        "  frame time   mean {:.3} ms   p50 {:.3} ms   p99 {:.3} ms   ({:.1} fps)",
        s.mean_ms, s.p50_ms, s.p99_ms, s.fps
    );
    if !times.gpu_draw_ms.is_empty() {
        let g = FrameSummary::of(&times.gpu_draw_ms);
        let _ = writeln!(
            out,
            "  gpu draw     mean {:.3} ms   p50 {:.3} ms   p99 {:.3} ms   (timestamps around each draw)",
            g.mean_ms, g.p50_ms, g.p99_ms
        );
    }
    let _ = writeln!(
        out,
        "  host phases  throttle {throttle:.0} µs   compute {compute:.0} µs   record+submit {submit:.0} µs   (mean per frame)"
    );
    let _ = writeln!(
        out,
        "  backend      {} on {} ({})",
        sync.backend_kind(),
        sync.backend_device(),
        session.backend_reason
    );
    let _ = writeln!(out, "  sync         {}, {} slot(s)", sync.mode(), sync.slots());
    let _ = writeln!(out, "  grid         {} ({} values per slot)", session.grid, session.grid.len());
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
