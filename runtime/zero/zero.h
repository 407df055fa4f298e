/* ZeRO stages 1 and 2 (and stage 3's partition layout, runtime/zero/zero3.h) over the data-parallel group (DeepSpeed's stage_1_and_2.py semantics, on the
 * model's one flat parameter buffer): the flat buffer, padded to a multiple of the data-parallel size,
 * is cut into equal contiguous partitions, rank r owning [r*P, (r+1)*P). Each rank keeps optimizer state
 * (moments, and fp32 master weights in mixed precision) for its partition only and updates only it; the
 * updated partitions are all-gathered into every rank's parameters, in allgather_bucket_size pieces.
 * Stage 1 averages the gradients with an all-reduce; stage 2 reduces them into their owner's partition
 * (reduce-scatter in reduce_bucket_size pieces, or an all-reduce with reduce_scatter false).
 * The buffers live in the model's backend memory (host, or a GPU's: the collectives then run through NCCL);
 * the parameters in the model's storage dtype, the gradients in fp32. See docs/zero.md. */
#ifndef ZT_ZERO_H
#define ZT_ZERO_H

#include <stddef.h>

#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"
#include "runtime/tensor/param_table.h"

typedef struct {
  int stage;                   /* 1 or 2 */
  const zt_group *dp;          /* data-parallel group */
  int dp_rank, dp_size;
  size_t numel;                /* elements of the flat buffer (table.numel) */
  size_t padded;               /* numel rounded up to a multiple of dp_size */
  size_t part;                 /* padded / dp_size: elements per partition */
  size_t lo, hi;               /* this rank's partition [lo, lo + part), clipped: hi <= numel */
  size_t base;                 /* where element 0 of the buffers it is given sits in the parameter table's flat space
                                  (0; the experts' region when they are partitioned apart) */
  size_t reduce_bucket;        /* elements per reduce-scatter (all ranks' pieces together) */
  size_t allgather_bucket;     /* elements per all-gather (all ranks' pieces together) */
  int reduce_scatter;          /* stage 2: reduce-scatter (1) or all-reduce (0) */
  const zt_backend *be;        /* where the flat buffers live */
  zt_dtype param_dt;           /* the parameters' storage type (the gradients are fp32) */
  void *stage_buf;             /* staging for the bucketed collectives (stage_len fp32 or parameter elements) */
  size_t stage_len;
} zt_zero;

/* Elements the flat parameter and gradient buffers need (numel padded to a multiple of dp_size). */
size_t zt_zero_padded(size_t numel, int dp_size);

/* Sets up the partitioning; buckets are in elements (DeepSpeed's reduce_bucket_size and
 * allgather_bucket_size, 5e8 by default). */
void zt_zero_init(zt_zero *z, int stage, const zt_group *dp, size_t numel, size_t reduce_bucket,
                  size_t allgather_bucket, int reduce_scatter, const zt_backend *be, zt_dtype param_dt);
void zt_zero_free(zt_zero *z);

/* Averages the gradients over the data-parallel group into this rank's partition of grads (a padded
 * flat buffer, tail zero): every element of [lo, hi) afterwards holds the mean over the ranks. Stage 1 and
 * stage 2 with reduce_scatter false all-reduce the whole buffer (other partitions then hold means too);
 * stage 2 otherwise reduce-scatters bucket by bucket (other partitions keep this rank's own gradients).
 * pre_scale multiplies the gradients before the sum and post_scale after it. */
void zt_zero_reduce_gradients(zt_zero *z, float *grads, float pre_scale, float post_scale);

/* Copies every rank's partition of params (a padded flat buffer of param_dt) to all ranks. */
void zt_zero_allgather_params(zt_zero *z, void *params);

/* Sum of squares of this rank's partition of the gradients (part[i] is element lo + i), counting a parameter replicated over the tensor-parallel
 * group (tp_split_dim < 0) only on tensor-parallel rank 0 (count_replicated), so that sums over the data-
 * and tensor-parallel groups give the global squared norm; parameter `exclude` (an index, or -1) is left out
 * (the last pipeline stage's copy of the tied word embeddings, counted on the first stage). */
double zt_zero_partition_sumsq(const zt_zero *z, const zt_param_table *t, const float *part, int count_replicated,
                               int exclude);

#endif
