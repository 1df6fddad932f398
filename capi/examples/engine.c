/* engine.c -- a C engine adopting vkhip (capi/README.md): its own Vulkan device; K = 2 shared
 * buffers of 256 x 256 floats a CUDA kernel writes every frame between a wait and a signal; Vulkan
 * reading each (a copy, where an engine would draw); the host checking every value; the profiler's
 * verdict and trace. engine_broken.c is this file with one wait removed. Usage: engine [FRAMES
 * [TRACE]]. Exit: 0 no hazard, every value right; 1 hazards found; 2 no usable CUDA device (one
 * line on stderr); 3 other failures. Without CUDA it runs the Vulkan side, profiled, first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>
#include "vkhip.h"

#ifndef NAME
#define NAME "engine"
#endif
#define K 2
#define N (256u * 256u)
static const char *KERNEL = "extern \"C\" __global__ void heights(float* out, unsigned int n, unsigned int f)\n"
                            "{ unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "  if (i < n) out[i] = (float)((i + 7919u * f) & 0xffffffu); }\n";

static void die(int code, const char *what, const char *why) {
  fprintf(stderr, code == 2 ? NAME ": no usable CUDA device: %s: %s\n" : NAME ": error: %s: %s\n", what, why);
  exit(code);
}
static void ok(VkhipStatus s, const char *call) { /* vkhip's status: the machine's fault, or ours */
  if (s) die(vkhip_status_is_environment(s) ? 2 : 3, call, vkhip_last_error());
}
static void vk_ok(VkResult r, const char *call) { /* no driver or extension: the machine's fault */
  char why[32];
  snprintf(why, sizeof why, "VkResult %d", (int)r);
  if (r) die(r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_EXTENSION_NOT_PRESENT ? 2 : 3, call, why);
}
#define V(call) ok((call), #call)
#define VK(call) vk_ok((call), #call)

static VkDevice dev;
static VkQueue queue;
static VkCommandBuffer cmds[K];
static VkFence fences[K];
static VkhipDevice *vk;
static VkhipBuffer *heights[K], *scratch[K]; /* shared; the draw's own copy of what it read */
static VkhipProfQueue *pq;                   /* the profiler's tracks and resources */
static VkhipProfHost *host;
static VkhipResource *p_heights[K];
static uint64_t tickets[K]; /* the profiler's number of each slot's last submission */
static float values[N];

static int has_extension(VkPhysicalDevice p, const char *name) {
  VkExtensionProperties props[512];
  uint32_t count = sizeof props / sizeof *props;
  vkEnumerateDeviceExtensionProperties(p, NULL, &count, props);
  for (uint32_t i = 0; i < count; i++) if (!strcmp(props[i].extensionName, name)) return 1;
  return 0;
}

/* Record slot s's draw in a profiled scope: acquire the buffer from CUDA (the first time: fill it
 * with 1.0f instead), copy it (what a draw would read), release it to CUDA. */
static void record(int s, int fill) {
  VkBuffer src, dst;
  VkhipScope *scope; /* the draw's, in the command buffer */
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
  VkMemoryBarrier filled = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_TRANSFER_WRITE_BIT,
                            VK_ACCESS_TRANSFER_READ_BIT};
  VkPipelineStageFlags transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkBufferCopy region = {0, 0, N * 4};
  V(vkhip_buffer_info(heights[s], &src, NULL)), V(vkhip_buffer_info(scratch[s], &dst, NULL));
  VK(vkBeginCommandBuffer(cmds[s], &begin));
  V(vkhip_prof_queue_scope(pq, cmds[s], fill ? "fill" : "draw", &scope));
  V(fill ? vkhip_scope_writes(scope, p_heights[s]) : vkhip_scope_reads(scope, p_heights[s]));
  if (fill) {
    vkCmdFillBuffer(cmds[s], src, 0, VK_WHOLE_SIZE, 0x3f800000u);
    vkCmdPipelineBarrier(cmds[s], transfer, transfer, 0, 1, &filled, 0, NULL, 0, NULL);
  } else {
    V(vkhip_buffer_cmd_acquire(heights[s], cmds[s], transfer, VK_ACCESS_TRANSFER_READ_BIT));
  }
  vkCmdCopyBuffer(cmds[s], src, dst, 1, &region);
  V(vkhip_buffer_cmd_release(heights[s], cmds[s], transfer, fill ? VK_ACCESS_TRANSFER_WRITE_BIT : 0));
  V(vkhip_scope_end(scope));
}

