/* Megatron's BlendableDataset: several datasets mixed by weight. For output sample k the member
 * with the largest error w_i * max(k, 1) - count_i is chosen (first index wins ties) and gives its
 * next sample; deterministic, no RNG (helpers.cpp build_blending_indices). */
#ifndef ZT_BLENDABLE_DATASET_H
#define ZT_BLENDABLE_DATASET_H

#include <stdint.h>

#define ZT_BLEND_MAX_DATASETS 254

typedef struct {
  int num_datasets;
  int64_t size;
  uint8_t *dataset_index;         /* [size] */
  int64_t *dataset_sample_index;  /* [size] */
} zt_blend_index;

/* Normalizes weights as BlendableDataset does (divided by numpy.sum) and builds the indices;
 * callers pass the weights already normalized by zt_blend_weights_and_samples, as Megatron does. */
void zt_blend_build(zt_blend_index *b, const double *weights, int num_datasets, int64_t size);
void zt_blend_free(zt_blend_index *b);
/* zt_blend_build for one split of a --data-path blend, then checks that every blended sample exists in its member
 * (sizes[m] samples; prefixes name them in the error). */
void zt_blend_build_split(zt_blend_index *b, const double *weights, int num_datasets, int64_t size,
                          const int64_t *sizes, const char *const *prefixes, const char *split_name);

/* Megatron's get_datasets_weights_and_num_samples: normalized weights and, per dataset,
 * ceil(num_samples * w_i * 1.005) for each of the 3 splits. */
void zt_blend_weights_and_samples(const double *weights, int num_datasets, const int64_t num_samples[3],
                                  double *normalized, int64_t (*per_dataset)[3]);

#endif
