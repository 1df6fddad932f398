//! The profiler's best path on the interop crate's own device (`vulkan::Device::open`), which
//! enables calibrated timestamps and `hostQueryReset` where the device has them (lavapipe has
//! both): a calibrated clock that re-anchors while the frames run, queries reset on the host and
//! reused many times over. Under the Khronos validation layer (with synchronization validation)
//! when it is installed, loaded through the environment as `scripts/validation-layer.sh` does:
//! this file holds one test, so the environment is this test's alone.

#[path = "../../vkhip-interop/tests/common/skip.rs"]
mod skip;

use ash::vk;
use std::time::Duration;
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_profile::model::Item;
use vkhip_profile::{Options, Profiler};

const FRAMES: u64 = 40;

/// Load the layer for every instance made from now on, logging every message to a file; the
/// file's path.
fn validation_log(test: &str) -> Option<std::path::PathBuf> {
    if !skip::require_part(test, "validation part", skip::Component::ValidationLayer) {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("vkhip-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let log = dir.join("validation.log");
    let settings = dir.join("vk_layer_settings.txt");
    std::fs::write(
        &settings,
        format!(
            "khronos_validation.report_flags = error,warn,perf,info\n\
             khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n\
             khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT\n\
             khronos_validation.log_filename = {}\n",
            log.display()
        ),
    )
    .expect("the layer's settings");
    // One test in this binary: nothing else reads the environment concurrently.
    std::env::set_var("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation");
    std::env::set_var("VK_LAYER_SETTINGS_PATH", &settings);
    Some(log)
}

/// The layer's messages in `log`, but its own "I am active" one (which must be there).
fn messages(log: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).expect("the layer wrote its log");
    assert!(
        text.contains("UNASSIGNED-khronos-validation-createinstance-status-message"),
        "the layer did not load:\n{text}"
    );
    text.lines()
        .filter(|l| l.contains("msgNum:") && !l.contains("createinstance-status-message"))
        .map(str::to_string)
        .collect()
}

#[test]
fn calibrated_clock_and_host_query_reset_on_the_crates_own_device() {
    let test = "calibrated_clock_and_host_query_reset_on_the_crates_own_device";
    let log = validation_log(test);
    let device = Device::open(&[], Importer::Hip).expect("a Vulkan device (lavapipe)");
    let optional = device.optional_features();
    assert!(optional.host_query_reset, "{}: hostQueryReset is not enabled", device.describe());
    let ext = optional.calibrated_timestamps.expect("lavapipe offers VK_EXT_calibrated_timestamps");
    let buffer = device.shared_buffer(1 << 16).expect("a buffer");
    let d = device.ash();

    // 8 queries: two scopes a frame reuse them 20 times over.
    let prof =
        Profiler::new(&device, Options { queries_per_queue: 8, ..Options::default() }).expect("a profiler");
    let queue = prof.vulkan_queue("graphics").expect("a queue track");
    let host = prof.host_thread("main");
    let mut brackets = Vec::new();
    for f in 0..FRAMES {
        let before = vkhip_profile::clock::host_now_ns();
        device
            .submit_one_shot(&[], &[], |cmd| {
                // SAFETY: recording until the closure returns; outside any render pass.
                let _frame = unsafe { queue.scope(cmd, "frame") };
                let _fill = unsafe { queue.scope(cmd, "fill") };
                // SAFETY: recording; the device's buffer.
                unsafe { d.cmd_fill_buffer(cmd, buffer.buffer(), 0, vk::WHOLE_SIZE, f as u32) };
            })
            .expect("a submission");
        queue.waited(queue.submitted(&[], &[]));
        brackets.push((before, vkhip_profile::clock::host_now_ns()));
        prof.end_frame().expect("end_frame");
        std::thread::sleep(Duration::from_millis(4)); // 160 ms in all: the clock re-anchors
    }
    let capture = prof.finish().expect("finish");
    let t = capture.timeline();
    let stats = capture.stats();
    assert_eq!((stats.dropped_full, stats.lost), (0, 0), "{stats:?}");

    let clock = &capture.clocks()[0];
    assert!(
        clock.method.starts_with(ext.to_str().unwrap_or_default())
            && clock.method.contains("re-anchored every 50 ms"),
        "{}",
        clock.method
    );
    assert!(clock.anchors >= 3, "{clock:?}");
    assert!(clock.accuracy_ns < 1_000_000, "{clock:?}");
    let accuracy = t.names.track(queue.track()).accuracy_ns;
    assert_eq!(accuracy, clock.accuracy_ns);
    let scopes: Vec<_> = t.items[queue.track().0 as usize]
        .iter()
        .filter_map(|i| if let Item::Scope(s) = i { Some(s) } else { None })
        .collect();
    assert_eq!(scopes.len() as u64, 2 * FRAMES);
    for (f, pair) in scopes.chunks(2).enumerate() {
        let (before, after) = brackets[f];
        assert_eq!((&*pair[0].name, &*pair[1].name, pair[0].frame), ("frame", "fill", f as u64));
        assert!(pair[0].start_ns <= pair[1].start_ns && pair[1].end_ns <= pair[0].end_ns, "{pair:#?}");
        assert!(
            pair[0].start_ns + accuracy >= before && pair[0].end_ns <= after + accuracy,
            "frame {f}: {:?} outside {before}..{after} ±{accuracy}",
            pair[0]
        );
    }
    drop((queue, host, capture, buffer));
    drop(device);
    if let Some(log) = log {
        let messages = messages(&log);
        assert!(messages.is_empty(), "{} validation message(s):\n{}", messages.len(), messages.join("\n"));
        if let Some(dir) = log.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
