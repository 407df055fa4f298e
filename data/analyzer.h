/* DeepSpeed's DataAnalyzer (deepspeed/runtime/data_pipeline/data_sampling/data_analyzer.py) for the metrics of
 * Megatron-DeepSpeed's examples_deepspeed/data_efficiency/analyze_data.py: the map task (each worker process splits
 * its share of the samples over threads; every thread writes its partial files) and the reduce task (merges them
 * into the files DeepSpeed's curriculum data sampler reads). Files, names, dtypes and layouts are DeepSpeed's
 * (docs/data_efficiency_analyzer.md); the samples come from a callback (the train split of the GPT or BERT data). */
#ifndef ZT_ANALYZER_H
#define ZT_ANALYZER_H

#include <stdint.h>

typedef enum {
  ZT_METRIC_TOTAL_VOCAB_FREQ = 0, /* accumulate_value_over_samples: token counts (BERT: padding excluded), length
                                   * padded vocab + 1 */
  ZT_METRIC_VOCAB_RARITY,         /* single_value_per_sample: int(sum over the tokens of -log(freq / total)) */
  ZT_METRIC_SEQLEN,               /* single_value_per_sample: tokens before padding (BERT) */
  ZT_METRIC_SEQLEN_VOCAB_RARITY,  /* single_value_per_sample (BERT): seqlen * 10^(ceil(log10(seq_length *
                                   * max(-log(freq / total)))) + 1) + int(the sample's vocab_rarity sum) */
} zt_metric_kind;

/* Sample i into tokens (at most max_tokens); returns its number of tokens (GPT: seq_length + 1; BERT: the tokens
 * before padding, the padding_mask's count). thread: the calling thread's slot in [0, num_threads). */
typedef int (*zt_analyzer_sample_fn)(void *ctx, int thread, int64_t i, int32_t *tokens);

typedef struct {
  const char *save;                   /* --save: the analysis directory */
  int num_metrics;
  zt_metric_kind metrics[4];
  int num_workers, worker_id;         /* --analyzing-num-workers / --analyzing-worker-id */
  int num_threads;                    /* --analyzing-num-threads */
  int num_threads_reduce;             /* --analyzing-num-threads-reduce */
  int num_specific;                   /* --analyzing-specific-threads (0: all threads) */
  const int *specific_threads;
  int64_t batch_size;                 /* --global-batch-size: the map's batches (when pending csv rows are written) */
  int64_t num_samples;                /* len(train dataset) */
  int64_t vocab_len;                  /* padded vocabulary size + 1 (torch.bincount's minlength) */
  int max_tokens;
  int seq_length;                     /* --seq-length (seqlen_vocab_rarity's coefficient) */
  zt_analyzer_sample_fn sample;
  void *ctx;
} zt_analyzer;

/* Parses a metric name; returns 0, or -1 for an unknown name. */
int zt_metric_parse(const char *name, zt_metric_kind *kind);
const char *zt_metric_name(zt_metric_kind kind);

/* The checks of the map (map = 1) or reduce task that need no dataset (num_samples, vocab_len, sample unused): run
 * before the datasets are built, so that a conflicting --save or a missing map result is refused at once. */
void zt_analyzer_precheck(const zt_analyzer *a, int map);
/* The map task of worker a->worker_id. Every check (flags, the total_vocab_freq result vocab_rarity needs, that
 * no thread directory it would write already holds files) runs before any file is written; dies naming the flag
 * or the file. */
void zt_analyzer_map(const zt_analyzer *a);
/* The reduce task. Checks that every map result exists and that together they cover num_samples samples, and that
 * none of the files it writes exists yet, before writing anything. */
void zt_analyzer_reduce(const zt_analyzer *a);

/* DeepSpeed's utils.find_fit_int_dtype as its indexed_dataset dtype code (1 uint8, 2 int8, 3 int16, 4 int32,
 * 5 int64, 6 uint16, 7 uint32, 8 uint64: the data_sampling table, not Megatron's). */
int zt_analyzer_fit_dtype(int64_t min_value, int64_t max_value);
/* DeepSpeed's utils.split_index: boundaries of part k of [start, end) in num parts (np.linspace, cast to int). */
void zt_analyzer_split(int64_t start, int64_t end, int num, int k, int64_t *lo, int64_t *hi);

#endif
