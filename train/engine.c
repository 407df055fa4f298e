/* Megatron's pretrain loop for the single-process CPU path. */
#include "train/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"
#include "runtime/zero/estimate.h"
#include "runtime/comm/comms_logger.h"
#include "runtime/parallel/parallel_state.h"
#include "runtime/base/timer.h"
#include "runtime/profile/throughput.h"
#include "checkpoints/checkpoint.h"
#include "runtime/ops/cuda/cuda_device.h"
#include "train/pipeline.h"

_Static_assert((int)ZT_LR_DECAY_LINEAR == (int)ZT_DECAY_LINEAR && (int)ZT_LR_DECAY_COSINE == (int)ZT_DECAY_COSINE &&
                   (int)ZT_LR_DECAY_CONSTANT == (int)ZT_DECAY_CONSTANT && (int)ZT_LR_DECAY_INVSQRT == (int)ZT_DECAY_INVSQRT,
               "args and schedule decay styles must match");

zt_tokenizer *zt_engine_tokenizer(zt_args *a) {
  zt_tokenizer *tok = NULL;
  if (!a->mock_data) {
    const char *name = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type);
    zt_log("> building %s tokenizer ...\n", name);
    zt_tokenizer_spec spec = {.kind = (zt_tokenizer_kind)a->tokenizer_type, .vocab_file = a->vocab_file,
                              .merge_file = a->merge_file, .tokenizer_model = a->tokenizer_model,
                              .vocab_size = a->vocab_size, .vocab_extra_ids = a->vocab_extra_ids};
    tok = zt_tokenizer_create(&spec);
    zt_args_set_vocab_size(a, zt_tokenizer_vocab_size(tok), name);
  }
  zt_log(" > padded vocab (size: %d) with %d dummy tokens (new size: %d)\n", a->vocab_size,
         a->padded_vocab_size - a->vocab_size, a->padded_vocab_size);
  return tok;
}

/* Megatron's train_val_test_num_samples and the datasets behind them. */
static void build_data(zt_engine *e, const zt_tokenizer *tok) {
  const zt_args *a = e->args;
  e->eod = a->vocab_size - 1; /* the mock stream's separator */
  if (a->mock_data) {
    for (int s = 0; s < 3; s++)
      e->data[s] = (zt_mock_data){.vocab_size = a->vocab_size, .seq_length = a->seq_length, .seed = a->seed,
                                  .split_id = (uint64_t)s};
    return;
  }
  e->eod = zt_tokenizer_eod(tok);
  zt_check(e->eod >= 0 || !(a->reset_position_ids || a->reset_attention_mask || a->eod_mask_loss),
           "inconsistent arguments", "--reset-position-ids/--reset-attention-mask/--eod-mask-loss need an "
           "end-of-document token, and the %s tokenizer has none",
           zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type));
  const int64_t gbs = a->global_batch_size;
  zt_gpt_data_config c = {
      .data_path_n = a->data_path.n, .data_path = a->data_path.v,
      .split_path_n = {a->train_data_path.n, a->valid_data_path.n, a->test_data_path.n},
      .split_path = {a->train_data_path.v, a->valid_data_path.v, a->test_data_path.v},
      .split = a->split, .cache_path = a->data_cache_path, .seq_length = a->seq_length, .seed = a->seed,
      .train_exact_num_epochs = a->train_data_exact_num_epochs > 0 ? a->train_data_exact_num_epochs : 0,
      .num_samples = {a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs,
                      (a->train_iters / a->eval_interval + 1) * a->eval_iters * gbs, (int64_t)a->eval_iters * gbs},
      .mmap_warmup = a->mmap_warmup, .vocab_size = a->vocab_size,
      .tokenizer_name = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type)};
  zt_log("> building train, validation, and test datasets ...\n");
  zt_gpt_data_build(&e->gdata, &c);
  e->use_gdata = 1;
  if (a->eval_iters > 0)
    for (int s = 1; s < 3; s++)
      if (!zt_gpt_data_has(&e->gdata, s))
        zt_log(" > no %s documents (--split '%s'): %s evaluation is skipped\n", s == 1 ? "validation" : "test",
               a->split, s == 1 ? "validation" : "test");
  zt_log("> finished creating GPT datasets ...\n");
}

/* ---- --deepspeed ----------------------------------------------------------------------------- */

zt_ds_config *zt_engine_deepspeed_setup(zt_args *a) {
  if (!a->deepspeed) return NULL;
  zt_ds_config *c = zt_malloc(sizeof(*c), "ds_config");
  zt_ds_config_load(c, a->deepspeed_config);
  zt_ds_megatron m;
  zt_ds_megatron_from_args(&m, a);
  /* the schedule may be longer than the run (e.g. a range test): --train-iters only fills "auto" */
  m.train_iters.explicit_ = false;
  zt_ds_config_reconcile(c, &m);
  zt_ds_config_batch(c, a->data_parallel_size);
  /* fp16 / bf16: the config governs, "auto" takes the flag, an explicit flag the config disables is refused */
  const int fp16 = c->fp16_auto ? a->fp16 : c->fp16_enabled, bf16 = c->bf16_auto ? a->bf16 : c->bf16_enabled;
  zt_check(!(fp16 && bf16), "ds_config", "%s: bfloat16 and fp16 modes cannot be simultaneously enabled (--%s "
           "and the %s block)", c->path, a->fp16 ? "fp16" : "bf16", a->fp16 ? "bf16" : "fp16");
  zt_check(!(a->fp16 && !fp16), "inconsistent arguments", "--fp16 contradicts fp16.enabled false in %s", c->path);
  zt_check(!(a->bf16 && !bf16), "inconsistent arguments", "--bf16 contradicts bf16.enabled false in %s", c->path);
  a->fp16 = fp16;
  a->bf16 = bf16;
  /* DeepSpeed's triple drives the batch; Megatron's derived values follow it */
  a->micro_batch_size = (int)c->train_micro_batch_size_per_gpu.value;
  a->global_batch_size = (int)c->train_batch_size.value;
  a->num_microbatches = (int)c->gradient_accumulation_steps.value;
  if (a->train_samples >= 0) {
    a->train_iters = a->train_samples / a->global_batch_size;
    zt_check(a->train_iters > 0, "inconsistent arguments", "--train-samples %lld is less than one global batch "
             "(train_batch_size %d in %s)", (long long)a->train_samples, a->global_batch_size, c->path);
  }
  /* the Hugging Face integration's "auto" ZeRO sizes, from the hidden size */
  const double h = a->hidden_size;
  if (c->zero_auto_reduce_bucket) c->zero_reduce_bucket_size = h * h;
  if (c->zero_auto_prefetch) c->zero_prefetch_bucket_size = floor(0.9 * h * h);
  if (c->zero_auto_persistence) c->zero_param_persistence_threshold = 10 * h;
  if (c->zero_auto_reduce_bucket || c->zero_auto_prefetch || c->zero_auto_persistence)
    zt_log("> ds_config \"auto\" ZeRO sizes from --hidden-size %d: reduce_bucket_size %.0f, "
           "stage3_prefetch_bucket_size %.0f, stage3_param_persistence_threshold %.0f\n", a->hidden_size,
           c->zero_reduce_bucket_size, c->zero_prefetch_bucket_size, c->zero_param_persistence_threshold);
  zt_ds_config_print(c);
  return c;
}

/* The ds_config's optimizer block (adam, adamw, lamb) over Megatron's --optimizer. */
static void ds_optimizer(const zt_ds_config *ds, zt_opt_config *oc) {
  if (strcmp(ds->optimizer_type, "lamb") == 0) {
    zt_opt_config_lamb_defaults(oc);
    oc->max_coeff = (float)ds->max_coeff.value;
    oc->min_coeff = (float)ds->min_coeff.value;
    oc->bias_correction = ds->bias_correction;
  } else {
    oc->kind = ZT_OPT_ADAM;
    oc->adam_w_mode = strcmp(ds->optimizer_type, "adamw") == 0 ? 1 : ds->adam_w_mode;
  }
  oc->beta1 = (float)ds->beta1.value;
  oc->beta2 = (float)ds->beta2.value;
  oc->eps = (float)ds->eps.value;
  oc->weight_decay = (float)ds->weight_decay.value;
}

