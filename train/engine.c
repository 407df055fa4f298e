/* Megatron's pretrain loop for the single-process CPU path. */
#include "train/engine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/profile/throughput.h"

_Static_assert((int)ZT_LR_DECAY_LINEAR == (int)ZT_DECAY_LINEAR && (int)ZT_LR_DECAY_COSINE == (int)ZT_DECAY_COSINE &&
                   (int)ZT_LR_DECAY_CONSTANT == (int)ZT_DECAY_CONSTANT && (int)ZT_LR_DECAY_INVSQRT == (int)ZT_DECAY_INVSQRT,
               "args and schedule decay styles must match");

zt_tokenizer *zt_engine_tokenizer(zt_args *a) {
  zt_tokenizer *tok = NULL;
  if (!a->mock_data) {
    const char *name = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type);
    zt_log("> building %s tokenizer ...\n", name);
    zt_tokenizer_spec spec = {.kind = (zt_tokenizer_kind)a->tokenizer_type, .vocab_file = a->vocab_file,
                              .merge_file = a->merge_file, .tokenizer_model = a->tokenizer_model,
                              .vocab_size = a->vocab_size, .vocab_extra_ids = a->vocab_extra_ids};
    tok = zt_tokenizer_create(&spec);
    zt_args_set_vocab_size(a, zt_tokenizer_vocab_size(tok), name);
  }
  zt_log(" > padded vocab (size: %d) with %d dummy tokens (new size: %d)\n", a->vocab_size,
         a->padded_vocab_size - a->vocab_size, a->padded_vocab_size);
  return tok;
}

/* Megatron's train_val_test_num_samples and the datasets behind them. */
static void build_data(zt_engine *e, const zt_tokenizer *tok) {
  const zt_args *a = e->args;
  e->eod = a->vocab_size - 1; /* the mock stream's separator */
  if (a->mock_data) {
    for (int s = 0; s < 3; s++)
      e->data[s] = (zt_mock_data){.vocab_size = a->vocab_size, .seq_length = a->seq_length, .seed = a->seed,
                                  .split_id = (uint64_t)s};
    return;
  }
  e->eod = zt_tokenizer_eod(tok);
  zt_check(e->eod >= 0 || !(a->reset_position_ids || a->reset_attention_mask || a->eod_mask_loss),
           "inconsistent arguments", "--reset-position-ids/--reset-attention-mask/--eod-mask-loss need an "
           "end-of-document token, and the %s tokenizer has none",
           zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type));
  const int64_t gbs = a->global_batch_size;
  zt_gpt_data_config c = {
      .data_path_n = a->data_path.n, .data_path = a->data_path.v,
      .split_path_n = {a->train_data_path.n, a->valid_data_path.n, a->test_data_path.n},
      .split_path = {a->train_data_path.v, a->valid_data_path.v, a->test_data_path.v},
      .split = a->split, .cache_path = a->data_cache_path, .seq_length = a->seq_length, .seed = a->seed,
      .train_exact_num_epochs = a->train_data_exact_num_epochs > 0 ? a->train_data_exact_num_epochs : 0,
      .num_samples = {a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs,
                      (a->train_iters / a->eval_interval + 1) * a->eval_iters * gbs, (int64_t)a->eval_iters * gbs},
      .mmap_warmup = a->mmap_warmup, .vocab_size = a->vocab_size,
      .tokenizer_name = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type)};
  zt_log("> building train, validation, and test datasets ...\n");
  zt_gpt_data_build(&e->gdata, &c);
  e->use_gdata = 1;
  if (a->eval_iters > 0)
    for (int s = 1; s < 3; s++)
      if (!zt_gpt_data_has(&e->gdata, s))
        zt_log(" > no %s documents (--split '%s'): %s evaluation is skipped\n", s == 1 ? "validation" : "test",
               a->split, s == 1 ? "validation" : "test");
  zt_log("> finished creating GPT datasets ...\n");
}

