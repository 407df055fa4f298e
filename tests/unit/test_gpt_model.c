/* GPT model-level checks: full activation recompute gives bit-identical losses and gradients (dropout
 * on) with a smaller activation plan; runs are deterministic; Megatron's LR schedule values. */
#include <math.h>
#include <string.h>

#include "models/gpt/gpt.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "testutil.h"

enum { B = 2, T = 12, V = 64 };

static void build(zt_gpt *m, int recompute) {
  zt_gpt_config c = {.num_layers = 3, .hidden_size = 24, .num_heads = 3, .ffn_hidden_size = 96,
                     .max_positions = 16, .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.2f,
                     .hidden_dropout = 0.1f, .init_std = 0.02f, .recompute_full = recompute,
                     .micro_batch = B, .seq_length = T};
  zt_gpt_build(m, &c, 0);
  zt_gpt_init_params(m, 42);
}

static float run(zt_gpt *m, int training) {
  int32_t tokens[B * T], targets[B * T];
  for (int i = 0; i < B * T; i++) { tokens[i] = (i * 7 + 3) % V; targets[i] = (i * 5 + 1) % V; }
  zt_pass pass = {.B = B, .T = T, .first_sample = 5, .seed = 99, .training = training};
  float loss = zt_gpt_forward(m, tokens, NULL, targets, NULL, &pass);
  zt_gpt_backward(m, 1.0f);
  return loss;
}

static void test_recompute(void) {
  zt_gpt a, b;
  build(&a, 0);
  build(&b, 1);
  float la = run(&a, 1), lb = run(&b, 1);
  tu_check(la == lb, "recompute: identical loss", "%.9g vs %.9g", la, lb);
  size_t diff = 0;
  for (size_t i = 0; i < a.table.numel; i++) diff += memcmp(&a.grads[i], &b.grads[i], 4) != 0;
  tu_check(diff == 0, "recompute: bit-identical gradients", "%zu of %zu differ", diff, a.table.numel);
  size_t aa = a.plan.bytes[ZT_MEM_ACTIVATIONS], ab = b.plan.bytes[ZT_MEM_ACTIVATIONS];
  tu_check(ab < aa, "recompute: smaller activation plan", "%zu vs %zu bytes", ab, aa);
  /* the same run again, from fresh gradients, reproduces the numbers bit for bit */
  memset(a.grads, 0, a.table.numel * 4);
  zt_gpt c;
  build(&c, 0);
  float lc = run(&c, 1);
  diff = 0;
  for (size_t i = 0; i < a.table.numel; i++) diff += memcmp(&c.grads[i], &b.grads[i], 4) != 0;
  tu_check(lc == la && diff == 0, "deterministic rerun", "loss %.9g vs %.9g, %zu grads differ", lc, la, diff);
  float le = run(&c, 0);
  tu_check(le != la && isfinite(le), "dropout active only in training", "train %.9g eval %.9g", la, le);
  zt_gpt_free(&a);
  zt_gpt_free(&b);
  zt_gpt_free(&c);
}

static void expect_lr(const char *name, zt_lr_schedule s, int64_t step, double want) {
  s.num_steps = step;
  double got = zt_lr_get(&s);
  tu_check(fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want)), name, "step %lld: %.12g, expected %.12g",
           (long long)step, got, want);
}

static void test_lr_schedule(void) {
  /* max 1e-3, min 1e-4, warmup 100 samples, decay 1100 samples (Megatron's formulas) */
  zt_lr_schedule s = {.max_lr = 1e-3, .min_lr = 1e-4, .warmup_steps = 100, .decay_steps = 1100,
                      .style = ZT_DECAY_LINEAR};
  expect_lr("lr warmup start is 0", s, 0, 0.0);
  expect_lr("lr warmup is linear", s, 25, 2.5e-4);
  expect_lr("lr warmup end is max", s, 100, 1e-3);
  expect_lr("lr linear decay midway", s, 600, 1e-4 + 0.5 * 9e-4);
  expect_lr("lr past decay is min", s, 1101, 1e-4);
  s.style = ZT_DECAY_COSINE;
  expect_lr("lr cosine quarter", s, 350, 1e-4 + 9e-4 * 0.5 * (cos(M_PI * 0.25) + 1));
  expect_lr("lr cosine end", s, 1100, 1e-4);
  s.style = ZT_DECAY_CONSTANT;
  expect_lr("lr constant after warmup", s, 900, 1e-3);
  s.style = ZT_DECAY_INVSQRT;
  expect_lr("lr inverse-square-root", s, 400, 1e-3 * sqrt(100.0) / sqrt(400.0));
  expect_lr("lr inverse-square-root floor", s, 1000, 1e-3 * sqrt(100.0) / sqrt(1000.0));
  zt_lr_schedule t = s;
  t.num_steps = 0;
  t.style = ZT_DECAY_LINEAR;
  double lr = zt_lr_step(&t, 50);
  tu_check(t.num_steps == 50 && fabs(lr - 5e-4) < 1e-15, "lr step advances in samples", "steps %lld lr %.9g",
           (long long)t.num_steps, lr);
}

/* SGD with momentum and L2 weight decay, two steps, against torch.optim.SGD's formulas by hand;
 * the bias (no_weight_decay) must not decay. */
static void test_sgd(void) {
  zt_param_table t;
  zt_param_table_init(&t);
  int64_t w[1] = {2}, b[1] = {1};
  zt_param_table_add(&t, "w", 1, w, ZT_INIT_ZEROS, 0, 0, -1);
  zt_param_table_add(&t, "b", 1, b, ZT_INIT_ZEROS, 0, 1, -1);
  float p[32] = {0}, g[32] = {0}, state[64] = {0};
  size_t ob = t.params[1].offset;
  p[0] = 1.0f; p[1] = -2.0f; p[ob] = 0.5f;
  zt_opt_config c = {.kind = ZT_OPT_SGD, .momentum = 0.9f, .weight_decay = 0.1f};
  zt_optimizer o;
  zt_optimizer_init(&o, &c, &t, state);
  double ep[3] = {1.0, -2.0, 0.5}, buf[3] = {0};
  const double gr[2][3] = {{0.5, 1.0, -1.0}, {0.25, -0.5, 2.0}};
  int ok = 1;
  for (int step = 0; step < 2; step++) {
    g[0] = (float)gr[step][0]; g[1] = (float)gr[step][1]; g[ob] = (float)gr[step][2];
    zt_optimizer_step(&o, p, g, 0.1, 0.5f); /* grads scaled by 0.5 (a clip coefficient) */
    for (int i = 0; i < 3; i++) {
      double d = 0.5 * gr[step][i] + (i < 2 ? 0.1 * ep[i] : 0.0);
      buf[i] = step == 0 ? d : 0.9 * buf[i] + d;
      ep[i] -= 0.1 * buf[i];
    }
    float got[3] = {p[0], p[1], p[ob]};
    for (int i = 0; i < 3; i++) ok &= fabs(got[i] - ep[i]) < 1e-6;
    ok &= g[0] == 0.0f && g[1] == 0.0f && g[ob] == 0.0f;
  }
  tu_check(ok, "sgd momentum + weight decay, grads zeroed", "p = %.7f %.7f %.7f, expected %.7f %.7f %.7f", p[0], p[1],
           p[ob], ep[0], ep[1], ep[2]);
  zt_param_table_free(&t);
}

int main(void) {
  test_sgd();
  test_recompute();
  test_lr_schedule();
  return tu_finish();
}
