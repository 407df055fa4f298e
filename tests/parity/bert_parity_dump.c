/* Dumps a tiny BERT's weights, inputs, losses, gradients and three AdamW training steps as .npy files for the
 * PyTorch parity test (test_bert_parity.py), which recomputes all of it in float64.
 *
 * Usage: bert_parity_dump OUTDIR [--post-ln] [--no-binary-head] [--recompute] [--random-ltd] [--llama] [--openai-1p]
 *                         [--rope-gqa] [--cls K [--choices CH]]
 *   default config: L=2, C=48, NH=4 (HD=12), FFN=192, padded vocab 128, 24 positions, T=16, B=3, pre-LN layers,
 *   the binary head (two token types, the pooler, binary_head); --post-ln: Megatron's
 *   --apply-residual-connection-post-layernorm; --no-binary-head: Megatron's --bert-no-binary-head (no token
 *   types, no pooler, no binary head; one loss); --recompute: full activation recompute; --random-ltd: layer 1 runs
 *   on LTD_KEEP = 10 of the 16 tokens of each row (random-LTD, an encoder: the kept tokens' padding masks them),
 *   drawn for step 0 in the single forward/backward and step k-1 in training step k; --llama: --normalization
 *   rmsnorm --swiglu --disable-bias-linear (every transformer norm RMSNorm, SwiGLU MLP, no attention/MLP biases);
 *   --openai-1p: --openai-gelu (the LM head's GELU in the tanh form) and --apply-layernorm-1p; --cls K: fine-tuned
 *   with Megatron's Classification head of K classes (cls_classes = K: two token types, the pooler, dropout off,
 *   classification_head [K, C], no lm_head, binary head or output layer), the batch's labels one a sample;
 *   --choices CH (with --cls 1): RACE's MultipleChoice, multichoice_head [1, C], B = 2 CH rows (2 samples of CH
 *   choices, consecutive rows), labels in [0, CH); --regression (with --cls 1): STS-B's one output a sample and the
 *   mean squared error against labels in [0, 5] (the truncated scores).
 * The model is built with zt_bert_build on the CPU and driven through the engine's contract (zt_model_forward /
 * zt_model_backward of models/model.h), with the batch a zt_batch as the BERT provider fills it.
 *
 * Files (float32 "<f4" unless noted; every array is C order):
 *   names.txt                     parameter names in table order, one a line
 *   config.npy (<i4)              L, C, NH, FFN, V, max_positions, T, B, binary_head, post_ln, recompute, steps,
 *                                 micro batches per step, warmup samples, decay samples, global batch,
 *                                 random-LTD layers (bit l: layer l), random-LTD kept tokens (0: off), rmsnorm,
 *                                 swiglu, add_bias_linear, the LM head's GELU in the tanh form, LayerNorm-1p,
 *                                 rotary dims, rope theta, learned positions, key/value heads, cls_classes (0: the
 *                                 pretraining heads), cls_choices (binary_head is 0 with --cls)
 *   [prefix]ltd_kept.npy (<i4)    with --random-ltd: [L, B, LTD_KEEP] the kept positions (parity_dump.h)
 *   <name>.npy                    initial parameters
 *   tokens, token_types, labels (<i4) [B, T], padding [B, T] (1 = pad; uint8 in the zt_batch), loss_mask [B, T],
 *   sentence_labels (<i4) [B]     the batch of the single forward/backward (token_types and sentence_labels are
 *                                 written but not passed to the model without the binary head); with --cls the
 *                                 labels of the B / CH samples ([B / CH], each in [0, CH K)), and labels and
 *                                 loss_mask are written but not passed (as the fine-tuning provider's batches)
 *   lm_loss.npy, sop_loss.npy, total_loss.npy [1]   its losses (sop_loss 0 without the binary head)
 *   nlosses.npy (<i4) [1]         losses.n of the forward (2 with the binary head, else 1)
 *   grad.<name>.npy               the gradients of that forward/backward (grad_scale 1)
 *   n_predictions.npy (<i4) [1], predictions.npy (<i4) [n]   zt_model.n_predictions and .predictions after that
 *                                 forward (0 and an empty array without --cls); step<k>.mb<j>.n_predictions and
 *                                 step<k>.mb<j>.predictions after each training micro batch's forward
 *   step<k>.mb<j>.<batch array>   micro batch j of training step k (k = 1..3)
 *   step<k>.loss.npy [1]          mean micro-batch total loss of step k (as the engine reports it)
 *   step<k>.grad_norm/clip/lr.npy global gradient norm before clipping, multiplier applied, learning rate
 *   step<k>.<name>.npy            parameters after step k
 *
 * Initialization: zt_bert_init_params, then every bias and norm parameter (the no-weight-decay group) is perturbed
 * by U(-0.05, 0.05), as gpt_parity_dump does, so that a bias wired at the wrong place changes the numbers; with --cls
 * the word embeddings', the pooler's and the head's weights by U(-0.5, 0.5), so that the predictions vary by sample.
 * Training steps as gpt_parity_dump (train/engine.c's composition): 2 micro batches of B per step, gradients
 * scaled by 1/2, global norm, clip at 1.0, AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1) at the cosine
 * schedule's lr (warmup one global batch of samples, decay four: 6 and 24 for B = 3), then the schedule steps by the
 * global batch. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "models/bert/bert.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "tests/parity/parity_dump.h"

enum { L = 2, C = 48, NH = 4, FFN = 4 * C, V = 128, VOCAB = 100, MAXPOS = 24, T = 16, BMAX = 8 };
enum { STEPS = 3, NMB = 2, LTD_KEEP = 10 };
static int B = 3;                  /* rows of a micro batch: 3, or 2 samples of CH rows with --choices CH */
static int g_classes, g_choices;   /* --cls K, --choices CH (0, 0: the pretraining heads) */
static int g_regression;           /* --regression (with --cls 1): STS-B's mean squared error */
static const uint8_t LTD_LAYERS[L] = {0, 1};
static const uint64_t SEED = 1234;
static const uint64_t SEED_RNG = 0xbe575eedULL; /* the data and perturbation stream */

