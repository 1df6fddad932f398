//! Keeps the interop crate's examples (`crates/vkhip-interop/examples/`, templates to copy) and
//! the measuring programs (`crates/vkhip-measure/src/bin/`) honest without a GPU (CI runs the
//! binaries themselves, expecting the "no usable … device" exit 2: `.ci/run`):
//! - each example stays one short file (the "lift it from one example" promise of the interop
//!   library);
//! - each uses `vkhip_interop` (but `wgpu_submit_cost`, wgpu alone by design: a program for
//!   wgpu's issue tracker) and names nothing of the vkhip app (checked with `syn`, so comments and
//!   strings never count);
//! - the CUDA examples' kernels compile with NVRTC into PTX and cubins for sm_75 and sm_90 that
//!   define every entry point the examples look up, where libnvrtc loads (the
//!   `nvidia-cuda-nvrtc` wheel's lib directory on LD_LIBRARY_PATH; skipped otherwise);
//! - the HIP examples' kernels compile with hiprtc (`--features hip`, no GPU needed) into AMDGPU
//!   code objects for gfx90a and gfx1030 that define every entry point the examples look up;
//! - every file of `examples/` is checked here, has a row in the crate README's table (the root
//!   README links to it), and runs in CI (`.ci/run`: to its no-device exit, or to the end on lavapipe),
//!   so that a new example cannot be forgotten; every measuring program likewise, with its row
//!   in `crates/vkhip-measure/README.md`;
//! - the interop crate includes no file from outside its directory (its package would lack it);
//! - no comment in the workspace's Rust sources hangs off the line above (what rustfmt makes of
//!   a trailing comment followed by a comment line): comments stand on their own lines.

use syn::visit::{self, Visit};

#[path = "../crates/vkhip-interop/tests/common/skip.rs"]
mod skip;
use skip::Component;

/// The interop crate's examples.
const CRATE_EXAMPLES: &[&str] = &[
    "crates/vkhip-interop/examples/cuda_buffer.rs",
    "crates/vkhip-interop/examples/cuda_image.rs",
    "crates/vkhip-interop/examples/bring_your_own_device.rs",
    "crates/vkhip-interop/examples/hip_buffer.rs",
    "crates/vkhip-interop/examples/hip_image.rs",
    "crates/vkhip-interop/examples/cuda_in_vulkan.rs",
    "crates/vkhip-interop/examples/wgpu_cuda_texture.rs",
    "crates/vkhip-interop/examples/wgpu_cuda_buffer.rs",
    "crates/vkhip-interop/examples/wgpu_hip_texture.rs",
    "crates/vkhip-interop/examples/wgpu_hip_buffer.rs",
    "crates/vkhip-interop/examples/cuda_post_process.rs",
    "crates/vkhip-interop/examples/hip_post_process.rs",
];
const MAX_LINES: usize = 150;
/// `cuda_in_vulkan` makes what `vulkan::Device` makes for the others (instance, device, buffer,
/// command buffer) itself: nothing is shared, so the crate's export device does not apply.
const MAX_LINES_OWN_DEVICE: (&str, usize) = ("crates/vkhip-interop/examples/cuda_in_vulkan.rs", 200);
/// The wgpu texture examples render: a pipeline, per-slot bind groups, render targets and
/// read-backs are wgpu's own set-up (the crate's part is about 25 lines of each).
const MAX_LINES_WGPU_RENDER: (&[&str], usize) = (
    &[
        "crates/vkhip-interop/examples/wgpu_cuda_texture.rs",
        "crates/vkhip-interop/examples/wgpu_hip_texture.rs",
    ],
    220,
);

/// The measuring programs (`crates/vkhip-measure/src/bin/`, issue 39): not templates, so no
/// length limit, but like the examples they use the crates and nothing of the app, and each has
/// a row in that crate's README and runs in CI.
const MEASURE_PROGRAMS: &[&str] = &[
    "crates/vkhip-measure/src/bin/wgpu_handoff_cost.rs",
    "crates/vkhip-measure/src/bin/wgpu_submit_cost.rs",
    "crates/vkhip-measure/src/bin/semaphore_pingpong.rs",
    "crates/vkhip-measure/src/bin/profile_scope_cost.rs",
    "crates/vkhip-measure/src/bin/engine_loop.rs",
];
/// Programs of wgpu alone, without the crate: for wgpu's own issue tracker.
const WGPU_ALONE: &[&str] = &["crates/vkhip-measure/src/bin/wgpu_submit_cost.rs"];

