//! The hazard checker on synthetic timelines: each rule broken once (its message asserted), a
//! correct program clean over many frames, whatever the order tracks arrive in.

mod synthetic;

use std::time::{Duration, Instant};
use synthetic::*;
use vkhip_profile::check::{check, Checker, Rule, KEEP_SIGNALS};
use vkhip_profile::model::{Access, Api, Item, Sink, TrackId};

const FRAMES: u64 = 1000;

#[test]
fn the_correct_program_is_clean_and_everything_is_checked() {
    let r = check(&correct(FRAMES));
    assert!(r.is_clean(), "{r}");
    // Per frame: the draw against its write, and (from frame K) the write against the slot's
    // previous draw.
    assert_eq!(r.pairs_checked, 2 * FRAMES - K);
    // Per frame: two submissions, `written`, `read` (from frame K) and the host's join (from 2).
    assert_eq!(r.waits_checked, 5 * FRAMES - K - 2);
    assert_eq!(r.unverifiable.total(), 0);
    assert_eq!(r.tolerance_ns, 3_500);
    assert_eq!(r.frames, FRAMES);
}

#[test]
fn unordered_accesses_are_named_with_their_overlap() {
    // Frame 7's draw does not wait for `written` and starts while the kernel writes.
    let tl = program(20, |f, fr| {
        if f == 7 {
            fr.wait_written = false;
            fr.draw.0 = 200.0;
        }
    });
    let r = check(&tl);
    assert_eq!(r.violation_count, 1, "{r}");
    assert_eq!(r.by_rule.unordered, 1);
    let v = &r.violations[0];
    assert_eq!(v.rule, Rule::Unordered);
    assert_eq!(v.resource.as_deref(), Some("heights[1]"));
    assert_eq!(
        v.message,
        "unordered: heights[1]: \"draw\" (vulkan queue \"graphics\", frame 7) reads while \"sine\" (cuda stream \"sim\", \
         frame 7) writes; no signal → wait chain orders them; they overlap by 100.0 µs"
    );
    assert_eq!(v.by_ns, 100_000);
    // The scopes are named in the violation's fields too, with their times.
    let names = [(&v.a.name, v.a.frame), (&v.b.name, v.b.frame)];
    assert!(names.contains(&(&"draw".to_string(), 7)) && names.contains(&(&"sine".to_string(), 7)));
    let draw = if v.a.name == "draw" { &v.a } else { &v.b };
    assert_eq!(draw.start_ns, ns(7200.0));
    assert_eq!(draw.track_label, "vulkan queue \"graphics\"");
}

#[test]
fn unordered_accesses_that_did_not_overlap_are_still_reported_as_luck() {
    // Without the wait, but the draw happened to start after the write ended.
    let tl = program(10, |f, fr| fr.wait_written &= f != 4);
    let r = check(&tl);
    assert_eq!(r.violation_count, 1, "{r}");
    assert!(
        r.violations[0].message.ends_with("no signal → wait chain orders them; 50.0 µs apart, by luck"),
        "{r}"
    );
    assert_eq!(r.violations[0].by_ns, -50_000);
}

#[test]
fn an_ordered_access_that_overlaps_on_the_clock_is_reported() {
    // Frame 5: the first scope after the wait (a clear) starts after the signal, but the draw
    // reading the slot starts 20 µs before the write ends: the wait does not hold the draw.
    let tl = program(20, |f, fr| {
        if f == 5 {
            fr.clear = Some((310.0, 320.0));
            fr.draw.0 = 280.0;
        }
    });
    let r = check(&tl);
    assert_eq!(r.violation_count, 1, "{r}");
    assert_eq!(r.by_rule.overlap, 1);
    assert_eq!(
        r.violations[0].message,
        "overlap: heights[2]: \"draw\" (vulkan queue \"graphics\", frame 5) reads while \"sine\" (cuda stream \"sim\", \
         frame 5) writes; a signal → wait chain orders them, but \"draw\" starts 20.0 µs before \"sine\" ends (tolerance 3.5 µs)"
    );
    assert_eq!(r.violations[0].by_ns, 20_000);
}

