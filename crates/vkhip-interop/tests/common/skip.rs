//! The one rule for tests that need an optional component (used by every test of both crates;
//! the app's tests include this file by path, so that the interop crate's package holds it).
//!
//! `cargo test` passes on a machine with only the README's quick start (`libvulkan1
//! mesa-vulkan-drivers` and Rust). A test that needs more asks [`require`] first:
//!
//! - present: the test runs;
//! - missing, outside CI: one line `skipped: TEST: needs WHAT (apt-get install PACKAGE)` goes to
//!   the real stderr (past libtest's capture, so `cargo test` shows it) and the test returns;
//! - missing under CI (`CI` set, and not `false`/`0`): the test fails. CI installs every
//!   component it can; a skip there would hide a lost check.
//!
//! Components CI cannot have (a GPU, NVIDIA's NVRTC) are [`Component::ci_provides`] `false`:
//! they skip everywhere, with the same one line.
#![allow(dead_code)]

use std::io::Write as _;

/// An optional component a test may need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// VK_LAYER_KHRONOS_validation, as the Vulkan loader finds it (so `VK_LAYER_PATH` and
    /// friends count).
    ValidationLayer,
    /// Xvfb, xdotool and xwd: a virtual X server, and driving and screenshotting windows in it.
    XTools,
    /// NVIDIA's runtime compiler (libnvrtc), for compiling CUDA kernels without a GPU.
    Nvrtc,
    /// A machine without GPU drivers (no libcuda, no /dev/kfd): the "no device" paths.
    NoGpuDriver,
}

impl Component {
    /// What is missing and how to get it, for the skip line.
    pub fn needs(self) -> &'static str {
        match self {
            Component::ValidationLayer => {
                "the Khronos validation layer (apt-get install vulkan-validationlayers)"
            }
            Component::XTools => "Xvfb, xdotool and xwd (apt-get install xvfb xdotool x11-apps)",
            Component::Nvrtc => {
                "libnvrtc (NVIDIA's CUDA toolkit, or pip install nvidia-cuda-nvrtc and its lib directory on LD_LIBRARY_PATH)"
            }
            Component::NoGpuDriver => {
                "a machine without GPU drivers (libcuda or /dev/kfd is present here; the no-device case cannot be checked)"
            }
        }
    }

    /// Whether CI installs (or is) this component: then a skip under CI is a failure.
    pub fn ci_provides(self) -> bool {
        matches!(self, Component::ValidationLayer | Component::XTools | Component::NoGpuDriver)
    }

    /// Whether it is here. Checked once per test process.
    pub fn present(self) -> bool {
        use std::sync::OnceLock;
        static LAYER: OnceLock<bool> = OnceLock::new();
        static X: OnceLock<bool> = OnceLock::new();
        match self {
            Component::ValidationLayer => *LAYER.get_or_init(validation_layer_present),
            Component::XTools => *X.get_or_init(|| ["Xvfb", "xdotool", "xwd"].iter().all(|t| on_path(t))),
            Component::Nvrtc => nvrtc_present(),
            Component::NoGpuDriver => !libcuda_present() && !std::path::Path::new("/dev/kfd").exists(),
        }
    }
}

/// Whether this is a CI run (`CI` set to anything but empty, `false` or `0`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether `test` can run: `c` is present. Otherwise one skip line (and `false`), or, under CI
/// for a component CI provides, a failure.
#[track_caller]
pub fn require(test: &str, c: Component) -> bool {
    if c.present() {
        return true;
    }
    skip(test, c.needs(), c.ci_provides());
    false
}

/// Like [`require`], for one part of a test (the rest runs anyway): the line names the part.
#[track_caller]
pub fn require_part(test: &str, part: &str, c: Component) -> bool {
    require(&format!("{test} ({part})"), c)
}

/// The skip line (or, under CI where `ci_provides`, the failure).
#[track_caller]
pub fn skip(test: &str, needs: &str, ci_provides: bool) {
    assert!(!(ci_provides && under_ci()), "{test}: CI must provide {needs}, but it is missing (see .ci/run)");
    // The real stderr, not eprintln!: libtest captures the macros' output of passing tests.
    let _ = writeln!(std::io::stderr(), "skipped: {test}: needs {needs}");
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let p = d.join(tool);
            std::fs::metadata(&p).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.len() > 0 && m.permissions().mode() & 0o111 != 0
            })
        })
    })
}

fn validation_layer_present() -> bool {
    // SAFETY: loads the system's Vulkan loader; nothing else is called on a failed load.
    let Ok(entry) = (unsafe { ash::Entry::load() }) else { return false };
    // SAFETY: a plain query on a loaded entry.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
    layers.iter().any(|l| l.layer_name_as_c_str() == Ok(c"VK_LAYER_KHRONOS_validation"))
}

fn dlopen_any(names: &[&str]) -> bool {
    names.iter().any(|n| {
        // SAFETY: loading a shared library runs its initialisers; these are vendor libraries
        // loaded the same way by the code under test.
        unsafe { libloading::Library::new(n) }.is_ok()
    })
}

fn libcuda_present() -> bool {
    dlopen_any(&["libcuda.so.1", "libcuda.so"])
}

fn nvrtc_present() -> bool {
    dlopen_any(&["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"])
}
