/* DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py): LRRangeTest, OneCycle (with
 * momentum cycling), WarmupLR, WarmupDecayLR and WarmupCosineLR, stepped once per applied optimizer
 * step. Values follow DeepSpeed's formulas in double precision, including the lr (and betas) that the
 * constructor puts into the optimizer, which is what the FIRST optimizer step uses. See
 * docs/schedulers.md for every formula, default and quirk. */
#ifndef ZT_DS_LR_SCHEDULES_H
#define ZT_DS_LR_SCHEDULES_H

#include <stdint.h>

typedef enum {
  ZT_DS_LR_RANGE_TEST = 0,
  ZT_DS_ONE_CYCLE = 1,
  ZT_DS_WARMUP_LR = 2,
  ZT_DS_WARMUP_DECAY_LR = 3,
  ZT_DS_WARMUP_COSINE_LR = 4,
} zt_ds_sched_kind;

/* Parameters under DeepSpeed's names (the ds_config "scheduler.params" keys). Numbers are doubles
 * (JSON numbers; Python accepts floats for the step counts too). "Unset" marker: NAN for a value with
 * no default (cycle_min_lr, cycle_max_lr, total_num_steps: required) or a None default
 * (cycle_second_step_size -> first, WarmupLR's warmup_max_lr -> the optimizer's lr). Only the fields
 * of the chosen kind are read. */
typedef struct {
  /* LRRangeTest */
  double lr_range_test_min_lr;     /* 1e-3 */
  double lr_range_test_step_size;  /* 2000, must be > 0 */
  double lr_range_test_step_rate;  /* 1.0 */
  int lr_range_test_staircase;     /* 0 */
  /* OneCycle */
  double cycle_min_lr, cycle_max_lr;  /* required */
  double decay_lr_rate;               /* 0 */
  double cycle_first_step_size;       /* 2000, must be > 0 */
  double cycle_second_step_size;      /* NAN (None) -> cycle_first_step_size; must be >= 0 */
  int cycle_first_stair_count;        /* 0: accepted, unused by the formulas (as in DeepSpeed) */
  int cycle_second_stair_count;       /* None in DeepSpeed: accepted, unused */
  double decay_step_size;             /* 0 = no post-cycle decay; must be >= 0 */
  int cycle_momentum;                 /* 1 */
  double cycle_min_mom, cycle_max_mom;  /* 0.8, 0.9 (beta1; beta2 is forced to 0.99) */
  double decay_mom_rate;              /* 0 */
  /* WarmupLR, WarmupDecayLR, WarmupCosineLR */
  double warmup_min_lr;     /* 0 */
  double warmup_max_lr;     /* WarmupLR: NAN (None -> optimizer lr); WarmupDecayLR: 0.001 */
  double warmup_num_steps;  /* 1000, clamped to >= 2 */
  char warmup_type[64];     /* "log" (default) or "linear"; anything else: warning, log */
  double total_num_steps;   /* WarmupDecayLR, WarmupCosineLR: required (NAN = unset) */
  double warmup_min_ratio;  /* WarmupCosineLR: 0 */
  double cos_min_ratio;     /* WarmupCosineLR: 1e-4 */
  /* every scheduler: -1 starts the schedule; k >= 0 resumes it as from k (DeepSpeed's constructors then leave the
   * optimizer's lr and betas as configured until the first step(), which computes the schedule at k + 1) */
  int64_t last_batch_iteration;
} zt_ds_sched_params;

typedef struct {
  zt_ds_sched_kind kind;
  zt_ds_sched_params p;          /* as given, after resolution (second step size, max lr, clamps) */
  double base_lr;                /* the optimizer's configured lr (WarmupCosineLR's org_lr) */
  int64_t last_batch_iteration;  /* -1 before the first step(), as DeepSpeed */
  /* derived */
  double total_size, step_ratio, inverse_log_warm_up;
  int skip_lr_decay, skip_mom_decay, linear_warmup, momentum_on;
  /* current values (what the next optimizer step uses) */
  double lr, beta1, beta2;
} zt_ds_sched;

/* Scheduler name as DeepSpeed spells it ("WarmupLR"), and the reverse (-1 when unknown). */
const char *zt_ds_sched_name(zt_ds_sched_kind kind);
int zt_ds_sched_kind_from_name(const char *name);
/* DeepSpeed's defaults for `kind` (required parameters left unset). */
void zt_ds_sched_defaults(zt_ds_sched_kind kind, zt_ds_sched_params *params);
/* Validates (fatal errors name the scheduler and the parameter), resolves and sets the constructor's
 * lr/betas with last_batch_iteration = -1. base_lr: the optimizer's "lr". */
void zt_ds_sched_init(zt_ds_sched *s, zt_ds_sched_kind kind, const zt_ds_sched_params *params, double base_lr);
/* DeepSpeed's step(): last_batch_iteration += 1, then lr (and betas) recomputed. Call once after each
 * APPLIED optimizer step; never after a step skipped for an fp16 overflow. */
void zt_ds_sched_step(zt_ds_sched *s);
/* The lr the next optimizer step uses. */
double zt_ds_sched_lr(const zt_ds_sched *s);
/* On entry *beta1 and *beta2 hold the optimizer's configured betas. OneCycle with cycle_momentum replaces
 * them with its (beta1, 0.99) and returns 1; every other case leaves them and returns 0. */
int zt_ds_sched_mom(const zt_ds_sched *s, double *beta1, double *beta2);
/* OneCycle with an optimizer that has no betas (SGD): DeepSpeed warns and disables momentum cycling. */
void zt_ds_sched_disable_momentum(zt_ds_sched *s, const char *optimizer_name);
/* Checkpoint state: DeepSpeed's state_dict() is {'last_batch_iteration': n}. Restore sets it and
 * recomputes lr/betas (the values the optimizer's saved param_groups hold at that point). */
int64_t zt_ds_sched_state(const zt_ds_sched *s);
void zt_ds_sched_restore(zt_ds_sched *s, int64_t last_batch_iteration);

#endif
