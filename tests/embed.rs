//! The embedding API (`vkhip::embed`, issue 38's "both directions") on lavapipe: the viewer
//! driven by a caller's writer draws what `--backend cpu` draws; a writer's failure stops the
//! run with its message; the args are the app's; frames reach the host through the shared
//! buffers, each the app's own capture of that frame.

mod common;
use common::*;
use std::sync::{Arc, Mutex};
use vkhip::embed::{
    view, EmbedError, Frames, FramesOptions, HeightTarget, HeightWriter, Importer, ViewOptions, WriterApi,
    WriterError,
};
use vkhip::image::Rgba;
use vkhip::sim::{fill_reference, Grid, WaveParams};

/// (frame, time) of each call of a writer.
type Calls = Arc<Mutex<Vec<(u64, f64)>>>;

/// Writes the CPU reference sine wave (or zeros), recording (frame, time) of each call; fails
/// at `fail_at` with a message naming the frame.
struct Wave {
    calls: Calls,
    flat: bool,
    fail_at: Option<u64>,
}

impl HeightWriter for Wave {
    fn write(&mut self, frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError> {
        self.calls.lock().unwrap().push((frame, time_s));
        if self.fail_at == Some(frame) {
            return Err(WriterError(format!("the writer gave up at frame {frame}")));
        }
        let HeightTarget::Host { heights, cols, rows, .. } = target else {
            return Err(WriterError("expected the host path".into()));
        };
        assert_eq!(heights.len(), cols as usize * rows as usize);
        if self.flat {
            heights.fill(0.0);
        } else {
            fill_reference(&WaveParams::at_time(Grid { width: cols, height: rows }, time_s), heights);
        }
        Ok(())
    }
}

fn wave(flat: bool, fail_at: Option<u64>) -> (Box<Wave>, Calls) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    (Box::new(Wave { calls: calls.clone(), flat, fail_at }), calls)
}

const RUN: [&str; 9] =
    ["--headless", "--frames", "5", "--grid", "48x40", "--size", "200x150", "--slots", "2"];

/// `vkhip --backend cpu` with `args`, its last frame captured to `png`.
fn cpu_capture(args: &[&str], png: &std::path::Path) -> Rgba {
    let o = run(vkhip().args(args).args(["--backend", "cpu", "--capture"]).arg(png));
    assert_ok(&o, "vkhip --backend cpu");
    Rgba::read_png(png).unwrap()
}

