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
#include "runtime/profile/tb_events.h"

struct zt_monitor {
  zt_csv_monitor *csv;
  zt_tb_writer *tb;
};

/* ---- Python float repr ------------------------------------------------------------------------ */

/* Digits (no dot) and decimal exponent of v > 0 at `prec` significant digits, correctly rounded;
 * value = 0.d1d2... * 10^decpt. */
static void sci_digits(double v, int prec, char *digits, int *decpt) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
  int n = 0;
  char *p = buf;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') digits[n++] = *p;
  digits[n] = 0;
  *decpt = atoi(p + 1) + 1;
}

static double digits_value(const char *digits, int decpt) {
  char buf[64];
  snprintf(buf, sizeof buf, "0.%se%d", digits, decpt);
  return strtod(buf, NULL);
}

/* Adds delta (+1 / -1) to the last digit with carry/borrow; 0 when that leaves p digits impossible. */
static int step_digits(char *digits, int *decpt, int delta) {
  int n = (int)strlen(digits);
  int i = n - 1;
  if (delta > 0) {
    while (i >= 0 && digits[i] == '9') digits[i--] = '0';
    if (i < 0) { /* 99..9 + 1 = 100..0: one more power of ten */
      digits[0] = '1';
      for (int k = 1; k < n; k++) digits[k] = '0';
      (*decpt)++;
      return 1;
    }
    digits[i]++;
    return 1;
  }
  while (i >= 0 && digits[i] == '0') digits[i--] = '9';
  if (i < 0) return 0;
  digits[i]--;
  if (digits[0] == '0') { /* 100..0 - 1 = 099..9: renormalise to 99..9 at one less power */
    if (n == 1) return 0;
    memmove(digits, digits + 1, n);
    digits[n - 1] = '9';
    (*decpt)--;
  }
  return 1;
}

/* Shortest digit string that reads back as v (Python's repr, dtoa mode 0); ties go to the
 * candidate nearest v, as dtoa does. */
static void shortest_digits(double v, char *digits, int *decpt) {
  for (int prec = 1; prec <= 17; prec++) {
    char d[32];
    int e;
    sci_digits(v, prec, d, &e);
    if (digits_value(d, e) == v) {
      strcpy(digits, d);
      *decpt = e;
      goto strip;
    }
    /* At a power of two the rounding interval is lopsided: a neighbour at this length may read
     * back as v even when the nearest does not. */
    for (int delta = -1; delta <= 1; delta += 2) {
      char d2[32];
      int e2 = e;
      strcpy(d2, d);
      if (step_digits(d2, &e2, delta) && digits_value(d2, e2) == v) {
        strcpy(digits, d2);
        *decpt = e2;
        goto strip;
      }
    }
  }
  sci_digits(v, 17, digits, decpt);
strip:;
  size_t n = strlen(digits);
  while (n > 1 && digits[n - 1] == '0') digits[--n] = 0;
}

int zt_format_pyfloat(double v, char *out) {
  if (isnan(v)) return sprintf(out, "nan");
  if (isinf(v)) return sprintf(out, v < 0 ? "-inf" : "inf");
  char *o = out;
  if (signbit(v)) {
    *o++ = '-';
    v = -v;
  }
  if (v == 0.0) return (int)(o - out) + sprintf(o, "0.0");
  char digits[32];
  int decpt;
  shortest_digits(v, digits, &decpt);
  int nd = (int)strlen(digits);
  if (decpt <= -4 || decpt > 16) { /* Python's repr switches to exponent form here */
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, nd - 1);
      o += nd - 1;
    }
    int e = decpt - 1;
    o += sprintf(o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  } else if (decpt <= 0) {
    o += sprintf(o, "0.");
    for (int i = 0; i < -decpt; i++) *o++ = '0';
    memcpy(o, digits, nd);
    o += nd;
  } else {
    for (int i = 0; i < decpt; i++) *o++ = i < nd ? digits[i] : '0';
    *o++ = '.';
    if (nd > decpt) {
      memcpy(o, digits + decpt, nd - decpt);
      o += nd - decpt;
    } else {
      *o++ = '0';
    }
  }
  *o = 0;
  return (int)(o - out);
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
