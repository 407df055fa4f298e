/* DeepSpeed's DataAnalyzer map and reduce (data/analyzer.h): the per-thread partial files of the map, the merge of
 * the reduce, and the MMapIndexedDataset files of DeepSpeed's data_sampling/indexed_dataset.py they are written in
 * (its own dtype table: codes 6, 7, 8 are uint16, uint32, uint64 there). Every check runs before the first file is
 * written, so a refused run leaves the analysis directory as it was. */
#define _GNU_SOURCE
#include "data/analyzer.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/ds_index.h"
#include "runtime/base/error.h"
#include "runtime/base/progress_bar.h"

static const char *const k_metric_names[] = {"total_vocab_freq", "vocab_rarity", "seqlen", "seqlen_vocab_rarity"};

int zt_metric_parse(const char *name, zt_metric_kind *kind) {
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, k_metric_names[i])) {
      *kind = (zt_metric_kind)i;
      return 0;
    }
  return -1;
}
const char *zt_metric_name(zt_metric_kind kind) { return k_metric_names[kind]; }
static int is_single(zt_metric_kind k) { return k != ZT_METRIC_TOTAL_VOCAB_FREQ; }
/* the metrics that read the reduced total_vocab_freq */
static int needs_freq(zt_metric_kind k) { return k == ZT_METRIC_VOCAB_RARITY || k == ZT_METRIC_SEQLEN_VOCAB_RARITY; }

int zt_analyzer_fit_dtype(int64_t lo, int64_t hi) {
  if (lo >= 0) return hi <= 255 ? 1 : hi <= 65535 ? 6 : hi <= 4294967295LL ? 7 : 8;
  if (hi <= 127 && lo >= -128) return 2;
  if (hi <= 32767 && lo >= -32768) return 3;
  if (hi <= 2147483647LL && lo >= -2147483648LL) return 4;
  return 5;
}

void zt_analyzer_split(int64_t start, int64_t end, int num, int k, int64_t *lo, int64_t *hi) {
  /* np.linspace(start, end, num + 1, dtype=int): start + i * step in float64, the last point exactly end, floored */
  const double step = (double)(end - start) / num;
  *lo = (int64_t)floor((double)k * step + (double)start);
  *hi = k + 1 == num ? end : (int64_t)floor((double)(k + 1) * step + (double)start);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s;
  if (vasprintf(&s, f, ap) < 0) zt_fatal("out of memory", "formatting a path");
  va_end(ap);
  return s;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* ---- DeepSpeed's MMapIndexedDatasetBuilder --------------------------------------------------------------- */
static int elem_size(int code) { return zt_ds_dtype_size(code); }
static const char *code_name(int code) { return zt_ds_dtype_name(code); }

typedef struct {
  char *prefix;
  FILE *bin;
  int code;
  int32_t *sizes;
  int64_t n, cap;
  int64_t *doc;
  int64_t ndoc, capdoc;
} ds_builder;

static void push_doc(ds_builder *b, int64_t v) {
  if (b->ndoc == b->capdoc) {
    b->capdoc = b->capdoc ? 2 * b->capdoc : 16;
    b->doc = realloc(b->doc, (size_t)b->capdoc * sizeof *b->doc);
    if (!b->doc) zt_fatal("out of memory", "index of %s", b->prefix);
  }
  b->doc[b->ndoc++] = v;
}

static void builder_open(ds_builder *b, const char *prefix, int code) {
  memset(b, 0, sizeof *b);
  b->prefix = strdup(prefix);
  b->code = code;
  char *p = fmt("%s.bin", prefix);
  b->bin = fopen(p, "wb");
  if (!b->bin) zt_fatal("--save", "cannot create %s: %s", p, strerror(errno));
  free(p);
  push_doc(b, 0);
}

static void builder_add(ds_builder *b, const int64_t *v, int64_t n) {
  if (n == 1) { /* the common case: one value per sample */
    const int es1 = elem_size(b->code);
    uint64_t x = (uint64_t)v[0];
    if (fwrite(&x, (size_t)es1, 1, b->bin) != 1) zt_fatal("--save", "writing %s.bin failed", b->prefix);
  } else {
    unsigned char buf[4096] = {0};
    const int es = elem_size(b->code);
    for (int64_t i = 0; i < n;) {
      int64_t m = 0;
      for (; i < n && (m + 1) * es <= (int64_t)sizeof buf; i++, m++) {
        /* numpy's astype: the low bytes of the two's complement value (little-endian host) */
        uint64_t x = (uint64_t)v[i];
        memcpy(buf + m * es, &x, (size_t)es);
      }
      if (fwrite(buf, (size_t)es, (size_t)m, b->bin) != (size_t)m) zt_fatal("--save", "writing %s.bin failed", b->prefix);
    }
  }
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 64;
    b->sizes = realloc(b->sizes, (size_t)b->cap * sizeof *b->sizes);
    if (!b->sizes) zt_fatal("out of memory", "index of %s", b->prefix);
  }
  b->sizes[b->n++] = (int32_t)n;
}

