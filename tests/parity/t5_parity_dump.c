/* Dumps a tiny T5's weights, inputs, lm loss, gradients and three AdamW training steps as .npy files for the PyTorch
 * parity test (test_t5_parity.py), which recomputes all of it in float64.
 *
 * Usage: t5_parity_dump OUTDIR [--post-ln] [--recompute] [--dec-layers N] [--llama] [--sq-1p]
 *   default config: encoder L=2, decoder 2 layers, C=48, NH=4 (HD=12), FFN=192, padded vocab 128, 24 positions,
 *   Te=16 encoder and Td=12 decoder tokens, B=3, pre-LN layers; --post-ln: Megatron's
 *   --apply-residual-connection-post-layernorm; --recompute: full activation recompute; --dec-layers N: N decoder
 *   layers (1..8; 3 checks a decoder deeper than the encoder); --llama: --normalization rmsnorm --swiglu
 *   --disable-bias-linear (every norm RMSNorm, SwiGLU MLPs, no attention/MLP biases, cross-attention's included);
 *   --sq-1p: --squared-relu and --apply-layernorm-1p (the decoder's post_inter_attention_layernorm too).
 * The model is built with zt_t5_build on the CPU and driven through the engine's contract (zt_model_forward /
 * zt_model_backward of models/model.h), with the batch a zt_batch as the T5 provider fills it (data/t5_provider.c:
 * tokens and padding the encoder's [B, Te], dec_tokens, labels and loss_mask the decoder's [B, Td]). Dropout is off
 * (attention and hidden dropout 0) with training = 1, so the training path runs.
 *
 * Files (float32 "<f4" unless noted; every array is C order):
 *   names.txt                     parameter names in table order, one a line
 *   config.npy (<i4)              L (encoder), C, NH, FFN, V, max_positions, Te, B, dec_layers, Td, post_ln,
 *                                 recompute, steps, micro batches per step, warmup samples, decay samples,
 *                                 global batch, rmsnorm, swiglu, add_bias_linear, the MLP's activation
 *                                 (zt_act_kind: 0 the tanh GELU, 3 the squared ReLU), LayerNorm-1p
 *   <name>.npy                    initial parameters
 *   tokens, padding (<i4) [B, Te] the encoder's input and padding (1 = pad; uint8 in the zt_batch);
 *   dec_tokens, labels (<i4), loss_mask [B, Td]   the decoder's input, targets and loss weights
 *                                 (the batch of the single forward/backward)
 *   lm_loss.npy [1]               its lm loss
 *   nlosses.npy (<i4) [1]         losses.n of the forward (1)
 *   grad.<name>.npy               the gradients of that forward/backward (grad_scale 1)
 *   step<k>.mb<j>.<batch array>   micro batch j of training step k (k = 1..3)
 *   step<k>.loss.npy [1]          mean micro-batch lm loss of step k (as the engine reports it)
 *   step<k>.grad_norm/clip/lr.npy global gradient norm before clipping, multiplier applied, learning rate
 *   step<k>.<name>.npy            parameters after step k
 *
 * The batch is shaped like a T5 sample (Megatron's t5_dataset.py): the pad id is 0 and real tokens are 1..VOCAB-1,
 * so Megatron's make_attention_mask (token >= 1) agrees with the padding flags; the encoder's rows have trailing
 * padding (one row none), the decoder's rows trailing padding with token 0, label 0 and loss mask 0 there (one row
 * none), loss mask 1 on every real decoder position.
 *
 * Initialization: zt_t5_init_params, then every bias and norm parameter (the no-weight-decay group) is perturbed by
 * U(-0.05, 0.05), as bert_parity_dump does, so that a bias wired at the wrong place (lm_head.bias, the
 * cross-attention's biases and layernorms included) changes the numbers.
 * Training steps as bert_parity_dump (train/engine.c's composition): 2 micro batches of B per step, gradients
 * scaled by 1/2, global norm, clip at 1.0, AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1) at the cosine
 * schedule's lr (warmup 6 samples, decay 24), then the schedule steps by the global batch. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/t5/t5.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "tests/parity/parity_dump.h"

enum { L = 2, C = 48, NH = 4, FFN = 4 * C, V = 128, VOCAB = 100, MAXPOS = 24, TE = 16, TD = 12, B = 3 };
enum { STEPS = 3, NMB = 2, GBS = B * NMB, MAX_DEC_LAYERS = 8 };
static const uint64_t SEED = 1234;
static const uint64_t SEED_RNG = 0x75eed5eedULL; /* the data and perturbation stream */

