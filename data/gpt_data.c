/* Building the train/valid/test GPT datasets from --data-path and friends (see gpt_data.h). */
#include "data/gpt_data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"

static const char *const SPLIT_NAMES[3] = {"train", "valid", "test"};
static const char *const SPLIT_FLAGS[3] = {"--train-data-path", "--valid-data-path", "--test-data-path"};

void zt_data_path_list_parse(zt_data_path_list *p, const char *flag, int nwords, const char *const *words) {
  memset(p, 0, sizeof(*p));
  zt_check(nwords > 0, "missing argument value", "%s expects a prefix, or weight prefix pairs", flag);
  if (nwords == 1) {
    p->n = 1;
    p->weights[0] = 1.0;
    p->prefixes[0] = words[0];
    return;
  }
  zt_check(nwords % 2 == 0, "bad argument value",
           "%s has %d words; with several datasets it takes weight prefix pairs (e.g. 0.3 a_text_document 0.7 "
           "b_text_document)", flag, nwords);
  zt_check(nwords / 2 <= ZT_BLEND_MAX_DATASETS, "bad argument value", "%s names %d datasets; at most %d can be "
           "blended", flag, nwords / 2, ZT_BLEND_MAX_DATASETS);
  p->n = nwords / 2;
  for (int i = 0; i < p->n; i++) {
    const char *w = words[2 * i];
    char *end;
    errno = 0;
    double v = strtod(w, &end);
    zt_check(end != w && *end == 0 && errno == 0 && isfinite(v), "bad argument value",
             "%s: '%s' (word %d) should be a weight followed by a prefix", flag, w, 2 * i + 1);
    zt_check(v > 0, "bad argument value", "%s: weight %s of %s must be > 0", flag, w, words[2 * i + 1]);
    p->weights[i] = v;
    p->prefixes[i] = words[2 * i + 1];
  }
}

/* The smallest and largest token id in the file (one parallel pass over the .bin). */
static void token_range(const zt_indexed_dataset *d, int64_t *lo_out, int64_t *hi_out) {
  const int64_t n = (int64_t)(d->bin_bytes / (size_t)d->itemsize);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
#define RANGE_LOOP(T)                                                   \
  {                                                                     \
    const T *p = (const T *)(const void *)d->bin;                       \
    _Pragma("omp parallel for reduction(min : lo) reduction(max : hi)") \
    for (int64_t i = 0; i < n; i++) {                                   \
      if ((int64_t)p[i] < lo) lo = (int64_t)p[i];                       \
      if ((int64_t)p[i] > hi) hi = (int64_t)p[i];                       \
    }                                                                   \
  }
  switch (d->dtype) {
  case ZT_IDX_UINT8: RANGE_LOOP(uint8_t) break;
  case ZT_IDX_INT8: RANGE_LOOP(int8_t) break;
  case ZT_IDX_INT16: RANGE_LOOP(int16_t) break;
  case ZT_IDX_UINT16: RANGE_LOOP(uint16_t) break;
  case ZT_IDX_INT32: RANGE_LOOP(int32_t) break;
  case ZT_IDX_INT64: RANGE_LOOP(int64_t) break;
  default: zt_fatal("dataset", "%s.bin holds %s values, not token ids", d->prefix, zt_idx_dtype_name(d->dtype));
  }
#undef RANGE_LOOP
  *lo_out = lo;
  *hi_out = hi;
}

void zt_data_mmap_warmup(const zt_indexed_dataset *d) {
  volatile uint8_t sink = 0;
  for (size_t off = 0; off < d->bin_bytes; off += 4096) sink ^= d->bin[off];
  (void)sink;
}

void zt_data_check_token_ids(const zt_indexed_dataset *d, int64_t vocab_size, const char *tokenizer_name) {
  if (vocab_size <= 0 || d->bin_bytes == 0) return;
  /* a dataset written with another tokenizer would index past the embedding: refuse it now */
  double t0 = zt_now();
  int64_t lo, hi;
  token_range(d, &lo, &hi);
  zt_check(lo >= 0 && hi < vocab_size, "dataset", "%s.bin holds token ids %lld..%lld, outside the %lld ids of "
           "the %s tokenizer (was it preprocessed with another tokenizer? An HFTokenizer's vocab_size, as "
           "Megatron-DeepSpeed's, leaves out its added tokens, such as Llama-3's <|begin_of_text|>)", d->prefix,
           (long long)lo, (long long)hi, (long long)vocab_size, tokenizer_name ? tokenizer_name : "given");
  zt_log(" > checked %lld token ids in %.3f s: %lld..%lld, within the vocabulary of %lld\n",
         (long long)(d->bin_bytes / (size_t)d->itemsize), zt_now() - t0, (long long)lo, (long long)hi,
         (long long)vocab_size);
}

