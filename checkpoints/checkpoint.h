/* Checkpoints of the training state (train/state.h) in DeepSpeed's directory layout, in HDF5: --save/--load and their
 * options, Megatron's save points (--save-interval, end of training, --exit-interval,
 * --exit-duration-in-mins, --exit-signal-handler) with Megatron's messages, crash-safe writing (temporary
 * directory, fsync, rename, manifest with checksums, `latest` replaced last) and exact resume. The format
 * is documented in docs/checkpoints.md; ckpt_reader.h reads it for any parallel layout. */
#ifndef ZT_CHECKPOINT_H
#define ZT_CHECKPOINT_H

#include "train/state.h"

/* After the engine is built (the driver calls it): starts the exit-duration clock, installs the SIGTERM handler
 * (--exit-signal-handler) and, with --load, loads the checkpoint (all validated before any engine state
 * changes). A missing checkpoint starts from scratch with Megatron's warning (fatal with
 * --exit-on-missing-checkpoint). */
void zt_ckpt_start(zt_train_state *st);
/* After each training iteration: SIGTERM, --save-interval, --exit-duration-in-mins, --exit-interval, in
 * Megatron's order. Returns 1 when the program must exit now (the checkpoint, if any, is written). */
int zt_ckpt_after_step(zt_train_state *st);
/* --kill-switch-file: whether the file exists on any rank (every rank takes the same decision). */
int zt_ckpt_kill_switch(const zt_args *a);
/* After the training loop: saves (with --save) unless this iteration was just saved or is 0. */
void zt_ckpt_end_of_training(zt_train_state *st);
/* Megatron-DeepSpeed's load_model_weights_only: the weights of a->load (a->no_load_optim and a->no_load_rng set,
 * a->exit_on_missing_checkpoint for an error on a missing one), saved in any TP/PP/DP layout, into model m, which
 * holds the (tp_rank, pp_rank) slice of a TP x PP layout with dp_size replicas; rounded to a's --fp16/--bf16.
 * Collective over the world. */
void zt_ckpt_load_weights(zt_model *m, const zt_args *a, int tp_rank, int tp_size, int pp_rank, int pp_size,
                          int dp_rank, int dp_size);
/* finetune_bert's --pretrained-checkpoint (Megatron's finetune(): load_checkpoint of the pretrained directory with
 * --finetune and no rng): the weights of the checkpoint in dir, saved in any layout, into st's model, its masters
 * refreshed; iteration, consumed samples, optimizer and scheduler untouched. Parameters whose names start with
 * optional_prefix may be missing (they keep their initialization, with Megatron's warning); the checkpoint's
 * tensors this model lacks (the pretraining heads) are left out. A missing checkpoint is refused. Collective. */
void zt_ckpt_load_pretrained(zt_train_state *st, const char *dir, const char *optional_prefix);
/* DeepSpeed's _checkpoint_tag_validation: whether every rank of the world saves under this tag (a checksum of it
 * compared through one all-reduce). Collective. */
int zt_ckpt_tag_consistent(const char *tag);
/* Writes the checkpoint of the current iteration under args->save. Collective over the world. */
void zt_ckpt_save(zt_train_state *st);

#endif
