/* The GPT training data as Megatron-DeepSpeed assembles it from the command line:
 *   --data-path P                 one dataset, split into train/valid/test documents by --split
 *   --data-path w1 P1 w2 P2 ...   each dataset split by --split, then blended by weight per split
 *                                 (each asked for ceil(n * w * 1.005) samples)
 *   --train-data-path / --valid-data-path / --test-data-path [w P ...]
 *                                 separate datasets per split (all documents; --split unused)
 * Sample counts per split come from the trainer (Megatron's train_val_test_num_samples). */
#ifndef ZT_GPT_DATA_H
#define ZT_GPT_DATA_H

#include <stdint.h>

#include "data/blendable_dataset.h"
#include "data/gpt_dataset.h"
#include "data/indexed_dataset.h"

typedef struct {
  int data_path_n;
  const char *const *data_path;        /* --data-path words */
  int split_path_n[3];
  const char *const *split_path[3];    /* --train/valid/test-data-path words */
  const char *split;                   /* --split */
  const char *cache_path;              /* --data-cache-path or NULL */
  const char *train_index_files[4];    /* the training split's .dsc / doc / sample / shuffle files (NULL: {md5}) */
  int seq_length;
  uint64_t seed;
  int64_t train_exact_num_epochs;      /* 0: not given */
  int train_sampled;                   /* training samples drawn by index: fewer than num_samples[0] are fine */
  int64_t num_samples[3];              /* train, valid, test */
  int mmap_warmup;                     /* --mmap-warmup: read the .bin files once at start */
  int64_t vocab_size;                  /* every token id must be below this (0: not checked) */
  const char *tokenizer_name;          /* for that message */
} zt_gpt_data_config;

typedef struct {
  int num;                             /* member datasets: 0 = this split is absent */
  zt_gpt_dataset *members;
  int blended;
  zt_blend_index blend;
  int64_t size;
} zt_gpt_split;

typedef struct {
  int num_files;
  zt_indexed_dataset *files;
  zt_gpt_split split[3];
} zt_gpt_data;

/* Parses the path lists (weights, prefixes), opens and validates the datasets, builds or loads the
 * index arrays. Every problem dies naming the flag or the file before training starts. */
void zt_gpt_data_build(zt_gpt_data *g, const zt_gpt_data_config *cfg);
void zt_gpt_data_free(zt_gpt_data *g);

/* 1 if split (0 train, 1 valid, 2 test) has data. */
static inline int zt_gpt_data_has(const zt_gpt_data *g, int split) { return g->split[split].num > 0; }
/* Sample i of split: seq_length + 1 token ids. */
void zt_gpt_data_get(const zt_gpt_data *g, int split, int64_t i, int32_t *out);

/* ---- helpers shared with the BERT data (data/bert_data.c) ---------------------------------------- */
/* A parsed --data-path style word list: one prefix (weight 1, no blending) or weight/prefix pairs. */
typedef struct {
  int n;
  double weights[ZT_BLEND_MAX_DATASETS];
  const char *prefixes[ZT_BLEND_MAX_DATASETS];
} zt_data_path_list;
/* Parses words (of flag, for the messages); dies naming the flag and the word on malformed input. */
void zt_data_path_list_parse(zt_data_path_list *p, const char *flag, int nwords, const char *const *words);
/* --mmap-warmup: reads one byte per page of the .bin. */
void zt_data_mmap_warmup(const zt_indexed_dataset *d);
/* One parallel pass over the .bin: every token id must be in [0, vocab_size) (dies naming the file, the id range
 * and the tokenizer; vocab_size <= 0: no check). Logs the range and the time. */
void zt_data_check_token_ids(const zt_indexed_dataset *d, int64_t vocab_size, const char *tokenizer_name);

/* Megatron's get_ltor_masks_and_position_ids for one row of T input tokens: loss_mask (1, or 0 on
 * eod when eod_mask_loss), pos (NULL, or positions restarting after each eod: --reset-position-ids),
 * key_start (NULL, or for each query the first key it may see: after the last eod strictly before
 * it, --reset-attention-mask). loss_mask is only written when eod_mask_loss. */
void zt_gpt_ltor_masks(const int32_t *tokens, int T, int32_t eod, int eod_mask_loss, float *loss_mask,
                       int32_t *pos, int32_t *key_start);

/* Megatron-DeepSpeed's seqlen_reshape (pretrain_gpt.py data_post_process at a difficulty d below --seq-length): B
 * sample rows of S1 = --seq-length + 1 tokens are re-cut into rows of d1 = d + 1 tokens: every sample's first
 * floor(S1 / d1) pieces, sample after sample, then every sample's last d1 tokens; the first R rows are kept, R =
 * ceil(B S1 / d1) but at most the rows made, and one less when odd and above 1. zt_gpt_reshape_rows returns R;
 * zt_gpt_reshape_source gives row i's sample row (src) and first token (off) in it. */
int zt_gpt_reshape_rows(int B, int S1, int d1);
void zt_gpt_reshape_source(int i, int B, int S1, int d1, int *src, int *off);

#endif
