/* DeepSpeed-format log lines (see ds_log.h). */
#include "train/ds_log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "runtime/base/error.h"
#include "runtime/base/memplan.h"
#include "runtime/base/pyfmt.h"
#include "runtime/base/timer.h"

static void ds_vlog(const char *where, const char *rank_tag, const char *fmt, va_list ap) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  zt_log("[%s,%03d] [INFO] [%s] %s%s\n", stamp, (int)(tv.tv_usec / 1000), where, rank_tag, msg);
}

void zt_ds_log_dist(const char *fmt, ...) {
  if (zt_rank() != 0) return;
  va_list ap;
  va_start(ap, fmt);
  ds_vlog("logging.py:96:log_dist", "[Rank 0] ", fmt, ap);
  va_end(ap);
}

void zt_ds_logger_info(const char *where, const char *fmt, ...) {
  if (zt_rank() != 0) return;
  va_list ap;
  va_start(ap, fmt);
  ds_vlog(where, "", fmt, ap);
  va_end(ap);
}

void zt_ds_report_progress(int64_t step, int64_t skipped, const double *lr, const double (*mom)[2], int n) {
  char lrs[512] = "[", moms[512] = "[";
  size_t a = 1, b = 1;
  for (int i = 0; i < n; i++) {
    char x[40], y[40], z[40];
    zt_py_float(x, sizeof x, lr[i], 0);
    zt_py_float(y, sizeof y, mom[i][0], 0);
    zt_py_float(z, sizeof z, mom[i][1], 0);
    a += (size_t)snprintf(lrs + a, sizeof lrs - a, "%s%s", i ? ", " : "", x);
    b += (size_t)snprintf(moms + b, sizeof moms - b, "%s(%s, %s)", i ? ", " : "", y, z);
    if (a >= sizeof lrs - 2 || b >= sizeof moms - 2) break;
  }
  snprintf(lrs + a, sizeof lrs - a, "]");
  snprintf(moms + b, sizeof moms - b, "]");
  zt_ds_log_dist("step=%lld, skipped=%lld, lr=%s, mom=%s", (long long)step, (long long)skipped, lrs, moms);
}

void zt_ds_timers_log(const char *const *names, const double *ms, int n) {
  char line[1024];
  size_t k = (size_t)snprintf(line, sizeof line, "time (ms)");
  for (int i = 0; i < n && k < sizeof line; i++) k += (size_t)snprintf(line + k, sizeof line - k, " | %s: %.2f", names[i], ms[i]);
  zt_ds_log_dist("%s", line);
}

/* VmRSS and VmHWM of this process, in GiB rounded to 2 digits as DeepSpeed rounds them. */
static void memory_gib(double *rss, double *peak) {
  const long r = zt_proc_status_kib("VmRSS"), p = zt_proc_status_kib("VmHWM");
  *rss = r > 0 ? (double)r / 1048576.0 : 0;
  *peak = p > 0 ? (double)p / 1048576.0 : 0;
  *rss = round(*rss * 100) / 100;
  *peak = round(*peak * 100) / 100;
}

void zt_ds_throughput_init(zt_ds_throughput *t, int64_t batch_size, int64_t steps_per_output) {
  memset(t, 0, sizeof(*t));
  t->batch_size = batch_size;
  t->steps_per_output = steps_per_output;
  t->start_step = 2;
}

void zt_ds_throughput_start(zt_ds_throughput *t) {
  t->started = 1;
  t->start_time = t->global_step >= t->start_step ? zt_now() : 0.0;
}

void zt_ds_throughput_stop(zt_ds_throughput *t, int global_step) {
  if (!t->started) return;
  t->started = 0;
  t->micro_step++;
  if (global_step) t->global_step++;
  if (t->start_time <= 0) return;
  const double d = zt_now() - t->start_time;
  t->total_elapsed += d;
  t->step_elapsed += d;
  if (!global_step) return;
  if (t->steps_per_output > 0 && t->global_step % t->steps_per_output == 0) {
    char avg[40], cur[40], rs[40], pk[40];
    const int64_t counted = t->global_step - t->start_step;
    zt_py_float(avg, sizeof avg, counted > 0 ? (double)t->batch_size / (t->total_elapsed / (double)counted) : -INFINITY, 0);
    zt_py_float(cur, sizeof cur, (double)t->batch_size / t->step_elapsed, 0);
    double rss, peak;
    memory_gib(&rss, &peak);
    zt_py_float(rs, sizeof rs, rss, 0);
    zt_py_float(pk, sizeof pk, peak, 0);
    zt_ds_log_dist("epoch=%lld/micro_step=%lld/global_step=%lld, RunningAvgSamplesPerSec=%s, CurrSamplesPerSec=%s, "
                   "MemAllocated=%sGB, MaxMemAllocated=%sGB", (long long)t->epoch, (long long)t->micro_step,
                   (long long)t->global_step, avg, cur, rs, pk);
  }
  t->step_elapsed = 0;
}
