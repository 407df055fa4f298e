/* The training engine (Megatron's pretrain()): composes a model (any kind, through models/model.h), its data
 * provider, the optimizer with ZeRO, mixed precision, the LR schedule, the pipeline schedule and the logging into
 * Megatron's train loop (gradient accumulation over micro batches, clipping, periodic validation, the log line),
 * on the CPU or on the GPUs of the job. A driver (train/pretrain_gpt.c) names the model kind and hands the
 * checkpoint hooks in; the engine depends on neither a model nor checkpoints/. */
#ifndef ZT_ENGINE_H
#define ZT_ENGINE_H

#include <stdint.h>

#include "data/pretraining_sampler.h"
#include "data/provider.h"
#include "data/tokenizer/tokenizer.h"
#include "models/model.h"
#include "runtime/comm/comm.h"
#include "runtime/parallel/pipeline_schedule.h"
#include "runtime/profile/flops_profiler.h"
#include "runtime/profile/monitor.h"
#include "runtime/profile/throughput.h"
#include "train/args.h"
#include "train/curriculum.h"
#include "train/data_sampler.h"
#include "train/ds_config.h"
#include "train/ds_log.h"
#include "train/rampup.h"
#include "train/state.h"

/* A model kind: how a driver's model and data are built (Megatron's model_provider and
 * train_valid_test_datasets_provider), and its parameter count for DeepSpeed's memory estimate. */
typedef struct {
  const char *name; /* "GPT": "building GPT model ..." */
  zt_model *(*build_model)(const zt_model_args *a, const zt_model_setup *s);
  zt_data_provider *(*build_data)(const zt_data_setup *s);
  void (*count_params)(const zt_model_args *a, int64_t *total, int64_t *largest);
  int causal;       /* causal self-attention (GPT): a sparse_attention layout's tiles above the diagonal, masked
                       anyway, are left out of the layout */
  int seqlen_curriculum; /* the model truncates to curriculum_seqlen (Megatron-DeepSpeed's GPTModel; its BertModel
                            takes no curriculum_seqlen) */
  int encoder_decoder;   /* T5: the ds_config's sparse_attention and random-LTD are refused */
  int longest_cut;       /* under the data sampler each training micro batch is cut to its longest sample over the
                            data-parallel group (or the seqlen_truncate difficulty), rounded up to 8
                            (Megatron-DeepSpeed's pretrain_bert data_post_process); else the GPT's seqlen_truncate or
                            seqlen_reshape */
  const char *no_data_sampling; /* why --data-efficiency-curriculum-learning is refused for this kind (NULL: it
                                   runs wherever the checks below allow) */
} zt_model_kind;

/* Sums of the named losses over micro batches (and iterations), in double as Megatron's running averages. */
typedef struct {
  int n;
  const char *name[ZT_MAX_LOSSES];
  double value[ZT_MAX_LOSSES];
  double total;
} zt_loss_sums;

/* Megatron's TensorBoard writer and timers (train/tb_log.h). */
typedef struct zt_tb_log zt_tb_log;

/* The seconds of the last training iteration's phases (Megatron's timers, train/tb_log.c): forward and backward
 * compute (with pipelining all of the schedule is in bwd), batch loading, the gradient reduction, the optimizer. */
typedef struct {
  double fwd, bwd, batch, grads_reduce, optimizer;
} zt_step_phases;

/* What the driver runs around the loop (checkpoints: checkpoints/checkpoint.h). NULL members do nothing. */
typedef struct {
  int (*after_step)(zt_train_state *st); /* after each iteration: 1 = the program must exit now */
  void (*end_of_training)(zt_train_state *st);
} zt_train_hooks;

