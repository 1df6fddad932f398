// kernels/sinewave.hip: the height-field kernel, one source for both interop APIs.
//
// Compiled at run time by NVRTC (NVIDIA, `--backend cuda`) and by hiprtc (AMD, `--backend hip`),
// so it uses no #include and only what both compilers provide built in (sinf, cosf, the thread
// index variables). The renderer reads the heights as one row-major float per grid point
// (index = y * width + x): see src/sim.rs, which holds the CPU reference and the parameter values.
//
//     h(x, y) = amplitude * sin(frequency * u(x) + phase) * cos(frequency * v(y) + phase)
//
// Speed. On a GPU the store pattern, not the math, sets the speed, as long as the math stays
// small: two accurate transcendentals per height would make this kernel compute-bound. The
// height is separable, so each thread owns four consecutive columns of one column strip, computes
// amplitude*sin(...) for them once, and then walks rows (grid-stride in y), writing its four
// heights per row with a single 16-byte store when rows are 16-byte aligned (width % 4 == 0), one
// by one otherwise (and for the last columns of a row that does not end on a multiple of 4). The
// row factor cos(...) is the same for every thread of a row, so a block computes it once per row
// into a shared table (VKHIP_ROW_TABLE rows at a time, one row per thread) instead of once per
// thread and row. The launch geometry is computed in src/compute/kernel.rs (sinewave_launch):
// blockDim = (256, 1, 1); gridDim.x covers ceil(width / 4) column quads; gridDim.y row walkers;
// gridDim.z environments (`--envs`; 1 by default, the launch it always was).
// CUDA launches one block per multiprocessor in all (src/compute/cuda/plan.rs), so each thread
// computes its four sines once for many rows; HIP launches eight per compute unit (not measured
// on an AMD GPU). Any geometry gives the same heights. The slot's base address is at least
// 256-byte aligned (a Vulkan allocation imported at offset 0).
//
// Environments (`--envs E`, src/sim.rs). One launch writes E height fields one after the other,
// `(E, height, width)`: environment e = blockIdx.z writes at element e * width * height, at phase
// phase + (e % 64) * 0.09375 (`env_phase`; the product is exact in f32, so a fused multiply-add
// gives the same sum as the CPU). With gridDim.z = 1 that is environment 0 at `phase` itself.
//
// Parameters of `sinewave`, in this order (the Rust side passes them in exactly this order; a test
// reads this signature): heights, width, height, phase, amplitude, frequency, stamps, blocks_done.
// `sinewave_batch` (at the end) writes several slots in one launch, each with `envs` environments.
//
// GPU stamps (the profiler, src/compute/cuda/stamps.rs). With `stamps` non-null, the launch writes
// the GPU's nanosecond timer twice into the two 64-bit words at `stamps` (page-locked host memory
// mapped for the device): [0] when block (0,0,0) begins, [1] when the last block to finish ends.
// "Last" is counted in `blocks_done`, one 32-bit word of device memory that is 0 before the launch
// and that the last block sets back to 0. Null (HIP, and with GPU timing off): no stamp, no counter.
// The timer is PTX's %globaltimer, read only where NVRTC/nvcc compile (the same timer Vulkan's
// timestamps count, see the module note of src/profile/mod.rs); elsewhere the stamps stay 0.

struct __attribute__((aligned(16))) vkhip_float4 {
    float x, y, z, w;
};

// Rows of the shared cosine table (see "Speed"): each block fills it for its next rows, writes
// them, then refills it.
#define VKHIP_ROW_TABLE 256

