/* lavapipe.c -- the C door on a device without CUDA: a device borrowed through its raw handles,
 * a buffer Vulkan fills and vkhip reads back (every value), the profiler's Vulkan and host
 * scopes, a clean verdict, a race the checker must name, the report and the Perfetto trace.
 * Usage: lavapipe TRACE_PATH. Built and run by tests/c.rs (with the sanitizers). */
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "expect.h"

#define WORDS 4096u
static VkDevice device;
static VkQueue queue;
static VkCommandPool pool;
static VkCommandBuffer cmd;
static VkFence fence;

/* Fill `buffer` with `word` on Vulkan in a scope that writes `r`, release it to the compute API,
 * submit; wait for the fence and tell the profiler so only if `wait`. */
static void fill(VkhipBuffer *buffer, uint32_t word, VkhipProfQueue *q, VkhipResource *r, int wait) {
  VkBuffer vk_buffer = VK_NULL_HANDLE;
  VkhipScope *scope = NULL;
  uint64_t ticket = 0;
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cmd, 0, NULL};
  EXPECT_STATUS(vkhip_buffer_info(buffer, &vk_buffer, NULL), VKHIP_STATUS_OK);
  EXPECT(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
  EXPECT(vkResetFences(device, 1, &fence) == VK_SUCCESS && vkBeginCommandBuffer(cmd, &begin) == VK_SUCCESS);
  EXPECT_STATUS(vkhip_prof_queue_scope(q, cmd, "fill", &scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_writes(scope, r), VKHIP_STATUS_OK);
  static int fills;
  if (fills++) /* the compute API owns it since the last release */
    EXPECT_STATUS(vkhip_buffer_cmd_acquire(buffer, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT),
                  VKHIP_STATUS_OK);
  vkCmdFillBuffer(cmd, vk_buffer, 0, VK_WHOLE_SIZE, word);
  EXPECT_STATUS(vkhip_buffer_cmd_release(buffer, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT),
                VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_OK);
  EXPECT(vkEndCommandBuffer(cmd) == VK_SUCCESS && vkQueueSubmit(queue, 1, &submit, fence) == VK_SUCCESS);
  EXPECT_STATUS(vkhip_prof_queue_submitted(q, NULL, 0, NULL, 0, &ticket), VKHIP_STATUS_OK);
  EXPECT(ticket > 0);
  if (wait) {
    EXPECT(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
    EXPECT_STATUS(vkhip_prof_queue_waited(q, ticket), VKHIP_STATUS_OK);
  }
}

/* On the host, in a scope that reads `r`: whether `buffer` holds `word` everywhere. */
static int check(VkhipDevice *dev, VkhipBuffer *buffer, uint32_t word, VkhipProfHost *host, VkhipResource *r) {
  static uint32_t words[WORDS];
  VkhipScope *scope = NULL;
  int all = 1;
  EXPECT_STATUS(vkhip_prof_host_scope(host, "check", &scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_reads(scope, r), VKHIP_STATUS_OK);
  memset(words, 0, sizeof words);
  EXPECT_STATUS(vkhip_device_read_buffer(dev, buffer, NULL, 0, (uint8_t *)words, sizeof words), VKHIP_STATUS_OK);
  for (uint32_t i = 0; i < WORDS; i++) all &= words[i] == word;
  EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_OK);
  return all;
}

/* One profiled run: two fills, each checked; with `race`, the host reads the second fill without
 * waiting for it. The capture's verdict in `verdict`, its first violation in `first`. */
static void run(VkhipDevice *dev, VkhipBuffer *buffer, int race, const char *trace, VkhipVerdict *verdict,
                char *first, size_t first_size) {
  VkhipProfiler *prof = NULL;
  VkhipProfQueue *q = NULL;
  VkhipProfHost *host = NULL;
  VkhipResource *r = NULL;
  VkhipCapture *capture = NULL;
  const char *text = NULL;
  EXPECT_STATUS(vkhip_profiler_create(dev, NULL, &prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_vulkan_queue(prof, "graphics", &q), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_host_thread(prof, "main", &host), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_resource(prof, "heights", &r), VKHIP_STATUS_OK);
  fill(buffer, 0x40490fdbu, q, r, 1); /* pi */
  EXPECT(check(dev, buffer, 0x40490fdbu, host, r));
  EXPECT_STATUS(vkhip_profiler_end_frame(prof), VKHIP_STATUS_OK);
  fill(buffer, 0x3f800000u, q, r, !race); /* 1.0f */
  if (race) { /* the bug: read before the fence says the fill is done (the profiler is not told) */
    VkhipScope *scope = NULL;
    EXPECT_STATUS(vkhip_prof_host_scope(host, "peek", &scope), VKHIP_STATUS_OK);
    EXPECT_STATUS(vkhip_scope_reads(scope, r), VKHIP_STATUS_OK);
    EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_OK);
    EXPECT(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
  } else {
    EXPECT(check(dev, buffer, 0x3f800000u, host, r));
  }
  EXPECT_STATUS(vkhip_profiler_end_frame(prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_finish(prof, &capture), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_capture_verdict(capture, verdict), VKHIP_STATUS_OK);
  first[0] = '\0';
  if (verdict->violations_kept > 0 && vkhip_capture_violation(capture, 0, &text) == VKHIP_STATUS_OK)
    snprintf(first, first_size, "%s", text);
  EXPECT_STATUS(vkhip_capture_report(capture, &text), VKHIP_STATUS_OK);
  EXPECT(text && strstr(text, "graphics") && strstr(text, "main"));
  if (trace) EXPECT_STATUS(vkhip_capture_write_perfetto(capture, trace), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_capture_destroy(capture), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_host_destroy(host), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_resource_destroy(r), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_queue_destroy(q), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_destroy(prof), VKHIP_STATUS_OK);
}

/* A shared image Vulkan clears (prepared for Vulkan, released to the compute API) and vkhip reads
 * back: whether every texel is the clear colour. */
static int image_round_trip(VkhipDevice *dev) {
  static uint8_t texels[16 * 8 * 4];
  VkhipImage *image = NULL;
  VkImage vk_image = VK_NULL_HANDLE;
  VkImageUsageFlags usage = 0;
  VkhipImageAccess write = {VKHIP_IMAGE_USE_TRANSFER_WRITE, 0, 0};
  VkClearColorValue colour = {{0.0f, 1.0f, 0.0f, 1.0f}};
  VkImageSubresourceRange all = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cmd, 0, NULL};
  int all_right = 1;
  EXPECT_STATUS(vkhip_image_create(dev, VKHIP_IMAGE_FORMAT_R8G8B8A8_UNORM, 16, 8, &image), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_image_info(image, &vk_image, &usage), VKHIP_STATUS_OK);
  EXPECT(usage & VK_IMAGE_USAGE_TRANSFER_DST_BIT && usage & VK_IMAGE_USAGE_STORAGE_BIT);
  EXPECT(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
  EXPECT(vkResetFences(device, 1, &fence) == VK_SUCCESS && vkBeginCommandBuffer(cmd, &begin) == VK_SUCCESS);
  EXPECT_STATUS(vkhip_image_cmd_prepare_for_vulkan(image, cmd, write), VKHIP_STATUS_OK);
  vkCmdClearColorImage(cmd, vk_image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &colour, 1, &all);
  EXPECT_STATUS(vkhip_image_cmd_release(image, cmd, write), VKHIP_STATUS_OK);
  EXPECT(vkEndCommandBuffer(cmd) == VK_SUCCESS && vkQueueSubmit(queue, 1, &submit, fence) == VK_SUCCESS);
  EXPECT(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
  EXPECT_STATUS(vkhip_device_read_image(dev, image, NULL, 0, texels, sizeof texels), VKHIP_STATUS_OK);
  for (size_t i = 0; i < sizeof texels; i += 4)
    all_right &= texels[i] == 0 && texels[i + 1] == 255 && texels[i + 2] == 0 && texels[i + 3] == 255;
  EXPECT_STATUS(vkhip_device_read_image(dev, image, NULL, 0, texels, sizeof texels + 1), VKHIP_STATUS_INVALID);
  EXPECT_STATUS(vkhip_image_destroy(image), VKHIP_STATUS_OK);
  return all_right;
}

int main(int argc, char **argv) {
  VkhipDevice *own = NULL, *dev = NULL;
  VkhipVulkanHandles h;
  VkhipBuffer *buffer = NULL;
  VkhipVerdict clean, racy;
  char first[1024];
  if (argc != 2) return fprintf(stderr, "usage: lavapipe TRACE_PATH\n"), 2;

  /* vkhip's own device, then the same device borrowed through its handles, as an engine's. */
  EXPECT_STATUS(vkhip_device_open(VKHIP_IMPORTER_HIP, NULL, &own), VKHIP_STATUS_OK);
  if (!own) return finish("lavapipe");
  EXPECT_STATUS(vkhip_device_handles(own, &h), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_device_from_raw(vkGetInstanceProcAddr, h.instance, h.physical_device, h.device, 99,
                                      VKHIP_IMPORTER_HIP, &dev),
                VKHIP_STATUS_INVALID);
  EXPECT_ERROR("queue family 99");
  EXPECT_STATUS(vkhip_device_from_raw(vkGetInstanceProcAddr, h.instance, h.physical_device, h.device, h.queue_family,
                                      VKHIP_IMPORTER_HIP, &dev),
                VKHIP_STATUS_OK);
  uint8_t a[16], b[16];
  EXPECT_STATUS(vkhip_device_uuid(own, a), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_device_uuid(dev, b), VKHIP_STATUS_OK);
  EXPECT(!memcmp(a, b, 16));
  device = h.device;
  vkGetDeviceQueue(device, h.queue_family, 0, &queue);
  VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, h.queue_family};
  VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, VK_FENCE_CREATE_SIGNALED_BIT};
  EXPECT(vkCreateCommandPool(device, &pi, NULL, &pool) == VK_SUCCESS && vkCreateFence(device, &fi, NULL, &fence) == VK_SUCCESS);
  VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                    VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  EXPECT(vkAllocateCommandBuffers(device, &ai, &cmd) == VK_SUCCESS);
  EXPECT_STATUS(vkhip_buffer_create(dev, WORDS * 4, &buffer), VKHIP_STATUS_OK);

  /* Ordered: every pair compared, none violated. Racing: the checker names the resource. */
  run(dev, buffer, 0, argv[1], &clean, first, sizeof first);
  EXPECT(clean.violations == 0 && clean.pairs_checked >= 2 && clean.frames >= 1);
  run(dev, buffer, 1, NULL, &racy, first, sizeof first);
  EXPECT(racy.violations >= 1 && racy.unordered >= 1 && racy.violations_kept >= 1);
  EXPECT(strstr(first, "heights") && strstr(first, "peek") && strstr(first, "fill"));
  if (!strstr(first, "heights")) fprintf(stderr, "first violation: %s\n", first);
  FILE *f = fopen(argv[1], "r");
  char head[4096] = {0};
  EXPECT(f && fread(head, 1, sizeof head - 1, f) > 0 && strstr(head, "traceEvents"));
  if (f) fclose(f);

  EXPECT(image_round_trip(dev));

  /* vkhip's handles go first, then the raw objects, then the devices. */
  EXPECT(vkQueueWaitIdle(queue) == VK_SUCCESS);
  EXPECT_STATUS(vkhip_buffer_destroy(buffer), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_device_destroy(dev), VKHIP_STATUS_OK);
  vkDestroyFence(device, fence, NULL);
  vkDestroyCommandPool(device, pool, NULL);
  EXPECT_STATUS(vkhip_device_destroy(own), VKHIP_STATUS_OK);
  return finish("lavapipe");
}
