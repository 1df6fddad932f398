//! The SPIR-V shaders (compiled from `shaders/*` by `build.rs` with naga; no tool on PATH) and
//! the exact interface the Vulkan code builds its pipelines against.
//!
//! All modules use the entry point `"main"` ([`ENTRY_POINT`]) and are SPIR-V 1.3 (Vulkan ≥ 1.1).
//! Each constant is a `&[u32]` word array, so it can go straight into
//! `vk::ShaderModuleCreateInfo::default().code(SURFACE_VERT)`.
//!
//! # Surface (graphics) pipeline: [`SURFACE_VERT`] + [`SURFACE_FRAG`]
//!
//! - **No vertex buffers, no index buffer** (empty vertex input state).
//! - Topology `TRIANGLE_STRIP`, no primitive restart. Draw with
//!   `cmd_draw(cmd, 2 * W, H - 1, 0, 0)` ([`surface_draw`]): instance `r` is the strip between
//!   rows `r` and `r + 1`; vertex `i` is grid point `(x, y) = (i / 2, r + i % 2)`.
//!   `firstVertex` and `firstInstance` must be 0.
//! - Rasterisation: cull mode `NONE` (both faces are lit: the fragment shader turns the normal
//!   towards the eye), any front face. Depth: `D32_SFLOAT`, test and write on, compare `LESS`.
//! - Colour attachment 0: `R8G8B8A8_UNORM` (or `B8G8R8A8_UNORM` for a swapchain); the shader
//!   writes display-ready values with alpha 1 and does no sRGB encoding (so do not use an
//!   `_SRGB` format unless you want a washed-out picture). No blending needed.
//! - Descriptor set 0, binding 0 ([`HEIGHTS_BINDING`]): `STORAGE_BUFFER`, stage `VERTEX`,
//!   GLSL `layout(set=0, binding=0, std430) readonly buffer Heights { float h[]; }`: the slot,
//!   one `f32` per grid point, row-major, `index = y * W + x` (see [`crate::sim`]). The shader
//!   reads indices up to `W * H - 1` only; it does no bounds checking of its own.
//! - Push constants: one range, stages `VERTEX | FRAGMENT`, offset 0, size 96
//!   ([`SurfacePush`], [`SURFACE_PUSH_SIZE`]):
//!
//!   | offset | GLSL                 | meaning                                          |
//!   |-------:|----------------------|--------------------------------------------------|
//!   |      0 | `mat4 view_proj`     | world → Vulkan clip space, column-major          |
//!   |     64 | `vec4 eye_pos`       | camera position in world space (`w` ignored)      |
//!   |     80 | `uint width`         | W                                                |
//!   |     84 | `uint height`        | H                                                |
//!   |     88 | `float height_scale` | world `y = h * height_scale`                      |
//!   |     92 | `float pad`          | unused                                           |
//!
//! - World space, y up: grid point `(x, y)` is at `(u, h * height_scale, v)` with
//!   `u = 2x/(W−1) − 1`, `v = 2y/(H−1) − 1`, so the field spans [−1, 1] in x and z. The shader
//!   does no y flip: `view_proj` must already map to Vulkan clip space (NDC y down, depth
//!   0..1), e.g. glam's `Mat4::perspective_rh(..)` with `y_axis.y` negated, times
//!   `Mat4::look_at_rh(..)`.
//! - Shading: colour ramp blue → cyan → green → yellow → red over `h / AMPLITUDE` in [−1, 1]
//!   (`AMPLITUDE` = [`crate::sim::AMPLITUDE`] is a constant in `surface.frag`), faint contour
//!   lines, hemisphere ambient, Lambert and a little Blinn-Phong from a fixed light direction.
//!   Normals come from central differences of the neighbouring heights in the vertex shader.
//!
//! # Compute writer: [`SINEWAVE_COMP`]
//!
//! - `local_size = (16, 16, 1)`; dispatch [`sinewave_dispatch`] = `(ceil(W/16), ceil(H/16), 1)`.
//!   One invocation per grid point; out-of-grid invocations do nothing.
//! - Descriptor set 0, binding 0: `STORAGE_BUFFER`, stage `COMPUTE`,
//!   `layout(set=0, binding=0, std430) buffer Heights { float h[]; }` (same layout; only
//!   written, but declared read-write because naga rejects `writeonly` storage buffers).
//! - Push constants: one range, stage `COMPUTE`, offset 0, size 24 ([`SinewavePush`],
//!   [`SINEWAVE_PUSH_SIZE`]): `uint width` @0, `uint height` @4, `float phase` @8,
//!   `float amplitude` @12, `float frequency` @16, `uint envs` @20 (`--envs`: the dispatch's z;
//!   environment e at `phase + (e % 64) × 0.09375`, written from `e × W × H` on).
//! - Computes exactly [`crate::sim::height`] in the same order of operations, but with its own
//!   `sin`/`cos` ([`trig`]): GLSL's built-ins are only guaranteed to 2^-11 absolute error on
//!   Vulkan, far from the 1e-5 every backend must meet on every driver.
//!
//! # Post filter: [`OUTLINE_COMP`] (`--post outline`, the `vulkan` backend)
//!
//! - `local_size = (16, 16, 1)` ([`OUTLINE_LOCAL_SIZE`]); dispatch [`outline_dispatch`] =
//!   `(ceil(W/16), ceil(H/16), 1)`. One invocation per texel; out-of-image invocations do nothing.
//! - Descriptor set 0, binding 0 ([`OUTLINE_SCENE_BINDING`]): `STORAGE_IMAGE`, stage `COMPUTE`,
//!   `layout(set=0, binding=0, rgba8) uniform readonly image2D scene`: the rendered frame.
//!   Binding 1 ([`OUTLINE_OUTPUT_BINDING`]): `STORAGE_IMAGE`, stage `COMPUTE`,
//!   `layout(set=0, binding=1, rgba8) uniform writeonly image2D outlined`: the filter's result.
//!   Both `R8G8B8A8_UNORM` views of one level and layer, in layout `GENERAL` (naga accepts
//!   `readonly`/`writeonly` on storage images, unlike on storage buffers).
//! - Push constants: one range, stage `COMPUTE`, offset 0, size 8 ([`OutlinePush`]):
//!   `uint width` @0, `uint height` @4 (the images' extent).
//! - Computes exactly [`crate::compute::post::outline_reference`] in integers (the texels are
//!   turned back into bytes with `round(v * 255)`, and each result `k` is stored as `k / 255`,
//!   which every conformant UNORM8 conversion turns back into `k`).
//!
//! # Frame-time overlay: [`OVERLAY_VERT`] + [`OVERLAY_FRAG`]
//!
//! - No vertex or index buffers; topology `TRIANGLE_STRIP`, `cmd_draw(cmd, 4, 1, 0, 0)`: one
//!   screen-space rectangle whose corners come from [`OverlayPush::rect`] (Vulkan NDC).
//! - Drawn inside the surface's render pass after the surface: depth test and write off, alpha
//!   blending (`SRC_ALPHA`, `ONE_MINUS_SRC_ALPHA` on colour; the target's alpha is kept).
//! - Descriptor set 0, binding 0: `STORAGE_BUFFER`, stage `FRAGMENT`,
//!   `layout(set=0, binding=0, std430) readonly buffer Samples { vec4 s[]; }`: one `vec4` per
//!   column, oldest first, `(frame ms, draw ms, compute ms, unused)`, negative = no value
//!   ([`crate::overlay::OverlayHistory::write_samples`]). The shader reads `s[0..count]` only.
//! - Push constants: one range, stages `VERTEX | FRAGMENT`, offset 0, size 32 ([`OverlayPush`]):
//!   `vec4 rect` @0, `float top_ms` @16, `float ref_ms` @20, `float height_px` @24,
//!   `uint count` @28.
//!
//! # naga notes
//!
//! naga's GLSL frontend accepts no per-member `layout(offset = N)` in blocks, so the GLSL lists
//! the offsets in comments; the tests below read the `Offset` decorations back out of the
//! SPIR-V and compare them with these Rust structs. naga types `gl_VertexIndex` /
//! `gl_InstanceIndex` as `uint` (GLSL says `int`): the shader wraps them in `uint(..)`, which is
//! valid either way. naga rejects `writeonly` storage buffers, so the compute shader's buffer is
//! declared read-write (no `NonReadable` in the SPIR-V; same descriptor type). `build.rs` turns off naga's default `ADJUST_COORDINATE_SPACE` (a y flip
//! meant for WGSL), so the SPIR-V behaves as glslc's would.