// The body of one launch over one slot; `sinewave` and `sinewave_batch` share it. `cy_table` is
// the block's shared table of VKHIP_ROW_TABLE floats. Every thread of the block reaches every
// barrier (a thread past the last column only helps fill the table).
__device__ __forceinline__ void vkhip_sinewave(float* __restrict__ heights, unsigned int width,
                                               unsigned int height, float phase, float amplitude,
                                               float frequency, float* cy_table)
{
    const unsigned int quad = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int x0 = quad * 4u;
    const bool active = x0 < width;
    // Same expressions, same order of operations as sim::height on the CPU.
    float sx[4];
    for (int k = 0; k < 4; ++k) {
        const unsigned int x = x0 + (unsigned int)k;
        const float u = 2.0f * (float)x / (float)(width - 1u) - 1.0f;
        sx[k] = x < width ? amplitude * sinf(frequency * u + phase) : 0.0f;
    }
    const bool whole_quad = x0 + 4u <= width;
    const bool aligned = (width % 4u) == 0u;
    // The block's rows are blockIdx.y, blockIdx.y + gridDim.y, ...; table entry i is the i-th of
    // the VKHIP_ROW_TABLE rows from `base` on.
    for (unsigned int base = blockIdx.y; base < height; base += gridDim.y * VKHIP_ROW_TABLE) {
        for (unsigned int i = threadIdx.x; i < VKHIP_ROW_TABLE; i += blockDim.x) {
            const unsigned int y = base + i * gridDim.y;
            if (y < height) {
                const float v = 2.0f * (float)y / (float)(height - 1u) - 1.0f;
                cy_table[i] = cosf(frequency * v + phase);
            }
        }
        __syncthreads();
        for (unsigned int i = 0; active && i < VKHIP_ROW_TABLE; ++i) {
            const unsigned int y = base + i * gridDim.y;
            if (y >= height) {
                break;
            }
            const float cy = cy_table[i];
            float* row = heights + (unsigned long long)y * width;
            if (aligned) {
                vkhip_float4 packed;
                packed.x = sx[0] * cy;
                packed.y = sx[1] * cy;
                packed.z = sx[2] * cy;
                packed.w = sx[3] * cy;
                *reinterpret_cast<vkhip_float4*>(row + x0) = packed;
            } else if (whole_quad) {
                row[x0] = sx[0] * cy;
                row[x0 + 1u] = sx[1] * cy;
                row[x0 + 2u] = sx[2] * cy;
                row[x0 + 3u] = sx[3] * cy;
            } else {
                for (unsigned int k = 0; x0 + k < width; ++k) {
                    row[x0 + k] = sx[k] * cy;
                }
            }
        }
        __syncthreads(); // every thread has read the table before it is refilled
    }
}

// = sim::ENV_PHASES and sim::ENV_PHASE_STEP (src/sim.rs; a test checks they agree).
#define VKHIP_ENV_PHASES 64u
#define VKHIP_ENV_PHASE_STEP 0.09375f

// Environment `env`'s field and phase (`env_phase` in src/sim.rs), then the body over it.
__device__ __forceinline__ void vkhip_sinewave_env(float* __restrict__ heights, unsigned int width,
                                                   unsigned int height, float phase, float amplitude,
                                                   float frequency, unsigned int env, float* cy_table)
{
    const float env_phase = phase + (float)(env % VKHIP_ENV_PHASES) * VKHIP_ENV_PHASE_STEP;
    float* field = heights + (unsigned long long)env * width * height;
    vkhip_sinewave(field, width, height, env_phase, amplitude, frequency, cy_table);
}

// The GPU's nanosecond timer (0 where it cannot be read).
__device__ __forceinline__ unsigned long long vkhip_gpu_ns()
{
    unsigned long long t = 0;
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
    return t;
}

// The launch's first stamp: block (0,0,0), thread 0, before any work.
__device__ __forceinline__ void vkhip_stamp_start(unsigned long long* stamps)
{
    if (stamps != 0 && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
        stamps[0] = vkhip_gpu_ns();
    }
}

// The launch's last stamp: after all threads of this block are done, thread 0 counts the block;
// the last block of the launch stamps the end and resets the counter for the next launch.
__device__ __forceinline__ void vkhip_stamp_end(unsigned long long* stamps, unsigned int* blocks_done)
{
    if (stamps == 0 || blocks_done == 0) {
        return;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(blocks_done, 1u) == blocks - 1u) {
            *blocks_done = 0u;
            stamps[1] = vkhip_gpu_ns();
        }
    }
}

extern "C" __global__ void sinewave(float* __restrict__ heights, unsigned int width,
                                    unsigned int height, float phase, float amplitude,
                                    float frequency, unsigned long long* stamps,
                                    unsigned int* blocks_done)
{
    __shared__ float cy_table[VKHIP_ROW_TABLE];
    vkhip_stamp_start(stamps);
    vkhip_sinewave_env(heights, width, height, phase, amplitude, frequency, blockIdx.z, cy_table);
    vkhip_stamp_end(stamps, blocks_done);
}

// A batch: up to 8 slots written by one launch (gridDim.z = frames in the batch × envs;
// blockIdx.z / envs picks the frame, blockIdx.z % envs the environment), so a batched hand-off
// costs one launch instead of B. The Rust side passes the struct by value with the same layout
// (8 pointers, then 3 × 8 floats).
struct vkhip_batch {
    float* heights[8];
    float phase[8];
    float amplitude[8];
    float frequency[8];
};

extern "C" __global__ void sinewave_batch(vkhip_batch batch, unsigned int width, unsigned int height,
                                          unsigned int envs, unsigned long long* stamps,
                                          unsigned int* blocks_done)
{
    __shared__ float cy_table[VKHIP_ROW_TABLE];
    const unsigned int i = blockIdx.z / envs;
    const unsigned int env = blockIdx.z % envs;
    vkhip_stamp_start(stamps);
    vkhip_sinewave_env(batch.heights[i], width, height, batch.phase[i], batch.amplitude[i],
                       batch.frequency[i], env, cy_table);
    vkhip_stamp_end(stamps, blocks_done);
}