/* End and submit slot s, waiting for `wait` at the copy (if any) and signalling `signal` (if any). */
static void submit(int s, VkSemaphore wait, uint64_t wait_value, VkSemaphore signal, uint64_t signal_value) {
  uint32_t waits = wait ? 1u : 0u, signals = signal ? 1u : 0u;
  VkTimelineSemaphoreSubmitInfo timeline = {VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO, NULL, waits,
                                            &wait_value, signals, &signal_value};
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSubmitInfo info = {VK_STRUCTURE_TYPE_SUBMIT_INFO, &timeline, waits, &wait, &stage, 1, &cmds[s], signals, &signal};
  VK(vkEndCommandBuffer(cmds[s]));
  VK(vkResetFences(dev, 1, &fences[s]));
  VK(vkQueueSubmit(queue, 1, &info, fences[s]));
}

/* The host, once slot s's draw is done (its fence): read the buffer back in a profiled scope and
 * check every value is frame f's (f < 0: the fill's 1.0f). Whether they all are. */
static int check(int s, long f) {
  VkhipScope *scope; /* the host's */
  int right = 1;
  VK(vkWaitForFences(dev, 1, &fences[s], VK_TRUE, 10000000000ull));
  V(vkhip_prof_queue_waited(pq, tickets[s]));
  V(vkhip_prof_host_scope(host, "check", &scope)), V(vkhip_scope_reads(scope, p_heights[s]));
  V(vkhip_device_read_buffer(vk, heights[s], NULL, 0, (uint8_t *)values, sizeof values));
  for (uint32_t i = 0; i < N; i++)
    right &= values[i] == (f < 0 ? 1.0f : (float)((i + 7919u * (uint32_t)f) & 0xffffffu));
  V(vkhip_scope_end(scope));
  return right;
}

