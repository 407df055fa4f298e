/* Test driver for the BERT data: builds the datasets as pretrain_bert does and dumps the samples mappings and every
 * field of every sample as .npy files for the NumPy transcription of Megatron's code (test_bert_dataset.py).
 *   bert_dataset_dump [--rank R --world W] MODE OUTDIR [flags] (--data-path WORDS... | --train-data-path WORDS...
 *                     [--valid-data-path WORDS...] [--test-data-path WORDS...])
 *   MODE data:      zt_bert_data: split{k}_member{i}_mapping.npy (int64 [n, 3]), split{k}_member{i}_cache.txt,
 *                   split{k}_dataset_index/_dataset_sample_index.npy (blends), split{k}_{text,types,labels,
 *                   loss_mask,padding_mask}.npy (int32 [size, T]), split{k}_{is_random,truncated}.npy, sizes.txt
 *   MODE provider:  zt_bert_provider_create, then --batches micro batches from sample 0 of each split:
 *                   split{k}_batch_{tokens,token_types,labels,loss_mask,padding,sentence_labels}.npy
 *   MODE cdf:       prints the n-gram cdf (hex floats)
 * flags: --vocab FILE (BertWordPieceLowerCase) | --null-vocab V (NullTokenizer), --seq N, --seed S, --split STR,
 *        --samples a,b,c, --mask-prob P, --short-seq-prob P, --no-binary-head, --cache DIR, --exact E,
 *        --micro-batch B, --batches N, --mmap-warmup */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bert_data.h"
#include "data/bert_provider.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"

typedef struct {
  const char *mode, *outdir, *vocab_file, *split, *cache, *mask_prob, *ssp;
  int null_vocab, seq, binary_head, micro_batch, batches, mmap_warmup;
  uint64_t seed;
  int64_t samples[3], exact;
  int data_path_n, split_path_n[3];
  const char **data_path, **split_path[3];
} opts;

static void save(const char *outdir, const char *name, const void *data, const char *descr, int ndim, int64_t a,
                 int64_t b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", outdir, name);
  const int64_t shape[2] = {a, b};
  zt_npy_save(path, data, descr, ndim, shape);
}

static zt_tokenizer *make_tokenizer(const opts *o, const char **name) {
  zt_tokenizer_spec spec = {.kind = o->vocab_file ? ZT_TOK_BERT_LOWER : ZT_TOK_NULL, .vocab_file = o->vocab_file,
                            .vocab_size = o->null_vocab};
  *name = zt_tokenizer_kind_name(spec.kind);
  return zt_tokenizer_create(&spec);
}

static void dump_split(const zt_bert_data *g, int k, const char *outdir, int T) {
  const zt_bert_split *s = &g->split[k];
  char name[256];
  if (s->num == 0) return;
  for (int i = 0; i < s->num; i++) {
    const zt_bert_dataset *d = &s->members[i];
    int64_t *rows = malloc((size_t)d->num_samples * 3 * sizeof(int64_t));
    for (int64_t r = 0; r < d->num_samples; r++)
      zt_bert_dataset_row(d, r, rows + 3 * r, rows + 3 * r + 1, rows + 3 * r + 2);
    snprintf(name, sizeof name, "split%d_member%d_mapping", k, i);
    save(outdir, name, rows, "<i8", 2, d->num_samples, 3);
    free(rows);
    char path[4096];
    snprintf(path, sizeof path, "%s/split%d_member%d_cache.txt", outdir, k, i);
    FILE *f = fopen(path, "w");
    fprintf(f, "%s", d->cache_file);
    fclose(f);
  }
  if (s->blended) {
    int32_t *di = malloc((size_t)s->size * sizeof(int32_t));
    for (int64_t i = 0; i < s->size; i++) di[i] = s->blend.dataset_index[i];
    snprintf(name, sizeof name, "split%d_dataset_index", k);
    save(outdir, name, di, "<i4", 1, s->size, 0);
    snprintf(name, sizeof name, "split%d_dataset_sample_index", k);
    save(outdir, name, s->blend.dataset_sample_index, "<i8", 1, s->size, 0);
    free(di);
  }
  const size_t n = (size_t)s->size * T;
  int32_t *text = malloc(n * 4), *types = malloc(n * 4), *labels = malloc(n * 4), *lm = malloc(n * 4),
          *pm = malloc(n * 4), *rnd = malloc((size_t)s->size * 4), *trunc = malloc((size_t)s->size * 4);
  uint8_t *lm8 = malloc((size_t)T), *pm8 = malloc((size_t)T);
  zt_bert_scratch *sc = zt_bert_scratch_new();
  for (int64_t i = 0; i < s->size; i++) {
    zt_bert_sample out = {.text = text + i * T, .types = types + i * T, .labels = labels + i * T, .loss_mask = lm8,
                          .padding_mask = pm8};
    zt_bert_data_get(g, k, i, sc, &out);
    for (int t = 0; t < T; t++) lm[i * T + t] = lm8[t], pm[i * T + t] = pm8[t];
    rnd[i] = out.is_random;
    trunc[i] = out.truncated;
  }
  zt_bert_scratch_free(sc);
  const char *fields[5] = {"text", "types", "labels", "loss_mask", "padding_mask"};
  int32_t *arrays[5] = {text, types, labels, lm, pm};
  for (int f = 0; f < 5; f++) {
    snprintf(name, sizeof name, "split%d_%s", k, fields[f]);
    save(outdir, name, arrays[f], "<i4", 2, s->size, T);
  }
  snprintf(name, sizeof name, "split%d_is_random", k);
  save(outdir, name, rnd, "<i4", 1, s->size, 0);
  snprintf(name, sizeof name, "split%d_truncated", k);
  save(outdir, name, trunc, "<i4", 1, s->size, 0);
  free(text), free(types), free(labels), free(lm), free(pm), free(rnd), free(trunc), free(lm8), free(pm8);
}

