/* Megatron's tensor-parallel regions for the explicit forward/backward layers (megatron/core/tensor_parallel/
 * mappings.py, layers.py): a column-parallel linear reads the whole input (all-gathered over the sequence
 * with --sequence-parallel; its backward all-reduces, or reduce-scatters, the input gradient), a row-parallel
 * linear sums its partial outputs over the ranks (all-reduce, or reduce-scatter with --sequence-parallel) and
 * adds its replicated bias after the sum. With --sequence-parallel the layernorm / dropout / residual regions
 * hold a contiguous 1/size of the micro batch's B*T tokens (flattened [B, T] order), and their dropout masks are
 * keyed by the global (sample, element) position, so they drop what one process drops. Tensors are the model's
 * (backend, dtype) pairs; the collectives run on device buffers through NCCL on a GPU. */
#ifndef ZT_TENSOR_PARALLEL_H
#define ZT_TENSOR_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"

typedef struct {
  const zt_group *group; /* the tensor-parallel group; NULL with one rank */
  int size, rank;
  int sp;                /* --sequence-parallel */
  const zt_backend *be;  /* where the model's tensors live */
  zt_dtype dt;           /* their storage type */
  void *gather;          /* [B*T, C]: all-gathered activations (sequence parallel), planned by the model */
  void *partial;         /* [B*T, C]: row-parallel partial sums before the reduce-scatter (sequence parallel) */
} zt_tp;

/* Tensor parallelism on (more than one rank)? NULL is one rank. */
static inline int zt_tp_on(const zt_tp *tp) { return tp && tp->size > 1; }
static inline int zt_tp_sp(const zt_tp *tp) { return zt_tp_on(tp) && tp->sp; }
/* Tokens this rank holds in the sequence-parallel regions out of NF = B*T, and the first one. */
static inline int zt_tp_local_rows(const zt_tp *tp, int NF) { return zt_tp_sp(tp) ? NF / tp->size : NF; }
static inline int zt_tp_row0(const zt_tp *tp, int NF) { return zt_tp_sp(tp) ? tp->rank * (NF / tp->size) : 0; }

/* Input of a column-parallel GEMM: x [N, C] local rows; returns x, or with sequence parallelism the
 * all-gathered [N * size, C] in tp->gather. */
const void *zt_tp_gather(const zt_tp *tp, const void *x, int N, int C);
/* Where a row-parallel GEMM writes its partial [NF, C] output: out itself, or tp->partial (sequence parallel). */
void *zt_tp_partial_buffer(const zt_tp *tp, void *out);
/* Sums the partial [NF, C] over the ranks into out [N, C] (all-reduce in place, or reduce-scatter from
 * tp->partial with sequence parallelism), then adds bias [C] (NULL: none) to every row. Also the backward of
 * a column-parallel input (the input gradient), with bias NULL. */
void zt_tp_reduce(const zt_tp *tp, void *out, const void *bias, int N, int C);

#endif
