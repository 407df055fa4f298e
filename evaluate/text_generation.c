/* Megatron's text-generation API on the key/value-cache decoder (text_generation.h). The request's rows go through
 * the model --micro-batch-size at a time: each row's tokens, length and log-probabilities depend only on that row
 * (the causal mask; the sampling stream is keyed by the row), on the request's longest prompt (the padded length) and
 * on its shortest (where top_p_decay starts), so a request gives what Megatron's one batch gives. The softmax, the
 * draw and the beams run over the checkpoint's vocabulary rows (Megatron's padded vocabulary), not over the rows a
 * larger tensor-parallel size adds (those are not in the model). */
#include "evaluate/text_generation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate/eval_model.h"
#include "evaluate/sampling.h"
#include "models/gpt/gpt.h"
#include "models/transformer/decode.h"
#include "runtime/base/error.h"
#include "runtime/comm/comm.h"

struct zt_tg {
  zt_args *args;
  const zt_tokenizer *tok;
  zt_model *m;
  zt_eval_placement p;
  zt_lm_decoder dec;
  int B, T, Vf, Vtok, root; /* root: the last stage's first tensor-parallel rank */
  int Vm; /* the model's vocabulary: the checkpoint's (padded) rows; Vf adds the rows a larger TP size pads with */
  int64_t max_tokens;
  int32_t eod, colon, colon_nl; /* tokenize(':')[0], tokenize('\n')[0] (-1: nothing) */
  int32_t eol, eol2;            /* the one id of "\n" and of "\n\n" (-1: not one token) */
  float *logits, *row;          /* [rows, Vf], [Vf] */
  size_t logits_rows;
  int *order;
  float *work;
  int64_t requests;
};

enum { CMD_STOP = 0, CMD_RUN = 1 };
typedef struct {
  int32_t cmd, n, S, min_len;
  zt_tg_request q;
} header;

static void tok_ids(const zt_tokenizer *tok, const char *s, zt_ids *out) {
  zt_tok_state *st = zt_tok_state_new(tok);
  zt_tokenizer_encode(tok, st, s, strlen(s), out);
  zt_tok_state_free(st);
}

static int32_t first_id(const zt_tokenizer *tok, const char *s, int only) {
  zt_ids v = {0};
  tok_ids(tok, s, &v);
  const int32_t id = v.n >= 1 && (!only || v.n == 1) ? v.ids[0] : -1;
  zt_ids_free(&v);
  return id;
}

zt_tg *zt_tg_new(zt_args *args, const zt_tokenizer *tok, int64_t max_tokens) {
  zt_tg *g = zt_calloc(1, sizeof *g, "text generation");
  g->args = args;
  g->tok = tok;
  g->max_tokens = max_tokens;
  g->eod = zt_tokenizer_eod(tok);
  g->colon = first_id(tok, ":", 0);
  g->colon_nl = first_id(tok, "\n", 0);
  g->eol = first_id(tok, "\n", 1);
  g->eol2 = first_id(tok, "\n\n", 1);
  g->m = zt_eval_load_gpt(args, 0, 0, &g->p, &g->Vm);
  zt_gpt *gpt = g->m->impl;
  zt_lm_decoder_init(&g->dec, &gpt->lm);
  g->B = args->micro_batch_size;
  g->T = args->seq_length;
  g->Vf = zt_lm_decoder_vocab(&g->dec);
  g->Vtok = zt_tokenizer_vocab_size(tok);
  g->root = (args->pipeline_model_parallel_size - 1) * args->tensor_model_parallel_size;
  if (g->m->last) {
    g->row = zt_malloc((size_t)g->Vf * sizeof(float), "sampling");
    g->order = zt_malloc((size_t)g->Vf * sizeof(int), "sampling");
    g->work = zt_malloc((size_t)g->Vf * sizeof(float), "sampling");
  }
  zt_log("> text generation: %d rows per forward, up to %d positions, key/value cache %.1f MiB on this rank\n", g->B,
         g->T, (double)zt_lm_decoder_cache_bytes(&g->dec) / 1048576.0);
  return g;
}

