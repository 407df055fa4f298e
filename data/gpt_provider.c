/* GPT's data provider: the dataset build (Megatron's train_valid_test_num_samples were computed by the trainer)
 * and the batch of inputs, labels and masks. */
#include "data/gpt_provider.h"

#include <stdlib.h>
#include <string.h>

#include "data/gpt_data.h"
#include "data/mock_data.h"
#include "runtime/base/error.h"

typedef struct {
  zt_data_provider base;
  zt_data_setup s;
  zt_mock_data mock[3];      /* --mock-data: train, valid, test */
  zt_gpt_data gdata;         /* --data-path and friends */
  int use_gdata;
  int32_t eod;               /* end-of-document id (tokenizer's; V-1 for mock data) */
  int32_t *text;             /* [mbs, seq+1] */
  int32_t *tokens, *labels;  /* [mbs, seq] */
  float *loss_mask;          /* [mbs, seq] */
  int32_t *positions;        /* [mbs, seq] with --reset-position-ids, else NULL */
  int32_t *key_start;        /* [mbs, seq] with --reset-attention-mask, else NULL */
  /* seqlen_reshape (load_ids_reshape): the re-cut rows, room for (mbs + 1) x (seq + 1) of each, made when first used */
  int32_t *rs_tokens, *rs_labels, *rs_positions, *rs_key_start;
  float *rs_loss_mask;
} gpt_provider;

/* Row r of the batch from sample i of split: tokens = text[:-1], labels = text[1:], and the masks. */
static void fill_row(gpt_provider *p, int split, int r, uint64_t i) {
  const zt_data_setup *s = &p->s;
  const int T = s->seq_length;
  int32_t *row = p->text + (size_t)r * (T + 1);
  if (p->use_gdata) zt_gpt_data_get(&p->gdata, split, (int64_t)i, row); /* ids checked at open */
  else zt_mock_data_sample(&p->mock[split], i, row);
  memcpy(p->tokens + (size_t)r * T, row, (size_t)T * sizeof(int32_t));
  memcpy(p->labels + (size_t)r * T, row + 1, (size_t)T * sizeof(int32_t));
  if (s->eod_mask_loss || p->positions || p->key_start)
    zt_gpt_ltor_masks(p->tokens + (size_t)r * T, T, p->eod, s->eod_mask_loss, p->loss_mask + (size_t)r * T,
                      p->positions ? p->positions + (size_t)r * T : NULL,
                      p->key_start ? p->key_start + (size_t)r * T : NULL);
}

static void set_batch(const gpt_provider *p, zt_batch *b) {
  *b = (zt_batch){.B = p->s.micro_batch, .T = p->s.seq_length, .tokens = p->tokens, .positions = p->positions,
                  .labels = p->labels, .loss_mask = p->loss_mask, .key_start = p->key_start};
}

/* Samples [first, first + B) of split. */
static void load(zt_data_provider *dp, int split, uint64_t first, zt_batch *b) {
  gpt_provider *p = dp->impl;
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, split, r, first + (uint64_t)r);
  set_batch(p, b);
}

/* Samples ids[0 .. B) of split (the data sampler's order). */
static void load_ids(zt_data_provider *dp, int split, const int64_t *ids, zt_batch *b) {
  gpt_provider *p = dp->impl;
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, split, r, (uint64_t)ids[r]); /* zt_gpt_data_get checks i */
  set_batch(p, b);
}

/* The batch of ids re-cut into rows of T inputs (Megatron-DeepSpeed's data_post_process, then get_batch on its
 * rows). */
static int load_ids_reshape(zt_data_provider *dp, int split, const int64_t *ids, int T, zt_batch *b) {
  gpt_provider *p = dp->impl;
  const zt_data_setup *s = &p->s;
  const int B = s->micro_batch, S1 = s->seq_length + 1, T1 = T + 1;
  zt_check(T >= 1 && T < s->seq_length, "internal error", "seqlen_reshape to %d tokens of %d", T, s->seq_length);
  load_ids(dp, split, ids, b); /* the sample rows in p->text */
  const size_t cap = (size_t)(B + 1) * S1; /* R T < B S1 + T (zt_gpt_reshape_rows) */
  if (!p->rs_tokens) {
    p->rs_tokens = zt_malloc(cap * sizeof(int32_t), "reshaped tokens");
    p->rs_labels = zt_malloc(cap * sizeof(int32_t), "reshaped labels");
    p->rs_loss_mask = zt_malloc(cap * sizeof(float), "reshaped loss mask");
    if (s->reset_position_ids) p->rs_positions = zt_malloc(cap * sizeof(int32_t), "reshaped position ids");
    if (s->reset_attention_mask) p->rs_key_start = zt_malloc(cap * sizeof(int32_t), "reshaped attention starts");
  }
  const int R = zt_gpt_reshape_rows(B, S1, T1);
  for (int i = 0; i < R; i++) {
    int src, off;
    zt_gpt_reshape_source(i, B, S1, T1, &src, &off);
    const int32_t *piece = p->text + (size_t)src * S1 + off;
    const size_t o = (size_t)i * T;
    memcpy(p->rs_tokens + o, piece, (size_t)T * sizeof(int32_t));
    memcpy(p->rs_labels + o, piece + 1, (size_t)T * sizeof(int32_t));
    for (int t = 0; t < T; t++) p->rs_loss_mask[o + t] = 1.0f;
    if (s->eod_mask_loss || p->rs_positions || p->rs_key_start)
      zt_gpt_ltor_masks(p->rs_tokens + o, T, p->eod, s->eod_mask_loss, p->rs_loss_mask + o,
                        p->rs_positions ? p->rs_positions + o : NULL, p->rs_key_start ? p->rs_key_start + o : NULL);
  }
  *b = (zt_batch){.B = R, .T = T, .tokens = p->rs_tokens, .positions = p->rs_positions, .labels = p->rs_labels,
                  .loss_mask = p->rs_loss_mask, .key_start = p->rs_key_start};
  return R;
}

