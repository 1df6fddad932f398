//! Rendered frame → HIP filter → Vulkan, in one file: Vulkan draws a frame into a shared image on
//! its graphics queue (a clear, then rectangles blitted over it), hands it to HIP, a kernel of our
//! own outlines it (a 3×3 Sobel on luminance that darkens edges) into a second shared image, and
//! Vulkan takes that one back and copies it to the host. The hand-offs are the crate's named steps
//! (`vulkan::ImageAccess`). The host checks every texel against the same filter run on the CPU.
//! Headless. The twin of `cuda_post_process`.
//!
//!     HIP_PATH=/opt/rocm cargo run -p vkhip-interop --features hip --example hip_post_process
//!
//! Exit codes: 0 every texel checked, 1 a wrong texel or a failed call, 2 no usable HIP device
//! (no ROCm, no AMD GPU, or a Vulkan device HIP does not see), with one line on stderr.
//!
//! ROCm on Linux cannot import Vulkan semaphores: the hand-offs are on the host (Vulkan's
//! submission is waited for, then HIP's stream is synchronised after the kernel).

use ash::vk;
use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::hip::{devices, Hip};
use vkhip_interop::vulkan::{Device, ImageAccess, Importer};
use vkhip_interop::{FrameStream, ImageFormat};

/// Luminance (77r + 150g + 29b) / 256, Sobel with clamped edges (weights i(2 − j²) and j(2 − i²) at
/// offset (i, j)), each channel × (255 − |gx| − |gy|, at least 0) / 255: integers only, so the CPU
/// computes the very same bytes.
const KERNEL: &str = r#"
__device__ uchar4 at(hipSurfaceObject_t s, int x, int y, int w, int h) { uchar4 c; surf2Dread(&c, s, min(max(x, 0), w - 1) * 4, min(max(y, 0), h - 1)); return c; }
__device__ int lum(uchar4 c) { return (77 * c.x + 150 * c.y + 29 * c.z) >> 8; }
extern "C" __global__ void outline(hipSurfaceObject_t src, hipSurfaceObject_t dst, uint2 size) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, w = size.x, h = size.y;
    if (x >= w || y >= h) return;
    int gx = 0, gy = 0;
    for (int j = -1; j <= 1; j++) for (int i = -1; i <= 1; i++) {
        int l = lum(at(src, x + i, y + j, w, h)); gx += l * i * (2 - j * j); gy += l * j * (2 - i * i);
    }
    int keep = 255 - min(255, abs(gx) + abs(gy));
    uchar4 c = at(src, x, y, w, h);
    surf2Dwrite(make_uchar4(c.x * keep / 255, c.y * keep / 255, c.z * keep / 255, 255), dst, x * 4, y);
}
"#;

/// Odd sizes: rows are not a power of two and the grid has partial blocks.
const WIDTH: u32 = 97;
const HEIGHT: u32 = 61;
/// The frame: the background, and rectangles [x0, y0, x1, y1) of ink blitted over it.
const BACKGROUND: [u8; 3] = [30, 60, 90];
const INK: [u8; 3] = [250, 200, 40];
const RECTS: [[i32; 4]; 3] = [[10, 8, 50, 38], [55, 20, 85, 53], [88, 2, 94, 58]];

fn main() -> ExitCode {
    let Err(e) = run() else { return ExitCode::SUCCESS };
    if let Some(e) = e.downcast_ref::<vkhip_interop::Error>().filter(|e| e.is_environment()) {
        eprintln!("hip_post_process: no usable HIP device: {e}");
        return ExitCode::from(2);
    }
    eprintln!("hip_post_process: error: {e}");
    ExitCode::from(1)
}

/// The outlined frame, computed on the host from the same scene: RGBA bytes, row by row.
fn reference() -> Vec<u8> {
    let (w, h) = (WIDTH as i32, HEIGHT as i32);
    let ink = |x, y| RECTS.iter().any(|r: &[i32; 4]| (r[0]..r[2]).contains(&x) && (r[1]..r[3]).contains(&y));
    let at = |x: i32, y: i32| if ink(x.clamp(0, w - 1), y.clamp(0, h - 1)) { INK } else { BACKGROUND };
    let lum = |x, y| at(x, y).iter().zip([77, 150, 29]).map(|(&c, k)| c as i32 * k).sum::<i32>() >> 8;
    let texel = |x, y| {
        let (mut gx, mut gy) = (0, 0);
        for (i, j) in (-1..=1).flat_map(|j| (-1..=1).map(move |i| (i, j))) {
            let l = lum(x + i, y + j);
            (gx, gy) = (gx + l * i * (2 - j * j), gy + l * j * (2 - i * i));
        }
        let keep = 255 - (gx.abs() + gy.abs()).min(255);
        at(x, y).map(|c| (c as i32 * keep / 255) as u8).into_iter().chain([255])
    };
    (0..h).flat_map(|y| (0..w).map(move |x| texel(x, y))).flatten().collect()
}

