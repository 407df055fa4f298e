/* GPTDataset index building, caching and sample assembly (Megatron-DeepSpeed's gpt_dataset.py and
 * helpers.cpp semantics; see gpt_dataset.h). */
#include "data/gpt_dataset.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/cache_sync.h"
#include "data/numpy_random.h"
#include "runtime/base/error.h"
#include "runtime/base/md5.h"
#include "runtime/base/npy.h"
#include "runtime/base/timer.h"

/* ---- --split --------------------------------------------------------------------------------- */

void zt_split_bounds(const char *split, int64_t n, int64_t bounds[4]) {
  double w[3] = {0, 0, 0};
  const char sep = strchr(split, ',') ? ',' : strchr(split, '/') ? '/' : 0;
  int count = 0;
  const char *p = split;
  for (;;) {
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    while (*end == ' ' || *end == '\t') end++;
    zt_check(end != p && errno == 0 && (*end == sep || *end == 0), "bad argument value",
             "--split '%s': expected up to 3 numbers separated by ',' or '/' (e.g. '969, 30, 1')", split);
    zt_check(count < 3, "bad argument value", "--split '%s' has more than 3 parts (train, valid, test)", split);
    zt_check(isfinite(v) && v >= 0, "bad argument value", "--split '%s': part %d is %g; parts must be >= 0",
             split, count + 1, v);
    w[count++] = v;
    if (*end == 0) break;
    p = end + 1;
  }
  const double sum = w[0] + w[1] + w[2];
  zt_check(sum > 0, "bad argument value", "--split '%s' sums to 0", split);
  bounds[0] = 0;
  for (int i = 0; i < 3; i++) /* Python's round(): half to even, which rint() does by default */
    bounds[i + 1] = bounds[i] + (int64_t)rint(w[i] / sum * (double)n);
  const int64_t diff = bounds[3] - n;
  for (int i = 1; i < 4; i++) bounds[i] -= diff;
}

/* ---- index building ------------------------------------------------------------------------- */

int64_t zt_gpt_num_epochs(int64_t tokens_per_epoch, int seq_length, int64_t num_samples) {
  zt_check(tokens_per_epoch > 0, "dataset", "the documents hold no tokens, so no sample can be drawn");
  int64_t epochs = 0, total = 0;
  for (;;) {
    epochs++;
    total += tokens_per_epoch;
    if ((total - 1) / seq_length >= num_samples) return epochs;
  }
}

/* doc_idx for `epochs` epochs of the documents, shuffled (Megatron's _build_doc_idx, one part). */
static void fill_doc_idx(int32_t *out, int64_t epochs, int64_t doc_begin, int64_t doc_end, zt_np_random *rng) {
  const int64_t n = doc_end - doc_begin;
  for (int64_t e = 0; e < epochs; e++)
    for (int64_t k = 0; k < n; k++) out[e * n + k] = (int32_t)(doc_begin + k);
  zt_np_shuffle_i32(rng, out, epochs * n);
}

static void build_sample_idx(zt_gpt_dataset *d, int64_t tokens_per_epoch) {
  const int s = d->seq_length;
  const int64_t n = (d->num_epochs * tokens_per_epoch - 1) / s;
  d->total_samples = n;
  d->sample_idx = zt_malloc((size_t)(n + 1) * 2 * sizeof(int64_t), "sample_idx");
  int64_t doc_pos = 0, offset = 0;
  d->sample_idx[0] = 0;
  d->sample_idx[1] = 0;
  for (int64_t k = 1; k <= n; k++) {
    int64_t remaining = (int64_t)s + 1;
    while (remaining != 0) {
      const int64_t doc_len = zt_indexed_size(d->data, d->doc_idx[doc_pos]) - offset;
      remaining -= doc_len;
      if (remaining <= 0) {
        offset += remaining + doc_len - 1;
        remaining = 0;
      } else {
        doc_pos++;
        offset = 0;
      }
    }
    d->sample_idx[2 * k] = doc_pos;
    d->sample_idx[2 * k + 1] = offset;
  }
}

