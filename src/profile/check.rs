//! `vkhip trace check`: prove from a measured timeline that the protocol kept its two promises.
//!
//! 1. **Read after write**: no draw read a slot before the write of its frame finished — the read
//!    span (`role: read`, from the moment the draw's heights were readable) of frame f starts
//!    after every write span (`role: write`) of frame f ends.
//! 2. **Write after read**: no write of a slot began before that slot's previous draw finished —
//!    the write of frame f starts after the read of frame f−K ends (K = slots, from the trace).
//!
//! With GPU stamps (`otherData.compute_on_gpu_clock`: the CUDA backend's kernels stamp the GPU
//! timer, on the Vulkan device clock) both promises are also proved for the kernel alone, on the
//! GPU's one clock: per frame, the kernel (the compute track's write, tid 4) **started after**
//! the Vulkan signal of `rendered` it waited on (the end of frame f−K's draw) and **ended
//! before** the draw whose wait on `computed` depends on it could read. Those comparisons are
//! between times mapped through the same Vulkan anchors, so the tolerance is the Vulkan mapping's
//! accuracy alone.
//!
//! With a post stage (`otherData.post` is not `"none"`: `--post outline`), frame f draws into the
//! rendered (scene) image of pair p = f mod K, a filter (`role: filter`) reads it and writes the
//! output image of pair p, and a copy (`role: copy`) reads that output. Four more promises:
//!
//! 3. **The filter reads a finished image**: the filter of frame f starts after draw f ends.
//! 4. **The copy reads a finished output**: the copy of frame f starts after filter f ends.
//! 5. **Scene reuse**: draw f starts after the filter of frame f−K, the image's previous reader,
//!    ended. The draw's start is its `read` span's, the "readable" timestamp: for this to be
//!    sound, the barrier before that timestamp must chain with the draw's wait on `posted` too
//!    (its source stage includes the stage `posted` is waited at), as it does with `computed`.
//! 6. **Output reuse**: the filter of frame f starts after the copy of frame f−K, the output
//!    image's previous reader, ended.
//!
//! A trace with `"post": "none"` checks only the first two, as before, and is refused if it holds
//! filter or copy spans; a trace without `post` (written before the post stage, or by a run that
//! did not name it) is a post trace exactly when it has filter or copy spans.
//!
//! Spans come from different clocks (host, Vulkan timestamps, CUDA/HIP events) mapped onto one;
//! a comparison fails only by more than the alignment's stated accuracy (`otherData`), or by more
//! than an explicit `--tolerance-us`.

use serde_json::Value;
use std::collections::BTreeMap;

/// [`CheckReport::post`] of a trace that does not name its post stage but holds its spans.
pub const POST_FROM_SPANS: &str = "named by no otherData.post: from its spans";

/// Errors reading a trace (exit 2: the file, not the protocol, is at fault).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("cannot read the trace {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path} is not a vkhip trace: {why}")]
    Format { path: String, why: String },
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Interval {
    start_us: f64,
    end_us: f64,
}

impl Interval {
    fn join(self, o: Interval) -> Interval {
        Interval { start_us: self.start_us.min(o.start_us), end_us: self.end_us.max(o.end_us) }
    }
}

/// One frame's slot accesses.
#[derive(Clone, Copy, Debug, Default)]
struct Access {
    slot: Option<u64>,
    write: Option<Interval>,
    read: Option<Interval>,
    /// The compute track's GPU write (the kernel or dispatch), when traced.
    kernel: Option<Interval>,
    /// The post stage's filter and copy (`--post`).
    filter: Option<Interval>,
    copy: Option<Interval>,
}

/// One broken promise.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub frame: u64,
    pub slot: u64,
    /// By how much the order was broken, µs.
    pub by_us: f64,
    pub text: String,
}

impl Violation {
    fn new(frame: u64, slot: u64, by_us: f64, what: String) -> Self {
        Violation { frame, slot, by_us, text: format!("frame {frame} (slot {slot}): {what}") }
    }
}

