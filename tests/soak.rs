//! Constant memory: statistics are streaming histograms, not per-frame lists, and the trace keeps
//! only its last N frames. A long headless, traced run at a tiny grid must not grow its resident
//! set after warm-up (the report measures RSS after frame 10,000 and at the end, from
//! /proc/self/statm).
//!
//! By default 25,000 frames (≈ 18 s on lavapipe, whose submissions set the pace, debug build or
//! not: a newcomer's `cargo test` hardly waits for it); `VKHIP_SOAK_FRAMES=200000` is the long
//! run, which CI makes in the background beside its builds (`.ci/run`). The bound scales with the
//! frames measured, so the short run stays sensitive: 0.25 MiB (RSS moves by up to +0.11 MiB
//! after warm-up whatever the length: +0.008, +0.059 and +0.109 MiB over 10,000 frames, +0.109
//! over 190,000, measured on lavapipe) plus 5 bytes a frame — 0.32 MiB over 15,000 frames,
//! catching a leak of 23 bytes a frame or more; 1.16 MiB over the long run's 190,000 (it had
//! 1.0 MiB).

mod common;
use common::*;

/// Frames the report measures RSS from (the app's `RSS_WARMUP_FRAME`).
const WARM: u64 = 10_000;

fn allowed_growth_mib(measured_frames: u64) -> f64 {
    0.25 + 5.0 * measured_frames as f64 / (1024.0 * 1024.0)
}

#[test]
fn many_frames_in_constant_memory() {
    let frames: u64 = match std::env::var("VKHIP_SOAK_FRAMES") {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("VKHIP_SOAK_FRAMES={v:?}: a whole number")),
        Err(_) => 25_000,
    };
    assert!(
        frames > 2 * WARM,
        "VKHIP_SOAK_FRAMES must be above {}: RSS is measured from frame {WARM}",
        2 * WARM
    );
    let trace = std::env::temp_dir().join(format!("vkhip-soak-{}.json", std::process::id()));
    let o = run(vkhip()
        .args(["--headless", "--backend", "vulkan", "--size", "8x8", "--grid", "2x2", "--frames"])
        .arg(frames.to_string())
        .args(["--trace-frames", "2000", "--trace"])
        .arg(&trace));
    let _ = std::fs::remove_file(&trace);
    assert_ok(&o, "the soak run");
    let report = stdout(&o);
    assert!(report.contains(&format!("frames       {frames}")), "{report}");
    let line =
        report.lines().find(|l| l.trim_start().starts_with("memory")).unwrap_or_else(|| panic!("{report}"));
    assert!(line.contains(&format!("after frame {WARM}")), "{line}");
    // "... (+0.123 MiB)": growth from frame 10,000 to the end.
    let growth: f64 = line
        .rsplit_once('(')
        .and_then(|(_, g)| g.trim_end_matches(')').trim_end_matches(" MiB").parse().ok())
        .unwrap_or_else(|| panic!("no growth figure in {line:?}"));
    let allowed = allowed_growth_mib(frames - WARM);
    assert!(
        growth < allowed,
        "RSS grew by {growth} MiB after warm-up, over {} frames (at most {allowed:.3}): {line}",
        frames - WARM
    );
}

#[test]
fn the_bound_is_the_long_runs_and_scales_with_the_frames() {
    assert!((allowed_growth_mib(190_000) - 1.156).abs() < 0.001);
    assert!((allowed_growth_mib(15_000) - 0.322).abs() < 0.001);
    // A leak of 23 bytes a frame is caught by the short run; the noise seen is not.
    assert!(23.0 * 15_000.0 / (1024.0 * 1024.0) > allowed_growth_mib(15_000));
    assert!(0.109 < allowed_growth_mib(10_000));
}
