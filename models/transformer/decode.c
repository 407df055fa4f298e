/* Incremental decoding (see decode.h): the caches, the stage forward of new tokens, the last tokens' logits. */
#include "models/transformer/decode.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

void zt_lm_decoder_init(zt_lm_decoder *d, zt_lm *lm) {
  memset(d, 0, sizeof *d);
  const zt_backend *be = lm->model->be;
  zt_check(lm->cfg.forward_only && lm->vpp == 1 && !zt_tp_sp(&lm->tp) && !lm->stack.recompute, "internal error",
           "decoder: needs a forward-only model without virtual chunks, --sequence-parallel or recompute");
  d->lm = lm;
  d->B = d->rows = lm->B;
  d->Tmax = lm->T_plan;
  const size_t A = (size_t)lm->bcfg.NH * lm->bcfg.HD, es = zt_dtype_size(lm->model->dt);
  d->row_bytes = (size_t)d->Tmax * 3 * A * es;
  d->cache_bytes = (size_t)d->B * d->row_bytes;
  const int L = lm->stack.nlayers;
  d->cache = zt_calloc((size_t)(L ? L : 1), sizeof(void *), "key/value caches");
  for (int l = 0; l < L; l++) {
    d->cache[l] = be->alloc(d->cache_bytes, "key/value cache");
    lm->stack.blocks[l].a.attn.cache = d->cache[l];
  }
  const size_t NT = (size_t)d->B * d->Tmax;
  d->h_tok = zt_malloc(NT * sizeof(int32_t), "decoder tokens");
  d->h_pos = zt_malloc(NT * sizeof(int32_t), "decoder positions");
  if (lm->last) {
    const size_t BV = (size_t)d->B * lm->V;
    d->logits32 = lm->model->dt == ZT_DTYPE_FP32 ? NULL : be->alloc(BV * sizeof(float), "decoder logits");
    d->h_local = zt_malloc(BV * sizeof(float), "decoder logits");
    d->h_all = zt_malloc(BV * (size_t)lm->tp.size * sizeof(float), "decoder logits");
    d->rows_cap = (size_t)d->B;
  }
}

void zt_lm_decoder_free(zt_lm_decoder *d) {
  if (!d->lm) return;
  const zt_backend *be = d->lm->model->be;
  for (int l = 0; l < d->lm->stack.nlayers; l++) {
    be->release(d->cache[l], d->cache_bytes);
    d->lm->stack.blocks[l].a.attn.cache = NULL;
  }
  if (d->logits32) be->release(d->logits32, d->rows_cap * d->lm->V * sizeof(float));
  if (d->swap) be->release(d->swap, d->cache_bytes);
  free(d->cache), free(d->h_tok), free(d->h_pos), free(d->h_local), free(d->h_all);
  memset(d, 0, sizeof *d);
}

size_t zt_lm_decoder_cache_bytes(const zt_lm_decoder *d) { return d->cache_bytes * (size_t)d->lm->stack.nlayers; }

void zt_lm_decoder_reorder(zt_lm_decoder *d, const int *from, int n) {
  zt_check(n >= 1 && n <= d->rows, "internal error", "decoder: reorder of %d rows of %d", n, d->rows);
  const zt_backend *be = d->lm->model->be;
  const size_t row = d->row_bytes;
  if (!d->swap) d->swap = be->alloc(d->cache_bytes, "key/value cache reorder");
  for (int l = 0; l < d->lm->stack.nlayers; l++) {
    char *c = d->cache[l], *t = d->swap;
    be->copy(t, c, (size_t)n * row);
    for (int b = 0; b < n; b++)
      if (from[b] >= 0 && from[b] != b) be->copy(c + (size_t)b * row, t + (size_t)from[b] * row, row);
  }
}

void zt_lm_decoder_rows(zt_lm_decoder *d, int rows) {
  zt_check(rows % d->B == 0, "internal error", "decoder: %d cache rows for micro batch %d", rows, d->B);
  if (rows <= d->rows) return;
  const zt_backend *be = d->lm->model->be;
  if (d->swap) be->release(d->swap, d->cache_bytes);
  d->swap = NULL;
  for (int l = 0; l < d->lm->stack.nlayers; l++) {
    be->release(d->cache[l], d->cache_bytes);
    d->cache[l] = NULL;
  }
  d->rows = rows;
  d->cache_bytes = (size_t)rows * d->row_bytes;
  for (int l = 0; l < d->lm->stack.nlayers; l++) d->cache[l] = be->alloc(d->cache_bytes, "key/value cache");
  zt_lm_decoder_select(d, 0);
}

void zt_lm_decoder_select(zt_lm_decoder *d, int row0) {
  zt_check(row0 >= 0 && row0 % d->B == 0 && row0 < d->rows, "internal error", "decoder: rows from %d of %d", row0,
           d->rows);
  for (int l = 0; l < d->lm->stack.nlayers; l++)
    d->lm->stack.blocks[l].a.attn.cache = (char *)d->cache[l] + (size_t)row0 * d->row_bytes;
}

size_t zt_lm_decoder_row_bytes(const zt_lm_decoder *d) { return d->row_bytes * (size_t)d->lm->stack.nlayers; }

