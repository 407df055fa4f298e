/* Next-token choice of text generation (see sampling.h). */
#include "evaluate/sampling.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/base/philox.h"

/* Descending by logit; equal logits by index (torch.sort is not stable on every device: this is one valid order). */
static const float *g_keys;
static int by_logit_desc(const void *a, const void *b) {
  const int i = *(const int *)a, j = *(const int *)b;
  const float x = g_keys[i], y = g_keys[j];
  if (x > y) return -1;
  if (x < y) return 1;
  return (i > j) - (i < j);
}

void zt_top_k_logits(float *logits, int V, int top_k, float top_p, int *order, float *work) {
  if (top_k > 0) {
    /* the k-th largest value (torch.topk(logits, k)[0][-1]); remove logits strictly below it */
    for (int v = 0; v < V; v++) order[v] = v;
    g_keys = logits;
    qsort(order, (size_t)V, sizeof *order, by_logit_desc);
    const float kth = logits[order[(top_k < V ? top_k : V) - 1]];
    for (int v = 0; v < V; v++)
      if (logits[v] < kth) logits[v] = -INFINITY;
  }
  /* top_p >= 1 keeps every token: the cumulative probability never exceeds 1 but by rounding (torch's fp32 sum may
   * land a few ulps above 1 and drop tail tokens, an accident of its summation order) */
  if (top_p > 0.0f && top_p < 1.0f) {
    for (int v = 0; v < V; v++) order[v] = v;
    g_keys = logits;
    qsort(order, (size_t)V, sizeof *order, by_logit_desc);
    /* F.softmax(sorted) in fp32, then its cumulative sum in order */
    const float mx = logits[order[0]];
    float sum = 0.0f;
    for (int i = 0; i < V; i++) sum += work[i] = expf(logits[order[i]] - mx);
    double cum = 0.0; /* torch's CPU cumsum accumulates fp32 in double and stores fp32 */
    int prev_remove = 0; /* the mask shifted one place right: token i goes when token i-1's cumulative is above p */
    for (int i = 0; i < V; i++) {
      cum += (double)(work[i] / sum);
      const int remove = (float)cum > top_p;
      if (i > 0 && prev_remove) logits[order[i]] = -INFINITY;
      prev_remove = remove;
    }
  }
}

int32_t zt_sample_token(const zt_sampling *s, float *logits, int V, uint64_t stream, uint64_t index, int *order,
                        float *work) {
  if (s->greedy) {
    int best = 0;
    for (int v = 1; v < V; v++)
      if (logits[v] > logits[best]) best = v;
    return best;
  }
  for (int v = 0; v < V; v++) logits[v] /= s->temperature;
  zt_top_k_logits(logits, V, s->top_k, s->top_p, order, work);
  float mx = -INFINITY;
  for (int v = 0; v < V; v++)
    if (logits[v] > mx) mx = logits[v];
  double total = 0.0;
  for (int v = 0; v < V; v++) total += work[v] = logits[v] == -INFINITY ? 0.0f : expf(logits[v] - mx);
  /* torch.multinomial(softmax, 1): the first token whose cumulative probability passes a uniform draw */
  const double u = (double)zt_philox_uniform(s->seed, ZT_RNG_SAMPLE, stream, index) * total;
  double cum = 0.0;
  int last = 0;
  for (int v = 0; v < V; v++) {
    if (work[v] <= 0.0f) continue;
    cum += work[v];
    last = v;
    if (cum > u) return v;
  }
  return last;
}
