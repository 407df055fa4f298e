/* DeepNVMe throughput measurement (see bench.h). The files are named _zt_aio_bench_<pid>_<i>.swp in
 * each directory. Reads first write the files (untimed). Each directory gets its own handle so that
 * their worker threads run at the same time. */
#define _GNU_SOURCE
#include "runtime/aio/bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/error.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill_pattern(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy(p + i, &x, 8);
  }
}

int zt_aio_bench_run(const zt_aio_config *cfg, const zt_aio_bench_spec *s, zt_aio_bench_result *res, char *err,
                     size_t n) {
  memset(res, 0, sizeof *res);
  int D = s->file ? 1 : s->ndirs;
  if (D < 1) {
    snprintf(err, n, "no directory given");
    return -1;
  }
  if (s->loops < 1) {
    snprintf(err, n, "--loops %d must be >= 1", s->loops);
    return -1;
  }
  int64_t unit = 4096LL * cfg->intra_op_parallelism * D;
  if (s->io_size <= 0 || s->io_size % unit != 0) {
    snprintf(err, n, "--io_size %lld must be a positive multiple of 4096 x intra_op_parallelism %d x %d "
             "director%s = %lld bytes (O_DIRECT alignment of each thread's share)", (long long)s->io_size,
             cfg->intra_op_parallelism, D, D == 1 ? "y" : "ies", (long long)unit);
    return -1;
  }
  size_t share = (size_t)(s->io_size / D);
  zt_aio_handle **h = calloc((size_t)D, sizeof *h);
  unsigned char **buf = calloc((size_t)D, sizeof *buf);
  char **path = calloc((size_t)D, sizeof *path);
  int rc = -1;
  for (int d = 0; d < D; d++) {
    h[d] = zt_aio_handle_create(cfg, err, n);
    if (!h[d]) goto done;
    buf[d] = zt_aio_alloc(share, cfg->lock_memory, err, n);
    if (!buf[d]) goto done;
    fill_pattern(buf[d], share, (uint64_t)d + 1);
    if (s->file) {
      path[d] = strdup(s->file);
      continue;
    }
    size_t len = strlen(s->dirs[d]) + 64;
    path[d] = malloc(len);
    snprintf(path[d], len, "%s/_zt_aio_bench_%d_%d.swp", s->dirs[d], (int)getpid(), d);
  }
  if (s->is_read && !s->file) { /* the files to read */
    for (int d = 0; d < D; d++)
      if (zt_aio_async_pwrite(h[d], buf[d], share, path[d], 0) != 0) {
        snprintf(err, n, "%s", zt_aio_error(h[d]));
        goto done;
      }
    for (int d = 0; d < D; d++)
      if (zt_aio_wait(h[d]) < 0) {
        snprintf(err, n, "%s", zt_aio_error(h[d]));
        goto done;
      }
    if (s->validate)
      for (int d = 0; d < D; d++) memset(buf[d], 0, share);
  }
  double total = 0, best = 0;
  for (int it = 0; it < s->warmup + s->loops; it++) {
    double t0 = now_s();
    for (int d = 0; d < D; d++) {
      int r = s->is_read ? zt_aio_async_pread(h[d], buf[d], share, path[d], 0)
                         : zt_aio_async_pwrite(h[d], buf[d], share, path[d], 0);
      if (r != 0) {
        snprintf(err, n, "%s", zt_aio_error(h[d]));
        goto done;
      }
    }
    for (int d = 0; d < D; d++)
      if (zt_aio_wait(h[d]) < 0) {
        snprintf(err, n, "%s", zt_aio_error(h[d]));
        goto done;
      }
    double dt = now_s() - t0;
    if (it < s->warmup) continue;
    total += dt;
    double g = (double)s->io_size / dt / 1073741824.0;
    if (g > best) best = g;
  }
  res->seconds = total;
  res->mean_gbps = (double)s->io_size * s->loops / total / 1073741824.0;
  res->best_gbps = best;
  if (s->validate) {
    unsigned char *want = malloc(share);
    for (int d = 0; d < D; d++) {
      if (s->is_read && s->file) break; /* a file we did not write: nothing to compare with */
      if (!s->is_read) { /* read back what was written */
        memset(buf[d], 0, share);
        if (zt_aio_sync_pread(h[d], buf[d], share, path[d], 0) < 0) {
          snprintf(err, n, "validate: %s", zt_aio_error(h[d]));
          free(want);
          goto done;
        }
      }
      fill_pattern(want, share, (uint64_t)d + 1);
      if (memcmp(want, buf[d], share) != 0) {
        size_t i = 0;
        while (want[i] == buf[d][i]) i++;
        snprintf(err, n, "--validate: %s differs from the data written at byte %zu of %zu", path[d], i, share);
        free(want);
        goto done;
      }
    }
    free(want);
    res->validated = !(s->is_read && s->file);
  }
  rc = 0;
done:
  for (int d = 0; d < D; d++) {
    if (h[d]) zt_aio_handle_destroy(h[d]);
    if (buf[d]) zt_aio_free(buf[d], share, cfg->lock_memory);
    if (path[d] && !s->keep && !s->file) unlink(path[d]);
    free(path[d]);
  }
  free(h);
  free(buf);
  free(path);
  return rc;
}

long zt_aio_arg_int(const char *tool, const char *flag, const char *val, long lo, long hi) {
  char *end;
  long v = strtol(val, &end, 10);
  if (end == val || *end)
    zt_fatal(tool, "argument %s: invalid int value: '%s'", flag, val);
  if (v < lo || v > hi) zt_fatal(tool, "argument %s: %ld is out of range [%ld, %ld]", flag, v, lo, hi);
  return v;
}

int64_t zt_aio_arg_size(const char *tool, const char *flag, const char *val) {
  int64_t v;
  if (zt_aio_parse_size(val, &v) != 0)
    zt_fatal(tool, "argument %s: invalid size '%s' (a positive byte count, optionally with K, M or G = 1024, "
             "1024^2, 1024^3: 4096, 1M, 400M)", flag, val);
  return v;
}

const char *zt_aio_arg_value(const char *tool, int argc, char **argv, int *i) {
  if (*i + 1 >= argc) zt_fatal(tool, "argument %s: expected one argument", argv[*i]);
  return argv[++*i];
}
