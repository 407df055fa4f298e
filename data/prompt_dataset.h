/* Megatron-DeepSpeed's supervised fine-tuning data (megatron/data/prompt_dataset.py SupervisedDataset, used by
 * finetune_llama.py): a JSON array of Alpaca examples {"instruction", "input", "output"}, each made into Stanford
 * Alpaca's prompt (with or without the input) followed by the output and the tokenizer's eos token, tokenized by
 * the HFTokenizer into max_length = --seq-length + 1 ids (cut, special tokens, [PAD] to the end), and its labels:
 * the same ids with the prompt's ids (as many as the prompt alone encodes to, bos included) set to the pad id.
 * data/prompt_provider.h makes finetune_llama.py's batches of them. */
#ifndef ZT_PROMPT_DATASET_H
#define ZT_PROMPT_DATASET_H

#include <stdint.h>

#include "data/tokenizer/hf_tokenizer.h"

typedef struct {
  int64_t n;           /* examples */
  int L;               /* ids per row (--seq-length + 1) */
  int32_t pad;         /* the tokenizer's pad id */
  int64_t *offset;     /* [n + 1]: example i's ids are ids[offset[i] .. offset[i+1]), its row without the trailing
                          pad ids */
  int32_t *ids;
  int32_t *source_len; /* [n]: the ids of the prompt row that are not the pad id */
  int64_t full_rows;   /* examples whose row is full: L ids or more, cut at L */
  int64_t no_target;   /* examples with no label left (the prompt alone fills the row) */
} zt_prompt_dataset;

/* Reads and tokenizes `path` (--data-path). Anything but an array of objects with string "instruction" and
 * "output" (and an optional string "input") dies naming the file and the example. */
void zt_prompt_dataset_load(zt_prompt_dataset *d, const char *path, const zt_hf_tok *tok, int L);
void zt_prompt_dataset_free(zt_prompt_dataset *d);

/* Example i's row of L input ids and its L labels (the prompt's positions and the padding hold the pad id). */
void zt_prompt_dataset_get(const zt_prompt_dataset *d, int64_t i, int32_t *input_ids, int32_t *labels);

#endif
