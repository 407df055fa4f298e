/* Megatron's random (cyclic) sampler and the repeated sequential one: data/pretraining_sampler.h. */
#include "data/pretraining_sampler.h"

#include <stdlib.h>

#include "data/numpy_random.h"
#include "runtime/base/error.h"

void zt_torch_randperm(uint64_t seed, int64_t n, int64_t *out) {
  zt_np_random r; /* at::mt19937(seed) seeds as NumPy's RandomState does (init_genrand of the low 32 bits) */
  zt_np_random_seed(&r, (uint32_t)seed);
  if (n < (int64_t)(UINT32_MAX / 20)) { /* randperm_cpu's "small n" branch */
    for (int64_t i = 0; i < n; i++) out[i] = i;
    for (int64_t i = 0; i + 1 < n; i++) {
      const int64_t z = (int64_t)(zt_np_random_u32(&r) % (uint64_t)(n - i)), t = out[i];
      out[i] = out[z + i];
      out[z + i] = t;
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) { /* inside-out, random64(): the first 32-bit draw is the high half */
    const int64_t z = (int64_t)(zt_np_random_u64(&r) % (uint64_t)(i + 1));
    out[i] = out[z];
    out[z] = i;
  }
}

static int64_t step_of(const zt_pretraining_sampler *s) { return (int64_t)s->mbs * s->dp; }

/* One __iter__ of the sampler from `pos` consumed samples: how many micro batches this rank's pass yields. */
static void start_pass(zt_pretraining_sampler *s, int64_t pos) {
  const int64_t step = step_of(s);
  s->pass_start = pos;
  if (!s->cyclic) { /* MegatronPretrainingSampler never advances its consumed_samples: each pass starts at `start` */
    s->pass_batches = (s->total - s->start) / step;
    return;
  }
  const int64_t active = s->total - s->total % step;
  s->epoch = pos / active;
  s->cur = pos % active;
  if (s->sharding) {
    const int64_t bucket = s->total / step * s->mbs;
    s->pass_batches = (bucket - s->cur / s->dp) / s->mbs;
  } else { /* idx_range_active[rank::dp] of the epoch's (total // mbs) x mbs permutation */
    const int64_t left = s->total / s->mbs * s->mbs - s->cur - s->rank;
    s->pass_batches = (left > 0 ? (left + s->dp - 1) / s->dp : 0) / s->mbs;
  }
}

void zt_pretraining_sampler_init(zt_pretraining_sampler *s, int cyclic, int sharding, const char *split, int64_t total,
                                 int mbs, int dp, int rank, int64_t start) {
  *s = (zt_pretraining_sampler){.cyclic = cyclic, .sharding = sharding, .total = total, .mbs = mbs, .dp = dp,
                                .rank = rank, .start = start, .perm_epoch = -1};
  const int64_t step = step_of(s);
  if (cyclic)
    zt_check(total >= step, "dataset", "--dataloader-type cyclic: the %s split holds %lld samples, fewer than one "
             "micro batch on every data-parallel rank (%d x %d = %lld): Megatron's random sampler would divide by "
             "zero", split, (long long)total, mbs, dp, (long long)step);
  else
    zt_check(total - start >= step, "dataset", "--repeated-dataloader: the %s split holds %lld samples and the run "
             "has consumed %lld of them: fewer than one micro batch on every data-parallel rank (%d x %d = %lld) are "
             "left to repeat", split, (long long)total, (long long)start, mbs, dp, (long long)step);
  s->ids = zt_malloc((size_t)mbs * sizeof(int64_t), "sampler ids");
  start_pass(s, start);
}

const int64_t *zt_pretraining_sampler_ids(zt_pretraining_sampler *s, int64_t consumed) {
  const int64_t step = step_of(s);
  zt_check(consumed >= s->start && (consumed - s->start) % step == 0, "internal error",
           "sampler asked for the micro batch after %lld samples (start %lld, slice %lld)", (long long)consumed,
           (long long)s->start, (long long)step);
  if (consumed < s->pass_start) start_pass(s, s->start); /* an earlier micro batch again: replay from the start */
  while (consumed >= s->pass_start + s->pass_batches * step) start_pass(s, s->pass_start + s->pass_batches * step);
  const int64_t k = (consumed - s->pass_start) / step;
  if (!s->cyclic) {
    for (int i = 0; i < s->mbs; i++) s->ids[i] = s->start + k * step + (int64_t)s->rank * s->mbs + i;
    return s->ids;
  }
  const int64_t bucket = s->sharding ? s->total / step * s->mbs : s->total / s->mbs * s->mbs;
  if (s->perm_epoch != s->epoch) {
    if (!s->perm) s->perm = zt_malloc((size_t)bucket * sizeof(int64_t), "the epoch's permutation");
    zt_torch_randperm((uint64_t)s->epoch, bucket, s->perm);
    s->perm_epoch = s->epoch;
  }
  for (int i = 0; i < s->mbs; i++)
    s->ids[i] = s->sharding ? s->perm[s->cur / s->dp + k * s->mbs + i] + (int64_t)s->rank * bucket
                            : s->perm[s->cur + (k * s->mbs + i) * s->dp + s->rank];
  return s->ids;
}

void zt_pretraining_sampler_free(zt_pretraining_sampler *s) {
  free(s->perm);
  free(s->ids);
  s->perm = s->ids = NULL;
}
