/* Megatron's MMapIndexedDataset (.bin/.idx), byte-compatible (reference: megatron-deepspeed.md §4.1).
 *
 * .idx: magic "MMIDIDX\0\0", uint64 version 1, uint8 dtype code, uint64 N (items), uint64 D
 * (doc_idx length = documents + 1), int32 sizes[N], int64 pointers[N] (byte offsets into .bin),
 * int64 doc_idx[D]; all little-endian and unaligned (arrays start at byte 34).
 * .bin: the items' tokens back to back in the dtype.
 *
 * The reader maps both files and checks everything it can against the file sizes before use:
 * magic, version, dtype code, array lengths, pointers = prefix sums of sizes, doc_idx monotone
 * from 0 to N, .bin length; a bad file dies naming the file and the numbers. */
#ifndef ZT_INDEXED_DATASET_H
#define ZT_INDEXED_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
  ZT_IDX_UINT8 = 1, ZT_IDX_INT8 = 2, ZT_IDX_INT16 = 3, ZT_IDX_INT32 = 4,
  ZT_IDX_INT64 = 5, ZT_IDX_FLOAT64 = 6, ZT_IDX_FLOAT32 = 7, ZT_IDX_UINT16 = 8,
} zt_idx_dtype;

#define ZT_IDX_HEADER_BYTES 34

typedef struct {
  char *prefix;
  zt_idx_dtype dtype;
  int itemsize;
  int64_t num_items;           /* N: sequences (documents for GPT, sentences for BERT) */
  int64_t num_docs;            /* D - 1 */
  const uint8_t *idx, *bin;    /* the mappings */
  size_t idx_bytes, bin_bytes;
} zt_indexed_dataset;

/* Opens prefix.idx and prefix.bin (validated as above; dies on any inconsistency). */
void zt_indexed_open(zt_indexed_dataset *d, const char *prefix);
void zt_indexed_close(zt_indexed_dataset *d);

static inline int32_t zt_indexed_size(const zt_indexed_dataset *d, int64_t i) {
  int32_t v;
  memcpy(&v, d->idx + ZT_IDX_HEADER_BYTES + 4 * (size_t)i, 4);
  return v;
}
static inline int64_t zt_indexed_pointer(const zt_indexed_dataset *d, int64_t i) {
  int64_t v;
  memcpy(&v, d->idx + ZT_IDX_HEADER_BYTES + 4 * (size_t)d->num_items + 8 * (size_t)i, 8);
  return v;
}
/* doc_idx[k], k in 0..num_docs */
static inline int64_t zt_indexed_doc(const zt_indexed_dataset *d, int64_t k) {
  int64_t v;
  memcpy(&v, d->idx + ZT_IDX_HEADER_BYTES + 12 * (size_t)d->num_items + 8 * (size_t)k, 8);
  return v;
}

/* Megatron's get(i, offset, length): `length` tokens of item i from `offset`, converted to int32
 * (out of range arguments, or values that do not fit int32, die naming the dataset). */
void zt_indexed_get(const zt_indexed_dataset *d, int64_t i, int64_t offset, int64_t length, int32_t *out);

/* ---- writer (Megatron's MMapIndexedDatasetBuilder) ---------------------------------------------
 * Writes into prefix.bin.tmp / prefix.idx.tmp; finish() syncs and renames them into place (.bin
 * first, .idx last), so an interrupted run never leaves a complete-looking pair. */
typedef struct zt_indexed_builder zt_indexed_builder;

/* Megatron's make_builder choice: uint16 when vocab_size < 65500, else int32. */
zt_idx_dtype zt_indexed_best_dtype(int64_t vocab_size);
const char *zt_idx_dtype_name(zt_idx_dtype dtype);

zt_indexed_builder *zt_indexed_builder_open(const char *prefix, zt_idx_dtype dtype);
/* Appends one item (a sequence of token ids; each must fit the dtype). */
void zt_indexed_builder_add_item(zt_indexed_builder *b, const int32_t *ids, int64_t n);
/* Closes the current document (doc_idx gets the current item count). */
void zt_indexed_builder_end_document(zt_indexed_builder *b);
/* Appends every item and document of an existing dataset (same dtype), like merge_file_. */
void zt_indexed_builder_merge(zt_indexed_builder *b, const char *other_prefix);
/* Writes the .idx, syncs, renames both files into place and frees b. */
void zt_indexed_builder_finish(zt_indexed_builder *b);
/* Removes the temporary files and frees b (used on errors and signals). */
void zt_indexed_builder_abort(zt_indexed_builder *b);
/* Items and documents added so far. */
int64_t zt_indexed_builder_num_items(const zt_indexed_builder *b);
int64_t zt_indexed_builder_num_docs(const zt_indexed_builder *b);
/* Optional first half of finish: flushes and syncs the .bin.tmp, writes and syncs the .idx.tmp.
 * Calling it on every builder before finishing any keeps the window between renames short. */
void zt_indexed_builder_sync(zt_indexed_builder *b);
/* Installs SIGINT/SIGTERM/SIGHUP/SIGQUIT handlers that remove the temporaries of every open builder
 * and then die of the signal (exit via zt_fatal removes them in any case, through atexit). */
void zt_indexed_cleanup_on_signals(void);

#endif
