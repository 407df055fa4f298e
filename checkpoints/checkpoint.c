/* The training state's checkpoints (see checkpoint.h, docs/checkpoints.md): what goes into the model-state
 * and optimizer-state files, Megatron's save and exit points, and --load with everything validated and
 * staged before the state is replaced. Tensors go through the model's backend one at a time (a model on a GPU
 * is read and written in place, no host copy of it is kept). */
#include "checkpoints/checkpoint.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoints/ckpt_fs.h"
#include "checkpoints/ckpt_reader.h"
#include "checkpoints/h5io.h"
#include "runtime/base/crc32c.h"
#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"
#include "runtime/base/timer.h"

static volatile sig_atomic_t g_sigterm = 0;
static double g_start_time = 0.0;
static int64_t g_saved_iteration = -1;

static void on_sigterm(int sig) {
  (void)sig;
  g_sigterm = 1;
}

/* ---- the parallel layout of this rank --------------------------------------------------------------- */

typedef struct {
  int tp_rank, tp_size, pp_rank, pp_size, dp_rank, dp_size, mp_rank;
  int local_experts, ep_dp_rank, ep_dp_size; /* this rank holds only its experts, shared by ep_dp_size ranks */
} layout;

/* Where this rank sits: model-parallel rank pp_rank x TP + tp_rank (one model-state file each, written by its
 * data-parallel rank 0), data-parallel rank dp_rank (one optimizer partition each). */
static layout rank_layout(const zt_train_state *st) {
  const zt_args *a = st->args;
  const int P = st->usp_size > 1 ? st->usp_size : 1; /* DeepSpeed-Ulysses: its ranks hold optimizer partitions too */
  layout l = {.tp_rank = st->tp_rank, .tp_size = a->tensor_model_parallel_size, .pp_rank = st->pp_rank,
              .pp_size = st->pp_size > 1 ? st->pp_size : 1, .dp_rank = st->dp_rank * P + (P > 1 ? st->usp_rank : 0),
              .dp_size = a->data_parallel_size * P, .local_experts = st->local_experts, .ep_dp_rank = st->ep_dp_rank,
              .ep_dp_size = st->ep_dp_size > 1 ? st->ep_dp_size : 1};
  l.mp_rank = l.pp_rank * l.tp_size + l.tp_rank;
  return l;
}

/* The last pipeline stage's copy of the tied word embeddings (Megatron's "word_embeddings.weight"): equal to the
 * first stage's embedding (same init, same all-reduced gradients), so each stands in for the other when a
 * checkpoint of another pipeline layout lacks it. */
#define ZT_HEAD_COPY "word_embeddings.weight"
#define ZT_EMBEDDING "language_model.embedding.word_embeddings.weight"

static int find_tensor(const zt_ckpt_reader *r, const char *name) {
  int k = zt_ckpt_find(r, name);
  if (k < 0 && !strcmp(name, ZT_HEAD_COPY)) k = zt_ckpt_find(r, ZT_EMBEDDING);
  return k;
}

static const char *optimizer_name(const zt_optimizer *o) {
  return o->cfg.kind == ZT_OPT_SGD ? "sgd" : o->cfg.kind == ZT_OPT_LAMB ? "lamb" : "adam";
}

static const char *const k_decay_names[] = {"linear", "cosine", "constant", "inverse-square-root"};
static const char *const k_wd_names[] = {"constant", "linear", "cosine"}; /* zt_wd_style */

/* Megatron's print_datetime. */
static void print_datetime(const char *what) {
  char stamp[32];
  time_t now = time(NULL);
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime(&now));
  zt_log("[%s] datetime: %s \n", what, stamp);
}

static int deflate_level(void) {
  const char *s = getenv("ZT_CKPT_DEFLATE");
  if (!s || !*s) return 0;
  int v = atoi(s);
  zt_check(v >= 0 && v <= 9, "bad environment value", "ZT_CKPT_DEFLATE=%s: a zlib level 0-9", s);
  return v;
}

/* ---- writing -------------------------------------------------------------------------------------- */

static void write_i64_dataset(const zt_h5 *f, hid_t loc, const char *name, const int64_t *v, size_t n) {
  hsize_t dim = n;
  hid_t sp = H5Screate_simple(1, &dim, NULL);
  hid_t d = H5Dcreate2(loc, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  zt_check(d >= 0 && (n == 0 || H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0), "checkpoint",
           "%s: cannot write dataset %s", f->path, name);
  H5Dclose(d);
  H5Sclose(sp);
}

static void common_attrs(const zt_h5 *f, const zt_train_state *st, const layout *l, const char *kind) {
  zt_h5_attr_str(f, f->id, "zt_format", ZT_CKPT_FORMAT);
  zt_h5_attr_i64(f, f->id, "zt_format_version", ZT_CKPT_FORMAT_VERSION);
  zt_h5_attr_str(f, f->id, "file_kind", kind);
  zt_h5_attr_str(f, f->id, "ds_version", "zerotron 0.1.0");
  zt_h5_attr_i64(f, f->id, "iteration", st->iteration);
  zt_h5_attr_i64(f, f->id, "zero_stage", st->zero_stage);
  zt_h5_attr_i64(f, f->id, "dp_world_size", l->dp_size);
  zt_h5_attr_i64(f, f->id, "mp_world_size", (int64_t)l->tp_size * l->pp_size);
  zt_h5_attr_i64(f, f->id, "tp_world_size", l->tp_size);
  zt_h5_attr_i64(f, f->id, "pp_world_size", l->pp_size);
  zt_h5_attr_i64(f, f->id, "mp_rank", l->mp_rank);
  zt_h5_attr_i64(f, f->id, "tp_rank", l->tp_rank);
  zt_h5_attr_i64(f, f->id, "pp_rank", l->pp_rank);
}

/* Parameter p's weights as dataset /module/<name> of f, with the attributes the reader needs to reassemble it in any
 * layout. host: scratch of p->numel floats. */
static void write_param(zt_h5 *f, hid_t g, const zt_train_state *st, const layout *l, const zt_param *p, int index,
                        zt_dtype wdt, float *host, int deflate) {
  zt_model_get_params(st->model, host, p->offset, p->offset + p->numel);
  hid_t d = zt_h5_write_tensor(f, g, p->name, wdt, host, p->ndim, p->shape, deflate);
  int64_t full[ZT_MAX_DIMS];
  for (int k = 0; k < p->ndim; k++) full[k] = p->shape[k] * (k == p->tp_split_dim ? l->tp_size : 1);
  zt_h5_attr_i64v(f, d, "full_shape", full, p->ndim);
  zt_h5_attr_i64(f, d, "tp_split_dim", p->tp_split_dim);
  if (p->tp_parts > 1) zt_h5_attr_i64(f, d, "tp_parts", p->tp_parts);
  zt_h5_attr_i64(f, d, "tp_rank", l->tp_rank);
  zt_h5_attr_i64(f, d, "tp_world_size", l->tp_size);
  zt_h5_attr_i64(f, d, "slice_offset", p->tp_split_dim >= 0 ? (int64_t)l->tp_rank * p->shape[p->tp_split_dim] : 0);
  zt_h5_attr_i64(f, d, "tied_group", p->tied_group);
  zt_h5_attr_i64(f, d, "no_weight_decay", p->no_weight_decay);
  zt_h5_attr_i64(f, d, "expert_id", p->expert_id);
  zt_h5_attr_i64(f, d, "index", index);
  H5Dclose(d);
}

static size_t largest_param(const zt_param_table *t) {
  size_t maxn = 1;
  for (int i = 0; i < t->count; i++) maxn = t->params[i].numel > maxn ? t->params[i].numel : maxn;
  return maxn;
}

/* DeepSpeed's MoE layout (_save_moe_checkpoint): each expert's parameters in a file of its own,
 * layer_<moe layer>_expert_<expert>_mp_rank_<mp>_model_states.h5, the MoE layers numbered from 0 in the order of this
 * model-parallel rank's modules and the experts by their global ids; the routers stay in the model states. Written by
 * the data-parallel rank 0 of each model-parallel rank when every rank holds every expert (ZeRO), else, as DeepSpeed,
 * by the expert-data-parallel rank 0 of each expert-parallel rank, its own experts (docs/moe.md). */
static void write_expert_files(const zt_train_state *st, const layout *l, const char *dir, int deflate) {
  const zt_param_table *t = st->model->table;
  const zt_dtype wdt = st->master ? st->half_dtype : ZT_DTYPE_FP32;
  float *host = NULL;
  char layer[200] = "";
  int moe_layer = -1;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if (p->expert_id < 0) continue;
    const char *cut = strstr(p->name, ".deepspeed_moe.experts.");
    zt_check(cut != NULL && (size_t)(cut - p->name) < sizeof layer, "internal error", "checkpoint: expert parameter "
             "%s outside an MoE layer's experts", p->name);
    if (strncmp(p->name, layer, (size_t)(cut - p->name)) != 0 || layer[cut - p->name] != '\0') {
      memcpy(layer, p->name, (size_t)(cut - p->name));
      layer[cut - p->name] = '\0';
      moe_layer++;
    }
    int j = i; /* the expert's parameters are consecutive in the table */
    while (j < t->count && t->params[j].expert_id == p->expert_id && strncmp(t->params[j].name, layer, strlen(layer)) == 0)
      j++;
    if (!host) host = zt_malloc(largest_param(t) * sizeof(float), "checkpoint tensor");
    char path[4600];
    snprintf(path, sizeof path, "%s/layer_%d_expert_%d_mp_rank_%02d_model_states.h5", dir, moe_layer, p->expert_id,
             l->mp_rank);
    zt_h5 f;
    zt_h5_create(&f, path);
    common_attrs(&f, st, l, "expert_states");
    zt_h5_attr_i64(&f, f.id, "moe_layer_id", moe_layer);
    zt_h5_attr_i64(&f, f.id, "expert_id", p->expert_id);
    zt_h5_attr_str(&f, f.id, "dtype", zt_dtype_name(wdt));
    hid_t g = zt_h5_group_create(&f, f.id, "module");
    const char **names = zt_malloc((size_t)(j - i) * sizeof(char *), "checkpoint names");
    for (int k = i; k < j; k++) {
      names[k - i] = t->params[k].name;
      write_param(&f, g, st, l, &t->params[k], k, wdt, host, deflate);
    }
    H5Gclose(g);
    zt_h5_write_strings(&f, f.id, "param_names", names, (size_t)(j - i));
    free(names);
    zt_h5_close(&f);
    i = j - 1;
  }
  free(host);
}

