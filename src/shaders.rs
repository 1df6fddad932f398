//! SPIR-V compiled from shaders/ at build time (see build.rs) and the push-constant layouts.
include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

/// Push constants of surface.vert / surface.frag (96 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SurfacePush {
    pub view_proj: [[f32; 4]; 4],
    pub eye_pos: [f32; 4],
    pub width: u32,
    pub height: u32,
    pub height_scale: f32,
    pub _pad: f32,
}

/// Push constants of sinewave.comp (20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SinewavePush {
    pub width: u32,
    pub height: u32,
    pub phase: f32,
    pub amplitude: f32,
    pub frequency: f32,
}

fn bytes_of<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a #[repr(C)] struct of 4-byte scalars without padding.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

impl SurfacePush {
    pub fn as_bytes(&self) -> &[u8] {
        bytes_of(self)
    }
}

impl SinewavePush {
    pub fn as_bytes(&self) -> &[u8] {
        bytes_of(self)
    }
}
