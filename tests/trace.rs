//! The profiler's trace on lavapipe: `--trace` writes the profiler crate's Chrome trace-event JSON
//! with a track per actor, one scope per frame per phase and the protocol's semaphore operations
//! in each track's order; `vkhip trace check` (the crate's checker on the app's declared
//! accesses) passes every mode lavapipe runs, catches the races of `--sync none`, and names each
//! of the app's orderings broken in a synthetic trace.

mod common;
use common::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use vkhip::app::matrix::parse::parse_report;
use vkhip_profile::model::{
    Access, Api, FrameEnd, Item, Names, ResourceId, Scope, SemaphoreId, SemaphoreInfo, Sync, SyncKind,
    Timeline, Track, TrackId,
};

const FRAMES: u64 = 60;

/// A headless run of `FRAMES` frames with `--trace`: the trace read back by the profiler
/// crate's reader, its `extra`, and the report.
fn traced_run(dir: &Path, name: &str, args: &[&str]) -> (Timeline, Value, String) {
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
    let (tl, extra) = vkhip_profile::perfetto::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    (tl, extra, report)
}

/// The id of the track named `name`.
fn track(tl: &Timeline, name: &str) -> TrackId {
    let i = tl.names.tracks.iter().position(|t| t.name == name);
    TrackId(i.unwrap_or_else(|| panic!("no track {name}: {:?}", tl.names.tracks)) as u32)
}

/// (track name, scope name) → how many frames have that scope; panics if a frame has two.
fn scopes_per_frame(tl: &Timeline) -> HashMap<(String, String), u64> {
    let mut per_frame: HashMap<(String, String, u64), u64> = HashMap::new();
    for (t, items) in tl.items.iter().enumerate() {
        for item in items {
            if let Item::Scope(s) = item {
                let key = (tl.names.tracks[t].name.clone(), s.name.to_string(), s.frame);
                *per_frame.entry(key).or_default() += 1;
            }
        }
    }
    let mut out = HashMap::new();
    for ((track, name, frame), n) in per_frame {
        assert_eq!(n, 1, "two '{name}' scopes for frame {frame} on track {track}");
        *out.entry((track, name)).or_default() += 1;
    }
    out
}

fn count(n: &HashMap<(String, String), u64>, track: &str, scope: &str) -> u64 {
    n.get(&(track.to_string(), scope.to_string())).copied().unwrap_or(0)
}

