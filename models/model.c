/* The generic half of the model contract (model.h): ZeRO-3 events, gradient finalization and norms from the
 * parameter table, parameters in and out of the backend, pipeline stash slots, and the memory plan's report. */
#include "models/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/philox.h"

void zt_model_free(zt_model *m) {
  if (m && m->ops) m->ops->free(m);
}

void zt_model_profile_attach(zt_model *m, zt_flops_profiler *p) {
  zt_flops_profiler_reset(p);
  m->ops->profile(m, p->times);
}

void zt_model_profile_detach(zt_model *m) { m->ops->profile(m, NULL); }

void zt_model_fold_grads(zt_model *m, size_t lo, size_t hi) {
  if (!m->grads_dt || hi <= lo) return;
  m->be->fold_f32(m->grads + lo, zt_at(m->grads_dt, m->dt, lo), m->dt, hi - lo);
}

void zt_model_param_event(zt_model *m, int event, int unit) {
  if (unit < 0) return;
  if (event == ZT_PARAM_GRAD_READY) zt_model_fold_grads(m, m->unit_off[unit], m->unit_off[unit + 1]);
  if (m->param_hook) m->param_hook(m->param_hook_ctx, event, unit);
}

void zt_model_sync_sequence_parallel(zt_model *m, size_t lo, size_t hi) {
  if (!(m->tp_size > 1 && m->sequence_parallel) || m->sp_numel == 0) return;
  const zt_param_table *t = m->table;
  const zt_backend *be = m->be;
  size_t k = 0;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if (!p->seq_parallel || p->offset < lo || p->offset >= hi) continue;
    be->copy(m->sp_buf + k, m->grads + p->offset, p->numel * sizeof(float));
    k += p->numel;
  }
  if (k == 0) return;
  zt_allreduce_sum(m->tp_group, ZT_DTYPE_FP32, m->sp_buf, k);
  k = 0;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if (!p->seq_parallel || p->offset < lo || p->offset >= hi) continue;
    be->copy(m->grads + p->offset, m->sp_buf + k, p->numel * sizeof(float));
    k += p->numel;
  }
}

void zt_model_sync_shared(zt_model *m, const zt_group *emb_group, zt_dtype comm_dt) {
  if (!emb_group || m->shared_grad < 0) return;
  const zt_param *p = &m->table->params[m->shared_grad];
  float *g = m->grads + p->offset;
  if (comm_dt != ZT_DTYPE_FP32) m->be->round_f32(g, g, p->numel, comm_dt);
  zt_allreduce_sum(emb_group, ZT_DTYPE_FP32, g, p->numel);
  if (comm_dt != ZT_DTYPE_FP32) m->be->round_f32(g, g, p->numel, comm_dt);
}

double zt_model_grad_norm(const zt_model *m, const float *grads) {
  const zt_param_table *t = m->table;
  if (m->tp_size <= 1 && m->pp_size <= 1 && !m->expert_group) return m->be->norm2(grads, t->numel);
  /* [0] split over TP, [1] replicated; the experts' ([2], [3]) are spread over EP besides */
  double sums[4] = {0.0, 0.0, 0.0, 0.0};
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if (p->shared) continue; /* a copy of another stage's parameter: counted there */
    const double n = m->be->norm2(grads + p->offset, p->numel);
    sums[(m->expert_group && p->expert_id >= 0 ? 2 : 0) + (p->tp_split_dim >= 0 ? 0 : 1)] += n * n;
  }
  if (m->tp_size > 1) { /* the split sums over TP, in one reduction */
    double s2[2] = {sums[0], sums[2]};
    zt_allreduce_sum_f64(m->tp_group, s2, 2);
    sums[0] = s2[0], sums[2] = s2[1];
  }
  double experts = sums[2] + sums[3];
  if (m->expert_group) zt_allreduce_sum_f64(m->expert_group, &experts, 1);
  double total = sums[0] + sums[1] + experts;
  if (m->pp_size > 1) zt_allreduce_sum_f64(m->pp_group, &total, 1); /* over the stages */
  return sqrt(total);
}

/* Host staging in pieces of at most this many elements (no full host copy of a device model). */
enum { STAGE_ELEMS = 1 << 22 };