void zt_tg_free(zt_tg *g) {
  if (!g) return;
  zt_lm_decoder_free(&g->dec);
  zt_model_free(g->m);
  free(g->logits), free(g->row), free(g->order), free(g->work);
  free(g);
}

int zt_tg_vocab(const zt_tg *g) { return g->Vtok; }

static float *logits_for(zt_tg *g, size_t rows) {
  if (rows > g->logits_rows) {
    free(g->logits);
    g->logits = zt_malloc(rows * (size_t)g->Vf * sizeof(float), "logits");
    g->logits_rows = rows;
  }
  return g->logits;
}

/* F.log_softmax(row[0..V))[target] */
static float log_prob(const float *row, int V, int32_t target) {
  float mx = row[0];
  for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
  double s = 0.0;
  for (int v = 0; v < V; v++) s += exp((double)row[v] - mx);
  return (float)((double)row[target] - mx - log(s));
}

/* top_p after one step (generation.py: decayed, then raised to top_p_bound) */
static double decayed(const zt_tg_request *q, double top_p) {
  if (!(top_p > 0.0 && q->top_p_decay > 0.0)) return top_p;
  top_p *= q->top_p_decay;
  return q->top_p_bound > 0.0 && q->top_p_bound > top_p ? q->top_p_bound : top_p;
}

/* score_and_return_on_first_stage for B rows tok [B, S]: lp [B, S - 1]. */
static void score_group(zt_tg *g, const int32_t *tok, int S, float *lp) {
  const int B = g->B;
  float *logits = g->m->last ? logits_for(g, (size_t)B * S) : NULL;
  if (zt_eval_stage_decode(g->m, &g->p, &g->dec, tok, S, 0, 0, 1, logits))
    for (int b = 0; b < B; b++)
      for (int j = 0; j + 1 < S; j++)
        lp[(size_t)b * (S - 1) + j] = log_prob(logits + ((size_t)b * S + j) * g->Vf, g->Vm, tok[(size_t)b * S + j + 1]);
  if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), lp, (size_t)B * (S - 1) * sizeof(float), g->root);
}

/* generate_tokens_probs_and_return_on_first_stage for B rows tok [B, S] (real[b]: 0 for a filler row), prompt
 * lengths len[B]; out_len[B] receives each row's length, lp [B, S - 1] the log-probabilities (with logprobs).
 * min_req: the request's shortest prompt; row0: the request's index of row 0 (its sampling stream). */
