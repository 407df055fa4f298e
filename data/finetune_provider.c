/* finetune_bert's data provider (finetune_provider.h): torch's loader order over the task datasets, rows framed as
 * Megatron's process_batch hands them to the model. */
#include "data/finetune_provider.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"

typedef struct {
  zt_ft_provider_setup s;
  int n_split;                 /* 3 + n_metric */
  const zt_ft_dataset **ds;    /* [n_split], NULL where a split has none (2: test) */
  zt_ft_loader *loader;        /* [n_split] */
  int choices, T;
  int32_t *tokens, *types, *labels;
  uint8_t *padding;
} ft_provider;

static const zt_ft_dataset *split_ds(const ft_provider *p, int split) {
  return split >= 0 && split < p->n_split ? p->ds[split] : NULL;
}

/* The loader's epoch of split for its q-th micro batch since the start: training's sampler is set to --seed + epoch
 * each epoch; the others are never set (epoch 0), and the validation loader cycles. */
static void locate(const ft_provider *p, int split, uint64_t first, int64_t *q, uint64_t *epoch, int *rank) {
  const int B = p->s.micro_batch, W = p->s.world;
  const uint64_t sample = first / (uint64_t)p->choices, gbs = (uint64_t)B * (uint64_t)W;
  const int64_t step = (int64_t)(sample / gbs), batches = p->loader[split].batches;
  *rank = (int)((sample % gbs) / (uint64_t)B);
  zt_check((sample % gbs) % (uint64_t)B == 0, "internal error", "finetune data: row %llu is not the start of a micro "
           "batch", (unsigned long long)first);
  if (split == 0) {
    *epoch = p->s.seed + (uint64_t)(step / batches);
    *q = step % batches;
  } else if (split == 1) {
    *epoch = 0;
    *q = step % batches;
  } else {
    *epoch = 0;
    *q = step;
    zt_check(step < batches, "internal error", "finetune data: micro batch %lld of %lld of %s", (long long)step,
             (long long)batches, p->ds[split]->name);
  }
}

static void ft_load(zt_data_provider *pp, int split, uint64_t first, zt_batch *b) {
  ft_provider *p = pp->impl;
  const zt_ft_dataset *d = split_ds(p, split);
  zt_check(d != NULL, "internal error", "finetune data: no split %d", split);
  int64_t q;
  uint64_t epoch;
  int rank;
  locate(p, split, first, &q, &epoch, &rank);
  const int B = p->s.micro_batch, C = p->choices, T = p->T;
  int64_t idx0 = -1;
  for (int j = 0; j < B; j++) {
    int64_t idx = zt_ft_loader_index(&p->loader[split], epoch, rank, q, j);
    if (idx < 0) idx = idx0; /* past the end of a last partial micro batch: a copy of the first sample */
    if (j == 0) idx0 = idx;
    for (int c = 0; c < C; c++) {
      const size_t dst = ((size_t)j * C + c) * T;
      zt_ft_dataset_row(d, idx, c, p->tokens + dst, p->types + dst, p->padding + dst);
      for (int t = 0; t < T; t++) p->padding[dst + t] = !p->padding[dst + t]; /* the model's: nonzero = padding */
    }
    p->labels[j] = d->labels[idx];
  }
  *b = (zt_batch){.B = B * C, .T = T, .tokens = p->tokens, .token_types = p->types, .padding = p->padding,
                  .sentence_labels = p->labels};
}

int zt_ft_provider_real(zt_data_provider *pp, int split, uint64_t first) {
  ft_provider *p = pp->impl;
  int64_t q;
  uint64_t epoch;
  int rank;
  locate(p, split, first, &q, &epoch, &rank);
  int n = 0;
  for (int j = 0; j < p->s.micro_batch; j++) n += zt_ft_loader_index(&p->loader[split], epoch, rank, q, j) >= 0;
  return n;
}

int64_t zt_ft_provider_batches(const zt_data_provider *pp, int split) {
  const ft_provider *p = pp->impl;
  return split_ds(p, split) ? p->loader[split].batches : 0;
}

static int ft_has_split(const zt_data_provider *pp, int split) { return split_ds(pp->impl, split) != NULL; }

static void ft_free(zt_data_provider *pp) {
  ft_provider *p = pp->impl;
  for (int i = 0; i < p->n_split; i++)
    if (p->ds[i]) zt_ft_loader_free(&p->loader[i]);
  free(p->ds), free(p->loader), free(p->tokens), free(p->types), free(p->labels), free(p->padding);
  free(p);
  free(pp);
}

zt_data_provider *zt_ft_provider_create(const zt_ft_provider_setup *s) {
  ft_provider *p = zt_calloc(1, sizeof *p, "finetune data");
  p->s = *s;
  p->n_split = ZT_FT_SPLIT_METRIC + s->n_metric;
  p->ds = zt_calloc((size_t)p->n_split, sizeof *p->ds, "finetune data");
  p->loader = zt_calloc((size_t)p->n_split, sizeof *p->loader, "finetune data");
  p->ds[0] = s->train, p->ds[1] = s->valid;
  for (int d = 0; d < s->n_metric; d++) p->ds[ZT_FT_SPLIT_METRIC + d] = s->metric[d];
  p->choices = s->n_metric > 0 ? s->metric[0]->choices : s->train->choices;
  p->T = s->n_metric > 0 ? s->metric[0]->seq_length : s->train->seq_length;
  for (int i = 0; i < p->n_split; i++) {
    if (!p->ds[i]) continue;
    /* Megatron: drop_last = not --keep-last for training and validation, (world > 1) for the accuracy pass */
    const int drop_last = i < ZT_FT_SPLIT_METRIC ? !s->keep_last : s->world > 1;
    zt_ft_loader_init(&p->loader[i], p->ds[i]->n, s->world, s->micro_batch, drop_last);
  }
  const size_t rows = (size_t)s->micro_batch * (size_t)p->choices, n = rows * (size_t)p->T;
  p->tokens = zt_malloc(n * sizeof(int32_t), "finetune batch");
  p->types = zt_malloc(n * sizeof(int32_t), "finetune batch");
  p->padding = zt_malloc(n, "finetune batch");
  p->labels = zt_malloc((size_t)s->micro_batch * sizeof(int32_t), "finetune batch");
  zt_data_provider *pp = zt_calloc(1, sizeof *pp, "finetune data");
  *pp = (zt_data_provider){.kind = "BERT", .load = ft_load, .has_split = ft_has_split, .free = ft_free, .impl = p};
  return pp;
}
