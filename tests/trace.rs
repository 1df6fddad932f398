//! The profiler's trace on lavapipe: `--trace` writes Chrome trace-event JSON with every track and
//! one span per frame per phase; `vkhip trace check` passes every real mode and catches the races
//! of `--sync none`.

mod common;
use common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use vkhip::app::matrix::parse::parse_report;

const FRAMES: u64 = 60;

fn traced_run(dir: &Path, name: &str, args: &[&str]) -> (Value, String) {
    let path = dir.join(format!("{name}.json"));
    let o = run(vkhip()
        .args([
            "--headless",
            "--size",
            "160x90",
            "--grid",
            "32x32",
            "--frames",
            &FRAMES.to_string(),
            "--trace",
        ])
        .arg(&path)
        .args(args));
    assert_ok(&o, name);
    let report = stdout(&o);
    assert!(
        report.contains(&format!("trace        {}", path.display())),
        "report names the trace:\n{report}"
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("trace written")).expect("trace is JSON");
    (doc, report)
}

/// (tid, slice name) → how many frames have that span, and whether any frame has two.
fn spans_per_phase(doc: &Value) -> HashMap<(u64, String), u64> {
    let mut per_frame: HashMap<(u64, String, u64), u64> = HashMap::new();
    for e in doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X") {
        let key = (
            e["tid"].as_u64().unwrap(),
            e["name"].as_str().unwrap().to_string(),
            e["args"]["frame"].as_u64().unwrap(),
        );
        *per_frame.entry(key).or_default() += 1;
    }
    let mut out = HashMap::new();
    for ((tid, name, _), n) in per_frame {
        assert_eq!(n, 1, "two '{name}' spans for one frame on track {tid}");
        *out.entry((tid, name)).or_default() += 1;
    }
    out
}

/// One queue runs the draws in order: each draw's command buffer starts after the previous
/// draw ended (a wrong frame number or a mis-mapped clock breaks this).
fn assert_draws_in_queue_order(doc: &Value) {
    let mut by_frame: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for e in doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X" && e["tid"] == 3) {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        let entry = by_frame.entry(e["args"]["frame"].as_u64().unwrap()).or_insert((f64::MAX, f64::MIN));
        *entry = (entry.0.min(ts), entry.1.max(ts + dur));
    }
    let frames: Vec<_> = by_frame.into_iter().collect();
    for w in frames.windows(2) {
        let ((f, (_, end)), (g, (start, _))) = (w[0], w[1]);
        assert_eq!(g, f + 1, "frames missing on the queue");
        assert!(start >= end - 0.01, "draw {g} starts at {start} µs, before draw {f} ended at {end} µs");
    }
}

/// The five tracks, the compute one named `compute` (it says when the work runs in the graphics
/// queue), flow arrows in pairs, the frames-in-flight counter.
fn assert_tracks(doc: &Value, compute: &str) {
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    for t in
        ["render thread (host)", "bridge thread (host)", "graphics queue (GPU)", compute, "hand-off (GPU)"]
    {
        assert!(names.contains(&t), "track {t} missing: {names:?}");
    }
    let events = doc["traceEvents"].as_array().unwrap();
    let flows_out = events.iter().filter(|e| e["ph"] == "s").count();
    let flows_in = events.iter().filter(|e| e["ph"] == "f").count();
    assert!(flows_out > 0 && flows_out == flows_in, "flow arrows: {flows_out} starts, {flows_in} ends");
    let counters = events.iter().filter(|e| e["ph"] == "C" && e["name"] == "frames in flight").count();
    assert!(counters as u64 >= FRAMES, "frames-in-flight counter: {counters} samples");
}

fn check(path: &Path) -> (i32, String) {
    let o = run(vkhip().args(["trace", "check"]).arg(path));
    (o.status.code().unwrap_or(-1), format!("{}{}", stdout(&o), stderr(&o)))
}