void *zt_lm_decoder_input(const zt_lm_decoder *d) { return zt_stack_input(&d->lm->stack); }

size_t zt_lm_decoder_stage_elems(const zt_lm_decoder *d, int n) {
  return (size_t)d->B * n * d->lm->cfg.hidden_size;
}

/* The stack writes layer l's output into slot l + 1 of the planned length, whatever the pass's n tokens per row: the
 * last layer's is the stack's output. */
void *zt_lm_decoder_output(const zt_lm_decoder *d, int n) {
  (void)n;
  return zt_stack_output(&d->lm->stack);
}

int zt_lm_decoder_vocab(const zt_lm_decoder *d) { return d->lm->V * d->lm->tp.size; }

/* Host (and, for half storage, backend fp32) room for the logits of `rows` rows. */
static void logits_room(zt_lm_decoder *d, size_t rows) {
  if (rows <= d->rows_cap) return;
  zt_lm *lm = d->lm;
  const zt_backend *be = lm->model->be;
  const size_t V = (size_t)lm->V;
  if (d->logits32) {
    be->release(d->logits32, d->rows_cap * V * sizeof(float));
    d->logits32 = be->alloc(rows * V * sizeof(float), "decoder logits");
  }
  free(d->h_local), free(d->h_all);
  d->h_local = zt_malloc(rows * V * sizeof(float), "decoder logits");
  d->h_all = zt_malloc(rows * V * (size_t)lm->tp.size * sizeof(float), "decoder logits");
  d->rows_cap = rows;
}

int zt_lm_decode(zt_lm_decoder *d, const int32_t *tokens, int n, int past, int cached, int all, float *logits) {
  zt_lm *lm = d->lm;
  zt_model *m = lm->model;
  const zt_backend *be = m->be;
  const zt_dtype dt = m->dt;
  const int B = d->B, C = lm->cfg.hidden_size, V = lm->V;
  zt_check(n >= 1 && past >= 0 && past + n <= d->Tmax && (cached ? (past == 0 || n == 1) : past == 0),
           "internal error", "decoder: %d tokens after %d of %d (%s)", n, past, d->Tmax, cached ? "cached" : "full");
  const zt_pass pass = {.B = B, .T = n, .seed = 0, .training = 0, .kv_cache = cached, .kv_past = past,
                        .kv_tmax = d->Tmax};
  if (lm->first) {
    const size_t N = (size_t)B * n;
    for (int b = 0; b < B; b++)
      for (int t = 0; t < n; t++) {
        d->h_tok[(size_t)b * n + t] = tokens[(size_t)b * n + t];
        d->h_pos[(size_t)b * n + t] = past + t;
      }
    const int32_t *tok = zt_backend_stage_in(be, lm->tokens_dev, d->h_tok, N * sizeof(int32_t));
    const int32_t *pos = zt_backend_stage_in(be, lm->pos_buf, d->h_pos, N * sizeof(int32_t));
    zt_embedding_layer_forward(&lm->emb, zt_stack_input(&lm->stack), tok, pos, NULL, 0.0f, 0, &pass);
  }
  zt_stack_forward(&lm->stack, 0, &pass, NULL);
  if (!lm->last) return 0;
  /* the final layernorm and the output layer on each row's last token only (all: on every token) */
  const size_t es = zt_dtype_size(dt), rowb = (size_t)C * es;
  const char *out = zt_lm_decoder_output(d, n);
  const size_t R = all ? (size_t)B * n : (size_t)B;
  const void *rows = out;
  if (!all) {
    void *tmp = lm->stack.scratch.tmp; /* [B, C]: free once the layers ran */
    for (int b = 0; b < B; b++) be->copy((char *)tmp + (size_t)b * rowb, out + ((size_t)b * n + n - 1) * rowb, rowb);
    rows = tmp;
  }
  zt_norm_forward(be, dt, lm->cfg.rmsnorm, lm->bcfg.ln1p, lm->lnf, lm->lnf_mean, lm->lnf_rstd, rows, lm->lnf_w,
                  lm->lnf_b, (int)R, C, lm->cfg.ln_eps);
  be->matmul_forward(dt, lm->logits, NULL, lm->lnf, lm->out_w, NULL, (int)R, C, V);
  logits_room(d, R);
  const size_t RV = R * V;
  const void *l32 = lm->logits;
  if (d->logits32) {
    be->convert(d->logits32, ZT_DTYPE_FP32, lm->logits, dt, RV);
    l32 = d->logits32;
  }
  be->to_host(d->h_local, l32, RV * sizeof(float));
  const int tp = lm->tp.size;
  if (tp > 1) zt_allgather_f32(lm->tp.group, d->h_local, RV, d->h_all);
  else memcpy(d->h_all, d->h_local, RV * sizeof(float));
  /* rank r holds vocabulary columns [r V, (r+1) V) of every row */
  for (int r = 0; r < tp; r++)
    for (size_t i = 0; i < R; i++)
      memcpy(logits + i * V * tp + (size_t)r * V, d->h_all + ((size_t)r * R + i) * V, (size_t)V * sizeof(float));
  return 1;
}
