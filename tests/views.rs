//! Views (issue 43): N cameras in one submission, copied out as one `(N, H, W, 4)` array. Every
//! view of a multi-view frame is the same camera drawn alone, byte for byte on lavapipe; the
//! limits and the poses are refused with their documented errors; the app's capture tiles the
//! views; the layer is validation-clean.

mod common;
#[path = "common/x11.rs"]
mod x11;
use common::*;

use ash::vk;
use clap::Parser as _;
use vkhip::app::frame::{compute_and_draw, throttle, DrawTarget};
use vkhip::app::headless::Offscreen;
use vkhip::camera::Pose;
use vkhip::embed::{EmbedError, Frames, FramesOptions, Importer};
use vkhip::image::Rgba;
use vkhip::profile::RenderMarks;
use vkhip::render::pose_push;
use vkhip::sim::WaveParams;

/// Each pose drawn alone (the app's one-view path: no `--views`) over the heights of time 0,
/// one frame each, read back.
fn alone(args: &[&str], poses: &[Pose]) -> Vec<Vec<u8>> {
    alone_over(args, poses, 0..1)
}

/// [`alone`], pose i over environment `envs[i]` of time 0 (environment 0 when there are fewer).
fn alone_over(args: &[&str], poses: &[Pose], envs: std::ops::Range<u32>) -> Vec<Vec<u8>> {
    let cli = vkhip::cli::Cli::try_parse_from(["vkhip"].iter().chain(args)).unwrap();
    let extent = vk::Extent2D { width: cli.run.size.width, height: cli.run.size.height };
    let mut o = Offscreen::new(&cli.run.common, extent).unwrap();
    assert_eq!(o.views, 1);
    let base = o.draw_target();
    let mut out = Vec::new();
    for (f, pose) in poses.iter().enumerate() {
        let f = f as u64;
        let mut marks = RenderMarks::start(f);
        throttle(&o.session, f, &mut marks).unwrap();
        let grid = o.session.grid;
        let env = if envs.len() > 1 { envs.start + f as u32 } else { 0 };
        let heights = WaveParams::at_time(grid, 0.0).env(env);
        let params: Vec<_> = o.session.sync.due(f).map(|_| heights).collect();
        let target = DrawTarget { push: pose_push(pose, grid, extent), ..base };
        compute_and_draw(&mut o.session, &mut o.renderer, f, &params, &target, &mut marks).unwrap();
        out.push(o.target.read_rgba(&o.session.ctx, o.target_done(f + 1)).unwrap());
    }
    out
}

/// Frame 0 (time 0) of `Frames` with `views` and `args`, after `poses` (if given): the host's
/// bytes, and the frame's views.
fn first_frame(args: &[&str], views: u32, poses: Option<&[Pose]>) -> (Vec<u8>, u32) {
    let mut frames =
        Frames::new(&FramesOptions::new(args.iter().copied(), 2, Importer::Host).with_views(views)).unwrap();
    assert_eq!(frames.views(), views);
    assert_eq!(frames.poses(), Pose::default_spread(views));
    if let Some(p) = poses {
        frames.set_poses(p).unwrap();
    }
    let info = frames.render().unwrap();
    frames.wait_ready_host(0).unwrap();
    let (ptr, len) = frames.host_bytes(info.slot).expect("lavapipe's memory is host-visible");
    let (w, h) = frames.extent();
    assert_eq!(len, views as usize * h as usize * w as usize * 4);
    // SAFETY: the mapping holds `len` bytes; frame 0's copy is done and not released.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
    frames.release_host(0).unwrap();
    (bytes, info.views)
}

fn assert_views_equal(name: &str, multi: &[u8], alone: &[Vec<u8>]) {
    let per_view = multi.len() / alone.len();
    for (i, (got, want)) in multi.chunks_exact(per_view).zip(alone).enumerate() {
        let differ = got.iter().zip(want).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "{name}: view {i} differs from its camera alone in {differ} bytes");
    }
    // The cameras are not all the same picture (the spread moves the camera).
    if alone.len() > 1 {
        assert_ne!(alone[0], alone[1], "{name}: views 0 and 1 are the same picture");
    }
}

