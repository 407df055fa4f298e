/* GPT dataset index building on a synthetic dataset of --tokens tokens (default 1e9): time and
 * peak memory of zt_gpt_build_indices (doc_idx, sample_idx, shuffle_idx exactly as Megatron builds
 * them), against a bound measured in the same run (streaming the same number of bytes through
 * memory once, i.e. memcpy of the arrays), and the memory against the index arrays themselves in
 * Megatron's dtypes (int32 doc_idx, int64 sample_idx, uint32 shuffle_idx).
 *   bench_gpt_index [--tokens N] [--seq S] [--epochs-needed E] [--dir DIR]
 * The .idx is written for real (sizes are random in 1..1023, mean 512); the .bin is a sparse file
 * of the right length (index building never reads tokens). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/gpt_dataset.h"
#include "data/indexed_dataset.h"
#include "runtime/base/error.h"
#include "runtime/base/memplan.h"
#include "runtime/base/timer.h"


static void write_all(int fd, const void *p, size_t n, const char *path) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    zt_check(w > 0, "bench", "writing %s failed", path);
    c += w;
    n -= (size_t)w;
  }
}

/* Writes prefix.idx / prefix.bin with random document sizes summing to about `tokens`. */
static int64_t make_dataset(const char *prefix, int64_t tokens) { /* prefix: < 4096 bytes */
  int64_t cap = tokens / 256 + 16, n = 0, total = 0;
  int32_t *sizes = zt_malloc((size_t)cap * 4, "sizes");
  uint64_t x = 88172645463325252ull;
  while (total < tokens) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    int32_t s = (int32_t)(1 + x % 1023);
    if (total + s > tokens) s = (int32_t)(tokens - total);
    sizes[n++] = s;
    total += s;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s.idx", prefix);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  zt_check(fd >= 0, "bench", "cannot create %s", path);
  uint8_t hdr[34] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  uint64_t version = 1, items = (uint64_t)n, docs = (uint64_t)n + 1;
  memcpy(hdr + 9, &version, 8);
  hdr[17] = ZT_IDX_UINT16;
  memcpy(hdr + 18, &items, 8);
  memcpy(hdr + 26, &docs, 8);
  write_all(fd, hdr, sizeof hdr, path);
  write_all(fd, sizes, (size_t)n * 4, path);
  int64_t *buf = zt_malloc((size_t)(n + 1) * 8, "pointers");
  int64_t off = 0;
  for (int64_t i = 0; i < n; i++) { buf[i] = off; off += 2 * (int64_t)sizes[i]; }
  write_all(fd, buf, (size_t)n * 8, path);
  for (int64_t i = 0; i <= n; i++) buf[i] = i;
  write_all(fd, buf, (size_t)(n + 1) * 8, path);
  close(fd);
  snprintf(path, sizeof path, "%s.bin", prefix);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  zt_check(fd >= 0 && ftruncate(fd, (off_t)(2 * total)) == 0, "bench", "cannot create %s", path);
  close(fd);
  free(sizes);
  free(buf);
  return n;
}

int main(int argc, char **argv) {
  int64_t tokens = 1000000000;
  int seq = 2048;
  double epochs_needed = 1.0;
  const char *dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--tokens") == 0) tokens = (int64_t)atof(argv[i + 1]);
    else if (strcmp(argv[i], "--seq") == 0) seq = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--epochs-needed") == 0) epochs_needed = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    else zt_fatal("bench", "unknown argument %s", argv[i]);
  }
  char prefix[4096];
  snprintf(prefix, sizeof prefix, "%s/zt_index_bench_%ld", dir, (long)getpid());
  double t0 = zt_now();
  int64_t ndocs = make_dataset(prefix, tokens);
  printf("synthetic dataset: %lld tokens in %lld documents (written in %.1f s)\n", (long long)tokens,
         (long long)ndocs, zt_now() - t0);

  t0 = zt_now();
  zt_indexed_dataset d;
  zt_indexed_open(&d, prefix);
  double t_open = zt_now() - t0;
  /* the training split of Megatron's default --split 969,30,1 */
  int64_t b[4];
  zt_split_bounds("969, 30, 1", d.num_items, b);
  int64_t tpe = 0;
  for (int64_t k = b[0]; k < b[1]; k++) tpe += zt_indexed_size(&d, k);
  int64_t per_epoch = (tpe - 1) / seq, num_samples = (int64_t)(epochs_needed * (double)per_epoch);
  zt_gpt_dataset_spec sp = {.prefix = prefix, .name = "train", .doc_begin = b[0], .doc_end = b[1],
                            .num_samples = num_samples, .seq_length = seq, .seed = 1234, .split_string = "969, 30, 1"};
  zt_gpt_dataset ds;
  memset(&ds, 0, sizeof ds);
  ds.data = &d;
  ds.seq_length = seq;
  snprintf(ds.name, sizeof ds.name, "train");
  ds.num_epochs = zt_gpt_num_epochs(tpe, seq, num_samples);
  long anon0 = zt_proc_status_kib("RssAnon"), hwm0 = zt_proc_status_kib("VmHWM");
  t0 = zt_now();
  zt_gpt_build_indices(&ds, &d, &sp, tpe);
  double t_build = zt_now() - t0;
  long anon1 = zt_proc_status_kib("RssAnon"), hwm1 = zt_proc_status_kib("VmHWM");

  const double arrays = 4.0 * (double)ds.doc_idx_len + 16.0 * (double)(ds.total_samples + 1) +
                        4.0 * (double)ds.num_samples; /* Megatron's dtypes */
  /* bound: stream the arrays' bytes once (read + write), best of 3 */
  size_t nb = (size_t)arrays;
  char *src = zt_malloc(nb, "bound"), *dst = zt_malloc(nb, "bound");
  memset(src, 1, nb);
  memset(dst, 0, nb);
  double t_bound = 1e30;
  for (int r = 0; r < 3; r++) {
    double s = zt_now();
    memcpy(dst, src, nb);
    double e = zt_now() - s;
    if (e < t_bound) t_bound = e;
  }
  printf("train split: %lld documents, %lld tokens per epoch, %lld samples requested (%.2f epochs), seq %d\n",
         (long long)(b[1] - b[0]), (long long)tpe, (long long)num_samples, epochs_needed, seq);
  printf("index arrays: %lld epochs, doc_idx %lld, sample_idx %lld x 2, shuffle_idx %lld: %.1f MiB in "
         "Megatron's dtypes\n", (long long)ds.num_epochs, (long long)ds.doc_idx_len, (long long)ds.total_samples + 1,
         (long long)ds.num_samples, arrays / 1048576.0);
  printf("open + validate the .idx: %.3f s\n", t_open);
  printf("build: %.3f s (bound: memcpy of the arrays %.4f s; build / bound = %.0fx)\n", t_build, t_bound,
         t_build / t_bound);
  printf("memory: anonymous +%.1f MiB (= %.2fx the arrays), peak RSS +%.1f MiB incl. the mapped .idx pages "
         "(%.1f MiB file)\n", (anon1 - anon0) / 1024.0, (anon1 - anon0) * 1024.0 / arrays, (hwm1 - hwm0) / 1024.0,
         d.idx_bytes / 1048576.0);
  char path[4200];
  snprintf(path, sizeof path, "%s.idx", prefix);
  unlink(path);
  snprintf(path, sizeof path, "%s.bin", prefix);
  unlink(path);
  zt_indexed_close(&d);
  return 0;
}
