//! Xvfb, xdotool and xwd for the tests that open a real window (the same helpers as
//! tests/window.rs, shared here so other window tests can use them).
#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use vkhip::image::Rgba;

/// Whether the X tools are here; under CI their absence is a failure, elsewhere a skip (the
/// rule of crates/vkhip-interop/tests/common/skip.rs).
#[track_caller]
pub fn tools_present(test: &str) -> bool {
    crate::common::require(test, crate::common::Component::XTools)
}

pub struct Xvfb {
    child: Child,
    pub display: String,
}

impl Xvfb {
    /// Start Xvfb on a display of its own and wait until it answers.
    ///
    /// Not `-displayfd`: on a machine shared by several test runs, a stale or foreign server can
    /// sit on a low display number without its lock file, and `-displayfd` then hands out that
    /// number again (two servers, clients reaching either). So: a display number from a high,
    /// per-process (and per-call: tests of one binary share a process) range whose socket and
    /// lock file are both absent, and a screen size unique to this process and call, which is
    /// checked to be the one that answers.
    pub fn start() -> Xvfb {
        // Tests of one binary run in parallel in one process: each call gets its own number too.
        static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let pid = std::process::id();
        let (width, height) = (1024 + 8 * ((pid + 31 * call) % 97), 768 + call % 8);
        for attempt in 0..20 {
            let n = 200 + (pid * 7 + call * 101 + attempt * 13) % 700;
            let taken = |p: String| std::path::Path::new(&p).exists();
            if taken(format!("/tmp/.X11-unix/X{n}")) || taken(format!("/tmp/.X{n}-lock")) {
                continue;
            }
            let child = Command::new("Xvfb")
                .args([
                    &format!(":{n}"),
                    "-noreset",
                    "-screen",
                    "0",
                    &format!("{width}x{height}x24"),
                    "-nolisten",
                    "tcp",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start Xvfb");
            let mut x = Xvfb { child, display: format!(":{n}") };
            let want = format!("{width} {height}");
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(10) && x.child.try_wait().ok().flatten().is_none() {
                let o = x.xdotool(&["getdisplaygeometry"]);
                if o.status.success() {
                    if String::from_utf8_lossy(&o.stdout).trim() == want {
                        return x;
                    }
                    break; // another server answers on this display: try the next one
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            drop(x);
        }
        panic!("could not start Xvfb on a display of its own");
    }

    /// Run xdotool on this display.
    pub fn xdotool(&self, args: &[&str]) -> Output {
        Command::new("xdotool").env("DISPLAY", &self.display).args(args).output().expect("run xdotool")
    }

    /// The id of the first window whose name starts with `vkhip`, waiting up to 30 s for it;
    /// fails early if `app` exits first.
    pub fn wait_for_vkhip_window(&mut self, app: &mut Child) -> String {
        let t0 = Instant::now();
        loop {
            let o = self.xdotool(&["search", "--name", "^vkhip"]);
            if let Some(id) = String::from_utf8_lossy(&o.stdout).lines().next() {
                return id.to_string();
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "no vkhip window appeared");
            if let Some(status) = app.try_wait().unwrap() {
                let mut err = String::new();
                if let Some(mut e) = app.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                let alive = self.child.try_wait().map(|s| s.is_none()).unwrap_or(false);
                let geometry = self.xdotool(&["getdisplaygeometry"]);
                panic!(
                    "vkhip exited ({status}) before its window appeared (Xvfb {} alive: {alive}, \
                     connects now: {}):\n{err}",
                    self.display,
                    geometry.status.success()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A screenshot of the whole screen, taken from outside the app.
    pub fn screenshot(&self) -> Rgba {
        let shot =
            Command::new("xwd").args(["-root", "-silent", "-display", &self.display]).output().expect("xwd");
        assert!(shot.status.success() && !shot.stdout.is_empty(), "xwd failed");
        parse_xwd(&shot.stdout)
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM first, so that the server removes its socket and lock file.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parse an XWD dump of a 24/32-bit TrueColor ZPixmap (what `xwd -root` gives on Xvfb -screen
/// 24) into RGBA.
pub fn parse_xwd(data: &[u8]) -> Rgba {
    let be = |i: usize| u32::from_be_bytes(data[i * 4..i * 4 + 4].try_into().unwrap());
    let header_size = be(0) as usize;
    let (width, height) = (be(4), be(5));
    let byte_order = be(7); // 0 = LSBFirst
    let bits_per_pixel = be(11);
    let bytes_per_line = be(12) as usize;
    let ncolors = be(19) as usize;
    assert_eq!(bits_per_pixel, 32, "expected a 32-bpp dump");
    let start = header_size + ncolors * 12;
    let mut pixels = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height as usize {
        for x in 0..width as usize {
            let p = &data[start + y * bytes_per_line + x * 4..][..4];
            let v = if byte_order == 0 {
                u32::from_le_bytes(p.try_into().unwrap())
            } else {
                u32::from_be_bytes(p.try_into().unwrap())
            };
            pixels.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8, 255]);
        }
    }
    Rgba { width, height, pixels }
}

/// The top-left `w` × `h` of `img`.
pub fn crop(img: &Rgba, w: u32, h: u32) -> Rgba {
    let mut pixels = Vec::new();
    for y in 0..h {
        let row = (y * img.width) as usize * 4;
        pixels.extend_from_slice(&img.pixels[row..row + w as usize * 4]);
    }
    Rgba { width: w, height: h, pixels }
}