#[test]
fn every_view_is_its_camera_alone_byte_for_byte() {
    let validation =
        require_part("every_view_is_its_camera_alone", "under validation", Component::ValidationLayer);
    let before = vkhip::vk::instance::ValidationCounts::current();
    for (n, size, backend) in
        [(1, "33x17", "cpu"), (2, "40x30", "vulkan"), (7, "31x23", "cpu"), (64, "17x13", "cpu")]
    {
        let name = format!("--views {n} --size {size} --backend {backend}");
        let mut args = vec!["--grid", "24x20", "--size", size, "--backend", backend];
        if validation && n == 7 {
            args.push("--validation");
        }
        let poses = Pose::default_spread(n);
        let (multi, views) = first_frame(&args, n, None);
        assert_eq!(views, n);
        assert_views_equal(&name, &multi, &alone(&args, &poses));
    }
    if validation {
        let after = vkhip::vk::instance::ValidationCounts::current();
        let new = (after.errors - before.errors, after.warnings - before.warnings);
        assert_eq!(new, (0, 0), "validation messages: {after}");
    }
}

/// `--envs N`: view i draws environment i (each at its own phase), byte for byte as its camera
/// alone over that environment's heights; `verify` checks every environment's values against
/// the CPU reference, for both backends that write them.
#[test]
fn each_view_follows_its_own_environment() {
    for backend in ["cpu", "vulkan"] {
        let args = ["--grid", "20x18", "--size", "27x19", "--backend", backend];
        let mut with_envs: Vec<&str> = args.to_vec();
        with_envs.extend(["--envs", "6"]);
        let (multi, _) = first_frame(&with_envs, 6, None);
        let each = alone_over(&args, &Pose::default_spread(6), 0..6);
        assert_views_equal(&format!("--envs 6 --backend {backend}"), &multi, &each);
        // Not the same picture as every view over environment 0.
        let (shared, _) = first_frame(&args, 6, None);
        let per_view = shared.len() / 6;
        assert_eq!(shared[..per_view], multi[..per_view], "view 0 sees environment 0 either way");
        assert_ne!(shared[per_view..], multi[per_view..], "{backend}: views 1.. ignored their environments");
        let o = run(vkhip().args(["verify", "--frames", "3", "--views", "6", "--envs", "6"]).args(args));
        assert_ok(&o, &format!("verify --envs 6 --backend {backend}"));
        let line = stdout(&o);
        assert!(
            line.contains("verify: PASS") && line.contains("values=6480") && line.contains("views=6 envs=6"),
            "{line}"
        );
    }
}

#[test]
fn poses_set_by_the_caller_are_each_views_camera() {
    let args = ["--grid", "16x16", "--size", "29x21", "--backend", "cpu"];
    let poses = [
        Pose::look_at([0.0, 3.0, 0.01], [0.0, 0.0, 0.0]),
        Pose { eye: [2.0, 0.5, -2.0], target: [0.2, 0.0, 0.1], up: [0.0, 1.0, 0.0], fov_y_deg: 30.0 },
        Pose { eye: [-1.5, 1.0, 1.5], target: [0.0, 0.0, 0.0], up: [0.3, 1.0, 0.0], fov_y_deg: 70.0 },
    ];
    let (multi, _) = first_frame(&args, 3, Some(&poses));
    assert_views_equal("three poses", &multi, &alone(&args, &poses));
    // One view with a pose: the same picture as the pose drawn alone.
    let (one, _) = first_frame(&args, 1, Some(&poses[1..2]));
    assert_views_equal("one pose", &one, &alone(&args, &poses[1..2]));
}

#[test]
fn bad_poses_and_counts_are_refused_with_their_reason() {
    let args = ["--grid", "16x16", "--size", "16x16", "--backend", "cpu"];
    let mut frames = Frames::new(&FramesOptions::new(args, 2, Importer::Host).with_views(2)).unwrap();
    let good = Pose::default_spread(2);
    let err = |e: EmbedError| {
        assert!(e.is_environment(), "{e:?}");
        e.to_string()
    };
    assert_eq!(err(frames.set_poses(&good[..1]).unwrap_err()), "1 poses for 2 views");
    let eye_at_target = [good[0], Pose { target: good[1].eye, ..good[1] }];
    assert_eq!(err(frames.set_poses(&eye_at_target).unwrap_err()), "pose 1: the eye is the target");
    let nan = [Pose { fov_y_deg: f32::NAN, ..good[0] }, good[1]];
    assert_eq!(err(frames.set_poses(&nan).unwrap_err()), "pose 0: a value is not finite");
    let wide = [good[0], Pose { fov_y_deg: 180.0, ..good[1] }];
    assert_eq!(err(frames.set_poses(&wide).unwrap_err()), "pose 1: fov_y_deg 180 is outside (0, 180)");
    let up = [Pose { up: [0.0, 0.0, 0.0], ..good[0] }, good[1]];
    assert_eq!(
        err(frames.set_poses(&up).unwrap_err()),
        "pose 0: up is zero or parallel to the view direction"
    );
    assert_eq!(frames.poses(), good, "a refused set changes nothing");
    frames.set_poses(&good).unwrap();
    frames.render().unwrap();
}