typedef struct {
  const zt_args *args;
  const zt_model_kind *kind;
  zt_train_state st;             /* the checkpointed state (model, optimizer, schedule, scaler, progress) */
  zt_model *model;               /* = st.model */
  const zt_backend *be;          /* where the model runs: the CPU or this rank's GPU */
  zt_data_provider *data;
  zt_batch batch;                /* the micro batch last loaded */
  zt_train_hooks hooks;
  /* --deepspeed: the ds_config's optimizer, scheduler, clipping, gradient scaling, logs, monitors */
  const zt_ds_config *ds;        /* NULL without --deepspeed */
  /* the ZeRO settings: ds, or for Megatron's --use-distributed-optimizer (no --deepspeed) zero_default, DeepSpeed's
   * defaults at stage 1 (docs/zero.md "Megatron's distributed optimizer") */
  const zt_ds_config *zcfg;
  zt_ds_config zero_default;
  double beta_cfg[2];            /* the optimizer's configured betas (OneCycle cycles beta1) */
  float clip_grad;               /* --clip-grad, or gradient_clipping with --deepspeed */
  zt_monitor *monitor;
  zt_ds_throughput tput;
  int wall_clock;                /* wall_clock_breakdown (or flops_profiler, which turns it on) */
  zt_flops_profiler *fprof;      /* flops_profiler: reports once, at profile_step */
  double t_fwd, t_bwd_inner, t_bwd_allreduce, t_step; /* seconds since the last timers log */
  /* process groups (Megatron's layout): data-parallel (the world while TP = PP = 1), tensor-parallel (NULL with
   * TP = 1), this rank's pipeline (NULL with PP = 1: group rank = stage), first and last stage (tied embedding
   * gradients), or NULL */
  const zt_group *dp_group, *tp_group, *pp_group, *emb_group;
  const zt_group *usp_group; /* DeepSpeed-Ulysses: this rank's sequence-parallel group (consecutive ranks), or NULL;
                                dp_group is then DeepSpeed's sequence-data-parallel group (the world) */
  const zt_group *loss_group; /* DeepSpeed-Ulysses: Megatron's data-parallel group (the ranks of one sequence-parallel
                                 rank), which averages the logged losses; NULL: dp_group does */
  const zt_group *ep_group;  /* --moe-expert-parallel-size > 1 with MoE layers: this rank's expert-parallel group */
  const zt_group *ep_dp_group; /* and its expert-data-parallel group (the ranks holding the same experts; NULL when
                                  it is this rank alone) */
  zt_moe_config moe;         /* the arguments' MoE flags with the expert-parallel group (the model keeps a pointer) */
  /* the pipeline schedule (train/schedule.c): vpp virtual chunks per stage (1 without interleaving), the
   * interleaved schedule's steps on this stage, the stage-sized buffers the schedule keeps in the model */
  int vpp, interleaved, pp_buffers, pipe_nsteps;
  zt_pipe_step *pipe_steps;
  /* --enable-zbh1-pipeline with pipeline stages: the store of deferred weight gradients, whose backend the model
   * runs on (runtime/ops/wgrad_store.h); NULL otherwise */
  struct zt_wgrad_store *wgrad;
  /* the stages' layers where they are not Megatron's even split (zt_args_pipe_stages: GPTModelPipe's under --deepspeed,
   * or the standalone embedding stage): stage s holds layers [stage_first[s], stage_first[s + 1]); else NULL */
  int *stage_first;
  int wgrad_said;            /* its memory line was printed (after the first step) */
  double pipe_batch_time;    /* --deepspeed: the steps' seconds since the last steps_per_print line */
  /* mixed precision (--fp16/--bf16 or the ds_config blocks): st.half_dtype, the masters in st.master */
  int grads_half;                /* gradients are stored (accumulated) in the half type, else fp32 */
  zt_dtype comm_dtype;           /* data type of the data-parallel gradient all-reduce */
  int last_skipped;              /* the last zt_engine_train_step skipped its update */
  zt_loss_sums last_losses;      /* the last step's mean of each named loss */
  double flops_per_iteration;
  /* Megatron's TensorBoard logging and timers, --log-num-zeros-in-grad, and the start-up phase times */
  zt_tb_log *tb;
  zt_step_phases last_phases;
  double t_batch;                /* seconds spent loading training micro batches */
  double num_zeros;              /* of the last applied step's gradients; NAN when not counted */
  double setup_seconds[2];       /* Megatron's model-and-optimizer-setup, train/valid/test-data-iterators-setup */
  /* the batch of the current step: --rampup-batch-size (train/rampup.h) changes it as samples are consumed; without
   * it, always the global batch size and args->num_microbatches. pipe_nmb: the micro batches pipe_steps is for */
  zt_rampup ramp;
  int64_t cur_gbs;
  int cur_nmb, pipe_nmb;
  /* the ds_config's sparse_attention layout for --seq-length (host memory; none without the block) */
  zt_attn_layout_buf sparse;
  /* the legacy seqlen curriculum (ds_config curriculum_learning, train/curriculum.h): the scheduler, stepped with
   * iteration + 1 before each training iteration as Megatron-DeepSpeed does and not checkpointed (a resumed run
   * recomputes it from the iteration, as Megatron-DeepSpeed's does); train_T: the sequence length of the current
   * training iteration (--seq-length without curriculum), the training micro batches truncated to it in curr_buf */
  int curriculum;                /* a seqlen curriculum: the legacy one, or the data sampler's seqlen_truncate */
  zt_curriculum curr;
  int train_T;
  zt_curriculum_batch curr_buf;
  zt_flops_model flops_model;    /* the model's flops figure at train_T (Megatron's throughput_calculator) */
  /* DeepSpeed's data-efficiency data sampler (--data-efficiency-curriculum-learning with the ds_config's
   * data_efficiency.data_sampling block, train/data_sampler.h): one global batch of sample ids drawn before each
   * training iteration, each micro batch loading its slice; with a seqlen_truncate metric train_T follows it
   * (curriculum is set then too). st.data_sampler_step counts its steps for the checkpoint. The sampler lives on
   * world rank 0; sampler_msg is the broadcast [step, length, digest, the global batch's ids] every rank loads from. */
  int sampler_on;
  zt_data_sampler sampler;
  int64_t *sampler_msg;
  /* --dataloader-type cyclic or --repeated-dataloader (data/pretraining_sampler.h): each split's sampler, started by
   * its first micro batch (the loader's start: Megatron builds it after --load) and loading by id; the data-efficiency
   * sampler above still feeds training */
  int psampler_on;
  zt_pretraining_sampler psampler[3];
  /* --profile (runtime/profile/trace.h): this run's training steps so far, and whether this rank traces */
  int profile_step, profile_me;
  /* the sampler's length metric is seqlen_reshape: below --seq-length each training micro batch is re-cut into
   * reshape_rows rows of train_T tokens (0 at --seq-length), run as passes of --micro-batch-size rows through
   * reshape_buf (train/schedule.c) */
  int reshape, reshape_rows;
  zt_curriculum_batch reshape_buf;
  /* the model kind's longest_cut under the sampler: train_T is set by each training micro batch's load (the last
   * one's stays for the log, as Megatron-DeepSpeed's args.curriculum_seqlen); sampler_T: the sampler's length */
  int longest_cut, sampler_T;
  /* random-LTD (ds_config data_efficiency.data_routing.random_ltd with --random-ltd, train/random_ltd.h): the
   * scheduler, stepped with the iteration before each training iteration as DeepSpeed's engine.forward does
   * (a resumed run recomputes the reserved length from the iteration; the consumed layer tokens are checkpointed);
   * ltd_layers: the model's random-LTD layers (flags by layer); ltd.current: the reserved length; actual_T:
   * Megatron-DeepSpeed's actual_seq_length of the last iteration (train_T without random-LTD) */
  int ltd_on;
  zt_random_ltd ltd;
  uint8_t *ltd_layers;
  int actual_T;
  /* knowledge distillation (--mos/--kd): the forward-only teacher the driver builds (checkpoints/train_main.c loads
   * its weights), run on each training micro batch before the student, whose KD term reads its logits
   * (zt_pass.kd_teacher_logits); NULL without. The engine frees it. */
  zt_model *teacher;
  zt_kd_config kd;               /* the student's KD term (--kd-temp, --kd-beta-ce, --seq-length, the loss name) */
  /* finetune_bert (tasks/finetune.h): no validation after the loop (Megatron's finetune() validates at
   * --eval-interval only; its accuracy pass runs at each epoch's end from the hooks); 0 otherwise */
  int final_eval_off;
} zt_engine;