/* len(dataset): the split's samples (--mock-data: the samples the trainer asked for). */
static int64_t split_size(const zt_data_provider *dp, int split) {
  const gpt_provider *p = dp->impl;
  return p->use_gdata ? (zt_gpt_data_has(&p->gdata, split) ? p->gdata.split[split].size : 0) : p->s.num_samples[split];
}

static int has_split(const zt_data_provider *dp, int split) {
  const gpt_provider *p = dp->impl;
  return !p->use_gdata || zt_gpt_data_has(&p->gdata, split);
}

static void provider_free(zt_data_provider *dp) {
  gpt_provider *p = dp->impl;
  if (p->use_gdata) zt_gpt_data_free(&p->gdata);
  free(p->text), free(p->tokens), free(p->labels), free(p->loss_mask), free(p->positions), free(p->key_start);
  free(p->rs_tokens), free(p->rs_labels), free(p->rs_loss_mask), free(p->rs_positions), free(p->rs_key_start);
  free(p);
}

zt_data_provider *zt_gpt_provider_create(const zt_data_setup *s) {
  gpt_provider *p = zt_calloc(1, sizeof *p, "GPT data provider");
  p->base = (zt_data_provider){.kind = "GPT", .load = load, .has_split = has_split, .load_ids = load_ids,
                                .load_ids_reshape = load_ids_reshape, .split_size = split_size, .free = provider_free,
                                .impl = p};
  p->s = *s;
  p->eod = s->vocab_size - 1; /* the mock stream's separator */
  if (s->mock_data) {
    /* the stream draws document tokens from [0, V-1) and separates documents by V-1: V must be at least 2 */
    zt_check(s->vocab_size >= 2, "--vocab-size", "%d: --mock-data needs a vocabulary of at least 2 tokens (document "
             "tokens 0..V-2 and the end-of-document token V-1)", s->vocab_size);
    for (int k = 0; k < 3; k++)
      p->mock[k] = (zt_mock_data){.vocab_size = s->vocab_size, .seq_length = s->seq_length, .seed = s->seed,
                                  .split_id = (uint64_t)k};
  } else {
    p->eod = zt_tokenizer_eod(s->tokenizer);
    zt_check(p->eod >= 0 || !(s->reset_position_ids || s->reset_attention_mask || s->eod_mask_loss),
             "inconsistent arguments", "--reset-position-ids/--reset-attention-mask/--eod-mask-loss need an "
             "end-of-document token, and the %s tokenizer has none", s->tokenizer_name);
    zt_gpt_data_config c = {
        .data_path_n = s->data_path_n, .data_path = s->data_path,
        .split_path_n = {s->split_path_n[0], s->split_path_n[1], s->split_path_n[2]},
        .split_path = {s->split_path[0], s->split_path[1], s->split_path[2]}, .split = s->split,
        .cache_path = s->cache_path, .seq_length = s->seq_length, .seed = s->seed,
        .train_index_files = {s->train_index_files[0], s->train_index_files[1], s->train_index_files[2],
                              s->train_index_files[3]},
        .train_exact_num_epochs = s->train_exact_num_epochs, .train_sampled = s->train_sampled,
        .num_samples = {s->num_samples[0], s->num_samples[1], s->num_samples[2]}, .mmap_warmup = s->mmap_warmup,
        .vocab_size = s->vocab_size, .tokenizer_name = s->tokenizer_name};
    zt_log("> building train, validation, and test datasets ...\n");
    zt_gpt_data_build(&p->gdata, &c);
    p->use_gdata = 1;
    if (s->eval_iters > 0)
      for (int k = 1; k < 3; k++)
        if (!zt_gpt_data_has(&p->gdata, k))
          zt_log(" > no %s documents (--split '%s'): %s evaluation is skipped\n", k == 1 ? "validation" : "test",
                 s->split, k == 1 ? "validation" : "test");
    zt_log("> finished creating GPT datasets ...\n");
  }
  const size_t BT = (size_t)s->micro_batch * s->seq_length;
  p->text = zt_malloc((BT + s->micro_batch) * sizeof(int32_t), "batch text");
  p->tokens = zt_malloc(BT * sizeof(int32_t), "batch tokens");
  p->labels = zt_malloc(BT * sizeof(int32_t), "batch labels");
  p->loss_mask = zt_malloc(BT * sizeof(float), "loss mask");
  for (size_t i = 0; i < BT; i++) p->loss_mask[i] = 1.0f;
  if (s->reset_position_ids) p->positions = zt_malloc(BT * sizeof(int32_t), "position ids");
  if (s->reset_attention_mask) p->key_start = zt_malloc(BT * sizeof(int32_t), "attention mask starts");
  return &p->base;
}
