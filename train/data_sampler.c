/* DeepSpeedDataSampler's curriculum (train/data_sampler.h), method by method: get_sample_based_on_metric_value,
 * get_sample_based_on_metric_percentile, get_new_cluster, sample_from_clusters, get_sample_from_cluster,
 * get_next_global_batch. NumPy's set operations become bitmaps over the dataset's sample ids (intersect1d gives
 * the sorted intersection, setdiff1d keeps the order of its first argument). */
#include "train/data_sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

/* ---- a growing list of sample ids ---- */
typedef struct {
  int64_t *v;
  int64_t n, cap;
} ids;

static void ids_push(ids *a, const int64_t *src, int64_t n) {
  if (n <= 0) return;
  if (a->n + n > a->cap) {
    a->cap = a->n + n > 2 * a->cap ? a->n + n : 2 * a->cap;
    a->v = realloc(a->v, (size_t)a->cap * sizeof *a->v);
    if (!a->v) zt_fatal("out of memory", "data sampler: %lld sample ids", (long long)a->cap);
  }
  memcpy(a->v + a->n, src, (size_t)n * sizeof *src);
  a->n += n;
}

static void ids_arange(ids *a, int64_t n) {
  a->n = 0;
  for (int64_t i = 0; i < n; i++) ids_push(a, &i, 1);
}

/* ---- the metrics' index files ---- */
static const char *metric_key(const zt_data_sampler *s, int m, const char *key, char *buf, size_t n) {
  snprintf(buf, n, "data_efficiency.data_sampling.curriculum_learning.curriculum_metrics.%s.%s",
           s->cfg->metric[m].name, key);
  return buf;
}

static int64_t row_size(const zt_ds_index *d, int64_t row) { return d->offsets[row + 1] - d->offsets[row]; }
static const int64_t *row_ids(const zt_ds_index *d, int64_t row) { return d->values + d->offsets[row]; }

/* The samples whose metric value v satisfies start < v <= end (no lower bound when !has_start), rows in order. */
static void by_value(const zt_data_sampler *s, int m, int has_start, int64_t start, int64_t end, ids *out) {
  const zt_ds_index *is = &s->to_sample[m], *im = &s->to_metric[m];
  out->n = 0;
  for (int64_t row = 0; row < is->n; row++) {
    const int64_t v = im->values[im->offsets[row]];
    if (v <= end && (!has_start || v > start)) ids_push(out, row_ids(is, row), row_size(is, row));
  }
}

/* The samples between percentiles start and end of the metric (rows in order, cut at sample_per_percentile
 * multiples; the last percentile takes the remainder). */
static void by_percentile(zt_data_sampler *s, int m, int64_t pstart, int64_t pend, ids *out) {
  const zt_ds_index *is = &s->to_sample[m];
  out->n = 0;
  if (s->data_1epoch_size < 0) { /* DeepSpeed computes it once, from the first percentile metric asked */
    s->data_1epoch_size = 0;
    for (int64_t row = 0; row < is->n; row++) s->data_1epoch_size += row_size(is, row);
  }
  const int64_t max_p = s->cfg->metric[m].schedule.max_difficulty;
  const int64_t per = s->data_1epoch_size / max_p;
  const int64_t start_count = per * pstart;
  const int64_t end_count = pend == max_p ? s->data_1epoch_size : per * pend;
  int64_t cur = 0;
  for (int64_t row = 0; row < is->n; row++) {
    const int64_t rs = row_size(is, row);
    if (cur + rs > start_count) {
      const int64_t lo = start_count - cur > 0 ? start_count - cur : 0;
      const int64_t hi = cur + rs <= end_count ? rs : end_count - cur; /* > 0: cur < end_count here */
      if (hi > lo) ids_push(out, row_ids(is, row) + lo, hi - lo);
    }
    cur += rs;
    if (cur >= end_count) break;
  }
}

