/* The communication logger: records per (op name, message size) in first-seen op order, DeepSpeed's
 * convert_size / calc_bw_log / trim_mean, the verbose per-op line and the summary table
 * (deepspeed/utils/comms_logging.py CommsLogger.append and log_all). */
#include "runtime/comm/comms_logger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

typedef struct {
  char op[24];
  size_t msg_size;
  long count, cap;
  double *lat, *algbw, *busbw; /* one entry per call */
} rec;

int zt_comms_logger_on = 0;
static zt_comms_logger_config g_cfg;
static rec *g_recs = NULL;
static int g_n_recs = 0, g_cap_recs = 0;

void zt_comms_logger_configure(const zt_comms_logger_config *c) {
  g_cfg = *c;
  zt_check(c->n_prof_ops >= 0 && c->n_prof_ops <= ZT_COMMS_MAX_PROF_OPS, "comms_logger",
           "prof_ops has %d names, at most %d allowed", c->n_prof_ops, ZT_COMMS_MAX_PROF_OPS);
  zt_comms_logger_on = c->enabled ? 1 : 0;
}

bool zt_comms_logger_wants(const char *op) {
  if (!zt_comms_logger_on) return false;
  if (g_cfg.prof_all) return true;
  for (int i = 0; i < g_cfg.n_prof_ops; i++)
    if (strcmp(g_cfg.prof_ops[i], op) == 0) return true;
  return false;
}

