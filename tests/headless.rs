//! Headless runs on lavapipe: the capture shows the surface and matches the reference frame; every
//! backend × sync mode × slot count draws the same image for the same frame.

mod common;
use common::*;
use vkhip::image::{compare, Rgba, CHANNEL_TOLERANCE, MAX_DIFFERING_FRACTION};

/// Acceptance 1: the headless command of docs/RUNNING.md, compared with assets/reference-frame.png.
/// Tolerance: a pixel differs if an RGB channel differs by more than CHANNEL_TOLERANCE (8/255);
/// at most MAX_DIFFERING_FRACTION (0.1%) of pixels may differ.
#[test]
fn capture_matches_reference_frame() {
    let dir = temp_dir("reference");
    let png = dir.join("f.png");
    let o = run(vkhip().args(["--headless", "--frames", "120", "--capture"]).arg(&png));
    assert_ok(&o, "headless capture");
    let out = stdout(&o);
    assert!(out.contains("vkhip frame report") && out.contains("frames       120"), "report missing:\n{out}");
    let img = Rgba::read_png(&png).expect("capture is a PNG");
    assert_eq!((img.width, img.height), (1280, 720));
    assert_shows_surface(&img, "capture");
    let reference =
        Rgba::read_png(&assets().join("reference-frame.png")).expect("assets/reference-frame.png");
    let d = compare(&img, &reference, CHANNEL_TOLERANCE).expect("same size as the reference");
    assert!(
        d.same(),
        "capture differs from the reference: {} of {} pixels beyond ±{CHANNEL_TOLERANCE} (allowed {:.1}%), max diff {}",
        d.pixels_over,
        d.total_pixels,
        MAX_DIFFERING_FRACTION * 100.0,
        d.max_channel_diff
    );
}

/// The reference check must be able to fail: a different frame (another time) is not "the same".
#[test]
fn a_different_frame_does_not_match_the_reference() {
    let dir = temp_dir("other-frame");
    let png = dir.join("g.png");
    let o = run(vkhip().args(["--headless", "--frames", "30", "--capture"]).arg(&png));
    assert_ok(&o, "headless capture");
    let img = Rgba::read_png(&png).unwrap();
    let reference = Rgba::read_png(&assets().join("reference-frame.png")).unwrap();
    let d = compare(&img, &reference, CHANNEL_TOLERANCE).unwrap();
    assert!(!d.same(), "frame 29 should not match the reference frame 119 ({} pixels differ)", d.pixels_over);
}

/// Acceptance 2: the same frame from cpu and vulkan, in every sync mode CI can run, with K = 1..4.
#[test]
fn every_backend_mode_and_slot_count_draws_the_same_frame() {
    let dir = temp_dir("matrix");
    let combos: &[(&str, &[&str])] =
        &[("cpu", &["bridged", "blocking"]), ("vulkan", &["external", "binary", "blocking"])];
    let mut first: Option<(String, Rgba)> = None;
    for (backend, modes) in combos {
        for mode in *modes {
            for k in 1..=4 {
                let name = format!("{backend}-{mode}-{k}");
                let png = dir.join(format!("{name}.png"));
                let o = run(vkhip()
                    .args(["--headless", "--frames", "9", "--size", "480x270", "--grid", "96x80"])
                    .args(["--backend", backend, "--sync", mode, "--slots", &k.to_string(), "--capture"])
                    .arg(&png));
                assert_ok(&o, &name);
                let out = stdout(&o);
                assert!(
                    out.contains(&format!("sync         {mode}, {k} slot(s)")),
                    "{name}: report says\n{out}"
                );
                check_same(&mut first, name, Rgba::read_png(&png).unwrap());
            }
        }
    }
    // Run-ahead, batches, K up to 8 and simpleVulkan's scheme draw that same frame too.
    let shapes: &[(&str, &str, &[&str])] = &[
        ("vulkan", "external", &["--slots", "8", "--run-ahead", "0", "--batch", "8"]),
        ("vulkan", "external", &["--slots", "8", "--run-ahead", "7", "--batch", "1"]),
        ("vulkan", "external", &["--slots", "4", "--run-ahead", "2", "--batch", "2"]),
        ("vulkan", "binary", &["--slots", "4", "--run-ahead", "3"]),
        ("vulkan", "host-wait", &["--slots", "1"]),
        ("cpu", "bridged", &["--slots", "8", "--run-ahead", "3", "--batch", "4"]),
    ];
    for (backend, mode, extra) in shapes {
        let name = format!("{backend}-{mode}-{}", extra.join(""));
        let png = dir.join(format!("{name}.png"));
        let o = run(vkhip()
            .args(["--headless", "--frames", "9", "--size", "480x270", "--grid", "96x80"])
            .args(["--backend", backend, "--sync", mode])
            .args(*extra)
            .arg("--capture")
            .arg(&png));
        assert_ok(&o, &name);
        let out = stdout(&o);
        let (k, r, b) = match extra {
            [_, k, _, r, _, b] => (*k, *r, *b),
            [_, k, _, r] => (*k, *r, "1"),
            [_, k] => (*k, "0", "1"),
            _ => unreachable!(),
        };
        let line = format!("sync         {mode}, {k} slot(s), run-ahead {r}, batch {b}");
        assert!(out.contains(&line), "{name}: report lacks '{line}':\n{out}");
        check_same(&mut first, name, Rgba::read_png(&png).unwrap());
    }
}