#[test]
fn work_that_starts_before_the_signal_it_waited_on_is_reported() {
    let tl = program(20, |f, fr| {
        if f == 6 {
            fr.clear = Some((290.0, 295.0));
        }
    });
    let r = check(&tl);
    assert_eq!(r.violation_count, 1, "{r}");
    assert_eq!(r.by_rule.wait_before_signal, 1);
    let v = &r.violations[0];
    assert_eq!(
        v.message,
        "wait before signal: \"clear\" (vulkan queue \"graphics\", frame 6) starts 10.0 µs before \"written\" reached 7: \
         cuda stream \"sim\" signalled it after \"sine\" (cuda stream \"sim\", frame 6) ended; tolerance 3.5 µs"
    );
    assert_eq!((v.a.name.as_str(), v.b.name.as_str(), v.by_ns), ("sine", "clear", 10_000));
}

#[test]
fn a_host_wait_that_returns_before_the_gpu_signalled_is_reported() {
    // The host's join on frame 3's draw "returns" at 3790 µs; the draw ends at 3800.
    let mut b = Tl::default();
    let ids = setup(&mut b);
    for f in 0..6 {
        frame(&mut b, &ids, f, &Frame::default());
    }
    let host = &mut b.tl.items[ids.main.0 as usize];
    let i = host
        .iter()
        .position(|i| matches!(i, Item::Sync(s) if s.semaphore == ids.join && s.value == 4))
        .unwrap();
    if let Item::Sync(s) = &mut host[i] {
        s.host_ns = Some(ns(3790.0));
    }
    let r = check(&b.tl);
    assert_eq!(r.violation_count, 1, "{r}");
    assert_eq!(
        r.violations[0].message,
        "wait before signal: host thread \"main\" returned from its wait (frame 5) 10.0 µs before \"join:graphics→main\" \
         reached 4: vulkan queue \"graphics\" signalled it after \"draw\" (vulkan queue \"graphics\", frame 3) ended; \
         tolerance 3.0 µs"
    );
}

#[test]
fn differences_within_the_stated_accuracy_are_not_violations() {
    // 3 µs early against a tolerance of 3.5 µs, on both rules that compare times.
    let tl = program(20, |f, fr| {
        if f == 6 {
            fr.clear = Some((297.0, 298.0));
        }
        if f == 8 {
            fr.draw.0 = 297.0;
        }
    });
    let r = check(&tl);
    assert!(r.is_clean(), "{r}");
}

/// Feed `tl` frame by frame, tracks in the order given (all of a track's items of a frame at
/// once): the order a capture delivers them in when one API records ahead of another.
fn feed_in_track_order(tl: &vkhip_profile::Timeline, order: &[usize], sink: &mut dyn Sink) {
    sink.names(&tl.names);
    let frames = tl.frame_ends.len() as u64;
    let mut next = vec![0usize; tl.items.len()];
    for f in 0..frames {
        for &t in order {
            while let Some(item) = tl.items[t].get(next[t]).filter(|i| i.frame() == f) {
                sink.item(TrackId(t as u32), item);
                next[t] += 1;
            }
        }
    }
    for e in &tl.frame_ends {
        sink.frame_end(*e);
    }
}

/// A checker, and the most items it held pending at once.
struct Watch(Checker, usize);

impl Sink for Watch {
    fn names(&mut self, names: &vkhip_profile::Names) {
        self.0.names(names);
    }
    fn item(&mut self, track: TrackId, item: &Item) {
        self.0.item(track, item);
        self.1 = self.1.max(self.0.pending_items());
    }
    fn frame_end(&mut self, end: vkhip_profile::model::FrameEnd) {
        self.0.frame_end(end);
    }
}

#[test]
fn waits_recorded_before_their_signal_block_until_it_arrives() {
    // The queue's items of each frame arrive before the stream's (a Vulkan submission recorded
    // waiting for a value CUDA signals later in record order), and the host's last.
    let tl = correct(200);
    let mut w = Watch(Checker::new(), 0);
    feed_in_track_order(&tl, &[2, 1, 0], &mut w);
    assert!(w.1 >= 4, "the queue's items waited for the stream's: {} held at most", w.1);
    assert_eq!(w.0.pending_items(), 0, "and were processed once the signals came");
    let mut c = w.0;
    c.finish();
    let r = c.report();
    assert_eq!(r, check(&tl), "the same verdict and counts as in replay order");
    assert!(r.is_clean() && r.unverifiable.total() == 0, "{r}");

    // And a hazard is still found in that order.
    let broken = program(20, |f, fr| {
        if f == 7 {
            fr.wait_written = false;
            fr.draw.0 = 200.0;
        }
    });
    let mut c = Checker::new();
    feed_in_track_order(&broken, &[2, 1, 0], &mut c);
    c.finish();
    assert_eq!(c.report().by_rule.unordered, 1);
}