static void write_model_file(const zt_train_state *st, const layout *l, const char *path, const char *args_text,
                             const char *ds_text, int deflate) {
  const zt_args *a = st->args;
  const zt_param_table *t = st->model->table;
  const zt_dtype wdt = st->master ? st->half_dtype : ZT_DTYPE_FP32;
  zt_h5 f;
  zt_h5_create(&f, path);
  zt_ckpt_phase("model file created");
  common_attrs(&f, st, l, "model_states");
  zt_h5_attr_f64(&f, f.id, "checkpoint_version", ZT_CKPT_MEGATRON_VERSION);
  zt_h5_attr_i64(&f, f.id, "global_steps", st->iteration);
  zt_h5_attr_i64(&f, f.id, "global_samples", st->consumed_samples);
  zt_h5_attr_i64(&f, f.id, "consumed_train_samples", st->consumed_samples);
  zt_h5_attr_i64(&f, f.id, "consumed_valid_samples", st->consumed_valid_samples);
  zt_h5_attr_i64(&f, f.id, "tokens", st->consumed_tokens);
  if (st->random_ltd_layer_tokens >= 0) /* DeepSpeed's checkpoint['random_ltd'] (the scheduler's consumed count) */
    zt_h5_attr_i64(&f, f.id, "random_ltd_consumed_layer_tokens", st->random_ltd_layer_tokens);
  if (st->data_sampler_step >= 0) { /* DeepSpeed's checkpoint['data_sampler'] (curriculum_step; its state's digest) */
    zt_h5_attr_i64(&f, f.id, "data_sampler_curriculum_step", st->data_sampler_step);
    zt_h5_attr_i64(&f, f.id, "data_sampler_digest", (int64_t)st->data_sampler_digest);
  }
  zt_h5_attr_i64(&f, f.id, "skipped_steps", st->skipped_iters);
  zt_h5_attr_str(&f, f.id, "dtype", zt_dtype_name(wdt));
  zt_h5_attr_i64(&f, f.id, "vocab_size", a->vocab_size);
  zt_h5_attr_i64(&f, f.id, "padded_vocab_size", a->padded_vocab_size);
  zt_h5_attr_str(&f, f.id, "args", args_text);
  zt_h5_attr_str(&f, f.id, "ds_config", ds_text);
  zt_h5_attr_str(&f, f.id, "ds_config_path", st->ds_config_path);

  /* the experts' parameters go to their own files (write_expert_files) */
  hid_t g = zt_h5_group_create(&f, f.id, "module");
  const char **names = zt_malloc((size_t)t->count * sizeof(char *) + 1, "checkpoint names");
  float *host = zt_malloc(largest_param(t) * sizeof(float), "checkpoint tensor"); /* one at a time off the backend */
  size_t n = 0;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    if (p->expert_id < 0) {
      names[n++] = p->name;
      write_param(&f, g, st, l, p, i, wdt, host, deflate);
    }
    if (i == t->count / 2) zt_ckpt_phase("model file half written");
  }
  free(host);
  H5Gclose(g);
  zt_h5_write_strings(&f, f.id, "param_names", names, n);
  free(names);

  /* Megatron's OptimizerParamScheduler state_dict, or DeepSpeed's {'last_batch_iteration'} */
  g = zt_h5_group_create(&f, f.id, "lr_scheduler");
  if (st->use_ds_sched) {
    zt_h5_attr_str(&f, g, "type", "deepspeed");
    zt_h5_attr_str(&f, g, "name", zt_ds_sched_name(st->ds_sched.kind));
    zt_h5_attr_i64(&f, g, "last_batch_iteration", zt_ds_sched_state(&st->ds_sched));
  } else {
    zt_h5_attr_str(&f, g, "type", "megatron");
    zt_h5_attr_f64(&f, g, "max_lr", st->sched.max_lr);
    zt_h5_attr_f64(&f, g, "min_lr", st->sched.min_lr);
    zt_h5_attr_i64(&f, g, "lr_warmup_steps", st->sched.warmup_steps);
    zt_h5_attr_i64(&f, g, "lr_decay_steps", st->sched.decay_steps);
    zt_h5_attr_str(&f, g, "lr_decay_style", k_decay_names[st->sched.style]);
    zt_h5_attr_i64(&f, g, "num_steps", st->sched.num_steps);
    /* Megatron-DeepSpeed's token keys; an absent lr_*_tokens attribute is its None */
    if (st->sched.has_warmup_tokens) zt_h5_attr_i64(&f, g, "lr_warmup_tokens", st->sched.warmup_tokens);
    if (st->sched.has_decay_tokens) zt_h5_attr_i64(&f, g, "lr_decay_tokens", st->sched.decay_tokens);
    zt_h5_attr_i64(&f, g, "num_tokens", st->sched.num_tokens);
    zt_h5_attr_f64(&f, g, "start_wd", st->sched.start_wd);
    zt_h5_attr_f64(&f, g, "end_wd", st->sched.end_wd);
    zt_h5_attr_str(&f, g, "wd_incr_style", k_wd_names[st->sched.wd_style]);
    zt_h5_attr_i64(&f, g, "wd_incr_steps", st->sched.wd_incr_steps);
  }
  H5Gclose(g);
  /* dropout and data order are keyed by (seed, sample index): the seed and the data position are the state */
  if (!a->no_save_rng) {
    g = zt_h5_group_create(&f, f.id, "rng_state");
    zt_h5_attr_i64(&f, g, "seed", (int64_t)a->seed);
    zt_h5_attr_i64(&f, g, "consumed_train_samples", st->consumed_samples);
    zt_h5_attr_str(&f, g, "generator", "philox4x32-10 keyed by (seed, purpose, sample index)");
    H5Gclose(g);
  }
  zt_h5_close(&f);
  zt_ckpt_phase("model file closed");
  zt_ckpt_fsync(path);
}

/* What this rank writes of the optimizer state. Without ZeRO every rank holds all of it, and rank r writes the
 * r-th of DP equal parts of the compact flat space (the parameters in table order without the buffer's alignment
 * gaps, padded to a multiple of 2 x DP as DeepSpeed pads), so the ranks share the writing; when a rank holds only its
 * own experts, the dense parameters' compact space is shared so and the experts' over the ranks holding the same
 * experts (x: the second space). With ZeRO 1/2 a rank writes the partition it owns, [part_lo, part_hi) of the flat
 * buffer. */
