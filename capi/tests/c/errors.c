/* errors.c -- the C door's error paths, built with -fsanitize=address,undefined by tests/c.rs and
 * run on lavapipe: NULL handles and out pointers, handles of the wrong type, use after destroy,
 * sizes and values refused, objects the device cannot hold, a host track on another thread, a
 * finished profiler, a trace that cannot be written. Each call must return its status, say why in
 * vkhip_last_error(), and touch no memory it must not (the sanitizers watch). */
#include <pthread.h>
#include <stdint.h>
#include "expect.h"

static VkhipProfHost *other_thread_host;
static VkhipStatus other_thread_status[2];

static void *use_from_another_thread(void *unused) {
  VkhipScope *scope = NULL;
  (void)unused;
  other_thread_status[0] = vkhip_prof_host_scope(other_thread_host, "x", &scope);
  other_thread_status[1] = vkhip_prof_host_destroy(other_thread_host);
  return NULL;
}

int main(void) {
  VkhipDevice *dev = NULL;
  VkhipBuffer *buffer = NULL;
  VkhipImage *image = NULL;
  VkhipSemaphore *timeline = NULL;
  VkhipRequirements need;
  const char *text = NULL;
  uint64_t bytes = 0;

  /* Statuses by number; the last error of a success is "". */
  EXPECT(!strcmp(vkhip_status_name(VKHIP_STATUS_EXCEEDS_LIMIT), "VKHIP_STATUS_EXCEEDS_LIMIT"));
  EXPECT(!strcmp(vkhip_status_name(999), "unknown status"));
  EXPECT(vkhip_status_is_environment(VKHIP_STATUS_UNAVAILABLE) && !vkhip_status_is_environment(VKHIP_STATUS_INVALID));
  EXPECT_STATUS(vkhip_vulkan_requirements(VKHIP_IMPORTER_CUDA, &need), VKHIP_STATUS_OK);
  EXPECT(!strcmp(vkhip_last_error(), ""));
  EXPECT(need.device_extension_count == 2 && !strcmp(need.device_extensions[1], "VK_KHR_external_semaphore_fd"));
  EXPECT(need.device_extensions[2] == NULL && need.timeline_semaphore);

  /* Refused before anything is made: unknown values, NULL arguments. */
  EXPECT_STATUS(vkhip_vulkan_requirements(7, &need), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("7 is no VKHIP_IMPORTER_*");
  EXPECT_STATUS(vkhip_vulkan_requirements(VKHIP_IMPORTER_CUDA, NULL), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_ERROR("vkhip_vulkan_requirements: out is NULL");
  EXPECT_STATUS(vkhip_device_from_raw(NULL, NULL, NULL, NULL, 0, VKHIP_IMPORTER_CUDA, &dev), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_ERROR("get_instance_proc_addr is NULL");
  EXPECT(dev == NULL);
  EXPECT_STATUS(vkhip_buffer_create(NULL, 64, &buffer), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_ERROR("vkhip_buffer_create: device is NULL");
  EXPECT_STATUS(vkhip_device_describe(NULL, &text), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_STATUS(vkhip_cuda_launch(NULL, NULL, (VkhipDim3){1, 1, 1}, (VkhipDim3){1, 1, 1}, NULL, 3),
                VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_ERROR("args is NULL");
  EXPECT_STATUS(vkhip_cuda_launch(NULL, NULL, (VkhipDim3){0, 1, 1}, (VkhipDim3){1, 1, 1}, NULL, 0), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("at least 1 in every dimension");
  EXPECT_STATUS(vkhip_scope_end(NULL), VKHIP_STATUS_OK); /* every destroy takes NULL */
  EXPECT_STATUS(vkhip_device_destroy(NULL), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_capture_destroy(NULL), VKHIP_STATUS_OK);

  /* The Vulkan device of a CUDA ordinal: a negative one is the caller's mistake; one this
   * process does not see (here: no CUDA at all) is the environment, naming what was asked. */
  EXPECT_STATUS(vkhip_device_open_cuda(-5, &dev), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("CUDA device -5: an ordinal is 0 or more");
  EXPECT(dev == NULL);
  EXPECT_STATUS(vkhip_device_open_cuda(9999, &dev), VKHIP_STATUS_UNAVAILABLE);
  EXPECT_ERROR("CUDA device 9999: ");
  EXPECT(dev == NULL && vkhip_status_is_environment(VKHIP_STATUS_UNAVAILABLE));
  EXPECT_STATUS(vkhip_device_open_cuda(VKHIP_CUDA_DEVICE_CURRENT, NULL), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_ERROR("vkhip_device_open_cuda: out is NULL");

  /* A device of vkhip's own on lavapipe (memory only: lavapipe exports no semaphores). */
  EXPECT_STATUS(vkhip_device_open(VKHIP_IMPORTER_HIP, NULL, &dev), VKHIP_STATUS_OK);
  if (!dev) return finish("errors");
  EXPECT_STATUS(vkhip_device_describe(dev, &text), VKHIP_STATUS_OK);
  EXPECT(text && strlen(text) > 0);

  /* Sizes refused, and objects the device cannot hold (named limits). */
  EXPECT_STATUS(vkhip_buffer_create(dev, 0, &buffer), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("0 bytes");
  EXPECT_STATUS(vkhip_buffer_create(dev, UINT64_MAX / 2, &buffer), VKHIP_STATUS_EXCEEDS_LIMIT);
  EXPECT(buffer == NULL);
  EXPECT_STATUS(vkhip_image_create(dev, VKHIP_IMAGE_FORMAT_R32_SFLOAT, 1u << 20, 1u << 20, &image),
                VKHIP_STATUS_EXCEEDS_LIMIT);
  EXPECT_ERROR("maxExtent");
  EXPECT_STATUS(vkhip_image_create(dev, 99, 4, 4, &image), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("99 is no VKHIP_IMAGE_FORMAT_*");
  EXPECT_STATUS(vkhip_timeline_create(dev, 0, &timeline), VKHIP_STATUS_UNSUPPORTED); /* no semaphore export */
  EXPECT(vkhip_status_is_environment(VKHIP_STATUS_UNSUPPORTED) && timeline == NULL);

  /* A live buffer; handles of the wrong type; use after destroy; reads past the end. */
  EXPECT_STATUS(vkhip_buffer_create(dev, 256, &buffer), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_buffer_info(buffer, NULL, &bytes), VKHIP_STATUS_OK);
  EXPECT(bytes == 256);
  EXPECT_STATUS(vkhip_buffer_create((const VkhipDevice *)buffer, 64, &buffer), VKHIP_STATUS_WRONG_HANDLE);
  EXPECT_ERROR("device is not a VkhipDevice (it is a VkhipBuffer)");
  EXPECT_STATUS(vkhip_image_destroy((VkhipImage *)buffer), VKHIP_STATUS_WRONG_HANDLE);
  EXPECT_STATUS(vkhip_buffer_info(buffer, NULL, &bytes), VKHIP_STATUS_OK); /* not destroyed by that */
  static uint8_t host[512];
  EXPECT_STATUS(vkhip_device_read_buffer(dev, buffer, NULL, 0, host, sizeof host), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("512 bytes asked, the object holds 256");
  EXPECT_STATUS(vkhip_device_read_buffer(dev, buffer, NULL, 0, NULL, 16), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_STATUS(vkhip_image_create(dev, VKHIP_IMAGE_FORMAT_R8G8B8A8_UNORM, 8, 8, &image), VKHIP_STATUS_OK);
  VkhipImageAccess bad = {99, 0, 0};
  EXPECT_STATUS(vkhip_image_cmd_acquire(image, (VkCommandBuffer)(uintptr_t)1, bad), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("99 is no VKHIP_IMAGE_USE_*"); /* refused before the command buffer is touched */
  EXPECT_STATUS(vkhip_image_cmd_prepare(image, NULL), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_STATUS(vkhip_image_destroy(image), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_image_destroy(image), VKHIP_STATUS_WRONG_HANDLE);
  EXPECT_ERROR("not a live VkhipImage");
  EXPECT_STATUS(vkhip_buffer_destroy(buffer), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_buffer_info(buffer, NULL, &bytes), VKHIP_STATUS_WRONG_HANDLE);
  EXPECT_ERROR("buffer is not a live VkhipBuffer (destroyed already, or not made by vkhip)");

  /* CUDA without a driver: one line, an environment status. */
  VkhipCuda *cuda = NULL;
  VkhipStatus s = vkhip_cuda_open(dev, &cuda);
  EXPECT(s == VKHIP_STATUS_UNAVAILABLE && cuda == NULL && !strchr(vkhip_last_error(), '\n'));
  VkhipCuda *lent = NULL;
  void *stream = NULL;
  EXPECT_STATUS(vkhip_cuda_with_stream(NULL, (void *)1, &lent), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_STATUS(vkhip_cuda_with_stream((const VkhipCuda *)dev, (void *)1, &lent), VKHIP_STATUS_WRONG_HANDLE);
  EXPECT_STATUS(vkhip_cuda_stream(NULL, &stream), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT(lent == NULL && stream == NULL);

  /* The profiler: names, a host track used from another thread, a finished profiler. */
  VkhipProfiler *prof = NULL;
  VkhipProfilerOptions options;
  VkhipCapture *capture = NULL;
  VkhipResource *resource = NULL;
  EXPECT_STATUS(vkhip_profiler_options_default(&options), VKHIP_STATUS_OK);
  options.cuda_stamps = 5;
  EXPECT_STATUS(vkhip_profiler_create(dev, &options, &prof), VKHIP_STATUS_INVALID);
  EXPECT_STATUS(vkhip_profiler_create(dev, NULL, &prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_resource(prof, NULL, &resource), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_STATUS(vkhip_profiler_resource(prof, "\xff\xfe", &resource), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("name is not UTF-8");
  EXPECT_STATUS(vkhip_profiler_resource(prof, "r", &resource), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_host_thread(prof, "main", &other_thread_host), VKHIP_STATUS_OK);
  pthread_t thread;
  EXPECT(pthread_create(&thread, NULL, use_from_another_thread, NULL) == 0 && pthread_join(thread, NULL) == 0);
  EXPECT(other_thread_status[0] == VKHIP_STATUS_WRONG_THREAD && other_thread_status[1] == VKHIP_STATUS_WRONG_THREAD);
  VkhipScope *scope = NULL;
  EXPECT_STATUS(vkhip_prof_host_scope(other_thread_host, "here", &scope), VKHIP_STATUS_OK); /* still alive */
  EXPECT_STATUS(vkhip_scope_writes(scope, (const VkhipResource *)prof), VKHIP_STATUS_WRONG_HANDLE);
  EXPECT_STATUS(vkhip_scope_writes(scope, resource), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_scope_end(scope), VKHIP_STATUS_WRONG_HANDLE); /* ending destroys the handle */
  VkhipProfQueue *queue = NULL;
  EXPECT_STATUS(vkhip_profiler_vulkan_queue(prof, "q", &queue), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_queue_waited(queue, 12345), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("no submission 12345");
  VkhipSemaphoreValue values[1] = {{NULL, 1}};
  EXPECT_STATUS(vkhip_prof_queue_submitted(queue, values, 1, NULL, 0, NULL), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_ERROR("waits[0].semaphore is NULL");
  EXPECT_STATUS(vkhip_prof_queue_submitted(queue, NULL, 1, NULL, 0, NULL), VKHIP_STATUS_NULL_ARGUMENT);
  EXPECT_STATUS(vkhip_profiler_finish(prof, &capture), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_end_frame(prof), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("the profiler was finished");
  EXPECT_STATUS(vkhip_profiler_finish(prof, &capture), VKHIP_STATUS_INVALID);
  EXPECT_STATUS(vkhip_capture_violation(capture, 0, &text), VKHIP_STATUS_INVALID);
  EXPECT_ERROR("violation 0 of 0 kept");
  EXPECT_STATUS(vkhip_capture_write_perfetto(capture, "/nonexistent/dir/trace.json"), VKHIP_STATUS_IO);
  EXPECT_ERROR("/nonexistent/dir/trace.json");

  /* Teardown in any order. */
  EXPECT_STATUS(vkhip_device_destroy(dev), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_queue_destroy(queue), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_profiler_destroy(prof), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_prof_host_destroy(other_thread_host), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_resource_destroy(resource), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_capture_destroy(capture), VKHIP_STATUS_OK);
  EXPECT_STATUS(vkhip_device_destroy(dev), VKHIP_STATUS_WRONG_HANDLE);
  return finish("errors");
}
