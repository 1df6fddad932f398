//! The post-process stage's compute side (`--post outline`): what every backend's filter reads and
//! writes, the CPU reference, and the GPU-side sync of one post hand-off.
//!
//! Frame f with a post stage (the protocol is in [`crate::sync`]): Vulkan draws the surface into
//! the *scene* image of pair `f mod K`; the compute backend reads that image and writes the
//! *output* image of the same pair ([`outline_reference`] is the filter); Vulkan copies the output
//! to the swapchain image or the capture target. Both images of a pair are RGBA8
//! (`VK_FORMAT_R8G8B8A8_UNORM`), `width` × `height` texels, in layout `GENERAL` whenever the
//! compute side touches them. Who reaches them how:
//!
//! | backend          | scene and output                                     | sync of the post        |
//! |------------------|------------------------------------------------------|-------------------------|
//! | `cpu`            | host-visible buffers ([`PostSurface::Mapped`]): Vulkan copies the scene in and the output out | host (`post_and_wait`) |
//! | `vulkan`         | the images themselves ([`PostSurface::Image`]), storage images of a compute shader | queue order (`record_post`) |
//! | `cuda-in-vulkan` | the same images, through `VK_NVX_image_view_handle`  | queue order (`record_post`) |
//! | `cuda`, `hip`    | imported OPAQUE_FD images ([`PostSurface::Exported`]) | GPU (`enqueue_post_gpu_synced`) or host (`post_and_wait`) |

use super::fd::ImportFd;
use ash::vk;

/// What `--post` runs after the draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PostKind {
    /// No post stage: the draw goes straight to the swapchain image or capture target.
    #[default]
    None,
    /// A 3×3 Sobel on luminance that darkens edges ([`outline_reference`]).
    Outline,
}

impl PostKind {
    /// Every value, in the order `--help` lists them.
    pub const ALL: [PostKind; 2] = [PostKind::None, PostKind::Outline];

    /// The `--post` value.
    pub fn name(self) -> &'static str {
        match self {
            PostKind::None => "none",
            PostKind::Outline => "outline",
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            PostKind::None => "the draw is presented as it is",
            PostKind::Outline => {
                "Vulkan renders into a shared image, the backend outlines it (3x3 Sobel on luminance) \
                 into a second shared image, Vulkan presents that one"
            }
        }
    }
}

