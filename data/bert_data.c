/* Building the train/valid/test BERT datasets from --data-path and friends (see bert_data.h). */
#include "data/bert_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/gpt_data.h"
#include "data/gpt_dataset.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

static const char *const SPLIT_NAMES[3] = {"train", "valid", "test"};
static const char *const SPLIT_FLAGS[3] = {"--train-data-path", "--valid-data-path", "--test-data-path"};

/* get_indexed_dataset_: opens prefix once, with Megatron's lines, and refuses data that is not split into
 * sentences (every document a single item: a GPT-style _text_document dataset). */
static const zt_indexed_dataset *open_file(zt_bert_data *g, const char *prefix, const zt_bert_data_config *c) {
  for (int i = 0; i < g->num_files; i++)
    if (strcmp(g->files[i].prefix, prefix) == 0) return &g->files[i];
  zt_log(" > building dataset index ...\n");
  const double t0 = zt_now();
  zt_indexed_dataset *d = &g->files[g->num_files++];
  zt_indexed_open(d, prefix);
  if (c->mmap_warmup) zt_data_mmap_warmup(d);
  zt_log(" > finished creating indexed dataset in %4f seconds\n > indexed dataset stats:\n"
         "    number of documents: %lld\n    number of sentences: %lld\n", zt_now() - t0, (long long)d->num_docs,
         (long long)d->num_items);
  int64_t most = 0;
  for (int64_t k = 0; k < d->num_docs; k++) {
    const int64_t items = zt_indexed_doc(d, k + 1) - zt_indexed_doc(d, k);
    if (items > most) most = items;
  }
  zt_check(most >= 2, "dataset", "%s is not split into sentences: each of its %lld documents holds at most %lld "
           "item (%lld items in all), as a GPT-style _text_document dataset does. BERT reads sentences: preprocess "
           "with --split-sentences (a _text_sentence dataset)", prefix, (long long)d->num_docs, (long long)most,
           (long long)d->num_items);
  zt_data_check_token_ids(d, c->vocab_size, c->tokenizer_name);
  return d;
}

static void print_split(const zt_indexed_dataset *d, const char *name, const int64_t b[4], int k) {
  const int64_t s0 = zt_indexed_doc(d, b[k]), s1 = zt_indexed_doc(d, b[k + 1]);
  zt_log("    %s:\n     document indices in [%lld, %lld) total of %lld documents\n     sentence indices in [%lld, "
         "%lld) total of %lld sentences\n", name, (long long)b[k], (long long)b[k + 1], (long long)(b[k + 1] - b[k]),
         (long long)s0, (long long)s1, (long long)(s1 - s0));
}

static void build_member(zt_bert_dataset *out, const zt_indexed_dataset *d, const char *prefix, int k, int64_t begin,
                         int64_t end, int64_t num_samples, const zt_bert_data_config *c, int members) {
  const zt_bert_dataset_spec sp = {
      .prefix = prefix, .name = SPLIT_NAMES[k], .doc_begin = begin, .doc_end = end, .num_samples = num_samples,
      .exact_num_epochs = k == 0 ? c->train_exact_num_epochs : 0, .max_seq_length = c->max_seq_length, .added_tokens = c->added_tokens,
      .masked_lm_prob = c->masked_lm_prob, .short_seq_prob = c->short_seq_prob, .seed = c->seed,
      .binary_head = c->binary_head, .cache_path = c->cache_path,
      .forced_mapping = k == 0 ? c->train_idx_path : NULL, .sampled = k == 0 && members == 1 && c->train_sampled,
      .vocab = c->vocab};
  zt_bert_dataset_build(out, d, &sp);
}

static void finish_split(zt_bert_split *s, const zt_data_path_list *p, const int64_t (*per)[3], int k,
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
  zt_log("> size of blendable dataset: %lld samples\n", (long long)size);
}

