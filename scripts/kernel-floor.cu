// scripts/kernel-floor.cu: the floors under two of issue 32's per-frame targets, measured with
// CUDA alone (no Vulkan, no vkhip), built by scripts/kernel-floor.sh with nvcc on the GPU machine.
//
//   kernel-floor kernel GRID ITERATIONS
//       The project's `sinewave` (kernels/sinewave.hip, included below, compiled like NVRTC
//       compiles it: --fmad=false, this GPU's sm) against two kernels that do no math at all and
//       the driver's fill that `vkhip bench-kernel` compares it with (cuMemsetD32Async), on one
//       freshly allocated buffer of GRID floats:
//         pattern   the same threads, the same rows walked, the same 16-byte stores as sinewave,
//                   storing a constant: the floor of sinewave's store pattern;
//         flat      one 16-byte store per thread over the whole buffer, no loop: the plainest
//                   store kernel there is.
//       Each iteration times all four with events, in an order that rotates every iteration.
//       Printed per variant: median, p10–p90, the bandwidth at the median, and the median of
//       the per-iteration ratios to the fill. Before timing, each kernel writes a buffer filled
//       with NaN and every float is checked (the constant kernels: the constant; sinewave: within
//       1e-6 of the CPU's height), so a kernel that skipped part of the buffer cannot look fast.
//       The launch is the app's (one block per multiprocessor); KF_BLOCKS_PER_SM=8 gives the
//       launch before issue 32.
//
//   kernel-floor init [cuda|vulkan|both]
//       One fresh process's start-up on the host clock (CLOCK_MONOTONIC).
//         cuda (the default)  cuInit, then the device's primary context (cuDevicePrimaryCtxRetain
//                             + cuCtxSetCurrent), then a first cuMemAlloc: what any program that
//                             uses CUDA pays before its first launch;
//         vulkan              the Vulkan loader (dlopen libvulkan.so.1), a Vulkan 1.3 instance
//                             and vkEnumeratePhysicalDevices: what any Vulkan program pays before
//                             it can pick a device (the app's `Vulkan instance made` mark);
//         both                the two on two threads started together, as `vkhip --backend
//                             cuda` overlaps them: each side's own time beside its time alone
//                             says whether the driver lets them overlap at all.
//       Vulkan is reached through dlopen and vkGetInstanceProcAddr with the few declarations
//       below, so building this needs no Vulkan headers or SDK.
//
// Exit 0 on success, 1 when a check fails, 2 for bad usage or a CUDA error.

#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "../kernels/sinewave.hip"

static double now_ms()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void check(CUresult r, const char* what)
{
    if (r != CUDA_SUCCESS) {
        const char* name = "?";
        cuGetErrorName(r, &name);
        fprintf(stderr, "kernel-floor: %s failed: %s (%d)\n", what, name, (int)r);
        exit(2);
    }
}

static void check(cudaError_t r, const char* what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "kernel-floor: %s failed: %s (%d)\n", what, cudaGetErrorName(r), (int)r);
        exit(2);
    }
}

// sinewave's store pattern with no math (see the header): width % 4 == 0 only.
extern "C" __global__ void floor_pattern(float* __restrict__ heights, unsigned int width,
                                         unsigned int height, float value)
{
    const unsigned int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4u;
    if (x0 >= width) {
        return;
    }
    vkhip_float4 packed;
    packed.x = packed.y = packed.z = packed.w = value;
    for (unsigned int y = blockIdx.y; y < height; y += gridDim.y) {
        *reinterpret_cast<vkhip_float4*>(heights + (unsigned long long)y * width + x0) = packed;
    }
}

// One 16-byte store per thread, no loop.
extern "C" __global__ void floor_flat(vkhip_float4* __restrict__ out, unsigned long long quads, float value)
{
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < quads) {
        vkhip_float4 packed;
        packed.x = packed.y = packed.z = packed.w = value;
        out[i] = packed;
    }
}

static double percentile(std::vector<double> v, double p)
{
    std::sort(v.begin(), v.end());
    const double i = p * (v.size() - 1);
    const size_t lo = (size_t)i;
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (i - lo);
}

