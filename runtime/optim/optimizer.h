/* Optimizers over the flat parameter buffer, with weight-decay groups from the parameter table:
 * Adam with decoupled weight decay (Megatron's --optimizer adam = apex FusedAdam, adam_w_mode) or
 * L2-coupled Adam, SGD with momentum, DeepSpeed's FusedLamb (per-tensor trust ratio), and the global
 * gradient norm with clipping. Each step also zeroes the gradients it consumed, so no separate pass is
 * needed before the next accumulation. */
#ifndef ZT_OPTIMIZER_H
#define ZT_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/ops/backend.h"
#include "runtime/tensor/param_table.h"

typedef enum { ZT_OPT_ADAM = 0, ZT_OPT_SGD = 1, ZT_OPT_LAMB = 2 } zt_opt_kind;

typedef struct {
  zt_opt_kind kind;
  float beta1, beta2, eps;   /* Adam and Lamb */
  int adam_w_mode;           /* 1: decoupled weight decay (AdamW); 0: L2 added to the gradient */
  float momentum;            /* SGD */
  float weight_decay;        /* applied to parameters without no_weight_decay */
  /* Lamb only (DeepSpeed FusedLamb; zt_opt_config_lamb_defaults sets its defaults): the trust ratio
   * ||p|| / ||u|| of each parameter-table entry is clamped to [min_coeff, max_coeff] */
  float max_coeff, min_coeff;  /* 10.0, 0.01 */
  int bias_correction;         /* 1 */
  int eps_inside_sqrt;         /* 0: denominator sqrt(v_hat) + eps; 1: sqrt(v_hat + eps) */
  int lamb_legacy;             /* 0: current kernel (bias-corrected m_hat, v_hat inside u, step lr);
                                  1: DeepSpeed <= 0.16 kernel (u from raw m, v; step lr*sqrt(bc2)/bc1) */
} zt_opt_config;

typedef struct {
  zt_opt_config cfg;
  const zt_param_table *table;
  float *m, *v;              /* Adam moments (SGD uses m as the momentum buffer) of [lo, hi) */
  size_t lo, hi;             /* the flat range this optimizer updates: [0, table->numel), or a ZeRO
                                partition; params, grads and moments are indexed from lo */
  size_t lo2, hi2, off2;     /* a second flat range (ZeRO with experts partitioned over their own group), its moments
                                from element off2 of m and v; lo2 == hi2: none */
  size_t n;                  /* elements of m (and of v) */
  int64_t step;              /* number of applied steps (bias correction) */
  float *lamb_coeffs;        /* optional (caller-owned, table->count floats): Lamb's applied trust ratio
                                per parameter after each step, as FusedLamb.get_lamb_coeffs() */
  /* a device backend (zt_optimizer_set_backend): its multi-tensor Adam over the parameters' ranges of [lo, hi) */
  const zt_backend *be;
  size_t *r_off, *r_len;
  float *r_wd;
  int nranges, nranges2;     /* the first range's, then the second's */
} zt_optimizer;

/* FusedLamb's defaults (deepspeed/ops/lamb/fused_lamb.py): betas (0.9, 0.999), eps 1e-8 outside the
 * sqrt, weight_decay 0, max_coeff 10, min_coeff 0.01, bias_correction on. */
void zt_opt_config_lamb_defaults(zt_opt_config *cfg);

/* state: 2 * table->numel floats, zeroed (from the memory plan's optimizer-state region). */
void zt_optimizer_init(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state);
/* An optimizer of the flat range [lo, hi) only (a ZeRO partition): state holds 2 * (hi - lo) floats, and
 * zt_optimizer_step's params and grads point at element lo. Lamb needs whole tensors and is refused. */
void zt_optimizer_init_range(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state,
                             size_t lo, size_t hi);
/* The same over two flat ranges: [lo, hi), its moments first, and [lo2, hi2), its moments from element off2 >= hi - lo
 * (state holds 2 * (off2 + hi2 - lo2) floats); zt_optimizer_step2 takes each range's params and grads. */
void zt_optimizer_init_ranges(zt_optimizer *o, const zt_opt_config *cfg, const zt_param_table *table, float *state,
                              size_t lo, size_t hi, size_t lo2, size_t hi2, size_t off2);
/* The element of m and v (and of masters laid out alike) that holds flat element x of one of the ranges. */
size_t zt_optimizer_index(const zt_optimizer *o, size_t x);
/* The buffers (params, grads, moments) are in a device backend's memory: the step runs its Adam kernel (Adam
 * and AdamW only: SGD and Lamb are refused, naming the work they land with). Call after init; CPU: a no-op. */
void zt_optimizer_set_backend(zt_optimizer *o, const zt_backend *be);
void zt_optimizer_free(zt_optimizer *o);
/* L2 norm of all gradients (double accumulation, fixed order: deterministic). */
double zt_grad_global_norm(const float *grads, size_t n);
/* One update with learning rate lr and gradients multiplied by grad_scale (clipping); zeroes grads. */
void zt_optimizer_step(zt_optimizer *o, float *params, float *grads, double lr, float grad_scale);
/* The same with the second range's params and grads (pointing at its element lo2). */
void zt_optimizer_step2(zt_optimizer *o, float *params, float *grads, float *params2, float *grads2, double lr,
                        float grad_scale);
/* Zeroes gradients without updating (a skipped step). */
void zt_grads_zero(float *grads, size_t n);

#endif