void zt_gpt_build_indices(zt_gpt_dataset *d, const zt_indexed_dataset *data, const zt_gpt_dataset_spec *sp,
                          int64_t tokens_per_epoch) {
  const int64_t ndocs = sp->doc_end - sp->doc_begin;
  zt_check(sp->seed <= 0xffffffffull, "bad argument value",
           "--seed %llu: the dataset shuffle (NumPy's RandomState) needs a seed below 2^32",
           (unsigned long long)sp->seed);
  zt_np_random rng;
  zt_np_random_seed(&rng, (uint32_t)sp->seed);

  const int64_t E = d->num_epochs, s = sp->seq_length;
  int separate_last = 0;
  int64_t from_prev = 0;
  if (E == 1 || sp->exact_num_epochs > 0) {
    if (E == 1) zt_log(" > only one epoch required, setting separate_last_epoch to False\n");
  } else {
    from_prev = ((E - 1) * tokens_per_epoch - 1) / s;
    const int64_t last = sp->num_samples - from_prev, per_epoch = (tokens_per_epoch - 1) / s;
    separate_last = last < (int64_t)(0.80 * (double)per_epoch);
    zt_log(" > last epoch number of samples (%lld) is %s than 80%% of number of samples per epoch (%lld), "
           "setting separate_last_epoch to %s\n", (long long)last, separate_last ? "smaller" : "larger",
           (long long)per_epoch, separate_last ? "True" : "False");
  }

  double t0 = zt_now();
  zt_check(E <= INT64_MAX / (ndocs > 0 ? ndocs : 1), "dataset", "%lld epochs of %lld documents overflow",
           (long long)E, (long long)ndocs);
  d->doc_idx_len = E * ndocs;
  d->doc_idx = zt_malloc((size_t)d->doc_idx_len * sizeof(int32_t), "doc_idx");
  if (!separate_last) {
    fill_doc_idx(d->doc_idx, E, sp->doc_begin, sp->doc_end, &rng);
  } else {
    fill_doc_idx(d->doc_idx, E - 1, sp->doc_begin, sp->doc_end, &rng);
    fill_doc_idx(d->doc_idx + (E - 1) * ndocs, 1, sp->doc_begin, sp->doc_end, &rng);
  }
  double t1 = zt_now();
  build_sample_idx(d, tokens_per_epoch);
  double t2 = zt_now();

  const int64_t n = d->total_samples, first = separate_last ? from_prev : n;
  d->num_samples = n;
  d->shuffle_idx = zt_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t), "shuffle_idx");
  for (int64_t k = 0; k < n; k++) d->shuffle_idx[k] = k;
  zt_np_shuffle_i64(&rng, d->shuffle_idx, first);
  if (first < n) zt_np_shuffle_i64(&rng, d->shuffle_idx + first, n - first);
  double t3 = zt_now();
  zt_log(" > built the %s index arrays: doc-idx %.3f s, sample-idx %.3f s, shuffle-idx %.3f s\n", d->name,
         t1 - t0, t2 - t1, t3 - t2);
}

/* ---- cache ------------------------------------------------------------------------------------ */

