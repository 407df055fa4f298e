/* Dumps a tiny GPT's weights, inputs, loss, gradients and three AdamW training steps as .npy files for
 * the PyTorch parity test (test_gpt_parity.py), which recomputes all of it in float64.
 *
 * Usage: gpt_parity_dump OUTDIR [--untie-recompute] [--random-ltd] [--moe NAME] [--llama NAME]
 *   default config: L=2, C=48, NH=4 (HD=12), FFN=192, padded vocab 128, 24 positions, T=16, B=3,
 *   tied embeddings; --untie-recompute: separate output layer and full activation recompute; --random-ltd:
 *   layer 1 runs on LTD_KEEP = 10 of the 16 tokens of each row (random-LTD), drawn for step 0 in the single
 *   forward/backward and step k-1 in training step k; --moe NAME: DeepSpeed MoE layers (test_moe_parity.py), NAME one
 *   of the configurations in k_moe below (top1, top2, top2_argmax, top3, nodrop, residual_pyramid, jitter, rsample,
 *   recompute: top-2 with an untied output layer and full recompute; swiglu_nobias: top-2 SwiGLU experts without
 *   linear biases anywhere; swiglu_residual: Residual MoE with SwiGLU experts and dense branch); --llama NAME: the Llama-style variants
 *   (test_llama_parity.py), NAME one of k_llama below: llama (RMSNorm, SwiGLU, no linear biases, rotary on every head
 *   dimension, untied output layer), llama_recompute (the same with full recompute), rope_partial (LayerNorm, GELU,
 *   biases, rotary theta 500 on half of each head, tied), rms_swiglu (RMSNorm, SwiGLU with biases, learned positions),
 *   gqa (llama with 2 key/value heads for the 4 query heads), mqa_bias (LayerNorm, GELU, biases, rotary on half of each
 *   head, tied, 1 key/value head), sq_relu_ln1p (LayerNorm-1p, squared-ReLU MLP, biases, learned positions, tied),
 *   erf_nobias (LayerNorm, the erf GELU of F.gelu, no linear biases, learned positions, untied). Also writes llama.npy
 *   (<f8 [10]): rmsnorm, swiglu, add_bias_linear, rotary, rope_theta, rotary_percent, add_position_embedding,
 *   key/value heads, the MLP's activation (zt_act_kind: 0 tanh GELU, 1 erf GELU, 3 squared ReLU), LayerNorm-1p.
 *
 * With --moe, also (token order s = t B + b of a micro batch, S = B T):
 *   moe.npy (<f8 [11])            topk, train and eval capacity factors, min capacity, drop tokens, top-2 sampling,
 *                                 noisy gate policy (0 None, 1 Jitter, 2 RSample), residual, moe loss coefficient,
 *                                 swiglu (--swiglu: SwiGLU experts), add_bias_linear (0: --disable-bias-linear)
 *   moe_experts.npy (<i4 [L])     experts of each layer (1: the dense MLP)
 *   <P>moe.<l>.{rts,gumbel}.npy   [S, E] the gate's draws where used (zt_moe_draw, the function the layer calls);
 *   <P>moe.<l>.jitter.npy         [S, C]; <P>moe.<l>.counts.npy (<i4 [E]) tokens each expert processed;
 *   <P>moe.<l>.aux.npy [1]        the layer's l_aux; for every pass prefix P ("", "eval.", "step<k>.mb<j>.")
 *   moe_loss.npy, eval.loss.npy, eval.moe_loss.npy, step<k>.moe_loss.npy [1]: the weighted aux losses (loss.npy stays
 *                                 the lm loss; the gradients are of their sum); "eval." is an eval-mode forward of the
 *                                 first batch.
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
#include "models/moe/moe.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "tests/parity/parity_dump.h"

enum { L = 2, C = 48, NH = 4, FFN = 4 * C, V = 128, VOCAB = 100, MAXPOS = 24, T = 16, B = 3 };
enum { STEPS = 3, NMB = 2, GBS = B * NMB, LTD_KEEP = 10 };
static const uint8_t LTD_LAYERS[L] = {0, 1};
static const uint64_t SEED = 1234;
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

/* The MoE configurations (--moe NAME): name, experts of layers 0 and 1, topk, train/eval capacity factors, min
 * capacity, drop tokens, top-2 sampling, noise, residual, whether the dense options untie + recompute go along, and
 * the experts' variants: SwiGLU, no linear biases (in the attention too). */
