//! Vulkan and host scopes on a real device (lavapipe in CI): an engine's own device, borrowed,
//! under the Khronos validation layer with synchronization validation (every message fails the
//! test), profiled the way an engine would: host scopes around the work, nested scopes in the
//! command buffer, the submission's waits and signals, a fence wait.
//!
//! The engine's device has neither `hostQueryReset` nor calibrated timestamps enabled: this is
//! the profiler's fallback path (queries reset in the command buffer, a one-off clock).
//! `tests/open_device.rs` runs the best path on the interop crate's own device.

#[path = "../../vkhip-interop/tests/common/engine.rs"]
mod engine;
#[path = "../../vkhip-interop/tests/common/skip.rs"]
mod skip;

use ash::vk;
use engine::{Engine, Shape};
use vkhip_profile::model::{FrameEnd, Item, Scope, Sync};
use vkhip_profile::{Access, Api, Options, Profiler, SyncKind, Timeline, TrackId};

const FRAMES: u64 = 12;

fn scopes(t: &Timeline, track: TrackId) -> Vec<&Scope> {
    t.items[track.0 as usize]
        .iter()
        .filter_map(|i| if let Item::Scope(s) = i { Some(s) } else { None })
        .collect()
}

fn syncs(t: &Timeline, track: TrackId) -> Vec<&Sync> {
    t.items[track.0 as usize]
        .iter()
        .filter_map(|i| if let Item::Sync(s) = i { Some(s) } else { None })
        .collect()
}

fn semaphore(t: &Timeline, name: &str) -> vkhip_profile::SemaphoreId {
    let i = t.names.semaphores.iter().position(|s| s.name == name);
    vkhip_profile::SemaphoreId(
        i.unwrap_or_else(|| panic!("no semaphore {name:?} in {:?}", t.names.semaphores)) as u32,
    )
}