typedef struct {
  size_t flat, padded, part, lo, hi; /* in the compact space (ZeRO: the flat buffer) */
  size_t xflat, xpart, xlo, xhi;     /* the experts' compact space (local experts) */
  int zero, split;
} partition;

static void share(size_t flat, int rank, int size, size_t *padded, size_t *part, size_t *lo, size_t *hi) {
  const size_t align = 2 * (size_t)size;
  *padded = (flat + align - 1) / align * align;
  *part = *padded / (size_t)size;
  *lo = (size_t)rank * *part;
  *hi = *lo + *part < flat ? *lo + *part : flat;
  if (*hi < *lo) *hi = *lo;
}

static partition make_partition(const zt_train_state *st, const layout *l) {
  const zt_param_table *t = st->model->table;
  partition p = {0};
  if (st->zero_stage > 0) {
    p = (partition){.flat = st->zero.numel, .padded = st->zero.padded, .part = st->zero.part, .lo = st->part_lo,
                    .hi = st->part_hi, .zero = 1};
    if (l->local_experts) /* the experts' partition, over the ranks holding them */
      p.split = 1, p.xflat = st->zero_x.numel, p.xpart = st->zero_x.part, p.xlo = st->xpart_lo, p.xhi = st->xpart_hi;
    return p;
  }
  p.split = l->local_experts;
  for (int i = 0; i < t->count; i++) {
    if (p.split && t->params[i].expert_id >= 0) p.xflat += t->params[i].numel;
    else p.flat += t->params[i].numel;
  }
  share(p.flat, l->dp_rank, l->dp_size, &p.padded, &p.part, &p.lo, &p.hi);
  size_t xpadded;
  if (p.split) share(p.xflat, l->ep_dp_rank, l->ep_dp_size, &xpadded, &p.xpart, &p.xlo, &p.xhi);
  return p;
}

/* The elements [*a, *b) of parameter p (compact offset c in its space; ZeRO: its offset) this rank writes; 0 when
 * none. */
static int fragment(const partition *pt, const zt_param *p, size_t c, size_t *a, size_t *b) {
  const size_t start = pt->zero ? p->offset : c;
  const int x = pt->split && p->expert_id >= 0;
  const size_t plo = x ? pt->xlo : pt->lo, phi = x ? pt->xhi : pt->hi;
  const size_t lo = start > plo ? start : plo, hi = start + p->numel < phi ? start + p->numel : phi;
  if (lo >= hi) return 0;
  *a = lo - start;
  *b = hi - start;
  return 1;
}

