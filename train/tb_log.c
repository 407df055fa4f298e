/* Megatron-DeepSpeed's TensorBoard tags, timers and log-line norms (see tb_log.h; the tags as training_log() and
 * evaluate_and_print_results() in megatron/training.py write them). */
#include "train/tb_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/comm/comm.h"
#include "runtime/profile/monitor.h"
#include "runtime/profile/tb_events.h"
#include "train/progress.h"

/* Megatron's timers that have a phase here, in the order of training_log's timers_to_log, with their log level.
 * grads-all-reduce is timed only without --deepspeed (Megatron's reduce_model_grads); it also holds what Megatron
 * times apart as layernorm-grads-all-reduce and embedding-grads-all-reduce. */
enum { TM_FWD_BWD, TM_FWD, TM_BWD, TM_BATCH, TM_GRADS, TM_OPT, TM_COUNT };
static const char *const k_timer_names[TM_COUNT] = {"forward-backward", "forward-compute", "backward-compute",
                                                    "batch-generator", "grads-all-reduce", "optimizer"};
static const int k_timer_level[TM_COUNT] = {1, 2, 2, 2, 1, 1};

struct zt_tb_log {
  const zt_args *a;
  zt_tb_writer *w;          /* the last rank with --tensorboard-dir, else NULL */
  int pending;              /* events written since the last flush */
  double last_flush;        /* wall time */
  double acc[TM_COUNT];     /* seconds since the last log line (Megatron resets its timers in timers.log) */
  int iters;                /* iterations since the last log line (Megatron's total_iterations) */
  double params_norm;       /* --log-params-norm: of the last iteration, NAN when not computed */
};

/* SummaryWriter's flush_secs */
#define ZT_TB_FLUSH_SECONDS 120.0

static void put(zt_tb_log *t, const char *tag, double value, int64_t step) {
  if (!t->w) return;
  const double now = zt_monitor_wall_time();
  zt_tb_add_scalar(t->w, tag, value, step, now);
  if (++t->pending >= t->a->tensorboard_queue_size || now - t->last_flush >= ZT_TB_FLUSH_SECONDS) {
    zt_tb_flush(t->w);
    t->pending = 0;
    t->last_flush = now;
  }
}

/* add_scalar(tag, v, iteration) and the " vs samples" / " vs tokens" variants Megatron writes beside it. */
static void put3(zt_tb_log *t, const zt_engine *e, const char *tag, double value) {
  char vs[256];
  put(t, tag, value, e->st.iteration);
  snprintf(vs, sizeof vs, "%s vs samples", tag);
  put(t, vs, value, e->st.consumed_samples);
  snprintf(vs, sizeof vs, "%s vs tokens", tag);
  put(t, vs, value, e->st.consumed_tokens);
}

void zt_tb_log_check(const zt_args *a, const zt_ds_config *ds) {
  const int ds_opt = ds && ds->has_optimizer;
  zt_check(!a->log_optimizer_states_to_tensorboard || ds_opt || a->optimizer != ZT_OPTIMIZER_SGD,
           "unsupported argument", "--log-optimizer-states-to-tensorboard writes norms of Adam's exp_avg and "
           "exp_avg_sq (as Megatron reads optimizer.state); --optimizer sgd has no second moment");
  const int opt_nvme = ds && !strcmp(ds->offload_optimizer_device, "nvme");
  const int param_nvme = ds && !strcmp(ds->offload_param_device, "nvme");
  zt_check(!a->log_optimizer_states_to_tensorboard || !opt_nvme, "unsupported argument",
           "--log-optimizer-states-to-tensorboard with offload_optimizer nvme in %s: the optimizer state lives in "
           "swap files between steps and is not read back for the norms", ds ? ds->path : "");
  zt_check(!a->log_params_norm || !(ds && ds->zero_stage == 3 && (opt_nvme || param_nvme)), "unsupported argument",
           "--log-params-norm with ZeRO stage 3 and NVMe offload in %s: the partition's weights live in swap files",
           ds ? ds->path : "");
}