void zt_engine_init(zt_engine *e, const zt_args *a, const zt_tokenizer *tok) {
  memset(e, 0, sizeof(*e));
  e->args = a;
  build_data(e, tok);
  zt_gpt_config c = {
      .num_layers = a->num_layers, .hidden_size = a->hidden_size, .num_heads = a->num_attention_heads,
      .ffn_hidden_size = a->ffn_hidden_size, .max_positions = a->max_position_embeddings,
      .padded_vocab_size = a->padded_vocab_size, .ln_eps = a->layernorm_epsilon,
      .attn_dropout = a->attention_dropout, .hidden_dropout = a->hidden_dropout, .init_std = a->init_method_std,
      .untie_embeddings = a->untie_embeddings_and_output_weights,
      .recompute_full = a->recompute_granularity == ZT_RECOMPUTE_FULL,
      .micro_batch = a->micro_batch_size, .seq_length = a->seq_length};
  zt_log("building GPT model ...\n");
  zt_gpt_build(&e->model, &c, 0);
  zt_gpt_init_params(&e->model, a->seed);
  zt_log(" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): %zu\n",
         zt_gpt_num_params(&e->model));

  zt_opt_config oc = {.kind = a->optimizer == ZT_OPTIMIZER_SGD ? ZT_OPT_SGD : ZT_OPT_ADAM,
                      .beta1 = a->adam_beta1, .beta2 = a->adam_beta2, .eps = a->adam_eps, .adam_w_mode = 1,
                      .momentum = a->sgd_momentum, .weight_decay = a->weight_decay};
  zt_optimizer_init(&e->opt, &oc, &e->model.table, e->model.optim_state);

  /* Megatron's scheduler works in samples: iteration counts are multiplied by the global batch */
  const int64_t gbs = a->global_batch_size;
  int64_t decay = a->lr_decay_samples >= 0 ? a->lr_decay_samples
                  : a->lr_decay_iters >= 0 ? a->lr_decay_iters * gbs
                  : a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs;
  int64_t warmup = a->lr_warmup_fraction >= 0 ? (int64_t)(a->lr_warmup_fraction * decay)
                   : a->lr_warmup_samples > 0 ? a->lr_warmup_samples : a->lr_warmup_iters * gbs;
  zt_check(decay > 0 && warmup <= decay, "learning-rate schedule",
           "warmup of %lld samples exceeds the decay length of %lld samples", (long long)warmup, (long long)decay);
  e->sched = (zt_lr_schedule){.max_lr = a->lr, .min_lr = a->min_lr, .warmup_steps = warmup, .decay_steps = decay,
                              .style = (zt_decay_style)a->lr_decay_style, .num_steps = 0};

  const size_t BT = (size_t)a->micro_batch_size * a->seq_length;
  e->text = zt_malloc((BT + a->micro_batch_size) * sizeof(int32_t), "batch text");
  e->tokens = zt_malloc(BT * sizeof(int32_t), "batch tokens");
  e->targets = zt_malloc(BT * sizeof(int32_t), "batch targets");
  e->loss_mask = zt_malloc(BT * sizeof(float), "loss mask");
  for (size_t i = 0; i < BT; i++) e->loss_mask[i] = 1.0f;
  if (a->reset_position_ids) e->positions = zt_malloc(BT * sizeof(int32_t), "position ids");
  if (a->reset_attention_mask) e->key_start = zt_malloc(BT * sizeof(int32_t), "attention mask starts");

  zt_flops_model fm = {.num_layers = a->num_layers, .hidden_size = a->hidden_size,
                       .num_heads = a->num_attention_heads, .ffn_hidden_size = a->ffn_hidden_size,
                       .padded_vocab_size = a->padded_vocab_size, .seq_length = a->seq_length,
                       .recompute_full = a->recompute_granularity == ZT_RECOMPUTE_FULL};
  e->flops_per_iteration = zt_iteration_flops(&fm, gbs);
}

