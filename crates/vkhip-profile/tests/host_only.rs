//! The profiler without a device: host threads, their scopes, semaphores between them, and what
//! every sink is promised — the names before any item that uses them, each track's items in its
//! program order, frame ends in order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use vkhip_profile::model::{FrameEnd, Item};
use vkhip_profile::{Names, Options, Profiler, Sink, SyncKind, Timeline, TrackId};

/// A sink that fails on a broken promise, and keeps what it got.
#[derive(Default)]
struct Strict {
    names: Names,
    got: Arc<Mutex<Timeline>>,
    calls: Arc<Mutex<HashMap<&'static str, u64>>>,
}

impl Sink for Strict {
    fn names(&mut self, names: &Names) {
        // Names only grow.
        assert!(
            names.tracks.len() >= self.names.tracks.len()
                && names.semaphores.len() >= self.names.semaphores.len()
        );
        self.names = names.clone();
        self.got.lock().unwrap().names(names);
        *self.calls.lock().unwrap().entry("names").or_default() += 1;
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        assert!((track.0 as usize) < self.names.tracks.len(), "an item of track {track:?} before its name");
        match item {
            Item::Scope(s) => {
                for a in &s.accesses {
                    assert!(
                        (a.resource.0 as usize) < self.names.resources.len(),
                        "an access before its resource's name"
                    );
                }
                assert!(s.start_ns <= s.end_ns, "{s:?}");
            }
            Item::Sync(s) => {
                assert!((s.semaphore.0 as usize) < self.names.semaphores.len(), "a sync before its name")
            }
        }
        self.got.lock().unwrap().item(track, item);
    }

    fn frame_end(&mut self, end: FrameEnd) {
        let mut got = self.got.lock().unwrap();
        assert!(got
            .frame_ends
            .last()
            .is_none_or(|last| last.frame + 1 == end.frame && last.host_ns <= end.host_ns));
        got.frame_end(end);
    }
}

#[test]
fn two_host_threads_hand_off_through_a_semaphore() {
    let strict = Strict::default();
    let (got, calls) = (strict.got.clone(), strict.calls.clone());
    let prof = Profiler::host_only(Options::default(), vec![Box::new(strict)]);
    let buffer = prof.resource("buffer");
    let ready = prof.semaphore("ready");
    assert_eq!(prof.semaphore("ready"), ready, "one name, one semaphore");
    std::thread::scope(|scope| {
        let (prof, buffer, ready) = (&prof, &buffer, &ready);
        scope.spawn(move || {
            let producer = prof.host_thread("producer");
            for f in 0..5 {
                {
                    let _w = producer.scope("fill").writes(buffer);
                    let _inner = producer.scope("inner");
                }
                producer.signal(ready, f + 1);
            }
        });
        let consumer = prof.host_thread("consumer");
        for f in 0..5 {
            consumer.wait(ready, f + 1);
            drop(consumer.scope("use").reads(buffer));
            prof.end_frame().expect("end_frame");
        }
    });
    let capture = prof.finish().expect("finish");
    let t = capture.timeline();
    let from_sink = got.lock().unwrap().clone();
    assert_eq!(from_sink.items, t.items, "the sink saw what the timeline kept, in the same order");
    assert!(calls.lock().unwrap()["names"] >= 1);
    let track =
        |name: &str| TrackId(t.names.tracks.iter().position(|x| x.name == name).expect("a track") as u32);
    let (producer, consumer) = (track("producer"), track("consumer"));
    // The producer: fill (depth 0), inner (depth 1, inside fill), signal; five times.
    let items = &t.items[producer.0 as usize];
    assert_eq!(items.len(), 15);
    for chunk in items.chunks(3) {
        match chunk {
            [Item::Scope(fill), Item::Scope(inner), Item::Sync(signal)] => {
                assert_eq!((&*fill.name, fill.depth, &*inner.name, inner.depth), ("fill", 0, "inner", 1));
                assert!(fill.start_ns <= inner.start_ns && inner.end_ns <= fill.end_ns);
                assert_eq!((signal.kind, signal.semaphore), (SyncKind::Signal, ready_id(t)));
                assert!(signal.host_ns.expect("a host signal's time") >= fill.end_ns);
            }
            other => panic!("{other:#?}"),
        }
    }
    // The consumer: wait, use; the wait returned no earlier than the signal it matched.
    let items = &t.items[consumer.0 as usize];
    assert_eq!(items.len(), 10);
    for (f, chunk) in items.chunks(2).enumerate() {
        let (Item::Sync(wait), Item::Scope(used)) = (&chunk[0], &chunk[1]) else { panic!("{chunk:#?}") };
        assert_eq!((wait.kind, wait.value, &*used.name), (SyncKind::Wait, f as u64 + 1, "use"));
        assert_eq!(used.frame, f as u64);
    }
    assert_eq!(t.frame_ends.len(), 5);
    assert_eq!(*capture.stats(), vkhip_profile::Stats { frames: 5, items: 25, ..Default::default() });
}

fn ready_id(t: &Timeline) -> vkhip_profile::SemaphoreId {
    vkhip_profile::SemaphoreId(
        t.names.semaphores.iter().position(|s| s.name == "ready").expect("ready") as u32
    )
}

#[test]
fn a_host_only_profiler_refuses_gpu_tracks_and_a_disabled_one_records_nothing() {
    let prof = Profiler::host_only(Options::default(), Vec::new());
    let err = prof.vulkan_queue("q").err().expect("no device").to_string();
    assert!(err.contains("needs a profiler on a Vulkan device"), "{err}");
    let off = Profiler::host_only(Options { enabled: false, ..Options::default() }, Vec::new());
    assert!(!off.is_enabled());
    let h = off.host_thread("main");
    drop(h.scope("s").writes(&off.resource("r")));
    h.signal(&off.semaphore("s"), 1);
    off.end_frame().expect("a no-op");
    assert_eq!(off.frame(), 0);
    assert_eq!(*off.finish().expect("a no-op").timeline(), Timeline::default());
}

/// Keeps what `resolved_below` said, in order.
struct Below(Arc<Mutex<Vec<u64>>>);

impl Sink for Below {
    fn names(&mut self, _: &Names) {}
    fn item(&mut self, _: TrackId, _: &Item) {}
    fn frame_end(&mut self, _: FrameEnd) {}
    fn resolved_below(&mut self, frame: u64) {
        self.0.lock().unwrap().push(frame);
    }
}

#[test]
fn sinks_are_told_which_frames_are_complete_and_a_scope_still_open_holds_its_frame() {
    let said = Arc::new(Mutex::new(Vec::new()));
    let prof = Profiler::host_only(Options::default(), vec![Box::new(Below(said.clone()))]);
    let main = prof.host_thread("main");
    {
        let _short = main.scope("short");
    }
    prof.end_frame().unwrap(); // frame 0 is complete
    let long = main.scope("long"); // recorded in frame 1, open across two frame ends
    prof.end_frame().unwrap();
    prof.end_frame().unwrap();
    drop(long);
    prof.end_frame().unwrap();
    let capture = prof.finish().unwrap();
    assert_eq!(capture.stats().lost, 0);
    let said = said.lock().unwrap().clone();
    // After each end_frame: 1; then 1 twice (the long scope of frame 1 is still open); then 4;
    // `finish` says the same again.
    assert_eq!(&said[..4], [1, 1, 1, 4], "{said:?}");
    assert!(said.windows(2).all(|w| w[0] <= w[1]), "never decreases: {said:?}");
}
