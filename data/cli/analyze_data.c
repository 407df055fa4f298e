/* analyze_data: Megatron-DeepSpeed's examples_deepspeed/data_efficiency/analyze_data.py in C. Runs DeepSpeed's
 * DataAnalyzer (data/analyzer.h) over the train split of the GPT or BERT data the same flags give pretrain_gpt /
 * pretrain_bert, for the curriculum metrics total_vocab_freq and vocab_rarity (GPT, BERT), seqlen and
 * seqlen_vocab_rarity (BERT), and writes DeepSpeed's files under --save (docs/data_efficiency_analyzer.md). The flags of the example scripts that only shape
 * a model (--num-layers, --hidden-size, ...) are accepted and have no effect. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/analyzer.h"
#include "data/bert_data.h"
#include "data/bert_provider.h"
#include "data/gpt_data.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/base/edit_distance.h"
#include "runtime/base/error.h"

typedef struct {
  const char *task, *data_type, *save, *split, *cache_path, *tokenizer_type, *vocab_file, *merge_file,
      *tokenizer_model, *data_impl;
  int metric_n, specific_n, data_path_n;
  char **metric, **specific, **data_path;
  int num_workers, worker_id, num_threads, num_threads_reduce;
  int seq_length, vocab_size, vocab_extra_ids, divisible_by, tp, mmap_warmup, no_binary_head, ignored_flag;
  long long seed, exact_epochs, gbs, mbs;
  double mask_prob, short_seq_prob;
  const char *ignored;
} options;

enum { A_STR, A_INT, A_I64, A_F64, A_LIST, A_FLAG, A_IGNORED, A_IGNORED_FLAG };
typedef struct {
  const char *name;
  int kind;
  size_t off, count_off;
  const char *help;
} flag_def;
#define O(f) offsetof(options, f)
static const flag_def k_flags[] = {
    {"--analyzing-task", A_STR, O(task), 0, "map or reduce (required)"},
    {"--analyzing-data-type", A_STR, O(data_type), 0, "GPT or BERT (required)"},
    {"--analyzing-metric", A_LIST, O(metric), O(metric_n), "metrics: total_vocab_freq, vocab_rarity (needs the reduced "
     "total_vocab_freq), seqlen and seqlen_vocab_rarity (BERT; the latter needs total_vocab_freq too)"},
    {"--analyzing-num-workers", A_INT, O(num_workers), 0, "number of workers (separate runs, e.g. nodes; default 1)"},
    {"--analyzing-worker-id", A_INT, O(worker_id), 0, "this worker's id, 0..num-workers-1 (map; default 0)"},
    {"--analyzing-num-threads", A_INT, O(num_threads), 0, "threads per worker (default 1)"},
    {"--analyzing-num-threads-reduce", A_INT, O(num_threads_reduce), 0, "threads of the reduce (default 1)"},
    {"--analyzing-specific-threads", A_LIST, O(specific), O(specific_n), "map only these threads of this worker "
     "(default all)"},
    {"--save", A_STR, O(save), 0, "the analysis directory (required)"},
    {"--data-path", A_LIST, O(data_path), O(data_path_n), "the dataset prefix (one; required)"},
    {"--split", A_STR, O(split), 0, "train/valid/test document split (default 969, 30, 1); the train split is analyzed"},
    {"--seq-length", A_INT, O(seq_length), 0, "sequence length (required)"},
    {"--seed", A_I64, O(seed), 0, "the datasets' seed (default 1234)"},
    {"--train-data-exact-num-epochs", A_I64, O(exact_epochs), 0, "epochs of the train split to index (default: one)"},
    {"--data-cache-path", A_STR, O(cache_path), 0, "where the index files are cached"},
    {"--data-impl", A_STR, O(data_impl), 0, "mmap or infer (both read Megatron's mmap format)"},
    {"--mmap-warmup", A_FLAG, O(mmap_warmup), 0, "read the .bin once before starting"},
    {"--global-batch-size", A_I64, O(gbs), 0, "the map's batch size (default --micro-batch-size, else 1)"},
    {"--micro-batch-size", A_I64, O(mbs), 0, "default of --global-batch-size"},
    {"--tokenizer-type", A_STR, O(tokenizer_type), 0, "GPT2BPETokenizer (default), BertWordPieceLowerCase, ..."},
    {"--vocab-file", A_STR, O(vocab_file), 0, "vocabulary file"},
    {"--merge-file", A_STR, O(merge_file), 0, "BPE merges file"},
    {"--tokenizer-model", A_STR, O(tokenizer_model), 0, "SentencePiece model"},
    {"--vocab-size", A_INT, O(vocab_size), 0, "NullTokenizer's vocabulary size"},
    {"--vocab-extra-ids", A_INT, O(vocab_extra_ids), 0, "extra <extra_id_N> tokens (default 0)"},
    {"--make-vocab-size-divisible-by", A_INT, O(divisible_by), 0, "vocabulary padding (default 128)"},
    {"--tensor-model-parallel-size", A_INT, O(tp), 0, "vocabulary padding multiplier (default 1)"},
    {"--mask-prob", A_F64, O(mask_prob), 0, "accepted, no effect (analyze_data.py sets it to 0: samples unmasked)"},
    {"--short-seq-prob", A_F64, O(short_seq_prob), 0, "BERT short samples (default 0.1)"},
    {"--bert-no-binary-head", A_FLAG, O(no_binary_head), 0, "BERT samples of one segment"},
    {"--num-layers", A_IGNORED, 0, 0, "accepted, no effect (model shape)"},
    {"--hidden-size", A_IGNORED, 0, 0, "accepted, no effect"},
    {"--num-attention-heads", A_IGNORED, 0, 0, "accepted, no effect"},
    {"--max-position-embeddings", A_IGNORED, 0, 0, "accepted, no effect"},
    {"--distributed-backend", A_IGNORED, 0, 0, "accepted, no effect"},
    {"--save-interval", A_IGNORED, 0, 0, "accepted, no effect"},
    {"--return-data-index", A_IGNORED_FLAG, 0, 0, "accepted (sample indexes are always recorded)"},
};
#define N_FLAGS ((int)(sizeof k_flags / sizeof k_flags[0]))

static void usage(void) {
  printf("usage: analyze_data --analyzing-task {map,reduce} --analyzing-data-type {GPT,BERT} --analyzing-metric M\n"
         "                    --data-path PREFIX --seq-length N --save DIR [tokenizer and data flags]\n\n"
         "Megatron-DeepSpeed's examples_deepspeed/data_efficiency/analyze_data.py: DeepSpeed's DataAnalyzer over the\n"
         "train split, writing the curriculum-learning index files DeepSpeed's data sampler reads under DIR/<metric>/.\n"
         "Run map on every worker, then reduce once. Files already in DIR are never overwritten.\n\n");
  for (int i = 0; i < N_FLAGS; i++) printf("  %-32s %s\n", k_flags[i].name, k_flags[i].help);
}

static const flag_def *find_flag(const char *name) {
  for (int i = 0; i < N_FLAGS; i++)
    if (!strcmp(k_flags[i].name, name)) return &k_flags[i];
  const flag_def *hit = NULL;
  int hits = 0;
  size_t n = strlen(name);
  for (int i = 0; i < N_FLAGS; i++)
    if (n > 2 && !strncmp(k_flags[i].name, name, n)) hit = &k_flags[i], hits++;
  if (hits == 1) return hit;
  if (hits > 1) zt_fatal("ambiguous argument", "%s matches %d flags", name, hits);
  int best = INT_MAX;
  const char *best_name = NULL;
  for (int i = 0; i < N_FLAGS; i++) {
    int d = zt_edit_distance(name, k_flags[i].name);
    if (d < best) best = d, best_name = k_flags[i].name;
  }
  if (best <= ((int)n / 3 > 2 ? (int)n / 3 : 2)) zt_fatal("unrecognized argument", "%s; did you mean %s?", name, best_name);
  zt_fatal("unrecognized argument", "%s (see --help for the supported flags)", name);
}

static long long parse_ll(const char *flag, const char *v) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end) zt_fatal(flag, "invalid int value: '%s'", v);
  return x;
}

static void parse(options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->num_workers = o->num_threads = o->num_threads_reduce = 1;
  o->split = "969, 30, 1";
  o->seed = 1234;
  o->divisible_by = 128;
  o->tp = 1;
  o->mask_prob = 0.15;
  o->short_seq_prob = 0.1;
  o->tokenizer_type = "GPT2BPETokenizer";
  o->seq_length = -1;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage();
      exit(0);
    }
    if (strncmp(arg, "--", 2)) zt_fatal("unrecognized argument", "%s (flags start with --)", arg);
    char name[128];
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    zt_check(nlen < sizeof name, "unrecognized argument", "%.60s...", arg);
    memcpy(name, arg, nlen);
    name[nlen] = 0;
    const flag_def *f = find_flag(name);
    char *field = (char *)o + f->off;
    if (f->kind == A_FLAG || f->kind == A_IGNORED_FLAG) {
      zt_check(!eq, f->name, "takes no value");
      if (f->kind == A_FLAG) *(int *)field = 1;
      continue;
    }
    if (f->kind == A_LIST) {
      char **first = argv + i + 1;
      int n = 0;
      if (eq) zt_fatal(f->name, "give the values as separate words: %s v1 v2 ...", f->name);
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) i++, n++;
      zt_check(n > 0, f->name, "expected at least one argument");
      *(char ***)field = first;
      *(int *)((char *)o + f->count_off) = n;
      continue;
    }
    const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
    zt_check(v != NULL, f->name, "expected one argument");
    switch (f->kind) {
    case A_STR: *(const char **)field = v; break;
    case A_INT: {
      long long x = parse_ll(f->name, v);
      zt_check(x >= INT_MIN && x <= INT_MAX, f->name, "invalid int value: '%s'", v);
      *(int *)field = (int)x;
    } break;
    case A_I64: *(long long *)field = parse_ll(f->name, v); break;
    case A_F64: {
      char *end;
      double x = strtod(v, &end);
      zt_check(end != v && !*end, f->name, "invalid float value: '%s'", v);
      *(double *)field = x;
    } break;
    default: break; /* A_IGNORED: the value is read and dropped */
    }
  }
}

