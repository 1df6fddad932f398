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
