/* Megatron's OptimizerParamScheduler: learning rate as a function of consumed samples, with linear
 * warmup, then linear / cosine / constant / inverse-square-root decay to min_lr. Steps are counted
 * in samples (each iteration advances by the global batch size). */
#ifndef ZT_LR_SCHEDULE_H
#define ZT_LR_SCHEDULE_H

#include <stdint.h>

typedef enum { ZT_DECAY_LINEAR = 0, ZT_DECAY_COSINE, ZT_DECAY_CONSTANT, ZT_DECAY_INVSQRT } zt_decay_style;

typedef struct {
  double max_lr, min_lr;
  int64_t warmup_steps;   /* samples */
  int64_t decay_steps;    /* samples */
  zt_decay_style style;
  int64_t num_steps;      /* samples consumed so far */
} zt_lr_schedule;

/* Learning rate at the current num_steps (Megatron's get_lr). */
double zt_lr_get(const zt_lr_schedule *s);
/* Advances by `increment` samples and returns the new learning rate (Megatron's step()). */
double zt_lr_step(zt_lr_schedule *s, int64_t increment);

#endif