static void generate_group(zt_tg *g, const zt_tg_request *q, int32_t *tok, const int *len, const int *real, int S,
                           int min_req, int64_t row0, int *out_len, float *lp) {
  const int B = g->B, Vf = g->Vf, Vm = g->Vm;
  int min_len = S;
  for (int b = 0; b < B; b++)
    if (real[b] && len[b] < min_len) min_len = len[b];
  double top_p = q->top_k == 0 ? q->top_p : 0.0;
  for (int k = min_req; k < min_len; k++) top_p = decayed(q, top_p);
  zt_sampling s = {.greedy = q->top_k == 1, .temperature = (float)q->temperature, .top_k = q->top_k > 1 ? q->top_k : 0,
                   .seed = q->random_seed >= 0 ? (uint64_t)q->random_seed : (uint64_t)g->args->seed};
  const uint64_t stream0 = q->random_seed >= 0 ? (uint64_t)row0 : ((uint64_t)g->requests << 24) + (uint64_t)row0;
  int *done = zt_malloc((size_t)B * sizeof(int), "generation");
  int32_t *in = zt_malloc((size_t)B * S * sizeof(int32_t), "generation");
  int32_t *sb = zt_malloc((size_t)B * 3 * sizeof(int32_t), "generation");
  for (int b = 0; b < B; b++) out_len[b] = S, done[b] = !real[b];
  const int last_stage = g->m->last;
  int prev = 0;
  for (int ctx = min_len; ctx < S; ctx++) {
    const int n = ctx - prev, all = q->logprobs && n > 1;
    for (int b = 0; b < B; b++)
      for (int t = 0; t < n; t++) in[(size_t)b * n + t] = tok[(size_t)b * S + prev + t];
    float *logits = last_stage ? logits_for(g, (size_t)B * (all ? n : 1)) : NULL;
    if (zt_eval_stage_decode(g->m, &g->p, &g->dec, in, n, prev, 1, all, logits)) {
      const int R = all ? n : 1;
      s.top_p = (float)top_p;
      for (int b = 0; b < B; b++) {
        int32_t *tr = tok + (size_t)b * S;
        float *last = logits + ((size_t)b * R + R - 1) * Vf;
        if (q->prevent_newline_after_colon && g->colon >= 0 && g->colon_nl >= 0 && tr[ctx - 1] == g->colon)
          last[g->colon_nl] = -1e10f; /* disable "\n" after ":" */
        memcpy(g->row, last, (size_t)Vf * sizeof(float)); /* sample() works on a clone */
        int32_t next = zt_sample_token(&s, g->row, Vm, stream0 + (uint64_t)b, (uint64_t)ctx, g->order, g->work);
        if (next > g->Vtok - 1) next = g->Vtok - 1; /* torch.clamp(samples, max=vocab_size - 1) */
        const int started = len[b] <= ctx;
        if (started) tr[ctx] = next;
        if (q->logprobs)
          for (int j = 0; j < R; j++)
            lp[(size_t)b * (S - 1) + prev + j] = log_prob(logits + ((size_t)b * R + j) * Vf, Vm, tr[prev + j + 1]);
        int hit;
        if (q->stop_on_double_eol)
          hit = (g->eol2 >= 0 && next == g->eol2) || (g->eol >= 0 && next == g->eol && tr[ctx - 1] == g->eol);
        else if (q->stop_on_eol)
          hit = (g->eol2 >= 0 && next == g->eol2) || (g->eol >= 0 && next == g->eol);
        else
          hit = next == g->eod;
        hit = hit && started;
        if (hit && !done[b]) out_len[b] = ctx + 1;
        done[b] |= hit;
        sb[b] = tr[ctx], sb[B + b] = done[b], sb[2 * B + b] = out_len[b];
      }
    }
    top_p = decayed(q, top_p);
    if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), sb, (size_t)B * 3 * sizeof(int32_t), g->root);
    int all_done = 1;
    for (int b = 0; b < B; b++) {
      tok[(size_t)b * S + ctx] = sb[b];
      done[b] = sb[B + b];
      out_len[b] = sb[2 * B + b];
      all_done &= done[b];
    }
    prev = ctx;
    if (all_done) break;
  }
  if (q->logprobs && zt_comm_size() > 1)
    zt_broadcast(zt_comm_world(), lp, (size_t)B * (S - 1) * sizeof(float), g->root);
  free(done), free(in), free(sb);
}

/* ---- beam search (generation.py beam_search_and_return_on_first_stage, beam_utils.py BeamHypotheses) ------------ */

typedef struct {
  int W, n;
  double penalty, worst;
  float *score;    /* [W + 1] */
  int32_t **toks;  /* [W + 1] rows of S */
} beam_hyps;

static void hyp_add(beam_hyps *h, const int32_t *row, int S, float sum_logprobs, int length) {
  const float score = (float)((double)sum_logprobs / (double)(float)pow((double)length, h->penalty)); /* fp32 / */
  if (!(h->n < h->W || score > h->worst)) return;
  h->score[h->n] = score;
  memcpy(h->toks[h->n], row, (size_t)S * sizeof(int32_t));
  h->n++;
  if (h->n > h->W) { /* drop the lowest (the first of equal ones); the worst becomes the second lowest */
    int lo = 0;
    for (int i = 1; i < h->n; i++)
      if (h->score[i] < h->score[lo]) lo = i;
    float second = INFINITY;
    for (int i = 0; i < h->n; i++)
      if (i != lo && h->score[i] < second) second = h->score[i];
    int32_t *t = h->toks[lo];
    for (int i = lo; i + 1 < h->n; i++) h->score[i] = h->score[i + 1], h->toks[i] = h->toks[i + 1];
    h->toks[h->n - 1] = t;
    h->n--;
    h->worst = second;
  } else {
    h->worst = score < h->worst ? score : h->worst;
  }
}

