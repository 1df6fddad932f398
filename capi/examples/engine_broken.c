/* engine_broken.c -- engine.c with one wait removed: Vulkan's submission no longer waits for
 * CUDA's `written` signal, so the draw may read a height buffer while the kernel still writes it.
 * The Khronos layer cannot see this race (the writer is CUDA); vkhip's checker names it, and the
 * program exits 1 (the expected outcome here). Nothing else changes. */
#define NAME "engine_broken"
#define FORGET_WAIT 1
#include "engine.c"
