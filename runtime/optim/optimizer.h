/* Optimizers over the flat parameter buffer, with weight-decay groups from the parameter table:
 * Adam with decoupled weight decay (Megatron's --optimizer adam = apex FusedAdam, adam_w_mode) or
 * L2-coupled Adam, SGD with momentum, and the global gradient norm with clipping. Each step also
 * zeroes the gradients it consumed, so no separate pass is needed before the next accumulation. */
#ifndef ZT_OPTIMIZER_H
#define ZT_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor/param_table.h"

typedef enum { ZT_OPT_ADAM = 0, ZT_OPT_SGD = 1 } zt_opt_kind;

typedef struct {
  zt_opt_kind kind;
  float beta1, beta2, eps;   /* Adam */
  int adam_w_mode;           /* 1: decoupled weight decay (AdamW); 0: L2 added to the gradient */
  float momentum;            /* SGD */
  float weight_decay;        /* applied to parameters without no_weight_decay */
} zt_opt_config;

typedef struct {
  zt_opt_config cfg;
  const zt_param_table *table;
  float *m, *v;              /* Adam moments (SGD uses m as the momentum buffer) */
  int64_t step;              /* number of applied steps (bias correction) */
} zt_optimizer;

/* state: 2 * table->numel floats, zeroed (from the memory plan's optimizer-state region). */
void zt_optimizer_init(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state);
/* L2 norm of all gradients (double accumulation, fixed order: deterministic). */
double zt_grad_global_norm(const float *grads, size_t n);
/* One update with learning rate lr and gradients multiplied by grad_scale (clipping); zeroes grads. */
void zt_optimizer_step(zt_optimizer *o, float *params, float *grads, double lr, float grad_scale);
/* Zeroes gradients without updating (a skipped step). */
void zt_grads_zero(float *grads, size_t n);

#endif
