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
    refused(&dir, "not a regular file");
    // These were already refused: kept here so they stay so.
    for (name, bytes, why) in [
        ("empty.json", &b""[..], "is not JSON: EOF"),
        ("truncated.json", &b"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1"[..], "is not JSON"),
        ("text.json", &b"hello"[..], "is not JSON"),
        ("nan.json", &b"{\"traceEvents\":[{\"ts\":NaN}],\"otherData\":{\"slots\":3}}"[..], "is not JSON"),
        ("array.json", &b"[]"[..], "holds no trace events"),
        (
            "old.json",
            &b"{\"traceEvents\":[{\"ph\":\"X\"}],\"otherData\":{\"slots\":3}}"[..],
            "otherData.vkhip_profile is missing",
        ),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        refused(&p, why);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A trace the profiler wrote, edited by hand: each damage is refused naming the event or the
/// field, never read as a default, wrapped or overflowed.
#[test]
fn hand_edited_traces_are_refused_naming_the_field() {
    let dir = temp_dir("hostile-edits");
    let clean = dir.join("clean.json");
    let o = run(vkhip()
        .args([
            "--headless",
            "--frames",
            "8",
            "--size",
            "64x48",
            "--grid",
            "16x16",
            "--backend",
            "cpu",
            "--trace",
        ])
        .arg(&clean));
    assert_ok(&o, "a trace to edit");
    let (code, out) = check(&clean);
    assert_eq!(code, Some(0), "{out}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&clean).unwrap()).unwrap();
    let first_scope = |d: &mut serde_json::Value| -> usize {
        d["traceEvents"].as_array().unwrap().iter().position(|e| e["ph"] == "X").unwrap()
    };
    type Damage = fn(&mut serde_json::Value, usize);
    let cases: [(&str, Damage, &str); 7] = [
        (
            "negative.json",
            |d, i| d["traceEvents"][i]["dur"] = (-1e6).into(),
            "dur is -1000000.0 µs: not a time",
        ),
        ("huge.json", |d, i| d["traceEvents"][i]["ts"] = 1e308.into(), "ts is 1e+308 µs: not a time"),
        ("tid.json", |d, i| d["traceEvents"][i]["tid"] = 99.into(), "tid names no track"),
        (
            "resource.json",
            |d, i| d["traceEvents"][i]["args"]["writes"] = serde_json::json!(["slot[9]"]),
            "resource \"slot[9]\" is not in otherData.resources",
        ),
        ("seq.json", |d, i| d["traceEvents"][i]["args"]["seq"] = "1".into(), "args.seq is missing"),
        (
            "version.json",
            |d, _| d["otherData"]["vkhip_profile"] = 2.into(),
            "otherData.vkhip_profile is 2; this reader knows 1",
        ),
        ("api.json", |d, _| d["otherData"]["tracks"][0]["api"] = "metal".into(), "unknown api \"metal\""),
    ];
    for (name, damage, why) in cases {
        let mut d = doc.clone();
        let i = first_scope(&mut d);
        damage(&mut d, i);
        let p = dir.join(name);
        std::fs::write(&p, d.to_string()).unwrap();
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
