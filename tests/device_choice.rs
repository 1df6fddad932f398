//! Issue 44: `vkhip info` says which Vulkan index is which CUDA ordinal, and on a machine
//! without CUDA (lavapipe) says so in one line; `--device 0` and `--device vulkan:0` name the
//! same device.

mod common;
use common::*;

#[test]
fn info_pairs_vulkan_indices_with_cuda_ordinals() {
    let o = run(vkhip().arg("info"));
    assert_ok(&o, "vkhip info");
    let out = stdout(&o);
    let section = out
        .split("Vulkan and CUDA numbering (--device N is Vulkan's index, --device cuda:N CUDA's ordinal):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no numbering section:\n{out}"));
    let lines: Vec<&str> = section.lines().take_while(|l| l.starts_with("  ")).collect();
    if vkhip_interop::cuda::devices().is_err() {
        // lavapipe: one line, the reason, and what it means for --device.
        assert_eq!(lines.len(), 1, "{out}");
        assert!(
            lines[0].starts_with("  no CUDA here (cuda: ")
                && lines[0].ends_with("): --device cuda:N cannot be used"),
            "{out}"
        );
    } else {
        // A GPU machine: one line per Vulkan device, the CUDA GPUs paired by deviceUUID.
        assert!(lines.iter().any(|l| l.contains(" = --device cuda:")), "{out}");
    }
    assert!(out.contains("Selection (--backend auto):"), "{out}");
}

#[test]
fn vulkan_prefix_is_the_plain_index() {
    let plain = run(vkhip().args(["info", "--device", "0"]));
    let prefixed = run(vkhip().args(["info", "--device", "vulkan:0"]));
    assert_ok(&plain, "vkhip info --device 0");
    assert_ok(&prefixed, "vkhip info --device vulkan:0");
    let device_line = |o: &std::process::Output| {
        stdout(o).lines().find(|l| l.starts_with("  device   [")).map(str::to_string)
    };
    assert!(device_line(&plain).is_some(), "{}", stdout(&plain));
    assert_eq!(device_line(&plain), device_line(&prefixed));
}