void zt_comms_convert_size(size_t bytes, char *out, size_t out_size) {
  static const char *names[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  if (bytes == 0) { snprintf(out, out_size, "0B"); return; }
  int i = (int)floor(log((double)bytes) / log(1024.0));
  double s = (double)bytes / pow(1024.0, i);
  /* Python: str(round(s, 2)): the correctly rounded 2-decimal value, shortest form, at least one decimal */
  char num[64];
  snprintf(num, sizeof num, "%.2f", s);
  size_t len = strlen(num);
  while (len > 0 && num[len - 1] == '0') num[--len] = '\0';
  if (len > 0 && num[len - 1] == '.') { num[len++] = '0'; num[len] = '\0'; }
  snprintf(out, out_size, "%s %s", num, names[i]);
}

void zt_comms_calc_bw(const char *op, size_t msg_size, double latency_ms, int n, double *algbw, double *busbw) {
  double size = (double)msg_size, t = latency_ms, tput = 0, bus = 0;
  if (t > 0) {
    if (strcmp(op, "all_gather") == 0 || strcmp(op, "reduce_scatter") == 0) {
      size *= n;
      tput = size / t;
      bus = size / t * ((double)(n - 1) / n);
    } else if (strcmp(op, "all_reduce") == 0) {
      tput = size * 2 / t;
      bus = size / t * (2.0 * (n - 1) / n);
    } else if (strcmp(op, "all_to_all_single") == 0) {
      tput = size / t;
      bus = size / t * ((double)(n - 1) / n);
    } else { /* send, recv, broadcast, barrier */
      tput = size / t;
      bus = tput;
    }
  }
  *algbw = tput * 8 / 1e6; /* bytes per ms -> Gbps */
  *busbw = bus * 8 / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double zt_comms_trim_mean(double *v, long n, double trim) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  long k = (long)nearbyint((double)n * trim); /* Python round(): half to even */
  double s = 0;
  for (long i = k; i < n - k; i++) s += v[i];
  return s / (double)(n - 2 * k);
}

static rec *find(const char *op, size_t msg_size) {
  for (int i = 0; i < g_n_recs; i++)
    if (g_recs[i].msg_size == msg_size && strcmp(g_recs[i].op, op) == 0) return &g_recs[i];
  return NULL;
}

void zt_comms_logger_record(const char *op, size_t msg_size, double latency_ms, int n) {
  if (!zt_comms_logger_wants(op)) return;
  double algbw, busbw;
  zt_comms_calc_bw(op, msg_size, latency_ms, n, &algbw, &busbw);
  rec *r = find(op, msg_size);
  if (!r) {
    if (g_n_recs == g_cap_recs) {
      g_cap_recs = g_cap_recs ? 2 * g_cap_recs : 16;
      rec *nr = zt_malloc(sizeof *nr * (size_t)g_cap_recs, "comms_logger: records");
      if (g_n_recs) memcpy(nr, g_recs, sizeof *nr * (size_t)g_n_recs);
      free(g_recs);
      g_recs = nr;
    }
    r = &g_recs[g_n_recs++];
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", op);
    r->msg_size = msg_size;
  }
  if (r->count == r->cap) {
    long cap = r->cap ? 2 * r->cap : 8;
    double *p[3] = {r->lat, r->algbw, r->busbw};
    for (int j = 0; j < 3; j++) {
      double *q = zt_malloc(sizeof(double) * (size_t)cap, "comms_logger: latencies");
      if (r->count) memcpy(q, p[j], sizeof(double) * (size_t)r->count);
      free(p[j]);
      p[j] = q;
    }
    r->lat = p[0], r->algbw = p[1], r->busbw = p[2], r->cap = cap;
  }
  r->lat[r->count] = latency_ms;
  r->algbw[r->count] = algbw;
  r->busbw[r->count] = busbw;
  r->count++;
  if (g_cfg.verbose) {
    char sz[48];
    zt_comms_convert_size(msg_size, sz, sizeof sz);
    zt_log("[Rank 0] comm op: %s | time (ms): %.2f | msg size: %s | algbw (Gbps): %.2f | busbw (Gbps): %.2f\n", op,
           latency_ms, sz, algbw, busbw);
  }
}

long zt_comms_logger_count(const char *op, size_t msg_size, double *total_latency_ms) {
  rec *r = find(op, msg_size);
  double t = 0;
  if (r)
    for (long i = 0; i < r->count; i++) t += r->lat[i];
  if (total_latency_ms) *total_latency_ms = t;
  return r ? r->count : 0;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = (*(rec *const *)a)->msg_size, y = (*(rec *const *)b)->msg_size;
  return x < y ? -1 : x > y;
}

void zt_comms_logger_log_summary(void) {
  zt_log("%-20s%-20s%-20s%-20s%-20s%-20s%-20s\n", "Comm. Op", "Message Size", "Count", "Total Latency(ms)",
         "Avg Latency(ms)", "tput_avg (Gbps)", "busbw_avg (Gbps)");
  rec **rows = zt_malloc(sizeof(rec *) * (size_t)(g_n_recs ? g_n_recs : 1), "comms_logger: summary rows");
  double *tmp = NULL;
  long tmp_cap = 0;
  for (int i = 0; i < g_n_recs; i++) {
    int first = 1;
    for (int j = 0; j < i; j++) first &= strcmp(g_recs[j].op, g_recs[i].op) != 0;
    if (!first) continue; /* ops in first-seen order, as a Python dict iterates */
    zt_log("%s\n", g_recs[i].op);
    int nr = 0;
    for (int j = i; j < g_n_recs; j++)
      if (strcmp(g_recs[j].op, g_recs[i].op) == 0) rows[nr++] = &g_recs[j];
    qsort(rows, (size_t)nr, sizeof *rows, cmp_size);
    for (int j = 0; j < nr; j++) {
      rec *r = rows[j];
      if (r->count > tmp_cap) {
        free(tmp);
        tmp_cap = r->count;
        tmp = zt_malloc(sizeof(double) * (size_t)tmp_cap, "comms_logger: summary scratch");
      }
      double total = 0, avg[3];
      for (long k = 0; k < r->count; k++) total += r->lat[k];
      double *src[3] = {r->lat, r->algbw, r->busbw};
      for (int m = 0; m < 3; m++) {
        memcpy(tmp, src[m], sizeof(double) * (size_t)r->count);
        avg[m] = zt_comms_trim_mean(tmp, r->count, 0.1);
      }
      char sz[48];
      zt_comms_convert_size(r->msg_size, sz, sizeof sz);
      zt_log("%-20s%-20s%-20ld%-20.2f%-20.2f%-20.2f%-20.2f\n", " ", sz, r->count, total, avg[0], avg[1], avg[2]);
    }
  }
  free(tmp);
  free(rows);
}

void zt_comms_logger_reset(void) {
  for (int i = 0; i < g_n_recs; i++) {
    free(g_recs[i].lat);
    free(g_recs[i].algbw);
    free(g_recs[i].busbw);
  }
  free(g_recs);
  g_recs = NULL;
  g_n_recs = g_cap_recs = 0;
}
