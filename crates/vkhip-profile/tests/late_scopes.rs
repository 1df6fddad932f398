//! Per-frame figures count every scope of a frame, however late and in whatever order its
//! results arrive: an engine-shaped loop (render on Vulkan → filter on CUDA → copy on Vulkan,
//! two context switches a frame) fed to the analysis in several arrival orders must give the
//! figures of the feed where every frame's results arrive at once.

mod synthetic;

use synthetic::*;
use vkhip_profile::analysis::{analyze, Analysis, Summary};
use vkhip_profile::model::{Item, Sink, Timeline};
use vkhip_profile::TrackId;

/// Frames of the engine loop.
const FRAMES: u64 = 600;

/// The items of each track, grouped by the frame they belong to.
fn by_frame(tl: &Timeline) -> Vec<Vec<Vec<&Item>>> {
    let frames = tl.frame_ends.len();
    tl.items
        .iter()
        .map(|items| {
            let mut per = vec![Vec::new(); frames];
            for i in items {
                per[i.frame() as usize].push(i);
            }
            per
        })
        .collect()
}

/// Feed `tl` as a profiler's `end_frame` would: at frame end `e`, each track delivers the
/// frames `arrives(track, frame)` says have arrived by then (in its program order, never
/// before an earlier frame of the same track), tracks in the order `order(e)`, then the frame
/// end.
fn feed(tl: &Timeline, arrives: impl Fn(usize, u64) -> u64, order: impl Fn(u64) -> Vec<usize>) -> Summary {
    let per = by_frame(tl);
    let mut a = Analysis::new();
    a.set_clock_notes(tl.clock_notes.clone());
    a.names(&tl.names);
    let frames = tl.frame_ends.len() as u64;
    // Per track, the frame end at which each frame arrives (monotone: program order).
    let at: Vec<Vec<u64>> = (0..per.len())
        .map(|t| {
            let mut last = 0;
            (0..frames)
                .map(|f| {
                    last = last.max(arrives(t, f)).max(f);
                    last
                })
                .collect()
        })
        .collect();
    let mut next = vec![0u64; per.len()];
    for e in 0..frames + 16 {
        for t in order(e) {
            while next[t] < frames && at[t][next[t] as usize] <= e {
                for item in &per[t][next[t] as usize] {
                    a.item(TrackId(t as u32), item);
                }
                next[t] += 1;
            }
        }
        if e < frames {
            a.frame_end(tl.frame_ends[e as usize]);
        }
    }
    a.summary()
}

/// A small deterministic generator (no dependency): 1 to 8.
fn lateness(track: usize, frame: u64) -> u64 {
    let mut x =
        frame.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (track as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    1 + x % 8
}

/// What must not depend on the arrival order.
fn assert_same_figures(what: &str, got: &Summary, want: &Summary) {
    assert_eq!(got.late_scopes, 0, "{what}: {} GPU scopes counted as late", got.late_scopes);
    assert_eq!(got.gpu_busy, want.gpu_busy, "{what}: GPU busy per frame");
    // Listed in the order first met: compared as sets.
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(sorted(got.gpu_busy_scopes.clone()), sorted(want.gpu_busy_scopes.clone()), "{what}");
    let by_name = |s: &Summary| {
        let mut v = s.scopes.clone();
        v.sort_by(|a, b| (a.track, &a.name).cmp(&(b.track, &b.name)));
        v
    };
    assert_eq!(by_name(got), by_name(want), "{what}: the scopes' figures");
    assert_eq!(got.frame_time, want.frame_time, "{what}: frame time");
    assert_eq!(got.handoffs, want.handoffs, "{what}: hand-offs");
    assert_eq!(got.check.violation_count, want.check.violation_count, "{what}: {}", got.check);
}

#[test]
fn frame_figures_do_not_depend_on_when_or_in_what_order_results_arrive() {
    let tl = engine(FRAMES, 1000.0);
    let tracks = tl.items.len();
    // Every frame's results arrive at its own end, tracks in order.
    let at_once = feed(&tl, |_, f| f, |_| (0..tracks).collect());
    // The reference itself: 600 frames, each 15 µs busy (render 4 + filt 4 + copy 7).
    assert_eq!(at_once.late_scopes, 0);
    assert_eq!(at_once.gpu_busy.count, FRAMES);
    // Exact in the mean; the percentiles to the histogram's 3 significant digits.
    assert_eq!(at_once.gpu_busy.mean_ns, 15_000.0, "{:?}", at_once.gpu_busy);
    assert!(at_once.gpu_busy.p99_ns.abs_diff(15_000) <= 15, "{:?}", at_once.gpu_busy);
    assert!(at_once.check.is_clean(), "{}", at_once.check);

    // Each track's results 1 to 8 frames late, varying frame to frame; tracks in reverse order.
    let late = feed(&tl, |t, f| f + lateness(t, f), |_| (0..tracks).rev().collect());
    assert_same_figures("1–8 frames late, tracks reversed", &late, &at_once);

    // The stream's results 8 frames late from the first frame on, the queue's at once: the
    // stream has delivered nothing while the queue's first frames are complete.
    let stream_late = feed(
        &tl,
        |t, f| if t == 2 { f + 8 } else { f },
        |e| {
            let mut o: Vec<usize> = (0..tracks).collect();
            o.rotate_left((e % tracks as u64) as usize);
            o
        },
    );
    assert_same_figures("the stream 8 frames late from the start", &stream_late, &at_once);

    // The queue's results late, the stream's on time, tracks rotating.
    let queue_late = feed(
        &tl,
        |t, f| if t == 1 { f + 1 + f % 8 } else { f },
        |e| {
            let mut o: Vec<usize> = (0..tracks).collect();
            o.rotate_right((e % tracks as u64) as usize);
            o
        },
    );
    assert_same_figures("the queue 1–8 frames late", &queue_late, &at_once);

    // The whole timeline (what `Capture::report` reads): the queue has more items a frame
    // than the stream.
    assert_same_figures("the whole timeline", &analyze(&tl), &at_once);
}
