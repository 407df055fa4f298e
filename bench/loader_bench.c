/* What --num-workers would hide: the time pretrain_gpt spends producing GPT micro batches in the training process
 * (Megatron's sample order through the index arrays, reads from the memory-mapped .bin, the loss mask and position
 * ids), per micro batch, against a bound measured in the same run (copying the same bytes once with memcpy) and
 * against the training iteration time the script measures for the same data (bench/loader.sh).
 *   bench_loader --data-path PREFIX [--seq S] [--micro-batch B] [--batches N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/gpt_provider.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

int main(int argc, char **argv) {
  const char *prefix = NULL;
  int seq = 1024, mb = 4;
  long long batches = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--data-path")) prefix = argv[i + 1];
    else if (!strcmp(argv[i], "--seq")) seq = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--micro-batch")) mb = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batches")) batches = atoll(argv[i + 1]);
    else zt_fatal("bench_loader", "unknown argument %s", argv[i]);
  }
  zt_check(prefix && seq > 0 && mb > 0 && batches > 0, "bench_loader", "usage: bench_loader --data-path PREFIX "
           "[--seq S] [--micro-batch B] [--batches N]");
  const char *words[1] = {prefix};
  zt_tokenizer *tok = zt_tokenizer_create(&(zt_tokenizer_spec){.kind = ZT_TOK_NULL, .vocab_size = 50257});
  const zt_data_setup s = {.data_path_n = 1, .data_path = words, .split = "100,0,0", .micro_batch = mb,
                           .seq_length = seq, .seed = 1234, .num_samples = {(batches + 1) * mb, 0, 0},
                           .vocab_size = zt_tokenizer_vocab_size(tok), .tokenizer = tok,
                           .tokenizer_name = "NullTokenizer"};
  zt_data_provider *p = zt_gpt_provider_create(&s);
  zt_batch b;
  memset(&b, 0, sizeof b);
  zt_data_load(p, 0, 0, &b); /* first touch of the pages and the arrays */
  double t0 = zt_now();
  for (long long i = 0; i < batches; i++) zt_data_load(p, 0, (uint64_t)(i * mb), &b);
  const double load = (zt_now() - t0) / (double)batches;
  /* bound: the batch's token bytes (inputs and labels, int32) copied once from a buffer of the run's size */
  const size_t bytes = (size_t)mb * (size_t)(seq + 1) * 4 * 2;
  char *src = malloc(bytes * 64), *dst = malloc(bytes);
  memset(src, 1, bytes * 64);
  t0 = zt_now();
  volatile char sink = 0; /* keeps the copies */
  for (long long i = 0; i < batches; i++) {
    memcpy(dst, src + (size_t)(i % 64) * bytes, bytes);
    sink ^= dst[(size_t)i % bytes];
  }
  const double copy = (zt_now() - t0) / (double)batches;
  (void)sink;
  printf("micro batch %d x %d tokens: %.1f us to produce (%.2f us per sample), memcpy bound %.1f us (x%.1f)\n", mb,
         seq, load * 1e6, load * 1e6 / mb, copy * 1e6, load / (copy > 0 ? copy : 1e-12));
  printf("loader_seconds_per_micro_batch %.9f\n", load);
  free(src);
  free(dst);
  zt_data_free(p);
  zt_tokenizer_free(tok);
  return 0;
}
