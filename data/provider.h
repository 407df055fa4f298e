/* The data provider of a model kind: what the engine asks of the data, whatever the model (Megatron's
 * train_valid_test_datasets_provider plus get_batch). Built from a zt_data_setup (the data flags, already
 * validated, and the sample counts the trainer wants), it fills a micro batch (models/model.h's zt_batch) with
 * samples [first, first + B) of a split, in Megatron's order, and says which splits exist. One implementation per
 * model kind: GPT's is data/gpt_provider.c. */
#ifndef ZT_PROVIDER_H
#define ZT_PROVIDER_H

#include <stdint.h>

#include "data/tokenizer/tokenizer.h"
#include "models/model.h"

typedef struct {
  int mock_data;                       /* --mock-data: the synthetic stream (data/mock_data.h) */
  int data_path_n;
  const char *const *data_path;        /* --data-path words */
  int split_path_n[3];
  const char *const *split_path[3];    /* --train/valid/test-data-path words */
  const char *split;                   /* --split */
  const char *cache_path;              /* --data-cache-path or NULL */
  const char *train_index_files[4];    /* --train-desc-path, --train-doc-idx-path, --train-sample-idx-path,
                                        * --train-shuffle-idx-path (GPT), NULL when not given */
  int micro_batch, seq_length;
  uint64_t seed;
  int64_t train_exact_num_epochs;      /* 0: not given */
  const char *train_idx_path;          /* --train-idx-path (BERT, T5: the training samples mapping's file), or NULL */
  int train_sampled;                   /* the training samples are drawn by index (the data sampler of
                                        * train/data_sampler.h, or data/pretraining_sampler.h's cyclic or repeated one):
                                        * the training split may hold fewer than num_samples[0] */
  int64_t num_samples[3];              /* train, valid, test */
  int mmap_warmup;
  int vocab_size;                      /* the tokenizer's (not padded) */
  const zt_tokenizer *tokenizer;       /* NULL with --mock-data */
  const char *tokenizer_name;
  int reset_position_ids, reset_attention_mask, eod_mask_loss;
  int eval_iters;                      /* > 0: a missing validation or test split is reported */
  /* BERT and T5 (sentence-level samples mapping, masking) */
  float mask_prob;                     /* --mask-prob */
  float short_seq_prob;                /* --short-seq-prob */
  int binary_head;                     /* BERT's sentence-order pairs (not --bert-no-binary-head) */
  int dec_seq_length;                  /* T5: --decoder-seq-length (seq_length is --encoder-seq-length) */
} zt_data_setup;

typedef struct zt_data_provider zt_data_provider;
struct zt_data_provider {
  const char *kind; /* "GPT" */
  /* Fills b (its arrays are the provider's, valid until the next load) with samples [first, first + B) of split
   * (0 train, 1 valid, 2 test). */
  void (*load)(zt_data_provider *p, int split, uint64_t first, zt_batch *b);
  int (*has_split)(const zt_data_provider *p, int split);
  /* Optional (NULL where the kind has no data sampler, train/data_sampler.h): the same batch from the B samples
   * ids[0 .. B) of split, each below split_size(split), the length of the split's dataset (Megatron's len(dataset)). */
  void (*load_ids)(zt_data_provider *p, int split, const int64_t *ids, zt_batch *b);
  int64_t (*split_size)(const zt_data_provider *p, int split);
  /* Optional (GPT; NULL elsewhere): Megatron-DeepSpeed's seqlen_reshape of the batch load_ids fills, at a difficulty
   * of T < seq_length tokens: its sample rows re-cut into R rows of T inputs (data/gpt_data.h zt_gpt_reshape_rows),
   * each row's labels, loss mask, positions and attention starts made as for a sample of T tokens; b gets B = R and
   * always a loss mask. Returns R. */
  int (*load_ids_reshape)(zt_data_provider *p, int split, const int64_t *ids, int T, zt_batch *b);
  void (*free)(zt_data_provider *p);
  void *impl;
};

static inline void zt_data_load(zt_data_provider *p, int split, uint64_t first, zt_batch *b) {
  p->load(p, split, first, b);
}
static inline int zt_data_has_split(const zt_data_provider *p, int split) { return p->has_split(p, split); }
static inline void zt_data_free(zt_data_provider *p) {
  if (p) p->free(p);
}

#endif
