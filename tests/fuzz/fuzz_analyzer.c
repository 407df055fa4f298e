/* libFuzzer harness: analyze_data's reduce (data/analyzer.c) over an arbitrary map result. Input: a mode byte (bit 0:
 * vocab_rarity, a single value per sample, else total_vocab_freq over 8 token ids), a sample-count byte (1..64), a
 * reduce-thread byte (1..4), a 4-byte little-endian length L, then L bytes of .idx and the .bin of worker 0 thread 0's
 * file. The reduce must refuse it naming the file, or merge it; never crash or read outside what it read. */
#define _GNU_SOURCE
#include <ftw.h>

#include "data/analyzer.h"
#include "tests/fuzz/fuzz.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 7) return 0;
  const int single = data[0] & 1;
  const int64_t n = data[1] % 64 + 1;
  const int R = data[2] % 4 + 1;
  uint32_t idx_len = (uint32_t)data[3] | (uint32_t)data[4] << 8 | (uint32_t)data[5] << 16 | (uint32_t)data[6] << 24;
  data += 7, size -= 7;
  if (idx_len > size) idx_len = (uint32_t)size;
  char save[128], dir[256], pre[320];
  snprintf(save, sizeof save, "/tmp/zt_fuzz_%d/save", (int)getpid());
  zt_fuzz_file("x", data, 0); /* creates /tmp/zt_fuzz_<pid> */
  nftw(save, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  const char *metric = single ? "vocab_rarity" : "total_vocab_freq";
  snprintf(dir, sizeof dir, "%s/%s/worker0_thread0", save, metric);
  mkdir(save, 0700);
  snprintf(pre, sizeof pre, "%s/%s", save, metric);
  mkdir(pre, 0700);
  mkdir(dir, 0700);
  snprintf(pre, sizeof pre, "%s/%s_%s", dir, metric, single ? "sample_to_metric" : "metric_value");
  char path[400];
  snprintf(path, sizeof path, "%s.idx", pre);
  FILE *f = fopen(path, "wb");
  if (!f || (idx_len && fwrite(data, 1, idx_len, f) != idx_len) || fclose(f)) abort();
  snprintf(path, sizeof path, "%s.bin", pre);
  f = fopen(path, "wb");
  if (!f || (size > idx_len && fwrite(data + idx_len, 1, size - idx_len, f) != size - idx_len) || fclose(f)) abort();
  zt_analyzer a = {.save = save, .num_metrics = 1, .metrics = {single ? ZT_METRIC_VOCAB_RARITY
                                                                       : ZT_METRIC_TOTAL_VOCAB_FREQ},
                   .num_workers = 1, .num_threads = 1, .num_threads_reduce = R, .batch_size = 1, .num_samples = n,
                   .vocab_len = 8, .max_tokens = 1};
  ZT_FUZZ_TRY { zt_analyzer_reduce(&a); }
  return 0;
}