fn source(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `vkhip::…` path, in `use` trees and in expressions and types, as "a::b::c".
#[derive(Default)]
struct VkhipPaths(Vec<String>);

impl<'ast> Visit<'ast> for VkhipPaths {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.first().is_some_and(|s| s == "vkhip") {
            self.0.push(segments.join("::"));
        }
        visit::visit_path(self, p);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        fn walk(tree: &syn::UseTree, prefix: &str, out: &mut Vec<String>) {
            let join =
                |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}::{name}") };
            match tree {
                syn::UseTree::Path(p) => walk(&p.tree, &join(&p.ident.to_string()), out),
                syn::UseTree::Name(n) => out.push(join(&n.ident.to_string())),
                syn::UseTree::Rename(r) => out.push(join(&r.ident.to_string())),
                syn::UseTree::Glob(_) => out.push(join("*")),
                syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, prefix, out)),
            }
        }
        let mut names = Vec::new();
        walk(&u.tree, "", &mut names);
        self.0.extend(names.into_iter().filter(|n| n.starts_with("vkhip::")));
    }
}

#[test]
fn crate_examples_use_the_crate_and_nothing_of_the_app() {
    for path in CRATE_EXAMPLES.iter().chain(MEASURE_PROGRAMS) {
        let text = source(path);
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut paths = VkhipPaths::default();
        paths.visit_file(&file);
        assert!(paths.0.is_empty(), "{path} names {:?}: a crate example may not use the app", paths.0);
        if WGPU_ALONE.contains(path) {
            continue;
        }
        let uses_crate = file.items.iter().any(|item| {
            matches!(item, syn::Item::Use(u) if matches!(&u.tree, syn::UseTree::Path(p) if p.ident == "vkhip_interop"))
        });
        assert!(uses_crate, "{path}: no `use vkhip_interop::…`");
    }
}

#[test]
fn examples_stay_one_short_file() {
    for path in CRATE_EXAMPLES {
        let lines = source(path).lines().count();
        let max = if *path == MAX_LINES_OWN_DEVICE.0 {
            MAX_LINES_OWN_DEVICE.1
        } else if MAX_LINES_WGPU_RENDER.0.contains(path) {
            MAX_LINES_WGPU_RENDER.1
        } else {
            MAX_LINES
        };
        assert!(lines <= max, "{path}: {lines} lines (at most {max})");
    }
}

/// An example that makes its own device takes the queue family that can compute
/// (`cuda_in_vulkan::Support::check`, `vulkan::compute_queue_family`), never a literal index, in
/// every place a family is named. Before (issue 33): `cuda_in_vulkan` assumed family 0.
#[test]
fn examples_name_no_literal_queue_family() {
    for path in CRATE_EXAMPLES {
        let text = source(path);
        for call in ["queue_family_index(", "get_device_queue("] {
            for (at, _) in text.match_indices(call) {
                let arg = text[at + call.len()..].trim_start();
                assert!(
                    !arg.starts_with(|c: char| c.is_ascii_digit()),
                    "{path}: {call}{} names a literal queue family",
                    &arg[..arg.find(')').unwrap_or(arg.len())]
                );
            }
        }
        if text.contains("create_command_pool(") {
            assert!(
                text.contains(".queue_family_index("),
                "{path}: a command pool of queue family 0 (the default)"
            );
        }
    }
}

/// The kernel source of an example: its `const KERNEL: &str = r#"…"#;`.
fn example_kernel(path: &str) -> String {
    let text = source(path);
    let start = text.find("const KERNEL: &str = r#\"").expect("the example defines KERNEL") + 24;
    let len = text[start..].find("\"#").expect("KERNEL ends");
    text[start..start + len].to_string()
}

