/* Tensor-parallel regions: the gathers and reductions around column- and row-parallel linears. */
#include "models/transformer/tensor_parallel.h"

const void *zt_tp_gather(const zt_tp *tp, const void *x, int N, int C) {
  if (!zt_tp_sp(tp)) return x;
  zt_allgather(tp->group, tp->dt, x, (size_t)N * C, tp->gather);
  return tp->gather;
}

void *zt_tp_partial_buffer(const zt_tp *tp, void *out) { return zt_tp_sp(tp) ? tp->partial : out; }

void zt_tp_reduce(const zt_tp *tp, void *out, const void *bias, int N, int C) {
  if (zt_tp_sp(tp)) zt_reduce_scatter_sum(tp->group, tp->dt, tp->partial, (size_t)N * C, out);
  else if (zt_tp_on(tp)) zt_allreduce_sum(tp->group, tp->dt, out, (size_t)N * C);
  if (bias) tp->be->add_bias(tp->dt, out, bias, N, C);
}