/* The ds_config's curriculum_learning checked against the model flags (and the model kind: NULL to leave it out),
 * before any work: refuses with the numbers what cannot run. */
void zt_engine_check_curriculum(const zt_args *a, const zt_ds_config *ds, const zt_model_kind *kind);
/* The data sampler's flag and block checked against each other and the model flags (kind: NULL to leave it out). */
void zt_engine_check_data_sampling(const zt_args *a, const zt_ds_config *ds, const zt_model_kind *kind);
/* --random-ltd and the ds_config's random_ltd block checked against each other and the model flags (and the model
 * kind: NULL to leave it out), before any work. */
void zt_engine_check_random_ltd(const zt_args *a, const zt_ds_config *ds, const zt_model_kind *kind);

/* The tokenizer named by the data flags (NULL with --mock-data); sets args' vocabulary size from
 * it and logs Megatron's padded-vocabulary line. */
zt_tokenizer *zt_engine_tokenizer(zt_args *args);

/* Builds everything from validated args: the datasets first (so bad data is refused before the model is
 * allocated), then the model of `kind` on the CPU or this rank's GPU (printing its memory plan), the optimizer and
 * the schedule. tok is the data's tokenizer or NULL for --mock-data; ds the DeepSpeed config or NULL. */
void zt_engine_init(zt_engine *e, const zt_args *args, const zt_tokenizer *tok, const zt_ds_config *ds,
                    const zt_model_kind *kind);