#[test]
fn a_host_writer_of_the_reference_draws_what_the_cpu_backend_draws() {
    let dir = temp_dir("embed-view");
    let (ours, theirs, flat) = (dir.join("writer.png"), dir.join("cpu.png"), dir.join("flat.png"));
    let with = |png: &std::path::Path| {
        RUN.iter()
            .map(|s| s.to_string())
            .chain(["--capture".into(), png.display().to_string()])
            .collect::<Vec<_>>()
    };
    let (writer, calls) = wave(false, None);
    let trace = dir.join("trace.json");
    let args: Vec<String> =
        with(&ours).into_iter().chain(["--trace".into(), trace.display().to_string()]).collect();
    let outcome = view(&ViewOptions::new(args, WriterApi::Host), writer).unwrap();
    assert_eq!(outcome.frames, 5);
    assert!(outcome.report.contains("bridged"), "{}", outcome.report);
    // The app's trace, and its checker proves the protocol's orderings from it.
    let check = run(vkhip().args(["trace", "check"]).arg(&trace));
    assert_ok(&check, "vkhip trace check of the writer's run");
    assert_eq!(outcome.capture.as_deref(), Some(ours.as_path()));
    assert!(outcome.report.contains("the caller's writer on the host"), "{}", outcome.report);
    // Every frame once, at the time the sine wave uses (`--time frame`, dt 1/60).
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    for (f, t) in calls {
        assert_eq!(t, f as f64 * (1.0 / 60.0), "frame {f}");
    }
    let a = Rgba::read_png(&ours).unwrap();
    assert_shows_surface(&a, "the writer's frame");
    let b = cpu_capture(&RUN, &theirs);
    assert_eq!((a.width, a.height), (b.width, b.height));
    let differ = a.pixels.chunks_exact(4).zip(b.pixels.chunks_exact(4)).filter(|(x, y)| x != y).count();
    assert_eq!(differ, 0, "{differ} pixels differ from --backend cpu's frame");
    // What the writer writes is what is drawn: a flat field is another picture.
    let (writer, _) = wave(true, None);
    view(&ViewOptions::new(with(&flat), WriterApi::Host), writer).unwrap();
    assert_ne!(Rgba::read_png(&flat).unwrap().pixels, a.pixels);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_writer_stops_the_run_with_its_message() {
    let (writer, calls) = wave(false, Some(3));
    let args = ["--headless", "--frames", "200", "--grid", "16x16", "--size", "32x32", "--slots", "2"];
    let err = view(&ViewOptions::new(args, WriterApi::Host), writer).unwrap_err();
    assert!(matches!(err, EmbedError::Writer(_)), "{err:?}");
    assert_eq!(err.to_string(), "the writer gave up at frame 3");
    let calls = calls.lock().unwrap().len();
    assert_eq!(calls, 4, "the writer was called again after it failed ({calls} calls)");
}

#[test]
fn the_args_are_the_apps() {
    let (writer, calls) = wave(false, None);
    let err = view(&ViewOptions::new(["--headless", "--bogus"], WriterApi::Host), writer).unwrap_err();
    let EmbedError::Usage { line, text } = &err else { panic!("{err:?}") };
    let o = run(vkhip().args(["--headless", "--bogus"]));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim_end(), format!("vkhip: error: {line} (see vkhip --help)"));
    assert!(line.contains("'--bogus'"), "{line}");
    assert!(text.contains("Usage: vkhip"), "{text}");
    assert!(err.is_environment());
    // --help is the app's text, not an error of ours.
    let (writer, _) = wave(false, None);
    let help = view(&ViewOptions::new(["--help"], WriterApi::Host), writer).unwrap_err();
    let EmbedError::Help(help) = help else { panic!("{help:?}") };
    assert_eq!(help, stdout(&run(vkhip().arg("--help"))));
    // The writer is the backend.
    let (writer, _) = wave(false, None);
    let err = view(&ViewOptions::new(["--backend", "vulkan"], WriterApi::Host), writer).unwrap_err();
    assert_eq!(err.to_string(), "--backend vulkan: the writer is the backend here (drop --backend)");
    assert!(calls.lock().unwrap().is_empty());
}