#[test]
fn cuda_example_kernels_compile_with_nvrtc() {
    use vkhip_interop::cuda::{compile_to_image, nvrtc_version, Target};
    if let Err(e) = nvrtc_version() {
        // The loader's error names the package and the path to set: that is the skip line's hint.
        let needs = format!("libnvrtc ({})", e.to_string().trim_start_matches("nvrtc: "));
        skip::skip("cuda_example_kernels_compile_with_nvrtc", &needs, Component::Nvrtc.ci_provides());
        return;
    }
    let cases = [
        ("crates/vkhip-interop/examples/cuda_buffer.rs", &["ramp"][..]),
        ("crates/vkhip-interop/examples/cuda_image.rs", &["r32f", "rgba8", "rgba16f", "rgba32f"][..]),
        ("crates/vkhip-interop/examples/bring_your_own_device.rs", &["count"][..]),
        ("crates/vkhip-interop/examples/cuda_in_vulkan.rs", &["ramp", "square_add"][..]),
        ("crates/vkhip-interop/examples/wgpu_cuda_texture.rs", &["paint"][..]),
        ("crates/vkhip-interop/examples/wgpu_cuda_buffer.rs", &["twice"][..]),
        ("crates/vkhip-measure/src/bin/wgpu_handoff_cost.rs", &["paint", "anchor"][..]),
        ("crates/vkhip-interop/examples/cuda_post_process.rs", &["outline"][..]),
        ("crates/vkhip-measure/src/bin/semaphore_pingpong.rs", &["stamp", "hold"][..]),
        ("crates/vkhip-measure/src/bin/engine_loop.rs", &["filter"][..]),
    ];
    for (path, entries) in cases {
        let kernel = example_kernel(path);
        for arch in [75, 90] {
            let ptx = compile_to_image(&kernel, "example.cu", Target::Ptx(arch), &[])
                .unwrap_or_else(|e| panic!("{path}, compute_{arch}: {e}"));
            let text = String::from_utf8_lossy(&ptx);
            for entry in entries {
                assert!(text.contains(&format!(".entry {entry}(")), "{path}: no `{entry}` in the PTX");
            }
            let cubin = compile_to_image(&kernel, "example.cu", Target::Cubin(arch), &[])
                .unwrap_or_else(|e| panic!("{path}, sm_{arch}: {e}"));
            assert!(cubin.starts_with(b"\x7fELF"), "{path}: a cubin is an ELF image");
        }
    }
}

#[cfg(feature = "hip")]
#[test]
fn hip_example_kernels_compile_with_hiprtc() {
    use vkhip::compute::hip::code_object_has_symbol;
    use vkhip_interop::hip::compile_to_image;
    let cases = [
        ("crates/vkhip-interop/examples/hip_buffer.rs", &["descend"][..]),
        ("crates/vkhip-interop/examples/hip_image.rs", &["r32f", "rgba8", "rgba16f", "rgba32f"][..]),
        ("crates/vkhip-interop/examples/wgpu_hip_texture.rs", &["paint"][..]),
        ("crates/vkhip-interop/examples/wgpu_hip_buffer.rs", &["twice"][..]),
        ("crates/vkhip-interop/examples/hip_post_process.rs", &["outline"][..]),
    ];
    for (path, entries) in cases {
        let kernel = example_kernel(path);
        // CDNA2 and RDNA2: targets every supported ROCm's hiprtc compiles for, GPU or not.
        for arch in ["gfx90a", "gfx1030"] {
            let code = compile_to_image(&kernel, "example.hip", arch, &[])
                .unwrap_or_else(|e| panic!("{path}, {arch}: {e}"));
            for entry in entries {
                assert!(
                    code_object_has_symbol(&code, entry),
                    "{path}, {arch}: no `{entry}` in the code object"
                );
            }
            eprintln!("{path}, {arch}: {} bytes, defines {entries:?}", code.len());
        }
    }
}

/// The file names (without `.rs`) in `crates/vkhip-interop/examples/`.
fn example_files() -> Vec<String> {
    rust_file_stems("crates/vkhip-interop/examples")
}

/// The names (without `.rs`) of the Rust files in `dir` (relative to the workspace), sorted.
fn rust_file_stems(dir: &str) -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().expect("a file name").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_example_is_checked_listed_in_both_readmes_and_run_in_ci() {
    let names = example_files();
    assert!(names.len() >= 6, "{names:?}");
    let crate_readme = source("crates/vkhip-interop/README.md");
    let ci = source(".ci/run");
    let mut missing = Vec::new();
    for name in &names {
        let path = format!("crates/vkhip-interop/examples/{name}.rs");
        if !CRATE_EXAMPLES.contains(&path.as_str()) {
            missing.push(format!("{name}: not in tests/examples.rs' CRATE_EXAMPLES"));
        }
        let row = format!("| `{name}` | ");
        let runs = format!("--example {name}`");
        if !crate_readme.lines().any(|l| l.starts_with(&row) && l.contains(&runs)) {
            missing.push(format!("{name}: no row `{row}… {runs} |` in crates/vkhip-interop/README.md"));
        }
        let runs_in_ci = |how: &str| ci.lines().any(|l| l.starts_with(&format!("{how} {name} ")));
        if !runs_in_ci("expect_no_device") && !runs_in_ci("expect_runs") {
            missing.push(format!(
                "{name}: .ci/run does not run it (`expect_no_device {name} …` or `expect_runs {name} …`)"
            ));
        }
    }
    let measure_readme = source("crates/vkhip-measure/README.md");
    for name in rust_file_stems("crates/vkhip-measure/src/bin") {
        let path = format!("crates/vkhip-measure/src/bin/{name}.rs");
        if !MEASURE_PROGRAMS.contains(&path.as_str()) {
            missing.push(format!("{name}: not in tests/examples.rs' MEASURE_PROGRAMS"));
        }
        let row = format!("| `{name}` | ");
        if !measure_readme.lines().any(|l| l.starts_with(&row) && l.contains(&format!("--bin {name}"))) {
            missing.push(format!("{name}: no row `{row}… --bin {name} …` in crates/vkhip-measure/README.md"));
        }
        let runs_in_ci = |how: &str| ci.lines().any(|l| l.starts_with(&format!("{how} {name} ")));
        if !runs_in_ci("expect_no_device") && !runs_in_ci("expect_runs") {
            missing.push(format!("{name}: .ci/run does not run it"));
        }
        if ci.lines().any(|l| l.contains(&format!("examples/{name}"))) {
            missing.push(format!("{name}: .ci/run still looks for it among the examples"));
        }
    }
    assert!(missing.is_empty(), "examples that can drift out of sight:\n{}", missing.join("\n"));
}