static void write_optim_file(const zt_train_state *st, const layout *l, const char *path, int deflate) {
  const zt_param_table *t = st->model->table;
  const zt_optimizer *o = &st->opt;
  const partition pt = make_partition(st, l);
  const size_t n = pt.hi - pt.lo + (pt.xhi - pt.xlo);
  const int sgd = o->cfg.kind == ZT_OPT_SGD;
  /* the optimizer's arrays (and the masters) are indexed as the optimizer's ranges lay them out (from this rank's
   * part_lo; all of the flat buffer without ZeRO); with offload_optimizer nvme they are read back from the swap files
   * (one range); without masters the fp32 weights are the parameters themselves */
  const size_t base = st->part_lo, plen = st->part_hi - st->part_lo;
  float *swapped = NULL;
  const float *srcs[3] = {st->master, o->m, o->v};
  const zt_backend *be = st->model->be; /* the state lives in the model's backend memory (swap files: the CPU's) */
  if (st->swap) {
    const int with_master = st->half_dtype != ZT_DTYPE_FP32;
    swapped = zt_malloc((size_t)(2 + with_master) * plen * sizeof(float) + 1, "checkpoint swapped optimizer state");
    zt_opt_swapper_read_all(st->swap, swapped, swapped + plen, with_master ? swapped + 2 * plen : NULL);
    srcs[1] = swapped;
    srcs[2] = swapped + plen;
    if (with_master) srcs[0] = swapped + 2 * plen;
  }
  static const char *const adam_names[3] = {"fp32", "exp_avg", "exp_avg_sq"};
  static const char *const sgd_names[2] = {"fp32", "momentum_buffer"};
  const int nstates = sgd ? 2 : 3;
  float *buf = zt_malloc(n * sizeof(float) + 1, "checkpoint optimizer partition");
  const char **names = zt_malloc((size_t)t->count * sizeof(char *) + 1, "checkpoint names");
  int64_t *cols = zt_malloc(3 * ((size_t)t->count + 1) * sizeof(int64_t), "slice mapping");
  int64_t *start = cols, *numel = cols + t->count + 1, *poff = cols + 2 * (t->count + 1);
  size_t nmap = 0;

  zt_h5 f;
  zt_h5_create(&f, path);
  zt_ckpt_phase("optimizer file created");
  common_attrs(&f, st, l, "optim_states");
  zt_h5_attr_i64(&f, f.id, "partition_count", l->dp_size);
  zt_h5_attr_i64(&f, f.id, "dp_rank", l->dp_rank);
  zt_h5_attr_str(&f, f.id, "optimizer", optimizer_name(o));
  zt_h5_attr_i64(&f, f.id, "step", o->step);
  zt_h5_attr_f64(&f, f.id, "beta1", o->cfg.beta1);
  zt_h5_attr_f64(&f, f.id, "beta2", o->cfg.beta2);
  zt_h5_attr_f64(&f, f.id, "eps", o->cfg.eps);
  zt_h5_attr_f64(&f, f.id, "weight_decay", o->cfg.weight_decay);
  zt_h5_attr_i64(&f, f.id, "adam_w_mode", o->cfg.adam_w_mode);
  zt_h5_attr_f64(&f, f.id, "momentum", o->cfg.momentum);
  zt_h5_attr_i64(&f, f.id, "flat_numel", (int64_t)pt.flat);
  zt_h5_attr_i64(&f, f.id, "partition_numel", (int64_t)pt.part);
  zt_h5_attr_i64(&f, f.id, "partition_start", (int64_t)pt.lo);
  zt_h5_attr_i64(&f, f.id, "group_padding", l->dp_rank == l->dp_size - 1 ? (int64_t)(pt.padded - pt.flat) : 0);
  if (pt.split) { /* this rank's experts' compact space, shared by the ranks holding them */
    zt_h5_attr_i64(&f, f.id, "expert_flat_numel", (int64_t)pt.xflat);
    zt_h5_attr_i64(&f, f.id, "expert_partition_numel", (int64_t)pt.xpart);
    zt_h5_attr_i64(&f, f.id, "expert_partition_start", (int64_t)pt.xlo);
  }
  zt_h5_attr_str(&f, f.id, "half_dtype", zt_dtype_name(st->half_dtype));
  zt_h5_attr_str(&f, f.id, "fp32_source", st->master ? "fp32 master weights" : "fp32 weights (no mixed precision)");

  hid_t g = zt_h5_group_create(&f, f.id, "state");
  for (int s = 0; s < nstates; s++) {
    size_t c = 0, cx = 0, k = 0; /* the compact offsets of the dense parameters and (split) of the experts */
    for (int i = 0; i < t->count; i++) {
      const zt_param *p = &t->params[i];
      const int x = pt.split && p->expert_id >= 0;
      size_t a, b;
      if (fragment(&pt, p, x ? cx : c, &a, &b)) {
        const size_t e = p->offset + a; /* the flat element */
        const float *src = srcs[s] ? srcs[s] + (st->swap ? e - base : zt_optimizer_index(o, e))
                                   : (const float *)st->model->params + e;
        be->to_host(buf + k, src, (b - a) * sizeof(float)); /* swap: host (CPU) */
        if (s == 0) {
          names[nmap] = p->name;
          start[nmap] = (int64_t)k;
          numel[nmap] = (int64_t)(b - a);
          poff[nmap] = (int64_t)a;
          nmap++;
        }
        k += b - a;
      }
      if (x) cx += p->numel;
      else c += p->numel;
    }
    zt_check(k <= n, "internal error", "checkpoint partition: %zu elements in a partition of %zu", k, n);
    int64_t shape[1] = {(int64_t)k};
    H5Dclose(zt_h5_write_tensor(&f, g, sgd ? sgd_names[s] : adam_names[s], ZT_DTYPE_FP32, buf, 1, shape, deflate));
    zt_ckpt_phase("optimizer state written");
  }
  H5Gclose(g);
  g = zt_h5_group_create(&f, f.id, "param_slice_mappings");
  zt_h5_write_strings(&f, g, "names", names, nmap);
  write_i64_dataset(&f, g, "start", start, nmap);
  write_i64_dataset(&f, g, "numel", numel, nmap);
  write_i64_dataset(&f, g, "param_offset", poff, nmap);
  H5Gclose(g);

  const zt_loss_scaler *sc = &st->scaler;
  g = zt_h5_group_create(&f, f.id, "loss_scaler");
  zt_h5_attr_i64(&f, g, "kind", sc->kind);
  zt_h5_attr_i64(&f, g, "dynamic_loss_scale", sc->kind != ZT_SCALER_STATIC);
  zt_h5_attr_f64(&f, g, "cur_scale", sc->cur_scale);
  zt_h5_attr_f64(&f, g, "min_scale", sc->min_scale);
  zt_h5_attr_i64(&f, g, "scale_window", sc->scale_window);
  zt_h5_attr_i64(&f, g, "delayed_shift", sc->delayed_shift);
  zt_h5_attr_i64(&f, g, "consecutive_hysteresis", sc->consecutive_hysteresis);
  zt_h5_attr_i64(&f, g, "cur_iter", sc->cur_iter);
  zt_h5_attr_i64(&f, g, "last_overflow_iter", sc->last_overflow_iter);
  zt_h5_attr_i64(&f, g, "cur_hysteresis", sc->cur_hysteresis);
  zt_h5_attr_i64(&f, g, "growth_tracker", sc->growth_tracker);
  zt_h5_attr_i64(&f, g, "scale_is_int", sc->scale_is_int);
  zt_h5_attr_i64(&f, g, "prev_is_int", sc->prev_is_int);
  zt_h5_attr_f64(&f, g, "prev_scale", sc->prev_scale);
  zt_h5_attr_i64(&f, g, "event", (int64_t)sc->event);
  H5Gclose(g);
  zt_h5_close(&f);
  zt_ckpt_phase("optimizer file closed");
  zt_ckpt_fsync(path);
  free(swapped);
  free(buf);
  free(names);
  free(cols);
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int zt_ckpt_tag_consistent(const char *tag) {
  const double h = (double)zt_crc32c(0, tag, strlen(tag));
  double v[2] = {h, -h}; /* the largest and (negated) the smallest over the ranks */
  zt_allreduce_max_f64(zt_comm_world(), v, 2);
  return v[0] == h && -v[1] == h;
}

void zt_ckpt_save(zt_train_state *st) {
  const zt_args *a = st->args;
  const layout l = rank_layout(st);
  const zt_group *world = zt_comm_world();
  const int rank0 = zt_rank() == 0, deflate = deflate_level();
  char tag[64], tmp[4200], final[4200];
  snprintf(tag, sizeof tag, "global_step%lld", (long long)st->iteration);
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp", a->save, tag);
  snprintf(final, sizeof final, "%s/%s", a->save, tag);
  if (a->ckpt_tag_validation && !zt_ckpt_tag_consistent(tag)) { /* checkpoint.tag_validation Warn or Fail */
    char msg[512];
    snprintf(msg, sizeof msg, "[rank=%d] The checkpoint tag name '%s' is not consistent across all ranks. Including "
             "rank unique information in checkpoint tag could cause issues when restoring with different world "
             "sizes.", zt_rank(), tag);
    zt_check(a->ckpt_tag_validation != 2, "checkpoint", "%s (checkpoint.tag_validation Fail)", msg);
    zt_warn("%s\n", msg);
  }
  zt_log("saving checkpoint at iteration %7lld to %s\n", (long long)st->iteration, a->save);
  const double t0 = zt_now();
  if (rank0) {
    zt_ckpt_mkdirs(a->save);
    zt_ckpt_rmtree(tmp); /* left by a save that was killed */
    zt_ckpt_mkdirs(tmp);
    zt_ckpt_phase("temporary directory created");
  }
  zt_barrier(world);
  char path[4400];
  if (st->zero_stage == 3) zt_zero3_gather_all(&st->zero3); /* the model states hold whole weights */
  if (l.dp_rank == 0) { /* the model states of this model-parallel rank */
    char *args_text = zt_args_summary(a);
    const char *ds_text = st->ds_config_text ? st->ds_config_text : "";
    snprintf(path, sizeof path, "%s/mp_rank_%02d_model_states.h5", tmp, l.mp_rank);
    write_model_file(st, &l, path, args_text, ds_text, deflate);
    if (!l.local_experts) write_expert_files(st, &l, tmp, deflate);
    free(args_text);
  }
  if (l.local_experts && l.ep_dp_rank == 0) write_expert_files(st, &l, tmp, deflate); /* this rank's experts */
  if (!a->no_save_optim) { /* every data-parallel rank writes its partition */
    snprintf(path, sizeof path, "%s/%szero_pp_rank_%d_mp_rank_%02d_optim_states.h5", tmp,
             st->half_dtype == ZT_DTYPE_BF16 ? "bf16_" : "", l.dp_rank, l.mp_rank);
    write_optim_file(st, &l, path, deflate);
  }
  if (st->zero_stage == 3) zt_zero3_release_all(&st->zero3);
  zt_barrier(world);
  if (rank0) {
    DIR *d = opendir(tmp);
    zt_check(d, "checkpoint", "%s: cannot list", tmp);
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
      if (ends_with(de->d_name, ".h5")) {
        names = realloc(names, (size_t)(n + 1) * sizeof(char *));
        names[n++] = strdup(de->d_name);
      }
    closedir(d);
    zt_ckpt_manifest_write(tmp, names, n);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    zt_ckpt_phase("manifest written");
    zt_ckpt_fsync(tmp);
    zt_ckpt_install_dir(tmp, final);
    zt_ckpt_phase("tag directory installed");
    char text[64];
    snprintf(text, sizeof text, "%lld", (long long)st->iteration);
    zt_ckpt_write_atomic(a->save, "latest_checkpointed_iteration.txt", text);
    zt_ckpt_write_atomic(a->save, "latest", tag); /* last: the previous checkpoint stays current until here */
    zt_ckpt_phase("latest replaced");
  }
  zt_barrier(world);
  g_saved_iteration = st->iteration;
  const double ms = 1e3 * (zt_now() - t0);
  zt_log("  successfully saved checkpoint at iteration %7lld to %s\n", (long long)st->iteration, a->save);
  zt_log("(min, max) time across ranks (ms):\n    save-checkpoint ................................: (%.2f, %.2f)\n",
         ms, ms);
}

/* ---- loading -------------------------------------------------------------------------------------- */

/* Megatron's OptimizerParamScheduler._check_and_set: the command line's value with
 * --override-opt_param-scheduler, the checkpoint's with --use-checkpoint-opt_param-scheduler, otherwise both must
 * agree. text_* are the values as Python prints them. */
static int check_and_set(const zt_args *a, const char *file, const char *name, int equal, const char *text_cls,
                         const char *text_saved) {
  if (a->override_opt_param_scheduler) {
    zt_log(" > overriding %s value to %s\n", name, text_cls);
    return 0;
  }
  zt_check(equal || a->use_checkpoint_opt_param_scheduler, "checkpoint", "%s: OptimizerParamScheduler: class input "
           "value %s and checkpoint value %s for %s do not match (--override-opt_param-scheduler keeps the command "
           "line's, --use-checkpoint-opt_param-scheduler takes the checkpoint's)", file, text_cls, text_saved, name);
  zt_log(" > using checkpoint value %s for %s\n", text_saved, name);
  return 1;
}

static void check_real(const zt_args *a, const char *file, const char *name, double *cls, double saved) {
  char c[40], s[40];
  zt_py_float(c, sizeof c, *cls, 0);
  zt_py_float(s, sizeof s, saved, 0);
  if (check_and_set(a, file, name, *cls == saved, c, s)) *cls = saved;
}

static void check_int(const zt_args *a, const char *file, const char *name, int64_t *cls, int64_t saved) {
  char c[32], s[32];
  snprintf(c, sizeof c, "%lld", (long long)*cls);
  snprintf(s, sizeof s, "%lld", (long long)saved);
  if (check_and_set(a, file, name, *cls == saved, c, s)) *cls = saved;
}

/* The same for a count that may be None (has 0): Megatron-DeepSpeed's lr_warmup_tokens / lr_decay_tokens. */
static void check_opt_int(const zt_args *a, const char *file, const char *name, int *cls_has, int64_t *cls,
                          int saved_has, int64_t saved) {
  char c[32] = "None", s[32] = "None";
  if (*cls_has) snprintf(c, sizeof c, "%lld", (long long)*cls);
  if (saved_has) snprintf(s, sizeof s, "%lld", (long long)saved);
  if (check_and_set(a, file, name, *cls_has == saved_has && (!saved_has || *cls == saved), c, s)) {
    *cls_has = saved_has;
    *cls = saved_has ? saved : 0;
  }
}

/* The token state of Megatron-DeepSpeed's scheduler (checkpoints written before it have none: None and 0). A warmup
 * in samples with a decay in tokens sets lr_warmup_tokens when the warmup ends: that value is state, not a flag, and
 * is taken from the checkpoint (Megatron-DeepSpeed compares it with the flag's None and stops, or with
 * --override-opt_param-scheduler drops it and fails in get_lr; the run continues the saved curve here). */
static void load_scheduler_tokens(const zt_args *a, const zt_h5 *f, hid_t g, zt_lr_schedule *sched,
                                  int64_t saved_num_steps) {
  const int has_w = zt_h5_has_attr(g, "lr_warmup_tokens"), has_d = zt_h5_has_attr(g, "lr_decay_tokens");
  const int64_t w = has_w ? zt_h5_get_i64(f, g, "/lr_scheduler", "lr_warmup_tokens") : 0;
  const int64_t d = has_d ? zt_h5_get_i64(f, g, "/lr_scheduler", "lr_decay_tokens") : 0;
  check_opt_int(a, f->path, "decay tokens", &sched->has_decay_tokens, &sched->decay_tokens, has_d, d);
  if (!sched->has_warmup_tokens && sched->has_decay_tokens && has_w && sched->warmup_steps > 0 &&
      saved_num_steps >= sched->warmup_steps) {
    sched->has_warmup_tokens = 1;
    sched->warmup_tokens = w;
    zt_log(" > using checkpoint value %lld for warmup tokens (reached at the end of the sample warmup)\n",
           (long long)w);
  } else {
    check_opt_int(a, f->path, "warmup tokens", &sched->has_warmup_tokens, &sched->warmup_tokens, has_w, w);
  }
  sched->num_tokens = zt_h5_has_attr(g, "num_tokens") ? zt_h5_get_i64(f, g, "/lr_scheduler", "num_tokens") : 0;
}

/* The weight-decay keys of Megatron's state_dict (checkpoints written before them have none: the command line's
 * schedule is kept, as Megatron's load_state_dict does without 'start_wd'). One deliberate difference: with the
 * constant style on both sides the increment's length (--train-iters x global batch, or --train-samples) changes no
 * value, so a longer run resumed with the same --lr-decay-iters is not refused for it, as Megatron would. */
static void load_scheduler_wd(const zt_args *a, const zt_h5 *f, hid_t g, zt_lr_schedule *sched) {
  if (!zt_h5_has_attr(g, "start_wd")) return;
  char *style = zt_h5_get_str(f, g, "/lr_scheduler", "wd_incr_style");
  int saved = -1;
  for (int k = 0; k < 3; k++)
    if (!strcmp(style, k_wd_names[k])) saved = k;
  zt_check(saved >= 0, "checkpoint", "%s: unknown wd_incr_style \"%s\"", f->path, style);
  check_real(a, f->path, "start weight decay", &sched->start_wd, zt_h5_get_f64(f, g, "/lr_scheduler", "start_wd"));
  check_real(a, f->path, "end weight decay", &sched->end_wd, zt_h5_get_f64(f, g, "/lr_scheduler", "end_wd"));
  const int64_t steps = zt_h5_get_i64(f, g, "/lr_scheduler", "wd_incr_steps");
  if (saved == ZT_WD_CONSTANT && sched->wd_style == ZT_WD_CONSTANT && steps != sched->wd_incr_steps &&
      !a->override_opt_param_scheduler && !a->use_checkpoint_opt_param_scheduler)
    zt_log(" > keeping %lld for total number of weight decay iterations (checkpoint value %lld): a constant weight "
           "decay does not depend on it\n", (long long)sched->wd_incr_steps, (long long)steps);
  else
    check_int(a, f->path, "total number of weight decay iterations", &sched->wd_incr_steps, steps);
  if (check_and_set(a, f->path, "weight decay incr style", saved == (int)sched->wd_style, k_wd_names[sched->wd_style],
                    style))
    sched->wd_style = (zt_wd_style)saved;
  free(style);
}

/* The scheduler state to restore: Megatron's (with its hyper-parameter check) into *sched, or DeepSpeed's
 * last_batch_iteration. Nothing of the engine changes here. *wd is the weight decay of the first step after the
 * load: Megatron's load_state_dict steps to num_steps, which sets every group's weight_decay, before it checks and
 * sets the weight-decay keys, so that step uses the command line's increment (they differ only with
 * --use-checkpoint-opt_param-scheduler). */
static void load_scheduler(zt_train_state *st, const zt_ckpt_reader *r, zt_lr_schedule *sched, int64_t *last_batch,
                           double *wd) {
  const zt_args *a = st->args;
  const zt_h5 *f = &r->model[0];
  hid_t g = zt_h5_group_open(f, f->id, "lr_scheduler");
  char *type = zt_h5_get_str(f, g, "/lr_scheduler", "type");
  const char *want = st->use_ds_sched ? "deepspeed" : "megatron";
  zt_check(strcmp(type, want) == 0, "checkpoint", "%s: the checkpoint's learning-rate scheduler is %s's, this run "
           "uses %s's (%s); --no-load-lr-state starts the schedule afresh", f->path, type, want,
           st->use_ds_sched ? "a ds_config scheduler block" : "no ds_config scheduler block");
  *sched = st->sched;
  if (st->use_ds_sched) {
    char *name = zt_h5_get_str(f, g, "/lr_scheduler", "name");
    zt_check(strcmp(name, zt_ds_sched_name(st->ds_sched.kind)) == 0, "checkpoint", "%s: the checkpoint's scheduler "
             "is %s, the ds_config's %s", f->path, name, zt_ds_sched_name(st->ds_sched.kind));
    free(name);
    *last_batch = zt_h5_get_i64(f, g, "/lr_scheduler", "last_batch_iteration");
  } else {
    check_real(a, f->path, "learning rate", &sched->max_lr, zt_h5_get_f64(f, g, "/lr_scheduler", "max_lr"));
    check_real(a, f->path, "minimum learning rate", &sched->min_lr, zt_h5_get_f64(f, g, "/lr_scheduler", "min_lr"));
    check_int(a, f->path, "warmup iterations", &sched->warmup_steps,
              zt_h5_get_i64(f, g, "/lr_scheduler", "lr_warmup_steps"));
    check_int(a, f->path, "total number of iterations", &sched->decay_steps,
              zt_h5_get_i64(f, g, "/lr_scheduler", "lr_decay_steps"));
    char *style = zt_h5_get_str(f, g, "/lr_scheduler", "lr_decay_style");
    int saved_style = -1;
    for (int k = 0; k < 4; k++)
      if (!strcmp(style, k_decay_names[k])) saved_style = k;
    zt_check(saved_style >= 0, "checkpoint", "%s: unknown lr_decay_style \"%s\"", f->path, style);
    if (check_and_set(a, f->path, "learning rate decay style", saved_style == (int)sched->style,
                      k_decay_names[sched->style], style))
      sched->style = (zt_decay_style)saved_style;
    free(style);
    sched->num_steps = zt_h5_get_i64(f, g, "/lr_scheduler", "num_steps");
    load_scheduler_tokens(a, f, g, sched, sched->num_steps);
    *wd = zt_wd_get(sched);
    load_scheduler_wd(a, f, g, sched);
  }
  free(type);
  H5Gclose(g);
}

static void load_scaler(const zt_ckpt_reader *r, zt_loss_scaler *sc) {
  const zt_h5 *f = &r->optim[0];
  hid_t g = zt_h5_group_open(f, f->id, "loss_scaler");
  const char *w = "/loss_scaler";
  const int64_t kind = zt_h5_get_i64(f, g, w, "kind");
  zt_check(kind == sc->kind, "checkpoint", "%s: loss scaler kind %lld, this run's %d (a different --fp16/--bf16 or "
           "loss-scale setting); use --no-load-optim or --finetune to start the scaler afresh", f->path,
           (long long)kind, (int)sc->kind);
  sc->cur_scale = zt_h5_get_f64(f, g, w, "cur_scale");
  sc->cur_iter = zt_h5_get_i64(f, g, w, "cur_iter");
  sc->last_overflow_iter = zt_h5_get_i64(f, g, w, "last_overflow_iter");
  sc->cur_hysteresis = (int)zt_h5_get_i64(f, g, w, "cur_hysteresis");
  sc->growth_tracker = zt_h5_get_i64(f, g, w, "growth_tracker");
  sc->scale_is_int = (int)zt_h5_get_i64(f, g, w, "scale_is_int");
  sc->prev_is_int = (int)zt_h5_get_i64(f, g, w, "prev_is_int");
  sc->prev_scale = zt_h5_get_f64(f, g, w, "prev_scale");
  sc->event = (int)zt_h5_get_i64(f, g, w, "event");
  H5Gclose(g);
}

/* Our full shape of parameter p (its shape with the split dimension times the tensor-parallel size). */
static void full_shape_of(const zt_param *p, const layout *l, int64_t *full) {
  for (int d = 0; d < p->ndim; d++) full[d] = p->shape[d] * (d == p->tp_split_dim ? l->tp_size : 1);
}

/* Vocabulary tensors are padded to a multiple of --make-vocab-size-divisible-by x TP, so another tensor-parallel
 * size pads them to another number of rows; the rows past the vocabulary are padding, which is dropped or
 * added as zeros (as Megatron's universal checkpoint strips and re-pads them). */
static int vocab_rows(const zt_param *p) {
  return strstr(p->name, "word_embeddings.weight") != NULL || strstr(p->name, "output_layer.weight") != NULL;
}

/* From the checkpoint's full tensor (shape of t) to this rank's slice of our full tensor: vocabulary padding
 * adapted, then the tensor-parallel slice cut (tensor parallelism: the rank's contiguous range along the split
 * dimension). scratch holds our full tensor when needed. */
static void take_slice(const zt_param *p, const layout *l, const float *full, const zt_ckpt_tensor *t, float *scratch,
                       float *dst) {
  int64_t ours[ZT_MAX_DIMS];
  full_shape_of(p, l, ours);
  size_t n = 1;
  for (int d = 0; d < p->ndim; d++) n *= (size_t)ours[d];
  if (t->full_shape[0] != ours[0]) { /* vocabulary padding rows (checked before) */
    const size_t row = n / (size_t)ours[0], keep = (size_t)(t->full_shape[0] < ours[0] ? t->full_shape[0] : ours[0]);
    memcpy(scratch, full, keep * row * sizeof(float));
    memset(scratch + keep * row, 0, (n - keep * row) * sizeof(float));
    full = scratch;
  }
  if (p->tp_split_dim < 0 || l->tp_size == 1) {
    memcpy(dst, full, p->numel * sizeof(float));
    return;
  }
  zt_ckpt_slice_copy(dst, full, p->ndim, ours, p->tp_split_dim, (int64_t)l->tp_rank * p->shape[p->tp_split_dim],
                     p->shape[p->tp_split_dim], 0, p->tp_parts);
}

/* What one rank found under its --load (gathered from every rank before anything is decided). */
typedef struct {
  int32_t status; /* zt_ckpt_discover's: 1 found, 0 nothing to load, -1 unusable tracker, -2 no tag directory */
  char tag[256];
  char load[510];
  char err[770];
} discovery;

/* Every rank looks for its checkpoint, then all agree before any rank acts on it: with per-rank --load paths
 * (node-local disks) a rank that finds another tag, or none, would otherwise wait forever in the load's
 * collectives while the others load. Any unusable tracker file or disagreement ends the job on every rank, naming
 * the rank and the path. Returns the tag (in tag) or 0 when no rank has a checkpoint. */
static int discover_everywhere(const zt_args *a, char *tag, size_t n) {
  discovery me;
  memset(&me, 0, sizeof me);
  /* --universal-checkpoint (Megatron-DeepSpeed sets the ds_config's checkpoint.load_universal, and DeepSpeed then
   * loads the tag named by latest_universal instead of latest): our checkpoints load into any layout as they are,
   * so latest_universal is followed when it names one of them, and latest is read otherwise */
  int universal = 0;
  if (a->load_universal && !(a->load_tag && *a->load_tag)) {
    universal = zt_ckpt_universal_tag(a->load, me.tag, sizeof me.tag, me.err, sizeof me.err);
    if (universal < 0) me.status = -1;
  }
  if (universal > 0) {
    char tag_given[sizeof me.tag];
    snprintf(tag_given, sizeof tag_given, "%s", me.tag);
    me.status = zt_ckpt_discover(a->load, tag_given, me.tag, sizeof me.tag, me.err, sizeof me.err);
  } else if (universal == 0) {
    me.status = zt_ckpt_discover(a->load, a->load_tag, me.tag, sizeof me.tag, me.err, sizeof me.err);
  }
  snprintf(me.load, sizeof me.load, "%s", a->load);
  const int W = zt_world_size();
  discovery *all = zt_malloc((size_t)W * sizeof me, "checkpoint discovery");
  if (W > 1) zt_allgather(zt_comm_world(), ZT_DTYPE_BF16, &me, sizeof me / 2, all); /* bytes, as 2-byte units */
  else all[0] = me;
  for (int r = 0; r < W; r++)
    if (all[r].status < 0) {
      const char *why = all[r].status == -1 ? "; refusing to start from random over the checkpoints there (fix or "
                                              "remove it: only a missing directory or tracker file starts a new run)"
                                            : "";
      if (W == 1) zt_fatal("checkpoint", "%s%s", all[r].err, why);
      zt_fatal("checkpoint", "rank %d, --load %s: %s%s", r, all[r].load, all[r].err, why);
    }
  for (int r = 1; r < W; r++)
    if (all[r].status != all[0].status || strcmp(all[r].tag, all[0].tag) != 0) {
      char what0[300], what1[300];
      snprintf(what0, sizeof what0, all[0].status ? "checkpoint %s" : "no checkpoint%s", all[0].tag);
      snprintf(what1, sizeof what1, all[r].status ? "checkpoint %s" : "no checkpoint%s", all[r].tag);
      zt_fatal("checkpoint", "the ranks disagree on the checkpoint to load: rank 0 finds %s in --load %s, rank %d "
               "finds %s in --load %s (every rank must see the same checkpoint)", what0, all[0].load, r, what1,
               all[r].load);
    }
  free(all);
  if (a->load_universal && me.status > 0) {
    const char *how = a->universal_checkpoint ? "--universal-checkpoint" : "checkpoint.load_universal";
    if (a->load_tag && *a->load_tag)
      zt_log("> %s: loading --load-tag %s (an explicit tag wins over %s/latest_universal)\n", how, me.tag, a->load);
    else if (universal > 0)
      zt_log("> %s: loading %s, named by %s/latest_universal\n", how, me.tag, a->load);
    else
      zt_log("> %s: no %s/latest_universal; loading %s, named by %s/latest (zerotron's checkpoints load into any "
             "TP/PP/DP/ZeRO layout as they are: no conversion needed)\n", how, a->load, me.tag, a->load);
  }
  snprintf(tag, n, "%s", me.tag);
  return me.status;
}

/* zt_ckpt_load_pretrained's: the name prefix of this model's parameters the checkpoint may lack (they keep their
 * initialization); while set, the checkpoint may also hold tensors this model has not. NULL outside that load. */
static const char *g_optional_prefix;

static int optional_param(const char *name) {
  return g_optional_prefix && strncmp(name, g_optional_prefix, strlen(g_optional_prefix)) == 0;
}

static void load_checkpoint(zt_train_state *st) {
  const zt_args *a = st->args;
  const layout l = rank_layout(st);
  char tag[256];
  if (!discover_everywhere(a, tag, sizeof tag)) {
    zt_check(!a->exit_on_missing_checkpoint, "checkpoint", "--exit-on-missing-checkpoint: no checkpoint in --load "
             "%s (no %s/latest)", a->load, a->load);
    zt_check(a->perform_initialization, "checkpoint", "--no-initialization: no checkpoint in --load %s (no "
             "%s/latest) to fill the weights it left uninitialized (Megatron-DeepSpeed would train torch.empty's "
             "memory); drop --no-initialization to start from random", a->load, a->load);
    zt_log("WARNING: could not find the metadata file %s/latest \n", a->load);
    zt_log("    will not load any checkpoints and will start from random\n");
    return;
  }
  /* every file checked against the manifest first: by rank 0 (a failure there ends the whole job); the other
   * ranks, which read the same files, then check the listing and sizes only */
  zt_ckpt_reader r;
  if (zt_rank() == 0) zt_ckpt_open(&r, a->load, tag);
  zt_barrier(zt_comm_world());
  if (zt_rank() != 0) zt_ckpt_open_ex(&r, a->load, tag, 0);
  zt_log(" loading checkpoint from %s at iteration %lld\n", a->load, (long long)r.iteration);
  const zt_param_table *t = st->model->table;
  const int load_optim = !a->finetune && !a->no_load_optim, load_rng = !a->finetune && !a->no_load_rng;

  /* 1. the model must match tensor for tensor */
  int n_missing = 0;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    const int k = find_tensor(&r, p->name);
    if (k < 0 && optional_param(p->name)) {
      n_missing++;
      continue;
    }
    zt_check(k >= 0, "checkpoint", "%s: parameter %s of this model is not in the checkpoint (a different "
             "architecture?)", r.dir, p->name);
    const zt_ckpt_tensor *ct = &r.tensors[k];
    int same = ct->ndim == p->ndim;
    char want[96] = "", got[96] = "";
    for (int d = 0; d < p->ndim; d++) {
      const int64_t full = p->shape[d] * (d == p->tp_split_dim ? l.tp_size : 1);
      const int repad = d == 0 && vocab_rows(p) && r.vocab_size == a->vocab_size &&
                        ct->full_shape[0] == r.padded_vocab_size && full == a->padded_vocab_size;
      same = same && d < ct->ndim && (ct->full_shape[d] == full || repad);
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "", (long long)full);
    }
    for (int d = 0; d < ct->ndim; d++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)ct->full_shape[d]);
    zt_check(same, "checkpoint", "%s: %s has shape [%s] in the checkpoint, [%s] in this model (--num-layers, "
             "--hidden-size, --seq-length/--max-position-embeddings or the vocabulary differ; "
             "--use-checkpoint-args takes the saved shape)", r.dir, p->name, got, want);
    /* (the blocks only tell how a split tensor is sliced: an expert's dense_h_to_4h is whole in one checkpoint and
     * split with --enable-expert-tensor-parallelism in another, the same full tensor) */
    zt_check(ct->tp_parts == p->tp_parts || ct->tp_split_dim < 0 || p->tp_split_dim < 0, "checkpoint", "%s: %s "
             "holds %d blocks in the checkpoint, %d in this model (--swiglu differs)", r.dir, p->name, ct->tp_parts,
             p->tp_parts);
  }
  /* flags without parameters of their own must agree where the same weights would compute another model: the
   * rotary embedding's, the zero-centred LayerNorm weights' and the squared ReLU's (a checkpoint without the key
   * predates it: skipped) */
  static const struct { const char *key, *flags; } same_keys[] = {
    {"use_rotary_position_embeddings", "the rotary embedding flags must match: --use-rotary-position-embeddings, "
     "--rotary-position-embeddings-theta, --rotary-percent"},
    {"rope_theta", NULL}, {"rotary_percent", NULL},
    {"apply_layernorm_1p", "--apply-layernorm-1p must match: its LayerNorm weights are stored as weight - 1"},
    {"squared_relu", "--squared-relu must match: the MLP's activation"}};
  char *args_text = zt_args_summary(a);
  for (size_t i = 0; i < sizeof same_keys / sizeof same_keys[0]; i++) {
    char saved[64] = "", ours[64] = "";
    if (!zt_ckpt_arg(r.args_text, same_keys[i].key, saved, sizeof saved)) continue;
    zt_args_summary_value(args_text, same_keys[i].key, ours, sizeof ours);
    zt_check(strcmp(saved, ours) == 0, "checkpoint", "%s: saved with %s %s, this run has %s (%s)", r.dir,
             same_keys[i].key, saved, ours, same_keys[i].flags ? same_keys[i].flags : same_keys[0].flags);
  }
  free(args_text);
  /* nothing of the checkpoint may be left over: the same layers, and without pipeline stages the same tensors
   * (the last stage's embedding copy aside) */
  char saved_layers[32] = "";
  zt_ckpt_arg(r.args_text, "num_layers", saved_layers, sizeof saved_layers);
  zt_check(atoi(saved_layers) == a->num_layers, "checkpoint", "%s: saved with --num-layers %s, this model has %d "
           "(--use-checkpoint-args takes the saved shape)", r.dir, saved_layers, a->num_layers);
  if (l.pp_size == 1 && !g_optional_prefix) {
    int extra = zt_ckpt_find(&r, ZT_HEAD_COPY) >= 0 && zt_param_table_find(t, ZT_HEAD_COPY) < 0;
    for (int i = 0; l.local_experts && i < r.n_tensors; i++) /* the other expert-parallel ranks' experts */
      extra += strstr(r.tensors[i].name, ".deepspeed_moe.experts.deepspeed_experts.") != NULL &&
               zt_param_table_find(t, r.tensors[i].name) < 0;
    zt_check(r.n_tensors - extra == t->count, "checkpoint", "%s: the checkpoint holds %d tensors%s, this model %d",
             r.dir, r.n_tensors - extra, l.local_experts ? " for this rank's experts" : "", t->count);
  }
  if (load_optim) {
    zt_check(r.has_optim, "checkpoint", "Unable to load optimizer from checkpoint %s. Specify --no-load-optim or "
             "--finetune to prevent attempting to load the optimizer state, exiting ...", r.dir);
    zt_check(strcmp(r.optimizer, optimizer_name(&st->opt)) == 0, "checkpoint", "%s: the optimizer states are %s's, "
             "this run uses %s (use --no-load-optim or --finetune to start the optimizer afresh)", r.dir, r.optimizer,
             optimizer_name(&st->opt));
  }
  uint64_t saved_seed = 0;
  if (load_rng) {
    const zt_h5 *f = &r.model[0];
    zt_check(zt_h5_exists(f->id, "rng_state"), "checkpoint", "Unable to load rng state from checkpoint %s. Specify "
             "--no-load-rng or --finetune to prevent attempting to load the rng state, exiting ...", r.dir);
    hid_t g = zt_h5_group_open(f, f->id, "rng_state");
    saved_seed = (uint64_t)zt_h5_get_i64(f, g, "/rng_state", "seed");
    H5Gclose(g);
    zt_check(saved_seed == a->seed, "checkpoint", "%s: saved with --seed %llu, this run has --seed %llu: dropout and "
             "data order are keyed by the seed, so the run would not continue the saved one; pass --seed %llu, or "
             "--no-load-rng to continue with the new seed", r.dir, (unsigned long long)saved_seed,
             (unsigned long long)a->seed, (unsigned long long)saved_seed);
  }
  int64_t last_batch = -1;
  zt_lr_schedule sched = st->sched;
  double wd = st->opt.cfg.weight_decay;
  const int load_sched = load_optim && !a->no_load_lr_state;
  if (load_sched) load_scheduler(st, &r, &sched, &last_batch, &wd);
  zt_loss_scaler scaler = st->scaler;
  if (load_optim) load_scaler(&r, &scaler);
  int64_t opt_step = 0;
  if (load_optim) opt_step = zt_h5_get_i64(&r.optim[0], r.optim[0].id, "/", "step");

  /* 2. stage every tensor (reads verify each dataset's crc32c), then commit */
  const size_t N = t->numel;
  const int nst = !load_optim ? 0 : st->opt.cfg.kind == ZT_OPT_SGD ? 2 : 3;
  float *stage = zt_calloc(N * (1 + (size_t)nst) + 1, sizeof(float), "checkpoint staging");
  size_t maxn = 1;
  for (int i = 0; i < r.n_tensors; i++)
    if (r.tensors[i].numel > maxn) maxn = r.tensors[i].numel;
  for (int i = 0; i < t->count; i++)
    if (t->params[i].numel * (size_t)l.tp_size > maxn) maxn = t->params[i].numel * (size_t)l.tp_size;
  float *full = zt_malloc(2 * maxn * sizeof(float), "checkpoint tensor"), *scratch = full + maxn;
  static const char *const adam_states[3] = {"fp32", "exp_avg", "exp_avg_sq"};
  static const char *const sgd_states[2] = {"fp32", "momentum_buffer"};
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    const int k = find_tensor(&r, p->name);
    if (k < 0) { /* an optional parameter: its initialization (the draws the model started from) */
      st->model->ops->init_range(st->model, a->seed, p->offset, p->offset + p->numel, st->half_dtype);
      zt_model_get_params(st->model, stage + p->offset, p->offset, p->offset + p->numel);
      continue;
    }
    zt_ckpt_read_weights(&r, k, full);
    take_slice(p, &l, full, &r.tensors[k], scratch, stage + p->offset);
    for (int s = 0; s < nst; s++) {
      zt_ckpt_read_state(&r, k, st->opt.cfg.kind == ZT_OPT_SGD ? sgd_states[s] : adam_states[s], full);
      take_slice(p, &l, full, &r.tensors[k], scratch, stage + (size_t)(1 + s) * N + p->offset);
    }
  }
  free(full);

  /* 3. commit (the optimizer's arrays and the masters hold this rank's partition [part_lo, part_hi): all of it
   * without ZeRO) */
  const zt_backend *be = st->model->be;
  const size_t lo = st->part_lo, len = st->part_hi - st->part_lo;
  /* the weights as the run holds them: values of half_dtype (in fp32 slots on the CPU) */
  if (st->half_dtype != ZT_DTYPE_FP32) zt_round_f32(stage, stage, N, st->half_dtype);
  zt_model_set_params(st->model, stage, 0, N, ZT_DTYPE_FP32);
  /* masters: the saved fp32 partition, or (optimizer not loaded) refreshed from the weights as DeepSpeed does */
  const size_t xlo = st->xpart_lo, xlen = st->xpart_hi - st->xpart_lo, xat = st->xpart_at; /* the experts' */
  if (st->master) be->from_host(st->master, (load_optim ? stage + N : stage) + lo, len * sizeof(float));
  if (st->master && xlen) be->from_host(st->master + xat, (load_optim ? stage + N : stage) + xlo, xlen * sizeof(float));
  if (st->swap) { /* offload_optimizer nvme: the partition's state goes into the swap files */
    const float *mst = st->half_dtype != ZT_DTYPE_FP32 ? (load_optim ? stage + N : stage) + lo : NULL;
    zt_opt_swapper_write_all(st->swap, load_optim ? stage + 2 * N + lo : NULL,
                             load_optim && nst == 3 ? stage + 3 * N + lo : NULL, mst);
  }
  if (load_optim) {
    /* stage: [weights | fp32 | exp_avg or momentum_buffer | exp_avg_sq] */
    if (!st->swap) {
      be->from_host(st->opt.m, stage + 2 * N + lo, len * sizeof(float));
      if (nst == 3) be->from_host(st->opt.v, stage + 3 * N + lo, len * sizeof(float));
      if (xlen) be->from_host(st->opt.m + xat, stage + 2 * N + xlo, xlen * sizeof(float));
      if (xlen && nst == 3) be->from_host(st->opt.v + xat, stage + 3 * N + xlo, xlen * sizeof(float));
    }
    st->opt.step = opt_step;
    if (load_sched && st->use_ds_sched) {
      zt_ds_sched_restore(&st->ds_sched, last_batch);
    } else if (load_sched) {
      st->sched = sched;
      st->opt.cfg.weight_decay = (float)wd;
    }
    st->scaler = scaler;
    st->skipped_iters = r.skipped_steps;
  }
  free(stage);
  if (st->zero_stage == 3) zt_zero3_reset(&st->zero3); /* keep the partition (offloaded pieces to NVMe) and the
                                                         persistent parameters */
  if (!a->finetune) {
    /* --reset-iteration (Megatron-DeepSpeed's load_checkpoint): iteration 0, and neither the consumed samples nor
     * the tokens restored; the optimizer, its scheduler and the rng are loaded as without it */
    st->iteration = a->reset_iteration ? 0 : r.iteration;
    st->consumed_samples = a->reset_iteration ? 0 : r.consumed_train_samples;
    st->consumed_valid_samples = a->reset_iteration ? 0 : r.consumed_valid_samples;
    st->consumed_tokens = a->reset_iteration ? 0 : r.tokens;
    /* random-LTD's count continues; a checkpoint without one starts it at 0, as DeepSpeed does without the key */
    if (st->random_ltd_layer_tokens >= 0) st->random_ltd_layer_tokens = r.random_ltd_layer_tokens > 0 ?
                                                                        r.random_ltd_layer_tokens : 0;
    /* the data sampler continues from the checkpoint's step; a checkpoint without one starts it afresh (DeepSpeed
     * loads checkpoint['data_sampler'] only when it is there); the engine replays the steps */
    if (st->data_sampler_step >= 0) {
      st->data_sampler_step = r.data_sampler_step > 0 ? r.data_sampler_step : 0;
      st->data_sampler_digest = r.data_sampler_step > 0 ? r.data_sampler_digest : 0;
    }
  }
  const int64_t it = r.iteration;
  zt_ckpt_close(&r);
  if (n_missing) /* Megatron's Classification.load_state_dict */
    zt_log("***WARNING*** could not find %s in the checkpoint, initializing to random\n", g_optional_prefix);
  if (a->finetune) zt_log(" > --finetune: iteration, consumed samples, optimizer and rng start afresh\n");
  else if (a->reset_iteration)
    zt_log(" > --reset-iteration: the checkpoint's iteration %lld, consumed samples and tokens reset to 0\n",
           (long long)it);
  zt_log("  successfully loaded checkpoint from %s at iteration %lld\n", a->load,
         (long long)(a->finetune || a->reset_iteration ? 0 : it));
}

