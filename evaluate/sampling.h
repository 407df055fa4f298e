/* Next-token choice of text generation (Megatron-DeepSpeed's megatron/text_generation_utils.py): greedy (argmax, the
 * first of equal maxima as torch.argmax), or sampling: logits / temperature in fp32, then top_k_logits (top-k: every
 * logit below the k-th largest set to -inf, ties kept; top-p: the logits sorted descending, the cumulative softmax,
 * tokens whose cumulative probability exceeds p removed after shifting the mask one place right so the first token
 * above p stays), softmax and one multinomial draw. The draw is a Philox uniform keyed by (seed, ZT_RNG_SAMPLE,
 * stream, index): the same choices in any layout, never torch's bits. */
#ifndef ZT_SAMPLING_H
#define ZT_SAMPLING_H

#include <stdint.h>

typedef struct {
  int greedy;
  float temperature; /* > 0 */
  int top_k;         /* 0: off */
  float top_p;       /* 0: off */
  uint64_t seed;
} zt_sampling;

/* top_k_logits on logits[V] in place (after the temperature); work: V ints and V floats of scratch. */
void zt_top_k_logits(float *logits, int V, int top_k, float top_p, int *order, float *work);
/* The next token from logits[V] (modified in place when sampling); order/work: V ints, V floats. */
int32_t zt_sample_token(const zt_sampling *s, float *logits, int V, uint64_t stream, uint64_t index, int *order,
                        float *work);

#endif
