//! wgpu's queue as a track on lavapipe (feature `wgpu`): `WgpuDevice::open` enables calibrated
//! timestamps and `hostQueryReset` through wgpu-hal's device callback; scopes placed around a
//! submit's command buffers resolve, nest and lie inside the host's bracket of the submit; wgpu's
//! validation (and the Khronos layer, when installed) reports nothing.

#[path = "../../vkhip-interop/tests/common/skip.rs"]
mod skip;

use std::future::Future;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use vkhip_interop::vulkan::Importer;
use vkhip_interop::wgpu_interop::WgpuDevice;
use vkhip_profile::model::Item;
use vkhip_profile::{Api, Options, Profiler};

/// wgpu's warnings and errors (its debug messenger logs the layer's messages through `log`).
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Collect;

impl log::Log for Collect {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) && r.target().starts_with("wgpu") {
            MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).push(format!(
                "{} {}: {}",
                r.level(),
                r.target(),
                r.args()
            ));
        }
    }

    fn flush(&self) {}
}

static COLLECT: Collect = Collect;

fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a wgpu future was not ready"),
    }
}

const FRAMES: u64 = 10;

#[test]
fn scopes_around_wgpu_submits_on_the_gpu_clock() {
    let test = "scopes_around_wgpu_submits_on_the_gpu_clock";
    let validated = skip::require_part(test, "validation part", skip::Component::ValidationLayer);
    let _ = log::set_logger(&COLLECT);
    log::set_max_level(log::LevelFilter::Warn);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    if validated {
        desc.flags = wgpu::InstanceFlags::VALIDATION;
    }
    let instance = wgpu::Instance::new(desc);
    let adapter = ready(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).expect("lavapipe");
    let gpu = WgpuDevice::open(&adapter, &Default::default(), Importer::Hip).expect("a wgpu device");
    let optional = gpu.vulkan().optional_features();
    assert!(optional.host_query_reset && optional.calibrated_timestamps.is_some(), "{optional:?}");
    let (device, queue) = (gpu.device(), gpu.queue());
    let new_buffer = || {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 1 << 16,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    };
    let (buffer, copy) = (new_buffer(), new_buffer());

    let prof = Profiler::new(gpu.vulkan(), Options { queries_per_queue: 8, ..Options::default() })
        .expect("a profiler");
    let render = prof.wgpu_queue("render", &gpu).expect("a wgpu queue track");
    let host = prof.host_thread("main");
    let target = prof.resource("buffer");
    let mut brackets = Vec::new();
    for _ in 0..FRAMES {
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.clear_buffer(&buffer, 0, None);
        encoder.copy_buffer_to_buffer(&buffer, 0, &copy, 0, 1 << 16);
        let before = vkhip_profile::clock::host_now_ns();
        let frame = render.scope("frame");
        let work = render.scope("work").writes(&target);
        let index = queue.submit(frame.around(work.around([encoder.finish()])));
        let submission = render.submitted(&[], &[]);
        device.poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None }).expect("poll");
        render.waited(submission);
        brackets.push((before, vkhip_profile::clock::host_now_ns()));
        prof.end_frame().expect("end_frame");
    }
    // A scope made and never placed around anything: counted, never waited for.
    drop(render.scope("never placed"));
    let capture = prof.finish().expect("finish");
    let t = capture.timeline();
    let r = render.track();
    assert_eq!(t.names.track(r).api, Api::Wgpu);
    assert!(t.names.track(r).clock.contains("calibrated_timestamps"), "{}", t.names.track(r).clock);
    let accuracy = t.names.track(r).accuracy_ns;
    let scopes: Vec<_> = t.items[r.0 as usize]
        .iter()
        .filter_map(|i| if let Item::Scope(s) = i { Some(s) } else { None })
        .collect();
    assert_eq!(scopes.len() as u64, 2 * FRAMES, "{scopes:#?}");
    for (f, pair) in scopes.chunks(2).enumerate() {
        let (outer, inner) = (pair[0], pair[1]);
        assert_eq!((&*outer.name, outer.depth, &*inner.name, inner.depth), ("frame", 0, "work", 1));
        assert_eq!(inner.accesses.len(), 1);
        assert!(outer.start_ns <= inner.start_ns && inner.end_ns <= outer.end_ns, "{pair:#?}");
        let (before, after) = brackets[f];
        assert!(
            outer.start_ns + accuracy >= before && outer.end_ns <= after + accuracy,
            "frame {f}: {outer:?} outside {before}..{after} ±{accuracy}"
        );
    }
    let stats = capture.stats();
    assert_eq!(
        (stats.lost, stats.never_submitted, stats.failed_ends),
        (0, 1, 1),
        "the unplaced scope: {stats:?}"
    );
    drop((render, host, capture, buffer, copy));
    drop(gpu);
    let messages = MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(messages.is_empty(), "{} wgpu message(s):\n{}", messages.len(), messages.join("\n"));
}
