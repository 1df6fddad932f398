//! Running one cell in a child process and classifying what came back; the order of the runs.
//!
//! # Examples
//!
//! ```
//! use std::os::unix::process::ExitStatusExt as _;
//! use std::process::ExitStatus;
//! use vkhip::app::matrix::preset::{preset, Cell};
//! use vkhip::app::matrix::run::{child_args, classify, round_order, Outcome};
//! use vkhip::cli::{BenchPreset, OnOff};
//!
//! // The child's command line: frame-timed, warm-up included, only the flags the row sets.
//! let quick = preset(BenchPreset::Quick);
//! let args = child_args(&Cell { config: quick.rows[2], at: quick.sizes[0] }, 60, 10, None, OnOff::Off);
//! assert_eq!(
//!     args.join(" "),
//!     "--headless --time frame --frames 70 --warmup-frames 10 --backend cpu --sync bridged --slots 4 \
//!      --run-ahead 2 --batch 2 --gpu-timing off --grid 64x64 --size 160x90"
//! );
//!
//! // The GPU limit row keeps GPU timing on.
//! let limit = Cell { config: vkhip::app::matrix::preset::LIMIT_ROW, at: quick.sizes[0] };
//! assert!(!child_args(&limit, 60, 10, None, OnOff::Off).contains(&"--gpu-timing".to_string()));
//!
//! // Exit code 2 is "cannot run here", anything else non-zero a failure; the reason is the last
//! // line of stderr. (A raw wait status holds the exit code in its second byte.)
//! let exited = |code: i32| Some(ExitStatus::from_raw(code << 8));
//! let stderr = "warning: x\nvkhip: error: backend cuda is not available\n";
//! assert_eq!(classify(exited(2), "", stderr), Outcome::Unsupported("backend cuda is not available".into()));
//! assert_eq!(classify(exited(1), "", ""), Outcome::Failed("exit code 1".into()));
//! assert_eq!(classify(Some(ExitStatus::from_raw(9)), "", "").reason(), "killed by signal 9");
//! assert_eq!(classify(exited(0), "no report", "").status(), "failed"); // exit 0 without a report
//!
//! // Each round starts one cell later.
//! assert_eq!([0, 1, 3].map(|r| round_order(3, r)), [[0, 1, 2], [1, 2, 0], [0, 1, 2]]);
//! ```

use super::parse::{parse_report, Measurement};
use super::preset::Cell;
use std::io::Read as _;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Frames of the untimed warm-up run every cell gets before the first round.
pub const WARMUP_RUN_FRAMES: u64 = 50;

/// A child still running after this long is killed and counted as failed.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(600);

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok(Measurement),
    /// The child exited 2 (a usage or environment problem: this configuration cannot run here).
    Unsupported(String),
    /// The child exited 1, crashed, timed out, or printed a report that could not be read.
    Failed(String),
}

impl Outcome {
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Ok(_) => "ok",
            Outcome::Unsupported(_) => "unsupported",
            Outcome::Failed(_) => "failed",
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Outcome::Ok(_) => "",
            Outcome::Unsupported(r) | Outcome::Failed(r) => r,
        }
    }

    pub fn measurement(&self) -> Option<&Measurement> {
        match self {
            Outcome::Ok(m) => Some(m),
            _ => None,
        }
    }
}

/// The child's arguments: `--headless --time frame --frames W+F --warmup-frames W`, the cell's
/// grid and size, and only the flags the configuration sets (never `--capture`).
pub fn child_args(
    cell: &Cell,
    frames: u64,
    warmup: u64,
    device: Option<usize>,
    gpu_timing: crate::cli::OnOff,
) -> Vec<String> {
    let c = &cell.config;
    let mut a: Vec<String> = vec![
        "--headless".into(),
        "--time".into(),
        "frame".into(),
        "--frames".into(),
        (warmup + frames).to_string(),
        "--warmup-frames".into(),
        warmup.to_string(),
        "--backend".into(),
        c.backend.into(),
    ];
    let mut opt = |flag: &str, v: Option<String>| {
        if let Some(v) = v {
            a.push(flag.into());
            a.push(v);
        }
    };
    opt("--sync", c.sync.map(str::to_string));
    opt("--slots", c.slots.map(|v| v.to_string()));
    opt("--run-ahead", c.run_ahead.map(|v| v.to_string()));
    opt("--batch", c.batch.map(|v| v.to_string()));
    opt("--memory", c.memory.map(str::to_string));
    opt("--compute-wait", c.compute_wait.map(str::to_string));
    opt("--post", c.post.map(str::to_string));
    opt("--post-batch", c.post_batch.map(|v| v.to_string()));
    opt("--views", c.views.map(|v| v.to_string()));
    opt("--device", device.map(|v| v.to_string()));
    // The limit row and the timed rows need the GPU's timestamps whatever the matrix's setting.
    if gpu_timing == crate::cli::OnOff::Off && !c.limit && !c.timed {
        a.extend(["--gpu-timing".into(), "off".into()]);
    }
    a.extend(["--grid".into(), cell.at.grid.to_string(), "--size".into(), cell.at.size.to_string()]);
    a
}