static int hyp_done(const beam_hyps *h, float best_sum_logprobs, int cur_len) {
  if (h->n < h->W) return 0;
  return h->worst >= (double)(float)((double)best_sum_logprobs / (double)(float)pow((double)cur_len, h->penalty));
}

/* The W x Vm candidate scores' 2W best (descending; equal scores by index, one of torch.sort's orders). */
static int top_candidates(const float *cand, size_t N, int K, size_t *idx) {
  int k = 0;
  for (size_t i = 0; i < N; i++) {
    const float v = cand[i];
    if (k == K && !(v > cand[idx[k - 1]])) continue;
    int at = k < K ? k++ : K - 1;
    while (at > 0 && v > cand[idx[at - 1]]) {
      idx[at] = idx[at - 1];
      at--;
    }
    idx[at] = i;
  }
  return k;
}

/* The rows a beam search of width W runs: W rounded up to whole micro batches. */
static int beam_rows(const zt_tg *g, int W) { return (W + g->B - 1) / g->B * g->B; }

/* NULL, or why rank 0 cannot hold a beam search of width W over S positions: the key/value cache of its rows (grown
 * past the micro batch's) on the model's backend, and the candidates and hypotheses in host memory. */
static const char *beam_memory(zt_tg *g, int W, int S, char *why, size_t cap) {
  const zt_backend *be = g->m->be, *cpu = zt_backend_cpu();
  const double R = beam_rows(g, W), mib = 1048576.0;
  const double cache = R > g->dec.rows ? 2.0 * (R - g->dec.rows) * (double)zt_lm_decoder_row_bytes(&g->dec) : 0.0;
  const double host = (double)W * g->Vm * 4.0 + R * g->Vf * 4.0 + (3.0 * R + W + 1.0) * S * 4.0;
  const double dev_free = (double)be->available(), host_free = (double)cpu->available();
  if (be == cpu ? cache + host <= host_free : cache <= dev_free && host <= host_free) return NULL;
  snprintf(why, cap, "beam_width %d needs %.1f MiB of key/value cache (%d rows%s) and %.1f MiB of host memory for "
           "its candidates; %.1f MiB %s free", W, cache / mib, (int)R, be == cpu ? "" : " on the GPU", host / mib,
           (be == cpu ? host_free : dev_free) / mib, be == cpu ? "are" : "of GPU memory are");
  return why;
}

/* Every rank: beam search of the one prompt tokens [S] (prompt length L, padded with EOD); rank 0 gets the
 * hypotheses in out. */
