//! Hand-offs, frame figures and the text report on synthetic timelines.

mod synthetic;

use synthetic::*;
use vkhip_profile::analysis::{analyze, Analysis};
use vkhip_profile::model::{Access, Api};

fn close(actual_ns: u64, expected_ns: u64) -> bool {
    // The histograms keep 3 significant digits.
    actual_ns.abs_diff(expected_ns) <= expected_ns / 1000 + 1
}

#[test]
fn handoff_latency_and_its_exposed_part() {
    let mut b = Tl::default();
    let sim = b.track("sim", Api::Cuda, 0, Some(0));
    let gfx = b.track("graphics", Api::Vulkan, 0, Some(0));
    let main = b.track("main", Api::Host, 0, None);
    let written = b.semaphore("written", false);
    let submit = b.semaphore("submit:main→graphics", true);
    let heights = [b.resource("heights[0]"), b.resource("heights[1]"), b.resource("heights[2]")];
    // Frame 0: the signal at 300 µs; the queue's previous work ends at 320, its first work
    // after the wait starts at 350: latency 50 µs, of which 30 exposed.
    // Frame 1: the signal at 1300; the previous work ended at 1200; first work at 1340:
    // latency 40, all exposed.
    // Frame 2: the signal at 2300, but the submission came at 2330: latency 50, 20 exposed.
    let frames = [
        (0u64, (200.0, 320.0), 350.0, 0.0),
        (1, (1150.0, 1200.0), 1340.0, 0.0),
        (2, (2100.0, 2200.0), 2350.0, 330.0),
    ];
    for (f, prev, first, submit_at) in frames {
        let t = f as f64 * 1000.0;
        b.scope(sim, "sine", f, t + 100.0, t + 300.0, &[Access::write(heights[f as usize])]);
        b.signal(sim, written, f + 1, f);
        b.host_signal(main, submit, f + 1, f, t + submit_at);
        b.scope(gfx, "shadow", f, prev.0, prev.1, &[]);
        b.wait(gfx, submit, f + 1, f);
        b.wait(gfx, written, f + 1, f);
        b.scope(gfx, "draw", f, first, first + 100.0, &[Access::read(heights[f as usize])]);
    }
    let s = analyze(&b.tl);
    assert!(s.check.is_clean(), "{}", s.check);
    // Only the semaphore between APIs is a hand-off; the submission is internal.
    assert_eq!(s.handoffs.len(), 1, "{:?}", s.handoffs);
    let h = &s.handoffs[0];
    assert_eq!((h.semaphore.as_str(), h.from, h.to), ("written", sim, gfx));
    assert_eq!(h.from_label, "cuda stream \"sim\"");
    assert_eq!(h.latency.count, 3);
    assert!(close(h.latency.p50_ns, 50_000) && close(h.latency.p99_ns, 50_000), "{:?}", h.latency);
    assert!(close(h.exposed.p50_ns, 30_000) && close(h.exposed.p99_ns, 40_000), "{:?}", h.exposed);
    assert_eq!(h.latency.mean_ns, 140_000.0 / 3.0);
    assert_eq!(h.exposed.mean_ns, 30_000.0);
}

#[test]
fn the_program_summary_has_frames_gpu_busy_scopes_and_handoffs() {
    let s = analyze(&correct(100));
    assert_eq!(s.frames, 100);
    assert_eq!(s.frame_time.count, 99);
    assert!(close(s.frame_time.p50_ns, 1_000_000), "{:?}", s.frame_time);
    // GPU busy: the kernel (100–300 µs) and the draw (350–800 µs) of each frame: 650 µs.
    assert_eq!(s.gpu_busy.count, 100);
    assert!(close(s.gpu_busy.p50_ns, 650_000), "{:?}", s.gpu_busy);
    assert_eq!(s.gpu_busy_scopes, ["cuda stream \"sim\": sine", "vulkan queue \"graphics\": draw"]);
    let draw = s.scope("graphics", "draw").expect("draw's figure");
    assert_eq!(draw.duration.count, 100);
    assert!(close(draw.duration.p50_ns, 450_000));
    assert!(s.scope("main", "record").is_some());
    // `written`: signal at the kernel's end (300), the draw at 350: 50 µs, all exposed.
    let w: Vec<_> = s.handoffs_of("written").collect();
    assert_eq!(w.len(), 1);
    assert!(close(w[0].exposed.p50_ns, 50_000), "{:?}", w[0]);
    // `read`: the draw's end (800 µs) → the kernel three frames later (3100): 2300 µs. What
    // held the kernel was its submission (55 µs into its frame), not `read`: 45 µs exposed.
    let r: Vec<_> = s.handoffs_of("read").collect();
    assert_eq!(r[0].latency.count, 100 - K);
    assert!(close(r[0].latency.p50_ns, 2_300_000), "{:?}", r[0]);
    assert!(close(r[0].exposed.p50_ns, 45_000), "{:?}", r[0]);
    assert_eq!(s.accuracy_ns, 3_500);
}

#[test]
fn gpu_busy_counts_top_level_scopes_only() {
    let s = analyze(&program(30, |_, fr| fr.nested_draw = true));
    // The pass spans the draw ± 5 µs: 100–300 and 345–805 µs.
    assert!(close(s.gpu_busy.p50_ns, 660_000), "{:?}", s.gpu_busy);
    assert_eq!(s.gpu_busy_scopes, ["cuda stream \"sim\": sine", "vulkan queue \"graphics\": pass"]);
}

#[test]
fn streaming_and_whole_timeline_analyses_agree() {
    let tl = correct(300);
    let mut a = Analysis::new();
    a.set_clock_notes(tl.clock_notes.clone());
    tl.replay(&mut a);
    assert_eq!(a.summary(), analyze(&tl));
}

