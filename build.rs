//! Build script: compiles every GLSL shader in `shaders/` (`*.vert`, `*.frag`, `*.comp`) to
//! SPIR-V with naga (GLSL 450 frontend → validator → SPIR-V 1.3 backend, i.e. Vulkan 1.1+), so
//! no `glslc` or any other tool on PATH is needed.
//!
//! Outputs, in `OUT_DIR`:
//! - `<name>.<stage>.spv`: the binary module (handy for `spirv-val` / `spirv-dis`);
//! - `shaders.rs`: one `pub const <NAME>_<STAGE>: &[u32]` word array per shader (e.g.
//!   `surface.vert` → `SURFACE_VERT`), included by `src/shaders.rs`. Words, not bytes, so the
//!   code is always 4-byte aligned as `vkCreateShaderModule` requires.
//!
//! Any parse or validation error fails the build with the file name, line, column and naga's
//! message (all shaders are compiled, so every broken file is reported at once).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use naga::back::spv;
use naga::valid::{Capabilities, ValidationFlags, Validator};
use naga::ShaderStage;

const SHADER_DIR: &str = "shaders";

fn stage_for(ext: &str) -> Option<ShaderStage> {
    match ext {
        "vert" => Some(ShaderStage::Vertex),
        "frag" => Some(ShaderStage::Fragment),
        "comp" => Some(ShaderStage::Compute),
        _ => None,
    }
}

/// `surface.vert` → `SURFACE_VERT`.
fn const_name(path: &Path) -> String {
    let file = path.file_name().unwrap().to_string_lossy();
    file.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect()
}

/// A second build of one shader with a `#define` and its own SPIR-V version; `layer_location`:
/// the output at that location becomes `BuiltIn Layer` ([`patch_layer`]).
struct Variant {
    file: &'static str,
    name: &'static str,
    define: &'static str,
    lang_version: (u8, u8),
    layer_location: Option<u32>,
}

/// `surface.vert` for N views in one render pass: gl_Layer from a push constant (see the
/// shader and docs/ARCHITECTURE.md, "Views").
const VARIANTS: &[Variant] = &[Variant {
    file: "surface.vert",
    name: "SURFACE_LAYERED_VERT",
    define: "VKHIP_LAYERED",
    lang_version: (1, 5),
    layer_location: Some(15),
}];

fn compile(path: &Path, stage: ShaderStage) -> Result<Vec<u32>, String> {
    compile_with(path, stage, None, (1, 3))
}

fn compile_with(
    path: &Path,
    stage: ShaderStage,
    define: Option<&str>,
    lang_version: (u8, u8),
) -> Result<Vec<u32>, String> {
    let shown = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;

    let mut glsl = naga::front::glsl::Options::from(stage);
    if let Some(d) = define {
        glsl.defines.insert(d.to_string(), "1".to_string());
    }
    let module = naga::front::glsl::Frontend::default()
        .parse(&glsl, &source)
        .map_err(|e| format!("GLSL parse error(s):\n{}", e.emit_to_string_with_path(&source, &shown)))?;

    // IMMEDIATES = push constants (naga's newer name for them).
    let info = Validator::new(ValidationFlags::all(), Capabilities::IMMEDIATES)
        .validate(&module)
        .map_err(|e| format!("naga validation error:\n{}", e.emit_to_string_with_path(&source, &shown)))?;

    let options = spv::Options {
        lang_version,
        // Deliberately NOT `ADJUST_COORDINATE_SPACE` (naga's default): that flag negates
        // gl_Position.y for WGSL-style clip space. Our GLSL is written for Vulkan clip space,
        // so the SPIR-V must behave exactly as glslc's would. Also no CLAMP_FRAG_DEPTH.
        flags: spv::WriterFlags::DEBUG | spv::WriterFlags::LABEL_VARYINGS,
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions { shader_stage: stage, entry_point: "main".into() };
    spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("{shown}: SPIR-V generation failed: {e}"))
}

