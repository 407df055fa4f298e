/* Shared by the libFuzzer harnesses of tests/fuzz: a refusal (zt_fatal) is the expected answer to most
 * inputs, so each input runs inside ZT_FUZZ_TRY, which turns zt_fatal into a return to the harness through
 * the fatal hook; crashes, sanitizer reports, hangs (libFuzzer's -timeout) and memory blow-ups
 * (-rss_limit_mb, -malloc_limit_mb) remain findings. Allocations made before a refusal are not freed
 * (a refusal ends the process in the real tools), so scripts/fuzz.sh runs with -detect_leaks=0.
 * zt_fuzz_file writes an input to a per-process scratch file for the readers that take a path. */
#ifndef ZT_FUZZ_H
#define ZT_FUZZ_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/error.h"

static jmp_buf zt_fuzz_jmp;
static void zt_fuzz_hook(int code) { (void)code; longjmp(zt_fuzz_jmp, 1); }

/* ZT_FUZZ_TRY { body }: runs body; a zt_fatal inside it returns here (the body is abandoned). The hook is
 * re-armed for every input because zt_fatal clears it before calling it. */
#define ZT_FUZZ_TRY if (setjmp(zt_fuzz_jmp) == 0 && (zt_set_fatal_hook(zt_fuzz_hook), 1))

/* Writes data to /tmp/zt_fuzz_<pid>/<name> and returns that path (static storage, overwritten each call
 * with the same name). */
static inline const char *zt_fuzz_file(const char *name, const uint8_t *data, size_t size) {
  static char path[512];
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/zt_fuzz_%d", (int)getpid());
  mkdir(dir, 0700); /* exists after the first call */
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    fprintf(stderr, "zt_fuzz_file: cannot write %s\n", path);
    abort();
  }
  return path;
}

#endif