static void builder_end_document(ds_builder *b) { push_doc(b, b->n); }

typedef zt_ds_index ds_file;
static void ds_read(ds_file *d, const char *prefix) { zt_ds_index_read(d, prefix, "map result"); }
static void ds_free(ds_file *d) { zt_ds_index_free(d); }

/* MMapIndexedDatasetBuilder.merge_file_: appends the items, doc_idx shifted (its first 0 dropped), the data bytes. */
static void builder_merge(ds_builder *b, const char *prefix) {
  ds_file d;
  ds_read(&d, prefix);
  zt_check(d.code == b->code, "reduce", "%s holds %s values, expected %s", prefix, code_name(d.code),
           code_name(b->code));
  const int64_t off = b->n;
  for (int64_t i = 0; i < d.n; i++) {
    builder_add(b, d.values + d.offsets[i], d.sizes[i]);
  }
  for (int64_t k = 1; k < d.ndoc; k++) push_doc(b, off + d.doc[k]);
  ds_free(&d);
}

/* close_mmap_dataset_builder: end_document, then the index. */
static void builder_close(ds_builder *b) {
  builder_end_document(b);
  if (fclose(b->bin) != 0) zt_fatal("--save", "writing %s.bin failed", b->prefix);
  char *ip = fmt("%s.idx", b->prefix);
  FILE *f = fopen(ip, "wb");
  if (!f) zt_fatal("--save", "cannot create %s: %s", ip, strerror(errno));
  const uint64_t ver = 1, n = (uint64_t)b->n, nd = (uint64_t)b->ndoc;
  const uint8_t code = (uint8_t)b->code;
  int ok = fwrite("MMIDIDX\0\0", 1, 9, f) == 9 && fwrite(&ver, 8, 1, f) == 1 && fwrite(&code, 1, 1, f) == 1 &&
           fwrite(&n, 8, 1, f) == 1 && fwrite(&nd, 8, 1, f) == 1 &&
           fwrite(b->sizes, 4, (size_t)b->n, f) == (size_t)b->n;
  int64_t ptr = 0;
  for (int64_t i = 0; ok && i < b->n; i++) {
    ok = fwrite(&ptr, 8, 1, f) == 1;
    ptr += (int64_t)b->sizes[i] * elem_size(b->code);
  }
  ok = ok && fwrite(b->doc, 8, (size_t)b->ndoc, f) == (size_t)b->ndoc;
  if (fclose(f) != 0 || !ok) zt_fatal("--save", "writing %s failed", ip);
  free(ip);
  free(b->sizes);
  free(b->doc);
  free(b->prefix);
}

/* ---- threads ---------------------------------------------------------------------------------------------- */
typedef struct {
  void (*fn)(void *arg, int k);
  void *arg;
  int k;
} task;
static void *task_main(void *p) {
  task *t = p;
  t->fn(t->arg, t->k);
  return NULL;
}
/* Runs fn(arg, ks[i]) for every i on its own thread; *done (when not NULL) drives a progress bar meanwhile. */
static void run_threads(int n, const int *ks, void (*fn)(void *, int), void *arg, atomic_llong *done,
                        zt_progress_bar *bar) {
  pthread_t *th = zt_malloc((size_t)n * sizeof *th, "threads");
  task *ts = zt_malloc((size_t)n * sizeof *ts, "threads");
  for (int i = 0; i < n; i++) {
    ts[i] = (task){fn, arg, ks[i]};
    if (pthread_create(&th[i], NULL, task_main, &ts[i]) != 0) zt_fatal("threads", "cannot start thread %d", i);
  }
  for (int i = 0; i < n; i++) {
    if (bar && done) {
      struct timespec ts2;
      for (;;) {
        clock_gettime(CLOCK_REALTIME, &ts2);
        ts2.tv_nsec += 200000000;
        if (ts2.tv_nsec >= 1000000000) ts2.tv_sec++, ts2.tv_nsec -= 1000000000;
        if (pthread_timedjoin_np(th[i], NULL, &ts2) == 0) break;
        zt_progress_bar_update(bar, (double)atomic_load(done));
      }
    } else {
      pthread_join(th[i], NULL);
    }
  }
  free(th);
  free(ts);
}

/* ---- map --------------------------------------------------------------------------------------------------- */
typedef struct {
  int64_t value;
  int64_t *ids;
  int64_t n, cap;
  int touched;
} pending;

