/* BERT's data provider (data/provider.h): Megatron's BERT datasets (data/bert_data.h) over sentence-split data and a
 * BERT WordPiece tokenizer, and the micro batch pretrain_bert's get_batch makes of them:
 *   tokens [B, T]         'text' ([CLS] A [SEP] B [SEP], masked, padded with [PAD]; T = --seq-length)
 *   token_types [B, T]    'types' (0 for A, 1 for B; 0 on padding), NULL with --bert-no-binary-head (Megatron
 *                         passes tokentype_ids=None then)
 *   labels [B, T]         'labels': the original token at masked positions, 0 elsewhere (Megatron's -1, made a
 *                         valid id; those positions have loss_mask 0)
 *   loss_mask [B, T]      'loss_mask' as float: 1 at masked positions
 *   padding [B, T]        nonzero where Megatron's padding_mask is 0
 *   sentence_labels [B]   'is_random' (A and B swapped), NULL with --bert-no-binary-head */
#ifndef ZT_BERT_PROVIDER_H
#define ZT_BERT_PROVIDER_H

#include "data/bert_data.h"
#include "data/bert_dataset.h"
#include "data/provider.h"

/* Checks the setup (refusing, naming the flag and the numbers: --mask-prob outside (0, 1), --short-seq-prob
 * outside [0, 1], --seq-length below 5, a --seed helpers.cpp cannot take, --mock-data, a tokenizer without
 * [CLS]/[SEP]/[MASK]/[PAD], data that is not split into sentences), builds or loads the samples mappings and prints
 * Megatron's dataset lines. */
zt_data_provider *zt_bert_provider_create(const zt_data_setup *s);

/* Megatron's BERT view of a tokenizer: the special ids, and for each id of vocab_id_list (0..vocab_size-1) whether
 * its token starts with "##". Dies naming the tokenizer when it has no [CLS]/[SEP]/[MASK]/[PAD] token or an id
 * without a token (a vocab.txt with a repeated line, whose inv_vocab Megatron would reorder). subword is malloc'd
 * (free it with free()). */
void zt_bert_vocab_from_tokenizer(zt_bert_vocab *v, const zt_tokenizer *t, const char *tokenizer_name);

/* The checks BERT's and T5's providers share, before any work (naming the flag and the numbers): no --mock-data,
 * --mask-prob in (0, 1), --short-seq-prob in [0, 1], at least 2 tokens per sample besides the `added` special ones
 * (`seq_flag` names the length), a seed helpers.cpp can take, a micro batch, a tokenizer. Returns the two
 * probabilities as the decimals the user typed (zt_bert_float_arg). `model` is "BERT" or "T5" for the messages. */
void zt_sentence_data_check(const zt_data_setup *s, const char *model, int added, const char *seq_flag,
                            double *mask_prob, double *short_seq_prob);

/* Builds BERT's or T5's datasets (data/bert_data.h: `added_tokens` 3 for BERT, 2 for T5; sentence pairs with
 * binary_head) from the setup's data flags, with Megatron's lines around them and a note for each evaluation split
 * that has no documents. */
void zt_sentence_data_build(zt_bert_data *g, const zt_data_setup *s, const zt_bert_vocab *vocab, const char *model,
                            int added_tokens, int binary_head, double mask_prob, double short_seq_prob);

/* A float flag as the decimal the user typed (0.15f -> 0.15): the shortest decimal that reads back as f, as a
 * double, so --mask-prob and --short-seq-prob enter the arithmetic (and the cache name) as Python's floats do. */
double zt_bert_float_arg(float f);

#endif
