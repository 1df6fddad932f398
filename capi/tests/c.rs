//! The C door from C: the header compiles as C99 and C++; the example engines build with
//! `-Wall -Wextra -Werror` and, on lavapipe, run until CUDA is needed (exit 2, one line); the C
//! tests (tests/c/*.c: the error paths, and the positive paths on lavapipe) pass under
//! AddressSanitizer and UndefinedBehaviorSanitizer. They need a C compiler and the Vulkan
//! headers (`apt-get install gcc libvulkan-dev`): skipped with one line without them, failed
//! under CI.

#[path = "../../crates/vkhip-interop/tests/common/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NEEDS: &str = "a C compiler and the Vulkan headers (apt-get install gcc g++ libvulkan-dev)";

/// The crate's directory, and the directory holding libvkhip.so ([`built_library`]).
fn dirs() -> (PathBuf, PathBuf) {
    let capi = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    (capi, built_library())
}

/// The folder holding libvkhip.so, built once per test binary. `cargo test` builds no cdylib
/// for integration tests (the package has no rlib: its library is named like the app's), so it
/// is built here with the cargo, profile and target folder of this test: `target/<profile>/`.
fn built_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test's executable");
            let profile_dir =
                exe.parent().and_then(Path::parent).expect("target/<profile>/deps/…").to_path_buf();
            let target = profile_dir.parent().expect("target/").to_path_buf();
            let profile = profile_dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
            let profile = if profile == "debug" { "dev" } else { profile };
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let o = Command::new(cargo)
                .args([
                    "build",
                    "--locked",
                    "-p",
                    "vkhip-capi",
                    "--lib",
                    "--profile",
                    profile,
                    "--target-dir",
                ])
                .arg(&target)
                .output()
                .expect("cargo runs");
            let (stdout, stderr) = text(&o);
            assert!(o.status.success(), "cargo build -p vkhip-capi --lib failed:\n{stdout}{stderr}");
            profile_dir
        })
        .clone()
}