#[test]
fn vulkan_and_host_scopes_on_a_borrowed_device_under_validation() {
    let test = "vulkan_and_host_scopes_on_a_borrowed_device_under_validation";
    let Some(engine) = Engine::validated(test, Shape::MATRIX[3]) else { return };
    let device = engine.hand_over().expect("the engine's device");
    let buffer = device.shared_buffer(1 << 16).expect("a buffer");
    let d = device.ash();

    let prof = Profiler::new(&device, Options::default()).expect("a profiler");
    let queue = prof.vulkan_queue("graphics").expect("a queue track");
    let host = prof.host_thread("main");
    let (heights, staging) = (prof.resource("heights"), prof.resource("staging"));
    let (rendered, uploaded) = (prof.semaphore("rendered"), prof.semaphore("uploaded"));
    let mut host_brackets = Vec::new();
    for f in 0..FRAMES {
        {
            let _prepare = host.scope("prepare").writes(&staging);
            std::hint::black_box((0..10_000u64).sum::<u64>());
        }
        let before = vkhip_profile::clock::host_now_ns();
        device
            .submit_one_shot(&[], &[], |cmd| {
                // SAFETY: the one-shot command buffer records until this closure returns, after
                // both scopes; outside any render pass.
                let _frame = unsafe { queue.scope(cmd, "frame") }.reads(&staging);
                let _fill = unsafe { queue.scope(cmd, "fill") }.writes(&heights);
                // SAFETY: recording; the buffer is the device's and large enough.
                unsafe { d.cmd_fill_buffer(cmd, buffer.buffer(), 0, vk::WHOLE_SIZE, f as u32) };
            })
            .expect("a submission");
        let waits: Vec<_> = (f > 0).then_some((&uploaded, f)).into_iter().collect();
        let submission = queue.submitted(&waits, &[(&rendered, f + 1)]);
        queue.waited(submission); // submit_one_shot waited for its fence
        let after = vkhip_profile::clock::host_now_ns();
        host_brackets.push((before, after));
        {
            let _read = host.scope("read").reads(&heights);
        }
        prof.end_frame().expect("end_frame");
    }
    let capture = prof.finish().expect("finish");
    engine.assert_silent("profiling under validation");
    let t = capture.timeline();
    let stats = *capture.stats();
    assert_eq!(
        (stats.frames, stats.dropped_full, stats.lost, stats.never_submitted, stats.failed_ends),
        (FRAMES, 0, 0, 0, 0)
    );
    assert_eq!(stats.items, t.items.iter().map(Vec::len).sum::<usize>() as u64);

    // The names: two tracks with their APIs and clocks; the internal semaphores.
    let (g, h) = (queue.track(), host.track());
    assert_eq!((t.names.track(g).api, t.names.track(h).api), (Api::Vulkan, Api::Host));
    assert!(t.names.track(g).clock.contains("one-off calibration"), "{}", t.names.track(g).clock);
    assert_eq!(t.names.track(g).clock_domain, Some(0));
    assert!(t.clock_notes.iter().any(|n| n.contains("accuracy ±")), "{:?}", t.clock_notes);
    let submit = semaphore(t, "submit:main→graphics");
    let join = semaphore(t, "join:graphics");
    assert!(t.names.semaphore(submit).internal && t.names.semaphore(join).internal);
    assert!(!t.names.semaphore(semaphore(t, "rendered")).internal);

    // Every frame's scopes, resolved, nested, in order, with their accesses.
    let gpu = scopes(t, g);
    assert_eq!(gpu.len() as u64, 2 * FRAMES, "{gpu:#?}");
    let accuracy = t.names.track(g).accuracy_ns;
    for (f, pair) in gpu.chunks(2).enumerate() {
        let (frame, fill) = (pair[0], pair[1]);
        assert_eq!((&*frame.name, frame.depth, frame.frame), ("frame", 0, f as u64));
        assert_eq!((&*fill.name, fill.depth, fill.frame), ("fill", 1, f as u64));
        assert_eq!(frame.accesses, [Access::read(vkhip_profile::ResourceId(1))]);
        assert_eq!(fill.accesses, [Access::write(vkhip_profile::ResourceId(0))]);
        assert!(
            frame.start_ns <= fill.start_ns && fill.start_ns <= fill.end_ns && fill.end_ns <= frame.end_ns,
            "{pair:#?}"
        );
        // On the host clock: between the submit and the fence, within the clock's accuracy.
        let (before, after) = host_brackets[f];
        assert!(
            frame.start_ns + accuracy >= before && frame.end_ns <= after + accuracy,
            "frame {f}: {frame:?} outside {before}..{after} ±{accuracy}"
        );
    }
    assert!(gpu.windows(2).all(|w| w[0].start_ns <= w[1].start_ns));

    // The queue's program order per frame: the host's submit edge (frame 0; later frames only
    // when the host did something in between: it did, every frame), the user's wait (from frame
    // 1), the scopes, the user's signal, the join signal.
    let kinds: Vec<String> = t.items[g.0 as usize]
        .iter()
        .take(12)
        .map(|i| match i {
            Item::Scope(s) => s.name.to_string(),
            Item::Sync(s) => format!("{} {} {}", s.kind.name(), t.names.semaphore(s.semaphore).name, s.value),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "wait submit:main→graphics 1",
            "frame",
            "fill",
            "signal rendered 1",
            "signal join:graphics 1",
            "wait submit:main→graphics 2",
            "wait uploaded 1",
            "frame",
            "fill",
            "signal rendered 2",
            "signal join:graphics 2",
            "wait submit:main→graphics 3",
        ]
    );
    // The host: prepare, the edge's signal (timed no later than the submission's first scope),
    // the join's wait (once the fence returned), read.
    let host_items = &t.items[h.0 as usize];
    let (host_scopes, host_syncs) = (scopes(t, h), syncs(t, h));
    assert_eq!(host_scopes.len() as u64, 2 * FRAMES);
    assert_eq!(host_syncs.len() as u64, 2 * FRAMES);
    match &host_items[..4] {
        [Item::Scope(prepare), Item::Sync(edge), Item::Sync(joined), Item::Scope(read)] => {
            assert_eq!((&*prepare.name, &*read.name), ("prepare", "read"));
            assert_eq!(prepare.accesses, [Access::write(vkhip_profile::ResourceId(1))]);
            assert_eq!((edge.kind, edge.semaphore, edge.value), (SyncKind::Signal, submit, 1));
            assert_eq!((joined.kind, joined.semaphore, joined.value), (SyncKind::Wait, join, 1));
            let (e, j) = (edge.host_ns.expect("a host time"), joined.host_ns.expect("a host time"));
            assert!(
                prepare.end_ns <= e
                    && e <= gpu[0].start_ns + accuracy
                    && gpu[0].end_ns <= j + accuracy
                    && j <= read.start_ns
            );
        }
        other => panic!("host items: {other:#?}"),
    }
    assert_eq!(t.frame_ends.iter().map(|e| e.frame).collect::<Vec<_>>(), (0..FRAMES).collect::<Vec<_>>());
    assert!(t.frame_ends.windows(2).all(|w: &[FrameEnd]| w[0].host_ns < w[1].host_ns));
    // Every handle of the profiler goes before the engine destroys its device.
    drop((queue, host, capture, buffer));
    drop(device);
    engine.finish("teardown");
}