typedef struct {
  const char *name;
  int experts[L], topk;
  float train_cf, eval_cf;
  int min_cap, drop, sampling;
  zt_moe_noise noise;
  int residual, untie_recompute;
  int swiglu, no_bias;
} moe_case;
static const moe_case k_moe[] = {
    {"top1", {4, 4}, 1, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 0, 0, 0, 0},
    {"top2", {4, 4}, 2, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 0, 0, 0, 0},
    {"top2_argmax", {4, 4}, 2, 1.0f, 2.0f, 4, 1, 0, ZT_MOE_NOISE_NONE, 0, 0, 0, 0},
    {"top3", {4, 4}, 3, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 0, 0, 0, 0},
    {"nodrop", {4, 4}, 1, 1.0f, 2.0f, 4, 0, 1, ZT_MOE_NOISE_NONE, 0, 0, 0, 0},
    {"residual_pyramid", {2, 4}, 1, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 1, 0, 0, 0},
    {"jitter", {4, 4}, 1, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_JITTER, 0, 0, 0, 0},
    {"rsample", {4, 4}, 1, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_RSAMPLE, 0, 0, 0, 0},
    {"recompute", {4, 4}, 2, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 0, 1, 0, 0},
    {"swiglu_nobias", {4, 4}, 2, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 0, 0, 1, 1},
    {"swiglu_residual", {2, 4}, 1, 1.0f, 2.0f, 4, 1, 1, ZT_MOE_NOISE_NONE, 1, 0, 1, 0},
};
static const float MOE_COEFF = 0.5f;

/* The Llama-style configurations (--llama NAME). */
typedef struct {
  const char *name;
  int rmsnorm, swiglu, bias, rotary;
  float theta, percent;
  int untie, recompute, kv; /* kv: key/value heads (NH: no grouping) */
  int act, ln1p;            /* the MLP's activation unless swiglu (zt_act_kind), --apply-layernorm-1p */
} llama_case;
static const llama_case k_llama[] = {
    {"llama", 1, 1, 0, 1, 10000.0f, 1.0f, 1, 0, NH, 0, 0},
    {"llama_recompute", 1, 1, 0, 1, 10000.0f, 1.0f, 1, 1, NH, 0, 0},
    {"rope_partial", 0, 0, 1, 1, 500.0f, 0.5f, 0, 0, NH, 0, 0},
    {"rms_swiglu", 1, 1, 1, 0, 10000.0f, 1.0f, 0, 0, NH, 0, 0},
    {"gqa", 1, 1, 0, 1, 10000.0f, 1.0f, 1, 0, 2, 0, 0},
    {"mqa_bias", 0, 0, 1, 1, 10000.0f, 0.5f, 0, 0, 1, 0, 0},
    {"sq_relu_ln1p", 0, 0, 1, 0, 10000.0f, 1.0f, 0, 0, NH, ZT_ACT_SQUARED_RELU, 1},
    {"erf_nobias", 0, 0, 0, 0, 10000.0f, 1.0f, 1, 0, NH, ZT_ACT_GELU_ERF, 0},
};