static void beam_search(zt_tg *g, const zt_tg_request *q, const int32_t *prompt, int L, int S, zt_tg_output *out) {
  const int W = q->beam_width, Vf = g->Vf, Vm = g->Vm;
  const int is_root = zt_comm_rank() == g->root;
  /* the beams' rows, --micro-batch-size at a time (Megatron sends the W beams as one batch): R rows of key/value
   * cache, the rows past W copies of the prompt that are never read */
  const int B = g->B, R = beam_rows(g, W);
  zt_lm_decoder_rows(&g->dec, R);
  int32_t *tok = zt_malloc((size_t)R * S * sizeof(int32_t), "beam search");
  int32_t *nt = zt_malloc((size_t)R * S * sizeof(int32_t), "beam search");
  int32_t *in = zt_malloc((size_t)R * S * sizeof(int32_t), "beam search");
  for (int b = 0; b < R; b++) memcpy(tok + (size_t)b * S, prompt, (size_t)S * sizeof(int32_t));
  float *scores = zt_calloc((size_t)W, sizeof(float), "beam search");
  float *cand = g->m->last ? zt_malloc((size_t)W * Vm * sizeof(float), "beam search") : NULL;
  size_t *best = zt_malloc((size_t)2 * W * sizeof(size_t), "beam search");
  /* per step from the root: the beams' source rows, their new tokens, their scores (bits), done */
  int32_t *sb = zt_malloc(((size_t)3 * W + 1) * sizeof(int32_t), "beam search");
  int *from = zt_malloc((size_t)R * sizeof(int), "beam search");
  beam_hyps h = {.W = W, .penalty = q->length_penalty, .worst = 1e9};
  h.score = zt_malloc(((size_t)W + 1) * sizeof(float), "beam search");
  h.toks = zt_malloc(((size_t)W + 1) * sizeof(int32_t *), "beam search");
  for (int i = 0; i <= W; i++) h.toks[i] = zt_malloc((size_t)S * sizeof(int32_t), "beam search");
  int prev = 0, done = 0, ctx = L;
  for (; ctx < S; ctx++) {
    const int n = ctx - prev;
    for (int b = 0; b < R; b++)
      for (int t = 0; t < n; t++) in[(size_t)b * n + t] = tok[(size_t)b * S + prev + t];
    float *logits = g->m->last ? logits_for(g, (size_t)R) : NULL;
    int last = 0;
    for (int r0 = 0; r0 < R; r0 += B) {
      zt_lm_decoder_select(&g->dec, r0);
      last = zt_eval_stage_decode(g->m, &g->p, &g->dec, in + (size_t)r0 * n, n, prev, 1, 0,
                                  logits ? logits + (size_t)r0 * Vf : NULL);
    }
    if (last) {
      const int rows = ctx == L ? 1 : W; /* the first step: every beam is the prompt; only beam 0's candidates */
      for (int b = 0; b < rows; b++) {
        float *x = logits + (size_t)b * Vf;
        if (q->prevent_newline_after_colon && g->colon >= 0 && g->colon_nl >= 0 &&
            tok[(size_t)b * S + ctx - 1] == g->colon)
          x[g->colon_nl] = -1e10f;
        float mx = x[0];
        for (int v = 1; v < Vm; v++) mx = x[v] > mx ? x[v] : mx;
        double sum = 0.0;
        for (int v = 0; v < Vm; v++) sum += exp((double)x[v] - mx);
        const double lse = mx + log(sum);
        for (int v = 0; v < Vm; v++) cand[(size_t)b * Vm + v] = (float)((double)x[v] - lse) + scores[b];
      }
      const int k = top_candidates(cand, (size_t)rows * Vm, 2 * W, best);
      int cnt = 0;
      for (int r = 0; r < k && cnt < W; r++) {
        const int32_t token = (int32_t)(best[r] % (size_t)Vm);
        const int beam = (int)(best[r] / (size_t)Vm);
        const float sc = cand[best[r]];
        if (token == q->stop_token) {
          if (r >= W) continue; /* a stop token outside the top W candidates is not a hypothesis */
          if (is_root) hyp_add(&h, tok + (size_t)beam * S, S, sc, ctx + 1 - L);
        } else {
          sb[cnt] = beam, sb[W + cnt] = token;
          memcpy(&sb[2 * W + cnt], &sc, sizeof sc);
          cnt++;
        }
      }
      sb[3 * W] = hyp_done(&h, cand[best[0]], ctx + 1 - L);
    }
    if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), sb, ((size_t)3 * W + 1) * sizeof(int32_t), g->root);
    for (int b = 0; b < R; b++) {
      from[b] = b < W ? sb[b] : -1;
      memcpy(nt + (size_t)b * S, tok + (size_t)(b < W ? sb[b] : b) * S, (size_t)S * sizeof(int32_t));
      if (b < W) {
        nt[(size_t)b * S + ctx] = sb[W + b];
        memcpy(&scores[b], &sb[2 * W + b], sizeof(float));
      }
    }
    int32_t *t = tok;
    tok = nt, nt = t;
    done = sb[3 * W];
    if (done) break;
    zt_lm_decoder_reorder(&g->dec, from, R);
    prev = ctx;
  }
  zt_lm_decoder_select(&g->dec, 0);
  if (ctx == S) ctx = S - 1;
  if (is_root) {
    if (!done)
      for (int b = 0; b < W; b++) hyp_add(&h, tok + (size_t)b * S, S, scores[b], ctx + 1 - L);
    /* sorted(beams, key=score, reverse=True): stable, equal scores keep their order */
    for (int i = 1; i < h.n; i++)
      for (int j = i; j > 0 && h.score[j] > h.score[j - 1]; j--) {
        const float s = h.score[j];
        h.score[j] = h.score[j - 1], h.score[j - 1] = s;
        int32_t *r = h.toks[j];
        h.toks[j] = h.toks[j - 1], h.toks[j - 1] = r;
      }
  }
  int nh = h.n;
  if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), &nh, sizeof nh, g->root);
  for (int i = 0; i < nh; i++) {
    if (zt_comm_size() > 1) {
      zt_broadcast(zt_comm_world(), h.toks[i], (size_t)S * sizeof(int32_t), g->root);
      zt_broadcast(zt_comm_world(), &h.score[i], sizeof(float), g->root);
    }
  }
  if (out) {
    out->n = nh < W ? nh : W;
    out->scores = zt_malloc((size_t)W * sizeof(float) + 1, "beam search");
    for (int i = 0; i < out->n; i++) {
      out->len[i] = S;
      out->tokens[i] = zt_malloc((size_t)S * sizeof(int32_t), "beam search");
      memcpy(out->tokens[i], h.toks[i], (size_t)S * sizeof(int32_t));
      out->scores[i] = h.score[i];
    }
  }
  for (int i = 0; i <= W; i++) free(h.toks[i]);
  free(h.toks), free(h.score), free(tok), free(nt), free(in), free(scores);
  free(cand), free(best), free(sb), free(from);
}

