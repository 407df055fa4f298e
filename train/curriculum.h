/* DeepSpeed's legacy sequence-length curriculum learning (the ds_config's top-level "curriculum_learning" block,
 * deepspeed/runtime/data_pipeline/curriculum_scheduler.py) as Megatron-DeepSpeed uses it: the configuration, the
 * scheduler (fixed_linear, fixed_root, fixed_discrete; monotone, stuck once at max_difficulty) and the checks of a
 * configuration against the model flags. The engine truncates each training micro batch to the difficulty
 * (docs/data_efficiency.md). */
#ifndef ZT_CURRICULUM_H
#define ZT_CURRICULUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/model.h"

typedef enum { ZT_CURRICULUM_FIXED_LINEAR, ZT_CURRICULUM_FIXED_ROOT, ZT_CURRICULUM_FIXED_DISCRETE } zt_curriculum_type;

enum { ZT_CURRICULUM_MAX_LIST = 256 }; /* fixed_discrete: at most this many difficulties */

typedef struct {
  bool enabled;
  int64_t min_difficulty, max_difficulty;
  zt_curriculum_type type;
  int64_t total_curriculum_step, difficulty_step, root_degree; /* fixed_linear (root_degree 1), fixed_root */
  int n_difficulty;                                            /* fixed_discrete: n_difficulty = n_max_step + 1 */
  int64_t difficulty[ZT_CURRICULUM_MAX_LIST], max_step[ZT_CURRICULUM_MAX_LIST - 1];
} zt_curriculum_config;

/* CurriculumScheduler's state: current_difficulty starts at min_difficulty. */
typedef struct {
  const zt_curriculum_config *cfg;
  int64_t current;
} zt_curriculum;

const char *zt_curriculum_type_name(zt_curriculum_type t);
/* get_difficulty(global_steps): the schedule's value at step t (no state). */
int64_t zt_curriculum_difficulty(const zt_curriculum_config *c, int64_t t);
void zt_curriculum_init(zt_curriculum *s, const zt_curriculum_config *c);
/* update_difficulty(t): recomputed only while the current difficulty is below max_difficulty; returns it. */
int64_t zt_curriculum_update(zt_curriculum *s, int64_t t);

/* The checks against the model, before any work: 1 <= min_difficulty <= max_difficulty <= --seq-length, and every
 * difficulty the scheduler reaches in iterations first_step .. last_step (called as the engine calls it) is
 * >= 1, and a multiple of tp with --sequence-parallel (the sequence is split over the tensor-parallel ranks;
 * Megatron fails there with "First dimension of the tensor should be divisible by tensor parallel size"). Returns 1,
 * or 0 with the reason in err. */
int zt_curriculum_check(const zt_curriculum_config *c, int seq_length, int tp, int sequence_parallel,
                        int64_t first_step, int64_t last_step, char *err, size_t errn);

/* Megatron-DeepSpeed's GPTModel.forward truncation: tokens, positions, labels, loss mask, attention mask (the
 * key_start of --reset-attention-mask and the padding) of micro batch `in` cut to their first T positions, row by
 * row, into `buf` (room for in->B * in->T of each); `out` points into it. T >= in->T: out is in. */
typedef struct {
  int32_t *tokens, *positions, *token_types, *labels, *key_start;
  float *loss_mask;
  uint8_t *padding;
  size_t cap; /* elements of each */
} zt_curriculum_batch;
void zt_curriculum_truncate(const zt_batch *in, int T, zt_curriculum_batch *buf, zt_batch *out);
/* Rows [r0, r0 + P) of a batch of GPT rows (tokens, labels and a loss mask; positions and key_start optional) as a
 * batch of P rows: views into `all` when it holds them, else a copy in buf whose rows past all->B are padding (token
 * and label 0, loss mask 0, positions 0.., attention starts 0). seqlen_reshape's passes (train/schedule.c). */
void zt_curriculum_rows(const zt_batch *all, int r0, int P, zt_curriculum_batch *buf, zt_batch *out);
void zt_curriculum_batch_free(zt_curriculum_batch *buf);

#endif
