/* DeepSpeed's lr schedules: validation with named errors, DeepSpeed's constructor values, and the
 * per-step formulas evaluated in the same operation order as lr_schedules.py (so values agree to the
 * last bits or so with Python's float arithmetic). */
#include "runtime/optim/ds_lr_schedules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/error.h"

/* Python's math.pi (M_PI is not in strict C11) */
static const double k_pi = 3.14159265358979323846;

static const char *const k_names[] = {"LRRangeTest", "OneCycle", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};

const char *zt_ds_sched_name(zt_ds_sched_kind kind) {
  return (int)kind >= 0 && (int)kind < 5 ? k_names[kind] : "unknown";
}

int zt_ds_sched_kind_from_name(const char *name) {
  for (int i = 0; i < 5; i++)
    if (name && strcmp(name, k_names[i]) == 0) return i;
  return -1;
}

void zt_ds_sched_defaults(zt_ds_sched_kind kind, zt_ds_sched_params *p) {
  memset(p, 0, sizeof(*p));
  p->last_batch_iteration = -1;
  p->lr_range_test_min_lr = 1e-3;
  p->lr_range_test_step_size = 2000;
  p->lr_range_test_step_rate = 1.0;
  p->lr_range_test_staircase = 0;
  p->cycle_min_lr = NAN;
  p->cycle_max_lr = NAN;
  p->decay_lr_rate = 0.0;
  p->cycle_first_step_size = 2000;
  p->cycle_second_step_size = NAN;
  p->cycle_first_stair_count = 0;
  p->cycle_second_stair_count = 0;
  p->decay_step_size = 0;
  p->cycle_momentum = 1;
  p->cycle_min_mom = 0.8;
  p->cycle_max_mom = 0.9;
  p->decay_mom_rate = 0.0;
  p->warmup_min_lr = 0.0;
  /* WarmupLR's warmup_max_lr defaults to None (the optimizer's lr); WarmupDecayLR passes 0.001 */
  p->warmup_max_lr = kind == ZT_DS_WARMUP_DECAY_LR ? 0.001 : NAN;
  p->warmup_num_steps = 1000;
  snprintf(p->warmup_type, sizeof(p->warmup_type), "log");
  p->total_num_steps = NAN;
  p->warmup_min_ratio = 0.0;
  p->cos_min_ratio = 1e-4;
}

/* A finite-number check naming the scheduler and the parameter. */
static void need_finite(const char *what, const char *key, double v) {
  zt_check(isfinite(v), what, "params.%s is %g: a finite number is required", key, v);
}

static void warmup_setup(zt_ds_sched *s, const char *what) {
  zt_ds_sched_params *p = &s->p;
  need_finite(what, "warmup_num_steps", p->warmup_num_steps);
  if (p->warmup_num_steps < 2) {
    /* DeepSpeed: self.warmup_num_steps = max(2, warmup_num_steps) (silently) */
    zt_warn("%s: params.warmup_num_steps %g is below 2; using 2 as DeepSpeed does\n", what, p->warmup_num_steps);
    p->warmup_num_steps = 2;
  }
  if (strcmp(p->warmup_type, "log") == 0) {
    s->linear_warmup = 0;
  } else if (strcmp(p->warmup_type, "linear") == 0) {
    s->linear_warmup = 1;
  } else {
    zt_warn("%s: Using unknown warmup_type: %s. The increasing function is set to default (log)\n", what,
            p->warmup_type);
    snprintf(p->warmup_type, sizeof(p->warmup_type), "log");
    s->linear_warmup = 0;
  }
  s->inverse_log_warm_up = 1.0 / log(p->warmup_num_steps);
}

static void need_total(const char *what, zt_ds_sched_params *p, double given_warmup) {
  zt_check(!isnan(p->total_num_steps), what, "params.total_num_steps is required (DeepSpeed has no default)");
  need_finite(what, "total_num_steps", p->total_num_steps);
  if (p->total_num_steps < p->warmup_num_steps)
    zt_warn("%s: total_num_steps %g is less than warmup_num_steps %g\n", what, p->total_num_steps, given_warmup);
}