#[test]
fn a_full_ring_drops_scopes_and_an_unsubmitted_scope_is_counted() {
    let test = "a_full_ring_drops_scopes_and_an_unsubmitted_scope_is_counted";
    let Some(engine) = Engine::validated(test, Shape::MATRIX[3]) else { return };
    let device = engine.hand_over().expect("the engine's device");
    let options = Options { queries_per_queue: 4, ..Options::default() };
    let prof = Profiler::new(&device, options).expect("a profiler");
    let queue = prof.vulkan_queue("q").expect("a queue track");
    device
        .submit_one_shot(&[], &[], |cmd| {
            // SAFETY: recording until the closure returns; three scopes, two fit the ring.
            unsafe {
                let _a = queue.scope(cmd, "a");
                let _b = queue.scope(cmd, "b");
                let _c = queue.scope(cmd, "c");
            }
        })
        .expect("a submission");
    queue.submitted(&[], &[]);
    assert_eq!(prof.stats().dropped_full, 1);
    prof.end_frame().expect("end_frame");
    // Recorded into a command buffer that is never submitted: counted at finish.
    device.submit_one_shot(&[], &[], |cmd| drop(unsafe { queue.scope(cmd, "never") })).expect("a submission");
    let capture = prof.finish().expect("finish");
    let names: Vec<&str> = scopes(capture.timeline(), queue.track()).iter().map(|s| &*s.name).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!((capture.stats().dropped_full, capture.stats().never_submitted), (1, 1));
    drop((queue, capture));
    drop(device);
    engine.finish("teardown");
}

#[test]
fn a_disabled_profiler_records_nothing_and_makes_nothing() {
    let test = "a_disabled_profiler_records_nothing_and_makes_nothing";
    let Some(engine) = Engine::validated(test, Shape::MATRIX[3]) else { return };
    let device = engine.hand_over().expect("the engine's device");
    for prof in [
        Profiler::disabled(),
        Profiler::new(&device, Options { enabled: false, ..Options::default() }).expect("off"),
    ] {
        assert!(!prof.is_enabled());
        let queue = prof.vulkan_queue("q").expect("a no-op track");
        let host = prof.host_thread("main");
        let r = prof.resource("r");
        device
            .submit_one_shot(&[], &[], |cmd| {
                // SAFETY: recording; a disabled scope writes nothing.
                let _s = unsafe { queue.scope(cmd, "s") }.writes(&r);
            })
            .expect("a submission");
        drop(host.scope("h").reads(&r));
        queue.waited(queue.submitted(&[], &[]));
        prof.end_frame().expect("end_frame");
        let capture = prof.finish().expect("finish");
        assert_eq!(*capture.timeline(), Timeline::default());
        drop((queue, host));
    }
    drop(device);
    engine.finish("teardown: a disabled profiler left nothing behind");
}