typedef struct {
  int32_t tokens[B * TE], dec[B * TD], labels[B * TD];
  uint8_t padding[B * TE];
  float mask[B * TD];
} batch;

/* npad[r] trailing pad positions of each of B rows of n tokens: one row (chosen at random) none, the others distinct
 * counts 1 + 3k + U{0, 1, 2} (at most n / 2 with the sizes here). */
static void pad_counts(int *npad, int n) {
  const int zero_row = (int)(next_u64() % B);
  for (int r = 0, k = 0; r < B; r++) npad[r] = r == zero_row ? 0 : 1 + 3 * k++ + (int)(next_u64() % 3);
  for (int r = 0; r < B; r++) zt_check(npad[r] < n, "t5_parity_dump", "row %d: %d pads of %d tokens", r, npad[r], n);
}

/* A T5 micro batch (see the header comment). */
static void make_batch(batch *b, const char *prefix) {
  int npad[B], ndpad[B];
  pad_counts(npad, TE);
  pad_counts(ndpad, TD);
  for (int r = 0; r < B; r++)
    for (int t = 0; t < TE; t++) {
      const int i = r * TE + t, pad = t >= TE - npad[r];
      b->tokens[i] = pad ? 0 : 1 + (int32_t)(next_u64() % (VOCAB - 1));
      b->padding[i] = (uint8_t)pad;
    }
  for (int r = 0; r < B; r++)
    for (int t = 0; t < TD; t++) {
      const int i = r * TD + t, pad = t >= TD - ndpad[r];
      b->dec[i] = pad ? 0 : 1 + (int32_t)(next_u64() % (VOCAB - 1));
      b->labels[i] = pad ? 0 : 1 + (int32_t)(next_u64() % (VOCAB - 1));
      b->mask[i] = pad ? 0.0f : 1.0f;
    }
  int64_t se[2] = {B, TE}, sd[2] = {B, TD};
  char name[128];
  snprintf(name, sizeof name, "%stokens", prefix);
  save(name, b->tokens, "<i4", 2, se);
  int32_t pad32[B * TE];
  for (int i = 0; i < B * TE; i++) pad32[i] = b->padding[i];
  snprintf(name, sizeof name, "%spadding", prefix);
  save(name, pad32, "<i4", 2, se);
  snprintf(name, sizeof name, "%sdec_tokens", prefix);
  save(name, b->dec, "<i4", 2, sd);
  snprintf(name, sizeof name, "%slabels", prefix);
  save(name, b->labels, "<i4", 2, sd);
  snprintf(name, sizeof name, "%sloss_mask", prefix);
  save(name, b->mask, "<f4", 2, sd);
}

static zt_batch as_batch(const batch *b) {
  return (zt_batch){.B = B, .T = TE, .tokens = b->tokens, .positions = NULL, .token_types = NULL,
                    .labels = b->labels, .loss_mask = b->mask, .padding = b->padding, .key_start = NULL,
                    .sentence_labels = NULL, .Td = TD, .dec_tokens = b->dec};
}

static void make_dir(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) zt_fatal("t5_parity_dump", "cannot create %s: %s", dir, strerror(errno));
}

