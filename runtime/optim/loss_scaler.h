/* Loss scaling for fp16 training, with the three update rules users meet:
 *  - ZT_SCALER_DS_DYNAMIC: DeepSpeed's DynamicLossScaler (fp16/loss_scaler.py; ZeRO stages 1-3), with
 *    hysteresis (delayed_shift), consecutive_hysteresis, the "OVERFLOW! Rank 0 Skipping step" lines
 *    and the stop at the minimum scale;
 *  - ZT_SCALER_DS_FUSED: DeepSpeed's non-ZeRO FP16_Optimizer rule (fp16/fused_optimizer.py):
 *    hysteresis-free, grows after `window` stable iterations counted from the iteration after an overflow;
 *  - ZT_SCALER_MEGATRON: Megatron's DynamicGradScaler (optimizer/grad_scaler.py; no --deepspeed):
 *    hysteresis tracker, growth tracker, never stops at the minimum.
 * A static scale (DeepSpeed loss_scale > 0, Megatron --loss-scale) never changes; bf16 uses scale 1.
 * Shared by the CPU and CUDA paths: the scaler only sees "did this step overflow". */
#ifndef ZT_LOSS_SCALER_H
#define ZT_LOSS_SCALER_H

#include <stdint.h>

typedef enum { ZT_SCALER_STATIC = 0, ZT_SCALER_DS_DYNAMIC = 1, ZT_SCALER_DS_FUSED = 2, ZT_SCALER_MEGATRON = 3 } zt_scaler_kind;

typedef struct {
  zt_scaler_kind kind;
  double cur_scale;          /* the scale the next backward multiplies the loss by */
  double min_scale;
  int64_t scale_window;      /* DeepSpeed loss_scale_window / Megatron --loss-scale-window */
  int delayed_shift;         /* DeepSpeed hysteresis / Megatron --hysteresis */
  int consecutive_hysteresis;
  /* state (checkpointed) */
  int64_t cur_iter, last_overflow_iter;
  int cur_hysteresis;        /* DeepSpeed's cur_hysteresis; Megatron's hysteresis_tracker */
  int64_t growth_tracker;    /* Megatron only */
  int scale_is_int;          /* DeepSpeed prints the initial 2**power as a Python int, later values as floats */
  int prev_is_int;           /* scale_is_int before the last update */
  /* what the last update did, for the caller's log lines */
  double prev_scale;
  enum { ZT_SCALE_KEPT, ZT_SCALE_REDUCED, ZT_SCALE_HYSTERESIS, ZT_SCALE_GREW, ZT_SCALE_AT_MIN } event;
} zt_loss_scaler;

/* A static scale (kind ZT_SCALER_STATIC; scale 1 for bf16 and fp32). */
void zt_loss_scaler_init_static(zt_loss_scaler *s, double scale);
/* A dynamic scaler of the given kind. */
void zt_loss_scaler_init_dynamic(zt_loss_scaler *s, zt_scaler_kind kind, double init_scale, int64_t window,
                                 int hysteresis, int consecutive_hysteresis, double min_scale);
/* Records one iteration's outcome (overflow: some gradient is inf or nan) and updates the scale; sets
 * prev_scale and event for the caller's log lines (ZT_SCALE_AT_MIN: ZT_SCALER_DS_DYNAMIC overflowed at
 * the minimum scale, where DeepSpeed raises "Current loss scale already at minimum - cannot decrease
 * scale anymore. Exiting run."; the state is left unchanged). Returns 1 when the step must be skipped
 * (any overflow, static scales included). */
int zt_loss_scaler_update(zt_loss_scaler *s, int overflow);

#endif
