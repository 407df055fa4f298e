/* Start-up progress lines and the elapsed / ETA estimate (see progress.h). */
#include "train/progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"

/* Megatron takes _TRAIN_START_TIME when training.py is imported, i.e. at program start; a constructor runs when
 * the program image is loaded, before main. */
static double g_start_mono, g_start_wall;
__attribute__((constructor)) static void record_start(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  g_start_wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  g_start_mono = zt_now();
}

double zt_progress_since_start(void) { return zt_now() - g_start_mono; }

void zt_print_datetime(const char *what) {
  char stamp[32];
  const time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  zt_log("[%s] datetime: %s \n", what, stamp);
}

void zt_progress_initialized(void) {
  /* the earliest start over the ranks (as Megatron's all_reduce MIN of _TRAIN_START_TIME), in wall-clock time */
  double neg_start = -g_start_wall;
  if (zt_world_size() > 1) zt_allreduce_max_f64(zt_comm_world(), &neg_start, 1);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  zt_log("time to initialize megatron (seconds): %.3f\n", now + neg_start);
  zt_print_datetime("after megatron is initialized");
}

void zt_timers_log(const char *const *names, const double *seconds, int n, int option, double normalizer) {
  enum { MAXN = 16 };
  if (n > MAXN) n = MAXN;
  static const char dots[] = "................................................";
  const int world = zt_world_size(), rank = zt_rank();
  if (option == 2) { /* 'all': every rank's time of every timer (a sum over zero-filled rank rows) */
    double *all = zt_calloc((size_t)world * (size_t)n, sizeof(double), "timers");
    for (int i = 0; i < n; i++) all[(size_t)rank * (size_t)n + (size_t)i] = seconds[i];
    if (world > 1) zt_allreduce_sum_f64(zt_comm_world(), all, (size_t)world * (size_t)n);
    int any = 0;
    for (int i = 0; i < n; i++) {
      int named = 0;
      for (int r = 0; r < world; r++) {
        const double t = all[(size_t)r * (size_t)n + (size_t)i];
        if (!(t > 0)) continue;
        if (!any) zt_log("times across ranks (ms):\n");
        if (!named) zt_log("  %s:\n", names[i]);
        any = named = 1;
        zt_log("     rank %2d: %.2f\n", r, t / normalizer * 1e3);
      }
    }
    free(all);
    return;
  }
  /* 'max' / 'minmax': over the ranks that ran the timer (a time > 0), as Megatron filters them */
  double mx[2 * MAXN];
  for (int i = 0; i < n; i++) {
    mx[i] = seconds[i] > 0 ? seconds[i] : 0.0;
    mx[n + i] = seconds[i] > 0 ? -seconds[i] : -INFINITY;
  }
  if (world > 1) zt_allreduce_max_f64(zt_comm_world(), mx, (size_t)(2 * n));
  int any = 0;
  for (int i = 0; i < n; i++) {
    if (!(mx[i] > 0)) continue;
    if (!any) zt_log("(min, max) time across ranks (ms):\n");
    any = 1;
    const int pad = 47 - (int)strlen(names[i]);
    if (option == 0)
      zt_log("    %s %.*s: %.2f\n", names[i], pad > 0 ? pad : 0, dots, mx[i] / normalizer * 1e3);
    else
      zt_log("    %s %.*s: (%.2f, %.2f)\n", names[i], pad > 0 ? pad : 0, dots, -mx[n + i] / normalizer * 1e3,
             mx[i] / normalizer * 1e3);
  }
}

void zt_progress_eta(char *out, size_t cap, double elapsed, double train_seconds, int64_t iters_done,
                     int64_t iters_left) {
  char e[48], r[48];
  zt_progress_hms(e, sizeof e, elapsed);
  zt_progress_hms(r, sizeof r, iters_done > 0 ? train_seconds / (double)iters_done * (double)iters_left : 0.0);
  snprintf(out, cap, " elapsed: %s | ETA: %s |", e, r);
}
