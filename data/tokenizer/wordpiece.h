/* BERT WordPiece as Megatron's _BertWordPieceTokenizer runs it (bert_tokenization.py's FullTokenizer:
 * BasicTokenizer then WordpieceTokenizer) for BertWordPieceLowerCase / BertWordPieceCase, with the
 * tokens Megatron adds to vocab.txt ([BOS], [EOS], <extra_id_N>). Internal interface behind
 * zt_tokenizer_create (tokenizer.c).
 *
 * Threading: a loaded zt_wordpiece is immutable; each thread passes its own scratch. */
#ifndef ZT_WORDPIECE_H
#define ZT_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

typedef struct zt_wordpiece zt_wordpiece;
typedef struct zt_wordpiece_scratch zt_wordpiece_scratch;

/* Loads vocab.txt (one token a line, id = line number, each line stripped as Python's str.strip()),
 * checks [CLS] [SEP] [PAD] [MASK] are there, then adds [BOS], [EOS] and <extra_id_0..extra_ids-1>
 * where missing. Dies naming the file (and the line) on errors. */
zt_wordpiece *zt_wordpiece_load(const char *vocab_txt, int lower_case, int extra_ids);
void zt_wordpiece_free(zt_wordpiece *w);

/* Megatron's vocab_size: len(vocab) after the added tokens. */
int zt_wordpiece_vocab_size(const zt_wordpiece *w);
/* The id of a token string (exact match) or -1. */
int32_t zt_wordpiece_token_id(const zt_wordpiece *w, const char *token);
/* inv_vocab[id]: the token string of an id, or NULL where none has it. */
const char *zt_wordpiece_id_token(const zt_wordpiece *w, int32_t id);

zt_wordpiece_scratch *zt_wordpiece_scratch_new(void);
void zt_wordpiece_scratch_free(zt_wordpiece_scratch *s);

/* Appends the ids of text[0..len) (invalid UTF-8 is read as U+FFFD, which BERT then drops). */
void zt_wordpiece_encode(const zt_wordpiece *w, zt_wordpiece_scratch *s, const char *text, size_t len, zt_ids *out);
/* Megatron's _BertWordPieceTokenizer.decode: tokens joined by spaces, " ##" removed, stripped, then
 * the clean-up of " ." " ?" " !" " ," " ' " " n't" " 'm" " 's" " 've" " 're". An id without a token
 * dies naming it. */
char *zt_wordpiece_decode(const zt_wordpiece *w, const int32_t *ids, size_t n, size_t *len_out);

/* BasicTokenizer alone (no vocabulary): its output tokens joined by single spaces, as a malloc'd
 * string (for tests against an independent implementation). */
char *zt_wordpiece_basic_tokenize(int lower_case, zt_wordpiece_scratch *s, const char *text, size_t len,
                                  size_t *len_out);

#endif
