/* Optimizer-state swapping to NVMe through runtime/aio (see swap.h). */
#include "runtime/zero/swap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/dtype.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

static const char *const k_state_names[3] = {"exp_avg", "exp_avg_sq", "fp32"};

static void file_of(const zt_opt_swapper *s, size_t k, int st, char *out, size_t n) {
  snprintf(out, n, "%s/%zu_%s.tensor.swp", s->dir, k, k_state_names[st]);
}

void zt_swap_make_dirs(const char *what, const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) zt_fatal(what, "nvme_path: cannot create %s: %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0700) != 0 && errno != EEXIST) zt_fatal(what, "nvme_path: cannot create %s: %s", tmp, strerror(errno));
  zt_check(access(tmp, W_OK) == 0, what, "nvme_path: %s is not writable: %s", tmp, strerror(errno));
}

void zt_swap_remove_dirs(const char *dir, int levels) {
  char d[1024];
  snprintf(d, sizeof d, "%s", dir);
  for (int up = 0; up < levels; up++) {
    if (rmdir(d) != 0) break;
    char *slash = strrchr(d, '/');
    if (!slash) break;
    *slash = 0;
  }
}

static size_t sub_len(const zt_opt_swapper *s, size_t k) {
  const size_t a = k * s->sub;
  return a + s->sub <= s->n ? s->sub : s->n - a;
}

/* Removes the swap files and the folders this run made (also before dying: under MPI a fatal error ends the
 * job through MPI_Abort, which runs no exit handlers). */
static void remove_files(zt_opt_swapper *s) {
  char path[1200];
  for (size_t k = 0; k < s->nsub; k++)
    for (int st = 0; st < s->nstates; st++) {
      file_of(s, k, st, path, sizeof path);
      unlink(path);
    }
  zt_swap_remove_dirs(s->dir, 3);
}

static void io(zt_opt_swapper *s, int write, size_t k, int set, int async) {
  char path[1200];
  for (int st = 0; st < s->nstates; st++) {
    file_of(s, k, st, path, sizeof path);
    int rc = write ? zt_aio_pwrite(s->aio, s->buf[set][st], s->bytes, path, 0, async)
                   : zt_aio_pread(s->aio, s->buf[set][st], s->bytes, path, 0, async);
    if (rc < 0) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", zt_aio_error(s->aio));
      remove_files(s);
      zt_fatal("offload_optimizer", "%s %s: %s (the swap files were removed)", write ? "writing" : "reading", path,
               msg);
    }
    if (write) s->bytes_written += (double)s->bytes;
    else s->bytes_read += (double)s->bytes;
  }
}

static void wait_all(zt_opt_swapper *s) {
  if (zt_aio_wait(s->aio) >= 0) return;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", zt_aio_error(s->aio));
  remove_files(s);
  zt_fatal("offload_optimizer", "swap: %s (the swap files were removed)", msg);
}

void zt_opt_swapper_init(zt_opt_swapper *s, const zt_aio_config *aio, const char *nvme_path, int stage, int rank,
                         size_t lo, size_t n, size_t sub_group_size, int with_master, const float *master0,
                         int pipeline, int pin_memory) {
  memset(s, 0, sizeof(*s));
  char err[512];
  zt_check(nvme_path && nvme_path[0], "offload_optimizer", "device \"nvme\" needs nvme_path");
  snprintf(s->dir, sizeof s->dir, "%s/zero_stage_%d/optimizer/rank%d", nvme_path, stage, rank);
  zt_swap_make_dirs("offload_optimizer", s->dir);
  s->aio = zt_aio_handle_create(aio, err, sizeof err);
  zt_check(s->aio != NULL, "aio", "%s", err);
  s->nstates = with_master ? 3 : 2;
  s->lo = lo;
  s->n = n;
  s->sub = sub_group_size < n ? sub_group_size : (n ? n : 1);
  s->nsub = n ? (n + s->sub - 1) / s->sub : 0;
  s->bytes = zt_aio_padded_size(s->aio, s->sub * sizeof(float));
  s->pipeline = pipeline;
  s->lock = pin_memory;
  for (int b = 0; b < (pipeline ? 2 : 1); b++)
    for (int st = 0; st < s->nstates; st++) {
      s->buf[b][st] = zt_aio_alloc(s->bytes, pin_memory, err, sizeof err);
      zt_check(s->buf[b][st] != NULL, "offload_optimizer", "swap buffer of %zu bytes: %s", s->bytes, err);
    }
  /* initial state: zero moments and the initial masters, written sub-group by sub-group */
  for (size_t k = 0; k < s->nsub; k++) {
    const size_t len = sub_len(s, k);
    memset(s->buf[0][0], 0, s->bytes);
    memset(s->buf[0][1], 0, s->bytes);
    if (with_master) {
      memset(s->buf[0][2], 0, s->bytes);
      memcpy(s->buf[0][2], master0 + k * s->sub, len * sizeof(float));
    }
    io(s, 1, k, 0, 0);
  }
  s->bytes_written = 0;
}

