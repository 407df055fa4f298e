/* T5's data provider: the setup's checks, the tokenizer's special ids and sentinels, the datasets, and the micro
 * batch (see t5_provider.h). */
#include "data/t5_provider.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "data/bert_data.h"
#include "data/bert_provider.h"
#include "data/t5_dataset.h"
#include "runtime/base/error.h"

typedef struct {
  zt_data_provider base;
  zt_data_setup s;
  zt_bert_vocab vocab;
  zt_t5_vocab t5;
  int32_t *sentinels;
  zt_bert_data data;
  zt_bert_scratch *scratch;
  zt_t5_sample row;          /* one sample */
  int32_t *tokens, *dec, *labels;
  float *loss_mask;
  uint8_t *padding;
} t5_provider;

/* Row r of the micro batch: sample i of split (pretrain_t5.py's get_batch: keys text_enc, text_dec, labels,
 * loss_mask and the masks). */
static void fill_row(t5_provider *p, int split, int r, int64_t i) {
  const int T = p->s.seq_length, TD = p->s.dec_seq_length;
  int member;
  int64_t j;
  zt_bert_data_locate(&p->data, split, i, &member, &j);
  zt_t5_dataset_get(&p->data.split[split].members[member], &p->t5, j, p->scratch, &p->row);
  for (int t = 0; t < T; t++) {
    p->tokens[(size_t)r * T + t] = p->row.text_enc[t];
    p->padding[(size_t)r * T + t] = (uint8_t)!p->row.enc_valid[t];
  }
  for (int t = 0; t < TD; t++) {
    const size_t o = (size_t)r * TD + t;
    p->dec[o] = p->row.text_dec[t];
    p->labels[o] = p->row.labels[t] < 0 ? 0 : p->row.labels[t];
    p->loss_mask[o] = p->row.loss_mask[t] ? 1.0f : 0.0f;
  }
}

static void set_batch(t5_provider *p, zt_batch *b) {
  *b = (zt_batch){.B = p->s.micro_batch, .T = p->s.seq_length, .tokens = p->tokens, .labels = p->labels,
                  .loss_mask = p->loss_mask, .padding = p->padding, .Td = p->s.dec_seq_length, .dec_tokens = p->dec};
}

/* Samples [first, first + B) of split. */
static void load(zt_data_provider *dp, int split, uint64_t first, zt_batch *b) {
  t5_provider *p = dp->impl;
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, split, r, (int64_t)(first + (uint64_t)r));
  set_batch(p, b);
}

/* Samples ids[0 .. B) of split (--dataloader-type cyclic, --repeated-dataloader). */
static void load_ids(zt_data_provider *dp, int split, const int64_t *ids, zt_batch *b) {
  t5_provider *p = dp->impl;
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, split, r, ids[r]);
  set_batch(p, b);
}

/* len(dataset): the split's samples mapping (through the blend). */
static int64_t split_size(const zt_data_provider *dp, int split) {
  const t5_provider *p = dp->impl;
  return zt_bert_data_has(&p->data, split) ? p->data.split[split].size : 0;
}

static int has_split(const zt_data_provider *dp, int split) {
  const t5_provider *p = dp->impl;
  return zt_bert_data_has(&p->data, split);
}

static void provider_free(zt_data_provider *dp) {
  t5_provider *p = dp->impl;
  zt_bert_data_free(&p->data);
  zt_bert_scratch_free(p->scratch);
  free((void *)p->vocab.subword);
  free(p->sentinels);
  free(p->row.text_enc), free(p->row.text_dec), free(p->row.labels), free(p->row.loss_mask);
  free(p->row.enc_valid), free(p->row.dec_valid);
  free(p->tokens), free(p->dec), free(p->labels), free(p->loss_mask), free(p->padding);
  free(p);
}