#[test]
fn the_report_leads_with_the_clock_and_names_the_figures() {
    let s = analyze(&correct(100));
    let text = s.to_string();
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("100 frames on 3 tracks") && lines[0].ends_with("accurate to ±3.5 µs"),
        "{}",
        lines[0]
    );
    for needle in [
        "clock of cuda stream \"sim\": GPU clock, calibrated (±3.5 µs)",
        "clock: Vulkan timestamps calibrated (VK_KHR_calibrated_timestamps), ±3.0 µs",
        "checker: 0 violations in 197 access pairs and 495 waits across tracks, 100 frames (tolerance up to 3.5 µs)",
        "frame time: p50 1.000 ms, p99 1.000 ms (1000 fps)",
        "GPU busy per frame: p50 0.650 ms, p99 0.650 ms = 65% of the median frame",
        "top-level scopes on GPU tracks: cuda stream \"sim\": sine; vulkan queue \"graphics\": draw",
        "\"written\" cuda stream \"sim\" → vulkan queue \"graphics\": exposed p50 50.0 µs, p99 50.0 µs; latency p50 50.0 µs, p99 50.0 µs (100 waits)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let draw = lines.iter().find(|l| l.contains("vulkan queue \"graphics\" draw")).expect("the draw's line");
    assert!(draw.contains("100") && draw.contains("0.450 ms"), "{draw}");
}

#[test]
fn the_report_lists_violations_and_unverifiable_waits() {
    let tl = tail(
        &program(40, |f, fr| {
            if f >= 30 {
                fr.wait_written = false;
                fr.draw.0 = 200.0;
            }
        }),
        10,
    );
    let text = analyze(&tl).to_string();
    assert!(text.contains("checker: 10 violations in"), "{text}");
    assert!(text.contains(": 10 unordered, 0 overlap, 0 wait before signal"), "{text}");
    assert!(
        text.contains("unverifiable (not violations): 5 waits whose signal lies before the trace"),
        "{text}"
    );
    assert!(text.contains(
        "  unordered: heights[0]: \"draw\" (vulkan queue \"graphics\", frame 30) reads while \"sine\" (cuda stream \"sim\", frame 30) writes"
    ), "{text}");
}

#[test]
fn many_scope_names_are_counted_not_kept() {
    let mut b = Tl::default();
    let q = b.track("q", Api::Vulkan, 0, Some(0));
    for i in 0..300 {
        b.scope(q, &format!("s{i}"), 0, i as f64, i as f64 + 1.0, &[]);
    }
    let s = analyze(&b.tl);
    assert_eq!(s.scopes.len(), vkhip_profile::analysis::MAX_SCOPE_NAMES);
    assert_eq!(s.scopes_not_kept, 300 - 256);
    assert!(s.to_string().contains("(44 scopes of further names not kept)"));
}

#[test]
fn the_sinks_can_move_to_another_thread() {
    fn send<T: Send + 'static>() {}
    send::<Analysis>();
    send::<vkhip_profile::Checker>();
    send::<vkhip_profile::TraceRing>();
    send::<Box<dyn vkhip_profile::Sink + Send>>();
}

#[test]
fn the_report_says_what_bounds_the_frame_and_counts_the_context_switches_in_the_limit() {
    // Issue 39's engine at 350 µs a frame: 15 µs of GPU work, two hand-offs of 160 µs exposed.
    let s = analyze(&engine(100, 350.0));
    let b = s.budget().expect("frame times and GPU scopes");
    assert_eq!((b.gpu_work_ns, b.handoffs_ns, b.frame_ns), (15_000.0, 320_000.0, 350_000.0));
    assert_eq!(b.bound, vkhip_profile::Bound::Handoffs);
    let text = s.to_string();
    println!("{text}");
    for needle in [
        // 1 / 335 µs, and what the work alone would allow (1 / 15 µs).
        "the GPU's limit: 2985 fps counting the hand-offs between GPU tracks (0.015 ms work + 0.320 ms exposed in hand-offs a frame; the work alone: 66667 fps)",
        "bound by the hand-offs' exposed time (the GPU changing contexts): GPU work 0.015 ms + hand-offs between GPU tracks (exposed) 0.320 ms = 0.335 ms a frame, 96% of the mean frame (0.350 ms)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }

    // The same engine at 1000 µs a frame waits for the host.
    let text = analyze(&engine(100, 1000.0)).to_string();
    assert!(
        text.contains("bound by the host: GPU work 0.015 ms + hand-offs between GPU tracks (exposed) 0.320 ms = 0.335 ms a frame, 34% of the mean frame (1.000 ms) (the GPU side fills less than 80% of it)"),
        "{text}"
    );

    // The producer/consumer program with a long draw: 200 + 600 µs of work a frame; `written`
    // exposed 50 µs in each of 100 frames, `read` 45 µs in 97: 93.65 µs a frame.
    let s = analyze(&program(100, |_, fr| fr.draw = (350.0, 950.0)));
    let b = s.budget().expect("a budget");
    assert_eq!(b.bound, vkhip_profile::Bound::GpuWork);
    assert_eq!(b.gpu_work_ns, 800_000.0);
    assert!((b.handoffs_ns - 93_650.0).abs() < 1.0, "{b:?}");
    let text = s.to_string();
    assert!(text.contains("bound by GPU work: GPU work 0.800 ms + hand-offs between GPU tracks (exposed) 0.094 ms = 0.894 ms a frame, 89% of the mean frame (1.000 ms)"), "{text}");
    assert!(text.contains("the GPU's limit: 1119 fps counting the hand-offs"), "{text}");
}