use std::ffi::CStr;

use crate::sim::{Grid, WaveParams};

// A new shaders/* file gets a constant here that stays unused until re-exported below.
#[allow(dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}

/// Vertex shader of the surface pipeline (`shaders/surface.vert`).
pub const SURFACE_VERT: &[u32] = generated::SURFACE_VERT;
/// Fragment shader of the surface pipeline (`shaders/surface.frag`).
pub const SURFACE_FRAG: &[u32] = generated::SURFACE_FRAG;
/// The surface's vertex shader for N views in one render pass (`shaders/surface.vert` built
/// with `VKHIP_LAYERED`): push constants [`ViewPush`], writes `gl_Layer` = `layer` (SPIR-V 1.5,
/// capability `ShaderLayer`: the device's `shaderOutputLayer` feature), reads the heights from
/// `heights_base` on. Used with [`SURFACE_FRAG`] (whose block is the first 96 bytes).
pub const SURFACE_LAYERED_VERT: &[u32] = generated::SURFACE_LAYERED_VERT;
/// Compute shader that writes the height field (`shaders/sinewave.comp`).
pub const SINEWAVE_COMP: &[u32] = generated::SINEWAVE_COMP;
/// Compute shader of the post filter (`shaders/outline.comp`).
pub const OUTLINE_COMP: &[u32] = generated::OUTLINE_COMP;
/// Vertex shader of the frame-time overlay (`shaders/overlay.vert`).
pub const OVERLAY_VERT: &[u32] = generated::OVERLAY_VERT;
/// Fragment shader of the frame-time overlay (`shaders/overlay.frag`).
pub const OVERLAY_FRAG: &[u32] = generated::OVERLAY_FRAG;

/// Entry point name of every module.
pub const ENTRY_POINT: &CStr = c"main";

/// Descriptor set 0 binding of the heights storage buffer (both pipelines).
pub const HEIGHTS_BINDING: u32 = 0;

/// Workgroup size of [`SINEWAVE_COMP`] in x and in y.
pub const SINEWAVE_LOCAL_SIZE: u32 = 16;

/// Workgroup size of [`OUTLINE_COMP`] in x and in y.
pub const OUTLINE_LOCAL_SIZE: u32 = 16;

/// Descriptor set 0 binding of [`OUTLINE_COMP`]'s input (the scene, read only).
pub const OUTLINE_SCENE_BINDING: u32 = 0;

/// Descriptor set 0 binding of [`OUTLINE_COMP`]'s output (written only).
pub const OUTLINE_OUTPUT_BINDING: u32 = 1;

/// Size in bytes of the outline push-constant range (stage COMPUTE, offset 0).
pub const OUTLINE_PUSH_SIZE: u32 = std::mem::size_of::<OutlinePush>() as u32;

