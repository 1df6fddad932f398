//! Helpers shared by the integration tests: run the vkhip binary, temp paths, image checks.
#![allow(dead_code)]

/// The skip rule lives with the interop crate's tests (the lower layer), so that the crate's
/// package holds every file its tests include.
#[path = "../../crates/vkhip-interop/tests/common/skip.rs"]
pub mod skip;
#[allow(unused_imports)]
pub use skip::{require, require_part, Component};

use std::path::PathBuf;
use std::process::{Command, Output};
use vkhip::image::Rgba;

/// The binary under test: cargo's build of it, or `VKHIP_TEST_BIN` (CI runs the window soak on
/// a copy while it builds other configurations into target/), in [`test_env`].
pub fn vkhip() -> Command {
    let bin = std::env::var_os("VKHIP_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_vkhip").into());
    let mut c = Command::new(bin);
    test_env(&mut c);
    c
}

/// What the tested process sees of the environment: nothing of the tester's session that changes
/// what vkhip does or prints. Headless unless a test opts into a display; quiet logs; no kernel
/// cache writes in $HOME; no fault or Vulkan library of the tester's; no layer or loader
/// diagnostics that the tester's shell asked for (they print lines of their own). A test that
/// wants one of these sets it after this. The driver choice (VK_ICD_FILENAMES, VK_DRIVER_FILES)
/// stays the tester's: it says which Vulkan device the whole suite runs on.
pub fn test_env(c: &mut Command) -> &mut Command {
    for var in [
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "VKHIP_FAULT",
        "VKHIP_VULKAN_LIBRARY",
        "VK_INSTANCE_LAYERS",
        "VK_LOADER_LAYERS_ENABLE",
        "VK_LOADER_LAYERS_DISABLE",
        "VK_LOADER_DEBUG",
        "VK_LAYER_SETTINGS_PATH",
        "CUDA_DEVICE_MAX_CONNECTIONS",
    ] {
        c.env_remove(var);
    }
    c.env("RUST_LOG", "warn").env("VKHIP_KERNEL_CACHE", "off")
}

/// Run and capture; panics with the full output if the process could not start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("could not run {cmd:?}: {e}"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert success, showing both streams otherwise.
pub fn assert_ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vkhip-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// The repository's assets directory.
pub fn assets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets")
}

/// Background colour of the renderer as RGBA8 (UNORM of `render::CLEAR_COLOR`).
pub fn clear_rgba8() -> [u8; 3] {
    let c = vkhip::render::CLEAR_COLOR;
    [0, 1, 2].map(|i| (c[i] * 255.0).round() as u8)
}

/// Fraction of pixels that are not the clear colour (within 2 levels).
pub fn coverage(img: &Rgba) -> f64 {
    let bg = clear_rgba8();
    let n = img.pixels.chunks_exact(4).filter(|p| (0..3).any(|c| p[c].abs_diff(bg[c]) > 2)).count();
    n as f64 / (img.width * img.height) as f64
}

/// Number of distinct colours (quantised to 5 bits per channel): a colour-mapped, shaded surface
/// has many; a blank, black or flat-coloured frame has few.
pub fn distinct_colours(img: &Rgba) -> usize {
    let mut seen = std::collections::HashSet::new();
    for p in img.pixels.chunks_exact(4) {
        seen.insert((p[0] >> 3, p[1] >> 3, p[2] >> 3));
    }
    seen.len()
}

/// Assert that `img` shows the surface: a good part of the frame covered, many colours, and
/// both warm (peaks) and cool (troughs) colours of the height colour map present.
pub fn assert_shows_surface(img: &Rgba, what: &str) {
    let cov = coverage(img);
    assert!(cov > 0.15, "{what}: only {:.1}% of the pixels differ from the background", cov * 100.0);
    let colours = distinct_colours(img);
    assert!(colours > 200, "{what}: only {colours} distinct colours: not a shaded, colour-mapped surface");
    let warm = img.pixels.chunks_exact(4).filter(|p| p[0] as i32 > p[2] as i32 + 60).count();
    let cool = img.pixels.chunks_exact(4).filter(|p| p[2] as i32 > p[0] as i32 + 60).count();
    assert!(warm > 500 && cool > 500, "{what}: warm {warm} / cool {cool} pixels: the colour map is missing");
}
