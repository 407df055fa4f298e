/* Megatron's input embedding: word embeddings [V_padded, C] plus learned absolute position embeddings
 * [max_positions, C] (plus token-type embeddings [num_tokentypes, C] for BERT), then embedding dropout (the hidden
 * dropout). With tensor parallelism the word embeddings are vocab-parallel (rows [v0, v0 + V) on this rank, the
 * lookups summed over the ranks), the position and type embeddings replicated, and with --sequence-parallel the output is this rank's share of the tokens.
 * Ids and positions are in the backend's memory; the tables and activations are the model's (backend, dtype). */
#ifndef ZT_EMBEDDING_H
#define ZT_EMBEDDING_H

#include "models/transformer/transformer.h"

typedef struct {
  void *wte, *wpe, *wtt; /* parameters (wtt: token types, or NULL) */
  void *dwte, *dwpe, *dwtt; /* gradients */
  int V, max_pos, C;    /* V: this rank's rows of the word embeddings (vocab-parallel) */
  int ntypes;           /* token types (0: none) */
  const zt_tp *tp;      /* tensor parallelism, with the backend and dtype (set after binding) */
  int v0;               /* first vocabulary row of this rank's slice */
  double *fwd_time;     /* flops profiler: [word, position] forward seconds accumulate here, or NULL */
} zt_embedding;

/* Registers "<prefix>.word_embeddings.weight", "<prefix>.position_embeddings.weight" (max_pos 0: none, Megatron's
 * add_position_embedding False: --no-position-embedding or rotary embeddings) and, with ntypes > 0,
 * "<prefix>.tokentype_embeddings.weight" (the positions and types see every token: not sequence-parallel
 * parameters). */
void zt_embedding_register(zt_param_table *t, const char *prefix, int V, int max_pos, int C, float std, int ntypes);
/* The last pipeline stage's copy of the tied word embeddings (Megatron's "word_embeddings.weight", kept equal to
 * the first stage's through the embedding group): [V, C], vocab-parallel, shared. Returns its index. */
int zt_embedding_register_copy(zt_param_table *t, int V, int C, float std);
void zt_embedding_bind(zt_embedding *e, const zt_param_table *t, const char *prefix, void *params, void *grads,
                       size_t es);
/* out[B,T,C] = dropout(wte[tokens] + wpe[positions] (+ wtt[types])). With --sequence-parallel out holds only this
 * rank's tokens (zt_tp_local_rows). types: NULL without token types. The dropout draws at layer `site_layer`'s
 * embedding site (zt_dropout_site): 0 for a model's input, the first decoder layer's number for T5's decoder input. */
void zt_embedding_layer_forward(const zt_embedding *e, void *out, const int32_t *tokens, const int32_t *positions,
                                const int32_t *types, float dropout_p, int site_layer, const zt_pass *pass);
/* Accumulates the embeddings' gradients from dout[B,T,C] (modified in place). */
void zt_embedding_layer_backward(const zt_embedding *e, void *dout, const int32_t *tokens,
                                 const int32_t *positions, const int32_t *types, float dropout_p, int site_layer,
                                 const zt_pass *pass);

#endif
