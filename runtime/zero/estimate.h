/* DeepSpeed's ZeRO model-states memory estimators, formula for formula with Python's arithmetic
 * (deepspeed/runtime/zero/stage_1_and_2.py::estimate_zero2_model_states_mem_needs and
 * stage3.py::estimate_zero3_model_states_mem_needs, 0.16), their "all_cold" tables as DeepSpeed prints
 * them, and the parameter count and largest layer of a Megatron GPT shape. docs/zero_memory_estimate.md. */
#ifndef ZT_ZERO_ESTIMATE_H
#define ZT_ZERO_ESTIMATE_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
  int64_t cpu_bytes, gpu_bytes;
  int64_t largest_layer_bytes; /* ZeRO-3 only: 4 x largest_layer_params */
} zt_zero_mem;

/* ZeRO-2 (also DeepSpeed's only estimator for the stage-1/2 optimizer), P = total_params, G = nodes x gpus:
 * offload: gpu = 2P, cpu = int(P x max(4G, 16) x abf); else gpu = 2P + int(18P / G), cpu = int(P x 4 x gpus_per_node x abf). */
zt_zero_mem zt_zero2_mem_needs(int64_t total_params, int gpus_per_node, int nodes, int cpu_offload, double abf);

/* ZeRO-3, L = largest_layer_params, f = 1 / nodes:
 * optimizer+param offload: gpu = 4L, cpu = P x 18f x abf (zero_init) or P x max(4 gpus_per_node, 18f) x abf;
 * optimizer offload only:  gpu = 4L + int(2P / G), cpu = P x 16f x abf or P x max(4 gpus_per_node, 16f) x abf;
 * no offload:              gpu = 4L + int(18P / G), cpu = L x 4 x gpus_per_node x abf (zero_init) or P x 4 x gpus_per_node x abf. */
zt_zero_mem zt_zero3_mem_needs(int64_t total_params, int64_t largest_layer_params, int gpus_per_node, int nodes,
                               int cpu_offload, int cpu_offload_params, int zero_init, double abf);

/* The tables of estimate_zero2/3_model_states_mem_needs_all_cold: header lines, then
 * " %7.2fGB | %6.2fGB | <options>" per option set, GB = 2^30 bytes. enum_names: write the offload device as
 * Python >= 3.11 formats DeepSpeed's OffloadDeviceEnum ("OffloadDeviceEnum.cpu") instead of "cpu " (Python
 * <= 3.10 and DeepSpeed's docs). */
void zt_zero2_print_table(FILE *f, int64_t total_params, int gpus_per_node, int nodes, double abf, int enum_names);
void zt_zero3_print_table(FILE *f, int64_t total_params, int64_t largest_layer_params, int gpus_per_node, int nodes,
                          double abf, int enum_names);

/* Megatron's vocabulary padding: the smallest multiple of divisible_by x tp_size >= vocab. */
int64_t zt_zero_pad_vocab(int64_t vocab, int64_t divisible_by, int64_t tp_size);

#endif