static int data_mode(const opts *o) {
  const char *tok_name;
  zt_tokenizer *tok = make_tokenizer(o, &tok_name);
  zt_bert_vocab vocab;
  zt_bert_vocab_from_tokenizer(&vocab, tok, tok_name);
  zt_bert_data_config c = {
      .data_path_n = o->data_path_n, .data_path = o->data_path,
      .split_path_n = {o->split_path_n[0], o->split_path_n[1], o->split_path_n[2]},
      .split_path = {o->split_path[0], o->split_path[1], o->split_path[2]}, .split = o->split,
      .cache_path = o->cache, .max_seq_length = o->seq, .added_tokens = 3, .seed = o->seed,
      .masked_lm_prob = strtod(o->mask_prob, NULL),
      .short_seq_prob = strtod(o->ssp, NULL), .binary_head = o->binary_head, .train_exact_num_epochs = o->exact,
      .num_samples = {o->samples[0], o->samples[1], o->samples[2]}, .mmap_warmup = o->mmap_warmup,
      .vocab_size = vocab.size, .tokenizer_name = tok_name, .vocab = &vocab};
  zt_bert_data g;
  zt_bert_data_build(&g, &c);
  for (int k = 0; k < 3; k++) dump_split(&g, k, o->outdir, o->seq);
  char path[4096];
  snprintf(path, sizeof path, "%s/sizes.txt", o->outdir);
  FILE *f = fopen(path, "w");
  for (int k = 0; k < 3; k++) fprintf(f, "%lld\n", (long long)(g.split[k].num ? g.split[k].size : -1));
  fclose(f);
  zt_bert_data_free(&g);
  free((void *)vocab.subword);
  zt_tokenizer_free(tok);
  return 0;
}

static int provider_mode(const opts *o) {
  const char *tok_name;
  zt_tokenizer *tok = make_tokenizer(o, &tok_name);
  zt_data_setup s = {
      .data_path_n = o->data_path_n, .data_path = o->data_path,
      .split_path_n = {o->split_path_n[0], o->split_path_n[1], o->split_path_n[2]},
      .split_path = {o->split_path[0], o->split_path[1], o->split_path[2]}, .split = o->split,
      .cache_path = o->cache, .micro_batch = o->micro_batch, .seq_length = o->seq, .seed = o->seed,
      .train_exact_num_epochs = o->exact, .num_samples = {o->samples[0], o->samples[1], o->samples[2]},
      .mmap_warmup = o->mmap_warmup, .vocab_size = zt_tokenizer_vocab_size(tok), .tokenizer = tok,
      .tokenizer_name = tok_name, .eval_iters = 1, .mask_prob = strtof(o->mask_prob, NULL),
      .short_seq_prob = strtof(o->ssp, NULL), .binary_head = o->binary_head};
  zt_data_provider *p = zt_bert_provider_create(&s);
  const int B = o->micro_batch, T = o->seq;
  for (int k = 0; k < 3; k++) {
    if (!zt_data_has_split(p, k)) continue;
    const size_t rows = (size_t)o->batches * B;
    int32_t *tokens = calloc(rows * T, 4), *types = calloc(rows * T, 4), *labels = calloc(rows * T, 4),
            *sent = calloc(rows, 4), *pad = calloc(rows * T, 4);
    float *lm = calloc(rows * T, 4);
    int has_types = 0, has_sent = 0;
    for (int m = 0; m < o->batches; m++) {
      zt_batch b;
      zt_data_load(p, k, (uint64_t)m * B, &b);
      const size_t off = (size_t)m * B * T;
      memcpy(tokens + off, b.tokens, (size_t)B * T * 4);
      memcpy(labels + off, b.labels, (size_t)B * T * 4);
      memcpy(lm + off, b.loss_mask, (size_t)B * T * 4);
      for (size_t i = 0; i < (size_t)B * T; i++) pad[off + i] = b.padding[i];
      if (b.token_types) memcpy(types + off, b.token_types, (size_t)B * T * 4), has_types = 1;
      if (b.sentence_labels) memcpy(sent + (size_t)m * B, b.sentence_labels, (size_t)B * 4), has_sent = 1;
    }
    char name[256];
    snprintf(name, sizeof name, "split%d_batch_tokens", k);
    save(o->outdir, name, tokens, "<i4", 2, (int64_t)rows, T);
    snprintf(name, sizeof name, "split%d_batch_labels", k);
    save(o->outdir, name, labels, "<i4", 2, (int64_t)rows, T);
    snprintf(name, sizeof name, "split%d_batch_loss_mask", k);
    save(o->outdir, name, lm, "<f4", 2, (int64_t)rows, T);
    snprintf(name, sizeof name, "split%d_batch_padding", k);
    save(o->outdir, name, pad, "<i4", 2, (int64_t)rows, T);
    if (has_types) {
      snprintf(name, sizeof name, "split%d_batch_token_types", k);
      save(o->outdir, name, types, "<i4", 2, (int64_t)rows, T);
    }
    if (has_sent) {
      snprintf(name, sizeof name, "split%d_batch_sentence_labels", k);
      save(o->outdir, name, sent, "<i4", 1, (int64_t)rows, 0);
    }
    free(tokens), free(types), free(labels), free(sent), free(pad), free(lm);
  }
  zt_data_free(p);
  zt_tokenizer_free(tok);
  return 0;
}