#[test]
fn the_cuda_path_without_a_driver_is_one_environment_line_before_vulkan() {
    if vkhip_interop::cuda::driver_present() {
        eprintln!("skipped: a CUDA driver is installed (the GPU check runs the CUDA path)");
        return;
    }
    let (writer, calls) = wave(false, None);
    // `--device 99` would be Vulkan's error had a Vulkan device been looked for first.
    let args = ["--headless", "--frames", "3", "--device", "99"];
    let err = view(&ViewOptions::new(args, WriterApi::Cuda), writer).unwrap_err();
    assert!(matches!(err, EmbedError::Environment(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "backend cuda is not available: libcuda.so not found: install the NVIDIA driver"
    );
    assert!(calls.lock().unwrap().is_empty());
}

/// Frame f of a headless `vkhip` run with `args` (in this process), as its capture.
fn app_frame(args: &[&str], frame: u64, png: &std::path::Path) -> Rgba {
    use clap::Parser as _;
    let frames = (frame + 1).to_string();
    let argv = ["vkhip", "--headless", "--frames", &frames, "--capture"]
        .into_iter()
        .map(String::from)
        .chain([png.display().to_string()])
        .chain(args.iter().map(|s| s.to_string()));
    let cli = vkhip::cli::Cli::try_parse_from(argv).unwrap();
    let ran = vkhip::app::headless::run_with(&cli.run, None).unwrap();
    assert!(ran.failed.is_none());
    Rgba::read_png(png).unwrap()
}

#[test]
fn frames_reach_the_host_through_k_shared_buffers_as_the_app_draws_them() {
    let validation = require_part("frames_reach_the_host", "under validation", Component::ValidationLayer);
    let dir = temp_dir("embed-frames");
    let args = ["--grid", "24x20", "--size", "40x30", "--backend", "cpu"];
    let checked: Vec<&str> = args.iter().copied().chain(validation.then_some("--validation")).collect();
    let before = vkhip::vk::instance::ValidationCounts::current();
    // lavapipe exports memory but no semaphore: a CUDA consumer's timelines cannot be made.
    if let Err(e) = Frames::new(&FramesOptions::new(checked.clone(), 3, Importer::Cuda)) {
        eprintln!("Importer::Cuda: {e}");
        assert!(e.is_environment(), "{e:?}");
        assert!(e.to_string().ends_with("cannot export timeline semaphores as OPAQUE_FD: a CUDA consumer waits and signals them (Importer::Host reads the frames on the host)"), "{e}");
    }
    let mut frames = Frames::new(&FramesOptions::new(checked.clone(), 3, Importer::Host)).unwrap();
    assert_eq!((frames.slots(), frames.extent()), (3, (40, 30)));
    assert!(frames.slot_memory(0).is_ok(), "lavapipe exports memory");
    assert!(frames.slot_memory(3).is_err());
    let err = frames.timeline_fds().unwrap_err();
    assert!(err.to_string().contains("Importer::Cuda"), "{err}");
    assert!(frames.wait_ready_host(0).is_err(), "nothing rendered yet");
    let mut seen = Vec::new();
    for f in 0..10u64 {
        let info = frames.render().unwrap();
        assert_eq!((info.frame, info.slot, info.ready_value), (f, (f % 3) as usize, f + 1));
        frames.wait_ready_host(f).unwrap();
        let (ptr, len) = frames.host_bytes(info.slot).expect("lavapipe's memory is host-visible");
        assert_eq!(len, 40 * 30 * 4);
        // SAFETY: the mapping holds `len` bytes, and frame f's copy is done (`ready` waited);
        // nothing writes the buffer until `released` says so.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        frames.release_host(f).unwrap();
        let png = dir.join(format!("frame{f}.png"));
        let app = app_frame(&args, f, &png);
        assert_eq!(bytes, app.pixels, "frame {f} differs from the app's capture of it");
        seen.push(bytes);
    }
    assert_ne!(seen[0], seen[9], "the surface moves between frames");
    drop(frames);
    // A host consumer holding K frames: the next copy waits on the GPU, and the held frame is
    // not overwritten; one more frame is refused (it would wait for the held frame forever);
    // teardown lets a waiting copy go.
    let mut frames = Frames::new(&FramesOptions::new(checked.clone(), 2, Importer::Host)).unwrap();
    for _ in 0..3 {
        frames.render().unwrap();
    }
    frames.wait_ready_host(1).unwrap();
    let slot0 = |frames: &Frames| {
        let (ptr, len) = frames.host_bytes(0).unwrap();
        // SAFETY: the mapping holds `len` bytes; frame 0's copy is done (frame 1's is, and the
        // queue runs them in order), and frame 2's copy into it waits for `released` ≥ 1.
        unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!frames.is_ready(2).unwrap(), "frame 2's copy ran before frame 0 was released");
    assert_eq!(
        slot0(&frames),
        app_frame(&args, 0, &dir.join("held.png")).pixels,
        "the held frame was overwritten"
    );
    let err = frames.render().unwrap_err();
    assert_eq!(err.to_string(), "frame 3: frame 0 is still held (2 frame buffers): release it first");
    frames.release_host(0).unwrap();
    frames.wait_ready_host(2).unwrap();
    assert!(frames.is_ready(2).unwrap());
    assert_eq!(slot0(&frames), app_frame(&args, 2, &dir.join("after.png")).pixels);
    frames.render().unwrap();
    frames.render().unwrap_err();
    drop(frames);
    if validation {
        let after = vkhip::vk::instance::ValidationCounts::current();
        assert_eq!(
            (after.errors - before.errors, after.warnings - before.warnings),
            (0, 0),
            "validation messages: {after}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sine wave as a caller's CUDA kernel (not the app's), launched on the stream it is given.
const WAVE_KERNEL: &str = r#"
extern "C" __global__ void wave(float* h, unsigned cols, unsigned rows, float phase, float amp, float freq) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= cols || y >= rows) return;
    float u = 2.0f * (float)x / (float)(cols - 1) - 1.0f;
    float v = 2.0f * (float)y / (float)(rows - 1) - 1.0f;
    h[y * cols + x] = amp * sinf(freq * u + phase) * cosf(freq * v + phase);
}
"#;

/// A writer launching [`WAVE_KERNEL`] on the stream of each target, recording (frame, stream).
struct GpuWave {
    cuda: vkhip_interop::cuda::Cuda,
    kernel: vkhip_interop::cuda::CudaKernel,
    streams: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl HeightWriter for GpuWave {
    fn write(&mut self, frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError> {
        let HeightTarget::Cuda { ptr, stream, cols, rows, .. } = target else {
            return Err(WriterError("expected the CUDA path".into()));
        };
        self.streams.lock().unwrap().push((frame, stream));
        let p = WaveParams::at_time(Grid { width: cols, height: rows }, time_s);
        let (mut ptr, mut cols, mut rows) = (ptr, cols, rows);
        let (mut phase, mut amp, mut freq) = (p.phase, p.amplitude, p.frequency);
        let mut args: [*mut std::ffi::c_void; 6] = [
            (&mut ptr as *mut u64).cast(),
            (&mut cols as *mut u32).cast(),
            (&mut rows as *mut u32).cast(),
            (&mut phase as *mut f32).cast(),
            (&mut amp as *mut f32).cast(),
            (&mut freq as *mut f32).cast(),
        ];
        let fail = |e: vkhip_interop::Error| WriterError(e.to_string());
        // SAFETY: `stream` is the backend's stream or the one the test lent (the legacy default
        // stream), both of the device's primary context and alive through the run.
        let on = unsafe { self.cuda.with_stream(stream) }.map_err(fail)?;
        let grid = [cols.div_ceil(16), rows.div_ceil(16), 1];
        // SAFETY: `wave` takes (float*, unsigned, unsigned, float, float, float), as `args`
        // points at; `ptr` is the slot's mapping of `cols × rows` floats, alive until the
        // stream is past the launch (the backend synchronises before its imports go).
        unsafe { on.launch(&self.kernel, grid, [16, 16, 1], &mut args) }.map_err(fail)
    }
}

/// On a GPU (skipped elsewhere): a writer launching its own kernel draws what `--backend cuda`
/// draws, on the backend's stream or a lent one, in `external` (the default there) and
/// `bridged`.
#[test]
fn the_cuda_path_draws_what_the_cuda_backend_draws() {
    let devices = match vkhip_interop::cuda::devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skipped: the CUDA path needs a GPU ({e})");
            return;
        }
    };
    let dir = temp_dir("embed-cuda");
    let base = ["--headless", "--frames", "9", "--grid", "256x256", "--size", "320x240"];
    let reference =
        app_frame(&["--grid", "256x256", "--size", "320x240", "--backend", "cuda"], 8, &dir.join("cuda.png"));
    assert_shows_surface(&reference, "--backend cuda");
    for (name, lent, sync) in
        [("own", None, "auto"), ("lent", Some(0u64), "auto"), ("bridged", None, "bridged")]
    {
        let cuda = vkhip_interop::cuda::Cuda::open(devices[0].uuid).unwrap();
        let kernel = cuda.compile(WAVE_KERNEL, "wave").unwrap();
        let streams = Arc::new(Mutex::new(Vec::new()));
        let png = dir.join(format!("{name}.png"));
        let args: Vec<String> = base
            .iter()
            .map(|s| s.to_string())
            .chain(["--sync".into(), sync.into(), "--capture".into(), png.display().to_string()])
            .collect();
        let mut options = ViewOptions::new(args, WriterApi::Cuda);
        if let Some(s) = lent {
            // SAFETY: the legacy default stream always exists.
            options = unsafe { options.with_stream(s) };
        }
        let writer = Box::new(GpuWave { cuda, kernel, streams: streams.clone() });
        let outcome = view(&options, writer).unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!("{name}:\n{}", outcome.report);
        assert_eq!(outcome.frames, 9, "{name}");
        let mode = if sync == "auto" { "external" } else { "bridged" };
        assert!(outcome.report.contains(mode), "{name}: not {mode}:\n{}", outcome.report);
        let streams = streams.lock().unwrap().clone();
        assert_eq!(streams.iter().map(|s| s.0).collect::<Vec<_>>(), (0..9).collect::<Vec<_>>(), "{name}");
        match lent {
            // CU_STREAM_LEGACY, as DLPack's 0 names it.
            Some(_) => assert!(streams.iter().all(|s| s.1 == 1), "{name}: {streams:?}"),
            None => assert!(streams.iter().all(|s| s.1 > 2 && s.1 == streams[0].1), "{name}: {streams:?}"),
        }
        let ours = Rgba::read_png(&png).unwrap();
        let d = vkhip::image::compare(&ours, &reference, vkhip::image::CHANNEL_TOLERANCE).unwrap();
        assert!(
            d.same(),
            "{name}: {} pixels over the tolerance (max channel diff {})",
            d.pixels_over,
            d.max_channel_diff
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
