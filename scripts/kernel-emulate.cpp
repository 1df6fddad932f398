// scripts/kernel-emulate.cpp: kernels/sinewave.hip run on the CPU, every thread of a block a host
// thread (std::barrier for __syncthreads, one block at a time, so a `static` is the block's shared
// memory), and every value of every environment (and of every slot of a sinewave_batch launch)
// compared with the CPU reference of src/sim.rs (`height`, `env_phase`). What it checks without a
// GPU: the indexing of the launch over gridDim.z (--envs: environment z at z*width*height, at phase
// + (z % 64) * 0.09375), the row walkers and the row table, the float4 and scalar stores. It does
// not check NVRTC's or hiprtc's code (the GPU checks do: scripts/views-gpu-check.sh).
// Run: scripts/kernel-emulate.sh (exit 0: every value within 1e-6).
#include <barrier>
#include <cmath>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

struct dim3u {
    unsigned int x, y, z;
};
thread_local dim3u threadIdx, blockIdx;
dim3u blockDim, gridDim;
std::barrier<>* block_barrier;
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__ static
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline void __threadfence() {}
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { unsigned int o = *p; *p += v; return o; }
#include "../kernels/sinewave.hip"

// One launch: blocks one after the other, the 256 threads of a block at once.
static void launch(const std::function<void()>& kernel, dim3u grid) {
    gridDim = grid;
    blockDim = {256, 1, 1};
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                std::barrier<> b(256);
                block_barrier = &b;
                std::vector<std::thread> threads;
                for (unsigned t = 0; t < 256; ++t)
                    threads.emplace_back([=, &kernel] { threadIdx = {t, 0, 0}; blockIdx = {x, y, z}; kernel(); });
                for (auto& t : threads) t.join();
            }
}

// sim::height of environment e (sim::env_phase), amplitude 0.25, frequency 6.
static float reference(unsigned w, unsigned h, float phase, unsigned e, unsigned x, unsigned y) {
    const float p = phase + (float)(e % 64u) * 0.09375f;
    const float u = 2.0f * (float)x / (float)(w - 1) - 1.0f, v = 2.0f * (float)y / (float)(h - 1) - 1.0f;
    return 0.25f * std::sin(6.0f * u + p) * std::cos(6.0f * v + p);
}

// `envs` fields of w x h with `walkers` row walkers; `batch` 0: sinewave, else sinewave_batch of
// that many slots (slot i at phase 1.25 + i). Returns the values off by more than 1e-6 (or unwritten).
static size_t check(unsigned w, unsigned h, unsigned envs, unsigned walkers, unsigned batch) {
    const unsigned gx = ((w + 3) / 4 + 255) / 256, slots = batch ? batch : 1;
    std::vector<std::vector<float>> out(slots, std::vector<float>((size_t)envs * w * h, NAN));
    if (batch == 0) {
        float* p = out[0].data();
        launch([=] { sinewave(p, w, h, 1.25f, 0.25f, 6.0f, nullptr, nullptr); }, {gx, walkers, envs});
    } else {
        vkhip_batch b{};
        for (unsigned i = 0; i < batch; ++i) {
            b.heights[i] = out[i].data();
            b.phase[i] = 1.25f + (float)i;
            b.amplitude[i] = 0.25f;
            b.frequency[i] = 6.0f;
        }
        launch([=] { sinewave_batch(b, w, h, envs, nullptr, nullptr); }, {gx, walkers, batch * envs});
    }
    size_t bad = 0;
    double worst = 0;
    for (unsigned i = 0; i < slots; ++i)
        for (unsigned e = 0; e < envs; ++e)
            for (unsigned y = 0; y < h; ++y)
                for (unsigned x = 0; x < w; ++x) {
                    const double d = std::fabs((double)out[i][(size_t)e * w * h + y * w + x] -
                                               reference(w, h, 1.25f + (float)i, e, x, y));
                    bad += !(d <= 1e-6);
                    worst = d > worst ? d : worst;
                }
    printf("%ux%u envs %u, %u row walkers, %s: max abs error %.3g, %zu values off\n", w, h, envs, walkers,
           batch ? "sinewave_batch" : "sinewave", worst, bad);
    return bad;
}

int main() {
    size_t bad = 0;
    bad += check(16, 9, 1, 3, 0);    // one environment: the launch it always was
    bad += check(16, 9, 5, 2, 0);    // float4 stores, five fields
    bad += check(13, 7, 4, 3, 0);    // rows not 16-byte aligned: scalar stores
    bad += check(1030, 5, 3, 2, 0);  // two column blocks
    bad += check(8, 300, 66, 1, 0);  // past 64 environments (the phases repeat), a table refill
    bad += check(16, 9, 3, 2, 2);    // a batch of 2 slots x 3 environments
    bad += check(13, 7, 2, 1, 3);
    printf(bad ? "FAIL\n" : "PASS\n");
    return bad != 0;
}