#[test]
fn a_trace_ring_starts_with_unverifiable_waits_not_violations() {
    // The last 100 of 200 frames: the first waits refer to signals before the ring.
    let ring = tail(&correct(200), 100);
    let r = check(&ring);
    assert!(r.is_clean(), "{r}");
    // `read` ≥ 98, 99, 100 (signalled from 101 on in the ring) and the host's joins ≥ 99, 100.
    assert_eq!(r.unverifiable.before_trace, 5, "{r:?}");
    assert_eq!(r.unverifiable.never_signalled, 0);
    assert_eq!(r.waits_checked, 5 * 100 - 5);
    assert_eq!(r.frames, 100);

    // Streamed (no whole-trace knowledge), the tracks block on each other until the end, which
    // releases the oldest waits first: the same verdict.
    let mut c = Checker::new();
    ring.replay(&mut c);
    c.finish();
    let s = c.report();
    assert!(s.is_clean(), "{s}");
    assert_eq!(s.unverifiable.before_trace, 5, "{s:?}");
    assert_eq!(s.waits_checked, r.waits_checked);
}

#[test]
fn a_wait_whose_signal_never_comes_is_released_at_the_horizon() {
    let mut b = Tl::default();
    let q = b.track("graphics", Api::Vulkan, 0, Some(0));
    let s = b.track("sim", Api::Cuda, 0, Some(0));
    let never = b.semaphore("never", false);
    let r = b.resource("buf");
    b.wait(q, never, 1, 0);
    for f in 0..100 {
        b.scope(q, "draw", f, f as f64 * 10.0, f as f64 * 10.0 + 5.0, &[Access::read(r)]);
    }
    b.scope(s, "write", 0, 0.0, 1.0, &[Access::write(r)]);
    let mut c = Checker::new().with_horizon(16);
    b.tl.replay(&mut c);
    assert!(c.pending_items() <= 16, "{} items held", c.pending_items());
    let r = c.report();
    assert_eq!(r.unverifiable.never_signalled, 1);
    // Released without ordering anything: the draws are unordered with the write.
    assert!(r.by_rule.unordered > 0);
    assert_eq!(check(&b.tl).unverifiable.never_signalled, 1);
}

#[test]
fn nested_scopes_are_checked_and_send_order_does_not_matter() {
    // The draw is a nested scope, sent before the pass that contains it.
    let tl = program(50, |_, fr| fr.nested_draw = true);
    let r = check(&tl);
    assert!(r.is_clean(), "{r}");
    assert_eq!(r.pairs_checked, 2 * 50 - K);
    let broken = program(50, |f, fr| {
        fr.nested_draw = true;
        if f == 9 {
            fr.wait_written = false;
            fr.draw.0 = 250.0;
        }
    });
    let r = check(&broken);
    assert_eq!(r.violation_count, 1, "{r}");
    assert!(r.violations[0]
        .message
        .starts_with("unordered: heights[0]: \"draw\" (vulkan queue \"graphics\", frame 9) reads"));
}

#[test]
fn pairs_on_one_track_are_left_to_that_api() {
    let mut b = Tl::default();
    let q = b.track("graphics", Api::Vulkan, 0, Some(0));
    let r = b.resource("image");
    b.scope(q, "a", 0, 0.0, 10.0, &[Access::write(r)]);
    b.scope(q, "b", 0, 5.0, 15.0, &[Access::write(r), Access::read(r)]);
    b.scope(q, "c", 0, 6.0, 7.0, &[Access::read(r)]);
    let rep = check(&b.tl);
    assert!(rep.is_clean());
    assert_eq!(rep.pairs_checked, 0);
}

