//! Issue 26, item 7: a hostile user's inputs to `vkhip trace check` and to
//! `--backend cuda-in-vulkan`. Each ends in one line and exit 2, promptly, never a hang, a panic
//! or a silent pass.

mod common;
use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `trace check FILE`: (exit code, stdout + stderr), killed after 20 s (a hang fails the test).
fn check(path: &std::path::Path) -> (Option<i32>, String) {
    let mut child = vkhip()
        .args(["trace", "check"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vkhip");
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("trace check {} did not end within 20 s", path.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (o.status.code(), format!("{}{}", stdout(&o), stderr(&o)))
}

fn refused(path: &std::path::Path, why: &str) {
    let (code, out) = check(path);
    assert_eq!(code, Some(2), "{}: {out}", path.display());
    assert_eq!(out.trim().lines().count(), 1, "{}: one line: {out}", path.display());
    assert!(out.starts_with("vkhip: error: "), "{out}");
    assert!(out.contains(why), "{}: '{why}' missing from {out}", path.display());
}

#[test]
fn trace_check_refuses_devices_pipes_and_broken_files_without_hanging() {
    let dir = temp_dir("hostile-trace");
    // Before: /dev/zero was read for ever (until memory ran out), a FIFO waited for a writer.
    refused(std::path::Path::new("/dev/zero"), "not a regular file");
    let fifo = dir.join("fifo.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    refused(&fifo, "not a regular file");
    // These were already refused: kept here so they stay so.
    for (name, bytes, why) in [
        ("empty.json", &b""[..], "invalid JSON (EOF"),
        ("truncated.json", &b"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1"[..], "invalid JSON"),
        ("text.json", &b"hello"[..], "invalid JSON"),
        ("nan.json", &b"{\"traceEvents\":[{\"ts\":NaN}],\"otherData\":{\"slots\":3}}"[..], "invalid JSON"),
        ("array.json", &b"[]"[..], "no traceEvents array"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        refused(&p, why);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hand_edited_traces_are_refused_naming_the_field() {
    let dir = temp_dir("hostile-edits");
    let span = |frame: u64, slot: u64, role: &str, ts: f64, dur: f64| {
        format!(
            r#"{{"ph":"X","name":"{role}","pid":1,"tid":3,"ts":{ts},"dur":{dur},"args":{{"frame":{frame},"slot":{slot},"role":"{role}"}}}}"#
        )
    };
    let trace = |spans: &[String], other: &str| {
        format!(r#"{{"traceEvents":[{}],"otherData":{{{other}}}}}"#, spans.join(","))
    };
    let good = |f: u64| {
        [
            span(f, f % 2, "write", 100.0 * f as f64, 10.0),
            span(f, f % 2, "read", 100.0 * f as f64 + 20.0, 50.0),
        ]
    };
    let mut spans: Vec<String> = (0..4).flat_map(good).collect();
    let clean = dir.join("clean.json");
    std::fs::write(&clean, trace(&spans, r#""slots":2"#)).unwrap();
    let (code, out) = check(&clean);
    assert_eq!(code, Some(0), "{out}");
    // Before: each of these passed the check (exit 0) or printed a 300-digit "µs".
    spans[1] = span(0, 0, "read", 20.0, -1e6);
    let cases = [
        ("negative.json", trace(&spans, r#""slots":2"#), "dur -1000000"),
        ("slot.json", trace(&[span(0, 7, "write", 0.0, 1.0)], r#""slots":2"#), "is on slot 7"),
        ("huge.json", trace(&[span(0, 0, "write", 1e308, 1e308)], r#""slots":2"#), "a span is finite"),
        ("slots.json", trace(&[], r#""slots":-3"#), "K must be a whole number"),
        (
            "accuracy.json",
            trace(&[], r#""slots":2,"vulkan_accuracy_ns":-5"#),
            "otherData.vulkan_accuracy_ns is -5",
        ),
    ];
    for (name, text, why) in cases {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        refused(&p, why);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--backend cuda-in-vulkan` where no device offers `VK_NVX_binary_import` (lavapipe): whatever
/// the other flags, one line and exit 2, before any frame, trace or capture is written.
#[test]
fn cuda_in_vulkan_with_odd_flags_is_refused_before_any_work() {
    // On an NVIDIA GPU the extension is there and these runs are the GPU check's business.
    let info = stdout(&run(vkhip().arg("info")));
    let offered = |l: &str| {
        l.trim_start().strip_prefix("cuda in queue").is_some_and(|r| r.trim_start().starts_with("yes"))
    };
    if info.lines().any(offered) {
        eprintln!("skipped: cuda_in_vulkan_with_odd_flags_is_refused_before_any_work: a device here offers VK_NVX_binary_import");
        return;
    }
    let dir = temp_dir("hostile-civ");
    let trace = dir.join("t.json");
    let capture = dir.join("c.png");
    let (trace_s, capture_s) = (trace.to_str().unwrap(), capture.to_str().unwrap());
    let cases: Vec<Vec<&str>> = vec![
        vec!["--sync", "bridged"],
        vec!["--sync", "binary", "--batch", "4"],
        vec!["--sync", "external", "--run-ahead", "3", "--slots", "8", "--batch", "5"],
        vec!["--gpu-timing", "off"],
        vec!["--trace", trace_s, "--trace-frames", "1"],
        vec!["--memory", "staged"],
        vec!["--capture", capture_s, "--slots", "1"],
        vec!["--device", "0", "--sync", "blocking"],
    ];
    for extra in &cases {
        let o = run(vkhip().args(["--headless", "--frames", "3", "--backend", "cuda-in-vulkan"]).args(extra));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains("VK_NVX_binary_import") && err.contains("--backend cuda"), "{extra:?}: {err}");
        assert!(stdout(&o).is_empty(), "{extra:?}: no report: {}", stdout(&o));
        assert!(!trace.exists() && !capture.exists(), "{extra:?}: a file was written");
    }
    // Before: a device that does not exist was reported as one without the extension.
    let o =
        run(vkhip().args(["--headless", "--frames", "3", "--backend", "cuda-in-vulkan", "--device", "7"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("vkhip: error: --device 7: there are only"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