/* ---- clusters ---- */
static void add_cluster(zt_data_sampler *s, ids *c) {
  if (s->n_clusters == s->cap_clusters) {
    s->cap_clusters = s->cap_clusters ? 2 * s->cap_clusters : 8;
    s->clusters = realloc(s->clusters, (size_t)s->cap_clusters * sizeof *s->clusters);
    if (!s->clusters) zt_fatal("out of memory", "data sampler clusters");
  }
  zt_np_generator_shuffle_i64(&s->rng, c->v, c->n);
  s->clusters[s->n_clusters++] = (zt_data_cluster){.ids = c->v, .n = c->n, .pos = 0};
  *c = (ids){0};
}

static void difficulties(const zt_data_sampler *s, char *buf, size_t n, const int64_t *d, const int *neg_inf) {
  size_t k = (size_t)snprintf(buf, n, "{");
  for (int m = 0; m < s->cfg->n_metrics && k < n; m++) {
    if (neg_inf && neg_inf[m]) k += (size_t)snprintf(buf + k, n - k, "%s'%s': -inf", m ? ", " : "", s->cfg->metric[m].name);
    else k += (size_t)snprintf(buf + k, n - k, "%s'%s': %lld", m ? ", " : "", s->cfg->metric[m].name, (long long)d[m]);
  }
  if (k < n) snprintf(buf + k, n - k, "}");
}

static void new_cluster(zt_data_sampler *s, const int64_t *prev, const int *prev_inf) {
  const zt_data_sampling_config *c = s->cfg;
  int need = 0;
  for (int m = 0; m < c->n_metrics; m++) need += c->metric[m].clustering_type != ZT_CLUSTERING_SINGLE_CLUSTER;
  ids nc = {0}, mc = {0};
  int have = 0; /* nc is not None */
  if (need > 1) {
    uint8_t *in = zt_calloc((size_t)s->one_epoch, 1, "data sampler cluster");
    for (int m = 0; m < c->n_metrics; m++) {
      const zt_data_metric_config *mt = &c->metric[m];
      if (mt->clustering_type == ZT_CLUSTERING_SINGLE_CLUSTER) ids_arange(&mc, s->one_epoch);
      else if (mt->difficulty_type == ZT_DIFFICULTY_VALUE) by_value(s, m, 0, 0, s->current[m], &mc);
      else by_percentile(s, m, 0, s->current[m], &mc);
      if (!have) {
        nc.n = 0;
        ids_push(&nc, mc.v, mc.n);
        have = 1;
        continue;
      }
      /* np.intersect1d(nc, mc, assume_unique=True): the sorted common ids */
      memset(in, 0, (size_t)s->one_epoch);
      for (int64_t i = 0; i < nc.n; i++) in[nc.v[i]] = 1;
      for (int64_t i = 0; i < mc.n; i++)
        if (in[mc.v[i]] == 1) in[mc.v[i]] = 2;
      nc.n = 0;
      for (int64_t i = 0; i < s->one_epoch; i++)
        if (in[i] == 2) ids_push(&nc, &i, 1);
    }
    /* np.setdiff1d(nc, cluster, assume_unique=True) for every cluster: nc's order kept */
    memset(in, 0, (size_t)s->one_epoch);
    for (int k = 0; k < s->n_clusters; k++)
      for (int64_t i = 0; i < s->clusters[k].n; i++) in[s->clusters[k].ids[i]] = 1;
    int64_t w = 0;
    for (int64_t i = 0; i < nc.n; i++)
      if (!in[nc.v[i]]) nc.v[w++] = nc.v[i];
    nc.n = w;
    free(in);
  } else {
    if (s->n_clusters == 0) {
      ids_arange(&nc, s->one_epoch);
      have = 1;
    }
    for (int m = 0; m < c->n_metrics; m++) {
      const zt_data_metric_config *mt = &c->metric[m];
      if (mt->clustering_type == ZT_CLUSTERING_SINGLE_CLUSTER) continue;
      if (mt->difficulty_type == ZT_DIFFICULTY_VALUE) by_value(s, m, !prev_inf[m], prev[m], s->current[m], &nc);
      else by_percentile(s, m, prev[m], s->current[m], &nc);
      have = 1;
    }
  }
  char p[512], cur[512];
  if (!s->quiet) {
    difficulties(s, p, sizeof p, prev, prev_inf);
    difficulties(s, cur, sizeof cur, s->current, NULL);
  }
  if (have && nc.n > 0) {
    if (!s->quiet)
      zt_log("new data cluster (previous_difficulties %s, current_difficulties %s) with size %lld generated.\n", p,
             cur, (long long)nc.n);
    add_cluster(s, &nc);
  } else if (!s->quiet) {
    zt_log("new data cluster (previous_difficulties %s, current_difficulties %s) has no matched data thus "
           "skipped.\n", p, cur);
  }
  free(nc.v);
  free(mc.v);
}