void zt_engine_free(zt_engine *e) {
  zt_gpt_free(&e->model);
  free(e->text);
  free(e->tokens);
  free(e->targets);
  free(e->loss_mask);
  free(e->positions);
  free(e->key_start);
  if (e->use_gdata) zt_gpt_data_free(&e->gdata);
}

/* Loads micro batch rows from sample `first` on: tokens = text[:, :-1], targets = text[:, 1:]. */
static void load_micro_batch(zt_engine *e, int split, uint64_t first) {
  const zt_args *a = e->args;
  const int B = a->micro_batch_size, T = a->seq_length;
  for (int b = 0; b < B; b++) {
    int32_t *row = e->text + (size_t)b * (T + 1);
    if (e->use_gdata) {
      zt_gpt_data_get(&e->gdata, split, (int64_t)(first + b), row); /* ids checked at open */
    } else {
      zt_mock_data_sample(&e->data[split], first + b, row);
    }
    memcpy(e->tokens + (size_t)b * T, row, (size_t)T * sizeof(int32_t));
    memcpy(e->targets + (size_t)b * T, row + 1, (size_t)T * sizeof(int32_t));
    if (a->eod_mask_loss || e->positions || e->key_start)
      zt_gpt_ltor_masks(e->tokens + (size_t)b * T, T, e->eod, a->eod_mask_loss, e->loss_mask + (size_t)b * T,
                        e->positions ? e->positions + (size_t)b * T : NULL,
                        e->key_start ? e->key_start + (size_t)b * T : NULL);
  }
}

static void check_finite_loss(const zt_engine *e, float loss, int micro, const char *what) {
  if (isfinite(loss)) return;
  zt_fatal("non-finite loss", "%s is %s at iteration %lld (micro batch %d); the run stops: lower --lr or "
           "check --init-method-std", what, isnan(loss) ? "nan" : "inf", (long long)e->iteration + 1, micro);
}

float zt_engine_train_step(zt_engine *e, double *grad_norm) {
  const zt_args *a = e->args;
  const int nmb = a->num_microbatches, B = a->micro_batch_size;
  double loss_sum = 0.0;
  for (int mb = 0; mb < nmb; mb++) {
    /* Megatron's sampler: each step-slice of mbs x dp samples; this rank takes its mbs rows */
    uint64_t first = (uint64_t)e->consumed_samples + (uint64_t)mb * B * a->data_parallel_size;
    load_micro_batch(e, 0, first);
    zt_pass pass = {.B = B, .T = a->seq_length, .first_sample = first, .seed = a->seed, .training = 1,
                    .key_start = e->key_start};
    float loss = zt_gpt_forward(&e->model, e->tokens, e->positions, e->targets, e->loss_mask, &pass);
    check_finite_loss(e, loss, mb, "lm loss");
    zt_gpt_backward(&e->model, 1.0f / nmb);
    loss_sum += loss;
  }
  size_t n = e->model.table.numel;
  double norm = zt_grad_global_norm(e->model.grads, n);
  if (!isfinite(norm))
    zt_fatal("non-finite gradient", "grad norm is %s at iteration %lld; the run stops", isnan(norm) ? "nan" : "inf",
             (long long)e->iteration + 1);
  float clip = 1.0f;
  if (a->clip_grad > 0) {
    double coeff = a->clip_grad / (norm + 1e-6);
    if (coeff < 1.0) clip = (float)coeff;
  }
  zt_optimizer_step(&e->opt, e->model.params, e->model.grads, zt_lr_get(&e->sched), clip);
  zt_lr_step(&e->sched, a->global_batch_size);
  e->iteration++;
  e->consumed_samples += a->global_batch_size;
  e->consumed_tokens += (int64_t)a->global_batch_size * a->seq_length;
  *grad_norm = norm;
  return (float)(loss_sum / nmb);
}