/// The outcome of a check.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub frames: usize,
    pub slots: u64,
    pub tolerance_us: f64,
    pub read_after_write_checks: usize,
    pub write_after_read_checks: usize,
    /// Frames with a read but no write, or the reverse (not violations: the trace lacks a span).
    pub incomplete: usize,
    /// Writes whose slot's previous read (frame f−K, inside the trace) has no span.
    pub unverifiable: usize,
    /// The compute side's times are GPU stamps on the Vulkan clock (`compute_on_gpu_clock`).
    pub gpu_clock: bool,
    /// With GPU stamps: kernels checked to start after the `rendered` they waited on, and to end
    /// before their draw could read.
    pub kernel_start_checks: usize,
    pub kernel_end_checks: usize,
    /// The `--post` value of the run (`otherData.post`; `none` without a post stage).
    pub post: String,
    /// With a post stage: filters checked to start after their draw ended, copies after their
    /// filter ended, draws after the filter of frame f−K ended (scene reuse), and filters after
    /// the copy of frame f−K ended (output reuse).
    pub post_scene_checks: usize,
    pub post_copy_checks: usize,
    pub post_scene_reuse_checks: usize,
    pub post_output_reuse_checks: usize,
    /// Frames of a post run lacking a draw, filter or copy span.
    pub post_incomplete: usize,
    /// How many of [`Self::violations`] are the post stage's (listed after the others).
    pub post_violations: usize,
    pub violations: Vec<Violation>,
    /// Draws whose read span a GPU write of another frame (a kernel or dispatch on the compute
    /// track) overlapped, and those it did not: (count, median read duration in µs) each.
    pub overlapped: (usize, f64),
    pub alone: (usize, f64),
}

impl CheckReport {
    /// No violation, and both promises were actually checked (the second needs more than K
    /// frames).
    pub fn clean(&self) -> bool {
        let post_checked = !self.has_post()
            || (self.post_scene_checks > 0
                && self.post_copy_checks > 0
                && (self.frames as u64 <= self.slots
                    || self.post_scene_reuse_checks + self.post_output_reuse_checks > 0));
        self.violations.is_empty()
            && self.read_after_write_checks > 0
            && (self.frames as u64 <= self.slots || self.write_after_read_checks > 0)
            && post_checked
    }

    /// Whether the run had a post stage (`--post` other than `none`).
    pub fn has_post(&self) -> bool {
        !self.post.is_empty() && self.post != "none"
    }

    /// The summary line and the first `max` violations.
    pub fn render(&self, path: &str, max: usize) -> String {
        let mut out = format!(
            "trace check: {path}: {} frames, K={}, tolerance {:.1} µs: {} read-after-write and {} \
             write-after-read checks, {} violation(s){}\n",
            self.frames,
            self.slots,
            self.tolerance_us,
            self.read_after_write_checks,
            self.write_after_read_checks,
            self.violations.len(),
            if self.incomplete > 0 {
                format!(", {} frame(s) lack a span", self.incomplete)
            } else {
                String::new()
            }
        );
        for v in self.violations.iter().take(max) {
            out.push_str(&format!("  violation: {}\n", v.text));
        }
        if self.violations.len() > max {
            out.push_str(&format!("  … and {} more\n", self.violations.len() - max));
        }
        if self.overlapped.0 + self.alone.0 > 0 {
            out.push_str(&format!(
                "  draws with a GPU kernel or dispatch running inside them: {} (median draw {:.1} µs); without: {} (median draw {:.1} µs)\n",
                self.overlapped.0, self.overlapped.1, self.alone.0, self.alone.1
            ));
        }
        if self.gpu_clock {
            out.push_str(&format!(
                "  kernels on the GPU clock: {} started after the 'rendered' they waited on, {} ended before their draw could read (checked)\n",
                self.kernel_start_checks, self.kernel_end_checks
            ));
        }
        if self.has_post() {
            out.push_str(&format!(
                "  post stage ({}): {} violation(s); checked: {} filters against their draw's end, {} copies against their filter's end, {} draws against frame f−K's filter (rendered image reused), {} filters against frame f−K's copy (output image reused){}\n",
                self.post,
                self.post_violations,
                self.post_scene_checks,
                self.post_copy_checks,
                self.post_scene_reuse_checks,
                self.post_output_reuse_checks,
                if self.post_incomplete > 0 {
                    format!("; {} frame(s) lack a draw, filter or copy span", self.post_incomplete)
                } else {
                    String::new()
                }
            ));
            if self.post_scene_checks == 0 || self.post_copy_checks == 0 {
                out.push_str(
                    "  nothing to check for the post stage: no frame has a draw, a filter and a copy span\n",
                );
            }
        }
        if self.read_after_write_checks == 0 {
            out.push_str("  nothing to check: the trace has no frame with both a write and a read span\n");
        }
        out
    }
}

