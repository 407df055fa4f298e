/* Megatron's T5Dataset samples (megatron/data/t5_dataset.py) over the BERT samples mapping (data/bert_dataset.h with
 * added_tokens 2 and no binary head: documents of one sentence or more, targets up to --encoder-seq-length - 2):
 * sample idx draws from numpy.random.RandomState(seed + idx); its sentences are joined, truncated to the row's target
 * length and masked by create_masked_lm_predictions with T5's settings (whole words, n-gram lengths min(geometric(0.2),
 * 10), every masked token [MASK]), then pad_and_convert_to_numpy builds the encoder input (each masked span replaced by
 * the next sentinel <extra_id_k>), the decoder input ([BOS], then each span's sentinel and tokens) and the labels
 * (each span's sentinel and tokens, then [EOS]), padded with [PAD] (labels with -1). The attention masks are Megatron's
 * make_attention_mask (a position takes part when its token id is >= 1) and, for the decoder, a causal history mask:
 * the flags here give them. Implemented in data/bert_dataset.c beside BertDataset, whose mapping, scratch and masking
 * it shares; data/t5_provider.h makes pretrain_t5's micro batches of them. */
#ifndef ZT_T5_DATASET_H
#define ZT_T5_DATASET_H

#include <stdint.h>

#include "data/bert_dataset.h"

/* The tokenizer's ids T5 adds (Megatron's tokenizer.bos_token_id, eos_token_id, additional_special_tokens_ids). */
typedef struct {
  int32_t bos, eos;
  const int32_t *sentinels;   /* <extra_id_0>, <extra_id_1>, ... (--vocab-extra-ids of them) */
  int num_sentinels;
  int max_seq_length_dec;     /* --decoder-seq-length */
} zt_t5_vocab;

/* One sample, Megatron's dict as arrays (the caller's): */
typedef struct {
  int32_t *text_enc;    /* [max_seq_length]: the encoder input, then [PAD] */
  int32_t *text_dec;    /* [max_seq_length_dec]: the decoder input, then [PAD] */
  int32_t *labels;      /* [max_seq_length_dec]: the decoder targets, then -1 */
  uint8_t *loss_mask;   /* [max_seq_length_dec]: 1 on the decoder's tokens */
  uint8_t *enc_valid;   /* [max_seq_length]: text_enc >= 1 (make_attention_mask's rule, so a token of id 0 too) */
  uint8_t *dec_valid;   /* [max_seq_length_dec]: text_dec >= 1 */
  int truncated;        /* 'truncated' */
  int num_enc, num_dec; /* tokens before padding */
  int num_spans;        /* masked spans (sentinels used) */
} zt_t5_sample;

/* Sample idx of d (built with added_tokens 2 and binary_head 0); dies naming the dataset when the sample does not fit
 * the decoder length or needs more sentinels than --vocab-extra-ids gives (Megatron fails on both: an assert, and
 * IndexError on the sentinel deque). */
void zt_t5_dataset_get(const zt_bert_dataset *d, const zt_t5_vocab *t5, int64_t idx, zt_bert_scratch *s,
                       zt_t5_sample *out);

#endif
