//! Vulkan ⇄ HIP image interop in one file: for each of the four shared formats, Vulkan exports a
//! 2D image, HIP imports it as a mipmapped array with a surface object, a kernel of our own
//! writes a known pattern with `surf2Dwrite`, and once HIP's stream is done Vulkan copies the
//! image to a host buffer. The host compares every texel with the pattern computed on the CPU
//! (halves as their bit patterns). Headless.
//!
//!     HIP_PATH=/opt/rocm cargo run -p vkhip-interop --features hip --example hip_image
//!
//! Exit codes: 0 every texel checked, 1 a wrong texel or a failed call, 2 no usable HIP device
//! (no ROCm, no AMD GPU, a Vulkan device HIP does not see, or a HIP runtime without
//! `hipExternalMemoryGetMappedMipmappedArray`), with one line on stderr.
//!
//! ROCm on Linux cannot import Vulkan semaphores: the hand-off is on the host (the stream is
//! synchronised after the kernel, then Vulkan copies).

use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::hip::{compile_to_image, devices, Hip};
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_interop::{FrameStream, ImageFormat};

/// Texel (x, y), channel c holds n = 5x + 11y + 31c as: n / 8 (floats), n mod 256 (bytes), and
/// (n mod 2048 − 1024) / 128 (halves, exact; converted by the GPU's own `_Float16` conversion).
/// The x coordinate of `surf2Dwrite` is in bytes.
const KERNEL: &str = r#"
__device__ unsigned int n(unsigned int x, unsigned int y, unsigned int c) { return 5u * x + 11u * y + 31u * c; }
__device__ unsigned short half_bits(unsigned int v) {
    _Float16 h = (_Float16)(((float)(int)(v % 2048u) - 1024.0f) / 128.0f);
    return __builtin_bit_cast(unsigned short, h);
}
#define TEXEL unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y; \
    if (x >= w || y >= h) return;
extern "C" __global__ void r32f(hipSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite((float)n(x, y, 0) * 0.125f, s, x * 4, y);
}
extern "C" __global__ void rgba8(hipSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite(make_uchar4(n(x, y, 0) & 255u, n(x, y, 1) & 255u, n(x, y, 2) & 255u, n(x, y, 3) & 255u), s, x * 4, y);
}
extern "C" __global__ void rgba16f(hipSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite(make_ushort4(half_bits(n(x, y, 0)), half_bits(n(x, y, 1)), half_bits(n(x, y, 2)), half_bits(n(x, y, 3))), s, x * 8, y);
}
extern "C" __global__ void rgba32f(hipSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite(make_float4(n(x, y, 0) * 0.125f, n(x, y, 1) * 0.125f, n(x, y, 2) * 0.125f, n(x, y, 3) * 0.125f), s, x * 16, y);
}
"#;

/// Odd sizes, so that rows are not a power of two and the grid has partial blocks.
const WIDTH: u32 = 53;
const HEIGHT: u32 = 37;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("hip_image: no usable HIP device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("hip_image: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

/// The bits of `v` as an IEEE half, for the exact values the kernel writes (0 or normal, at most
/// 11 significant bits).
fn half_bits(v: f32) -> u16 {
    let b = v.to_bits();
    let (sign, exponent, mantissa) = ((b >> 16) & 0x8000, (b >> 23) & 0xff, b & 0x7f_ffff);
    if exponent == 0 {
        return sign as u16;
    }
    debug_assert!((113..=142).contains(&exponent) && mantissa & 0x1fff == 0, "{v} is not an exact half");
    (sign | ((exponent - 112) << 10) | (mantissa >> 13)) as u16
}

/// What texel (x, y) must hold, as bytes.
fn expected(format: ImageFormat, x: u32, y: u32) -> Vec<u8> {
    let n = |c: u32| 5 * x + 11 * y + 31 * c;
    let channels = 0..format.channels();
    match format {
        ImageFormat::Rgba8Unorm => channels.map(|c| (n(c) & 255) as u8).collect(),
        ImageFormat::Rgba16Float => {
            channels.flat_map(|c| half_bits(((n(c) % 2048) as f32 - 1024.0) / 128.0).to_ne_bytes()).collect()
        }
        ImageFormat::R32Float | ImageFormat::Rgba32Float => {
            channels.flat_map(|c| (n(c) as f32 * 0.125).to_ne_bytes()).collect()
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Hip)?;
    let hip = Hip::open(vk.uuid())?;
    println!("vulkan: {}\nhip:    {}", vk.describe(), hip.describe());
    let module = hip.load_module(&compile_to_image(KERNEL, "image.hip", hip.target()?, &[])?)?;

    for (i, format) in ImageFormat::ALL.into_iter().enumerate() {
        // The kernel for this format (the names in ImageFormat::ALL's order).
        let entry = ["r32f", "rgba8", "rgba16f", "rgba32f"][i];
        // Export, then the image's one layout transition (UNDEFINED → GENERAL, handed to HIP).
        let image = vk.shared_image(format, WIDTH, HEIGHT)?;
        // SAFETY: a one-shot command buffer of `vk`, recording; the image is new.
        vk.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) })?;
        let imported = hip.import_image(image.export()?)?;
        let kernel = module.function(entry)?;

        // HIP writes every texel; no semaphore on Linux, so the host waits for HIP's stream.
        hip.frame(None, None, |hip| {
            let (mut surface, mut w, mut h) = (imported.surface(), WIDTH, HEIGHT);
            let mut args = [
                (&mut surface as *mut u64).cast::<c_void>(),
                (&mut w as *mut u32).cast::<c_void>(),
                (&mut h as *mut u32).cast::<c_void>(),
            ];
            // SAFETY: `entry(hipSurfaceObject_t, unsigned int, unsigned int)` loaded through
            // `hip`: one pointer per parameter, in order, to values of those types; the kernel
            // writes texels x < w, y < h of the surface, which `imported` keeps alive until the
            // stream is idle.
            unsafe {
                hip.launch(&kernel, [WIDTH.div_ceil(16), HEIGHT.div_ceil(16), 1], [16, 16, 1], &mut args)
            }
        })?;
        hip.synchronize()?;

        // Vulkan copies the image to host memory, and we compare.
        let got = vk.read_image(&image, None, None)?;
        let texel = format.texel_bytes() as usize;
        if got.len() != (WIDTH * HEIGHT) as usize * texel {
            return Err(format!("{format}: read back {} bytes for {WIDTH}x{HEIGHT} texels", got.len()).into());
        }
        for (t, bytes) in got.chunks_exact(texel).enumerate() {
            let (x, y) = (t as u32 % WIDTH, t as u32 / WIDTH);
            let want = expected(format, x, y);
            if bytes != want.as_slice() {
                return Err(format!("{format}: texel ({x}, {y}) is {bytes:?}, expected {want:?}").into());
            }
        }
        println!("{:>19}: all {WIDTH}x{HEIGHT} texels as expected", format.name());
    }
    hip.synchronize()?;
    let formats = ImageFormat::ALL.len() as u32;
    println!("hip_image: OK ({formats} formats, {} texels checked)", formats * WIDTH * HEIGHT);
    Ok(())
}
