/* The GPU GPT (models/gpt/gpt_cuda.h) against the CPU model (models/gpt/gpt.h) from the same parameters, in fp32:
 * the loss and every parameter's gradient (dropout on, two micro batches accumulated, tied and untied output
 * layer, packed documents through key_start) agree to 1e-5 (loss) and 1e-4 (gradients: sums of many products in
 * a different order) of each tensor's largest magnitude, the gradient norm to 1e-5, and an AdamW step from the
 * same gradients to 1e-5, twice; full recompute gives the same gradients bit for bit; in bf16 the loss and the
 * gradient norm are within 2e-2 and 5e-2 of the fp32 CPU's; the device plan grows with the micro batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt/gpt.h"
#include "models/gpt/gpt_cuda.h"
#include "runtime/optim/optimizer.h"
#include "tests/cuda/harness.h"

static zt_gpt_config tiny(int untie, int recompute) {
  return (zt_gpt_config){.num_layers = 2, .hidden_size = 64, .num_heads = 4, .ffn_hidden_size = 256,
                         .max_positions = 32, .padded_vocab_size = 128, .ln_eps = 1e-5f, .attn_dropout = 0.1f,
                         .hidden_dropout = 0.1f, .init_std = 0.02f, .untie_embeddings = untie,
                         .recompute_full = recompute, .micro_batch = 2, .seq_length = 32};
}

typedef struct {
  int32_t tokens[64], targets[64], key_start[64];
  float mask[64];
} batch;

static void make_batch(batch *b, int k, int packed) {
  for (int n = 0; n < 64; n++) {
    b->tokens[n] = (int32_t)((n * 37 + k * 11 + 5) % 128);
    b->targets[n] = (int32_t)((n * 53 + k * 7 + 1) % 128);
    b->mask[n] = (n % 9 == 4) ? 0.0f : 1.0f;
    const int t = n % 32;
    b->key_start[n] = packed && t >= 12 ? 12 : 0; /* two documents per row: [0, 12) and [12, 32) */
  }
}

/* The CPU model with parameters drawn from seed, and the GPU model in dt holding the same parameters. */
static zt_gpt_cuda *pair(const zt_gpt_config *cfg, uint64_t seed, zt_dtype dt, zt_gpt *cpu) {
  zt_gpt_build(cpu, cfg, 0);
  zt_gpt_init_params(cpu, seed);
  zt_gpt_cuda *gpu = zt_gpt_cuda_build(cfg, dt);
  zt_gpt_cuda_set_params(gpu, cpu->params);
  return gpu;
}

static void compare_grads(const char *tag, const zt_param_table *t, const float *got, const float *want, double tol) {
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    char what[512];
    snprintf(what, sizeof what, "%s: grad %s", tag, p->name);
    h_check_host(what, got + p->offset, want + p->offset, p->numel, tol);
  }
}

static void parity(int untie, int packed) {
  char tag[96];
  snprintf(tag, sizeof tag, "fp32 %s%s", untie ? "untied" : "tied", packed ? ", packed documents" : "");
  zt_gpt_config cfg = tiny(untie, 0);
  zt_gpt cpu;
  zt_gpt_cuda *gpu = pair(&cfg, 1234, ZT_DTYPE_FP32, &cpu);
  const zt_param_table *t = zt_gpt_cuda_table(gpu);
  if (t->numel != cpu.table.numel) {
    printf("FAIL %s: the GPU table has %zu elements, the CPU's %zu\n", tag, t->numel, cpu.table.numel);
    h_fail++;
    return;
  }
  zt_opt_config oc = {.kind = ZT_OPT_ADAM, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .adam_w_mode = 1,
                      .weight_decay = 0.1f};
  zt_optimizer opt;
  zt_optimizer_init(&opt, &oc, &cpu.table, cpu.optim_state);
  float *got = h_alloc(t->numel), *want = h_alloc(t->numel);
  for (int step = 1; step <= 2; step++) {
    for (int mb = 0; mb < 2; mb++) { /* two micro batches accumulated */
      batch b;
      make_batch(&b, step * 2 + mb, packed);
      zt_pass pass = {.B = 2, .T = 32, .first_sample = (uint64_t)(4 * step + 2 * mb), .seed = 99, .training = 1,
                      .key_start = packed ? b.key_start : NULL};
      const float lc = zt_gpt_forward(&cpu, b.tokens, NULL, b.targets, b.mask, &pass);
      const float lg = zt_gpt_cuda_forward(gpu, b.tokens, NULL, b.targets, b.mask, &pass);
      char what[160];
      snprintf(what, sizeof what, "%s: loss step %d micro batch %d (%.6f)", tag, step, mb, lc);
      h_check_host(what, &lg, &lc, 1, h_tol(ZT_DTYPE_FP32));
      zt_gpt_backward(&cpu, 0.5f);
      zt_gpt_cuda_backward(gpu, 0.5f);
    }
    zt_gpt_cuda_get_grads(gpu, got);
    char what[160];
    snprintf(what, sizeof what, "%s step %d", tag, step);
    compare_grads(what, t, got, cpu.grads, 1e-4);
    const double nc = zt_grad_global_norm(cpu.grads, cpu.table.numel), ng = zt_gpt_cuda_grad_norm(gpu);
    const float fnc = (float)nc, fng = (float)ng;
    snprintf(what, sizeof what, "%s step %d: gradient norm %.6f", tag, step, nc);
    h_check_host(what, &fng, &fnc, 1, 1e-5);
    /* Adam from the same gradients (the GPU's): its normalized update turns the rounding noise of a near-zero
     * gradient into a different step, so the kernels are compared on equal inputs, and both models continue
     * from the same parameters and moments */
    memcpy(cpu.grads, got, t->numel * sizeof(float));
    zt_optimizer_step(&opt, cpu.params, cpu.grads, 1e-3, 1.0f);
    zt_gpt_cuda_adam_step(gpu, &oc, 1e-3, 1.0f, step);
    zt_gpt_cuda_get_params(gpu, got);
    snprintf(what, sizeof what, "%s step %d: parameters after Adam", tag, step);
    h_check_host(what, got, cpu.params, t->numel, 1e-5);
    zt_gpt_cuda_set_params(gpu, cpu.params);
    zt_gpt_cuda_set_moments(gpu, opt.m, opt.v);
    zt_gpt_cuda_get_grads(gpu, got);
    for (size_t i = 0; i < t->numel; i++) want[i] = 0.0f;
    snprintf(what, sizeof what, "%s step %d: gradients zeroed by the step", tag, step);
    h_check_exact(what, got, want, t->numel);
  }
  free(got), free(want);
  zt_gpt_cuda_free(gpu);
  zt_gpt_free(&cpu);
}