// The part of the Vulkan API `init vulkan` calls (vulkan_core.h's layouts, Vulkan 1.0).
struct VkAppInfo {
    int sType; // VK_STRUCTURE_TYPE_APPLICATION_INFO = 0
    const void* pNext;
    const char* pApplicationName;
    uint32_t applicationVersion;
    const char* pEngineName;
    uint32_t engineVersion;
    uint32_t apiVersion;
};
struct VkInstInfo {
    int sType; // VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
    const void* pNext;
    uint32_t flags;
    const VkAppInfo* pApplicationInfo;
    uint32_t enabledLayerCount;
    const char* const* ppEnabledLayerNames;
    uint32_t enabledExtensionCount;
    const char* const* ppEnabledExtensionNames;
};
typedef void* VkHandle;
typedef void (*VkVoidFn)(void);
typedef VkVoidFn (*GetInstanceProcAddrFn)(VkHandle, const char*);
typedef int (*CreateInstanceFn)(const VkInstInfo*, const void*, VkHandle*);
typedef int (*EnumeratePhysicalDevicesFn)(VkHandle, uint32_t*, VkHandle*);
typedef void (*DestroyInstanceFn)(VkHandle, const void*);

// From `t0`: when the side started and ended (ms).
struct Side {
    double start = 0, end = 0;
};

// CUDA's start-up (see the header): `init_end` and `ctx_end` are when cuInit and the primary
// context were done; the side ends when the first cuMemAlloc returns.
static Side cuda_side(double t0, double* init_end, double* ctx_end)
{
    Side s;
    s.start = now_ms() - t0;
    check(cuInit(0), "cuInit");
    *init_end = now_ms() - t0;
    CUdevice dev;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CUcontext ctx;
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    *ctx_end = now_ms() - t0;
    CUdeviceptr p;
    check(cuMemAlloc(&p, 1 << 20), "cuMemAlloc");
    s.end = now_ms() - t0;
    return s;
}

// The loader, an instance, its physical devices (see the header). Exits 2 on any failure.
static Side vulkan_side(double t0, unsigned* devices)
{
    Side s;
    s.start = now_ms() - t0;
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "kernel-floor: no Vulkan loader: %s\n", dlerror());
        exit(2);
    }
    auto gipa = (GetInstanceProcAddrFn)dlsym(lib, "vkGetInstanceProcAddr");
    auto create = gipa ? (CreateInstanceFn)gipa(nullptr, "vkCreateInstance") : nullptr;
    if (!create) {
        fprintf(stderr, "kernel-floor: the Vulkan loader has no vkCreateInstance\n");
        exit(2);
    }
    VkAppInfo app = {0, nullptr, "kernel-floor", 1, "kernel-floor", 1, (1u << 22) | (3u << 12)};
    VkInstInfo info = {1, nullptr, 0, &app, 0, nullptr, 0, nullptr};
    VkHandle instance = nullptr;
    const int r = create(&info, nullptr, &instance);
    if (r != 0) {
        fprintf(stderr, "kernel-floor: vkCreateInstance failed (%d)\n", r);
        exit(2);
    }
    auto enumerate = (EnumeratePhysicalDevicesFn)gipa(instance, "vkEnumeratePhysicalDevices");
    uint32_t n = 0;
    if (!enumerate || enumerate(instance, &n, nullptr) != 0) {
        fprintf(stderr, "kernel-floor: vkEnumeratePhysicalDevices failed\n");
        exit(2);
    }
    std::vector<VkHandle> physical(n);
    enumerate(instance, &n, physical.data());
    s.end = now_ms() - t0;
    *devices = n;
    auto destroy = (DestroyInstanceFn)gipa(instance, "vkDestroyInstance");
    if (destroy) {
        destroy(instance, nullptr);
    }
    return s;
}

