/* Megatron's input embedding: word embeddings [V_padded, C] plus learned absolute position
 * embeddings [max_positions, C], then embedding dropout (the hidden dropout). With tensor parallelism the
 * word embeddings are vocab-parallel (rows [v0, v0 + V) on this rank, the lookups summed over the ranks), the
 * position embeddings replicated, and with --sequence-parallel the output is this rank's share of the tokens. */
#ifndef ZT_EMBEDDING_H
#define ZT_EMBEDDING_H

#include "models/transformer/transformer.h"

typedef struct {
  float *wte, *wpe;     /* parameters */
  float *dwte, *dwpe;   /* gradients */
  int V, max_pos, C;    /* V: this rank's rows of the word embeddings (vocab-parallel) */
  const zt_tp *tp;      /* tensor parallelism (set after binding), or NULL */
  int v0;               /* first vocabulary row of this rank's slice */
  double *fwd_time;     /* flops profiler: [word, position] forward seconds accumulate here, or NULL */
} zt_embedding;

/* Registers "<prefix>.word_embeddings.weight" and "<prefix>.position_embeddings.weight". */
void zt_embedding_register(zt_param_table *t, const char *prefix, int V, int max_pos, int C, float std);
void zt_embedding_bind(zt_embedding *e, const zt_param_table *t, const char *prefix, float *params, float *grads);
/* out[B,T,C] = dropout(wte[tokens] + wpe[positions]); positions NULL means 0..T-1 per row. With
 * --sequence-parallel out holds only this rank's tokens (zt_tp_local_rows). */
void zt_embedding_layer_forward(const zt_embedding *e, float *out, const int32_t *tokens, const int32_t *positions,
                                float dropout_p, const zt_pass *pass, int32_t *pos_scratch);
/* Accumulates the word and position embedding gradients from dout[B,T,C] (modified in place). */
void zt_embedding_layer_backward(const zt_embedding *e, float *dout, const int32_t *tokens,
                                 const int32_t *positions, float dropout_p, const zt_pass *pass,
                                 int32_t *pos_scratch);

#endif
