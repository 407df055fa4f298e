/* BERT's data provider: the setup's checks, the tokenizer's special ids and subword table, the datasets, and the
 * micro batch (see bert_provider.h). */
#include "data/bert_provider.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bert_data.h"
#include "runtime/base/error.h"

typedef struct {
  zt_data_provider base;
  zt_data_setup s;
  zt_bert_vocab vocab;
  uint8_t *subword;
  zt_bert_data data;
  zt_bert_scratch *scratch;
  zt_bert_sample row;        /* one sample, [T] each */
  int32_t *tokens, *types, *labels, *sentence;
  float *loss_mask;
  uint8_t *padding;
} bert_provider;

double zt_bert_float_arg(float f) {
  char buf[32];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
    if (strtof(buf, NULL) == f) return strtod(buf, NULL);
  }
  return (double)f;
}

void zt_bert_vocab_from_tokenizer(zt_bert_vocab *v, const zt_tokenizer *t, const char *name) {
  const char *special[4] = {"[CLS]", "[SEP]", "[MASK]", "[PAD]"};
  int32_t id[4];
  for (int k = 0; k < 4; k++) {
    id[k] = zt_tokenizer_token_to_id(t, special[k]);
    zt_check(id[k] >= 0, "--tokenizer-type", "the %s tokenizer has no %s token; Megatron's BERT data needs [CLS], "
             "[SEP], [MASK] and [PAD] (use BertWordPieceLowerCase or BertWordPieceCase with a BERT vocab.txt)",
             name ? name : "given", special[k]);
  }
  v->cls = id[0], v->sep = id[1], v->mask = id[2], v->pad = id[3];
  v->size = zt_tokenizer_vocab_size(t);
  uint8_t *sub = zt_malloc((size_t)(v->size > 0 ? v->size : 1), "subword table");
  for (int64_t i = 0; i < v->size; i++) {
    const char *tok = zt_tokenizer_id_to_token(t, (int32_t)i);
    zt_check(tok, "--vocab-file", "the %s vocabulary has no token with id %lld of its %lld (a vocab.txt line repeated "
             "earlier? Megatron's random replacements draw from its inv_vocab, which such a file reorders)",
             name ? name : "given", (long long)i, (long long)v->size);
    sub[i] = strncmp(tok, "##", 2) == 0;
  }
  v->subword = sub;
}

/* Row r of the batch from sample i of split: Megatron's get_batch (keys text, types, labels, is_random, loss_mask,
 * padding_mask). */
static void fill_row(bert_provider *p, int split, int r, int64_t i) {
  const int T = p->s.seq_length;
  zt_bert_data_get(&p->data, split, i, p->scratch, &p->row);
  const size_t o = (size_t)r * T;
  for (int t = 0; t < T; t++) {
    const int pad = !p->row.padding_mask[t];
    p->tokens[o + t] = p->row.text[t];
    p->types[o + t] = pad ? 0 : p->row.types[t];
    p->labels[o + t] = p->row.labels[t] < 0 ? 0 : p->row.labels[t];
    p->loss_mask[o + t] = p->row.loss_mask[t] ? 1.0f : 0.0f;
    p->padding[o + t] = (uint8_t)pad;
  }
  p->sentence[r] = p->row.is_random;
}

static void set_batch(const bert_provider *p, zt_batch *b) {
  const int head = p->s.binary_head;
  *b = (zt_batch){.B = p->s.micro_batch, .T = p->s.seq_length, .tokens = p->tokens,
                  .token_types = head ? p->types : NULL, .labels = p->labels, .loss_mask = p->loss_mask,
                  .padding = p->padding, .sentence_labels = head ? p->sentence : NULL};
}

/* Samples [first, first + B) of split. */
static void load(zt_data_provider *dp, int split, uint64_t first, zt_batch *b) {
  bert_provider *p = dp->impl;
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, split, r, (int64_t)(first + (uint64_t)r));
  set_batch(p, b);
}

/* Samples ids[0 .. B) of split (the data sampler's order; zt_bert_data_get checks each id). */
static void load_ids(zt_data_provider *dp, int split, const int64_t *ids, zt_batch *b) {
  bert_provider *p = dp->impl;
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, split, r, ids[r]);
  set_batch(p, b);
}

/* len(dataset): the split's samples mapping (through the blend). */
static int64_t split_size(const zt_data_provider *dp, int split) {
  const bert_provider *p = dp->impl;
  return zt_bert_data_has(&p->data, split) ? p->data.split[split].size : 0;
}

static int has_split(const zt_data_provider *dp, int split) {
  const bert_provider *p = dp->impl;
  return zt_bert_data_has(&p->data, split);
}

static void provider_free(zt_data_provider *dp) {
  bert_provider *p = dp->impl;
  zt_bert_data_free(&p->data);
  zt_bert_scratch_free(p->scratch);
  free(p->subword);
  free(p->row.text), free(p->row.types), free(p->row.labels), free(p->row.loss_mask), free(p->row.padding_mask);
  free(p->tokens), free(p->types), free(p->labels), free(p->sentence), free(p->loss_mask), free(p->padding);
  free(p);
}

