//! Issue 10, item 9: faults injected on purpose (`vkhip::fault`, `VKHIP_FAULT`) end in one line
//! and a documented exit code, with no hang, and leak no file descriptors or memory.

mod common;
use clap::Parser;
use common::*;
use std::time::{Duration, Instant};
use vkhip::cli::Cli;

/// The tests of this file run one at a time: one counts this process's fds, the other spawns
/// children (pipes).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or(0)
}

/// Faults armed in this process (the test hook), every failure path run repeatedly: the same
/// number of open fds afterwards, bounded memory, and a clean run still works.
#[test]
fn injected_faults_leak_no_fds_or_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let common =
        ["vk-alloc@1", "vk-alloc@2", "vk-alloc@4", "queue-submit@1", "queue-submit@6", "device-lost@3"];
    for backend in ["cpu", "vulkan"] {
        let mut specs = common.to_vec();
        if backend == "vulkan" {
            specs.push("kernel-compile");
        }
        let cli = Cli::try_parse_from([
            "vkhip",
            "--headless",
            "--frames",
            "8",
            "--size",
            "64x64",
            "--grid",
            "64x64",
            "--backend",
            backend,
        ])
        .unwrap();
        let args = cli.run;
        vkhip::fault::arm("").unwrap();
        vkhip::app::headless::run(&args).expect("a clean run (warms up the driver)");
        let (fds, rss) = (open_fds(), rss_kib());
        for round in 0..3 {
            for &spec in &specs {
                vkhip::fault::arm(spec).unwrap();
                let t = Instant::now();
                let e = vkhip::app::headless::run(&args).expect_err(spec);
                assert!(t.elapsed() < Duration::from_secs(20), "{spec}: took {:?}", t.elapsed());
                let text = format!("{e:#}");
                let want = match spec.split('@').next().unwrap_or_default() {
                    "vk-alloc" => "VK_ERROR_OUT_OF_DEVICE_MEMORY",
                    "queue-submit" => "VK_ERROR_OUT_OF_HOST_MEMORY",
                    "kernel-compile" => "VK_ERROR_INVALID_SHADER_NV",
                    _ => "VK_ERROR_DEVICE_LOST",
                };
                assert!(text.contains(want), "{backend} {spec} round {round}: {text}");
            }
        }
        vkhip::fault::arm("").unwrap();
        vkhip::app::headless::run(&args).expect("a clean run after the faults");
        assert_eq!(open_fds(), fds, "{backend}: fds leaked by the failure paths");
        let grown = rss_kib().saturating_sub(rss);
        assert!(grown < 64 * 1024, "{backend}: RSS grew {grown} KiB over {} failed runs", 3 * specs.len());
    }
}

/// The same faults through the binary: exit code and the one line.
#[test]
fn injected_faults_exit_with_their_documented_code_and_one_line() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let cases: &[(&str, &str, i32, &str)] = &[
        ("cpu", "vk-alloc", 2, "vkhip: error: vkAllocateMemory (slot) failed: VK_ERROR_OUT_OF_DEVICE_MEMORY"),
        (
            "cpu",
            "queue-submit@3",
            2,
            "vkhip: error: frame 2: draw: vkQueueSubmit failed: VK_ERROR_OUT_OF_HOST_MEMORY",
        ),
        (
            "cpu",
            "device-lost@4",
            1,
            "vkhip: error: frame 3: draw: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST",
        ),
        // Two submissions per frame: the dispatch's is the first.
        (
            "vulkan --submit split",
            "device-lost@1",
            1,
            "vkhip: error: frame 0: vulkan: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST",
        ),
        // One submission per frame (the default): the draw's, which carries the dispatch.
        (
            "vulkan",
            "device-lost@1",
            1,
            "vkhip: error: frame 0: draw: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST",
        ),
        (
            "vulkan",
            "kernel-compile",
            1,
            "vkhip: error: vulkan: vkCreateComputePipelines failed: VK_ERROR_INVALID_SHADER_NV",
        ),
        ("cpu", "vk-aloc", 2, "vkhip: error: VKHIP_FAULT=vk-aloc: unknown fault point 'vk-aloc'"),
    ];
    for &(backend, spec, code, line) in cases {
        let t = Instant::now();
        let o = run(vkhip()
            .args(["--headless", "--frames", "10", "--size", "64x64", "--backend"])
            .args(backend.split_whitespace())
            .env("VKHIP_FAULT", spec)
            .env("RUST_LOG", "error"));
        assert!(t.elapsed() < Duration::from_secs(30), "{spec}: took {:?}", t.elapsed());
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(o.status.code(), Some(code), "{backend} {spec}: {err}");
        assert_eq!(lines.len(), 1, "{backend} {spec}: {err}");
        assert!(lines[0].starts_with(line), "{backend} {spec}: {}", lines[0]);
        assert!(!err.contains("panicked"), "{err}");
    }
}