/* The ds_config's scheduler block: DeepSpeed's parameter names, only the keys the file gives. */
static void ds_scheduler(zt_engine *e, const zt_ds_config *ds, double base_lr) {
  const int kind = zt_ds_sched_kind_from_name(ds->scheduler_type);
  zt_check(kind >= 0, "ds_config", "%s: scheduler type \"%s\" is not one of DeepSpeed's", ds->path,
           ds->scheduler_type);
  zt_ds_sched_params p;
  zt_ds_sched_defaults((zt_ds_sched_kind)kind, &p);
#define TAKE(f) if (ds->sched.f.given) p.f = ds->sched.f.value
  TAKE(lr_range_test_min_lr); TAKE(lr_range_test_step_size); TAKE(lr_range_test_step_rate);
  TAKE(cycle_min_lr); TAKE(cycle_max_lr); TAKE(decay_lr_rate); TAKE(cycle_first_step_size);
  TAKE(cycle_second_step_size); TAKE(decay_step_size); TAKE(cycle_min_mom); TAKE(cycle_max_mom);
  TAKE(decay_mom_rate); TAKE(warmup_min_lr); TAKE(warmup_max_lr); TAKE(warmup_num_steps); TAKE(total_num_steps);
  TAKE(warmup_min_ratio); TAKE(cos_min_ratio);
#undef TAKE
  if (ds->sched.cycle_first_stair_count.given) p.cycle_first_stair_count = (int)ds->sched.cycle_first_stair_count.value;
  if (ds->sched.cycle_second_stair_count.given)
    p.cycle_second_stair_count = (int)ds->sched.cycle_second_stair_count.value;
  p.lr_range_test_staircase = ds->sched.lr_range_test_staircase;
  p.cycle_momentum = ds->sched.cycle_momentum;
  if (ds->sched.warmup_type[0]) snprintf(p.warmup_type, sizeof p.warmup_type, "%s", ds->sched.warmup_type);
  zt_ds_sched_init(&e->ds_sched, (zt_ds_sched_kind)kind, &p, base_lr);
  if (e->opt.cfg.kind == ZT_OPT_SGD) zt_ds_sched_disable_momentum(&e->ds_sched, "SGD");
  e->use_ds_sched = 1;
  zt_log("> DeepSpeed scheduler %s from %s replaces Megatron's learning-rate schedule\n", ds->scheduler_type,
         ds->path);
}

static void ds_engine_init(zt_engine *e, const zt_ds_config *ds) {
  const zt_args *a = e->args;
  e->clip_grad = (float)ds->gradient_clipping.value;
  if (!ds->gradient_clipping.given)
    zt_log("> gradient_clipping is not in %s: DeepSpeed's default 0.0, no clipping (Megatron's --clip-grad is "
           "not used with --deepspeed)\n", ds->path);
  if (ds->has_scheduler) ds_scheduler(e, ds, ds->has_optimizer ? ds->lr.value : a->lr);
  zt_monitor_config mc = {.csv_enabled = ds->csv_monitor_enabled, .csv_output_path = ds->csv_monitor_output_path,
                          .csv_job_name = ds->csv_monitor_job_name, .tb_enabled = ds->tensorboard_enabled,
                          .tb_output_path = ds->tensorboard_output_path, .tb_job_name = ds->tensorboard_job_name};
  if (ds->csv_monitor_enabled || ds->tensorboard_enabled) e->monitor = zt_monitor_open(&mc);
  /* timers.throughput.enabled false silences DeepSpeed's throughput lines; "synchronized" is a device
   * synchronization, which the CPU does not need */
  zt_ds_throughput_init(&e->tput, a->global_batch_size,
                        ds->steps_per_print.given && ds->timers_throughput_enabled ? (int64_t)ds->steps_per_print.value
                                                                                    : 0);
  e->wall_clock = ds->wall_clock_breakdown || ds->flops_profiler_enabled; /* as DeepSpeed's config does */
  if (ds->comms_logger_enabled) {
    zt_comms_logger_config cc = {.enabled = true, .verbose = ds->cl_verbose, .prof_all = ds->cl_prof_all,
                                 .n_prof_ops = ds->cl_n_prof_ops};
    memcpy(cc.prof_ops, ds->cl_prof_ops, sizeof cc.prof_ops);
    zt_comms_logger_configure(&cc);
  }
  if (ds->flops_profiler_enabled) {
    zt_flops_profiler_config fc = {.recompute_fwd_factor = ds->fp_recompute_fwd_factor,
                                   .module_depth = ds->fp_module_depth, .top_modules = ds->fp_top_modules,
                                   .detailed = ds->fp_detailed, .output_file = ds->fp_output_file};
    e->fprof = zt_flops_profiler_new(&e->model, &fc);
  }
}

/* flops_profiler: the report of the profiled iteration, with that iteration's engine timings. */
static void flops_report(zt_engine *e, double fwd, double bwd, double step) {
  const zt_args *a = e->args;
  zt_flops_report_args r = {.profile_step = (int)e->iteration, .world_size = zt_world_size(),
                            .dp_size = a->data_parallel_size, .mp_size = a->tensor_model_parallel_size,
                            .micro_batch = a->micro_batch_size, .fwd_latency = fwd, .bwd_latency = bwd,
                            .step_latency = step};
  if (zt_rank() == 0) zt_flops_profiler_report(e->fprof, &r);
  zt_flops_profiler_free(e->fprof);
  e->fprof = NULL;
}

/* ---- mixed precision (docs/mixed_precision.md) ----------------------------------------------- */

static zt_dtype dtype_from_name(const char *s) {
  return !strcmp(s, "fp16") ? ZT_DTYPE_FP16 : !strcmp(s, "bf16") ? ZT_DTYPE_BF16 : ZT_DTYPE_FP32;
}

/* The half type, where gradients accumulate, the all-reduce type and the loss scaler: Megatron's
 * rules (--fp16/--bf16, --loss-scale, --initial-loss-scale, ...) or, with --deepspeed, the fp16/bf16
 * blocks as DeepSpeed's engine reads them (the optimizer DeepSpeed would wrap decides the scaler). */
static void mixed_precision_setup(zt_engine *e) {
  const zt_args *a = e->args;
  const zt_ds_config *ds = e->ds;
  e->half_dtype = a->fp16 ? ZT_DTYPE_FP16 : a->bf16 ? ZT_DTYPE_BF16 : ZT_DTYPE_FP32;
  zt_loss_scaler_init_static(&e->scaler, 1.0);
  if (!ds) {
    e->grads_half = a->fp16 && !a->accumulate_allreduce_grads_in_fp32;
    e->comm_dtype = e->grads_half ? e->half_dtype : ZT_DTYPE_FP32;
    if (a->fp16) {
      if (a->loss_scale > 0) zt_loss_scaler_init_static(&e->scaler, a->loss_scale);
      else zt_loss_scaler_init_dynamic(&e->scaler, ZT_SCALER_MEGATRON, a->initial_loss_scale, a->loss_scale_window,
                                       a->hysteresis, 0, a->min_loss_scale);
    }
    return;
  }
  const zt_dtype accum = dtype_from_name(ds->grad_accum_dtype);
  if (a->bf16) {
    zt_check(!ds->grad_accum_dtype[0] || accum == ZT_DTYPE_FP32 || ds->zero_stage > 0, "ds_config",
             "%s: Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO to use Bfloat16 "
             "gradient accumulation (data_types.grad_accum_dtype is \"%s\")", ds->path, ds->grad_accum_dtype);
    e->grads_half = ds->zero_stage > 0 && (!ds->grad_accum_dtype[0] || accum == ZT_DTYPE_BF16);
  } else if (a->fp16) {
    zt_check(!ds->grad_accum_dtype[0] || accum != ZT_DTYPE_BF16, "ds_config", "%s: data_types.grad_accum_dtype "
             "\"bf16\" with an fp16 model is not supported (use fp16 or fp32)", ds->path);
    e->grads_half = !ds->grad_accum_dtype[0] || accum == ZT_DTYPE_FP16;
  } else {
    zt_check(!ds->grad_accum_dtype[0] || accum == ZT_DTYPE_FP32, "ds_config", "%s: data_types.grad_accum_dtype "
             "\"%s\" needs fp16 or bf16 enabled", ds->path, ds->grad_accum_dtype);
  }
  /* communication_data_type: None follows the model (fp16, bf16 or fp32) */
  e->comm_dtype = ds->communication_data_type[0] ? dtype_from_name(ds->communication_data_type) : e->half_dtype;
  if (!a->fp16) return;
  if (ds->loss_scale.value > 0) {
    zt_loss_scaler_init_static(&e->scaler, ds->loss_scale.value);
    return;
  }
  const double power_scale = ldexp(1.0, (int)ds->initial_scale_power.value);
  if (ds->zero_stage == 0) { /* FP16_Optimizer: 2**initial_scale_power, no hysteresis */
    zt_loss_scaler_init_dynamic(&e->scaler, ZT_SCALER_DS_FUSED, power_scale, (int64_t)ds->loss_scale_window.value,
                                1, 0, ds->min_loss_scale.value);
  } else if (ds->dynamic_loss_args) { /* ZeRO: get_dynamic_loss_scale_args */
    zt_loss_scaler_init_dynamic(&e->scaler, ZT_SCALER_DS_DYNAMIC, power_scale, (int64_t)ds->loss_scale_window.value,
                                (int)ds->hysteresis.value, ds->consecutive_hysteresis, ds->min_loss_scale.value);
  } else { /* ZeRO with none of the five keys: DynamicLossScaler()'s own defaults */
    zt_loss_scaler_init_dynamic(&e->scaler, ZT_SCALER_DS_DYNAMIC, ldexp(1.0, 32), 1000, 1, 0, 1.0);
  }
  e->scaler.scale_is_int = 1;
}

/* The model's fp32 initialization; the weights then become half values and the masters copy them (as DeepSpeed
 * and Megatron build the fp32 masters from the already-converted half model). ZeRO-3 initializes unit by unit
 * and keeps only the resident parameters of each (DeepSpeed's zero.Init: the whole model is never resident). */