typedef struct {
  int64_t *keys; /* open addressing over values; slot -> entry index + 1 in ents, 0 empty */
  int64_t *slot;
  int64_t cap;
  pending *ents;
  int64_t nents, capents;
} pending_map;

static pending *pm_get(pending_map *m, int64_t v) {
  if (2 * (m->nents + 1) > m->cap) {
    int64_t nc = m->cap ? 2 * m->cap : 1024;
    int64_t *ns = calloc((size_t)nc, sizeof *ns);
    if (!ns) zt_fatal("out of memory", "metric_to_sample map");
    for (int64_t e = 0; e < m->nents; e++) {
      uint64_t h = (uint64_t)m->ents[e].value * 0x9E3779B97F4A7C15ull;
      for (int64_t s = (int64_t)(h & (uint64_t)(nc - 1));; s = (s + 1) & (nc - 1))
        if (!ns[s]) {
          ns[s] = e + 1;
          break;
        }
    }
    free(m->slot);
    m->slot = ns;
    m->cap = nc;
  }
  uint64_t h = (uint64_t)v * 0x9E3779B97F4A7C15ull;
  for (int64_t s = (int64_t)(h & (uint64_t)(m->cap - 1));; s = (s + 1) & (m->cap - 1)) {
    if (!m->slot[s]) {
      if (m->nents == m->capents) {
        m->capents = m->capents ? 2 * m->capents : 256;
        m->ents = realloc(m->ents, (size_t)m->capents * sizeof *m->ents);
        if (!m->ents) zt_fatal("out of memory", "metric_to_sample map");
      }
      m->ents[m->nents] = (pending){.value = v};
      m->slot[s] = ++m->nents;
      return &m->ents[m->nents - 1];
    }
    if (m->ents[m->slot[s] - 1].value == v) return &m->ents[m->slot[s] - 1];
  }
}

/* Appends one csv row (csv.writer: comma-separated, "\r\n") to {dir}/{metric}_metric_to_sample_{value}.csv. */
static void flush_pending(const char *base, pending *p) {
  char *path = fmt("%s_%lld.csv", base, (long long)p->value);
  FILE *f = fopen(path, "a");
  if (!f) zt_fatal("--save", "cannot open %s: %s", path, strerror(errno));
  for (int64_t i = 0; i < p->n; i++) fprintf(f, i ? ",%lld" : "%lld", (long long)p->ids[i]);
  fputs("\r\n", f);
  if (fclose(f) != 0) zt_fatal("--save", "writing %s failed", path);
  free(path);
  p->n = 0;
}

typedef struct {
  const zt_analyzer *a;
  const double *neglog; /* vocab_rarity: -log(freq / total) per token id */
  int64_t seqlen_coeff;  /* seqlen_vocab_rarity: the power of ten that makes seqlen dominate */
  atomic_llong done;
} map_ctx;