typedef struct {
  int32_t tokens[BMAX * T], types[BMAX * T], labels[BMAX * T], sentence[BMAX];
  uint8_t padding[BMAX * T];
  float mask[BMAX * T];
} batch;

/* A BERT micro batch: sample r has npad[r] trailing pad positions (one sample none, the others distinct counts for
 * B = 3, at most T - 5), segment A (type 0) then B (type 1) over the real tokens, pad positions token 0 and type 0;
 * about 15% of the real positions masked (at least one a sample) with a random label, labels 0 elsewhere; random
 * sentence labels, or with --cls a label in [0, CH K) for each of the B / CH samples (drawn after the rows). */
static void make_batch(batch *b, const char *prefix) {
  int npad[BMAX];
  const int zero_row = (int)(next_u64() % (uint64_t)B);
  for (int r = 0, k = 0; r < B; r++) npad[r] = r == zero_row ? 0 : 1 + (3 * k++ + (int)(next_u64() % 3)) % (T - 5);
  for (int r = 0; r < B; r++) {
    const int real = T - npad[r];
    const int split = 2 + (int)(next_u64() % (uint64_t)(real - 3)); /* first position of segment B */
    int nmasked = 0;
    for (int t = 0; t < T; t++) {
      const int i = r * T + t, pad = t >= real;
      b->tokens[i] = pad ? 0 : (int32_t)(next_u64() % VOCAB);
      b->types[i] = (!pad && t >= split) ? 1 : 0;
      b->padding[i] = (uint8_t)pad;
      const int masked = !pad && next_u64() % 100 < 15;
      b->mask[i] = masked ? 1.0f : 0.0f;
      b->labels[i] = masked ? (int32_t)(next_u64() % VOCAB) : 0;
      nmasked += masked;
    }
    if (nmasked == 0) {
      const int i = r * T + (int)(next_u64() % (uint64_t)real);
      b->mask[i] = 1.0f;
      b->labels[i] = (int32_t)(next_u64() % VOCAB);
    }
    b->sentence[r] = (int32_t)(next_u64() % 2);
  }
  const int samples = g_classes ? B / g_choices : B;
  if (g_classes)
    for (int s = 0; s < samples; s++) /* STS-B: int() of scores in [0, 5] */
      b->sentence[s] = (int32_t)(next_u64() % (uint64_t)(g_regression ? 6 : g_choices * g_classes));
  int64_t shape[2] = {B, T};
  char name[128];
  snprintf(name, sizeof name, "%stokens", prefix);
  save(name, b->tokens, "<i4", 2, shape);
  snprintf(name, sizeof name, "%stoken_types", prefix);
  save(name, b->types, "<i4", 2, shape);
  snprintf(name, sizeof name, "%slabels", prefix);
  save(name, b->labels, "<i4", 2, shape);
  int32_t pad32[B * T];
  for (int i = 0; i < B * T; i++) pad32[i] = b->padding[i];
  snprintf(name, sizeof name, "%spadding", prefix);
  save(name, pad32, "<i4", 2, shape);
  snprintf(name, sizeof name, "%sloss_mask", prefix);
  save(name, b->mask, "<f4", 2, shape);
  snprintf(name, sizeof name, "%ssentence_labels", prefix);
  const int64_t nlabels[1] = {samples};
  save(name, b->sentence, "<i4", 1, nlabels);
}

/* The model's batch: with --cls as the fine-tuning provider (data/finetune_provider.c) fills it: tokens, token types,
 * padding and the samples' labels, no token labels or loss mask. */