zt_tb_log *zt_tb_log_open(const zt_args *a) {
  zt_tb_log *t = zt_calloc(1, sizeof *t, "tensorboard log");
  t->a = a;
  t->params_norm = NAN;
  if (a->tensorboard_dir && zt_rank() == zt_world_size() - 1) { /* Megatron's rank == world_size - 1 */
    printf("> setting tensorboard ...\n");
    fflush(stdout);
    t->w = zt_tb_open(a->tensorboard_dir);
    t->last_flush = zt_monitor_wall_time();
  }
  return t;
}

void zt_tb_log_close(zt_tb_log *t) {
  if (!t) return;
  if (t->w) zt_tb_close(t->w);
  free(t);
}

/* ---- sums over the model's values ------------------------------------------------------------------------------ */

typedef struct {
  double sumsq, sumabs, maxabs, zeros;
  double sqrt_sumsq, sqrt_sum, sqrt_max; /* of sqrt(x): Adam's variance */
  int want_sqrt;
} stats;

static void add_stats(stats *s, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const double v = x[i], av = fabs(v);
    s->sumsq += v * v;
    s->sumabs += av;
    if (av > s->maxabs) s->maxabs = av;
    s->zeros += v == 0.0;
    if (s->want_sqrt) {
      const double r = sqrtf(x[i]);
      s->sqrt_sumsq += r * r;
      s->sqrt_sum += r;
      if (r > s->sqrt_max) s->sqrt_max = r;
    }
  }
}

enum { CHUNK = 1 << 20 };

/* Statistics of the elements [lo, hi) of the flat parameter space that belong to parameters (not the alignment
 * padding), read from `dev` (a backend buffer whose first element is element `base`) or, dev NULL, from the model's
 * parameters. With `once`, each parameter counts on one rank of the model-parallel group: not the last stage's tied
 * copy, and a tensor-parallel replica only on tensor-parallel rank 0 (Megatron's param_is_not_shared and
 * param_is_not_tensor_parallel_duplicate). */
static void scan_some(const zt_engine *e, const float *dev, size_t base, size_t lo, size_t hi, int once, int experts,
                      stats *s) {
  const zt_model *m = e->model;
  const zt_param_table *tab = m->table;
  float *host = zt_malloc(CHUNK * sizeof(float), "tensorboard statistics");
  for (int i = 0; i < tab->count; i++) {
    const zt_param *p = &tab->params[i];
    if (once && (p->shared || (p->tp_split_dim < 0 && e->st.tp_rank != 0))) continue;
    if (experts >= 0 && (p->expert_id >= 0) != experts) continue;
    const size_t a = p->offset > lo ? p->offset : lo, b = p->offset + p->numel < hi ? p->offset + p->numel : hi;
    for (size_t c = a; c < b; c += CHUNK) {
      const size_t n = b - c < CHUNK ? b - c : CHUNK;
      if (dev) m->be->to_host(host, dev + (c - base), n * sizeof(float));
      else zt_model_get_params(m, host, c, c + n);
      add_stats(s, host, n);
    }
  }
  free(host);
}

static void sum_over(const zt_group *g, double *v, size_t n) {
  if (g && zt_group_size(g) > 1) zt_allreduce_sum_f64(g, v, n);
}
static void max_over(const zt_group *g, double *v, size_t n) {
  if (g && zt_group_size(g) > 1) zt_allreduce_max_f64(g, v, n);
}

/* The same over every parameter; when this rank holds only its own experts, theirs gathered over the expert-parallel
 * group (each expert held by one member of it), so the figures are those of a rank holding all experts. */
static void scan(const zt_engine *e, const float *dev, size_t base, size_t lo, size_t hi, int once, stats *s) {
  const zt_group *g = e->model->expert_group;
  if (!g) {
    scan_some(e, dev, base, lo, hi, once, -1, s);
    return;
  }
  stats x = {.want_sqrt = s->want_sqrt};
  scan_some(e, dev, base, lo, hi, once, 0, s);
  scan_some(e, dev, base, lo, hi, once, 1, &x);
  double sums[5] = {x.sumsq, x.sumabs, x.zeros, x.sqrt_sumsq, x.sqrt_sum}, maxes[2] = {x.maxabs, x.sqrt_max};
  sum_over(g, sums, 5);
  max_over(g, maxes, 2);
  s->sumsq += sums[0], s->sumabs += sums[1], s->zeros += sums[2], s->sqrt_sumsq += sums[3], s->sqrt_sum += sums[4];
  if (maxes[0] > s->maxabs) s->maxabs = maxes[0];
  if (maxes[1] > s->sqrt_max) s->sqrt_max = maxes[1];
}

