/* The training engine: composes the model, data, optimizer, LR schedule and logging into Megatron's
 * train loop (gradient accumulation over micro batches, clipping, periodic validation, the log line). */
#ifndef ZT_ENGINE_H
#define ZT_ENGINE_H

#include <stdint.h>

#include "data/gpt_data.h"
#include "data/mock_data.h"
#include "data/tokenizer/tokenizer.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_cuda.h"
#include "runtime/comm/comm.h"
#include "runtime/optim/ds_lr_schedules.h"
#include "runtime/optim/loss_scaler.h"
#include "runtime/parallel/pipeline_schedule.h"
#include "runtime/zero/swap.h"
#include "runtime/zero/zero.h"
#include "runtime/zero/zero3.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/profile/flops_profiler.h"
#include "runtime/profile/monitor.h"
#include "train/args.h"
#include "train/ds_config.h"
#include "train/ds_log.h"

typedef struct {
  const zt_args *args;
  zt_gpt model;                  /* on the GPU: the host copy of the state (initialization, checkpoints) */
  zt_gpt_cuda *gpu;              /* training on a GPU (docs/cuda.md): the device model, else NULL */
  zt_optimizer opt;
  zt_lr_schedule sched;
  zt_mock_data data[3];          /* --mock-data: train, valid, test */
  zt_gpt_data gdata;             /* --data-path and friends */
  int use_gdata;
  int32_t eod;                   /* end-of-document id (tokenizer's; V-1 for mock data) */
  int32_t *text;                 /* [mbs, seq+1] */
  int32_t *tokens, *targets;     /* [mbs, seq] */
  float *loss_mask;              /* [mbs, seq] */
  int32_t *positions;            /* [mbs, seq] with --reset-position-ids, else NULL */
  int32_t *key_start;            /* [mbs, seq] with --reset-attention-mask, else NULL */
  /* --deepspeed: the ds_config's optimizer, scheduler, clipping, gradient scaling, logs, monitors */
  const zt_ds_config *ds;        /* NULL without --deepspeed */
  int use_ds_sched;              /* a "scheduler" block replaces Megatron's schedule */
  zt_ds_sched ds_sched;
  double beta_cfg[2];            /* the optimizer's configured betas (OneCycle cycles beta1) */
  float clip_grad;               /* --clip-grad, or gradient_clipping with --deepspeed */
  zt_monitor *monitor;
  zt_ds_throughput tput;
  int wall_clock;                /* wall_clock_breakdown (or flops_profiler, which turns it on) */
  zt_flops_profiler *fprof;      /* flops_profiler: reports once, at profile_step */
  double t_fwd, t_bwd_inner, t_bwd_allreduce, t_step; /* seconds since the last timers log */
  const zt_group *dp_group;      /* data-parallel group (the world while TP = PP = 1) */
  int dp_rank;
  const zt_group *tp_group;      /* tensor-parallel group (NULL with TP = 1) */
  int tp_rank;
  const zt_group *pp_group;      /* this rank's pipeline (NULL with PP = 1): group rank = stage */
  const zt_group *emb_group;     /* first and last stage (tied embedding grads), or NULL */
  int pp_rank, pp_size;
  /* the pipeline schedule (train/pipeline.c): vpp virtual chunks per stage (1 without interleaving), the
   * interleaved schedule's steps on this stage, the stage-sized buffers the schedule keeps in the model */
  int vpp, interleaved, pp_buffers, pipe_nsteps;
  zt_pipe_step *pipe_steps;
  /* mixed precision (--fp16/--bf16 or the ds_config blocks): the model's params hold values of
   * half_dtype (on the CPU in fp32 slots: the ops compute in fp32), master the fp32 weights the
   * optimizer updates; both NULL/ZT_DTYPE_FP32 in fp32 training */
  zt_dtype half_dtype;
  float *master;                 /* [table.numel] fp32 master weights, or NULL */
  zt_loss_scaler scaler;         /* static 1.0 unless fp16 */
  int64_t skipped_iters;         /* steps skipped for overflow, since the start of training */
  int grads_half;                /* gradients are stored (accumulated) in half_dtype, else fp32 */
  zt_dtype comm_dtype;           /* data type of the data-parallel gradient all-reduce */
  int last_skipped;              /* the last zt_engine_train_step skipped its update */
  /* ZeRO stages 1-3 (zero_optimization.stage; docs/zero.md): this rank's partition of the flat buffers */
  int zero_stage;
  zt_zero zero;
  size_t part_lo, part_hi;       /* [0, numel) without ZeRO */
  zt_opt_swapper *swap;          /* offload_optimizer nvme: the partition's optimizer state on NVMe, or NULL */
  zt_zero3 zero3;                /* stage 3: the parameters outside the partition, fetched per unit */
  int64_t iteration;
  int64_t consumed_samples, consumed_tokens, consumed_valid_samples;
  double flops_per_iteration;
} zt_engine;

/* The tokenizer named by the data flags (NULL with --mock-data); sets args' vocabulary size from
 * it and logs Megatron's padded-vocabulary line. */
zt_tokenizer *zt_engine_tokenizer(zt_args *args);

/* Builds everything from validated args: the datasets first (so bad data is refused before the
 * model is allocated), then the model (printing its memory plan), optimizer and schedule. tok is
 * the data's tokenizer (its eod id) or NULL for --mock-data; ds the DeepSpeed config or NULL. */
void zt_engine_init(zt_engine *e, const zt_args *args, const zt_tokenizer *tok, const zt_ds_config *ds);

/* --deepspeed: loads args->deepspeed_config, reconciles it with the Megatron flags (auto values,
 * contradictions refused), applies DeepSpeed's batch triple and clipping to args, prints the
 * effective configuration. Returns the config (free with zt_ds_config_free + free), or NULL. */
zt_ds_config *zt_engine_deepspeed_setup(zt_args *args);
void zt_engine_free(zt_engine *e);
/* Training on a GPU: the device's weights and Adam moments copied into the host model (e->model.params, the
 * masters, e->opt.m/v) before a checkpoint is written; a no-op on the CPU. */
void zt_engine_sync_host(zt_engine *e);

/* One training iteration over the global batch; returns the mean lm loss and sets *grad_norm. */
float zt_engine_train_step(zt_engine *e, double *grad_norm);
/* Mean lm loss over eval_iters global batches of split (1 valid, 2 test), without dropout. */
float zt_engine_evaluate(zt_engine *e, int split);
/* The whole run: train for train_iters with logging and validation, then final validation. */
void zt_engine_run(zt_engine *e);

#endif