typedef struct {
  int gpt;
  zt_gpt_data g;
  zt_bert_data b;
  zt_bert_scratch **scratch;
  zt_bert_sample *samples;
  int seq_length;
} source;

static int get_sample(void *ctx, int thread, int64_t i, int32_t *tokens) {
  source *s = ctx;
  if (s->gpt) {
    zt_gpt_data_get(&s->g, 0, i, tokens);
    return s->seq_length + 1;
  }
  zt_bert_sample *smp = &s->samples[thread];
  zt_bert_data_get(&s->b, 0, i, s->scratch[thread], smp);
  int n = 0;
  for (int j = 0; j < s->seq_length; j++) n += smp->padding_mask[j] != 0; /* torch.count_nonzero(padding_mask) */
  /* Megatron pads at the end: text[0, n) are the tokens the padding_mask weights keep in the vocabulary metrics */
  memcpy(tokens, smp->text, (size_t)s->seq_length * sizeof *tokens);
  return n;
}

int main(int argc, char **argv) {
  options o;
  parse(&o, argc, argv);
  zt_check(o.task, "missing argument", "--analyzing-task {map,reduce} is required");
  const int map = !strcmp(o.task, "map");
  zt_check(map || !strcmp(o.task, "reduce"), "--analyzing-task", "invalid choice: '%s' (choose from 'map', 'reduce')",
           o.task);
  zt_check(o.data_type, "missing argument", "--analyzing-data-type {BERT,GPT} is required");
  const int gpt = !strcmp(o.data_type, "GPT");
  zt_check(gpt || !strcmp(o.data_type, "BERT"), "--analyzing-data-type", "invalid choice: '%s' (choose from 'BERT', "
           "'GPT')", o.data_type);
  zt_check(o.save, "missing argument", "--save DIR (the analysis directory) is required");
  zt_check(o.data_path_n == 1, "--data-path", "analyze_data reads one dataset prefix (got %d words): blended datasets "
           "give each member's sample indexes (DeepSpeed records the member's 'index'); analyze each dataset on its "
           "own", o.data_path_n);
  zt_check(o.seq_length > 0, "missing argument", "--seq-length N (> 0) is required");
  zt_check(!o.data_impl || !strcmp(o.data_impl, "mmap") || !strcmp(o.data_impl, "infer"), "--data-impl",
           "'%s': only mmap (or infer) datasets are read", o.data_impl);
  zt_check(o.exact_epochs >= 0, "bad argument value", "--train-data-exact-num-epochs %lld must be >= 1",
           o.exact_epochs);
  zt_check(o.divisible_by > 0 && o.tp > 0, "bad argument value", "--make-vocab-size-divisible-by %d and "
           "--tensor-model-parallel-size %d must be > 0", o.divisible_by, o.tp);
  zt_analyzer a = {.save = o.save, .num_workers = o.num_workers, .worker_id = o.worker_id,
                   .num_threads = o.num_threads, .num_threads_reduce = o.num_threads_reduce,
                   .seq_length = o.seq_length,
                   .batch_size = o.gbs > 0 ? o.gbs : o.mbs > 0 ? o.mbs : 1};
  zt_check(o.gbs >= 0 && o.mbs >= 0, "bad argument value", "--global-batch-size %lld / --micro-batch-size %lld must "
           "be > 0", o.gbs, o.mbs);
  zt_check(o.metric_n >= 1 && o.metric_n <= 4, "--analyzing-metric", "name one to four metrics (got %d)", o.metric_n);
  a.num_metrics = o.metric_n;
  for (int m = 0; m < o.metric_n; m++) {
    if (zt_metric_parse(o.metric[m], &a.metrics[m]) != 0)
      zt_fatal("--analyzing-metric", "'%s' is not a metric zerotron analyzes (total_vocab_freq, vocab_rarity; "
               "seqlen, seqlen_vocab_rarity: BERT)", o.metric[m]);
    zt_check(!gpt || (a.metrics[m] != ZT_METRIC_SEQLEN && a.metrics[m] != ZT_METRIC_SEQLEN_VOCAB_RARITY),
             "--analyzing-metric", "GPT data has fixed seqlen, thus "
             "unnecessary to analyze seqlen metric (analyze_data.py refuses it too)");
  }
  int *specific = NULL;
  if (o.specific_n) {
    zt_check(map, "--analyzing-specific-threads", "is for the map task");
    specific = malloc((size_t)o.specific_n * sizeof *specific);
    for (int i = 0; i < o.specific_n; i++) {
      long long x = parse_ll("--analyzing-specific-threads", o.specific[i]);
      zt_check(x >= 0 && x < o.num_threads, "bad argument value", "--analyzing-specific-threads %lld: threads are "
               "numbered 0..%d (--analyzing-num-threads %d)", x, o.num_threads - 1, o.num_threads);
      specific[i] = (int)x;
    }
    a.num_specific = o.specific_n;
    a.specific_threads = specific;
  }
  zt_check(o.num_workers >= 1, "bad argument value", "--analyzing-num-workers %d must be >= 1", o.num_workers);
  zt_check(o.num_threads >= 1, "bad argument value", "--analyzing-num-threads %d must be >= 1", o.num_threads);
  zt_check(o.num_threads_reduce >= 1, "bad argument value", "--analyzing-num-threads-reduce %d must be >= 1",
           o.num_threads_reduce);
  zt_check(!map || (o.worker_id >= 0 && o.worker_id < o.num_workers), "bad argument value", "--analyzing-worker-id "
           "%d: workers are numbered 0..%d (--analyzing-num-workers %d)", o.worker_id, o.num_workers - 1,
           o.num_workers);

  zt_analyzer_precheck(&a, map); /* --save conflicts and missing map results, before any dataset is built */
  zt_tokenizer_kind kind;
  zt_check(zt_tokenizer_parse_kind(o.tokenizer_type, &kind) == 0, "--tokenizer-type", "unknown tokenizer '%s'",
           o.tokenizer_type);
  zt_tokenizer_spec ts = {.kind = kind, .vocab_file = o.vocab_file, .merge_file = o.merge_file,
                          .tokenizer_model = o.tokenizer_model, .vocab_size = o.vocab_size,
                          .vocab_extra_ids = o.vocab_extra_ids};
  zt_tokenizer *tok = zt_tokenizer_create(&ts);
  const long long vocab = zt_tokenizer_vocab_size(tok), multiple = (long long)o.divisible_by * o.tp;
  const long long padded = (vocab + multiple - 1) / multiple * multiple;
  a.vocab_len = padded + 1;

  source s = {.gpt = gpt, .seq_length = o.seq_length};
  const char *const *dp = (const char *const *)o.data_path;
  const time_t t0 = time(NULL);
  if (gpt) {
    zt_gpt_data_config c = {.data_path_n = 1, .data_path = dp, .split = o.split, .cache_path = o.cache_path,
                            .seq_length = o.seq_length, .seed = (uint64_t)o.seed,
                            .train_exact_num_epochs = o.exact_epochs, .num_samples = {1, 1, 1},
                            .mmap_warmup = o.mmap_warmup, .vocab_size = padded,
                            .tokenizer_name = o.tokenizer_type};
    zt_log("> building train, validation, and test datasets for GPT ...\n");
    zt_gpt_data_build(&s.g, &c);
    zt_check(zt_gpt_data_has(&s.g, 0), "--split", "'%s' gives the train split no documents", o.split);
    a.num_samples = s.g.split[0].size;
    a.max_tokens = o.seq_length + 1;
  } else {
    zt_check(o.seq_length >= 5, "bad argument value", "--seq-length %d: a BERT sample needs at least 5", o.seq_length);
    zt_check(o.seed >= 1 && o.seed <= INT32_MAX - 1, "bad argument value", "--seed %lld: Megatron's BERT samples "
             "mapping takes an int32 seed in [1, %d]", o.seed, INT32_MAX - 1);
    static zt_bert_vocab bv;
    zt_bert_vocab_from_tokenizer(&bv, tok, o.tokenizer_type);
    zt_bert_data_config c = {.data_path_n = 1, .data_path = dp, .split = o.split, .cache_path = o.cache_path,
                             .max_seq_length = o.seq_length, .added_tokens = 3, .seed = (uint64_t)o.seed,
                             .masked_lm_prob = 0, /* analyze_data.py: args.mask_prob = 0, the text unmasked */
                             .short_seq_prob = o.short_seq_prob, .binary_head = !o.no_binary_head,
                             .train_exact_num_epochs = o.exact_epochs, .num_samples = {1, 1, 1},
                             .mmap_warmup = o.mmap_warmup, .vocab_size = bv.size, .tokenizer_name = o.tokenizer_type,
                             .vocab = &bv};
    zt_log("> building train, validation, and test datasets for BERT ...\n");
    zt_bert_data_build(&s.b, &c);
    zt_check(zt_bert_data_has(&s.b, 0), "--split", "'%s' gives the train split no documents", o.split);
    a.num_samples = s.b.split[0].size;
    a.max_tokens = o.seq_length;
    s.scratch = calloc((size_t)o.num_threads, sizeof *s.scratch);
    s.samples = calloc((size_t)o.num_threads, sizeof *s.samples);
    for (int t = 0; t < o.num_threads; t++) {
      s.scratch[t] = zt_bert_scratch_new();
      zt_bert_sample *x = &s.samples[t];
      x->text = malloc((size_t)o.seq_length * 4);
      x->types = malloc((size_t)o.seq_length * 4);
      x->labels = malloc((size_t)o.seq_length * 4);
      x->loss_mask = malloc((size_t)o.seq_length);
      x->padding_mask = malloc((size_t)o.seq_length);
    }
  }
  zt_log("> analyzing %lld train samples (%s, %s task, padded vocabulary %lld)\n", (long long)a.num_samples,
         o.data_type, o.task, padded);
  a.sample = get_sample;
  a.ctx = &s;
  if (map) zt_analyzer_map(&a);
  else zt_analyzer_reduce(&a);
  zt_log("%s job finished in %g hr.\n", o.task, difftime(time(NULL), t0) / 3600.0);
  free(specific);
  zt_tokenizer_free(tok);
  return 0;
}
