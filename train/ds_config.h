/* DeepSpeed ds_config.json: loading (hjson-style comments and trailing commas, duplicate keys refused),
 * strict validation against a table of every key DeepSpeed parses (train/ds_config_schema.c), "auto"
 * values resolved from the Megatron flags, the batch-size triple of DeepSpeed's config.py, and the
 * DeepSpeed-style print of the effective configuration. Every error goes through zt_fatal:
 * "error: ds_config: <file>: <detail>". See docs/ds_config.md. */
#ifndef ZT_DS_CONFIG_H
#define ZT_DS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "models/transformer/sparsity.h"
#include "runtime/comm/comms_logger.h"
#include "train/args.h"
#include "train/curriculum.h"
#include "train/data_sampler.h"
#include "train/random_ltd.h"

/* A numeric key: given (present in the file, or filled from a Megatron flag), is_auto (the file said
 * "auto"; value is meaningful only once resolved, given then becomes true), value (the file's value,
 * the resolved value, or DeepSpeed's code default when not given). */
typedef struct {
  bool given;
  bool is_auto;
  double value;
} zt_ds_num;

typedef struct zt_ds_config {
  char path[1024];   /* the file, as named in every message */
  void *json;        /* the parsed cJSON tree (owned) */
  char *text;        /* the text as read (owned): what a checkpoint records, whatever becomes of the file */

  /* batch triple; after zt_ds_config_batch all three are given and consistent */
  zt_ds_num train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps;
  zt_ds_num steps_per_print;           /* not given = None: no periodic DeepSpeed step log */
  bool wall_clock_breakdown, memory_breakdown, dump_state;
  zt_ds_num gradient_clipping;         /* 0.0 = off (code default) */
  bool prescale_gradients;
  bool use_data_before_expert_parallelism; /* the expert groups in DeepSpeed's D + E topology (runtime/parallel) */
  zt_ds_num gradient_predivide_factor; /* 1.0 */
  char communication_data_type[8];     /* "" (None), "fp32", "fp16" or "bf16" */
  char seq_parallel_comm_data_type[8]; /* "fp32" (default), "fp16" or "bf16": the gradients' all-reduce type instead
                                          of communication_data_type under DeepSpeed-Ulysses (DeepSpeed's engine) */

  /* fp16 / bf16 (docs/mixed_precision.md); *_auto: "enabled": "auto" (takes --fp16 / --bf16) */
  bool fp16_enabled, fp16_auto, bf16_enabled, bf16_auto;
  zt_ds_num loss_scale;                /* 0 = dynamic */
  zt_ds_num initial_scale_power, loss_scale_window, hysteresis, min_loss_scale;
  bool consecutive_hysteresis;
  bool dynamic_loss_args;              /* one of the five dynamic keys is in the file (DeepSpeed's
                                          get_dynamic_loss_scale_args is then not None) */
  char grad_accum_dtype[8];            /* data_types.grad_accum_dtype: "" (None), fp32, fp16, bf16 */

  /* optimizer: has_optimizer false = none in the file (Megatron's --optimizer decides) */
  bool has_optimizer;
  char optimizer_type[16];             /* lower-cased: "adam", "adamw", "lamb" */
  zt_ds_num lr, beta1, beta2, eps, weight_decay; /* betas "auto" sets is_auto on both */
  bool adam_w_mode, torch_adam, bias_correction;
  zt_ds_num max_coeff, min_coeff;      /* lamb */
  bool eps_inside_sqrt;                /* lamb */

  /* scheduler: has_scheduler false = none in the file */
  bool has_scheduler;
  char scheduler_type[24];             /* as in the file: LRRangeTest, OneCycle, WarmupLR, ... */
  struct {
    zt_ds_num lr_range_test_min_lr, lr_range_test_step_size, lr_range_test_step_rate;
    bool lr_range_test_staircase;
    zt_ds_num cycle_min_lr, cycle_max_lr, decay_lr_rate, cycle_first_step_size, cycle_second_step_size;
    zt_ds_num cycle_first_stair_count, cycle_second_stair_count, decay_step_size;
    bool cycle_momentum;
    zt_ds_num cycle_min_mom, cycle_max_mom, decay_mom_rate;
    zt_ds_num warmup_min_lr, warmup_max_lr, warmup_num_steps, total_num_steps;
    zt_ds_num warmup_min_ratio, cos_min_ratio;
    zt_ds_num last_batch_iteration;
    char warmup_type[8];               /* "log" or "linear" */
  } sched;

  int zero_stage;                      /* 0 to 3; the legacy "zero_optimization": true is 1 */
  double zero_prefetch_bucket_size, zero_param_persistence_threshold, zero_model_persistence_threshold;
  double zero_max_live_parameters, zero_max_reuse_distance; /* stage 3, elements */
  bool zero_auto_reduce_bucket, zero_auto_prefetch, zero_auto_persistence; /* "auto": the hidden size decides */
  char offload_param_device[8];        /* "none", "cpu" or "nvme" (stage 3; the legacy cpu_offload_param true is "cpu") */
  char offload_param_nvme_path[512];
  int offload_param_block;             /* an offload_param block (or the legacy cpu_offload_param) is there */
  int offload_param_buffer_count;
  double offload_param_buffer_size, offload_param_max_in_cpu; /* elements */
  bool offload_param_pin_memory;
  double zero_reduce_bucket_size, zero_allgather_bucket_size; /* elements */
  bool zero_reduce_scatter;
  char offload_optimizer_device[8];    /* "none", "cpu" or "nvme" (the legacy cpu_offload true is "cpu") */
  char offload_optimizer_nvme_path[512];
  int offload_optimizer_buffer_count;
  bool offload_optimizer_pin_memory, offload_optimizer_pipeline;  /* pipeline: pipeline_read or _write */
  double offload_optimizer_ratio;      /* 1.0; stage 3 only: the share of the optimizer state offloaded */
  double zero_sub_group_size;
  /* activation_checkpointing; ac_number_checkpoints -1 = null */
  bool ac_partition, ac_cpu, ac_contiguous, ac_synchronize, ac_profile;
  int ac_number_checkpoints;
  /* aio block (runtime/aio) */
  int aio_block_size, aio_queue_depth, aio_intra_op_parallelism;
  bool aio_single_submit, aio_overlap_events;

  bool tensorboard_enabled, csv_monitor_enabled;
  char tensorboard_output_path[512], tensorboard_job_name[128];
  char csv_monitor_output_path[512], csv_monitor_job_name[128];
  bool timers_throughput_enabled, timers_throughput_synchronized;

  bool load_universal; /* checkpoint.load_universal: --load follows latest_universal (checkpoints/checkpoint.c) */
  char tag_validation[8]; /* checkpoint.tag_validation: Warn (default), Ignore or Fail (checkpoints/checkpoint.c) */
  /* flops_profiler (runtime/profile/flops_profiler.h); fp_output_file "" = null: print to stdout */
  bool flops_profiler_enabled, fp_detailed;
  int fp_profile_step, fp_module_depth, fp_top_modules;
  double fp_recompute_fwd_factor;
  char fp_output_file[512];

  /* comms_logger (runtime/comm/comms_logger.h); cl_prof_ops: op names DeepSpeed logs (all_reduce, ...) */
  bool comms_logger_enabled, cl_verbose, cl_prof_all, cl_debug;
  char cl_prof_ops[ZT_COMMS_MAX_PROF_OPS][24];
  int cl_n_prof_ops;

  /* sparse_attention (docs/sparse_attention.md): present = the block is in the file; sparse = the keys its mode
   * reads (DeepSpeed's get_sparse_*_config), the others at that mode's defaults; checked against the model by
   * zt_sparsity_check when the layout is made */
  bool sparse_attention;
  zt_sparsity_config sparse;

  /* curriculum_learning (the legacy seqlen curriculum, train/curriculum.h, docs/data_efficiency.md): enabled and
   * its schedule, with DeepSpeed's required-key checks done; checked against the model at start-up */
  zt_curriculum_config curriculum;

  /* data_efficiency.data_sampling (DeepSpeed's data sampler, train/data_sampler.h, docs/data_efficiency.md): enabled
   * by its curriculum_learning.enabled alone, the seed, and each metric's keys with DeepSpeed's required-key checks
   * done; checked against the model and the data at start-up */
  zt_data_sampling_config data_sampling;

  /* data_efficiency.data_routing.random_ltd (train/random_ltd.h, docs/data_efficiency.md): enabled (by
   * random_ltd.enabled alone, as DeepSpeed's engine decides) and its keys, DeepSpeed's required ones checked;
   * checked against the model at start-up */
  zt_random_ltd_config random_ltd;
} zt_ds_config;

