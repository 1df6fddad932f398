// scripts/cuda-call-cost.c — what one CUDA driver call costs the calling thread, on the GPU
// machine (issue 45: the render thread's floor). No cargo needed; build and run there:
//
//     gcc -O2 -o /tmp/cuda-call-cost scripts/cuda-call-cost.c -I/usr/local/cuda/include -lcuda
//     /tmp/cuda-call-cost
//
// For each call, 1,000 warm-up calls and then 20,000 timed ones on one non-blocking stream of
// the primary context (the stream synchronised every 256 calls, so nothing queues up without
// bound), and per call the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and the wall time.
// The kernel is an empty one with two parameters, loaded from PTX. Exit 0, or 1 with the call
// that failed and its status.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define CHECK(call)                                                   \
    do {                                                              \
        CUresult r_ = (call);                                         \
        if (r_ != CUDA_SUCCESS) {                                     \
            printf("%s failed: CUresult %d\n", #call, (int)r_);       \
            exit(1);                                                  \
        }                                                             \
    } while (0)

static const char* PTX = ".version 7.0\n.target sm_70\n.address_size 64\n"
                         ".visible .entry empty(.param .u64 p, .param .f32 t) { ret; }\n";

#define N 20000
#define BENCH(name, stmt)                                                                  \
    do {                                                                                   \
        for (int i = 0; i < 1000; i++) { stmt; }                                           \
        CHECK(cuStreamSynchronize(stream));                                                \
        double c0 = thread_cpu_ns(), w0 = wall_ns();                                       \
        for (int i = 0; i < N; i++) {                                                      \
            stmt;                                                                          \
            if ((i & 255) == 255) CHECK(cuStreamSynchronize(stream));                      \
        }                                                                                  \
        double c = thread_cpu_ns() - c0, w = wall_ns() - w0;                               \
        printf("%-36s cpu %7.3f us   wall %7.3f us\n", name, c / N / 1e3, w / N / 1e3);    \
    } while (0)

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction empty;
    CUstream stream;
    CUevent event;
    CUdeviceptr p;
    float t = 1.0f;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&module, PTX));
    CHECK(cuModuleGetFunction(&empty, module, "empty"));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&event, CU_EVENT_DEFAULT));
    CHECK(cuMemAlloc(&p, 1 << 20));
    void* args[] = {&p, &t};
    CUcontext got;
    BENCH("clock_gettime(THREAD_CPUTIME)", (void)thread_cpu_ns());
    BENCH("clock_gettime(MONOTONIC)", (void)wall_ns());
    BENCH("cuCtxSetCurrent (already current)", CHECK(cuCtxSetCurrent(ctx)));
    BENCH("cuCtxGetCurrent", CHECK(cuCtxGetCurrent(&got)));
    BENCH("cuEventRecord", CHECK(cuEventRecord(event, stream)));
    BENCH("cuEventQuery", (void)cuEventQuery(event));
    BENCH("cuLaunchKernel (empty, 1 block)", CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, stream, args, 0)));
    BENCH("cuStreamWriteValue32", CHECK(cuStreamWriteValue32(stream, p, 1, 0)));
    BENCH("cuStreamWaitValue32 (already met)", CHECK(cuStreamWaitValue32(stream, p, 0, CU_STREAM_WAIT_VALUE_GEQ)));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemFree(p));
    CHECK(cuEventDestroy(event));
    CHECK(cuStreamDestroy(stream));
    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