/* The partition's gradients as the optimizer sees them (ZeRO-3 accumulates them apart). */
static const float *partition_grads(const zt_engine *e) {
  return e->st.zero_stage == 3 ? e->st.zero3.acc : e->model->grads + e->st.part_lo;
}
/* The partition's weights the optimizer updates: the fp32 masters, else the fp32 parameters. */
static const float *partition_weights(const zt_engine *e) {
  return e->st.master ? e->st.master : (const float *)e->model->params + e->st.part_lo;
}

/* The statistics of an array laid out as this rank's optimizer partition: a holds its first range's elements, a2 the
 * second's (the experts', with ZeRO partitioning them apart); the caller sums them over the data-parallel group.
 * Without ZeRO the partition is this rank's whole model (scan adds the experts over the expert-parallel group). */
static void scan_partition(const zt_engine *e, const float *a, const float *a2, int once, stats *s) {
  const zt_train_state *st = &e->st;
  if (st->zero_stage == 0) {
    scan(e, a, 0, 0, e->model->table->numel, once, s);
    return;
  }
  scan_some(e, a, st->part_lo, st->part_lo, st->part_hi, once, -1, s);
  if (st->xpart_hi > st->xpart_lo) scan_some(e, a2, st->xpart_lo, st->xpart_lo, st->xpart_hi, once, -1, s);
}

double zt_tb_count_zeros(const zt_engine *e) {
  stats s = {0};
  scan_partition(e, partition_grads(e), e->model->grads + e->st.xpart_lo, 1, &s);
  if (e->st.zero_stage > 0) sum_over(e->dp_group, &s.zeros, 1);
  sum_over(e->tp_group, &s.zeros, 1);
  sum_over(e->pp_group, &s.zeros, 1);
  return s.zeros;
}

/* Megatron's calc_params_l2_norm: the model's weights (replicas once), summed over the model-parallel group. ZeRO-3
 * holds only its partition: the partition's weights, summed over the data-parallel group too. */
static double params_norm(const zt_engine *e) {
  stats s = {0};
  if (e->st.zero_stage == 3) {
    scan(e, partition_weights(e), e->st.part_lo, e->st.part_lo, e->st.part_hi, 1, &s);
    sum_over(e->dp_group, &s.sumsq, 1);
  } else {
    scan(e, NULL, 0, 0, e->model->table->numel, 1, &s);
  }
  sum_over(e->tp_group, &s.sumsq, 1);
  sum_over(e->pp_group, &s.sumsq, 1);
  return sqrt(s.sumsq);
}

/* --log-optimizer-states-to-tensorboard: training_log's opt_stats over this rank's optimizer partition, summed (and
 * maxed) over the data-parallel group with ZeRO, then over the tensor- and pipeline-parallel groups, as Megatron
 * does (every parameter of every rank, replicas included). */
