//! Acceptance 5 (headless part): `--validation` runs report 0 errors and 0 warnings in every mode
//! CI can run (Khronos validation with synchronization validation enabled).

mod common;
use common::*;

fn validation_line(o: &std::process::Output) -> String {
    stdout(o).lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default().to_string()
}

#[test]
fn headless_runs_are_validation_clean_in_every_mode() {
    if !require("headless_runs_are_validation_clean_in_every_mode", Component::ValidationLayer) {
        return;
    }
    let runs: &[(&str, &str)] = &[
        ("cpu", "bridged"),
        ("cpu", "blocking"),
        ("vulkan", "external"),
        ("vulkan", "binary"),
        ("vulkan", "blocking"),
    ];
    for (backend, mode) in runs {
        for k in ["1", "3"] {
            let args = ["--backend", backend, "--sync", mode, "--slots", k];
            clean_headless_run(&format!("{backend}/{mode}/K={k}"), &args);
        }
    }
}

/// A 12-frame headless run with `args` under validation: exit 0 and no error or warning. Returns
/// the report.
fn clean_headless_run(name: &str, args: &[&str]) -> String {
    let o = run(vkhip()
        .args(["--headless", "--validation", "--frames", "12", "--size", "320x200", "--grid", "64x48"])
        .args(args));
    assert_ok(&o, name);
    let v = validation_line(&o);
    assert!(v.starts_with("validation: 0 errors, 0 warnings"), "{name}: {v}\n{}", stderr(&o));
    stdout(&o)
}

/// Issue 27: one submission per frame (the `vulkan` default) is validation-clean, with
/// synchronization validation, for every K, with and without GPU timing; so is `--submit split`.
#[test]
fn one_submission_frames_are_validation_clean_for_every_k() {
    if !require("one_submission_frames_are_validation_clean_for_every_k", Component::ValidationLayer) {
        return;
    }
    for k in 1..=8 {
        for (submit, timing) in [("joined", "on"), ("joined", "off"), ("split", "on")] {
            let name = format!("vulkan K={k} --submit {submit} --gpu-timing {timing}");
            let k = k.to_string();
            let args = ["--backend", "vulkan", "--slots", &k, "--submit", submit, "--gpu-timing", timing];
            let report = clean_headless_run(&name, &args);
            assert_eq!(report.contains("one submission per frame"), submit == "joined", "{name}");
        }
    }
}

#[test]
fn verify_and_capture_paths_are_validation_clean() {
    if !require("verify_and_capture_paths_are_validation_clean", Component::ValidationLayer) {
        return;
    }
    let dir = temp_dir("validation-capture");
    let o = run(vkhip()
        .args(["--headless", "--validation", "--frames", "3", "--size", "320x200", "--capture"])
        .arg(dir.join("v.png")));
    assert_ok(&o, "capture with validation");
    assert!(validation_line(&o).starts_with("validation: 0 errors, 0 warnings"), "{}", validation_line(&o));
    for backend in ["cpu", "vulkan"] {
        let o = run(vkhip().args([
            "verify",
            "--validation",
            "--grid",
            "33x17",
            "--frames",
            "4",
            "--backend",
            backend,
        ]));
        assert_ok(&o, "verify with validation");
        assert!(
            validation_line(&o).starts_with("validation: 0 errors, 0 warnings"),
            "{}",
            validation_line(&o)
        );
    }
}
