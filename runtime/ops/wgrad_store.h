/* The zero-bubble pipeline's weight passes (--enable-zbh1-pipeline, Megatron-DeepSpeed's WeightGradStore): the
 * backward of a micro batch split into B, the input and bias gradients the previous stage waits for, and W, the
 * weight gradients of the tensor-parallel linear layers (Megatron's ColumnParallelLinear, RowParallelLinear and the
 * LM head's parallel_lm_logits), run later by the schedule.
 *
 * The store hands the model a copy of the backend whose `wgrad` points at it. Model code runs those linears'
 * backward through zt_linear_backward: normally (and always on a backend without a store) one matmul_backward; while
 * the schedule defers, the B part only (input gradient, bias gradient, GELU epilogue), with copies of the input and
 * of the output gradient kept for the W part. zt_wgrad_store_flush closes the micro batch's W; zt_wgrad_store_pop
 * runs the oldest one (first in, first out: each weight's gradient accumulates its micro batches in the order the
 * schedule pops them). The copies live in buffers of the backend reused from step to step. */
#ifndef ZT_WGRAD_STORE_H
#define ZT_WGRAD_STORE_H

#include <stddef.h>

#include "runtime/ops/backend.h"

typedef struct zt_wgrad_store zt_wgrad_store;

zt_wgrad_store *zt_wgrad_store_create(const zt_backend *inner);
void zt_wgrad_store_destroy(zt_wgrad_store *s);
/* The backend the model runs on: inner's ops, wgrad set to s (valid while s lives). */
const zt_backend *zt_wgrad_store_backend(zt_wgrad_store *s);
/* defer 1: the linears' weight gradients of the backward that follows are kept for a W (Megatron's
 * set_combine_bw(False)); 0: computed at once (the default). */
void zt_wgrad_store_defer(zt_wgrad_store *s, int defer);
/* The weight gradients deferred since the last flush become one W, queued after the others. */
void zt_wgrad_store_flush(zt_wgrad_store *s);
/* Runs the oldest queued W (there must be one) and frees its copies for reuse. */
void zt_wgrad_store_pop(zt_wgrad_store *s);
/* Ws queued and not yet run. */
int zt_wgrad_store_pending(const zt_wgrad_store *s);
/* The most bytes of copies held at once so far, and the most Ws queued at once. */
size_t zt_wgrad_store_peak_bytes(const zt_wgrad_store *s);
int zt_wgrad_store_peak_pending(const zt_wgrad_store *s);

/* matmul_backward of a tensor-parallel linear layer (arguments as backend.h's): on be's store while it defers, the B
 * part now and the weight gradient in a later W; else the whole backward now. */
void zt_linear_backward(const zt_backend *be, zt_dtype dt, void *dinp, void *dw, void *db, void *dout, const void *inp,
                        const void *w, const void *pre_gelu, int N, int IC, int OC);

#endif
