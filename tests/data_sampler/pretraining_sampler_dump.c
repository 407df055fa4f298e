/* Test driver for data/pretraining_sampler.c. Usage:
 *   pretraining_sampler_dump --randperm N SEED
 * prints torch.randperm(N) under manual_seed(SEED), one line;
 *   pretraining_sampler_dump cyclic|repeat SHARDING TOTAL MBS DP START STEPS
 * prints, for each data-parallel rank r and each of its first STEPS micro batches j (the one after START + j x MBS x
 * DP consumed samples), "rank <r> mb <j>: <ids>"; then asks every rank's sampler for the same micro batches again in
 * reverse order (the pipeline's recompute asks for earlier ones) and prints "replay ok" when they match. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/pretraining_sampler.h"
#include "runtime/base/error.h"

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--randperm")) {
    const int64_t n = atoll(argv[2]);
    int64_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    zt_torch_randperm((uint64_t)atoll(argv[3]), n, p);
    for (int64_t i = 0; i < n; i++) printf("%s%lld", i ? " " : "", (long long)p[i]);
    printf("\n");
    free(p);
    return 0;
  }
  zt_check(argc == 8, "usage", "pretraining_sampler_dump cyclic|repeat SHARDING TOTAL MBS DP START STEPS");
  const int cyclic = !strcmp(argv[1], "cyclic"), sharding = atoi(argv[2]), mbs = atoi(argv[4]), dp = atoi(argv[5]);
  const int64_t total = atoll(argv[3]), start = atoll(argv[6]), steps = atoll(argv[7]), step = (int64_t)mbs * dp;
  int64_t *seen = malloc((size_t)(dp * steps * mbs) * sizeof(int64_t));
  for (int r = 0; r < dp; r++) {
    zt_pretraining_sampler s;
    zt_pretraining_sampler_init(&s, cyclic, sharding, "training", total, mbs, dp, r, start);
    for (int64_t j = 0; j < steps; j++) {
      const int64_t *ids = zt_pretraining_sampler_ids(&s, start + j * step);
      printf("rank %d mb %lld:", r, (long long)j);
      for (int i = 0; i < mbs; i++) printf(" %lld", (long long)ids[i]);
      printf("\n");
      memcpy(seen + ((size_t)r * steps + j) * mbs, ids, (size_t)mbs * sizeof(int64_t));
    }
    for (int64_t j = steps - 1; j >= 0; j--)
      zt_check(!memcmp(zt_pretraining_sampler_ids(&s, start + j * step), seen + ((size_t)r * steps + j) * mbs,
                       (size_t)mbs * sizeof(int64_t)), "replay", "rank %d micro batch %lld differs when asked again",
               r, (long long)j);
    zt_pretraining_sampler_free(&s);
  }
  printf("replay ok\n");
  free(seen);
  return 0;
}
