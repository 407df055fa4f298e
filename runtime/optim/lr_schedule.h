/* Megatron-DeepSpeed's OptimizerParamScheduler: learning rate as a function of consumed samples (or, with
 * --lr-warmup-tokens / --lr-decay-tokens, consumed tokens), with linear warmup, then linear / cosine / constant /
 * inverse-square-root decay to min_lr; and the weight decay, constant or incremented (linear / cosine) from start_wd
 * to end_wd. Steps are counted in samples (each iteration advances by the global batch size); tokens are the
 * trainer's consumed tokens when the step is taken. */
#ifndef ZT_LR_SCHEDULE_H
#define ZT_LR_SCHEDULE_H

#include <stdint.h>

typedef enum { ZT_DECAY_LINEAR = 0, ZT_DECAY_COSINE, ZT_DECAY_CONSTANT, ZT_DECAY_INVSQRT } zt_decay_style;
/* --weight-decay-incr-style */
typedef enum { ZT_WD_CONSTANT = 0, ZT_WD_LINEAR, ZT_WD_COSINE } zt_wd_style;

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
  /* weight decay (Megatron's start_wd, end_wd, wd_incr_steps, wd_incr_style): constant has start_wd == end_wd */
  double start_wd, end_wd;
  int64_t wd_incr_steps;  /* samples */
  zt_wd_style wd_style;
} zt_lr_schedule;

/* Learning rate at the current num_steps / num_tokens (Megatron-DeepSpeed's get_lr). */
double zt_lr_get(const zt_lr_schedule *s);
/* Weight decay at the current num_steps (Megatron's get_wd): end_wd past wd_incr_steps; else, with
 * ratio = num_steps / wd_incr_steps, start_wd + coeff (end_wd - start_wd), coeff = ratio (linear) or
 * 0.5 (cos(pi (1 - ratio)) + 1) (cosine). Each parameter's decay is this times its wd_mult (0 for no_weight_decay). */
double zt_wd_get(const zt_lr_schedule *s);
/* Advances by `increment` samples and returns the new learning rate (Megatron's step(); num_tokens unchanged). */
double zt_lr_step(zt_lr_schedule *s, int64_t increment);
/* Megatron-DeepSpeed's step(increment, token_num): num_tokens becomes token_num (the consumed tokens before the
 * iteration that just stepped), then as zt_lr_step. With a sample warmup and a token decay, the tokens consumed when
 * the warmup ends exactly become the warmup length in tokens (get_lr's side effect, kept here). */
double zt_lr_step_tokens(zt_lr_schedule *s, int64_t increment, int64_t token_num);

#endif
