/* Dumps a tiny GPT's weights, inputs, loss, gradients and three AdamW training steps as .npy files for
 * the PyTorch parity test (test_gpt_parity.py), which recomputes all of it in float64.
 *
 * Usage: gpt_parity_dump OUTDIR [--untie-recompute] [--random-ltd]
 *   default config: L=2, C=48, NH=4 (HD=12), FFN=192, padded vocab 128, 24 positions, T=16, B=3,
 *   tied embeddings; --untie-recompute: separate output layer and full activation recompute; --random-ltd:
 *   layer 1 runs on LTD_KEEP = 10 of the 16 tokens of each row (random-LTD), drawn for step 0 in the single
 *   forward/backward and step k-1 in training step k.
 *
 * Files (float32 "<f4" unless noted; every array is C order):
 *   names.txt                     parameter names in table order, one a line
 *   config.npy (<i4)              L, C, NH, FFN, V, max_positions, T, B, untie, recompute, steps,
 *                                 micro batches per step, warmup samples, decay samples, global batch,
 *                                 random-LTD layers (bit l: layer l), random-LTD kept tokens (0: off)
 *   [prefix]ltd_kept.npy (<i4)    with --random-ltd: [L, B, LTD_KEEP] the kept positions of each layer and row
 *                                 (zeros for a layer without random-LTD), next to each batch
 *   <name>.npy                    initial parameters
 *   tokens/targets.npy (<i4)      [B, T] batch of the single forward/backward; loss_mask.npy [B, T]
 *   loss.npy [1], grad.<name>.npy the loss and gradients of that forward/backward (grad_scale 1)
 *   step<k>.mb<j>.{tokens,targets,loss_mask}.npy   micro batch j of training step k (k = 1..3)
 *   step<k>.loss.npy [1]          mean micro-batch loss of step k (as the engine reports it)
 *   step<k>.grad_norm.npy [1]     global gradient norm before clipping
 *   step<k>.clip.npy [1]          gradient multiplier applied (1, or clip_grad / (norm + 1e-6))
 *   step<k>.lr.npy [1]            learning rate of the step
 *   step<k>.<name>.npy            parameters after step k
 *
 * Initialization: zt_gpt_init_params, then every bias and norm parameter is perturbed by
 * U(-0.05, 0.05). With biases 0 and norm weights 1 the forward would be blind to how those
 * parameters are wired (a bias added at the wrong offset changes nothing); perturbed, it is not.
 * Training steps follow train/engine.c: micro-batch gradients scaled by 1/num_microbatches, global
 * norm, clip, zt_optimizer_step with the schedule's lr before stepping it by the global batch.
 * Each step has 2 micro batches of B (global batch 6 samples, gradient accumulation exercised); the
 * cosine schedule warms up over 6 samples and decays over 24 (lr 0, 1e-3, 7.75e-4 for steps 1-3);
 * AdamW betas 0.9/0.95, eps 1e-8, weight decay 0.1 on the parameters without no_weight_decay. With
 * clip_grad 1.0 the global norm (~1.1-1.2 here) is clipped in every step (the test checks >= 1). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/gpt/gpt.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "tests/parity/parity_dump.h"

enum { L = 2, C = 48, NH = 4, FFN = 4 * C, V = 128, VOCAB = 100, MAXPOS = 24, T = 16, B = 3 };
enum { STEPS = 3, NMB = 2, GBS = B * NMB, LTD_KEEP = 10 };
static const uint8_t LTD_LAYERS[L] = {0, 1};
static const uint64_t SEED = 1234;
static const float CLIP_GRAD = 1.0f;
static const uint64_t SEED_RNG = 0x5eed5eedULL; /* the data and perturbation stream */

typedef struct {
  int32_t tokens[B * T], targets[B * T];
  float mask[B * T];
} batch;

/* Random tokens and next-token targets below the real vocabulary; about one in five loss-mask
 * entries is 0 (and row 0 always has some). */
static void make_batch(batch *b, const char *prefix) {
  int32_t text[B][T + 1];
  for (int r = 0; r < B; r++)
    for (int t = 0; t <= T; t++) text[r][t] = (int32_t)(next_u64() % VOCAB);
  for (int r = 0; r < B; r++)
    for (int t = 0; t < T; t++) {
      b->tokens[r * T + t] = text[r][t];
      b->targets[r * T + t] = text[r][t + 1];
      b->mask[r * T + t] = (next_u64() % 5 == 0 || (r == 0 && t % 7 == 3)) ? 0.0f : 1.0f;
    }
  int64_t shape[2] = {B, T};
  char name[128];
  snprintf(name, sizeof name, "%stokens", prefix);
  save(name, b->tokens, "<i4", 2, shape);
  snprintf(name, sizeof name, "%stargets", prefix);
  save(name, b->targets, "<i4", 2, shape);
  snprintf(name, sizeof name, "%sloss_mask", prefix);
  save(name, b->mask, "<f4", 2, shape);
}

static void make_dir(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) zt_fatal("gpt_parity_dump", "cannot create %s: %s", dir, strerror(errno));
}