impl std::fmt::Display for PostKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The GLSL-free, API-free filter every backend must reproduce exactly (kernels/outline.hip
/// states the same formula): `src` is `width × height` RGBA8 texels, row by row with no padding;
/// the result has the same shape, alpha 255.
///
/// # Examples
///
/// ```
/// use vkhip::compute::post::outline_reference;
///
/// // A flat image has no edges: every texel keeps its colour.
/// let flat = [10u8, 200, 30, 255].repeat(3 * 2);
/// assert_eq!(outline_reference(&flat, 3, 2), flat);
/// // A black/white step turns to ink on both sides of the edge.
/// let step: Vec<u8> = [[0u8, 0, 0, 255], [255, 255, 255, 255]].concat();
/// assert_eq!(outline_reference(&step, 2, 1), [0, 0, 0, 255, 0, 0, 0, 255]);
/// ```
pub fn outline_reference(src: &[u8], width: u32, height: u32) -> Vec<u8> {
    use rayon::prelude::*;
    let (w, h) = (width as usize, height as usize);
    assert_eq!(src.len(), w * h * 4, "outline_reference: {width}x{height} RGBA8");
    let lum: Vec<i32> =
        src.chunks_exact(4).map(|c| (77 * c[0] as i32 + 150 * c[1] as i32 + 29 * c[2] as i32) >> 8).collect();
    let mut out = vec![0u8; src.len()];
    // Rows in parallel: the `cpu` backend runs this every frame, and `verify` on every frame read back.
    out.par_chunks_mut(w * 4).enumerate().for_each(|(y, row)| {
        // Rows y−1, y, y+1 and columns x−1, x, x+1, clamped to the image.
        let rows = [y.saturating_sub(1), y, (y + 1).min(h - 1)].map(|r| &lum[r * w..][..w]);
        for (x, texel) in row.chunks_exact_mut(4).enumerate() {
            let cols = [x.saturating_sub(1), x, (x + 1).min(w - 1)];
            let l = |j: usize, i: usize| rows[j][cols[i]];
            let gx = (l(0, 2) - l(0, 0)) + 2 * (l(1, 2) - l(1, 0)) + (l(2, 2) - l(2, 0));
            let gy = (l(2, 0) + 2 * l(2, 1) + l(2, 2)) - (l(0, 0) + 2 * l(0, 1) + l(0, 2));
            let keep = 255 - (gx.abs() + gy.abs()).min(255);
            let at = (y * w + x) * 4;
            for (o, &c) in texel[..3].iter_mut().zip(&src[at..at + 3]) {
                *o = (i32::from(c) * keep / 255) as u8;
            }
            texel[3] = 255;
        }
    });
    out
}

/// One image the post filter reads or writes, as its backend reaches it.
#[derive(Debug)]
pub enum PostSurface {
    /// The image itself, on the render device (`vulkan`, `cuda-in-vulkan`), in layout `GENERAL`
    /// while the filter runs; `view` is a 2D colour view of its one level and layer.
    Image { image: vk::Image, view: vk::ImageView },
    /// The image's memory, exported for an interop API to import (`cuda`, `hip`); the image was
    /// created with the usage flags `ExportedImage::color_attachment` says.
    Exported(vkhip_interop::ExportedImage),
    /// A host-visible buffer of `width × height × 4` bytes, row by row (`cpu`): valid for reads
    /// (scene) or writes (output) while the backend lives.
    Mapped { ptr: *mut u8, len: usize },
}

// SAFETY: `Mapped` points into a persistent mapping of a buffer that outlives the backend, used
// by one thread at a time (the thread that owns the backend); the other variants are handles.
unsafe impl Send for PostSurface {}

/// Pair `i` (frame f uses `f mod K`): the rendered frame and the filter's result.
#[derive(Debug)]
pub struct PostPair {
    pub scene: PostSurface,
    pub output: PostSurface,
}

/// The post stage's timelines (frame f is `f + 1`, as in [`crate::sync`]), for backends that wait
/// and signal on the GPU of an interop API.
#[derive(Debug)]
pub struct PostSemaphores {
    /// Signalled by the compute side when output `f mod K` holds frame f's result.
    pub posted: ImportFd,
    /// Signalled by Vulkan when the copy of output `f mod K` to the target has finished.
    pub presented: ImportFd,
}

/// Everything a backend needs to run the post stage, handed over once by
/// [`super::ComputeBackend::attach_post`].
#[derive(Debug)]
pub struct PostResources {
    pub kind: PostKind,
    pub width: u32,
    pub height: u32,
    /// K pairs.
    pub pairs: Vec<PostPair>,
    /// The post timelines exported for an interop API (`cuda`, `hip` with `--sync external`).
    pub semaphores: Option<PostSemaphores>,
}

/// The GPU-side sync of one post hand-off (values as in [`crate::sync`]: frame f is `f + 1`).
/// The `rendered` timeline is the height protocol's: Vulkan sets it to f+1 when frame f's draw,
/// which writes the scene image, has finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostSync {
    /// Wait `rendered ≥ v` before reading the scene (f+1; None with `--sync none`).
    pub wait_rendered: Option<u64>,
    /// Wait `presented ≥ v` before overwriting the output (the copy of frame f−K: f+1−K; None
    /// for the first K frames and with `--sync none`).
    pub wait_presented: Option<u64>,
    /// Signal `posted = v` when the output is written (f+1; None with `--sync none`).
    pub signal_posted: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outline_darkens_only_near_edges_and_clamps_at_the_border() {
        // 4x3: left half dark grey, right half white; a vertical edge between x = 1 and x = 2.
        let (w, h) = (4u32, 3u32);
        let mut src = Vec::new();
        for _ in 0..h {
            for x in 0..w {
                src.extend(if x < 2 { [40, 40, 40, 255] } else { [255, 255, 255, 255] });
            }
        }
        let out = outline_reference(&src, w, h);
        let at = |x: usize, y: usize| &out[(y * w as usize + x) * 4..][..4];
        for y in 0..h as usize {
            // lum(grey) = 39, lum(white) = 255: |gx| = 4 * 216 ≥ 255 beside the edge → black.
            assert_eq!(at(1, y), [0, 0, 0, 255]);
            assert_eq!(at(2, y), [0, 0, 0, 255]);
            // Two texels away (x = 0 reads its clamped neighbours) the image is flat: unchanged.
            assert_eq!(at(0, y), [40, 40, 40, 255]);
            assert_eq!(at(3, y), [255, 255, 255, 255]);
        }
    }

    /// The formula as kernels/outline.hip states it, texel by texel (slow and plain), against the
    /// row-parallel reference on a random image with odd sides.
    #[test]
    fn the_reference_is_the_stated_formula() {
        let (w, h) = (37i32, 11i32);
        let mut seed = 0x9e37_79b9u32;
        let src: Vec<u8> = (0..w * h * 4)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                (seed >> 24) as u8
            })
            .collect();
        let texel = |x: i32, y: i32| {
            let i = (y.clamp(0, h - 1) * w + x.clamp(0, w - 1)) as usize * 4;
            [src[i], src[i + 1], src[i + 2]]
        };
        let lum = |c: [u8; 3]| (77 * c[0] as i32 + 150 * c[1] as i32 + 29 * c[2] as i32) >> 8;
        let mut want = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let (mut gx, mut gy) = (0, 0);
                for j in -1..=1 {
                    for i in -1..=1 {
                        gx += lum(texel(x + i, y + j)) * i * (2 - j * j);
                        gy += lum(texel(x + i, y + j)) * j * (2 - i * i);
                    }
                }
                let keep = 255 - (gx.abs() + gy.abs()).min(255);
                want.extend(texel(x, y).map(|v| (v as i32 * keep / 255) as u8));
                want.push(255);
            }
        }
        assert_eq!(outline_reference(&src, w as u32, h as u32), want);
    }

    #[test]
    fn a_single_texel_is_its_own_neighbourhood() {
        assert_eq!(outline_reference(&[9, 99, 199, 7], 1, 1), [9, 99, 199, 255]);
    }
}
