/* Megatron-DeepSpeed's OptimizerParamScheduler: learning rate as a function of consumed samples (or, with
 * --lr-warmup-tokens / --lr-decay-tokens, consumed tokens), with linear warmup, then linear / cosine / constant /
 * inverse-square-root decay to min_lr. Steps are counted in samples (each iteration advances by the global batch
 * size); tokens are the trainer's consumed tokens when the step is taken. */
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
  /* token-based warmup / decay (Megatron-DeepSpeed): has_* 0 is Python's None (the sample counts above apply) */
  int has_warmup_tokens, has_decay_tokens;
  int64_t warmup_tokens, decay_tokens;
  int64_t num_tokens;     /* the consumed tokens given to the last step */
} zt_lr_schedule;

/* Learning rate at the current num_steps / num_tokens (Megatron-DeepSpeed's get_lr). */
double zt_lr_get(const zt_lr_schedule *s);
/* Advances by `increment` samples and returns the new learning rate (Megatron's step(); num_tokens unchanged). */
double zt_lr_step(zt_lr_schedule *s, int64_t increment);
/* Megatron-DeepSpeed's step(increment, token_num): num_tokens becomes token_num (the consumed tokens before the
 * iteration that just stepped), then as zt_lr_step. With a sample warmup and a token decay, the tokens consumed when
 * the warmup ends exactly become the warmup length in tokens (get_lr's side effect, kept here). */
double zt_lr_step_tokens(zt_lr_schedule *s, int64_t increment, int64_t token_num);

#endif