/// Read and check the trace at `path`.
pub fn check_file(path: &std::path::Path, tolerance_us: Option<f64>) -> Result<CheckReport, CheckError> {
    let shown = path.display().to_string();
    // Not a device or a pipe: `/dev/zero` never ends, a FIFO without a writer never answers.
    let meta = std::fs::metadata(path).map_err(|source| CheckError::Io { path: shown.clone(), source })?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(CheckError::Format {
            path: shown,
            why: "not a regular file (a device or a pipe)".into(),
        });
    }
    let bytes = std::fs::read(path).map_err(|source| CheckError::Io { path: shown.clone(), source })?;
    let doc: Value = serde_json::from_slice(&bytes)
        .map_err(|e| CheckError::Format { path: shown.clone(), why: format!("invalid JSON ({e})") })?;
    check(&doc, tolerance_us).map_err(|why| CheckError::Format { path: shown, why })
}

/// Check a parsed trace document.
///
/// # Examples
///
/// A tiny in-memory trace with K = 2 slots: frame f is written at 100f µs for 10 µs and read
/// from 100f + 20 µs for 50 µs.
///
/// ```
/// use serde_json::{json, Value};
/// use vkhip::profile::check::check;
///
/// let span = |frame: u64, role: &str, ts: f64, dur: f64| -> Value {
///     json!({"ph": "X", "name": role, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
///            "args": {"frame": frame, "slot": frame % 2, "role": role}})
/// };
/// let mut events: Vec<Value> = (0..4u64)
///     .flat_map(|f| {
///         let t = 100.0 * f as f64;
///         [span(f, "write", t, 10.0), span(f, "read", t + 20.0, 50.0)]
///     })
///     .collect();
/// let trace = |events: &Vec<Value>| json!({"traceEvents": events, "otherData": {"slots": 2}});
///
/// let report = check(&trace(&events), None).unwrap();
/// assert!(report.clean());
/// assert_eq!((report.read_after_write_checks, report.write_after_read_checks), (4, 2));
///
/// // Frame 4 reuses slot 0 while frame 2's draw (220..270 µs) still reads it.
/// events.push(span(4, "write", 250.0, 10.0));
/// events.push(span(4, "read", 280.0, 50.0));
/// let report = check(&trace(&events), None).unwrap();
/// assert_eq!(report.violations.len(), 1);
/// assert_eq!((report.violations[0].frame, report.violations[0].slot), (4, 0));
/// assert!(report.violations[0].text.contains("before frame 2's draw finished"));
///
/// // Not a trace at all.
/// assert!(check(&json!({"otherData": {"slots": 2}}), None).is_err());
/// ```
pub fn check(doc: &Value, tolerance_us: Option<f64>) -> Result<CheckReport, String> {
    let events = doc["traceEvents"].as_array().ok_or("no traceEvents array")?;
    let other = &doc["otherData"];
    let slots = match &other["slots"] {
        Value::Null => return Err("otherData.slots is missing".into()),
        v => v
            .as_u64()
            .filter(|&k| k >= 1)
            .ok_or_else(|| format!("otherData.slots is {v}: K must be a whole number ≥ 1"))?,
    };
    // Optional fields: absent is their default; present with the wrong type is a hand edit.
    let gpu_clock = match &other["compute_on_gpu_clock"] {
        Value::Null => false,
        v => {
            v.as_bool().ok_or_else(|| format!("otherData.compute_on_gpu_clock is {v}: not true or false"))?
        }
    };
    let nanoseconds = |name: &str| match &other[name] {
        Value::Null => Ok(0),
        v => v.as_u64().filter(|&ns| ns <= 1_000_000_000).ok_or_else(|| {
            format!("otherData.{name} is {v}: an accuracy is a whole number of ns from 0 to 1 s")
        }),
    };
    // Absent: read from the spans below.
    let post = match &other["post"] {
        Value::Null => None,
        v => v
            .as_str()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                format!("otherData.post is {v}: the --post value, a name such as \"outline\" or \"none\"")
            })
            .map(|p| Some(p.to_string()))?,
    };
    let mut post_spans = false;
    let (vulkan_ns, compute_ns) = (nanoseconds("vulkan_accuracy_ns")?, nanoseconds("compute_accuracy_ns")?);
    // On the GPU clock the compute side's accuracy is the Vulkan mapping's: counted once.
    let compute_ns = if gpu_clock { 0 } else { compute_ns };
    let accuracy_us = (vulkan_ns + compute_ns) as f64 / 1000.0;
    let tolerance_us = tolerance_us.unwrap_or(accuracy_us);
    let mut frames: BTreeMap<u64, Access> = BTreeMap::new();
    // GPU writes (kernels, dispatches: track 4), for the overlap figures.
    let mut compute: Vec<(u64, Interval)> = Vec::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        if e["tid"] == 4 && e["args"]["role"] == "write" {
            if let (Some(f), Some(ts), Some(dur)) =
                (e["args"]["frame"].as_u64(), e["ts"].as_f64(), e["dur"].as_f64())
            {
                compute.push((f, Interval { start_us: ts, end_us: ts + dur }));
            }
        }
        let Some(role) = e["args"]["role"].as_str() else { continue };
        let (Some(frame), Some(ts), Some(dur)) =
            (e["args"]["frame"].as_u64(), e["ts"].as_f64(), e["dur"].as_f64())
        else {
            return Err(format!("a '{role}' span lacks frame, ts or dur: {e}"));
        };
        if !(ts.is_finite() && dur >= 0.0 && (ts + dur).is_finite()) {
            return Err(format!("a '{role}' span of frame {frame} has ts {ts} and dur {dur}: a span is finite and does not end before it starts"));
        }
        let iv = Interval { start_us: ts, end_us: ts + dur };
        // The checks rest on "frame f uses slot f mod K": a span on another slot makes them moot.
        let slot = match &e["args"]["slot"] {
            Value::Null => None,
            v => Some(v.as_u64().filter(|&s| s == frame % slots).ok_or_else(|| {
                format!("a '{role}' span of frame {frame} is on slot {v}, but with K = {slots} frame {frame} uses slot {}", frame % slots)
            })?),
        };
        let a = frames.entry(frame).or_default();
        a.slot = slot.or(a.slot);
        if e["tid"] == 4 && role == "write" {
            a.kernel = Some(a.kernel.map_or(iv, |old| old.join(iv)));
        }
        let slot = match role {
            "write" => &mut a.write,
            "read" => &mut a.read,
            "filter" | "copy" if post.as_deref() == Some("none") => {
                return Err(format!(
                    "a '{role}' span of frame {frame}, but otherData.post is \"none\": the trace does not say which post stage ran"
                ))
            }
            "filter" => {
                post_spans = true;
                &mut a.filter
            }
            "copy" => {
                post_spans = true;
                &mut a.copy
            }
            other => return Err(format!("unknown role '{other}'")),
        };
        *slot = Some(slot.map_or(iv, |old| old.join(iv)));
    }
    let post = post.unwrap_or_else(|| if post_spans { POST_FROM_SPANS.into() } else { "none".into() });
    let mut report =
        CheckReport { frames: frames.len(), slots, tolerance_us, gpu_clock, post, ..Default::default() };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for (&f, r) in frames.iter().filter_map(|(f, a)| a.read.map(|r| (f, r))) {
        let hit = compute.iter().any(|&(g, c)| g != f && c.start_us < r.end_us && c.end_us > r.start_us);
        if hit { &mut with } else { &mut without }.push(r.end_us - r.start_us);
    }
    report.overlapped = (with.len(), crate::profile::stats::median(&with));
    report.alone = (without.len(), crate::profile::stats::median(&without));
    let first = frames.keys().next().copied().unwrap_or(0);
    for (&f, a) in &frames {
        let slot = a.slot.unwrap_or(f % slots);
        match (a.write, a.read) {
            (Some(w), Some(r)) => {
                report.read_after_write_checks += 1;
                let early = w.end_us - r.start_us;
                if early > tolerance_us {
                    report.violations.push(Violation::new(
                        f,
                        slot,
                        early,
                        format!(
                            "the draw read the slot {early:.1} µs before its write finished (write \
                             {:.1}–{:.1} µs, read from {:.1} µs)",
                            w.start_us, w.end_us, r.start_us
                        ),
                    ));
                }
            }
            _ => report.incomplete += 1,
        }
        // The previous reader of this slot: frame f − K (absent for the first K frames traced).
        let (Some(w), Some(prev)) = (a.write, f.checked_sub(slots)) else { continue };
        if prev < first {
            continue;
        }
        let Some(r) = frames.get(&prev).and_then(|p| p.read) else {
            report.unverifiable += 1;
            continue;
        };
        report.write_after_read_checks += 1;
        let early = r.end_us - w.start_us;
        if early > tolerance_us {
            report.violations.push(Violation::new(
                f,
                slot,
                early,
                format!(
                    "the write began {early:.1} µs before frame {prev}'s draw finished reading the slot \
                     (write from {:.1} µs, read until {:.1} µs)",
                    w.start_us, r.end_us
                ),
            ));
        }
    }
    if gpu_clock {
        check_kernels(&frames, slots, &mut report);
    }
    if report.has_post() {
        check_post(&frames, slots, first, &mut report);
    }
    Ok(report)
}

