// kernels/sinewave.hip: the height-field kernel, one source for both interop APIs.
//
// Compiled at run time by NVRTC (NVIDIA, `--backend cuda`) and by hiprtc (AMD, `--backend hip`),
// so it uses no #include and only what both compilers provide built in (sinf, cosf, the thread
// index variables). The renderer reads the heights as one row-major float per grid point
// (index = y * width + x): see src/sim.rs, which holds the CPU reference and the parameter values.
//
// Speed: the buffer is contiguous, so the kernel treats it as a flat array and writes four
// consecutive heights with one 16-byte store (the store pattern, not the math, sets the speed on
// a GPU). Each thread walks its four points along the row, wrapping to the next row where a row
// ends; the last n % 4 points are written one by one. The slot's base address is at least
// 256-byte aligned (a Vulkan allocation imported at offset 0).
//
// Parameters, in this order (the Rust side passes them in exactly this order; a test reads this
// signature): heights, width, height, phase, amplitude, frequency.

struct __attribute__((aligned(16))) vkhip_float4 {
    float x, y, z, w;
};

__device__ __forceinline__ float vkhip_height(unsigned int x, unsigned int y, unsigned int width,
                                              unsigned int height, float phase, float amplitude,
                                              float frequency)
{
    // Same expression, same order of operations as sim::height on the CPU.
    const float u = 2.0f * (float)x / (float)(width - 1u) - 1.0f;
    const float v = 2.0f * (float)y / (float)(height - 1u) - 1.0f;
    return amplitude * sinf(frequency * u + phase) * cosf(frequency * v + phase);
}

extern "C" __global__ void sinewave(float* __restrict__ heights, unsigned int width,
                                    unsigned int height, float phase, float amplitude,
                                    float frequency)
{
    const unsigned long long n = (unsigned long long)width * (unsigned long long)height;
    const unsigned long long quads = n / 4ull;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;

    vkhip_float4* out4 = reinterpret_cast<vkhip_float4*>(heights);
    for (unsigned long long q = first; q < quads; q += stride) {
        const unsigned long long i = q * 4ull;
        unsigned int y = (unsigned int)(i / width);
        unsigned int x = (unsigned int)(i - (unsigned long long)y * width);
        float h[4];
        for (int k = 0; k < 4; ++k) {
            h[k] = vkhip_height(x, y, width, height, phase, amplitude, frequency);
            if (++x == width) {
                x = 0;
                ++y;
            }
        }
        vkhip_float4 packed;
        packed.x = h[0];
        packed.y = h[1];
        packed.z = h[2];
        packed.w = h[3];
        out4[q] = packed;
    }

    // Scalar tail: the last n % 4 points.
    const unsigned long long tail = quads * 4ull + first;
    if (tail < n) {
        const unsigned int y = (unsigned int)(tail / width);
        const unsigned int x = (unsigned int)(tail - (unsigned long long)y * width);
        heights[tail] = vkhip_height(x, y, width, height, phase, amplitude, frequency);
    }
}
