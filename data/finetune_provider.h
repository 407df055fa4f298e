/* The data provider of finetune_bert (Megatron-DeepSpeed's tasks/finetune_utils.py data loaders over a task's
 * datasets, data/finetune_data.h): the engine asks for rows [first, first + rows) of a split, with rows = samples x
 * choices (Megatron multiplies the micro batch by the dataset's sample_multiplier, RACE's 4 choices); the provider
 * finds the samples torch's loaders give: each epoch's DistributedSampler permutation (torch.randperm seeded with
 * --seed + epoch for training; 0 for the validation loader, whose epoch is never set), padded to the data-parallel
 * ranks, rank r taking every W-th index, cut into micro batches (the last incomplete one dropped unless
 * --keep-last). Splits: 0 training, 1 validation (the --valid-data files together, the loss at --eval-interval),
 * 3 + d the end-of-epoch accuracy pass over --valid-data file d (its last micro batch may be partial: the rows past
 * the end repeat the first sample and zt_ft_provider_real counts the others). */
#ifndef ZT_FINETUNE_PROVIDER_H
#define ZT_FINETUNE_PROVIDER_H

#include "data/finetune_data.h"
#include "data/provider.h"

enum { ZT_FT_SPLIT_METRIC = 3 };

typedef struct {
  const zt_ft_dataset *train, *valid;     /* NULL with --epochs 0 */
  const zt_ft_dataset *const *metric;     /* one per --valid-data path */
  int n_metric;
  int micro_batch;                        /* samples per micro batch (--micro-batch-size) */
  int world;                              /* data-parallel ranks */
  uint64_t seed;                          /* --seed */
  int keep_last;                          /* --keep-last */
} zt_ft_provider_setup;

zt_data_provider *zt_ft_provider_create(const zt_ft_provider_setup *s);
/* Micro batches per epoch of a split on each rank (Megatron's len(dataloader)). */
int64_t zt_ft_provider_batches(const zt_data_provider *p, int split);
/* The samples of the micro batch at row `first` of split that are real (the rest pad a last partial one). */
int zt_ft_provider_real(zt_data_provider *p, int split, uint64_t first);

#endif
