//! Constant memory: statistics are streaming histograms, not per-frame lists. A long headless run
//! at a tiny grid must not grow its resident set after warm-up (the report measures RSS after
//! frame 10,000 and at the end, from /proc/self/statm).

mod common;
use common::*;

#[test]
fn two_hundred_thousand_frames_in_constant_memory() {
    let o = run(vkhip().args([
        "--headless",
        "--backend",
        "vulkan",
        "--size",
        "8x8",
        "--grid",
        "2x2",
        "--frames",
        "200000",
    ]));
    assert_ok(&o, "200k-frame run");
    let report = stdout(&o);
    assert!(report.contains("frames       200000"), "{report}");
    let line =
        report.lines().find(|l| l.trim_start().starts_with("memory")).unwrap_or_else(|| panic!("{report}"));
    assert!(line.contains("after frame 10000"), "{line}");
    // "... (+0.123 MiB)": growth from frame 10,000 to the end.
    let growth: f64 = line
        .rsplit_once('(')
        .and_then(|(_, g)| g.trim_end_matches(')').trim_end_matches(" MiB").parse().ok())
        .unwrap_or_else(|| panic!("no growth figure in {line:?}"));
    assert!(growth < 1.0, "RSS grew by {growth} MiB after warm-up: {line}");
}
