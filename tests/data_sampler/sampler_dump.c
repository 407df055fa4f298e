/* Test driver for train/data_sampler.c. Usage:
 *   data_sampler_dump CONFIG ONE_EPOCH MBS DP STEPS [RESUME_AT]
 * loads the ds_config (dies with the loader's error), builds the sampler over a dataset of ONE_EPOCH samples and
 * prints, for each of STEPS global batches (train_batch_size of the config), "step <t> <difficulties...> | <ids>"
 * and the micro-batch slices of every data-parallel rank ("  mb <m> rank <r>: <ids>"), after the sampler's own
 * cluster messages. With RESUME_AT, a second sampler replays RESUME_AT steps quietly, and must then reach the first
 * one's digest and draw the same next batch ("resume ok" or a failure).
 *   data_sampler_dump --reshape < lines of "B S1 D1"
 * prints, for each line, seqlen_reshape's re-cut of B sample rows of S1 tokens into rows of D1 (data/gpt_data.h): the
 * rows R, then each row's tokens as their flat indices r x S1 + t in the sample rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/gpt_data.h"
#include "runtime/base/error.h"
#include "train/data_sampler.h"
#include "train/ds_config.h"

static void print_batch(const zt_data_sampler *s, int mbs, int dp) {
  printf("step %lld", (long long)s->step);
  for (int m = 0; m < s->cfg->n_metrics; m++) printf(" %lld", (long long)s->current[m]);
  printf(" |");
  for (int64_t i = 0; i < s->gbs; i++) printf(" %lld", (long long)s->batch[i]);
  printf("\n");
  const int nmb = (int)(s->gbs / ((int64_t)mbs * dp));
  for (int mb = 0; mb < nmb; mb++)
    for (int r = 0; r < dp; r++) {
      const int64_t *ids = zt_data_sampler_slice(s->batch, mb, r, mbs, dp);
      printf("  mb %d rank %d:", mb, r);
      for (int i = 0; i < mbs; i++) printf(" %lld", (long long)ids[i]);
      printf("\n");
    }
}

static int reshape_dump(void) {
  int B, S1, d1;
  while (scanf("%d %d %d", &B, &S1, &d1) == 3) {
    const int R = zt_gpt_reshape_rows(B, S1, d1);
    printf("%d\n", R);
    for (int i = 0; i < R; i++) {
      int src, off;
      zt_gpt_reshape_source(i, B, S1, d1, &src, &off);
      for (int t = 0; t < d1; t++) printf("%s%d", t ? " " : "", src * S1 + off + t);
      printf("\n");
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--reshape")) return reshape_dump();
  zt_check(argc == 6 || argc == 7, "usage", "data_sampler_dump CONFIG ONE_EPOCH MBS DP STEPS [RESUME_AT]");
  zt_ds_config c;
  zt_ds_config_load(&c, argv[1]);
  zt_check(c.data_sampling.enabled, "data_sampler_dump", "%s: data sampling is not enabled", argv[1]);
  const int64_t one_epoch = atoll(argv[2]), steps = atoll(argv[5]);
  const int mbs = atoi(argv[3]), dp = atoi(argv[4]);
  const int64_t gbs = (int64_t)c.train_batch_size.value;
  zt_data_sampler s;
  zt_data_sampler_init(&s, &c.data_sampling, one_epoch, gbs);
  const int64_t resume = argc == 7 ? atoll(argv[6]) : -1;
  uint64_t digest = 0;
  int64_t *next = zt_malloc((size_t)gbs * sizeof *next, "batch");
  for (int64_t t = 0; t < steps; t++) {
    zt_data_sampler_next(&s);
    print_batch(&s, mbs, dp);
    if (s.step == resume) digest = zt_data_sampler_digest(&s);
    if (s.step == resume + 1) memcpy(next, s.batch, (size_t)gbs * sizeof *next);
  }
  if (resume > 0) {
    zt_data_sampler r;
    zt_data_sampler_init(&r, &c.data_sampling, one_epoch, gbs);
    r.quiet = 1;
    while (r.step < resume) zt_data_sampler_next(&r);
    const int same_state = zt_data_sampler_digest(&r) == digest;
    fflush(stdout);
    zt_data_sampler_next(&r);
    printf("resume %s\n", same_state && !memcmp(next, r.batch, (size_t)gbs * sizeof *next) ? "ok" : "FAILED");
    zt_data_sampler_free(&r);
  }
  free(next);
  zt_data_sampler_free(&s);
  zt_ds_config_free(&c);
  return 0;
}