static void map_thread(void *arg, int t) {
  map_ctx *c = arg;
  const zt_analyzer *a = c->a;
  int64_t wlo, whi, lo, hi;
  zt_analyzer_split(0, a->num_samples, a->num_workers, a->worker_id, &wlo, &whi);
  zt_analyzer_split(wlo, whi, a->num_threads, t, &lo, &hi);
  zt_log("worker %d thread %d: start working on data subset %lld to %lld\n", a->worker_id, t, (long long)lo,
         (long long)hi);
  const int M = a->num_metrics;
  ds_builder b[4];
  pending_map pm[4];
  char *csv_base[4];
  int64_t *counts[4] = {0};
  int64_t **touched = zt_calloc(M, sizeof *touched, "map");
  memset(pm, 0, sizeof pm);
  for (int m = 0; m < M; m++) {
    const char *name = zt_metric_name(a->metrics[m]);
    char *dir = fmt("%s/%s/worker%d_thread%d", a->save, name, a->worker_id, t);
    if (is_single(a->metrics[m])) {
      char *p = fmt("%s/%s_sample_to_metric", dir, name);
      builder_open(&b[m], p, 5);
      free(p);
      csv_base[m] = fmt("%s/%s_metric_to_sample", dir, name);
      touched[m] = zt_malloc((size_t)(a->batch_size < hi - lo ? a->batch_size : hi - lo) * 8 + 8, "map");
    } else {
      counts[m] = zt_calloc((size_t)a->vocab_len, sizeof(int64_t), "token counts");
      csv_base[m] = fmt("%s/%s_metric_value", dir, name);
    }
    free(dir);
  }
  int32_t *tok = zt_malloc((size_t)a->max_tokens * sizeof *tok, "sample");
  for (int64_t bs = lo; bs < hi; bs += a->batch_size) {
    const int64_t be = bs + a->batch_size < hi ? bs + a->batch_size : hi;
    int64_t ntouched[4] = {0};
    for (int64_t i = bs; i < be; i++) {
      const int n = a->sample(a->ctx, t, i, tok);
      for (int m = 0; m < M; m++) {
        int64_t v;
        switch (a->metrics[m]) {
        case ZT_METRIC_TOTAL_VOCAB_FREQ:
          for (int j = 0; j < n; j++) counts[m][tok[j]]++;
          continue;
        case ZT_METRIC_VOCAB_RARITY:
        case ZT_METRIC_SEQLEN_VOCAB_RARITY: {
          double s = 0;
          for (int j = 0; j < n; j++) s += c->neglog[tok[j]];
          v = (int64_t)s;
          if (a->metrics[m] == ZT_METRIC_SEQLEN_VOCAB_RARITY) v += (int64_t)n * c->seqlen_coeff;
        } break;
        default: v = n; break;
        }
        builder_add(&b[m], &v, 1);
        pending *p = pm_get(&pm[m], v);
        if (p->n == p->cap) {
          p->cap = p->cap ? 2 * p->cap : 8;
          p->ids = realloc(p->ids, (size_t)p->cap * sizeof *p->ids);
          if (!p->ids) zt_fatal("out of memory", "metric_to_sample map");
        }
        p->ids[p->n++] = i;
        if (!p->touched) {
          p->touched = 1;
          touched[m][ntouched[m]++] = p - pm[m].ents;
        }
      }
      atomic_fetch_add(&c->done, 1);
    }
    /* after each batch, DeepSpeed writes out every value's list longer than 100 as one csv row */
    for (int m = 0; m < M; m++)
      for (int64_t k = 0; k < ntouched[m]; k++) {
        pending *p = &pm[m].ents[touched[m][k]];
        p->touched = 0;
        if (p->n > 100) flush_pending(csv_base[m], p);
      }
  }
  for (int m = 0; m < M; m++) {
    if (is_single(a->metrics[m])) {
      for (int64_t e = 0; e < pm[m].nents; e++) {
        if (pm[m].ents[e].n > 0) flush_pending(csv_base[m], &pm[m].ents[e]);
        free(pm[m].ents[e].ids);
      }
      builder_close(&b[m]); /* its .idx last: it exists only once the thread's files are complete */
      free(pm[m].ents);
      free(pm[m].slot);
      free(touched[m]);
    } else {
      ds_builder vb;
      builder_open(&vb, csv_base[m], 5);
      builder_add(&vb, counts[m], a->vocab_len);
      builder_close(&vb);
      free(counts[m]);
    }
    free(csv_base[m]);
  }
  free(touched);
  free(tok);
  zt_log("worker %d thread %d: finished\n", a->worker_id, t);
}

static void check_common(const zt_analyzer *a) {
  zt_check(a->save && *a->save, "missing argument", "--save DIR (the analysis directory) is required");
  zt_check(a->num_metrics > 0, "missing argument", "--analyzing-metric names no metric (total_vocab_freq, "
           "vocab_rarity, seqlen)");
  for (int i = 0; i < a->num_metrics; i++)
    for (int j = 0; j < i; j++)
      zt_check(a->metrics[i] != a->metrics[j], "bad argument value", "--analyzing-metric lists %s twice",
               zt_metric_name(a->metrics[i]));
  zt_check(a->num_workers >= 1, "bad argument value", "--analyzing-num-workers %d must be >= 1", a->num_workers);
  zt_check(a->num_threads >= 1, "bad argument value", "--analyzing-num-threads %d must be >= 1", a->num_threads);
  struct stat st;
  zt_check(stat(a->save, &st) != 0 || S_ISDIR(st.st_mode), "--save", "%s exists and is not a directory", a->save);
}

/* 1 when dir exists and holds anything besides . and .. */
static int dir_nonempty(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return exists(dir);
  struct dirent *e;
  int any = 0;
  while (!any && (e = readdir(d)))
    any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return any;
}

static void mkdirs(const char *path) {
  char *p = strdup(path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0777) != 0 && errno != EEXIST) zt_fatal("--save", "cannot create %s: %s", p, strerror(errno));
      *s = '/';
    }
  if (mkdir(p, 0777) != 0 && errno != EEXIST) zt_fatal("--save", "cannot create %s: %s", p, strerror(errno));
  free(p);
}

/* The map's checks that need no dataset: flags, the threads to run (returned), the total_vocab_freq result
 * vocab_rarity reads, and that no thread directory this run writes already holds files. */