static void init_weights(zt_engine *e) {
  zt_gpt *m = &e->model;
  for (int u = 0; e->zero_stage == 3 && u < m->nunits; u++) {
    const size_t a = m->unit_off[u], b = m->unit_off[u + 1];
    zt_gpt_init_params_range(m, e->args->seed, a, b);
    if (e->half_dtype != ZT_DTYPE_FP32) zt_round_f32(m->params + a, m->params + a, b - a, e->half_dtype);
    const size_t x = e->zero3.ox[u], n = e->zero3.olen[u]; /* this rank's piece: its masters */
    if (m->master && n) memcpy(m->master + (x - e->part_lo), m->params + x, n * sizeof(float));
    zt_zero3_discard(&e->zero3, u);
  }
  if (e->zero_stage != 3) {
    zt_gpt_init_params(m, e->args->seed);
    if (e->half_dtype != ZT_DTYPE_FP32) zt_round_f32(m->params, m->params, m->table.numel, e->half_dtype);
    /* the masters of this rank's partition (all of them without ZeRO; on NVMe with optimizer offload) */
    if (m->master) memcpy(m->master, m->params + e->part_lo, (e->part_hi - e->part_lo) * sizeof(float));
  }
  if (e->half_dtype == ZT_DTYPE_FP32) return;
  e->master = e->model.master;
  char scale[40] = "1";
  if (e->half_dtype == ZT_DTYPE_FP16) zt_py_float(scale, sizeof scale, e->scaler.cur_scale, 0);
  static const char *const kinds[] = {"static", "DeepSpeed DynamicLossScaler", "DeepSpeed FP16_Optimizer",
                                      "Megatron DynamicGradScaler"};
  zt_log("> mixed precision: %s weights with fp32 master weights; gradients %s in %s; all-reduce in %s; "
         "loss scale %s (%s)\n", zt_dtype_name(e->half_dtype), e->grads_half ? "stored" : "accumulated",
         zt_dtype_name(e->grads_half ? e->half_dtype : ZT_DTYPE_FP32), zt_dtype_name(e->comm_dtype), scale,
         kinds[e->scaler.kind]);
}

/* Megatron's process groups (runtime/parallel): with tensor parallelism every rank creates the data groups then
 * the tensor groups, all of them in Megatron's order, and keeps its own; without it the data group is the world. */
static void setup_groups(zt_engine *e) {
  const zt_args *a = e->args;
  e->dp_group = zt_comm_world();
  e->dp_rank = zt_group_rank(e->dp_group);
  e->tp_group = e->pp_group = e->emb_group = NULL;
  e->tp_rank = e->pp_rank = 0;
  e->pp_size = a->pipeline_model_parallel_size;
  zt_check(e->pp_size == 1 || !(e->ds && e->ds->flops_profiler_enabled), "unsupported argument", "the flops_profiler "
           "of %s with --pipeline-model-parallel-size %d is not supported yet", e->ds ? e->ds->path : "", e->pp_size);
  if (a->tensor_model_parallel_size == 1 && e->pp_size == 1) return;
  zt_layout l;
  zt_layout_init(&l, zt_comm_size(), a->tensor_model_parallel_size, e->pp_size, 1,
                 a->virtual_pipeline_model_parallel_size > 0 ? a->virtual_pipeline_model_parallel_size : 1,
                 a->num_layers);
  int *members = zt_malloc((size_t)l.world * sizeof(int), "process groups");
  const zt_group_kind kinds[4] = {ZT_GROUP_DATA, ZT_GROUP_TENSOR, ZT_GROUP_PIPELINE, ZT_GROUP_EMBEDDING};
  for (int k = 0; k < (e->pp_size > 1 ? 4 : 2); k++) {
    int size, count = zt_layout_all_groups(&l, kinds[k], members, &size);
    for (int g = 0; g < count; g++) {
      zt_group *grp = zt_group_create(members + (size_t)g * size, size);
      if (grp && kinds[k] == ZT_GROUP_DATA) e->dp_group = grp;
      if (grp && kinds[k] == ZT_GROUP_TENSOR) e->tp_group = grp;
      if (grp && kinds[k] == ZT_GROUP_PIPELINE) e->pp_group = grp;
      if (grp && kinds[k] == ZT_GROUP_EMBEDDING) e->emb_group = grp;
    }
  }
  free(members);
  zt_coords c = zt_layout_coords(&l, zt_comm_rank());
  e->dp_rank = c.dp;
  e->tp_rank = c.tp;
  e->pp_rank = c.pp;
  zt_check(e->pp_size == 1 || (e->pp_group && zt_group_rank(e->pp_group) == c.pp), "internal error",
           "rank %d: pipeline group disagrees with the layout (stage %d)", zt_comm_rank(), c.pp);
  if (a->tensor_model_parallel_size == 1) e->tp_group = NULL; /* one rank: the model needs no group */
  zt_check((!e->tp_group || zt_group_rank(e->tp_group) == c.tp) && zt_group_rank(e->dp_group) == c.dp,
           "internal error", "rank %d: tensor/data groups disagree with the layout (tp %d, dp %d)", zt_comm_rank(),
           c.tp, c.dp);
}

/* activation_checkpointing (DeepSpeed's checkpointing.configure): the options of the recomputed layers.
 * partition_activations splits each saved layer input over the tensor-parallel ranks (models/gpt); the CPU
 * path keeps checkpoints in host memory (cpu_checkpointing), in one planned contiguous region
 * (contiguous_memory_optimization), and has no device to synchronize (synchronize_checkpoint_boundary);
 * profile prints DeepSpeed's per-layer forward/backward timer lines. */
static void activation_checkpointing_setup(zt_engine *e, zt_gpt_config *c) {
  const zt_ds_config *ds = e->ds;
  const zt_args *a = e->args;
  if (!ds) return;
  const int any = ds->ac_partition || ds->ac_cpu || ds->ac_contiguous || ds->ac_synchronize || ds->ac_profile ||
                  ds->ac_number_checkpoints >= 0;
  if (!any) return;
  zt_check(a->recompute_granularity == ZT_RECOMPUTE_FULL, "ds_config", "%s: activation_checkpointing applies to "
           "checkpointed (recomputed) layers: add --checkpoint-activations (or --recompute-granularity full)",
           ds->path);
  const int layers = (a->num_layers + a->recompute_num_layers - 1) / a->recompute_num_layers;
  zt_check(!ds->ac_contiguous || ds->ac_number_checkpoints >= layers, "ds_config", "%s: "
           "activation_checkpointing.contiguous_memory_optimization needs number_checkpoints >= %d (the checkpointed "
           "layers), got %d", ds->path, layers, ds->ac_number_checkpoints);
  zt_check(!ds->ac_partition || a->pipeline_model_parallel_size == 1, "ds_config", "%s: "
           "activation_checkpointing.partition_activations with --pipeline-model-parallel-size %d is not supported yet",
           ds->path, a->pipeline_model_parallel_size);
  c->partition_activations = ds->ac_partition;
  char nl[24] = "None";
  if (ds->ac_number_checkpoints >= 0) snprintf(nl, sizeof nl, "%d", ds->ac_number_checkpoints);
  static const char *const tf[2] = {"False", "True"};
  const char *where = "checkpointing.py:forward";
  zt_ds_logger_info(where, "Activation Checkpointing Information");
  zt_ds_logger_info(where, "----Partition Activations %s, CPU CHECKPOINTING %s", tf[ds->ac_partition], tf[ds->ac_cpu]);
  zt_ds_logger_info(where, "----contiguous Memory Checkpointing %s with %s total layers", tf[ds->ac_contiguous], nl);
  zt_ds_logger_info(where, "----Synchronization %s", tf[ds->ac_synchronize]);
  zt_ds_logger_info(where, "----Profiling time in checkpointing %s", tf[ds->ac_profile]);
  if (ds->ac_partition && a->tensor_model_parallel_size > 1)
    zt_log("> partition_activations: each tensor-parallel rank keeps 1/%d of every saved layer input%s\n",
           a->tensor_model_parallel_size, a->sequence_parallel ? " (with --sequence-parallel they are split over the "
           "sequence already)" : "");
}

/* activation_checkpointing.profile: DeepSpeed's timers.log after each checkpointed forward and backward. */
static void checkpoint_profile_line(void *ctx, const char *name, double ms) {
  (void)ctx;
  const char *names[1] = {name};
  zt_ds_timers_log(names, &ms, 1);
}

