/* Megatron's text-generation API (megatron/text_generation/: api.py generate_and_post_process, generation.py,
 * tokenization.py, sampling.py) on a pretrain_gpt checkpoint, for the text-generation server
 * (evaluate/text_generation_server.c, docs/generate.md): the prompts tokenized and padded with EOD to the longest plus
 * tokens_to_generate, generation from the shortest prompt on with the key/value cache, Megatron's sampling (greedy at
 * top_k 1, top-k or top-p with top_p_decay/top_p_bound, temperature), its stop rules (EOD, stop_on_eol,
 * stop_on_double_eol), prevent_newline_after_colon, and the log-probability of every token after the first; with
 * tokens_to_generate 0 the prompts are only scored; with beam_width, beam search (beam_utils.py's BeamHypotheses).
 * Rank 0 holds the requests and gets the results; every rank of the TP x PP layout runs the model. */
#ifndef ZT_TEXT_GENERATION_H
#define ZT_TEXT_GENERATION_H

#include <stdint.h>

#include "data/tokenizer/tokenizer.h"
#include "train/args.h"

/* One request's parameters (the server's JSON fields, its defaults). */
typedef struct {
  int tokens_to_generate; /* 64 */
  int logprobs;
  int top_k;              /* 0; 1: greedy */
  double top_p, top_p_decay, top_p_bound, temperature; /* 0, 0, 0, 1 */
  int add_bos, stop_on_double_eol, stop_on_eol, prevent_newline_after_colon;
  int64_t random_seed;    /* -1: none */
  int beam_width;         /* 0: sampling; else beam search of one prompt (beam_search_and_post_process) */
  int32_t stop_token;     /* beam search's end (50256, Megatron's default: GPT-2's <|endoftext|>) */
  double length_penalty;  /* 1 */
} zt_tg_request;

/* Rank 0's results: per prompt, the prompt and generated tokens (len of them) and len - 1 log-probabilities (NULL
 * without logprobs); beam search: the best hypotheses (n of them, each the padded row) and their scores. */
typedef struct {
  int n;
  int32_t **tokens;
  int *len;
  float **logprobs;
  float *scores; /* beam search only */
} zt_tg_output;

typedef struct zt_tg zt_tg;

/* Builds the forward-only GPT of args (its --micro-batch-size rows per forward, --max-position-embeddings positions)
 * on every rank and loads --load. max_tokens: --max-tokens-to-oom. */
zt_tg *zt_tg_new(zt_args *args, const zt_tokenizer *tok, int64_t max_tokens);
void zt_tg_free(zt_tg *g);
/* The number of ids the tokenizer has (top-k's bound). */
int zt_tg_vocab(const zt_tg *g);

/* Rank 0: runs one request on every rank (the others are in zt_tg_follow). Returns NULL with *out filled, or the
 * reason the request cannot run (Megatron's ValueError texts: too long for the positions, too many tokens). */
const char *zt_tg_run(zt_tg *g, const zt_tg_request *q, char *const *prompts, const size_t *prompt_len, int n,
                      zt_tg_output *out);
void zt_tg_output_free(zt_tg_output *o);
/* Every rank but 0: runs the requests rank 0 sends until zt_tg_stop. */
void zt_tg_follow(zt_tg *g);
/* Rank 0: ends the other ranks' zt_tg_follow. */
void zt_tg_stop(zt_tg *g);

#endif
