/* BertDataset: helpers.cpp's build_mapping, its cache, and Megatron's build_training_sample (see bert_dataset.h);
 * T5Dataset's build_training_sample over the same mapping and masking (t5_dataset.h).
 * The random draws are made exactly as the reference makes them: std::mt19937 (the same engine and seeding as
 * NumPy's MT19937, data/numpy_random.h) for the target lengths, std::mt19937_64 for the row shuffle, and
 * numpy.random.RandomState's random(), randint(), shuffle() and choice(p=...) for each sample. */
#include "data/bert_dataset.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/cache_sync.h"
#include "data/t5_dataset.h"
#include "data/gpt_dataset.h"
#include "data/numpy_random.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"
#include "runtime/base/timer.h"

#define LONG_SENTENCE_LEN 512 /* helpers.cpp: documents with a longer sentence are skipped */

/* ---- random numbers ------------------------------------------------------------------------------------------ */

/* std::mt19937_64 (Matsumoto & Nishimura's 64-bit MT with the C++ standard's seeding). */
typedef struct {
  uint64_t x[312];
  int pos;
} mt64;

static void mt64_seed(mt64 *g, uint64_t seed) {
  g->x[0] = seed;
  for (int i = 1; i < 312; i++) g->x[i] = 6364136223846793005ull * (g->x[i - 1] ^ (g->x[i - 1] >> 62)) + (uint64_t)i;
  g->pos = 312;
}

static uint64_t mt64_next(mt64 *g) {
  if (g->pos == 312) {
    const uint64_t upper = 0xFFFFFFFF80000000ull, lower = 0x7FFFFFFFull, matrix = 0xB5026F5AA96619E9ull;
    for (int i = 0; i < 312; i++) {
      uint64_t y = (g->x[i] & upper) | (g->x[(i + 1) % 312] & lower);
      g->x[i] = g->x[(i + 156) % 312] ^ (y >> 1) ^ ((y & 1u) ? matrix : 0u);
    }
    g->pos = 0;
  }
  uint64_t y = g->x[g->pos++];
  y ^= (y >> 29) & 0x5555555555555555ull;
  y ^= (y << 17) & 0x71D67FFFEDA60000ull;
  y ^= (y << 37) & 0xFFF7EEE000000000ull;
  y ^= y >> 43;
  return y;
}

void zt_bert_ngram_cdf(double cdf[3]) {
  /* pvals = 1. / np.arange(1, 4); pvals /= pvals.sum(); p = pvals[:3] / pvals[:3].sum() (all 3 n-grams are always
   * offered: each candidate's list holds 3 slices); choice: cdf = p.cumsum(); cdf /= cdf[-1]. NumPy sums 3 values
   * left to right. */
  double pv[3];
  for (int i = 0; i < 3; i++) pv[i] = 1.0 / (double)(i + 1);
  const double s = pv[0] + pv[1] + pv[2];
  for (int i = 0; i < 3; i++) pv[i] /= s;
  const double s2 = pv[0] + pv[1] + pv[2];
  double p[3];
  for (int i = 0; i < 3; i++) p[i] = pv[i] / s2;
  cdf[0] = p[0];
  cdf[1] = cdf[0] + p[1];
  cdf[2] = cdf[1] + p[2];
  const double last = cdf[2];
  for (int i = 0; i < 3; i++) cdf[i] /= last;
}

/* ---- the samples mapping (helpers.cpp build_mapping_impl) ------------------------------------------------------- */

static inline uint64_t row_get(const void *rows, int wide, int64_t k) {
  return wide ? ((const uint64_t *)rows)[k] : ((const uint32_t *)rows)[k];
}
static inline void row_set(void *rows, int wide, int64_t k, uint64_t v) {
  if (wide) ((uint64_t *)rows)[k] = v;
  else ((uint32_t *)rows)[k] = (uint32_t)v;
}

/* get_target_sample_len: one draw per call once short sequences are on (r is uint_fast32_t: the modulos are
 * unsigned). */
static int32_t target_len(int32_t ratio, int32_t max_length, zt_np_random *g) {
  if (ratio == 0) return max_length;
  const uint64_t r = zt_np_random_u32(g);
  if (r % (uint64_t)ratio == 0) return (int32_t)(2 + r % (uint64_t)(max_length - 1));
  return max_length;
}