/// One queue runs the draws in order: each draw starts after the previous one ended (a wrong
/// frame number or a mis-mapped clock breaks this).
fn assert_draws_in_queue_order(tl: &Timeline) {
    let q = track(tl, "graphics");
    let draws: Vec<&Scope> = tl.items[q.0 as usize]
        .iter()
        .filter_map(|i| match i {
            Item::Scope(s) if &*s.name == "draw" => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(draws.len() as u64, FRAMES, "draws on the queue");
    for w in draws.windows(2) {
        assert_eq!(w[1].frame, w[0].frame + 1, "frames missing on the queue");
        assert!(w[1].start_ns >= w[0].end_ns, "draw {} starts before draw {} ended", w[1].frame, w[0].frame);
    }
}

/// Every scope of the app's rules declares its accesses: the write writes its slot, the draw
/// reads it.
fn assert_accesses(tl: &Timeline, slots: u64) {
    let resource = |r: ResourceId| tl.names.resource(r).to_string();
    let mut seen = 0;
    for items in &tl.items {
        for item in items {
            let Item::Scope(s) = item else { continue };
            let slot = format!("slot[{}]", s.frame % slots);
            let names: Vec<(String, &str)> =
                s.accesses.iter().map(|a| (resource(a.resource), a.kind.name())).collect();
            match &*s.name {
                "draw" => {
                    assert!(names.contains(&(slot, "read")), "draw of frame {}: {names:?}", s.frame);
                    seen += 1;
                }
                "write slot" if !names.is_empty() => {
                    assert!(names.contains(&(slot, "write")), "write of frame {}: {names:?}", s.frame);
                    seen += 1;
                }
                _ => {}
            }
        }
    }
    assert!(seen as u64 >= 2 * FRAMES, "{seen} scopes with accesses");
}

/// The trace's hand-offs are drawn as flows, in pairs.
fn assert_flows(path: &Path) {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let starts = events.iter().filter(|e| e["ph"] == "s").count();
    let ends = events.iter().filter(|e| e["ph"] == "f").count();
    assert!(starts > 0 && starts == ends, "flow arrows: {starts} starts, {ends} ends");
}

fn check(path: &Path) -> (i32, String) {
    let o = run(vkhip().args(["trace", "check"]).arg(path));
    (o.status.code().unwrap_or(-1), format!("{}{}", stdout(&o), stderr(&o)))
}

/// A clean check: exit 0, no violation, and nothing the checker could not verify (the recorded
/// operations match: every wait found its signal).
fn assert_clean(path: &Path, what: &str) -> String {
    let (code, out) = check(path);
    assert_eq!(code, 0, "{what}: {out}");
    assert!(out.lines().next().unwrap_or("").ends_with(", 0 violation(s)"), "{what}: {out}");
    assert!(!out.contains("unverifiable"), "{what}: every wait is matched: {out}");
    out
}

#[test]
fn cpu_bridged_trace_has_every_track_and_one_scope_per_frame_per_phase() {
    let dir = temp_dir("trace-cpu");
    let (tl, extra, report) =
        traced_run(&dir, "cpu", &["--backend", "cpu", "--sync", "bridged", "--slots", "3"]);
    let names: Vec<&str> = tl.names.tracks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["render", "bridge", "graphics"], "no compute track: the host writes");
    assert_eq!(tl.names.track(track(&tl, "graphics")).api, Api::Vulkan);
    assert_draws_in_queue_order(&tl);
    assert_accesses(&tl, 3);
    let n = scopes_per_frame(&tl);
    for phase in ["throttle", "compute hand-off", "record+submit"] {
        assert_eq!(count(&n, "render", phase), FRAMES, "{phase}: {n:?}");
    }
    assert_eq!(count(&n, "bridge", "write slot"), FRAMES);
    assert_eq!(count(&n, "bridge", "signal computed"), FRAMES);
    assert_eq!(
        count(&n, "bridge", "wait rendered"),
        FRAMES - 3,
        "the first K frames have no previous reader"
    );
    assert_eq!(count(&n, "graphics", "draw"), FRAMES);
    // The GPU's waits are instants between scopes, not scopes.
    assert_eq!(count(&n, "graphics", "wait computed"), 0);
    // The semaphore operations in each track's order: the bridge host-waits `rendered` and
    // host-signals `computed`; the queue waits `computed` and signals `rendered`.
    let ops = |t: TrackId, sem: &str, kind: SyncKind| {
        tl.items[t.0 as usize]
            .iter()
            .filter(|i| matches!(i, Item::Sync(s) if s.kind == kind && tl.names.semaphore(s.semaphore).name == sem))
            .count() as u64
    };
    let (bridge, queue) = (track(&tl, "bridge"), track(&tl, "graphics"));
    assert_eq!(ops(bridge, "computed", SyncKind::Signal), FRAMES);
    assert_eq!(ops(bridge, "rendered", SyncKind::Wait), FRAMES - 3);
    assert_eq!(ops(queue, "computed", SyncKind::Wait), FRAMES);
    assert_eq!(ops(queue, "rendered", SyncKind::Signal), FRAMES);
    assert_flows(&dir.join("cpu.json"));
    assert_eq!(extra["sync"], "bridged");
    assert_eq!((extra["late_spans"].as_u64(), extra["scopes_given_up"].as_u64()), (Some(0), Some(0)));
    for line in [
        "sync overhead",
        "render cpu",
        "compute ",
        "  hand-off in  exposed p50",
        "  checker      0 violations",
    ] {
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
    let out = assert_clean(&dir.join("cpu.json"), "cpu bridged");
    assert!(
        out.starts_with(&format!(
            "trace check: {}: {FRAMES} frames, K=3, tolerance ",
            dir.join("cpu.json").display()
        )),
        "{out}"
    );
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
        let (_, extra, report) = traced_run(&dir, &name, &args);
        assert_eq!(extra["frames_in_flight"], f);
        assert_eq!(extra["late_spans"], 0, "F = {f}");
        // Frames 0..F−1 find their command buffers free; then one wait per F − 1 frames.
        let waits = (FRAMES - 1 - f) / (f - 1) + 1;
        let line = format!(
            "in flight    up to {f} draws; the render thread host-waited in {waits} of {FRAMES} frames"
        );
        assert!(report.contains(&line), "want '{line}':\n{report}");
        // What a wait cost: the frames that waited, the wait's part of them, the other frames
        // (means, µs); the wait is part of its frame's CPU.
        let tail = report
            .lines()
            .find(|l| l.contains(&line))
            .and_then(|l| l.split_once("(render cpu of a frame that waited "));
        let nums: Vec<f64> = tail
            .map(|(_, t)| {
                t.split(|c: char| !(c.is_ascii_digit() || c == '.')).filter_map(|w| w.parse().ok()).collect()
            })
            .unwrap_or_default();
        assert!(
            nums.len() == 3 && nums[0] > 0.0 && nums[1] > 0.0 && nums[1] <= nums[0] && nums[2] > 0.0,
            "F = {f}: want the waits' CPU (frame, wait, other) in '{line} (…)':\n{report}"
        );
        let m = parse_report(&report).expect("the report parses");
        assert!(m.p50_ms > 0.3 * m.mean_ms, "frame time p50 {} ms against mean {} ms", m.p50_ms, m.mean_ms);
        assert_clean(&dir.join(format!("{name}.json")), &name);
    }
}

/// The `vulkan` backend with two submissions per frame: its dispatches are a track of their
/// own on the graphics queue (Vulkan timestamps, one clock domain with the draws); the report's
/// hand-off lines lead with the exposed part and keep the raw latency after it.
#[test]
fn vulkan_external_trace_has_the_dispatch_on_the_compute_track() {
    let dir = temp_dir("trace-vulkan");
    let (tl, extra, report) = traced_run(
        &dir,
        "vk",
        &["--backend", "vulkan", "--sync", "external", "--slots", "2", "--submit", "split"],
    );
    let compute = track(&tl, "compute (graphics queue)");
    let queue = track(&tl, "graphics");
    let (c, q) = (tl.names.track(compute), tl.names.track(queue));
    assert_eq!((c.api, c.clock_domain), (Api::Vulkan, q.clock_domain), "one clock with the draws");
    assert_draws_in_queue_order(&tl);
    assert_accesses(&tl, 2);
    let n = scopes_per_frame(&tl);
    assert_eq!(count(&n, "compute (graphics queue)", "write slot"), FRAMES, "{n:?}");
    assert_eq!(count(&n, "graphics", "draw"), FRAMES, "{n:?}");
    assert_eq!(count(&n, "render", "record+submit"), FRAMES, "{n:?}");
    assert!(report.contains("wait+signal"), "{report}");
    // The hand-off lines: the exposed part first, as a share of the frame, the raw latency after.
    for label in ["hand-off in ", "hand-off out"] {
        let line = report
            .lines()
            .find(|l| l.starts_with(&format!("  {label} exposed p50 ")))
            .unwrap_or_else(|| panic!("no '{label}' line leading with the exposed part:\n{report}"));
        assert!(line.contains("% of the frame; '") && line.contains("; latency p50 "), "{line}");
        let exposed: f64 = line.split_whitespace().nth(4).unwrap().parse().unwrap();
        let latency: f64 =
            line.split("latency p50 ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert!(exposed <= latency + 0.1, "the exposed part is part of the latency: {line}");
    }
    assert!(report.contains("  overlap      "), "{report}");
    assert_eq!(extra["compute_on_gpu_clock"], false, "a dispatch's timestamps are not GPU stamps");
    // Two submissions: three timestamps in the dispatch's command buffer, three in the draw's.
    assert_eq!(extra["submit"], "split");
    assert_eq!(extra["gpu_timestamps_per_frame"], 6);
    let out = assert_clean(&dir.join("vk.json"), "vulkan split");
    assert!(!out.contains("kernels on the GPU clock"), "not CUDA's stamps: {out}");
    assert!(out.contains("draws with a GPU kernel or dispatch running inside them: "), "{out}");
}

/// Issue 27: one submission per frame (`vulkan`, external, R = 0, B = 1, the default), for every
/// K. The dispatch and the draw of a frame are ordered by barriers in one command buffer (the
/// model's internal `barrier` semaphores between the compute and the graphics track), and the
/// checker proves both orders for every frame from the four timestamps.
#[test]
fn one_submission_frames_pass_the_checker_for_every_k() {
    let dir = temp_dir("trace-joined");
    for k in 1..=8u64 {
        let name = format!("joined{k}");
        let (tl, extra, report) =
            traced_run(&dir, &name, &["--backend", "vulkan", "--slots", &k.to_string(), "--time", "frame"]);
        assert!(
            report.contains(&format!(
                "sync         external, {k} slot(s), run-ahead 0, batch 1, one submission per frame"
            )),
            "K={k}:\n{report}"
        );
        assert!(report.contains("(GPU: kernel or dispatch)"), "K={k}:\n{report}");
        assert_draws_in_queue_order(&tl);
        assert_accesses(&tl, k);
        let n = scopes_per_frame(&tl);
        assert_eq!(count(&n, "compute (graphics queue)", "write slot"), FRAMES, "K={k}: {n:?}");
        let barriers: Vec<&str> =
            tl.names.semaphores.iter().filter(|s| s.internal).map(|s| s.name.as_str()).collect();
        for b in ["barrier:graphics→compute", "barrier:compute→graphics"] {
            assert!(barriers.contains(&b), "K={k}: {barriers:?}");
        }
        // The profiler's cost: four timestamps a frame (write start, write end, readable, end).
        assert_eq!(extra["submit"], "joined");
        assert_eq!(extra["gpu_timestamps_per_frame"], 4);
        let out = assert_clean(&dir.join(format!("{name}.json")), &format!("K={k}"));
        assert!(out.contains(&format!("{FRAMES} frames, K={k}, tolerance ")), "K={k}: {out}");
    }
}

/// Every mode lavapipe runs, joined and split, with and without the post stage: the checker
/// finds no violation, every wait finds its signal, and the live report's checker line (over
/// every frame of the run) agrees.
#[test]
fn every_real_mode_passes_the_checker() {
    let dir = temp_dir("trace-modes");
    let modes: &[&[&str]] = &[
        &["--backend", "cpu", "--sync", "bridged", "--slots", "1"],
        &["--backend", "cpu", "--sync", "blocking", "--slots", "2"],
        &["--backend", "vulkan", "--sync", "external", "--slots", "3"],
        &["--backend", "vulkan", "--sync", "external", "--slots", "3", "--submit", "split"],
        &["--backend", "vulkan", "--sync", "binary", "--slots", "3"],
        &["--backend", "vulkan", "--sync", "blocking", "--slots", "1"],
        &["--backend", "vulkan", "--sync", "host-wait"],
        &["--backend", "vulkan", "--post", "outline"],
        &["--backend", "vulkan", "--sync", "binary", "--post", "outline"],
        &["--backend", "vulkan", "--sync", "external", "--submit", "split", "--post", "outline"],
        &["--backend", "cpu", "--post", "outline"],
        &["--backend", "cpu", "--sync", "blocking", "--post", "outline"],
    ];
    for (i, args) in modes.iter().enumerate() {
        let name = format!("m{i}");
        let (_, extra, report) = traced_run(&dir, &name, args);
        assert!(report.contains("  checker      0 violations in "), "{args:?}:\n{report}");
        assert!(!report.contains("unverifiable"), "{args:?}:\n{report}");
        assert_eq!(extra["scopes_given_up"], 0, "{args:?}");
        let out = assert_clean(&dir.join(format!("{name}.json")), &format!("{args:?}"));
        if args.contains(&"--post") {
            assert!(out.contains("  post stage (outline): 0 violation(s); checked: "), "{args:?}: {out}");
            assert!(!out.contains("nothing to check for the post stage"), "{args:?}: {out}");
        }
    }
}

/// `--sync none` drops every wait: the bridge thread rewrites the slot while the previous draw
/// still reads it, and the checker says so, in the report (over every frame) and in the trace
/// (exit 1, naming the slot, the scopes and their frames); with the post stage too, its images'.
#[test]
fn sync_none_races_and_the_checker_reports_them() {
    let dir = temp_dir("trace-none");
    let path = dir.join("none.json");
    let o = run(vkhip()
        .args(["--headless", "--size", "640x360", "--grid", "64x64", "--frames", "120"])
        .args(["--backend", "cpu", "--sync", "none", "--slots", "1", "--trace"])
        .arg(&path));
    assert_ok(&o, "--sync none run");
    let report = stdout(&o);
    assert!(report.contains("sync         none, 1 slot(s)"), "{report}");
    let checker = report.lines().find(|l| l.starts_with("  checker      ")).expect("checker line");
    assert!(!checker.contains(" 0 violations") && checker.contains(" unordered"), "{checker}");
    let (code, out) = check(&path);
    assert_eq!(code, 1, "{out}");
    assert!(!out.lines().next().unwrap().ends_with(" 0 violation(s)"), "{out}");
    assert!(
        out.contains("  violation: unordered: slot[0]: ")
            && out.contains("no signal → wait chain orders them"),
        "{out}"
    );

    let post = dir.join("post-none.json");
    let o = run(vkhip()
        .args(["--headless", "--size", "160x90", "--grid", "32x32", "--frames", "40"])
        .args(["--backend", "cpu", "--sync", "none", "--post", "outline", "--slots", "1", "--trace"])
        .arg(&post));
    assert_ok(&o, "--sync none --post outline run");
    let (code, out) = check(&post);
    assert_eq!(code, 1, "{out}");
    let line = out.lines().find(|l| l.starts_with("  post stage (outline): ")).expect("post line");
    let n: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(n > 0, "post-stage violations: {line}");
    assert!(out.contains(": scene[0]: ") || out.contains(": output[0]: "), "{out}");
}

#[test]
fn sync_none_is_refused_for_the_vulkan_backend() {
    let o = run(vkhip().args(["--headless", "--frames", "2", "--backend", "vulkan", "--sync", "none"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("share one queue"), "{}", stderr(&o));
}

/// Issue 33, item 4: a file that is not a trace is exit 2 with one line, whatever is wrong with
/// it. Before: an empty `traceEvents` was exit 1 ("nothing to check"), and a file of any size
/// was read whole (a 1 GiB file took 1 GiB of memory before being refused).
#[test]
fn unreadable_traces_and_unwritable_paths_exit_2_with_one_line() {
    let dir = temp_dir("trace-bad");
    let refused = |path: &Path, why: &str| {
        let (code, out) = check(path);
        assert_eq!(code, 2, "{}: {out}", path.display());
        assert_eq!(out.trim().lines().count(), 1, "{out}");
        assert!(out.contains(why), "{}: '{why}' missing from {out}", path.display());
    };
    refused(&dir.join("missing.json"), "cannot read the trace");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    refused(&write("bad.json", b"{\"traceEvents\": 5}"), "holds no trace events");
    refused(
        &write("empty-events.json", b"{\"traceEvents\": [], \"otherData\": {}}"),
        "holds no trace events",
    );
    // Over the reader's limit (1 GiB): refused from its size, without reading it (sparse here).
    let big = dir.join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    drop(f);
    let t0 = std::time::Instant::now();
    refused(&big, "over the trace reader's limit of 1073741824 bytes");
    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "refused from its size, not read");

    let o = run(vkhip().args(["trace", "check", "--tolerance-us", "1e308"]).arg(dir.join("bad.json")));
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

/// Batches and run-ahead: the trace records the shape (a batch written by one launch is one
/// scope writing every slot of the batch), and the checker proves the orders on it.
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
        let (_, extra, report) = traced_run(&dir, name, args);
        assert_eq!(extra["slots"], 8, "{name}");
        let (r, b) = if name.starts_with("vulkan") { (0, 8) } else { (3, 4) };
        assert_eq!((extra["run_ahead"].as_u64(), extra["batch"].as_u64()), (Some(r), Some(b)), "{name}");
        assert!(report.contains(&format!("run-ahead {r}, batch {b}")), "{name}:\n{report}");
        assert!(report.contains("run-ahead    compute was handed frames up to"), "{name}:\n{report}");
        assert_clean(&dir.join(format!("{name}.json")), name);
    }
}

/// Issue 32, item 4: the report's `GPU limit` line counts every GPU scope a frame serialises and
/// names each: the draw and the dispatch, and with `--post` the filter and the copy. Its busy
/// time is the p50 of each frame's union of them, and the ratio is the frame's p50 against it.
#[test]
fn the_gpu_limit_counts_every_gpu_scope_of_the_frame_and_names_them() {
    let dir = temp_dir("trace-limit");
    for (name, post) in [("limit", false), ("limit-post", true)] {
        let mut args = vec!["--backend", "vulkan", "--sync", "external", "--slots", "2"];
        if post {
            args.extend(["--post", "outline"]);
        }
        let (tl, _, report) = traced_run(&dir, name, &args);
        let line =
            report.lines().find(|l| l.starts_with("  GPU limit    frame p50 at ")).unwrap_or_else(|| {
                panic!("no GPU limit line with a ratio:\n{report}");
            });
        let after = |key: &str| -> f64 {
            let rest = line.split_once(key).unwrap_or_else(|| panic!("'{key}' in '{line}'")).1;
            rest.trim_start()
                .split(|c: char| c != '.' && !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let want: &[&str] =
            if post { &["kernel ", "draw ", "post filter ", "post copy "] } else { &["kernel ", "draw "] };
        let parts: Vec<f64> = want.iter().map(|w| after(w)).collect();
        let (ratio, busy) = (after(" at "), after("busy "));
        assert_eq!(line.matches(" ms, ").count() + 1, want.len(), "{name}: exactly these scopes: {line}");
        // The union of serialised scopes: at least the longest, about their sum (p50s of a
        // per-frame sum and of each part differ a little).
        let sum: f64 = parts.iter().sum();
        assert!(busy + 0.0015 >= parts.iter().cloned().fold(0.0, f64::max), "{name}: {line}");
        assert!(busy <= 1.5 * sum + 0.002, "{name}: {line}");
        let frame = parse_report(&report).expect("the report parses").p50_ms;
        let tol = 0.005 + ratio * (0.0005 / frame + 0.0005 / busy);
        assert!((ratio - frame / busy).abs() <= tol, "{name}: {frame} / {busy} vs {line}");
        // The draw named is the median of the trace's draws (the trace keeps every frame here).
        let q = track(&tl, "graphics");
        let mut d: Vec<f64> = tl.items[q.0 as usize]
            .iter()
            .filter_map(|i| match i {
                Item::Scope(s) if &*s.name == "draw" => Some(s.dur_ns() as f64 / 1e6),
                _ => None,
            })
            .collect();
        d.sort_by(f64::total_cmp);
        let median = d[d.len().div_ceil(2) - 1];
        assert!((median - parts[1]).abs() <= 0.002 * median + 0.0006, "{name}: trace {median} ms vs {line}");
    }
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

/// A scope moved to (start, end) µs, or left alone.
type Moved = Option<(f64, f64)>;

/// One broken ordering: (name, post stage, the edit, the wait left out, the violation's text).
type Case = (&'static str, bool, fn(u64, &str) -> Moved, Option<(u64, &'static str)>, String);

/// A synthetic trace of the app's model (K = 2, a CUDA stream and the graphics queue on one
/// clock, exact): frame f writes slot f mod 2 at 100f µs (10 µs), its draw reads it and writes
/// scene p 20 to 50 µs later; with `post`, the filter reads scene p and writes output p 55 to
/// 70 µs later, the copy reads output p 75 to 85 µs later. Every semaphore operation
/// of the protocol is there; `edit` moves a scope by (frame, name) to (start, end) µs,
/// `drop_wait` leaves out one wait by (frame, semaphore).
fn synthetic(post: bool, edit: &dyn Fn(u64, &str) -> Moved, drop_wait: Option<(u64, &str)>) -> Timeline {
    let base = 1_000_000_000_000u64;
    let ns = |us: f64| base + (us * 1e3) as u64;
    let gpu = |name: &str, api| Track {
        name: name.into(),
        api,
        clock: String::new(),
        accuracy_ns: 0,
        clock_domain: Some(0),
    };
    let mut resources: Vec<String> = (0..2).map(|i| format!("slot[{i}]")).collect();
    if post {
        resources.extend((0..2).map(|i| format!("scene[{i}]")));
        resources.extend((0..2).map(|i| format!("output[{i}]")));
    }
    let sems = ["computed", "rendered", "scene", "posted", "presented", "scene free"];
    let mut tl = Timeline {
        names: Names {
            tracks: vec![gpu("graphics", Api::Vulkan), gpu("compute", Api::Cuda)],
            resources,
            semaphores: sems.iter().map(|s| SemaphoreInfo { name: s.to_string(), internal: false }).collect(),
        },
        items: vec![Vec::new(), Vec::new()],
        frame_ends: Vec::new(),
        clock_notes: vec![],
    };
    let (q, c) = (0usize, 1usize);
    let sem = |name: &str| SemaphoreId(sems.iter().position(|s| *s == name).unwrap() as u32);
    let sync = |name: &str, value: u64, kind, frame| {
        Item::Sync(Sync { semaphore: sem(name), value, kind, frame, host_ns: None })
    };
    let (slot, scene, output) = (
        |f: u64| ResourceId((f % 2) as u32),
        |f: u64| ResourceId(2 + (f % 2) as u32),
        |f: u64| ResourceId(4 + (f % 2) as u32),
    );
    for f in 0..8u64 {
        let t = 100.0 * f as f64;
        let scope = |name: &str, a: f64, b: f64, accesses: Vec<Access>| {
            let (a, b) = edit(f, name).unwrap_or((t + a, t + b));
            Item::Scope(Scope {
                name: name.into(),
                frame: f,
                start_ns: ns(a),
                end_ns: ns(b),
                depth: 0,
                accesses,
            })
        };
        let waits = |name: &str| drop_wait != Some((f, name));
        let it = &mut tl.items;
        if f >= 2 && waits("rendered") {
            it[c].push(sync("rendered", f - 1, SyncKind::Wait, f));
        }
        it[c].push(scope("write slot", 0.0, 10.0, vec![Access::write(slot(f))]));
        it[c].push(sync("computed", f + 1, SyncKind::Signal, f));
        if waits("computed") {
            it[q].push(sync("computed", f + 1, SyncKind::Wait, f));
        }
        if post && f >= 2 && waits("scene free") {
            it[q].push(sync("scene free", f - 1, SyncKind::Wait, f));
        }
        let mut draw = vec![Access::read(slot(f))];
        if post {
            draw.push(Access::write(scene(f)));
        }
        it[q].push(scope("draw", 20.0, 50.0, draw));
        it[q].push(sync("rendered", f + 1, SyncKind::Signal, f));
        if post {
            it[q].push(sync("scene", f + 1, SyncKind::Signal, f));
            if waits("scene") {
                it[c].push(sync("scene", f + 1, SyncKind::Wait, f));
            }
            if f >= 2 && waits("presented") {
                it[c].push(sync("presented", f - 1, SyncKind::Wait, f));
            }
            it[c].push(scope(
                "post filter",
                55.0,
                70.0,
                vec![Access::read(scene(f)), Access::write(output(f))],
            ));
            it[c].push(sync("posted", f + 1, SyncKind::Signal, f));
            it[c].push(sync("scene free", f + 1, SyncKind::Signal, f));
            if waits("posted") {
                it[q].push(sync("posted", f + 1, SyncKind::Wait, f));
            }
            it[q].push(scope("post copy", 75.0, 85.0, vec![Access::read(output(f))]));
            it[q].push(sync("presented", f + 1, SyncKind::Signal, f));
        }
        tl.frame_ends.push(FrameEnd { frame: f, host_ns: ns(t + 90.0) });
    }
    tl
}

fn check_synthetic(dir: &Path, name: &str, tl: &Timeline, post: bool) -> (i32, String) {
    let path = dir.join(format!("{name}.json"));
    let extra = json!({"slots": 2, "post": if post { "outline" } else { "none" }, "sync": "external"});
    vkhip_profile::perfetto::write(tl, &path, &extra).unwrap();
    check(&path)
}

/// Each of the app's orderings broken once in a synthetic trace is caught, with its message:
/// the slot's read after write and write after read, and the post stage's four (the filter
/// after its draw, the copy after its filter, the draw after the filter of frame f−K, the filter
/// after the copy of frame f−K). A correct trace passes; a clock tolerance covers a difference
/// within it.
#[test]
fn the_checker_names_each_broken_ordering_of_the_app() {
    let dir = temp_dir("trace-synthetic");
    for post in [false, true] {
        let (code, out) =
            check_synthetic(&dir, &format!("good-{post}"), &synthetic(post, &|_, _| None, None), post);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(", 0 violation(s)") && !out.contains("unverifiable"), "{out}");
        assert_eq!(out.contains("post stage (outline): 0 violation(s); checked: "), post, "{out}");
    }
    let q = "vulkan queue \"graphics\"";
    let c = "cuda stream \"compute\"";
    let cases: [Case; 7] = [
        // The slot's read after write: frame 5's write runs to 530 µs, its draw reads from 520.
        (
            "draw-before-its-write-ended",
            false,
            |f, n| (f == 5 && n == "write slot").then_some((500.0, 530.0)),
            None,
            format!("overlap: slot[1]: \"draw\" ({q}, frame 5) reads while \"write slot\" ({c}, frame 5) writes; a signal → wait chain orders them, but \"draw\" starts 10.0 µs before \"write slot\" ends"),
        ),
        // The same without the draw's wait for `computed`: nothing orders them at all.
        (
            "draw-without-its-wait",
            false,
            |_, _| None,
            Some((5, "computed")),
            format!("unordered: slot[1]: \"draw\" ({q}, frame 5) reads while \"write slot\" ({c}, frame 5) writes; no signal → wait chain orders them; 10.0 µs apart, by luck"),
        ),
        // The slot's write after read: frame 4's draw reads slot 0 until 610 µs; frame 6 writes it from 600.
        (
            "write-before-the-slots-draw-ended",
            false,
            |f, n| (f == 4 && n == "draw").then_some((420.0, 610.0)),
            None,
            format!("overlap: slot[0]: \"write slot\" ({c}, frame 6) writes while \"draw\" ({q}, frame 4) reads; a signal → wait chain orders them, but \"write slot\" starts 10.0 µs before \"draw\" ends"),
        ),
        // Frame 5's filter reads scene 1 from 540 µs; its draw writes it until 550.
        (
            "filter-before-its-draw-ended",
            true,
            |f, n| (f == 5 && n == "post filter").then_some((540.0, 570.0)),
            None,
            format!("overlap: scene[1]: \"post filter\" ({c}, frame 5) reads while \"draw\" ({q}, frame 5) writes; a signal → wait chain orders them, but \"post filter\" starts 10.0 µs before \"draw\" ends"),
        ),
        // Frame 5's copy reads output 1 from 565 µs; its filter writes it until 570.
        (
            "copy-before-its-filter-ended",
            true,
            |f, n| (f == 5 && n == "post copy").then_some((565.0, 585.0)),
            None,
            format!("overlap: output[1]: \"post copy\" ({q}, frame 5) reads while \"post filter\" ({c}, frame 5) writes; a signal → wait chain orders them, but \"post copy\" starts 5.0 µs before \"post filter\" ends"),
        ),
        // Frame 4's filter reads scene 0 until 630 µs (its copy after it); frame 6 draws into it from 620.
        (
            "draw-before-the-filter-k-frames-back-ended",
            true,
            |f, n| match (f, n) {
                (4, "post filter") => Some((455.0, 630.0)),
                (4, "post copy") => Some((640.0, 650.0)),
                _ => None,
            },
            None,
            format!("overlap: scene[0]: \"draw\" ({q}, frame 6) writes while \"post filter\" ({c}, frame 4) reads; a signal → wait chain orders them, but \"draw\" starts 10.0 µs before \"post filter\" ends"),
        ),
        // Frame 4's copy reads output 0 until 660 µs; frame 6's filter writes it from 655.
        (
            "filter-before-the-copy-k-frames-back-ended",
            true,
            |f, n| (f == 4 && n == "post copy").then_some((475.0, 660.0)),
            None,
            format!("overlap: output[0]: \"post filter\" ({c}, frame 6) writes while \"post copy\" ({q}, frame 4) reads; a signal → wait chain orders them, but \"post filter\" starts 5.0 µs before \"post copy\" ends"),
        ),
    ];
    for (name, post, edit, drop, want) in cases {
        let (code, out) = check_synthetic(&dir, name, &synthetic(post, &edit, drop), post);
        assert_eq!(code, 1, "{name}: {out}");
        assert!(out.contains(&format!("  violation: {want}")), "{name}: wanted '{want}' in\n{out}");
        if post {
            let line = out.lines().find(|l| l.starts_with("  post stage (outline): ")).unwrap();
            assert!(!line.starts_with("  post stage (outline): 0 violation(s)"), "{name}: {line}");
        }
        // Moving one scope may break more than its rule (a filter that ends late also delays the
        // signals after it on its stream): at least the one named.
        let first = out.lines().next().unwrap();
        let n: u64 = first.rsplit(", ").next().unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert!(n >= 1, "{name}: {out}");
    }
    // A 10 µs difference within an explicit 11 µs tolerance is no violation.
    let late = synthetic(false, &|f, n| (f == 5 && n == "write slot").then_some((500.0, 530.0)), None);
    let path = dir.join("tolerance.json");
    vkhip_profile::perfetto::write(&late, &path, &json!({"slots": 2})).unwrap();
    let o = run(vkhip().args(["trace", "check", "--tolerance-us", "11"]).arg(&path));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("tolerance 11.0 µs"), "{}", stdout(&o));
}