static int init_mode(const char* which)
{
    const bool cuda = strcmp(which, "cuda") == 0 || strcmp(which, "both") == 0;
    const bool vulkan = strcmp(which, "vulkan") == 0 || strcmp(which, "both") == 0;
    const double t0 = now_ms();
    Side c, v;
    double init_end = 0, ctx_end = 0;
    unsigned devices = 0;
    if (cuda && vulkan) {
        // Started one right after the other (tens of µs apart, nothing against 70–220 ms).
        std::thread tc([&] { c = cuda_side(t0, &init_end, &ctx_end); });
        std::thread tv([&] { v = vulkan_side(t0, &devices); });
        tc.join();
        tv.join();
    } else if (cuda) {
        c = cuda_side(t0, &init_end, &ctx_end);
    } else {
        v = vulkan_side(t0, &devices);
    }
    const double total = now_ms() - t0;
    printf("init: which=%s", which);
    if (cuda) {
        printf(" cuInit_ms=%.1f primary_context_ms=%.1f first_alloc_ms=%.1f cuda_ms=%.1f", init_end - c.start,
               ctx_end - init_end, c.end - ctx_end, c.end - c.start);
    }
    if (vulkan) {
        printf(" vulkan_ms=%.1f vulkan_devices=%u", v.end - v.start, devices);
    }
    printf(" total_ms=%.1f\n", total);
    return 0;
}

static const char* const NAMES[4] = {"sinewave", "pattern", "flat", "fill"};

