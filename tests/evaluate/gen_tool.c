/* Test helper for generate_samples' next-token choice (evaluate/sampling.c), driven by tests/evaluate/test_generate.py:
 *   gen_tool filter V K P TEMP IN.f32 OUT.f32   rows of V float32 logits: logits / TEMP, then top_k_logits(K, P)
 *   gen_tool sample V N SEED TEMP K P IN.f32    one row of logits; prints the token drawn for streams 0..N-1 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate/sampling.h"
#include "runtime/base/error.h"

static float *read_f32(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  zt_check(f != NULL, "gen_tool", "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  const long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  float *x = zt_malloc((size_t)bytes + 4, "logits");
  *n = fread(x, sizeof(float), (size_t)bytes / sizeof(float), f);
  fclose(f);
  return x;
}

int main(int argc, char **argv) {
  zt_check(argc >= 2, "usage", "gen_tool filter|sample ...");
  if (!strcmp(argv[1], "filter") && argc == 8) {
    const int V = atoi(argv[2]), K = atoi(argv[3]);
    const float P = (float)atof(argv[4]), temp = (float)atof(argv[5]);
    size_t n;
    float *x = read_f32(argv[6], &n);
    int *order = zt_malloc((size_t)V * sizeof(int), "order");
    float *work = zt_malloc((size_t)V * sizeof(float), "work");
    for (size_t r = 0; r + (size_t)V <= n; r += (size_t)V) {
      for (int v = 0; v < V; v++) x[r + (size_t)v] /= temp;
      zt_top_k_logits(x + r, V, K, P, order, work);
    }
    FILE *f = fopen(argv[7], "wb");
    zt_check(f && fwrite(x, sizeof(float), n, f) == n && fclose(f) == 0, "gen_tool", "cannot write %s", argv[7]);
    return 0;
  }
  if (!strcmp(argv[1], "sample") && argc == 9) {
    const int V = atoi(argv[2]), N = atoi(argv[3]);
    const zt_sampling s = {.greedy = 0, .seed = (uint64_t)atoll(argv[4]), .temperature = (float)atof(argv[5]),
                           .top_k = atoi(argv[6]), .top_p = (float)atof(argv[7])};
    size_t n;
    float *x = read_f32(argv[8], &n), *row = zt_malloc((size_t)V * sizeof(float), "row");
    int *order = zt_malloc((size_t)V * sizeof(int), "order");
    float *work = zt_malloc((size_t)V * sizeof(float), "work");
    for (int i = 0; i < N; i++) {
      memcpy(row, x, (size_t)V * sizeof(float));
      printf("%d\n", zt_sample_token(&s, row, V, (uint64_t)i, 0, order, work));
    }
    return 0;
  }
  zt_fatal("usage", "gen_tool filter V K P TEMP IN OUT | sample V N SEED TEMP K P IN");
}
