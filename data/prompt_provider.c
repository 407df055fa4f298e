/* finetune_llama's data provider: SupervisedDataset rows made into get_batch_pipe's batches (prompt_provider.h). */
#include "data/prompt_provider.h"

#include <stdlib.h>
#include <string.h>

#include "data/gpt_data.h"
#include "data/prompt_dataset.h"
#include "runtime/base/error.h"

typedef struct {
  zt_data_provider base;
  zt_data_setup s;
  zt_prompt_dataset ds;
  int32_t eod;
  int32_t *row, *row_labels; /* [seq + 1] */
  int32_t *tokens, *labels;  /* [mbs, seq] */
  float *loss_mask;          /* [mbs, seq] */
  int32_t *positions;        /* [mbs, seq] with --reset-position-ids, else NULL */
  int32_t *key_start;        /* [mbs, seq] with --reset-attention-mask, else NULL */
} prompt_provider;

static void fill_row(prompt_provider *p, int r, int64_t i) {
  const int T = p->s.seq_length;
  zt_prompt_dataset_get(&p->ds, i, p->row, p->row_labels);
  int32_t *tok = p->tokens + (size_t)r * T, *lab = p->labels + (size_t)r * T;
  float *mask = p->loss_mask + (size_t)r * T;
  memcpy(tok, p->row, (size_t)T * sizeof(int32_t));
  for (int t = 0; t < T; t++) {
    const int32_t l = p->row_labels[t + 1];
    mask[t] = l != p->ds.pad;
    lab[t] = mask[t] ? l : 0; /* a pad label (past the embedding) carries no loss: any id in range will do */
  }
  if (p->positions || p->key_start)
    zt_gpt_ltor_masks(tok, T, p->eod, 0, NULL, p->positions ? p->positions + (size_t)r * T : NULL,
                      p->key_start ? p->key_start + (size_t)r * T : NULL);
}

static void set_batch(const prompt_provider *p, zt_batch *b) {
  *b = (zt_batch){.B = p->s.micro_batch, .T = p->s.seq_length, .tokens = p->tokens, .positions = p->positions,
                  .labels = p->labels, .loss_mask = p->loss_mask, .key_start = p->key_start};
}

/* Megatron's sequential sampler: samples [first, first + B) of the training split. */
static void load(zt_data_provider *dp, int split, uint64_t first, zt_batch *b) {
  prompt_provider *p = dp->impl;
  zt_check(split == 0, "internal error", "finetune_llama has no split %d", split);
  for (int r = 0; r < p->s.micro_batch; r++) {
    const uint64_t i = first + (uint64_t)r;
    zt_check(i < (uint64_t)p->ds.n, "--train-iters", "sample %llu is past the %lld examples of the fine-tuning data "
             "(add --repeated-dataloader to start over)", (unsigned long long)i, (long long)p->ds.n);
    fill_row(p, r, (int64_t)i);
  }
  set_batch(p, b);
}

static void load_ids(zt_data_provider *dp, int split, const int64_t *ids, zt_batch *b) {
  prompt_provider *p = dp->impl;
  zt_check(split == 0, "internal error", "finetune_llama has no split %d", split);
  for (int r = 0; r < p->s.micro_batch; r++) fill_row(p, r, ids[r]);
  set_batch(p, b);
}

static int64_t split_size(const zt_data_provider *dp, int split) {
  const prompt_provider *p = dp->impl;
  return split == 0 ? p->ds.n : 0;
}

static int has_split(const zt_data_provider *dp, int split) {
  (void)dp;
  return split == 0;
}

static void provider_free(zt_data_provider *dp) {
  prompt_provider *p = dp->impl;
  zt_prompt_dataset_free(&p->ds);
  free(p->row), free(p->row_labels), free(p->tokens), free(p->labels), free(p->loss_mask), free(p->positions);
  free(p->key_start);
  free(p);
}

zt_data_provider *zt_prompt_provider_create(const zt_data_setup *s) {
  zt_check(!s->mock_data, "--mock-data", "finetune_llama trains on an Alpaca-style JSON file (--data-path)");
  const zt_hf_tok *hf = s->tokenizer ? zt_tokenizer_hf(s->tokenizer) : NULL;
  zt_check(hf, "--tokenizer-type", "finetune_llama needs --tokenizer-type HFTokenizer (SupervisedDataset tokenizes "
           "with the Hugging Face tokenizer's pad and eos tokens), not %s", s->tokenizer_name);
  zt_check(s->data_path_n == 1 && !s->split_path_n[0] && !s->split_path_n[1] && !s->split_path_n[2], "--data-path",
           "finetune_llama reads one JSON file: give --data-path FILE alone (got %d --data-path words%s)",
           s->data_path_n, s->split_path_n[0] || s->split_path_n[1] || s->split_path_n[2] ?
           " and --train/valid/test-data-path" : "");
  zt_check(!s->eod_mask_loss, "--eod-mask-loss", "finetune_llama's loss mask is labels != pad (get_batch_pipe drops "
           "the end-of-document mask): --eod-mask-loss would have no effect");
  prompt_provider *p = zt_calloc(1, sizeof *p, "prompt data provider");
  p->base = (zt_data_provider){.kind = "GPT", .load = load, .has_split = has_split, .load_ids = load_ids,
                                .split_size = split_size, .free = provider_free, .impl = p};
  p->s = *s;
  p->eod = zt_hf_eos(hf);
  zt_log("> building finetune prompt datasets for llama ...\n");
  zt_prompt_dataset_load(&p->ds, s->data_path[0], hf, s->seq_length + 1);
  if (!s->train_sampled) {
    /* MegatronPretrainingSampler drops the last incomplete global batch and then stops */
    zt_check(s->num_samples[0] <= p->ds.n, "--train-iters", "the training needs %lld samples and %s holds %lld "
             "examples: add --repeated-dataloader (finetune_llama.sh does) or train fewer iterations",
             (long long)s->num_samples[0], s->data_path[0], (long long)p->ds.n);
  }
  if (s->eval_iters > 0) zt_log(" > finetune_llama has no validation or test data: evaluation is skipped\n");
  const size_t BT = (size_t)s->micro_batch * s->seq_length;
  p->row = zt_malloc((size_t)(s->seq_length + 1) * sizeof(int32_t), "prompt row");
  p->row_labels = zt_malloc((size_t)(s->seq_length + 1) * sizeof(int32_t), "prompt row labels");
  p->tokens = zt_malloc(BT * sizeof(int32_t), "batch tokens");
  p->labels = zt_malloc(BT * sizeof(int32_t), "batch labels");
  p->loss_mask = zt_malloc(BT * sizeof(float), "loss mask");
  if (s->reset_position_ids) p->positions = zt_malloc(BT * sizeof(int32_t), "position ids");
  if (s->reset_attention_mask) p->key_start = zt_malloc(BT * sizeof(int32_t), "attention mask starts");
  return &p->base;
}
