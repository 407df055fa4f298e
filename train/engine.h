/* The training engine: composes the model, data, optimizer, LR schedule and logging into Megatron's
 * train loop (gradient accumulation over micro batches, clipping, periodic validation, the log line). */
#ifndef ZT_ENGINE_H
#define ZT_ENGINE_H

#include <stdint.h>

#include "data/mock_data.h"
#include "models/gpt/gpt.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "train/args.h"

typedef struct {
  const zt_args *args;
  zt_gpt model;
  zt_optimizer opt;
  zt_lr_schedule sched;
  zt_mock_data data[3];          /* train, valid, test */
  int32_t *text;                 /* [mbs, seq+1] */
  int32_t *tokens, *targets;     /* [mbs, seq] */
  float *loss_mask;              /* [mbs, seq] */
  int64_t iteration;
  int64_t consumed_samples, consumed_tokens, consumed_valid_samples;
  double flops_per_iteration;
} zt_engine;

/* Builds everything from validated args (prints the model and memory plan). */
void zt_engine_init(zt_engine *e, const zt_args *args);
void zt_engine_free(zt_engine *e);

/* One training iteration over the global batch; returns the mean lm loss and sets *grad_norm. */
float zt_engine_train_step(zt_engine *e, double *grad_norm);
/* Mean lm loss over eval_iters global batches of split (1 valid, 2 test), without dropout. */
float zt_engine_evaluate(zt_engine *e, int split);
/* The whole run: train for train_iters with logging and validation, then final validation. */
void zt_engine_run(zt_engine *e);

#endif