/* Where a process computes (training, evaluation, generation): its node-local GPU when CUDA devices are present,
 * each process on the node has its own, and config_why (a configuration the GPU path does not run yet; NULL or
 * "" for none) is empty; otherwise the CPU, with the reason in a "> compute:" line (say_cpu: also "> compute: CPU"
 * when there is no device). Every rank decides the same (one rank's reason sends all to the CPU), and NCCL carries
 * device buffers when there are several processes. CUDA_VISIBLE_DEVICES= hides the GPUs. Collective. */
const zt_backend *zt_pick_backend(const char *config_why, int say_cpu);

/* --deepspeed: loads args->deepspeed_config, reconciles it with the Megatron flags and the model kind (auto values,
 * contradictions refused), applies DeepSpeed's batch triple and clipping to args, prints the
 * effective configuration. Returns the config (free with zt_ds_config_free + free), or NULL. */
zt_ds_config *zt_engine_deepspeed_setup(zt_args *args, const zt_model_kind *kind);
void zt_engine_free(zt_engine *e);

/* The teacher of --mos/--kd (Megatron-DeepSpeed's setup_teacher_model): the model kind built forward-only with the
 * teacher's flags (zt_engine_teacher_args) on the student's backend, dtype and micro batch; its memory plan printed.
 * The caller loads its weights and sets e->teacher. */
zt_model *zt_engine_build_teacher(const zt_engine *e);
/* The teacher's arguments: the student's with --num-layers-teacher, --hidden-size-teacher,
 * --num-attention-heads-teacher, its experts and MLP width, --load-teacher as --load, weights only. */
void zt_engine_teacher_args(const zt_args *a, zt_args *t);

/* One training iteration over the global batch; returns the mean of the total loss (e->last_losses: each named
 * loss) and sets *grad_norm. */
float zt_engine_train_step(zt_engine *e, double *grad_norm);
/* Mean of each named loss over eval_iters global batches of split (1 valid, 2 test), without dropout. */
zt_loss_sums zt_engine_evaluate(zt_engine *e, int split);
/* The whole run: train for train_iters with logging and validation, then final validation. */
void zt_engine_run(zt_engine *e);

/* ---- for the schedules (train/schedule.c) -------------------------------------------------------------------- */
/* Loads the micro batch of samples [first, first + B) of split into e->batch; training micro batch mb of the
 * iteration with the data sampler: this rank's slice of the sampler's global batch (first still keys the draws). */
void zt_engine_load_micro_batch(zt_engine *e, int split, uint64_t first, int mb);
/* seqlen_reshape: training micro batch mb of the sampler's global batch re-cut into rows of train_T tokens (into
 * e->batch); returns the rows. */
int zt_engine_load_reshaped(zt_engine *e, int mb);
/* --profile: a traced span from t0 (zt_now()) to now, after the device's queue drained; nothing when not tracing. */
void zt_engine_trace_span(const zt_engine *e, const char *name, double t0);
void zt_engine_check_finite_loss(const zt_engine *e, float loss, int micro, const char *what);
/* After a micro batch's backward: the half-precision handling of its gradients; 1 on an fp16 overflow. */
int zt_engine_half_grads_after_backward(zt_engine *e);

#endif
