/* expect.h -- the checks of the C tests: each failed check prints its line, the call, the status
 * and vkhip's last error; the program ends with "N passed, N failed" and exits 1 on any failure. */
#ifndef VKHIP_TEST_EXPECT_H
#define VKHIP_TEST_EXPECT_H
#include <stdio.h>
#include <string.h>
#include "vkhip.h"

static int passed, failed;

static void expect_at(int ok, const char *file, int line, const char *what, int status) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  fprintf(stderr, "%s:%d: failed: %s (status %s, last error \"%s\")\n", file, line, what,
          vkhip_status_name(status), vkhip_last_error());
}

/* `call` returns `want`. */
#define EXPECT_STATUS(call, want)                                                                     \
  do {                                                                                              \
    VkhipStatus got_ = (call);                                                                      \
    expect_at(got_ == (want), __FILE__, __LINE__, #call " == " #want, (int)got_);                   \
  } while (0)
/* `cond` holds. */
#define EXPECT(cond) expect_at(!!(cond), __FILE__, __LINE__, #cond, 0)
/* The thread's last error contains `text`. */
#define EXPECT_ERROR(text) expect_at(strstr(vkhip_last_error(), (text)) != NULL, __FILE__, __LINE__, \
                                     "last error contains \"" text "\"", 0)

static int finish(const char *name) {
  printf("%s: %d passed, %d failed\n", name, passed, failed);
  return failed ? 1 : 0;
}
#endif