/* A pass's MoE files: each MoE layer's draws (recomputed with the layer's own function), counts and l_aux. */
static void save_moe_pass(const zt_gpt *m, const zt_moe_config *mc, const char *prefix, const zt_pass *p) {
  const int S = p->B * p->T;
  for (int l = 0; l < L; l++) {
    const int E = zt_moe_experts(mc, l);
    if (E <= 1) continue;
    const zt_moe_gating *g = zt_moe_last_gating(&m->lm.stack.ffns[l]);
    zt_check(g != NULL, "gpt_parity_dump", "layer %d has no gating", l);
    zt_moe_draws d = {0};
    if (mc->topk == 1) d.rts = zt_malloc((size_t)S * E * sizeof(float), "draws");
    if ((mc->topk == 2 && mc->top2_sampling) || (mc->topk == 1 && p->training && mc->noise == ZT_MOE_NOISE_RSAMPLE))
      d.gumbel = zt_malloc((size_t)S * E * sizeof(float), "draws");
    if (p->training && mc->noise == ZT_MOE_NOISE_JITTER) d.jitter = zt_malloc((size_t)S * C * sizeof(float), "draws");
    zt_moe_draw(&d, p->seed, p->first_sample, l, p->B, p->T, E, C);
    char name[128];
    int64_t se[2] = {S, E}, sc[2] = {S, C}, e1[1] = {E};
    if (d.rts) snprintf(name, sizeof name, "%smoe.%d.rts", prefix, l), save(name, d.rts, "<f4", 2, se);
    if (d.gumbel) snprintf(name, sizeof name, "%smoe.%d.gumbel", prefix, l), save(name, d.gumbel, "<f4", 2, se);
    if (d.jitter) snprintf(name, sizeof name, "%smoe.%d.jitter", prefix, l), save(name, d.jitter, "<f4", 2, sc);
    snprintf(name, sizeof name, "%smoe.%d.counts", prefix, l);
    save(name, g->counts, "<i4", 1, e1);
    snprintf(name, sizeof name, "%smoe.%d.aux", prefix, l);
    save_scalar(name, g->aux);
    free(d.rts), free(d.gumbel), free(d.jitter);
  }
}

static void make_dir(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) zt_fatal("gpt_parity_dump", "cannot create %s: %s", dir, strerror(errno));
}

