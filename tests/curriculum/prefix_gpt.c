/* Test driver: pretrain_gpt whose samples are the first --seq-length tokens of the samples a run at
 * $ZT_PREFIX_OF tokens reads (the same dataset, sample order and masks, each row cut after --seq-length positions by
 * a plain copy here, independent of train/curriculum.c). A curriculum run at --seq-length $ZT_PREFIX_OF whose
 * difficulty is d trains on exactly what this driver at --seq-length d trains on, with a model planned for d
 * tokens: tests/curriculum/test_curriculum_train.sh compares the two. */
#include <stdlib.h>
#include <string.h>

#include "checkpoints/train_main.h"
#include "data/gpt_provider.h"
#include "models/gpt/gpt.h"
#include "runtime/base/error.h"

typedef struct {
  zt_data_provider base;
  zt_data_provider *full; /* GPT's provider at $ZT_PREFIX_OF tokens */
  int B, T;
  int32_t *tokens, *labels, *positions, *key_start;
  float *loss_mask;
} prefix_provider;

static int32_t *cut_i(const int32_t *src, int32_t *dst, int B, int T0, int T) {
  if (!src) return NULL;
  for (int r = 0; r < B; r++)
    for (int t = 0; t < T; t++) dst[r * T + t] = src[r * T0 + t];
  return dst;
}

static void load(zt_data_provider *dp, int split, uint64_t first, zt_batch *b) {
  prefix_provider *p = dp->impl;
  zt_batch f;
  zt_data_load(p->full, split, first, &f);
  zt_check(f.B == p->B && f.T >= p->T && !f.padding && !f.token_types, "curriculum_prefix_gpt", "unexpected batch");
  *b = f;
  b->T = p->T;
  b->tokens = cut_i(f.tokens, p->tokens, p->B, f.T, p->T);
  b->labels = cut_i(f.labels, p->labels, p->B, f.T, p->T);
  b->positions = cut_i(f.positions, p->positions, p->B, f.T, p->T);
  b->key_start = cut_i(f.key_start, p->key_start, p->B, f.T, p->T);
  if (f.loss_mask) {
    for (int r = 0; r < p->B; r++)
      for (int t = 0; t < p->T; t++) p->loss_mask[r * p->T + t] = f.loss_mask[r * f.T + t];
    b->loss_mask = p->loss_mask;
  }
}

static int has_split(const zt_data_provider *dp, int split) {
  const prefix_provider *p = dp->impl;
  return zt_data_has_split(p->full, split);
}

static void provider_free(zt_data_provider *dp) {
  prefix_provider *p = dp->impl;
  zt_data_free(p->full);
  free(p->tokens), free(p->labels), free(p->positions), free(p->key_start), free(p->loss_mask);
  free(p);
}

static zt_data_provider *build_data(const zt_data_setup *s) {
  const char *of = getenv("ZT_PREFIX_OF");
  zt_check(of && atoi(of) >= s->seq_length, "curriculum_prefix_gpt", "set ZT_PREFIX_OF to the full sample length "
           "(at least --seq-length %d)", s->seq_length);
  prefix_provider *p = zt_calloc(1, sizeof *p, "prefix provider");
  zt_data_setup full = *s;
  full.seq_length = atoi(of);
  p->full = zt_gpt_provider_create(&full);
  p->B = s->micro_batch;
  p->T = s->seq_length;
  const size_t n = (size_t)p->B * p->T;
  p->tokens = zt_calloc(n, sizeof(int32_t), "prefix");
  p->labels = zt_calloc(n, sizeof(int32_t), "prefix");
  p->positions = zt_calloc(n, sizeof(int32_t), "prefix");
  p->key_start = zt_calloc(n, sizeof(int32_t), "prefix");
  p->loss_mask = zt_calloc(n, sizeof(float), "prefix");
  p->base = (zt_data_provider){.kind = "GPT", .load = load, .has_split = has_split, .free = provider_free, .impl = p};
  return &p->base;
}

static const zt_model_kind k_prefix_gpt = {.name = "GPT", .build_model = zt_gpt_create, .build_data = build_data,
                                           .count_params = zt_gpt_count, .causal = 1, .seqlen_curriculum = 1};

int main(int argc, char **argv) { return zt_train_main(argc, argv, &k_prefix_gpt, "gpt"); }