/* Every rank: the request of h over tokens [n, S] and lengths [n]; rank 0 keeps the results in out. */
static void execute(zt_tg *g, const header *h, const int32_t *tokens, const int32_t *lengths, zt_tg_output *out) {
  const int B = g->B, S = h->S, n = h->n;
  if (h->q.beam_width > 0) {
    beam_search(g, &h->q, tokens, lengths[0], S, out);
    g->requests++;
    return;
  }
  int32_t *tok = zt_malloc((size_t)B * S * sizeof(int32_t), "generation");
  int *len = zt_malloc((size_t)B * sizeof(int), "generation"), *real = zt_malloc((size_t)B * sizeof(int), "generation");
  int *out_len = zt_malloc((size_t)B * sizeof(int), "generation");
  float *lp = zt_calloc((size_t)B * (S > 1 ? S - 1 : 1), sizeof(float), "log-probabilities");
  for (int r0 = 0; r0 < n; r0 += B) {
    for (int b = 0; b < B; b++) { /* a short last group is filled with copies of its first row, not generated for */
      const int i = r0 + b < n ? r0 + b : r0;
      real[b] = r0 + b < n;
      memcpy(tok + (size_t)b * S, tokens + (size_t)i * S, (size_t)S * sizeof(int32_t));
      len[b] = real[b] ? lengths[i] : S;
    }
    if (h->q.tokens_to_generate == 0) {
      score_group(g, tok, S, lp);
      for (int b = 0; b < B; b++) out_len[b] = len[b];
    } else {
      generate_group(g, &h->q, tok, len, real, S, h->min_len, r0, out_len, lp);
    }
    if (!out) continue;
    for (int b = 0; b < B && r0 + b < n; b++) {
      const int i = r0 + b, L = out_len[b];
      out->len[i] = L;
      out->tokens[i] = zt_malloc((size_t)L * sizeof(int32_t) + 1, "generation");
      memcpy(out->tokens[i], tok + (size_t)b * S, (size_t)L * sizeof(int32_t));
      if (h->q.logprobs) {
        out->logprobs[i] = zt_malloc((size_t)L * sizeof(float) + 1, "log-probabilities");
        memcpy(out->logprobs[i], lp + (size_t)b * (S - 1), (size_t)(L - 1) * sizeof(float));
      }
    }
  }
  g->requests++;
  free(tok), free(len), free(real), free(out_len), free(lp);
}

