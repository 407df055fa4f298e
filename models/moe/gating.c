/* DeepSpeed's gate (deepspeed/moe/sharded_moe.py: top1gating, top2gating, topkgating) on the host, forward and
 * backward, and the Philox draws it uses (see moe.h). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/moe/moe.h"
#include "runtime/base/error.h"
#include "runtime/base/philox.h"

void zt_moe_gating_alloc(zt_moe_gating *g, int S, int E, int k) {
  memset(g, 0, sizeof *g);
  g->S = S, g->E = E, g->k = k;
  const size_t sk = (size_t)S * k;
  g->expert = zt_malloc(sk * sizeof(int32_t), "MoE gating");
  g->kept = zt_malloc(sk, "MoE gating");
  g->weight = zt_malloc(sk * sizeof(float), "MoE gating");
  g->counts = zt_malloc((size_t)E * sizeof(int32_t), "MoE gating");
  g->routed = zt_malloc((size_t)E * sizeof(int32_t), "MoE gating");
  g->gates = zt_malloc((size_t)S * E * sizeof(double), "MoE gating");
  g->denom = zt_malloc((size_t)S * sizeof(double), "MoE gating");
}

void zt_moe_gating_free(zt_moe_gating *g) {
  free(g->expert), free(g->kept), free(g->weight), free(g->counts), free(g->routed), free(g->gates), free(g->denom);
  memset(g, 0, sizeof *g);
}

int zt_moe_capacity(int S, int E, int k, float cf, int min_capacity) {
  /* _capacity is TorchScript over fp32 tensors: (S / E) (a double) times the fp32 factor (k * cf, formed in double
   * and made an fp32 tensor) is computed in fp32, then ceil */
  const float f = (float)((double)k * (double)cf);
  const float c = ceilf((float)((double)S / (double)E) * f);
  const int cap = (int)c;
  return cap < min_capacity ? min_capacity : cap;
}

/* argmax with the first maximum on ties (torch.argmax) over n values, skipping `skip` (-1: none). */
static int argmax_d(const double *v, int n, int skip) {
  int best = -1;
  for (int i = 0; i < n; i++)
    if (i != skip && (best < 0 || v[i] > v[best])) best = i;
  return best;
}

/* For each expert, keep the `cap` routed choices with the largest key (key[i] for the i-th choice in list order);
 * kept[...] of the others is cleared. Ties keep the earlier choice. */
