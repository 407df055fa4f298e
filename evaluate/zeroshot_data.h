/* The data side of zero-shot evaluation (Megatron-DeepSpeed's tasks/zeroshot_gpt/datasets.py and detokenizer.py):
 * the detokenizers picked by the file's path (ptb, wiki, lambada), Megatron's count of original (whitespace) tokens,
 * the WikiText-style language-model windows with --overlapping-eval, and the LAMBADA examples (strict and non-strict)
 * read from a jsonl file. No model here: evaluate/zeroshot.c scores what these build. docs/evaluate.md. */
#ifndef ZT_EVAL_ZEROSHOT_DATA_H
#define ZT_EVAL_ZEROSHOT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

/* ---- detokenizers (detokenizer.py) ------------------------------------------------------------------------- */
/* Each returns a malloc'd NUL-terminated UTF-8 string (*out_len its length). */
char *zt_ptb_detokenize(const char *s, size_t n, size_t *out_len);
char *zt_wikitext_detokenize(const char *s, size_t n, size_t *out_len);
/* get_detokenizer(path): the first of "ptb", "wiki", "lambada" that the path contains names the detokenizer
 * (lambada's is the identity); NULL when none does (Megatron then fails; we keep the text as it is). */
const char *zt_detokenizer_for_path(const char *path);
/* Applies the detokenizer `name` (as returned above; NULL: identity). */
char *zt_detokenize(const char *name, const char *s, size_t n, size_t *out_len);

/* len(text.strip().split(" ")): Python's strip of Unicode whitespace, then one more than the number of spaces. */
int64_t zt_count_original_tokens(const char *s, size_t n);
/* Python's str.isspace() for the UTF-8 character at s[0..n): its byte length, 0 when it is not whitespace. */
int zt_utf8_space(const char *s, size_t n);

/* ---- language-model windows (_LMDataset) ------------------------------------------------------------------- */
typedef struct {
  const int32_t *tokens;
  int64_t n_tokens;
  int seq_len, overlap;  /* overlap: max(1, --overlapping-eval) */
  int64_t count;         /* windows: max(ceil((n - 1 - overlap) / overlap) + 1, 1) */
} zt_lm_windows;

void zt_lm_windows_init(zt_lm_windows *w, const int32_t *tokens, int64_t n_tokens, int seq_len, int overlap);
/* Window idx: text[seq_len + 1] (padded with pad) and the scored targets mask[seq_len] (1/0). */
void zt_lm_window(const zt_lm_windows *w, int64_t idx, int32_t pad, int32_t *text, float *mask);

/* ---- LAMBADA (_LambadaDataset) ------------------------------------------------------------------------------- */
typedef struct {
  int64_t n;
  int32_t **tokens;   /* [n] context then label tokens */
  int *n_ctx, *n_label;
} zt_lambada;

/* Reads path (one JSON object with a "text" string per line; Megatron's format), tokenizing each as Megatron does:
 * non-strict, the last token of the whole text is the label; strict, the last whitespace word (tokenized as
 * ' ' + word) and the stripped text before it. Fatal, naming the file and the line, on an unreadable file, an empty
 * or malformed line, a missing or non-string "text", or a text with nothing to predict. */
void zt_lambada_load(zt_lambada *set, const char *path, const zt_tokenizer *tok, int strict);
void zt_lambada_free(zt_lambada *set);
/* Example i as text[seq_len + 1] (padded with pad) and mask[seq_len] (1 on the label's targets). An example longer
 * than seq_len + 1 tokens keeps its last seq_len + 1 (left truncation, as Megatron-DeepSpeed's eval harness does);
 * returns the number of tokens dropped. */
int zt_lambada_item(const zt_lambada *set, int64_t i, int seq_len, int32_t pad, int32_t *text, float *mask);

#endif
