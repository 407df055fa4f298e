/* Shared helpers of the parity dumps (gpt_parity_dump.c, bert_parity_dump.c, t5_parity_dump.c): the output
 * directory, a splitmix64 stream for data and perturbations, .npy writers for arrays, scalars, every parameter of a
 * flat buffer and random-LTD's kept positions, and the clipped AdamW step every dump takes with its files. */
#ifndef ZT_PARITY_DUMP_H
#define ZT_PARITY_DUMP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/transformer/random_ltd.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/param_table.h"

static const char *g_dir; /* the dump's output directory (set by main) */
static uint64_t g_rng;    /* the stream's state (each dump seeds its own) */

static inline uint64_t next_u64(void) {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static inline double next_uniform(void) { return (double)(next_u64() >> 11) * 0x1.0p-53; }

static inline void save(const char *name, const void *data, const char *descr, int ndim, const int64_t *shape) {
  char path[1024];
  int n = snprintf(path, sizeof path, "%s/%s.npy", g_dir, name);
  zt_check(n > 0 && (size_t)n < sizeof path, "parity dump", "path too long for %s", name);
  zt_npy_save(path, data, descr, ndim, shape);
}

static inline void save_scalar(const char *name, double v) {
  float f = (float)v;
  int64_t one[1] = {1};
  save(name, &f, "<f4", 1, one);
}

/* Every parameter (or gradient) of the flat buffer laid out by t as "<prefix><name>.npy". */
static inline void save_params(const zt_param_table *t, const float *flat, const char *prefix) {
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix, p->name);
    save(name, flat + p->offset, "<f4", p->ndim, p->shape);
  }
}

/* "<prefix>ltd_kept.npy" (<i4 [L, B, keep]): the positions random-LTD keeps for each layer flagged in layers[L] and
 * each row of a micro batch (zt_ltd_draw, the function the layer stack calls), zeros for the other layers. */
static inline void save_ltd_kept(const char *prefix, const uint8_t *layers, int L, int B, int T, int keep,
                                 uint64_t seed, uint64_t step, uint64_t first_sample) {
  int32_t *kept = zt_calloc((size_t)L * B * keep, sizeof(int32_t), "ltd_kept");
  int32_t *perm = zt_malloc((size_t)T * sizeof(int32_t), "ltd_kept");
  for (int l = 0; l < L; l++)
    for (int b = 0; b < B && layers[l]; b++)
      zt_ltd_draw(seed, step, first_sample + (uint64_t)b, l, T, keep, perm, kept + ((size_t)l * B + b) * keep);
  int64_t shape[3] = {L, B, keep};
  char name[128];
  snprintf(name, sizeof name, "%sltd_kept", prefix);
  save(name, kept, "<i4", 3, shape);
  free(kept);
  free(perm);
}

/* Step k's update after its micro batches (test_*_parity.py's clip_and_adamw is the reference): the global gradient
 * norm, Megatron's clipping to 1.0, AdamW at the schedule's learning rate, the schedule advanced by gbs samples; then
 * step k's files (the mean loss, norm, clip, lr, every parameter after the step) and its line. Returns 1 when the
 * gradient was clipped. */
static inline int dump_train_step(int k, double mean_loss, zt_optimizer *opt, zt_lr_schedule *sched,
                                  const zt_param_table *t, float *params, float *grads, int gbs) {
  const double norm = zt_grad_global_norm(grads, t->numel), coeff = 1.0 / (norm + 1e-6);
  const float clip = coeff < 1.0 ? (float)coeff : 1.0f;
  const double lr = zt_lr_get(sched);
  zt_optimizer_step(opt, params, grads, lr, clip);
  zt_lr_step(sched, gbs);
  char name[64];
  const char *what[4] = {"loss", "grad_norm", "clip", "lr"};
  const double value[4] = {mean_loss, norm, clip, lr};
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "step%d.%s", k, what[i]);
    save_scalar(name, value[i]);
  }
  snprintf(name, sizeof name, "step%d.", k);
  save_params(t, params, name);
  printf("step %d: loss %.7f grad norm %.6f clip %.6f lr %.3e\n", k, mean_loss, norm, clip, lr);
  return clip < 1.0f;
}

#endif
