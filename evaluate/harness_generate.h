/* Greedy generation for lm-evaluation-harness generate_until requests (evaluate_zeroshot --tasks triviaqa;
 * docs/evaluate.md): HFLM.generate_until with do_sample false, on the forward-only GPT evaluate_zeroshot built, through
 * the key/value-cache decoder (models/transformer/decode.c). Each request's context (the caller left-truncates it to
 * --seq-length - max_gen tokens, as the harness does), then one token at a time, the argmax over the checkpoint's
 * vocabulary rows, until the end-of-document id, a stop string in the decoded continuation, or max_gen tokens. The
 * requests go --micro-batch-size at a time, micro batch j on data-parallel replica j % dp; the pipeline passes the new
 * tokens' activations stage to stage and the last stage sends each step's tokens back to the others. */
#ifndef ZT_HARNESS_GENERATE_H
#define ZT_HARNESS_GENERATE_H

#include <stdint.h>

#include "data/tokenizer/tokenizer.h"
#include "evaluate/eval_model.h"
#include "models/model.h"

typedef struct {
  int64_t n;
  int32_t **ctx; /* each request's context tokens (at least one) */
  int *n_ctx;
  /* out, on the last stage's first tensor-parallel rank of the replica that ran the request (NULL / 0 elsewhere):
   * the decoded continuation cut before the first stop string (the harness's s.split(term)[0] for every term; the
   * end-of-document id ends it and is not in it; valid UTF-8, invalid bytes read as U+FFFD; text_len bytes, a NUL
   * the model generated included), and the number of tokens generated (the one that ended it included) */
  char **text;
  size_t *text_len;
  int *n_gen;
} zt_gen_requests;

/* Runs r's requests on every rank of the run (each replica its micro batches). until: the stop strings, NULL-ended
 * (the task's generation_kwargs until plus the end-of-document text, as handle_stop_sequences adds it). V_valid: the
 * checkpoint's padded vocabulary (the argmax's range); an id at or past the tokenizer's vocabulary decodes to nothing,
 * as the tokenizers library drops it. */
void zt_harness_generate(zt_model *m, const zt_eval_placement *p, int dp, const zt_tokenizer *tok, int V_valid,
                         int max_gen, const char *const *until, zt_gen_requests *r);

#endif