const char *zt_tg_run(zt_tg *g, const zt_tg_request *q, char *const *prompts, const size_t *prompt_len, int n,
                      zt_tg_output *out) {
  static char why[256];
  memset(out, 0, sizeof *out);
  /* tokenization.py _tokenize_prompts_and_batch: [eod] + tokenize(prompt) with add_BOS, padded with eod */
  zt_ids *ids = zt_calloc((size_t)n, sizeof(zt_ids), "prompts");
  zt_tok_state *st = zt_tok_state_new(g->tok);
  int max_len = 0, min_len = 0;
  const char *err = NULL;
  for (int i = 0; i < n; i++) {
    if (q->add_bos) zt_ids_push(&ids[i], g->eod);
    zt_tokenizer_encode(g->tok, st, prompts[i], prompt_len[i], &ids[i]);
    const int L = (int)ids[i].n;
    if (!L && !err) {
      snprintf(why, sizeof why, "prompt %d tokenizes to nothing: give text that has tokens, or add_BOS=true", i);
      err = why;
    }
    max_len = L > max_len ? L : max_len;
    min_len = i == 0 || L < min_len ? L : min_len;
  }
  zt_tok_state_free(st);
  int64_t S = (int64_t)max_len + q->tokens_to_generate;
  if (q->beam_width > 0) { /* beam search cuts the length to the positions */
    S = S < g->T ? S : g->T;
    if (!err && max_len >= S) err = "context length + tokens_to_generate too large";
    if (!err) err = beam_memory(g, q->beam_width, (int)S, why, sizeof why);
  } else if (!err && S > g->T) {
    err = "Length of prompt + tokens_to_generate longer than allowed";
  }
  if (!err && q->beam_width == 0 && S * n > g->max_tokens) {
    snprintf(why, sizeof why, "Too many tokens.  %lld is greater than %lld", (long long)(S * n),
             (long long)g->max_tokens);
    err = why;
  }
  if (err) {
    for (int i = 0; i < n; i++) zt_ids_free(&ids[i]);
    free(ids);
    return err;
  }
  header h = {.cmd = CMD_RUN, .n = n, .S = (int32_t)S, .min_len = min_len, .q = *q};
  int32_t *tokens = zt_malloc((size_t)n * S * sizeof(int32_t), "prompts");
  int32_t *lengths = zt_malloc((size_t)n * sizeof(int32_t), "prompts");
  for (int i = 0; i < n; i++) {
    lengths[i] = (int32_t)ids[i].n;
    for (int64_t t = 0; t < S; t++) tokens[i * S + t] = t < (int64_t)ids[i].n ? ids[i].ids[t] : g->eod;
    zt_ids_free(&ids[i]);
  }
  free(ids);
  if (zt_comm_size() > 1) {
    zt_broadcast(zt_comm_world(), &h, sizeof h, 0);
    zt_broadcast(zt_comm_world(), tokens, (size_t)n * S * sizeof(int32_t), 0);
    zt_broadcast(zt_comm_world(), lengths, (size_t)n * sizeof(int32_t), 0);
  }
  const int rows = n > q->beam_width ? n : q->beam_width; /* beam search: up to beam_width hypotheses */
  out->n = n;
  out->tokens = zt_calloc((size_t)rows, sizeof(int32_t *), "generation");
  out->len = zt_calloc((size_t)rows, sizeof(int), "generation");
  out->logprobs = zt_calloc((size_t)rows, sizeof(float *), "generation");
  execute(g, &h, tokens, lengths, out);
  free(tokens), free(lengths);
  return NULL;
}

void zt_tg_output_free(zt_tg_output *o) {
  for (int i = 0; i < o->n; i++) {
    free(o->tokens[i]);
    free(o->logprobs[i]);
  }
  free(o->tokens), free(o->len), free(o->logprobs), free(o->scores);
  memset(o, 0, sizeof *o);
}

void zt_tg_follow(zt_tg *g) {
  for (;;) {
    header h;
    zt_broadcast(zt_comm_world(), &h, sizeof h, 0);
    if (h.cmd == CMD_STOP) return;
    int32_t *tokens = zt_malloc((size_t)h.n * h.S * sizeof(int32_t), "prompts");
    int32_t *lengths = zt_malloc((size_t)h.n * sizeof(int32_t), "prompts");
    zt_broadcast(zt_comm_world(), tokens, (size_t)h.n * h.S * sizeof(int32_t), 0);
    zt_broadcast(zt_comm_world(), lengths, (size_t)h.n * sizeof(int32_t), 0);
    execute(g, &h, tokens, lengths, NULL);
    free(tokens), free(lengths);
  }
}

void zt_tg_stop(zt_tg *g) {
  (void)g;
  header h = {.cmd = CMD_STOP};
  if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), &h, sizeof h, 0);
}