static int kernel_mode(unsigned width, unsigned height, int iterations)
{
    check(cudaSetDevice(0), "cudaSetDevice");
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");

    // sinewave's launch as src/compute/cuda/plan.rs computes it (launch_config): one block per
    // multiprocessor in all. KF_BLOCKS_PER_SM asks for more (8 was the launch before issue 32).
    const unsigned block = 256;
    const char* per_sm_env = getenv("KF_BLOCKS_PER_SM");
    const unsigned per_sm = per_sm_env ? (unsigned)std::max(1, atoi(per_sm_env)) : 1u;
    const unsigned resident = (unsigned)prop.multiProcessorCount * per_sm;
    const unsigned grid_x = std::max(1u, ((width + 3) / 4 + block - 1) / block);
    const unsigned grid_y = std::min(std::max(1u, resident / grid_x), std::min(height, 65535u));
    const size_t words = (size_t)width * height;
    const unsigned long long quads = words / 4;
    const unsigned flat_blocks = (unsigned)((quads + block - 1) / block);
    const double mib = words * 4 / 1048576.0;
    printf("device: %s, %d SMs; grid %ux%u (%.1f MiB); sinewave and pattern: %ux%u blocks of %u; "
           "flat: %u blocks of %u; %d iterations\n",
           prop.name, prop.multiProcessorCount, width, height, mib, grid_x, grid_y, block, flat_blocks,
           block, iterations);

    float* heights = nullptr;
    check(cudaMalloc(&heights, words * 4), "cudaMalloc");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const float phase = 0.375f, amplitude = 0.25f, frequency = 6.0f; // sim::WaveParams::at_time(_, 0.25)
    const float pattern_value = 1.5f, flat_value = 2.5f;
    vkhip_float4* out = reinterpret_cast<vkhip_float4*>(heights);

    auto launch = [&](int v) {
        switch (v) {
        case 0:
            sinewave<<<dim3(grid_x, grid_y, 1), dim3(block, 1, 1), 0, stream>>>(
                heights, width, height, phase, amplitude, frequency, nullptr, nullptr);
            break;
        case 1:
            floor_pattern<<<dim3(grid_x, grid_y, 1), dim3(block, 1, 1), 0, stream>>>(
                heights, width, height, pattern_value);
            break;
        case 2:
            floor_flat<<<dim3(flat_blocks, 1, 1), dim3(block, 1, 1), 0, stream>>>(out, quads, flat_value);
            break;
        default:
            // What vkhip bench-kernel's CUDA fill is (fill_u32).
            check(cuMemsetD32Async((CUdeviceptr)heights, 0, words, (CUstream)stream), "cuMemsetD32Async");
        }
        check(cudaGetLastError(), NAMES[v]);
    };

    // Every kernel writes the whole buffer: NaN first, one launch, then every float checked
    // (sinewave's against the CPU's sinf and cosf, in sim::height's order of operations).
    std::vector<float> sx(width), cy(height);
    for (unsigned x = 0; x < width; ++x) {
        sx[x] = amplitude * sinf(frequency * (2.0f * (float)x / (float)(width - 1u) - 1.0f) + phase);
    }
    for (unsigned y = 0; y < height; ++y) {
        cy[y] = cosf(frequency * (2.0f * (float)y / (float)(height - 1u) - 1.0f) + phase);
    }
    std::vector<float> host(words);
    int failed = 0;
    for (int v = 0; v < 3; ++v) {
        check(cuMemsetD32Async((CUdeviceptr)heights, 0x7fc00000u, words, (CUstream)stream), "NaN fill");
        launch(v);
        check(cudaMemcpyAsync(host.data(), heights, words * 4, cudaMemcpyDeviceToHost, stream), "read back");
        check(cudaStreamSynchronize(stream), "read back");
        size_t bad = 0;
        for (size_t i = 0; i < words; ++i) {
            const float h = host[i];
            const bool ok = v == 0 ? std::fabs(h - sx[i % width] * cy[i / width]) <= 1e-6f
                                   : h == (v == 1 ? pattern_value : flat_value);
            bad += !ok;
        }
        printf("check: %s wrote %zu of %zu floats as it should\n", NAMES[v], words - bad, words);
        failed |= bad != 0;
    }
    if (failed) {
        fprintf(stderr, "kernel-floor: a kernel did not write the whole buffer as it should\n");
        return 1;
    }

    std::vector<cudaEvent_t> ev(8);
    for (auto& e : ev) {
        check(cudaEventCreate(&e), "cudaEventCreate");
    }
    for (int w = 0; w < 20; ++w) {
        for (int v = 0; v < 4; ++v) {
            launch(v);
        }
    }
    std::vector<double> us[4];
    std::vector<double> ratio[3];
    for (int it = 0; it < iterations; ++it) {
        for (int k = 0; k < 4; ++k) {
            const int v = (it + k) % 4;
            check(cudaEventRecord(ev[2 * v], stream), "cudaEventRecord");
            launch(v);
            check(cudaEventRecord(ev[2 * v + 1], stream), "cudaEventRecord");
        }
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        double t[4];
        for (int v = 0; v < 4; ++v) {
            float ms = 0;
            check(cudaEventElapsedTime(&ms, ev[2 * v], ev[2 * v + 1]), "cudaEventElapsedTime");
            t[v] = ms * 1e3;
            us[v].push_back(t[v]);
        }
        for (int v = 0; v < 3; ++v) {
            ratio[v].push_back(t[v] / t[3]);
        }
    }
    const double fill = percentile(us[3], 0.5);
    for (int v = 0; v < 4; ++v) {
        const double med = percentile(us[v], 0.5);
        printf("%-9s median_us=%.2f p10_us=%.2f p90_us=%.2f GB_per_s=%.0f ratio_to_fill=%.3f",
               NAMES[v], med, percentile(us[v], 0.1), percentile(us[v], 0.9), words * 4 / (med * 1e3),
               med / fill);
        if (v < 3) {
            printf(" per_iteration_ratio_p50=%.3f p10=%.3f p90=%.3f", percentile(ratio[v], 0.5),
                   percentile(ratio[v], 0.1), percentile(ratio[v], 0.9));
        }
        printf("\n");
    }
    for (auto& e : ev) {
        cudaEventDestroy(e);
    }
    cudaStreamDestroy(stream);
    cudaFree(heights);
    return 0;
}

static int usage()
{
    fprintf(stderr, "usage: kernel-floor kernel WIDTHxHEIGHT ITERATIONS | kernel-floor init [cuda|vulkan|both]\n");
    return 2;
}

int main(int argc, char** argv)
{
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "init") == 0) {
        const char* which = argc == 3 ? argv[2] : "cuda";
        if (strcmp(which, "cuda") != 0 && strcmp(which, "vulkan") != 0 && strcmp(which, "both") != 0) {
            return usage();
        }
        return init_mode(which);
    }
    if (argc != 4 || strcmp(argv[1], "kernel") != 0) {
        return usage();
    }
    unsigned width = 0, height = 0;
    char x = 0;
    const int iterations = atoi(argv[3]);
    if (sscanf(argv[2], "%u%c%u", &width, &x, &height) != 3 || x != 'x' || width < 4 || height < 2 ||
        width % 4 != 0 || iterations < 1) {
        fprintf(stderr, "kernel-floor: the grid must be WIDTHxHEIGHT with WIDTH a multiple of 4, and "
                        "ITERATIONS at least 1\n");
        return usage();
    }
    return kernel_mode(width, height, iterations);
}