#[test]
fn cpu_bridged_trace_has_every_track_and_one_span_per_frame_per_phase() {
    let dir = temp_dir("trace-cpu");
    let (doc, report) = traced_run(&dir, "cpu", &["--backend", "cpu", "--sync", "bridged", "--slots", "3"]);
    assert_tracks(&doc, "compute (GPU)");
    assert_draws_in_queue_order(&doc);
    let n = spans_per_phase(&doc);
    let want = |tid: u64, name: &str, frames: u64| {
        assert_eq!(
            n.get(&(tid, name.to_string())).copied().unwrap_or(0),
            frames,
            "track {tid} '{name}': {n:?}"
        );
    };
    for phase in ["throttle", "compute hand-off", "record+submit"] {
        want(1, phase, FRAMES);
    }
    want(2, "write slot", FRAMES);
    want(2, "signal computed", FRAMES);
    want(2, "wait rendered", FRAMES - 3); // the first K frames have no previous reader
    want(3, "wait computed", FRAMES);
    want(3, "draw", FRAMES);
    assert_eq!(doc["otherData"]["sync"], "bridged");
    assert_eq!(doc["otherData"]["late_spans"], 0);
    for line in ["hand-off", "sync overhead", "render cpu", "compute "] {
        assert!(report.contains(line), "report lacks '{line}':\n{report}");
    }
    // The render thread's CPU time by phase: four p50s, in µs.
    let phases = report.lines().find(|l| l.trim_start().starts_with("cpu phases")).expect("cpu phases line");
    let numbers: Vec<f64> = phases.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(numbers.len(), 4, "{phases}");
    assert!(
        numbers.iter().all(|&v| v >= 0.0) && numbers[2] > 0.0,
        "record+submit took no CPU time: {phases}"
    );
    let (code, out) = check(&dir.join("cpu.json"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("{FRAMES} read-after-write")) && out.contains(" 0 violation(s)"), "{out}");
}

/// The throttle waits once per F − 1 frames with F frames in flight (2 in a window, 4 headless by
/// default); the protocol stays race-free with up to 8 draws queued, and the report's frame time
/// stays the loop's period, not the gap between frames submitted back to back.
#[test]
fn deeper_queues_wait_less_often_and_stay_race_free() {
    let dir = temp_dir("trace-in-flight");
    for (f, arg) in [(2u64, Some("2")), (4, None), (8, Some("8"))] {
        let name = format!("f{f}");
        let mut args = vec!["--backend", "cpu", "--sync", "bridged", "--slots", "3"];
        if let Some(a) = arg {
            args.extend(["--frames-in-flight", a]);
        }
        let (doc, report) = traced_run(&dir, &name, &args);
        assert_eq!(doc["otherData"]["frames_in_flight"], f);
        assert_eq!(doc["otherData"]["late_spans"], 0, "F = {f}");
        // Frames 0..F−1 find their command buffers free; then one wait per F − 1 frames.
        let waits = (FRAMES - 1 - f) / (f - 1) + 1;
        let line = format!(
            "in flight    up to {f} draws; the render thread host-waited in {waits} of {FRAMES} frames"
        );
        assert!(report.contains(&line), "want '{line}':\n{report}");
        let m = parse_report(&report).expect("the report parses");
        assert!(m.p50_ms > 0.3 * m.mean_ms, "frame time p50 {} ms against mean {} ms", m.p50_ms, m.mean_ms);
        let (code, out) = check(&dir.join(format!("{name}.json")));
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(" 0 violation(s)"), "{out}");
    }
}

