//! Issue 10 ("Reliability"): bad input, environment faults and signals end in one line on stderr
//! and a documented exit code, never a panic, and never a half-written file.

mod common;
#[path = "common/x11.rs"]
mod x11;

use common::*;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// The one non-empty stderr line of `o` (asserts there is exactly one and no panic).
fn one_error_line(o: &Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!err.contains("panicked"), "panic:\n{err}");
    assert_eq!(lines.len(), 1, "expected one stderr line, got:\n{err}");
    lines[0].to_string()
}

/// Files in `dir` (names), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

// ---- item 3: captures ----

#[test]
fn an_unwritable_capture_path_fails_before_the_first_frame() {
    let dir = temp_dir("capture-early");
    let dir_png = temp_dir("capture-early-dir").join("d.png");
    std::fs::create_dir(&dir_png).unwrap();
    let cases = [
        (
            dir.join("missing").join("f.png"),
            format!("directory {} does not exist", dir.join("missing").display()),
        ),
        // A directory named like a PNG (a name without .png is refused for that first).
        (dir_png.clone(), "it is a directory".to_string()),
    ];
    for (path, why) in cases {
        let t = Instant::now();
        // A million frames would take hours: the check must come first.
        let o = run(vkhip().args(["--headless", "--frames", "1000000", "--capture"]).arg(&path));
        assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let line = one_error_line(&o);
        assert_eq!(line, format!("vkhip: error: {}: cannot write here: {why}", path.display()));
        assert!(stdout(&o).is_empty(), "no frames, no report:\n{}", stdout(&o));
    }
    assert!(listing(&dir).is_empty(), "nothing left behind: {:?}", listing(&dir));
}