static void optimizer_states(zt_tb_log *t, const zt_engine *e) {
  const zt_train_state *st = &e->st;
  const size_t at = st->xpart_at; /* the experts' range of the state (ZeRO partitioning them apart) */
  stats v = {.want_sqrt = 1}, mo = {0}, w = {0};
  scan_partition(e, st->opt.v, st->opt.v + at, 0, &v);
  scan_partition(e, st->opt.m, st->opt.m + at, 0, &mo);
  scan_partition(e, partition_weights(e), st->master ? st->master + at : (const float *)e->model->params + st->xpart_lo,
                 0, &w);
  double sums[8] = {v.sumsq, v.sqrt_sumsq, mo.sumsq, w.sumsq, v.sumabs, v.sqrt_sum, mo.sumabs, w.sumabs};
  double maxes[4] = {v.maxabs, v.sqrt_max, mo.maxabs, w.maxabs};
  if (st->zero_stage > 0) {
    sum_over(e->dp_group, sums, 8);
    max_over(e->dp_group, maxes, 4);
  }
  sum_over(e->tp_group, sums, 8);
  max_over(e->tp_group, maxes, 4);
  sum_over(e->pp_group, sums, 8);
  max_over(e->pp_group, maxes, 4);
  if (!t->w) return;
  static const char *const names[12] = {"variance_l2", "variance_sqrt_l2", "momentum_l2", "weight_l2",
                                        "variance_l1", "variance_sqrt_l1", "momentum_l1", "weight_l1",
                                        "variance_abs_max", "variance_sqrt_abs_max", "momentum_abs_max",
                                        "weight_abs_max"};
  double vals[12];
  for (int i = 0; i < 4; i++) vals[i] = sqrt(sums[i]);
  for (int i = 4; i < 8; i++) vals[i] = sums[i];
  for (int i = 0; i < 4; i++) vals[8 + i] = maxes[i];
  char tag[96];
  for (int i = 0; i < 12; i++) {
    snprintf(tag, sizeof tag, "optimizer/%s vs tokens", names[i]);
    put(t, tag, vals[i], st->consumed_tokens);
  }
  for (int i = 0; i < 12; i++) {
    snprintf(tag, sizeof tag, "optimizer/%s", names[i]);
    put(t, tag, vals[i], st->iteration);
  }
}

/* --log-memory-to-tensorboard: Megatron writes torch.cuda.memory_stats(); here the process's resident set (what the
 * caching allocator's reserved bytes stand for) and the bytes of the memory plan (all the model, gradient, optimizer
 * and activation memory is allocated once from it). */
static void memory(zt_tb_log *t, const zt_engine *e) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  double plan = 0;
  for (int k = 0; k < ZT_MEM_KINDS; k++) plan += (double)e->model->plan->bytes[k];
  put(t, "mem-reserved-bytes", (double)resident * (double)sysconf(_SC_PAGESIZE), e->st.iteration);
  put(t, "mem-allocated-bytes", plan, e->st.iteration);
}

/* ---- the training and validation tags --------------------------------------------------------------------------- */

/* Megatron's timers.write(timers_to_log, writer, iteration, normalizer=total_iterations): each timer's maximum over
 * the ranks of its seconds since the last log line per iteration since then, for the timers some rank ran. */
static void write_timers(zt_tb_log *t, const zt_engine *e) {
  double mx[TM_COUNT];
  for (int i = 0; i < TM_COUNT; i++) mx[i] = t->acc[i] / (t->iters > 0 ? t->iters : 1);
  max_over(zt_comm_world(), mx, TM_COUNT);
  char tag[64];
  for (int i = 0; i < TM_COUNT; i++) {
    if (!(mx[i] > 0)) continue;
    snprintf(tag, sizeof tag, "%s-time", k_timer_names[i]);
    put(t, tag, mx[i], e->st.iteration);
  }
}