static const zt_indexed_dataset *open_file(zt_gpt_data *g, const char *prefix, const zt_gpt_data_config *c) {
  for (int i = 0; i < g->num_files; i++)
    if (strcmp(g->files[i].prefix, prefix) == 0) return &g->files[i];
  zt_log(" > building dataset index from %s ...\n", prefix);
  double t0 = zt_now();
  zt_indexed_dataset *d = &g->files[g->num_files++];
  zt_indexed_open(d, prefix);
  if (c->mmap_warmup) zt_data_mmap_warmup(d); /* --mmap-warmup: page the token file in once, as Megatron does */
  zt_log(" > finished creating indexed dataset in %.6f seconds\n    number of documents: %lld (%s tokens)\n",
         zt_now() - t0, (long long)d->num_items, zt_idx_dtype_name(d->dtype));
  zt_data_check_token_ids(d, c->vocab_size, c->tokenizer_name);
  return d;
}

static void print_split(const char *name, const int64_t b[4], int k) {
  zt_log("    %s:\n     document indices in [%lld, %lld) total of %lld documents\n", name, (long long)b[k],
         (long long)b[k + 1], (long long)(b[k + 1] - b[k]));
}

/* Builds split k of one member dataset over documents [begin, end). */
static void build_member(zt_gpt_dataset *out, const zt_indexed_dataset *d, const char *prefix, int k,
                         int64_t begin, int64_t end, int64_t num_samples, const zt_gpt_data_config *c, int members) {
  zt_gpt_dataset_spec sp = {.prefix = prefix, .name = SPLIT_NAMES[k], .doc_begin = begin, .doc_end = end,
                            .num_samples = num_samples, .seq_length = c->seq_length, .seed = c->seed,
                            .split_string = c->split, .cache_path = c->cache_path,
                            .exact_num_epochs = k == 0 ? c->train_exact_num_epochs : 0,
                            .sampled = k == 0 && members == 1 && c->train_sampled};
  static const char *const index_flags[4] = {"--train-desc-path", "--train-doc-idx-path", "--train-sample-idx-path",
                                             "--train-shuffle-idx-path"};
  for (int f = 0; k == 0 && f < 4; f++) {
    if (!c->train_index_files[f]) continue;
    zt_check(members == 1, "inconsistent arguments", "%s %s with %d blended training datasets: Megatron-DeepSpeed "
             "would give each of them the same index files; it names one dataset's files", index_flags[f],
             c->train_index_files[f], members);
    sp.index_files[f] = c->train_index_files[f];
  }
  zt_gpt_dataset_build(out, d, &sp);
}

static void finish_split(zt_gpt_split *s, const zt_data_path_list *p, const int64_t (*per)[3], int k,
                         const double *normalized) {
  if (p->n == 1) {
    s->size = s->members[0].num_samples;
    return;
  }
  int64_t size = 0;
  for (int i = 0; i < p->n; i++) size += per[i][k];
  s->blended = 1;
  int64_t *sizes = zt_malloc((size_t)p->n * sizeof(int64_t), "blend member sizes");
  for (int i = 0; i < p->n; i++) sizes[i] = s->members[i].num_samples;
  zt_blend_build_split(&s->blend, normalized, p->n, size, sizes, (const char *const *)p->prefixes, SPLIT_NAMES[k]);
  free(sizes);
  s->size = size;
  zt_log(" > blended %s dataset of %lld samples from %d datasets\n", SPLIT_NAMES[k], (long long)size, p->n);
}