static int *map_precheck(const zt_analyzer *a, int *nrun_out) {
  check_common(a);
  zt_check(a->worker_id >= 0 && a->worker_id < a->num_workers, "bad argument value", "--analyzing-worker-id %d: "
           "workers are numbered 0..%d (--analyzing-num-workers %d)", a->worker_id, a->num_workers - 1,
           a->num_workers);
  zt_check(a->batch_size >= 1, "bad argument value", "--global-batch-size %lld must be >= 1",
           (long long)a->batch_size);
  int nrun = a->num_specific ? a->num_specific : a->num_threads;
  int *run = zt_malloc((size_t)nrun * sizeof *run, "threads");
  for (int i = 0; i < nrun; i++) {
    run[i] = a->num_specific ? a->specific_threads[i] : i;
    zt_check(run[i] >= 0 && run[i] < a->num_threads, "bad argument value", "--analyzing-specific-threads %d: "
             "threads are numbered 0..%d (--analyzing-num-threads %d)", run[i], a->num_threads - 1, a->num_threads);
    for (int j = 0; j < i; j++)
      zt_check(run[j] != run[i], "bad argument value", "--analyzing-specific-threads lists %d twice", run[i]);
  }
  for (int m = 0; m < a->num_metrics; m++) {
    if (!needs_freq(a->metrics[m])) continue;
    char *p = fmt("%s/total_vocab_freq/total_vocab_freq_metric_value", a->save);
    char *pb = fmt("%s.bin", p), *pi = fmt("%s.idx", p);
    zt_check(exists(pb) && exists(pi), zt_metric_name(a->metrics[m]), "needs the reduced total_vocab_freq result "
             "%s.{bin,idx}: run the map and reduce tasks with --analyzing-metric total_vocab_freq first", p);
    free(p);
    free(pb);
    free(pi);
  }
  /* never mix two analyses: every thread directory this run writes must be new or empty */
  for (int m = 0; m < a->num_metrics; m++)
    for (int i = 0; i < nrun; i++) {
      char *dir = fmt("%s/%s/worker%d_thread%d", a->save, zt_metric_name(a->metrics[m]), a->worker_id, run[i]);
      zt_check(!dir_nonempty(dir), "--save", "%s already holds map results (DeepSpeed would overwrite them); remove "
               "that directory to analyze again", dir);
      free(dir);
    }
  *nrun_out = nrun;
  return run;
}

void zt_analyzer_map(const zt_analyzer *a) {
  int nrun;
  int *run = map_precheck(a, &nrun);
  zt_check(a->num_samples >= 1, "dataset", "the train split has no samples to analyze");
  int64_t wlo, whi;
  zt_analyzer_split(0, a->num_samples, a->num_workers, a->worker_id, &wlo, &whi);
  for (int i = 0; i < nrun; i++) {
    int64_t lo, hi;
    zt_analyzer_split(wlo, whi, a->num_threads, run[i], &lo, &hi);
    for (int m = 0; m < a->num_metrics; m++)
      zt_check(hi > lo || is_single(a->metrics[m]), "bad argument value", "worker %d thread %d gets no samples (%lld "
               "samples over %d workers x %d threads), and %s needs at least one per thread (DeepSpeed's reduce "
               "finds no file for it): use fewer workers or threads", a->worker_id, run[i],
               (long long)a->num_samples, a->num_workers, a->num_threads, zt_metric_name(a->metrics[m]));
  }
  map_ctx c = {.a = a};
  double *neglog = NULL;
  for (int m = 0; m < a->num_metrics && !neglog; m++) {
    if (!needs_freq(a->metrics[m])) continue;
    char *p = fmt("%s/total_vocab_freq/total_vocab_freq_metric_value", a->save);
    ds_file d;
    ds_read(&d, p);
    zt_check(d.n == 1 && d.sizes[0] == a->vocab_len, "vocab_rarity", "%s holds %lld item(s) of %d values; this "
             "tokenizer's padded vocabulary needs one item of %lld (the padded vocabulary size + 1): it was computed "
             "with other tokenizer flags", p, (long long)d.n, d.n ? d.sizes[0] : 0, (long long)a->vocab_len);
    /* analyze_data.py: zeros become 1, then -log(freq / sum(freq)) in float64 */
    neglog = zt_malloc((size_t)a->vocab_len * sizeof *neglog, "vocab rarity");
    long double total = 0;
    for (int64_t v = 0; v < a->vocab_len; v++) {
      if (d.values[v] < 0) zt_fatal("vocab_rarity", "%s: token %lld has count %lld", p, (long long)v, (long long)d.values[v]);
      total += (long double)(d.values[v] ? d.values[v] : 1);
    }
    double top = 0;
    for (int64_t v = 0; v < a->vocab_len; v++) {
      neglog[v] = log((double)(d.values[v] ? d.values[v] : 1) / (double)total) * -1;
      top = neglog[v] > top ? neglog[v] : top;
    }
    /* analyze_data.py: 10 ** (math.ceil(math.log(seq_length * max, 10)) + 1); math.log(x, 10) is log(x) / log(10) */
    const double e = ceil(log((double)a->seq_length * top) / log(10.0)) + 1;
    zt_check(e >= 0 && e <= 17, "seqlen_vocab_rarity", "the seqlen coefficient 10^%g does not fit int64 metric values "
             "(--seq-length %d, largest token rarity %g)", e, a->seq_length, top);
    c.seqlen_coeff = 1;
    for (int k = 0; k < (int)e; k++) c.seqlen_coeff *= 10;
    ds_free(&d);
    free(p);
  }
  c.neglog = neglog;
  for (int m = 0; m < a->num_metrics; m++)
    for (int i = 0; i < nrun; i++) {
      char *dir = fmt("%s/%s/worker%d_thread%d", a->save, zt_metric_name(a->metrics[m]), a->worker_id, run[i]);
      mkdirs(dir);
      free(dir);
    }
  int64_t total = 0;
  for (int i = 0; i < nrun; i++) {
    int64_t lo, hi;
    zt_analyzer_split(wlo, whi, a->num_threads, run[i], &lo, &hi);
    total += hi - lo;
  }
  zt_progress_bar *bar = zt_progress_bar_start("analyze_data map", (double)total, "samples");
  run_threads(nrun, run, map_thread, &c, &c.done, bar);
  zt_progress_bar_finish(bar, (double)atomic_load(&c.done));
  free(neglog);
  free(run);
}