void zt_tb_log_after_step(zt_tb_log *t, const zt_engine *e, const zt_tb_step *s) {
  const zt_args *a = t->a;
  const zt_step_phases *ph = &e->last_phases;
  const double phase[TM_COUNT] = {ph->fwd + ph->bwd, e->st.pp_size == 1 ? ph->fwd : 0, e->st.pp_size == 1 ? ph->bwd : 0,
                                  ph->batch, e->ds ? 0 : ph->grads_reduce, ph->optimizer};
  for (int i = 0; i < TM_COUNT; i++)
    if (k_timer_level[i] <= a->timing_log_level) t->acc[i] += phase[i];
  t->iters++;
  const int64_t it = e->st.iteration;
  const int tb_now = it % a->tensorboard_log_interval == 0, log_now = it % a->log_interval == 0;
  t->params_norm = NAN;
  if (a->log_params_norm && (tb_now || log_now)) t->params_norm = params_norm(e);
  if (!tb_now) return;
  if (a->log_timers_to_tensorboard) write_timers(t, e); /* collective */
  if (t->w) {
    const zt_train_state *st = &e->st;
    put(t, "steps-vs-samples/y=steps,x=samples", (double)it, st->consumed_samples);
    put(t, "steps-vs-samples/y=samples,x=steps", (double)st->consumed_samples, it);
    put(t, "steps-vs-tokens/y=steps,x=tokens", (double)it, st->consumed_tokens);
    put(t, "steps-vs-tokens/y=tokens,x=steps", (double)st->consumed_tokens, it);
    if (a->log_learning_rate_to_tensorboard) put3(t, e, "learning-rate/learning-rate", s->lr);
    if (a->log_batch_size_to_tensorboard) put3(t, e, "batch-size/batch-size", (double)e->cur_gbs);
    char tag[128];
    for (int i = 0; i < e->last_losses.n; i++) {
      snprintf(tag, sizeof tag, "lm-loss-training/%s", e->last_losses.name[i]);
      put3(t, e, tag, (float)e->last_losses.value[i]);
    }
    if (st->half_dtype == ZT_DTYPE_FP16 && s->loss_scale != 0 && a->log_loss_scale_to_tensorboard)
      put3(t, e, "loss-scale/loss-scale", s->loss_scale);
    if (a->log_world_size_to_tensorboard) put3(t, e, "world-size/world-size", zt_world_size());
    if (!isnan(s->grad_norm)) put3(t, e, "grad-norm/grad-norm", s->grad_norm);
    if (a->log_num_zeros_in_grad && !isnan(e->num_zeros)) put3(t, e, "num-zeros/num-zeros", e->num_zeros);
    if (!isnan(t->params_norm)) put3(t, e, "params-norm/params-norm", t->params_norm);
    if (e->curriculum) put3(t, e, "seqlen/curriculum_seqlen", e->train_T); /* the legacy seqlen curriculum */
    if (e->ltd_on) put3(t, e, "seqlen/random_ltd_reserved_length", (double)e->ltd.current);
    if (a->log_memory_to_tensorboard) memory(t, e);
  }
  if (a->log_optimizer_states_to_tensorboard) optimizer_states(t, e); /* collective */
}

void zt_tb_log_line_extras(const zt_tb_log *t, const zt_engine *e, char *out, size_t cap) {
  size_t k = 0;
  out[0] = '\0';
  if (t->a->log_num_zeros_in_grad && !isnan(e->num_zeros))
    k += (size_t)snprintf(out + k, cap - k, " num zeros: %.1f |", e->num_zeros);
  if (!isnan(t->params_norm) && k < cap) snprintf(out + k, cap - k, " params norm: %.3f |", t->params_norm);
}

void zt_tb_log_interval(zt_tb_log *t, const zt_engine *e, double seconds_per_iteration) {
  const zt_args *a = t->a;
  if (t->w && a->log_timers_to_tensorboard) put3(t, e, "iteration-time/iteration-time", seconds_per_iteration);
  /* timers.log(timers_to_log, normalizer=args.log_interval): only timers of the level exist */
  zt_timers_log(k_timer_names, t->acc, TM_COUNT, a->timing_log_option, (double)a->log_interval);
  memset(t->acc, 0, sizeof t->acc);
  t->iters = 0;
}

void zt_tb_log_validation(zt_tb_log *t, const zt_engine *e, const zt_loss_sums *l, int test) {
  if (!t->w) return;
  char tag[160];
  const char *kind = test ? "test" : "validation";
  for (int i = 0; i < l->n; i++) {
    const double loss = (float)l->value[i], ppl = exp(loss < 20 ? loss : 20);
    snprintf(tag, sizeof tag, "lm-loss-validation/%s %s", l->name[i], kind);
    put3(t, e, tag, loss);
    if (t->a->log_validation_ppl_to_tensorboard) {
      snprintf(tag, sizeof tag, "lm-loss-validation/%s %s ppl", l->name[i], kind);
      put3(t, e, tag, ppl);
    }
  }
}
