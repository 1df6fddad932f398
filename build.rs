//! Compiles shaders/*.{vert,frag,comp} (GLSL 450) to SPIR-V with naga at build time: no glslc or
//! other tool on PATH. Generates `$OUT_DIR/shaders.rs` with one `&[u32]` per shader.

use std::fmt::Write as _;
use std::path::Path;

fn compile(path: &Path, stage: naga::ShaderStage) -> Vec<u32> {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.display().to_string();
    let mut frontend = naga::front::glsl::Frontend::default();
    let module = frontend
        .parse(&naga::front::glsl::Options::from(stage), &src)
        .unwrap_or_else(|e| panic!("GLSL error in {name}:\n{}", e.emit_to_string(&src)));
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::IMMEDIATES,
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("validation error in {name}:\n{}", e.emit_to_string(&src)));
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        flags: naga::back::spv::WriterFlags::empty(),
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions { shader_stage: stage, entry_point: "main".into() };
    naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
        .unwrap_or_else(|e| panic!("SPIR-V generation failed for {name}: {e}"))
}

fn main() {
    println!("cargo:rerun-if-changed=shaders");
    let out = std::env::var("OUT_DIR").expect("OUT_DIR");
    let mut rs = String::new();
    for (file, stage, constant) in [
        ("surface.vert", naga::ShaderStage::Vertex, "SURFACE_VERT"),
        ("surface.frag", naga::ShaderStage::Fragment, "SURFACE_FRAG"),
        ("sinewave.comp", naga::ShaderStage::Compute, "SINEWAVE_COMP"),
    ] {
        let path = Path::new("shaders").join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        let words = compile(&path, stage);
        let _ = writeln!(rs, "/// SPIR-V of shaders/{file}.\npub const {constant}: &[u32] = &{words:?};");
    }
    std::fs::write(Path::new(&out).join("shaders.rs"), rs).expect("write shaders.rs");
}
