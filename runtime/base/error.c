/* Errors, logging and checked allocation. */
#include "runtime/base/error.h"

#include <stdarg.h>
#include <string.h>

static int g_rank = 0;
static int g_world = 1;
static void (*g_fatal_hook)(int exit_code) = NULL;
static char g_fatal_what[128], g_fatal_detail[8192]; /* the last zt_fatal's words, for a hook to pass on */

void zt_set_rank(int rank, int world_size) { g_rank = rank; g_world = world_size; }
int zt_rank(void) { return g_rank; }
int zt_world_size(void) { return g_world; }
void zt_set_fatal_hook(void (*hook)(int exit_code)) { g_fatal_hook = hook; }
const char *zt_last_fatal_what(void) { return g_fatal_what; }
const char *zt_last_fatal_detail(void) { return g_fatal_detail; }

/* Writes prefix + formatted message + newline to stderr in one write: stderr is unbuffered, so piece-wise fprintf
 * calls reach mpirun's forwarding as separate chunks, and a job that aborts right after could interleave its banner
 * into the line (or lose the rest of it). */
static void write_line(const char *prefix, const char *fmt, va_list ap) {
  char small[4096];
  va_list ap2;
  va_copy(ap2, ap);
  size_t np = strlen(prefix);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  size_t total = np + (size_t)n + 1;
  char *buf = total + 1 <= sizeof small ? small : malloc(total + 1);
  if (!buf) { /* no memory for the line: print it in pieces rather than not at all */
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    return;
  }
  memcpy(buf, prefix, np);
  vsnprintf(buf + np, (size_t)n + 1, fmt, ap);
  buf[total - 1] = '\n';
  fwrite(buf, 1, total, stderr);
  fflush(stderr);
  if (buf != small) free(buf);
}

void zt_fatal(const char *what, const char *fmt, ...) {
  fflush(stdout);
  /* Rank 0 prints exactly what a single process prints; other ranks say who they are. */
  char prefix[256];
  if (g_rank != 0) snprintf(prefix, sizeof prefix, "error: [rank %d] %s: ", g_rank, what);
  else snprintf(prefix, sizeof prefix, "error: %s: ", what);
  va_list ap;
  va_start(ap, fmt);
  write_line(prefix, fmt, ap);
  va_end(ap);
  snprintf(g_fatal_what, sizeof g_fatal_what, "%s", what);
  va_start(ap, fmt);
  vsnprintf(g_fatal_detail, sizeof g_fatal_detail, fmt, ap);
  va_end(ap);
  if (g_fatal_hook) {
    void (*hook)(int) = g_fatal_hook;
    g_fatal_hook = NULL; /* a hook that fails itself must not recurse */
    hook(1);
  }
  exit(1);
}

void zt_log(const char *fmt, ...) {
  if (g_rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

void zt_warn(const char *fmt, ...) {
  char prefix[64];
  if (g_world > 1) snprintf(prefix, sizeof prefix, "[rank %d] warning: ", g_rank);
  else snprintf(prefix, sizeof prefix, "warning: ");
  va_list ap;
  va_start(ap, fmt);
  write_line(prefix, fmt, ap);
  va_end(ap);
}

void *zt_malloc(size_t bytes, const char *what) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) zt_fatal("out of memory", "allocating %zu bytes (%.1f MiB) for %s", bytes, bytes / 1048576.0, what);
  return p;
}

void *zt_calloc(size_t count, size_t size, const char *what) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) zt_fatal("out of memory", "allocating %zu x %zu bytes for %s", count, size, what);
  return p;
}

void *zt_aligned_alloc(size_t bytes, const char *what) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = aligned_alloc(64, rounded ? rounded : 64);
  if (!p) zt_fatal("out of memory", "allocating %zu bytes (%.1f MiB) for %s", bytes, bytes / 1048576.0, what);
  memset(p, 0, rounded);
  return p;
}