/* Reads, parses and validates path; dies with the file (and line:column for syntax errors), the key
 * path and the value on any error, and with "... lands with <work>" for a known key of a feature
 * zerotron does not implement yet. */
void zt_ds_config_load(zt_ds_config *c, const char *path);
/* Same from a string (tests); name stands for the file in messages. */
void zt_ds_config_load_string(zt_ds_config *c, const char *text, const char *name);
void zt_ds_config_free(zt_ds_config *c);

/* Megatron values for the "auto" resolution and the consistency check. For each: explicit = given on
 * the command line; set = Megatron has a value at all (explicit or its default). */
typedef struct {
  bool set, explicit_;
  double value;
} zt_ds_megatron_value;

typedef struct {
  zt_ds_megatron_value micro_batch_size;  /* --micro-batch-size   <-> train_micro_batch_size_per_gpu */
  zt_ds_megatron_value global_batch_size; /* --global-batch-size  <-> train_batch_size */
  zt_ds_megatron_value clip_grad;         /* --clip-grad          <-> gradient_clipping */
  zt_ds_megatron_value lr;                /* --lr                 <-> optimizer lr, warmup_max_lr */
  zt_ds_megatron_value adam_beta1, adam_beta2; /* --adam-beta1/2  <-> optimizer betas */
  zt_ds_megatron_value adam_eps;          /* --adam-eps           <-> optimizer eps */
  zt_ds_megatron_value weight_decay;      /* --weight-decay       <-> optimizer weight_decay */
  zt_ds_megatron_value lr_warmup_iters;   /* --lr-warmup-iters    <-> scheduler warmup_num_steps */
  zt_ds_megatron_value train_iters;       /* --train-iters        <-> scheduler total_num_steps */
  zt_ds_megatron_value zero_stage;        /* --zero-stage         <-> zero_optimization.stage (must agree) */
  /* --deepspeed-activation-checkpointing with recompute on: Megatron-DeepSpeed's deepspeed.checkpointing.configure
   * call, whose arguments replace every key of the activation_checkpointing block */
  bool ds_activation_checkpointing;
  bool ac_partition, ac_contiguous, ac_cpu, ac_synchronize, ac_profile;
  int ac_number_checkpoints;              /* ceil(--num-layers / --checkpoint-num-layers) */
} zt_ds_megatron;

