/* Pipeline parallelism in the engine: Megatron's 1F1B schedule (forward_backward_pipelining_without_interleaving),
 * its interleaved schedule over virtual chunks (forward_backward_pipelining_with_interleaving,
 * --num-layers-per-virtual-pipeline-stage) and the forward-only pass of evaluation, over the model's stages. */
#ifndef ZT_PIPELINE_H
#define ZT_PIPELINE_H

#include <stdint.h>

#include "train/engine.h"

/* After the process groups, before any work: the virtual chunks, Megatron's check that the micro batches are a
 * multiple of the stages with the interleaved schedule, this stage's steps and the stage-sized buffers the model
 * must plan for them (e->vpp, e->pp_buffers). */
void zt_pipeline_setup(zt_engine *e);
/* One iteration's nmb micro batches through the pipeline (forwards, backwards, the gradients accumulated into the
 * model's); returns the sum of their losses, on every stage; *overflow: an fp16 gradient left the fp16 range. */
double zt_pipeline_train(zt_engine *e, int nmb, int *overflow);
/* Forward only (evaluation) of the micro batch loaded into the engine: the loss on the last stage, else 0. */
float zt_pipeline_eval_forward(zt_engine *e, const zt_pass *pass);
/* The last stage's value on every stage of the pipeline. */
double zt_pipeline_from_last(const zt_engine *e, double v);

/* engine.c's helpers the schedules share with the engine's loop */
void zt_engine_load_micro_batch(zt_engine *e, int split, uint64_t first);
void zt_engine_check_finite_loss(const zt_engine *e, float loss, int micro, const char *what);
int zt_engine_half_grads_after_backward(zt_engine *e);

#endif
