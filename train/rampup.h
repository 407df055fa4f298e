/* Megatron's batch-size ramp-up, --rampup-batch-size <start> <increment> <ramp-up samples>
 * (megatron/microbatches.py RampupBatchsizeNumMicroBatches and training.py update_train_iters): the global batch
 * size of the step that starts after a number of consumed samples, the iteration count of a --train-samples run,
 * and the checks, done before any work, that Megatron-DeepSpeed makes (or fails on) during the run. */
#ifndef ZT_TRAIN_RAMPUP_H
#define ZT_TRAIN_RAMPUP_H

#include <stdint.h>

#include "train/args.h"

typedef struct {
  int on;                    /* --rampup-batch-size was given */
  int64_t start, increment, samples; /* its three values */
  int64_t global;            /* the global batch size after the ramp (--global-batch-size or train_batch_size) */
  int64_t per_step;          /* micro batch size x data-parallel size */
  double per_increment;      /* ramp-up samples / number of increments, as Python's float division gives it */
} zt_rampup;

/* Parses and checks args->rampup_batch_size against the global batch size args holds now (`source` names where it
 * came from in errors, e.g. "--global-batch-size"); r->on is 0 when the flag is absent. Refuses, naming the
 * values: a wrong count or a non-integer, start or increment not positive, ramp-up samples not positive (Megatron
 * divides by zero), start not below the global batch, the interval not a multiple of the increment, --train-iters,
 * a batch size of the ramp not divisible by micro batch x data-parallel size (Megatron's per-step consistency
 * check), and --train-samples that ends before the ramp does. */
void zt_rampup_init(zt_rampup *r, const zt_args *args, const char *source);

/* The checks that need no batch size (the count, integers, positive values, not with --train-iters); r->on and the
 * three values set, r->per_increment not. */
void zt_rampup_parse(zt_rampup *r, const zt_args *args);

/* The global batch size of the step that starts after `consumed` samples (RampupBatchsizeNumMicroBatches.update). */
static inline int64_t zt_rampup_batch(const zt_rampup *r, int64_t consumed) {
  if (!r->on || consumed > r->samples) return r->global;
  const int64_t steps = (int64_t)((double)consumed / r->per_increment); /* Python's int() truncates */
  return r->start + steps * r->increment;
}

/* The iterations of a run of `train_samples` (update_train_iters: the ramp's steps while the consumed samples are
 * at most the ramp-up samples, then whole global batches; a partial last batch is dropped). */
int64_t zt_rampup_train_iters(const zt_rampup *r, int64_t train_samples);

/* The distinct global batch sizes the ramp uses, in order (the last is the global batch size); returns their count
 * (at most cap are written). */
int zt_rampup_batches(const zt_rampup *r, int64_t *sizes, int cap);

/* Whether some step ends with exactly `samples` consumed (0 counts). */
int zt_rampup_reaches(const zt_rampup *r, int64_t samples);

#endif