void zt_gpt_data_build(zt_gpt_data *g, const zt_gpt_data_config *c) {
  memset(g, 0, sizeof(*g));
  int separate = 0;
  for (int k = 0; k < 3; k++) separate |= c->split_path_n[k] > 0;
  zt_check(c->data_path_n > 0 || separate, "missing argument",
           "no training data: give --data-path (or --train-data-path/--valid-data-path/--test-data-path, or "
           "--mock-data)");
  zt_check(!(c->data_path_n > 0 && separate), "inconsistent arguments",
           "--data-path cannot be combined with --train-data-path/--valid-data-path/--test-data-path");
  g->files = zt_malloc(sizeof(zt_indexed_dataset) * (size_t)(ZT_BLEND_MAX_DATASETS * 3), "datasets");
  zt_log(" > datasets target sizes (minimum size):\n    train:      %lld\n    validation: %lld\n    test:       "
         "%lld\n", (long long)c->num_samples[0], (long long)c->num_samples[1], (long long)c->num_samples[2]);

  if (!separate) {
    zt_data_path_list p;
    zt_data_path_list_parse(&p, "--data-path", c->data_path_n, c->data_path);
    double normalized[ZT_BLEND_MAX_DATASETS];
    int64_t per[ZT_BLEND_MAX_DATASETS][3];
    if (p.n == 1) {
      normalized[0] = 1.0;
      for (int k = 0; k < 3; k++) per[0][k] = c->num_samples[k];
    } else {
      zt_blend_weights_and_samples(p.weights, p.n, c->num_samples, normalized, per);
    }
    for (int k = 0; k < 3; k++) {
      g->split[k].members = zt_malloc(sizeof(zt_gpt_dataset) * (size_t)p.n, "datasets");
      memset(g->split[k].members, 0, sizeof(zt_gpt_dataset) * (size_t)p.n);
    }
    int present[3] = {1, 1, 1};
    for (int i = 0; i < p.n; i++) {
      const zt_indexed_dataset *d = open_file(g, p.prefixes[i], c);
      int64_t b[4];
      zt_split_bounds(c->split, d->num_items, b);
      zt_log(" > dataset split:\n");
      print_split("train", b, 0);
      print_split("validation", b, 1);
      print_split("test", b, 2);
      for (int k = 0; k < 3; k++) {
        if (b[k + 1] <= b[k]) { /* an empty split: Megatron builds no dataset for it */
          zt_check(!(k == 0 && c->num_samples[0] > 0), "bad argument value",
                   "--split '%s' leaves no training documents in %s (%lld documents)", c->split, p.prefixes[i],
                   (long long)d->num_items);
          present[k] = 0;
          continue;
        }
        build_member(&g->split[k].members[i], d, p.prefixes[i], k, b[k], b[k + 1], per[i][k], c, p.n);
      }
    }
    for (int k = 0; k < 3; k++) {
      if (!present[k]) { /* absent in some member: Megatron's blend would fail; we drop the split */
        for (int i = 0; i < p.n; i++)
          if (g->split[k].members[i].doc_idx) zt_gpt_dataset_free(&g->split[k].members[i]);
        continue;
      }
      g->split[k].num = p.n;
      finish_split(&g->split[k], &p, (const int64_t(*)[3])per, k, normalized);
    }
  } else {
    for (int k = 0; k < 3; k++) {
      if (c->split_path_n[k] == 0) continue;
      zt_data_path_list p;
      zt_data_path_list_parse(&p, SPLIT_FLAGS[k], c->split_path_n[k], c->split_path[k]);
      double normalized[ZT_BLEND_MAX_DATASETS];
      int64_t per[ZT_BLEND_MAX_DATASETS][3];
      if (p.n == 1) {
        normalized[0] = 1.0;
        per[0][k] = c->num_samples[k];
      } else {
        zt_blend_weights_and_samples(p.weights, p.n, c->num_samples, normalized, per);
      }
      g->split[k].members = zt_malloc(sizeof(zt_gpt_dataset) * (size_t)p.n, "datasets");
      for (int i = 0; i < p.n; i++) {
        const zt_indexed_dataset *d = open_file(g, p.prefixes[i], c);
        build_member(&g->split[k].members[i], d, p.prefixes[i], k, 0, d->num_items, per[i][k], c, p.n);
      }
      g->split[k].num = p.n;
      finish_split(&g->split[k], &p, (const int64_t(*)[3])per, k, normalized);
    }
    zt_check(g->split[0].num > 0 || c->num_samples[0] == 0, "missing argument",
             "--train-data-path is required when training (or give --data-path)");
  }
}

void zt_gpt_data_free(zt_gpt_data *g) {
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < g->split[k].num; i++) zt_gpt_dataset_free(&g->split[k].members[i]);
    free(g->split[k].members);
    if (g->split[k].blended) zt_blend_free(&g->split[k].blend);
  }
  for (int i = 0; i < g->num_files; i++) zt_indexed_close(&g->files[i]);
  free(g->files);
  memset(g, 0, sizeof(*g));
}

void zt_gpt_data_get(const zt_gpt_data *g, int split, int64_t i, int32_t *out) {
  const zt_gpt_split *s = &g->split[split];
  zt_check(s->num > 0, "dataset", "the %s split has no data", SPLIT_NAMES[split]);
  zt_check(i >= 0 && i < s->size, "dataset",
           "%s sample %lld requested but the dataset has %lld (more samples than the run was planned for: "
           "--repeated-dataloader replays the split from the loader's first sample, --dataloader-type cyclic "
           "reshuffles it each epoch)",
           SPLIT_NAMES[split], (long long)i, (long long)s->size);
  if (!s->blended) {
    zt_gpt_dataset_get(&s->members[0], i, out);
    return;
  }
  zt_gpt_dataset_get(&s->members[s->blend.dataset_index[i]], s->blend.dataset_sample_index[i], out);
}

void zt_gpt_ltor_masks(const int32_t *tokens, int T, int32_t eod, int eod_mask_loss, float *loss_mask,
                       int32_t *pos, int32_t *key_start) {
  int32_t doc_begin = 0;
  for (int t = 0; t < T; t++) {
    if (eod_mask_loss) loss_mask[t] = tokens[t] == eod ? 0.0f : 1.0f;
    if (pos) pos[t] = t - doc_begin;
    if (key_start) key_start[t] = doc_begin;
    if (tokens[t] == eod) doc_begin = t + 1;
  }
}

int zt_gpt_reshape_rows(int B, int S1, int d1) {
  const int64_t made = (int64_t)B * (S1 / d1) + B, want = ((int64_t)B * S1 + d1 - 1) / d1;
  int64_t r = want < made ? want : made;
  if (r > 1 && r % 2) r--;
  return (int)r;
}

void zt_gpt_reshape_source(int i, int B, int S1, int d1, int *src, int *off) {
  const int k = S1 / d1; /* pieces per sample */
  if (i < B * k) {
    *src = i / k;
    *off = (i % k) * d1;
  } else { /* the tails: text[:, -(d1):] */
    *src = i - B * k;
    *off = S1 - d1;
  }
}
