/* Megatron's pretraining samplers beyond the sequential one, as data/provider.h's load_ids consumes them: which
 * dataset samples a data-parallel rank's micro batch holds when the run has consumed `c` samples of a split.
 *  - --dataloader-type cyclic: MegatronPretrainingRandomSampler under training.py's cyclic_iter: each epoch a
 *    torch.randperm order seeded by the epoch number, sharded (each rank shuffles its own contiguous bucket) or not
 *    (--no-data-sharding: one permutation, ranks strided through it);
 *  - --repeated-dataloader with the sequential sampler: DeepSpeed's RepeatingLoader around MegatronPretrainingSampler,
 *    which replays the split from the loader's first sample once it runs out.
 * Both depend on the consumed count when the loader was built (Megatron builds it once, after --load), as
 * Megatron's do: a resumed run's passes start there. */
#ifndef ZT_PRETRAINING_SAMPLER_H
#define ZT_PRETRAINING_SAMPLER_H

#include <stdint.h>

/* torch.randperm(n, generator=g) on the CPU with g = torch.Generator(); g.manual_seed(seed): Fisher-Yates over
 * MT19937 32-bit draws below 2^32/20 elements, the inside-out variant over 64-bit draws from there. */
void zt_torch_randperm(uint64_t seed, int64_t n, int64_t *out);

typedef struct {
  int cyclic;              /* 1: the random sampler; 0: the sequential one, repeated */
  int sharding;            /* cyclic: data_sharding (not --no-data-sharding) */
  int64_t total;           /* len(dataset) */
  int mbs, dp, rank;
  int64_t start;           /* consumed samples when the loader was built */
  /* the current pass (one __iter__ of the sampler): its first consumed count and the micro batches it yields */
  int64_t pass_start, pass_batches;
  /* cyclic: the pass's epoch, its offset in it, and that epoch's permutation */
  int64_t epoch, cur;
  int64_t *perm, perm_epoch;
  int64_t *ids;            /* the last micro batch's mbs ids */
} zt_pretraining_sampler;

/* Checks the split can feed the sampler (names `split` and the numbers when not) and starts it at `start`. */
void zt_pretraining_sampler_init(zt_pretraining_sampler *s, int cyclic, int sharding, const char *split, int64_t total,
                                 int mbs, int dp, int rank, int64_t start);
/* The mbs dataset ids of this rank's micro batch that starts after `consumed` samples of the split (the global
 * count: a multiple of mbs x dp at or past the start). Valid until the next call. */
const int64_t *zt_pretraining_sampler_ids(zt_pretraining_sampler *s, int64_t consumed);
void zt_pretraining_sampler_free(zt_pretraining_sampler *s);

#endif