/* get_sample_from_cluster: the next k ids; an exhausted cluster is reshuffled once and read from its start. */
static void from_cluster(zt_data_sampler *s, zt_data_cluster *c, int64_t k, ids *out) {
  const int64_t start = c->pos;
  const int64_t end = start + k < c->n ? start + k : c->n;
  const int64_t got = end > start ? end - start : 0;
  if (got) ids_push(out, c->ids + start, got);
  c->pos += k;
  if (got < k) {
    const int64_t rem = k - got;
    zt_np_generator_shuffle_i64(&s->rng, c->ids, c->n);
    ids_push(out, c->ids, rem < c->n ? rem : c->n);
    c->pos = rem;
  }
}

void zt_data_sampler_next(zt_data_sampler *s) {
  const zt_data_sampling_config *c = s->cfg;
  s->step++;
  int changed = 0, prev_inf[ZT_DATA_SAMPLER_MAX_METRICS] = {0};
  int64_t prev[ZT_DATA_SAMPLER_MAX_METRICS] = {0};
  for (int m = 0; m < c->n_metrics; m++) {
    const int64_t next = zt_curriculum_update(&s->sched[m], s->step);
    if (s->step == 1 || next != s->current[m]) changed = 1;
    if (s->step > 1) prev[m] = s->current[m];
    else if (c->metric[m].difficulty_type == ZT_DIFFICULTY_VALUE) prev_inf[m] = 1;
    else prev[m] = 0;
    s->current[m] = next;
  }
  if (changed) new_cluster(s, prev, prev_inf);
  zt_check(s->n_clusters > 0, "ds_config", "data_efficiency.data_sampling: the difficulties of step %lld admit no "
           "sample (no data cluster to draw from; DeepSpeed fails in np.random.choice): check the metrics' "
           "min_difficulty against the index files", (long long)s->step);
  int64_t total = 0;
  for (int k = 0; k < s->n_clusters; k++) total += s->clusters[k].n;
  double *w = zt_malloc((size_t)s->n_clusters * sizeof *w, "data sampler weights");
  int64_t *counts = zt_malloc((size_t)s->n_clusters * sizeof *counts, "data sampler counts");
  for (int k = 0; k < s->n_clusters; k++) w[k] = (double)s->clusters[k].n / (double)total;
  zt_np_generator_choice_counts(&s->rng, w, s->n_clusters, s->gbs, counts);
  ids b = {.v = s->batch, .n = 0, .cap = s->gbs};
  for (int k = 0; k < s->n_clusters; k++) {
    const int64_t before = b.n;
    from_cluster(s, &s->clusters[k], counts[k], &b);
    zt_check(b.n - before == counts[k], "ds_config", "data_efficiency.data_sampling: global batch %lld needs %lld "
             "samples of data cluster %d, which holds %lld: DeepSpeed's sampler would return a short global batch "
             "(it reshuffles an exhausted cluster once); use larger clusters (a larger dataset, a larger first "
             "difficulty) or a smaller global batch", (long long)s->step, (long long)counts[k], k,
             (long long)s->clusters[k].n);
  }
  s->batch = b.v;
  zt_np_generator_shuffle_i64(&s->rng, s->batch, b.n);
  free(w);
  free(counts);
}