float zt_engine_evaluate(zt_engine *e, int split) {
  const zt_args *a = e->args;
  const int B = a->micro_batch_size;
  double total = 0.0;
  int count = 0;
  uint64_t base = split == 1 ? (uint64_t)e->consumed_valid_samples : 0;
  for (int it = 0; it < a->eval_iters; it++)
    for (int mb = 0; mb < a->num_microbatches; mb++) {
      uint64_t first = base + ((uint64_t)it * a->num_microbatches + mb) * B * a->data_parallel_size;
      load_micro_batch(e, split, first);
      zt_pass pass = {.B = B, .T = a->seq_length, .first_sample = first, .seed = a->seed, .training = 0,
                      .key_start = e->key_start};
      total += zt_gpt_forward(&e->model, e->tokens, e->positions, e->targets, e->loss_mask, &pass);
      count++;
    }
  if (split == 1) e->consumed_valid_samples += (int64_t)a->eval_iters * a->global_batch_size;
  return count ? (float)(total / count) : 0.0f;
}

static void print_validation(const char *prefix, float loss) {
  char line[512];
  double ppl = exp(loss < 20 ? loss : 20);
  int len = snprintf(line, sizeof line, " validation loss at %s | lm loss value: %.6E | lm loss PPL: %.6E | ",
                     prefix, loss, ppl);
  char dashes[512];
  int n = len + 1 < (int)sizeof dashes - 1 ? len + 1 : (int)sizeof dashes - 1;
  memset(dashes, '-', (size_t)n);
  dashes[n] = 0;
  zt_log("%s\n%s\n%s\n", dashes, line, dashes);
}

static void print_log_line(const zt_engine *e, double elapsed_per_iter, float loss, double grad_norm) {
  const zt_args *a = e->args;
  const double samples_per_s = a->global_batch_size / elapsed_per_iter;
  const int world = zt_world_size();
  zt_log(" iteration %8lld/%8lld | consumed samples: %12lld | consumed tokens: %12lld |"
         " elapsed time per iteration (ms): %.1f | learning rate: %.3E | global batch size: %5d |"
         " lm loss: %.6E | loss scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d |"
         " number of nan iterations: %3d | samples per second: %.3f | tokens per gpu per second (tgs): %.3f |"
         " TFLOPs: %.2f |\n",
         (long long)e->iteration, (long long)a->train_iters, (long long)e->consumed_samples,
         (long long)e->consumed_tokens, elapsed_per_iter * 1000.0, zt_lr_get(&e->sched), a->global_batch_size,
         loss, 1.0, grad_norm, 0, 0, samples_per_s, samples_per_s * a->seq_length / world,
         e->flops_per_iteration / (elapsed_per_iter * world * 1e12));
}

static int has_split(const zt_engine *e, int split) { return !e->use_gdata || zt_gpt_data_has(&e->gdata, split); }

void zt_engine_run(zt_engine *e) {
  const zt_args *a = e->args;
  if (!a->skip_train) {
    zt_log("training ...\n");
    double interval_start = zt_now(), loss_acc = 0.0;
    int in_interval = 0;
    while (e->iteration < a->train_iters) {
      double norm;
      loss_acc += zt_engine_train_step(e, &norm);
      in_interval++;
      if (e->iteration % a->log_interval == 0) {
        double now = zt_now();
        print_log_line(e, (now - interval_start) / in_interval, (float)(loss_acc / in_interval), norm);
        interval_start = now;
        loss_acc = 0.0;
        in_interval = 0;
      }
      if (a->eval_iters > 0 && has_split(e, 1) && e->iteration % a->eval_interval == 0) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "iteration %lld", (long long)e->iteration);
        double t0 = zt_now();
        print_validation(prefix, zt_engine_evaluate(e, 1));
        interval_start += zt_now() - t0; /* validation time is not training time */
      }
    }
    zt_log("[after training is done]\n");
  }
  if (a->eval_iters > 0) {
    if (has_split(e, 1)) print_validation("the end of training for val data", zt_engine_evaluate(e, 1));
    if (has_split(e, 2)) print_validation("the end of training for test data", zt_engine_evaluate(e, 2));
  }
}
