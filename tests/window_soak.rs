//! Soak: a window under Xvfb, resized from outside every second for `VKHIP_WINDOW_SOAK_SECONDS`
//! (default 20; CI runs 600), must keep rendering, re-create its swapchain each time, end on
//! SIGTERM like Ctrl-C (teardown, report, exit 143 = 128 + SIGTERM), and stay validation-clean throughout.

mod common;
#[path = "common/x11.rs"]
mod x11;
use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};
use x11::{tools_present, Xvfb};

#[test]
fn window_resized_every_second_stays_validation_clean() {
    let test = "window_resized_every_second_stays_validation_clean";
    if !tools_present(test) || !require(test, Component::ValidationLayer) {
        return;
    }
    let seconds: u64 =
        std::env::var("VKHIP_WINDOW_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20).max(5);
    let mut x = Xvfb::start();
    let mut app = vkhip()
        .env("DISPLAY", &x.display)
        .args([
            "--validation",
            "--backend",
            "vulkan",
            "--grid",
            "64x48",
            "--size",
            "320x240",
            "--max-fps",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vkhip");
    let id = x.wait_for_vkhip_window(&mut app);
    let t0 = Instant::now();
    let mut resizes = 0u32;
    while t0.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        assert!(app.try_wait().unwrap().is_none(), "vkhip exited during the soak");
        // Sizes cycle through small, wide, tall and large windows.
        let (w, h) = [(160, 120), (900, 300), (240, 700), (800, 600), (333, 222)][resizes as usize % 5];
        let o = x.xdotool(&["windowsize", &id, &w.to_string(), &h.to_string()]);
        assert!(o.status.success(), "xdotool windowsize: {}", String::from_utf8_lossy(&o.stderr));
        resizes += 1;
    }
    std::thread::sleep(Duration::from_millis(500));
    let killed = std::process::Command::new("kill").args(["-TERM", &app.id().to_string()]).status();
    assert!(killed.is_ok_and(|s| s.success()), "kill -TERM");
    let out = app.wait_with_output().expect("vkhip finishes");
    assert_eq!(
        out.status.code(),
        Some(143),
        "SIGTERM ends the run like Ctrl-C, exit 128 + 15:\n{}",
        stderr(&out)
    );
    let report = stdout(&out);
    let frames: u64 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("frames")?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    assert!(frames >= seconds, "only {frames} frames in {seconds} s:\n{report}");
    let recreations: u32 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("resizes")?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        recreations >= resizes / 2,
        "{resizes} resizes but {recreations} swapchain re-creations:\n{report}"
    );
    let v = report.lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default();
    assert!(v.starts_with("validation: 0 errors, 0 warnings"), "{v}\n{}", stderr(&out));
    eprintln!(
        "window soak: {seconds} s, {resizes} resizes, {frames} frames, {recreations} re-creations; {v}"
    );
}
