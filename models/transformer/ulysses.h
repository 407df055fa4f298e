/* DeepSpeed-Ulysses sequence parallelism (Megatron-DeepSpeed's --ds-sequence-parallel-size; DeepSpeed's
 * deepspeed/sequence/layer.py DistributedAttention): the ranks of a sequence-parallel group each hold 1/size of every
 * sequence of the micro batch (rank r the positions [r T/size, (r+1) T/size) of each row) through the whole layer stack,
 * except inside the self-attention: there an all-to-all turns the projected queries, keys and values from "my tokens,
 * every head" into "every token, my heads" (rank r the heads [r NH/size, (r+1) NH/size)), each rank runs the ordinary
 * attention on its heads over the whole sequence, and a second all-to-all turns the context back. The parameters are
 * whole on every rank; their gradients are partial sums over the group, which the engine adds up with the data-parallel
 * reduction (DeepSpeed's sequence-data-parallel group). The dropout masks are keyed by the global (sample, position),
 * so the ranks drop what one process drops.
 *
 * DeepSpeed's FPDT (--ds-sequence-parallel-fpdt; deepspeed/sequence/fpdt_layer.py FPDT_InputConstruct) deals the
 * sequence out in chunks instead: with the global chunk size K (--ds-sequence-parallel-fpdt-chunk-size) each rank's
 * share is T/K chunks of c = K/size tokens, rank r holding global chunks r, r + size, r + 2 size, ... in order, so
 * that chunk k of every rank together make the contiguous positions [k K, (k+1) K). The all-to-all places each
 * received chunk at its position: the attention sees the sequence in its natural order either way. */
#ifndef ZT_ULYSSES_H
#define ZT_ULYSSES_H

#include <stddef.h>

#include "models/model.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"

typedef struct {
  const zt_group *group; /* the sequence-parallel group (consecutive world ranks); NULL with one rank */
  int size, rank;
  int chunk; /* tokens of one chunk of a rank's share: the whole share, or FPDT's K/size */
  /* shared work space in the backend's memory, planned by the model for B x T/size local tokens of width 3A: the
   * all-to-all's send and receive buffers, the local projection before its all-to-all, and in the backward d(context)
   * and d(q, k, v) of this rank's heads over the whole sequence */
  void *send, *recv, *qkv_local, *dctx_heads, *dqkv_heads;
} zt_usp;

static inline int zt_usp_on(const zt_usp *u) { return u && u->size > 1; }

/* The position in its row of this rank's local token t (FPDT's chunked share or the contiguous one). */
static inline int zt_usp_position(const zt_usp *u, int t) {
  return (t / u->chunk * u->size + u->rank) * u->chunk + t % u->chunk;
}

/* local [B, Tl, W] (this rank's Tl tokens of each row; a row's W columns in size chunks of W/size, chunk r for rank
 * r) -> heads [B, Tl size, W/size] (every token of each row in its order, this rank's chunk), through one
 * all-to-all. */
void zt_usp_seq_to_heads(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *heads, const void *local, int B,
                         int Tl, int W);
/* The inverse: heads [B, Tl size, W/size] -> local [B, Tl, W]. */
void zt_usp_heads_to_seq(const zt_usp *u, const zt_backend *be, zt_dtype dt, void *local, const void *heads, int B,
                         int Tl, int W);

/* out = residual + dropout(x) (residual NULL: dropout(x), which is also the dropout's backward) over a pass's B x T
 * tokens of C values, the mask keyed by each token's position in its sample (zt_pass's seq_off, seq_chunk and
 * seq_total under Ulysses; t otherwise; out may alias x or residual). */
void zt_pass_dropout(const zt_backend *be, zt_dtype dt, void *out, const void *residual, const void *x,
                     const zt_pass *pass, int C, const zt_dropout *d);

#endif