typedef struct {
  double key;
  int idx;
} keyed;
static int cmp_keyed_desc(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key > y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

void zt_moe_gate_forward(zt_moe_gating *g, const float *logits, const zt_moe_config *mc, int training,
                         const zt_moe_draws *dr) {
  const int S = g->S, E = g->E, k = g->k;
  const float cf = training ? mc->train_capacity_factor : mc->eval_capacity_factor;
  double *gates = g->gates;
  double *row = zt_malloc((size_t)E * sizeof(double), "MoE gating");
  /* gates = softmax(logits) */
  for (int s = 0; s < S; s++) {
    const float *l = logits + (size_t)s * E;
    double m = l[0], sum = 0.0;
    for (int e = 1; e < E; e++) m = l[e] > m ? l[e] : m;
    for (int e = 0; e < E; e++) sum += (gates[(size_t)s * E + e] = exp((double)l[e] - m));
    for (int e = 0; e < E; e++) gates[(size_t)s * E + e] /= sum;
  }
  memset(g->routed, 0, (size_t)E * sizeof(int32_t));
  memset(g->kept, 1, (size_t)S * k);
  /* choices */
  for (int s = 0; s < S; s++) {
    const double *gs = gates + (size_t)s * E;
    const float *l = logits + (size_t)s * E;
    int32_t *ch = g->expert + (size_t)s * k;
    if (k == 1) {
      if (training && mc->noise == ZT_MOE_NOISE_RSAMPLE) {
        for (int e = 0; e < E; e++) row[e] = (double)(l[e] + dr->gumbel[(size_t)s * E + e]); /* fp32, as torch */
        ch[0] = argmax_d(row, E, -1);
      } else {
        ch[0] = argmax_d(gs, E, -1);
      }
    } else if (k == 2) {
      ch[0] = argmax_d(gs, E, -1);
      /* logits (+ Gumbel noise in place in DeepSpeed: the sampled logits are only used for this argmax) */
      for (int e = 0; e < E; e++)
        row[e] = mc->top2_sampling ? (double)(l[e] + dr->gumbel[(size_t)s * E + e]) : (double)l[e];
      ch[1] = argmax_d(row, E, ch[0]);
    } else { /* torch.topk of the logits: the k largest, largest first */
      for (int e = 0; e < E; e++) row[e] = l[e];
      for (int j = 0; j < k; j++) {
        int b = -1;
        for (int e = 0; e < E; e++) {
          int taken = 0;
          for (int i = 0; i < j; i++) taken |= ch[i] == e;
          if (!taken && (b < 0 || row[e] > row[b])) b = e;
        }
        ch[j] = b;
      }
    }
  }
  /* routed counts; ce (DeepSpeed's mask1 mean) counts the first choice (top-1, top-2) or every choice (top-k) */
  int32_t *first = zt_calloc((size_t)E, sizeof(int32_t), "MoE gating");
  for (int s = 0; s < S; s++) {
    first[g->expert[(size_t)s * k]]++;
    for (int j = 0; j < k; j++) g->routed[g->expert[(size_t)s * k + j]]++;
  }
  double aux = 0.0;
  for (int e = 0; e < E; e++) {
    double me = 0.0;
    for (int s = 0; s < S; s++) me += gates[(size_t)s * E + e];
    me /= S;
    const double ce = (double)(k <= 2 ? first[e] : g->routed[e]) / S;
    aux += me * ce;
  }
  g->aux = aux * (k <= 2 ? (double)E : (double)E / k);
  /* capacity */
  if (mc->drop_tokens) {
    g->capacity = zt_moe_capacity(S, E, k, cf, mc->min_capacity);
  } else { /* the largest expert count: nothing is dropped (top-1 caps it at S) */
    int mx = 0;
    for (int e = 0; e < E; e++) mx = g->routed[e] > mx ? g->routed[e] : mx;
    g->capacity = k == 1 && mx > S ? S : mx;
  }
  const int cap = g->capacity;
  if (k == 1) { /* Random Token Selection: an expert keeps its cap routed tokens of the largest priority */
    keyed *lst = zt_malloc((size_t)S * sizeof(keyed), "MoE gating");
    for (int e = 0; e < E; e++) {
      if (g->routed[e] <= cap) continue;
      int n = 0;
      for (int s = 0; s < S; s++)
        if (g->expert[s] == e) lst[n++] = (keyed){dr->rts[(size_t)s * E + e], s};
      qsort(lst, (size_t)n, sizeof(keyed), cmp_keyed_desc);
      for (int i = cap; i < n; i++) g->kept[lst[i].idx] = 0;
    }
    free(lst);
  } else if (k == 2) { /* locations: first choices in token order, then the second choices after them */
    int32_t *loc = zt_calloc((size_t)E, sizeof(int32_t), "MoE gating");
    for (int j = 0; j < 2; j++)
      for (int s = 0; s < S; s++) {
        const int e = g->expert[(size_t)s * 2 + j];
        if (loc[e]++ >= cap) g->kept[(size_t)s * 2 + j] = 0;
      }
    free(loc);
  } else if (mc->drop_tokens) {
    /* drop_policy 'probs': an expert keeps its chosen tokens among the cap largest of topk_masked_gates[:, e], which
     * holds the token's LOGIT where the expert was chosen and 0 elsewhere (so a chosen negative logit ranks below every
     * token that did not choose the expert); ties only among equal values, which matter for exact zeros alone */
    keyed *lst = zt_malloc((size_t)S * sizeof(keyed), "MoE gating");
    int32_t *slot = zt_malloc((size_t)S * sizeof(int32_t), "MoE gating");
    for (int e = 0; e < E; e++) {
      for (int s = 0; s < S; s++) {
        slot[s] = -1;
        for (int j = 0; j < k; j++)
          if (g->expert[(size_t)s * k + j] == e) slot[s] = j;
        lst[s] = (keyed){slot[s] >= 0 ? (double)logits[(size_t)s * E + e] : 0.0, s};
      }
      qsort(lst, (size_t)S, sizeof(keyed), cmp_keyed_desc);
      for (int i = cap; i < S; i++) {
        const int s = lst[i].idx;
        if (slot[s] >= 0) g->kept[(size_t)s * k + slot[s]] = 0;
      }
    }
    free(lst), free(slot);
  }
  /* combine weights: top-1 the gate itself; k >= 2 renormalized over the kept choices, the denominator clamped at
   * fp32's epsilon (DeepSpeed's gates are fp32) */
  memset(g->counts, 0, (size_t)E * sizeof(int32_t));
  g->dropped = 0;
  for (int s = 0; s < S; s++) {
    double den = 0.0;
    for (int j = 0; j < k; j++) {
      const size_t i = (size_t)s * k + j;
      if (g->kept[i]) den += gates[(size_t)s * E + g->expert[i]], g->counts[g->expert[i]]++;
      else g->dropped++;
    }
    g->denom[s] = den < FLT_EPSILON ? FLT_EPSILON : den;
    for (int j = 0; j < k; j++) {
      const size_t i = (size_t)s * k + j;
      const double gv = g->kept[i] ? gates[(size_t)s * E + g->expert[i]] : 0.0;
      g->weight[i] = (float)(k == 1 ? gv : gv / g->denom[s]);
    }
  }
  free(first), free(row);
}

void zt_moe_gate_backward(const zt_moe_gating *g, float *dlogits, const float *dweight, double aux_grad) {
  const int S = g->S, E = g->E, k = g->k;
  double *dg = zt_malloc((size_t)E * sizeof(double), "MoE gating");
  int32_t *first = zt_calloc((size_t)E, sizeof(int32_t), "MoE gating");
  for (int s = 0; s < S; s++) first[g->expert[(size_t)s * k]]++;
  /* l_aux = c sum_e mean_s(gates[:, e]) ce[e]: d l_aux / d gates[s, e] = c ce[e] / S */
  const double c = k <= 2 ? (double)E : (double)E / k;
  for (int s = 0; s < S; s++) {
    const double *gs = g->gates + (size_t)s * E;
    for (int e = 0; e < E; e++) dg[e] = aux_grad * c * (double)(k <= 2 ? first[e] : g->routed[e]) / S / S;
    if (k == 1) {
      if (g->kept[s]) dg[g->expert[s]] += dweight[s];
    } else { /* w_j = g_j / D, D = sum of the kept g (clamped: a constant) */
      const double D = g->denom[s];
      const int clamped = D <= FLT_EPSILON;
      double dot = 0.0;
      for (int j = 0; j < k; j++) {
        const size_t i = (size_t)s * k + j;
        if (g->kept[i]) dot += (double)dweight[i] * gs[g->expert[i]];
      }
      for (int j = 0; j < k; j++) {
        const size_t i = (size_t)s * k + j;
        if (g->kept[i]) dg[g->expert[i]] += (double)dweight[i] / D - (clamped ? 0.0 : dot / (D * D));
      }
    }
    double sum = 0.0; /* softmax backward */
    for (int e = 0; e < E; e++) sum += gs[e] * dg[e];
    for (int e = 0; e < E; e++) dlogits[(size_t)s * E + e] = (float)(gs[e] * (dg[e] - sum));
  }
  free(dg), free(first);
}

/* ---- draws ---------------------------------------------------------------------------------------------------- */

/* Uniform in (0, 1): the 24-bit uniform moved half a step up, so that 0 never comes (log(0) in Gumbel's noise). */
static float open_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return zt_philox_uniform(seed, ZT_RNG_MOE, stream, index) + 0.5f / 16777216.0f;
}

