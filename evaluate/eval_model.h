/* The model side shared by the evaluation programs (evaluate_zeroshot, generate_samples): this rank's place in the
 * run's TP x PP x DP layout and its process groups, a checkpoint of another model kind refused by what it holds, and
 * a forward-only GPT built in this layout, on the CPU or this process's GPU, with the weights of --load through the
 * trainer's resharding loader (whatever layout the checkpoint was saved in), its output layer holding the
 * checkpoint's padded vocabulary. */
#ifndef ZT_EVAL_MODEL_H
#define ZT_EVAL_MODEL_H

#include "models/model.h"
#include "models/transformer/decode.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/backend.h"
#include "runtime/parallel/parallel_state.h"
#include "train/args.h"

typedef struct {
  zt_coords c;
  const zt_group *tp, *pp, *dp; /* tp: NULL without tensor parallelism; pp: NULL without pipeline stages */
} zt_eval_placement;

/* The program's name in messages ("evaluate_zeroshot" unless the program sets it). */
extern const char *zt_eval_program;

/* This rank's place in the layout and its groups (Megatron's order, as the engine creates them). */
zt_eval_placement zt_eval_place(const zt_args *a);
/* The checkpoint's padded vocabulary size (rank 0 reads it, every rank gets it); a BERT (or other) checkpoint is
 * refused by what it holds, before any shape check. */
int zt_eval_checkpoint_vocab(const zt_args *a);
/* Builds the forward-only GPT of args (micro batch x seq length, sequence_parallel as given) in this layout on
 * the backend pretrain_gpt would choose (zt_pick_backend in train/engine.h), fp32 storage on either, and loads
 * --load's weights; args->padded_vocab_size becomes the checkpoint's rows rounded up to the tensor-parallel size.
 * A checkpoint trained with the ds_config's sparse_attention attends with its run's layout (made for the run's
 * --seq-length and --seed, cut to args' --seq-length) when allow_sparse, and is refused otherwise.
 * *p receives the placement, *v_valid the checkpoint's padded vocabulary size. */
zt_model *zt_eval_load_gpt(zt_args *args, int sequence_parallel, int allow_sparse, zt_eval_placement *p,
                           int *v_valid);
/* One key/value-cache decoder step of this pipeline stage (zt_lm_decode's arguments): receives the previous stage's
 * output first, sends this stage's on after; returns zt_lm_decode's "this is the last stage" (logits written). */
int zt_eval_stage_decode(const zt_model *m, const zt_eval_placement *p, zt_lm_decoder *dec, const int32_t *in, int n,
                         int past, int cached, int all, float *logits);

#endif