int zt_data_sampler_seqlen(const zt_data_sampler *s, int seq_length) {
  if (s->seqlen_metric < 0) return seq_length;
  const int64_t d = s->current[s->seqlen_metric];
  return d < seq_length ? (int)d : seq_length;
}

uint64_t zt_data_sampler_digest(const zt_data_sampler *s) {
  uint64_t h = 1469598103934665603ULL;
#define MIXIN(x)                                                                                                      \
  do {                                                                                                                \
    h ^= (uint64_t)(x);                                                                                               \
    h *= 1099511628211ULL;                                                                                            \
  } while (0)
  MIXIN(s->step);
  MIXIN(s->rng.state_hi);
  MIXIN(s->rng.state_lo);
  MIXIN(s->rng.inc_hi);
  MIXIN(s->rng.inc_lo);
  MIXIN(s->rng.has_uint32);
  MIXIN(s->rng.uinteger);
  for (int m = 0; m < s->cfg->n_metrics; m++) MIXIN(s->current[m]);
  MIXIN(s->n_clusters);
  for (int k = 0; k < s->n_clusters; k++) {
    MIXIN(s->clusters[k].n);
    MIXIN(s->clusters[k].pos);
  }
#undef MIXIN
  return h;
}

static const char *schedule_text(const zt_curriculum_config *c, char *buf, size_t n) {
  if (c->type == ZT_CURRICULUM_FIXED_DISCRETE)
    snprintf(buf, n, "fixed_discrete over %d difficulties", c->n_difficulty);
  else
    snprintf(buf, n, "%s from %lld to %lld over %lld steps in multiples of %lld%s", zt_curriculum_type_name(c->type),
             (long long)c->min_difficulty, (long long)c->max_difficulty, (long long)c->total_curriculum_step,
             (long long)c->difficulty_step, c->type == ZT_CURRICULUM_FIXED_ROOT ? ", root degree" : "");
  if (c->type == ZT_CURRICULUM_FIXED_ROOT) {
    const size_t k = strlen(buf);
    snprintf(buf + k, n - k, " %lld", (long long)c->root_degree);
  }
  return buf;
}

void zt_data_sampler_describe(const zt_data_sampler *s, char *out, size_t n) {
  const zt_data_sampling_config *c = s->cfg;
  size_t k = (size_t)snprintf(out, n, "> data sampling: DeepSpeed's curriculum over %d metric%s, seed %llu, %lld "
                              "samples per epoch:", c->n_metrics, c->n_metrics > 1 ? "s" : "",
                              (unsigned long long)c->seed, (long long)s->one_epoch);
  for (int m = 0; m < c->n_metrics && k < n; m++) {
    const zt_data_metric_config *mt = &c->metric[m];
    char sch[256];
    k += (size_t)snprintf(out + k, n - k, " %s (%s, %s, %s)%s", mt->name,
                          mt->difficulty_type == ZT_DIFFICULTY_VALUE ? "value" : "percentile",
                          mt->clustering_type == ZT_CLUSTERING_SINGLE_CLUSTER ? "single_cluster" : "schedule_based",
                          schedule_text(&mt->schedule, sch, sizeof sch), m + 1 < c->n_metrics ? ";" : "");
  }
}

/* Megatron-DeepSpeed's data_post_process looks for seqlen_truncate first, then seqlen_reshape. */
int zt_data_sampling_seqlen_metric(const zt_data_sampling_config *cfg) {
  for (int pass = 0; pass < 2; pass++)
    for (int m = 0; m < cfg->n_metrics; m++)
      if (!strcmp(cfg->metric[m].name, pass ? "seqlen_reshape" : "seqlen_truncate")) return m;
  return -1;
}

