//! The examples without a GPU: they end with one "no usable CUDA device" line and exit 2 (CI
//! runs them all, the wgpu and HIP ones too: `.ci/run`); bad arguments exit 3 with one line;
//! adopting the profiler in `ash_cuda` stays within 20 lines; and `ash_cuda_broken` is
//! `ash_cuda` with one wait removed and nothing else changed.

#[path = "../../vkhip-interop/tests/common/skip.rs"]
mod skip;

use std::path::PathBuf;
use std::process::Command;

/// A built example of this crate (cargo test builds the examples before the tests).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>");
    dir.join("examples").join(name)
}

fn run(name: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(example(name)).args(args).output().unwrap_or_else(|e| panic!("{name}: {e}"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn source(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples").join(format!("{name}.rs"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn without_a_gpu_the_examples_exit_2_with_one_line_and_bad_arguments_exit_3() {
    let test = "without_a_gpu_the_examples_exit_2_with_one_line_and_bad_arguments_exit_3";
    for name in ["ash_cuda", "ash_cuda_broken"] {
        for (args, says) in [
            (&["--frames"][..], "--frames needs a value"),
            (&["--size", "8"][..], "--size 8 is below 16"),
            (&["--what"][..], "unknown argument \"--what\""),
            (&["--cuda-stamps", "fast"][..], "vkhip-profile: no CUDA stamp mode \"fast\" (events or kernel)"),
        ] {
            let (code, stdout, stderr) = run(name, args);
            assert_eq!(
                (code, stdout.as_str(), stderr.lines().count()),
                (Some(3), "", 1),
                "{name} {args:?}: {stderr}"
            );
            assert!(stderr.starts_with(&format!("{name}: error: {says}")), "{name} {args:?}: {stderr}");
        }
        if !skip::require_part(test, "the no-device exit", skip::Component::NoGpuDriver) {
            return;
        }
        let (code, stdout, stderr) = run(name, &["--frames", "5", "--no-profile"]);
        assert_eq!((code, stdout.as_str(), stderr.lines().count()), (Some(2), "", 1), "{name}: {stderr}");
        assert!(stderr.starts_with(&format!("{name}: no usable CUDA device: ")), "{name}: {stderr}");
    }
}

#[test]
fn adopting_the_profiler_in_ash_cuda_takes_at_most_20_lines() {
    let text = source("ash_cuda");
    let marked = text
        .lines()
        .filter(|l| l.trim_end().ends_with("// profile") && !l.trim_start().starts_with("//"))
        .count();
    let uses = text.lines().filter(|l| l.starts_with("use vkhip_profile")).count();
    assert_eq!(uses, 1);
    assert!(marked + uses <= 20, "{marked} marked lines and {uses} use");
    assert!(
        text.contains(&format!("{marked} of them, and one `use`")),
        "the header states the count ({marked})"
    );
    // Every profiler call is on a marked line: nothing of the profiler hides in unmarked ones.
    for line in
        text.lines().filter(|l| !l.trim_start().starts_with("//") && !l.trim_end().ends_with("// profile"))
    {
        for call in
            ["prof.", "queue.scope", "queue.submitted", "queue.waited", "stream.", "host.scope", "capture."]
        {
            assert!(!line.contains(call), "an unmarked profiler line: {line}");
        }
    }
}

#[test]
fn ash_cuda_broken_is_ash_cuda_without_one_wait() {
    // The code (doc comments aside): the name, the submit without `written`, and its comment.
    let code = |name: &str| {
        source(name).lines().filter(|l| !l.starts_with("//!")).map(str::to_string).collect::<Vec<_>>()
    };
    let (good, bad) = (code("ash_cuda"), code("ash_cuda_broken"));
    assert_eq!(good.len(), bad.len());
    let changed: Vec<(&str, &str)> =
        good.iter().zip(&bad).filter(|(g, b)| g != b).map(|(g, b)| (g.trim(), b.trim())).collect();
    assert_eq!(
        changed,
        [
            ("const NAME: &str = \"ash_cuda\";", "const NAME: &str = \"ash_cuda_broken\";"),
            (
                "// Vulkan: a command buffer that reads the buffer, submitted to wait for `written` ≥ f + 1",
                "// Vulkan: a command buffer that reads the buffer, submitted to signal `read` = f + 1."
            ),
            (
                "// and to signal `read` = f + 1.",
                "// THE BUG: it does not wait for `written` ≥ f + 1 (ash_cuda's submission does)."
            ),
            ("frames.submit(s, &[(&written, v)], &[(&read, v)])?;", "frames.submit(s, &[], &[(&read, v)])?;"),
            (
                "submissions[s] = queue.submitted(&[(&p_written, v)], &[(&p_read, v)]); // profile",
                "submissions[s] = queue.submitted(&[], &[(&p_read, v)]); // profile"
            ),
        ]
    );
}
