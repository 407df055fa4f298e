/* ZeRO stages 1-2 (see zero.h). */
#include "runtime/zero/zero.h"

#include <string.h>

#include "runtime/base/error.h"

size_t zt_zero_padded(size_t numel, int dp_size) {
  const size_t d = (size_t)(dp_size > 0 ? dp_size : 1);
  return (numel + d - 1) / d * d;
}

void zt_zero_init(zt_zero *z, int stage, const zt_group *dp, size_t numel, size_t reduce_bucket,
                  size_t allgather_bucket, int reduce_scatter, const zt_backend *be, zt_dtype param_dt) {
  memset(z, 0, sizeof(*z));
  zt_check(stage >= 1 && stage <= 3, "internal error", "zero: stage %d", stage);
  z->stage = stage;
  z->dp = dp;
  z->dp_rank = zt_group_rank(dp);
  z->dp_size = zt_group_size(dp);
  z->numel = numel;
  z->padded = zt_zero_padded(numel, z->dp_size);
  z->part = z->padded / (size_t)z->dp_size;
  z->lo = z->part * (size_t)z->dp_rank;
  z->hi = z->lo + z->part < numel ? z->lo + z->part : numel;
  if (z->lo > numel) z->lo = numel;
  z->reduce_bucket = reduce_bucket;
  z->allgather_bucket = allgather_bucket;
  z->reduce_scatter = reduce_scatter;
  z->be = be;
  z->param_dt = param_dt;
  /* a bucket that covers whole partitions runs in place on the flat buffer; smaller buckets gather a piece
   * of every rank's partition in one staging buffer, shared by both collectives */
  size_t per = 0;
  for (int k = 0; k < 2; k++) {
    size_t b = (k ? allgather_bucket : reduce_bucket) / (size_t)z->dp_size;
    if (b < 1) b = 1;
    if (b < z->part && b > per) per = b;
  }
  z->stage_len = per * (size_t)z->dp_size;
  z->stage_buf = z->dp_size > 1 && per > 0 ? be->alloc(z->stage_len * sizeof(float), "ZeRO bucket") : NULL;
}

void zt_zero_free(zt_zero *z) {
  if (z->stage_buf) z->be->release(z->stage_buf, z->stage_len * sizeof(float));
  z->stage_buf = NULL;
}

static void scale(const zt_zero *z, float *x, size_t n, float f) {
  if (f != 1.0f) z->be->scale_f32(x, f, n);
}

/* Elements per rank in each bucket of `bucket` elements (all ranks together), at least 1. */
static size_t piece(const zt_zero *z, size_t bucket) {
  size_t b = bucket / (size_t)z->dp_size;
  if (b < 1) b = 1;
  return b < z->part ? b : z->part;
}

void zt_zero_reduce_gradients(zt_zero *z, float *grads, float pre_scale, float post_scale) {
  const int D = z->dp_size;
  if (z->stage == 1 || !z->reduce_scatter || D == 1) {
    scale(z, grads, z->padded, pre_scale);
    if (D > 1) zt_allreduce_sum_f32(z->dp, grads, z->padded);
    scale(z, grads, z->padded, post_scale);
    return;
  }
  /* stage 2: for each piece j of the partitions, gather piece j of every rank's partition into the
   * staging buffer (rank order), reduce-scatter it, and keep the sum of this rank's piece */
  const size_t c = piece(z, z->reduce_bucket);
  if (c == z->part) { /* one reduce-scatter of the whole buffer, in place */
    scale(z, grads, z->padded, pre_scale);
    zt_reduce_scatter_sum_f32(z->dp, grads, z->part, grads + z->lo);
    scale(z, grads + z->lo, z->part, post_scale);
    return;
  }
  float *stage = z->stage_buf;
  for (size_t j = 0; j < z->part; j += c) {
    const size_t n = j + c < z->part ? c : z->part - j;
    for (int r = 0; r < D; r++)
      z->be->copy(stage + (size_t)r * n, grads + (size_t)r * z->part + j, n * sizeof(float));
    scale(z, stage, n * (size_t)D, pre_scale);
    float *mine = grads + z->lo + j;
    zt_reduce_scatter_sum_f32(z->dp, stage, n, mine);
    scale(z, mine, n, post_scale);
  }
}

void zt_zero_allgather_params(zt_zero *z, void *params) {
  const int D = z->dp_size;
  if (D == 1) return;
  const zt_dtype dt = z->param_dt;
  const size_t c = piece(z, z->allgather_bucket), es = zt_dtype_size(dt);
  if (c == z->part) { /* the partitions are the all-gather's blocks, in rank order: in place */
    zt_allgather(z->dp, dt, zt_at(params, dt, z->lo), z->part, params);
    return;
  }
  for (size_t j = 0; j < z->part; j += c) {
    const size_t n = j + c < z->part ? c : z->part - j;
    zt_allgather(z->dp, dt, zt_at(params, dt, z->lo + j), n, z->stage_buf);
    for (int r = 0; r < D; r++)
      if (r != z->dp_rank)
        z->be->copy(zt_at(params, dt, (size_t)r * z->part + j), zt_at(z->stage_buf, dt, (size_t)r * n), n * es);
  }
}

double zt_zero_partition_sumsq(const zt_zero *z, const zt_param_table *t, const float *part, int count_replicated,
                               int exclude) {
  double total = 0.0;
  const size_t lo = z->base + z->lo, hi = z->base + z->hi;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if ((p->tp_split_dim < 0 && !count_replicated) || i == exclude) continue;
    size_t a = p->offset > lo ? p->offset : lo;
    size_t b = p->offset + p->numel < hi ? p->offset + p->numel : hi;
    if (a >= b) continue;
    const double norm = z->be->norm2(part + (a - lo), b - a); /* fixed-order blocks: the same bits every run */
    total += norm * norm;
  }
  return total;
}