/* ZeRO stages 1-3 over the data-parallel group: this rank's partition of the flat buffers. */
static void zero_setup(zt_engine *e) {
  const size_t n = e->model.table.numel;
  e->part_lo = 0;
  e->part_hi = n;
  if (e->zero_stage == 0) return;
  const zt_ds_config *ds = e->ds;
  const zt_args *a = e->args;
  zt_check(e->zero_stage == 1 || a->pipeline_model_parallel_size == 1, "ds_config", "%s: ZeRO-2 and ZeRO-3 are "
           "incompatible with pipeline parallelism (zero_optimization.stage %d with --pipeline-model-parallel-size "
           "%d; stage 1 runs there)", ds->path, e->zero_stage, a->pipeline_model_parallel_size);
  zt_zero_init(&e->zero, e->zero_stage, e->dp_group, n, (size_t)ds->zero_reduce_bucket_size,
               (size_t)ds->zero_allgather_bucket_size, ds->zero_reduce_scatter);
  e->part_lo = e->zero.lo;
  e->part_hi = e->zero.hi;
  zt_log("> ZeRO stage %d: %zu parameters in %d partitions of %zu (optimizer state%s per rank: %.1f MiB)\n",
         e->zero_stage, n, e->zero.dp_size, e->zero.part, e->half_dtype != ZT_DTYPE_FP32 ? " and fp32 masters" : "",
         (double)e->zero.part * 4 * (e->half_dtype != ZT_DTYPE_FP32 ? 3 : 2) / (1 << 20));
  /* DeepSpeed's estimator for the same model and data-parallel size, next to this rank's plan */
  int64_t total, largest;
  zt_zero_gpt_params(a->num_layers, a->hidden_size, a->ffn_hidden_size, a->max_position_embeddings,
                     a->padded_vocab_size, a->untie_embeddings_and_output_weights, &total, &largest);
  const int opt_off = strcmp(ds->offload_optimizer_device, "none") != 0;
  const zt_memplan *p = &e->model.plan;
  if (e->zero_stage == 3) { /* the per-rank figures come with the fetch units (zero3_setup) */
    const zt_zero_mem est = zt_zero3_mem_needs(total, largest, a->data_parallel_size, 1, opt_off,
                                               strcmp(ds->offload_param_device, "none") != 0, 1, 1.5);
    zt_log("> ZeRO memory: DeepSpeed's estimate_zero3_model_states_mem_needs(%lld params, largest layer %lld, %d "
           "GPUs): %.1f MiB per GPU, %.1f MiB per CPU (fp16 model states on a GPU)\n", (long long)total,
           (long long)largest, a->data_parallel_size, (double)est.gpu_bytes / (1 << 20),
           (double)est.cpu_bytes / (1 << 20));
    return;
  }
  const zt_zero_mem est = zt_zero2_mem_needs(total, a->data_parallel_size, 1, opt_off, 1.5);
  zt_log("> ZeRO memory: DeepSpeed's estimate_zero2_model_states_mem_needs(%lld params, %d GPUs): %.1f MiB per GPU, "
         "%.1f MiB per CPU (fp16 model states on a GPU); this rank's plan (CPU path, fp32 slots): params %.1f | "
         "grads %.1f | optimizer state %.1f MiB\n", (long long)total, a->data_parallel_size,
         (double)est.gpu_bytes / (1 << 20), (double)est.cpu_bytes / (1 << 20),
         (double)p->bytes[ZT_MEM_PARAMS] / (1 << 20), (double)p->bytes[ZT_MEM_GRADS] / (1 << 20),
         (double)p->bytes[ZT_MEM_OPTIM] / (1 << 20));
}

/* The ds_config's aio block as the handle's configuration, checked. */
static zt_aio_config ds_aio_config(const zt_ds_config *ds) {
  zt_aio_config ac;
  zt_aio_config_defaults(&ac);
  ac.block_size = ds->aio_block_size;
  ac.queue_depth = ds->aio_queue_depth;
  ac.intra_op_parallelism = ds->aio_intra_op_parallelism;
  ac.single_submit = ds->aio_single_submit;
  ac.overlap_events = ds->aio_overlap_events;
  char err[256];
  zt_check(zt_aio_config_check(&ac, err, sizeof err) == 0, "ds_config", "%s: aio: %s", ds->path, err);
  return ac;
}

/* The parameter swap files go at exit too (zt_fatal exits through exit()). */
static zt_zero3 *live_zero3;
static void remove_param_swap_files(void) {
  if (live_zero3 && live_zero3->ps) zt_param_swapper_free(live_zero3->ps);
  live_zero3 = NULL;
}

static void zero3_hook(void *ctx, int event, int unit) {
  zt_engine *e = ctx;
  zt_zero3 *s = &e->zero3;
  if (event == ZT_GPT_FETCH) {
    zt_zero3_fetch(s, unit);
  } else if (event == ZT_GPT_RELEASE) {
    zt_zero3_release(s, unit);
  } else { /* --sequence-parallel: the unit's layernorm and bias gradients summed over TP first */
    zt_gpt_sync_sequence_parallel_range(&e->model, e->model.unit_off[unit], e->model.unit_off[unit + 1]);
    zt_zero3_grad_ready(s, unit);
  }
}

/* Stage 3: each rank keeps its partition and the persistent parameters; the model fetches the rest unit by
 * unit. */
static void zero3_setup(zt_engine *e) {
  if (e->zero_stage != 3) return;
  const zt_ds_config *ds = e->ds;
  const int W = e->args->data_parallel_size;
  const double f = ds->gradient_predivide_factor.value;
  const char *poison = getenv("ZT_ZERO3_POISON");
  zt_gpt *m = &e->model;
  const int nvme = !strcmp(ds->offload_param_device, "nvme");
  const zt_aio_config ac = nvme ? ds_aio_config(ds) : (zt_aio_config){0};
  const zt_zero3_config zc = {
      .prefetch_bucket = (size_t)ds->zero_prefetch_bucket_size, .max_live = (size_t)ds->zero_max_live_parameters,
      .max_reuse = (size_t)ds->zero_max_reuse_distance, .persistence = (size_t)ds->zero_param_persistence_threshold,
      .model_persistence = ds->zero_model_persistence_threshold >= 9.2e18 ? (size_t)-1
                                                                          : (size_t)ds->zero_model_persistence_threshold,
      .reduce_bucket = (size_t)ds->zero_reduce_bucket_size,
      .grad_round = e->grads_half ? e->half_dtype : ZT_DTYPE_FP32,
      .fp16_check = e->half_dtype == ZT_DTYPE_FP16 && !e->grads_half, .comm_dtype = e->comm_dtype,
      .pre_scale = ds->prescale_gradients ? (float)(1.0 / W) : (float)(1.0 / f),
      .post_scale = ds->prescale_gradients ? 1.0f : (float)(f / W), .poison = poison && !strcmp(poison, "1"),
      .param_nvme_path = nvme ? ds->offload_param_nvme_path : NULL, .aio = &ac,
      .max_in_cpu = (size_t)ds->offload_param_max_in_cpu, .buffer_count = ds->offload_param_buffer_count,
      .buffer_size = (size_t)ds->offload_param_buffer_size, .pin_memory = ds->offload_param_pin_memory,
      .rank = zt_comm_rank()};
  zt_zero3_init(&e->zero3, &e->zero, &zc, &m->table, m->params, m->grads, m->nunits, m->unit_off, m->unit_off + 1);
  if (e->zero3.ps) {
    live_zero3 = &e->zero3;
    atexit(remove_param_swap_files);
  }
  m->param_hook = zero3_hook;
  m->param_hook_ctx = e;
  size_t largest = 0;
  for (int u = 0; u < m->nunits; u++)
    if (m->unit_off[u + 1] - m->unit_off[u] > largest) largest = m->unit_off[u + 1] - m->unit_off[u];
  const size_t res = zt_zero3_resident(&e->zero3);
  zt_log("> ZeRO stage 3: parameters resident per rank: %zu of %zu (partition %zu; persistent %zu elements in %d "
         "ranges of parameters under %zu elements), %.1f MiB; %d fetch units, the largest %zu elements; prefetch "
         "%zu, max live %zu, max reuse distance %zu elements%s\n", res, m->table.numel, e->part_hi - e->part_lo,
         e->zero3.persist_elems, e->zero3.npersist, zc.persistence, (double)res * 4 / (1 << 20), m->nunits, largest,
         zc.prefetch_bucket, zc.max_live, zc.max_reuse,
         zc.poison ? " (ZT_ZERO3_POISON: released parameters become NaN)" : "");
  if (!strcmp(ds->offload_param_device, "cpu"))
    zt_log("> offload_param cpu: the parameter partitions are in host memory (on the CPU path they always are)\n");
  size_t on_nvme = 0;
  for (int u = 0; nvme && u < m->nunits; u++) on_nvme += e->zero3.ps->len[u];
  if (nvme)
    zt_log("> offload_param nvme: %zu of this rank's %zu partition elements in %s (max_in_cpu %zu; %d buffers of "
           "%zu elements)\n", on_nvme, e->part_hi - e->part_lo, e->zero3.ps->dir, zc.max_in_cpu, zc.buffer_count,
           e->zero3.ps->buf_elems);
}

/* The swap files go at exit too when the run stops on an error (zt_fatal exits through exit()). */
static zt_opt_swapper *live_swapper;
static void remove_swap_files(void) {
  if (live_swapper) zt_opt_swapper_free(live_swapper);
  live_swapper = NULL;
}

/* offload_optimizer: "cpu" keeps the state where the CPU path has it already (host memory, the step on the
 * CPU); "nvme" moves the partition's state to swap files (runtime/zero/swap.h). */
static void offload_setup(zt_engine *e) {
  const zt_ds_config *ds = e->ds;
  if (!ds || !strcmp(ds->offload_optimizer_device, "none")) return;
  if (!strcmp(ds->offload_optimizer_device, "cpu")) {
    zt_log("> offload_optimizer cpu: the optimizer state and its step are in host memory (on the CPU path they "
           "always are)\n");
    return;
  }
  const int with_master = e->half_dtype != ZT_DTYPE_FP32;
  const int sets = ds->offload_optimizer_pipeline ? 2 : 1, states = with_master ? 3 : 2;
  zt_check(ds->offload_optimizer_buffer_count >= states * sets, "ds_config", "%s: "
           "zero_optimization.offload_optimizer.buffer_count %d is less than the %d swap buffers needed (%d states%s)",
           ds->path, ds->offload_optimizer_buffer_count, states * sets, states, sets > 1 ? " x 2 for pipelining" : "");
  const zt_aio_config ac = ds_aio_config(ds);
  e->swap = zt_malloc(sizeof *e->swap, "optimizer swapper");
  if (e->zero_stage == 3) zt_zero3_partition_in(&e->zero3); /* the initial masters come from the weights */
  const size_t n = e->part_hi - e->part_lo;
  zt_opt_swapper_init(e->swap, &ac, ds->offload_optimizer_nvme_path, e->zero_stage, zt_comm_rank(), e->part_lo, n,
                      (size_t)ds->zero_sub_group_size, with_master, e->model.params + e->part_lo,
                      ds->offload_optimizer_pipeline, ds->offload_optimizer_pin_memory);
  if (e->zero_stage == 3) zt_zero3_partition_out(&e->zero3, 0);
  live_swapper = e->swap;
  atexit(remove_swap_files);
  zt_log("> offload_optimizer nvme: %zu elements x %d states per rank in %s (%zu sub-groups of %zu)%s\n", n, states,
         e->swap->dir, e->swap->nsub, e->swap->sub, ds->offload_optimizer_pipeline ? ", pipelined" : "");
}