void zt_model_set_params(zt_model *m, const float *host, size_t lo, size_t hi, zt_dtype value_dt) {
  const zt_backend *be = m->be;
  if (be->host_visible) { /* fp32 slots holding value_dt's values */
    float *dst = (float *)m->params + lo;
    if (value_dt == ZT_DTYPE_FP32) be->copy(dst, host, (hi - lo) * sizeof(float));
    else zt_round_f32(dst, host, hi - lo, value_dt);
    return;
  }
  float *stage = NULL;
  const size_t es = zt_dtype_size(m->dt);
  uint16_t *half = NULL;
  for (size_t a = lo; a < hi; a += STAGE_ELEMS) {
    const size_t n = hi - a < STAGE_ELEMS ? hi - a : STAGE_ELEMS;
    if (m->dt == ZT_DTYPE_FP32) {
      if (value_dt == ZT_DTYPE_FP32) {
        be->from_host((float *)m->params + a, host + (a - lo), n * sizeof(float));
        continue;
      }
      if (!stage) stage = zt_malloc(STAGE_ELEMS * sizeof(float), "parameter staging");
      zt_round_f32(stage, host + (a - lo), n, value_dt);
      be->from_host((float *)m->params + a, stage, n * sizeof(float));
      continue;
    }
    if (!half) half = zt_malloc(STAGE_ELEMS * es, "parameter staging");
    zt_convert(half, m->dt, host + (a - lo), ZT_DTYPE_FP32, n);
    be->from_host(zt_at(m->params, m->dt, a), half, n * es);
  }
  free(stage);
  free(half);
}

void zt_model_get_params(const zt_model *m, float *host, size_t lo, size_t hi) {
  const zt_backend *be = m->be;
  if (m->dt == ZT_DTYPE_FP32) {
    be->to_host(host, (const float *)m->params + lo, (hi - lo) * sizeof(float));
    return;
  }
  const size_t es = zt_dtype_size(m->dt);
  uint16_t *half = zt_malloc(STAGE_ELEMS * es, "parameter staging");
  for (size_t a = lo; a < hi; a += STAGE_ELEMS) {
    const size_t n = hi - a < STAGE_ELEMS ? hi - a : STAGE_ELEMS;
    be->to_host(half, zt_at(m->params, m->dt, a), n * es);
    zt_convert(host + (a - lo), ZT_DTYPE_FP32, half, m->dt, n);
  }
  free(half);
}

/* The index a parameter has in the one-stage model's table (the key of its initial draws), by name; the last
 * stage's copy of the tied word embeddings draws what the embedding draws. */
static int full_model_index(const zt_model *m, const zt_param_table *full, const char *name) {
  const int i = zt_param_table_find(full, strcmp(name, ZT_SHARED_EMBEDDING) ? name : ZT_WORD_EMBEDDING);
  zt_check(i >= 0, "internal error", "parameter %s is not in the full model (stage %d)", name, m->pp_rank);
  return i;
}

/* n draws of parameter (index) i's init stream into dst, elements first .. of the whole matrix: N(0, std) or
 * U(-bound, bound) */
static void draw_range(const zt_param *p, float *dst, size_t n, uint64_t first, uint64_t seed, uint64_t i) {
  if (p->init == ZT_INIT_UNIFORM) zt_param_uniform_fill(dst, n, first, p->init_std, seed, i);
  else zt_philox_normal_fill(dst, n, first, 0.0f, p->init_std, seed, ZT_RNG_INIT, i);
}

/* Parameter k's initial values into dst[numel]. With tensor parallelism each rank draws its slice of the matrix one
 * process draws: the draws (normal or uniform) are keyed by (seed, parameter index, element of the full matrix), and
 * the parameter indices do not depend on the layout. Split dim 0 (column-parallel rows, vocab rows) is one contiguous
 * range of the full matrix; split dim 1 (row-parallel columns) a range per row. */
static void draw_param(const zt_model *m, const zt_param_table *full, int k, uint64_t seed, float *dst) {
  const zt_param *p = &m->table->params[k];
  const int tp = m->tp_size > 1 ? m->tp_size : 1, r = m->tp_rank;
  if (p->init == ZT_INIT_ZEROS || p->init == ZT_INIT_ONES) {
    const float v = p->init == ZT_INIT_ONES ? 1.0f : 0.0f;
    for (size_t j = 0; j < p->numel; j++) dst[j] = v;
    return;
  }
  const uint64_t i = full ? (uint64_t)full_model_index(m, full, p->name) : (uint64_t)k;
  if (p->tp_split_dim < 0 || tp == 1) {
    draw_range(p, dst, p->numel, 0, seed, i);
  } else if (p->tp_split_dim == 0) { /* with tp_parts blocks: this rank's range of each block of the full matrix */
    const size_t part = p->numel / (size_t)p->tp_parts;
    for (int j = 0; j < p->tp_parts; j++)
      draw_range(p, dst + (size_t)j * part, part, (uint64_t)j * part * (uint64_t)tp + (uint64_t)r * part, seed, i);
  } else {
    zt_check(p->ndim == 2 && p->tp_split_dim == 1, "internal error", "parameter %s: split dimension %d of %d",
             p->name, p->tp_split_dim, p->ndim);
    const uint64_t cols = (uint64_t)p->shape[1], fullc = cols * (uint64_t)tp;
    for (int64_t row = 0; row < p->shape[0]; row++)
      draw_range(p, dst + (size_t)row * cols, cols, (uint64_t)row * fullc + (uint64_t)r * cols, seed, i);
  }
}