void *zt_bert_build_mapping(const zt_indexed_dataset *data, int64_t doc_begin, int64_t doc_end, int32_t num_epochs,
                            uint64_t max_num_samples, int32_t max_seq_length, double short_seq_prob, int32_t seed,
                            int min_num_sent, int verbose, int64_t *n_out, int *wide_out) {
  zt_check(num_epochs > 0 && max_seq_length > 1 && short_seq_prob >= 0 && short_seq_prob <= 1 && seed > 0 &&
               seed < INT32_MAX, "samples mapping", "helpers.cpp's assertions: epochs %d > 0, max_seq_length %d > 1, "
           "0 <= short_seq_prob %g <= 1, 0 < seed %d < 2^31 - 1", num_epochs, max_seq_length, short_seq_prob, seed);
  const int wide = (uint64_t)data->num_items > UINT32_MAX;
  int32_t ratio = 0;
  if (short_seq_prob > 0) {
    const double r = round(1.0 / short_seq_prob);
    zt_check(r <= INT32_MAX, "bad argument value", "--short-seq-prob %g: 1/p = %g does not fit helpers.cpp's int32 "
             "ratio", short_seq_prob, r);
    ratio = (int32_t)r;
  }
  const int64_t s_first = zt_indexed_doc(data, doc_begin), s_last = zt_indexed_doc(data, doc_end);
  if (verbose) {
    zt_log("    using %s for data mapping...\n", wide ? "uint64" : "uint32");
    zt_log("    using:\n     number of documents:            %lld\n     sentences range:                [%lld, %lld)\n"
           "     total number of sentences:      %lld\n     number of epochs:               %d\n"
           "     maximum number of samples:      %" PRIu64 "\n     maximum sequence length:        %d\n"
           "     short sequence probability:     %g\n     short sequence ration (1/prob): %d\n"
           "     seed:                           %d\n", (long long)(doc_end - doc_begin), (long long)s_first,
           (long long)s_last, (long long)(s_last - s_first), num_epochs, max_num_samples, max_seq_length,
           short_seq_prob, ratio, seed);
  }
  zt_np_random g; /* std::mt19937(seed): NumPy's MT19937 engine and init_genrand seeding */
  zt_np_random_seed(&g, (uint32_t)seed);
  int64_t cap = 1024, n = 0;
  void *rows = zt_malloc((size_t)cap * 3 * (wide ? 8 : 4), "samples mapping");
  uint64_t empty_docs = 0, one_sent_docs = 0, long_sent_docs = 0;
  for (int32_t epoch = 0; epoch < num_epochs; epoch++) {
    if ((uint64_t)n >= max_num_samples) {
      if (verbose) zt_log("    reached %" PRIu64 " samples after %d epochs ...\n", max_num_samples, epoch);
      break;
    }
    for (int64_t doc = doc_begin; doc < doc_end; doc++) {
      const int64_t first = zt_indexed_doc(data, doc), last = zt_indexed_doc(data, doc + 1);
      int64_t prev_start = first, remain = last - first;
      if (epoch == 0) {
        empty_docs += remain == 0;
        one_sent_docs += remain == 1;
      }
      int long_sentence = 0;
      if (remain > 1)
        for (int64_t s = first; s < last; s++)
          if (zt_indexed_size(data, s) > LONG_SENTENCE_LEN) {
            long_sent_docs += epoch == 0;
            long_sentence = 1;
            break;
          }
      if (remain < min_num_sent || long_sentence) continue;
      int64_t seq_len = 0, num_sent = 0;
      int32_t target = target_len(ratio, max_seq_length, &g);
      for (int64_t s = first; s < last; s++) {
        seq_len += zt_indexed_size(data, s);
        num_sent++;
        remain--;
        if ((seq_len >= target && remain > 1 && num_sent >= min_num_sent) || remain == 0) {
          if (n == cap) {
            cap *= 2;
            rows = realloc(rows, (size_t)cap * 3 * (wide ? 8 : 4));
            zt_check(rows, "samples mapping", "out of memory growing the mapping to %lld samples", (long long)cap);
          }
          row_set(rows, wide, 3 * n, (uint64_t)prev_start);
          row_set(rows, wide, 3 * n + 1, (uint64_t)(s + 1));
          row_set(rows, wide, 3 * n + 2, (uint64_t)target);
          n++;
          prev_start = s + 1;
          target = target_len(ratio, max_seq_length, &g);
          seq_len = 0;
          num_sent = 0;
        }
      }
    }
    /* Megatron would go on for 2^31 epochs without a sample; a split without one is refused */
    zt_check(!(epoch == 0 && n == 0), "dataset",
             "%s: the %lld documents [%lld, %lld) give no BERT sample: a sample needs a document of at least %d "
             "sentence%s without a sentence over %d tokens (%" PRIu64 " empty, %" PRIu64 " with one sentence, %" PRIu64
             " with a long sentence)", data->prefix, (long long)(doc_end - doc_begin), (long long)doc_begin,
             (long long)doc_end, min_num_sent, min_num_sent > 1 ? "s" : "", LONG_SENTENCE_LEN, empty_docs,
             one_sent_docs, long_sent_docs);
  }
  if (verbose)
    zt_log("   number of empty documents: %" PRIu64 "\n   number of documents with one sentence: %" PRIu64 "\n"
           "   number of documents with long sentences: %" PRIu64 "\n   will create mapping for %lld samples\n",
           empty_docs, one_sent_docs, long_sent_docs, (long long)n);
  /* the shuffle: std::mt19937_64(seed + 1), j = draw % (i + 1) for i from the last row down */
  mt64 g64;
  mt64_seed(&g64, (uint64_t)(seed + 1));
  for (int64_t i = n - 1; i > 0; i--) {
    const int64_t j = (int64_t)(mt64_next(&g64) % (uint64_t)(i + 1));
    for (int c = 0; c < 3; c++) {
      const uint64_t t = row_get(rows, wide, 3 * i + c);
      row_set(rows, wide, 3 * i + c, row_get(rows, wide, 3 * j + c));
      row_set(rows, wide, 3 * j + c, t);
    }
  }
  *n_out = n;
  *wide_out = wide;
  return rows;
}

