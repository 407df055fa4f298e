/* The flat layout and the optimizer of expert parallelism under ZeRO (docs/zero.md, docs/moe.md):
 *   1. zt_param_table_experts_last: the dense parameters first and the experts after them, each group in registration
 *      order and 16-aligned, the experts' region past the dense parameters padded to the partition multiple;
 *   2. an optimizer over two flat ranges (zt_optimizer_init_ranges: the dense partition and the experts' partition,
 *      their moments from element off2) steps every element exactly as one optimizer over the whole buffer does, bit
 *      for bit, for Adam, L2 Adam and SGD with momentum, weight decay on some tensors only, zeroing the gradients it
 *      consumed; elements outside the ranges are not touched; zt_optimizer_index maps each range's elements into the
 *      state. */
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/param_table.h"
#include "tests/unit/testutil.h"

/* A small table: embedding, an MoE layer's router and its experts (2 tensors each), a layernorm, a second layer. */
static void build(zt_param_table *t) {
  zt_param_table_init(t);
  const int64_t emb[2] = {37, 8}, wg[2] = {4, 8}, w1[2] = {12, 8}, b1[1] = {12}, ln[1] = {8}, w2[2] = {8, 5};
  zt_param_table_add(t, "emb", 2, emb, ZT_INIT_NORMAL, 0.02f, 0, -1);
  zt_param_table_add(t, "l0.wg", 2, wg, ZT_INIT_NORMAL, 0.02f, 0, -1);
  for (int e = 2; e < 4; e++) { /* this rank's experts 2 and 3 */
    char name[64];
    snprintf(name, sizeof name, "l0.experts.%d.w", e);
    t->params[zt_param_table_add(t, name, 2, w1, ZT_INIT_NORMAL, 0.02f, 0, -1)].expert_id = e;
    snprintf(name, sizeof name, "l0.experts.%d.b", e);
    t->params[zt_param_table_add(t, name, 1, b1, ZT_INIT_ZEROS, 0, 1, -1)].expert_id = e;
  }
  zt_param_table_add(t, "l0.ln", 1, ln, ZT_INIT_ONES, 0, 1, -1);
  zt_param_table_add(t, "l1.w", 2, w2, ZT_INIT_NORMAL, 0.02f, 0, -1);
}

static void layout_checks(void) {
  zt_param_table t;
  build(&t);
  zt_param_table_experts_last(&t, 6);
  size_t off = 0, dense_end = 0;
  int ok = 1;
  for (int pass = 0; pass < 2; pass++) {
    if (pass) {
      dense_end = off;
      off = (off + 5) / 6 * 6;
      off = (off + 15) / 16 * 16;
      ok &= t.expert_lo == off;
    }
    for (int i = 0; i < t.count; i++) {
      if ((t.params[i].expert_id >= 0) != pass) continue;
      ok &= t.params[i].offset == off && off % 16 == 0;
      off += (t.params[i].numel + 15) / 16 * 16;
    }
  }
  tu_check(ok && t.dense_numel == dense_end && t.numel == off && t.expert_lo >= (dense_end + 5) / 6 * 6,
           "experts_last: dense parameters from 0, the experts from expert_lo, each group in order and aligned",
           "dense %zu (want %zu), expert_lo %zu, numel %zu (want %zu)", t.dense_numel, dense_end, t.expert_lo,
           t.numel, off);
  zt_param_table_free(&t);
}

static int in_param(const zt_param_table *t, size_t x) {
  for (int i = 0; i < t->count; i++)
    if (x >= t->params[i].offset && x < t->params[i].offset + t->params[i].numel) return 1;
  return 0;
}

