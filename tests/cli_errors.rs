//! Acceptance 7: every user mistake and environment gap gives exit code 2 and one line naming the
//! problem on stderr, never a panic.

mod common;
use common::*;

struct Case {
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    /// Text the one error line must contain.
    expect: &'static str,
}

const CASES: &[Case] = &[
    Case { args: &["--grid", "1x5"], env: &[], expect: "'1x5': each side must be at least 2" },
    Case { args: &["--grid", "banana"], env: &[], expect: "'banana' is not of the form WxH" },
    Case { args: &["--grid", "20000x2"], env: &[], expect: "each side must be at most 16384" },
    Case { args: &["--slots", "0"], env: &[], expect: "--slots" },
    Case { args: &["--slots", "9"], env: &[], expect: "9 is not in 1..=8" },
    Case { args: &["--frames", "abc"], env: &[], expect: "invalid value 'abc' for '--frames <N>'" },
    Case { args: &["--headless", "--frames", "0"], env: &[], expect: "--frames must be at least 1" },
    Case { args: &["--dt", "0"], env: &[], expect: "--dt 0 must be a positive number" },
    Case { args: &["--backend", "metal"], env: &[], expect: "invalid value 'metal' for '--backend" },
    Case {
        args: &["--sync", "sometimes"],
        env: &[],
        expect: "possible values: auto, external, binary, bridged, blocking",
    },
    Case { args: &["--device", "7"], env: &[], expect: "--device 7: there are only 1 Vulkan devices" },
    Case {
        args: &["--backend", "cpu", "--sync", "external"],
        env: &[],
        expect: "the cpu backend cannot wait or signal on the GPU",
    },
    Case { args: &["--backend", "cuda", "--frames", "1"], env: &[], expect: "backend cuda is not available" },
    Case { args: &["--grid", "8192x8192", "--frames", "1"], env: &[], expect: "grid 8192x8192 is too large" },
    Case {
        args: &["--frames", "1"],
        env: &[("VKHIP_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1")],
        expect: "install libvulkan1 and a Vulkan driver, e.g. mesa-vulkan-drivers",
    },
    Case {
        args: &["--frames", "1"],
        env: &[("VK_DRIVER_FILES", "/nonexistent/icd.json"), ("VK_ICD_FILENAMES", "/nonexistent/icd.json")],
        expect: "no usable Vulkan device",
    },
    Case {
        args: &["compare-png", "/nonexistent/a.png", "/nonexistent/b.png"],
        env: &[],
        expect: "/nonexistent/a.png",
    },
    Case { args: &["verify", "--frames", "0"], env: &[], expect: "--frames must be at least 1 for verify" },
    // Issue 10, item 2: every numeric option has a finite, meaningful range, checked at parse time.
    Case {
        args: &["verify", "--tolerance", "NaN"],
        env: &[],
        expect: "--tolerance NaN must be a number in 0..=1",
    },
    Case {
        args: &["verify", "--tolerance", "inf"],
        env: &[],
        expect: "--tolerance inf must be a number in 0..=1",
    },
    Case {
        args: &["verify", "--tolerance", "-1"],
        env: &[],
        expect: "--tolerance -1 must be a number in 0..=1",
    },
    Case {
        args: &["--dt", "1e308"],
        env: &[],
        expect: "--dt 1e308 must be a positive number of seconds in 1e-6..=3600",
    },
    Case {
        args: &["verify", "--dt", "NaN"],
        env: &[],
        expect: "--dt NaN must be a positive number of seconds",
    },
    Case {
        args: &["--max-fps", "1e-300"],
        env: &[],
        // Issue 21: not the eighty-digit expansion of 1e-300.
        expect: "--max-fps 1e-300 must be 0 (no cap) or a number of frames per second in 0.01..=10000 (see",
    },
    Case { args: &["--max-fps", "1e9"], env: &[], expect: "--max-fps 1000000000 must be 0 (no cap)" },
    // Issue 21: vkhip writes PNG only; a .jpg (or no) extension would mislabel the file.
    Case {
        args: &["--headless", "--frames", "1", "--capture", "out.jpg"],
        env: &[],
        expect: "--capture out.jpg: vkhip writes PNG files only; give a name ending in .png",
    },
    Case {
        args: &["--headless", "--frames", "1", "--capture", "frame"],
        env: &[],
        expect: "--capture frame: vkhip writes PNG files only",
    },
    // Issue 21: --validation without the layer stops with one line, and prints no counts it
    // never got (VK_LAYER_PATH replaces the loader's layer search path: no layer is found).
    Case {
        args: &["--headless", "--frames", "1", "--validation"],
        env: &[("VK_LAYER_PATH", "/nonexistent"), ("VK_ADD_LAYER_PATH", "")],
        expect: "--validation: VK_LAYER_KHRONOS_validation is not installed (Debian: apt-get install vulkan-validationlayers)",
    },
    Case {
        args: &["cycles", "--backend", "cpu", "--count", "2", "--validation"],
        env: &[("VK_LAYER_PATH", "/nonexistent"), ("VK_ADD_LAYER_PATH", "")],
        expect: "--validation: VK_LAYER_KHRONOS_validation is not installed",
    },
    Case { args: &["cycles", "--count", "0"], env: &[], expect: "0 is not in 2..=10000" },
    Case { args: &["bench-kernel", "--iterations", "0"], env: &[], expect: "0 is not in 1..=100000" },
    Case {
        args: &["info", "--device", "99"],
        env: &[],
        expect: "--device 99: there are only 1 Vulkan devices",
    },
    Case { args: &["--headless", "--bogus-flag"], env: &[], expect: "unexpected argument '--bogus-flag'" },
    // Issue 44: --device is a Vulkan index or cuda:N; anything else is refused at parse time,
    // and a CUDA ordinal this machine lacks names what was asked and what exists.
    Case {
        args: &["--device", "gpu1"],
        env: &[],
        expect: "invalid value 'gpu1' for '--device <N|cuda:N>': \"gpu1\": expected a Vulkan device index (0, 1, …) or cuda:N (a CUDA ordinal); `vkhip info` lists both",
    },
    Case { args: &["--device", "cuda:"], env: &[], expect: "\"cuda:\": expected a Vulkan device index" },
    Case { args: &["--device", "cuda:-1"], env: &[], expect: "\"cuda:-1\": expected a Vulkan device index" },
    Case { args: &["--device", "hip:0"], env: &[], expect: "\"hip:0\": expected a Vulkan device index" },
    Case {
        args: &["bench", "--device", "cuda:one"],
        env: &[],
        expect: "invalid value 'cuda:one' for '--device <N|cuda:N>'",
    },
    Case { args: &["--device", "vulkan:7"], env: &[], expect: "--device 7: there are only 1 Vulkan devices" },
    // No driver here (lavapipe): "libcuda.so not found"; on a GPU machine with fewer than 10
    // GPUs: "this process sees N CUDA devices (0 …)". Both start so.
    Case {
        args: &["--headless", "--frames", "1", "--device", "cuda:9"],
        env: &[],
        expect: "--device cuda:9: cuda: CUDA device 9: ",
    },
    Case { args: &["info", "--device", "cuda:9"], env: &[], expect: "--device cuda:9: cuda: CUDA device 9: " },
];

