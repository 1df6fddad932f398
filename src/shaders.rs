//! TEMPORARY stub until the shaders branch lands.
pub const SURFACE_VERT: &[u32] = &[];
pub const SURFACE_FRAG: &[u32] = &[];
pub const SINEWAVE_COMP: &[u32] = &[];
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
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SinewavePush {
    pub width: u32,
    pub height: u32,
    pub phase: f32,
    pub amplitude: f32,
    pub frequency: f32,
}
impl SurfacePush {
    pub fn as_bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self as *const _ as *const u8, std::mem::size_of::<Self>()) }
    }
}
impl SinewavePush {
    pub fn as_bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self as *const _ as *const u8, std::mem::size_of::<Self>()) }
    }
}