int main(int argc, char **argv) {
  int post_ln = 0, recompute = 0, dec_layers = 2, llama = 0, sq_1p = 0, rope = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUTDIR [--post-ln] [--recompute] [--dec-layers N] [--llama] [--sq-1p] [--rope]\n",
            argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--post-ln") == 0) post_ln = 1;
    else if (strcmp(argv[i], "--recompute") == 0) recompute = 1;
    else if (strcmp(argv[i], "--llama") == 0) llama = 1;
    else if (strcmp(argv[i], "--sq-1p") == 0) sq_1p = 1;
    else if (strcmp(argv[i], "--rope") == 0) rope = 1; /* rotary on half of each head, theta 500, no positions */
    else if (strcmp(argv[i], "--dec-layers") == 0 && i + 1 < argc) {
      char *end;
      const long n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > MAX_DEC_LAYERS) {
        fprintf(stderr, "%s: --dec-layers %s is not in 1..%d\n", argv[0], argv[i], MAX_DEC_LAYERS);
        return 2;
      }
      dec_layers = (int)n;
    } else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  g_dir = argv[1];
  g_rng = SEED_RNG;
  make_dir(g_dir);

  zt_t5_config cfg = {.num_layers = L, .dec_layers = dec_layers, .dec_seq_length = TD, .hidden_size = C,
                      .num_heads = NH, .ffn_hidden_size = FFN, .max_positions = MAXPOS, .padded_vocab_size = V,
                      .ln_eps = 1e-5f, .attn_dropout = 0.0f, .hidden_dropout = 0.0f, .init_std = 0.02f,
                      .untie_embeddings = 0, .bidirectional = 1, .residual_post_ln = post_ln,
                      .recompute_full = recompute, .micro_batch = B, .seq_length = TE, .backend = NULL,
                      .dtype = ZT_DTYPE_FP32, .rmsnorm = llama, .swiglu = llama, .no_bias_linear = llama,
                      .mlp_act = sq_1p ? ZT_ACT_SQUARED_RELU : ZT_ACT_GELU_TANH, .layernorm_1p = sq_1p,
                      .rotary_dims = rope ? C / NH / 2 : 0, .rope_theta = 500.0f, .no_position_embedding = rope};
  zt_t5 m;
  zt_t5_build(&m, &cfg, 0);
  zt_t5_init_params(&m, SEED);
  float *params = m.model.params, *grads = m.model.grads;
  for (int i = 0; i < m.table.count; i++) {
    const zt_param *p = &m.table.params[i];
    if (!p->no_weight_decay) continue;
    for (size_t j = 0; j < p->numel; j++) params[p->offset + j] += (float)(0.1 * next_uniform() - 0.05);
  }

  const int64_t warmup = GBS, decay = (int64_t)(STEPS + 1) * GBS;
  {
    int32_t c[25] = {L, C, NH, FFN, V, MAXPOS, TE, B, dec_layers, TD, post_ln, recompute, STEPS, NMB,
                     (int32_t)warmup, (int32_t)decay, GBS, llama, llama, !llama, sq_1p ? ZT_ACT_SQUARED_RELU : 0,
                     sq_1p, rope ? C / NH / 2 : 0, 500, !rope};
    int64_t shape[1] = {25};
    save("config", c, "<i4", 1, shape);
    char path[1024];
    snprintf(path, sizeof path, "%s/names.txt", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) zt_fatal("t5_parity_dump", "cannot create %s: %s", path, strerror(errno));
    for (int i = 0; i < m.table.count; i++) fprintf(f, "%s\n", m.table.params[i].name);
    zt_check(fclose(f) == 0, "t5_parity_dump", "writing %s failed", path);
  }
  save_params(&m.table, params, "");

  /* ---- one forward/backward, grad_scale 1, on freshly zeroed gradients ---- */
  batch b0;
  make_batch(&b0, "");
  zt_batch zb = as_batch(&b0);
  zt_grads_zero(grads, m.table.numel);
  zt_pass pass = {.B = B, .T = TE, .first_sample = 0, .seed = SEED, .training = 1};
  zt_losses losses = {0};
  zt_model_forward(&m.model, 0, &zb, &pass, &losses);
  zt_model_backward(&m.model, 1.0f);
  {
    int32_t n = losses.n;
    int64_t one[1] = {1};
    save("nlosses", &n, "<i4", 1, one);
  }
  save_scalar("lm_loss", losses.value[0]);
  save_params(&m.table, grads, "grad.");
  printf("forward/backward: %d losses, %s %.7f, total %.7f\n", losses.n, losses.name[0], losses.value[0],
         losses.total);

  /* ---- three AdamW steps, as zt_engine_train_step composes them ---- */
  zt_grads_zero(grads, m.table.numel);
  zt_optimizer opt;
  zt_opt_config oc = {.kind = ZT_OPT_ADAM, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .adam_w_mode = 1,
                      .weight_decay = 0.1f};
  zt_optimizer_init(&opt, &oc, &m.table, m.model.optim_state);
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
      zt_batch zbt = as_batch(&bt);
      zt_pass p = {.B = B, .T = TE, .first_sample = (uint64_t)(consumed + mb * B), .seed = SEED, .training = 1};
      zt_losses l = {0};
      zt_model_forward(&m.model, 0, &zbt, &p, &l);
      zt_model_backward(&m.model, 1.0f / NMB);
      loss_sum += l.total;
    }
    clipped += dump_train_step(k, loss_sum / NMB, &opt, &sched, &m.table, params, grads, GBS);
    consumed += GBS;
  }
  printf("clipping triggered in %d of %d steps\n", clipped, STEPS);
  zt_t5_free(&m);
  return 0;
}
