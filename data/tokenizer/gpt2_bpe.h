/* GPT-2 byte-level BPE (Megatron's GPT2BPETokenizer, i.e. OpenAI's encoder.py): vocab.json + merges.txt,
 * the byte-to-unicode table, the GPT-2 pre-tokenization regex (Python `regex` semantics, \s = White_Space)
 * and the rank-ordered merge loop. Internal interface behind zt_tokenizer_create (tokenizer.c). The same
 * machinery loads the byte-level BPE model of a Hugging Face tokenizer.json (hf_tokenizer.c), with Llama-3's
 * pre-tokenization regex and the tokenizers library's ignore_merges.
 *
 * Threading: a loaded zt_gpt2_bpe is immutable and may be shared; each thread passes its own cache. */
#ifndef ZT_GPT2_BPE_H
#define ZT_GPT2_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

typedef struct zt_gpt2_bpe zt_gpt2_bpe;
struct cJSON;

/* The pre-tokenization regex: GPT-2's, Qwen2's (Llama-3's with \p{N} for \p{N}{1,3}), or Llama-3's (tiktoken's
 * cl100k pattern:
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
 * \s+(?!\S)|\s+). */
typedef enum { ZT_BPE_PRETOK_GPT2 = 0, ZT_BPE_PRETOK_LLAMA3 = 1, ZT_BPE_PRETOK_QWEN2 = 2 } zt_bpe_pretok;
typedef struct zt_gpt2_bpe_cache zt_gpt2_bpe_cache;

/* Loads vocab.json (token string -> id) and merges.txt (a `#version` first line is skipped; rank =
 * line order). A missing or malformed file dies naming the file (and the line where there is one). */
zt_gpt2_bpe *zt_gpt2_bpe_load(const char *vocab_json, const char *merges_txt);
void zt_gpt2_bpe_free(zt_gpt2_bpe *b);
/* vocab.json + merges.txt as transformers' slow tokenizers read them (Qwen2Tokenizer): no <|endoftext|> needed (eod
 * -1), each merges line stripped, a first "#version:" line skipped, the last line kept without its newline. */
zt_gpt2_bpe *zt_gpt2_bpe_load_hf(const char *vocab_json, const char *merges_txt, zt_bpe_pretok pretok);
/* A tokenizer.json BPE model's "vocab" object and "merges" array (each "a b" or ["a", "b"]; rank = position), as the
 * tokenizers library builds it: every merge's parts and result must be vocab tokens and every byte's character must
 * be one, else it dies naming `where` (the file) and the entry. ignore_merges: a pre-token that is itself a vocab
 * token encodes as that token. There is no eod (zt_gpt2_bpe_eod returns -1). */
zt_gpt2_bpe *zt_gpt2_bpe_from_json(const struct cJSON *vocab, const struct cJSON *merges, zt_bpe_pretok pretok,
                                   int ignore_merges, const char *where);
/* The id of a token spelled in the byte alphabet (as in vocab.json), or -1. */
int32_t zt_gpt2_bpe_token_id(const zt_gpt2_bpe *b, const char *token);
/* The bytes id stands for (*len of them), or NULL when the id is no byte-alphabet token of the vocabulary. */
const uint8_t *zt_gpt2_bpe_id_bytes(const zt_gpt2_bpe *b, int32_t id, size_t *len);
/* The bytes of the byte-alphabet spelling s[0..n) (valid UTF-8) in out (room for n); -1 when a character is outside
 * the alphabet. */
long zt_gpt2_bpe_chars_to_bytes(const char *s, size_t n, uint8_t *out);

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
/* The same on text known to be valid UTF-8 (not checked again). */
void zt_gpt2_bpe_encode_utf8(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, const char *text, size_t len,
                             zt_ids *out);

/* The bytes of ids[0..n) through the byte decoder, with invalid UTF-8 replaced as errors='replace'
 * does, as a malloc'd NUL-terminated string (*len_out = its length without the NUL). An id outside
 * the vocabulary dies naming it. */
char *zt_gpt2_bpe_decode(const zt_gpt2_bpe *b, const int32_t *ids, size_t n, size_t *len_out);

/* The pre-tokenization alone (for tests and tools): stores the end offset of each pre-token of the valid
 * UTF-8 text[0..len) in ends[0..max_ends) and returns the number of pre-tokens. */
size_t zt_gpt2_bpe_pretokenize(const char *text, size_t len, size_t *ends, size_t max_ends);

#endif
