/* DeepSpeed's random-LTD (random layer token drop; the ds_config's data_efficiency.data_routing.random_ltd block,
 * deepspeed/runtime/data_pipeline/data_routing/scheduler.py) as Megatron-DeepSpeed's --random-ltd uses it: the
 * configuration, DeepSpeed's fixed_linear schedule of the reserved length, the consumed layer-tokens count, and the
 * checks of a configuration against the model flags. The layers it names run each training micro batch on a random
 * subset of each sample's tokens (models/transformer/random_ltd.h); docs/data_efficiency.md. */
#ifndef ZT_TRAIN_RANDOM_LTD_H
#define ZT_TRAIN_RANDOM_LTD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { ZT_RANDOM_LTD_MAX_LAYERS = 1024 }; /* random_ltd_layer_id: at most this many entries */

typedef struct {
  bool enabled;                      /* data_efficiency.enabled, data_routing.enabled and random_ltd.enabled */
  int64_t total_layer_num, random_ltd_layer_num;
  int n_layer_id;
  int64_t layer_id[ZT_RANDOM_LTD_MAX_LAYERS];
  char model_type[16];               /* "decoder" (GPT) or "encoder" */
  char hidden_state_order[16];       /* "batch_seq_dim" or "seq_batch_dim": a PyTorch layout, no effect here */
  char model_mask_name[64];          /* the layer's mask argument in PyTorch: no effect here */
  int64_t min_value, max_value;      /* random_ltd_schedule */
  int64_t require_steps, seq_per_step;
} zt_random_ltd_config;

/* RandomLTDScheduler's state: the current reserved length (starts at min_value) and the last step counted. Its
 * consumed layer tokens live with the caller (the train state, which checkpoints save). */
typedef struct {
  const zt_random_ltd_config *cfg;
  int64_t current, curr_step;
} zt_random_ltd;

/* get_value(t) of the fixed_linear schedule: floor(t / require_steps * (max - min) + min), down to a multiple of
 * seq_per_step, at most max_value (no state). */
int64_t zt_random_ltd_value(const zt_random_ltd_config *c, int64_t t);
void zt_random_ltd_init(zt_random_ltd *s, const zt_random_ltd_config *c);
/* update_seq(global_steps, global batch size): the reserved length follows the schedule while below max_value;
 * a new step adds batch * (current * random_ltd_layer_num + max_value * (total_layer_num - random_ltd_layer_num))
 * to *layer_tokens. Returns the reserved length. */
int64_t zt_random_ltd_update(zt_random_ltd *s, int64_t global_steps, int64_t global_batch, int64_t *layer_tokens);
/* Megatron-DeepSpeed's actual_seq_length after a step: (seq * (L - n) + reserved * n) // L when reserved < seq,
 * else seq (L = --num-layers, n = random_ltd_layer_num). */
int64_t zt_random_ltd_actual_seq_length(const zt_random_ltd_config *c, int64_t seq, int num_layers,
                                        int64_t reserved);

/* The checks against the model flags, done at start-up before any work: returns 1, or 0 with one line in err:
 * total_layer_num against --num-layers, the layer ids (each in [0, num_layers), no repeats, as many as
 * random_ltd_layer_num: DeepSpeed's ValueError text), min_value <= max_value, max_value <= --seq-length, the model
 * type (decoder for a causal model, encoder for a bidirectional one; causal_model -1: not known yet, unchecked). */
int zt_random_ltd_check(const zt_random_ltd_config *c, int num_layers, int seq_length, int causal_model, char *err,
                        size_t n);

#endif
