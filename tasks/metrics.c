/* The correlation metrics of finetune_bert's accuracy pass (metrics.h), as scipy and sklearn compute them. */
#include "tasks/metrics.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/base/error.h"

/* scipy.stats.pearsonr's statistic: the centred vectors' normalized dot product, clipped to [-1, 1]; nan when one
 * is constant. */
double zt_pearson(const double *x, const double *y, int64_t n) {
  if (n < 2) return NAN;
  double mx = 0, my = 0, nx = 0, ny = 0, dot = 0;
  for (int64_t i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= (double)n, my /= (double)n;
  for (int64_t i = 0; i < n; i++) nx += (x[i] - mx) * (x[i] - mx), ny += (y[i] - my) * (y[i] - my);
  nx = sqrt(nx), ny = sqrt(ny);
  if (nx == 0 || ny == 0) return NAN;
  for (int64_t i = 0; i < n; i++) dot += (x[i] - mx) / nx * ((y[i] - my) / ny);
  return dot > 1 ? 1 : dot < -1 ? -1 : dot;
}

static const double *g_rank_keys;
static int by_key(const void *a, const void *b) {
  const double x = g_rank_keys[*(const int64_t *)a], y = g_rank_keys[*(const int64_t *)b];
  return x < y ? -1 : x > y;
}

/* scipy.stats.rankdata(v, 'average'): 1-based ranks, ties sharing their mean rank. */
void zt_rankdata(const double *v, int64_t n, double *out) {
  int64_t *idx = zt_malloc((size_t)n * sizeof(int64_t), "ranks");
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  g_rank_keys = v;
  qsort(idx, (size_t)n, sizeof *idx, by_key);
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) j++;
    for (int64_t k = i; k <= j; k++) out[idx[k]] = (double)(i + j) / 2.0 + 1.0;
    i = j + 1;
  }
  free(idx);
}

double zt_matthews(double tp, double tn, double fp, double fn) {
  const double den = sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn));
  return den > 0 ? (tp * tn - fp * fn) / den : 0.0;
}