static zt_batch as_batch(const batch *b, int binary_head) {
  if (g_classes)
    return (zt_batch){.B = B, .T = T, .tokens = b->tokens, .token_types = b->types, .padding = b->padding,
                      .sentence_labels = b->sentence};
  return (zt_batch){.B = B, .T = T, .tokens = b->tokens, .positions = NULL,
                    .token_types = binary_head ? b->types : NULL, .labels = b->labels, .loss_mask = b->mask,
                    .padding = b->padding, .key_start = NULL, .sentence_labels = binary_head ? b->sentence : NULL};
}

/* "<prefix>n_predictions" and "<prefix>predictions": the model's per-sample predictions after a forward. */
static void save_predictions(const zt_model *mm, const char *prefix) {
  char name[128];
  const int32_t n = mm->n_predictions;
  const int64_t one[1] = {1}, shape[1] = {mm->predictions ? n : 0};
  snprintf(name, sizeof name, "%sn_predictions", prefix);
  save(name, &n, "<i4", 1, one);
  snprintf(name, sizeof name, "%spredictions", prefix);
  const int32_t none = 0;
  save(name, mm->predictions ? mm->predictions : &none, "<i4", 1, shape);
}

static void make_dir(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    zt_fatal("bert_parity_dump", "cannot create %s: %s", dir, strerror(errno));
}