/* Steps a whole-buffer optimizer and a two-range one from the same state; compares the ranges' elements. */
static void ranges_check(const char *what, zt_opt_kind kind, int adam_w) {
  zt_param_table t;
  build(&t);
  zt_param_table_experts_last(&t, 4);
  const size_t N = t.numel;
  /* rank 1 of 4 over the dense region, rank 0 of 2 over the experts' */
  const size_t dpart = (t.dense_numel + 3) / 4, lo = dpart, hi = 2 * dpart < t.dense_numel ? 2 * dpart : t.dense_numel;
  const size_t xn = N - t.expert_lo, xpart = (xn + 1) / 2, lo2 = t.expert_lo, hi2 = t.expert_lo + xpart;
  const size_t off2 = dpart + 3; /* any offset past the first range's state */
  const zt_opt_config cfg = {.kind = kind, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .adam_w_mode = adam_w,
                             .momentum = 0.8f, .weight_decay = 0.1f};
  tu_rng r = {42};
  float *p_all = tu_falloc(N), *g_all = tu_falloc(N), *st_all = tu_falloc(2 * N);
  const size_t sn = off2 + (hi2 - lo2);
  float *p2 = tu_falloc(N), *g2 = tu_falloc(N), *st2 = tu_falloc(2 * sn);
  tu_fill(&r, p_all, N, -1, 1);
  memcpy(p2, p_all, N * sizeof(float));
  memset(st_all, 0, 2 * N * sizeof(float));
  memset(st2, 0, 2 * sn * sizeof(float));
  zt_optimizer whole, two;
  zt_optimizer_init(&whole, &cfg, &t, st_all);
  zt_optimizer_init_ranges(&two, &cfg, &t, st2, lo, hi, lo2, hi2, off2);
  int idx_ok = zt_optimizer_index(&two, lo) == 0 && zt_optimizer_index(&two, hi - 1) == hi - 1 - lo &&
               zt_optimizer_index(&two, lo2) == off2 && zt_optimizer_index(&two, hi2 - 1) == off2 + hi2 - 1 - lo2 &&
               two.n == sn && two.v == st2 + sn;
  for (int step = 0; step < 3; step++) {
    tu_fill(&r, g_all, N, -0.5f, 0.5f);
    for (size_t x = 0; x < N; x++) /* the alignment padding holds no gradient */
      if (!in_param(&t, x)) g_all[x] = 0.0f;
    memcpy(g2, g_all, N * sizeof(float));
    zt_optimizer_step(&whole, p_all, g_all, 1e-2, 0.5f);
    zt_optimizer_step2(&two, p2 + lo, g2 + lo, p2 + lo2, g2 + lo2, 1e-2, 0.5f);
  }
  int same = 1, untouched = 1;
  double worst = 0;
  for (size_t x = 0; x < N; x++) {
    const int in = (x >= lo && x < hi) || (x >= lo2 && x < hi2);
    if (in) {
      const size_t k = zt_optimizer_index(&two, x);
      const double d[3] = {fabs(p2[x] - p_all[x]), fabs(st2[k] - st_all[x]),
                           kind == ZT_OPT_SGD ? 0 : fabs(two.v[k] - whole.v[x])};
      for (int j = 0; j < 3; j++) worst = d[j] > worst ? d[j] : worst;
      same &= g2[x] == 0.0f;
    } else {
      float orig;
      tu_rng r0 = {42};
      for (size_t j = 0; j <= x; j++) orig = tu_uniform(&r0, -1, 1);
      untouched &= p2[x] == orig;
    }
  }
  char name[160];
  snprintf(name, sizeof name, "%s: two ranges step as the whole buffer, bit for bit (3 steps)", what);
  tu_check(same && worst == 0 && idx_ok && two.step == 3, name, "gradients zeroed %d, worst %.3g, index %d, step "
           "%lld", same, worst, idx_ok, (long long)two.step);
  snprintf(name, sizeof name, "%s: elements outside the ranges untouched", what);
  tu_check(untouched, name, "an element outside [%zu, %zu) and [%zu, %zu) changed", lo, hi, lo2, hi2);
  zt_optimizer_free(&whole);
  zt_optimizer_free(&two);
  free(p_all), free(g_all), free(st_all), free(p2), free(g2), free(st2);
  zt_param_table_free(&t);
}

int main(void) {
  layout_checks();
  ranges_check("AdamW", ZT_OPT_ADAM, 1);
  ranges_check("Adam (L2)", ZT_OPT_ADAM, 0);
  ranges_check("SGD with momentum", ZT_OPT_SGD, 0);
  return tu_finish();
}
