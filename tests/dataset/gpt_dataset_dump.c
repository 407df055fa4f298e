/* Test driver for the GPT dataset: builds train/valid/test exactly as pretrain_gpt does and dumps
 * the index arrays and every sample as .npy files for the NumPy reimplementation of Megatron's
 * index building (test_gpt_dataset.py) to compare.
 *   gpt_dataset_dump data OUTDIR SEQ SEED SPLIT NS_TRAIN NS_VALID NS_TEST CACHE|- EXACT_EPOCHS \
 *                    (--data-path|--split-paths) WORDS...   (split paths: train;valid;test lists
 *                    separated by a literal ';' word)
 *   gpt_dataset_dump masks TOKENS.npy EOD OUTPREFIX   (int32 [R, T] -> loss_mask, pos, start)
 * A leading "--rank R --world W" makes the process act as that rank (only rank 0 builds caches). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/gpt_data.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"

static void dump_split(const zt_gpt_data *g, int k, const char *outdir, int seq) {
  const zt_gpt_split *s = &g->split[k];
  char path[4096];
  int64_t shape[2];
  if (s->num == 0) return;
  if (!s->blended) {
    const zt_gpt_dataset *d = &s->members[0];
    snprintf(path, sizeof path, "%s/split%d_doc_idx.npy", outdir, k);
    shape[0] = d->doc_idx_len;
    zt_npy_save(path, d->doc_idx, "<i4", 1, shape);
    snprintf(path, sizeof path, "%s/split%d_sample_idx.npy", outdir, k);
    shape[0] = d->total_samples + 1;
    shape[1] = 2;
    zt_npy_save(path, d->sample_idx, "<i8", 2, shape);
    snprintf(path, sizeof path, "%s/split%d_shuffle_idx.npy", outdir, k);
    shape[0] = d->num_samples;
    zt_npy_save(path, d->shuffle_idx, "<i8", 1, shape);
  } else {
    int32_t *di = malloc((size_t)s->size * sizeof(int32_t));
    for (int64_t i = 0; i < s->size; i++) di[i] = s->blend.dataset_index[i];
    snprintf(path, sizeof path, "%s/split%d_dataset_index.npy", outdir, k);
    shape[0] = s->size;
    zt_npy_save(path, di, "<i4", 1, shape);
    snprintf(path, sizeof path, "%s/split%d_dataset_sample_index.npy", outdir, k);
    zt_npy_save(path, s->blend.dataset_sample_index, "<i8", 1, shape);
    free(di);
  }
  int32_t *samples = malloc((size_t)s->size * (seq + 1) * sizeof(int32_t));
  for (int64_t i = 0; i < s->size; i++) zt_gpt_data_get(g, k, i, samples + (size_t)i * (seq + 1));
  snprintf(path, sizeof path, "%s/split%d_samples.npy", outdir, k);
  shape[0] = s->size;
  shape[1] = seq + 1;
  zt_npy_save(path, samples, "<i4", 2, shape);
  free(samples);
}

static int data_mode(int argc, char **argv) {
  if (argc < 13) {
    fprintf(stderr, "usage: see the comment at the top of gpt_dataset_dump.c\n");
    return 2;
  }
  const char *outdir = argv[2];
  zt_gpt_data_config c = {.seq_length = atoi(argv[3]), .seed = strtoull(argv[4], NULL, 10), .split = argv[5],
                          .num_samples = {atoll(argv[6]), atoll(argv[7]), atoll(argv[8])},
                          .cache_path = strcmp(argv[9], "-") == 0 ? NULL : argv[9],
                          .train_exact_num_epochs = atoll(argv[10])};
  const char *const *words = (const char *const *)argv + 12;
  int nwords = argc - 12;
  if (strcmp(argv[11], "--data-path") == 0) {
    c.data_path = words;
    c.data_path_n = nwords;
  } else {
    int k = 0, start = 0;
    for (int i = 0; i <= nwords && k < 3; i++)
      if (i == nwords || strcmp(words[i], ";") == 0) {
        c.split_path[k] = words + start;
        c.split_path_n[k] = i - start;
        k++;
        start = i + 1;
      }
  }
  zt_gpt_data g;
  zt_gpt_data_build(&g, &c);
  for (int k = 0; k < 3; k++) dump_split(&g, k, outdir, c.seq_length);
  char path[4096];
  snprintf(path, sizeof path, "%s/sizes.txt", outdir);
  FILE *f = fopen(path, "w");
  for (int k = 0; k < 3; k++) fprintf(f, "%lld\n", (long long)(g.split[k].num ? g.split[k].size : -1));
  fclose(f);
  zt_gpt_data_free(&g);
  return 0;
}

static int masks_mode(int argc, char **argv) {
  if (argc != 5) return 2;
  int ndim;
  int64_t shape[4];
  int32_t *tok = zt_npy_load(argv[2], "<i4", &ndim, shape);
  const int32_t eod = atoi(argv[3]);
  const int64_t R = shape[0], T = shape[1];
  float *mask = malloc((size_t)(R * T) * sizeof(float));
  int32_t *pos = malloc((size_t)(R * T) * sizeof(int32_t)), *start = malloc((size_t)(R * T) * sizeof(int32_t));
  for (int64_t r = 0; r < R; r++)
    zt_gpt_ltor_masks(tok + r * T, (int)T, eod, 1, mask + r * T, pos + r * T, start + r * T);
  char path[4096];
  snprintf(path, sizeof path, "%s_loss_mask.npy", argv[4]);
  zt_npy_save(path, mask, "<f4", 2, shape);
  snprintf(path, sizeof path, "%s_pos.npy", argv[4]);
  zt_npy_save(path, pos, "<i4", 2, shape);
  snprintf(path, sizeof path, "%s_start.npy", argv[4]);
  zt_npy_save(path, start, "<i4", 2, shape);
  free(tok); free(mask); free(pos); free(start);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 5 && strcmp(argv[1], "--rank") == 0 && strcmp(argv[3], "--world") == 0) {
    zt_set_rank(atoi(argv[2]), atoi(argv[4]));
    argv[4] = argv[0];
    argv += 4;
    argc -= 4;
  }
  if (argc > 1 && strcmp(argv[1], "data") == 0) return data_mode(argc, argv);
  if (argc > 1 && strcmp(argv[1], "masks") == 0) return masks_mode(argc, argv);
  fprintf(stderr, "usage: gpt_dataset_dump data|masks ...\n");
  return 2;
}