/// Whether `cc`, `c++` and vulkan.h are here; otherwise the skip line (or, under CI, a failure).
fn toolchain(test: &str) -> bool {
    let runs = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    let header = Path::new("/usr/include/vulkan/vulkan.h").exists();
    if runs("cc") && runs("c++") && header {
        return true;
    }
    skip::skip(test, NEEDS, true);
    false
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Compile `sources` into `out` with the strict warnings, against the header and libvkhip.
fn compile(sources: &[PathBuf], out: &Path, extra: &[&str]) {
    let (capi, lib) = dirs();
    assert!(
        lib.join("libvkhip.so").exists(),
        "no libvkhip.so in {} (cargo build -p vkhip-capi --lib puts it there)",
        lib.display()
    );
    let mut cc = Command::new("cc");
    cc.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"]).args(extra);
    cc.arg(format!("-I{}", capi.join("include").display()))
        .arg(format!("-I{}", capi.join("tests/c").display()));
    cc.args(sources).arg("-o").arg(out);
    cc.arg(format!("-L{}", lib.display())).arg(format!("-Wl,-rpath,{}", lib.display()));
    cc.args(["-lvkhip", "-lvulkan", "-pthread"]);
    let o = cc.output().unwrap_or_else(|e| panic!("cc: {e}"));
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{cc:?} failed:\n{stdout}{stderr}");
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vkhip-capi-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

#[test]
fn the_header_compiles_as_c99_and_as_cxx() {
    if !toolchain("the_header_compiles_as_c99_and_as_cxx") {
        return;
    }
    let (capi, _) = dirs();
    let include = format!("-I{}", capi.join("include").display());
    let dir = scratch("header");
    let source = dir.join("h.c");
    // Twice: the include guard.
    std::fs::write(
        &source,
        "#include \"vkhip.h\"\n#include \"vkhip.h\"\nint main(void) { return VKHIP_STATUS_OK; }\n",
    )
    .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    // With VKHIP_HIP too: the HIP functions of a libvkhip built with `--features hip`.
    let c99 = ["-std=c99"];
    let (cxx, c99_hip, cxx_hip) =
        (["-x", "c++", "-std=c++11"], ["-std=c99", "-DVKHIP_HIP"], ["-x", "c++", "-DVKHIP_HIP"]);
    for (tool, language) in [("cc", &c99[..]), ("c++", &cxx[..]), ("cc", &c99_hip[..]), ("c++", &cxx_hip[..])]
    {
        let o = Command::new(tool)
            .args(language)
            .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", &include])
            .arg(&source)
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "vkhip.h with {tool} {language:?}:\n{stdout}{stderr}");
    }
}

#[test]
fn the_example_engines_build_strictly_and_run_on_lavapipe_until_cuda() {
    let test = "the_example_engines_build_strictly_and_run_on_lavapipe_until_cuda";
    if !toolchain(test) {
        return;
    }
    let (capi, _) = dirs();
    let dir = scratch("examples");
    for name in ["engine", "engine_broken"] {
        let exe = dir.join(name);
        compile(&[capi.join(format!("examples/{name}.c"))], &exe, &[]);
        // Its usage error first: exit 3, one line.
        let o =
            Command::new(&exe).args(["1", "t", "extra"]).output().unwrap_or_else(|e| panic!("{name}: {e}"));
        let (_, stderr) = text(&o);
        assert_eq!(
            (o.status.code(), stderr.lines().count()),
            (Some(3), 1),
            "{name} with 3 arguments: {stderr}"
        );
        if !skip::require_part(test, &format!("{name} without CUDA"), skip::Component::NoGpuDriver) {
            continue;
        }
        let trace = dir.join(format!("{name}.json"));
        let stdout = no_cuda_device(&exe, &[&trace], name, "vkhip_cuda_open");
        // Everything before CUDA ran: the device, the shared buffers, the profiled Vulkan pass
        // and the host's check of every value.
        assert!(stdout.starts_with("vulkan: "), "{stdout}");
        assert!(
            stdout.contains("vulkan: 2 shared buffers of 65536 floats filled and read back, profiled"),
            "{stdout}"
        );
    }
    // The engine's own stream, a GPU check (scripts/capi-gpu-check.sh): here it builds, and
    // finds no CUDA device.
    let exe = dir.join("cuda_stream");
    compile(&[capi.join("tests/c/cuda_stream.c")], &exe, &[]);
    if skip::require_part(test, "cuda_stream without CUDA", skip::Component::NoGpuDriver) {
        no_cuda_device(&exe, &[], "cuda_stream", "vkhip_device_open");
    }
}

/// Run `exe` (its first argument "3": frames) where no CUDA device is: exit 2 and one line on
/// stderr, "NAME: no usable CUDA device: CALL…". Returns its stdout.
fn no_cuda_device(exe: &Path, args: &[&Path], name: &str, call: &str) -> String {
    let o = Command::new(exe).arg("3").args(args).output().unwrap_or_else(|e| panic!("{name}: {e}"));
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: exit 2 without CUDA:\n{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{name}: one line on stderr:\n{stderr}");
    assert!(stderr.starts_with(&format!("{name}: no usable CUDA device: {call}")), "{stderr}");
    stdout
}

/// The lavapipe driver's library (from its ICD file), to keep it loaded until the end: the Vulkan
/// loader unloads it at vkDestroyInstance, and LeakSanitizer then counts the driver's own memory
/// (128 bytes, seen on Mesa 22.3) as leaked by an unknown module.
fn lavapipe_library() -> Option<String> {
    let dir = std::fs::read_dir("/usr/share/vulkan/icd.d").ok()?;
    dir.filter_map(Result::ok).filter(|e| e.file_name().to_string_lossy().starts_with("lvp_icd")).find_map(
        |e| {
            let json = std::fs::read_to_string(e.path()).ok()?;
            let after = json.split("\"library_path\"").nth(1)?;
            after.split('"').nth(1).map(str::to_owned)
        },
    )
}

#[test]
fn the_c_tests_pass_under_address_and_undefined_behaviour_sanitizers() {
    if !toolchain("the_c_tests_pass_under_address_and_undefined_behaviour_sanitizers") {
        return;
    }
    let (capi, _) = dirs();
    let dir = scratch("sanitized");
    let asan = Command::new("cc").arg("-print-file-name=libasan.so").output().map(|o| text(&o).0);
    let asan = asan.map(|s| s.trim().to_owned()).unwrap_or_default();
    let lavapipe = lavapipe_library();
    assert!(Path::new(&asan).exists(), "no libasan.so from cc -print-file-name ({asan:?})");
    let test = "the_c_tests_pass_under_address_and_undefined_behaviour_sanitizers";
    let validated = skip::require_part(test, "the Khronos layer", skip::Component::ValidationLayer);
    for (name, args) in [("errors", vec![]), ("lavapipe", vec![dir.join("lavapipe.json")])] {
        let exe = dir.join(name);
        let sanitize =
            ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"];
        compile(&[capi.join(format!("tests/c/{name}.c"))], &exe, &sanitize);
        let preload = match &lavapipe {
            Some(driver) => format!("{asan} {driver}"),
            None => asan.clone(),
        };
        let log = dir.join(format!("{name}.validation.log"));
        let mut run = Command::new(&exe);
        if validated {
            run.envs(validation_layer(&dir, &log));
        }
        let o = run
            .args(&args)
            .env("LD_PRELOAD", preload)
            .env("ASAN_OPTIONS", format!("detect_leaks={}", u8::from(lavapipe.is_some())))
            .env("UBSAN_OPTIONS", "print_stacktrace=1")
            .output()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{name} (exit {:?}):\n{stdout}{stderr}", o.status.code());
        let last = stdout.lines().last().unwrap_or_default();
        assert!(
            last.starts_with(&format!("{name}: ")) && last.ends_with(" passed, 0 failed"),
            "{stdout}{stderr}"
        );
        assert!(!stderr.contains("runtime error") && !stderr.contains("Sanitizer"), "{stderr}");
        if validated {
            let messages = validation_messages(&log);
            assert_eq!(
                messages,
                Vec::<String>::new(),
                "{name}: the Khronos layer's messages ({})",
                log.display()
            );
        }
    }
}

/// The environment that loads the Khronos layer with every message (errors to information) sent
/// to `log` (what scripts/validation-layer.sh's vl_env sets).
fn validation_layer(dir: &Path, log: &Path) -> Vec<(String, String)> {
    let settings = dir.join(format!("{}.settings.txt", log.display()));
    let text = format!(
        "khronos_validation.report_flags = error,warn,perf,info\nkhronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\nkhronos_validation.log_filename = {}\n",
        log.display()
    );
    std::fs::write(&settings, text).unwrap_or_else(|e| panic!("{}: {e}", settings.display()));
    let _ = std::fs::remove_file(log);
    vec![
        ("VK_INSTANCE_LAYERS".into(), "VK_LAYER_KHRONOS_validation".into()),
        ("VK_LAYER_SETTINGS_PATH".into(), settings.display().to_string()),
    ]
}

/// The ids of the messages in a layer's log but its own "active" status message, which must be
/// there (else the layer did not load, and no message would mean nothing).
fn validation_messages(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    assert!(
        text.contains(STATUS),
        "the validation layer did not load (no status message in {})",
        log.display()
    );
    message_ids(&text).into_iter().filter(|id| id != STATUS && !id.starts_with("UNASSIGNED-cache-")).collect()
}

const STATUS: &str = "UNASSIGNED-khronos-validation-createinstance-status-message";

/// Each "ID(SEVERITY / TYPE): msgNum: …" of a layer's log: the ids.
fn message_ids(text: &str) -> Vec<String> {
    text.match_indices("): msgNum:")
        .filter_map(|(i, _)| {
            let before = &text[..i];
            let open = before.rfind('(')?;
            before[..open].rsplit(char::is_whitespace).next().map(str::to_owned)
        })
        .collect()
}

#[test]
fn the_layers_log_is_read_message_by_message() {
    let log = format!(
        "{STATUS}(INFO / SPEC): msgNum: 601872502 - Validation Information: [ {STATUS} ] ...\n    Objects: 1\n\
         VUID-vkCmdFillBuffer-dstBuffer-00029(ERROR / SPEC): msgNum: -1 - Validation Error: ... (spec)\n"
    );
    assert_eq!(message_ids(&log), [STATUS, "VUID-vkCmdFillBuffer-dstBuffer-00029"]);
}