int main(int argc, char **argv) {
  int untie_recompute = 0, ltd = 0;
  const moe_case *mcase = NULL;
  const llama_case *lcase = NULL;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--untie-recompute") == 0) untie_recompute = 1;
    else if (strcmp(argv[i], "--llama") == 0 && i + 1 < argc) {
      for (size_t c = 0; c < sizeof k_llama / sizeof k_llama[0]; c++)
        if (strcmp(k_llama[c].name, argv[i + 1]) == 0) lcase = &k_llama[c];
      if (!lcase) argc = 0;
      i++;
    }
    else if (strcmp(argv[i], "--random-ltd") == 0) ltd = 1;
    else if (strcmp(argv[i], "--moe") == 0 && i + 1 < argc) {
      for (size_t c = 0; c < sizeof k_moe / sizeof k_moe[0]; c++)
        if (strcmp(k_moe[c].name, argv[i + 1]) == 0) mcase = &k_moe[c];
      if (!mcase) argc = 0;
      i++;
    } else argc = 0;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUTDIR [--untie-recompute] [--random-ltd] [--moe NAME] [--llama NAME]\n", argv[0]);
    return 2;
  }
  zt_moe_config mc = {0};
  int moe_swiglu = 0, moe_no_bias = 0;
  if (mcase) {
    untie_recompute = mcase->untie_recompute;
    moe_swiglu = mcase->swiglu, moe_no_bias = mcase->no_bias;
    mc = (zt_moe_config){.num_layers = L, .num_experts = mcase->experts, .topk = mcase->topk,
                         .train_capacity_factor = mcase->train_cf, .eval_capacity_factor = mcase->eval_cf,
                         .min_capacity = mcase->min_cap, .drop_tokens = mcase->drop, .top2_sampling = mcase->sampling,
                         .noise = mcase->noise, .residual = mcase->residual, .loss_coeff = MOE_COEFF};
  }
  const zt_moe_config *moe = mcase ? &mc : NULL;
  int recompute = untie_recompute;
  if (lcase) untie_recompute = lcase->untie, recompute = lcase->recompute;
  g_dir = argv[1];
  g_rng = SEED_RNG;
  make_dir(g_dir);

  zt_gpt_config cfg = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                       .max_positions = MAXPOS, .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.0f,
                       .hidden_dropout = 0.0f, .init_std = 0.02f, .untie_embeddings = untie_recompute,
                       .recompute_full = recompute, .micro_batch = B, .seq_length = T,
                       .random_ltd_layers = ltd ? LTD_LAYERS : NULL, .moe = moe, .swiglu = moe_swiglu,
                       .no_bias_linear = moe_no_bias};
  if (lcase) {
    cfg.rmsnorm = lcase->rmsnorm, cfg.swiglu = lcase->swiglu, cfg.no_bias_linear = !lcase->bias;
    cfg.rotary_dims = lcase->rotary ? (int)((C / NH) * lcase->percent) : 0, cfg.rope_theta = lcase->theta;
    cfg.no_position_embedding = lcase->rotary;
    cfg.kv_heads = lcase->kv;
    cfg.mlp_act = lcase->act, cfg.layernorm_1p = lcase->ln1p;
  }
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
    int32_t c[17] = {L, C, NH, FFN, V, MAXPOS, T, B, untie_recompute, recompute, STEPS, NMB,
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
  if (lcase) {
    const double v[10] = {lcase->rmsnorm, lcase->swiglu, lcase->bias, lcase->rotary, lcase->theta, lcase->percent,
                          !lcase->rotary, lcase->kv, lcase->act, lcase->ln1p};
    int64_t n10[1] = {10};
    save("llama", v, "<f8", 1, n10);
  }
  if (moe) {
    const double v[11] = {mc.topk, mc.train_capacity_factor, mc.eval_capacity_factor, mc.min_capacity,
                          mc.drop_tokens, mc.top2_sampling, mc.noise, mc.residual, mc.loss_coeff, mcase->swiglu,
                          !mcase->no_bias};
    int64_t n11[1] = {11}, nl[1] = {L};
    save("moe", v, "<f8", 1, n11);
    save("moe_experts", mcase->experts, "<i4", 1, nl);
  }

  /* ---- one forward/backward, grad_scale 1, on freshly zeroed gradients ---- */
  batch b0;
  make_batch(&b0, "");
  zt_grads_zero(m.grads, m.table.numel);
  zt_pass pass = {.B = B, .T = T, .first_sample = 0, .seed = SEED, .training = 1, .ltd_keep = ltd ? LTD_KEEP : 0,
                  .ltd_step = 0};
  if (ltd) save_ltd_kept("", LTD_LAYERS, L, B, T, LTD_KEEP, SEED, 0, 0);
  if (moe) { /* an eval-mode forward of the same batch first (the training forward's state is what backward uses) */
    zt_pass ev = pass;
    ev.training = 0;
    const float el = zt_gpt_forward(&m, b0.tokens, NULL, b0.targets, b0.mask, &ev);
    save_scalar("eval.loss", el);
    save_scalar("eval.moe_loss", MOE_COEFF * m.lm.aux);
    save_moe_pass(&m, moe, "eval.", &ev);
  }
  float loss = zt_gpt_forward(&m, b0.tokens, NULL, b0.targets, b0.mask, &pass);
  if (moe) save_scalar("moe_loss", MOE_COEFF * m.lm.aux), save_moe_pass(&m, moe, "", &pass);
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
    double loss_sum = 0.0, moe_sum = 0.0;
    for (int mb = 0; mb < NMB; mb++) {
      batch bt;
      char prefix[64];
      snprintf(prefix, sizeof prefix, "step%d.mb%d.", k, mb);
      make_batch(&bt, prefix);
      zt_pass p = {.B = B, .T = T, .first_sample = (uint64_t)(consumed + mb * B), .seed = SEED, .training = 1,
                   .ltd_keep = ltd ? LTD_KEEP : 0, .ltd_step = (uint64_t)(k - 1)};
      if (ltd) save_ltd_kept(prefix, LTD_LAYERS, L, B, T, LTD_KEEP, SEED, p.ltd_step, p.first_sample);
      float l = zt_gpt_forward(&m, bt.tokens, NULL, bt.targets, bt.mask, &p);
      if (moe) moe_sum += MOE_COEFF * m.lm.aux, save_moe_pass(&m, moe, prefix, &p);
      zt_gpt_backward(&m, 1.0f / NMB);
      loss_sum += l;
    }
    char name[64];
    if (moe) snprintf(name, sizeof name, "step%d.moe_loss", k), save_scalar(name, moe_sum / NMB);
    clipped += dump_train_step(k, loss_sum / NMB, &opt, &sched, &m.table, m.params, m.grads, GBS);
    consumed += GBS;
  }
  printf("clipping triggered in %d of %d steps\n", clipped, STEPS);
  zt_gpt_free(&m);
  return 0;
}