int main(int argc, char **argv) {
  uint64_t frames = argc > 1 ? strtoull(argv[1], NULL, 10) : 600;
  const char *trace = argc > 2 ? argv[2] : NAME ".trace.json", *text;
  if (argc > 3 || frames == 0) die(3, "usage", NAME " [FRAMES (1 or more) [TRACE]]");

  /* Its own instance and device, with what vkhip asks (lavapipe lacks semaphore export: HIP's list). */
  VkhipRequirements need;
  V(vkhip_vulkan_requirements(VKHIP_IMPORTER_CUDA, &need));
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, NAME, 1, NULL, 0, need.api_version};
  VkInstanceCreateInfo ii = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL,
                             need.instance_extension_count, need.instance_extensions};
  VkInstance instance;
  VK(vkCreateInstance(&ii, NULL, &instance));
  VkPhysicalDevice physicals[16], physical = VK_NULL_HANDLE;
  uint32_t count = 16, family = 0, importer = VKHIP_IMPORTER_CUDA, n_ext = 0, n_families = 16;
  VK(vkEnumeratePhysicalDevices(instance, &count, physicals));
  for (uint32_t i = 0; i < count && !physical; i++)
    if (has_extension(physicals[i], need.device_extensions[0])) physical = physicals[i];
  if (!physical) die(2, "vkEnumeratePhysicalDevices", "no device exports memory (VK_KHR_external_memory_fd)");
  const char *exts[8];
  for (uint32_t i = 0; i < need.device_extension_count; i++)
    if (has_extension(physical, need.device_extensions[i])) exts[n_ext++] = need.device_extensions[i];
    else importer = VKHIP_IMPORTER_HIP;
  if (has_extension(physical, need.calibrated_timestamps[0])) /* the profiler's clock, EXT or KHR */
    exts[n_ext++] = need.calibrated_timestamps[0];
  else if (has_extension(physical, need.calibrated_timestamps[1])) exts[n_ext++] = need.calibrated_timestamps[1];
  VkQueueFamilyProperties families[16];
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n_families, families);
  while (family < n_families && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) family++;
  VkPhysicalDeviceVulkan12Features on12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                           .timelineSemaphore = VK_TRUE};
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, family, 1, &priority};
  VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &on12, 0, 1, &qi, 0, NULL, n_ext, exts, NULL};
  VK(vkCreateDevice(physical, &di, NULL, &dev));
  vkGetDeviceQueue(dev, family, 0, &queue);
  V(vkhip_device_from_raw(vkGetInstanceProcAddr, instance, physical, dev, family, importer, &vk));
  V(vkhip_device_describe(vk, &text)), printf("vulkan: %s\n", text);

  /* Shared buffers and the draw's copies; per slot a command buffer and a fence. */
  VkCommandPool pool;
  VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, family};
  VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, VK_FENCE_CREATE_SIGNALED_BIT};
  VK(vkCreateCommandPool(dev, &pi, NULL, &pool));
  VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                    VK_COMMAND_BUFFER_LEVEL_PRIMARY, K};
  VK(vkAllocateCommandBuffers(dev, &ai, cmds));
  for (int s = 0; s < K; s++) {
    V(vkhip_buffer_create(vk, N * 4, &heights[s])), V(vkhip_buffer_create(vk, N * 4, &scratch[s]));
    VK(vkCreateFence(dev, &fi, NULL, &fences[s]));
  }

  /* The profiler's tracks and names; then, Vulkan alone, each buffer filled and checked, profiled. */
  VkhipProfiler *prof;
  VkhipProfSemaphore *p_written, *p_read;
  VkhipScope *scope;
  V(vkhip_profiler_create(vk, NULL, &prof)); /* the default options */
  V(vkhip_profiler_vulkan_queue(prof, "graphics", &pq));
  V(vkhip_profiler_host_thread(prof, "main", &host));
  V(vkhip_profiler_semaphore(prof, "written", &p_written)), V(vkhip_profiler_semaphore(prof, "read", &p_read));
  for (int s = 0; s < K; s++) {
    char name[32];
    snprintf(name, sizeof name, "heights[%d]", s), V(vkhip_profiler_resource(prof, name, &p_heights[s]));
    record(s, 1);
    submit(s, VK_NULL_HANDLE, 0, VK_NULL_HANDLE, 0), V(vkhip_prof_queue_submitted(pq, NULL, 0, NULL, 0, &tickets[s]));
    if (!check(s, -1)) die(3, "fill", "the host read other values than Vulkan's fill");
  }
  printf("vulkan: %d shared buffers of %u floats filled and read back, profiled\n", K, N);

  /* CUDA on the same GPU: two timelines and the buffers imported, the kernel compiled. */
  VkhipCuda *cuda;
  VkhipSemaphore *written, *read;
  VkhipCudaSemaphore *c_written, *c_read;
  VkhipCudaBuffer *c_heights[K];
  VkhipCudaKernel *kernel;
  VkhipProfStream *ps;
  VkSemaphore vk_written, vk_read;
  V(vkhip_cuda_open(vk, &cuda));
  V(vkhip_cuda_describe(cuda, &text)), printf("cuda:   %s\n", text);
  V(vkhip_timeline_create(vk, 0, &written)), V(vkhip_timeline_create(vk, 0, &read));
  V(vkhip_cuda_import_timeline(cuda, written, &c_written)), V(vkhip_cuda_import_timeline(cuda, read, &c_read));
  V(vkhip_semaphore_handle(written, &vk_written)), V(vkhip_semaphore_handle(read, &vk_read));
  for (int s = 0; s < K; s++) V(vkhip_cuda_import_buffer(cuda, heights[s], &c_heights[s]));
  V(vkhip_cuda_compile(cuda, KERNEL, "heights", &kernel));
  V(vkhip_profiler_cuda_stream(prof, "sim", cuda, &ps));

  uint64_t wrong = 0, out;
  uint32_t n = N, frame;
  void *args[] = {&out, &n, &frame}; /* the kernel's parameters, read at each launch */
  for (uint64_t f = 0, v = 1; f < frames; f++, v++) { /* v = f + 1: "frame f done" on a timeline */
    int s = (int)(f % K);
    if (f >= K) { /* the host checks frame f - K; CUDA waits until Vulkan has read it */
      wrong += !check(s, (long)(f - K));
      V(vkhip_cuda_wait(cuda, c_read, f + 1 - K)), V(vkhip_prof_stream_wait(ps, p_read, f + 1 - K));
    }
    frame = (uint32_t)f, V(vkhip_cuda_buffer_pointer(c_heights[s], &out));
    V(vkhip_prof_stream_scope(ps, "sim", &scope)), V(vkhip_scope_writes(scope, p_heights[s]));
    V(vkhip_cuda_launch(cuda, kernel, (VkhipDim3){(N + 255) / 256, 1, 1}, (VkhipDim3){256, 1, 1}, args, 3));
    V(vkhip_scope_end(scope));
    V(vkhip_cuda_signal(cuda, c_written, v)), V(vkhip_prof_stream_signal(ps, p_written, v));
    /* Vulkan draws from the buffer once `written` >= f + 1, then signals `read` = f + 1. */
    record(s, 0);
#ifndef FORGET_WAIT
    VkhipSemaphoreValue waits[] = {{p_written, v}}, signals[] = {{p_read, v}};
    submit(s, vk_written, v, vk_read, v), V(vkhip_prof_queue_submitted(pq, waits, 1, signals, 1, &tickets[s]));
#else /* THE BUG: the draw does not wait for CUDA's `written` */
    VkhipSemaphoreValue signals[] = {{p_read, v}};
    submit(s, VK_NULL_HANDLE, 0, vk_read, v), V(vkhip_prof_queue_submitted(pq, NULL, 0, signals, 1, &tickets[s]));
#endif
    V(vkhip_profiler_end_frame(prof));
  }
  for (uint64_t f = frames > K ? frames - K : 0; f < frames; f++) wrong += !check((int)(f % K), (long)f);
  V(vkhip_cuda_synchronize(cuda));

  /* The trace, the report, and the checker's verdict (each hazard on a line of its own). */
  VkhipCapture *capture;
  VkhipVerdict verdict;
  V(vkhip_profiler_finish(prof, &capture));
  V(vkhip_capture_write_perfetto(capture, trace));
  V(vkhip_capture_report(capture, &text)), V(vkhip_capture_verdict(capture, &verdict));
  printf("%strace: %s\nverdict: %llu violations (%llu pairs, %llu waits checked)\n", text, trace, (unsigned long long)
         verdict.violations, (unsigned long long)verdict.pairs_checked, (unsigned long long)verdict.waits_checked);
  for (uint64_t i = 0; i < verdict.violations_kept && i < 10; i++)
    V(vkhip_capture_violation(capture, i, &text)), printf("hazard: %s\n", text);
  printf("values: %llu of %llu frames wrong\n", (unsigned long long)wrong, (unsigned long long)frames);

  /* Teardown: the GPU idle, vkhip's handles go before the device they borrow. */
  VK(vkDeviceWaitIdle(dev));
  V(vkhip_capture_destroy(capture)), V(vkhip_prof_stream_destroy(ps)), V(vkhip_prof_queue_destroy(pq));
  V(vkhip_prof_host_destroy(host)), V(vkhip_prof_semaphore_destroy(p_written)), V(vkhip_prof_semaphore_destroy(p_read));
  for (int s = 0; s < K; s++) {
    V(vkhip_resource_destroy(p_heights[s])), V(vkhip_cuda_buffer_destroy(c_heights[s]));
    V(vkhip_buffer_destroy(heights[s])), V(vkhip_buffer_destroy(scratch[s])), vkDestroyFence(dev, fences[s], NULL);
  }
  V(vkhip_profiler_destroy(prof)), V(vkhip_cuda_kernel_destroy(kernel)), V(vkhip_cuda_semaphore_destroy(c_written));
  V(vkhip_cuda_semaphore_destroy(c_read)), V(vkhip_cuda_destroy(cuda)), V(vkhip_semaphore_destroy(written));
  V(vkhip_semaphore_destroy(read)), V(vkhip_device_destroy(vk));
  vkDestroyCommandPool(dev, pool, NULL), vkDestroyDevice(dev, NULL), vkDestroyInstance(instance, NULL);
  if (wrong && !verdict.violations) fprintf(stderr, NAME ": %llu frames wrong, no hazard found\n", (unsigned long long)wrong);
  return verdict.violations ? 1 : wrong ? 3 : 0;
}
