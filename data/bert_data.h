/* The BERT (and T5) training data as Megatron-DeepSpeed's dataset_utils.build_train_valid_test_datasets assembles it:
 *   --data-path P                 one sentence dataset, its documents split into train/valid/test by --split
 *   --data-path w1 P1 w2 P2 ...   each dataset split by --split, then blended per split (each asked for
 *                                 ceil(n * w * 1.005) samples; data/blendable_dataset.h)
 *   --train-data-path / --valid-data-path / --test-data-path [w P ...]
 *                                 separate datasets per split (all their documents), blended the same way
 * Each member is a BertDataset (data/bert_dataset.h). A split asked for no samples is not built. */
#ifndef ZT_BERT_DATA_H
#define ZT_BERT_DATA_H

#include <stdint.h>

#include "data/bert_dataset.h"
#include "data/blendable_dataset.h"
#include "data/indexed_dataset.h"

typedef struct {
  int data_path_n;
  const char *const *data_path;     /* --data-path words */
  int split_path_n[3];
  const char *const *split_path[3]; /* --train/valid/test-data-path words */
  const char *split;                /* --split */
  const char *cache_path;           /* --data-cache-path or NULL */
  int max_seq_length;               /* --seq-length (T5: --encoder-seq-length) */
  int added_tokens;                 /* the special tokens a sample adds: 3 for BERT ([CLS] and two [SEP]), 2 for T5 */
  uint64_t seed;
  double masked_lm_prob, short_seq_prob;
  int binary_head;
  int64_t train_exact_num_epochs;   /* 0: not given */
  const char *train_idx_path;       /* --train-idx-path: the training samples mapping's file, or NULL */
  int train_sampled;                /* the training split may hold fewer than num_samples[0] (zt_data_setup's) */
  int64_t num_samples[3];           /* train, valid, test */
  int mmap_warmup;
  int64_t vocab_size;               /* every token id must be below this */
  const char *tokenizer_name;       /* for the messages */
  const zt_bert_vocab *vocab;       /* not owned */
} zt_bert_data_config;

typedef struct {
  int num;                          /* member datasets: 0 = this split is absent */
  zt_bert_dataset *members;
  int blended;
  zt_blend_index blend;
  int64_t size;
} zt_bert_split;

typedef struct {
  int num_files;
  zt_indexed_dataset *files;
  zt_bert_split split[3];
} zt_bert_data;

/* Parses the path lists, opens and checks the datasets (sentence-split, token ids within the vocabulary), builds
 * or loads the samples mappings. Every problem dies naming the flag or the file before training starts. */
void zt_bert_data_build(zt_bert_data *g, const zt_bert_data_config *c);
void zt_bert_data_free(zt_bert_data *g);

static inline int zt_bert_data_has(const zt_bert_data *g, int split) { return g->split[split].num > 0; }
/* Sample i of split (through the blend); out's arrays hold max_seq_length each. */
void zt_bert_data_get(const zt_bert_data *g, int split, int64_t i, zt_bert_scratch *s, zt_bert_sample *out);
/* The member and its sample index that sample i of split comes from. */
void zt_bert_data_locate(const zt_bert_data *g, int split, int64_t i, int *member, int64_t *member_index);

#endif
