/* The parameter table: every model registers each parameter once, with its Megatron-style dotted
 * name, shape, tensor-parallel split dimension, expert id, tied group, weight-decay flag, Megatron's
 * sequence_parallel and shared attributes, and init. ZeRO partitioning, checkpoints, weight-decay groups,
 * gradient finalization and norms, and the flops profiler all read this table. */
#ifndef ZT_PARAM_TABLE_H
#define ZT_PARAM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor/tensor.h"

typedef enum {
  ZT_INIT_NORMAL = 0, /* N(0, init_std) */
  ZT_INIT_ZEROS = 1,
  ZT_INIT_ONES = 2,
  ZT_INIT_UNIFORM = 3, /* U(-init_std, init_std): PyTorch's default nn.Linear init (bound 1/sqrt(fan_in)), which
                          DeepSpeed's MoE router and residual coefficient keep; Xavier's (zt_param_table_xavier) */
} zt_init_kind;

typedef struct {
  char name[128];
  int ndim;
  int64_t shape[ZT_MAX_DIMS];
  size_t numel;
  zt_dtype dtype;       /* storage dtype of the parameter (fp32 masters on the CPU path) */
  size_t offset;        /* in elements, within the flat parameter (and gradient) buffer */
  int tp_split_dim;     /* -1 replicated over tensor-parallel ranks; else the dimension split */
  int tp_parts;         /* the whole tensor is tp_parts equal blocks along tp_split_dim (0), each split over the
                           ranks on its own: a rank's slice is its share of every block, in block order (SwiGLU's
                           dense_h_to_4h: the gate and the linear halves, as DeepSpeed's universal checkpoint
                           "2 sub-params, cat dim 0" merges them); 1 for every other tensor */
  int expert_id;        /* -1 for dense parameters */
  int tied_group;       /* -1 none; parameters sharing an id are one tensor used in several places */
  int no_weight_decay;  /* biases and norm parameters: excluded from weight decay */
  int seq_parallel;     /* Megatron's param.sequence_parallel: a replicated parameter used on each rank's share of
                           the tokens under --sequence-parallel, so its gradient is summed over the tensor-parallel
                           group (set for every replicated parameter by zt_param_table_add; a model clears it for
                           one that sees all tokens, e.g. the position embeddings) */
  int shared;           /* Megatron's param.shared: this stage's copy of a parameter another pipeline stage owns
                           (the last stage's word embeddings), kept equal to it and left out of gradient norms */
  zt_init_kind init;
  float init_std;
} zt_param;

typedef struct {
  zt_param *params;
  int count;
  int capacity;
  size_t numel;         /* total elements; offsets are 16-element (64-byte) aligned */
  /* zt_param_table_experts_last: the dense parameters end at dense_numel and the experts' region starts at expert_lo
   * (both 0 when the table is in registration order) */
  size_t dense_numel, expert_lo;
} zt_param_table;

void zt_param_table_init(zt_param_table *t);
void zt_param_table_free(zt_param_table *t);
/* Registers a parameter and returns its index; shapes are [out, in] for linear weights. */
int zt_param_table_add(zt_param_table *t, const char *name, int ndim, const int64_t *shape,
                       zt_init_kind init, float init_std, int no_weight_decay, int tp_split_dim);
/* Lays the flat buffer out as [the dense parameters | the experts' (expert_id >= 0)], each group in registration
 * order: expert parallelism holds only a rank's experts, and ZeRO partitions the two regions over two groups (the
 * data-parallel group, the ranks holding the same experts). The experts' region starts past the dense parameters
 * padded to a multiple of dense_multiple (the dense partitions' padding stays clear of it), 16-aligned. */
void zt_param_table_experts_last(zt_param_table *t, size_t dense_multiple);
/* Index of the parameter with this name, or -1. */
int zt_param_table_find(const zt_param_table *t, const char *name);
/* The parameter "<prefix>.<suffix>"; dies naming it when absent. */
const zt_param *zt_param_get(const zt_param_table *t, const char *prefix, const char *suffix);
/* The same, or NULL when the table has no such parameter (an optional one: linear biases under
 * --disable-bias-linear, a LayerNorm's bias under --normalization rmsnorm). */
void *zt_param_addr_if(const zt_param_table *t, void *flat, size_t es, const char *prefix, const char *suffix);
/* Its first element in a flat buffer of es-byte elements laid out by the table (NULL for a NULL buffer). */
void *zt_param_addr(const zt_param_table *t, void *flat, size_t es, const char *prefix, const char *suffix);
/* Fills the flat buffer per each parameter's init; draws are keyed by (seed, parameter index,
 * element), so every element's value is independent of threads and future tensor-parallel slicing. */
void zt_param_table_initialize(const zt_param_table *t, float *flat, uint64_t seed);
/* The same for the parameters that start in [lo, hi) only (nothing else is written). */
void zt_param_table_initialize_range(const zt_param_table *t, float *flat, uint64_t seed, size_t lo, size_t hi);
/* dst[n] = U(-bound, bound) draws of the init stream of parameter `index` (ZT_INIT_UNIFORM), elements first ..
 * first + n - 1 of the whole matrix (a tensor-parallel slice starts past 0). */
void zt_param_uniform_fill(float *dst, size_t n, uint64_t first, float bound, uint64_t seed, uint64_t index);
/* --init-method-xavier-uniform: every matrix drawn from N(0, std) (Megatron's init_method and
 * output_layer_init_method) becomes U(-b, b), b = sqrt(6 / (fan_in + fan_out)) of the whole matrix ([out, in]: the
 * shape with the split dimension times tp), as torch.nn.init.xavier_uniform_ with gain 1. */
void zt_param_table_xavier(zt_param_table *t, int tp);
/* Number of elements that receive weight decay. */
size_t zt_param_table_decay_numel(const zt_param_table *t);

#endif