int zt_data_sampling_reshape(const zt_data_sampling_config *cfg) {
  const int m = zt_data_sampling_seqlen_metric(cfg);
  return m >= 0 && !strcmp(cfg->metric[m].name, "seqlen_reshape");
}

void zt_data_sampler_init(zt_data_sampler *s, const zt_data_sampling_config *cfg, int64_t one_epoch, int64_t gbs) {
  memset(s, 0, sizeof *s);
  s->cfg = cfg;
  s->one_epoch = one_epoch;
  s->gbs = gbs;
  s->data_1epoch_size = -1;
  s->seqlen_metric = zt_data_sampling_seqlen_metric(cfg);
  zt_np_generator_seed(&s->rng, cfg->seed);
  zt_check(one_epoch > 0, "ds_config", "data_efficiency.data_sampling: no sample to consume: the training dataset "
           "is empty");
  char key[512];
  for (int m = 0; m < cfg->n_metrics; m++) {
    const zt_data_metric_config *mt = &cfg->metric[m];
    zt_curriculum_init(&s->sched[m], &mt->schedule);
    if (mt->clustering_type == ZT_CLUSTERING_SINGLE_CLUSTER) continue;
    const int value = mt->difficulty_type == ZT_DIFFICULTY_VALUE;
    zt_ds_index *is = &s->to_sample[m], *im = &s->to_metric[m];
    metric_key(s, m, "index_to_sample_path", key, sizeof key);
    zt_check(mt->index_to_sample_path[0], "ds_config", "%s is missing: clustering_type schedule_based reads the "
             "samples of each metric value from it (the data analyzer's <metric>_index_to_sample, or "
             "<metric>_index_to_sample_percentile_merged for percentiles)", key);
    zt_ds_index_read(is, mt->index_to_sample_path, key);
    for (int64_t i = 0; i < is->nvalues; i++)
      zt_check(is->values[i] >= 0 && is->values[i] < one_epoch, key, "%s names sample %lld; the training dataset "
               "has %lld samples (analyze the data with the training run's --data-path, --split, --seq-length, "
               "--seed and epochs)", mt->index_to_sample_path, (long long)is->values[i], (long long)one_epoch);
    if (value) {
      metric_key(s, m, "index_to_metric_path", key, sizeof key);
      zt_check(mt->index_to_metric_path[0], "ds_config", "%s is missing: difficulty_type value with clustering_type "
               "schedule_based reads each index row's metric value from it", key);
      zt_ds_index_read(im, mt->index_to_metric_path, key);
      zt_check(im->n == is->n, key, "%s has %lld rows and %s %lld: each row of index_to_sample needs its metric value",
               mt->index_to_metric_path, (long long)im->n, mt->index_to_sample_path, (long long)is->n);
      for (int64_t row = 0; row < im->n; row++)
        zt_check(row_size(im, row) == 1, key, "%s: row %lld holds %lld values, expected one metric value",
                 mt->index_to_metric_path, (long long)row, (long long)row_size(im, row));
    }
  }
  s->batch = zt_malloc((size_t)gbs * sizeof *s->batch, "data sampler batch");
}

void zt_data_sampler_free(zt_data_sampler *s) {
  for (int m = 0; m < ZT_DATA_SAMPLER_MAX_METRICS; m++) {
    if (s->to_sample[m].offsets) zt_ds_index_free(&s->to_sample[m]);
    if (s->to_metric[m].offsets) zt_ds_index_free(&s->to_metric[m]);
  }
  for (int k = 0; k < s->n_clusters; k++) free(s->clusters[k].ids);
  free(s->clusters);
  free(s->batch);
  memset(s, 0, sizeof *s);
}
