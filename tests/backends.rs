//! Interop backends on a machine without their GPUs (CI): one clear line and exit 2 when asked
//! for explicitly; `auto` falls back to `vulkan` and says why. And Ctrl-C: a run stops cleanly.

mod common;
use common::*;
use std::time::Duration;

fn has_libcuda() -> bool {
    ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", "/lib/libcuda.so.1"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
}

fn one_error_line(o: &std::process::Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

#[test]
fn cuda_without_libcuda_exits_2_with_one_line() {
    if has_libcuda() {
        skip::skip(
            "cuda_without_libcuda_exits_2_with_one_line",
            "a machine without libcuda (it is installed here: the missing-driver case cannot be checked)",
            true,
        );
        return;
    }
    let o = run(vkhip().args(["--headless", "--frames", "1", "--backend", "cuda"]));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        one_error_line(&o),
        "vkhip: error: backend cuda is not available: libcuda.so not found: install the NVIDIA driver"
    );
}

#[test]
fn hip_without_a_device_exits_2_naming_the_missing_device() {
    if std::path::Path::new("/dev/kfd").exists() {
        skip::skip(
            "hip_without_a_device_exits_2_naming_the_missing_device",
            "a machine without /dev/kfd (the GPU-less case cannot be checked here)",
            true,
        );
        return;
    }
    let o = run(vkhip().args(["--headless", "--frames", "1", "--backend", "hip"]));
    assert_eq!(o.status.code(), Some(2));
    let line = one_error_line(&o);
    if cfg!(feature = "hip") {
        assert!(line.contains("hipGetDeviceCount returned hipErrorNoDevice"), "{line}");
    } else {
        assert!(line.contains("built without HIP support"), "{line}");
    }
}

#[test]
fn auto_falls_back_to_vulkan_and_logs_why() {
    if !require("auto_falls_back_to_vulkan_and_logs_why", Component::NoGpuDriver) {
        return;
    }
    let o = run(vkhip().env("RUST_LOG", "info").args(["--headless", "--frames", "2", "--size", "160x90"]));
    assert_ok(&o, "auto run");
    let report = stdout(&o);
    let backend = report.lines().find(|l| l.trim_start().starts_with("backend ")).unwrap_or_default();
    assert!(backend.contains("backend      vulkan on "), "{backend}");
    assert!(backend.contains("cuda: libcuda.so not found"), "{backend}");
    let hip_why = if cfg!(feature = "hip") {
        "hip: hipGetDeviceCount returned hipErrorNoDevice"
    } else {
        "hip: this vkhip was built without HIP support"
    };
    assert!(backend.contains(hip_why), "{backend}");
    // The same reason is logged (RUST_LOG=info) before anything is built.
    assert!(stderr(&o).contains("using the vulkan backend"), "{}", stderr(&o));
}

#[test]
fn ctrl_c_stops_a_run_cleanly_with_a_report() {
    // The run itself needs only the README's packages; checking its teardown needs the layer.
    let validation = require_part(
        "ctrl_c_stops_a_run_cleanly_with_a_report",
        "validation part",
        Component::ValidationLayer,
    );
    let mut child = vkhip()
        .args(["--headless", "--frames", "1000000", "--size", "160x90", "--grid", "32x32"])
        .args(validation.then_some("--validation"))
        .args(["--backend", "cpu", "--sync", "bridged"])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vkhip");
    // Interrupt once frames are running (the protocol logs its start), however slow the machine:
    // keep reading stderr on a thread, and collect it for the assertions below.
    let stderr_pipe = child.stderr.take().expect("stderr");
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
            if line.contains("vkhip::sync] sync: ") {
                let _ = started_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    started_rx.recv_timeout(Duration::from_secs(60)).expect("the run started its frame loop");
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(30), "vkhip did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(o.status.code(), Some(130), "an interrupted run exits 130 after its report\n{err}");
    let report = stdout(&o);
    let frames: u64 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("frames")?.split_whitespace().next()?.parse().ok())
        .expect("frame count in the report");
    assert!(frames > 0 && frames < 1_000_000, "{report}");
    assert!(err.contains("interrupted"), "{err}");
    let v = report.lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default();
    if validation {
        assert!(v.starts_with("validation: 0 errors, 0 warnings"), "teardown after Ctrl-C: {v}");
    } else {
        assert!(v.is_empty(), "no validation line without --validation: {v}");
    }
}