#[test]
fn bad_inputs_exit_2_with_one_clear_line() {
    let mut failures = Vec::new();
    for case in CASES {
        let mut cmd = vkhip();
        cmd.args(case.args);
        for (k, v) in case.env {
            cmd.env(k, v);
        }
        let o = run(&mut cmd);
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        // Nothing on stdout: a run that stopped at a mistake claims no result.
        let ok = o.status.code() == Some(2)
            && o.stdout.is_empty()
            && lines.len() == 1
            && lines[0].starts_with("vkhip: error: ")
            && lines[0].contains(case.expect)
            && !err.contains("panicked");
        if !ok {
            failures.push(format!(
                "{:?} {:?}: exit {:?}, stdout:\n{}\nstderr:\n{err}",
                case.args,
                case.env,
                o.status.code(),
                stdout(&o)
            ));
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n---\n"));
}

#[test]
fn help_teaches_and_exits_0() {
    let o = run(vkhip().arg("--help"));
    assert_eq!(o.status.code(), Some(0));
    let h = stdout(&o);
    for needle in [
        "--backend",
        "--sync",
        "--slots",
        "--grid",
        "--headless",
        "--capture",
        "verify",
        "info",
        "Exit codes",
    ] {
        assert!(h.contains(needle), "--help lacks {needle}:\n{h}");
    }
}