int main(int argc, char **argv) {
  int post_ln = 0, binary_head = 1, recompute = 0, ltd = 0, llama = 0, openai_1p = 0, rope_gqa = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUTDIR [--post-ln] [--no-binary-head] [--recompute] [--random-ltd] [--llama] "
                    "[--openai-1p] [--rope-gqa] [--cls K [--choices CH]]\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--post-ln") == 0) post_ln = 1;
    else if (strcmp(argv[i], "--no-binary-head") == 0) binary_head = 0;
    else if (strcmp(argv[i], "--recompute") == 0) recompute = 1;
    else if (strcmp(argv[i], "--random-ltd") == 0) ltd = 1;
    else if (strcmp(argv[i], "--llama") == 0) llama = 1;
    else if (strcmp(argv[i], "--openai-1p") == 0) openai_1p = 1;
    else if (strcmp(argv[i], "--rope-gqa") == 0) rope_gqa = 1; /* rotary on half of each head, 2 key/value heads */
    else if (strcmp(argv[i], "--cls") == 0 && i + 1 < argc) g_classes = atoi(argv[++i]);
    else if (strcmp(argv[i], "--choices") == 0 && i + 1 < argc) g_choices = atoi(argv[++i]);
    else if (strcmp(argv[i], "--regression") == 0) g_regression = 1;
    else {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (g_choices && !g_classes) g_classes = -1; /* refused below */
  if (g_classes) {
    if (!g_choices) g_choices = 1;
    if (g_classes < 1 || g_choices < 1 || (g_choices > 1 && g_classes != 1) || 2 * g_choices > BMAX || !binary_head ||
        (g_regression && (g_classes != 1 || g_choices != 1))) {
      fprintf(stderr, "%s: --cls K >= 1 with --choices CH (1 or, for --cls 1, up to %d), not --no-binary-head\n",
              argv[0], BMAX / 2);
      return 2;
    }
    if (g_choices > 1) B = 2 * g_choices;
    binary_head = 0; /* the pretraining heads are replaced (the pooler and the token types stay) */
  }
  const int GBS = B * NMB, cls = g_classes > 0;
  g_dir = argv[1];
  g_rng = SEED_RNG;
  make_dir(g_dir);

  zt_bert_config cfg = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                        .max_positions = MAXPOS, .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.0f,
                        .hidden_dropout = 0.0f, .init_std = 0.02f, .untie_embeddings = 0, .bidirectional = 1,
                        .residual_post_ln = post_ln, .num_tokentypes = binary_head || cls ? 2 : 0,
                        .add_pooler = binary_head || cls, .recompute_full = recompute, .micro_batch = B,
                        .seq_length = T, .backend = NULL, .dtype = ZT_DTYPE_FP32,
                        .random_ltd_layers = ltd ? LTD_LAYERS : NULL,
                        .rmsnorm = llama, .swiglu = llama, .no_bias_linear = llama || rope_gqa,
                        .head_gelu_tanh = openai_1p, .layernorm_1p = openai_1p,
                        .rotary_dims = rope_gqa ? C / NH / 2 : 0, .rope_theta = 500.0f,
                        .no_position_embedding = rope_gqa, .kv_heads = rope_gqa ? 2 : 0, .cls_classes = g_classes,
                        .cls_choices = g_choices, .cls_regression = g_regression, .no_output_layer = cls};
  zt_bert m;
  zt_bert_build(&m, &cfg, 0);
  zt_bert_init_params(&m, SEED);
  float *params = m.model.params, *grads = m.model.grads;
  for (int i = 0; i < m.table.count; i++) {
    const zt_param *p = &m.table.params[i];
    if (!p->no_weight_decay) continue;
    for (size_t j = 0; j < p->numel; j++) params[p->offset + j] += (float)(0.1 * next_uniform() - 0.05);
  }
  if (cls) /* the word embeddings, the pooler's and the head's weights spread wider, so that the samples' pooled
            * outputs differ by more than the perturbed biases add to every row and their logits' argmax by sample */
    for (int i = 0; i < m.table.count; i++) {
      const zt_param *p = &m.table.params[i];
      const char *head = zt_bert_cls_head_name(&cfg);
      if (p->no_weight_decay || (strncmp(p->name, "language_model.pooler.", 22) != 0 &&
                                 strncmp(p->name, head, strlen(head)) != 0 &&
                                 strcmp(p->name, "language_model.embedding.word_embeddings.weight") != 0))
        continue;
      for (size_t j = 0; j < p->numel; j++) params[p->offset + j] += (float)(next_uniform() - 0.5);
    }

  const int64_t warmup = GBS, decay = (int64_t)(STEPS + 1) * GBS;
  {
    int32_t c[30] = {L, C, NH, FFN, V, MAXPOS, T, B, binary_head, post_ln, recompute, STEPS, NMB,
                     (int32_t)warmup, (int32_t)decay, GBS, ltd ? 2 : 0, ltd ? LTD_KEEP : 0, llama, llama,
                     !(llama || rope_gqa), openai_1p, openai_1p, rope_gqa ? C / NH / 2 : 0, 500, !rope_gqa,
                     rope_gqa ? 2 : NH, g_classes, g_choices, g_regression};
    int64_t shape[1] = {30};
    save("config", c, "<i4", 1, shape);
    char path[1024];
    snprintf(path, sizeof path, "%s/names.txt", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) zt_fatal("bert_parity_dump", "cannot create %s: %s", path, strerror(errno));
    for (int i = 0; i < m.table.count; i++) fprintf(f, "%s\n", m.table.params[i].name);
    zt_check(fclose(f) == 0, "bert_parity_dump", "writing %s failed", path);
  }
  save_params(&m.table, params, "");

  /* ---- one forward/backward, grad_scale 1, on freshly zeroed gradients ---- */
  batch b0;
  make_batch(&b0, "");
  zt_batch zb = as_batch(&b0, binary_head);
  zt_grads_zero(grads, m.table.numel);
  zt_pass pass = {.B = B, .T = T, .first_sample = 0, .seed = SEED, .training = 1, .ltd_keep = ltd ? LTD_KEEP : 0,
                  .ltd_step = 0};
  if (ltd) save_ltd_kept("", LTD_LAYERS, L, B, T, LTD_KEEP, SEED, 0, 0);
  zt_losses losses = {0};
  zt_model_forward(&m.model, 0, &zb, &pass, &losses);
  zt_model_backward(&m.model, 1.0f);
  {
    int32_t n = losses.n;
    int64_t one[1] = {1};
    save("nlosses", &n, "<i4", 1, one);
  }
  save_scalar("lm_loss", losses.value[0]);
  save_scalar("sop_loss", losses.n > 1 ? losses.value[1] : 0.0);
  save_scalar("total_loss", losses.total);
  save_params(&m.table, grads, "grad.");
  save_predictions(&m.model, "");
  printf("forward/backward: %d losses, %s %.7f", losses.n, losses.name[0], losses.value[0]);
  for (int i = 1; i < losses.n; i++) printf(", %s %.7f", losses.name[i], losses.value[i]);
  printf(", total %.7f\n", losses.total);

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
      zt_batch zbt = as_batch(&bt, binary_head);
      zt_pass p = {.B = B, .T = T, .first_sample = (uint64_t)(consumed + mb * B), .seed = SEED, .training = 1,
                   .ltd_keep = ltd ? LTD_KEEP : 0, .ltd_step = (uint64_t)(k - 1)};
      if (ltd) save_ltd_kept(prefix, LTD_LAYERS, L, B, T, LTD_KEEP, SEED, p.ltd_step, p.first_sample);
      zt_losses l = {0};
      zt_model_forward(&m.model, 0, &zbt, &p, &l);
      save_predictions(&m.model, prefix);
      zt_model_backward(&m.model, 1.0f / NMB);
      loss_sum += l.total;
    }
    clipped += dump_train_step(k, loss_sum / NMB, &opt, &sched, &m.table, params, grads, GBS);
    consumed += GBS;
  }
  printf("clipping triggered in %d of %d steps\n", clipped, STEPS);
  zt_bert_free(&m);
  return 0;
}
