/* The schedules that run one iteration's micro batches through any model (models/model.h): no pipelining (each
 * micro batch's forward then backward), Megatron's 1F1B (forward_backward_pipelining_without_interleaving) and its
 * interleaved schedule over virtual chunks (forward_backward_pipelining_with_interleaving,
 * --num-layers-per-virtual-pipeline-stage), and the forward-only pass of evaluation. The tensors crossing a stage
 * boundary are the model's (zt_model.stage_*: one or several, in its backend memory and dtype). */
#ifndef ZT_SCHEDULE_H
#define ZT_SCHEDULE_H

#include <stdint.h>

#include "train/engine.h"

/* After the process groups, before the model: the virtual chunks, Megatron's check that the micro batches are a
 * multiple of the stages with the interleaved schedule, this stage's steps and the stage-sized buffers the model
 * must plan for them (e->vpp, e->pp_buffers). */
void zt_schedule_setup(zt_engine *e);
/* One iteration's nmb micro batches (forwards, backwards, the gradients accumulated into the model's): sum receives
 * the sum of each named loss over them, on every stage; *overflow: an fp16 gradient left the fp16 range. Without
 * pipelining the flops profiler (profiling) records the last micro batch's forward. */
void zt_schedule_train(zt_engine *e, int nmb, int profiling, zt_loss_sums *sum, int *overflow);
/* Forward only (evaluation) of the micro batch loaded into the engine: the named losses are added to sum on the
 * last stage (zt_schedule_from_last then shares them). */
void zt_schedule_eval_forward(zt_engine *e, const zt_pass *pass, zt_loss_sums *sum);
/* The last stage's sums on every stage of the pipeline. */
void zt_schedule_from_last(const zt_engine *e, zt_loss_sums *l);
/* Empty sums of the model's losses. */
zt_loss_sums zt_loss_sums_empty(const zt_model *m);

#endif