/* Fills m from pretrain_gpt's parsed arguments (train/args.h): explicit_ from zt_args_given; set for
 * the flags that have a Megatron default (clip grad, betas, eps, weight decay, warmup iters) or a value
 * (--train-iters > 0); float-stored flags are widened through their shortest decimal (0.01f -> 0.01). */
void zt_ds_megatron_from_args(zt_ds_megatron *m, const zt_args *a);

/* Resolves "auto" values from m (HF rule) and refuses any contradiction between an explicit flag and
 * a value in the file: "error: inconsistent arguments: --micro-batch-size 8 contradicts
 * train_micro_batch_size_per_gpu 4 in ds.json". A key absent from the file takes an explicit flag's
 * value. Call before zt_ds_config_batch. */
void zt_ds_config_reconcile(zt_ds_config *c, const zt_ds_megatron *m);

/* DeepSpeed's batch triple (config.py _set_batch_related_parameters + _batch_assertion) for a
 * data-parallel world of dp_world_size ranks; fills the missing members or dies with DeepSpeed's
 * exact message after "error: ds_config: <file>: ". */
void zt_ds_config_batch(zt_ds_config *c, int dp_world_size);

/* "DeepSpeedEngine configuration:" then "  <key path> ..... <effective value>" for every key of the
 * schema (defaults included), sorted, via zt_log. */
void zt_ds_config_print(const zt_ds_config *c);

/* The key table, for the docs and tests. */
typedef enum {
  ZT_DS_BOOL, ZT_DS_INT, ZT_DS_FLOAT, ZT_DS_STRING, ZT_DS_ENUM, ZT_DS_OBJECT, ZT_DS_LIST, ZT_DS_ANY
} zt_ds_type;

enum {
  ZT_DS_AUTO = 1,       /* accepts "auto" */
  ZT_DS_NULL = 2,       /* accepts null */
  ZT_DS_OPAQUE = 4,     /* object whose members are not checked (free-form kwargs, named groups) */
  ZT_DS_PRESENT = 8,    /* refused whenever present (feature not implemented) */
  ZT_DS_BOOLOBJ = 16,   /* object that also accepts a boolean (legacy forms) */
  ZT_DS_INERT = 32,     /* parsed and range-checked, accepted with any value, no effect yet (lands) */
  ZT_DS_I64 = 64,       /* INT held in 64 bits (element and step counts): range up to +-9.2e18; every other
                           INT must fit a 32-bit int */
};

typedef struct {
  const char *path;     /* dotted; "*" matches any member name */
  zt_ds_type type;
  unsigned flags;
  const char *def;      /* DeepSpeed's code default as printed ("None", "true", "5e8", "\"fp32\"") */
  double min, max;      /* inclusive range for INT/FLOAT (min > max: none) */
  const char *choices;  /* ENUM: "a|b|c" */
  const char *lands;    /* NULL: supported; else the work it lands with (refused when not default) */
  const char *alias_of; /* deprecated name of another key (both given: refused) */
} zt_ds_key;

/* The integers an INT key accepts: the table's range within 32 bits, or within +-9.2e18 for ZT_DS_I64 keys. */
void zt_ds_key_int_range(const zt_ds_key *k, double *lo, double *hi);

extern const zt_ds_key zt_ds_schema[];
extern const int zt_ds_schema_count;

#endif