/* Values at the current last_batch_iteration (t). t == -1 gives what the constructor sets. */
static void recompute(zt_ds_sched *s) {
  const zt_ds_sched_params *p = &s->p;
  const int64_t t = s->last_batch_iteration;
  const double td = (double)t;
  switch (s->kind) {
    case ZT_DS_LR_RANGE_TEST: {
      /* constructor: min_lr; the formula at t = -1 gives the same */
      double interval = (double)(t + 1) / p->lr_range_test_step_size;
      if (p->lr_range_test_staircase) interval = floor(interval);
      s->lr = p->lr_range_test_min_lr * (1 + p->lr_range_test_step_rate * interval);
      break;
    }
    case ZT_DS_ONE_CYCLE: {
      if (t < 0) { /* constructor: lr = cycle_min_lr, betas = (cycle_min_mom, 0.99) */
        s->lr = p->cycle_min_lr;
        if (s->momentum_on) { s->beta1 = p->cycle_min_mom; s->beta2 = 0.99; }
        break;
      }
      if (td < s->total_size) {
        double i = (double)(t + 1);
        double cycle = floor(1 + i / s->total_size);
        double x = 1. + i / s->total_size - cycle;
        double sf = x <= s->step_ratio ? x / s->step_ratio : (x - 1) / (s->step_ratio - 1);
        s->lr = p->cycle_min_lr + (p->cycle_max_lr - p->cycle_min_lr) * sf;
        if (s->momentum_on) {
          s->beta1 = p->cycle_max_mom - (p->cycle_max_mom - p->cycle_min_mom) * sf;
          s->beta2 = 0.99;
        }
      } else {
        double d = td - s->total_size + 1;
        if (s->skip_lr_decay) {
          s->lr = p->cycle_min_lr;
        } else {
          double interval = d / p->decay_step_size;
          s->lr = p->cycle_min_lr / (1 + p->decay_lr_rate * interval);
        }
        if (s->momentum_on) {
          if (s->skip_mom_decay) {
            s->beta1 = p->cycle_max_mom;
          } else {
            double interval = d / p->decay_step_size;
            s->beta1 = p->cycle_max_mom * (1 + p->decay_mom_rate * interval);
          }
          s->beta2 = 0.99;
        }
      }
      break;
    }
    case ZT_DS_WARMUP_LR:
    case ZT_DS_WARMUP_DECAY_LR: {
      if (t < 0) { s->lr = p->warmup_min_lr; break; } /* get_lr() before start: min_lrs */
      double gamma;
      if (td < p->warmup_num_steps)
        gamma = s->linear_warmup ? td / p->warmup_num_steps : s->inverse_log_warm_up * log(td + 1);
      else if (s->kind == ZT_DS_WARMUP_LR)
        gamma = 1.0;
      else
        gamma = fmax(0.0, (p->total_num_steps - td) / fmax(1.0, p->total_num_steps - p->warmup_num_steps));
      s->lr = p->warmup_min_lr + (p->warmup_max_lr - p->warmup_min_lr) * gamma;
      break;
    }
    case ZT_DS_WARMUP_COSINE_LR: {
      if (t < 0) { s->lr = 0.0; break; } /* get_lr() before start: 0.0 for every group */
      double ratio;
      if (td < p->warmup_num_steps) {
        double g = s->linear_warmup ? td / p->warmup_num_steps : s->inverse_log_warm_up * log(td + 1);
        ratio = p->warmup_min_ratio + g * (1. - p->warmup_min_ratio);
      } else {
        double real_last = td - p->warmup_num_steps + 1;
        double real_total = p->total_num_steps - p->warmup_num_steps;
        double c = (1 + cos(k_pi * real_last / real_total)) / 2;
        ratio = fmax(0.0, p->cos_min_ratio + (1. - p->cos_min_ratio) * c);
      }
      s->lr = s->base_lr * ratio;
      break;
    }
  }
}

/* Whether step() has run since the schedule was constructed at p.last_batch_iteration = k >= 0 (a construction at -1
 * starts at once): until then DeepSpeed's optimizer holds its own lr and betas. */
static int started(const zt_ds_sched *s) {
  return s->p.last_batch_iteration == -1 || s->last_batch_iteration != s->p.last_batch_iteration;
}