void zt_opt_swapper_step(zt_opt_swapper *s, zt_optimizer *o, float *weights, float *grads, double lr,
                         float grad_scale, float *half_out, int half_dtype) {
  const double t0 = zt_now();
  const int64_t step0 = o->step;
  if (s->nsub > 0) {
    io(s, 0, 0, 0, 0);
  }
  for (size_t k = 0; k < s->nsub; k++) {
    const int cur = s->pipeline ? (int)(k & 1) : 0;
    if (s->pipeline && k + 1 < s->nsub) io(s, 0, k + 1, cur ^ 1, 1); /* read ahead into the other set */
    const size_t a = k * s->sub, len = sub_len(s, k);
    zt_optimizer view = *o;      /* this sub-group's moments, the step count of this step */
    view.step = step0;
    view.m = s->buf[cur][0];
    view.v = s->buf[cur][1];
    view.lo = o->lo + a;
    view.hi = o->lo + a + len;
    float *w = s->nstates == 3 ? s->buf[cur][2] : weights + a;
    zt_optimizer_step(&view, w, grads + a, lr, grad_scale);
    if (s->nstates == 3) zt_round_f32(half_out + a, w, len, (zt_dtype)half_dtype);
    io(s, 1, k, cur, s->pipeline);
    if (s->pipeline) {
      wait_all(s); /* the read of k + 1 and the write of k */
    } else {
      wait_all(s);
      if (k + 1 < s->nsub) io(s, 0, k + 1, 0, 0);
    }
  }
  o->step = step0 + 1;
  s->seconds += zt_now() - t0;
}

void zt_opt_swapper_read_all(zt_opt_swapper *s, float *m, float *v, float *master) {
  for (size_t k = 0; k < s->nsub; k++) {
    io(s, 0, k, 0, 0);
    const size_t len = sub_len(s, k);
    memcpy(m + k * s->sub, s->buf[0][0], len * sizeof(float));
    memcpy(v + k * s->sub, s->buf[0][1], len * sizeof(float));
    if (master && s->nstates == 3) memcpy(master + k * s->sub, s->buf[0][2], len * sizeof(float));
  }
}

void zt_opt_swapper_write_all(zt_opt_swapper *s, const float *m, const float *v, const float *master) {
  const float *src[3] = {m, v, s->nstates == 3 ? master : NULL};
  for (size_t k = 0; k < s->nsub; k++) {
    const size_t len = sub_len(s, k);
    io(s, 0, k, 0, 0); /* what the files hold, for the states not given */
    for (int st = 0; st < s->nstates; st++)
      if (src[st]) memcpy(s->buf[0][st], src[st] + k * s->sub, len * sizeof(float));
    io(s, 1, k, 0, 0);
  }
}

void zt_opt_swapper_free(zt_opt_swapper *s) {
  if (!s->aio) return;
  remove_files(s);
  for (int b = 0; b < 2; b++)
    for (int st = 0; st < 3; st++)
      if (s->buf[b][st]) zt_aio_free(s->buf[b][st], s->bytes, s->lock);
  zt_aio_handle_destroy(s->aio);
  s->aio = NULL;
}