/// The post stage's four orders (promises 3–6 of the module note), frame by frame.
fn check_post(frames: &BTreeMap<u64, Access>, slots: u64, first: u64, report: &mut CheckReport) {
    let tolerance = report.tolerance_us;
    let mut found = Vec::new();
    for (&f, a) in frames {
        let (Some(draw), Some(filter), Some(copy)) = (a.read, a.filter, a.copy) else {
            report.post_incomplete += 1;
            continue;
        };
        let pair = f % slots;
        // One order: what ends at `end` must come before what starts at `start`.
        let mut order = |checks: &mut usize, end: f64, start: f64, what: &dyn Fn(f64) -> String| {
            *checks += 1;
            if end - start > tolerance {
                found.push(Violation::new(f, pair, end - start, what(end - start)));
            }
        };
        order(&mut report.post_scene_checks, draw.end_us, filter.start_us, &|by| {
            format!(
                "the filter read the rendered image {by:.1} µs before its draw ended (draw until {:.1} µs, filter from {:.1} µs)",
                draw.end_us, filter.start_us
            )
        });
        order(&mut report.post_copy_checks, filter.end_us, copy.start_us, &|by| {
            format!(
                "the copy read the output image {by:.1} µs before the filter ended (filter until {:.1} µs, copy from {:.1} µs)",
                filter.end_us, copy.start_us
            )
        });
        // The images' previous readers: frame f − K (absent for the first K frames traced).
        let Some((prev, p)) =
            f.checked_sub(slots).filter(|&q| q >= first).and_then(|q| Some((q, frames.get(&q)?)))
        else {
            continue;
        };
        if let Some(prev_filter) = p.filter {
            order(&mut report.post_scene_reuse_checks, prev_filter.end_us, draw.start_us, &|by| {
                format!(
                    "the draw into rendered image {pair} began {by:.1} µs before frame {prev}'s filter finished reading it (draw from {:.1} µs, filter until {:.1} µs)",
                    draw.start_us, prev_filter.end_us
                )
            });
        }
        if let Some(prev_copy) = p.copy {
            order(&mut report.post_output_reuse_checks, prev_copy.end_us, filter.start_us, &|by| {
                format!(
                    "the filter wrote output image {pair} {by:.1} µs before frame {prev}'s copy finished reading it (filter from {:.1} µs, copy until {:.1} µs)",
                    filter.start_us, prev_copy.end_us
                )
            });
        }
    }
    report.post_violations = found.len();
    report.violations.extend(found);
}