fn run() -> Result<(), Box<dyn Error>> {
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Hip)?;
    let hip = Hip::open(vk.uuid())?;
    println!("vulkan: {}\nhip:    {}", vk.describe(), hip.describe());
    let kernel = hip.compile(KERNEL, "outline")?;
    // Export the frame and the filter's output; HIP imports them.
    let frame = vk.shared_image(ImageFormat::Rgba8Unorm, WIDTH, HEIGHT)?;
    let outlined = vk.shared_image(ImageFormat::Rgba8Unorm, WIDTH, HEIGHT)?;
    let (hip_frame, hip_outlined) =
        (hip.import_image(frame.export()?)?, hip.import_image(outlined.export()?)?);

    // Vulkan draws: both images are new and Vulkan's; the frame is cleared, the output image
    // (HIP overwrites it later) is cleared to the ink and blitted into the rectangles. Then
    // both go to HIP; the submission is waited for.
    let (d, write, read) = (vk.ash(), ImageAccess::TRANSFER_WRITE, ImageAccess::TRANSFER_READ);
    let colour =
        |c: [u8; 3]| vk::ClearColorValue { float32: [c[0], c[1], c[2], 255].map(|v| v as f32 / 255.0) };
    let range = vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(1);
    let layers =
        vk::ImageSubresourceLayers { aspect_mask: range.aspect_mask, layer_count: 1, ..Default::default() };
    let at = |x, y, z| vk::Offset3D { x, y, z };
    let blits = RECTS.map(|[x0, y0, x1, y1]| vk::ImageBlit {
        src_subresource: layers,
        src_offsets: [at(0, 0, 0), at(1, 1, 1)],
        dst_subresource: layers,
        dst_offsets: [at(x0, y0, 0), at(x1, y1, 1)],
    });
    vk.submit_one_shot(&[], &[], |cmd| {
        // SAFETY: recording on `vk`'s queue family; both images are new, then Vulkan's until
        // released; every command names the layout its access was given.
        unsafe {
            for (image, c) in [(&frame, BACKGROUND), (&outlined, INK)] {
                image.cmd_prepare_for_vulkan(cmd, write);
                d.cmd_clear_color_image(cmd, image.image(), write.layout(), &colour(c), &[range]);
            }
            frame.cmd_transition(cmd, write, write);
            outlined.cmd_transition(cmd, write, read);
            let (src, dst) = (outlined.image(), frame.image());
            d.cmd_blit_image(cmd, src, read.layout(), dst, write.layout(), &blits, vk::Filter::NEAREST);
            frame.cmd_release(cmd, write);
            outlined.cmd_release(cmd, read);
        }
    })?;

    // HIP outlines the frame into the second image; the host waits for HIP's stream.
    hip.frame(None, None, |hip| {
        let (mut surfaces, mut size) = ([hip_frame.surface(), hip_outlined.surface()], [WIDTH, HEIGHT]);
        let [src, dst] = surfaces.each_mut().map(|s| std::ptr::from_mut(s).cast::<c_void>());
        let mut args = [src, dst, size.as_mut_ptr().cast()];
        // SAFETY: `outline(hipSurfaceObject_t, hipSurfaceObject_t, uint2)` loaded through
        // `hip`: one pointer per parameter, in order ([u32; 2] is uint2's layout); it touches
        // texels x < w, y < h of both surfaces, which the imports keep alive until the stream is idle.
        unsafe { hip.launch(&kernel, [WIDTH.div_ceil(16), HEIGHT.div_ceil(16), 1], [16, 16, 1], &mut args) }
    })?;

    hip.synchronize()?;
    // Vulkan acquires the output and copies it to the host.
    let got = vk.read_image(&outlined, None, None)?;
    let want = reference();
    if let Some(t) = (0..want.len() / 4).find(|t| got.get(4 * t..4 * t + 4) != Some(&want[4 * t..4 * t + 4]))
    {
        let (x, y, want) = (t as u32 % WIDTH, t as u32 / WIDTH, &want[4 * t..4 * t + 4]);
        return Err(format!("texel ({x}, {y}) is {:?}, expected {want:?}", got.get(4 * t..4 * t + 4)).into());
    }
    let edges = want.chunks(4).filter(|t| ![&BACKGROUND[..], &INK].contains(&&t[..3])).count();
    println!("hip_post_process: OK ({} texels checked, {edges} on outlines)", WIDTH * HEIGHT);
    Ok(())
}