/// Size in bytes of the surface push-constant range (stages VERTEX | FRAGMENT, offset 0).
pub const SURFACE_PUSH_SIZE: u32 = std::mem::size_of::<SurfacePush>() as u32;

/// Size in bytes of the sinewave push-constant range (stage COMPUTE, offset 0).
pub const SINEWAVE_PUSH_SIZE: u32 = std::mem::size_of::<SinewavePush>() as u32;

/// `(vertex_count, instance_count)` for `cmd_draw` of the surface: `(2·W, H − 1)`.
pub fn surface_draw(grid: Grid) -> (u32, u32) {
    (2 * grid.width, grid.height - 1)
}

/// Workgroup counts for `cmd_dispatch` of [`SINEWAVE_COMP`]: `(⌈W/16⌉, ⌈H/16⌉, 1)`.
///
/// # Examples
///
/// ```
/// use vkhip::shaders::{sinewave_dispatch, surface_draw};
/// use vkhip::sim::Grid;
///
/// let grid = Grid { width: 513, height: 257 };
/// // One triangle strip of 2·W vertices per pair of rows.
/// assert_eq!(surface_draw(grid), (1026, 256));
/// // 16×16 workgroups, rounded up: the edge groups are partly outside the grid.
/// assert_eq!(sinewave_dispatch(grid), (33, 17, 1));
/// ```
pub fn sinewave_dispatch(grid: Grid) -> (u32, u32, u32) {
    (grid.width.div_ceil(SINEWAVE_LOCAL_SIZE), grid.height.div_ceil(SINEWAVE_LOCAL_SIZE), 1)
}

/// Workgroup counts for `cmd_dispatch` of [`OUTLINE_COMP`]: `(⌈W/16⌉, ⌈H/16⌉, 1)`.
///
/// ```
/// assert_eq!(vkhip::shaders::outline_dispatch(4097, 3), (257, 1, 1));
/// assert_eq!(vkhip::shaders::outline_dispatch(1, 1), (1, 1, 1));
/// ```
pub fn outline_dispatch(width: u32, height: u32) -> (u32, u32, u32) {
    (width.div_ceil(OUTLINE_LOCAL_SIZE), height.div_ceil(OUTLINE_LOCAL_SIZE), 1)
}

/// Push constants of [`OUTLINE_COMP`]: `OutlinePush` in `outline.comp`. Byte offsets 0, 4; 8 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutlinePush {
    pub width: u32,
    pub height: u32,
}

impl OutlinePush {
    /// The bytes for `cmd_push_constants` (offset 0, stage COMPUTE).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C), two 4-byte fields, no padding; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), std::mem::size_of::<Self>()) }
    }
}

/// Push constants of the surface pipeline: `SurfacePush` in `surface.vert` / `surface.frag`.
///
/// Byte offsets 0, 64, 80, 84, 88, 92; 96 bytes; no padding anywhere.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SurfacePush {
    /// World → Vulkan clip space, as 4 columns (glam's `Mat4::to_cols_array_2d`).
    pub view_proj: [[f32; 4]; 4],
    /// Camera position in world space; `w` is ignored.
    pub eye_pos: [f32; 4],
    pub width: u32,
    pub height: u32,
    /// World-space y per unit of height.
    pub height_scale: f32,
    pub _pad: f32,
}

impl SurfacePush {
    pub fn new(view_proj: glam::Mat4, eye: glam::Vec3, grid: Grid, height_scale: f32) -> Self {
        SurfacePush {
            view_proj: view_proj.to_cols_array_2d(),
            eye_pos: eye.extend(1.0).to_array(),
            width: grid.width,
            height: grid.height,
            height_scale,
            _pad: 0.0,
        }
    }

    /// The bytes for `cmd_push_constants` (offset 0, stages VERTEX | FRAGMENT).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C), only 4-byte fields, size a multiple of 4: no padding bytes, so all
        // size_of::<Self>() bytes are initialised; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), std::mem::size_of::<Self>()) }
    }
}

/// Push constants of [`SURFACE_LAYERED_VERT`]: [`SurfacePush`], then the view's layer (@96) and
/// the index of its environment's first height (@100); 104 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ViewPush {
    pub surface: SurfacePush,
    pub layer: u32,
    pub heights_base: u32,
}

/// Size in bytes of the layered surface's push-constant range (stages VERTEX | FRAGMENT).
pub const VIEW_PUSH_SIZE: u32 = std::mem::size_of::<ViewPush>() as u32;

impl ViewPush {
    /// The bytes for `cmd_push_constants` (offset 0, stages VERTEX | FRAGMENT).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of 4-byte fields only: no padding; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), std::mem::size_of::<Self>()) }
    }
}

/// Push constants of [`SINEWAVE_COMP`]: `SinewavePush` in `sinewave.comp`.
///
/// Byte offsets 0, 4, 8, 12, 16, 20; 24 bytes. The first five in the order of the HIP/CUDA
/// kernel's arguments; `envs` is the Vulkan writer's (`--envs`, dispatch z).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SinewavePush {
    pub width: u32,
    pub height: u32,
    pub phase: f32,
    pub amplitude: f32,
    pub frequency: f32,
    pub envs: u32,
}

impl From<&WaveParams> for SinewavePush {
    fn from(p: &WaveParams) -> Self {
        SinewavePush {
            width: p.grid.width,
            height: p.grid.height,
            phase: p.phase,
            amplitude: p.amplitude,
            frequency: p.frequency,
            envs: p.envs.max(1),
        }
    }
}

impl SinewavePush {
    /// The bytes for `cmd_push_constants` (offset 0, stage COMPUTE).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: as for SurfacePush: repr(C), five 4-byte fields, no padding.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), std::mem::size_of::<Self>()) }
    }
}

