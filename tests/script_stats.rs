//! scripts/lib/stats.sh: the median every GPU script prints, written once (issue 39), and no
//! script with a median of its own.

use std::process::Command;

const LIB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/lib/stats.sh");

fn bash(script: &str) -> String {
    let out =
        Command::new("bash").arg("-euo").arg("pipefail").arg("-c").arg(script).arg(LIB).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_median_in_the_shell_and_in_awk() {
    let got = bash(
        r#". "$0"
        median 3 1 2; median 4 1 3 2; median 10 "" 2; echo "[$(median)][$(median "" "")]"
        awk "$STATS_AWK"'BEGIN { print median("3 1 2"), median("4 1 3 2"), "[" median("") "]", range("3 10 2"), range("") }'
        awk "$STATS_AWK"'BEGIN { print mean_ci95("1 2 3 4 5"); print "[" mean_ci95("7") "]" }'"#,
    );
    // 1..5: mean 3, sd √2.5, t(4) = 2.776: 3 ± 1.963.
    assert_eq!(got, "2\n2.5\n6\n[][]\n2 2.5 [] 2–10 -\n3 1.03707 4.96293\n[]\n");
}

#[test]
fn no_script_has_a_median_of_its_own() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "sh") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let l = line.trim_start();
            assert!(
                !(l.starts_with("median()") || l.starts_with("function median(")),
                "{}: a median of its own: {l}",
                path.display()
            );
        }
        // Python's own `statistics.median` (bench-before-after.sh's inline Python) is not ours.
        let ours = text.replace("statistics.median", "");
        if ours.contains("$(median") || ours.contains(" median(") {
            assert!(
                text.contains(". \"$(dirname \"$0\")/lib/stats.sh\""),
                "{} uses median without lib/stats.sh",
                path.display()
            );
        }
    }
}
