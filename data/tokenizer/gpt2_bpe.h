/* GPT-2 byte-level BPE (Megatron's GPT2BPETokenizer, i.e. OpenAI's encoder.py): vocab.json + merges.txt,
 * the byte-to-unicode table, the GPT-2 pre-tokenization regex (Python `regex` semantics, \s = White_Space)
 * and the rank-ordered merge loop. Internal interface behind zt_tokenizer_create (tokenizer.c).
 *
 * Threading: a loaded zt_gpt2_bpe is immutable and may be shared; each thread passes its own cache. */
#ifndef ZT_GPT2_BPE_H
#define ZT_GPT2_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

typedef struct zt_gpt2_bpe zt_gpt2_bpe;
typedef struct zt_gpt2_bpe_cache zt_gpt2_bpe_cache;

/* Loads vocab.json (token string -> id) and merges.txt (a `#version` first line is skipped; rank =
 * line order). A missing or malformed file dies naming the file (and the line where there is one). */
zt_gpt2_bpe *zt_gpt2_bpe_load(const char *vocab_json, const char *merges_txt);
void zt_gpt2_bpe_free(zt_gpt2_bpe *b);

/* Megatron's vocab_size: the number of entries of vocab.json (50257 for GPT-2). */
int zt_gpt2_bpe_vocab_size(const zt_gpt2_bpe *b);
/* The id of <|endoftext|> (50256 for GPT-2); dies at load time if vocab.json lacks it. */
int32_t zt_gpt2_bpe_eod(const zt_gpt2_bpe *b);

/* A per-thread cache of pre-tokenized word -> ids (bounded memory) plus scratch buffers. */
zt_gpt2_bpe_cache *zt_gpt2_bpe_cache_new(void);
void zt_gpt2_bpe_cache_free(zt_gpt2_bpe_cache *c);

/* Appends the ids of text[0..len) to out. Invalid UTF-8 is read as U+FFFD (errors='replace'). The
 * literal string "<|endoftext|>" in the text is encoded as plain text (Megatron: special_tokens=[]). */
void zt_gpt2_bpe_encode(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, const char *text, size_t len, zt_ids *out);

/* The bytes of ids[0..n) through the byte decoder, with invalid UTF-8 replaced as errors='replace'
 * does, as a malloc'd NUL-terminated string (*len_out = its length without the NUL). An id outside
 * the vocabulary dies naming it. */
char *zt_gpt2_bpe_decode(const zt_gpt2_bpe *b, const int32_t *ids, size_t n, size_t *len_out);

/* The pre-tokenization alone (for tests and tools): stores the end offset of each pre-token of the valid
 * UTF-8 text[0..len) in ends[0..max_ends) and returns the number of pre-tokens. */
size_t zt_gpt2_bpe_pretokenize(const char *text, size_t len, size_t *ends, size_t max_ends);

#endif