/* Full recompute reruns the same kernels on the same inputs: the same gradients bit for bit. */
static void recompute_same(void) {
  float *g0 = NULL;
  for (int rc = 0; rc < 2; rc++) {
    zt_gpt_config cfg = tiny(0, rc);
    zt_gpt cpu;
    zt_gpt_cuda *gpu = pair(&cfg, 77, ZT_DTYPE_FP32, &cpu);
    batch b;
    make_batch(&b, 3, 0);
    zt_pass pass = {.B = 2, .T = 32, .first_sample = 8, .seed = 5, .training = 1};
    zt_gpt_cuda_forward(gpu, b.tokens, NULL, b.targets, b.mask, &pass);
    zt_gpt_cuda_backward(gpu, 1.0f);
    float *g = h_alloc(cpu.table.numel);
    zt_gpt_cuda_get_grads(gpu, g);
    if (rc) h_check_exact("full recompute: the same gradients", g, g0, cpu.table.numel), free(g), free(g0);
    else g0 = g;
    zt_gpt_cuda_free(gpu);
    zt_gpt_free(&cpu);
  }
}

/* bf16 storage: the loss of the first forward within the bf16 tolerance of the fp32 CPU loss. */
static void bf16_loss(void) {
  zt_gpt_config cfg = tiny(0, 0);
  zt_gpt cpu;
  zt_gpt_cuda *gpu = pair(&cfg, 4321, ZT_DTYPE_BF16, &cpu);
  batch b;
  make_batch(&b, 1, 0);
  zt_pass pass = {.B = 2, .T = 32, .first_sample = 0, .seed = 1, .training = 1};
  const float lc = zt_gpt_forward(&cpu, b.tokens, NULL, b.targets, b.mask, &pass);
  const float lg = zt_gpt_cuda_forward(gpu, b.tokens, NULL, b.targets, b.mask, &pass);
  h_check_host("bf16 loss against the fp32 CPU loss", &lg, &lc, 1, h_tol(ZT_DTYPE_BF16));
  zt_gpt_cuda_backward(gpu, 1.0f);
  const double norm = zt_gpt_cuda_grad_norm(gpu);
  const double nc = (zt_gpt_backward(&cpu, 1.0f), zt_grad_global_norm(cpu.grads, cpu.table.numel));
  const float fg = (float)norm, fc = (float)nc;
  h_check_host("bf16 gradient norm (fp32 accumulation) against the fp32 CPU's", &fg, &fc, 1, 5e-2);
  zt_gpt_cuda_free(gpu);
  zt_gpt_free(&cpu);
}

int main(void) {
  h_init("test_cuda_gpt");
  parity(0, 0);
  parity(1, 0);
  parity(0, 1);
  recompute_same();
  bf16_loss();
  /* the plan grows with the micro batch, and the activations dominate it */
  zt_gpt_config cfg = tiny(0, 0);
  const zt_gpt_cuda_bytes b1 = zt_gpt_cuda_plan(&cfg, ZT_DTYPE_BF16, 1), b8 = zt_gpt_cuda_plan(&cfg, ZT_DTYPE_BF16, 8);
  if (b8.activations > 7 * b1.activations && b8.params == b1.params) h_pass++, printf("PASS plan: activations scale with the micro batch\n");
  else h_fail++, printf("FAIL plan: activations %zu at B=1, %zu at B=8\n", b1.activations, b8.activations);
  return h_done();
}