/* Words after a path flag, up to the next "--" flag. */
static int take_words(int argc, char **argv, int i, const char ***out) {
  int n = 0;
  while (i + 1 + n < argc && strncmp(argv[i + 1 + n], "--", 2) != 0) n++;
  *out = (const char **)argv + i + 1;
  return n;
}

int main(int argc, char **argv) {
  if (argc > 5 && strcmp(argv[1], "--rank") == 0 && strcmp(argv[3], "--world") == 0) {
    zt_set_rank(atoi(argv[2]), atoi(argv[4]));
    argv[4] = argv[0];
    argv += 4;
    argc -= 4;
  }
  if (argc > 1 && strcmp(argv[1], "cdf") == 0) {
    double cdf[3];
    zt_bert_ngram_cdf(cdf);
    printf("%a %a %a\n", cdf[0], cdf[1], cdf[2]);
    return 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: see the comment at the top of bert_dataset_dump.c\n");
    return 2;
  }
  opts o = {.mode = argv[1], .outdir = argv[2], .split = "969, 30, 1", .mask_prob = "0.15", .ssp = "0.1", .seq = 128,
            .seed = 1234, .binary_head = 1, .micro_batch = 4, .batches = 1, .samples = {100, 10, 10}};
  for (int i = 3; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--vocab")) o.vocab_file = v, i++;
    else if (!strcmp(a, "--null-vocab")) o.null_vocab = atoi(v), i++;
    else if (!strcmp(a, "--seq")) o.seq = atoi(v), i++;
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10), i++;
    else if (!strcmp(a, "--split")) o.split = v, i++;
    else if (!strcmp(a, "--samples"))
      sscanf(v, "%" SCNd64 ",%" SCNd64 ",%" SCNd64, &o.samples[0], &o.samples[1], &o.samples[2]), i++;
    else if (!strcmp(a, "--mask-prob")) o.mask_prob = v, i++;
    else if (!strcmp(a, "--short-seq-prob")) o.ssp = v, i++;
    else if (!strcmp(a, "--no-binary-head")) o.binary_head = 0;
    else if (!strcmp(a, "--cache")) o.cache = v, i++;
    else if (!strcmp(a, "--exact")) o.exact = atoll(v), i++;
    else if (!strcmp(a, "--micro-batch")) o.micro_batch = atoi(v), i++;
    else if (!strcmp(a, "--batches")) o.batches = atoi(v), i++;
    else if (!strcmp(a, "--mmap-warmup")) o.mmap_warmup = 1;
    else if (!strcmp(a, "--data-path")) i += o.data_path_n = take_words(argc, argv, i, &o.data_path);
    else if (!strcmp(a, "--train-data-path")) i += o.split_path_n[0] = take_words(argc, argv, i, &o.split_path[0]);
    else if (!strcmp(a, "--valid-data-path")) i += o.split_path_n[1] = take_words(argc, argv, i, &o.split_path[1]);
    else if (!strcmp(a, "--test-data-path")) i += o.split_path_n[2] = take_words(argc, argv, i, &o.split_path[2]);
    else {
      fprintf(stderr, "bert_dataset_dump: unknown flag %s\n", a);
      return 2;
    }
  }
  if (!strcmp(o.mode, "data")) return data_mode(&o);
  if (!strcmp(o.mode, "provider")) return provider_mode(&o);
  fprintf(stderr, "bert_dataset_dump: unknown mode %s\n", o.mode);
  return 2;
}