char *zt_path_join(const char *dir, const char *name) {
  size_t len = strlen(dir) + strlen(name) + 2;
  char *p = zt_malloc(len, "path");
  snprintf(p, len, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", name);
  return p;
}

int zt_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

typedef struct {
  char *dsc, *doc, *sample, *shuffle;
} cache_files;

/* The four files in dir: {hash}.dsc, {hash}_doc_idx.npy, ... or the names given by the --train-*-path flags
 * (override[k] non-NULL), joined as Python's os.path.join does (an absolute name stands alone). */
static cache_files cache_names(const char *dir, const char *hash, const char *const *override) {
  static const char *const suffix[4] = {".dsc", "_doc_idx.npy", "_sample_idx.npy", "_shuffle_idx.npy"};
  char *out[4];
  for (int k = 0; k < 4; k++) {
    char name[64];
    snprintf(name, sizeof name, "%s%s", hash, suffix[k]);
    const char *given = override ? override[k] : NULL;
    if (given && given[0] == '/') {
      out[k] = zt_malloc(strlen(given) + 1, "path");
      strcpy(out[k], given);
    } else {
      out[k] = zt_path_join(dir, given ? given : name);
    }
  }
  return (cache_files){out[0], out[1], out[2], out[3]};
}

static void cache_free(cache_files *c) {
  free(c->dsc);
  free(c->doc);
  free(c->sample);
  free(c->shuffle);
}

static int cache_complete(const cache_files *c) {
  return zt_file_exists(c->dsc) && zt_file_exists(c->doc) && zt_file_exists(c->sample) && zt_file_exists(c->shuffle);
}

void zt_cache_save_npy(const char *path, const void *data, const char *descr, int ndim, const int64_t *shape) {
  size_t len = strlen(path) + 32;
  char *tmp = zt_malloc(len, "path");
  snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
  zt_npy_save(tmp, data, descr, ndim, shape);
  if (rename(tmp, path) != 0) {
    int err = errno;
    unlink(tmp);
    zt_fatal("dataset cache", "cannot rename %s to %s: %s", tmp, path, strerror(err));
  }
  free(tmp);
}

static void save_text_atomic(const char *path, const char *text) {
  size_t len = strlen(path) + 32;
  char *tmp = zt_malloc(len, "path");
  snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) zt_fatal("dataset cache", "cannot create %s: %s", tmp, strerror(errno));
  int ok = fputs(text, f) >= 0;
  ok = (fflush(f) == 0) && ok && fsync(fileno(f)) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    int err = errno;
    unlink(tmp);
    zt_fatal("dataset cache", "cannot write %s: %s", path, strerror(err));
  }
  free(tmp);
}

void zt_cache_make_dir(const char *dir) {
  char *p = zt_malloc(strlen(dir) + 1, "path");
  strcpy(p, dir);
  for (char *q = p + 1; *q; q++) {
    if (*q != '/') continue;
    *q = 0;
    mkdir(p, 0777);
    *q = '/';
  }
  if (mkdir(p, 0777) != 0 && errno != EEXIST)
    zt_fatal("dataset cache", "cannot create the index cache directory %s: %s (choose a writable one with "
             "--data-cache-path)", p, strerror(errno));
  free(p);
}

static void save_cache(const zt_gpt_dataset *d, const cache_files *c, const char *dir, const char *desc) {
  zt_cache_make_dir(dir);
  zt_check(access(dir, W_OK) == 0, "dataset cache",
           "the index cache directory %s is not writable (choose another with --data-cache-path)", dir);
  int64_t shape[2] = {d->doc_idx_len, 0};
  zt_cache_save_npy(c->doc, d->doc_idx, "<i4", 1, shape);
  shape[0] = d->total_samples + 1;
  shape[1] = 2;
  zt_cache_save_npy(c->sample, d->sample_idx, "<i8", 2, shape);
  shape[0] = d->num_samples;
  /* Megatron's dtype: uint32 unless the sample count reaches 2^32 - 1 */
  if (d->total_samples < (int64_t)0xfffffffeLL) {
    uint32_t *u = zt_malloc((size_t)(d->num_samples > 0 ? d->num_samples : 1) * 4, "shuffle_idx");
    for (int64_t k = 0; k < d->num_samples; k++) u[k] = (uint32_t)d->shuffle_idx[k];
    zt_cache_save_npy(c->shuffle, u, "<u4", 1, shape);
    free(u);
  } else {
    zt_cache_save_npy(c->shuffle, d->shuffle_idx, "<i8", 1, shape);
  }
  save_text_atomic(c->dsc, desc); /* last: its presence marks a complete cache */
}