#[test]
fn binary_semaphores_counted_as_values_match_exactly() {
    // A binary pair modelled as a counter: each wait n matches signal n. The wait for n is
    // recorded before signal n; signal n − 1 is already there and must not match it.
    let mut b = Tl::default();
    let q = b.track("graphics", Api::Vulkan, 1_000, Some(0));
    let s = b.track("sim", Api::Cuda, 1_000, Some(0));
    let acquire = b.semaphore("acquire", false);
    let release = b.semaphore("release", false);
    let img = b.resource("image");
    for n in 1..=20u64 {
        let t = n as f64 * 100.0;
        if n > 1 {
            b.wait(q, release, n - 1, n);
        }
        b.scope(q, "render", n, t, t + 40.0, &[Access::write(img)]);
        b.signal(q, acquire, n, n);
        b.wait(s, acquire, n, n);
        // Frame 13's filter starts 30 µs before the render it waited on ended.
        let start = if n == 13 { t + 10.0 } else { t + 45.0 };
        b.scope(s, "filter", n, start, t + 60.0, &[Access::read(img)]);
        b.signal(s, release, n, n);
    }
    let mut c = Checker::new();
    // The stream's items first: every wait arrives before its signal.
    c.names(&b.tl.names);
    for item in &b.tl.items[1] {
        c.item(s, item);
    }
    for item in &b.tl.items[0] {
        c.item(q, item);
    }
    c.finish();
    let r = c.report();
    assert_eq!(r.waits_checked, 20 + 19);
    assert_eq!(r.violation_count, 2, "{r}");
    assert_eq!((r.by_rule.wait_before_signal, r.by_rule.overlap), (1, 1));
    assert!(r.violations.iter().all(|v| v.b.frame == 13), "{r}");
    // Each filter against its render, each render against the previous filter.
    assert_eq!(r.pairs_checked, 20 + 19);
}

#[test]
fn waits_below_the_first_signal_of_a_batch_are_unverifiable() {
    // One signal per batch of 4 frames (values 4, 8, 12), a wait per frame: in a whole trace
    // the first batch's waits (≥ 1, 2, 3) cannot be told from a ring's start.
    let mut b = Tl::default();
    let q = b.track("graphics", Api::Vulkan, 0, Some(0));
    let s = b.track("sim", Api::Cuda, 0, Some(0));
    let computed = b.semaphore("computed", false);
    for batch in 1..=3u64 {
        let t = batch as f64 * 1000.0;
        b.scope(s, "kernels", batch * 4, t, t + 100.0, &[]);
        b.signal(s, computed, batch * 4, batch * 4);
    }
    for f in 1..=12u64 {
        b.wait(q, computed, f, f);
        let t = f.div_ceil(4) as f64 * 1000.0 + 200.0 + f as f64;
        b.scope(q, "draw", f, t, t + 1.0, &[]);
    }
    let r = check(&b.tl);
    assert!(r.is_clean(), "{r}");
    assert_eq!(r.unverifiable.before_trace, 3);
    assert_eq!(r.waits_checked, 9);
}

#[test]
fn a_gpu_signal_with_no_scope_before_it_has_no_time() {
    let mut b = Tl::default();
    let q = b.track("graphics", Api::Vulkan, 0, Some(0));
    let s = b.track("sim", Api::Cuda, 0, Some(0));
    let sem = b.semaphore("ready", false);
    b.signal(s, sem, 1, 0);
    b.wait(q, sem, 1, 0);
    b.scope(q, "draw", 0, 0.0, 1.0, &[]);
    let r = check(&b.tl);
    assert_eq!(r.unverifiable.no_signal_time, 1);
    assert_eq!(r.waits_checked, 0);
}

/// ~14 items a frame over 3 tracks.
fn ten_thousand_frames() -> vkhip_profile::Timeline {
    program(10_000, |_, fr| fr.clear = Some((340.0, 345.0)))
}

#[test]
fn ten_thousand_frames_are_checked_quickly() {
    let tl = ten_thousand_frames();
    let items: usize = tl.items.iter().map(Vec::len).sum();
    assert!(items >= 100_000, "{items}");
    let t0 = Instant::now();
    let r = check(&tl);
    let took = t0.elapsed();
    assert!(r.is_clean(), "{r}");
    // Well under a second in release (see the ignored test below for the figure); a generous
    // bound for unoptimised builds on a loaded 2-core CI machine.
    let bound = if cfg!(debug_assertions) { Duration::from_secs(20) } else { Duration::from_secs(1) };
    assert!(took < bound, "{items} items took {took:?}");
}

/// `cargo test --release -p vkhip-profile --test check -- --ignored --nocapture`
#[test]
#[ignore = "a timing, not a test: run it in release"]
fn bench_check_ten_thousand_frames() {
    let tl = ten_thousand_frames();
    let items: usize = tl.items.iter().map(Vec::len).sum();
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let t0 = Instant::now();
        let r = check(&tl);
        best = best.min(t0.elapsed());
        assert!(r.is_clean());
    }
    println!(
        "check: {items} items (10,000 frames) in {best:?}, {:.0} ns per item",
        best.as_nanos() as f64 / items as f64
    );
}

