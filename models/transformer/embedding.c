/* Word + position embeddings with embedding dropout. A token id outside the word table embeds as zeros (Megatron's
 * VocabParallelEmbedding masks it so under tensor parallelism) and takes no gradient. */
#include "models/transformer/embedding.h"

#include <stdio.h>

#include "runtime/base/timer.h"

void zt_embedding_register(zt_param_table *t, const char *prefix, int V, int max_pos, int C, float std, int ntypes) {
  char buf[200];
  int64_t w[2] = {V, C}, p[2] = {max_pos, C}, tt[2] = {ntypes, C};
  snprintf(buf, sizeof buf, "%s.word_embeddings.weight", prefix);
  zt_param_table_add(t, buf, 2, w, ZT_INIT_NORMAL, std, 0, 0); /* vocab-parallel over rows */
  int i;
  if (max_pos > 0) {
    snprintf(buf, sizeof buf, "%s.position_embeddings.weight", prefix);
    i = zt_param_table_add(t, buf, 2, p, ZT_INIT_NORMAL, std, 0, -1);
    t->params[i].seq_parallel = 0;
  }
  if (ntypes <= 0) return;
  snprintf(buf, sizeof buf, "%s.tokentype_embeddings.weight", prefix);
  i = zt_param_table_add(t, buf, 2, tt, ZT_INIT_NORMAL, std, 0, -1);
  t->params[i].seq_parallel = 0;
}

int zt_embedding_register_copy(zt_param_table *t, int V, int C, float std) {
  int64_t w[2] = {V, C};
  const int i = zt_param_table_add(t, ZT_SHARED_EMBEDDING, 2, w, ZT_INIT_NORMAL, std, 0, 0);
  t->params[i].tied_group = 0;
  t->params[i].shared = 1;
  return i;
}

void zt_embedding_bind(zt_embedding *e, const zt_param_table *t, const char *prefix, void *params, void *grads,
                       size_t es) {
  e->wte = zt_param_addr(t, params, es, prefix, "word_embeddings.weight");
  e->wpe = zt_param_addr_if(t, params, es, prefix, "position_embeddings.weight");
  e->dwte = zt_param_addr(t, grads, es, prefix, "word_embeddings.weight");
  e->dwpe = zt_param_addr_if(t, grads, es, prefix, "position_embeddings.weight");
  const zt_param *w = zt_param_get(t, prefix, "word_embeddings.weight");
  e->V = (int)w->shape[0];
  e->C = (int)w->shape[1];
  char name[200];
  snprintf(name, sizeof name, "%s.position_embeddings.weight", prefix);
  const int pi = zt_param_table_find(t, name);
  e->max_pos = pi >= 0 ? (int)t->params[pi].shape[0] : 0;
  snprintf(name, sizeof name, "%s.tokentype_embeddings.weight", prefix);
  const int k = zt_param_table_find(t, name);
  e->ntypes = k >= 0 ? (int)t->params[k].shape[0] : 0;
  e->wtt = k >= 0 ? (char *)params + t->params[k].offset * es : NULL;
  e->dwtt = k >= 0 && grads ? (char *)grads + t->params[k].offset * es : NULL;
}

static zt_dropout embedding_dropout(float p, int site_layer, const zt_pass *pass) {
  return (zt_dropout){.p = pass->training ? p : 0.0f, .seed = pass->seed,
                      .site = zt_dropout_site(site_layer, ZT_SITE_EMBEDDING), .first_sample = pass->first_sample};
}

