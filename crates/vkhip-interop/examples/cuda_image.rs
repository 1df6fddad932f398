//! Vulkan ⇄ CUDA image interop in one file: for each of the four shared formats, Vulkan exports a
//! 2D image and a timeline semaphore, CUDA imports the image as an array with a surface object,
//! a kernel of our own writes a known pattern with `surf2Dwrite` and signals, and Vulkan copies
//! the image to a host buffer once the signal arrives. The host compares every texel with the
//! pattern computed on the CPU (halves as their bit patterns). Headless.
//!
//!     cargo run -p vkhip-interop --example cuda_image
//!
//! Exit codes: 0 every texel checked, 1 a wrong texel or a failed call, 2 no usable CUDA device
//! (no driver, no GPU, or a Vulkan device CUDA does not see), with one line on stderr.

use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::cuda::{devices, Cuda};
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_interop::{FrameStream, ImageFormat};

/// Texel (x, y), channel c holds n = 7x + 13y + 29c as: n / 4 (floats), n mod 256 (bytes), and
/// (n mod 1024 − 512) / 64 (halves, exact; converted by the GPU's own cvt.rn.f16.f32). The x
/// coordinate of `surf2Dwrite` is in bytes.
const KERNEL: &str = r#"
__device__ unsigned int n(unsigned int x, unsigned int y, unsigned int c) { return 7u * x + 13u * y + 29u * c; }
__device__ unsigned short half_bits(unsigned int v) {
    unsigned short h;
    float f = ((float)(int)(v % 1024u) - 512.0f) / 64.0f;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#define TEXEL unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y; \
    if (x >= w || y >= h) return;
extern "C" __global__ void r32f(cudaSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite((float)n(x, y, 0) * 0.25f, s, x * 4, y);
}
extern "C" __global__ void rgba8(cudaSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite(make_uchar4(n(x, y, 0) & 255u, n(x, y, 1) & 255u, n(x, y, 2) & 255u, n(x, y, 3) & 255u), s, x * 4, y);
}
extern "C" __global__ void rgba16f(cudaSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite(make_ushort4(half_bits(n(x, y, 0)), half_bits(n(x, y, 1)), half_bits(n(x, y, 2)), half_bits(n(x, y, 3))), s, x * 8, y);
}
extern "C" __global__ void rgba32f(cudaSurfaceObject_t s, unsigned int w, unsigned int h) {
    TEXEL surf2Dwrite(make_float4(n(x, y, 0) * 0.25f, n(x, y, 1) * 0.25f, n(x, y, 2) * 0.25f, n(x, y, 3) * 0.25f), s, x * 16, y);
}
"#;

/// Odd sizes, so that rows are not a power of two and the grid has partial blocks.
const WIDTH: u32 = 67;
const HEIGHT: u32 = 45;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("cuda_image: no usable CUDA device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("cuda_image: error: {e}");
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
    let n = |c: u32| 7 * x + 13 * y + 29 * c;
    let channels = 0..format.channels();
    match format {
        ImageFormat::Rgba8Unorm => channels.map(|c| (n(c) & 255) as u8).collect(),
        ImageFormat::Rgba16Float => {
            channels.flat_map(|c| half_bits(((n(c) % 1024) as f32 - 512.0) / 64.0).to_ne_bytes()).collect()
        }
        ImageFormat::R32Float | ImageFormat::Rgba32Float => {
            channels.flat_map(|c| (n(c) as f32 * 0.25).to_ne_bytes()).collect()
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Cuda)?;
    let cuda = Cuda::open(vk.uuid())?;
    println!("vulkan: {}\ncuda:   {}", vk.describe(), cuda.describe());
    let written = vk.shared_timeline(0)?;
    let cuda_written = cuda.import_timeline(written.export()?)?;
    let module =
        cuda.load_module(&vkhip_interop::cuda::compile_to_image(KERNEL, "image.cu", cuda.target()?, &[])?)?;

    for (i, format) in ImageFormat::ALL.into_iter().enumerate() {
        // The kernel for this format (the names in ImageFormat::ALL's order).
        let entry = ["r32f", "rgba8", "rgba16f", "rgba32f"][i];
        // Export, then the image's one layout transition (UNDEFINED → GENERAL, handed to CUDA).
        let image = vk.shared_image(format, WIDTH, HEIGHT)?;
        // SAFETY: a one-shot command buffer of `vk`, recording; the image is new.
        vk.submit_one_shot(&[], &[], |cmd| unsafe { image.cmd_prepare(cmd) })?;
        let imported = cuda.import_image(image.export()?)?;
        let kernel = module.function(entry)?;

        // CUDA writes every texel and signals `written` = i + 1; the host does not wait.
        let value = i as u64 + 1;
        cuda.frame(None, Some((&cuda_written, value)), |cuda| {
            let (mut surface, mut w, mut h) = (imported.surface(), WIDTH, HEIGHT);
            let mut args = [
                (&mut surface as *mut u64).cast::<c_void>(),
                (&mut w as *mut u32).cast::<c_void>(),
                (&mut h as *mut u32).cast::<c_void>(),
            ];
            // SAFETY: `entry(cudaSurfaceObject_t, unsigned int, unsigned int)` loaded through
            // `cuda`: one pointer per parameter, in order, to values of those types; the kernel
            // writes texels x < w, y < h of the surface, which `imported` keeps alive until the
            // stream is idle.
            unsafe {
                cuda.launch(&kernel, [WIDTH.div_ceil(16), HEIGHT.div_ceil(16), 1], [16, 16, 1], &mut args)
            }
        })?;

        // Vulkan waits for the signal on the GPU, copies the image to host memory, and we compare.
        let got = vk.read_image(&image, Some((&written, value)), None)?;
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
    cuda.synchronize()?;
    let formats = ImageFormat::ALL.len() as u32;
    println!("cuda_image: OK ({formats} formats, {} texels checked)", formats * WIDTH * HEIGHT);
    Ok(())
}