/// Push constants of the overlay pipeline: `OverlayPush` in `overlay.vert` / `overlay.frag`
/// (stages VERTEX | FRAGMENT, offset 0). See [`crate::overlay`] for what is drawn.
///
/// Byte offsets 0, 16, 20, 24, 28; 32 bytes; no padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OverlayPush {
    /// `x0, y0, x1, y1` of the rectangle in Vulkan NDC (y down).
    pub rect: [f32; 4],
    /// Milliseconds at the rectangle's top edge (its bottom edge is 0 ms).
    pub top_ms: f32,
    /// Height of the reference line, milliseconds.
    pub ref_ms: f32,
    /// The rectangle's height in pixels (sets the line widths).
    pub height_px: f32,
    /// Samples (columns) in the storage buffer, at least 1.
    pub count: u32,
}

impl OverlayPush {
    /// The bytes for `cmd_push_constants` (offset 0, stages VERTEX | FRAGMENT).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: as for SurfacePush: repr(C), only 4-byte fields, no padding.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), std::mem::size_of::<Self>()) }
    }
}

/// The `sin`/`cos` of `shaders/sinewave.comp`, in Rust `f32` with the same constants and the
/// same order of operations, so its accuracy can be tested on the CPU.
///
/// Cody–Waite reduction `x = k·π/2 + r` with π/2 split in three parts (`k·PIO2_HI` and
/// `k·PIO2_MID` are exact for the small `k` used), then the cephes `sinf`/`cosf` minimax
/// polynomials on [−π/4, π/4]; the quadrant `k mod 4` picks ±sin/±cos. About 1 ulp for
/// |x| ≲ 100 (the wave's arguments stay within [−6, 6 + 2π]). A GPU may fuse a multiply and
/// an add into an FMA, which changes results by an ulp or so at most.
pub mod trig {
    macro_rules! constants {
        ($($(#[$doc:meta])* $name:ident = $lit:literal;)*) => {
            $($(#[$doc])* pub const $name: f32 = $lit;)*
            /// `(name, literal)` of every constant, exactly as written in `sinewave.comp`.
            pub const LITERALS: &[(&str, &str)] = &[$((stringify!($name), stringify!($lit))),*];
        };
    }

    constants! {
        /// 2/π, to pick the quadrant.
        FRAC_2_PI = 0.63661975;
        /// High part of π/2 (8 significant bits).
        PIO2_HI = 1.5703125;
        /// Middle part of π/2 (11 significant bits).
        PIO2_MID = 4.837513e-4;
        /// Low part of π/2.
        PIO2_LO = 7.54979e-8;
        SIN_S1 = 0.16666655;
        SIN_S2 = 8.332161e-3;
        SIN_S3 = 1.9515296e-4;
        COS_C1 = 0.041666646;
        COS_C2 = 1.3887316e-3;
        COS_C3 = 2.4433157e-5;
    }

    fn sin_poly(r: f32) -> f32 {
        let z = r * r;
        ((-SIN_S3 * z + SIN_S2) * z - SIN_S1) * z * r + r
    }

    fn cos_poly(r: f32) -> f32 {
        let z = r * r;
        ((COS_C3 * z - COS_C2) * z + COS_C1) * z * z - 0.5 * z + 1.0
    }

    /// sin(x + quarter_turns·π/2).
    fn sin_quadrant(x: f32, quarter_turns: i32) -> f32 {
        let k = (x * FRAC_2_PI + 0.5).floor();
        let r = x - k * PIO2_HI - k * PIO2_MID - k * PIO2_LO;
        let q = (k as i32 + quarter_turns) & 3;
        let s = sin_poly(r);
        let c = cos_poly(r);
        let m = if q & 1 != 0 { c } else { s };
        if q & 2 != 0 {
            -m
        } else {
            m
        }
    }

    /// `vk_sin` of `sinewave.comp`.
    pub fn sin(x: f32) -> f32 {
        sin_quadrant(x, 0)
    }

    /// `vk_cos` of `sinewave.comp`.
    pub fn cos(x: f32) -> f32 {
        sin_quadrant(x, 1)
    }

    /// `sinewave.comp`'s height: [`crate::sim::height`] with these `sin`/`cos`.
    pub fn height(p: &crate::sim::WaveParams, x: u32, y: u32) -> f32 {
        let u = 2.0 * x as f32 / (p.grid.width - 1) as f32 - 1.0;
        let v = 2.0 * y as f32 / (p.grid.height - 1) as f32 - 1.0;
        p.amplitude * sin(p.frequency * u + p.phase) * cos(p.frequency * v + p.phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::mem::{offset_of, size_of};

    const MAGIC: u32 = 0x0723_0203;

    // SPIR-V opcodes, enumerants.
    const OP_NAME: u16 = 5;
    const OP_MEMBER_NAME: u16 = 6;
    const OP_ENTRY_POINT: u16 = 15;
    const OP_EXECUTION_MODE: u16 = 16;
    const OP_TYPE_STRUCT: u16 = 30;
    const OP_TYPE_POINTER: u16 = 32;
    const OP_CONSTANT: u16 = 43;
    const OP_VARIABLE: u16 = 59;
    const OP_DECORATE: u16 = 71;
    const OP_MEMBER_DECORATE: u16 = 72;
    const MODEL_VERTEX: u32 = 0;
    const MODEL_FRAGMENT: u32 = 4;
    const MODEL_GLCOMPUTE: u32 = 5;
    const MODE_LOCAL_SIZE: u32 = 17;
    const SC_INPUT: u32 = 1;
    const SC_OUTPUT: u32 = 3;
    const SC_PUSH_CONSTANT: u32 = 9;
    const SC_STORAGE_BUFFER: u32 = 12;
    const DEC_COL_MAJOR: u32 = 5;
    const DEC_MATRIX_STRIDE: u32 = 7;
    const DEC_BUILTIN: u32 = 11;
    const DEC_NON_WRITABLE: u32 = 24;
    const DEC_NON_READABLE: u32 = 25;
    const DEC_LOCATION: u32 = 30;
    const DEC_BINDING: u32 = 33;
    const DEC_DESCRIPTOR_SET: u32 = 34;
    const DEC_OFFSET: u32 = 35;

    /// The instructions of a module: (opcode, operands).
    fn instructions(words: &[u32]) -> Vec<(u16, &[u32])> {
        assert!(words.len() > 5, "module too short");
        let mut out = Vec::new();
        let mut i = 5;
        while i < words.len() {
            let count = (words[i] >> 16) as usize;
            assert!(count > 0 && i + count <= words.len(), "malformed instruction at word {i}");
            out.push(((words[i] & 0xffff) as u16, &words[i + 1..i + count]));
            i += count;
        }
        out
    }

    /// A SPIR-V literal string (nul-terminated, little-endian packed).
    fn string(words: &[u32]) -> String {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
        String::from_utf8(bytes).unwrap()
    }

    struct Module<'a> {
        insts: Vec<(u16, &'a [u32])>,
    }

    impl<'a> Module<'a> {
        fn new(words: &'a [u32]) -> Self {
            Module { insts: instructions(words) }
        }

        fn ops(&self, op: u16) -> impl Iterator<Item = &'a [u32]> + '_ {
            self.insts.iter().filter(move |(o, _)| *o == op).map(|(_, a)| *a)
        }

        /// Variables of a storage class: ids.
        fn variables(&self, storage_class: u32) -> Vec<u32> {
            self.ops(OP_VARIABLE).filter(|a| a[2] == storage_class).map(|a| a[1]).collect()
        }

        /// The struct type behind a variable's pointer type.
        fn pointee_struct(&self, var: u32) -> u32 {
            let ptr_ty = self.ops(OP_VARIABLE).find(|a| a[1] == var).unwrap()[0];
            let pointee = self.ops(OP_TYPE_POINTER).find(|a| a[0] == ptr_ty).unwrap()[2];
            assert!(self.ops(OP_TYPE_STRUCT).any(|a| a[0] == pointee), "not a struct");
            pointee
        }

        /// Decoration value of an id (first literal), if decorated.
        fn decoration(&self, id: u32, dec: u32) -> Option<u32> {
            self.ops(OP_DECORATE).find(|a| a[0] == id && a[1] == dec).map(|a| a.get(2).copied().unwrap_or(0))
        }

        fn member_decoration(&self, id: u32, member: u32, dec: u32) -> Option<u32> {
            self.ops(OP_MEMBER_DECORATE)
                .find(|a| a[0] == id && a[1] == member && a[2] == dec)
                .map(|a| a.get(3).copied().unwrap_or(0))
        }

        /// (member name, Offset) of each member of a struct type, in member order.
        fn member_offsets(&self, st: u32) -> Vec<(String, u32)> {
            let n = self.ops(OP_TYPE_STRUCT).find(|a| a[0] == st).unwrap().len() as u32 - 1;
            (0..n)
                .map(|m| {
                    let name = self
                        .ops(OP_MEMBER_NAME)
                        .find(|a| a[0] == st && a[1] == m)
                        .map(|a| string(&a[2..]))
                        .unwrap_or_default();
                    (name, self.member_decoration(st, m, DEC_OFFSET).expect("member without Offset"))
                })
                .collect()
        }

        fn name(&self, id: u32) -> Option<String> {
            self.ops(OP_NAME).find(|a| a[0] == id).map(|a| string(&a[1..]))
        }

        /// Sorted Location decorations of the (non-builtin) variables of a storage class.
        fn locations(&self, storage_class: u32) -> Vec<u32> {
            let mut l: Vec<u32> = self
                .variables(storage_class)
                .into_iter()
                .filter(|&v| self.decoration(v, DEC_BUILTIN).is_none())
                .map(|v| self.decoration(v, DEC_LOCATION).expect("varying without Location"))
                .collect();
            l.sort();
            l
        }

        /// The one storage buffer: (set, binding, its struct).
        fn storage_buffer(&self) -> (u32, u32, u32) {
            let vars = self.variables(SC_STORAGE_BUFFER);
            assert_eq!(vars.len(), 1, "expected exactly one storage buffer");
            let v = vars[0];
            (
                self.decoration(v, DEC_DESCRIPTOR_SET).unwrap(),
                self.decoration(v, DEC_BINDING).unwrap(),
                self.pointee_struct(v),
            )
        }

        /// The push-constant block's struct. naga wraps it in an outer Block struct with one
        /// unnamed member at offset 0; look through that wrapper.
        fn push_constant_struct(&self) -> u32 {
            let vars = self.variables(SC_PUSH_CONSTANT);
            assert_eq!(vars.len(), 1, "expected exactly one push-constant block");
            let mut st = self.pointee_struct(vars[0]);
            loop {
                let members = &self.ops(OP_TYPE_STRUCT).find(|a| a[0] == st).unwrap()[1..];
                let inner = members.first().filter(|&&m| self.ops(OP_TYPE_STRUCT).any(|a| a[0] == m));
                match inner {
                    Some(&inner) if members.len() == 1 => {
                        assert_eq!(self.member_decoration(st, 0, DEC_OFFSET), Some(0));
                        st = inner;
                    }
                    _ => return st,
                }
            }
        }
    }

    fn all() -> [(&'static str, &'static [u32], u32); 4] {
        [
            ("surface.vert", SURFACE_VERT, MODEL_VERTEX),
            ("surface.frag", SURFACE_FRAG, MODEL_FRAGMENT),
            ("sinewave.comp", SINEWAVE_COMP, MODEL_GLCOMPUTE),
            ("outline.comp", OUTLINE_COMP, MODEL_GLCOMPUTE),
        ]
    }

    #[test]
    fn modules_have_magic_and_one_main_entry_point() {
        for (file, words, model) in all() {
            assert_eq!(words[0], MAGIC, "{file}: bad magic");
            assert!(words[1] >= 0x0001_0000 && words[1] <= 0x0001_0300, "{file}: version {:#x}", words[1]);
            let m = Module::new(words);
            let eps: Vec<_> = m.ops(OP_ENTRY_POINT).collect();
            assert_eq!(eps.len(), 1, "{file}: expected one OpEntryPoint");
            assert_eq!(eps[0][0], model, "{file}: wrong execution model");
            assert_eq!(string(&eps[0][2..]), ENTRY_POINT.to_str().unwrap(), "{file}: entry point name");
        }
    }

    #[test]
    fn sinewave_local_size_is_16x16() {
        let m = Module::new(SINEWAVE_COMP);
        let mode = m.ops(OP_EXECUTION_MODE).find(|a| a[1] == MODE_LOCAL_SIZE).expect("no LocalSize");
        assert_eq!(&mode[2..], &[SINEWAVE_LOCAL_SIZE, SINEWAVE_LOCAL_SIZE, 1]);
        let g = Grid { width: 33, height: 16 };
        assert_eq!(sinewave_dispatch(g), (3, 1, 1));
        assert_eq!(surface_draw(g), (66, 15));
    }

    #[test]
    fn the_layered_surface_writes_gl_layer_from_its_push_constants() {
        assert_eq!((size_of::<ViewPush>(), VIEW_PUSH_SIZE), (104, 104));
        assert_eq!((offset_of!(ViewPush, layer), offset_of!(ViewPush, heights_base)), (96, 100));
        let m = Module::new(SURFACE_LAYERED_VERT);
        let spv = m.member_offsets(m.push_constant_struct());
        let names: Vec<&str> = spv.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names[6..], ["layer", "heights_base"]);
        assert_eq!(spv[6..].iter().map(|&(_, o)| o).collect::<Vec<_>>(), [96, 100]);
        // SPIR-V 1.5, capability ShaderLayer (69), one variable decorated BuiltIn (11) Layer (9),
        // nothing left at location 15 and no Flat on it.
        assert_eq!(SURFACE_LAYERED_VERT[1], 0x0001_0500);
        assert!(m.ops(17).any(|a| a == [69]));
        let layer: Vec<u32> = m.ops(OP_DECORATE).filter(|a| a[1..] == [11, 9]).map(|a| a[0]).collect();
        assert_eq!(layer.len(), 1);
        assert!(!m.ops(OP_DECORATE).any(|a| a[1..] == [30, 15]));
        assert!(!m.ops(OP_DECORATE).any(|a| a == [layer[0], 14]));
        // The one-view shader is untouched: no layer anywhere.
        let plain = Module::new(SURFACE_VERT);
        assert!(!plain.ops(OP_DECORATE).any(|a| a[1..] == [11, 9]));
        assert_eq!(SURFACE_VERT[1], 0x0001_0300);
    }

    #[test]
    fn surface_push_layout_matches_glsl() {
        assert_eq!(size_of::<SurfacePush>(), 96);
        assert_eq!(SURFACE_PUSH_SIZE, 96);
        let rust = [
            ("view_proj", offset_of!(SurfacePush, view_proj)),
            ("eye_pos", offset_of!(SurfacePush, eye_pos)),
            ("width", offset_of!(SurfacePush, width)),
            ("height", offset_of!(SurfacePush, height)),
            ("height_scale", offset_of!(SurfacePush, height_scale)),
            ("pad", offset_of!(SurfacePush, _pad)),
        ];
        assert_eq!(rust.map(|(_, o)| o), [0, 64, 80, 84, 88, 92]);
        for (file, words) in [("surface.vert", SURFACE_VERT), ("surface.frag", SURFACE_FRAG)] {
            let m = Module::new(words);
            let st = m.push_constant_struct();
            let spv = m.member_offsets(st);
            let expect: Vec<(String, u32)> = rust.iter().map(|&(n, o)| (n.to_string(), o as u32)).collect();
            assert_eq!(spv, expect, "{file}: push-constant block differs from SurfacePush");
            // view_proj: column-major, 16-byte column stride, like [[f32; 4]; 4] of columns.
            assert_eq!(m.member_decoration(st, 0, DEC_COL_MAJOR), Some(0), "{file}: view_proj not ColMajor");
            assert_eq!(m.member_decoration(st, 0, DEC_MATRIX_STRIDE), Some(16), "{file}");
        }
        let p = SurfacePush::new(
            glam::Mat4::IDENTITY,
            glam::Vec3::new(1.0, 2.0, 3.0),
            Grid { width: 4, height: 5 },
            2.0,
        );
        let b = p.as_bytes();
        assert_eq!(b.len(), 96);
        assert_eq!(&b[64..72], [1.0f32.to_le_bytes(), 2.0f32.to_le_bytes()].concat());
        assert_eq!(&b[80..84], 4u32.to_le_bytes());
        assert_eq!(&b[88..92], 2.0f32.to_le_bytes());
    }

    #[test]
    fn overlay_push_layout_matches_glsl() {
        assert_eq!(size_of::<OverlayPush>(), 32);
        let rust = [
            ("rect", offset_of!(OverlayPush, rect)),
            ("top_ms", offset_of!(OverlayPush, top_ms)),
            ("ref_ms", offset_of!(OverlayPush, ref_ms)),
            ("height_px", offset_of!(OverlayPush, height_px)),
            ("count", offset_of!(OverlayPush, count)),
        ];
        assert_eq!(rust.map(|(_, o)| o), [0, 16, 20, 24, 28]);
        for (file, words) in [("overlay.vert", OVERLAY_VERT), ("overlay.frag", OVERLAY_FRAG)] {
            let m = Module::new(words);
            let spv = m.member_offsets(m.push_constant_struct());
            let expect: Vec<(String, u32)> = rust.iter().map(|&(n, o)| (n.to_string(), o as u32)).collect();
            assert_eq!(spv, expect, "{file}: push-constant block differs from OverlayPush");
        }
        // The samples: set 0, binding 0, read-only, in the fragment shader only.
        let frag = Module::new(OVERLAY_FRAG);
        let (set, binding, st) = frag.storage_buffer();
        assert_eq!((set, binding), (0, 0));
        assert_eq!(frag.member_offsets(st), vec![("s".to_string(), 0)]);
        assert!(Module::new(OVERLAY_VERT).variables(SC_STORAGE_BUFFER).is_empty());
        assert_eq!(Module::new(OVERLAY_VERT).locations(SC_OUTPUT), vec![0]);
        assert_eq!(frag.locations(SC_INPUT), vec![0]);
        let p =
            OverlayPush { rect: [-1.0, 0.0, 0.5, 1.0], top_ms: 33.0, ref_ms: 16.5, height_px: 7.0, count: 9 };
        let b = p.as_bytes();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[16..20], 33.0f32.to_le_bytes());
        assert_eq!(&b[28..32], 9u32.to_le_bytes());
    }

    #[test]
    fn outline_local_size_push_and_bindings_match_glsl() {
        let m = Module::new(OUTLINE_COMP);
        let mode = m.ops(OP_EXECUTION_MODE).find(|a| a[1] == MODE_LOCAL_SIZE).expect("no LocalSize");
        assert_eq!(&mode[2..], &[OUTLINE_LOCAL_SIZE, OUTLINE_LOCAL_SIZE, 1]);
        assert_eq!((size_of::<OutlinePush>(), OUTLINE_PUSH_SIZE), (8, 8));
        let spv = m.member_offsets(m.push_constant_struct());
        assert_eq!(spv, [("width".to_string(), 0), ("height".to_string(), 4)]);
        let push = OutlinePush { width: 333, height: 77 };
        assert_eq!(push.as_bytes(), [333u32.to_le_bytes(), 77u32.to_le_bytes()].concat());
    }

    #[test]
    fn sinewave_push_layout_matches_glsl() {
        assert_eq!(size_of::<SinewavePush>(), 24);
        assert_eq!(SINEWAVE_PUSH_SIZE, 24);
        let rust = [
            ("width", offset_of!(SinewavePush, width)),
            ("height", offset_of!(SinewavePush, height)),
            ("phase", offset_of!(SinewavePush, phase)),
            ("amplitude", offset_of!(SinewavePush, amplitude)),
            ("frequency", offset_of!(SinewavePush, frequency)),
            ("envs", offset_of!(SinewavePush, envs)),
        ];
        assert_eq!(rust.map(|(_, o)| o), [0, 4, 8, 12, 16, 20]);
        let m = Module::new(SINEWAVE_COMP);
        let spv = m.member_offsets(m.push_constant_struct());
        let expect: Vec<(String, u32)> = rust.iter().map(|&(n, o)| (n.to_string(), o as u32)).collect();
        assert_eq!(spv, expect);
        let p = WaveParams::at_time(Grid { width: 7, height: 9 }, 1.0);
        let push = SinewavePush::from(&p);
        let b = push.as_bytes();
        assert_eq!(&b[0..4], 7u32.to_le_bytes());
        assert_eq!(&b[8..12], p.phase.to_le_bytes());
        assert_eq!(&b[16..20], crate::sim::FREQUENCY.to_le_bytes());
        assert_eq!(&b[20..24], 1u32.to_le_bytes());
    }

    #[test]
    fn the_compute_shaders_environment_phases_are_sims() {
        let src = include_str!("../shaders/sinewave.comp");
        assert!(src.contains(&format!("const uint ENV_PHASES = {}u;", crate::sim::ENV_PHASES)));
        assert!(src.contains(&format!("const float ENV_PHASE_STEP = {:?};", crate::sim::ENV_PHASE_STEP)));
    }

    #[test]
    fn heights_buffer_is_set0_binding0_with_right_access() {
        // (file, NonWritable expected, NonReadable expected): the compute shader's buffer is
        // read-write in SPIR-V because naga rejects `writeonly` storage buffers.
        for (file, words, non_writable, non_readable) in
            [("surface.vert", SURFACE_VERT, true, false), ("sinewave.comp", SINEWAVE_COMP, false, false)]
        {
            let m = Module::new(words);
            let (set, binding, st) = m.storage_buffer();
            assert_eq!((set, binding), (0, HEIGHTS_BINDING), "{file}");
            assert_eq!(m.member_offsets(st), vec![("h".to_string(), 0)], "{file}");
            // readonly → NonWritable, writeonly → NonReadable (on the variable or the member).
            let var = m.variables(SC_STORAGE_BUFFER)[0];
            let has = |dec| m.decoration(var, dec).is_some() || m.member_decoration(st, 0, dec).is_some();
            assert_eq!(has(DEC_NON_WRITABLE), non_writable, "{file}: NonWritable");
            assert_eq!(has(DEC_NON_READABLE), non_readable, "{file}: NonReadable");
        }
        // The fragment shader has no descriptors at all.
        assert!(Module::new(SURFACE_FRAG).variables(SC_STORAGE_BUFFER).is_empty());
    }

    #[test]
    fn vertex_outputs_match_fragment_inputs() {
        let vert = Module::new(SURFACE_VERT);
        let frag = Module::new(SURFACE_FRAG);
        assert_eq!(vert.locations(SC_OUTPUT), vec![0, 1, 2]);
        assert_eq!(frag.locations(SC_INPUT), vec![0, 1, 2]);
        assert_eq!(frag.locations(SC_OUTPUT), vec![0]);
        // Same names at the same locations (LABEL_VARYINGS names them).
        let named = |m: &Module, sc| -> HashMap<u32, Option<String>> {
            m.variables(sc)
                .into_iter()
                .filter_map(|v| Some((m.decoration(v, DEC_LOCATION)?, m.name(v))))
                .collect()
        };
        assert_eq!(named(&vert, SC_OUTPUT), named(&frag, SC_INPUT));
    }

    #[test]
    fn fragment_amplitude_is_sim_amplitude() {
        let src = include_str!("../shaders/surface.frag");
        let line = format!("const float AMPLITUDE = {:?};", crate::sim::AMPLITUDE);
        assert!(src.contains(&line), "surface.frag must contain `{line}`");
    }

    #[test]
    fn trig_constants_are_the_glsl_ones() {
        let src = include_str!("../shaders/sinewave.comp");
        for (name, lit) in trig::LITERALS {
            let line = format!("const float {name} = {lit};");
            assert!(src.contains(&line), "sinewave.comp must contain `{line}`");
            // Each literal is the shortest decimal of its f32, so parsing it as f32 directly or
            // via f64 gives the same value (no double-rounding surprises in any compiler).
            let v: f32 = lit.parse().unwrap();
            assert_eq!(format!("{v:e}").parse::<f64>().unwrap(), lit.parse::<f64>().unwrap(), "{name}");
        }
        assert_eq!(trig::LITERALS.len(), 10);
        // And naga read them to the same f32 bits: each is an OpConstant of the module (as is
        // or, where the GLSL negates it, negated).
        let m = Module::new(SINEWAVE_COMP);
        let constants: Vec<u32> = m.ops(OP_CONSTANT).filter(|a| a.len() == 3).map(|a| a[2]).collect();
        for (name, lit) in trig::LITERALS {
            let v: f32 = lit.parse().unwrap();
            assert!(constants.contains(&v.to_bits()) || constants.contains(&(-v).to_bits()), "{name}");
        }
        // (+ ENV_PHASE_STEP, tested by `the_compute_shaders_environment_phases_are_sims`.)
        assert_eq!(
            src.matches("const float ").count(),
            trig::LITERALS.len() + 1,
            "untested constant in sinewave.comp"
        );
        // The split of pi/2 is right and its first two parts are short enough for exact k*part.
        let sum = trig::PIO2_HI as f64 + trig::PIO2_MID as f64 + trig::PIO2_LO as f64;
        assert!((sum - std::f64::consts::FRAC_PI_2).abs() < 1e-14);
        assert!(trig::PIO2_HI.to_bits().trailing_zeros() >= 23 - 7);
        assert!(trig::PIO2_MID.to_bits().trailing_zeros() >= 23 - 10);
    }

    #[test]
    fn trig_matches_std_within_5e7() {
        let (lo, hi) = (-8.0f32, 8.0 + std::f32::consts::TAU);
        let n = 2_000_000;
        let (mut es, mut ec) = (0.0f32, 0.0f32);
        let mut check = |x: f32| {
            es = es.max((trig::sin(x) - x.sin()).abs());
            ec = ec.max((trig::cos(x) - x.cos()).abs());
        };
        for i in 0..=n {
            check(lo + (hi - lo) * (i as f32 / n as f32));
        }
        // Around every quadrant boundary k·π/4, where the reduction switches.
        for k in -12..=24 {
            let c = k as f32 * std::f32::consts::FRAC_PI_4;
            // ±64 ulps (f32::next_up is newer than the crate's MSRV).
            for d in -64i32..=64 {
                let x = if c == 0.0 {
                    d as f32 * f32::EPSILON
                } else {
                    f32::from_bits(c.to_bits().wrapping_add_signed(d))
                };
                check(x);
            }
        }
        assert!(es <= 5e-7, "sin max error {es:e}");
        assert!(ec <= 5e-7, "cos max error {ec:e}");
        assert_eq!(trig::sin(0.0), 0.0);
        assert_eq!(trig::cos(0.0), 1.0);
    }

    #[test]
    fn shader_height_matches_sim_within_2e6() {
        use crate::sim::{height, phase_for_time};
        for (w, h) in [(2, 2), (3, 5), (64, 48), (257, 129), (1000, 7)] {
            let grid = Grid { width: w, height: h };
            for t in [0.0, 0.37, 1.0, 2.5, 4.1, 1234.5] {
                let mut p = WaveParams::at_time(grid, t);
                for phase in
                    [p.phase, phase_for_time(-1e-3), f32::from_bits(std::f32::consts::TAU.to_bits() - 1)]
                {
                    p.phase = phase;
                    let mut worst = 0.0f32;
                    for y in 0..h {
                        for x in 0..w {
                            worst = worst.max((trig::height(&p, x, y) - height(&p, x, y)).abs());
                        }
                    }
                    assert!(worst <= 2e-6, "{grid} phase {phase}: max error {worst:e}");
                }
            }
        }
    }
}