/// The two orderings for the kernel's own GPU span (see the module note); a frame whose order
/// the slot checks above already reported broken is not reported twice.
fn check_kernels(frames: &BTreeMap<u64, Access>, slots: u64, report: &mut CheckReport) {
    let tolerance = report.tolerance_us;
    for (&f, a) in frames {
        let Some(k) = a.kernel else { continue };
        let slot = a.slot.unwrap_or(f % slots);
        let reported = |r: &CheckReport| r.violations.iter().any(|v| v.frame == f);
        if let Some(r) = a.read {
            report.kernel_end_checks += 1;
            let late = k.end_us - r.start_us;
            if late > tolerance && !reported(report) {
                report.violations.push(Violation::new(
                    f,
                    slot,
                    late,
                    format!(
                        "the kernel ended {late:.1} µs after its draw could read (kernel until {:.1} µs, readable at {:.1} µs; GPU clock)",
                        k.end_us, r.start_us
                    ),
                ));
            }
        }
        // A batch's frames share one launch, which waited on the draw K frames before the
        // batch's last frame.
        let last = frames.range(f..).take_while(|(_, b)| b.kernel == Some(k)).last().map_or(f, |(&g, _)| g);
        let Some(prev) = last.checked_sub(slots).and_then(|p| frames.get(&p)).and_then(|p| p.read) else {
            continue;
        };
        report.kernel_start_checks += 1;
        let early = prev.end_us - k.start_us;
        if early > tolerance && !reported(report) {
            report.violations.push(Violation::new(
                f,
                slot,
                early,
                format!(
                    "the kernel started {early:.1} µs before the 'rendered' it waited on (frame {}'s draw ended at {:.1} µs, kernel from {:.1} µs; GPU clock)",
                    last - slots,
                    prev.end_us,
                    k.start_us
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn x(frame: u64, role: &str, ts: f64, dur: f64) -> Value {
        json!({"ph": "X", "name": role, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
               "args": {"frame": frame, "slot": frame % 2, "role": role}})
    }

    fn doc(events: Vec<Value>, acc_ns: u64) -> Value {
        json!({"traceEvents": events, "otherData": {"slots": 2, "vulkan_accuracy_ns": acc_ns,
               "compute_accuracy_ns": 0}})
    }

    /// K = 2; frame f writes at 100f, reads at 100f + 20 .. + 70.
    fn good() -> Vec<Value> {
        (0..6u64)
            .flat_map(|f| {
                let t = 100.0 * f as f64;
                [x(f, "write", t, 10.0), x(f, "read", t + 20.0, 50.0)]
            })
            .collect()
    }

    #[test]
    fn a_correct_timeline_is_clean() {
        let r = check(&doc(good(), 0), None).unwrap();
        assert!(r.clean(), "{}", r.render("t", 10));
        assert_eq!(r.read_after_write_checks, 6);
        assert_eq!(r.write_after_read_checks, 4);
    }

    #[test]
    fn a_read_before_the_write_finished_is_reported() {
        let mut e = good();
        e.push(x(6, "write", 600.0, 30.0));
        e.push(x(6, "read", 610.0, 50.0)); // reads 20 µs before the write ends
        let r = check(&doc(e, 0), None).unwrap();
        assert_eq!(r.violations.len(), 1, "{}", r.render("t", 10));
        let v = &r.violations[0];
        assert_eq!((v.frame, v.slot), (6, 0));
        assert!((v.by_us - 20.0).abs() < 1e-9);
        assert!(v.text.contains("read the slot 20.0 µs before its write finished"), "{}", v.text);
    }

    #[test]
    fn a_write_before_the_previous_read_ended_is_reported() {
        let mut e = good();
        // Frame 6 reuses slot 0 of frame 4, whose read ends at 470 µs: write at 450.
        e.push(x(6, "write", 450.0, 10.0));
        e.push(x(6, "read", 480.0, 50.0));
        let r = check(&doc(e, 0), None).unwrap();
        assert_eq!(r.violations.len(), 1);
        assert!(r.violations[0].text.contains("before frame 4's draw finished"), "{}", r.violations[0].text);
    }

    #[test]
    fn clock_accuracy_is_the_tolerance() {
        let mut e = good();
        e.push(x(6, "write", 600.0, 30.0));
        e.push(x(6, "read", 625.0, 50.0)); // 5 µs early
        assert_eq!(check(&doc(e.clone(), 10_000), None).unwrap().violations.len(), 0);
        assert_eq!(check(&doc(e.clone(), 1_000), None).unwrap().violations.len(), 1);
        assert_eq!(check(&doc(e, 0), Some(6.0)).unwrap().violations.len(), 0);
    }

    #[test]
    fn draws_overlapped_by_compute_work_are_counted_apart() {
        let mut e = good();
        // A compute span of frame 9 inside frame 2's read (220–270 µs) only.
        e.push(json!({"ph": "X", "name": "write slot", "pid": 1, "tid": 4, "ts": 230.0, "dur": 5.0,
                      "args": {"frame": 9, "slot": 1, "role": "write"}}));
        // A compute-side wait is not work: it does not count.
        e.push(json!({"ph": "X", "name": "wait rendered", "pid": 1, "tid": 4, "ts": 320.0, "dur": 30.0,
                      "args": {"frame": 9, "slot": 1}}));
        let r = check(&doc(e, 0), None).unwrap();
        assert_eq!(r.overlapped, (1, 50.0));
        assert_eq!(r.alone, (5, 50.0));
        assert!(r.render("t", 1).contains("running inside them: 1 (median draw 50.0 µs)"));
    }

    /// A CUDA run with GPU stamps, K = 2: frame f's draw waits on the GPU (read from 100f + 30 µs
    /// for 50 µs); its kernel (tid 4) writes 100f + 10 .. + 25 µs; a host span of the render
    /// thread (tid 1, no role) in between. Vulkan accuracy 3 µs.
    fn gpu_trace(kernel: impl Fn(u64) -> (f64, f64)) -> Value {
        let events: Vec<Value> = (0..8u64)
            .flat_map(|f| {
                let t = 100.0 * f as f64;
                let (ks, kd) = kernel(f);
                [
                    json!({"ph": "X", "name": "write slot", "pid": 1, "tid": 4, "ts": t + ks, "dur": kd,
                           "args": {"frame": f, "slot": f % 2, "role": "write"}}),
                    json!({"ph": "X", "name": "draw", "pid": 1, "tid": 3, "ts": t + 30.0, "dur": 50.0,
                           "args": {"frame": f, "slot": f % 2, "role": "read"}}),
                    json!({"ph": "X", "name": "record+submit", "pid": 1, "tid": 1, "ts": t, "dur": 5.0,
                           "args": {"frame": f, "slot": f % 2}}),
                ]
            })
            .collect();
        json!({"traceEvents": events, "otherData": {"slots": 2, "vulkan_accuracy_ns": 3000,
               "compute_accuracy_ns": 3000, "compute_on_gpu_clock": true}})
    }

    #[test]
    fn gpu_stamped_kernels_in_order_are_clean() {
        let r = check(&gpu_trace(|_| (10.0, 15.0)), None).unwrap();
        assert!(r.clean(), "{}", r.render("t", 10));
        assert!(r.gpu_clock);
        // The tolerance is the Vulkan mapping's alone: one clock, one mapping.
        assert_eq!(r.tolerance_us, 3.0);
        assert_eq!((r.kernel_end_checks, r.kernel_start_checks), (8, 6));
        assert!(r.render("t", 1).contains(
            "kernels on the GPU clock: 6 started after the 'rendered' they waited on, 8 ended before"
        ));
    }

    #[test]
    fn a_gpu_stamped_kernel_that_ends_after_its_draw_could_read_fails() {
        // Frame 5's kernel runs to 100·5 + 40 µs: 10 µs past its draw's readable moment.
        let r = check(&gpu_trace(|f| if f == 5 { (10.0, 30.0) } else { (10.0, 15.0) }), None).unwrap();
        assert!(!r.clean());
        assert_eq!(r.violations.len(), 1, "{}", r.render("t", 10));
        assert_eq!(r.violations[0].frame, 5);
        assert!((r.violations[0].by_us - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_gpu_stamped_kernel_that_starts_before_rendered_fails() {
        // Frame 6 reuses slot 0 of frame 4, whose draw ends at 480 µs: its kernel starts at 470 µs.
        let r = check(&gpu_trace(|f| if f == 6 { (-130.0, 15.0) } else { (10.0, 15.0) }), None).unwrap();
        assert_eq!(r.violations.len(), 1, "{}", r.render("t", 10));
        let v = &r.violations[0];
        assert_eq!((v.frame, v.slot), (6, 0));
        assert!((v.by_us - 10.0).abs() < 1e-9, "{}", v.text);
        // Within the Vulkan mapping's accuracy (3 µs) it is not a violation.
        let r = check(&gpu_trace(|f| if f == 6 { (-122.0, 15.0) } else { (10.0, 15.0) }), None).unwrap();
        assert!(r.clean(), "{}", r.render("t", 10));
    }

    #[test]
    fn a_batch_kernel_is_checked_against_the_draw_before_its_last_frame() {
        // Frames 4 and 5 share one launch (the same span, 410–425 µs), which had to wait for
        // draw 3 (5 − K), not only draw 2 (4 − K). Draw 3 is made to read until 530 µs.
        let shared = |f: u64| match f {
            5 => (-90.0, 15.0),
            _ => (10.0, 15.0),
        };
        let mut doc = gpu_trace(shared);
        let events = doc["traceEvents"].as_array_mut().unwrap();
        for e in events.iter_mut().filter(|e| e["tid"] == 3 && e["args"]["frame"] == 3) {
            e["dur"] = json!(200.0);
        }
        let r = check(&doc, None).unwrap();
        let v: Vec<(u64, bool)> =
            r.violations.iter().map(|v| (v.frame, v.text.contains("GPU clock"))).collect();
        // Frame 5's slot check (its f − K is 3) fails; frame 4's only by the batch rule.
        assert_eq!(v, [(5, false), (4, true)], "{}", r.render("t", 10));
        assert!(
            r.violations[1].text.contains("frame 3's draw ended at 530.0 µs"),
            "{}",
            r.violations[1].text
        );
    }

    #[test]
    fn kernel_checks_only_run_on_the_gpu_clock() {
        let mut doc = gpu_trace(|f| if f == 5 { (10.0, 30.0) } else { (10.0, 15.0) });
        doc["otherData"]["compute_on_gpu_clock"] = json!(false);
        let r = check(&doc, None).unwrap();
        // Events against anchors: both accuracies count (6 µs), and no kernel-only check runs.
        assert_eq!(r.tolerance_us, 6.0);
        assert_eq!((r.kernel_end_checks, r.kernel_start_checks), (0, 0));
        assert_eq!(r.violations.len(), 1, "the slot's own read-after-write check still fails");
    }

    /// Issue 26, item 7: hand-edited traces that used to pass (or print a 300-digit number)
    /// are refused, naming what is wrong.
    #[test]
    fn hand_edited_fields_are_refused_not_read_as_defaults() {
        let edit = |f: &dyn Fn(&mut Value)| {
            let mut d = doc(good(), 0);
            f(&mut d);
            check(&d, None).map(|r| r.render("t", 3)).unwrap_err()
        };
        let span = |d: &mut Value, key: &str, v: Value| d["traceEvents"][1][key] = v;
        let e = edit(&|d| span(d, "dur", json!(-50.0)));
        assert!(e.contains("'read' span of frame 0 has ts 20 and dur -50"), "{e}");
        let e = edit(&|d| {
            span(d, "ts", json!(1e308));
            span(d, "dur", json!(1e308));
        });
        assert!(e.contains("a span is finite"), "{e}");
        let e = edit(&|d| d["traceEvents"][3]["args"]["slot"] = json!(99));
        assert!(e.contains("frame 1 is on slot 99, but with K = 2 frame 1 uses slot 1"), "{e}");
        let e = edit(&|d| d["traceEvents"][3]["args"]["slot"] = json!(0));
        assert!(e.contains("is on slot 0"), "{e}");
        for v in [json!(0), json!(-3), json!(2.5), json!("3")] {
            let e = edit(&|d| d["otherData"]["slots"] = v.clone());
            assert!(e.contains("K must be a whole number ≥ 1"), "{v}: {e}");
        }
        for v in [json!(-5), json!(1e30), json!("1")] {
            let e = edit(&|d| d["otherData"]["vulkan_accuracy_ns"] = v.clone());
            assert!(e.contains("otherData.vulkan_accuracy_ns is"), "{v}: {e}");
        }
        let e = edit(&|d| d["otherData"]["compute_on_gpu_clock"] = json!("yes"));
        assert!(e.contains("not true or false"), "{e}");
        // Frames in any order are still one timeline.
        let mut reversed = good();
        reversed.reverse();
        assert!(check(&doc(reversed, 0), None).unwrap().clean());
    }

    /// K = 2 with a post stage: write 100f .. +10, draw (read) +20 .. +70, filter +75 .. +85,
    /// copy +90 .. +95 µs.
    fn post_doc(post: &str, filter_start: impl Fn(u64) -> f64) -> Value {
        let events: Vec<Value> = (0..6u64)
            .flat_map(|f| {
                let t = 100.0 * f as f64;
                let mut filter = x(f, "filter", t + filter_start(f), 10.0);
                filter["tid"] = json!(4);
                [x(f, "write", t, 10.0), x(f, "read", t + 20.0, 50.0), filter, x(f, "copy", t + 90.0, 5.0)]
            })
            .collect();
        let mut d = doc(events, 0);
        d["otherData"]["post"] = json!(post);
        d
    }

    #[test]
    fn post_orders_are_checked_when_the_trace_says_post() {
        let r = check(&post_doc("outline", |_| 75.0), None).unwrap();
        assert!(r.clean(), "{}", r.render("t", 10));
        assert_eq!((r.post_scene_checks, r.post_copy_checks), (6, 6));
        assert_eq!((r.post_scene_reuse_checks, r.post_output_reuse_checks), (4, 4));
        // Frame 3's filter starts 5 µs before its draw ends; within a 6 µs tolerance it passes.
        let early = |f: u64| if f == 3 { 65.0 } else { 75.0 };
        let r = check(&post_doc("outline", early), None).unwrap();
        assert_eq!(r.violations.len(), 1, "{}", r.render("t", 10));
        assert_eq!((r.violations[0].frame, r.violations[0].slot), (3, 1));
        assert!((r.violations[0].by_us - 5.0).abs() < 1e-9);
        assert_eq!(r.post_violations, 1);
        assert!(
            r.render("t", 10).contains("post stage (outline): 1 violation(s); checked: 6 filters"),
            "{}",
            r.render("t", 10)
        );
        assert!(check(&post_doc("outline", early), Some(6.0)).unwrap().clean());
        // A trace that says `none` may not hold post spans.
        let e = check(&post_doc("none", |_| 75.0), None).unwrap_err();
        assert!(e.contains("but otherData.post is \"none\""), "{e}");
        // No post stage, no post line.
        assert!(!check(&doc(good(), 0), None).unwrap().render("t", 3).contains("post stage"));
    }

    #[test]
    fn malformed_traces_are_refused() {
        assert!(check(&json!({"otherData": {"slots": 2}}), None).is_err());
        assert!(check(&json!({"traceEvents": []}), None).is_err());
        let empty = check(&doc(vec![], 0), None).unwrap();
        assert!(!empty.clean(), "nothing checked is not clean");
        assert!(empty.render("t", 5).contains("nothing to check"));
    }
}
