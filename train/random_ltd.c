/* Random-LTD's configuration checks and DeepSpeed's schedule (see random_ltd.h). */
#include "train/random_ltd.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t zt_random_ltd_value(const zt_random_ltd_config *c, int64_t t) {
  /* scheduler.py's __fixed_root_get_value with root_degree 1 (x ** 1.0 is x), in double as Python's float */
  const double frac = (double)t / (double)c->require_steps;
  int64_t seq = (int64_t)floor(frac * (double)(c->max_value - c->min_value) + (double)c->min_value);
  seq -= seq % c->seq_per_step; /* Python's % on non-negative values */
  return seq < c->max_value ? seq : c->max_value;
}

void zt_random_ltd_init(zt_random_ltd *s, const zt_random_ltd_config *c) {
  s->cfg = c;
  s->current = c->min_value;
  s->curr_step = -1;
}

int64_t zt_random_ltd_update(zt_random_ltd *s, int64_t global_steps, int64_t global_batch, int64_t *layer_tokens) {
  const zt_random_ltd_config *c = s->cfg;
  if (s->current < c->max_value) s->current = zt_random_ltd_value(c, global_steps);
  if (global_steps != s->curr_step) {
    *layer_tokens += global_batch * (s->current * c->random_ltd_layer_num +
                                                c->max_value * (c->total_layer_num - c->random_ltd_layer_num));
    s->curr_step = global_steps;
  }
  return s->current;
}

int64_t zt_random_ltd_actual_seq_length(const zt_random_ltd_config *c, int64_t seq, int num_layers,
                                        int64_t reserved) {
  if (reserved >= seq) return seq;
  return (seq * (num_layers - c->random_ltd_layer_num) + reserved * c->random_ltd_layer_num) / num_layers;
}

int zt_random_ltd_check(const zt_random_ltd_config *c, int num_layers, int seq_length, int causal_model, char *err,
                        size_t n) {
  if (c->total_layer_num != num_layers) {
    snprintf(err, n, "total_layer_num %lld differs from --num-layers %d (the layer-token count takes the model's "
             "layers from it)", (long long)c->total_layer_num, num_layers);
    return 0;
  }
  if (c->random_ltd_layer_num != c->n_layer_id) { /* DeepSpeed's engine.random_ltd_initialize */
    snprintf(err, n, "random_ltd_layer_num %lld must be equivalent to the len of random_ltd_layer_id %d",
             (long long)c->random_ltd_layer_num, c->n_layer_id);
    return 0;
  }
  for (int i = 0; i < c->n_layer_id; i++) {
    if (c->layer_id[i] < 0 || c->layer_id[i] >= num_layers) {
      snprintf(err, n, "random_ltd_layer_id[%d] = %lld is not a layer of the model (0 to %d with --num-layers %d)", i,
               (long long)c->layer_id[i], num_layers - 1, num_layers);
      return 0;
    }
    for (int j = 0; j < i; j++)
      if (c->layer_id[j] == c->layer_id[i]) {
        snprintf(err, n, "random_ltd_layer_id lists layer %lld twice (entries %d and %d)", (long long)c->layer_id[i],
                 j, i);
        return 0;
      }
  }
  if (c->min_value > c->max_value) {
    snprintf(err, n, "random_ltd_schedule.min_value %lld is larger than max_value %lld", (long long)c->min_value,
             (long long)c->max_value);
    return 0;
  }
  if (c->max_value > seq_length) {
    snprintf(err, n, "random_ltd_schedule.max_value %lld is larger than --seq-length %d (the reserved length counts "
             "tokens of a sequence; DeepSpeed's examples set it to the sequence length)", (long long)c->max_value,
             seq_length);
    return 0;
  }
  const int64_t first = zt_random_ltd_value(c, 0);
  if (first < 1) {
    snprintf(err, n, "the reserved length at step 0 is %lld (min_value %lld rounded down to a multiple of "
             "seq_per_step %lld): a layer would run on no token", (long long)first, (long long)c->min_value,
             (long long)c->seq_per_step);
    return 0;
  }
  if (causal_model >= 0 && strcmp(c->model_type, causal_model ? "decoder" : "encoder") != 0) {
    snprintf(err, n, "model_type \"%s\" with a %s model: DeepSpeed would adjust the attention mask of the kept "
             "tokens as for %s; give \"%s\"", c->model_type, causal_model ? "causal (GPT)" : "bidirectional (BERT)",
             causal_model ? "an encoder's padding mask" : "a decoder's causal mask", causal_model ? "decoder" : "encoder");
    return 0;
  }
  return 1;
}
