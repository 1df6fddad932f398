/* cuda_stream.c -- the engine's own CUDA stream (vkhip_cuda_with_stream), on the GPU: CUDA's
 * legacy and per-thread default streams (they need no cuda.h) lent to vkhip; through each, a
 * kernel writes a shared buffer inside a profiled scope on the lent stream; Vulkan reads every
 * value back; the checker finds the CUDA write and the host's read ordered. Exit 0 when every
 * check passed, 1 when one failed, 2 with one line when there is no usable CUDA device (CI). Run
 * by scripts/capi-gpu-check.sh on the GPU machine; built with -Werror by tests/c.rs everywhere. */
#include <stdint.h>
#include <stdlib.h>
#include "expect.h"

#define WORDS 4096u
static const char *KERNEL = "extern \"C\" __global__ void fill(float* out, unsigned int n, float v)\n"
                            "{ unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = v + i; }\n";

static void no_device_if(VkhipStatus s, const char *call) {
  if (s != VKHIP_STATUS_OK && vkhip_status_is_environment(s)) {
    fprintf(stderr, "cuda_stream: no usable CUDA device: %s: %s\n", call, vkhip_last_error());
    exit(2);
  }
}

/* Through `cuda` (a lent stream), write v + i into the buffer in a profiled scope, wait for the
 * stream, read the buffer back on Vulkan in a host scope: whether every value is right. */
static int round_trip(VkhipDevice *dev, VkhipBuffer *buffer, VkhipCuda *cuda, VkhipProfiler *prof, VkhipProfHost *host,
                      VkhipResource *r, float v) {
  static float values[WORDS];
  VkhipCudaBuffer *mapped = NULL;
  VkhipCudaKernel *kernel = NULL;
  VkhipProfStream *track = NULL;
  VkhipScope *scope = NULL;
  uint64_t ptr = 0;
  uint32_t n = WORDS;
  void *args[] = {&ptr, &n, &v};
  int right = 1;
  EXPECT_STATUS(vkhip_cuda_import_buffer(cuda, buffer, &mapped), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_buffer_pointer(mapped, &ptr), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_compile(cuda, KERNEL, "fill", &kernel), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_cuda_stream(prof, "engine stream", cuda, &track), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_stream_scope(track, "fill", &scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_writes(scope, r), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_launch(cuda, kernel, (VkhipDim3){WORDS / 256, 1, 1}, (VkhipDim3){256, 1, 1}, args, 3),
                VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_synchronize(cuda), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_stream_synchronized(track), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_host_scope(host, "check", &scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_reads(scope, r), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_device_read_buffer(dev, buffer, NULL, 0, (uint8_t *)values, sizeof values), VKHIP_STATUS_OK);
  for (uint32_t i = 0; i < WORDS; i++) right &= values[i] == v + (float)i;
  EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_end_frame(prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_stream_destroy(track), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_kernel_destroy(kernel), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_buffer_destroy(mapped), VKHIP_STATUS_OK);
  return right;
}

int main(void) {
  VkhipDevice *dev = NULL;
  VkhipCuda *cuda = NULL, *lent = NULL;
  VkhipBuffer *buffer = NULL;
  VkhipProfiler *prof = NULL;
  VkhipProfHost *host = NULL;
  VkhipResource *r = NULL;
  VkhipCapture *capture = NULL;
  VkhipVerdict verdict;
  void *own = NULL, *stream = NULL;
  no_device_if(vkhip_device_open(VKHIP_IMPORTER_CUDA, NULL, &dev), "vkhip_device_open");
  no_device_if(vkhip_cuda_open(dev, &cuda), "vkhip_cuda_open");
  EXPECT(dev && cuda);
  if (!dev || !cuda) return finish("cuda_stream");
  EXPECT_STATUS(vkhip_cuda_stream(cuda, &own), VKHIP_STATUS_OK);
  EXPECT(own != NULL && own != (void *)1 && own != (void *)2); /* the crate's own stream */
  VkhipSemaphore *timeline = NULL; /* a shared timeline, signalled and waited for on the host */
  uint64_t value = 0;
  EXPECT_STATUS(vkhip_timeline_create(dev, 3, &timeline), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_semaphore_value(timeline, &value), VKHIP_STATUS_OK);
  EXPECT(value == 3);
  EXPECT_STATUS(vkhip_semaphore_signal(timeline, 5), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_semaphore_signal(timeline, 4), VKHIP_STATUS_INVALID); /* values only grow */
  EXPECT_STATUS(vkhip_semaphore_wait(timeline, 5, 1000000), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_semaphore_wait(timeline, 6, 1000000), VKHIP_STATUS_TIMEOUT);
  EXPECT_STATUS(vkhip_semaphore_destroy(timeline), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_buffer_create(dev, WORDS * 4, &buffer), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_create(dev, NULL, &prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_host_thread(prof, "main", &host), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_resource(prof, "buffer", &r), VKHIP_STATUS_OK);
  void *streams[] = {(void *)1 /* CU_STREAM_LEGACY */, (void *)2 /* CU_STREAM_PER_THREAD */};
  for (int i = 0; i < 2; i++) {
    EXPECT_STATUS(vkhip_cuda_with_stream(cuda, streams[i], &lent), VKHIP_STATUS_OK);
    if (!lent) continue;
    EXPECT_STATUS(vkhip_cuda_stream(lent, &stream), VKHIP_STATUS_OK);
    EXPECT(stream == streams[i]);
    EXPECT(round_trip(dev, buffer, lent, prof, host, r, 1000.0f * (float)(i + 1)));
    EXPECT_STATUS(vkhip_cuda_destroy(lent), VKHIP_STATUS_OK); /* the stream stays the engine's */
    lent = NULL;
  }
  EXPECT_STATUS(vkhip_profiler_finish(prof, &capture), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_capture_verdict(capture, &verdict), VKHIP_STATUS_OK);
  EXPECT(verdict.violations == 0 && verdict.pairs_checked >= 2);
  printf("cuda_stream: verdict %llu violations, %llu pairs checked\n", (unsigned long long)verdict.violations,
         (unsigned long long)verdict.pairs_checked);
  for (uint64_t i = 0; i < verdict.violations_kept; i++) {
    const char *sentence = NULL;
    if (vkhip_capture_violation(capture, i, &sentence) == VKHIP_STATUS_OK && sentence)
      printf("cuda_stream: hazard: %s\n", sentence);
  }
  EXPECT_STATUS(vkhip_capture_destroy(capture), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_host_destroy(host), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_resource_destroy(r), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_destroy(prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_buffer_destroy(buffer), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_cuda_destroy(cuda), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_device_destroy(dev), VKHIP_STATUS_OK);
  return finish("cuda_stream");
}
