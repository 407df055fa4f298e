/* Loss-scale update rules (see loss_scaler.h); the formulas follow DeepSpeed's deepspeed/runtime/fp16/loss_scaler.py
 * (DynamicLossScaler.update_scale) and fp16/fused_optimizer.py (FP16_Optimizer._update_scale), and Megatron's
 * DynamicGradScaler (megatron/optimizer/grad_scaler.py). */
#include "runtime/optim/loss_scaler.h"

#include <string.h>

void zt_loss_scaler_init_static(zt_loss_scaler *s, double scale) {
  memset(s, 0, sizeof(*s));
  s->kind = ZT_SCALER_STATIC;
  s->cur_scale = s->prev_scale = scale;
  s->min_scale = scale;
  s->last_overflow_iter = -1;
}

void zt_loss_scaler_init_dynamic(zt_loss_scaler *s, zt_scaler_kind kind, double init_scale, int64_t window,
                                 int hysteresis, int consecutive_hysteresis, double min_scale) {
  memset(s, 0, sizeof(*s));
  s->kind = kind;
  s->cur_scale = s->prev_scale = init_scale;
  s->scale_window = window;
  s->delayed_shift = hysteresis;
  s->cur_hysteresis = hysteresis;
  s->consecutive_hysteresis = consecutive_hysteresis;
  s->min_scale = min_scale;
  s->last_overflow_iter = -1;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* DeepSpeed DynamicLossScaler.update_scale (ZeRO stages 1-3). */
static void ds_dynamic(zt_loss_scaler *s, int overflow) {
  if (overflow) {
    if (s->delayed_shift == 1 || s->cur_hysteresis == 1) {
      if (s->cur_scale == s->min_scale) {
        s->event = ZT_SCALE_AT_MIN;
        return; /* DeepSpeed raises before cur_iter moves */
      }
      s->cur_scale = max2(s->cur_scale / 2, s->min_scale);
      s->event = ZT_SCALE_REDUCED;
    } else {
      s->cur_hysteresis--;
      s->event = ZT_SCALE_HYSTERESIS;
    }
    s->last_overflow_iter = s->cur_iter;
  } else {
    if (s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
    if ((s->cur_iter - s->last_overflow_iter) % s->scale_window == 0) {
      if (!s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
      s->cur_scale *= 2;
      s->event = ZT_SCALE_GREW;
    }
  }
  s->cur_iter++;
}

/* DeepSpeed FP16_Optimizer._update_scale (no ZeRO): no hysteresis. */
static void ds_fused(zt_loss_scaler *s, int overflow) {
  if (overflow) {
    s->cur_scale = max2(s->cur_scale / 2, s->min_scale);
    s->last_overflow_iter = s->cur_iter;
    s->event = ZT_SCALE_REDUCED;
  } else {
    int64_t stable = s->cur_iter - s->last_overflow_iter - 1;
    if (stable > 0 && stable % s->scale_window == 0) {
      s->cur_scale *= 2;
      s->event = ZT_SCALE_GREW;
    }
  }
  s->cur_iter++;
}

/* Megatron DynamicGradScaler.update (backoff 0.5, growth 2). */
static void megatron(zt_loss_scaler *s, int overflow) {
  if (overflow) {
    s->growth_tracker = 0;
    s->cur_hysteresis--;
    if (s->cur_hysteresis <= 0) {
      s->cur_scale = max2(s->cur_scale * 0.5, s->min_scale);
      s->event = ZT_SCALE_REDUCED;
    } else {
      s->event = ZT_SCALE_HYSTERESIS;
    }
    s->last_overflow_iter = s->cur_iter;
  } else if (++s->growth_tracker == s->scale_window) {
    s->growth_tracker = 0;
    s->cur_hysteresis = s->delayed_shift;
    s->cur_scale *= 2;
    s->event = ZT_SCALE_GREW;
  }
  s->cur_iter++;
}

int zt_loss_scaler_update(zt_loss_scaler *s, int overflow) {
  s->prev_scale = s->cur_scale;
  s->prev_is_int = s->scale_is_int;
  s->event = ZT_SCALE_KEPT;
  switch (s->kind) {
  case ZT_SCALER_STATIC: s->cur_iter++; break;
  case ZT_SCALER_DS_DYNAMIC: ds_dynamic(s, overflow); break;
  case ZT_SCALER_DS_FUSED: ds_fused(s, overflow); break;
  case ZT_SCALER_MEGATRON: megatron(s, overflow); break;
  }
  if (s->cur_scale != s->prev_scale) s->scale_is_int = 0;
  return overflow != 0;
}
