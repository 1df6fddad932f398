// kernels/outline.hip: the post-process filter of `--post outline`, one source for CUDA (NVRTC),
// HIP (hiprtc) and `cuda-in-vulkan` (NVRTC, launched from Vulkan's queue).
//
// A 3x3 Sobel on luminance that darkens edges: ink outlines round the waves. Integers only, so the
// CPU reference (src/compute/post.rs, `outline_reference`) computes the very same bytes, and the
// Vulkan compute shader (shaders/outline.comp) too:
//
//     lum(c)  = (77 r + 150 g + 29 b) >> 8
//     gx, gy  = Sobel of lum over the 3x3 neighbourhood, coordinates clamped to the image
//               (weight i (2 - j^2) for gx and j (2 - i^2) for gy at offset (i, j))
//     keep    = 255 - min(255, |gx| + |gy|)
//     out     = (r keep / 255, g keep / 255, b keep / 255, 255)
//
// Images are RGBA8 (VK_FORMAT_R8G8B8A8_UNORM) surfaces: `src` is the rendered frame, `dst` the
// output; texel (x, y) is at byte offset x * 4 of row y. Launch: blockDim (16, 16, 1), gridDim
// (ceil(w / 16), ceil(h / 16), 1); threads outside the image do nothing.
