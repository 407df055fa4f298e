/* T5's data provider (data/provider.h): Megatron's T5 datasets (data/bert_data.h's sentence-level samples mapping with
 * 2 added tokens and no sentence pairs, each sample built by data/t5_dataset.h) over sentence-split data and a BERT
 * WordPiece tokenizer with --vocab-extra-ids sentinels, and the micro batch pretrain_t5.py's get_batch makes of them:
 *   tokens [B, T]       'text_enc' (T = --encoder-seq-length), padding [B, T]: nonzero where it is [PAD] (id < 1)
 *   dec_tokens [B, Td]  'text_dec' (Td = --decoder-seq-length)
 *   labels [B, Td]      'labels' (Megatron's -1 on padding made 0; those positions have loss_mask 0)
 *   loss_mask [B, Td]   'loss_mask' as float
 * The three attention masks are what the model builds from these: the encoder's key padding, the decoder's causal
 * mask, the encoder padding as the cross-attention's key mask (docs/t5.md says why the query side needs no mask). */
#ifndef ZT_T5_PROVIDER_H
#define ZT_T5_PROVIDER_H

#include "data/provider.h"

/* Checks the setup (refusing, naming the flag and the numbers: --mask-prob outside (0, 1), --short-seq-prob outside
 * [0, 1], --encoder-seq-length below 4, fewer --vocab-extra-ids sentinels than the masked spans a sample can hold, a
 * --seed helpers.cpp cannot take, --mock-data, a tokenizer without the BERT and T5 special tokens, data that is not
 * split into sentences), builds or loads the samples mappings and prints Megatron's dataset lines. */
zt_data_provider *zt_t5_provider_create(const zt_data_setup *s);

#endif
