/* Parameter swapping to NVMe through runtime/aio (see param_swap.h). */
#include "runtime/zero/param_swap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/zero/swap.h"

static void file_of(const zt_param_swapper *s, int u, char *out, size_t n) {
  snprintf(out, n, "%s/%d_param.tensor.swp", s->dir, u);
}

static void remove_files(zt_param_swapper *s) {
  char path[1200];
  for (int u = 0; u < s->n; u++) {
    if (!s->len[u]) continue;
    file_of(s, u, path, sizeof path);
    unlink(path);
  }
  zt_swap_remove_dirs(s->dir, 3);
}

static void fail(zt_param_swapper *s, const char *what, const char *path) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", zt_aio_error(s->aio));
  remove_files(s);
  zt_fatal("offload_param", "%s %s: %s (the swap files were removed)", what, path, msg);
}

void zt_param_swapper_init(zt_param_swapper *s, const zt_aio_config *aio, const char *nvme_path, int rank, int n,
                           const size_t *len, int buffer_count, size_t buffer_size, int pin_memory) {
  memset(s, 0, sizeof(*s));
  char err[512];
  zt_check(nvme_path && nvme_path[0], "offload_param", "device \"nvme\" needs nvme_path");
  zt_check(buffer_count >= 1 && buffer_size >= 1, "offload_param", "buffer_count %d and buffer_size %zu must be "
           "at least 1", buffer_count, buffer_size);
  snprintf(s->dir, sizeof s->dir, "%s/zero_stage_3/float32params/rank%d", nvme_path, rank);
  zt_swap_make_dirs("offload_param", s->dir);
  s->aio = zt_aio_handle_create(aio, err, sizeof err);
  zt_check(s->aio != NULL, "aio", "%s", err);
  s->n = n;
  s->len = zt_malloc((size_t)(n ? n : 1) * sizeof(size_t), "offload_param pieces");
  size_t largest = 0;
  for (int u = 0; u < n; u++) {
    s->len[u] = len[u];
    if (len[u] > largest) largest = len[u];
  }
  s->buf_elems = buffer_size < largest ? buffer_size : (largest ? largest : 1);
  s->buf_bytes = zt_aio_padded_size(s->aio, s->buf_elems * sizeof(float));
  s->nbuf = buffer_count;
  s->lock = pin_memory;
  s->buf = zt_calloc((size_t)s->nbuf, sizeof(float *), "offload_param buffers");
  for (int b = 0; b < s->nbuf; b++) {
    s->buf[b] = zt_aio_alloc(s->buf_bytes, pin_memory, err, sizeof err);
    zt_check(s->buf[b] != NULL, "offload_param", "bounce buffer of %zu bytes: %s", s->buf_bytes, err);
  }
}

/* Moves piece u in chunks of buf_elems floats, nbuf chunks in flight (chunk k at file offset k * buf_bytes). */
static void transfer(zt_param_swapper *s, int u, float *mem, int write) {
  const double t0 = zt_now();
  char path[1200];
  file_of(s, u, path, sizeof path);
  const size_t n = s->len[u], chunks = (n + s->buf_elems - 1) / s->buf_elems;
  for (size_t k0 = 0; k0 < chunks; k0 += (size_t)s->nbuf) {
    const size_t k1 = k0 + (size_t)s->nbuf < chunks ? k0 + (size_t)s->nbuf : chunks;
    for (size_t k = k0; k < k1; k++) {
      const size_t a = k * s->buf_elems, c = a + s->buf_elems < n ? s->buf_elems : n - a;
      float *b = s->buf[k - k0];
      const size_t bytes = zt_aio_padded_size(s->aio, c * sizeof(float));
      if (write) {
        memcpy(b, mem + a, c * sizeof(float));
        memset((char *)b + c * sizeof(float), 0, bytes - c * sizeof(float));
      }
      const int rc = write ? zt_aio_pwrite(s->aio, b, bytes, path, (int64_t)(k * s->buf_bytes), 1)
                           : zt_aio_pread(s->aio, b, bytes, path, (int64_t)(k * s->buf_bytes), 1);
      if (rc < 0) fail(s, write ? "writing" : "reading", path);
      if (write) s->bytes_written += (double)bytes;
      else s->bytes_read += (double)bytes;
    }
    if (zt_aio_wait(s->aio) < 0) fail(s, write ? "writing" : "reading", path);
    for (size_t k = k0; k < k1 && !write; k++) {
      const size_t a = k * s->buf_elems, c = a + s->buf_elems < n ? s->buf_elems : n - a;
      memcpy(mem + a, s->buf[k - k0], c * sizeof(float));
    }
  }
  s->seconds += zt_now() - t0;
}

void zt_param_swapper_write(zt_param_swapper *s, int u, const float *src) {
  if (s->len[u]) transfer(s, u, (float *)src, 1);
}

void zt_param_swapper_read(zt_param_swapper *s, int u, float *dst) {
  if (s->len[u]) transfer(s, u, dst, 0);
}

void zt_param_swapper_free(zt_param_swapper *s) {
  if (!s->aio) return;
  remove_files(s);
  for (int b = 0; b < s->nbuf; b++) zt_aio_free(s->buf[b], s->buf_bytes, s->lock);
  free(s->buf);
  free(s->len);
  zt_aio_handle_destroy(s->aio);
  s->aio = NULL;
}
