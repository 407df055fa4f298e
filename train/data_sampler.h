/* DeepSpeed's data-efficiency data sampler (deepspeed/runtime/data_pipeline/data_sampling/data_sampler.py,
 * DeepSpeedDataSampler) as Megatron-DeepSpeed's --data-efficiency-curriculum-learning uses it: curriculum learning
 * over the metrics of the ds_config's data_efficiency.data_sampling.curriculum_learning block. Each metric has a
 * CurriculumScheduler (train/curriculum.h); metrics with clustering_type schedule_based read the data analyzer's
 * index files (docs/data_efficiency_analyzer.md) and admit samples by value or percentile as the difficulty grows;
 * every new difficulty adds a cluster of newly admitted samples, shuffled; each global batch draws its samples from
 * the clusters in proportion to their sizes, all with NumPy's default_rng(data_efficiency.seed) draws
 * (data/numpy_generator.h), so the order is DeepSpeed's for the same files and seed. The metric named
 * seqlen_truncate also cuts the batch to its difficulty, one named seqlen_reshape re-cuts it into rows of that length
 * (Megatron-DeepSpeed's data_post_process). As DeepSpeed's, the engine keeps the sampler on rank 0 and broadcasts each
 * global batch; each rank loads its slice.
 * docs/data_efficiency.md, "The data-efficiency library's data sampling". */
#ifndef ZT_DATA_SAMPLER_H
#define ZT_DATA_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "data/ds_index.h"
#include "data/numpy_generator.h"
#include "train/curriculum.h"

enum { ZT_DATA_SAMPLER_MAX_METRICS = 8, ZT_DATA_SAMPLER_PATH = 4096 };

typedef enum { ZT_DIFFICULTY_VALUE, ZT_DIFFICULTY_PERCENTILE } zt_difficulty_type;
typedef enum { ZT_CLUSTERING_SCHEDULE_BASED, ZT_CLUSTERING_SINGLE_CLUSTER } zt_clustering_type;

typedef struct {
  char name[128];                               /* the key under curriculum_metrics */
  char index_to_sample_path[ZT_DATA_SAMPLER_PATH], index_to_metric_path[ZT_DATA_SAMPLER_PATH]; /* "" when null */
  zt_difficulty_type difficulty_type;
  zt_clustering_type clustering_type;
  zt_curriculum_config schedule;                /* min/max_difficulty, schedule_type, schedule_config */
} zt_data_metric_config;

/* data_efficiency.data_sampling with its curriculum_learning block, as DeepSpeed's config.py reads it. */
typedef struct {
  bool enabled;                 /* data_sampling.curriculum_learning.enabled (what DeepSpeed's engine reads) */
  uint64_t seed;                /* data_efficiency.seed */
  int64_t num_epochs;           /* data_sampling.num_epochs */
  int64_t num_workers;          /* data_sampling.num_workers */
  char cluster_path[ZT_DATA_SAMPLER_PATH]; /* data_cluster_path */
  int n_metrics;
  zt_data_metric_config metric[ZT_DATA_SAMPLER_MAX_METRICS]; /* in the order of the file (DeepSpeed's dict order) */
} zt_data_sampling_config;

typedef struct {
  int64_t *ids;                 /* the cluster's samples, in their current shuffled order */
  int64_t n, pos;               /* data_cluster_current_position */
} zt_data_cluster;

typedef struct {
  const zt_data_sampling_config *cfg;
  int64_t one_epoch;            /* one_epoch_total_samples: the training dataset's length */
  int64_t gbs;                  /* the global batch */
  zt_np_generator rng;          /* np.random.default_rng(seed) */
  int64_t step;                 /* curriculum_step: the global batches drawn */
  zt_curriculum sched[ZT_DATA_SAMPLER_MAX_METRICS];
  int64_t current[ZT_DATA_SAMPLER_MAX_METRICS]; /* current_difficulties (valid once step > 0) */
  zt_ds_index to_sample[ZT_DATA_SAMPLER_MAX_METRICS], to_metric[ZT_DATA_SAMPLER_MAX_METRICS]; /* read when needed */
  int64_t data_1epoch_size;     /* the percentile size (-1: not yet computed) */
  zt_data_cluster *clusters;
  int n_clusters, cap_clusters;
  int64_t *batch;               /* [gbs] the current global batch */
  int seqlen_metric;            /* the index of seqlen_truncate (or seqlen_reshape), -1 without */
  int quiet;                    /* no cluster messages (replaying to a checkpoint's step) */
} zt_data_sampler;

/* The index of the metric that sets the sequence length, -1 without: seqlen_truncate, else seqlen_reshape (with
 * both, Megatron-DeepSpeed truncates and the seqlen_reshape metric only draws). */
int zt_data_sampling_seqlen_metric(const zt_data_sampling_config *cfg);
/* 1 when that metric is seqlen_reshape: each micro batch is re-cut into rows of its length (data/gpt_data.h). */
int zt_data_sampling_reshape(const zt_data_sampling_config *cfg);
/* Builds the sampler for a training dataset of one_epoch samples and global batches of gbs; reads the metrics'
 * index files and checks them (sample ids inside the dataset, one metric value per index row), dying with the key
 * and the file. */
void zt_data_sampler_init(zt_data_sampler *s, const zt_data_sampling_config *cfg, int64_t one_epoch, int64_t gbs);
void zt_data_sampler_free(zt_data_sampler *s);
/* get_next_global_batch: steps the schedules, adds a cluster when a difficulty changed, draws the global batch.
 * A batch the clusters cannot fill (DeepSpeed would train a short one) dies naming the step and the clusters. */
void zt_data_sampler_next(zt_data_sampler *s);
/* The mbs samples of micro batch mb for data-parallel rank r (of dp) in a global batch (DeepSpeed's __iter__:
 * entries [(mb x dp + r) x mbs, + mbs)). */
static inline const int64_t *zt_data_sampler_slice(const int64_t *batch, int mb, int r, int mbs, int dp) {
  return batch + ((int64_t)mb * dp + r) * mbs;
}
/* The sequence length of the current batch: min(the seqlen metric's difficulty, seq_length), seq_length without
 * one. */
int zt_data_sampler_seqlen(const zt_data_sampler *s, int seq_length);
/* A digest of the sampler's state (step, generator, cluster sizes and positions): a resumed run replays the steps
 * and compares it with the checkpoint's. */
uint64_t zt_data_sampler_digest(const zt_data_sampler *s);
/* The start-up line: the metrics, their schedules and clusterings. */
void zt_data_sampler_describe(const zt_data_sampler *s, char *out, size_t n);

#endif