void zt_moe_draw(zt_moe_draws *d, uint64_t seed, uint64_t first_sample, int layer, int B, int T, int E, int C) {
  zt_moe_draw_at(d, seed, first_sample, layer, B, T, 0, E, C);
}

void zt_moe_draw_at(zt_moe_draws *d, uint64_t seed, uint64_t first_sample, int layer, int B, int T, int pos0, int E,
                    int C) {
  const int S = B * T;
  enum { KIND_RTS = 0, KIND_GUMBEL = 1, KIND_JITTER = 2 };
  for (int s = 0; s < S; s++) {
    const int t = pos0 + s / B, b = s % B;
    const uint64_t sample = first_sample + (uint64_t)b, base = (sample << 20) ^ ((uint64_t)layer << 2);
    if (d->rts)
      for (int e = 0; e < E; e++) d->rts[(size_t)s * E + e] = open_uniform(seed, base ^ KIND_RTS, (uint64_t)t * E + e);
    if (d->gumbel)
      for (int e = 0; e < E; e++) {
        const double u = open_uniform(seed, base ^ KIND_GUMBEL, (uint64_t)t * E + e);
        d->gumbel[(size_t)s * E + e] = (float)-log(-log(u));
      }
    if (d->jitter)
      for (int c = 0; c < C; c++)
        d->jitter[(size_t)s * C + c] =
            1.0f - 1e-2f + 2e-2f * zt_philox_uniform(seed, ZT_RNG_MOE, base ^ KIND_JITTER, (uint64_t)t * C + c);
  }
}
