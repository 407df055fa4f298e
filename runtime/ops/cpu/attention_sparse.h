/* The CPU's block-sparse attention kernels (runtime/ops/cpu/attention_sparse.c), called by zt_attention_forward
 * and zt_attention_backward (runtime/ops/cpu/attention.c) when the descriptor has a layout and not
 * layout_as_mask. Internal to the CPU ops: models and tests go through runtime/ops/ops.h. */
#ifndef ZT_ATTENTION_SPARSE_H
#define ZT_ATTENTION_SPARSE_H

#include <stddef.h>

#include "runtime/ops/ops.h"

/* zt_fatal unless a->layout fits the op: Tq == Tk == nb * block, and the layout holds heads head0 .. head0+NH-1. */
void zt_attention_layout_check(const zt_attention_desc *a);
/* B * (listed tiles of the op's heads) * block^2: the compact probabilities, and the backward's dS scratch. */
size_t zt_attention_sparse_floats(const zt_attention_desc *a);
void zt_attention_sparse_forward(float *out, float *probs, const float *q, const float *k, const float *v,
                                 const zt_attention_desc *a);
void zt_attention_sparse_backward(float *dq, float *dk, float *dv, const float *dout, const float *probs,
                                  const float *q, const float *k, const float *v, const zt_attention_desc *a,
                                  float *scratch);

#endif
