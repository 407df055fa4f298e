/* Megatron's GPTDataset over one indexed dataset and a range of its documents, with the index
 * arrays built exactly as Megatron-DeepSpeed builds them (reference: megatron-deepspeed.md §4.3):
 * the number of epochs, doc_idx (documents repeated per epoch and shuffled, the last epoch shuffled
 * separately when less than 80% of it is needed), sample_idx (where each seq_length+1 window
 * starts), shuffle_idx; all shuffles from NumPy's legacy MT19937 seeded with --seed. So sample i is
 * the same tokens as in Megatron-DeepSpeed for the same data, split, sizes and seed.
 *
 * The arrays are cached as .npy files named by the md5 of the description, as Megatron names them:
 * {md5}.dsc, {md5}_doc_idx.npy, {md5}_sample_idx.npy, {md5}_shuffle_idx.npy, looked up in
 * dirname(prefix)/index-cache/ and then in --data-cache-path, built by rank 0 into --data-cache-path
 * when given (else into the default directory) and written atomically (.dsc last); other ranks wait
 * for the .dsc and load. Megatron-DeepSpeed's own caches for the same description are loaded too. */
#ifndef ZT_GPT_DATASET_H
#define ZT_GPT_DATASET_H

#include <stdint.h>

#include "data/indexed_dataset.h"

typedef struct {
  const zt_indexed_dataset *data; /* not owned */
  char name[16];                  /* train, valid or test */
  int seq_length;
  int64_t num_epochs;
  int64_t num_samples;            /* the dataset's length: len(shuffle_idx) */
  int32_t *doc_idx;               /* [doc_idx_len] */
  int64_t doc_idx_len;
  int64_t *sample_idx;            /* [(total_samples + 1) * 2]: (position in doc_idx, offset) */
  int64_t total_samples;          /* (E * tokens_per_epoch - 1) // seq_length */
  int64_t *shuffle_idx;           /* [num_samples] */
  char desc_hash[33];
} zt_gpt_dataset;

typedef struct {
  const char *prefix;             /* the data prefix as the user wrote it (part of the description) */
  const char *name;               /* "train", "valid", "test" */
  int64_t doc_begin, doc_end;     /* documents [begin, end) of the indexed dataset */
  int64_t num_samples;            /* requested: the dataset has at least this many */
  int seq_length;
  uint64_t seed;
  const char *split_string;       /* --split as given (part of the description) */
  const char *cache_path;         /* --data-cache-path or NULL */
  int64_t exact_num_epochs;       /* --train-data-exact-num-epochs (train only), or 0 */
  int sampled;                    /* the data sampler draws from it by index: it may hold fewer than num_samples
                                   * (--train-data-exact-num-epochs, or given index files of fewer samples: Megatron-
                                   * DeepSpeed builds or loads them as they are, and DeepSpeed's sampler draws within
                                   * them) */
  /* Megatron-DeepSpeed's --train-desc-path, --train-doc-idx-path, --train-sample-idx-path, --train-shuffle-idx-path
   * (train only): these names replace {md5}.dsc, {md5}_doc_idx.npy, ... joined to each cache directory as
   * os.path.join does (an absolute path is used as it is); NULL entries keep the default names */
  const char *index_files[4];
} zt_gpt_dataset_spec;

/* Builds (or loads from the cache) the index arrays for spec over data. */
void zt_gpt_dataset_build(zt_gpt_dataset *d, const zt_indexed_dataset *data, const zt_gpt_dataset_spec *spec);
void zt_gpt_dataset_free(zt_gpt_dataset *d);

/* Sample i (0 <= i < num_samples): seq_length + 1 token ids (Megatron's {'text': ...}). */
void zt_gpt_dataset_get(const zt_gpt_dataset *d, int64_t i, int32_t *out);

/* Index building without the cache (also used by the tests and the benchmark). */
int64_t zt_gpt_num_epochs(int64_t tokens_per_epoch, int seq_length, int64_t num_samples);
void zt_gpt_build_indices(zt_gpt_dataset *d, const zt_indexed_dataset *data, const zt_gpt_dataset_spec *spec,
                          int64_t tokens_per_epoch);

/* Megatron's --split parsing over n documents: bounds[0..3] with bounds[0] = 0 and bounds[3] = n.
 * Dies naming --split on malformed input. */
void zt_split_bounds(const char *split, int64_t n, int64_t bounds[4]);

/* Index-cache file helpers (shared with the BERT samples mapping, data/bert_dataset.c). */
/* dir + "/" + name (malloc'd); no slash is added after a trailing one. */
char *zt_path_join(const char *dir, const char *name);
/* The directory part of a path (malloc'd; "" for a bare name, "/" for "/x"). */
char *zt_path_dirname(const char *path);
/* 1 if path is a regular file. */
int zt_file_exists(const char *path);
/* Creates dir and its parents; dies naming it (and --data-cache-path) when it cannot. */
void zt_cache_make_dir(const char *dir);
/* zt_npy_save through a temporary name (path.tmp.PID) and a rename, so a reader never sees a partial file. */
void zt_cache_save_npy(const char *path, const void *data, const char *descr, int ndim, const int64_t *shape);

#endif
