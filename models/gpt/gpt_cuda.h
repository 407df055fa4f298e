/* The GPT model on one GPU, as one object (the tests' and tools' convenience API): the shared model of
 * models/gpt/gpt.h built on the CUDA backend (device 0) in one process, with its Adam step. Same parameter table
 * (names, order, offsets: zt_gpt_single_table), same dropout masks, same loss as on the CPU, so a checkpoint or a
 * flat parameter buffer moves between the two unchanged. The trainer drives the same model through zt_model
 * (models/model.h) in every parallel layout; this API is for one process without parallelism.
 *
 * Storage: `dt` (fp32, bf16 or fp16) for the parameters the ops read and the activations; the gradients
 * accumulate in fp32; with a half dt the fp32 master weights and the Adam moments live beside them (the
 * mixed-precision layout of docs/mixed_precision.md); with fp32 the parameters are the masters.
 * Without a CUDA build or device, zt_gpt_cuda_build refuses (check zt_cuda_device_count() first). */
#ifndef ZT_GPT_CUDA_H
#define ZT_GPT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "models/gpt/gpt.h"
#include "runtime/base/dtype.h"
#include "runtime/optim/optimizer.h"

/* Device bytes of each part of the plan for micro batch B (zt_gpt_cuda_plan). */
typedef struct {
  size_t params, grads, optim, activations, total;
} zt_gpt_cuda_bytes;

typedef struct zt_gpt_cuda zt_gpt_cuda;

/* The device memory the model needs at micro batch B (cfg->micro_batch is ignored). */
zt_gpt_cuda_bytes zt_gpt_cuda_plan(const zt_gpt_config *cfg, zt_dtype dt, int B);
/* Starts the CUDA backend on device 0, prints the plan beside the device's free memory and the largest micro batch
 * that fits, refuses it (before allocating, with the numbers) when it does not fit, allocates, and returns the
 * model. Tensor and pipeline parallelism and ZeRO partitions are the trainer's (refused here, flag named). */
zt_gpt_cuda *zt_gpt_cuda_build(const zt_gpt_config *cfg, zt_dtype dt);
void zt_gpt_cuda_free(zt_gpt_cuda *g);
const zt_param_table *zt_gpt_cuda_table(const zt_gpt_cuda *g);

/* Parameters in and out as host fp32 [table.numel] (the masters; the dt copy is refreshed on the way in). */
void zt_gpt_cuda_set_params(zt_gpt_cuda *g, const float *host);
void zt_gpt_cuda_get_params(const zt_gpt_cuda *g, float *host);
/* The Adam moments in and out as host fp32 [table.numel] each (checkpoints). */
void zt_gpt_cuda_set_moments(zt_gpt_cuda *g, const float *m, const float *v);
void zt_gpt_cuda_get_moments(const zt_gpt_cuda *g, float *m, float *v);
/* The accumulated gradients as host fp32 [table.numel]. */
void zt_gpt_cuda_get_grads(const zt_gpt_cuda *g, float *host);

/* Forward over host tokens/positions/targets/loss_mask/key_start as zt_gpt_forward (positions, loss_mask,
 * pass->key_start may be NULL); returns the masked mean loss (waits for the device). */
float zt_gpt_cuda_forward(zt_gpt_cuda *g, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                          const float *loss_mask, const zt_pass *pass);
/* Backward of the last forward; gradients accumulate scaled by grad_scale. */
void zt_gpt_cuda_backward(zt_gpt_cuda *g, float grad_scale);

/* The global L2 norm of the accumulated fp32 gradients (waits). */
double zt_gpt_cuda_grad_norm(zt_gpt_cuda *g);
/* One Adam/AdamW step (cfg->kind must be ZT_OPT_ADAM) with learning rate lr and gradients times grad_scale,
 * step = the number of applied steps including this one (bias correction); zeroes the gradients. */
void zt_gpt_cuda_adam_step(zt_gpt_cuda *g, const zt_opt_config *cfg, double lr, float grad_scale, int64_t step);
/* Zeroes the gradients without a step (a skipped iteration). */
void zt_gpt_cuda_zero_grads(zt_gpt_cuda *g);

#endif