void zt_embedding_layer_forward(const zt_embedding *e, void *out, const int32_t *tokens, const int32_t *positions,
                                const int32_t *types, float dropout_p, int site_layer, const zt_pass *pass) {
  const int N = pass->B * pass->T;
  const zt_tp *tp = e->tp;
  const zt_backend *be = tp->be;
  const zt_dtype dt = tp->dt;
  double *ft = e->fwd_time, t0 = ft ? zt_now() : 0.0, t1;
  zt_dropout d = embedding_dropout(dropout_p, site_layer, pass);
  if (!zt_tp_on(tp)) {
    /* an id past the table (finetune_llama's [PAD] after Llama's 32000 rows) embeds as zeros, as the vocab-parallel
     * lookup below gives it on every rank: the same numbers in every tensor-parallel layout */
    be->embedding_forward_range(dt, out, tokens, e->wte, N, e->C, 0, e->V);
    if (ft) ft[0] += (t1 = zt_now()) - t0, t0 = t1;
    if (e->wpe) be->embedding_forward(dt, out, positions, e->wpe, N, e->C, 1);
    if (types) be->embedding_forward(dt, out, types, e->wtt, N, e->C, 1);
    if (ft) ft[1] += zt_now() - t0;
    zt_pass_dropout(be, dt, out, NULL, out, pass, e->C, &d); /* Ulysses: keyed by the global positions */
    return;
  }
  /* vocab-parallel lookup (zeros outside the slice) summed over the ranks: exactly the full lookup */
  void *full = tp->sp ? tp->gather : out;
  be->embedding_forward_range(dt, full, tokens, e->wte, N, e->C, e->v0, e->V);
  zt_allreduce_sum(tp->group, dt, full, (size_t)N * e->C);
  if (ft) ft[0] += (t1 = zt_now()) - t0, t0 = t1;
  if (e->wpe) be->embedding_forward(dt, full, positions, e->wpe, N, e->C, 1);
  if (types) be->embedding_forward(dt, full, types, e->wtt, N, e->C, 1);
  if (ft) ft[1] += zt_now() - t0;
  if (!tp->sp) {
    be->dropout_forward(dt, out, out, pass->B, (size_t)pass->T * e->C, &d);
    return;
  }
  /* scatter to the sequence-parallel region: this rank's tokens, dropped as one process drops them */
  const int row0 = zt_tp_row0(tp, N), n = zt_tp_local_rows(tp, N);
  be->dropout_rows(dt, out, NULL, zt_at(full, dt, (size_t)row0 * e->C), row0, n, pass->T, e->C, &d);
}

void zt_embedding_layer_backward(const zt_embedding *e, void *dout, const int32_t *tokens,
                                 const int32_t *positions, const int32_t *types, float dropout_p, int site_layer,
                                 const zt_pass *pass) {
  const int N = pass->B * pass->T;
  const zt_tp *tp = e->tp;
  const zt_backend *be = tp->be;
  const zt_dtype dt = tp->dt;
  zt_dropout d = embedding_dropout(dropout_p, site_layer, pass);
  if (!zt_tp_on(tp)) {
    zt_pass_dropout(be, dt, dout, NULL, dout, pass, e->C, &d);
    be->embedding_backward_range(dt, e->dwte, tokens, dout, N, e->C, 0, e->V);
    if (e->wpe) be->embedding_backward(dt, e->dwpe, positions, dout, N, e->C);
    if (types) be->embedding_backward(dt, e->dwtt, types, dout, N, e->C);
    return;
  }
  const void *full = dout;
  if (tp->sp) { /* the backward of the scatter: all-gather the tokens' gradients */
    const int row0 = zt_tp_row0(tp, N), n = zt_tp_local_rows(tp, N);
    be->dropout_rows(dt, dout, NULL, dout, row0, n, pass->T, e->C, &d);
    full = zt_tp_gather(tp, dout, n, e->C);
  } else {
    be->dropout_backward(dt, dout, dout, pass->B, (size_t)pass->T * e->C, &d);
  }
  /* the backward of the all-reduce is the identity: each rank's slice takes its tokens' rows */
  be->embedding_backward_range(dt, e->dwte, tokens, full, N, e->C, e->v0, e->V);
  if (e->wpe) be->embedding_backward(dt, e->dwpe, positions, full, N, e->C);
  if (types) be->embedding_backward(dt, e->dwtt, types, full, N, e->C);
}
