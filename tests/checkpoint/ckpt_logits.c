/* Test helper for the Hugging Face export: builds the GPT a checkpoint describes (its saved arguments), loads the
 * saved weights through the checkpoint reader and writes the logits of a fixed batch (evaluation mode) as .npy.
 * With LAYOUT.npy (int32 0/1 [heads, T/block, T/block], a block-sparse attention layout the test computed), attention
 * is the dense kernels' with that layout as a mask (the sparse_attention reference path, not the block-sparse
 * kernels). A --squared-relu checkpoint runs its MLP with the squared ReLU. A checkpoint with MoE layers builds them
 * from its saved MoE flags (top-1 in evaluation mode: the tokens of the batch share the eval capacity).
 * Usage: ckpt_logits CHECKPOINT_DIR TOKENS.npy (int32 [B, T]) LOGITS.npy (float32 [B, T, padded vocab])
 *        [LAYOUT.npy BLOCK] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/ckpt_reader.h"
#include "models/gpt/gpt.h"
#include "models/moe/moe_config.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/ops/ops.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"

static long arg(const zt_ckpt_reader *r, const char *name) {
  char v[64];
  zt_check(zt_ckpt_arg(r->args_text, name, v, sizeof v), "ckpt_logits", "saved argument %s is missing", name);
  return atol(v);
}

static double argf(const zt_ckpt_reader *r, const char *name) {
  char v[64];
  zt_check(zt_ckpt_arg(r->args_text, name, v, sizeof v), "ckpt_logits", "saved argument %s is missing", name);
  return atof(v);
}

int main(int argc, char **argv) {
  zt_check(argc == 4 || argc == 6, "usage", "ckpt_logits CHECKPOINT_DIR TOKENS.npy LOGITS.npy [LAYOUT.npy BLOCK]");
  zt_ckpt_reader r;
  zt_ckpt_open(&r, argv[1], NULL);
  int ndim;
  int64_t shape[4];
  int32_t *tokens = zt_npy_load(argv[2], "<i4", &ndim, shape);
  zt_check(ndim == 2, "ckpt_logits", "%s: tokens must be [B, T]", argv[2]);
  char untie[16] = "False";
  zt_ckpt_arg(r.args_text, "untie_embeddings_and_output_weights", untie, sizeof untie);
  zt_gpt_config c = {.num_layers = (int)arg(&r, "num_layers"), .hidden_size = (int)arg(&r, "hidden_size"),
                     .num_heads = (int)arg(&r, "num_attention_heads"), .ffn_hidden_size = (int)arg(&r, "ffn_hidden_size"),
                     .max_positions = (int)arg(&r, "max_position_embeddings"),
                     .padded_vocab_size = (int)r.padded_vocab_size, .ln_eps = (float)argf(&r, "layernorm_epsilon"),
                     .init_std = 0.02f, .untie_embeddings = strcmp(untie, "True") == 0,
                     .micro_batch = (int)shape[0], .seq_length = (int)shape[1]};
  char sq[16] = "False"; /* --squared-relu's MLP (exported as "relu2"); else the default fused bias-GELU */
  zt_ckpt_arg(r.args_text, "squared_relu", sq, sizeof sq);
  if (strcmp(sq, "True") == 0) c.mlp_act = ZT_ACT_SQUARED_RELU;
  /* MoE layers (docs/moe.md): the saved MoE flags, evaluation mode (the eval capacity factor) */
  char list[256] = "[1]", v[64];
  zt_ckpt_arg(r.args_text, "num_experts", list, sizeof list);
  int vals[64], n = 0;
  for (char *q = list; *q && n < 64; q++)
    if (*q >= '0' && *q <= '9') vals[n++] = (int)strtol(q, &q, 10), q--;
  int *per_layer = zt_malloc((size_t)c.num_layers * sizeof(int), "experts");
  zt_moe_layer_experts(vals, n, c.num_layers, (int)arg(&r, "expert_interval"), per_layer);
  zt_moe_config moe = {.num_layers = c.num_layers, .num_experts = per_layer, .topk = (int)arg(&r, "topk"),
                       .train_capacity_factor = (float)argf(&r, "moe_train_capacity_factor"),
                       .eval_capacity_factor = (float)argf(&r, "moe_eval_capacity_factor"),
                       .min_capacity = (int)arg(&r, "moe_min_capacity"), .loss_coeff = (float)argf(&r, "moe_loss_coeff")};
  zt_check(zt_ckpt_arg(r.args_text, "moe_token_dropping", v, sizeof v), "ckpt_logits", "moe_token_dropping missing");
  moe.drop_tokens = strcmp(v, "True") == 0;
  zt_check(zt_ckpt_arg(r.args_text, "moe_top2_2nd_expert_sampling", v, sizeof v), "ckpt_logits", "sampling missing");
  moe.top2_sampling = strcmp(v, "True") == 0;
  zt_check(zt_ckpt_arg(r.args_text, "mlp_type", v, sizeof v), "ckpt_logits", "mlp_type missing");
  moe.residual = strcmp(v, "residual") == 0;
  if (zt_moe_on(&moe)) c.moe = &moe;
  zt_attn_layout_buf layout = {0};
  if (argc == 6) {
    int64_t lshape[4];
    int32_t *lay = zt_npy_load(argv[4], "<i4", &ndim, lshape);
    const int block = atoi(argv[5]);
    zt_check(ndim == 3 && lshape[0] == c.num_heads && lshape[1] == lshape[2] && block > 0 &&
             lshape[1] * block == shape[1], "ckpt_logits", "%s: a layout [heads, T/block, T/block] is expected", argv[4]);
    const size_t n = (size_t)(lshape[0] * lshape[1] * lshape[2]);
    uint8_t *mask = zt_malloc(n, "layout");
    for (size_t i = 0; i < n; i++) mask[i] = lay[i] != 0;
    zt_attn_layout_from_mask(&layout, mask, (int)lshape[0], (int)lshape[1], block);
    free(mask);
    free(lay);
    c.sparse_attention = &layout;
    c.sparse_as_mask = 1;
  }
  zt_gpt m;
  zt_gpt_build(&m, &c, 0);
  float *full = zt_malloc((size_t)r.padded_vocab_size * c.hidden_size * 4 + (size_t)c.ffn_hidden_size * c.hidden_size * 4 + 64,
                          "tensor");
  for (int i = 0; i < m.table.count; i++) {
    const zt_param *p = &m.table.params[i];
    const int k = zt_ckpt_find(&r, p->name);
    zt_check(k >= 0 && r.tensors[k].numel == p->numel, "ckpt_logits", "%s missing or of another size", p->name);
    zt_ckpt_read_weights(&r, k, full);
    memcpy(m.params + p->offset, full, p->numel * sizeof(float));
  }
  zt_pass pass = {.B = (int)shape[0], .T = (int)shape[1], .training = 0};
  zt_gpt_forward(&m, tokens, NULL, tokens, NULL, &pass);
  int64_t out[3] = {shape[0], shape[1], r.padded_vocab_size};
  zt_npy_save(argv[3], m.logits, "<f4", 3, out);
  free(full);
  free(tokens);
  zt_gpt_free(&m);
  free(per_layer);
  if (layout.mem) zt_attn_layout_free(&layout);
  zt_ckpt_close(&r);
  return 0;
}
