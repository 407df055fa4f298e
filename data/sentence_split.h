/* A deterministic rule-based English sentence splitter for preprocess_data --split-sentences.
 * Megatron uses NLTK's trained punkt model, which zerotron does not have: boundaries can differ from
 * NLTK's on hard cases (docs/preprocess.md lists the rules). What follows punkt exactly is the shape
 * of the output: the first sentence starts at the text's first byte, the whitespace between two
 * sentences is dropped (or, with keep_newlines, kept at the end of the earlier sentence, as
 * Megatron's CustomLanguageVars does), and the last sentence loses its trailing whitespace.
 *
 * Rules: a sentence may end after a run of . ? ! (or U+2026) plus closing quotes/brackets, when
 * whitespace follows and the next word does not start with a lowercase letter; a single period does
 * not end one after a known abbreviation (Mr, Dr, e.g, ...), after "No", "Fig", "Vol", ... before a
 * number, after an initial (one letter) or after a dotted acronym (U.S, a.m). */
#ifndef ZT_SENTENCE_SPLIT_H
#define ZT_SENTENCE_SPLIT_H

#include <stddef.h>

/* Sentence k is text[start[k] .. start[k] + len[k]). */
typedef struct {
  size_t *start, *len;
  size_t n, cap;
} zt_sentences;

/* Splits text[0..len) (UTF-8) into out (cleared first). */
void zt_sentence_split(const char *text, size_t len, int keep_newlines, zt_sentences *out);
void zt_sentences_free(zt_sentences *s);

#endif
