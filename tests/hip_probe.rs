//! Without an AMD GPU, `probe()` is one clean line and libamdhip64 itself prints nothing (the CLI
//! turns the `Unavailable` into that line and exit status 2). Measured on Debian 12 (HIP 5.2.3,
//! no /dev/kfd): `hipGetDeviceCount` returns `hipErrorNoDevice` with count 0, writes nothing to
//! stdout or stderr, and does not abort. The same holds on Debian sid's HIP 6.4.3 (`.ci/hip-sid.sh`),
//! whose error string adds a description.
#![cfg(feature = "hip")]

use std::path::Path;
use std::process::Command;

const CHILD: &str = "VKHIP_HIP_PROBE_CHILD";

/// Runs only inside the child process started below: the probe result, marked, on stdout.
#[test]
fn child_prints_probe_result() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    match vkhip::compute::hip::probe() {
        Ok(devices) => println!("PROBE: {} device(s)", devices.len()),
        Err(e) => println!("PROBE: {e}"),
    }
}

#[test]
fn probe_without_gpu_is_one_quiet_line() {
    if Path::new("/dev/kfd").exists() {
        eprintln!("this machine has /dev/kfd: the GPU-less case cannot be checked here");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_prints_probe_result", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("AMD_LOG_LEVEL")
        .env_remove("HIP_VISIBLE_DEVICES")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed ({}): {stdout}{stderr}", out.status);
    assert_eq!(stderr, "", "libamdhip64 wrote to stderr");
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("PROBE") || l.contains("hip")).collect();
    assert_eq!(lines.len(), 1, "expected one line mentioning HIP, got: {stdout}");
    let line = lines[0];
    let at = line.find("PROBE: ").expect("marker");
    let msg = &line[at + "PROBE: ".len()..];
    // HIP 5.x's hipGetErrorString returns the name; 6.x (Debian sid's 6.4.3) a description.
    let runtime = vkhip_interop::hip::runtime_version().expect("needs no GPU").0;
    let status = if runtime >= 60_000_000 {
        "hipErrorNoDevice: no ROCm-capable device is detected"
    } else {
        "hipErrorNoDevice"
    };
    assert_eq!(
        msg,
        format!(
            "backend hip is not available: hipGetDeviceCount returned {status}: no AMD GPU \
             visible to ROCm (no /dev/kfd: the amdgpu kernel driver is not loaded or this is not an \
             AMD GPU machine)"
        ),
        "HIP runtime {runtime}"
    );
}
