/* The schedule's formulas, as Megatron's optimizer_param_scheduler.py computes them. */
#include "runtime/optim/lr_schedule.h"

#include <math.h>

double zt_lr_get(const zt_lr_schedule *s) {
  const double n = (double)s->num_steps, w = (double)s->warmup_steps, d = (double)s->decay_steps;
  if (s->warmup_steps > 0 && s->num_steps <= s->warmup_steps) return s->max_lr * n / w;
  if (s->style == ZT_DECAY_CONSTANT) return s->max_lr;
  if (s->num_steps > s->decay_steps) return s->min_lr;
  if (s->style == ZT_DECAY_INVSQRT) {
    double ws = w > 1 ? w : 1, ns = n > 1 ? n : 1;
    double lr = s->max_lr * sqrt(ws) / sqrt(ns);
    return lr > s->min_lr ? lr : s->min_lr;
  }
  double ratio = (n - w) / (d - w);
  double coeff = s->style == ZT_DECAY_LINEAR ? 1.0 - ratio : 0.5 * (cos(M_PI * ratio) + 1.0);
  return s->min_lr + coeff * (s->max_lr - s->min_lr);
}

double zt_lr_step(zt_lr_schedule *s, int64_t increment) {
  s->num_steps += increment;
  return zt_lr_get(s);
}