/* One path list for split k (or, with k < 0, --data-path for all three, each member split by --split). */
static void build_list(zt_bert_data *g, const zt_bert_data_config *c, const char *flag, int nwords,
                       const char *const *words, int only) {
  zt_data_path_list p;
  zt_data_path_list_parse(&p, flag, nwords, words);
  double normalized[ZT_BLEND_MAX_DATASETS];
  int64_t per[ZT_BLEND_MAX_DATASETS][3];
  if (p.n == 1) {
    normalized[0] = 1.0;
    for (int k = 0; k < 3; k++) per[0][k] = c->num_samples[k];
  } else {
    zt_blend_weights_and_samples(p.weights, p.n, c->num_samples, normalized, per);
  }
  int want[3], present[3]; /* splits of this list, and those every member has documents for */
  for (int k = 0; k < 3; k++) {
    want[k] = (only < 0 || only == k) && (c->num_samples[k] > 0 || (k == 0 && c->train_exact_num_epochs > 0));
    present[k] = want[k];
    if (want[k]) g->split[k].members = zt_calloc((size_t)p.n, sizeof(zt_bert_dataset), "datasets");
  }
  zt_check(!c->train_idx_path || p.n == 1 || !want[0], "inconsistent arguments", "--train-idx-path %s names one "
           "training samples mapping, but %s blends %d datasets (Megatron-DeepSpeed would give every one that file)",
           c->train_idx_path, flag, p.n);
  const zt_indexed_dataset *files[ZT_BLEND_MAX_DATASETS];
  for (int i = 0; i < p.n; i++) files[i] = open_file(g, p.prefixes[i], c); /* every file checked before any work */
  for (int i = 0; i < p.n; i++) {
    const zt_indexed_dataset *d = files[i];
    int64_t b[4] = {0, 0, 0, 0};
    if (only < 0) {
      zt_split_bounds(c->split, d->num_docs, b);
      zt_log(" > dataset split:\n");
      print_split(d, "train", b, 0);
      print_split(d, "validation", b, 1);
      print_split(d, "test", b, 2);
    } else {
      b[only + 1] = d->num_docs;
    }
    for (int k = 0; k < 3; k++) {
      if (!present[k]) continue;
      if (b[k + 1] <= b[k]) { /* an empty split: Megatron builds no dataset for it */
        zt_check(!(k == 0 && c->num_samples[0] > 0), "bad argument value",
                 "--split '%s' leaves no training documents in %s (%lld documents)", c->split, p.prefixes[i],
                 (long long)d->num_docs);
        present[k] = 0;
        continue;
      }
      build_member(&g->split[k].members[i], d, p.prefixes[i], k, b[k], b[k + 1], per[i][k], c, p.n);
    }
  }
  for (int k = 0; k < 3; k++) {
    if (!want[k]) continue;
    if (!present[k]) { /* absent in some member: Megatron's blend would fail; the split is dropped */
      for (int i = 0; i < p.n; i++)
        if (g->split[k].members[i].mapping) zt_bert_dataset_free(&g->split[k].members[i]);
      free(g->split[k].members);
      g->split[k].members = NULL;
      continue;
    }
    g->split[k].num = p.n;
    finish_split(&g->split[k], &p, (const int64_t(*)[3])per, k, normalized);
  }
}

void zt_bert_data_build(zt_bert_data *g, const zt_bert_data_config *c) {
  memset(g, 0, sizeof(*g));
  int separate = 0;
  for (int k = 0; k < 3; k++) separate |= c->split_path_n[k] > 0;
  zt_check(c->data_path_n > 0 || separate, "missing argument",
           "no training data: give --data-path (or --train-data-path/--valid-data-path/--test-data-path)");
  zt_check(!(c->data_path_n > 0 && separate), "inconsistent arguments",
           "--data-path cannot be combined with --train-data-path/--valid-data-path/--test-data-path");
  g->files = zt_malloc(sizeof(zt_indexed_dataset) * (size_t)(ZT_BLEND_MAX_DATASETS * 3), "datasets");
  zt_log(" > datasets target sizes (minimum size):\n    train:      %lld\n    validation: %lld\n    test:       "
         "%lld\n", (long long)c->num_samples[0], (long long)c->num_samples[1], (long long)c->num_samples[2]);
  if (!separate) {
    build_list(g, c, "--data-path", c->data_path_n, c->data_path, -1);
  } else {
    for (int k = 0; k < 3; k++)
      if (c->split_path_n[k] > 0) build_list(g, c, SPLIT_FLAGS[k], c->split_path_n[k], c->split_path[k], k);
    zt_check(g->split[0].num > 0 || c->num_samples[0] == 0, "missing argument",
             "--train-data-path is required when training (or give --data-path)");
  }
}

void zt_bert_data_free(zt_bert_data *g) {
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < g->split[k].num; i++) zt_bert_dataset_free(&g->split[k].members[i]);
    free(g->split[k].members);
    if (g->split[k].blended) zt_blend_free(&g->split[k].blend);
  }
  for (int i = 0; i < g->num_files; i++) zt_indexed_close(&g->files[i]);
  free(g->files);
  memset(g, 0, sizeof(*g));
}

void zt_bert_data_locate(const zt_bert_data *g, int split, int64_t i, int *member, int64_t *member_index) {
  const zt_bert_split *s = &g->split[split];
  zt_check(s->num > 0, "dataset", "the %s split has no data", SPLIT_NAMES[split]);
  zt_check(i >= 0 && i < s->size, "dataset",
           "%s sample %lld requested but the dataset has %lld (more samples than the run was planned for: "
           "--repeated-dataloader replays the split from the loader's first sample, --dataloader-type cyclic "
           "reshuffles it each epoch)",
           SPLIT_NAMES[split], (long long)i, (long long)s->size);
  *member = s->blended ? s->blend.dataset_index[i] : 0;
  *member_index = s->blended ? s->blend.dataset_sample_index[i] : i;
}

void zt_bert_data_get(const zt_bert_data *g, int split, int64_t i, zt_bert_scratch *s, zt_bert_sample *out) {
  int m;
  int64_t j;
  zt_bert_data_locate(g, split, i, &m, &j);
  zt_bert_dataset_get(&g->split[split].members[m], j, s, out);
}
