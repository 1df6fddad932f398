//! The Tracy sink without a viewer (what CI and most runs have): it must neither block nor
//! keep what it cannot send.
#![cfg(feature = "tracy")]

mod synthetic;

use std::time::{Duration, Instant};
use synthetic::*;
use vkhip_profile::model::Item;
use vkhip_profile::TracySink;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn without_a_viewer_the_sink_sends_nothing_keeps_nothing_and_never_blocks() {
    // 50,000 frames, 150,000 scopes, and a hazard every 1000 frames for the live checker.
    let tl = program(50_000, |f, fr| {
        if f % 1000 == 7 {
            fr.wait_written = false;
            fr.draw.0 = 200.0;
        }
    });
    let scopes = tl.items.iter().flatten().filter(|i| matches!(i, Item::Scope(_))).count() as u64;
    let before = rss_bytes();
    let t0 = Instant::now();
    let mut sink = TracySink::new().with_frame_marks(true);
    tl.replay(&mut sink);
    sink.flush();
    let took = t0.elapsed();
    let grown = rss_bytes().saturating_sub(before);
    assert!(!sink.is_connected(), "a Tracy viewer is connected to this test: run it without one");
    let stats = sink.stats();
    assert_eq!(stats.contexts, 3);
    assert_eq!((stats.zones_sent, stats.zones_skipped), (0, scopes));
    // The live checker found every hazard (messages are dropped by Tracy while no viewer is
    // connected: `ondemand`).
    assert_eq!(stats.violations_sent, 50);
    // Without `ondemand` Tracy would queue four events and a source location per scope until a
    // viewer connects: tens of MB here.
    assert!(grown < 16 << 20, "resident memory grew by {} MiB", grown >> 20);
    assert!(took < Duration::from_secs(30), "{scopes} scopes took {took:?}");
}

#[test]
fn the_sink_can_move_to_another_thread() {
    fn send<T: Send + 'static>(_: &T) {}
    send(&TracySink::new());
}