/* Whether this run trains on the GPU: a CUDA device is present and the configuration is one the GPU model runs
 * (docs/cuda.md); otherwise the CPU, with the reason. CUDA_VISIBLE_DEVICES= hides the GPU. */
static int choose_gpu(const zt_args *a, const zt_ds_config *ds) {
  if (zt_cuda_device_count() == 0) return 0;
  const char *why = NULL;
  if (zt_world_size() > 1) why = "more than one process (data, tensor and pipeline parallelism on GPUs are next)";
  else if (ds && ds->zero_stage > 0) why = "zero_optimization.stage > 0 (ZeRO on the GPU is next)";
  else if (a->optimizer == ZT_OPTIMIZER_SGD && !(ds && ds->has_optimizer)) why = "--optimizer sgd";
  else if (ds && ds->has_optimizer && !strcmp(ds->optimizer_type, "lamb")) why = "the Lamb optimizer";
  else if (ds && ds->flops_profiler_enabled) why = "the flops profiler";
  else if (ds && (ds->ac_profile || ds->ac_partition)) why = "activation_checkpointing.profile/partition_activations";
  if (why) {
    zt_log("> compute: a CUDA device is present but this run uses the CPU: the GPU path does not run %s yet\n", why);
    return 0;
  }
  char desc[256];
  zt_cuda_device_describe(0, desc, sizeof desc);
  zt_log("> compute: GPU 0 (%s)\n", desc);
  return 1;
}

void zt_engine_init(zt_engine *e, const zt_args *a, const zt_tokenizer *tok, const zt_ds_config *ds) {
  memset(e, 0, sizeof(*e));
  e->args = a;
  e->ds = ds;
  e->clip_grad = a->clip_grad;
  setup_groups(e);
  zt_pipeline_setup(e);
  zt_check(zt_group_size(e->dp_group) == a->data_parallel_size, "internal error",
           "data-parallel group of %d ranks, expected %d", zt_group_size(e->dp_group), a->data_parallel_size);
  build_data(e, tok);
  zt_gpt_config c = {
      .num_layers = a->num_layers, .hidden_size = a->hidden_size, .num_heads = a->num_attention_heads,
      .ffn_hidden_size = a->ffn_hidden_size, .max_positions = a->max_position_embeddings,
      .padded_vocab_size = a->padded_vocab_size, .ln_eps = a->layernorm_epsilon,
      .attn_dropout = a->attention_dropout, .hidden_dropout = a->hidden_dropout, .init_std = a->init_method_std,
      .untie_embeddings = a->untie_embeddings_and_output_weights,
      .recompute_full = a->recompute_granularity == ZT_RECOMPUTE_FULL,
      .micro_batch = a->micro_batch_size, .seq_length = a->seq_length,
      .tp_group = e->tp_group, .tp_size = a->tensor_model_parallel_size, .tp_rank = e->tp_rank,
      .sequence_parallel = a->sequence_parallel, .pp_size = e->pp_size, .pp_rank = e->pp_rank,
      .pp_group = e->pp_group, .vpp = e->vpp, .pp_buffers = e->pp_buffers};
  mixed_precision_setup(e);
  c.master_weights = e->half_dtype != ZT_DTYPE_FP32;
  e->zero_stage = ds ? ds->zero_stage : 0;
  c.zero_partitions = e->zero_stage > 0 ? a->data_parallel_size : 1;
  c.optim_offloaded = ds && !strcmp(ds->offload_optimizer_device, "nvme");
  activation_checkpointing_setup(e, &c);
  const int gpu = choose_gpu(a, ds);
  zt_log("building GPT model ...\n");
  zt_gpt_config host = c; /* on the GPU the host model holds the state only: its activations for one sample */
  if (gpu) host.micro_batch = 1;
  zt_gpt_build(&e->model, &host, 0);
  if (ds && ds->ac_profile) {
    e->model.ckpt_profile = checkpoint_profile_line;
    e->model.ckpt_profile_ctx = e;
  }
  zero_setup(e);
  zero3_setup(e);
  init_weights(e);
  if (e->dp_rank == 0) { /* Megatron: every rank of data-parallel rank 0 prints its own count */
    printf(" > number of parameters on (tensor, pipeline) model parallel rank (%d, %d): %zu\n", e->tp_rank,
           e->pp_rank, zt_gpt_num_params(&e->model));
    fflush(stdout);
  }

  zt_opt_config oc = {.kind = a->optimizer == ZT_OPTIMIZER_SGD ? ZT_OPT_SGD : ZT_OPT_ADAM,
                      .beta1 = a->adam_beta1, .beta2 = a->adam_beta2, .eps = a->adam_eps, .adam_w_mode = 1,
                      .momentum = a->sgd_momentum, .weight_decay = a->weight_decay};
  if (ds && ds->has_optimizer) ds_optimizer(ds, &oc);
  if (e->zero_stage > 0)
    zt_optimizer_init_range(&e->opt, &oc, &e->model.table, e->model.optim_state, e->part_lo, e->part_hi);
  else
    zt_optimizer_init(&e->opt, &oc, &e->model.table, e->model.optim_state);
  offload_setup(e);
  e->beta_cfg[0] = ds && ds->has_optimizer ? ds->beta1.value : a->adam_beta1;
  e->beta_cfg[1] = ds && ds->has_optimizer ? ds->beta2.value : a->adam_beta2;

  /* Megatron's scheduler works in samples: iteration counts are multiplied by the global batch */
  const int64_t gbs = a->global_batch_size;
  int64_t decay = a->lr_decay_samples >= 0 ? a->lr_decay_samples
                  : a->lr_decay_iters >= 0 ? a->lr_decay_iters * gbs
                  : a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs;
  int64_t warmup = a->lr_warmup_fraction >= 0 ? (int64_t)(a->lr_warmup_fraction * decay)
                   : a->lr_warmup_samples > 0 ? a->lr_warmup_samples : a->lr_warmup_iters * gbs;
  zt_check(decay > 0 && warmup <= decay, "learning-rate schedule",
           "warmup of %lld samples exceeds the decay length of %lld samples", (long long)warmup, (long long)decay);
  e->sched = (zt_lr_schedule){.max_lr = a->lr, .min_lr = a->min_lr, .warmup_steps = warmup, .decay_steps = decay,
                              .style = (zt_decay_style)a->lr_decay_style, .num_steps = 0};

  if (ds) ds_engine_init(e, ds);

  const size_t BT = (size_t)a->micro_batch_size * a->seq_length;
  e->text = zt_malloc((BT + a->micro_batch_size) * sizeof(int32_t), "batch text");
  e->tokens = zt_malloc(BT * sizeof(int32_t), "batch tokens");
  e->targets = zt_malloc(BT * sizeof(int32_t), "batch targets");
  e->loss_mask = zt_malloc(BT * sizeof(float), "loss mask");
  for (size_t i = 0; i < BT; i++) e->loss_mask[i] = 1.0f;
  if (a->reset_position_ids) e->positions = zt_malloc(BT * sizeof(int32_t), "position ids");
  if (a->reset_attention_mask) e->key_start = zt_malloc(BT * sizeof(int32_t), "attention mask starts");

  zt_flops_model fm = {.num_layers = a->num_layers, .hidden_size = a->hidden_size,
                       .num_heads = a->num_attention_heads, .ffn_hidden_size = a->ffn_hidden_size,
                       .padded_vocab_size = a->padded_vocab_size, .seq_length = a->seq_length,
                       .recompute_full = a->recompute_granularity == ZT_RECOMPUTE_FULL};
  e->flops_per_iteration = zt_iteration_flops(&fm, gbs);
  zt_ckpt_engine_start(e); /* --load (validated before any state changes), SIGTERM handler, exit clock */
  if (gpu) { /* the device model from the initialized or loaded host state */
    e->gpu = zt_gpt_cuda_build(&c, e->half_dtype);
    zt_gpt_cuda_set_params(e->gpu, e->master ? e->master : e->model.params);
    zt_gpt_cuda_set_moments(e->gpu, e->opt.m, e->opt.v);
  }
}

void zt_engine_sync_host(zt_engine *e) {
  if (!e->gpu) return;
  const size_t n = e->model.table.numel;
  zt_gpt_cuda_get_params(e->gpu, e->master ? e->master : e->model.params);
  if (e->master) zt_round_f32(e->model.params, e->master, n, e->half_dtype);
  zt_gpt_cuda_get_moments(e->gpu, e->opt.m, e->opt.v);
}