void zt_ckpt_start(zt_train_state *st) {
  const zt_args *a = st->args;
  g_start_time = zt_now();
  if (a->exit_signal_handler) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
  }
  if (a->load) load_checkpoint(st);
}

void zt_ckpt_load_pretrained(zt_train_state *st, const char *dir, const char *optional_prefix) {
  zt_args a = *st->args;
  const zt_args *saved = st->args;
  a.load = dir;
  a.load_tag = NULL;
  a.finetune = 1, a.no_load_optim = 1, a.no_load_rng = 1, a.exit_on_missing_checkpoint = 1;
  a.load_universal = 0;
  st->args = &a;
  g_optional_prefix = optional_prefix;
  load_checkpoint(st);
  g_optional_prefix = NULL;
  st->args = saved;
}

/* Whether any rank says so (Megatron all-reduces these decisions). */
static int any_rank(int flag) {
  double v = flag ? 1.0 : 0.0;
  if (zt_world_size() > 1) zt_allreduce_max_f64(zt_comm_world(), &v, 1);
  return v > 0;
}

int zt_ckpt_kill_switch(const zt_args *a) {
  return a->kill_switch_file && any_rank(access(a->kill_switch_file, F_OK) == 0);
}

int zt_ckpt_after_step(zt_train_state *st) {
  const zt_args *a = st->args;
  const int64_t it = st->iteration;
  int saved = 0;
  if (a->exit_signal_handler && any_rank(g_sigterm)) {
    if (a->save) zt_ckpt_save(st);
    print_datetime("exiting program after receiving SIGTERM.");
    return 1;
  }
  if (a->save && a->save_interval > 0 && it % a->save_interval == 0) {
    zt_ckpt_save(st);
    saved = 1;
  }
  if (a->exit_duration_in_mins > 0) {
    const double minutes = (zt_now() - g_start_time) / 60.0;
    if (any_rank(minutes > a->exit_duration_in_mins)) {
      if (a->save && !saved) zt_ckpt_save(st);
      char m[40], line[96];
      zt_py_float(m, sizeof m, minutes, 0);
      snprintf(line, sizeof line, "exiting program after %s minutes", m);
      print_datetime(line);
      return 1;
    }
  }
  if (a->exit_interval > 0 && it % a->exit_interval == 0) {
    if (a->save && !saved) zt_ckpt_save(st);
    zt_barrier(zt_comm_world());
    char line[96];
    snprintf(line, sizeof line, "exiting program at iteration %lld", (long long)it);
    print_datetime(line);
    return 1;
  }
  if (zt_ckpt_kill_switch(a)) { /* Megatron-DeepSpeed's found_kill_switch, after the exit interval */
    if (a->save && !saved) zt_ckpt_save(st);
    zt_barrier(zt_comm_world());
    char line[4200];
    snprintf(line, sizeof line, "Detected kill switch at %s, iteration=%lld. Exiting", a->kill_switch_file,
             (long long)it);
    print_datetime(line);
    return 1;
  }
  return 0;
}

void zt_ckpt_end_of_training(zt_train_state *st) {
  if (st->args->save && st->iteration != 0 && g_saved_iteration != st->iteration) zt_ckpt_save(st);
}
