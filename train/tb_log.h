/* Megatron-DeepSpeed's TensorBoard logging (training_log and evaluate_and_print_results of megatron/training.py):
 * the --tensorboard-dir writer on the last rank with Megatron's tag names and steps, its timers (--timing-log-level:
 * the printed block after each log line and the <name>-time tags), and the values it adds to the log line
 * (--log-params-norm, --log-num-zeros-in-grad). The event files go through runtime/profile/tb_events.c.
 * See docs/monitors.md. */
#ifndef ZT_TB_LOG_H
#define ZT_TB_LOG_H

#include <stddef.h>

#include "train/engine.h"

/* What the engine knows of the iteration that just ended. */
typedef struct {
  double lr;          /* the learning rate after the step (Megatron's optimizer.param_groups[0]['lr']) */
  double grad_norm;   /* NAN when the step was skipped */
  double loss_scale;
  int skipped;
} zt_tb_step;

/* Refuses (zt_fatal, naming the flags) the logging flags this configuration cannot serve; call before any work. */
void zt_tb_log_check(const zt_args *a, const zt_ds_config *ds);
/* The writer of --tensorboard-dir on the last rank (Megatron's SummaryWriter(log_dir, max_queue)), with
 * "> setting tensorboard ..."; on other ranks, or without the flag, only the timers. Never NULL. */
zt_tb_log *zt_tb_log_open(const zt_args *a);
void zt_tb_log_close(zt_tb_log *t);

/* --log-num-zeros-in-grad: the number of zero gradient entries of the model (tensor-parallel replicas and the last
 * stage's tied copy counted once, as Megatron's count_zeros_fp32), over every rank. Collective; call after the
 * gradients are reduced and before the optimizer step. */
double zt_tb_count_zeros(const zt_engine *e);
/* After each training iteration (every rank: collectives): accumulates the timers, computes the parameters' norm
 * when a log line or a TensorBoard write needs it, and at --tensorboard-log-interval writes the training tags. */
void zt_tb_log_after_step(zt_tb_log *t, const zt_engine *e, const zt_tb_step *s);
/* The log line's additions after "grad norm:": " num zeros: %.1f | params norm: %.3f |" as enabled ("" else). */
void zt_tb_log_line_extras(const zt_tb_log *t, const zt_engine *e, char *out, size_t cap);
/* After each log line (every rank): iteration-time tags (--log-timers-to-tensorboard), the printed timers of
 * --timing-log-level per --timing-log-option, and the reset of the interval's timers. */
void zt_tb_log_interval(zt_tb_log *t, const zt_engine *e, double seconds_per_iteration);
/* evaluate_and_print_results' tags: lm-loss-validation/<loss> validation|test (+ ppl), at the iteration, the
 * consumed samples and tokens. */
void zt_tb_log_validation(zt_tb_log *t, const zt_engine *e, const zt_loss_sums *l, int test);

#endif
