/* Megatron's BertDataset (and, through data/t5_dataset.h, T5Dataset's samples) over one indexed dataset of sentences
 * (preprocess_data --split-sentences: items are sentences, doc_idx groups them into documents) and a range of its
 * documents, reproduced exactly
 * (reference: Megatron-DeepSpeed's bert_dataset.py, dataset_utils.py and helpers.cpp build_mapping):
 *
 * - the samples mapping: rows (first sentence, end sentence, target length) built as helpers.cpp builds them
 *   (whole epochs until max_num_samples is reached, target lengths max_seq_length - 3 or, with probability
 *   1/round(1/short_seq_prob), 2 + r % (max_seq_length - 4) from std::mt19937(seed); documents with fewer than
 *   2 sentences (1 without the binary head) or, with several sentences, one longer than 512 tokens are skipped;
 *   then the rows are shuffled with std::mt19937_64(seed + 1)). It is cached as a NumPy file under Megatron's
 *   name, {prefix}_{name}_indexmap[_exact{E}ep][_{N}mns]_{max_seq_length-3}msl_{ssp:.2f}ssp_{seed}s.npy (uint32,
 *   [n, 3]), next to the data or in --data-cache-path, written atomically by rank 0 while the others wait;
 *   Megatron's own file is loaded as it is (and checked against the dataset).
 * - sample idx: numpy.random.RandomState(seed + idx) drives the sentence split and order swap, the truncation,
 *   and the whole-word n-gram masking (15% by default, 80/10/10), then [CLS]/[SEP], token types and padding, each
 *   draw as NumPy makes it. */
#ifndef ZT_BERT_DATASET_H
#define ZT_BERT_DATASET_H

#include <stdint.h>

#include "data/indexed_dataset.h"

/* What masking needs of the tokenizer (Megatron's tokenizer.cls/sep/mask/pad, inv_vocab and vocab_id_list). */
typedef struct {
  int32_t cls, sep, mask, pad;
  int64_t size;               /* len(vocab_id_list): random replacements are ids 0..size-1 */
  const uint8_t *subword;     /* [size]: 1 where the token starts with "##" (not a word start) */
} zt_bert_vocab;

typedef struct {
  const char *prefix;         /* the data prefix as the user wrote it (the cache file name starts with it) */
  const char *name;           /* "train", "valid", "test" */
  int64_t doc_begin, doc_end; /* documents [begin, end) of the indexed dataset */
  int64_t num_samples;        /* max_num_samples (> 0) */
  int64_t exact_num_epochs;   /* --train-data-exact-num-epochs (train only), or 0 */
  int max_seq_length;         /* --seq-length (samples are padded to it; targets are at most this - added_tokens) */
  int added_tokens;           /* tokens a sample adds to its text: 3 for BERT ([CLS] and two [SEP]), 2 for T5 (Megatron's
                                 T5Dataset passes max_seq_length - 2 to get_samples_mapping) */
  double masked_lm_prob;      /* --mask-prob, in (0, 1) */
  double short_seq_prob;      /* --short-seq-prob, in [0, 1] */
  uint64_t seed;              /* --seed, in [1, 2^31 - 2] (helpers.cpp's int32 seed and seed + 1) */
  int binary_head;            /* 2-sentence samples with the sentence-order swap (else 1 segment) */
  const char *cache_path;     /* --data-cache-path or NULL */
  const char *forced_mapping; /* --train-idx-path (train only): the samples mapping's file instead of Megatron's name
                                 and --data-cache-path, loaded when there, else built there; NULL: none */
  int sampled;                /* the samples are drawn by index (a data sampler, or a loader that repeats or cycles):
                                 fewer than num_samples are allowed */
  const zt_bert_vocab *vocab; /* not owned; must outlive the dataset */
} zt_bert_dataset_spec;

typedef struct {
  const zt_indexed_dataset *data; /* not owned */
  const zt_bert_vocab *vocab;     /* not owned */
  char name[16];
  int max_seq_length, binary_head, added_tokens;
  double masked_lm_prob;
  uint64_t seed;
  int64_t sent_begin, sent_end;   /* the sentences of the documents: doc_idx[doc_begin], doc_idx[doc_end] */
  int64_t num_samples;            /* rows of the mapping: the dataset's length */
  int wide;                       /* rows are uint64 (more than 2^32 - 1 sentences), else uint32 */
  void *mapping;                  /* [num_samples, 3]: first sentence, end sentence, target length */
  char *cache_file;               /* where the mapping was found or written */
} zt_bert_dataset;

/* One sample, Megatron's dict as arrays of max_seq_length (the caller's). */
typedef struct {
  int32_t *text;         /* 'text': [CLS] A [SEP] B [SEP] (masked), then [PAD] */
  int32_t *types;        /* 'types': 0 for [CLS] A [SEP], 1 for B [SEP], pad_id on padding (as Megatron) */
  int32_t *labels;       /* 'labels': the original token at masked positions, else -1 */
  uint8_t *loss_mask;    /* 'loss_mask': 1 at masked positions */
  uint8_t *padding_mask; /* 'padding_mask': 1 on tokens, 0 on padding */
  int is_random;         /* 'is_random': A and B were swapped */
  int truncated;         /* 'truncated' */
  int num_tokens;        /* tokens before padding */
} zt_bert_sample;

/* Scratch a caller keeps across samples (grows to the longest sample); not shared between threads. */
typedef struct zt_bert_scratch zt_bert_scratch;
zt_bert_scratch *zt_bert_scratch_new(void);
void zt_bert_scratch_free(zt_bert_scratch *s);

/* Builds (or loads from the cache) the samples mapping of spec over data; dies naming the file or the flag. */
void zt_bert_dataset_build(zt_bert_dataset *d, const zt_indexed_dataset *data, const zt_bert_dataset_spec *spec);
void zt_bert_dataset_free(zt_bert_dataset *d);

/* Row i of the mapping. */
void zt_bert_dataset_row(const zt_bert_dataset *d, int64_t i, int64_t *first, int64_t *end, int64_t *target);

/* Sample idx (0 <= idx < num_samples), Megatron's BertDataset[idx]; out's arrays hold max_seq_length each. */
void zt_bert_dataset_get(const zt_bert_dataset *d, int64_t idx, zt_bert_scratch *s, zt_bert_sample *out);

/* Megatron's cache file name for spec (malloc'd): {prefix}_{name}_indexmap..._{seed}s.npy. */
char *zt_bert_mapping_name(const zt_bert_dataset_spec *spec);

/* helpers.cpp build_mapping over documents [doc_begin, doc_end) of data, without the cache: returns the rows
 * (malloc'd, uint32 or, when *wide, uint64; [*n, 3]). num_epochs: helpers.cpp's (INT32_MAX - 1: no limit). */
void *zt_bert_build_mapping(const zt_indexed_dataset *data, int64_t doc_begin, int64_t doc_end, int32_t num_epochs,
                            uint64_t max_num_samples, int32_t max_seq_length, double short_seq_prob, int32_t seed,
                            int min_num_sent, int verbose, int64_t *n, int *wide);

/* The cumulative n-gram probabilities np.random.choice(ngrams, p=pvals/pvals.sum()) uses (cdf[0..2], for the test
 * against NumPy). */
void zt_bert_ngram_cdf(double cdf[3]);

#endif