/* ---- the cache ------------------------------------------------------------------------------------------------ */

char *zt_bert_mapping_name(const zt_bert_dataset_spec *sp) {
  char buf[4096];
  int len;
  if (sp->exact_num_epochs > 0) /* max_num_samples = int64 max - 1: no _mns */
    len = snprintf(buf, sizeof buf, "%s_%s_indexmap_exact%lldep_%dmsl_%.2fssp_%llus", sp->prefix, sp->name,
                   (long long)sp->exact_num_epochs, sp->max_seq_length - sp->added_tokens, sp->short_seq_prob,
                   (unsigned long long)sp->seed);
  else /* num_epochs = int32 max - 1: no _ep */
    len = snprintf(buf, sizeof buf, "%s_%s_indexmap_%lldmns_%dmsl_%.2fssp_%llus", sp->prefix, sp->name,
                   (long long)sp->num_samples, sp->max_seq_length - sp->added_tokens, sp->short_seq_prob,
                   (unsigned long long)sp->seed);
  zt_check(len > 0 && (size_t)len + 5 < sizeof buf, "--data-path", "the data prefix %s is too long", sp->prefix);
  strcat(buf, ".npy");
  char *out = zt_malloc(strlen(buf) + 1, "path");
  strcpy(out, buf);
  return out;
}

/* The document of [doc_begin, doc_end) that holds sentence `sent` (the last one starting at or before it, so that
 * empty documents are passed over). */
