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
//
// Parameters of `outline`, in this order (the Rust side passes them in exactly this order; a test
// reads this signature): src, dst, width, height, stamps, blocks_done. `src` and `dst` are 64-bit
// surface objects: CUDA's `cudaSurfaceObject_t` (the crate's `CudaImage::surface()`), HIP's
// `hipSurfaceObject_t` (`HipImage::surface()`), or, in `cuda-in-vulkan`, the 32-bit handle
// `vkGetImageViewHandleNVX` gives for a storage-image view, zero-extended (the handle NVIDIA's
// driver accepts as a surface object of a kernel launched with VK_NVX_binary_import).
//
// GPU stamps: as in kernels/sinewave.hip (`stamps` null: none). The copies of the stamp helpers
// below carry an `outline_` prefix so that both sources may one day share a module.
//
// No #include: only what NVRTC and hiprtc provide built in (the surface types and
// surf2Dread/surf2Dwrite, whose x coordinate is in bytes on both).

#if defined(__HIPCC_RTC__) || defined(__HIP__)
typedef hipSurfaceObject_t vkhip_surface;
#else
typedef cudaSurfaceObject_t vkhip_surface;
#endif

__device__ __forceinline__ unsigned long long vkhip_outline_gpu_ns()
{
    unsigned long long t = 0;
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
    return t;
}

// Texel (x, y) with coordinates clamped to the image.
__device__ __forceinline__ uchar4 vkhip_outline_at(vkhip_surface s, int x, int y, int w, int h)
{
    uchar4 c;
    surf2Dread(&c, s, min(max(x, 0), w - 1) * 4, min(max(y, 0), h - 1));
    return c;
}

__device__ __forceinline__ int vkhip_outline_lum(uchar4 c)
{
    return (77 * (int)c.x + 150 * (int)c.y + 29 * (int)c.z) >> 8;
}

extern "C" __global__ void outline(vkhip_surface src, vkhip_surface dst, unsigned int width,
                                   unsigned int height, unsigned long long* stamps,
                                   unsigned int* blocks_done)
{
    if (stamps != 0 && threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0) {
        stamps[0] = vkhip_outline_gpu_ns();
    }
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    const int w = (int)width;
    const int h = (int)height;
    if (x < w && y < h) {
        int gx = 0;
        int gy = 0;
        for (int j = -1; j <= 1; ++j) {
            for (int i = -1; i <= 1; ++i) {
                const int l = vkhip_outline_lum(vkhip_outline_at(src, x + i, y + j, w, h));
                gx += l * i * (2 - j * j);
                gy += l * j * (2 - i * i);
            }
        }
        const int keep = 255 - min(255, abs(gx) + abs(gy));
        const uchar4 c = vkhip_outline_at(src, x, y, w, h);
        const uchar4 out = make_uchar4((unsigned char)((int)c.x * keep / 255),
                                       (unsigned char)((int)c.y * keep / 255),
                                       (unsigned char)((int)c.z * keep / 255), (unsigned char)255);
        surf2Dwrite(out, dst, x * 4, y);
    }
    // The launch's end: the last block to finish stamps it and resets the counter.
    if (stamps == 0 || blocks_done == 0) {
        return;
    }
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        __threadfence();
        const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(blocks_done, 1u) == blocks - 1u) {
            *blocks_done = 0u;
            stamps[1] = vkhip_outline_gpu_ns();
        }
    }
}
