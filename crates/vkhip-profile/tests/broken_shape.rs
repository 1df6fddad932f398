//! The orderings of `ash_cuda` and `ash_cuda_broken`, on a real Vulkan device (lavapipe in CI)
//! under the validation layer, with a host thread writing the shared buffer in CUDA's place: the
//! writer waits for `read` before it writes and signals `written` after; the main thread submits
//! the Vulkan read, waits for its fence and signals `read`. The correct program waits for
//! `written` before it submits; the broken one submits first (the wait it lacks comes later).
//! The timeline must hold each program as it ran; the checker must find the broken one's race
//! on every frame, and nothing in the correct one.

#[path = "../../vkhip-interop/tests/common/engine.rs"]
mod engine;
#[path = "../../vkhip-interop/tests/common/skip.rs"]
mod skip;

use ash::vk;
use engine::{Engine, Shape};
use std::sync::mpsc;
use vkhip_profile::model::Item;
use vkhip_profile::{Capture, Options, Profiler, SyncKind};

const FRAMES: u64 = 8;

/// Run the program (`broken`: without the wait), validated; `None` without the layer.
fn run(test: &str, broken: bool) -> Option<Capture> {
    let engine = Engine::validated(test, Shape::MATRIX[3])?;
    let device = engine.hand_over().expect("the engine's device");
    let buffer = device.shared_buffer(1 << 12).expect("a buffer");
    let d = device.ash();
    let prof = Profiler::new(&device, Options::default()).expect("a profiler");
    let queue = prof.vulkan_queue("graphics").expect("a queue track");
    let heights = prof.resource("heights");
    let (written, read) = (prof.semaphore("written"), prof.semaphore("read"));
    let (to_main, from_writer) = mpsc::channel::<()>();
    let (to_writer, from_main) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let (prof, heights, written, read) = (&prof, &heights, &written, &read);
        scope.spawn(move || {
            let writer = prof.host_thread("writer");
            for f in 0..FRAMES {
                if f > 0 {
                    from_main.recv().expect("main's read");
                    writer.wait(read, f);
                }
                {
                    let _write = writer.scope("write").writes(heights);
                    std::hint::black_box((0..20_000u64).sum::<u64>());
                }
                writer.signal(written, f + 1);
                to_main.send(()).expect("the main thread");
            }
        });
        let main = prof.host_thread("main");
        for f in 0..FRAMES {
            if !broken {
                from_writer.recv().expect("the writer");
                main.wait(written, f + 1);
            }
            device
                .submit_one_shot(&[], &[], |cmd| {
                    // SAFETY: recording until the closure returns, outside a render pass.
                    let _read = unsafe { queue.scope(cmd, "draw") }.reads(heights);
                    // SAFETY: recording; the device's buffer (the copy reads it into itself).
                    unsafe {
                        let region = vk::BufferCopy { src_offset: 0, dst_offset: 2048, size: 1024 };
                        d.cmd_copy_buffer(cmd, buffer.buffer(), buffer.buffer(), &[region]);
                    }
                })
                .expect("a submission");
            queue.waited(queue.submitted(&[], &[]));
            if broken {
                from_writer.recv().expect("the writer");
                main.wait(written, f + 1);
            }
            main.signal(read, f + 1);
            let _ = to_writer.send(());
            prof.end_frame().expect("end_frame");
        }
    });
    let capture = prof.finish().expect("finish");
    engine.assert_silent("the program under validation");
    drop((queue, buffer));
    drop(device);
    engine.finish("teardown");
    Some(capture)
}

/// The main thread's items of one frame, as "kind semaphore value" and scope names.
fn main_items(capture: &Capture) -> Vec<String> {
    let t = capture.timeline();
    let main = t.names.tracks.iter().position(|t| t.name == "main").expect("a main track");
    t.items[main]
        .iter()
        .take(5)
        .map(|i| match i {
            Item::Scope(s) => s.name.to_string(),
            Item::Sync(s) => format!("{} {} {}", s.kind.name(), t.names.semaphore(s.semaphore).name, s.value),
        })
        .collect()
}

#[test]
fn each_program_is_recorded_as_it_ran() {
    let test = "each_program_is_recorded_as_it_ran";
    let Some(good) = run(test, false) else { return };
    let Some(bad) = run(test, true) else { return };
    for c in [&good, &bad] {
        let t = c.timeline();
        assert_eq!((c.stats().lost, c.stats().dropped_full), (0, 0));
        let scopes = |name: &str| {
            t.items.iter().flatten().filter(|i| matches!(i, Item::Scope(s) if &*s.name == name)).count()
                as u64
        };
        assert_eq!((scopes("write"), scopes("draw")), (FRAMES, FRAMES));
        let signals = t
            .items
            .iter()
            .flatten()
            .filter(|i| matches!(i, Item::Sync(s) if s.kind == SyncKind::Signal))
            .count();
        assert!(signals as u64 >= 3 * FRAMES, "written, read and the queue's join every frame");
    }
    // Correct: wait for `written`, then the submission's edge to the queue, then the fence.
    assert_eq!(
        main_items(&good),
        [
            "wait written 1",
            "signal submit:main→graphics 1",
            "wait join:graphics 1",
            "signal read 1",
            "wait written 2"
        ]
    );
    // Broken: the submission goes first; the wait for `written` comes after the read.
    assert_eq!(
        main_items(&bad),
        [
            "signal submit:main→graphics 1",
            "wait join:graphics 1",
            "wait written 1",
            "signal read 1",
            "signal submit:main→graphics 2"
        ]
    );
}

#[test]
fn the_checker_names_the_missing_wait_and_passes_the_correct_program() {
    let test = "the_checker_names_the_missing_wait_and_passes_the_correct_program";
    let Some(good) = run(test, false) else { return };
    let report = good.check();
    assert!(report.is_clean(), "{report}");
    let Some(bad) = run(test, true) else { return };
    let report = bad.check();
    // Every frame's read races that frame's write (and nothing orders them either way).
    assert!(report.violation_count >= FRAMES, "{report}");
    let first = report.violations[0].to_string();
    for part in ["unordered", "heights", "\"write\"", "\"draw\"", "host thread \"writer\"", "\"graphics\""] {
        assert!(first.contains(part), "{part:?} not in {first}");
    }
}