static int64_t doc_of_sentence(const zt_indexed_dataset *data, int64_t doc_begin, int64_t doc_end, int64_t sent) {
  int64_t lo = doc_begin, hi = doc_end - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (zt_indexed_doc(data, mid) <= sent) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Loads a mapping file and checks every row against the documents (Megatron's np.load(..., mmap_mode='r')): its
 * sentences lie in the split's documents and, as helpers.cpp builds them, inside one document. */
static void load_mapping(zt_bert_dataset *d, const char *path, int msl, int64_t doc_begin, int64_t doc_end) {
  zt_log(" > loading indexed mapping from %s\n", path);
  const double t0 = zt_now();
  char descr[8];
  int ndim;
  int64_t shape[ZT_NPY_MAX_DIMS];
  void *raw = zt_npy_load_any(path, descr, &ndim, shape);
  zt_check(ndim == 2 && shape[1] == 3, "dataset cache", "%s has %d dimensions (the first of %lld), expected a "
           "(samples, 3) samples mapping", path, ndim, ndim > 0 ? (long long)shape[0] : 1LL);
  const int64_t n = shape[0];
  zt_check(n > 0, "dataset cache", "%s holds no samples", path);
  const int is_u4 = strcmp(descr, "<u4") == 0, is_u8 = strcmp(descr, "<u8") == 0, is_i8 = strcmp(descr, "<i8") == 0,
            is_i4 = strcmp(descr, "<i4") == 0;
  zt_check(is_u4 || is_u8 || is_i8 || is_i4, "dataset cache", "%s holds dtype '%s'; expected Megatron's uint32 "
           "(or uint64) samples mapping", path, descr);
  d->wide = (uint64_t)d->data->num_items > UINT32_MAX;
  d->mapping = zt_malloc((size_t)n * 3 * (d->wide ? 8 : 4), "samples mapping");
  for (int64_t r = 0; r < n; r++) {
    int64_t v[3];
    for (int c = 0; c < 3; c++) {
      const int64_t k = 3 * r + c;
      v[c] = is_u4 ? (int64_t)((uint32_t *)raw)[k] : is_i4 ? (int64_t)((int32_t *)raw)[k]
           : is_i8 ? ((int64_t *)raw)[k] : (((uint64_t *)raw)[k] > INT64_MAX ? -1 : (int64_t)((uint64_t *)raw)[k]);
      row_set(d->mapping, d->wide, k, (uint64_t)v[c]);
    }
    zt_check(v[0] >= d->sent_begin && v[0] < v[1] && v[1] <= d->sent_end && v[1] - v[0] >= (d->binary_head ? 2 : 1)
                 && v[2] >= 2 && v[2] <= msl, "dataset cache",
             "%s: row %lld (%lld, %lld, %lld) is not a sample of the %s documents of %s (sentences [%lld, %lld), "
             "%s, target lengths 2..%d): a mapping for other documents (another --split%s)? Delete it to rebuild",
             path, (long long)r, (long long)v[0], (long long)v[1], (long long)v[2], d->name, d->data->prefix,
             (long long)d->sent_begin, (long long)d->sent_end,
             d->binary_head ? "at least 2 sentences each" : "1 or more sentences each", msl,
             d->binary_head ? ", or --bert-no-binary-head" : "");
    const int64_t doc = doc_of_sentence(d->data, doc_begin, doc_end, v[0]), doc_end_sent = zt_indexed_doc(d->data, doc + 1);
    zt_check(v[1] <= doc_end_sent, "dataset cache", "%s: row %lld (%lld, %lld, %lld) runs past the end of document "
             "%lld (sentences [%lld, %lld)); helpers.cpp never joins documents in one sample", path, (long long)r,
             (long long)v[0], (long long)v[1], (long long)v[2], (long long)doc, (long long)zt_indexed_doc(d->data, doc),
             (long long)doc_end_sent);
  }
  free(raw);
  d->num_samples = n;
  zt_log("    loaded indexed file in %.3f seconds\n", zt_now() - t0);
}

/* The places a mapping may be, and the first that holds it (NULL: none yet). */
typedef struct {
  const char *megatron_name, *other;
  const char *hit;
} mapping_search;

static int mapping_complete(const void *ctx) {
  mapping_search *s = (mapping_search *)ctx;
  if (!s->hit) s->hit = zt_file_exists(s->megatron_name) ? s->megatron_name
                      : s->other && zt_file_exists(s->other) ? s->other : NULL;
  return s->hit != NULL;
}

/* Where the mapping may be: Megatron's place beside the data, then --data-cache-path/{basename}. */
static char *cache_candidate(const char *megatron_name, const char *cache_path) {
  const char *slash = strrchr(megatron_name, '/');
  return zt_path_join(cache_path, slash ? slash + 1 : megatron_name);
}

void zt_bert_dataset_build(zt_bert_dataset *d, const zt_indexed_dataset *data, const zt_bert_dataset_spec *sp) {
  memset(d, 0, sizeof(*d));
  d->data = data;
  d->vocab = sp->vocab;
  snprintf(d->name, sizeof d->name, "%s", sp->name);
  d->max_seq_length = sp->max_seq_length;
  d->added_tokens = sp->added_tokens;
  zt_check(sp->added_tokens == 2 || sp->added_tokens == 3, "internal error", "samples mapping: %d added tokens",
           sp->added_tokens);
  d->binary_head = sp->binary_head;
  d->masked_lm_prob = sp->masked_lm_prob;
  d->seed = sp->seed;
  zt_check(sp->doc_begin >= 0 && sp->doc_begin < sp->doc_end && sp->doc_end <= data->num_docs, "dataset",
           "%s: documents [%lld, %lld) are not within the %lld documents of %s", sp->name, (long long)sp->doc_begin,
           (long long)sp->doc_end, (long long)data->num_docs, data->prefix);
  zt_check(sp->seed >= 1 && sp->seed <= INT32_MAX - 1, "bad argument value",
           "--seed %llu: Megatron's BERT samples mapping (helpers.cpp) takes an int32 seed > 0 (and uses seed + 1)",
           (unsigned long long)sp->seed);
  const int msl = sp->max_seq_length - sp->added_tokens;
  if (sp->added_tokens == 3)
    zt_check(msl >= 2, "bad argument value", "--seq-length %d leaves %d tokens besides [CLS] and two [SEP]; BERT needs "
             "at least 2 (--seq-length >= 5)", sp->max_seq_length, msl);
  else
    zt_check(msl >= 2, "bad argument value", "--encoder-seq-length %d leaves %d tokens of text; T5 needs at least 2 "
             "(--encoder-seq-length >= 4)", sp->max_seq_length, msl);
  zt_check(sp->num_samples > 0 || sp->exact_num_epochs > 0, "dataset", "%s: no samples requested", sp->name);
  zt_check(sp->exact_num_epochs <= INT32_MAX - 1, "bad argument value", "--train-data-exact-num-epochs %lld does not "
           "fit helpers.cpp's int32", (long long)sp->exact_num_epochs);
  d->sent_begin = zt_indexed_doc(data, sp->doc_begin);
  d->sent_end = zt_indexed_doc(data, sp->doc_end);

  /* (zt_path_join with no directory: a malloc'd copy of --train-idx-path) */
  char *megatron_name = sp->forced_mapping ? zt_path_join("", sp->forced_mapping) : zt_bert_mapping_name(sp);
  char *other = !sp->forced_mapping && sp->cache_path && sp->cache_path[0]
                    ? cache_candidate(megatron_name, sp->cache_path) : NULL;
  const char *build_file = other ? other : megatron_name;
  const char *hit = zt_file_exists(megatron_name) ? megatron_name : other && zt_file_exists(other) ? other : NULL;
  const int found = hit != NULL;
  if (!found && zt_rank() == 0) {
    zt_log(" > WARNING: could not find index map file %s, building the indices on rank 0 ...\n", build_file);
    zt_log(" > building samples index mapping for %s ...\n", sp->name);
    const double t0 = zt_now();
    const int32_t epochs = sp->exact_num_epochs > 0 ? (int32_t)sp->exact_num_epochs : INT32_MAX - 1;
    const uint64_t max_samples = sp->exact_num_epochs > 0 ? (uint64_t)INT64_MAX - 1 : (uint64_t)sp->num_samples;
    d->mapping = zt_bert_build_mapping(data, sp->doc_begin, sp->doc_end, epochs, max_samples, msl, sp->short_seq_prob,
                                       (int32_t)sp->seed, sp->binary_head ? 2 : 1, 1, &d->num_samples, &d->wide);
    zt_log(" > done building samples index maping\n");
    char *dir = zt_path_dirname(build_file);
    if (!dir[0]) strcpy(dir, ".");
    zt_cache_make_dir(dir);
    zt_check(access(dir, W_OK) == 0, "dataset cache", "cannot write the samples mapping %s: %s is not writable "
             "(choose another directory with --data-cache-path)", build_file, dir);
    free(dir);
    const int64_t shape[2] = {d->num_samples, 3};
    zt_cache_save_npy(build_file, d->mapping, d->wide ? "<u8" : "<u4", 2, shape);
    zt_log(" > saved the index mapping in %s\n", build_file);
    zt_log(" > elasped time to build and save samples mapping (seconds): %f\n", zt_now() - t0);
    hit = build_file;
  }
  /* every rank meets here: the others see rank 0's mapping within ZT_DATA_CACHE_TIMEOUT, or the job ends */
  mapping_search look = {.megatron_name = megatron_name, .other = other, .hit = hit};
  zt_cache_sync("BERT", build_file, found, mapping_complete, &look);
  if (found || zt_rank() != 0) {
    hit = look.hit;
    load_mapping(d, hit, msl, sp->doc_begin, sp->doc_end);
  }
  d->cache_file = zt_malloc(strlen(hit) + 1, "path");
  strcpy(d->cache_file, hit);
  free(megatron_name);
  free(other);
  if (d->num_samples < sp->num_samples && !sp->sampled) {
    zt_check(sp->exact_num_epochs == 0, "bad argument value", "--train-data-exact-num-epochs %lld gives %lld training "
             "samples, but training needs %lld (--dataloader-type cyclic or --repeated-dataloader go round them)",
             (long long)sp->exact_num_epochs, (long long)d->num_samples,
             (long long)sp->num_samples);
    zt_fatal("dataset", "%s: %lld samples available in %s but %lld requested", sp->name, (long long)d->num_samples,
             d->cache_file, (long long)sp->num_samples);
  }
  zt_log("    total number of samples: %lld\n", (long long)d->num_samples);
}

void zt_bert_dataset_free(zt_bert_dataset *d) {
  free(d->mapping);
  free(d->cache_file);
  memset(d, 0, sizeof(*d));
}

void zt_bert_dataset_row(const zt_bert_dataset *d, int64_t i, int64_t *first, int64_t *end, int64_t *target) {
  *first = (int64_t)row_get(d->mapping, d->wide, 3 * i);
  *end = (int64_t)row_get(d->mapping, d->wide, 3 * i + 1);
  *target = (int64_t)row_get(d->mapping, d->wide, 3 * i + 2);
}

/* ---- one sample (bert_dataset.py build_training_sample) -------------------------------------------------------- */

struct zt_bert_scratch {
  int32_t *text;       /* the sample's sentences back to back */
  size_t text_cap;
  int cap;             /* per-token arrays below */
  int32_t *tokens, *types, *out;
  int32_t *cand_start; /* [cands + 1] into cand_pos */
  int32_t *cand_pos;   /* token positions, candidate after candidate */
  int32_t *order;      /* the shuffled candidate list */
  uint8_t *covered;
  int32_t *span_at, *span_len; /* T5: each masked span's first entry of cand_pos and its length, in selection order */
  int nspans;
};

zt_bert_scratch *zt_bert_scratch_new(void) { return zt_calloc(1, sizeof(zt_bert_scratch), "BERT scratch"); }

void zt_bert_scratch_free(zt_bert_scratch *s) {
  if (!s) return;
  free(s->text), free(s->tokens), free(s->types), free(s->out), free(s->cand_start), free(s->cand_pos);
  free(s->order), free(s->covered);
  free(s);
}

static void scratch_tokens(zt_bert_scratch *s, int n) {
  if (n <= s->cap) return;
  free(s->tokens), free(s->types), free(s->out), free(s->cand_start), free(s->cand_pos), free(s->order);
  free(s->covered), free(s->span_at), free(s->span_len);
  s->cap = n;
  s->span_at = zt_malloc((size_t)n * 4, "T5 scratch");
  s->span_len = zt_malloc((size_t)n * 4, "T5 scratch");
  s->tokens = zt_malloc((size_t)n * 4, "BERT scratch");
  s->types = zt_malloc((size_t)n * 4, "BERT scratch");
  s->out = zt_malloc((size_t)n * 4, "BERT scratch");
  s->cand_start = zt_malloc((size_t)(n + 1) * 4, "BERT scratch");
  s->cand_pos = zt_malloc((size_t)n * 4, "BERT scratch");
  s->order = zt_malloc((size_t)n * 4, "BERT scratch");
  s->covered = zt_malloc((size_t)n, "BERT scratch");
}

/* create_masked_lm_predictions with Megatron's BERT settings (max_ngrams 3, whole-word masking, no longer-n-gram
 * favour, no permutation, no geometric distribution, "bert" style) or, with t5, T5Dataset's (max_ngrams 10, n-gram
 * lengths min(geometric(0.2), 10), "t5" style: every masked token becomes [MASK], no draw per token; the masked spans
 * are recorded in s->span_at/span_len): writes the masked tokens to s->out and marks the predicted positions in
 * s->covered. */
static void mask_tokens(const zt_bert_dataset *d, zt_bert_scratch *s, int n, double max_predictions,
                        zt_np_random *rng, int t5) {
  const zt_bert_vocab *v = d->vocab;
  const int32_t *tokens = s->tokens;
  int32_t *cs = s->cand_start, *cp = s->cand_pos;
  int ncand = 0, npos = 0;
  for (int i = 0; i < n; i++) {
    s->out[i] = tokens[i];
    s->covered[i] = 0;
    const int32_t t = tokens[i];
    if (t == v->cls || t == v->sep) continue;
    zt_check(t >= 0 && t < v->size, "dataset", "%s: token id %d is outside the vocabulary of %lld ids", d->data->prefix,
             t, (long long)v->size);
    if (!(ncand >= 1 && v->subword[t])) cs[ncand++] = npos; /* a word start opens a candidate; "##x" joins the last */
    cp[npos++] = i;
  }
  cs[ncand] = npos;
  s->nspans = 0;
  const double p = d->masked_lm_prob;
  if (p == 0) return;
  const double by_len = (double)(int64_t)fmax(1.0, rint((double)n * p)); /* max(1, int(round(len * p))) */
  const double num_to_predict = by_len < max_predictions ? by_len : max_predictions; /* a float, as in Python */
  double cdf[3];
  zt_bert_ngram_cdf(cdf);
  int32_t *order = s->order;
  for (int c = 0; c < ncand; c++) order[c] = c;
  for (int i = ncand - 1; i >= 1; i--) { /* np_rng.shuffle(ngram_indexes) */
    const int j = (int)zt_np_random_interval(rng, (uint64_t)i);
    const int32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  int64_t masked = 0;
  for (int k = 0; k < ncand; k++) {
    if ((double)masked >= num_to_predict) break;
    const int c = order[k];
    int g = 1;
    if (t5) { /* min(np_rng.geometric(0.2), max_ngrams) */
      const int64_t x = zt_np_random_geometric(rng, 0.2);
      g = x < 10 ? (int)x : 10;
    } else { /* np_rng.choice(ngrams, p=...): searchsorted(cdf, u, 'right') */
      const double u = zt_np_random_double(rng);
      for (int i = 0; i < 3; i++) g += cdf[i] <= u;
    }
    /* the n-gram of g candidates from c (fewer at the end), shortened while it would exceed num_to_predict */
    int len = cs[c + g < ncand ? c + g : ncand] - cs[c], shorter = g - 1;
    while ((double)(masked + len) > num_to_predict) {
      if (shorter == 0) break;
      len = cs[c + shorter < ncand ? c + shorter : ncand] - cs[c];
      shorter--;
    }
    if ((double)(masked + len) > num_to_predict) continue;
    const int32_t *pos = cp + cs[c];
    int any = 0;
    for (int i = 0; i < len && !any; i++) any = s->covered[pos[i]];
    if (any) continue;
    if (t5) s->span_at[s->nspans] = cs[c], s->span_len[s->nspans++] = len;
    for (int i = 0; i < len; i++) {
      const int at = pos[i];
      s->covered[at] = 1;
      int32_t m;
      if (t5) m = v->mask;
      else if (zt_np_random_double(rng) < 0.8) m = v->mask;
      else if (zt_np_random_double(rng) < 0.5) m = tokens[at];
      else m = (int32_t)zt_np_random_interval(rng, (uint64_t)(v->size - 1)); /* vocab_id_list[randint(0, V)] */
      s->out[at] = m;
      masked++;
    }
  }
}

/* Sentences [first, end) back to back into s->text; returns their tokens. */
static int64_t join_sentences(const zt_bert_dataset *d, zt_bert_scratch *s, int64_t first, int64_t end) {
  int64_t total = 0;
  for (int64_t k = first; k < end; k++) total += zt_indexed_size(d->data, k);
  if ((size_t)total > s->text_cap) {
    free(s->text);
    s->text_cap = (size_t)total;
    s->text = zt_malloc((size_t)total * 4, "BERT/T5 sample");
  }
  for (int64_t k = first, off = 0; k < end; k++) {
    const int32_t len = zt_indexed_size(d->data, k);
    if (len) zt_indexed_get(d->data, k, 0, len, s->text + off);
    off += len;
  }
  return total;
}

void zt_bert_dataset_get(const zt_bert_dataset *d, int64_t idx, zt_bert_scratch *s, zt_bert_sample *out) {
  zt_check(idx >= 0 && idx < d->num_samples, "dataset", "%s sample %lld requested; the dataset has %lld", d->name,
           (long long)idx, (long long)d->num_samples);
  int64_t first, end, target;
  zt_bert_dataset_row(d, idx, &first, &end, &target);
  zt_np_random rng; /* np.random.RandomState(seed=(seed + idx) % 2**32) */
  zt_np_random_seed(&rng, (uint32_t)((d->seed + (uint64_t)idx) & 0xffffffffu));

  const int64_t nsent = end - first;
  int64_t a_end = nsent;
  if (d->binary_head) { /* get_a_and_b_segments: A is sentences [0, a_end) */
    zt_check(nsent >= 2, "dataset", "%s sample %lld has %lld sentence(s); the binary head needs 2 (a samples mapping "
             "built with --bert-no-binary-head? %s)", d->name, (long long)idx, (long long)nsent, d->cache_file);
    a_end = nsent >= 3 ? 1 + (int64_t)zt_np_random_interval(&rng, (uint64_t)(nsent - 2)) : 1;
  }
  const int64_t total = join_sentences(d, s, first, end);
  int64_t split = 0; /* the tokens of A: sentences [first, first + a_end) */
  for (int64_t k = first; k < first + a_end; k++) split += zt_indexed_size(d->data, k);
  int64_t a0 = 0, a1 = split, b0 = split, b1 = total;
  out->is_random = 0;
  if (d->binary_head && zt_np_random_double(&rng) < 0.5) { /* the sentence-order swap */
    out->is_random = 1;
    a0 = split, a1 = total, b0 = 0, b1 = split;
  }
  /* truncate_segments: shorten the longer segment (B on ties) from a random end */
  int64_t la = a1 - a0, lb = b1 - b0;
  zt_check(la > 0, "dataset", "%s sample %lld: segment A is empty (an empty sentence in %s?); Megatron asserts "
           "len_a > 0", d->name, (long long)idx, d->data->prefix);
  out->truncated = la + lb > target;
  while (la + lb > target) {
    int64_t *lo, *hi;
    if (la > lb) la--, lo = &a0, hi = &a1;
    else lb--, lo = &b0, hi = &b1;
    if (zt_np_random_double(&rng) < 0.5) (*lo)++;
    else (*hi)--;
  }
  /* create_tokens_and_tokentypes */
  const zt_bert_vocab *v = d->vocab;
  const int n = (int)(la + lb + (lb > 0 ? 3 : 2)), T = d->max_seq_length;
  zt_check(n <= T, "dataset", "%s sample %lld has %d tokens, more than --seq-length %d (corrupt samples mapping %s?)",
           d->name, (long long)idx, n, T, d->cache_file);
  scratch_tokens(s, T);
  int k = 0;
  s->tokens[k] = v->cls, s->types[k++] = 0;
  for (int64_t i = a0; i < a1; i++) s->tokens[k] = s->text[i], s->types[k++] = 0;
  s->tokens[k] = v->sep, s->types[k++] = 0;
  for (int64_t i = b0; i < b1; i++) s->tokens[k] = s->text[i], s->types[k++] = 1;
  if (lb > 0) s->tokens[k] = v->sep, s->types[k++] = 1;
  /* masking: max_predictions_per_seq = masked_lm_prob * max_num_tokens (the target length, a float) */
  mask_tokens(d, s, n, d->masked_lm_prob * (double)target, &rng, 0);
  /* pad_and_convert_to_numpy */
  for (int i = 0; i < T; i++) {
    const int tok = i < n;
    out->text[i] = tok ? s->out[i] : v->pad;
    out->types[i] = tok ? s->types[i] : v->pad;
    out->padding_mask[i] = (uint8_t)tok;
    out->labels[i] = tok && s->covered[i] ? s->tokens[i] : -1;
    out->loss_mask[i] = (uint8_t)(tok && s->covered[i]);
  }
  out->num_tokens = n;
}

/* ---- T5Dataset's samples (data/t5_dataset.h): the same mapping and masking, T5's settings and packing ----------- */

void zt_t5_dataset_get(const zt_bert_dataset *d, const zt_t5_vocab *t5, int64_t idx, zt_bert_scratch *s,
                       zt_t5_sample *out) {
  zt_check(idx >= 0 && idx < d->num_samples, "dataset", "%s sample %lld requested; the dataset has %lld", d->name,
           (long long)idx, (long long)d->num_samples);
  zt_check(d->added_tokens == 2 && !d->binary_head, "internal error", "T5 samples from a BERT samples mapping");
  int64_t first, end, target;
  zt_bert_dataset_row(d, idx, &first, &end, &target);
  zt_np_random rng; /* np.random.RandomState(seed=(seed + idx)) */
  zt_np_random_seed(&rng, (uint32_t)((d->seed + (uint64_t)idx) & 0xffffffffu));
  const int64_t total = join_sentences(d, s, first, end);
  /* the sentences joined, truncated to the target length */
  const int T = d->max_seq_length, TD = t5->max_seq_length_dec;
  const int n = (int)(total < target ? total : target);
  out->truncated = total > target;
  scratch_tokens(s, T);
  memcpy(s->tokens, s->text, (size_t)n * 4);
  mask_tokens(d, s, n, d->masked_lm_prob * (double)target, &rng, 1);
  /* the spans in position order (masked_spans sorted by their first index; they never overlap) */
  const int32_t *cp = s->cand_pos;
  for (int i = 1; i < s->nspans; i++)
    for (int j = i; j > 0 && cp[s->span_at[j - 1]] > cp[s->span_at[j]]; j--) {
      int32_t t = s->span_at[j];
      s->span_at[j] = s->span_at[j - 1], s->span_at[j - 1] = t;
      t = s->span_len[j];
      s->span_len[j] = s->span_len[j - 1], s->span_len[j - 1] = t;
    }
  int masked = 0;
  for (int k = 0; k < s->nspans; k++) masked += s->span_len[k];
  const int nenc = n - masked + s->nspans, ndec = 1 + masked + s->nspans;
  zt_check(s->nspans <= t5->num_sentinels, "dataset", "%s sample %lld has %d masked spans, more than the %d sentinel "
           "tokens of --vocab-extra-ids (Megatron's T5 runs use 100)", d->name, (long long)idx, s->nspans,
           t5->num_sentinels);
  zt_check(nenc <= T, "dataset", "%s sample %lld: %d encoder tokens exceed --encoder-seq-length %d (corrupt samples "
           "mapping %s?)", d->name, (long long)idx, nenc, T, d->cache_file);
  zt_check(ndec <= TD, "dataset", "%s sample %lld: %d decoder tokens exceed --decoder-seq-length %d (%d masked tokens "
           "in %d spans; Megatron asserts the same)", d->name, (long long)idx, ndec, TD, masked, s->nspans);
  /* pad_and_convert_to_numpy */
  int e = 0, dec = 0, start = 0;
  out->text_dec[dec] = t5->bos;
  for (int k = 0; k < s->nspans; k++) {
    const int32_t flag = t5->sentinels[k], *pos = cp + s->span_at[k];
    const int len = s->span_len[k];
    out->labels[dec] = flag; /* the decoder output is its input shifted by one: [BOS] x ... vs x ... [EOS] */
    out->text_dec[++dec] = flag;
    for (int i = 0; i < len; i++) {
      out->labels[dec] = s->tokens[pos[i]];
      out->text_dec[++dec] = s->tokens[pos[i]];
    }
    for (int i = start; i < pos[0]; i++) out->text_enc[e++] = s->out[i];
    out->text_enc[e++] = flag;
    start = pos[len - 1] + 1;
  }
  out->labels[dec++] = t5->eos;
  for (int i = start; i < n; i++) out->text_enc[e++] = s->out[i];
  zt_check(e == nenc && dec == ndec, "internal error", "T5 sample %lld: %d/%d encoder and %d/%d decoder tokens",
           (long long)idx, e, nenc, dec, ndec);
  for (int i = e; i < T; i++) out->text_enc[i] = d->vocab->pad;
  for (int i = dec; i < TD; i++) out->text_dec[i] = d->vocab->pad, out->labels[i] = -1;
  for (int i = 0; i < T; i++) out->enc_valid[i] = out->text_enc[i] >= 1;
  for (int i = 0; i < TD; i++) out->dec_valid[i] = out->text_dec[i] >= 1, out->loss_mask[i] = i < dec;
  out->num_enc = e, out->num_dec = dec, out->num_spans = s->nspans;
}