void zt_engine_free(zt_engine *e) {
  zt_gpt_cuda_free(e->gpu);
  e->gpu = NULL;
  if (e->swap) {
    zt_log("> offload_optimizer nvme: %.1f GiB read, %.1f GiB written in %.2f s of optimizer steps; swap files "
           "removed\n", e->swap->bytes_read / (1 << 30), e->swap->bytes_written / (1 << 30), e->swap->seconds);
    zt_opt_swapper_free(e->swap);
    free(e->swap);
    e->swap = NULL;
    live_swapper = NULL;
  }
  if (e->zero_stage == 3) {
    const zt_zero3 *s = &e->zero3;
    zt_log("> ZeRO stage 3: %zu parameter fetches (%zu broadcasts, %.1f MiB received by this rank), %zu gradient "
           "reduces (%.1f MiB), at most %zu parameter elements gathered at once\n", s->gathers, s->broadcasts,
           (double)s->gathered_elems * 4 / (1 << 20), s->reduces, (double)s->reduced_elems * 4 / (1 << 20),
           s->peak_live);
    zt_zero3_free(&e->zero3);
  }
  if (e->zero_stage > 0) zt_zero_free(&e->zero);
  zt_gpt_free(&e->model);
  free(e->pipe_steps);
  free(e->text);
  free(e->tokens);
  free(e->targets);
  free(e->loss_mask);
  free(e->positions);
  free(e->key_start);
  if (e->use_gdata) zt_gpt_data_free(&e->gdata);
  zt_monitor_close(e->monitor);
  if (e->fprof) zt_flops_profiler_free(e->fprof); /* the run ended before profile_step */
}

/* Loads micro batch rows from sample `first` on: tokens = text[:, :-1], targets = text[:, 1:]. */
void zt_engine_load_micro_batch(zt_engine *e, int split, uint64_t first) {
  const zt_args *a = e->args;
  const int B = a->micro_batch_size, T = a->seq_length;
  for (int b = 0; b < B; b++) {
    int32_t *row = e->text + (size_t)b * (T + 1);
    if (e->use_gdata) {
      zt_gpt_data_get(&e->gdata, split, (int64_t)(first + b), row); /* ids checked at open */
    } else {
      zt_mock_data_sample(&e->data[split], first + b, row);
    }
    memcpy(e->tokens + (size_t)b * T, row, (size_t)T * sizeof(int32_t));
    memcpy(e->targets + (size_t)b * T, row + 1, (size_t)T * sizeof(int32_t));
    if (a->eod_mask_loss || e->positions || e->key_start)
      zt_gpt_ltor_masks(e->tokens + (size_t)b * T, T, e->eod, a->eod_mask_loss, e->loss_mask + (size_t)b * T,
                        e->positions ? e->positions + (size_t)b * T : NULL,
                        e->key_start ? e->key_start + (size_t)b * T : NULL);
  }
}

void zt_engine_check_finite_loss(const zt_engine *e, float loss, int micro, const char *what) {
  if (isfinite(loss)) return;
  zt_fatal("non-finite loss", "%s is %s at iteration %lld (micro batch %d); the run stops: lower --lr or "
           "check --init-method-std", what, isnan(loss) ? "nan" : "inf", (long long)e->iteration + 1, micro);
}

/* The learning rate the next optimizer step uses. */
static double current_lr(const zt_engine *e) {
  return e->use_ds_sched ? zt_ds_sched_lr(&e->ds_sched) : zt_lr_get(&e->sched);
}

/* DeepSpeed's gradient averaging over the data-parallel group (engine.allreduce_bucket): with
 * prescale_gradients the gradients are divided by the world size before the sum; otherwise they are
 * divided by gradient_predivide_factor before it and multiplied by factor / world after it. With one
 * data-parallel rank the sum is the identity and only the scaling remains. */
static void scale_floats(float *x, float f, size_t n) {
  #pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) x[i] *= f;
}

/* The data-parallel sum in the communication type (fp16/bf16 all-reduce: operands and result rounded
 * to it, as a half-precision NCCL reduction delivers them). */
static void allreduce_grads(zt_engine *e, float *g, size_t n) {
  if (e->comm_dtype != ZT_DTYPE_FP32) zt_round_f32(g, g, n, e->comm_dtype);
  zt_allreduce_sum_f32(e->dp_group, g, n);
  if (e->comm_dtype != ZT_DTYPE_FP32) zt_round_f32(g, g, n, e->comm_dtype);
}

static void reduce_gradients(zt_engine *e) {
  const int W = e->args->data_parallel_size;
  float *g = e->model.grads;
  const size_t n = e->model.table.numel;
  if (!e->ds) { /* Megatron: divide by the data-parallel size, then sum */
    if (W > 1) {
      scale_floats(g, 1.0f / (float)W, n);
      allreduce_grads(e, g, n);
    }
    return;
  }
  const double f = e->ds->gradient_predivide_factor.value;
  if (e->ds->prescale_gradients) {
    scale_floats(g, (float)(1.0 / W), n);
    if (W > 1) allreduce_grads(e, g, n);
    return;
  }
  if (f != 1.0) scale_floats(g, (float)(1.0 / f), n);
  if (W > 1) allreduce_grads(e, g, n);
  if (f != W) scale_floats(g, (float)(f / W), n);
}

/* Megatron's average_losses_across_data_parallel_group. */
static double dp_mean(const zt_engine *e, double v) {
  const int W = e->args->data_parallel_size;
  if (W == 1) return v;
  zt_allreduce_sum_f64(e->dp_group, &v, 1);
  return v / W;
}

/* DeepSpeed's per-step output: monitor events, the step/lr/mom line and the timers. */
static void ds_after_step(zt_engine *e, double train_loss, int64_t samples_before) {
  const zt_ds_config *ds = e->ds;
  const double lr = current_lr(e);
  const double ms[5] = {1e3 * e->t_fwd, 1e3 * (e->t_bwd_inner + e->t_bwd_allreduce), 1e3 * e->t_bwd_inner,
                        1e3 * e->t_bwd_allreduce, 1e3 * e->t_step};
  if (e->monitor) {
    zt_monitor_write(e->monitor, "Train/Samples/train_loss", train_loss, samples_before);
    zt_monitor_write(e->monitor, "Train/Samples/lr", lr, e->consumed_samples);
    if (e->half_dtype == ZT_DTYPE_FP16)
      zt_monitor_write(e->monitor, "Train/Samples/loss_scale", e->scaler.cur_scale, e->consumed_samples);
    if (e->wall_clock) {
      static const char *const events[5] = {
          "Train/Samples/elapsed_time_ms_forward", "Train/Samples/elapsed_time_ms_backward",
          "Train/Samples/elapsed_time_ms_backward_inner", "Train/Samples/elapsed_time_ms_backward_allreduce",
          "Train/Samples/elapsed_time_ms_step"};
      for (int i = 0; i < 5; i++) zt_monitor_write(e->monitor, events[i], ms[i], e->consumed_samples);
    }
    zt_monitor_flush(e->monitor);
  }
  const int64_t every = ds->steps_per_print.given ? (int64_t)ds->steps_per_print.value : 0;
  const int report = every > 0 && e->iteration % every == 0;
  if (report) { /* the betas as the config gives them (or as OneCycle sets them), not as float32 */
    double mom[1][2] = {{e->beta_cfg[0], e->beta_cfg[1]}};
    if (e->use_ds_sched) zt_ds_sched_mom(&e->ds_sched, &mom[0][0], &mom[0][1]);
    zt_ds_report_progress(e->iteration, e->skipped_iters, &lr, (const double(*)[2])mom, 1);
  }
  if (e->wall_clock && (report || every == 0)) {
    static const char *const names[5] = {"fwd", "bwd", "bwd_inner", "bwd_allreduce", "step"};
    zt_ds_timers_log(names, ms, 5);
    e->t_fwd = e->t_bwd_inner = e->t_bwd_allreduce = e->t_step = 0;
  }
}

/* ZeRO: DeepSpeed's averaging (prescale_gradients: 1/W before the sum; otherwise 1/predivide before and
 * predivide/W after) into this rank's partition, in the communication type. */
static void zero_reduce_gradients(zt_engine *e) {
  const int W = e->args->data_parallel_size;
  const double f = e->ds->gradient_predivide_factor.value;
  const float pre = e->ds->prescale_gradients ? (float)(1.0 / W) : (float)(1.0 / f);
  const float post = e->ds->prescale_gradients ? 1.0f : (float)(f / W);
  float *g = e->model.grads;
  if (e->comm_dtype != ZT_DTYPE_FP32 && W > 1) zt_round_f32(g, g, e->zero.padded, e->comm_dtype);
  zt_zero_reduce_gradients(&e->zero, g, pre, post);
  if (e->comm_dtype != ZT_DTYPE_FP32 && W > 1)
    zt_round_f32(g + e->part_lo, g + e->part_lo, e->part_hi - e->part_lo, e->comm_dtype);
}

/* This rank's partition of the gradients (element part_lo first): stage 3 accumulates it apart. */
static float *partition_grads(zt_engine *e) {
  return e->zero_stage == 3 ? e->zero3.acc : e->model.grads + e->part_lo;
}

/* ZeRO: the global gradient norm from the partitions (tensor-parallel replicas counted once; with pipeline
 * stages summed over them, the last stage's copy of the tied embeddings left out). */