int main(int argc, char **argv) {
  int untie_recompute = 0, ltd = 0;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--untie-recompute") == 0) untie_recompute = 1;
    else if (strcmp(argv[i], "--random-ltd") == 0) ltd = 1;
    else argc = 0;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUTDIR [--untie-recompute] [--random-ltd]\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  g_rng = SEED_RNG;
  make_dir(g_dir);

  zt_gpt_config cfg = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                       .max_positions = MAXPOS, .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.0f,
                       .hidden_dropout = 0.0f, .init_std = 0.02f, .untie_embeddings = untie_recompute,
                       .recompute_full = untie_recompute, .micro_batch = B, .seq_length = T,
                       .random_ltd_layers = ltd ? LTD_LAYERS : NULL};
  zt_gpt m;
  zt_gpt_build(&m, &cfg, 0);
  zt_gpt_init_params(&m, SEED);
  for (int i = 0; i < m.table.count; i++) {
    const zt_param *p = &m.table.params[i];
    if (!p->no_weight_decay) continue;
    for (size_t j = 0; j < p->numel; j++) m.params[p->offset + j] += (float)(0.1 * next_uniform() - 0.05);
  }

  /* warmup: one step of samples (so step 1 runs at lr 0); cosine decay over four steps, so step 3 sits
   * at a third of the decay, where cosine (coefficient 0.75) and linear (0.667) differ */
  const int64_t warmup = GBS, decay = (int64_t)(STEPS + 1) * GBS;
  {
    int32_t c[17] = {L, C, NH, FFN, V, MAXPOS, T, B, untie_recompute, untie_recompute, STEPS, NMB,
                     (int32_t)warmup, (int32_t)decay, GBS, ltd ? 2 : 0, ltd ? LTD_KEEP : 0};
    int64_t shape[1] = {17};
    save("config", c, "<i4", 1, shape);
    char path[1024];
    snprintf(path, sizeof path, "%s/names.txt", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) zt_fatal("gpt_parity_dump", "cannot create %s: %s", path, strerror(errno));
    for (int i = 0; i < m.table.count; i++) fprintf(f, "%s\n", m.table.params[i].name);
    zt_check(fclose(f) == 0, "gpt_parity_dump", "writing %s failed", path);
  }
  save_params(&m.table, m.params, "");

  /* ---- one forward/backward, grad_scale 1, on freshly zeroed gradients ---- */
  batch b0;
  make_batch(&b0, "");
  zt_grads_zero(m.grads, m.table.numel);
  zt_pass pass = {.B = B, .T = T, .first_sample = 0, .seed = SEED, .training = 1, .ltd_keep = ltd ? LTD_KEEP : 0,
                  .ltd_step = 0};
  if (ltd) save_ltd_kept("", LTD_LAYERS, L, B, T, LTD_KEEP, SEED, 0, 0);
  float loss = zt_gpt_forward(&m, b0.tokens, NULL, b0.targets, b0.mask, &pass);
  zt_gpt_backward(&m, 1.0f);
  save_scalar("loss", loss);
  save_params(&m.table, m.grads, "grad.");
  printf("forward/backward: loss %.7f\n", loss);

  /* ---- three AdamW steps, as zt_engine_train_step composes them ---- */
  zt_grads_zero(m.grads, m.table.numel);
  zt_optimizer opt;
  zt_opt_config oc = {.kind = ZT_OPT_ADAM, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .adam_w_mode = 1,
                      .weight_decay = 0.1f};
  zt_optimizer_init(&opt, &oc, &m.table, m.optim_state);
  zt_lr_schedule sched = {.max_lr = 1e-3, .min_lr = 1e-4, .warmup_steps = warmup, .decay_steps = decay,
                          .style = ZT_DECAY_COSINE, .num_steps = 0};
  int64_t consumed = 0;
  int clipped = 0;
  for (int k = 1; k <= STEPS; k++) {
    double loss_sum = 0.0;
    for (int mb = 0; mb < NMB; mb++) {
      batch bt;
      char prefix[64];
      snprintf(prefix, sizeof prefix, "step%d.mb%d.", k, mb);
      make_batch(&bt, prefix);
      zt_pass p = {.B = B, .T = T, .first_sample = (uint64_t)(consumed + mb * B), .seed = SEED, .training = 1,
                   .ltd_keep = ltd ? LTD_KEEP : 0, .ltd_step = (uint64_t)(k - 1)};
      if (ltd) save_ltd_kept(prefix, LTD_LAYERS, L, B, T, LTD_KEEP, SEED, p.ltd_step, p.first_sample);
      float l = zt_gpt_forward(&m, bt.tokens, NULL, bt.targets, bt.mask, &p);
      zt_gpt_backward(&m, 1.0f / NMB);
      loss_sum += l;
    }
    double norm = zt_grad_global_norm(m.grads, m.table.numel);
    float clip = 1.0f;
    double coeff = CLIP_GRAD / (norm + 1e-6);
    if (coeff < 1.0) clip = (float)coeff;
    clipped += clip < 1.0f;
    double lr = zt_lr_get(&sched);
    zt_optimizer_step(&opt, m.params, m.grads, lr, clip);
    zt_lr_step(&sched, GBS);
    consumed += GBS;

    char name[64];
    snprintf(name, sizeof name, "step%d.loss", k);
    save_scalar(name, loss_sum / NMB);
    snprintf(name, sizeof name, "step%d.grad_norm", k);
    save_scalar(name, norm);
    snprintf(name, sizeof name, "step%d.clip", k);
    save_scalar(name, clip);
    snprintf(name, sizeof name, "step%d.lr", k);
    save_scalar(name, lr);
    snprintf(name, sizeof name, "step%d.", k);
    save_params(&m.table, m.params, name);
    printf("step %d: loss %.7f grad norm %.6f clip %.6f lr %.3e\n", k, loss_sum / NMB, norm, clip, lr);
  }
  printf("clipping triggered in %d of %d steps\n", clipped, STEPS);
  zt_gpt_free(&m);
  return 0;
}
