/* libFuzzer harness: the GPT index-cache reader (data/gpt_dataset.c's load of {md5}_doc_idx.npy, _sample_idx.npy and
 * _shuffle_idx.npy, through the .npy reader) against a fixed 24-document dataset built at start-up. Input: two
 * 4-byte little-endian lengths A and B, then A bytes of doc_idx.npy, B bytes of sample_idx.npy and the rest as
 * shuffle_idx.npy, written over the cache that start-up built (its .dsc stays, so the cache is loaded, not rebuilt).
 * An accepted cache must give every sample (zt_gpt_dataset_get) without a crash or an out-of-bounds read.
 * ZT_FUZZ_WRITE_SEED=FILE writes the valid cache in this input format (the seed of tests/fuzz/corpus/index_cache). */
#include <errno.h>

#include "data/gpt_dataset.h"
#include "data/indexed_dataset.h"
#include "tests/fuzz/fuzz.h"

static zt_indexed_dataset g_ds;
static zt_gpt_dataset_spec g_spec;
static char g_dir[256], g_prefix[300], g_cache[300], g_doc[400], g_sample[400], g_shuffle[400];

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) abort();
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*n ? *n : 1);
  if (fread(b, 1, *n, f) != *n) abort();
  fclose(f);
  return b;
}

static void put(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
    fprintf(stderr, "fuzz_index_cache: cannot write %s: %s\n", path, strerror(errno));
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(g_dir, sizeof g_dir, "/tmp/zt_fuzz_%d", (int)getpid());
  mkdir(g_dir, 0700);
  snprintf(g_prefix, sizeof g_prefix, "%s/ds", g_dir);
  snprintf(g_cache, sizeof g_cache, "%s/cache", g_dir);
  zt_indexed_builder *b = zt_indexed_builder_open(g_prefix, ZT_IDX_UINT16);
  int32_t ids[64];
  for (int d = 0; d < 24; d++) { /* sizes 1..40, one empty document */
    int n = d == 7 ? 0 : 1 + (d * 17) % 40;
    for (int i = 0; i < n; i++) ids[i] = (d * 31 + i) % 60;
    if (n) zt_indexed_builder_add_item(b, ids, n);
    zt_indexed_builder_end_document(b);
  }
  zt_indexed_builder_finish(b);
  zt_indexed_open(&g_ds, g_prefix);
  g_spec = (zt_gpt_dataset_spec){.prefix = g_prefix, .name = "train", .doc_begin = 2, .doc_end = 22,
                                 .num_samples = 30, .seq_length = 16, .seed = 1234, .split_string = "100,0,0",
                                 .cache_path = g_cache};
  zt_gpt_dataset d;
  zt_gpt_dataset_build(&d, &g_ds, &g_spec); /* builds and saves the valid cache */
  snprintf(g_doc, sizeof g_doc, "%s/%s_doc_idx.npy", g_cache, d.desc_hash);
  snprintf(g_sample, sizeof g_sample, "%s/%s_sample_idx.npy", g_cache, d.desc_hash);
  snprintf(g_shuffle, sizeof g_shuffle, "%s/%s_shuffle_idx.npy", g_cache, d.desc_hash);
  zt_gpt_dataset_free(&d);
  const char *seed = getenv("ZT_FUZZ_WRITE_SEED");
  if (seed) {
    size_t n[3];
    uint8_t *p[3] = {slurp(g_doc, &n[0]), slurp(g_sample, &n[1]), slurp(g_shuffle, &n[2])};
    FILE *f = fopen(seed, "wb");
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 4; i++) fputc((int)((n[k] >> (8 * i)) & 0xff), f);
    for (int k = 0; k < 3; k++) fwrite(p[k], 1, n[k], f), free(p[k]);
    fclose(f);
  }
  return 0;
}

/* The .npy reader keeps its FILE open when it refuses a file (a refusal ends the real tools, so nothing leaks
 * there); here refusals repeat, so the streams left open on the scratch directory are closed after each input
 * (else the process runs out of descriptors after about 1,000 refusals, and of memory after some 400,000). The
 * streams are found on glibc's list of open streams (_IO_list_all, exported since glibc 2.2.5). */
extern FILE *_IO_list_all;

static void close_scratch_streams(void) {
  FILE *mine[64];
  int n = 0;
  for (FILE *f = _IO_list_all; f && n < 64; f = f->_chain) {
    const int fd = fileno(f);
    if (fd <= 2) continue;
    char link[64], target[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = 0;
    if (strncmp(target, g_dir, strlen(g_dir)) == 0 && target[strlen(g_dir)] == '/' && strstr(target, ".npy"))
      mine[n++] = f;
  }
  for (int i = 0; i < n; i++) fclose(mine[i]);
}

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  size_t a = le32(data), b = le32(data + 4);
  data += 8, size -= 8;
  if (a > size) a = size;
  if (b > size - a) b = size - a;
  put(g_doc, data, a);
  put(g_sample, data + a, b);
  put(g_shuffle, data + a + b, size - a - b);
  static int32_t out[17];
  static zt_gpt_dataset d; /* what a refusal left loaded is freed at the next input */
  zt_gpt_dataset_free(&d);
  ZT_FUZZ_TRY {
    zt_gpt_dataset_build(&d, &g_ds, &g_spec);
    for (int64_t i = 0; i < d.num_samples; i++) zt_gpt_dataset_get(&d, i, out);
  }
  close_scratch_streams();
  return 0;
}
