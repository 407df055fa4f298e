/* Test driver for train/rampup.c (test_rampup_formula.py): reads settings "start increment samples global micro_batch
 * dp train_samples queries" one per line from stdin and prints, for each, one line:
 *   <train_iters> | <batch of every step, run-length coded as batch*count> | <zt_rampup_batches> | <reached>
 * where the steps' batches come from zt_rampup_batch(consumed) step after step, and <reached> is a string of 0/1,
 * zt_rampup_reaches(n) for n = 0 .. queries-1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/rampup.h"

int main(void) {
  long long start, inc, samples, gbs, mbs, dp, train, queries;
  while (scanf("%lld %lld %lld %lld %lld %lld %lld %lld", &start, &inc, &samples, &gbs, &mbs, &dp, &train,
               &queries) == 8) {
    char w[3][32];
    snprintf(w[0], sizeof w[0], "%lld", start);
    snprintf(w[1], sizeof w[1], "%lld", inc);
    snprintf(w[2], sizeof w[2], "%lld", samples);
    const char *words[3] = {w[0], w[1], w[2]};
    zt_args a;
    memset(&a, 0, sizeof a);
    a.rampup_batch_size = (zt_strlist){3, words};
    a.global_batch_size = (int)gbs;
    a.micro_batch_size = (int)mbs;
    a.data_parallel_size = (int)dp;
    a.train_samples = train;
    a.train_iters = -1;
    zt_rampup r;
    zt_rampup_init(&r, &a, "--global-batch-size");
    const int64_t iters = zt_rampup_train_iters(&r, train);
    printf("%lld |", (long long)iters);
    int64_t consumed = 0, prev = -1, run = 0;
    for (int64_t i = 0; i < iters; i++) {
      const int64_t b = zt_rampup_batch(&r, consumed);
      if (b != prev && run) printf(" %lld*%lld", (long long)prev, (long long)run), run = 0;
      prev = b;
      run++;
      consumed += b;
    }
    if (run) printf(" %lld*%lld", (long long)prev, (long long)run);
    printf(" |");
    const int n = zt_rampup_batches(&r, NULL, 0);
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)n);
    zt_rampup_batches(&r, sizes, n);
    for (int i = 0; i < n; i++) printf(" %lld", (long long)sizes[i]);
    free(sizes);
    printf(" | ");
    for (long long q = 0; q < queries; q++) putchar(zt_rampup_reaches(&r, q) ? '1' : '0');
    putchar('\n');
  }
  return 0;
}