/* ---- reduce ------------------------------------------------------------------------------------------------ */
typedef struct {
  const zt_analyzer *a;
  const char *name, *mdir;
  int mcode, scode;
  ds_file *parts;        /* [W * T] map results */
  int64_t *sorted_ids;   /* samples ordered by (value, sample) */
  int64_t *group_start;  /* [U + 1] into sorted_ids */
  int64_t *uniq;         /* [U] */
  int64_t U;
} reduce_ctx;

static void reduce_s2m_thread(void *arg, int r) {
  reduce_ctx *c = arg;
  const int WT = c->a->num_workers * c->a->num_threads;
  int64_t lo, hi;
  zt_analyzer_split(0, WT, c->a->num_threads_reduce, r, &lo, &hi);
  char *p = fmt("%s/%s_sample_to_metric_thread%d", c->mdir, c->name, r);
  ds_builder b;
  builder_open(&b, p, c->mcode);
  for (int64_t k = lo; k < hi; k++)
    for (int64_t i = 0; i < c->parts[k].n; i++) builder_add(&b, c->parts[k].values + c->parts[k].offsets[i], 1);
  builder_close(&b);
  free(p);
}

static void reduce_m2s_thread(void *arg, int r) {
  reduce_ctx *c = arg;
  int64_t lo, hi;
  zt_analyzer_split(0, c->U, c->a->num_threads_reduce, r, &lo, &hi);
  char *ps = fmt("%s/%s_index_to_sample_thread%d", c->mdir, c->name, r);
  char *pm = fmt("%s/%s_index_to_metric_thread%d", c->mdir, c->name, r);
  ds_builder bs, bm;
  builder_open(&bs, ps, c->scode);
  builder_open(&bm, pm, c->mcode);
  for (int64_t u = lo; u < hi; u++) {
    builder_add(&bs, c->sorted_ids + c->group_start[u], c->group_start[u + 1] - c->group_start[u]);
    builder_add(&bm, &c->uniq[u], 1);
  }
  builder_close(&bs);
  builder_close(&bm);
  free(ps);
  free(pm);
}

