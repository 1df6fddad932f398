//! scripts/limit-check.sh (the GPU's limit, issue 27; one script since issue 33 folded
//! gpu-limit-check.sh into it) on a stand-in binary that prints a frame report: the matrix's
//! gpu-timing-on runs check the report's `GPU limit` line, so a line whose ratio is not
//! frame p50 / the GPU's busy time per frame, or whose busy time is below the draw it names,
//! fails the script. Before, limit-check.sh passed it (only gpu-limit-check.sh, on other runs,
//! read the line). Needs bash and coreutils; no GPU.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A stand-in `vkhip` printing a report whose `GPU limit` ratio is `ratio` and busy time `busy`
/// (frame p50 1.000 ms, draw 0.400 and kernel 0.100 serialised: busy 0.500, the true ratio 2.00).
fn fake_vkhip(dir: &Path, ratio: &str, busy: &str) -> PathBuf {
    let bin = dir.join("vkhip");
    let script = format!(
        "#!/bin/sh\n\
         echo 'vkhip frame report'\n\
         echo '  frame time   mean 1.000 ms   p50 1.000 ms   p99 1.100 ms   (1000.0 fps)'\n\
         echo '  draw         p50 0.400 ms   p99 0.450 ms   (GPU)'\n\
         echo '  compute      p50 0.100 ms   p99 0.120 ms   (GPU)'\n\
         echo \"  GPU limit    frame p50 at {ratio}× the GPU's limit: busy {busy} ms per frame (p50 of each frame's union of kernel 0.100 ms, draw 0.400 ms: their p50s)\"\n\
         echo '  sync         external, 1 slot(s), run-ahead 0, batch 1, one submission per frame'\n"
    );
    std::fs::write(&bin, script).unwrap();
    Command::new("chmod").arg("+x").arg(&bin).status().unwrap();
    bin
}

fn limit_check(bin: &Path, out: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/limit-check.sh"))
        .arg(bin)
        .arg(out)
        .env("LIMIT_FRAMES", "5")
        .env("LIMIT_WARMUP", "1")
        .env("LIMIT_REPS", "1")
        .env("LIMIT_GRIDS", "32x32@160x90")
        .env("LIMIT_BACKENDS", "vulkan")
        .env("LIMIT_LINE_SHAPES", "vulkan:3")
        .env("LIMIT_BENCH", "0")
        .output()
        .unwrap()
}

#[test]
fn a_gpu_limit_line_whose_ratio_is_not_frame_over_busy_fails_the_limit_check() {
    let dir = std::env::temp_dir().join(format!("vkhip-limit-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = limit_check(&fake_vkhip(&dir, "2.00", "0.500"), &dir.join("good"));
    let text = |o: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    };
    assert_eq!(good.status.code(), Some(0), "{}", text(&good));
    assert!(text(&good).contains("line-vulkan-k3-32x32-160x90              PASS"), "{}", text(&good));

    let bad = limit_check(&fake_vkhip(&dir, "3.00", "0.500"), &dir.join("bad"));
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let t = text(&bad);
    assert!(t.contains("failed(GPU limit line)"), "the matrix run's line: {t}");
    assert!(t.contains("ratio 3.00 is not frame p50 1.000 / busy 0.500 = 2.0000"), "{t}");
    assert!(t.contains("line-vulkan-k3-32x32-160x90              FAIL"), "the K=3 shape's line: {t}");
    // A busy time shorter than the draw it names cannot be the union of the frame's scopes.
    let short = limit_check(&fake_vkhip(&dir, "5.00", "0.200"), &dir.join("short"));
    assert_eq!(short.status.code(), Some(1), "{}", text(&short));
    assert!(text(&short).contains("busy 0.200 below the draw or the kernel"), "{}", text(&short));

    let usage = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/limit-check.sh"))
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