#[test]
fn limits_and_bad_combinations_are_refused_before_the_driver() {
    let args = ["--grid", "16x16", "--size", "16x16", "--backend", "cpu"];
    let open = |views: u32, extra: &[&str]| {
        let all: Vec<&str> = args.iter().chain(extra).copied().collect();
        Frames::new(&FramesOptions::new(all, 2, Importer::Host).with_views(views)).err().expect("refused")
    };
    // Past the layers of the device (lavapipe: 2048), named with the device's value.
    match open(65536, &[]) {
        EmbedError::Limit { limit, device, asked, what } => {
            assert!(limit == "maxImageArrayLayers" || limit == "maxFramebufferLayers", "{limit}");
            assert!(device < 65536 && device > 0);
            assert_eq!((asked, what.as_str()), (65536, "--views 65536"));
        }
        e => panic!("not a limit: {e:?}"),
    }
    let e = open(65536, &[]).to_string();
    assert!(e.starts_with("--views 65536: 65536 is past this device's max"), "{e}");
    // E height fields past maxStorageBufferRange (lavapipe: 128 MiB): found by the session's
    // start (through its transparent error), still a `Limit` with the device's value.
    let big = ["--grid", "512x512", "--size", "16x16", "--backend", "cpu", "--envs", "200"];
    let e = Frames::new(&FramesOptions::new(big, 2, Importer::Host).with_views(200)).err().expect("refused");
    let asked = 200 * 512 * 512 * 4;
    match &e {
        EmbedError::Limit { limit, device, asked: a, what } => {
            assert_eq!(
                (limit.as_str(), *a, what.as_str()),
                ("maxStorageBufferRange", asked, "--envs 200 of --grid 512x512 (bytes)")
            );
            assert!(*device < asked && *device > 0, "{device}");
        }
        e => panic!("not a limit: {e:?}"),
    }
    assert!(e.is_environment());
    assert!(e.to_string().contains("is past this device's maxStorageBufferRange"), "{e}");
    // No bound of the parser's own above 1: any count past the device's is that limit, up to
    // u32's last.
    for n in [65537, u32::MAX] {
        match open(n, &[]) {
            EmbedError::Limit { limit, asked, .. } => {
                assert!(limit == "maxImageArrayLayers" || limit == "maxFramebufferLayers", "{limit}");
                assert_eq!(asked, u64::from(n));
            }
            e => panic!("--views {n}: not a limit: {e:?}"),
        }
    }
    assert!(matches!(open(0, &[]), EmbedError::Usage { .. }));
    let e = open(8, &["--envs", "3"]);
    assert_eq!(
        e.to_string(),
        "--envs 3: 1 or --views (8): view i sees environment i, or every view environment 0"
    );
    assert!(e.is_environment());
    // The app refuses the same, with exit code 2.
    let o = run(vkhip().args(["--headless", "--frames", "2", "--views", "2", "--post", "outline"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--views 2 with --post"), "{}", stderr(&o));
    let o = run(vkhip().args(["--headless", "--frames", "2", "--views", "100000"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--views 100000: 100000 is past this device's max"), "{}", stderr(&o));
    // A window takes views (tiled) as a headless run does.
    let cli = vkhip::cli::Cli::try_parse_from(["vkhip", "--views", "3"]).unwrap();
    assert!(vkhip::cli::check_run(&cli.run, false).is_ok());
}

#[test]
fn the_apps_capture_tiles_the_views_of_its_frame() {
    let dir = temp_dir("views-capture");
    let png = dir.join("views.png");
    let args = ["--grid", "24x20", "--size", "30x22", "--backend", "cpu"];
    let o =
        run(vkhip().args(["--headless", "--frames", "1", "--views", "5", "--capture"]).arg(&png).args(args));
    assert_ok(&o, "--views 5 --capture");
    let tiled = Rgba::read_png(&png).unwrap();
    // ⌈√5⌉ = 3 columns, 2 rows.
    assert_eq!((tiled.width, tiled.height), (90, 44));
    let (multi, _) = first_frame(&args, 5, None);
    assert_eq!(tiled.pixels, Rgba::tiled(&multi, 30, 22, 5).pixels, "the capture is frame 0's views, tiled");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gpu_times_give_the_draw_and_the_copy() {
    let args = ["--grid", "16x16", "--size", "32x32", "--backend", "vulkan"];
    // The same twelve frames with and without timing: only the timed ones give times.
    let run = |options: &FramesOptions| {
        let mut frames = Frames::new(options).unwrap();
        for f in 0..12 {
            frames.render().unwrap();
            frames.wait_ready_host(f).unwrap();
            frames.release_host(f).unwrap();
        }
        frames
    };
    let mut untimed = run(&FramesOptions::new(args, 2, Importer::Host).with_views(4));
    assert_eq!(untimed.gpu_times().unwrap(), None, "timed only when asked");
    let mut frames = run(&FramesOptions::new(args, 2, Importer::Host).with_views(4).with_gpu_times());
    let times = frames.gpu_times().unwrap().expect("lavapipe has timestamps");
    assert!(times.frames > 0 && times.draw_ns_p50 > 0.0 && times.copy_ns_p50 > 0.0, "{times:?}");
    assert_eq!(times.raster_ns_p50, times.draw_ns_p50 + times.copy_ns_p50);
}

/// `view()` with `--views 3 --envs 3`: the caller's writer gets `(3, rows, cols)` heights; filled
/// with the CPU reference of every environment, the run draws what the cpu backend draws.
#[test]
fn a_writer_gets_every_environment_and_draws_what_the_backend_draws() {
    use vkhip::embed::{view, HeightTarget, HeightWriter, ViewOptions, WriterApi, WriterError};
    use vkhip::sim::{fill_reference, Grid};

    struct Envs;
    impl HeightWriter for Envs {
        fn write(&mut self, _frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError> {
            let HeightTarget::Host { heights, cols, rows, envs, .. } = target else {
                return Err(WriterError("a host writer".into()));
            };
            if envs != 3 || heights.len() != (3 * cols * rows) as usize {
                return Err(WriterError(format!("{envs} environments, {} values", heights.len())));
            }
            let p = WaveParams::at_time(Grid { width: cols, height: rows }, time_s).with_envs(envs);
            fill_reference(&p, heights);
            Ok(())
        }
    }
    let dir = temp_dir("views-writer");
    let args =
        ["--headless", "--frames", "2", "--views", "3", "--envs", "3", "--grid", "16x16", "--size", "24x20"];
    let png = dir.join("writer.png");
    let mut with_capture: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    with_capture.extend(["--capture".into(), png.display().to_string()]);
    let outcome = view(&ViewOptions::new(with_capture, WriterApi::Host), Box::new(Envs)).unwrap();
    assert_eq!(outcome.frames, 2);
    let cpu_png = dir.join("cpu.png");
    let o = run(vkhip().args(args).args(["--backend", "cpu", "--capture"]).arg(&cpu_png));
    assert_ok(&o, "the cpu backend's run");
    assert_eq!(Rgba::read_png(&png).unwrap().pixels, Rgba::read_png(&cpu_png).unwrap().pixels);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The profiler with views: one draw scope a frame, the protocol's hand-offs as without views,
/// and the checker finds every access ordered.
#[test]
fn a_trace_of_views_passes_the_checker() {
    let dir = temp_dir("views-trace");
    let trace = dir.join("views.json");
    for backend in ["vulkan", "cpu"] {
        let o = run(vkhip()
            .args(["--headless", "--frames", "12", "--views", "6", "--size", "40x30", "--grid", "24x20"])
            .args(["--backend", backend, "--trace"])
            .arg(&trace));
        assert_ok(&o, backend);
        assert!(stdout(&o).contains("  views        6 per frame"), "{}", stdout(&o));
        let c = run(vkhip().arg("trace").arg("check").arg(&trace));
        assert_ok(&c, "trace check");
        assert!(stdout(&c).contains("12 frames") && stdout(&c).contains(" 0 violation(s)"), "{}", stdout(&c));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Views under the Khronos layer (synchronization validation on): 0 errors and 0 warnings in
/// the sync modes, shapes and submission shapes lavapipe runs, with environments and the overlay.
#[test]
fn views_are_validation_clean_in_every_mode() {
    if !require("views_are_validation_clean_in_every_mode", Component::ValidationLayer) {
        return;
    }
    let runs: &[&[&str]] = &[
        &["--backend", "vulkan"],
        &["--backend", "vulkan", "--sync", "blocking"],
        &["--backend", "vulkan", "--sync", "binary", "--slots", "1"],
        &["--backend", "vulkan", "--envs", "4", "--submit", "split"],
        &["--backend", "cpu", "--slots", "4", "--run-ahead", "2", "--batch", "2"],
        &["--backend", "cpu", "--envs", "4", "--overlay"],
    ];
    for args in runs {
        let o = run(vkhip()
            .args([
                "--headless",
                "--validation",
                "--views",
                "4",
                "--frames",
                "8",
                "--size",
                "48x40",
                "--grid",
                "24x24",
            ])
            .args(*args));
        assert_ok(&o, &format!("{args:?}"));
        let line =
            stdout(&o).lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default().to_string();
        assert!(line.starts_with("validation: 0 errors, 0 warnings"), "{args:?}: {line}\n{}", stderr(&o));
    }
}

/// A window shows the views tiled: with `--views 4` each quarter of a screenshot taken from
/// outside shows a surface (not only the background), and the four quarters differ.
#[test]
fn a_window_shows_the_views_tiled() {
    let test = "a_window_shows_the_views_tiled";
    if !x11::tools_present(test) {
        return;
    }
    let mut x = x11::Xvfb::start();
    let mut app = vkhip()
        .env("DISPLAY", &x.display)
        .args([
            "--views",
            "4",
            "--max-fps",
            "30",
            "--size",
            "320x200",
            "--grid",
            "32x32",
            "--backend",
            "vulkan",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vkhip");
    x.wait_for_vkhip_window(&mut app);
    let quarter = |img: &Rgba, q: u32| -> Vec<[u8; 4]> {
        let (x0, y0) = ((q % 2) * 160, (q / 2) * 100);
        (y0..y0 + 100)
            .flat_map(|y| (x0..x0 + 160).map(move |x| (x, y)))
            .map(|(x, y)| {
                let i = ((y * img.width + x) * 4) as usize;
                [img.pixels[i], img.pixels[i + 1], img.pixels[i + 2], img.pixels[i + 3]]
            })
            .collect()
    };
    let t0 = std::time::Instant::now();
    let result = loop {
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(app.try_wait().unwrap().is_none(), "vkhip exited early");
        let img = x11::crop(&x.screenshot(), 320, 200);
        let background = quarter(&img, 0)[0];
        let quarters: Vec<Vec<[u8; 4]>> = (0..4).map(|q| quarter(&img, q)).collect();
        let drawn = quarters.iter().all(|q| q.iter().filter(|p| **p != background).count() > 1000);
        let distinct = (0..4).all(|a| (a + 1..4).all(|b| quarters[a] != quarters[b]));
        // Tiles, not one view over the window: the lines between the tiles are background.
        let at = |x: u32, y: u32| img.pixels[((y * 320 + x) * 4) as usize..][..4] == background;
        let middle = (0..320).map(|x| at(x, 100)).chain((0..200).map(|y| at(160, y)));
        let tiled = middle.filter(|&b| b).count() >= 480;
        let drawn = drawn && tiled;
        if (drawn && distinct) || t0.elapsed() > std::time::Duration::from_secs(20) {
            break (drawn, distinct, img);
        }
    };
    let _ = app.kill();
    let _ = app.wait();
    let (drawn, distinct, img) = result;
    if !(drawn && distinct) {
        let png = temp_dir("views-window").join("window.png");
        img.write_png(&png).unwrap();
        panic!("views not tiled (drawn {drawn}, distinct {distinct}): {}", png.display());
    }
}
