/* Blending indices (see blendable_dataset.h). */
#include "data/blendable_dataset.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/base/error.h"

void zt_blend_weights_and_samples(const double *weights, int num_datasets, const int64_t num_samples[3],
                                  double *normalized, int64_t (*per_dataset)[3]) {
  double sum = 0;
  for (int i = 0; i < num_datasets; i++) sum += weights[i];
  for (int i = 0; i < num_datasets; i++) {
    normalized[i] = weights[i] / sum;
    for (int s = 0; s < 3; s++) per_dataset[i][s] = (int64_t)ceil((double)num_samples[s] * normalized[i] * 1.005);
  }
}

/* numpy.sum of a float64 array (pairwise summation: 8 accumulators in blocks of up to 128), so
 * that the normalized weights match Megatron's to the last bit. */
static double np_pairwise_sum(const double *a, int n) {
  if (n < 8) {
    double r = 0.0;
    for (int i = 0; i < n; i++) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; j++) r[j] = a[j];
    int i;
    for (i = 8; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; j++) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  int n2 = n / 2;
  n2 -= n2 % 8;
  return np_pairwise_sum(a, n2) + np_pairwise_sum(a + n2, n - n2);
}

void zt_blend_build(zt_blend_index *b, const double *weights, int num_datasets, int64_t size) {
  zt_check(num_datasets >= 1 && num_datasets <= ZT_BLEND_MAX_DATASETS, "--data-path",
           "%d datasets to blend; between 1 and %d are supported", num_datasets, ZT_BLEND_MAX_DATASETS);
  double w[ZT_BLEND_MAX_DATASETS];
  const double sum = np_pairwise_sum(weights, num_datasets);
  for (int i = 0; i < num_datasets; i++) w[i] = weights[i] / sum;
  int64_t count[ZT_BLEND_MAX_DATASETS] = {0};
  b->num_datasets = num_datasets;
  b->size = size;
  b->dataset_index = zt_malloc((size_t)(size > 0 ? size : 1), "blend dataset_index");
  b->dataset_sample_index = zt_malloc((size_t)(size > 0 ? size : 1) * sizeof(int64_t), "blend sample index");
  for (int64_t k = 0; k < size; k++) {
    const double kd = k > 1 ? (double)k : 1.0;
    int best = 0;
    double best_err = w[0] * kd - (double)count[0];
    for (int i = 1; i < num_datasets; i++) {
      double err = w[i] * kd - (double)count[i];
      if (err > best_err) {
        best_err = err;
        best = i;
      }
    }
    b->dataset_index[k] = (uint8_t)best;
    b->dataset_sample_index[k] = count[best]++;
  }
}

void zt_blend_free(zt_blend_index *b) {
  free(b->dataset_index);
  free(b->dataset_sample_index);
  b->dataset_index = NULL;
  b->dataset_sample_index = NULL;
}

void zt_blend_build_split(zt_blend_index *b, const double *weights, int num_datasets, int64_t size,
                          const int64_t *sizes, const char *const *prefixes, const char *split_name) {
  zt_blend_build(b, weights, num_datasets, size);
  for (int64_t j = 0; j < size; j++) {
    const int m = b->dataset_index[j];
    zt_check(b->dataset_sample_index[j] < sizes[m], "dataset", "blended %s sample %lld needs sample %lld of %s, "
             "which has %lld", split_name, (long long)j, (long long)b->dataset_sample_index[j], prefixes[m],
             (long long)sizes[m]);
  }
}