static int64_t *load_as_i64(const char *path, int want_ndim, int64_t *shape) {
  char descr[8];
  int ndim;
  void *raw = zt_npy_load_any(path, descr, &ndim, shape);
  zt_check(ndim == want_ndim, "dataset cache", "%s has %d dimensions, expected %d", path, ndim, want_ndim);
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  if (strcmp(descr, "<i8") == 0) return raw;
  int64_t *out = zt_malloc((n ? n : 1) * sizeof(int64_t), "index array");
  if (strcmp(descr, "<i4") == 0) for (size_t k = 0; k < n; k++) out[k] = ((int32_t *)raw)[k];
  else if (strcmp(descr, "<u4") == 0) for (size_t k = 0; k < n; k++) out[k] = ((uint32_t *)raw)[k];
  else zt_fatal("dataset cache", "%s holds dtype '%s'; expected an integer index array", path, descr);
  free(raw);
  return out;
}

/* Loads the cached arrays and checks, in one pass each, that they are what Megatron builds for this dataset:
 * doc_idx holds each document of [doc_begin, doc_end) exactly num_epochs times; sample_idx starts at (0, 0) and
 * each row lies seq_length tokens after the previous one, inside doc_idx and inside its document; shuffle_idx is a
 * permutation of the samples. A duplicate, a gap or an entry of another split names the file, the row and the
 * numbers (a cache from another --split, a crashed writer or a hand edit would otherwise train silently on
 * repeated or foreign samples). */