void zt_ds_sched_init(zt_ds_sched *s, zt_ds_sched_kind kind, const zt_ds_sched_params *params, double base_lr) {
  memset(s, 0, sizeof(*s));
  char what[96];
  snprintf(what, sizeof(what), "ds_config scheduler %s", zt_ds_sched_name(kind));
  zt_check((int)kind >= 0 && (int)kind < 5, "ds_config scheduler", "unknown scheduler kind %d", (int)kind);
  s->kind = kind;
  s->p = *params;
  s->base_lr = base_lr;
  s->last_batch_iteration = params->last_batch_iteration;
  zt_check(s->last_batch_iteration >= -1, what, "params.last_batch_iteration is %lld: it must be >= -1",
           (long long)s->last_batch_iteration);
  zt_ds_sched_params *p = &s->p;
  switch (kind) {
    case ZT_DS_LR_RANGE_TEST:
      need_finite(what, "lr_range_test_min_lr", p->lr_range_test_min_lr);
      need_finite(what, "lr_range_test_step_rate", p->lr_range_test_step_rate);
      zt_check(isfinite(p->lr_range_test_step_size) && p->lr_range_test_step_size > 0, what,
               "params.lr_range_test_step_size is %g: it must be > 0 (it divides the step count)",
               p->lr_range_test_step_size);
      break;
    case ZT_DS_ONE_CYCLE:
      zt_check(!isnan(p->cycle_min_lr), what, "params.cycle_min_lr is required (DeepSpeed has no default)");
      zt_check(!isnan(p->cycle_max_lr), what, "params.cycle_max_lr is required (DeepSpeed has no default)");
      need_finite(what, "cycle_min_lr", p->cycle_min_lr);
      need_finite(what, "cycle_max_lr", p->cycle_max_lr);
      need_finite(what, "decay_lr_rate", p->decay_lr_rate);
      need_finite(what, "cycle_min_mom", p->cycle_min_mom);
      need_finite(what, "cycle_max_mom", p->cycle_max_mom);
      need_finite(what, "decay_mom_rate", p->decay_mom_rate);
      zt_check(isfinite(p->cycle_first_step_size) && p->cycle_first_step_size > 0, what,
               "params.cycle_first_step_size is %g: it must be > 0", p->cycle_first_step_size);
      if (isnan(p->cycle_second_step_size)) p->cycle_second_step_size = p->cycle_first_step_size;
      zt_check(isfinite(p->cycle_second_step_size) && p->cycle_second_step_size >= 0, what,
               "params.cycle_second_step_size is %g: it must be >= 0", p->cycle_second_step_size);
      zt_check(isfinite(p->decay_step_size) && p->decay_step_size >= 0, what,
               "params.decay_step_size is %g: it must be >= 0 (0 disables the post-cycle decay)",
               p->decay_step_size);
      s->total_size = p->cycle_first_step_size + p->cycle_second_step_size;
      s->step_ratio = p->cycle_first_step_size / s->total_size;
      /* math.isclose(x, 0) with its default tolerances is x == 0 */
      s->skip_lr_decay = p->decay_step_size == 0 || p->decay_lr_rate == 0;
      s->skip_mom_decay = p->decay_step_size == 0 || p->decay_mom_rate == 0;
      s->momentum_on = p->cycle_momentum != 0;
      break;
    case ZT_DS_WARMUP_LR:
    case ZT_DS_WARMUP_DECAY_LR: {
      double given_warmup = p->warmup_num_steps;
      if (isnan(p->warmup_max_lr)) p->warmup_max_lr = base_lr; /* warmup_max_lr=None: the optimizer's lr */
      need_finite(what, "warmup_min_lr", p->warmup_min_lr);
      need_finite(what, "warmup_max_lr", p->warmup_max_lr);
      warmup_setup(s, what);
      if (kind == ZT_DS_WARMUP_DECAY_LR) need_total(what, p, given_warmup);
      break;
    }
    case ZT_DS_WARMUP_COSINE_LR: {
      double given_warmup = p->warmup_num_steps;
      need_finite(what, "warmup_min_ratio", p->warmup_min_ratio);
      need_finite(what, "cos_min_ratio", p->cos_min_ratio);
      need_finite(what, "optimizer lr", base_lr);
      warmup_setup(s, what);
      need_total(what, p, given_warmup);
      /* DeepSpeed divides by total_num_steps - warmup_num_steps after the warmup: ZeroDivisionError */
      zt_check(p->total_num_steps != p->warmup_num_steps, what,
               "params.total_num_steps %g equals warmup_num_steps %g (after the clamp to >= 2): DeepSpeed's "
               "cosine phase divides by their difference (ZeroDivisionError)", p->total_num_steps,
               p->warmup_num_steps);
      break;
    }
  }
  if (started(s)) recompute(s);
  else s->lr = base_lr; /* DeepSpeed's constructors set the optimizer's lr (and betas) only when starting at -1 */
}

void zt_ds_sched_step(zt_ds_sched *s) {
  s->last_batch_iteration++;
  recompute(s);
}

double zt_ds_sched_lr(const zt_ds_sched *s) { return s->lr; }

int zt_ds_sched_mom(const zt_ds_sched *s, double *beta1, double *beta2) {
  if (s->kind != ZT_DS_ONE_CYCLE || !s->momentum_on || !started(s)) return 0;
  *beta1 = s->beta1;
  *beta2 = s->beta2;
  return 1;
}

void zt_ds_sched_disable_momentum(zt_ds_sched *s, const char *optimizer_name) {
  if (s->kind != ZT_DS_ONE_CYCLE || !s->momentum_on) return;
  zt_warn("cycle_momentum is disabled because optimizer %s does not support momentum, no betas attribute in "
          "defaults\n", optimizer_name);
  s->momentum_on = 0;
}

int64_t zt_ds_sched_state(const zt_ds_sched *s) { return s->last_batch_iteration; }

void zt_ds_sched_restore(zt_ds_sched *s, int64_t last_batch_iteration) {
  zt_check(last_batch_iteration >= -1, "scheduler checkpoint",
           "last_batch_iteration is %lld: it must be >= -1", (long long)last_batch_iteration);
  s->last_batch_iteration = last_batch_iteration;
  /* still at the configured start k >= 0: no step() yet, so the optimizer holds its own lr, as DeepSpeed's
   * restored param_groups do */
  if (started(s)) recompute(s);
  else s->lr = s->base_lr;
}
