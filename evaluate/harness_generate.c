/* Greedy generate_until for the harness tasks (harness_generate.h): the key/value-cache decoder over the run's TP x PP
 * layout, micro batches spread over the data-parallel replicas. A row's tokens depend only on that row (the causal
 * mask, its own positions from 0), so the micro batch a request lands in does not change what it generates: the
 * harness's own batching (left padding, longest first) gives the same greedy text. */
#include "evaluate/harness_generate.h"

#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/unicode.h"
#include "models/gpt/gpt.h"
#include "models/transformer/decode.h"
#include "runtime/base/error.h"
#include "runtime/comm/comm.h"

/* The decoded continuation gen[0..n) (ids past the tokenizer's vocabulary dropped; invalid UTF-8 read as U+FFFD, as
 * Python's errors='replace'), cut before the earliest stop string; *len its bytes, *stopped: a stop string was
 * found. */
static char *continuation(const zt_tokenizer *tok, const int32_t *gen, int n, const char *const *until, size_t *len,
                          int *stopped) {
  const int32_t Vtok = zt_tokenizer_vocab_size(tok);
  int32_t *ids = zt_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t), "generation");
  size_t k = 0, raw_len, cap = 0;
  for (int i = 0; i < n; i++)
    if (gen[i] >= 0 && gen[i] < Vtok) ids[k++] = gen[i];
  char *raw = zt_tokenizer_decode(tok, ids, k, &raw_len);
  free(ids);
  uint8_t *s = NULL;
  const size_t sl = zt_utf8_sanitize((const uint8_t *)raw, raw_len, &s, &cap);
  free(raw);
  size_t cut = sl;
  for (const char *const *u = until; *u; u++) { /* s = s.split(term)[0] for each term in turn: a term is looked for
                                                * whole within what the earlier ones left */
    const size_t ul = strlen(*u);
    if (!ul) continue; /* the harness skips empty terms */
    for (size_t i = 0; i + ul <= cut; i++)
      if (!memcmp(s + i, *u, ul)) {
        cut = i;
        break;
      }
  }
  *stopped = cut < sl;
  char *out = zt_malloc(cut + 1, "generation");
  if (cut) memcpy(out, s, cut);
  out[cut] = '\0';
  free(s);
  *len = cut;
  return out;
}

void zt_harness_generate(zt_model *m, const zt_eval_placement *p, int dp, const zt_tokenizer *tok, int V_valid,
                         int max_gen, const char *const *until, zt_gen_requests *r) {
  r->text = zt_calloc((size_t)(r->n > 0 ? r->n : 1), sizeof(char *), "generations");
  r->text_len = zt_calloc((size_t)(r->n > 0 ? r->n : 1), sizeof(size_t), "generations");
  r->n_gen = zt_calloc((size_t)(r->n > 0 ? r->n : 1), sizeof(int), "generations");
  if (r->n == 0) return;
  zt_gpt *g = m->impl;
  zt_lm_decoder dec;
  zt_lm_decoder_init(&dec, &g->lm);
  const int B = dec.B, T = dec.Tmax, Vf = zt_lm_decoder_vocab(&dec), eod = zt_tokenizer_eod(tok);
  const int pp = p->pp ? zt_group_size(p->pp) : 1;
  const int keeper = m->last && p->c.tp == 0; /* the rank that keeps the texts */
  int32_t *tok_rows = zt_malloc((size_t)B * T * sizeof(int32_t), "generation");
  int32_t *in = zt_malloc((size_t)B * T * sizeof(int32_t), "generation");
  int32_t *step = zt_malloc((size_t)B * 2 * sizeof(int32_t), "generation"); /* the step's tokens, then done flags */
  int *len = zt_malloc((size_t)B * sizeof(int), "generation"), *done = zt_malloc((size_t)B * sizeof(int), "generation");
  float *logits = m->last ? zt_malloc((size_t)B * Vf * sizeof(float), "generation logits") : NULL;
  /* on the last stage: each row's continuation as last decoded (the stop-string search's), which the keeper keeps */
  char **text = zt_calloc((size_t)B, sizeof(char *), "generation");
  size_t *text_len = zt_calloc((size_t)B, sizeof(size_t), "generation");
  const int Vl = V_valid < Vf ? V_valid : Vf;
  const int64_t nbatch = (r->n + B - 1) / B;
  for (int64_t j = p->c.dp; j < nbatch; j += dp) {
    int min_len = T;
    for (int b = 0; b < B; b++) {
      const int64_t at = j * B + b;
      int32_t *row = tok_rows + (size_t)b * T;
      for (int t = 0; t < T; t++) row[t] = eod;
      if (at >= r->n) { /* a filler row: one token, done from the start */
        len[b] = 1;
        done[b] = 1;
        continue;
      }
      zt_check(r->n_ctx[at] >= 1 && r->n_ctx[at] + max_gen <= T, "internal error", "generation: a context of %d tokens "
               "and %d to generate in %d positions", r->n_ctx[at], max_gen, T);
      memcpy(row, r->ctx[at], (size_t)r->n_ctx[at] * sizeof(int32_t));
      len[b] = r->n_ctx[at];
      done[b] = 0;
      if (m->last) text[b] = zt_calloc(1, 1, "generation"), text_len[b] = 0; /* nothing generated yet */
      if (len[b] < min_len) min_len = len[b];
    }
    int prev = 0, all_done = 0;
    for (int pos = min_len; pos < T && !all_done; pos++) {
      /* the tokens [prev, pos) of every row; the last stage's logits are those of position pos - 1 */
      const int n = pos - prev;
      for (int b = 0; b < B; b++)
        for (int t = 0; t < n; t++) in[(size_t)b * n + t] = tok_rows[(size_t)b * T + prev + t];
      if (zt_eval_stage_decode(m, p, &dec, in, n, prev, 1, 0, logits)) {
        for (int b = 0; b < B; b++) {
          int32_t *row = tok_rows + (size_t)b * T;
          step[b] = row[pos];
          step[B + b] = done[b];
          if (done[b] || len[b] > pos) continue; /* a longer prompt: its own token stays */
          const float *lr = logits + (size_t)b * Vf;
          int best = 0;
          for (int v = 1; v < Vl; v++) /* torch.argmax: the first of equal maxima */
            if (lr[v] > lr[best]) best = v;
          row[pos] = step[b] = best;
          const int ngen = pos + 1 - len[b];
          int stopped = best == eod; /* the text stays that of the tokens before it */
          if (!stopped) {
            free(text[b]);
            text[b] = continuation(tok, row + len[b], ngen, until, &text_len[b], &stopped);
          }
          step[B + b] = stopped || ngen == max_gen;
        }
      }
      if (pp > 1) zt_broadcast(p->pp, step, (size_t)B * 2 * sizeof(int32_t), pp - 1);
      all_done = 1;
      for (int b = 0; b < B; b++) {
        tok_rows[(size_t)b * T + pos] = step[b];
        if (step[B + b] && !done[b] && keeper) { /* finished at this step */
          const int64_t at = j * B + b;
          r->text[at] = text[b];
          r->text_len[at] = text_len[b];
          r->n_gen[at] = pos + 1 - len[b];
          text[b] = NULL;
        }
        done[b] |= step[B + b];
        all_done &= done[b];
      }
      prev = pos;
    }
    for (int b = 0; b < B; b++) free(text[b]), text[b] = NULL; /* the other ranks' copies */
  }
  free(tok_rows), free(in), free(step), free(len), free(done), free(logits), free(text), free(text_len);
  zt_lm_decoder_free(&dec);
}