void zt_sentence_data_check(const zt_data_setup *s, const char *model, int added, const char *seq_flag,
                            double *mask_prob, double *short_seq_prob) {
  const double mp = zt_bert_float_arg(s->mask_prob), ssp = zt_bert_float_arg(s->short_seq_prob);
  zt_check(!s->mock_data, "inconsistent arguments", "--mock-data is GPT's synthetic stream; %s reads a sentence "
           "dataset (--data-path)", model);
  zt_check(mp > 0 && mp < 1, "bad argument value", "--mask-prob %g: the share of tokens to mask must be in (0, 1) "
           "(Megatron's default 0.15)", mp);
  zt_check(ssp >= 0 && ssp <= 1, "bad argument value", "--short-seq-prob %g must be in [0, 1] (Megatron's default "
           "0.1)", ssp);
  zt_check(s->seq_length >= added + 2, "bad argument value", "%s %d leaves %d tokens besides the %d special ones a "
           "%s sample adds; a sample needs at least 2 (%s >= %d)", seq_flag, s->seq_length, s->seq_length - added,
           added, model, seq_flag, added + 2);
  zt_check(s->seed >= 1 && s->seed <= INT32_MAX - 1, "bad argument value", "--seed %llu: Megatron's samples mapping "
           "(helpers.cpp) takes an int32 seed in [1, %d]", (unsigned long long)s->seed, INT32_MAX - 1);
  zt_check(s->micro_batch > 0, "bad argument value", "--micro-batch-size %d must be > 0", s->micro_batch);
  zt_check(s->tokenizer, "missing argument", "%s needs a tokenizer (--tokenizer-type BertWordPieceLowerCase "
           "--vocab-file vocab.txt)", model);
  *mask_prob = mp, *short_seq_prob = ssp;
}

void zt_sentence_data_build(zt_bert_data *g, const zt_data_setup *s, const zt_bert_vocab *vocab, const char *model,
                            int added_tokens, int binary_head, double mask_prob, double short_seq_prob) {
  zt_bert_data_config c = {
      .data_path_n = s->data_path_n, .data_path = s->data_path,
      .split_path_n = {s->split_path_n[0], s->split_path_n[1], s->split_path_n[2]},
      .split_path = {s->split_path[0], s->split_path[1], s->split_path[2]}, .split = s->split,
      .cache_path = s->cache_path, .max_seq_length = s->seq_length, .added_tokens = added_tokens, .seed = s->seed,
      .masked_lm_prob = mask_prob, .short_seq_prob = short_seq_prob, .binary_head = binary_head,
      .train_exact_num_epochs = s->train_exact_num_epochs, .train_idx_path = s->train_idx_path,
      .train_sampled = s->train_sampled, .num_samples = {s->num_samples[0], s->num_samples[1], s->num_samples[2]},
      .mmap_warmup = s->mmap_warmup,
      .vocab_size = vocab->size, .tokenizer_name = s->tokenizer_name, .vocab = vocab};
  zt_log("> building train, validation, and test datasets for %s ...\n", model);
  zt_bert_data_build(g, &c);
  if (s->eval_iters > 0)
    for (int k = 1; k < 3; k++)
      if (!zt_bert_data_has(g, k))
        zt_log(" > no %s documents (--split '%s'): %s evaluation is skipped\n", k == 1 ? "validation" : "test",
               s->split, k == 1 ? "validation" : "test");
  zt_log("> finished creating %s datasets ...\n", model);
}

zt_data_provider *zt_bert_provider_create(const zt_data_setup *s) {
  double mask_prob, ssp; /* [CLS] A [SEP] B [SEP] */
  zt_sentence_data_check(s, "BERT", 3, "--seq-length", &mask_prob, &ssp);

  bert_provider *p = zt_calloc(1, sizeof *p, "BERT data provider");
  p->base = (zt_data_provider){.kind = "BERT", .load = load, .has_split = has_split, .load_ids = load_ids,
                                .split_size = split_size, .free = provider_free, .impl = p};
  p->s = *s;
  zt_bert_vocab_from_tokenizer(&p->vocab, s->tokenizer, s->tokenizer_name);
  p->subword = (uint8_t *)p->vocab.subword;
  zt_sentence_data_build(&p->data, s, &p->vocab, "BERT", 3, s->binary_head, mask_prob, ssp);

  const int T = s->seq_length;
  const size_t BT = (size_t)s->micro_batch * T;
  p->scratch = zt_bert_scratch_new();
  p->row = (zt_bert_sample){.text = zt_malloc((size_t)T * 4, "BERT sample"), .types = zt_malloc((size_t)T * 4, "BERT "
                            "sample"), .labels = zt_malloc((size_t)T * 4, "BERT sample"),
                            .loss_mask = zt_malloc((size_t)T, "BERT sample"),
                            .padding_mask = zt_malloc((size_t)T, "BERT sample")};
  p->tokens = zt_malloc(BT * 4, "batch tokens");
  p->types = zt_malloc(BT * 4, "batch token types");
  p->labels = zt_malloc(BT * 4, "batch labels");
  p->loss_mask = zt_malloc(BT * sizeof(float), "batch loss mask");
  p->padding = zt_malloc(BT, "batch padding");
  p->sentence = zt_malloc((size_t)s->micro_batch * 4, "batch sentence labels");
  return &p->base;
}