/// `wgpu_handoff_cost` refuses a bad argument with one line and exit 1 before it looks for a
/// device, and without a GPU driver ends with the no-device line and exit 2 with good ones. Runs
/// the binary next to this test's (`target/debug`), which `.ci/run`'s examples stage builds with
/// `--features wgpu` before the tests; skipped where it was not built, a failure under CI
/// (`.ci/hip-sid.sh`, whose target directory has no wgpu programs, leaves this test out).
#[test]
fn the_handoff_benchmark_refuses_bad_arguments_with_one_line() {
    let test = "the_handoff_benchmark_refuses_bad_arguments_with_one_line";
    let exe = std::env::current_exe().expect("the test's executable");
    let debug = exe.parent().and_then(|deps| deps.parent()).expect("target/debug");
    let bin = debug.join("wgpu_handoff_cost");
    if !bin.is_file() {
        let build = "cargo build -p vkhip-measure --features wgpu --bin wgpu_handoff_cost";
        skip::skip(test, &format!("{} ({build})", bin.display()), true);
        return;
    }
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&bin).args(args).output().expect("the benchmark runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let refusals: [(&[&str], &str); 9] = [
        (&["--frames", "0"], "--frames \"0\": expected a whole number in 10..="),
        (&["--frames", "9"], "--frames \"9\": expected a whole number in 10..="),
        (&["--frames", "-5"], "--frames \"-5\": expected a whole number"),
        (&["--rounds", "0"], "--rounds \"0\": expected a whole number in 1..=100"),
        (&["--k", "9"], "--k \"9\": expected a whole number in 1..=8"),
        (&["--grid", "0x5"], "--grid \"0x5\": expected WxH"),
        (&["--grid", "640"], "--grid \"640\": expected WxH"),
        (&["--k", "2", "--frames"], "--frames needs a value"),
        (&["--bogus", "1"], "unknown argument \"--bogus\""),
    ];
    for (args, says) in refusals {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, Some(1), "{args:?}: exit {code:?}, stderr {stderr:?}");
        assert!(stdout.is_empty(), "{args:?}: stdout {stdout:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        let want = format!("wgpu_handoff_cost: error: {says}");
        assert!(stderr.starts_with(&want), "{args:?}: {stderr:?} does not start with {want:?}");
    }
    if !skip::require_part(test, "the no-device exit", Component::NoGpuDriver) {
        return;
    }
    let good: [&[&str]; 2] =
        [&[], &["--grid", "67x45", "--k", "1", "--frames", "10", "--warmup", "0", "--rounds", "1"]];
    for args in good {
        let (code, _, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: exit {code:?}, stderr {stderr:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        assert!(stderr.starts_with("wgpu_handoff_cost: no usable CUDA device: "), "{args:?}: {stderr:?}");
    }
}

/// `semaphore_pingpong` refuses a bad argument with one line and exit 1 before it looks for a
/// device, and without a GPU driver ends with the no-device line and exit 2 with good ones (the
/// binary next to this test's, which `.ci/run` builds before the tests; skipped where it was not
/// built, a failure under CI).
#[test]
fn the_pingpong_benchmark_refuses_bad_arguments_with_one_line() {
    let test = "the_pingpong_benchmark_refuses_bad_arguments_with_one_line";
    let exe = std::env::current_exe().expect("the test's executable");
    let debug = exe.parent().and_then(|deps| deps.parent()).expect("target/debug");
    let bin = debug.join("semaphore_pingpong");
    if !bin.is_file() {
        let build = "cargo build -p vkhip-measure --bin semaphore_pingpong";
        skip::skip(test, &format!("{} ({build})", bin.display()), true);
        return;
    }
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&bin).args(args).output().expect("the benchmark runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let refusals: [(&[&str], &str); 6] = [
        (&["--round-trips", "9"], "--round-trips \"9\": expected a whole number in 10..="),
        (&["--rounds", "0"], "--rounds \"0\": expected a whole number in 1..=100"),
        (&["--hold-ms", "0"], "--hold-ms \"0\": expected a whole number in 1..=10000"),
        (&["--warmup", "-1"], "--warmup \"-1\": expected a whole number"),
        (&["--rounds"], "--rounds needs a value"),
        (&["--frames", "1"], "unknown argument \"--frames\""),
    ];
    for (args, says) in refusals {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, Some(1), "{args:?}: exit {code:?}, stderr {stderr:?}");
        assert!(stdout.is_empty(), "{args:?}: stdout {stdout:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        let want = format!("semaphore_pingpong: error: {says}");
        assert!(stderr.starts_with(&want), "{args:?}: {stderr:?} does not start with {want:?}");
    }
    if !skip::require_part(test, "the no-device exit", Component::NoGpuDriver) {
        return;
    }
    for args in [&[][..], &["--round-trips", "10", "--warmup", "0", "--rounds", "1", "--hold-ms", "1"]] {
        let (code, _, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: exit {code:?}, stderr {stderr:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        assert!(stderr.starts_with("semaphore_pingpong: no usable CUDA device: "), "{args:?}: {stderr:?}");
    }
}

/// The Rust files under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// What `cargo package` ships of the interop crate is its directory: a file that its sources,
/// tests or examples include by path (`#[path]`, `include_str!`, `include_bytes!`) from outside
/// it would be missing from the package, and the crate's tests would not build from crates.io.
#[test]
fn the_interop_crate_includes_no_file_from_outside_its_directory() {
    let krate = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/vkhip-interop");
    let krate = krate.canonicalize().expect("the crate's directory");
    let mut files = Vec::new();
    rust_files(&krate, &mut files);
    let mut outside = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for opener in ["#[path = \"", "include_str!(\"", "include_bytes!(\""] {
            for (at, _) in text.match_indices(opener) {
                let rest = &text[at + opener.len()..];
                let included = &rest[..rest.find('"').expect("a closing quote")];
                let target = path.parent().expect("a directory").join(included);
                match target.canonicalize() {
                    Ok(t) if t.starts_with(&krate) => {}
                    _ => outside.push(format!("{}: {opener}{included}", path.display())),
                }
            }
        }
    }
    assert!(files.len() > 20, "{} files: the walk missed the crate", files.len());
    assert!(outside.is_empty(), "files the crate's package would lack:\n{}", outside.join("\n"));
}

/// Whole-line comments that hang off the line above: indented deeper than the code lines on
/// both sides of them. rustfmt puts the comment line after a trailing comment at that comment's
/// column (`x(); // a` then `// b` becomes `// b` at column 12), where it reads as part of the line
/// above; a `// SAFETY:` there no longer sits above its `unsafe`.
fn hanging_comments(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    for i in 1..lines.len() {
        let (prev, line) = (lines[i - 1], lines[i]);
        if !line.trim_start().starts_with("//")
            || prev.trim().is_empty()
            || prev.trim_start().starts_with("//")
        {
            continue;
        }
        let next = lines.get(i + 1).map_or(0, |l| indent(l));
        if indent(line) > indent(prev).max(next) + 4 {
            out.push(i + 1);
        }
    }
    out
}

#[test]
fn comments_stand_on_their_own_lines() {
    let hung = "fn f() {\n    let a = 1; // one\n               // SAFETY: two.\n    unsafe { g() };\n}\n";
    assert_eq!(hanging_comments(hung), [3], "the check finds rustfmt's hung comment");
    let fine = "fn f() {\n    let a = 1; // one\n    // SAFETY: two.\n    unsafe {\n        // inside\n        g()\n    };\n}\n";
    assert!(hanging_comments(fine).is_empty());

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("build.rs")];
    for dir in ["src", "tests", "crates/vkhip-interop"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for line in hanging_comments(&text) {
            found.push(format!("{}:{line}", path.strip_prefix(root).unwrap_or(path).display()));
        }
    }
    assert!(files.len() > 50, "{} Rust files: the walk missed the sources", files.len());
    assert!(
        found.is_empty(),
        "comments hanging off the line above (put them on their own lines):\n{}",
        found.join("\n")
    );
}