static double zero_grad_norm(zt_engine *e) {
  const int copy = e->pp_size > 1 ? zt_param_table_find(&e->model.table, "word_embeddings.weight") : -1;
  double s = zt_zero_partition_sumsq(&e->zero, &e->model.table, partition_grads(e), e->tp_rank == 0, copy);
  zt_allreduce_sum_f64(e->dp_group, &s, 1);
  if (e->tp_group) zt_allreduce_sum_f64(e->tp_group, &s, 1);
  if (e->pp_group) zt_allreduce_sum_f64(e->pp_group, &s, 1);
  return sqrt(s);
}

/* The loss scaler's lines, as DeepSpeed prints them (rank 0), and DeepSpeed's stop at the minimum
 * scale. Megatron's scaler prints nothing (the log line shows the scale and the skipped iterations). */
static void log_scaler_event(const zt_engine *e) {
  const zt_loss_scaler *s = &e->scaler;
  char prev[40], cur[40];
  if (s->event == ZT_SCALE_AT_MIN)
    zt_fatal("loss scale", "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run. "
             "(iteration %lld, loss scale %g = min_loss_scale)", (long long)e->iteration + 1, s->cur_scale);
  if (s->kind == ZT_SCALER_DS_DYNAMIC && s->event == ZT_SCALE_REDUCED)
    zt_ds_logger_info("loss_scaler.py:update_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
                      "scale: %lld, reducing to %lld", (long long)s->prev_scale, (long long)s->cur_scale);
  if (s->kind == ZT_SCALER_DS_DYNAMIC && s->event == ZT_SCALE_HYSTERESIS)
    zt_ds_logger_info("loss_scaler.py:update_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
                      "scale: %lld, but hysteresis is %d. Reducing hysteresis to %d", (long long)s->prev_scale,
                      s->cur_hysteresis + 1, s->cur_hysteresis);
  if (s->kind == ZT_SCALER_DS_FUSED && s->event == ZT_SCALE_REDUCED) {
    /* Python prints the initial 2**power as an int, every later (halved or doubled) value as a float */
    if (s->prev_is_int) snprintf(prev, sizeof prev, "%lld", (long long)s->prev_scale);
    else zt_py_float(prev, sizeof prev, s->prev_scale, 0);
    zt_py_float(cur, sizeof cur, s->cur_scale, 0);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "\nGrad overflow on iteration %lld",
                      (long long)s->cur_iter - 1);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "Reducing dynamic loss scale from %s to %s", prev, cur);
    zt_ds_log_dist("Overflow detected. Skipping step. Attempted loss scale: %s, reducing to %s", prev, cur);
  }
  if (s->kind == ZT_SCALER_DS_DYNAMIC && s->consecutive_hysteresis &&
      (s->event == ZT_SCALE_KEPT || s->event == ZT_SCALE_GREW))
    zt_ds_logger_info("loss_scaler.py:update_scale", "Consecutive hysteresis is enabled. Restoring hysteresis to %d",
                      s->delayed_shift);
  if (s->kind == ZT_SCALER_DS_FUSED && s->event == ZT_SCALE_GREW) {
    if (s->prev_is_int) snprintf(prev, sizeof prev, "%lld", (long long)s->prev_scale);
    else zt_py_float(prev, sizeof prev, s->prev_scale, 0);
    zt_py_float(cur, sizeof cur, s->cur_scale, 0);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "No Grad overflow for %lld iterations",
                      (long long)s->scale_window);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "Increasing dynamic loss scale from %s to %s", prev, cur);
  }
}

/* After a micro batch's backward: gradients stored in the half type are rounded to it (a value beyond its range
 * becomes infinite); an fp16 model's fp32-accumulated gradients are checked against the fp16 range. Returns 1
 * on an fp16 overflow. */
int zt_engine_half_grads_after_backward(zt_engine *e) {
  if (e->zero_stage == 3) { /* done unit by unit as the gradients are reduced (zt_zero3_grad_ready) */
    zt_zero3_flush_grads(&e->zero3);
    return 0;
  }
  const size_t n = e->model.table.numel;
  if (e->grads_half) return zt_round_f32(e->model.grads, e->model.grads, n, e->half_dtype) > 0;
  if (e->half_dtype == ZT_DTYPE_FP16) return zt_count_nonrepresentable(e->model.grads, n, ZT_DTYPE_FP16) > 0;
  return 0;
}

float zt_engine_train_step(zt_engine *e, double *grad_norm) {
  const zt_args *a = e->args;
  const int nmb = a->num_microbatches, B = a->micro_batch_size;
  double loss_sum = 0.0, it_fwd = 0.0, it_bwd = 0.0;
  /* flops_profiler: DeepSpeed profiles the iteration that starts after profile_step steps */
  const int profiling = e->fprof && e->iteration == e->ds->fp_profile_step;
  const size_t n = e->model.table.numel;
  int overflow = 0; /* fp16: some micro batch's gradient does not fit the half type */
  if (e->zero_stage == 3) zt_zero3_set_training(&e->zero3, 1);
  if (e->pp_size > 1) loss_sum = zt_pipeline_train(e, nmb, &overflow); /* the loop below runs without stages */
  for (int mb = 0; mb < nmb && e->pp_size == 1; mb++) {
    if (e->ds) zt_ds_throughput_start(&e->tput);
    /* Megatron's sampler: each step-slice of mbs x dp samples; this rank takes its mbs rows */
    uint64_t first = (uint64_t)e->consumed_samples + (uint64_t)mb * B * a->data_parallel_size +
                     (uint64_t)e->dp_rank * B;
    zt_engine_load_micro_batch(e, 0, first);
    double t0 = zt_now(); /* DeepSpeed's fwd timer: the forward pass alone, not the batch loading */
    zt_pass pass = {.B = B, .T = a->seq_length, .first_sample = first, .seed = a->seed, .training = 1,
                    .key_start = e->key_start};
    if (profiling) zt_flops_profiler_attach(e->fprof, &e->model); /* the last micro batch's times remain */
    float loss = e->gpu ? zt_gpt_cuda_forward(e->gpu, e->tokens, e->positions, e->targets, e->loss_mask, &pass)
                        : zt_gpt_forward(&e->model, e->tokens, e->positions, e->targets, e->loss_mask, &pass);
    if (profiling) zt_flops_profiler_detach(e->fprof, &e->model);
    zt_engine_check_finite_loss(e, loss, mb, "lm loss");
    double t1 = zt_now();
    const float gscale = (float)e->scaler.cur_scale / nmb; /* the loss scale is 1 without fp16 */
    if (e->gpu) { /* an fp16 overflow shows as a non-finite gradient norm */
      zt_gpt_cuda_backward(e->gpu, gscale);
    } else {
      zt_gpt_backward(&e->model, gscale);
      overflow |= zt_engine_half_grads_after_backward(e);
    }
    double t2 = zt_now();
    e->t_fwd += t1 - t0;
    e->t_bwd_inner += t2 - t1;
    it_fwd += t1 - t0;
    it_bwd += t2 - t1;
    loss_sum += loss;
    if (e->ds && mb + 1 < nmb) zt_ds_throughput_stop(&e->tput, 0);
  }
  double t3 = zt_now();
  if (e->zero_stage != 3) /* --sequence-parallel: layernorm/bias grads over TP (stage 3: per unit, zero3_hook) */
    zt_gpt_sync_sequence_parallel_grads(&e->model);
  size_t n_emb;
  float *g_emb = e->emb_group ? zt_gpt_shared_embedding_grad(&e->model, &n_emb) : NULL;
  if (g_emb) { /* tied embeddings: first + last stage, in the communication type */
    if (e->comm_dtype != ZT_DTYPE_FP32) zt_round_f32(g_emb, g_emb, n_emb, e->comm_dtype);
    zt_allreduce_sum_f32(e->emb_group, g_emb, n_emb);
    if (e->comm_dtype != ZT_DTYPE_FP32) zt_round_f32(g_emb, g_emb, n_emb, e->comm_dtype);
  }
  if (e->zero_stage == 3) overflow |= zt_zero3_take_grads(&e->zero3); /* reduced during the backward into acc */
  else if (e->zero_stage > 0) zero_reduce_gradients(e);
  else if (!e->gpu) reduce_gradients(e); /* the GPU path runs one process */
  double t4 = zt_now();
  const double scale = e->scaler.cur_scale;
  double norm = (e->gpu ? zt_gpt_cuda_grad_norm(e->gpu) : e->zero_stage > 0 ? zero_grad_norm(e)
                 : zt_gpt_grad_norm(&e->model, e->model.grads)) / scale; /* of the unscaled gradients */
  int skip = 0;
  if (e->half_dtype == ZT_DTYPE_FP16) { /* the overflow test of every data-parallel rank, then the scaler */
    double ov = overflow || !isfinite(norm);
    if (a->data_parallel_size > 1) zt_allreduce_max_f64(e->dp_group, &ov, 1);
    if (e->tp_group) zt_allreduce_max_f64(e->tp_group, &ov, 1); /* and of every tensor-parallel rank */
    if (e->pp_group) zt_allreduce_max_f64(e->pp_group, &ov, 1); /* and of every pipeline stage */
    skip = zt_loss_scaler_update(&e->scaler, ov != 0.0);
    log_scaler_event(e);
  } else if (!isfinite(norm)) {
    zt_fatal("non-finite gradient", "grad norm is %s at iteration %lld; the run stops", isnan(norm) ? "nan" : "inf",
             (long long)e->iteration + 1);
  }
  e->last_skipped = skip;
  if (skip) { /* DeepSpeed and Megatron: no update, no scheduler step; the iteration still counts */
    if (e->zero_stage == 3) zt_zero3_after_step(&e->zero3, 0);
    else if (e->gpu) zt_gpt_cuda_zero_grads(e->gpu);
    else zt_grads_zero(e->model.grads, n);
    e->skipped_iters++;
    norm = NAN;
  } else {
    /* clipping on the unscaled norm; unscaling and clipping fused into one factor (DeepSpeed's
     * unscale_and_clip_grads; Megatron's unscale-then-clip rounds the same way for power-of-two scales) */
    double clip = 1.0;
    if (e->clip_grad > 0) {
      double coeff = e->clip_grad / (norm + 1e-6);
      if (coeff < 1.0) clip = coeff;
    }
    const float factor = scale == 1.0 ? (float)clip : (float)(clip / scale);
    if (e->use_ds_sched) { /* OneCycle cycles beta1 (and holds beta2 at 0.99) */
      double b1 = e->beta_cfg[0], b2 = e->beta_cfg[1];
      if (zt_ds_sched_mom(&e->ds_sched, &b1, &b2)) {
        e->opt.cfg.beta1 = (float)b1;
        e->opt.cfg.beta2 = (float)b2;
      }
    }
    /* this rank's partition (everything without ZeRO); then the half copy of the masters, and with ZeRO the
     * all-gather of the updated partitions and the gradients of the others' partitions cleared */
    const size_t lo = e->part_lo, len = e->part_hi - e->part_lo;
    if (e->zero_stage == 3) zt_zero3_partition_in(&e->zero3); /* offload_param nvme: the pieces on NVMe */
    if (e->gpu) {
      e->opt.step++;
      zt_gpt_cuda_adam_step(e->gpu, &e->opt.cfg, current_lr(e), factor, e->opt.step);
    } else if (e->swap) { /* NVMe: sub-group by sub-group through the swap buffers */
      zt_opt_swapper_step(e->swap, &e->opt, e->model.params + lo, partition_grads(e), current_lr(e), factor,
                          e->model.params + lo, e->half_dtype);
    } else {
      float *weights = e->master ? e->master : e->model.params + lo;
      zt_optimizer_step(&e->opt, weights, partition_grads(e), current_lr(e), factor);
      if (e->master) zt_round_f32(e->model.params + lo, e->master, len, e->half_dtype);
    }
    if (e->zero_stage == 3) {
      zt_zero3_after_step(&e->zero3, 1); /* the gathered copies are stale; persistent parameters re-gathered */
    } else if (e->zero_stage > 0) {
      zt_zero_allgather_params(&e->zero, e->model.params);
      zt_grads_zero(e->model.grads, e->zero.padded);
    }
    if (e->use_ds_sched) zt_ds_sched_step(&e->ds_sched);
    else zt_lr_step(&e->sched, a->global_batch_size);
  }
  const int64_t samples_before = e->consumed_samples;
  e->iteration++;
  e->consumed_samples += a->global_batch_size;
  e->consumed_tokens += (int64_t)a->global_batch_size * a->seq_length;
  const double t5 = zt_now();
  e->t_bwd_allreduce += t4 - t3;
  e->t_step += t5 - t4;
  /* per micro batch, the unit of the profile's MACs (the iteration ran nmb of them) */
  if (profiling) flops_report(e, e->wall_clock ? it_fwd / nmb : 0, e->wall_clock ? (it_bwd + (t4 - t3)) / nmb : 0,
                              e->wall_clock ? t5 - t4 : 0);
  *grad_norm = norm;
  const float mean = (float)dp_mean(e, loss_sum / nmb);
  if (e->ds) {
    zt_ds_throughput_stop(&e->tput, 1);
    ds_after_step(e, mean, samples_before);
  }
  return mean;
}

