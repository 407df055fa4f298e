/* The training state: everything a checkpoint saves and restores, and nothing else — the progress counters, this
 * rank's place in the parallel layout, the model (its parameter table and buffers, models/model.h), the optimizer
 * with its partition (ZeRO stages, NVMe swapping), the learning-rate schedule and the loss scaler. The engine
 * (train/engine.h) holds one and drives it; checkpoints/ reads and writes it, never the engine. */
#ifndef ZT_TRAIN_STATE_H
#define ZT_TRAIN_STATE_H

#include <stdint.h>

#include "models/model.h"
#include "runtime/optim/ds_lr_schedules.h"
#include "runtime/optim/loss_scaler.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/zero/swap.h"
#include "runtime/zero/zero.h"
#include "runtime/zero/zero3.h"
#include "train/args.h"

typedef struct {
  const zt_args *args;           /* the run's flags (paths, checkpoint options, the argument summary) */
  const char *ds_config_path;    /* the --deepspeed_config file, or "" */
  const char *ds_config_text;    /* its text as the run read it, or "" */
  zt_model *model;
  /* progress */
  int64_t iteration;
  int64_t consumed_samples, consumed_tokens, consumed_valid_samples;
  int64_t skipped_iters;         /* steps skipped for an fp16 overflow, since the start of training */
  int64_t random_ltd_layer_tokens; /* random-LTD's consumed layer tokens (DeepSpeed's scheduler state), -1: off */
  /* the data-efficiency data sampler (train/data_sampler.h): the global batches it drew (-1: no sampler) and the
   * digest of its state then; a resumed run replays that many steps and compares the digest */
  int64_t data_sampler_step;
  uint64_t data_sampler_digest;
  /* this rank's place: model-parallel coordinates and its data-parallel rank */
  int tp_rank, tp_size, pp_rank, pp_size, dp_rank, dp_size;
  /* DeepSpeed-Ulysses (--ds-sequence-parallel-size): this rank's place in its sequence-parallel group (size 1: off).
   * The ranks of a group read the same samples (dp_rank counts the groups); the gradients, the ZeRO partitions and
   * the checkpoint's optimizer files go over all usp_size x dp_size ranks (DeepSpeed's sequence-data-parallel group,
   * rank dp_rank usp_size + usp_rank) */
  int usp_rank, usp_size;
  /* expert parallelism holding only this rank's experts (1), and its place among the data-parallel ranks holding the
   * same experts (rank ep_dp_rank of ep_dp_size): they share the writing of those experts' files and states */
  int local_experts, ep_dp_rank, ep_dp_size;
  /* mixed precision: the half type of the weights (fp32: none) and the fp32 masters of the partition */
  zt_dtype half_dtype;
  float *master;                 /* [part_hi - part_lo] in the model's backend memory, or NULL */
  /* the optimizer of this rank's partition [part_lo, part_hi) of the flat buffers (all of it without ZeRO) */
  zt_optimizer opt;
  int zero_stage;
  zt_zero zero;
  size_t part_lo, part_hi;
  /* ZeRO 1/2 with local experts (the experts laid out last, partitioned over the ranks holding them): the second
   * partition [xpart_lo, xpart_hi) of the flat buffers, its optimizer state and masters from element xpart_at (the
   * optimizer's two ranges); zero_x.dp is NULL when the experts are not partitioned apart */
  zt_zero zero_x;
  size_t xpart_lo, xpart_hi, xpart_at;
  zt_opt_swapper *swap;          /* offload_optimizer nvme: the partition's state on NVMe, or NULL */
  zt_zero3 zero3;                /* stage 3: the parameters outside the partition, fetched per unit */
  /* learning rate: Megatron's schedule, or a ds_config scheduler block */
  zt_lr_schedule sched;
  int use_ds_sched;
  zt_ds_sched ds_sched;
  zt_loss_scaler scaler;         /* static 1.0 unless fp16 */
} zt_train_state;

#endif