typedef struct {
  int64_t v, id;
} vpair;
static int cmp_vpair(const void *x, const void *y) {
  const vpair *a = x, *b = y;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static const char *const k_single_outputs[] = {"sample_to_metric", "index_to_sample", "index_to_metric",
                                               "index_to_sample_percentile_merged"};

/* The reduce's checks that need no dataset: flags, none of its outputs exists, every map result is there. */
static void reduce_precheck(const zt_analyzer *a) {
  check_common(a);
  const int W = a->num_workers, T = a->num_threads, R = a->num_threads_reduce;
  zt_check(R >= 1, "bad argument value", "--analyzing-num-threads-reduce %d must be >= 1", R);
  for (int m = 0; m < a->num_metrics; m++) {
    const char *name = zt_metric_name(a->metrics[m]);
    for (int o = 0; o < (is_single(a->metrics[m]) ? 4 : 1); o++)
      for (int r = -1; r < (o < 3 ? R : 0); r++)
        for (int e = 0; e < 2; e++) {
          char *p = is_single(a->metrics[m])
                        ? (r < 0 ? fmt("%s/%s/%s_%s.%s", a->save, name, name, k_single_outputs[o], e ? "idx" : "bin")
                                 : fmt("%s/%s/%s_%s_thread%d.%s", a->save, name, name, k_single_outputs[o], r,
                                       e ? "idx" : "bin"))
                        : fmt("%s/%s/%s_metric_value.%s", a->save, name, name, e ? "idx" : "bin");
          zt_check(!exists(p), "--save", "%s already exists: this analysis was reduced before (DeepSpeed would "
                   "overwrite it); remove the reduce outputs of %s to reduce again", p, name);
          free(p);
        }
    for (int w = 0; w < W; w++)
      for (int t = 0; t < T; t++) {
        char *p = fmt("%s/%s/worker%d_thread%d/%s_%s", a->save, name, w, t, name,
                      is_single(a->metrics[m]) ? "sample_to_metric" : "metric_value");
        char *pb = fmt("%s.bin", p), *pi = fmt("%s.idx", p);
        zt_check(exists(pb) && exists(pi), "map result", "%s.{bin,idx} is missing: worker %d thread %d of the map "
                 "(--analyzing-num-workers %d --analyzing-num-threads %d) did not run or did not finish", p, w, t, W, T);
        free(p);
        free(pb);
        free(pi);
      }
  }
}

void zt_analyzer_precheck(const zt_analyzer *a, int map) {
  if (map) free(map_precheck(a, &(int){0}));
  else reduce_precheck(a);
}

void zt_analyzer_reduce(const zt_analyzer *a) {
  reduce_precheck(a);
  zt_check(a->num_samples >= 1, "dataset", "the train split has no samples to analyze");
  const int W = a->num_workers, T = a->num_threads, R = a->num_threads_reduce;
  ds_file **parts = zt_calloc(a->num_metrics, sizeof *parts, "reduce");
  for (int m = 0; m < a->num_metrics; m++) {
    const char *name = zt_metric_name(a->metrics[m]);
    parts[m] = zt_calloc((size_t)W * T, sizeof(ds_file), "reduce");
    for (int w = 0; w < W; w++) {
      int64_t wlo, whi;
      zt_analyzer_split(0, a->num_samples, W, w, &wlo, &whi);
      for (int t = 0; t < T; t++) {
        int64_t lo, hi;
        zt_analyzer_split(wlo, whi, T, t, &lo, &hi);
        char *p = fmt("%s/%s/worker%d_thread%d/%s_%s", a->save, name, w, t, name,
                      is_single(a->metrics[m]) ? "sample_to_metric" : "metric_value");
        char *pb = fmt("%s.bin", p), *pi = fmt("%s.idx", p);
        zt_check(exists(pb) && exists(pi), "map result", "%s.{bin,idx} is missing: worker %d thread %d of the map "
                 "(--analyzing-num-workers %d --analyzing-num-threads %d) did not run or did not finish", p, w, t, W, T);
        ds_file *d = &parts[m][w * T + t];
        ds_read(d, p);
        if (is_single(a->metrics[m])) {
          for (int64_t i = 0; i < d->n; i++)
            zt_check(d->sizes[i] == 1, "map result", "%s: item %lld has %d values (one per sample expected)", p,
                     (long long)i, d->sizes[i]);
          zt_check(d->n == hi - lo, "map result", "%s holds %lld samples; worker %d thread %d of %lld samples "
                   "(--analyzing-num-workers %d --analyzing-num-threads %d) has %lld: a map did not finish, or "
                   "ran with other flags", p, (long long)d->n, w, t, (long long)a->num_samples, W, T, (long long)(hi - lo));
        } else {
          zt_check(d->n == 1 && d->sizes[0] == a->vocab_len, "map result", "%s holds %lld item(s) of %d values, "
                   "expected one of %lld (the padded vocabulary size + 1)", p, (long long)d->n, d->n ? d->sizes[0] : 0,
                   (long long)a->vocab_len);
        }
        free(p);
        free(pb);
        free(pi);
      }
    }
  }
  for (int m = 0; m < a->num_metrics; m++) {
    const char *name = zt_metric_name(a->metrics[m]);
    char *mdir = fmt("%s/%s", a->save, name);
    if (!is_single(a->metrics[m])) {
      int64_t *sum = zt_calloc((size_t)a->vocab_len, sizeof *sum, "reduce");
      for (int k = 0; k < W * T; k++)
        for (int64_t v = 0; v < a->vocab_len; v++) sum[v] += parts[m][k].values[v];
      int64_t lo = sum[0], hi = sum[0];
      for (int64_t v = 0; v < a->vocab_len; v++) {
        lo = sum[v] < lo ? sum[v] : lo;
        hi = sum[v] > hi ? sum[v] : hi;
      }
      char *p = fmt("%s/%s_metric_value", mdir, name);
      ds_builder b;
      builder_open(&b, p, zt_analyzer_fit_dtype(lo, hi));
      builder_add(&b, sum, a->vocab_len);
      builder_close(&b);
      zt_log("Metric %s: counts between %lld and %lld, stored as %s in %s\n", name, (long long)lo, (long long)hi,
             code_name(zt_analyzer_fit_dtype(lo, hi)), p);
      free(p);
      free(sum);
    } else {
      const int64_t N = a->num_samples;
      vpair *vp = zt_malloc((size_t)N * sizeof *vp, "reduce");
      int64_t n = 0;
      for (int k = 0; k < W * T; k++)
        for (int64_t i = 0; i < parts[m][k].n; i++, n++) vp[n] = (vpair){parts[m][k].values[i], n};
      qsort(vp, (size_t)N, sizeof *vp, cmp_vpair);
      reduce_ctx c = {.a = a, .name = name, .mdir = mdir, .parts = parts[m]};
      c.sorted_ids = zt_malloc((size_t)N * 8, "reduce");
      c.uniq = zt_malloc((size_t)N * 8, "reduce");
      c.group_start = zt_malloc((size_t)N * 8 + 8, "reduce");
      for (int64_t i = 0; i < N; i++) {
        c.sorted_ids[i] = vp[i].id;
        if (i == 0 || vp[i].v != vp[i - 1].v) {
          c.uniq[c.U] = vp[i].v;
          c.group_start[c.U++] = i;
        }
      }
      c.group_start[c.U] = N;
      free(vp);
      c.mcode = zt_analyzer_fit_dtype(c.uniq[0], c.uniq[c.U - 1]);
      c.scode = zt_analyzer_fit_dtype(0, N - 1);
      zt_log("Total number of data samples: %lld. Will use %s to store the sample indexes.\n", (long long)N,
             code_name(c.scode));
      zt_log("Metric %s has values between %lld and %lld. Will use %s to store the metric values.\n", name,
             (long long)c.uniq[0], (long long)c.uniq[c.U - 1], code_name(c.mcode));
      int *rs = zt_malloc((size_t)R * sizeof *rs, "reduce");
      for (int r = 0; r < R; r++) rs[r] = r;
      run_threads(R, rs, reduce_s2m_thread, &c, NULL, NULL);
      static const char *const merged[3] = {"sample_to_metric", "index_to_sample", "index_to_metric"};
      run_threads(R, rs, reduce_m2s_thread, &c, NULL, NULL);
      for (int o = 0; o < 3; o++) {
        char *p = fmt("%s/%s_%s", mdir, name, merged[o]);
        ds_builder b;
        builder_open(&b, p, o == 1 ? c.scode : c.mcode);
        for (int r = 0; r < R; r++) {
          char *q = fmt("%s/%s_%s_thread%d", mdir, name, merged[o], r);
          builder_merge(&b, q);
          free(q);
        }
        builder_close(&b);
        free(p);
      }
      /* index_to_sample_percentile_merged: max(1, U // 100) consecutive values per item */
      char *p = fmt("%s/%s_index_to_sample_percentile_merged", mdir, name);
      ds_builder b;
      builder_open(&b, p, c.scode);
      const int64_t step = c.U / 100 > 1 ? c.U / 100 : 1;
      for (int64_t u = 0; u < c.U; u += step) {
        const int64_t ue = u + step < c.U ? u + step : c.U;
        builder_add(&b, c.sorted_ids + c.group_start[u], c.group_start[ue] - c.group_start[u]);
      }
      builder_close(&b);
      free(p);
      /* get_metric_value_percentiles: the value reaching each 5% of the samples */
      int64_t seen = 0;
      int pct = 5;
      for (int64_t u = 0; u < c.U; u++) {
        seen += c.group_start[u + 1] - c.group_start[u];
        if ((double)seen >= (double)N * pct / 100.0) {
          zt_log("Metric %s %dth percentile: %lld\n", name, pct, (long long)c.uniq[u]);
          pct += 5;
        }
      }
      free(rs);
      free(c.sorted_ids);
      free(c.uniq);
      free(c.group_start);
    }
    for (int k = 0; k < W * T; k++) ds_free(&parts[m][k]);
    free(parts[m]);
    free(mdir);
  }
  free(parts);
}
