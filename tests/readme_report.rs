//! The sample frame report (docs/RUNNING.md, moved there from the README in issue 39) has exactly
//! the line labels the current report prints (issue 33, item 4: a sample that predated the
//! report's new lines). The section states the sample's
//! command; this runs it on lavapipe (shorter, at a small grid) and compares the labels. A sample
//! from the GPU machine (`--backend cuda` or `hip`) is compared with `--backend vulkan --submit
//! split`, the nearest lavapipe runs (a compute side with submissions of its own), allowing the
//! lines only one of the two prints: `compute wait` (an interop backend's waits across APIs can
//! be skipped) and `wait+signal` (the spans hip and vulkan have around their GPU waits).

mod common;
use common::*;

/// The labels of a report's lines (two spaces, the label padded to 12 characters), in order,
/// each once.
fn labels(report: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in report.lines() {
        let Some(rest) = line.strip_prefix("  ") else { continue };
        if rest.starts_with(' ') || !rest.is_char_boundary(12.min(rest.len())) {
            continue; // a continuation line (the checker's details)
        }
        let label = rest[..12.min(rest.len())].trim_end().to_string();
        if !out.contains(&label) {
            out.push(label);
        }
    }
    out
}

/// docs/RUNNING.md's section on the frame report: the sample block and the command before it.
fn readme_sample() -> (Vec<String>, String) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/RUNNING.md")).unwrap();
    let section =
        readme.split_once("### The frame report").expect("docs/RUNNING.md's frame report section").1;
    let (intro, rest) = section.split_once("```\n").expect("a sample block");
    let block = rest.split_once("```").expect("the sample block's end").0;
    assert!(block.starts_with("vkhip frame report\n"), "{block}");
    // The command: the first `vkhip --headless …` in backticks, maybe across lines.
    let intro = intro.replace('\n', " ");
    let command = intro
        .split('`')
        .find(|s| s.starts_with("vkhip --headless"))
        .expect("the sample's command in backticks")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (labels(block), command)
}

#[test]
fn the_readme_sample_report_has_the_labels_the_report_prints() {
    let (want, command) = readme_sample();
    let mut args: Vec<String> = command.split_whitespace().skip(1).map(String::from).collect();
    let value = |args: &mut Vec<String>, flag: &str, to: &str| match args.iter().position(|a| a == flag) {
        Some(i) => args[i + 1] = to.to_string(),
        None => args.extend([flag.to_string(), to.to_string()]),
    };
    // Interop backends do not run here: the nearest that does (see the module note).
    let interop = args.windows(2).any(|w| w[0] == "--backend" && (w[1] == "cuda" || w[1] == "hip"));
    if interop {
        value(&mut args, "--backend", "vulkan");
        value(&mut args, "--submit", "split");
    }
    // The labels do not depend on the size of the run.
    value(&mut args, "--grid", "32x32");
    value(&mut args, "--size", "160x90");
    value(&mut args, "--frames", "40");
    let o = run(vkhip().args(&args));
    assert_ok(&o, &command);
    let got = labels(&stdout(&o));
    let (only_readme, only_here): (&[&str], &[&str]) =
        if interop { (&["compute wait"], &["wait+signal"]) } else { (&[], &[]) };
    let keep = |v: &[String], drop: &[&str]| -> Vec<String> {
        v.iter().filter(|l| !drop.contains(&l.as_str())).cloned().collect()
    };
    assert_eq!(
        keep(&want, only_readme),
        keep(&got, only_here),
        "docs/RUNNING.md's sample report (from `{command}`) has other labels than this report of `vkhip {}`:\n{}",
        args.join(" "),
        stdout(&o)
    );
}

/// The comparison itself: a label more or less, or one renamed, is caught.
#[test]
fn a_sample_with_an_old_or_a_missing_line_is_caught() {
    let report = "vkhip frame report\n  frames       5 (x)\n  frame time   mean 1 ms\n  checker      0 violations\n             unverifiable …\n  device       d\n";
    assert_eq!(labels(report), ["frames", "frame time", "checker", "device"]);
    let old = report.replace(
        "  checker      0 violations\n             unverifiable …\n",
        "  hand-off     p50 19.1 µs\n",
    );
    assert_ne!(labels(&old), labels(report));
}