#[test]
fn a_failed_capture_write_keeps_the_previous_file_and_the_report() {
    let dir = temp_dir("capture-fail");
    let png = dir.join("f.png");
    std::fs::copy(assets().join("reference-frame.png"), &png).unwrap();
    let before = std::fs::read(&png).unwrap();
    // A 2 KiB file-size limit (SIGXFSZ ignored, so the write fails with EFBIG): the pre-check
    // passes, the real write fails part-way.
    let o = run(test_env(&mut std::process::Command::new("bash"))
        .args(["-c", "trap '' XFSZ; ulimit -f 2; exec \"$@\"", "vkhip"])
        .arg(env!("CARGO_BIN_EXE_vkhip"))
        .args(["--headless", "--frames", "3", "--size", "320x180", "--capture"])
        .arg(&png)
        .env("MESA_SHADER_CACHE_DISABLE", "true"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let line = one_error_line(&o);
    assert_eq!(
        line,
        format!(
            "vkhip: error: writing the capture: {}: writing the PNG failed: File too large (os error 27) (the previous file, if any, is unchanged)",
            png.display()
        )
    );
    assert!(stdout(&o).contains("vkhip frame report"), "the report is kept:\n{}", stdout(&o));
    assert_eq!(std::fs::read(&png).unwrap(), before, "the previous capture is unchanged");
    assert_eq!(listing(&dir), vec!["f.png".to_string()], "no temporary file left behind");
}

#[test]
fn a_capture_replaces_the_previous_file_whole() {
    let dir = temp_dir("capture-ok");
    let png = dir.join("f.png");
    std::fs::write(&png, b"old").unwrap();
    let o = run(vkhip().args(["--headless", "--frames", "2", "--size", "160x90", "--capture"]).arg(&png));
    assert_ok(&o, "capture");
    let img = vkhip::image::Rgba::read_png(&png).expect("a whole PNG");
    assert_eq!((img.width, img.height), (160, 90));
    assert_eq!(listing(&dir), vec!["f.png".to_string()]);
}

// ---- item 4: no panics ----

/// A PNG whose header says `width` x `height`, with no image data.
fn png_header_only(path: &Path, width: u32, height: u32) {
    let file = std::fs::File::create(path).unwrap();
    let mut enc = png::Encoder::new(file, width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().unwrap();
    // One tiny IDAT (an empty zlib stream) so decoders get past the header; IEND follows on drop.
    w.write_chunk(png::chunk::IDAT, &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]).unwrap();
}

#[test]
fn compare_png_refuses_absurd_header_dimensions_before_allocating() {
    let dir = temp_dir("huge-png");
    let huge = dir.join("huge.png");
    png_header_only(&huge, 100_000, 100_000); // 40 GB of RGBA: used to abort
    let o = run(vkhip().arg("compare-png").arg(&huge).arg(assets().join("reference-frame.png")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let line = one_error_line(&o);
    assert!(line.starts_with(&format!("vkhip: error: {}: ", huge.display())), "{line}");
    assert!(
        line.ends_with("PNG header declares 100000x100000 pixels, more than the 268435456 vkhip reads"),
        "{line}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_and_a_full_one_in_one_line() {
    use std::process::Stdio;
    for args in [&["info"][..], &["--headless", "--frames", "2", "--size", "64x64"]] {
        // Closed: the reader is gone before vkhip writes (`vkhip info | head -0`).
        let mut child = vkhip().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).trim().is_empty(), "{args:?}: EPIPE is quiet:\n{}", stderr(&o));
        // Full: ENOSPC on every write.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = run(vkhip().args(args).stdout(full));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            one_error_line(&o),
            "vkhip: error: writing to stdout: No space left on device (os error 28)",
            "{args:?}"
        );
    }
}

// ---- windows under Xvfb ----

/// The window tests of this file run one at a time.
static X_SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The X tools are here (else a skip, or a failure under CI), and this test holds the X lock.
fn x_test(name: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    let guard = X_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    x11::tools_present(name).then_some(guard)
}

/// An Xvfb of this test's own, on a display number whose socket and lock file are absent and
/// whose unique screen size is checked to be the one that answers (as tests/common/x11.rs does),
/// started with `-noreset`: a server that resets whenever its last client (an `xdotool` poll)
/// disconnects refuses connections meanwhile, and vkhip's window then fails to open.
struct Xvfb {
    child: std::process::Child,
    display: String,
}

impl Xvfb {
    fn start() -> Xvfb {
        Xvfb::start_wide(1032)
    }

    /// A screen at least `min_width` wide (windows larger than the device can render fit on it).
    fn start_wide(min_width: u32) -> Xvfb {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let pid = std::process::id();
        let (width, height) = (min_width + 8 * (pid % 89), 776);
        for _ in 0..20 {
            let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let n = 300 + (pid * 11 + k * 17) % 600;
            let taken = |p: String| Path::new(&p).exists();
            if taken(format!("/tmp/.X11-unix/X{n}")) || taken(format!("/tmp/.X{n}-lock")) {
                continue;
            }
            let child = std::process::Command::new("Xvfb")
                .args([&format!(":{n}"), "-screen", "0", &format!("{width}x{height}x24")])
                .args(["-nolisten", "tcp", "-noreset"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start Xvfb");
            let mut x = Xvfb { child, display: format!(":{n}") };
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(10) && x.child.try_wait().ok().flatten().is_none() {
                let o = x.xdotool(&["getdisplaygeometry"]);
                if o.status.success() {
                    if stdout(&o).trim() == format!("{width} {height}") {
                        return x;
                    }
                    break; // another server answers on this display
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("could not start Xvfb on a display of its own");
    }

    fn xdotool(&self, args: &[&str]) -> Output {
        run(std::process::Command::new("xdotool").env("DISPLAY", &self.display).args(args))
    }

    /// The id of vkhip's window, waiting up to 30 s for it to appear.
    fn wait_for_vkhip_window(&mut self, app: &mut std::process::Child) -> String {
        let t = Instant::now();
        loop {
            let o = self.xdotool(&["search", "--name", "^vkhip"]);
            if let Some(id) = stdout(&o).lines().next() {
                return id.to_string();
            }
            if let Some(status) = app.try_wait().unwrap() {
                let mut err = String::new();
                if let Some(mut e) = app.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("vkhip exited ({status}) before its window appeared on {}:\n{err}", self.display);
            }
            assert!(t.elapsed() < Duration::from_secs(30), "no vkhip window after 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM first, so that the server removes its socket and lock file.
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A window vkhip runs in, under `x`.
fn window_app(x: &Xvfb, args: &[&str]) -> std::process::Child {
    vkhip()
        .env("DISPLAY", &x.display)
        .args(["--backend", "cpu", "--size", "320x200"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vkhip")
}

#[test]
fn a_window_destroyed_from_outside_ends_the_run_with_its_report() {
    let Some(_x_lock) = x_test("a_window_destroyed_from_outside_ends_the_run_with_its_report") else {
        return;
    };
    let mut x = Xvfb::start();
    let mut app = window_app(&x, &[]);
    let id = x.wait_for_vkhip_window(&mut app);
    std::thread::sleep(Duration::from_millis(500));
    let o = x.xdotool(&["windowclose", &id]); // XDestroyWindow, as a crashing WM would
    assert!(o.status.success(), "xdotool windowclose: {}", stderr(&o));
    let o = app.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(one_error_line(&o), "vkhip: the window was destroyed from outside; ending the run");
    assert!(stdout(&o).contains("vkhip frame report"), "{}", stdout(&o));
}

// ---- item 5: signals ----

/// Send `sig` to `child` `times` times back to back (as `timeout` does: process, then group).
fn signal(child: &std::process::Child, sig: i32, times: usize) {
    for _ in 0..times {
        // SAFETY: plain kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    }
}

/// Wait for `child` (at most 30 s after the signal) and return its output.
fn wait_stopped(mut child: std::process::Child) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(30), "vkhip did not stop after the signal");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn spawn(cmd: &mut std::process::Command) -> std::process::Child {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vkhip")
}

#[test]
fn sigterm_and_sighup_stop_like_ctrl_c_and_a_burst_counts_once() {
    // Exit 128 + the signal's number (issue 21: SIGTERM and SIGHUP exited 130, SIGINT's status).
    for (sig, times, code) in [(libc::SIGTERM, 2, 143), (libc::SIGHUP, 1, 129), (libc::SIGINT, 3, 130)] {
        let child =
            spawn(vkhip().args(["--headless", "--frames", "1000000", "--size", "64x64", "--backend", "cpu"]));
        std::thread::sleep(Duration::from_millis(1500));
        signal(&child, sig, times);
        let o = wait_stopped(child);
        assert_eq!(o.status.code(), Some(code), "signal {sig} x{times}: {}", stderr(&o));
        assert_eq!(
            one_error_line(&o),
            "vkhip: interrupted, finishing the frames in flight (interrupt again to abort)"
        );
        assert!(
            stdout(&o).contains("vkhip frame report"),
            "signal {sig}: the report is kept\n{}",
            stdout(&o)
        );
    }
}

#[test]
fn an_interrupted_verify_says_so() {
    let child =
        spawn(vkhip().args(["verify", "--backend", "cpu", "--grid", "128x128", "--frames", "1000000"]));
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGTERM, 1);
    let o = wait_stopped(child);
    assert_eq!(o.status.code(), Some(143), "SIGTERM: 128 + 15\n{}", stderr(&o));
    let summary = stdout(&o).lines().rfind(|l| l.starts_with("verify: ")).unwrap_or_default().to_string();
    assert!(summary.starts_with("verify: INTERRUPTED backend=cpu"), "{summary}");
}

#[test]
fn an_interrupt_wakes_a_window_paced_by_a_low_max_fps() {
    let Some(_x_lock) = x_test("an_interrupt_wakes_a_window_paced_by_a_low_max_fps") else { return };
    let mut x = Xvfb::start();
    let mut app = window_app(&x, &["--max-fps", "0.1"]); // a frame every 10 s
    let _ = x.wait_for_vkhip_window(&mut app);
    std::thread::sleep(Duration::from_millis(1500));
    signal(&app, libc::SIGINT, 1);
    let t = Instant::now();
    let o = wait_stopped(app);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?} to stop (the pacing deadline was 10 s)",
        t.elapsed()
    );
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stdout(&o).contains("vkhip frame report"), "{}", stdout(&o));
}

// ---- item 6: environment errors ----

#[test]
fn an_icd_for_absent_hardware_is_an_environment_error_in_one_line() {
    let icd = "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json";
    let test = "an_icd_for_absent_hardware_is_an_environment_error_in_one_line";
    if !Path::new(icd).exists() {
        skip::skip(test, &format!("{icd} (apt-get install mesa-vulkan-drivers)"), true);
        return;
    }
    if std::fs::read_dir("/dev/dri").is_ok_and(|mut d| d.next().is_some()) {
        skip::skip(test, "a machine without a DRM device (here radv might find hardware)", true);
        return;
    }
    for args in [&["--headless", "--frames", "1"][..], &["info"]] {
        let o = run(vkhip().args(args).env("VK_ICD_FILENAMES", icd).env("VK_DRIVER_FILES", icd));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            one_error_line(&o),
            "vkhip: error: no usable Vulkan device: the Vulkan driver found no hardware it supports (check VK_ICD_FILENAMES / VK_DRIVER_FILES and that the GPU's driver is loaded)"
        );
    }
}

#[test]
fn a_dead_display_falls_back_to_headless_and_keeps_capture() {
    let dir = temp_dir("dead-display");
    let png = dir.join("f.png");
    let o =
        run(vkhip().env("DISPLAY", ":987").args(["--frames", "2", "--size", "64x64", "--capture"]).arg(&png));
    assert_ok(&o, "run with a dead DISPLAY");
    assert!(stderr(&o).contains("cannot open a window"), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("capture      {} (frame 1)", png.display())), "{}", stdout(&o));
    assert!(vkhip::image::Rgba::read_png(&png).is_ok());
}

// ---- item 1: oversized windows ----

#[test]
fn a_window_beyond_the_device_limits_pauses_and_resumes_validation_clean() {
    // Issue 21: on X11 the surface accepts only the window's own size (min = max = current), so a
    // window wider than the device's 16384 (lavapipe) has no valid swapchain: a clamped one broke
    // VUID-VkSwapchainCreateInfoKHR-imageExtent-01274. vkhip stops presenting (log and title say
    // so once), stays alive, and resumes when the window fits again.
    let test = "a_window_beyond_the_device_limits_pauses_and_resumes_validation_clean";
    let Some(_x_lock) = x_test(test) else { return };
    if !require(test, Component::ValidationLayer) {
        return;
    }
    let mut x = Xvfb::start_wide(17000);
    let mut app = window_app(&x, &["--validation"]);
    let id = x.wait_for_vkhip_window(&mut app);
    std::thread::sleep(Duration::from_millis(1000));
    let title = |x: &Xvfb| stdout(&x.xdotool(&["getwindowname", &id])).trim().to_string();
    // Wait until the title says `paused` (or not), failing if vkhip exits meanwhile.
    let wait_title = |x: &Xvfb, app: &mut std::process::Child, paused: bool, what: &str| {
        let t = Instant::now();
        loop {
            assert!(app.try_wait().unwrap().is_none(), "vkhip ended after {what}");
            let now = title(x);
            if now.contains("paused") == paused && now.starts_with("vkhip — ") {
                return now;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "{what}: title still {now:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    for (w, h, paused) in [(16500, 120, true), (16384, 120, false), (16385, 120, true), (640, 200, false)] {
        assert!(x.xdotool(&["windowsize", &id, &w.to_string(), &h.to_string()]).status.success());
        let t = wait_title(&x, &mut app, paused, &format!("resizing to {w}x{h}"));
        if paused {
            assert!(t.contains(&format!("window {w}x{h} exceeds the device's 16384x16384")), "{t}");
            // vkhip leaves the window as the user made it.
            std::thread::sleep(Duration::from_millis(500));
            let g = stdout(&x.xdotool(&["getwindowgeometry", &id]));
            assert!(g.contains(&format!("Geometry: {w}x{h}")), "{g}");
        } else {
            std::thread::sleep(Duration::from_millis(700)); // frames at the new size
        }
    }
    signal(&app, libc::SIGINT, 1);
    let o = wait_stopped(app);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    let stopped: Vec<&str> = err.lines().filter(|l| l.contains("presenting stopped")).collect();
    assert_eq!(stopped.len(), 2, "said once per pause:\n{err}");
    assert!(
        stopped[0].contains("the window is 16500x120, larger than the device can render (16384x16384)"),
        "{err}"
    );
    assert_eq!(err.matches("presenting resumed").count(), 2, "{err}");
    assert!(!err.contains("Validation Error") && !err.contains("failed"), "{err}");
    let report = stdout(&o);
    assert!(report.contains("vkhip frame report"), "{report}");
    let v = report.lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default();
    assert!(v.starts_with("validation: 0 errors, 0 warnings"), "{v}\n{err}");
}

// ---- item 7: validation runs stay fast ----

#[test]
fn cycles_with_validation_do_not_stall_on_the_layers_timeline_bug() {
    if !require("cycles_with_validation_do_not_stall_on_the_layers_timeline_bug", Component::ValidationLayer)
    {
        return;
    }
    // Before: every host wait tripped UNASSIGNED-VkSemaphore-state-timeout, a 10 s stall each
    // (about 5 stalls for 6 cycles; 71 s for 10 cycles against 0.4 s without validation). With
    // polling, a counter query can still land between another thread's host signal and the
    // layer's record of it: rare (about one run in 30 here), so one stall is tolerated. On a
    // loaded machine (CI runs this binary's tests side by side on 2 cores) a run once met two;
    // the bug this test guards against stalls at nearly every wait, so a second run that stalls
    // more than once as well is still a failure.
    let attempt = || {
        let t = Instant::now();
        let o = run(vkhip().args(["cycles", "--backend", "cpu", "--count", "6", "--validation"]));
        assert_ok(&o, "cycles --validation");
        let v = stdout(&o).lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default().to_string();
        assert!(v.starts_with("validation: 0 errors, 0 warnings"), "{v}");
        let stalls = v
            .split(", ")
            .find_map(|p| p.strip_suffix(" known layer bugs (UNASSIGNED-VkSemaphore-state-timeout)"))
            .map_or(0, |n| n.parse::<u32>().unwrap_or(u32::MAX));
        (stalls, t.elapsed(), v)
    };
    let (mut stalls, mut took, mut v) = attempt();
    if stalls > 1 {
        eprintln!("cycles --validation stalled {stalls} times ({v}); once more");
        (stalls, took, v) = attempt();
    }
    assert!(stalls <= 1, "{v}");
    assert!(took < Duration::from_secs(30), "took {took:?}: {v}");
}

// ---- item 9 in a window: an injected fault tears everything down ----

#[test]
fn an_injected_fault_in_a_window_tears_down_cleanly() {
    let test = "an_injected_fault_in_a_window_tears_down_cleanly";
    let Some(_x_lock) = x_test(test) else { return };
    if !require(test, Component::ValidationLayer) {
        return;
    }
    let x = Xvfb::start();
    for (spec, code, line) in [
        ("device-lost@12", 1, "vkhip: error: frame 11: draw: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST"),
        (
            "queue-submit@8",
            2,
            "vkhip: error: frame 7: draw: vkQueueSubmit failed: VK_ERROR_OUT_OF_HOST_MEMORY",
        ),
    ] {
        let t = Instant::now();
        let o = run(vkhip().env("DISPLAY", &x.display).env("VKHIP_FAULT", spec).args([
            "--backend",
            "cpu",
            "--size",
            "320x200",
            "--validation",
        ]));
        assert!(t.elapsed() < Duration::from_secs(30), "{spec}: took {:?}", t.elapsed());
        assert_eq!(o.status.code(), Some(code), "{spec}: {}", stderr(&o));
        assert!(one_error_line(&o).starts_with(line), "{spec}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("vkhip frame report"), "{spec}: {out}");
        let v = out.lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default();
        assert!(v.starts_with("validation: 0 errors, 0 warnings"), "{spec}: teardown after the fault: {v}");
    }
}