/* The tokenizer's T5 ids: [BOS], [EOS] and the <extra_id_k> sentinels (Megatron's additional_special_tokens_ids). */
static void t5_vocab(t5_provider *p, const zt_data_setup *s) {
  const char *name = s->tokenizer_name ? s->tokenizer_name : "given";
  p->t5.bos = zt_tokenizer_token_to_id(s->tokenizer, "[BOS]");
  p->t5.eos = zt_tokenizer_token_to_id(s->tokenizer, "[EOS]");
  zt_check(p->t5.bos >= 0 && p->t5.eos >= 0, "--tokenizer-type", "the %s tokenizer has no [BOS]/[EOS] token; "
           "Megatron's T5 data needs them (BertWordPieceLowerCase or BertWordPieceCase add them)", name);
  int n = 0;
  for (;; n++) {
    char tok[32];
    snprintf(tok, sizeof tok, "<extra_id_%d>", n);
    if (zt_tokenizer_token_to_id(s->tokenizer, tok) < 0) break;
  }
  p->sentinels = zt_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t), "T5 sentinels");
  for (int k = 0; k < n; k++) {
    char tok[32];
    snprintf(tok, sizeof tok, "<extra_id_%d>", k);
    p->sentinels[k] = zt_tokenizer_token_to_id(s->tokenizer, tok);
  }
  p->t5.sentinels = p->sentinels;
  p->t5.num_sentinels = n;
  p->t5.max_seq_length_dec = s->dec_seq_length;
}

zt_data_provider *zt_t5_provider_create(const zt_data_setup *s) {
  double mask_prob, ssp; /* Megatron's T5 samples mapping keeps 2 tokens of --encoder-seq-length free */
  zt_sentence_data_check(s, "T5", 2, "--encoder-seq-length", &mask_prob, &ssp);
  zt_check(s->dec_seq_length >= 2, "bad argument value", "--decoder-seq-length %d: the decoder needs at least [BOS] "
           "and one target (>= 2)", s->dec_seq_length);

  t5_provider *p = zt_calloc(1, sizeof *p, "T5 data provider");
  p->base = (zt_data_provider){.kind = "T5", .load = load, .has_split = has_split, .load_ids = load_ids,
                                .split_size = split_size, .free = provider_free, .impl = p};
  p->s = *s;
  zt_bert_vocab_from_tokenizer(&p->vocab, s->tokenizer, s->tokenizer_name);
  t5_vocab(p, s);
  /* create_masked_lm_predictions masks at most masked_lm_prob x the sample's tokens (up to --encoder-seq-length - 2),
   * each span one token or more: that many spans, each needing its own sentinel */
  const int most_spans = (int)floor(mask_prob * (s->seq_length - 2));
  zt_check(p->t5.num_sentinels >= most_spans, "inconsistent arguments", "--vocab-extra-ids %d: a T5 sample of up to "
           "%d tokens (--encoder-seq-length %d - 2) can hold up to %d masked spans (--mask-prob %g), each replaced "
           "by its own sentinel <extra_id_k>; give --vocab-extra-ids %d or more (Megatron fails mid-run with an "
           "IndexError when a sample runs out)", p->t5.num_sentinels, s->seq_length - 2, s->seq_length, most_spans,
           mask_prob, most_spans);
  zt_sentence_data_build(&p->data, s, &p->vocab, "T5", 2, 0, mask_prob, ssp);

  const int T = s->seq_length, TD = s->dec_seq_length;
  const size_t BT = (size_t)s->micro_batch * T, BD = (size_t)s->micro_batch * TD;
  p->scratch = zt_bert_scratch_new();
  p->row = (zt_t5_sample){.text_enc = zt_malloc((size_t)T * 4, "T5 sample"),
                          .text_dec = zt_malloc((size_t)TD * 4, "T5 sample"),
                          .labels = zt_malloc((size_t)TD * 4, "T5 sample"),
                          .loss_mask = zt_malloc((size_t)TD, "T5 sample"), .enc_valid = zt_malloc((size_t)T, "T5 "
                          "sample"), .dec_valid = zt_malloc((size_t)TD, "T5 sample")};
  p->tokens = zt_malloc(BT * 4, "batch tokens");
  p->padding = zt_malloc(BT, "batch padding");
  p->dec = zt_malloc(BD * 4, "batch decoder tokens");
  p->labels = zt_malloc(BD * 4, "batch labels");
  p->loss_mask = zt_malloc(BD * sizeof(float), "batch loss mask");
  return &p->base;
}
