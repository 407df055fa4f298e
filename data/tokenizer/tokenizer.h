/* Tokenizers with Megatron's names and semantics: GPT2BPETokenizer (byte-level BPE from vocab.json +
 * merges.txt), BertWordPieceLowerCase / BertWordPieceCase (vocab.txt), SentencePieceTokenizer and
 * GPTSentencePieceTokenizer (a .model file, through libsentencepiece), NullTokenizer (ids written
 * as space-separated integers), HFTokenizer (a Hugging Face Llama, GPT-2 or Qwen2 tokenizer directory,
 * hf_tokenizer.h). Each reproduces its reference tokenizer's ids exactly.
 *
 * Threading: a created tokenizer is immutable and may be shared by threads; each thread encodes
 * with its own zt_tok_state (BPE cache, scratch buffers). */
#ifndef ZT_TOKENIZER_H
#define ZT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  ZT_TOK_GPT2BPE = 0,
  ZT_TOK_BERT_LOWER,
  ZT_TOK_BERT_CASE,
  ZT_TOK_SENTENCEPIECE,
  ZT_TOK_GPT_SENTENCEPIECE,
  ZT_TOK_NULL,
  ZT_TOK_HF,
} zt_tokenizer_kind;

typedef struct {
  zt_tokenizer_kind kind;
  const char *vocab_file;      /* --vocab-file (GPT-2 vocab.json, BERT vocab.txt) */
  const char *merge_file;      /* --merge-file (GPT-2 merges.txt) */
  const char *tokenizer_model; /* --tokenizer-model (SentencePiece .model; HFTokenizer: the directory) */
  int vocab_size;              /* --vocab-size (NullTokenizer only) */
  int vocab_extra_ids;         /* --vocab-extra-ids (BERT/SentencePiece: <extra_id_N> tokens, T5) */
} zt_tokenizer_spec;

typedef struct zt_tokenizer zt_tokenizer;
typedef struct zt_tok_state zt_tok_state;

/* A growable id buffer; encode appends. */
typedef struct {
  int32_t *ids;
  size_t n, cap;
} zt_ids;

/* Megatron's --tokenizer-type name -> kind; returns 0 and sets *kind, or -1 for an unknown name. */
int zt_tokenizer_parse_kind(const char *name, zt_tokenizer_kind *kind);
const char *zt_tokenizer_kind_name(zt_tokenizer_kind kind);

/* Loads the files the kind needs; a missing flag, an unreadable or malformed file dies naming the
 * flag or the file (and the line where there is one). */
zt_tokenizer *zt_tokenizer_create(const zt_tokenizer_spec *spec);
void zt_tokenizer_free(zt_tokenizer *t);

/* The kind t was created as (for messages naming its --tokenizer-type). */
zt_tokenizer_kind zt_tokenizer_kind_of(const zt_tokenizer *t);

/* Megatron's tokenizer.vocab_size: the number of ids the model must embed (before padding). */
int zt_tokenizer_vocab_size(const zt_tokenizer *t);
/* Megatron's tokenizer.eod (GPT-2: <|endoftext|>; HFTokenizer: the eos token); -1 when the kind has none. */
int32_t zt_tokenizer_eod(const zt_tokenizer *t);
/* The HFTokenizer behind t (its pad token, padded encoding), or NULL for the other kinds. */
struct zt_hf_tok;
const struct zt_hf_tok *zt_tokenizer_hf(const zt_tokenizer *t);

/* The vocabulary as Megatron's BERT data reads it (tokenizer.vocab[token], tokenizer.inv_vocab[id]); BERT WordPiece
 * kinds only (-1 / NULL for the others): the id of an exact vocabulary string ("[MASK]"), or -1; the string of an
 * id ("##ing" for a continuation), or NULL where no token has it. */
int32_t zt_tokenizer_token_to_id(const zt_tokenizer *t, const char *token);
const char *zt_tokenizer_id_to_token(const zt_tokenizer *t, int32_t id);

zt_tok_state *zt_tok_state_new(const zt_tokenizer *t);
void zt_tok_state_free(zt_tok_state *s);

/* Appends the ids of text[0..len) (UTF-8; invalid sequences are read as U+FFFD, as Python's
 * errors='replace' does) to out. */
void zt_tokenizer_encode(const zt_tokenizer *t, zt_tok_state *s, const char *text, size_t len, zt_ids *out);
/* The text of ids[0..n) as a malloc'd NUL-terminated UTF-8 string (*len_out = its length). An id
 * outside the vocabulary dies naming it. */
char *zt_tokenizer_decode(const zt_tokenizer *t, const int32_t *ids, size_t n, size_t *len_out);

/* One id's text as Megatron's text-generation server lists it in "segments" (megatron/text_generation/
 * tokenization.py): a SentencePiece kind's piece ("\u2581the"), every other kind's decode of the id alone (GPT-2: its
 * bytes read as UTF-8 with U+FFFD for a partial character; NullTokenizer: the number). Malloc'd, NUL-terminated. */
char *zt_tokenizer_segment(const zt_tokenizer *t, int32_t id, size_t *len_out);

void zt_ids_push(zt_ids *v, int32_t id);
void zt_ids_free(zt_ids *v);

/* A growable NUL-terminated text the decoders write into ({0} to start; p is malloc'd, the caller's to free). */
typedef struct {
  char *p;
  size_t n, cap;
} zt_text;
void zt_text_put(zt_text *b, const char *s, size_t n);

#endif
