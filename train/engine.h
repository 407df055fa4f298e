/* The training engine: composes the model, data, optimizer, LR schedule and logging into Megatron's
 * train loop (gradient accumulation over micro batches, clipping, periodic validation, the log line). */
#ifndef ZT_ENGINE_H
#define ZT_ENGINE_H

#include <stdint.h>

#include "data/gpt_data.h"
#include "data/mock_data.h"
#include "data/tokenizer/tokenizer.h"
#include "models/gpt/gpt.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "train/args.h"

typedef struct {
  const zt_args *args;
  zt_gpt model;
  zt_optimizer opt;
  zt_lr_schedule sched;
  zt_mock_data data[3];          /* --mock-data: train, valid, test */
  zt_gpt_data gdata;             /* --data-path and friends */
  int use_gdata;
  int32_t eod;                   /* end-of-document id (tokenizer's; V-1 for mock data) */
  int32_t *text;                 /* [mbs, seq+1] */
  int32_t *tokens, *targets;     /* [mbs, seq] */
  float *loss_mask;              /* [mbs, seq] */
  int32_t *positions;            /* [mbs, seq] with --reset-position-ids, else NULL */
  int32_t *key_start;            /* [mbs, seq] with --reset-attention-mask, else NULL */
  int64_t iteration;
  int64_t consumed_samples, consumed_tokens, consumed_valid_samples;
  double flops_per_iteration;
} zt_engine;

/* The tokenizer named by the data flags (NULL with --mock-data); sets args' vocabulary size from
 * it and logs Megatron's padded-vocabulary line. */
zt_tokenizer *zt_engine_tokenizer(zt_args *args);

/* Builds everything from validated args: the datasets first (so bad data is refused before the
 * model is allocated), then the model (printing its memory plan), optimizer and schedule. tok is
 * the data's tokenizer (its eod id) or NULL for --mock-data. */
void zt_engine_init(zt_engine *e, const zt_args *args, const zt_tokenizer *tok);
void zt_engine_free(zt_engine *e);

/* One training iteration over the global batch; returns the mean lm loss and sets *grad_norm. */
float zt_engine_train_step(zt_engine *e, double *grad_norm);
/* Mean lm loss over eval_iters global batches of split (1 valid, 2 test), without dropout. */
float zt_engine_evaluate(zt_engine *e, int split);
/* The whole run: train for train_iters with logging and validation, then final validation. */
void zt_engine_run(zt_engine *e);

#endif