#[test]
fn vulkan_external_trace_has_the_dispatch_on_the_compute_track() {
    let dir = temp_dir("trace-vulkan");
    let (doc, report) = traced_run(
        &dir,
        "vk",
        &["--backend", "vulkan", "--sync", "external", "--slots", "2", "--submit", "split"],
    );
    assert_tracks(&doc, "compute (GPU: in the graphics queue)");
    assert_draws_in_queue_order(&doc);
    let n = spans_per_phase(&doc);
    assert_eq!(n.get(&(4, "write slot".into())), Some(&FRAMES), "{n:?}");
    assert_eq!(n.get(&(4, "wait rendered".into())), Some(&(FRAMES - 2)), "{n:?}");
    assert_eq!(n.get(&(3, "draw".into())), Some(&FRAMES), "{n:?}");
    assert_eq!(n.get(&(1, "record+submit".into())), Some(&FRAMES), "{n:?}");
    assert!(report.contains("wait+signal"), "{report}");
    // The GPU hand-off: out for every frame, in for every frame with an earlier reader (K = 2),
    // on track 5, and in the report with the share of the frame and the overlap count.
    assert_eq!(n.get(&(5, "kernel → draw".into())), Some(&FRAMES), "{n:?}");
    assert_eq!(n.get(&(5, "rendered → kernel".into())), Some(&(FRAMES - 2)), "{n:?}");
    for line in ["  hand-off in  p50", "  hand-off out p50", "% of the frame)", "  overlap      "] {
        assert!(report.contains(line), "report lacks '{line}':\n{report}");
    }
    // The share is of the part frames in flight did not hide: never above the frame, though the
    // raw `rendered` → kernel span (in the trace) is usually longer than a frame here (K = 2, 4 in
    // flight).
    for line in report.lines().filter(|l| l.starts_with("  hand-off ")) {
        let Some((_, tail)) = line.split_once("not hidden by frames in flight: ") else { continue };
        let share: f64 = tail.split(", ").nth(1).and_then(|s| s.split('%').next()?.parse().ok()).unwrap();
        assert!((0.0..=100.0).contains(&share), "{line}");
        assert!(!line.contains("frames in flight included"), "{line}");
    }
    assert_eq!(report.matches("not hidden by frames in flight").count(), 2, "{report}");
    assert_eq!(doc["otherData"]["compute_on_gpu_clock"], false, "a dispatch's timestamps are not GPU stamps");
    // Two submissions: three timestamps in the dispatch's command buffer, three in the draw's.
    assert_eq!(doc["otherData"]["submit"], "split");
    assert_eq!(doc["otherData"]["gpu_timestamps_per_frame"], 6);
    let (code, out) = check(&dir.join("vk.json"));
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("kernels on the GPU clock"), "{out}");
}

/// Issue 27: one submission per frame (`vulkan`, external, R = 0, B = 1, the default), for every
/// K. The dispatch and the draw of a frame are ordered by barriers in one command buffer, and the
/// timestamps around them still prove both orders for every frame: the write span (write start →
/// write end, on the compute track) ends before the draw's read starts, and starts after the
/// slot's previous draw ended. Four timestamps per frame: no `wait rendered` span is left.
#[test]
fn one_submission_frames_pass_the_checker_for_every_k() {
    let dir = temp_dir("trace-joined");
    for k in 1..=8u64 {
        let name = format!("joined{k}");
        let (doc, report) =
            traced_run(&dir, &name, &["--backend", "vulkan", "--slots", &k.to_string(), "--time", "frame"]);
        assert!(
            report.contains(&format!(
                "sync         external, {k} slot(s), run-ahead 0, batch 1, one submission per frame"
            )),
            "K={k}:\n{report}"
        );
        assert!(report.contains("(GPU: kernel or dispatch)"), "K={k}:\n{report}");
        assert_draws_in_queue_order(&doc);
        let n = spans_per_phase(&doc);
        assert_eq!(n.get(&(4, "write slot".into())), Some(&FRAMES), "K={k}: {n:?}");
        assert_eq!(n.get(&(3, "draw".into())), Some(&FRAMES), "K={k}: {n:?}");
        assert_eq!(n.get(&(4, "wait rendered".into())), None, "K={k}: {n:?}");
        // The profiler's cost: four timestamps a frame (write start, write end, readable, end).
        assert_eq!(doc["otherData"]["submit"], "joined");
        assert_eq!(doc["otherData"]["gpu_timestamps_per_frame"], 4);
        assert_eq!(n.get(&(5, "kernel → draw".into())), Some(&FRAMES), "K={k}: {n:?}");
        let (code, out) = check(&dir.join(format!("{name}.json")));
        assert_eq!(code, 0, "K={k}: {out}");
        let want = format!(
            "{FRAMES} frames, K={k}, tolerance 0.0 µs: {FRAMES} read-after-write and {} write-after-read checks, 0 violation(s)",
            FRAMES - k
        );
        assert!(out.contains(&want), "K={k}: wanted '{want}' in\n{out}");
    }
}

#[test]
fn every_real_mode_passes_the_checker() {
    let dir = temp_dir("trace-modes");
    for (i, args) in [
        ["--backend", "cpu", "--sync", "bridged", "--slots", "1"],
        ["--backend", "cpu", "--sync", "blocking", "--slots", "2"],
        ["--backend", "vulkan", "--sync", "binary", "--slots", "3"],
        ["--backend", "vulkan", "--sync", "blocking", "--slots", "1"],
    ]
    .iter()
    .enumerate()
    {
        let name = format!("m{i}");
        traced_run(&dir, &name, args);
        let (code, out) = check(&dir.join(format!("{name}.json")));
        assert_eq!(code, 0, "{args:?}: {out}");
        assert!(out.contains(" 0 violation(s)"), "{args:?}: {out}");
    }
}

