/* Megatron-DeepSpeed's throughput formulas (megatron/utils.py throughput_calculator): model FLOPs per
 * iteration, samples/s, tokens per GPU per second and TFLOPs, so our numbers match users' logs. */
#ifndef ZT_THROUGHPUT_H
#define ZT_THROUGHPUT_H

#include <stdint.h>

typedef struct {
  int num_layers, hidden_size, num_heads, kv_heads, ffn_hidden_size, padded_vocab_size, seq_length;
  int swiglu, topk;
  int recompute_full, recompute_selective;
} zt_flops_model;

/* FLOPs of one iteration over `batch` samples: 2 * MACs, forward + backward (3x forward), plus
 * one forward under full recompute or the attention under selective recompute. */
double zt_iteration_flops(const zt_flops_model *f, int64_t batch);

#endif
