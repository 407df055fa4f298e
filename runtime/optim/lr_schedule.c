/* The schedule's formulas, as Megatron-DeepSpeed's optimizer_param_scheduler.py computes them (tokens included), and
 * its weight-decay increment (get_wd). */
#include "runtime/optim/lr_schedule.h"

#include <math.h>

double zt_lr_get(const zt_lr_schedule *s) {
  const double n = (double)s->num_steps, w = (double)s->warmup_steps, d = (double)s->decay_steps;
  const double nt = (double)s->num_tokens, wt = (double)s->warmup_tokens, dt = (double)s->decay_tokens;
  /* linear warmup: in tokens when --lr-warmup-tokens is set, else in samples */
  if (!s->has_warmup_tokens) {
    if (s->warmup_steps > 0 && s->num_steps <= s->warmup_steps) return s->max_lr * n / w;
  } else if (s->warmup_tokens > 0 && s->num_tokens <= s->warmup_tokens) {
    return s->max_lr * nt / wt;
  }
  if (s->style == ZT_DECAY_CONSTANT) return s->max_lr;
  if (!s->has_decay_tokens ? s->num_steps > s->decay_steps : s->num_tokens > s->decay_tokens) return s->min_lr;
  if (s->style == ZT_DECAY_INVSQRT) {
    const double ws = s->has_warmup_tokens ? (wt > 1 ? wt : 1) : (w > 1 ? w : 1);
    const double ns = s->has_warmup_tokens ? (nt > 1 ? nt : 1) : (n > 1 ? n : 1);
    double lr = s->max_lr * sqrt(ws) / sqrt(ns);
    return lr > s->min_lr ? lr : s->min_lr;
  }
  /* a token decay counts from the token warmup's end; the caller (the trainer's argument checks) makes sure a
   * token decay without a token warmup reaches here only after the sample warmup has set warmup_tokens */
  const double ratio = !s->has_decay_tokens ? (n - w) / (d - w) : (nt - wt) / (dt - wt);
  double coeff = s->style == ZT_DECAY_LINEAR ? 1.0 - ratio : 0.5 * (cos(M_PI * ratio) + 1.0);
  return s->min_lr + coeff * (s->max_lr - s->min_lr);
}

double zt_wd_get(const zt_lr_schedule *s) {
  if (s->num_steps > s->wd_incr_steps) return s->end_wd;
  if (s->wd_style == ZT_WD_CONSTANT) return s->end_wd; /* start_wd == end_wd */
  const double ratio = (double)s->num_steps / (double)s->wd_incr_steps;
  const double coeff = s->wd_style == ZT_WD_LINEAR ? ratio : 0.5 * (cos(M_PI * (1.0 - ratio)) + 1.0);
  /* rounded before the sum, as Python does: -march=native would otherwise fuse the two into one multiply-add */
  volatile double incr = coeff * (s->end_wd - s->start_wd);
  return s->start_wd + incr;
}

double zt_lr_step(zt_lr_schedule *s, int64_t increment) {
  s->num_steps += increment;
  return zt_lr_get(s);
}

double zt_lr_step_tokens(zt_lr_schedule *s, int64_t increment, int64_t token_num) {
  s->num_tokens = token_num;
  s->num_steps += increment;
  if (!s->has_warmup_tokens && s->has_decay_tokens && s->warmup_steps > 0 && s->num_steps == s->warmup_steps) {
    s->has_warmup_tokens = 1; /* Megatron-DeepSpeed: self.lr_warmup_tokens = self.num_tokens */
    s->warmup_tokens = s->num_tokens;
  }
  return zt_lr_get(s);
}