static void load_cache(zt_gpt_dataset *d, const cache_files *c, const zt_gpt_dataset_spec *sp) {
  int64_t shape[4];
  int ndim;
  const int64_t ndocs = sp->doc_end - sp->doc_begin, E = d->num_epochs;
  zt_log(" > loading doc-idx mapping from %s\n", c->doc);
  double t0 = zt_now();
  d->doc_idx = zt_npy_load(c->doc, "<i4", &ndim, shape);
  zt_check(ndim == 1, "dataset cache", "%s has %d dimensions, expected 1", c->doc, ndim);
  d->doc_idx_len = shape[0];
  zt_check(d->doc_idx_len == E * ndocs, "dataset cache", "%s has %lld entries; %lld epochs of the %lld documents "
           "[%lld, %lld) of %s make %lld (a cache of another dataset or --split? delete it to rebuild)", c->doc,
           (long long)d->doc_idx_len, (long long)E, (long long)ndocs, (long long)sp->doc_begin,
           (long long)sp->doc_end, d->data->prefix, (long long)(E * ndocs));
  int64_t *seen = zt_calloc((size_t)ndocs, sizeof(int64_t), "doc_idx check");
  for (int64_t k = 0; k < d->doc_idx_len; k++) {
    const int64_t doc = d->doc_idx[k];
    zt_check(doc >= sp->doc_begin && doc < sp->doc_end, "dataset cache",
             "%s: entry %lld is document %lld, outside the %s documents [%lld, %lld) of %s", c->doc, (long long)k,
             (long long)doc, sp->name, (long long)sp->doc_begin, (long long)sp->doc_end, d->data->prefix);
    zt_check(++seen[doc - sp->doc_begin] <= E, "dataset cache",
             "%s: entry %lld is document %lld, which then appears %lld times in %lld epochs (a duplicate)", c->doc,
             (long long)k, (long long)doc, (long long)seen[doc - sp->doc_begin], (long long)E);
  }
  free(seen);
  zt_log(" > loading sample-idx mapping from %s\n", c->sample);
  d->sample_idx = load_as_i64(c->sample, 2, shape);
  zt_check(shape[1] == 2 && shape[0] >= 1, "dataset cache", "%s has shape (%lld, %lld), expected (n+1, 2)",
           c->sample, (long long)shape[0], (long long)shape[1]);
  d->total_samples = shape[0] - 1;
  const int64_t *si = d->sample_idx;
  zt_check(si[0] == 0 && si[1] == 0, "dataset cache", "%s: row 0 is (%lld, %lld), expected (0, 0)", c->sample,
           (long long)si[0], (long long)si[1]);
  int64_t pos = 0, before = 0; /* tokens of doc_idx[0 .. pos) */
  int64_t prev_at = 0;
  for (int64_t k = 1; k <= d->total_samples; k++) {
    const int64_t dp = si[2 * k], off = si[2 * k + 1];
    zt_check(dp >= pos && dp < d->doc_idx_len, "dataset cache", "%s: row %lld (%lld, %lld): position %lld is %s",
             c->sample, (long long)k, (long long)dp, (long long)off, (long long)dp,
             dp < pos ? "before the previous row's (rows must not go back)" : "outside doc_idx");
    for (; pos < dp; pos++) before += zt_indexed_size(d->data, d->doc_idx[pos]);
    const int64_t len = zt_indexed_size(d->data, d->doc_idx[dp]);
    zt_check(off >= 0 && off < len, "dataset cache", "%s: row %lld (%lld, %lld): offset %lld is outside document "
             "%d of %lld tokens", c->sample, (long long)k, (long long)dp, (long long)off, (long long)off,
             d->doc_idx[dp], (long long)len);
    const int64_t at = before + off;
    zt_check(at - prev_at == d->seq_length, "dataset cache", "%s: row %lld (%lld, %lld) starts %lld tokens after "
             "row %lld; each sample is --seq-length %d tokens after the previous one (a cache for another "
             "--seq-length?)", c->sample, (long long)k, (long long)dp, (long long)off, (long long)(at - prev_at),
             (long long)(k - 1), d->seq_length);
    prev_at = at;
  }
  zt_log(" > loading shuffle-idx mapping from %s\n", c->shuffle);
  d->shuffle_idx = load_as_i64(c->shuffle, 1, shape);
  d->num_samples = shape[0];
  zt_check(d->num_samples == d->total_samples, "dataset cache", "%s has %lld entries; sample_idx (%s) has %lld "
           "samples, and Megatron's shuffle_idx is a permutation of them all", c->shuffle, (long long)d->num_samples,
           c->sample, (long long)d->total_samples);
  uint8_t *hit = zt_calloc((size_t)(d->total_samples / 8 + 1), 1, "shuffle_idx check");
  for (int64_t k = 0; k < d->num_samples; k++) {
    const int64_t v = d->shuffle_idx[k];
    zt_check(v >= 0 && v < d->total_samples, "dataset cache", "%s: entry %lld is sample %lld, outside the %lld "
             "samples", c->shuffle, (long long)k, (long long)v, (long long)d->total_samples);
    zt_check(!(hit[v / 8] & (1u << (v % 8))), "dataset cache", "%s: entry %lld is sample %lld, which an earlier "
             "entry already holds (a duplicate: shuffle_idx must be a permutation of 0..%lld)", c->shuffle,
             (long long)k, (long long)v, (long long)(d->total_samples - 1));
    hit[v / 8] |= (uint8_t)(1u << (v % 8));
  }
  free(hit);
  zt_log("    loaded indexed file in %.3f seconds\n", zt_now() - t0);
}

/* The cache directories in lookup order, and the first that holds a complete cache (-1: none yet). */
typedef struct {
  char **dirs;
  int ndirs;
  const char *hash;
  const char *const *override;
  int hit;
} cache_search;

static int search_complete(const void *ctx) {
  cache_search *s = (cache_search *)ctx;
  for (int i = 0; i < s->ndirs && s->hit < 0; i++) {
    cache_files c = cache_names(s->dirs[i], s->hash, s->override);
    if (cache_complete(&c)) s->hit = i;
    cache_free(&c);
  }
  return s->hit >= 0;
}

char *zt_path_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path) : 0;
  if (slash == path) len = 1; /* "/x" -> "/" */
  char *d = zt_malloc(len + 1, "path");
  memcpy(d, path, len);
  d[len] = 0;
  return d;
}