#[test]
fn a_wait_followed_by_a_signal_and_no_scope_has_no_work_to_check() {
    // The stream relays `a` to `b` with nothing instrumented between; its next scope (a frame
    // later, and before the relay's signal time by the clock) is not the relayed wait's work.
    let mut b = Tl::default();
    let q = b.track("graphics", Api::Vulkan, 0, Some(0));
    let s = b.track("sim", Api::Cuda, 0, Some(0));
    let (a, c) = (b.semaphore("a", false), b.semaphore("b", false));
    b.scope(s, "early", 0, 0.0, 5.0, &[]);
    b.scope(q, "draw", 0, 10.0, 20.0, &[]);
    b.signal(q, a, 1, 0);
    b.wait(s, a, 1, 0);
    b.signal(s, c, 1, 0);
    b.scope(s, "next", 1, 15.0, 16.0, &[]);
    let r = check(&b.tl);
    assert!(r.is_clean(), "{r}");
    assert_eq!(r.waits_checked, 0);
}

/// The counts per resource, semaphore and pair of tracks add up to the totals, and a violation
/// is counted where it happened: what a program reads to say what was proved for a group of its
/// resources, or between two tracks on one clock.
#[test]
fn comparisons_are_counted_per_resource_per_semaphore_and_per_pair_of_tracks() {
    let r = check(&correct(30));
    let sum = |c: &[vkhip_profile::check::Counts]| c.iter().map(|c| c.checked).sum::<u64>();
    assert_eq!(sum(&r.by_resource), r.pairs_checked);
    assert_eq!(sum(&r.by_semaphore), r.waits_checked);
    assert_eq!(r.by_tracks.values().map(|c| c.checked).sum::<u64>(), r.pairs_checked + r.waits_checked);
    assert!(r.by_tracks.values().chain(&r.by_resource).chain(&r.by_semaphore).all(|c| c.violations == 0));
    // Resource 0 (heights[0]): frames 0, 3, …, 27 are drawn after their write (10 pairs), and
    // 9 writes come after the slot's previous draw.
    assert_eq!(r.by_resource[0].checked, 19);
    // Frame 7's draw does not wait for `written` and reads while the kernel writes heights[1].
    let broken = program(30, |f, fr| {
        if f == 7 {
            fr.wait_written = false;
            fr.draw.0 = 200.0;
        }
    });
    let r = check(&broken);
    assert_eq!(r.violation_count, 1, "{r}");
    assert_eq!(r.by_resource.iter().map(|c| c.violations).collect::<Vec<_>>(), [0, 1, 0]);
    let (sim, graphics) = (TrackId(1), TrackId(2));
    assert_eq!(r.by_tracks[&(sim, graphics)].violations, 1);
    assert!(r.by_semaphore.iter().all(|c| c.violations == 0));
}

/// A long run keeps a bounded number of signals per semaphore, and a wait for a value that fell
/// out is unverifiable, not a violation (the soak of `vkhip --backend cuda --post outline`:
/// memory grew for half a minute with 4096 kept per semaphore).
#[test]
fn a_long_run_keeps_a_bounded_number_of_signals_per_semaphore() {
    let mut b = Tl::default();
    let (s, q) = (b.track("sim", Api::Cuda, 0, Some(0)), b.track("graphics", Api::Vulkan, 0, Some(0)));
    let (often, batched) = (b.semaphore("often", false), b.semaphore("batched", false));
    let frames = 20_000u64;
    for f in 0..frames {
        let t = f as f64 * 10.0;
        b.scope(s, "sim", f, t, t + 1.0, &[]);
        b.signal(s, often, f + 1, f);
        if f % 7 == 6 {
            b.signal(s, batched, f + 1, f);
        }
    }
    // The queue waits for each frame, and once, at the end, for a value long gone.
    for f in 0..frames {
        b.wait(q, often, f + 1, f);
        b.scope(q, "draw", f, f as f64 * 10.0 + 2.0, f as f64 * 10.0 + 3.0, &[]);
    }
    b.wait(q, batched, 7, frames);
    b.scope(q, "late", frames, frames as f64 * 10.0, frames as f64 * 10.0 + 1.0, &[]);
    let mut c = Checker::new();
    b.tl.replay(&mut c);
    assert!(c.retained_signals() <= 2 * KEEP_SIGNALS, "{} signals kept", c.retained_signals());
    c.finish();
    let r = c.report();
    assert!(r.is_clean(), "{r}");
    assert_eq!(r.unverifiable.before_trace, 1, "the late wait's signal fell out: {r}");
}