void zt_model_init_params(zt_model *m, const zt_param_table *full, uint64_t seed, size_t lo, size_t hi,
                          zt_dtype value_dt) {
  float *stage = NULL;
  for (int k = 0; k < m->table->count; k++) {
    const zt_param *p = &m->table->params[k];
    if (p->offset < lo || p->offset >= hi) continue;
    /* the CPU draws in place (fp32 slots); a device parameter goes through a host buffer */
    float *dst = m->be->host_visible ? (float *)m->params + p->offset
                                     : (stage = realloc(stage, p->numel * sizeof(float)));
    zt_check(dst, "out of memory", "%zu floats to initialize %s", p->numel, p->name);
    draw_param(m, full, k, seed, dst);
    if (m->be->host_visible && value_dt != ZT_DTYPE_FP32) zt_round_f32(dst, dst, p->numel, value_dt);
    if (!m->be->host_visible) zt_model_set_params(m, dst, p->offset, p->offset + p->numel, value_dt);
  }
  free(stage);
}

size_t zt_model_num_params(const zt_model *m) {
  size_t n = 0;
  for (int i = 0; i < m->table->count; i++) n += m->table->params[i].numel;
  return n;
}

void *zt_model_stash(zt_model *m, int slot) {
  if (!m->stash) return NULL;
  zt_check(slot >= 0 && slot < m->pp_buffers, "internal error", "pipeline buffer %d of %d", slot, m->pp_buffers);
  return (char *)m->stash + (size_t)slot * m->stage_bytes;
}

void zt_model_stash_save(zt_model *m, const zt_stage_tensor *which, int slot) {
  char *dst = zt_model_stash(m, slot);
  if (!dst) return;
  for (int i = 0; i < m->n_stage; i++) {
    const size_t bytes = which[i].n * zt_dtype_size(which[i].dt);
    m->be->copy(dst, which[i].buf, bytes);
    dst += bytes;
  }
}

void zt_model_stash_load(zt_model *m, const zt_stage_tensor *which, int slot) {
  const char *src = zt_model_stash(m, slot);
  if (!src) return;
  for (int i = 0; i < m->n_stage; i++) {
    const size_t bytes = which[i].n * zt_dtype_size(which[i].dt);
    m->be->copy(which[i].buf, src, bytes);
    src += bytes;
  }
}

static double mib(size_t b) { return b / 1048576.0; }

void zt_model_check_plan(const zt_memplan *plan, const zt_backend *be, zt_dtype dt, int micro_batch,
                         int recompute, size_t mem_limit, size_t (*plan_bytes)(const void *cfg, int B),
                         const void *cfg) {
  const size_t *by = plan->bytes;
  const size_t total = zt_memplan_total(plan);
  if (be->kind == ZT_BACKEND_CPU) {
    zt_memplan_print(plan);
    zt_memplan_check_fits(plan, mem_limit, recompute);
    return;
  }
  const size_t avail = mem_limit ? mem_limit : be->available();
  /* the largest micro batch that fits: the activations grow linearly in it */
  int best = 0;
  for (int lo = 1, hi = 1 << 16; lo <= hi;) {
    const int mid = lo + (hi - lo) / 2;
    if (plan_bytes(cfg, mid) <= avail) best = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  zt_log("> device memory plan (MiB, %s, %s): params %.1f | grads %.1f | optimizer state %.1f | activations %.1f | "
         "total %.1f of %.1f free; the largest micro batch that fits: %d\n", zt_dtype_name(dt), be->name,
         mib(by[ZT_MEM_PARAMS]), mib(by[ZT_MEM_GRADS]), mib(by[ZT_MEM_OPTIM]), mib(by[ZT_MEM_ACTIVATIONS]),
         mib(total), mib(avail), best);
  if (total <= avail) return;
  char remedy[200];
  if (best > 0)
    snprintf(remedy, sizeof remedy, "--micro-batch-size %d (the largest that fits)%s", best,
             recompute ? "" : ", or --checkpoint-activations");
  else
    snprintf(remedy, sizeof remedy, "%s the model states alone exceed the device: shard them with "
             "--tensor-model-parallel-size, --pipeline-model-parallel-size or ZeRO (zero_optimization.stage)",
             recompute ? "" : "--checkpoint-activations, or");
  zt_fatal("memory plan does not fit", "%s needs %.1f MiB (params %.1f, grads %.1f, optimizer state %.1f, activations "
           "%.1f at --micro-batch-size %d) but has %.1f MiB free; use %s", be->name, mib(total), mib(by[ZT_MEM_PARAMS]),
           mib(by[ZT_MEM_GRADS]), mib(by[ZT_MEM_OPTIM]), mib(by[ZT_MEM_ACTIVATIONS]), micro_batch, mib(avail), remedy);
}