void zt_gpt_dataset_build(zt_gpt_dataset *d, const zt_indexed_dataset *data, const zt_gpt_dataset_spec *sp) {
  memset(d, 0, sizeof(*d));
  d->data = data;
  d->seq_length = sp->seq_length;
  snprintf(d->name, sizeof d->name, "%s", sp->name);
  zt_check(sp->doc_begin >= 0 && sp->doc_begin < sp->doc_end && sp->doc_end <= data->num_items, "dataset",
           "%s: documents [%lld, %lld) are not within the %lld documents of %s", sp->name, (long long)sp->doc_begin,
           (long long)sp->doc_end, (long long)data->num_items, data->prefix);
  zt_check(sp->doc_end <= INT32_MAX, "dataset", "%s has %lld documents; Megatron's int32 doc_idx holds at most %d",
           data->prefix, (long long)sp->doc_end, INT32_MAX);
  int64_t tokens_per_epoch = 0;
  for (int64_t k = sp->doc_begin; k < sp->doc_end; k++) tokens_per_epoch += zt_indexed_size(data, k);
  zt_check(tokens_per_epoch > 0, "dataset", "%s: the %s documents [%lld, %lld) of %s hold no tokens", sp->name,
           sp->name, (long long)sp->doc_begin, (long long)sp->doc_end, data->prefix);
  d->num_epochs = sp->exact_num_epochs > 0 ? sp->exact_num_epochs
                                            : zt_gpt_num_epochs(tokens_per_epoch, sp->seq_length, sp->num_samples);

  char desc[4096];
  snprintf(desc, sizeof desc,
           "GPT Dataset\n\nData prefix %s\nDataset name %s\nNumber of samples %lld\nNumber of epochs %lld\n"
           "Sequence length %d\nRandom seed %llu\nSplit %s\n",
           sp->prefix, sp->name, (long long)sp->num_samples, (long long)d->num_epochs, sp->seq_length,
           (unsigned long long)sp->seed, sp->split_string);
  zt_md5_hex(desc, strlen(desc), d->desc_hash);

  char *dirs[2];
  int ndirs = 0;
  char *base = zt_path_dirname(sp->prefix);
  dirs[ndirs++] = zt_path_join(base, "index-cache");
  free(base);
  if (sp->cache_path && sp->cache_path[0]) {
    dirs[ndirs] = zt_malloc(strlen(sp->cache_path) + 1, "path");
    strcpy(dirs[ndirs++], sp->cache_path);
  }
  const char *const *ov = sp->index_files;
  const int given_files = ov[0] || ov[1] || ov[2] || ov[3];
  int hit = -1;
  for (int i = 0; i < ndirs && hit < 0; i++) {
    cache_files c = cache_names(dirs[i], d->desc_hash, ov);
    if (cache_complete(&c)) hit = i;
    cache_free(&c);
  }
  const char *build_dir = dirs[ndirs - 1];
  const int found = hit >= 0;
  if (!found && given_files) { /* Megatron-DeepSpeed builds and writes them; never over a file the user has */
    cache_files c = cache_names(build_dir, d->desc_hash, ov);
    const char *const paths[4] = {c.dsc, c.doc, c.sample, c.shuffle};
    static const char *const flags[4] = {"--train-desc-path", "--train-doc-idx-path", "--train-sample-idx-path",
                                         "--train-shuffle-idx-path"};
    for (int k = 0; k < 4; k++)
      for (int m = 0; m < 4; m++)
        zt_check(!(zt_file_exists(paths[k]) && !zt_file_exists(paths[m])), "dataset cache", "%s exists but %s "
                 "(%s) does not: the training index files come as a set (Megatron-DeepSpeed would rebuild all four "
                 "over the existing ones); give the missing one or remove the others", paths[k], paths[m],
                 ov[m] ? flags[m] : "its default name");
    zt_log(" > the training index files given by --train-*-path do not exist yet: building them as "
           "Megatron-DeepSpeed does\n");
    cache_free(&c);
  }
  if (!found && zt_rank() == 0) {
    zt_log(" > WARNING: could not find index map files, building the indices on rank 0 ...\n");
    zt_gpt_build_indices(d, data, sp, tokens_per_epoch);
    cache_files c = cache_names(build_dir, d->desc_hash, ov);
    double t0 = zt_now();
    save_cache(d, &c, build_dir, desc);
    zt_log(" > saved the %s index arrays to %s/%s_*.npy in %.3f s\n", sp->name, build_dir, d->desc_hash,
           zt_now() - t0);
    cache_free(&c);
  }
  /* every rank meets here: the others see rank 0's cache within ZT_DATA_CACHE_TIMEOUT, or the job ends */
  cache_search look = {.dirs = dirs, .ndirs = ndirs, .hash = d->desc_hash, .override = ov, .hit = hit};
  cache_files mark = cache_names(build_dir, d->desc_hash, ov);
  zt_cache_sync("GPT", mark.dsc, found, search_complete, &look);
  cache_free(&mark);
  if (found || zt_rank() != 0) {
    cache_files c = cache_names(dirs[look.hit], d->desc_hash, ov);
    load_cache(d, &c, sp);
    cache_free(&c);
  }
  for (int i = 0; i < ndirs; i++) free(dirs[i]);
  if (d->num_samples < sp->num_samples && !sp->sampled) {
    if (sp->exact_num_epochs > 0)
      zt_fatal("bad argument value", "--train-data-exact-num-epochs %lld gives %lld training samples, but training "
               "needs %lld (--dataloader-type cyclic or --repeated-dataloader go round them)",
               (long long)sp->exact_num_epochs, (long long)d->num_samples, (long long)sp->num_samples);
    zt_fatal("dataset", "%s: %lld samples available but %lld requested", sp->name, (long long)d->num_samples,
             (long long)sp->num_samples);
  }
  zt_log("    total number of samples: %lld\n    total number of epochs: %lld\n", (long long)d->num_samples,
         (long long)d->num_epochs);
}