float zt_engine_evaluate(zt_engine *e, int split) {
  const zt_args *a = e->args;
  const int B = a->micro_batch_size;
  double total = 0.0;
  int count = 0;
  uint64_t base = split == 1 ? (uint64_t)e->consumed_valid_samples : 0;
  if (e->zero_stage == 3) zt_zero3_set_training(&e->zero3, 0);
  for (int it = 0; it < a->eval_iters; it++)
    for (int mb = 0; mb < a->num_microbatches; mb++) {
      uint64_t first = base + ((uint64_t)it * a->num_microbatches + mb) * B * a->data_parallel_size +
                       (uint64_t)e->dp_rank * B;
      zt_engine_load_micro_batch(e, split, first);
      zt_pass pass = {.B = B, .T = a->seq_length, .first_sample = first, .seed = a->seed, .training = 0,
                      .key_start = e->key_start};
      total += e->gpu ? zt_gpt_cuda_forward(e->gpu, e->tokens, e->positions, e->targets, e->loss_mask, &pass)
                      : zt_pipeline_eval_forward(e, &pass);
      count++;
    }
  total = zt_pipeline_from_last(e, total);
  if (split == 1) e->consumed_valid_samples += (int64_t)a->eval_iters * a->global_batch_size;
  return count ? (float)dp_mean(e, total / count) : 0.0f;
}

static void print_validation(const char *prefix, float loss) {
  char line[512];
  double ppl = exp(loss < 20 ? loss : 20);
  int len = snprintf(line, sizeof line, " validation loss at %s | lm loss value: %.6E | lm loss PPL: %.6E | ",
                     prefix, loss, ppl);
  char dashes[512];
  int n = len + 1 < (int)sizeof dashes - 1 ? len + 1 : (int)sizeof dashes - 1;
  memset(dashes, '-', (size_t)n);
  dashes[n] = 0;
  zt_log("%s\n%s\n%s\n", dashes, line, dashes);
}

/* Megatron's training_log line. The lm loss is the mean over the interval's applied (not skipped)
 * iterations and is left out when all were skipped; the grad norm is the last iteration's, left out
 * when that one was skipped (Megatron's None). */
static void print_log_line(const zt_engine *e, double elapsed_per_iter, int applied, double loss_sum,
                           double grad_norm, int skipped) {
  const zt_args *a = e->args;
  const double samples_per_s = a->global_batch_size / elapsed_per_iter;
  const int world = zt_world_size();
  char lm[64] = "", gn[64] = "";
  const float loss = applied > 0 ? (float)(loss_sum / applied) : 0.0f;
  if (loss > 0) snprintf(lm, sizeof lm, " lm loss: %.6E |", loss);
  if (!isnan(grad_norm)) snprintf(gn, sizeof gn, " grad norm: %.3f |", grad_norm);
  zt_log(" iteration %8lld/%8lld | consumed samples: %12lld | consumed tokens: %12lld |"
         " elapsed time per iteration (ms): %.1f | learning rate: %.3E | global batch size: %5d |"
         "%s loss scale: %.1f |%s number of skipped iterations: %3d |"
         " number of nan iterations: %3d | samples per second: %.3f | tokens per gpu per second (tgs): %.3f |"
         " TFLOPs: %.2f |\n",
         (long long)e->iteration, (long long)a->train_iters, (long long)e->consumed_samples,
         (long long)e->consumed_tokens, elapsed_per_iter * 1000.0, current_lr(e), a->global_batch_size,
         lm, e->scaler.cur_scale, gn, skipped, 0, samples_per_s, samples_per_s * a->seq_length / world,
         e->flops_per_iteration / (elapsed_per_iter * world * 1e12));
}

static int has_split(const zt_engine *e, int split) { return !e->use_gdata || zt_gpt_data_has(&e->gdata, split); }

void zt_engine_run(zt_engine *e) {
  const zt_args *a = e->args;
  if (!a->skip_train) {
    zt_log("training ...\n");
    double interval_start = zt_now(), loss_acc = 0.0;
    int in_interval = 0, applied = 0, skipped = 0;
    while (e->iteration < a->train_iters) {
      double norm;
      float loss = zt_engine_train_step(e, &norm);
      in_interval++;
      if (e->last_skipped) {
        skipped++;
      } else {
        loss_acc += loss;
        applied++;
      }
      if (e->iteration % a->log_interval == 0) {
        double now = zt_now();
        print_log_line(e, (now - interval_start) / in_interval, applied, loss_acc, norm, skipped);
        interval_start = now;
        loss_acc = 0.0;
        in_interval = applied = skipped = 0;
      }
      if (a->eval_iters > 0 && has_split(e, 1) && e->iteration % a->eval_interval == 0) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "iteration %lld", (long long)e->iteration);
        double t0 = zt_now();
        print_validation(prefix, zt_engine_evaluate(e, 1));
        interval_start += zt_now() - t0; /* validation time is not training time */
      }
      if (zt_ckpt_after_step(e)) return; /* --save-interval; --exit-*: saved, the program ends (Megatron's sys.exit) */
    }
    zt_log("[after training is done]\n");
    if (e->ds && e->ds->comms_logger_enabled) zt_comms_logger_log_summary(); /* deepspeed.comm.log_summary() */
    zt_ckpt_end_of_training(e);
  }
  if (a->eval_iters > 0) {
    if (has_split(e, 1)) print_validation("the end of training for val data", zt_engine_evaluate(e, 1));
    if (has_split(e, 2)) print_validation("the end of training for test data", zt_engine_evaluate(e, 2));
  }
}