/// Issue 27: a frame submitted once (dispatch → barrier → draw in one command buffer, the
/// default for `vulkan`) draws exactly what the two-submission shape draws, for every K, and the
/// report says which shape ran.
#[test]
fn one_submission_frames_draw_what_two_submissions_draw() {
    let dir = temp_dir("joined");
    for k in 1..=8 {
        let mut pngs = Vec::new();
        for submit in ["joined", "split"] {
            let name = format!("vulkan-K{k}-{submit}");
            let png = dir.join(format!("{name}.png"));
            let o = run(vkhip()
                .args([
                    "--headless",
                    "--frames",
                    "9",
                    "--size",
                    "480x270",
                    "--grid",
                    "96x80",
                    "--time",
                    "frame",
                ])
                .args(["--backend", "vulkan", "--slots", &k.to_string(), "--submit", submit, "--capture"])
                .arg(&png));
            assert_ok(&o, &name);
            let joined = stdout(&o).contains(", one submission per frame");
            assert_eq!(joined, submit == "joined", "{name}: report says\n{}", stdout(&o));
            pngs.push(Rgba::read_png(&png).unwrap());
        }
        assert_shows_surface(&pngs[0], "joined");
        let d = compare(&pngs[0], &pngs[1], 0).unwrap();
        assert!(
            d.same(),
            "K={k}: joined and split differ in {} pixels (max diff {})",
            d.pixels_over,
            d.max_channel_diff
        );
    }
}

/// The first image becomes the reference; every later one must match it.
fn check_same(first: &mut Option<(String, Rgba)>, name: String, img: Rgba) {
    assert_shows_surface(&img, &name);
    match first {
        None => *first = Some((name, img)),
        Some((ref_name, reference)) => {
            let d = compare(&img, reference, CHANNEL_TOLERANCE).unwrap();
            assert!(
                d.same(),
                "{name} differs from {ref_name}: {} pixels beyond tolerance, max diff {}",
                d.pixels_over,
                d.max_channel_diff
            );
        }
    }
}

/// The README's quick start without a display: `vkhip` alone renders headless, prints the report
/// and writes the last frame to ./vkhip-frame.png.
#[test]
fn run_without_display_writes_a_png_and_the_report() {
    let dir = temp_dir("quick-start");
    let o = run(vkhip().current_dir(&dir).args(["--frames", "5", "--size", "320x180"]));
    assert_ok(&o, "quick-start run");
    let out = stdout(&o);
    assert!(
        out.contains("vkhip frame report") && out.contains("capture      vkhip-frame.png (frame 4)"),
        "{out}"
    );
    assert!(out.lines().count() <= 24, "the report must fit on one screen:\n{out}");
    let img = Rgba::read_png(&dir.join("vkhip-frame.png")).expect("vkhip-frame.png");
    assert_eq!((img.width, img.height), (320, 180));
    assert_shows_surface(&img, "quick-start frame");
}

/// The report's GPU phase: timestamps around each frame's draw give a positive time, no longer
/// than the frame period it is part of (lavapipe draws on the CPU, so the two are close).
#[test]
fn report_has_gpu_draw_time_from_timestamps() {
    let o = run(vkhip().args(["--headless", "--frames", "20", "--size", "320x180", "--grid", "64x64"]));
    assert_ok(&o, "headless run");
    let out = stdout(&o);
    let mean_after = |label: &str| -> f64 {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line:\n{out}"));
        line.split_whitespace()
            .skip_while(|w| *w != "mean")
            .nth(1)
            .and_then(|v| v.parse().ok())
            .expect("mean value")
    };
    let (gpu, frame) = (mean_after("gpu draw"), mean_after("frame time"));
    assert!(gpu > 0.0 && gpu <= frame * 1.05, "gpu draw mean {gpu} ms vs frame mean {frame} ms:\n{out}");
}

/// `--backend cuda-in-vulkan` where Vulkan has no VK_NVX_binary_import (lavapipe): exit 2 and one
/// line naming the extension and the standard path, for runs, verify and bench-style child runs;
/// nothing on stdout claims a result. `info` says the device cannot.
#[test]
fn cuda_in_vulkan_is_refused_in_one_line_without_the_extension() {
    for args in [
        &["--headless", "--backend", "cuda-in-vulkan", "--frames", "3"][..],
        &["verify", "--backend", "cuda-in-vulkan"][..],
        &["--headless", "--backend", "cuda-in-vulkan", "--sync", "binary", "--device", "0"][..],
    ] {
        let o = run(vkhip().args(args));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line:\n{err}");
        assert!(
            err.contains("VK_NVX_binary_import") && err.contains("use --backend cuda"),
            "{args:?}: {err}"
        );
        assert!(stdout(&o).trim().is_empty(), "{args:?}: nothing on stdout:\n{}", stdout(&o));
    }
    let info = stdout(&run(vkhip().arg("info")));
    assert!(info.contains("cuda in queue     no (VK_NVX_binary_import no"), "{info}");
}