/// naga's GLSL frontend has no `gl_Layer`: turn the output variable decorated `Location
/// location` into `BuiltIn Layer` (dropping its `Flat`, which a built-in does not take) and
/// declare `OpCapability ShaderLayer` (SPIR-V 1.5; Vulkan 1.2's `shaderOutputLayer`). Fails
/// unless exactly one such output exists.
fn patch_layer(words: &[u32], location: u32) -> Result<Vec<u32>, String> {
    const OP_CAPABILITY: u32 = 17;
    const OP_DECORATE: u32 = 71;
    const DECORATION_BUILTIN: u32 = 11;
    const DECORATION_FLAT: u32 = 14;
    const DECORATION_LOCATION: u32 = 30;
    const BUILTIN_LAYER: u32 = 9;
    const CAPABILITY_SHADER_LAYER: u32 = 69;
    let (header, body) = words.split_at(5);
    let mut insts = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let count = (body[i] >> 16) as usize;
        if count == 0 || i + count > body.len() {
            return Err(format!("malformed SPIR-V at word {}", i + 5));
        }
        insts.push(&body[i..i + count]);
        i += count;
    }
    let decorate = |inst: &[u32], decoration: u32| {
        inst[0] & 0xffff == OP_DECORATE && inst.len() >= 3 && inst[2] == decoration
    };
    let targets: Vec<u32> = insts
        .iter()
        .filter(|inst| decorate(inst, DECORATION_LOCATION) && inst.len() == 4 && inst[3] == location)
        .map(|inst| inst[1])
        .collect();
    let [target] = targets[..] else {
        return Err(format!("{} variables at location {location}, 1 expected", targets.len()));
    };
    let mut out = header.to_vec();
    let mut capability_added = false;
    for inst in insts {
        let op = inst[0] & 0xffff;
        if op != OP_CAPABILITY && !capability_added {
            out.extend([(2 << 16) | OP_CAPABILITY, CAPABILITY_SHADER_LAYER]);
            capability_added = true;
        }
        if decorate(inst, DECORATION_LOCATION) && inst[1] == target {
            out.extend([(4 << 16) | OP_DECORATE, target, DECORATION_BUILTIN, BUILTIN_LAYER]);
        } else if !(decorate(inst, DECORATION_FLAT) && inst[1] == target) {
            out.extend_from_slice(inst);
        }
    }
    Ok(out)
}

/// One line for `cargo:warning`: "file:line:col: message (notes)" from a codespan report.
fn summary(report: &str) -> String {
    let location = report.lines().find_map(|l| l.trim().strip_prefix("┌─ "));
    let message = report.lines().find_map(|l| l.trim().strip_prefix("error: "));
    let notes: Vec<&str> = report.lines().filter_map(|l| l.trim().strip_prefix("= ")).collect();
    match (location, message) {
        (Some(loc), Some(msg)) if notes.is_empty() => format!("{loc}: {msg}"),
        (Some(loc), Some(msg)) => format!("{loc}: {msg} ({})", notes.join("; ")),
        _ => report.lines().take(3).collect::<Vec<_>>().join(" "),
    }
}

fn main() {
    println!("cargo:rerun-if-changed={SHADER_DIR}");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR not set"));

    let mut files: Vec<(PathBuf, ShaderStage)> = std::fs::read_dir(SHADER_DIR)
        .unwrap_or_else(|e| panic!("cannot read {SHADER_DIR}/: {e}"))
        .map(|entry| entry.expect("cannot read directory entry").path())
        .filter_map(|p| {
            let stage = stage_for(p.extension()?.to_str()?)?;
            Some((p, stage))
        })
        .collect();
    files.sort();

    let mut generated = String::from("// @generated by build.rs from shaders/*: SPIR-V words.\n");
    let mut errors = Vec::new();
    let variants = VARIANTS.iter().map(|v| {
        let path = Path::new(SHADER_DIR).join(v.file);
        let stage =
            stage_for(path.extension().and_then(|e| e.to_str()).unwrap_or_default()).expect("a stage");
        let words =
            compile_with(&path, stage, Some(v.define), v.lang_version).and_then(|w| match v.layer_location {
                Some(l) => patch_layer(&w, l),
                None => Ok(w),
            });
        (path, v.name.to_string(), format!("{}.{}", v.file, v.define.to_lowercase()), words)
    });
    let plain = files.iter().map(|(path, stage)| {
        println!("cargo:rerun-if-changed={}", path.display());
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        (path.clone(), const_name(path), file, compile(path, *stage))
    });
    let all: Vec<_> = plain.collect::<Vec<_>>().into_iter().chain(variants).collect();
    for (path, name, file, words) in all {
        match words {
            Ok(words) => {
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                std::fs::write(out_dir.join(format!("{file}.spv")), bytes).expect("cannot write .spv");
                writeln!(generated, "\n/// SPIR-V of `shaders/{file}` ({} words).", words.len()).unwrap();
                write!(generated, "pub const {name}: &[u32] = &[").unwrap();
                for (i, w) in words.iter().enumerate() {
                    if i % 8 == 0 {
                        generated.push_str("\n   ");
                    }
                    write!(generated, " {w:#010x},").unwrap();
                }
                generated.push_str("\n];\n");
            }
            Err(e) => errors.push(format!("error compiling {}:\n{e}", path.display())),
        }
    }

    if !errors.is_empty() {
        for e in &errors {
            eprintln!("{e}");
            println!("cargo:warning={}", summary(e));
        }
        eprintln!("{} shader(s) failed to compile", errors.len());
        std::process::exit(1);
    }
    std::fs::write(out_dir.join("shaders.rs"), generated).expect("cannot write shaders.rs");
}