/// The last non-empty line of a child's stderr, without the `vkhip: error: ` prefix.
pub fn last_line(stderr: &str) -> String {
    let line = stderr.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("");
    line.strip_prefix("vkhip: error: ").unwrap_or(line).to_string()
}

/// Classify a finished child from its exit status and output.
pub fn classify(status: Option<ExitStatus>, stdout: &str, stderr: &str) -> Outcome {
    use std::os::unix::process::ExitStatusExt as _;
    let Some(status) = status else {
        return Outcome::Failed(format!("timed out after {} s and was killed", CHILD_TIMEOUT.as_secs()));
    };
    let last = last_line(stderr);
    match (status.code(), status.signal()) {
        (Some(0), _) => match parse_report(stdout) {
            Ok(m) => Outcome::Ok(m),
            Err(e) => Outcome::Failed(e.to_string()),
        },
        (Some(2), _) => Outcome::Unsupported(if last.is_empty() { "exit code 2".into() } else { last }),
        (Some(code), _) => Outcome::Failed(if last.is_empty() {
            format!("exit code {code}")
        } else {
            format!("exit code {code}: {last}")
        }),
        (None, sig) => Outcome::Failed(format!("killed by signal {}", sig.unwrap_or(0))),
    }
}

/// Run `exe` with `args` to completion (or [`CHILD_TIMEOUT`]) and classify the result.
pub fn run_child(exe: &Path, args: &[String]) -> Outcome {
    log::debug!("running {} {}", exe.display(), args.join(" "));
    let mut child = match Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("cannot start {}: {e}", exe.display())),
    };
    // Readers on their own threads, so a child filling a pipe never blocks on us.
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = read(child.stdout.take().map(|s| Box::new(s) as _));
    let err = read(child.stderr.take().map(|s| Box::new(s) as _));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > CHILD_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Outcome::Failed(format!("waiting for the child: {e}")),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    classify(status, &stdout, &stderr)
}

/// Round `round`'s order of `n` cells: every cell once, rotated left by `round`, so each
/// repetition starts one cell later and no configuration always runs first.
pub fn round_order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt as _;

    #[test]
    fn rounds_rotate_by_one() {
        assert_eq!(round_order(4, 0), [0, 1, 2, 3]);
        assert_eq!(round_order(4, 1), [1, 2, 3, 0]);
        assert_eq!(round_order(4, 2), [2, 3, 0, 1]);
        assert_eq!(round_order(4, 5), [1, 2, 3, 0]);
        assert_eq!(round_order(1, 3), [0]);
        assert!(round_order(0, 1).is_empty());
        // Over n rounds every cell takes every position once.
        for pos in 0..5 {
            let mut seen: Vec<usize> = (0..5).map(|r| round_order(5, r)[pos]).collect();
            seen.sort_unstable();
            assert_eq!(seen, [0, 1, 2, 3, 4]);
        }
    }

    fn exit(code: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(code << 8))
    }

    #[test]
    fn exit_codes_are_classified() {
        let err = "[WARN] something\nvkhip: error: backend cuda is not available (no libcuda)\n\n";
        assert_eq!(
            classify(exit(2), "", err),
            Outcome::Unsupported("backend cuda is not available (no libcuda)".into())
        );
        assert_eq!(
            classify(exit(1), "", "vkhip: error: lost\n"),
            Outcome::Failed("exit code 1: lost".into())
        );
        assert_eq!(classify(exit(101), "", ""), Outcome::Failed("exit code 101".into()));
        assert_eq!(
            classify(Some(ExitStatus::from_raw(11)), "", ""),
            Outcome::Failed("killed by signal 11".into())
        );
        assert!(matches!(classify(None, "", ""), Outcome::Failed(r) if r.contains("timed out")));
        // Exit 0 without a readable report is a failure, not a zero.
        assert!(matches!(classify(exit(0), "hello\n", ""), Outcome::Failed(r) if r.contains("frame time")));
    }
}
