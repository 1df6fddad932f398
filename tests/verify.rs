//! Acceptance 3: `vkhip verify` passes for cpu and vulkan at 2x2, 513x257 and 1024x1024, and fails
//! when a slot is corrupted.

mod common;
use common::*;

fn verify(args: &[&str]) -> std::process::Output {
    run(vkhip().arg("verify").args(args))
}

fn summary(o: &std::process::Output) -> String {
    stdout(o).lines().rfind(|l| l.starts_with("verify: ")).unwrap_or_default().to_string()
}

#[test]
fn verify_passes_for_cpu_and_vulkan_on_odd_and_large_grids() {
    for backend in ["cpu", "vulkan"] {
        for grid in ["2x2", "513x257", "1024x1024"] {
            let o = verify(&["--backend", backend, "--grid", grid, "--frames", "5"]);
            assert_ok(&o, &format!("verify {backend} {grid}"));
            let s = summary(&o);
            let values =
                grid.split_once('x').map(|(w, h)| w.parse::<usize>().unwrap() * h.parse::<usize>().unwrap());
            assert!(s.starts_with("verify: PASS"), "{s}");
            assert!(
                s.contains(&format!("values={}", values.unwrap() * 5)),
                "every value of 5 frames checked: {s}"
            );
            assert!(s.contains("over_tolerance=0"), "{s}");
        }
    }
}

#[test]
fn verify_passes_in_every_mode_ci_can_run() {
    for (backend, mode) in [("cpu", "blocking"), ("vulkan", "binary"), ("vulkan", "blocking")] {
        for k in ["1", "4"] {
            let o = verify(&[
                "--backend",
                backend,
                "--sync",
                mode,
                "--slots",
                k,
                "--grid",
                "130x67",
                "--frames",
                "9",
            ]);
            assert_ok(&o, &format!("verify {backend} {mode} K={k}"));
            assert!(summary(&o).starts_with("verify: PASS"), "{}", summary(&o));
        }
    }
}

#[test]
fn verify_fails_on_a_corrupted_slot() {
    for backend in ["cpu", "vulkan"] {
        let o = verify(&["--backend", backend, "--grid", "64x64", "--frames", "4", "--corrupt-frame", "2"]);
        assert_eq!(o.status.code(), Some(1), "corrupted run must exit 1\n{}\n{}", stdout(&o), stderr(&o));
        let s = summary(&o);
        assert!(s.starts_with("verify: FAIL") && s.contains("over_tolerance=1"), "{s}");
        assert!(stderr(&o).contains("frame 2 slot 2: first bad value at (x=0, y=32) = 2"), "{}", stderr(&o));
    }
}

/// Issue 8, acceptance 4 (the CI half): every legal pipeline shape — K in 1..=8, batch B in 1..=K,
/// run-ahead R in 0..=K−B — verifies on the vulkan backend (external) and the cpu backend
/// (bridged), binary runs ahead, and simpleVulkan's host-wait scheme verifies too. Each run checks
/// 2K + 3 frames, so every slot is rewritten at least twice after its first use.
#[test]
fn verify_passes_for_every_run_ahead_and_batch_shape() {
    let mut runs: Vec<(String, Vec<String>)> = Vec::new();
    for k in 1..=8u32 {
        for b in 1..=k {
            for r in 0..=(k - b) {
                for (backend, mode) in [("vulkan", "external"), ("cpu", "bridged")] {
                    runs.push((
                        format!("{backend} {mode} K={k} R={r} B={b}"),
                        shape_args(backend, mode, k, r, Some(b)),
                    ));
                }
                if r == 0 && b == 1 {
                    // Issue 27: the default is one submission per frame here; verify the
                    // two-submission shape too.
                    let mut args = shape_args("vulkan", "external", k, r, Some(b));
                    args.extend(["--submit".into(), "split".into()]);
                    runs.push((format!("vulkan external K={k} R=0 B=1 split"), args));
                }
                if b == 1 {
                    runs.push((
                        format!("vulkan binary K={k} R={r}"),
                        shape_args("vulkan", "binary", k, r, None),
                    ));
                }
            }
        }
    }
    runs.push(("vulkan host-wait".into(), shape_args("vulkan", "host-wait", 1, 0, None)));
    assert_eq!(runs.len(), 2 * 120 + 36 + 8 + 1);
    // Two at a time (CI has two cores).
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((name, args)) = runs.get(i) else { break };
                let o = run(vkhip().arg("verify").args(args));
                let line = summary(&o);
                // One submission per frame exactly for vulkan external with R = 0, B = 1 (issue 27).
                let joined = name.starts_with("vulkan external")
                    && name.contains(" R=0 B=1")
                    && !name.ends_with("split");
                let submit = if joined { " submit=joined" } else { " submit=split" };
                if !(o.status.success()
                    && line.starts_with("verify: PASS")
                    && line.contains("over_tolerance=0")
                    && line.ends_with(submit))
                {
                    failures.lock().unwrap().push(format!("{name}: {line} {}", stderr(&o)));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} shapes failed:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}

fn shape_args(backend: &str, mode: &str, k: u32, r: u32, b: Option<u32>) -> Vec<String> {
    let mut a: Vec<String> =
        ["--backend", backend, "--sync", mode, "--grid", "23x9"].map(String::from).into();
    a.extend(["--slots".into(), k.to_string(), "--frames".into(), (2 * k + 3).to_string()]);
    if mode != "host-wait" {
        a.extend(["--run-ahead".into(), r.to_string()]);
    }
    if let Some(b) = b {
        a.extend(["--batch".into(), b.to_string()]);
    }
    a
}