void zt_gpt_dataset_free(zt_gpt_dataset *d) {
  free(d->doc_idx);
  free(d->sample_idx);
  free(d->shuffle_idx);
  memset(d, 0, sizeof(*d));
}

void zt_gpt_dataset_get(const zt_gpt_dataset *d, int64_t i, int32_t *out) {
  zt_check(i >= 0 && i < d->num_samples, "dataset", "%s sample %lld requested; the dataset has %lld", d->name,
           (long long)i, (long long)d->num_samples);
  const int64_t j = d->shuffle_idx[i];
  const int64_t doc_f = d->sample_idx[2 * j], off_f = d->sample_idx[2 * j + 1];
  const int64_t doc_l = d->sample_idx[2 * j + 2], off_l = d->sample_idx[2 * j + 3];
  const int64_t want = (int64_t)d->seq_length + 1;
  int64_t n = 0;
  if (doc_f == doc_l) {
    zt_check(off_l - off_f + 1 == want, "dataset", "%s sample %lld spans %lld tokens, expected %lld (corrupt index "
             "cache?)", d->name, (long long)i, (long long)(off_l - off_f + 1), (long long)want);
    zt_indexed_get(d->data, d->doc_idx[doc_f], off_f, want, out);
    return;
  }
  for (int64_t k = doc_f; k <= doc_l; k++) {
    const int64_t doc = d->doc_idx[k];
    const int64_t from = k == doc_f ? off_f : 0;
    const int64_t to = k == doc_l ? off_l + 1 : zt_indexed_size(d->data, doc);
    zt_check(to >= from && n + (to - from) <= want, "dataset", "%s sample %lld overflows %lld tokens (corrupt "
             "index cache?)", d->name, (long long)i, (long long)want);
    if (to > from) zt_indexed_get(d->data, doc, from, to - from, out + n);
    n += to - from;
  }
  zt_check(n == want, "dataset", "%s sample %lld has %lld tokens, expected %lld (corrupt index cache?)", d->name,
           (long long)i, (long long)n, (long long)want);
}