/// `--sync none` drops every wait: with one slot the bridge thread rewrites it while the previous
/// draw still reads it, and the checker must say so (exit 1, naming frames).
#[test]
fn sync_none_races_and_the_checker_reports_them() {
    let dir = temp_dir("trace-none");
    let path = dir.join("none.json");
    let o = run(vkhip()
        .args(["--headless", "--size", "640x360", "--grid", "64x64", "--frames", "120"])
        .args(["--backend", "cpu", "--sync", "none", "--slots", "1", "--trace"])
        .arg(&path));
    assert_ok(&o, "--sync none run");
    assert!(stdout(&o).contains("sync         none, 1 slot(s)"), "{}", stdout(&o));
    let (code, out) = check(&path);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("violation: frame "), "{out}");
    assert!(!out.contains(" 0 violation(s)"), "{out}");
}

#[test]
fn sync_none_is_refused_for_the_vulkan_backend() {
    let o = run(vkhip().args(["--headless", "--frames", "2", "--backend", "vulkan", "--sync", "none"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("share one queue"), "{}", stderr(&o));
}

#[test]
fn unreadable_traces_and_unwritable_paths_exit_2_with_one_line() {
    let dir = temp_dir("trace-bad");
    let missing = dir.join("missing.json");
    let (code, out) = check(&missing);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out.trim().lines().count(), 1, "{out}");
    assert!(out.contains("cannot read the trace"), "{out}");

    let bad = dir.join("bad.json");
    std::fs::write(&bad, b"{\"traceEvents\": 5}").unwrap();
    let (code, out) = check(&bad);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("not a vkhip trace"), "{out}");

    let o = run(vkhip().args(["trace", "check", "--tolerance-us", "1e308"]).arg(&bad));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--tolerance-us must be a number of µs in 0..=1000000"), "{}", stderr(&o));

    // The trace path is checked before the first frame, not after the run.
    let o = run(vkhip()
        .args(["--headless", "--frames", "100000", "--trace"])
        .arg(dir.join("no/such/dir/t.json")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write the trace"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("frame report"), "no frames should have run: {}", stdout(&o));
}

/// Batches and run-ahead: the trace records the shape, and the checker proves both orderings on
/// it (a batch's draws wait for its last kernel; its writes wait for the draws that read the slots
/// before).
#[test]
fn batched_and_run_ahead_traces_record_their_shape_and_pass_the_check() {
    let dir = temp_dir("trace-batched");
    for (name, args) in [
        ("vulkan-k8-b8", &["--backend", "vulkan", "--sync", "external", "--slots", "8", "--batch", "8"][..]),
        (
            "cpu-k8-r3-b4",
            &["--backend", "cpu", "--sync", "bridged", "--slots", "8", "--run-ahead", "3", "--batch", "4"],
        ),
    ] {
        let (doc, report) = traced_run(&dir, name, args);
        let other = &doc["otherData"];
        assert_eq!(other["slots"], 8, "{name}");
        let (r, b) = if name.starts_with("vulkan") { (0, 8) } else { (3, 4) };
        assert_eq!((other["run_ahead"].as_u64(), other["batch"].as_u64()), (Some(r), Some(b)), "{name}");
        assert!(report.contains(&format!("run-ahead {r}, batch {b}")), "{name}:\n{report}");
        assert!(report.contains("run-ahead    compute was handed frames up to"), "{name}:\n{report}");
        let (code, out) = check(&dir.join(format!("{name}.json")));
        assert_eq!(code, 0, "{name}: {out}");
        assert!(out.contains(" 0 violation(s)"), "{name}: {out}");
    }
}

/// The report's `GPU limit` line states the frame time's p50 against the draw's and the
/// dispatch's GPU p50s of the same run: the draw and kernel it names are the medians of the
/// trace's `draw` and `write slot` spans, and the ratio is frame / (draw + kernel).
#[test]
fn the_report_states_the_frame_against_the_gpu_limit_of_the_same_run() {
    let dir = temp_dir("trace-limit");
    let (doc, report) =
        traced_run(&dir, "limit", &["--backend", "vulkan", "--sync", "external", "--slots", "2"]);
    let line = report.lines().find(|l| l.starts_with("  GPU limit    frame p50 at ")).unwrap_or_else(|| {
        panic!("no GPU limit line with a ratio:\n{report}");
    });
    let after = |key: &str| -> f64 {
        let rest = line.split_once(key).unwrap_or_else(|| panic!("'{key}' in '{line}'")).1;
        rest.trim_start().split(|c: char| c != '.' && !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let (ratio, draw, kernel, limit) = (after(" at "), after("draw "), after("kernel "), after("= "));
    assert!((draw + kernel - limit).abs() <= 0.0011, "{line}");
    let frame = parse_report(&report).expect("the report parses").p50_ms;
    // Printed to 2 decimals (the ratio) and 3 (the times): the rounding bounds the difference.
    let tol = 0.005 + ratio * (0.0005 / frame + 0.0015 / (draw + kernel));
    assert!((ratio - frame / (draw + kernel)).abs() <= tol, "{frame} / ({draw} + {kernel}) vs {line}");
    // The draw and kernel are the medians of the trace's spans (the trace keeps every frame here).
    let median_ms = |tid: u64, name: &str| {
        let mut d: Vec<f64> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == tid && e["name"] == name)
            .map(|e| e["dur"].as_f64().unwrap() / 1e3)
            .collect();
        assert_eq!(d.len() as u64, FRAMES, "{name} spans");
        d.sort_by(f64::total_cmp);
        d[d.len().div_ceil(2) - 1] // the lower median, as the report's histogram takes it
    };
    let (trace_draw, trace_kernel) = (median_ms(3, "draw"), median_ms(4, "write slot"));
    // The histogram keeps 3 significant digits; the report prints 3 decimals.
    assert!((trace_draw - draw).abs() <= 0.002 * trace_draw + 0.0006, "trace {trace_draw} ms vs {line}");
    assert!(
        (trace_kernel - kernel).abs() <= 0.002 * trace_kernel + 0.0006,
        "trace {trace_kernel} ms vs {line}"
    );
}

/// With `--gpu-timing off` the limit is unknown, and the report says why in one line.
#[test]
fn without_gpu_timing_the_report_says_the_limit_is_unknown() {
    let o = run(vkhip().args([
        "--headless",
        "--frames",
        "5",
        "--size",
        "160x90",
        "--grid",
        "32x32",
        "--gpu-timing",
        "off",
    ]));
    assert_ok(&o, "gpu-timing off");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("  GPU limit")).collect();
    assert_eq!(
        lines,
        ["  GPU limit    unknown: --gpu-timing off (no GPU timestamps of the draw and the kernel)"],
        "{out}"
    );
}

/// A span's new (ts, dur), µs.
type Moved = (f64, f64);

/// A synthetic trace of a `--post outline` run with K = 2 (issue 24, item 4): frame f writes its
/// slot at 100f µs (10 µs), its draw reads from 100f + 20 to + 50 µs, the filter reads the rendered
/// image from + 55 to + 70 µs, the copy reads the output from + 75 to + 85 µs. `edit` moves spans
/// by (frame, role) → (ts, dur).
fn post_trace(edit: &dyn Fn(u64, &str) -> Option<Moved>) -> Value {
    let span = |f: u64, tid: u64, name: &str, role: &str, ts: f64, dur: f64| {
        let (ts, dur) = edit(f, role).unwrap_or((ts, dur));
        serde_json::json!({"ph": "X", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
                           "args": {"frame": f, "slot": f % 2, "role": role}})
    };
    let events: Vec<Value> = (0..8u64)
        .flat_map(|f| {
            let t = 100.0 * f as f64;
            [
                span(f, 4, "write slot", "write", t, 10.0),
                span(f, 3, "draw", "read", t + 20.0, 30.0),
                span(f, 4, "post filter", "filter", t + 55.0, 15.0),
                span(f, 3, "post copy", "copy", t + 75.0, 10.0),
            ]
        })
        .collect();
    serde_json::json!({"traceEvents": events, "otherData": {"slots": 2, "post": "outline",
                       "vulkan_accuracy_ns": 0, "compute_accuracy_ns": 0}})
}

fn check_doc(dir: &Path, name: &str, doc: &Value) -> (i32, String) {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    check(&path)
}

/// `vkhip trace check` on post traces: a correct one passes with every post check counted; each
/// of the four post orders broken once is one violation (exit 1) that says which; the metadata's
/// `post` is required for post spans and read as `none` when absent.
#[test]
fn the_checker_enforces_the_post_stage_orders() {
    let dir = temp_dir("trace-post");
    let (code, out) = check_doc(&dir, "good", &post_trace(&|_, _| None));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("8 read-after-write and 6 write-after-read checks, 0 violation(s)"), "{out}");
    assert!(
        out.contains(
            "post stage (outline): 0 violation(s); checked: 8 filters against their draw's end, 8 copies against their filter's end, 6 draws against frame f−K's filter (rendered image reused), 6 filters against frame f−K's copy (output image reused)"
        ),
        "{out}"
    );
    // Each broken order: (name, the edit, the violation's text).
    type Edit = fn(u64, &str) -> Option<Moved>;
    let cases: [(&str, Edit, &str); 4] = [
        // Frame 5's filter starts at 540 µs; its draw ends at 550.
        (
            "filter-before-draw-ended",
            |f, r| (f == 5 && r == "filter").then_some((540.0, 30.0)),
            "frame 5 (slot 1): the filter read the rendered image 10.0 µs before its draw ended (draw until 550.0 µs, filter from 540.0 µs)",
        ),
        // Frame 5's copy starts at 565 µs; its filter ends at 570.
        (
            "copy-before-filter-ended",
            |f, r| (f == 5 && r == "copy").then_some((565.0, 20.0)),
            "frame 5 (slot 1): the copy read the output image 5.0 µs before the filter ended (filter until 570.0 µs, copy from 565.0 µs)",
        ),
        // Frame 4's filter (and its copy after it) run late, to 630 µs: frame 6's draw into the
        // same rendered image starts at 620.
        (
            "draw-before-filter-k-ended",
            |f, r| match (f, r) {
                (4, "filter") => Some((455.0, 175.0)),
                (4, "copy") => Some((640.0, 10.0)),
                _ => None,
            },
            "frame 6 (slot 0): the draw into rendered image 0 began 10.0 µs before frame 4's filter finished reading it (draw from 620.0 µs, filter until 630.0 µs)",
        ),
        // Frame 4's copy reads its output until 660 µs; frame 6's filter writes it from 655.
        (
            "filter-before-copy-k-ended",
            |f, r| (f == 4 && r == "copy").then_some((475.0, 185.0)),
            "frame 6 (slot 0): the filter wrote output image 0 5.0 µs before frame 4's copy finished reading it (filter from 655.0 µs, copy until 660.0 µs)",
        ),
    ];
    for (name, edit, want) in cases {
        let (code, out) = check_doc(&dir, name, &post_trace(&edit));
        assert_eq!(code, 1, "{name}: {out}");
        assert!(out.contains(", 1 violation(s)"), "{name}: exactly one violation: {out}");
        assert!(out.contains("post stage (outline): 1 violation(s);"), "{name}: {out}");
        assert!(out.contains(&format!("  violation: {want}\n")), "{name}: {out}");
    }
    // Post spans in a trace that says there was no post stage, or whose `post` is not a name.
    let mut none = post_trace(&|_, _| None);
    none["otherData"]["post"] = "none".into();
    let (code, out) = check_doc(&dir, "post-none", &none);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("a 'filter' span of frame 0, but otherData.post is \"none\""), "{out}");
    none["otherData"]["post"] = 3.into();
    let (code, out) = check_doc(&dir, "post-3", &none);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("otherData.post is 3"), "{out}");
    // A post run whose trace has no post span proves nothing about the post stage: not clean.
    let mut bare = post_trace(&|_, _| None);
    let events = bare["traceEvents"].as_array_mut().unwrap();
    events.retain(|e| e["args"]["role"] == "write" || e["args"]["role"] == "read");
    let (code, out) = check_doc(&dir, "post-bare", &bare);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nothing to check for the post stage"), "{out}");
    // Without `post` (a trace from before the post stage) the same spans check as before.
    bare["otherData"].as_object_mut().unwrap().remove("post");
    let (code, out) = check_doc(&dir, "no-post-key", &bare);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("post stage"), "{out}");
    // A trace with post spans that does not name its post stage is checked as one.
    let mut unnamed = post_trace(&|f, r| (f == 5 && r == "copy").then_some((565.0, 20.0)));
    unnamed["otherData"].as_object_mut().unwrap().remove("post");
    let (code, out) = check_doc(&dir, "post-unnamed", &unnamed);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("post stage (named by no otherData.post: from its spans): 1 violation(s);"),
        "{out}"
    );
}
