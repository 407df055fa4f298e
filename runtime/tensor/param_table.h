/* The parameter table: every model registers each parameter once, with its Megatron-style dotted
 * name, shape, tensor-parallel split dimension, expert id, tied group, weight-decay flag and init.
 * ZeRO partitioning, checkpoints, weight-decay groups and the flops profiler all read this table. */
#ifndef ZT_PARAM_TABLE_H
#define ZT_PARAM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor/tensor.h"

typedef enum {
  ZT_INIT_NORMAL = 0, /* N(0, init_std) */
  ZT_INIT_ZEROS = 1,
  ZT_INIT_ONES = 2,
} zt_init_kind;

typedef struct {
  char name[128];
  int ndim;
  int64_t shape[ZT_MAX_DIMS];
  size_t numel;
  zt_dtype dtype;       /* storage dtype of the parameter (fp32 masters on the CPU path) */
  size_t offset;        /* in elements, within the flat parameter (and gradient) buffer */
  int tp_split_dim;     /* -1 replicated over tensor-parallel ranks; else the dimension split */
  int expert_id;        /* -1 for dense parameters */
  int tied_group;       /* -1 none; parameters sharing an id are one tensor used in several places */
  int no_weight_decay;  /* biases and norm parameters: excluded from weight decay */
  zt_init_kind init;
  float init_std;
} zt_param;

typedef struct {
  zt_param *params;
  int count;
  int capacity;
  size_t numel;         /* total elements; offsets are 16-element (64-byte) aligned */
} zt_param_table;

void zt_param_table_init(zt_param_table *t);
void zt_param_table_free(zt_param_table *t);
/* Registers a parameter and returns its index; shapes are [out, in] for linear weights. */
int zt_param_table_add(zt_param_table *t, const char *name, int ndim, const int64_t *shape,
                       zt_init_kind init, float init_std, int no_weight_decay, int tp_split_dim);
/* Index of the parameter with this name, or -1. */
int zt_param_table_find(const zt_param_table *t, const char *name);
/* Fills the flat buffer per each parameter's init; draws are keyed by (seed, parameter index,
 * element), so every element's value is independent of threads and future tensor-parallel slicing. */
void zt_param_table_initialize(const zt_param_table *t, float *flat, uint64_t seed);
/* The same for the parameters that start in [lo, hi) only (nothing else is written). */
void zt_param_table_initialize_range(const zt_param_table *t, float *flat, uint64_t seed, size_t lo, size_t hi);
/* Number of elements that receive weight decay. */
size_t zt_param_table_decay_numel(const zt_param_table *t);

#endif
