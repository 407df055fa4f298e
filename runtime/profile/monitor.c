/* The monitor front: DeepSpeed's MonitorMaster for the csv_monitor and tensorboard backends (fan-out
 * of each event to the enabled ones, rank 0 only), plus Python float formatting and path helpers. */
#define _GNU_SOURCE
#include "runtime/profile/monitor.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"
#include "runtime/profile/tb_events.h"

struct zt_monitor {
  zt_csv_monitor *csv;
  zt_tb_writer *tb;
};

int zt_format_pyfloat(double v, char *out) {
  zt_py_float(out, 32, v, 0);
  return (int)strlen(out);
}

/* ---- helpers ---------------------------------------------------------------------------------- */

char *zt_monitor_path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *r = zt_malloc(la + lb + 2, "monitor path");
  if (b[0] == '/' || la == 0 || a[la - 1] == '/')
    snprintf(r, la + lb + 2, "%s%s", b[0] == '/' ? "" : a, b);
  else
    snprintf(r, la + lb + 2, "%s/%s", a, b);
  return r;
}

void zt_monitor_mkdirs(const char *path, const char *what) {
  if (path[0] == 0) return;
  size_t n = strlen(path);
  char *p = zt_malloc(n + 1, "monitor directory");
  memcpy(p, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    char c = p[i];
    p[i] = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      zt_fatal(what, "cannot create directory %s (for %s): %s", p, path, strerror(errno));
    p[i] = c;
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    zt_fatal(what, "cannot create directory %s: %s", path, errno ? strerror(errno) : "not a directory");
  free(p);
}

double zt_monitor_wall_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the front -------------------------------------------------------------------------------- */

zt_monitor *zt_monitor_open(const zt_monitor_config *cfg) {
  zt_monitor *m = zt_calloc(1, sizeof *m, "monitor");
  if (!cfg || zt_rank() != 0) return m;
  if (cfg->csv_enabled)
    m->csv = zt_csv_monitor_open(cfg->csv_output_path ? cfg->csv_output_path : "",
                                 cfg->csv_job_name ? cfg->csv_job_name : ZT_MONITOR_DEFAULT_JOB_NAME);
  if (cfg->tb_enabled) {
    char *dir = zt_monitor_path_join(cfg->tb_output_path ? cfg->tb_output_path : "",
                                     cfg->tb_job_name ? cfg->tb_job_name : ZT_MONITOR_DEFAULT_JOB_NAME);
    m->tb = zt_tb_open(dir);
    free(dir);
  }
  return m;
}

int zt_monitor_enabled(const zt_monitor *m) { return m && (m->csv || m->tb); }

void zt_monitor_write(zt_monitor *m, const char *name, double value, int64_t step) {
  if (!zt_monitor_enabled(m)) return;
  if (m->csv) {
    char text[40];
    zt_format_pyfloat(value, text);
    zt_csv_monitor_write(m->csv, name, text, step);
  }
  if (m->tb) zt_tb_add_scalar(m->tb, name, value, step, zt_monitor_wall_time());
}

void zt_monitor_write_int(zt_monitor *m, const char *name, int64_t value, int64_t step) {
  if (!zt_monitor_enabled(m)) return;
  if (m->csv) {
    char text[32];
    snprintf(text, sizeof text, "%" PRId64, value);
    zt_csv_monitor_write(m->csv, name, text, step);
  }
  if (m->tb) zt_tb_add_scalar(m->tb, name, (double)value, step, zt_monitor_wall_time());
}

void zt_monitor_flush(zt_monitor *m) {
  if (!m) return;
  if (m->csv) zt_csv_monitor_flush(m->csv);
  if (m->tb) zt_tb_flush(m->tb);
}

void zt_monitor_close(zt_monitor *m) {
  if (!m) return;
  if (m->csv) zt_csv_monitor_close(m->csv);
  if (m->tb) zt_tb_close(m->tb);
  free(m);
}
